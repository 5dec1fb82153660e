/*
 * Model requests: ask the parent for a hold, forward to the model's port
 * over a pooled keep-alive connection, stream the answer back as it comes,
 * and release the hold exactly once, whichever way the request ends.
 * Also the requests that wait on the parent's status (admin status,
 * metrics).
 *
 * libevent frees a client's evhttp_request with its connection, so every
 * request lives in a struct preq of ours; the client's close callback
 * clears the pointer, and nothing touches the request after that.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <json-c/json.h>

#include "log.h"
#include "proxy.h"

enum preq_kind {
	PREQ_MODEL,
	PREQ_STATUS,
	PREQ_METRICS,
};

enum preq_state {
	ST_HOLD,		/* waiting for the parent's answer */
	ST_FORWARD,		/* held, upstream request in progress */
	ST_DRAIN,		/* held, client gone, upstream runs out */
};

struct upconn {
	TAILQ_ENTRY(upconn)		 entry;
	struct evhttp_connection	*evcon;
	uint16_t			 port;
};
TAILQ_HEAD(upconns, upconn);

struct preq {
	TAILQ_ENTRY(preq)		 entry;
	uint64_t			 reqid;
	enum preq_kind			 kind;
	enum preq_state			 state;
	struct evhttp_request		*req;	/* client's; NULL: gone */
	struct evhttp_connection	*cevcon;
	char				 method[8];
	char				 path[256];
	char				 uri[AGENCY_PATH_MAX];
	char				 model[AGENCY_NAME_MAX];
	int64_t				 t0;
	int				 stops;
	int				 kindof;	/* enum model_kind */
	int64_t				 cap;
	json_object			*json;
	int				 held;
	uint64_t			 holdid;
	uint16_t			 port;
	char				 label[AGENCY_PATH_MAX];
	struct upconn			*uc;
	struct evhttp_request		*ureq;
	int				 uerr;	/* enum evhttp_request_error */
	int				 replied;
	int				 status;
	int64_t				 ptok;
	int64_t				 ctok;
	char				 carry[128];
	size_t				 carrylen;
	struct event			 timer;	/* no malloc a request */
	json_object			*models;	/* status */
	struct proto_status		*sts;		/* metrics */
	size_t				 nsts;
};
TAILQ_HEAD(preqs, preq);

static struct preqs	 preqs = TAILQ_HEAD_INITIALIZER(preqs);
static struct upconns	 idle = TAILQ_HEAD_INITIALIZER(idle);

static const char	*hop_headers[] = { "Connection", "Keep-Alive",
			    "Proxy-Authenticate", "Proxy-Authorization",
			    "Proxy-Connection", "TE", "Trailer", "Trailers",
			    "Transfer-Encoding", "Upgrade", "Host",
			    "Content-Length", "Expect", NULL };

static struct preq	*preq_new(struct evhttp_request *, enum preq_kind,
			    const char *);
static struct preq	*preq_find(uint64_t);
static void		 preq_end(struct preq *);
static void		 release(struct preq *);
static void		 client_watch(struct preq *);
static void		 client_unwatch(struct preq *);
static void		 client_close(struct preq *);
static void		 client_closecb(struct evhttp_connection *, void *);
static void		 client_readcb(struct bufferevent *, void *);
static void		 upstream_forward(struct preq *);
static void		 upstream_stop(struct preq *);
static int		 upstream_headercb(struct evhttp_request *, void *);
static void		 upstream_chunkcb(struct evhttp_request *, void *);
static void		 upstream_errorcb(enum evhttp_request_error, void *);
static void		 upstream_donecb(struct evhttp_request *, void *);
static void		 timer_arm(struct preq *);
static void		 timer_cb(evutil_socket_t, short, void *);
static void		 usage_scan(struct preq *, struct evbuffer *);
static void		 evcon_free_later(struct evhttp_connection *);

static int
is_hop(const char *key)
{
	size_t	 i;

	for (i = 0; hop_headers[i] != NULL; i++)
		if (strcasecmp(key, hop_headers[i]) == 0)
			return (1);
	return (0);
}

