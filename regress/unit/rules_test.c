/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The request rules of agency-proxy as pure functions on json-c objects,
 * and the front door's decisions on a request's Host, Origin and
 * Content-Type (http.c).
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include <atf-c.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>	/* EVHTTP_REQ_POST, for http_decide */
#include <json-c/json.h>

#include "proxy.h"
#include "routes.h"

/* the route most cases are about */
#define CC	"/v1/chat/completions"

static json_object *
parse(const char *s)
{
	struct rerr	 e;
	json_object	*o;

	o = rules_parse(s, strlen(s), &e);
	ATF_REQUIRE_MSG(o != NULL, "%s: %s", s, e.message);
	return (o);
}

static const char *
str(json_object *o)
{
	return (json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
}

static struct pconf *
conf(void)
{
	struct pconf	*c;
	struct pruntime	*rt;
	struct pmodel	*m;

	ATF_REQUIRE((c = pconf_new()) != NULL);
	ATF_REQUIRE((rt = pconf_add_runtime(c, "llama", KIND_CHAT,
	    STOPS_ALWAYS, 256)) != NULL);
	ATF_REQUIRE(pruntime_add_move(rt, "max_completion_tokens",
	    "max_tokens") == 0);
	ATF_REQUIRE(pruntime_add_move(rt, "extra.seed", "seed") == 0);
	ATF_REQUIRE(pstrs_add(&rt->refuse, "logit_bias") == 0);
	ATF_REQUIRE(pstrs_add(&rt->refuse, "tools.x") == 0);
	ATF_REQUIRE((rt = pconf_add_runtime(c, "vl", KIND_VISION,
	    STOPS_STREAM, 0)) != NULL);
	ATF_REQUIRE((rt = pconf_add_runtime(c, "emb", KIND_EMBEDDING,
	    STOPS_NEVER, 0)) != NULL);
	ATF_REQUIRE((rt = pconf_add_runtime(c, "custom", KIND_CHAT,
	    STOPS_ALWAYS, 0)) != NULL);
	ATF_REQUIRE(pstrs_add(&rt->routes, "/v1/responses") == 0);
	ATF_REQUIRE(pstrs_add(&rt->parts, "text") == 0);
	ATF_REQUIRE(pstrs_add(&rt->parts, "input_audio") == 0);

	ATF_REQUIRE((m = pconf_add_model(c, "qwen", "llama", "/m/q.gguf",
	    "qwen", 0)) != NULL);
	ATF_REQUIRE(pstrs_add(&m->aliases, "q") == 0);
	ATF_REQUIRE(pconf_add_model(c, "llava", "vl", "/m/l.gguf", "llava",
	    64) != NULL);
	ATF_REQUIRE(pconf_add_model(c, "bge", "emb", "/m/b.gguf", "bge",
	    0) != NULL);
	ATF_REQUIRE(pconf_add_model(c, "odd", "custom", "/m/o", "odd",
	    0) != NULL);
	ATF_REQUIRE(pconf_add_model(c, "x", "nosuch", "/m/x", "x", 0) ==
	    NULL);
	return (c);
}

ATF_TC_WITHOUT_HEAD(parse);
ATF_TC_BODY(parse, tc)
{
	struct rerr	 e;
	json_object	*o;

	o = parse("{\"a\":1}  \n");
	json_object_put(o);
	ATF_CHECK(rules_parse("", 0, &e) == NULL && e.status == 400);
	ATF_CHECK(rules_parse("{\"a\":", 5, &e) == NULL && e.status == 400);
	ATF_CHECK_STREQ(e.code, "invalid_json");
	ATF_CHECK(rules_parse("{} x", 4, &e) == NULL && e.status == 400);
	ATF_CHECK(rules_parse("[1]", 3, &e) == NULL && e.status == 400);
	ATF_CHECK(rules_parse("{}\0{}", 5, &e) == NULL);
}

/* A string of s in a JSON body, for the UTF-8 cases. */
static json_object *
parse_text(const char *s, struct rerr *e)
{
	char	buf[128];
	int	n;

	n = snprintf(buf, sizeof(buf), "{\"content\":\"%s\"}", s);
	ATF_REQUIRE(n > 0 && (size_t)n < sizeof(buf));
	return (rules_parse(buf, (size_t)n, e));
}

ATF_TC_WITHOUT_HEAD(utf8);
ATF_TC_BODY(utf8, tc)
{
	static const char	*good[] = { "plain", "caf\xc3\xa9",
				    "\xe2\x82\xac", "\xf0\x9f\x98\x80",
				    "\xef\xbf\xbf", "\xf4\x8f\xbf\xbf", NULL };
	static const char	*bad[] = { "\xff\xfe", "\xc0\x80",
				    "\xc1\xbf", "\xe0\x80\x80",
				    "\xed\xa0\x80", "\xed\xbf\xbf",
				    "\xf8\x88\x80\x80\x80", "\xe2\x82",
				    "\x80", "\xf4\x90\x80\x80",
				    "\xf0\x80\x80\x80", NULL };
	struct rerr		 e;
	json_object		*o;
	size_t			 i;

	for (i = 0; good[i] != NULL; i++) {
		o = parse_text(good[i], &e);
		ATF_CHECK_MSG(o != NULL, "good case %zu refused", i);
		json_object_put(o);
	}
	for (i = 0; bad[i] != NULL; i++) {
		o = parse_text(bad[i], &e);
		ATF_CHECK_MSG(o == NULL && e.status == 400,
		    "bad case %zu accepted", i);
		json_object_put(o);
	}
	/* A sequence cut off by the end of the body. */
	ATF_CHECK(rules_parse("{\"a\":\"\xe2\x82", 9, &e) == NULL);
}

ATF_TC_WITHOUT_HEAD(pick_model);
ATF_TC_BODY(pick_model, tc)
{
	struct pconf	*c = conf();
	struct pmodel	*m;
	struct rerr	 e;
	json_object	*o;

	o = parse("{\"model\":\"q\"}");
	ATF_CHECK(rules_pick_model(c, o, NULL, &m, &e) == 0);
	ATF_CHECK_STREQ(m->name, "qwen");
	json_object_put(o);

	o = parse("{\"model\":\"llava\"}");
	ATF_CHECK(rules_pick_model(c, o, NULL, &m, &e) == 0);
	ATF_CHECK_STREQ(m->name, "llava");
	json_object_put(o);

	o = parse("{\"model\":\"gpt-4\"}");
	ATF_CHECK(rules_pick_model(c, o, NULL, &m, &e) == -1);
	ATF_CHECK_EQ(e.status, 404);
	ATF_CHECK_STREQ(e.code, "model_not_found");
	ATF_CHECK_MSG(strstr(e.message, "gpt-4") != NULL &&
	    strstr(e.message, "qwen, llava, bge, odd") != NULL, "%s",
	    e.message);
	json_object_put(o);

	o = parse("{\"model\":3}");
	ATF_CHECK(rules_pick_model(c, o, NULL, &m, &e) == -1);
	ATF_CHECK_EQ(e.status, 400);
	json_object_put(o);

	/* no model, several served, no default */
	o = parse("{\"messages\":[]}");
	ATF_CHECK(rules_pick_model(c, o, NULL, &m, &e) == -1);
	ATF_CHECK_EQ(e.status, 400);
	ATF_CHECK_STREQ(e.code, "model_required");

	/* the default, by alias */
	strlcpy(c->default_model, "q", sizeof(c->default_model));
	ATF_CHECK(rules_pick_model(c, o, NULL, &m, &e) == 0);
	ATF_CHECK_STREQ(m->name, "qwen");
	/* a default that is not served is the 404 */
	strlcpy(c->default_model, "gone", sizeof(c->default_model));
	ATF_CHECK(rules_pick_model(c, o, NULL, &m, &e) == -1);
	ATF_CHECK_EQ(e.status, 404);
	pconf_free(c);

	/* exactly one model served */
	c = pconf_new();
	ATF_REQUIRE(pconf_add_runtime(c, "r", KIND_CHAT, 0, 0) != NULL);
	ATF_REQUIRE(pconf_add_model(c, "only", "r", "u", "l", 0) != NULL);
	ATF_CHECK(rules_pick_model(c, o, NULL, &m, &e) == 0);
	ATF_CHECK_STREQ(m->name, "only");
	json_object_put(o);
	pconf_free(c);
}

ATF_TC_WITHOUT_HEAD(routes);
ATF_TC_BODY(routes, tc)
{
	struct pconf	*c = conf();
	struct rerr	 e;

	ATF_CHECK(rules_check_route(pconf_find_model(c, "qwen"),
	    "/v1/chat/completions", &e) == 0);
	ATF_CHECK(rules_check_route(pconf_find_model(c, "qwen"),
	    "/v1/completions", &e) == 0);
	ATF_CHECK(rules_check_route(pconf_find_model(c, "qwen"),
	    "/v1/embeddings", &e) == -1);
	ATF_CHECK_EQ(e.status, 404);
	ATF_CHECK(strstr(e.message, "/v1/embeddings") != NULL);
	ATF_CHECK(rules_check_route(pconf_find_model(c, "bge"),
	    "/v1/embeddings", &e) == 0);
	ATF_CHECK(rules_check_route(pconf_find_model(c, "bge"),
	    "/v1/chat/completions", &e) == -1);
	ATF_CHECK(rules_check_route(pconf_find_model(c, "llava"),
	    "/v1/completions", &e) == -1);
	/* a configured list replaces the kind's */
	ATF_CHECK(rules_check_route(pconf_find_model(c, "odd"),
	    "/v1/responses", &e) == 0);
	ATF_CHECK(rules_check_route(pconf_find_model(c, "odd"),
	    "/v1/chat/completions", &e) == -1);
	pconf_free(c);
}

static int
apply(struct pconf *c, const char *model, const char *body, struct rerr *e,
    char *out, size_t outsize)
{
	json_object	*o = parse(body);
	int		 rv, changed;

	rv = rules_apply(pconf_find_model(c, model)->rt, CC, o, e, &changed);
	strlcpy(out, str(o), outsize);
	json_object_put(o);
	return (rv);
}

ATF_TC_WITHOUT_HEAD(parts);
ATF_TC_BODY(parts, tc)
{
	struct pconf	*c = conf();
	struct rerr	 e;
	char		 out[1024];

	ATF_CHECK(apply(c, "qwen", "{\"messages\":[{\"role\":\"user\","
	    "\"content\":\"plain\"},{\"role\":\"user\",\"content\":[{\"type\":"
	    "\"text\",\"text\":\"hi\"}]}]}", &e, out, sizeof(out)) == 0);
	/* no images for a chat runtime */
	ATF_CHECK(apply(c, "qwen", "{\"messages\":[{\"role\":\"user\","
	    "\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":"
	    "\"data:image/png;base64,AAAA\"}}]}]}", &e, out,
	    sizeof(out)) == -1);
	ATF_CHECK_EQ(e.status, 400);
	ATF_CHECK(strstr(e.message, "image_url") != NULL);
	/* vision: data URLs only */
	ATF_CHECK(apply(c, "llava", "{\"messages\":[{\"role\":\"user\","
	    "\"content\":[{\"type\":\"text\",\"text\":\"what\"},{\"type\":"
	    "\"image_url\",\"image_url\":{\"url\":\"data:image/png;base64,"
	    "AAAA\"}}]}]}", &e, out, sizeof(out)) == 0);
	ATF_CHECK(apply(c, "llava", "{\"messages\":[{\"role\":\"user\","
	    "\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":"
	    "\"https://example.com/cat.png\"}}]}]}", &e, out,
	    sizeof(out)) == -1);
	ATF_CHECK_EQ(e.status, 400);
	ATF_CHECK(strstr(e.message, "data:image/") != NULL);
	ATF_CHECK(apply(c, "llava", "{\"messages\":[{\"role\":\"user\","
	    "\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":"
	    "\"/etc/passwd\"}}]}]}", &e, out, sizeof(out)) == -1);
	ATF_CHECK(apply(c, "llava", "{\"messages\":[{\"role\":\"user\","
	    "\"content\":[{\"type\":\"image_url\",\"image_url\":"
	    "\"file:///etc/passwd\"}]}]}", &e, out, sizeof(out)) == -1);
	ATF_CHECK(apply(c, "llava", "{\"messages\":[{\"role\":\"user\","
	    "\"content\":[{\"type\":\"image_url\",\"image_url\":{\"url\":"
	    "\"data:text/html,x\"}}]}]}", &e, out, sizeof(out)) == -1);
	ATF_CHECK(apply(c, "llava", "{\"messages\":[{\"role\":\"user\","
	    "\"content\":[{\"type\":\"input_audio\"}]}]}", &e, out,
	    sizeof(out)) == -1);
	ATF_CHECK(apply(c, "llava", "{\"messages\":[{\"role\":\"user\","
	    "\"content\":[{\"text\":\"no type\"}]}]}", &e, out,
	    sizeof(out)) == -1);
	/* a configured list */
	ATF_CHECK(apply(c, "odd", "{\"messages\":[{\"role\":\"user\","
	    "\"content\":[{\"type\":\"input_audio\"}]}]}", &e, out,
	    sizeof(out)) == 0);
	ATF_CHECK(apply(c, "qwen", "{\"messages\":5}", &e, out,
	    sizeof(out)) == -1);
	pconf_free(c);
}

ATF_TC_WITHOUT_HEAD(moves);
ATF_TC_BODY(moves, tc)
{
	struct pconf	*c = conf();
	struct rerr	 e;
	char		 out[1024];

	ATF_CHECK(apply(c, "qwen", "{\"max_completion_tokens\":10}", &e, out,
	    sizeof(out)) == 0);
	ATF_CHECK_STREQ(out, "{\"max_tokens\":10}");
	/* same value on both sides: fine */
	ATF_CHECK(apply(c, "qwen", "{\"max_completion_tokens\":10,"
	    "\"max_tokens\":10}", &e, out, sizeof(out)) == 0);
	ATF_CHECK_STREQ(out, "{\"max_tokens\":10}");
	ATF_CHECK(apply(c, "qwen", "{\"max_completion_tokens\":10,"
	    "\"max_tokens\":20}", &e, out, sizeof(out)) == -1);
	ATF_CHECK_EQ(e.status, 400);
	ATF_CHECK_STREQ(e.message,
	    "Conflicting fields max_completion_tokens and max_tokens.");
	/* a nested source whose parent empties is removed */
	ATF_CHECK(apply(c, "qwen", "{\"extra\":{\"seed\":4}}", &e, out,
	    sizeof(out)) == 0);
	ATF_CHECK_STREQ(out, "{\"seed\":4}");
	ATF_CHECK(apply(c, "qwen", "{\"extra\":{\"seed\":4,\"keep\":1}}", &e,
	    out, sizeof(out)) == 0);
	ATF_CHECK_STREQ(out, "{\"extra\":{\"keep\":1},\"seed\":4}");
	ATF_CHECK(apply(c, "qwen", "{\"extra\":{\"seed\":4},\"seed\":5}", &e,
	    out, sizeof(out)) == -1);
	ATF_CHECK_STREQ(e.message, "Conflicting fields extra.seed and seed.");
	/* nothing to move */
	ATF_CHECK(apply(c, "qwen", "{\"extra\":1}", &e, out,
	    sizeof(out)) == 0);
	ATF_CHECK_STREQ(out, "{\"extra\":1}");
	pconf_free(c);
}

ATF_TC_WITHOUT_HEAD(refuse);
ATF_TC_BODY(refuse, tc)
{
	struct pconf	*c = conf();
	struct rerr	 e;
	char		 out[1024];

	ATF_CHECK(apply(c, "qwen", "{\"logit_bias\":{\"1\":2}}", &e, out,
	    sizeof(out)) == -1);
	ATF_CHECK_EQ(e.status, 400);
	ATF_CHECK_STREQ(e.code, "field_not_allowed");
	ATF_CHECK(strstr(e.message, "logit_bias") != NULL);
	ATF_CHECK(apply(c, "qwen", "{\"tools\":{\"x\":1}}", &e, out,
	    sizeof(out)) == -1);
	ATF_CHECK(apply(c, "qwen", "{\"tools\":{\"y\":1}}", &e, out,
	    sizeof(out)) == 0);
	/* other runtimes refuse nothing */
	ATF_CHECK(apply(c, "llava", "{\"logit_bias\":{}}", &e, out,
	    sizeof(out)) == 0);
	pconf_free(c);
}

ATF_TC_WITHOUT_HEAD(rewrite_cap);
ATF_TC_BODY(rewrite_cap, tc)
{
	struct pconf	*c = conf();
	struct pmodel	*m;
	json_object	*o;

	m = pconf_find_model(c, "qwen");
	ATF_CHECK_EQ(rules_cap(m), 256);		/* the runtime's */
	ATF_CHECK_EQ(rules_cap(pconf_find_model(c, "llava")), 64);
	ATF_CHECK_EQ(rules_cap(pconf_find_model(c, "bge")), 0);

	o = parse("{\"model\":\"q\",\"max_tokens\":1000}");
	rules_rewrite(o, "/m/q.gguf", 256, KIND_CHAT, CC);
	ATF_CHECK_STREQ(str(o), "{\"model\":\"\\/m\\/q.gguf\","
	    "\"max_tokens\":256}");
	json_object_put(o);

	o = parse("{\"max_tokens\":10,\"max_completion_tokens\":999}");
	rules_rewrite(o, "up", 256, KIND_CHAT, CC);
	ATF_CHECK_STREQ(str(o), "{\"max_tokens\":10,"
	    "\"max_completion_tokens\":256,\"model\":\"up\"}");
	json_object_put(o);

	/* absent: the cap is added for chat, not for embeddings */
	o = parse("{}");
	rules_rewrite(o, "up", 256, KIND_CHAT, CC);
	ATF_CHECK_STREQ(str(o), "{\"model\":\"up\",\"max_tokens\":256}");
	json_object_put(o);
	o = parse("{}");
	rules_rewrite(o, "up", 256, KIND_EMBEDDING, CC);
	ATF_CHECK_STREQ(str(o), "{\"model\":\"up\"}");
	json_object_put(o);
	/* no cap: untouched */
	o = parse("{\"max_tokens\":100000}");
	rules_rewrite(o, "up", 0, KIND_CHAT, CC);
	ATF_CHECK_STREQ(str(o), "{\"max_tokens\":100000,\"model\":\"up\"}");
	json_object_put(o);
	pconf_free(c);
}

/* Whether the grant's rewrite changes a scanned body, on its pieces. */
static int
rewrite_fast_on(const char *path, const char *body, const char *upstream,
    int64_t cap, int kind)
{
	static struct splice	 sp;
	struct pruntime		 rt;
	struct rscan		 rs;
	struct rerr		 e;

	memset(&rt, 0, sizeof(rt));
	ATF_REQUIRE_MSG(rules_fast(body, strlen(body), NULL, PARTS_NONE, &rs),
	    "%s", body);
	ATF_REQUIRE_EQ(splice_rules(&rt, &rs, &sp, &e), 0);
	return (splice_rewrite(&sp, body, upstream, cap, kind,
	    routes_find(path)));
}

/* The same on chat's route. */
static int
rewrite_fast(const char *body, const char *upstream, int64_t cap, int kind)
{
	return (rewrite_fast_on(CC, body, upstream, cap, kind));
}

/*
 * A runtime whose send model is unchanged: the grant's upstream is "",
 * and the client's "model" (or its absence) goes on as it came, while
 * the cap still applies; the splice of a scanned body does the same.
 */
ATF_TC_WITHOUT_HEAD(rewrite_unchanged);
ATF_TC_BODY(rewrite_unchanged, tc)
{
	const char	*b;
	json_object	*o;

	o = parse("{\"model\":\"alias\",\"max_tokens\":16}");
	ATF_CHECK_EQ(rules_rewrite(o, "", 256, KIND_CHAT, CC), 0);
	ATF_CHECK_STREQ(str(o), "{\"model\":\"alias\",\"max_tokens\":16}");
	ATF_CHECK_EQ(rules_rewrite(o, "", 8, KIND_CHAT, CC), 1);
	ATF_CHECK_STREQ(str(o), "{\"model\":\"alias\",\"max_tokens\":8}");
	json_object_put(o);
	/* no model: none is added */
	o = parse("{\"max_tokens\":16}");
	ATF_CHECK_EQ(rules_rewrite(o, "", 0, KIND_CHAT, CC), 0);
	ATF_CHECK_STREQ(str(o), "{\"max_tokens\":16}");
	json_object_put(o);
	/* the model's name, as the default send model gives it */
	o = parse("{\"model\":\"alias\"}");
	ATF_CHECK_EQ(rules_rewrite(o, "qwen", 0, KIND_CHAT, CC), 1);
	ATF_CHECK_STREQ(str(o), "{\"model\":\"qwen\"}");
	json_object_put(o);

	ATF_CHECK_EQ(rewrite_fast("{}", "", 0, KIND_CHAT), 0);
	ATF_CHECK_EQ(rewrite_fast("{}", "qwen", 0, KIND_CHAT), 1);
	b = "{\"model\":\"alias\",\"max_tokens\":16}";
	ATF_CHECK_EQ(rewrite_fast(b, "", 0, KIND_CHAT), 0);
	ATF_CHECK_EQ(rewrite_fast(b, "", 8, KIND_CHAT), 1);
	ATF_CHECK_EQ(rewrite_fast(b, "alias", 0, KIND_CHAT), 0);
	ATF_CHECK_EQ(rewrite_fast(b, "qwen", 0, KIND_CHAT), 1);
}

/* What the rewrite reports, and when a body's bytes may go on as is. */
ATF_TC_WITHOUT_HEAD(plain);
ATF_TC_BODY(plain, tc)
{
	static const struct {
		const char	*body;
		int		 plain;
	} cases[] = {
		{ "{\"model\":\"up\",\"max_tokens\":16}", 1 },
		{ " {\"a\": [1, -2.5e3, true, false, null, {\"b\": \"x\\\"y\"}]}\n",
		    1 },
		{ "{\"k:\":1}", 1 },			/* a colon in a name */
		{ "{\"k\\\":\":1}", 0 },		/* an escape in a name */
		{ "{\"a\":1,\"\\u0061\":2}", 0 },	/* the same, twice */
		{ "{\"s\":\"a:b\",\"t\":\"c\"}", 1 },	/* in a value */
		{ "{\"a\":1,\"a\":2}", 0 },		/* a name twice */
		{ "{\"m\":[{\"c\":1,\"c\":2}]}", 0 },	/* deep down */
		{ "{\"a\":1 /* c */}", 0 },		/* a comment */
		{ "{\"a\":NaN}", 0 },
		{ "{\"a\":nan}", 0 },
		{ "{\"a\":nulls}", 0 },
		{ "{\"a\":\"x\ty\"}", 0 },		/* a raw tab */
		{ "{\"a\":'x'}", 0 },
	};
	json_object	*o;
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if ((o = json_tokener_parse(cases[i].body)) == NULL) {
			/* json-c refused it: never plain, nothing to test */
			ATF_CHECK_MSG(cases[i].plain == 0, "%s", cases[i].body);
			continue;
		}
		ATF_CHECK_EQ_MSG(rules_plain(cases[i].body,
		    strlen(cases[i].body)), cases[i].plain, "%s",
		    cases[i].body);
		json_object_put(o);
	}

	/* the rewrite says whether it changed anything */
	o = parse("{\"model\":\"up\",\"max_tokens\":16}");
	ATF_CHECK_EQ(rules_rewrite(o, "up", 256, KIND_CHAT, CC), 0);
	ATF_CHECK_EQ(rules_rewrite(o, "up", 0, KIND_CHAT, CC), 0);
	ATF_CHECK_EQ(rules_rewrite(o, "up", 8, KIND_CHAT, CC), 1);	/* capped */
	ATF_CHECK_EQ(rules_rewrite(o, "other", 0, KIND_CHAT, CC), 1);
	json_object_put(o);
	o = parse("{\"model\":\"up\"}");
	ATF_CHECK_EQ(rules_rewrite(o, "up", 256, KIND_EMBEDDING, CC), 0);
	ATF_CHECK_EQ(rules_rewrite(o, "up", 256, KIND_CHAT, CC), 1);	/* added */
	json_object_put(o);
}

