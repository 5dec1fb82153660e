/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The fast path of a model request's body: one pass over the bytes that
 * checks them as strict JSON (RFC 8259) and notes the few fields the
 * rules read, and where each member of the top object is, so that a
 * body no rule changes goes to the model without ever being built as a
 * json-c tree.  It says yes only to a body every parser reads alike and
 * whose rules' answer the notes give (the list is above scan()); to
 * anything else no, and the body takes the json-c path.  Strings are
 * checked many bytes a step (SSE2, AVX2 where the CPU has it), and may
 * be noted as the body comes in (prescan_feed, from conn.c).
 *
 * Calls: utf8.c, routes.c (routes_part_name).
 */
#include <sys/types.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define SCAN_AVX2	1
#endif

#include "proxy.h"
#include "routes.h"

#define SCAN_DEPTH	32
#define SCAN_KEYS	RSCAN_TOP

struct scanner {
	const unsigned char	*base;
	const unsigned char	*p;
	const unsigned char	*end;
	struct rscan		*rs;
	int			 depth;
	int			 portable;	/* scan_portable, when it began */
	const struct prescan	*pre;		/* strings noted as it came */
	size_t			 k;		/* the next of them */
	int			 parts;		/* the route's (routes.h) */
	int			 cdepth;	/* content arrays, one in another */
	const char		*want;		/* CTX_NOTE: the name whose */
	size_t			 wantlen;
	const unsigned char	*got;		/* value is here, */
	size_t			 gotlen;	/* quotes and all */
};

static int	 scan_value(struct scanner *, int, int);

/*
 * Strings are most of a long body, and most of a string is bytes that
 * need nothing done: the scan marks the bytes that matter (a quote, a
 * backslash, a control character, a byte >= 0x80) 32 at a time, with
 * SSE2, which every x86-64 has, or 8 to a 64-bit word elsewhere, and
 * handles the marked ones in turn.  Where the CPU has AVX2, steps of 64
 * bytes go first and take plain text, simple escapes and UTF-8 with no
 * branch on where the marked bytes are (blocks_avx2), \u escapes too,
 * leaving anything wrong to the 32-byte steps, which give every answer.
 * scan_portable (utf8.c's) keeps the scan to the words or to SSE2 for
 * the tests, which hold every way to the same answers.  A step with
 * no byte >= 0x80 (all of an English prompt but a few) has no UTF-8
 * work at all; a byte >= 0x80 is checked as the start of a well-formed
 * sequence where it stands (utf8.c), in the same pass.
 */

/* Whether a byte ends a run of plain string bytes. */
static inline int
special(unsigned char c)
{
	return (c == '"' || c == '\\' || c < 0x20 || c >= 0x80);
}

#define ONES	0x0101010101010101ULL
#define LOW7	0x7f7f7f7f7f7f7f7fULL
#define HIGH	0x8080808080808080ULL

/*
 * The special bytes of the 32 at p, one bit each (bit i: p[i]), 8 bytes
 * a step.  Each flag is computed within its own byte, so no carry
 * crosses into the next: with x = w & LOW7, x + 0x60 has its high bit
 * iff x >= 0x20, and x + 0x7f iff x != 0.  The multiplication gathers
 * the eight high bits into the top byte, byte i's at bit 56 + i (the
 * products land on distinct bits: nothing carries).
 */
static inline uint32_t
mask_words(const unsigned char *p)
{
	uint64_t	 w, q, b, f;
	uint32_t	 m = 0;
	int		 i;

	for (i = 0; i < 4; i++) {
		memcpy(&w, p + 8 * i, 8);
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
		w = __builtin_bswap64(w);
#endif
		q = w ^ (ONES * '"');
		b = w ^ (ONES * '\\');
		f = (w | ~((w & LOW7) + ONES * 0x60) |
		    ~(((q & LOW7) + LOW7) | q) |
		    ~(((b & LOW7) + LOW7) | b)) & HIGH;
		m |= (uint32_t)((f * 0x0002040810204081ULL) >> 56) << (8 * i);
	}
	return (m);
}

#ifdef __SSE2__
/* The same with SSE2: bytes < 0x20 or >= 0x80 are those less than 0x20
 * as signed bytes. */
static inline uint32_t
mask_sse2(const unsigned char *p)
{
	const __m128i	 q = _mm_set1_epi8('"'), b = _mm_set1_epi8('\\');
	const __m128i	 sp = _mm_set1_epi8(0x20);
	__m128i		 x, y;

	x = _mm_loadu_si128((const __m128i *)(const void *)p);
	y = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
	return ((uint32_t)_mm_movemask_epi8(_mm_or_si128(
	    _mm_or_si128(_mm_cmpeq_epi8(x, q), _mm_cmpeq_epi8(x, b)),
	    _mm_cmplt_epi8(x, sp))) |
	    (uint32_t)_mm_movemask_epi8(_mm_or_si128(
	    _mm_or_si128(_mm_cmpeq_epi8(y, q), _mm_cmpeq_epi8(y, b)),
	    _mm_cmplt_epi8(y, sp))) << 16);
}
#endif

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

/* What may follow a backslash: 1 a letter, 2 u and four hex digits (a
 * table: a switch on the letter mispredicted in escape-dense text). */
static const unsigned char	 escapes[256] = {
	['"'] = 1, ['\\'] = 1, ['/'] = 1, ['b'] = 1, ['f'] = 1, ['n'] = 1,
	['r'] = 1, ['t'] = 1, ['u'] = 2,
};

/*
 * The special byte at p of a string that ends before e: 1 and *next
 * past it (a character, or an escape), 2 at the closing quote, 0 if it
 * cannot be in a string.
 */
