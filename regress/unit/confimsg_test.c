/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Unit tests for the configuration's way from agencyd to the proxy
 * (common/confimsg.c) and the table of the global settings
 * (common/config.c): what agencyd's form sends, the proxy's form
 * receives field for field; the global settings go by the table alone;
 * and the receiver takes nothing out of its order or out of range.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <atf-c.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "imsg.h"
#include "msg.h"
#include "proto.h"

/* Both ends of a channel: agencyd writes on w, the proxy reads on r. */
struct chan {
	struct imsgbuf	 w;
	struct imsgbuf	 r;
};

static void
chan_open(struct chan *c)
{
	int	 sp[2];

	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
	imsg_init(&c->w, sp[0]);
	imsg_init(&c->r, sp[1]);
}

static void
chan_close(struct chan *c)
{
	imsg_clear(&c->w);
	imsg_clear(&c->r);
	close(c->w.fd);
	close(c->r.fd);
}

/*
 * What was written, received: the last config_recv's answer (1 at the
 * end), or -1 at the first refusal, its why in rc.
 */
static int
chan_recv(struct chan *c, struct conf_recv *rc)
{
	struct imsg	 imsg;
	ssize_t		 n;
	int		 rv = 0;

	ATF_REQUIRE(imsg_flush(&c->w) == 0);
	ATF_REQUIRE(shutdown(c->w.fd, SHUT_WR) == 0);
	while ((n = imsg_read(&c->r)) > 0)
		;
	ATF_REQUIRE(n == 0);
	while (rv != -1 && (n = imsg_get(&c->r, &imsg)) > 0) {
		rv = config_recv(rc, &imsg);
		imsg_free(&imsg);
	}
	return (rv);
}

static struct runtime_conf *
rt_new(struct agency_conf *conf, const char *name)
{
	struct runtime_conf	*rt;

	ATF_REQUIRE((rt = config_runtime_new()) != NULL);
	strlcpy(rt->name, name, sizeof(rt->name));
	TAILQ_INSERT_TAIL(&conf->runtimes, rt, entry);
	return (rt);
}

static struct model_conf *
model_new(struct agency_conf *conf, const char *name,
    struct runtime_conf *rt)
{
	struct model_conf	*m;

	ATF_REQUIRE((m = config_model_new()) != NULL);
	strlcpy(m->name, name, sizeof(m->name));
	strlcpy(m->runtime, rt->name, sizeof(m->runtime));
	m->rt = rt;
	TAILQ_INSERT_TAIL(&conf->models, m, entry);
	return (m);
}

/* A pipe's write end, to stand for a listener's socket. */
static int
fake_socket(int *keep)
{
	int	 p[2];

	ATF_REQUIRE(pipe2(p, O_CLOEXEC) == 0);
	*keep = p[0];
	return (p[1]);
}

static void
free_received(struct pconf *c)
{
	struct plisten	*l;

	TAILQ_FOREACH(l, &c->listens, entry)
		close(l->fd);
	pconf_free(c);
}

