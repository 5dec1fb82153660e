/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * multipart/form-data, read strictly (see multipart.h): the boundary of
 * a Content-Type (multipart_boundary), a body's parts and its model
 * field (multipart_scan, whose rules are above it: each broken one is a
 * 400 with its own message), and the body with another model
 * (multipart_splice).  One pass over the body, its delimiters found
 * many bytes a step (multipart_find) or taken from the marks made as it
 * came in (multipart_mark).
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#ifdef __SSE2__
#include <immintrin.h>
#endif

#include "multipart.h"

#define FORM_TYPE	"multipart/form-data"

/* A parameter of a header field's value, as written. */
struct param {
	const char	*name;
	size_t		 namelen;
	const char	*value;		/* for a quoted string, inside the
					 * quotes, escapes still in */
	size_t		 valuelen;
	int		 quoted;
};

static int
alnum(unsigned char c)
{
	return ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
	    (c >= 'A' && c <= 'Z'));
}

/* RFC 9110's tchar. */
static int
tchar(unsigned char c)
{
	return (alnum(c) || (c != '\0' && strchr("!#$%&'*+-.^_`|~", c) !=
	    NULL));
}

/* RFC 2046's bchars, space included. */
static int
bchar(unsigned char c)
{
	return (alnum(c) || (c != '\0' && strchr("'()+_,-./:=? ", c) !=
	    NULL));
}

static const char *
ows(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return (p);
}

/*
 * The next ";" name "=" value of a field's parameters at *pp: 1 with *pm
 * set and *pp past it, 0 at the end (a ";" with nothing after it is an
 * end too), -1 when malformed.
 */
static int
param_next(const char **pp, const char *end, struct param *pm)
{
	const char	*p = ows(*pp, end);
	unsigned char	 c;

	if (p == end)
		return (0);
	if (*p != ';')
		return (-1);
	if ((p = ows(p + 1, end)) == end)
		return (0);
	pm->name = p;
	while (p < end && tchar(*p))
		p++;
	if ((pm->namelen = p - pm->name) == 0 || p == end || *p != '=')
		return (-1);
	p++;
	pm->quoted = p < end && *p == '"';
	if (pm->quoted) {
		pm->value = ++p;
		for (;;) {
			if (p == end)
				return (-1);
			c = *p;
			if (c == '"')
				break;
			if (c == '\\' && ++p == end)
				return (-1);
			c = *p;
			/* qdtext and quoted-pair: no controls but HTAB */
			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return (-1);
			p++;
		}
		pm->valuelen = p - pm->value;
		p++;
	} else {
		pm->value = p;
		while (p < end && tchar(*p))
			p++;
		if ((pm->valuelen = p - pm->value) == 0)
			return (-1);
	}
	*pp = p;
	return (1);
}

static int
param_is(const struct param *pm, const char *name)
{
	return (pm->namelen == strlen(name) &&
	    strncasecmp(pm->name, name, pm->namelen) == 0);
}

/* A parameter's value, unescaped, into buf; -1 if it does not fit. */
static int
param_value(const struct param *pm, char *buf, size_t size)
{
	size_t	 i, n = 0;

	for (i = 0; i < pm->valuelen; i++) {
		if (pm->quoted && pm->value[i] == '\\')
			i++;
		if (n + 1 >= size)
			return (-1);
		buf[n++] = pm->value[i];
	}
	buf[n] = '\0';
	return (0);
}

/* Whether a parameter's value, unescaped, is s. */
static int
param_value_is(const struct param *pm, const char *s)
{
	char	 buf[16];

	return (strlen(s) < sizeof(buf) &&
	    param_value(pm, buf, sizeof(buf)) == 0 && strcmp(buf, s) == 0);
}

/* The length of a media type or disposition type at the start of v,
 * when it is word (any case) and ends there; else 0. */
static size_t
type_is(const char *v, const char *end, const char *word)
{
	size_t	 n = strlen(word);

	if ((size_t)(end - v) < n || strncasecmp(v, word, n) != 0)
		return (0);
	if (v + n < end && v[n] != ';' && v[n] != ' ' && v[n] != '\t')
		return (0);
	return (n);
}

