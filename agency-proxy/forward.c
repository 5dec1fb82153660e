/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Model requests (struct preq), from http.c's decision to their end: a
 * slot of its key for a key with "max requests" (keyq.c), the hold the
 * parent grants or refuses, the body as the grant makes it (the model's
 * upstream name and the cap: spliced on the fast path's pieces, in the
 * tree, or in a form), then the request to the model's server
 * (upstream.c), whose answer goes straight to the client's side
 * (relay.c); and the end, whichever way it comes: the hold released
 * exactly once, the log line and the counts.
 *
 * The client's connection (conn.c) tells the request when the client
 * goes (client_gone): a request not yet held is withdrawn; one held is
 * ended, or drained to its end when its runtime does not stop on close,
 * so that its model is not counted idle while it still generates.  With
 * keys in the configuration, the client's credentials (Authorization,
 * x-api-key) never go on to the model.
 *
 * Calls: relay.c, upstream.c, answer.c, metrics.c, conn.c, parent.c,
 * access.c, keyq.c, splice.c, rules.c, multipart.c, h1.c, state.c,
 * common/log.c.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/tree.h>
#include <sys/uio.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include <json-c/json.h>

#include "h1.h"
#include "log.h"
#include "proxy.h"
#include "routes.h"

/* libbsd's <sys/tree.h> marks its static functions so; glibc has none */
#ifndef __unused
#define __unused	__attribute__((__unused__))
#endif

#define PREQ_HDRS		512	/* inline pass-through headers */

enum preq_state {
	ST_HOLD,		/* waiting for the parent's answer */
	ST_FORWARD,		/* held, upstream request in progress */
	ST_DRAIN,		/* held, client gone, upstream runs out */
	ST_KEYWAIT,		/* waiting for a slot of its key */
};

struct preq {
	RB_ENTRY(preq)		 node;
	TAILQ_ENTRY(preq)	 entry;
	uint64_t		 reqid;
	enum preq_state		 state;
	struct relay		 rl;		/* the client's side */
	char			 method[16];
	char			 path[256];
	char			 uri[AGENCY_PATH_MAX];
	char			 model[AGENCY_NAME_MAX];
	char			 key[AGENCY_NAME_MAX];	/* its key's; "" */
	char			 user[AGENCY_NAME_MAX];	/* a socket's user */
	char			 who[2 * AGENCY_NAME_MAX + 16];	/* the log's */
	int			 keyslot;	/* holds a slot of its key */
	int64_t			 t0;
	int			 stops;
	int			 kindof;	/* enum model_kind */
	const struct route	*route;
	int64_t			 cap;
	json_object		*json;		/* the tree, if not fast */
	char			*raw;		/* the body's bytes, if kept */
	size_t			 rawlen;
	char			*rawmem;	/* what raw is in, to free */
	struct splice		*sp;		/* fast: the pieces of raw */
	int			 spliced;	/* send sp's pieces, not raw */
	int			 form;		/* a form, read into: */
	struct mform		 mf;
	char			 boundary[MULTIPART_BOUNDARY_MAX + 1];
	char			 upstream[AGENCY_PATH_MAX];	/* granted */
	/* a model field put first in a form that has none */
	char			 formhead[MULTIPART_BOUNDARY_MAX +
				    AGENCY_PATH_MAX + 80];
	int			 pass;		/* /upstream/MODEL/... */
	char			 prefix[AGENCY_PATH_MAX]; /* /upstream/MODEL */
	int			 held;
	uint64_t		 holdid;
	uint16_t		 port;
	char			 sock[PROTO_SOCK_MAX];	/* "": the port */
	char			 label[AGENCY_PATH_MAX];
	char			 hbuf[PREQ_HDRS];	/* kept headers */
	char			*hdrs;		/* hbuf, or allocated */
	size_t			 hdrslen;
	int			 has_ctype;
	struct upconn		*uc;
	int			 retried;
	int			 end;		/* enum req_end: the first */
	struct event		 timer;		/* a key's queue timeout */
	int64_t			 wait_ms;	/* for the hold; -1: none */
	int			 progress;	/* asked to be told its waits */
	int64_t			 keywait;	/* ms a slot of its key is
						 * waited for */
	struct pview		 view;		/* the models its answers
						 * may name */
};
RB_HEAD(preqtree, preq);
TAILQ_HEAD(preqs, preq);

