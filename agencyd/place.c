/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Where a model goes on the GPUs: a pure decision over a table of
 * devices and models, no I/O, no allocation.  It is DESIGN.md's rule
 * for making room (the pool), used at once for host memory and for
 * each device the model would use; place_decide says it step by step.
 * Sums saturate (mem_add): a need near INT64_MAX never fits by
 * wrapping.
 *
 * Calls: memory.c.
 */
#include <sys/types.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gpu.h"
#include "memory.h"

/* Resources a decision weighs: the devices, then these two. */
#define R_HOST		PLACE_DEV_MAX
#define R_BUDGET	(PLACE_DEV_MAX + 1)
#define R_MAX		(PLACE_DEV_MAX + 2)

/* A set of devices for the model, and what each slot needs there. */
struct cand {
	uint32_t	 n;
	uint8_t		 dev[PLACE_SPAN_MAX];	/* slot order */
};

/* Work space of one decision. */
struct work {
	const struct place_table	*t;
	size_t				 self;
	const struct place_model	*m;
	int64_t				 free[PLACE_DEV_MAX];
	int64_t				 idle[PLACE_DEV_MAX];	/* frees */
	int64_t				 lazy[PLACE_DEV_MAX];	/* + busy */
	int64_t				 host_idle;
	int64_t				 host_lazy;	/* idle + busy */
	uint8_t				 elig[PLACE_DEV_MAX];	/* devices */
	uint32_t			 nelig;
	uint8_t				 order[PLACE_SPAN_MAX];	/* slots,
							 * largest share first */
};

static int64_t
pos(int64_t v)
{
	return (v < 0 ? 0 : v);
}

static int64_t
min64(int64_t a, int64_t b)
{
	return (a < b ? a : b);
}

/* a used less recently than b (never used is the oldest). */
static int
older(const struct place_model *a, size_t ai, const struct place_model *b,
    size_t bi)
{
	if (a->last_used != b->last_used)
		return (a->last_used < b->last_used);
	return (ai < bi);
}

static int
device_ok(const struct place_table *t, uint32_t d)
{
	return (d < t->ndev && t->dev[d].usable && t->dev[d].total > 0);
}

/* What a held model counts for, and what it would free. */
static void
work_init(struct work *w, const struct place_table *t, size_t self)
{
	const struct place_model	*c;
	int64_t				 held[PLACE_DEV_MAX];
	size_t				 i;
	uint32_t			 d, j, k, tmp;

	memset(w, 0, sizeof(*w));
	w->t = t;
	w->self = self;
	w->m = &t->model[self];
	memset(held, 0, sizeof(held));
	for (i = 0; i < t->nmodel; i++) {
		c = &t->model[i];
		if (i == self || c->state == PLACE_STOPPED)
			continue;
		for (j = 0; j < c->span && j < PLACE_SPAN_MAX; j++) {
			if ((d = c->dev[j]) >= t->ndev)
				continue;
			held[d] = mem_add(held[d], c->share[j]);
			if (c->state == PLACE_IDLE)
				w->idle[d] = mem_add(w->idle[d], c->share[j]);
			if (c->state == PLACE_IDLE || c->state == PLACE_BUSY)
				w->lazy[d] = mem_add(w->lazy[d], c->share[j]);
		}
		if (c->state == PLACE_IDLE)
			w->host_idle = mem_add(w->host_idle, c->host);
		if (c->state == PLACE_IDLE || c->state == PLACE_BUSY)
			w->host_lazy = mem_add(w->host_lazy, c->host);
	}
	for (d = 0; d < t->ndev && d < PLACE_DEV_MAX; d++) {
		w->free[d] = pos(t->dev[d].total) -
		    mem_add(mem_add(t->dev[d].headroom, t->dev[d].outside),
		    held[d]);
		if (device_ok(t, d) && (w->m->allowed >> d) & 1)
			w->elig[w->nelig++] = (uint8_t)d;
	}
	/* Slots by share, largest first (stable). */
	for (j = 0; j < w->m->span && j < PLACE_SPAN_MAX; j++)
		w->order[j] = (uint8_t)j;
	for (j = 1; j < w->m->span && j < PLACE_SPAN_MAX; j++)
		for (k = j; k > 0 && w->m->share[w->order[k]] >
		    w->m->share[w->order[k - 1]]; k--) {
			tmp = w->order[k];
			w->order[k] = w->order[k - 1];
			w->order[k - 1] = (uint8_t)tmp;
		}
}

