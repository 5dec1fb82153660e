/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The pool's records (pool_priv.h): a model's state and why it changed,
 * the lookups, and the ops of the queue as data (made, queued, parked,
 * freed); the pool's log, clock and timers through its ops.  Nothing
 * here runs an op or answers a request.
 *
 * It calls no other file of the pool.
 *
 * Calls: none.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pool_priv.h"

void
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
void
pmsgf(char *buf, size_t len, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

int64_t
pnow(struct pool *p)
{
	return (p->ops->now(p->ctx));
}

void
ptimer_cancel(struct pool *p, void **t)
{
	if (*t != NULL) {
		p->ops->timer_del(p->ctx, *t);
		*t = NULL;
	}
}


/* Why a model goes to state, when its caller does not say. */
int
pm_change_default(const struct pool_model *pm, enum proto_state state)
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


void
pm_set_state(struct pool_model *pm, enum proto_state state, const char *error)
{
	pm_set_state_why(pm, state, error, pm_change_default(pm, state), NULL);
}

void
pm_set_state_why(struct pool_model *pm, enum proto_state state,
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
		ptimer_cancel(p, &pm->idle_timer);
	/* What holds memory changed: a load waiting for it looks again. */
	p->recheck = p->ahead = 1;
	p->ops->changed(p->ctx, &pm->plan);
}

struct pool_model *
pm_find(struct pool *p, const char *name)
{
	struct pool_model	*pm;

	TAILQ_FOREACH(pm, &p->models, entry)
		if (!pm->removed && strcmp(pm->plan.name, name) == 0)
			return (pm);
	return (NULL);
}

struct pool_model *
pm_by_pid(struct pool *p, pid_t pid)
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
struct pool_op *
pm_running_op(struct pool *p, struct pool_model *pm)
{
	struct pool_op	*op;

	TAILQ_FOREACH(op, &p->queue, entry)
		if (op->pm == pm && op->phase != PH_QUEUED)
			return (op);
	return (NULL);
}

/* Whether some model may wait: else the pool is the reference's. */
void
parallel_update(struct pool *p)
{
	struct pool_model	*pm;

	p->recheck = p->ahead = 1;
	TAILQ_FOREACH(pm, &p->models, entry) {
		if (!pm->removed && pm->plan.queue_timeout > 0) {
			p->parallel = 1;
			return;
		}
	}
	p->parallel = 0;
}

/* A new plan, swapped in while nothing runs the old one. */
void
pm_new_plan(struct pool_model *pm, const struct pool_plan *plan)
{
	struct pool	*p = pm->pool;

	pm->plan = *plan;
	pm->backoff = 0;
	plog(p, LOG_INFO, "%s: new configuration", pm->plan.label);
	/* A failure was the old plan's. */
	if (pm->state == STATE_FAILED)
		pm_set_state_why(pm, STATE_STOPPED, NULL, CHANGE_RELOAD, NULL);
	else
		p->ops->changed(p->ctx, &pm->plan);
}

void
op_free(struct pool *p, struct pool_op *op)
{
	struct pool_done	*d;
	struct pool_model	*pm;

	/* (only pool_free frees a load that still waits for exits) */
	if (op->nvictims > 0)
		TAILQ_FOREACH(pm, &p->models, entry)
			if (pm->evictor == op)
				pm->evictor = NULL;

	ptimer_cancel(p, &op->timeout);
	ptimer_cancel(p, &op->timer);
	while ((d = TAILQ_FIRST(&op->dones)) != NULL) {
		TAILQ_REMOVE(&op->dones, d, entry);
		free(d);
	}
	free(op);
}

/* An op that is not on the queue yet. */
struct pool_op *
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
	op->since = pnow(p);
	if (pm != NULL)
		op->gen = pm->stop_gen;
	TAILQ_INIT(&op->dones);
	return (op);
}

void
op_enqueue(struct pool *p, struct pool_op *op)
{
	TAILQ_INSERT_TAIL(&p->queue, op, entry);
	op->queued = 1;
}

/* Off the queue until the model is idle again. */
void
op_park(struct pool *p, struct pool_op *op)
{
	TAILQ_REMOVE(&p->queue, op, entry);
	op->queued = 0;
}

struct pool_op *
op_new(struct pool *p, enum op_kind kind, struct pool_model *pm)
{
	struct pool_op	*op;

	if ((op = op_alloc(p, kind, pm)) != NULL)
		op_enqueue(p, op);
	return (op);
}

/*
 * A load on the queue.  The model keeps its state until the load
 * starts (a queued load is not loading: status tells them apart).
 */
struct pool_op *
op_queue_load(struct pool *p, struct pool_model *pm)
{
	struct pool_op	*op;

	if ((op = op_new(p, OP_LOAD, pm)) == NULL)
		return (NULL);
	pm->load_op = op;
	return (op);
}

/* Whether anyone waits for what op ends in: a request or a pool_load. */
int
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
int
op_waiting(const struct pool_op *op)
{
	return (op->kind == OP_LOAD && (op->phase == PH_QUEUED ||
	    op->phase == PH_ROOM || op->phase == PH_WAITMEM));
}

/* A removed record leaves the list, once nothing refers to it. */
void
pm_free(struct pool *p, struct pool_model *pm)
{
	TAILQ_REMOVE(&p->models, pm, entry);
	p->nmodels--;
	ptimer_cancel(p, &pm->idle_timer);
	ptimer_cancel(p, &pm->restart_timer);
	ptimer_cancel(p, &pm->grace_timer);
	plog(p, LOG_INFO, "%s: removed", pm->plan.label);
	p->ops->changed(p->ctx, &pm->plan);
	free(pm);
	parallel_update(p);
}

int
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
void
room_release(struct pool *p, struct pool_op *op)
{
	if (p->room != op)
		return;
	p->room = NULL;
	ptimer_cancel(p, &p->fair_timer);
	p->rerun = 1;
}

/* Whether a load was overtaken by an unload or by stop all. */
int
op_doomed(struct pool *p, const struct pool_op *op)
{
	return (p->stopping || op->gen != op->pm->stop_gen);
}

int
pm_slots_free(const struct pool_model *pm)
{
	return (pm->plan.max_requests == 0 ||
	    pm->in_progress < pm->plan.max_requests);
}
