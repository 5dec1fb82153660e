/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The pool of model processes: the entry points of pool.h for set-up,
 * requests (acquire, withdraw, release) and control (load, unload,
 * stop, remove, replace, restart, stop all).  See pool_priv.h for its files
 * and its invariants, DESIGN.md ("The pool") for its rules.
 *
 * It calls the pool's other files only; every effect goes through the
 * caller's struct pool_ops (poolops.c's).
 *
 * Calls: pool_change.c, pool_record.c, pool_wait.c.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/tree.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pool_priv.h"

struct pool *
pool_new(const struct pool_ops *ops, void *ctx,
    const struct pool_settings *set)
{
	struct pool	*p;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		return (NULL);
	p->ops = ops;
	p->ctx = ctx;
	p->run = queue_run;
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

	if (pm_find(p, plan->name) != NULL)
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
	parallel_update(p);
	return (0);
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
		ptimer_cancel(p, &w->deadline);
		free(w);
	}
	while ((h = TAILQ_FIRST(&p->holds)) != NULL) {
		TAILQ_REMOVE(&p->holds, h, entry);
		free(h);
	}
	while ((pm = TAILQ_FIRST(&p->models)) != NULL) {
		TAILQ_REMOVE(&p->models, pm, entry);
		ptimer_cancel(p, &pm->idle_timer);
		ptimer_cancel(p, &pm->restart_timer);
		ptimer_cancel(p, &pm->grace_timer);
		free(pm);
	}
	ptimer_cancel(p, &p->stop_timer);
	ptimer_cancel(p, &p->fair_timer);
	ptimer_cancel(p, &p->progress_timer);
	free(p);
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

	if ((pm = pm_find(p, model)) == NULL) {
		req_refuse(p, reqid, REFUSE_UNKNOWN_MODEL, 0,
		    "%s is not served", model);
		return;
	}
	if (p->stopping || pm->unloaded) {
		req_refuse_unloaded(p, pm, reqid);
		return;
	}
	if (pm->idle_op != NULL) {
		/* A replace is pending: the new plan's process, not the old. */
		if (waiter_add(p, pm, pm->idle_op, reqid, owner, 0,
		    progress) == 0)
			queue_run(p);
		return;
	}
	if (pm->state == STATE_READY && pm->pid != 0) {
		/* Older requests first; one that cannot wait is not
		 * held back for fairness. */
		if (pm_slots_free(pm) && (pm->plan.queue_timeout <= 0 ||
		    (pm->nslot == 0 && !pm_closed(p, pm, pnow(p))))) {
			hold_grant(p, pm, reqid, owner);
			return;
		}
		if (waiter_admit(p, pm, 1, reqid))
			(void)waiter_add(p, pm, NULL, reqid, owner, 1,
			    progress);
		return;
	}
	if ((op = pm->load_op) != NULL && !op_doomed(p, op)) {
		queued = op_waiting(op) && pm->plan.queue_timeout > 0;
		if (queued && !waiter_admit(p, pm, 0, reqid))
			return;
		(void)waiter_add(p, pm, op, reqid, owner, queued, progress);
		return;
	}
	if (!pm->plan.lazy) {
		/* It failed: its restart, if any, is on a timer.  A request
		 * that may wait waits for it as for a load, unless it is due
		 * after the queue timeout. */
		if (pm->plan.queue_timeout > 0 && pm_restart_due(p, pm) &&
		    (pm->restart_at < 0 || pm->restart_at - pnow(p) <=
		    pm->plan.queue_timeout)) {
			if (waiter_admit(p, pm, 0, reqid))
				(void)waiter_add(p, pm, NULL, reqid, owner, 1,
				    progress);
			return;
		}
		req_refuse_unloaded(p, pm, reqid);
		return;
	}
	queued = pm->plan.queue_timeout > 0;
	if (queued && !waiter_admit(p, pm, 0, reqid))
		return;
	if ((op = op_queue_load(p, pm)) == NULL) {
		req_refuse(p, reqid, REFUSE_LOAD_FAILED, 0, "out of memory");
		return;
	}
	op->by_request = 1;
	if (waiter_add(p, pm, op, reqid, owner, queued, progress) == -1)
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
	struct pool_hold	*h;

	if ((h = hold_find(p, holdid)) == NULL || h->owner != owner)
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
	op_drop_unwanted_all(p);
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

	if ((pm = pm_find(p, model)) == NULL)
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
		if ((op = op_queue_load(p, pm)) == NULL) {
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


/*
 * Stop a model for an unload (refused until a load) or a stop (stop:
 * loaded again by its next request): a load of it in progress ends, and
 * its process on the queue.
 */
static int
pm_stop(struct pool *p, struct pool_model *pm, int stop, pool_done_cb done,
    void *arg)
{
	struct pool_op	*op;

	pm->unloaded = !stop;
	pm->stop_gen++;
	ptimer_cancel(p, &pm->restart_timer);
	if (pm->state == STATE_STOPPED)
		/* nothing to stop: unloaded (or stopped) now, as status
		 * shows it */
		pm_set_state_why(pm, STATE_STOPPED, NULL, stop ? CHANGE_STOP :
		    CHANGE_UNLOAD, NULL);
	p->running++;		/* answers go out, nothing starts yet */
	pm_doom_load(p, pm);
	p->running--;
	if ((op = op_new(p, OP_UNLOAD, pm)) == NULL) {
		if (done != NULL)
			done(arg);
		return (0);
	}
	op->stop = stop;
	pm->unload_pending++;
	if (done != NULL && op_add_done(op, NULL, done, arg) == -1)
		done(arg);
	queue_run(p);
	return (0);
}

int
pool_unload(struct pool *p, const char *model, pool_done_cb done, void *arg)
{
	struct pool_model	*pm;

	if ((pm = pm_find(p, model)) == NULL)
		return (-1);
	return (pm_stop(p, pm, 0, done, arg));
}

int
pool_stop(struct pool *p, const char *model, pool_done_cb done, void *arg)
{
	struct pool_model	*pm;

	if ((pm = pm_find(p, model)) == NULL)
		return (-1);
	if (!pm->plan.lazy)
		return (-2);
	return (pm_stop(p, pm, 1, done, arg));
}

int
pool_remove(struct pool *p, const char *model, pool_done_cb done, void *arg)
{
	struct pool_model	*pm;
	struct pool_op		*op, *rop;
	struct pool_waiter	*w, *wt;

	if ((pm = pm_find(p, model)) == NULL)
		return (-1);
	if ((op = op_alloc(p, OP_REMOVE, pm)) == NULL)
		return (-1);
	pmsgf(op->error, sizeof(op->error), "%s is no longer served",
	    pm->plan.name);
	plog(p, LOG_INFO, "%s: no longer served, stopping it once idle",
	    pm->plan.label);
	pm->removed = 1;
	pm->unloaded = 1;	/* no restart, no reload */
	pm->stop_gen++;		/* loads of it are doomed */
	ptimer_cancel(p, &pm->restart_timer);
	ptimer_cancel(p, &pm->idle_timer);
	parallel_update(p);

	TAILQ_FOREACH_SAFE(w, &p->waiters, entry, wt) {
		uint64_t	 reqid = w->reqid;

		if (w->pm != pm)
			continue;
		waiter_free(p, w);
		req_refuse(p, reqid, REFUSE_UNKNOWN_MODEL, 0,
		    "%s is not served", pm->plan.name);
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
	pm_doom_load(p, pm);
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

	if ((pm = pm_find(p, plan->name)) == NULL)
		return (-1);
	/* The limits are not the process's: they apply at once. */
	pm->plan.queue_timeout = plan->queue_timeout;
	pm->plan.max_queue = plan->max_queue;
	pm->plan.max_requests = plan->max_requests;
	parallel_update(p);
	if (pm->idle_op != NULL) {
		/* Not swapped yet: the newest plan wins. */
		pm->next_plan = *plan;
		queue_run(p);
		return (0);
	}
	run = pm_running_op(p, pm);
	if (pm->pid == 0 && !(run != NULL && run->kind == OP_LOAD &&
	    run->phase == PH_SPAWNING)) {
		/* Nothing runs the old plan: swap it now. */
		pm_new_plan(pm, plan);
		if (!pm->plan.lazy && !pm->unloaded && !p->stopping &&
		    (pm->load_op == NULL || op_doomed(p, pm->load_op))) {
			if ((op = op_queue_load(p, pm)) == NULL)
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
	ptimer_cancel(p, &pm->idle_timer);
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

	if ((pm = pm_find(p, plan->name)) == NULL)
		return (-1);
	pm->plan.queue_timeout = pm->next_plan.queue_timeout =
	    plan->queue_timeout;
	pm->plan.max_queue = pm->next_plan.max_queue = plan->max_queue;
	pm->plan.max_requests = pm->next_plan.max_requests =
	    plan->max_requests;
	parallel_update(p);
	queue_run(p);
	return (0);
}

int
pool_restart(struct pool *p, const char *model, pool_done_cb done,
    void *arg)
{
	struct pool_model	*pm;
	struct pool_op		*op;

	if ((pm = pm_find(p, model)) == NULL)
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
		req_refuse(p, reqid, REFUSE_STOPPING, 0, "agency is stopping");
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
		ptimer_cancel(p, &pm->idle_timer);
		ptimer_cancel(p, &pm->restart_timer);
		if (pm->grace_timer != NULL) {
			/* Exited just before: not a failure. */
			ptimer_cancel(p, &pm->grace_timer);
			plog(p, LOG_INFO, "%s (just before stopping)",
			    pm->error);
		}
		if (pm->pid != 0)
			p->ops->kill(p->ctx, pm->pid, SIGTERM);
		if (pm->state != STATE_STOPPED)
			pm_set_state(pm, STATE_STOPPED, NULL);
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

/* A reload's new memory, port and queue settings; they apply from the
 * next decision on (a fit test, a port choice, a request). */
void
pool_set_settings(struct pool *p, const struct pool_settings *set)
{
	p->set = *set;
	p->recheck = p->ahead = 1;
	queue_run(p);
}
