/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The pool's pure decisions: the fit test, the choice of the model to
 * stop, the room a load has, the estimates of a wait; and the words for
 * an exit.  Each is a function of its arguments alone (struct
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
 * (busy), and what nothing frees (fixed: not lazy).
 */
struct room_sums {
	int64_t		 used;
	int64_t		 loading;
	int64_t		 freeable;
	int64_t		 busy;
	int64_t		 fixed;
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
		if (view_committed(&v[i]))
			s->used = mem_add(s->used, v[i].need);
		if (v[i].state == STATE_LOADING)
			s->loading = mem_add(s->loading, v[i].need);
		if (view_evictable(&v[i]))
			s->freeable = mem_add(s->freeable, v[i].need);
		else if (v[i].lazy && (v[i].state == STATE_READY ||
		    v[i].state == STATE_LOADING))
			s->busy = mem_add(s->busy, v[i].need);
		else if (view_committed(&v[i]))
			s->fixed = mem_add(s->fixed, v[i].need);
	}
}

/*
 * Room for v[self], by the fit test alone: as things are (the loading
 * ones count against the measured memory too, as they have not taken
 * theirs yet); else with the eviction candidate stopped, unless by need
 * the budget shows that stopping every idle one would not be enough;
 * else once the busy and kept lazy ones are stopped as well.
 */
int
pool_room(const struct pool_view *v, size_t n, size_t self,
    const struct mem_snapshot *mem, int64_t reserve, int64_t budget,
    ssize_t *victim)
{
	struct room_sums	 s;
	struct mem_snapshot	 now, idle, *nowp = NULL, *idlep = NULL;
	int64_t			 need = v[self].need;

	room_sum(v, n, self, &s);
	if (mem != NULL) {
		now = idle = *mem;
		now.available -= s.loading;
		idle.available = mem_add(mem_add(now.available, s.freeable),
		    s.busy);
		nowp = &now;
		idlep = &idle;
	}
	*victim = -1;
	if (pool_fits(nowp, reserve, budget, s.used, need))
		return (ROOM_FITS);
	/* By need the budget is exact: stop nothing in vain. */
	if ((*victim = pool_eviction_candidate(v, n, self)) != -1 &&
	    pool_fits(NULL, reserve, budget, mem_add(s.fixed, s.busy), need))
		return (ROOM_EVICT);
	*victim = -1;
	if (s.busy > 0 && pool_fits(idlep, reserve, budget, s.fixed, need))
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
