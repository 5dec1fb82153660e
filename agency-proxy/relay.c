/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The client's side of a model request (struct relay): the model's
 * answer as upstream.c reads it (relay_answer, the sink), a read at a
 * time in one write: its own Content-Length kept, else chunked to
 * HTTP/1.1 and to the close for HTTP/1.0, hop-by-hop and CORS fields
 * dropped; the front door's errors; the token counts of the answer; and
 * loading progress, a stream of our own while the request waits, whose
 * last event is whatever fails after it.
 *
 * r is the client while it may be answered, NULL once it left, had its
 * answer or was cut: its connection is never touched again then.
 *
 * Calls: answer.c, conn.c, rules.c, h1.c, buf.c, state.c, common/log.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/event.h>

#include <json-c/json.h>

#include "h1.h"
#include "log.h"
#include "proxy.h"
#include "routes.h"

#define CLIENT_QUEUE_MAX	(1024 * 1024)	/* then stop reading upstream */
#define PROGRESS_TICK		1000		/* ms between comment lines */
#define WAITED_BODY_MAX		4096		/* kept of an answer that is
						 * no stream, after ours */

static struct buf	 ob;		/* what goes to a client next */

static void	 tick_cb(evutil_socket_t, short, void *);

/* The output being put together: start, add, and make room. */
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

static void
o_num(uint64_t v, int base)
{
	if (buf_num(&ob, v, base, 16384) == -1)
		fatal("%s", __func__);
}

/* Write what was put together to the client, if it is still there. */
static void
o_write(const struct relay *rl)
{
	if (rl->r != NULL && ob.len > 0)
		(void)conn_write(rl->r->conn, ob.b, ob.len);
	o_reset();
}

/* A piece of body, as a chunk when chunked. */
static void
o_piece(const struct relay *rl, const char *d, size_t len)
{
	if (rl->chunked) {
		o_num(len, 16);
		o_add("\r\n", 2);
	}
	o_add(d, len);
	if (rl->chunked)
		o_add("\r\n", 2);
}

/* The CORS fields the front door grants the client's origin, if any. */
static void
o_cors(const struct relay *rl)
{
	char	 cors[AGENCY_ORIGIN_MAX + 64];

	if (rl->r->cors[0] != '\0')
		o_add(cors, answer_cors(rl->r, cors, sizeof(cors)));
}

/* Whether an answer is a stream of server-sent events. */
static int
is_sse(const struct h1_msg *m)
{
	const struct h1_header	*h = h1_find(m, "Content-Type");

	return (h != NULL && h->valuelen >= 17 &&
	    strncasecmp(h->value, "text/event-stream", 17) == 0);
}

/* Whether s (n bytes) ends with t. */
static int
ends_with(const char *s, size_t n, const char *t)
{
	size_t	 k = strlen(t);

	return (n >= k && memcmp(s + n - k, t, k) == 0);
}

/* The client of a model request, for the model's answer; id: the
 * request's, for the log. */
void
relay_init(struct relay *rl, struct hreq *r, uint64_t id, int family)
{
	memset(rl, 0, sizeof(*rl));
	rl->r = r;
	rl->id = id;
	rl->minor = r->minor;
	rl->family = family;
	rl->ptok = rl->ctok = -1;
}

/* Loading progress, asked for: 0, or -1 when it cannot be had. */
int
relay_progress(struct relay *rl)
{
	if ((rl->tick = evtimer_new(px->base, tick_cb, rl)) == NULL)
		return (-1);
	return (0);
}

static void
tick_stop(struct relay *rl)
{
	if (rl->ticking) {
		evtimer_del(rl->tick);
		rl->ticking = 0;
	}
}

/* The request is over: timers stop, what was kept goes, and a client
 * that never had its answer loses its connection. */
void
relay_free(struct relay *rl)
{
	if (rl->r != NULL) {
		conn_abort(rl->r->conn);
		rl->r = NULL;
	}
	tick_stop(rl);
	if (rl->tick != NULL)
		event_free(rl->tick);
	rl->tick = NULL;
	free(rl->kept.b);
	rl->kept.b = NULL;
}

/* End the client's connection mid-answer. */
void
relay_cut(struct relay *rl)
{
	struct hreq	*r = rl->r;

	o_reset();
	if (r == NULL)
		return;
	rl->r = NULL;
	conn_abort(r->conn);
}

