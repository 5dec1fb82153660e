/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The pool of model processes.  See pool.h and DESIGN.md, "The pool".
 *
 * Every change of state (load, unload, idle unload, stop all, replace,
 * remove, restart) is an op on one list, in the order it was asked for.
 * An op runs, possibly across callbacks (spawned, probe result, child
 * exit, timers), until it finishes.  In the reference pool (no model may
 * wait) only the op at the head runs.  Otherwise an op starts once no
 * op before it touches the same model (and no load is stopping that
 * model to make room): loads of different models run at the same time.
 * Making room is part of a lazy model's load, and only one load at a
 * time makes room (p->room): its decision, its evictions and its wait
 * for memory held by busy models are ordered, first come first served.
 * State is read again every time an op resumes.
 *
 * A replace or a remove waits for the model to be idle: it is the
 * model's idle_op, put on the list only while nothing holds the model,
 * and taken off again (parked) if it finds the model busy when it
 * starts.  A replace and a restart end by turning into the model's load.
 *
 * Requests that cannot be granted wait (struct pool_waiter): for an op
 * (the model's load or replace), or for a slot of a ready model (op
 * NULL) when max_requests are in flight or a waiting load needs its
 * memory (the fairness window).  A waiter is "queued" while what it
 * waits for has not started: only queued waiters count against
 * max_queue and time out after queue_timeout.
 *
 * A waiter of pool_acquire_progress is told what it waits for
 * (ops->waiting), always from a timer: so a request answered within the
 * call that made it is never told.  New waiters are at the tail of the
 * list, and are told at the next turn by a pass over them alone; the
 * changes of the others (their wait, or the requests ahead of them) in
 * one pass over every waiter, at most every POOL_PROGRESS ms however
 * often they change.
 *
 * It calls no other file of agencyd but memory.c's arithmetic: every
 * effect goes through the caller's struct pool_ops (models.c's).
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/tree.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "memory.h"
#include "pool.h"

enum op_kind {
	OP_LOAD,
	OP_UNLOAD,	/* explicit: the model stays unloaded */
	OP_IDLE,	/* idle timeout: only if still idle */
	OP_STOPALL,
	OP_REPLACE,	/* once idle: stop, swap the plan, maybe load */
	OP_REMOVE,	/* once idle: stop, free the record */
	OP_RESTART,	/* stop, then load */
};

enum op_phase {
	PH_QUEUED,
	PH_ROOM,	/* load: started, waiting for its turn to make room */
	PH_WAITMEM,	/* load: making room, waiting for busy models */
	PH_EVICTING,	/* load: waiting for the victim's exit */
	PH_SPAWNING,	/* load: spawn called, no answer yet */
	PH_PROBING,	/* load: probe out, or waiting to ask again */
	PH_KILLING,	/* load: waiting for our own child's exit */
	PH_EXITING,	/* unload, replace, remove, restart: the exit */
	PH_REAPING,	/* stop all: waiting for every exit */
};

struct pool_model;

struct pool_done {
	TAILQ_ENTRY(pool_done)	 entry;
	pool_load_cb		 load;
	pool_done_cb		 done;
	void			*arg;
};
TAILQ_HEAD(pool_dones, pool_done);

struct pool_op {
	TAILQ_ENTRY(pool_op)	 entry;
	enum op_kind		 kind;
	enum op_phase		 phase;
	struct pool_model	*pm;
	uint64_t		 gen;		/* pm->stop_gen when queued */
	uint64_t		 spawnid;
	uint64_t		 loadid;
	int64_t			 spawned_at;	/* ms, the load's first spawn */
	int			 spawned;	/* spawned_at is set */
	int64_t			 wait_since;	/* ms, PH_WAITMEM began */
	int64_t			 began;		/* ms it began to act; 0 */
	struct pool_model	*victim;
	void			*timeout;	/* the load timeout */
	void			*timer;		/* grace or probe again */
	char			 error[PROTO_MSG_MAX];
	uint16_t		 bad_port;
	int			 retried;
	int			 restart;	/* a non-lazy restart */
	int			 reason;	/* refusal when it fails */
	int			 queued;	/* on the list, not parked */
	int			 was_loaded;	/* replace: load again */
	int			 want_load;	/* replace: pool_load came */
	int			 by_request;	/* a request asked for it */
	int			 cause;		/* CHANGE_START, _RELOAD or 0 */
	int			 answered;	/* waiters and dones are */
	struct pool_dones	 dones;
};
TAILQ_HEAD(pool_ops_q, pool_op);

struct pool_waiter {
	TAILQ_ENTRY(pool_waiter) entry;		/* in the order they came */
	uint64_t		 reqid;
	uint32_t		 owner;
	struct pool_model	*pm;
	struct pool_op		*op;		/* NULL: a slot */
	int64_t			 since;		/* ms, when it came */
	int			 queued;	/* bounded and timed */
	void			*deadline;	/* the queue timeout */
	int			 progress;	/* its waits are told */
	int			 fresh;		/* not yet seen by a telling */
	int			 told;		/* enum proto_wait; -1: none */
	uint32_t		 told_ahead;
};
TAILQ_HEAD(pool_waiters, pool_waiter);

struct pool_hold {
	TAILQ_ENTRY(pool_hold)	 entry;		/* in the order granted */
	RB_ENTRY(pool_hold)	 node;		/* by holdid */
	uint64_t		 holdid;
	uint32_t		 owner;
	int64_t			 since;		/* ms, granted */
	struct pool_model	*pm;
};
TAILQ_HEAD(pool_holds, pool_hold);
RB_HEAD(pool_hold_tree, pool_hold);

struct pool_model {
	TAILQ_ENTRY(pool_model)	 entry;
	struct pool		*pool;
	struct pool_plan	 plan;
	enum proto_state	 state;
	char			 error[PROTO_MSG_MAX];
	pid_t			 pid;		/* alive, whatever the state */
	uint16_t		 port;
	uint32_t		 in_progress;
	int64_t			 last_used;
	int64_t			 last_grant;	/* ms; -1: never */
	int64_t			 loaded_at;
	uint64_t		 requests;
	uint64_t		 loads;
	uint64_t		 restarts;
	uint64_t		 evictions;
	uint64_t		 load_failures;
	uint64_t		 load_ms_sum;
	uint64_t		 load_hist[PROTO_LOAD_NBOUNDS + 1];
	uint64_t		 req_ms_sum;	/* of the released holds */
	uint64_t		 req_count;
	uint32_t		 nwait;		/* its waiters */
	uint32_t		 nslot;		/* of them, for a slot */
	uint32_t		 nqueued;	/* of them, queued */
	uint32_t		 counted;	/* a telling's count of them */
	uint64_t		 stop_gen;	/* bumped by each unload */
	int			 unloaded;	/* not-loaded until a load */
	int			 unload_pending;
	int			 removed;	/* no longer served */
	int64_t			 backoff;	/* ms, last restart delay */
	struct pool_op		*load_op;	/* the newest load */
	struct pool_op		*idle_op;	/* replace or remove */
	struct pool_plan	 next_plan;	/* a pending replace's */
	void			*idle_timer;
	void			*restart_timer;
	void			*grace_timer;	/* EXIT_GRACE after a death */
	/* for the events: why its state, when a restart is due, the
	 * durations of its last loads */
	int			 change;	/* enum proto_change */
	char			 change_for[AGENCY_NAME_MAX];
	int64_t			 restart_at;	/* -1: none due */
	int64_t			 recent[PROTO_LOAD_HISTORY];
	uint32_t		 nrecent;
};
TAILQ_HEAD(pool_models, pool_model);

struct pool {
	const struct pool_ops	*ops;
	void			*ctx;
	struct pool_settings	 set;
	struct pool_models	 models;
	size_t			 nmodels;
	struct pool_ops_q	 queue;
	struct pool_waiters	 waiters;
	struct pool_holds	 holds;
	struct pool_hold_tree	 hold_tree;	/* the same, for releases */
	struct pool_stats	 stats;
	uint64_t		 next_id;
	uint16_t		 next_port;
	uint32_t		 nqueued;	/* queued waiters */
	int			 parallel;	/* some model may wait */
	int			 running;	/* inside queue_run */
	int			 rerun;		/* queue_run: look again */
	int			 recheck;	/* a wait for memory: look again */
	struct pool_op		*room;		/* the load making room */
	void			*fair_timer;	/* a fairness window ends */
	uint32_t		 nprogress;	/* waiters whose waits are told */
	void			*progress_timer;
	int64_t			 progress_due;	/* ms, when it fires */
	int64_t			 progress_at;	/* ms, the last full telling */
	int			 progress_new;	/* new waiters to tell */
	int			 progress_dirty; /* the others may have changed */
	int			 stopping;
	int			 starting;	/* in pool_start */
	int			 killed_all;	/* stop all sent SIGKILL */
	void			*stop_timer;
};

static int
hold_cmp(const struct pool_hold *a, const struct pool_hold *b)
{
	return (a->holdid < b->holdid ? -1 : a->holdid > b->holdid);
}

/* RB_GENERATE_STATIC, but libbsd leaves its __unused undefined. */
RB_GENERATE_INTERNAL(pool_hold_tree, pool_hold, node, hold_cmp,
    __attribute__((__unused__)) static)

static void	 plog(struct pool *, int, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));
static void	 queue_run(struct pool *);
static void	 op_start(struct pool *, struct pool_op *);
static void	 op_finish(struct pool *, struct pool_op *);
static void	 load_begin(struct pool *, struct pool_op *);
static void	 load_step(struct pool *, struct pool_op *);
static void	 load_fail(struct pool *, struct pool_op *, const char *);
static void	 load_refused(struct pool *, struct pool_op *, const char *);
static void	 load_doom(struct pool *, struct pool_op *);
static void	 op_reload(struct pool *, struct pool_op *);
static void	 replace_swap(struct pool *, struct pool_op *);
static struct pool_op *queue_load(struct pool *, struct pool_model *);
static void	 idle_arm(struct pool_model *);
static void	 stopall_check(struct pool *, struct pool_op *);
static void	 grace_cb(void *);
static void	 deadline_cb(void *);
static void	 msgf(char *, size_t, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));
static void	 grant(struct pool *, struct pool_model *, uint64_t,
		    uint32_t);
static void	 refuse(struct pool *, uint64_t, int, int, const char *, ...)
		    __attribute__((__format__ (printf, 5, 6)));
static int	 retry_for(struct pool *, struct pool_model *);

static void
plog(struct pool *p, int pri, const char *fmt, ...)
{
	char	 line[PROTO_LOGLINE_MAX];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	p->ops->log(p->ctx, pri, line);
}

