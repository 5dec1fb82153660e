/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The table of model routes (routes.h).  What the rules do with each:
 *
 * - OpenAI's chat completions: content parts in messages; the cap holds
 *   max_tokens and max_completion_tokens, and sets max_tokens.
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
#include <sys/types.h>

#include <string.h>

#include "routes.h"

static const struct route	 table[] = {
	{ "/v1/chat/completions", FAMILY_OPENAI, BODY_JSON, PARTS_CHAT,
	    { "max_tokens", "max_completion_tokens" }, 1 },
	{ "/v1/completions", FAMILY_OPENAI, BODY_JSON, PARTS_NONE,
	    { "max_tokens", NULL }, 1 },
	{ "/v1/messages", FAMILY_ANTHROPIC, BODY_JSON, PARTS_MESSAGES,
	    { "max_tokens", NULL }, 1 },
	{ "/v1/messages/count_tokens", FAMILY_ANTHROPIC, BODY_JSON,
	    PARTS_MESSAGES, { NULL, NULL }, 0 },
	{ "/v1/responses", FAMILY_OPENAI, BODY_JSON, PARTS_RESPONSES,
	    { "max_output_tokens", NULL }, 1 },
	{ "/v1/responses/input_tokens", FAMILY_OPENAI, BODY_JSON,
	    PARTS_RESPONSES, { NULL, NULL }, 0 },
	{ "/v1/embeddings", FAMILY_OPENAI, BODY_JSON, PARTS_NONE,
	    { NULL, NULL }, 0 },
	{ "/v1/rerank", FAMILY_OPENAI, BODY_JSON, PARTS_NONE,
	    { NULL, NULL }, 0 },
	{ "/v1/reranking", FAMILY_OPENAI, BODY_JSON, PARTS_NONE,
	    { NULL, NULL }, 0 },
	{ "/rerank", FAMILY_OPENAI, BODY_JSON, PARTS_NONE,
	    { NULL, NULL }, 0 },
	{ "/v1/audio/speech", FAMILY_OPENAI, BODY_JSON, PARTS_NONE,
	    { NULL, NULL }, 0 },
	{ "/v1/audio/transcriptions", FAMILY_OPENAI, BODY_FORM, PARTS_NONE,
	    { NULL, NULL }, 0 },
	{ "/v1/audio/translations", FAMILY_OPENAI, BODY_FORM, PARTS_NONE,
	    { NULL, NULL }, 0 },
	{ "/inference", FAMILY_OPENAI, BODY_FORM, PARTS_NONE,
	    { NULL, NULL }, 0 },
	{ "/v1/images/generations", FAMILY_OPENAI, BODY_JSON, PARTS_NONE,
	    { NULL, NULL }, 0 },
	{ "/v1/images/edits", FAMILY_OPENAI, BODY_FORM, PARTS_NONE,
	    { NULL, NULL }, 0 },
};

static const struct route	 other = {
	NULL, FAMILY_OPENAI, BODY_JSON, PARTS_CHAT,
	{ "max_tokens", "max_completion_tokens" }, 1
};

const struct route *
routes_find(const char *path)
{
	size_t	 i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (strcmp(table[i].path, path) == 0)
			return (&table[i]);
	return (&other);
}
