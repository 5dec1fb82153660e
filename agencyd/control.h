/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
#ifndef AGENCYD_CONTROL_H
#define AGENCYD_CONTROL_H

#include "proto.h"

struct agencyd;
struct ctl_conn;

/* Clients at once, each socket its own: the main socket keeps room for
 * its clients whatever the restricted one has. */
#define CONTROL_MAIN_CONNS		64
#define CONTROL_RESTRICTED_CONNS	64
#define CONTROL_BACKLOG			16
/* What one client may have queued: a status of some 800 models fits. */
#define CONTROL_QUEUE_BYTES		(1024 * 1024)
#define CONTROL_QUEUE_MSGS		4096
/* Seconds a client may be idle, leave a message unfinished, or not
 * read its answer. */
#define CONTROL_TIMEOUT			10

int	control_check(const char *);
int	control_init(struct agencyd *, const char *, const char *);
void	control_close(struct agencyd *);
void	control_cleanup(struct agencyd *);
void	control_line(struct ctl_conn *, const char *);
/* A line for the client that asked for a reload (NULL: only the log). */
void	control_info(struct ctl_conn *, const char *, ...)
	    __attribute__((__format__ (printf, 2, 3)));

/* reload.c: 0 when the new configuration is in force */
int	agencyd_reload(struct agencyd *, struct ctl_conn *);

#endif /* AGENCYD_CONTROL_H */