/* A message, cut to fit: labels may be long, messages are bounded. */
static void
msgf(char *buf, size_t len, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static int64_t
now(struct pool *p)
{
	return (p->ops->now(p->ctx));
}

static void
timer_cancel(struct pool *p, void **t)
{
	if (*t != NULL) {
		p->ops->timer_del(p->ctx, *t);
		*t = NULL;
	}
}

/* Why a model goes to state, when its caller does not say. */
static int
change_default(const struct pool_model *pm, enum proto_state state)
{
	switch (state) {
	case STATE_READY:
		return (CHANGE_LOADED);
	case STATE_FAILED:
		return (pm->state == STATE_LOADING ? CHANGE_LOAD_FAILED :
		    CHANGE_EXITED);
	case STATE_LOADING:
		return (CHANGE_LOAD);
	default:
		return (pm->pool->stopping ? CHANGE_SHUTDOWN : CHANGE_STOPPED);
	}
}

/* Why a load's model is loading: who asked for it. */
static int
load_change(const struct pool_op *op)
{
	if (op->restart)
		return (CHANGE_RESTART);
	if (op->by_request)
		return (CHANGE_REQUEST);
	if (op->cause != 0)
		return (op->cause);
	return (CHANGE_LOAD);
}

static void	 set_state_why(struct pool_model *, enum proto_state,
		    const char *, int, const char *);

static void
set_state(struct pool_model *pm, enum proto_state state, const char *error)
{
	set_state_why(pm, state, error, change_default(pm, state), NULL);
}

static void
set_state_why(struct pool_model *pm, enum proto_state state,
    const char *error, int why, const char *forname)
{
	struct pool	*p = pm->pool;

	pm->change = why;
	strlcpy(pm->change_for, forname != NULL ? forname : "",
	    sizeof(pm->change_for));
	if (state != STATE_FAILED)
		pm->restart_at = -1;
	pm->state = state;
	if (error != NULL)
		strlcpy(pm->error, error, sizeof(pm->error));
	else
		pm->error[0] = '\0';
	if (state == STATE_STOPPED || state == STATE_FAILED)
		pm->port = 0;
	if (state != STATE_READY)
		timer_cancel(p, &pm->idle_timer);
	/* What holds memory changed: a load waiting for it looks again. */
	p->recheck = 1;
	p->ops->changed(p->ctx, &pm->plan);
}

static struct pool_model *
find_model(struct pool *p, const char *name)
{
	struct pool_model	*pm;

	TAILQ_FOREACH(pm, &p->models, entry)
		if (!pm->removed && strcmp(pm->plan.name, name) == 0)
			return (pm);
	return (NULL);
}

static struct pool_model *
find_pid(struct pool *p, pid_t pid)
{
	struct pool_model	*pm;

	if (pid <= 0)
		return (NULL);
	TAILQ_FOREACH(pm, &p->models, entry)
		if (pm->pid == pid)
			return (pm);
	return (NULL);
}

/* The op of pm that has started and not finished, or NULL. */
static struct pool_op *
running_op(struct pool *p, struct pool_model *pm)
{
	struct pool_op	*op;

	TAILQ_FOREACH(op, &p->queue, entry)
		if (op->pm == pm && op->phase != PH_QUEUED)
			return (op);
	return (NULL);
}

/* Whether the some model may wait: else the pool is the reference's. */
static void
mode_update(struct pool *p)
{
	struct pool_model	*pm;

	p->parallel = 0;
	TAILQ_FOREACH(pm, &p->models, entry)
		if (!pm->removed && pm->plan.queue_timeout > 0)
			p->parallel = 1;
	p->recheck = 1;
}

static void
format_size(int64_t bytes, char *buf, size_t len)
{
	if (bytes >= POOL_GIB || bytes <= -POOL_GIB)
		snprintf(buf, len, "%.1f GiB", (double)bytes / POOL_GIB);
	else
		snprintf(buf, len, "%.1f MiB", (double)bytes / (1024 * 1024));
}

void
pool_describe_exit(int wstatus, char *buf, size_t len)
{
	const char	*name;

	if (WIFEXITED(wstatus))
		snprintf(buf, len, "exited with %d", WEXITSTATUS(wstatus));
	else if (WIFSIGNALED(wstatus)) {
		if ((name = sigabbrev_np(WTERMSIG(wstatus))) != NULL)
			snprintf(buf, len, "was killed by SIG%s", name);
		else
			snprintf(buf, len, "was killed by signal %d",
			    WTERMSIG(wstatus));
	} else
		snprintf(buf, len, "ended with status %#x", wstatus);
}

/*
 * The pure decisions.
 */

int64_t
pool_reserve(int64_t setting, int64_t total)
{
	int64_t	 five;

	if (setting >= 0)
		return (setting);
	five = total / 20;
	return (five < 2 * POOL_GIB ? five : 2 * POOL_GIB);
}

/*
 * Whether a model needing need bytes fits: the measured memory (when
 * known) keeps the reserve free, and the needs of what is loaded
 * (committed) plus this one stay within the budget (when set).  The
 * sums saturate: a need near INT64_MAX never wraps into fitting.
 */
int
pool_fits(const struct mem_snapshot *mem, int64_t reserve, int64_t budget,
    int64_t committed, int64_t need)
{
	if (mem != NULL && mem->available < mem_add(need, reserve))
		return (0);
	if (budget > 0 && mem_add(committed, need) > budget)
		return (0);
	return (1);
}

static int
view_evictable(const struct pool_view *v)
{
	return (v->state == STATE_READY && v->lazy && v->in_progress == 0 &&
	    !v->kept);
}

/*
 * The ready, idle, lazy model used least recently; the first in config
 * order among equals.  -1 when every loaded model is busy, kept or not
 * lazy.
 */
ssize_t
pool_eviction_candidate(const struct pool_view *v, size_t n)
{
	size_t	 i;
	ssize_t	 best = -1;

	for (i = 0; i < n; i++) {
		if (!view_evictable(&v[i]))
			continue;
		if (best == -1 || v[i].last_used < v[best].last_used)
			best = (ssize_t)i;
	}
	return (best);
}

/* What the others hold by need: loaded, loading, or still running. */
static int
view_committed(const struct pool_view *v)
{
	return (v->state == STATE_READY || v->state == STATE_LOADING ||
	    v->running);
}

static int64_t
views_committed(const struct pool_view *v, size_t n, size_t self)
{
	int64_t	 sum = 0;
	size_t	 i;

	for (i = 0; i < n; i++)
		if (i != self && view_committed(&v[i]))
			sum = mem_add(sum, v[i].need);
	return (sum);
}

/*
 * Sums of needs saturate (mem_add): a need near INT64_MAX (a sparse
 * file) must never fit by wrapping, and the sums are compared without
 * subtracting one from another.
 */
int
pool_room(const struct pool_view *v, size_t n, size_t self,
    const struct mem_snapshot *mem, int64_t reserve, int64_t budget,
    ssize_t *victim)
{
	struct mem_snapshot	 eff;
	int64_t			 used = 0, loading = 0, freeable = 0;
	int64_t			 busy = 0, fixed = 0;
	int64_t			 need = v[self].need;
	ssize_t			 best = -1;
	size_t			 i;

	*victim = -1;
	for (i = 0; i < n; i++) {
		if (i == self)
			continue;
		if (view_committed(&v[i]))
			used = mem_add(used, v[i].need);
		/* Not in the measured memory yet: it will be. */
		if (v[i].state == STATE_LOADING)
			loading = mem_add(loading, v[i].need);
		if (v[i].lazy && view_evictable(&v[i])) {
			freeable = mem_add(freeable, v[i].need);
			if (best == -1 || v[i].last_used < v[best].last_used)
				best = (ssize_t)i;
		} else if (v[i].lazy && (v[i].state == STATE_READY ||
		    v[i].state == STATE_LOADING))
			busy = mem_add(busy, v[i].need);
		else if (view_committed(&v[i]))
			fixed = mem_add(fixed, v[i].need);
	}
	if (mem != NULL) {
		eff = *mem;
		eff.available -= loading;
		mem = &eff;
	}
	if (pool_fits(mem, reserve, budget, used, need))
		return (ROOM_FITS);
	/* By need the budget is exact: stop nothing in vain. */
	if (best != -1 && !(budget > 0 &&
	    mem_add(mem_add(fixed, busy), need) > budget)) {
		*victim = best;
		return (ROOM_EVICT);
	}
	if (busy > 0 && (budget <= 0 || mem_add(fixed, need) <= budget) &&
	    (mem == NULL || mem_add(mem_add(mem->available, freeable), busy) >=
	    mem_add(need, reserve)))
		return (ROOM_WAIT);
	return (ROOM_NEVER);
}

/*
 * A ready model serves the request after the ones ahead of it, slots at
 * a time; one that is not ready loads first, after the busy models that
 * hold its memory have drained.
 */
int64_t
pool_wait_estimate(const struct pool_guess *g)
{
	int64_t	 req, load, wait;

	req = g->req_ms >= 0 ? g->req_ms : POOL_GUESS_REQUEST;
	load = g->load_ms >= 0 ? g->load_ms : POOL_GUESS_LOAD;
	if (g->ready) {
		if (g->slots == 0)
			return (req);	/* a window: about one request */
		return ((int64_t)((g->ahead + g->slots) / g->slots) * req);
	}
	wait = load + (g->drain_ms > 0 ? g->drain_ms : 0);
	if (g->slots > 0)
		wait += (int64_t)(g->ahead / g->slots) * req;
	return (wait);
}

int
pool_retry_after(int64_t ms)
{
	int64_t	 s;

	if (ms <= 0)
		return (1);
	s = ms / 1000 + (ms % 1000 != 0);
	return (s > POOL_RETRY_MAX ? POOL_RETRY_MAX : (int)s);
}

const char *
pool_verdict_name(int v)
{
	switch (v) {
	case VERDICT_GRANT:
		return ("grant");
	case VERDICT_JOIN:
		return ("join");
	case VERDICT_LOAD:
		return ("load");
	case VERDICT_EVICT:
		return ("evict");
	case VERDICT_WAIT:
		return ("wait");
	case VERDICT_REFUSE:
		return ("refuse");
	default:
		return ("unknown");
	}
}

/*
 * Set-up.
 */

struct pool *
pool_new(const struct pool_ops *ops, void *ctx,
    const struct pool_settings *set)
{
	struct pool	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return (NULL);
	p->ops = ops;
	p->ctx = ctx;
	p->set = *set;
	if (p->set.port_hi < p->set.port_lo)
		p->set.port_hi = p->set.port_lo;
	p->next_port = p->set.port_lo;
	TAILQ_INIT(&p->models);
	TAILQ_INIT(&p->queue);
	TAILQ_INIT(&p->waiters);
	TAILQ_INIT(&p->holds);
	RB_INIT(&p->hold_tree);
	return (p);
}

int
pool_add(struct pool *p, const struct pool_plan *plan)
{
	struct pool_model	*pm;

	if (find_model(p, plan->name) != NULL)
		return (-1);
	if ((pm = calloc(1, sizeof(*pm))) == NULL)
		return (-1);
	pm->pool = p;
	pm->plan = *plan;
	pm->state = STATE_STOPPED;
	pm->last_used = -1;
	pm->restart_at = -1;
	pm->last_grant = -1;
	pm->loaded_at = -1;
	TAILQ_INSERT_TAIL(&p->models, pm, entry);
	p->nmodels++;
	mode_update(p);
	return (0);
}

static void
op_free(struct pool *p, struct pool_op *op)
{
	struct pool_done	*d;

	timer_cancel(p, &op->timeout);
	timer_cancel(p, &op->timer);
	while ((d = TAILQ_FIRST(&op->dones)) != NULL) {
		TAILQ_REMOVE(&op->dones, d, entry);
		free(d);
	}
	free(op);
}

void
pool_free(struct pool *p)
{
	struct pool_model	*pm;
	struct pool_op		*op;
	struct pool_waiter	*w;
	struct pool_hold	*h;

	if (p == NULL)
		return;
	/* Parked ops first: the queue's are freed with the queue. */
	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm->idle_op != NULL && !pm->idle_op->queued)
			op_free(p, pm->idle_op);
		pm->idle_op = NULL;
	}
	while ((op = TAILQ_FIRST(&p->queue)) != NULL) {
		TAILQ_REMOVE(&p->queue, op, entry);
		op_free(p, op);
	}
	while ((w = TAILQ_FIRST(&p->waiters)) != NULL) {
		TAILQ_REMOVE(&p->waiters, w, entry);
		timer_cancel(p, &w->deadline);
		free(w);
	}
	while ((h = TAILQ_FIRST(&p->holds)) != NULL) {
		TAILQ_REMOVE(&p->holds, h, entry);
		free(h);
	}
	while ((pm = TAILQ_FIRST(&p->models)) != NULL) {
		TAILQ_REMOVE(&p->models, pm, entry);
		timer_cancel(p, &pm->idle_timer);
		timer_cancel(p, &pm->restart_timer);
		timer_cancel(p, &pm->grace_timer);
		free(pm);
	}
	timer_cancel(p, &p->stop_timer);
	timer_cancel(p, &p->fair_timer);
	timer_cancel(p, &p->progress_timer);
	free(p);
}

/*
 * The queue.
 */

/* An op that is not on the queue yet. */
static struct pool_op *
op_alloc(struct pool *p, enum op_kind kind, struct pool_model *pm)
{
	struct pool_op	*op;

	if ((op = calloc(1, sizeof(*op))) == NULL) {
		plog(p, LOG_ERR, "%s: out of memory", __func__);
		return (NULL);
	}
	op->kind = kind;
	op->phase = PH_QUEUED;
	op->reason = REFUSE_LOAD_FAILED;
	op->pm = pm;
	if (pm != NULL)
		op->gen = pm->stop_gen;
	TAILQ_INIT(&op->dones);
	return (op);
}

static void
op_enqueue(struct pool *p, struct pool_op *op)
{
	TAILQ_INSERT_TAIL(&p->queue, op, entry);
	op->queued = 1;
}

/* Off the queue until the model is idle again. */
static void
op_park(struct pool *p, struct pool_op *op)
{
	TAILQ_REMOVE(&p->queue, op, entry);
	op->queued = 0;
}

static struct pool_op *
op_new(struct pool *p, enum op_kind kind, struct pool_model *pm)
{
	struct pool_op	*op;

	if ((op = op_alloc(p, kind, pm)) != NULL)
		op_enqueue(p, op);
	return (op);
}

/* Whether anyone waits for what op ends in: a request or a pool_load. */
static int
op_wanted(struct pool *p, struct pool_op *op)
{
	struct pool_waiter	*w;
	struct pool_done	*d;

	TAILQ_FOREACH(w, &p->waiters, entry)
		if (w->op == op)
			return (1);
	TAILQ_FOREACH(d, &op->dones, entry)
		if (d->load != NULL)
			return (1);
	return (0);
}

/* A load that has not begun to act: its requests are in the queue. */
static int
op_waiting(const struct pool_op *op)
{
	return (op->kind == OP_LOAD && (op->phase == PH_QUEUED ||
	    op->phase == PH_ROOM || op->phase == PH_WAITMEM));
}

/* A removed record leaves the list, once nothing refers to it. */
static void
model_free(struct pool *p, struct pool_model *pm)
{
	TAILQ_REMOVE(&p->models, pm, entry);
	p->nmodels--;
	timer_cancel(p, &pm->idle_timer);
	timer_cancel(p, &pm->restart_timer);
	timer_cancel(p, &pm->grace_timer);
	plog(p, LOG_INFO, "%s: removed", pm->plan.label);
	p->ops->changed(p->ctx, &pm->plan);
	free(pm);
	mode_update(p);
}

static int
op_add_done(struct pool_op *op, pool_load_cb load, pool_done_cb done,
    void *arg)
{
	struct pool_done	*d;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		return (-1);
	d->load = load;
	d->done = done;
	d->arg = arg;
	TAILQ_INSERT_TAIL(&op->dones, d, entry);
	return (0);
}

/* The load making room is done with it: the next one may. */
static void
room_release(struct pool *p, struct pool_op *op)
{
	if (p->room != op)
		return;
	p->room = NULL;
	timer_cancel(p, &p->fair_timer);
	p->rerun = 1;
}

/*
 * Whether op may start: in the reference pool, at the head of the queue
 * when nothing else runs; otherwise when no op before it touches its
 * model (stop all touches every model) and no load is stopping its
 * model to make room.
 */
static int
op_can_start(struct pool *p, struct pool_op *op)
{
	struct pool_op	*e;

	if (!p->parallel) {
		if (op != TAILQ_FIRST(&p->queue))
			return (0);
		TAILQ_FOREACH(e, &p->queue, entry)
			if (e != op && e->phase != PH_QUEUED)
				return (0);
		return (1);
	}
	for (e = TAILQ_FIRST(&p->queue); e != op; e = TAILQ_NEXT(e, entry))
		if (e->kind == OP_STOPALL || op->kind == OP_STOPALL ||
		    e->pm == op->pm)
			return (0);
	if (op->pm != NULL)
		TAILQ_FOREACH(e, &p->queue, entry)
			if (e->phase == PH_EVICTING && e->victim == op->pm)
				return (0);
	return (1);
}

static void	 pump(struct pool *);

/*
 * Start what may start, hand the room to the next load that waits for
 * it, let a load waiting for memory look again when something changed,
 * and serve the requests waiting for slots; until nothing moves.
 */