static int	 preq_cmp(struct preq *, struct preq *);
RB_PROTOTYPE_STATIC(preqtree, preq, node, preq_cmp);
RB_GENERATE_STATIC(preqtree, preq, node, preq_cmp);

static struct preqtree	 tree = RB_INITIALIZER(&tree);
static struct preqs	 preqs = TAILQ_HEAD_INITIALIZER(preqs);

static void		 preq_end(struct preq *);
static void		 release(struct preq *);
static void		 ended(struct preq *, int);
static void		 body_drop(struct preq *);
static void		 client_gone(void *);
static void		 client_drained(void *);
static void		 forward_send(struct preq *);
static void		 key_timeout(evutil_socket_t, short, void *);
static void		 hold_ask(struct preq *);
static void		 up_began(void *);
static void		 up_done(void *);
static void		 up_fail(void *, const char *, int);

/* What upstream.c tells a request's owner. */
static const struct upstream_owner	 owner = {
	.began = up_began,
	.done = up_done,
	.fail = up_fail,
};

static int
preq_cmp(struct preq *a, struct preq *b)
{
	return (a->reqid < b->reqid ? -1 : a->reqid > b->reqid);
}

/* A model request of the client's r, as dc decided it: its model, and
 * who it comes from. */
static struct preq *
preq_new(struct hreq *r, const struct http_decision *dc)
{
	struct preq	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return (NULL);
	p->reqid = ++px->seq;
	relay_init(&p->rl, r, p->reqid, dc->family);
	p->rl.model = p->model;
	p->rl.label = p->label;
	p->t0 = now_ms();
	p->wait_ms = -1;
	p->hdrs = p->hbuf;
	(void)strlcpy(p->method, "POST", sizeof(p->method));
	(void)strlcpy(p->path, dc->path, sizeof(p->path));
	(void)strlcpy(p->model, dc->model->name, sizeof(p->model));
	if (dc->acc.key != NULL)
		(void)strlcpy(p->key, dc->acc.key->name, sizeof(p->key));
	(void)strlcpy(p->user, dc->acc.user, sizeof(p->user));
	(void)strlcpy(p->who, dc->who, sizeof(p->who));
	p->kindof = dc->model->rt->kind;
	p->route = dc->route;
	if (evtimer_assign(&p->timer, px->base, key_timeout, p) == -1) {
		free(p);
		return (NULL);
	}
	access_view(&dc->acc, px->conf, &p->view);
	RB_INSERT(preqtree, &tree, p);
	TAILQ_INSERT_TAIL(&preqs, p, entry);
	return (p);
}

static struct preq *
preq_find(uint64_t reqid)
{
	struct preq	 key;

	key.reqid = reqid;
	return (RB_FIND(preqtree, &tree, &key));
}

/* How p ended, unless an earlier cause did (a client that left first
 * stays one that left, whatever becomes of the draining answer). */
static void
ended(struct preq *p, int end)
{
	if (p->end == END_DONE)
		p->end = end;
}

/* The end of every request: release, log, free.  Its key's slot goes
 * to the next of the key's requests. */
