/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * HTTP/1.x messages (RFC 9112, RFC 9110): the header block of a request
 * or a response (parse, its rules above it), and the chunked transfer
 * coding.  The bytes come from the network and may be anything: every
 * byte is checked against the grammar and nothing is read past the
 * length given.
 *
 * Calls: none (fuzz_h1 links it alone).
 */
#include <sys/types.h>

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "h1.h"

#define MAX_EMPTY	8	/* empty lines skipped before a request */
#define MAX_LINE	4096	/* a chunk size or trailer line */

/* The character classes of a byte. */
#define C_TCHAR		0x01	/* token: method, field name */
#define C_FIELD		0x02	/* field value: HTAB SP VCHAR obs-text */
#define C_TARGET	0x04	/* request target: VCHAR */

static const unsigned char	 cls[256] = {
	0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0,	/* 00 */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,	/* 10 */
	2, 7, 6, 7, 7, 7, 7, 7, 6, 6, 7, 7, 6, 7, 7, 6,	/* 20 */
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6, 6,	/* 30 */
	6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,	/* 40 */
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 7, 7,	/* 50 */
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,	/* 60 */
	7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 7, 6, 7, 0,	/* 70 */
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,	/* 80 */
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,	/* 90 */
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,	/* a0 */
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,	/* b0 */
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,	/* c0 */
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,	/* d0 */
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,	/* e0 */
	2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2,	/* f0 */
};

#define IS(c, k)	(cls[(unsigned char)(c)] & (k))
#define OWS(c)		((c) == ' ' || (c) == '\t')
#define DIGIT(c)	((unsigned char)((c) - '0') < 10)

/* What the fields say, beyond struct h1_msg. */
struct fstate {
	int	 close;		/* Connection lists close */
	int	 keepalive;	/* Connection lists keep-alive */
	int	 nhost;
	int	 nte;		/* Transfer-Encoding fields */
};

static int	 lower(int);
static int	 icase(const char *, const char *, size_t);
static int	 ieq(const char *, const char *, size_t);
static int	 version(const char *, const char *);
static int	 request_line(struct h1_msg *, const char *, const char *);
static int	 status_line(struct h1_msg *, const char *, const char *);
static int	 field_line(struct h1_msg *, struct fstate *, const char *,
		    const char *, int);
static int	 known_field(struct h1_msg *, struct fstate *,
		    const struct h1_header *, int);
static int	 content_length(struct h1_msg *, const char *, size_t);
static int	 transfer_encoding(struct h1_msg *, const char *, size_t);
static int	 parse(const char *, size_t, size_t, struct h1_msg *, int);
static void	 size_line_end(struct h1_chunked *);
static int	 eol(struct h1_chunked *, unsigned int, int);
static int	 size_byte(struct h1_chunked *, unsigned int);
static int	 tail_byte(struct h1_chunked *, unsigned int);

static int
lower(int c)
{
	return (c >= 'A' && c <= 'Z' ? c | 0x20 : c);
}

/* Whether a and b (n bytes each) differ only in ASCII case. */
static int
icase(const char *a, const char *b, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (lower((unsigned char)a[i]) != lower((unsigned char)b[i]))
			return (0);
	return (1);
}

/* Whether a (n bytes) is b, a lower-case string, ignoring ASCII case. */
static int
ieq(const char *a, const char *b, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (lower((unsigned char)a[i]) != (unsigned char)b[i])
			return (0);
	return (1);
}

/*
 * The minor version of "HTTP/1.x" from p to e (0 or 1), -505 for another
 * well-formed HTTP/DIGIT.DIGIT, -400 for anything else.
 */
static int
version(const char *p, const char *e)
{
	if (e - p != 8 || memcmp(p, "HTTP/", 5) != 0 || !DIGIT(p[5]) ||
	    p[6] != '.' || !DIGIT(p[7]))
		return (-400);
	if (p[5] != '1' || (p[7] != '0' && p[7] != '1'))
		return (-505);
	return (p[7] - '0');
}

