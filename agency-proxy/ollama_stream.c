/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The model server's answers turned into Ollama's (ollama.h): an SSE
 * stream of OpenAI chunks into NDJSON lines as it comes, a whole answer
 * into one object, embeddings, and errors into {"error":"..."}.
 *
 * A chunk is read by ollama_json.c's reader, which holds the few fields
 * wanted as spans of the chunk's own bytes; the line is written from
 * those.  A chunk whose structure is not JSON, or whose text is not
 * strict JSON, ends the stream with an error line: the lines a client
 * gets always read (the fuzzer holds them to it).
 *
 * What a stream holds, besides a few numbers: the SSE line or event a
 * piece ended in the middle of (up to OLLAMA_EVENT_MAX each), and the
 * tool call whose arguments are coming, one at a time (the next index
 * completes it; up to OLLAMA_ARGS_MAX), which is given to the client as
 * one object when it is complete, its arguments an object as Ollama has
 * them rather than OpenAI's string.
 *
 * Calls: ollama_json.c, ollama_out.c, buf.c.
 */
#include <sys/types.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"
#include "ollama.h"
#include "sha256.h"
#include "ollama_json.h"

/* What a chunk, or a whole answer, says. */
struct said {
	struct span	 content;	/* delta.content, message.content or
					 * text */
	struct span	 thinking;	/* reasoning_content or reasoning */
	struct span	 reason;	/* finish_reason */
	struct span	 error;		/* error.message, or error */
	int		 errored;
	int		 logprobs;	/* st->lp holds them */
	int		 pieces;	/* tool call pieces it carried */
};


/* Onto a fixed field (an id, a name): -1 when it does not fit. */
static int
field_add(char *f, size_t *flen, size_t size, const struct span *sp)
{
	if (!sp->set || sp->len == 0)
		return (0);
	if (sp->len > size - *flen)
		return (-1);
	memcpy(f + *flen, sp->s, sp->len);
	*flen += sp->len;
	return (0);
}

/*
 * The call in progress, complete, as Ollama's object onto out:
 * {"id":...,"function":{"index":N,"name":...,"arguments":{...}}}.
 */
static int
call_put(struct ollama_stream *st, struct buf *out)
{
	struct ollama_call	*c = &st->call;
	struct jr		 j;

	if (c->idlen > 0 && (ollama_puts(out, "{\"id\":\"") == -1 ||
	    ollama_put(out, c->id, c->idlen) == -1 ||
	    ollama_puts(out, "\",") == -1))
		return (-1);
	if (c->idlen == 0 && ollama_puts(out, "{") == -1)
		return (-1);
	if (ollama_puts(out, "\"function\":{\"index\":") == -1 ||
	    ollama_put_int(out, c->sent) == -1 ||
	    ollama_puts(out, ",\"name\":\"") == -1 ||
	    ollama_put(out, c->name, c->namelen) == -1 ||
	    ollama_puts(out, "\",\"arguments\":") == -1)
		return (-1);
	jr_init(&j, c->args.b, c->args.len);
	jr_ws(&j);
	if (j.p == j.end) {
		if (ollama_puts(out, "{}") == -1)
			return (-1);
	} else if (*j.p != '{' || jr_copy(&j, out) == -1)
		return (-2);
	jr_ws(&j);
	if (j.p != j.end)
		return (-2);
	return (ollama_puts(out, "}}"));
}

static int	 line_start(struct ollama_stream *, int64_t, struct buf *);
static int	 fail(struct ollama_stream *, const char *, struct buf *);

/* The call in progress is complete: to the client (a line of its own
 * when streamed; into st->calls for a whole answer). */
static int
call_done(struct ollama_stream *st, int64_t now, struct buf *out)
{
	struct ollama_call	*c = &st->call;
	struct buf		*to = st->stream ? out : &st->calls;
	size_t			 mark = to->len;
	int			 r;

	if (c->index < 0)
		return (0);
	if (st->api != OLLAMA_CHAT) {
		/* generate has no tools: nothing asked for them */
		c->index = -1;
		return (0);
	}
	if ((st->stream && (line_start(st, now, out) == -1 ||
	    ollama_puts(out, "\"message\":{\"role\":\"assistant\","
	    "\"content\":\"\",\"tool_calls\":[") == -1)) ||
	    (!st->stream && to->len > 0 && ollama_puts(to, ",") == -1))
		r = -1;
	else if ((r = call_put(st, to)) == 0 && st->stream &&
	    ollama_puts(out, "]},\"done\":false}\n") == -1)
		r = -1;
	if (r < 0) {
		to->len = mark;
		return (fail(st, r == -2 ? "the model server's tool call "
		    "arguments are not a JSON object" : "out of memory", out));
	}
	c->sent++;
	c->index = -1;
	c->idlen = c->namelen = 0;
	c->args.len = 0;
	return (0);
}

