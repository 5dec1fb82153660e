/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The HTTP front door: what to do with each request conn.c hands up (the
 * handler http_init registers): the request target and method, the Host
 * and Origin checks, routes, admin guards, the body's model and rules,
 * decided before any effect (http_decide, pure, fuzzed); then health,
 * the models list and cancel are answered here, status and metrics and
 * model requests go on to forward.c.  The listeners of a configuration.
 *
 * Calls: forward.c, events.c, answer.c, metrics.c, conn.c, parent.c,
 * rules.c, scan.c, multipart.c, routes.c, utf8.c, h1.c, console_assets.c,
 * state.c, conn_tls.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>	/* EVHTTP_REQ_*, for http_decide */

#include <json-c/json.h>

#include "console_assets.h"
#include "h1.h"
#include "log.h"
#include "proxy.h"
#include "routes.h"
#include "sha256.h"

static void	 http_request(struct hreq *, const struct h1_msg *, char *,
		    size_t);
static void	 http_refused(struct hreq *, int);
static void	 http_models(struct hreq *, const struct paccess *);
static int	 host_guard(const struct pconf *, const struct http_hdrs *,
		    struct rerr *);
static int	 admin_guard(const struct pconf *, const struct http_hdrs *,
		    int, struct rerr *);
static void	 decide_form(const struct pconf *, const char *,
		    const struct http_hdrs *, const char *, size_t,
		    struct http_decision *);
static void	 decide_pass(const struct pconf *, int, const char *,
		    const struct http_hdrs *, struct http_decision *);
static int	 json_ctype(const char *);
static void	 http_cancel(struct hreq *, struct pmodel *);
static void	 decide_error(struct http_decision *, int, const char *,
		    const char *);
static void	 decide_admin(const struct pconf *, int, const char *,
		    const struct http_hdrs *, const char *, size_t,
		    struct http_decision *);
static void	 http_console(struct hreq *, const struct console_asset *,
		    const char *, const char *, const char *, int64_t);

int		 http_fastpath = 1;

/* A request that could not be read (conn.c): answered, then closed. */
static void
http_refused(struct hreq *r, int status)
{
	status = answer_refused(r, status);
	answer_log("-", "-", "-", status, 0, -1, -1, NULL);
	metrics_unrouted(status);
}

/* conn.c hands its requests here, and its refusals. */
static const struct conn_handler http_handler = {
	.request = http_request,
	.refused = http_refused,
};

void
http_init(void)
{
	conn_init(&http_handler);
}

/*
 * New listeners first, then the old ones go; requests in progress stay.
 * A TLS listener gets a server context for its certificate and key (the
 * key's bytes are wiped then); one libtls refuses is not listened on,
 * and said so, rather than served in the clear.
 */
void
http_swap_listeners(struct pconf *old, struct pconf *new)
{
	struct plisten	*l;
	void		*tls;
	char		 why[256];
	int		 flags;

	conn_configure(new);
	TAILQ_FOREACH(l, &new->listens, entry) {
		tls = NULL;
		if (l->tls) {
			tls = conn_tls_server(l->cert, l->certlen, l->key,
			    l->keylen, why, sizeof(why));
			freezero(l->key, l->keylen);
			l->key = NULL;
			l->keylen = 0;
			if (tls == NULL) {
				log_warnx("listen on %s port %u: TLS: %s; not "
				    "listening there", l->host, l->port, why);
				close(l->fd);
				l->fd = -1;
				continue;
			}
		}
		if ((flags = fcntl(l->fd, F_GETFL)) == -1 ||
		    fcntl(l->fd, F_SETFL, flags | O_NONBLOCK) == -1)
			fatal("%s: fcntl", __func__);
		if ((l->lsn = conn_listen(l->fd, tls, l->path[0] != '\0')) ==
		    NULL)
			fatalx("%s: cannot accept on %s port %u", __func__,
			    l->host, l->port);
		l->fd = -1;	/* the listener's now */
		if (l->path[0] != '\0')
			log_debug("listening on %s", l->path);
		else
			log_debug("listening on %s port %u%s", l->host,
			    l->port, l->tls ? " (TLS)" : "");
	}
	if (old == NULL)
		return;
	TAILQ_FOREACH(l, &old->listens, entry) {
		if (l->lsn != NULL)
			conn_unlisten(l->lsn);
		else if (l->fd != -1)
			close(l->fd);
		l->lsn = NULL;
		l->fd = -1;
	}
}

/* The admin routes, and /metrics: guarded, never granted by CORS. */
static int
admin_route(const char *path)
{
	return (strcmp(path, "/metrics") == 0 ||
	    strncmp(path, "/v1/agency/", 11) == 0);
}

/*
 * A CORS preflight of a listed origin (dc->cors): the method of its
 * route (GET for the models list, POST for the model routes), asked for,
 * and headers that access.c allows.  Admin routes never get here.
 */
static void
decide_preflight(const char *path, const struct http_hdrs *hh,
    struct http_decision *dc)
{
	const char	*method;

	/* a refused preflight grants nothing */
	dc->cors[0] = '\0';
	if (strcmp(path, "/v1/models") == 0)
		method = "GET";
	else if (strncmp(path, "/v1/", 4) == 0)
		method = "POST";
	else {
		decide_error(dc, 403, "cors_refused", "No such route for "
		    "other origins.");
		return;
	}
	if (strcmp(hh->acrm, method) != 0) {
		rerr_set(&dc->e, 403, "cors_refused", "Other origins may use "
		    "%s on %.100s, not %.20s.", method, path, hh->acrm);
		dc->action = HTTP_ERROR;
		return;
	}
	if (access_cors_headers(hh->acrh, dc->pf_headers,
	    sizeof(dc->pf_headers)) == -1) {
		decide_error(dc, 403, "cors_refused", "Other origins may send "
		    "only the header fields " "Authorization, Content-Type, "
		    "X-Api-Key and those of the OpenAI clients.");
		return;
	}
	dc->pf_method = method;
	dc->action = HTTP_PREFLIGHT;
	(void)strlcpy(dc->cors, hh->origin, sizeof(dc->cors));
}

