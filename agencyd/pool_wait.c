/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Requests: their holds, and those that wait (struct pool_waiter) for
 * an op (the model's load or replace) or for a slot of a ready model
 * (op NULL: max_requests in flight, or a waiting load needs its memory,
 * the fairness window); the queues' bounds and timeouts, the progress
 * told to a waiter, and the estimates of a wait.
 *
 * It calls pool_record.c and pool_decide.c; what must run the queue
 * (a timer of a waiter or of the fairness window) calls p->run.
 *
 * Calls: pool_decide.c, pool_record.c, memory.c.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/tree.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "pool_priv.h"

static int
hold_cmp(const struct pool_hold *a, const struct pool_hold *b)
{
	return (a->holdid < b->holdid ? -1 : a->holdid > b->holdid);
}

static void	 deadline_cb(void *);

/* RB_GENERATE_STATIC, but libbsd leaves its __unused undefined. */
RB_GENERATE_INTERNAL(pool_hold_tree, pool_hold, node, hold_cmp,
    __attribute__((__unused__)) static)

void
req_refuse(struct pool *p, uint64_t reqid, int reason, int retry,
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

/*
 * A request that nothing will load its model for: agency is stopping,
 * the model was unloaded, or it is not lazy and not loaded.
 */
void
req_refuse_unloaded(struct pool *p, struct pool_model *pm, uint64_t reqid)
{
	int64_t	 left;
	int	 failed = pm->state == STATE_FAILED;

	if (p->stopping)
		req_refuse(p, reqid, REFUSE_STOPPING, 0, "agency is stopping");
	else if (pm->unloaded)
		req_refuse(p, reqid, REFUSE_NOT_LOADED, 0, "%s is not loaded; "
		    "agency-ctl load %s loads it", pm->plan.name,
		    pm->plan.name);
	else if (failed && pm->restart_at >= 0 && !pm->plan.lazy) {
		if ((left = pm->restart_at - pnow(p)) < 0)
			left = 0;
		req_refuse(p, reqid, REFUSE_NOT_LOADED, pool_retry_after(left),
		    "%s is not loaded: %s; it restarts in %llds", pm->plan.name,
		    pm->error, (long long)((left + 999) / 1000));
	} else
		req_refuse(p, reqid, REFUSE_NOT_LOADED, 0,
		    "%s is not loaded%s%s", pm->plan.name, failed ? ": " : "",
		    failed ? pm->error : "");
}

void
hold_grant(struct pool *p, struct pool_model *pm, uint64_t reqid,
    uint32_t owner)
{
	struct pool_hold	*h;

	if ((h = calloc(1, sizeof(*h))) == NULL) {
		req_refuse(p, reqid, REFUSE_LOAD_FAILED, 0, "out of memory");
		return;
	}
	h->holdid = ++p->next_id;
	h->owner = owner;
	h->pm = pm;
	TAILQ_INSERT_TAIL(&p->holds, h, entry);
	RB_INSERT(pool_hold_tree, &p->hold_tree, h);
	pm->in_progress++;
	pm->requests++;
	pm->last_used = pm->last_grant = h->since = pnow(p);
	ptimer_cancel(p, &pm->idle_timer);
	p->stats.grants++;
	p->ops->granted(p->ctx, reqid, h->holdid, &pm->plan, pm->port);
}

/* The hold of that id, or NULL: one lookup, however many are held. */
struct pool_hold *
hold_find(struct pool *p, uint64_t holdid)
{
	struct pool_hold	 key;

	key.holdid = holdid;
	return (RB_FIND(pool_hold_tree, &p->hold_tree, &key));
}

/* Off the lists; the caller frees it. */
void
hold_unlink(struct pool *p, struct pool_hold *h)
{
	TAILQ_REMOVE(&p->holds, h, entry);
	RB_REMOVE(pool_hold_tree, &p->hold_tree, h);
}

/* A request for a full model that may not wait for it. */
static void
refuse_busy(struct pool *p, struct pool_model *pm, uint64_t reqid)
{
	p->stats.queue_full++;
	req_refuse(p, reqid, REFUSE_MODEL_BUSY, pm_retry_after(p, pm),
	    "%s is busy: %u requests in flight (max requests %u), and no "
	    "request may wait for it", pm->plan.name, pm->in_progress,
	    pm->plan.max_requests);
}

/*
 * Progress (see pool_priv.h).
 */

/* What w waits for now; *load_ms how long its load has run, or -1. */
static int
waiter_wait(struct pool *p, const struct pool_waiter *w, int64_t *load_ms)
{
	const struct pool_op	*op = w->op;
	int64_t			 t;

	*load_ms = -1;
	if (op == NULL)
		/* a slot of a ready model, or a restart that is due */
		return (w->pm->state == STATE_READY ? WAIT_SLOT : WAIT_TURN);
	switch (op->phase) {
	case PH_QUEUED:
	case PH_ROOM:
		return (WAIT_TURN);
	case PH_WAITMEM:
	case PH_EVICTING:	/* for the exits of those it stopped */
		return (WAIT_MEMORY);
	default:
		t = pnow(p);
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
	t = pnow(p);
	due = p->progress_new ? t : p->progress_at + POOL_PROGRESS;
	if (due < t)
		due = t;
	if (p->progress_timer != NULL) {
		if (p->progress_due <= due)
			return;
		ptimer_cancel(p, &p->progress_timer);
	}
	p->progress_due = due;
	p->progress_timer = p->ops->timer_add(p->ctx, due - t, progress_cb,
	    p);
}

/* What the waiters wait for, or who is ahead of them, may have changed. */
void
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
	int64_t			 t = pnow(p);

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

void
waiter_unqueue(struct pool *p, struct pool_waiter *w)
{
	if (w->queued) {
		w->queued = 0;
		p->nqueued--;
		w->pm->nqueued--;
	}
	ptimer_cancel(p, &w->deadline);
}

void
waiter_free(struct pool *p, struct pool_waiter *w)
{
	TAILQ_REMOVE(&p->waiters, w, entry);
	waiter_unqueue(p, w);
	w->pm->nwait--;
	if (w->op == NULL)
		w->pm->nslot--;
	if (w->progress && --p->nprogress == 0) {
		ptimer_cancel(p, &p->progress_timer);
		p->progress_new = p->progress_dirty = 0;
	}
	free(w);
	progress_touch(p);	/* those after it have one fewer ahead */
}

/* Into the queue: bounded by max_queue, timed from when it came. */
void
waiter_queue(struct pool *p, struct pool_waiter *w)
{
	int64_t	 left;

	if (w->queued)
		return;
	w->queued = 1;
	p->nqueued++;
	w->pm->nqueued++;
	left = w->since + w->pm->plan.queue_timeout - pnow(p);
	w->deadline = p->ops->timer_add(p->ctx, left > 0 ? left : 0,
	    deadline_cb, w);
}

/*
 * A request waits: for op (a load or a replace), or for a slot (op
 * NULL); queued when what it waits for has not started; told what it
 * waits for with progress.  -1 when it was refused (out of memory).
 */
int
waiter_add(struct pool *p, struct pool_model *pm, struct pool_op *op,
    uint64_t reqid, uint32_t owner, int queued, int progress)
{
	struct pool_waiter	*w;

	if ((w = calloc(1, sizeof(*w))) == NULL) {
		req_refuse(p, reqid, REFUSE_LOAD_FAILED, 0, "out of memory");
		return (-1);
	}
	w->reqid = reqid;
	w->owner = owner;
	w->pm = pm;
	w->op = op;
	w->since = pnow(p);
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
void
op_started(struct pool *p, struct pool_op *op)
{
	struct pool_waiter	*w;

	TAILQ_FOREACH(w, &p->waiters, entry)
		if (w->op == op)
			waiter_unqueue(p, w);
	if (op->began == 0)
		op->began = pnow(p);
	progress_touch(p);
}

/*
 * A load that has not begun to act and that nobody waits for any more
 * (its requests left or timed out) is dropped: a request never loads a
 * model on its own behalf once it is gone.
 */
void
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
	    pm_running_op(p, pm) == NULL)
		pm_set_state(pm, STATE_STOPPED, NULL);
	p->recheck = p->ahead = 1;
	p->rerun = 1;
}

void
op_drop_unwanted_all(struct pool *p)
{
	struct pool_op	*op, *next;

	TAILQ_FOREACH_SAFE(op, &p->queue, entry, next)
		op_drop_unwanted(p, op);
}

/* The mean of pm's timed loads, in ms; -1: none timed yet. */
int64_t
pm_mean_load(const struct pool_model *pm)
{
	return (pm->loads > 0 ? (int64_t)(pm->load_ms_sum / pm->loads) : -1);
}

/* The fairness window pm keeps memory that a waiting load needs for. */
int64_t
pm_fairness(struct pool *p, struct pool_model *pm)
{
	return (pool_fairness(p->set.fairness, pm_mean_load(pm)));
}

/* When pm stops being kept for the waiting load r, and is closed. */
static int64_t
window_end(struct pool *p, struct pool_op *r, struct pool_model *pm)
{
	int64_t	 from = r->wait_since;

	if (pm->loaded_at > from)
		from = pm->loaded_at;
	return (mem_add(from, pm_fairness(p, pm)));
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
int
pm_closed(struct pool *p, struct pool_model *pm, int64_t since)
{
	struct pool_op	*r;

	if ((r = memory_waiter(p)) == NULL || r->pm == pm ||
	    !pm->plan.lazy || since < r->wait_since)
		return (0);
	return (pnow(p) >= window_end(p, r, pm));
}

/*
 * Batching: an idle model that was granted a request since the load
 * began waiting, and released its last one less than POOL_LINGER ago,
 * is in use (a client that loops asks again at once); it is kept until
 * its window is over rather than stopped between two requests.
 */
int
pm_kept(struct pool *p, struct pool_model *pm)
{
	struct pool_op	*r;
	int64_t		 t;

	if ((r = memory_waiter(p)) == NULL || r->pm == pm ||
	    !pm->plan.lazy || pm->state != STATE_READY ||
	    pm->in_progress > 0 || pm->last_grant < r->wait_since)
		return (0);
	t = pnow(p);
	return (t - pm->last_used < POOL_LINGER && t < window_end(p, r, pm));
}

/* What is left of pm's window while a load waits for its memory, in
 * ms; -1 when no load waits for memory it holds. */
int64_t
pm_window_left(struct pool *p, struct pool_model *pm)
{
	struct pool_op	*r;
	int64_t		 left;

	if ((r = memory_waiter(p)) == NULL || r->pm == pm || !pm->plan.lazy)
		return (-1);
	left = window_end(p, r, pm) - pnow(p);
	return (left > 0 ? left : 0);
}

static void	 fair_cb(void *);

/* Look again when the next window ends, or a kept model has lingered. */
void
fair_arm(struct pool *p, struct pool_op *r)
{
	struct pool_model	*pm;
	int64_t			 t, next = -1, n = pnow(p);

	ptimer_cancel(p, &p->fair_timer);
	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm == r->pm || !pm->plan.lazy || pm->state != STATE_READY)
			continue;
		t = window_end(p, r, pm);
		if (pm_kept(p, pm) && pm->last_used + POOL_LINGER < t)
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
	p->recheck = p->ahead = 1;
	p->run(p);
}

/* A waiter of a full model goes on waiting, for a slot. */
void
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
		refuse_busy(p, pm, reqid);
		return;
	}
	waiter_queue(p, w);
}

