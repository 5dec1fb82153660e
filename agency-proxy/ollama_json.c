/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The JSON reader of the model server's answers (ollama_json.h), for
 * ollama_stream.c: one pass over the bytes, no tree.  json-c builds a
 * tree of every chunk (about 9 us for a 250-byte one here, some forty
 * times the cost of passing the chunk on as it is).  A string that goes
 * into a line (a text, a tool call's parts, logprobs, an error's
 * message) is checked as strict JSON (escapes, UTF-8, no control
 * character) and is copied as the server wrote it, never unescaped and
 * escaped again; the strings passed over (ids, names of members, the
 * model's path) are only read to their closing quote, which was a third
 * of the cost.
 *
 * Calls: ollama_out.c, scan.c (scan_digits, scan_json_number), utf8.c,
 * buf.c, common/sha256.c (hex_value).
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

/* A reader over len bytes at d (an empty buffer's d may be NULL). */
void
jr_init(struct jr *j, const char *d, size_t len)
{
	j->p = len > 0 ? (const unsigned char *)d :
	    (const unsigned char *)"";
	j->end = j->p + len;
	j->depth = 0;
	j->copying = 0;
}


/* The bytes that end a run of plain string bytes: a quote, a
 * backslash, a control character, the first of a UTF-8 sequence. */
static const unsigned char	 special[256] = {
	[0x00 ... 0x1f] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xff] = 1,
};

/*
 * A string at p (its quote) that is not passed on (a name compared, a
 * value passed over): only its end found, the first quote that no
 * backslash escapes.  Its bytes in *s (*len), p past it.
 */
static inline int
jr_pass(struct jr *j, const char **s, size_t *len)
{
	const unsigned char	*q, *b, *from = j->p + 1;

	if (j->p >= j->end || *j->p != '"')
		return (-1);
	for (;;) {
		if ((q = memchr(from, '"', j->end - from)) == NULL)
			return (-1);
		for (b = q; b > j->p + 1 && b[-1] == '\\'; b--)
			;
		if ((q - b) % 2 == 0)
			break;
		from = q + 1;
	}
	*s = (const char *)j->p + 1;
	*len = q - j->p - 1;
	j->p = q + 1;
	return (0);
}

/* A string at p (its quote) that is passed on: strict JSON (escapes,
 * UTF-8, no control character).  Its bytes in *s (*len), p past it. */
static inline int
jr_string(struct jr *j, const char **s, size_t *len)
{
	const unsigned char	*p = j->p + 1, *e = j->end;
	size_t			 n;

	if (j->p >= e || *j->p != '"')
		return (-1);
	while (p < e) {
		/* four plain bytes a step, where they are */
		while (e - p >= 4 && !(special[p[0]] | special[p[1]] |
		    special[p[2]] | special[p[3]]))
			p += 4;
		while (p < e && !special[*p])
			p++;
		if (p >= e)
			break;
		if (*p == '"') {
			*s = (const char *)j->p + 1;
			*len = p - j->p - 1;
			j->p = p + 1;
			return (0);
		}
		if (*p == '\\') {
			if (e - p < 2)
				return (-1);
			switch (p[1]) {
			case '"': case '\\': case '/': case 'b': case 'f':
			case 'n': case 'r': case 't':
				p += 2;
				break;
			case 'u':
				if (e - p < 6 || hex_value(p[2]) == -1 ||
				    hex_value(p[3]) == -1 ||
				    hex_value(p[4]) == -1 || hex_value(p[5]) == -1)
					return (-1);
				p += 6;
				break;
			default:
				return (-1);
			}
		} else if (*p < 0x20)
			return (-1);
		else if (*p >= 0x80) {
			if ((n = utf8_seq(p, e - p)) == 0)
				return (-1);
			p += n;
		} else
			p++;
	}
	return (-1);
}

/* A JSON number (scan_json_number's grammar): s and len its bytes. */
int
jr_number(struct jr *j, const char **s, size_t *len)
{
	const unsigned char	*p;
	int			 integer;

	if ((p = scan_json_number(j->p, j->end, &integer)) == NULL)
		return (-1);
	*s = (const char *)j->p;
	*len = p - j->p;
	j->p = p;
	return (0);
}

static int
jr_word(struct jr *j, const char *w)
{
	size_t	 n = strlen(w);

	if ((size_t)(j->end - j->p) < n || memcmp(j->p, w, n) != 0)
		return (-1);
	j->p += n;
	return (0);
}