static struct preq *
preq_new(struct evhttp_request *req, enum preq_kind kind, const char *path)
{
	struct preq	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return (NULL);
	p->reqid = ++px->seq;
	p->kind = kind;
	p->req = req;
	p->cevcon = evhttp_request_get_connection(req);
	p->t0 = now_ms();
	p->ptok = p->ctok = -1;
	p->status = 0;
	(void)strlcpy(p->method, kind == PREQ_MODEL ? "POST" : "GET",
	    sizeof(p->method));
	(void)strlcpy(p->path, path, sizeof(p->path));
	(void)strlcpy(p->model, "-", sizeof(p->model));
	if (evtimer_assign(&p->timer, px->base, timer_cb, p) == -1) {
		free(p);
		return (NULL);
	}
	TAILQ_INSERT_TAIL(&preqs, p, entry);
	client_watch(p);
	return (p);
}

static struct preq *
preq_find(uint64_t reqid)
{
	struct preq	*p;

	TAILQ_FOREACH(p, &preqs, entry)
		if (p->reqid == reqid)
			return (p);
	return (NULL);
}

/* The end of every request: release, log, free. */
static void
preq_end(struct preq *p)
{
	release(p);
	if (p->ureq != NULL)
		upstream_stop(p);
	if (p->uc != NULL) {
		evcon_free_later(p->uc->evcon);
		free(p->uc);
		p->uc = NULL;
	}
	client_unwatch(p);
	if (p->kind == PREQ_MODEL || p->status != 0)
		http_log(p->method, p->path, p->model, p->status,
		    now_ms() - p->t0, p->ptok, p->ctok);
	if (p->kind == PREQ_MODEL)
		metrics_request(p->model, p->status, p->ptok, p->ctok);
	TAILQ_REMOVE(&preqs, p, entry);
	evtimer_del(&p->timer);
	json_object_put(p->json);
	json_object_put(p->models);
	free(p->sts);
	free(p);
}

static void
release(struct preq *p)
{
	struct proto_holdid	 ph;

	if (!p->held)
		return;
	p->held = 0;
	memset(&ph, 0, sizeof(ph));
	ph.holdid = p->holdid;
	parent_send(IMSG_HOLD_RELEASE, &ph, sizeof(ph));
}

/* Answer the client, unless it is gone; the request is over for it. */
static void
reply_error(struct preq *p, int status, const char *code, const char *msg)
{
	p->status = status;
	if (p->req == NULL)
		return;
	client_unwatch(p);
	http_error(p->req, status, code, msg);
	p->req = NULL;
}

/*
 * libevent stops reading a client once its request is in, and so would
 * not see it leave while we wait for a hold.  Read on with a callback of
 * ours that only looks for the end (a pipelining client is held off by
 * the watermark); no read timeout, as a load may take minutes.
 */
static void
client_watch(struct preq *p)
{
	struct bufferevent	*bev;
	bufferevent_data_cb	 wcb;
	bufferevent_event_cb	 ecb;
	void			*arg;
	struct timeval		 tv = { PROXY_IDLE_TIMEOUT, 0 };

	if (p->cevcon == NULL)
		return;
	conn_set_closecb(p->cevcon, client_closecb, p);
	bev = evhttp_connection_get_bufferevent(p->cevcon);
	bufferevent_getcb(bev, NULL, &wcb, &ecb, &arg);
	bufferevent_setcb(bev, client_readcb, wcb, ecb, arg);
	bufferevent_setwatermark(bev, EV_READ, 0, 4096);
	bufferevent_set_timeouts(bev, NULL, &tv);
	bufferevent_enable(bev, EV_READ);
}

static void
client_readcb(struct bufferevent *bev, void *arg)
{
	(void)bev;
	(void)arg;
}

static void
client_unwatch(struct preq *p)
{
	struct bufferevent	*bev;
	struct timeval		 tv = { PROXY_IDLE_TIMEOUT, 0 };

	if (p->req == NULL || p->cevcon == NULL)
		return;
	conn_set_closecb(p->cevcon, NULL, NULL);
	bev = evhttp_connection_get_bufferevent(p->cevcon);
	bufferevent_setwatermark(bev, EV_READ, 0, 0);
	bufferevent_set_timeouts(bev, &tv, &tv);
	p->cevcon = NULL;
}

