/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The front door's requests, as conn.c hands them up (http_init): who
 * each comes from, decided on its header before its body is read
 * (http_header, http_decide_header), then what to do with it, decided
 * before any effect from routes.c's table of routes (http_decide: pure,
 * fuzzed), then a lookup of what serves it
 * and a call.  The front door's own answers are here; model requests go
 * to forward.c, the parent's status and cancels to status.c, the events
 * and logs to events.c.  Also the Host and Origin checks, and the
 * listeners of a configuration.
 *
 * Calls: forward.c, status.c, events.c, answer.c, metrics.c, conn.c,
 * hosts.c, access.c, rules.c, scan.c, splice.c, multipart.c, routes.c,
 * utf8.c, h1.c, console_assets.c, state.c, conn_tls.c, common/config.c,
 * common/log.c, common/sha256.c.
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
static int	 http_header(struct hreq *, const struct h1_msg *, int,
		    char *, size_t);
static void	 http_refused(struct hreq *, int);
static int	 pct_decode(const char *, char *, size_t);
static int	 query_has(const char *, const char *, const char *);
static struct pmodel *pass_model(const struct pconf *, const char *,
		    size_t *);
static const char *field(const struct h1_msg *, const char *, char *,
		    size_t);
static const char *field_last(const struct h1_msg *, const char *, char *,
		    size_t);
static int	 delay_error(struct hreq *, const struct http_decision *);
static void	 serve_error(struct hreq *, struct http_decision *);
static void	 serve_health(struct hreq *, struct http_decision *);
static void	 serve_preflight(struct hreq *, struct http_decision *);
static void	 serve_models(struct hreq *, struct http_decision *);
static void	 serve_cancel(struct hreq *, struct http_decision *);
static void	 serve_console(struct hreq *, struct http_decision *);
static void	 serve_events(struct hreq *, struct http_decision *);
static void	 serve_logs(struct hreq *, struct http_decision *);
static void	 serve_admin(struct hreq *, struct http_decision *);
static void	 serve_redirect(struct hreq *, struct http_decision *);

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
	.header = http_header,
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

/* What a decision is made from. */
struct decide_in {
	const struct pconf	*conf;
	int			 cmd;
	const char		*path;
	const struct route	*route;
	const struct http_hdrs	*hh;
	const char		*body;
	size_t			 len;
	const struct prescan	*pre;
};

static void	 decide_get(const struct decide_in *, struct http_decision *);
static void	 decide_console(const struct decide_in *,
		    struct http_decision *);
static void	 decide_admin(const struct decide_in *,
		    struct http_decision *);
static void	 decide_logs(const struct decide_in *, struct http_decision *);
static void	 decide_named(const struct decide_in *,
		    struct http_decision *);
static void	 decide_pass(const struct decide_in *, struct http_decision *);
static void	 decide_model(const struct decide_in *,
		    struct http_decision *);

/* Each kind of route (routes.h): its decision, and what it does. */
static const struct {
	void	(*decide)(const struct decide_in *, struct http_decision *);
	int	  action;		/* enum http_action */
} kinds[ROUTE_KINDS] = {
	[ROUTE_MODEL] = { decide_model, HTTP_HOLD },
	[ROUTE_HEALTH] = { decide_get, HTTP_HEALTH },
	[ROUTE_CONSOLE] = { decide_console, HTTP_CONSOLE },
	[ROUTE_MODELS] = { decide_get, HTTP_MODELS },
	[ROUTE_METRICS] = { decide_get, HTTP_METRICS },
	[ROUTE_STATUS] = { decide_admin, HTTP_STATUS },
	[ROUTE_EVENTS] = { decide_admin, HTTP_EVENTS },
	[ROUTE_LOGS] = { decide_logs, HTTP_LOGS },
	[ROUTE_CANCEL] = { decide_named, HTTP_CANCEL },
	[ROUTE_LOAD] = { decide_named, HTTP_LOAD },
	[ROUTE_UNLOAD] = { decide_named, HTTP_UNLOAD },
	[ROUTE_STOP] = { decide_named, HTTP_STOP },
	[ROUTE_ADMIN_OTHER] = { decide_admin, HTTP_ERROR },
	[ROUTE_PASS] = { decide_pass, HTTP_PASS },
};

static void
decide_error(struct http_decision *dc, int status, const char *code,
    const char *message)
{
	dc->action = HTTP_ERROR;
	rerr_set(&dc->e, status, code, "%s", message);
}

