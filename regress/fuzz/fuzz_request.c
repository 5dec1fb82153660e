/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: agency-proxy's request path up to the hold request,
 * through http_decide() (http.c), the function the real request handler
 * calls: the Host and Origin checks, routes, the admin guards, the
 * Content-Type, the body's JSON, the model, the runtime's rules.  A
 * request that would ask for a hold then goes through what forward.c
 * does with it before and after the grant (rules_stops, rules_cap,
 * rules_rewrite) and is serialized.
 *
 * Input: a method byte, a path byte, a Host byte, a Content-Type byte,
 * an Origin byte (each picks a known value, or a length byte and that
 * many bytes of the input follow), a flags byte (bit 0: a default model
 * is set; bit 1: server names; bit 2: server name any; bits 3 and 4:
 * the query; bit 5: the console is off; bit 6: access, with keys, CORS
 * origins and allow rules; bit 7: a TCP client is not on this host,
 * 192.0.2.7 rather than 127.0.0.1), an Authorization byte, an x-api-key byte,
 * an Access-Control-Request-Method byte and a -Headers byte (each picks
 * as the others), a connection byte (TCP, TLS, or a Unix socket's
 * client of one of a few users), then the body.
 *
 * Invariants: no crash, no leak; what the header alone decides
 * (http_decide_header) is the start of the full decision, and nothing
 * it refuses is served nor has its body taken; an error has a known
 * status, a code and
 * a NUL-terminated message, and its family is Anthropic's on Anthropic's
 * routes alone; a hold is for a served model on a route its runtime
 * allows, with a JSON object body and a JSON Content-Type, or on a form
 * route, a form whose model (if any) is inside the body and names the
 * model; no route but /health is served with a Host that does not name
 * the front door (but to a Unix socket's client) or an Origin not its
 * own or, for routes that are not the admin ones nor passthrough,
 * listed; no admin route nor passthrough without a loopback Host and
 * the port, nor to a TCP client not on this host; a passthrough is for
 * a served model whose runtime has it on, at a prefix that names it.
 * With keys: nothing but /health, a preflight and the console's files
 * without a key's secret or an allow rule; a key's request only for its
 * models, an admin route and passthrough only for an admin key; CORS
 * granted only to a listed origin, never on an admin route,
 * passthrough nor the console.  The body scan's two ways of
 * finding the bytes that matter (SSE2 and a 64-bit word, scan.c) give
 * the same answer and notes for every body, with its strings noted as
 * it came in or not (prescan_feed), and a body the scan takes is an
 * object json-c reads with the same members, in the same order, at the
 * offsets noted.  Such a body spliced by each model's rules (splice.c)
 * is refused as the json-c path refuses it, or reads as the same JSON
 * as that path's tree, strict and with no name twice; only the routes
 * the fast path reads as the tree does take it.
 *
 * FUZZ_WRITE_SEEDS=DIR writes the seed corpus into DIR and exits.
 */
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include <err.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/http.h>
#include <json-c/json.h>

#include "console_assets.h"
#include "log.h"
#include "proxy.h"
#include "sha256.h"
#include "routes.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct pconf	*confs[16];	/* by the flags byte */
static int		 verbose;	/* FUZZ_VERBOSE: print decisions */

static const int	 methods[] = { EVHTTP_REQ_POST, EVHTTP_REQ_GET,
			    EVHTTP_REQ_HEAD, EVHTTP_REQ_PUT,
			    EVHTTP_REQ_DELETE, EVHTTP_REQ_OPTIONS,
			    EVHTTP_REQ_PATCH };
#define NMETHODS	(sizeof(methods) / sizeof(methods[0]))

static const char	*paths[] = { "/v1/chat/completions",
			    "/v1/completions", "/v1/embeddings",
			    "/v1/audio/speech", "/v1/images/generations",
			    "/v1/responses", "/v1/agency/cancel",
			    "/v1/agency/status", "/v1/agency/other", "/health",
			    "/v1/models", "/v1/other", "/", "/x", "/metrics",
			    "/v1/messages", "/v1/messages/count_tokens",
			    "/v1/responses/input_tokens", "/v1/rerank",
			    "/v1/audio/transcriptions", "/v1/images/edits",
			    "/upstream/qwen/v1/props", "/upstream/q",
			    "/upstream/bge/x", "/upstream/", "/inference",
			    "/v1/agency/events", "/v1/agency/logs/qwen",
			    "/v1/agency/logs/%71wen", "/v1/agency/logs/nope",
			    "/v1/agency/logs/%00", "/v1/agency/logs/%6",
			    "/v1/agency/logs/", "/v1/agency/load",
			    "/v1/agency/unload", "/console/console.js",
			    "/console/icon.svg", "/console/", "/console/x" };
#define NPATHS		(sizeof(paths) / sizeof(paths[0]))

static const char	*queries[] = { NULL, "follow=1", "x=1&follow=1&y",
			    "follow=10" };

static const char	*hosts[] = { NULL, "127.0.0.1:8080", "[::1]:8080",
			    "localhost:8080", "LOCALHOST:8080",
			    "127.0.0.1:9999", "127.0.0.1:", "evil.example:8080",
			    "127.0.0.1:08080", "localhost:8080x" };
#define NHOSTS		(sizeof(hosts) / sizeof(hosts[0]))

static const char	*ctypes[] = { NULL, "application/json",
			    "application/json; charset=utf-8",
			    "Application/JSON;charset=utf-8",
			    "application/jsonx", "text/plain", "",
			    "application/x-www-form-urlencoded",
			    "application/json\t;x",
			    "multipart/form-data; boundary=b",
			    "multipart/form-data", "multipart/form-data; "
			    "boundary=\"b\"; boundary=c" };
#define NCTYPES		(sizeof(ctypes) / sizeof(ctypes[0]))

static const char	*origins[] = { NULL, "http://127.0.0.1:8080",
			    "http://localhost:8080", "http://evil.example",
			    "null", "https://127.0.0.1:8080",
			    "http://127.0.0.1", "http://agency.lan:8080",
			    "http://[::1]:8080", "http://127.0.0.1:8080/x",
			    "HTTP://LOCALHOST:8080", "",
			    "https://app.example", "https://APP.example",
			    "https://app.example:443", "*" };
#define NORIGINS	(sizeof(origins) / sizeof(origins[0]))

/* Credentials: the two keys' secrets, in their forms, and wrong ones. */
#define SECRET_ALICE	"agency-fuzz-alice-0123456789"
#define SECRET_OPS	"agency-fuzz-ops-0123456789ab"
static const char	*authzs[] = { NULL, "Bearer " SECRET_ALICE,
			    "Bearer " SECRET_OPS, "bearer  " SECRET_ALICE "  ",
			    "Bearer wrong-key-0123456789", "Basic YTpi",
			    "Bearer", "Bearer ", SECRET_ALICE, "" };
#define NAUTHZS		(sizeof(authzs) / sizeof(authzs[0]))
static const char	*apikeys[] = { NULL, SECRET_ALICE, SECRET_OPS,
			    " " SECRET_OPS "\t", "wrong-key-0123456789", "" };
#define NAPIKEYS	(sizeof(apikeys) / sizeof(apikeys[0]))
static const char	*acrms[] = { NULL, "POST", "GET", "DELETE", "post",
			    "" };
#define NACRMS		(sizeof(acrms) / sizeof(acrms[0]))
static const char	*acrhs[] = { NULL, "authorization, content-type",
			    "Content-Type", "x-api-key,authorization",
			    "x-stainless-os, x-stainless-lang", "openai-beta",
			    "x-secret", "authorization,,", "a b", "",
			    "x-stainless-" };
#define NACRHS		(sizeof(acrhs) / sizeof(acrhs[0]))
/* The listed CORS origin of the access confs. */
#define CORS_ORIGIN	"https://app.example"
/* Unix sockets' clients: uid 1000 (a rule for qwen), uid 1001 with
 * group 100 (an admin rule), uid 1002 (no rule). */
static uint32_t		 groups100[] = { 100 };
static const struct hpeer peers[] = {
	{ 1, 1, 1000, 1000, NULL, 0 },
	{ 1, 1, 1001, 1001, groups100, 1 },
	{ 1, 1, 1002, 1002, NULL, 0 },
	{ 1, 0, 0, 0, NULL, 0 },	/* its credentials not read */
};
#define NPEERS		(sizeof(peers) / sizeof(peers[0]))
/* TCP clients: one on this host, one not (bit 7 of the flags). */
static const struct hpeer tcp_local = { 0, 0, 0, 0, NULL, 0, "127.0.0.1" };
static const struct hpeer tcp_far = { 0, 0, 0, 0, NULL, 0, "192.0.2.7" };

/* The names of confs with bit 1 of the flags. */
static const char	*names[] = { "agency.lan", "gw.example:8443",
			    "[fe80::1]", "192.168.1.5:80" };
#define NNAMES		(sizeof(names) / sizeof(names[0]))

struct input {
	const uint8_t	*p;
	size_t		 left;
};

/* The access of confs with bit 3: keys alice (qwen and llava) and ops
 * (admin), a CORS origin, allow rules (uid 1000 for qwen, group 100
 * with admin). */
static void
make_access(struct pconf *c)
{
	uint8_t		 d[SHA256_LEN];
	struct pkey	*k;
	struct pallow	*a;

	sha256(SECRET_ALICE, strlen(SECRET_ALICE), d);
	if ((k = pconf_add_key(c, "alice", d, 0, 2)) == NULL ||
	    pstrs_add(&k->models, "qwen") == -1 ||
	    pstrs_add(&k->models, "llava") == -1)
		errx(1, "cannot build the configuration");
	sha256(SECRET_OPS, strlen(SECRET_OPS), d);
	if (pconf_add_key(c, "ops", d, 1, 0) == NULL ||
	    pstrs_add(&c->cors, CORS_ORIGIN) == -1 ||
	    (a = pconf_add_allow(c, ALLOW_USER, 1000, "u1000", 0)) == NULL ||
	    pstrs_add(&a->models, "qwen") == -1 ||
	    pconf_add_allow(c, ALLOW_GROUP, 100, "users", 1) == NULL ||
	    pconf_add_user(c, 1000, "u1000") == -1)
		errx(1, "cannot build the configuration");
}

/* The proxy's configuration as the rules tests have it, listening on
 * 8080 (for the Host guard). */
static struct pconf *
make_conf(const char *default_model, int named, int any)
{
	struct pconf	*c;
	struct pruntime	*rt;
	struct pmodel	*m;
	struct plisten	*l;
	size_t		 i;

	if ((c = pconf_new()) == NULL ||
	    (rt = pconf_add_runtime(c, "llama", KIND_CHAT, STOPS_ALWAYS,
	    256)) == NULL ||
	    pruntime_add_move(rt, "max_completion_tokens", "max_tokens") ||
	    pruntime_add_move(rt, "extra.seed", "seed") ||
	    pstrs_add(&rt->refuse, "logit_bias") ||
	    pstrs_add(&rt->refuse, "tools.x") ||
	    (rt = pconf_add_runtime(c, "vl", KIND_VISION, STOPS_STREAM,
	    0)) == NULL ||
	    (rt = pconf_add_runtime(c, "emb", KIND_EMBEDDING, STOPS_NEVER,
	    0)) == NULL ||
	    (rt = pconf_add_runtime(c, "tts", KIND_SPEECH, STOPS_NEVER,
	    0)) == NULL ||
	    (rt = pconf_add_runtime(c, "sd", KIND_IMAGE, STOPS_ALWAYS,
	    0)) == NULL ||
	    (rt = pconf_add_runtime(c, "rank", KIND_RERANK, STOPS_ALWAYS,
	    0)) == NULL ||
	    (rt = pconf_add_runtime(c, "whisper", KIND_TRANSCRIPTION,
	    STOPS_STREAM, 0)) == NULL ||
	    (rt = pconf_add_runtime(c, "custom", KIND_CHAT, STOPS_ALWAYS,
	    0)) == NULL ||
	    pstrs_add(&rt->routes, "/v1/responses") ||
	    pstrs_add(&rt->parts, "text") ||
	    pstrs_add(&rt->parts, "input_audio") ||
	    (m = pconf_add_model(c, "qwen", "llama", "/m/q.gguf", "qwen",
	    0)) == NULL ||
	    pstrs_add(&m->aliases, "q") ||
	    pconf_add_model(c, "llava", "vl", "/m/l.gguf", "llava", 64) ==
	    NULL ||
	    pconf_add_model(c, "bge", "emb", "/m/b.gguf", "bge", 0) == NULL ||
	    pconf_add_model(c, "kokoro", "tts", "hexgrad/kokoro", "kokoro",
	    0) == NULL ||
	    pconf_add_model(c, "flux", "sd", "/m/flux", "flux", 0) == NULL ||
	    pconf_add_model(c, "odd", "custom", "/m/o", "odd", 0) == NULL ||
	    pconf_add_model(c, "rr", "rank", "/m/r", "rr", 0) == NULL ||
	    pconf_add_model(c, "w", "whisper", "/m/w", "w", 0) == NULL ||
	    (l = calloc(1, sizeof(*l))) == NULL)
		errx(1, "cannot build the configuration");
	/* llama's models may be passed through */
	TAILQ_FOREACH(rt, &c->runtimes, entry)
		rt->passthrough = strcmp(rt->name, "llama") == 0;
	l->fd = -1;
	l->port = 8080;
	(void)strlcpy(l->host, "127.0.0.1", sizeof(l->host));
	TAILQ_INSERT_TAIL(&c->listens, l, entry);
	if (default_model != NULL)
		(void)strlcpy(c->default_model, default_model,
		    sizeof(c->default_model));
	for (i = 0; named && i < NNAMES; i++)
		if (pstrs_add(&c->names, names[i]) == -1)
			errx(1, "cannot build the configuration");
	c->host_any = any;
	return (c);
}

/* The seeds: every route, guard and body shape the tests use. */
#define HEAD	11
static void
write_seeds(const char *dir)
{
	static const char *bodies[] = {
		"{\"model\":\"qwen\",\"messages\":[{\"role\":\"user\","
		    "\"content\":\"hi\"}]}",
		"{\"model\":\"q\",\"stream\":true,\"max_tokens\":4,"
		    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
		"{\"model\":\"qwen\",\"max_completion_tokens\":1000}",
		"{\"model\":\"qwen\",\"max_completion_tokens\":10,"
		    "\"max_tokens\":11}",
		"{\"model\":\"qwen\",\"extra\":{\"seed\":4,\"keep\":1}}",
		"{\"model\":\"qwen\",\"extra\":{\"seed\":4},\"seed\":5}",
		"{\"model\":\"qwen\",\"logit_bias\":{\"1\":2}}",
		"{\"model\":\"qwen\",\"tools\":{\"x\":1}}",
		"{\"model\":\"qwen\",\"messages\":5}",
		"{\"model\":\"llava\",\"stream\":true,\"messages\":[{\"role\":"
		    "\"user\",\"content\":[{\"type\":\"text\",\"text\":"
		    "\"what\"},{\"type\":\"image_url\",\"image_url\":{\"url\":"
		    "\"data:image/png;base64,AAAA\"}}]}]}",
		"{\"model\":\"llava\",\"messages\":[{\"role\":\"user\","
		    "\"content\":[{\"type\":\"image_url\",\"image_url\":"
		    "\"file:///etc/passwd\"}]}]}",
		"{\"model\":\"odd\",\"input\":[{\"role\":\"user\","
		    "\"content\":[{\"type\":\"input_audio\"}]}]}",
		"{\"model\":\"bge\",\"input\":\"hello\"}",
		"{\"model\":\"kokoro\",\"input\":\"hello\",\"voice\":\"a\"}",
		"{\"model\":\"flux\",\"prompt\":\"a cat\"}",
		"{\"model\":\"gpt-4\"}",
		"{\"model\":3}",
		"{\"messages\":[]}",
		"{\"a\":1}  \n",
		"[1,2]",
		"{\"model\":",
		"{} x",
		"",
		/* 23: Anthropic's Messages, Responses, rerank, forms */
		"{\"model\":\"qwen\",\"max_tokens\":9999,\"system\":[{\"type\":"
		    "\"text\",\"text\":\"s\"}],\"messages\":[{\"role\":"
		    "\"user\",\"content\":[{\"type\":\"image\",\"source\":"
		    "{\"type\":\"url\",\"url\":\"http://x\"}},{\"type\":"
		    "\"tool_result\",\"content\":[{\"type\":\"text\"}]}]}]}",
		"{\"model\":\"llava\",\"max_output_tokens\":10,\"input\":"
		    "[{\"role\":\"user\",\"content\":[{\"type\":"
		    "\"input_image\",\"image_url\":\"data:image/png;base64,"
		    "AA\"}]},{\"type\":\"function_call_output\",\"output\":"
		    "[{\"type\":\"input_file\",\"file_url\":\"x\"}]}]}",
		"{\"model\":\"rr\",\"query\":\"a\",\"documents\":[\"a\"]}",
		"--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n"
		    "w\r\n--b\r\nContent-Disposition: form-data; name=\"file\"; "
		    "filename=\"a.wav\"\r\n\r\nRIFF\r\n--b--\r\n",
		"--b\r\nContent-Disposition: form-data; name=stream\r\n\r\n"
		    "true\r\n--b--",
	};
	/* method, path, host, ctype, origin, flags, Authorization,
	 * x-api-key, Access-Control-Request-Method and -Headers, the
	 * connection, for each body */
	static const uint8_t heads[][HEAD] = {
		{ 0, 0, 1, 1, 0, 0 },	/* POST /v1/chat/completions */
		{ 0, 1, 1, 2, 0, 1 },	/* POST /v1/completions */
		{ 0, 2, 3, 1, 0, 0 },	/* POST /v1/embeddings */
		{ 0, 3, 2, 1, 0, 1 },
		{ 0, 4, 1, 1, 0, 0 },
		{ 0, 5, 1, 1, 0, 1 },	/* a configured route */
		{ 0, 6, 1, 1, 0, 0 },	/* admin cancel */
		{ 0, 6, 2, 2, 0, 1 },
		{ 0, 6, 3, 4, 0, 0 },	/* wrong Content-Type */
		{ 0, 6, 7, 1, 0, 1 },	/* wrong Host */
		{ 1, 7, 1, 0, 0, 0 },	/* admin status */
		{ 1, 7, 5, 0, 0, 1 },
		{ 1, 8, 4, 0, 0, 0 },
		{ 1, 9, 0, 0, 3, 1 },	/* /health */
		{ 0, 9, 7, 0, 0, 0 },
		{ 1, 10, 1, 0, 0, 1 },	/* /v1/models */
		{ 1, 0, 1, 0, 0, 0 },	/* GET a model route */
		{ 3, 12, 1, 0, 0, 1 },
		{ 0, 0, 0, 1, 0, 0 },	/* no Host */
		{ 0, 0, 7, 1, 0, 2 },	/* a rebinding name */
		{ 0, 0, 7, 1, 0, 4 },	/* ... with server name any */
		{ 0, 0, 1, 5, 0, 0 },	/* text/plain */
		{ 0, 0, 1, 7, 0, 1 },	/* a form */
		{ 0, 0, 1, 1, 3, 0 },	/* another origin */
		{ 0, 0, 1, 1, 1, 1 },	/* its own origin */
		{ 0, 0, 3, 1, 2, 2 },
		{ 0, 0, 1, 1, 4, 4 },	/* null, any Host */
		{ 5, 0, 1, 0, 3, 0 },	/* a preflight */
		/* with keys, CORS and allow rules (bit 6) */
		{ 0, 0, 1, 1, 0, 64, 1 },	/* alice's key */
		{ 0, 0, 1, 1, 0, 64, 0, 2 },	/* ops's, as x-api-key */
		{ 0, 0, 1, 1, 0, 64, 4 },	/* a wrong key */
		{ 0, 0, 1, 1, 0, 64 },		/* none */
		{ 1, 7, 1, 0, 0, 64, 1 },	/* admin, not an admin key */
		{ 1, 7, 1, 0, 0, 64, 2 },	/* admin, the admin key */
		{ 1, 10, 1, 0, 0, 64, 1 },	/* alice's models */
		{ 0, 0, 1, 1, 0, 64, 0, 0, 0, 0, 2 },	/* a socket's user */
		{ 0, 0, 0, 1, 0, 64, 0, 0, 0, 0, 4 },	/* one no rule names */
		{ 1, 7, 0, 0, 0, 64, 0, 0, 0, 0, 3 },	/* an admin group */
		{ 5, 0, 1, 0, 12, 64, 0, 0, 1, 1 },	/* a CORS preflight */
		{ 5, 14, 1, 0, 12, 64, 0, 0, 2, 1 },	/* ... of /metrics */
		{ 0, 0, 1, 1, 12, 64, 1 },	/* a listed origin's request */
		{ 1, 0, 1, 0, 1, 64, 2, 0, 0, 0, 1 },	/* TLS */
		{ 0, 15, 1, 1, 0, 0 },	/* POST /v1/messages */
		{ 0, 16, 1, 1, 0, 1 },	/* count_tokens */
		{ 0, 5, 1, 1, 0, 0 },	/* Responses */
		{ 0, 17, 1, 1, 0, 1 },
		{ 0, 18, 1, 1, 0, 0 },	/* rerank */
		{ 0, 19, 1, 9, 0, 0 },	/* a form */
		{ 0, 25, 1, 11, 0, 1 },
		{ 0, 20, 1, 9, 0, 0 },
		{ 0, 19, 1, 1, 0, 0 },	/* JSON to a form route */
		{ 1, 21, 1, 0, 0, 0 },	/* passthrough */
		{ 1, 22, 2, 0, 0, 1 },
		{ 3, 23, 1, 5, 0, 0 },
		{ 0, 21, 7, 1, 0, 4 },
		{ 1, 26, 1, 0, 0, 0 },	/* the events */
		{ 1, 27, 1, 0, 0, 8 },	/* a log, followed */
		{ 1, 28, 2, 0, 0, 16 },	/* a log, its name escaped */
		{ 1, 29, 1, 0, 0, 0 },	/* the log of no model */
		{ 0, 33, 1, 1, 0, 0 },	/* load */
		{ 0, 34, 3, 2, 0, 1 },	/* unload */
		{ 1, 12, 1, 0, 0, 0 },	/* the console */
		{ 1, 35, 3, 0, 0, 0 },	/* its script */
		{ 1, 35, 1, 0, 0, 32 },	/* ... turned off */
	};
	/* the body for each head but the first */
	static const size_t pairs[] = { 0, 1, 12, 13, 14, 11, 0, 16, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 0, 22,
		0, 0, 0, 0, 22, 22, 22, 0, 0, 22, 22, 22, 1, 22,
		23, 23, 24, 24, 25, 26, 27, 26, 0, 22, 22, 14, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0 };
	char		 path[1024];
	uint8_t		 buf[4096];
	size_t		 i, j, n, len;
	int		 fd;

	n = 0;
	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		for (j = 0; j < sizeof(bodies) / sizeof(bodies[0]); j++) {
			/* every body on the chat route, a fitting one else */
			if (i > 0 && j != pairs[i])
				continue;
			memcpy(buf, heads[i], HEAD);
			len = strlen(bodies[j]);
			memcpy(buf + HEAD, bodies[j], len);
			(void)snprintf(path, sizeof(path), "%s/seed-%03zu",
			    dir, n++);
			if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC,
			    0644)) == -1 || write(fd, buf, len + HEAD) !=
			    (ssize_t)(len + HEAD))
				err(1, "%s", path);
			close(fd);
		}
	}
	exit(0);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char	*seeds;
	int		 i;

	(void)argc;
	(void)argv;
	if ((seeds = getenv("FUZZ_WRITE_SEEDS")) != NULL)
		write_seeds(seeds);
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	log_init(1, LOG_DAEMON);
	for (i = 0; i < 16; i++) {
		confs[i] = make_conf(i & 1 ? "q" : NULL, i & 2, (i & 4) != 0);
		if (i & 8)
			make_access(confs[i]);
	}
	return (0);
}