/* A piece of a tool call (index -1: the server gave none). */
static int
call_piece(struct ollama_stream *st, int64_t index, const struct span *id,
    const struct span *name, const struct span *args, int64_t now,
    struct buf *out)
{
	struct ollama_call	*c = &st->call;

	/* no index: a piece with an id of its own begins the next call */
	if (index < 0)
		index = c->index >= 0 && !(id->set && id->len > 0 &&
		    c->idlen > 0) ? c->index : c->next;
	if (index != c->index) {
		/* one at a time, in order: never back to an earlier one */
		if (index < c->next)
			return (fail(st, "the model server's tool calls are "
			    "interleaved", out));
		if (call_done(st, now, out) == -1)
			return (-1);
		c->index = index;
		c->next = index + 1;
	}
	if (field_add(c->id, &c->idlen, sizeof(c->id), id) == -1 ||
	    field_add(c->name, &c->namelen, sizeof(c->name), name) == -1)
		return (fail(st, "the model server's tool call has an id or "
		    "a name that is too long", out));
	if (args->set && jr_unescape(&c->args, args->s, args->len,
	    OLLAMA_ARGS_MAX) == -1)
		return (fail(st, "the model server's tool call arguments are "
		    "too long or not text", out));
	return (0);
}

/* The tool_calls array of a delta or message, each piece taken. */
static int
read_calls(struct ollama_stream *st, struct jr *j, struct said *sd,
    int64_t now, struct buf *out)
{
	struct span	 id, name, args;
	const char	*k;
	size_t		 klen;
	int64_t		 index;
	int		 first = 1, mfirst, ffirst, r, pos = 0;

	if (jr_null(j))
		return (0);
	if (jr_open(j, '[') == -1)
		return (-1);
	while ((r = jr_element(j, &first)) == 1) {
		memset(&id, 0, sizeof(id));
		memset(&name, 0, sizeof(name));
		memset(&args, 0, sizeof(args));
		index = -1;
		mfirst = 1;
		if (jr_open(j, '{') == -1)
			return (-1);
		while ((r = jr_member(j, &mfirst, &k, &klen)) == 1) {
			if (jr_is(k, klen, "index"))
				r = jr_count(j, &index);
			else if (jr_is(k, klen, "id"))
				r = jr_span(j, &id);
			else if (jr_is(k, klen, "function")) {
				ffirst = JR_OBJECT;
				while ((r = jr_member(j, &ffirst, &k,
				    &klen)) == 1) {
					if (jr_is(k, klen, "name"))
						r = jr_span(j, &name);
					else if (jr_is(k, klen, "arguments"))
						r = jr_span(j, &args);
					else
						r = jr_skip(j);
					if (r == -1)
						return (-1);
				}
			} else
				r = jr_skip(j);
			if (r == -1)
				return (-1);
		}
		if (r == -1)
			return (-1);
		/* a whole answer's calls are complete and in order */
		if (!st->stream && index < 0)
			index = pos;
		pos++;
		sd->pieces++;
		if (call_piece(st, index, &id, &name, &args, now, out) == -1)
			return (-2);
	}
	return (r);
}

/* --- chunks --------------------------------------------------------- */

/* A delta (streamed) or a message (whole). */
static int
read_message(struct ollama_stream *st, struct jr *j, struct said *sd,
    int64_t now, struct buf *out)
{
	const char	*k;
	size_t		 klen;
	int		 first = JR_OBJECT, r;

	while ((r = jr_member(j, &first, &k, &klen)) == 1) {
		if (jr_is(k, klen, "content"))
			r = jr_span(j, &sd->content);
		else if (jr_is(k, klen, "reasoning_content") ||
		    jr_is(k, klen, "reasoning"))
			r = jr_span(j, &sd->thinking);
		else if (jr_is(k, klen, "tool_calls"))
			r = read_calls(st, j, sd, now, out);
		else
			r = jr_skip(j);
		if (r < 0)
			return (r);
	}
	return (r);
}

/* Logprobs: "content", an array as Ollama's, onto st->lp. */
static int
read_logprobs(struct ollama_stream *st, struct jr *j, struct said *sd)
{
	const char	*k;
	size_t		 klen;
	int		 first = JR_OBJECT, r;

	while ((r = jr_member(j, &first, &k, &klen)) == 1) {
		if (jr_is(k, klen, "content") && !jr_null(j)) {
			st->lp.len = 0;
			if (jr_copy(j, &st->lp) == -1 || st->lp.b[0] != '[')
				return (-1);
			sd->logprobs = 1;
		} else if (jr_skip(j) == -1)
			return (-1);
	}
	return (r);
}

