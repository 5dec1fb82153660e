/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * UTF-8 as RFC 3629 has it, for the two readers of a body: rules.c's
 * check before json-c, and scan.c's strings.  A body is checked 32
 * bytes a step where it is ASCII (SSE2, which every x86-64 has, or a
 * 64-bit word a step elsewhere: scan_portable chooses the word, for the
 * tests, which hold the two to the same answers), and a sequence at a
 * time where it is not.  Pure functions; calls no other file of
 * agency-proxy.
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <stdint.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "proxy.h"

int	 scan_portable;

/*
 * The length of the well-formed UTF-8 sequence at p, of at most left
 * bytes, that starts with a byte >= 0x80; 0 if it is not one: a stray
 * continuation byte, an overlong form, a surrogate, past U+10FFFF, or
 * cut short.  The second byte's range is the first byte's to say (RFC
 * 3629, section 4), which leaves the rest to be continuation bytes.
 */
size_t
utf8_seq(const unsigned char *p, size_t left)
{
	unsigned int	 c = p[0], lo = 0x80, hi = 0xbf;
	size_t		 n;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return (0);
	if (left < n || p[1] < lo || p[1] > hi)
		return (0);
	if (n >= 3 && (p[2] & 0xc0) != 0x80)
		return (0);
	if (n == 4 && (p[3] & 0xc0) != 0x80)
		return (0);
	return (n);
}

#ifdef __SSE2__
/* The first byte >= 0x80 of [p, end), 32 bytes a step. */
static const unsigned char *
ascii_sse2(const unsigned char *p, const unsigned char *end)
{
	__m128i		 x, y;
	unsigned int	 m;

	while (end - p >= 32) {
		x = _mm_loadu_si128((const __m128i *)(const void *)p);
		y = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
		if ((m = (unsigned int)_mm_movemask_epi8(_mm_or_si128(x,
		    y))) != 0) {
			m = (unsigned int)_mm_movemask_epi8(x) |
			    (unsigned int)_mm_movemask_epi8(y) << 16;
			return (p + __builtin_ctz(m));
		}
		p += 32;
	}
	while (p < end && *p < 0x80)
		p++;
	return (p);
}
#endif

/* The same, 8 bytes a step. */
static const unsigned char *
ascii_words(const unsigned char *p, const unsigned char *end)
{
	uint64_t	 w;

	while (end - p >= 8) {
		memcpy(&w, p, 8);
		if ((w & 0x8080808080808080ULL) != 0)
			break;
		p += 8;
	}
	while (p < end && *p < 0x80)
		p++;
	return (p);
}

/*
 * Well-formed UTF-8 as RFC 3629 has it: no overlong forms, no
 * surrogates, nothing above U+10FFFF.  (json-c's own check lets the
 * first two through.)
 */
int
utf8_valid(const unsigned char *p, size_t len)
{
	const unsigned char	*end = p + len;
	size_t			 n;

	for (;;) {
#ifdef __SSE2__
		p = scan_portable == SCAN_WORDS ? ascii_words(p, end) :
		    ascii_sse2(p, end);
#else
		p = ascii_words(p, end);
#endif
		if (p == end)
			return (1);
		if ((n = utf8_seq(p, end - p)) == 0)
			return (0);
		p += n;
	}
}
