/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: Ollama's API translated (agency-proxy/ollama*.c).
 * The first byte picks what the rest is:
 *
 *   0-3     a request body of /api/chat, /api/generate, /api/embed or
 *           /api/embeddings (ollama_request)
 *   4-5     a model server's SSE stream for a chat or a generate,
 *           streamed (ollama_stream_feed, then ollama_stream_end); the
 *           second byte sizes the pieces it is fed in
 *   6-9     a whole answer of a chat, a generate, an embed (the second
 *           byte is its dimensions) or an embeddings (ollama_answer)
 *   10      a model server's error answer (ollama_upstream_error)
 *
 * Invariants: no crash, no leak, no read outside the input.  A request
 * is refused with a status of 400, 404, 413 or 500 and a message, and
 * no body; or it is taken with a route of the model server's, a body
 * (unless it only loads a model) that is a JSON object strict enough
 * for rules_parse, whose "model" is the name looked up, and whose
 * "stream" says what the request asked.  A stream gives lines, each a
 * JSON object on its own (strict, valid UTF-8, no line break inside)
 * and none after the last: exactly one line ends it, an error or
 * "done":true, and it is the last; the same lines in pieces of one
 * size as whole.  A whole answer and an error answer are each one JSON
 * object: an error ({"error":...}) exactly when the answer is refused.
 *
 * FUZZ_WRITE_SEEDS=DIR writes the seed corpus into DIR and exits.
 */
#include <sys/types.h>

#include <err.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "proxy.h"
#include "ollama.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static const struct ollama_times	 times = { 1700000000000000000LL,
    1000000000LL, 1250000000LL, 1300000000LL };
#define NOW	2000000000LL

static void
fail(const char *what, const char *text, size_t len)
{
	fprintf(stderr, "fuzz_ollama: %s: %.*s\n", what, (int)(len > 2000 ?
	    2000 : len), text);
	abort();
}

/* A strict JSON object (rules_parse's checks), freed; its member k
 * read into *v when k is given (a new reference, or NULL). */
static int
object(const char *s, size_t len, const char *k, json_object **v)
{
	json_object	*o;
	struct rerr	 e;

	if (v != NULL)
		*v = NULL;
	if ((o = rules_parse(s, len, &e)) == NULL)
		return (0);
	if (k != NULL && v != NULL && json_object_object_get_ex(o, k, v))
		json_object_get(*v);
	json_object_put(o);
	return (1);
}

static void
check_request(int api, const char *d, size_t len)
{
	struct ollama_req	 r;
	struct rerr		 e;
	json_object		*v;
	const char		*text;

	if (ollama_request(api, d, len, &r, &e) == -1) {
		if ((e.status != 400 && e.status != 404 && e.status != 413 &&
		    e.status != 500) || e.message[0] == '\0' ||
		    memchr(e.message, '\0', sizeof(e.message)) == NULL ||
		    r.body != NULL)
			fail("a refusal", e.message, strlen(e.message));
		return;
	}
	if (r.route == NULL || strncmp(r.route, "/v1/", 4) != 0)
		fail("no route", d, len);
	if (r.load != (r.body == NULL))
		fail("a body and load", d, len);
	if (r.named != (r.lookup[0] != '\0') ||
	    strncmp(r.model, r.lookup, strlen(r.lookup)) != 0)
		fail("the model's name", d, len);
	if (r.keep < OLLAMA_KEEP_DEFAULT || r.keep > OLLAMA_KEEP_FOREVER ||
	    r.keep_ms < 0 || r.dimensions < 0)
		fail("keep_alive or dimensions", d, len);
	if (r.body == NULL)
		return;
	text = json_object_to_json_string_ext(r.body, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!object(text, strlen(text), "model", &v))
		fail("a body that does not read again", text, strlen(text));
	if ((v != NULL) != r.named || (v != NULL &&
	    strcmp(json_object_get_string(v), r.lookup) != 0))
		fail("the body's model", text, strlen(text));
	json_object_put(v);
	if (r.api == OLLAMA_CHAT || r.api == OLLAMA_GENERATE) {
		(void)object(text, strlen(text), "stream", &v);
		if (v == NULL || json_object_get_boolean(v) != r.stream)
			fail("the body's stream", text, strlen(text));
		json_object_put(v);
	}
	ollama_req_clear(&r);
}