int
multipart_is_form(const char *ct)
{
	return (ct != NULL && type_is(ct, ct + strlen(ct), FORM_TYPE) > 0);
}

int
multipart_boundary(const char *ct, char *buf, size_t size, const char **err)
{
	const char	*p, *end;
	struct param	 pm;
	size_t		 n, i;
	int		 r, found = 0;

	if (ct == NULL || (n = type_is(ct, ct + strlen(ct), FORM_TYPE)) ==
	    0) {
		*err = "The Content-Type is not multipart/form-data.";
		return (-1);
	}
	end = ct + strlen(ct);
	p = ct + n;
	while ((r = param_next(&p, end, &pm)) == 1) {
		if (!param_is(&pm, "boundary"))
			continue;
		if (found++) {
			*err = "The Content-Type has two boundaries.";
			return (-1);
		}
		if (param_value(&pm, buf, size) == -1 ||
		    (n = strlen(buf)) == 0 || n > MULTIPART_BOUNDARY_MAX ||
		    buf[n - 1] == ' ') {
			*err = "The multipart boundary must be 1 to 70 "
			    "characters, not ending in a space.";
			return (-1);
		}
		for (i = 0; i < n; i++)
			if (!bchar(buf[i])) {
				*err = "The multipart boundary has a "
				    "character RFC 2046 does not allow.";
				return (-1);
			}
	}
	if (r == -1) {
		*err = "The Content-Type's parameters are malformed.";
		return (-1);
	}
	if (!found) {
		*err = "The multipart Content-Type has no boundary.";
		return (-1);
	}
	return (0);
}

/* What a part's header lines say. */
struct phead {
	int	 disposition;	/* Content-Disposition fields */
	int	 named;		/* it had a name */
	int	 model;		/* named "model" */
	int	 stream;	/* named "stream" */
	int	 file;		/* it had a filename */
	int	 cte;		/* a Content-Transfer-Encoding field */
};

#define DISPOSITION_PARAMS	8	/* a Content-Disposition's, at most */

/*
 * A Content-Disposition's value [v, end) into *h: NULL, or what is wrong
 * with it.  Beyond the grammar, what a server behind the front door
 * could read otherwise than this one is refused: RFC 2231's parameters
 * (name*, name*0, filename*1*: python-multipart and Go's mime package
 * take them over name, and RFC 7578, 4.2, forbids them), a parameter
 * twice (which one counts differs), a backslash in a quoted value (some
 * unescape it, some keep it), and more than DISPOSITION_PARAMS
 * parameters, which keeps the search for twice short.
 */
static const char *
disposition(const char *v, const char *end, struct phead *h)
{
	static const char	*bad = "A part needs one Content-Disposition "
				    "of form-data with a name.";
	struct param		 pm, seen[DISPOSITION_PARAMS];
	size_t			 n, i, nseen = 0;
	int			 r;

	if ((n = type_is(v, end, "form-data")) == 0)
		return (bad);
	v += n;
	while ((r = param_next(&v, end, &pm)) == 1) {
		if (memchr(pm.name, '*', pm.namelen) != NULL)
			return ("A Content-Disposition parameter of RFC 2231 "
			    "(a name with a *) is not allowed in a form.");
		if (pm.quoted && memchr(pm.value, '\\', pm.valuelen) != NULL)
			return ("A Content-Disposition parameter has a "
			    "backslash.");
		for (i = 0; i < nseen; i++)
			if (seen[i].namelen == pm.namelen &&
			    strncasecmp(seen[i].name, pm.name,
			    pm.namelen) == 0)
				return ("A Content-Disposition parameter "
				    "comes twice.");
		if (nseen == DISPOSITION_PARAMS)
			return ("A Content-Disposition has too many "
			    "parameters.");
		seen[nseen++] = pm;
		if (param_is(&pm, "name")) {
			h->named = 1;
			h->model = param_value_is(&pm, "model");
			h->stream = param_value_is(&pm, "stream");
		} else if (param_is(&pm, "filename"))
			h->file = 1;
	}
	return (r == -1 || !h->named ? bad : NULL);
}

