/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Model requests: ask the parent for a hold, forward to the model's port
 * over a pooled keep-alive connection, stream the answer back as it comes,
 * and release the hold exactly once, whichever way the request ends.
 * Also the requests that wait on the parent's status (admin status,
 * metrics).  Started by http.c; the parent's answers come through
 * dispatch.c (forward_grant, forward_refuse, forward_status_*).
 *
 * The upstream side is HTTP/1.1 of our own (h1.c parses the answers): a
 * request goes out in one write, its header and its body's bytes from
 * where they are (the client's as read, the pieces of a splice, or
 * json-c's text), never copied into one buffer; an upstream connection keeps its read
 * event added for its whole life, idle or not, so a closed idle
 * connection is seen and dropped, and a request costs no epoll_ctl.  The
 * answer is passed on piece by piece as it is read: header and body of
 * one read go to the client in one write.  An answer of known length
 * keeps its Content-Length; any other is sent chunked to an HTTP/1.1
 * client, and to an HTTP/1.0 client up to the close of its connection.
 *
 * A form (multipart.c) goes as its bytes with its model's value spliced
 * to the grant's name; a passed-through request (/upstream/MODEL/...)
 * goes with its own method, target and body, and the answer's Location
 * is put back under the prefix.
 *
 * A request lives in a struct preq.  Its client connection (conn.c)
 * tells it when the client goes (client_gone); from then on p->r is NULL
 * and the connection is never touched again.
 *
 * A request of a key with "max requests" waits for a slot of its key
 * (keyq.c) before it asks for a hold (ST_KEYWAIT), within the queue
 * timeout; at its end its slot goes to the next.  With keys in the
 * configuration, the client's credentials (Authorization, x-api-key)
 * never go on to the model; answers to a listed CORS origin carry its
 * fields, and those the model sent are dropped.
 *
 * Loading progress: a streamed request of a runtime with "loading
 * progress" asks the parent to be told what it waits for.  At the first
 * telling (forward_wait) it is answered with a header of our own (200,
 * text/event-stream) and a comment line, and another every second until
 * the model's first byte of body; from then on the model's stream is
 * passed on under that header.  Whatever fails after it (a refusal, an
 * upstream error or an answer that is no stream, a timeout, a cancel)
 * is the stream's last event, an error in the OpenAI shape.
 *
 * Calls: answer.c, metrics.c, conn.c, parent.c, access.c, keyq.c,
 * splice.c, rules.c, routes.c, multipart.c, h1.c, buf.c, state.c.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/tree.h>
#include <sys/uio.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

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

#define UP_READ			(64 * 1024)	/* the shared read buffer */
#define UP_HEADER_MAX		(64 * 1024)	/* an answer's header */
#define CLIENT_QUEUE_MAX	(1024 * 1024)	/* then stop reading upstream */
#define PREQ_HDRS		512		/* inline pass-through headers */
#define PROGRESS_TICK		1000		/* ms between comment lines */
#define WAITED_BODY_MAX		4096		/* kept of an answer that is
						 * no stream, after ours */

enum preq_state {
	ST_HOLD,		/* waiting for the parent's answer */
	ST_FORWARD,		/* held, upstream request in progress */
	ST_DRAIN,		/* held, client gone, upstream runs out */
	ST_KEYWAIT,		/* waiting for a slot of its key */
};

struct upconn {
	TAILQ_ENTRY(upconn)	 entry;		/* idle */
	int			 fd;
	uint16_t		 port;
	struct event		 rev;
	struct event		 wev;
	struct preq		*p;		/* NULL: idle */
	int			 connecting;
	int			 reused;	/* served an answer before */
	int			 paused;	/* rev deleted: client is slow */
	int			 inidle;	/* on the idle list */
	/* the request's unwritten part: the header's copied, the body's
	 * where it is (the request's, which outlives the writing) */
	struct iovec		 iov[SPLICE_PIECES + 1];
	int			 iovn;		/* 0: none */
	int			 iovi;		/* the next one */
	char			*out;		/* the header's */
	char			*in;		/* an answer's partial header */
	size_t			 inlen;
	/* the answer being read */
	int			 got;		/* any byte of it */
	int			 hdone;
	int64_t			 left;		/* of a known length */
	int			 chunked;
	struct h1_chunked	 ch;
	int			 toclose;	/* ends at EOF */
	int			 keepalive;
};
TAILQ_HEAD(upconns, upconn);

struct preq {
	RB_ENTRY(preq)		 node;
	TAILQ_ENTRY(preq)	 entry;
	uint64_t		 reqid;
	enum preq_state		 state;
	struct hreq		*r;		/* client's; NULL: gone */
	int			 minor;		/* the client's HTTP/1.x */
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
	int			 family;	/* enum route_family: errors */
	int			 form;		/* a multipart form, read into: */
	struct mform		 mf;
	char			 boundary[MULTIPART_BOUNDARY_MAX + 1];
	char			 upstream[AGENCY_PATH_MAX];	/* granted */
	/* a model field put first in a form that has none */
	char			 formhead[MULTIPART_BOUNDARY_MAX +
				    AGENCY_PATH_MAX + 80];
	int			 pass;		/* /upstream/MODEL/... */
	int			 headreq;	/* HEAD: the answer has no body */
	char			 prefix[AGENCY_PATH_MAX];	/* "/upstream/MODEL" */
	int			 held;
	uint64_t		 holdid;
	uint16_t		 port;
	char			 label[AGENCY_PATH_MAX];
	char			 hbuf[PREQ_HDRS];	/* pass-through headers */
	char			*hdrs;		/* hbuf, or allocated */
	size_t			 hdrslen;
	int			 has_ctype;
	struct upconn		*uc;
	int			 retried;
	int			 replied;	/* header sent to the client */
	int			 chunked_out;	/* to the client */
	int			 close_out;	/* the client's end marks it */
	int			 sse;		/* text/event-stream */
	int			 status;
	int			 end;		/* enum req_end: the first */
	int64_t			 ptok;
	int64_t			 ctok;
	char			 carry[128];
	size_t			 carrylen;
	struct event		 timer;
	/* the wait for the hold, and loading progress */
	int64_t			 wait_ms;	/* until answered; -1: none */
	int			 progress;	/* asked to be told its waits */
	int			 waited;	/* our own header went out */
	int			 wait;		/* enum proto_wait, as told */
	uint32_t		 ahead;
	int64_t			 load_ms;	/* as told, at told_at */
	int64_t			 told_at;
	int64_t			 granted_at;
	int			 ticking;	/* tick is added */
	struct event		 tick;		/* the next comment line */
	int			 nostream;	/* the answer under ours is none */
	struct buf		 kept;		/* of it, for the error event */
};
RB_HEAD(preqtree, preq);
TAILQ_HEAD(preqs, preq);

static int	 preq_cmp(struct preq *, struct preq *);
RB_PROTOTYPE_STATIC(preqtree, preq, node, preq_cmp);
RB_GENERATE_STATIC(preqtree, preq, node, preq_cmp);

static struct preqtree	 tree = RB_INITIALIZER(&tree);
static struct preqs	 preqs = TAILQ_HEAD_INITIALIZER(preqs);
static struct upconns	 idle = TAILQ_HEAD_INITIALIZER(idle);
static char		 ubuf[UP_READ];
static struct buf	 ob;		/* output being put together */

/* Not passed on, either way (RFC 9110 7.6.1), or set by us. */
#define HOP(s)	{ s, sizeof(s) - 1 }
static const struct {
	const char	*name;
	size_t		 len;
} hop_headers[] = {
	HOP("Connection"), HOP("Keep-Alive"), HOP("Proxy-Authenticate"),
	HOP("Proxy-Authorization"), HOP("Proxy-Connection"), HOP("TE"),
	HOP("Trailer"), HOP("Trailers"), HOP("Transfer-Encoding"),
	HOP("Upgrade"), HOP("Host"), HOP("Content-Length"), HOP("Expect"),
};
#undef HOP

static struct preq	*preq_new(struct hreq *, const struct http_decision *);
static void		 preq_end(struct preq *);
static void		 release(struct preq *);
static void		 client_gone(void *);
static void		 ended(struct preq *, int);
static void		 client_drained(void *);
static void		 upstream_forward(struct preq *);
static void		 upstream_fail(struct preq *, const char *);
static void		 upstream_readcb(evutil_socket_t, short, void *);
static void		 upstream_writecb(evutil_socket_t, short, void *);
static void		 uc_free(struct upconn *);
static void		 body_drop(struct preq *);
static void		 timer_arm(struct preq *);
static void		 timer_cb(evutil_socket_t, short, void *);
static void		 usage_scan(struct preq *, const char *, size_t);
static void		 hold_ask(struct preq *);
static int		 waited_data(struct preq *, const char *, size_t);
static void		 waited_fail(struct preq *, int, const char *,
			    const char *);
static void		 tick_cb(evutil_socket_t, short, void *);
static void		 tick_stop(struct preq *);

static int
preq_cmp(struct preq *a, struct preq *b)
{
	return (a->reqid < b->reqid ? -1 : a->reqid > b->reqid);
}

/* The output buffer: start, add, and make room. */
static void
o_reset(void)
{
	ob.len = 0;
}

static void
o_add(const void *p, size_t n)
{
	if (buf_add(&ob, p, n, 16384) == -1)
		fatal("%s", __func__);
}

static void
o_str(const char *s)
{
	o_add(s, strlen(s));
}

/* A number, in decimal or (base 16) hex, without printf. */
static void
o_num(uint64_t v, int base)
{
	char	 d[24], *e = d + sizeof(d), *p = e;

	do {
		*--p = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0);
	o_add(p, e - p);
}

/* Whether an answer is a stream of server-sent events. */
static int
is_sse(const struct h1_msg *m)
{
	const struct h1_header	*h = h1_find(m, "Content-Type");

	return (h != NULL && h->valuelen >= 17 &&
	    strncasecmp(h->value, "text/event-stream", 17) == 0);
}

static int
is_hop(const char *key, size_t len)
{
	size_t	 i;

	for (i = 0; i < sizeof(hop_headers) / sizeof(hop_headers[0]); i++)
		if (hop_headers[i].len == len &&
		    strncasecmp(key, hop_headers[i].name, len) == 0)
			return (1);
	return (0);
}

/* A model request of the client's r, as dc decided it: its model, who
 * it comes from; the owner of its connection from now on. */
static struct preq *
preq_new(struct hreq *r, const struct http_decision *dc)
{
	struct preq	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return (NULL);
	p->reqid = ++px->seq;
	p->r = r;
	p->minor = r->minor;
	p->t0 = now_ms();
	p->ptok = p->ctok = -1;
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
	if (evtimer_assign(&p->timer, px->base, timer_cb, p) == -1) {
		free(p);
		return (NULL);
	}
	RB_INSERT(preqtree, &tree, p);
	TAILQ_INSERT_TAIL(&preqs, p, entry);
	conn_set_owner(r->conn, client_gone, client_drained, p);
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
		uc_free(p->uc);
		p->uc = NULL;
	}
	if (p->r != NULL) {
		/* never left without an answer: the connection goes */
		conn_abort(p->r->conn);
		p->r = NULL;
	}
	tick_stop(p);
	/* However far the answer went, its client never had it whole. */
	if (p->end == END_CLIENT_LEFT || p->end == END_CANCELLED)
		p->status = 499;
	answer_log_end(p->method, p->path, p->model, p->status,
	    now_ms() - p->t0, p->wait_ms, p->ptok, p->ctok, p->end, p->who);
	metrics_request_end(p->model, p->key, p->user, p->status, p->end,
	    p->ptok, p->ctok);
	RB_REMOVE(preqtree, &tree, p);
	TAILQ_REMOVE(&preqs, p, entry);
	evtimer_del(&p->timer);
	json_object_put(p->json);
	free(p->rawmem);
	free(p->sp);
	if (p->hdrs != p->hbuf)
		free(p->hdrs);
	free(p->kept.b);
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
	if (p->uc != NULL && p->uc->iovn > 0)
		return;
	json_object_put(p->json);
	p->json = NULL;
	free(p->rawmem);
	p->rawmem = p->raw = NULL;
	free(p->sp);
	p->sp = NULL;
}

