/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Ollama's API (issue 35) as pure translations, no I/O, so that the unit
 * tests and the fuzzer drive them:
 *
 * - ollama.c: a request of /api/chat, /api/generate, /api/embed or
 *   /api/embeddings read (json-c) and turned into the OpenAI body of the
 *   model server's route, or refused with the status and message of
 *   Ollama's error shape; keep_alive read.
 * - ollama_out.c: what it writes with: times in RFC 3339,
 *   numbers, escaped strings, the error shape.
 *
 * Every field of Ollama's requests and answers, and what agency does
 * with it, is the table at the head of regress/unit/ollama_test.c.
 */
#ifndef AGENCY_OLLAMA_H
#define AGENCY_OLLAMA_H

#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "proxy.h"

#define OLLAMA_TOP_LOGPROBS	20	/* Ollama's own bound */

enum ollama_api {
	OLLAMA_CHAT,		/* POST /api/chat */
	OLLAMA_GENERATE,	/* POST /api/generate */
	OLLAMA_EMBED,		/* POST /api/embed */
	OLLAMA_EMBEDDINGS,	/* POST /api/embeddings, the older */
};

/* What keep_alive asks of the model once the request is over. */
enum ollama_keep {
	OLLAMA_KEEP_DEFAULT,	/* absent or null: its idle timeout */
	OLLAMA_KEEP_FOR,	/* keep_ms (0: stop it now) */
	OLLAMA_KEEP_FOREVER,	/* negative: keep it loaded */
};

/* A request read (ollama_request). */
struct ollama_req {
	int		 api;		/* enum ollama_api */
	const char	*route;		/* the model server's: OpenAI's */
	int		 stream;	/* NDJSON lines, or one object */
	int		 load;		/* nothing to generate or embed: only
					 * load the model (or, kept for 0,
					 * stop it); body is NULL */
	int		 keep;		/* enum ollama_keep */
	int64_t		 keep_ms;
	int64_t		 dimensions;	/* /api/embed: cut vectors to it */
	int		 named;		/* the body names a model */
	char		 model[AGENCY_NAME_MAX];	/* as it names it */
	char		 lookup[AGENCY_NAME_MAX];	/* less ":latest" */
	json_object	*body;		/* the OpenAI body: the caller's */
};

/*
 * Read a request of api: 0 and r filled in, or -1 and e (its status,
 * the message of Ollama's error shape).  The body's "model" is lookup
 * (absent when the request names none): the caller picks the model and
 * rewrites it, as on the OpenAI routes.
 */
int		 ollama_request(int, const char *, size_t, struct ollama_req *,
		    struct rerr *);
void		 ollama_req_clear(struct ollama_req *);
/* keep_alive's value: 0 with *keep and *ms, -1 when it is not one. */
int		 ollama_keep_alive(json_object *, int *, int64_t *);

/* ollama_out.c */
int		 ollama_put(struct buf *, const char *, size_t);
int		 ollama_puts(struct buf *, const char *);
int		 ollama_put_int(struct buf *, int64_t);
int		 ollama_put_string(struct buf *, const char *);
int		 ollama_put_time(struct buf *, int64_t);
int		 ollama_put_clock(struct buf *, int64_t, int64_t);
size_t		 ollama_stamp(char *, size_t, int64_t);
int		 ollama_error(struct buf *, const char *);

#endif /* AGENCY_OLLAMA_H */
