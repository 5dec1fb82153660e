/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-proxy's access decisions as pure functions (access.c): keys in
 * both header forms, wrong and missing credentials, allow rules of a
 * Unix socket's client by user and by supplementary group, the models
 * each lets a request use, the CORS preflight's headers; http_decide's
 * order of them (Host, Origin, preflight, access, admin); the admin
 * routes' and passthrough's client on this host, through a trusted
 * proxy's X-Forwarded-For too; what a key limited to some models may
 * see of the others (access_view); and the slots
 * of keys with max requests (keyq.c).
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <atf-c.h>
#include <stdlib.h>
#include <string.h>

#include <event2/http.h>	/* EVHTTP_REQ_*, for http_decide */

#include "proxy.h"
#include "sha256.h"

#define ALICE	"agency-test-alice-0123456789"
#define OPS	"agency-test-ops-0123456789ab"

static uint32_t	 users_gid[] = { 100 };
/* uid 1000 (a rule for qwen), 1001 (in group 100: an admin rule for
 * bge), 1002 (no rule), and one whose credentials are unknown */
static const struct hpeer	 p1000 = { 1, 1, 1000, 1000, NULL, 0, "" };
static const struct hpeer	 p1001 = { 1, 1, 1001, 1001, users_gid, 1, "" };
static const struct hpeer	 p1002 = { 1, 1, 1002, 1002, NULL, 0, "" };
static const struct hpeer	 punknown = { 1, 0, 0, 0, NULL, 0, "" };
/* TCP clients: on this host, and not */
static const struct hpeer	 ploop = { 0, 0, 0, 0, NULL, 0, "127.0.0.1" };

/* Models qwen (alias q) and bge, on 127.0.0.1:8080; with keys, alice
 * (qwen) and ops (admin, every model), a CORS origin and allow rules. */
static struct pconf *
conf(int keys, int rules)
{
	struct pconf	*c;
	struct pmodel	*m;
	struct pkey	*k;
	struct pallow	*a;
	struct plisten	*l;
	uint8_t		 d[SHA256_LEN];

	ATF_REQUIRE((c = pconf_new()) != NULL);
	ATF_REQUIRE(pconf_add_runtime(c, "llama", KIND_CHAT, STOPS_ALWAYS,
	    0) != NULL);
	ATF_REQUIRE(pconf_add_runtime(c, "emb", KIND_EMBEDDING, STOPS_NEVER,
	    0) != NULL);
	ATF_REQUIRE((m = pconf_add_model(c, "qwen", "llama", "/m/q", "qwen",
	    0)) != NULL);
	ATF_REQUIRE(pstrs_add(&m->aliases, "q") == 0);
	ATF_REQUIRE(pconf_add_model(c, "bge", "emb", "/m/b", "bge", 0) !=
	    NULL);
	ATF_REQUIRE((l = calloc(1, sizeof(*l))) != NULL);
	l->fd = -1;
	l->port = 8080;
	(void)strlcpy(l->host, "127.0.0.1", sizeof(l->host));
	TAILQ_INSERT_TAIL(&c->listens, l, entry);
	if (keys) {
		sha256(ALICE, strlen(ALICE), d);
		ATF_REQUIRE((k = pconf_add_key(c, "alice", d, 0, 1)) != NULL);
		ATF_REQUIRE(pstrs_add(&k->models, "qwen") == 0);
		sha256(OPS, strlen(OPS), d);
		ATF_REQUIRE(pconf_add_key(c, "ops", d, 1, 0) != NULL);
		ATF_REQUIRE(pstrs_add(&c->cors, "https://app.example") == 0);
	}
	if (rules) {
		ATF_REQUIRE((a = pconf_add_allow(c, ALLOW_USER, 1000, "u1",
		    0)) != NULL);
		ATF_REQUIRE(pstrs_add(&a->models, "qwen") == 0);
		ATF_REQUIRE((a = pconf_add_allow(c, ALLOW_GROUP, 100, "users",
		    1)) != NULL);
		ATF_REQUIRE(pstrs_add(&a->models, "bge") == 0);
		ATF_REQUIRE(pconf_add_user(c, 1000, "u1") == 0);
	}
	return (c);
}

