/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The pool driven by fake operations: a clock advanced by hand, timers
 * fired when it passes them, spawns, signals and probes recorded and
 * answered by the test.  No processes, no sockets, no sleeping.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <atf-c.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pool.h"

#define GIB	POOL_GIB
#define NREC	1024

struct ftimer {
	int		 used;
	int64_t		 at;
	void		 (*fn)(void *);
	void		*arg;
};

struct fcall {
	char		 name[AGENCY_NAME_MAX];
	char		 upstream[AGENCY_PATH_MAX];	/* spawns */
	char		 label[AGENCY_PATH_MAX];	/* spawns */
	int64_t		 need;				/* spawns */
	uint64_t	 id;
	uint16_t	 port;
};

struct fkill {
	pid_t		 pid;
	int		 sig;
};

struct fgrant {
	uint64_t	 reqid;
	uint64_t	 holdid;
	char		 name[AGENCY_NAME_MAX];
	char		 upstream[AGENCY_PATH_MAX];
	uint16_t	 port;
};

struct frefusal {
	uint64_t	 reqid;
	int		 reason;
	int		 retry_after;
	char		 msg[PROTO_MSG_MAX];
};

struct flog {
	int		 pri;
	char		 line[PROTO_LOGLINE_MAX];
};

struct fwait {
	uint64_t	 reqid;
	int		 wait;
	uint32_t	 ahead;
	int64_t		 load_ms;
	int64_t		 at;		/* the fake clock when told */
};

static struct fake {
	struct pool		*p;
	int64_t			 now;
	struct ftimer		 timers[NREC];
	struct fcall		 spawns[NREC];
	size_t			 nspawns;
	struct fkill		 kills[NREC];
	size_t			 nkills;
	struct fcall		 probes[NREC];
	size_t			 nprobes;
	uint64_t		 cancels[NREC];
	size_t			 ncancels;
	struct fgrant		 grants[NREC];
	size_t			 ngrants;
	struct frefusal		 refusals[NREC];
	size_t			 nrefusals;
	struct flog		 logs[NREC];
	size_t			 nlogs;
	struct fwait		 waits[NREC];
	size_t			 nwaits;
	int			 in_pool;	/* inside a call of the pool */
	uint16_t		 busy_port;
	struct mem_snapshot	 mem;
	int			 sync_spawn;	/* answer from within spawn */
	pid_t			 next_pid;
	int			 dones;
	int			 load_ok;
	char			 load_err[PROTO_MSG_MAX];
} F;

static void
f_spawn(void *ctx, const struct pool_plan *plan, uint64_t id, uint16_t port)
{
	struct fcall	*c;

	(void)ctx;
	ATF_REQUIRE(F.nspawns < NREC);
	c = &F.spawns[F.nspawns++];
	strlcpy(c->name, plan->name, sizeof(c->name));
	strlcpy(c->upstream, plan->upstream, sizeof(c->upstream));
	strlcpy(c->label, plan->label, sizeof(c->label));
	c->need = plan->need;
	c->id = id;
	c->port = port;
	if (F.sync_spawn)
		pool_spawned(F.p, id, F.next_pid++, NULL);
}

static int
f_port_free(void *ctx, uint16_t port)
{
	(void)ctx;
	return (port != F.busy_port);
}

static void
f_kill(void *ctx, pid_t pid, int sig)
{
	(void)ctx;
	ATF_REQUIRE(F.nkills < NREC);
	F.kills[F.nkills].pid = pid;
	F.kills[F.nkills++].sig = sig;
}

static void
f_probe(void *ctx, const struct pool_plan *plan, uint64_t id, uint16_t port)
{
	struct fcall	*c;

	(void)ctx;
	ATF_REQUIRE(F.nprobes < NREC);
	c = &F.probes[F.nprobes++];
	strlcpy(c->name, plan->name, sizeof(c->name));
	c->id = id;
	c->port = port;
}

static void
f_probe_cancel(void *ctx, uint64_t id)
{
	(void)ctx;
	ATF_REQUIRE(F.ncancels < NREC);
	F.cancels[F.ncancels++] = id;
}

static int64_t
f_now(void *ctx)
{
	(void)ctx;
	return (F.now);
}

static void *
f_timer_add(void *ctx, int64_t ms, void (*fn)(void *), void *arg)
{
	size_t	 i;

	(void)ctx;
	for (i = 0; i < NREC; i++) {
		if (!F.timers[i].used) {
			F.timers[i].used = 1;
			F.timers[i].at = F.now + ms;
			F.timers[i].fn = fn;
			F.timers[i].arg = arg;
			return (&F.timers[i]);
		}
	}
	atf_tc_fail("out of fake timers");
	return (NULL);
}

static void
f_timer_del(void *ctx, void *t)
{
	struct ftimer	*ft = t;

	(void)ctx;
	ATF_REQUIRE(ft->used);
	ft->used = 0;
}

static int
f_memory(void *ctx, struct mem_snapshot *m)
{
	(void)ctx;
	*m = F.mem;
	return (0);
}

static void
f_log(void *ctx, int pri, const char *line)
{
	(void)ctx;
	if (F.nlogs < NREC) {
		F.logs[F.nlogs].pri = pri;
		strlcpy(F.logs[F.nlogs++].line, line, PROTO_LOGLINE_MAX);
	}
}

static void
f_granted(void *ctx, uint64_t reqid, uint64_t holdid,
    const struct pool_plan *plan, uint16_t port)
{
	struct fgrant	*g;

	(void)ctx;
	ATF_REQUIRE(F.ngrants < NREC);
	g = &F.grants[F.ngrants++];
	g->reqid = reqid;
	g->holdid = holdid;
	strlcpy(g->name, plan->name, sizeof(g->name));
	strlcpy(g->upstream, plan->upstream, sizeof(g->upstream));
	g->port = port;
}

static void
f_refused(void *ctx, uint64_t reqid, int reason, int retry_after,
    const char *msg)
{
	struct frefusal	*r;

	(void)ctx;
	ATF_REQUIRE(F.nrefusals < NREC);
	r = &F.refusals[F.nrefusals++];
	r->reqid = reqid;
	r->reason = reason;
	r->retry_after = retry_after;
	strlcpy(r->msg, msg, sizeof(r->msg));
}

static void
f_changed(void *ctx, const struct pool_plan *plan)
{
	(void)ctx;
	(void)plan;
}

static void
f_waiting(void *ctx, uint64_t reqid, int wait, uint32_t ahead,
    int64_t load_ms)
{
	struct fwait	*w;

	(void)ctx;
	ATF_REQUIRE_MSG(!F.in_pool, "told from within a call of the pool");
	ATF_REQUIRE(F.nwaits < NREC);
	w = &F.waits[F.nwaits++];
	w->reqid = reqid;
	w->wait = wait;
	w->ahead = ahead;
	w->load_ms = load_ms;
	w->at = F.now;
}

static const struct pool_ops fops = {
	.spawn = f_spawn,
	.port_free = f_port_free,
	.kill = f_kill,
	.probe = f_probe,
	.probe_cancel = f_probe_cancel,
	.now = f_now,
	.timer_add = f_timer_add,
	.timer_del = f_timer_del,
	.memory = f_memory,
	.log = f_log,
	.granted = f_granted,
	.refused = f_refused,
	.changed = f_changed,
	.waiting = f_waiting,
};

static void
done_cb(void *arg)
{
	(void)arg;
	F.dones++;
}

static void
load_cb(void *arg, int ok, const char *err)
{
	(void)arg;
	F.dones++;
	F.load_ok = ok;
	strlcpy(F.load_err, err != NULL ? err : "", sizeof(F.load_err));
}

/* A pool on the fakes with set, on ports 5800 to 5809. */
static struct pool *
setup_settings(struct pool_settings *set)
{
	memset(&F, 0, sizeof(F));
	F.now = 1000000;
	F.mem.available = 64 * GIB;
	F.mem.total = 128 * GIB;
	F.next_pid = 1000;
	set->port_lo = 5800;
	set->port_hi = 5809;
	F.p = pool_new(&fops, NULL, set);
	ATF_REQUIRE(F.p != NULL);
	return (F.p);
}

static struct pool *
setup_with(int64_t reserve, int64_t budget, int overcommit)
{
	struct pool_settings	 set;

	memset(&set, 0, sizeof(set));
	set.reserve = reserve;
	set.budget = budget;
	set.overcommit = overcommit;
	return (setup_settings(&set));
}

static struct pool *
setup(void)
{
	return (setup_with(0, 0, 0));
}

/* A model that may wait tmo ms (0: the reference pool's model), with
 * max_requests and max_queue (0: no bound). */
static void
qmodel(const char *name, int lazy, int64_t need, int64_t tmo,
    uint32_t maxreq, uint32_t maxq)
{
	struct pool_plan	 plan;

	memset(&plan, 0, sizeof(plan));
	strlcpy(plan.name, name, sizeof(plan.name));
	strlcpy(plan.upstream, name, sizeof(plan.upstream));
	snprintf(plan.label, sizeof(plan.label), "server for %s", name);
	plan.lazy = lazy;
	plan.need = need;
	plan.load_timeout = 600000;
	plan.queue_timeout = tmo;
	plan.max_requests = maxreq;
	plan.max_queue = maxq;
	ATF_REQUIRE_EQ(pool_add(F.p, &plan), 0);
}

static void
model(const char *name, int lazy, int64_t need)
{
	qmodel(name, lazy, need, 0, 0, 0);
}

/* Move the clock to now + ms, firing the timers it passes, in order. */
static void
advance(int64_t ms)
{
	int64_t		 end = F.now + ms;
	struct ftimer	*t;
	size_t		 i, fired = 0;

	for (;;) {
		/* a pool that re-arms a timer due at once never lets time
		 * pass: say so rather than spin until kyua's timeout */
		ATF_REQUIRE_MSG(++fired <= 100000,
		    "timers fired 100000 times before %lld ms passed",
		    (long long)ms);
		t = NULL;
		for (i = 0; i < NREC; i++)
			if (F.timers[i].used && F.timers[i].at <= end &&
			    (t == NULL || F.timers[i].at < t->at))
				t = &F.timers[i];
		if (t == NULL)
			break;
		if (t->at > F.now)
			F.now = t->at;
		t->used = 0;
		t->fn(t->arg);
	}
	F.now = end;
}

static void
spawned(size_t i, pid_t pid)
{
	ATF_REQUIRE(i < F.nspawns);
	pool_spawned(F.p, F.spawns[i].id, pid, NULL);
}

static void
probed_last(void)
{
	ATF_REQUIRE(F.nprobes > 0);
	pool_probe_result(F.p, F.probes[F.nprobes - 1].id, 1, 200, "{}");
}

static void
exited(pid_t pid, int code)
{
	pool_child_exited(F.p, pid, W_EXITCODE(code, 0), 0, NULL);
}

static void
signalled(pid_t pid, int sig)
{
	pool_child_exited(F.p, pid, W_EXITCODE(0, sig), 0, NULL);
}

static void
status(const char *name, struct proto_status *st)
{
	size_t	 i;

	for (i = 0; i < pool_count(F.p); i++) {
		ATF_REQUIRE_EQ(pool_status(F.p, i, st), 0);
		if (strcmp(st->model, name) == 0)
			return;
	}
	atf_tc_fail("no model %s", name);
}

static int
state(const char *name)
{
	struct proto_status	 st;

	status(name, &st);
	return (st.state);
}

static uint32_t
in_progress(const char *name)
{
	struct proto_status	 st;

	status(name, &st);
	return (st.in_progress);
}

static int
killed_with(pid_t pid, int sig)
{
	size_t	 i;
	int	 n = 0;

	for (i = 0; i < F.nkills; i++)
		if (F.kills[i].pid == pid && F.kills[i].sig == sig)
			n++;
	return (n);
}

static int
logged(int pri, const char *s)
{
	size_t	 i;

	for (i = 0; i < F.nlogs; i++)
		if ((pri == -1 || F.logs[i].pri == pri) &&
		    strstr(F.logs[i].line, s) != NULL)
			return (1);
	return (0);
}

/* Load a model to ready with process pid. */
static void
bring_up(const char *name, pid_t pid)
{
	size_t	 n = F.nspawns;

	ATF_REQUIRE_EQ(pool_load(F.p, name, NULL, NULL), 0);
	ATF_REQUIRE_EQ(F.nspawns, n + 1);
	spawned(n, pid);
	probed_last();
	ATF_REQUIRE_EQ(state(name), STATE_READY);
}

/* Acquire a ready model, returning the hold id. */
static uint64_t
hold(const char *name, uint64_t reqid, uint32_t owner)
{
	size_t	 n = F.ngrants;

	pool_acquire(F.p, name, reqid, owner);
	ATF_REQUIRE_EQ(F.ngrants, n + 1);
	return (F.grants[n].holdid);
}

ATF_TC_WITHOUT_HEAD(one_process_for_two_waits);
ATF_TC_BODY(one_process_for_two_waits, tc)
{
	struct proto_status	 st;

	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	pool_acquire(F.p, "a", 2, 7);
	ATF_REQUIRE_EQ(pool_load(F.p, "a", load_cb, NULL), 0);
	ATF_REQUIRE_EQ(pool_load(F.p, "a", load_cb, NULL), 0);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_EQ(state("a"), STATE_LOADING);
	spawned(0, 100);
	ATF_REQUIRE_EQ(F.nprobes, 1);
	ATF_REQUIRE_EQ(F.probes[0].port, F.spawns[0].port);
	ATF_REQUIRE_EQ(F.ngrants, 0);
	probed_last();
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_EQ(F.ngrants, 2);
	ATF_REQUIRE_EQ(F.grants[0].reqid, 1);
	ATF_REQUIRE_EQ(F.grants[1].reqid, 2);
	ATF_REQUIRE_EQ(F.grants[0].port, F.spawns[0].port);
	ATF_REQUIRE_EQ(F.dones, 2);
	ATF_REQUIRE_EQ(F.load_ok, 1);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_READY);
	ATF_REQUIRE_EQ(st.pid, 100);
	ATF_REQUIRE_EQ(st.in_progress, 2);
	ATF_REQUIRE_EQ(st.requests, 2);
	ATF_REQUIRE_EQ(st.loads, 1);
	/* Ready: the next one is granted at once, and a load is done. */
	hold("a", 3, 7);
	pool_load(F.p, "a", load_cb, NULL);
	ATF_REQUIRE_EQ(F.dones, 3);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(loads_one_at_a_time);
