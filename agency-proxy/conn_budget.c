/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Two budgets over all connections, alike in shape: of request bodies
 * (body buffer: a body's length, taken once its header passed the
 * access checks, given back once answered) and of what else the
 * connections keep (header buffer: unfinished headers, pipelined
 * input, a body's header; taken as a connection's input buffer grows,
 * before it grows).  What does not fit is refused (conn.c answers 503,
 * or leaves pipelined input unread).
 *
 * Each hold has an owner (of a body, its key, or its client's address
 * or user; of the rest, its client's, or its body's owner while a body
 * is read), and an owner holds at most its share of a budget (body
 * share, header share), so that one key or client cannot take the room
 * of the others; one that holds nothing may always take one hold's
 * first bytes.  The bytes given back are counted, for conn.c's trim.
 *
 * Invariants: a budget's taken is the sum of what its holds hold; an
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

struct budget {
	int64_t		 max;		/* bytes, of all holds */
	int64_t		 share;		/* bytes, an owner's */
	int64_t		 taken;
	uint64_t	 refused;
	uint64_t	 share_refused;
	struct bowners	 owners[OWNER_BUCKETS];
};

static struct budget	 bodies;
static struct budget	 headers;
static int64_t		 max_body;
static int64_t		 given;		/* back, since conn_budget_given */

/* percent (1 to 100) of n, without overflow */
static int64_t
percent_of(int64_t n, int64_t percent)
{
	return (n / 100 * percent + n % 100 * percent / 100);
}

/*
 * A new or reloaded configuration; a body budget below one body could
 * never take it, so it is one body at least.  body_pct, header_pct: an
 * owner's share of each, 1 to 100.
 */
void
conn_budget_configure(int64_t body_buffer, int64_t body_max,
    int64_t body_pct, int64_t header_buffer, int64_t header_pct)
{
	max_body = body_max;
	bodies.max = body_buffer > max_body ? body_buffer : max_body;
	bodies.share = percent_of(bodies.max, body_pct);
	headers.max = header_buffer;
	headers.share = percent_of(headers.max, header_pct);
}

static struct bowners *
bucket(struct budget *b, const char *id)
{
	uint32_t	 h = 2166136261u;	/* FNV-1a */

	for (; *id != '\0'; id++)
		h = (h ^ (unsigned char)*id) * 16777619u;
	return (&b->owners[h & (OWNER_BUCKETS - 1)]);
}

/* The owner named id, made when it holds nothing yet; NULL if out of
 * memory. */
static struct bowner *
owner_get(struct budget *b, const char *id)
{
	struct bowners	*l = bucket(b, id);
	struct bowner	*o;
	size_t		 n = strlen(id) + 1;

	LIST_FOREACH(o, l, entry)
		if (strcmp(o->id, id) == 0)
			return (o);
	if ((o = calloc(1, sizeof(*o) + n)) == NULL)
		return (NULL);
	memcpy(o->id, id, n);
	LIST_INSERT_HEAD(l, o, entry);
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
 * n more bytes into h (empty: it holds none yet), for the owner named
 * id when h has none, within room of b: 0, or -1 when they do not fit
 * in room or in the owner's share (nothing changes then).
 */
static int
hold_grow(struct budget *b, struct bhold *h, const char *id, int64_t n,
    int64_t room)
{
	struct bowner	*o = h->owner;

	if (b->taken + n > room) {
		b->refused++;
		return (-1);
	}
	if (o == NULL && (o = owner_get(b, id)) == NULL) {
		b->refused++;
		return (-1);
	}
	/* its first bytes always; more only within its share */
	if (o->taken > 0 && o->taken + n > b->share) {
		if (h->owner == NULL)
			owner_put(o);
		b->refused++;
		b->share_refused++;
		return (-1);
	}
	b->taken += n;
	o->taken += n;
	if (h->owner == NULL) {
		o->holds++;
		h->owner = o;
	}
	h->n += n;
	return (0);
}

/* n of the bytes h holds let go; all of them: h is empty again. */
static void
hold_shrink(struct budget *b, struct bhold *h, int64_t n)
{
	if (n > h->n)
		n = h->n;
	b->taken -= n;
	given += n;
	h->n -= n;
	if (h->owner == NULL)
		return;
	h->owner->taken -= n;
	if (h->n == 0) {
		h->owner->holds--;
		owner_put(h->owner);
		h->owner = NULL;
	}
}

/*
 * Take n bytes for the body about to be read into h (empty: it holds
 * none), for the owner named id: 0, or -1 when they do not fit in the
 * budget or in the owner's share.  Bodies over BODY_SMALL may take
 * only seven eighths of the budget (max body at least), so that small
 * requests find room while big ones are refused.
 */
int
conn_budget_take(struct bhold *h, const char *id, int64_t n)
{
	int64_t		 room = bodies.max;

	if (n == 0)
		return (0);
	/* a body of max body fits when nothing else is held */
	if (n > BODY_SMALL && (room -= bodies.max / 8) < max_body)
		room = max_body;
	return (hold_grow(&bodies, h, id, n, room));
}

/* The answer is out, or the connection gone: what it held is let go. */
void
conn_budget_give(struct bhold *h)
{
	hold_shrink(&bodies, h, h->n);
}

/*
 * A connection's input, of which h holds the bytes beyond its body's,
 * becomes n bytes for the owner named id: 0, or -1 when more do not fit
 * in the budget or in the owner's share (h as it was).  force: more
 * that the connection already has, and cannot refuse, are taken even
 * over the budget.
 */
int
conn_budget_header(struct bhold *h, const char *id, int64_t n, int force)
{
	if (n < h->n) {
		hold_shrink(&headers, h, h->n - n);
		return (0);
	}
	if (n == h->n)
		return (0);
	return (hold_grow(&headers, h, id, n - h->n, force ? INT64_MAX :
	    headers.max));
}

/* The bytes given back since the last call. */
int64_t
conn_budget_given(void)
{
	int64_t	 n = given;

	given = 0;
	return (n);
}

/* The bytes the owner named id holds of b (0: none). */
static int64_t
owner_held(struct budget *b, const char *id)
{
	struct bowner	*o;

	LIST_FOREACH(o, bucket(b, id), entry)
		if (strcmp(o->id, id) == 0)
			return (o->taken);
	return (0);
}

/* What the owner named id holds of the bodies' budget, and of the
 * headers', for the tests. */
int64_t
conn_budget_held(const char *id)
{
	return (owner_held(&bodies, id));
}

int64_t
conn_budget_header_held(const char *id)
{
	return (owner_held(&headers, id));
}

/* The budgets' figures into the connections' counters. */
void
conn_budget_stats(struct conn_stats *cs)
{
	cs->body_bytes = bodies.taken;
	cs->body_max = bodies.max;
	cs->body_refused = bodies.refused;
	cs->body_share_refused = bodies.share_refused;
	cs->header_bytes = headers.taken;
	cs->header_max = headers.max;
	cs->header_refused = headers.refused;
	cs->header_share_refused = headers.share_refused;
}