/* Answer the client with a Retry-After of seconds (0: none), unless it
 * is gone; the request is over for it.  After our own header, the
 * error is the stream's last event (no Retry-After then). */
static void
reply_error_retry(struct preq *p, int status, const char *code,
    const char *msg, int retry_after)
{
	struct hreq	*r = p->r;

	p->status = status;
	if (r == NULL)
		return;
	if (p->waited) {
		waited_fail(p, status, code, msg);
		return;
	}
	p->r = NULL;
	answer_error_as(r, p->family, status, code, msg, retry_after);
}

static void
reply_error(struct preq *p, int status, const char *code, const char *msg)
{
	reply_error_retry(p, status, code, msg, 0);
}

/* End the client's connection mid-answer. */
static void
client_close(struct preq *p)
{
	struct hreq	*r = p->r;

	if (r == NULL)
		return;
	p->r = NULL;
	conn_abort(r->conn);
}

/* Whether s (n bytes) ends with t. */
static int
ends_with(const char *s, size_t n, const char *t)
{
	size_t	 k = strlen(t);

	return (n >= k && memcmp(s + n - k, t, k) == 0);
}

/*
 * A stream begun ends with an error event, obj (in the shape of its
 * family: on Anthropic's routes an event named "error", as Anthropic
 * sends one), and, when chunked, the last chunk, so that the client can
 * tell it from a broken connection.
 */
