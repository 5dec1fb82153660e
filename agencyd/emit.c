/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * What agencyd tells the proxy for its events stream (console/EVENTS.md),
 * each thing once, whatever the number of subscribers: the whole set of
 * model records when a proxy is ready and after each reload (a sync),
 * every change of state with the record after it, the queue figures of
 * a model when they changed, and the memory.  The queue figures change
 * with every request, so they are looked at every EMIT_QUEUE_MS and
 * sent only when they differ from what was sent: a burst of requests is
 * one event.  The proxy numbers the events, keeps a backlog and fans
 * them out; agencyd keeps no subscriber and parses nothing of it.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agencyd.h"
#include "log.h"
#include "memory.h"

#define EMIT_QUEUE_MS		250
#define EMIT_MEMORY_MS	5000

static struct event	 queue_ev, memory_ev;
static struct agencyd	*ed;		/* for the rings' hook */
static int		 emit_on;

static void	 emit_queue_tick(int, short, void *);
static void	 emit_memory_tick(int, short, void *);

static int64_t
wall_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* A served model by name (models.c's model_find, which calls here). */
static struct model *
served(struct agencyd *d, const char *name)
{
	struct model	*m;

	TAILQ_FOREACH(m, &d->models, entry)
		if (strcmp(m->plan.name, name) == 0)
			return (m);
	return (NULL);
}

/* The status of a served (or draining) model by name: 0, or -1. */
static int
model_status(struct agencyd *d, const char *name, struct proto_status *st)
{
	struct model	*m;
	size_t		 i, n = pool_count(d->pool);

	for (i = 0; i < n; i++) {
		if (pool_status(d->pool, i, st) == -1)
			continue;
		if (strcmp(st->model, name) == 0) {
			st->reqid = 0;
			/* what the pool does not know of it */
			if ((m = served(d, name)) != NULL && m->mc != NULL)
				(void)strlcpy(st->runtime, m->mc->rt->name,
				    sizeof(st->runtime));
			return (0);
		}
	}
	return (-1);
}

static void
queue_of(const struct proto_status *st, struct proto_ev_queue *q)
{
	memset(q, 0, sizeof(*q));
	(void)strlcpy(q->model, st->model, sizeof(q->model));
	q->in_progress = st->in_progress;
	q->queued = st->queued;
	q->waiting = st->waiting;
	q->oldest_wait = st->oldest_wait;
	q->last_used = st->last_used;
}

/* Whether the proxy should hear of q, against what it was last told
 * (the oldest wait alone grows all the time: not a change). */
static int
queue_differs(const struct proto_ev_queue *a, const struct proto_ev_queue *b)
{
	return (a->in_progress != b->in_progress || a->queued != b->queued ||
	    a->waiting != b->waiting || a->last_used != b->last_used);
}

void
emit_memory(struct agencyd *d)
{
	struct proto_ev_memory	 em;
	struct mem_snapshot	 ms;
	struct proto_status	 st;
	size_t			 i, n;

	if (!d->proxy_ready)
		return;
	memset(&em, 0, sizeof(em));
	em.time = wall_ms();
	em.budget = d->conf->budget;
	if (mem_snapshot(&ms) == 0) {
		em.total = ms.total;
		em.available = ms.available;
		em.reserve = pool_reserve(d->conf->reserve, ms.total);
	} else
		em.total = em.available = em.reserve = -1;
	n = pool_count(d->pool);
	for (i = 0; i < n; i++)
		if (pool_status(d->pool, i, &st) == 0 &&
		    (st.state == STATE_READY || st.state == STATE_LOADING))
			em.used += st.need;
	proxy_compose(d, IMSG_EV_MEMORY, &em, sizeof(em));
}

/*
 * The whole set, in configuration order: to a new proxy (reload 0), or
 * after a reload (1, ok or not; changed names the models it replaced).
 */
void
emit_sync(struct agencyd *d, int reload, int ok, const char *error)
{
	struct proto_ev_sync	 es;
	struct proto_ev_record	 er;
	struct model		*m;

	ed = d;
	if (!d->proxy_ready)
		return;
	memset(&es, 0, sizeof(es));
	es.time = wall_ms();
	es.reload = reload;
	es.ok = ok;
	if (error != NULL)
		(void)strlcpy(es.error, error, sizeof(es.error));
	proxy_compose(d, IMSG_EV_SYNC_START, &es, sizeof(es));
	if (ok) {
		TAILQ_FOREACH(m, &d->models, entry) {
			memset(&er, 0, sizeof(er));
			if (model_status(d, m->plan.name, &er.st) == -1)
				continue;
			er.changed = m->ev_changed;
			m->ev_changed = 0;
			m->ev_state = er.st.state;
			m->ev_restart_at = er.st.restart_at;
			queue_of(&er.st, &m->ev_queue);
			proxy_compose(d, IMSG_EV_RECORD, &er, sizeof(er));
		}
	}
	proxy_compose(d, IMSG_EV_SYNC_END, &es, sizeof(es));
	emit_memory(d);
}

/* The pool changed a record's state (ops->changed). */
void
emit_changed(struct agencyd *d, const char *name)
{
	struct proto_ev_state	 es;
	struct model		*m;

	if (!d->proxy_ready || d->reloading ||
	    (m = served(d, name)) == NULL)
		return;
	memset(&es, 0, sizeof(es));
	if (model_status(d, name, &es.st) == -1 ||
	    (es.st.state == m->ev_state &&
	    es.st.restart_at == m->ev_restart_at))
		return;
	es.time = wall_ms();
	es.from = m->ev_state;
	m->ev_state = es.st.state;
	m->ev_restart_at = es.st.restart_at;
	queue_of(&es.st, &m->ev_queue);
	emit_memory(d);
	proxy_compose(d, IMSG_EV_STATE, &es, sizeof(es));
}

static void
emit_queue_tick(int fd, short ev, void *arg)
{
	struct agencyd		*d = arg;
	struct proto_status	 st;
	struct proto_ev_queue	 q;
	struct model		*m;
	struct timeval		 tv = { 0, EMIT_QUEUE_MS * 1000 };

	(void)fd;
	(void)ev;
	if (d->proxy_ready && !d->reloading) {
		TAILQ_FOREACH(m, &d->models, entry) {
			if (model_status(d, m->plan.name, &st) == -1)
				continue;
			queue_of(&st, &q);
			if (!queue_differs(&q, &m->ev_queue))
				continue;
			m->ev_queue = q;
			q.time = wall_ms();
			proxy_compose(d, IMSG_EV_QUEUE, &q, sizeof(q));
		}
	}
	evtimer_add(&queue_ev, &tv);
}

static void
emit_memory_tick(int fd, short ev, void *arg)
{
	struct timeval	 tv = { EMIT_MEMORY_MS / 1000, 0 };

	(void)fd;
	(void)ev;
	emit_memory(arg);
	evtimer_add(&memory_ev, &tv);
}

void
emit_init(struct agencyd *d)
{
	struct timeval	 q = { 0, EMIT_QUEUE_MS * 1000 };
	struct timeval	 mm = { EMIT_MEMORY_MS / 1000, 0 };

	ed = d;
	if (emit_on)
		return;
	emit_on = 1;
	evtimer_set(&queue_ev, emit_queue_tick, d);
	evtimer_set(&memory_ev, emit_memory_tick, d);
	evtimer_add(&queue_ev, &q);
	evtimer_add(&memory_ev, &mm);
}

void
emit_stop(void)
{
	if (!emit_on)
		return;
	emit_on = 0;
	evtimer_del(&queue_ev);
	evtimer_del(&memory_ev);
}

static void	(*line_hook)(struct model *, uint64_t, const char *);

/* Who else hears of each new line of a model (control.c's followers). */
void
emit_set_line_hook(void (*hook)(struct model *, uint64_t, const char *))
{
	line_hook = hook;
}

/*
 * A model wrote a line (its ring's hook): to the proxy when it follows
 * that model's log, and to the hook.
 */
void
emit_logline(void *arg, uint64_t seq, const char *line)
{
	struct model		*m = arg;
	struct agencyd		*d = ed;
	struct proto_logline	 ll;

	if (m->log_follow && d != NULL && d->proxy_ready) {
		memset(&ll, 0, sizeof(ll));
		ll.seq = seq;
		(void)strlcpy(ll.model, m->plan.name, sizeof(ll.model));
		(void)strlcpy(ll.line, line, sizeof(ll.line));
		proxy_compose(d, IMSG_LOGS_LINE, &ll, sizeof(ll));
	}
	if (line_hook != NULL)
		line_hook(m, seq, line);
}
