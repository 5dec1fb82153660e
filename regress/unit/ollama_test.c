/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Ollama's API (issue 35) translated to and from the model server's
 * OpenAI API (agency-proxy/ollama*.c), byte for byte: each request field
 * into the body the server gets, or refused; each answer, streamed a
 * chunk at a time in pieces of every size, whole, or an error, into
 * Ollama's lines and objects; the listings.
 *
 * Every field, checked against Ollama's API (docs/api.md and api/types.go
 * of ollama/ollama at fb3076099, 2026-08-21, release 0.32.15), and what
 * agency does with it:
 *
 * REQUESTS: /api/chat and /api/generate.  A generate goes to the chat
 * route as a system and a user message (Ollama applies the model's
 * template, as the chat route does), or with raw to /v1/completions.
 *
 *  field               agency   what, and why
 *  model               maps     "model", less ":latest" (tags are listed
 *                               with it); absent, null or "": the default
 *                               model, as on the OpenAI routes; longer
 *                               than a name can be: 404
 *  messages[]          maps     messages; empty or absent: the model is
 *                               only loaded ("done_reason":"load")
 *    .role             maps     lower-cased, as Ollama does; none: 400
 *    .content          maps     content; with images, parts: the images
 *                               then the text
 *    .images[]         maps     image_url parts, data:image/TYPE;base64,
 *                               TYPE read from the bytes (PNG, JPEG, GIF,
 *                               WebP, BMP); not base64 as Go decodes it,
 *                               or no such image: 400.  The rules then
 *                               allow them for vision runtimes only
 *    .thinking         maps     reasoning_content
 *    .tool_calls[]     maps     OpenAI's: the arguments object as a
 *                               string, the id kept or made (call_M_K);
 *                               function.index read, not needed
 *    .tool_name        maps     tool_call_id of the call it answers: the
 *                               next of the last assistant's, or the first
 *                               of the next 16 with that name
 *    .tool_call_id     maps     tool_call_id
 *  prompt (generate)   maps     the user message, or raw's prompt; empty:
 *                               only loaded
 *  system (generate)   maps     a system message first; with raw: 400
 *  images (generate)   maps     the user message's parts; with raw: 400
 *  suffix              refuses  400: the servers' completions do not fill
 *                               in the middle (llama-server drops it,
 *                               vLLM refuses it)
 *  template            refuses  400: the server applies the model's own
 *  context             refuses  400 unless empty: agency keeps none, and
 *                               never gives one
 *  raw                 maps     true: /v1/completions, the prompt as it is
 *  format              maps     "json": response_format json_object; a
 *                               schema (an object): json_schema, name
 *                               "format"; "" or null: none; else 400
 *  stream              maps     stream (default true); streamed, also
 *                               stream_options.include_usage, for the
 *                               counts of the last line
 *  keep_alive          maps     for the caller, never sent: a number of
 *                               seconds or a Go duration ("5m", "1h30m",
 *                               "0"); negative: forever; else 400
 *  think               maps     chat_template_kwargs.enable_thinking
 *                               (llama-server, vLLM); "low", "medium",
 *                               "high" also reasoning_effort, "max" as
 *                               "high"; other: 400; raw: read, no template
 *  tools               maps     tools, as they are (the same shape)
 *  logprobs            maps     logprobs; raw: 400 (completions' differ)
 *  top_logprobs        maps     top_logprobs; 0 to 20, as Ollama, else 400
 *  truncate, shift     ignores  read as booleans: the context is the
 *                               server's to keep
 *  _debug_render_only  refuses  400 when true: no template is rendered
 *  options             maps     each known one read as Ollama reads it:
 *                               'option "x" must be ...' 400 otherwise
 *    num_predict       maps     max_tokens when > 0 (-1, -2: the server's
 *                               own end; the runtime's cap still holds)
 *    temperature, top_p, min_p, typical_p, presence_penalty,
 *    frequency_penalty maps     the same names, the number as written
 *    top_k             maps     top_k (llama-server, vLLM)
 *    repeat_penalty,
 *    repeat_last_n     maps     llama-server's names (vLLM ignores them)
 *    seed              maps     seed; negative (Ollama's -1): none
 *    stop              maps     stop
 *    num_keep          ignores  llama-server's n_keep is the operator's
 *    num_ctx, num_batch, num_gpu, main_gpu, use_mmap, num_thread,
 *    draft_num_predict ignores  the model process's settings: its
 *                               command line, the operator's
 *    others            ignores  as Ollama does (older ones: mirostat,
 *                               tfs_z, penalize_newline, numa, ...)
 *
 * REQUESTS: /api/embed and /api/embeddings, to /v1/embeddings.
 *  model, keep_alive   maps     as above
 *  input (embed)       maps     input, a string or strings; empty or null:
 *                               only loaded; other: 400
 *  prompt (embeddings) maps     input; empty: only loaded
 *  dimensions          maps     not sent (llama-server ignores it, vLLM
 *                               refuses it for most models): agency cuts a
 *                               longer vector and normalizes it again, as
 *                               Ollama does
 *  truncate            ignores  read as a boolean: the server's own
 *                               (llama-server refuses an input over its
 *                               batch, as Ollama's truncate false)
 *  options             ignores  read as above, not sent
 *
 * ANSWERS (streamed: one NDJSON line a chunk that carries text; whole:
 * one object), in the order of Ollama's Go types.
 *  model               the name as the request gave it (or the model
 *                      picked for it)
 *  created_at          the line's real time, RFC 3339, ns, UTC
 *  message.content,
 *  response            delta.content, message.content, or text
 *                      (completions), as the server wrote it
 *  message.thinking,
 *  thinking            reasoning_content or reasoning
 *  message.tool_calls  a call a line (streamed) once complete: {"id",
 *                      "function":{"index","name","arguments":{...}}}
 *  done, done_reason   false; then true with finish_reason: stop and
 *                      length as they are, tool_calls as stop (Ollama's),
 *                      another as it is, none: stop
 *  logprobs            choices[0].logprobs.content (the same shape)
 *  total_duration, load_duration, prompt_eval_count,
 *  prompt_eval_duration, eval_count, eval_duration: ns and counts, the
 *                      head of ollama_stream.c says from where
 *  context             never: agency has no tokens to give
 *  tool_calls (generate) never: a generate sends no tools
 *  remote_model, remote_host, _debug_info: never (Ollama's cloud
 *                      models, its template rendering)
 *  embeddings          data[].embedding as written (cut: dimensions)
 *  embedding           data[0].embedding
 *  error               the server's error.message (or error, message,
 *                      detail), with its status; agency's own otherwise
 *
 * LISTINGS: the head of agency-proxy/ollama_list.c has their fields;
 * what agency never writes there: remote_model, remote_host (Ollama's
 * cloud), details.embedding_length, and show's license, modelfile,
 * parameters, template, system, renderer, parser, messages,
 * projector_info, tensors and requires (a Modelfile's, a GGUF's
 * tensors: agency has neither).  /api/status, /api/me and
 * /api/experimental/... are not Ollama's documented API: phase 2 answers
 * them 404.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"
#include "ollama.h"
#include "sha256.h"

/* 2023-11-14T22:13:20Z, and the monotonic times of a request */
#define WALL		1700000000000000000LL
#define START		1000000000LL
#define GRANTED		1250000000LL
#define SENT		1300000000LL
#define NOW		2000000000LL	/* WALL + 1 s: ...22:13:21Z */

static const struct ollama_times	 times = { WALL, START, GRANTED, SENT };

/* The OpenAI body of a request, as it would be sent. */
static const char *
body_of(const struct ollama_req *r)
{
	return (json_object_to_json_string_ext(r->body,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* A request that must be taken; its body compared when want is set. */
static void
take(int api, const char *in, const char *route, const char *want,
    struct ollama_req *r)
{
	struct rerr	 e;

	if (ollama_request(api, in, strlen(in), r, &e) == -1)
		atf_tc_fail("refused (%d %s): %s", e.status, e.message, in);
	ATF_CHECK_STREQ(r->route, route);
	if (want == NULL)
		ATF_CHECK(r->body == NULL);
	else if (r->body == NULL)
		atf_tc_fail("no body for %s", in);
	else if (strcmp(body_of(r), want) != 0)
		atf_tc_fail("%s\n  gave %s\n  want %s", in, body_of(r), want);
}

static void
takes(int api, const char *in, const char *route, const char *want)
{
	struct ollama_req	 r;

	take(api, in, route, want, &r);
	ollama_req_clear(&r);
}

/* A request that must be refused with status and message. */
static void
refused(int api, const char *in, int status, const char *msg)
{
	struct ollama_req	 r;
	struct rerr		 e;

	if (ollama_request(api, in, strlen(in), &r, &e) == 0) {
		atf_tc_fail("taken: %s -> %s", in, r.body ? body_of(&r) : "-");
		ollama_req_clear(&r);
		return;
	}
	ATF_CHECK(r.body == NULL);
	if (e.status != status || strcmp(e.message, msg) != 0)
		atf_tc_fail("%s\n  gave %d %s\n  want %d %s", in, e.status,
		    e.message, status, msg);
}

/* A 1x1 PNG, and the first bytes of the other types */
#define PNG	"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk" \
		"+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
#define JPEG	"/9j/4AAQSkZJRgABAQAAAQABAAD/2wBD"
#define GIF	"R0lGODlhAQABAIAAAP///wAAACH5BAEA"
#define WEBP	"UklGRiQAAABXRUJQVlA4IBgAAAAwAQCd"
#define BMP	"Qk06AAAAAAAAADYAAAAoAAAAAQAAAAEA"
#define CHATR	"/v1/chat/completions"
#define STREAMED "\"stream\":true,\"stream_options\":{\"include_usage\":true}"

ATF_TC_WITHOUT_HEAD(chat_request);
ATF_TC_BODY(chat_request, tc)
{
	struct ollama_req	 r;

	/* the simplest, streamed by default */
	take(OLLAMA_CHAT, "{\"model\":\"qwen2.5-7b\",\"messages\":[{\"role\":"
	    "\"user\",\"content\":\"Why is the sky blue?\"}]}", CHATR,
	    "{\"model\":\"qwen2.5-7b\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"Why is the sky blue?\"}]," STREAMED "}", &r);
	ATF_CHECK_EQ(r.api, OLLAMA_CHAT);
	ATF_CHECK_EQ(r.stream, 1);
	ATF_CHECK_EQ(r.load, 0);
	ATF_CHECK_EQ(r.named, 1);
	ATF_CHECK_STREQ(r.model, "qwen2.5-7b");
	ATF_CHECK_STREQ(r.lookup, "qwen2.5-7b");
	ATF_CHECK_EQ(r.keep, OLLAMA_KEEP_DEFAULT);
	ollama_req_clear(&r);

	/* not streamed; a tag of latest looked up without it, answered
	 * with it; roles lower-cased; the system message kept */
	take(OLLAMA_CHAT, "{\"model\":\"qwen:latest\",\"stream\":false,"
	    "\"messages\":[{\"role\":\"SYSTEM\",\"content\":\"Be brief.\"},"
	    "{\"role\":\"User\",\"content\":\"hi\"},{\"role\":\"assistant\","
	    "\"content\":\"hello\"}]}", CHATR,
	    "{\"model\":\"qwen\",\"messages\":[{\"role\":\"system\",\"content\":"
	    "\"Be brief.\"},{\"role\":\"user\",\"content\":\"hi\"},{\"role\":"
	    "\"assistant\",\"content\":\"hello\"}],\"stream\":false}", &r);
	ATF_CHECK_EQ(r.stream, 0);
	ATF_CHECK_STREQ(r.model, "qwen:latest");
	ATF_CHECK_STREQ(r.lookup, "qwen");
	ollama_req_clear(&r);

	/* another tag is a name of its own */
	take(OLLAMA_CHAT, "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":"
	    "\"user\",\"content\":\"x\"}],\"stream\":false}", CHATR,
	    "{\"model\":\"llama3:8b\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\"}],\"stream\":false}", &r);
	ATF_CHECK_STREQ(r.lookup, "llama3:8b");
	ollama_req_clear(&r);

	/* no model: the caller's default; null and "" are none */
	take(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":"
	    "\"x\"}],\"stream\":false}", CHATR, "{\"messages\":[{\"role\":"
	    "\"user\",\"content\":\"x\"}],\"stream\":false}", &r);
	ATF_CHECK_EQ(r.named, 0);
	ATF_CHECK_STREQ(r.model, "");
	ollama_req_clear(&r);
	takes(OLLAMA_CHAT, "{\"model\":null,\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\"}],\"stream\":false}", CHATR, "{\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":false}");
	takes(OLLAMA_CHAT, "{\"model\":\"\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\"}],\"stream\":false}", CHATR, "{\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":false}");

	/* content null or absent is "" */
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	    "\"content\":null},{\"role\":\"user\"}],\"stream\":false}", CHATR,
	    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
	    "\"\"},{\"role\":\"user\",\"content\":\"\"}],\"stream\":false}");

	/* fields of neither API are not sent */
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\",\"name\":\"n\"}],\"stream\":false,\"n\":3,"
	    "\"truncate\":false,\"shift\":true}", CHATR, "{\"model\":\"m\","
	    "\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],"
	    "\"stream\":false}");

	/* thinking of an earlier answer */
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"stream\":false,\"messages\":"
	    "[{\"role\":\"assistant\",\"content\":\"4\",\"thinking\":\"2+2\"}]}",
	    CHATR, "{\"model\":\"m\",\"messages\":[{\"role\":\"assistant\","
	    "\"content\":\"4\",\"reasoning_content\":\"2+2\"}],"
	    "\"stream\":false}");
}

ATF_TC_WITHOUT_HEAD(chat_load);
ATF_TC_BODY(chat_load, tc)
{
	struct ollama_req	 r;

	/* no messages: load only, and keep_alive 0 stops it */
	take(OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":[]}", CHATR, NULL,
	    &r);
	ATF_CHECK_EQ(r.load, 1);
	ATF_CHECK_EQ(r.keep, OLLAMA_KEEP_DEFAULT);
	ollama_req_clear(&r);
	take(OLLAMA_CHAT, "{\"model\":\"m\",\"keep_alive\":0}", CHATR, NULL,
	    &r);
	ATF_CHECK_EQ(r.load, 1);
	ATF_CHECK_EQ(r.keep, OLLAMA_KEEP_FOR);
	ATF_CHECK_EQ(r.keep_ms, 0);
	ollama_req_clear(&r);
	/* still read whole: a bad field is refused */
	refused(OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":[],\"options\":"
	    "{\"seed\":\"1\"}}", 400, "option \"seed\" must be an integer");
}

ATF_TC_WITHOUT_HEAD(chat_refused);
ATF_TC_BODY(chat_refused, tc)
{
	char	 big[400];

	refused(OLLAMA_CHAT, "", 400, "The body is empty.");
	refused(OLLAMA_CHAT, "{\"model\":", 400, "The body is not valid JSON.");
	refused(OLLAMA_CHAT, "[]", 400, "The body must be a JSON object.");
	refused(OLLAMA_CHAT, "{\"model\":7}", 400,
	    "the field 'model' must be a string");
	(void)snprintf(big, sizeof(big), "{\"model\":\"%0200d\"}", 0);
	refused(OLLAMA_CHAT, big, 404, "model '0000000000000000000000000000000"
	    "000000000000000000000000000000000000000000000000000000000000000000"
	    "000' not found");
	refused(OLLAMA_CHAT, "{\"model\":\"a\\u0000b\"}", 404,
	    "model 'a' not found");
	refused(OLLAMA_CHAT, "{\"messages\":{}}", 400,
	    "the field 'messages' must be an array");
	refused(OLLAMA_CHAT, "{\"messages\":[\"hi\"]}", 400,
	    "messages[0] must be an object");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"content\":\"hi\"}]}", 400,
	    "messages[0] has no role");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":"
	    "[]}]}", 400, "the field 'content' must be a string");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"user\",\"content\":"
	    "\"x\",\"images\":\"" PNG "\"}]}", 400,
	    "the field 'images' must be an array");
	refused(OLLAMA_CHAT, "{\"messages\":[],\"stream\":\"no\"}", 400,
	    "the field 'stream' must be a boolean");
	refused(OLLAMA_CHAT, "{\"messages\":[],\"tools\":{}}", 400,
	    "the field 'tools' must be an array");
	refused(OLLAMA_CHAT, "{\"messages\":[],\"_debug_render_only\":true}",
	    400, "agency does not render prompt templates "
	    "(_debug_render_only): the model server applies the model's own");
	refused(OLLAMA_CHAT, "{\"messages\":[],\"truncate\":1}", 400,
	    "the field 'truncate' must be a boolean");
}

ATF_TC_WITHOUT_HEAD(options);
ATF_TC_BODY(options, tc)
{
	/* each mapped one, in the table's order; numbers as written; the
	 * model process's own settings and unknown ones not sent */
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\"}],\"stream\":false,\"options\":{\"stop\":[\"\\n\","
	    "\"user:\"],\"seed\":42,\"frequency_penalty\":1.0,"
	    "\"presence_penalty\":1.5,\"repeat_last_n\":33,"
	    "\"repeat_penalty\":1.2,\"typical_p\":0.7,\"min_p\":0.0,"
	    "\"top_k\":20,\"top_p\":0.9,\"temperature\":0.80,"
	    "\"num_predict\":100,\"num_keep\":5,\"num_ctx\":1024,"
	    "\"num_batch\":2,\"num_gpu\":1,\"main_gpu\":0,\"use_mmap\":true,"
	    "\"num_thread\":8,\"draft_num_predict\":4,\"mirostat\":1,"
	    "\"penalize_newline\":true,\"numa\":false,\"tfs_z\":\"x\"}}",
	    CHATR, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\"}],\"stream\":false,\"max_tokens\":100,"
	    "\"temperature\":0.80,\"top_p\":0.9,\"top_k\":20,\"min_p\":0.0,"
	    "\"typical_p\":0.7,\"repeat_penalty\":1.2,\"repeat_last_n\":33,"
	    "\"presence_penalty\":1.5,\"frequency_penalty\":1.0,\"seed\":42,"
	    "\"stop\":[\"\\n\",\"user:\"]}");

	/* integers as Ollama takes them: any number, cut toward zero */
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":[],\"options\":"
	    "{\"num_predict\":12.9,\"top_k\":-3.5e0,\"temperature\":1}}", CHATR,
	    NULL);
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\"}],\"stream\":false,\"options\":{\"num_predict\":"
	    "12.9,\"top_k\":-3.5e0,\"temperature\":1}}", CHATR,
	    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
	    "\"x\"}],\"stream\":false,\"max_tokens\":12,\"temperature\":1,"
	    "\"top_k\":-3}");

	/* no end, the whole context, a random seed, no stops, nulls: the
	 * server's own */
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\"}],\"stream\":false,\"options\":{\"num_predict\":"
	    "-1,\"seed\":-1,\"stop\":[],\"top_p\":null}}", CHATR,
	    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
	    "\"x\"}],\"stream\":false}");
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\"}],\"stream\":false,\"options\":{\"num_predict\":"
	    "-2,\"num_predict\":0}}", CHATR, "{\"model\":\"m\",\"messages\":"
	    "[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":false}");
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\","
	    "\"content\":\"x\"}],\"stream\":false,\"options\":null}", CHATR,
	    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
	    "\"x\"}],\"stream\":false}");

	/* each type, refused as Ollama refuses it (ignored ones too) */
	refused(OLLAMA_CHAT, "{\"options\":[]}", 400,
	    "the field 'options' must be an object");
	refused(OLLAMA_CHAT, "{\"options\":{\"num_predict\":\"10\"}}", 400,
	    "option \"num_predict\" must be an integer");
	refused(OLLAMA_CHAT, "{\"options\":{\"num_ctx\":true}}", 400,
	    "option \"num_ctx\" must be an integer");
	refused(OLLAMA_CHAT, "{\"options\":{\"num_ctx\":1e300}}", 400,
	    "option \"num_ctx\" must be an integer");
	refused(OLLAMA_CHAT, "{\"options\":{\"temperature\":\"hot\"}}", 400,
	    "option \"temperature\" must be a number");
	refused(OLLAMA_CHAT, "{\"options\":{\"use_mmap\":1}}", 400,
	    "option \"use_mmap\" must be a boolean");
	refused(OLLAMA_CHAT, "{\"options\":{\"stop\":\"\\n\"}}", 400,
	    "option \"stop\" must be an array of strings");
	refused(OLLAMA_CHAT, "{\"options\":{\"stop\":[\"a\",1]}}", 400,
	    "option \"stop\" must be an array of strings");
}