/* access_decide of these credentials and peer: 0, or the status. */
static int
decide(const struct pconf *c, const char *authz, const char *apikey,
    const struct hpeer *peer, struct paccess *a)
{
	struct http_hdrs	 hh;
	struct rerr		 e;

	memset(&hh, 0, sizeof(hh));
	hh.authorization = authz;
	hh.apikey = apikey;
	hh.peer = peer;
	memset(&e, 0, sizeof(e));
	if (access_decide(c, &hh, a, &e) == 0)
		return (0);
	ATF_CHECK(e.code != NULL && e.message[0] != '\0');
	return (e.status);
}

ATF_TC_WITHOUT_HEAD(bearer);
ATF_TC_BODY(bearer, tc)
{
	const char	*tok;
	size_t		 len;

	ATF_REQUIRE(access_bearer("Bearer abc", &tok, &len) == 0);
	ATF_CHECK(len == 3 && strncmp(tok, "abc", 3) == 0);
	ATF_REQUIRE(access_bearer("bEaReR \t abc", &tok, &len) == 0);
	ATF_CHECK(len == 3 && strncmp(tok, "abc", 3) == 0);
	ATF_CHECK(access_bearer("Bearer", &tok, &len) == -1);
	ATF_CHECK(access_bearer("Bearer ", &tok, &len) == -1);
	ATF_CHECK(access_bearer("Bearerabc", &tok, &len) == -1);
	ATF_CHECK(access_bearer("Basic abc", &tok, &len) == -1);
	ATF_CHECK(access_bearer("abc", &tok, &len) == -1);
	ATF_CHECK(access_bearer("", &tok, &len) == -1);
}

ATF_TC_WITHOUT_HEAD(keys);
ATF_TC_BODY(keys, tc)
{
	struct pconf	*c = conf(1, 0);
	struct paccess	 a;

	ATF_CHECK_EQ(decide(c, "Bearer " ALICE, NULL, NULL, &a), 0);
	ATF_CHECK(a.key != NULL && strcmp(a.key->name, "alice") == 0);
	ATF_CHECK(!a.admin && !a.open && !a.wrong);
	/* (h1.c took the blanks around a value off) */
	ATF_CHECK_EQ(decide(c, NULL, OPS, NULL, &a), 0);
	ATF_CHECK(a.key != NULL && strcmp(a.key->name, "ops") == 0);
	ATF_CHECK(a.admin);
	ATF_CHECK_EQ(decide(c, "Bearer " OPS, OPS, NULL, &a), 0);
	ATF_CHECK(a.admin);

	/* missing: 401, no delay */
	ATF_CHECK_EQ(decide(c, NULL, NULL, NULL, &a), 401);
	ATF_CHECK(!a.wrong);
	/* wrong, in every way: 401 with the delay */
	ATF_CHECK_EQ(decide(c, "Bearer " ALICE "x", NULL, NULL, &a), 401);
	ATF_CHECK(a.wrong);
	ATF_CHECK_EQ(decide(c, "Bearer agency-test-alice-012345678", NULL,
	    NULL, &a), 401);
	ATF_CHECK(a.wrong);
	ATF_CHECK_EQ(decide(c, "Basic " ALICE, NULL, NULL, &a), 401);
	ATF_CHECK(a.wrong);
	ATF_CHECK_EQ(decide(c, ALICE, NULL, NULL, &a), 401);
	ATF_CHECK_EQ(decide(c, "", NULL, NULL, &a), 401);
	ATF_CHECK_EQ(decide(c, NULL, "", NULL, &a), 401);
	ATF_CHECK(a.wrong);
	/* two keys, or a right one with a wrong one */
	ATF_CHECK_EQ(decide(c, "Bearer " ALICE, OPS, NULL, &a), 401);
	ATF_CHECK(a.wrong);
	ATF_CHECK_EQ(decide(c, "Bearer " ALICE, "nope", NULL, &a), 401);
	ATF_CHECK_EQ(decide(c, "Bearer nope", ALICE, NULL, &a), 401);
	/* a Unix socket's client with no rules needs a key too */
	ATF_CHECK_EQ(decide(c, NULL, NULL, &p1000, &a), 401);
	ATF_CHECK_EQ(decide(c, "Bearer " ALICE, NULL, &p1000, &a), 0);
	pconf_free(c);
}

