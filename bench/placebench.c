/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * placebench: the cost of the GPU placement decision (agencyd/place.c)
 * over 8 devices and 500 models (issue 30), in one run beside the pool's
 * host-memory decision (pool_room) over the same 500 models, so that the
 * figure comes as a ratio as well as in microseconds.
 *
 * The table: 8 devices of 80 GiB, each 2-6 GiB used by other programs;
 * 400 models held on them (50 a device; 1 in 10 over two devices),
 * 70% idle, 20% busy, 10% not lazy, 0.5-2 GiB each, last used at
 * random; 100 stopped.  The model placed needs, in turn:
 *
 *	fits		1 GiB anywhere (there is room)
 *	evict		24 GiB on one device (idle models must stop)
 *	evict-pinned	24 GiB on device 5 alone
 *	evict-span2	16 GiB on each of two devices
 *	wait		on device 3 alone, more than its idle models
 *			free, less than its busy ones free besides
 *	never		100 GiB on one device
 *
 * Each case runs DECISIONS times (default 2000, BENCH_DECISIONS); the
 * median of 5 rounds is reported in us a decision.  Prints the load
 * average first: figures are only comparable within one run.
 */
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu.h"
#include "pool.h"

#define NDEV		8
#define NMODEL		500
#define ROUNDS		5
#define G		(1LL << 30)

static struct place_table	 t;
static struct place_model	 m[NMODEL];
static struct pool_view		 v[NMODEL];
static size_t			 stop[2 * NMODEL];
static struct pool_cand		 cand[NMODEL];
static uint64_t			 seed = 42;

static uint64_t
rnd(void)
{
	uint64_t	 z = (seed += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (z ^ (z >> 31));
}

static double
now_us(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec * 1e6 + ts.tv_nsec / 1e3);
}