static void
client_event_error(struct preq *p, json_object *obj)
{
	struct hreq	*r = p->r;
	const char	*js, *lead = "", *ev;
	size_t		 n, len;

	ev = p->family == FAMILY_ANTHROPIC ? "event: error\n" : "";
	js = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	/* after an event cut in its middle, end that one first */
	n = p->carrylen;
	if (n > 0 && p->carry[n - 1] != '\n')
		lead = "\n\n";
	else if (n > 0 && !ends_with(p->carry, n, "\n\n") &&
	    !ends_with(p->carry, n, "\n\r\n"))
		lead = "\n";
	len = strlen(lead) + strlen(ev) + 6 + strlen(js) + 2;
	o_reset();
	if (p->chunked_out) {
		o_num(len, 16);
		o_add("\r\n", 2);
	}
	o_str(lead);
	o_str(ev);
	o_str("data: ");
	o_str(js);
	o_add("\n\n", 2);
	if (p->chunked_out)
		o_add("\r\n0\r\n\r\n", 7);
	p->r = NULL;
	(void)conn_write(r->conn, ob.b, ob.len);
	o_reset();
	conn_done(r->conn, !p->close_out);
}

/* A cancelled stream ends with an error event; any other answer begun
 * can only be cut. */
static void
client_cancelled(struct preq *p)
{
	json_object	*obj;

	if (p->r == NULL)
		return;
	if (!p->sse || (!p->chunked_out && !p->close_out)) {
		client_close(p);
		return;
	}
	obj = answer_error_object_as(p->family, 499, "cancelled",
	    "The request was cancelled.");
	client_event_error(p, obj);
	json_object_put(obj);
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

	p->r = NULL;
	p->status = 499;
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
		if (p->uc != NULL && p->uc->paused) {
			p->uc->paused = 0;
			event_add(&p->uc->rev, NULL);
		}
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

	if (p->uc != NULL && p->uc->paused) {
		p->uc->paused = 0;
		event_add(&p->uc->rev, NULL);
	}
}

/* A client's credential for the front door, never passed on when the
 * front door has keys. */
static int
is_credential(const char *key, size_t len)
{
	return ((len == 13 && strncasecmp(key, "Authorization", 13) == 0) ||
	    (len == 9 && strncasecmp(key, "X-Api-Key", 9) == 0));
}

/* Whether a request header goes on to the model: end-to-end, and with
 * strip, no credential. */
static int
kept(const struct h1_header *h, int strip)
{
	return (!is_hop(h->name, h->namelen) &&
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
		if (kept(h, strip))
			n += h->namelen + h->valuelen + 4;
	}
	if (n > sizeof(p->hbuf) && (p->hdrs = malloc(n)) == NULL) {
		p->hdrs = p->hbuf;
		return (-1);
	}
	d = p->hdrs;
	for (i = 0; i < m->nheaders; i++) {
		h = &m->headers[i];
		if (!kept(h, strip))
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
	int64_t		 ms = px->conf->queue_timeout;

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
		reply_error(p, 500, "internal_error", "Out of memory.");
		preq_end(p);
		return (-1);
	}
}

/*
 * Set up the hold of a request and ask for it; 0, or -1 when it ended.
 * Its bytes (raw), when they may go on as they are or as pieces (sp, the
 * splice of a fast-path body), are taken from the connection where they
 * can be, else copied.  A request of a key with max requests asks only
 * once it has a slot of its key (key_slot).
 */
