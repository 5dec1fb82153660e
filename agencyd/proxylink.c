/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agencyd's side of the socketpair to agency-proxy: the proxy's life
 * (start, death, a new one, its drain when agencyd stops) and its link
 * (reading, writing, bounds).  Everything that comes from the proxy is
 * hostile until proven otherwise: proto.c reads each message whole or
 * refuses it, and a refusal, or a message that breaks a bound, kills
 * the proxy, which is started again; its holds are released, the model
 * processes keep running.  Each message read goes to the handler
 * proxysvc.c registers (proxy_on_message): holds, probe results, log
 * lines and the proxy's readiness come back here, the services go
 * there.
 *
 * Nor can a proxy make agencyd grow: it sends no fds, holds no more
 * requests than it has fds for connections, is answered a few status
 * requests at a time (the next wait until those answers are out), and
 * is killed when it stops reading what agencyd sends it
 * (PROXY_STALL_MS, PROXY_QUEUE_MAX).  Its log lines, and the answers to
 * probes it relays, reach the log escaped (vis(3)), at the priorities
 * the proxy uses.
 *
 * Calls: model.c (the records), notify.c, ports.c, spawn.c, keystats.c,
 * pool.c, pool_change.c, common/config.c, common/confimsg.c,
 * common/imsg.c, common/log.c, common/msg.c, common/proto.c.  Nothing
 * it calls calls it.
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#define LIBBSD_OPENBSD_VIS	/* strnvis(dst, src, size, flag) */
#include <vis.h>

#include "agencyd.h"
#include "log.h"
#include "msg.h"
#include "proto.h"

#define PROXY_QUICK_DEATH	1000	/* ms: a proxy that dies this young */
#define PROXY_RESPAWN_WAIT	1000	/* ms: waits this long to restart */
#define PROXY_READS_MAX		4	/* reads of a full buffer a turn */
#define PROXY_ENV_MAX		8	/* variables of the proxy's environment */
#define PROXY_USERS_MAX		4096	/* user names sent for the log */

/* Who hears of each new proxy once it is ready (emit.c), and who takes
 * its messages and hears of its end (proxysvc.c). */
static proxy_ready_cb	 ready_cb;
static void		*ready_arg;
static proxy_message_cb	 message_cb;
static proxy_drop_cb	 drop_cb;

void
proxy_on_ready(proxy_ready_cb fn, void *arg)
{
	ready_cb = fn;
	ready_arg = arg;
}

void
proxy_on_message(proxy_message_cb fn, proxy_drop_cb drop)
{
	message_cb = fn;
	drop_cb = drop;
}

/* What the current proxy has outstanding, and how the link is doing. */
static struct {
	int			 init;
	uint64_t		 holds;		/* asked, or granted */
	uint64_t		 fdmax;		/* its fds: bounds both */
	unsigned int		 status;	/* answers since it last read */
	int			 rpaused;	/* status waits for the queue */
	int			 doomed;	/* killed at the next turn */
	const char		*why;
	struct event		 stall;
	struct event		 doom;
	/* a drain: its end, or none; its timer, the deadline or now */
	proxy_drain_cb		 drained;
	struct event		 drain;
} plink;

static int64_t	mono_ms(void);
static void	proxy_dispatch(int, short, void *);
static void	proxy_kill(struct agencyd *);
static void	proxy_drop(struct agencyd *);
static void	proxy_doom(struct agencyd *, const char *);
static void	proxy_restart_cb(int, short, void *);
static void	proxy_restart_later(struct agencyd *);
static void	proxy_stall_cb(int, short, void *);
static void	proxy_doom_cb(int, short, void *);
static void	proxy_drain_cb_ev(int, short, void *);
static void	proxy_drain_soon(void);
static int	proxy_write(struct agencyd *);

