/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The descriptors this process holds, for the unit tests that check a
 * function leaves none open on any way it ends.
 */
#ifndef AGENCY_FDS_H
#define AGENCY_FDS_H

#include <dirent.h>
#include <stdlib.h>

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

#endif /* AGENCY_FDS_H */
