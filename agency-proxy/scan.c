/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The fast path of a model request's body: one pass over the bytes that
 * checks them as strict JSON (RFC 8259) and notes the few fields the
 * rules read, so that a body no rule changes goes to the model without
 * ever being built as a json-c tree.
 *
 * It only ever says yes to a body that json-c reads as the same thing
 * and that every other parser reads alike: an object, strict grammar,
 * valid UTF-8, at most SCAN_DEPTH deep, no object with a name twice and
 * no name with an escape (so names compare as bytes), no more than
 * SCAN_KEYS names an object.  And only when the rules' answer can be
 * read off the notes: every message's "content" a string (parts are not
 * looked into here), "model" absent, null or a string without escapes,
 * max_tokens and max_completion_tokens absent, null or integers of at
 * most 15 digits.  Anything else is "no" (0), and the body takes the
 * json-c path, which gives every error.  The fuzzer holds the two paths
 * to the same decisions.
 *
 * Calls: utf8.c.
 */
#include <sys/types.h>

#include <stdint.h>
#include <string.h>

#include "proxy.h"

#define SCAN_DEPTH	32
#define SCAN_KEYS	RSCAN_TOP

struct scanner {
	const unsigned char	*p;
	const unsigned char	*end;
	struct rscan		*rs;
	int			 depth;
};

static int	 scan_value(struct scanner *, int, int);

static void
ws(struct scanner *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' ||
	    *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

static int
hex(unsigned char c)
{
	return ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
	    (c >= 'A' && c <= 'F'));
}

/* A string; *esc is set if it has an escape.  s->p is on the quote. */
static int
scan_string(struct scanner *s, const unsigned char **start, size_t *len,
    int *esc)
{
	const unsigned char	*p = s->p + 1;
	size_t			 n;

	*esc = 0;
	*start = p;
	for (; p < s->end; p++) {
		if (*p == '"') {
			*len = p - *start;
			s->p = p + 1;
			return (1);
		}
		if (*p < 0x20)
			return (0);
		if (*p >= 0x80) {
			if ((n = utf8_seq(p, s->end - p)) == 0)
				return (0);
			p += n - 1;
			continue;
		}
		if (*p != '\\')
			continue;
		*esc = 1;
		if (++p >= s->end)
			return (0);
		switch (*p) {
		case '"': case '\\': case '/': case 'b': case 'f': case 'n':
		case 'r': case 't':
			break;
		case 'u':
			/* escaped surrogates: json-c's reading of a lone one
			 * is its own; leave them to it */
			if (s->end - p < 5 || !hex(p[1]) || !hex(p[2]) ||
			    !hex(p[3]) || !hex(p[4]) ||
			    ((p[1] == 'd' || p[1] == 'D') && p[2] >= '8'))
				return (0);
			p += 4;
			break;
		default:
			return (0);
		}
	}
	return (0);
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? ; *integer: no . or e */
static int
scan_number(struct scanner *s, int *integer)
{
	const unsigned char	*p = s->p, *e = s->end;

	*integer = 1;
	if (p < e && *p == '-')
		p++;
	if (p >= e)
		return (0);
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	else
		return (0);
	if (p < e && *p == '.') {
		*integer = 0;
		if (++p >= e || *p < '0' || *p > '9')
			return (0);
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		*integer = 0;
		if (++p < e && (*p == '+' || *p == '-'))
			p++;
		if (p >= e || *p < '0' || *p > '9')
			return (0);
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	s->p = p;
	return (1);
}

static int
word(struct scanner *s, const char *w, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0)
		return (0);
	s->p += n;
	return (1);
}

/* A count for max_tokens and the like: null, or a short integer >= 0. */
static int
count(const unsigned char *v, size_t n, int64_t *out)
{
	int64_t	 x = 0;
	size_t	 i;

	if (n == 4 && memcmp(v, "null", 4) == 0) {
		*out = -1;
		return (1);
	}
	if (n == 0 || n > 15)
		return (0);
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return (0);
		x = x * 10 + (v[i] - '0');
	}
	*out = x;
	return (1);
}