/*
 * What the front door does with a request, decided without touching the
 * request or the network, so that the fuzzer runs the very code that
 * serves (the checks in the order the design gives them: Host and
 * Origin, CORS preflights, the console's files, access (keys and allow
 * rules), routes, admin guards, Content-Type, body, model, rules).  cmd is an EVHTTP_REQ_*
 * value; hh holds the header fields that bear on it (NULL when absent)
 * and what the connection is; body is only read for POSTs.
 */
void
http_decide(const struct pconf *conf, int cmd, const char *path,
    const struct http_hdrs *hh, const char *body, size_t len,
    const struct prescan *pre, struct http_decision *dc)
{
	const struct route	*route = routes_find(path);
	json_object		*obj;
	struct pmodel		*m;
	struct pscope		 sc;
	int			 changed, scanned = 0, unixsock, admin, console;

	memset(dc, 0, sizeof(*dc));
	dc->family = route->family;
	if (conf == NULL) {
		decide_error(dc, 503, "starting", "The proxy is starting.");
		return;
	}
	/* For load balancers, which may not send the name clients use. */
	if (strcmp(path, "/health") == 0) {
		if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD)
			decide_error(dc, 405, "method_not_allowed",
			    "Use GET.");
		else
			dc->action = HTTP_HEALTH;
		return;
	}
	admin = admin_route(path);
	console = strcmp(path, "/") == 0 || strncmp(path, "/console/", 9) == 0;
	/*
	 * Against DNS rebinding and cross-origin pages, before anything.
	 * A Unix socket is out of a browser's reach: its Host is not
	 * checked (curl sends "localhost", without a port).
	 */
	unixsock = hh->peer != NULL && hh->peer->unixsock;
	if (!unixsock && !http_host_ok(conf, hh->host)) {
		rerr_set(&dc->e, 403, "forbidden_host", "The Host '%.100s' is "
		    "not a name of this front door (see server name in "
		    "agency.conf(5)).", hh->host != NULL ? hh->host : "");
		dc->action = HTTP_ERROR;
		return;
	}
	if (hh->origin != NULL && !http_origin_ok(conf, hh->origin,
	    hh->host, hh->tls)) {
		if (admin || console || strncmp(path, "/upstream/", 10) == 0 ||
		    !access_cors_listed(conf, hh->origin)) {
			rerr_set(&dc->e, 403, "forbidden_origin", "Requests "
			    "from the origin '%.100s' are not allowed.",
			    hh->origin);
			dc->action = HTTP_ERROR;
			return;
		}
		/* a listed origin: its answers, errors too, say so */
		(void)strlcpy(dc->cors, hh->origin, sizeof(dc->cors));
		/* a preflight carries no credentials */
		if (cmd == EVHTTP_REQ_OPTIONS && hh->acrm != NULL) {
			decide_preflight(path, hh, dc);
			return;
		}
	}
	/*
	 * The console's files: the admin routes' guard, and only when it is
	 * on, but no key: a browser sends none when it opens a page, and
	 * they are the same for everyone.  What the page shows comes from
	 * the admin routes, with the admin key it is given.
	 */
	if (console) {
		if (!conf->console || (cmd != EVHTTP_REQ_GET &&
		    cmd != EVHTTP_REQ_HEAD) ||
		    (dc->asset = console_asset(path)) == NULL) {
			dc->asset = NULL;
			decide_error(dc, 404, "not_found", "No such route.");
		} else if (admin_guard(conf, hh, cmd, &dc->e) != 0) {
			dc->asset = NULL;
			dc->action = HTTP_ERROR;
		} else
			dc->action = HTTP_CONSOLE;
		return;
	}
	if (access_decide(conf, hh, &dc->acc, &dc->e) == -1) {
		dc->action = HTTP_ERROR;
		dc->delay = dc->acc.wrong ? AUTH_DELAY_MS : 0;
		return;
	}
	access_scope(&dc->acc, &sc);
	if (strcmp(path, "/v1/models") == 0) {
		if (cmd != EVHTTP_REQ_GET)
			decide_error(dc, 405, "method_not_allowed",
			    "Use GET.");
		else
			dc->action = HTTP_MODELS;
		return;
	}
	if (admin && admin_guard(conf, hh, cmd, &dc->e) != 0) {
		dc->action = HTTP_ERROR;
		return;
	}
	if (admin && !dc->acc.admin) {
		decide_error(dc, 403, "admin_key_required", dc->acc.key !=
		    NULL ? "Admin routes need a key marked admin." :
		    "Admin routes need a key marked admin, or an allow rule "
		    "with admin.");
		return;
	}
	if (strcmp(path, "/metrics") == 0) {
		if (cmd != EVHTTP_REQ_GET)
			decide_error(dc, 405, "method_not_allowed",
			    "Use GET.");
		else
			dc->action = HTTP_METRICS;
		return;
	}
	if (strncmp(path, "/v1/agency/", 11) == 0) {
		decide_admin(conf, cmd, path + 11, hh, body, len, dc);
		return;
	}
	if (strncmp(path, "/upstream/", 10) == 0) {
		decide_pass(conf, cmd, path, hh, dc);
		return;
	}
	if (cmd != EVHTTP_REQ_POST) {
		if (strncmp(path, "/v1/", 4) == 0)
			decide_error(dc, 405, "method_not_allowed",
			    "Model routes take POST.");
		else
			decide_error(dc, 404, "not_found", "No such route.");
		return;
	}
	if (route->body == BODY_FORM) {
		decide_form(conf, path, hh, body, len, dc);
		return;
	}
	/* Only what a browser cannot send across origins unasked. */
	if (!json_ctype(hh->ctype)) {
		decide_error(dc, 415, "unsupported_media_type",
		    "Model routes need Content-Type: application/json.");
		return;
	}
	/*
	 * The fast path (scan.c, splice.c): a body that needs no tree for
	 * the rules to be applied is only scanned, and what they change is
	 * spliced.  What it cannot settle, it leaves to json-c below.
	 */
	if (http_fastpath && splice_route(route) &&
	    rules_fast(body, len, pre, route->parts, &dc->scan)) {
		if (rules_pick_name(conf, dc->scan.has_model ?
		    dc->scan.model : NULL, &sc, &m, &dc->e) == -1) {
			dc->action = HTTP_ERROR;
			return;
		}
		if (rules_check_route(m, path, &dc->e) == -1) {
			dc->action = HTTP_ERROR;
			dc->model = m;
			return;
		}
		scanned = 1;
		switch (splice_rules(m->rt, &dc->scan, &dc->splice, &dc->e)) {
		case -1:
			dc->action = HTTP_ERROR;
			dc->model = m;		/* refused for this model */
			return;
		case 0:
			dc->action = HTTP_HOLD;
			dc->model = m;
			dc->plain = !dc->splice.changed;
			dc->fast = 1;
			return;
		default:
			break;
		}
		memset(&dc->scan, 0, sizeof(dc->scan));
	}
	if ((obj = rules_parse(body, len, &dc->e)) == NULL) {
		dc->action = HTTP_ERROR;
		return;
	}
	if (rules_pick_model(conf, obj, &sc, &m, &dc->e) == -1) {
		json_object_put(obj);
		dc->action = HTTP_ERROR;
		return;
	}
	if (rules_check_route(m, path, &dc->e) == -1 ||
	    rules_apply(m->rt, path, obj, &dc->e, &changed) == -1) {
		json_object_put(obj);
		dc->action = HTTP_ERROR;
		dc->model = m;		/* refused for this model */
		return;
	}
	dc->action = HTTP_HOLD;
	dc->model = m;
	dc->body = obj;
	/* what took the fast scan is plain: not scanned a second time */
	dc->plain = !changed && (scanned || rules_plain(body, len));
}