static void
queue_run(struct pool *p)
{
	struct pool_op	*op;

	if (p->running) {
		p->rerun = 1;
		return;
	}
	p->running = 1;
	do {
		p->rerun = 0;
		TAILQ_FOREACH(op, &p->queue, entry) {
			if (op->phase == PH_QUEUED) {
				if (!op_can_start(p, op))
					continue;
				op_start(p, op);
			} else if (op->phase == PH_ROOM && p->room == NULL) {
				p->room = op;
				load_step(p, op);
			} else if (op->phase == PH_WAITMEM && p->recheck) {
				p->recheck = 0;
				load_step(p, op);
			} else
				continue;
			p->rerun = 1;	/* the queue may have changed */
			break;
		}
		if (!p->rerun)
			pump(p);
	} while (p->rerun);
	p->running = 0;
}

/* Whether a load was overtaken by an unload or by stop all. */
static int
op_doomed(struct pool *p, struct pool_op *op)
{
	return (p->stopping || op->gen != op->pm->stop_gen);
}

/*
 * Progress (see the top of the file).
 */

/* What w waits for now; *load_ms how long its load has run, or -1. */
static int
waiter_wait(struct pool *p, const struct pool_waiter *w, int64_t *load_ms)
{
	const struct pool_op	*op = w->op;
	int64_t			 t;

	*load_ms = -1;
	if (op == NULL)
		return (WAIT_SLOT);
	switch (op->phase) {
	case PH_QUEUED:
	case PH_ROOM:
		return (WAIT_TURN);
	case PH_WAITMEM:
		return (WAIT_MEMORY);
	default:
		t = now(p);
		*load_ms = op->began > 0 && t > op->began ? t - op->began : 0;
		return (WAIT_LOAD);
	}
}

/* Tell w what it waits for, unless that is what it was told last. */
static void
progress_tell(struct pool *p, struct pool_waiter *w, uint32_t ahead)
{
	int64_t	 load_ms;
	int	 wait;

	wait = waiter_wait(p, w, &load_ms);
	if (wait == w->told && ahead == w->told_ahead)
		return;
	w->told = wait;
	w->told_ahead = ahead;
	p->ops->waiting(p->ctx, w->reqid, wait, ahead, load_ms);
}

static void	 progress_cb(void *);

/* At the next turn for new waiters; for changes, POOL_PROGRESS after
 * the last telling of everyone. */
static void
progress_arm(struct pool *p)
{
	int64_t	 t, due;

	if (p->nprogress == 0 || (!p->progress_new && !p->progress_dirty))
		return;
	t = now(p);
	due = p->progress_new ? t : p->progress_at + POOL_PROGRESS;
	if (due < t)
		due = t;
	if (p->progress_timer != NULL) {
		if (p->progress_due <= due)
			return;
		timer_cancel(p, &p->progress_timer);
	}
	p->progress_due = due;
	p->progress_timer = p->ops->timer_add(p->ctx, due - t, progress_cb,
	    p);
}

/* What the waiters wait for, or who is ahead of them, may have changed. */
static void
progress_touch(struct pool *p)
{
	if (p->nprogress == 0)
		return;
	p->progress_dirty = 1;
	progress_arm(p);
}

static void
progress_cb(void *arg)
{
	struct pool		*p = arg;
	struct pool_model	*pm;
	struct pool_waiter	*w;
	int64_t			 t = now(p);

	p->progress_timer = NULL;
	TAILQ_FOREACH(pm, &p->models, entry)
		pm->counted = 0;
	if (p->progress_dirty && t >= p->progress_at + POOL_PROGRESS) {
		/* Everyone, in the order they came: ahead, those counted. */
		TAILQ_FOREACH(w, &p->waiters, entry) {
			w->fresh = 0;
			if (w->progress)
				progress_tell(p, w, w->pm->counted);
			w->pm->counted++;
		}
		p->progress_at = t;
		p->progress_dirty = 0;
	} else {
		/* The new ones alone, at the tail: ahead, the model's
		 * waiters but itself and those after it. */
		for (w = TAILQ_LAST(&p->waiters, pool_waiters);
		    w != NULL && w->fresh;
		    w = TAILQ_PREV(w, pool_waiters, entry)) {
			w->fresh = 0;
			w->pm->counted++;
			if (w->progress)
				progress_tell(p, w,
				    w->pm->nwait - w->pm->counted);
		}
	}
	p->progress_new = 0;
	progress_arm(p);
}

/*
 * Waiters.
 */

static void
waiter_unqueue(struct pool *p, struct pool_waiter *w)
{
	if (w->queued) {
		w->queued = 0;
		p->nqueued--;
		w->pm->nqueued--;
	}
	timer_cancel(p, &w->deadline);
}

static void
waiter_free(struct pool *p, struct pool_waiter *w)
{
	TAILQ_REMOVE(&p->waiters, w, entry);
	waiter_unqueue(p, w);
	w->pm->nwait--;
	if (w->op == NULL)
		w->pm->nslot--;
	if (w->progress && --p->nprogress == 0) {
		timer_cancel(p, &p->progress_timer);
		p->progress_new = p->progress_dirty = 0;
	}
	free(w);
	progress_touch(p);	/* those after it have one fewer ahead */
}

/* Into the queue: bounded by max_queue, timed from when it came. */
static void
waiter_queue(struct pool *p, struct pool_waiter *w)
{
	int64_t	 left;

	if (w->queued)
		return;
	w->queued = 1;
	p->nqueued++;
	w->pm->nqueued++;
	left = w->since + w->pm->plan.queue_timeout - now(p);
	w->deadline = p->ops->timer_add(p->ctx, left > 0 ? left : 0,
	    deadline_cb, w);
}

/*
 * A request waits: for op (a load or a replace), or for a slot (op
 * NULL); queued when what it waits for has not started; told what it
 * waits for with progress.  -1 when it was refused (out of memory).
 */
static int
wait_on(struct pool *p, struct pool_model *pm, struct pool_op *op,
    uint64_t reqid, uint32_t owner, int queued, int progress)
{
	struct pool_waiter	*w;

	if ((w = calloc(1, sizeof(*w))) == NULL) {
		refuse(p, reqid, REFUSE_LOAD_FAILED, 0, "out of memory");
		return (-1);
	}
	w->reqid = reqid;
	w->owner = owner;
	w->pm = pm;
	w->op = op;
	w->since = now(p);
	w->fresh = 1;
	TAILQ_INSERT_TAIL(&p->waiters, w, entry);
	pm->nwait++;
	if (op == NULL)
		pm->nslot++;
	if (queued) {
		p->stats.queued++;
		waiter_queue(p, w);
	}
	if (progress && p->ops->waiting != NULL) {
		w->progress = 1;
		w->told = -1;
		p->nprogress++;
		p->progress_new = 1;
		progress_arm(p);
	}
	return (0);
}

/* The load of op began to act: its waiters are no longer queued. */
static void
op_started(struct pool *p, struct pool_op *op)
{
	struct pool_waiter	*w;

	TAILQ_FOREACH(w, &p->waiters, entry)
		if (w->op == op)
			waiter_unqueue(p, w);
	if (op->began == 0)
		op->began = now(p);
	progress_touch(p);
}

/*
 * A load that has not begun to act and that nobody waits for any more
 * (its requests left or timed out) is dropped: a request never loads a
 * model on its own behalf once it is gone.
 */
static void
op_drop_unwanted(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;

	if (!op->by_request || !op_waiting(op) || op_wanted(p, op))
		return;
	plog(p, LOG_INFO, "%s: nobody waits for its load any more",
	    pm->plan.label);
	room_release(p, op);
	TAILQ_REMOVE(&p->queue, op, entry);
	op->queued = 0;
	if (pm->load_op == op)
		pm->load_op = NULL;
	op_free(p, op);
	/* It stopped a model to make room, then waited: not loading now,
	 * or its need would keep other loads waiting for nothing. */
	if (pm->state == STATE_LOADING && pm->pid == 0 &&
	    running_op(p, pm) == NULL)
		set_state(pm, STATE_STOPPED, NULL);
	p->recheck = 1;
	p->rerun = 1;
}

static void
drop_unwanted_all(struct pool *p)
{
	struct pool_op	*op, *next;

	TAILQ_FOREACH_SAFE(op, &p->queue, entry, next)
		op_drop_unwanted(p, op);
}

static int
slots_free(const struct pool_model *pm)
{
	return (pm->plan.max_requests == 0 ||
	    pm->in_progress < pm->plan.max_requests);
}

/* When pm stops being kept for the waiting load r, and is closed. */
static int64_t
window_end(struct pool *p, struct pool_op *r, struct pool_model *pm)
{
	int64_t	 from = r->wait_since;

	if (pm->loaded_at > from)
		from = pm->loaded_at;
	return (from + p->set.fairness);
}

/* The load waiting for memory, if any. */
static struct pool_op *
memory_waiter(struct pool *p)
{
	if (!p->parallel || p->room == NULL || p->room->phase != PH_WAITMEM)
		return (NULL);
	return (p->room);
}

/*
 * Fairness: a lazy model a load waits for the memory of takes no new
 * request that came after the load began waiting, once its window (the
 * fairness window from when the wait began, or from its own load if
 * later) is over; those wait until the swap.
 */
static int
model_closed(struct pool *p, struct pool_model *pm, int64_t since)
{
	struct pool_op	*r;

	if ((r = memory_waiter(p)) == NULL || r->pm == pm ||
	    !pm->plan.lazy || since < r->wait_since)
		return (0);
	return (now(p) >= window_end(p, r, pm));
}

/*
 * Batching: an idle model that was granted a request since the load
 * began waiting, and released its last one less than POOL_LINGER ago,
 * is in use (a client that loops asks again at once); it is kept until
 * its window is over rather than stopped between two requests.
 */
static int
model_kept(struct pool *p, struct pool_model *pm)
{
	struct pool_op	*r;
	int64_t		 t;

	if ((r = memory_waiter(p)) == NULL || r->pm == pm ||
	    !pm->plan.lazy || pm->state != STATE_READY ||
	    pm->in_progress > 0 || pm->last_grant < r->wait_since)
		return (0);
	t = now(p);
	return (t - pm->last_used < POOL_LINGER && t < window_end(p, r, pm));
}

static void	 fair_cb(void *);

/* Look again when the next window ends, or a kept model has lingered. */
static void
fair_arm(struct pool *p, struct pool_op *r)
{
	struct pool_model	*pm;
	int64_t			 t, next = -1, n = now(p);

	timer_cancel(p, &p->fair_timer);
	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm == r->pm || !pm->plan.lazy || pm->state != STATE_READY)
			continue;
		t = window_end(p, r, pm);
		if (model_kept(p, pm) && pm->last_used + POOL_LINGER < t)
			t = pm->last_used + POOL_LINGER;
		if (t > n && (next == -1 || t < next))
			next = t;
	}
	if (next != -1)
		p->fair_timer = p->ops->timer_add(p->ctx, next - n, fair_cb,
		    p);
}

static void
fair_cb(void *arg)
{
	struct pool	*p = arg;

	p->fair_timer = NULL;
	p->recheck = 1;
	queue_run(p);
}

/* A waiter of a full model goes on waiting, for a slot. */
static void
waiter_to_slot(struct pool *p, struct pool_waiter *w)
{
	struct pool_model	*pm = w->pm;
	uint64_t		 reqid = w->reqid;

	if (w->op != NULL) {
		w->op = NULL;
		pm->nslot++;
		progress_touch(p);
	}
	if (w->queued)
		return;
	if (pm->plan.queue_timeout <= 0) {
		waiter_free(p, w);
		p->stats.queue_full++;
		refuse(p, reqid, REFUSE_MODEL_BUSY, retry_for(p, pm),
		    "%s is busy: %u requests in flight (max requests %u), and "
		    "no request may wait for it", pm->plan.name,
		    pm->in_progress, pm->plan.max_requests);
		return;
	}
	waiter_queue(p, w);
}

/*
 * Answer whoever waits on op, once: its requests are granted (as many
 * as the model takes; the rest wait for slots) or refused, then the
 * callbacks run.  Callbacks may queue more.
 */
static void
op_answer(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;
	struct pool_waiter	*w, *wt;
	struct pool_done	*d;
	uint64_t		 reqid;
	uint32_t		 owner;
	int			 running;
	int			 ready = 0, ok = 1;

	if (op->answered)
		return;
	op->answered = 1;
	if (pm != NULL && pm->load_op == op)
		pm->load_op = NULL;
	switch (op->kind) {
	case OP_LOAD:
		ready = pm->state == STATE_READY && pm->pid != 0;
		/* FALLTHROUGH */
	case OP_REPLACE:
	case OP_RESTART:
		ok = pm->state == STATE_READY;
		break;
	case OP_REMOVE:
		ok = 0;
		break;
	default:
		break;
	}

	running = p->running;
	p->running = 1;
	/* Only a load grants; a replace that did not load refuses. */
	TAILQ_FOREACH_SAFE(w, &p->waiters, entry, wt) {
		if (w->op != op)
			continue;
		reqid = w->reqid;
		owner = w->owner;
		if (ready && !slots_free(pm)) {
			waiter_to_slot(p, w);
			continue;
		}
		waiter_free(p, w);
		if (ready)
			grant(p, pm, reqid, owner);
		else
			refuse(p, reqid, op->reason, 0, "%s", op->error);
	}
	if (ready)
		idle_arm(pm);
	if (op->kind == OP_REMOVE) {
		model_free(p, pm);
		op->pm = NULL;
	}
	while ((d = TAILQ_FIRST(&op->dones)) != NULL) {
		TAILQ_REMOVE(&op->dones, d, entry);
		if (d->load != NULL)
			d->load(d->arg, ok, ok ? NULL : op->error);
		else if (d->done != NULL)
			d->done(d->arg);
		free(d);
	}
	p->running = running;
}

/*
 * Remove the op, then answer whoever waited on it: callbacks may queue
 * more, which starts once the answers are out.
 */
static void
op_finish(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;

	room_release(p, op);
	TAILQ_REMOVE(&p->queue, op, entry);
	op->queued = 0;
	timer_cancel(p, &op->timeout);
	timer_cancel(p, &op->timer);
	if (pm != NULL && pm->load_op == op)
		pm->load_op = NULL;
	if (pm != NULL && pm->idle_op == op)
		pm->idle_op = NULL;
	if (op->kind == OP_UNLOAD || op->kind == OP_IDLE)
		pm->unload_pending--;
	op_answer(p, op);
	op_free(p, op);
	queue_run(p);
}