/* End the client's connection mid-answer. */
static void
client_close(struct preq *p)
{
	struct evhttp_connection	*evcon = p->cevcon;

	if (p->req == NULL)
		return;
	conn_set_closecb(evcon, NULL, NULL);
	p->req = NULL;
	p->cevcon = NULL;
	evhttp_connection_free(evcon);
}

static void
client_closecb(struct evhttp_connection *evcon, void *arg)
{
	struct preq	*p = arg;

	(void)evcon;
	if (p->req != NULL &&
	    evhttp_request_get_connection(p->req) == NULL) {
		/* libevent let go of it on EOF: it is ours to free. */
		evhttp_request_free(p->req);
	}
	p->req = NULL;
	p->cevcon = NULL;
	if (p->status == 0)
		p->status = 499;

	switch (p->kind != PREQ_MODEL ? ST_HOLD : p->state) {
	case ST_HOLD:
		if (p->kind == PREQ_MODEL) {
			struct proto_reqid	 pr;

			memset(&pr, 0, sizeof(pr));
			pr.reqid = p->reqid;
			parent_send(IMSG_HOLD_WITHDRAW, &pr, sizeof(pr));
			log_debug("request %llu: client left before its hold",
			    (unsigned long long)p->reqid);
		}
		preq_end(p);
		break;
	case ST_FORWARD:
		if (p->stops) {
			preq_end(p);	/* closes upstream, releases */
			break;
		}
		log_debug("request %llu: client left, draining %s",
		    (unsigned long long)p->reqid, p->label);
		p->state = ST_DRAIN;
		break;
	case ST_DRAIN:
	default:
		break;
	}
}

void
forward_start(struct evhttp_request *req, const struct pmodel *m,
    json_object *body, const char *path)
{
	struct proto_hold_req	 hr;
	struct preq		*p;
	const char		*uri;

	if ((p = preq_new(req, PREQ_MODEL, path)) == NULL) {
		json_object_put(body);
		http_error(req, 500, "internal_error", "Out of memory.");
		return;
	}
	uri = evhttp_request_get_uri(req);
	if (strlcpy(p->uri, uri, sizeof(p->uri)) >= sizeof(p->uri))
		(void)strlcpy(p->uri, path, sizeof(p->uri));
	(void)strlcpy(p->model, m->name, sizeof(p->model));
	p->json = body;
	p->stops = rules_stops(m->rt, body);
	p->kindof = m->rt->kind;
	p->cap = rules_cap(m);
	p->state = ST_HOLD;

	memset(&hr, 0, sizeof(hr));
	hr.reqid = p->reqid;
	(void)strlcpy(hr.model, m->name, sizeof(hr.model));
	parent_send(IMSG_HOLD_REQ, &hr, sizeof(hr));
}

void
forward_grant(const struct proto_hold_grant *g)
{
	struct proto_holdid	 ph;
	struct preq		*p;

	p = preq_find(g->reqid);
	if (p == NULL || p->kind != PREQ_MODEL || p->state != ST_HOLD ||
	    p->req == NULL) {
		/* withdrawn, or never ours: give it straight back */
		memset(&ph, 0, sizeof(ph));
		ph.holdid = g->holdid;
		parent_send(IMSG_HOLD_RELEASE, &ph, sizeof(ph));
		return;
	}
	p->held = 1;
	p->holdid = g->holdid;
	p->port = g->port;
	(void)strlcpy(p->label, g->label, sizeof(p->label));
	rules_rewrite(p->json, g->upstream, p->cap, p->kindof);
	p->state = ST_FORWARD;
	upstream_forward(p);
}

void
forward_refuse(const struct proto_hold_refuse *r)
{
	struct preq	*p;
	int		 status;
	const char	*code;

	if ((p = preq_find(r->reqid)) == NULL || p->kind != PREQ_MODEL ||
	    p->state != ST_HOLD)
		return;
	switch (r->reason) {
	case REFUSE_NOT_LOADED:
		status = 503;
		code = "not_loaded";
		break;
	case REFUSE_LOAD_FAILED:
		status = 502;
		code = "load_failed";
		break;
	case REFUSE_NOT_ENOUGH_MEMORY:
		status = 503;
		code = "not_enough_memory";
		break;
	case REFUSE_STOPPING:
		status = 503;
		code = "stopping";
		break;
	case REFUSE_UNKNOWN_MODEL:
	default:
		status = 404;
		code = "model_not_found";
		break;
	}
	reply_error(p, status, code, r->message);
	preq_end(p);
}