static int64_t
mono_ms(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/*
 * The proxy's environment: nothing of agencyd's (secrets of the operator,
 * HF_TOKEN, LD_PRELOAD...), only what it is told here, and in a build
 * with sanitizers the options of their reports.
 */
static void
proxy_env(char *envp[PROXY_ENV_MAX])
{
	static char	 changelist[] = "EVENT_EPOLL_USE_CHANGELIST=1";
	size_t		 n = 0;
#ifdef __SANITIZE_ADDRESS__
	extern char	**environ;
	static const char *keep[] = { "ASAN_OPTIONS=", "LSAN_OPTIONS=",
			    "UBSAN_OPTIONS=" };
	size_t		 i, k;
#endif

	/*
	 * libevent's epoll changelist folds the enable/disable pairs evhttp
	 * makes around every read and write into one epoll_ctl a loop
	 * turn, or none (bench/: a third of the proxy's system calls).
	 * The proxy dups no fds, the one case the changelist gets wrong.
	 */
	envp[n++] = changelist;
#ifdef __SANITIZE_ADDRESS__
	for (i = 0; environ[i] != NULL && n < PROXY_ENV_MAX - 1; i++)
		for (k = 0; k < sizeof(keep) / sizeof(keep[0]); k++)
			if (strncmp(environ[i], keep[k],
			    strlen(keep[k])) == 0)
				envp[n++] = environ[i];
#endif
	envp[n] = NULL;
}

/*
 * The bound of the proxy's holds, and of the cancels it may ask for: each
 * is a request, and each request keeps a connection (a client's, or a
 * model's while its answer drains), so never more than the proxy has fds.
 * It raises its limit to the hard one it inherits from us.
 */
static uint64_t
proxy_fdmax(void)
{
	struct rlimit	 rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == -1 || rl.rlim_max == RLIM_INFINITY ||
	    rl.rlim_max > MAX_CONNECTIONS)
		return (MAX_CONNECTIONS);
	return (rl.rlim_max);
}

/*
 * agencyd's end of a new proxy's channel: the bounds start again, fds are
 * refused, and the configuration is queued.  -1 (and nothing open) when
 * that fails.
 */
int
proxy_link_open(struct agencyd *d, int fd)
{
	if (!plink.init) {
		evtimer_set(&plink.stall, proxy_stall_cb, d);
		evtimer_set(&plink.doom, proxy_doom_cb, d);
		evtimer_set(&plink.drain, proxy_drain_cb_ev, d);
		plink.init = 1;
	}
	/* What the services kept of a proxy before ends with it. */
	if (drop_cb != NULL)
		drop_cb(d);
	plink.holds = 0;
	plink.status = 0;
	plink.rpaused = 0;
	plink.doomed = 0;
	plink.why = NULL;
	plink.fdmax = proxy_fdmax();
	evtimer_del(&plink.stall);
	evtimer_del(&plink.doom);

	d->proxy_gen++;
	d->proxy_ready = 0;
	d->proxy_pid = 0;
	imsgev_init(&d->proxy_iev, fd, proxy_dispatch, d);
	imsg_refuse_fds(&d->proxy_iev.ibuf);
	d->proxy_up = 1;
	if (proxy_send_config(d) == -1) {
		imsgev_clear(&d->proxy_iev);
		close(fd);
		d->proxy_up = 0;
		return (-1);
	}
	imsgev_add(&d->proxy_iev);
	return (0);
}

/* How many holds, cancels, loads and unloads the proxy may have out at
 * once: one a connection it may have. */
uint64_t
proxy_bound(void)
{
	return (plink.fdmax);
}


/*
 * Everything that can fail is done before the fork: once there is a
 * child, it has its configuration queued, and only its exec can fail
 * (then it exits 127 and is started again as any proxy that died).
 */
