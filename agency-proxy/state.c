/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * What the whole process shares, at the bottom of the proxy's files: the
 * event base, the configuration in force (struct proxy, px), and the
 * loop's clock.  Calls no other file of agency-proxy.
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <time.h>

#include "proxy.h"

static struct proxy	 proxy;
struct proxy		*px = &proxy;

/*
 * Milliseconds of CLOCK_MONOTONIC, read once a loop turn: proxy.c's loop
 * calls now_reset before each turn, and a turn is far shorter than a
 * millisecond's worth of what is timed with it.
 */
static int64_t	 now_cache = -1;

int64_t
now_ms(void)
{
	struct timespec	 ts;

	if (now_cache >= 0)
		return (now_cache);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now_cache = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	return (now_cache);
}

void
now_reset(void)
{
	now_cache = -1;
}