/* Whether the scan noted a member of the top object by that name. */
static int
top_has(const struct rscan *rs, const char *name)
{
	size_t	 i;

	for (i = 0; i < rs->ntop; i++)
		if (rs->top[i].namelen == strlen(name) && memcmp(rs->base +
		    rs->top[i].name, name, strlen(name)) == 0)
			return (1);
	return (0);
}

/* The fast path's scan: what it takes, what it notes, what it leaves. */
ATF_TC_WITHOUT_HEAD(scan);
ATF_TC_BODY(scan, tc)
{
	static const struct {
		const char	*body;
		int		 fast;
	} cases[] = {
		{ "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
		    "\"content\":\"hi \\\"you\\\" \\u00e9\"}],\"stream\":true,"
		    "\"max_tokens\":16,\"temperature\":0.5e-1,\"stop\":null,"
		    "\"x\":{\"y\":[1,-0,2.5,true,false,{}]}}", 1 },
		{ " {} \r\n", 1 },
		{ "[]", 0 },				/* not an object */
		{ "{\"a\":1,\"a\":1}", 0 },		/* a name twice */
		{ "{\"x\":{\"b\":1,\"b\":2}}", 0 },	/* deeper */
		{ "{\"mo\\u0064el\":\"m\"}", 0 },	/* an escaped name */
		{ "{\"model\":\"m\\u0000\"}", 0 },	/* escape in model */
		{ "{\"model\":7}", 0 },		/* for json-c's error */
		{ "{\"messages\":[{\"content\":[{\"type\":\"text\"}]}]}", 0 },
		{ "{\"messages\":{}}", 0 },
		{ "{\"max_tokens\":1.5}", 0 },
		{ "{\"max_tokens\":-1}", 0 },
		{ "{\"max_tokens\":1234567890123456}", 0 },
		{ "{\"a\":01}", 0 },			/* numbers as RFC 8259 */
		{ "{\"a\":1.}", 0 },
		{ "{\"a\":.5}", 0 },
		{ "{\"a\":+1}", 0 },
		{ "{\"a\":1e}", 0 },
		{ "{\"a\":\"\\ud800\"}", 0 },	/* a surrogate */
		{ "{\"a\":\"\\x\"}", 0 },
		{ "{\"a\":\"tab\there\"}", 0 },	/* a raw control */
		{ "{\"a\":1,}", 0 },			/* trailing comma */
		{ "{\"a\":1} x", 0 },
		{ "{\"a\":tru}", 0 },
		{ "{\"a\":nulll}", 0 },
		{ "{\"a\":1 /* c */}", 0 },
		{ "{\"a\":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}",
		    0 },				/* deeper than 32 */
	};
	struct rscan	 rs;
	json_object	*o;
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ATF_CHECK_EQ_MSG(rules_fast(cases[i].body,
		    strlen(cases[i].body), NULL, PARTS_NONE, &rs), cases[i].fast, "%s",
		    cases[i].body);
		/* what the scan takes, json-c takes */
		if (cases[i].fast) {
			ATF_CHECK_MSG((o = json_tokener_parse(cases[i].body)) !=
			    NULL, "%s", cases[i].body);
			json_object_put(o);
		}
	}
	ATF_REQUIRE(rules_fast(cases[0].body, strlen(cases[0].body), NULL,
	    PARTS_NONE, &rs));
	ATF_CHECK_STREQ(rs.model, "m");
	ATF_CHECK(rs.has_model);
	ATF_CHECK(rs.stream);
	ATF_CHECK_EQ(rs.max_tokens, 16);
	ATF_CHECK_EQ(rs.max_completion_tokens, -1);
	ATF_CHECK(top_has(&rs, "temperature"));
	ATF_CHECK(top_has(&rs, "x"));
	ATF_CHECK(!top_has(&rs, "y"));
	ATF_CHECK(!top_has(&rs, "max_completion_tokens"));

	/* invalid UTF-8 is never fast */
	ATF_CHECK(!rules_fast("{\"a\":\"\xc3\"}", 9, NULL, PARTS_NONE, &rs));

	/* the rewrite the notes call for, on the pieces */
	ATF_CHECK_EQ(rewrite_fast("{\"model\":\"up\",\"max_tokens\":16}",
	    "up", 256, KIND_CHAT), 0);
	ATF_CHECK_EQ(rewrite_fast("{\"model\":\"up\",\"max_tokens\":16}",
	    "up", 8, KIND_CHAT), 1);
	ATF_CHECK_EQ(rewrite_fast("{\"model\":\"up\",\"max_tokens\":16}",
	    "other", 0, KIND_CHAT), 1);
	ATF_CHECK_EQ(rewrite_fast("{\"model\":\"up\"}", "up", 256, KIND_CHAT),
	    1);
	ATF_CHECK_EQ(rewrite_fast("{\"model\":\"up\"}", "up", 256,
	    KIND_EMBEDDING), 0);
	ATF_REQUIRE(rules_fast("{\"model\":null}", 14, NULL, PARTS_NONE, &rs));
	ATF_CHECK(!rs.has_model);
	ATF_CHECK_EQ(rewrite_fast("{\"model\":null}", "up", 0, KIND_CHAT), 1);
}