static int
hold_setup(struct preq *p, const struct http_decision *dc, char *raw,
    size_t rawlen, const struct splice *sp)
{
	const struct pkey	*key = dc->acc.key;

	p->state = ST_HOLD;
	if (raw != NULL) {
		if ((p->rawmem = conn_take_input(p->r->conn)) != NULL)
			p->raw = raw;
		else if ((p->rawmem = p->raw = malloc(rawlen > 0 ? rawlen :
		    1)) != NULL)
			memcpy(p->raw, raw, rawlen);
		p->rawlen = rawlen;
	}
	if (sp != NULL && (p->sp = malloc(sizeof(*sp))) != NULL)
		memcpy(p->sp, sp, sizeof(*sp));
	if ((raw != NULL && p->raw == NULL) || (sp != NULL && p->sp == NULL) ||
	    keep_headers(p, dc->hm, !TAILQ_EMPTY(&px->conf->keys)) == -1) {
		reply_error(p, 500, "internal_error", "Out of memory.");
		preq_end(p);
		return (-1);
	}
	if (key != NULL && key->max_requests > 0) {
		if (key_slot(p, key->max_requests) == -1)
			return (-1);
		if (p->state == ST_KEYWAIT)
			return (0);
	}
	hold_ask(p);
	return (0);
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
	p->family = dc->family;
	p->json = dc->body;
	dc->body = NULL;
	if (dc->form) {
		p->form = 1;
		p->mf = dc->mf;
		(void)strlcpy(p->boundary, dc->boundary, sizeof(p->boundary));
	}
	p->stops = rules_stops_stream(rt, dc->stream);
	/* its comment lines: only where a stream is awaited */
	if (rt->progress && dc->stream && evtimer_assign(&p->tick, px->base,
	    tick_cb, p) == 0)
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
	p->headreq = strcmp(dc->method, "HEAD") == 0;
	(void)strlcpy(p->uri, dc->target + dc->prefix, sizeof(p->uri));
	(void)snprintf(p->prefix, sizeof(p->prefix), "%.*s", (int)dc->prefix,
	    dc->path);
	p->family = FAMILY_OPENAI;
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
		reply_error(p, 500, "internal_error", "Out of memory.");
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
		reply_error(p, 500, "internal_error", e.message);
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
	if (p == NULL || p->state != ST_HOLD || p->r == NULL) {
		/* withdrawn, or never ours: give it straight back */
		memset(&ph, 0, sizeof(ph));
		ph.holdid = g->holdid;
		parent_send(IMSG_HOLD_RELEASE, &ph, sizeof(ph));
		return;
	}
	p->held = 1;
	p->holdid = g->holdid;
	p->port = g->port;
	p->granted_at = now_ms();
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
	upstream_forward(p);
}

void
forward_refuse(const struct proto_hold_refuse *r)
{
	struct preq	*p;
	int		 status;
	const char	*code;

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
	reply_error_retry(p, status, code, r->message, r->retry_after);
	preq_end(p);
}

/*
 * Loading progress.
 */

/* A piece of our own stream, as a chunk when chunked. */
static void
o_own(struct preq *p, const char *d, size_t len)
{
	if (p->chunked_out) {
		o_num(len, 16);
		o_add("\r\n", 2);
	}
	o_add(d, len);
	if (p->chunked_out)
		o_add("\r\n", 2);
}

/* The comment line of what the request waits for (its model's name
 * kept to one line), or, once granted, of how long the model has had
 * it. */
