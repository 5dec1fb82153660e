/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl: what the main program shares with its formatting code
 * (show.c), which is kept free of sockets so that it can be tested alone.
 */
#ifndef AGENCY_CTL_H
#define AGENCY_CTL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "proto.h"

/*
 * Exit statuses, as agency-ctl(8) lists them: a script tells a mistake
 * of its own from an agencyd that is not there, one that said no, and
 * a model that failed.
 */
#define CTL_EXIT_OK		0
#define CTL_EXIT_ERROR		1	/* agency-ctl's own: its output */
#define CTL_EXIT_USAGE		2	/* the command line */
#define CTL_EXIT_UNREACHABLE	3	/* no agencyd answered as it must */
#define CTL_EXIT_REFUSED	4	/* agencyd refused the command */
#define CTL_EXIT_FAILED		5	/* the model failed (its load) */

/* More models or aliases than this in one answer is a broken agencyd. */
#define CTL_MODELS_MAX	65536
#define CTL_ALIASES_MAX	(1024 * 1024)
#define CTL_LINES_MAX	(1024 * 1024)
/* A status error is wrapped to no fewer columns, whatever the width. */
#define CTL_ERROR_MIN	16

struct ctl_status {
	struct proto_status	*models;
	size_t			 n;
	size_t			 size;
	struct proto_alias	*aliases;	/* each after its model's */
	size_t			 naliases;
	size_t			 asize;
	struct proto_memory	 memory;
	int			 has_memory;
	struct proto_key_status	*keys;		/* requests by API key */
	size_t			 nkeys;
	size_t			 keysize;
};

/* show.c */
int		 status_valid(const struct proto_status *);
int		 status_add(struct ctl_status *, const struct proto_status *);
int		 status_add_alias(struct ctl_status *,
		    const struct proto_alias *);
int		 status_set_memory(struct ctl_status *,
		    const struct proto_memory *);
int		 status_add_key(struct ctl_status *,
		    const struct proto_key_status *);
void		 status_clear(struct ctl_status *);
void		 fmt_size(char *, size_t, int64_t);
void		 fmt_ago(char *, size_t, int64_t, int64_t);
void		 fmt_span(char *, size_t, int64_t);
void		 fmt_idle_stop(char *, size_t, int64_t,
		    const struct proto_status *);
void		 fmt_memory(char *, size_t, const struct proto_memory *);
void		 show_clean(char *, const char *, size_t);
void		 show_text(FILE *, const char *);
void		 show_status(FILE *, const struct ctl_status *, int64_t,
		    size_t);
void		 show_model(FILE *, const struct ctl_status *, int64_t,
		    size_t);
int		 show_status_json(FILE *, const struct ctl_status *);

#endif /* AGENCY_CTL_H */