/*
 * A stream begun ends with a last event, obj, named ev ("event: NAME\n",
 * or "" for none), then tail (another event, or ""), and, when chunked,
 * the last chunk, so that the client can tell it from a broken
 * connection.
 */
static void
event_last(struct relay *rl, json_object *obj, const char *ev,
    const char *tail)
{
	struct hreq	*r = rl->r;
	const char	*js, *lead = "";
	size_t		 n, len;

	js = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	/* after an event cut in its middle, end that one first */
	n = rl->carrylen;
	if (n > 0 && rl->carry[n - 1] != '\n')
		lead = "\n\n";
	else if (n > 0 && !ends_with(rl->carry, n, "\n\n") &&
	    !ends_with(rl->carry, n, "\n\r\n"))
		lead = "\n";
	len = strlen(lead) + strlen(ev) + 6 + strlen(js) + 2 + strlen(tail);
	o_reset();
	if (rl->chunked) {
		o_num(len, 16);
		o_add("\r\n", 2);
	}
	o_str(lead);
	o_str(ev);
	o_str("data: ");
	o_str(js);
	o_add("\n\n", 2);
	o_str(tail);
	if (rl->chunked)
		o_add("\r\n0\r\n\r\n", 7);
	o_write(rl);
	rl->r = NULL;
	conn_done(r->conn, !rl->closing);
}

/* The stream's last event: an error in the shape of its family (on
 * Anthropic's routes an event named "error", as Anthropic sends one). */
static void
event_error(struct relay *rl, json_object *obj)
{
	event_last(rl, obj, rl->family == FAMILY_ANTHROPIC ?
	    "event: error\n" : "", "");
}

/* The stream's last event: an error of ours. */
static void
event_fail(struct relay *rl, int status, const char *code, const char *msg)
{
	json_object	*obj;

	tick_stop(rl);
	obj = answer_error_object_as(rl->family, status, code, msg);
	event_error(rl, obj);
	json_object_put(obj);
}

/* Answer the client with an error and a Retry-After of seconds (0:
 * none), unless it is gone; the request is over for it.  After our own
 * header, the error is the stream's last event (no Retry-After then). */
void
relay_error(struct relay *rl, int status, const char *code, const char *msg,
    int retry_after)
{
	struct hreq	*r = rl->r;

	o_reset();
	rl->status = status;
	if (r == NULL)
		return;
	if (rl->waited) {
		event_fail(rl, status, code, msg);
		return;
	}
	rl->r = NULL;
	answer_error_as(r, rl->family, status, code, msg, retry_after);
}

/* A cancelled stream ends with an error event; any other answer begun
 * can only be cut. */
void
relay_cancelled(struct relay *rl)
{
	if (rl->r == NULL)
		return;
	if (!rl->sse || (!rl->chunked && !rl->closing))
		relay_cut(rl);
	else
		event_fail(rl, 499, "cancelled", "The request was cancelled.");
}

/*
 * The answer of a request that agency's shutdown ends before its end:
 * one not begun is a 503 with a Retry-After of retry seconds; a stream
 * ends as its API ends a failed one (Anthropic's "error" event, the
 * Responses API's "response.failed", OpenAI's error then its "[DONE]"),
 * then its last chunk; any other answer begun can only be cut.
 */
void
relay_stopped(struct relay *rl, int responses, int retry)
{
	static const char	 msg[] = "agency is stopping: the request was "
	    "ended before it finished.";
	json_object		*obj, *resp, *err;

	if (rl->r == NULL)
		return;
	if (!rl->replied) {
		relay_error(rl, 503, "stopping", msg, retry);
		return;
	}
	if (!rl->sse || (!rl->chunked && !rl->closing)) {
		relay_cut(rl);
		return;
	}
	tick_stop(rl);
	if (rl->family == FAMILY_ANTHROPIC) {
		obj = answer_error_object_as(rl->family, 503, "stopping", msg);
		event_last(rl, obj, "event: error\n", "");
	} else if (responses) {
		obj = json_object_new_object();
		resp = json_object_new_object();
		err = json_object_new_object();
		json_object_object_add(err, "code",
		    json_object_new_string("server_error"));
		json_object_object_add(err, "message",
		    json_object_new_string(msg));
		json_object_object_add(resp, "object",
		    json_object_new_string("response"));
		json_object_object_add(resp, "status",
		    json_object_new_string("failed"));
		json_object_object_add(resp, "error", err);
		json_object_object_add(obj, "type",
		    json_object_new_string("response.failed"));
		json_object_object_add(obj, "response", resp);
		event_last(rl, obj, "event: response.failed\n", "");
	} else {
		obj = answer_error_object_as(rl->family, 503, "stopping", msg);
		event_last(rl, obj, "", "data: [DONE]\n\n");
	}
	json_object_put(obj);
}