ATF_TC_WITHOUT_HEAD(open);
ATF_TC_BODY(open, tc)
{
	struct pconf	*c = conf(0, 0);
	struct paccess	 a;

	/* no keys: credentials are not looked at */
	ATF_CHECK_EQ(decide(c, NULL, NULL, NULL, &a), 0);
	ATF_CHECK(a.open && a.admin && a.key == NULL);
	ATF_CHECK_EQ(decide(c, "Bearer whatever", "x", NULL, &a), 0);
	ATF_CHECK(a.open);
	ATF_CHECK(access_model_ok(&a, pconf_find_model(c, "bge")));
	ATF_CHECK_EQ(decide(c, NULL, NULL, &p1002, &a), 0);
	ATF_CHECK(a.open);
	pconf_free(c);

	/* rules without keys: TCP stays open, a socket needs a rule */
	c = conf(0, 1);
	ATF_CHECK_EQ(decide(c, NULL, NULL, NULL, &a), 0);
	ATF_CHECK(a.open);
	ATF_CHECK_EQ(decide(c, NULL, NULL, &p1002, &a), 403);
	ATF_CHECK(!a.wrong);
	/* credentials not read: no rule matches, and it is no TCP client */
	ATF_CHECK_EQ(decide(c, NULL, NULL, &punknown, &a), 403);
	pconf_free(c);
}

ATF_TC_WITHOUT_HEAD(rules);
ATF_TC_BODY(rules, tc)
{
	struct pconf	*c = conf(1, 1);
	struct pmodel	*qwen = pconf_find_model(c, "qwen");
	struct pmodel	*bge = pconf_find_model(c, "bge");
	struct paccess	 a;
	char		 who[128];

	ATF_CHECK_EQ(decide(c, NULL, NULL, &p1000, &a), 0);
	ATF_CHECK(a.rules && !a.admin && a.key == NULL);
	ATF_CHECK(access_model_ok(&a, qwen));
	ATF_CHECK(!access_model_ok(&a, bge));
	access_who(&a, who, sizeof(who));
	ATF_CHECK_STREQ(who, "user=u1");

	/* by a supplementary group: admin, and bge only */
	ATF_CHECK_EQ(decide(c, NULL, NULL, &p1001, &a), 0);
	ATF_CHECK(a.rules && a.admin);
	ATF_CHECK(!access_model_ok(&a, qwen));
	ATF_CHECK(access_model_ok(&a, bge));
	access_who(&a, who, sizeof(who));
	ATF_CHECK_STREQ(who, "user=uid=1001");

	/* no rule: a key, since there are keys */
	ATF_CHECK_EQ(decide(c, NULL, NULL, &p1002, &a), 401);
	ATF_CHECK_EQ(decide(c, NULL, OPS, &p1002, &a), 0);
	ATF_CHECK(a.key != NULL && a.admin);
	access_who(&a, who, sizeof(who));
	ATF_CHECK_STREQ(who, "key=ops user=uid=1002");
	/* with a key's credential, the key alone decides */
	ATF_CHECK_EQ(decide(c, "Bearer " ALICE, NULL, &p1001, &a), 0);
	ATF_CHECK(!a.admin && !a.rules);
	ATF_CHECK(access_model_ok(&a, qwen));
	ATF_CHECK(!access_model_ok(&a, bge));
	/* one that is no key's (the OpenAI clients' placeholder) leaves a
	 * client the rules let in to them, at once */
	ATF_CHECK_EQ(decide(c, "Bearer unused", NULL, &p1000, &a), 0);
	ATF_CHECK(a.rules && a.key == NULL && !a.admin && !a.wrong);
	ATF_CHECK(access_model_ok(&a, qwen));
	ATF_CHECK(!access_model_ok(&a, bge));
	ATF_CHECK_EQ(decide(c, "Bearer " ALICE, "nope", &p1001, &a), 0);
	ATF_CHECK(a.rules && a.key == NULL && a.admin && !a.wrong);
	ATF_CHECK(!access_model_ok(&a, qwen));
	/* but is wrong for one they do not, and for a TCP client */
	ATF_CHECK_EQ(decide(c, "Bearer unused", NULL, &p1002, &a), 401);
	ATF_CHECK(a.wrong && !a.rules);
	ATF_CHECK_EQ(decide(c, "Bearer unused", NULL, &punknown, &a), 401);
	ATF_CHECK(a.wrong);
	ATF_CHECK_EQ(decide(c, "Bearer unused", NULL, NULL, &a), 401);
	ATF_CHECK(a.wrong);
	pconf_free(c);
}