/*
 * A path segment with its %XX escapes decoded into buf: 0, -1 when an
 * escape is not one or decodes to a NUL, -2 when it does not fit.
 */
static int
pct_decode(const char *s, char *buf, size_t size)
{
	size_t	 n = 0;
	int	 hi, lo;

	for (; *s != '\0'; s++) {
		if (n + 1 >= size)
			return (-2);
		if (*s != '%') {
			buf[n++] = *s;
			continue;
		}
		if ((hi = hex_value(s[1])) == -1 || (lo = hex_value(s[2])) == -1 ||
		    (hi == 0 && lo == 0))
			return (-1);
		buf[n++] = (char)(hi << 4 | lo);
		s += 2;
	}
	buf[n] = '\0';
	return (0);
}

/* Whether a query string holds name=value as one of its parameters. */
static int
query_has(const char *q, const char *name, const char *value)
{
	size_t	 nl = strlen(name), vl = strlen(value), n;

	while (q != NULL && *q != '\0') {
		n = strcspn(q, "&");
		if (n == nl + 1 + vl && strncmp(q, name, nl) == 0 &&
		    q[nl] == '=' && strncmp(q + nl + 1, value, vl) == 0)
			return (1);
		q += n;
		if (*q == '&')
			q++;
	}
	return (0);
}

/*
 * The admin routes under /v1/agency/ (route is what follows it), past
 * the guard: status, events, logs/MODEL, and the POSTs of cancel, load
 * and unload with a body naming a served model.
 */
static void
decide_admin(const struct pconf *conf, int cmd, const char *route,
    const struct http_hdrs *hh, const char *body, size_t len,
    struct http_decision *dc)
{
	json_object	*obj, *jm, *jw;
	struct pmodel	*m;
	char		 name[AGENCY_NAME_MAX];
	int		 r;

	if (strcmp(route, "status") == 0 && cmd == EVHTTP_REQ_GET) {
		dc->action = HTTP_STATUS;
		return;
	}
	if (strcmp(route, "events") == 0 && cmd == EVHTTP_REQ_GET) {
		dc->action = HTTP_EVENTS;
		return;
	}
	if (strncmp(route, "logs/", 5) == 0 && cmd == EVHTTP_REQ_GET) {
		if ((r = pct_decode(route + 5, name, sizeof(name))) == -1) {
			decide_error(dc, 400, "invalid_request", "The model "
			    "name in the path has a %-escape that is not two "
			    "hex digits, or is %00.");
			return;
		}
		/* too long to be a name: none of them */
		if (r == -2 || (m = pconf_find_model(conf, name)) == NULL ||
		    !access_model_ok(&dc->acc, m)) {
			rerr_set(&dc->e, 404, "model_not_found",
			    "The model '%.100s' does not exist.", route + 5);
			dc->action = HTTP_ERROR;
			return;
		}
		dc->action = HTTP_LOGS;
		dc->model = m;
		dc->follow = query_has(hh->query, "follow", "1");
		return;
	}
	if (cmd != EVHTTP_REQ_POST || (strcmp(route, "cancel") != 0 &&
	    strcmp(route, "load") != 0 && strcmp(route, "unload") != 0)) {
		decide_error(dc, 404, "not_found", "No such admin route.");
		return;
	}
	if ((obj = rules_parse(body, len, &dc->e)) == NULL) {
		dc->action = HTTP_ERROR;
		return;
	}
	if (!json_object_object_get_ex(obj, "model", &jm) ||
	    !json_object_is_type(jm, json_type_string)) {
		json_object_put(obj);
		decide_error(dc, 400, "model_required",
		    "The body must name a model.");
		return;
	}
	dc->wait = 1;
	if (strcmp(route, "load") == 0 &&
	    json_object_object_get_ex(obj, "wait", &jw)) {
		if (!json_object_is_type(jw, json_type_boolean)) {
			json_object_put(obj);
			decide_error(dc, 400, "invalid_wait",
			    "\"wait\" is true or false.");
			return;
		}
		dc->wait = json_object_get_boolean(jw);
	}
	if ((m = pconf_find_model(conf, json_object_get_string(jm))) ==
	    NULL || !access_model_ok(&dc->acc, m)) {
		rerr_set(&dc->e, 404, "model_not_found",
		    "The model '%.100s' does not exist.",
		    json_object_get_string(jm));
		json_object_put(obj);
		dc->action = HTTP_ERROR;
		return;
	}
	json_object_put(obj);
	dc->action = strcmp(route, "cancel") == 0 ? HTTP_CANCEL :
	    strcmp(route, "load") == 0 ? HTTP_LOAD : HTTP_UNLOAD;
	dc->model = m;
}