/* Each part of a whole configuration, as the proxy keeps it. */
ATF_TC_WITHOUT_HEAD(roundtrip);
ATF_TC_BODY(roundtrip, tc)
{
	struct chan		 ch;
	struct conf_recv	 rc;
	struct agency_conf	*conf;
	struct runtime_conf	*rt;
	struct rule_move	*mv;
	struct model_conf	*m;
	struct key_conf		*k;
	struct allow_conf	*a;
	struct listen_conf	 lc, lt;
	struct tls_files	 tf;
	struct pconf		*c;
	struct pruntime		*prt;
	struct pmodel		*pm;
	struct plisten		*pl;
	struct pkey		*pk;
	struct pallow		*pa;
	static uint8_t		 cert[3 * PROTO_TLS_PIECE + 5];
	uint8_t			 key[40];
	int			 keep1, keep2;

	chan_open(&ch);
	memset(&rc, 0, sizeof(rc));
	ATF_REQUIRE((conf = config_new()) != NULL);
	strlcpy(conf->default_model, "q", sizeof(conf->default_model));
	conf->max_body = 1234;
	ATF_REQUIRE(strlist_add(&conf->server_names, "a.example") == 0);
	ATF_REQUIRE(strlist_add(&conf->cors_origins, "https://x.test") == 0);
	ATF_REQUIRE(config_set_globals(&ch.w, conf) == 0);

	/* a plain listener, and one of TLS whose certificate takes four
	 * pieces */
	memset(&lc, 0, sizeof(lc));
	strlcpy(lc.host, "127.0.0.1", sizeof(lc.host));
	lc.port = 8080;
	ATF_REQUIRE(config_set_listen(&ch.w, &lc, &conf->tls,
	    fake_socket(&keep1)) == 0);
	memset(&lt, 0, sizeof(lt));
	strlcpy(lt.host, "::1", sizeof(lt.host));
	lt.port = 8443;
	lt.tls = 1;
	memset(&tf, 0, sizeof(tf));
	arc4random_buf(cert, sizeof(cert));
	arc4random_buf(key, sizeof(key));
	tf.cert_pem = cert;
	tf.cert_len = sizeof(cert);
	tf.key_pem = key;
	tf.key_len = sizeof(key);
	ATF_REQUIRE(config_set_listen(&ch.w, &lt, &tf,
	    fake_socket(&keep2)) == 0);

	rt = rt_new(conf, "llama");
	rt->kind = KIND_VISION;
	rt->stops = STOPS_STREAM;
	rt->max_tokens = 99;
	rt->passthrough = 1;
	rt->progress = 1;
	ATF_REQUIRE(strlist_add(&rt->routes, "/v1/chat/completions") == 0);
	ATF_REQUIRE(strlist_add(&rt->parts, "text") == 0);
	ATF_REQUIRE(strlist_add(&rt->refuse, "logit_bias") == 0);
	ATF_REQUIRE((mv = calloc(1, sizeof(*mv))) != NULL);
	strlcpy(mv->from, "max_completion_tokens", sizeof(mv->from));
	strlcpy(mv->to, "max_tokens", sizeof(mv->to));
	TAILQ_INSERT_TAIL(&rt->moves, mv, entry);
	ATF_REQUIRE(config_set_runtime(&ch.w, rt) == 0);

	m = model_new(conf, "qwen", rt);
	strlcpy(m->upstream, "/srv/q.gguf", sizeof(m->upstream));
	m->max_tokens = 7;
	ATF_REQUIRE(strlist_add(&m->aliases, "q") == 0);
	ATF_REQUIRE(config_set_model(&ch.w, m, "model qwen") == 0);

	ATF_REQUIRE((k = calloc(1, sizeof(*k))) != NULL);
	TAILQ_INIT(&k->models);
	strlcpy(k->name, "ci", sizeof(k->name));
	memset(k->digest, 0xab, sizeof(k->digest));
	k->admin = 1;
	k->max_requests = 3;
	ATF_REQUIRE(strlist_add(&k->models, "q") == 0);	/* an alias */
	TAILQ_INSERT_TAIL(&conf->keys, k, entry);
	ATF_REQUIRE(config_set_key(&ch.w, k) == 0);

	ATF_REQUIRE((a = calloc(1, sizeof(*a))) != NULL);
	TAILQ_INIT(&a->models);
	a->kind = ALLOW_GROUP;
	a->id = 100;
	strlcpy(a->name, "staff", sizeof(a->name));
	ATF_REQUIRE(strlist_add(&a->models, "qwen") == 0);
	TAILQ_INSERT_TAIL(&conf->allows, a, entry);
	ATF_REQUIRE(config_set_allow(&ch.w, a) == 0);
	ATF_REQUIRE(config_set_user(&ch.w, 1001, "alice") == 0);
	ATF_REQUIRE(config_set_end(&ch.w) == 0);

	ATF_REQUIRE_MSG(chan_recv(&ch, &rc) == 1, "%s", rc.why);
	c = rc.conf;
	rc.conf = NULL;
	ATF_CHECK_STREQ(c->default_model, "q");
	ATF_CHECK_EQ(c->max_body, 1234);
	ATF_REQUIRE_EQ(c->names.n, 1);
	ATF_CHECK_STREQ(c->names.v[0], "a.example");
	ATF_REQUIRE_EQ(c->cors.n, 1);
	ATF_CHECK_STREQ(c->cors.v[0], "https://x.test");

	ATF_REQUIRE((pl = TAILQ_FIRST(&c->listens)) != NULL);
	ATF_CHECK_STREQ(pl->host, "127.0.0.1");
	ATF_CHECK_EQ(pl->port, 8080);
	ATF_CHECK(pl->fd >= 0 && !pl->tls && pl->certlen == 0);
	ATF_REQUIRE((pl = TAILQ_NEXT(pl, entry)) != NULL);
	ATF_CHECK(pl->tls && pl->fd >= 0);
	ATF_REQUIRE_EQ(pl->certlen, sizeof(cert));
	ATF_CHECK(memcmp(pl->cert, cert, sizeof(cert)) == 0);
	ATF_REQUIRE_EQ(pl->keylen, sizeof(key));
	ATF_CHECK(memcmp(pl->key, key, sizeof(key)) == 0);

	ATF_REQUIRE((prt = TAILQ_FIRST(&c->runtimes)) != NULL);
	ATF_CHECK_STREQ(prt->name, "llama");
	ATF_CHECK_EQ(prt->kind, KIND_VISION);
	ATF_CHECK_EQ(prt->stops, STOPS_STREAM);
	ATF_CHECK_EQ(prt->max_tokens, 99);
	ATF_CHECK(prt->passthrough && prt->progress);
	ATF_CHECK(prt->routes.n == 1 && prt->parts.n == 1 &&
	    prt->refuse.n == 1 && prt->nmoves == 1);
	ATF_CHECK_STREQ(prt->refuse.v[0], "logit_bias");
	ATF_CHECK_STREQ(prt->moves[0].to, "max_tokens");

	ATF_REQUIRE((pm = pconf_find_model(c, "q")) != NULL);
	ATF_CHECK_STREQ(pm->name, "qwen");
	ATF_CHECK_STREQ(pm->upstream, "/srv/q.gguf");
	ATF_CHECK_STREQ(pm->label, "model qwen");
	ATF_CHECK_EQ(pm->max_tokens, 7);
	ATF_CHECK(pm->rt == prt);

	/* keys and rules name their models by the models' own names */
	ATF_REQUIRE((pk = TAILQ_FIRST(&c->keys)) != NULL);
	ATF_CHECK_STREQ(pk->name, "ci");
	ATF_CHECK(memcmp(pk->digest, k->digest, sizeof(pk->digest)) == 0);
	ATF_CHECK(pk->admin && pk->max_requests == 3);
	ATF_CHECK(pk->models.n == 1 && strcmp(pk->models.v[0], "qwen") == 0);
	ATF_REQUIRE((pa = TAILQ_FIRST(&c->allows)) != NULL);
	ATF_CHECK(pa->kind == ALLOW_GROUP && pa->id == 100 && !pa->admin);
	ATF_CHECK_STREQ(pa->name, "staff");
	ATF_CHECK_STREQ(pconf_user_name(c, 1001), "alice");

	free_received(c);
	config_free(conf);
	close(keep1);
	close(keep2);
	chan_close(&ch);
}