static inline int
string_byte(const unsigned char *p, const unsigned char *e,
    const unsigned char **next, int *esc)
{
	size_t	 n;

	if (*p == '"')
		return (2);
	if (*p >= 0x80) {
		if ((n = utf8_seq(p, e - p)) == 0)
			return (0);
		*next = p + n;
		return (1);
	}
	if (*p < 0x20)
		return (0);
	/* a backslash */
	*esc = 1;
	if (e - p < 2)
		return (0);
	switch (escapes[p[1]]) {
	case 1:
		*next = p + 2;
		return (1);
	case 2:
		/* escaped surrogates: json-c's reading of a lone one is
		 * its own; leave them to it */
		if (e - p < 6 || !hex(p[2]) || !hex(p[3]) || !hex(p[4]) ||
		    !hex(p[5]) || ((p[2] == 'd' || p[2] == 'D') && p[3] >= '8'))
			return (0);
		*next = p + 6;
		return (1);
	default:
		return (0);
	}
}

#ifdef SCAN_AVX2
static const uint64_t	 EVEN = 0x5555555555555555ULL;

/*
 * UTF-8 over 32 bytes at once, as Keiser and Lemire have it ("Validating
 * UTF-8 in less than one instruction per byte", 2021): each byte with
 * the one before it is looked up by three nibbles (the first byte's
 * two, the second's high one) in tables of the errors a pair can show,
 * one bit an error; a pair is wrong where all three lookups share a
 * bit.  The third and fourth bytes of a sequence are continuations the
 * pair tables call "two continuations", which is right only there: so
 * that bit is flipped where the byte two or three back is a lead of
 * three or four bytes.  in is the 32 bytes, before the 32 before them.
 * A byte of the result other than 0 is an error at that byte: a
 * sequence cut short shows at the byte after it.
 */
#define U_SHORT		0x01	/* a lead without its continuation */
#define U_LONG		0x02	/* a continuation after ASCII */
#define U_OVER3		0x04	/* e0 80-9f */
#define U_LARGE		0x08	/* past U+10FFFF: f4 90-bf, f5-ff */
#define U_SURR		0x10	/* ed a0-bf */
#define U_OVER2		0x20	/* c0-c1 */
#define U_LARGE80	0x40	/* f5-ff 80-8f; f0 80-8f (overlong) */
#define U_CONTS		0x80	/* a continuation after a continuation */
#define U_CARRY		(U_SHORT | U_LONG | U_CONTS)

#define HI1	U_LONG, U_LONG, U_LONG, U_LONG, U_LONG, U_LONG, U_LONG, \
	U_LONG, U_CONTS, U_CONTS, U_CONTS, U_CONTS, U_SHORT | U_OVER2, \
	U_SHORT, U_SHORT | U_OVER3 | U_SURR, U_SHORT | U_LARGE | U_LARGE80
#define LO1	U_CARRY | U_OVER3 | U_OVER2 | U_LARGE80, U_CARRY | U_OVER2, \
	U_CARRY, U_CARRY, U_CARRY | U_LARGE, U_CARRY | U_LARGE | U_LARGE80, \
	U_CARRY | U_LARGE | U_LARGE80, U_CARRY | U_LARGE | U_LARGE80, \
	U_CARRY | U_LARGE | U_LARGE80, U_CARRY | U_LARGE | U_LARGE80, \
	U_CARRY | U_LARGE | U_LARGE80, U_CARRY | U_LARGE | U_LARGE80, \
	U_CARRY | U_LARGE | U_LARGE80, U_CARRY | U_LARGE | U_LARGE80 | U_SURR, \
	U_CARRY | U_LARGE | U_LARGE80, U_CARRY | U_LARGE | U_LARGE80
#define HI2	U_SHORT, U_SHORT, U_SHORT, U_SHORT, U_SHORT, U_SHORT, U_SHORT, \
	U_SHORT, U_LONG | U_OVER2 | U_CONTS | U_OVER3 | U_LARGE80, \
	U_LONG | U_OVER2 | U_CONTS | U_OVER3 | U_LARGE, \
	U_LONG | U_OVER2 | U_CONTS | U_SURR | U_LARGE, \
	U_LONG | U_OVER2 | U_CONTS | U_SURR | U_LARGE, \
	U_SHORT, U_SHORT, U_SHORT, U_SHORT
/* each twice: a lookup is within each 16-byte half */
static const unsigned char	 u_hi1[32] = { HI1, HI1 };
static const unsigned char	 u_lo1[32] = { LO1, LO1 };
static const unsigned char	 u_hi2[32] = { HI2, HI2 };
#undef HI1
#undef LO1
#undef HI2

__attribute__((target("avx2")))
static inline __m256i
utf8_avx2(__m256i in, __m256i before)
{
	const __m256i	 low = _mm256_set1_epi8(0x0f);
	const __m256i	 hi1 = _mm256_loadu_si256((const __m256i *)
			    (const void *)u_hi1);
	const __m256i	 lo1 = _mm256_loadu_si256((const __m256i *)
			    (const void *)u_lo1);
	const __m256i	 hi2 = _mm256_loadu_si256((const __m256i *)
			    (const void *)u_hi2);
	__m256i		 t, b1, b2, b3, pair, third;

	/* the bytes one, two and three back */
	t = _mm256_permute2x128_si256(before, in, 0x21);
	b1 = _mm256_alignr_epi8(in, t, 15);
	b2 = _mm256_alignr_epi8(in, t, 14);
	b3 = _mm256_alignr_epi8(in, t, 13);
	pair = _mm256_and_si256(_mm256_and_si256(
	    _mm256_shuffle_epi8(hi1, _mm256_and_si256(_mm256_srli_epi16(b1, 4),
	    low)), _mm256_shuffle_epi8(lo1, _mm256_and_si256(b1, low))),
	    _mm256_shuffle_epi8(hi2, _mm256_and_si256(_mm256_srli_epi16(in, 4),
	    low)));
	/* 0x80 where two back is e0-ff or three back f0-ff */
	third = _mm256_and_si256(_mm256_or_si256(
	    _mm256_subs_epu8(b2, _mm256_set1_epi8((char)(0xe0 - 0x80))),
	    _mm256_subs_epu8(b3, _mm256_set1_epi8((char)(0xf0 - 0x80)))),
	    _mm256_set1_epi8((char)0x80));
	return (_mm256_xor_si256(pair, third));
}