static struct upconn *
pool_get(uint16_t port, int64_t timeout_ms)
{
	struct upconn	*uc;
	struct timeval	 tv;

	TAILQ_FOREACH(uc, &idle, entry)
		if (uc->port == port) {
			TAILQ_REMOVE(&idle, uc, entry);
			return (uc);
		}
	if ((uc = calloc(1, sizeof(*uc))) == NULL)
		return (NULL);
	uc->port = port;
	if ((uc->evcon = evhttp_connection_base_new(px->base, NULL,
	    "127.0.0.1", port)) == NULL) {
		free(uc);
		return (NULL);
	}
	evhttp_connection_set_retries(uc->evcon, 0);
	/* our timer answers first; this only keeps libevent from its 50 s */
	timeout_ms += 1000;
	tv.tv_sec = timeout_ms / 1000;
	tv.tv_usec = (timeout_ms % 1000) * 1000;
	evhttp_connection_set_timeout_tv(uc->evcon, &tv);
	return (uc);
}

static void
pool_put(struct upconn *uc)
{
	struct upconn	*u;
	size_t		 n = 0;

	TAILQ_FOREACH(u, &idle, entry)
		if (u->port == uc->port)
			n++;
	if (n >= PROXY_POOL_MAX) {
		evcon_free_later(uc->evcon);
		free(uc);
		return;
	}
	TAILQ_INSERT_HEAD(&idle, uc, entry);
}

static void
evcon_free_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	evhttp_connection_free(arg);
}

/* Never inside the connection's own callbacks: on the next loop turn. */
static void
evcon_free_later(struct evhttp_connection *evcon)
{
	struct timeval	 tv = { 0, 0 };

	if (event_base_once(px->base, -1, EV_TIMEOUT, evcon_free_cb, evcon,
	    &tv) == -1)
		fatalx("%s: event_base_once", __func__);
}