/* A key's scope in the model picked, and in its error's list. */
ATF_TC_WITHOUT_HEAD(scope);
ATF_TC_BODY(scope, tc)
{
	struct pconf	*c = conf(1, 0);
	struct paccess	 a;
	struct pscope	 sc;
	struct pmodel	*m;
	struct rerr	 e;

	ATF_REQUIRE_EQ(decide(c, "Bearer " ALICE, NULL, NULL, &a), 0);
	access_scope(&a, &sc);
	ATF_CHECK(rules_pick_name(c, "q", &sc, &m, &e) == 0);
	ATF_CHECK(m != NULL && strcmp(m->name, "qwen") == 0);
	ATF_CHECK(rules_pick_name(c, "bge", &sc, &m, &e) == -1);
	ATF_CHECK(m == NULL);
	ATF_CHECK_EQ(e.status, 404);
	ATF_CHECK_STREQ(e.code, "model_not_found");
	ATF_CHECK(strstr(e.message, "served models: qwen.") != NULL);
	ATF_CHECK(strstr(e.message, "bge'") != NULL);	/* the name asked */
	ATF_CHECK(strstr(e.message, ", bge") == NULL);
	/* no name: the one model it may use is not picked for it */
	ATF_CHECK(rules_pick_name(c, NULL, &sc, &m, &e) == -1);
	ATF_CHECK(strstr(e.message, "served models: qwen.") != NULL);

	ATF_REQUIRE_EQ(decide(c, NULL, OPS, NULL, &a), 0);
	access_scope(&a, &sc);
	ATF_CHECK(rules_pick_name(c, "bge", &sc, &m, &e) == 0);
	pconf_free(c);
}

ATF_TC_WITHOUT_HEAD(cors_headers);
ATF_TC_BODY(cors_headers, tc)
{
	char	buf[CORS_HEADERS_MAX];

	ATF_REQUIRE(access_cors_headers(NULL, buf, sizeof(buf)) == 0);
	ATF_CHECK_STREQ(buf, "Authorization, Content-Type, X-Api-Key");
	ATF_REQUIRE(access_cors_headers("authorization, Content-Type", buf,
	    sizeof(buf)) == 0);
	ATF_CHECK_STREQ(buf, "Authorization, Content-Type, X-Api-Key");
	ATF_REQUIRE(access_cors_headers(" ,x-api-key,, ", buf,
	    sizeof(buf)) == 0);
	ATF_REQUIRE(access_cors_headers("content-type, X-Stainless-OS, "
	    "openai-beta", buf, sizeof(buf)) == 0);
	ATF_CHECK_STREQ(buf, "Authorization, Content-Type, X-Api-Key, "
	    "x-stainless-os, openai-beta");
	ATF_CHECK(access_cors_headers("x-secret", buf, sizeof(buf)) == -1);
	ATF_CHECK(access_cors_headers("authorization, cookie", buf,
	    sizeof(buf)) == -1);
	ATF_CHECK(access_cors_headers("x-stainless-", buf, sizeof(buf)) ==
	    -1);
	ATF_CHECK(access_cors_headers("content type", buf, sizeof(buf)) ==
	    -1);
	ATF_CHECK(access_cors_headers("*", buf, sizeof(buf)) == -1);
}

/* http_decide's order: Host and Origin, then a preflight (which needs
 * no key), then access, then the admin guards. */
static int
hdecide(const struct pconf *c, int cmd, const char *path, const char *host,
    const char *origin, const char *authz, const struct hpeer *peer,
    struct http_decision *dc)
{
	struct http_hdrs	 hh;

	memset(&hh, 0, sizeof(hh));
	hh.host = host;
	hh.origin = origin;
	hh.authorization = authz;
	hh.acrm = cmd == EVHTTP_REQ_OPTIONS ? "GET" : NULL;
	hh.ctype = "application/json";
	/* a TCP client of this host, unless told */
	hh.peer = peer != NULL ? peer : &ploop;
	http_decide(c, cmd, path, &hh, NULL, 0, NULL, dc);
	json_object_put(dc->body);
	return (dc->action == HTTP_ERROR ? dc->e.status : -dc->action);
}