/*
 * Stop the model's process for op: set state first, so no request is
 * handed a process on its way out, then SIGTERM, SIGKILL after the
 * grace.  0: there was no process, nothing to wait for.
 */
static int
op_stop(struct pool *p, struct pool_op *op, enum proto_state state)
{
	struct pool_model	*pm = op->pm;
	int			 why;

	switch (op->kind) {
	case OP_UNLOAD:
		why = CHANGE_UNLOAD;
		break;
	case OP_IDLE:
		why = CHANGE_IDLE;
		break;
	case OP_STOPALL:
		why = CHANGE_SHUTDOWN;
		break;
	case OP_REPLACE:
	case OP_REMOVE:
		why = CHANGE_RELOAD;
		break;
	case OP_RESTART:
		why = CHANGE_RESTART;
		break;
	default:
		why = change_default(pm, state);
		break;
	}
	timer_cancel(p, &pm->restart_timer);
	timer_cancel(p, &pm->grace_timer);
	timer_cancel(p, &pm->idle_timer);
	if (pm->pid == 0) {
		if (pm->state != state)
			set_state_why(pm, state, NULL, why, NULL);
		return (0);
	}
	set_state_why(pm, state, NULL, why, NULL);
	op->phase = PH_EXITING;
	if (op->began == 0)
		op->began = now(p);
	progress_touch(p);
	if (!p->stopping) {
		plog(p, LOG_INFO, "%s: stopping", pm->plan.label);
		p->ops->kill(p->ctx, pm->pid, SIGTERM);
		op->timer = p->ops->timer_add(p->ctx, POOL_STOP_GRACE,
		    grace_cb, op);
	}
	return (1);
}

/* The process of a replace, remove or restart has exited (or had none). */
static void
op_stopped(struct pool *p, struct pool_op *op)
{
	switch (op->kind) {
	case OP_REPLACE:
		replace_swap(p, op);
		break;
	case OP_RESTART:
		op_reload(p, op);
		break;
	default:
		op_finish(p, op);
		break;
	}
}

static void
op_start(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;

	switch (op->kind) {
	case OP_LOAD:
		load_begin(p, op);
		break;
	case OP_IDLE:
		if (pm->state != STATE_READY || pm->in_progress > 0 ||
		    pm->pid == 0 || now(p) - pm->last_used <
		    pm->plan.idle_timeout) {
			idle_arm(pm);
			op_finish(p, op);
			break;
		}
		plog(p, LOG_INFO, "%s: idle for %llds, stopping it",
		    pm->plan.label, (long long)pm->plan.idle_timeout / 1000);
		p->stats.idle_unloads++;
		/* FALLTHROUGH */
	case OP_UNLOAD:
		if (op_stop(p, op, STATE_STOPPED) == 0)
			op_finish(p, op);
		break;
	case OP_STOPALL:
		op->phase = PH_REAPING;
		stopall_check(p, op);
		break;
	case OP_REPLACE:
	case OP_REMOVE:
		if (pm->in_progress > 0) {
			/* A load ahead of it granted it: idle first. */
			op_park(p, op);
			break;
		}
		op->was_loaded = pm->state == STATE_READY ||
		    pm->state == STATE_LOADING || pm->pid != 0;
		if (op_stop(p, op, STATE_STOPPED) == 0)
			op_stopped(p, op);
		break;
	case OP_RESTART:
		if (!op_doomed(p, op) && pm->state == STATE_READY &&
		    pm->pid != 0) {
			/* Loading, not stopped: requests wait for it. */
			pm->restarts++;
			plog(p, LOG_INFO, "%s: restarting", pm->plan.label);
			if (op_stop(p, op, STATE_LOADING) == 0)
				op_reload(p, op);
			break;
		}
		/* It died or was stopped since: load only if wanted. */
		if (op_doomed(p, op) || (pm->state != STATE_READY &&
		    ((!pm->plan.lazy && pm->state == STATE_FAILED) ||
		    op_wanted(p, op))))
			op_reload(p, op);
		else
			op_finish(p, op);
		break;
	default:
		break;
	}
}

/*
 * Holds and waiters.
 */

static void
refuse(struct pool *p, uint64_t reqid, int reason, int retry,
    const char *fmt, ...)
{
	char	 msg[PROTO_MSG_MAX];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->stats.refusals++;
	p->ops->refused(p->ctx, reqid, reason, retry, msg);
}

static void
grant(struct pool *p, struct pool_model *pm, uint64_t reqid, uint32_t owner)
{
	struct pool_hold	*h;

	if ((h = calloc(1, sizeof(*h))) == NULL) {
		refuse(p, reqid, REFUSE_LOAD_FAILED, 0, "out of memory");
		return;
	}
	h->holdid = ++p->next_id;
	h->owner = owner;
	h->pm = pm;
	TAILQ_INSERT_TAIL(&p->holds, h, entry);
	RB_INSERT(pool_hold_tree, &p->hold_tree, h);
	pm->in_progress++;
	pm->requests++;
	pm->last_used = pm->last_grant = h->since = now(p);
	timer_cancel(p, &pm->idle_timer);
	p->stats.grants++;
	p->ops->granted(p->ctx, reqid, h->holdid, &pm->plan, pm->port);
}

static void
hold_drop(struct pool *p, struct pool_hold *h)
{
	struct pool_model	*pm = h->pm;
	int64_t			 t = now(p);

	if (t > h->since)
		pm->req_ms_sum += (uint64_t)(t - h->since);
	pm->req_count++;
	TAILQ_REMOVE(&p->holds, h, entry);
	RB_REMOVE(pool_hold_tree, &p->hold_tree, h);
	free(h);
	if (pm->in_progress > 0)
		pm->in_progress--;
	pm->last_used = t;
	if (pm->in_progress == 0)
		p->recheck = 1;		/* it may be stopped for a waiter */
	idle_arm(pm);
	/* A replace or remove waited for this; the caller runs the queue. */
	if (pm->idle_op != NULL && !pm->idle_op->queued &&
	    pm->in_progress == 0)
		op_enqueue(p, pm->idle_op);
}

/*
 * Timers of a record.
 */

static void
idle_cb(void *arg)
{
	struct pool_model	*pm = arg;
	struct pool		*p = pm->pool;
	struct pool_op		*op;

	pm->idle_timer = NULL;
	if (p->stopping || pm->state != STATE_READY || pm->in_progress > 0 ||
	    pm->unload_pending > 0 || pm->idle_op != NULL)
		return;
	if (now(p) - pm->last_used < pm->plan.idle_timeout) {
		idle_arm(pm);
		return;
	}
	if ((op = op_new(p, OP_IDLE, pm)) == NULL)
		return;
	pm->unload_pending++;
	queue_run(p);
}

static void
idle_arm(struct pool_model *pm)
{
	struct pool	*p = pm->pool;
	int64_t		 delay;

	timer_cancel(p, &pm->idle_timer);
	if (!pm->plan.lazy || pm->plan.idle_timeout <= 0 || p->stopping ||
	    pm->state != STATE_READY || pm->in_progress > 0 ||
	    pm->idle_op != NULL)
		return;
	delay = pm->last_used + pm->plan.idle_timeout - now(p);
	if (delay < 0)
		delay = 0;
	pm->idle_timer = p->ops->timer_add(p->ctx, delay, idle_cb, pm);
}

/*
 * A load on the queue.  The model keeps its state until the load
 * starts (a queued load is not loading: status tells them apart).
 */
static struct pool_op *
queue_load(struct pool *p, struct pool_model *pm)
{
	struct pool_op	*op;

	if ((op = op_new(p, OP_LOAD, pm)) == NULL)
		return (NULL);
	pm->load_op = op;
	return (op);
}

static void
restart_cb(void *arg)
{
	struct pool_model	*pm = arg;
	struct pool		*p = pm->pool;
	struct pool_op		*op;

	pm->restart_timer = NULL;
	if (p->stopping || pm->unloaded || pm->state != STATE_FAILED ||
	    pm->load_op != NULL || pm->idle_op != NULL)
		return;
	if ((op = queue_load(p, pm)) == NULL)
		return;
	op->restart = 1;
	queue_run(p);
}

/* A model that is not lazy is started again: 1 s, doubling to 5 min. */
static void
schedule_restart(struct pool_model *pm)
{
	struct pool	*p = pm->pool;
	int64_t		 delay;

	if (pm->backoff <= 0)
		delay = POOL_BACKOFF_MIN;
	else if (pm->backoff >= POOL_BACKOFF_MAX / 2)
		delay = POOL_BACKOFF_MAX;
	else
		delay = pm->backoff * 2;
	pm->backoff = delay;
	timer_cancel(p, &pm->restart_timer);
	pm->restart_timer = p->ops->timer_add(p->ctx, delay, restart_cb, pm);
	pm->restart_at = now(p) + delay;
	plog(p, LOG_INFO, "%s: restarting in %llds", pm->plan.label,
	    (long long)delay / 1000);
	/* the same state, now with a time to restart */
	p->ops->changed(p->ctx, &pm->plan);
}

/* An exit the pool did not cause, EXIT_GRACE later: a failure after all. */
static void
death_cb(void *arg)
{
	struct pool_model	*pm = arg;
	struct pool		*p = pm->pool;

	pm->grace_timer = NULL;
	p->stats.deaths++;
	if (pm->state == STATE_FAILED && pm->error[0] != '\0')
		plog(p, LOG_ERR, "%s", pm->error);
	else
		plog(p, LOG_ERR, "%s: exited", pm->plan.label);
	/* A pending replace loads it again itself. */
	if (!pm->plan.lazy && !pm->unloaded && pm->state == STATE_FAILED &&
	    pm->load_op == NULL && pm->idle_op == NULL)
		schedule_restart(pm);
}

static void
unexpected_exit(struct pool *p, struct pool_model *pm, int wstatus)
{
	char	 desc[64], msg[PROTO_MSG_MAX];

	pool_describe_exit(wstatus, desc, sizeof(desc));
	msgf(msg, sizeof(msg), "%s %s", pm->plan.label, desc);
	if (p->stopping || pm->state == STATE_STOPPED) {
		plog(p, LOG_INFO, "%s", msg);
		if (pm->state != STATE_STOPPED)
			set_state(pm, STATE_STOPPED, NULL);
		return;
	}
	if (pm->state == STATE_READY && pm->loaded_at >= 0 &&
	    now(p) - pm->loaded_at >= POOL_BACKOFF_RESET)
		pm->backoff = 0;
	set_state(pm, STATE_FAILED, msg);
	/* Not a failure yet: stop all may be on its way (a Ctrl-C). */
	timer_cancel(p, &pm->grace_timer);
	pm->grace_timer = p->ops->timer_add(p->ctx, POOL_EXIT_GRACE,
	    death_cb, pm);
}

/*
 * Loads.
 */

/* The records as pool_room sees them; *self is pm's index.  NULL when
 * out of memory. */
static struct pool_view *
pool_views(struct pool *p, struct pool_model *self, size_t *selfi)
{
	struct pool_view	*v;
	struct pool_model	*pm;
	size_t			 i = 0;

	if ((v = reallocarray(NULL, p->nmodels, sizeof(*v))) == NULL)
		return (NULL);
	TAILQ_FOREACH(pm, &p->models, entry) {
		memset(&v[i], 0, sizeof(v[i]));
		v[i].state = pm->state;
		v[i].lazy = pm->plan.lazy;
		v[i].in_progress = pm->in_progress;
		v[i].last_used = pm->last_used;
		v[i].need = pm->plan.need;
		v[i].running = pm->pid != 0;
		v[i].kept = model_kept(p, pm);
		if (pm == self)
			*selfi = i;
		i++;
	}
	return (v);
}

static struct pool_model *
model_at(struct pool *p, size_t i)
{
	struct pool_model	*pm;

	TAILQ_FOREACH(pm, &p->models, entry)
		if (i-- == 0)
			return (pm);
	return (NULL);
}

/* "needs 6.0 GiB, 3.1 GiB available, 2.0 GiB kept in reserve, budget
 * 7.0 GiB of which 4.0 GiB in use": what a fit was decided on. */
static void
mem_figures(struct pool *p, int64_t need, const struct mem_snapshot *mem,
    int64_t reserve, int64_t used, char *buf, size_t len)
{
	char	 n[32], avail[32], res[32], bud[32], u[32];

	format_size(need, n, sizeof(n));
	snprintf(buf, len, "needs %s", n);
	if (mem != NULL) {
		format_size(mem->available, avail, sizeof(avail));
		strlcat(buf, ", ", len);
		strlcat(buf, avail, len);
		strlcat(buf, " available", len);
		if (reserve > 0) {
			format_size(reserve, res, sizeof(res));
			strlcat(buf, ", ", len);
			strlcat(buf, res, len);
			strlcat(buf, " kept in reserve", len);
		}
	}
	if (p->set.budget > 0 && mem_add(used, need) > p->set.budget) {
		format_size(p->set.budget, bud, sizeof(bud));
		format_size(used, u, sizeof(u));
		strlcat(buf, ", budget ", len);
		strlcat(buf, bud, len);
		strlcat(buf, " of which ", len);
		strlcat(buf, u, len);
		strlcat(buf, " in use", len);
	}
}

/* "a (busy), b (in use), c (loading)": what a waiting load waits for. */
static void
blockers(struct pool *p, struct pool_model *self, char *buf, size_t len)
{
	struct pool_model	*pm;
	const char		*why;

	buf[0] = '\0';
	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm == self || !pm->plan.lazy)
			continue;
		if (pm->state == STATE_LOADING)
			why = "loading";
		else if (pm->state != STATE_READY)
			continue;
		else if (pm->in_progress > 0)
			why = "busy";
		else if (model_kept(p, pm))
			why = "in use";
		else
			continue;
		if (buf[0] != '\0')
			strlcat(buf, ", ", len);
		strlcat(buf, pm->plan.name, len);
		strlcat(buf, " (", len);
		strlcat(buf, why, len);
		strlcat(buf, ")", len);
	}
}