/*
 * The bytes of the 64 at p that are bad UTF-8 (utf8_avx2), one bit each;
 * the 32 before p are looked at unless p is where the steps began.  Not
 * inlined: its tables would take the registers of the steps' loop.
 */
__attribute__((target("avx2"), noinline))
static uint64_t
utf8_bad(const unsigned char *p, int first)
{
	const __m256i	 zero = _mm256_setzero_si256();
	__m256i		 x, y, before;

	x = _mm256_loadu_si256((const __m256i *)(const void *)p);
	y = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
	before = first ? zero :
	    _mm256_loadu_si256((const __m256i *)(const void *)(p - 32));
	return (~((uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(
	    utf8_avx2(x, before), zero)) | (uint64_t)(uint32_t)
	    _mm256_movemask_epi8(_mm256_cmpeq_epi8(utf8_avx2(y, x), zero)) <<
	    32));
}

/*
 * Of the letters lt of the 64 bytes at p that are not one of " \ / b f n
 * r t, those that are not the u of a \u escape with its four hex digits
 * and no surrogate (json-c's reading of an escaped surrogate is its
 * own: the scan leaves those to it).  The digits of a u near the end are
 * read from the four bytes after the 64 where more is 1 (they are
 * there); the step after begins among them, where they are plain bytes.
 * Text that a client wrote with every character >= 0x80 escaped (JSON
 * encoders that keep to ASCII) is most of its bytes in such escapes.
 * Out of line, as utf8_bad.
 */
__attribute__((target("avx2")))
static inline uint32_t
hex_mask(__m256i v, uint32_t *d, uint32_t *h8)
{
	const __m256i	 l = _mm256_or_si256(v, _mm256_set1_epi8(0x20));
	__m256i		 af;

	/* letters as lower case; the signed compares leave out bytes
	 * >= 0x80 */
	af = _mm256_and_si256(_mm256_cmpgt_epi8(l, _mm256_set1_epi8('a' - 1)),
	    _mm256_cmpgt_epi8(_mm256_set1_epi8('f' + 1), l));
	*d = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(l,
	    _mm256_set1_epi8('d')));
	/* 8, 9, a-f: the second digit of a surrogate */
	*h8 = (uint32_t)_mm256_movemask_epi8(_mm256_or_si256(af,
	    _mm256_and_si256(_mm256_cmpgt_epi8(v, _mm256_set1_epi8('8' - 1)),
	    _mm256_cmpgt_epi8(_mm256_set1_epi8('9' + 1), v))));
	return ((uint32_t)_mm256_movemask_epi8(_mm256_or_si256(af,
	    _mm256_and_si256(_mm256_cmpgt_epi8(v, _mm256_set1_epi8('0' - 1)),
	    _mm256_cmpgt_epi8(_mm256_set1_epi8('9' + 1), v)))));
}

__attribute__((target("avx2"), noinline))
static uint64_t
uesc_left(const unsigned char *p, uint64_t lt, int more)
{
	const __m256i	 uu = _mm256_set1_epi8('u');
	__m256i		 x, y;
	unsigned __int128 hx, d, h8;
	uint64_t	 u;
	uint32_t	 a, b, da, db, ha, hb;

	x = _mm256_loadu_si256((const __m256i *)(const void *)p);
	y = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
	u = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, uu)) |
	    (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(y,
	    uu)) << 32;
	a = hex_mask(x, &da, &ha);
	b = hex_mask(y, &db, &hb);
	hx = a | (uint64_t)b << 32;
	d = da | (uint64_t)db << 32;
	h8 = ha | (uint64_t)hb << 32;
	if (more) {
		/* bytes 36 to 67: the top four are 64 to 67 */
		a = hex_mask(_mm256_loadu_si256((const __m256i *)
		    (const void *)(p + 36)), &da, &ha) >> 28;
		hx |= (unsigned __int128)a << 64;
		d |= (unsigned __int128)(da >> 28) << 64;
		h8 |= (unsigned __int128)(ha >> 28) << 64;
	}
	/* four hex digits after u, and not d or D then 8-f */
	u &= lt & (uint64_t)((hx >> 1) & (hx >> 2) & (hx >> 3) & (hx >> 4) &
	    ~((d >> 1) & (h8 >> 2)));
	return (lt & ~u);
}

/* Of bytes that are valid UTF-8 so far, how many at the end before p
 * are a sequence not yet whole. */
static inline size_t
utf8_cut(const unsigned char *p)
{
	if (p[-1] >= 0xc0)
		return (1);
	if (p[-2] >= 0xe0)
		return (2);
	if (p[-3] >= 0xf0)
		return (3);
	return (0);
}

