/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agencyd's side of the socketpair to agency-proxy.  Everything that
 * comes from the proxy is hostile until proven otherwise: exact sizes,
 * strings that end inside their arrays, holds the proxy really holds.
 * A message that fails any of these kills the proxy, which is started
 * again; its holds are released, the model processes keep running.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "agencyd.h"
#include "control.h"
#include "log.h"
#include "proto.h"

#define PROXY_QUICK_DEATH	1000	/* ms: a proxy that dies this young */
#define PROXY_RESPAWN_WAIT	1000	/* ms: waits this long to restart */
#define PROXY_READS_MAX		4	/* reads of a full buffer a turn */

static void	proxy_dispatch(int, short, void *);
static void	proxy_hostile(struct agencyd *, const char *, uint32_t);
static void	proxy_restart_cb(int, short, void *);
static void	proxy_restart_later(struct agencyd *);
static void	proxy_status(struct agencyd *, struct imsg *);

int
listeners_bind(struct agency_conf *conf)
{
	struct listen_conf	*l;
	int			 s, on = 1;

	TAILQ_FOREACH(l, &conf->listens, entry) {
		if (l->fd != -1)
			continue;
		if ((s = socket(l->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, 0)) == -1) {
			log_warn("%s: socket for %s port %u", __func__,
			    l->host, l->port);
			return (-1);
		}
		if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on,
		    sizeof(on)) == -1)
			log_warn("%s: SO_REUSEADDR", __func__);
		/*
		 * Accepted sockets inherit it: the proxy passes each SSE
		 * chunk on at once, and Nagle would hold a chunk back until
		 * the client acknowledged the one before.  Set here, as the
		 * sandboxed proxy has no setsockopt.
		 */
		if (setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on,
		    sizeof(on)) == -1)
			log_warn("%s: TCP_NODELAY", __func__);
		if (l->ss.ss_family == AF_INET6 && setsockopt(s, IPPROTO_IPV6,
		    IPV6_V6ONLY, &on, sizeof(on)) == -1)
			log_warn("%s: IPV6_V6ONLY", __func__);
		if (bind(s, (struct sockaddr *)&l->ss, l->sslen) == -1 ||
		    listen(s, SOMAXCONN) == -1) {
			log_warn("%s: listen on %s port %u", __func__,
			    l->host, l->port);
			close(s);
			return (-1);
		}
		l->fd = s;
	}
	return (0);
}

int
proxy_start(struct agencyd *d)
{
	int		 sp[2];
	pid_t		 pid;
	char		*argv[8 + 2 * PROTO_PORT_RANGES];
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

	log_flush();	/* not twice: the child must not inherit lines */
	switch ((pid = fork())) {
	case -1:
		log_warn("%s: fork", __func__);
		close(sp[0]);
		close(sp[1]);
		return (-1);
	case 0:
		/* Its own session: a terminal's ^C is agencyd's to handle. */
		(void)setsid();
		if (dup2(sp[1], 3) == -1)
			_exit(127);
		closefrom(4);
		signal(SIGPIPE, SIG_DFL);
		signal(SIGCHLD, SIG_DFL);
		/*
		 * libevent's epoll changelist folds the enable/disable
		 * pairs evhttp makes around every read and write into one
		 * epoll_ctl a loop turn, or none (bench/: a third of the
		 * proxy's system calls).  The proxy dups no fds, the one
		 * case the changelist gets wrong.
		 */
		(void)setenv("EVENT_EPOLL_USE_CHANGELIST", "1", 1);
		execv(d->proxy_path, argv);
		dprintf(STDERR_FILENO, "agencyd: exec %s: %s\n",
		    d->proxy_path, strerror(errno));
		_exit(127);
	default:
		break;
	}
	close(sp[1]);
	d->proxy_pid = pid;
	d->proxy_gen++;
	d->proxy_ready = 0;
	d->proxy_started = mono_ms();
	imsgev_init(&d->proxy_iev, sp[0], proxy_dispatch, d);
	d->proxy_up = 1;
	log_debug("%s: agency-proxy started, pid %d", __func__, (int)pid);

	if (proxy_send_config(d) == -1)
		return (-1);
	imsgev_add(&d->proxy_iev);
	return (0);
}