static void
nomem_message(struct pool *p, struct pool_model *self,
    const struct mem_snapshot *mem, int64_t reserve, int64_t used,
    char *buf, size_t len)
{
	struct pool_model	*pm;
	char			 fig[PROTO_MSG_MAX];
	const char		*sep = ": ";

	mem_figures(p, self->plan.need, mem, reserve, used, fig, sizeof(fig));
	msgf(buf, len, "not enough memory for %s (%s)", self->plan.name, fig);
	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm == self || pm->state != STATE_READY)
			continue;
		strlcat(buf, sep, len);
		strlcat(buf, pm->plan.name, len);
		if (pm->in_progress > 0)
			strlcat(buf, " (busy)", len);
		else if (!pm->plan.lazy)
			strlcat(buf, " (not lazy)", len);
		else if (model_kept(p, pm))
			strlcat(buf, " (in use)", len);
		else
			strlcat(buf, " (kept)", len);
		sep = ", ";
	}
	/* Not a model to blame: the memory is not there. */
	if (sep[0] == ':')
		strlcat(buf, ": nothing is loaded", len);
}

/*
 * The load failed.  Its requests and callbacks are answered now, even
 * when its process has yet to exit (a wrong readiness answer, a load
 * timeout): the op stays on the queue until the exit, so that the next
 * change of the model waits for it.  A load ended by an unload or by
 * stop all is not a failure: the model is stopped, not failed, and no
 * failure is counted.
 */
static void
load_fail(struct pool *p, struct pool_op *op, const char *msg)
{
	struct pool_model	*pm = op->pm;
	int			 doomed = op_doomed(p, op);

	if (msg != op->error)
		strlcpy(op->error, msg, sizeof(op->error));
	timer_cancel(p, &op->timeout);
	timer_cancel(p, &op->timer);
	if (op->loadid != 0) {
		p->ops->probe_cancel(p->ctx, op->loadid);
		op->loadid = 0;
	}
	if (!op->answered) {
		if (!doomed) {
			p->stats.load_failures++;
			pm->load_failures++;
		}
		if (pm->removed || doomed)
			set_state(pm, STATE_STOPPED, NULL);
		else
			set_state(pm, STATE_FAILED, op->error);
		plog(p, doomed ? LOG_INFO : LOG_ERR, "%s", op->error);
	}
	if (pm->pid != 0) {
		/* The answer now; the exit, and the op's end, later. */
		room_release(p, op);
		op_answer(p, op);
		if (op->phase != PH_KILLING) {
			op->phase = PH_KILLING;
			p->ops->kill(p->ctx, pm->pid,
			    p->killed_all ? SIGKILL : SIGTERM);
			if (!p->stopping)
				op->timer = p->ops->timer_add(p->ctx,
				    POOL_STOP_GRACE, grace_cb, op);
		}
		queue_run(p);
		return;
	}
	if (!pm->plan.lazy && !doomed && !pm->unloaded)
		schedule_restart(pm);
	op_finish(p, op);
}

/*
 * The model did not fit: a refusal of the requests, not a failure of
 * the model, which was never started.  It goes back to stopped and
 * tries again on its next request.
 */
static void
load_refused(struct pool *p, struct pool_op *op, const char *msg)
{
	struct pool_model	*pm = op->pm;

	if (msg != op->error)
		strlcpy(op->error, msg, sizeof(op->error));
	timer_cancel(p, &op->timeout);
	timer_cancel(p, &op->timer);
	set_state_why(pm, STATE_STOPPED, NULL, CHANGE_REFUSED, NULL);
	plog(p, LOG_WARNING, "%s", op->error);
	op_finish(p, op);
}

/* End our own child: the load fails once it has exited. */
static void
kill_own(struct pool *p, struct pool_op *op, int signal_it)
{
	struct pool_model	*pm = op->pm;

	timer_cancel(p, &op->timeout);
	timer_cancel(p, &op->timer);
	if (op->loadid != 0) {
		p->ops->probe_cancel(p->ctx, op->loadid);
		op->loadid = 0;
	}
	op->phase = PH_KILLING;
	if (pm->pid == 0 || !signal_it)
		return;
	p->ops->kill(p->ctx, pm->pid, p->killed_all ? SIGKILL : SIGTERM);
	if (!p->stopping)
		op->timer = p->ops->timer_add(p->ctx, POOL_STOP_GRACE,
		    grace_cb, op);
}

/* An unload or stop all arrived during this load. */
static void
load_doom(struct pool *p, struct pool_op *op)
{
	if (p->stopping && op->error[0] == '\0')
		strlcpy(op->error, "agency is stopping", sizeof(op->error));
	switch (op->phase) {
	case PH_PROBING:
		kill_own(p, op, !p->stopping);
		break;
	case PH_ROOM:
	case PH_WAITMEM:
		/* Nothing started: it ends now. */
		load_step(p, op);
		break;
	default:
		/* Before the spawn, or during it: seen at the next step. */
		break;
	}
}

static void
grace_cb(void *arg)
{
	struct pool_op		*op = arg;
	struct pool		*p;
	struct pool_model	*pm;

	op->timer = NULL;
	pm = op->phase == PH_EVICTING ? op->victim : op->pm;
	if (pm == NULL || pm->pid == 0)
		return;
	p = pm->pool;
	plog(p, LOG_WARNING, "%s: still running %ds after SIGTERM, "
	    "sending SIGKILL", pm->plan.label, POOL_STOP_GRACE / 1000);
	p->ops->kill(p->ctx, pm->pid, SIGKILL);
}

static void
timeout_cb(void *arg)
{
	struct pool_op		*op = arg;
	struct pool_model	*pm = op->pm;
	struct pool		*p = pm->pool;

	op->timeout = NULL;
	msgf(op->error, sizeof(op->error),
	    "%s did not become ready within %llds", pm->plan.label,
	    (long long)pm->plan.load_timeout / 1000);
	load_fail(p, op, op->error);
}

static void
probe_now(struct pool *p, struct pool_op *op)
{
	op->loadid = ++p->next_id;
	p->ops->probe(p->ctx, &op->pm->plan, op->loadid, op->pm->port);
}

static void
reprobe_cb(void *arg)
{
	struct pool_op	*op = arg;

	op->timer = NULL;
	probe_now(op->pm->pool, op);
}

static int
port_taken(struct pool *p, uint16_t port)
{
	struct pool_model	*pm;

	TAILQ_FOREACH(pm, &p->models, entry)
		if (pm->port == port && (pm->pid != 0 ||
		    pm->state == STATE_LOADING || pm->state == STATE_READY))
			return (1);
	return (0);
}

/* Round-robin over the range, so a reload gets a new port. */
static uint16_t
pick_port(struct pool *p, uint16_t bad)
{
	unsigned int	 n, i, port;

	n = (unsigned int)p->set.port_hi - p->set.port_lo + 1;
	for (i = 0; i < n; i++) {
		port = p->set.port_lo +
		    ((unsigned int)p->next_port - p->set.port_lo + i) % n;
		if (port == 0 || port == bad || port_taken(p, port))
			continue;
		if (!p->ops->port_free(p->ctx, port))
			continue;
		p->next_port = port == p->set.port_hi ? p->set.port_lo :
		    port + 1;
		return (port);
	}
	return (0);
}

static void
spawn_now(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;
	uint16_t		 port;
	char			 msg[PROTO_MSG_MAX];

	if ((port = pick_port(p, op->bad_port)) == 0) {
		msgf(msg, sizeof(msg), "%s: no free port in %u-%u",
		    pm->plan.label, p->set.port_lo, p->set.port_hi);
		load_fail(p, op, msg);
		return;
	}
	pm->port = port;
	pm->pid = 0;
	op->phase = PH_SPAWNING;
	op->spawnid = ++p->next_id;
	if (!op->spawned) {	/* a retry on another port goes on timing */
		op->spawned = 1;
		op->spawned_at = now(p);
	}
	plog(p, LOG_INFO, "%s: starting on port %u", pm->plan.label, port);
	/* May answer from within: op may be gone after this. */
	p->ops->spawn(p->ctx, &pm->plan, op->spawnid, port);
}

/* Wait for memory that busy lazy models hold (the room stays ours). */
static int
room_wait(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;
	struct pool_waiter	*w;
	char			 why[PROTO_MSG_MAX];

	if (op->phase != PH_WAITMEM) {
		op->phase = PH_WAITMEM;
		op->wait_since = now(p);
		op->began = 0;		/* its load begins again later */
		progress_touch(p);
		/* After an eviction its requests wait in the queue again,
		 * timed from when they came. */
		TAILQ_FOREACH(w, &p->waiters, entry)
			if (w->op == op)
				waiter_queue(p, w);
		blockers(p, pm, why, sizeof(why));
		plog(p, LOG_INFO, "%s: waiting for memory held by %s",
		    pm->plan.label, why[0] != '\0' ? why : "busy models");
	}
	fair_arm(p, op);
	return (2);
}

/*
 * 1: it fits now; 0: waiting for an eviction; 2: waiting for busy
 * models; -1: the load ended.
 */
static int
make_room(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm, *victim;
	struct pool_view	*v;
	struct mem_snapshot	 mem, *memp = &mem;
	int64_t			 reserve = 0, used;
	ssize_t			 vi;
	size_t			 self = 0;
	int			 room;
	char			 msg[PROTO_MSG_MAX], fig[PROTO_MSG_MAX];

	if (p->ops->memory(p->ctx, &mem) == -1) {
		plog(p, LOG_WARNING, "%s: available memory unknown",
		    pm->plan.label);
		memp = NULL;
	} else
		reserve = pool_reserve(p->set.reserve, mem.total);
	if ((v = pool_views(p, pm, &self)) == NULL) {
		load_refused(p, op, "out of memory");
		return (-1);
	}
	room = pool_room(v, p->nmodels, self, memp, reserve, p->set.budget,
	    &vi);
	used = views_committed(v, p->nmodels, self);
	free(v);

	switch (room) {
	case ROOM_FITS:
		return (1);
	case ROOM_EVICT:
		victim = model_at(p, (size_t)vi);
		mem_figures(p, pm->plan.need, memp, reserve, used, fig,
		    sizeof(fig));
		plog(p, LOG_INFO, "%s: stopping it to make room for %s (%s)",
		    victim->plan.label, pm->plan.label, fig);
		p->stats.evictions++;
		victim->evictions++;
		if (pm->state != STATE_LOADING)
			set_state_why(pm, STATE_LOADING, NULL, load_change(op),
			    NULL);
		set_state_why(victim, STATE_STOPPED, NULL, CHANGE_EVICTED,
		    pm->plan.name);
		op->victim = victim;
		op->phase = PH_EVICTING;
		op_started(p, op);
		timer_cancel(p, &p->fair_timer);
		p->ops->kill(p->ctx, victim->pid, SIGTERM);
		op->timer = p->ops->timer_add(p->ctx, POOL_STOP_GRACE,
		    grace_cb, op);
		return (0);
	case ROOM_WAIT:
		if (!p->set.overcommit && p->parallel &&
		    pm->plan.queue_timeout > 0)
			return (room_wait(p, op));
		/* FALLTHROUGH */
	default:
		break;
	}

	nomem_message(p, pm, memp, reserve, used, msg, sizeof(msg));
	if (p->set.overcommit) {
		plog(p, LOG_WARNING, "%s; loading it anyway (overcommit)",
		    msg);
		return (1);
	}
	op->reason = REFUSE_NOT_ENOUGH_MEMORY;
	load_refused(p, op, msg);
	return (-1);
}

/* Runs when the load starts and every time it resumes after a wait. */
static void
load_step(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;

	if (op_doomed(p, op)) {
		if (p->stopping)
			strlcpy(op->error, "agency is stopping",
			    sizeof(op->error));
		else if (pm->removed)
			msgf(op->error, sizeof(op->error),
			    "%s is no longer served", pm->plan.name);
		else
			msgf(op->error, sizeof(op->error),
			    "%s was unloaded before it started",
			    pm->plan.label);
		if (pm->state == STATE_LOADING && pm->pid == 0)
			set_state(pm, STATE_STOPPED, NULL);
		op_finish(p, op);
		return;
	}
	if (pm->plan.lazy) {
		if (p->parallel && p->room != op) {
			if (p->room != NULL) {
				op->phase = PH_ROOM;	/* another first */
				return;
			}
			p->room = op;
		}
		if (make_room(p, op) != 1)
			return;
	}
	room_release(p, op);
	if (pm->state != STATE_LOADING)
		set_state_why(pm, STATE_LOADING, NULL, load_change(op), NULL);
	op_started(p, op);
	spawn_now(p, op);
}

static void
load_begin(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;

	op->phase = PH_EVICTING;	/* anything but queued */
	if (!op_doomed(p, op)) {
		if (pm->state == STATE_READY && pm->pid != 0) {
			op_finish(p, op);
			return;
		}
		timer_cancel(p, &pm->restart_timer);
		/* A lazy one that may wait for memory is loading once it
		 * has room. */
		if (pm->state != STATE_LOADING &&
		    (!p->parallel || !pm->plan.lazy))
			set_state_why(pm, STATE_LOADING, NULL,
			    load_change(op), NULL);
		if (op->restart) {
			pm->restarts++;
			plog(p, LOG_INFO, "%s: restarting", pm->plan.label);
		}
	}
	load_step(p, op);
}

/* A replace or a restart goes on as the model's load. */
static void
op_reload(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;

	if (pm->idle_op == op)
		pm->idle_op = NULL;
	timer_cancel(p, &op->timer);
	op->cause = op->kind == OP_REPLACE ? CHANGE_RELOAD : CHANGE_RESTART;
	op->kind = OP_LOAD;
	op->phase = PH_QUEUED;
	op->reason = REFUSE_LOAD_FAILED;
	pm->load_op = op;
	load_begin(p, op);
}