/* Lines: each a strict object; exactly one end, the last. */
static void
check_lines(const char *out, size_t len, const char *in, size_t inlen)
{
	const char	*p = out, *nl, *e = out + len;
	json_object	*v;
	int		 ended = 0;

	if (len == 0 || out[len - 1] != '\n')
		fail("no end of line", in, inlen);
	while (p < e) {
		nl = memchr(p, '\n', e - p);
		if (ended)
			fail("a line after the end", in, inlen);
		if (!object(p, nl - p, "error", &v))
			fail("a line that is not JSON", p, nl - p);
		if (v != NULL) {
			if (!json_object_is_type(v, json_type_string))
				fail("an error that is not a string", p, nl - p);
			ended = 1;
		}
		json_object_put(v);
		(void)object(p, nl - p, "done", &v);
		if (v != NULL && json_object_get_boolean(v))
			ended = 1;
		json_object_put(v);
		p = nl + 1;
	}
	if (!ended)
		fail("a stream with no end", in, inlen);
}

static void
stream(int api, const char *d, size_t len, size_t k, struct buf *out)
{
	struct ollama_req	 r;
	struct ollama_stream	 st;
	size_t			 i, m;

	memset(&r, 0, sizeof(r));
	r.api = api;
	r.stream = 1;
	ollama_stream_init(&st, &r, "m", &times);
	for (i = 0; i < len; i += k) {
		m = len - i < k ? len - i : k;
		(void)ollama_stream_feed(&st, d + i, m, NOW, out);
	}
	ollama_stream_end(&st, NOW, out);
	ollama_stream_free(&st);
}

static void
check_stream(int api, const char *d, size_t len)
{
	struct buf	 a = { 0 }, b = { 0 };
	size_t		 k;

	if (len == 0)
		return;
	k = 1 + (unsigned char)d[0] % 64;
	stream(api, d + 1, len - 1, len, &a);
	stream(api, d + 1, len - 1, k, &b);
	check_lines(a.b, a.len, d, len);
	if (a.len != b.len || memcmp(a.b, b.b, a.len) != 0)
		fail("other lines in pieces", d, len);
	buf_release(&a, 0);
	buf_release(&b, 0);
}

static void
check_answer(int api, const char *d, size_t len)
{
	struct ollama_req	 r;
	struct ollama_stream	 st;
	struct buf		 out = { 0 };
	json_object		*v = NULL;
	int			 rc;

	memset(&r, 0, sizeof(r));
	r.api = api;
	if (api == OLLAMA_EMBED && len > 0) {
		r.dimensions = (unsigned char)d[0] % 16;
		d++;
		len--;
	}
	ollama_stream_init(&st, &r, "m", &times);
	rc = ollama_answer(&st, d, len, NOW, &out);
	ollama_stream_free(&st);
	if (out.len == 0 || memchr(out.b, '\n', out.len) != NULL ||
	    !object(out.b, out.len, "error", &v))
		fail("an answer that is not one object", out.b, out.len);
	if ((rc == -1) != (v != NULL))
		fail("an error, and the answer's status", out.b, out.len);
	json_object_put(v);
	buf_release(&out, 0);
}

static void
check_error(const char *d, size_t len)
{
	struct buf	 out = { 0 };
	json_object	*v = NULL;
	int		 status;

	status = ollama_upstream_error(len > 0 ? 300 + (unsigned char)d[0] :
	    500, d, len, &out);
	if (status < 400 || status > 599 || !object(out.b, out.len, "error",
	    &v) || v == NULL || !json_object_is_type(v, json_type_string))
		fail("an error answer", out.b, out.len);
	json_object_put(v);
	buf_release(&out, 0);
}

