/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The pool's effects done for real: model processes through spawn.c,
 * signals to them through their reapers, probes through the proxy,
 * timers on libevent, memory from memory.c, answers to the proxy.
 *
 * The pool knows a model process by the model's own pid; agencyd reaps
 * its reaper, which exits only once nothing of the model is left, so
 * the exit the pool hears of is the end of everything the model started.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <errno.h>
#include <event.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "agencyd.h"
#include "log.h"
#include "memory.h"
#include "proto.h"

struct ptimer {
	struct event	  ev;
	void		(*fn)(void *);
	void		 *arg;
};

static void	 op_spawn(void *, const struct pool_plan *, uint64_t, uint16_t);
static int	 op_port_free(void *, uint16_t);
static void	 op_kill(void *, pid_t, int);
static void	 op_probe(void *, const struct pool_plan *, uint64_t, uint16_t);
static void	 op_probe_cancel(void *, uint64_t);
static int64_t	 op_now(void *);
static void	*op_timer_add(void *, int64_t, void (*)(void *), void *);
static void	 op_timer_del(void *, void *);
static int	 op_memory(void *, struct mem_snapshot *);
static void	 op_log(void *, int, const char *);
static void	 op_granted(void *, uint64_t, uint64_t, const struct pool_plan *,
		    uint16_t);
static void	 op_refused(void *, uint64_t, int, int, const char *);
static void	 op_changed(void *, const struct pool_plan *);

const struct pool_ops model_pool_ops = {
	.spawn = op_spawn,
	.port_free = op_port_free,
	.kill = op_kill,
	.probe = op_probe,
	.probe_cancel = op_probe_cancel,
	.now = op_now,
	.timer_add = op_timer_add,
	.timer_del = op_timer_del,
	.memory = op_memory,
	.log = op_log,
	.granted = op_granted,
	.refused = op_refused,
	.changed = op_changed,
};

/*
 * Who a model process runs as (as root the model user muser, else
 * ourselves: *userp NULL), its home, and its environment (port NULL:
 * only to look its size up with).  0, or -1 with a message in err.
 */
static int
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
 * carries it, to the grants of the process that the plan started.
 */