static void
decide_error(struct http_decision *dc, int status, const char *code,
    const char *message)
{
	dc->action = HTTP_ERROR;
	rerr_set(&dc->e, status, code, "%s", message);
}

/*
 * A multipart/form-data body (routes.c says which routes take one): its
 * framing read strictly (multipart.c), the model picked by the form's
 * model field, a hold for the bytes as they came.  A form is what a
 * page may post across origins unasked: the Origin check above is what
 * keeps other sites out.
 */
static void
decide_form(const struct pconf *conf, const char *path,
    const struct http_hdrs *hh, const char *body, size_t len,
    struct http_decision *dc)
{
	char		 name[MULTIPART_MODEL_MAX + 1];
	const char	*err;
	struct pmodel	*m;
	struct pscope	 sc;
	int		 r;

	access_scope(&dc->acc, &sc);
	if (!multipart_is_form(hh->ctype)) {
		decide_error(dc, 415, "unsupported_media_type",
		    "This route needs Content-Type: multipart/form-data.");
		return;
	}
	if (multipart_boundary(hh->ctype, dc->boundary, sizeof(dc->boundary),
	    &err) == -1) {
		decide_error(dc, 400, "invalid_form", err);
		return;
	}
	if ((r = multipart_scan(body, len, dc->boundary, (size_t)conf->max_body,
	    hh->marks, &dc->mf, &err)) != 0) {
		decide_error(dc, -r, r == -413 ? "body_too_large" :
		    "invalid_form", err);
		return;
	}
	if (dc->mf.has_model) {
		memcpy(name, body + dc->mf.model_off, dc->mf.model_len);
		name[dc->mf.model_len] = '\0';
		if (!utf8_valid((const unsigned char *)name,
		    dc->mf.model_len)) {
			decide_error(dc, 400, "invalid_form",
			    "The form's model is not valid UTF-8.");
			return;
		}
	}
	if (rules_pick_name(conf, dc->mf.has_model ? name : NULL, &sc, &m,
	    &dc->e) == -1) {
		dc->action = HTTP_ERROR;
		return;
	}
	if (rules_check_route(m, path, &dc->e) == -1) {
		dc->action = HTTP_ERROR;
		dc->model = m;
		return;
	}
	dc->action = HTTP_HOLD;
	dc->model = m;
	dc->form = 1;
	dc->plain = 1;
}

/*
 * The served name (or alias) that path, after "/upstream/", starts
 * with as a whole segment: the longest, since a name may hold a slash.
 * Sets *n to its length.
 */
static struct pmodel *
pass_model(const struct pconf *conf, const char *rest, size_t *n)
{
	struct pmodel	*m, *best = NULL;
	const char	*s;
	size_t		 i, k;

	*n = 0;
	TAILQ_FOREACH(m, &conf->models, entry) {
		for (i = 0; i <= m->aliases.n; i++) {
			s = i == 0 ? m->name : m->aliases.v[i - 1];
			k = strlen(s);
			if (k > *n && strncmp(rest, s, k) == 0 &&
			    (rest[k] == '/' || rest[k] == '\0')) {
				best = m;
				*n = k;
			}
		}
	}
	return (best);
}

/*
 * /upstream/MODEL/...: any method but TRACE and CONNECT, to the model's
 * own server as it is, where its runtime says "passthrough yes".  No
 * request rule reads it, so it is kept to the admin routes' Host.
 */
static void
decide_pass(const struct pconf *conf, int cmd, const char *path,
    const struct http_hdrs *hh, struct http_decision *dc)
{
	struct pmodel	*m;
	size_t		 n;

	if (host_guard(conf, hh, &dc->e) != 0) {
		dc->action = HTTP_ERROR;
		return;
	}
	if (cmd == HTTP_REQ_UNKNOWN || cmd == EVHTTP_REQ_TRACE ||
	    cmd == EVHTTP_REQ_CONNECT) {
		decide_error(dc, 405, "method_not_allowed",
		    "That method is not passed through.");
		return;
	}
	if ((m = pass_model(conf, path + 10, &n)) == NULL ||
	    !access_model_ok(&dc->acc, m)) {
		rerr_set(&dc->e, 404, "model_not_found", "No model served "
		    "here is named after /upstream/ in %.200s.", path);
		dc->action = HTTP_ERROR;
		return;
	}
	if (!m->rt->passthrough) {
		rerr_set(&dc->e, 404, "passthrough_off", "The model '%s' is "
		    "not passed through (its runtime needs passthrough yes).",
		    m->name);
		dc->action = HTTP_ERROR;
		dc->model = m;
		return;
	}
	dc->model = m;
	dc->prefix = 10 + n;
	/* its own page's relative links need the slash */
	dc->action = path[dc->prefix] == '\0' ? HTTP_REDIRECT : HTTP_PASS;
}