/* The first choice; the others are read and passed over. */
static int
read_choices(struct ollama_stream *st, struct jr *j, struct said *sd,
    int64_t now, struct buf *out)
{
	const char	*k;
	size_t		 klen;
	int		 first = 1, mfirst, r, n = 0;

	if (jr_open(j, '[') == -1)
		return (-1);
	while ((r = jr_element(j, &first)) == 1) {
		if (n++ > 0) {
			if (jr_skip(j) == -1)
				return (-1);
			continue;
		}
		mfirst = 1;
		if (jr_open(j, '{') == -1)
			return (-1);
		while ((r = jr_member(j, &mfirst, &k, &klen)) == 1) {
			if (jr_is(k, klen, "delta") || jr_is(k, klen, "message"))
				r = read_message(st, j, sd, now, out);
			else if (jr_is(k, klen, "text"))
				r = jr_span(j, &sd->content);
			else if (jr_is(k, klen, "finish_reason"))
				r = jr_span(j, &sd->reason);
			else if (jr_is(k, klen, "logprobs"))
				r = read_logprobs(st, j, sd);
			else
				r = jr_skip(j);
			if (r < 0)
				return (r);
		}
		if (r == -1)
			return (-1);
	}
	return (r);
}

/* "error": a string, or an object with a "message". */
static int
read_error(struct jr *j, struct said *sd)
{
	const char	*k;
	size_t		 klen;
	int		 first = 1, r;

	jr_ws(j);
	sd->errored = 1;
	if (j->p < j->end && *j->p == '"')
		return (jr_span(j, &sd->error));
	if (jr_null(j)) {
		sd->errored = 0;
		return (0);
	}
	if (jr_open(j, '{') == -1)
		return (-1);
	while ((r = jr_member(j, &first, &k, &klen)) == 1) {
		if (jr_is(k, klen, "message"))
			r = jr_span(j, &sd->error);
		else
			r = jr_skip(j);
		if (r == -1)
			return (-1);
	}
	return (r);
}

/* A chunk, or a whole answer: what it says into sd, its usage and
 * timings into st; tool calls taken as they are read.  -2 when a tool
 * call ended the stream (its line is out). */
static int
read_chunk(struct ollama_stream *st, const char *d, size_t len, struct said *sd,
    int64_t now, struct buf *out)
{
	struct jr	 j;
	const char	*k;
	size_t		 klen;
	int		 first = 1, tfirst, r;

	memset(sd, 0, sizeof(*sd));
	jr_init(&j, d, len);
	if (jr_open(&j, '{') == -1)
		return (-1);
	while ((r = jr_member(&j, &first, &k, &klen)) == 1) {
		if (jr_is(k, klen, "choices"))
			r = read_choices(st, &j, sd, now, out);
		else if (jr_is(k, klen, "usage") || jr_is(k, klen, "timings")) {
			tfirst = JR_OBJECT;
			while ((r = jr_member(&j, &tfirst, &k, &klen)) == 1) {
				if (jr_is(k, klen, "prompt_tokens"))
					r = jr_count(&j, &st->ptok);
				else if (jr_is(k, klen, "completion_tokens"))
					r = jr_count(&j, &st->ctok);
				else if (jr_is(k, klen, "prompt_ms"))
					r = jr_ms(&j, &st->prompt_ns);
				else if (jr_is(k, klen, "predicted_ms"))
					r = jr_ms(&j, &st->eval_ns);
				else
					r = jr_skip(&j);
				if (r == -1)
					return (-1);
			}
		} else if (jr_is(k, klen, "error"))
			r = read_error(&j, sd);
		else
			r = jr_skip(&j);
		if (r < 0)
			return (r);
	}
	if (r == -1)
		return (-1);
	jr_ws(&j);
	return (j.p == j.end ? 0 : -1);
}

/* --- lines ---------------------------------------------------------- */

/* Room for n more bytes at the end of out: where they go, or NULL.
 * What is written there counts once out->len is moved past it. */
static char *
room(struct buf *out, size_t n)
{
	if (buf_reserve(out, n, FIRST, SIZE_MAX) == -1)
		return (NULL);
	return (out->b + out->len);
}

#define CAT(w, s)	(memcpy((w), (s), sizeof(s) - 1), (w) += sizeof(s) - 1)
#define PUT(out, s)	ollama_put((out), (s), sizeof(s) - 1)

/* {"model":"M","created_at":"T", of a line at now: the head and the
 * time to the second kept, rewritten once a second. */
static int
line_start(struct ollama_stream *st, int64_t now, struct buf *out)
{
	int64_t	 wall = st->t.wall + (now - st->t.start), sec, frac;
	char	*w, *d;
	int	 i;

	sec = wall / 1000000000;
	if ((frac = wall % 1000000000) < 0) {
		frac += 1000000000;
		sec--;
	}
	if (sec != st->second) {
		st->prefixlen = st->headlen + ollama_stamp(st->head +
		    st->headlen, sizeof(st->head) - st->headlen, sec);
		st->second = sec;
	}
	if ((w = room(out, st->prefixlen + 16)) == NULL)
		return (-1);
	memcpy(w, st->head, st->prefixlen);
	w += st->prefixlen;
	if (frac != 0) {
		/* ".%09lld" less its trailing zeros, without printf */
		*w = '.';
		for (d = w + 9, i = 0; i < 9; i++, frac /= 10)
			*d-- = '0' + frac % 10;
		for (w += 10; w[-1] == '0'; w--)
			;
	}
	CAT(w, "Z\",");
	out->len = w - out->b;
	return (0);
}