/*
 * 64 bytes a step with AVX2, where the CPU has it (most x86-64 since
 * 2013; cpuid says, once).  A text with an escape every few words has a
 * marked byte in nearly every step, and taking them one by one costs a
 * mispredicted branch each; here a step is checked with no branch that
 * depends on where its marked bytes are:
 *
 * - the backslashes as a mask, and from it (runs of them added to a bit
 *   at their start: the carry ends each run) the byte after each run of
 *   odd length, the letter of an escape; a backslash inside a run is
 *   itself a letter, always a valid one.  A run of odd length at a
 *   step's end makes the next step's first byte a letter: the one bit
 *   carried from step to step (the steps' loads depend on nothing
 *   found in them, so that they overlap);
 * - the letters classed by their two nibbles (two table lookups a byte),
 *   so that every one must be " \ / b f n r t;
 * - the first quote that is no letter ends the string; before it, no
 *   byte < 0x20, and the bytes >= 0x80 valid UTF-8 (utf8_avx2) up to
 *   the quote, which shows a sequence it cuts short.
 *
 * A step of plain ASCII text is only looked at; a letter u must begin a
 * \u escape (uesc_left).  A step that has anything else before its end
 * (a control character, a bad escape, bad UTF-8) is left to the 32-byte
 * steps, which give every answer, from its first byte, or from the
 * backslash or the lead byte before it if that byte is a letter or a
 * continuation.  Returns 2 with *pp on the closing quote, or 1 with *pp
 * where the 32-byte steps go on (fewer than 64 bytes left, or a step
 * they must take).
 */
__attribute__((target("avx2")))
static int
blocks_avx2(const unsigned char **pp, const unsigned char *e, int *esc)
{
	const __m256i	 q = _mm256_set1_epi8('"'), b = _mm256_set1_epi8('\\');
	const __m256i	 sp = _mm256_set1_epi8(0x20);
	const __m256i	 low = _mm256_set1_epi8(0x0f), zero = _mm256_setzero_si256();
	/* " and / under 2; \ under 5; b f n under 6; r t under 7 */
	const __m256i	 thi = _mm256_setr_epi8(0, 0, 1, 0, 0, 2, 4, 8,
			    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 2, 4, 8,
			    0, 0, 0, 0, 0, 0, 0, 0);
	const __m256i	 tlo = _mm256_setr_epi8(0, 0, 1 | 4 | 8, 0, 8, 0, 4,
			    0, 0, 0, 0, 0, 2, 0, 4, 1, 0, 0, 1 | 4 | 8, 0, 8,
			    0, 4, 0, 0, 0, 0, 0, 2, 0, 4, 1);
	const unsigned char	*p = *pp, *start = *pp;
	__m256i		 x, y, cx, cy;
	uint64_t	 bs, qt, ctl, hi, starts, ev, od, letters, end, ok, bad;
	uint64_t	 prev = 0;	/* the first byte is a letter */
	uint64_t	 cut = 0;	/* the last step ended with bytes >= 0x80 */

	while (e - p >= 64) {
		x = _mm256_loadu_si256((const __m256i *)(const void *)p);
		y = _mm256_loadu_si256((const __m256i *)(const void *)(p + 32));
		/* plain ASCII text: nothing to do */
		cx = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(x, b),
		    _mm256_cmpeq_epi8(x, q)), _mm256_cmpgt_epi8(sp, x));
		cy = _mm256_or_si256(_mm256_or_si256(_mm256_cmpeq_epi8(y, b),
		    _mm256_cmpeq_epi8(y, q)), _mm256_cmpgt_epi8(sp, y));
		cx = _mm256_or_si256(cx, cy);
		if ((prev | cut) == 0 && _mm256_testz_si256(cx, cx)) {
			p += 64;
			continue;
		}
		bs = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, b)) |
		    (uint64_t)(uint32_t)_mm256_movemask_epi8(
		    _mm256_cmpeq_epi8(y, b)) << 32;
		qt = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(x, q)) |
		    (uint64_t)(uint32_t)_mm256_movemask_epi8(
		    _mm256_cmpeq_epi8(y, q)) << 32;
		/* >= 0x80, and < 0x20 or >= 0x80 (less than 0x20 as
		 * signed bytes) */
		hi = (uint32_t)_mm256_movemask_epi8(x) |
		    (uint64_t)(uint32_t)_mm256_movemask_epi8(y) << 32;
		ctl = ((uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(sp, x)) |
		    (uint64_t)(uint32_t)_mm256_movemask_epi8(
		    _mm256_cmpgt_epi8(sp, y)) << 32) & ~hi;
		cx = _mm256_and_si256(_mm256_shuffle_epi8(thi,
		    _mm256_and_si256(_mm256_srli_epi16(x, 4), low)),
		    _mm256_shuffle_epi8(tlo, _mm256_and_si256(x, low)));
		cy = _mm256_and_si256(_mm256_shuffle_epi8(thi,
		    _mm256_and_si256(_mm256_srli_epi16(y, 4), low)),
		    _mm256_shuffle_epi8(tlo, _mm256_and_si256(y, low)));
		ok = ~((uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(cx,
		    zero)) | (uint64_t)(uint32_t)_mm256_movemask_epi8(
		    _mm256_cmpeq_epi8(cy, zero)) << 32);
		/* the letters: after the runs of odd length (a backslash
		 * that is a letter begins no run) */
		letters = prev;
		bs &= ~prev;
		starts = bs & ~(bs << 1);
		ev = (bs + (starts & EVEN)) & ~bs;
		prev = __builtin_add_overflow(bs, starts & ~EVEN, &od);
		od &= ~bs;
		letters |= (ev & ~EVEN) | (od & EVEN);
		end = qt & ~letters;
		end &= -end;		/* the closing quote, if here */
		bad = (ctl | (letters & ~ok)) & (end - 1);
		/* letters that may be \u escapes */
		if (bad != 0 && (ctl & (end - 1)) == 0)
			bad = uesc_left(p, bad, e - p >= 68);
		/* UTF-8, up to the quote and at it */
		if ((hi | cut) != 0)
			bad |= utf8_bad(p, p == start) & ((end - 1) | end);
		if (bad != 0) {
			/* from the backslash or the lead byte before, if
			 * this begins with a letter or a continuation */
			if (letters & 1)
				p--;
			else if (cut)
				p -= utf8_cut(p);
			*pp = p;
			return (1);
		}
		if ((bs & (end - 1)) != 0)
			*esc = 1;
		if (end != 0) {
			*pp = p + __builtin_ctzll(end);
			return (2);
		}
		cut = hi >> 61;
		p += 64;
	}
	/* a letter or a sequence the 64-byte steps did not finish: from
	 * its backslash or its lead byte */
	if (prev)
		p--;
	else if (cut)		/* set after a step: p is past one */
		p -= utf8_cut(p);
	*pp = p;
	return (1);
}