/*
 * Every global setting the proxy is sent arrives, by the table alone:
 * each is set off its default and read back, so that a new row needs
 * no code of confimsg.c and no case here.
 */
ATF_TC_WITHOUT_HEAD(globals_by_table);
ATF_TC_BODY(globals_by_table, tc)
{
	const struct conf_global	*g;
	struct chan			 ch;
	struct conf_recv		 rc;
	struct agency_conf		*conf;
	struct pconf			*c;
	char				*a, *p;
	int				 sent = 0;

	chan_open(&ch);
	memset(&rc, 0, sizeof(rc));
	ATF_REQUIRE((conf = config_new()) != NULL);
	for (g = conf_globals; g->keyword != NULL; g++) {
		a = (char *)conf + g->off;
		switch (g->kind) {
		case CK_SIZE:
		case CK_DURATION:
		case CK_NUMBER:
			*(int64_t *)(void *)a = g->def + 1 > g->min ?
			    g->def + 1 : g->min + 1;
			break;
		case CK_BOOL:
		case CK_FLAG:
			*(int *)(void *)a = !g->def;
			break;
		case CK_STRING:
			strlcpy(a, "set", g->size);
			break;
		case CK_NAMES:
			ATF_REQUIRE(strlist_add((struct strlist *)(void *)a,
			    "one") == 0);
			ATF_REQUIRE(strlist_add((struct strlist *)(void *)a,
			    "two") == 0);
			break;
		default:
			break;
		}
		/* none of them is its default now */
		if (g->kind != CK_PORTS)
			ATF_CHECK_MSG(!config_global_default(g, conf), "%s",
			    g->keyword);
	}
	ATF_REQUIRE(config_set_globals(&ch.w, conf) == 0);
	ATF_REQUIRE(config_set_end(&ch.w) == 0);
	ATF_REQUIRE_MSG(chan_recv(&ch, &rc) == 1, "%s", rc.why);
	c = rc.conf;
	rc.conf = NULL;
	for (g = conf_globals; g->keyword != NULL; g++) {
		if (g->poff == -1)
			continue;
		sent++;
		a = (char *)conf + g->off;
		p = (char *)c + g->poff;
		switch (g->kind) {
		case CK_SIZE:
		case CK_DURATION:
		case CK_NUMBER:
			ATF_CHECK_EQ_MSG(*(int64_t *)(void *)p,
			    *(int64_t *)(void *)a, "%s", g->keyword);
			break;
		case CK_BOOL:
		case CK_FLAG:
			ATF_CHECK_EQ_MSG(*(int *)(void *)p, *(int *)(void *)a,
			    "%s", g->keyword);
			break;
		case CK_STRING:
			ATF_CHECK_STREQ_MSG(p, "set", "%s", g->keyword);
			break;
		case CK_NAMES:
			ATF_CHECK_MSG(((struct pstrs *)(void *)p)->n == 2 &&
			    pstrs_has((struct pstrs *)(void *)p, "two"), "%s",
			    g->keyword);
			break;
		default:
			ATF_CHECK_MSG(0, "%s is of no kind sent", g->keyword);
			break;
		}
	}
	/* the proxy's own settings, at least these */
	ATF_CHECK(sent >= 12);
	ATF_CHECK_EQ(c->body_buffer, DEFAULT_BODY_BUFFER + 1);
	ATF_CHECK_EQ(c->host_any, 1);
	free_received(c);
	config_free(conf);
	chan_close(&ch);
}