/* method SP request-target SP HTTP-version, from p to e (its end). */
static int
request_line(struct h1_msg *m, const char *p, const char *e)
{
	const char	*s;
	int		 minor;

	for (s = p; p < e && IS(*p, C_TCHAR); p++)
		;
	if (p == s || p == e || *p != ' ')
		return (-400);
	m->method = s;
	m->methodlen = p - s;

	for (s = ++p; p < e && IS(*p, C_TARGET); p++)
		;
	if (p == s || p == e || *p != ' ')
		return (-400);
	m->target = s;
	m->targetlen = p - s;

	if ((minor = version(p + 1, e)) < 0)
		return (minor);
	m->minor = minor;
	return (0);
}

/* HTTP-version SP 3DIGIT [ SP reason-phrase ], from p to e. */
static int
status_line(struct h1_msg *m, const char *p, const char *e)
{
	const char	*s;
	int		 minor;

	if (e - p < 12 || (minor = version(p, p + 8)) < 0 || p[8] != ' ' ||
	    !DIGIT(p[9]) || p[9] == '0' || !DIGIT(p[10]) || !DIGIT(p[11]))
		return (-400);
	m->minor = minor;
	m->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
	p += 12;
	if (p == e) {
		m->reason = p;
		m->reasonlen = 0;
		return (0);
	}
	if (*p++ != ' ')
		return (-400);
	for (s = p; p < e; p++)
		if (!IS(*p, C_FIELD))
			return (-400);
	m->reason = s;
	m->reasonlen = e - s;
	return (0);
}

/* field-name ":" OWS field-value OWS, from p to e. */
static int
field_line(struct h1_msg *m, struct fstate *fs, const char *p,
    const char *e, int request)
{
	struct h1_header	*h;
	const char		*s;

	/* No obs-fold: a field line starts with its name. */
	for (s = p; p < e && IS(*p, C_TCHAR); p++)
		;
	if (p == s || p == e || *p != ':')
		return (-400);
	if (m->nheaders == H1_MAX_HEADERS)
		return (-431);
	h = &m->headers[m->nheaders];
	h->name = s;
	h->namelen = p - s;

	for (p++; p < e && OWS(*p); p++)
		;
	for (s = p; p < e; p++)
		if (!IS(*p, C_FIELD))
			return (-400);
	while (p > s && OWS(p[-1]))
		p--;
	h->value = s;
	h->valuelen = p - s;
	m->nheaders++;
	return (known_field(m, fs, h, request));
}

/* What a field that bears on the framing or the connection says. */
static int
known_field(struct h1_msg *m, struct fstate *fs, const struct h1_header *h,
    int request)
{
	switch (h->namelen) {
	case 4:
		if (request && ieq(h->name, "host", 4) && ++fs->nhost > 1)
			return (-400);
		break;
	case 6:
		if (request && ieq(h->name, "expect", 6) &&
		    h->valuelen == 12 && ieq(h->value, "100-continue", 12))
			m->expect_continue = 1;
		break;
	case 10:
		if (ieq(h->name, "connection", 10)) {
			if (h1_has_token(h->value, h->valuelen, "close"))
				fs->close = 1;
			if (h1_has_token(h->value, h->valuelen, "keep-alive"))
				fs->keepalive = 1;
		}
		break;
	case 14:
		if (ieq(h->name, "content-length", 14))
			return (content_length(m, h->value, h->valuelen));
		break;
	case 17:
		if (!ieq(h->name, "transfer-encoding", 17))
			break;
		if (request && ++fs->nte > 1)
			return (-400);
		return (transfer_encoding(m, h->value, h->valuelen));
	}
	return (0);
}