static const struct {
	const char	*name;
	int		 cmd;
} methods[] = {
	{ "GET", EVHTTP_REQ_GET },
	{ "POST", EVHTTP_REQ_POST },
	{ "HEAD", EVHTTP_REQ_HEAD },
	{ "PUT", EVHTTP_REQ_PUT },
	{ "DELETE", EVHTTP_REQ_DELETE },
	{ "OPTIONS", EVHTTP_REQ_OPTIONS },
	{ "TRACE", EVHTTP_REQ_TRACE },
	{ "CONNECT", EVHTTP_REQ_CONNECT },
	{ "PATCH", EVHTTP_REQ_PATCH },
};

/* A field's value as a string, or NULL if absent or too long to be one
 * we would accept. */
static const char *
field(const struct h1_msg *m, const char *name, char *buf, size_t size)
{
	const struct h1_header	*h;

	if ((h = h1_find(m, name)) == NULL)
		return (NULL);
	if (h->valuelen >= size)
		return ("");
	memcpy(buf, h->value, h->valuelen);
	buf[h->valuelen] = '\0';
	return (buf);
}

/*
 * The path of a request target, and its origin form for the model (path
 * and query, without a fragment): of an origin form as it is, of an
 * absolute form what follows the authority, which goes in authority (the
 * Host that counts, RFC 9112 3.2.2; "" for an origin form).  Returns -1
 * if it has none we serve.
 */
static int
target_path(const char *t, size_t len, char *path, size_t psize,
    char *origin, size_t osize, char *authority, size_t asize)
{
	const char	*end = t + len, *p, *q;
	size_t		 skip = 0, n;

	authority[0] = '\0';
	if (len > 7 && strncasecmp(t, "http://", 7) == 0)
		skip = 7;
	else if (len > 8 && strncasecmp(t, "https://", 8) == 0)
		skip = 8;
	if (skip > 0) {
		for (p = t + skip; p < end && *p != '/' && *p != '?' &&
		    *p != '#'; p++)
			;
		n = p - (t + skip);
		if (n == 0 || n >= asize)
			return (-1);
		memcpy(authority, t + skip, n);
		authority[n] = '\0';
		t = p;
	} else if (*t != '/')
		return (-1);
	if ((q = memchr(t, '#', end - t)) != NULL)
		end = q;
	for (p = t; p < end && *p != '?'; p++)
		;
	/* an empty path is "/", before a query too */
	n = p - t;
	if (n + 1 >= psize || (size_t)(end - t) + 1 >= osize)
		return (-1);
	if (n == 0)
		(void)strlcpy(path, "/", psize);
	else {
		memcpy(path, t, n);
		path[n] = '\0';
	}
	(void)snprintf(origin, osize, "%s%.*s", n == 0 ? "/" : "",
	    (int)(end - t), t);
	return (0);
}

/* A refusal held back AUTH_DELAY_MS (a wrong key), until its timer. */
struct delayed {
	struct hreq	*r;
	struct event	*ev;
	struct rerr	 e;
	int		 family;	/* the error's shape */
	char		 method[16];
	char		 path[AGENCY_PATH_MAX];
	int64_t		 t0;
};

static void
delayed_free(struct delayed *d)
{
	event_free(d->ev);
	free(d);
}

/* The client left before the answer: nothing to answer. */
static void
delayed_gone(void *arg)
{
	struct delayed	*d = arg;

	answer_log(d->method, d->path, "-", 499, now_ms() - d->t0, -1, -1,
	    NULL);
	metrics_unrouted(499);
	delayed_free(d);
}

static void
delayed_answer(evutil_socket_t fd, short ev, void *arg)
{
	struct delayed	*d = arg;

	(void)fd;
	(void)ev;
	conn_set_owner(d->r->conn, NULL, NULL, NULL);
	answer_error_as(d->r, d->family, d->e.status, d->e.code, d->e.message,
	    0);
	answer_log(d->method, d->path, "-", d->e.status, now_ms() - d->t0,
	    -1, -1, NULL);
	metrics_unrouted(d->e.status);
	delayed_free(d);
}

/* Answer e after ms, unless the client goes first; 0, or -1 if it
 * cannot be held back (then it is answered at once by the caller). */
static int
delay_error(struct hreq *r, const struct http_decision *dc, int ms,
    const char *method, const char *path, int64_t t0)
{
	struct delayed	*d;
	struct timeval	 tv;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return (-1);
	if ((d->ev = evtimer_new(px->base, delayed_answer, d)) == NULL) {
		free(d);
		return (-1);
	}
	d->r = r;
	d->e = dc->e;
	d->family = dc->family;
	(void)strlcpy(d->method, method, sizeof(d->method));
	(void)strlcpy(d->path, path, sizeof(d->path));
	d->t0 = t0;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	conn_set_owner(r->conn, delayed_gone, NULL, d);
	evtimer_add(d->ev, &tv);
	return (0);
}

/* A complete request from conn.c: buf holds its body (len bytes),
 * which the request's handling may change. */
