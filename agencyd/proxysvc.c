/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * What agencyd does for the proxy: the switch that hands each message
 * from it (read whole by proxylink.c) to the file that owns it, and the
 * services that are no one else's: status, cancels (both ways), loads
 * and unloads (the admin routes) and models' logs.  Each may be asked
 * for only as often as the proxy has connections (proxy_bound); a
 * report of a cancel never sent, or one asked for twice, is hostile.
 * What a proxy asked for ends with it (svc_dropped).
 *
 * Calls: proxylink.c (the link, holds, its log), model.c (the records),
 * pool.c, pool_status.c, spawn.c, common/log.c.  Called by agencyd.c
 * (proxysvc_init, the models' lines) and control.c (a cancel).
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agencyd.h"
#include "log.h"
#include "proto.h"

/* The top bit tells agencyd's cancel ids from those the proxy chose. */
#define PROXY_CANCEL_OURS	(1ULL << 63)

/* One cancel sent to the proxy, until it reports it done. */
struct pcancel {
	TAILQ_ENTRY(pcancel)	 entry;
	uint64_t		 id;
	char			 model[AGENCY_NAME_MAX];
	proxy_cancel_cb		 cb;	/* NULL: the proxy asked for it */
	void			*arg;
};
TAILQ_HEAD(pcancels, pcancel);

/* A load, unload or stop the proxy asked for (its admin route), until
 * done. */
struct padmin {
	TAILQ_ENTRY(padmin)	 entry;
	struct agencyd		*d;
	uint64_t		 reqid;
	uint32_t		 gen;		/* the proxy that asked */
	int			 wait;
	int			 answered;	/* load without waiting */
	int			 inside;	/* in pool_load's call */
	int			 stop;		/* a stop, not an unload */
};

/* What the current proxy has asked for and is owed. */
static struct {
	struct pcancels		 cancels;
	uint64_t		 cancel_next;
	uint64_t		 asked;		/* cancels it asked for */
	uint64_t		 admins;	/* loads, unloads it waits on */
} svc = { TAILQ_HEAD_INITIALIZER(svc.cancels), 1, 0, 0 };

/* Every padmin whose pool callback has not come (of any proxy). */
static TAILQ_HEAD(, padmin)	 padmins = TAILQ_HEAD_INITIALIZER(padmins);

static int	 svc_message(struct agencyd *, uint32_t, union proto_msg *);
static void	 svc_dropped(struct agencyd *);
static int	 svc_status(struct agencyd *, const struct proto_reqid *);
static int	 svc_cancel_asked(struct agencyd *,
		    const struct proto_cancel *);
static int	 svc_cancelled(struct agencyd *, const struct proto_cancel *);
static int	 svc_admin(struct agencyd *, const struct proto_admin *);
static int	 svc_logs(struct agencyd *, uint32_t,
		    const struct proto_logs_req *);

void
proxysvc_init(struct agencyd *d)
{
	(void)d;
	proxy_on_message(svc_message, svc_dropped);
}

/* Each message from the proxy, to its owner; -1 when the proxy was
 * killed. */
static int
svc_message(struct agencyd *d, uint32_t type, union proto_msg *u)
{
	switch (type) {
	case IMSG_HOLD_REQ:
		return (proxy_hold(d, &u->hold_req));
	case IMSG_HOLD_WITHDRAW:
		return (proxy_withdraw(d, &u->reqid));
	case IMSG_HOLD_RELEASE:
		return (proxy_release(d, &u->holdid));
	case IMSG_PROBE_RESULT:
		return (proxy_probe_result(d, &u->probe_result));
	case IMSG_LOG:
		return (proxy_logline(d, &u->log));
	case IMSG_PROXY_READY:
		return (proxy_ready(d));
	case IMSG_DRAINED:
		return (proxy_drained(d));
	case IMSG_STATUS_REQ:
		return (svc_status(d, &u->reqid));
	case IMSG_CANCEL:
		return (svc_cancel_asked(d, &u->cancel));
	case IMSG_CANCEL_DONE:
		return (svc_cancelled(d, &u->cancel));
	case IMSG_ADMIN:
		return (svc_admin(d, &u->admin));
	case IMSG_LOGS_REQ:
	case IMSG_LOGS_UNFOLLOW:
		return (svc_logs(d, type, &u->logs_req));
	default:
		return (proxy_hostile(d, "sent a message of no service",
		    type));
	}
}

static void
padmin_free(struct padmin *a)
{
	TAILQ_REMOVE(&padmins, a, entry);
	free(a);
}

/* After pool_free, no callback comes: what waited for one goes. */
void
proxy_cleanup(void)
{
	struct padmin	*a;

	while ((a = TAILQ_FIRST(&padmins)) != NULL)
		padmin_free(a);
}

/* The cancels in flight end with their proxy. */
static void
svc_cancels_end(void)
{
	struct pcancels	 gone;
	struct pcancel	*pc;

	TAILQ_INIT(&gone);
	TAILQ_CONCAT(&gone, &svc.cancels, entry);
	while ((pc = TAILQ_FIRST(&gone)) != NULL) {
		TAILQ_REMOVE(&gone, pc, entry);
		if (pc->cb != NULL)
			pc->cb(pc->arg, 0, 0);
		free(pc);
	}
}

/*
 * The proxy is gone (or a new one starts): nobody will answer the
 * cancels it was sent, what it asked for is no longer counted, and a new
 * proxy asks again for the logs it follows.
 */
static void
svc_dropped(struct agencyd *d)
{
	struct model	*m;

	svc_cancels_end();
	svc.asked = 0;
	svc.admins = 0;
	TAILQ_FOREACH(m, &d->models, entry)
		m->log_follow = 0;
}

/* -- status -- */

static int
svc_status(struct agencyd *d, const struct proto_reqid *r)
{
	struct proto_status	st;
	struct proto_status_end	end;
	size_t			i, n;

	n = pool_count(d->pool);
	for (i = 0; i < n; i++) {
		if (pool_status(d->pool, i, &st) == -1)
			continue;
		st.reqid = r->reqid;
		models_fill_status(d, &st);
		proxy_compose(d, IMSG_STATUS_MODEL, &st, sizeof(st));
	}
	memset(&end, 0, sizeof(end));
	end.reqid = r->reqid;
	models_memory(d, &end.mem);
	proxy_compose(d, IMSG_STATUS_END, &end, sizeof(end));
	return (0);
}

/* -- cancels -- */

/* Send the proxy a cancel of model's requests; cb hears how many ended,
 * or that the proxy went away first (ok 0). */
void
proxy_cancel(struct agencyd *d, const char *model, proxy_cancel_cb cb,
    void *arg)
{
	struct proto_cancel	 c;
	struct pcancel		*pc;

	if (!d->proxy_up || (pc = calloc(1, sizeof(*pc))) == NULL) {
		cb(arg, 0, 0);
		return;
	}
	pc->id = PROXY_CANCEL_OURS | svc.cancel_next++;
	(void)strlcpy(pc->model, model, sizeof(pc->model));
	pc->cb = cb;
	pc->arg = arg;
	TAILQ_INSERT_TAIL(&svc.cancels, pc, entry);
	memset(&c, 0, sizeof(c));
	c.reqid = pc->id;
	(void)strlcpy(c.model, model, sizeof(c.model));
	proxy_compose(d, IMSG_CANCEL, &c, sizeof(c));
}

/*
 * The admin route's cancel: the proxy asks, agencyd sends it the cancel
 * (with the proxy's own id), and the proxy reports it done as any other.
 */
static int
svc_cancel_asked(struct agencyd *d, const struct proto_cancel *asked)
{
	struct proto_cancel	 c = *asked;
	struct pcancel		*pc;

	if (c.reqid == 0 || (c.reqid & PROXY_CANCEL_OURS))
		return (proxy_hostile(d, "sent a bad cancel request",
		    IMSG_CANCEL));
	TAILQ_FOREACH(pc, &svc.cancels, entry)
		if (pc->id == c.reqid)
			break;
	if (pc != NULL || svc.asked >= proxy_bound())
		return (proxy_hostile(d, pc != NULL ? "sent a cancel request "
		    "it already made" : "asked for more cancels than it has "
		    "connections", IMSG_CANCEL));
	if ((pc = calloc(1, sizeof(*pc))) == NULL) {
		log_warn("%s", __func__);
		return (0);	/* its client waits for its timeout */
	}
	pc->id = c.reqid;
	(void)strlcpy(pc->model, c.model, sizeof(pc->model));
	TAILQ_INSERT_TAIL(&svc.cancels, pc, entry);
	svc.asked++;
	c.cancelled = 0;
	proxy_compose(d, IMSG_CANCEL, &c, sizeof(c));
	return (0);
}

/*
 * The proxy ended requests of a model, as it was sent to: a runtime that
 * generates on after a close is restarted, or it would go on working for
 * nobody.  A report of a cancel never sent is hostile: it would restart
 * models at the proxy's word.
 */
static int
svc_cancelled(struct agencyd *d, const struct proto_cancel *c)
{
	struct pcancel		*pc;
	struct model		*m;

	TAILQ_FOREACH(pc, &svc.cancels, entry)
		if (pc->id == c->reqid && strcmp(pc->model, c->model) == 0)
			break;
	if (pc == NULL)
		return (proxy_hostile(d, "reported a cancel it was not sent",
		    IMSG_CANCEL_DONE));
	TAILQ_REMOVE(&svc.cancels, pc, entry);
	if (pc->cb == NULL && svc.asked > 0)
		svc.asked--;
	if (c->cancelled > 0 && (m = model_find(d, c->model)) != NULL &&
	    m->mc != NULL && m->mc->rt->stops != STOPS_ALWAYS) {
		log_info("%s: restarting: its cancelled requests would go on",
		    m->plan.label);
		(void)pool_restart(d->pool, m->plan.name, NULL, NULL);
	}
	if (pc->cb != NULL)
		pc->cb(pc->arg, 1, c->cancelled);
	free(pc);
	return (0);
}

/* -- loads and unloads -- */

static void
admin_answer(struct agencyd *d, struct padmin *a, int status,
    const char *code, const char *message)
{
	struct proto_admin_done	 ad;

	if (a->answered || a->gen != d->proxy_gen || !d->proxy_up)
		return;
	a->answered = 1;
	memset(&ad, 0, sizeof(ad));
	ad.reqid = a->reqid;
	ad.status = status;
	(void)strlcpy(ad.code, code, sizeof(ad.code));
	(void)strlcpy(ad.message, message, sizeof(ad.message));
	proxy_compose(d, IMSG_ADMIN_DONE, &ad, sizeof(ad));
	if (svc.admins > 0)
		svc.admins--;
}

/* The end of a load or unload the proxy asked for. */
static void
admin_load_done(void *arg, int ok, const char *err)
{
	struct padmin	*a = arg;
	struct agencyd	*d = a->d;

	if (ok)
		admin_answer(d, a, 200, "", "ready");
	else if (d->stopping)
		admin_answer(d, a, 503, "stopping", "agency is stopping");
	else
		admin_answer(d, a, 502, "load_failed", err != NULL ? err :
		    "load failed");
	if (!a->inside)
		padmin_free(a);
	else
		a->inside = 2;	/* freed by its caller */
}

static void
admin_unload_done(void *arg)
{
	struct padmin	*a = arg;

	admin_answer(a->d, a, 200, "", a->stop ? "stopped" : "unloaded");
	padmin_free(a);
}

/*
 * POST /v1/agency/load, unload or stop, as agency-ctl's: a load waits
 * for the model unless asked not to; an unload or a stop for its
 * processes' exits.  The
 * proxy may have as many waiting as it has connections.
 */
static int
svc_admin(struct agencyd *d, const struct proto_admin *pa)
{
	struct padmin		*a;
	struct model		*m;
	int			 rv;

	if (svc.admins >= proxy_bound())
		return (proxy_hostile(d, "asked for more loads and unloads "
		    "than it has connections", IMSG_ADMIN));
	if ((a = calloc(1, sizeof(*a))) == NULL) {
		log_warn("%s", __func__);
		return (0);	/* its client waits for its timeout */
	}
	TAILQ_INSERT_TAIL(&padmins, a, entry);
	a->d = d;
	a->reqid = pa->reqid;
	a->gen = d->proxy_gen;
	a->wait = pa->wait;
	a->stop = pa->op == ADMIN_STOP;
	svc.admins++;
	/* A name the proxy knew, which a reload may just have removed. */
	if ((m = model_find(d, pa->model)) == NULL || d->stopping) {
		if (m == NULL)
			admin_answer(d, a, 404, "model_not_found",
			    "No such model.");
		else
			admin_answer(d, a, 503, "stopping",
			    "agency is stopping");
		padmin_free(a);
		return (0);
	}
	if (pa->op == ADMIN_UNLOAD || pa->op == ADMIN_STOP) {
		log_info("%s: %s asked over HTTP", m->plan.label,
		    pa->op == ADMIN_STOP ? "stop" : "unload");
		rv = pa->op == ADMIN_STOP ?
		    pool_stop(d->pool, m->plan.name, admin_unload_done, a) :
		    pool_unload(d->pool, m->plan.name, admin_unload_done, a);
		if (rv < 0) {
			if (rv == -2)
				admin_answer(d, a, 409, "not_lazy", "The model "
				    "is not lazy: nothing would load it again; "
				    "unload stops it until a load.");
			else
				admin_answer(d, a, 404, "model_not_found",
				    "No such model.");
			padmin_free(a);
		}
		return (0);
	}
	log_info("%s: load asked over HTTP", m->plan.label);
	a->inside = 1;
	(void)pool_load(d->pool, m->plan.name, admin_load_done, a);
	if (a->inside == 2) {
		/* answered from within: it was ready (or could not be) */
		padmin_free(a);
		return (0);
	}
	a->inside = 0;
	if (!a->wait)
		admin_answer(d, a, 202, "", "loading");
	return (0);
}

/* -- models' logs -- */

/* A model's log ring to the proxy, each line with its number; with
 * follow, its new lines too from now on. */
static int
svc_logs(struct agencyd *d, uint32_t type, const struct proto_logs_req *lr)
{
	struct proto_logline	 ll;
	struct proto_logs_end	 le;
	struct model		*m;
	size_t			 i, n;

	m = model_find(d, lr->model);
	if (type == IMSG_LOGS_UNFOLLOW) {
		if (m != NULL)
			m->log_follow = 0;
		return (0);
	}
	memset(&le, 0, sizeof(le));
	le.reqid = lr->reqid;
	(void)strlcpy(le.model, lr->model, sizeof(le.model));
	if (m != NULL) {
		n = ring_count(&m->ring);
		for (i = 0; i < n; i++) {
			memset(&ll, 0, sizeof(ll));
			ll.reqid = lr->reqid;
			ll.seq = ring_seq(&m->ring, i);
			(void)strlcpy(ll.model, m->plan.name, sizeof(ll.model));
			(void)strlcpy(ll.line, ring_get(&m->ring, i),
			    sizeof(ll.line));
			proxy_compose(d, IMSG_LOGS_LINE, &ll, sizeof(ll));
		}
		le.found = 1;
		if (lr->follow)
			m->log_follow = 1;
	}
	proxy_compose(d, IMSG_LOGS_END, &le, sizeof(le));
	return (0);
}

/* A new line of a model (models_on_line, through agencyd.c): to the
 * proxy when it follows that model's log. */
void
proxy_model_line(struct agencyd *d, const char *model, uint64_t seq,
    const char *line)
{
	struct proto_logline	 ll;
	struct model		*m;

	if (!d->proxy_ready || (m = model_find(d, model)) == NULL ||
	    !m->log_follow)
		return;
	memset(&ll, 0, sizeof(ll));
	ll.seq = seq;
	(void)strlcpy(ll.model, m->plan.name, sizeof(ll.model));
	(void)strlcpy(ll.line, line, sizeof(ll.line));
	proxy_compose(d, IMSG_LOGS_LINE, &ll, sizeof(ll));
}
