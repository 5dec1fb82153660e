/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * place.c: where a model goes on the devices, from tables of devices
 * and models.  Sizes in GiB unless said.
 */
#include <atf-c.h>
#include <stdint.h>
#include <string.h>

#include "gpu.h"

#define G	(1LL << 30)
#define ALL	(~0ULL)

static struct place_table	 t;
static struct place_model	 m[16];
static size_t			 stop[32];
static struct place_result	 r;

/* ndev devices of total GiB each, nothing on them, host unchecked. */
static void
table(uint32_t ndev, int64_t total)
{
	static const char *ids[] = { "GPU-aaaa", "GPU-bbbb", "GPU-cccc",
	    "GPU-dddd" };
	uint32_t	 i;

	memset(&t, 0, sizeof(t));
	memset(m, 0, sizeof(m));
	t.host_free = PLACE_UNCHECKED;
	t.budget_free = PLACE_UNCHECKED;
	t.ndev = ndev;
	for (i = 0; i < ndev; i++) {
		t.dev[i].id = i < 4 ? ids[i] : NULL;
		t.dev[i].total = total * G;
		t.dev[i].usable = 1;
	}
	t.model = m;
	t.nmodel = 0;
}

/* A model of span devices, share GiB on each, allowed anywhere. */
static size_t
model(enum place_state st, uint32_t span, int64_t share, int64_t used)
{
	size_t		 i = t.nmodel++;
	uint32_t	 j;

	m[i].state = st;
	m[i].span = span;
	m[i].allowed = ALL;
	m[i].last_used = used;
	m[i].host = 1 * G;
	for (j = 0; j < span; j++)
		m[i].share[j] = share * G;
	return (i);
}

/* A model held on device d (one slot). */
static size_t
held(enum place_state st, uint8_t d, int64_t share, int64_t used)
{
	size_t	 i = model(st, 1, share, used);

	m[i].dev[0] = d;
	return (i);
}

static enum place_verdict
decide(size_t self)
{
	memset(&r, 0, sizeof(r));
	r.stop = stop;
	ATF_REQUIRE(t.nmodel * 2 <= sizeof(stop) / sizeof(stop[0]));
	return (place_decide(&t, self, &r));
}

#define VERDICT(self, v) do {						\
	enum place_verdict v_ = decide(self);				\
	ATF_REQUIRE_MSG(v_ == (v), "verdict %s, not %s",		\
	    place_verdict_name(v_), place_verdict_name(v));		\
} while (0)

ATF_TC_WITHOUT_HEAD(emptiest_first);
ATF_TC_BODY(emptiest_first, tc)
{
	size_t	 self;

	table(3, 24);
	held(PLACE_FIXED, 0, 8, 1);
	t.dev[1].outside = 4 * G;
	held(PLACE_BUSY, 2, 6, 1);
	self = model(PLACE_STOPPED, 1, 4, -1);
	VERDICT(self, PLACE_FITS);
	ATF_CHECK_EQ(r.ndev, 1);
	ATF_CHECK_EQ(r.dev[0], 1);		/* 20 free, against 16 and 18 */
	ATF_CHECK_EQ(r.nstop, 0);
	/* The headroom counts: device 1 keeps 5 free, so 15 < 16. */
	t.dev[1].headroom = 5 * G;
	VERDICT(self, PLACE_FITS);
	ATF_CHECK_EQ(r.dev[0], 2);
	/* Equals: the lower index. */
	table(2, 24);
	self = model(PLACE_STOPPED, 1, 4, -1);
	VERDICT(self, PLACE_FITS);
	ATF_CHECK_EQ(r.dev[0], 0);
	/* A stopped model holds nothing; an unusable device takes nothing. */
	table(2, 24);
	held(PLACE_STOPPED, 0, 20, 1);
	t.dev[1].usable = 0;
	self = model(PLACE_STOPPED, 1, 20, -1);
	VERDICT(self, PLACE_FITS);
	ATF_CHECK_EQ(r.dev[0], 0);
}

ATF_TC_WITHOUT_HEAD(fit_edges);
ATF_TC_BODY(fit_edges, tc)
{
	size_t	 self;

	/* Exactly the free room fits; a byte more does not. */
	table(1, 24);
	t.dev[0].headroom = 1 * G;
	held(PLACE_FIXED, 0, 7, 1);
	self = model(PLACE_STOPPED, 1, 16, -1);
	VERDICT(self, PLACE_FITS);
	m[self].share[0] += 1;
	VERDICT(self, PLACE_NEVER);
	ATF_CHECK_EQ(r.short_on, 0);
	/* A need near INT64_MAX never fits by wrapping. */
	table(1, 24);
	self = model(PLACE_STOPPED, 1, 0, -1);
	m[self].share[0] = INT64_MAX;
	VERDICT(self, PLACE_NEVER);
	m[self].share[0] = 0;
	m[self].host = INT64_MAX;
	t.host_free = 64 * G;
	VERDICT(self, PLACE_NEVER);
	ATF_CHECK_EQ(r.short_on, PLACE_SHORT_HOST);
	/* A device that reports no memory is no device. */
	table(1, 0);
	self = model(PLACE_STOPPED, 1, 1, -1);
	VERDICT(self, PLACE_NEVER);
	ATF_CHECK_EQ(r.short_on, PLACE_SHORT_DEVICES);
}