static int
dbl_cmp(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

static void
build(void)
{
	size_t		 i;
	uint32_t	 d;
	unsigned int	 r;

	memset(&t, 0, sizeof(t));
	t.host_free = 64 * G;
	t.budget_free = PLACE_UNCHECKED;
	t.ndev = NDEV;
	for (d = 0; d < NDEV; d++) {
		t.dev[d].total = 80 * G;
		t.dev[d].headroom = G / 2;
		t.dev[d].outside = (int64_t)(2 + rnd() % 5) * G;
		t.dev[d].usable = 1;
	}
	for (i = 0; i < NMODEL; i++) {
		memset(&m[i], 0, sizeof(m[i]));
		m[i].allowed = ~0ULL;
		m[i].host = (int64_t)(1 + rnd() % 4) * G;
		m[i].last_used = (int64_t)(rnd() % 1000000);
		m[i].span = 1;
		m[i].share[0] = G / 2 + (int64_t)(rnd() % (3 * G / 2));
		m[i].dev[0] = (uint8_t)(i % NDEV);
		if (i % 10 == 9) {
			m[i].span = 2;
			m[i].share[1] = m[i].share[0];
			m[i].dev[1] = (uint8_t)((i + 1) % NDEV);
		}
		r = (unsigned int)(rnd() % 10);
		if (i >= 400)
			m[i].state = PLACE_STOPPED;
		else
			m[i].state = r < 7 ? PLACE_IDLE : r < 9 ? PLACE_BUSY :
			    PLACE_FIXED;
		/* The pool's view of the same models. */
		v[i].state = m[i].state == PLACE_STOPPED ? STATE_STOPPED :
		    STATE_READY;
		v[i].lazy = m[i].state != PLACE_FIXED;
		v[i].in_progress = m[i].state == PLACE_BUSY;
		v[i].last_used = m[i].last_used;
		v[i].need = m[i].host;
		v[i].running = m[i].state != PLACE_STOPPED;
	}
	t.model = m;
	t.nmodel = NMODEL;
}

/* The model placed: the last one, stopped. */
static void
want(uint32_t span, int64_t share, uint64_t allowed)
{
	struct place_model	*s = &m[NMODEL - 1];
	uint32_t		 j;

	s->state = PLACE_STOPPED;
	s->span = span;
	s->allowed = allowed;
	s->host = 4 * G;
	for (j = 0; j < span; j++)
		s->share[j] = share;
}

/* On device d: what stopping every lazy model there would free, and a
 * GiB less (more than the idle ones alone free: it has busy ones). */
static int64_t
wait_share(uint8_t d)
{
	int64_t		 room;
	size_t		 i;
	uint32_t	 j;

	room = t.dev[d].total - t.dev[d].headroom - t.dev[d].outside;
	for (i = 0; i < NMODEL - 1; i++)
		for (j = 0; j < m[i].span; j++)
			if (m[i].dev[j] == d && m[i].state == PLACE_FIXED)
				room -= m[i].share[j];
	return (room - G);
}

static double
run(const char *name, int n, struct place_result *r)
{
	double		 us[ROUNDS], t0;
	int		 k, i;

	for (k = 0; k < ROUNDS; k++) {
		t0 = now_us();
		for (i = 0; i < n; i++) {
			r->stop = stop;
			(void)place_decide(&t, NMODEL - 1, r);
		}
		us[k] = (now_us() - t0) / n;
	}
	qsort(us, ROUNDS, sizeof(us[0]), dbl_cmp);
	printf("%-14s %-6s %5zu %12.2f\n", name,
	    place_verdict_name(r->verdict), r->nstop, us[ROUNDS / 2]);
	return (us[ROUNDS / 2]);
}

int
main(void)
{
	struct place_result	 r;
	struct mem_snapshot	 mem;
	double			 us[ROUNDS], t0, evict, room, la[3];
	const char		*e;
	struct pool_stops	 st;
	int			 n = 2000, k, i;

	if ((e = getenv("BENCH_DECISIONS")) != NULL && atoi(e) > 0)
		n = atoi(e);
	if (getloadavg(la, 3) == -1)
		la[0] = la[1] = la[2] = -1;
	build();
	printf("placebench: %d devices, %d models, %d decisions a round, "
	    "median of %d rounds; load average %.2f %.2f %.2f\n", NDEV,
	    NMODEL, n, ROUNDS, la[0], la[1], la[2]);
	printf("%-14s %-6s %5s %12s\n", "case", "result", "stops",
	    "us/decision");
	memset(&r, 0, sizeof(r));
	want(1, G, ~0ULL);
	(void)run("fits", n, &r);
	want(1, 24 * G, ~0ULL);
	evict = run("evict", n, &r);
	want(1, 24 * G, 1ULL << 5);
	(void)run("evict-pinned", n, &r);
	want(2, 16 * G, ~0ULL);
	(void)run("evict-span2", n, &r);
	want(1, wait_share(3), 1ULL << 3);
	(void)run("wait", n, &r);
	want(1, 100 * G, ~0ULL);
	(void)run("never", n, &r);

	/* The pool's host decision over the same models, for the ratio. */
	memset(&st, 0, sizeof(st));
	st.cand = cand;
	st.stop = stop;
	mem.total = 512 * G;
	mem.available = 8 * G;
	for (k = 0; k < ROUNDS; k++) {
		t0 = now_us();
		for (i = 0; i < n; i++)
			(void)pool_room(v, NMODEL, NMODEL - 1, &mem, 2 * G, 0,
			    ROOM_MODE_TURN, &st);
		us[k] = (now_us() - t0) / n;
	}
	qsort(us, ROUNDS, sizeof(us[0]), dbl_cmp);
	room = us[ROUNDS / 2];
	printf("%-14s %-6s %5s %12.2f\n", "pool_room", "-", "-", room);
	printf("evict / pool_room: %.1fx\n", room > 0 ? evict / room : 0);
	return (0);
}