int
model_plan(struct model *m, struct model_conf *mc, struct pool_plan *plan)
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
	if (model_env(env != NULL && env->conf != NULL ?
	    env->conf->model_user : AGENCY_MODEL_USER, mc, NULL, &user,
	    home, sizeof(home), &envp, err, sizeof(err)) == -1)
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
model_new(struct model_conf *mc)
{
	struct model	*m;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return (NULL);
	m->mc = mc;
	if (ring_init(&m->ring, SPAWN_RING_LINES) == -1 ||
	    model_plan(m, mc, &m->plan) == -1) {
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
		if ((m = model_new(mc)) == NULL)
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
 * A model's reaper was reaped: nothing of the model is left.  Read what
 * it wrote, then tell the pool how the model itself ended.
 */
void
models_reaped(struct agencyd *d, pid_t pid, int status)
{
	struct model	*m;
	int		 addr_in_use = 0;

	if ((m = model_by(d, pid, 1)) != NULL) {
		status = spawn_reaped(&m->sp, status);
		pid = m->sp.pid;
		spawn_close(&m->sp);
		m->sp_open = 0;
		addr_in_use = m->addr_in_use;
		m->addr_in_use = 0;
	}
	pool_child_exited(d->pool, pid, status, addr_in_use);
}

static void
model_line(void *arg, const char *line)
{
	struct model	*m = arg;

	if (spawn_line_addr_in_use(line))
		m->addr_in_use = 1;
}

static void
op_spawn(void *ctx, const struct pool_plan *plan, uint64_t spawnid,
    uint16_t port)
{
	struct agencyd		*d = ctx;
	struct model		*m = plan->arg;
	struct model_conf	*mc = m->mc;
	struct spawn_req	 req;
	char			 portstr[8], err[SPAWN_ERR_MAX];
	char			 home[PATH_MAX];
	char			**argv = NULL, **envp = NULL;
	const char		*user = NULL;
	pid_t			 pid = -1;

	(void)snprintf(portstr, sizeof(portstr), "%u", port);
	if (spawn_argv(mc->rt->command, portstr, mc->upstream, mc->name,
	    &argv, err, sizeof(err)) == -1)
		goto done;
	if (model_env(d->conf->model_user, mc, portstr, &user, home,
	    sizeof(home), &envp, err, sizeof(err)) == -1)
		goto done;

	if (m->sp_open) {
		/* The last process's pipes, if the pool started anew first. */
		spawn_close(&m->sp);
		m->sp_open = 0;
	}
	memset(&req, 0, sizeof(req));
	req.argv = argv;
	req.envp = envp;
	req.user = user;
	req.dir = home[0] != '\0' ? home : NULL;
	req.label = plan->label;
	req.ring = &m->ring;
	req.line_cb = model_line;
	req.cb_arg = m;
	m->addr_in_use = 0;
	if ((pid = spawn_start(&req, &m->sp, err, sizeof(err))) != -1) {
		m->sp_open = 1;
		/* The program, once: the label names only the model. */
		log_info("%s: started %s, pid %d, port %u", plan->label,
		    basename(argv[0]), (int)pid, port);
		log_debug("%s: its reaper is pid %d", plan->label,
		    (int)m->sp.reaper);
	}
 done:
	spawn_argv_free(argv);
	spawn_argv_free(envp);
	d->now_cached = 0;	/* spawn_start waited for the exec */
	pool_spawned(d->pool, spawnid, pid, pid == -1 ? err : NULL);
}

/*
 * Free when binding the loopback address on it works.  With
 * SO_REUSEADDR, as model servers bind: the TIME-WAIT sockets that a
 * model's own closes leave on its port do not make it taken for a
 * minute, and a listener still does.
 */
static int
op_port_free(void *ctx, uint16_t port)
{
	struct sockaddr_in	 sin;
	int			 s, ok, on = 1;

	(void)ctx;
	if ((s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return (0);
	if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1) {
		log_warn("%s: SO_REUSEADDR", __func__);
		close(s);
		return (0);
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = bind(s, (struct sockaddr *)&sin, sizeof(sin)) == 0;
	close(s);
	return (ok);
}

/* SIGTERM: the model's process group; SIGKILL: all it started. */
static void
op_kill(void *ctx, pid_t pid, int sig)
{
	struct agencyd	*d = ctx;
	struct model	*m;

	if (pid <= 1)
		return;
	if ((m = model_by_pid(d, pid)) == NULL) {
		log_debug("%s: no model process %d", __func__, (int)pid);
		return;
	}
	spawn_signal(&m->sp, sig);
}

static void
op_probe(void *ctx, const struct pool_plan *plan, uint64_t loadid,
    uint16_t port)
{
	struct agencyd		*d = ctx;
	struct model		*m = plan->arg;
	struct runtime_conf	*rt = m->mc->rt;
	struct probe		*pr;

	if ((pr = calloc(1, sizeof(*pr))) == NULL)
		fatal("%s", __func__);
	pr->p.loadid = loadid;
	pr->p.port = port;
	pr->p.method = rt->ready_method;
	(void)strlcpy(pr->p.path, rt->ready_path, sizeof(pr->p.path));
	(void)strlcpy(pr->p.body, rt->ready_body, sizeof(pr->p.body));
	(void)strlcpy(pr->p.label, plan->label, sizeof(pr->p.label));
	TAILQ_INSERT_TAIL(&d->probes, pr, entry);
	proxy_send_probe(d, &pr->p);
}

static void
op_probe_cancel(void *ctx, uint64_t loadid)
{
	struct agencyd		*d = ctx;
	struct probe		*pr;
	struct proto_loadid	 l;

	TAILQ_FOREACH(pr, &d->probes, entry)
		if (pr->p.loadid == loadid)
			break;
	if (pr == NULL)
		return;
	TAILQ_REMOVE(&d->probes, pr, entry);
	free(pr);
	memset(&l, 0, sizeof(l));
	l.loadid = loadid;
	proxy_compose(d, IMSG_PROBE_CANCEL, &l, sizeof(l));
}

/*
 * The clock in ms.  A batch of the proxy's messages (proxy_dispatch),
 * which takes microseconds unless it spawns, reads it once: each grant
 * and each release would read it otherwise.
 */
static int64_t
op_now(void *ctx)
{
	struct agencyd	*d = ctx;
	struct timespec	 ts;
	int64_t		 ms;

	if (d->proxy_batch && d->now_cached)
		return (d->now_ms);
	clock_gettime(CLOCK_REALTIME, &ts);
	ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	if (d->proxy_batch) {
		d->now_ms = ms;
		d->now_cached = 1;
	}
	return (ms);
}

static void
ptimer_fire(int fd, short ev, void *arg)
{
	struct ptimer	*t = arg;
	void		(*fn)(void *) = t->fn;
	void		*fnarg = t->arg;

	(void)fd;
	(void)ev;
	free(t);
	fn(fnarg);
}

static void *
op_timer_add(void *ctx, int64_t ms, void (*fn)(void *), void *arg)
{
	struct ptimer	*t;
	struct timeval	 tv;

	(void)ctx;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		fatal("%s", __func__);
	t->fn = fn;
	t->arg = arg;
	if (ms < 0)
		ms = 0;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_set(&t->ev, ptimer_fire, t);
	evtimer_add(&t->ev, &tv);
	return (t);
}

static void
op_timer_del(void *ctx, void *timer)
{
	struct ptimer	*t = timer;

	(void)ctx;
	if (t == NULL)
		return;
	evtimer_del(&t->ev);
	free(t);
}

static int
op_memory(void *ctx, struct mem_snapshot *ms)
{
	(void)ctx;
	return (mem_snapshot(ms));
}

static void
op_log(void *ctx, int pri, const char *line)
{
	(void)ctx;
	logit(pri, "%s", line);
}

/* The grant without its arrays' zeroes: IMSG_HOLD_GRANTV. */
static void
op_granted(void *ctx, uint64_t reqid, uint64_t holdid,
    const struct pool_plan *plan, uint16_t port)
{
	struct agencyd		*d = ctx;
	struct proto_grant_head	 h;
	struct iovec		 iov[3];

	memset(&h, 0, sizeof(h));
	h.reqid = reqid;
	h.holdid = holdid;
	h.port = port;
	iov[0].iov_base = &h;
	iov[0].iov_len = sizeof(h);
	/* Both NUL-terminated inside their arrays, as pool_add made them. */
	iov[1].iov_base = (void *)(uintptr_t)plan->upstream;
	iov[1].iov_len = strnlen(plan->upstream,
	    sizeof(plan->upstream) - 1) + 1;
	iov[2].iov_base = (void *)(uintptr_t)plan->label;
	iov[2].iov_len = strnlen(plan->label, sizeof(plan->label) - 1) + 1;
	proxy_composev(d, IMSG_HOLD_GRANTV, iov, 3);
}

static void
op_refused(void *ctx, uint64_t reqid, int reason, int retry_after,
    const char *message)
{
	struct agencyd		*d = ctx;
	struct proto_hold_refuse r;

	memset(&r, 0, sizeof(r));
	r.reqid = reqid;
	r.reason = reason;
	r.retry_after = retry_after;
	(void)strlcpy(r.message, message, sizeof(r.message));
	proxy_compose(d, IMSG_HOLD_REFUSE, &r, sizeof(r));
}

static void
op_changed(void *ctx, const struct pool_plan *plan)
{
	struct agencyd	*d = ctx;

	(void)plan;
	notify_status(d);
	/* A model moved by a reload may have left its old port. */
	if (!d->reloading)
		(void)models_ports_check(d, NULL, 0);
}

/* Stop the model's process and start it again, on the pool's queue. */
void
models_restart(struct agencyd *d, struct model *m)
{
	log_info("%s: restarting: its cancelled requests would go on",
	    m->plan.label);
	(void)pool_restart(d->pool, m->plan.name, NULL, NULL);
}

/* What the pool does not know of a model. */
void
models_fill_status(struct agencyd *d, struct proto_status *st)
{
	struct model	*m;

	if ((m = model_find(d, st->model)) != NULL && m->mc != NULL)
		(void)strlcpy(st->runtime, m->mc->rt->name,
		    sizeof(st->runtime));
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

/*
 * agency-proxy's sandbox follows the ports it must reach.  Fewer: it is
 * told, and narrows its Landlock rules.  More, a reload's new range,
 * which Landlock cannot add: it is restarted, and proxy_start gives the
 * new one what it needs then.  What was done is logged, or with msg
 * (a reload's) left there for the caller to say.  Returns 0 (nothing),
 * PORTS_NARROWED or PORTS_RESTART.
 */
int
models_ports_check(struct agencyd *d, char *msg, size_t msglen)
{
	struct proto_ports	 need;
	char			 now[128], was[128], line[PROTO_MSG_MAX];
	int			 rv;

	if (d->proxy_pid <= 0 || d->stopping)
		return (0);
	models_proxy_ports(d, &need);
	if (ports_within(&need, &d->proxy_ports) &&
	    ports_within(&d->proxy_ports, &need))
		return (0);
	ports_format(&need, now, sizeof(now));
	ports_format(&d->proxy_ports, was, sizeof(was));
	if (!ports_within(&need, &d->proxy_ports)) {
		(void)snprintf(line, sizeof(line), "model ports %s, beyond "
		    "the %s agency-proxy may reach: restarting it", now, was);
		(void)kill(d->proxy_pid, SIGTERM);
		rv = PORTS_RESTART;
	} else {
		(void)snprintf(line, sizeof(line), "agency-proxy may reach "
		    "model ports %s, no longer %s", now, was);
		proxy_compose(d, IMSG_PORTS, &need, sizeof(need));
		rv = PORTS_NARROWED;
	}
	/* After a restart, what its successor gets: no second one. */
	d->proxy_ports = need;
	if (msg != NULL)
		(void)strlcpy(msg, line, msglen);
	else
		log_info("%s", line);
	return (rv);
}