/* "a (busy), b (in use), c (loading)": what a waiting load waits for. */
void
pm_blockers(struct pool *p, struct pool_model *self, char *buf, size_t len)
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
		else if (pm_kept(p, pm))
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

/*
 * Queue bounds and estimates.
 */

static int64_t
mean_request(const struct pool_model *pm)
{
	return (pm->req_count > 0 ?
	    (int64_t)(pm->req_ms_sum / pm->req_count) : -1);
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
			t = pm_mean_load(pm) >= 0 ? pm_mean_load(pm) :
			    POOL_GUESS_LOAD;
		else if (pm->state == STATE_READY && (pm->in_progress > 0 ||
		    pm_kept(p, pm)))
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
int64_t
pm_wait_ms(struct pool *p, struct pool_model *pm)
{
	struct pool_guess	 g;

	memset(&g, 0, sizeof(g));
	g.ready = pm->state == STATE_READY && pm->pid != 0;
	g.ahead = pm->nwait;
	g.slots = pm->plan.max_requests;
	g.req_ms = mean_request(pm);
	g.load_ms = pm_mean_load(pm);
	g.drain_ms = g.ready ? -1 : drain_estimate(p, pm);
	return (pool_wait_estimate(&g));
}

int
pm_retry_after(struct pool *p, struct pool_model *pm)
{
	return (pool_retry_after(pm_wait_ms(p, pm)));
}

/*
 * Whether pm, not lazy, failed and is to be started again (its restart
 * is on a timer, or its exit's grace has yet to schedule it): requests
 * may wait for that load as for any other.
 */
int
pm_restart_due(struct pool *p, struct pool_model *pm)
{
	return (!p->stopping && !pm->plan.lazy && !pm->unloaded &&
	    !pm->removed && pm->state == STATE_FAILED &&
	    pm->idle_op == NULL &&
	    (pm->restart_timer != NULL || pm->grace_timer != NULL));
}

/*
 * Whether a request for pm that would wait in the queue may: 0 after
 * refusing it (the queue, all or the model's, is full).  slot: it would
 * wait for a slot of the ready model.
 */
int
waiter_admit(struct pool *p, struct pool_model *pm, int slot, uint64_t reqid)
{
	if (pm->plan.queue_timeout <= 0) {
		/* Only a full model sends a request that cannot wait here. */
		refuse_busy(p, pm, reqid);
		return (0);
	}
	if (p->set.max_queue > 0 && p->nqueued >= p->set.max_queue) {
		p->stats.queue_full++;
		req_refuse(p, reqid, REFUSE_QUEUE_FULL, pm_retry_after(p, pm),
		    "the queue is full: %u requests wait (max queue %u)",
		    p->nqueued, p->set.max_queue);
		return (0);
	}
	if (pm->plan.max_queue > 0 && pm->nqueued >= pm->plan.max_queue) {
		p->stats.queue_full++;
		req_refuse(p, reqid, slot ? REFUSE_MODEL_BUSY :
		    REFUSE_QUEUE_FULL, pm_retry_after(p, pm), "the queue of %s "
		    "is full: %u requests wait (max queue %u)", pm->plan.name,
		    pm->nqueued, pm->plan.max_queue);
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
		if (pm->state != STATE_READY)
			pmsgf(buf, len, "it waited for its restart after: %s",
			    pm->error[0] != '\0' ? pm->error : "it failed");
		else if (!pm_slots_free(pm))
			pmsgf(buf, len, "all %u of its request slots were busy",
			    pm->plan.max_requests);
		else
			pmsgf(buf, len, "it was kept for a load that waits "
			    "for its memory");
	} else if (op->phase == PH_WAITMEM) {
		pm_blockers(p, pm, who, sizeof(who));
		pmsgf(buf, len, "its load waited for memory held by %s",
		    who[0] != '\0' ? who : "busy models");
	} else
		pmsgf(buf, len, "its load waited for its turn");
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
	req_refuse(p, reqid, REFUSE_QUEUE_TIMEOUT, pm_retry_after(p, pm),
	    "%s: no turn within the queue timeout (%lld%s): %s",
	    pm->plan.name, (long long)(tmo % 1000 == 0 ? tmo / 1000 : tmo),
	    tmo % 1000 == 0 ? "s" : "ms", why);
	if (op != NULL)
		op_drop_unwanted(p, op);
	p->run(p);
}

/* The requests waiting for a slot of pm, in the order they came. */
static void
pump_model(struct pool *p, struct pool_model *pm)
{
	struct pool_waiter	*w, *wt;
	struct pool_op		*op;
	uint64_t		 reqid;
	uint32_t		 owner;

	TAILQ_FOREACH_SAFE(w, &p->waiters, entry, wt) {
		if (w->pm != pm || w->op != NULL)
			continue;
		reqid = w->reqid;
		owner = w->owner;
		if (pm->unloaded || p->stopping) {
			waiter_free(p, w);
			req_refuse_unloaded(p, pm, reqid);
			continue;
		}
		if (pm->idle_op != NULL)
			return;		/* the replace's load serves them */
		if (pm->state == STATE_READY && pm->pid != 0) {
			if (!pm_slots_free(pm) || pm_closed(p, pm, w->since))
				return;
			waiter_free(p, w);
			hold_grant(p, pm, reqid, owner);
			continue;
		}
		if ((op = pm->load_op) == NULL || op_doomed(p, op)) {
			if (pm_restart_due(p, pm))
				return;		/* its restart loads it */
			if (!pm->plan.lazy) {
				waiter_free(p, w);
				req_refuse_unloaded(p, pm, reqid);
				continue;
			}
			if ((op = op_queue_load(p, pm)) == NULL)
				return;
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

/*
 * The requests waiting for slots: granted in the order they came while
 * the model takes them; when it is not ready they wait for its load (a
 * lazy one is loaded again) or are refused.
 */
void
waiters_pump(struct pool *p)
{
	struct pool_model	*pm;

	TAILQ_FOREACH(pm, &p->models, entry)
		if (pm->nslot > 0)
			pump_model(p, pm);
}
