/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The pool's ops (struct pool_ops, model_pool_ops) done for real: model
 * processes through spawn.c, signals to them through their reapers,
 * probes through the proxy, timers on libevent, memory from memory.c,
 * answers to the proxy.  agencyd.c hands the table to the pool, which
 * reaches this file only through it.
 *
 * The pool knows a model process by the model's own pid; agencyd reaps
 * its reaper, which exits only once nothing of the model is left, so
 * the exit the pool hears of is the end of everything the model started.
 *
 * A model's lines go up through the hook agencyd.c sets
 * (models_on_line).  It calls below it: emit.c, proxylink.c, model.c,
 * notify.c, spawn.c, memory.c and the pool's answers (pool_spawned,
 * pool_child_exited).
 *
 * Calls: emit.c, memory.c, model.c, notify.c, pool_change.c,
 * proxylink.c, sockdir.c, spawn.c, common/log.c.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <errno.h>
#include <event.h>
#include <libgen.h>
#include <limits.h>
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
static void	 op_waiting(void *, uint64_t, int, uint32_t, int64_t);

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
	.waiting = op_waiting,
};

/*
 * The last line this process of m wrote that says "error" or "failed"
 * (llama-server's "error loading model", vLLM's tracebacks' last line
 * names its error), among its last RING_ERROR_LINES; NULL if none.
 */
#define RING_ERROR_LINES	16
static const char *
last_error_line(const struct model *m)
{
	const char	*line;
	size_t		 i, n = ring_count(&m->ring);

	for (i = n; i > 0 && n - i < RING_ERROR_LINES; i--) {
		if (ring_seq(&m->ring, i - 1) <= m->spawned_seq)
			break;
		line = ring_get(&m->ring, i - 1);
		if (strcasestr(line, "error") != NULL ||
		    strcasestr(line, "failed") != NULL)
			return (line);
	}
	return (NULL);
}

/*
 * A model's reaper was reaped: nothing of the model is left.  Read what
 * it wrote, then tell the pool how the model itself ended.
 */
void
models_reaped(struct agencyd *d, pid_t pid, int status)
{
	struct model	*m;
	const char	*said = NULL;
	int		 addr_in_use = 0;

	if ((m = model_by_reaper(d, pid)) != NULL) {
		status = spawn_reaped(&m->sp, status);
		pid = m->sp.pid;
		spawn_close(&m->sp);
		m->sp_open = 0;
		addr_in_use = m->addr_in_use;
		m->addr_in_use = 0;
		said = last_error_line(m);
	}
	if (m != NULL)
		sockdir_remove(&d->sockdirs, &m->sock);
	pool_child_exited(d->pool, pid, status, addr_in_use, said);
}

/*
 * Who hears each line a model writes, once its ring has it: set at
 * start-up by agencyd.c (control.c's followers and the proxy's), so
 * that the lines go up without this file naming anything above it.
 */
static models_line_cb	 line_hook;
static void		*line_hook_arg;

void
models_on_line(models_line_cb fn, void *arg)
{
	line_hook = fn;
	line_hook_arg = arg;
}

static void
model_line(void *arg, const char *line)
{
	struct model	*m = arg;

	if (spawn_line_addr_in_use(line))
		m->addr_in_use = 1;
	if (line_hook != NULL)
		line_hook(line_hook_arg, m->plan.name, m->ring.pushed, line);
}

static void
op_spawn(void *ctx, const struct pool_plan *plan, uint64_t spawnid,
    uint16_t port)
{
	struct agencyd		*d = ctx;
	struct model		*m = plan->arg;
	struct model_conf	*mc = m->mc;
	struct spawn_req	 req;
	struct spawn_tokens	 tok;
	char			 portstr[8], err[SPAWN_ERR_MAX];
	char			 home[PATH_MAX];
	char			**argv = NULL, **envp = NULL;
	const char		*user = NULL;
	pid_t			 pid = -1;

	(void)snprintf(portstr, sizeof(portstr), "%u", port);
	/* A socket directory of its own, new for each process (%s). */
	sockdir_remove(&d->sockdirs, &m->sock);
	if (spawn_uses(mc->rt->command, 's') &&
	    sockdir_make(&d->sockdirs, &m->sock, err, sizeof(err)) == -1)
		goto done;
	tok.port = portstr;
	tok.sock = m->sock.dir[0] != '\0' ? m->sock.server : NULL;
	tok.upstream = mc->upstream;
	tok.model = mc->name;
	if (spawn_argv(mc->rt->command, &tok, &argv, err, sizeof(err)) == -1)
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
	/* Its socket's group (the proxy's) may connect to it. */
	req.umask = m->sock.dir[0] != '\0' && d->sockdirs.shared ? 007 : 0;
	req.label = plan->label;
	req.ring = &m->ring;
	req.line_cb = model_line;
	req.cb_arg = m;
	m->addr_in_use = 0;
	m->spawned_seq = m->ring.pushed;
	if ((pid = spawn_start(&req, &m->sp, err, sizeof(err))) != -1) {
		m->sp_open = 1;
		/* The program, once: the label names only the model. */
		log_info("%s: started %s, pid %d, port %u", plan->label,
		    basename(argv[0]), (int)pid, port);
		log_debug("%s: its reaper is pid %d", plan->label,
		    (int)m->sp.reaper);
	}
 done:
	if (pid == -1)
		sockdir_remove(&d->sockdirs, &m->sock);
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
	(void)strlcpy(pr->p.sock, m->sock.proxy, sizeof(pr->p.sock));
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

static void
op_granted(void *ctx, uint64_t reqid, uint64_t holdid,
    const struct pool_plan *plan, uint16_t port)
{
	struct agencyd		*d = ctx;
	struct model		*m = plan->arg;
	struct proto_hold_grant	 g;

	g.reqid = reqid;
	g.holdid = holdid;
	g.port = port;
	(void)strlcpy(g.upstream, plan->upstream, sizeof(g.upstream));
	(void)strlcpy(g.label, plan->label, sizeof(g.label));
	(void)strlcpy(g.sock, m->sock.proxy, sizeof(g.sock));
	proxy_compose(d, IMSG_HOLD_GRANT, &g, sizeof(g));
}

static void
op_refused(void *ctx, uint64_t reqid, int reason, int retry_after,
    const char *message)
{
	struct proto_hold_refuse r = { .reqid = reqid, .reason = reason,
	    .retry_after = retry_after };

	(void)strlcpy(r.message, message, sizeof(r.message));
	proxy_compose(ctx, IMSG_HOLD_REFUSE, &r, sizeof(r));
}

static void
op_changed(void *ctx, const struct pool_plan *plan)
{
	struct agencyd	*d = ctx;

	notify_status(d);
	emit_changed(d, plan->name);
	/* A model moved by a reload may have left its old port. */
	if (!d->reloading)
		(void)proxy_ports_check(d, NULL, 0);
}

/* What a waiting request that asked for it waits for: IMSG_HOLD_WAIT. */
static void
op_waiting(void *ctx, uint64_t reqid, int wait, uint32_t ahead,
    int64_t load_ms)
{
	struct proto_hold_wait	 w = { .reqid = reqid, .wait = wait,
	    .ahead = ahead, .load_ms = load_ms };

	proxy_compose(ctx, IMSG_HOLD_WAIT, &w, sizeof(w));
}