/* Content-Length = 1*DIGIT, the same in every field of that name. */
static int
content_length(struct h1_msg *m, const char *v, size_t n)
{
	int64_t	 cl = 0;
	size_t	 i;
	int	 d;

	if (n == 0)
		return (-400);
	for (i = 0; i < n; i++) {
		if (!DIGIT(v[i]))
			return (-400);
		d = v[i] - '0';
		if (cl > (INT64_MAX - d) / 10)
			return (-400);
		cl = cl * 10 + d;
	}
	if (m->ncontent_length > 0 && m->content_length != cl)
		return (-400);
	m->content_length = cl;
	if (m->ncontent_length < INT_MAX)
		m->ncontent_length++;
	return (0);
}

/*
 * Transfer-Encoding = 1#transfer-coding: chunked when the last one is.
 * Empty elements of the list are skipped, as RFC 9110 5.6.1 has it.
 */
static int
transfer_encoding(struct h1_msg *m, const char *v, size_t n)
{
	const char	*p = v, *e = v + n, *s, *t, *last = NULL;
	size_t		 lastlen = 0;

	while (p < e) {
		for (s = p; p < e && *p != ','; p++)
			;
		for (t = p; s < t && OWS(*s); s++)
			;
		while (t > s && OWS(t[-1]))
			t--;
		if (t > s) {
			last = s;
			lastlen = t - s;
		}
		if (p < e)
			p++;
	}
	if (last == NULL)
		return (-400);
	m->te = 1;
	m->chunked = lastlen == 7 && ieq(last, "chunked", 7);
	return (0);
}

/*
 * The header block is taken a line at a time, each line found with
 * memchr() inside the first max bytes and then checked once.  A line is
 * only looked at when its LF is in the buffer, so an incomplete block
 * gives 0 for every prefix of a valid one; errors in the lines that are
 * complete are reported at once.
 *
 * The rules, each refused with -400 unless said otherwise:
 *  - A line ends in CRLF or a bare LF; a CR anywhere else is refused
 *    (no rule below lets a CR through).
 *  - A request may be preceded by up to MAX_EMPTY empty lines, which are
 *    skipped and counted in the block's length; a response may not.
 *  - Request line: method SP target SP version, one SP each; the method
 *    1+ tchar, the target 1+ bytes in 0x21-0x7e.  The version is
 *    HTTP/1.0 or HTTP/1.1; another well-formed HTTP/DIGIT.DIGIT is -505.
 *  - Status line: HTTP/1.0 or HTTP/1.1 (nothing else, not even -505),
 *    SP, three digits from 100 to 999, then nothing, or SP and a reason
 *    of HTAB, SP, VCHAR and obs-text.  The reason may be empty; when it
 *    is absent, reason points just past the code, with reasonlen 0.
 *  - Field line: name (1+ tchar), ':' right after it, then the value;
 *    the value's bytes are HTAB, SP, VCHAR or obs-text and its leading
 *    and trailing SP and HTAB are not part of it.  A line that starts
 *    with SP or HTAB (obs-fold) is refused.  Over H1_MAX_HEADERS
 *    fields is -431.
 *  - A block over max bytes is -431 as soon as the first max bytes hold
 *    no end of it, even when the input stops there: a caller that reads
 *    at most max bytes still gets an answer.  max is capped at INT_MAX.
 *  - Content-Length: 1+ DIGIT, at most INT64_MAX.  Repeated fields must
 *    agree; ncontent_length counts them and the caller decides.
 *  - Transfer-Encoding: a list of 1+ codings (an empty list is refused);
 *    chunked when the last coding of the last field is "chunked".  For
 *    a request, Transfer-Encoding on HTTP/1.0, with Content-Length, or
 *    in more than one field is refused (request smuggling: two parties
 *    could read the fields differently), and one that does not end in
 *    chunked is -501.  For a response Content-Length is then ignored (-1); one
 *    that does not end in chunked is read until the connection closes,
 *    and keepalive is 0 then, as it is for a response with both fields.
 *  - More than one Host field in a request is refused (RFC 9112 3.2);
 *    whether a missing one is an error is the caller's to decide.
 *  - keepalive: HTTP/1.1 unless any Connection field lists "close";
 *    HTTP/1.0 only when one lists "keep-alive" and none "close".
 *  - expect_continue: a request of HTTP/1.1 with an Expect field whose
 *    whole value is "100-continue" (RFC 9110 10.1.1: an HTTP/1.0
 *    client's expectation is ignored).
 * On an error m holds whatever was parsed before it.
 */
