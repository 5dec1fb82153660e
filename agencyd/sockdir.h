/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The directories of the models' Unix sockets (sockdir.c): one under a
 * base directory of this agencyd's for each model process whose command
 * has %s (agency.conf(5)), entered only by the model user and the proxy.
 */
#ifndef AGENCYD_SOCKDIR_H
#define AGENCYD_SOCKDIR_H

#include <sys/types.h>

#include <limits.h>

#include "proto.h"

#define SOCKDIR_SOCK	"model.sock"	/* in its dir; llama-server wants .sock */

struct sockdirs {
	char	 base[PATH_MAX];	/* "": not set up */
	size_t	 strip;		/* bytes of base the proxy does not see:
				 * its chroot's path */
	int	 shared;	/* root: model user and proxy group */
	uid_t	 model_uid;
	gid_t	 model_gid;
	gid_t	 proxy_gid;
	char	 why[128];	/* why base is "" */
};

/* A model's directory, the path of its socket as the server is told
 * it and as the proxy reaches it. */
struct sockdir {
	char	 dir[PATH_MAX];		/* "": none */
	char	 server[PROTO_SOCK_MAX];
	char	 proxy[PROTO_SOCK_MAX];
};

/*
 * The base directory for the control socket ctlsock: in the proxy's
 * chroot (the home of proxy_user) when running as root, else beside
 * ctlsock; named after ctlsock, so that agencyd instances on one host
 * never share one.  What a previous run left there is removed.  0, or
 * -1 with sd->why (each later sockdir_make fails with it).
 */
int	 sockdir_init(struct sockdirs *, const char *, const char *,
	    const char *);
/* A new directory for a model process: 0, or -1 with a message. */
int	 sockdir_make(const struct sockdirs *, struct sockdir *, char *,
	    size_t);
/* The directory and what its model left in it, gone. */
void	 sockdir_remove(const struct sockdirs *, struct sockdir *);
/* The base directory and everything in it, gone (shutdown). */
void	 sockdir_fini(struct sockdirs *);

#endif /* AGENCYD_SOCKDIR_H */