ATF_TC_WITHOUT_HEAD(images);
ATF_TC_BODY(images, tc)
{
	/* the images first, then the text; the type from the bytes */
	takes(OLLAMA_CHAT, "{\"model\":\"llava\",\"stream\":false,"
	    "\"messages\":[{\"role\":\"user\",\"content\":\"what is this?\","
	    "\"images\":[\"" PNG "\",\"" JPEG "\"]}]}", CHATR,
	    "{\"model\":\"llava\",\"messages\":[{\"role\":\"user\",\"content\":"
	    "[{\"type\":\"image_url\",\"image_url\":{\"url\":"
	    "\"data:image/png;base64," PNG "\"}},{\"type\":\"image_url\","
	    "\"image_url\":{\"url\":\"data:image/jpeg;base64," JPEG "\"}},"
	    "{\"type\":\"text\",\"text\":\"what is this?\"}]}],"
	    "\"stream\":false}");
	/* no text: the images alone; no images: the text alone */
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"stream\":false,\"messages\":"
	    "[{\"role\":\"user\",\"images\":[\"" GIF "\",\"" WEBP "\",\"" BMP
	    "\"]},{\"role\":\"user\",\"content\":\"x\",\"images\":[]}]}", CHATR,
	    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
	    "[{\"type\":\"image_url\",\"image_url\":{\"url\":"
	    "\"data:image/gif;base64," GIF "\"}},{\"type\":\"image_url\","
	    "\"image_url\":{\"url\":\"data:image/webp;base64," WEBP "\"}},"
	    "{\"type\":\"image_url\",\"image_url\":{\"url\":"
	    "\"data:image/bmp;base64," BMP "\"}}]},{\"role\":\"user\","
	    "\"content\":\"x\"}],\"stream\":false}");

	/* what is not base64 as Go reads it, or no image */
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"user\",\"images\":"
	    "[\"" PNG "\",\"data:image/png;base64," PNG "\"]}]}", 400,
	    "messages[0] images[1] is not a base64 PNG, JPEG, GIF, WebP or BMP "
	    "image");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"user\",\"images\":"
	    "[\"iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB\\n\"]}]}", 400,
	    "messages[0] images[0] is not a base64 PNG, JPEG, GIF, WebP or BMP "
	    "image");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"user\",\"images\":"
	    "[\"iVBORw0KGgoAAAANSUhEUgAAAAEAAAAB=\"]}]}", 400,
	    "messages[0] images[0] is not a base64 PNG, JPEG, GIF, WebP or BMP "
	    "image");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"user\",\"images\":"
	    "[\"iVBO=w0KGgoAAAANSUhEUgAAAAEAAAAB\"]}]}", 400,
	    "messages[0] images[0] is not a base64 PNG, JPEG, GIF, WebP or BMP "
	    "image");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"user\",\"images\":"
	    "[\"aGVsbG8gd29ybGQsIGhlbGxvIHdvcmxk\"]}]}", 400,
	    "messages[0] images[0] is not a base64 PNG, JPEG, GIF, WebP or BMP "
	    "image");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"user\",\"images\":"
	    "[\"iVBORw0K\"]}]}", 400, "messages[0] images[0] is not a base64 "
	    "PNG, JPEG, GIF, WebP or BMP image");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"user\",\"images\":"
	    "[\"\"]}]}", 400, "messages[0] images[0] is not a base64 PNG, "
	    "JPEG, GIF, WebP or BMP image");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"user\",\"images\":"
	    "[7]}]}", 400, "messages[0] images[0] must be a string");
}