static int
put_metric(struct buf *out, const char *name, int64_t v)
{
	if (v <= 0)
		return (0);
	if (ollama_puts(out, ",\"") == -1 || ollama_puts(out, name) == -1 ||
	    ollama_puts(out, "\":") == -1 || ollama_put_int(out, v) == -1)
		return (-1);
	return (0);
}

/*
 * The numbers of the last line, in ns (Ollama's durations), where each
 * comes from:
 *   total_duration        now - times.start (the request read whole)
 *   load_duration         times.granted - times.start: the wait for
 *                         the hold, a load of the model included
 *   prompt_eval_count     usage.prompt_tokens
 *   prompt_eval_duration  timings.prompt_ms (llama-server's), else the
 *                         wait for the first token after the request
 *                         went (first - times.sent); not known for a
 *                         whole answer without timings
 *   eval_count            usage.completion_tokens, else the chunks that
 *                         carried tokens (a token each, as the servers
 *                         send them)
 *   eval_duration         timings.predicted_ms, else now - first (a
 *                         whole answer: now - times.sent)
 * Each is left out when 0, as Ollama leaves them.
 */
static int
metrics(struct ollama_stream *st, int64_t now, struct buf *out)
{
	int64_t	 pd, ed;

	if (st->prompt_ns >= 0)
		pd = st->prompt_ns;
	else
		pd = st->first > 0 ? st->first - st->t.sent : 0;
	if (st->eval_ns >= 0)
		ed = st->eval_ns;
	else if (st->first > 0)
		ed = now - st->first;
	else
		ed = st->stream ? 0 : now - st->t.sent;
	if (put_metric(out, "total_duration", now - st->t.start) == -1 ||
	    put_metric(out, "load_duration", st->t.granted - st->t.start) ==
	    -1 || put_metric(out, "prompt_eval_count", st->ptok) == -1 ||
	    (st->api != OLLAMA_EMBED && (put_metric(out,
	    "prompt_eval_duration", pd) == -1 || put_metric(out,
	    "eval_count", st->ctok >= 0 ? st->ctok : st->pieces) == -1 ||
	    put_metric(out, "eval_duration", ed) == -1)))
		return (-1);
	return (0);
}

/* The stream is over with an error: its line (a whole answer's: the
 * error object alone). */
static int
fail(struct ollama_stream *st, const char *msg, struct buf *out)
{
	if (st->done)
		return (-1);
	st->done = 1;
	if (ollama_error(out, msg) == -1 || (st->stream &&
	    ollama_put(out, "\n", 1) == -1))
		return (-1);
	return (-1);
}

/* An error the model server sent, its message as it wrote it. */
static int
fail_said(struct ollama_stream *st, const struct said *sd, struct buf *out)
{
	if (st->done)
		return (-1);
	if (!sd->error.set || sd->error.len == 0)
		return (fail(st, "the model server failed", out));
	st->done = 1;
	(void)(ollama_puts(out, "{\"error\":\"") == -1 ||
	    ollama_put(out, sd->error.s, sd->error.len) == -1 ||
	    ollama_puts(out, st->stream ? "\"}\n" : "\"}") == -1);
	return (-1);
}

static void
set_reason(struct ollama_stream *st, const struct span *sp)
{
	size_t	 i;

	if (!sp->set)
		return;
	if (jr_is(sp->s, sp->len, "tool_calls") ||
	    jr_is(sp->s, sp->len, "function_call") || sp->len == 0 ||
	    sp->len >= sizeof(st->reason)) {
		(void)strlcpy(st->reason, "stop", sizeof(st->reason));
		return;
	}
	for (i = 0; i < sp->len; i++)
		if ((sp->s[i] < 'a' || sp->s[i] > 'z') && sp->s[i] != '_') {
			(void)strlcpy(st->reason, "stop", sizeof(st->reason));
			return;
		}
	memcpy(st->reason, sp->s, sp->len);
	st->reason[sp->len] = '\0';
}

/* "content":"...","thinking":"..." of a line or an answer, in one
 * piece of room. */
static int
text_put(struct ollama_stream *st, const struct said *sd, struct buf *out)
{
	size_t	 c = sd->content.set ? sd->content.len : 0;
	size_t	 t = sd->thinking.set ? sd->thinking.len : 0;
	char	*w;

	if ((w = room(out, c + t + 64)) == NULL)
		return (-1);
	if (st->api == OLLAMA_CHAT)
		CAT(w, "\"message\":{\"role\":\"assistant\",\"content\":\"");
	else
		CAT(w, "\"response\":\"");
	if (c > 0)
		memcpy(w, sd->content.s, c);
	w += c;
	*w++ = '"';
	if (t > 0) {
		CAT(w, ",\"thinking\":\"");
		memcpy(w, sd->thinking.s, t);
		w += t;
		*w++ = '"';
	}
	out->len = w - out->b;
	return (0);
}