/* The replace's process is gone: the new plan takes over. */
static void
replace_swap(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;

	if (pm->idle_op == op)
		pm->idle_op = NULL;
	if (!pm->removed) {
		pm->plan = pm->next_plan;
		pm->backoff = 0;
		plog(p, LOG_INFO, "%s: new configuration", pm->plan.label);
		/* The failure was the old plan's. */
		if (pm->state == STATE_FAILED)
			set_state_why(pm, STATE_STOPPED, NULL, CHANGE_RELOAD,
			    NULL);
		else
			p->ops->changed(p->ctx, &pm->plan);
		mode_update(p);
	}
	if (!p->stopping && !pm->unloaded && (op->was_loaded ||
	    !pm->plan.lazy || op->want_load || op_wanted(p, op))) {
		op->gen = pm->stop_gen;
		op_reload(p, op);
		return;
	}
	if (p->stopping) {
		op->reason = REFUSE_STOPPING;
		strlcpy(op->error, "agency is stopping", sizeof(op->error));
	} else if (pm->removed) {
		op->reason = REFUSE_UNKNOWN_MODEL;
		msgf(op->error, sizeof(op->error), "%s is not served",
		    pm->plan.name);
	} else {
		op->reason = REFUSE_NOT_LOADED;
		msgf(op->error, sizeof(op->error), "%s is not loaded; "
		    "agency-ctl load %s loads it", pm->plan.name,
		    pm->plan.name);
	}
	op_finish(p, op);
}

static void
load_ready(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;

	timer_cancel(p, &op->timeout);
	timer_cancel(p, &op->timer);
	pm->loads++;
	if (op->spawned) {
		int64_t	 ms = now(p) - op->spawned_at;

		if (ms < 0)
			ms = 0;
		pm->load_ms_sum += ms;
		pm->load_hist[pool_load_bucket(ms)]++;
		if (pm->nrecent == PROTO_LOAD_HISTORY) {
			memmove(pm->recent, pm->recent + 1,
			    sizeof(pm->recent) - sizeof(pm->recent[0]));
			pm->nrecent--;
		}
		pm->recent[pm->nrecent++] = ms;
	}
	pm->loaded_at = pm->last_used = now(p);
	set_state(pm, STATE_READY, NULL);
	plog(p, LOG_INFO, "%s: ready on port %u", pm->plan.label, pm->port);
	op_finish(p, op);
}

static void
load_exit(struct pool *p, struct pool_op *op, int wstatus, int addr_in_use)
{
	struct pool_model	*pm = op->pm;
	char			 desc[64];

	timer_cancel(p, &op->timeout);
	timer_cancel(p, &op->timer);
	if (op->loadid != 0) {
		p->ops->probe_cancel(p->ctx, op->loadid);
		op->loadid = 0;
	}
	if (op->phase == PH_PROBING && addr_in_use && !op->retried &&
	    !op_doomed(p, op)) {
		op->retried = 1;
		op->bad_port = pm->port;
		plog(p, LOG_WARNING, "%s: port %u was taken, trying another",
		    pm->plan.label, pm->port);
		spawn_now(p, op);
		return;
	}
	if (op->error[0] == '\0') {
		pool_describe_exit(wstatus, desc, sizeof(desc));
		msgf(op->error, sizeof(op->error),
		    "%s %s before it was ready", pm->plan.label, desc);
	}
	load_fail(p, op, op->error);
}

/*
 * Answers from the outside.
 */

void
pool_spawned(struct pool *p, uint64_t spawnid, pid_t pid, const char *err)
{
	struct pool_op		*op;
	struct pool_model	*pm;
	char			 msg[PROTO_MSG_MAX];

	TAILQ_FOREACH(op, &p->queue, entry)
		if (op->kind == OP_LOAD && op->phase == PH_SPAWNING &&
		    op->spawnid == spawnid)
			break;
	if (op == NULL || spawnid == 0) {
		if (pid > 0) {
			plog(p, LOG_WARNING, "%s: process %d belongs to no "
			    "load, killing it", __func__, (int)pid);
			p->ops->kill(p->ctx, pid, SIGKILL);
		}
		return;
	}
	pm = op->pm;
	op->spawnid = 0;
	if (pid <= 0) {
		msgf(msg, sizeof(msg), "%s could not be started: %s",
		    pm->plan.label, err != NULL ? err : "unknown error");
		load_fail(p, op, msg);
		return;
	}
	pm->pid = pid;
	p->ops->changed(p->ctx, &pm->plan);
	if (op_doomed(p, op)) {
		/* An unload or stop all came while it was being spawned. */
		if (p->stopping)
			strlcpy(op->error, "agency is stopping",
			    sizeof(op->error));
		kill_own(p, op, 1);
		return;
	}
	op->phase = PH_PROBING;
	if (pm->plan.load_timeout > 0)
		op->timeout = p->ops->timer_add(p->ctx, pm->plan.load_timeout,
		    timeout_cb, op);
	probe_now(p, op);
}

void
pool_probe_result(struct pool *p, uint64_t loadid, int ok, int status,
    const char *body)
{
	struct pool_op		*op;
	struct pool_model	*pm;

	if (loadid == 0)
		return;
	TAILQ_FOREACH(op, &p->queue, entry)
		if (op->kind == OP_LOAD && op->phase == PH_PROBING &&
		    op->loadid == loadid)
			break;
	if (op == NULL)
		return;
	pm = op->pm;
	op->loadid = 0;
	if (body == NULL)
		body = "";
	if (ok) {
		load_ready(p, op);
		return;
	}
	if (status == 0) {
		/* The prober gave up (the proxy went away): ask again. */
		plog(p, LOG_WARNING, "%s: no answer to the readiness request "
		    "(%s), asking again", pm->plan.label, body);
		timer_cancel(p, &op->timer);
		op->timer = p->ops->timer_add(p->ctx, POOL_REPROBE,
		    reprobe_cb, op);
		return;
	}
	/* A wrong answer fails the load now; the kill follows. */
	msgf(op->error, sizeof(op->error),
	    "%s answered %d to the readiness request: %s", pm->plan.label,
	    status, body);
	load_fail(p, op, op->error);
}

void
pool_child_exited(struct pool *p, pid_t pid, int wstatus, int addr_in_use)
{
	struct pool_model	*pm;
	struct pool_op		*op;
	char			 desc[64];

	if ((pm = find_pid(p, pid)) == NULL)
		return;
	pm->pid = 0;
	/* A load that stopped it to make room goes on. */
	TAILQ_FOREACH(op, &p->queue, entry) {
		if (op->phase == PH_EVICTING && op->victim == pm) {
			timer_cancel(p, &op->timer);
			op->victim = NULL;
			pool_describe_exit(wstatus, desc, sizeof(desc));
			plog(p, LOG_INFO, "%s %s", pm->plan.label, desc);
			load_step(p, op);
			queue_run(p);
			return;
		}
	}
	if ((op = running_op(p, pm)) != NULL) {
		switch (op->kind) {
		case OP_LOAD:
			if (op->phase == PH_PROBING ||
			    op->phase == PH_KILLING) {
				load_exit(p, op, wstatus, addr_in_use);
				queue_run(p);
				return;
			}
			break;
		case OP_UNLOAD:
		case OP_IDLE:
		case OP_REPLACE:
		case OP_REMOVE:
		case OP_RESTART:
			if (op->phase == PH_EXITING) {
				timer_cancel(p, &op->timer);
				pool_describe_exit(wstatus, desc, sizeof(desc));
				plog(p, LOG_INFO, "%s %s", pm->plan.label,
				    desc);
				op_stopped(p, op);
				queue_run(p);
				return;
			}
			break;
		default:
			break;
		}
	}
	unexpected_exit(p, pm, wstatus);
	TAILQ_FOREACH(op, &p->queue, entry)
		if (op->kind == OP_STOPALL && op->phase == PH_REAPING) {
			stopall_check(p, op);
			break;
		}
	queue_run(p);
}

/*
 * Queue bounds and estimates.
 */

static int64_t
mean_request(const struct pool_model *pm)
{
	return (pm->req_count > 0 ?
	    (int64_t)(pm->req_ms_sum / pm->req_count) : -1);
}

static int64_t
mean_load(const struct pool_model *pm)
{
	return (pm->loads > 0 ? (int64_t)(pm->load_ms_sum / pm->loads) : -1);
}

/* Until the models a load would wait for have drained (or loaded). */
static int64_t
drain_estimate(struct pool *p, struct pool_model *self)
{
	struct pool_model	*pm;
	int64_t			 t, most = -1;

	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm == self || !pm->plan.lazy)
			continue;
		if (pm->state == STATE_LOADING)
			t = mean_load(pm) >= 0 ? mean_load(pm) :
			    POOL_GUESS_LOAD;
		else if (pm->state == STATE_READY && (pm->in_progress > 0 ||
		    model_kept(p, pm)))
			t = mean_request(pm) >= 0 ? mean_request(pm) :
			    POOL_GUESS_REQUEST;
		else
			continue;
		if (t > most)
			most = t;
	}
	return (most);
}

/* How long a request for pm that came now would wait, in ms. */
static int64_t
wait_for(struct pool *p, struct pool_model *pm)
{
	struct pool_guess	 g;

	memset(&g, 0, sizeof(g));
	g.ready = pm->state == STATE_READY && pm->pid != 0;
	g.ahead = pm->nwait;
	g.slots = pm->plan.max_requests;
	g.req_ms = mean_request(pm);
	g.load_ms = mean_load(pm);
	g.drain_ms = g.ready ? -1 : drain_estimate(p, pm);
	return (pool_wait_estimate(&g));
}

static int
retry_for(struct pool *p, struct pool_model *pm)
{
	return (pool_retry_after(wait_for(p, pm)));
}

/*
 * Whether a request for pm that would wait in the queue may: 0 after
 * refusing it (the queue, all or the model's, is full).  slot: it would
 * wait for a slot of the ready model.
 */
static int
admit(struct pool *p, struct pool_model *pm, int slot, uint64_t reqid)
{
	if (pm->plan.queue_timeout <= 0) {
		/* Only a full model sends a request that cannot wait here. */
		p->stats.queue_full++;
		refuse(p, reqid, REFUSE_MODEL_BUSY, retry_for(p, pm),
		    "%s is busy: %u requests in flight (max requests %u), and "
		    "no request may wait for it", pm->plan.name,
		    pm->in_progress, pm->plan.max_requests);
		return (0);
	}
	if (p->set.max_queue > 0 && p->nqueued >= p->set.max_queue) {
		p->stats.queue_full++;
		refuse(p, reqid, REFUSE_QUEUE_FULL, retry_for(p, pm),
		    "the queue is full: %u requests wait (max queue %u)",
		    p->nqueued, p->set.max_queue);
		return (0);
	}
	if (pm->plan.max_queue > 0 && pm->nqueued >= pm->plan.max_queue) {
		p->stats.queue_full++;
		refuse(p, reqid, slot ? REFUSE_MODEL_BUSY : REFUSE_QUEUE_FULL,
		    retry_for(p, pm), "the queue of %s is full: %u requests "
		    "wait (max queue %u)", pm->plan.name, pm->nqueued,
		    pm->plan.max_queue);
		return (0);
	}
	return (1);
}

/* Why a request for pm waits (for a message). */
static void
wait_reason(struct pool *p, struct pool_model *pm, struct pool_op *op,
    char *buf, size_t len)
{
	char	 who[PROTO_MSG_MAX];

	if (op == NULL) {
		if (!slots_free(pm))
			msgf(buf, len, "all %u of its request slots were busy",
			    pm->plan.max_requests);
		else
			msgf(buf, len, "it was kept for a load that waits "
			    "for its memory");
	} else if (op->phase == PH_WAITMEM) {
		blockers(p, pm, who, sizeof(who));
		msgf(buf, len, "its load waited for memory held by %s",
		    who[0] != '\0' ? who : "busy models");
	} else
		msgf(buf, len, "its load waited for its turn");
}

static void
deadline_cb(void *arg)
{
	struct pool_waiter	*w = arg;
	struct pool_model	*pm = w->pm;
	struct pool		*p = pm->pool;
	struct pool_op		*op = w->op;
	uint64_t		 reqid = w->reqid;
	int64_t			 tmo = pm->plan.queue_timeout;
	char			 why[PROTO_MSG_MAX];

	w->deadline = NULL;
	wait_reason(p, pm, op, why, sizeof(why));
	waiter_free(p, w);
	p->stats.queue_timeouts++;
	/* The setting, not the clock: a timer may fire a hair early. */
	refuse(p, reqid, REFUSE_QUEUE_TIMEOUT, retry_for(p, pm),
	    "%s: no turn within the queue timeout (%lld%s): %s",
	    pm->plan.name, (long long)(tmo % 1000 == 0 ? tmo / 1000 : tmo),
	    tmo % 1000 == 0 ? "s" : "ms", why);
	if (op != NULL)
		op_drop_unwanted(p, op);
	queue_run(p);
}

/*
 * The requests waiting for slots: granted in the order they came while
 * the model takes them; when it is not ready they wait for its load (a
 * lazy one is loaded again) or are refused.
 */
static void
pump(struct pool *p)
{
	struct pool_model	*pm;
	struct pool_waiter	*w, *wt;
	struct pool_op		*op;
	uint64_t		 reqid;
	uint32_t		 owner;

	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm->nslot == 0)
			continue;
		TAILQ_FOREACH_SAFE(w, &p->waiters, entry, wt) {
			if (w->pm != pm || w->op != NULL)
				continue;
			reqid = w->reqid;
			owner = w->owner;
			if (pm->unloaded || p->stopping) {
				waiter_free(p, w);
				if (p->stopping)
					refuse(p, reqid, REFUSE_STOPPING, 0,
					    "agency is stopping");
				else
					refuse(p, reqid, REFUSE_NOT_LOADED, 0,
					    "%s is not loaded; agency-ctl load "
					    "%s loads it", pm->plan.name,
					    pm->plan.name);
				continue;
			}
			if (pm->idle_op != NULL)
				break;	/* the replace's load serves them */
			if (pm->state == STATE_READY && pm->pid != 0) {
				if (!slots_free(pm) ||
				    model_closed(p, pm, w->since))
					break;
				waiter_free(p, w);
				grant(p, pm, reqid, owner);
				continue;
			}
			if ((op = pm->load_op) == NULL || op_doomed(p, op)) {
				if (!pm->plan.lazy) {
					waiter_free(p, w);
					refuse(p, reqid, REFUSE_NOT_LOADED, 0,
					    "%s is not loaded%s%s",
					    pm->plan.name, pm->state ==
					    STATE_FAILED ? ": " : "",
					    pm->state == STATE_FAILED ?
					    pm->error : "");
					continue;
				}
				if ((op = queue_load(p, pm)) == NULL)
					break;
				op->by_request = 1;
				p->rerun = 1;
			}
			w->op = op;
			pm->nslot--;
			progress_touch(p);
			if (!op_waiting(op))
				waiter_unqueue(p, w);
		}
	}
}