ATF_TC_WITHOUT_HEAD(tools);
ATF_TC_BODY(tools, tc)
{
	/* tools as they are; an assistant's calls as OpenAI's, ids kept or
	 * made; each tool message given the id of the call it answers: in
	 * order, or by its name */
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"stream\":false,\"messages\":["
	    "{\"role\":\"user\",\"content\":\"weather?\"},"
	    "{\"role\":\"assistant\",\"content\":\"\",\"tool_calls\":["
	    "{\"function\":{\"name\":\"get_weather\",\"arguments\":{\"city\":"
	    "\"Toronto\",\"unit\":\"c\"}}},"
	    "{\"id\":\"call_x\",\"function\":{\"index\":1,\"name\":\"get_time\","
	    "\"arguments\":{}}},"
	    "{\"function\":{\"name\":\"get_news\"}}]},"
	    "{\"role\":\"tool\",\"content\":\"12:00\",\"tool_name\":\"get_time\"},"
	    "{\"role\":\"tool\",\"content\":\"11 C\",\"tool_name\":"
	    "\"get_weather\"},"
	    "{\"role\":\"tool\",\"content\":\"none\"},"
	    "{\"role\":\"tool\",\"content\":\"?\",\"tool_call_id\":\"own\"},"
	    "{\"role\":\"tool\",\"content\":\"?\",\"tool_name\":\"nothing\"}],"
	    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
	    "\"get_weather\",\"description\":\"The weather\",\"parameters\":"
	    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
	    "\"string\"}},\"required\":[\"city\"]}}}]}", CHATR,
	    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":"
	    "\"weather?\"},{\"role\":\"assistant\",\"content\":\"\","
	    "\"tool_calls\":[{\"id\":\"call_1_0\",\"type\":\"function\","
	    "\"function\":{\"name\":\"get_weather\",\"arguments\":"
	    "\"{\\\"city\\\":\\\"Toronto\\\",\\\"unit\\\":\\\"c\\\"}\"}},"
	    "{\"id\":\"call_x\",\"type\":\"function\",\"function\":{\"name\":"
	    "\"get_time\",\"arguments\":\"{}\"}},{\"id\":\"call_1_2\","
	    "\"type\":\"function\",\"function\":{\"name\":\"get_news\","
	    "\"arguments\":\"{}\"}}]},"
	    "{\"role\":\"tool\",\"content\":\"12:00\",\"tool_call_id\":"
	    "\"call_x\"},"
	    "{\"role\":\"tool\",\"content\":\"11 C\",\"tool_call_id\":"
	    "\"call_1_0\"},"
	    "{\"role\":\"tool\",\"content\":\"none\",\"tool_call_id\":"
	    "\"call_x\"},"
	    "{\"role\":\"tool\",\"content\":\"?\",\"tool_call_id\":\"own\"},"
	    "{\"role\":\"tool\",\"content\":\"?\"}],\"stream\":false,"
	    "\"tools\":[{\"type\":\"function\",\"function\":{\"name\":"
	    "\"get_weather\",\"description\":\"The weather\",\"parameters\":"
	    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":"
	    "\"string\"}},\"required\":[\"city\"]}}}]}");
	/* no tools: none sent */
	takes(OLLAMA_CHAT, "{\"model\":\"m\",\"stream\":false,\"messages\":"
	    "[{\"role\":\"tool\",\"content\":\"x\",\"tool_name\":\"t\"}],"
	    "\"tools\":[]}", CHATR, "{\"model\":\"m\",\"messages\":[{\"role\":"
	    "\"tool\",\"content\":\"x\"}],\"stream\":false}");

	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"assistant\","
	    "\"tool_calls\":[{\"function\":{\"arguments\":{}}}]}]}", 400,
	    "messages[0].tool_calls[0] must have a function with a name and an "
	    "object of arguments");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"assistant\","
	    "\"tool_calls\":[{\"function\":{\"name\":\"f\",\"arguments\":"
	    "\"{}\"}}]}]}", 400, "messages[0].tool_calls[0] must have a "
	    "function with a name and an object of arguments");
	refused(OLLAMA_CHAT, "{\"messages\":[{\"role\":\"assistant\","
	    "\"tool_calls\":[\"f\"]}]}", 400, "messages[0].tool_calls[0] must "
	    "have a function with a name and an object of arguments");
}

ATF_TC_WITHOUT_HEAD(format_think_logprobs);
ATF_TC_BODY(format_think_logprobs, tc)
{
#define M	"\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]"
#define MB	"{\"model\":\"m\"," M ",\"stream\":false"
	takes(OLLAMA_CHAT, MB ",\"format\":\"json\"}", CHATR, MB
	    ",\"response_format\":{\"type\":\"json_object\"}}");
	takes(OLLAMA_CHAT, MB ",\"format\":{\"type\":\"object\",\"properties\":"
	    "{\"age\":{\"type\":\"integer\"}},\"required\":[\"age\"]}}", CHATR,
	    MB ",\"response_format\":{\"type\":\"json_schema\",\"json_schema\":"
	    "{\"name\":\"format\",\"schema\":{\"type\":\"object\",\"properties\":"
	    "{\"age\":{\"type\":\"integer\"}},\"required\":[\"age\"]}}}}");
	takes(OLLAMA_CHAT, MB ",\"format\":\"\"}", CHATR, MB "}");
	takes(OLLAMA_CHAT, MB ",\"format\":null}", CHATR, MB "}");
	refused(OLLAMA_CHAT, MB ",\"format\":\"yaml\"}", 400,
	    "format must be \"json\" or a JSON schema (an object)");
	refused(OLLAMA_CHAT, MB ",\"format\":[]}", 400,
	    "format must be \"json\" or a JSON schema (an object)");

	takes(OLLAMA_CHAT, MB ",\"think\":true}", CHATR, MB
	    ",\"chat_template_kwargs\":{\"enable_thinking\":true}}");
	takes(OLLAMA_CHAT, MB ",\"think\":false}", CHATR, MB
	    ",\"chat_template_kwargs\":{\"enable_thinking\":false}}");
	takes(OLLAMA_CHAT, MB ",\"think\":\"low\"}", CHATR, MB
	    ",\"chat_template_kwargs\":{\"enable_thinking\":true},"
	    "\"reasoning_effort\":\"low\"}");
	takes(OLLAMA_CHAT, MB ",\"think\":\"medium\"}", CHATR, MB
	    ",\"chat_template_kwargs\":{\"enable_thinking\":true},"
	    "\"reasoning_effort\":\"medium\"}");
	takes(OLLAMA_CHAT, MB ",\"think\":\"max\"}", CHATR, MB
	    ",\"chat_template_kwargs\":{\"enable_thinking\":true},"
	    "\"reasoning_effort\":\"high\"}");
	takes(OLLAMA_CHAT, MB ",\"think\":null}", CHATR, MB "}");
	refused(OLLAMA_CHAT, MB ",\"think\":\"hard\"}", 400, "think must be "
	    "true, false, \"low\", \"medium\", \"high\" or \"max\"");
	refused(OLLAMA_CHAT, MB ",\"think\":1}", 400, "think must be "
	    "true, false, \"low\", \"medium\", \"high\" or \"max\"");

	takes(OLLAMA_CHAT, MB ",\"logprobs\":true,\"top_logprobs\":20}", CHATR,
	    MB ",\"logprobs\":true,\"top_logprobs\":20}");
	takes(OLLAMA_CHAT, MB ",\"logprobs\":true}", CHATR, MB
	    ",\"logprobs\":true}");
	takes(OLLAMA_CHAT, MB ",\"logprobs\":false,\"top_logprobs\":3}", CHATR,
	    MB "}");
	refused(OLLAMA_CHAT, MB ",\"logprobs\":true,\"top_logprobs\":21}", 400,
	    "top_logprobs must be between 0 and 20");
	refused(OLLAMA_CHAT, MB ",\"top_logprobs\":-1}", 400,
	    "top_logprobs must be between 0 and 20");
	refused(OLLAMA_CHAT, MB ",\"top_logprobs\":\"1\"}", 400,
	    "top_logprobs must be between 0 and 20");
#undef M
#undef MB
}

ATF_TC_WITHOUT_HEAD(generate_request);
ATF_TC_BODY(generate_request, tc)
{
	struct ollama_req	 r;

	/* the model's template applies: a chat of system and prompt */
	take(OLLAMA_GENERATE, "{\"model\":\"m\",\"prompt\":\"Why?\",\"system\":"
	    "\"Be brief.\",\"options\":{\"temperature\":0},\"format\":\"json\","
	    "\"think\":false}", CHATR, "{\"model\":\"m\",\"messages\":[{\"role\":"
	    "\"system\",\"content\":\"Be brief.\"},{\"role\":\"user\","
	    "\"content\":\"Why?\"}]," STREAMED ",\"temperature\":0,"
	    "\"response_format\":{\"type\":\"json_object\"},"
	    "\"chat_template_kwargs\":{\"enable_thinking\":false}}", &r);
	ATF_CHECK_EQ(r.api, OLLAMA_GENERATE);
	ATF_CHECK_EQ(r.stream, 1);
	ollama_req_clear(&r);
	takes(OLLAMA_GENERATE, "{\"model\":\"llava\",\"prompt\":\"what?\","
	    "\"images\":[\"" PNG "\"],\"stream\":false,\"raw\":false,"
	    "\"context\":[],\"template\":\"\",\"suffix\":\"\"}", CHATR,
	    "{\"model\":\"llava\",\"messages\":[{\"role\":\"user\",\"content\":"
	    "[{\"type\":\"image_url\",\"image_url\":{\"url\":"
	    "\"data:image/png;base64," PNG "\"}},{\"type\":\"text\",\"text\":"
	    "\"what?\"}]}],\"stream\":false}");

	/* raw: the prompt as it is to completions; think means nothing */
	takes(OLLAMA_GENERATE, "{\"model\":\"m\",\"prompt\":\"[INST] hi "
	    "[/INST]\",\"raw\":true,\"think\":true,\"options\":{\"num_predict\":"
	    "8}}", "/v1/completions", "{\"model\":\"m\",\"prompt\":\"[INST] hi "
	    "[/INST]\"," STREAMED ",\"max_tokens\":8}");

	/* no prompt: load only, images or not */
	take(OLLAMA_GENERATE, "{\"model\":\"m\"}", CHATR, NULL, &r);
	ATF_CHECK_EQ(r.load, 1);
	ollama_req_clear(&r);
	take(OLLAMA_GENERATE, "{\"model\":\"m\",\"images\":[\"" PNG "\"],"
	    "\"keep_alive\":\"0\"}", CHATR, NULL, &r);
	ATF_CHECK_EQ(r.load, 1);
	ATF_CHECK_EQ(r.keep, OLLAMA_KEEP_FOR);
	ATF_CHECK_EQ(r.keep_ms, 0);
	ollama_req_clear(&r);

	refused(OLLAMA_GENERATE, "{\"prompt\":\"def f(\",\"suffix\":\"return\"}",
	    400, "suffix is not translated: the model server's completions "
	    "route does not fill in the middle");
	refused(OLLAMA_GENERATE, "{\"prompt\":\"x\",\"template\":\"{{ .Prompt "
	    "}}\"}", 400, "template is not translated: the model server "
	    "applies the model's own");
	refused(OLLAMA_GENERATE, "{\"prompt\":\"x\",\"context\":[1,2,3]}", 400,
	    "context is not translated: agency keeps no context; send the "
	    "conversation to /api/chat");
	refused(OLLAMA_GENERATE, "{\"prompt\":\"x\",\"raw\":true,\"system\":"
	    "\"s\"}", 400, "raw mode does not take a system message");
	refused(OLLAMA_GENERATE, "{\"prompt\":\"x\",\"raw\":true,\"images\":"
	    "[\"" PNG "\"]}", 400, "raw mode does not take images: it goes to "
	    "the completions route");
	refused(OLLAMA_GENERATE, "{\"prompt\":\"x\",\"raw\":true,\"logprobs\":"
	    "true}", 400, "logprobs are not translated for a raw generate");
	refused(OLLAMA_GENERATE, "{\"prompt\":1}", 400,
	    "the field 'prompt' must be a string");
	refused(OLLAMA_GENERATE, "{\"prompt\":\"x\",\"raw\":\"yes\"}", 400,
	    "the field 'raw' must be a boolean");
	refused(OLLAMA_GENERATE, "{\"prompt\":\"x\",\"context\":{}}", 400,
	    "the field 'context' must be an array");
	refused(OLLAMA_GENERATE, "{\"prompt\":\"x\",\"images\":[\"x\"]}", 400,
	    "the prompt's images[0] is not a base64 PNG, JPEG, GIF, WebP or "
	    "BMP image");
}