ATF_TC_WITHOUT_HEAD(pin_index_and_id);
ATF_TC_BODY(pin_index_and_id, tc)
{
	const char	*one[] = { "1" }, *byid[] = { "gpu-CCCC" };
	const char	*two[] = { "GPU-aaaa", "3" }, *bad[] = { "0", "7" };
	const char	*bad2[] = { "GPU-zzzz" };
	uint64_t	 mask;
	size_t		 self, which = 42;

	table(4, 24);
	held(PLACE_FIXED, 1, 10, 1);
	self = model(PLACE_STOPPED, 1, 4, -1);
	ATF_REQUIRE_EQ(place_mask(&t, one, 1, &mask, &which), 0);
	ATF_CHECK_EQ(mask, 0x2);
	m[self].allowed = mask;
	VERDICT(self, PLACE_FITS);
	ATF_CHECK_EQ(r.dev[0], 1);		/* not the emptier 0 */
	/* By id, in any case. */
	ATF_REQUIRE_EQ(place_mask(&t, byid, 1, &mask, &which), 0);
	ATF_CHECK_EQ(mask, 0x4);
	m[self].allowed = mask;
	VERDICT(self, PLACE_FITS);
	ATF_CHECK_EQ(r.dev[0], 2);
	ATF_REQUIRE_EQ(place_mask(&t, two, 2, &mask, &which), 0);
	ATF_CHECK_EQ(mask, 0x9);
	/* A name that is neither, said by its place. */
	ATF_CHECK_EQ(place_mask(&t, bad, 2, &mask, &which), -1);
	ATF_CHECK_EQ(which, 1);
	ATF_CHECK_EQ(place_mask(&t, bad2, 1, &mask, &which), -1);
	ATF_CHECK_EQ(which, 0);
	/* Pinned to a full device: it waits, it does not go elsewhere. */
	table(2, 24);
	held(PLACE_BUSY, 1, 20, 1);
	self = model(PLACE_STOPPED, 1, 8, -1);
	m[self].allowed = 0x2;
	VERDICT(self, PLACE_WAIT);
	ATF_CHECK_EQ(r.short_on, 1);
}

ATF_TC_WITHOUT_HEAD(evict_right_device);
ATF_TC_BODY(evict_right_device, tc)
{
	size_t	 a, b, self;

	table(2, 24);
	a = held(PLACE_IDLE, 0, 20, 500);
	b = held(PLACE_IDLE, 1, 20, 100);	/* older, but elsewhere */
	self = model(PLACE_STOPPED, 1, 10, -1);
	m[self].allowed = 0x1;
	VERDICT(self, PLACE_EVICT);
	ATF_CHECK_EQ(r.dev[0], 0);
	ATF_REQUIRE_EQ(r.nstop, 1);
	ATF_CHECK_EQ(r.stop[0], a);
	/* Free to go anywhere: the older model goes. */
	m[self].allowed = ALL;
	VERDICT(self, PLACE_EVICT);
	ATF_CHECK_EQ(r.dev[0], 1);
	ATF_REQUIRE_EQ(r.nstop, 1);
	ATF_CHECK_EQ(r.stop[0], b);
}

ATF_TC_WITHOUT_HEAD(evict_fewest_then_oldest);
ATF_TC_BODY(evict_fewest_then_oldest, tc)
{
	size_t	 big, d, e, self, x, y;

	/* 14 short: one of 16 rather than two of 8, older as they are. */
	table(1, 40);
	big = held(PLACE_IDLE, 0, 16, 900);
	d = held(PLACE_IDLE, 0, 8, 100);
	e = held(PLACE_IDLE, 0, 8, 50);
	held(PLACE_FIXED, 0, 6, 1);
	self = model(PLACE_STOPPED, 1, 16, -1);
	VERDICT(self, PLACE_EVICT);
	ATF_REQUIRE_EQ(r.nstop, 1);
	ATF_CHECK_EQ(r.stop[0], big);
	/* Without it, the two of 8: oldest first. */
	m[big].state = PLACE_BUSY;
	VERDICT(self, PLACE_EVICT);
	ATF_REQUIRE_EQ(r.nstop, 2);
	ATF_CHECK_EQ(r.stop[0], e);
	ATF_CHECK_EQ(r.stop[1], d);
	/* 4 short: any 8 would do; the oldest goes. */
	table(1, 24);
	x = held(PLACE_IDLE, 0, 8, 300);
	y = held(PLACE_IDLE, 0, 8, 200);
	held(PLACE_IDLE, 0, 8, 400);
	self = model(PLACE_STOPPED, 1, 4, -1);
	VERDICT(self, PLACE_EVICT);
	ATF_REQUIRE_EQ(r.nstop, 1);
	ATF_CHECK_EQ(r.stop[0], y);
	/* Never used is the oldest. */
	m[x].last_used = -1;
	VERDICT(self, PLACE_EVICT);
	ATF_CHECK_EQ(r.stop[0], x);
}

