/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The records of the models agencyd serves (struct model: its
 * configuration, its pool plan, the ring of its output, its process's
 * pipes), the lists agencyd keeps them in (served, and removed until
 * stopped), and what is looked up in them.
 *
 * It calls only below it: the pool (pool.h), spawn.c (environments, the
 * ring, the pipes), memory.c (a model's need) and ports.c.  Nothing here
 * starts, signals or answers anything: that is poolops.c's, above it.
 *
 * Calls: memory.c, pool.c, pool_decide.c, pool_status.c, ports.c,
 * spawn.c, common/config.c, common/log.c.
 */
#include <sys/types.h>

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agencyd.h"
#include "log.h"
#include "memory.h"
#include "proto.h"

/*
 * Who a model process runs as (as root the model user muser, else
 * ourselves: *userp NULL), its home, and its environment (port NULL:
 * only to look its size up with).  0, or -1 with a message in err.
 */
int
model_env(const char *muser, const struct model_conf *mc, const char *port,
    const char **userp, char *home, size_t homelen, char ***envp, char *err,
    size_t errlen)
{
	struct passwd	*pw;

	*userp = NULL;
	*envp = NULL;
	home[0] = '\0';
	if (getuid() == 0) {
		if ((pw = getpwnam(muser)) == NULL) {
			(void)snprintf(err, errlen,
			    "model user %s does not exist", muser);
			return (-1);
		}
		*userp = muser;
	} else if ((pw = getpwuid(getuid())) == NULL) {
		(void)snprintf(err, errlen, "who am I? uid %u",
		    (unsigned)getuid());
		return (-1);
	}
	/* Copied: the next getpw call overwrites *pw. */
	if (strlcpy(home, pw->pw_dir, homelen) >= homelen)
		home[0] = '\0';
	return (spawn_env(pw->pw_name, pw->pw_dir, mc->name, port,
	    &mc->rt->env, &mc->env, envp, err, errlen));
}

/*
 * "model qwen2.5-7b": how messages, errors and status name a model and
 * its process.  The name, never the program or the upstream: two models
 * on one file differ, and the name is what an operator asks for.
 */
static void
model_label(const struct model_conf *mc, char *label, size_t len)
{
	(void)snprintf(label, len, "model %s", mc->name);
}

/*
 * What the model's server is sent as the body's "model", by its
 * runtime's send model: its name, its upstream, or "" for the client's
 * own (the proxy then leaves the field alone).
 */
static const char *
model_sent(const struct model_conf *mc)
{
	switch (mc->rt->send_model) {
	case SEND_UPSTREAM:
		return (mc->upstream);
	case SEND_UNCHANGED:
		return ("");
	case SEND_NAME:
	default:
		return (mc->name);
	}
}

/*
 * The pool's plan of a model from its configuration.  Its upstream is
 * the model name the upstream server is sent (model_sent): the pool only
 * carries it, to the grants of the process that the plan started.  The
 * need is looked up as muser (NULL: the default model user) would see it.
 */
int
model_plan(struct model *m, struct model_conf *mc, const char *muser,
    struct pool_plan *plan)
{
	char		 home[PATH_MAX], err[SPAWN_ERR_MAX], **envp;
	const char	*user;

	memset(plan, 0, sizeof(*plan));
	if (strlcpy(plan->name, mc->name, sizeof(plan->name)) >=
	    sizeof(plan->name) ||
	    strlcpy(plan->upstream, model_sent(mc), sizeof(plan->upstream)) >=
	    sizeof(plan->upstream)) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	model_label(mc, plan->label, sizeof(plan->label));
	plan->lazy = mc->lazy;
	/* Sized with what the model process will have: its user's home,
	 * its runtime's and its own env, never ours. */
	if (model_env(muser != NULL ? muser : AGENCY_MODEL_USER, mc, NULL,
	    &user, home, sizeof(home), &envp, err, sizeof(err)) == -1)
		log_debug("%s: %s: %s", __func__, mc->name, err);
	plan->need = mem_need(mc->upstream, mc->memory, mc->rt->kind, envp,
	    &plan->need_from);
	spawn_argv_free(envp);
	plan->idle_timeout = mc->lazy ? mc->idle_timeout : 0;
	plan->load_timeout = mc->load_timeout;
	plan->arg = m;
	model_limits(mc, plan);
	return (0);
}

/* The scheduling part of a plan, which changes without a restart. */
void
model_limits(const struct model_conf *mc, struct pool_plan *plan)
{
	plan->queue_timeout = mc->queue_timeout;
	plan->max_queue = (uint32_t)mc->max_queue;
	plan->max_requests = (uint32_t)mc->max_requests;
}

struct model *
model_new(struct model_conf *mc, const char *muser)
{
	struct model	*m;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return (NULL);
	m->mc = mc;
	if (ring_init(&m->ring, SPAWN_RING_LINES) == -1 ||
	    model_plan(m, mc, muser, &m->plan) == -1) {
		ring_free(&m->ring);
		free(m);
		return (NULL);
	}
	return (m);
}

void
model_free(struct model *m)
{
	if (m->sp_open)
		spawn_close(&m->sp);
	ring_free(&m->ring);
	free(m);
}

int
models_setup(struct agencyd *d)
{
	struct model_conf	*mc;
	struct model		*m;

	TAILQ_FOREACH(mc, &d->conf->models, entry) {
		if ((m = model_new(mc, d->conf->model_user)) == NULL)
			return (-1);
		TAILQ_INSERT_TAIL(&d->models, m, entry);
		if (pool_add(d->pool, &m->plan) == -1)
			return (-1);
	}
	return (0);
}

struct model *
model_find(struct agencyd *d, const char *name)
{
	struct model	*m;

	TAILQ_FOREACH(m, &d->models, entry)
		if (strcmp(m->plan.name, name) == 0)
			return (m);
	return (NULL);
}

/* The served model with that name, or else with that alias; or NULL. */
struct model *
model_resolve(struct agencyd *d, const char *name)
{
	struct model	*m;

	if ((m = model_find(d, name)) != NULL)
		return (m);
	TAILQ_FOREACH(m, &d->models, entry)
		if (m->mc != NULL && strlist_contains(&m->mc->aliases, name))
			return (m);
	return (NULL);
}

/* The model whose process (reaper 0) or reaper (reaper 1) is pid. */
static struct model *
model_by(struct agencyd *d, pid_t pid, int reaper)
{
	struct model_head	*heads[2] = { &d->models, &d->draining };
	struct model		*m;
	size_t			 i;

	for (i = 0; i < 2; i++)
		TAILQ_FOREACH(m, heads[i], entry)
			if (m->sp_open &&
			    (reaper ? m->sp.reaper : m->sp.pid) == pid)
				return (m);
	return (NULL);
}

struct model *
model_by_pid(struct agencyd *d, pid_t pid)
{
	return (model_by(d, pid, 0));
}

struct model *
model_by_reaper(struct agencyd *d, pid_t pid)
{
	return (model_by(d, pid, 1));
}

void
models_free(struct agencyd *d)
{
	struct model	*m;

	while ((m = TAILQ_FIRST(&d->models)) != NULL) {
		TAILQ_REMOVE(&d->models, m, entry);
		model_free(m);
	}
	while ((m = TAILQ_FIRST(&d->draining)) != NULL) {
		TAILQ_REMOVE(&d->draining, m, entry);
		model_free(m);
	}
}


/*
 * What the pool does not tell of a model: its runtime, and when its idle
 * timeout (the pool's, from the plan) stops it.  That one is counting
 * while the model is lazy, ready and idle: it stops the model its
 * timeout after it was last used (as the pool's idle timer does),
 * unless it is used first.
 */
void
models_fill_status(struct agencyd *d, struct proto_status *st)
{
	struct model	*m;

	st->idle_stop_at = -1;
	if ((m = model_find(d, st->model)) == NULL || m->mc == NULL)
		return;
	(void)strlcpy(st->runtime, m->mc->rt->name, sizeof(st->runtime));
	if (m->plan.lazy && st->idle_timeout > 0 &&
	    st->state == STATE_READY && st->in_progress == 0 &&
	    st->last_used >= 0)
		st->idle_stop_at = st->last_used + st->idle_timeout;
}

/*
 * The memory the models are measured against: the need of each model
 * loaded or loading, the budget, and what is available now of which the
 * reserve stays free (as the pool's fit test reads them).
 */
void
models_memory(struct agencyd *d, struct proto_memory *pm)
{
	struct proto_status	 st;
	struct mem_snapshot	 mem;
	size_t			 i, n;

	memset(pm, 0, sizeof(*pm));
	n = pool_count(d->pool);
	for (i = 0; i < n; i++)
		if (pool_status(d->pool, i, &st) == 0 &&
		    (st.state == STATE_READY || st.state == STATE_LOADING))
			pm->in_use = mem_add(pm->in_use, st.need);
	pm->budget = d->conf->budget;
	if (mem_snapshot(&mem) == -1) {
		pm->available = pm->total = pm->reserve = -1;
		return;
	}
	pm->available = mem.available;
	pm->total = mem.total;
	pm->reserve = pool_reserve(d->conf->reserve, mem.total);
}

/*
 * The ports agency-proxy must be able to reach now: the configured range
 * and the port of each model process outside it, where a reload that
 * changed the range left it until the model is moved.
 */
void
models_proxy_ports(struct agencyd *d, struct proto_ports *pp)
{
	struct proto_status	 st;
	size_t			 i, n;

	ports_init(pp, d->conf->port_lo, d->conf->port_hi);
	n = pool_count(d->pool);
	for (i = 0; i < n; i++)
		if (pool_status(d->pool, i, &st) == 0 && st.pid > 0 &&
		    st.port != 0)
			ports_add(pp, st.port);
}