ATF_TC_WITHOUT_HEAD(embed_request);
ATF_TC_BODY(embed_request, tc)
{
	struct ollama_req	 r;

	take(OLLAMA_EMBED, "{\"model\":\"all-minilm\",\"input\":\"Why?\"}",
	    "/v1/embeddings", "{\"model\":\"all-minilm\",\"input\":\"Why?\"}",
	    &r);
	ATF_CHECK_EQ(r.stream, 0);
	ATF_CHECK_EQ(r.dimensions, 0);
	ollama_req_clear(&r);
	/* dimensions are agency's to cut, never sent; truncate and the
	 * options read, not sent */
	take(OLLAMA_EMBED, "{\"model\":\"e\",\"input\":[\"a\",\"\"],"
	    "\"dimensions\":256.7,\"truncate\":false,\"options\":{\"num_ctx\":"
	    "512},\"keep_alive\":\"1h\"}", "/v1/embeddings",
	    "{\"model\":\"e\",\"input\":[\"a\",\"\"]}", &r);
	ATF_CHECK_EQ(r.dimensions, 256);
	ATF_CHECK_EQ(r.keep, OLLAMA_KEEP_FOR);
	ATF_CHECK_EQ(r.keep_ms, 3600000);
	ollama_req_clear(&r);
	take(OLLAMA_EMBED, "{\"model\":\"e\",\"input\":\"a\",\"dimensions\":"
	    "-4}", "/v1/embeddings", "{\"model\":\"e\",\"input\":\"a\"}", &r);
	ATF_CHECK_EQ(r.dimensions, 0);
	ollama_req_clear(&r);
	/* nothing to embed: load only */
	take(OLLAMA_EMBED, "{\"model\":\"e\",\"input\":\"\"}", "/v1/embeddings",
	    NULL, &r);
	ATF_CHECK_EQ(r.load, 1);
	ollama_req_clear(&r);
	take(OLLAMA_EMBED, "{\"model\":\"e\",\"input\":[]}", "/v1/embeddings",
	    NULL, &r);
	ATF_CHECK_EQ(r.load, 1);
	ollama_req_clear(&r);
	take(OLLAMA_EMBED, "{\"model\":\"e\"}", "/v1/embeddings", NULL, &r);
	ATF_CHECK_EQ(r.load, 1);
	ollama_req_clear(&r);

	refused(OLLAMA_EMBED, "{\"input\":7}", 400,
	    "input must be a string or an array of strings");
	refused(OLLAMA_EMBED, "{\"input\":[\"a\",[\"b\"]]}", 400,
	    "input must be a string or an array of strings");
	refused(OLLAMA_EMBED, "{\"input\":\"a\",\"dimensions\":\"8\"}", 400,
	    "the field 'dimensions' must be a number");
	refused(OLLAMA_EMBED, "{\"input\":\"a\",\"dimensions\":1e99}", 400,
	    "the field 'dimensions' must be an integer");
	refused(OLLAMA_EMBED, "{\"input\":\"a\",\"truncate\":\"no\"}", 400,
	    "the field 'truncate' must be a boolean");
	refused(OLLAMA_EMBED, "{\"input\":\"a\",\"options\":{\"num_ctx\":"
	    "\"1\"}}", 400, "option \"num_ctx\" must be an integer");

	/* the older route */
	take(OLLAMA_EMBEDDINGS, "{\"model\":\"e\",\"prompt\":\"Here is an "
	    "article\",\"options\":{\"temperature\":1}}", "/v1/embeddings",
	    "{\"model\":\"e\",\"input\":\"Here is an article\"}", &r);
	ATF_CHECK_EQ(r.api, OLLAMA_EMBEDDINGS);
	ATF_CHECK_EQ(r.load, 0);
	ollama_req_clear(&r);
	take(OLLAMA_EMBEDDINGS, "{\"model\":\"e\",\"prompt\":\"\"}",
	    "/v1/embeddings", NULL, &r);
	ATF_CHECK_EQ(r.load, 1);
	ollama_req_clear(&r);
	refused(OLLAMA_EMBEDDINGS, "{\"prompt\":[\"a\"]}", 400,
	    "the field 'prompt' must be a string");
}

/* keep_alive's value, through a request and alone. */
static void
keep(const char *v, int want, int64_t ms)
{
	struct ollama_req	 r;
	char			 b[256];

	(void)snprintf(b, sizeof(b), "{\"model\":\"m\",\"keep_alive\":%s}", v);
	take(OLLAMA_CHAT, b, CHATR, NULL, &r);
	if (r.keep != want || r.keep_ms != ms)
		atf_tc_fail("keep_alive %s: %d %lld, want %d %lld", v, r.keep,
		    (long long)r.keep_ms, want, (long long)ms);
	ollama_req_clear(&r);
}

ATF_TC_WITHOUT_HEAD(keep_alive);
ATF_TC_BODY(keep_alive, tc)
{
	static const char	*bad[] = { "\"5\"", "\"\"", "\"m\"", "\"5x\"",
	    "\"1h30\"", "\"-\"", "\"1..5s\"", "\".s\"", "true", "[]", "{}",
	    "\"99999999999h\"", "1e300" };
	size_t			 i;
	char			 b[128];

	keep("null", OLLAMA_KEEP_DEFAULT, 0);
	keep("0", OLLAMA_KEEP_FOR, 0);
	keep("\"0\"", OLLAMA_KEEP_FOR, 0);
	keep("\"0s\"", OLLAMA_KEEP_FOR, 0);
	keep("\"-0s\"", OLLAMA_KEEP_FOR, 0);
	keep("300", OLLAMA_KEEP_FOR, 300000);
	keep("1.5", OLLAMA_KEEP_FOR, 1500);
	keep("\"5m\"", OLLAMA_KEEP_FOR, 300000);
	keep("\"+5m\"", OLLAMA_KEEP_FOR, 300000);
	keep("\"1h30m\"", OLLAMA_KEEP_FOR, 5400000);
	keep("\"1.5h\"", OLLAMA_KEEP_FOR, 5400000);
	keep("\".5s\"", OLLAMA_KEEP_FOR, 500);
	keep("\"250ms\"", OLLAMA_KEEP_FOR, 250);
	keep("\"1m1ms\"", OLLAMA_KEEP_FOR, 60001);
	keep("\"2000us\"", OLLAMA_KEEP_FOR, 2);
	keep("\"2000\\u00b5s\"", OLLAMA_KEEP_FOR, 2);
	keep("\"3000000ns\"", OLLAMA_KEEP_FOR, 3);
	keep("-1", OLLAMA_KEEP_FOREVER, 0);
	keep("-0.5", OLLAMA_KEEP_FOREVER, 0);
	keep("\"-1m\"", OLLAMA_KEEP_FOREVER, 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		(void)snprintf(b, sizeof(b), "{\"keep_alive\":%s}", bad[i]);
		refused(OLLAMA_CHAT, b, 400, "keep_alive must be a number of "
		    "seconds or a duration such as \"5m\"");
	}
}

/* --- answers ------------------------------------------------------ */

/* A request of api, for its answer. */
static void
req_of(struct ollama_req *r, int api, int stream, int64_t dimensions)
{
	memset(r, 0, sizeof(*r));
	r->api = api;
	r->stream = stream;
	r->dimensions = dimensions;
}

static char *
text_of(struct buf *out)
{
	char	*t;

	ATF_REQUIRE((t = malloc(out->len + 1)) != NULL);
	memcpy(t, out->b, out->len);
	t[out->len] = '\0';
	buf_release(out, 0);
	return (t);
}

/* The lines of an SSE body fed in pieces of k bytes (0: whole) at NOW,
 * and its end when end is set. */
static char *
fed(const struct ollama_req *r, const char *model, const char *sse,
    size_t k, int end)
{
	struct ollama_stream	 st;
	struct buf		 out = { 0 };
	size_t			 i, n = strlen(sse), m;
	int			 over = 0;

	ollama_stream_init(&st, r, model, &times);
	if (k == 0)
		k = n;
	for (i = 0; i < n; i += k) {
		m = n - i < k ? n - i : k;
		if (over)
			ATF_CHECK_EQ(ollama_stream_feed(&st, sse + i, m, NOW,
			    &out), -1);
		else if (ollama_stream_feed(&st, sse + i, m, NOW, &out) == -1)
			over = 1;
	}
	if (end)
		ollama_stream_end(&st, NOW, &out);
	ollama_stream_free(&st);
	return (text_of(&out));
}

static int
feeds(struct ollama_stream *st, const char *s, int64_t now, struct buf *out)
{
	return (ollama_stream_feed(st, s, strlen(s), now, out));
}

/* Every way of cutting sse in pieces gives want. */
static void
streams(int api, const char *sse, const char *want)
{
	struct ollama_req	 r;
	size_t			 k, n = strlen(sse);
	char			*got;

	req_of(&r, api, 1, 0);
	for (k = 0; k <= n; k = k < 64 ? k + 1 : k * 2) {
		got = fed(&r, "qwen", sse, k, 1);
		if (strcmp(got, want) != 0)
			atf_tc_fail("in pieces of %zu:\n%s\nwant:\n%s", k, got,
			    want);
		free(got);
	}
}

/* A whole answer (stream false, or embeddings). */
static char *
whole(int api, int64_t dimensions, const char *model, const char *body,
    int *rc)
{
	struct ollama_req	 r;
	struct ollama_stream	 st;
	struct buf		 out = { 0 };

	req_of(&r, api, 0, dimensions);
	ollama_stream_init(&st, &r, model, &times);
	*rc = ollama_answer(&st, body, strlen(body), NOW, &out);
	ollama_stream_free(&st);
	return (text_of(&out));
}

static void
wholes(int api, int64_t dimensions, const char *body, int wantrc,
    const char *want)
{
	char	*got;
	int	 rc;

	got = whole(api, dimensions, "qwen", body, &rc);
	if (rc != wantrc || strcmp(got, want) != 0)
		atf_tc_fail("%s\n  gave %d %s\n  want %d %s", body, rc, got,
		    wantrc, want);
	free(got);
}

/* the head of a line at NOW */
#define LS	"{\"model\":\"qwen\",\"created_at\":\"2023-11-14T22:13:21Z\","
#define CL(x)	LS "\"message\":{\"role\":\"assistant\",\"content\":\"" x \
		"\"},\"done\":false}\n"
#define GL(x)	LS "\"response\":\"" x "\",\"done\":false}\n"
#define DONE	"data: [DONE]\n\n"
/* what timings and usage give, and what the times alone give */
#define TIMED	",\"total_duration\":1000000000,\"load_duration\":250000000," \
		"\"prompt_eval_count\":29,\"prompt_eval_duration\":2555000," \
		"\"eval_count\":3,\"eval_duration\":2273000}"
#define UNTIMED	",\"total_duration\":1000000000,\"load_duration\":250000000," \
		"\"prompt_eval_duration\":700000000,\"eval_count\":%d}"

/* llama-server's stream, as it sent it (shared/realserver, tiny-a) */
static const char	 llama_chat[] =
    "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":"
    "{\"role\":\"assistant\",\"content\":null}}],\"created\":1796287010,"
    "\"id\":\"chatcmpl-9dVxfLI94JjzZCxI6iGZNYtTxiQWkPYR\",\"model\":"
    "\"/work/shared/realserver/tiny-a.gguf\",\"system_fingerprint\":"
    "\"b0-unknown\",\"object\":\"chat.completion.chunk\"}\n\n"
    "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":"
    "{\"content\":\" unnecess\"}}],\"created\":1796287010,\"id\":"
    "\"chatcmpl-9dVxfLI94JjzZCxI6iGZNYtTxiQWkPYR\",\"model\":"
    "\"/work/shared/realserver/tiny-a.gguf\",\"system_fingerprint\":"
    "\"b0-unknown\",\"object\":\"chat.completion.chunk\"}\n\n"
    "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":"
    "{\"content\":\" Blood\"}}],\"created\":1796287010}\n\n"
    "data: {\"choices\":[{\"finish_reason\":null,\"index\":0,\"delta\":"
    "{\"content\":\"\xd0\xb4\xd0\xb0\xd1\x85\"}}],\"created\":1796287010}\n\n"
    "data: {\"choices\":[{\"finish_reason\":\"length\",\"index\":0,"
    "\"delta\":{}}],\"created\":1796287010}\n\n"
    "data: {\"choices\":[],\"created\":1796287010,\"id\":"
    "\"chatcmpl-9dVxfLI94JjzZCxI6iGZNYtTxiQWkPYR\",\"object\":"
    "\"chat.completion.chunk\",\"usage\":{\"completion_tokens\":3,"
    "\"prompt_tokens\":29,\"total_tokens\":32,\"prompt_tokens_details\":"
    "{\"cached_tokens\":0}},\"timings\":{\"cache_n\":0,\"prompt_n\":29,"
    "\"prompt_ms\":2.555,\"prompt_per_token_ms\":0.08810344827586207,"
    "\"prompt_per_second\":11350.293542074363,\"predicted_n\":3,"
    "\"predicted_ms\":2.273,\"predicted_per_token_ms\":1.1365,"
    "\"predicted_per_second\":879.8944126704795}}\n\n" DONE;

