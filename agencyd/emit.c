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
 *
 * It is called by agencyd.c, reload.c and poolops.c (the pool's changed
 * op), and calls below it: proxylink.c (what goes to the proxy, and the
 * hook that tells it of a new proxy), model.c (the records and the
 * memory) and the pool.  A model's log lines do not pass here: they go from
 * poolops.c's hook to proxylink.c and control.c alike.
 *
 * Calls: model.c, pool_status.c, proxylink.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <event.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agencyd.h"
#include "log.h"

#define EMIT_QUEUE_MS		250
#define EMIT_MEMORY_MS	5000

static struct event	 queue_ev, memory_ev;
static int		 emit_on;

static void	 emit_queue_tick(int, short, void *);
static void	 emit_memory_tick(int, short, void *);
static void	 emit_proxy_ready(void *, struct agencyd *);

static int64_t
wall_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* The status of a served model by name: 0, or -1. */
static int
model_status(struct agencyd *d, const char *name, struct proto_status *st)
{
	if (pool_status_name(d->pool, name, st) == -1)
		return (-1);
	st->reqid = 0;
	/* what the pool does not know of it */
	models_fill_status(d, st);
	return (0);
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

	if (!d->proxy_ready)
		return;
	memset(&em, 0, sizeof(em));
	em.time = wall_ms();
	models_memory(d, &em.mem);
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
	    (m = model_find(d, name)) == NULL)
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

/* A new proxy: its events stream starts from the whole set. */
static void
emit_proxy_ready(void *arg, struct agencyd *d)
{
	(void)arg;
	emit_sync(d, 0, 1, NULL);
}

void
emit_init(struct agencyd *d)
{
	struct timeval	 q = { 0, EMIT_QUEUE_MS * 1000 };
	struct timeval	 mm = { EMIT_MEMORY_MS / 1000, 0 };

	if (emit_on)
		return;
	emit_on = 1;
	proxy_on_ready(emit_proxy_ready, NULL);
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
