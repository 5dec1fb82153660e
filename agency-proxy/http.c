/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The HTTP front door: routes, admin guards, errors in the OpenAI shape,
 * the access log.  Model requests go on to forward.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/http.h>	/* EVHTTP_REQ_*, for http_decide */

#include <json-c/json.h>

#include "h1.h"
#include "log.h"
#include "proxy.h"

static void	 http_models(struct hreq *);
static int	 admin_guard(const struct pconf *, const char *, const char *,
		    int, struct rerr *);
static void	 http_cancel(struct hreq *, struct pmodel *);
static void	 decide_error(struct http_decision *, int, const char *,
		    const char *);

/*
 * Milliseconds of CLOCK_MONOTONIC, read once a loop turn: proxy.c's loop
 * calls now_reset before each turn, and a turn is far shorter than a
 * millisecond's worth of what is timed with it.
 */
static int64_t	 now_cache = -1;

int64_t
now_ms(void)
{
	struct timespec	 ts;

	if (now_cache >= 0)
		return (now_cache);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now_cache = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	return (now_cache);
}

void
now_reset(void)
{
	now_cache = -1;
}

const char *
http_error_type(int status)
{
	if (status >= 500)
		return ("server_error");
	if (status == 403 || status == 401)
		return ("permission_error");
	if (status == 404)
		return ("not_found_error");
	return ("invalid_request_error");
}

static const char *
reason(int status)
{
	switch (status) {
	case 200:
		return ("OK");
	case 400:
		return ("Bad Request");
	case 403:
		return ("Forbidden");
	case 404:
		return ("Not Found");
	case 405:
		return ("Method Not Allowed");
	case 413:
		return ("Payload Too Large");
	case 414:
		return ("URI Too Long");
	case 415:
		return ("Unsupported Media Type");
	case 431:
		return ("Request Header Fields Too Large");
	case 500:
		return ("Internal Server Error");
	case 501:
		return ("Not Implemented");
	case 505:
		return ("HTTP Version Not Supported");
	case 499:
		return ("Client Closed Request");
	case 502:
		return ("Bad Gateway");
	case 503:
		return ("Service Unavailable");
	case 504:
		return ("Gateway Timeout");
	default:
		return (status < 400 ? "OK" : "Error");
	}
}

int		 http_fastpath = 1;

/* The answer's bytes are put together here, then written at once. */
static char	*hbuf;
static size_t	 hlen, hcap;

static void
h_add(const void *p, size_t n)
{
	size_t	 cap;
	char	*b;

	if (n == 0)
		return;
	if (hlen + n > hcap) {
		cap = hcap ? hcap : 4096;
		while (cap < hlen + n)
			cap *= 2;
		if ((b = realloc(hbuf, cap)) == NULL)
			fatal("%s", __func__);
		hbuf = b;
		hcap = cap;
	}
	memcpy(hbuf + hlen, p, n);
	hlen += n;
}

/* A whole answer, in two parts; then the connection reads on, or
 * closes. */