ATF_TC_WITHOUT_HEAD(decide_order);
ATF_TC_BODY(decide_order, tc)
{
	struct pconf		*c = conf(1, 1);
	struct http_decision	 dc;
	const char		*h = "127.0.0.1:8080", *app = "https://app.example";

	px->conf = c;
	/* Host before the key: a wrong key to a wrong name is 403 */
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/v1/models", "evil:8080",
	    NULL, "Bearer nope", NULL, &dc), 403);
	ATF_CHECK_EQ(dc.delay, 0);
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/v1/models", h, NULL,
	    "Bearer nope", NULL, &dc), 401);
	ATF_CHECK_EQ(dc.delay, AUTH_DELAY_MS);
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/v1/models", h, NULL,
	    NULL, NULL, &dc), 401);
	ATF_CHECK_EQ(dc.delay, 0);
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/health", "evil", NULL,
	    NULL, NULL, &dc), -HTTP_HEALTH);
	/* a listed origin's preflight needs no key; its request does */
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_OPTIONS, "/v1/models", h, app,
	    NULL, NULL, &dc), -HTTP_PREFLIGHT);
	ATF_CHECK_STREQ(dc.cors, app);
	ATF_CHECK_STREQ(dc.pf_method, "GET");
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/v1/models", h, app,
	    NULL, NULL, &dc), 401);
	ATF_CHECK_STREQ(dc.cors, app);
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/v1/models", h, app,
	    "Bearer " ALICE, NULL, &dc), -HTTP_MODELS);
	/* never for the admin routes */
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_OPTIONS, "/metrics", h, app,
	    NULL, NULL, &dc), 403);
	ATF_CHECK_STREQ(dc.e.code, "forbidden_origin");
	ATF_CHECK_STREQ(dc.cors, "");
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/v1/agency/status", h, app,
	    "Bearer " OPS, NULL, &dc), 403);
	ATF_CHECK_STREQ(dc.e.code, "forbidden_origin");
	/* an unlisted origin: nothing */
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_OPTIONS, "/v1/models", h,
	    "https://evil.example", NULL, NULL, &dc), 403);
	ATF_CHECK_STREQ(dc.cors, "");
	/* admin: a key marked admin, after the Host guard */
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/v1/agency/status", h, NULL,
	    "Bearer " ALICE, NULL, &dc), 403);
	ATF_CHECK_STREQ(dc.e.code, "admin_key_required");
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/v1/agency/status", h, NULL,
	    "Bearer " OPS, NULL, &dc), -HTTP_STATUS);
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/metrics", "llm.lan:8080",
	    NULL, "Bearer " OPS, NULL, &dc), 403);
	ATF_CHECK_STREQ(dc.e.code, "forbidden_host");
	/* a Unix socket: any Host; the admin rule opens the admin routes */
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/metrics", "localhost",
	    NULL, NULL, &p1001, &dc), -HTTP_METRICS);
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/metrics", NULL, NULL, NULL,
	    &p1000, &dc), 403);
	ATF_CHECK_STREQ(dc.e.code, "admin_key_required");
	px->conf = NULL;
	pconf_free(c);
}

/* A TCP client at addr, for admin_peer. */
static struct hpeer *
tcp_peer(struct hpeer *p, const char *addr)
{
	memset(p, 0, sizeof(*p));
	(void)strlcpy(p->addr, addr, sizeof(p->addr));
	return (p);
}

/* What path (GET) decides for a client at addr sending X-Forwarded-For
 * fwd (or none), with the ops key: 0 let in, or the status. */
static int
peer_decide(const struct pconf *c, const char *path, const char *addr,
    const char *fwd, const char *authz, struct http_decision *dc)
{
	struct http_hdrs	 hh;
	struct hpeer		 p;

	memset(&hh, 0, sizeof(hh));
	hh.host = "127.0.0.1:8080";
	hh.authorization = authz;
	hh.forwarded = fwd;
	hh.peer = tcp_peer(&p, addr);
	http_decide(c, EVHTTP_REQ_GET, path, &hh, NULL, 0, NULL, dc);
	json_object_put(dc->body);
	return (dc->action == HTTP_ERROR ? dc->e.status : 0);
}

/* Whose body share a keyless client at addr sending X-Forwarded-For
 * fwd (or none) takes. */
static const char *
owner_of(const struct pconf *c, const char *addr, const char *fwd)
{
	static char		 buf[128];
	struct http_hdrs	 hh;
	struct hpeer		 p;
	struct paccess		 a;

	memset(&hh, 0, sizeof(hh));
	memset(&a, 0, sizeof(a));
	hh.forwarded = fwd;
	hh.peer = tcp_peer(&p, addr);
	access_owner(c, &a, &hh, buf, sizeof(buf));
	return (buf);
}

