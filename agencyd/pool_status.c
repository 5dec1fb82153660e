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

/*
 * Whether op is a load that will claim its model's need and has not
 * yet: it waits (its turn, for memory) or stops models to make room.
 */
static int
op_claims(struct pool *p, const struct pool_op *op)
{
	return (op->kind == OP_LOAD && op->pm != NULL && op->pm->plan.lazy &&
	    (op_waiting(op) || op->phase == PH_EVICTING) &&
	    !op_doomed(p, op));
}

/*
 * The records as pool_room sees them; *selfi is self's index.  The
 * loads queued before `before` (NULL: every one, as for a request that
 * would come now) claim their models' needs, and a lazy model loaded
 * since the first of them came is held for them.  NULL when out of
 * memory; the views are followed by the work space of a decision.
 */
static struct pool_view *
pm_views(struct pool *p, struct pool_model *self, const struct pool_op *before,
    size_t *selfi, struct pool_stops *st)
{
	struct pool_view	*v;
	struct pool_model	*pm;
	struct pool_op		*op;
	size_t			 i = 0, n = p->nmodels ? p->nmodels : 1;
	int64_t			 since = -1;
	char			*mem;

	/* one allocation: the views, the candidates, the set */
	if ((mem = calloc(n, sizeof(*v) + sizeof(*st->cand) +
	    2 * sizeof(*st->stop))) == NULL)
		return (NULL);
	v = (struct pool_view *)mem;
	st->stop = (size_t *)(mem + n * sizeof(*v));
	st->cand = (struct pool_cand *)(mem + n * (sizeof(*v) +
	    2 * sizeof(*st->stop)));
	TAILQ_FOREACH(op, &p->queue, entry) {
		if (op == before)
			break;
		if (op->pm != self && op_claims(p, op) &&
		    (since == -1 || op->since < since))
			since = op->since;
	}
	TAILQ_FOREACH(pm, &p->models, entry) {
		v[i].state = pm->state;
		v[i].lazy = pm->plan.lazy;
		v[i].in_progress = pm->in_progress;
		v[i].last_used = pm->last_used;
		v[i].need = pm->plan.need;
		v[i].running = pm->pid != 0;
		v[i].kept = pm_kept(p, pm);
		v[i].held = since != -1 && pm != self && pm->plan.lazy &&
		    pm->state == STATE_READY && pm->loaded_at >= since;
		TAILQ_FOREACH(op, &p->queue, entry) {
			if (op == before)
				break;
			if (op->pm == pm && pm != self && op_claims(p, op))
				v[i].claim = 1;
		}
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

/* pool_room over what room_gather gathered (again, after a change). */
int
room_decide(struct pool *p, struct room *r)
{
	r->verdict = pool_room(r->v, r->n, r->self, r->memp, r->reserve,
	    p->set.budget, r->mode, &r->st);
	r->used = pool_committed(r->v, r->n, r->self);
	return (r->verdict);
}

/*
 * The room a load of pm has, as it would be decided in mode (enum
 * pool_room_mode) for a load queued where before is (NULL: at the end):
 * the memory measured now (r->memp NULL when it is unknown), the
 * reserve, the records as pool_room sees them, and pool_room's verdict.
 * -1 when out of memory.  room_done frees it.
 */
int
room_gather(struct pool *p, struct pool_model *pm, const struct pool_op *before,
    int mode, struct room *r)
{
	memset(r, 0, sizeof(*r));
	r->memp = &r->mem;
	if (p->ops->memory(p->ctx, &r->mem) == -1)
		r->memp = NULL;
	else
		r->reserve = pool_reserve(p->set.reserve, r->mem.total);
	if ((r->v = pm_views(p, pm, before, &r->self, &r->st)) == NULL)
		return (-1);
	r->n = p->nmodels;
	r->mode = mode;
	(void)room_decide(p, r);
	return (0);
}

void
room_done(struct room *r)
{
	free(r->v);
	r->v = NULL;
	r->st.cand = NULL;
	r->st.stop = NULL;
}

/*
 * Why the i-th of the set was chosen: "idle, last used 12s ago: 1 of
 * the 3 idle models, the fewest that free the 150.0 MiB missing".
 */
void
room_stop_why(struct pool *p, const struct room *r, size_t i, char *buf,
    size_t len)
{
	const struct pool_view	*vv = &r->v[r->st.stop[i]];
	char			 age[64], miss[32];

	if (vv->last_used < 0)
		snprintf(age, sizeof(age), "idle, never used");
	else
		snprintf(age, sizeof(age), "idle, last used %llds ago",
		    (long long)((pnow(p) - vv->last_used) / 1000));
	format_size(r->st.missing, miss, sizeof(miss));
	switch (r->st.how) {
	case STOPS_FEWEST:
		pmsgf(buf, len, "%s: %zu of the %zu idle models, the fewest "
		    "that free the %s missing", age, r->st.n, r->st.ncand,
		    miss);
		break;
	case STOPS_ONE_BY_ONE:
		pmsgf(buf, len, "%s: the least recently used of the %zu idle "
		    "models, whose needs do not cover the %s missing: one at "
		    "a time, measuring again", age, r->st.ncand, miss);
		break;
	default:
		pmsgf(buf, len, "%s: the least recently used of the %zu idle "
		    "models", age, r->st.ncand);
		break;
	}
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
		if (op->pm != pm)
			continue;
		/* memory: busy models to drain, or those stopped for it to
		 * exit */
		if (op->phase == PH_WAITMEM || (op->kind == OP_LOAD &&
		    op->phase == PH_EVICTING))
			return (WAIT_MEMORY);
		if (op_waiting(op))
			return (WAIT_TURN);
	}
	if (pm->nslot == 0)
		return (WAIT_NONE);
	/* not ready: they wait for its restart */
	return (pm->state == STATE_READY ? WAIT_SLOT : WAIT_TURN);
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
	st->fairness = pm->plan.lazy ? pm_fairness(p, pm) : 0;
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

/* "1.2s", "45s": a duration for a plan's line. */
static void
format_ms(int64_t ms, char *buf, size_t len)
{
	if (ms < 10000 && ms % 1000 != 0)
		snprintf(buf, len, "%.1fs", (double)ms / 1000);
	else
		snprintf(buf, len, "%llds", (long long)(ms / 1000));
}

/* "fairness window 12s: 10 x its mean load, 1.2s": what pm's window
 * is, and where it comes from. */
static void
window_words(struct pool *p, struct pool_model *pm, char *buf, size_t len)
{
	int64_t	 w = pm_fairness(p, pm), load = pm_mean_load(pm);
	char	 ws[32], ls[32];

	format_ms(w, ws, sizeof(ws));
	if (p->set.fairness >= 0) {
		pmsgf(buf, len, "fairness window %s, configured", ws);
		return;
	}
	if (load < 0) {
		format_ms(POOL_GUESS_LOAD, ls, sizeof(ls));
		pmsgf(buf, len, "fairness window %s: %d x %s, a guess until a "
		    "load of it is timed", ws, POOL_FAIRNESS_K, ls);
	} else {
		format_ms(load, ls, sizeof(ls));
		pmsgf(buf, len, "fairness window %s: %d x its mean load, %s",
		    ws, POOL_FAIRNESS_K, ls);
	}
	if (w == POOL_FAIRNESS_MIN && (load < 0 ? POOL_GUESS_LOAD : load) *
	    POOL_FAIRNESS_K < POOL_FAIRNESS_MIN)
		strlcat(buf, ", raised to the least", len);
	else if (w == POOL_FAIRNESS_MAX && (load < 0 ? POOL_GUESS_LOAD :
	    load) > POOL_FAIRNESS_MAX / POOL_FAIRNESS_K)
		strlcat(buf, ", lowered to the most", len);
}

/*
 * For each lazy model a load of pm waits for: how long it may keep the
 * memory, its fairness window, and what is left of it when the wait
 * has begun.
 */
static void
explain_windows(struct pool *p, struct pool_model *self, struct explain *e)
{
	struct pool_model	*pm;
	int64_t			 left;
	char			 w[PROTO_MSG_MAX], ls[32];

	TAILQ_FOREACH(pm, &p->models, entry) {
		if (pm == self || !pm->plan.lazy ||
		    pm->state != STATE_READY || (pm->in_progress == 0 &&
		    !pm_kept(p, pm)))
			continue;
		window_words(p, pm, w, sizeof(w));
		if ((left = pm_window_left(p, pm)) >= 0) {
			format_ms(left, ls, sizeof(ls));
			say(e, "%s: %s keeps its memory for %s more at most, "
			    "then takes no new request (%s)", self->plan.name,
			    pm->plan.name, ls, w);
		} else
			say(e, "%s: %s keeps its memory at most its %s, from "
			    "when the wait begins", self->plan.name,
			    pm->plan.name, w);
	}
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

/* The mode of a decision on room that a load of pm would get now. */
static int
room_mode_now(struct pool *p)
{
	if (!p->parallel)
		return (ROOM_MODE_REFERENCE);
	return (p->room != NULL ? ROOM_MODE_AHEAD : ROOM_MODE_TURN);
}

/* A lazy model that is not loaded: room, as make_room would make it. */
static int
explain_room(struct pool *p, struct pool_model *pm, struct explain *e)
{
	struct room		 r;
	struct pool_model	*victim;
	struct pool_view	*vv;
	size_t			 tries, i;
	int			 evicted = 0;
	char			 fig[PROTO_MSG_MAX], who[PROTO_MSG_MAX];
	char			 size[32];

	if (room_gather(p, pm, NULL, room_mode_now(p), &r) == -1) {
		say(e, "%s: out of memory", pm->plan.name);
		return (VERDICT_REFUSE);
	}
	if (r.mode == ROOM_MODE_AHEAD) {
		room_figures(p, pm->plan.need, r.memp, r.reserve, r.used, fig,
		    sizeof(fig));
		room_done(&r);
		if (r.verdict == ROOM_FITS) {
			say(e, "%s: loads at once, ahead of the load of %s, "
			    "which makes room: it fits now, and beside what "
			    "the loads before it will take (%s); about %llds",
			    pm->plan.name, p->room->pm->plan.name, fig,
			    (long long)pm_retry_after(p, pm));
			return (VERDICT_LOAD);
		}
		if (!explain_room_in_queue(p, pm, e))
			return (VERDICT_REFUSE);
		say(e, "%s: waits for its turn: the load of %s makes room "
		    "first, and %s does not fit now beside what the loads "
		    "before it will take (%s); about %llds more",
		    pm->plan.name, p->room->pm->plan.name, pm->plan.name,
		    fig, (long long)pm_retry_after(p, pm));
		return (VERDICT_WAIT);
	}
	/* Stop the set, counting its memory as freed (agencyd measures
	 * it again once they have exited), until it fits or none is left. */
	for (tries = 0; r.verdict == ROOM_EVICT && tries < r.n; tries++) {
		for (i = 0; i < r.st.n; i++) {
			victim = pm_at(p, r.st.stop[i]);
			vv = &r.v[r.st.stop[i]];
			format_size(vv->need, size, sizeof(size));
			room_stop_why(p, &r, i, who, sizeof(who));
			say(e, "%s: stops %s (%s), %s", pm->plan.name,
			    victim->plan.name, size, who);
		}
		for (i = 0; i < r.st.n; i++) {
			vv = &r.v[r.st.stop[i]];
			if (r.memp != NULL)
				r.mem.available = mem_add(r.mem.available,
				    vv->need);
			vv->state = STATE_STOPPED;
			vv->running = 0;
		}
		evicted = 1;
		(void)room_decide(p, &r);
	}
	room_figures(p, pm->plan.need, r.memp, r.reserve, r.used, fig,
	    sizeof(fig));
	room_done(&r);
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
			explain_windows(p, pm, e);
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
	nomem_message(p, pm, r.memp, r.reserve, r.used, who, sizeof(who));
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
				explain_windows(p, pm, &e);
			} else if (p->room != NULL && p->room != op)
				say(&e, "%s: waits: its load waits for its "
				    "turn, behind the load of %s, which makes "
				    "room; it does not fit beside what the "
				    "loads before it will take",
				    pm->plan.name, p->room->pm->plan.name);
			else
				say(&e, "%s: waits: its load waits for its "
				    "turn", pm->plan.name);
			say(&e, "%s: %u requests wait with it, the oldest for "
			    "%llds; about %ds more", pm->plan.name, pm->nwait,
			    (long long)(oldest_wait(p, pm) / 1000),
			    pm_retry_after(p, pm));
			return (VERDICT_WAIT);
		}
		if (op->kind == OP_LOAD && op->phase == PH_EVICTING) {
			say(&e, "%s: waits for its load, which waits for the "
			    "models it stopped to exit", pm->plan.name);
			return (VERDICT_JOIN);
		}
		say(&e, "%s: waits for its load in progress (%llds so far)",
		    pm->plan.name, (long long)(op->spawned ?
		    (t - op->spawned_at) / 1000 : 0));
		return (VERDICT_JOIN);
	}
	if (!pm->plan.lazy && pm_restart_due(p, pm) &&
	    pm->plan.queue_timeout > 0 && (pm->restart_at < 0 ||
	    pm->restart_at - t <= pm->plan.queue_timeout)) {
		if (!explain_room_in_queue(p, pm, &e))
			return (VERDICT_REFUSE);
		if (pm->restart_at >= 0)
			snprintf(slots, sizeof(slots), " in %llds",
			    (long long)((pm->restart_at > t ?
			    pm->restart_at - t + 999 : 0) / 1000));
		else
			slots[0] = '\0';
		say(&e, "%s: waits for its restart%s, then for its load (it "
		    "failed: %s)", pm->plan.name, slots, pm->error);
		return (VERDICT_WAIT);
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