static void
http_request(struct hreq *r, const struct h1_msg *m, char *body,
    size_t len)
{
	struct http_decision	 dc;
	char			 path[AGENCY_PATH_MAX], target[AGENCY_PATH_MAX];
	char			 location[AGENCY_PATH_MAX + 1];
	char			 host[256], ctype[256], origin[256];
	char			 authority[256], acrm[32], acrh[1024];
	char			 lastid[64], inm[64];
	char			 who[2 * AGENCY_NAME_MAX + 16];
	char			 authz[AGENCY_SECRET_MAX + 64];
	char			 apikey[AGENCY_SECRET_MAX + 64];
	struct http_hdrs	 hh;
	const char		*method = "OTHER", *last, *q;
	int			 cmd = HTTP_REQ_UNKNOWN;
	json_object		*obj;
	int64_t			 t0 = now_ms();
	size_t			 i, blen = len;

	r->cors[0] = '\0';
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strlen(methods[i].name) == m->methodlen &&
		    memcmp(methods[i].name, m->method, m->methodlen) == 0) {
			method = methods[i].name;
			cmd = methods[i].cmd;
			break;
		}
	if (m->targetlen >= sizeof(target) ||
	    target_path(m->target, m->targetlen, path, sizeof(path), target,
	    sizeof(target), authority, sizeof(authority)) == -1) {
		answer_error(r, m->targetlen >= sizeof(target) ? 414 : 400,
		    "invalid_request", m->targetlen >= sizeof(target) ?
		    "The request target is too long." :
		    "The request target is not a path.");
		answer_log(method, "-", "-", m->targetlen >= sizeof(target) ?
		    414 : 400, now_ms() - t0, -1, -1, NULL);
		metrics_unrouted(m->targetlen >= sizeof(target) ? 414 : 400);
		return;
	}
	/*
	 * Two lengths mean two parties could read two different requests
	 * here (RFC 9112, 6.3): refuse it, even when they agree.
	 */
	if (m->ncontent_length > 1) {
		r->keepalive = 0;
		answer_error(r, 400, "invalid_request",
		    "More than one Content-Length.");
		answer_log(method, path, "-", 400, now_ms() - t0, -1, -1, NULL);
		metrics_unrouted(400);
		return;
	}
	if (cmd != EVHTTP_REQ_POST)
		len = 0;

	memset(&hh, 0, sizeof(hh));
	hh.host = authority[0] != '\0' ? authority :
	    field(m, "Host", host, sizeof(host));
	hh.origin = field(m, "Origin", origin, sizeof(origin));
	hh.ctype = field(m, "Content-Type", ctype, sizeof(ctype));
	hh.marks = conn_body_marks(r->conn);
	hh.query = (q = strchr(target, '?')) != NULL ? q + 1 : NULL;
	/* a credential too long to be a key's is a wrong one ("") */
	hh.authorization = field(m, "Authorization", authz, sizeof(authz));
	hh.apikey = field(m, "X-Api-Key", apikey, sizeof(apikey));
	hh.acrm = field(m, "Access-Control-Request-Method", acrm,
	    sizeof(acrm));
	hh.acrh = field(m, "Access-Control-Request-Headers", acrh,
	    sizeof(acrh));
	hh.tls = r->tls;
	hh.peer = &r->peer;
	http_decide(px->conf, cmd, path, &hh, len > 0 ? body : NULL, len,
	    r->pre, &dc);
	explicit_bzero(authz, sizeof(authz));
	explicit_bzero(apikey, sizeof(apikey));
	(void)strlcpy(r->cors, dc.cors, sizeof(r->cors));
	access_who(&dc.acc, who, sizeof(who));
	last = field(m, "Last-Event-ID", lastid, sizeof(lastid));
	switch (dc.action) {
	case HTTP_HEALTH:
		obj = json_object_new_object();
		json_object_object_add(obj, "status",
		    json_object_new_string("ok"));
		answer_json(r, 200, obj);
		json_object_put(obj);
		answer_log(method, path, "-", 200, now_ms() - t0, -1, -1, NULL);
		break;
	case HTTP_PREFLIGHT:
		answer_preflight(r, dc.pf_method, dc.pf_headers);
		answer_log(method, path, "-", 204, now_ms() - t0, -1, -1, NULL);
		break;
	case HTTP_MODELS:
		http_models(r, &dc.acc);
		answer_log(method, path, "-", 200, now_ms() - t0, -1, -1, who);
		break;
	case HTTP_STATUS:
		forward_status(r);
		break;
	case HTTP_METRICS:
		forward_metrics(r);
		break;
	case HTTP_CANCEL:
		http_cancel(r, dc.model);
		answer_log(method, path, dc.model->name, 200, now_ms() - t0,
		    -1, -1, who);
		break;
	case HTTP_CONSOLE:
		http_console(r, dc.asset, field(m, "If-None-Match", inm,
		    sizeof(inm)), method, path, t0);
		break;
	case HTTP_EVENTS:
		/* logged with its answer */
		events_stream(r, last, path, who);
		break;
	case HTTP_LOGS:
		/* logged with its answer */
		events_logs(r, dc.model, dc.follow, last, path, who);
		break;
	case HTTP_LOAD:
	case HTTP_UNLOAD:
		/* logged with its answer */
		events_admin(r, dc.model, dc.action == HTTP_UNLOAD, dc.wait,
		    who);
		break;
	case HTTP_HOLD:
		/* takes body */
		forward_start(r, dc.model, dc.body, dc.fast ? &dc.splice :
		    NULL, dc.scan.stream, dc.form ? &dc.mf : NULL, dc.boundary,
		    dc.plain || dc.fast ? body : NULL, len, path, target, m,
		    &dc.acc);
		break;
	case HTTP_PASS:
		/* the body of any method that has one */
		forward_pass(r, dc.model, method, target + dc.prefix,
		    dc.prefix, path, body, blen, m, &dc.acc);
		break;
	case HTTP_REDIRECT:
		(void)snprintf(location, sizeof(location), "%.*s/%s",
		    (int)dc.prefix, target, target + dc.prefix);
		answer_redirect(r, 308, location);
		answer_log(method, path, dc.model->name, 308, now_ms() - t0,
		    -1, -1, who);
		break;
	case HTTP_ERROR:
	default:
		if (dc.delay > 0 && delay_error(r, &dc, dc.delay, method,
		    path, t0) == 0)
			break;
		answer_error_as(r, dc.family, dc.e.status, dc.e.code,
		    dc.e.message, 0);
		answer_log(method, path, "-", dc.e.status, now_ms() - t0,
		    -1, -1, who);
		if (dc.model != NULL)
			metrics_request(dc.model->name, dc.acc.key != NULL ?
			    dc.acc.key->name : NULL, dc.acc.user, dc.e.status,
			    -1, -1);
		else
			metrics_unrouted(dc.e.status);
		break;
	}
}

