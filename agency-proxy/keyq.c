/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A key's "max requests": how many of its requests are in progress, and
 * those that wait for one of them to end, first come first served.
 * Counted by the key's name, so that a reload that keeps the key keeps
 * its count.  The waiting items are forward.c's requests, opaque here.
 *
 * The proxy keeps this count rather than the pool: the proxy is what
 * tells keys apart, and a proxy that lied about a request's key could
 * as well have let it in without one.  A request waits here before it
 * asks agencyd for a hold; past its slot, it is in the pool's queue like
 * any other.
 *
 * Calls: none.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>

#include "proxy.h"

struct kitem {
	TAILQ_ENTRY(kitem)	 entry;
	void			*item;
};

struct keyq {
	TAILQ_ENTRY(keyq)	 entry;
	char			 name[AGENCY_NAME_MAX];
	int64_t			 max;		/* the last one asked with */
	uint64_t		 running;
	TAILQ_HEAD(, kitem)	 waiting;
};

static TAILQ_HEAD(, keyq)	 keyqs = TAILQ_HEAD_INITIALIZER(keyqs);

static struct keyq *
keyq_find(const char *name)
{
	struct keyq	*q;

	TAILQ_FOREACH(q, &keyqs, entry)
		if (strcmp(q->name, name) == 0)
			return (q);
	return (NULL);
}

/* A key nobody counts on any more is forgotten. */
static void
keyq_gc(struct keyq *q)
{
	if (q->running > 0 || !TAILQ_EMPTY(&q->waiting))
		return;
	TAILQ_REMOVE(&keyqs, q, entry);
	free(q);
}

/*
 * A request of key name, whose bound is max (> 0): 1 when it may go on
 * (it has a slot), 0 when it waits (its turn comes from keyq_leave), -1
 * out of memory.
 */
int
keyq_enter(const char *name, int64_t max, void *item)
{
	struct keyq	*q;
	struct kitem	*ki;

	if ((q = keyq_find(name)) == NULL) {
		if ((q = calloc(1, sizeof(*q))) == NULL)
			return (-1);
		(void)strlcpy(q->name, name, sizeof(q->name));
		TAILQ_INIT(&q->waiting);
		TAILQ_INSERT_TAIL(&keyqs, q, entry);
	}
	q->max = max;
	if (q->running < (uint64_t)max && TAILQ_EMPTY(&q->waiting)) {
		q->running++;
		return (1);
	}
	if ((ki = calloc(1, sizeof(*ki))) == NULL) {
		keyq_gc(q);
		return (-1);
	}
	ki->item = item;
	TAILQ_INSERT_TAIL(&q->waiting, ki, entry);
	return (0);
}

/*
 * A request of key name ends: one that had a slot gives it to the one
 * that waited longest, which is returned (its slot taken; NULL when none
 * waits, or the bound is still reached); one that waited leaves the
 * queue.
 */
void *
keyq_leave(const char *name, void *item, int slot)
{
	struct keyq	*q;
	struct kitem	*ki;
	void		*next = NULL;

	if ((q = keyq_find(name)) == NULL)
		return (NULL);
	if (!slot) {
		TAILQ_FOREACH(ki, &q->waiting, entry)
			if (ki->item == item)
				break;
		if (ki != NULL) {
			TAILQ_REMOVE(&q->waiting, ki, entry);
			free(ki);
		}
	} else {
		if (q->running > 0)
			q->running--;
		if (q->running < (uint64_t)q->max &&
		    (ki = TAILQ_FIRST(&q->waiting)) != NULL) {
			TAILQ_REMOVE(&q->waiting, ki, entry);
			next = ki->item;
			free(ki);
			q->running++;
		}
	}
	keyq_gc(q);
	return (next);
}
