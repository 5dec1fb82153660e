/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The pool's pure decisions: the fit test, the choice of the models to
 * stop, the room a load has (the one rule for making room, pool_room),
 * the fairness window, the estimates of a wait; and the words for an
 * exit.  Each is a function of its arguments alone (struct
 * pool_view, never a record), unit-tested without a pool.  Sums of
 * sizes saturate (memory.c's mem_add): a need near INT64_MAX never fits
 * by wrapping.
 *
 * It calls memory.c's arithmetic only.
 *
 * Calls: memory.c.
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "memory.h"
#include "pool.h"

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
 * The choice of the model to stop to make room: of the views but self
 * (n or more: none), the ready, idle, lazy one used least recently; the
 * first in config order among equals.  -1 when every loaded model is
 * busy, kept or not lazy.
 */
ssize_t
pool_eviction_candidate(const struct pool_view *v, size_t n, size_t self)
{
	size_t	 i;
	ssize_t	 best = -1;

	for (i = 0; i < n; i++) {
		if (i == self || !view_evictable(&v[i]))
			continue;
		if (best == -1 || v[i].last_used < v[best].last_used)
			best = (ssize_t)i;
	}
	return (best);
}

/* a used less recently than b: never used is the oldest, then the
 * first in the table. */
static int
cand_older(const struct pool_cand *c, size_t a, size_t b)
{
	if (c[a].last_used != c[b].last_used)
		return (c[a].last_used < c[b].last_used);
	return (a < b);
}

/* a frees more than b, or as much and is older. */
static int
cand_larger(const struct pool_cand *c, size_t a, size_t b)
{
	if (c[a].frees != c[b].frees)
		return (c[a].frees > c[b].frees);
	return (cand_older(c, a, b));
}

/*
 * What the r largest candidates free together, of those newer than
 * after (n: any) and older than last (or last itself, with incl);
 * bysize is the order by size.
 */
static int64_t
largest(const struct pool_cand *c, size_t n, const size_t *bysize,
    size_t after, size_t last, int incl, size_t r)
{
	int64_t	 sum = 0;
	size_t	 i, x;

	for (i = 0; i < n && r > 0; i++) {
		x = bysize[i];
		if (after != n && !cand_older(c, after, x))
			continue;
		if (!(incl && x == last) && !cand_older(c, x, last))
			continue;
		sum = mem_add(sum, c[x].frees);
		r--;
	}
	return (sum);
}

/*
 * The fewest: k, from the largest down.  Of the sets of k, the newest
 * member is the oldest it can be: the m-th oldest, for the first m
 * whose k largest of the m oldest free enough (it is one of them, or
 * m - 1 would do).  The other k - 1 come from the older ones, oldest
 * first: each is taken when the largest of those after it can still
 * make up the rest.  Each step is a pass over n: O(n^2) in all.
 */
ssize_t
pool_stop_set(const struct pool_cand *c, size_t n, int64_t want,
    size_t *stop)
{
	size_t	*byage = stop, *bysize = stop + n;
	size_t	 i, j, k, m, r, w, last, x;
	int64_t	 sum;

	if (want <= 0)
		return (0);
	for (i = 0; i < n; i++) {
		for (j = i; j > 0 && cand_older(c, i, byage[j - 1]); j--)
			byage[j] = byage[j - 1];
		byage[j] = i;
		for (j = i; j > 0 && cand_larger(c, i, bysize[j - 1]); j--)
			bysize[j] = bysize[j - 1];
		bysize[j] = i;
	}
	for (k = 0, sum = 0; k < n && sum < want; k++)
		sum = mem_add(sum, c[bysize[k]].frees);
	if (sum < want)
		return (-1);
	for (m = k; m < n; m++)
		if (largest(c, n, bysize, n, byage[m - 1], 1, k) >= want)
			break;
	last = byage[m - 1];
	/* The rest, oldest first, written over byage as it is read. */
	sum = mem_add(0, c[last].frees);
	for (j = 0, w = 0, r = k - 1; j + 1 < m && r > 0; j++) {
		x = byage[j];
		if (mem_add(mem_add(sum, c[x].frees), largest(c, n, bysize, x,
		    last, 0, r - 1)) < want)
			continue;
		sum = mem_add(sum, c[x].frees);
		stop[w++] = x;
		r--;
	}
	stop[w++] = last;
	return ((ssize_t)w);
}

/* What the others hold by need: loaded, loading, or still running. */
static int
view_committed(const struct pool_view *v)
{
	return (v->state == STATE_READY || v->state == STATE_LOADING ||
	    v->running);
}

int64_t
pool_committed(const struct pool_view *v, size_t n, size_t self)
{
	int64_t	 sum = 0;
	size_t	 i;

	for (i = 0; i < n; i++)
		if (i != self && view_committed(&v[i]))
			sum = mem_add(sum, v[i].need);
	return (sum);
}

/*
 * The memory the others hold, by what could free it: what the measured
 * memory does not show yet (loading), what stopping idle lazy models
 * frees (freeable), what busy or kept lazy ones will free once idle
 * (busy), and what nothing frees (fixed: not lazy).  For a load that
 * would go ahead of others: what those loads claim (claims), what
 * stays while they load (staying: what is not lazy, loading, or held)
 * and what they may stop (leaving: the rest).
 */
struct room_sums {
	int64_t		 used;
	int64_t		 loading;
	int64_t		 freeable;
	int64_t		 busy;
	int64_t		 fixed;
	int64_t		 claims;
	int64_t		 staying;
	int64_t		 leaving;
};

static void
room_sum(const struct pool_view *v, size_t n, size_t self,
    struct room_sums *s)
{
	size_t	 i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < n; i++) {
		if (i == self)
			continue;
		if (v[i].claim && !view_committed(&v[i]))
			s->claims = mem_add(s->claims, v[i].need);
		if (!view_committed(&v[i]))
			continue;
		s->used = mem_add(s->used, v[i].need);
		if (v[i].state == STATE_LOADING)
			s->loading = mem_add(s->loading, v[i].need);
		if (!v[i].lazy || v[i].state == STATE_LOADING || v[i].held)
			s->staying = mem_add(s->staying, v[i].need);
		else
			s->leaving = mem_add(s->leaving, v[i].need);
		if (view_evictable(&v[i]))
			s->freeable = mem_add(s->freeable, v[i].need);
		else if (v[i].lazy && (v[i].state == STATE_READY ||
		    v[i].state == STATE_LOADING))
			s->busy = mem_add(s->busy, v[i].need);
		else
			s->fixed = mem_add(s->fixed, v[i].need);
	}
}