ATF_TC_WITHOUT_HEAD(admin_peer);
ATF_TC_BODY(admin_peer, tc)
{
	static const char	*local[] = { "127.0.0.1", "127.0.0.2",
				    "127.255.255.254", "::1",
				    "::ffff:127.0.0.1", "0:0:0:0:0:0:0:1" };
	static const char	*far[] = { "192.0.2.7", "10.0.0.1", "::2",
				    "::ffff:192.0.2.7", "fe80::1", "128.0.0.1",
				    "126.255.255.255", "0.0.0.0", "::", "?",
				    "", "127.0.0.1x" };
	static const char	*paths[] = { "/v1/agency/status", "/metrics",
				    "/v1/agency/events", "/v1/agency/logs/qwen",
				    "/upstream/qwen/health", "/" };
	struct pconf		*c = conf(1, 0);
	struct http_decision	 dc;
	struct pruntime		*rt;
	const char		*ops = "Bearer " OPS;
	size_t			 i, j;

	rt = TAILQ_FIRST(&c->runtimes);
	rt->passthrough = 1;
	c->console = 1;
	px->conf = c;
	ATF_CHECK(access_loopback("127.0.0.1"));
	ATF_CHECK(access_loopback("127.0.0.2"));
	ATF_CHECK(access_loopback("::1"));
	ATF_CHECK(!access_loopback("128.0.0.1"));
	ATF_CHECK(!access_loopback("::2"));
	ATF_CHECK(!access_loopback("?"));
	/* Every admin route, passthrough and the console: a loopback Host
	 * from elsewhere is refused, whatever the key */
	for (j = 0; j < sizeof(paths) / sizeof(paths[0]); j++) {
		for (i = 0; i < sizeof(local) / sizeof(local[0]); i++)
			ATF_CHECK_MSG(peer_decide(c, paths[j], local[i], NULL,
			    ops, &dc) == 0, "%s from %s: %d %s", paths[j],
			    local[i], dc.e.status, dc.e.code);
		for (i = 0; i < sizeof(far) / sizeof(far[0]); i++) {
			ATF_CHECK_MSG(peer_decide(c, paths[j], far[i], NULL,
			    ops, &dc) == 403 && strcmp(dc.e.code,
			    "forbidden_peer") == 0, "%s from %s: %d %s",
			    paths[j], far[i], dc.e.status, dc.e.code);
		}
	}
	/* the model routes are for anyone */
	ATF_CHECK_EQ(peer_decide(c, "/v1/models", "192.0.2.7", NULL, ops,
	    &dc), 0);
	/* passthrough needs an admin key, as the admin routes do: a key
	 * allowed the model is not enough */
	ATF_CHECK_EQ(peer_decide(c, "/upstream/qwen/health", "127.0.0.1",
	    NULL, "Bearer " ALICE, &dc), 403);
	ATF_CHECK_STREQ(dc.e.code, "admin_key_required");
	ATF_CHECK_EQ(peer_decide(c, "/upstream/qwen/health", "127.0.0.1",
	    NULL, ops, &dc), 0);
	ATF_CHECK_EQ(dc.action, HTTP_PASS);

	/* X-Forwarded-For is no one's word but a trusted proxy's */
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "127.0.0.1", "192.0.2.7",
	    ops, &dc), 0);
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "192.0.2.7", "127.0.0.1",
	    ops, &dc), 403);
	ATF_REQUIRE(pstrs_add(&c->proxies, "127.0.0.3") == 0);
	ATF_REQUIRE(pstrs_add(&c->proxies, "::1") == 0);
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "127.0.0.1", "192.0.2.7",
	    ops, &dc), 0);
	/* the proxy's client is the peer: its last address, not the
	 * client's own field before it */
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "127.0.0.3", "192.0.2.7",
	    ops, &dc), 403);
	ATF_CHECK_STREQ(dc.e.code, "forbidden_peer");
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "::ffff:127.0.0.3",
	    "127.0.0.1, 192.0.2.7", ops, &dc), 403);
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "::1", " 192.0.2.7 ,  ::1 ",
	    ops, &dc), 0);
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "127.0.0.3",
	    "192.0.2.7, 10.0.0.1, 127.0.0.1", ops, &dc), 0);
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "127.0.0.3",
	    "127.0.0.1, 10.0.0.1, 192.0.2.7", ops, &dc), 403);
	ATF_CHECK_EQ(peer_decide(c, "/upstream/qwen/x", "127.0.0.3",
	    "10.1.2.3", ops, &dc), 403);
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "127.0.0.3", "127.0.0.1",
	    ops, &dc), 0);
	/* what is not an address is no client of this host */
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "127.0.0.3", "unknown",
	    ops, &dc), 403);
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "127.0.0.3", "", ops, &dc),
	    403);
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "127.0.0.3", "127.0.0.1,",
	    ops, &dc), 403);
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "127.0.0.3",
	    "[::1]:8080", ops, &dc), 403);
	/* a trusted proxy's request without the field is its own */
	ATF_CHECK_EQ(peer_decide(c, "/metrics", "127.0.0.3", NULL, ops, &dc),
	    0);
	/* the body budget's owner is the same client: two clients behind
	 * the proxy hold two shares, not the proxy's one */
	ATF_CHECK_STREQ(owner_of(c, "127.0.0.3", "192.0.2.7"),
	    "addr=192.0.2.7");
	ATF_CHECK_STREQ(owner_of(c, "127.0.0.3", "10.0.0.1"),
	    "addr=10.0.0.1");
	ATF_CHECK_STREQ(owner_of(c, "127.0.0.3", NULL), "addr=127.0.0.3");
	ATF_CHECK_STREQ(owner_of(c, "192.0.2.7", "10.0.0.1"),
	    "addr=192.0.2.7");
	/* a Unix socket's client is on this host */
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/metrics", NULL, NULL, ops,
	    &punknown, &dc), -HTTP_METRICS);
	px->conf = NULL;
	pconf_free(c);
}

