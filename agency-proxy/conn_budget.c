/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The budget of request bodies over all connections (body buffer): a
 * body's length (max body for a chunked one) is taken from it when its
 * header arrives and given back when its answer is out; a body that
 * does not fit is refused (conn.c answers 503).  Bodies over BODY_SMALL
 * may take only seven eighths of it (max body at least), so that small
 * requests find room while big ones are refused.
 *
 * Invariant: taken is the sum of what the connections hold.
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <stdint.h>

#include "proxy.h"

#define BODY_SMALL	(64 * 1024)	/* may use all of the budget */

static int64_t	 budget;		/* bytes, all bodies */
static int64_t	 max_body;
static int64_t	 taken;
static uint64_t	 refused;

/* A new or reloaded configuration; a budget below one body could never
 * take it, so it is one body at least. */
void
conn_budget_configure(int64_t body_buffer, int64_t body_max)
{
	max_body = body_max;
	budget = body_buffer > max_body ? body_buffer : max_body;
}

/*
 * Take n bytes for the body about to be read into *held (0 when it
 * holds none): 0, or -1 when they do not fit.
 */
int
conn_budget_take(int64_t *held, int64_t n)
{
	int64_t	 room = budget;

	if (n == 0)
		return (0);
	/* a body of max body fits when nothing else is held */
	if (n > BODY_SMALL && (room -= budget / 8) < max_body)
		room = max_body;
	if (taken + n > room) {
		refused++;
		return (-1);
	}
	taken += n;
	*held = n;
	return (0);
}

/* The answer is out, or the connection gone: what it held is let go. */
void
conn_budget_give(int64_t *held)
{
	taken -= *held;
	*held = 0;
}

/* The budget's figures into the connections' counters. */
void
conn_budget_stats(struct conn_stats *cs)
{
	cs->body_bytes = taken;
	cs->body_max = budget;
	cs->body_refused = refused;
}