static void
answer(struct hreq *r, int status, const char *ctype, const char *a,
    size_t alen, const char *b, size_t blen)
{
	char	 head[512];
	int	 n;

	n = snprintf(head, sizeof(head), "HTTP/1.%d %d %s\r\n"
	    "Content-Type: %s\r\nContent-Length: %zu\r\n%s\r\n",
	    r->minor >= 1 ? 1 : 0, status, reason(status), ctype, alen + blen,
	    !r->keepalive ? "Connection: close\r\n" :
	    r->minor == 0 ? "Connection: keep-alive\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(head))
		fatalx("%s: header too long", __func__);
	hlen = 0;
	h_add(head, n);
	if (!r->head) {
		h_add(a, alen);
		h_add(b, blen);
	}
	(void)conn_write(r->conn, hbuf, hlen);
	if (hcap > 65536) {
		free(hbuf);
		hbuf = NULL;
		hcap = 0;
	}
	conn_done(r->conn, 1);
}

void
http_reply(struct hreq *r, int status, const char *ctype, const char *body,
    size_t len)
{
	answer(r, status, ctype, body, len, NULL, 0);
}

void
http_json(struct hreq *r, int status, json_object *obj)
{
	const char	*s;

	s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	answer(r, status, "application/json", s, strlen(s), "\n", 1);
}

void
http_error(struct hreq *r, int status, const char *code,
    const char *message)
{
	json_object	*obj, *err;

	obj = json_object_new_object();
	err = json_object_new_object();
	json_object_object_add(err, "message",
	    json_object_new_string(message));
	json_object_object_add(err, "type",
	    json_object_new_string(http_error_type(status)));
	json_object_object_add(err, "code", json_object_new_string(code));
	json_object_object_add(obj, "error", err);
	http_json(r, status, obj);
	json_object_put(obj);
}

void
http_rerr(struct hreq *r, const struct rerr *e)
{
	http_error(r, e->status, e->code, e->message);
}

/* A request that could not be read (conn.c): answered, then closed. */
void
http_refused(struct hreq *r, int status, const char *message)
{
	static const char	*codes[][2] = {
		{ "400", "invalid_request" }, { "413", "body_too_large" },
		{ "431", "header_too_large" }, { "501", "not_implemented" },
		{ "505", "version_not_supported" } };
	const char		*code = "invalid_request";
	char			 s[8];
	size_t			 i;

	(void)snprintf(s, sizeof(s), "%d", status);
	for (i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		if (strcmp(codes[i][0], s) == 0)
			code = codes[i][1];
	r->keepalive = 0;
	http_error(r, status, code, message);
	http_log("-", "-", "-", status, 0, -1, -1);
	metrics_unrouted(status);
}

void
http_log(const char *method, const char *path, const char *model,
    int status, int64_t ms, int64_t ptok, int64_t ctok)
{
	if (ptok >= 0 && ctok >= 0)
		log_info("%s %s %s %d %lldms %lld->%lld tokens", method, path,
		    model, status, (long long)ms, (long long)ptok,
		    (long long)ctok);
	else
		log_info("%s %s %s %d %lldms", method, path, model, status,
		    (long long)ms);
}

void
http_init(void)
{
	conn_init();
}

/* New listeners first, then the old ones go; requests in progress stay. */
void
http_swap_listeners(struct pconf *old, struct pconf *new)
{
	struct plisten	*l;
	int		 flags;

	conn_configure(new);
	TAILQ_FOREACH(l, &new->listens, entry) {
		if ((flags = fcntl(l->fd, F_GETFL)) == -1 ||
		    fcntl(l->fd, F_SETFL, flags | O_NONBLOCK) == -1)
			fatal("%s: fcntl", __func__);
		if ((l->lsn = conn_listen(l->fd)) == NULL)
			fatalx("%s: cannot accept on %s port %u", __func__,
			    l->host, l->port);
		l->fd = -1;	/* the listener's now */
		log_debug("listening on %s port %u", l->host, l->port);
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

/*
 * What the front door does with a request, decided without touching the
 * request or the network, so that the fuzzer runs the very code that
 * serves (the checks in the order the design gives them: routes, admin
 * guards, body, model, rules).  cmd is an EVHTTP_REQ_* value; host and
 * ctype are the headers (NULL when absent); body is only read for POSTs.
 */
void
http_decide(const struct pconf *conf, int cmd, const char *path,
    const char *host, const char *ctype, const char *body, size_t len,
    struct http_decision *dc)
{
	json_object	*obj, *jm;
	struct pmodel	*m;
	int		 changed, scanned = 0;

	memset(dc, 0, sizeof(*dc));
	if (conf == NULL) {
		decide_error(dc, 503, "starting", "The proxy is starting.");
		return;
	}
	if (strcmp(path, "/health") == 0) {
		if (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD)
			decide_error(dc, 405, "method_not_allowed",
			    "Use GET.");
		else
			dc->action = HTTP_HEALTH;
		return;
	}
	if (strcmp(path, "/v1/models") == 0) {
		if (cmd != EVHTTP_REQ_GET)
			decide_error(dc, 405, "method_not_allowed",
			    "Use GET.");
		else
			dc->action = HTTP_MODELS;
		return;
	}
	if (strcmp(path, "/metrics") == 0) {
		if (admin_guard(conf, host, ctype, cmd, &dc->e) != 0)
			dc->action = HTTP_ERROR;
		else if (cmd != EVHTTP_REQ_GET)
			decide_error(dc, 405, "method_not_allowed",
			    "Use GET.");
		else
			dc->action = HTTP_METRICS;
		return;
	}
	if (strncmp(path, "/v1/agency/", 11) == 0) {
		if (admin_guard(conf, host, ctype, cmd, &dc->e) != 0) {
			dc->action = HTTP_ERROR;
			return;
		}
		if (strcmp(path, "/v1/agency/status") == 0 &&
		    cmd == EVHTTP_REQ_GET) {
			dc->action = HTTP_STATUS;
			return;
		}
		if (strcmp(path, "/v1/agency/cancel") != 0 ||
		    cmd != EVHTTP_REQ_POST) {
			decide_error(dc, 404, "not_found",
			    "No such admin route.");
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
		if ((m = pconf_find_model(conf, json_object_get_string(jm))) ==
		    NULL) {
			rerr_set(&dc->e, 404, "model_not_found",
			    "The model '%.100s' does not exist.",
			    json_object_get_string(jm));
			json_object_put(obj);
			dc->action = HTTP_ERROR;
			return;
		}
		json_object_put(obj);
		dc->action = HTTP_CANCEL;
		dc->model = m;
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
	/*
	 * The fast path (scan.c): a body that needs no tree for the rules
	 * to be applied is only scanned.  What it cannot settle, it leaves
	 * to json-c below, every error included.
	 */
	if (http_fastpath && rules_fast(body, len, &dc->scan)) {
		if (rules_pick_name(conf, dc->scan.has_model ?
		    dc->scan.model : NULL, &m, &dc->e) == -1) {
			dc->action = HTTP_ERROR;
			return;
		}
		if (rules_check_route(m, path, &dc->e) == -1) {
			dc->action = HTTP_ERROR;
			dc->model = m;
			return;
		}
		scanned = 1;
		if (rules_fast_ok(m->rt, &dc->scan)) {
			dc->action = HTTP_HOLD;
			dc->model = m;
			dc->plain = 1;
			dc->fast = 1;
			return;
		}
		memset(&dc->scan, 0, sizeof(dc->scan));
	}
	if ((obj = rules_parse(body, len, &dc->e)) == NULL) {
		dc->action = HTTP_ERROR;
		return;
	}
	if (rules_pick_model(conf, obj, &m, &dc->e) == -1) {
		json_object_put(obj);
		dc->action = HTTP_ERROR;
		return;
	}
	if (rules_check_route(m, path, &dc->e) == -1 ||
	    rules_apply(m->rt, obj, &dc->e, &changed) == -1) {
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

static void
decide_error(struct http_decision *dc, int status, const char *code,
    const char *message)
{
	dc->action = HTTP_ERROR;
	rerr_set(&dc->e, status, code, "%s", message);
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
 * absolute form what follows the authority.  Returns -1 if it has none
 * we serve.
 */
static int
target_path(const char *t, size_t len, char *path, size_t psize,
    char *origin, size_t osize)
{
	const char	*end = t + len, *p, *q;
	size_t		 skip = 0, n;

	if (len > 7 && strncasecmp(t, "http://", 7) == 0)
		skip = 7;
	else if (len > 8 && strncasecmp(t, "https://", 8) == 0)
		skip = 8;
	if (skip > 0) {
		for (p = t + skip; p < end && *p != '/' && *p != '?' &&
		    *p != '#'; p++)
			;
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

/* A complete request from conn.c: buf holds its body (len bytes),
 * which the request's handling may change. */
void
http_request(struct hreq *r, const struct h1_msg *m, char *body,
    size_t len)
{
	struct http_decision	 dc;
	char			 path[AGENCY_PATH_MAX], target[AGENCY_PATH_MAX];
	char			 host[256], ctype[256];
	const char		*method = "OTHER";
	int			 cmd = HTTP_REQ_UNKNOWN;
	json_object		*obj;
	int64_t			 t0 = now_ms();
	size_t			 i;

	for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
		if (strlen(methods[i].name) == m->methodlen &&
		    memcmp(methods[i].name, m->method, m->methodlen) == 0) {
			method = methods[i].name;
			cmd = methods[i].cmd;
			break;
		}
	if (m->targetlen >= sizeof(target) ||
	    target_path(m->target, m->targetlen, path, sizeof(path), target,
	    sizeof(target)) == -1) {
		http_error(r, m->targetlen >= sizeof(target) ? 414 : 400,
		    "invalid_request", m->targetlen >= sizeof(target) ?
		    "The request target is too long." :
		    "The request target is not a path.");
		http_log(method, "-", "-", m->targetlen >= sizeof(target) ?
		    414 : 400, now_ms() - t0, -1, -1);
		metrics_unrouted(m->targetlen >= sizeof(target) ? 414 : 400);
		return;
	}
	/*
	 * Two lengths mean two parties could read two different requests
	 * here (RFC 9112, 6.3): refuse it, even when they agree.
	 */
	if (m->ncontent_length > 1) {
		r->keepalive = 0;
		http_error(r, 400, "invalid_request",
		    "More than one Content-Length.");
		http_log(method, path, "-", 400, now_ms() - t0, -1, -1);
		metrics_unrouted(400);
		return;
	}
	if (cmd != EVHTTP_REQ_POST)
		len = 0;

	http_decide(px->conf, cmd, path, field(m, "Host", host, sizeof(host)),
	    field(m, "Content-Type", ctype, sizeof(ctype)), len > 0 ? body :
	    NULL, len, &dc);
	switch (dc.action) {
	case HTTP_HEALTH:
		obj = json_object_new_object();
		json_object_object_add(obj, "status",
		    json_object_new_string("ok"));
		http_json(r, 200, obj);
		json_object_put(obj);
		http_log(method, path, "-", 200, now_ms() - t0, -1, -1);
		break;
	case HTTP_MODELS:
		http_models(r);
		http_log(method, path, "-", 200, now_ms() - t0, -1, -1);
		break;
	case HTTP_STATUS:
		forward_status(r);
		break;
	case HTTP_METRICS:
		forward_metrics(r);
		break;
	case HTTP_CANCEL:
		http_cancel(r, dc.model);
		http_log(method, path, dc.model->name, 200, now_ms() - t0,
		    -1, -1);
		break;
	case HTTP_HOLD:
		/* takes body */
		forward_start(r, dc.model, dc.body, dc.fast ? &dc.scan : NULL,
		    dc.plain ? body : NULL, len, path, target, m);
		break;
	case HTTP_ERROR:
	default:
		http_rerr(r, &dc.e);
		http_log(method, path, "-", dc.e.status, now_ms() - t0,
		    -1, -1);
		if (dc.model != NULL)
			metrics_request(dc.model->name, dc.e.status, -1, -1);
		else
			metrics_unrouted(dc.e.status);
		break;
	}
}

static void
http_models(struct hreq *r)
{
	struct pmodel	*m;
	json_object	*obj, *data, *e;
	size_t		 i;

	obj = json_object_new_object();
	data = json_object_new_array();
	json_object_object_add(obj, "object", json_object_new_string("list"));
	TAILQ_FOREACH(m, &px->conf->models, entry) {
		for (i = 0; i <= m->aliases.n; i++) {
			e = json_object_new_object();
			json_object_object_add(e, "id", json_object_new_string(
			    i == 0 ? m->name : m->aliases.v[i - 1]));
			json_object_object_add(e, "object",
			    json_object_new_string("model"));
			json_object_object_add(e, "created",
			    json_object_new_int64(0));
			json_object_object_add(e, "owned_by",
			    json_object_new_string("agency"));
			if (i > 0)
				json_object_object_add(e, "alias_of",
				    json_object_new_string(m->name));
			json_object_array_add(data, e);
		}
	}
	json_object_object_add(obj, "data", data);
	http_json(r, 200, obj);
	json_object_put(obj);
}

/* Against DNS rebinding (admin routes and /metrics): a loopback Host
 * with one of our ports. */
static int
host_ok(const struct pconf *conf, const char *host)
{
	static const char	*names[] = { "127.0.0.1:", "[::1]:",
				    "localhost:", NULL };
	struct plisten		*l;
	const char		*p = NULL, *errstr;
	long long		 port;
	size_t			 i;

	if (host == NULL)
		return (0);
	for (i = 0; names[i] != NULL; i++)
		if (strncasecmp(host, names[i], strlen(names[i])) == 0) {
			p = host + strlen(names[i]);
			break;
		}
	if (p == NULL)
		return (0);
	port = strtonum(p, 1, 65535, &errstr);
	if (errstr != NULL)
		return (0);
	TAILQ_FOREACH(l, &conf->listens, entry)
		if (l->port == port)
			return (1);
	return (0);
}

static int
admin_guard(const struct pconf *conf, const char *host, const char *ct,
    int cmd, struct rerr *e)
{
	size_t	 n = strlen("application/json");

	if (!host_ok(conf, host)) {
		rerr_set(e, 403, "forbidden_host", "Admin routes need "
		    "a Host of 127.0.0.1, [::1] or localhost with the port.");
		return (403);
	}
	if (cmd == EVHTTP_REQ_POST) {
		if (ct == NULL || strncasecmp(ct, "application/json", n) != 0 ||
		    (ct[n] != '\0' && ct[n] != ';' && ct[n] != ' ')) {
			rerr_set(e, 415, "unsupported_media_type",
			    "Admin POSTs need Content-Type: application/json.");
			return (415);
		}
	}
	return (0);
}

/* The cancel of a model http_decide found: agencyd sends it. */
static void
http_cancel(struct hreq *r, struct pmodel *m)
{
	forward_cancel_ask(r, m->name);
}