enum {
	CTX_OTHER,
	CTX_TOP,		/* the body itself */
	CTX_MESSAGES,		/* the top "messages" array */
	CTX_MESSAGE,		/* an object in it */
};

/* The top object's names of note, and what their values say. */
static int
note_top(struct scanner *s, const unsigned char *k, size_t klen,
    const unsigned char *v, int esc)
{
	struct rscan	*rs = s->rs;
	size_t		 n = s->p - v;

	if (klen == 5 && memcmp(k, "model", 5) == 0) {
		if (n == 4 && memcmp(v, "null", 4) == 0)
			return (1);
		if (*v != '"' || esc || n - 2 >= sizeof(rs->model))
			return (0);
		/* no NUL in it: raw bytes < 0x20 are refused, escapes too */
		memcpy(rs->model, v + 1, n - 2);
		rs->model[n - 2] = '\0';
		rs->has_model = 1;
	} else if (klen == 6 && memcmp(k, "stream", 6) == 0)
		rs->stream = n == 4 && memcmp(v, "true", 4) == 0;
	else if (klen == 10 && memcmp(k, "max_tokens", 10) == 0)
		return (count(v, n, &rs->max_tokens));
	else if (klen == 21 && memcmp(k, "max_completion_tokens", 21) == 0)
		return (count(v, n, &rs->max_completion_tokens));
	return (1);
}

/*
 * After a member or an element: the closing bracket (1, consumed), or a
 * comma and the next one follows (0), or anything else (-1).
 */
static int
after(struct scanner *s, int close)
{
	ws(s);
	if (s->p >= s->end)
		return (-1);
	if (*s->p == close) {
		s->p++;
		return (1);
	}
	if (*s->p != ',')
		return (-1);
	s->p++;
	ws(s);
	return (0);
}

static int
scan_object(struct scanner *s, int ctx)
{
	const unsigned char	*keys[SCAN_KEYS], *k, *v;
	size_t			 klens[SCAN_KEYS], klen, nkeys = 0, i;
	int			 esc, vesc, sub, r;

	s->p++;		/* { */
	ws(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		return (1);
	}
	for (;;) {
		if (s->p >= s->end || *s->p != '"' ||
		    !scan_string(s, &k, &klen, &esc) || esc ||
		    nkeys == SCAN_KEYS)
			return (0);
		for (i = 0; i < nkeys; i++)
			if (klens[i] == klen && memcmp(keys[i], k, klen) == 0)
				return (0);
		keys[nkeys] = k;
		klens[nkeys++] = klen;
		ws(s);
		if (s->p >= s->end || *s->p != ':')
			return (0);
		s->p++;
		ws(s);
		sub = CTX_OTHER;
		if (ctx == CTX_TOP && klen == 8 && memcmp(k, "messages", 8) == 0)
			sub = CTX_MESSAGES;
		v = s->p;
		vesc = 0;
		if (s->p < s->end && *s->p == '"') {
			const unsigned char	*t;
			size_t			 tl;

			if (!scan_string(s, &t, &tl, &vesc))
				return (0);
		} else if (!scan_value(s, sub, 0))
			return (0);
		if (ctx == CTX_TOP) {
			/* names the rules look for by path: see rules_fast;
			 * SCAN_KEYS keeps them within RSCAN_TOP */
			if (!note_top(s, k, klen, v, vesc))
				return (0);
			s->rs->top[s->rs->ntop] = (const char *)k;
			s->rs->toplen[s->rs->ntop++] = klen;
		}
		/* a message whose content is not a string has parts */
		if (ctx == CTX_MESSAGE && klen == 7 &&
		    memcmp(k, "content", 7) == 0 && *v != '"' &&
		    !(s->p - v == 4 && memcmp(v, "null", 4) == 0))
			return (0);
		/* "messages" itself must be an array for the rules */
		if (sub == CTX_MESSAGES && *v != '[')
			return (0);
		if ((r = after(s, '}')) != 0)
			return (r == 1);
	}
}