static void
waiting_comment(struct preq *p)
{
	char		 line[AGENCY_NAME_MAX + 64], name[AGENCY_NAME_MAX];
	unsigned char	 c;
	int64_t		 ms;
	size_t		 i;
	int		 n;

	for (i = 0; i < sizeof(name) - 1 && p->model[i] != '\0'; i++) {
		c = (unsigned char)p->model[i];
		name[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	name[i] = '\0';
	if (p->state == ST_HOLD && p->wait != WAIT_LOAD)
		n = snprintf(line, sizeof(line), ": queued %u ahead\n\n",
		    p->ahead);
	else {
		if (p->state == ST_HOLD)
			ms = p->load_ms + (now_ms() - p->told_at);
		else
			ms = now_ms() - p->granted_at;
		if (ms < 0)
			ms = 0;
		n = snprintf(line, sizeof(line), ": %s %s %lld.%llds\n\n",
		    p->state == ST_HOLD ? "loading" : "processing", name,
		    (long long)(ms / 1000), (long long)(ms % 1000 / 100));
	}
	if (n > 0 && (size_t)n < sizeof(line))
		o_own(p, line, n);
}

static void
tick_arm(struct preq *p)
{
	struct timeval	 tv;

	tv.tv_sec = PROGRESS_TICK / 1000;
	tv.tv_usec = (PROGRESS_TICK % 1000) * 1000;
	evtimer_add(&p->tick, &tv);
	p->ticking = 1;
}

static void
tick_stop(struct preq *p)
{
	if (p->ticking) {
		evtimer_del(&p->tick);
		p->ticking = 0;
	}
}

/* A comment line a second, until the model's first byte of body. */
static void
tick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct preq	*p = arg;

	(void)fd;
	(void)ev;
	p->ticking = 0;
	if (p->r == NULL)
		return;
	o_reset();
	waiting_comment(p);
	(void)conn_write(p->r->conn, ob.b, ob.len);
	o_reset();
	tick_arm(p);
}

/* The CORS fields the front door grants the client's origin, if any. */
static void
o_cors(const struct preq *p)
{
	char	 cors[AGENCY_ORIGIN_MAX + 64];

	o_add(cors, answer_cors(p->r, cors, sizeof(cors)));
}

/* It waits: our own header at once, then a comment line a second. */
static void
waiting_begin(struct preq *p)
{
	struct hreq	*r = p->r;

	p->waited = p->replied = p->sse = 1;
	if (p->minor >= 1)
		p->chunked_out = 1;
	else
		p->close_out = 1;
	o_reset();
	o_str(p->minor >= 1 ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.0 200 OK\r\n");
	/* and no buffering by a proxy in between (nginx) */
	o_str("Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
	    "X-Accel-Buffering: no\r\n");
	o_cors(p);
	if (p->chunked_out)
		o_str("Transfer-Encoding: chunked\r\n");
	if (p->close_out || !r->keepalive)
		o_str("Connection: close\r\n");
	o_add("\r\n", 2);
	waiting_comment(p);
	(void)conn_write(r->conn, ob.b, ob.len);
	o_reset();
	tick_arm(p);
	log_debug("request %llu: waits, its stream begun", (unsigned long long)
	    p->reqid);
}

/* The parent tells what a request that asked waits for. */
void
forward_wait(const struct proto_hold_wait *w)
{
	struct preq	*p;

	if ((p = preq_find(w->reqid)) == NULL || p->state != ST_HOLD ||
	    !p->progress || p->r == NULL)
		return;
	p->wait = w->wait;
	p->ahead = w->ahead;
	p->load_ms = w->load_ms;
	p->told_at = now_ms();
	if (!p->waited)
		waiting_begin(p);
}

/* After our header, a failure is the stream's last event. */
static void
waited_fail(struct preq *p, int status, const char *code, const char *msg)
{
	json_object	*obj;

	tick_stop(p);
	obj = answer_error_object_as(p->family, status, code, msg);
	client_event_error(p, obj);
	json_object_put(obj);
}

/* The model's header, under ours: a 2xx stream is passed on as it
 * comes, anything else is kept for an error event (waited_end). */
static void
waited_header(struct preq *p, const struct h1_msg *m)
{
	if (m->status >= 200 && m->status < 300 && is_sse(m))
		return;
	p->nostream = 1;
	tick_stop(p);
}

/*
 * Bytes of the model's body, under our header: the first ends the
 * comment lines; those of an answer that is no stream are kept (the
 * first WAITED_BODY_MAX) rather than passed on.  1: kept.
 */
static int
waited_data(struct preq *p, const char *d, size_t len)
{
	size_t	 n;

	tick_stop(p);
	if (!p->nostream)
		return (0);
	n = WAITED_BODY_MAX - p->kept.len;
	if (n > len)
		n = len;
	(void)buf_add(&p->kept, d, n, 1024);	/* less is kept, or none */
	return (1);
}

/*
 * The end of an answer that was no stream, under our header: an error
 * event with the model's own error, if its body is one, else with its
 * status and the start of its body, printable.
 */
static void
waited_end(struct preq *p)
{
	json_object	*obj = NULL, *e;
	struct rerr	 re;
	char		 msg[PROTO_MSG_MAX], start[201];
	size_t		 i;
	int		 status = p->status;

	if (p->status < 400)
		p->status = 502;	/* a 2xx or 3xx that is no stream */
	if (p->kept.len > 0 &&
	    (obj = rules_parse(p->kept.b, p->kept.len, &re)) != NULL &&
	    (!json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, "error", &e) ||
	    !json_object_is_type(e, json_type_object))) {
		json_object_put(obj);
		obj = NULL;
	}
	if (obj == NULL) {
		for (i = 0; i < p->kept.len && i < sizeof(start) - 1; i++)
			start[i] = p->kept.b[i] < 0x20 || p->kept.b[i] > 0x7e ?
			    ' ' : p->kept.b[i];
		start[i] = '\0';
		(void)snprintf(msg, sizeof(msg), "%.200s answered %d, not a "
		    "stream: %s", p->label, status, start);
		obj = answer_error_object_as(p->family, 502, "upstream_error",
		    msg);
	}
	tick_stop(p);
	p->carrylen = 0;	/* none of it went to the client */
	client_event_error(p, obj);
	json_object_put(obj);
}


/* An idle connection to port, or a new one (connecting). */
static struct upconn *
pool_get(uint16_t port, const char **err)
{
	struct upconn		*uc;
	struct sockaddr_in	 sin;
	int			 fd, one = 1;

	TAILQ_FOREACH(uc, &idle, entry)
		if (uc->port == port) {
			TAILQ_REMOVE(&idle, uc, entry);
			uc->inidle = 0;
			return (uc);
		}
	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    IPPROTO_TCP)) == -1) {
		*err = errno == EMFILE || errno == ENFILE ?
		    "out of file descriptors" : "cannot make a socket";
		return (NULL);
	}
	/* one write a request; nothing to wait for */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 &&
	    errno != EINPROGRESS) {
		*err = errno == ECONNREFUSED ? "connection refused" :
		    "connection failed";
		close(fd);
		return (NULL);
	}
	if ((uc = calloc(1, sizeof(*uc))) == NULL) {
		*err = "out of memory";
		close(fd);
		return (NULL);
	}
	uc->fd = fd;
	uc->port = port;
	uc->connecting = 1;
	if (event_assign(&uc->rev, px->base, fd, EV_READ | EV_PERSIST,
	    upstream_readcb, uc) == -1 ||
	    event_assign(&uc->wev, px->base, fd, EV_WRITE | EV_PERSIST,
	    upstream_writecb, uc) == -1 ||
	    event_add(&uc->rev, NULL) == -1 ||
	    event_add(&uc->wev, NULL) == -1) {
		*err = "cannot watch the connection";
		close(fd);
		free(uc);
		return (NULL);
	}
	return (uc);
}

/* Close the idle connections to port. */
static void
pool_drop(uint16_t port)
{
	struct upconn	*uc, *next;

	for (uc = TAILQ_FIRST(&idle); uc != NULL; uc = next) {
		next = TAILQ_NEXT(uc, entry);
		if (uc->port == port)
			uc_free(uc);
	}
}

static void
pool_put(struct upconn *uc)
{
	struct upconn	*u;
	size_t		 n = 0;

	uc->p = NULL;
	uc->reused = 1;
	TAILQ_FOREACH(u, &idle, entry)
		if (u->port == uc->port && ++n >= PROXY_POOL_MAX) {
			uc_free(uc);
			return;
		}
	TAILQ_INSERT_HEAD(&idle, uc, entry);
	uc->inidle = 1;
}

static void
uc_free(struct upconn *uc)
{
	if (uc->inidle)
		TAILQ_REMOVE(&idle, uc, entry);
	if (uc->p != NULL)
		uc->p->uc = NULL;
	event_del(&uc->rev);
	event_del(&uc->wev);
	close(uc->fd);
	free(uc->out);
	free(uc->in);
	free(uc);
}

/* Past n bytes of uc's unwritten pieces. */
static void
uc_advance(struct upconn *uc, size_t n)
{
	struct iovec	*v;

	while (uc->iovi < uc->iovn) {
		v = &uc->iov[uc->iovi];
		if (n < v->iov_len) {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= n;
			return;
		}
		n -= v->iov_len;
		uc->iovi++;
	}
	free(uc->out);
	uc->out = NULL;
	uc->iovn = uc->iovi = 0;
}

