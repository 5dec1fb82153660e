/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The changes of state (struct pool_op) and the queue they run on
 * (queue_run): a load (its room, spawn, probe, failure), an unload, an
 * idle unload, a replace, a remove, a restart, stop all; the timers of
 * a record (idle, restart, an exit's grace); and the answers to the
 * effects they asked for (pool_spawned, pool_probe_result,
 * pool_child_exited).  See pool_priv.h for how the queue runs.
 *
 * It calls pool_status.c, pool_wait.c, pool_record.c and pool_decide.c.
 *
 * Calls: pool_decide.c, pool_record.c, pool_status.c, pool_wait.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pool_priv.h"

static void	 op_start(struct pool *, struct pool_op *);
static void	 op_finish(struct pool *, struct pool_op *);
static void	 load_begin(struct pool *, struct pool_op *);
static void	 load_step(struct pool *, struct pool_op *);
static void	 load_fail(struct pool *, struct pool_op *, const char *);
static void	 load_refused(struct pool *, struct pool_op *, const char *);
static void	 op_reload(struct pool *, struct pool_op *);
static void	 replace_swap(struct pool *, struct pool_op *);
static void	 idle_arm(struct pool_model *);
static void	 stopall_check(struct pool *, struct pool_op *);
static void	 grace_cb(void *);
static int	 load_ahead(struct pool *, struct pool_op *);

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

/* The op waits for nothing more: its timers and its probe end. */
static void
op_quiet(struct pool *p, struct pool_op *op)
{
	ptimer_cancel(p, &op->timeout);
	ptimer_cancel(p, &op->timer);
	if (op->loadid != 0) {
		p->ops->probe_cancel(p->ctx, op->loadid);
		op->loadid = 0;
	}
}

/* Signal a process for op: SIGTERM (SIGKILL once stop all sent it),
 * and SIGKILL after the grace unless stop all keeps its own time. */
static void
op_kill(struct pool *p, struct pool_op *op, pid_t pid)
{
	p->ops->kill(p->ctx, pid, p->killed_all ? SIGKILL : SIGTERM);
	if (!p->stopping)
		op->timer = p->ops->timer_add(p->ctx, POOL_STOP_GRACE,
		    grace_cb, op);
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
	if (op->pm != NULL && op->pm->evictor != NULL)
		return (0);
	return (1);
}

/*
 * Start what may start, hand the room to the next load that waits for
 * it, let a load waiting for memory look again when something changed
 * (and the loads behind it see whether they may go ahead), and serve
 * the requests waiting for slots; until nothing moves.
 */
void
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
			} else if (op->phase == PH_ROOM && p->ahead) {
				if (!load_ahead(p, op))
					continue;
			} else if (op->phase == PH_WAITMEM && p->recheck) {
				p->recheck = 0;
				load_step(p, op);
			} else
				continue;
			p->rerun = 1;	/* the queue may have changed */
			break;
		}
		if (!p->rerun)
			waiters_pump(p);
	} while (p->rerun);
	p->ahead = 0;		/* every load behind has looked */
	p->running = 0;
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
		if (ready && !pm_slots_free(pm)) {
			waiter_to_slot(p, w);
			continue;
		}
		waiter_free(p, w);
		if (ready)
			hold_grant(p, pm, reqid, owner);
		else
			req_refuse(p, reqid, op->reason, 0, "%s", op->error);
	}
	if (ready)
		idle_arm(pm);
	if (op->kind == OP_REMOVE) {
		pm_free(p, pm);
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
	ptimer_cancel(p, &op->timeout);
	ptimer_cancel(p, &op->timer);
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
		why = op->stop ? CHANGE_STOP : CHANGE_UNLOAD;
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
		why = pm_change_default(pm, state);
		break;
	}
	ptimer_cancel(p, &pm->restart_timer);
	ptimer_cancel(p, &pm->grace_timer);
	ptimer_cancel(p, &pm->idle_timer);
	if (pm->pid == 0) {
		if (pm->state != state)
			pm_set_state_why(pm, state, NULL, why, NULL);
		return (0);
	}
	pm_set_state_why(pm, state, NULL, why, NULL);
	op->phase = PH_EXITING;
	if (op->began == 0)
		op->began = pnow(p);
	progress_touch(p);
	if (!p->stopping) {
		plog(p, LOG_INFO, "%s: stopping", pm->plan.label);
		op_kill(p, op, pm->pid);
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
		    pm->pid == 0 || pnow(p) - pm->last_used <
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

/* A hold is released (or its owner is gone). */
void
hold_drop(struct pool *p, struct pool_hold *h)
{
	struct pool_model	*pm = h->pm;
	int64_t			 t = pnow(p);

	if (t > h->since)
		pm->req_ms_sum += (uint64_t)(t - h->since);
	pm->req_count++;
	hold_unlink(p, h);
	free(h);
	if (pm->in_progress > 0)
		pm->in_progress--;
	pm->last_used = t;
	if (pm->in_progress == 0)	/* it may be stopped for a waiter */
		p->recheck = p->ahead = 1;
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
	if (pnow(p) - pm->last_used < pm->plan.idle_timeout) {
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

	ptimer_cancel(p, &pm->idle_timer);
	if (!pm->plan.lazy || pm->plan.idle_timeout <= 0 || p->stopping ||
	    pm->state != STATE_READY || pm->in_progress > 0 ||
	    pm->idle_op != NULL)
		return;
	delay = pm->last_used + pm->plan.idle_timeout - pnow(p);
	if (delay < 0)
		delay = 0;
	pm->idle_timer = p->ops->timer_add(p->ctx, delay, idle_cb, pm);
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
	if ((op = op_queue_load(p, pm)) == NULL)
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
	ptimer_cancel(p, &pm->restart_timer);
	pm->restart_timer = p->ops->timer_add(p->ctx, delay, restart_cb, pm);
	pm->restart_at = pnow(p) + delay;
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
	/* Requests that waited for it wait for the restart, or are
	 * refused when there is none. */
	queue_run(p);
}

static void
unexpected_exit(struct pool *p, struct pool_model *pm, int wstatus)
{
	char	 desc[64], msg[PROTO_MSG_MAX];

	pool_describe_exit(wstatus, desc, sizeof(desc));
	pmsgf(msg, sizeof(msg), "%s %s", pm->plan.label, desc);
	if (p->stopping || pm->state == STATE_STOPPED) {
		plog(p, LOG_INFO, "%s", msg);
		if (pm->state != STATE_STOPPED)
			pm_set_state(pm, STATE_STOPPED, NULL);
		return;
	}
	if (pm->state == STATE_READY && pm->loaded_at >= 0 &&
	    pnow(p) - pm->loaded_at >= POOL_BACKOFF_RESET)
		pm->backoff = 0;
	pm_set_state(pm, STATE_FAILED, msg);
	/* Not a failure yet: stop all may be on its way (a Ctrl-C). */
	ptimer_cancel(p, &pm->grace_timer);
	pm->grace_timer = p->ops->timer_add(p->ctx, POOL_EXIT_GRACE,
	    death_cb, pm);
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
	op_quiet(p, op);
	if (!op->answered) {
		if (!doomed) {
			p->stats.load_failures++;
			pm->load_failures++;
		}
		if (pm->removed || doomed)
			pm_set_state(pm, STATE_STOPPED, NULL);
		else
			pm_set_state(pm, STATE_FAILED, op->error);
		plog(p, doomed ? LOG_INFO : LOG_ERR, "%s", op->error);
	}
	if (pm->pid != 0) {
		/* The answer now; the exit, and the op's end, later. */
		room_release(p, op);
		op_answer(p, op);
		if (op->phase != PH_KILLING) {
			op->phase = PH_KILLING;
			op_kill(p, op, pm->pid);
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
	ptimer_cancel(p, &op->timeout);
	ptimer_cancel(p, &op->timer);
	pm_set_state_why(pm, STATE_STOPPED, NULL, CHANGE_REFUSED, NULL);
	plog(p, LOG_WARNING, "%s", op->error);
	op_finish(p, op);
}

/* End our own child: the load fails once it has exited. */
static void
kill_own(struct pool *p, struct pool_op *op, int signal_it)
{
	struct pool_model	*pm = op->pm;

	op_quiet(p, op);
	op->phase = PH_KILLING;
	if (pm->pid != 0 && signal_it)
		op_kill(p, op, pm->pid);
}

/* An unload or stop all arrived during this load. */
void
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
	if (op->phase == PH_EVICTING) {
		p = op->pm->pool;
		TAILQ_FOREACH(pm, &p->models, entry) {
			if (pm->evictor != op || pm->pid == 0)
				continue;
			plog(p, LOG_WARNING, "%s: still running %ds after "
			    "SIGTERM, sending SIGKILL", pm->plan.label,
			    POOL_STOP_GRACE / 1000);
			p->ops->kill(p->ctx, pm->pid, SIGKILL);
		}
		return;
	}
	pm = op->pm;
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
	pmsgf(op->error, sizeof(op->error),
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
		pmsgf(msg, sizeof(msg), "%s: no free port in %u-%u",
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
		op->spawned_at = pnow(p);
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
		op->wait_since = pnow(p);
		op->began = 0;		/* its load begins again later */
		progress_touch(p);
		/* After an eviction its requests wait in the queue again,
		 * timed from when they came. */
		TAILQ_FOREACH(w, &p->waiters, entry)
			if (w->op == op)
				waiter_queue(p, w);
		pm_blockers(p, pm, why, sizeof(why));
		plog(p, LOG_INFO, "%s: waiting for memory held by %s",
		    pm->plan.label, why[0] != '\0' ? why : "busy models");
	}
	fair_arm(p, op);
	return (2);
}

/* Stop the set r chose for op's load: each at once, logged with why. */
static void
evict(struct pool *p, struct pool_op *op, struct room *r)
{
	struct pool_model	*pm = op->pm, *victim;
	size_t			 i;
	char			 why[PROTO_MSG_MAX], fig[PROTO_MSG_MAX];

	room_figures(p, pm->plan.need, r->memp, r->reserve, r->used, fig,
	    sizeof(fig));
	for (i = 0; i < r->st.n; i++) {
		victim = pm_at(p, r->st.stop[i]);
		room_stop_why(p, r, i, why, sizeof(why));
		plog(p, LOG_INFO, "%s: stopping it to make room for %s: %s "
		    "(%s)", victim->plan.label, pm->plan.label, why, fig);
		p->stats.evictions++;
		victim->evictions++;
		pm_set_state_why(victim, STATE_STOPPED, NULL, CHANGE_EVICTED,
		    pm->plan.name);
		victim->evictor = op;
		op->nvictims++;
		p->ops->kill(p->ctx, victim->pid, p->killed_all ? SIGKILL :
		    SIGTERM);
	}
	op->phase = PH_EVICTING;
	/* Its requests are no longer queued; the load itself, and its
	 * time, begin at the spawn. */
	op_started(p, op);
	op->began = 0;
	ptimer_cancel(p, &p->fair_timer);
	if (!p->stopping)
		op->timer = p->ops->timer_add(p->ctx, POOL_STOP_GRACE,
		    grace_cb, op);
}

/*
 * 1: it fits now; 0: waiting for an eviction; 2: waiting for busy
 * models; -1: the load ended.
 */
static int
make_room(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;
	struct room		 r;
	int			 rc;
	char			 msg[PROTO_MSG_MAX];

	rc = room_gather(p, pm, op, p->parallel ? ROOM_MODE_TURN :
	    ROOM_MODE_REFERENCE, &r);
	if (r.memp == NULL)
		plog(p, LOG_WARNING, "%s: available memory unknown",
		    pm->plan.label);
	if (rc == -1) {
		load_refused(p, op, "out of memory");
		return (-1);
	}

	switch (r.verdict) {
	case ROOM_FITS:
		room_done(&r);
		return (1);
	case ROOM_EVICT:
		evict(p, op, &r);
		room_done(&r);
		return (0);
	case ROOM_WAIT:
		if (!p->set.overcommit && p->parallel &&
		    pm->plan.queue_timeout > 0) {
			room_done(&r);
			return (room_wait(p, op));
		}
		/* FALLTHROUGH */
	default:
		break;
	}

	nomem_message(p, pm, r.memp, r.reserve, r.used, msg, sizeof(msg));
	room_done(&r);
	if (p->set.overcommit) {
		plog(p, LOG_WARNING, "%s; loading it anyway (overcommit)",
		    msg);
		return (1);
	}
	op->reason = REFUSE_NOT_ENOUGH_MEMORY;
	load_refused(p, op, msg);
	return (-1);
}

/* The load has room: its process starts. */
static void
load_spawn(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;

	room_release(p, op);
	if (pm->state != STATE_LOADING)
		pm_set_state_why(pm, STATE_LOADING, NULL, load_change(op),
		    NULL);
	op_started(p, op);
	spawn_now(p, op);
}

/*
 * While another load makes room, one that fits now starts at once,
 * provided it also fits beside what the loads queued before it will
 * take (pool_room, ROOM_MODE_AHEAD): a small model overtakes, and never
 * starves them.  1 when it started.
 */
static int
load_ahead(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;
	struct room		 r;
	char			 fig[PROTO_MSG_MAX];

	if (op_doomed(p, op) || p->room == NULL ||
	    room_gather(p, pm, op, ROOM_MODE_AHEAD, &r) == -1)
		return (0);
	if (r.verdict != ROOM_FITS) {
		room_done(&r);
		return (0);
	}
	room_figures(p, pm->plan.need, r.memp, r.reserve, r.used, fig,
	    sizeof(fig));
	room_done(&r);
	plog(p, LOG_INFO, "%s: loading it ahead of %s, which makes room: it "
	    "fits now, and beside what the loads before it will take (%s)",
	    pm->plan.label, p->room->pm->plan.label, fig);
	load_spawn(p, op);
	return (1);
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
			pmsgf(op->error, sizeof(op->error),
			    "%s is no longer served", pm->plan.name);
		else
			pmsgf(op->error, sizeof(op->error),
			    "%s was %s before it started", pm->plan.label,
			    pm->unloaded ? "unloaded" : "stopped");
		if (pm->state == STATE_LOADING && pm->pid == 0)
			pm_set_state(pm, STATE_STOPPED, NULL);
		op_finish(p, op);
		return;
	}
	if (pm->plan.lazy) {
		if (p->parallel && p->room != op) {
			if (p->room != NULL) {
				/* another first, unless it may go ahead */
				if (!load_ahead(p, op))
					op->phase = PH_ROOM;
				return;
			}
			p->room = op;
		}
		if (make_room(p, op) != 1)
			return;
	}
	load_spawn(p, op);
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
		ptimer_cancel(p, &pm->restart_timer);
		/* A lazy one that may wait for memory is loading once it
		 * has room. */
		if (pm->state != STATE_LOADING &&
		    (!p->parallel || !pm->plan.lazy))
			pm_set_state_why(pm, STATE_LOADING, NULL,
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
	ptimer_cancel(p, &op->timer);
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
		pm_new_plan(pm, &pm->next_plan);
		parallel_update(p);
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
		pmsgf(op->error, sizeof(op->error), "%s is not served",
		    pm->plan.name);
	} else {
		op->reason = REFUSE_NOT_LOADED;
		pmsgf(op->error, sizeof(op->error), "%s is not loaded; "
		    "agency-ctl load %s loads it", pm->plan.name,
		    pm->plan.name);
	}
	op_finish(p, op);
}

static void
load_ready(struct pool *p, struct pool_op *op)
{
	struct pool_model	*pm = op->pm;

	ptimer_cancel(p, &op->timeout);
	ptimer_cancel(p, &op->timer);
	pm->loads++;
	if (op->spawned) {
		int64_t	 ms = pnow(p) - op->spawned_at;

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
	pm->loaded_at = pm->last_used = pnow(p);
	pm_set_state(pm, STATE_READY, NULL);
	plog(p, LOG_INFO, "%s: ready on port %u", pm->plan.label, pm->port);
	op_finish(p, op);
}

static void
load_exit(struct pool *p, struct pool_op *op, int wstatus, int addr_in_use,
    const char *said)
{
	struct pool_model	*pm = op->pm;
	char			 desc[64];

	op_quiet(p, op);
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
		if (said != NULL && said[0] != '\0')
			pmsgf(op->error, sizeof(op->error),
			    "%s %s before it was ready: %s", pm->plan.label,
			    desc, said);
		else
			pmsgf(op->error, sizeof(op->error),
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
		pmsgf(msg, sizeof(msg), "%s could not be started: %s",
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
		ptimer_cancel(p, &op->timer);
		op->timer = p->ops->timer_add(p->ctx, POOL_REPROBE,
		    reprobe_cb, op);
		return;
	}
	/* A wrong answer fails the load now; the kill follows. */
	pmsgf(op->error, sizeof(op->error),
	    "%s answered %d to the readiness request: %s", pm->plan.label,
	    status, body);
	load_fail(p, op, op->error);
}

void
pool_child_exited(struct pool *p, pid_t pid, int wstatus, int addr_in_use,
    const char *said)
{
	struct pool_model	*pm;
	struct pool_op		*op;
	char			 desc[64];

	if ((pm = pm_by_pid(p, pid)) == NULL)
		return;
	pm->pid = 0;
	/* A load that stopped it to make room goes on once all are gone. */
	if ((op = pm->evictor) != NULL) {
		pm->evictor = NULL;
		pool_describe_exit(wstatus, desc, sizeof(desc));
		plog(p, LOG_INFO, "%s %s", pm->plan.label, desc);
		if (--op->nvictims == 0) {
			ptimer_cancel(p, &op->timer);
			load_step(p, op);
		}
		queue_run(p);
		return;
	}
	if ((op = pm_running_op(p, pm)) != NULL) {
		switch (op->kind) {
		case OP_LOAD:
			if (op->phase == PH_PROBING ||
			    op->phase == PH_KILLING) {
				load_exit(p, op, wstatus, addr_in_use, said);
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
				ptimer_cancel(p, &op->timer);
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

/* The loads of pm that have started: an unload or a remove ends them. */
void
pm_doom_load(struct pool *p, struct pool_model *pm)
{
	struct pool_op	*op;

	if ((op = pm_running_op(p, pm)) != NULL && op->kind == OP_LOAD)
		load_doom(p, op);
}

void
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
			pm_set_state(pm, STATE_STOPPED, NULL);
		if (pm->pid != 0)
			return;
	}
	ptimer_cancel(p, &p->stop_timer);
	plog(p, LOG_INFO, "every model process has exited");
	op_finish(p, op);
}