static int
byte(struct input *in)
{
	if (in->left == 0)
		return (0);
	in->left--;
	return (*in->p++);
}

/* A known value, or a string from the input (into buf). */
static const char *
pick(struct input *in, const char **known, size_t nknown, char *buf,
    size_t size)
{
	size_t	 c = byte(in), len;

	if (c < nknown)
		return (known[c]);
	len = byte(in);
	if (len > in->left)
		len = in->left;
	if (len >= size)
		len = size - 1;
	memcpy(buf, in->p, len);
	buf[len] = '\0';
	in->p += len;
	in->left -= len;
	return (buf);
}

/* The admin guard, said again: a loopback name, and port 8080. */
static int
admin_host(const char *host)
{
	static const char	*loop[] = { "127.0.0.1:", "[::1]:",
				    "localhost:" };
	const char		*p = NULL;
	size_t			 i;

	if (host == NULL)
		return (0);
	for (i = 0; i < 3 && p == NULL; i++)
		if (strncasecmp(host, loop[i], strlen(loop[i])) == 0)
			p = host + strlen(loop[i]);
	if (p == NULL || *p == '\0' || strspn(p, "0123456789") != strlen(p))
		return (0);
	return (strtol(p, NULL, 10) == 8080);
}

/* A model route's body type, said again. */
static int
json_ctype(const char *ct)
{
	return (ct != NULL && strncasecmp(ct, "application/json", 16) == 0 &&
	    strchr("; \t", ct[16]) != NULL);
}