static void
upstream_forward(struct preq *p)
{
	struct evkeyvalq	*in, *out;
	struct evkeyval		*h;
	const char		*s;
	char			 host[32];
	enum evhttp_cmd_type	 cmd;

	cmd = evhttp_request_get_command(p->req);
	if ((p->uc = pool_get(p->port, px->conf->request_timeout)) == NULL ||
	    (p->ureq = evhttp_request_new(upstream_donecb, p)) == NULL) {
		reply_error(p, 500, "internal_error", "Out of memory.");
		preq_end(p);
		return;
	}
	evhttp_request_set_header_cb(p->ureq, upstream_headercb);
	evhttp_request_set_chunked_cb(p->ureq, upstream_chunkcb);
	evhttp_request_set_error_cb(p->ureq, upstream_errorcb);

	in = evhttp_request_get_input_headers(p->req);
	out = evhttp_request_get_output_headers(p->ureq);
	TAILQ_FOREACH(h, in, next)
		if (!is_hop(h->key))
			evhttp_add_header(out, h->key, h->value);
	(void)snprintf(host, sizeof(host), "127.0.0.1:%u", p->port);
	evhttp_add_header(out, "Host", host);
	if (evhttp_find_header(out, "Content-Type") == NULL)
		evhttp_add_header(out, "Content-Type", "application/json");

	s = json_object_to_json_string_ext(p->json, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	evbuffer_add(evhttp_request_get_output_buffer(p->ureq), s, strlen(s));
	json_object_put(p->json);
	p->json = NULL;

	timer_arm(p);
	if (evhttp_make_request(p->uc->evcon, p->ureq, cmd, p->uri) == -1) {
		/* libevent keeps the request; do not touch it again */
		p->ureq = NULL;
		reply_error(p, 502, "upstream_error", "cannot start the "
		    "upstream request");
		preq_end(p);
		return;
	}
	log_debug("request %llu: %s %s to %s on port %u",
	    (unsigned long long)p->reqid, p->method, p->uri, p->label,
	    p->port);
}

/* Abandon the upstream request; its connection is not reused. */
static void
upstream_stop(struct preq *p)
{
	struct evhttp_request	*ureq = p->ureq;

	p->ureq = NULL;
	if (ureq != NULL)
		evhttp_cancel_request(ureq);	/* calls the error cb */
}

static int
upstream_headercb(struct evhttp_request *ureq, void *arg)
{
	struct preq		*p = arg;
	struct evkeyvalq	*in, *out;
	struct evkeyval		*h;
	const char		*cl;
	int			 code;

	code = evhttp_request_get_response_code(ureq);
	p->status = code;
	timer_arm(p);
	if (p->req == NULL)
		return (0);
	in = evhttp_request_get_input_headers(ureq);
	out = evhttp_request_get_output_headers(p->req);
	TAILQ_FOREACH(h, in, next)
		if (!is_hop(h->key) && strcasecmp(h->key, "Date") != 0)
			evhttp_add_header(out, h->key, h->value);
	/*
	 * The body is passed on as it is, so an answer of known length
	 * keeps it: no chunked framing around it, and the client knows
	 * the end without a last chunk.  Streams stay chunked.
	 */
	if (evhttp_find_header(in, "Transfer-Encoding") == NULL &&
	    (cl = evhttp_find_header(in, "Content-Length")) != NULL)
		evhttp_add_header(out, "Content-Length", cl);
	evhttp_send_reply_start(p->req, code,
	    evhttp_request_get_response_code_line(ureq));
	p->replied = 1;
	return (0);
}

static void
upstream_chunkcb(struct evhttp_request *ureq, void *arg)
{
	struct preq	*p = arg;
	struct evbuffer	*buf = evhttp_request_get_input_buffer(ureq);

	timer_arm(p);
	usage_scan(p, buf);
	if (p->req != NULL && p->replied)
		evhttp_send_reply_chunk(p->req, buf);
	else
		evbuffer_drain(buf, evbuffer_get_length(buf));
}

static void
upstream_errorcb(enum evhttp_request_error err, void *arg)
{
	struct preq	*p = arg;

	p->uerr = err;
}

static const char *
uerr_name(int err)
{
	switch (err) {
	case EVREQ_HTTP_TIMEOUT:
		return ("timed out");
	case EVREQ_HTTP_EOF:
		return ("connection closed");
	case EVREQ_HTTP_INVALID_HEADER:
		return ("invalid answer");
	case EVREQ_HTTP_BUFFER_ERROR:
		return ("connection failed");
	case EVREQ_HTTP_DATA_TOO_LONG:
		return ("answer too long");
	default:
		return ("connection refused");
	}
}

static void
upstream_donecb(struct evhttp_request *ureq, void *arg)
{
	struct preq	*p = arg;
	char		 msg[PROTO_MSG_MAX];
	int		 code;

	if (p->ureq == NULL)
		return;		/* stopped by us */
	p->ureq = NULL;
	code = ureq == NULL ? 0 : evhttp_request_get_response_code(ureq);
	if (code == 0) {
		(void)snprintf(msg, sizeof(msg), "%.300s: %s (127.0.0.1:%u)",
		    p->label, p->replied ? "connection closed mid-answer" :
		    uerr_name(p->uerr ? p->uerr : -1), p->port);
		log_warnx("request %llu: %s", (unsigned long long)p->reqid,
		    msg);
		if (p->replied)
			client_close(p);
		else
			reply_error(p, 502, "upstream_error", msg);
		if (!p->replied)
			p->status = 502;
		preq_end(p);	/* frees the connection */
		return;
	}

	/* A complete answer: the connection goes back to the pool. */
	if (p->req != NULL) {
		client_unwatch(p);
		if (p->replied)
			evhttp_send_reply_end(p->req);
		else
			evhttp_send_reply(p->req, code,
			    evhttp_request_get_response_code_line(ureq), NULL);
		p->req = NULL;
	}
	pool_put(p->uc);
	p->uc = NULL;
	preq_end(p);
}

static void
timer_arm(struct preq *p)
{
	struct timeval	 tv;
	int64_t		 ms = px->conf->request_timeout;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(&p->timer, &tv);
}

static void
timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct preq	*p = arg;

	(void)fd;
	(void)ev;
	log_warnx("request %llu: %s did not answer in time",
	    (unsigned long long)p->reqid, p->label);
	if (p->replied)
		client_close(p);
	else {
		char	 msg[PROTO_MSG_MAX];

		(void)snprintf(msg, sizeof(msg), "%.300s: no answer in time",
		    p->label);
		reply_error(p, 504, "timeout", msg);
	}
	preq_end(p);
}