static int	 have_avx2 = -1;

/* Whether the 64-byte steps are taken: the CPU has AVX2, and the scan
 * was not told to keep to SSE2 or to words (the tests). */
static int
use_avx2(int mode)
{
	if (mode != SCAN_BEST)
		return (0);
	if (have_avx2 == -1) {
		__builtin_cpu_init();
		have_avx2 = __builtin_cpu_supports("avx2") ? 1 : 0;
	}
	return (have_avx2);
}
#endif

/*
 * The inside of a string from p, of the bytes before e, 32 a step: their
 * special bytes as a mask, taken one by one (an escape or a character
 * may reach into the next step), so that a text with an escape every
 * few words is not loaded again after each.  2 with *at on the closing
 * quote; 0 if the bytes cannot be a string's; 1 if the string runs on
 * past e, with *at where to go on from when more has come (e, or the
 * character or escape that e may cut short).  *esc is set if it has an
 * escape.
 */
static int
string_in(const unsigned char *p, const unsigned char *e, int portable,
    const unsigned char **at, int *esc)
{
	const unsigned char	*blk, *q;
	uint32_t		 m;
	int			 r;
#ifdef SCAN_AVX2
	int			 avx2 = use_avx2(portable);
#endif

	while (e - p >= 32) {
#ifdef SCAN_AVX2
		if (avx2 && blocks_avx2(&p, e, esc) == 2) {
			q = p;
			r = 2;
			goto stop;
		}
		if (e - p < 32)
			break;
#endif
		blk = p;
#ifdef __SSE2__
		m = portable == SCAN_WORDS ? mask_words(blk) : mask_sse2(blk);
#else
		(void)portable;
		m = mask_words(blk);
#endif
		while (m != 0) {
			q = blk + __builtin_ctz(m);
			if ((r = string_byte(q, e, &p, esc)) != 1)
				goto stop;
			if (p - blk >= 32)
				break;
			m &= ~0U << (p - blk);
		}
		if (p - blk < 32)
			p = blk + 32;
	}
	for (;;) {
		while (p < e && !special(*p))
			p++;
		if (p >= e) {
			*at = e;
			return (1);
		}
		q = p;
		if ((r = string_byte(q, e, &p, esc)) != 1)
			goto stop;
	}
 stop:
	*at = q;
	if (r == 2)
		return (2);
	/* an escape or a character is at most 6 bytes: whole, later? */
	return (e - q < 6);
}

/*
 * A string; *esc is set if it has an escape.  s->p is on the quote.  One
 * the prescan noted whole is taken as it noted it: the same bytes, read
 * by the same string_in, from the same quote.
 */
static int
scan_string(struct scanner *s, const unsigned char **start, size_t *len,
    int *esc)
{
	const struct prescan	*pre = s->pre;
	const unsigned char	*at;
	size_t			 off = s->p - s->base;

	*start = s->p + 1;
	if (pre != NULL) {
		while (s->k < pre->n && pre->s[s->k].start < off)
			s->k++;
		if (s->k < pre->n && pre->s[s->k].start == off) {
			*len = pre->s[s->k].end - off - 1;
			*esc = pre->s[s->k].esc;
			s->p = s->base + pre->s[s->k++].end + 1;
			return (1);
		}
	}
	*esc = 0;
	if (string_in(s->p + 1, s->end, s->portable, &at, esc) != 2)
		return (0);
	*len = at - *start;
	s->p = at + 1;
	return (1);
}

/*
 * The strings of a body as it comes in, bytes [0, avail) of it so far,
 * where they are still in the cache: each noted whole, with where it
 * ends, for the scan to take as it is.  The rest of the body (its
 * structure, its numbers) is left to the scan, which takes a string
 * from the notes only when one begins at the very quote it is on.  On
 * bytes no string can have, or PRESCAN_MAX strings, it notes no more.
 */
void
prescan_feed(struct prescan *ps, const char *body, size_t avail)
{
	const unsigned char	*b = (const unsigned char *)body;
	const unsigned char	*p = b + ps->pos, *e = b + avail, *at;
	struct pstr		*v;
	int			 r;

	if (ps->off)
		return;
	while (p < e) {
		if (!ps->in) {
			if ((at = memchr(p, '"', e - p)) == NULL) {
				p = e;
				break;
			}
			ps->in = 1;
			ps->esc = 0;
			ps->start = at - b;
			p = at + 1;
			continue;
		}
		if ((r = string_in(p, e, scan_portable, &at, &ps->esc)) == 1) {
			p = at;
			break;
		}
		if (r == 0 || ps->n == PRESCAN_MAX) {
			ps->off = 1;
			return;
		}
		if (ps->n == ps->cap) {
			if ((v = reallocarray(ps->s, ps->cap ? ps->cap * 2 : 64,
			    sizeof(*v))) == NULL) {
				ps->off = 1;
				return;
			}
			ps->s = v;
			ps->cap = ps->cap ? ps->cap * 2 : 64;
		}
		ps->s[ps->n].start = ps->start;
		ps->s[ps->n].end = at - b;
		ps->s[ps->n++].esc = ps->esc;
		ps->in = 0;
		p = at + 1;
	}
	ps->pos = p - b;
}