/*
 * The k eligible devices with the largest key (the lower index among
 * equals), skipping skip (or -1), into c in slot order: the largest
 * share to the largest key.  0, or -1 when there are not k.
 */
static int
pick(const struct work *w, const int64_t *key, int skip, uint32_t k,
    struct cand *c)
{
	uint8_t		 s[PLACE_DEV_MAX];
	uint32_t	 n = 0, i, j;
	uint8_t		 tmp;

	for (i = 0; i < w->nelig; i++) {
		if ((int)w->elig[i] == skip)
			continue;
		s[n] = w->elig[i];
		for (j = n++; j > 0 && key[s[j]] > key[s[j - 1]]; j--) {
			tmp = s[j];
			s[j] = s[j - 1];
			s[j - 1] = tmp;
		}
	}
	if (n < k)
		return (-1);
	c->n = w->m->span;
	for (i = 0; i < k; i++)
		c->dev[w->order[i]] = s[i];
	return (0);
}

/* How much room is short of need (0: none), saturating. */
static int64_t
short_by(int64_t need, int64_t room)
{
	need = pos(need);
	if (room >= need)
		return (0);
	if (room >= 0)
		return (need - room);
	return (mem_add(need, room == INT64_MIN ? INT64_MAX : -room));
}

/* Deficits of the model on c, by resource; 1 when any is short. */
static int
deficits(const struct work *w, const struct cand *c, const int64_t *room,
    int64_t host_room, int64_t budget_room, int64_t *def)
{
	const struct place_table	*t = w->t;
	uint32_t			 j;
	int				 any = 0;

	memset(def, 0, sizeof(int64_t) * R_MAX);
	for (j = 0; j < c->n; j++)
		if ((def[c->dev[j]] = short_by(w->m->share[j],
		    room[c->dev[j]])) > 0)
			any = 1;
	if (t->host_free != PLACE_UNCHECKED &&
	    (def[R_HOST] = short_by(w->m->host, host_room)) > 0)
		any = 1;
	if (t->budget_free != PLACE_UNCHECKED &&
	    (def[R_BUDGET] = short_by(w->m->host, budget_room)) > 0)
		any = 1;
	return (any);
}

/* What stopping model c frees of what def says is short. */
static int64_t
gain(const struct place_model *c, const int64_t *def)
{
	int64_t		 g = 0;
	uint32_t	 j;

	for (j = 0; j < c->span && j < PLACE_SPAN_MAX; j++)
		if (c->dev[j] < PLACE_DEV_MAX)
			g = mem_add(g, min64(def[c->dev[j]],
			    pos(c->share[j])));
	g = mem_add(g, min64(def[R_HOST], pos(c->host)));
	g = mem_add(g, min64(def[R_BUDGET], pos(c->host)));
	return (g);
}

/* cover -= (sign < 0) or += what c frees, on every resource. */
static void
cover_add(int64_t *cover, const struct place_model *c, int sign)
{
	uint32_t	 j;

	for (j = 0; j < c->span && j < PLACE_SPAN_MAX; j++)
		if (c->dev[j] < PLACE_DEV_MAX)
			cover[c->dev[j]] = sign > 0 ?
			    mem_add(cover[c->dev[j]], c->share[j]) :
			    cover[c->dev[j]] - pos(c->share[j]);
	cover[R_HOST] = sign > 0 ? mem_add(cover[R_HOST], c->host) :
	    cover[R_HOST] - pos(c->host);
	cover[R_BUDGET] = sign > 0 ? mem_add(cover[R_BUDGET], c->host) :
	    cover[R_BUDGET] - pos(c->host);
}