ATF_TC_WITHOUT_HEAD(stream_chat);
ATF_TC_BODY(stream_chat, tc)
{
	char	 want[1024];

	/* a line a token, then the last with the server's numbers */
	streams(OLLAMA_CHAT, llama_chat, CL(" unnecess") CL(" Blood")
	    CL("\xd0\xb4\xd0\xb0\xd1\x85") LS "\"message\":{\"role\":"
	    "\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":"
	    "\"length\"" TIMED "\n");

	/* CRLF and CR line ends, comments, "data:" without its space,
	 * other fields, an event of two data lines, escapes as written;
	 * no usage nor timings: the chunks counted, the times used */
	(void)snprintf(want, sizeof(want), CL("a\\\"b\\u00e9\\n") CL("c")
	    CL("d") LS "\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
	    "\"done\":true,\"done_reason\":\"stop\"" UNTIMED "\n", 3);
	streams(OLLAMA_CHAT, ": ping\r\n\r\nid: 1\r\nevent: message\r\n"
	    "retry: 5\r\ndata:{\"choices\":[{\"delta\":{\"content\":"
	    "\"a\\\"b\\u00e9\\n\"}}]}\r\n\r\ndata: {\"choices\":[{\"delta\":\r"
	    "data: {\"content\":\"c\"}}]}\r\rdata: {\"choices\":[{\"delta\":"
	    "{\"content\":\"d\"},\"finish_reason\":\"stop\"}]}\n\n" DONE, want);

	/* an event of two data lines ended by CRLF; the strings of fields
	 * passed over read to their end: escaped quotes and backslashes,
	 * one at the string's start */
	(void)snprintf(want, sizeof(want), CL("e") CL("f") LS "\"message\":"
	    "{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,"
	    "\"done_reason\":\"stop\"" UNTIMED "\n", 2);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":\r\ndata: "
	    "{\"content\":\"e\"}}]}\r\n\r\ndata: {\"id\":\"\\\\\","
	    "\"x\\\"y\":\"\\\\\\\"\\\\\",\"choices\":[{\"delta\":"
	    "{\"content\":\"f\"}}]}\n\n" DONE, want);

	/* the end comes with the body's end, no [DONE] */
	(void)snprintf(want, sizeof(want), CL("x") LS "\"message\":{\"role\":"
	    "\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":"
	    "\"tool_calls_x\"" UNTIMED "\n", 1);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"x\"},\"finish_reason\":\"tool_calls_x\"}]}\n\n", want);
	/* ... even without its last blank line, or line end */
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"x\"},\"finish_reason\":\"tool_calls_x\"}]}", want);
	/* [DONE] with no finish_reason: stop */
	(void)snprintf(want, sizeof(want), CL("x") LS "\"message\":{\"role\":"
	    "\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":"
	    "\"stop\"" UNTIMED "\n", 1);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"x\"}}]}\n\n" DONE "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"after\"}}]}\n\n", want);
	/* an odd finish_reason: stop */
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"x\"},\"finish_reason\":\"St\\u006fp\"}]}\n\n" DONE, want);
}

ATF_TC_WITHOUT_HEAD(stream_thinking);
ATF_TC_BODY(stream_thinking, tc)
{
	char	 want[1024];

	/* reasoning_content (llama-server, older vLLM) or reasoning */
	(void)snprintf(want, sizeof(want),
	    LS "\"message\":{\"role\":\"assistant\",\"content\":\"\","
	    "\"thinking\":\"Hm\"},\"done\":false}\n"
	    LS "\"message\":{\"role\":\"assistant\",\"content\":\"4\","
	    "\"thinking\":\".\"},\"done\":false}\n"
	    LS "\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
	    "\"done\":true,\"done_reason\":\"stop\"" UNTIMED "\n", 2);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":null,"
	    "\"reasoning_content\":\"Hm\"}}]}\n\ndata: {\"choices\":[{\"delta\":"
	    "{\"content\":\"4\",\"reasoning\":\".\"},\"finish_reason\":"
	    "\"stop\"}]}\n\n" DONE, want);
	/* generate: thinking beside response */
	(void)snprintf(want, sizeof(want),
	    LS "\"response\":\"\",\"thinking\":\"Hm\",\"done\":false}\n"
	    LS "\"response\":\"\",\"done\":true,\"done_reason\":\"stop\""
	    UNTIMED "\n", 1);
	streams(OLLAMA_GENERATE, "data: {\"choices\":[{\"delta\":"
	    "{\"reasoning_content\":\"Hm\"},\"finish_reason\":\"stop\"}]}\n\n"
	    DONE, want);
}

ATF_TC_WITHOUT_HEAD(stream_generate);
ATF_TC_BODY(stream_generate, tc)
{
	char	 want[1024];

	/* completions' chunks (a raw generate), llama-server's */
	streams(OLLAMA_GENERATE, "data: {\"choices\":[{\"text\":\"mond\","
	    "\"index\":0,\"logprobs\":null,\"finish_reason\":null}],\"created\":"
	    "1796287010,\"object\":\"text_completion\"}\n\n"
	    "data: {\"choices\":[{\"text\":\" tak\\u017ce\",\"index\":0,"
	    "\"logprobs\":null,\"finish_reason\":null}]}\n\n"
	    "data: {\"choices\":[{\"text\":\"\",\"index\":0,\"logprobs\":null,"
	    "\"finish_reason\":\"length\"}],\"usage\":{\"completion_tokens\":3,"
	    "\"prompt_tokens\":29,\"total_tokens\":32},\"timings\":{\"prompt_n\":"
	    "1,\"prompt_ms\":2.555,\"predicted_n\":2,\"predicted_ms\":2.273}}"
	    "\n\n" DONE, GL("mond") GL(" tak\\u017ce") LS "\"response\":\"\","
	    "\"done\":true,\"done_reason\":\"length\"" TIMED "\n");
	/* a chat's chunks for a generate */
	(void)snprintf(want, sizeof(want), GL("Hi") LS "\"response\":\"\","
	    "\"done\":true,\"done_reason\":\"stop\"" UNTIMED "\n", 1);
	streams(OLLAMA_GENERATE, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"Hi\"}}]}\n\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":"
	    "\"stop\"}]}\n\n" DONE, want);
}

/* A stream of tool call pieces: each call, complete, a line. */
#define TC(id, i, name, args) LS "\"message\":{\"role\":\"assistant\"," \
		"\"content\":\"\",\"tool_calls\":[{" id "\"function\":" \
		"{\"index\":" #i ",\"name\":\"" name "\",\"arguments\":" args \
		"}}]},\"done\":false}\n"
#define PIECE(x) "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":" \
		"[" x "]}}]}\n\n"

ATF_TC_WITHOUT_HEAD(stream_tools);
ATF_TC_BODY(stream_tools, tc)
{
	char	 want[2048];

	/* OpenAI's pieces: the name first, the arguments in pieces; the
	 * next index completes one, finish_reason the last */
	(void)snprintf(want, sizeof(want),
	    TC("\"id\":\"call_1\",", 0, "get_weather",
	    "{\"city\":\"T\xc3\xb6kyo\",\"days\":[1,2],\"x\":{}}")
	    TC("\"id\":\"call_2\",", 1, "get_time", "{}")
	    LS "\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
	    "\"done\":true,\"done_reason\":\"stop\"" UNTIMED "\n", 4);
	streams(OLLAMA_CHAT,
	    PIECE("{\"index\":0,\"id\":\"call_1\",\"type\":\"function\","
	    "\"function\":{\"name\":\"get_weather\",\"arguments\":\"\"}}")
	    PIECE("{\"index\":0,\"function\":{\"arguments\":\"{\\\"city\\\": "
	    "\\\"T\\u00f6k\"}}")
	    PIECE("{\"index\":0,\"function\":{\"arguments\":\"yo\\\", "
	    "\\\"days\\\": [1, 2],\\n \\\"x\\\": {}}\"}}")
	    PIECE("{\"index\":1,\"id\":\"call_2\",\"function\":{\"name\":"
	    "\"get_time\",\"arguments\":\"\"}}")
	    "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
	    "\"tool_calls\"}]}\n\n" DONE, want);

	/* no index: a piece with an id of its own is the next call; two
	 * calls in one chunk; arguments whole; a surrogate pair of the
	 * string read, the arguments' own escapes kept */
	(void)snprintf(want, sizeof(want),
	    TC("\"id\":\"a\",", 0, "f", "{\"s\":\"\xf0\x9f\x98\x80\","
	    "\"t\":\"\\ud83d\\ude00\"}")
	    TC("\"id\":\"b\",", 1, "g", "{\"n\":1}")
	    TC("", 2, "h", "{}")
	    LS "\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
	    "\"done\":true,\"done_reason\":\"stop\"" UNTIMED "\n", 2);
	streams(OLLAMA_CHAT,
	    PIECE("{\"id\":\"a\",\"function\":{\"name\":\"f\",\"arguments\":"
	    "\"{\\\"s\\\":\\\"\\ud83d\\ude00\\\", \\\"t\\\":\\\""
	    "\\\\ud83d\\\\ude00\\\"}\"}},{\"id\":\"b\","
	    "\"function\":{\"name\":\"g\",\"arguments\":\"{\\\"n\\\"\"}}")
	    PIECE("{\"function\":{\"arguments\":\":1}\"}},"
	    "{\"index\":2,\"function\":{\"name\":\"h\"}}") DONE, want);

	/* text, then calls: the text's lines first */
	(void)snprintf(want, sizeof(want), CL("Let me look.")
	    TC("", 0, "f", "{}") LS "\"message\":{\"role\":\"assistant\","
	    "\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\""
	    UNTIMED "\n", 2);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"Let me look.\"}}]}\n\n" PIECE("{\"index\":0,\"function\":"
	    "{\"name\":\"f\",\"arguments\":\" \"}}") DONE, want);

	/* what ends the stream with an error line */
	streams(OLLAMA_CHAT, PIECE("{\"index\":1,\"function\":{\"name\":\"f\","
	    "\"arguments\":\"{}\"}}") PIECE("{\"index\":0,\"function\":"
	    "{\"name\":\"g\",\"arguments\":\"{}\"}}") DONE,
	    "{\"error\":\"the model server's tool calls are interleaved\"}\n");
	streams(OLLAMA_CHAT, PIECE("{\"index\":0,\"function\":{\"name\":\"f\","
	    "\"arguments\":\"{}\"}}") "data: {\"choices\":[{\"delta\":{},"
	    "\"finish_reason\":\"tool_calls\"}]}\n\n" PIECE("{\"index\":0,"
	    "\"function\":{\"arguments\":\"{}\"}}") DONE,
	    TC("", 0, "f", "{}") "{\"error\":\"the model server's tool calls "
	    "are interleaved\"}\n");
	streams(OLLAMA_CHAT, PIECE("{\"index\":0,\"function\":{\"name\":\"f\","
	    "\"arguments\":\"[1]\"}}") DONE, "{\"error\":\"the model server's "
	    "tool call arguments are not a JSON object\"}\n");
	streams(OLLAMA_CHAT, PIECE("{\"index\":0,\"function\":{\"name\":\"f\","
	    "\"arguments\":\"{\\\"a\\\":\"}}") DONE, "{\"error\":\"the model "
	    "server's tool call arguments are not a JSON object\"}\n");
	streams(OLLAMA_CHAT, PIECE("{\"index\":0,\"function\":{\"name\":\"f\","
	    "\"arguments\":\"{} {}\"}}") DONE, "{\"error\":\"the model "
	    "server's tool call arguments are not a JSON object\"}\n");
	/* (a lone surrogate escaped in the arguments is JSON: as it is) */
	(void)snprintf(want, sizeof(want), TC("", 0, "f", "{\"s\":\"\\ud83d\"}")
	    LS "\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
	    "\"done\":true,\"done_reason\":\"stop\"" UNTIMED "\n", 1);
	streams(OLLAMA_CHAT, PIECE("{\"index\":0,\"function\":{\"name\":\"f\","
	    "\"arguments\":\"{\\\"s\\\":\\\"\\\\ud83d\\\"}\"}}") DONE, want);
	streams(OLLAMA_CHAT, PIECE("{\"index\":0,\"function\":{\"name\":\"f\","
	    "\"arguments\":\"\\ud83d\"}}") DONE, "{\"error\":\"the model "
	    "server's tool call arguments are too long or not text\"}\n");
	/* generate asked for no tools: none given */
	(void)snprintf(want, sizeof(want), LS "\"response\":\"\",\"done\":"
	    "true,\"done_reason\":\"stop\"" UNTIMED "\n", 1);
	streams(OLLAMA_GENERATE, PIECE("{\"index\":0,\"function\":{\"name\":"
	    "\"f\",\"arguments\":\"{}\"}}") DONE, want);
}

