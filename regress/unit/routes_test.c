/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The table of model routes (routes.c): each route's family, body, parts
 * and capped fields; any other route read as chat completions are.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <string.h>

#include "routes.h"

static void
check_caps(const struct route *r, const char *a, const char *b, int add)
{
	ATF_CHECK_MSG((r->cap[0] == NULL) == (a == NULL) &&
	    (a == NULL || strcmp(r->cap[0], a) == 0), "%s: cap[0]", r->path);
	ATF_CHECK_MSG((r->cap[1] == NULL) == (b == NULL) &&
	    (b == NULL || strcmp(r->cap[1], b) == 0), "%s: cap[1]", r->path);
	ATF_CHECK_EQ_MSG(r->add, add, "%s: add", r->path);
}

ATF_TC_WITHOUT_HEAD(families);
ATF_TC_BODY(families, tc)
{
	static const char *anthropic[] = { "/v1/messages",
	    "/v1/messages/count_tokens" };
	static const char *forms[] = { "/v1/audio/transcriptions",
	    "/v1/audio/translations", "/v1/images/edits", "/inference" };
	static const char *json[] = { "/v1/chat/completions",
	    "/v1/completions", "/v1/responses", "/v1/responses/input_tokens",
	    "/v1/embeddings", "/v1/rerank", "/v1/reranking", "/rerank",
	    "/v1/audio/speech", "/v1/images/generations" };
	const struct route	*r;
	size_t			 i;

	for (i = 0; i < sizeof(anthropic) / sizeof(anthropic[0]); i++) {
		r = routes_find(anthropic[i]);
		ATF_CHECK_STREQ(r->path, anthropic[i]);
		ATF_CHECK_EQ(r->family, FAMILY_ANTHROPIC);
		ATF_CHECK_EQ(r->body, BODY_JSON);
		ATF_CHECK_EQ(r->parts, PARTS_MESSAGES);
	}
	for (i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		r = routes_find(forms[i]);
		ATF_CHECK_STREQ(r->path, forms[i]);
		ATF_CHECK_EQ(r->family, FAMILY_OPENAI);
		ATF_CHECK_EQ(r->body, BODY_FORM);
		ATF_CHECK_EQ(r->parts, PARTS_NONE);
		check_caps(r, NULL, NULL, 0);
	}
	for (i = 0; i < sizeof(json) / sizeof(json[0]); i++) {
		r = routes_find(json[i]);
		ATF_CHECK_STREQ(r->path, json[i]);
		ATF_CHECK_EQ(r->family, FAMILY_OPENAI);
		ATF_CHECK_EQ(r->body, BODY_JSON);
	}
}

ATF_TC_WITHOUT_HEAD(caps);
ATF_TC_BODY(caps, tc)
{
	const struct route	*r;

	r = routes_find("/v1/chat/completions");
	ATF_CHECK_EQ(r->parts, PARTS_CHAT);
	check_caps(r, "max_tokens", "max_completion_tokens", 1);
	check_caps(routes_find("/v1/completions"), "max_tokens", NULL, 1);
	check_caps(routes_find("/v1/messages"), "max_tokens", NULL, 1);
	check_caps(routes_find("/v1/messages/count_tokens"), NULL, NULL, 0);
	r = routes_find("/v1/responses");
	ATF_CHECK_EQ(r->parts, PARTS_RESPONSES);
	check_caps(r, "max_output_tokens", NULL, 1);
	r = routes_find("/v1/responses/input_tokens");
	ATF_CHECK_EQ(r->parts, PARTS_RESPONSES);
	check_caps(r, NULL, NULL, 0);
	check_caps(routes_find("/v1/embeddings"), NULL, NULL, 0);
	check_caps(routes_find("/v1/rerank"), NULL, NULL, 0);
}

ATF_TC_WITHOUT_HEAD(other);
ATF_TC_BODY(other, tc)
{
	static const char *paths[] = { "/completion", "/v1/messages/",
	    "/v1/message", "/v1/chat/completions/", "/V1/messages", "",
	    "/v1/responses/x" };
	const struct route	*r;
	size_t			 i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		r = routes_find(paths[i]);
		ATF_CHECK_MSG(r->path == NULL, "'%s' found as '%s'",
		    paths[i], r->path);
		ATF_CHECK_EQ(r->family, FAMILY_OPENAI);
		ATF_CHECK_EQ(r->body, BODY_JSON);
		ATF_CHECK_EQ(r->parts, PARTS_CHAT);
		check_caps(r, "max_tokens", "max_completion_tokens", 1);
	}
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, families);
	ATF_TP_ADD_TC(tp, caps);
	ATF_TP_ADD_TC(tp, other);
	return (atf_no_error());
}