static int
covered(const int64_t *cover, const int64_t *need)
{
	int	 r;

	for (r = 0; r < R_MAX; r++)
		if (cover[r] < need[r])
			return (0);
	return (1);
}

/*
 * The idle models to stop so that the model fits on c: their indexes
 * into stop (oldest first), their count, or -1 when stopping every idle
 * one would not be enough.  stop is nmodel long: it holds the models
 * that free something short, those taken first.
 */
static ssize_t
greedy(const struct work *w, const struct cand *c, size_t *stop)
{
	const struct place_table	*t = w->t;
	const struct place_model	*mi;
	int64_t				 need[R_MAX], left[R_MAX];
	int64_t				 cover[R_MAX], g, bestg;
	size_t				 n = 0, len = 0, i, j, best, tmp;

	if (!deficits(w, c, w->free, t->host_free, t->budget_free, need))
		return (0);
	/* The models that free something short, and whether all would do. */
	memset(cover, 0, sizeof(cover));
	for (i = 0; i < t->nmodel; i++) {
		mi = &t->model[i];
		if (i == w->self || mi->state != PLACE_IDLE ||
		    gain(mi, need) == 0)
			continue;
		stop[len++] = i;
		cover_add(cover, mi, 1);
	}
	if (!covered(cover, need))
		return (-1);
	/* Taken ones move to the front: stop[0..n). */
	memcpy(left, need, sizeof(left));
	memset(cover, 0, sizeof(cover));
	while (!covered(cover, need)) {
		best = len;
		bestg = 0;
		for (i = n; i < len; i++) {
			mi = &t->model[stop[i]];
			g = gain(mi, left);
			if (g > bestg || (g == bestg && g > 0 &&
			    older(mi, stop[i], &t->model[stop[best]],
			    stop[best]))) {
				best = i;
				bestg = g;
			}
		}
		if (best == len)
			return (-1);	/* cannot happen: all would do */
		tmp = stop[n];
		stop[n] = stop[best];
		stop[best] = tmp;
		cover_add(cover, &t->model[stop[n++]], 1);
		for (j = 0; j < R_MAX; j++)
			left[j] = pos(need[j] - cover[j]);
	}
	/* The most recently used first: any the others make needless. */
	for (;;) {
		best = n;
		for (i = 0; i < n; i++) {
			mi = &t->model[stop[i]];
			cover_add(cover, mi, -1);
			if (covered(cover, need) && (best == n ||
			    older(&t->model[stop[best]], stop[best], mi,
			    stop[i])))
				best = i;
			cover_add(cover, mi, 1);
		}
		if (best == n)
			break;
		cover_add(cover, &t->model[stop[best]], -1);
		stop[best] = stop[--n];
	}
	/* Oldest first. */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && older(&t->model[stop[j]], stop[j],
		    &t->model[stop[j - 1]], stop[j - 1]); j--) {
			tmp = stop[j];
			stop[j] = stop[j - 1];
			stop[j - 1] = tmp;
		}
	return ((ssize_t)n);
}

/* The last use of the most recent of the n models of stop. */
static int64_t
newest(const struct place_table *t, const size_t *stop, size_t n)
{
	int64_t	 v = -2;
	size_t	 i;

	for (i = 0; i < n; i++)
		if (t->model[stop[i]].last_used > v)
			v = t->model[stop[i]].last_used;
	return (v);
}

static int64_t
room_sum(const struct work *w, const struct cand *c)
{
	int64_t		 s = 0;
	uint32_t	 j;

	for (j = 0; j < c->n; j++)
		s = mem_add(s, w->free[c->dev[j]]);
	return (s);
}

/* The first resource short on c with room (a device, or PLACE_SHORT_*). */
static int
short_on(const struct work *w, const struct cand *c, const int64_t *room,
    int64_t host_room, int64_t budget_room)
{
	int64_t		 def[R_MAX];
	uint32_t	 j;

	(void)deficits(w, c, room, host_room, budget_room, def);
	if (def[R_HOST] > 0)
		return (PLACE_SHORT_HOST);
	if (def[R_BUDGET] > 0)
		return (PLACE_SHORT_BUDGET);
	for (j = 0; j < c->n; j++)
		if (def[c->dev[j]] > 0)
			return (c->dev[j]);
	return (PLACE_SHORT_HOST);
}

