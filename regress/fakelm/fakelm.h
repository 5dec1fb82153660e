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
	int			 any_model;
	int			 log_requests;
	enum stops_on_close	 stops_on_close;
};

struct event_base;
struct evhttp;

extern struct fakelm_conf	 conf;
extern struct event_base	*base;
extern int			 loaded;

/* serve.c */
void	serve_init(struct evhttp *);
void	say(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
void	complain(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
__dead void crash(int);
long long mono_ns(void);

#endif /* FAKELM_H */