static int
logprobs_put(struct ollama_stream *st, const struct said *sd, struct buf *out)
{
	if (!sd->logprobs)
		return (0);
	if (ollama_puts(out, ",\"logprobs\":") == -1 ||
	    ollama_put(out, st->lp.b, st->lp.len) == -1)
		return (-1);
	return (0);
}

/* The last line of a stream, or a whole answer's object. */
static int
last(struct ollama_stream *st, const struct said *sd, int64_t now,
    struct buf *out)
{
	static const struct said	 none;

	if (sd == NULL)
		sd = &none;
	if (call_done(st, now, out) == -1)
		return (-1);
	if (line_start(st, now, out) == -1 || text_put(st, sd, out) == -1)
		return (-1);
	if (st->api == OLLAMA_CHAT && st->calls.len > 0 &&
	    (ollama_puts(out, ",\"tool_calls\":[") == -1 ||
	    ollama_put(out, st->calls.b, st->calls.len) == -1 ||
	    ollama_puts(out, "]") == -1))
		return (-1);
	if ((st->api == OLLAMA_CHAT && ollama_puts(out, "}") == -1) ||
	    ollama_puts(out, ",\"done\":true,\"done_reason\":\"") == -1 ||
	    ollama_puts(out, st->reason[0] != '\0' ? st->reason : "stop") ==
	    -1 || ollama_puts(out, "\"") == -1)
		return (-1);
	if (st->api == OLLAMA_CHAT && logprobs_put(st, sd, out) == -1)
		return (-1);
	if (metrics(st, now, out) == -1)
		return (-1);
	if (st->api != OLLAMA_CHAT && logprobs_put(st, sd, out) == -1)
		return (-1);
	if (ollama_puts(out, st->stream ? "}\n" : "}") == -1)
		return (-1);
	st->done = 1;
	return (0);
}

int
ollama_chunk(struct ollama_stream *st, const char *d, size_t len, int64_t now,
    struct buf *out)
{
	struct said	 sd;
	int		 r;

	if (st->done)
		return (-1);
	if (len == 6 && memcmp(d, "[DONE]", 6) == 0) {
		st->ended = 1;
		return (last(st, NULL, now, out) == -1 ? fail(st,
		    "out of memory", out) : -1);
	}
	if ((r = read_chunk(st, d, len, &sd, now, out)) == -2)
		return (-1);
	if (r == -1)
		return (fail(st, "the model server's stream is not JSON as it "
		    "should be", out));
	if (sd.errored)
		return (fail_said(st, &sd, out));
	if (sd.pieces > 0 || (sd.content.set && sd.content.len > 0) ||
	    (sd.thinking.set && sd.thinking.len > 0)) {
		st->pieces++;
		if (st->first == 0)
			st->first = now;
	}
	if ((sd.content.set && sd.content.len > 0) || (sd.thinking.set &&
	    sd.thinking.len > 0) || sd.logprobs) {
		if (line_start(st, now, out) == -1 ||
		    text_put(st, &sd, out) == -1 ||
		    (st->api == OLLAMA_CHAT ? PUT(out, "},\"done\":false") :
		    PUT(out, ",\"done\":false")) == -1 ||
		    logprobs_put(st, &sd, out) == -1 || PUT(out, "}\n") == -1)
			return (fail(st, "out of memory", out));
	}
	if (sd.reason.set) {
		set_reason(st, &sd.reason);
		/* the calls are complete */
		if (call_done(st, now, out) == -1)
			return (-1);
	}
	return (0);
}

/* --- SSE ------------------------------------------------------------ */

/* The event whose data is held is complete. */
static int
dispatch(struct ollama_stream *st, int64_t now, struct buf *out)
{
	struct said	 sd;
	const char	*d;
	size_t		 len;
	int		 err = st->errevent;

	if (!st->hasdata) {
		st->errevent = 0;
		return (0);
	}
	if (st->borrow != NULL) {
		d = st->borrow;
		len = st->borrowlen;
	} else {
		d = st->data.b;
		len = st->data.len;
	}
	st->hasdata = st->errevent = 0;
	st->borrow = NULL;
	st->data.len = 0;
	if (!err)
		return (ollama_chunk(st, d, len, now, out));
	/* an error event: its data, JSON or text */
	if (read_chunk(st, d, len, &sd, now, out) == 0 && sd.errored)
		return (fail_said(st, &sd, out));
	return (fail(st, "the model server failed", out));
}

