/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Reloading the configuration (SIGHUP, agency-ctl reload).  A file with
 * errors changes nothing.  Otherwise models that did not change keep
 * their processes and counts, removed ones are stopped once idle (new
 * requests for them get 404 at once), changed ones are restarted once
 * idle, new ones that are not lazy are loaded; listening sockets that
 * changed are bound anew and every listener goes to the proxy again.
 *
 * What it did, and the parse errors it found, go to the log and to
 * whoever asked (reload_say_cb: control.c's client, or nobody for
 * SIGHUP): it knows no caller.  It calls below it: parse.y, emit.c
 * (the events stream's sync after it), model.c (the records),
 * proxylink.c (listeners, the proxy's configuration and ports),
 * notify.c and the pool.
 *
 * Calls: emit.c, keystats.c, listeners.c, model.c, notify.c, parse.y,
 * pool.c, pool_status.c, proxylink.c, common/config.c, common/log.c.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <signal.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <stdarg.h>
#include <stdio.h>

#include "agencyd.h"
#include "log.h"

/* Who asked for the reload in progress, if anyone. */
static reload_say_cb	 reload_say;
static void		*reload_arg;
/* Whose draining list a removed model leaves once stopped. */
static struct agencyd	*reload_env;

static int	 reload(struct agencyd *);
static const char *reload_changed(struct agencyd *,
		    const struct model_conf *);
static void	 reload_keys(struct agency_conf *, struct agency_conf *,
		    char *, size_t);
static void	 reload_info(const char *, ...)
		    __attribute__((__format__ (printf, 1, 2)));

/* A line for the log, and for whoever asked. */
static void
reload_info(const char *fmt, ...)
{
	char	line[PROTO_MSG_MAX];
	va_list	ap;

	va_start(ap, fmt);
	(void)vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_info("%s", line);
	if (reload_say != NULL)
		reload_say(reload_arg, line);
}

/* Parse errors go to the log, and to whoever asked. */
static void
reload_observe(int pri, const char *line)
{
	if (reload_say != NULL && pri <= LOG_WARNING)
		reload_say(reload_arg, line);
}

static int
strlist_equal(const struct strlist *a, const struct strlist *b)
{
	const struct strent	*x, *y;

	for (x = TAILQ_FIRST(a), y = TAILQ_FIRST(b); x != NULL && y != NULL;
	    x = TAILQ_NEXT(x, entry), y = TAILQ_NEXT(y, entry))
		if (strcmp(x->s, y->s) != 0)
			return (0);
	return (x == NULL && y == NULL);
}

/* What a changed model's new configuration does, said before it does. */
static const char *
reload_changed(struct agencyd *d, const struct model_conf *mc)
{
	struct proto_status	st;

	if (pool_status_name(d->pool, mc->name, &st) == -1 ||
	    st.state == STATE_READY || st.state == STATE_LOADING)
		return ("restarted once idle");
	if (!mc->lazy && st.state != STATE_UNLOADED)
		return ("loading");
	return ("not running; its next load uses it");
}

/* Whether a key's secret, rights or models differ. */
static int
key_changed(const struct key_conf *a, const struct key_conf *b)
{
	return (memcmp(a->digest, b->digest, sizeof(a->digest)) != 0 ||
	    a->admin != b->admin || a->max_requests != b->max_requests ||
	    !strlist_equal(&a->models, &b->models));
}

/*
 * Say which keys a reload adds, changes and removes (by name: never a
 * secret), and put their counts in sum for the summary ("" when none).
 */
static void
reload_keys(struct agency_conf *oconf, struct agency_conf *nconf, char *sum,
    size_t len)
{
	struct key_conf	*k, *o;
	int		 nadded = 0, nchanged = 0, nremoved = 0;

	TAILQ_FOREACH(k, &nconf->keys, entry) {
		if ((o = config_find_key(oconf, k->name)) == NULL) {
			reload_info("key %s: added", k->name);
			nadded++;
		} else if (key_changed(o, k)) {
			reload_info("key %s: changed", k->name);
			nchanged++;
		}
	}
	TAILQ_FOREACH(o, &oconf->keys, entry)
		if (config_find_key(nconf, o->name) == NULL) {
			reload_info("key %s: removed", o->name);
			nremoved++;
		}
	sum[0] = '\0';
	if (nadded + nchanged + nremoved > 0)
		(void)snprintf(sum, len, "; keys: %d added, %d changed, "
		    "%d removed", nadded, nchanged, nremoved);
}

/* Whether the process a model runs would differ: what goes into its
 * command, environment, readiness, and the pool's plan. */
static int
model_changed(const struct model_conf *a, const struct model_conf *b)
{
	const struct runtime_conf	*ra = a->rt, *rb = b->rt;

	if (strcmp(a->upstream, b->upstream) != 0 || a->lazy != b->lazy ||
	    a->memory != b->memory || a->idle_timeout != b->idle_timeout ||
	    a->load_timeout != b->load_timeout ||
	    !strlist_equal(&a->env, &b->env))
		return (1);
	if (strcmp(ra->command, rb->command) != 0 ||
	    ra->ready_method != rb->ready_method ||
	    strcmp(ra->ready_path, rb->ready_path) != 0 ||
	    strcmp(ra->ready_body, rb->ready_body) != 0 ||
	    ra->kind != rb->kind || ra->send_model != rb->send_model ||
	    !strlist_equal(&ra->env, &rb->env))
		return (1);
	return (0);
}

static struct model_conf *
conf_model_named(struct agency_conf *conf, const char *name)
{
	struct model_conf	*mc;

	TAILQ_FOREACH(mc, &conf->models, entry)
		if (strcmp(mc->name, name) == 0)
			return (mc);
	return (NULL);
}

static struct listen_conf *
listen_match(struct agency_conf *conf, const struct listen_conf *l)
{
	struct listen_conf	*o;

	TAILQ_FOREACH(o, &conf->listens, entry)
		if (o->sslen == l->sslen &&
		    memcmp(&o->ss, &l->ss, l->sslen) == 0)
			return (o);
	return (NULL);
}

/* Bind what is new; on failure close what was bound and change nothing. */
static int
reload_listeners(struct agencyd *d, struct agency_conf *nconf)
{
	struct listen_conf	*l, *o;

	TAILQ_FOREACH(l, &nconf->listens, entry)
		if ((o = listen_match(d->conf, l)) != NULL && o->fd != -1)
			l->fd = -2;	/* taken over below */
	if (listeners_bind(nconf) == -1) {
		TAILQ_FOREACH(l, &nconf->listens, entry) {
			if (l->fd >= 0)
				listener_close(l);
			l->fd = -1;
		}
		reload_info("cannot listen on every address");
		return (-1);
	}
	TAILQ_FOREACH(l, &nconf->listens, entry) {
		if (l->fd == -2) {
			o = listen_match(d->conf, l);
			if (listener_update(o, l) == -1)
				reload_info("cannot give \"%s\" its new "
				    "owner, group or mode", l->path);
			l->fd = o->fd;
			o->fd = -1;
		} else if (l->path[0] != '\0')
			reload_info("listening on \"%s\"", l->path);
		else
			reload_info("listening on %s port %u", l->host,
			    l->port);
	}
	TAILQ_FOREACH(o, &d->conf->listens, entry) {
		if (o->fd == -1)
			continue;
		if (o->path[0] != '\0')
			reload_info("no longer listening on \"%s\"", o->path);
		else
			reload_info("no longer listening on %s port %u",
			    o->host, o->port);
		listener_close(o);
	}
	return (0);
}

static void
reload_removed(void *arg)
{
	struct model	*m = arg;

	log_info("%s: removed", m->plan.name);
	TAILQ_REMOVE(&reload_env->draining, m, entry);
	model_free(m);
}

/* What the pool takes from a configuration, at start and on reload. */
void
agencyd_pool_settings(const struct agency_conf *conf,
    struct pool_settings *ps)
{
	memset(ps, 0, sizeof(*ps));
	ps->reserve = conf->reserve;
	ps->budget = conf->budget;
	ps->overcommit = conf->overcommit;
	ps->port_lo = conf->port_lo;
	ps->port_hi = conf->port_hi;
	ps->max_queue = (uint32_t)conf->max_queue;
	ps->fairness = conf->fairness;
}

static void
reload_settings(struct agencyd *d, struct agency_conf *nconf)
{
	struct agency_conf	*o = d->conf;
	struct pool_settings	 ps;

	if (strcmp(o->socket, nconf->socket) != 0 ||
	    strcmp(o->rsocket, nconf->rsocket) != 0)
		reload_info("control sockets stay as they are until "
		    "agencyd restarts");
	if (strcmp(o->user, nconf->user) != 0)
		reload_info("the proxy user applies when the proxy "
		    "restarts");
	if (strcmp(o->model_user, nconf->model_user) != 0)
		reload_info("the model user applies to processes started "
		    "from now on");
	/* New ports go to new loads; reload_move moves the models outside
	 * them, models_ports_check fits the proxy's sandbox to both. */
	agencyd_pool_settings(nconf, &ps);
	pool_set_settings(d->pool, &ps);
}

/*
 * Models whose process listens outside the new model ports: restarted
 * once idle, on a port of the new range (a replace with the same plan,
 * on the pool's queue: requests in progress keep the old process, new
 * ones wait for the new one).  Removed models are left to stop.  Until
 * a model has moved agency-proxy may still reach its old port
 * (models_proxy_ports).  Returns how many will move.
 */
static int
reload_move(struct agencyd *d, struct agency_conf *nconf)
{
	struct proto_status	 st;
	struct pool_plan	 plan;
	const struct pool_plan	*pp;
	size_t			 i, n;
	int			 nmoved = 0;

	n = pool_count(d->pool);
	for (i = 0; i < n; i++) {
		if (pool_status(d->pool, i, &st) == -1 || st.pid <= 0 ||
		    st.port == 0 || (st.port >= nconf->port_lo &&
		    st.port <= nconf->port_hi))
			continue;
		/* NULL once removed: it stops once idle anyway. */
		if ((pp = pool_plan(d->pool, st.model)) == NULL)
			continue;
		plan = *pp;
		if (pool_replace(d->pool, &plan) == -1) {
			log_warnx("%s: cannot move %s", __func__, st.model);
			continue;
		}
		reload_info("model %s: on port %u, outside the new ports; "
		    "moved once idle", st.model, st.port);
		nmoved++;
	}
	return (nmoved);
}

int
agencyd_reload(struct agencyd *d, reload_say_cb say, void *arg)
{
	char	 msg[PROTO_MSG_MAX];
	int	 rv;

	reload_env = d;
	reload_say = say;
	reload_arg = arg;
	d->reloading = 1;
	rv = reload(d);
	d->reloading = 0;
	reload_say = NULL;
	reload_arg = NULL;
	/* the events stream: the whole set after it, or why not */
	if (rv == 0)
		emit_sync(d, 1, 1, NULL);
	else if (!d->stopping) {
		(void)snprintf(msg, sizeof(msg), "%s: configuration not "
		    "changed (see the log)", d->conffile);
		emit_sync(d, 1, 0, msg);
	}
	return (rv);
}

static int
reload(struct agencyd *d)
{
	struct agency_conf	*nconf, *oconf;
	struct model_conf	*mc;
	struct model		*m, *next;
	struct pool_plan	 plan;
	struct model_head	 added;
	char			 msg[PROTO_MSG_MAX], keysum[128];
	const char		*what;
	int			 nchanged = 0, nadded = 0, nremoved = 0;
	int			 nmoved;

	if (d->stopping) {
		reload_info("agencyd is stopping");
		return (-1);
	}
	log_setobserver(reload_observe);
	nconf = parse_config(d->conffile, 0);
	log_setobserver(NULL);
	if (nconf == NULL) {
		reload_info("%s has errors; configuration not changed",
		    d->conffile);
		return (-1);
	}
	if (reload_listeners(d, nconf) == -1) {
		config_free(nconf);
		return (-1);
	}
	reload_settings(d, nconf);

	/* Removed models: no longer served; stopped once idle. */
	for (m = TAILQ_FIRST(&d->models); m != NULL; m = next) {
		next = TAILQ_NEXT(m, entry);
		if (conf_model_named(nconf, m->plan.name) != NULL)
			continue;
		TAILQ_REMOVE(&d->models, m, entry);
		TAILQ_INSERT_TAIL(&d->draining, m, entry);
		m->mc = NULL;
		reload_info("model %s: removed; stopped once idle",
		    m->plan.name);
		nremoved++;
		if (pool_remove(d->pool, m->plan.name, reload_removed, m) == -1)
			reload_removed(m);
	}

	/* Kept and changed models take their new configuration. */
	TAILQ_INIT(&added);
	TAILQ_FOREACH(mc, &nconf->models, entry) {
		if ((m = model_find(d, mc->name)) == NULL) {
			if ((m = model_new(mc, d->conf->model_user)) ==
			    NULL) {
				log_warn("%s: model %s", __func__, mc->name);
				continue;
			}
			TAILQ_INSERT_TAIL(&added, m, entry);
			continue;
		}
		if (model_changed(m->mc, mc)) {
			what = reload_changed(d, mc);
			if (model_plan(m, mc, d->conf->model_user,
			    &plan) == 0 &&
			    pool_replace(d->pool, &plan) == 0) {
				m->plan = plan;
				reload_info("model %s: changed; %s", mc->name,
				    what);
				nchanged++;
				m->ev_changed = 1;
			} else
				log_warnx("%s: cannot replace %s", __func__,
				    mc->name);
		} else {
			/* The queue's limits need no restart. */
			model_limits(mc, &m->plan);
			(void)pool_set_limits(d->pool, &m->plan);
		}
		m->mc = mc;
	}

	nmoved = reload_move(d, nconf);

	/* The new ones, in config order after the kept ones. */
	while ((m = TAILQ_FIRST(&added)) != NULL) {
		TAILQ_REMOVE(&added, m, entry);
		TAILQ_INSERT_TAIL(&d->models, m, entry);
		if (pool_add(d->pool, &m->plan) == -1) {
			log_warnx("%s: cannot add %s", __func__, m->plan.name);
			TAILQ_REMOVE(&d->models, m, entry);
			model_free(m);
			continue;
		}
		reload_info("model %s: added%s", m->plan.name,
		    m->plan.lazy ? "" : "; loading");
		nadded++;
		if (!m->plan.lazy)
			(void)pool_load(d->pool, m->plan.name, NULL, NULL);
	}

	oconf = d->conf;
	reload_keys(oconf, nconf, keysum, sizeof(keysum));
	d->conf = nconf;
	keystats_reload(d, nconf);
	config_free(oconf);
	/* A restart ends the requests in progress through the proxy. */
	if (proxy_ports_check(d, msg, sizeof(msg)) != 0)
		reload_info("%s", msg);
	(void)proxy_send_config(d);
	if (nmoved > 0)
		reload_info("reloaded %s: %d added, %d changed, "
		    "%d removed, %d moved%s", d->conffile, nadded, nchanged,
		    nremoved, nmoved, keysum);
	else
		reload_info("reloaded %s: %d added, %d changed, "
		    "%d removed%s", d->conffile, nadded, nchanged, nremoved,
		    keysum);
	/* An added lazy model changes no state, only the count. */
	notify_status(d);
	return (0);
}
