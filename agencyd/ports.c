/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The model ports agency-proxy may connect to, as a set of ranges (a
 * struct proto_ports): the configured range, and the port of each model
 * process a reload left outside it until that model is moved.  Kept
 * sorted, each range apart from the next by at least one port; with
 * more ranges than fit, the two closest become one, so the set only
 * ever grows to cover what it must.  Pure functions, for ports_test;
 * it calls no other file.
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <stdio.h>
#include <string.h>

#include "agencyd.h"

void
ports_init(struct proto_ports *p, uint16_t lo, uint16_t hi)
{
	memset(p, 0, sizeof(*p));
	p->n = 1;
	p->r[0].lo = lo;
	p->r[0].hi = hi;
}

int
ports_has(const struct proto_ports *p, uint16_t port)
{
	uint32_t	i;

	for (i = 0; i < p->n; i++)
		if (port >= p->r[i].lo && port <= p->r[i].hi)
			return (1);
	return (0);
}

/* Join range i and the one after it. */
static void
join(struct proto_port_range *r, uint32_t *n, uint32_t i)
{
	if (r[i + 1].hi > r[i].hi)
		r[i].hi = r[i + 1].hi;
	memmove(&r[i + 1], &r[i + 2], (*n - i - 2) * sizeof(*r));
	(*n)--;
}

void
ports_add(struct proto_ports *p, uint16_t port)
{
	struct proto_port_range	 r[PROTO_PORT_RANGES + 1];
	uint32_t		 n = p->n, i, best;

	if (port == 0 || ports_has(p, port))
		return;
	memcpy(r, p->r, n * sizeof(r[0]));
	for (i = 0; i < n && r[i].lo < port; i++)
		;
	memmove(&r[i + 1], &r[i], (n - i) * sizeof(r[0]));
	r[i].lo = r[i].hi = port;
	n++;
	/* Touching a neighbour: one range. */
	if (i + 1 < n && (int)r[i].hi + 1 == (int)r[i + 1].lo)
		join(r, &n, i);
	if (i > 0 && (int)r[i - 1].hi + 1 == (int)r[i].lo)
		join(r, &n, i - 1);
	if (n > PROTO_PORT_RANGES) {
		/* Too many: cover the smallest gap. */
		for (best = 0, i = 1; i + 1 < n; i++)
			if (r[i + 1].lo - r[i].hi < r[best + 1].lo - r[best].hi)
				best = i;
		join(r, &n, best);
	}
	memcpy(p->r, r, n * sizeof(r[0]));
	p->n = n;
}

/* Whether every port of a is one of b's. */
int
ports_within(const struct proto_ports *a, const struct proto_ports *b)
{
	uint32_t	i, j;

	for (i = 0; i < a->n; i++) {
		for (j = 0; j < b->n; j++)
			if (a->r[i].lo >= b->r[j].lo &&
			    a->r[i].hi <= b->r[j].hi)
				break;
		if (j == b->n)
			return (0);
	}
	return (1);
}

/* "5800-5819, 29005" for messages. */
void
ports_format(const struct proto_ports *p, char *buf, size_t len)
{
	size_t		 off = 0;
	uint32_t	 i;
	int		 k;

	if (len == 0)
		return;
	buf[0] = '\0';
	for (i = 0; i < p->n && off < len; i++) {
		if (p->r[i].lo == p->r[i].hi)
			k = snprintf(buf + off, len - off, "%s%u",
			    i > 0 ? ", " : "", p->r[i].lo);
		else
			k = snprintf(buf + off, len - off, "%s%u-%u",
			    i > 0 ? ", " : "", p->r[i].lo, p->r[i].hi);
		if (k < 0)
			break;
		off += (size_t)k;
	}
}
