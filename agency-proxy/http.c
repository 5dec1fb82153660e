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

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <json-c/json.h>

#include "http_method.h"
#include "log.h"
#include "proxy.h"

static void	 http_cb(struct evhttp_request *, void *);
static void	 http_models(struct evhttp_request *);
static int	 admin_guard(const struct pconf *, const char *, const char *,
		    int, struct rerr *);
static void	 http_cancel(struct evhttp_request *, struct pmodel *);
static void	 decide_error(struct http_decision *, int, const char *,
		    const char *);

int64_t
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
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
	case 415:
		return ("Unsupported Media Type");
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

void
http_json(struct evhttp_request *req, int status, json_object *obj)
{
	struct evbuffer	*buf;
	const char	*s;

	s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	if ((buf = evbuffer_new()) == NULL)
		fatal("%s: evbuffer_new", __func__);
	evbuffer_add(buf, s, strlen(s));
	evbuffer_add(buf, "\n", 1);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	evhttp_send_reply(req, status, reason(status), buf);
	evbuffer_free(buf);
}

void
http_error(struct evhttp_request *req, int status, const char *code,
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
	http_json(req, status, obj);
	json_object_put(obj);
}

void
http_rerr(struct evhttp_request *req, const struct rerr *e)
{
	http_error(req, e->status, e->code, e->message);
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
	if ((px->http = evhttp_new(px->base)) == NULL)
		fatalx("%s: evhttp_new", __func__);
	evhttp_set_gencb(px->http, http_cb, NULL);
	evhttp_set_timeout(px->http, PROXY_IDLE_TIMEOUT);
	evhttp_set_max_headers_size(px->http, 64 * 1024);
	/*
	 * Every method reaches http_cb, even one libevent does not know
	 * (its bit 15), so that each gets an answer in the OpenAI error
	 * shape and a line in the access log rather than libevent's page.
	 */
	evhttp_set_allowed_methods(px->http, EVHTTP_REQ_GET |
	    EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
	    EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH |
	    EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT | HTTP_REQ_UNKNOWN);
	conn_init();
}

/* New listeners first, then the old ones go; requests in progress stay. */
void
http_swap_listeners(struct pconf *old, struct pconf *new)
{
	struct plisten	*l;
	int		 flags;

	evhttp_set_max_body_size(px->http, new->max_body);
	conn_configure(new);
	TAILQ_FOREACH(l, &new->listens, entry) {
		if ((flags = fcntl(l->fd, F_GETFL)) == -1 ||
		    fcntl(l->fd, F_SETFL, flags | O_NONBLOCK) == -1)
			fatal("%s: fcntl", __func__);
		if ((l->bound = evhttp_accept_socket_with_handle(px->http,
		    l->fd)) == NULL)
			fatalx("%s: cannot accept on %s port %u", __func__,
			    l->host, l->port);
		l->fd = -1;	/* the listener's now */
		conn_listening(l->bound);
		log_debug("listening on %s port %u", l->host, l->port);
	}
	if (old == NULL)
		return;
	TAILQ_FOREACH(l, &old->listens, entry) {
		if (l->bound != NULL)
			evhttp_del_accept_socket(px->http, l->bound);
		else if (l->fd != -1)
			close(l->fd);
		l->bound = NULL;
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
	    rules_apply(m->rt, obj, &dc->e) == -1) {
		json_object_put(obj);
		dc->action = HTTP_ERROR;
		dc->model = m;		/* refused for this model */
		return;
	}
	dc->action = HTTP_HOLD;
	dc->model = m;
	dc->body = obj;
}

static void
decide_error(struct http_decision *dc, int status, const char *code,
    const char *message)
{
	dc->action = HTTP_ERROR;
	rerr_set(&dc->e, status, code, "%s", message);
}

static int
content_lengths(struct evkeyvalq *h)
{
	struct evkeyval	*kv;
	int		 n = 0;

	TAILQ_FOREACH(kv, h, next)
		if (strcasecmp(kv->key, "Content-Length") == 0)
			n++;
	return (n);
}

static void
http_cb(struct evhttp_request *req, void *arg)
{
	const struct evhttp_uri	*uri;
	struct evkeyvalq	*h = evhttp_request_get_input_headers(req);
	struct evbuffer		*in = evhttp_request_get_input_buffer(req);
	struct http_decision	 dc;
	const char		*path, *method, *body = NULL;
	enum evhttp_cmd_type	 cmd;
	json_object		*obj;
	int64_t			 t0 = now_ms();
	size_t			 len = 0;

	(void)arg;
	conn_request(req);
	method = http_method_name(req);
	cmd = evhttp_request_get_command(req);
	uri = evhttp_request_get_evhttp_uri(req);
	if (uri == NULL || (path = evhttp_uri_get_path(uri)) == NULL ||
	    *path == '\0')
		path = "/";
	/*
	 * Two lengths that disagree mean two parties could read two
	 * different requests here (RFC 9112, 6.3): refuse it.
	 */
	if (content_lengths(h) > 1) {
		http_error(req, 400, "invalid_request",
		    "More than one Content-Length.");
		http_log(method, path, "-", 400, now_ms() - t0, -1, -1);
		metrics_unrouted(400);
		return;
	}
	if (cmd == EVHTTP_REQ_POST && (len = evbuffer_get_length(in)) > 0 &&
	    (body = (const char *)evbuffer_pullup(in, -1)) == NULL) {
		http_error(req, 500, "internal_error", "Out of memory.");
		http_log(method, path, "-", 500, now_ms() - t0, -1, -1);
		metrics_unrouted(500);
		return;
	}

	http_decide(px->conf, cmd, path, evhttp_find_header(h, "Host"),
	    evhttp_find_header(h, "Content-Type"), body, len, &dc);
	switch (dc.action) {
	case HTTP_HEALTH:
		obj = json_object_new_object();
		json_object_object_add(obj, "status",
		    json_object_new_string("ok"));
		http_json(req, 200, obj);
		json_object_put(obj);
		http_log(method, path, "-", 200, now_ms() - t0, -1, -1);
		break;
	case HTTP_MODELS:
		http_models(req);
		http_log(method, path, "-", 200, now_ms() - t0, -1, -1);
		break;
	case HTTP_STATUS:
		forward_status(req);
		break;
	case HTTP_METRICS:
		forward_metrics(req);
		break;
	case HTTP_CANCEL:
		http_cancel(req, dc.model);
		http_log(method, path, dc.model->name, 200, now_ms() - t0,
		    -1, -1);
		break;
	case HTTP_HOLD:
		forward_start(req, dc.model, dc.body, path);	/* takes body */
		break;
	case HTTP_ERROR:
	default:
		http_rerr(req, &dc.e);
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
http_models(struct evhttp_request *req)
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
	http_json(req, 200, obj);
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

/* The cancel of a model http_decide found. */
static void
http_cancel(struct evhttp_request *req, struct pmodel *m)
{
	struct proto_cancel	 pc;
	json_object		*obj;

	memset(&pc, 0, sizeof(pc));
	(void)strlcpy(pc.model, m->name, sizeof(pc.model));
	pc.cancelled = forward_cancel(m->name);
	parent_send(IMSG_CANCEL_DONE, &pc, sizeof(pc));

	obj = json_object_new_object();
	json_object_object_add(obj, "cancelled",
	    json_object_new_int64(pc.cancelled));
	http_json(req, 200, obj);
	json_object_put(obj);
}