/* A model's aliases, as a JSON array. */
static json_object *
aliases_json(const struct pmodel *m)
{
	json_object	*a = json_object_new_array();
	size_t		 i;

	for (i = 0; i < m->aliases.n; i++)
		json_object_array_add(a, json_object_new_string(m->aliases.v[i]));
	return (a);
}

/*
 * A model's status as llama.cpp's router shows it in /v1/models:
 * {"value": "loaded" | "loading" | "unloaded"}, "failed": true when it
 * failed; NULL before agencyd said.
 */
static json_object *
model_status_json(const char *name)
{
	json_object	*o;
	int		 state;

	if ((state = events_model_state(name)) == -1)
		return (NULL);
	o = json_object_new_object();
	json_object_object_add(o, "value", json_object_new_string(
	    state == STATE_READY ? "loaded" : state == STATE_LOADING ?
	    "loading" : "unloaded"));
	if (state == STATE_FAILED)
		json_object_object_add(o, "failed",
		    json_object_new_boolean(1));
	return (o);
}

/*
 * A file of the console, with the headers that keep it to itself: the
 * policy (no inline code, nothing from elsewhere, no framing), no
 * sniffing, no referrer, and a tag that a revalidation matches (304).
 */
static void
http_console(struct hreq *r, const struct console_asset *a, const char *inm,
    const char *method, const char *path, int64_t t0)
{
	char	 xhdr[1024];
	int	 same, n;

	same = inm != NULL && strcmp(inm, a->etag) == 0;
	n = snprintf(xhdr, sizeof(xhdr), "Content-Security-Policy: %s\r\n"
	    "X-Content-Type-Options: nosniff\r\n"
	    "Referrer-Policy: no-referrer\r\n"
	    "Cache-Control: no-cache\r\n"
	    "ETag: %s\r\n", CONSOLE_CSP, a->etag);
	if (n < 0 || (size_t)n >= sizeof(xhdr))
		fatalx("%s: header too long", __func__);
	answer_headers(r, same ? 304 : 200, a->type, xhdr, a->data,
	    same ? 0 : a->len);
	answer_log(method, path, "-", same ? 304 : 200, now_ms() - t0, -1,
	    -1, NULL);
}

/* The models, and their aliases, that the request may use. */
static void
http_models(struct hreq *r, const struct paccess *a)
{
	struct pmodel		*m;
	json_object		*obj, *data, *e, *routes, *st;
	const char *const	*kr;
	const char		*name;
	char			 pass[AGENCY_NAME_MAX + 16];
	size_t			 i, k;

	obj = json_object_new_object();
	data = json_object_new_array();
	json_object_object_add(obj, "object", json_object_new_string("list"));
	TAILQ_FOREACH(m, &px->conf->models, entry) {
		if (!access_model_ok(a, m))
			continue;
		for (i = 0; i <= m->aliases.n; i++) {
			e = json_object_new_object();
			json_object_object_add(e, "id", json_object_new_string(
			    i == 0 ? m->name : m->aliases.v[i - 1]));
			json_object_object_add(e, "object",
			    json_object_new_string("model"));
			json_object_object_add(e, "created",
			    json_object_new_int64(m->created));
			json_object_object_add(e, "owned_by",
			    json_object_new_string("agency"));
			if (i > 0)
				json_object_object_add(e, "alias_of",
				    json_object_new_string(m->name));
			else
				json_object_object_add(e, "aliases",
				    aliases_json(m));
			if ((st = model_status_json(m->name)) != NULL)
				json_object_object_add(e, "status", st);
			/* what it serves, for a client to find the model of
			 * a kind: the runtime's routes, or its kind's */
			json_object_object_add(e, "kind",
			    json_object_new_string(routes_kind_name(
			    m->rt->kind)));
			routes = json_object_new_array();
			kr = routes_of_kind(m->rt->kind);
			for (k = 0; m->rt->routes.n > 0 ?
			    k < m->rt->routes.n : kr[k] != NULL; k++)
				json_object_array_add(routes,
				    json_object_new_string(m->rt->routes.n > 0 ?
				    m->rt->routes.v[k] : kr[k]));
			json_object_object_add(e, "routes", routes);
			if (m->rt->passthrough) {
				name = i == 0 ? m->name : m->aliases.v[i - 1];
				(void)snprintf(pass, sizeof(pass),
				    "/upstream/%s/", name);
				json_object_object_add(e, "passthrough",
				    json_object_new_string(pass));
			}
			json_object_array_add(data, e);
		}
	}
	json_object_object_add(obj, "data", data);
	answer_json(r, 200, obj);
	json_object_put(obj);
}

/*
 * A Host field's value as name and port: the name up to the port's
 * colon (an IPv6 address with its brackets), the port 0 when there is
 * none.  -1 if it is not of that form.
 */
static int
host_split(const char *host, char *name, size_t size, long long *port)
{
	const char	*colon, *errstr;
	size_t		 n;

	if (host[0] == '[') {
		if ((colon = strchr(host, ']')) == NULL)
			return (-1);
		colon++;
		if (*colon != ':' && *colon != '\0')
			return (-1);
	} else
		colon = strchr(host, ':');
	n = colon != NULL && *colon == ':' ? (size_t)(colon - host) :
	    strlen(host);
	if (n == 0 || n >= size)
		return (-1);
	memcpy(name, host, n);
	name[n] = '\0';
	*port = 0;
	if (colon != NULL && *colon == ':') {
		/* digits only: strtonum would take a sign or spaces */
		if (strspn(colon + 1, "0123456789") != strlen(colon + 1))
			return (-1);
		*port = strtonum(colon + 1, 1, 65535, &errstr);
		if (errstr != NULL)
			return (-1);
	}
	return (0);
}

