/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * What the pool tells: each model's status, the counters, and what a
 * request would do now in words (pool_explain); the room a load has
 * (room_gather) and the figures of a refusal for want of memory, which
 * a load and an explanation share.  It only reads the records.
 *
 * It calls pool_wait.c, pool_record.c and pool_decide.c.
 *
 * Calls: memory.c, pool_decide.c, pool_record.c, pool_wait.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pool_priv.h"

static void
format_size(int64_t bytes, char *buf, size_t len)
{
	if (bytes >= POOL_GIB || bytes <= -POOL_GIB)
		snprintf(buf, len, "%.1f GiB", (double)bytes / POOL_GIB);
	else
		snprintf(buf, len, "%.1f MiB", (double)bytes / (1024 * 1024));
}

/* The records as pool_room sees them; *self is pm's index.  NULL when
 * out of memory. */
static struct pool_view *
pm_views(struct pool *p, struct pool_model *self, size_t *selfi)
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
		v[i].kept = pm_kept(p, pm);
		if (pm == self)
			*selfi = i;
		i++;
	}
	return (v);
}

/* The record at index i of the views. */
struct pool_model *
pm_at(struct pool *p, size_t i)
{
	struct pool_model	*pm;

	TAILQ_FOREACH(pm, &p->models, entry)
		if (i-- == 0)
			return (pm);
	return (NULL);
}

/*
 * The room a load of pm has: the memory measured now (r->memp NULL when
 * it is unknown), the reserve, the records as pool_room sees them, and
 * pool_room's verdict.  -1 when out of memory.  room_done frees it.
 */
int
room_gather(struct pool *p, struct pool_model *pm, struct room *r)
{
	memset(r, 0, sizeof(*r));
	r->memp = &r->mem;
	if (p->ops->memory(p->ctx, &r->mem) == -1)
		r->memp = NULL;
	else
		r->reserve = pool_reserve(p->set.reserve, r->mem.total);
	r->victim = -1;
	if ((r->v = pm_views(p, pm, &r->self)) == NULL)
		return (-1);
	r->n = p->nmodels;
	r->verdict = pool_room(r->v, r->n, r->self, r->memp, r->reserve,
	    p->set.budget, &r->victim);
	return (0);
}

void
room_done(struct room *r)
{
	free(r->v);
	r->v = NULL;
}

/* "needs 6.0 GiB, 3.1 GiB available, 2.0 GiB kept in reserve, budget
 * 7.0 GiB of which 4.0 GiB in use": what a fit was decided on. */
void
room_figures(struct pool *p, int64_t need, const struct mem_snapshot *mem,
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


void
nomem_message(struct pool *p, struct pool_model *self,
    const struct mem_snapshot *mem, int64_t reserve, int64_t used,
    char *buf, size_t len)
{
	struct pool_model	*pm;
	char			 fig[PROTO_MSG_MAX];
	const char		*sep = ": ";

	room_figures(p, self->plan.need, mem, reserve, used, fig, sizeof(fig));
	pmsgf(buf, len, "not enough memory for %s (%s)", self->plan.name, fig);
	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm == self || pm->state != STATE_READY)
			continue;
		strlcat(buf, sep, len);
		strlcat(buf, pm->plan.name, len);
		if (pm->in_progress > 0)
			strlcat(buf, " (busy)", len);
		else if (!pm->plan.lazy)
			strlcat(buf, " (not lazy)", len);
		else if (pm_kept(p, pm))
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
				return (pnow(p) - w->since);
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

	if ((pm = pm_find(p, name)) == NULL)
		return (-1);
	fill_status(p, pm, st);
	return (0);
}

const struct pool_plan *
pool_plan(struct pool *p, const char *model)
{
	struct pool_model	*pm;

	if ((pm = pm_find(p, model)) == NULL)
		return (NULL);
	if (pm->idle_op != NULL)	/* a pending replace */
		return (&pm->next_plan);
	return (&pm->plan);
}


void
pool_stats(struct pool *p, struct pool_stats *st)
{
	*st = p->stats;
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
	struct room		 r;
	struct pool_model	*victim;
	struct pool_view	*vv;
	int64_t			 used, t = pnow(p);
	size_t			 tries;
	int			 evicted = 0;
	char			 fig[PROTO_MSG_MAX], who[PROTO_MSG_MAX];
	char			 size[32];

	if (room_gather(p, pm, &r) == -1) {
		say(e, "%s: out of memory", pm->plan.name);
		return (VERDICT_REFUSE);
	}
	/* Stop the candidates one by one, counting their memory as freed
	 * (agencyd measures it again between two). */
	for (tries = 0; r.verdict == ROOM_EVICT && tries < r.n; tries++) {
		victim = pm_at(p, (size_t)r.victim);
		vv = &r.v[r.victim];
		format_size(vv->need, size, sizeof(size));
		say(e, "%s: stops %s (%s), idle, last used %llds ago",
		    pm->plan.name, victim->plan.name, size,
		    (long long)((t - vv->last_used) / 1000));
		if (r.memp != NULL)
			r.mem.available = mem_add(r.mem.available, vv->need);
		vv->state = STATE_STOPPED;
		vv->running = 0;
		evicted = 1;
		r.verdict = pool_room(r.v, r.n, r.self, r.memp, r.reserve,
		    p->set.budget, &r.victim);
	}
	used = pool_committed(r.v, r.n, r.self);
	room_done(&r);
	room_figures(p, pm->plan.need, r.memp, r.reserve, used, fig,
	    sizeof(fig));
	switch (r.verdict) {
	case ROOM_FITS:
		say(e, "%s: %s (%s), about %llds", pm->plan.name, evicted ?
		    "then loads" : "loads in place", fig, (long long)
		    pm_retry_after(p, pm));
		return (evicted ? VERDICT_EVICT : VERDICT_LOAD);
	case ROOM_WAIT:
		if (!p->set.overcommit && p->parallel &&
		    pm->plan.queue_timeout > 0) {
			if (!explain_room_in_queue(p, pm, e))
				return (VERDICT_REFUSE);
			pm_blockers(p, pm, who, sizeof(who));
			say(e, "%s: waits for %s to finish (%s), then loads; "
			    "about %llds", pm->plan.name, who, fig,
			    (long long)pm_retry_after(p, pm));
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
	nomem_message(p, pm, r.memp, r.reserve, used, who, sizeof(who));
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
	int64_t			 t = pnow(p);

	if ((pm = pm_find(p, model)) == NULL)
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
		if (pm_slots_free(pm) && (pm->plan.queue_timeout <= 0 ||
		    (pm->nslot == 0 && !pm_closed(p, pm, t)))) {
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
		    pm_slots_free(pm) ? "the load that needs its memory" :
		    "a slot", pm_retry_after(p, pm));
		return (VERDICT_WAIT);
	}
	if ((op = pm->load_op) != NULL && !op_doomed(p, op)) {
		if (op_waiting(op)) {
			if (pm->plan.queue_timeout > 0 &&
			    !explain_room_in_queue(p, pm, &e))
				return (VERDICT_REFUSE);
			if (op->phase == PH_WAITMEM) {
				pm_blockers(p, pm, who, sizeof(who));
				say(&e, "%s: waits: its load waits for memory "
				    "held by %s", pm->plan.name, who);
			} else
				say(&e, "%s: waits: its load waits for its "
				    "turn", pm->plan.name);
			say(&e, "%s: %u requests wait with it, the oldest for "
			    "%llds; about %ds more", pm->plan.name, pm->nwait,
			    (long long)(oldest_wait(p, pm) / 1000),
			    pm_retry_after(p, pm));
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