static int
compose_str(struct agencyd *d, uint32_t type, const char *s)
{
	struct proto_str	ps;

	memset(&ps, 0, sizeof(ps));
	if (strlcpy(ps.s, s, sizeof(ps.s)) >= sizeof(ps.s))
		return (-1);
	return (imsg_compose(&d->proxy_iev.ibuf, type, 0, 0, -1, &ps,
	    sizeof(ps)) == -1 ? -1 : 0);
}

static int
compose_list(struct agencyd *d, uint32_t type, const struct strlist *l)
{
	struct strent	*se;

	TAILQ_FOREACH(se, l, entry)
		if (compose_str(d, type, se->s) == -1)
			return (-1);
	return (0);
}

int
proxy_send_config(struct agencyd *d)
{
	struct agency_conf		*conf = d->conf;
	struct imsgbuf			*ibuf = &d->proxy_iev.ibuf;
	struct proto_conf_global	 g;
	struct proto_listen		 pl;
	struct proto_runtime		 pr;
	struct proto_move		 pm;
	struct proto_model		 pmod;
	struct listen_conf		*l;
	struct runtime_conf		*rt;
	struct rule_move		*mv;
	struct model			*m;
	int				 fd;

	if (!d->proxy_up)
		return (0);

	memset(&g, 0, sizeof(g));
	g.max_body = conf->max_body;
	g.request_timeout = conf->request_timeout;
	g.header_timeout = conf->header_timeout;
	g.max_connections = conf->max_connections;
	g.body_timeout = conf->body_timeout;
	g.body_buffer = conf->body_buffer;
	g.host_any = conf->server_name_any;
	g.port_lo = conf->port_lo;
	g.port_hi = conf->port_hi;
	(void)strlcpy(g.default_model, conf->default_model,
	    sizeof(g.default_model));
	if (imsg_compose(ibuf, IMSG_CONF_START, 0, 0, -1, &g, sizeof(g)) == -1 ||
	    compose_list(d, IMSG_CONF_NAME, &conf->server_names) == -1)
		goto fail;

	TAILQ_FOREACH(l, &conf->listens, entry) {
		if (l->fd == -1)
			continue;
		if ((fd = fcntl(l->fd, F_DUPFD_CLOEXEC, 0)) == -1) {
			log_warn("%s: dup", __func__);
			goto fail;
		}
		memset(&pl, 0, sizeof(pl));
		(void)strlcpy(pl.host, l->host, sizeof(pl.host));
		pl.port = l->port;
		if (imsg_compose(ibuf, IMSG_CONF_LISTEN, 0, 0, fd, &pl,
		    sizeof(pl)) == -1) {
			close(fd);
			goto fail;
		}
	}

	TAILQ_FOREACH(rt, &conf->runtimes, entry) {
		memset(&pr, 0, sizeof(pr));
		(void)strlcpy(pr.name, rt->name, sizeof(pr.name));
		pr.kind = rt->kind;
		pr.stops = rt->stops;
		pr.max_tokens = rt->max_tokens;
		if (imsg_compose(ibuf, IMSG_CONF_RUNTIME, 0, 0, -1, &pr,
		    sizeof(pr)) == -1 ||
		    compose_list(d, IMSG_CONF_ROUTE, &rt->routes) == -1 ||
		    compose_list(d, IMSG_CONF_PART, &rt->parts) == -1 ||
		    compose_list(d, IMSG_CONF_REFUSE, &rt->refuse) == -1)
			goto fail;
		TAILQ_FOREACH(mv, &rt->moves, entry) {
			memset(&pm, 0, sizeof(pm));
			(void)strlcpy(pm.from, mv->from, sizeof(pm.from));
			(void)strlcpy(pm.to, mv->to, sizeof(pm.to));
			if (imsg_compose(ibuf, IMSG_CONF_MOVE, 0, 0, -1, &pm,
			    sizeof(pm)) == -1)
				goto fail;
		}
	}

	TAILQ_FOREACH(m, &d->models, entry) {
		memset(&pmod, 0, sizeof(pmod));
		(void)strlcpy(pmod.name, m->mc->name, sizeof(pmod.name));
		(void)strlcpy(pmod.runtime, m->mc->rt->name,
		    sizeof(pmod.runtime));
		(void)strlcpy(pmod.upstream, m->mc->upstream,
		    sizeof(pmod.upstream));
		(void)strlcpy(pmod.label, m->plan.label, sizeof(pmod.label));
		pmod.max_tokens = m->mc->max_tokens;
		if (imsg_compose(ibuf, IMSG_CONF_MODEL, 0, 0, -1, &pmod,
		    sizeof(pmod)) == -1 ||
		    compose_list(d, IMSG_CONF_ALIAS, &m->mc->aliases) == -1)
			goto fail;
	}
	if (imsg_compose(ibuf, IMSG_CONF_END, 0, 0, -1, NULL, 0) == -1)
		goto fail;
	imsgev_add(&d->proxy_iev);
	return (0);
 fail:
	log_warn("%s: cannot queue the configuration", __func__);
	return (-1);
}

