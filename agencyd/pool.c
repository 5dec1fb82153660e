/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The pool of model processes.  See pool.h and DESIGN.md, "The pool".
 *
 * Every change of state (load, unload, idle unload, stop all, replace,
 * remove, restart) is an op on one FIFO.  The op at the head runs until
 * it finishes, possibly across callbacks (spawned, probe result, child
 * exit, timers); then the next one starts.  Making room is part of a lazy
 * model's load.  State is read again every time an op resumes.
 *
 * A replace or a remove waits for the model to be idle: it is the
 * model's idle_op, put on the queue only while nothing holds the model,
 * and taken off again (parked) if it finds the model busy when it
 * starts.  A replace and a restart end by turning into the model's load.
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
	struct pool_model	*victim;
	void			*timeout;	/* the load timeout */
	void			*timer;		/* grace or probe again */
	char			 error[PROTO_MSG_MAX];
	uint16_t		 bad_port;
	int			 retried;
	int			 restart;	/* a non-lazy restart */
	int			 reason;	/* refusal when it fails */
	int			 queued;	/* on the queue, not parked */
	int			 was_loaded;	/* replace: load again */
	int			 want_load;	/* replace: pool_load came */
	struct pool_dones	 dones;
};
TAILQ_HEAD(pool_ops_q, pool_op);

struct pool_waiter {
	TAILQ_ENTRY(pool_waiter) entry;
	uint64_t		 reqid;
	uint32_t		 owner;
	struct pool_op		*op;
};
TAILQ_HEAD(pool_waiters, pool_waiter);

struct pool_hold {
	TAILQ_ENTRY(pool_hold)	 entry;		/* in the order granted */
	RB_ENTRY(pool_hold)	 node;		/* by holdid */
	uint64_t		 holdid;
	uint32_t		 owner;
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
	int64_t			 loaded_at;
	uint64_t		 requests;
	uint64_t		 loads;
	uint64_t		 restarts;
	uint64_t		 evictions;
	uint64_t		 load_failures;
	uint64_t		 load_ms_sum;
	uint64_t		 load_hist[PROTO_LOAD_NBOUNDS + 1];
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
	int			 running;	/* inside queue_run */
	int			 stopping;
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
static void	 load_fail(struct pool *, struct pool_op *, const char *);
static void	 load_refused(struct pool *, struct pool_op *, const char *);
static void	 load_doom(struct pool *, struct pool_op *);
static void	 op_reload(struct pool *, struct pool_op *);
static void	 replace_swap(struct pool *, struct pool_op *);
static struct pool_op *queue_load(struct pool *, struct pool_model *);
static void	 idle_arm(struct pool_model *);
static void	 stopall_check(struct pool *, struct pool_op *);
static void	 grace_cb(void *);
static void	 msgf(char *, size_t, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));
static void	 grant(struct pool *, struct pool_model *, uint64_t,
		    uint32_t);
static void	 refuse(struct pool *, uint64_t, int, const char *, ...)
		    __attribute__((__format__ (printf, 4, 5)));

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