/* What an admin key limited to some models may see (access_view), and
 * a pool's refusal as it may read it. */
#define NOMEM	"not enough memory for qwen (needs 6.0G, 2.0G available)"

/* What a refusal of qwen (reason, msg) reads as for v: want. */
static void
refusal_is(const struct pview *v, int reason, const char *msg,
    const char *want)
{
	char	 buf[PROTO_MSG_MAX];

	access_view_refusal(v, reason, "qwen", msg, buf, sizeof(buf));
	ATF_CHECK_MSG(strcmp(buf, want) == 0, "\"%s\" read as \"%s\"",
	    msg, buf);
}

ATF_TC_WITHOUT_HEAD(view);
ATF_TC_BODY(view, tc)
{
	struct pconf	*c = conf(1, 1);
	struct http_decision dc;
	struct paccess	 a;
	struct pview	 v;
	struct pkey	*k;
	uint8_t		 d[SHA256_LEN];
	const char	*nomem = NOMEM ": bge (busy), q2 (not lazy)";
	static const struct {
		int		 reason;
		const char	*msg;
		const char	*want;
	}			 sa[] = {
		{ REFUSE_NOT_ENOUGH_MEMORY, NOMEM ": bge (busy), q2 (not lazy)",
		    NOMEM ": other models" },
		{ REFUSE_NOT_ENOUGH_MEMORY, NOMEM ": nothing is loaded",
		    NOMEM ": nothing is loaded" },
		/* a message of another shape: no names at all */
		{ REFUSE_NOT_ENOUGH_MEMORY, "bge is in the way",
		    "not enough memory for qwen" },
		{ REFUSE_QUEUE_TIMEOUT, "qwen: no turn within the queue timeout "
		    "(5s): its load waited for memory held by bge (busy), q2 "
		    "(in use)", "qwen: no turn within the queue timeout (5s): "
		    "its load waited for memory held by other models" },
		{ REFUSE_QUEUE_FULL, "the queue is full: 3 requests wait (max "
		    "queue 3)", "the queue is full: 3 requests wait (max queue "
		    "3)" },
	}, alice[] = {
		{ REFUSE_NOT_ENOUGH_MEMORY, NOMEM ": bge (busy), q2 (not lazy)",
		    NOMEM ": bge (busy), other models" },
		{ REFUSE_NOT_ENOUGH_MEMORY, NOMEM ": bge (busy)",
		    NOMEM ": bge (busy)" },
		/* a name inside another's is not it */
		{ REFUSE_NOT_ENOUGH_MEMORY, NOMEM ": xbge (busy)",
		    NOMEM ": other models" },
	};
	size_t		 i;

	sha256("scoped-admin", 12, d);
	ATF_REQUIRE((k = pconf_add_key(c, "sa", d, 1, 0)) != NULL);
	ATF_REQUIRE(pstrs_add(&k->models, "qwen") == 0);
	ATF_REQUIRE(pconf_add_model(c, "q2", "llama", "/m/q2", "q2", 0) !=
	    NULL);
	/* ops: every model, and any a reload adds */
	ATF_REQUIRE(decide(c, "Bearer " OPS, NULL, NULL, &a) == 0);
	access_view(&a, c, &v);
	ATF_CHECK(v.all && access_view_has(&v, "bge") &&
	    access_view_has(&v, "later"));
	refusal_is(&v, REFUSE_NOT_ENOUGH_MEMORY, nomem, nomem);
	access_view_clear(&v);
	/* sa: qwen alone */
	ATF_REQUIRE(decide(c, "Bearer scoped-admin", NULL, NULL, &a) == 0);
	ATF_CHECK(a.admin);
	access_view(&a, c, &v);
	ATF_CHECK(!v.all && access_view_has(&v, "qwen"));
	ATF_CHECK(!access_view_has(&v, "bge") && !access_view_has(&v, "q2") &&
	    !access_view_has(&v, "q") && !access_view_has(&v, "later"));
	for (i = 0; i < sizeof(sa) / sizeof(sa[0]); i++)
		refusal_is(&v, sa[i].reason, sa[i].msg, sa[i].want);
	access_view_clear(&v);
	/* alice, qwen and bge: the names of hers stay, the other goes */
	ATF_REQUIRE(pstrs_add(&TAILQ_FIRST(&c->keys)->models, "bge") == 0);
	ATF_REQUIRE(decide(c, "Bearer " ALICE, NULL, NULL, &a) == 0);
	access_view(&a, c, &v);
	for (i = 0; i < sizeof(alice) / sizeof(alice[0]); i++)
		refusal_is(&v, alice[i].reason, alice[i].msg, alice[i].want);
	access_view_clear(&v);
	/* the events stream, the same for all, is not for sa */
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/v1/agency/events",
	    "127.0.0.1:8080", NULL, "Bearer scoped-admin", NULL, &dc), 403);
	ATF_CHECK_STREQ(dc.e.code, "key_scoped");
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/v1/agency/events",
	    "127.0.0.1:8080", NULL, "Bearer " OPS, NULL, &dc), -HTTP_EVENTS);
	ATF_CHECK_EQ(hdecide(c, EVHTTP_REQ_GET, "/v1/agency/status",
	    "127.0.0.1:8080", NULL, "Bearer scoped-admin", NULL, &dc),
	    -HTTP_STATUS);
	/* an allow rule with models, and one without */
	ATF_REQUIRE(decide(c, NULL, NULL, &p1000, &a) == 0);
	access_view(&a, c, &v);
	ATF_CHECK(!v.all && access_view_has(&v, "qwen") &&
	    !access_view_has(&v, "bge"));
	access_view_clear(&v);
	pconf_free(c);
}