/* Hold the data borrowed from a piece, which is going away. */
static int
keep(struct ollama_stream *st)
{
	const char	*d = st->borrow;

	if (d == NULL)
		return (0);
	st->borrow = NULL;
	st->data.len = 0;
	return (buf_reserve(&st->data, st->borrowlen, FIRST,
	    OLLAMA_EVENT_MAX) == -1 ? -1 : buf_add(&st->data, d,
	    st->borrowlen, FIRST));
}

/* One line of the stream (without its end). */
static int
sse_line(struct ollama_stream *st, const char *l, size_t len, int borrowed,
    int64_t now, struct buf *out)
{
	const char	*v, *colon;
	size_t		 flen, vlen;

	if (len == 0)
		return (dispatch(st, now, out));
	if (l[0] == ':')
		return (0);
	if ((colon = memchr(l, ':', len)) == NULL) {
		flen = len;
		v = l + len;
		vlen = 0;
	} else {
		flen = colon - l;
		v = colon + 1;
		if (v < l + len && *v == ' ')
			v++;
		vlen = l + len - v;
	}
	if (jr_is(l, flen, "event")) {
		if (jr_is(v, vlen, "error"))
			st->errevent = 1;
		return (0);
	}
	if (jr_is(l, flen, "error"))
		st->errevent = 1;
	else if (!jr_is(l, flen, "data"))
		return (0);
	if (!st->hasdata && borrowed) {
		st->hasdata = 1;
		st->borrow = v;
		st->borrowlen = vlen;
		return (0);
	}
	if (keep(st) == -1 || (st->hasdata && (st->data.len + 1 + vlen >
	    OLLAMA_EVENT_MAX || buf_add(&st->data, "\n", 1, FIRST) == -1)) ||
	    st->data.len + vlen > OLLAMA_EVENT_MAX ||
	    (vlen > 0 && buf_add(&st->data, v, vlen, FIRST) == -1))
		return (fail(st, "an event of the model server's stream is "
		    "too long", out));
	st->hasdata = 1;
	return (0);
}

int
ollama_stream_feed(struct ollama_stream *st, const char *d, size_t len,
    int64_t now, struct buf *out)
{
	const char	*p = d, *end, *q, *r;
	size_t		 n;

	if (len == 0)
		return (st->done ? -1 : 0);
	end = d + len;
	while (p < end && !st->done) {
		if (st->cr) {
			st->cr = 0;
			if (*p == '\n') {
				p++;
				continue;
			}
		}
		if ((q = memchr(p, '\n', end - p)) == NULL)
			q = end;
		if ((r = memchr(p, '\r', q - p)) != NULL)
			q = r;
		if (q == end) {
			if (st->line.len + (end - p) > OLLAMA_EVENT_MAX ||
			    buf_add(&st->line, p, end - p, FIRST) == -1)
				return (fail(st, "a line of the model server's "
				    "stream is too long", out));
			break;
		}
		if (*q == '\r')
			st->cr = 1;
		if (st->line.len > 0) {
			if (st->line.len + (q - p) > OLLAMA_EVENT_MAX ||
			    buf_add(&st->line, p, q - p, FIRST) == -1)
				return (fail(st, "a line of the model server's "
				    "stream is too long", out));
			n = st->line.len;
			st->line.len = 0;
			(void)sse_line(st, st->line.b, n, 0, now, out);
		} else
			(void)sse_line(st, p, q - p, 1, now, out);
		p = q + 1;
	}
	if (!st->done && keep(st) == -1)
		return (fail(st, "out of memory", out));
	return (st->done ? -1 : 0);
}

void
ollama_stream_end(struct ollama_stream *st, int64_t now, struct buf *out)
{
	if (st->done)
		return;
	/* an event its last blank line did not end */
	if (st->line.len > 0) {
		(void)sse_line(st, st->line.b, st->line.len, 0, now, out);
		st->line.len = 0;
	}
	if (!st->done)
		(void)dispatch(st, now, out);
	if (st->done)
		return;
	if (st->ended || st->reason[0] != '\0') {
		if (last(st, NULL, now, out) == -1)
			(void)fail(st, "out of memory", out);
		return;
	}
	(void)fail(st, "the model server's answer ended before its end", out);
}

void
ollama_stream_fail(struct ollama_stream *st, const char *msg, struct buf *out)
{
	(void)fail(st, msg, out);
}

/* --- whole answers -------------------------------------------------- */

/* An embedding at p: an array of numbers; how many, p past it. */
static int64_t
check_vector(struct jr *j)
{
	const char	*s;
	size_t		 len;
	int64_t		 n = 0;
	int		 first = 1, r;

	if (jr_open(j, '[') == -1)
		return (-1);
	while ((r = jr_element(j, &first)) == 1) {
		if (jr_number(j, &s, &len) == -1)
			return (-1);
		n++;
	}
	return (r == 0 ? n : -1);
}