ATF_TC_WITHOUT_HEAD(stream_tool_bounds);
ATF_TC_BODY(stream_tool_bounds, tc)
{
	struct ollama_req	 r;
	char			*sse, *got, name[OLLAMA_ID_MAX + 2];
	size_t			 i, n, at;

	req_of(&r, OLLAMA_CHAT, 1, 0);
	/* arguments up to OLLAMA_ARGS_MAX, in pieces of 1000 bytes */
	n = OLLAMA_ARGS_MAX / 1000 + 2;
	ATF_REQUIRE((sse = malloc(n * 1200 + 256)) != NULL);
	sse[0] = '\0';
	(void)strcat(sse, PIECE("{\"index\":0,\"function\":{\"name\":\"f\","
	    "\"arguments\":\"{\\\"a\\\":\\\"\"}}"));
	at = strlen(sse);
	for (i = 0; i < n; i++) {
		at += (size_t)sprintf(sse + at, "data: {\"choices\":[{\"delta\":"
		    "{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
		    "\"");
		memset(sse + at, 'x', 1000);
		at += 1000;
		at += (size_t)sprintf(sse + at, "\"}}]}}]}\n\n");
	}
	got = fed(&r, "qwen", sse, 0, 1);
	ATF_CHECK_STREQ(got, "{\"error\":\"the model server's tool call "
	    "arguments are too long or not text\"}\n");
	free(got);
	free(sse);

	/* an id or a name too long to hold */
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	ATF_REQUIRE(asprintf(&sse, PIECE("{\"index\":0,\"function\":{\"name\":"
	    "\"%s\"}}"), name) != -1);
	got = fed(&r, "qwen", sse, 0, 1);
	ATF_CHECK_STREQ(got, "{\"error\":\"the model server's tool call has an "
	    "id or a name that is too long\"}\n");
	free(got);
	free(sse);
	/* one byte less fits */
	name[sizeof(name) - 2] = '\0';
	ATF_REQUIRE(asprintf(&sse, PIECE("{\"index\":0,\"function\":{\"name\":"
	    "\"%s\"}}") DONE, name) != -1);
	got = fed(&r, "qwen", sse, 0, 1);
	ATF_CHECK(strstr(got, "\"done\":true") != NULL);
	free(got);
	free(sse);
}

ATF_TC_WITHOUT_HEAD(stream_logprobs);
ATF_TC_BODY(stream_logprobs, tc)
{
	char	 want[1024];

	(void)snprintf(want, sizeof(want),
	    LS "\"message\":{\"role\":\"assistant\",\"content\":\"Hi\"},"
	    "\"done\":false,\"logprobs\":[{\"token\":\"Hi\",\"logprob\":-0.5,"
	    "\"bytes\":[72,105],\"top_logprobs\":[{\"token\":\"Hi\","
	    "\"logprob\":-0.5}]}]}\n" LS "\"message\":{\"role\":\"assistant\","
	    "\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\""
	    UNTIMED "\n", 1);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"Hi\"},\"logprobs\":{\"content\":[{\"token\": \"Hi\", \"logprob\": "
	    "-0.5, \"bytes\": [72, 105], \"top_logprobs\": [{\"token\": \"Hi\", "
	    "\"logprob\": -0.5}]}]}}]}\n\n" DONE, want);
}

ATF_TC_WITHOUT_HEAD(stream_errors);
ATF_TC_BODY(stream_errors, tc)
{
	struct ollama_req	 r;
	struct ollama_stream	 st;
	struct buf		 out = { 0 };
	char			*got, *big;

	/* the server's error, as it wrote it, after what came before */
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"x\"}}]}\n\ndata: {\"error\":{\"code\":500,\"message\":\"the "
	    "\\\"slot\\\" failed\",\"type\":\"server_error\"}}\n\n" DONE,
	    CL("x") "{\"error\":\"the \\\"slot\\\" failed\"}\n");
	streams(OLLAMA_CHAT, "data: {\"error\":\"bad\"}\n\n", "{\"error\":"
	    "\"bad\"}\n");
	streams(OLLAMA_CHAT, "event: error\ndata: {\"message\":\"m\"}\n\n",
	    "{\"error\":\"the model server failed\"}\n");
	streams(OLLAMA_CHAT, "event: error\ndata: {\"error\":{\"message\":"
	    "\"busy\"}}\n\n", "{\"error\":\"busy\"}\n");
	streams(OLLAMA_CHAT, "error: {\"code\":500,\"message\":\"out\"}\n\n",
	    "{\"error\":\"the model server failed\"}\n");
	streams(OLLAMA_CHAT, "error: {\"error\":{\"code\":500,\"message\":"
	    "\"out\"}}\n\n", "{\"error\":\"out\"}\n");
	streams(OLLAMA_CHAT, "data: {\"error\":{\"code\":500}}\n\n",
	    "{\"error\":\"the model server failed\"}\n");
	/* "error": null is none */
	streams(OLLAMA_CHAT, "data: {\"error\":null,\"choices\":[{\"delta\":"
	    "{\"content\":\"x\"},\"finish_reason\":\"length\"}],\"usage\":"
	    "{\"prompt_tokens\":29,\"completion_tokens\":3},\"timings\":"
	    "{\"prompt_ms\":2.555,\"predicted_ms\":2.273}}\n\n" DONE,
	    CL("x") LS "\"message\":{\"role\":\"assistant\",\"content\":\"\"},"
	    "\"done\":true,\"done_reason\":\"length\"" TIMED "\n");

	/* not JSON as it must be: the stream ends there */
#define BAD	"{\"error\":\"the model server's stream is not JSON as it " \
		"should be\"}\n"
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"x\"}}]}\n\ndata: {\"choices\":[}\n\n" DONE, CL("x") BAD);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"a\tb\"}}]}\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"\xc3\x28\"}}]}\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"\xed\xa0\x80\"}}]}\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"\\x\"}}]}\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"\\u12g4\"}}]}\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"x\"}}]} x\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: {\"choices\":[1,]}\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: {\"a\":01}\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: {\"a\":tru}\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: {\"a\" 1}\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: {\"choices\":{}}\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: [1]\n\n" DONE, BAD);
	streams(OLLAMA_CHAT, "data: \n\n" DONE, BAD);
	/* too deep */
	ATF_REQUIRE((big = malloc(2 * OLLAMA_DEPTH + 64)) != NULL);
	(void)strcpy(big, "data: ");
	memset(big + 6, '[', OLLAMA_DEPTH);
	memset(big + 6 + OLLAMA_DEPTH, ']', OLLAMA_DEPTH);
	(void)strcpy(big + 6 + 2 * OLLAMA_DEPTH, "\n\n");
	streams(OLLAMA_CHAT, big, BAD);
	big[6] = ' ';
	big[6 + 2 * OLLAMA_DEPTH - 1] = ' ';
	streams(OLLAMA_CHAT, big, BAD);
	memcpy(big + 6, "{\"a\":", 5);
	memset(big + 11, '[', OLLAMA_DEPTH - 2);
	memset(big + 9 + OLLAMA_DEPTH, ']', OLLAMA_DEPTH - 2);
	(void)strcpy(big + 7 + 2 * OLLAMA_DEPTH, "}\n\n" DONE);
	streams(OLLAMA_CHAT, big, LS "\"message\":{\"role\":\"assistant\","
	    "\"content\":\"\"},\"done\":true,\"done_reason\":\"stop\","
	    "\"total_duration\":1000000000,\"load_duration\":250000000}\n");
	free(big);

	/* ended before its end, or failed on agency's side; nothing more
	 * after either */
	streams(OLLAMA_CHAT, "data: {\"choices\":[{\"delta\":{\"content\":"
	    "\"x\"}}]}\n\n", CL("x") "{\"error\":\"the model server's answer "
	    "ended before its end\"}\n");
	streams(OLLAMA_CHAT, "", "{\"error\":\"the model server's answer "
	    "ended before its end\"}\n");
	req_of(&r, OLLAMA_CHAT, 1, 0);
	ollama_stream_init(&st, &r, "qwen", &times);
	ATF_CHECK_EQ(feeds(&st, "data: {\"choices\":[{\"delta\":"
	    "{\"content\":\"x\"}}]}\n\n", NOW, &out), 0);
	ollama_stream_fail(&st, "qwen: no answer in time", &out);
	ATF_CHECK_EQ(feeds(&st, "data: {}\n\n", NOW, &out), -1);
	ATF_CHECK_EQ(ollama_chunk(&st, "[DONE]", 6, NOW, &out), -1);
	ollama_stream_end(&st, NOW, &out);
	ollama_stream_fail(&st, "again", &out);
	ollama_stream_free(&st);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, CL("x") "{\"error\":\"qwen: no answer in time\"}"
	    "\n");
	free(got);
}

ATF_TC_WITHOUT_HEAD(stream_bounds);
ATF_TC_BODY(stream_bounds, tc)
{
	static const char	 head[] = "data: {\"choices\":[{\"delta\":"
	    "{\"content\":\"";
	static const char	 tail[] = "\"}}]}\n\n" DONE;
	struct ollama_req	 r;
	char			*sse, *got;
	size_t			 n = OLLAMA_EVENT_MAX, h = strlen(head), at;

	req_of(&r, OLLAMA_CHAT, 1, 0);
	/* a line of n bytes (and its end), cut across pieces: held */
	ATF_REQUIRE((sse = malloc(2 * n)) != NULL);
	memcpy(sse, head, h);
	memset(sse + h, 'a', n - h - 5);
	(void)strcpy(sse + n - 5, tail);
	got = fed(&r, "qwen", sse, 4096, 1);
	ATF_CHECK(strncmp(got, LS "\"message\":{\"role\":\"assistant\","
	    "\"content\":\"aaa", 84) == 0);
	ATF_CHECK(strstr(got, "\"done\":true") != NULL);
	free(got);
	/* a byte more: refused */
	memset(sse + h, 'a', n - h - 4);
	(void)strcpy(sse + n - 4, tail);
	got = fed(&r, "qwen", sse, 4096, 1);
	ATF_CHECK_STREQ(got, "{\"error\":\"a line of the model server's "
	    "stream is too long\"}\n");
	free(got);
	/* an event of many data lines over the bound */
	for (at = 0; at < n + 20000; at += 1007) {
		memcpy(sse + at, "data: ", 6);
		memset(sse + at + 6, 'a', 1000);
		sse[at + 1006] = '\n';
	}
	sse[at] = '\0';
	got = fed(&r, "qwen", sse, 1000, 1);
	ATF_CHECK_STREQ(got, "{\"error\":\"an event of the model server's "
	    "stream is too long\"}\n");
	free(got);
	free(sse);
}

ATF_TC_WITHOUT_HEAD(stream_times);
ATF_TC_BODY(stream_times, tc)
{
	struct ollama_req	 r;
	struct ollama_stream	 st;
	struct ollama_times	 t = { WALL + 123450000, START, START,
	    START + 5000 };
	struct buf		 out = { 0 };
	char			*got;

	/* each line's time, ns without their trailing zeros; the times
	 * between the tokens; load_duration 0 (no wait) left out */
	req_of(&r, OLLAMA_GENERATE, 1, 0);
	ollama_stream_init(&st, &r, "m\"1", &t);
	(void)feeds(&st, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n",
	    START + 100000, &out);
	(void)feeds(&st, "data: {\"choices\":[{\"text\":\"b\"}]}\n\n",
	    START + 876543211, &out);
	(void)feeds(&st, "data: {\"choices\":[{\"text\":\"\",\"finish_reason\":"
	    "\"stop\"}]}\n\n" DONE, START + 2000000000LL, &out);
	ollama_stream_free(&st);
	got = text_of(&out);
	ATF_CHECK_STREQ(got,
	    "{\"model\":\"m\\\"1\",\"created_at\":\"2023-11-14T22:13:20.12355Z\","
	    "\"response\":\"a\",\"done\":false}\n"
	    "{\"model\":\"m\\\"1\",\"created_at\":\"2023-11-14T22:13:20.999993211Z\","
	    "\"response\":\"b\",\"done\":false}\n"
	    "{\"model\":\"m\\\"1\",\"created_at\":\"2023-11-14T22:13:22.12345Z\","
	    "\"response\":\"\",\"done\":true,\"done_reason\":\"stop\","
	    "\"total_duration\":2000000000,\"prompt_eval_duration\":95000,"
	    "\"eval_count\":2,\"eval_duration\":1999900000}\n");
	free(got);
}