/* One body's parse does not reach into the next one's. */
ATF_TC_WITHOUT_HEAD(parse_alone);
ATF_TC_BODY(parse_alone, tc)
{
	static const char	*cut[] = { "{\"a\":\"\\ud83d", "{\"a\":\"\\ud83d\\u",
				    "{\"a\":\"\\u22", "{\"a\":[{\"b\":" };
	const char		*good = "{\"model\":\"x\\u22c0y\"}";
	struct rerr		 e;
	json_object		*o, *m;
	size_t			 i;

	for (i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		ATF_CHECK(rules_parse(cut[i], strlen(cut[i]), &e) == NULL);
		ATF_CHECK_EQ(e.status, 400);
		ATF_REQUIRE((o = rules_parse(good, strlen(good), &e)) != NULL);
		ATF_REQUIRE(json_object_object_get_ex(o, "model", &m));
		ATF_CHECK_STREQ_MSG(json_object_get_string(m),
		    "x\xe2\x8b\x80y", "after %s", cut[i]);
		json_object_put(o);
	}
}

ATF_TC_WITHOUT_HEAD(stops);
ATF_TC_BODY(stops, tc)
{
	struct pconf	*c = conf();
	json_object	*s = parse("{\"stream\":true}"), *n = parse("{}");

	ATF_CHECK_EQ(rules_stops(pconf_find_model(c, "qwen")->rt, n), 1);
	ATF_CHECK_EQ(rules_stops(pconf_find_model(c, "bge")->rt, s), 0);
	ATF_CHECK_EQ(rules_stops(pconf_find_model(c, "llava")->rt, s), 1);
	ATF_CHECK_EQ(rules_stops(pconf_find_model(c, "llava")->rt, n), 0);
	json_object_put(s);
	json_object_put(n);
	pconf_free(c);
}