/*
 * Write what the socket takes of the request, its pieces in one
 * writev; keep the rest for upstream_writecb: the header (the first
 * piece, in the output buffer that the next request takes) as a copy,
 * the body's pieces where they are.
 */
static int
uc_send(struct upconn *uc, const struct iovec *iov, int n)
{
	ssize_t	 w = 0;
	int	 i;

	for (i = 0; i < n; i++)
		uc->iov[i] = iov[i];
	uc->iovn = n;
	uc->iovi = 0;
	if (!uc->connecting) {
		if ((w = writev(uc->fd, uc->iov, n)) == -1) {
			if (errno != EAGAIN && errno != EINTR)
				return (-1);
			w = 0;
		}
		uc_advance(uc, (size_t)w);
		if (uc->iovn == 0)
			return (0);
	}
	if (uc->iovi == 0) {
		free(uc->out);
		if ((uc->out = malloc(uc->iov[0].iov_len)) == NULL)
			return (-1);
		memcpy(uc->out, uc->iov[0].iov_base, uc->iov[0].iov_len);
		uc->iov[0].iov_base = uc->out;
	}
	if (!uc->connecting)
		event_add(&uc->wev, NULL);
	return (0);
}

static void
upstream_forward(struct preq *p)
{
	struct upconn	*uc;
	struct iovec	 iov[SPLICE_PIECES + 1];
	struct mpiece	 v[MULTIPART_PIECES];
	const char	*s, *err = NULL;
	size_t		 len, i, n;
	char		 msg[PROTO_MSG_MAX];

	if ((uc = pool_get(p->port, &err)) == NULL) {
		(void)snprintf(msg, sizeof(msg), "%.300s: %s (127.0.0.1:%u)",
		    p->label, err, p->port);
		log_warnx("request %llu: %s", (unsigned long long)p->reqid,
		    msg);
		reply_error(p, 502, "upstream_error", msg);
		preq_end(p);
		return;
	}
	uc->p = p;
	p->uc = uc;
	uc->got = uc->hdone = uc->chunked = uc->toclose = 0;
	uc->keepalive = 0;
	uc->left = -1;

	/* the body: its pieces, its bytes, or json-c's text of the tree */
	n = 2;
	if (p->spliced)
		n = 1 + splice_iov(p->sp, p->raw, iov + 1, SPLICE_PIECES,
		    &len);
	else if (p->raw != NULL || p->json == NULL) {
		iov[1].iov_base = p->raw;
		iov[1].iov_len = len = p->rawlen;
	} else {
		s = json_object_to_json_string_ext(p->json,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		iov[1].iov_base = (void *)(uintptr_t)s;
		iov[1].iov_len = len = strlen(s);
	}
	/* a form's model, by the rule of a JSON body's: the grant's */
	if (p->form && p->upstream[0] != '\0' && (!p->mf.has_model ||
	    p->mf.model_len != strlen(p->upstream) ||
	    memcmp(p->raw + p->mf.model_off, p->upstream,
	    p->mf.model_len) != 0)) {
		if ((n = multipart_splice(p->raw, p->rawlen, &p->mf,
		    p->boundary, p->upstream, p->formhead, sizeof(p->formhead),
		    v)) == 0) {
			reply_error(p, 500, "internal_error", "The model's "
			    "upstream name cannot be a form's value.");
			preq_end(p);
			return;
		}
		for (len = 0, i = 0; i < n; i++) {
			iov[i + 1].iov_base = (void *)(uintptr_t)v[i].p;
			iov[i + 1].iov_len = v[i].len;
			len += v[i].len;
		}
		n++;
	}
	o_reset();
	o_str(p->method);
	o_add(" ", 1);
	o_str(p->uri);
	o_str(" HTTP/1.1\r\nHost: 127.0.0.1:");
	o_num(p->port, 10);
	o_str("\r\n");
	o_add(p->hdrs, p->hdrslen);
	if (!p->has_ctype && !p->pass)
		o_str("Content-Type: application/json\r\n");
	/* passed through: a length where there is a body, or may be one */
	if (!p->pass || len > 0 || strcmp(p->method, "POST") == 0 ||
	    strcmp(p->method, "PUT") == 0 || strcmp(p->method, "PATCH") == 0) {
		o_str("Content-Length: ");
		o_num(len, 10);
		o_str("\r\n");
	}
	o_str("\r\n");
	/* the header, then the body from where it is: one writev */
	iov[0].iov_base = ob.b;
	iov[0].iov_len = ob.len;
	timer_arm(p);
	if (uc_send(uc, iov, (int)n) == -1) {
		o_reset();
		upstream_fail(p, "connection failed");
		return;
	}
	o_reset();
	log_debug("request %llu: %s %s to %s on port %u",
	    (unsigned long long)p->reqid, p->method, p->uri, p->label,
	    p->port);
}

static void
upstream_writecb(evutil_socket_t fd, short ev, void *arg)
{
	struct upconn	*uc = arg;
	struct preq	*p = uc->p;
	ssize_t		 n;
	int		 err = 0;
	socklen_t	 len = sizeof(err);

	(void)ev;
	if (uc->connecting) {
		uc->connecting = 0;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
			err = errno;
		if (err != 0) {
			if (p != NULL)
				upstream_fail(p, err == ECONNREFUSED ?
				    "connection refused" :
				    "connection failed");
			else
				uc_free(uc);
			return;
		}
	}
	if (uc->iovn > 0) {
		n = writev(fd, uc->iov + uc->iovi, uc->iovn - uc->iovi);
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			if (p != NULL)
				upstream_fail(p, "connection failed");
			else
				uc_free(uc);
			return;
		}
		uc_advance(uc, (size_t)n);
		if (uc->iovn > 0)
			return;
		/* all out; if the answer began, the body is done with */
		if (p != NULL && uc->got)
			body_drop(p);
	}
	event_del(&uc->wev);
}