ATF_TC_WITHOUT_HEAD(keyq);
ATF_TC_BODY(keyq, tc)
{
	int		 a, b, c, d;

	/* two slots: the third waits, then the fourth */
	ATF_CHECK_EQ(keyq_enter("k", 2, &a), 1);
	ATF_CHECK_EQ(keyq_enter("k", 2, &b), 1);
	ATF_CHECK_EQ(keyq_enter("k", 2, &c), 0);
	ATF_CHECK_EQ(keyq_enter("k", 2, &d), 0);
	/* another key is not held back */
	ATF_CHECK_EQ(keyq_enter("other", 1, &a), 1);
	/* one that waited leaves: the other keeps its place */
	ATF_CHECK(keyq_leave("k", &c, 0) == NULL);
	/* a slot frees: the longest waiting gets it */
	ATF_CHECK(keyq_leave("k", &a, 1) == &d);
	ATF_CHECK(keyq_leave("k", &b, 1) == NULL);
	ATF_CHECK(keyq_leave("k", &d, 1) == NULL);
	/* a new request goes in at once, and "other" is its own */
	ATF_CHECK_EQ(keyq_enter("k", 1, &a), 1);
	ATF_CHECK_EQ(keyq_enter("other", 1, &b), 0);
	ATF_CHECK(keyq_leave("other", &a, 1) == &b);
	ATF_CHECK(keyq_leave("other", &b, 1) == NULL);
	ATF_CHECK(keyq_leave("k", &a, 1) == NULL);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, bearer);
	ATF_TP_ADD_TC(tp, keys);
	ATF_TP_ADD_TC(tp, open);
	ATF_TP_ADD_TC(tp, rules);
	ATF_TP_ADD_TC(tp, scope);
	ATF_TP_ADD_TC(tp, cors_headers);
	ATF_TP_ADD_TC(tp, decide_order);
	ATF_TP_ADD_TC(tp, admin_peer);
	ATF_TP_ADD_TC(tp, view);
	ATF_TP_ADD_TC(tp, keyq);
	return (0);
}