/*
 * What http_decide makes of a model request for conf() with the fast
 * path on: the front door's own decision, before any effect.  The
 * configuration gains a listener on port 8080 for the Host checks.
 */
static void
decide_chat(struct pconf *c, const char *body, struct http_decision *dc)
{
	struct http_hdrs	 hh = { .host = "127.0.0.1:8080",
				    .ctype = "application/json" };
	struct plisten		*l;

	if (TAILQ_EMPTY(&c->listens)) {
		ATF_REQUIRE((l = calloc(1, sizeof(*l))) != NULL);
		l->fd = -1;
		l->port = 8080;
		(void)strlcpy(l->host, "127.0.0.1", sizeof(l->host));
		TAILQ_INSERT_TAIL(&c->listens, l, entry);
	}
	http_fastpath = 1;
	http_decide(c, EVHTTP_REQ_POST, "/v1/chat/completions", &hh, body,
	    strlen(body), NULL, dc);
}

/* The bytes of a splice of body, as a string. */
static const char *
spliced(const struct splice *sp, const char *body)
{
	static char	 out[1024];
	struct iovec	 iov[SPLICE_PIECES];
	size_t		 n, i, len, off = 0;

	n = splice_iov(sp, body, iov, SPLICE_PIECES, &len);
	ATF_REQUIRE(len < sizeof(out));
	for (i = 0; i < n; i++) {
		memcpy(out + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	out[off] = '\0';
	return (out);
}

/*
 * A refused field, or the source of a move, in a body the fast scan
 * takes: never passed on; the answer is the json-c path's 400, or the
 * move, spliced (a refused path, tools.x, is json-c's to find).
 */
ATF_TC_WITHOUT_HEAD(fast_refuse);
ATF_TC_BODY(fast_refuse, tc)
{
	static const char	*refused[] = {
		"{\"model\":\"qwen\",\"logit_bias\":{\"1\":2},"
		    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}",
		"{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
		    "\"model\":\"qwen\",\"tools\":{\"x\":[]}}",
	};
	struct pconf		*c = conf();
	struct pmodel		*m = pconf_find_model(c, "qwen");
	struct http_decision	 dc;
	struct splice		 sp;
	struct rscan		 rs;
	struct rerr		 e;
	const char		*b;
	size_t			 i;

	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		b = refused[i];
		ATF_REQUIRE_MSG(rules_fast(b, strlen(b), NULL, PARTS_NONE, &rs), "%s", b);
		ATF_CHECK_EQ_MSG(splice_rules(m->rt, &rs, &sp, &e), i == 0 ?
		    -1 : 1, "%s", b);
		decide_chat(c, b, &dc);
		ATF_CHECK_EQ_MSG(dc.action, HTTP_ERROR, "%s", b);
		ATF_CHECK_EQ_MSG(dc.e.status, 400, "%s", b);
		ATF_CHECK_STREQ_MSG(dc.e.code, "field_not_allowed", "%s", b);
		ATF_CHECK(dc.model == m);
		json_object_put(dc.body);
	}

	/* allowed beside them: held, on the fast path, as it is */
	b = "{\"model\":\"qwen\",\"tools\":{\"y\":[]}}";
	ATF_REQUIRE(rules_fast(b, strlen(b), NULL, PARTS_NONE, &rs));
	decide_chat(c, b, &dc);
	ATF_CHECK_EQ(dc.action, HTTP_HOLD);
	ATF_CHECK(dc.plain);
	json_object_put(dc.body);
	b = "{\"model\":\"qwen\",\"seed\":1}";
	decide_chat(c, b, &dc);
	ATF_CHECK_EQ(dc.action, HTTP_HOLD);
	ATF_CHECK(dc.fast && dc.plain && dc.body == NULL);

	/* a move's source: moved in the bytes, or refused when it
	 * conflicts */
	b = "{\"model\":\"qwen\",\"max_completion_tokens\":9}";
	decide_chat(c, b, &dc);
	ATF_CHECK_EQ(dc.action, HTTP_HOLD);
	ATF_CHECK(dc.fast && !dc.plain && dc.body == NULL);
	ATF_CHECK_STREQ(spliced(&dc.splice, b),
	    "{\"model\":\"qwen\",\"max_tokens\":9}");
	b = "{\"model\":\"qwen\",\"max_completion_tokens\":9,"
	    "\"max_tokens\":8}";
	decide_chat(c, b, &dc);
	ATF_CHECK_EQ(dc.action, HTTP_ERROR);
	ATF_CHECK_EQ(dc.e.status, 400);
	ATF_CHECK_STREQ(dc.e.code, "conflicting_fields");
	pconf_free(c);
}

/* The cap added where a body has no max_tokens: for the kinds that
 * generate text (chat, vision), not for the others. */
ATF_TC_WITHOUT_HEAD(cap_by_kind);
ATF_TC_BODY(cap_by_kind, tc)
{
	static const struct {
		int		 kind;
		const char	*out;
	} cases[] = {
		{ KIND_CHAT, "{\"model\":\"up\",\"max_tokens\":64}" },
		{ KIND_VISION, "{\"model\":\"up\",\"max_tokens\":64}" },
		{ KIND_EMBEDDING, "{\"model\":\"up\"}" },
		{ KIND_SPEECH, "{\"model\":\"up\"}" },
		{ KIND_IMAGE, "{\"model\":\"up\"}" },
	};
	json_object	*o;
	size_t		 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		o = parse("{\"model\":\"up\"}");
		ATF_CHECK_EQ_MSG(rules_rewrite(o, "up", 64, cases[i].kind, CC),
		    strchr(cases[i].out, ',') != NULL, "kind %d", cases[i].kind);
		ATF_CHECK_STREQ_MSG(str(o), cases[i].out, "kind %d",
		    cases[i].kind);
		json_object_put(o);
	}
}

/*
 * Issue 29, item 5: the cap holds every field llama-server reads for the
 * length of an answer (routes_limits), on every route with a cap: below
 * 1 (-1 is "until the context is full"), null, a fraction, a string all
 * become the cap, and n_predict, which it reads first, is capped too.
 * The tree and, where the scan takes the body, the splice alike.
 */