/* Whether the value at p is null (then p is past it). */
int
jr_null(struct jr *j)
{
	jr_ws(j);
	return (j->p < j->end && *j->p == 'n' && jr_word(j, "null") == 0);
}

/* Into an object or array: p past its opening byte. */
int
jr_open(struct jr *j, unsigned char c)
{
	jr_ws(j);
	if (j->p >= j->end || *j->p != c || ++j->depth > OLLAMA_DEPTH)
		return (-1);
	j->p++;
	return (0);
}

/*
 * The next member of an object (*first: none read yet; JR_OBJECT: p is
 * on the object, or on a null, which has none): 1 with its name, p on
 * its value; 0 past the closing brace (or the null); -1 when not JSON.
 */
int
jr_member(struct jr *j, int *first, const char **k, size_t *klen)
{
	if (*first == JR_OBJECT) {
		if (jr_null(j))
			return (0);
		if (jr_open(j, '{') == -1)
			return (-1);
		*first = 1;
	}
	jr_ws(j);
	if (j->p >= j->end)
		return (-1);
	if (*j->p == '}') {
		j->p++;
		j->depth--;
		return (0);
	}
	if (!*first) {
		if (*j->p++ != ',')
			return (-1);
		jr_ws(j);
	}
	*first = 0;
	if ((j->copying ? jr_string(j, k, klen) : jr_pass(j, k, klen)) == -1)
		return (-1);
	jr_ws(j);
	if (j->p >= j->end || *j->p++ != ':')
		return (-1);
	jr_ws(j);
	return (1);
}

/* The next element of an array: 1 with p on it, 0 past the closing
 * bracket, -1. */
int
jr_element(struct jr *j, int *first)
{
	jr_ws(j);
	if (j->p >= j->end)
		return (-1);
	if (*j->p == ']') {
		j->p++;
		j->depth--;
		return (0);
	}
	if (!*first && *j->p++ != ',')
		return (-1);
	*first = 0;
	jr_ws(j);
	return (1);
}

int
jr_is(const char *k, size_t klen, const char *w)
{
	return (klen == strlen(w) && memcmp(k, w, klen) == 0);
}

/* Any value, p past it. */
int
jr_skip(struct jr *j)
{
	const char	*s;
	size_t		 len;
	int		 first = 1, r;

	jr_ws(j);
	if (j->p >= j->end)
		return (-1);
	switch (*j->p) {
	case '"':
		return (jr_pass(j, &s, &len));
	case '{':
		if (jr_open(j, '{') == -1)
			return (-1);
		while ((r = jr_member(j, &first, &s, &len)) == 1)
			if (jr_skip(j) == -1)
				return (-1);
		return (r);
	case '[':
		if (jr_open(j, '[') == -1)
			return (-1);
		while ((r = jr_element(j, &first)) == 1)
			if (jr_skip(j) == -1)
				return (-1);
		return (r);
	case 't':
		return (jr_word(j, "true"));
	case 'f':
		return (jr_word(j, "false"));
	case 'n':
		return (jr_word(j, "null"));
	default:
		return (jr_number(j, &s, &len));
	}
}

static int	 jr_copy_in(struct jr *, struct buf *);

/* Any value, strict, onto out without the white space between its
 * tokens. */
int
jr_copy(struct jr *j, struct buf *out)
{
	int	 was = j->copying, r;

	j->copying = 1;
	r = jr_copy_in(j, out);
	j->copying = was;
	return (r);
}

static int
jr_copy_in(struct jr *j, struct buf *out)
{
	const unsigned char	*from;
	const char		*s;
	size_t			 len, n = 0;
	int			 first = 1, r;

	jr_ws(j);
	if (j->p >= j->end)
		return (-1);
	switch (*j->p) {
	case '{':
		if (jr_open(j, '{') == -1 || ollama_put(out, "{", 1) == -1)
			return (-1);
		while ((r = jr_member(j, &first, &s, &len)) == 1)
			if ((n++ > 0 && ollama_put(out, ",", 1) == -1) ||
			    ollama_put(out, "\"", 1) == -1 ||
			    ollama_put(out, s, len) == -1 ||
			    ollama_put(out, "\":", 2) == -1 ||
			    jr_copy_in(j, out) == -1)
				return (-1);
		return (r == 0 ? ollama_put(out, "}", 1) : -1);
	case '[':
		if (jr_open(j, '[') == -1 || ollama_put(out, "[", 1) == -1)
			return (-1);
		while ((r = jr_element(j, &first)) == 1)
			if ((n++ > 0 && ollama_put(out, ",", 1) == -1) ||
			    jr_copy_in(j, out) == -1)
				return (-1);
		return (r == 0 ? ollama_put(out, "]", 1) : -1);
	default:
		from = j->p;
		if ((*j->p == '"' ? jr_string(j, &s, &len) : jr_skip(j)) == -1)
			return (-1);
		return (ollama_put(out, (const char *)from, j->p - from));
	}
}