/* The greedy pass takes one the others make needless: it goes back. */
ATF_TC_WITHOUT_HEAD(evict_prunes);
ATF_TC_BODY(evict_prunes, tc)
{
	size_t	 a, b, c, self;

	table(1, 20);
	t.host_free = 0;
	a = held(PLACE_IDLE, 0, 10, 10);	/* device 10, host 1 */
	m[a].host = 1 * G;
	b = model(PLACE_IDLE, 0, 0, 20);	/* a CPU model: host 10 */
	m[b].host = 10 * G;
	c = held(PLACE_IDLE, 0, 6, 30);		/* device 6, host 6 */
	m[c].host = 6 * G;
	self = model(PLACE_STOPPED, 1, 10, -1);
	m[self].host = 10 * G;
	t.dev[0].outside = 4 * G;		/* free: 0 */
	VERDICT(self, PLACE_EVICT);
	ATF_REQUIRE_EQ(r.nstop, 2);
	/* Oldest first. */
	ATF_CHECK_EQ(r.stop[0], a);
	ATF_CHECK_EQ(r.stop[1], b);
}

ATF_TC_WITHOUT_HEAD(outside_process);
ATF_TC_BODY(outside_process, tc)
{
	size_t	 self;

	/* Another program holds 20 of device 0's 24. */
	table(2, 24);
	t.dev[0].outside = 20 * G;
	held(PLACE_FIXED, 1, 12, 1);
	self = model(PLACE_STOPPED, 1, 8, -1);
	VERDICT(self, PLACE_FITS);
	ATF_CHECK_EQ(r.dev[0], 1);
	/* Pinned there, it can never fit: nothing of ours to stop. */
	m[self].allowed = 0x1;
	VERDICT(self, PLACE_NEVER);
	ATF_CHECK_EQ(r.short_on, 0);
	/* Our idle model there would not free enough either. */
	held(PLACE_IDLE, 0, 2, 1);
	t.dev[0].outside = 18 * G;
	VERDICT(self, PLACE_NEVER);
	/* Now it would. */
	t.dev[0].outside = 15 * G;
	VERDICT(self, PLACE_EVICT);
	ATF_CHECK_EQ(r.nstop, 1);
}

ATF_TC_WITHOUT_HEAD(two_devices);
ATF_TC_BODY(two_devices, tc)
{
	size_t	 self, a, b;

	/* Half on each of the two freest of three. */
	table(3, 24);
	held(PLACE_FIXED, 1, 12, 1);
	held(PLACE_FIXED, 2, 4, 1);
	self = model(PLACE_STOPPED, 2, 10, -1);
	VERDICT(self, PLACE_FITS);
	ATF_REQUIRE_EQ(r.ndev, 2);
	ATF_CHECK_EQ(r.dev[0], 0);
	ATF_CHECK_EQ(r.dev[1], 2);
	/* The operator's split: the larger share to the freer device. */
	m[self].share[0] = 6 * G;
	m[self].share[1] = 14 * G;
	VERDICT(self, PLACE_FITS);
	ATF_CHECK_EQ(r.dev[1], 0);		/* 14 on 24 free */
	ATF_CHECK_EQ(r.dev[0], 2);		/* 6 on 20 free */
	/* Only one device fits a share: both shares must fit. */
	table(2, 24);
	held(PLACE_FIXED, 1, 16, 1);
	self = model(PLACE_STOPPED, 2, 10, -1);
	VERDICT(self, PLACE_NEVER);
	ATF_CHECK_EQ(r.short_on, 1);
	/* Two devices each with an idle model: both go. */
	table(2, 16);
	a = held(PLACE_IDLE, 0, 8, 5);
	b = held(PLACE_IDLE, 1, 8, 6);
	self = model(PLACE_STOPPED, 2, 10, -1);
	VERDICT(self, PLACE_EVICT);
	ATF_REQUIRE_EQ(r.nstop, 2);
	ATF_CHECK_EQ(r.stop[0], a);
	ATF_CHECK_EQ(r.stop[1], b);
	/* One model over both frees both: one stop. */
	table(2, 16);
	a = model(PLACE_IDLE, 2, 8, 5);
	m[a].dev[0] = 0;
	m[a].dev[1] = 1;
	held(PLACE_IDLE, 1, 4, 1);
	self = model(PLACE_STOPPED, 2, 10, -1);
	VERDICT(self, PLACE_EVICT);
	ATF_REQUIRE_EQ(r.nstop, 1);
	ATF_CHECK_EQ(r.stop[0], a);
	/* More devices than it may use: never. */
	table(2, 80);
	self = model(PLACE_STOPPED, 2, 1, -1);
	m[self].allowed = 0x1;
	VERDICT(self, PLACE_NEVER);
	ATF_CHECK_EQ(r.short_on, PLACE_SHORT_DEVICES);
}