static void
set_state(struct pool_model *pm, enum proto_state state, const char *error)
{
	struct pool	*p = pm->pool;

	pm->state = state;
	if (error != NULL)
		strlcpy(pm->error, error, sizeof(pm->error));
	else
		pm->error[0] = '\0';
	if (state == STATE_STOPPED || state == STATE_FAILED)
		pm->port = 0;
	if (state != STATE_READY)
		timer_cancel(p, &pm->idle_timer);
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
 * (committed) plus this one stay within the budget (when set).
 */
int
pool_fits(const struct mem_snapshot *mem, int64_t reserve, int64_t budget,
    int64_t committed, int64_t need)
{
	if (mem != NULL && mem->available < need + reserve)
		return (0);
	if (budget > 0 && committed + need > budget)
		return (0);
	return (1);
}

/*
 * The ready, idle, lazy model used least recently; the first in config
 * order among equals.  -1 when every loaded model is busy or not lazy.
 */
ssize_t
pool_eviction_candidate(const struct pool_view *v, size_t n)
{
	size_t	 i;
	ssize_t	 best = -1;

	for (i = 0; i < n; i++) {
		if (v[i].state != STATE_READY || !v[i].lazy ||
		    v[i].in_progress > 0)
			continue;
		if (best == -1 || v[i].last_used < v[best].last_used)
			best = (ssize_t)i;
	}
	return (best);
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
	pm->loaded_at = -1;
	TAILQ_INSERT_TAIL(&p->models, pm, entry);
	p->nmodels++;
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

static void
queue_run(struct pool *p)
{
	struct pool_op	*op;

	if (p->running)
		return;
	p->running = 1;
	while ((op = TAILQ_FIRST(&p->queue)) != NULL &&
	    op->phase == PH_QUEUED)
		op_start(p, op);
	p->running = 0;
}

static int
op_is_head(struct pool *p, struct pool_op *op)
{
	return (op != NULL && TAILQ_FIRST(&p->queue) == op &&
	    op->phase != PH_QUEUED);
}

/* Whether a load was overtaken by an unload or by stop all. */
static int
op_doomed(struct pool *p, struct pool_op *op)
{
	return (p->stopping || op->gen != op->pm->stop_gen);
}

/*
 * Remove the op, then answer whoever waited on it: callbacks may queue
 * more, which starts once the answers are out.
 */
static void
op_finish(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;
	struct pool_waiter	*w, *wt;
	struct pool_done	*d;
	int			 running;
	int			 ready = 0, ok = 1;

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
		TAILQ_REMOVE(&p->waiters, w, entry);
		if (ready)
			grant(p, pm, w->reqid, w->owner);
		else
			refuse(p, w->reqid, op->reason, "%s", op->error);
		free(w);
	}
	if (ready)
		idle_arm(pm);
	if (op->kind == OP_REMOVE)
		model_free(p, pm);
	while ((d = TAILQ_FIRST(&op->dones)) != NULL) {
		TAILQ_REMOVE(&op->dones, d, entry);
		if (d->load != NULL)
			d->load(d->arg, ok, ok ? NULL : op->error);
		else if (d->done != NULL)
			d->done(d->arg);
		free(d);
	}
	op_free(p, op);
	p->running = running;
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

	timer_cancel(p, &pm->restart_timer);
	timer_cancel(p, &pm->grace_timer);
	timer_cancel(p, &pm->idle_timer);
	if (pm->pid == 0) {
		if (pm->state != state)
			set_state(pm, state, NULL);
		return (0);
	}
	set_state(pm, state, NULL);
	op->phase = PH_EXITING;
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
refuse(struct pool *p, uint64_t reqid, int reason, const char *fmt, ...)
{
	char	 msg[PROTO_MSG_MAX];
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->stats.refusals++;
	p->ops->refused(p->ctx, reqid, reason, msg);
}

static void
grant(struct pool *p, struct pool_model *pm, uint64_t reqid, uint32_t owner)
{
	struct pool_hold	*h;

	if ((h = calloc(1, sizeof(*h))) == NULL) {
		refuse(p, reqid, REFUSE_LOAD_FAILED, "out of memory");
		return;
	}
	h->holdid = ++p->next_id;
	h->owner = owner;
	h->pm = pm;
	TAILQ_INSERT_TAIL(&p->holds, h, entry);
	RB_INSERT(pool_hold_tree, &p->hold_tree, h);
	pm->in_progress++;
	pm->requests++;
	pm->last_used = now(p);
	timer_cancel(p, &pm->idle_timer);
	p->stats.grants++;
	p->ops->granted(p->ctx, reqid, h->holdid, &pm->plan, pm->port);
}

static int
wait_on(struct pool *p, struct pool_op *op, uint64_t reqid, uint32_t owner)
{
	struct pool_waiter	*w;

	if ((w = calloc(1, sizeof(*w))) == NULL) {
		refuse(p, reqid, REFUSE_LOAD_FAILED, "out of memory");
		return (-1);
	}
	w->reqid = reqid;
	w->owner = owner;
	w->op = op;
	TAILQ_INSERT_TAIL(&p->waiters, w, entry);
	return (0);
}

static void
hold_drop(struct pool *p, struct pool_hold *h)
{
	struct pool_model	*pm = h->pm;

	TAILQ_REMOVE(&p->holds, h, entry);
	RB_REMOVE(pool_hold_tree, &p->hold_tree, h);
	free(h);
	if (pm->in_progress > 0)
		pm->in_progress--;
	pm->last_used = now(p);
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

static struct pool_op *
queue_load(struct pool *p, struct pool_model *pm)
{
	struct pool_op	*op;

	if ((op = op_new(p, OP_LOAD, pm)) == NULL)
		return (NULL);
	pm->load_op = op;
	if (pm->unload_pending == 0 && pm->state != STATE_LOADING &&
	    pm->state != STATE_READY)
		set_state(pm, STATE_LOADING, NULL);
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
	plog(p, LOG_INFO, "%s: restarting in %llds", pm->plan.label,
	    (long long)delay / 1000);
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

static int64_t
committed(struct pool *p, struct pool_model *self)
{
	struct pool_model	*pm;
	int64_t			 sum = 0;

	TAILQ_FOREACH(pm, &p->models, entry)
		if (pm != self && (pm->state == STATE_READY || pm->pid != 0))
			sum += pm->plan.need;
	return (sum);
}

static struct pool_model *
candidate(struct pool *p, struct pool_model *self, int64_t *freeable)
{
	struct pool_view	*v;
	struct pool_model	*pm;
	ssize_t			 best;
	size_t			 i = 0;

	*freeable = 0;
	if ((v = reallocarray(NULL, p->nmodels, sizeof(*v))) == NULL)
		return (NULL);
	TAILQ_FOREACH(pm, &p->models, entry) {
		v[i].state = pm == self ? STATE_LOADING : pm->state;
		v[i].lazy = pm->plan.lazy;
		v[i].in_progress = pm->in_progress;
		v[i].last_used = pm->last_used;
		if (pm != self && pm->state == STATE_READY && pm->plan.lazy &&
		    pm->in_progress == 0)
			*freeable += pm->plan.need;
		i++;
	}
	best = pool_eviction_candidate(v, i);
	free(v);
	if (best == -1)
		return (NULL);
	TAILQ_FOREACH(pm, &p->models, entry)
		if (best-- == 0)
			return (pm);
	return (NULL);
}

static void
nomem_message(struct pool *p, struct pool_model *self,
    const struct mem_snapshot *mem, int64_t reserve, int64_t used,
    char *buf, size_t len)
{
	struct pool_model	*pm;
	char			 need[32], avail[32], res[32], bud[32], u[32];
	const char		*sep = ": ";

	format_size(self->plan.need, need, sizeof(need));
	snprintf(buf, len, "not enough memory for %s (needs %s",
	    self->plan.name, need);
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
	if (p->set.budget > 0 && used + self->plan.need > p->set.budget) {
		format_size(p->set.budget, bud, sizeof(bud));
		format_size(used, u, sizeof(u));
		strlcat(buf, ", budget ", len);
		strlcat(buf, bud, len);
		strlcat(buf, " of which ", len);
		strlcat(buf, u, len);
		strlcat(buf, " in use", len);
	}
	strlcat(buf, ")", len);
	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm == self || pm->state != STATE_READY)
			continue;
		strlcat(buf, sep, len);
		strlcat(buf, pm->plan.name, len);
		if (pm->in_progress > 0)
			strlcat(buf, " (busy)", len);
		else if (!pm->plan.lazy)
			strlcat(buf, " (not lazy)", len);
		else
			strlcat(buf, " (kept)", len);
		sep = ", ";
	}
}

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
	p->stats.load_failures++;
	pm->load_failures++;
	if (pm->removed)
		set_state(pm, STATE_STOPPED, NULL);	/* draining */
	else
		set_state(pm, STATE_FAILED, op->error);
	plog(p, doomed ? LOG_INFO : LOG_ERR, "%s", op->error);
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
	set_state(pm, STATE_STOPPED, NULL);
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
	switch (op->phase) {
	case PH_PROBING:
		kill_own(p, op, !p->stopping);
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
	kill_own(p, op, 1);
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

/* 1: it fits now; 0: waiting for an eviction; -1: the load ended. */
static int
make_room(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm, *victim;
	struct mem_snapshot	 mem, *memp = &mem;
	int64_t			 reserve = 0, used, freeable;
	char			 msg[PROTO_MSG_MAX];

	if (p->ops->memory(p->ctx, &mem) == -1) {
		plog(p, LOG_WARNING, "%s: available memory unknown",
		    pm->plan.label);
		memp = NULL;
	} else
		reserve = pool_reserve(p->set.reserve, mem.total);
	used = committed(p, pm);
	if (pool_fits(memp, reserve, p->set.budget, used, pm->plan.need))
		return (1);

	victim = candidate(p, pm, &freeable);
	/* By need the budget is exact: stop nothing in vain. */
	if (victim != NULL && p->set.budget > 0 &&
	    used - freeable + pm->plan.need > p->set.budget)
		victim = NULL;
	if (victim != NULL) {
		plog(p, LOG_INFO, "%s: stopping it to make room for %s",
		    victim->plan.label, pm->plan.label);
		p->stats.evictions++;
		victim->evictions++;
		set_state(victim, STATE_STOPPED, NULL);
		op->victim = victim;
		op->phase = PH_EVICTING;
		p->ops->kill(p->ctx, victim->pid, SIGTERM);
		op->timer = p->ops->timer_add(p->ctx, POOL_STOP_GRACE,
		    grace_cb, op);
		return (0);
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
	if (pm->plan.lazy && make_room(p, op) != 1)
		return;
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
		if (pm->state != STATE_LOADING)
			set_state(pm, STATE_LOADING, NULL);
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
			set_state(pm, STATE_STOPPED, NULL);
		else
			p->ops->changed(p->ctx, &pm->plan);
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
		msgf(op->error, sizeof(op->error), "%s is not loaded",
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
	struct pool_op		*op = TAILQ_FIRST(&p->queue);
	struct pool_model	*pm;
	char			 msg[PROTO_MSG_MAX];

	if (op == NULL || op->kind != OP_LOAD || op->phase != PH_SPAWNING ||
	    op->spawnid != spawnid) {
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
	struct pool_op		*op = TAILQ_FIRST(&p->queue);
	struct pool_model	*pm;

	if (op == NULL || op->kind != OP_LOAD || op->phase != PH_PROBING ||
	    loadid == 0 || op->loadid != loadid)
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
	msgf(op->error, sizeof(op->error),
	    "%s answered %d to the readiness request: %s", pm->plan.label,
	    status, body);
	kill_own(p, op, 1);
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
	op = TAILQ_FIRST(&p->queue);
	if (op != NULL && op->phase != PH_QUEUED) {
		switch (op->kind) {
		case OP_LOAD:
			if (op->phase == PH_EVICTING && op->victim == pm) {
				timer_cancel(p, &op->timer);
				op->victim = NULL;
				pool_describe_exit(wstatus, desc, sizeof(desc));
				plog(p, LOG_INFO, "%s %s", pm->plan.label,
				    desc);
				load_step(p, op);
				return;
			}
			if (op->pm == pm && (op->phase == PH_PROBING ||
			    op->phase == PH_KILLING)) {
				load_exit(p, op, wstatus, addr_in_use);
				return;
			}
			break;
		case OP_UNLOAD:
		case OP_IDLE:
		case OP_REPLACE:
		case OP_REMOVE:
		case OP_RESTART:
			if (op->pm == pm && op->phase == PH_EXITING) {
				timer_cancel(p, &op->timer);
				pool_describe_exit(wstatus, desc, sizeof(desc));
				plog(p, LOG_INFO, "%s %s", pm->plan.label,
				    desc);
				op_stopped(p, op);
				return;
			}
			break;
		default:
			break;
		}
	}
	unexpected_exit(p, pm, wstatus);
	if (op != NULL && op->kind == OP_STOPALL && op->phase == PH_REAPING)
		stopall_check(p, op);
}

/*
 * Requests.
 */

void
pool_acquire(struct pool *p, const char *model, uint64_t reqid,
    uint32_t owner)
{
	struct pool_model	*pm;
	struct pool_op		*op;

	if ((pm = find_model(p, model)) == NULL) {
		refuse(p, reqid, REFUSE_UNKNOWN_MODEL, "%s is not served",
		    model);
		return;
	}
	if (p->stopping) {
		refuse(p, reqid, REFUSE_STOPPING, "agency is stopping");
		return;
	}
	if (pm->unloaded) {
		refuse(p, reqid, REFUSE_NOT_LOADED, "%s is not loaded",
		    pm->plan.name);
		return;
	}
	if (pm->idle_op != NULL) {
		/* A replace is pending: the new plan's process, not the old. */
		if (wait_on(p, pm->idle_op, reqid, owner) == 0)
			queue_run(p);
		return;
	}
	if (pm->state == STATE_READY && pm->pid != 0) {
		grant(p, pm, reqid, owner);
		return;
	}
	if ((op = pm->load_op) != NULL && !op_doomed(p, op)) {
		wait_on(p, op, reqid, owner);
		return;
	}
	if (!pm->plan.lazy) {
		/* Its restart, if any, is on a timer. */
		if (pm->state == STATE_FAILED)
			refuse(p, reqid, REFUSE_NOT_LOADED,
			    "%s is not loaded: %s", pm->plan.name, pm->error);
		else
			refuse(p, reqid, REFUSE_NOT_LOADED,
			    "%s is not loaded", pm->plan.name);
		return;
	}
	if ((op = queue_load(p, pm)) == NULL) {
		refuse(p, reqid, REFUSE_LOAD_FAILED, "out of memory");
		return;
	}
	if (wait_on(p, op, reqid, owner) == 0)
		queue_run(p);
}

int
pool_withdraw(struct pool *p, uint64_t reqid, uint32_t owner)
{
	struct pool_waiter	*w;

	TAILQ_FOREACH(w, &p->waiters, entry) {
		if (w->reqid == reqid && w->owner == owner) {
			TAILQ_REMOVE(&p->waiters, w, entry);
			free(w);
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

	TAILQ_FOREACH_SAFE(w, &p->waiters, entry, wt) {
		if (w->owner == owner) {
			TAILQ_REMOVE(&p->waiters, w, entry);
			free(w);
		}
	}
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

	TAILQ_FOREACH(pm, &p->models, entry)
		if (!pm->plan.lazy && !pm->removed)
			pool_load(p, pm->plan.name, NULL, NULL);
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
	if (cb != NULL && op_add_done(op, cb, NULL, arg) == -1)
		cb(arg, 0, "out of memory");
	queue_run(p);
	return (0);
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
	if (op_is_head(p, pm->load_op) && pm->load_op->kind == OP_LOAD)
		load_doom(p, pm->load_op);
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
	struct pool_op		*op, *rop, *head;
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

	TAILQ_FOREACH_SAFE(w, &p->waiters, entry, wt) {
		if (w->op->pm != pm)
			continue;
		TAILQ_REMOVE(&p->waiters, w, entry);
		refuse(p, w->reqid, REFUSE_UNKNOWN_MODEL, "%s is not served",
		    pm->plan.name);
		free(w);
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

	head = TAILQ_FIRST(&p->queue);
	if (head != NULL && head->pm == pm && head->kind == OP_LOAD &&
	    head->phase != PH_QUEUED)
		load_doom(p, head);

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
	struct pool_op		*op, *head;

	if ((pm = find_model(p, plan->name)) == NULL)
		return (-1);
	if (pm->idle_op != NULL) {
		/* Not swapped yet: the newest plan wins. */
		pm->next_plan = *plan;
		return (0);
	}
	head = TAILQ_FIRST(&p->queue);
	if (pm->pid == 0 && !(head != NULL && head->pm == pm &&
	    head->kind == OP_LOAD && head->phase == PH_SPAWNING)) {
		/* Nothing runs the old plan: swap it now. */
		pm->plan = *plan;
		pm->backoff = 0;
		plog(p, LOG_INFO, "%s: new configuration", pm->plan.label);
		if (pm->state == STATE_FAILED)
			set_state(pm, STATE_STOPPED, NULL);
		else
			p->ops->changed(p->ctx, &pm->plan);
		if (!pm->plan.lazy && !pm->unloaded && !p->stopping &&
		    (pm->load_op == NULL || op_doomed(p, pm->load_op))) {
			if (queue_load(p, pm) == NULL)
				return (-1);
			queue_run(p);
		}
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
		TAILQ_REMOVE(&p->waiters, w, entry);
		refuse(p, w->reqid, REFUSE_STOPPING, "agency is stopping");
		free(w);
	}
	op = TAILQ_FIRST(&p->queue);
	if (op != NULL && op->kind == OP_LOAD && op->phase != PH_QUEUED)
		load_doom(p, op);
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

int
pool_status(struct pool *p, size_t i, struct proto_status *st)
{
	struct pool_model	*pm;

	TAILQ_FOREACH(pm, &p->models, entry)
		if (i-- == 0)
			break;
	if (pm == NULL)
		return (-1);
	memset(st, 0, sizeof(*st));
	strlcpy(st->model, pm->plan.name, sizeof(st->model));
	st->state = pm->state;
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
	st->requests = pm->requests;
	st->loads = pm->loads;
	st->restarts = pm->restarts;
	st->loaded_at = pm->loaded_at;
	st->evictions = pm->evictions;
	st->load_failures = pm->load_failures;
	st->load_ms_sum = pm->load_ms_sum;
	memcpy(st->load_hist, pm->load_hist, sizeof(st->load_hist));
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

/* A reload's new memory and port settings; they apply from the next
 * decision on (a fit test, a port choice). */
void
pool_set_settings(struct pool *p, const struct pool_settings *set)
{
	p->set = *set;
}