static int
served(const struct pconf *c, const struct pmodel *m)
{
	const struct pmodel	*e;

	TAILQ_FOREACH(e, &c->models, entry)
		if (e == m)
			return (1);
	return (0);
}

/* The scan both ways, and what json-c reads of what it takes. */
static void
scan_both(const char *body, size_t len)
{
	static struct rscan	 rs, rs2;
	struct prescan		 ps;
	struct rerr		 e;
	json_object		*o;
	size_t			 i = 0, avail, step;
	int			 r, r2, p, p2, u, u2;

	scan_portable = SCAN_WORDS;
	r2 = rules_scan(body, len, NULL, &rs2);
	p2 = rules_plain(body, len);
	u2 = utf8_valid((const unsigned char *)body, len);
	scan_portable = SCAN_BEST;
	r = rules_scan(body, len, NULL, &rs);
	p = rules_plain(body, len);
	u = utf8_valid((const unsigned char *)body, len);
	if (r != r2 || p != p2 || u != u2 ||
	    memcmp(&rs, &rs2, sizeof(rs)) != 0)
		abort();
	/* SSE2 without AVX2, where the best is AVX2: the same */
	scan_portable = SCAN_SSE2;
	if (rules_scan(body, len, NULL, &rs2) != r ||
	    rules_plain(body, len) != p ||
	    (r && memcmp(&rs, &rs2, sizeof(rs)) != 0))
		abort();
	scan_portable = SCAN_BEST;
	/* with its strings noted as it came in, in pieces: the same */
	memset(&ps, 0, sizeof(ps));
	for (avail = 0, step = 1 + len % 7; avail < len;
	    step = step * 5 % 61 + 1) {
		avail = len - avail < step ? len : avail + step;
		prescan_feed(&ps, body, avail);
	}
	if (rules_scan(body, len, &ps, &rs2) != r ||
	    (r && memcmp(&rs, &rs2, sizeof(rs)) != 0))
		abort();
	prescan_clear(&ps);
	if (!r)
		return;
	if ((o = rules_parse(body, len, &e)) == NULL ||
	    (size_t)json_object_object_length(o) != rs.ntop ||
	    body[rs.open] != '{' || body[rs.close] != '}')
		abort();
	json_object_object_foreach(o, key, val) {
		(void)val;
		if (rs.top[i].namelen != strlen(key) ||
		    memcmp(body + rs.top[i].name, key, strlen(key)) != 0 ||
		    rs.top[i].value + rs.top[i].valuelen > rs.close)
			abort();
		i++;
	}
	json_object_put(o);
}

