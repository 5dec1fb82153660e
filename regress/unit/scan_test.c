/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The body scan (scan.c) against json-c, and its two ways of finding
 * the bytes that matter (SSE2, and 8 bytes a word) against each other.
 *
 * Every escape and every class of UTF-8 sequence, well-formed or not,
 * is put at every offset of a 32-byte step (the scan's widest) in a
 * string, and a corpus of generated bodies of many sizes, from a few
 * bytes to a megabyte, carries them too.  For each body: both ways give
 * the same answer and the same notes; a body the scan takes is one
 * json-c takes, and what the scan noted of it (the model, stream, the
 * counts, every top-level member by its name and where its value is)
 * is what json-c's tree has; a body that is valid JSON of the kind the
 * scan is for is taken; one that is not JSON, or not UTF-8, is refused
 * by both; one that json-c reads only leniently (raw control
 * characters) is refused by the scan and is not "plain".
 *
 * The splicing of such bodies (splice.c) against the json-c path's
 * rules_apply and rules_rewrite: the same refusals, and bodies that
 * read as the same JSON, strict and with no name twice.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include <atf-c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "proxy.h"
#include "routes.h"

/* agency-proxy's own, from proxy.c, which this does not link. */
static struct proxy	 proxy;
struct proxy		*px = &proxy;

/* What a piece of a string makes of the body around it. */
enum want {
	TAKEN,		/* valid, and the scan takes it */
	DECLINED,	/* valid JSON the scan leaves to json-c */
	REFUSED,	/* not JSON, or not UTF-8: both refuse it */
	LENIENT,	/* json-c may read it; the scan and "plain" do not */
};

struct piece {
	const char	*s;
	size_t		 len;
	enum want	 want;
};

#define P(s, w)	{ s, sizeof(s) - 1, w }
static const struct piece	 pieces[] = {
	/* escapes */
	P("\\\"", TAKEN), P("\\\\", TAKEN), P("\\/", TAKEN), P("\\b", TAKEN),
	P("\\f", TAKEN), P("\\n", TAKEN), P("\\r", TAKEN), P("\\t", TAKEN),
	P("\\u0000", TAKEN), P("\\u001f", TAKEN), P("\\u0041", TAKEN),
	P("\\u007F", TAKEN), P("\\u0080", TAKEN), P("\\u07ff", TAKEN),
	P("\\u0800", TAKEN), P("\\uD7FF", TAKEN), P("\\ue000", TAKEN),
	P("\\uFFFF", TAKEN), P("\\uabCD", TAKEN), P("\\u00e9\\n\\\"", TAKEN),
	/* escaped surrogates: valid, json-c's to read */
	P("\\ud83d\\ude00", DECLINED), P("\\uD800\\uDC00", DECLINED),
	P("\\udbff\\udfff", DECLINED), P("\\ud800", DECLINED),
	P("\\uDFFF", DECLINED),
	/* escapes that are not */
	P("\\x", REFUSED), P("\\u12G4", REFUSED), P("\\u12", REFUSED),
	P("\\U0041", REFUSED), P("\\a", REFUSED), P("\\'", REFUSED),
	P("\\0", REFUSED), P("\\u", REFUSED),
	/* well-formed UTF-8, at the edges of each class */
	P("\x7f", TAKEN), P("\xc2\x80", TAKEN), P("\xdf\xbf", TAKEN),
	P("\xe0\xa0\x80", TAKEN), P("\xe0\xbf\xbf", TAKEN),
	P("\xe1\x80\x80", TAKEN), P("\xec\xbf\xbf", TAKEN),
	P("\xed\x80\x80", TAKEN), P("\xed\x9f\xbf", TAKEN),
	P("\xee\x80\x80", TAKEN), P("\xef\xbf\xbf", TAKEN),
	P("\xf0\x90\x80\x80", TAKEN), P("\xf0\xbf\xbf\xbf", TAKEN),
	P("\xf1\x80\x80\x80", TAKEN), P("\xf3\xbf\xbf\xbf", TAKEN),
	P("\xf4\x80\x80\x80", TAKEN), P("\xf4\x8f\xbf\xbf", TAKEN),
	P("\xc3\xa9\xe2\x80\x94\xf0\x9f\x98\x80\xe6\x97\xa5", TAKEN),
	/* and not */
	P("\x80", REFUSED), P("\xbf", REFUSED), P("\xc0\x80", REFUSED),
	P("\xc1\xbf", REFUSED), P("\xc2", REFUSED), P("\xc2\xc0", REFUSED),
	P("\xc2\x7f", REFUSED), P("\xe0\x80\x80", REFUSED),
	P("\xe0\x9f\xbf", REFUSED), P("\xed\xa0\x80", REFUSED),
	P("\xed\xbf\xbf", REFUSED), P("\xe1\x80", REFUSED),
	P("\xe1\x7f\x80", REFUSED), P("\xe1\x80\xc0", REFUSED),
	P("\xf0\x80\x80\x80", REFUSED), P("\xf0\x8f\xbf\xbf", REFUSED),
	P("\xf4\x90\x80\x80", REFUSED), P("\xf5\x80\x80\x80", REFUSED),
	P("\xf1\x80\x80", REFUSED), P("\xf1\x80\x80\x7f", REFUSED),
	P("\xf8\x88\x80\x80\x80", REFUSED), P("\xfe", REFUSED),
	P("\xff", REFUSED), P("\xc3\xa9\x80", REFUSED),
	/* raw control characters */
	P("\x01", LENIENT), P("\x09", LENIENT), P("\x0a", LENIENT),
	P("\x0d", LENIENT), P("\x1f", LENIENT), P("x\x00y", LENIENT),
};
#undef P
#define NPIECES	(sizeof(pieces) / sizeof(pieces[0]))

/* A growing buffer, and where a piece may go into its strings. */
struct gen {
	uint64_t	 seed;
	char		*b;
	size_t		 len;
	size_t		 cap;
	size_t		*spots;
	size_t		 nspots;
	size_t		 spotcap;
	size_t		 names;		/* for names that differ */
};

static uint32_t
rnd(struct gen *g)
{
	g->seed ^= g->seed << 13;
	g->seed ^= g->seed >> 7;
	g->seed ^= g->seed << 17;
	return ((uint32_t)(g->seed >> 16));
}

static void
put(struct gen *g, const void *p, size_t n)
{
	if (g->len + n > g->cap) {
		while (g->len + n > g->cap)
			g->cap = g->cap ? g->cap * 2 : 4096;
		ATF_REQUIRE((g->b = realloc(g->b, g->cap)) != NULL);
	}
	memcpy(g->b + g->len, p, n);
	g->len += n;
}

static void
puts_(struct gen *g, const char *s)
{
	put(g, s, strlen(s));
}

static void
spot(struct gen *g)
{
	if (g->nspots == g->spotcap) {
		g->spotcap = g->spotcap ? g->spotcap * 2 : 256;
		ATF_REQUIRE((g->spots = reallocarray(g->spots, g->spotcap,
		    sizeof(*g->spots))) != NULL);
	}
	g->spots[g->nspots++] = g->len;
}

/* White space between tokens, now and then. */
static void
gws(struct gen *g)
{
	static const char	 w[] = " \t\n\r";

	while (rnd(g) % 4 == 0)
		put(g, &w[rnd(g) % 4], 1);
}

/* A code point of a UTF-8 class, encoded. */
static void
gutf8(struct gen *g)
{
	static const uint32_t	 lo[] = { 0x80, 0x800, 0xe000, 0x10000 };
	static const uint32_t	 hi[] = { 0x7ff, 0xd7ff, 0xffff, 0x10ffff };
	unsigned char		 u[4];
	uint32_t		 c;
	int			 k = rnd(g) % 4;

	c = lo[k] + rnd(g) % (hi[k] - lo[k] + 1);
	if (k == 1 && c < 0x800)
		c = 0x800;
	if (c < 0x800) {
		u[0] = 0xc0 | c >> 6;
		u[1] = 0x80 | (c & 0x3f);
		put(g, u, 2);
	} else if (c < 0x10000) {
		u[0] = 0xe0 | c >> 12;
		u[1] = 0x80 | (c >> 6 & 0x3f);
		u[2] = 0x80 | (c & 0x3f);
		put(g, u, 3);
	} else {
		u[0] = 0xf0 | c >> 18;
		u[1] = 0x80 | (c >> 12 & 0x3f);
		u[2] = 0x80 | (c >> 6 & 0x3f);
		u[3] = 0x80 | (c & 0x3f);
		put(g, u, 4);
	}
}

/* A string's inside, about n bytes: text with every taken piece. */
static void
gtext(struct gen *g, size_t n, int spots)
{
	size_t	 start = g->len, k, i;
	char	 c;

	while (g->len - start < n) {
		if (spots)
			spot(g);
		switch (rnd(g) % 8) {
		case 0:
			do
				k = rnd(g) % NPIECES;
			while (pieces[k].want != TAKEN);
			put(g, pieces[k].s, pieces[k].len);
			break;
		case 1:
			gutf8(g);
			break;
		default:
			/* a run of plain ASCII, long now and then */
			k = rnd(g) % 8 == 0 ? rnd(g) % 300 : rnd(g) % 24;
			for (i = 0; i < k; i++) {
				do
					c = 0x20 + rnd(g) % 0x5f;
				while (c == '"' || c == '\\');
				put(g, &c, 1);
			}
			break;
		}
	}
	if (spots)
		spot(g);
}

static void
gname(struct gen *g)
{
	char	 k[32];

	(void)snprintf(k, sizeof(k), "\"k%zu\"", g->names++);
	puts_(g, k);
}

/* A value of any kind, at most depth deep. */
static void
gvalue(struct gen *g, int depth)
{
	static const char	*nums[] = { "0", "-0", "7", "-12", "3.25",
				    "1e9", "-2.5E-3", "6.02e+23", "0.0",
				    "123456789012345678901234567890" };
	static const char	*lits[] = { "true", "false", "null" };
	int			 k, n, i;

	switch (k = depth <= 0 ? 2 + rnd(g) % 3 : rnd(g) % 5) {
	case 0:
	case 1:
		/* an object (with names) or an array */
		put(g, k == 0 ? "{" : "[", 1);
		gws(g);
		n = rnd(g) % 4;
		for (i = 0; i < n; i++) {
			if (i > 0) {
				put(g, ",", 1);
				gws(g);
			}
			if (k == 0) {
				gname(g);
				gws(g);
				put(g, ":", 1);
				gws(g);
			}
			gvalue(g, depth - 1);
			gws(g);
		}
		put(g, k == 0 ? "}" : "]", 1);
		break;
	case 2:
		put(g, "\"", 1);
		gtext(g, rnd(g) % 40, 1);
		put(g, "\"", 1);
		break;
	case 3:
		puts_(g, nums[rnd(g) % (sizeof(nums) / sizeof(nums[0]))]);
		break;
	default:
		puts_(g, lits[rnd(g) % 3]);
		break;
	}
}

/*
 * A chat request of about size bytes that the scan takes: its top
 * members in some order, messages whose content is a string, the
 * fields the rules read, and others of every kind.
 */
static void
gbody(struct gen *g, size_t size)
{
	int	 order[8], n = 0, i, j, t, nmsg;
	char	 num[32];
	size_t	 each;

	g->len = g->nspots = g->names = 0;
	order[n++] = 0;				/* model */
	order[n++] = 1;				/* messages */
	for (i = 2; i < 8; i++)
		if (rnd(g) % 2)
			order[n++] = i;
	for (i = n - 1; i > 0; i--) {
		j = rnd(g) % (i + 1);
		t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	gws(g);
	put(g, "{", 1);
	gws(g);
	for (i = 0; i < n; i++) {
		if (i > 0) {
			put(g, ",", 1);
			gws(g);
		}
		switch (order[i]) {
		case 0:
			puts_(g, "\"model\"");
			gws(g);
			put(g, ":", 1);
			gws(g);
			puts_(g, rnd(g) % 8 ? "\"qwen-2.5 \xc3\xa9\"" : "null");
			break;
		case 1:
			puts_(g, "\"messages\":");
			gws(g);
			put(g, "[", 1);
			nmsg = 1 + rnd(g) % 6;
			each = size / nmsg;
			for (j = 0; j < nmsg; j++) {
				if (j > 0)
					put(g, ",", 1);
				gws(g);
				puts_(g, j % 2 ? "{\"role\":\"assistant\"," :
				    "{\"role\":\"user\",");
				gws(g);
				puts_(g, "\"content\":\"");
				gtext(g, each, 1);
				put(g, "\"", 1);
				gws(g);
				put(g, "}", 1);
			}
			gws(g);
			put(g, "]", 1);
			break;
		case 2:
			puts_(g, rnd(g) % 2 ? "\"stream\":true" :
			    "\"stream\" : false");
			break;
		case 3:
			(void)snprintf(num, sizeof(num), "\"max_tokens\":%u",
			    rnd(g) % 100000);
			puts_(g, num);
			break;
		case 4:
			puts_(g, rnd(g) % 4 ?
			    "\"max_completion_tokens\":999999999999999" :
			    "\"max_completion_tokens\":null");
			break;
		default:
			gname(g);
			gws(g);
			put(g, ":", 1);
			gws(g);
			gvalue(g, 5);
			break;
		}
		gws(g);
	}
	put(g, "}", 1);
	gws(g);
}

/* A body for a message: one line, at most 200 bytes of it. */
static const char *
show(const char *buf, size_t len)
{
	static char	 out[1024];
	size_t		 i, o = 0;

	for (i = 0; i < len && i < 200; i++) {
		if (buf[i] >= 0x20 && buf[i] < 0x7f)
			out[o++] = buf[i];
		else
			o += snprintf(out + o, sizeof(out) - o, "\\x%02x",
			    (unsigned char)buf[i]);
	}
	(void)snprintf(out + o, sizeof(out) - o, "%s (%zu bytes)",
	    i < len ? "..." : "", len);
	return (out);
}

static size_t	 noted;		/* strings the prescans noted */

/*
 * The scan with the strings noted as the body came in, in pieces of
 * sizes that vary (so that they cut escapes and characters anywhere):
 * the same answer, and the same notes, as without.
 */
static void
prescanned(const char *buf, size_t len, int r, const struct rscan *rs)
{
	static struct rscan	 pr;
	struct prescan		 ps;
	size_t			 avail = 0, step = 1 + len % 97;

	memset(&ps, 0, sizeof(ps));
	while (avail < len) {
		avail = len - avail < step ? len : avail + step;
		prescan_feed(&ps, buf, avail);
		step = step * 3 % 4093 + 1;
	}
	noted += ps.n;
	/* the strings of a body the scan takes are all noted, wherever
	 * the pieces cut them (but for more than PRESCAN_MAX) */
	ATF_REQUIRE_MSG(!r || (!ps.off && !ps.in && ps.pos == len) ||
	    ps.n == PRESCAN_MAX, "the prescan stopped: %s", show(buf, len));
	ATF_REQUIRE_EQ_MSG(rules_scan(buf, len, &ps, &pr), r,
	    "with the prescan: %s", show(buf, len));
	ATF_REQUIRE_MSG(!r || memcmp(&pr, rs, sizeof(pr)) == 0,
	    "with the prescan, other notes: %s", show(buf, len));
	prescan_clear(&ps);
}

/* The scan of buf both ways, which must agree in every note. */
static int
scan2(const char *buf, size_t len, struct rscan *rs)
{
	static struct rscan	 other;
	int			 r, r2, p, p2, mode;

	/* the words, then SSE2, then the best the CPU has (AVX2) */
	scan_portable = SCAN_WORDS;
	r2 = rules_scan(buf, len, NULL, &other);
	p2 = rules_plain(buf, len);
	for (mode = SCAN_SSE2; ; mode = SCAN_BEST) {
		scan_portable = mode;
		r = rules_scan(buf, len, NULL, rs);
		p = rules_plain(buf, len);
		ATF_REQUIRE_EQ_MSG(r, r2, "the ways (%d) differ on %s", mode,
		    show(buf, len));
		ATF_REQUIRE_EQ(p, p2);
		ATF_REQUIRE_MSG(memcmp(rs, &other, sizeof(other)) == 0,
		    "the ways (%d) note differently: %s", mode,
		    show(buf, len));
		if (mode == SCAN_BEST)
			break;
	}
	prescanned(buf, len, r, rs);
	/* the body's bytes are valid UTF-8 alike both ways */
	scan_portable = SCAN_WORDS;
	p2 = utf8_valid((const unsigned char *)buf, len);
	scan_portable = SCAN_BEST;
	ATF_REQUIRE_EQ(utf8_valid((const unsigned char *)buf, len), p2);
	/* what the strict scan takes, the plain check takes */
	if (r)
		ATF_REQUIRE_MSG(p, "taken but not plain: %s",
		    show(buf, len));
	return (r);
}

static json_object *
jparse(const char *buf, size_t len)
{
	struct rerr	 e;

	return (rules_parse(buf, len, &e));
}

/* A value alone, as json-c reads it (a NUL ends a number). */
static json_object *
jvalue(const char *v, size_t len)
{
	struct json_tokener	*tok;
	json_object		*o;
	char			*s;

	ATF_REQUIRE((s = malloc(len + 1)) != NULL);
	memcpy(s, v, len);
	s[len] = '\0';
	ATF_REQUIRE((tok = json_tokener_new()) != NULL);
	o = json_tokener_parse_ex(tok, s, (int)len + 1);
	json_tokener_free(tok);
	free(s);
	return (o);
}

/* What the scan noted of a body it took is what json-c's tree says. */
static void
agree(const char *buf, size_t len, const struct rscan *rs)
{
	json_object	*o, *v, *alone;
	size_t		 i = 0;

	ATF_REQUIRE_MSG((o = jparse(buf, len)) != NULL,
	    "the scan took what json-c refuses: %s", show(buf, len));
	ATF_REQUIRE_EQ(buf[rs->open], '{');
	ATF_REQUIRE_EQ(buf[rs->close], '}');
	if (json_object_object_get_ex(o, "model", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		ATF_REQUIRE(rs->has_model);
		ATF_REQUIRE_STREQ(rs->model, json_object_get_string(v));
	} else
		ATF_REQUIRE(!rs->has_model);
	ATF_REQUIRE_EQ(rs->stream, json_object_object_get_ex(o, "stream",
	    &v) && json_object_is_type(v, json_type_boolean) &&
	    json_object_get_boolean(v));
	ATF_REQUIRE_EQ(rs->max_tokens, json_object_object_get_ex(o,
	    "max_tokens", &v) && !json_object_is_type(v, json_type_null) ?
	    json_object_get_int64(v) : -1);
	ATF_REQUIRE_EQ(rs->max_completion_tokens, json_object_object_get_ex(o,
	    "max_completion_tokens", &v) &&
	    !json_object_is_type(v, json_type_null) ?
	    json_object_get_int64(v) : -1);
	ATF_REQUIRE_EQ(rs->ntop, (size_t)json_object_object_length(o));
	json_object_object_foreach(o, key, val) {
		ATF_REQUIRE(i < rs->ntop);
		ATF_REQUIRE_EQ(rs->top[i].namelen, strlen(key));
		ATF_REQUIRE(memcmp(buf + rs->top[i].name, key,
		    strlen(key)) == 0);
		ATF_REQUIRE_MSG((alone = jvalue(buf + rs->top[i].value,
		    rs->top[i].valuelen)) != NULL || val == NULL,
		    "the value of %s is not where the scan says", key);
		ATF_REQUIRE_MSG(json_object_equal(alone, val),
		    "the value of %s is not where the scan says", key);
		json_object_put(alone);
		i++;
	}
	json_object_put(o);
}

/* One body and what it should make of the scan and json-c. */
static void
check(const char *buf, size_t len, enum want want)
{
	struct rscan	 rs;
	json_object	*o;
	int		 r;

	r = scan2(buf, len, &rs);
	if (r)
		agree(buf, len, &rs);
	switch (want) {
	case TAKEN:
		ATF_REQUIRE_MSG(r, "not taken: %s", show(buf, len));
		break;
	case DECLINED:
		ATF_REQUIRE_MSG(!r, "taken: %s", show(buf, len));
		ATF_REQUIRE_MSG((o = jparse(buf, len)) != NULL,
		    "json-c refused: %s", show(buf, len));
		json_object_put(o);
		break;
	case REFUSED:
		ATF_REQUIRE_MSG(!r && !rules_plain(buf, len), "taken: %s",
		    show(buf, len));
		ATF_REQUIRE_MSG((o = jparse(buf, len)) == NULL,
		    "json-c took: %s", show(buf, len));
		break;
	case LENIENT:
		ATF_REQUIRE_MSG(!r && !rules_plain(buf, len), "taken: %s",
		    show(buf, len));
		break;
	}
}

/* A copy of exactly len bytes, so that a read past the end shows. */
static void
check_exact(const char *buf, size_t len, enum want want)
{
	char	*b;

	ATF_REQUIRE((b = malloc(len ? len : 1)) != NULL);
	memcpy(b, buf, len);
	check(b, len, want);
	free(b);
}

/*
 * Every piece at every offset of a 32-byte step within a string, with
 * a little or a lot after it, the body ending at its last byte; and the
 * body cut short right after the piece.  Each body is also scanned with
 * its strings noted as it came in, in pieces (prescan_feed): the same.
 */
ATF_TC_WITHOUT_HEAD(pieces);
ATF_TC_BODY(pieces, tc)
{
	static const char	 head[] = "{\"model\":\"m\",\"messages\":"
				    "[{\"role\":\"user\",\"content\":\"";
	static const size_t	 tails[] = { 0, 1, 7, 15, 16, 31, 33, 70 };
	struct gen		 g;
	size_t			 k, pre, t, i, cut;

	memset(&g, 0, sizeof(g));
	for (k = 0; k < NPIECES; k++) {
		for (pre = 0; pre < 40; pre++) {
			for (t = 0; t < sizeof(tails) / sizeof(tails[0]);
			    t++) {
				g.len = 0;
				puts_(&g, head);
				for (i = 0; i < pre; i++)
					put(&g, "a", 1);
				put(&g, pieces[k].s, pieces[k].len);
				cut = g.len;
				/* not a hex digit, to end a \u */
				for (i = 0; i < tails[t]; i++)
					put(&g, "z", 1);
				puts_(&g, "\"}]}");
				check_exact(g.b, g.len, pieces[k].want);
				/* cut short after it */
				if (t == 0)
					check_exact(g.b, cut, REFUSED);
			}
		}
		/* in a name: an escape is left to json-c */
		g.len = 0;
		puts_(&g, "{\"");
		put(&g, pieces[k].s, pieces[k].len);
		puts_(&g, "\":1}");
		check_exact(g.b, g.len, pieces[k].want == TAKEN &&
		    pieces[k].s[0] == '\\' ? DECLINED : pieces[k].want);
	}
	free(g.b);
	free(g.spots);
}

/*
 * prescan_reset, between the bodies of one connection: the notes of the
 * first are gone, their room stays, and the second's notes are its own
 * (the scan with them agrees with the scan without).
 */
ATF_TC_WITHOUT_HEAD(prescan_reset);
ATF_TC_BODY(prescan_reset, tc)
{
	static const char	 a[] = "{\"model\":\"m\",\"messages\":[{\"role\":"
				    "\"user\",\"content\":\"a long one\"}]}";
	static const char	 b[] = "{\"model\":\"q\",\"messages\":[{\"role\":"
				    "\"system\",\"content\":\"x\\ny\"}]}";
	struct prescan		 ps;
	struct pstr		*room;
	struct rscan		 with, without;
	size_t			 cap;

	memset(&ps, 0, sizeof(ps));
	prescan_feed(&ps, a, sizeof(a) - 1);
	ATF_REQUIRE(ps.n == 7 && ps.s != NULL);
	room = ps.s;
	cap = ps.cap;
	prescan_reset(&ps);
	ATF_CHECK(ps.s == room && ps.cap == cap);
	ATF_CHECK(ps.n == 0 && ps.pos == 0 && !ps.in && !ps.off);
	prescan_feed(&ps, b, sizeof(b) - 1);
	ATF_CHECK_EQ(ps.n, 7);
	ATF_CHECK(ps.s == room);
	ATF_REQUIRE(rules_scan(b, sizeof(b) - 1, NULL, &without));
	ATF_REQUIRE(rules_scan(b, sizeof(b) - 1, &ps, &with));
	ATF_CHECK(memcmp(&with, &without, sizeof(with)) == 0);
	prescan_clear(&ps);
	ATF_CHECK(ps.s == NULL && ps.cap == 0);
}

/*
 * Generated bodies of many sizes, as they are (taken), with a piece of
 * each kind in one of their strings, and cut short.
 */
ATF_TC_WITHOUT_HEAD(corpus);
ATF_TC_BODY(corpus, tc)
{
	struct gen	 g;
	struct rscan	 rs;
	char		*b = NULL;
	size_t		 size, at, k, n;
	int		 i;

	memset(&g, 0, sizeof(g));
	g.seed = 0x9e3779b97f4a7c15ULL;
	for (i = 0; i < 3000; i++) {
		switch (i % 10) {
		case 0: case 1: case 2: case 3: case 4: case 5:
			size = i % 600;
			break;
		case 6: case 7: case 8:
			size = 600 + rnd(&g) % 30000;
			break;
		default:
			size = 30000 + rnd(&g) % 200000;
			break;
		}
		if (i == 1000 || i == 2000)
			size = 1024 * 1024;
		gbody(&g, size);
		check_exact(g.b, g.len, TAKEN);

		/* a piece of each kind, somewhere in a string, and a byte
		 * that ends a \u */
		ATF_REQUIRE(g.nspots > 0);
		k = rnd(&g) % NPIECES;
		at = g.spots[rnd(&g) % g.nspots];
		n = g.len + pieces[k].len + 1;
		ATF_REQUIRE((b = realloc(b, n)) != NULL);
		memcpy(b, g.b, at);
		memcpy(b + at, pieces[k].s, pieces[k].len);
		b[at + pieces[k].len] = '~';
		memcpy(b + at + pieces[k].len + 1, g.b + at, g.len - at);
		check_exact(b, n, pieces[k].want);

		/* cut short anywhere before its end */
		ATF_REQUIRE(scan2(g.b, g.len, &rs));
		check_exact(g.b, rnd(&g) % (rs.close + 1), REFUSED);
	}
	/* the prescans noted strings for the scans to take */
	ATF_CHECK_MSG(noted > 10000, "%zu strings noted", noted);
	free(b);
	free(g.b);
	free(g.spots);
}

/* Hand-picked bodies where the two ways might part. */
ATF_TC_WITHOUT_HEAD(edges);
ATF_TC_BODY(edges, tc)
{
	static const struct {
		const char	*body;
		enum want	 want;
	} cases[] = {
		{ "{}", TAKEN },
		{ "{\"a\":\"\"}", TAKEN },
		/* a quote or backslash as the last byte of a word and of a
		 * 16- and 32-byte step */
		{ "{\"a\":\"0123456789a\\\"\"}", TAKEN },
		{ "{\"a\":\"0123456789abcdefghijklmnopqrstu\\\\\"}", TAKEN },
		{ "{\"a\":\"0123456789abcdefghijklmnopqrstuvwxyz0123456789"
		    "ABCDEFGHIJKLMNOP\xff\"}", REFUSED },
		/* DEL and the bytes next to the ones that matter */
		{ "{\"a\":\"\x7f\x21\x23\x5b\x5d\x1f\"}", LENIENT },
		{ "{\"a\":\"\x7f\x21\x23\x5b\x5d\x20\"}", TAKEN },
		/* a string that ends the body without its quote */
		{ "{\"a\":\"0123456789abcdefghijklmnopqrstuvwxyz", REFUSED },
		{ "{\"a\":\"x\\", REFUSED },
		{ "{\"a\":\"x\\u00", REFUSED },
		{ "{\"a\":\"\xe2\x82", REFUSED },
	};
	size_t	 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_exact(cases[i].body, strlen(cases[i].body),
		    cases[i].want);
}

/*
 * UTF-8 by decoding it, the oracle: each sequence's code point from
 * its bits, which must be in the range of its length (no overlong
 * form), not a surrogate, at most U+10FFFF.
 */
static int
ref_utf8(const unsigned char *s, size_t n)
{
	static const uint32_t	 least[] = { 0, 0x80, 0x800, 0x10000 };
	uint32_t		 c;
	size_t			 i, k, more;

	for (i = 0; i < n; i += more + 1) {
		if (s[i] < 0x80) {
			more = 0;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0)
			more = 1;
		else if ((s[i] & 0xf0) == 0xe0)
			more = 2;
		else if ((s[i] & 0xf8) == 0xf0)
			more = 3;
		else
			return (0);
		if (n - i <= more)
			return (0);
		c = s[i] & (0x3f >> more);
		for (k = 1; k <= more; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return (0);
			c = c << 6 | (s[i + k] & 0x3f);
		}
		if (c < least[more] || c > 0x10ffff ||
		    (c >= 0xd800 && c <= 0xdfff))
			return (0);
	}
	return (1);
}

/*
 * Long strings, for the 64-byte steps: runs of backslashes, quotes,
 * letters and bytes that end a step early, at every place around the
 * steps' edges, and random strings of the pieces a text has; every way
 * of scanning (words, SSE2, AVX2 where the CPU has it, in pieces) must
 * agree.
 */
ATF_TC_WITHOUT_HEAD(wide_steps);
/* The n bytes at s as a string's value and as a name: both must be
 * scanned alike every way; each is counted as taken or refused. */
static void
wide_one(const char *s, size_t n, int *taken, int *refused)
{
	char		 b[1024];
	struct rscan	 rs;
	int		 r;

	memcpy(b, "{\"a\":\"", 6);
	memcpy(b + 6, s, n);
	memcpy(b + 6 + n, "\",\"b\":1}", 8);
	r = scan2(b, n + 14, &rs);
	/* a name with an escape is not taken: so the escapes are seen */
	memcpy(b, "{\"", 2);
	memcpy(b + 2, s, n);
	memcpy(b + 2 + n, "\":1}", 4);
	r += scan2(b, n + 6, &rs);
	*taken += r;
	*refused += 2 - r;
}

/*
 * count random strings of pieces of atoms, up to max bytes, through
 * wide_one; first (0: none) is how many of the atoms come most (15 in
 * 16), the whole characters of wide_utf8.  Adds to *taken and *refused.
 */
static void
wide_random(const char *const *atoms, size_t natoms, size_t first,
    size_t max, uint32_t seed, int count, int *taken, int *refused)
{
	char		 s[700];
	size_t		 n, len, k, pick;
	int		 i;

	for (i = 0; i < count; i++) {
		seed = seed * 1103515245 + 12345;
		len = (seed >> 8) % max;
		for (n = 0; n < len; n += k) {
			seed = seed * 1103515245 + 12345;
			pick = (seed >> 8) % 64;
			pick = first > 0 && pick < 60 ? pick % first :
			    (seed >> 8) % natoms;
			k = strlen(atoms[pick]);
			if (n + k > sizeof(s))
				break;
			memcpy(s + n, atoms[pick], k);
		}
		wide_one(s, n, taken, refused);
	}
}

ATF_TC_BODY(wide_steps, tc)
{
	static const char *const	 tails[] = { "\"", "n", "x", "u0041",
					    "u00", "q", "\xc3\xa9", "\x01",
					    "\\", "/", "u004", "u00E9", "uD800",
					    "ud7ff", "udBfF", "ue000", "uDc00",
					    "u12\"4" };
	static const char *const	 atoms[] = { "a", "b c ", "\\\\",
					    "\\\"", "\\n", "\\t", "\\/",
					    "\\u00e9", "\\ud83d\\ude00",
					    "\\x", "\\", "\"", "\xc3\xa9",
					    "\xe2\x80", "\xf0\x9f\x98\x80",
					    "\x01", "\x7f", "{\\\"k\\\": 1}",
					    "                " };
	static const size_t		 after[] = { 0, 1, 2, 70 };
	char		 s[600];
	size_t		 off, run, t, a, n, len;
	int		 taken = 0, refused = 0;

	for (off = 0; off < 140; off++)
		for (run = 1; run <= 6; run++)
			for (t = 0; t < sizeof(tails) / sizeof(tails[0]); t++)
				for (a = 0; a < 4; a++) {
					memset(s, 'x', off);
					memset(s + off, '\\', run);
					n = off + run;
					len = strlen(tails[t]);
					memcpy(s + n, tails[t], len);
					n += len;
					memset(s + n, 'y', after[a]);
					n += after[a];
					wide_one(s, n, &taken, &refused);
				}
	wide_random(atoms, sizeof(atoms) / sizeof(atoms[0]), 0, 500, 1, 20000,
	    &taken, &refused);
	/* both kinds of answer were reached, many times */
	ATF_REQUIRE_MSG(taken > 1000 && refused > 1000, "taken %d, refused %d",
	    taken, refused);
}

/*
 * UTF-8 for the 64-byte steps: a lead byte of each class and up to three
 * bytes of the edges of the classes after it, across the edge of a step
 * (the string's bytes 58 to 66), then ASCII, the closing quote, or more
 * text of three-byte characters; and random strings mostly of
 * characters of two, three and four bytes, some cut short.  Every way
 * must agree, and both answers must come.
 */
ATF_TC_WITHOUT_HEAD(wide_utf8);
ATF_TC_BODY(wide_utf8, tc)
{
	static const unsigned char	 leads[] = { 0x80, 0xbf, 0xc0, 0xc1,
					    0xc2, 0xdf, 0xe0, 0xe1, 0xed,
					    0xef, 0xf0, 0xf1, 0xf4, 0xf5,
					    0xff };
	static const unsigned char	 next[] = { 0x80, 0x8f, 0x90, 0x9f,
					    0xa0, 0xbf, 'a', 0xc2 };
	static const char *const	 atoms[] = { "\xe6\x97\xa5",
					    "\xe6\x9c\xac", "\xc3\xa9",
					    "\xf0\x9f\x98\x80", "\xe6\x97",
					    "\xed\xa0\x80", "\xc0\xaf", " ",
					    "\\n", "\xf4\x90\x80\x80" };
	static const char *const	 afters[] = { "yyyyyyyyyyyyyyyyyyyyyy"
					    "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy"
					    "yyyyyyyyyyyyyyyy", "",
					    "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97"
					    "\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6"
					    "\x97\xa5\xe6\x97\xa5\xe6\x97\xa5"
					    "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97"
					    "\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6"
					    "\x97\xa5\xe6\x97\xa5\xe6\x97\xa5"
					    "\xe6\x97\xa5\xe6\x97\xa5\xe6\x97"
					    "\xa5\xe6\x97\xa5\xe6\x97\xa5\xe6"
					    "\x97\xa5\xe6\x97\xa5\xe6\x97\xa5" };
	char		 s[700];
	size_t		 l, i, j, k, off, a, n, len, nn = sizeof(next);
	int		 taken = 0, refused = 0;

	for (l = 0; l < sizeof(leads); l++)
		for (i = 0; i < 1 + nn + nn * nn + nn * nn * nn; i++)
			for (off = 58; off <= 66; off += 2)
				for (a = 0; a < 3; a++) {
					memset(s, 'x', off);
					n = off;
					s[n++] = leads[l];
					/* i: no byte, one, two or three */
					j = i;
					if (j >= 1) {
						j -= 1;
						k = j < nn ? 1 : (j -= nn) <
						    nn * nn ? 2 : (j -= nn *
						    nn, 3);
						while (k-- > 0) {
							s[n++] = next[j % nn];
							j /= nn;
						}
					}
					len = strlen(afters[a]);
					memcpy(s + n, afters[a], len);
					n += len;
					wide_one(s, n, &taken, &refused);
				}
	/* mostly the whole characters of the first four atoms */
	wide_random(atoms, sizeof(atoms) / sizeof(atoms[0]), 4, 600, 7, 20000,
	    &taken, &refused);
	ATF_REQUIRE_MSG(taken > 1000 && refused > 1000, "taken %d, refused %d",
	    taken, refused);
}

/*
 * Every two bytes that start with one >= 0x80, and three and four with
 * the edges of each byte's classes after them, against the oracle:
 * alone (utf8.c, both ways), and in a string of a body (scan.c).
 */
ATF_TC_WITHOUT_HEAD(utf8);
/* Bytes s[0..n) alone, and as the string of {"a":"..."}. */
static void
utf8_one(const unsigned char *s, size_t n)
{
	char		 body[48];
	struct rscan	 rs;
	size_t		 j;
	int		 valid;

	valid = ref_utf8(s, n);
	ATF_REQUIRE_EQ_MSG(utf8_valid(s, n), valid,
	    "%s", show((const char *)s, n));
	scan_portable = SCAN_WORDS;
	ATF_REQUIRE_EQ_MSG(utf8_valid(s, n), valid,
	    "%s", show((const char *)s, n));
	scan_portable = SCAN_BEST;
	for (j = 0; j < n; j++)
		if (s[j] < 0x20 || s[j] == '"' || s[j] == '\\')
			return;
	memcpy(body, "{\"a\":\"", 6);
	memcpy(body + 6, s, n);
	memcpy(body + 6 + n, "\"}", 2);
	ATF_REQUIRE_EQ_MSG(scan2(body, n + 8, &rs), valid, "%s",
	    show(body, n + 8));
}

ATF_TC_BODY(utf8, tc)
{
	static const unsigned char	 edge[] = { 0x00, 0x41, 0x7f, 0x80,
					    0x8f, 0x90, 0x9f, 0xa0, 0xbf,
					    0xc0, 0xc2, 0xe0, 0xf4, 0xff };
	unsigned char			 s[4];
	size_t				 a, b, c, d, nedge = sizeof(edge);

	for (a = 0x80; a < 0x100; a++) {
		for (b = 0; b < 0x100; b++) {
			s[0] = a;
			s[1] = b;
			utf8_one(s, 2);
			for (c = 0; c < nedge; c++) {
				s[2] = edge[c];
				utf8_one(s, 3);
				for (d = 0; d < nedge; d++) {
					s[3] = edge[d];
					utf8_one(s, 4);
				}
			}
		}
	}
}

/* The pieces of a splice as one body, in b (of size). */
static size_t
spliced(const struct splice *sp, const char *base, char *b, size_t size)
{
	struct iovec	 iov[SPLICE_PIECES];
	size_t		 n, i, len, off = 0;

	n = splice_iov(sp, base, iov, SPLICE_PIECES, &len);
	ATF_REQUIRE(len <= size);
	for (i = 0; i < n; i++) {
		memcpy(b + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	ATF_REQUIRE_EQ(off, len);
	return (len);
}

/*
 * A body through splice_rules and splice_rewrite, and through the json-c
 * path: the same refusal, or the same JSON.  Returns 1 if the splice
 * did it, 0 if it left the body to json-c; the bytes it made in out.
 */
static int
splice_check(const struct pruntime *rt, const char *body, size_t len,
    const char *upstream, int64_t cap, int kind, char *out, size_t *outlen)
{
	static struct splice	 sp;
	static char		 b[1 << 16];
	struct rscan		 rs;
	struct rerr		 e, e2;
	json_object		*o, *again;
	int			 r, r2, changed, c, c2;
	size_t			 n;

	ATF_REQUIRE_MSG(rules_scan(body, len, NULL, &rs), "%s", show(body, len));
	r = splice_rules(rt, &rs, &sp, &e);
	ATF_REQUIRE((o = jparse(body, len)) != NULL);
	r2 = rules_apply(rt, "/v1/chat/completions", o, &e2, &changed);
	if (r == 1) {
		json_object_put(o);
		return (0);
	}
	if (r == -1) {
		ATF_REQUIRE_EQ_MSG(r2, -1, "%s", show(body, len));
		ATF_REQUIRE_EQ(e.status, e2.status);
		ATF_REQUIRE_STREQ(e.code, e2.code);
		ATF_REQUIRE_STREQ(e.message, e2.message);
		json_object_put(o);
		return (1);
	}
	ATF_REQUIRE_EQ_MSG(r2, 0, "json-c refused %s: %s", show(body, len),
	    e2.message);
	ATF_REQUIRE_EQ_MSG(sp.changed, changed, "%s", show(body, len));
	c = splice_rewrite(&sp, body, upstream, cap, kind,
	    routes_find("/v1/chat/completions"));
	c2 = rules_rewrite(o, upstream, cap, kind, "/v1/chat/completions");
	if (c == -1) {
		json_object_put(o);
		return (0);
	}
	ATF_REQUIRE_EQ_MSG(c, c2, "%s to %s, cap %lld", show(body, len),
	    upstream, (long long)cap);
	n = spliced(&sp, body, b, sizeof(b));
	/* strict, no name twice; and the same JSON */
	ATF_REQUIRE_MSG(rules_plain(b, n), "%s makes %s", show(body, len),
	    show(b, n));
	ATF_REQUIRE((again = jparse(b, n)) != NULL);
	ATF_REQUIRE_MSG(json_object_equal(again, o), "%s makes %s, not %s",
	    show(body, len), show(b, n), json_object_to_json_string(o));
	json_object_put(again);
	json_object_put(o);
	if (out != NULL) {
		memcpy(out, b, n);
		*outlen = n;
	}
	return (1);
}

static struct pruntime *
runtime(struct pconf *c, const char *name, const char **moves,
    const char **refuse)
{
	struct pruntime	*rt;

	ATF_REQUIRE((rt = pconf_add_runtime(c, name, KIND_CHAT,
	    STOPS_ALWAYS, 0)) != NULL);
	for (; moves != NULL && moves[0] != NULL; moves += 2)
		ATF_REQUIRE(pruntime_add_move(rt, moves[0], moves[1]) == 0);
	for (; refuse != NULL && *refuse != NULL; refuse++)
		ATF_REQUIRE(pstrs_add(&rt->refuse, *refuse) == 0);
	return (rt);
}

/* The bytes a splice makes: only what changes changes. */
ATF_TC_WITHOUT_HEAD(splice_bytes);
ATF_TC_BODY(splice_bytes, tc)
{
	static const char	*mv[] = { "max_completion_tokens",
				    "max_tokens", NULL };
	static const char	*rf[] = { "logit_bias", NULL };
	static const struct {
		const char	*body;
		int		 moves;
		const char	*upstream;
		int64_t		 cap;
		const char	*out;
	} cases[] = {
		/* the model renamed where it is */
		{ "{\"model\": \"q\", \"max_tokens\": 16}", 0, "up", 0,
		    "{\"model\": \"up\", \"max_tokens\": 16}" },
		/* capped where it is, the rest as it was */
		{ " {\"model\":\"up\",\n \"max_tokens\":16 }\n", 0, "up", 8,
		    " {\"model\":\"up\",\n \"max_tokens\":8 }" },
		/* a model and a cap where there were none */
		{ "{\"messages\":[]}", 0, "up", 8,
		    "{\"messages\":[],\"model\":\"up\",\"max_tokens\":8}" },
		{ "{ }", 0, "up", 8,
		    "{\"model\":\"up\",\"max_tokens\":8 }" },
		/* a null max_tokens takes the cap where it is */
		{ "{\"max_tokens\":null,\"model\":\"up\"}", 0, "up", 8,
		    "{\"max_tokens\":8,\"model\":\"up\"}" },
		/* moved: out of its place, in at the end */
		{ "{\"max_completion_tokens\":4, \"model\":\"up\", \"x\":1}",
		    1, "up", 0,
		    "{\"model\":\"up\", \"x\":1,\"max_tokens\":4}" },
		{ "{\"model\":\"up\", \"max_completion_tokens\":4}", 1, "up",
		    0, "{\"model\":\"up\",\"max_tokens\":4}" },
		/* moved, then capped */
		{ "{\"model\":\"up\",\"max_completion_tokens\":400}", 1,
		    "up", 8, "{\"model\":\"up\",\"max_tokens\":8}" },
		/* onto a null, where it is */
		{ "{\"max_tokens\":null,\"max_completion_tokens\":4,"
		    "\"model\":\"up\"}", 1, "up", 0,
		    "{\"max_tokens\":4,\"model\":\"up\"}" },
		/* onto an equal value: the one moved goes */
		{ "{\"max_tokens\":4,\"max_completion_tokens\":4,"
		    "\"model\":\"up\"}", 1, "up", 0,
		    "{\"max_tokens\":4,\"model\":\"up\"}" },
		/* a name the model's needs escapes for */
		{ "{\"model\":\"q\"}", 0, "a\"b\\c\n", 0,
		    "{\"model\":\"a\\\"b\\\\c\\u000a\"}" },
	};
	struct pconf		*c;
	struct pruntime		*plain, *moves;
	char			 out[256];
	size_t			 i, n;

	ATF_REQUIRE((c = pconf_new()) != NULL);
	plain = runtime(c, "plain", NULL, rf);
	moves = runtime(c, "moves", mv, rf);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ATF_REQUIRE_MSG(splice_check(cases[i].moves ? moves : plain,
		    cases[i].body, strlen(cases[i].body), cases[i].upstream,
		    cases[i].cap, KIND_CHAT, out, &n), "%s", cases[i].body);
		ATF_CHECK_MSG(n == strlen(cases[i].out) &&
		    memcmp(out, cases[i].out, n) == 0, "%s made %s",
		    cases[i].body, show(out, n));
	}

	/* a name with no room in the pieces: nothing changed, json-c's */
	{
		static struct splice	 sp;
		struct rscan		 rs;
		struct rerr		 e;
		char			 name[1000];
		const char		*b = "{\"model\":\"q\"}";

		memset(name, '"', sizeof(name) - 1);
		name[sizeof(name) - 1] = '\0';
		ATF_REQUIRE(rules_scan(b, strlen(b), NULL, &rs));
		ATF_REQUIRE_EQ(splice_rules(plain, &rs, &sp, &e), 0);
		ATF_CHECK_EQ(splice_rewrite(&sp, b, name, 8, KIND_CHAT,
		    routes_find("/v1/chat/completions")), -1);
		n = spliced(&sp, b, out, sizeof(out));
		ATF_CHECK(n == strlen(b) && memcmp(out, b, n) == 0);
	}
	pconf_free(c);
}

/* What is left to json-c, and what is refused as json-c refuses it. */
ATF_TC_WITHOUT_HEAD(splice_left);
ATF_TC_BODY(splice_left, tc)
{
	static const char	*mv[] = { "max_completion_tokens",
				    "max_tokens", "extra.seed", "seed", "a",
				    "model", "b", "c.d", "x", "y", NULL };
	static const char	*rf[] = { "logit_bias", "tools.x", NULL };
	static const struct {
		const char	*body;
		int		 spliced;	/* 0: left to json-c */
	} cases[] = {
		/* equal as JSON, not as bytes; and not equal */
		{ "{\"x\":1,\"y\":1.0}", 0 },
		{ "{\"x\":{\"a\":1,\"b\":2},\"y\":{\"b\":2,\"a\":1}}", 0 },
		{ "{\"max_completion_tokens\":4,\"max_tokens\":5}", 1 },
		{ "{\"x\":4,\"y\":5}", 1 },			/* conflict */
		{ "{\"x\":\"4\",\"y\":5}", 0 },
		{ "{\"x\":[1],\"y\":[1]}", 1 },
		{ "{\"extra\":{\"seed\":1}}", 0 },		/* a path */
		{ "{\"extra\":null}", 0 },
		{ "{\"a\":\"m\"}", 0 },			/* to "model" */
		{ "{\"a\":null}", 1 },			/* not moved */
		{ "{\"b\":1}", 0 },				/* to a path */
		{ "{\"tools\":{}}", 0 },			/* a path */
		{ "{\"logit_bias\":{}}", 1 },			/* refused */
		{ "{\"logit_bias\":null}", 1 },		/* not */
		{ "{\"max_completion_tokens\":null}", 1 },	/* not moved */
	};
	struct pconf	*c;
	struct pruntime	*rt;
	size_t		 i;

	ATF_REQUIRE((c = pconf_new()) != NULL);
	rt = runtime(c, "r", mv, rf);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		ATF_CHECK_EQ_MSG(splice_check(rt, cases[i].body,
		    strlen(cases[i].body), "up", 8, KIND_CHAT, NULL, NULL),
		    cases[i].spliced, "%s", cases[i].body);
	pconf_free(c);
}

/*
 * Generated bodies of the members the rules read, in any order, with
 * nulls, equal values and long messages, under runtimes of moves and
 * refusals, for upstream names, caps and kinds: the splice and json-c
 * agree every time, and the splice does most of them itself.
 */
ATF_TC_WITHOUT_HEAD(splice_corpus);
ATF_TC_BODY(splice_corpus, tc)
{
	static const char	*names[] = { "model", "max_tokens",
				    "max_completion_tokens", "stream", "a",
				    "b", "c", "logit_bias", "extra", "seed" };
	static const char	*values[] = { "null", "16", "4", "100000",
				    "\"s\"", "[1, 2]", "{\"seed\": 1}", "true",
				    "\"up\"", "\"m\"" };
	static const char	*mv1[] = { "max_completion_tokens",
				    "max_tokens", NULL };
	static const char	*mv2[] = { "a", "b", "b", "c", "c", "seed",
				    "max_tokens", "max_completion_tokens",
				    NULL };
	static const char	*mv3[] = { "extra.seed", "seed", "a",
				    "logit_bias", NULL };
	static const char	*rf1[] = { "logit_bias", NULL };
	static const char	*rf2[] = { "c", "extra.x", NULL };
	static const char	*ups[] = { "", "up", "m",
				    "qwen-2.5 \xc3\xa9", "we\"ird" };
	static const int64_t	 caps[] = { 0, 8, 100000 };
	static const int	 kinds[] = { KIND_CHAT, KIND_CHAT,
				    KIND_VISION, KIND_EMBEDDING };
	struct pconf		*c;
	struct pruntime		*rts[5];
	struct gen		 g;
	size_t			 nspliced = 0, ntried = 0, k;
	int			 i, j, n, order[10], t;

	ATF_REQUIRE((c = pconf_new()) != NULL);
	rts[0] = runtime(c, "none", NULL, NULL);
	rts[1] = runtime(c, "mv1", mv1, rf1);
	rts[2] = runtime(c, "mv2", mv2, rf2);
	rts[3] = runtime(c, "mv3", mv3, rf1);
	rts[4] = runtime(c, "rf", NULL, rf2);
	memset(&g, 0, sizeof(g));
	g.seed = 0x2545f4914f6cdd1dULL;
	for (i = 0; i < 20000; i++) {
		for (j = 0; j < 10; j++)
			order[j] = j;
		for (j = 9; j > 0; j--) {
			k = rnd(&g) % (j + 1);
			t = order[j];
			order[j] = order[k];
			order[k] = t;
		}
		g.len = 0;
		gws(&g);
		put(&g, "{", 1);
		gws(&g);
		n = rnd(&g) % 8;
		for (j = 0; j < n; j++) {
			if (j > 0) {
				put(&g, ",", 1);
				gws(&g);
			}
			put(&g, "\"", 1);
			puts_(&g, names[order[j]]);
			put(&g, "\"", 1);
			gws(&g);
			put(&g, ":", 1);
			gws(&g);
			if (order[j] == 0)
				puts_(&g, rnd(&g) % 4 ? "\"m\"" : "null");
			else if (order[j] == 3)
				puts_(&g, rnd(&g) % 2 ? "true" : "false");
			else if (order[j] <= 2)
				puts_(&g, values[rnd(&g) % 4]);
			else
				puts_(&g, values[rnd(&g) % 10]);
			gws(&g);
		}
		if (rnd(&g) % 4 == 0) {
			puts_(&g, n > 0 ? ",\"messages\":[{\"content\":\"" :
			    "\"messages\":[{\"content\":\"");
			gtext(&g, rnd(&g) % 5000, 0);
			puts_(&g, "\"}]");
		}
		put(&g, "}", 1);
		gws(&g);
		ntried++;
		k = splice_check(rts[i % 5], g.b, g.len,
		    ups[rnd(&g) % 5], caps[rnd(&g) % 3], kinds[rnd(&g) % 4],
		    NULL, NULL);
		nspliced += k;
		/* no rule, or the usual move: the splice does them all */
		if (i % 5 <= 1)
			ATF_CHECK_MSG(k, "%s", show(g.b, g.len));
	}
	/* paths and moves onto other values: json-c, now and then */
	ATF_CHECK_MSG(nspliced * 10 > ntried * 7, "%zu of %zu spliced",
	    nspliced, ntried);
	free(g.b);
	free(g.spots);
	pconf_free(c);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, pieces);
	ATF_TP_ADD_TC(tp, prescan_reset);
	ATF_TP_ADD_TC(tp, corpus);
	ATF_TP_ADD_TC(tp, edges);
	ATF_TP_ADD_TC(tp, wide_steps);
	ATF_TP_ADD_TC(tp, wide_utf8);
	ATF_TP_ADD_TC(tp, utf8);
	ATF_TP_ADD_TC(tp, splice_bytes);
	ATF_TP_ADD_TC(tp, splice_left);
	ATF_TP_ADD_TC(tp, splice_corpus);
	return (atf_no_error());
}