static void
write_seeds(const char *dir)
{
	static const char *const	 seeds[] = {
		"\x00{\"model\":\"qwen:latest\",\"messages\":[{\"role\":\"user\","
		    "\"content\":\"hi\",\"images\":[\"iVBORw0KGgoAAAANSUhEUgAAAA"
		    "EAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJR"
		    "U5ErkJggg==\"]},{\"role\":\"assistant\",\"content\":\"\","
		    "\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":"
		    "{\"a\":1}}}]},{\"role\":\"tool\",\"content\":\"x\","
		    "\"tool_name\":\"f\"}],\"options\":{\"num_predict\":10,"
		    "\"temperature\":0.7,\"stop\":[\"x\"],\"seed\":-1,\"num_ctx\":"
		    "4096},\"keep_alive\":\"1h30m\",\"format\":{\"type\":"
		    "\"object\"},\"think\":\"max\",\"tools\":[{\"type\":"
		    "\"function\",\"function\":{\"name\":\"f\"}}],\"logprobs\":"
		    "true,\"top_logprobs\":3}",
		"\x00{\"model\":\"m\",\"messages\":[],\"keep_alive\":0}",
		"\x01{\"model\":\"m\",\"prompt\":\"Why?\",\"system\":\"s\","
		    "\"format\":\"json\",\"stream\":false,\"think\":true}",
		"\x01{\"model\":\"m\",\"prompt\":\"[INST]\",\"raw\":true,"
		    "\"keep_alive\":-1,\"options\":{\"top_k\":1.5}}",
		"\x02{\"model\":\"e\",\"input\":[\"a\",\"b\"],\"dimensions\":4,"
		    "\"truncate\":false}",
		"\x03{\"model\":\"e\",\"prompt\":\"x\"}",
		"\x04\x07" "data: {\"choices\":[{\"delta\":{\"role\":"
		    "\"assistant\",\"content\":null}}]}\n\ndata: {\"choices\":"
		    "[{\"delta\":{\"content\":\"a\\u00e9\",\"reasoning_content\":"
		    "\"t\"},\"logprobs\":{\"content\":[{\"token\":\"a\","
		    "\"logprob\":-1}]}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":"
		    "{\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":"
		    "{\"name\":\"f\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n"
		    "data: {\"choices\":[{\"delta\":{\"tool_calls\":[{\"index\":0,"
		    "\"function\":{\"arguments\":\"1}\"}}]},\"finish_reason\":"
		    "\"tool_calls\"}],\"usage\":{\"prompt_tokens\":3,"
		    "\"completion_tokens\":2},\"timings\":{\"prompt_ms\":1.5,"
		    "\"predicted_ms\":2}}\n\ndata: [DONE]\n\n",
		"\x05\x01" ": ping\n\ndata: {\"choices\":[{\"text\":\"x\"}]}\n\n"
		    "event: error\ndata: {\"error\":{\"message\":\"m\"}}\n\n",
		"\x04\x03" "data: {\"choices\":[{\"delta\":\r"
		    "data: {\"content\":\"c\"}}]}\r\r",
		"\x06{\"choices\":[{\"message\":{\"content\":\"x\","
		    "\"reasoning_content\":\"r\",\"tool_calls\":[{\"id\":\"a\","
		    "\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]},"
		    "\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1}}",
		"\x07{\"choices\":[{\"text\":\"x\",\"finish_reason\":\"length\"}]}",
		"\x08\x02{\"data\":[{\"embedding\":[0.6,0.8,0.5]},{\"embedding\":"
		    "[1e-3,2]}],\"usage\":{\"prompt_tokens\":4}}",
		"\x09{\"data\":[{\"embedding\":[1,2]}]}",
		"\x0a{\"error\":{\"code\":400,\"message\":\"too long\"}}",
	};
	char		 path[1024];
	size_t		 i, len;
	int		 fd;

	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		/* the first byte may be 0: the length is the rest's + 1 */
		len = 1 + strlen(seeds[i] + 1);
		(void)snprintf(path, sizeof(path), "%s/seed-%03zu", dir, i);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) ==
		    -1 || write(fd, seeds[i], len) != (ssize_t)len)
			err(1, "%s", path);
		close(fd);
	}
	exit(0);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char	*seeds;

	(void)argc;
	(void)argv;
	if ((seeds = getenv("FUZZ_WRITE_SEEDS")) != NULL)
		write_seeds(seeds);
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*d = (const char *)data + 1;
	char		*copy;
	size_t		 len;

	if (size == 0)
		return (0);
	len = size - 1;
	/* the rest in a buffer of its own size, for ASan to see past it */
	if ((copy = malloc(len > 0 ? len : 1)) == NULL)
		return (0);
	memcpy(copy, d, len);
	switch (data[0]) {
	case 0: case 1: case 2: case 3:
		check_request(data[0], copy, len);
		break;
	case 4: case 5:
		check_stream(data[0] == 4 ? OLLAMA_CHAT : OLLAMA_GENERATE,
		    copy, len);
		break;
	case 6: case 7: case 8: case 9:
		check_answer(data[0] - 6, copy, len);
		break;
	case 10:
		check_error(copy, len);
		break;
	default:
		break;
	}
	free(copy);
	return (0);
}