ATF_TC_BODY(loads_one_at_a_time, tc)
{
	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	pool_acquire(F.p, "b", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_STREQ(F.spawns[0].name, "a");
	/* Queued, not loading yet (issue 20 item 4). */
	ATF_REQUIRE_EQ(state("b"), STATE_STOPPED);
	spawned(0, 100);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	probed_last();
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_STREQ(F.spawns[1].name, "b");
	ATF_REQUIRE(F.spawns[1].port != F.spawns[0].port);
	spawned(1, 200);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 2);
	ATF_REQUIRE_STREQ(F.grants[1].name, "b");
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(second_release);
ATF_TC_BODY(second_release, tc)
{
	uint64_t	 h1, h2;

	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	h1 = hold("a", 1, 7);
	h2 = hold("a", 2, 7);
	ATF_REQUIRE_EQ(in_progress("a"), 2);
	/* Another owner's hold is not this owner's to release. */
	ATF_REQUIRE_EQ(pool_release(F.p, h1, 8), -1);
	ATF_REQUIRE_EQ(in_progress("a"), 2);
	ATF_REQUIRE_EQ(pool_release(F.p, h1, 7), 0);
	ATF_REQUIRE_EQ(in_progress("a"), 1);
	ATF_REQUIRE_EQ(pool_release(F.p, h1, 7), -1);
	ATF_REQUIRE_EQ(in_progress("a"), 1);
	ATF_REQUIRE_EQ(pool_release(F.p, 999, 7), -1);
	ATF_REQUIRE_EQ(pool_release(F.p, h2, 7), 0);
	ATF_REQUIRE_EQ(in_progress("a"), 0);
	ATF_REQUIRE_EQ(pool_release(F.p, h2, 7), -1);
	ATF_REQUIRE_EQ(in_progress("a"), 0);
	pool_free(F.p);
}

/* Many holds of two owners and two models, released in no order: each
 * release finds its own hold, and only that one. */
ATF_TC_WITHOUT_HEAD(release_any_order);
ATF_TC_BODY(release_any_order, tc)
{
	uint64_t	 ids[200];
	uint32_t	 owner;
	size_t		 i, j, n = 200, left;

	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	bring_up("a", 100);
	bring_up("b", 200);
	for (i = 0; i < n; i++)
		ids[i] = hold(i % 3 ? "a" : "b", i + 1, 7 + i % 2);
	ATF_REQUIRE_EQ(in_progress("a") + in_progress("b"), n);
	/* 0, 7, 14, ... mod 200: every hold once, far from the order of
	 * granting; first as the wrong owner, then as the right one */
	for (left = n, j = 0; left > 0; left--, j = (j + 7) % n) {
		owner = 7 + j % 2;
		ATF_REQUIRE_EQ(pool_release(F.p, ids[j], owner ^ 15), -1);
		ATF_REQUIRE_EQ(pool_release(F.p, ids[j], owner), 0);
		ATF_REQUIRE_EQ(pool_release(F.p, ids[j], owner), -1);
		ATF_REQUIRE_EQ(in_progress("a") + in_progress("b"), left - 1);
	}
	ATF_REQUIRE_EQ(in_progress("a"), 0);
	ATF_REQUIRE_EQ(in_progress("b"), 0);
	for (i = 0; i < n; i++)
		ATF_REQUIRE_EQ(pool_release(F.p, ids[i], 7 + i % 2), -1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(hold_stamps_last_used);
ATF_TC_BODY(hold_stamps_last_used, tc)
{
	struct proto_status	 st;
	uint64_t		 h;

	setup();
	model("a", 1, GIB);
	status("a", &st);
	ATF_REQUIRE_EQ(st.last_used, -1);
	bring_up("a", 100);
	advance(1000);
	h = hold("a", 1, 7);
	status("a", &st);
	ATF_REQUIRE_EQ(st.last_used, F.now);
	advance(1000);
	ATF_REQUIRE_EQ(pool_release(F.p, h, 7), 0);
	status("a", &st);
	ATF_REQUIRE_EQ(st.last_used, F.now);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(reload_gets_new_port);
ATF_TC_BODY(reload_gets_new_port, tc)
{
	uint16_t	 first;

	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	first = F.spawns[0].port;
	ATF_REQUIRE_EQ(pool_unload(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(state("a"), STATE_UNLOADED);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(F.dones, 0);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(F.dones, 1);
	bring_up("a", 101);
	ATF_REQUIRE(F.spawns[1].port != first);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(unload_during_load);
ATF_TC_BODY(unload_during_load, tc)
{
	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	spawned(0, 100);
	ATF_REQUIRE_EQ(pool_unload(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(F.ncancels, 1);
	ATF_REQUIRE_EQ(F.cancels[0], F.probes[0].id);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reqid, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_LOAD_FAILED);
	ATF_REQUIRE_STREQ(F.refusals[0].msg,
	    "server for a was killed by SIGTERM before it was ready");
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(state("a"), STATE_UNLOADED);
	ATF_REQUIRE_EQ(F.ngrants, 0);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(unload_before_spawn);
ATF_TC_BODY(unload_before_spawn, tc)
{
	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	pool_acquire(F.p, "b", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	pool_unload(F.p, "b", done_cb, NULL);
	spawned(0, 100);
	probed_last();
	/* b's load gave up before its spawn: nothing spawned for it. */
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_EQ(F.ngrants, 1);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reqid, 2);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_LOAD_FAILED);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(state("b"), STATE_UNLOADED);
	ATF_REQUIRE_EQ(F.nkills, 0);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(unload_during_spawn);
ATF_TC_BODY(unload_during_spawn, tc)
{
	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	pool_unload(F.p, "a", done_cb, NULL);
	ATF_REQUIRE_EQ(F.nkills, 0);
	spawned(0, 100);
	/* Killed as soon as the spawn answered, never probed. */
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(F.nprobes, 0);
	ATF_REQUIRE_EQ(F.dones, 0);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_LOAD_FAILED);
	ATF_REQUIRE(strstr(F.refusals[0].msg, "before it was ready") != NULL);
	ATF_REQUIRE_EQ(state("a"), STATE_UNLOADED);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(spawn_from_within);
ATF_TC_BODY(spawn_from_within, tc)
{
	setup();
	F.sync_spawn = 1;
	model("a", 1, GIB);
	model("b", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	pool_acquire(F.p, "b", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_EQ(F.nprobes, 1);
	probed_last();
	ATF_REQUIRE_EQ(F.nprobes, 2);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 2);
	ATF_REQUIRE_EQ(state("a"), STATE_READY);
	ATF_REQUIRE_EQ(state("b"), STATE_READY);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(spawn_error);
ATF_TC_BODY(spawn_error, tc)
{
	struct proto_status	 st;

	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	pool_spawned(F.p, F.spawns[0].id, -1, "no such file");
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_LOAD_FAILED);
	ATF_REQUIRE_STREQ(F.refusals[0].msg,
	    "server for a could not be started: no such file");
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_FAILED);
	ATF_REQUIRE_STREQ(st.error, F.refusals[0].msg);
	ATF_REQUIRE_EQ(st.load_failures, 1);
	ATF_REQUIRE_EQ(st.loads, 0);
	/* A stale answer is ignored. */
	pool_spawned(F.p, F.spawns[0].id, 555, NULL);
	ATF_REQUIRE_EQ(killed_with(555, SIGKILL), 1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(probe_wrong_answer);
ATF_TC_BODY(probe_wrong_answer, tc)
{
	struct proto_status	 st;

	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	spawned(0, 100);
	pool_probe_result(F.p, F.probes[0].id, 0, 503, "loading model");
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	/* Failed at once; the exit only ends the op (issue 20 item 3). */
	ATF_REQUIRE_EQ(state("a"), STATE_FAILED);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	signalled(100, SIGTERM);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_FAILED);
	ATF_REQUIRE_STREQ(st.error, "server for a answered 503 to the "
	    "readiness request: loading model");
	ATF_REQUIRE_EQ(st.load_failures, 1);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_LOAD_FAILED);
	ATF_REQUIRE_STREQ(F.refusals[0].msg, st.error);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(probe_gave_up_asks_again);
ATF_TC_BODY(probe_gave_up_asks_again, tc)
{
	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	spawned(0, 100);
	pool_probe_result(F.p, F.probes[0].id, 0, 0, "proxy gone");
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(F.nprobes, 1);
	advance(POOL_REPROBE);
	ATF_REQUIRE_EQ(F.nprobes, 2);
	/* The old load id is stale. */
	pool_probe_result(F.p, F.probes[0].id, 1, 200, "");
	ATF_REQUIRE_EQ(F.ngrants, 0);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(other_exit_does_not_end_load);
ATF_TC_BODY(other_exit_does_not_end_load, tc)
{
	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	bring_up("a", 100);
	pool_acquire(F.p, "b", 1, 7);
	spawned(1, 200);
	exited(100, 1);
	ATF_REQUIRE_EQ(state("a"), STATE_FAILED);
	ATF_REQUIRE_EQ(state("b"), STATE_LOADING);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	/* An unknown pid changes nothing. */
	exited(4242, 0);
	ATF_REQUIRE_EQ(state("b"), STATE_LOADING);
	probed_last();
	ATF_REQUIRE_EQ(state("b"), STATE_READY);
	ATF_REQUIRE_EQ(F.ngrants, 1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(death_after_ready_lazy);
ATF_TC_BODY(death_after_ready_lazy, tc)
{
	struct proto_status	 st;

	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	signalled(100, SIGKILL);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_FAILED);
	ATF_REQUIRE_STREQ(st.error, "server for a was killed by SIGKILL");
	ATF_REQUIRE_EQ(st.pid, 0);
	advance(POOL_EXIT_GRACE);
	ATF_REQUIRE(logged(LOG_ERR, "server for a was killed by SIGKILL"));
	advance(60 * 60 * 1000);
	/* Not restarted by itself; its next request loads it. */
	ATF_REQUIRE_EQ(F.nspawns, 1);
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 1);
	status("a", &st);
	ATF_REQUIRE_EQ(st.loads, 2);
	ATF_REQUIRE_EQ(st.restarts, 0);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(death_after_ready_restarts);
ATF_TC_BODY(death_after_ready_restarts, tc)
{
	struct proto_status	 st;

	setup();
	model("n", 0, GIB);
	pool_start(F.p);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	spawned(0, 100);
	probed_last();
	ATF_REQUIRE_EQ(state("n"), STATE_READY);

	exited(100, 3);
	status("n", &st);
	ATF_REQUIRE_EQ(st.state, STATE_FAILED);
	ATF_REQUIRE_STREQ(st.error, "server for n exited with 3");
	pool_acquire(F.p, "n", 1, 7);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_NOT_LOADED);
	ATF_REQUIRE(strstr(F.refusals[0].msg, "exited with 3") != NULL);
	/* Restarted 1 s after the failure is declared. */
	advance(POOL_EXIT_GRACE);
	ATF_REQUIRE(logged(LOG_ERR, "server for n exited with 3"));
	advance(999);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	advance(1);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	spawned(1, 101);
	probed_last();
	status("n", &st);
	ATF_REQUIRE_EQ(st.state, STATE_READY);
	ATF_REQUIRE_EQ(st.restarts, 1);

	/* Then 2 s. */
	exited(101, 3);
	advance(POOL_EXIT_GRACE + 1999);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	advance(1);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	/* A failed restart backs off further: 4 s. */
	spawned(2, 102);
	exited(102, 1);
	ATF_REQUIRE_EQ(state("n"), STATE_FAILED);
	advance(3999);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	advance(1);
	ATF_REQUIRE_EQ(F.nspawns, 4);
	spawned(3, 103);
	probed_last();
	/* Ready for long enough: back to 1 s. */
	advance(POOL_BACKOFF_RESET);
	exited(103, 3);
	advance(POOL_EXIT_GRACE + 1000);
	ATF_REQUIRE_EQ(F.nspawns, 5);
	status("n", &st);
	ATF_REQUIRE_EQ(st.restarts, 4);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(eviction_candidate_pure);
ATF_TC_BODY(eviction_candidate_pure, tc)
{
	struct pool_view	 v[8];

	memset(v, 0, sizeof(v));
	ATF_REQUIRE_EQ(pool_eviction_candidate(v, 0, 0), -1);
	/* 0 busy, 1 not lazy, 2 loading, 3 stopped, 4 failed: all skipped */
	v[0] = (struct pool_view){ STATE_READY, 1, 1, 10, 0, 0, 0, 0, 0 };
	v[1] = (struct pool_view){ STATE_READY, 0, 0, 10, 0, 0, 0, 0, 0 };
	v[2] = (struct pool_view){ STATE_LOADING, 1, 0, 10, 0, 0, 0, 0, 0 };
	v[3] = (struct pool_view){ STATE_STOPPED, 1, 0, 10, 0, 0, 0, 0, 0 };
	v[4] = (struct pool_view){ STATE_FAILED, 1, 0, 10, 0, 0, 0, 0, 0 };
	ATF_REQUIRE_EQ(pool_eviction_candidate(v, 5, 5), -1);
	v[5] = (struct pool_view){ STATE_READY, 1, 0, 300, 0, 0, 0, 0, 0 };
	v[6] = (struct pool_view){ STATE_READY, 1, 0, 200, 0, 0, 0, 0, 0 };
	v[7] = (struct pool_view){ STATE_READY, 1, 0, 400, 0, 0, 0, 0, 0 };
	ATF_REQUIRE_EQ(pool_eviction_candidate(v, 8, 8), 6);
	/* Never the one that room is made for. */
	ATF_REQUIRE_EQ(pool_eviction_candidate(v, 8, 6), 5);
	v[6].in_progress = 1;
	ATF_REQUIRE_EQ(pool_eviction_candidate(v, 8, 8), 5);
	/* Equals: the first in config order. */
	v[7].last_used = 300;
	ATF_REQUIRE_EQ(pool_eviction_candidate(v, 8, 8), 5);
}

ATF_TC_WITHOUT_HEAD(fit_pure);
ATF_TC_BODY(fit_pure, tc)
{
	struct mem_snapshot	 m = { 10 * GIB, 100 * GIB };

	ATF_REQUIRE_EQ(pool_reserve(-1, 100 * GIB), 2 * GIB);
	ATF_REQUIRE_EQ(pool_reserve(-1, 20 * GIB), GIB);
	ATF_REQUIRE_EQ(pool_reserve(512, 100 * GIB), 512);
	ATF_REQUIRE_EQ(pool_reserve(0, 100 * GIB), 0);
	ATF_REQUIRE(pool_fits(&m, 2 * GIB, 0, 0, 8 * GIB));
	ATF_REQUIRE(!pool_fits(&m, 2 * GIB, 0, 0, 8 * GIB + 1));
	ATF_REQUIRE(pool_fits(NULL, 2 * GIB, 0, 50 * GIB, 80 * GIB));
	/* The budget counts needs, not what is measured. */
	ATF_REQUIRE(pool_fits(&m, 0, 10 * GIB, 6 * GIB, 4 * GIB));
	ATF_REQUIRE(!pool_fits(&m, 0, 10 * GIB, 6 * GIB + 1, 4 * GIB));
	ATF_REQUIRE(!pool_fits(NULL, 0, 10 * GIB, 0, 11 * GIB));
}

ATF_TC_WITHOUT_HEAD(reserve_default);
ATF_TC_BODY(reserve_default, tc)
{
	/* 20 GiB total: the reserve is 5%, 1 GiB. */
	setup_with(-1, 0, 0);
	F.mem.total = 20 * GIB;
	F.mem.available = 5 * GIB - 1;
	model("a", 1, 4 * GIB);
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.nspawns, 0);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_NOT_ENOUGH_MEMORY);
	F.mem.available = 5 * GIB;
	pool_acquire(F.p, "a", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	pool_free(F.p);

	/* 128 GiB total: 2 GiB. */
	setup_with(-1, 0, 0);
	F.mem.available = 6 * GIB - 1;
	model("a", 1, 4 * GIB);
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.nspawns, 0);
	F.mem.available = 6 * GIB;
	pool_acquire(F.p, "a", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	pool_free(F.p);
}

/*
 * What the events stream says of each change: why a model is in its
 * state (and for whom it was evicted), when a restart is due, and the
 * durations of its last loads.
 */
ATF_TC_WITHOUT_HEAD(change_reasons);
ATF_TC_BODY(change_reasons, tc)
{
	struct proto_status	 st;
	uint64_t		 h;
	int			 i;

	setup_with(0, 5 * GIB, 0);
	model("n", 0, GIB);
	model("a", 1, 3 * GIB);
	model("b", 1, 3 * GIB);
	pool_start(F.p);
	status("n", &st);
	ATF_CHECK_EQ(st.state, STATE_LOADING);
	ATF_CHECK_EQ(st.change, CHANGE_START);
	ATF_CHECK_EQ(st.nload_ms, 0);
	spawned(0, 100);
	advance(300);
	probed_last();
	status("n", &st);
	ATF_CHECK_EQ(st.change, CHANGE_LOADED);
	ATF_CHECK_EQ(st.nload_ms, 1);
	ATF_CHECK_EQ(st.load_ms[0], 300);
	ATF_CHECK_EQ(st.restart_at, -1);

	/* a for a request; then b evicts it */
	pool_acquire(F.p, "a", 1, 7);
	status("a", &st);
	ATF_CHECK_EQ(st.change, CHANGE_REQUEST);
	spawned(1, 101);
	probed_last();
	h = F.grants[F.ngrants - 1].holdid;
	ATF_REQUIRE_EQ(pool_release(F.p, h, 7), 0);
	pool_acquire(F.p, "b", 2, 7);
	status("a", &st);
	ATF_CHECK_EQ(st.state, STATE_STOPPED);
	ATF_CHECK_EQ(st.change, CHANGE_EVICTED);
	ATF_CHECK_STREQ(st.change_for, "b");
	status("b", &st);
	ATF_CHECK_EQ(st.state, STATE_LOADING);
	ATF_CHECK_EQ(st.change, CHANGE_REQUEST);
	ATF_CHECK_STREQ(st.change_for, "");
	signalled(101, SIGTERM);
	spawned(2, 102);
	probed_last();

	/* an unload, of a running model and of a stopped one */
	ATF_REQUIRE_EQ(pool_unload(F.p, "b", NULL, NULL), 0);
	signalled(102, SIGTERM);
	status("b", &st);
	ATF_CHECK_EQ(st.state, STATE_UNLOADED);
	ATF_CHECK_EQ(st.change, CHANGE_UNLOAD);
	ATF_REQUIRE_EQ(pool_unload(F.p, "a", NULL, NULL), 0);
	status("a", &st);
	ATF_CHECK_EQ(st.state, STATE_UNLOADED);
	ATF_CHECK_EQ(st.change, CHANGE_UNLOAD);
	ATF_CHECK_STREQ(st.change_for, "");
	/* an operator's load */
	ATF_REQUIRE_EQ(pool_load(F.p, "a", NULL, NULL), 0);
	status("a", &st);
	ATF_CHECK_EQ(st.state, STATE_LOADING);
	ATF_CHECK_EQ(st.change, CHANGE_LOAD);
	spawned(3, 103);
	probed_last();

	/* n dies: failed, exited, restarted in a second */
	exited(100, 1);
	advance(POOL_EXIT_GRACE);
	status("n", &st);
	ATF_CHECK_EQ(st.state, STATE_FAILED);
	ATF_CHECK_EQ(st.change, CHANGE_EXITED);
	ATF_CHECK_EQ(st.restart_at, F.now + POOL_BACKOFF_MIN);
	advance(POOL_BACKOFF_MIN);
	status("n", &st);
	ATF_CHECK_EQ(st.state, STATE_LOADING);
	ATF_CHECK_EQ(st.change, CHANGE_RESTART);
	ATF_CHECK_EQ(st.restart_at, -1);

	/* the last PROTO_LOAD_HISTORY loads, oldest first */
	for (i = 0; i < PROTO_LOAD_HISTORY + 2; i++) {
		spawned(F.nspawns - 1, 200 + i);
		advance(10 * (i + 1));
		probed_last();
		ATF_REQUIRE_EQ(pool_unload(F.p, "n", NULL, NULL), 0);
		signalled(200 + i, SIGTERM);
		ATF_REQUIRE_EQ(pool_load(F.p, "n", NULL, NULL), 0);
	}
	status("n", &st);
	ATF_CHECK_EQ(st.nload_ms, PROTO_LOAD_HISTORY);
	ATF_CHECK_EQ(st.load_ms[0], 30);
	ATF_CHECK_EQ(st.load_ms[PROTO_LOAD_HISTORY - 1],
	    10 * (PROTO_LOAD_HISTORY + 2));
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(eviction_order);
ATF_TC_BODY(eviction_order, tc)
{
	struct proto_status	 st;
	struct pool_stats	 ps;

	setup_with(0, 12 * GIB, 0);
	model("n", 0, 2 * GIB);		/* not lazy, oldest */
	model("a", 1, 3 * GIB);
	model("b", 1, 3 * GIB);
	model("c", 1, 3 * GIB);
	model("d", 1, 3 * GIB);
	model("e", 1, 3 * GIB);
	pool_start(F.p);
	spawned(0, 100);
	probed_last();
	advance(1000);
	bring_up("a", 101);		/* 2 + 3 */
	advance(1000);
	bring_up("b", 102);		/* 2 + 3 + 3 */
	advance(1000);
	bring_up("c", 103);		/* 2 + 3 + 3 + 3 = 11 */
	advance(1000);
	/* a is the least recently used, but busy; b is next. */
	hold("a", 1, 7);
	pool_acquire(F.p, "d", 2, 7);
	ATF_REQUIRE_EQ(killed_with(102, SIGTERM), 1);
	ATF_REQUIRE_EQ(state("b"), STATE_STOPPED);
	ATF_REQUIRE_EQ(F.nspawns, 4);
	ATF_REQUIRE(logged(LOG_INFO, "server for b: stopping it to make room "
	    "for server for d"));
	/* Counted for the model that was stopped, not the one that came. */
	status("b", &st);
	ATF_REQUIRE_EQ(st.evictions, 1);
	status("d", &st);
	ATF_REQUIRE_EQ(st.evictions, 0);
	status("a", &st);
	ATF_REQUIRE_EQ(st.evictions, 0);
	advance(1000);
	signalled(102, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 5);
	ATF_REQUIRE_STREQ(F.spawns[4].name, "d");
	spawned(4, 104);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 2);
	/* Used: a (busy), n (not lazy), c, d.  Next for e: c. */
	advance(1000);
	pool_acquire(F.p, "e", 3, 7);
	ATF_REQUIRE_EQ(killed_with(103, SIGTERM), 1);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 0);
	ATF_REQUIRE_EQ(killed_with(101, SIGTERM), 0);
	ATF_REQUIRE_EQ(killed_with(104, SIGTERM), 0);
	status("c", &st);
	ATF_REQUIRE_EQ(st.evictions, 1);
	status("b", &st);
	ATF_REQUIRE_EQ(st.evictions, 1);
	status("n", &st);
	ATF_REQUIRE_EQ(st.evictions, 0);
	pool_stats(F.p, &ps);
	ATF_REQUIRE_EQ(ps.evictions, 2);
	pool_free(F.p);
}

/* Each load that ends ready is timed from its spawn to ready. */
ATF_TC_WITHOUT_HEAD(load_duration);
ATF_TC_BODY(load_duration, tc)
{
	struct proto_status	 st;

	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	advance(200);
	spawned(0, 100);
	advance(100);
	probed_last();
	status("a", &st);
	ATF_REQUIRE_EQ(st.loads, 1);
	ATF_REQUIRE_EQ(st.load_ms_sum, 300);
	ATF_REQUIRE_EQ(st.load_hist[2], 1);	/* <= 500 ms */
	ATF_REQUIRE_EQ(st.load_hist[0] + st.load_hist[1] + st.load_hist[3],
	    0);
	/* It dies; the next request loads it again, slowly. */
	exited(100, 1);
	pool_acquire(F.p, "a", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	spawned(1, 101);
	advance(400 * 1000);
	probed_last();
	status("a", &st);
	ATF_REQUIRE_EQ(st.loads, 2);
	ATF_REQUIRE_EQ(st.load_ms_sum, 300 + 400 * 1000);
	ATF_REQUIRE_EQ(st.load_hist[PROTO_LOAD_NBOUNDS - 1], 1); /* 600 s */
	ATF_REQUIRE_EQ(st.load_failures, 0);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(load_bucket_pure);
ATF_TC_BODY(load_bucket_pure, tc)
{
	ATF_REQUIRE_EQ(pool_load_bucket(0), 0);
	ATF_REQUIRE_EQ(pool_load_bucket(100), 0);
	ATF_REQUIRE_EQ(pool_load_bucket(101), 1);
	ATF_REQUIRE_EQ(pool_load_bucket(1000), 3);
	ATF_REQUIRE_EQ(pool_load_bucket(600000), PROTO_LOAD_NBOUNDS - 1);
	ATF_REQUIRE_EQ(pool_load_bucket(600001), PROTO_LOAD_NBOUNDS);
}

ATF_TC_WITHOUT_HEAD(not_enough_memory);
ATF_TC_BODY(not_enough_memory, tc)
{
	struct proto_status	 st;

	setup();
	F.mem.available = 20 * GIB;
	model("n", 0, 2 * GIB);
	model("a", 1, 3 * GIB);
	model("m", 1, 6 * GIB);
	pool_start(F.p);
	spawned(0, 100);
	probed_last();
	bring_up("a", 101);
	hold("a", 1, 7);
	F.mem.available = (int64_t)(3.1 * GIB);
	pool_acquire(F.p, "m", 2, 7);
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_NOT_ENOUGH_MEMORY);
	ATF_REQUIRE_STREQ(F.refusals[0].msg, "not enough memory for m "
	    "(needs 6.0 GiB, 3.1 GiB available): n (not lazy), a (busy)");
	/* A refusal, not a failure: m was never started. */
	status("m", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.load_failures, 0);
	ATF_REQUIRE_EQ(state("a"), STATE_READY);
	ATF_REQUIRE_EQ(state("n"), STATE_READY);
	/* A lazy model that did not fit tries again on its next request. */
	F.mem.available = 20 * GIB;
	pool_acquire(F.p, "m", 3, 7);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(overcommit);
ATF_TC_BODY(overcommit, tc)
{
	setup_with(0, 0, 1);
	model("a", 1, 3 * GIB);
	model("m", 1, 6 * GIB);
	bring_up("a", 101);
	hold("a", 1, 7);
	F.mem.available = 4 * GIB;
	pool_acquire(F.p, "m", 2, 7);
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE(logged(LOG_WARNING, "not enough memory for m"));
	ATF_REQUIRE(logged(LOG_WARNING, "overcommit"));
	spawned(1, 102);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 2);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(budget);
ATF_TC_BODY(budget, tc)
{
	setup_with(0, 7 * GIB, 0);
	model("a", 1, 4 * GIB);
	model("b", 1, 3 * GIB);
	model("c", 1, 4 * GIB);
	model("big", 1, 8 * GIB);
	bring_up("a", 101);
	/* 4 + 3 = 7: fits the budget exactly. */
	bring_up("b", 102);
	ATF_REQUIRE_EQ(F.nkills, 0);
	advance(1000);
	hold("a", 1, 7);
	/*
	 * 7 + 4 > 7, and stopping b (idle) would still leave 4 + 4 > 7:
	 * by need the budget is exact, so nothing is stopped in vain.
	 */
	pool_acquire(F.p, "c", 2, 7);
	ATF_REQUIRE_EQ(killed_with(102, SIGTERM), 0);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_NOT_ENOUGH_MEMORY);
	ATF_REQUIRE(strstr(F.refusals[0].msg, "budget 7.0 GiB") != NULL);
	ATF_REQUIRE(strstr(F.refusals[0].msg, "a (busy)") != NULL);
	/* Larger than the budget alone: nothing is stopped in vain. */
	pool_release(F.p, F.grants[0].holdid, 7);
	pool_acquire(F.p, "big", 3, 7);
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(F.refusals[1].reason, REFUSE_NOT_ENOUGH_MEMORY);
	/* Now a is idle: b (used longer ago), then a, make room for c. */
	pool_acquire(F.p, "c", 4, 7);
	ATF_REQUIRE_EQ(killed_with(102, SIGTERM), 1);
	ATF_REQUIRE_EQ(killed_with(101, SIGTERM), 0);
	signalled(102, SIGTERM);
	ATF_REQUIRE_EQ(killed_with(101, SIGTERM), 1);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	signalled(101, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	ATF_REQUIRE_STREQ(F.spawns[2].name, "c");
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(warmed_counts_as_used);
ATF_TC_BODY(warmed_counts_as_used, tc)
{
	struct proto_status	 st;

	setup_with(0, 6 * GIB, 0);
	model("a", 1, 3 * GIB);
	model("b", 1, 3 * GIB);
	model("c", 1, 3 * GIB);
	bring_up("a", 101);
	advance(1000);
	pool_load(F.p, "b", NULL, NULL);
	spawned(1, 102);
	advance(5000);
	probed_last();
	status("b", &st);
	ATF_REQUIRE_EQ(st.last_used, F.now);
	ATF_REQUIRE_EQ(st.loaded_at, F.now);
	/* a was used earlier (its load finished first): a goes. */
	pool_acquire(F.p, "c", 1, 7);
	ATF_REQUIRE_EQ(killed_with(101, SIGTERM), 1);
	ATF_REQUIRE_EQ(killed_with(102, SIGTERM), 0);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(stubborn_child);
ATF_TC_BODY(stubborn_child, tc)
{
	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	pool_unload(F.p, "a", done_cb, NULL);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	advance(POOL_STOP_GRACE - 1);
	ATF_REQUIRE_EQ(killed_with(100, SIGKILL), 0);
	advance(1);
	ATF_REQUIRE_EQ(killed_with(100, SIGKILL), 1);
	ATF_REQUIRE(logged(LOG_WARNING, "sending SIGKILL"));
	ATF_REQUIRE_EQ(F.dones, 0);
	signalled(100, SIGKILL);
	ATF_REQUIRE_EQ(F.dones, 1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(stop_all);
ATF_TC_BODY(stop_all, tc)
{
	setup();
	model("a", 1, GIB);
	model("b", 0, GIB);
	model("c", 1, GIB);
	model("d", 1, GIB);
	bring_up("a", 100);
	bring_up("b", 200);
	pool_acquire(F.p, "c", 1, 7);
	spawned(2, 300);
	pool_acquire(F.p, "d", 2, 7);
	pool_stop_all(F.p, done_cb, NULL);
	/* Every waiter refused, every group signalled at once. */
	ATF_REQUIRE_EQ(F.nrefusals, 2);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_STOPPING);
	ATF_REQUIRE_EQ(F.refusals[1].reason, REFUSE_STOPPING);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(killed_with(200, SIGTERM), 1);
	ATF_REQUIRE_EQ(killed_with(300, SIGTERM), 1);
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	ATF_REQUIRE_EQ(state("b"), STATE_STOPPED);
	pool_acquire(F.p, "a", 3, 7);
	ATF_REQUIRE_EQ(F.refusals[2].reason, REFUSE_STOPPING);
	pool_load(F.p, "a", load_cb, NULL);
	ATF_REQUIRE_EQ(F.load_ok, 0);
	F.dones = 0;
	signalled(100, SIGTERM);
	signalled(300, SIGTERM);
	ATF_REQUIRE_EQ(F.dones, 0);
	/* d's queued load never spawned. */
	ATF_REQUIRE_EQ(F.nspawns, 3);
	advance(POOL_STOP_GRACE);
	ATF_REQUIRE_EQ(killed_with(200, SIGKILL), 1);
	ATF_REQUIRE_EQ(killed_with(100, SIGKILL), 0);
	ATF_REQUIRE_EQ(F.dones, 0);
	signalled(200, SIGKILL);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	ATF_REQUIRE_EQ(state("b"), STATE_STOPPED);
	ATF_REQUIRE_EQ(state("c"), STATE_STOPPED);
	ATF_REQUIRE_EQ(state("d"), STATE_STOPPED);
	/* After it, still refused; nothing restarted. */
	pool_acquire(F.p, "b", 4, 7);
	ATF_REQUIRE_EQ(F.refusals[F.nrefusals - 1].reason, REFUSE_STOPPING);
	advance(10 * 60 * 1000);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	/* A second stop all is done at once. */
	pool_stop_all(F.p, done_cb, NULL);
	ATF_REQUIRE_EQ(F.dones, 2);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(stop_all_during_spawn);
ATF_TC_BODY(stop_all_during_spawn, tc)
{
	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	pool_stop_all(F.p, done_cb, NULL);
	ATF_REQUIRE_EQ(F.dones, 0);
	spawned(0, 100);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(F.nprobes, 0);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(load_timeout);
ATF_TC_BODY(load_timeout, tc)
{
	struct pool_plan	 plan;
	struct proto_status	 st;

	setup();
	memset(&plan, 0, sizeof(plan));
	strlcpy(plan.name, "a", sizeof(plan.name));
	strlcpy(plan.label, "server for a", sizeof(plan.label));
	plan.lazy = 1;
	plan.need = GIB;
	plan.load_timeout = 10000;
	ATF_REQUIRE_EQ(pool_add(F.p, &plan), 0);
	pool_acquire(F.p, "a", 1, 7);
	spawned(0, 100);
	advance(9999);
	ATF_REQUIRE_EQ(F.nkills, 0);
	advance(1);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(F.ncancels, 1);
	advance(POOL_STOP_GRACE);
	ATF_REQUIRE_EQ(killed_with(100, SIGKILL), 1);
	signalled(100, SIGKILL);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_FAILED);
	ATF_REQUIRE_STREQ(st.error,
	    "server for a did not become ready within 10s");
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_LOAD_FAILED);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(unloaded_until_load);
ATF_TC_BODY(unloaded_until_load, tc)
{
	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	pool_unload(F.p, "a", done_cb, NULL);
	/* Refused at once, while it is still exiting, and after. */
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_NOT_LOADED);
	ATF_REQUIRE_STREQ(F.refusals[0].msg,
	    "a is not loaded; agency-ctl load a loads it");
	signalled(100, SIGTERM);
	pool_acquire(F.p, "a", 2, 7);
	ATF_REQUIRE_EQ(F.refusals[1].reason, REFUSE_NOT_LOADED);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	/* Unloading a stopped model keeps it unloaded too. */
	pool_unload(F.p, "a", done_cb, NULL);
	ATF_REQUIRE_EQ(F.dones, 2);
	pool_load(F.p, "a", load_cb, NULL);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	pool_acquire(F.p, "a", 3, 7);
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(F.load_ok, 1);
	ATF_REQUIRE_EQ(F.ngrants, 1);
	ATF_REQUIRE_EQ(F.grants[0].reqid, 3);
	pool_free(F.p);
}

/* A stop ends the process now, in-flight holds and all, and leaves the
 * model stopped: its next request loads it again. */
ATF_TC_WITHOUT_HEAD(stop_loads_on_demand);
ATF_TC_BODY(stop_loads_on_demand, tc)
{
	struct proto_status	 st;
	uint64_t		 h;

	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	h = hold("a", 1, 7);
	ATF_REQUIRE_EQ(pool_stop(F.p, "a", done_cb, NULL), 0);
	/* Not waited for: the request in flight ends with the process. */
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.change, CHANGE_STOP);
	ATF_REQUIRE_EQ(F.dones, 0);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	pool_acquire(F.p, "a", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	ATF_REQUIRE_EQ(F.ngrants, 2);
	ATF_REQUIRE_EQ(F.grants[1].reqid, 2);
	/* The old hold is still the proxy's to release. */
	ATF_REQUIRE_EQ(pool_release(F.p, h, 7), 0);
	ATF_REQUIRE_EQ(in_progress("a"), 1);
	pool_free(F.p);
}

/* A stop of an unloaded model ends its refusals. */
ATF_TC_WITHOUT_HEAD(stop_clears_unload);
ATF_TC_BODY(stop_clears_unload, tc)
{
	struct proto_status	 st;

	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	pool_unload(F.p, "a", done_cb, NULL);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(state("a"), STATE_UNLOADED);
	ATF_REQUIRE_EQ(pool_stop(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(F.dones, 2);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.change, CHANGE_STOP);
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	pool_free(F.p);
}

/* A load a stop ends refuses its waiters, as an unload's; the next
 * request loads the model again. */
ATF_TC_WITHOUT_HEAD(stop_during_load);
ATF_TC_BODY(stop_during_load, tc)
{
	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	pool_acquire(F.p, "b", 2, 7);
	ATF_REQUIRE_EQ(pool_stop(F.p, "b", done_cb, NULL), 0);
	spawned(0, 100);
	probed_last();
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reqid, 2);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_LOAD_FAILED);
	ATF_REQUIRE_STREQ(F.refusals[0].msg,
	    "server for b was stopped before it started");
	ATF_REQUIRE_EQ(state("b"), STATE_STOPPED);
	pool_acquire(F.p, "b", 3, 7);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_STREQ(F.spawns[1].name, "b");
	pool_free(F.p);
}

/* Nothing would load a model that is not lazy again: no stop. */
ATF_TC_WITHOUT_HEAD(stop_not_lazy);
ATF_TC_BODY(stop_not_lazy, tc)
{
	setup();
	model("p", 0, GIB);
	bring_up("p", 100);
	ATF_REQUIRE_EQ(pool_stop(F.p, "p", done_cb, NULL), -2);
	ATF_REQUIRE_EQ(pool_stop(F.p, "nope", done_cb, NULL), -1);
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(F.dones, 0);
	ATF_REQUIRE_EQ(state("p"), STATE_READY);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(withdraw);
ATF_TC_BODY(withdraw, tc)
{
	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	pool_acquire(F.p, "a", 2, 7);
	pool_withdraw(F.p, 1, 7);
	pool_withdraw(F.p, 2, 8);	/* not that owner's */
	spawned(0, 100);
	probed_last();
	ATF_REQUIRE_EQ(state("a"), STATE_READY);
	ATF_REQUIRE_EQ(F.ngrants, 1);
	ATF_REQUIRE_EQ(F.grants[0].reqid, 2);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	ATF_REQUIRE_EQ(in_progress("a"), 1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(release_owner);
ATF_TC_BODY(release_owner, tc)
{
	uint64_t	 h;

	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	bring_up("a", 100);
	hold("a", 1, 7);
	hold("a", 2, 7);
	h = hold("a", 3, 8);
	pool_acquire(F.p, "b", 4, 7);
	pool_acquire(F.p, "b", 5, 8);
	pool_release_owner(F.p, 7);
	ATF_REQUIRE_EQ(in_progress("a"), 1);
	spawned(1, 200);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 4);
	ATF_REQUIRE_EQ(F.grants[3].reqid, 5);
	ATF_REQUIRE_EQ(in_progress("b"), 1);
	ATF_REQUIRE_EQ(pool_release(F.p, F.grants[0].holdid, 7), -1);
	ATF_REQUIRE_EQ(pool_release(F.p, h, 8), 0);
	ATF_REQUIRE_EQ(in_progress("a"), 0);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(idle_timeout);
ATF_TC_BODY(idle_timeout, tc)
{
	struct pool_plan	 plan;
	uint64_t		 h;

	setup();
	memset(&plan, 0, sizeof(plan));
	strlcpy(plan.name, "a", sizeof(plan.name));
	strlcpy(plan.label, "server for a", sizeof(plan.label));
	plan.lazy = 1;
	plan.need = GIB;
	plan.idle_timeout = 60000;
	ATF_REQUIRE_EQ(pool_add(F.p, &plan), 0);
	bring_up("a", 100);
	/* Busy: never stopped, however long. */
	h = hold("a", 1, 7);
	advance(600000);
	ATF_REQUIRE_EQ(F.nkills, 0);
	pool_release(F.p, h, 7);
	advance(59999);
	ATF_REQUIRE_EQ(F.nkills, 0);
	/* A request in between starts the count again. */
	h = hold("a", 2, 7);
	pool_release(F.p, h, 7);
	advance(59999);
	ATF_REQUIRE_EQ(F.nkills, 0);
	advance(1);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	signalled(100, SIGTERM);
	/* Not unloaded for good: its next request loads it. */
	pool_acquire(F.p, "a", 3, 7);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(exit_grace);
ATF_TC_BODY(exit_grace, tc)
{
	struct pool_stats	 ps;

	setup();
	model("n", 0, GIB);
	pool_start(F.p);
	spawned(0, 100);
	probed_last();
	exited(100, 130);
	advance(POOL_EXIT_GRACE - 1);
	pool_stop_all(F.p, done_cb, NULL);
	/* Nothing left to reap. */
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(state("n"), STATE_STOPPED);
	ATF_REQUIRE(!logged(LOG_ERR, "exited with 130"));
	pool_stats(F.p, &ps);
	ATF_REQUIRE_EQ(ps.deaths, 0);
	advance(60000);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(addr_in_use_retry);
ATF_TC_BODY(addr_in_use_retry, tc)
{
	struct proto_status	 st;

	setup();
	model("a", 1, GIB);
	F.busy_port = 5801;
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.spawns[0].port, 5800);
	spawned(0, 100);
	pool_child_exited(F.p, 100, W_EXITCODE(1, 0), 1, NULL);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	/* Another port, skipping the one port_free says is taken. */
	ATF_REQUIRE_EQ(F.spawns[1].port, 5802);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	spawned(1, 101);
	pool_child_exited(F.p, 101, W_EXITCODE(1, 0), 1, NULL);
	/* Once only. */
	ATF_REQUIRE_EQ(F.nspawns, 2);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_FAILED);
	ATF_REQUIRE_STREQ(st.error,
	    "server for a exited with 1 before it was ready");
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_LOAD_FAILED);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(unknown_model);
ATF_TC_BODY(unknown_model, tc)
{
	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "zz", 1, 7);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_UNKNOWN_MODEL);
	ATF_REQUIRE_EQ(pool_load(F.p, "zz", NULL, NULL), -1);
	ATF_REQUIRE_EQ(pool_unload(F.p, "zz", NULL, NULL), -1);
	ATF_REQUIRE(pool_plan(F.p, "a") != NULL);
	ATF_REQUIRE(pool_plan(F.p, "zz") == NULL);
	ATF_REQUIRE_EQ(pool_add(F.p, pool_plan(F.p, "a")), -1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(describe_exit);
ATF_TC_BODY(describe_exit, tc)
{
	char	 buf[64];

	pool_describe_exit(W_EXITCODE(2, 0), buf, sizeof(buf));
	ATF_REQUIRE_STREQ(buf, "exited with 2");
	pool_describe_exit(W_EXITCODE(0, SIGKILL), buf, sizeof(buf));
	ATF_REQUIRE_STREQ(buf, "was killed by SIGKILL");
	pool_describe_exit(W_EXITCODE(0, SIGSEGV), buf, sizeof(buf));
	ATF_REQUIRE_STREQ(buf, "was killed by SIGSEGV");
}

/*
 * Reload and cancel: remove, replace, restart.
 */

/* The plan model() adds, with another upstream, label and need. */
static void
new_plan(struct pool_plan *plan, const char *name, int lazy, int64_t need,
    const char *upstream)
{
	memset(plan, 0, sizeof(*plan));
	strlcpy(plan->name, name, sizeof(plan->name));
	strlcpy(plan->upstream, upstream, sizeof(plan->upstream));
	snprintf(plan->label, sizeof(plan->label), "new server for %s", name);
	plan->lazy = lazy;
	plan->need = need;
	plan->load_timeout = 600000;
}

static int
listed(const char *name)
{
	struct proto_status	 st;
	size_t			 i;
	int			 n = 0;

	for (i = 0; i < pool_count(F.p); i++) {
		ATF_REQUIRE_EQ(pool_status(F.p, i, &st), 0);
		if (strcmp(st.model, name) == 0)
			n++;
	}
	return (n);
}

ATF_TC_WITHOUT_HEAD(remove_idle_ready);
ATF_TC_BODY(remove_idle_ready, tc)
{
	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	bring_up("a", 100);
	ATF_REQUIRE_EQ(pool_count(F.p), 2);

	ATF_REQUIRE_EQ(pool_remove(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(F.dones, 0);
	/* Draining: listed, stopped, but no longer served. */
	ATF_REQUIRE_EQ(pool_count(F.p), 2);
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	ATF_REQUIRE(pool_plan(F.p, "a") == NULL);
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_UNKNOWN_MODEL);
	ATF_REQUIRE_STREQ(F.refusals[0].msg, "a is not served");
	ATF_REQUIRE_EQ(pool_load(F.p, "a", NULL, NULL), -1);
	ATF_REQUIRE_EQ(pool_unload(F.p, "a", NULL, NULL), -1);
	ATF_REQUIRE_EQ(pool_restart(F.p, "a", NULL, NULL), -1);
	ATF_REQUIRE_EQ(pool_remove(F.p, "a", NULL, NULL), -1);
	ATF_REQUIRE_EQ(F.nspawns, 1);

	/* SIGKILL after the grace, like an unload. */
	advance(POOL_STOP_GRACE);
	ATF_REQUIRE_EQ(killed_with(100, SIGKILL), 1);
	signalled(100, SIGKILL);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(pool_count(F.p), 1);
	ATF_REQUIRE_EQ(listed("a"), 0);
	ATF_REQUIRE_EQ(listed("b"), 1);
	/* b is untouched and still served. */
	pool_acquire(F.p, "b", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_STREQ(F.spawns[1].name, "b");
	pool_free(F.p);
}

/* pool_status_name: the same record pool_status lists, found by name;
 * -1 for an unknown name and for one draining after pool_remove. */
ATF_TC_WITHOUT_HEAD(status_by_name);
ATF_TC_BODY(status_by_name, tc)
{
	struct proto_status	 st, byi;

	setup();
	model("a", 1, GIB);
	model("b", 1, 2 * GIB);
	bring_up("b", 200);

	memset(&st, 0xa5, sizeof(st));
	ATF_REQUIRE_EQ(pool_status_name(F.p, "b", &st), 0);
	ATF_REQUIRE_STREQ(st.model, "b");
	ATF_REQUIRE_EQ(st.state, STATE_READY);
	ATF_REQUIRE_EQ(st.pid, 200);
	ATF_REQUIRE_EQ(st.need, 2 * GIB);
	status("b", &byi);
	ATF_REQUIRE(memcmp(&st, &byi, sizeof(st)) == 0);

	ATF_REQUIRE_EQ(pool_status_name(F.p, "a", &st), 0);
	ATF_REQUIRE_STREQ(st.model, "a");
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.pid, 0);

	ATF_REQUIRE_EQ(pool_status_name(F.p, "c", &st), -1);
	ATF_REQUIRE_EQ(pool_status_name(F.p, "", &st), -1);

	/* Draining: still listed by index, no longer found by name. */
	ATF_REQUIRE_EQ(pool_remove(F.p, "b", NULL, NULL), 0);
	ATF_REQUIRE_EQ(listed("b"), 1);
	ATF_REQUIRE_EQ(pool_status_name(F.p, "b", &st), -1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(remove_busy_waits_for_release);
ATF_TC_BODY(remove_busy_waits_for_release, tc)
{
	struct proto_status	 st;
	uint64_t		 h1, h2;

	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	h1 = hold("a", 1, 7);
	h2 = hold("a", 2, 8);

	ATF_REQUIRE_EQ(pool_remove(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(F.nkills, 0);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_READY);
	ATF_REQUIRE_EQ(st.in_progress, 2);
	ATF_REQUIRE_EQ(st.pid, 100);
	pool_acquire(F.p, "a", 3, 7);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_UNKNOWN_MODEL);
	/* No idle unload or anything else while it drains. */
	advance(POOL_STOP_GRACE * 10);
	ATF_REQUIRE_EQ(F.nkills, 0);

	ATF_REQUIRE_EQ(pool_release(F.p, h1, 7), 0);
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(in_progress("a"), 1);
	ATF_REQUIRE_EQ(pool_release(F.p, h1, 7), -1);
	pool_release_owner(F.p, 8);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(pool_release(F.p, h2, 8), -1);
	ATF_REQUIRE_EQ(F.dones, 0);
	ATF_REQUIRE_EQ(pool_count(F.p), 1);
	exited(100, 0);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(pool_count(F.p), 0);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(remove_stopped_frees_at_once);
ATF_TC_BODY(remove_stopped_frees_at_once, tc)
{
	struct pool_plan	 plan;

	setup();
	model("a", 1, GIB);
	model("b", 0, GIB);
	ATF_REQUIRE_EQ(pool_remove(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(pool_count(F.p), 1);
	ATF_REQUIRE_EQ(listed("a"), 0);
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(F.nspawns, 0);
	/* The name is free again. */
	new_plan(&plan, "a", 1, 2 * GIB, "a2");
	ATF_REQUIRE_EQ(pool_add(F.p, &plan), 0);
	ATF_REQUIRE_EQ(pool_count(F.p), 2);
	ATF_REQUIRE_EQ(pool_plan(F.p, "a")->need, 2 * GIB);
	/* A failed model that is not lazy: freed, never restarted. */
	pool_start(F.p);
	spawned(0, 100);
	exited(100, 1);
	ATF_REQUIRE_EQ(state("b"), STATE_FAILED);
	ATF_REQUIRE_EQ(pool_remove(F.p, "b", NULL, NULL), 0);
	ATF_REQUIRE_EQ(listed("b"), 0);
	advance(POOL_BACKOFF_MAX);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(remove_during_load);
ATF_TC_BODY(remove_during_load, tc)
{
	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(pool_load(F.p, "a", load_cb, NULL), 0);
	spawned(0, 100);
	ATF_REQUIRE_EQ(F.nprobes, 1);
	/* b waits behind a's load. */
	pool_acquire(F.p, "b", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);

	ATF_REQUIRE_EQ(pool_remove(F.p, "a", done_cb, NULL), 0);
	/* Its waiter is refused at once; its process is ended. */
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reqid, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_UNKNOWN_MODEL);
	ATF_REQUIRE_STREQ(F.refusals[0].msg, "a is not served");
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(F.ncancels, 1);
	ATF_REQUIRE_EQ(F.dones, 0);
	exited(100, 0);
	/* The load callback; a is stopped but still listed. */
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(F.load_ok, 0);
	ATF_REQUIRE_EQ(pool_count(F.p), 2);
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.ngrants, 0);
	/* Then b's load, queued before the remove, goes on. */
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_STREQ(F.spawns[1].name, "b");
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 1);
	ATF_REQUIRE_EQ(F.grants[0].reqid, 2);
	/* And the remove frees a. */
	ATF_REQUIRE_EQ(F.dones, 2);
	ATF_REQUIRE_EQ(pool_count(F.p), 1);
	ATF_REQUIRE_EQ(F.nkills, 1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(remove_before_spawn);
ATF_TC_BODY(remove_before_spawn, tc)
{
	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	pool_acquire(F.p, "b", 2, 7);
	ATF_REQUIRE_EQ(pool_load(F.p, "b", load_cb, NULL), 0);
	ATF_REQUIRE_EQ(pool_remove(F.p, "b", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reqid, 2);
	ATF_REQUIRE_EQ(F.dones, 0);
	spawned(0, 100);
	probed_last();
	/* b's queued load gives up, then b is freed: never spawned. */
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_EQ(F.dones, 2);
	ATF_REQUIRE_EQ(F.load_ok, 0);
	ATF_REQUIRE_STREQ(F.load_err, "b is no longer served");
	ATF_REQUIRE_EQ(pool_count(F.p), 1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(remove_during_restart);
ATF_TC_BODY(remove_during_restart, tc)
{
	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	ATF_REQUIRE_EQ(pool_restart(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(pool_remove(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_UNKNOWN_MODEL);
	exited(100, 0);
	/* Not loaded again: the restart's done, then the remove's. */
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_EQ(F.dones, 2);
	ATF_REQUIRE_EQ(pool_count(F.p), 0);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(stop_all_with_replace_pending);
ATF_TC_BODY(stop_all_with_replace_pending, tc)
{
	struct pool_plan	 plan;
	uint64_t		 h;

	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	h = hold("a", 1, 7);
	new_plan(&plan, "a", 1, GIB, "a-v2");
	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), 0);
	pool_acquire(F.p, "a", 2, 8);
	pool_stop_all(F.p, done_cb, NULL);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_STOPPING);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	exited(100, 0);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(pool_release(F.p, h, 7), 0);
	/* The replace swaps the plan, and loads nothing. */
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_STREQ(pool_plan(F.p, "a")->upstream, "a-v2");
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(replace_idle_ready);
ATF_TC_BODY(replace_idle_ready, tc)
{
	struct pool_plan	 plan;
	struct proto_status	 st;

	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	new_plan(&plan, "a", 1, 3 * GIB, "a-v2");

	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), 0);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_STREQ(pool_plan(F.p, "a")->upstream, "a-v2");
	/* A request meanwhile waits for the new process. */
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.ngrants, 0);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	ATF_REQUIRE_EQ(F.nspawns, 1);

	exited(100, 0);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_STREQ(F.spawns[1].upstream, "a-v2");
	ATF_REQUIRE_STREQ(F.spawns[1].label, "new server for a");
	ATF_REQUIRE_EQ(F.spawns[1].need, 3 * GIB);
	ATF_REQUIRE_EQ(state("a"), STATE_LOADING);
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 1);
	ATF_REQUIRE_STREQ(F.grants[0].upstream, "a-v2");
	ATF_REQUIRE_EQ(F.grants[0].port, F.spawns[1].port);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_READY);
	ATF_REQUIRE_EQ(st.pid, 101);
	ATF_REQUIRE_EQ(st.need, 3 * GIB);
	ATF_REQUIRE_EQ(st.in_progress, 1);
	/* Not unloaded: a request after it is granted at once. */
	hold("a", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(replace_busy_waits_for_release);
ATF_TC_BODY(replace_busy_waits_for_release, tc)
{
	struct pool_plan	 plan;
	uint64_t		 h;

	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	h = hold("a", 1, 7);
	new_plan(&plan, "a", 1, GIB, "a-v2");

	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), 0);
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(state("a"), STATE_READY);
	/* Not the old process: it waits. */
	pool_acquire(F.p, "a", 2, 8);
	ATF_REQUIRE_EQ(F.ngrants, 1);
	ATF_REQUIRE_EQ(pool_load(F.p, "a", load_cb, NULL), 0);
	ATF_REQUIRE_EQ(F.dones, 0);
	/* A second replace before the swap: the newest plan wins. */
	new_plan(&plan, "a", 1, GIB, "a-v3");
	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), 0);
	advance(POOL_STOP_GRACE * 10);
	ATF_REQUIRE_EQ(F.nkills, 0);

	ATF_REQUIRE_EQ(pool_release(F.p, h, 7), 0);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	exited(100, 0);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_STREQ(F.spawns[1].upstream, "a-v3");
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 2);
	ATF_REQUIRE_EQ(F.grants[1].reqid, 2);
	ATF_REQUIRE_STREQ(F.grants[1].upstream, "a-v3");
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(F.load_ok, 1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(replace_stopped_lazy);
ATF_TC_BODY(replace_stopped_lazy, tc)
{
	struct pool_plan	 plan;
	struct proto_status	 st;

	setup();
	model("a", 1, GIB);
	new_plan(&plan, "a", 1, 5 * GIB, "a-v2");
	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), 0);
	ATF_REQUIRE_EQ(F.nspawns, 0);
	ATF_REQUIRE_EQ(F.nkills, 0);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.need, 5 * GIB);
	ATF_REQUIRE_STREQ(pool_plan(F.p, "a")->upstream, "a-v2");
	advance(POOL_STOP_GRACE * 10);
	ATF_REQUIRE_EQ(F.nspawns, 0);
	/* Its next request loads the new plan. */
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_STREQ(F.spawns[0].upstream, "a-v2");
	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), 0);
	plan.lazy = 0;
	strlcpy(plan.name, "nope", sizeof(plan.name));
	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), -1);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(replace_not_lazy_loads_again);
ATF_TC_BODY(replace_not_lazy_loads_again, tc)
{
	struct pool_plan	 plan;

	setup();
	model("n", 0, GIB);
	pool_start(F.p);
	spawned(0, 100);
	probed_last();
	ATF_REQUIRE_EQ(state("n"), STATE_READY);
	new_plan(&plan, "n", 0, GIB, "n-v2");
	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), 0);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	exited(100, 0);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_STREQ(F.spawns[1].upstream, "n-v2");
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(state("n"), STATE_READY);
	/* A stopped, failed one (waiting for its restart) loads at once. */
	exited(101, 2);
	ATF_REQUIRE_EQ(state("n"), STATE_FAILED);
	new_plan(&plan, "n", 0, GIB, "n-v3");
	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), 0);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	ATF_REQUIRE_STREQ(F.spawns[2].upstream, "n-v3");
	spawned(2, 102);
	probed_last();
	ATF_REQUIRE_EQ(state("n"), STATE_READY);
	/* And the backoff restart that was pending does not come. */
	advance(POOL_BACKOFF_MAX);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(replace_during_load);
ATF_TC_BODY(replace_during_load, tc)
{
	struct pool_plan	 plan;

	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	/* Spawn in progress: the old plan's load finishes first. */
	new_plan(&plan, "a", 1, GIB, "a-v2");
	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), 0);
	spawned(0, 100);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 1);
	ATF_REQUIRE_STREQ(F.grants[0].upstream, "a");
	/* Its waiter holds the old process: the replace waits. */
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(state("a"), STATE_READY);
	pool_release_owner(F.p, 7);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	exited(100, 0);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_STREQ(F.spawns[1].upstream, "a-v2");
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(replace_busy_then_death);
ATF_TC_BODY(replace_busy_then_death, tc)
{
	struct pool_plan	 plan;
	uint64_t		 h;

	setup();
	model("n", 0, GIB);
	pool_start(F.p);
	spawned(0, 100);
	probed_last();
	h = hold("n", 1, 7);
	new_plan(&plan, "n", 0, GIB, "n-v2");
	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), 0);
	/* It dies while busy: no restart with the old plan. */
	exited(100, 3);
	ATF_REQUIRE_EQ(state("n"), STATE_FAILED);
	advance(POOL_EXIT_GRACE + POOL_BACKOFF_MAX);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	/* Once released, the replace loads the new plan. */
	ATF_REQUIRE_EQ(pool_release(F.p, h, 7), 0);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_STREQ(F.spawns[1].upstream, "n-v2");
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(state("n"), STATE_READY);
	ATF_REQUIRE_EQ(F.nkills, 0);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(replace_then_remove);
ATF_TC_BODY(replace_then_remove, tc)
{
	struct pool_plan	 plan;
	uint64_t		 h;

	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	h = hold("a", 1, 7);
	new_plan(&plan, "a", 1, GIB, "a-v2");
	ATF_REQUIRE_EQ(pool_replace(F.p, &plan), 0);
	pool_acquire(F.p, "a", 2, 7);
	ATF_REQUIRE_EQ(pool_load(F.p, "a", load_cb, NULL), 0);
	ATF_REQUIRE_EQ(pool_remove(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reqid, 2);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_UNKNOWN_MODEL);
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(pool_release(F.p, h, 7), 0);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	exited(100, 0);
	/* Never loaded again; the load callback fails, then done. */
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_EQ(F.dones, 2);
	ATF_REQUIRE_EQ(F.load_ok, 0);
	ATF_REQUIRE_EQ(pool_count(F.p), 0);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(restart_ready);
ATF_TC_BODY(restart_ready, tc)
{
	struct proto_status	 st;
	uint64_t		 h;

	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	h = hold("a", 1, 7);
	ATF_REQUIRE_EQ(pool_restart(F.p, "a", done_cb, NULL), 0);
	/* Stopped whatever holds it; loading, not stopped. */
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(state("a"), STATE_LOADING);
	pool_acquire(F.p, "a", 2, 8);
	ATF_REQUIRE_EQ(F.ngrants, 1);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	ATF_REQUIRE_EQ(pool_release(F.p, h, 7), 0);
	exited(100, 143);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE(F.spawns[1].port != F.spawns[0].port);
	spawned(1, 101);
	ATF_REQUIRE_EQ(F.dones, 0);
	probed_last();
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(F.ngrants, 2);
	ATF_REQUIRE_EQ(F.grants[1].reqid, 2);
	ATF_REQUIRE_EQ(F.grants[1].port, F.spawns[1].port);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_READY);
	ATF_REQUIRE_EQ(st.pid, 101);
	ATF_REQUIRE_EQ(st.restarts, 1);
	ATF_REQUIRE_EQ(st.loads, 2);
	/* Acquire works afterwards, without pool_load. */
	hold("a", 3, 7);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(restart_not_unloaded);
ATF_TC_BODY(restart_not_unloaded, tc)
{
	setup();
	model("n", 0, GIB);
	pool_start(F.p);
	spawned(0, 100);
	probed_last();
	ATF_REQUIRE_EQ(pool_restart(F.p, "n", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	/* Unlike an unload: not refused not-loaded, it waits. */
	pool_acquire(F.p, "n", 1, 7);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	/* A stubborn one is killed after the grace. */
	advance(POOL_STOP_GRACE);
	ATF_REQUIRE_EQ(killed_with(100, SIGKILL), 1);
	signalled(100, SIGKILL);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 1);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(state("n"), STATE_READY);
	/* Not a death: no backoff restart follows. */
	advance(POOL_BACKOFF_MAX);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE(!logged(LOG_ERR, "server for n"));
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(restart_not_running);
ATF_TC_BODY(restart_not_running, tc)
{
	setup();
	model("a", 1, GIB);
	ATF_REQUIRE_EQ(pool_restart(F.p, "nope", done_cb, NULL), -1);
	ATF_REQUIRE_EQ(F.dones, 0);
	ATF_REQUIRE_EQ(pool_restart(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(F.nspawns, 0);
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	/* Two restarts of a busy queue make one. */
	model("b", 1, GIB);
	bring_up("a", 100);
	pool_acquire(F.p, "b", 1, 7);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_EQ(pool_restart(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(pool_restart(F.p, "a", done_cb, NULL), 0);
	ATF_REQUIRE_EQ(F.nkills, 0);
	/* Queued behind b's load: a is still granted meanwhile. */
	hold("a", 2, 7);
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	exited(100, 0);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	spawned(2, 102);
	probed_last();
	ATF_REQUIRE_EQ(F.dones, 3);
	ATF_REQUIRE_EQ(F.nkills, 1);
	pool_free(F.p);
}

/*
 * Sizes that would wrap.  A need near INT64_MAX (a sparse file, a
 * saturated sum) must never fit by wrapping negative.
 */
ATF_TC_WITHOUT_HEAD(fits_saturates);
ATF_TC_BODY(fits_saturates, tc)
{
	struct mem_snapshot	 m = { 64 * GIB, 128 * GIB };

	(void)tc;
	ATF_CHECK_EQ(pool_fits(&m, 2 * GIB, 0, 0, 62 * GIB), 1);
	ATF_CHECK_EQ(pool_fits(&m, 2 * GIB, 0, 0, 62 * GIB + 1), 0);
	/* need + reserve: INT64_MAX + 2 GiB */
	ATF_CHECK_EQ(pool_fits(&m, 2 * GIB, 0, 0, INT64_MAX), 0);
	ATF_CHECK_EQ(pool_fits(&m, INT64_MAX, 0, 0, GIB), 0);
	/* committed + need, with a budget */
	ATF_CHECK_EQ(pool_fits(NULL, 0, 10 * GIB, 5 * GIB, INT64_MAX), 0);
	ATF_CHECK_EQ(pool_fits(NULL, 0, 10 * GIB, INT64_MAX - GIB, 2 * GIB),
	    0);
	ATF_CHECK_EQ(pool_fits(NULL, 0, 10 * GIB, INT64_MAX, INT64_MAX), 0);
	ATF_CHECK_EQ(pool_fits(NULL, 0, 10 * GIB, 5 * GIB, 5 * GIB), 1);
}

ATF_TC_WITHOUT_HEAD(huge_need_refused);
ATF_TC_BODY(huge_need_refused, tc)
{
	(void)tc;
	setup_with(2 * GIB, 0, 0);
	model("huge", 1, INT64_MAX);
	pool_acquire(F.p, "huge", 1, 7);
	ATF_CHECK_EQ(F.nspawns, 0);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_CHECK_EQ(F.refusals[0].reason, REFUSE_NOT_ENOUGH_MEMORY);
	ATF_CHECK_EQ(state("huge"), STATE_STOPPED);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(budget_sum_saturates);
ATF_TC_BODY(budget_sum_saturates, tc)
{
	(void)tc;
	setup_with(0, 10 * GIB, 0);
	/* Not lazy: loaded without a fit test, and never evicted. */
	model("big", 0, INT64_MAX - GIB / 2);
	model("big2", 0, INT64_MAX / 2);
	model("small", 1, GIB);
	bring_up("big", 100);
	bring_up("big2", 101);
	/* big + big2 + 1 GiB is far over the budget, not below it. */
	pool_acquire(F.p, "small", 1, 7);
	ATF_CHECK_EQ(F.nspawns, 2);
	ATF_CHECK_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_CHECK_EQ(F.refusals[0].reason, REFUSE_NOT_ENOUGH_MEMORY);
	pool_free(F.p);
}

/*
 * The stop path.  A model's process is reported exited only once
 * nothing it started is left (its reaper's exit), however long after
 * the model's own process that is: until then its memory and its port
 * are in use, the stop has not finished, and SIGKILL follows SIGTERM
 * after the grace.  The exit carries the model's own status.
 */
ATF_TC_WITHOUT_HEAD(evict_waits_for_remains);
ATF_TC_BODY(evict_waits_for_remains, tc)
{
	struct proto_status	 st;

	(void)tc;
	setup_with(0, GIB, 0);
	model("a", 1, 600 * 1024 * 1024);
	model("b", 1, 600 * 1024 * 1024);
	bring_up("a", 100);
	pool_acquire(F.p, "b", 1, 7);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_CHECK_EQ(state("a"), STATE_STOPPED);
	/* a's own process is gone, a worker of it is not: no report yet. */
	advance(POOL_STOP_GRACE - 1);
	ATF_CHECK_EQ(F.nspawns, 1);
	ATF_CHECK_EQ(killed_with(100, SIGKILL), 0);
	status("a", &st);
	ATF_CHECK_EQ(st.pid, 0);
	advance(1);
	ATF_CHECK_EQ(killed_with(100, SIGKILL), 1);
	ATF_CHECK_EQ(F.nspawns, 1);
	/* Reported with how a itself ended: SIGTERM, not the SIGKILL. */
	signalled(100, SIGTERM);
	ATF_CHECK(logged(LOG_INFO, "server for a was killed by SIGTERM"));
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_CHECK_STREQ(F.spawns[1].name, "b");
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(idle_stop_waits_for_remains);
ATF_TC_BODY(idle_stop_waits_for_remains, tc)
{
	struct pool_plan	 plan;

	(void)tc;
	setup_with(0, GIB, 0);
	memset(&plan, 0, sizeof(plan));
	strlcpy(plan.name, "a", sizeof(plan.name));
	strlcpy(plan.label, "server for a", sizeof(plan.label));
	plan.lazy = 1;
	plan.need = 600 * 1024 * 1024;
	plan.idle_timeout = 1000;
	ATF_REQUIRE_EQ(pool_add(F.p, &plan), 0);
	model("b", 1, 600 * 1024 * 1024);
	bring_up("a", 100);
	advance(1000);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	/* b's load waits for the whole of a, SIGKILL included. */
	ATF_REQUIRE_EQ(pool_load(F.p, "b", load_cb, NULL), 0);
	advance(POOL_STOP_GRACE);
	ATF_CHECK_EQ(killed_with(100, SIGKILL), 1);
	ATF_CHECK_EQ(F.nspawns, 1);
	ATF_CHECK_EQ(F.dones, 0);
	exited(100, 0);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_CHECK_STREQ(F.spawns[1].name, "b");
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(unload_waits_for_remains);
ATF_TC_BODY(unload_waits_for_remains, tc)
{
	(void)tc;
	setup();
	model("a", 1, GIB);
	bring_up("a", 100);
	pool_unload(F.p, "a", done_cb, NULL);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	/* A load of it waits for the unload, which waits for the end. */
	ATF_REQUIRE_EQ(pool_load(F.p, "a", load_cb, NULL), 0);
	advance(POOL_STOP_GRACE);
	ATF_CHECK_EQ(killed_with(100, SIGKILL), 1);
	ATF_CHECK_EQ(F.dones, 0);
	ATF_CHECK_EQ(F.nspawns, 1);
	exited(100, 0);
	ATF_CHECK_EQ(F.dones, 1);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	/* A new port: the old one may still be held by the remains. */
	ATF_CHECK(F.spawns[1].port != F.spawns[0].port);
	pool_free(F.p);
}

/*
 * Stop all returns only once every process has exited: here the last
 * model in config order is the one still running, whether it is the
 * last to exit or the first.
 */
ATF_TC_WITHOUT_HEAD(stop_all_waits_for_last);
ATF_TC_BODY(stop_all_waits_for_last, tc)
{
	setup();
	model("a", 1, GIB);
	model("b", 0, GIB);
	model("c", 1, GIB);
	bring_up("a", 100);
	bring_up("b", 200);
	bring_up("c", 300);
	pool_stop_all(F.p, done_cb, NULL);
	ATF_REQUIRE_EQ(killed_with(300, SIGTERM), 1);
	signalled(100, SIGTERM);
	signalled(200, SIGTERM);
	ATF_REQUIRE_EQ(F.dones, 0);
	advance(POOL_STOP_GRACE - 1);
	ATF_REQUIRE_EQ(F.dones, 0);
	advance(1);
	ATF_REQUIRE_EQ(killed_with(300, SIGKILL), 1);
	ATF_REQUIRE_EQ(killed_with(100, SIGKILL), 0);
	ATF_REQUIRE_EQ(F.dones, 0);
	ATF_REQUIRE(!logged(LOG_INFO, "every model process has exited"));
	signalled(300, SIGKILL);
	ATF_REQUIRE_EQ(F.dones, 1);
	ATF_REQUIRE(logged(LOG_INFO, "every model process has exited"));
	pool_free(F.p);

	/* The last one first: the others are still waited for. */
	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	bring_up("a", 100);
	bring_up("b", 200);
	pool_stop_all(F.p, done_cb, NULL);
	signalled(200, SIGTERM);
	ATF_REQUIRE_EQ(F.dones, 0);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(F.dones, 1);
	pool_free(F.p);
}

/* A configured reserve is kept free of what a lazy model may take. */
ATF_TC_WITHOUT_HEAD(fit_keeps_reserve);
ATF_TC_BODY(fit_keeps_reserve, tc)
{
	struct mem_snapshot	 m = { 10 * GIB, 100 * GIB };

	/* pure: need + reserve must be available, to the byte */
	ATF_REQUIRE(pool_fits(&m, 3 * GIB, 0, 0, 7 * GIB));
	ATF_REQUIRE(!pool_fits(&m, 3 * GIB, 0, 0, 7 * GIB + 1));
	ATF_REQUIRE(!pool_fits(&m, 10 * GIB + 1, 0, 0, 0));
	ATF_REQUIRE(pool_fits(&m, 10 * GIB, 0, 0, 0));

	/* in a load: 3 GiB kept, whatever the machine's total */
	setup_with(3 * GIB, 0, 0);
	F.mem.available = 7 * GIB - 1;
	model("a", 1, 4 * GIB);
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(F.nspawns, 0);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_NOT_ENOUGH_MEMORY);
	ATF_REQUIRE_MSG(strstr(F.refusals[0].msg, "3.0 GiB kept in reserve") !=
	    NULL, "%s", F.refusals[0].msg);
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	F.mem.available = 7 * GIB;
	pool_acquire(F.p, "a", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	pool_free(F.p);
}

/*
 * Seed conformance (issue 20) and the unloaded state (issue 13 #13).
 */

/* Messages that pool_load callbacks got, in order. */
static char	 load_errs[8][PROTO_MSG_MAX];
static size_t	 nload_errs;

static void
load_cb_keep(void *arg, int ok, const char *err)
{
	(void)arg;
	(void)ok;
	F.dones++;
	if (nload_errs < 8)
		strlcpy(load_errs[nload_errs++], err != NULL ? err : "",
		    PROTO_MSG_MAX);
}

static uint64_t
deaths(void)
{
	struct pool_stats	 ps;

	pool_stats(F.p, &ps);
	return (ps.deaths);
}

static uint64_t
load_failures(void)
{
	struct pool_stats	 ps;

	pool_stats(F.p, &ps);
	return (ps.load_failures);
}

/* Item 1: exits the pool causes (unload, stop all) are no deaths, and
 * each child gets one SIGTERM; the load callbacks say why. */
ATF_TC_WITHOUT_HEAD(own_stops_not_deaths);
ATF_TC_BODY(own_stops_not_deaths, tc)
{
	setup();
	nload_errs = 0;
	model("a", 1, GIB);
	model("b", 1, GIB);
	model("c", 0, GIB);
	model("d", 1, GIB);
	bring_up("a", 100);
	bring_up("c", 300);
	ATF_REQUIRE_EQ(pool_unload(F.p, "a", done_cb, NULL), 0);
	signalled(100, SIGTERM);
	advance(POOL_EXIT_GRACE * 4);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(deaths(), 0);
	ATF_REQUIRE(!logged(LOG_ERR, "server for a"));

	/* A load ended by an unload while it was probed. */
	ATF_REQUIRE_EQ(pool_load(F.p, "b", load_cb_keep, NULL), 0);
	spawned(F.nspawns - 1, 200);
	ATF_REQUIRE_EQ(pool_unload(F.p, "b", NULL, NULL), 0);
	ATF_REQUIRE_EQ(killed_with(200, SIGTERM), 1);
	signalled(200, SIGTERM);
	ATF_REQUIRE_EQ(nload_errs, 1);
	ATF_REQUIRE_STREQ(load_errs[0],
	    "server for b was killed by SIGTERM before it was ready");

	/* A load ended by an unload before its spawn (queued behind d's). */
	pool_acquire(F.p, "d", 1, 7);
	ATF_REQUIRE_EQ(pool_load(F.p, "b", load_cb_keep, NULL), 0);
	ATF_REQUIRE_EQ(pool_unload(F.p, "b", NULL, NULL), 0);
	spawned(F.nspawns - 1, 400);
	probed_last();
	ATF_REQUIRE_EQ(nload_errs, 2);
	ATF_REQUIRE_STREQ(load_errs[1],
	    "server for b was unloaded before it started");

	/* A load ended by stop all. */
	ATF_REQUIRE_EQ(pool_load(F.p, "b", load_cb_keep, NULL), 0);
	spawned(F.nspawns - 1, 500);
	pool_stop_all(F.p, done_cb, NULL);
	ATF_REQUIRE_EQ(killed_with(300, SIGTERM), 1);
	ATF_REQUIRE_EQ(killed_with(400, SIGTERM), 1);
	ATF_REQUIRE_EQ(killed_with(500, SIGTERM), 1);
	signalled(300, SIGTERM);
	signalled(400, SIGTERM);
	signalled(500, SIGTERM);
	ATF_REQUIRE_EQ(nload_errs, 3);
	ATF_REQUIRE_STREQ(load_errs[2], "agency is stopping");
	advance(POOL_STOP_GRACE * 2);
	ATF_REQUIRE_EQ(killed_with(300, SIGKILL), 0);
	ATF_REQUIRE_EQ(deaths(), 0);
	ATF_REQUIRE(!logged(LOG_ERR, ""));
	pool_free(F.p);
}

/* Item 2: a load that stop all ends is not a load failure. */
ATF_TC_WITHOUT_HEAD(stop_all_load_not_failure);
ATF_TC_BODY(stop_all_load_not_failure, tc)
{
	struct proto_status	 st;

	setup();
	model("a", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	spawned(0, 100);
	pool_stop_all(F.p, done_cb, NULL);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(F.dones, 1);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.load_failures, 0);
	ATF_REQUIRE_EQ(load_failures(), 0);
	ATF_REQUIRE(!logged(LOG_ERR, "server for a"));
	pool_free(F.p);
}

/* Item 3: a wrong readiness answer fails the load at once; the kill
 * follows, and the model's next load waits for the exit. */
ATF_TC_WITHOUT_HEAD(wrong_answer_fails_at_once);
ATF_TC_BODY(wrong_answer_fails_at_once, tc)
{
	struct proto_status	 st;

	setup();
	nload_errs = 0;
	model("a", 1, GIB);
	model("n", 0, GIB);
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(pool_load(F.p, "a", load_cb_keep, NULL), 0);
	spawned(0, 100);
	pool_probe_result(F.p, F.probes[0].id, 0, 500, "broken");
	/* Answered before the process has exited. */
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_LOAD_FAILED);
	ATF_REQUIRE_STREQ(F.refusals[0].msg, "server for a answered 500 to "
	    "the readiness request: broken");
	ATF_REQUIRE_EQ(nload_errs, 1);
	ATF_REQUIRE_STREQ(load_errs[0], F.refusals[0].msg);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_FAILED);
	ATF_REQUIRE_EQ(st.load_failures, 1);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	/* A new request: its load waits for the old process to go. */
	pool_acquire(F.p, "a", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	advance(POOL_STOP_GRACE);
	ATF_REQUIRE_EQ(killed_with(100, SIGKILL), 1);
	signalled(100, SIGKILL);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE(F.spawns[1].port != 0);
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 1);
	ATF_REQUIRE_EQ(F.grants[0].reqid, 2);
	/* Counted once, and no death. */
	status("a", &st);
	ATF_REQUIRE_EQ(st.load_failures, 1);
	ATF_REQUIRE_EQ(deaths(), 0);

	/* Not lazy: restarted after the exit, on its backoff. */
	pool_start(F.p);
	spawned(2, 200);
	pool_probe_result(F.p, F.probes[F.nprobes - 1].id, 0, 404, "no");
	ATF_REQUIRE_EQ(state("n"), STATE_FAILED);
	advance(POOL_BACKOFF_MIN);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	signalled(200, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	advance(POOL_BACKOFF_MIN);
	ATF_REQUIRE_EQ(F.nspawns, 4);
	ATF_REQUIRE_STREQ(F.spawns[3].name, "n");
	pool_free(F.p);
}

/* Item 4: a queued load shows its state until it starts, and status
 * says it is queued. */
ATF_TC_WITHOUT_HEAD(queued_load_not_loading);
ATF_TC_BODY(queued_load_not_loading, tc)
{
	struct proto_status	 st;

	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	advance(1500);
	pool_acquire(F.p, "b", 2, 7);
	advance(500);
	status("b", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.waiting, WAIT_TURN);
	ATF_REQUIRE_EQ(st.queued, 1);
	ATF_REQUIRE_EQ(st.oldest_wait, 500);
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_LOADING);
	ATF_REQUIRE_EQ(st.waiting, WAIT_NONE);
	ATF_REQUIRE_EQ(st.queued, 1);
	ATF_REQUIRE_EQ(st.oldest_wait, 2000);
	spawned(0, 100);
	probed_last();
	status("b", &st);
	ATF_REQUIRE_EQ(st.state, STATE_LOADING);
	ATF_REQUIRE_EQ(st.waiting, WAIT_NONE);
	spawned(1, 200);
	probed_last();
	status("b", &st);
	ATF_REQUIRE_EQ(st.queued, 0);
	ATF_REQUIRE_EQ(st.oldest_wait, -1);
	/* A failed model with a queued load stays failed until it starts. */
	exited(200, 1);
	pool_acquire(F.p, "a", 3, 7);
	pool_restart(F.p, "a", NULL, NULL);
	pool_acquire(F.p, "b", 4, 7);
	ATF_REQUIRE_EQ(state("b"), STATE_FAILED);
	pool_free(F.p);
}

/* Item 5: what the messages say. */
ATF_TC_WITHOUT_HEAD(messages);
ATF_TC_BODY(messages, tc)
{
	setup_with(0, 4 * GIB, 0);
	F.mem.available = 3 * GIB;
	model("a", 1, 2 * GIB);
	model("b", 1, 3 * GIB);
	model("big", 1, 4 * GIB);
	/* Nothing loaded to blame: it says so. */
	pool_acquire(F.p, "big", 1, 7);
	ATF_REQUIRE_STREQ(F.refusals[0].msg, "not enough memory for big "
	    "(needs 4.0 GiB, 3.0 GiB available): nothing is loaded");
	/* The eviction log line has the figures. */
	bring_up("a", 100);
	pool_acquire(F.p, "b", 2, 7);
	ATF_REQUIRE(logged(LOG_INFO, "server for a: stopping it to make room "
	    "for server for b: idle, last used 0s ago: the least recently "
	    "used of the 1 idle models (needs 3.0 GiB, 3.0 GiB available, "
	    "budget 4.0 GiB of which 2.0 GiB in use)"));
	/* The not-loaded refusal names the way to load it. */
	signalled(100, SIGTERM);
	pool_unload(F.p, "b", NULL, NULL);
	pool_acquire(F.p, "b", 3, 7);
	ATF_REQUIRE_STREQ(F.refusals[F.nrefusals - 1].msg,
	    "b is not loaded; agency-ctl load b loads it");
	pool_free(F.p);
}

/* Item 6: a failed load does not stop the ones after it. */
ATF_TC_WITHOUT_HEAD(failed_job_does_not_stop_queue);
ATF_TC_BODY(failed_job_does_not_stop_queue, tc)
{
	setup();
	model("a", 1, GIB);
	model("b", 1, GIB);
	pool_acquire(F.p, "a", 1, 7);
	pool_acquire(F.p, "b", 2, 7);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	pool_spawned(F.p, F.spawns[0].id, -1, "no such file");
	ATF_REQUIRE_EQ(F.refusals[0].reqid, 1);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_STREQ(F.spawns[1].name, "b");
	spawned(1, 200);
	probed_last();
	ATF_REQUIRE_EQ(F.ngrants, 1);
	ATF_REQUIRE_EQ(F.grants[0].reqid, 2);
	ATF_REQUIRE_EQ(state("a"), STATE_FAILED);
	ATF_REQUIRE_EQ(state("b"), STATE_READY);
	pool_free(F.p);
}

/* Issue 13 #13: a model stopped by unload is "unloaded" until a load;
 * one stopped by its idle timeout or removed is "stopped". */
ATF_TC_WITHOUT_HEAD(unloaded_state);
ATF_TC_BODY(unloaded_state, tc)
{
	setup();
	model("a", 1, GIB);
	model("n", 0, GIB);
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	bring_up("a", 100);
	pool_unload(F.p, "a", NULL, NULL);
	ATF_REQUIRE_EQ(state("a"), STATE_UNLOADED);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(state("a"), STATE_UNLOADED);
	ATF_REQUIRE_STREQ(proto_state_name(STATE_UNLOADED), "unloaded");
	pool_load(F.p, "a", NULL, NULL);
	ATF_REQUIRE_EQ(state("a"), STATE_LOADING);
	spawned(1, 101);
	probed_last();
	ATF_REQUIRE_EQ(state("a"), STATE_READY);
	/* Not lazy, too: refused until a load. */
	pool_unload(F.p, "n", NULL, NULL);
	ATF_REQUIRE_EQ(state("n"), STATE_UNLOADED);
	/* Removed while unloaded: draining, so stopped. */
	pool_unload(F.p, "a", NULL, NULL);
	signalled(101, SIGTERM);
	pool_remove(F.p, "n", NULL, NULL);
	ATF_REQUIRE_EQ(state("a"), STATE_UNLOADED);
	ATF_REQUIRE_EQ(listed("n"), 0);
	pool_free(F.p);
}

/*
 * A model that is not lazy and keeps dying is started again after 1 s,
 * then 2, 4, ... doubling up to 5 min, and 5 min from then on.
 */
ATF_TC_WITHOUT_HEAD(backoff_doubles);
ATF_TC_BODY(backoff_doubles, tc)
{
	static const int64_t	 delays[] = { 1000, 2000, 4000, 8000, 16000,
				    32000, 64000, 128000, 256000, 300000,
				    300000 };
	char			 line[64];
	size_t			 i;
	pid_t			 pid = 100;

	setup();
	model("n", 0, GIB);
	pool_start(F.p);
	spawned(0, pid);
	probed_last();
	for (i = 0; i < sizeof(delays) / sizeof(delays[0]); i++) {
		ATF_REQUIRE_EQ(state("n"), STATE_READY);
		exited(pid, 3);
		advance(POOL_EXIT_GRACE);
		snprintf(line, sizeof(line), "restarting in %llds",
		    (long long)delays[i] / 1000);
		ATF_REQUIRE_MSG(logged(LOG_INFO, line), "no \"%s\"", line);
		advance(delays[i] - 1);
		ATF_REQUIRE_EQ_MSG(F.nspawns, i + 1, "restart %zu came "
		    "before %lld ms", i + 1, (long long)delays[i]);
		advance(1);
		ATF_REQUIRE_EQ_MSG(F.nspawns, i + 2, "restart %zu did not "
		    "come after %lld ms", i + 1, (long long)delays[i]);
		spawned(i + 1, ++pid);
		probed_last();
	}
	pool_free(F.p);
}

/*
 * Scheduling (issue 14): models that may wait (queue_timeout > 0).
 */

#define WINDOW	10000		/* ms, the fairness window of these tests */
#define TMO	600000		/* ms, a queue timeout that does not end */

static struct pool *
setup_sched(int64_t budget, int64_t fairness, uint32_t max_queue)
{
	struct pool_settings	 set;

	memset(&set, 0, sizeof(set));
	set.budget = budget;
	set.fairness = fairness;
	set.max_queue = max_queue;
	return (setup_settings(&set));
}

/* The index of the grant of reqid, or -1; it fails if there are two. */
static ssize_t
granted(uint64_t reqid)
{
	size_t	 i;
	ssize_t	 found = -1;

	for (i = 0; i < F.ngrants; i++)
		if (F.grants[i].reqid == reqid) {
			ATF_REQUIRE_MSG(found == -1, "request %llu granted "
			    "twice", (unsigned long long)reqid);
			found = (ssize_t)i;
		}
	return (found);
}

static ssize_t
refused(uint64_t reqid)
{
	size_t	 i;

	for (i = 0; i < F.nrefusals; i++)
		if (F.refusals[i].reqid == reqid)
			return ((ssize_t)i);
	return (-1);
}

static uint64_t
holdid_of(uint64_t reqid)
{
	ssize_t	 i;

	ATF_REQUIRE((i = granted(reqid)) != -1);
	return (F.grants[i].holdid);
}

static void
release(uint64_t reqid)
{
	ATF_REQUIRE_EQ(pool_release(F.p, holdid_of(reqid), 7), 0);
}

/* The stopped process pid is gone; the load that waited for its memory
 * spawns (spawn i) as next and becomes ready. */
static void
swapped(pid_t pid, size_t i, pid_t next)
{
	signalled(pid, SIGTERM);
	ATF_REQUIRE(i < F.nspawns);
	spawned(i, next);
	probed_last();
}

/*
 * The scene of several of these: lazy models a, b (and c) of 1.5 G each
 * in a 2 G budget, the window WINDOW; a is ready with process 100 and
 * busy with request 1, since 100 ms.
 */
static void
a_busy(int with_c)
{
	setup_sched(2 * GIB, WINDOW, 0);
	qmodel("a", 1, 3 * GIB / 2, TMO, 0, 0);
	qmodel("b", 1, 3 * GIB / 2, TMO, 0, 0);
	if (with_c)
		qmodel("c", 1, 3 * GIB / 2, TMO, 0, 0);
	bring_up("a", 100);
	hold("a", 1, 7);
	advance(100);
}

/* pool_acquire_progress, with a check that it tells nothing from within. */
static void
acquire_told(const char *name, uint64_t reqid)
{
	F.in_pool = 1;
	pool_acquire_progress(F.p, name, reqid, 7);
	F.in_pool = 0;
}

/* The last telling of reqid, or NULL; n: how many it had. */
static const struct fwait *
told(uint64_t reqid, size_t *n)
{
	const struct fwait	*last = NULL;
	size_t			 i, k = 0;

	for (i = 0; i < F.nwaits; i++)
		if (F.waits[i].reqid == reqid) {
			last = &F.waits[i];
			k++;
		}
	if (n != NULL)
		*n = k;
	return (last);
}

/*
 * Progress: a request that waits is told at the next turn, not from
 * within the call; one answered within the call never is.  A load is
 * told with how long it has run, and a request that joins it later
 * with the same load and one ahead.
 */
ATF_TC_WITHOUT_HEAD(progress_load);
ATF_TC_BODY(progress_load, tc)
{
	const struct fwait	*w;
	size_t			 n;

	setup_with(0, 2 * GIB, 0);
	model("a", 1, GIB);
	model("big", 1, 3 * GIB);
	model("r", 1, GIB);
	bring_up("r", 50);
	/* Granted, or refused, at once: never told. */
	acquire_told("r", 1);
	ATF_REQUIRE(granted(1) != -1);
	acquire_told("big", 2);
	ATF_REQUIRE(refused(2) != -1);
	advance(0);
	ATF_REQUIRE_EQ(F.nwaits, 0);
	/* a loads (the reference pool: at once, nothing to wait for). */
	acquire_told("a", 3);
	ATF_REQUIRE_EQ(F.nwaits, 0);
	advance(0);
	ATF_REQUIRE_EQ(F.nwaits, 1);
	ATF_REQUIRE_EQ(F.waits[0].reqid, 3);
	ATF_REQUIRE_EQ(F.waits[0].wait, WAIT_LOAD);
	ATF_REQUIRE_EQ(F.waits[0].ahead, 0);
	ATF_REQUIRE_EQ(F.waits[0].load_ms, 0);
	/* Nothing changes while it loads: nothing more is told. */
	advance(1200);
	ATF_REQUIRE_EQ(F.nwaits, 1);
	acquire_told("a", 4);
	pool_acquire(F.p, "a", 5, 7);		/* does not ask */
	advance(0);
	ATF_REQUIRE_EQ(F.nwaits, 2);
	w = told(4, NULL);
	ATF_REQUIRE(w != NULL);
	ATF_REQUIRE_EQ(w->wait, WAIT_LOAD);
	ATF_REQUIRE_EQ(w->ahead, 1);
	ATF_REQUIRE_EQ(w->load_ms, 1200);
	ATF_REQUIRE_EQ(told(5, NULL), NULL);
	spawned(F.nspawns - 1, 100);
	probed_last();
	ATF_REQUIRE(granted(3) != -1 && granted(4) != -1 &&
	    granted(5) != -1);
	advance(10 * POOL_PROGRESS);
	ATF_REQUIRE_EQ(F.nwaits, 2);
	(void)told(3, &n);
	ATF_REQUIRE_EQ(n, 1);
	pool_free(F.p);
}

/*
 * Progress of requests queued for slots: each told its place; as the
 * ones ahead are served or leave, the rest are told again in one pass,
 * at most every POOL_PROGRESS ms however often the queue moves.
 */
ATF_TC_WITHOUT_HEAD(progress_slots);
ATF_TC_BODY(progress_slots, tc)
{
	size_t	 n;
	int64_t	 t;

	setup_sched(0, WINDOW, 0);
	qmodel("a", 1, GIB, TMO, 1, 0);
	bring_up("a", 100);
	hold("a", 1, 7);
	acquire_told("a", 2);
	acquire_told("a", 3);
	acquire_told("a", 4);
	acquire_told("a", 5);
	advance(0);
	ATF_REQUIRE_EQ(F.nwaits, 4);
	ATF_REQUIRE_EQ(told(2, NULL)->wait, WAIT_SLOT);
	ATF_REQUIRE_EQ(told(2, NULL)->ahead, 0);
	ATF_REQUIRE_EQ(told(5, NULL)->ahead, 3);
	ATF_REQUIRE_EQ(told(5, NULL)->load_ms, -1);
	/* 2 is served: the others are told at once, one fewer ahead. */
	release(1);
	ATF_REQUIRE(granted(2) != -1);
	advance(0);
	t = F.now;
	ATF_REQUIRE_EQ(F.nwaits, 7);
	ATF_REQUIRE_EQ(told(3, NULL)->ahead, 0);
	ATF_REQUIRE_EQ(told(5, NULL)->ahead, 2);
	/* 3 leaves and 4 is served within 50 ms: one telling for both,
	 * POOL_PROGRESS after the last. */
	advance(40);
	ATF_REQUIRE_EQ(pool_withdraw(F.p, 3, 7), 1);
	advance(10);
	release(2);
	ATF_REQUIRE(granted(4) != -1);
	advance(POOL_PROGRESS - 51);
	ATF_REQUIRE_EQ(F.nwaits, 7);
	advance(1);
	ATF_REQUIRE_EQ(F.nwaits, 8);
	ATF_REQUIRE_EQ(told(5, &n)->ahead, 0);
	ATF_REQUIRE_EQ(n, 3);
	ATF_REQUIRE_EQ(F.waits[7].at - t, POOL_PROGRESS);
	/* A new one is told at once, even within POOL_PROGRESS. */
	advance(10);
	acquire_told("a", 6);
	advance(0);
	ATF_REQUIRE_EQ(F.nwaits, 9);
	ATF_REQUIRE_EQ(told(6, NULL)->ahead, 1);
	/* Nothing changed: nothing told, nothing armed. */
	advance(10 * POOL_PROGRESS);
	ATF_REQUIRE_EQ(F.nwaits, 9);
	release(4);
	ATF_REQUIRE(granted(5) != -1);
	advance(0);
	ATF_REQUIRE_EQ(F.nwaits, 10);
	ATF_REQUIRE_EQ(told(6, NULL)->ahead, 0);
	pool_free(F.p);
}

/*
 * Progress of a load that waits for memory: told so, then, once busy a
 * drains and is stopped for it, that it loads.
 */
ATF_TC_WITHOUT_HEAD(progress_memory);
ATF_TC_BODY(progress_memory, tc)
{
	a_busy(0);
	acquire_told("b", 2);
	acquire_told("b", 3);
	advance(0);
	ATF_REQUIRE_EQ(told(2, NULL)->wait, WAIT_MEMORY);
	ATF_REQUIRE_EQ(told(2, NULL)->ahead, 0);
	ATF_REQUIRE_EQ(told(3, NULL)->wait, WAIT_MEMORY);
	ATF_REQUIRE_EQ(told(3, NULL)->ahead, 1);
	advance(2000);
	ATF_REQUIRE_EQ(F.nwaits, 2);
	/* a drains: stopped for b, whose load begins. */
	release(1);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	/* Until a has exited they still wait for memory: nothing to tell. */
	advance(0);
	ATF_REQUIRE_EQ(F.nwaits, 2);
	/* a exits: b's load begins, told at the next telling. */
	signalled(100, SIGTERM);
	advance(POOL_PROGRESS);
	ATF_REQUIRE_EQ(F.nwaits, 4);
	ATF_REQUIRE_EQ(told(2, NULL)->wait, WAIT_LOAD);
	ATF_REQUIRE_EQ(told(2, NULL)->load_ms, POOL_PROGRESS);
	ATF_REQUIRE_EQ(told(3, NULL)->wait, WAIT_LOAD);
	ATF_REQUIRE_EQ(told(3, NULL)->ahead, 1);
	spawned(1, 200);
	probed_last();
	ATF_REQUIRE(granted(2) != -1 && granted(3) != -1);
	advance(10 * POOL_PROGRESS);
	ATF_REQUIRE_EQ(F.nwaits, 4);
	pool_free(F.p);
}

/* Progress ends with the request however it ends: no telling after its
 * answer, and no timer left once nobody asks. */
ATF_TC_WITHOUT_HEAD(progress_ends);
ATF_TC_BODY(progress_ends, tc)
{
	size_t	 i;

	a_busy(0);
	acquire_told("b", 2);
	acquire_told("b", 3);
	ATF_REQUIRE_EQ(pool_withdraw(F.p, 2, 7), 1);
	advance(0);
	ATF_REQUIRE_EQ(told(2, NULL), NULL);
	ATF_REQUIRE_EQ(told(3, NULL)->ahead, 0);
	pool_release_owner(F.p, 7);
	ATF_REQUIRE_EQ(refused(3), -1);
	advance(POOL_PROGRESS);
	ATF_REQUIRE_EQ(F.nwaits, 1);
	for (i = 0; i < NREC; i++)
		ATF_REQUIRE(!F.timers[i].used);
	pool_free(F.p);
}

/* Waiting for memory, first come first served. */
ATF_TC_WITHOUT_HEAD(wait_for_memory_fifo);
ATF_TC_BODY(wait_for_memory_fifo, tc)
{
	struct proto_status	 st;

	a_busy(1);
	pool_acquire(F.p, "b", 2, 7);
	advance(100);
	pool_acquire(F.p, "c", 3, 7);
	/* Nobody refused, nothing stopped: they wait. */
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	status("b", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.waiting, WAIT_MEMORY);
	ATF_REQUIRE_EQ(st.queued, 1);
	ATF_REQUIRE_EQ(st.oldest_wait, 100);
	status("c", &st);
	ATF_REQUIRE_EQ(st.waiting, WAIT_TURN);
	ATF_REQUIRE(logged(LOG_INFO, "server for b: waiting for memory held "
	    "by a (busy)"));
	/* a drains: stopped for b, the first to wait. */
	release(1);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	/* b waits for a's exit: queued for memory, not loading yet. */
	status("b", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.waiting, WAIT_MEMORY);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_STREQ(F.spawns[1].name, "b");
	ATF_REQUIRE_EQ(state("b"), STATE_LOADING);
	/* c now waits for memory that b holds. */
	status("c", &st);
	ATF_REQUIRE_EQ(st.waiting, WAIT_MEMORY);
	spawned(1, 200);
	probed_last();
	ATF_REQUIRE(granted(2) != -1);
	ATF_REQUIRE_EQ(granted(3), -1);
	/* b in use is kept a moment for its client's next request. */
	release(2);
	ATF_REQUIRE_EQ(killed_with(200, SIGTERM), 0);
	advance(POOL_LINGER);
	ATF_REQUIRE_EQ(killed_with(200, SIGTERM), 1);
	swapped(200, 2, 300);
	ATF_REQUIRE_STREQ(F.spawns[2].name, "c");
	ATF_REQUIRE(granted(3) != -1);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	pool_free(F.p);
}

/* Never for a model that is not lazy, nor for one that cannot fit. */
ATF_TC_WITHOUT_HEAD(never_wait_in_vain);
ATF_TC_BODY(never_wait_in_vain, tc)
{
	setup_sched(2 * GIB, WINDOW, 0);
	qmodel("n", 0, 3 * GIB / 2, TMO, 0, 0);
	qmodel("a", 1, GIB, TMO, 0, 0);
	qmodel("big", 1, 3 * GIB, TMO, 0, 0);
	pool_start(F.p);
	spawned(0, 100);
	probed_last();
	hold("n", 1, 7);
	pool_acquire(F.p, "a", 2, 7);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_NOT_ENOUGH_MEMORY);
	ATF_REQUIRE(strstr(F.refusals[0].msg, "n (busy)") != NULL);
	pool_acquire(F.p, "big", 3, 7);
	ATF_REQUIRE_EQ(F.refusals[1].reason, REFUSE_NOT_ENOUGH_MEMORY);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_EQ(state("a"), STATE_STOPPED);
	pool_free(F.p);
}

/* The queue timeout ends a wait, with a Retry-After; the load that
 * nobody waits for any more is dropped. */
ATF_TC_WITHOUT_HEAD(queue_timeout);
ATF_TC_BODY(queue_timeout, tc)
{
	struct proto_status	 st;

	setup_sched(2 * GIB, WINDOW, 0);
	qmodel("a", 1, 3 * GIB / 2, TMO, 0, 0);
	qmodel("b", 1, 3 * GIB / 2, 30000, 0, 0);
	bring_up("a", 100);
	hold("a", 1, 7);
	advance(100);
	pool_acquire(F.p, "b", 2, 7);
	advance(29999);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	advance(1);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_QUEUE_TIMEOUT);
	ATF_REQUIRE(F.refusals[0].retry_after >= 1);
	ATF_REQUIRE_STREQ(F.refusals[0].msg, "b: no turn within the queue "
	    "timeout (30s): its load waited for memory held by a (busy)");
	status("b", &st);
	ATF_REQUIRE_EQ(st.queued, 0);
	ATF_REQUIRE_EQ(st.waiting, WAIT_NONE);
	/* a is not stopped for nobody. */
	release(1);
	advance(WINDOW);
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_EQ(state("a"), STATE_READY);
	pool_free(F.p);
}

/* max queue, global and per model: refused at once beyond it. */
ATF_TC_WITHOUT_HEAD(queue_bounds);
ATF_TC_BODY(queue_bounds, tc)
{
	setup_sched(2 * GIB, WINDOW, 2);
	qmodel("a", 1, 3 * GIB / 2, TMO, 0, 0);
	qmodel("b", 1, 3 * GIB / 2, TMO, 0, 1);
	qmodel("c", 1, 3 * GIB / 2, TMO, 0, 0);
	bring_up("a", 100);
	hold("a", 1, 7);
	pool_acquire(F.p, "b", 2, 7);
	pool_acquire(F.p, "b", 3, 7);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reqid, 3);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_QUEUE_FULL);
	ATF_REQUIRE_STREQ(F.refusals[0].msg, "the queue of b is full: 1 "
	    "requests wait (max queue 1)");
	ATF_REQUIRE(F.refusals[0].retry_after >= 1);
	pool_acquire(F.p, "c", 4, 7);
	pool_acquire(F.p, "c", 5, 7);
	ATF_REQUIRE_EQ(F.nrefusals, 2);
	ATF_REQUIRE_EQ(F.refusals[1].reqid, 5);
	ATF_REQUIRE_EQ(F.refusals[1].reason, REFUSE_QUEUE_FULL);
	ATF_REQUIRE_STREQ(F.refusals[1].msg, "the queue is full: 2 requests "
	    "wait (max queue 2)");
	/* A client that leaves frees its place at once. */
	pool_withdraw(F.p, 4, 7);
	pool_acquire(F.p, "c", 6, 7);
	ATF_REQUIRE_EQ(F.nrefusals, 2);
	pool_free(F.p);
}

/* max requests: the rest wait for slots, in order, each granted once;
 * 429 when the model's queue is full. */
ATF_TC_WITHOUT_HEAD(max_requests_slots);
ATF_TC_BODY(max_requests_slots, tc)
{
	struct proto_status	 st;
	size_t			 i;

	setup_sched(0, WINDOW, 0);
	qmodel("a", 1, GIB, TMO, 2, 1);
	qmodel("z", 1, GIB, TMO, 1, 0);
	qmodel("m", 1, GIB, 0, 1, 0);
	bring_up("a", 100);
	hold("a", 1, 7);
	hold("a", 2, 7);
	advance(10);
	pool_acquire(F.p, "a", 3, 7);
	ATF_REQUIRE_EQ(granted(3), -1);
	status("a", &st);
	ATF_REQUIRE_EQ(st.in_progress, 2);
	ATF_REQUIRE_EQ(st.queued, 1);
	ATF_REQUIRE_EQ(st.waiting, WAIT_SLOT);
	ATF_REQUIRE_EQ(st.max_requests, 2);
	pool_acquire(F.p, "a", 4, 7);
	ATF_REQUIRE_EQ(F.refusals[0].reqid, 4);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_MODEL_BUSY);
	ATF_REQUIRE(F.refusals[0].retry_after >= 1);
	release(1);
	ATF_REQUIRE(granted(3) != -1);
	status("a", &st);
	ATF_REQUIRE_EQ(st.in_progress, 2);
	ATF_REQUIRE_EQ(st.queued, 0);
	ATF_REQUIRE_EQ(st.waiting, WAIT_NONE);

	/* A load's waiters beyond its slots go on waiting for them. */
	pool_acquire(F.p, "z", 10, 7);
	pool_acquire(F.p, "z", 11, 7);
	pool_acquire(F.p, "z", 12, 7);
	spawned(1, 200);
	probed_last();
	ATF_REQUIRE(granted(10) != -1);
	ATF_REQUIRE_EQ(granted(11), -1);
	ATF_REQUIRE_EQ(in_progress("z"), 1);
	release(10);
	ATF_REQUIRE(granted(11) != -1);
	ATF_REQUIRE_EQ(granted(12), -1);
	release(11);
	ATF_REQUIRE(granted(12) != -1);
	release(12);
	ATF_REQUIRE_EQ(in_progress("z"), 0);

	/* No queue (queue timeout 0): 429 at once. */
	bring_up("m", 300);
	hold("m", 20, 7);
	pool_acquire(F.p, "m", 21, 7);
	ATF_REQUIRE(refused(21) != -1);
	ATF_REQUIRE_EQ(F.refusals[refused(21)].reason, REFUSE_MODEL_BUSY);
	/* Each request answered once. */
	for (i = 1; i <= 21; i++)
		if (granted(i) != -1)
			ATF_REQUIRE_EQ(refused(i), -1);
	pool_free(F.p);
}

/* Retry-After comes from what was measured. */
ATF_TC_WITHOUT_HEAD(retry_after_measured);
ATF_TC_BODY(retry_after_measured, tc)
{
	uint64_t	 r;

	setup_sched(0, WINDOW, 0);
	qmodel("a", 1, GIB, TMO, 1, 1);
	bring_up("a", 100);
	/* Three requests of 4 s each. */
	for (r = 1; r <= 3; r++) {
		hold("a", r, 7);
		advance(4000);
		release(r);
	}
	hold("a", 4, 7);
	pool_acquire(F.p, "a", 5, 7);
	pool_acquire(F.p, "a", 6, 7);
	/* One ahead of it, one slot, 4 s a request: 8 s. */
	ATF_REQUIRE_EQ(F.refusals[0].reqid, 6);
	ATF_REQUIRE_EQ(F.refusals[0].retry_after, 8);
	pool_free(F.p);
}

ATF_TC_WITHOUT_HEAD(estimate_pure);
ATF_TC_BODY(estimate_pure, tc)
{
	struct pool_guess	 g;

	memset(&g, 0, sizeof(g));
	g.ready = 1;
	g.req_ms = 4000;
	g.load_ms = -1;
	g.drain_ms = -1;
	ATF_REQUIRE_EQ(pool_wait_estimate(&g), 4000);
	g.slots = 2;
	g.ahead = 3;		/* the 4th: 2 rounds */
	ATF_REQUIRE_EQ(pool_wait_estimate(&g), 8000);
	g.ahead = 4;		/* the 5th: 3 rounds */
	ATF_REQUIRE_EQ(pool_wait_estimate(&g), 12000);
	/* Not ready: drain, load, then the rounds ahead. */
	g.ready = 0;
	g.load_ms = 7000;
	g.drain_ms = 2000;
	ATF_REQUIRE_EQ(pool_wait_estimate(&g), 2000 + 7000 + 2 * 4000);
	/* Nothing measured yet: the guesses. */
	g.req_ms = g.load_ms = g.drain_ms = -1;
	g.slots = 0;
	ATF_REQUIRE_EQ(pool_wait_estimate(&g), POOL_GUESS_LOAD);
	ATF_REQUIRE_EQ(pool_retry_after(0), 1);
	ATF_REQUIRE_EQ(pool_retry_after(1), 1);
	ATF_REQUIRE_EQ(pool_retry_after(1000), 1);
	ATF_REQUIRE_EQ(pool_retry_after(1001), 2);
	ATF_REQUIRE_EQ(pool_retry_after(100LL * 3600 * 1000), POOL_RETRY_MAX);
}

ATF_TC_WITHOUT_HEAD(room_pure);
ATF_TC_BODY(room_pure, tc)
{
	struct pool_view	 v[4];
	struct mem_snapshot	 m = { 10 * GIB, 100 * GIB };
	struct pool_cand	 cand[4];
	size_t			 stop[8];
	struct pool_stops	 st = { cand, stop, 0, 0, 0, 0 };

	memset(v, 0, sizeof(v));
	/* 0: self; 1 lazy idle; 2 lazy busy; 3 not lazy idle */
	v[0] = (struct pool_view){ STATE_STOPPED, 1, 0, -1, 4 * GIB, 0, 0, 0,
	    0 };
	v[1] = (struct pool_view){ STATE_READY, 1, 0, 10, 3 * GIB, 1, 0, 0, 0 };
	v[2] = (struct pool_view){ STATE_READY, 1, 1, 5, 3 * GIB, 1, 0, 0, 0 };
	v[3] = (struct pool_view){ STATE_READY, 0, 0, 1, 3 * GIB, 1, 0, 0, 0 };
	ATF_REQUIRE_EQ(pool_room(v, 4, 0, &m, 0, 0, ROOM_MODE_TURN, &st),
	    ROOM_FITS);
	ATF_REQUIRE_EQ(st.n, 0);
	/* budget 12: 9 + 4 > 12; stopping 1 gives 6 + 4 */
	ATF_REQUIRE_EQ(pool_room(v, 4, 0, &m, 0, 12 * GIB, ROOM_MODE_TURN,
	    &st), ROOM_EVICT);
	ATF_REQUIRE_EQ(st.n, 1);
	ATF_REQUIRE_EQ(st.stop[0], 1);
	ATF_REQUIRE_EQ(st.missing, GIB);
	ATF_REQUIRE_EQ(st.how, STOPS_FEWEST);
	ATF_REQUIRE_EQ(pool_room(v, 4, 0, &m, 0, 12 * GIB,
	    ROOM_MODE_REFERENCE, &st), ROOM_EVICT);
	ATF_REQUIRE_EQ(st.n, 1);
	ATF_REQUIRE_EQ(st.stop[0], 1);
	ATF_REQUIRE_EQ(st.how, STOPS_LRU);
	/* budget 9: stopping 1 is not enough; 2 too would be: wait */
	ATF_REQUIRE_EQ(pool_room(v, 4, 0, &m, 0, 9 * GIB, ROOM_MODE_TURN,
	    &st), ROOM_WAIT);
	ATF_REQUIRE_EQ(st.n, 0);
	/* budget 6: only the one that is not lazy would be left: never */
	ATF_REQUIRE_EQ(pool_room(v, 4, 0, &m, 0, 6 * GIB, ROOM_MODE_TURN,
	    &st), ROOM_NEVER);
	/* kept counts as busy */
	v[1].kept = 1;
	ATF_REQUIRE_EQ(pool_room(v, 4, 0, &m, 0, 12 * GIB, ROOM_MODE_TURN,
	    &st), ROOM_WAIT);
	v[1].kept = 0;
	/* a loading model has not taken its memory yet */
	v[1].state = STATE_LOADING;
	m.available = 6 * GIB;
	ATF_REQUIRE_EQ(pool_room(v, 4, 0, &m, 0, 0, ROOM_MODE_TURN, &st),
	    ROOM_WAIT);
	m.available = 7 * GIB;
	ATF_REQUIRE_EQ(pool_room(v, 4, 0, &m, 0, 0, ROOM_MODE_TURN, &st),
	    ROOM_FITS);
}

/*
 * Fairness: once a load has waited for a busy model longer than the
 * window, that model takes no new request; it drains, the swap comes,
 * and the waiting batch is served together.
 */
ATF_TC_WITHOUT_HEAD(fairness_window);
ATF_TC_BODY(fairness_window, tc)
{
	struct proto_status	 st;
	uint64_t		 r = 100;

	setup_sched(2 * GIB, WINDOW, 0);
	qmodel("a", 1, 3 * GIB / 2, TMO, 0, 0);
	qmodel("b", 1, 3 * GIB / 2, TMO, 0, 0);
	bring_up("a", 100);
	hold("a", r, 7);
	advance(100);
	pool_acquire(F.p, "b", 1, 7);
	pool_acquire(F.p, "b", 2, 7);
	/* Busy the whole time: a new request every second, each granted
	 * before the previous one ends, within the window. */
	while (F.now + 1000 < 1000100 + WINDOW) {
		advance(1000);
		hold("a", ++r, 7);
		release(r - 1);
	}
	ATF_REQUIRE_EQ(F.nkills, 0);
	/* The window is over: a new request for a waits. */
	advance(1000);
	pool_acquire(F.p, "a", 50, 7);
	ATF_REQUIRE_EQ(granted(50), -1);
	status("a", &st);
	ATF_REQUIRE_EQ(st.waiting, WAIT_SLOT);
	/* a drains and is stopped for b; b's requests come together. */
	release(r);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	swapped(100, 1, 200);
	ATF_REQUIRE(granted(1) != -1);
	ATF_REQUIRE(granted(2) != -1);
	/* a's request now waits for b's memory. */
	status("a", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.waiting, WAIT_MEMORY);
	ATF_REQUIRE_EQ(st.queued, 1);
	release(1);
	release(2);
	advance(POOL_LINGER);
	swapped(200, 2, 300);
	ATF_REQUIRE(granted(50) != -1);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	pool_free(F.p);
}

/* Batching: a model used since the wait began is kept between its
 * requests; once it is not asked again for POOL_LINGER it goes. */
ATF_TC_WITHOUT_HEAD(batching_linger);
ATF_TC_BODY(batching_linger, tc)
{
	a_busy(0);
	pool_acquire(F.p, "b", 2, 7);
	advance(100);
	hold("a", 3, 7);
	release(1);
	release(3);
	/* Idle, but just used: kept. */
	ATF_REQUIRE_EQ(F.nkills, 0);
	advance(POOL_LINGER / 2);
	hold("a", 4, 7);
	release(4);
	advance(POOL_LINGER - 1);
	ATF_REQUIRE_EQ(F.nkills, 0);
	advance(1);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	/* Well before the window's end. */
	ATF_REQUIRE(F.now < 1000100 + WINDOW);
	pool_free(F.p);
}

/*
 * Two clients looping on two models that cannot both be loaded, each
 * request 200 ms: both make progress, and far fewer swaps than
 * requests.
 */
ATF_TC_WITHOUT_HEAD(two_clients_no_starvation);
ATF_TC_BODY(two_clients_no_starvation, tc)
{
	struct pool_stats	 ps;
	const char		*names[2] = { "a", "b" };
	uint64_t		 want[2], next = 1;
	int64_t			 since[2];
	int			 holding[2], done[2] = { 0, 0 }, c;
	size_t			 kills = 0, probes = 0, step;

	setup_sched(2 * GIB, 5000, 0);
	F.sync_spawn = 1;
	qmodel("a", 1, 3 * GIB / 2, TMO, 0, 0);
	qmodel("b", 1, 3 * GIB / 2, TMO, 0, 0);
	for (c = 0; c < 2; c++) {
		holding[c] = 0;
		want[c] = next++;
		pool_acquire(F.p, names[c], want[c], 7);
	}
	for (step = 0; step < 900; step++) {	/* 90 s */
		advance(100);
		while (probes < F.nprobes)
			pool_probe_result(F.p, F.probes[probes++].id, 1, 200,
			    "");
		while (kills < F.nkills) {
			if (F.kills[kills].sig == SIGTERM)
				signalled(F.kills[kills].pid, SIGTERM);
			kills++;
		}
		for (c = 0; c < 2; c++) {
			if (!holding[c] && granted(want[c]) != -1) {
				holding[c] = 1;
				since[c] = F.now;
			}
			if (holding[c] && F.now - since[c] >= 200) {
				release(want[c]);
				done[c]++;
				holding[c] = 0;
				want[c] = next++;
				pool_acquire(F.p, names[c], want[c], 7);
			}
		}
	}
	pool_stats(F.p, &ps);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	ATF_REQUIRE_MSG(done[0] >= 50 && done[1] >= 50, "a %d, b %d",
	    done[0], done[1]);
	ATF_REQUIRE_MSG(ps.evictions * 10 < (uint64_t)(done[0] + done[1]),
	    "%llu swaps for %d requests", (unsigned long long)ps.evictions,
	    done[0] + done[1]);
	pool_free(F.p);
}

/* A client that leaves while queued: its place is free, and no load is
 * made for it. */
ATF_TC_WITHOUT_HEAD(cancel_while_queued);
ATF_TC_BODY(cancel_while_queued, tc)
{
	struct proto_status	 st;

	a_busy(1);
	pool_acquire(F.p, "b", 2, 7);
	pool_acquire(F.p, "c", 3, 8);
	pool_withdraw(F.p, 2, 7);
	status("b", &st);
	ATF_REQUIRE_EQ(st.queued, 0);
	ATF_REQUIRE_EQ(st.waiting, WAIT_NONE);
	/* c is next; its owner goes too. */
	status("c", &st);
	ATF_REQUIRE_EQ(st.waiting, WAIT_MEMORY);
	pool_release_owner(F.p, 8);
	status("c", &st);
	ATF_REQUIRE_EQ(st.waiting, WAIT_NONE);
	release(1);
	advance(WINDOW);
	ATF_REQUIRE_EQ(F.nkills, 0);
	ATF_REQUIRE_EQ(F.nspawns, 1);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	ATF_REQUIRE_EQ(F.ngrants, 1);
	pool_free(F.p);
}

/*
 * The scene of the next two: lazy models a and b of 1 G and big of 1.5 G,
 * 1.25 G measured available (no budget), big's queue timeout tmo; a
 * (process 100) and b (process 200) are ready and idle, a used first.
 * Request 2 for big stops a, the fewest that free the 0.25 G missing;
 * request 1 for b comes while a exits; a's exit frees less than its need
 * (the measured memory does not change), so big waits for b's memory.
 */
static void
big_waits_after_evicting(int64_t tmo)
{
	struct proto_status	 st;

	setup_sched(0, WINDOW, 0);
	F.mem.available = 5 * GIB / 4;
	qmodel("a", 1, GIB, TMO, 0, 0);
	qmodel("b", 1, GIB, TMO, 0, 0);
	qmodel("big", 1, 3 * GIB / 2, tmo, 0, 0);
	bring_up("a", 100);
	advance(100);
	bring_up("b", 200);
	advance(100);
	pool_acquire(F.p, "big", 2, 8);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(killed_with(200, SIGTERM), 0);
	ATF_REQUIRE_EQ(state("big"), STATE_STOPPED);
	hold("b", 1, 7);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	status("big", &st);
	ATF_REQUIRE_EQ(st.waiting, WAIT_MEMORY);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
}

/* A load dropped by its requests leaving, after it stopped a model to
 * make room, leaves its model stopped: not loading, which would hold
 * memory by need that nothing takes. */
ATF_TC_WITHOUT_HEAD(dropped_load_not_loading);
ATF_TC_BODY(dropped_load_not_loading, tc)
{
	struct proto_status	 st;

	big_waits_after_evicting(TMO);
	pool_withdraw(F.p, 2, 8);
	ATF_REQUIRE(logged(LOG_INFO, "server for big: nobody waits for its "
	    "load any more"));
	status("big", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.waiting, WAIT_NONE);
	ATF_REQUIRE_EQ(st.queued, 0);
	/* a fits next to b: it loads at once, waiting for nobody. */
	pool_acquire(F.p, "a", 3, 7);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	ATF_REQUIRE_STREQ(F.spawns[2].name, "a");
	status("a", &st);
	ATF_REQUIRE_EQ(st.waiting, WAIT_NONE);
	spawned(2, 101);
	probed_last();
	ATF_REQUIRE(granted(3) != -1);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	pool_free(F.p);
}

/* A request whose load stopped a model and then waits for a busy one is
 * still in the queue: its queue timeout ends the wait, and the load. */
ATF_TC_WITHOUT_HEAD(queue_timeout_after_eviction);
ATF_TC_BODY(queue_timeout_after_eviction, tc)
{
	ssize_t	 r;

	big_waits_after_evicting(5000);
	advance(4800);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	advance(200);
	ATF_REQUIRE((r = refused(2)) != -1);
	ATF_REQUIRE_EQ(F.refusals[r].reason, REFUSE_QUEUE_TIMEOUT);
	ATF_REQUIRE(strstr(F.refusals[r].msg, "its load waited for memory "
	    "held by b (busy)") != NULL);
	ATF_REQUIRE_EQ(state("big"), STATE_STOPPED);
	/* b drains: nothing is stopped or loaded for nobody. */
	release(1);
	advance(WINDOW);
	ATF_REQUIRE_EQ(killed_with(200, SIGTERM), 0);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	pool_free(F.p);
}

/* Unload, remove and stop all refuse the requests queued for what they
 * touch, each with its reason. */
ATF_TC_WITHOUT_HEAD(unload_remove_stop_while_queued);
ATF_TC_BODY(unload_remove_stop_while_queued, tc)
{
	setup_sched(2 * GIB, WINDOW, 0);
	nload_errs = 0;
	qmodel("a", 1, 3 * GIB / 2, TMO, 1, 0);
	qmodel("b", 1, 3 * GIB / 2, TMO, 0, 0);
	qmodel("c", 1, GIB / 4, TMO, 1, 0);
	bring_up("a", 100);
	hold("a", 1, 7);
	pool_acquire(F.p, "a", 2, 7);		/* a slot */
	advance(100);
	pool_acquire(F.p, "b", 3, 7);		/* memory */
	ATF_REQUIRE_EQ(pool_load(F.p, "b", load_cb_keep, NULL), 0);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	pool_unload(F.p, "b", NULL, NULL);
	ATF_REQUIRE_EQ(F.nrefusals, 1);
	ATF_REQUIRE_EQ(F.refusals[0].reqid, 3);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_LOAD_FAILED);
	ATF_REQUIRE_STREQ(F.refusals[0].msg,
	    "server for b was unloaded before it started");
	ATF_REQUIRE_STREQ(load_errs[0], F.refusals[0].msg);
	ATF_REQUIRE_EQ(state("b"), STATE_UNLOADED);
	pool_unload(F.p, "a", NULL, NULL);
	ATF_REQUIRE_EQ(F.refusals[1].reqid, 2);
	ATF_REQUIRE_EQ(F.refusals[1].reason, REFUSE_NOT_LOADED);
	ATF_REQUIRE_STREQ(F.refusals[1].msg,
	    "a is not loaded; agency-ctl load a loads it");
	pool_release_owner(F.p, 7);
	signalled(100, SIGTERM);

	/* Remove: refused as not served. */
	bring_up("c", 300);
	hold("c", 4, 7);
	pool_acquire(F.p, "c", 5, 7);
	pool_remove(F.p, "c", NULL, NULL);
	ATF_REQUIRE_EQ(F.refusals[2].reqid, 5);
	ATF_REQUIRE_EQ(F.refusals[2].reason, REFUSE_UNKNOWN_MODEL);
	pool_release_owner(F.p, 7);
	signalled(300, SIGTERM);

	/* Stop all: queued requests and a waiting load end at once. */
	pool_load(F.p, "a", NULL, NULL);
	spawned(F.nspawns - 1, 101);
	probed_last();
	hold("a", 6, 7);
	advance(100);
	pool_load(F.p, "b", load_cb_keep, NULL);
	pool_acquire(F.p, "b", 7, 7);
	pool_acquire(F.p, "a", 8, 7);
	pool_stop_all(F.p, done_cb, NULL);
	ATF_REQUIRE_EQ(F.refusals[3].reason, REFUSE_STOPPING);
	ATF_REQUIRE_EQ(F.refusals[4].reason, REFUSE_STOPPING);
	ATF_REQUIRE_EQ(nload_errs, 2);
	ATF_REQUIRE_STREQ(load_errs[1], "agency is stopping");
	signalled(101, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	pool_free(F.p);
}

/* Loads of models that fit run at the same time; changes of one model,
 * and the evictions, stay in order. */
ATF_TC_WITHOUT_HEAD(parallel_loads);
ATF_TC_BODY(parallel_loads, tc)
{
	setup_sched(3 * GIB, WINDOW, 0);
	qmodel("n", 0, GIB, TMO, 0, 0);
	qmodel("m", 0, GIB, TMO, 0, 0);
	qmodel("x", 1, GIB, TMO, 0, 0);
	qmodel("y", 1, GIB, TMO, 0, 0);
	qmodel("z", 1, GIB, TMO, 0, 0);
	pool_start(F.p);
	/* Both at once, before either answered. */
	ATF_REQUIRE_EQ(F.nspawns, 2);
	ATF_REQUIRE_EQ(state("n"), STATE_LOADING);
	ATF_REQUIRE_EQ(state("m"), STATE_LOADING);
	spawned(1, 200);
	spawned(0, 100);
	ATF_REQUIRE_EQ(F.nprobes, 2);
	pool_probe_result(F.p, F.probes[0].id, 1, 200, "");
	pool_probe_result(F.p, F.probes[1].id, 1, 200, "");
	ATF_REQUIRE_EQ(state("n"), STATE_READY);
	ATF_REQUIRE_EQ(state("m"), STATE_READY);
	/* 1 G left: x loads; y and z both need x stopped, one at a time. */
	pool_acquire(F.p, "x", 1, 7);
	spawned(2, 300);
	probed_last();
	release(1);
	pool_acquire(F.p, "y", 2, 7);
	pool_acquire(F.p, "z", 3, 7);
	ATF_REQUIRE_EQ(F.nkills, 1);
	ATF_REQUIRE_EQ(killed_with(300, SIGTERM), 1);
	signalled(300, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 4);
	ATF_REQUIRE_STREQ(F.spawns[3].name, "y");
	/* Changes of one model stay in order: a load after an unload waits
	 * for the exit. */
	pool_unload(F.p, "n", NULL, NULL);
	pool_load(F.p, "n", NULL, NULL);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(F.nspawns, 4);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 5);
	ATF_REQUIRE_STREQ(F.spawns[4].name, "n");
	pool_free(F.p);
}

/* What a request would do, and nothing done. */
static char	 plan_lines[16][PROTO_MSG_MAX];
static size_t	 nplan_lines;

static void
plan_line(void *arg, const char *line)
{
	(void)arg;
	if (nplan_lines < 16)
		strlcpy(plan_lines[nplan_lines++], line, PROTO_MSG_MAX);
}

static int
plan_has(const char *s)
{
	size_t	 i;

	for (i = 0; i < nplan_lines; i++)
		if (strstr(plan_lines[i], s) != NULL)
			return (1);
	return (0);
}

static int
explain(const char *model)
{
	size_t	 spawns = F.nspawns, kills = F.nkills;
	size_t	 grants = F.ngrants, refusals = F.nrefusals;
	int	 v;

	nplan_lines = 0;
	v = pool_explain(F.p, model, plan_line, NULL);
	ATF_REQUIRE_EQ(F.nspawns, spawns);
	ATF_REQUIRE_EQ(F.nkills, kills);
	ATF_REQUIRE_EQ(F.ngrants, grants);
	ATF_REQUIRE_EQ(F.nrefusals, refusals);
	return (v);
}

ATF_TC_WITHOUT_HEAD(explain_verdicts);
ATF_TC_BODY(explain_verdicts, tc)
{
	setup_sched(4 * GIB, WINDOW, 0);
	qmodel("a", 1, 2 * GIB, TMO, 0, 0);
	qmodel("b", 1, 2 * GIB, TMO, 0, 0);
	qmodel("c", 1, 3 * GIB, TMO, 0, 0);
	qmodel("n", 0, GIB, TMO, 0, 0);
	qmodel("big", 1, 5 * GIB, TMO, 0, 0);
	ATF_REQUIRE_EQ(pool_explain(F.p, "nope", plan_line, NULL), -1);
	ATF_REQUIRE_EQ(explain("a"), VERDICT_LOAD);
	ATF_REQUIRE(plan_has("a: loads in place (needs 2.0 GiB"));
	ATF_REQUIRE_EQ(explain("n"), VERDICT_REFUSE);
	ATF_REQUIRE(plan_has("n: refused: it is not loaded"));
	ATF_REQUIRE_EQ(explain("big"), VERDICT_REFUSE);
	ATF_REQUIRE(plan_has("not enough memory for big"));
	pool_acquire(F.p, "a", 1, 7);
	ATF_REQUIRE_EQ(explain("a"), VERDICT_JOIN);
	spawned(0, 100);
	probed_last();
	ATF_REQUIRE_EQ(explain("a"), VERDICT_GRANT);
	ATF_REQUIRE(plan_has("a: served at once"));
	bring_up("b", 200);
	/* a busy, b idle: stopping b alone would not do; c waits. */
	advance(60000);
	ATF_REQUIRE_EQ(explain("c"), VERDICT_WAIT);
	ATF_REQUIRE(!plan_has("stops"));
	ATF_REQUIRE(plan_has("c: waits for a (busy) to finish (needs 3.0 GiB, "
	    "64.0 GiB available, budget 4.0 GiB of which 4.0 GiB in use)"));
	release(1);
	ATF_REQUIRE_EQ(explain("c"), VERDICT_EVICT);
	ATF_REQUIRE_STREQ(plan_lines[0], "c: stops b (2.0 GiB), idle, last "
	    "used 60s ago: 2 of the 2 idle models, the fewest that free the "
	    "3.0 GiB missing");
	ATF_REQUIRE_STREQ(plan_lines[1], "c: stops a (2.0 GiB), idle, last "
	    "used 0s ago: 2 of the 2 idle models, the fewest that free the "
	    "3.0 GiB missing");
	ATF_REQUIRE(plan_has("c: then loads (needs 3.0 GiB"));
	pool_unload(F.p, "a", NULL, NULL);
	ATF_REQUIRE_EQ(explain("a"), VERDICT_REFUSE);
	ATF_REQUIRE(plan_has("agency-ctl load a"));
	pool_free(F.p);

	/* The reference pool: a busy model means a refusal. */
	setup_with(0, 4 * GIB, 0);
	model("a", 1, 3 * GIB);
	model("b", 1, 3 * GIB);
	bring_up("a", 100);
	hold("a", 1, 7);
	ATF_REQUIRE_EQ(explain("b"), VERDICT_REFUSE);
	ATF_REQUIRE(plan_has("a (busy)"));
	pool_free(F.p);
}

/* Limits change without a restart. */
ATF_TC_WITHOUT_HEAD(set_limits);
ATF_TC_BODY(set_limits, tc)
{
	struct pool_plan	 plan;

	setup_sched(0, WINDOW, 0);
	qmodel("a", 1, GIB, TMO, 1, 0);
	bring_up("a", 100);
	hold("a", 1, 7);
	pool_acquire(F.p, "a", 2, 7);
	ATF_REQUIRE_EQ(granted(2), -1);
	plan = *pool_plan(F.p, "a");
	plan.max_requests = 2;
	ATF_REQUIRE_EQ(pool_set_limits(F.p, &plan), 0);
	ATF_REQUIRE(granted(2) != -1);
	ATF_REQUIRE_EQ(F.nkills, 0);
	strlcpy(plan.name, "nope", sizeof(plan.name));
	ATF_REQUIRE_EQ(pool_set_limits(F.p, &plan), -1);
	pool_free(F.p);
}

/*
 * Issue 33: the one rule for making room (its items 1-4 and 12).
 */

#define MIB	(1024LL * 1024)

/* The age rank of candidate i: 0 the oldest (the first among equals). */
static size_t
age_rank(const struct pool_cand *c, size_t n, size_t i)
{
	size_t	 j, r = 0;

	for (j = 0; j < n; j++)
		if (c[j].last_used < c[i].last_used ||
		    (c[j].last_used == c[i].last_used && j < i))
			r++;
	return (r);
}

/*
 * The best set by brute force, as pool_stop_set defines it: the fewest,
 * then the newest member the oldest, then the others the oldest (their
 * ranks, oldest first, compared in turn).  Its ranks oldest first into
 * best; its size, or -1.
 */
static ssize_t
stop_set_brute(const struct pool_cand *c, size_t n, int64_t want,
    size_t *best)
{
	size_t		 r[16], k, i, j, t;
	ssize_t		 bk = -1;
	unsigned int	 set;
	int64_t		 sum;
	int		 better;

	if (want <= 0)
		return (0);
	for (set = 1; set < (1U << n); set++) {
		for (i = 0, k = 0, sum = 0; i < n; i++)
			if (set & (1U << i)) {
				r[k++] = age_rank(c, n, i);
				sum += c[i].frees;
			}
		if (sum < want)
			continue;
		for (i = 1; i < k; i++)
			for (j = i; j > 0 && r[j] < r[j - 1]; j--) {
				t = r[j];
				r[j] = r[j - 1];
				r[j - 1] = t;
			}
		better = bk == -1 || k < (size_t)bk;
		if (!better && k == (size_t)bk) {
			if (r[k - 1] != best[k - 1])
				better = r[k - 1] < best[k - 1];
			else
				for (i = 0; i + 1 < k; i++)
					if (r[i] != best[i]) {
						better = r[i] < best[i];
						break;
					}
		}
		if (better) {
			bk = (ssize_t)k;
			memcpy(best, r, k * sizeof(*r));
		}
	}
	return (bk);
}

/* The fewest that free enough, then the least recently used. */
ATF_TC_WITHOUT_HEAD(stop_set_pure);
ATF_TC_BODY(stop_set_pure, tc)
{
	struct pool_cand	 c[10];
	size_t			 stop[20], best[16], i, n, round;
	ssize_t			 k, bk;
	int64_t			 want, total;
	uint64_t		 seed = 33;

	/* The issue's: stopping 400 alone does, not the two older 50s. */
	c[0] = (struct pool_cand){ 50, 1000 };
	c[1] = (struct pool_cand){ 50, 2000 };
	c[2] = (struct pool_cand){ 400, 3000 };
	ATF_REQUIRE_EQ(pool_stop_set(c, 3, 200, stop), 1);
	ATF_REQUIRE_EQ(stop[0], 2);
	/* Nothing missing: nothing; all not enough: -1. */
	ATF_REQUIRE_EQ(pool_stop_set(c, 3, 0, stop), 0);
	ATF_REQUIRE_EQ(pool_stop_set(c, 3, 501, stop), -1);
	ATF_REQUIRE_EQ(pool_stop_set(c, 0, 1, stop), -1);
	/* Exactly enough, all three, oldest first. */
	ATF_REQUIRE_EQ(pool_stop_set(c, 3, 500, stop), 3);
	ATF_REQUIRE_EQ(stop[0], 0);
	ATF_REQUIRE_EQ(stop[1], 1);
	ATF_REQUIRE_EQ(stop[2], 2);
	/* One that frees enough: the oldest of those. */
	ATF_REQUIRE_EQ(pool_stop_set(c, 3, 50, stop), 1);
	ATF_REQUIRE_EQ(stop[0], 0);
	/* Two of three 300s and a 400 for 500: the newest the oldest. */
	c[0] = (struct pool_cand){ 300, 20 };
	c[1] = (struct pool_cand){ 400, 30 };
	c[2] = (struct pool_cand){ 300, 10 };
	c[3] = (struct pool_cand){ 100, 5 };
	ATF_REQUIRE_EQ(pool_stop_set(c, 4, 500, stop), 2);
	ATF_REQUIRE_EQ(stop[0], 2);
	ATF_REQUIRE_EQ(stop[1], 0);
	/* 700: 400 and a 300, the older 300 */
	ATF_REQUIRE_EQ(pool_stop_set(c, 4, 700, stop), 2);
	ATF_REQUIRE_EQ(stop[0], 2);
	ATF_REQUIRE_EQ(stop[1], 1);
	/* Never used is the oldest; among equals the first. */
	c[0] = (struct pool_cand){ 300, -1 };
	c[2] = (struct pool_cand){ 300, -1 };
	ATF_REQUIRE_EQ(pool_stop_set(c, 4, 250, stop), 1);
	ATF_REQUIRE_EQ(stop[0], 0);
	/* Sums saturate: huge ones never wrap into freeing little. */
	c[0] = (struct pool_cand){ INT64_MAX, 1 };
	c[1] = (struct pool_cand){ INT64_MAX, 2 };
	ATF_REQUIRE_EQ(pool_stop_set(c, 2, INT64_MAX, stop), 1);
	ATF_REQUIRE_EQ(stop[0], 0);

	/* Against every subset, for tables of up to 10. */
	for (round = 0; round < 3000; round++) {
		n = round % 10 + 1;
		total = 0;
		for (i = 0; i < n; i++) {
			seed = seed * 6364136223846793005ULL +
			    1442695040888963407ULL;
			c[i].frees = (int64_t)(seed >> 33) % 8;
			c[i].last_used = (int64_t)((seed >> 20) % 6) - 1;
			total += c[i].frees;
		}
		want = (int64_t)((seed >> 40) % (uint64_t)(total + 3));
		k = pool_stop_set(c, n, want, stop);
		bk = stop_set_brute(c, n, want, best);
		ATF_REQUIRE_EQ_MSG(k, bk, "round %zu: %zd, not %zd", round, k,
		    bk);
		for (i = 0; k > 0 && i < (size_t)k; i++)
			ATF_REQUIRE_EQ_MSG(age_rank(c, n, stop[i]), best[i],
			    "round %zu: member %zu", round, i);
	}
}

/* Rule 1, pure: going ahead fits now and beside the claims. */
ATF_TC_WITHOUT_HEAD(room_ahead_pure);
ATF_TC_BODY(room_ahead_pure, tc)
{
	struct pool_view	 v[6];
	struct pool_cand	 cand[6];
	size_t			 stop[12];
	struct pool_stops	 st = { cand, stop, 0, 0, 0, 0 };
	struct mem_snapshot	 m = { 64 * GIB, 128 * GIB };

	memset(v, 0, sizeof(v));
	/* 0 fixed 1; 1 idle lazy 1; 2 busy lazy 2; 3 claims 5; 4 self */
	v[0] = (struct pool_view){ STATE_READY, 0, 0, 1, GIB, 1, 0, 0, 0 };
	v[1] = (struct pool_view){ STATE_READY, 1, 0, 2, GIB, 1, 0, 0, 0 };
	v[2] = (struct pool_view){ STATE_READY, 1, 1, 3, 2 * GIB, 1, 0, 0,
	    0 };
	v[3] = (struct pool_view){ STATE_STOPPED, 1, 0, -1, 5 * GIB, 0, 0, 1,
	    0 };
	v[4] = (struct pool_view){ STATE_STOPPED, 1, 0, -1, GIB, 0, 0, 0, 0 };
	v[5] = (struct pool_view){ STATE_STOPPED, 1, 0, -1, 0, 0, 0, 0, 0 };
	/* budget 7: now 4 used + 1; beside, 1 fixed + 5 claimed + 1 */
	ATF_REQUIRE_EQ(pool_room(v, 6, 4, &m, 0, 7 * GIB, ROOM_MODE_AHEAD,
	    &st), ROOM_FITS);
	ATF_REQUIRE_EQ(st.n, 0);
	/* 2: fits now (4 + 2), not beside the claim (1 + 5 + 2) */
	v[4].need = 2 * GIB;
	ATF_REQUIRE_EQ(pool_room(v, 6, 4, &m, 0, 7 * GIB, ROOM_MODE_AHEAD,
	    &st), ROOM_BEHIND);
	/* without the claim it would */
	v[3].claim = 0;
	ATF_REQUIRE_EQ(pool_room(v, 6, 4, &m, 0, 7 * GIB, ROOM_MODE_AHEAD,
	    &st), ROOM_FITS);
	v[3].claim = 1;
	v[4].need = GIB;
	/* a model held for the claims stays: 1 + 1 + 5 + 1 > 7 */
	v[1].held = 1;
	ATF_REQUIRE_EQ(pool_room(v, 6, 4, &m, 0, 7 * GIB, ROOM_MODE_AHEAD,
	    &st), ROOM_BEHIND);
	v[1].held = 0;
	/* a loading one stays too */
	v[1].state = STATE_LOADING;
	ATF_REQUIRE_EQ(pool_room(v, 6, 4, &m, 0, 7 * GIB, ROOM_MODE_AHEAD,
	    &st), ROOM_BEHIND);
	v[1].state = STATE_READY;
	/* not fitting now (4 + 1 > 4.5): behind, and it stops nothing,
	 * though with no claim it would fit once the lazy ones are gone */
	ATF_REQUIRE_EQ(pool_room(v, 6, 4, &m, 0, 4 * GIB + GIB / 2,
	    ROOM_MODE_AHEAD, &st), ROOM_BEHIND);
	ATF_REQUIRE_EQ(st.n, 0);
	v[3].claim = 0;
	ATF_REQUIRE_EQ(pool_room(v, 6, 4, &m, 0, 4 * GIB + GIB / 2,
	    ROOM_MODE_AHEAD, &st), ROOM_BEHIND);
	ATF_REQUIRE_EQ(st.n, 0);
	v[3].claim = 1;
	/* The measured memory, no budget: what runs is in it already.  3
	 * available holds 1 now, and the claimed 5 + 1 once the idle and
	 * busy lazy ones (3) are stopped: 3 + 3 >= 6. */
	m.available = 3 * GIB;
	ATF_REQUIRE_EQ(pool_room(v, 6, 4, &m, 0, 0, ROOM_MODE_AHEAD, &st),
	    ROOM_FITS);
	m.available = 3 * GIB - 1;
	ATF_REQUIRE_EQ(pool_room(v, 6, 4, &m, 0, 0, ROOM_MODE_AHEAD, &st),
	    ROOM_BEHIND);
	/* the reserve counts */
	m.available = 3 * GIB;
	ATF_REQUIRE_EQ(pool_room(v, 6, 4, &m, 1, 0, ROOM_MODE_AHEAD, &st),
	    ROOM_BEHIND);
	/* a claim whose process runs (committed, it stays) is not claimed
	 * twice: now 9 + 1, beside 1 + 5 + 1, not 1 + 5 + 5 + 1 */
	v[3].state = STATE_LOADING;
	v[3].running = 1;
	m.available = 64 * GIB;
	ATF_REQUIRE_EQ(pool_room(v, 6, 4, &m, 0, 10 * GIB, ROOM_MODE_AHEAD,
	    &st), ROOM_FITS);
}

/* The window: K times the load, within its bounds, or as configured. */
ATF_TC_WITHOUT_HEAD(fairness_pure);
ATF_TC_BODY(fairness_pure, tc)
{
	ATF_REQUIRE_EQ(pool_fairness(30000, 1200), 30000);
	ATF_REQUIRE_EQ(pool_fairness(0, 1200), 0);
	ATF_REQUIRE_EQ(pool_fairness(POOL_FAIRNESS_MEASURED, 1200),
	    1200 * POOL_FAIRNESS_K);
	ATF_REQUIRE_EQ(pool_fairness(-1, 50), POOL_FAIRNESS_MIN);
	ATF_REQUIRE_EQ(pool_fairness(-1, POOL_FAIRNESS_MIN / POOL_FAIRNESS_K),
	    POOL_FAIRNESS_MIN);
	ATF_REQUIRE_EQ(pool_fairness(-1, 20000), POOL_FAIRNESS_MAX);
	ATF_REQUIRE_EQ(pool_fairness(-1, POOL_FAIRNESS_MAX / POOL_FAIRNESS_K),
	    POOL_FAIRNESS_MAX);
	ATF_REQUIRE_EQ(pool_fairness(-1, POOL_FAIRNESS_MAX / POOL_FAIRNESS_K -
	    1), POOL_FAIRNESS_MAX - POOL_FAIRNESS_K);
	ATF_REQUIRE_EQ(pool_fairness(-1, INT64_MAX), POOL_FAIRNESS_MAX);
	/* none measured: the guess */
	ATF_REQUIRE_EQ(pool_fairness(-1, -1), POOL_GUESS_LOAD *
	    POOL_FAIRNESS_K > POOL_FAIRNESS_MAX ? POOL_FAIRNESS_MAX :
	    POOL_GUESS_LOAD * POOL_FAIRNESS_K);
}

/*
 * The scene of issue 33 (item 1), sizes in MiB: a budget of 700; tiny-a
 * pinned (100); embed and slowpoke lazy (50 each) loaded first; tiny-b
 * (300, lazy) busy; tiny-c (C, lazy) does not fit next to tiny-b and
 * waits for it.  tmo: the queue timeout of each.
 */
static void
issue_scene(int64_t c, int64_t tmo)
{
	struct proto_status	 st;

	setup_sched(700 * MIB, 30000, 0);
	qmodel("tiny-a", 0, 100 * MIB, tmo, 0, 0);
	qmodel("embed", 1, 50 * MIB, tmo, 0, 0);
	qmodel("slowpoke", 1, 50 * MIB, tmo, 0, 0);
	qmodel("tiny-b", 1, 300 * MIB, tmo, 0, 0);
	qmodel("tiny-c", 1, c * MIB, tmo, 0, 0);
	qmodel("tiny-d", 1, 50 * MIB, tmo, 0, 0);
	qmodel("tiny-e", 1, 150 * MIB, tmo, 0, 0);
	pool_start(F.p);
	spawned(0, 100);
	probed_last();
	advance(1000);
	bring_up("embed", 101);
	advance(1000);
	bring_up("slowpoke", 102);
	advance(1000);
	bring_up("tiny-b", 103);
	hold("tiny-b", 1, 7);
	advance(1000);
	pool_acquire(F.p, "tiny-c", 2, 7);
	if (tmo == 0)
		return;
	ATF_REQUIRE_EQ(F.nspawns, 4);
	ATF_REQUIRE_EQ(F.nkills, 0);
	status("tiny-c", &st);
	ATF_REQUIRE_EQ(st.waiting, WAIT_MEMORY);
}

/*
 * Item 1: a load that fits without stopping anything starts at once,
 * ahead of one that waits for memory, provided it fits beside what
 * that one will take; one that does not waits its turn, and the first
 * is not starved.
 */
ATF_TC_WITHOUT_HEAD(overtake_fits);
ATF_TC_BODY(overtake_fits, tc)
{
	struct proto_status	 st;

	issue_scene(450, TMO);
	/* tiny-d (50) fits now (550 of 700) and beside tiny-c's 450
	 * (100 + 450 + 50): at once, not after the window. */
	pool_acquire(F.p, "tiny-d", 3, 7);
	ATF_REQUIRE_EQ_MSG(F.nspawns, 5, "tiny-d did not start at once");
	ATF_REQUIRE_STREQ(F.spawns[4].name, "tiny-d");
	ATF_REQUIRE(logged(LOG_INFO, "server for tiny-d: loading it ahead of "
	    "server for tiny-c, which makes room"));
	spawned(4, 104);
	probed_last();
	ATF_REQUIRE(granted(3) != -1);
	status("tiny-c", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.waiting, WAIT_MEMORY);
	/* tiny-e (150) fits now (700 of 700), but not beside tiny-c's 450
	 * and tiny-d, loaded since and held for it (100 + 50 + 450 + 150):
	 * it waits its turn, and stops nothing, tiny-d idle or not. */
	release(3);
	advance(POOL_LINGER);
	pool_acquire(F.p, "tiny-e", 5, 7);
	ATF_REQUIRE_EQ(F.nspawns, 5);
	ATF_REQUIRE_EQ(F.nkills, 0);
	status("tiny-e", &st);
	ATF_REQUIRE_EQ(st.waiting, WAIT_TURN);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	/* tiny-b drains: tiny-c stops it (the fewest: it alone) and loads,
	 * tiny-d held or not. */
	hold("tiny-d", 6, 7);
	release(1);
	ATF_REQUIRE_EQ(killed_with(103, SIGTERM), 1);
	ATF_REQUIRE_EQ(F.nkills, 1);
	signalled(103, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 6);
	ATF_REQUIRE_STREQ(F.spawns[5].name, "tiny-c");
	spawned(5, 105);
	probed_last();
	ATF_REQUIRE(granted(2) != -1);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	pool_free(F.p);
}

/* The same with the issue's own sizes: tiny-d goes ahead at once. */
ATF_TC_WITHOUT_HEAD(overtake_issue_sizes);
ATF_TC_BODY(overtake_issue_sizes, tc)
{
	issue_scene(400, TMO);
	pool_acquire(F.p, "tiny-d", 3, 7);
	ATF_REQUIRE_EQ_MSG(F.nspawns, 5, "tiny-d did not start at once");
	spawned(4, 104);
	probed_last();
	ATF_REQUIRE(granted(3) != -1);
	/* and plan says so for the next, tiny-e (150): 550 + 150 fits
	 * now, 100 + 50 (tiny-d, held) + 400 + 150 beside: also */
	ATF_REQUIRE_EQ(explain("tiny-e"), VERDICT_LOAD);
	ATF_REQUIRE(plan_has("tiny-e: loads at once, ahead of the load of "
	    "tiny-c"));
	pool_free(F.p);
}

/* The reference pool (queue timeout 0s) is unchanged: tiny-c is
 * refused at once, tiny-d loads. */
ATF_TC_WITHOUT_HEAD(overtake_reference);
ATF_TC_BODY(overtake_reference, tc)
{
	issue_scene(400, 0);
	ATF_REQUIRE_EQ(refused(2), 0);
	ATF_REQUIRE_EQ(F.refusals[0].reason, REFUSE_NOT_ENOUGH_MEMORY);
	ATF_REQUIRE_EQ(F.nkills, 0);
	pool_acquire(F.p, "tiny-d", 3, 7);
	ATF_REQUIRE_EQ(F.nspawns, 5);
	pool_free(F.p);
}

/*
 * Item 2: the fewest models go, then the least recently used; the log
 * says why.  The issue's: for tiny-b (300), tiny-c (400) alone, not
 * embed, slowpoke and then tiny-c.
 */
ATF_TC_WITHOUT_HEAD(fewest_stops);
ATF_TC_BODY(fewest_stops, tc)
{
	struct pool_stats	 ps;
	int			 ref;

	for (ref = 0; ref < 2; ref++) {
		setup_sched(700 * MIB, 30000, 0);
		qmodel("tiny-a", 0, 100 * MIB, ref ? 0 : TMO, 0, 0);
		qmodel("embed", 1, 50 * MIB, ref ? 0 : TMO, 0, 0);
		qmodel("slowpoke", 1, 50 * MIB, ref ? 0 : TMO, 0, 0);
		qmodel("tiny-c", 1, 400 * MIB, ref ? 0 : TMO, 0, 0);
		qmodel("tiny-b", 1, 300 * MIB, ref ? 0 : TMO, 0, 0);
		pool_start(F.p);
		spawned(0, 100);
		probed_last();
		advance(1000);
		bring_up("embed", 101);
		advance(1000);
		bring_up("slowpoke", 102);
		advance(1000);
		bring_up("tiny-c", 103);
		advance(12000);
		pool_acquire(F.p, "tiny-b", 1, 7);
		if (ref) {
			/* The reference pool: plain LRU, one at a time. */
			ATF_REQUIRE_EQ(F.nkills, 1);
			ATF_REQUIRE_EQ(killed_with(101, SIGTERM), 1);
			ATF_REQUIRE(logged(LOG_INFO, "server for embed: "
			    "stopping it to make room for server for tiny-b: "
			    "idle, last used 14s ago: the least recently used "
			    "of the 3 idle models"));
			signalled(101, SIGTERM);
			ATF_REQUIRE_EQ(killed_with(102, SIGTERM), 1);
			signalled(102, SIGTERM);
			ATF_REQUIRE_EQ(killed_with(103, SIGTERM), 1);
			signalled(103, SIGTERM);
			pool_stats(F.p, &ps);
			ATF_REQUIRE_EQ(ps.evictions, 3);
			pool_free(F.p);
			continue;
		}
		ATF_REQUIRE_EQ_MSG(F.nkills, 1, "%zu stopped", F.nkills);
		ATF_REQUIRE_EQ(killed_with(103, SIGTERM), 1);
		ATF_REQUIRE(logged(LOG_INFO, "server for tiny-c: stopping it to "
		    "make room for server for tiny-b: idle, last used 12s ago: "
		    "1 of the 3 idle models, the fewest that free the 200.0 "
		    "MiB missing (needs 300.0 MiB, 64.0 GiB available, budget "
		    "700.0 MiB of which 600.0 MiB in use)"));
		ATF_REQUIRE_EQ(state("embed"), STATE_READY);
		ATF_REQUIRE_EQ(state("slowpoke"), STATE_READY);
		signalled(103, SIGTERM);
		ATF_REQUIRE_EQ(F.nspawns, 5);
		ATF_REQUIRE_STREQ(F.spawns[4].name, "tiny-b");
		ATF_REQUIRE_EQ(F.nkills, 1);
		pool_stats(F.p, &ps);
		ATF_REQUIRE_EQ(ps.evictions, 1);
		pool_free(F.p);
	}
}

/* Item 2: a set of two goes at once, and the load waits for both; the
 * plan says why each goes. */
ATF_TC_WITHOUT_HEAD(stop_set_in_pool);
ATF_TC_BODY(stop_set_in_pool, tc)
{
	setup_sched(4 * GIB, WINDOW, 0);
	qmodel("x", 1, GIB, TMO, 0, 0);
	qmodel("y", 1, 2 * GIB, TMO, 0, 0);
	qmodel("z", 1, 2 * GIB - GIB / 2, TMO, 0, 0);
	qmodel("w", 1, GIB / 2, TMO, 0, 0);
	qmodel("big", 1, 3 * GIB, TMO, 0, 0);
	bring_up("x", 100);		/* the oldest */
	advance(1000);
	bring_up("y", 200);
	advance(1000);
	bring_up("w", 300);
	advance(1000);
	/* 3.5 used, big 3: 2.5 missing: y (2) and x (1), the fewest of
	 * which the newest is the oldest (y + w would be newer) */
	ATF_REQUIRE_EQ(explain("big"), VERDICT_EVICT);
	ATF_REQUIRE_STREQ(plan_lines[0], "big: stops x (1.0 GiB), idle, last "
	    "used 3s ago: 2 of the 3 idle models, the fewest that free the "
	    "2.5 GiB missing");
	ATF_REQUIRE_STREQ(plan_lines[1], "big: stops y (2.0 GiB), idle, last "
	    "used 2s ago: 2 of the 3 idle models, the fewest that free the "
	    "2.5 GiB missing");
	ATF_REQUIRE(plan_has("big: then loads"));
	pool_acquire(F.p, "big", 1, 7);
	ATF_REQUIRE_EQ(F.nkills, 2);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(killed_with(200, SIGTERM), 1);
	ATF_REQUIRE_EQ(state("big"), STATE_STOPPED);
	/* nothing of x or y starts again before both have exited */
	signalled(200, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	advance(POOL_STOP_GRACE);
	ATF_REQUIRE_EQ(killed_with(100, SIGKILL), 1);
	ATF_REQUIRE_EQ(killed_with(200, SIGKILL), 0);
	signalled(100, SIGKILL);
	ATF_REQUIRE_EQ(F.nspawns, 4);
	ATF_REQUIRE_STREQ(F.spawns[3].name, "big");
	ATF_REQUIRE_EQ(state("big"), STATE_LOADING);
	pool_free(F.p);
}

/*
 * Item 3: requests for a model that is not lazy and crashed wait for
 * its restart, as for a load, within the queue timeout.
 */
ATF_TC_WITHOUT_HEAD(restart_wait);
ATF_TC_BODY(restart_wait, tc)
{
	struct proto_status	 st;
	ssize_t			 r;

	setup_sched(0, WINDOW, 0);
	qmodel("n", 0, GIB, TMO, 0, 0);
	pool_start(F.p);
	spawned(0, 100);
	probed_last();
	signalled(100, SIGKILL);
	ATF_REQUIRE_EQ(state("n"), STATE_FAILED);
	/* in the exit's grace, and after it, until the restart */
	acquire_told("n", 1);
	ATF_REQUIRE_EQ_MSG(F.nrefusals, 0, "refused: %s",
	    F.nrefusals ? F.refusals[0].msg : "");
	advance(POOL_EXIT_GRACE);
	pool_acquire(F.p, "n", 2, 7);
	ATF_REQUIRE_EQ(F.nrefusals, 0);
	status("n", &st);
	ATF_REQUIRE_EQ(st.queued, 2);
	ATF_REQUIRE_EQ(st.waiting, WAIT_TURN);
	ATF_REQUIRE_EQ(told(1, NULL)->wait, WAIT_TURN);
	ATF_REQUIRE_EQ(explain("n"), VERDICT_WAIT);
	ATF_REQUIRE(plan_has("n: waits for its restart in 1s, then for its "
	    "load (it failed: server for n was killed by SIGKILL)"));
	advance(POOL_BACKOFF_MIN);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	spawned(1, 101);
	advance(0);
	ATF_REQUIRE_EQ(told(1, NULL)->wait, WAIT_LOAD);
	probed_last();
	ATF_REQUIRE(granted(1) != -1 && granted(2) != -1);
	ATF_REQUIRE_EQ(F.nrefusals, 0);

	pool_free(F.p);

	/* A restart after the queue timeout: refused at once, saying when. */
	setup_sched(0, WINDOW, 0);
	qmodel("n", 0, GIB, 500, 0, 0);
	pool_start(F.p);
	spawned(0, 100);
	probed_last();
	signalled(100, SIGKILL);
	advance(POOL_EXIT_GRACE);
	pool_acquire(F.p, "n", 1, 7);
	ATF_REQUIRE((r = refused(1)) != -1);
	ATF_REQUIRE_EQ(F.refusals[r].reason, REFUSE_NOT_LOADED);
	ATF_REQUIRE_EQ(F.refusals[r].retry_after, 1);
	ATF_REQUIRE_STREQ(F.refusals[r].msg, "n is not loaded: server for n "
	    "was killed by SIGKILL; it restarts in 1s");
	/* Its queue timeout ends a wait for the restart, saying so. */
	advance(600);
	advance(POOL_BACKOFF_MIN);	/* ready again */
	spawned(1, 101);
	probed_last();
	signalled(101, SIGKILL);
	pool_acquire(F.p, "n", 2, 7);	/* in the grace: waits */
	ATF_REQUIRE_EQ(refused(2), -1);
	advance(500);
	ATF_REQUIRE((r = refused(2)) != -1);
	ATF_REQUIRE_EQ(F.refusals[r].reason, REFUSE_QUEUE_TIMEOUT);
	ATF_REQUIRE(strstr(F.refusals[r].msg, "it waited for its restart "
	    "after: server for n was killed by SIGKILL") != NULL);
	pool_free(F.p);

	/* The reference pool: refused, as before. */
	setup();
	model("n", 0, GIB);
	pool_start(F.p);
	spawned(0, 100);
	probed_last();
	signalled(100, SIGKILL);
	pool_acquire(F.p, "n", 1, 7);
	ATF_REQUIRE_EQ(refused(1), 0);
	ATF_REQUIRE_STREQ(F.refusals[0].msg, "n is not loaded: server for n "
	    "was killed by SIGKILL");
	pool_free(F.p);
}

/*
 * Item 4: by default a busy model keeps memory a load waits for
 * POOL_FAIRNESS_K times its own mean load, within the bounds; plan
 * says so.
 */
ATF_TC_WITHOUT_HEAD(fairness_measured);
ATF_TC_BODY(fairness_measured, tc)
{
	struct proto_status	 st;

	setup_sched(2 * GIB, POOL_FAIRNESS_MEASURED, 0);
	qmodel("a", 1, 3 * GIB / 2, TMO, 0, 0);
	qmodel("b", 1, 3 * GIB / 2, TMO, 0, 0);
	qmodel("n", 0, GIB / 4, TMO, 0, 0);
	/* a loads in 1.2 s: its window is 12 s */
	pool_acquire(F.p, "a", 1, 7);
	spawned(0, 100);
	advance(1200);
	probed_last();
	ATF_REQUIRE(granted(1) != -1);
	advance(100);
	/* before the wait: the window it would have */
	ATF_REQUIRE_EQ(explain("b"), VERDICT_WAIT);
	ATF_REQUIRE(plan_has("b: a keeps its memory at most its fairness "
	    "window 12s: 10 x its mean load, 1.2s, from when the wait "
	    "begins"));
	pool_acquire(F.p, "b", 2, 7);
	ATF_REQUIRE_EQ(explain("b"), VERDICT_WAIT);
	ATF_REQUIRE(plan_has("b: a keeps its memory for 12s more at most, "
	    "then takes no new request (fairness window 12s: 10 x its mean "
	    "load, 1.2s)"));
	/* Within the window a takes new requests; at its end, not. */
	advance(12000 - 1);
	pool_acquire(F.p, "a", 3, 7);
	ATF_REQUIRE(granted(3) != -1);
	advance(1);
	pool_acquire(F.p, "a", 4, 7);
	ATF_REQUIRE_EQ(granted(4), -1);
	status("a", &st);
	ATF_REQUIRE_EQ(st.waiting, WAIT_SLOT);
	pool_free(F.p);

	/* A configured window is the window; none timed, the guess. */
	setup_sched(2 * GIB, 5000, 0);
	qmodel("a", 1, 3 * GIB / 2, TMO, 0, 0);
	qmodel("b", 1, 3 * GIB / 2, TMO, 0, 0);
	bring_up("a", 100);
	hold("a", 1, 7);
	ATF_REQUIRE_EQ(explain("b"), VERDICT_WAIT);
	ATF_REQUIRE(plan_has("b: a keeps its memory at most its fairness "
	    "window 5s, configured, from when the wait begins"));
	pool_free(F.p);
	setup_sched(2 * GIB, POOL_FAIRNESS_MEASURED, 0);
	qmodel("a", 1, 3 * GIB / 2, TMO, 0, 0);
	qmodel("b", 1, 3 * GIB / 2, TMO, 0, 0);
	bring_up("a", 100);
	hold("a", 1, 7);
	ATF_REQUIRE_EQ(explain("b"), VERDICT_WAIT);
	ATF_REQUIRE(plan_has("a keeps its memory at most its fairness window "
	    "2s: 10 x its mean load, 0s, raised to the least"));
	pool_free(F.p);
}

/*
 * Item 12: a load that waits is not loading (it has no process), and a
 * load that stopped others shows waiting for memory until its spawn.
 */
ATF_TC_WITHOUT_HEAD(waiting_not_loading);
ATF_TC_BODY(waiting_not_loading, tc)
{
	struct proto_status	 st;

	setup_sched(0, WINDOW, 0);
	F.mem.available = GIB;
	qmodel("a", 1, GIB, TMO, 0, 0);
	qmodel("b", 1, GIB, TMO, 0, 0);
	qmodel("big", 1, 3 * GIB / 2, TMO, 0, 0);
	bring_up("a", 100);
	advance(100);
	bring_up("b", 200);
	advance(100);
	/* 1 available, 1.5 needed: a (the older) goes */
	pool_acquire(F.p, "big", 1, 7);
	ATF_REQUIRE_EQ(killed_with(100, SIGTERM), 1);
	ATF_REQUIRE_EQ(killed_with(200, SIGTERM), 0);
	status("big", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.pid, 0);
	ATF_REQUIRE_EQ(st.waiting, WAIT_MEMORY);
	ATF_REQUIRE_EQ(explain("big"), VERDICT_JOIN);
	ATF_REQUIRE(plan_has("big: waits for its load, which waits for the "
	    "models it stopped to exit"));
	/* b gets busy; a's exit frees less than measured: big waits */
	hold("b", 2, 7);
	advance(100);
	signalled(100, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 2);
	status("big", &st);
	ATF_REQUIRE_EQ(st.state, STATE_STOPPED);
	ATF_REQUIRE_EQ(st.waiting, WAIT_MEMORY);
	ATF_REQUIRE_EQ(st.queued, 1);
	/* b drains: stopped for big, which loads */
	release(2);
	ATF_REQUIRE_EQ(killed_with(200, SIGTERM), 1);
	F.mem.available = 2 * GIB;
	signalled(200, SIGTERM);
	ATF_REQUIRE_EQ(F.nspawns, 3);
	status("big", &st);
	ATF_REQUIRE_EQ(st.state, STATE_LOADING);
	pool_free(F.p);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, one_process_for_two_waits);
	ATF_TP_ADD_TC(tp, load_duration);
	ATF_TP_ADD_TC(tp, load_bucket_pure);
	ATF_TP_ADD_TC(tp, loads_one_at_a_time);
	ATF_TP_ADD_TC(tp, second_release);
	ATF_TP_ADD_TC(tp, release_any_order);
	ATF_TP_ADD_TC(tp, hold_stamps_last_used);
	ATF_TP_ADD_TC(tp, reload_gets_new_port);
	ATF_TP_ADD_TC(tp, unload_during_load);
	ATF_TP_ADD_TC(tp, unload_before_spawn);
	ATF_TP_ADD_TC(tp, unload_during_spawn);
	ATF_TP_ADD_TC(tp, spawn_from_within);
	ATF_TP_ADD_TC(tp, spawn_error);
	ATF_TP_ADD_TC(tp, probe_wrong_answer);
	ATF_TP_ADD_TC(tp, probe_gave_up_asks_again);
	ATF_TP_ADD_TC(tp, other_exit_does_not_end_load);
	ATF_TP_ADD_TC(tp, death_after_ready_lazy);
	ATF_TP_ADD_TC(tp, death_after_ready_restarts);
	ATF_TP_ADD_TC(tp, eviction_candidate_pure);
	ATF_TP_ADD_TC(tp, fit_pure);
	ATF_TP_ADD_TC(tp, reserve_default);
	ATF_TP_ADD_TC(tp, eviction_order);
	ATF_TP_ADD_TC(tp, change_reasons);
	ATF_TP_ADD_TC(tp, not_enough_memory);
	ATF_TP_ADD_TC(tp, overcommit);
	ATF_TP_ADD_TC(tp, budget);
	ATF_TP_ADD_TC(tp, warmed_counts_as_used);
	ATF_TP_ADD_TC(tp, stubborn_child);
	ATF_TP_ADD_TC(tp, stop_all);
	ATF_TP_ADD_TC(tp, stop_all_during_spawn);
	ATF_TP_ADD_TC(tp, load_timeout);
	ATF_TP_ADD_TC(tp, unloaded_until_load);
	ATF_TP_ADD_TC(tp, stop_loads_on_demand);
	ATF_TP_ADD_TC(tp, stop_clears_unload);
	ATF_TP_ADD_TC(tp, stop_during_load);
	ATF_TP_ADD_TC(tp, stop_not_lazy);
	ATF_TP_ADD_TC(tp, withdraw);
	ATF_TP_ADD_TC(tp, release_owner);
	ATF_TP_ADD_TC(tp, idle_timeout);
	ATF_TP_ADD_TC(tp, exit_grace);
	ATF_TP_ADD_TC(tp, addr_in_use_retry);
	ATF_TP_ADD_TC(tp, unknown_model);
	ATF_TP_ADD_TC(tp, describe_exit);
	ATF_TP_ADD_TC(tp, remove_idle_ready);
	ATF_TP_ADD_TC(tp, status_by_name);
	ATF_TP_ADD_TC(tp, remove_busy_waits_for_release);
	ATF_TP_ADD_TC(tp, remove_stopped_frees_at_once);
	ATF_TP_ADD_TC(tp, remove_during_load);
	ATF_TP_ADD_TC(tp, remove_before_spawn);
	ATF_TP_ADD_TC(tp, remove_during_restart);
	ATF_TP_ADD_TC(tp, stop_all_with_replace_pending);
	ATF_TP_ADD_TC(tp, replace_idle_ready);
	ATF_TP_ADD_TC(tp, replace_busy_waits_for_release);
	ATF_TP_ADD_TC(tp, replace_stopped_lazy);
	ATF_TP_ADD_TC(tp, replace_not_lazy_loads_again);
	ATF_TP_ADD_TC(tp, replace_during_load);
	ATF_TP_ADD_TC(tp, replace_busy_then_death);
	ATF_TP_ADD_TC(tp, replace_then_remove);
	ATF_TP_ADD_TC(tp, restart_ready);
	ATF_TP_ADD_TC(tp, restart_not_unloaded);
	ATF_TP_ADD_TC(tp, restart_not_running);
	ATF_TP_ADD_TC(tp, fits_saturates);
	ATF_TP_ADD_TC(tp, huge_need_refused);
	ATF_TP_ADD_TC(tp, budget_sum_saturates);
	ATF_TP_ADD_TC(tp, evict_waits_for_remains);
	ATF_TP_ADD_TC(tp, idle_stop_waits_for_remains);
	ATF_TP_ADD_TC(tp, unload_waits_for_remains);
	ATF_TP_ADD_TC(tp, stop_all_waits_for_last);
	ATF_TP_ADD_TC(tp, fit_keeps_reserve);
	ATF_TP_ADD_TC(tp, backoff_doubles);

	/* Seed conformance (issue 20), unloaded (issue 13 #13). */
	ATF_TP_ADD_TC(tp, own_stops_not_deaths);
	ATF_TP_ADD_TC(tp, stop_all_load_not_failure);
	ATF_TP_ADD_TC(tp, wrong_answer_fails_at_once);
	ATF_TP_ADD_TC(tp, queued_load_not_loading);
	ATF_TP_ADD_TC(tp, messages);
	ATF_TP_ADD_TC(tp, failed_job_does_not_stop_queue);
	ATF_TP_ADD_TC(tp, unloaded_state);
	/* Scheduling (issue 14). */
	ATF_TP_ADD_TC(tp, wait_for_memory_fifo);
	ATF_TP_ADD_TC(tp, never_wait_in_vain);
	ATF_TP_ADD_TC(tp, queue_timeout);
	ATF_TP_ADD_TC(tp, queue_bounds);
	ATF_TP_ADD_TC(tp, max_requests_slots);
	ATF_TP_ADD_TC(tp, retry_after_measured);
	ATF_TP_ADD_TC(tp, estimate_pure);
	ATF_TP_ADD_TC(tp, room_pure);
	ATF_TP_ADD_TC(tp, fairness_window);
	ATF_TP_ADD_TC(tp, batching_linger);
	ATF_TP_ADD_TC(tp, two_clients_no_starvation);
	ATF_TP_ADD_TC(tp, cancel_while_queued);
	ATF_TP_ADD_TC(tp, dropped_load_not_loading);
	ATF_TP_ADD_TC(tp, queue_timeout_after_eviction);
	ATF_TP_ADD_TC(tp, unload_remove_stop_while_queued);
	ATF_TP_ADD_TC(tp, parallel_loads);
	ATF_TP_ADD_TC(tp, explain_verdicts);
	ATF_TP_ADD_TC(tp, set_limits);
	ATF_TP_ADD_TC(tp, progress_load);
	ATF_TP_ADD_TC(tp, progress_slots);
	ATF_TP_ADD_TC(tp, progress_memory);
	ATF_TP_ADD_TC(tp, progress_ends);
	ATF_TP_ADD_TC(tp, stop_set_pure);
	ATF_TP_ADD_TC(tp, room_ahead_pure);
	ATF_TP_ADD_TC(tp, fairness_pure);
	ATF_TP_ADD_TC(tp, overtake_fits);
	ATF_TP_ADD_TC(tp, overtake_issue_sizes);
	ATF_TP_ADD_TC(tp, overtake_reference);
	ATF_TP_ADD_TC(tp, fewest_stops);
	ATF_TP_ADD_TC(tp, stop_set_in_pool);
	ATF_TP_ADD_TC(tp, restart_wait);
	ATF_TP_ADD_TC(tp, fairness_measured);
	ATF_TP_ADD_TC(tp, waiting_not_loading);

	return (atf_no_error());
}