static int
parse(const char *buf, size_t len, size_t max, struct h1_msg *m,
    int request)
{
	struct fstate	 fs = { 0, 0, 0, 0 };
	const char	*p, *e, *lf, *eol;
	int		 empty = 0, r;

	m->method = m->target = m->reason = NULL;
	m->methodlen = m->targetlen = m->reasonlen = 0;
	m->status = 0;
	m->minor = 0;
	m->nheaders = 0;
	m->content_length = -1;
	m->ncontent_length = 0;
	m->chunked = m->te = m->keepalive = m->expect_continue = 0;

	if (max > INT_MAX)
		max = INT_MAX;
	p = buf;
	e = buf + (len < max ? len : max);

	/* The start line, after the empty lines a request may have. */
	for (;;) {
		if ((lf = memchr(p, '\n', (size_t)(e - p))) == NULL)
			return (len >= max ? -431 : 0);
		eol = lf > p && lf[-1] == '\r' ? lf - 1 : lf;
		if (eol > p)
			break;
		if (!request || ++empty > MAX_EMPTY)
			return (-400);
		p = lf + 1;
	}
	if (request)
		r = request_line(m, p, eol);
	else
		r = status_line(m, p, eol);
	if (r != 0)
		return (r);

	/* The field lines, up to the empty line. */
	for (;;) {
		p = lf + 1;
		if ((lf = memchr(p, '\n', (size_t)(e - p))) == NULL)
			return (len >= max ? -431 : 0);
		eol = lf > p && lf[-1] == '\r' ? lf - 1 : lf;
		if (eol == p)
			break;
		if ((r = field_line(m, &fs, p, eol, request)) != 0)
			return (r);
	}

	if (m->minor == 1)
		m->keepalive = !fs.close;
	else
		m->keepalive = fs.keepalive && !fs.close;
	if (request) {
		if (m->te) {
			if (m->minor == 0 || m->ncontent_length > 0)
				return (-400);
			if (!m->chunked)
				return (-501);
		}
		if (m->minor == 0)
			m->expect_continue = 0;
	} else if (m->te) {
		if (!m->chunked || m->ncontent_length > 0)
			m->keepalive = 0;
		m->content_length = -1;
	}
	return ((int)(lf + 1 - buf));
}

int
h1_parse_request(const char *buf, size_t len, size_t max, struct h1_msg *m)
{
	return (parse(buf, len, max, m, 1));
}

int
h1_parse_response(const char *buf, size_t len, size_t max, struct h1_msg *m)
{
	return (parse(buf, len, max, m, 0));
}

const struct h1_header *
h1_find(const struct h1_msg *m, const char *name)
{
	const struct h1_header	*h;
	size_t			 i, n = strlen(name);

	for (i = 0; i < m->nheaders; i++) {
		h = &m->headers[i];
		if (h->namelen == n && icase(h->name, name, n))
			return (h);
	}
	return (NULL);
}

/* Whether the list v (n bytes) has an element that is the tlen bytes of
 * token, any case. */
static int
lists(const char *v, size_t n, const char *token, size_t tlen)
{
	const char	*p = v, *e = v + n, *s, *t;

	while (p < e) {
		for (s = p; p < e && *p != ','; p++)
			;
		for (t = p; s < t && OWS(*s); s++)
			;
		while (t > s && OWS(t[-1]))
			t--;
		if ((size_t)(t - s) == tlen && icase(s, token, tlen))
			return (1);
		if (p < e)
			p++;
	}
	return (0);
}