/*
 * Requests.
 */

static void
acquire(struct pool *p, const char *model, uint64_t reqid, uint32_t owner,
    int progress)
{
	struct pool_model	*pm;
	struct pool_op		*op;
	int			 queued;

	if ((pm = find_model(p, model)) == NULL) {
		refuse(p, reqid, REFUSE_UNKNOWN_MODEL, 0, "%s is not served",
		    model);
		return;
	}
	if (p->stopping) {
		refuse(p, reqid, REFUSE_STOPPING, 0, "agency is stopping");
		return;
	}
	if (pm->unloaded) {
		refuse(p, reqid, REFUSE_NOT_LOADED, 0, "%s is not loaded; "
		    "agency-ctl load %s loads it", pm->plan.name,
		    pm->plan.name);
		return;
	}
	if (pm->idle_op != NULL) {
		/* A replace is pending: the new plan's process, not the old. */
		if (wait_on(p, pm, pm->idle_op, reqid, owner, 0,
		    progress) == 0)
			queue_run(p);
		return;
	}
	if (pm->state == STATE_READY && pm->pid != 0) {
		/* Older requests first; one that cannot wait is not
		 * held back for fairness. */
		if (slots_free(pm) && (pm->plan.queue_timeout <= 0 ||
		    (pm->nslot == 0 && !model_closed(p, pm, now(p))))) {
			grant(p, pm, reqid, owner);
			return;
		}
		if (admit(p, pm, 1, reqid))
			(void)wait_on(p, pm, NULL, reqid, owner, 1,
			    progress);
		return;
	}
	if ((op = pm->load_op) != NULL && !op_doomed(p, op)) {
		queued = op_waiting(op) && pm->plan.queue_timeout > 0;
		if (queued && !admit(p, pm, 0, reqid))
			return;
		(void)wait_on(p, pm, op, reqid, owner, queued, progress);
		return;
	}
	if (!pm->plan.lazy) {
		/* Its restart, if any, is on a timer. */
		if (pm->state == STATE_FAILED)
			refuse(p, reqid, REFUSE_NOT_LOADED, 0,
			    "%s is not loaded: %s", pm->plan.name, pm->error);
		else
			refuse(p, reqid, REFUSE_NOT_LOADED, 0,
			    "%s is not loaded", pm->plan.name);
		return;
	}
	queued = pm->plan.queue_timeout > 0;
	if (queued && !admit(p, pm, 0, reqid))
		return;
	if ((op = queue_load(p, pm)) == NULL) {
		refuse(p, reqid, REFUSE_LOAD_FAILED, 0, "out of memory");
		return;
	}
	op->by_request = 1;
	if (wait_on(p, pm, op, reqid, owner, queued, progress) == -1)
		op_drop_unwanted(p, op);
	queue_run(p);
}

void
pool_acquire(struct pool *p, const char *model, uint64_t reqid,
    uint32_t owner)
{
	acquire(p, model, reqid, owner, 0);
}

void
pool_acquire_progress(struct pool *p, const char *model, uint64_t reqid,
    uint32_t owner)
{
	acquire(p, model, reqid, owner, 1);
}

int
pool_withdraw(struct pool *p, uint64_t reqid, uint32_t owner)
{
	struct pool_waiter	*w;
	struct pool_op		*op;

	TAILQ_FOREACH(w, &p->waiters, entry) {
		if (w->reqid == reqid && w->owner == owner) {
			op = w->op;
			waiter_free(p, w);
			if (op != NULL)
				op_drop_unwanted(p, op);
			queue_run(p);
			return (1);
		}
	}
	return (0);
}

int
pool_release(struct pool *p, uint64_t holdid, uint32_t owner)
{
	struct pool_hold	*h, key;

	/* Hold ids are unique: one lookup, however many are held. */
	key.holdid = holdid;
	if ((h = RB_FIND(pool_hold_tree, &p->hold_tree, &key)) == NULL ||
	    h->owner != owner)
		return (-1);
	hold_drop(p, h);
	queue_run(p);
	return (0);
}

void
pool_release_owner(struct pool *p, uint32_t owner)
{
	struct pool_hold	*h, *ht;
	struct pool_waiter	*w, *wt;

	TAILQ_FOREACH_SAFE(w, &p->waiters, entry, wt)
		if (w->owner == owner)
			waiter_free(p, w);
	drop_unwanted_all(p);
	TAILQ_FOREACH_SAFE(h, &p->holds, entry, ht)
		if (h->owner == owner)
			hold_drop(p, h);
	queue_run(p);
}

/*
 * Control.
 */

void
pool_start(struct pool *p)
{
	struct pool_model	*pm;

	p->starting = 1;
	TAILQ_FOREACH(pm, &p->models, entry)
		if (!pm->plan.lazy && !pm->removed)
			pool_load(p, pm->plan.name, NULL, NULL);
	p->starting = 0;
}

int
pool_load(struct pool *p, const char *model, pool_load_cb cb, void *arg)
{
	struct pool_model	*pm;
	struct pool_op		*op;

	if ((pm = find_model(p, model)) == NULL)
		return (-1);
	if (p->stopping) {
		if (cb != NULL)
			cb(arg, 0, "agency is stopping");
		return (0);
	}
	pm->unloaded = 0;
	if ((op = pm->idle_op) != NULL) {
		/* A replace is pending: wait for the new plan's process. */
		op->want_load = 1;
	} else if ((op = pm->load_op) == NULL || op_doomed(p, op)) {
		if (pm->state == STATE_READY && pm->pid != 0 &&
		    pm->unload_pending == 0) {
			if (cb != NULL)
				cb(arg, 1, NULL);
			return (0);
		}
		if ((op = queue_load(p, pm)) == NULL) {
			if (cb != NULL)
				cb(arg, 0, "out of memory");
			return (0);
		}
	}
	/* Asked for: not a request's load to drop when they leave. */
	op->by_request = 0;
	if (p->starting)
		op->cause = CHANGE_START;
	if (cb != NULL && op_add_done(op, cb, NULL, arg) == -1)
		cb(arg, 0, "out of memory");
	queue_run(p);
	return (0);
}

/* The loads of pm that have started: an unload or a remove ends them. */
static void
doom_running_load(struct pool *p, struct pool_model *pm)
{
	struct pool_op	*op;

	if ((op = running_op(p, pm)) != NULL && op->kind == OP_LOAD)
		load_doom(p, op);
}

int
pool_unload(struct pool *p, const char *model, pool_done_cb done, void *arg)
{
	struct pool_model	*pm;
	struct pool_op		*op;

	if ((pm = find_model(p, model)) == NULL)
		return (-1);
	pm->unloaded = 1;
	pm->stop_gen++;
	timer_cancel(p, &pm->restart_timer);
	if (pm->state == STATE_STOPPED)
		/* nothing to stop: unloaded now, as status shows it */
		set_state_why(pm, STATE_STOPPED, NULL, CHANGE_UNLOAD, NULL);
	p->running++;		/* answers go out, nothing starts yet */
	doom_running_load(p, pm);
	p->running--;
	if ((op = op_new(p, OP_UNLOAD, pm)) == NULL) {
		if (done != NULL)
			done(arg);
		return (0);
	}
	pm->unload_pending++;
	if (done != NULL && op_add_done(op, NULL, done, arg) == -1)
		done(arg);
	queue_run(p);
	return (0);
}

int
pool_remove(struct pool *p, const char *model, pool_done_cb done, void *arg)
{
	struct pool_model	*pm;
	struct pool_op		*op, *rop;
	struct pool_waiter	*w, *wt;

	if ((pm = find_model(p, model)) == NULL)
		return (-1);
	if ((op = op_alloc(p, OP_REMOVE, pm)) == NULL)
		return (-1);
	msgf(op->error, sizeof(op->error), "%s is no longer served",
	    pm->plan.name);
	plog(p, LOG_INFO, "%s: no longer served, stopping it once idle",
	    pm->plan.label);
	pm->removed = 1;
	pm->unloaded = 1;	/* no restart, no reload */
	pm->stop_gen++;		/* loads of it are doomed */
	timer_cancel(p, &pm->restart_timer);
	timer_cancel(p, &pm->idle_timer);
	mode_update(p);

	TAILQ_FOREACH_SAFE(w, &p->waiters, entry, wt) {
		uint64_t	 reqid = w->reqid;

		if (w->pm != pm)
			continue;
		waiter_free(p, w);
		refuse(p, reqid, REFUSE_UNKNOWN_MODEL, 0, "%s is not served",
		    pm->plan.name);
	}
	if ((rop = pm->idle_op) != NULL && rop->phase == PH_QUEUED) {
		/* A replace that has not started: the remove takes over. */
		if (rop->queued)
			TAILQ_REMOVE(&p->queue, rop, entry);
		TAILQ_CONCAT(&op->dones, &rop->dones, entry);
		op_free(p, rop);
	}
	/* A replace under way sees removed and does not load again. */
	pm->idle_op = op;

	p->running++;
	doom_running_load(p, pm);
	p->running--;

	if (done != NULL && op_add_done(op, NULL, done, arg) == -1)
		done(arg);
	if (pm->in_progress == 0)
		op_enqueue(p, op);
	queue_run(p);
	return (0);
}

int
pool_replace(struct pool *p, const struct pool_plan *plan)
{
	struct pool_model	*pm;
	struct pool_op		*op, *run;

	if ((pm = find_model(p, plan->name)) == NULL)
		return (-1);
	/* The limits are not the process's: they apply at once. */
	pm->plan.queue_timeout = plan->queue_timeout;
	pm->plan.max_queue = plan->max_queue;
	pm->plan.max_requests = plan->max_requests;
	mode_update(p);
	if (pm->idle_op != NULL) {
		/* Not swapped yet: the newest plan wins. */
		pm->next_plan = *plan;
		queue_run(p);
		return (0);
	}
	run = running_op(p, pm);
	if (pm->pid == 0 && !(run != NULL && run->kind == OP_LOAD &&
	    run->phase == PH_SPAWNING)) {
		/* Nothing runs the old plan: swap it now. */
		pm->plan = *plan;
		pm->backoff = 0;
		plog(p, LOG_INFO, "%s: new configuration", pm->plan.label);
		if (pm->state == STATE_FAILED)
			set_state_why(pm, STATE_STOPPED, NULL, CHANGE_RELOAD,
			    NULL);
		else
			p->ops->changed(p->ctx, &pm->plan);
		if (!pm->plan.lazy && !pm->unloaded && !p->stopping &&
		    (pm->load_op == NULL || op_doomed(p, pm->load_op))) {
			if ((op = queue_load(p, pm)) == NULL)
				return (-1);
			op->cause = CHANGE_RELOAD;
		}
		queue_run(p);
		return (0);
	}
	if ((op = op_alloc(p, OP_REPLACE, pm)) == NULL)
		return (-1);
	pm->next_plan = *plan;
	pm->idle_op = op;
	timer_cancel(p, &pm->idle_timer);
	plog(p, LOG_INFO, "%s: new configuration, restarting it once idle",
	    pm->plan.label);
	if (pm->in_progress == 0)
		op_enqueue(p, op);
	queue_run(p);
	return (0);
}

int
pool_set_limits(struct pool *p, const struct pool_plan *plan)
{
	struct pool_model	*pm;

	if ((pm = find_model(p, plan->name)) == NULL)
		return (-1);
	pm->plan.queue_timeout = pm->next_plan.queue_timeout =
	    plan->queue_timeout;
	pm->plan.max_queue = pm->next_plan.max_queue = plan->max_queue;
	pm->plan.max_requests = pm->next_plan.max_requests =
	    plan->max_requests;
	mode_update(p);
	queue_run(p);
	return (0);
}

int
pool_restart(struct pool *p, const char *model, pool_done_cb done,
    void *arg)
{
	struct pool_model	*pm;
	struct pool_op		*op;

	if ((pm = find_model(p, model)) == NULL)
		return (-1);
	if ((op = pm->idle_op) != NULL) {
		/* A pending replace restarts it. */
		if (done != NULL && op_add_done(op, NULL, done, arg) == -1)
			done(arg);
		return (0);
	}
	if (p->stopping || pm->state != STATE_READY || pm->pid == 0 ||
	    pm->unload_pending > 0) {
		if (done != NULL)
			done(arg);
		return (0);
	}
	if ((op = pm->load_op) == NULL || op->kind != OP_RESTART ||
	    op->phase != PH_QUEUED || op_doomed(p, op)) {
		if ((op = op_new(p, OP_RESTART, pm)) == NULL) {
			if (done != NULL)
				done(arg);
			return (0);
		}
		/* Requests that come before it starts still get the old
		 * process; pool_load waits for the new one. */
		pm->load_op = op;
	}
	if (done != NULL && op_add_done(op, NULL, done, arg) == -1)
		done(arg);
	queue_run(p);
	return (0);
}

static void
stop_grace_cb(void *arg)
{
	struct pool		*p = arg;
	struct pool_model	*pm;

	p->stop_timer = NULL;
	p->killed_all = 1;
	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm->pid == 0)
			continue;
		plog(p, LOG_WARNING, "%s: still running %ds after SIGTERM, "
		    "sending SIGKILL", pm->plan.label, POOL_STOP_GRACE / 1000);
		p->ops->kill(p->ctx, pm->pid, SIGKILL);
	}
}

static void
stopall_check(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm;

	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm->state != STATE_STOPPED)
			set_state(pm, STATE_STOPPED, NULL);
		if (pm->pid != 0)
			return;
	}
	timer_cancel(p, &p->stop_timer);
	plog(p, LOG_INFO, "every model process has exited");
	op_finish(p, op);
}