static int
scan_array(struct scanner *s, int ctx)
{
	int	 r;

	s->p++;		/* [ */
	ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		return (1);
	}
	for (;;) {
		if (!scan_value(s, ctx == CTX_MESSAGES ? CTX_MESSAGE :
		    CTX_OTHER, 1))
			return (0);
		if ((r = after(s, ']')) != 0)
			return (r == 1);
	}
}

/* A value; ctx says where it is.  In an array, ctx applies to objects
 * (CTX_MESSAGE); elsewhere to what the value is. */
static int
scan_value(struct scanner *s, int ctx, int inarray)
{
	const unsigned char	*t;
	size_t			 tl;
	int			 esc, integer, r;

	if (s->p >= s->end)
		return (0);
	switch (*s->p) {
	case '{':
		if (++s->depth > SCAN_DEPTH)
			return (0);
		r = scan_object(s, inarray && ctx == CTX_MESSAGE ?
		    CTX_MESSAGE : ctx == CTX_TOP ? CTX_TOP : CTX_OTHER);
		s->depth--;
		return (r);
	case '[':
		if (++s->depth > SCAN_DEPTH)
			return (0);
		r = scan_array(s, inarray ? CTX_OTHER : ctx);
		s->depth--;
		return (r);
	case '"':
		return (scan_string(s, &t, &tl, &esc));
	case 't':
		return (word(s, "true", 4));
	case 'f':
		return (word(s, "false", 5));
	case 'n':
		return (word(s, "null", 4));
	default:
		return (scan_number(s, &integer));
	}
}

/* The body as strict JSON: an object, with the rules' checks and notes
 * (CTX_TOP) or without them (CTX_OTHER). */
static int
scan(const char *buf, size_t len, struct rscan *rs, int ctx)
{
	struct scanner	 s;

	memset(rs, 0, sizeof(*rs));
	rs->max_tokens = rs->max_completion_tokens = -1;
	s.p = (const unsigned char *)buf;
	s.end = s.p + len;
	s.rs = rs;
	s.depth = 0;
	ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return (0);
	if (!scan_value(&s, ctx, 0))
		return (0);
	ws(&s);
	return (s.p == s.end);
}

/*
 * 1 with rs filled in when buf[0..len) may take the fast path (see
 * above); 0 when it must be parsed by json-c.  UTF-8 is checked in
 * strings, where alone bytes >= 0x80 are taken.
 */
int
rules_scan(const char *buf, size_t len, struct rscan *rs)
{
	return (scan(buf, len, rs, CTX_TOP));
}

/*
 * Whether a body json-c took (it is an object) can go to the model as
 * its own bytes when no rule changed it: the same strict JSON as the
 * fast path, without the rules' conditions.  Not when json-c was lenient
 * (comments, single quotes, NaN, raw control characters in strings),
 * nor when an object has a name twice (json-c kept the last; a parser
 * that keeps the first would see a value the rules never looked at) or
 * a name with an escape (two spellings of one name).
 */
int
rules_plain(const char *buf, size_t len)
{
	struct rscan	 rs;

	return (scan(buf, len, &rs, CTX_OTHER));
}

/* Whether the top object has a name, the first part of path. */
int
rscan_has(const struct rscan *rs, const char *path)
{
	size_t	 i, n;
	const char *dot;

	n = (dot = strchr(path, '.')) != NULL ? (size_t)(dot - path) :
	    strlen(path);
	for (i = 0; i < rs->ntop; i++)
		if (rs->toplen[i] == n && memcmp(rs->top[i], path, n) == 0)
			return (1);
	return (0);
}