/* Whether a splice of body reads as the tree o: strict, no name twice,
 * and the same JSON. */
static int
same_json(const struct splice *sp, const char *body, json_object *o)
{
	static char		 out[1 << 17];
	struct iovec		 iov[SPLICE_PIECES];
	struct rerr		 e;
	json_object		*again;
	size_t			 n, i, total, off;
	int			 same;

	n = splice_iov(sp, body, iov, SPLICE_PIECES, &total);
	if (total > sizeof(out))
		abort();
	for (i = 0, off = 0; i < n; i++) {
		memcpy(out + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	if (!rules_plain(out, off) || (again = rules_parse(out, off,
	    &e)) == NULL)
		return (0);
	same = json_object_equal(again, o);
	json_object_put(again);
	return (same);
}

/* The splice of a body the scan took against the json-c path, for the
 * rules of each model of c. */
static void
splice_both(const struct pconf *c, const char *body, size_t len)
{
	/* the routes the fast path serves with a cap or parts */
	static const char	*fast[] = { "/v1/chat/completions",
				    "/v1/completions", "/v1/messages",
				    "/v1/messages/count_tokens", "/v1/responses",
				    "/v1/responses/input_tokens" };
	static struct splice	 sp;
	const struct route	*rt;
	struct rscan		 rs;
	struct rerr		 e, e2;
	struct pmodel		*m;
	json_object		*o;
	size_t			 k;
	int64_t			 cap;
	int			 r, r2, changed, ch, ch2;

	for (k = 0; k < sizeof(fast) / sizeof(fast[0]); k++) {
		rt = routes_find(fast[k]);
		if (!splice_route(rt) ||
		    !rules_scan_parts(body, len, NULL, rt->parts, &rs))
			continue;
		TAILQ_FOREACH(m, &c->models, entry) {
			if ((r = splice_rules(m->rt, &rs, &sp, &e)) == 1)
				continue;
			if ((o = rules_parse(body, len, &e2)) == NULL)
				abort();
			/* a route the fast path reads as the tree does */
			r2 = rules_apply(m->rt, fast[k], o, &e2, &changed);
			if (r != r2 || (r == -1 && (e.status != e2.status ||
			    strcmp(e.code, e2.code) != 0 ||
			    strcmp(e.message, e2.message) != 0)) ||
			    (r == 0 && sp.changed != changed))
				abort();
			if (r == 0) {
				cap = rules_cap(m);
				ch = splice_rewrite(&sp, body, m->upstream,
				    cap, m->rt->kind, rt);
				ch2 = rules_rewrite(o, m->upstream, cap,
				    m->rt->kind, fast[k]);
				if (ch != -1 && (ch != ch2 ||
				    !same_json(&sp, body, o)))
					abort();
			}
			json_object_put(o);
		}
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input		 in = { data, size };
	struct http_decision	 dc, fdc, hdc;
	char			 owner[AGENCY_NAME_MAX + 16];
	int			 hpass;
	struct http_hdrs	 hh;
	struct pconf		*c;
	char			 pathbuf[300], hostbuf[300], ctbuf[300];
	char			 obuf[300], abuf[300], kbuf[300], mbuf[300];
	char			 hbuf[300];
	const char		*path, *host, *ctype, *origin, *s;
	const char		*authz, *apikey;
	char			*body;
	int			 cmd, stops, flags, conn, access, unixsock;
	int			 admin, console, pass, credential;
	int64_t			 cap;

	cmd = methods[byte(&in) % NMETHODS];
	path = pick(&in, paths, NPATHS, pathbuf, sizeof(pathbuf));
	if (*path == '\0')
		path = "/";		/* as the handler has it */
	host = pick(&in, hosts, NHOSTS, hostbuf, sizeof(hostbuf));
	ctype = pick(&in, ctypes, NCTYPES, ctbuf, sizeof(ctbuf));
	origin = pick(&in, origins, NORIGINS, obuf, sizeof(obuf));
	flags = byte(&in);
	/* bit 6: with keys, CORS origins and allow rules */
	c = confs[(flags & 7) | (flags & 0x40 ? 8 : 0)];
	access = !TAILQ_EMPTY(&c->keys);
	memset(&hh, 0, sizeof(hh));
	/* bits 3 and 4: the query; bit 5: the console is off */
	c->console = (flags & 0x20) == 0;
	hh.query = queries[flags >> 3 & 3];
	if (in.left > 0)
		splice_both(c, (const char *)in.p, in.left);
	hh.host = host;
	hh.ctype = ctype;
	hh.marks = NULL;
	hh.origin = origin;
	hh.authorization = authz = pick(&in, authzs, NAUTHZS, abuf,
	    sizeof(abuf));
	hh.apikey = apikey = pick(&in, apikeys, NAPIKEYS, kbuf, sizeof(kbuf));
	hh.acrm = pick(&in, acrms, NACRMS, mbuf, sizeof(mbuf));
	hh.acrh = pick(&in, acrhs, NACRHS, hbuf, sizeof(hbuf));
	conn = byte(&in) % (NPEERS + 2);
	hh.tls = conn == 1;
	unixsock = conn >= 2;
	hh.peer = unixsock ? &peers[conn - 2] : (flags & 0x80) ? &tcp_far :
	    &tcp_local;
	admin = strcmp(path, "/metrics") == 0 ||
	    strncmp(path, "/v1/agency/", 11) == 0;
	console = strcmp(path, "/") == 0 || strncmp(path, "/console/", 9) == 0;
	pass = strncmp(path, "/upstream/", 10) == 0;
	/* a key's secret, said again: the right bytes, in a right form */
	credential = (authz != NULL && (strcmp(authz, authzs[1]) == 0 ||
	    strcmp(authz, authzs[2]) == 0 || strcmp(authz, authzs[3]) == 0)) ||
	    (apikey != NULL && (strcmp(apikey, apikeys[1]) == 0 ||
	    strcmp(apikey, apikeys[2]) == 0 || strcmp(apikey, apikeys[3]) == 0));

	/* The body in a buffer of its own size, as evbuffer_pullup
	 * gives it: no NUL after it, so an overread shows. */
	body = NULL;
	if (in.left > 0) {
		if ((body = malloc(in.left)) == NULL)
			return (0);
		memcpy(body, in.p, in.left);
		scan_both(body, in.left);
	}

	px->conf = c;
	/*
	 * The fast path must decide as json-c's does: the same action,
	 * model and error; where it took the body, it changed it where the
	 * rules did, json-c's tree must agree with what it noted, and its
	 * pieces must read as that tree (below).
	 */
	/*
	 * What the header alone decides (http_decide_header) is the full
	 * decision's start: a refusal on the header is the full decision's
	 * own, and nothing is served, nor any body taken, that did not pass
	 * it; what passed with a body was let in by a key, a rule, or the
	 * absence of both, and takes the body budget for an owner.
	 */
	hpass = http_decide_header(c, cmd, path, &hh, in.left > 0, &hdc);
	http_fastpath = 1;
	http_decide(c, cmd, path, &hh, body, in.left, NULL, &fdc);
	if (hpass == -1 && (hdc.action != fdc.action ||
	    hdc.e.status != fdc.e.status || hdc.delay != fdc.delay ||
	    strcmp(hdc.cors, fdc.cors) != 0 ||
	    (hdc.action == HTTP_ERROR && (strcmp(hdc.e.code, fdc.e.code) !=
	    0 || strcmp(hdc.e.message, fdc.e.message) != 0))))
		abort();
	if (hpass == 0 && in.left > 0) {
		if (!hdc.acc.open && hdc.acc.key == NULL && !hdc.acc.rules)
			abort();
		access_owner(c, &hdc.acc, &hh, owner, sizeof(owner));
		if (owner[0] == '\0' || (hdc.acc.key != NULL &&
		    strncmp(owner, "key=", 4) != 0))
			abort();
	}
	if (hpass == -1 && (fdc.action != HTTP_ERROR &&
	    fdc.action != HTTP_PREFLIGHT))
		abort();
	http_fastpath = 0;
	http_decide(c, cmd, path, &hh, body, in.left, NULL, &dc);
	http_fastpath = 1;
	if (fdc.action != dc.action || fdc.model != dc.model ||
	    (dc.action == HTTP_ERROR && (fdc.e.status != dc.e.status ||
	    strcmp(fdc.e.code, dc.e.code) != 0 ||
	    strcmp(fdc.e.message, dc.e.message) != 0)))
		abort();
	if (fdc.fast && (fdc.body != NULL || dc.plain != fdc.plain ||
	    fdc.plain != !fdc.splice.changed))
		abort();
	json_object_put(fdc.body);
	/* What a web page may not get: any route but /health served to a
	 * Host that is not ours or an Origin neither our own nor, but for
	 * the admin routes, listed. */
	if (dc.action != HTTP_ERROR && dc.action != HTTP_HEALTH &&
	    ((!unixsock && !http_host_ok(c, host)) || (origin != NULL &&
	    !http_origin_ok(c, origin, host, hh.tls) &&
	    (admin || pass || strcasecmp(origin, CORS_ORIGIN) != 0 ||
	    !access))))
		abort();
	if ((dc.action == HTTP_STATUS || dc.action == HTTP_CANCEL ||
	    dc.action == HTTP_METRICS || dc.action == HTTP_PASS ||
	    dc.action == HTTP_REDIRECT || dc.action == HTTP_CONSOLE ||
	    dc.action == HTTP_EVENTS || dc.action == HTTP_LOGS ||
	    dc.action == HTTP_LOAD || dc.action == HTTP_UNLOAD) &&
	    !unixsock && (!admin_host(host) || hh.peer == &tcp_far))
		abort();
	/* CORS: a listed origin alone, never an admin route, passthrough
	 * nor the console, never "*" */
	if ((dc.cors[0] != '\0' || dc.action == HTTP_PREFLIGHT) &&
	    (admin || console || pass || origin == NULL ||
	    strcmp(dc.cors, origin) != 0 ||
	    strcasecmp(origin, CORS_ORIGIN) != 0 || !access))
		abort();
	/* Access: with keys, nothing but /health, preflights and the
	 * console's files without a key's secret or an allow rule's user;
	 * the right key's models and admin routes only; a wrong key is
	 * delayed. */
	if (access && dc.action != HTTP_ERROR && dc.action != HTTP_HEALTH &&
	    dc.action != HTTP_PREFLIGHT && dc.action != HTTP_CONSOLE) {
		if (!credential && !(unixsock && hh.peer->known &&
		    (hh.peer->uid == 1000 || hh.peer->ngroups > 0)))
			abort();
		if (dc.acc.key == NULL && !dc.acc.rules)
			abort();
		if ((dc.action == HTTP_STATUS || dc.action == HTTP_CANCEL ||
		    dc.action == HTTP_METRICS || dc.action == HTTP_EVENTS ||
		    dc.action == HTTP_LOGS || dc.action == HTTP_LOAD ||
		    dc.action == HTTP_UNLOAD || dc.action == HTTP_PASS ||
		    dc.action == HTTP_REDIRECT) && !dc.acc.admin)
			abort();
		if (dc.acc.key != NULL && strcmp(dc.acc.key->name, "alice") ==
		    0 && dc.model != NULL && strcmp(dc.model->name, "qwen") !=
		    0 && strcmp(dc.model->name, "llava") != 0)
			abort();
	}
	if (dc.delay != 0 && (dc.action != HTTP_ERROR ||
	    dc.e.status != 401 || !access))
		abort();
	if (dc.action == HTTP_HOLD && !dc.form && !json_ctype(ctype))
		abort();
	if (dc.family != routes_find(path)->family ||
	    (dc.family == FAMILY_ANTHROPIC &&
	    strncmp(path, "/v1/messages", 12) != 0))
		abort();
	if (verbose)
		fprintf(stderr, "%d %s: action %d status %d %s %s\n", cmd,
		    path, dc.action, dc.e.status, dc.e.message,
		    dc.model != NULL ? dc.model->name : "-");
	switch (dc.action) {
	case HTTP_ERROR:
		if (dc.e.status < 400 || dc.e.status > 599 ||
		    dc.e.code == NULL || memchr(dc.e.message, '\0',
		    sizeof(dc.e.message)) == NULL || dc.body != NULL ||
		    (dc.model != NULL && !served(c, dc.model)))
			abort();
		(void)answer_error_type(dc.e.status);
		break;
	case HTTP_PREFLIGHT:
		if (dc.body != NULL || cmd != EVHTTP_REQ_OPTIONS ||
		    dc.pf_method == NULL || hh.acrm == NULL ||
		    strcmp(dc.pf_method, hh.acrm) != 0 ||
		    memchr(dc.pf_headers, '\0', sizeof(dc.pf_headers)) ==
		    NULL)
			abort();
		break;
	case HTTP_HEALTH:
	case HTTP_MODELS:
	case HTTP_STATUS:
		if (dc.body != NULL)
			abort();
		break;
	case HTTP_METRICS:
		/* only a GET with a loopback Host of ours (any on a Unix
		 * socket) */
		if (dc.body != NULL || cmd != EVHTTP_REQ_GET ||
		    strcmp(path, "/metrics") != 0 ||
		    (host == NULL && !unixsock))
			abort();
		break;
	case HTTP_CANCEL:
		if (dc.model == NULL || !served(c, dc.model) ||
		    cmd != EVHTTP_REQ_POST || dc.body != NULL)
			abort();
		break;
	case HTTP_PASS:
	case HTTP_REDIRECT:
		if (dc.model == NULL || !served(c, dc.model) ||
		    !dc.model->rt->passthrough || dc.body != NULL ||
		    dc.prefix <= 10 || dc.prefix > strlen(path) ||
		    strncmp(path, "/upstream/", 10) != 0 ||
		    (path[dc.prefix] != '/') != (dc.action == HTTP_REDIRECT))
			abort();
		break;
	case HTTP_CONSOLE:
		/* a file of its own, only while it is on, only to read */
		if (dc.asset == NULL || !c->console || dc.body != NULL ||
		    strcmp(dc.asset->path, path) != 0 ||
		    (cmd != EVHTTP_REQ_GET && cmd != EVHTTP_REQ_HEAD))
			abort();
		break;
	case HTTP_EVENTS:
		if (cmd != EVHTTP_REQ_GET || dc.body != NULL ||
		    strcmp(path, "/v1/agency/events") != 0)
			abort();
		break;
	case HTTP_LOGS:
		if (cmd != EVHTTP_REQ_GET || dc.model == NULL ||
		    !served(c, dc.model) || dc.body != NULL ||
		    dc.follow != (hh.query != NULL &&
		    strstr(hh.query, "follow=1") != NULL &&
		    strcmp(hh.query, "follow=10") != 0))
			abort();
		break;
	case HTTP_LOAD:
	case HTTP_UNLOAD:
		if (cmd != EVHTTP_REQ_POST || dc.model == NULL ||
		    !served(c, dc.model) || dc.body != NULL ||
		    !json_ctype(ctype) || (dc.wait != 0 && dc.wait != 1))
			abort();
		break;
	case HTTP_HOLD:
		if (dc.form) {
			const struct mform	*f = &dc.mf;

			if (dc.body != NULL || dc.fast || !dc.plain ||
			    dc.model == NULL || !served(c, dc.model) ||
			    routes_find(path)->body != BODY_FORM ||
			    !rules_route_allowed(dc.model->rt, path) ||
			    f->nparts == 0 || (f->has_model &&
			    (f->model_off + f->model_len > in.left ||
			    f->model_len == 0)))
				abort();
			break;
		}
		/* "would ask for a hold on model dc.model->name" */
		if (dc.model == NULL || !served(c, dc.model) ||
		    cmd != EVHTTP_REQ_POST || dc.body == NULL ||
		    !json_object_is_type(dc.body, json_type_object) ||
		    !rules_route_allowed(dc.model->rt, path))
			abort();
		stops = rules_stops(dc.model->rt, dc.body);
		cap = rules_cap(dc.model);
		if (stops != 0 && stops != 1)
			abort();
		if (fdc.fast) {
			json_object	*copy = NULL;
			int		 ch;

			/* the grant's rewrite on the pieces, and on a
			 * copy of the tree: the same JSON */
			ch = splice_rewrite(&fdc.splice, body,
			    dc.model->upstream, cap, dc.model->rt->kind,
			    routes_find(path));
			if (json_object_deep_copy(dc.body, &copy, NULL) != 0)
				abort();
			if (rules_stops_stream(dc.model->rt,
			    fdc.scan.stream) != stops || (ch != -1 &&
			    ch != rules_rewrite(copy, dc.model->upstream, cap,
			    dc.model->rt->kind, path)) || (ch != -1 &&
			    !same_json(&fdc.splice, body, copy)))
				abort();
			json_object_put(copy);
		}
		/* What forward.c does with it once the hold is granted:
		 * the bytes go on as they are only if they read back as
		 * the very tree the rules saw. */
		if (!rules_rewrite(dc.body, dc.model->upstream, cap,
		    dc.model->rt->kind, path) && dc.plain) {
			struct json_tokener	*t;
			json_object		*again;

			if ((t = json_tokener_new()) == NULL)
				abort();
			again = json_tokener_parse_ex(t, body, (int)in.left);
			json_tokener_free(t);
			if (again == NULL || !json_object_equal(again, dc.body))
				abort();
			json_object_put(again);
		}
		s = json_object_to_json_string_ext(dc.body,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
		if (s == NULL)
			abort();
		json_object_put(dc.body);
		break;
	default:
		abort();
	}
	free(body);
	return (0);
}