/* Whether the list v (n bytes) has an element that is token, any case. */
int
h1_has_token(const char *v, size_t n, const char *token)
{
	return (lists(v, n, token, strlen(token)));
}

/* Not passed on, either way (RFC 9110 7.6.1), or set by a proxy. */
#define HOP(s)	{ s, sizeof(s) - 1 }
static const struct {
	const char	*name;
	size_t		 len;
} hop_fields[] = {
	HOP("Connection"), HOP("Keep-Alive"), HOP("Proxy-Authenticate"),
	HOP("Proxy-Authorization"), HOP("Proxy-Connection"), HOP("TE"),
	HOP("Trailer"), HOP("Trailers"), HOP("Transfer-Encoding"),
	HOP("Upgrade"), HOP("Host"), HOP("Content-Length"), HOP("Expect"),
};
#undef HOP

int
h1_hop(const char *name, size_t len)
{
	size_t	 i;

	for (i = 0; i < sizeof(hop_fields) / sizeof(hop_fields[0]); i++)
		if (hop_fields[i].len == len &&
		    icase(name, hop_fields[i].name, len))
			return (1);
	return (0);
}

/*
 * Whether a field of m (its name, len bytes) is not passed on: one of
 * h1_hop's, or one that a Connection field of m names (RFC 9110 7.6.1),
 * meant for this hop alone.
 */
int
h1_hop_in(const struct h1_msg *m, const char *name, size_t len)
{
	const struct h1_header	*h;
	size_t			 i;

	if (h1_hop(name, len))
		return (1);
	for (i = 0; i < m->nheaders; i++) {
		h = &m->headers[i];
		if (h->namelen == 10 && icase(h->name, "Connection", 10) &&
		    lists(h->value, h->valuelen, name, len))
			return (1);
	}
	return (0);
}

/*
 * The chunked coding (RFC 9112 7.1), a byte at a time but for the data:
 *
 *   chunk-size [ BWS ";" anything ] CRLF  chunk-data CRLF  ...
 *   "0" [ ... ] CRLF  *( trailer-line CRLF )  CRLF
 *
 * A bare LF ends a line as well as CRLF; a CR not followed by LF is an
 * error.  Trailer lines are skipped unread.
 */
enum {
	CH_SIZE,	/* the hex digits of the size */
	CH_SIZE_WS,	/* spaces after them, before a ";" */
	CH_EXT,		/* an extension, to the end of the line */
	CH_SIZE_LF,	/* the LF after the size line's CR */
	CH_DATA,
	CH_DATA_CR,	/* the CRLF after the data */
	CH_DATA_LF,
	CH_TRAILER,	/* the start of a trailer line, or the end */
	CH_TRAILER_LINE,
	CH_TRAILER_LF,
	CH_END_LF,	/* the LF of the final empty line */
	CH_DONE,
	CH_ERROR
};

void
h1_chunked_init(struct h1_chunked *c)
{
	c->state = CH_SIZE;
	c->left = 0;
	c->linelen = 0;
	c->digits = 0;
}

/* The size line read: the chunk's data next, or the trailers. */
static void
size_line_end(struct h1_chunked *c)
{
	c->linelen = 0;
	c->state = c->left == 0 ? CH_TRAILER : CH_DATA;
}

/* A line's end at ch: a CR, after which its LF is awaited in state lf
 * (0), a bare LF (1), or neither (-1). */
static int
eol(struct h1_chunked *c, unsigned int ch, int lf)
{
	if (ch == '\n')
		return (1);
	if (ch != '\r')
		return (-1);
	c->state = lf;
	return (0);
}