/* Forget the notes, for the next body: their room stays. */
void
prescan_reset(struct prescan *ps)
{
	struct pstr	*s = ps->s;
	size_t		 cap = ps->cap;

	memset(ps, 0, sizeof(*ps));
	ps->s = s;
	ps->cap = cap;
}

/* Forget the notes and their room, for good. */
void
prescan_clear(struct prescan *ps)
{
	free(ps->s);
	memset(ps, 0, sizeof(*ps));
}

/*
 * The JSON number at p, of the bytes before e,
 * -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? : where it ends, or
 * NULL when there is none.  *integer: it has no . and no e.
 */
const unsigned char *
scan_json_number(const unsigned char *p, const unsigned char *e,
    int *integer)
{
	*integer = 1;
	if (p < e && *p == '-')
		p++;
	if (p >= e)
		return (NULL);
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	else
		return (NULL);
	if (p < e && *p == '.') {
		*integer = 0;
		if (++p >= e || *p < '0' || *p > '9')
			return (NULL);
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < e && (*p == 'e' || *p == 'E')) {
		*integer = 0;
		if (++p < e && (*p == '+' || *p == '-'))
			p++;
		if (p >= e || *p < '0' || *p > '9')
			return (NULL);
		while (p < e && *p >= '0' && *p <= '9')
			p++;
	}
	return (p);
}

