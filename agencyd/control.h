/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
#ifndef AGENCYD_CONTROL_H
#define AGENCYD_CONTROL_H

#include "proto.h"

struct agencyd;

/* Clients at once, each socket its own: the main socket keeps room for
 * its clients whatever the restricted one has. */
#define CONTROL_MAIN_CONNS		64
#define CONTROL_RESTRICTED_CONNS	64
#define CONTROL_BACKLOG			16
/* What one client may have queued: a status of some 3000 models fits,
 * or as many lines of a model its follower has yet to read. */
#define CONTROL_QUEUE_BYTES		(1024 * 1024)
#define CONTROL_QUEUE_MSGS		4096
/* Seconds a client may be idle, leave a message unfinished, or not
 * read its answer. */
#define CONTROL_TIMEOUT			10

int	control_check(const char *);
int	control_init(struct agencyd *, const char *, const char *);
void	control_close(struct agencyd *);
void	control_cleanup(struct agencyd *);
/* A new line of a model, for the clients that follow it. */
void	control_model_line(const char *, const char *);
/*
 * Whether a control client is agency-proxy, from its peer credentials
 * (SO_PEERCRED: pid, uid): its pid (proxy_pid, 0: none running), or as
 * root its user's uid (has_uid).  Such a client is refused: a proxy
 * taken over, allowed to connect to the models' Unix sockets, must not
 * reach agencyd's control either.
 */
int	control_peer_is_proxy(pid_t, uid_t, pid_t, int, uid_t);

#endif /* AGENCYD_CONTROL_H */