ATF_TC_WITHOUT_HEAD(whole_answer);
ATF_TC_BODY(whole_answer, tc)
{
	/* llama-server's answer, as it sent it */
	wholes(OLLAMA_CHAT, 0, "{\"choices\":[{\"finish_reason\":\"length\","
	    "\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":"
	    "\"\xc3\xa9o inspirediras\"}}],\"created\":1796287010,\"model\":"
	    "\"/work/shared/realserver/tiny-a.gguf\",\"system_fingerprint\":"
	    "\"b0-unknown\",\"object\":\"chat.completion\",\"usage\":"
	    "{\"completion_tokens\":3,\"prompt_tokens\":29,\"total_tokens\":32,"
	    "\"prompt_tokens_details\":{\"cached_tokens\":28}},\"id\":"
	    "\"chatcmpl-urKaIPnNok2FavMYG6Fwk9MCPggvgcM4\",\"timings\":"
	    "{\"cache_n\":28,\"prompt_n\":1,\"prompt_ms\":2.555,"
	    "\"prompt_per_token_ms\":5.743,\"predicted_n\":3,\"predicted_ms\":"
	    "2.273}}", 0, "{\"model\":\"qwen\",\"created_at\":"
	    "\"2023-11-14T22:13:21Z\",\"message\":{\"role\":\"assistant\","
	    "\"content\":\"\xc3\xa9o inspirediras\"},\"done\":true,"
	    "\"done_reason\":\"length\"" TIMED);

	/* thinking, tool calls (arguments an object), logprobs; no
	 * timings: eval_duration the whole wait, no prompt_eval_duration */
	wholes(OLLAMA_CHAT, 0, "{\"choices\":[{\"index\":0,\"message\":"
	    "{\"role\":\"assistant\",\"content\":null,\"reasoning_content\":"
	    "\"Hm.\",\"tool_calls\":[{\"id\":\"call_a\",\"type\":\"function\","
	    "\"function\":{\"name\":\"get_weather\",\"arguments\":"
	    "\"{\\\"city\\\": \\\"Paris\\\"}\"}},{\"id\":\"call_b\",\"type\":"
	    "\"function\",\"function\":{\"name\":\"get_time\",\"arguments\":"
	    "\"{}\"}}]},\"logprobs\":{\"content\":[]},\"finish_reason\":"
	    "\"tool_calls\"},{\"index\":1,\"message\":{\"content\":\"2nd\"}}],"
	    "\"usage\":{\"prompt_tokens\":122,\"completion_tokens\":33}}", 0,
	    "{\"model\":\"qwen\",\"created_at\":\"2023-11-14T22:13:21Z\","
	    "\"message\":{\"role\":\"assistant\",\"content\":\"\",\"thinking\":"
	    "\"Hm.\",\"tool_calls\":[{\"id\":\"call_a\",\"function\":{\"index\":"
	    "0,\"name\":\"get_weather\",\"arguments\":{\"city\":\"Paris\"}}},"
	    "{\"id\":\"call_b\",\"function\":{\"index\":1,\"name\":"
	    "\"get_time\",\"arguments\":{}}}]},\"done\":true,\"done_reason\":"
	    "\"stop\",\"logprobs\":[],\"total_duration\":1000000000,"
	    "\"load_duration\":250000000,\"prompt_eval_count\":122,"
	    "\"eval_count\":33,\"eval_duration\":700000000}");

	/* completions' answer for a raw generate */
	wholes(OLLAMA_GENERATE, 0, "{\"choices\":[{\"text\":\"Layer wird\","
	    "\"index\":0,\"logprobs\":null,\"finish_reason\":\"length\"}],"
	    "\"object\":\"text_completion\",\"usage\":{\"completion_tokens\":2,"
	    "\"prompt_tokens\":2,\"total_tokens\":4}}", 0, "{\"model\":\"qwen\","
	    "\"created_at\":\"2023-11-14T22:13:21Z\",\"response\":\"Layer wird\","
	    "\"done\":true,\"done_reason\":\"length\",\"total_duration\":"
	    "1000000000,\"load_duration\":250000000,\"prompt_eval_count\":2,"
	    "\"eval_count\":2,\"eval_duration\":700000000}");

	/* what is not an answer: 502's body */
	wholes(OLLAMA_CHAT, 0, "{\"choices\":[{\"message\":{\"content\":\"x\"}}"
	    "]", -1, "{\"error\":\"the model server's answer is not JSON as it "
	    "should be\"}");
	wholes(OLLAMA_CHAT, 0, "{\"choices\":[{\"message\":{\"tool_calls\":"
	    "[{\"function\":{\"name\":\"f\",\"arguments\":\"x\"}}]}}]}", -1,
	    "{\"error\":\"the model server's tool call arguments are not a "
	    "JSON object\"}");
	wholes(OLLAMA_CHAT, 0, "{\"error\":{\"message\":\"too long\"}}", -1,
	    "{\"error\":\"too long\"}");
}

ATF_TC_WITHOUT_HEAD(embed_answer);
ATF_TC_BODY(embed_answer, tc)
{
	static const char	 two[] = "{\"model\":\"x\",\"object\":\"list\","
	    "\"usage\":{\"prompt_tokens\":4,\"total_tokens\":4},\"data\":"
	    "[{\"embedding\":[0.6, 0.8, 0.5e0, -2],\"index\":0,\"object\":"
	    "\"embedding\"},{\"embedding\":[1e-3,2],\"index\":1,\"object\":"
	    "\"embedding\"}]}";

	wholes(OLLAMA_EMBED, 0, two, 0, "{\"model\":\"qwen\",\"embeddings\":"
	    "[[0.6,0.8,0.5e0,-2],[1e-3,2]],\"total_duration\":1000000000,"
	    "\"load_duration\":250000000,\"prompt_eval_count\":4}");
	/* cut to dimensions and of length 1 again; one as long kept */
	wholes(OLLAMA_EMBED, 2, two, 0, "{\"model\":\"qwen\",\"embeddings\":"
	    "[[0.6,0.8],[1e-3,2]],\"total_duration\":1000000000,"
	    "\"load_duration\":250000000,\"prompt_eval_count\":4}");
	wholes(OLLAMA_EMBED, 3, two, 0, "{\"model\":\"qwen\",\"embeddings\":"
	    "[[0.5366563,0.7155418,0.4472136],[1e-3,2]],\"total_duration\":"
	    "1000000000,\"load_duration\":250000000,\"prompt_eval_count\":4}");
	wholes(OLLAMA_EMBED, 1, "{\"data\":[{\"embedding\":[0,0,0]},"
	    "{\"embedding\":[-3,4]}]}", 0, "{\"model\":\"qwen\",\"embeddings\":"
	    "[[0],[-1]],\"total_duration\":1000000000,\"load_duration\":"
	    "250000000}");
	wholes(OLLAMA_EMBED, 0, "{\"data\":[]}", 0, "{\"model\":\"qwen\","
	    "\"embeddings\":[],\"total_duration\":1000000000,\"load_duration\":"
	    "250000000}");
	/* the older route: the first alone, as it is */
	wholes(OLLAMA_EMBEDDINGS, 0, two, 0, "{\"embedding\":[0.6,0.8,0.5e0,"
	    "-2]}");

	wholes(OLLAMA_EMBED, 0, "{\"data\":[{\"embedding\":[1,\"2\"]}]}", -1,
	    "{\"error\":\"the model server's embeddings are not JSON as they "
	    "should be\"}");
	wholes(OLLAMA_EMBED, 0, "{\"data\":[{\"index\":0}]}", -1,
	    "{\"error\":\"the model server's embeddings are not JSON as they "
	    "should be\"}");
	wholes(OLLAMA_EMBED, 0, "{\"data\":[{\"embedding\":[1],\"embedding\":"
	    "[2]}]}", -1, "{\"error\":\"the model server's embeddings are not "
	    "JSON as they should be\"}");
	wholes(OLLAMA_EMBED, 0, "{\"data\":{}}", -1, "{\"error\":\"the model "
	    "server's embeddings are not JSON as they should be\"}");
	wholes(OLLAMA_EMBED, 0, "{\"data\":[]} {}", -1, "{\"error\":\"the "
	    "model server's embeddings are not JSON as they should be\"}");
	wholes(OLLAMA_EMBED, 0, "{\"error\":\"input is too large\"}", -1,
	    "{\"error\":\"input is too large\"}");
	wholes(OLLAMA_EMBEDDINGS, 0, "{\"data\":[]}", -1, "{\"error\":\"the "
	    "model server gave no embedding\"}");
}

/* The model server's error answer in Ollama's shape. */
static void
upstream(int status, const char *body, int want, const char *wantbody)
{
	struct buf	 out = { 0 };
	char		*got;
	int		 s;

	s = ollama_upstream_error(status, body, strlen(body), &out);
	got = text_of(&out);
	if (s != want || strcmp(got, wantbody) != 0)
		atf_tc_fail("%d %s\n  gave %d %s\n  want %d %s", status, body,
		    s, got, want, wantbody);
	free(got);
}

ATF_TC_WITHOUT_HEAD(upstream_errors);
ATF_TC_BODY(upstream_errors, tc)
{
	/* llama-server's, vLLM's, FastAPI's, mlx's; else the status */
	upstream(400, "{\"error\":{\"code\":400,\"message\":\"request (3028 "
	    "tokens) exceeds the available context size (512 tokens), try "
	    "increasing it\",\"type\":\"exceed_context_size_error\","
	    "\"n_prompt_tokens\":3028,\"n_ctx\":512}}", 400, "{\"error\":"
	    "\"request (3028 tokens) exceeds the available context size (512 "
	    "tokens), try increasing it\"}");
	upstream(400, "{\"object\":\"error\",\"message\":\"bad \\\"x\\\"\","
	    "\"type\":\"BadRequestError\",\"param\":null,\"code\":400}", 400,
	    "{\"error\":\"bad \\\"x\\\"\"}");
	upstream(422, "{\"detail\":[{\"loc\":[\"body\"],\"msg\":\"field "
	    "required\"}]}", 422, "{\"error\":\"the model server answered "
	    "422\"}");
	upstream(404, "{\"detail\":\"Not Found\"}", 404, "{\"error\":\"Not "
	    "Found\"}");
	upstream(500, "{\"error\":\"boom\"}", 500, "{\"error\":\"boom\"}");
	upstream(503, "{\"error\":{\"code\":503,\"message\":\"Loading "
	    "model\",\"type\":\"unavailable_error\"}}", 503,
	    "{\"error\":\"Loading model\"}");
	upstream(500, "Internal Server Error", 500, "{\"error\":\"the model "
	    "server answered 500\"}");
	upstream(500, "{\"error\":{\"message\":\"\"}}", 500, "{\"error\":"
	    "\"the model server answered 500\"}");
	upstream(500, "{\"error\":{\"message\":\"x\"}} tail", 500,
	    "{\"error\":\"the model server answered 500\"}");
	upstream(302, "{}", 502, "{\"error\":\"the model server answered "
	    "502\"}");
}

/* --- listings ----------------------------------------------------- */

static const char *const	 aliases[] = { "qwen", "q:7b" };

/* 2024-06-04T14:38:31.83753Z */
#define MODIFIED	1717511911837530000LL
#define DIGEST_Q	"4ab0e8a7f2c1"