/* The proxy's form starts from agencyd's defaults. */
ATF_TC_WITHOUT_HEAD(defaults);
ATF_TC_BODY(defaults, tc)
{
	const struct conf_global	*g;
	struct agency_conf		*conf;
	struct pconf			*c;

	ATF_REQUIRE((conf = config_new()) != NULL);
	ATF_REQUIRE((c = pconf_new()) != NULL);
	for (g = conf_globals; g->keyword != NULL; g++) {
		ATF_CHECK_MSG(config_global_default(g, conf), "%s",
		    g->keyword);
		if (g->poff == -1 || g->kind == CK_NAMES)
			continue;
		ATF_CHECK_MSG(memcmp((char *)conf + g->off,
		    (char *)c + g->poff, g->kind == CK_STRING ? g->size :
		    g->kind == CK_BOOL || g->kind == CK_FLAG ? sizeof(int) :
		    sizeof(int64_t)) == 0, "%s", g->keyword);
	}
	ATF_CHECK_EQ(c->max_body, DEFAULT_MAX_BODY);
	ATF_CHECK_EQ(c->console, 1);
	ATF_CHECK_EQ(c->names.n, 0);
	pconf_free(c);
	config_free(conf);
}

/* One message handed to a receiver that has what came before. */
static int
recv_one(struct conf_recv *rc, uint32_t type, const struct msgw *w)
{
	struct imsg	 imsg;

	memset(&imsg, 0, sizeof(imsg));
	imsg.hdr.type = type;
	imsg.hdr.len = IMSG_HEADER_SIZE + w->len;
	imsg.fd = -1;
	imsg.data = w->len > 0 ? (void *)(uintptr_t)w->buf : NULL;
	return (config_recv(rc, &imsg));
}

/* A receiver that has had the start of a configuration. */
static void
started(struct conf_recv *rc)
{
	struct chan		 ch;
	struct agency_conf	*conf;

	memset(rc, 0, sizeof(*rc));
	chan_open(&ch);
	ATF_REQUIRE((conf = config_new()) != NULL);
	ATF_REQUIRE(config_set_globals(&ch.w, conf) == 0);
	ATF_REQUIRE(chan_recv(&ch, rc) == 0);
	config_free(conf);
	chan_close(&ch);
}

#define REFUSED(rc, type, w, reason) do {				\
	ATF_CHECK_EQ(recv_one((rc), (type), (w)), -1);			\
	ATF_CHECK_STREQ((rc)->why, (reason));				\
	config_recv_clear(rc);						\
} while (0)

