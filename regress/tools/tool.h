/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * What the load tools (badreq, soakc, slowloris) share: a monotonic
 * clock in milliseconds, a seeded generator so that a run can be made
 * again from its seed, and the set-up for many connections.
 */
#ifndef REGRESS_TOOL_H
#define REGRESS_TOOL_H

#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <err.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static inline int64_t
now_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* splitmix64: the next number from *state. */
static inline uint64_t
splitmix64(uint64_t *state)
{
	uint64_t	z;

	z = (*state += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (z ^ (z >> 31));
}

/* A write to a closed connection fails rather than kills; as many fds
 * as the hard limit allows. */
static inline void
tool_init(void)
{
	struct rlimit	rl;

	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

/*
 * A connection to sin, of a socket made with the flags (SOCK_NONBLOCK:
 * one still connecting is returned); -1, said, if it cannot be made.
 */
static inline int
tool_connect(const struct sockaddr_in *sin, int flags)
{
	int	 fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | flags, 0)) == -1) {
		warn("socket");
		return (-1);
	}
	if (connect(fd, (const struct sockaddr *)sin, sizeof(*sin)) == -1 &&
	    errno != EINPROGRESS) {
		warn("connect");
		close(fd);
		return (-1);
	}
	return (fd);
}

#endif /* REGRESS_TOOL_H */