/*
 * A CORS preflight of a listed origin (dc->cors): the method of its
 * route (GET for the models list, POST for the model routes), asked for,
 * and headers that access.c allows.  No other route gets here.
 */
static void
decide_preflight(const struct decide_in *in, struct http_decision *dc)
{
	const struct http_hdrs	*hh = in->hh;
	const char		*method;

	/* a refused preflight grants nothing */
	dc->cors[0] = '\0';
	if (in->route->kind == ROUTE_MODELS)
		method = "GET";
	else if (strncmp(in->path, "/v1/", 4) == 0)
		method = "POST";
	else {
		decide_error(dc, 403, "cors_refused", "No such route for "
		    "other origins.");
		return;
	}
	if (strcmp(hh->acrm, method) != 0) {
		rerr_set(&dc->e, 403, "cors_refused", "Other origins may use "
		    "%s on %.100s, not %.20s.", method, in->path, hh->acrm);
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
 * Against DNS rebinding and cross-origin pages, before anything: the
 * Host, then the Origin; a listed origin's preflight ends here.  A Unix
 * socket is out of a browser's reach: its Host is not checked (curl
 * sends "localhost", without a port).  0 to go on.
 */
static int
guard_front(const struct decide_in *in, struct http_decision *dc)
{
	const struct http_hdrs	*hh = in->hh;

	if ((hh->peer == NULL || !hh->peer->unixsock) &&
	    !http_host_ok(in->conf, hh->host)) {
		rerr_set(&dc->e, 403, "forbidden_host", "The Host '%.100s' is "
		    "not a name of this front door (see server name in "
		    "agency.conf(5)).", hh->host != NULL ? hh->host : "");
		dc->action = HTTP_ERROR;
		return (-1);
	}
	if (hh->origin == NULL || http_origin_ok(in->conf, hh->origin,
	    hh->host, hh->tls))
		return (0);
	if ((in->route->guard & ROUTE_OWN) ||
	    !access_cors_listed(in->conf, hh->origin)) {
		rerr_set(&dc->e, 403, "forbidden_origin", "Requests from the "
		    "origin '%.100s' are not allowed.", hh->origin);
		dc->action = HTTP_ERROR;
		return (-1);
	}
	/* a listed origin: its answers, errors too, say so */
	(void)strlcpy(dc->cors, hh->origin, sizeof(dc->cors));
	/* a preflight carries no credentials */
	if (in->cmd == EVHTTP_REQ_OPTIONS && hh->acrm != NULL) {
		decide_preflight(in, dc);
		return (-1);
	}
	return (0);
}

/* Who it comes from (access.c: keys, allow rules), and for the admin
 * routes and passthrough all three of agencyd(8)'s: a loopback Host, a
 * client on this host, an admin key.  0 to go on. */
static int
guard_access(const struct decide_in *in, struct http_decision *dc)
{
	if (access_decide(in->conf, in->hh, &dc->acc, &dc->e) == -1) {
		dc->action = HTTP_ERROR;
		dc->delay = dc->acc.wrong ? AUTH_DELAY_MS : 0;
		return (-1);
	}
	if (!(in->route->guard & ROUTE_ADMIN))
		return (0);
	if (hosts_admin_guard(in->conf, in->hh, in->cmd, in->route->guard,
	    &dc->e) != 0) {
		dc->action = HTTP_ERROR;
		return (-1);
	}
	if (!dc->acc.admin) {
		decide_error(dc, 403, "admin_key_required", dc->acc.key !=
		    NULL ? "Admin routes and /upstream/ need a key marked "
		    "admin." : "Admin routes and /upstream/ need a key marked "
		    "admin, or an allow rule with admin.");
		return (-1);
	}
	return (0);
}

/*
 * The part of a decision its header makes (http_decide's first): its
 * route, and the guards the route has, in the order the design gives
 * them (Host and Origin, CORS preflights, access: keys and allow rules,
 * the admin routes' guards).  0 when it passed them, and body (one is
 * announced) may be read; -1 when dc holds its answer.  Only a request
 * that passed access may have a body: one on a route without access
 * guards (which reads none) is refused, so that no one takes the body
 * budget unasked.
 */
static int
decide_header(const struct decide_in *in, int body, struct http_decision *dc)
{
	int	 guard = in->route->guard;

	memset(dc, 0, sizeof(*dc));
	dc->route = in->route;
	dc->family = in->route->family;
	dc->path = in->path;
	if (in->conf == NULL) {
		decide_error(dc, 503, "starting", "The proxy is starting.");
		return (-1);
	}
	if (!(guard & ROUTE_ANYHOST) && guard_front(in, dc) != 0)
		return (-1);
	if (!(guard & (ROUTE_ANYHOST | ROUTE_KEYLESS)))
		return (guard_access(in, dc));
	if (!body)
		return (0);
	/* its own refusal first (these routes read no body) */
	kinds[in->route->kind].decide(in, dc);
	if (dc->action != HTTP_ERROR) {
		dc->asset = NULL;
		decide_error(dc, 413, "body_too_large",
		    "This route takes no body.");
	}
	return (-1);
}

/* decide_header's decision, for a request whose body is not read yet
 * (body: it announced one). */
int
http_decide_header(const struct pconf *conf, int cmd, const char *path,
    const struct http_hdrs *hh, int body, struct http_decision *dc)
{
	const struct decide_in	 in = { conf, cmd, path, routes_find(path),
				    hh, NULL, 0, NULL };

	return (decide_header(&in, body, dc));
}

/*
 * What the front door does with a request, decided without touching the
 * request or the network, so that the fuzzer runs the very code that
 * serves: what its header decides (decide_header, made again, as the
 * configuration may have changed since), then the route's own decision
 * (methods, Content-Type, body, model, rules).  cmd is an EVHTTP_REQ_*
 * value; hh holds the header fields that bear on it (NULL when absent)
 * and what the connection is; body is only read for POSTs.
 */
void
http_decide(const struct pconf *conf, int cmd, const char *path,
    const struct http_hdrs *hh, const char *body, size_t len,
    const struct prescan *pre, struct http_decision *dc)
{
	const struct decide_in	 in = { conf, cmd, path, routes_find(path),
				    hh, body, len, pre };

	if (decide_header(&in, len > 0, dc) == 0)
		kinds[in.route->kind].decide(&in, dc);
}

/* /health (no guard: a load balancer may not send the name clients
 * use), the models list and /metrics. */
static void
decide_get(const struct decide_in *in, struct http_decision *dc)
{
	if (in->cmd & in->route->methods)
		dc->action = kinds[in->route->kind].action;
	else
		decide_error(dc, 405, "method_not_allowed", "Use GET.");
}

/*
 * The console's files: the admin routes' guard, and only when it is on,
 * but no key: a browser sends none when it opens a page, and they are
 * the same for everyone.  What the page shows comes from the admin
 * routes, with the admin key it is given.
 */
static void
decide_console(const struct decide_in *in, struct http_decision *dc)
{
	if (!in->conf->console || !(in->cmd & in->route->methods) ||
	    (dc->asset = console_asset(in->path)) == NULL) {
		dc->asset = NULL;
		decide_error(dc, 404, "not_found", "No such route.");
	} else if (hosts_admin_guard(in->conf, in->hh, in->cmd, in->route->guard,
	    &dc->e) != 0) {
		dc->asset = NULL;
		dc->action = HTTP_ERROR;
	} else
		dc->action = HTTP_CONSOLE;
}

/* An admin route (past its guards) with a method it takes; 0, or -1
 * when there is no such one. */
static int
admin_method(const struct decide_in *in, struct http_decision *dc)
{
	if (in->cmd & in->route->methods)
		return (0);
	decide_error(dc, 404, "not_found", "No such admin route.");
	return (-1);
}

/* The admin status and events; any other path under /v1/agency/ has no
 * method. */
static void
decide_admin(const struct decide_in *in, struct http_decision *dc)
{
	if (admin_method(in, dc) != 0)
		return;
	/* the stream is the same for every subscriber: not for a key
	 * that may not see every model */
	if (in->route->kind == ROUTE_EVENTS && access_scoped(&dc->acc)) {
		decide_error(dc, 403, "key_scoped", "The events stream shows "
		    "every model: it needs an admin key (or allow rule) of "
		    "every model.");
		return;
	}
	dc->action = kinds[in->route->kind].action;
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

/* GET /v1/agency/logs/MODEL, of a model the request may use. */
static void
decide_logs(const struct decide_in *in, struct http_decision *dc)
{
	const char	*name = in->path + strlen(in->route->path);
	char		 buf[AGENCY_NAME_MAX];
	struct pmodel	*m;
	int		 r;

	if (admin_method(in, dc) == -1)
		return;
	if ((r = pct_decode(name, buf, sizeof(buf))) == -1) {
		decide_error(dc, 400, "invalid_request", "The model name in "
		    "the path has a %-escape that is not two hex digits, or "
		    "is %00.");
		return;
	}
	if (r == 0 && rules_name_check(buf, strlen(buf), &dc->e) == -1) {
		dc->action = HTTP_ERROR;
		return;
	}
	/* too long to be a name: none of them */
	if (r == -2 || (m = pconf_find_model(in->conf, buf)) == NULL ||
	    !access_model_ok(&dc->acc, m)) {
		rerr_set(&dc->e, 404, "model_not_found",
		    "The model '%.100s' does not exist.", name);
		dc->action = HTTP_ERROR;
		return;
	}
	dc->action = HTTP_LOGS;
	dc->model = m;
	dc->follow = query_has(in->hh->query, "follow", "1");
}

/* The admin POSTs of cancel, load, unload and stop: a body naming a served
 * model, and for load whether to wait. */
static void
decide_named(const struct decide_in *in, struct http_decision *dc)
{
	json_object	*obj, *jm, *jw;
	struct pmodel	*m;

	if (admin_method(in, dc) == -1)
		return;
	if ((obj = rules_parse(in->body, in->len, &dc->e)) == NULL) {
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
	if (in->route->kind == ROUTE_LOAD &&
	    json_object_object_get_ex(obj, "wait", &jw)) {
		if (!json_object_is_type(jw, json_type_boolean)) {
			json_object_put(obj);
			decide_error(dc, 400, "invalid_wait",
			    "\"wait\" is true or false.");
			return;
		}
		dc->wait = json_object_get_boolean(jw);
	}
	if (rules_name_check(json_object_get_string(jm),
	    (size_t)json_object_get_string_len(jm), &dc->e) == -1) {
		json_object_put(obj);
		dc->action = HTTP_ERROR;
		return;
	}
	if ((m = pconf_find_model(in->conf, json_object_get_string(jm))) ==
	    NULL || !access_model_ok(&dc->acc, m)) {
		rerr_set(&dc->e, 404, "model_not_found",
		    "The model '%.100s' does not exist.",
		    json_object_get_string(jm));
		json_object_put(obj);
		dc->action = HTTP_ERROR;
		return;
	}
	json_object_put(obj);
	dc->action = kinds[in->route->kind].action;
	dc->model = m;
}

/* The model a request names (NULL: it names none), if the request may
 * use it and it serves the route; NULL when refused, as dc says. */
static struct pmodel *
decide_pick(const struct decide_in *in, struct http_decision *dc,
    const char *name)
{
	struct pmodel	*m;
	struct pscope	 sc;

	access_scope(&dc->acc, &sc);
	if (rules_pick_name(in->conf, name, &sc, &m, &dc->e) == -1) {
		dc->action = HTTP_ERROR;
		return (NULL);
	}
	if (rules_check_route(m, in->path, &dc->e) == -1) {
		dc->action = HTTP_ERROR;
		dc->model = m;		/* refused for this model */
		return (NULL);
	}
	return (m);
}

/*
 * A multipart/form-data body (routes.c says which routes take one): its
 * framing read strictly (multipart.c), the model picked by the form's
 * model field, a hold for the bytes as they came.  A form is what a
 * page may post across origins unasked: the Origin check above is what
 * keeps other sites out.
 */
static void
decide_form(const struct decide_in *in, struct http_decision *dc)
{
	const struct http_hdrs	*hh = in->hh;
	char			 name[MULTIPART_MODEL_MAX + 1];
	const char		*err;
	struct pmodel		*m;
	int			 r;

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
	if ((r = multipart_scan(in->body, in->len, dc->boundary,
	    (size_t)in->conf->max_body, hh->marks, &dc->mf, &err)) != 0) {
		decide_error(dc, -r, r == -413 ? "body_too_large" :
		    "invalid_form", err);
		return;
	}
	if (dc->mf.has_model) {
		memcpy(name, in->body + dc->mf.model_off, dc->mf.model_len);
		name[dc->mf.model_len] = '\0';
		if (!utf8_valid((const unsigned char *)name,
		    dc->mf.model_len)) {
			decide_error(dc, 400, "invalid_form",
			    "The form's model is not valid UTF-8.");
			return;
		}
	}
	if ((m = decide_pick(in, dc, dc->mf.has_model ? name : NULL)) == NULL)
		return;
	dc->action = HTTP_HOLD;
	dc->model = m;
	dc->form = 1;
	dc->plain = 1;
	dc->stream = dc->mf.stream;
}

/*
 * The fast path (scan.c, splice.c): a body that needs no tree for the
 * rules to be applied is only scanned, and what they change is spliced.
 * 1 when it decided, 0 to leave the body to json-c (decide_tree), with
 * *scanned set if the scan took it.
 */
static int
decide_fast(const struct decide_in *in, struct http_decision *dc,
    int *scanned)
{
	struct pmodel	*m;

	if (!http_fastpath || !splice_route(in->route) ||
	    !rules_fast(in->body, in->len, in->pre, in->route->parts,
	    &dc->scan))
		return (0);
	if ((m = decide_pick(in, dc, dc->scan.has_model ? dc->scan.model :
	    NULL)) == NULL)
		return (1);
	*scanned = 1;
	switch (splice_rules(m->rt, &dc->scan, &dc->splice, &dc->e)) {
	case -1:
		dc->action = HTTP_ERROR;
		dc->model = m;		/* refused for this model */
		return (1);
	case 0:
		dc->action = HTTP_HOLD;
		dc->model = m;
		dc->plain = !dc->splice.changed;
		dc->fast = 1;
		dc->stream = dc->scan.stream;
		return (1);
	default:
		memset(&dc->scan, 0, sizeof(dc->scan));
		return (0);
	}
}

/* A JSON body as json-c reads it: the model it names, the rules of its
 * runtime applied to the tree.  scanned: the fast path's scan took it. */
static void
decide_tree(const struct decide_in *in, struct http_decision *dc,
    int scanned)
{
	json_object	*obj;
	struct pmodel	*m;
	struct pscope	 sc;
	int		 changed;

	access_scope(&dc->acc, &sc);
	if ((obj = rules_parse(in->body, in->len, &dc->e)) == NULL) {
		dc->action = HTTP_ERROR;
		return;
	}
	if (rules_pick_model(in->conf, obj, &sc, &m, &dc->e) == -1) {
		json_object_put(obj);
		dc->action = HTTP_ERROR;
		return;
	}
	if (rules_check_route(m, in->path, &dc->e) == -1 ||
	    rules_apply(m->rt, in->path, obj, &dc->e, &changed) == -1) {
		json_object_put(obj);
		dc->action = HTTP_ERROR;
		dc->model = m;		/* refused for this model */
		return;
	}
	dc->action = HTTP_HOLD;
	dc->model = m;
	dc->body = obj;
	dc->stream = rules_stream(obj);
	/* what took the fast scan is plain: not scanned a second time */
	dc->plain = !changed && (scanned || rules_plain(in->body, in->len));
}

/*
 * A model route: a POST whose body names the model (a form's field or
 * JSON's "model"), of a Content-Type a page cannot send across origins
 * unasked, on a route its runtime serves, refused or changed by the
 * runtime's rules.
 */
static void
decide_model(const struct decide_in *in, struct http_decision *dc)
{
	int	 scanned = 0;

	if (in->cmd != EVHTTP_REQ_POST) {
		if (strncmp(in->path, "/v1/", 4) == 0)
			decide_error(dc, 405, "method_not_allowed",
			    "Model routes take POST.");
		else
			decide_error(dc, 404, "not_found", "No such route.");
		return;
	}
	if (in->route->body == BODY_FORM) {
		decide_form(in, dc);
		return;
	}
	if (!hosts_json_ctype(in->hh->ctype)) {
		decide_error(dc, 415, "unsupported_media_type",
		    "Model routes need Content-Type: application/json.");
		return;
	}
	if (!decide_fast(in, dc, &scanned))
		decide_tree(in, dc, scanned);
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
 * request rule reads it, so it is kept to what the admin routes need
 * (guard_access), and to the models the admin key may use.
 */
static void
decide_pass(const struct decide_in *in, struct http_decision *dc)
{
	size_t	 prefix = strlen(in->route->path), n;
	struct pmodel	*m;

	if (!(in->cmd & in->route->methods)) {
		decide_error(dc, 405, "method_not_allowed",
		    "That method is not passed through.");
		return;
	}
	if ((m = pass_model(in->conf, in->path + prefix, &n)) == NULL ||
	    !access_model_ok(&dc->acc, m)) {
		rerr_set(&dc->e, 404, "model_not_found", "No model served "
		    "here is named after /upstream/ in %.200s.", in->path);
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
	dc->prefix = prefix + n;
	/* its own page's relative links need the slash */
	dc->action = in->path[dc->prefix] == '\0' ? HTTP_REDIRECT : HTTP_PASS;
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

/* A field's value (h, or NULL when absent) into buf: buf, or "" when
 * too long to be one we would accept. */
static const char *
field_copy(const struct h1_header *h, char *buf, size_t size)
{
	if (h == NULL)
		return (NULL);
	if (h->valuelen >= size)
		return ("");
	memcpy(buf, h->value, h->valuelen);
	buf[h->valuelen] = '\0';
	return (buf);
}

/* A field's value as a string, or NULL if absent or too long to be one
 * we would accept. */
static const char *
field(const struct h1_msg *m, const char *name, char *buf, size_t size)
{
	return (field_copy(h1_find(m, name), buf, size));
}

/* The last field of that name, as field() gives one: a proxy adds its
 * X-Forwarded-For after any the client sent. */
static const char *
field_last(const struct h1_msg *m, const char *name, char *buf,
    size_t size)
{
	const struct h1_header	*h;
	size_t			 i = m->nheaders, n = strlen(name);

	while (i-- > 0) {
		h = &m->headers[i];
		if (h->namelen == n && strncasecmp(h->name, name, n) == 0)
			return (field_copy(h, buf, size));
	}
	return (NULL);
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

/* Answer dc's refusal after its delay, unless the client goes first; 0,
 * or -1 if it cannot be held back (then it is answered at once). */
static int
delay_error(struct hreq *r, const struct http_decision *dc)
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
	(void)strlcpy(d->method, dc->method, sizeof(d->method));
	(void)strlcpy(d->path, dc->path, sizeof(d->path));
	d->t0 = dc->t0;
	tv.tv_sec = dc->delay / 1000;
	tv.tv_usec = (dc->delay % 1000) * 1000;
	conn_set_owner(r->conn, delayed_gone, NULL, d);
	evtimer_add(d->ev, &tv);
	return (0);
}

/* What http_request copies out of a request for its decision. */
struct hin {
	int			 cmd;		/* EVHTTP_REQ_*, or unknown */
	const char		*method;	/* its name, or "OTHER" */
	char			 path[AGENCY_PATH_MAX];
	char			 target[AGENCY_PATH_MAX];
	char			 authority[256];
	struct http_hdrs	 hh;
	char			 host[256];
	char			 ctype[256];
	char			 origin[256];
	char			 acrm[32];
	char			 acrh[1024];
	char			 fwd[1024];
	/* a credential too long to be a key's is a wrong one ("") */
	char			 authz[AGENCY_SECRET_MAX + 64];
	char			 apikey[AGENCY_SECRET_MAX + 64];
};

/*
 * The request line, as every route needs it: the method, the path and
 * the target (for the model), and at most one Content-Length (two mean
 * two parties could read two different requests here, RFC 9112 6.3:
 * refused, even when they agree).  0, or -1 when it was answered.
 */
static int
request_line(struct hreq *r, const struct h1_msg *m, struct hin *in,
    int64_t t0)
{
	const char	*msg, *logged = "-";
	size_t		 i;
	int		 status = 400;

	in->method = "OTHER";
	in->cmd = HTTP_REQ_UNKNOWN;
	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strlen(methods[i].name) == m->methodlen &&
		    memcmp(methods[i].name, m->method, m->methodlen) == 0) {
			in->method = methods[i].name;
			in->cmd = methods[i].cmd;
			break;
		}
	if (m->targetlen >= sizeof(in->target)) {
		status = 414;
		msg = "The request target is too long.";
	} else if (target_path(m->target, m->targetlen, in->path,
	    sizeof(in->path), in->target, sizeof(in->target), in->authority,
	    sizeof(in->authority)) == -1)
		msg = "The request target is not a path.";
	else if (m->ncontent_length > 1) {
		r->keepalive = 0;
		msg = "More than one Content-Length.";
		logged = in->path;
	} else
		return (0);
	answer_error(r, status, "invalid_request", msg);
	answer_log(in->method, logged, "-", status, now_ms() - t0, -1, -1,
	    NULL);
	metrics_unrouted(status);
	return (-1);
}

/* The header fields a decision reads, and what the connection is; a
 * form's marks only for a route that takes a form. */
static void
request_fields(struct hreq *r, const struct h1_msg *m, struct hin *in)
{
	struct http_hdrs	*hh = &in->hh;
	const char		*q;

	memset(hh, 0, sizeof(*hh));
	hh->host = in->authority[0] != '\0' ? in->authority :
	    field(m, "Host", in->host, sizeof(in->host));
	hh->origin = field(m, "Origin", in->origin, sizeof(in->origin));
	hh->ctype = field(m, "Content-Type", in->ctype, sizeof(in->ctype));
	if (routes_find(in->path)->body == BODY_FORM)
		hh->marks = conn_body_marks(r->conn);
	hh->query = (q = strchr(in->target, '?')) != NULL ? q + 1 : NULL;
	hh->authorization = field(m, "Authorization", in->authz,
	    sizeof(in->authz));
	hh->apikey = field(m, "X-Api-Key", in->apikey, sizeof(in->apikey));
	hh->acrm = field(m, "Access-Control-Request-Method", in->acrm,
	    sizeof(in->acrm));
	hh->acrh = field(m, "Access-Control-Request-Headers", in->acrh,
	    sizeof(in->acrh));
	hh->forwarded = field_last(m, "X-Forwarded-For", in->fwd,
	    sizeof(in->fwd));
	hh->tls = r->tls;
	hh->peer = &r->peer;
}

/* What a decision reads of a request (request_line, request_fields),
 * and the shape of its errors; 0, or -1 when it was answered. */
static int
request_in(struct hreq *r, const struct h1_msg *m, struct hin *in,
    int64_t t0)
{
	r->cors[0] = '\0';
	if (request_line(r, m, in, t0) == -1)
		return (-1);
	r->family = routes_find(in->path)->family;
	request_fields(r, m, in);
	return (0);
}

/* The credentials a decision read, wiped once it is made. */
static void
request_forget(struct hin *in)
{
	explicit_bzero(in->authz, sizeof(in->authz));
	explicit_bzero(in->apikey, sizeof(in->apikey));
}

/* What serves each action (enum http_action). */
static void	(*const serve[])(struct hreq *, struct http_decision *) = {
	[HTTP_ERROR] = serve_error,
	[HTTP_HEALTH] = serve_health,
	[HTTP_MODELS] = serve_models,
	[HTTP_STATUS] = status_get,
	[HTTP_CANCEL] = serve_cancel,
	[HTTP_HOLD] = forward_start,
	[HTTP_METRICS] = status_metrics,
	[HTTP_PREFLIGHT] = serve_preflight,
	[HTTP_PASS] = forward_pass,
	[HTTP_REDIRECT] = serve_redirect,
	[HTTP_CONSOLE] = serve_console,
	[HTTP_EVENTS] = serve_events,
	[HTTP_LOGS] = serve_logs,
	[HTTP_LOAD] = serve_admin,
	[HTTP_UNLOAD] = serve_admin,
	[HTTP_STOP] = serve_admin,
};

/* A decision served: what it needs of the request, then what serves
 * its action. */
static void
http_serve(struct hreq *r, const struct h1_msg *m, const struct hin *in,
    struct http_decision *dc, char *body, size_t len, int64_t t0)
{
	(void)strlcpy(r->cors, dc->cors, sizeof(r->cors));
	dc->method = in->method;
	dc->target = in->target;
	dc->hm = m;
	dc->raw = body;
	dc->rawlen = len;
	dc->t0 = t0;
	access_who(&dc->acc, dc->who, sizeof(dc->who));
	serve[dc->action](r, dc);
}

/*
 * A request's header from conn.c, before its body (body: one is
 * announced): what the header decides (http_decide_header).  Let in, 0,
 * with owner naming whose share of the body budget it takes; refused,
 * -1, answered at once (conn.c closes the connection after the answer
 * when a body was announced, and reads none of it).
 */
static int
http_header(struct hreq *r, const struct h1_msg *m, int body, char *owner,
    size_t size)
{
	struct http_decision	 dc;
	struct hin		 in;
	int64_t			 t0 = now_ms();
	int			 pass;

	if (request_in(r, m, &in, t0) == -1)
		return (-1);
	in.hh.marks = NULL;	/* of no body yet */
	pass = http_decide_header(px->conf, in.cmd, in.path, &in.hh, body,
	    &dc);
	if (pass == 0)
		access_owner(px->conf, &dc.acc, &in.hh, owner, size);
	request_forget(&in);
	if (pass == 0)
		return (0);
	http_serve(r, m, &in, &dc, NULL, 0, t0);
	return (-1);
}

/* A complete request from conn.c: body holds its len bytes, which the
 * request's handling may change.  Decided, then served. */
static void
http_request(struct hreq *r, const struct h1_msg *m, char *body,
    size_t len)
{
	struct http_decision	 dc;
	struct hin		 in;
	int64_t			 t0 = now_ms();
	int			 post;

	if (request_in(r, m, &in, t0) == -1)
		return;
	post = in.cmd == EVHTTP_REQ_POST;
	http_decide(px->conf, in.cmd, in.path, &in.hh, post && len > 0 ?
	    body : NULL, post ? len : 0, r->pre, &dc);
	request_forget(&in);
	http_serve(r, m, &in, &dc, body, len, t0);
}

/* A refusal: at once, or after a wrong key's delay. */
static void
serve_error(struct hreq *r, struct http_decision *dc)
{
	if (dc->delay > 0 && delay_error(r, dc) == 0)
		return;
	answer_error_as(r, dc->family, dc->e.status, dc->e.code,
	    dc->e.message, 0);
	answer_log(dc->method, dc->path, "-", dc->e.status,
	    now_ms() - dc->t0, -1, -1, dc->who);
	if (dc->model != NULL)
		metrics_request(dc->model->name, dc->acc.key != NULL ?
		    dc->acc.key->name : NULL, dc->acc.user, dc->e.status, -1,
		    -1);
	else
		metrics_unrouted(dc->e.status);
}

static void
serve_health(struct hreq *r, struct http_decision *dc)
{
	json_object	*obj;
	int		 status = forward_draining() ? 503 : 200;

	/* draining: a load balancer sends no more */
	obj = json_object_new_object();
	json_object_object_add(obj, "status", json_object_new_string(
	    status == 200 ? "ok" : "stopping"));
	answer_json(r, status, obj);
	json_object_put(obj);
	answer_log(dc->method, dc->path, "-", status, now_ms() - dc->t0, -1,
	    -1, NULL);
}

static void
serve_preflight(struct hreq *r, struct http_decision *dc)
{
	answer_preflight(r, dc->pf_method, dc->pf_headers);
	answer_log(dc->method, dc->path, "-", 204, now_ms() - dc->t0, -1, -1,
	    NULL);
}

/* The cancel of a model: agencyd sends it (status.c). */
static void
serve_cancel(struct hreq *r, struct http_decision *dc)
{
	status_cancel(r, dc);
	answer_log(dc->method, dc->path, dc->model->name, 200,
	    now_ms() - dc->t0, -1, -1, dc->who);
}

/* The events stream, a model's log, a load, an unload or a stop
 * (events.c):
 * each is logged with its answer. */
static void
serve_events(struct hreq *r, struct http_decision *dc)
{
	char	 last[64];

	events_stream(r, field(dc->hm, "Last-Event-ID", last, sizeof(last)),
	    dc->path, dc->who);
}

static void
serve_logs(struct hreq *r, struct http_decision *dc)
{
	char	 last[64];

	events_logs(r, dc->model, dc->follow, field(dc->hm, "Last-Event-ID",
	    last, sizeof(last)), dc->path, dc->who);
}

static void
serve_admin(struct hreq *r, struct http_decision *dc)
{
	events_admin(r, dc->model, dc->action == HTTP_LOAD ? ADMIN_LOAD :
	    dc->action == HTTP_UNLOAD ? ADMIN_UNLOAD : ADMIN_STOP, dc->wait,
	    dc->who);
}

/* /upstream/MODEL: to /upstream/MODEL/, its query kept. */
static void
serve_redirect(struct hreq *r, struct http_decision *dc)
{
	char	 location[AGENCY_PATH_MAX + 1];

	(void)snprintf(location, sizeof(location), "%.*s/%s",
	    (int)dc->prefix, dc->target, dc->target + dc->prefix);
	answer_redirect(r, 308, location);
	answer_log(dc->method, dc->path, dc->model->name, 308,
	    now_ms() - dc->t0, -1, -1, dc->who);
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
serve_console(struct hreq *r, struct http_decision *dc)
{
	const struct console_asset	*a = dc->asset;
	const char			*inm;
	char				 xhdr[1024], tag[64];
	int				 same, n;

	inm = field(dc->hm, "If-None-Match", tag, sizeof(tag));
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
	answer_log(dc->method, dc->path, "-", same ? 304 : 200,
	    now_ms() - dc->t0, -1, -1, NULL);
}

/* The models, and their aliases, that the request may use. */
static void
serve_models(struct hreq *r, struct http_decision *dc)
{
	const struct paccess	*a = &dc->acc;
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
	answer_log(dc->method, dc->path, "-", 200, now_ms() - dc->t0, -1, -1,
	    dc->who);
}