void
pool_stop_all(struct pool *p, pool_done_cb done, void *arg)
{
	struct pool_model	*pm;
	struct pool_waiter	*w;
	struct pool_op		*op;
	uint64_t		 reqid;

	if (p->stopping) {
		TAILQ_FOREACH(op, &p->queue, entry)
			if (op->kind == OP_STOPALL)
				break;
		if (op == NULL || (done != NULL &&
		    op_add_done(op, NULL, done, arg) == -1))
			if (done != NULL)
				done(arg);
		return;
	}
	p->stopping = 1;
	plog(p, LOG_INFO, "stopping every model");

	while ((w = TAILQ_FIRST(&p->waiters)) != NULL) {
		reqid = w->reqid;
		waiter_free(p, w);
		refuse(p, reqid, REFUSE_STOPPING, 0, "agency is stopping");
	}
	/* Loads that started end: one that waits ends now, one whose
	 * process runs ends with it. */
	p->running++;
 again:
	TAILQ_FOREACH(op, &p->queue, entry) {
		if (op->kind != OP_LOAD || op->phase == PH_QUEUED ||
		    op->answered)
			continue;
		if (op->phase == PH_ROOM || op->phase == PH_WAITMEM) {
			load_doom(p, op);
			goto again;
		}
		if (op->phase == PH_PROBING)
			load_doom(p, op);
	}
	p->running--;
	TAILQ_FOREACH(pm, &p->models, entry) {
		timer_cancel(p, &pm->idle_timer);
		timer_cancel(p, &pm->restart_timer);
		if (pm->grace_timer != NULL) {
			/* Exited just before: not a failure. */
			timer_cancel(p, &pm->grace_timer);
			plog(p, LOG_INFO, "%s (just before stopping)",
			    pm->error);
		}
		if (pm->pid != 0)
			p->ops->kill(p->ctx, pm->pid, SIGTERM);
		if (pm->state != STATE_STOPPED)
			set_state(pm, STATE_STOPPED, NULL);
	}
	p->stop_timer = p->ops->timer_add(p->ctx, POOL_STOP_GRACE,
	    stop_grace_cb, p);

	if ((op = op_new(p, OP_STOPALL, NULL)) == NULL) {
		if (done != NULL)
			done(arg);
		return;
	}
	if (done != NULL && op_add_done(op, NULL, done, arg) == -1)
		done(arg);
	queue_run(p);
}

int
pool_stopping(struct pool *p)
{
	return (p->stopping);
}

/*
 * Status.
 */

size_t
pool_count(struct pool *p)
{
	return (p->nmodels);
}

/* How long the model's oldest waiting request has waited; -1: none. */
static int64_t
oldest_wait(struct pool *p, struct pool_model *pm)
{
	struct pool_waiter	*w;

	if (pm->nwait > 0)
		TAILQ_FOREACH(w, &p->waiters, entry)
			if (w->pm == pm)	/* the first is the oldest */
				return (now(p) - w->since);
	return (-1);
}

/* What the model's waiting requests wait for. */
static int
model_waiting(struct pool *p, struct pool_model *pm)
{
	struct pool_op	*op;

	TAILQ_FOREACH(op, &p->queue, entry) {
		if (op->pm != pm || !op_waiting(op))
			continue;
		return (op->phase == PH_WAITMEM ? WAIT_MEMORY : WAIT_TURN);
	}
	return (pm->nslot > 0 ? WAIT_SLOT : WAIT_NONE);
}

static void
fill_status(struct pool *p, struct pool_model *pm, struct proto_status *st)
{
	memset(st, 0, sizeof(*st));
	strlcpy(st->model, pm->plan.name, sizeof(st->model));
	st->state = pm->state;
	/* Refused until a load, unlike a lazy model that is stopped. */
	if (pm->state == STATE_STOPPED && pm->unloaded && !pm->removed)
		st->state = STATE_UNLOADED;
	st->lazy = pm->plan.lazy;
	if (pm->state == STATE_FAILED)
		strlcpy(st->error, pm->error, sizeof(st->error));
	st->in_progress = pm->in_progress;
	st->last_used = pm->last_used;
	if (pm->state == STATE_LOADING || pm->state == STATE_READY) {
		st->pid = pm->pid;
		st->port = pm->port;
	}
	st->need = pm->plan.need;
	st->need_from = pm->plan.need_from;
	st->requests = pm->requests;
	st->loads = pm->loads;
	st->restarts = pm->restarts;
	st->loaded_at = pm->loaded_at;
	st->evictions = pm->evictions;
	st->load_failures = pm->load_failures;
	st->load_ms_sum = pm->load_ms_sum;
	memcpy(st->load_hist, pm->load_hist, sizeof(st->load_hist));
	st->queued = pm->nwait;
	st->oldest_wait = oldest_wait(p, pm);
	st->waiting = model_waiting(p, pm);
	st->max_requests = pm->plan.max_requests;
	st->idle_timeout = pm->plan.idle_timeout;
	st->restart_at = pm->restart_at;	/* -1 unless FAILED */
	st->change = pm->change;
	strlcpy(st->change_for, pm->change_for, sizeof(st->change_for));
	st->nload_ms = pm->nrecent;
	memcpy(st->load_ms, pm->recent, sizeof(st->load_ms));
}

int
pool_status(struct pool *p, size_t i, struct proto_status *st)
{
	struct pool_model	*pm;

	TAILQ_FOREACH(pm, &p->models, entry)
		if (i-- == 0)
			break;
	if (pm == NULL)
		return (-1);
	fill_status(p, pm, st);
	return (0);
}

int
pool_status_name(struct pool *p, const char *name, struct proto_status *st)
{
	struct pool_model	*pm;

	if ((pm = find_model(p, name)) == NULL)
		return (-1);
	fill_status(p, pm, st);
	return (0);
}

const struct pool_plan *
pool_plan(struct pool *p, const char *model)
{
	struct pool_model	*pm;

	if ((pm = find_model(p, model)) == NULL)
		return (NULL);
	if (pm->idle_op != NULL)	/* a pending replace */
		return (&pm->next_plan);
	return (&pm->plan);
}

/* The histogram bucket of a load that took ms. */
size_t
pool_load_bucket(int64_t ms)
{
	static const int64_t	 bounds[] = PROTO_LOAD_BOUNDS;
	size_t			 i;

	for (i = 0; i < PROTO_LOAD_NBOUNDS; i++)
		if (ms <= bounds[i])
			break;
	return (i);
}

void
pool_stats(struct pool *p, struct pool_stats *st)
{
	*st = p->stats;
}

/* A reload's new memory, port and queue settings; they apply from the
 * next decision on (a fit test, a port choice, a request). */
void
pool_set_settings(struct pool *p, const struct pool_settings *set)
{
	p->set = *set;
	p->recheck = 1;
	queue_run(p);
}

/*
 * Planning: what pool_acquire would do now, in words.
 */

struct explain {
	void		 (*line)(void *, const char *);
	void		*arg;
	char		 buf[PROTO_MSG_MAX];
};

static void	 say(struct explain *, const char *, ...)
		    __attribute__((__format__ (printf, 2, 3)));

static void
say(struct explain *e, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(e->buf, sizeof(e->buf), fmt, ap);
	va_end(ap);
	e->line(e->arg, e->buf);
}

/* The queue would take one more, or the line that says why not. */
static int
explain_room_in_queue(struct pool *p, struct pool_model *pm,
    struct explain *e)
{
	if (p->set.max_queue > 0 && p->nqueued >= p->set.max_queue) {
		say(e, "%s: refused: the queue is full (%u requests wait, max "
		    "queue %u)", pm->plan.name, p->nqueued, p->set.max_queue);
		return (0);
	}
	if (pm->plan.max_queue > 0 && pm->nqueued >= pm->plan.max_queue) {
		say(e, "%s: refused: its queue is full (%u requests wait, max "
		    "queue %u)", pm->plan.name, pm->nqueued,
		    pm->plan.max_queue);
		return (0);
	}
	return (1);
}

/* A lazy model that is not loaded: room, as make_room would make it. */
static int
explain_room(struct pool *p, struct pool_model *pm, struct explain *e)
{
	struct pool_view	*v;
	struct pool_model	*victim;
	struct mem_snapshot	 mem, *memp = &mem;
	int64_t			 reserve = 0, used, t = now(p);
	ssize_t			 vi;
	size_t			 self = 0, n = p->nmodels, tries;
	int			 room, evicted = 0;
	char			 fig[PROTO_MSG_MAX], size[32], who[PROTO_MSG_MAX];

	if (p->ops->memory(p->ctx, &mem) == -1)
		memp = NULL;
	else
		reserve = pool_reserve(p->set.reserve, mem.total);
	if ((v = pool_views(p, pm, &self)) == NULL) {
		say(e, "%s: out of memory", pm->plan.name);
		return (VERDICT_REFUSE);
	}
	/* Stop the candidates one by one, counting their memory as freed
	 * (agencyd measures it again between two). */
	for (tries = 0; tries <= n; tries++) {
		room = pool_room(v, n, self, memp, reserve, p->set.budget,
		    &vi);
		if (room != ROOM_EVICT)
			break;
		victim = model_at(p, (size_t)vi);
		format_size(v[vi].need, size, sizeof(size));
		say(e, "%s: stops %s (%s), idle, last used %llds ago",
		    pm->plan.name, victim->plan.name, size,
		    (long long)((t - v[vi].last_used) / 1000));
		if (memp != NULL)
			mem.available = mem_add(mem.available, v[vi].need);
		v[vi].state = STATE_STOPPED;
		v[vi].running = 0;
		evicted = 1;
	}
	used = views_committed(v, n, self);
	free(v);
	mem_figures(p, pm->plan.need, memp, reserve, used, fig, sizeof(fig));
	switch (room) {
	case ROOM_FITS:
		say(e, "%s: %s (%s), about %llds", pm->plan.name, evicted ?
		    "then loads" : "loads in place", fig, (long long)
		    (pool_retry_after(wait_for(p, pm))));
		return (evicted ? VERDICT_EVICT : VERDICT_LOAD);
	case ROOM_WAIT:
		if (!p->set.overcommit && p->parallel &&
		    pm->plan.queue_timeout > 0) {
			if (!explain_room_in_queue(p, pm, e))
				return (VERDICT_REFUSE);
			blockers(p, pm, who, sizeof(who));
			say(e, "%s: waits for %s to finish (%s), then loads; "
			    "about %llds", pm->plan.name, who, fig,
			    (long long)pool_retry_after(wait_for(p, pm)));
			return (VERDICT_WAIT);
		}
		/* FALLTHROUGH */
	default:
		break;
	}
	if (p->set.overcommit) {
		say(e, "%s: does not fit (%s); loads anyway (overcommit)",
		    pm->plan.name, fig);
		return (evicted ? VERDICT_EVICT : VERDICT_LOAD);
	}
	nomem_message(p, pm, memp, reserve, used, who, sizeof(who));
	say(e, "%s: refused: %s", pm->plan.name, who);
	return (VERDICT_REFUSE);
}

int
pool_explain(struct pool *p, const char *model,
    void (*line)(void *, const char *), void *arg)
{
	struct explain		 e;
	struct pool_model	*pm;
	struct pool_op		*op;
	char			 slots[32], who[PROTO_MSG_MAX];
	int64_t			 t = now(p);

	if ((pm = find_model(p, model)) == NULL)
		return (-1);
	e.line = line;
	e.arg = arg;
	if (pm->plan.max_requests > 0)
		snprintf(slots, sizeof(slots), "%u", pm->plan.max_requests);
	else
		strlcpy(slots, "no bound", sizeof(slots));
	if (p->stopping) {
		say(&e, "%s: refused: agency is stopping", pm->plan.name);
		return (VERDICT_REFUSE);
	}
	if (pm->unloaded) {
		say(&e, "%s: refused: it is not loaded; agency-ctl load %s "
		    "loads it", pm->plan.name, pm->plan.name);
		return (VERDICT_REFUSE);
	}
	if (pm->idle_op != NULL) {
		say(&e, "%s: waits for its new configuration to be loaded",
		    pm->plan.name);
		return (VERDICT_WAIT);
	}
	if (pm->state == STATE_READY && pm->pid != 0) {
		say(&e, "%s: ready on port %u, %u requests in flight (max "
		    "requests %s), %u waiting", pm->plan.name, pm->port,
		    pm->in_progress, slots, pm->nwait);
		if (slots_free(pm) && (pm->plan.queue_timeout <= 0 ||
		    (pm->nslot == 0 && !model_closed(p, pm, t)))) {
			say(&e, "%s: served at once", pm->plan.name);
			return (VERDICT_GRANT);
		}
		if (pm->plan.queue_timeout <= 0) {
			say(&e, "%s: refused: it is busy, and no request may "
			    "wait for it (429)", pm->plan.name);
			return (VERDICT_REFUSE);
		}
		if (!explain_room_in_queue(p, pm, &e))
			return (VERDICT_REFUSE);
		say(&e, "%s: waits for %s, about %ds", pm->plan.name,
		    slots_free(pm) ? "the load that needs its memory" :
		    "a slot", pool_retry_after(wait_for(p, pm)));
		return (VERDICT_WAIT);
	}
	if ((op = pm->load_op) != NULL && !op_doomed(p, op)) {
		if (op_waiting(op)) {
			if (pm->plan.queue_timeout > 0 &&
			    !explain_room_in_queue(p, pm, &e))
				return (VERDICT_REFUSE);
			if (op->phase == PH_WAITMEM) {
				blockers(p, pm, who, sizeof(who));
				say(&e, "%s: waits: its load waits for memory "
				    "held by %s", pm->plan.name, who);
			} else
				say(&e, "%s: waits: its load waits for its "
				    "turn", pm->plan.name);
			say(&e, "%s: %u requests wait with it, the oldest for "
			    "%llds; about %ds more", pm->plan.name, pm->nwait,
			    (long long)(oldest_wait(p, pm) / 1000),
			    pool_retry_after(wait_for(p, pm)));
			return (VERDICT_WAIT);
		}
		say(&e, "%s: waits for its load in progress (%llds so far)",
		    pm->plan.name, (long long)(op->spawned ?
		    (t - op->spawned_at) / 1000 : 0));
		return (VERDICT_JOIN);
	}
	if (!pm->plan.lazy) {
		say(&e, "%s: refused: it is not loaded%s%s", pm->plan.name,
		    pm->state == STATE_FAILED ? ": " : "",
		    pm->state == STATE_FAILED ? pm->error : "");
		return (VERDICT_REFUSE);
	}
	if (pm->plan.queue_timeout > 0 && !explain_room_in_queue(p, pm, &e))
		return (VERDICT_REFUSE);
	return (explain_room(p, pm, &e));
}