/* The comment line of what the request waits for (its model's name
 * kept to one line), or, once granted, of how long the model has had
 * it. */
static void
waiting_comment(struct relay *rl)
{
	char		 line[AGENCY_NAME_MAX + 64], name[AGENCY_NAME_MAX];
	unsigned char	 c;
	int64_t		 ms;
	size_t		 i;
	int		 n;

	for (i = 0; i < sizeof(name) - 1 && rl->model[i] != '\0'; i++) {
		c = (unsigned char)rl->model[i];
		name[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	name[i] = '\0';
	if (!rl->granted && rl->wait != WAIT_LOAD)
		n = snprintf(line, sizeof(line), ": queued %u ahead\n\n",
		    rl->ahead);
	else {
		if (!rl->granted)
			ms = rl->load_ms + (now_ms() - rl->told_at);
		else
			ms = now_ms() - rl->granted_at;
		if (ms < 0)
			ms = 0;
		n = snprintf(line, sizeof(line), ": %s %s %lld.%llds\n\n",
		    !rl->granted ? "loading" : "processing", name,
		    (long long)(ms / 1000), (long long)(ms % 1000 / 100));
	}
	if (n > 0 && (size_t)n < sizeof(line))
		o_piece(rl, line, n);
}

static void
tick_arm(struct relay *rl)
{
	struct timeval	 tv;

	tv.tv_sec = PROGRESS_TICK / 1000;
	tv.tv_usec = (PROGRESS_TICK % 1000) * 1000;
	evtimer_add(rl->tick, &tv);
	rl->ticking = 1;
}

/* A comment line a second, until the model's first byte of body. */
static void
tick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct relay	*rl = arg;

	(void)fd;
	(void)ev;
	rl->ticking = 0;
	if (rl->r == NULL)
		return;
	o_reset();
	waiting_comment(rl);
	o_write(rl);
	tick_arm(rl);
}

/* It waits: our own header at once, then a comment line a second. */
static void
waiting_begin(struct relay *rl)
{
	rl->waited = rl->replied = rl->sse = 1;
	if (rl->minor >= 1)
		rl->chunked = 1;
	else
		rl->closing = 1;
	o_reset();
	o_str(rl->minor >= 1 ? "HTTP/1.1 200 OK\r\n" : "HTTP/1.0 200 OK\r\n");
	/* and no buffering by a proxy in between (nginx) */
	o_str("Content-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
	    "X-Accel-Buffering: no\r\n");
	o_cors(rl);
	if (rl->chunked)
		o_str("Transfer-Encoding: chunked\r\n");
	if (rl->closing || !rl->r->keepalive)
		o_str("Connection: close\r\n");
	o_add("\r\n", 2);
	waiting_comment(rl);
	o_write(rl);
	tick_arm(rl);
	log_debug("request %llu: waits, its stream begun", (unsigned long long)
	    rl->id);
}

/* The parent tells what a request that asked waits for. */
void
relay_told(struct relay *rl, const struct proto_hold_wait *w)
{
	rl->wait = w->wait;
	rl->ahead = w->ahead;
	rl->load_ms = w->load_ms;
	rl->told_at = now_ms();
	if (!rl->waited)
		waiting_begin(rl);
}

/* The request is held, on the model server at port: the comment lines
 * say how long the model has had it. */
void
relay_granted(struct relay *rl, uint16_t port)
{
	rl->granted = 1;
	rl->granted_at = now_ms();
	rl->port = port;
}

/* The model's header, under ours: a 2xx stream is passed on as it
 * comes, anything else is kept for an error event (waited_end). */
static void
waited_header(struct relay *rl, const struct h1_msg *m)
{
	if (m->status >= 200 && m->status < 300 && is_sse(m))
		return;
	rl->nostream = 1;
	tick_stop(rl);
}

/*
 * Bytes of the model's body, under our header: the first ends the
 * comment lines; those of an answer that is no stream are kept (the
 * first WAITED_BODY_MAX) rather than passed on.  1: kept.
 */
static int
waited_data(struct relay *rl, const char *d, size_t len)
{
	size_t	 n;

	tick_stop(rl);
	if (!rl->nostream)
		return (0);
	n = WAITED_BODY_MAX - rl->kept.len;
	if (n > len)
		n = len;
	(void)buf_add(&rl->kept, d, n, 1024);	/* less is kept, or none */
	return (1);
}

/*
 * The end of an answer that was no stream, under our header: an error
 * event with the model's own error, if its body is one, else with its
 * status and the start of its body, printable.
 */
static void
waited_end(struct relay *rl)
{
	json_object	*obj = NULL, *e;
	struct rerr	 re;
	char		 msg[PROTO_MSG_MAX], start[201];
	size_t		 i;
	int		 status = rl->status;

	if (rl->status < 400)
		rl->status = 502;	/* a 2xx or 3xx that is no stream */
	if (rl->kept.len > 0 &&
	    (obj = rules_parse(rl->kept.b, rl->kept.len, &re)) != NULL &&
	    (!json_object_is_type(obj, json_type_object) ||
	    !json_object_object_get_ex(obj, "error", &e) ||
	    !json_object_is_type(e, json_type_object))) {
		json_object_put(obj);
		obj = NULL;
	}
	if (obj == NULL) {
		for (i = 0; i < rl->kept.len && i < sizeof(start) - 1; i++)
			start[i] = rl->kept.b[i] < 0x20 ||
			    rl->kept.b[i] > 0x7e ? ' ' : rl->kept.b[i];
		start[i] = '\0';
		(void)snprintf(msg, sizeof(msg), "%.200s answered %d, not a "
		    "stream: %s", rl->label, status, start);
		obj = answer_error_object_as(rl->family, 502, "upstream_error",
		    msg);
	}
	tick_stop(rl);
	rl->carrylen = 0;	/* none of it went to the client */
	event_error(rl, obj);
	json_object_put(obj);
}

/*
 * A passed-through answer's Location, under /upstream/MODEL: a path of
 * the server's own (not "//host"), or an absolute URL of its address.
 */
static void
pass_location(const struct relay *rl, const char *v, size_t len)
{
	char	 self[64];
	int	 n;

	n = snprintf(self, sizeof(self), "http://127.0.0.1:%u/", rl->port);
	if (n > 0 && (size_t)n <= len && strncasecmp(v, self, n) == 0) {
		v += n - 1;
		len -= n - 1;
	}
	if (len > 0 && v[0] == '/' && (len == 1 || v[1] != '/'))
		o_str(rl->prefix);
	o_add(v, len);
}

/* The model answer's header fields, for the client: the end-to-end ones
 * (not those its Connection field names) but CORS, a passed-through
 * Location under its prefix. */
static void
o_fields(const struct relay *rl, const struct h1_msg *m)
{
	const struct h1_header	*h;
	size_t			 i;

	for (i = 0; i < m->nheaders; i++) {
		h = &m->headers[i];
		/* hop-by-hop, or named by the answer's Connection field
		 * (RFC 9110 7.6.1); CORS is the front door's to grant,
		 * not the model's */
		if (h1_hop_in(m, h->name, h->namelen) || (h->namelen > 15 &&
		    strncasecmp(h->name, "Access-Control-", 15) == 0))
			continue;
		o_add(h->name, h->namelen);
		o_add(": ", 2);
		if (rl->prefix != NULL && h->namelen == 8 &&
		    strncasecmp(h->name, "Location", 8) == 0)
			pass_location(rl, h->value, h->valuelen);
		else
			o_add(h->value, h->valuelen);
		o_add("\r\n", 2);
	}
}

/* The answer's header: for the client as it is, or under our own. */
static void
relay_header(struct relay *rl, const struct h1_msg *m, int nobody)
{
	int	 keep;

	if (rl->r == NULL)
		return;		/* a client that left: 499 */
	rl->status = m->status;
	if (rl->waited) {
		waited_header(rl, m);
		return;
	}
	keep = rl->r->keepalive;
	rl->chunked = 0;
	rl->closing = 0;
	rl->sse = is_sse(m);
	if (!nobody && m->content_length < 0) {
		if (rl->minor >= 1)
			rl->chunked = 1;
		else
			rl->closing = 1;
	}
	if (rl->closing)
		keep = 0;
	o_str(rl->minor >= 1 ? "HTTP/1.1 " : "HTTP/1.0 ");
	o_num(m->status, 10);
	o_add(" ", 1);
	o_add(m->reason, m->reasonlen > 64 ? 64 : m->reasonlen);
	o_add("\r\n", 2);
	o_fields(rl, m);
	o_cors(rl);
	/* none for an answer that has no body (204, 304), but a HEAD's */
	if (rl->chunked)
		o_str("Transfer-Encoding: chunked\r\n");
	else if ((!nobody || rl->head) && m->content_length >= 0) {
		o_str("Content-Length: ");
		o_num(m->content_length, 10);
		o_add("\r\n", 2);
	}
	if (!keep)
		o_str("Connection: close\r\n");
	else if (rl->minor == 0)
		o_str("Connection: keep-alive\r\n");
	o_add("\r\n", 2);
	rl->replied = 1;
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
usage_scan(struct relay *rl, const char *d, size_t len)
{
	const char	*s = d;
	char		*tmp = NULL;
	int64_t		 v;
	size_t		 n = len;

	if (memmem(d, len, "tokens", 6) != NULL ||
	    memmem(rl->carry, rl->carrylen, "usage", 5) != NULL) {
		/* with the end of the previous piece, if there was one */
		if (rl->carrylen > 0 &&
		    (tmp = malloc(rl->carrylen + len)) != NULL) {
			memcpy(tmp, rl->carry, rl->carrylen);
			memcpy(tmp + rl->carrylen, d, len);
			s = tmp;
			n = rl->carrylen + len;
		}
		if ((v = find_count(s, n, "\"prompt_tokens\"")) >= 0)
			rl->ptok = v;
		if ((v = find_count(s, n, "\"completion_tokens\"")) >= 0)
			rl->ctok = v;
		free(tmp);
	}
	n = len < sizeof(rl->carry) ? len : sizeof(rl->carry);
	memcpy(rl->carry, d + len - n, n);
	rl->carrylen = n;
}

/* A piece of the answer's body: scanned, and queued for the client. */
static void
relay_data(struct relay *rl, const char *d, size_t len)
{
	if (len == 0)
		return;
	usage_scan(rl, d, len);
	if (rl->r == NULL)
		return;
	if (rl->waited && waited_data(rl, d, len))
		return;
	o_piece(rl, d, len);
}

/* The end of a read: what it put together goes to the client.  1 when
 * the client is slow to take it. */
static int
relay_flush(struct relay *rl)
{
	int	 slow = 0;

	if (rl->r != NULL && ob.len > 0) {
		(void)conn_write(rl->r->conn, ob.b, ob.len);
		slow = conn_queued(rl->r->conn) > CLIENT_QUEUE_MAX;
	}
	o_reset();
	return (slow);
}

/* The answer is whole: the client's end of it. */
static void
relay_end(struct relay *rl)
{
	struct hreq	*r = rl->r;

	if (r != NULL && rl->nostream) {
		waited_end(rl);		/* the client's side is over */
		return;
	}
	if (r == NULL) {
		o_reset();
		return;
	}
	if (rl->chunked)
		o_add("0\r\n\r\n", 5);
	o_write(rl);
	rl->r = NULL;
	conn_done(r->conn, !rl->closing);
}

/*
 * What a read of the model's answer brought (upstream.c's sink, arg the
 * relay): the header if it came in it, a piece of the body, and the end
 * when it is whole, to the client in one write.  1 when the client is
 * slow to take it.
 */
int
relay_answer(void *arg, const struct h1_msg *m, int nobody, const char *d,
    size_t len, int end)
{
	struct relay	*rl = arg;

	if (m != NULL)
		relay_header(rl, m, nobody);
	relay_data(rl, d, len);
	if (!end)
		return (relay_flush(rl));
	relay_end(rl);
	return (0);
}