/* The next number of a checked vector, as a double (one too long to
 * read is -1: the answer is refused). */
static int
next_number(struct jr *j, int *first, double *x)
{
	const char	*s;
	char		 t[64];
	size_t		 len;

	if (jr_element(j, first) != 1 || jr_number(j, &s, &len) == -1 ||
	    len >= sizeof(t))
		return (-1);
	memcpy(t, s, len);
	t[len] = '\0';
	*x = strtod(t, NULL);
	return (0);
}

/*
 * An embedding (checked) at p onto out: as it is, or, when it is longer
 * than st->dimensions, cut to them and of length 1 again, as Ollama
 * cuts one: twice over the numbers kept (their length, then each over
 * it), nothing held, each written as the shortest that reads back as
 * the same float (Ollama's are float32).
 */
static int
vector(struct ollama_stream *st, struct jr *j, struct buf *out)
{
	struct jr	 at = *j;
	char		 v[32];
	int64_t		 i;
	double		 sum = 0, norm, x;
	float		 f;
	int		 first, prec;

	if (st->dimensions <= 0 || check_vector(j) <= st->dimensions) {
		*j = at;
		return (jr_copy(j, out));
	}
	*j = at;
	first = 1;
	(void)jr_open(j, '[');
	for (i = 0; i < st->dimensions; i++) {
		if (next_number(j, &first, &x) == -1)
			return (-1);
		sum += x * x;
	}
	norm = sqrt(sum);
	*j = at;
	first = 1;
	(void)jr_open(j, '[');
	if (ollama_put(out, "[", 1) == -1)
		return (-1);
	for (i = 0; i < st->dimensions; i++) {
		if (next_number(j, &first, &x) == -1)
			return (-1);
		f = (float)(norm > 0 && isfinite(norm) ? x / norm : 0);
		for (prec = 1; prec < 9; prec++) {
			(void)snprintf(v, sizeof(v), "%.*g", prec, (double)f);
			if ((float)strtod(v, NULL) == f)
				break;
		}
		(void)snprintf(v, sizeof(v), "%.*g", prec, (double)f);
		if ((i > 0 && ollama_put(out, ",", 1) == -1) ||
		    ollama_puts(out, v) == -1)
			return (-1);
	}
	/* past the rest, as check_vector was */
	*j = at;
	(void)check_vector(j);
	return (ollama_put(out, "]", 1));
}

/*
 * The embeddings of an answer: with out NULL, checked (and its usage
 * and error read); else each onto out, comma-separated (only the first
 * for /api/embeddings).  How many, or -1.
 */
static int
embeddings(struct ollama_stream *st, const char *d, size_t len,
    struct said *sd, struct buf *out)
{
	struct jr	 j;
	const char	*k;
	size_t		 klen;
	int		 first = 1, dfirst, ifirst, r, n = 0, found;

	jr_init(&j, d, len);
	if (jr_open(&j, '{') == -1)
		return (-1);
	while ((r = jr_member(&j, &first, &k, &klen)) == 1) {
		if (jr_is(k, klen, "data")) {
			dfirst = 1;
			if (jr_open(&j, '[') == -1)
				return (-1);
			while ((r = jr_element(&j, &dfirst)) == 1) {
				ifirst = 1;
				found = 0;
				if (jr_open(&j, '{') == -1)
					return (-1);
				while ((r = jr_member(&j, &ifirst, &k,
				    &klen)) == 1) {
					if (!jr_is(k, klen, "embedding"))
						r = jr_skip(&j);
					else if (found++ > 0)
						r = -1;
					else if (out == NULL ||
					    (st->api == OLLAMA_EMBEDDINGS &&
					    n > 0))
						r = check_vector(&j) < 0 ?
						    -1 : 0;
					else
						r = (n > 0 && ollama_put(out,
						    ",", 1) == -1) ? -1 :
						    vector(st, &j, out);
					if (r == -1)
						return (-1);
				}
				if (r == -1 || !found)
					return (-1);
				n++;
			}
		} else if (out == NULL && jr_is(k, klen, "usage")) {
			dfirst = JR_OBJECT;
			while ((r = jr_member(&j, &dfirst, &k, &klen)) == 1) {
				r = jr_is(k, klen, "prompt_tokens") ?
				    jr_count(&j, &st->ptok) : jr_skip(&j);
				if (r == -1)
					return (-1);
			}
		} else if (out == NULL && jr_is(k, klen, "error"))
			r = read_error(&j, sd);
		else
			r = jr_skip(&j);
		if (r == -1)
			return (-1);
	}
	if (r == -1)
		return (-1);
	jr_ws(&j);
	if (j.p != j.end)
		return (-1);
	return (n);
}