/* What is missing for need, by need: in the measured memory (now) and
 * in the budget, whichever is more. */
static int64_t
room_missing(const struct mem_snapshot *now, int64_t reserve,
    int64_t budget, int64_t used, int64_t need)
{
	int64_t	 m = 0, b = 0, want;

	if (now != NULL && (want = mem_add(need, reserve)) > now->available)
		m = now->available >= 0 ? want - now->available :
		    mem_add(want, now->available == INT64_MIN ? INT64_MAX :
		    -now->available);
	if (budget > 0 && (want = mem_add(used, need)) > budget)
		b = want - budget;
	return (m > b ? m : b);
}

/* The index of the k-th view that may be stopped for self. */
static size_t
nth_evictable(const struct pool_view *v, size_t n, size_t self, size_t k)
{
	size_t	 i;

	for (i = 0; i < n; i++)
		if (i != self && view_evictable(&v[i]) && k-- == 0)
			break;
	return (i);
}

/* The set to stop for v[self], into st (see pool_room). */
static void
room_stops(const struct pool_view *v, size_t n, size_t self,
    ssize_t lru, int64_t missing, int mode, struct pool_stops *st)
{
	size_t	 i, k = 0;
	ssize_t	 got;

	for (i = 0; i < n; i++) {
		if (i == self || !view_evictable(&v[i]))
			continue;
		st->cand[k].frees = v[i].need;
		st->cand[k++].last_used = v[i].last_used;
	}
	st->ncand = k;
	st->missing = missing;
	if (mode != ROOM_MODE_REFERENCE &&
	    (got = pool_stop_set(st->cand, k, missing, st->stop)) > 0) {
		for (i = 0; i < (size_t)got; i++)
			st->stop[i] = nth_evictable(v, n, self, st->stop[i]);
		st->n = (size_t)got;
		st->how = STOPS_FEWEST;
		return;
	}
	st->stop[0] = (size_t)lru;
	st->n = 1;
	st->how = mode == ROOM_MODE_REFERENCE ? STOPS_LRU : STOPS_ONE_BY_ONE;
}

/*
 * Room for v[self]: the one rule (see pool.h).  By need the budget is
 * exact, so nothing is stopped in vain; the measured memory is not (a
 * process may take more or less than its need), so a load that stops
 * models measures again once they have exited.
 */
int
pool_room(const struct pool_view *v, size_t n, size_t self,
    const struct mem_snapshot *mem, int64_t reserve, int64_t budget,
    int mode, struct pool_stops *st)
{
	struct room_sums	 s;
	struct mem_snapshot	 now, idle, beside;
	struct mem_snapshot	*nowp = NULL, *idlep = NULL, *besidep = NULL;
	int64_t			 need = v[self].need;
	ssize_t			 lru;

	st->n = st->ncand = 0;
	st->missing = 0;
	st->how = STOPS_FEWEST;
	room_sum(v, n, self, &s);
	if (mem != NULL) {
		now = idle = beside = *mem;
		now.available -= s.loading;
		idle.available = mem_add(mem_add(now.available, s.freeable),
		    s.busy);
		/* every lazy model stopped but those that stay */
		beside.available = mem_add(now.available, s.leaving);
		nowp = &now;
		idlep = &idle;
		besidep = &beside;
	}
	if (mode == ROOM_MODE_AHEAD) {
		if (pool_fits(nowp, reserve, budget, s.used, need) &&
		    pool_fits(besidep, reserve, budget, s.staying,
		    mem_add(s.claims, need)))
			return (ROOM_FITS);
		return (ROOM_BEHIND);
	}
	if (pool_fits(nowp, reserve, budget, s.used, need))
		return (ROOM_FITS);
	if ((lru = pool_eviction_candidate(v, n, self)) != -1 &&
	    pool_fits(NULL, reserve, budget, mem_add(s.fixed, s.busy), need)) {
		room_stops(v, n, self, lru, room_missing(nowp, reserve, budget,
		    s.used, need), mode, st);
		return (ROOM_EVICT);
	}
	if (s.busy > 0 && pool_fits(idlep, reserve, budget, s.fixed, need))
		return (ROOM_WAIT);
	return (ROOM_NEVER);
}

int64_t
pool_fairness(int64_t setting, int64_t load_ms)
{
	int64_t	 w;

	if (setting >= 0)
		return (setting);
	if (load_ms < 0)
		load_ms = POOL_GUESS_LOAD;
	w = load_ms > POOL_FAIRNESS_MAX / POOL_FAIRNESS_K ? POOL_FAIRNESS_MAX :
	    load_ms * POOL_FAIRNESS_K;
	if (w < POOL_FAIRNESS_MIN)
		return (POOL_FAIRNESS_MIN);
	return (w > POOL_FAIRNESS_MAX ? POOL_FAIRNESS_MAX : w);
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
