/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl import llama-swap: what the importer's own files share:
 * the import's state (struct imp), the models and runtimes it makes,
 * and the functions one file of it offers another.  The calls go one
 * way: import.c uses import_global.c and import_write.c, which use
 * import_model.c, which uses import_value.c.
 */
#ifndef AGENCY_CTL_IMPORT_PRIV_H
#define AGENCY_CTL_IMPORT_PRIV_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>

#include "config.h"
#include "import.h"

#define IMPORT_MODELS_MAX	4096
#define LS_HEALTH_MIN		15	/* s: llama-swap raises a lower one */
#define LS_START_PORT		5800	/* llama-swap's and agency's */
#define IMPORT_PORTS		200	/* the size of agency's default range */
#define LISTEN_PORT		8080	/* agency's front door and llama-swap's,
					 * unless told otherwise */
#define MAX_REQUESTS_LIMIT	65535	/* agency.conf's max requests */
/* A guess of the context's memory a token: f16 keys and values of a
 * 7-8B model with grouped-query attention.  The sizing issue's
 * estimate from the file's header replaces it. */
#define GUESS_KV_TOKEN		(128 * 1024)
#define COMMENT_WIDTH		72
/* Models of one program and runtime settings looked at together for
 * the commands they share: the search is quadratic in them. */
#define CLUSTER_MAX		64
#define IMP_TEXT_MAX		2048	/* a note's or an error's text */

enum ex_flags {
	EX_CMD = 0x01,		/* ${MODEL_ID} is %m, comment lines out */
	EX_PID = 0x02,		/* ${PID} may stay (cmdStop) */
	EX_PORTS = 0x04,	/* cmd: whether it has ${PORT} decides */
};

struct imodel {
	char		*id;
	int		 line;
	int		 skip;		/* written as a comment only */
	char		*skipwhy;
	struct macros	 scope;		/* MODEL_ID, the globals, its own */
	int		 uses_port;	/* cmd has ${PORT} */
	struct words	 argv;
	char		*file;		/* the model file named in cmd */
	char		*upstream;
	const char	*kind;
	char		*ready;		/* NULL: /health */
	int		 send_upstream;
	int		 progress;	/* -1: the global one */
	char		*stop;		/* a stop command (template) */
	struct words	 strip;		/* sorted */
	int64_t		 idle;		/* s; -1: the global one */
	long long	 max_requests;
	struct words	 aliases;
	struct words	 env;
	int		 unlisted;
	int		 preload;
	int64_t		 memory;	/* bytes; 0: agency's own */
	char		*memory_why;
	char		*notes;		/* comments for its block */
	size_t		 noteslen;
	FILE		*notesf;
	size_t		 rt;		/* its runtime */
	char		*args;		/* its own arguments (%a) */
};

struct iruntime {
	char		 name[AGENCY_NAME_MAX];
	char		 command[AGENCY_CMD_MAX];
	size_t		 model;		/* its first model: the settings */
	char		*shared;	/* features.args off: with %a */
	char		*others;	/* the runtimes it would be one with */
};

struct isect {
	FILE		*f;
	char		*buf;
	size_t		 len;
};

/* A message for stderr; they are said in the order of the lines. */
struct inote {
	int		 line;
	size_t		 seq;
	char		*text;
};

struct inotes {
	struct inote	*v;
	size_t		 n;
	size_t		 size;
};

struct imp {
	const struct import_opts *o;
	int			 nerr;
	struct inotes		 errs;
	struct inotes		 notes;
	struct isect		 glob;		/* global statements */
	struct isect		 keys;
	struct isect		 trail;		/* groups and the like */
	struct macros		 gm;
	struct imodel		*m;
	size_t			 nm;
	struct iruntime		*rt;
	size_t			 nrt;
	int			 progress;	/* -1: not given */
	int			 include_aliases;
	int			 nkeys;
};

void	vunmark(char *, size_t, const char *, va_list);
void	imp_err(struct imp *, int, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));
void	notes_print(struct inotes *, const char *, FILE *);
void	imp_note(struct imp *, FILE *, const char *, int,
		    const char *, const char *, ...)
		    __attribute__((__format__ (printf, 6, 7)));
void	put_comment(FILE *, const char *, const char *);
void	put_str(FILE *, const char *);
int	sect_open(struct isect *);
void	sect_close(struct isect *);
int	str_ok(const char *, size_t);
int	valid_id(const char *);
int	parse_bool(const char *, long long *);
char	*expand(struct imp *, struct imodel *, const struct ynode *,
		    const char *, int);
int	get_int(struct imp *, struct imodel *, const struct ynode *,
		    const char *, long long *);
int	get_bool(struct imp *, struct imodel *, const struct ynode *,
		    const char *, int *);
int	get_list(struct imp *, struct imodel *, const struct ynode *,
		    const char *, struct words *);
void	read_macros(struct imp *, const struct ynode *,
		    struct macros *, const char *);
void	model_skip(struct imp *, struct imodel *, int, const char *,
		    ...) __attribute__((__format__ (printf, 4, 5)));
struct imodel *model_find(struct imp *, const char *);
void	read_models(struct imp *, const struct ynode *);
const char *prog_base(const struct imodel *);
void	read_routing(struct imp *, const struct ynode *,
		    const struct ynode *);
void	read_global(struct imp *, const struct ynode *,
		    const struct ynode *);
int	share(struct imp *, const size_t *, size_t, char *, size_t);
void	runtimes_make(struct imp *);
void	write_runtime(struct imp *, FILE *, const struct iruntime *);
void	write_model(struct imp *, FILE *, const struct imodel *);
void	imodel_free(struct imodel *);

#endif /* AGENCY_CTL_IMPORT_PRIV_H */