ATF_TC_WITHOUT_HEAD(order);
ATF_TC_BODY(order, tc)
{
	struct conf_recv	 rc;
	struct msgw		 w;

	/* nothing before the start; no second start */
	memset(&rc, 0, sizeof(rc));
	msg_init(&w);
	msg_add_str(&w, "x");
	REFUSED(&rc, IMSG_CONF_ALIAS, &w, "a part of the configuration "
	    "before its start");
	started(&rc);
	msg_init(&w);
	REFUSED(&rc, IMSG_CONF_START, &w, "a second start");
	/* a rule, a move before their runtime; an alias before a model */
	started(&rc);
	msg_init(&w);
	msg_add_str(&w, "/v1/x");
	REFUSED(&rc, IMSG_CONF_ROUTE, &w, "a rule before a runtime");
	started(&rc);
	msg_init(&w);
	msg_add_str(&w, "a");
	msg_add_str(&w, "b");
	REFUSED(&rc, IMSG_CONF_MOVE, &w, "a move before a runtime");
	started(&rc);
	msg_init(&w);
	msg_add_str(&w, "q");
	REFUSED(&rc, IMSG_CONF_ALIAS, &w, "an alias before a model");
	/* a model of a runtime not sent */
	started(&rc);
	msg_init(&w);
	msg_add_str(&w, "m");
	msg_add_str(&w, "nosuch");
	msg_add_str(&w, "/u");
	msg_add_str(&w, "l");
	msg_add_i64(&w, 0);
	REFUSED(&rc, IMSG_CONF_MODEL, &w, "a model of no runtime sent");
	/* a model twice (by its name or an alias of another) */
	started(&rc);
	msg_init(&w);
	msg_add_str(&w, "r");
	msg_add_i32(&w, KIND_CHAT);
	msg_add_i32(&w, STOPS_ALWAYS);
	msg_add_i64(&w, 0);
	msg_add_i32(&w, 0);
	msg_add_i32(&w, 0);
	ATF_REQUIRE(recv_one(&rc, IMSG_CONF_RUNTIME, &w) == 0);
	msg_init(&w);
	msg_add_str(&w, "m");
	msg_add_str(&w, "r");
	msg_add_str(&w, "/u");
	msg_add_str(&w, "l");
	msg_add_i64(&w, 0);
	ATF_REQUIRE(recv_one(&rc, IMSG_CONF_MODEL, &w) == 0);
	REFUSED(&rc, IMSG_CONF_MODEL, &w, "a model twice");
	/* a key's model before a key; a TLS piece of no TLS listener */
	started(&rc);
	msg_init(&w);
	msg_add_str(&w, "m");
	REFUSED(&rc, IMSG_CONF_KEY_MODEL, &w, "a model of no key or rule");
	started(&rc);
	msg_init(&w);
	msg_add_bytes(&w, "PEM", 3);
	REFUSED(&rc, IMSG_CONF_TLS_CERT, &w, "a TLS piece without a TLS "
	    "listener");
	/* an item of a row that is no list */
	started(&rc);
	msg_init(&w);
	msg_add_u32(&w, 0);		/* "user" */
	msg_add_str(&w, "x");
	REFUSED(&rc, IMSG_CONF_LIST, &w, "an item of no list");
	started(&rc);
	msg_init(&w);
	msg_add_u32(&w, UINT32_MAX);
	msg_add_str(&w, "x");
	REFUSED(&rc, IMSG_CONF_LIST, &w, "an item of no list");
	/* no payload to an end; no other message of the proxy's */
	started(&rc);
	msg_init(&w);
	msg_add_bytes(&w, "", 1);
	REFUSED(&rc, IMSG_CONF_END, &w, "an end with a payload");
	started(&rc);
	msg_init(&w);
	REFUSED(&rc, IMSG_HOLD_GRANT, &w, "not a message of the "
	    "configuration");
}