ATF_TC_WITHOUT_HEAD(cap_limits);
ATF_TC_BODY(cap_limits, tc)
{
	static const struct {
		const char	*path;
		const char	*body;
		const char	*want;
	} cases[] = {
		{ CC, "{\"max_tokens\":-1}", "{\"max_tokens\":8,"
		    "\"model\":\"up\"}" },
		{ CC, "{\"max_tokens\":0}", "{\"max_tokens\":8,"
		    "\"model\":\"up\"}" },
		{ CC, "{\"max_tokens\":null}", "{\"max_tokens\":8,"
		    "\"model\":\"up\"}" },
		{ CC, "{\"max_tokens\":2.5}", "{\"max_tokens\":8,"
		    "\"model\":\"up\"}" },
		{ CC, "{\"max_tokens\":\"4\"}", "{\"max_tokens\":8,"
		    "\"model\":\"up\"}" },
		{ CC, "{\"max_tokens\":true}", "{\"max_tokens\":8,"
		    "\"model\":\"up\"}" },
		{ CC, "{\"max_tokens\":-99999999999999999999}",
		    "{\"max_tokens\":8,\"model\":\"up\"}" },
		/* a count within it stays; 1 and the cap are within */
		{ CC, "{\"max_tokens\":1}", "{\"max_tokens\":1,"
		    "\"model\":\"up\"}" },
		{ CC, "{\"max_tokens\":8}", "{\"max_tokens\":8,"
		    "\"model\":\"up\"}" },
		{ CC, "{\"max_tokens\":9}", "{\"max_tokens\":8,"
		    "\"model\":\"up\"}" },
		{ CC, "{\"max_completion_tokens\":-1}",
		    "{\"max_completion_tokens\":8,\"model\":\"up\"}" },
		{ CC, "{\"max_tokens\":5,\"max_completion_tokens\":null}",
		    "{\"max_tokens\":5,\"max_completion_tokens\":8,"
		    "\"model\":\"up\"}" },
		/* n_predict, read before the others, on every route */
		{ CC, "{\"n_predict\":200}", "{\"n_predict\":8,"
		    "\"model\":\"up\",\"max_tokens\":8}" },
		{ CC, "{\"n_predict\":-1,\"max_tokens\":4}", "{\"n_predict\":8,"
		    "\"max_tokens\":4,\"model\":\"up\"}" },
		{ CC, "{\"n_predict\":3}", "{\"n_predict\":3,"
		    "\"model\":\"up\",\"max_tokens\":8}" },
		{ "/v1/completions", "{\"max_completion_tokens\":-1,"
		    "\"n_predict\":null}", "{\"max_completion_tokens\":8,"
		    "\"n_predict\":8,\"model\":\"up\",\"max_tokens\":8}" },
		{ "/v1/completions", "{\"max_tokens\":-1}",
		    "{\"max_tokens\":8,\"model\":\"up\"}" },
		{ "/v1/messages", "{\"max_tokens\":-1}",
		    "{\"max_tokens\":8,\"model\":\"up\"}" },
		{ "/v1/messages", "{\"max_tokens\":4,"
		    "\"max_completion_tokens\":100,\"n_predict\":100}",
		    "{\"max_tokens\":4,\"max_completion_tokens\":8,"
		    "\"n_predict\":8,\"model\":\"up\"}" },
		{ "/v1/responses", "{\"max_output_tokens\":-5}",
		    "{\"max_output_tokens\":8,\"model\":\"up\"}" },
		{ "/v1/responses", "{\"max_output_tokens\":0,"
		    "\"n_predict\":100}", "{\"max_output_tokens\":8,"
		    "\"n_predict\":8,\"model\":\"up\"}" },
		/* llama-server's own /completion: the route of other paths */
		{ "/completion", "{\"n_predict\":-1}", "{\"n_predict\":8,"
		    "\"model\":\"up\",\"max_tokens\":8}" },
		/* routes with no cap: as they came */
		{ "/v1/messages/count_tokens", "{\"n_predict\":-1}",
		    "{\"n_predict\":-1,\"model\":\"up\"}" },
		{ "/v1/embeddings", "{\"max_tokens\":-1}",
		    "{\"max_tokens\":-1,\"model\":\"up\"}" },
	};
	static struct splice	 sp;
	struct pruntime		 rt;
	struct rscan		 rs;
	struct rerr		 e;
	json_object		*o, *f;
	const char		*out;
	size_t			 i;
	int			 fast = 0;

	memset(&rt, 0, sizeof(rt));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct route	*r = routes_find(cases[i].path);
		const char		*b = cases[i].body;

		o = parse(b);
		ATF_CHECK_EQ_MSG(rules_rewrite(o, "up", 8, KIND_CHAT,
		    cases[i].path), 1, "%s %s", cases[i].path, b);
		ATF_CHECK_STREQ_MSG(str(o), cases[i].want, "%s %s",
		    cases[i].path, b);
		if (splice_route(r) && rules_fast(b, strlen(b), NULL,
		    r->parts, &rs) && splice_rules(&rt, &rs, &sp, &e) == 0) {
			fast++;
			ATF_CHECK_EQ_MSG(splice_rewrite(&sp, b, "up", 8,
			    KIND_CHAT, r), 1, "%s %s", cases[i].path, b);
			out = spliced(&sp, b);
			f = parse(out);
			ATF_CHECK_MSG(json_object_equal(o, f), "%s %s: %s "
			    "against %s", cases[i].path, b, out, str(o));
			json_object_put(f);
		}
		json_object_put(o);
	}
	/* the splice was tried on the bodies the scan takes */
	ATF_CHECK(fast >= 10);
}

/* conf() listening on 127.0.0.1:8080 and [::1]:8081. */
static struct pconf *
listening_conf(void)
{
	struct pconf	*c = conf();
	struct plisten	*l;
	int		 i;

	for (i = 0; i < 2; i++) {
		ATF_REQUIRE((l = calloc(1, sizeof(*l))) != NULL);
		l->fd = -1;
		l->port = 8080 + i;
		(void)strlcpy(l->host, i == 0 ? "127.0.0.1" : "::1",
		    sizeof(l->host));
		TAILQ_INSERT_TAIL(&c->listens, l, entry);
	}
	return (c);
}

ATF_TC_WITHOUT_HEAD(host);
ATF_TC_BODY(host, tc)
{
	static const char *ok[] = { "127.0.0.1:8080", "localhost:8081",
		"LOCALHOST:8080", "[::1]:8081", "[::1]:8080", "[::1]:08080",
		NULL };
	static const char *bad[] = { "127.0.0.1", "localhost", "[::1]",
		"127.0.0.1:8082", "127.0.0.1:0", "127.0.0.1:65536",
		"127.0.0.1:+8080", "127.0.0.1: 8080", "127.0.0.1:", ":8080",
		"::1:8080", "[::1", "[::1]x:8080", "rebind.evil.example:8080",
		"127.0.0.2:8080", "localhost.:8080", "", "agency.lan:8080",
		NULL };
	static const char *named[] = { "agency.lan", "Agency.LAN:1",
		"gw.example:8443", "192.168.1.5", "192.168.1.5:80", NULL };
	static const char *unnamed[] = { "gw.example", "gw.example:8080",
		"192.168.1.5:8080", "agency.lan.evil:8080", "agency.la:8080",
		NULL };
	struct pconf	*c = listening_conf();
	size_t		 i;

	ATF_CHECK(!http_host_ok(c, NULL));
	for (i = 0; ok[i] != NULL; i++)
		ATF_CHECK_MSG(http_host_ok(c, ok[i]), "%s", ok[i]);
	for (i = 0; bad[i] != NULL; i++)
		ATF_CHECK_MSG(!http_host_ok(c, bad[i]), "%s", bad[i]);
	/* server names: without a port any port, with one that one */
	ATF_REQUIRE(pstrs_add(&c->names, "agency.lan") == 0);
	ATF_REQUIRE(pstrs_add(&c->names, "gw.example:8443") == 0);
	ATF_REQUIRE(pstrs_add(&c->names, "192.168.1.5:80") == 0);
	for (i = 0; named[i] != NULL; i++)
		ATF_CHECK_MSG(http_host_ok(c, named[i]), "%s", named[i]);
	for (i = 0; unnamed[i] != NULL; i++)
		ATF_CHECK_MSG(!http_host_ok(c, unnamed[i]), "%s", unnamed[i]);
	/* the address of a listener that is not a wildcard */
	(void)strlcpy(TAILQ_FIRST(&c->listens)->host, "10.1.2.3",
	    sizeof(TAILQ_FIRST(&c->listens)->host));
	ATF_CHECK(http_host_ok(c, "10.1.2.3:8080"));
	ATF_CHECK(!http_host_ok(c, "10.1.2.3:9"));
	(void)strlcpy(TAILQ_FIRST(&c->listens)->host, "0.0.0.0",
	    sizeof(TAILQ_FIRST(&c->listens)->host));
	ATF_CHECK(!http_host_ok(c, "0.0.0.0:8080"));
	/* server name any: whatever, even none */
	c->host_any = 1;
	ATF_CHECK(http_host_ok(c, "rebind.evil.example:8080"));
	ATF_CHECK(http_host_ok(c, NULL));
	pconf_free(c);
}

ATF_TC_WITHOUT_HEAD(origin);
ATF_TC_BODY(origin, tc)
{
	struct pconf	*c = listening_conf();

	ATF_CHECK(http_origin_ok(c, "http://127.0.0.1:8080",
	    "127.0.0.1:8080", 0));
	ATF_CHECK(http_origin_ok(c, "HTTP://LocalHost:8080",
	    "localhost:8080", 0));
	ATF_CHECK(http_origin_ok(c, "http://a.lan", "a.lan:80", 0));
	ATF_CHECK(http_origin_ok(c, "http://a.lan:80", "a.lan", 0));
	ATF_CHECK(http_origin_ok(c, "http://[::1]:8081", "[::1]:8081", 0));
	ATF_CHECK(!http_origin_ok(c, "http://localhost:8080",
	    "127.0.0.1:8080", 0));
	ATF_CHECK(!http_origin_ok(c, "http://127.0.0.1:8081",
	    "127.0.0.1:8080", 0));
	ATF_CHECK(!http_origin_ok(c, "https://127.0.0.1:8080",
	    "127.0.0.1:8080", 0));
	ATF_CHECK(!http_origin_ok(c, "http://127.0.0.1:8080/",
	    "127.0.0.1:8080", 0));
	ATF_CHECK(!http_origin_ok(c, "null", "127.0.0.1:8080", 0));
	ATF_CHECK(!http_origin_ok(c, "", "127.0.0.1:8080", 0));
	ATF_CHECK(!http_origin_ok(c, "http://evil.example",
	    "127.0.0.1:8080", 0));
	ATF_CHECK(!http_origin_ok(c, "http://127.0.0.1:8080", NULL, 0));
	/* over TLS, the front door's own origin is https, port 443 by
	 * default */
	ATF_CHECK(http_origin_ok(c, "https://127.0.0.1:8080",
	    "127.0.0.1:8080", 1));
	ATF_CHECK(http_origin_ok(c, "https://a.lan", "a.lan:443", 1));
	ATF_CHECK(http_origin_ok(c, "https://a.lan:443", "a.lan", 1));
	ATF_CHECK(!http_origin_ok(c, "http://127.0.0.1:8080",
	    "127.0.0.1:8080", 1));
	ATF_CHECK(!http_origin_ok(c, "https://a.lan", "a.lan:80", 1));
	pconf_free(c);
}