static int
scan_number(struct scanner *s, int *integer)
{
	const unsigned char	*p;

	if ((p = scan_json_number(s->p, s->end, integer)) == NULL)
		return (0);
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

/* The n bytes at v as 1 to max decimal digits (max at most 18) into
 * *out: 1; else 0, and *out as it was. */
int
scan_digits(const char *v, size_t n, size_t max, int64_t *out)
{
	int64_t	 x = 0;
	size_t	 i;

	if (n == 0 || n > max)
		return (0);
	for (i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return (0);
		x = x * 10 + (v[i] - '0');
	}
	*out = x;
	return (1);
}

/* A count for max_tokens and the like: null (-1), or a short integer
 * >= 0; 0 if the n bytes at v are neither. */
int
scan_count(const char *v, size_t n, int64_t *out)
{
	if (n == 4 && memcmp(v, "null", 4) == 0) {
		*out = -1;
		return (1);
	}
	return (scan_digits(v, n, 15, out));
}

enum {
	CTX_OTHER,
	CTX_TOP,		/* the body itself */
	CTX_MESSAGES,		/* the top "messages" array */
	CTX_MESSAGE,		/* an object in it */
	CTX_CONTENT,		/* an array of content parts */
	CTX_PART,		/* an object in it */
	CTX_NOTE,		/* an object of a part: s->want's value */
};

/* What a content part's members say, as check_part (rules.c) reads
 * them; values with their quotes. */
struct part {
	const unsigned char	*type;
	size_t			 typelen;
	int			 typeesc;
	const unsigned char	*url;		/* image_url's, or its "url" */
	size_t			 urllen;
	const unsigned char	*src;		/* source's "type" */
	size_t			 srclen;
	int			 file_id;	/* "file" has a "file_id" */
	int			 id;		/* the part has a "file_id" */
	int			 fileurl;	/* or a "file_url" */
};

/* Whether the n bytes at v are the JSON string w. */
static int
is(const unsigned char *v, size_t n, const char *w)
{
	size_t	 l = strlen(w);

	return (n == l + 2 && *v == '"' && memcmp(v + 1, w, l) == 0);
}

/*
 * The end of a content part: 1 when the tree's check_part would take it
 * from a runtime that allows its type, which is noted; 0 when the tree
 * must say (no type, or one with an escape or too long to note, a media
 * part not given inline, more types than RSCAN_TYPES).
 */
static int
part_end(struct scanner *s, const struct part *pt)
{
	struct rscan	*rs = s->rs;
	char		 type[RSCAN_TYPELEN];
	const char	*name;
	size_t		 i;

	if (pt->type == NULL || *pt->type != '"' || pt->typeesc ||
	    pt->typelen - 2 >= sizeof(type))
		return (0);
	memcpy(type, pt->type + 1, pt->typelen - 2);
	type[pt->typelen - 2] = '\0';
	/* Anthropic's blocks of a conversation with tools: no type to
	 * ask about; a tool_result's content was scanned as parts */
	if (s->parts == PARTS_MESSAGES && (strcmp(type, "tool_use") == 0 ||
	    strcmp(type, "thinking") == 0 ||
	    strcmp(type, "redacted_thinking") == 0 ||
	    strcmp(type, "tool_result") == 0))
		return (1);
	name = routes_part_name(s->parts, type);
	if (s->parts == PARTS_MESSAGES && (strcmp(name, "image_url") == 0 ||
	    strcmp(name, "file") == 0)) {
		/* a base64 source; a document's may be text too */
		if (pt->src == NULL || (!is(pt->src, pt->srclen, "base64") &&
		    (strcmp(name, "file") != 0 ||
		    (!is(pt->src, pt->srclen, "text") &&
		    !is(pt->src, pt->srclen, "content")))))
			return (0);
	} else if (strcmp(name, "image_url") == 0) {
		/* the Responses' is a string beside no file_id */
		if (pt->url == NULL || *pt->url != '"' || pt->urllen < 13 ||
		    memcmp(pt->url + 1, "data:image/", 11) != 0 ||
		    (s->parts == PARTS_RESPONSES && pt->id))
			return (0);
	} else if (strcmp(name, "file") == 0 && (s->parts == PARTS_RESPONSES ?
	    pt->id || pt->fileurl : pt->file_id))
		return (0);
	for (i = 0; i < rs->ntypes; i++)
		if (strcmp(rs->types[i], name) == 0)
			return (1);
	if (rs->ntypes == RSCAN_TYPES || strlen(name) >= RSCAN_TYPELEN)
		return (0);
	(void)strlcpy(rs->types[rs->ntypes++], name, RSCAN_TYPELEN);
	return (1);
}

/* Whether a top member is a list of the Responses' input items. */
static int
items(const struct scanner *s, const unsigned char *k, size_t klen)
{
	return (s->parts == PARTS_RESPONSES && ((klen == 5 &&
	    memcmp(k, "input", 5) == 0) || (klen == 12 &&
	    memcmp(k, "instructions", 12) == 0)));
}

/*
 * The context of a member's value, whose first byte is c: the top's
 * "messages", an array of content parts (a message's "content",
 * Messages' "system" and a block's "content"), or an object of a part
 * with a name to note (CTX_NOTE: s->want).
 */
static int
member_ctx(struct scanner *s, int ctx, const unsigned char *k, size_t klen,
    int c)
{
	int	 content = klen == 7 && memcmp(k, "content", 7) == 0;

	if (ctx == CTX_TOP && ((klen == 8 && memcmp(k, "messages", 8) == 0) ||
	    (c == '[' && items(s, k, klen))))
		return (CTX_MESSAGES);
	if (s->parts == PARTS_NONE)
		return (CTX_OTHER);
	if (c == '[' && ((ctx == CTX_MESSAGE && (content ||
	    (s->parts == PARTS_RESPONSES && klen == 6 &&
	    memcmp(k, "output", 6) == 0))) ||
	    (s->parts == PARTS_MESSAGES && ((ctx == CTX_PART && content) ||
	    (ctx == CTX_TOP && klen == 6 && memcmp(k, "system", 6) == 0)))))
		return (CTX_CONTENT);
	if (ctx != CTX_PART || c != '{')
		return (CTX_OTHER);
	/* the Responses' image_url is a string alone */
	if (klen == 9 && memcmp(k, "image_url", 9) == 0 &&
	    s->parts != PARTS_RESPONSES)
		s->want = "url";
	else if (klen == 6 && memcmp(k, "source", 6) == 0)
		s->want = "type";
	else if (klen == 4 && memcmp(k, "file", 4) == 0)
		s->want = "file_id";
	else
		return (CTX_OTHER);
	s->wantlen = strlen(s->want);
	s->got = NULL;
	return (CTX_NOTE);
}

/* A member of a content part, its value scanned (n bytes at v). */
static void
part_member(struct scanner *s, struct part *pt, const unsigned char *k,
    size_t klen, const unsigned char *v, size_t n, int vesc, int sub)
{
	const unsigned char	*g = sub == CTX_NOTE ? s->got : NULL;

	if (klen == 4 && memcmp(k, "type", 4) == 0) {
		pt->type = v;
		pt->typelen = n;
		pt->typeesc = vesc;
	} else if (klen == 9 && memcmp(k, "image_url", 9) == 0) {
		pt->url = *v == '"' ? v : g;
		pt->urllen = *v == '"' ? n : s->gotlen;
	} else if (klen == 6 && memcmp(k, "source", 6) == 0) {
		pt->src = g;
		pt->srclen = s->gotlen;
	} else if (klen == 4 && memcmp(k, "file", 4) == 0)
		pt->file_id = g != NULL;
	else if (klen == 7 && memcmp(k, "file_id", 7) == 0)
		pt->id = 1;
	else if (klen == 8 && memcmp(k, "file_url", 8) == 0)
		pt->fileurl = 1;
}

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
		return (scan_count((const char *)v, n, &rs->max_tokens));
	else if (klen == 21 && memcmp(k, "max_completion_tokens", 21) == 0)
		return (scan_count((const char *)v, n,
		    &rs->max_completion_tokens));
	else if (klen == 17 && memcmp(k, "max_output_tokens", 17) == 0)
		return (scan_count((const char *)v, n,
		    &rs->max_output_tokens));
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
	struct rfield		*f;
	struct part		 pt;
	int			 esc, vesc, sub, r;

	memset(&pt, 0, sizeof(pt));
	s->p++;		/* { */
	ws(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		return (ctx != CTX_PART);	/* a part has a type */
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
		v = s->p;
		sub = member_ctx(s, ctx, k, klen, v < s->end ? *v : 0);
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
			f = &s->rs->top[s->rs->ntop++];
			f->name = k - s->base;
			f->namelen = klen;
			f->value = v - s->base;
			f->valuelen = s->p - v;
		} else if (ctx == CTX_PART)
			part_member(s, &pt, k, klen, v, s->p - v, vesc, sub);
		else if (ctx == CTX_NOTE && klen == s->wantlen &&
		    memcmp(k, s->want, klen) == 0) {
			s->got = v;
			s->gotlen = s->p - v;
		}
		/* a message's content: a string, null, or parts (above) */
		if (ctx == CTX_MESSAGE && klen == 7 &&
		    memcmp(k, "content", 7) == 0 && *v != '"' &&
		    sub != CTX_CONTENT &&
		    !(s->p - v == 4 && memcmp(v, "null", 4) == 0))
			return (0);
		/* "messages" itself must be an array for the rules; the
		 * Responses' items a string or an array */
		if ((sub == CTX_MESSAGES && *v != '[') || (ctx == CTX_TOP &&
		    *v != '"' && *v != '[' && items(s, k, klen)))
			return (0);
		if ((r = after(s, '}')) == -1)
			return (0);
		if (r == 1)
			return (ctx != CTX_PART || part_end(s, &pt));
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
		/* a content part is an object */
		if (ctx == CTX_CONTENT && (s->p >= s->end || *s->p != '{'))
			return (0);
		if (!scan_value(s, ctx == CTX_MESSAGES ? CTX_MESSAGE :
		    ctx == CTX_CONTENT ? CTX_PART : CTX_OTHER, 1))
			return (0);
		if ((r = after(s, ']')) != 0)
			return (r == 1);
	}
}