/* The settings the proxy refuses, and a payload over its fields. */
ATF_TC_WITHOUT_HEAD(bounds);
ATF_TC_BODY(bounds, tc)
{
	const struct conf_global	*g;
	struct chan			 ch;
	struct conf_recv		 rc;
	struct agency_conf		*conf;
	struct runtime_conf		*rt;
	struct msgw			 w;
	struct imsg			 imsg;
	ssize_t				 n;

	/* a body limit of 0 is none the proxy takes */
	chan_open(&ch);
	memset(&rc, 0, sizeof(rc));
	ATF_REQUIRE((conf = config_new()) != NULL);
	conf->max_body = 0;
	ATF_REQUIRE(config_set_globals(&ch.w, conf) == 0);
	ATF_CHECK_EQ(chan_recv(&ch, &rc), -1);
	ATF_CHECK_STREQ(rc.why, "a value out of its range");
	config_recv_clear(&rc);
	chan_close(&ch);
	/* a console neither on nor off */
	chan_open(&ch);
	conf->max_body = DEFAULT_MAX_BODY;
	conf->console = 2;
	ATF_REQUIRE(config_set_globals(&ch.w, conf) == 0);
	ATF_CHECK_EQ(chan_recv(&ch, &rc), -1);
	config_recv_clear(&rc);
	chan_close(&ch);
	conf->console = 1;
	/* a string longer than the proxy keeps is not sent at all */
	chan_open(&ch);
	for (g = conf_globals; g->keyword != NULL; g++)
		if (g->kind == CK_STRING && g->poff != -1)
			memset((char *)conf + g->off, 'z', g->size);
	ATF_CHECK_EQ(config_set_globals(&ch.w, conf), -1);
	chan_close(&ch);
	config_free(conf);

	/* a runtime of no kind */
	started(&rc);
	ATF_REQUIRE((rt = config_runtime_new()) != NULL);
	strlcpy(rt->name, "r", sizeof(rt->name));
	rt->kind = KIND_TRANSCRIPTION + 1;
	chan_open(&ch);
	ATF_REQUIRE(config_set_runtime(&ch.w, rt) == 0);
	free(rt);
	ATF_REQUIRE(imsg_flush(&ch.w) == 0);
	ATF_REQUIRE((n = imsg_read(&ch.r)) > 0);
	ATF_REQUIRE(imsg_get(&ch.r, &imsg) > 0);
	ATF_CHECK_EQ(config_recv(&rc, &imsg), -1);
	imsg_free(&imsg);
	config_recv_clear(&rc);
	chan_close(&ch);

	/* a key with a byte after its fields */
	started(&rc);
	msg_init(&w);
	msg_add_str(&w, "k");
	msg_add_bytes(&w, rc.conf->default_model, AGENCY_DIGEST_LEN);
	msg_add_i32(&w, 0);
	msg_add_i64(&w, 0);
	msg_add_bytes(&w, "", 1);
	REFUSED(&rc, IMSG_CONF_KEY, &w, "bytes after its last field");
	/* a listener without its socket */
	started(&rc);
	msg_init(&w);
	msg_add_str(&w, "127.0.0.1");
	msg_add_u16(&w, 80);
	msg_add_i32(&w, 0);
	msg_add_str(&w, "");
	REFUSED(&rc, IMSG_CONF_LISTEN, &w, "a listener without its socket");
}

/* A TLS listener whose key never came is refused at the end. */
ATF_TC_WITHOUT_HEAD(tls_whole);
ATF_TC_BODY(tls_whole, tc)
{
	struct chan		 ch;
	struct conf_recv	 rc;
	struct agency_conf	*conf;
	struct listen_conf	 lt;
	struct tls_files	 tf;
	struct msgw		 w;
	uint8_t			 pem[16];
	int			 keep;

	chan_open(&ch);
	memset(&rc, 0, sizeof(rc));
	ATF_REQUIRE((conf = config_new()) != NULL);
	ATF_REQUIRE(config_set_globals(&ch.w, conf) == 0);
	memset(&lt, 0, sizeof(lt));
	lt.tls = 1;
	memset(&tf, 0, sizeof(tf));
	memset(pem, 'p', sizeof(pem));
	tf.cert_pem = pem;
	tf.cert_len = sizeof(pem);
	/* no key: the sender queues the listener, then refuses */
	ATF_CHECK_EQ(config_set_listen(&ch.w, &lt, &tf,
	    fake_socket(&keep)), -1);
	close(keep);
	/* as a broken sender would: the listener and its certificate */
	msg_init(&w);
	msg_add_bytes(&w, pem, sizeof(pem));
	ATF_REQUIRE(msg_compose(&ch.w, IMSG_CONF_TLS_CERT, 0, -1, &w) == 1);
	ATF_REQUIRE(config_set_end(&ch.w) == 0);
	ATF_CHECK_EQ(chan_recv(&ch, &rc), -1);
	ATF_CHECK_STREQ(rc.why, "a TLS listener without its certificate "
	    "and key");
	config_recv_clear(&rc);
	config_free(conf);
	chan_close(&ch);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, roundtrip);
	ATF_TP_ADD_TC(tp, globals_by_table);
	ATF_TP_ADD_TC(tp, defaults);
	ATF_TP_ADD_TC(tp, order);
	ATF_TP_ADD_TC(tp, bounds);
	ATF_TP_ADD_TC(tp, tls_whole);
	return (atf_no_error());
}