/* The upstream failed this request before its end. */
static void
upstream_fail(struct preq *p, const char *what)
{
	struct upconn	*uc = p->uc;
	char		 msg[PROTO_MSG_MAX];

	/*
	 * A kept connection the model server closed as we sent: it never
	 * read the request.  Once more, on a new connection; the other
	 * kept ones to that port are as old, so they go too.
	 */
	if (uc != NULL && uc->reused && !uc->got && !p->retried &&
	    p->r != NULL && p->state == ST_FORWARD) {
		p->retried = 1;
		uc_free(uc);
		pool_drop(p->port);
		log_debug("request %llu: kept connection to port %u was "
		    "closed; once more", (unsigned long long)p->reqid,
		    p->port);
		upstream_forward(p);
		return;
	}
	(void)snprintf(msg, sizeof(msg), "%.300s: %s (127.0.0.1:%u)",
	    p->label, p->replied ? "connection closed mid-answer" : what,
	    p->port);
	log_warnx("request %llu: %s", (unsigned long long)p->reqid, msg);
	if (p->replied && !p->waited) {
		ended(p, END_CUT);
		client_close(p);
	} else {
		reply_error(p, 502, "upstream_error", msg);
		p->status = 502;
	}
	preq_end(p);	/* frees the connection */
}

/*
 * A passed-through answer's Location, under /upstream/MODEL: a path of
 * the server's own (not "//host"), or an absolute URL of its address.
 */
static void
pass_location(struct preq *p, const char *v, size_t len)
{
	char	 self[64];
	int	 n;

	n = snprintf(self, sizeof(self), "http://127.0.0.1:%u/", p->port);
	if (n > 0 && (size_t)n <= len && strncasecmp(v, self, n) == 0) {
		v += n - 1;
		len -= n - 1;
	}
	if (len > 0 && v[0] == '/' && (len == 1 || v[1] != '/'))
		o_str(p->prefix);
	o_add(v, len);
}

/* The answer's header, for the client. */
static void
client_header(struct preq *p, const struct h1_msg *m, int nobody)
{
	const struct h1_header	*h;
	size_t			 i;
	int			 keep = p->r->keepalive;

	p->chunked_out = 0;
	p->close_out = 0;
	p->sse = is_sse(m);
	if (!nobody && m->content_length < 0) {
		if (p->minor >= 1)
			p->chunked_out = 1;
		else
			p->close_out = 1;
	}
	if (p->close_out)
		keep = 0;
	o_str(p->minor >= 1 ? "HTTP/1.1 " : "HTTP/1.0 ");
	o_num(m->status, 10);
	o_add(" ", 1);
	o_add(m->reason, m->reasonlen > 64 ? 64 : m->reasonlen);
	o_add("\r\n", 2);
	for (i = 0; i < m->nheaders; i++) {
		h = &m->headers[i];
		/* CORS is the front door's to grant, not the model's */
		if (is_hop(h->name, h->namelen) || (h->namelen > 15 &&
		    strncasecmp(h->name, "Access-Control-", 15) == 0))
			continue;
		o_add(h->name, h->namelen);
		o_add(": ", 2);
		if (p->pass && h->namelen == 8 &&
		    strncasecmp(h->name, "Location", 8) == 0)
			pass_location(p, h->value, h->valuelen);
		else
			o_add(h->value, h->valuelen);
		o_add("\r\n", 2);
	}
	o_cors(p);
	/* none for an answer that has no body (204, 304), but a HEAD's */
	if (p->chunked_out)
		o_str("Transfer-Encoding: chunked\r\n");
	else if ((!nobody || p->headreq) && m->content_length >= 0) {
		o_str("Content-Length: ");
		o_num(m->content_length, 10);
		o_add("\r\n", 2);
	}
	if (!keep)
		o_str("Connection: close\r\n");
	else if (p->minor == 0)
		o_str("Connection: keep-alive\r\n");
	o_add("\r\n", 2);
	p->replied = 1;
}

/* A piece of the answer's body: scanned, and queued for the client. */
static void
client_data(struct preq *p, const char *d, size_t len)
{
	if (len == 0)
		return;
	usage_scan(p, d, len);
	if (p->r == NULL)
		return;
	if (p->waited && waited_data(p, d, len))
		return;
	if (p->chunked_out) {
		o_num(len, 16);
		o_add("\r\n", 2);
		o_add(d, len);
		o_add("\r\n", 2);
	} else
		o_add(d, len);
}

/* The answer is complete: the client's end, the connection back. */
static void
upstream_done(struct preq *p, int reusable)
{
	struct upconn	*uc = p->uc;
	struct hreq	*r = p->r;

	if (r != NULL && p->nostream) {
		waited_end(p);		/* the client's side is over */
		r = NULL;
	}
	if (r != NULL) {
		if (p->chunked_out)
			o_add("0\r\n\r\n", 5);
		p->r = NULL;
		if (ob.len > 0)
			(void)conn_write(r->conn, ob.b, ob.len);
		o_reset();
		conn_done(r->conn, !p->close_out);
	}
	p->uc = NULL;
	/* not one whose request is still going out, or whose answer came
	 * before all of it: what is left would start the next request */
	if (reusable && uc->keepalive && !uc->paused && !uc->connecting &&
	    uc->iovn == 0) {
		free(uc->in);
		uc->in = NULL;
		uc->inlen = 0;
		pool_put(uc);
	} else {
		uc->p = NULL;
		uc_free(uc);
	}
	preq_end(p);
}

/* Flush what this read put together for the client. */
static void
client_flush(struct preq *p)
{
	if (p->r != NULL && ob.len > 0) {
		(void)conn_write(p->r->conn, ob.b, ob.len);
		if (conn_queued(p->r->conn) > CLIENT_QUEUE_MAX &&
		    p->uc != NULL) {
			event_del(&p->uc->rev);
			p->uc->paused = 1;
		}
	}
	o_reset();
}

/*
 * Bytes of the answer: header (1xx skipped), then body by its framing.
 * Returns 1 when the answer ended (p is freed), -1 on an error (p is
 * freed), 0 to read on.
 */