/* A string or null into sp. */
int
jr_span(struct jr *j, struct span *sp)
{
	if (jr_null(j)) {
		sp->set = 0;
		return (0);
	}
	if (jr_string(j, &sp->s, &sp->len) == -1)
		return (-1);
	sp->set = 1;
	return (0);
}

/* A count (an integer >= 0 of at most 18 digits) into *v; anything
 * else is read and leaves *v as it was. */
int
jr_count(struct jr *j, int64_t *v)
{
	const char	*s;
	size_t		 len;

	jr_ws(j);
	if (j->p >= j->end || *j->p < '0' || *j->p > '9')
		return (jr_skip(j));
	if (jr_number(j, &s, &len) == -1)
		return (-1);
	(void)scan_digits(s, len, 18, v);
	return (0);
}

/* A number of milliseconds into *ns; anything else leaves it. */
int
jr_ms(struct jr *j, int64_t *ns)
{
	const char	*s;
	char		 t[64];
	size_t		 len;
	double		 d;

	jr_ws(j);
	if (j->p >= j->end || (*j->p != '-' && (*j->p < '0' || *j->p > '9')))
		return (jr_skip(j));
	if (jr_number(j, &s, &len) == -1)
		return (-1);
	if (len >= sizeof(t))
		return (0);
	memcpy(t, s, len);
	t[len] = '\0';
	d = strtod(t, NULL);
	if (isfinite(d) && d >= 0 && d < 9e12)
		*ns = (int64_t)llround(d * 1e6);
	return (0);
}

/* --- tool calls ----------------------------------------------------- */

/* The four hex digits at p (checked by jr_string). */
static unsigned int
u4(const char *p)
{
	return ((unsigned int)(hex_value(p[0]) << 12 | hex_value(p[1]) << 8 |
	    hex_value(p[2]) << 4 | hex_value(p[3])));
}

/* The string bytes s (checked by jr_string) unescaped onto b, up to
 * max bytes in all: -1 when over, or a lone surrogate. */
int
jr_unescape(struct buf *b, const char *s, size_t len, size_t max)
{
	const char	*e = s + len, *run;
	unsigned char	 u[4];
	unsigned int	 c, lo;
	size_t		 n;

	while (s < e) {
		for (run = s; s < e && *s != '\\'; s++)
			;
		if (s > run && (b->len + (s - run) > max ||
		    buf_add(b, run, s - run, FIRST) == -1))
			return (-1);
		if (s >= e)
			break;
		switch (s[1]) {
		case 'b': c = '\b'; break;
		case 'f': c = '\f'; break;
		case 'n': c = '\n'; break;
		case 'r': c = '\r'; break;
		case 't': c = '\t'; break;
		case 'u':
			c = u4(s + 2);
			if (c >= 0xdc00 && c <= 0xdfff)
				return (-1);
			if (c >= 0xd800 && c <= 0xdbff) {
				if (e - s < 12 || s[6] != '\\' || s[7] != 'u' ||
				    (lo = u4(s + 8)) < 0xdc00 || lo > 0xdfff)
					return (-1);
				c = 0x10000 + ((c - 0xd800) << 10) +
				    (lo - 0xdc00);
				s += 6;
			}
			s += 4;
			break;
		default:
			c = (unsigned char)s[1];
			break;
		}
		s += 2;
		if (c < 0x80) {
			u[0] = (unsigned char)c;
			n = 1;
		} else if (c < 0x800) {
			u[0] = (unsigned char)(0xc0 | c >> 6);
			u[1] = (unsigned char)(0x80 | (c & 0x3f));
			n = 2;
		} else if (c < 0x10000) {
			u[0] = (unsigned char)(0xe0 | c >> 12);
			u[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
			u[2] = (unsigned char)(0x80 | (c & 0x3f));
			n = 3;
		} else {
			u[0] = (unsigned char)(0xf0 | c >> 18);
			u[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
			u[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
			u[3] = (unsigned char)(0x80 | (c & 0x3f));
			n = 4;
		}
		if (b->len + n > max || buf_add(b, u, n, FIRST) == -1)
			return (-1);
	}
	return (0);
}
