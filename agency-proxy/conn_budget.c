/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The budget of request bodies over all connections (body buffer): a
 * body's length (max body for a chunked one) is taken from it when its
 * header has arrived and passed the access checks, and given back when
 * its answer is out; a body that does not fit is refused (conn.c
 * answers 503).  Bodies over BODY_SMALL may take only seven eighths of
 * it (max body at least), so that small requests find room while big
 * ones are refused.
 *
 * Each body is taken for an owner (the request's key, or its client's
 * address or user: http.c names it), and an owner may hold only its
 * share of the budget (body share, a percentage), so that one key or
 * client cannot take the room of the others; an owner that holds
 * nothing may always take one body, so that the share never refuses a
 * body the budget has room for on its own.
 *
 * Invariants: taken is the sum of what the connections hold; an
 * owner's taken the sum of what its holds hold, and an owner is kept
 * while it has holds.
 *
 * Calls: none.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

#define BODY_SMALL	(64 * 1024)	/* may use all of the budget */
#define OWNER_BUCKETS	1024		/* a power of two */

struct bowner {
	LIST_ENTRY(bowner)	 entry;
	int64_t			 taken;
	size_t			 holds;
	char			 id[];
};
LIST_HEAD(bowners, bowner);

static int64_t		 budget;	/* bytes, all bodies */
static int64_t		 max_body;
static int64_t		 share;		/* bytes, an owner's */
static int64_t		 taken;
static uint64_t		 refused;
static uint64_t		 share_refused;
static struct bowners	 owners[OWNER_BUCKETS];

/*
 * A new or reloaded configuration; a budget below one body could never
 * take it, so it is one body at least.  percent: an owner's share of
 * it, 1 to 100.
 */
void
conn_budget_configure(int64_t body_buffer, int64_t body_max,
    int64_t percent)
{
	max_body = body_max;
	budget = body_buffer > max_body ? body_buffer : max_body;
	share = budget / 100 * percent + budget % 100 * percent / 100;
}

static struct bowners *
bucket(const char *id)
{
	uint32_t	 h = 2166136261u;	/* FNV-1a */

	for (; *id != '\0'; id++)
		h = (h ^ (unsigned char)*id) * 16777619u;
	return (&owners[h & (OWNER_BUCKETS - 1)]);
}

/* The owner named id, made when it holds nothing yet; NULL if out of
 * memory. */
static struct bowner *
owner_get(const char *id)
{
	struct bowners	*b = bucket(id);
	struct bowner	*o;
	size_t		 n = strlen(id) + 1;

	LIST_FOREACH(o, b, entry)
		if (strcmp(o->id, id) == 0)
			return (o);
	if ((o = calloc(1, sizeof(*o) + n)) == NULL)
		return (NULL);
	memcpy(o->id, id, n);
	LIST_INSERT_HEAD(b, o, entry);
	return (o);
}

static void
owner_put(struct bowner *o)
{
	if (o->holds == 0) {
		LIST_REMOVE(o, entry);
		free(o);
	}
}

/*
 * Take n bytes for the body about to be read into h (empty: it holds
 * none), for the owner named id: 0, or -1 when they do not fit in the
 * budget or in the owner's share.
 */
int
conn_budget_take(struct bhold *h, const char *id, int64_t n)
{
	struct bowner	*o;
	int64_t		 room = budget;

	if (n == 0)
		return (0);
	/* a body of max body fits when nothing else is held */
	if (n > BODY_SMALL && (room -= budget / 8) < max_body)
		room = max_body;
	if (taken + n > room) {
		refused++;
		return (-1);
	}
	if ((o = owner_get(id)) == NULL) {
		refused++;
		return (-1);
	}
	/* its first body always; more only within its share */
	if (o->taken > 0 && o->taken + n > share) {
		owner_put(o);
		refused++;
		share_refused++;
		return (-1);
	}
	taken += n;
	o->taken += n;
	o->holds++;
	h->n = n;
	h->owner = o;
	return (0);
}

/* The answer is out, or the connection gone: what it held is let go. */
void
conn_budget_give(struct bhold *h)
{
	taken -= h->n;
	if (h->owner != NULL) {
		h->owner->taken -= h->n;
		h->owner->holds--;
		owner_put(h->owner);
	}
	h->n = 0;
	h->owner = NULL;
}

/* The bytes the owner named id holds (0: none), for the tests. */
int64_t
conn_budget_held(const char *id)
{
	struct bowner	*o;

	LIST_FOREACH(o, bucket(id), entry)
		if (strcmp(o->id, id) == 0)
			return (o->taken);
	return (0);
}

/* The budget's figures into the connections' counters. */
void
conn_budget_stats(struct conn_stats *cs)
{
	cs->body_bytes = taken;
	cs->body_max = budget;
	cs->body_refused = refused;
	cs->body_share_refused = share_refused;
}