static int
answer_embeddings(struct ollama_stream *st, const char *d, size_t len,
    int64_t now, struct buf *out)
{
	struct said	 sd;
	int		 n;

	memset(&sd, 0, sizeof(sd));
	if ((n = embeddings(st, d, len, &sd, NULL)) == -1)
		return (fail(st, "the model server's embeddings are not JSON "
		    "as they should be", out));
	if (sd.errored)
		return (fail_said(st, &sd, out));
	if (st->api == OLLAMA_EMBEDDINGS) {
		if (n == 0)
			return (fail(st, "the model server gave no embedding",
			    out));
		if (ollama_puts(out, "{\"embedding\":") == -1 ||
		    embeddings(st, d, len, &sd, out) == -1 ||
		    ollama_puts(out, "}") == -1)
			return (fail(st, "out of memory", out));
		st->done = 1;
		return (0);
	}
	if (ollama_put(out, st->head, st->headlen - 15) == -1 ||
	    ollama_puts(out, ",\"embeddings\":[") == -1 ||
	    embeddings(st, d, len, &sd, out) == -1 ||
	    ollama_puts(out, "]") == -1 || metrics(st, now, out) == -1 ||
	    ollama_puts(out, "}") == -1)
		return (fail(st, "out of memory", out));
	st->done = 1;
	return (0);
}

int
ollama_answer(struct ollama_stream *st, const char *d, size_t len,
    int64_t now, struct buf *out)
{
	struct said	 sd;
	int		 r;

	if (st->done)
		return (-1);
	if (st->api == OLLAMA_EMBED || st->api == OLLAMA_EMBEDDINGS)
		return (answer_embeddings(st, d, len, now, out));
	if ((r = read_chunk(st, d, len, &sd, now, out)) == -2)
		return (-1);
	if (r == -1)
		return (fail(st, "the model server's answer is not JSON as it "
		    "should be", out));
	if (sd.errored)
		return (fail_said(st, &sd, out));
	set_reason(st, &sd.reason);
	if (last(st, &sd, now, out) == -1)
		return (fail(st, "out of memory", out));
	return (0);
}

/* The message of an error answer, as a said (error set or not). */
int
ollama_upstream_error(int status, const char *d, size_t len, struct buf *out)
{
	struct ollama_stream	 st;
	struct said		 sd;
	struct jr		 j;
	const char		*k;
	size_t			 klen;
	int			 first = 1, r;
	char			 msg[64];

	memset(&st, 0, sizeof(st));
	memset(&sd, 0, sizeof(sd));
	if (status < 400 || status > 599)
		status = 502;
	jr_init(&j, d, len);
	/* {"error":{"message":...}}, {"error":"..."}, {"message":"..."},
	 * {"detail":"..."} */
	if (jr_open(&j, '{') == 0) {
		while ((r = jr_member(&j, &first, &k, &klen)) == 1) {
			if (jr_is(k, klen, "error"))
				r = read_error(&j, &sd);
			else if (!sd.error.set && (jr_is(k, klen, "message") ||
			    jr_is(k, klen, "detail"))) {
				jr_ws(&j);
				r = j.p < j.end && *j.p == '"' ?
				    jr_span(&j, &sd.error) : jr_skip(&j);
			} else
				r = jr_skip(&j);
			if (r == -1)
				break;
		}
		jr_ws(&j);
		if (r == 0 && j.p == j.end && sd.error.set &&
		    sd.error.len > 0) {
			(void)fail_said(&st, &sd, out);
			return (status);
		}
	}
	(void)snprintf(msg, sizeof(msg), "the model server answered %d",
	    status);
	(void)ollama_error(out, msg);
	return (status);
}

/* --- the state ------------------------------------------------------ */

void
ollama_stream_init(struct ollama_stream *st, const struct ollama_req *r,
    const char *model, const struct ollama_times *t)
{
	struct buf	 b = { 0 };

	memset(st, 0, sizeof(*st));
	st->api = r->api;
	st->stream = r->stream;
	st->dimensions = r->dimensions;
	st->t = *t;
	st->ptok = st->ctok = -1;
	st->prompt_ns = st->eval_ns = -1;
	st->second = INT64_MIN;
	st->call.index = -1;
	/* {"model":"M","created_at":" (the embeddings answer begins with
	 * all but its last 15 bytes) */
	if (ollama_puts(&b, "{\"model\":") == 0 &&
	    ollama_put_string(&b, model) == 0 &&
	    ollama_puts(&b, ",\"created_at\":\"") == 0 &&
	    b.len + 32 <= sizeof(st->head)) {
		memcpy(st->head, b.b, b.len);
		st->headlen = b.len;
	} else {
		memcpy(st->head, "{\"model\":\"\",\"created_at\":\"", 26);
		st->headlen = 26;
	}
	buf_release(&b, 0);
}

void
ollama_stream_free(struct ollama_stream *st)
{
	buf_release(&st->line, 0);
	buf_release(&st->data, 0);
	buf_release(&st->call.args, 0);
	buf_release(&st->calls, 0);
	buf_release(&st->lp, 0);
}