/*
 * A part's header lines from p up to and with the empty line: where its
 * data starts, or NULL with *err.
 */
static const char *
part_head(const char *p, const char *end, struct phead *h, const char **err)
{
	const char	*lim, *eol, *v, *q;
	size_t		 n;

	memset(h, 0, sizeof(*h));
	lim = (size_t)(end - p) > MULTIPART_HEAD_MAX ?
	    p + MULTIPART_HEAD_MAX : end;
	for (;;) {
		if ((eol = memmem(p, lim - p, "\r\n", 2)) == NULL) {
			*err = lim < end ? "A part's header lines are too "
			    "long." : "A part's header lines do not end.";
			return (NULL);
		}
		if (eol == p)
			break;
		for (q = p; q < eol; q++)
			if (*q == '\r' || *q == '\n' || *q == '\0')
				break;
		for (v = p; v < eol && tchar(*v); v++)
			;
		if (q < eol || v == p || v == eol || *v != ':') {
			*err = "A part's header line is malformed.";
			return (NULL);
		}
		n = v - p;
		v = ows(v + 1, eol);
		if (n == 19 && strncasecmp(p, "Content-Disposition", n) == 0) {
			if (h->disposition++) {
				*err = "A part needs one Content-Disposition "
				    "of form-data with a name.";
				return (NULL);
			}
			if ((*err = disposition(v, eol, h)) != NULL)
				return (NULL);
		} else if (n == 25 &&
		    strncasecmp(p, "Content-Transfer-Encoding", n) == 0)
			h->cte = 1;
		p = eol + 2;
	}
	if (!h->disposition) {
		*err = "A part needs one Content-Disposition of form-data "
		    "with a name.";
		return (NULL);
	}
	return (p + 2);
}

int	 multipart_simd = -1;

#ifdef __SSE2__
/*
 * The places of a mask of candidates at p (bit i: p + i), in order: the
 * first that is the delimiter, or NULL and *stop when one is past last.
 */
static const char *
find_check(const char *p, uint64_t m, const char *last, const char *d,
    size_t dlen, int *stop)
{
	const char	*q;

	for (; m != 0; m &= m - 1) {
		q = p + __builtin_ctzll(m);
		if (q > last) {
			*stop = 1;
			return (NULL);
		}
		if (memcmp(q, d, dlen) == 0)
			return (q);
	}
	return (NULL);
}

/*
 * multipart_find with SSE2, 32 places a step, then byte by byte where
 * the loads would pass end; the wider ones end with it.
 */
static const char *
find_sse2(const char *p, const char *end, const char *last, const char *d,
    size_t dlen)
{
	const __m128i	 cr = _mm_set1_epi8('\r'), dash = _mm_set1_epi8('-');
	const char	*q;
	uint64_t	 m;
	int		 stop = 0;

	/* while the loads (to p + 3 + 31) fit */
	for (; end - p >= 35 && p <= last; p += 32) {
		m = (uint32_t)_mm_movemask_epi8(_mm_and_si128(
		    _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)p), cr),
		    _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 3)),
		    dash))) |
		    (uint32_t)_mm_movemask_epi8(_mm_and_si128(
		    _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + 16)),
		    cr), _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)
		    (p + 19)), dash))) << 16;
		if (m != 0 && ((q = find_check(p, m, last, d, dlen,
		    &stop)) != NULL || stop))
			return (q);
	}
	for (; p <= last; p++)
		if (*p == '\r' && memcmp(p, d, dlen) == 0)
			return (p);
	return (NULL);
}