static void
models(struct ollama_model m[3])
{
	memset(m, 0, 3 * sizeof(*m));
	m[0].name = "qwen2.5-7b";
	m[0].runtime = "llama";
	m[0].upstream = "/srv/models/qwen2.5-7b-instruct-q4_k_m.GGUF";
	m[0].kind = KIND_CHAT;
	m[0].modified = MODIFIED;
	m[0].size = 4683075271LL;
	m[0].family = "qwen2";
	m[0].parameter_size = "7.6B";
	m[0].quantization = "Q4_K_M";
	m[0].context = 32768;
	m[0].aliases = aliases;
	m[0].naliases = 2;
	m[0].loaded = 1;
	m[0].last_used = WALL - 60000000000LL;
	m[0].idle_ns = 900000000000LL;
	m[0].size_vram = 0;
	m[1].name = "embed";
	m[1].runtime = "llama-embed";
	m[1].upstream = "/srv/models/minilm";
	m[1].kind = KIND_EMBEDDING;
	m[1].modified = WALL;
	m[1].loaded = 1;
	m[2].name = "llava:13b";
	m[2].runtime = "vision";
	m[2].upstream = "/srv/models/llava.gguf";
	m[2].kind = KIND_VISION;
	m[2].modified = WALL;
	m[2].size = 1;
	m[2].loaded = 1;
	m[2].busy = 1;
	m[2].last_used = 1;
	m[2].idle_ns = 300000000000LL;
}

static char *
digest(const char *rt, const char *up)
{
	struct sha256	 c;
	uint8_t		 d[SHA256_LEN];
	static char	 hex[SHA256_HEXLEN];

	sha256_init(&c);
	sha256_update(&c, rt, strlen(rt) + 1);
	sha256_update(&c, up, strlen(up) + 1);
	sha256_final(&c, d);
	sha256_hex(d, hex);
	return (hex);
}

#define DETAILS_Q "\"details\":{\"parent_model\":\"\",\"format\":\"gguf\"," \
	"\"family\":\"qwen2\",\"families\":[\"qwen2\"],\"parameter_size\":" \
	"\"7.6B\",\"quantization_level\":\"Q4_K_M\",\"context_length\":32768}"
#define DETAILS_NONE(f) "\"details\":{\"parent_model\":\"\",\"format\":" \
	"\"" f "\",\"family\":\"\",\"families\":null,\"parameter_size\":\"\"," \
	"\"quantization_level\":\"\"}"

ATF_TC_WITHOUT_HEAD(listings);
ATF_TC_BODY(listings, tc)
{
	struct ollama_model	 m[3];
	struct buf		 out = { 0 };
	char			*got, *want, dq[SHA256_HEXLEN],
				 de[SHA256_HEXLEN], dl[SHA256_HEXLEN];

	models(m);
	(void)strlcpy(dq, digest("llama", m[0].upstream), sizeof(dq));
	(void)strlcpy(de, digest("llama-embed", m[1].upstream), sizeof(de));
	(void)strlcpy(dl, digest("vision", m[2].upstream), sizeof(dl));
	/* the digest names the runtime and the upstream, both */
	ATF_CHECK(strcmp(dq, digest("llama2", m[0].upstream)) != 0);
	ATF_CHECK(strcmp(dq, digest("llama", "/srv/models/other")) != 0);

	/* tags: each name and alias, tagged */
	ATF_REQUIRE_EQ(ollama_tags(m, 3, &out), 0);
	got = text_of(&out);
	ATF_REQUIRE(asprintf(&want, "{\"models\":["
#define TAGQ(n) "{\"name\":\"" n "\",\"model\":\"" n "\",\"modified_at\":" \
	"\"2024-06-04T14:38:31.83753Z\",\"size\":4683075271,\"digest\":" \
	"\"%s\"," DETAILS_Q ",\"capabilities\":[\"completion\"]}"
	    TAGQ("qwen2.5-7b:latest") "," TAGQ("qwen:latest") "," TAGQ("q:7b")
	    ",{\"name\":\"embed:latest\",\"model\":\"embed:latest\","
	    "\"modified_at\":\"2023-11-14T22:13:20Z\",\"size\":0,\"digest\":"
	    "\"%s\"," DETAILS_NONE("") ",\"capabilities\":[\"embedding\"]},"
	    "{\"name\":\"llava:13b\",\"model\":\"llava:13b\",\"modified_at\":"
	    "\"2023-11-14T22:13:20Z\",\"size\":1,\"digest\":\"%s\","
	    DETAILS_NONE("gguf") ",\"capabilities\":[\"completion\","
	    "\"vision\"]}]}", dq, dq, dq, de, dl) != -1);
	ATF_CHECK_STREQ(got, want);
	free(got);
	free(want);
	ATF_REQUIRE_EQ(ollama_tags(m, 0, &out), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{\"models\":[]}");
	free(got);

	/* ps: the loaded ones, latest expiry first; busy: now + the idle
	 * timeout; no idle timeout: now + 2^63-1 ns (year 2316 here);
	 * else last used + the idle timeout */
	m[1].loaded = 1;
	ATF_REQUIRE_EQ(ollama_ps(m, 3, WALL, &out), 0);
	got = text_of(&out);
	ATF_REQUIRE(asprintf(&want, "{\"models\":["
	    "{\"name\":\"embed:latest\",\"model\":\"embed:latest\",\"size\":0,"
	    "\"digest\":\"%s\"," DETAILS_NONE("") ",\"expires_at\":"
	    "\"2316-02-24T22:00:36.854775807Z\",\"size_vram\":0,"
	    "\"context_length\":0},"
	    "{\"name\":\"qwen2.5-7b:latest\",\"model\":\"qwen2.5-7b:latest\","
	    "\"size\":4683075271,\"digest\":\"%s\"," DETAILS_Q ",\"expires_at\":"
	    "\"2023-11-14T22:27:20Z\",\"size_vram\":0,\"context_length\":32768},"
	    "{\"name\":\"llava:13b\",\"model\":\"llava:13b\",\"size\":1,"
	    "\"digest\":\"%s\"," DETAILS_NONE("gguf") ",\"expires_at\":"
	    "\"2023-11-14T22:18:20Z\",\"size_vram\":0,\"context_length\":0}]}",
	    de, dq, dl) != -1);
	ATF_CHECK_STREQ(got, want);
	free(got);
	free(want);
	m[0].loaded = m[1].loaded = m[2].loaded = 0;
	ATF_REQUIRE_EQ(ollama_ps(m, 3, WALL, &out), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{\"models\":[]}");
	free(got);

	/* show: what agency knows; never the upstream's path */
	ATF_REQUIRE_EQ(ollama_show(&m[0], &out), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{" DETAILS_Q ",\"model_info\":{\"agency.runtime\":"
	    "\"llama\",\"agency.kind\":\"chat\",\"agency.aliases\":[\"qwen\","
	    "\"q:7b\"],\"general.architecture\":\"qwen2\","
	    "\"qwen2.context_length\":32768},\"capabilities\":[\"completion\"],"
	    "\"modified_at\":\"2024-06-04T14:38:31.83753Z\"}");
	free(got);
	m[1].context = 512;
	ATF_REQUIRE_EQ(ollama_show(&m[1], &out), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{\"details\":{\"parent_model\":\"\",\"format\":"
	    "\"\",\"family\":\"\",\"families\":null,\"parameter_size\":\"\","
	    "\"quantization_level\":\"\",\"context_length\":512},"
	    "\"model_info\":{\"agency.runtime\":\"llama-embed\",\"agency.kind\":"
	    "\"embedding\",\"agency.aliases\":[],\"agency.context_length\":512},"
	    "\"capabilities\":[\"embedding\"],\"modified_at\":"
	    "\"2023-11-14T22:13:20Z\"}");
	free(got);
	m[1].kind = KIND_RERANK;
	m[1].context = 0;
	ATF_REQUIRE_EQ(ollama_show(&m[1], &out), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{" DETAILS_NONE("") ",\"model_info\":"
	    "{\"agency.runtime\":\"llama-embed\",\"agency.kind\":\"rerank\","
	    "\"agency.aliases\":[]},\"modified_at\":\"2023-11-14T22:13:20Z\"}");
	free(got);

	ATF_REQUIRE_EQ(ollama_version(&out), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{\"version\":\"0.32.15\"}");
	free(got);
}

ATF_TC_WITHOUT_HEAD(loaded_refused);
ATF_TC_BODY(loaded_refused, tc)
{
	static const char	*managing[] = { "/api/pull", "/api/push",
	    "/api/create", "/api/copy", "/api/delete" };
	struct ollama_req	 r;
	struct buf		 out = { 0 };
	struct rerr		 e;
	char			*got, want[256];
	size_t			 i;

	req_of(&r, OLLAMA_CHAT, 1, 0);
	ATF_REQUIRE_EQ(ollama_loaded(&r, "qwen", 0, WALL + 5, &out), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{\"model\":\"qwen\",\"created_at\":"
	    "\"2023-11-14T22:13:20.000000005Z\",\"message\":{\"role\":"
	    "\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":"
	    "\"load\"}");
	free(got);
	req_of(&r, OLLAMA_GENERATE, 0, 0);
	ATF_REQUIRE_EQ(ollama_loaded(&r, "qwen", 1, WALL, &out), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{\"model\":\"qwen\",\"created_at\":"
	    "\"2023-11-14T22:13:20Z\",\"response\":\"\",\"done\":true,"
	    "\"done_reason\":\"unload\"}");
	free(got);
	req_of(&r, OLLAMA_EMBED, 0, 0);
	ATF_REQUIRE_EQ(ollama_loaded(&r, "e", 0, WALL, &out), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{\"model\":\"e\",\"embeddings\":[]}");
	free(got);
	req_of(&r, OLLAMA_EMBEDDINGS, 0, 0);
	ATF_REQUIRE_EQ(ollama_loaded(&r, "e", 0, WALL, &out), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{\"embedding\":[]}");
	free(got);

	for (i = 0; i < sizeof(managing) / sizeof(managing[0]); i++) {
		memset(&e, 0, sizeof(e));
		ATF_CHECK_EQ(ollama_refused(managing[i], &e), 1);
		ATF_CHECK_EQ(e.status, 403);
		(void)snprintf(want, sizeof(want), "agency serves the models "
		    "its configuration names: %s is not available (name the "
		    "model in agency.conf and reload)", managing[i]);
		ATF_CHECK_STREQ(e.message, want);
	}
	ATF_CHECK_EQ(ollama_refused("/api/blobs/sha256:29fd", &e), 1);
	ATF_CHECK_STREQ(e.message, "agency serves the models its configuration "
	    "names: /api/blobs/ is not available (name the model in "
	    "agency.conf and reload)");
	ATF_CHECK_EQ(ollama_refused("/api/chat", &e), 0);
	ATF_CHECK_EQ(ollama_refused("/api/pulls", &e), 0);
	ATF_CHECK_EQ(ollama_refused("/api/blobs", &e), 0);
	ATF_CHECK_EQ(ollama_refused("/api", &e), 0);

	ATF_REQUIRE_EQ(ollama_error(&out, "model 'x' not found"), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{\"error\":\"model 'x' not found\"}");
	free(got);
	ATF_REQUIRE_EQ(ollama_error(&out, "a \"b\"/\n"), 0);
	got = text_of(&out);
	ATF_CHECK_STREQ(got, "{\"error\":\"a \\\"b\\\"/\\n\"}");
	free(got);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, chat_request);
	ATF_TP_ADD_TC(tp, chat_load);
	ATF_TP_ADD_TC(tp, chat_refused);
	ATF_TP_ADD_TC(tp, options);
	ATF_TP_ADD_TC(tp, images);
	ATF_TP_ADD_TC(tp, tools);
	ATF_TP_ADD_TC(tp, format_think_logprobs);
	ATF_TP_ADD_TC(tp, generate_request);
	ATF_TP_ADD_TC(tp, embed_request);
	ATF_TP_ADD_TC(tp, keep_alive);
	ATF_TP_ADD_TC(tp, stream_chat);
	ATF_TP_ADD_TC(tp, stream_thinking);
	ATF_TP_ADD_TC(tp, stream_generate);
	ATF_TP_ADD_TC(tp, stream_tools);
	ATF_TP_ADD_TC(tp, stream_tool_bounds);
	ATF_TP_ADD_TC(tp, stream_logprobs);
	ATF_TP_ADD_TC(tp, stream_errors);
	ATF_TP_ADD_TC(tp, stream_bounds);
	ATF_TP_ADD_TC(tp, stream_times);
	ATF_TP_ADD_TC(tp, whole_answer);
	ATF_TP_ADD_TC(tp, embed_answer);
	ATF_TP_ADD_TC(tp, upstream_errors);
	ATF_TP_ADD_TC(tp, listings);
	ATF_TP_ADD_TC(tp, loaded_refused);
	return (atf_no_error());
}
