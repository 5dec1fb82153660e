/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * fakelm: an OpenAI-compatible stand-in for llama-server, mlx_lm.server
 * and vllm, for tests, benchmarks and the demo.
 */
#ifndef FAKELM_H
#define FAKELM_H

#include <stddef.h>

#ifndef __dead
#define __dead		__attribute__((__noreturn__))
#endif

#define FAKELM_DEFAULT_TOKENS	16
#define FAKELM_MAX_TOKENS	100000
#define FAKELM_EMBED_DIM	8
#define FAKELM_BYTES_MAX	(64 * 1024 * 1024)	/* X-Fakelm-Answer */
#define FAKELM_MAX_BODY		(16LL * 1024 * 1024)	/* --max-body */

enum stops_on_close {
	STOPS_ALWAYS,
	STOPS_NEVER,
	STOPS_STREAM
};

struct fakelm_conf {
	const char		*host;
	int			 port;
	const char		*model;
	long long		 load_ms;
	long long		 token_ms;
	long long		 slow_exit_ms;
	long long		 crash_after_ms;
	long long		 crash_mid_stream;	/* -1: off */
	int			 ready_status;
	size_t			 rss;
	int			 bind_early;
	int			 fail_load;
	int			 ignore_term;
	int			 stall;
	int			 stamp;
	int			 anthropic_strict;
	long long		 max_body;
	int			 any_model;
	int			 log_requests;
	enum stops_on_close	 stops_on_close;
	size_t			 vram;		/* --vram: bytes, 0 none */
	int			 vram_device;
	const char		*cuda_lib;
};

struct event;
struct event_base;
struct evbuffer;
struct evhttp;
struct evhttp_connection;
struct evhttp_request;
struct json_object;

enum route {
	ROUTE_CHAT,
	ROUTE_COMPLETION
};

/* How an X-Fakelm-Answer answer ends (bytes_answer). */
enum framing {
	FRAME_NONE,		/* not such an answer */
	FRAME_LENGTH,		/* Content-Length */
	FRAME_CHUNKED,		/* Transfer-Encoding: chunked */
	FRAME_CLOSE		/* HTTP/1.0, up to the close */
};

struct word {
	size_t	off;
	size_t	len;
};

struct gen;

/*
 * An API whose answers are generated a token at a time in a shape of its
 * own (apis.c): start and step are for streams (the events before the
 * first token, one token's event), finish answers and ends the request.
 */
struct gen_api {
	void	(*start)(struct gen *);
	void	(*step)(struct gen *);
	void	(*finish)(struct gen *);
};

/* One answer being generated, or one request held by --stall. */
struct gen {
	struct evhttp_request		*req;
	struct evhttp_connection	*evcon;	/* NULL once the client left */
	struct event			*ev;
	struct event			*watch;	/* the client's socket */
	enum route			 route;
	const struct gen_api		*api;	/* NULL: chat or completion */
	int				 stream;
	int				 include_usage;
	int				 stops;	/* a close stops generation */
	int				 stalled;
	int				 closed;
	int				 peer_gone;	/* seen by watch */
	int				 limited;	/* max_tokens given */
	enum framing			 framing;	/* bytes_answer's */
	long long			 tick_ms;	/* between two steps */
	long long			 crash_at;	/* -1: no crash */
	long long			 seqno;	/* an API's next event */
	size_t				 ntok;
	size_t				 sent;
	long long			 prompt_tokens;
	char				*echo;
	struct word			*words;
	size_t				 nwords;
	struct evbuffer			*text;
	char				*model;
	char				*path;
	const char			*method;
	char				 id[48];
	char				 item[64];	/* an API's output item */
	long long			 created;
};

extern struct fakelm_conf	 conf;
extern struct event_base	*base;
extern int			 loaded;

/* serve.c */
void	serve_init(struct evhttp *);
void	log_request(const char *, const char *, const char *, int, size_t,
	    int);
void	send_json(struct evhttp_request *, int, struct json_object *);
void	reply_json(struct evhttp_request *, int, struct json_object *,
	    const char *, const char *, size_t);
void	reply_error(struct evhttp_request *, int, const char *, const char *,
	    const char *, const char *, ...)
	    __attribute__((__format__ (printf, 6, 7)));
struct json_object *parse_body(struct evhttp_request *, const char *);
int	check_model(struct evhttp_request *, const char *, struct json_object *,
	    const char **);
const char *answer_model(const char *);
long long count_words(const char *);
void	content_text(struct json_object *, struct evbuffer *);
struct gen *gen_new(struct evhttp_request *, const char *, const char *);
int	max_tokens_of(struct evhttp_request *, const char *, const char *,
	    struct json_object *, const char *, long long *, int *);
void	gen_begin(struct gen *, long long, int, const char *, const char *);
void	gen_run(struct gen *);
void	gen_token(struct gen *, size_t, struct evbuffer *);
void	gen_sse(struct gen *, const char *, struct json_object *);
void	say(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
void	complain(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
__dead void crash(int);
long long mono_ns(void);
__dead void oom(void);

/* apis.c: Anthropic's Messages, OpenAI's Responses, rerank */
int	apis_route(struct evhttp_request *, const char *);
int	apis_anthropic(const char *);
const char *apis_error_type(int);

/* upload.c: multipart/form-data uploads */
void	upload(struct evhttp_request *, const char *);

/* vram.c: bytes of device memory on a CUDA ordinal, held until exit;
 * -1 with why in the buffer. */
int	vram_claim(const char *, int, size_t, char *, size_t);

#endif /* FAKELM_H */