/* The decision's action, or its error's status. */
static int
decide(struct pconf *c, int cmd, const char *path, const char *host,
    const char *origin, const char *ctype, const char *body)
{
	static const struct hpeer loop = { .addr = "127.0.0.1" };
	struct http_decision	 dc;
	struct http_hdrs	 hh = { .host = host, .origin = origin,
				    .ctype = ctype, .peer = &loop };

	http_decide(c, cmd, path, &hh, body, body ? strlen(body) : 0, NULL,
	    &dc);
	json_object_put(dc.body);
	return (dc.action == HTTP_ERROR ? dc.e.status : -dc.action);
}

ATF_TC_WITHOUT_HEAD(web_page);
ATF_TC_BODY(web_page, tc)
{
	struct pconf	*c = listening_conf();
	const char	*h = "127.0.0.1:8080", *chat = "/v1/chat/completions";
	const char	*b = "{\"model\":\"qwen\"}", *j = "application/json";

	px->conf = c;
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_POST, chat, h, NULL, j, b),
	    -HTTP_HOLD);
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_POST, chat, h, NULL,
	    "application/json; charset=utf-8", b), -HTTP_HOLD);
	/* Host first: not even the route is told */
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_POST, "/nosuch", "evil:8080", NULL,
	    j, b), 403);
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_GET, "/v1/models", "evil:8080",
	    NULL, NULL, NULL), 403);
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_GET, "/v1/models", NULL, NULL,
	    NULL, NULL), 403);
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_GET, "/health", "evil:8080",
	    "http://evil", NULL, NULL), -HTTP_HEALTH);
	/* then the Origin, preflights included */
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_POST, chat, h, "http://evil", j,
	    b), 403);
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_OPTIONS, chat, h, "http://evil",
	    NULL, NULL), 403);
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_POST, chat, h,
	    "http://127.0.0.1:8080", j, b), -HTTP_HOLD);
	/* a body a page could send unasked */
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_POST, chat, h, NULL, "text/plain",
	    b), 415);
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_POST, chat, h, NULL, NULL, b),
	    415);
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_POST, chat, h, NULL,
	    "application/x-www-form-urlencoded", b), 415);
	/* admin routes: a loopback Host even with server names */
	ATF_REQUIRE(pstrs_add(&c->names, "agency.lan") == 0);
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_POST, chat, "agency.lan", NULL, j,
	    b), -HTTP_HOLD);
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_GET, "/v1/agency/status",
	    "agency.lan:8080", NULL, NULL, NULL), 403);
	ATF_CHECK_EQ(decide(c, EVHTTP_REQ_GET, "/v1/agency/status", h, NULL,
	    NULL, NULL), -HTTP_STATUS);
	px->conf = NULL;
	pconf_free(c);
}

/*
 * Content parts on the fast path: the scan reads them as check_parts
 * does and notes their types, which splice_rules asks the runtime
 * about; what it cannot settle goes to the tree.  Each case says which
 * path takes the body and what the tree says of it; where the fast path
 * takes it, the tree must take it too, changed alike.
 */
#define FAST	1
#define TREE	0
static void
parts_case(struct pconf *c, const char *model, const char *path,
    const char *body, int want, int tree)
{
	static struct splice	 sp;
	struct pmodel		*m;
	struct rscan		 rs;
	struct rerr		 e, e2;
	json_object		*o;
	int			 fast, r2, changed;

	ATF_REQUIRE((m = pconf_find_model(c, model)) != NULL);
	fast = rules_fast(body, strlen(body), NULL, routes_find(path)->parts,
	    &rs) && splice_rules(m->rt, &rs, &sp, &e) == 0;
	ATF_CHECK_EQ_MSG(fast, want, "%s %s: %s", model, path, body);
	o = parse(body);
	r2 = rules_apply(m->rt, path, o, &e2, &changed);
	ATF_CHECK_EQ_MSG(r2, tree, "%s %s: %s: %s", model, path, body,
	    r2 == -1 ? e2.message : "taken");
	if (fast)
		ATF_CHECK_MSG(r2 == 0 && changed == sp.changed, "%s %s: %s",
		    model, path, body);
	json_object_put(o);
}

/* A chat body of one user message whose content is parts. */
static const char *
chat_parts(const char *parts)
{
	static char	 b[2048];

	(void)snprintf(b, sizeof(b), "{\"model\":\"m\",\"messages\":["
	    "{\"role\":\"system\",\"content\":\"be brief\"},"
	    "{\"role\":\"user\",\"content\":[%s]}]}", parts);
	return (b);
}

/* A Messages body: system, then one user message of blocks. */
static const char *
msg_blocks(const char *system, const char *blocks)
{
	static char	 b[2048];

	(void)snprintf(b, sizeof(b), "{\"model\":\"m\",\"max_tokens\":64,"
	    "\"system\":%s,\"messages\":[{\"role\":\"user\",\"content\":"
	    "[%s]}]}", system, blocks);
	return (b);
}

/* A Responses body: one user item whose content is parts. */
static const char *
resp_items(const char *parts)
{
	static char	 b[2048];

	(void)snprintf(b, sizeof(b), "{\"model\":\"m\",\"input\":[{\"role\":"
	    "\"user\",\"content\":[%s]}],\"max_output_tokens\":64}", parts);
	return (b);
}

#define TEXT	"{\"type\":\"text\",\"text\":\"hi\"}"
#define IN_TEXT	"{\"type\":\"input_text\",\"text\":\"hi\"}"
#define IN_IMG	"{\"type\":\"input_image\",\"image_url\":" \
		    "\"data:image/png;base64,AAAA\"}"
#define IMG	"{\"type\":\"image_url\",\"image_url\":{\"url\":" \
		    "\"data:image/png;base64,AAAA\"}}"
#define BLOCK_IMG "{\"type\":\"image\",\"source\":{\"type\":\"base64\"," \
		    "\"media_type\":\"image/png\",\"data\":\"AAAA\"}}"

