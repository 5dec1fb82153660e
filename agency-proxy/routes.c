/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The table of routes (routes.h): the front door's own first, then the
 * models', each with its family, its body, its content parts and the
 * fields its cap holds; and each kind's routes, agency.conf(5)'s list.
 * A route not in the table reads as chat completions do.
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <string.h>

#include <event2/http.h>	/* EVHTTP_REQ_* */

#include "config.h"
#include "routes.h"

#define GET		EVHTTP_REQ_GET
#define GETHEAD		(EVHTTP_REQ_GET | EVHTTP_REQ_HEAD)
#define POST		EVHTTP_REQ_POST
/* passed through: all but TRACE and CONNECT */
#define PASSED		(GETHEAD | POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE | \
			    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH)
#define ADMIN		(ROUTE_OWN | ROUTE_ADMIN | ROUTE_JSON)
/* A route of the front door's own: its errors are OpenAI's. */
#define OWN(path, prefix, kind, guard, methods)				\
	{ path, FAMILY_OPENAI, BODY_JSON, PARTS_NONE, { NULL, NULL }, 0, \
	    kind, guard, prefix, methods }

/* A model's route: its body names the model; it takes POST. */
#define MODEL(path, family, body, parts, cap0, cap1, add)		\
	{ path, family, body, parts, { cap0, cap1 }, add,		\
	    ROUTE_MODEL, 0, 0, POST }
/* One of OpenAI's, without content parts or a cap. */
#define PLAIN(path, body)						\
	MODEL(path, FAMILY_OPENAI, body, PARTS_NONE, NULL, NULL, 0)

/*
 * What the rules do with each model route:
 *
 * - OpenAI's chat completions: content parts in messages; the cap holds
 *   max_tokens and max_completion_tokens, and sets max_tokens.  (On every
 *   route with a cap, the cap also holds the other names llama-server
 *   reads for the same limit, routes_limits: n_predict above all.)
 * - OpenAI's completions: no parts; the cap holds max_tokens and sets it.
 * - Anthropic's Messages: Anthropic's blocks; the cap holds max_tokens
 *   (which Anthropic requires) and sets it.  count_tokens: the blocks,
 *   no cap (it takes no max_tokens).
 * - OpenAI's Responses: the parts of the input items; the cap holds
 *   max_output_tokens and sets it.  input_tokens: the parts, no cap.
 * - Embeddings, rerank, speech, image generation: no parts, no cap.
 * - Transcriptions, translations, image edits and whisper-server's
 *   /inference: a multipart/form-data body, whose model field is read
 *   and rewritten; nothing else of it is looked at.
 *
 * Any other route reads as chat completions do (and as every route did
 * before this table).
 */
static const struct route	 table[] = {
	OWN("/health", 0, ROUTE_HEALTH, ROUTE_ANYHOST, GETHEAD),
	OWN("/", 0, ROUTE_CONSOLE, ROUTE_OWN | ROUTE_KEYLESS, GETHEAD),
	OWN("/console/", 1, ROUTE_CONSOLE, ROUTE_OWN | ROUTE_KEYLESS, GETHEAD),
	OWN("/v1/models", 0, ROUTE_MODELS, 0, GET),
	OWN("/metrics", 0, ROUTE_METRICS, ADMIN, GET),
	OWN("/v1/agency/status", 0, ROUTE_STATUS, ADMIN, GET),
	OWN("/v1/agency/events", 0, ROUTE_EVENTS, ADMIN, GET),
	OWN("/v1/agency/logs/", 1, ROUTE_LOGS, ADMIN, GET),
	OWN("/v1/agency/cancel", 0, ROUTE_CANCEL, ADMIN, POST),
	OWN("/v1/agency/load", 0, ROUTE_LOAD, ADMIN, POST),
	OWN("/v1/agency/unload", 0, ROUTE_UNLOAD, ADMIN, POST),
	OWN("/v1/agency/", 1, ROUTE_ADMIN_OTHER, ADMIN, 0),
	OWN("/upstream/", 1, ROUTE_PASS, ROUTE_OWN | ROUTE_ADMIN, PASSED),
	MODEL("/v1/chat/completions", FAMILY_OPENAI, BODY_JSON, PARTS_CHAT,
	    "max_tokens", "max_completion_tokens", 1),
	MODEL("/v1/completions", FAMILY_OPENAI, BODY_JSON, PARTS_NONE,
	    "max_tokens", NULL, 1),
	MODEL("/v1/messages", FAMILY_ANTHROPIC, BODY_JSON, PARTS_MESSAGES,
	    "max_tokens", NULL, 1),
	MODEL("/v1/messages/count_tokens", FAMILY_ANTHROPIC, BODY_JSON,
	    PARTS_MESSAGES, NULL, NULL, 0),
	MODEL("/v1/responses", FAMILY_OPENAI, BODY_JSON, PARTS_RESPONSES,
	    "max_output_tokens", NULL, 1),
	MODEL("/v1/responses/input_tokens", FAMILY_OPENAI, BODY_JSON,
	    PARTS_RESPONSES, NULL, NULL, 0),
	PLAIN("/v1/embeddings", BODY_JSON),
	PLAIN("/v1/rerank", BODY_JSON),
	PLAIN("/v1/reranking", BODY_JSON),
	PLAIN("/rerank", BODY_JSON),
	PLAIN("/v1/audio/speech", BODY_JSON),
	PLAIN("/v1/audio/transcriptions", BODY_FORM),
	PLAIN("/v1/audio/translations", BODY_FORM),
	PLAIN("/inference", BODY_FORM),
	PLAIN("/v1/images/generations", BODY_JSON),
	PLAIN("/v1/images/edits", BODY_FORM),
};