static enum place_verdict
result(struct place_result *r, enum place_verdict v, const struct cand *c,
    int why)
{
	r->verdict = v;
	if (c != NULL) {
		r->ndev = c->n;
		memcpy(r->dev, c->dev, c->n);
	}
	r->short_on = why;
	return (v);
}

/* a + b, b taken as >= 0, saturating; a may be below 0 (overcommit). */
static int64_t
plus(int64_t a, int64_t b)
{
	return (a < 0 ? a + pos(b) : mem_add(a, b));
}

/* The host's or the budget's room once models freeing extra stop. */
static int64_t
room_with(int64_t room, int64_t extra)
{
	return (room == PLACE_UNCHECKED ? PLACE_UNCHECKED : plus(room, extra));
}

/*
 * Candidate set i of the search (see the head) into c: 0, or -1 when
 * it has no such set.
 */
static int
candidate(const struct work *w, const int64_t *idle_room, uint32_t i,
    struct cand *c)
{
	uint32_t	 k = w->m->span;

	if (k == 0) {
		c->n = 0;
		return (0);
	}
	if (k == 1) {
		c->n = 1;
		c->dev[0] = w->elig[i];
		return (0);
	}
	if (i == 0)
		return (pick(w, w->free, -1, k, c));
	if (i == 1)
		return (pick(w, idle_room, -1, k, c));
	if (pick(w, w->free, w->elig[i - 2], k - 1, c) == -1)
		return (-1);
	/* the device itself takes the slot of the smallest share */
	c->dev[w->order[k - 1]] = w->elig[i - 2];
	return (0);
}

/*
 * The verdict for model self:
 *
 *   1. It fits now: its host need fits the host's free memory (and the
 *      budget), and on each of the `span` devices it may use, its share
 *      fits that device's free room, which is
 *          total - headroom - outside - the shares of the models held
 *      there (outside: what processes agency did not start use on it,
 *      measured).  Then the emptiest devices are taken (the most free
 *      room first, the lower index among equals), the largest share on
 *      the emptiest.  PLACE_FITS.
 *   2. Otherwise stop idle lazy models: for each set of devices tried,
 *      a greedy pass takes the idle model that frees the most of what
 *      is still short (on those devices, the host, the budget), the
 *      least recently used among equals, until nothing is short; then
 *      drops again any it took that the others make unnecessary, the
 *      most recently used first.  Of the sets tried, the one with the
 *      fewest stops wins, then the one whose stops are the oldest.  A
 *      model is only stopped where it frees something short: eviction
 *      happens on the right device.  PLACE_EVICT.
 *   3. Otherwise, when stopping the busy lazy models as well would make
 *      room, PLACE_WAIT; else PLACE_NEVER (nothing that can ever stop
 *      makes room: models that are not lazy, outside use, or devices
 *      too small or too few).
 *
 * Sets of devices tried for a model spanning k of them: for k = 1 each
 * device it may use; for k > 1, the k with the most free room, the k
 * with the most room once their idle models stop (which has room if
 * any set has), and each device with the k - 1 freest others.  A
 * bounded search, as the design asks: at most devices + 2 greedy
 * passes, each over the models a few times.
 */
enum place_verdict
place_decide(const struct place_table *t, size_t self,
    struct place_result *r)
{
	struct work	 w;
	struct cand	 c, best;
	int64_t		 room[PLACE_DEV_MAX], idle_room[PLACE_DEV_MAX];
	int64_t		 def[R_MAX], best_new = 0, best_sum = 0, v, s;
	size_t		*try = r->stop + t->nmodel, best_n = 0;
	ssize_t		 n;
	uint32_t	 k, i, tries;
	int		 have = 0;