ATF_TC_WITHOUT_HEAD(never_and_wait);
ATF_TC_BODY(never_and_wait, tc)
{
	size_t	 self, busy, idle;

	/* Larger than any device. */
	table(2, 24);
	self = model(PLACE_STOPPED, 1, 30, -1);
	VERDICT(self, PLACE_NEVER);
	/* Busy lazy models hold it: wait. */
	table(1, 24);
	busy = held(PLACE_BUSY, 0, 16, 1);
	self = model(PLACE_STOPPED, 1, 12, -1);
	VERDICT(self, PLACE_WAIT);
	ATF_CHECK_EQ(r.short_on, 0);
	/* A model that is not lazy is never stopped: never. */
	m[busy].state = PLACE_FIXED;
	VERDICT(self, PLACE_NEVER);
	/* Idle, it goes. */
	m[busy].state = PLACE_IDLE;
	VERDICT(self, PLACE_EVICT);
	ATF_CHECK_EQ(r.stop[0], busy);
	/* An idle model frees enough: it goes, never the busy one, older
	 * and as good as it is. */
	table(1, 32);
	busy = held(PLACE_BUSY, 0, 16, 10);
	idle = held(PLACE_IDLE, 0, 12, 20);
	self = model(PLACE_STOPPED, 1, 12, -1);
	VERDICT(self, PLACE_EVICT);
	ATF_REQUIRE_EQ(r.nstop, 1);
	ATF_CHECK_EQ(r.stop[0], idle);
}

ATF_TC_WITHOUT_HEAD(host_and_budget);
ATF_TC_BODY(host_and_budget, tc)
{
	size_t	 self, cpu, gpu;

	/* The device has room, the host does not: a CPU model goes. */
	table(1, 24);
	t.host_free = 2 * G;
	cpu = model(PLACE_IDLE, 0, 0, 10);
	m[cpu].host = 8 * G;
	gpu = held(PLACE_IDLE, 0, 4, 5);
	m[gpu].host = 1 * G;
	self = model(PLACE_STOPPED, 1, 4, -1);
	m[self].host = 6 * G;
	VERDICT(self, PLACE_EVICT);
	ATF_REQUIRE_EQ(r.nstop, 1);
	ATF_CHECK_EQ(r.stop[0], cpu);
	/* Both fit now. */
	t.host_free = 6 * G;
	VERDICT(self, PLACE_FITS);
	/* The budget, as the host. */
	t.budget_free = 1 * G;
	VERDICT(self, PLACE_EVICT);
	ATF_CHECK_EQ(r.stop[0], cpu);
	/* Host alone for a CPU model; never when nothing would do. */
	m[self].span = 0;
	t.budget_free = PLACE_UNCHECKED;
	t.host_free = 1 * G;
	m[cpu].state = PLACE_FIXED;
	VERDICT(self, PLACE_NEVER);	/* 1 + gpu's 1 < 6 */
	ATF_CHECK_EQ(r.short_on, PLACE_SHORT_HOST);
	m[cpu].state = PLACE_BUSY;
	VERDICT(self, PLACE_WAIT);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, emptiest_first);
	ATF_TP_ADD_TC(tp, fit_edges);
	ATF_TP_ADD_TC(tp, pin_index_and_id);
	ATF_TP_ADD_TC(tp, evict_right_device);
	ATF_TP_ADD_TC(tp, evict_fewest_then_oldest);
	ATF_TP_ADD_TC(tp, evict_prunes);
	ATF_TP_ADD_TC(tp, outside_process);
	ATF_TP_ADD_TC(tp, two_devices);
	ATF_TP_ADD_TC(tp, never_and_wait);
	ATF_TP_ADD_TC(tp, host_and_budget);
	return (atf_no_error());
}