/* multipart_find with AVX2, 64 places a step, where the CPU has it. */
__attribute__((target("avx2")))
static const char *
find_avx2(const char *p, const char *end, const char *last, const char *d,
    size_t dlen)
{
	const __m256i	 cr = _mm256_set1_epi8('\r');
	const __m256i	 dash = _mm256_set1_epi8('-');
	const char	*q;
	uint64_t	 m;
	int		 stop = 0;

	/* while the loads (to p + 3 + 63) fit */
	for (; end - p >= 67 && p <= last; p += 64) {
		m = (uint32_t)_mm256_movemask_epi8(_mm256_and_si256(
		    _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)p),
		    cr), _mm256_cmpeq_epi8(_mm256_loadu_si256(
		    (const __m256i *)(p + 3)), dash))) |
		    (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_and_si256(
		    _mm256_cmpeq_epi8(_mm256_loadu_si256((const __m256i *)
		    (p + 32)), cr), _mm256_cmpeq_epi8(_mm256_loadu_si256(
		    (const __m256i *)(p + 35)), dash))) << 32;
		if (m != 0 && ((q = find_check(p, m, last, d, dlen,
		    &stop)) != NULL || stop))
			return (q);
	}
	return (find_sse2(p, end, last, d, dlen));
}

/* multipart_find with AVX-512BW, 128 places a step. */
__attribute__((target("avx512bw")))
static const char *
find_avx512(const char *p, const char *end, const char *last,
    const char *d, size_t dlen)
{
	const __m512i	 cr = _mm512_set1_epi8('\r');
	const __m512i	 dash = _mm512_set1_epi8('-');
	const char	*q;
	uint64_t	 m0, m1;
	int		 stop = 0;

	/* while the loads (to p + 3 + 127) fit */
	for (; end - p >= 131 && p <= last; p += 128) {
		m0 = _mm512_cmpeq_epi8_mask(_mm512_loadu_si512(p), cr) &
		    _mm512_cmpeq_epi8_mask(_mm512_loadu_si512(p + 3), dash);
		m1 = _mm512_cmpeq_epi8_mask(_mm512_loadu_si512(p + 64), cr) &
		    _mm512_cmpeq_epi8_mask(_mm512_loadu_si512(p + 67), dash);
		if ((m0 | m1) == 0)
			continue;
		if ((q = find_check(p, m0, last, d, dlen, &stop)) != NULL ||
		    stop || (q = find_check(p + 64, m1, last, d, dlen,
		    &stop)) != NULL || stop)
			return (q);
	}
	return (find_avx2(p, end, last, d, dlen));
}
#endif

/*
 * The first delimiter d ("\r\n--" and the boundary, dlen bytes) in
 * [p, end), or NULL; d starts with "\r\n--" and dlen is 4 or more.
 * With SSE2 (AVX2 or AVX-512 where the CPU has it), the places where a
 * CR is followed, three bytes on, by a dash are found 32 (64, 128) bytes
 * a step, and each is compared whole; a file's bytes rarely give one (1
 * in 65536 for random data), so the search costs little more than
 * reading them.  Elsewhere, memmem(3).
 */
const char *
multipart_find(const char *p, const char *end, const char *d, size_t dlen)
{
#ifdef __SSE2__
	const char	*last;

	if (dlen < 4 || (size_t)(end - p) < dlen)
		return (dlen == 0 ? p : NULL);
	last = end - dlen;	/* where the last one may start */
	if (multipart_simd == -1)
		multipart_simd = __builtin_cpu_supports("avx512bw") ? 2 :
		    __builtin_cpu_supports("avx2") ? 1 : 0;
	if (multipart_simd == 2)
		return (find_avx512(p, end, last, d, dlen));
	if (multipart_simd == 1)
		return (find_avx2(p, end, last, d, dlen));
	return (find_sse2(p, end, last, d, dlen));
#else
	return (memmem(p, end - p, d, dlen));
#endif
}

/*
 * Note the "\r\n--" that start in the first have bytes of body, from
 * where the last call stopped.
 */
void
multipart_mark(struct mmarks *mk, const char *body, size_t have)
{
	const char	*p, *end, *q;
	size_t		*v, cap;

	if (mk->over || have < 4 || mk->done > have - 4)
		return;
	p = body + mk->done;
	end = body + have;
	while ((q = multipart_find(p, end, "\r\n--", 4)) != NULL) {
		if (mk->n == mk->cap) {
			if (mk->n >= MULTIPART_MARKS_MAX) {
				mk->over = 1;
				return;
			}
			cap = mk->cap ? mk->cap * 2 : 16;
			if ((v = reallocarray(mk->v, cap, sizeof(*v))) ==
			    NULL) {
				mk->over = 1;
				return;
			}
			mk->v = v;
			mk->cap = cap;
		}
		mk->v[mk->n++] = q - body;
		p = q + 1;
	}
	mk->done = have - 3;
}