void
proxy_compose(struct agencyd *d, uint32_t type, const void *data, size_t len)
{
	struct iovec	 iov;

	iov.iov_base = (void *)(uintptr_t)data;
	iov.iov_len = len;
	proxy_composev(d, type, &iov, 1);
}

void
proxy_composev(struct agencyd *d, uint32_t type, const struct iovec *iov,
    int iovcnt)
{
	if (!d->proxy_up)
		return;
	if (imsg_composev(&d->proxy_iev.ibuf, type, 0, 0, -1, iov,
	    iovcnt) == -1) {
		log_warn("%s: type %u", __func__, type);
		return;
	}
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
	control_proxy_gone(d);
	/* Its holds end with it; waiting requests go with their clients. */
	pool_release_owner(d->pool, d->proxy_gen);
}

static void
proxy_hostile(struct agencyd *d, const char *why, uint32_t type)
{
	log_warnx("agency-proxy sent %s (type %u): killing it", why, type);
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

void
proxy_stop(struct agencyd *d)
{
	if (evtimer_initialized(&d->proxy_restart_ev))
		evtimer_del(&d->proxy_restart_ev);
	if (d->proxy_pid > 0)
		(void)kill(d->proxy_pid, SIGTERM);
	proxy_drop(d);
}

static void
proxy_status(struct agencyd *d, struct imsg *imsg)
{
	struct proto_reqid	r;
	struct proto_status	st;
	size_t			i, n;

	if (imsg_get_data(imsg, &r, sizeof(r)) == -1) {
		proxy_hostile(d, "a bad status request", IMSG_STATUS_REQ);
		return;
	}
	n = pool_count(d->pool);
	for (i = 0; i < n; i++) {
		if (pool_status(d->pool, i, &st) == -1)
			continue;
		st.reqid = r.reqid;
		models_fill_status(d, &st);
		proxy_compose(d, IMSG_STATUS_MODEL, &st, sizeof(st));
	}
	proxy_compose(d, IMSG_STATUS_END, &r, sizeof(r));
}

/* The proxy ended requests of a model; a runtime that generates on
 * after a close is restarted, or it would go on working for nobody. */
static void
proxy_cancelled(struct agencyd *d, struct imsg *imsg)
{
	struct proto_cancel	 c;
	struct model		*m;

	if (imsg_get_data(imsg, &c, sizeof(c)) == -1 || !PROTO_STROK(c.model)) {
		proxy_hostile(d, "a bad cancel report", IMSG_CANCEL_DONE);
		return;
	}
	control_cancel_done(d, &c);
	if (c.cancelled == 0 || (m = model_find(d, c.model)) == NULL)
		return;
	if (m->mc->rt->stops != STOPS_ALWAYS)
		models_restart(d, m);
}

/*
 * The access-log line of a request, or another line the proxy logs.
 * The priority is clamped, the line logged without a copy.
 */
static int
proxy_log(struct imsg *imsg)
{
	const char	*line;
	uint32_t	 pri = imsg_get_id(imsg);

	if ((line = proto_logline(imsg->data, imsg_get_len(imsg))) == NULL)
		return (-1);
	if (pri > LOG_DEBUG)
		pri = LOG_INFO;
	if (pri != LOG_DEBUG || log_getverbose() > 1)
		log_str(pri, "proxy: ", line);
	return (0);
}

/*
 * Every whole message read so far; -1 when the proxy was dropped.
 */
static int
proxy_messages(struct agencyd *d)
{
	struct imsg			 imsg;
	struct proto_hold_req		 hr;
	struct proto_reqid		 rq;
	struct proto_holdid		 hid;
	struct proto_probe_result	 res;
	struct probe			*pr;
	ssize_t				 n;
	uint32_t			 type;

	for (;;) {
		if ((n = imsg_get(&d->proxy_iev.ibuf, &imsg)) == -1) {
			proxy_hostile(d, "a malformed message", 0);
			return (-1);
		}
		if (n == 0)
			break;
		type = imsg_get_type(&imsg);
		switch (type) {
		case IMSG_HOLD_REQ:
			if (imsg_get_data(&imsg, &hr, sizeof(hr)) == -1 ||
			    !PROTO_STROK(hr.model) || hr.reqid == 0)
				goto bad;
			pool_acquire(d->pool, hr.model, hr.reqid, d->proxy_gen);
			break;
		case IMSG_HOLD_WITHDRAW:
			if (imsg_get_data(&imsg, &rq, sizeof(rq)) == -1)
				goto bad;
			pool_withdraw(d->pool, rq.reqid, d->proxy_gen);
			break;
		case IMSG_HOLD_RELEASE:
			if (imsg_get_data(&imsg, &hid, sizeof(hid)) == -1)
				goto bad;
			if (pool_release(d->pool, hid.holdid,
			    d->proxy_gen) == -1) {
				imsg_free(&imsg);
				proxy_hostile(d, "a release of a hold it does "
				    "not have", type);
				return (-1);
			}
			break;
		case IMSG_PROBE_RESULT:
			if (imsg_get_data(&imsg, &res, sizeof(res)) == -1 ||
			    !PROTO_STROK(res.body))
				goto bad;
			TAILQ_FOREACH(pr, &d->probes, entry)
				if (pr->p.loadid == res.loadid)
					break;
			if (pr == NULL)
				break;	/* cancelled meanwhile */
			TAILQ_REMOVE(&d->probes, pr, entry);
			free(pr);
			pool_probe_result(d->pool, res.loadid, res.ok,
			    res.status, res.body);
			break;
		case IMSG_STATUS_REQ:
			proxy_status(d, &imsg);
			break;
		case IMSG_CANCEL_DONE:
			proxy_cancelled(d, &imsg);
			break;
		case IMSG_LOG:
			if (proxy_log(&imsg) == -1)
				goto bad;
			break;
		case IMSG_PROXY_READY:
			if (imsg_get_len(&imsg) != 0)
				goto bad;
			d->proxy_ready = 1;
			d->proxy_quick_deaths = 0;
			log_info("agency-proxy ready, pid %d",
			    (int)d->proxy_pid);
			agencyd_proxy_ready(d);
			break;
		default:
			goto bad;
		}
		imsg_free(&imsg);
		if (!d->proxy_up)
			return (-1);
		continue;
 bad:
		imsg_free(&imsg);
		proxy_hostile(d, "an invalid message", type);
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
	uint32_t	 queued;

	while ((queued = ibuf->w.queued) > 0) {
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
		if (ibuf->w.queued == queued)
			break;
	}
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
	d->proxy_batch = 1;
	do {
		d->now_cached = 0;
		full = 0;
		if (event & EV_READ) {
			if ((n = imsg_read(ibuf)) == -1 && errno != EAGAIN) {
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
	} while (full && ++reads < PROXY_READS_MAX);
	d->proxy_batch = 0;
	if (proxy_write(d) == -1)
		return;
	imsgev_add(&d->proxy_iev);
}
