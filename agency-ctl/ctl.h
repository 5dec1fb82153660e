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

/* More models than this in one answer is a broken agencyd. */
#define CTL_MODELS_MAX	65536
#define CTL_LINES_MAX	(1024 * 1024)
/* A status error is wrapped to no fewer columns, whatever the width. */
#define CTL_ERROR_MIN	16

struct ctl_status {
	struct proto_status	*models;
	size_t			 n;
	size_t			 size;
};

/* show.c */
int		 status_valid(const struct proto_status *);
int		 status_add(struct ctl_status *, const struct proto_status *);
void		 status_clear(struct ctl_status *);
void		 fmt_size(char *, size_t, int64_t);
void		 fmt_ago(char *, size_t, int64_t, int64_t);
void		 show_clean(char *, const char *, size_t);
void		 show_text(FILE *, const char *);
void		 show_status(FILE *, const struct ctl_status *, int64_t,
		    size_t);
int		 show_status_json(FILE *, const struct ctl_status *);

#endif /* AGENCY_CTL_H */