static int
upstream_bytes(struct preq *p, char *d, size_t len)
{
	struct upconn	*uc = p->uc;
	struct h1_msg	 m;
	size_t		 n, datalen;
	ssize_t		 k;
	int		 r, done, nobody;

	while (len > 0) {
		if (!uc->hdone) {
			r = h1_parse_response(d, len, UP_HEADER_MAX, &m);
			if (r == 0) {
				/* keep the start of a header */
				if (d != uc->in) {
					char	*t = malloc(len);

					if (t == NULL) {
						upstream_fail(p, "out of "
						    "memory");
						return (-1);
					}
					memcpy(t, d, len);
					free(uc->in);
					uc->in = t;
				}
				uc->inlen = len;
				return (0);
			}
			if (r < 0 || m.status == 101) {
				upstream_fail(p, "invalid answer");
				return (-1);
			}
			if (m.status < 200) {	/* interim: skip */
				d += r;
				len -= r;
				continue;
			}
			uc->hdone = 1;
			if (p->r != NULL)	/* a client that left: 499 */
				p->status = m.status;
			nobody = m.status == 204 || m.status == 304 ||
			    p->headreq;
			uc->keepalive = m.keepalive;
			if (nobody)
				uc->left = 0;
			else if (m.chunked) {
				uc->chunked = 1;
				h1_chunked_init(&uc->ch);
			} else if (m.content_length >= 0)
				uc->left = m.content_length;
			else {
				uc->toclose = 1;
				uc->keepalive = 0;
			}
			if (p->r != NULL && p->waited)
				waited_header(p, &m);
			else if (p->r != NULL)
				client_header(p, &m, nobody);
			d += r;
			len -= r;
			if (uc->left == 0) {
				upstream_done(p, len == 0);
				return (1);
			}
			continue;
		}
		if (uc->chunked) {
			k = h1_chunked_decode(&uc->ch, d, len, &datalen, &done);
			if (k < 0) {
				upstream_fail(p, "invalid chunked answer");
				return (-1);
			}
			client_data(p, d, datalen);
			if (done) {
				upstream_done(p, (size_t)k == len);
				return (1);
			}
			return (0);
		}
		if (uc->left >= 0) {
			n = (uint64_t)uc->left < len ? (size_t)uc->left : len;
			client_data(p, d, n);
			uc->left -= n;
			if (uc->left == 0) {
				upstream_done(p, n == len);
				return (1);
			}
			return (0);
		}
		client_data(p, d, len);	/* to the close */
		return (0);
	}
	return (0);
}

static void
upstream_readcb(evutil_socket_t fd, short ev, void *arg)
{
	struct upconn	*uc = arg;
	struct preq	*p = uc->p;
	ssize_t		 n;
	size_t		 room;
	char		*d;

	(void)ev;
	if (p == NULL) {
		/* idle: closed by the model server, or talking out of turn */
		uc_free(uc);
		return;
	}
	if (uc->inlen > 0) {
		/* the rest of a header */
		room = UP_HEADER_MAX + 1 - uc->inlen;
		if (room > sizeof(ubuf))
			room = sizeof(ubuf);
		n = read(fd, ubuf, room);
	} else
		n = read(fd, ubuf, sizeof(ubuf));
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		upstream_fail(p, errno == ECONNREFUSED ?
		    "connection refused" : "connection failed");
		return;
	}
	if (n == 0) {
		if (uc->hdone && uc->toclose) {
			timer_arm(p);
			upstream_done(p, 0);
			return;
		}
		upstream_fail(p, uc->got ? "connection closed mid-answer" :
		    "connection closed");
		return;
	}
	if (!uc->got) {
		/* no retry once the answer began: the body is done with */
		uc->got = 1;
		body_drop(p);
	}
	timer_arm(p);
	o_reset();
	if (uc->inlen > 0) {
		if ((d = realloc(uc->in, uc->inlen + n)) == NULL) {
			upstream_fail(p, "out of memory");
			return;
		}
		memcpy(d + uc->inlen, ubuf, n);
		uc->in = d;
		n += uc->inlen;
		uc->inlen = 0;
	} else
		d = ubuf;
	if (upstream_bytes(p, d, (size_t)n) != 0) {
		o_reset();
		return;
	}
	if (uc->inlen == 0 && uc->in != NULL) {
		free(uc->in);
		uc->in = NULL;
	}
	client_flush(p);
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
	char		 msg[PROTO_MSG_MAX];

	(void)fd;
	(void)ev;
	if (p->state == ST_KEYWAIT) {
		(void)snprintf(msg, sizeof(msg), "The key '%s' has as many "
		    "requests in progress as it may (max requests); this one "
		    "waited %lld ms for one of them to end.", p->key,
		    (long long)px->conf->queue_timeout);
		reply_error_retry(p, 429, "key_busy", msg, 1);
		p->wait_ms = now_ms() - p->t0;	/* for its key's slot */
		preq_end(p);
		return;
	}
	log_warnx("request %llu: %s did not answer in time",
	    (unsigned long long)p->reqid, p->label);
	if (p->replied && !p->waited) {
		ended(p, END_CUT);
		client_close(p);
	} else {
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
usage_scan(struct preq *p, const char *d, size_t len)
{
	const char	*s = d;
	char		*tmp = NULL;
	int64_t		 v;
	size_t		 n = len;

	if (memmem(d, len, "tokens", 6) != NULL ||
	    memmem(p->carry, p->carrylen, "usage", 5) != NULL) {
		/* with the end of the previous piece, if there was one */
		if (p->carrylen > 0 &&
		    (tmp = malloc(p->carrylen + len)) != NULL) {
			memcpy(tmp, p->carry, p->carrylen);
			memcpy(tmp + p->carrylen, d, len);
			s = tmp;
			n = p->carrylen + len;
		}
		if ((v = find_count(s, n, "\"prompt_tokens\"")) >= 0)
			p->ptok = v;
		if ((v = find_count(s, n, "\"completion_tokens\"")) >= 0)
			p->ctok = v;
		free(tmp);
	}
	n = len < sizeof(p->carry) ? len : sizeof(p->carry);
	memcpy(p->carry, d + len - n, n);
	p->carrylen = n;
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
		if (p->replied)
			client_cancelled(p);
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
