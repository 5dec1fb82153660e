/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * What the unit tests of processes and files share: the descriptors
 * this process holds (a function must leave none open on any way it
 * ends), and a monotonic clock in ms for their deadlines.
 */
#ifndef AGENCY_TESTUTIL_H
#define AGENCY_TESTUTIL_H

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Entries of /proc/self/fd (with ".", ".." and the one read it with). */
static inline int
open_fds(void)
{
	DIR	*d;
	int	 n = 0;

	if ((d = opendir("/proc/self/fd")) == NULL)
		abort();
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return (n);
}

static inline int64_t
test_now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

#endif /* AGENCY_TESTUTIL_H */