/* Whether port (0: none, which is 80, or 443 for TLS) is one the front
 * door listens on. */
static int
our_port(const struct pconf *conf, long long port)
{
	struct plisten	*l;

	TAILQ_FOREACH(l, &conf->listens, entry)
		if (l->path[0] == '\0' && (l->port == port ||
		    (port == 0 && l->port == (l->tls ? 443 : 80))))
			return (1);
	return (0);
}

/* A loopback name, as a Host has it. */
static int
loopback_name(const char *name)
{
	return (strcasecmp(name, "localhost") == 0 ||
	    strcmp(name, "127.0.0.1") == 0 || strcmp(name, "[::1]") == 0);
}

/* The address of a listener that is not a wildcard, as a Host has it. */
static int
listen_name(const struct pconf *conf, const char *name)
{
	struct plisten	*l;
	size_t		 n;

	TAILQ_FOREACH(l, &conf->listens, entry) {
		if (strcmp(l->host, "0.0.0.0") == 0 ||
		    strcmp(l->host, "::") == 0)
			continue;
		if (strchr(l->host, ':') == NULL) {
			if (strcasecmp(name, l->host) == 0)
				return (1);
			continue;
		}
		n = strlen(l->host);
		if (name[0] == '[' && strlen(name) == n + 2 &&
		    strncasecmp(name + 1, l->host, n) == 0 && name[n + 1] == ']')
			return (1);
	}
	return (0);
}

/*
 * Against DNS rebinding: whether a Host names this front door.  Every
 * Host does with "server name any".  Otherwise: a loopback name or the
 * address of a listener, with the port of a listener; or a server name,
 * with any port (or none) when the server name has no port of its own,
 * and with that port when it has.
 */
int
http_host_ok(const struct pconf *conf, const char *host)
{
	char		 name[AGENCY_NAME_MAX], sn[AGENCY_NAME_MAX];
	long long	 port, sport;
	size_t		 i;

	if (conf->host_any)
		return (1);
	if (host == NULL || host_split(host, name, sizeof(name), &port) == -1)
		return (0);
	if ((loopback_name(name) || listen_name(conf, name)) &&
	    our_port(conf, port))
		return (1);
	for (i = 0; i < conf->names.n; i++) {
		if (host_split(conf->names.v[i], sn, sizeof(sn), &sport) == -1 ||
		    strcasecmp(sn, name) != 0)
			continue;
		if (sport == 0 || sport == (port == 0 ? 80 : port))
			return (1);
	}
	return (0);
}

/*
 * Whether a request with this Origin is of the front door's own origin,
 * that of the Host it was sent to (a page the front door itself
 * served), with the scheme of the connection (https over TLS).  Other
 * origins are for the "cors origin" list (access.c).  "null", and any
 * origin that is not SCHEME://HOST[:PORT], is not.
 */
int
http_origin_ok(const struct pconf *conf, const char *origin,
    const char *host, int tls)
{
	char		 oname[AGENCY_NAME_MAX], hname[AGENCY_NAME_MAX];
	const char	*scheme = tls ? "https://" : "http://";
	size_t		 n = strlen(scheme);
	long long	 oport, hport, def = tls ? 443 : 80;

	(void)conf;
	if (host == NULL || strncasecmp(origin, scheme, n) != 0 ||
	    host_split(origin + n, oname, sizeof(oname), &oport) == -1 ||
	    host_split(host, hname, sizeof(hname), &hport) == -1)
		return (0);
	if (strchr(oname, '/') != NULL)
		return (0);
	return (strcasecmp(oname, hname) == 0 &&
	    (oport == 0 ? def : oport) == (hport == 0 ? def : hport));
}

/* Content-Type: application/json, with parameters or not. */
static int
json_ctype(const char *ct)
{
	size_t	 n = strlen("application/json");

	return (ct != NULL && strncasecmp(ct, "application/json", n) == 0 &&
	    (ct[n] == '\0' || ct[n] == ';' || ct[n] == ' ' ||
	    ct[n] == '\t'));
}

/*
 * Admin routes, /metrics and passthrough, beyond the Host check of every
 * route: a loopback name with a listener's port, whatever server names
 * there are (on a Unix socket, which is local, any Host).
 */
static int
host_guard(const struct pconf *conf, const struct http_hdrs *hh,
    struct rerr *e)
{
	char		 name[AGENCY_NAME_MAX];
	long long	 port;
	int		 unixsock = hh->peer != NULL && hh->peer->unixsock;

	if (!unixsock && (hh->host == NULL || host_split(hh->host, name,
	    sizeof(name), &port) == -1 || !loopback_name(name) || port == 0 ||
	    !our_port(conf, port))) {
		rerr_set(e, 403, "forbidden_host", "Admin routes need "
		    "a Host of 127.0.0.1, [::1] or localhost with the port.");
		return (403);
	}
	return (0);
}

/* The admin routes and /metrics: their Host, and POSTs only with a JSON
 * body. */
static int
admin_guard(const struct pconf *conf, const struct http_hdrs *hh, int cmd,
    struct rerr *e)
{
	if (host_guard(conf, hh, e) != 0)
		return (403);
	if (cmd == EVHTTP_REQ_POST && !json_ctype(hh->ctype)) {
		rerr_set(e, 415, "unsupported_media_type",
		    "Admin POSTs need Content-Type: application/json.");
		return (415);
	}
	return (0);
}

/* The cancel of a model http_decide found: agencyd sends it. */
static void
http_cancel(struct hreq *r, struct pmodel *m)
{
	forward_cancel_ask(r, m->name);
}