/* A value; ctx says where it is.  In an array, ctx applies to objects
 * (CTX_MESSAGE, CTX_PART); elsewhere to what the value is. */
static int
scan_value(struct scanner *s, int ctx, int inarray)
{
	const unsigned char	*t;
	size_t			 tl;
	int			 esc, integer, r, parts;

	if (s->p >= s->end)
		return (0);
	switch (*s->p) {
	case '{':
		if (++s->depth > SCAN_DEPTH)
			return (0);
		r = scan_object(s, inarray ? ctx : ctx == CTX_TOP ||
		    ctx == CTX_NOTE ? ctx : CTX_OTHER);
		s->depth--;
		return (r);
	case '[':
		if (++s->depth > SCAN_DEPTH)
			return (0);
		/* parts in a block's content, nested no deeper than the
		 * tree takes (a message's content is the first) */
		parts = !inarray && ctx == CTX_CONTENT;
		if ((s->cdepth += parts) > 3)
			return (0);
		r = scan_array(s, inarray ? CTX_OTHER : ctx);
		s->cdepth -= parts;
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

/*
 * The body as strict JSON: an object, with the rules' checks and notes
 * (CTX_TOP) or without them (CTX_OTHER).
 *
 * It only ever says yes to a body that json-c reads as the same thing
 * and that every other parser reads alike: an object, strict grammar,
 * valid UTF-8, at most SCAN_DEPTH deep, no object with a name twice and
 * no name with an escape (so names compare as bytes), no more than
 * SCAN_KEYS names an object.  And only when the rules' answer can be
 * read off the notes: "model" absent, null or a string without escapes,
 * max_tokens and max_completion_tokens absent, null or integers of at
 * most 15 digits, max_output_tokens too, and every message's "content"
 * a string or null, or, on a route with content parts
 * (rules_scan_parts), an array of parts as rules.c's check_part reads
 * them: each an object with a type that is a string without escapes,
 * an image's or a file's given inline (a data:image/ URL, a base64
 * source, no file_id nor file_url), nested no deeper than the tree
 * allows; each type is noted once (rs->types, by its chat name), for
 * splice_rules to ask the model's runtime.  The Responses' "input" and
 * "instructions" are a string or a list of items read as messages are,
 * their "output" as parts too.  Anything else is
 * "no" (0), and the body takes the json-c path, which gives every error.
 * Where the scan is in doubt it says no: a block that is not
 * tool_result but has a "content" array is read as parts too.  The
 * fuzzer holds the two paths to the same decisions.
 */
static int
scan(const char *buf, size_t len, const struct prescan *pre,
    struct rscan *rs, int ctx, int parts)
{
	struct scanner	 s;

	memset(rs, 0, sizeof(*rs));
	rs->max_tokens = rs->max_completion_tokens = -1;
	rs->max_output_tokens = -1;
	rs->base = buf;
	s.base = s.p = (const unsigned char *)buf;
	s.end = s.p + len;
	s.rs = rs;
	s.depth = 0;
	s.portable = scan_portable;
	s.pre = pre;
	s.k = 0;
	s.parts = parts == PARTS_CHAT || parts == PARTS_MESSAGES ||
	    parts == PARTS_RESPONSES ? parts : PARTS_NONE;
	s.cdepth = 0;
	s.want = NULL;
	s.wantlen = 0;
	s.got = NULL;
	s.gotlen = 0;
	ws(&s);
	if (s.p >= s.end || *s.p != '{')
		return (0);
	rs->open = s.p - s.base;
	if (!scan_value(&s, ctx, 0))
		return (0);
	rs->close = s.p - 1 - s.base;
	ws(&s);
	return (s.p == s.end);
}

/*
 * 1 with rs filled in when buf[0..len) may take the fast path (see
 * above); 0 when it must be parsed by json-c.  UTF-8 is checked in
 * strings, where alone bytes >= 0x80 are taken.  pre: what
 * prescan_feed noted of the body as it came in, or NULL.
 */
int
rules_scan(const char *buf, size_t len, const struct prescan *pre,
    struct rscan *rs)
{
	return (scan(buf, len, pre, rs, CTX_TOP, PARTS_NONE));
}

/* rules_scan of a body of a route whose content parts are parts
 * (routes.h): an array of them is read, not refused (see above). */
int
rules_scan_parts(const char *buf, size_t len, const struct prescan *pre,
    int parts, struct rscan *rs)
{
	return (scan(buf, len, pre, rs, CTX_TOP, parts));
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

	return (scan(buf, len, NULL, &rs, CTX_OTHER, PARTS_NONE));
}