int
proxy_start(struct agencyd *d)
{
	int		 sp[2];
	pid_t		 pid;
	char		*argv[10 + 2 * PROTO_PORT_RANGES], *envp[PROXY_ENV_MAX];
	int		 argc = 0;
	uint32_t	 i;
	static char	 a0[] = "agency-proxy", ad[] = "-d", av[] = "-v";
	static char	 avv[] = "-vv", au[] = "-u", ap[] = "-p";
	static char	 ports[PROTO_PORT_RANGES][16];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1) {
		log_warn("%s: socketpair", __func__);
		return (-1);
	}
	argv[argc++] = a0;
	if (d->debug)
		argv[argc++] = ad;
	if (d->verbose > 0)
		argv[argc++] = d->verbose > 1 ? avv : av;
	if (getuid() == 0) {
		argv[argc++] = au;
		argv[argc++] = d->conf->user;
	}
	/* Its sandbox allows connect to these ports alone, for good: the
	 * range, and the ports of models a reload has yet to move. */
	models_proxy_ports(d, &d->proxy_ports);
	for (i = 0; i < d->proxy_ports.n; i++) {
		(void)snprintf(ports[i], sizeof(ports[i]), "%u:%u",
		    (unsigned int)d->proxy_ports.r[i].lo,
		    (unsigned int)d->proxy_ports.r[i].hi);
		argv[argc++] = ap;
		argv[argc++] = ports[i];
	}
	argv[argc] = NULL;
	proxy_env(envp);

	if (proxy_link_open(d, sp[0]) == -1) {
		close(sp[1]);
		return (-1);
	}

	log_flush();	/* not twice: the child must not inherit lines */
	switch ((pid = fork())) {
	case -1:
		log_warn("%s: fork", __func__);
		imsgev_clear(&d->proxy_iev);
		close(sp[0]);
		close(sp[1]);
		d->proxy_up = 0;
		return (-1);
	case 0:
		/* Its own session: a terminal's ^C is agencyd's to handle. */
		(void)setsid();
		if (dup2(sp[1], 3) == -1)
			_exit(127);
		closefrom(4);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		execve(d->proxy_path, argv, envp);
		dprintf(STDERR_FILENO, "agencyd: exec %s: %s\n",
		    d->proxy_path, strerror(errno));
		_exit(127);
	default:
		break;
	}
	close(sp[1]);
	d->proxy_pid = pid;
	d->proxy_started = mono_ms();
	log_debug("%s: agency-proxy started, pid %d", __func__, (int)pid);
	return (0);
}

/* A user's name for the proxy's log, once; 0 if the uid is known or
 * sent, -1 if it cannot be queued. */
static int
proxy_send_user(struct agencyd *d, uid_t uid, const char *name, uid_t *sent,
    size_t *nsent)
{
	size_t	 i;

	for (i = 0; i < *nsent; i++)
		if (sent[i] == uid)
			return (0);
	if (*nsent < PROXY_USERS_MAX)
		sent[(*nsent)++] = uid;
	if (strlen(name) >= AGENCY_NAME_MAX)
		return (0);
	return (config_set_user(&d->proxy_iev.ibuf, uid, name));
}

/*
 * The names of the users the allow rules may let in, for the proxy's
 * access log: the users named, and the members of the groups named
 * (whose names the group lists).  Others are logged as their uid.
 */
static int
proxy_send_users(struct agencyd *d)
{
	struct allow_conf	*a;
	struct passwd		*pw;
	struct group		*gr;
	uid_t			 sent[PROXY_USERS_MAX];
	size_t			 nsent = 0, i, n;
	char			**mem;
	int			 rv = 0;

	TAILQ_FOREACH(a, &d->conf->allows, entry) {
		if (a->kind == ALLOW_USER) {
			if (proxy_send_user(d, a->id, a->name, sent,
			    &nsent) == -1)
				return (-1);
			continue;
		}
		if ((gr = getgrgid(a->id)) == NULL)
			continue;
		/* getpwnam reuses what getgrgid returned: copy it first */
		for (n = 0; gr->gr_mem[n] != NULL; n++)
			;
		if ((mem = calloc(n + 1, sizeof(*mem))) == NULL)
			return (-1);
		for (i = 0; i < n; i++)
			if ((mem[i] = strdup(gr->gr_mem[i])) == NULL)
				break;
		for (i = 0; rv == 0 && mem[i] != NULL; i++)
			if ((pw = getpwnam(mem[i])) != NULL)
				rv = proxy_send_user(d, pw->pw_uid, mem[i], sent,
				    &nsent);
		for (i = 0; mem[i] != NULL; i++)
			free(mem[i]);
		free(mem);
		if (rv == -1)
			return (-1);
	}
	return (0);
}