void
multipart_marks_reset(struct mmarks *mk)
{
	mk->n = mk->done = 0;
	mk->over = 0;
}

void
multipart_marks_free(struct mmarks *mk)
{
	free(mk->v);
	memset(mk, 0, sizeof(*mk));
}

/*
 * The next delimiter in [p, end) of body: among the marks where they
 * cover the body (a binary search for the first at or after p), else
 * looked for.
 */
static const char *
find_next(const char *body, const char *p, const char *end, const char *d,
    size_t dlen, const struct mmarks *mk)
{
	size_t	 lo, hi, mid, at = p - body;

	if (mk == NULL || mk->over || (size_t)(end - body) < 4 ||
	    mk->done < (size_t)(end - body) - 3)
		return (multipart_find(p, end, d, dlen));
	lo = 0;
	hi = mk->n;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (mk->v[mid] < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < mk->n; lo++)
		if (mk->v[lo] + dlen <= (size_t)(end - body) &&
		    memcmp(body + mk->v[lo], d, dlen) == 0)
			return (body + mk->v[lo]);
	return (NULL);
}

/* The model's value: 1 to MULTIPART_MODEL_MAX bytes, no controls. */
static int
model_ok(const char *v, size_t len)
{
	size_t	 i;

	if (len == 0 || len > MULTIPART_MODEL_MAX)
		return (0);
	for (i = 0; i < len; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f)
			return (0);
	return (1);
}

/* A part of header h with data [data, data + len) into *f. */
static int
part_add(const char *body, const struct phead *h, const char *data,
    size_t len, struct mform *f, const char **err)
{
	f->nparts++;
	if (h->file)
		f->nfiles++;
	if (h->stream) {
		if (f->has_stream++) {
			*err = "The form has the field 'stream' twice.";
			return (-1);
		}
		f->stream = !h->file && len == 4 &&
		    strncasecmp(data, "true", 4) == 0;
	}
	if (!h->model)
		return (0);
	if (f->has_model) {
		*err = "The form has the field 'model' twice.";
		return (-1);
	}
	if (h->file || h->cte) {
		*err = "The form's model must be a plain field, not a file "
		    "or encoded.";
		return (-1);
	}
	if (!model_ok(data, len)) {
		*err = "The form's model must be 1 to 127 bytes without "
		    "control characters.";
		return (-1);
	}
	f->has_model = 1;
	f->model_off = data - body;
	f->model_len = len;
	return (0);
}

/*
 * The rules, each a 400 with its own message when broken (the first is
 * multipart_boundary's):
 *
 * - The Content-Type is multipart/form-data with exactly one boundary
 *   parameter: 1 to 70 characters of RFC 2046's bchars, not ending in a
 *   space, as a token or a quoted string.
 * - The body starts with "--" and the boundary (no preamble), and every
 *   delimiter is CRLF "--" boundary, followed either by "--" (the last
 *   one: then at most spaces or tabs and one CRLF, no epilogue) or by
 *   spaces or tabs and CRLF.  A part's data ends at the first CRLF "--"
 *   boundary after its header lines; what follows it must make it a
 *   delimiter, so the boundary cannot appear inside data, as RFC 2046
 *   requires of senders; nor can a part's data start with "--" and the
 *   boundary, which a careless reader takes for the next delimiter.
 *   There is at least one part.
 * - A part's header lines end in CRLF (no bare CR or LF, no folding, no
 *   NUL), are "name: value" with a token for a name, and take at most
 *   MULTIPART_HEAD_MAX bytes together.  There is exactly one
 *   Content-Disposition: form-data with one name parameter; a filename
 *   parameter makes the part a file.  Parameters are ";" name "="
 *   (token or quoted string, with backslash escapes, but for the
 *   Content-Disposition's).  The Content-Disposition has no parameter
 *   twice, none of RFC 2231 (a name with a "*": name*, filename*0), no
 *   backslash in a quoted value, and at most 8 parameters: each is read
 *   otherwise by one server or another (multipart.c's disposition).
 * - The field "model" comes at most once, is not a file, has no
 *   Content-Transfer-Encoding, and its value is 1 to MULTIPART_MODEL_MAX
 *   bytes with no control character (its UTF-8 is the caller's to
 *   check, with the name it picks).
 *
 * The body is passed over once, each delimiter found by multipart_find,
 * so the work is linear in its length, which the caller bounds by max
 * body; a part's data (a file) is looked at 32 to 128 bytes a step,
 * or not at all when marks (multipart_mark, taken as the body came in)
 * say where its delimiters may be.
 */