/*
 * The kinds' routes, agency.conf(5)'s list: chat has OpenAI's chat and
 * completions, Anthropic's Messages and OpenAI's Responses; vision the
 * same but completions, which take no images; rerank the three paths
 * llama-server answers on; transcription OpenAI's two audio forms and
 * whisper.cpp's own /inference; image generations and edits.
 */
static const char *const	 chat_routes[] = { "/v1/chat/completions",
	"/v1/completions", "/v1/messages", "/v1/messages/count_tokens",
	"/v1/responses", "/v1/responses/input_tokens", NULL };
static const char *const	 vision_routes[] = { "/v1/chat/completions",
	"/v1/messages", "/v1/messages/count_tokens", "/v1/responses",
	"/v1/responses/input_tokens", NULL };
static const char *const	 embedding_routes[] = { "/v1/embeddings",
	NULL };
static const char *const	 rerank_routes[] = { "/v1/rerank",
	"/v1/reranking", "/rerank", NULL };
static const char *const	 speech_routes[] = { "/v1/audio/speech",
	NULL };
static const char *const	 transcription_routes[] = {
	"/v1/audio/transcriptions", "/v1/audio/translations", "/inference",
	NULL };
static const char *const	 image_routes[] = { "/v1/images/generations",
	"/v1/images/edits", NULL };

/* Each kind of runtime (enum model_kind, its index): its name and its
 * routes. */
static const struct kindrow {
	const char		*name;
	const char *const	*routes;
} kinds[] = {
	[KIND_CHAT] = { "chat", chat_routes },
	[KIND_EMBEDDING] = { "embedding", embedding_routes },
	[KIND_SPEECH] = { "speech", speech_routes },
	[KIND_IMAGE] = { "image", image_routes },
	[KIND_VISION] = { "vision", vision_routes },
	[KIND_RERANK] = { "rerank", rerank_routes },
	[KIND_TRANSCRIPTION] = { "transcription", transcription_routes },
};

const char *const	 routes_limits[] = { "max_tokens",
	"max_completion_tokens", "max_output_tokens", "n_predict", NULL };

static const struct route	 other = MODEL(NULL, FAMILY_OPENAI, BODY_JSON,
    PARTS_CHAT, "max_tokens", "max_completion_tokens", 1);

const struct route *
routes_find(const char *path)
{
	size_t	 i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].prefix ? strncmp(table[i].path, path,
		    strlen(table[i].path)) == 0 : strcmp(table[i].path,
		    path) == 0)
			return (&table[i]);
	return (&other);
}

/* The row of a kind of runtime, or NULL. */
static const struct kindrow *
kind_find(int kind)
{
	if (kind < 0 || (size_t)kind >= sizeof(kinds) / sizeof(kinds[0]) ||
	    kinds[kind].name == NULL)
		return (NULL);
	return (&kinds[kind]);
}

const char *const *
routes_of_kind(int kind)
{
	const struct kindrow	*k = kind_find(kind);

	return (k != NULL ? k->routes : NULL);
}

/*
 * The name a runtime's "part" list knows a part of a family by: OpenAI's
 * chat names, which Anthropic's blocks and the Responses' parts map to.
 */
const char *
routes_part_name(int parts, const char *type)
{
	static const char	*map[][2] = {
		{ "image", "image_url" },	/* Anthropic */
		{ "document", "file" },
		{ "input_text", "text" },	/* Responses */
		{ "output_text", "text" },
		{ "refusal", "text" },
		{ "summary_text", "text" },
		{ "reasoning_text", "text" },
		{ "input_image", "image_url" },
		{ "input_file", "file" },
	};
	size_t			 i, lo, hi;

	/* the first two rows are Anthropic's, the rest the Responses' */
	lo = parts == PARTS_MESSAGES ? 0 : 2;
	hi = parts == PARTS_MESSAGES ? 2 : parts == PARTS_RESPONSES ?
	    sizeof(map) / sizeof(map[0]) : 0;
	for (i = lo; i < hi; i++)
		if (strcmp(map[i][0], type) == 0)
			return (map[i][1]);
	return (type);
}

const char *
routes_kind_name(int kind)
{
	const struct kindrow	*k = kind_find(kind);

	return (k != NULL ? k->name : NULL);
}