/* A listener's socket (a copy, for the proxy) and its TLS files' bytes. */
static int
proxy_send_listen(struct agencyd *d, const struct listen_conf *l)
{
	const struct tls_files	*tf = config_listen_tls(d->conf, l);
	int			 fd;

	if (l->tls && (tf->cert_pem == NULL || tf->key_pem == NULL)) {
		log_warnx("%s: listen on %s port %u: its certificate was "
		    "not read", __func__, l->host, l->port);
		return (-1);
	}
	if ((fd = fcntl(l->fd, F_DUPFD_CLOEXEC, 0)) == -1) {
		log_warn("%s: dup", __func__);
		return (-1);
	}
	return (config_set_listen(&d->proxy_iev.ibuf, l, tf, fd));
}

/*
 * The configuration, in the order confimsg.c has it: the models as
 * served (d->models, with the labels they are logged by), and the
 * names of the users the allow rules let in.
 */
int
proxy_send_config(struct agencyd *d)
{
	struct agency_conf	*conf = d->conf;
	struct imsgbuf		*ibuf = &d->proxy_iev.ibuf;
	struct listen_conf	*l;
	struct runtime_conf	*rt;
	struct model		*m;
	struct key_conf		*k;
	struct allow_conf	*a;

	if (!d->proxy_up)
		return (0);
	if (config_set_globals(ibuf, conf) == -1)
		goto fail;
	TAILQ_FOREACH(l, &conf->listens, entry)
		if (l->fd != -1 && proxy_send_listen(d, l) == -1)
			goto fail;
	TAILQ_FOREACH(rt, &conf->runtimes, entry)
		if (config_set_runtime(ibuf, rt) == -1)
			goto fail;
	TAILQ_FOREACH(m, &d->models, entry)
		if (config_set_model(ibuf, m->mc, m->plan.label) == -1)
			goto fail;
	TAILQ_FOREACH(k, &conf->keys, entry)
		if (config_set_key(ibuf, k) == -1)
			goto fail;
	TAILQ_FOREACH(a, &conf->allows, entry)
		if (config_set_allow(ibuf, a) == -1)
			goto fail;
	if (proxy_send_users(d) == -1 || config_set_end(ibuf) == -1)
		goto fail;
	imsgev_add(&d->proxy_iev);
	return (0);
 fail:
	log_warn("%s: cannot queue the configuration", __func__);
	return (-1);
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
proxy_ports_check(struct agencyd *d, char *msg, size_t msglen)
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

/* No progress writing to the proxy for this long: it stopped reading. */
static void
proxy_stall_arm(void)
{
	struct timeval	 tv;

	tv.tv_sec = PROXY_STALL_MS / 1000;
	tv.tv_usec = (PROXY_STALL_MS % 1000) * 1000;
	evtimer_del(&plink.stall);
	evtimer_add(&plink.stall, &tv);
}

static void
proxy_stall_cb(int fd, short ev, void *arg)
{
	struct agencyd	*d = arg;

	(void)fd;
	(void)ev;
	if (d->proxy_up && d->proxy_iev.ibuf.w.queued > 0) {
		log_warnx("agency-proxy read nothing it was sent for %d ms: "
		    "killing it", PROXY_STALL_MS);
		proxy_kill(d);
	}
}

/* Kill the proxy at the next turn of the loop, from wherever this is. */
static void
proxy_doom(struct agencyd *d, const char *why)
{
	struct timeval	 tv = { 0, 0 };

	(void)d;
	if (plink.doomed)
		return;
	plink.doomed = 1;
	plink.why = why;
	evtimer_add(&plink.doom, &tv);
}

static void
proxy_doom_cb(int fd, short ev, void *arg)
{
	struct agencyd	*d = arg;

	(void)fd;
	(void)ev;
	if (d->proxy_up && plink.doomed)
		proxy_hostile(d, plink.why, 0);
}

/*
 * A message to the proxy, as proto.c writes it.  Within a pool callback
 * the proxy may be over its bound: it is then killed at the next turn.
 */
void
proxy_compose(struct agencyd *d, uint32_t type, const void *data, size_t len)
{
	struct imsgbuf	*ibuf = &d->proxy_iev.ibuf;
	struct msgw	 w;

	if (!d->proxy_up || plink.doomed)
		return;
	/* A refusal answers a hold request; a grant makes it a hold. */
	if (type == IMSG_HOLD_REFUSE && plink.holds > 0)
		plink.holds--;
	if (ibuf->w.qbytes > PROXY_QUEUE_MAX) {
		proxy_doom(d, "left too much of what it was sent unread");
		return;
	}
	if (proto_write(&w, FROM_PARENT, type, data, len) == -1) {
		log_warnx("%s: a message of type %u that cannot be written",
		    __func__, type);
		return;
	}
	if (msg_compose(ibuf, type, 0, -1, &w) == -1) {
		log_warn("%s: type %u", __func__, type);
		return;
	}
	if (!evtimer_pending(&plink.stall, NULL))
		proxy_stall_arm();
	if (!d->proxy_batch)
		imsgev_add(&d->proxy_iev);
}

void
proxy_send_probe(struct agencyd *d, const struct proto_probe *p)
{
	proxy_compose(d, IMSG_PROBE, p, sizeof(*p));
}

/* Close our end and let SIGCHLD tell us the rest. */
static void
proxy_drop(struct agencyd *d)
{
	if (!d->proxy_up)
		return;
	imsgev_clear(&d->proxy_iev);
	close(d->proxy_iev.ibuf.fd);
	d->proxy_up = 0;
	d->proxy_ready = 0;
	evtimer_del(&plink.stall);
	evtimer_del(&plink.doom);
	plink.doomed = 0;
	plink.holds = 0;
	/* Nobody will answer what it was asked (proxysvc.c). */
	if (drop_cb != NULL)
		drop_cb(d);
	/* Its holds end with it; waiting requests go with their clients. */
	pool_release_owner(d->pool, d->proxy_gen);
	/* A drain has nothing more to wait for. */
	proxy_drain_soon();
}

/* The proxy did what no proxy may: it is killed.  Returns -1, for the
 * handlers' "the proxy is gone". */
int
proxy_hostile(struct agencyd *d, const char *why, uint32_t type)
{
	if (type != 0)
		log_warnx("agency-proxy %s (type %u): killing it", why, type);
	else
		log_warnx("agency-proxy %s: killing it", why);
	proxy_kill(d);
	return (-1);
}

/* SIGKILL: SIGCHLD then starts a new one. */
static void
proxy_kill(struct agencyd *d)
{
	if (d->proxy_pid > 0)
		(void)kill(d->proxy_pid, SIGKILL);
	proxy_drop(d);
}

/* SIGCHLD reaped the proxy. */
void
proxy_died(struct agencyd *d, int status)
{
	char		how[64];
	int64_t		age;

	spawn_describe_exit(status, how, sizeof(how));
	d->proxy_pid = 0;
	proxy_drop(d);
	if (d->stopping)
		return;
	log_warnx("agency-proxy %s; starting a new one", how);

	age = mono_ms() - d->proxy_started;
	if (age < PROXY_QUICK_DEATH)
		d->proxy_quick_deaths++;
	else
		d->proxy_quick_deaths = 0;
	proxy_restart_later(d);
}

/* Start again at once, unless it keeps dying young (or cannot start). */
static void
proxy_restart_later(struct agencyd *d)
{
	struct timeval	tv;

	tv.tv_sec = 0;
	tv.tv_usec = 0;
	if (d->proxy_quick_deaths > 2) {
		tv.tv_sec = PROXY_RESPAWN_WAIT / 1000;
		tv.tv_usec = (PROXY_RESPAWN_WAIT % 1000) * 1000;
	}
	evtimer_set(&d->proxy_restart_ev, proxy_restart_cb, d);
	evtimer_add(&d->proxy_restart_ev, &tv);
}

static void
proxy_restart_cb(int fd, short ev, void *arg)
{
	struct agencyd	*d = arg;
	struct probe	*pr;

	(void)fd;
	(void)ev;
	if (d->stopping || d->proxy_pid != 0)
		return;
	if (proxy_start(d) == -1) {
		/* no process: not a death, and not "exited 0"; wait, as for
		 * one that keeps dying, rather than retry at once */
		log_warnx("cannot start agency-proxy; trying again in %d ms",
		    PROXY_RESPAWN_WAIT);
		d->proxy_quick_deaths = 3;
		proxy_restart_later(d);
		return;
	}
	/* Probes in flight died with the old proxy. */
	TAILQ_FOREACH(pr, &d->probes, entry)
		proxy_send_probe(d, &pr->p);
}

/*
 * agencyd stops, and the proxy drains first (IMSG_DRAIN): it refuses
 * new requests, 503 with a Retry-After of retry seconds, and gives those
 * in flight timeout ms to finish before it ends them.  done runs at the
 * next turn of the loop once the proxy says none is left, or it died,
 * or PROXY_DRAIN_SLACK after the timeout, or proxy_drain_now.  -1 (done
 * never runs) when no proxy is ready to drain.
 */
int
proxy_drain(struct agencyd *d, int64_t timeout, int retry,
    proxy_drain_cb done)
{
	struct proto_drain	 pd;
	struct timeval		 tv;
	int64_t			 ms = timeout + PROXY_DRAIN_SLACK;

	if (!d->proxy_up || !d->proxy_ready || plink.doomed)
		return (-1);
	memset(&pd, 0, sizeof(pd));
	pd.timeout = timeout;
	pd.retry_after = retry;
	proxy_compose(d, IMSG_DRAIN, &pd, sizeof(pd));
	plink.drained = done;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(&plink.drain, &tv);
	return (0);
}

/* End the drain at the next turn, if one runs. */
void
proxy_drain_now(struct agencyd *d)
{
	(void)d;
	proxy_drain_soon();
}

/* IMSG_DRAINED: no request is left in the proxy. */
int
proxy_drained(struct agencyd *d)
{
	if (plink.drained == NULL)
		return (proxy_hostile(d, "said it drained, unasked",
		    IMSG_DRAINED));
	proxy_drain_soon();
	return (0);
}

static void
proxy_drain_soon(void)
{
	struct timeval	 tv = { 0, 0 };

	if (plink.drained != NULL)
		evtimer_add(&plink.drain, &tv);
}

static void
proxy_drain_cb_ev(int fd, short ev, void *arg)
{
	struct agencyd	*d = arg;
	proxy_drain_cb	 done = plink.drained;

	(void)fd;
	(void)ev;
	plink.drained = NULL;
	if (done != NULL)
		done(d);
}

void
proxy_stop(struct agencyd *d)
{
	if (evtimer_initialized(&d->proxy_restart_ev))
		evtimer_del(&d->proxy_restart_ev);
	if (d->proxy_pid > 0)
		(void)kill(d->proxy_pid, SIGTERM);
	proxy_drop(d);
}


/*
 * What the proxy asks of the pool, each within its bound; -1 when the
 * proxy was killed.
 */
int
proxy_hold(struct agencyd *d, const struct proto_hold_req *hr)
{
	if (plink.holds >= plink.fdmax)
		return (proxy_hostile(d, "asked for more holds than it has "
		    "connections", IMSG_HOLD_REQ));
	plink.holds++;	/* before: a refusal may come at once */
	keystats_count(d, hr->key);
	if (hr->flags & PROTO_HOLD_PROGRESS)
		pool_acquire_progress(d->pool, hr->model, hr->reqid,
		    d->proxy_gen);
	else
		pool_acquire(d->pool, hr->model, hr->reqid, d->proxy_gen);
	return (0);
}

int
proxy_withdraw(struct agencyd *d, const struct proto_reqid *rq)
{
	if (pool_withdraw(d->pool, rq->reqid, d->proxy_gen) == 1 &&
	    plink.holds > 0)
		plink.holds--;
	return (0);
}

int
proxy_release(struct agencyd *d, const struct proto_holdid *hid)
{
	if (pool_release(d->pool, hid->holdid, d->proxy_gen) == -1)
		return (proxy_hostile(d, "sent a release of a hold it does "
		    "not have", IMSG_HOLD_RELEASE));
	if (plink.holds > 0)
		plink.holds--;
	return (0);
}

/* What a model answered a probe: into the log and status, escaped.  A
 * probe cancelled meanwhile is let be. */
int
proxy_probe_result(struct agencyd *d, const struct proto_probe_result *res)
{
	struct probe	*pr;
	char		 body[4 * sizeof(res->body)];

	TAILQ_FOREACH(pr, &d->probes, entry)
		if (pr->p.loadid == res->loadid)
			break;
	if (pr == NULL)
		return (0);
	TAILQ_REMOVE(&d->probes, pr, entry);
	free(pr);
	pool_probe_result(d->pool, res->loadid, res->ok, res->status,
	    proxy_clean(body, sizeof(body), res->body));
	return (0);
}

/* The proxy serves: the service manager hears of it (the first), and
 * the hook (emit.c's sync). */
int
proxy_ready(struct agencyd *d)
{
	d->proxy_ready = 1;
	d->proxy_quick_deaths = 0;
	log_info("agency-proxy ready, pid %d", (int)d->proxy_pid);
	notify_ready();
	notify_status(d);
	if (ready_cb != NULL)
		ready_cb(ready_arg, d);
	return (0);
}


/*
 * A line for the log from the proxy, or from a model through it: every
 * byte that is not printable ASCII, and the backslash, as a C-style or
 * octal escape (vis(3)), so that no line it sends can hold a newline
 * (a forged line) or a terminal's escape sequence.  dst has room for
 * 4 * strlen(src) + 1.
 */
const char *
proxy_clean(char *dst, size_t size, const char *src)
{
	const unsigned char	*p;
	size_t			 len;

	/* The access-log lines need no escape: keep them without a copy. */
	for (p = (const unsigned char *)src; *p != '\0'; p++)
		if (*p < 0x20 || *p > 0x7e || *p == '\\')
			break;
	if (*p == '\0' || size == 0)
		return (*p == '\0' ? src : "");
	/*
	 * As many bytes as are sure to fit, each at most 4 escaped: libbsd's
	 * strnvis writes its NUL past a full buffer.
	 */
	if ((len = strlen(src)) > (size - 1) / 4)
		len = (size - 1) / 4;
	(void)strvisx(dst, src, len, VIS_OCTAL | VIS_CSTYLE | VIS_TAB |
	    VIS_NL);
	return (dst);
}

/*
 * The priorities a proxy logs at (fatal's LOG_CRIT, warnings' LOG_ERR,
 * LOG_INFO, LOG_DEBUG): anything more urgent, which syslog may put on
 * every terminal, is LOG_CRIT; anything else, a facility's bits say, is
 * LOG_INFO.
 */
int
proxy_log_priority(uint32_t pri)
{
	if (pri < LOG_CRIT)
		return (LOG_CRIT);
	if (pri > LOG_DEBUG)
		return (LOG_INFO);
	return ((int)pri);
}

/*
 * The access-log line of a request, or another line the proxy logs.
 */
int
proxy_logline(struct agencyd *d, const struct proto_log *lg)
{
	char	 buf[4 * PROTO_LOGLINE_MAX + 1];
	int	 pri = proxy_log_priority((uint32_t)lg->pri);

	(void)d;
	if (pri != LOG_DEBUG || log_getverbose() > 1)
		log_str(pri, "proxy: ", proxy_clean(buf, sizeof(buf),
		    lg->line));
	return (0);
}

/*
 * Whether the next message is a status request to leave unread: a few
 * answers are still on their way out.  Written now if they can be.
 */
static int
proxy_status_wait(struct agencyd *d)
{
	struct imsg_hdr	 hdr;

	if (d->proxy_iev.ibuf.w.queued == 0)
		plink.status = 0;
	if (plink.status < PROXY_STATUS_MAX ||
	    imsg_peek(&d->proxy_iev.ibuf, &hdr) <= 0 ||
	    hdr.type != IMSG_STATUS_REQ)
		return (0);
	if (proxy_write(d) == -1)
		return (1);
	if (d->proxy_iev.ibuf.w.queued == 0) {
		plink.status = 0;
		return (0);
	}
	return (1);
}

/*
 * Every whole message read so far, each read whole by proto.c and handed
 * to proxysvc.c's handler; -1 when the proxy was dropped.
 */
static int
proxy_messages(struct agencyd *d)
{
	union proto_msg	 u;
	struct imsg	 imsg;
	const char	*why;
	char		 line[128];
	ssize_t		 n;
	uint32_t	 type;
	int		 rv;

	for (;;) {
		if (proxy_status_wait(d)) {
			/* Read no more until the answers are out. */
			if (d->proxy_up) {
				plink.rpaused = 1;
				imsgev_pause(&d->proxy_iev, 1);
			}
			return (d->proxy_up ? 0 : -1);
		}
		if ((n = imsg_get(&d->proxy_iev.ibuf, &imsg)) == -1)
			return (proxy_hostile(d, "sent a malformed message", 0));
		if (n == 0)
			break;
		type = imsg_get_type(&imsg);
		rv = proto_read(&imsg, FROM_PROXY, &u, sizeof(u), &why);
		imsg_free(&imsg);
		if (rv == -1) {
			(void)snprintf(line, sizeof(line), "sent an invalid "
			    "message: %s", why);
			return (proxy_hostile(d, line, type));
		}
		if (type == IMSG_STATUS_REQ)
			plink.status++;
		if (message_cb(d, type, &u) == -1 || !d->proxy_up)
			return (-1);
	}
	return (0);
}

/*
 * Write what is queued, as much as the socket takes now; -1 when the
 * proxy was dropped.
 */
static int
proxy_write(struct agencyd *d)
{
	struct imsgbuf	*ibuf = &d->proxy_iev.ibuf;
	size_t		 before = ibuf->w.qbytes, queued;

	while ((queued = ibuf->w.qbytes) > 0) {
		switch (imsg_write(ibuf)) {
		case -1:
			log_warn("%s: write", __func__);
			/* FALLTHROUGH */
		case 0:
			log_debug("%s: agency-proxy closed the channel",
			    __func__);
			proxy_drop(d);
			return (-1);
		default:
			break;
		}
		/* Blocked, or a message half out: EV_WRITE does the rest. */
		if (ibuf->w.qbytes == queued)
			break;
	}
	if (ibuf->w.queued == 0) {
		evtimer_del(&plink.stall);
		plink.status = 0;
	} else if (ibuf->w.qbytes < before)
		proxy_stall_arm();	/* it reads, if slowly */
	return (0);
}

/*
 * The proxy's channel, read and written here rather than by imsgev_io:
 * everything the proxy sent is read (a full buffer is read again), and
 * the answers of the whole batch are queued and then written at once,
 * in the same turn, so a busy channel costs one recvmsg and one sendmsg
 * a turn and no epoll_ctl to ask for EV_WRITE and drop it again.
 */
static void
proxy_dispatch(int fd, short event, void *arg)
{
	struct agencyd	*d = arg;
	struct imsgbuf	*ibuf = &d->proxy_iev.ibuf;
	ssize_t		 n;
	int		 full, reads = 0;

	(void)fd;
	if ((event & EV_WRITE) && proxy_write(d) == -1)
		return;
	if (plink.rpaused && ibuf->w.queued == 0) {
		/* the status answers are out: take what waited */
		plink.rpaused = 0;
		imsgev_pause(&d->proxy_iev, 0);
	}
	d->proxy_batch = 1;
	do {
		d->now_cached = 0;
		full = 0;
		if ((event & EV_READ) && !plink.rpaused) {
			if ((n = imsg_read(ibuf)) == -1 && errno == EBADMSG) {
				d->proxy_batch = 0;
				proxy_hostile(d, "sent file descriptors", 0);
				return;
			}
			if (n == -1 && errno != EAGAIN) {
				log_warn("%s: read", __func__);
				n = 0;
			}
			if (n == 0) {
				log_debug("%s: agency-proxy closed the "
				    "channel", __func__);
				d->proxy_batch = 0;
				proxy_drop(d);
				return;
			}
			full = ibuf->rlen == sizeof(ibuf->rbuf);
		}
		if (proxy_messages(d) == -1) {
			d->proxy_batch = 0;
			return;
		}
	} while (full && !plink.rpaused && ++reads < PROXY_READS_MAX);
	d->proxy_batch = 0;
	if (proxy_write(d) == -1)
		return;
	imsgev_add(&d->proxy_iev);
	if (plink.rpaused && ibuf->w.queued == 0) {
		/* out already: the next turn takes what waited */
		plink.rpaused = 0;
		imsgev_pause(&d->proxy_iev, 0);
		event_active(&d->proxy_iev.ev, EV_READ, 1);
	}
}