ATF_TC_WITHOUT_HEAD(fast_parts);
ATF_TC_BODY(fast_parts, tc)
{
	struct pconf	*c = conf();
	struct pruntime	*rt;
	struct rscan	 rs;
	const char	*b, *M = "/v1/messages", *R = "/v1/responses";
	char		 nine[1024];
	size_t		 i;

	/* a runtime that takes files and images, and nine kinds */
	ATF_REQUIRE((rt = pconf_add_runtime(c, "docs", KIND_CHAT,
	    STOPS_ALWAYS, 0)) != NULL);
	ATF_REQUIRE(pstrs_add(&rt->parts, "text") == 0);
	ATF_REQUIRE(pstrs_add(&rt->parts, "file") == 0);
	ATF_REQUIRE(pstrs_add(&rt->parts, "image_url") == 0);
	for (i = 0; i < 9; i++) {
		(void)snprintf(nine, sizeof(nine), "k%zu", i);
		ATF_REQUIRE(pstrs_add(&rt->parts, nine) == 0);
	}
	ATF_REQUIRE(pconf_add_model(c, "docs", "docs", "/m/d", "docs", 0) !=
	    NULL);

	/* chat: text for every model; each type noted once */
	b = chat_parts(TEXT "," TEXT);
	parts_case(c, "qwen", CC, b, FAST, 0);
	ATF_REQUIRE(rules_fast(b, strlen(b), NULL, PARTS_CHAT, &rs));
	ATF_REQUIRE_EQ(rs.ntypes, 1);
	ATF_CHECK_STREQ(rs.types[0], "text");
	/* an inline image: for a vision model; the others' is the tree's
	 * refusal */
	parts_case(c, "llava", CC, chat_parts(TEXT "," IMG), FAST, 0);
	parts_case(c, "qwen", CC, chat_parts(TEXT "," IMG), TREE, -1);
	parts_case(c, "llava", CC, chat_parts("{\"type\":\"image_url\","
	    "\"image_url\":\"data:image/png;base64,AAAA\"}"), FAST, 0);
	parts_case(c, "llava", CC, chat_parts("{\"image_url\":{\"detail\":"
	    "\"low\",\"url\":\"data:image/\"},\"type\":\"image_url\"}"),
	    FAST, 0);
	/* images the model process would fetch or open, or none */
	parts_case(c, "llava", CC, chat_parts("{\"type\":\"image_url\","
	    "\"image_url\":{\"url\":\"https://example.com/a.png\"}}"),
	    TREE, -1);
	parts_case(c, "llava", CC, chat_parts("{\"type\":\"image_url\","
	    "\"image_url\":\"file:///etc/passwd\"}"), TREE, -1);
	parts_case(c, "llava", CC, chat_parts("{\"type\":\"image_url\","
	    "\"image_url\":\"data:image\"}"), TREE, -1);
	parts_case(c, "llava", CC, chat_parts("{\"type\":\"image_url\","
	    "\"image_url\":{\"url\":7}}"), TREE, -1);
	parts_case(c, "llava", CC, chat_parts("{\"type\":\"image_url\","
	    "\"image_url\":{\"uri\":\"data:image/png;base64,AA\"}}"),
	    TREE, -1);
	parts_case(c, "llava", CC, chat_parts("{\"type\":\"image_url\"}"),
	    TREE, -1);
	parts_case(c, "llava", CC, chat_parts("{\"type\":\"image_url\","
	    "\"image_url\":[\"data:image/png;base64,AA\"]}"), TREE, -1);
	/* files: inline data, never an id */
	parts_case(c, "docs", CC, chat_parts("{\"type\":\"file\",\"file\":"
	    "{\"file_data\":\"data:application/pdf;base64,AA\"}}"), FAST, 0);
	parts_case(c, "docs", CC, chat_parts("{\"type\":\"file\",\"file\":"
	    "{\"filename\":\"a\",\"file_id\":null}}"), TREE, -1);
	/* a part without a type, or not an object, is refused by the
	 * tree; one whose type has an escape is the tree's to read */
	parts_case(c, "qwen", CC, chat_parts("{\"text\":\"x\"}"), TREE, -1);
	parts_case(c, "qwen", CC, chat_parts("{}"), TREE, -1);
	parts_case(c, "qwen", CC, chat_parts("\"x\""), TREE, -1);
	parts_case(c, "qwen", CC, chat_parts("{\"type\":null}"), TREE, -1);
	parts_case(c, "qwen", CC, chat_parts("{\"type\":\"t\\u0065xt\"}"),
	    TREE, 0);
	parts_case(c, "qwen", CC, chat_parts("{\"type\":\"xxxxxxxxxxxxxxxx"
	    "xxxxxxxxxxxxxxxxxxxxxxxxx\"}"), TREE, -1);
	parts_case(c, "qwen", CC, chat_parts(""), FAST, 0);
	/* a configured list */
	parts_case(c, "odd", CC, chat_parts("{\"type\":\"input_audio\","
	    "\"input_audio\":{\"data\":\"AA\",\"format\":\"wav\"}}"),
	    FAST, 0);
	parts_case(c, "qwen", CC, chat_parts("{\"type\":\"input_audio\"}"),
	    TREE, -1);
	/* chat's own blocks have no tool_use to skip */
	parts_case(c, "qwen", CC, chat_parts("{\"type\":\"tool_use\"}"),
	    TREE, -1);
	/* more kinds than the scan notes */
	for (i = 0, nine[0] = '\0'; i < 9; i++)
		(void)snprintf(nine + strlen(nine), sizeof(nine) - strlen(nine),
		    "%s{\"type\":\"k%zu\"}", i > 0 ? "," : "", i);
	parts_case(c, "docs", CC, chat_parts(nine), TREE, 0);
	nine[strrchr(nine, ',') - nine] = '\0';
	parts_case(c, "docs", CC, chat_parts(nine), FAST, 0);
	/* the moves and the cap still apply */
	parts_case(c, "qwen", CC, "{\"messages\":[{\"role\":\"user\","
	    "\"content\":[" TEXT "]}],\"max_completion_tokens\":9}", FAST, 0);

	/* Messages: a system of blocks, a conversation with tools */
	parts_case(c, "qwen", M, msg_blocks("[" TEXT "]", TEXT), FAST, 0);
	parts_case(c, "qwen", M, msg_blocks("\"be brief\"", TEXT "," TEXT),
	    FAST, 0);
	parts_case(c, "qwen", M, msg_blocks("[" BLOCK_IMG "]", TEXT), TREE,
	    -1);
	parts_case(c, "llava", M, msg_blocks("[" TEXT "]", BLOCK_IMG), FAST,
	    0);
	parts_case(c, "llava", "/v1/messages/count_tokens",
	    msg_blocks("[" TEXT "]", BLOCK_IMG), FAST, 0);
	parts_case(c, "llava", M, msg_blocks("null", "{\"type\":\"image\","
	    "\"source\":{\"type\":\"url\",\"url\":\"https://x/a.png\"}}"),
	    TREE, -1);
	parts_case(c, "llava", M, msg_blocks("null", "{\"type\":\"image\","
	    "\"source\":\"base64\"}"), TREE, -1);
	parts_case(c, "llava", M, msg_blocks("null", "{\"type\":\"image\"}"),
	    TREE, -1);
	parts_case(c, "docs", M, msg_blocks("null", "{\"type\":\"document\","
	    "\"source\":{\"type\":\"text\",\"data\":\"x\"}}"), FAST, 0);
	parts_case(c, "docs", M, msg_blocks("null", "{\"type\":\"document\","
	    "\"source\":{\"type\":\"file\",\"file_id\":\"f\"}}"),
	    TREE, -1);
	parts_case(c, "docs", M, msg_blocks("null", "{\"type\":\"image\","
	    "\"source\":{\"type\":\"text\",\"data\":\"x\"}}"), TREE, -1);
	/* tools' blocks need no type of the runtime's; a result's content
	 * is parts in turn, two deep at most */
	b = msg_blocks("null", "{\"type\":\"tool_use\",\"id\":\"t1\","
	    "\"name\":\"f\",\"input\":{\"content\":[1]}},"
	    "{\"type\":\"thinking\",\"thinking\":\"x\"},"
	    "{\"type\":\"tool_result\",\"tool_use_id\":\"t1\","
	    "\"content\":[" TEXT "]}");
	parts_case(c, "qwen", M, b, FAST, 0);
	ATF_REQUIRE(rules_fast(b, strlen(b), NULL, PARTS_MESSAGES, &rs));
	ATF_CHECK_EQ(rs.ntypes, 1);
	parts_case(c, "qwen", M, msg_blocks("null", "{\"content\":["
	    BLOCK_IMG "],\"type\":\"tool_result\"}"), TREE, -1);
	parts_case(c, "qwen", M, msg_blocks("null", "{\"type\":\"tool_result\","
	    "\"content\":[{\"type\":\"tool_result\",\"content\":["
	    TEXT "]}]}"), FAST, 0);
	parts_case(c, "qwen", M, msg_blocks("null", "{\"type\":\"tool_result\","
	    "\"content\":[{\"type\":\"tool_result\",\"content\":["
	    "{\"type\":\"tool_result\",\"content\":[" TEXT "]}]}]}"),
	    TREE, -1);
	parts_case(c, "qwen", M, msg_blocks("null", "{\"type\":\"tool_result\","
	    "\"content\":\"42\"}"), FAST, 0);
	/* in doubt, the tree: a block that is not a result, with content */
	parts_case(c, "qwen", M, msg_blocks("null", "{\"type\":\"text\","
	    "\"text\":\"x\",\"content\":[" BLOCK_IMG "]}"), TREE, 0);
	/* Anthropic's names are not chat's */
	parts_case(c, "llava", CC, chat_parts(BLOCK_IMG), TREE, -1);
	parts_case(c, "llava", M, msg_blocks("null", IMG), TREE, -1);

	/* the Responses: input and instructions, a string or items whose
	 * content and output are parts */
	parts_case(c, "qwen", R, "{\"model\":\"m\",\"input\":\"hi\","
	    "\"instructions\":\"be brief\",\"max_output_tokens\":9}",
	    FAST, 0);
	parts_case(c, "qwen", R, resp_items(IN_TEXT), FAST, 0);
	parts_case(c, "llava", R, resp_items(IN_TEXT "," IN_IMG), FAST, 0);
	parts_case(c, "qwen", R, resp_items(IN_TEXT "," IN_IMG), TREE, -1);
	parts_case(c, "llava", "/v1/responses/input_tokens",
	    resp_items(IN_IMG), FAST, 0);
	parts_case(c, "llava", R, resp_items("{\"type\":\"input_image\","
	    "\"image_url\":{\"url\":\"data:image/png;base64,AA\"}}"),
	    TREE, -1);
	parts_case(c, "llava", R, resp_items("{\"type\":\"input_image\","
	    "\"image_url\":\"https://example.com/a.png\"}"), TREE, -1);
	parts_case(c, "llava", R, resp_items("{\"type\":\"input_image\","
	    "\"image_url\":\"data:image/png;base64,AA\",\"file_id\":"
	    "\"f\"}"), TREE, -1);
	parts_case(c, "docs", R, resp_items("{\"type\":\"input_file\","
	    "\"filename\":\"a.pdf\",\"file_data\":\"AA\"}"), FAST, 0);
	parts_case(c, "docs", R, resp_items("{\"type\":\"input_file\","
	    "\"file_url\":\"https://example.com/a.pdf\"}"), TREE, -1);
	parts_case(c, "docs", R, resp_items("{\"file_id\":\"f\","
	    "\"type\":\"input_file\"}"), TREE, -1);
	parts_case(c, "qwen", R, "{\"model\":\"m\",\"input\":[{\"role\":"
	    "\"assistant\",\"content\":[{\"type\":\"output_text\","
	    "\"text\":\"x\"},{\"type\":\"refusal\",\"refusal\":\"no\"}]},"
	    "{\"type\":\"function_call_output\",\"call_id\":\"c\","
	    "\"output\":[" IN_TEXT "]},{\"type\":\"function_call_output\","
	    "\"call_id\":\"d\",\"output\":\"42\"},7]}", FAST, 0);
	parts_case(c, "llava", R, "{\"model\":\"m\",\"input\":[{\"type\":"
	    "\"function_call_output\",\"output\":[{\"type\":\"input_image\","
	    "\"file_id\":\"f\"}]}]}", TREE, -1);
	parts_case(c, "qwen", R, "{\"model\":\"m\",\"instructions\":["
	    "{\"role\":\"system\",\"content\":[" IN_TEXT "]}]}", FAST, 0);
	parts_case(c, "qwen", R, "{\"model\":\"m\",\"instructions\":["
	    "{\"role\":\"system\",\"content\":[" IN_IMG "]}]}", TREE, -1);
	parts_case(c, "qwen", R, "{\"model\":\"m\",\"input\":null}", TREE,
	    -1);
	parts_case(c, "qwen", R, "{\"model\":\"m\",\"input\":{}}", TREE,
	    -1);
	parts_case(c, "qwen", R, "{\"model\":\"m\",\"instructions\":5}",
	    TREE, -1);
	/* chat's names are not the Responses' */
	parts_case(c, "llava", R, resp_items(IMG), TREE, -1);
	pconf_free(c);
}