/*
 * Token counts for the access log, from the answer's "usage" (the last
 * SSE chunk when streamed).  Cheap: only pieces that mention it are
 * looked at, with a little of the previous piece for a split name.
 */
static int64_t
find_count(const char *s, size_t len, const char *name)
{
	const char	*p, *end = s + len, *last = NULL;
	size_t		 n = strlen(name);
	int64_t		 v = 0;

	for (p = s; (p = memmem(p, end - p, name, n)) != NULL; p += n)
		last = p;
	if (last == NULL)
		return (-1);
	for (p = last + n; p < end && (*p == '"' || *p == ':' || *p == ' ');
	    p++)
		;
	if (p == end || *p < '0' || *p > '9')
		return (-1);
	for (; p < end && *p >= '0' && *p <= '9' && v < INT64_MAX / 10; p++)
		v = v * 10 + (*p - '0');
	return (v);
}

static void
usage_scan(struct preq *p, struct evbuffer *buf)
{
	struct evbuffer_ptr	 ptr;
	size_t			 len = evbuffer_get_length(buf), n;
	char			*tmp;
	int64_t			 v;

	if (len == 0)
		return;
	if (evbuffer_search(buf, "tokens", 6, NULL).pos != -1 ||
	    memmem(p->carry, p->carrylen, "usage", 5) != NULL) {
		if ((tmp = malloc(p->carrylen + len)) == NULL)
			return;
		memcpy(tmp, p->carry, p->carrylen);
		if (evbuffer_copyout(buf, tmp + p->carrylen, len) ==
		    (ev_ssize_t)len) {
			if ((v = find_count(tmp, p->carrylen + len,
			    "\"prompt_tokens\"")) >= 0)
				p->ptok = v;
			if ((v = find_count(tmp, p->carrylen + len,
			    "\"completion_tokens\"")) >= 0)
				p->ctok = v;
		}
		free(tmp);
	}
	n = len < sizeof(p->carry) ? len : sizeof(p->carry);
	p->carrylen = 0;
	if (evbuffer_ptr_set(buf, &ptr, len - n, EVBUFFER_PTR_SET) == 0 &&
	    evbuffer_copyout_from(buf, &ptr, p->carry, n) == (ev_ssize_t)n)
		p->carrylen = n;
}

void
forward_status(struct evhttp_request *req)
{
	struct proto_reqid	 pr;
	struct preq		*p;

	if ((p = preq_new(req, PREQ_STATUS, "/v1/agency/status")) == NULL) {
		http_error(req, 500, "internal_error", "Out of memory.");
		return;
	}
	p->models = json_object_new_array();
	memset(&pr, 0, sizeof(pr));
	pr.reqid = p->reqid;
	parent_send(IMSG_STATUS_REQ, &pr, sizeof(pr));
}

void
forward_metrics(struct evhttp_request *req)
{
	struct proto_reqid	 pr;
	struct preq		*p;

	if ((p = preq_new(req, PREQ_METRICS, "/metrics")) == NULL) {
		http_error(req, 500, "internal_error", "Out of memory.");
		return;
	}
	memset(&pr, 0, sizeof(pr));
	pr.reqid = p->reqid;
	parent_send(IMSG_STATUS_REQ, &pr, sizeof(pr));
}

static void
metrics_model(struct preq *p, const struct proto_status *st)
{
	struct proto_status	*n;

	if ((n = reallocarray(p->sts, p->nsts + 1, sizeof(*n))) == NULL)
		return;
	p->sts = n;
	p->sts[p->nsts++] = *st;
}