static void
preq_end(struct preq *p)
{
	struct preq	*next = NULL;

	if (p->keyslot)
		next = keyq_leave(p->key, p, 1);
	else if (p->state == ST_KEYWAIT)
		(void)keyq_leave(p->key, p, 0);
	release(p);
	if (p->uc != NULL) {
		upstream_close(p->uc);
		p->uc = NULL;
	}
	/* a client never left without an answer: its connection goes */
	relay_free(&p->rl);
	/* However far the answer went, its client never had it whole. */
	if (p->end == END_CLIENT_LEFT || p->end == END_CANCELLED)
		p->rl.status = 499;
	answer_log_end(p->method, p->path, p->model, p->rl.status,
	    now_ms() - p->t0, p->wait_ms, p->rl.ptok, p->rl.ctok, p->end,
	    p->who);
	metrics_request_end(p->model, p->key, p->user, p->rl.status, p->end,
	    p->rl.ptok, p->rl.ctok);
	RB_REMOVE(preqtree, &tree, p);
	TAILQ_REMOVE(&preqs, p, entry);
	evtimer_del(&p->timer);
	json_object_put(p->json);
	free(p->rawmem);
	free(p->sp);
	if (p->hdrs != p->hbuf)
		free(p->hdrs);
	access_view_clear(&p->view);
	free(p);
	if (next != NULL) {
		next->keyslot = 1;
		evtimer_del(&next->timer);
		hold_ask(next);
	}
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

/*
 * The request's body, no longer needed once it cannot be sent again:
 * the client left, or the answer began (no retry then).  Not while the
 * upstream connection still writes from it.
 */
static void
body_drop(struct preq *p)
{
	if (p->uc != NULL && upstream_sending(p->uc))
		return;
	json_object_put(p->json);
	p->json = NULL;
	free(p->rawmem);
	p->rawmem = p->raw = NULL;
	free(p->sp);
	p->sp = NULL;
}

/* The wait for its hold is over: for the access log and the metrics. */
static void
hold_waited(struct preq *p, int outcome, int reason)
{
	p->wait_ms = now_ms() - p->t0;
	if (p->wait_ms < 0)
		p->wait_ms = 0;
	metrics_wait(p->model, outcome, reason, p->wait_ms);
}

/* From conn.c: the client left (or its connection failed). */
static void
client_gone(void *arg)
{
	struct preq		*p = arg;
	struct proto_reqid	 pr;

	p->rl.r = NULL;
	p->rl.status = 499;
	ended(p, END_CLIENT_LEFT);

	switch (p->state) {
	case ST_KEYWAIT:
		preq_end(p);
		break;
	case ST_HOLD:
		memset(&pr, 0, sizeof(pr));
		pr.reqid = p->reqid;
		parent_send(IMSG_HOLD_WITHDRAW, &pr, sizeof(pr));
		hold_waited(p, MW_WITHDRAWN, 0);
		log_debug("request %llu: client left before its hold",
		    (unsigned long long)p->reqid);
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
		/* nothing is sent again now: the body is not kept */
		body_drop(p);
		if (p->uc != NULL)
			upstream_resume(p->uc);
		break;
	case ST_DRAIN:
	default:
		break;
	}
}

/* From conn.c: what the client was slow to take is out. */
static void
client_drained(void *arg)
{
	struct preq	*p = arg;

	if (p->uc != NULL)
		upstream_resume(p->uc);
}

/* A client's credential for the front door, never passed on when the
 * front door has keys. */
static int
is_credential(const char *key, size_t len)
{
	return ((len == 13 && strncasecmp(key, "Authorization", 13) == 0) ||
	    (len == 9 && strncasecmp(key, "X-Api-Key", 9) == 0));
}

/* Whether a request header of m goes on to the model: end-to-end (not
 * named by its Connection either), and with strip, no credential. */
static int
kept(const struct h1_msg *m, const struct h1_header *h, int strip)
{
	return (!h1_hop_in(m, h->name, h->namelen) &&
	    !(strip && is_credential(h->name, h->namelen)));
}

/* Keep the request's end-to-end headers for the upstream request; with
 * strip, not the credentials. */
static int
keep_headers(struct preq *p, const struct h1_msg *m, int strip)
{
	const struct h1_header	*h;
	size_t			 i, n = 0;
	char			*d;

	for (i = 0; i < m->nheaders; i++) {
		h = &m->headers[i];
		if (kept(m, h, strip))
			n += h->namelen + h->valuelen + 4;
	}
	if (n > sizeof(p->hbuf) && (p->hdrs = malloc(n)) == NULL) {
		p->hdrs = p->hbuf;
		return (-1);
	}
	d = p->hdrs;
	for (i = 0; i < m->nheaders; i++) {
		h = &m->headers[i];
		if (!kept(m, h, strip))
			continue;
		if (h->namelen == 12 &&
		    strncasecmp(h->name, "Content-Type", 12) == 0)
			p->has_ctype = 1;
		memcpy(d, h->name, h->namelen);
		d += h->namelen;
		*d++ = ':';
		*d++ = ' ';
		memcpy(d, h->value, h->valuelen);
		d += h->valuelen;
		*d++ = '\r';
		*d++ = '\n';
	}
	p->hdrslen = d - p->hdrs;
	return (0);
}

/* Ask the parent for a hold on the request's model. */
static void
hold_ask(struct preq *p)
{
	struct proto_hold_req	 hr;

	p->state = ST_HOLD;
	memset(&hr, 0, sizeof(hr));
	hr.reqid = p->reqid;
	(void)strlcpy(hr.model, p->model, sizeof(hr.model));
	hr.flags = p->progress ? PROTO_HOLD_PROGRESS : 0;
	(void)strlcpy(hr.key, p->key, sizeof(hr.key));
	parent_send(IMSG_HOLD_REQ, &hr, sizeof(hr));
}

/* A slot of its key, or a wait for one of at most the queue timeout;
 * 0, or -1 when the request ended. */
static int
key_slot(struct preq *p, int64_t max)
{
	struct timeval	 tv;
	int64_t		 ms = p->keywait = px->conf->queue_timeout;

	switch (keyq_enter(p->key, max, p)) {
	case 1:
		p->keyslot = 1;
		return (0);
	case 0:
		p->state = ST_KEYWAIT;
		tv.tv_sec = ms / 1000;
		tv.tv_usec = (ms % 1000) * 1000;
		evtimer_add(&p->timer, &tv);
		return (0);
	default:
		relay_error(&p->rl, 500, "internal_error", "Out of memory.",
		    0);
		preq_end(p);
		return (-1);
	}
}

/*
 * Set up the hold of a request and ask for it; 0, or -1 when it ended.
 * The request owns its client's connection from now on, and its bytes
 * (raw), when they may go on as they are or as pieces (sp, the splice
 * of a fast-path body), are taken from the connection where they can
 * be, else copied.  A request of a key with max requests asks only once
 * it has a slot of its key (key_slot).
 */
static int
hold_setup(struct preq *p, const struct http_decision *dc, char *raw,
    size_t rawlen, const struct splice *sp)
{
	const struct pkey	*key = dc->acc.key;
	struct hconn		*conn = p->rl.r->conn;

	p->state = ST_HOLD;
	if ((sp != NULL && (p->sp = malloc(sizeof(*sp))) == NULL) ||
	    keep_headers(p, dc->hm, !TAILQ_EMPTY(&px->conf->keys)) == -1)
		goto nomem;
	if (sp != NULL)
		memcpy(p->sp, sp, sizeof(*sp));
	conn_set_owner(conn, client_gone, client_drained, p);
	if (raw != NULL) {
		if ((p->rawmem = conn_take_input(conn)) != NULL)
			p->raw = raw;
		else if ((p->rawmem = p->raw = malloc(rawlen > 0 ? rawlen :
		    1)) == NULL)
			goto nomem;
		else
			memcpy(p->raw, raw, rawlen);
		p->rawlen = rawlen;
	}
	if (key != NULL && key->max_requests > 0) {
		if (key_slot(p, key->max_requests) == -1)
			return (-1);
		if (p->state == ST_KEYWAIT)
			return (0);
	}
	hold_ask(p);
	return (0);

 nomem:
	relay_error(&p->rl, 500, "internal_error", "Out of memory.", 0);
	preq_end(p);
	return (-1);
}

/*
 * A model request that the rules took (dc): its tree (dc->body, which it
 * takes), or for the fast path the splice of its bytes, or a form; and
 * its bytes, when they may go on as they are or as pieces.
 */
void
forward_start(struct hreq *r, struct http_decision *dc)
{
	const struct pruntime	*rt = dc->model->rt;
	struct preq		*p;

	if ((p = preq_new(r, dc)) == NULL) {
		json_object_put(dc->body);
		dc->body = NULL;
		answer_error_as(r, dc->family, 500, "internal_error",
		    "Out of memory.", 0);
		return;
	}
	(void)strlcpy(p->uri, dc->target, sizeof(p->uri)); /* http.c sized it */
	p->json = dc->body;
	dc->body = NULL;
	if (dc->form) {
		p->form = 1;
		p->mf = dc->mf;
		(void)strlcpy(p->boundary, dc->boundary, sizeof(p->boundary));
	}
	p->stops = rules_stops_stream(rt, dc->stream);
	/* its comment lines: only where a stream is awaited */
	if (rt->progress && dc->stream && relay_progress(&p->rl) == 0)
		p->progress = 1;
	/* none on a route without the fields, which the splice would add */
	p->cap = dc->route->cap[0] != NULL ? rules_cap(dc->model) : 0;
	(void)hold_setup(p, dc, dc->plain || dc->fast ? dc->raw : NULL,
	    dc->rawlen, dc->fast ? &dc->splice : NULL);
}

/* Whether a passed-through body asks for a stream, if it is JSON. */
static int
pass_stream(const char *body, size_t len)
{
	struct rscan	 rs;
	struct rerr	 e;
	json_object	*obj;
	int		 stream;

	if (len == 0)
		return (0);
	if (rules_fast(body, len, NULL, PARTS_NONE, &rs))
		return (rs.stream);
	if ((obj = rules_parse(body, len, &e)) == NULL)
		return (0);
	stream = rules_stream(obj);
	json_object_put(obj);
	return (stream);
}

/*
 * /upstream/MODEL/... (dc->prefix long): the method, the rest of the
 * target and the body go to the model's server as they came, with a
 * hold for the request's length.
 */
void
forward_pass(struct hreq *r, struct http_decision *dc)
{
	struct preq	*p;

	if ((p = preq_new(r, dc)) == NULL) {
		answer_error(r, 500, "internal_error", "Out of memory.");
		return;
	}
	p->pass = 1;
	(void)strlcpy(p->method, dc->method, sizeof(p->method));
	p->rl.head = strcmp(dc->method, "HEAD") == 0;
	(void)strlcpy(p->uri, dc->target + dc->prefix, sizeof(p->uri));
	(void)snprintf(p->prefix, sizeof(p->prefix), "%.*s", (int)dc->prefix,
	    dc->path);
	p->rl.prefix = p->prefix;
	p->stops = rules_stops_stream(dc->model->rt, pass_stream(dc->raw,
	    dc->rawlen));
	(void)hold_setup(p, dc, dc->raw, dc->rawlen, NULL);
}

/*
 * A fast-path body at its grant: the model name sent upstream and the
 * cap, on its pieces; sent as it came if neither they nor the rules
 * changed it.  When the pieces have no room for the name (a long one,
 * escaped), the body as the rules left it is parsed after all, and goes
 * the tree's way.  Returns 0 if the request ended.
 */
static int
fast_rewrite(struct preq *p, const char *upstream)
{
	struct iovec	 iov[SPLICE_PIECES];
	struct rerr	 e;
	size_t		 n, i, len, off;
	char		*b;
	int		 c;

	if ((c = splice_rewrite(p->sp, p->raw, upstream, p->cap,
	    p->kindof, p->route)) != -1) {
		p->spliced = c == 1 || p->sp->changed;
		return (1);
	}
	n = splice_iov(p->sp, p->raw, iov, SPLICE_PIECES, &len);
	if ((b = malloc(len)) == NULL) {
		relay_error(&p->rl, 500, "internal_error", "Out of memory.",
		    0);
		preq_end(p);
		return (0);
	}
	for (i = 0, off = 0; i < n; off += iov[i++].iov_len)
		memcpy(b + off, iov[i].iov_base, iov[i].iov_len);
	p->json = rules_parse(b, len, &e);
	free(b);
	if (p->json == NULL) {
		/* the scan took what json-c refuses: never, by the fuzzer */
		log_warnx("request %llu: %s", (unsigned long long)p->reqid,
		    e.message);
		relay_error(&p->rl, 500, "internal_error", e.message, 0);
		preq_end(p);
		return (0);
	}
	(void)rules_rewrite(p->json, upstream, p->cap, p->kindof, p->path);
	free(p->rawmem);
	p->rawmem = p->raw = NULL;
	free(p->sp);
	p->sp = NULL;
	return (1);
}

void
forward_grant(const struct proto_hold_grant *g)
{
	struct proto_holdid	 ph;
	struct preq		*p;

	p = preq_find(g->reqid);
	if (p == NULL || p->state != ST_HOLD || p->rl.r == NULL) {
		/* withdrawn, or never ours: give it straight back */
		memset(&ph, 0, sizeof(ph));
		ph.holdid = g->holdid;
		parent_send(IMSG_HOLD_RELEASE, &ph, sizeof(ph));
		return;
	}
	p->held = 1;
	p->holdid = g->holdid;
	p->port = g->port;
	(void)strlcpy(p->sock, g->sock, sizeof(p->sock));
	relay_granted(&p->rl, g->port);
	hold_waited(p, MW_GRANTED, 0);
	(void)strlcpy(p->label, g->label, sizeof(p->label));
	(void)strlcpy(p->upstream, g->upstream, sizeof(p->upstream));
	if (p->sp != NULL) {
		if (!fast_rewrite(p, g->upstream))
			return;
	} else if (p->json != NULL &&
	    rules_rewrite(p->json, g->upstream, p->cap, p->kindof, p->path)) {
		free(p->rawmem);
		p->rawmem = p->raw = NULL;
	}
	p->state = ST_FORWARD;
	forward_send(p);
}

void
forward_refuse(const struct proto_hold_refuse *r)
{
	struct preq	*p;
	int		 status;
	const char	*code;
	char		 msg[PROTO_MSG_MAX];

	if ((p = preq_find(r->reqid)) == NULL || p->state != ST_HOLD)
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
	case REFUSE_QUEUE_FULL:
		status = 503;
		code = "queue_full";
		break;
	case REFUSE_QUEUE_TIMEOUT:
		status = 503;
		code = "queue_timeout";
		break;
	case REFUSE_MODEL_BUSY:
		status = 429;		/* its own queue: this model, later */
		code = "queue_full";
		break;
	case REFUSE_UNKNOWN_MODEL:
	default:
		status = 404;
		code = "model_not_found";
		break;
	}
	hold_waited(p, MW_REFUSED, r->reason);
	/* a key limited to some models learns nothing of the others */
	access_view_refusal(&p->view, r->reason, p->model, r->message, msg,
	    sizeof(msg));
	relay_error(&p->rl, status, code, msg, r->retry_after);
	preq_end(p);
}

