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
 * - ollama_stream.c: the model server's answers turned back: its SSE
 *   chunks into Ollama's NDJSON lines as they come (state in struct
 *   ollama_stream, bounded), a whole answer into one object,
 *   embeddings, and its errors into {"error":"..."}.
 * - ollama_list.c: what agency knows of its models as /api/tags,
 *   /api/ps and /api/show, /api/version, the answers of a request that
 *   only loads (or stops) a model, and the refusals of the routes that
 *   manage models.
 * - ollama_out.c: what the three write with: times in RFC 3339,
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

/* The release of Ollama whose API agency answers as (/api/version). */
#define OLLAMA_API_VERSION	"0.32.15"

#define OLLAMA_EVENT_MAX	(1024 * 1024)	/* an SSE event held */
#define OLLAMA_ARGS_MAX		(1024 * 1024)	/* a tool call's arguments */
#define OLLAMA_ID_MAX		256	/* a tool call's id, its name */
#define OLLAMA_DEPTH		64	/* JSON nesting, as json-c's */
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

/* When, in ns: wall is the real time at start; the rest are of the
 * monotonic clock the translations are given as "now". */
struct ollama_times {
	int64_t		 wall;
	int64_t		 start;		/* the request was read whole */
	int64_t		 granted;	/* its hold was granted */
	int64_t		 sent;		/* it went to the model server */
};

/* A tool call, while its arguments come in pieces. */
struct ollama_call {
	int64_t		 index;		/* the server's; -1: none going */
	int64_t		 next;		/* the least index a next may have */
	char		 id[OLLAMA_ID_MAX];	/* as JSON string bytes */
	size_t		 idlen;
	char		 name[OLLAMA_ID_MAX];
	size_t		 namelen;
	struct buf	 args;		/* unescaped, up to OLLAMA_ARGS_MAX */
	int64_t		 sent;		/* calls given to the client */
};

/* The translation of one answer; ollama_stream_init, then _free. */
struct ollama_stream {
	int		 api;
	int		 stream;
	int64_t		 dimensions;
	struct ollama_times t;
	/* {"model":"M","created_at":"YYYY-MM-DDTHH:MM:SS of second */
	char		 head[AGENCY_NAME_MAX * 6 + 64];
	size_t		 headlen;	/* up to its time */
	size_t		 prefixlen;	/* and with it */
	int64_t		 second;
	int64_t		 first;		/* ns, the first token, or 0 */
	int64_t		 pieces;	/* chunks that carried tokens */
	int64_t		 ptok;		/* usage, -1: not given */
	int64_t		 ctok;
	int64_t		 prompt_ns;	/* timings, -1: not given */
	int64_t		 eval_ns;
	char		 reason[32];	/* done_reason, "" until one came */
	int		 ended;		/* [DONE] came */
	int		 done;		/* the last line (or an error) went */
	/* SSE: a line cut by the end of a piece; an event's data, in data
	 * or, while it is in the piece being read, at borrow */
	struct buf	 line;
	int		 cr;		/* the last piece ended in CR */
	struct buf	 data;
	const char	*borrow;
	size_t		 borrowlen;
	int		 hasdata;
	int		 errevent;	/* "event: error" */
	struct ollama_call call;
	struct buf	 calls;		/* a whole answer's, made */
	struct buf	 lp;		/* a chunk's logprobs, made */
};

/* For the request r, answered as model (the name it gave, or the one
 * picked for it when it gave none). */
void		 ollama_stream_init(struct ollama_stream *,
		    const struct ollama_req *, const char *,
		    const struct ollama_times *);
void		 ollama_stream_free(struct ollama_stream *);
/*
 * Bytes of the model server's SSE body as they come (any pieces), at
 * now: the lines they make are appended to out.  0, or -1 when the
 * stream is over (its last line, or an error line, is in out); once
 * over, nothing more is written.
 */
int		 ollama_stream_feed(struct ollama_stream *, const char *,
		    size_t, int64_t, struct buf *);
/* One event's data (a chunk of JSON, or [DONE]): as feed. */
int		 ollama_chunk(struct ollama_stream *, const char *, size_t,
		    int64_t, struct buf *);
/* The model server's body ended: the last line, or an error line when
 * it ended before its end.  Nothing when the stream was over. */
void		 ollama_stream_end(struct ollama_stream *, int64_t,
		    struct buf *);
/* The answer failed on agency's side (a timeout, a closed connection):
 * an error line, unless the stream was over. */
void		 ollama_stream_fail(struct ollama_stream *, const char *,
		    struct buf *);
/*
 * A whole answer (not streamed: a chat or a generate of "stream":
 * false, or embeddings) into one object in out: 0, or -1 with Ollama's
 * error shape in out instead (a 502: the model server's answer is not
 * what it should be).
 */
int		 ollama_answer(struct ollama_stream *, const char *, size_t,
		    int64_t, struct buf *);
/* The model server's error answer (status, body) in Ollama's shape;
 * the status to answer with. */
int		 ollama_upstream_error(int, const char *, size_t, struct buf *);

/* What agency knows of a model, for the listings. */
struct ollama_model {
	const char	*name;
	const char	*runtime;
	const char	*upstream;	/* file or directory */
	int		 kind;		/* enum model_kind */
	int64_t		 modified;	/* ns since the epoch */
	int64_t		 size;		/* bytes; 0: not known */
	const char	*family;	/* "": not known */
	const char	*parameter_size;
	const char	*quantization;
	int64_t		 context;	/* tokens; 0: not known */
	const char *const *aliases;
	size_t		 naliases;
	/* /api/ps */
	int		 loaded;	/* ready */
	int		 busy;		/* requests in progress */
	int64_t		 last_used;	/* ns since the epoch */
	int64_t		 idle_ns;	/* its idle timeout; 0: none */
	int64_t		 size_vram;
};

/* The listings, into out; now is the real time in ns.  0, or -1 when
 * out of memory. */
int		 ollama_tags(const struct ollama_model *, size_t, struct buf *);
int		 ollama_ps(const struct ollama_model *, size_t, int64_t,
		    struct buf *);
int		 ollama_show(const struct ollama_model *, struct buf *);
int		 ollama_version(struct buf *);
/* The answer to a request that only loaded model (stopped: and stopped
 * it), at the real time now. */
int		 ollama_loaded(const struct ollama_req *, const char *, int,
		    int64_t, struct buf *);
/* What GET / and HEAD / answer where the console is off. */
#define OLLAMA_RUNNING		"Ollama is running"
/* A route that manages models (pull, push, create, copy, delete, the
 * blobs): 1 with e (Ollama's shape) to answer with; 0 for any other. */
int		 ollama_refused(const char *, struct rerr *);

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