static void
metrics_end(struct preq *p)
{
	struct evbuffer	*buf;

	p->status = 200;
	if (p->req != NULL) {
		client_unwatch(p);
		if ((buf = evbuffer_new()) == NULL)
			fatal("%s: evbuffer_new", __func__);
		metrics_render(buf, p->sts, p->nsts);
		evhttp_add_header(evhttp_request_get_output_headers(p->req),
		    "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
		evhttp_send_reply(p->req, 200, "OK", buf);
		evbuffer_free(buf);
		p->req = NULL;
	}
	preq_end(p);
}

static json_object *
ms_or_null(int64_t v)
{
	return (v < 0 ? NULL : json_object_new_int64(v));
}

void
forward_status_model(const struct proto_status *st)
{
	struct preq	*p;
	json_object	*o;

	if ((p = preq_find(st->reqid)) == NULL || p->kind == PREQ_MODEL)
		return;
	if (p->kind == PREQ_METRICS) {
		metrics_model(p, st);
		return;
	}
	o = json_object_new_object();
	json_object_object_add(o, "model", json_object_new_string(st->model));
	json_object_object_add(o, "runtime",
	    json_object_new_string(st->runtime));
	json_object_object_add(o, "state",
	    json_object_new_string(proto_state_name_or(st->state)));
	json_object_object_add(o, "error", st->error[0] == '\0' ? NULL :
	    json_object_new_string(st->error));
	json_object_object_add(o, "requestsInProgress",
	    json_object_new_int64(st->in_progress));
	json_object_object_add(o, "lastUsedAt", ms_or_null(st->last_used));
	json_object_object_add(o, "lazy", json_object_new_boolean(st->lazy));
	json_object_object_add(o, "pid", st->pid > 0 ?
	    json_object_new_int64(st->pid) : NULL);
	json_object_object_add(o, "port", st->port > 0 ?
	    json_object_new_int64(st->port) : NULL);
	json_object_object_add(o, "need", json_object_new_int64(st->need));
	json_object_object_add(o, "requests",
	    json_object_new_int64((int64_t)st->requests));
	json_object_object_add(o, "loads",
	    json_object_new_int64((int64_t)st->loads));
	json_object_object_add(o, "restarts",
	    json_object_new_int64((int64_t)st->restarts));
	json_object_object_add(o, "loadedAt", ms_or_null(st->loaded_at));
	json_object_object_add(o, "evictions",
	    json_object_new_int64((int64_t)st->evictions));
	json_object_object_add(o, "loadFailures",
	    json_object_new_int64((int64_t)st->load_failures));
	json_object_array_add(p->models, o);
}

void
forward_status_end(uint64_t reqid)
{
	struct preq	*p;
	json_object	*obj;

	if ((p = preq_find(reqid)) == NULL || p->kind == PREQ_MODEL)
		return;
	if (p->kind == PREQ_METRICS) {
		metrics_end(p);
		return;
	}
	p->status = 200;
	if (p->req != NULL) {
		client_unwatch(p);
		obj = json_object_new_object();
		json_object_object_add(obj, "models",
		    json_object_get(p->models));
		http_json(p->req, 200, obj);
		json_object_put(obj);
		p->req = NULL;
	}
	preq_end(p);
}

/* End every request for a model: 499, or a closed connection. */
uint32_t
forward_cancel(const char *model)
{
	struct preq	*p, *next;
	uint32_t	 n = 0;

	for (p = TAILQ_FIRST(&preqs); p != NULL; p = next) {
		next = TAILQ_NEXT(p, entry);
		if (p->kind != PREQ_MODEL || strcmp(p->model, model) != 0)
			continue;
		if (p->state == ST_HOLD) {
			struct proto_reqid	 pr;

			memset(&pr, 0, sizeof(pr));
			pr.reqid = p->reqid;
			parent_send(IMSG_HOLD_WITHDRAW, &pr, sizeof(pr));
		}
		if (p->replied)
			client_close(p);
		else
			reply_error(p, 499, "cancelled",
			    "The request was cancelled.");
		p->status = 499;
		preq_end(p);
		n++;
	}
	if (n > 0)
		log_info("cancelled %u requests for %s", n, model);
	return (n);
}

/* The parent is gone: nothing can be released any more. */
void
forward_shutdown(void)
{
	struct preq	*p;

	TAILQ_FOREACH(p, &preqs, entry)
		p->held = 0;
}