/* The parent tells what a request that asked waits for. */
void
forward_wait(const struct proto_hold_wait *w)
{
	struct preq	*p;

	if ((p = preq_find(w->reqid)) == NULL || p->state != ST_HOLD ||
	    !p->progress || p->rl.r == NULL)
		return;
	relay_told(&p->rl, w);
}

/*
 * The body as it goes to the model, into iov: the splice's pieces, the
 * bytes as they came, or json-c's text of the tree; a form with its
 * model's value made the grant's, by the rule of a JSON body's.  The
 * number of pieces, or -1 when the request ended.
 */
static int
body_pieces(struct preq *p, struct iovec *iov)
{
	struct mpiece	 v[MULTIPART_PIECES];
	const char	*s;
	size_t		 i, n, len;

	if (p->spliced)
		return ((int)splice_iov(p->sp, p->raw, iov, UPSTREAM_PIECES,
		    &len));
	if (p->form && p->upstream[0] != '\0' && (!p->mf.has_model ||
	    p->mf.model_len != strlen(p->upstream) ||
	    memcmp(p->raw + p->mf.model_off, p->upstream,
	    p->mf.model_len) != 0)) {
		if ((n = multipart_splice(p->raw, p->rawlen, &p->mf,
		    p->boundary, p->upstream, p->formhead, sizeof(p->formhead),
		    v)) == 0) {
			relay_error(&p->rl, 500, "internal_error",
			    "The model's upstream name cannot be a form's "
			    "value.", 0);
			preq_end(p);
			return (-1);
		}
		for (i = 0; i < n; i++) {
			iov[i].iov_base = (void *)(uintptr_t)v[i].p;
			iov[i].iov_len = v[i].len;
		}
		return ((int)n);
	}
	if (p->raw != NULL || p->json == NULL) {
		iov[0].iov_base = p->raw;
		iov[0].iov_len = p->rawlen;
	} else {
		s = json_object_to_json_string_ext(p->json,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		iov[0].iov_base = (void *)(uintptr_t)s;
		iov[0].iov_len = strlen(s);
	}
	return (1);
}

/* The upstream failed the request before its end (UPSTREAM_* says how,
 * what says why): once more on a new connection, or a 502 (504 for a
 * timeout), or a cut when its answer had begun. */
static void
upstream_lost(struct preq *p, const char *what, int how)
{
	char	 msg[PROTO_MSG_MAX];

	p->uc = NULL;
	/*
	 * A kept connection the model server closed as we sent: it never
	 * read the request.  Once more, on a new connection; the other
	 * kept ones to that port are as old, so they go too.
	 */
	if (how == UPSTREAM_STALE && !p->retried && p->rl.r != NULL &&
	    p->state == ST_FORWARD) {
		p->retried = 1;
		upstream_drop(p->port, p->sock);
		log_debug("request %llu: kept connection to port %u was "
		    "closed; once more", (unsigned long long)p->reqid,
		    p->port);
		forward_send(p);
		return;
	}
	if (how == UPSTREAM_TIMEOUT)
		log_warnx("request %llu: %s did not answer in time",
		    (unsigned long long)p->reqid, p->label);
	if (p->sock[0] != '\0')
		(void)snprintf(msg, sizeof(msg), "%.300s: %s (its socket)",
		    p->label, what);
	else
		(void)snprintf(msg, sizeof(msg), "%.300s: %s (127.0.0.1:%u)",
		    p->label, what, p->port);
	if (how != UPSTREAM_TIMEOUT)
		log_warnx("request %llu: %s", (unsigned long long)p->reqid,
		    msg);
	if (p->rl.replied && !p->rl.waited) {
		ended(p, END_CUT);
		relay_cut(&p->rl);
	} else if (how == UPSTREAM_TIMEOUT) {
		(void)snprintf(msg, sizeof(msg), "%.300s: no answer in time",
		    p->label);
		relay_error(&p->rl, 504, "timeout", msg, 0);
	} else
		relay_error(&p->rl, 502, "upstream_error", msg, 0);
	preq_end(p);
}

/*
 * The held request to its model's server, on a kept connection or a
 * new one: the method and target, the client's end-to-end fields, the
 * body (a JSON Content-Type unless it came with one; passed through, a
 * length where there is a body, or may be one).  Its answer goes to
 * the client's side (relay.c), its end here.
 */
static void
forward_send(struct preq *p)
{
	struct iovec		 iov[UPSTREAM_PIECES];
	struct upstream_req	 rq;
	struct upconn		*uc;
	const char		*err = NULL;
	int			 n;

	if ((n = body_pieces(p, iov)) == -1)
		return;
	memset(&rq, 0, sizeof(rq));
	rq.method = p->method;
	rq.target = p->uri;
	rq.headers = p->hdrs;
	rq.headerslen = p->hdrslen;
	rq.json = !p->has_ctype && !p->pass;
	rq.length = !p->pass || strcmp(p->method, "POST") == 0 ||
	    strcmp(p->method, "PUT") == 0 || strcmp(p->method, "PATCH") == 0;
	rq.head = p->rl.head;
	rq.body = iov;
	rq.nbody = n;
	rq.sink = relay_answer;
	rq.sinkarg = &p->rl;
	rq.owner = &owner;
	rq.ownerarg = p;
	if ((uc = upstream_open(p->port, p->sock, &err)) == NULL) {
		upstream_lost(p, err, UPSTREAM_FAILED);
		return;
	}
	p->uc = uc;
	if (upstream_send(uc, &rq) == -1)
		return;		/* up_fail had it */
	log_debug("request %llu: %s %s to %s on port %u",
	    (unsigned long long)p->reqid, p->method, p->uri, p->label,
	    p->port);
}

/* From upstream.c: the request is out and its answer began. */
static void
up_began(void *arg)
{
	body_drop(arg);
}

/* From upstream.c: the answer is whole, and the client has its end. */
static void
up_done(void *arg)
{
	struct preq	*p = arg;

	p->uc = NULL;
	preq_end(p);
}

/* From upstream.c: the connection failed the request, and is gone. */
static void
up_fail(void *arg, const char *what, int how)
{
	struct preq	*p = arg;

	upstream_lost(p, p->rl.replied ? "connection closed mid-answer" :
	    what, how);
}

/* A request that waited its key's queue timeout for a slot: 429. */
static void
key_timeout(evutil_socket_t fd, short ev, void *arg)
{
	struct preq	*p = arg;
	char		 msg[PROTO_MSG_MAX];

	(void)fd;
	(void)ev;
	(void)snprintf(msg, sizeof(msg), "The key '%s' has as many requests "
	    "in progress as it may (max requests); this one waited %lld ms "
	    "for one of them to end.", p->key, (long long)p->keywait);
	relay_error(&p->rl, 429, "key_busy", msg, 1);
	p->wait_ms = now_ms() - p->t0;	/* for its key's slot */
	preq_end(p);
}

/* End every request for a model: 499, or a closed connection. */
uint32_t
forward_cancel(const char *model)
{
	struct preq		*p, *next;
	struct proto_reqid	 pr;
	uint32_t		 n = 0;

	for (p = TAILQ_FIRST(&preqs); p != NULL; p = next) {
		next = TAILQ_NEXT(p, entry);
		if (strcmp(p->model, model) != 0)
			continue;
		if (p->state == ST_HOLD) {
			memset(&pr, 0, sizeof(pr));
			pr.reqid = p->reqid;
			parent_send(IMSG_HOLD_WITHDRAW, &pr, sizeof(pr));
			hold_waited(p, MW_WITHDRAWN, 0);
		}
		ended(p, END_CANCELLED);
		if (p->rl.replied)
			relay_cancelled(&p->rl);
		else
			relay_error(&p->rl, 499, "cancelled",
			    "The request was cancelled.", 0);
		p->rl.status = 499;
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