int
multipart_scan(const char *body, size_t len, const char *b, size_t max,
    const struct mmarks *mk, struct mform *f, const char **err)
{
	const char	*p, *end, *data, *next;
	char		 delim[MULTIPART_BOUNDARY_MAX + 5];
	struct phead	 h;
	size_t		 blen = strlen(b), dlen;

	memset(f, 0, sizeof(*f));
	if (len > max) {
		*err = "The body is too large.";
		return (-413);
	}
	if (blen == 0 || blen > MULTIPART_BOUNDARY_MAX) {
		*err = "The multipart boundary must be 1 to 70 characters.";
		return (-400);
	}
	/* CRLF "--" boundary; the first one comes without the CRLF */
	memcpy(delim, "\r\n--", 4);
	memcpy(delim + 4, b, blen);
	dlen = blen + 4;
	/* (an empty body may come as NULL: no pointer is made of it) */
	if (len < dlen - 2 || memcmp(body, delim + 2, dlen - 2) != 0) {
		*err = "The form does not start with its boundary.";
		return (-400);
	}
	p = body + dlen - 2;
	end = body + len;
	for (;;) {
		if (end - p >= 2 && memcmp(p, "--", 2) == 0) {
			p = ows(p + 2, end);
			if (p != end && (end - p != 2 ||
			    memcmp(p, "\r\n", 2) != 0)) {
				*err = "The form has data after its closing "
				    "boundary.";
				return (-400);
			}
			if (f->nparts == 0) {
				*err = "The form has no parts.";
				return (-400);
			}
			return (0);
		}
		p = ows(p, end);
		if (end - p < 2 || memcmp(p, "\r\n", 2) != 0) {
			*err = "A boundary line of the form does not end in "
			    "CRLF, or the boundary is inside a part.";
			return (-400);
		}
		if ((data = part_head(p + 2, end, &h, err)) == NULL)
			return (-400);
		/* a reader that takes the empty line's CRLF for the one of a
		 * delimiter would end the part here */
		if ((size_t)(end - data) >= dlen - 2 &&
		    memcmp(data, delim + 2, dlen - 2) == 0) {
			*err = "A part of the form starts with the boundary.";
			return (-400);
		}
		if ((next = find_next(body, data, end, delim, dlen, mk)) ==
		    NULL) {
			*err = "A part of the form does not end with its "
			    "boundary.";
			return (-400);
		}
		if (part_add(body, &h, data, next - data, f, err) == -1)
			return (-400);
		p = next + dlen;
	}
}

size_t
multipart_splice(const char *body, size_t len, const struct mform *f,
    const char *b, const char *model, char *head, size_t headsize,
    struct mpiece *v)
{
	size_t	 i, n = strlen(model);
	int	 k;

	if (n == 0)
		return (0);
	for (i = 0; i < n; i++)
		if ((unsigned char)model[i] < 0x20 || model[i] == 0x7f)
			return (0);
	if (f->has_model) {
		v[0].p = body;
		v[0].len = f->model_off;
		v[1].p = model;
		v[1].len = n;
		v[2].p = body + f->model_off + f->model_len;
		v[2].len = len - f->model_off - f->model_len;
		return (3);
	}
	k = snprintf(head, headsize, "--%s\r\nContent-Disposition: "
	    "form-data; name=\"model\"\r\n\r\n%s\r\n", b, model);
	if (k < 0 || (size_t)k >= headsize)
		return (0);
	v[0].p = head;
	v[0].len = (size_t)k;
	v[1].p = body;
	v[1].len = len;
	return (2);
}