	r->ndev = 0;
	r->nstop = 0;
	r->short_on = 0;
	if (self >= t->nmodel)
		return (result(r, PLACE_NEVER, NULL, PLACE_SHORT_DEVICES));
	work_init(&w, t, self);
	k = w.m->span;
	memset(&c, 0, sizeof(c));
	memset(&best, 0, sizeof(best));
	if (k > PLACE_SPAN_MAX || w.nelig < k)
		return (result(r, PLACE_NEVER, NULL, PLACE_SHORT_DEVICES));

	/* 1. Now, on the freest devices. */
	(void)pick(&w, w.free, -1, k, &c);
	if (!deficits(&w, &c, w.free, t->host_free, t->budget_free, def))
		return (result(r, PLACE_FITS, &c, 0));

	/* 2. Stopping idle models: the best of the sets tried. */
	for (i = 0; i < t->ndev && i < PLACE_DEV_MAX; i++)
		idle_room[i] = plus(w.free[i], w.idle[i]);
	tries = k == 0 ? 1 : k == 1 ? w.nelig : w.nelig + 2;
	for (i = 0; i < tries; i++) {
		/* Not even every idle model stopped: no need to look. */
		if (candidate(&w, idle_room, i, &c) == -1 ||
		    deficits(&w, &c, idle_room, room_with(t->host_free,
		    w.host_idle), room_with(t->budget_free, w.host_idle), def) ||
		    (n = greedy(&w, &c, try)) < 0)
			continue;
		v = newest(t, try, (size_t)n);
		s = room_sum(&w, &c);
		if (have && ((size_t)n > best_n || ((size_t)n == best_n &&
		    (v > best_new || (v == best_new && s <= best_sum)))))
			continue;
		have = 1;
		best = c;
		best_n = (size_t)n;
		best_new = v;
		best_sum = s;
		memcpy(r->stop, try, (size_t)n * sizeof(*try));
	}
	if (have) {
		r->nstop = best_n;
		return (result(r, PLACE_EVICT, &best, 0));
	}

	/* 3. Busy lazy models would free enough: wait; else never. */
	for (i = 0; i < t->ndev && i < PLACE_DEV_MAX; i++)
		room[i] = plus(w.free[i], w.lazy[i]);
	(void)pick(&w, room, -1, k, &c);
	if (!deficits(&w, &c, room, room_with(t->host_free, w.host_lazy),
	    room_with(t->budget_free, w.host_lazy), def)) {
		(void)pick(&w, w.free, -1, k, &c);
		return (result(r, PLACE_WAIT, NULL, short_on(&w, &c, w.free,
		    t->host_free, t->budget_free)));
	}
	return (result(r, PLACE_NEVER, NULL, short_on(&w, &c, room,
	    room_with(t->host_free, w.host_lazy),
	    room_with(t->budget_free, w.host_lazy))));
}

int
place_mask(const struct place_table *t, const char *const *names, size_t n,
    uint64_t *mask, size_t *bad)
{
	const char	*errstr;
	size_t		 i;
	uint32_t	 d;
	long long	 idx;

	*mask = 0;
	for (i = 0; i < n; i++) {
		idx = strtonum(names[i], 0, PLACE_DEV_MAX - 1, &errstr);
		if (errstr == NULL && (uint32_t)idx < t->ndev) {
			*mask |= 1ULL << idx;
			continue;
		}
		for (d = 0; d < t->ndev; d++)
			if (t->dev[d].id != NULL &&
			    strcasecmp(t->dev[d].id, names[i]) == 0)
				break;
		if (d == t->ndev) {
			*bad = i;
			return (-1);
		}
		*mask |= 1ULL << d;
	}
	return (0);
}

const char *
place_verdict_name(enum place_verdict v)
{
	switch (v) {
	case PLACE_FITS:
		return ("fits");
	case PLACE_EVICT:
		return ("evict");
	case PLACE_WAIT:
		return ("wait");
	case PLACE_NEVER:
		return ("never");
	default:
		return ("?");
	}
}