/* A byte of a size line: 0, or -1 if it breaks the grammar. */
static int
size_byte(struct h1_chunked *c, unsigned int ch)
{
	unsigned int	 h;
	int		 r;

	switch (c->state) {
	case CH_SIZE:
		if (ch >= '0' && ch <= '9')
			h = ch - '0';
		else if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')
			h = (ch | 0x20) - 'a' + 10;
		else
			h = 16;
		if (h < 16) {
			/* Refuse a size of 2^62 or more. */
			if (c->left >= (uint64_t)1 << 58)
				return (-1);
			c->left = c->left * 16 + h;
			c->digits = 1;
		} else if (!c->digits)
			return (-1);
		else if (ch == ';')
			c->state = CH_EXT;
		else if (ch == ' ' || ch == '\t')
			c->state = CH_SIZE_WS;
		else if (ch == '\r') {
			c->state = CH_SIZE_LF;
			return (0);
		} else if (ch == '\n') {
			size_line_end(c);
			return (0);
		} else
			return (-1);
		break;
	case CH_SIZE_WS:
		if (ch == ';')
			c->state = CH_EXT;
		else if (ch != ' ' && ch != '\t')
			return (-1);
		break;
	case CH_EXT:
		if ((r = eol(c, ch, CH_SIZE_LF)) == 1)
			size_line_end(c);
		if (r >= 0)
			return (0);
		break;
	case CH_SIZE_LF:
		if (ch != '\n')
			return (-1);
		size_line_end(c);
		return (0);
	default:
		return (-1);
	}
	return (++c->linelen > MAX_LINE ? -1 : 0);
}

/* A byte of the CRLF after a chunk's data or of the trailer section: 0,
 * 1 when it ends the message, or -1 if it breaks the grammar. */
static int
tail_byte(struct h1_chunked *c, unsigned int ch)
{
	int	 r;

	switch (c->state) {
	case CH_DATA_CR:
		if ((r = eol(c, ch, CH_DATA_LF)) == 1)
			h1_chunked_init(c);
		return (r == -1 ? -1 : 0);
	case CH_DATA_LF:
		if (ch != '\n')
			return (-1);
		h1_chunked_init(c);
		return (0);
	case CH_TRAILER:
		if ((r = eol(c, ch, CH_END_LF)) == 1)
			return (1);
		if (r == -1) {
			c->state = CH_TRAILER_LINE;
			c->linelen = 1;
		}
		return (0);
	case CH_TRAILER_LINE:
		if ((r = eol(c, ch, CH_TRAILER_LF)) == 1) {
			c->state = CH_TRAILER;
			c->linelen = 0;
		} else if (r == -1 && ++c->linelen > MAX_LINE)
			return (-1);
		return (0);
	case CH_TRAILER_LF:
		if (ch != '\n')
			return (-1);
		c->state = CH_TRAILER;
		c->linelen = 0;
		return (0);
	case CH_END_LF:
		return (ch == '\n' ? 1 : -1);
	default:
		return (-1);
	}
}

ssize_t
h1_chunked_decode(struct h1_chunked *c, char *buf, size_t len,
    size_t *datalen, int *done)
{
	char		*w = buf;
	size_t		 i = 0, n;
	unsigned int	 ch;
	int		 r = 0;

	*datalen = 0;
	*done = 0;
	if (c->state == CH_DONE) {
		*done = 1;
		return (0);
	}
	if (c->state == CH_ERROR)
		return (-1);
	/* The count returned must fit; no real buffer is this large. */
	if (len > SSIZE_MAX)
		len = SSIZE_MAX;

	while (i < len && r == 0) {
		if (c->state != CH_DATA) {
			ch = (unsigned char)buf[i++];
			r = c->state < CH_DATA ? size_byte(c, ch) :
			    tail_byte(c, ch);
			continue;
		}
		n = len - i;
		if (n > c->left)
			n = c->left;
		if (w != buf + i)
			memmove(w, buf + i, n);
		w += n;
		i += n;
		if ((c->left -= n) == 0)
			c->state = CH_DATA_CR;
	}
	*datalen = w - buf;
	if (r == -1)
		c->state = CH_ERROR;
	else if (r == 1) {
		c->state = CH_DONE;
		*done = 1;
	}
	return (r == -1 ? -1 : (ssize_t)i);
}