/* The routes the fast path reads as the tree does; the others go to it. */
ATF_TC_WITHOUT_HEAD(fast_route);
ATF_TC_BODY(fast_route, tc)
{
	ATF_CHECK(splice_route(routes_find("/v1/chat/completions")));
	ATF_CHECK(splice_route(routes_find("/v1/other")));
	ATF_CHECK(splice_route(routes_find("/v1/embeddings")));
	ATF_CHECK(splice_route(routes_find("/v1/rerank")));
	ATF_CHECK(splice_route(routes_find("/v1/completions")));
	ATF_CHECK(splice_route(routes_find("/v1/messages")));
	ATF_CHECK(splice_route(routes_find("/v1/messages/count_tokens")));
	ATF_CHECK(splice_route(routes_find("/v1/responses")));
	ATF_CHECK(splice_route(routes_find("/v1/responses/input_tokens")));
	ATF_CHECK(!splice_route(routes_find("/v1/audio/transcriptions")));
}

/*
 * The fast path on the routes whose cap is max_tokens alone, against the
 * tree's rules_rewrite on the same body: /v1/completions caps
 * max_tokens, and max_completion_tokens, which is not its field but a
 * limit llama-server reads there too (issue 29), and adds only its own;
 * Messages adds max_tokens where the body has none; count_tokens has no
 * cap.  And where the scan reads "system" and a message's "content" as
 * parts.
 */
ATF_TC_WITHOUT_HEAD(fast_other_routes);
static void
fast_same(const char *path, const char *body, int64_t cap, int kind,
    const char *want)
{
	static struct splice	 sp;
	struct pruntime		 rt;
	struct rscan		 rs;
	struct rerr		 e;
	struct iovec		 iov[SPLICE_PIECES];
	json_object		*o, *f;
	char			 out[512];
	size_t			 n, i, len, off;
	int			 c, c2;

	memset(&rt, 0, sizeof(rt));
	ATF_REQUIRE(splice_route(routes_find(path)));
	ATF_REQUIRE_MSG(rules_fast(body, strlen(body), NULL,
	    routes_find(path)->parts, &rs), "%s", body);
	ATF_REQUIRE_EQ(splice_rules(&rt, &rs, &sp, &e), 0);
	c = splice_rewrite(&sp, body, "up", cap, kind, routes_find(path));
	n = splice_iov(&sp, body, iov, SPLICE_PIECES, &len);
	ATF_REQUIRE(len < sizeof(out));
	for (i = 0, off = 0; i < n; off += iov[i++].iov_len)
		memcpy(out + off, iov[i].iov_base, iov[i].iov_len);
	out[len] = '\0';
	o = parse(body);
	c2 = rules_rewrite(o, "up", cap, kind, path);
	f = parse(out);
	ATF_CHECK_EQ_MSG(c, c2, "%s %s", path, body);
	ATF_CHECK_MSG(json_object_equal(o, f), "%s: %s against %s", path,
	    out, str(o));
	ATF_CHECK_STREQ_MSG(str(f), want, "%s %s", path, body);
	json_object_put(o);
	json_object_put(f);
}

ATF_TC_BODY(fast_other_routes, tc)
{
	struct rscan	 rs;
	const char	*b;

	fast_same("/v1/completions", "{\"model\":\"m\",\"prompt\":\"x\","
	    "\"max_tokens\":100,\"max_completion_tokens\":100}", 8, KIND_CHAT,
	    "{\"model\":\"up\",\"prompt\":\"x\",\"max_tokens\":8,"
	    "\"max_completion_tokens\":8}");
	fast_same("/v1/completions", "{\"model\":\"m\",\"prompt\":\"x\","
	    "\"max_completion_tokens\":100}", 8, KIND_CHAT,
	    "{\"model\":\"up\",\"prompt\":\"x\","
	    "\"max_completion_tokens\":8,\"max_tokens\":8}");
	fast_same("/v1/chat/completions", "{\"model\":\"m\","
	    "\"max_completion_tokens\":100}", 8, KIND_CHAT,
	    "{\"model\":\"up\",\"max_completion_tokens\":8}");
	fast_same("/v1/messages", "{\"model\":\"m\",\"system\":\"be brief\","
	    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", 8,
	    KIND_CHAT, "{\"model\":\"up\",\"system\":\"be brief\","
	    "\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}],"
	    "\"max_tokens\":8}");
	fast_same("/v1/messages", "{\"model\":\"m\",\"max_tokens\":1024,"
	    "\"messages\":[]}", 8, KIND_EMBEDDING,
	    "{\"model\":\"up\",\"max_tokens\":8,\"messages\":[]}");
	fast_same("/v1/messages/count_tokens", "{\"model\":\"m\","
	    "\"max_tokens\":1024}", 0, KIND_CHAT,
	    "{\"model\":\"up\",\"max_tokens\":1024}");
	/* the Responses' own field is max_output_tokens; max_tokens is a
	 * limit there too */
	fast_same("/v1/responses", "{\"model\":\"m\",\"input\":\"x\","
	    "\"max_tokens\":100,\"max_output_tokens\":100}", 8, KIND_CHAT,
	    "{\"model\":\"up\",\"input\":\"x\",\"max_tokens\":8,"
	    "\"max_output_tokens\":8}");
	fast_same("/v1/responses", "{\"model\":\"m\",\"input\":\"x\","
	    "\"max_tokens\":100}", 8, KIND_VISION,
	    "{\"model\":\"up\",\"input\":\"x\",\"max_tokens\":8,"
	    "\"max_output_tokens\":8}");
	fast_same("/v1/responses", "{\"max_output_tokens\":null,"
	    "\"model\":\"m\"}", 8, KIND_CHAT,
	    "{\"max_output_tokens\":8,\"model\":\"up\"}");
	fast_same("/v1/responses/input_tokens", "{\"model\":\"m\","
	    "\"max_output_tokens\":1024}", 8, KIND_CHAT,
	    "{\"model\":\"up\",\"max_output_tokens\":1024}");

	/* a "system" of blocks is read as parts on Anthropic's routes
	 * only; elsewhere it is a member like any other */
	b = "{\"model\":\"m\",\"system\":[{\"type\":\"image\","
	    "\"source\":{\"type\":\"url\"}}]}";
	ATF_CHECK(!rules_fast(b, strlen(b), NULL, PARTS_MESSAGES, &rs));
	ATF_CHECK(rules_fast(b, strlen(b), NULL, PARTS_CHAT, &rs));
	ATF_CHECK_EQ(rs.ntypes, 0);
	ATF_CHECK(rules_fast(b, strlen(b), NULL, PARTS_NONE, &rs));
	b = "{\"system\":null,\"model\":\"m\"}";
	ATF_CHECK(rules_fast(b, strlen(b), NULL, PARTS_MESSAGES, &rs));
	/* contents of parts are not read where a route has none */
	b = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	    "\"content\":[{\"type\":\"text\",\"text\":\"x\"}]}]}";
	ATF_CHECK(!rules_fast(b, strlen(b), NULL, PARTS_NONE, &rs));
	ATF_CHECK(rules_fast(b, strlen(b), NULL, PARTS_CHAT, &rs));
	ATF_CHECK(rules_fast(b, strlen(b), NULL, PARTS_MESSAGES, &rs));
	/* the Responses' items' content is parts too */
	ATF_CHECK(rules_fast(b, strlen(b), NULL, PARTS_RESPONSES, &rs));
	ATF_CHECK_EQ(rs.ntypes, 1);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, parse);
	ATF_TP_ADD_TC(tp, utf8);
	ATF_TP_ADD_TC(tp, pick_model);
	ATF_TP_ADD_TC(tp, routes);
	ATF_TP_ADD_TC(tp, parts);
	ATF_TP_ADD_TC(tp, moves);
	ATF_TP_ADD_TC(tp, refuse);
	ATF_TP_ADD_TC(tp, rewrite_cap);
	ATF_TP_ADD_TC(tp, rewrite_unchanged);
	ATF_TP_ADD_TC(tp, stops);
	ATF_TP_ADD_TC(tp, plain);
	ATF_TP_ADD_TC(tp, scan);
	ATF_TP_ADD_TC(tp, fast_route);
	ATF_TP_ADD_TC(tp, fast_other_routes);
	ATF_TP_ADD_TC(tp, cap_limits);
	ATF_TP_ADD_TC(tp, fast_parts);
	ATF_TP_ADD_TC(tp, parse_alone);
	ATF_TP_ADD_TC(tp, fast_refuse);
	ATF_TP_ADD_TC(tp, cap_by_kind);
	ATF_TP_ADD_TC(tp, host);
	ATF_TP_ADD_TC(tp, origin);
	ATF_TP_ADD_TC(tp, web_page);
	return (atf_no_error());
}
