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
 *
 * Nor can a proxy make agencyd grow: it sends no fds, holds no more
 * requests than it has fds for connections, is answered a few status
 * requests at a time (the next wait until those answers are out), may
 * report only cancels agencyd sent it, and is killed when it stops
 * reading what agencyd sends it (PROXY_STALL_MS, PROXY_QUEUE_MAX).  A
 * hold request may ask to be told what it waits for (IMSG_HOLD_WAIT):
 * that is no message of the proxy's, only a flag of one it may send
 * anyway, and the pool tells at most once every POOL_PROGRESS ms a
 * waiting request, from one pass over the waiters.  Its
 * log lines, and the answers to probes it relays, reach the log escaped
 * (vis(3)), at the priorities the proxy uses.
 *
 * What the proxy asks goes to the pool, whose answers come back through
 * poolops.c's ops and proxy_compose; its loads and unloads (the admin
 * routes) and the log lines it asks for are answered here.  A new proxy
 * is told of by the hook set with proxy_on_ready (emit.c's sync).  It
 * calls below it: model.c (the records), notify.c (the proxy is
 * ready), ports.c, spawn.c and the pool; nothing it calls calls it.
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
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>
#define LIBBSD_OPENBSD_VIS	/* strnvis(dst, src, size, flag) */
#include <vis.h>

#include "agencyd.h"
#include "log.h"
#include "proto.h"

#define PROXY_QUICK_DEATH	1000	/* ms: a proxy that dies this young */
#define PROXY_RESPAWN_WAIT	1000	/* ms: waits this long to restart */
#define PROXY_READS_MAX		4	/* reads of a full buffer a turn */
#define PROXY_ENV_MAX		8	/* variables of the proxy's environment */
#define PROXY_USERS_MAX		4096	/* user names sent for the log */
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

/* A load or unload the proxy asked for (its admin route), until done. */
struct padmin {
	TAILQ_ENTRY(padmin)	 entry;
	struct agencyd		*d;
	uint64_t		 reqid;
	uint32_t		 gen;		/* the proxy that asked */
	int			 wait;
	int			 answered;	/* load without waiting */
	int			 inside;	/* in pool_load's call */
};
/* Every padmin whose pool callback has not come (of any proxy). */
static TAILQ_HEAD(, padmin)	 padmins = TAILQ_HEAD_INITIALIZER(padmins);

static void
padmin_free(struct padmin *a)
{
	TAILQ_REMOVE(&padmins, a, entry);
	free(a);
}

/* Who hears of each new proxy once it is ready (emit.c). */
static proxy_ready_cb	 ready_cb;
static void		*ready_arg;

void
proxy_on_ready(proxy_ready_cb fn, void *arg)
{
	ready_cb = fn;
	ready_arg = arg;
}

/* After pool_free, no callback comes: what waited for one goes. */
void
proxy_cleanup(void)
{
	struct padmin	*a;

	while ((a = TAILQ_FIRST(&padmins)) != NULL)
		padmin_free(a);
}

/* What the current proxy has outstanding, and how the link is doing. */
static struct {
	int			 init;
	uint64_t		 admins;	/* loads and unloads it waits on */
	struct pcancels		 cancels;
	uint64_t		 cancel_next;
	uint64_t		 holds;		/* asked, or granted */
	uint64_t		 asked;		/* cancels it asked for */
	uint64_t		 fdmax;		/* its fds: bounds both */
	unsigned int		 status;	/* answers since it last read */
	int			 rpaused;	/* status waits for the queue */
	int			 doomed;	/* killed at the next turn */
	const char		*why;
	struct event		 stall;
	struct event		 doom;
} plink;

static int64_t	mono_ms(void);
static void	proxy_dispatch(int, short, void *);
static void	proxy_hostile(struct agencyd *, const char *, uint32_t);
static void	proxy_kill(struct agencyd *);
static void	proxy_drop(struct agencyd *);
static void	proxy_doom(struct agencyd *, const char *);
static void	proxy_restart_cb(int, short, void *);
static void	proxy_restart_later(struct agencyd *);
static void	proxy_status(struct agencyd *, struct imsg *);
static void	proxy_stall_cb(int, short, void *);
static void	proxy_doom_cb(int, short, void *);
static void	proxy_cancels_end(void);
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
		TAILQ_INIT(&plink.cancels);
		evtimer_set(&plink.stall, proxy_stall_cb, d);
		evtimer_set(&plink.doom, proxy_doom_cb, d);
		plink.cancel_next = 1;
		plink.init = 1;
	}
	proxy_cancels_end();
	plink.holds = plink.asked = 0;
	plink.admins = 0;
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

/* Bytes in pieces the proxy puts back together (IMSG_CONF_TLS_*). */
static int
compose_pieces(struct agencyd *d, uint32_t type, const uint8_t *p, size_t len)
{
	size_t	n;

	for (; len > 0; p += n, len -= n) {
		n = len < PROTO_TLS_PIECE ? len : PROTO_TLS_PIECE;
		if (imsg_compose(&d->proxy_iev.ibuf, type, 0, 0, -1, p,
		    n) == -1)
			return (-1);
	}
	return (0);
}

/* A listener's socket (a copy, for the proxy), and for TLS its files'
 * bytes: the proxy opens no file. */
static int
compose_listen(struct agencyd *d, const struct listen_conf *l)
{
	const struct tls_files	*tf;
	struct proto_listen	 pl;
	int			 fd;

	if ((fd = fcntl(l->fd, F_DUPFD_CLOEXEC, 0)) == -1) {
		log_warn("%s: dup", __func__);
		return (-1);
	}
	memset(&pl, 0, sizeof(pl));
	(void)strlcpy(pl.host, l->host, sizeof(pl.host));
	(void)strlcpy(pl.path, l->path, sizeof(pl.path));
	pl.port = l->port;
	pl.tls = l->tls;
	if (imsg_compose(&d->proxy_iev.ibuf, IMSG_CONF_LISTEN, 0, 0, fd, &pl,
	    sizeof(pl)) == -1) {
		close(fd);
		return (-1);
	}
	if (!l->tls)
		return (0);
	tf = config_listen_tls(d->conf, l);
	if (tf->cert_pem == NULL || tf->key_pem == NULL) {
		log_warnx("%s: listen on %s port %u: its certificate was "
		    "not read", __func__, l->host, l->port);
		return (-1);
	}
	return (compose_pieces(d, IMSG_CONF_TLS_CERT, tf->cert_pem,
	    tf->cert_len) == -1 || compose_pieces(d, IMSG_CONF_TLS_KEY,
	    tf->key_pem, tf->key_len) == -1 ? -1 : 0);
}

/* A user's name for the proxy's log, once; 0 if the uid is known or
 * sent, -1 if it cannot be queued. */
static int
compose_user(struct agencyd *d, uid_t uid, const char *name, uid_t *sent,
    size_t *nsent)
{
	struct proto_user	pu;
	size_t			i;

	for (i = 0; i < *nsent; i++)
		if (sent[i] == uid)
			return (0);
	if (*nsent < PROXY_USERS_MAX)
		sent[(*nsent)++] = uid;
	memset(&pu, 0, sizeof(pu));
	pu.uid = uid;
	if (strlcpy(pu.name, name, sizeof(pu.name)) >= sizeof(pu.name))
		return (0);
	return (imsg_compose(&d->proxy_iev.ibuf, IMSG_CONF_USER, 0, 0, -1, &pu,
	    sizeof(pu)) == -1 ? -1 : 0);
}

/*
 * The names of the users the allow rules may let in, for the proxy's
 * access log: the users named, and the members of the groups named
 * (whose names the group lists).  Others are logged as their uid.
 */
static int
compose_users(struct agencyd *d)
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
			if (compose_user(d, a->id, a->name, sent, &nsent) == -1)
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
				rv = compose_user(d, pw->pw_uid, mem[i], sent,
				    &nsent);
		for (i = 0; mem[i] != NULL; i++)
			free(mem[i]);
		free(mem);
		if (rv == -1)
			return (-1);
	}
	return (0);
}

/* The keys, as names and digests, and the allow rules, with their
 * models: after the models, which they name. */
static int
compose_access(struct agencyd *d)
{
	struct imsgbuf		*ibuf = &d->proxy_iev.ibuf;
	struct proto_key	 pk;
	struct proto_allow	 pa;
	struct key_conf		*k;
	struct allow_conf	*a;

	TAILQ_FOREACH(k, &d->conf->keys, entry) {
		memset(&pk, 0, sizeof(pk));
		(void)strlcpy(pk.name, k->name, sizeof(pk.name));
		memcpy(pk.digest, k->digest, sizeof(pk.digest));
		pk.admin = k->admin;
		pk.max_requests = k->max_requests;
		if (imsg_compose(ibuf, IMSG_CONF_KEY, 0, 0, -1, &pk,
		    sizeof(pk)) == -1 ||
		    compose_list(d, IMSG_CONF_KEY_MODEL, &k->models) == -1)
			return (-1);
	}
	TAILQ_FOREACH(a, &d->conf->allows, entry) {
		memset(&pa, 0, sizeof(pa));
		pa.kind = a->kind;
		pa.id = a->id;
		(void)strlcpy(pa.name, a->name, sizeof(pa.name));
		pa.admin = a->admin;
		if (imsg_compose(ibuf, IMSG_CONF_ALLOW, 0, 0, -1, &pa,
		    sizeof(pa)) == -1 ||
		    compose_list(d, IMSG_CONF_ALLOW_MODEL, &a->models) == -1)
			return (-1);
	}
	return (compose_users(d));
}

int
proxy_send_config(struct agencyd *d)
{
	struct agency_conf		*conf = d->conf;
	struct imsgbuf			*ibuf = &d->proxy_iev.ibuf;
	struct proto_conf_global	 g;
	struct proto_runtime		 pr;
	struct proto_move		 pm;
	struct proto_model		 pmod;
	struct listen_conf		*l;
	struct runtime_conf		*rt;
	struct rule_move		*mv;
	struct model			*m;

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
	g.console = conf->console;
	g.port_lo = conf->port_lo;
	g.port_hi = conf->port_hi;
	g.queue_timeout = conf->queue_timeout;
	(void)strlcpy(g.default_model, conf->default_model,
	    sizeof(g.default_model));
	if (imsg_compose(ibuf, IMSG_CONF_START, 0, 0, -1, &g, sizeof(g)) == -1 ||
	    compose_list(d, IMSG_CONF_NAME, &conf->server_names) == -1 ||
	    compose_list(d, IMSG_CONF_CORS, &conf->cors_origins) == -1)
		goto fail;

	TAILQ_FOREACH(l, &conf->listens, entry)
		if (l->fd != -1 && compose_listen(d, l) == -1)
			goto fail;

	TAILQ_FOREACH(rt, &conf->runtimes, entry) {
		memset(&pr, 0, sizeof(pr));
		(void)strlcpy(pr.name, rt->name, sizeof(pr.name));
		pr.kind = rt->kind;
		pr.stops = rt->stops;
		pr.max_tokens = rt->max_tokens;
		pr.passthrough = rt->passthrough;
		pr.progress = rt->progress;
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
	if (compose_access(d) == -1 ||
	    imsg_compose(ibuf, IMSG_CONF_END, 0, 0, -1, NULL, 0) == -1)
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
	struct imsgbuf	*ibuf = &d->proxy_iev.ibuf;

	if (!d->proxy_up || plink.doomed)
		return;
	/* A refusal answers a hold request; a grant makes it a hold. */
	if (type == IMSG_HOLD_REFUSE && plink.holds > 0)
		plink.holds--;
	if (ibuf->w.qbytes > PROXY_QUEUE_MAX) {
		/* Maybe within a pool callback: killed at the next turn. */
		proxy_doom(d, "left too much of what it was sent unread");
		return;
	}
	if (imsg_composev(ibuf, type, 0, 0, -1, iov, iovcnt) == -1) {
		log_warn("%s: type %u", __func__, type);
		return;
	}
	if (!evtimer_pending(&plink.stall, NULL))
		proxy_stall_arm();
	if (!d->proxy_batch)
		imsgev_add(&d->proxy_iev);
}

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
	pc->id = PROXY_CANCEL_OURS | plink.cancel_next++;
	(void)strlcpy(pc->model, model, sizeof(pc->model));
	pc->cb = cb;
	pc->arg = arg;
	TAILQ_INSERT_TAIL(&plink.cancels, pc, entry);
	memset(&c, 0, sizeof(c));
	c.reqid = pc->id;
	(void)strlcpy(c.model, model, sizeof(c.model));
	proxy_compose(d, IMSG_CANCEL, &c, sizeof(c));
}

/* The cancels in flight end with their proxy. */
static void
proxy_cancels_end(void)
{
	struct pcancels	 gone;
	struct pcancel	*pc;

	TAILQ_INIT(&gone);
	TAILQ_CONCAT(&gone, &plink.cancels, entry);
	while ((pc = TAILQ_FIRST(&gone)) != NULL) {
		TAILQ_REMOVE(&gone, pc, entry);
		if (pc->cb != NULL)
			pc->cb(pc->arg, 0, 0);
		free(pc);
	}
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
	struct model	*m;

	if (!d->proxy_up)
		return;
	imsgev_clear(&d->proxy_iev);
	close(d->proxy_iev.ibuf.fd);
	d->proxy_up = 0;
	d->proxy_ready = 0;
	evtimer_del(&plink.stall);
	evtimer_del(&plink.doom);
	plink.doomed = 0;
	plink.holds = plink.asked = 0;
	plink.admins = 0;
	/* Nobody will answer the cancels it was sent. */
	proxy_cancels_end();
	/* A new proxy asks again for the logs it follows. */
	TAILQ_FOREACH(m, &d->models, entry)
		m->log_follow = 0;
	/* Its holds end with it; waiting requests go with their clients. */
	pool_release_owner(d->pool, d->proxy_gen);
}

static void
proxy_hostile(struct agencyd *d, const char *why, uint32_t type)
{
	if (type != 0)
		log_warnx("agency-proxy %s (type %u): killing it", why, type);
	else
		log_warnx("agency-proxy %s: killing it", why);
	proxy_kill(d);
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
		proxy_hostile(d, "sent a bad status request", IMSG_STATUS_REQ);
		return;
	}
	plink.status++;
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

/*
 * The admin route's cancel: the proxy asks, agencyd sends it the cancel
 * (with the proxy's own id), and the proxy reports it done as any other.
 * -1 when the proxy was killed.
 */
static int
proxy_cancel_asked(struct agencyd *d, struct imsg *imsg)
{
	struct proto_cancel	 c;
	struct pcancel		*pc;

	if (imsg_get_data(imsg, &c, sizeof(c)) == -1 ||
	    !PROTO_STROK(c.model) || c.reqid == 0 ||
	    (c.reqid & PROXY_CANCEL_OURS)) {
		proxy_hostile(d, "sent a bad cancel request", IMSG_CANCEL);
		return (-1);
	}
	TAILQ_FOREACH(pc, &plink.cancels, entry)
		if (pc->id == c.reqid)
			break;
	if (pc != NULL || plink.asked >= plink.fdmax) {
		proxy_hostile(d, pc != NULL ? "sent a cancel request it already "
		    "made" : "asked for more cancels than it has connections",
		    IMSG_CANCEL);
		return (-1);
	}
	if ((pc = calloc(1, sizeof(*pc))) == NULL) {
		log_warn("%s", __func__);
		return (0);	/* its client waits for its timeout */
	}
	pc->id = c.reqid;
	(void)strlcpy(pc->model, c.model, sizeof(pc->model));
	TAILQ_INSERT_TAIL(&plink.cancels, pc, entry);
	plink.asked++;
	c.cancelled = 0;
	proxy_compose(d, IMSG_CANCEL, &c, sizeof(c));
	return (0);
}

/*
 * The proxy ended requests of a model, as it was sent to: a runtime that
 * generates on after a close is restarted, or it would go on working for
 * nobody.  A report of a cancel never sent is hostile: it would restart
 * models at the proxy's word.  -1 when the proxy was killed.
 */
static int
proxy_cancelled(struct agencyd *d, struct imsg *imsg)
{
	struct proto_cancel	 c;
	struct pcancel		*pc;
	struct model		*m;

	if (imsg_get_data(imsg, &c, sizeof(c)) == -1 ||
	    !PROTO_STROK(c.model)) {
		proxy_hostile(d, "sent a bad cancel report", IMSG_CANCEL_DONE);
		return (-1);
	}
	TAILQ_FOREACH(pc, &plink.cancels, entry)
		if (pc->id == c.reqid && strcmp(pc->model, c.model) == 0)
			break;
	if (pc == NULL) {
		proxy_hostile(d, "reported a cancel it was not sent",
		    IMSG_CANCEL_DONE);
		return (-1);
	}
	TAILQ_REMOVE(&plink.cancels, pc, entry);
	if (pc->cb == NULL && plink.asked > 0)
		plink.asked--;
	if (c.cancelled > 0 && (m = model_find(d, c.model)) != NULL &&
	    m->mc != NULL && m->mc->rt->stops != STOPS_ALWAYS) {
		log_info("%s: restarting: its cancelled requests would go on",
		    m->plan.label);
		(void)pool_restart(d->pool, m->plan.name, NULL, NULL);
	}
	if (pc->cb != NULL)
		pc->cb(pc->arg, 1, c.cancelled);
	free(pc);
	return (0);
}

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
	if (plink.admins > 0)
		plink.admins--;
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

	admin_answer(a->d, a, 200, "", "unloaded");
	padmin_free(a);
}

/*
 * POST /v1/agency/load or unload, as agency-ctl's: a load waits for the
 * model unless asked not to; an unload for its processes' exits.  The
 * proxy may have as many waiting as it has connections.  -1 when the
 * proxy was killed.
 */
static int
proxy_admin(struct agencyd *d, struct imsg *imsg)
{
	struct proto_admin	 pa;
	struct padmin		*a;
	struct model		*m;

	if (imsg_get_data(imsg, &pa, sizeof(pa)) == -1 ||
	    !PROTO_STROK(pa.model) || pa.reqid == 0 ||
	    (pa.op != ADMIN_LOAD && pa.op != ADMIN_UNLOAD) ||
	    (pa.wait != 0 && pa.wait != 1)) {
		proxy_hostile(d, "sent a bad load or unload", IMSG_ADMIN);
		return (-1);
	}
	if (plink.admins >= plink.fdmax) {
		proxy_hostile(d, "asked for more loads and unloads than it "
		    "has connections", IMSG_ADMIN);
		return (-1);
	}
	if ((a = calloc(1, sizeof(*a))) == NULL) {
		log_warn("%s", __func__);
		return (0);	/* its client waits for its timeout */
	}
	TAILQ_INSERT_TAIL(&padmins, a, entry);
	a->d = d;
	a->reqid = pa.reqid;
	a->gen = d->proxy_gen;
	a->wait = pa.wait;
	plink.admins++;
	/* A name the proxy knew, which a reload may just have removed. */
	if ((m = model_find(d, pa.model)) == NULL || d->stopping) {
		if (m == NULL)
			admin_answer(d, a, 404, "model_not_found",
			    "No such model.");
		else
			admin_answer(d, a, 503, "stopping",
			    "agency is stopping");
		padmin_free(a);
		return (0);
	}
	if (pa.op == ADMIN_UNLOAD) {
		log_info("%s: unload asked over HTTP", m->plan.label);
		if (pool_unload(d->pool, m->plan.name, admin_unload_done,
		    a) == -1) {
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

/*
 * A model's log ring to the proxy, each line with its number; with
 * follow, its new lines too from now on.  -1 when the proxy was killed.
 */
static int
proxy_logs(struct agencyd *d, struct imsg *imsg, uint32_t type)
{
	struct proto_logs_req	 lr;
	struct proto_logline	 ll;
	struct proto_logs_end	 le;
	struct model		*m;
	size_t			 i, n;

	if (imsg_get_data(imsg, &lr, sizeof(lr)) == -1 ||
	    !PROTO_STROK(lr.model) || (lr.follow != 0 && lr.follow != 1) ||
	    (type == IMSG_LOGS_REQ && lr.reqid == 0)) {
		proxy_hostile(d, "sent a bad log request", type);
		return (-1);
	}
	m = model_find(d, lr.model);
	if (type == IMSG_LOGS_UNFOLLOW) {
		if (m != NULL)
			m->log_follow = 0;
		return (0);
	}
	memset(&le, 0, sizeof(le));
	le.reqid = lr.reqid;
	(void)strlcpy(le.model, lr.model, sizeof(le.model));
	if (m != NULL) {
		n = ring_count(&m->ring);
		for (i = 0; i < n; i++) {
			memset(&ll, 0, sizeof(ll));
			ll.reqid = lr.reqid;
			ll.seq = ring_seq(&m->ring, i);
			(void)strlcpy(ll.model, m->plan.name, sizeof(ll.model));
			(void)strlcpy(ll.line, ring_get(&m->ring, i),
			    sizeof(ll.line));
			proxy_compose(d, IMSG_LOGS_LINE, &ll, sizeof(ll));
		}
		le.found = 1;
		if (lr.follow)
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
static int
proxy_log(struct imsg *imsg)
{
	const char	*line;
	char		 buf[4 * PROTO_LOGLINE_MAX + 1];
	int		 pri = proxy_log_priority(imsg_get_id(imsg));

	if ((line = proto_logline(imsg->data, imsg_get_len(imsg))) == NULL)
		return (-1);
	if (pri != LOG_DEBUG || log_getverbose() > 1)
		log_str(pri, "proxy: ", proxy_clean(buf, sizeof(buf), line));
	return (0);
}

/*
 * Every whole message read so far; -1 when the proxy was dropped.
 */
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

static int
proxy_messages(struct agencyd *d)
{
	struct imsg			 imsg;
	struct proto_hold_req		 hr;
	struct proto_reqid		 rq;
	struct proto_holdid		 hid;
	struct proto_probe_result	 res;
	struct probe			*pr;
	char				 body[4 * sizeof(res.body)];
	ssize_t				 n;
	uint32_t			 type;

	for (;;) {
		if (proxy_status_wait(d)) {
			/* Read no more until the answers are out. */
			if (d->proxy_up) {
				plink.rpaused = 1;
				imsgev_pause(&d->proxy_iev, 1);
			}
			return (d->proxy_up ? 0 : -1);
		}
		if ((n = imsg_get(&d->proxy_iev.ibuf, &imsg)) == -1) {
			proxy_hostile(d, "sent a malformed message", 0);
			return (-1);
		}
		if (n == 0)
			break;
		type = imsg_get_type(&imsg);
		switch (type) {
		case IMSG_HOLD_REQ:
			if (imsg_get_data(&imsg, &hr, sizeof(hr)) == -1 ||
			    !PROTO_STROK(hr.model) || !PROTO_STROK(hr.key) ||
			    hr.reqid == 0 ||
			    (hr.flags & ~PROTO_HOLD_FLAGS) != 0)
				goto bad;
			if (plink.holds >= plink.fdmax) {
				imsg_free(&imsg);
				proxy_hostile(d, "asked for more holds than "
				    "it has connections", type);
				return (-1);
			}
			plink.holds++;	/* before: a refusal may come at once */
			keystats_count(d, hr.key);
			if (hr.flags & PROTO_HOLD_PROGRESS)
				pool_acquire_progress(d->pool, hr.model,
				    hr.reqid, d->proxy_gen);
			else
				pool_acquire(d->pool, hr.model, hr.reqid,
				    d->proxy_gen);
			break;
		case IMSG_HOLD_WITHDRAW:
			if (imsg_get_data(&imsg, &rq, sizeof(rq)) == -1)
				goto bad;
			if (pool_withdraw(d->pool, rq.reqid,
			    d->proxy_gen) == 1 && plink.holds > 0)
				plink.holds--;
			break;
		case IMSG_HOLD_RELEASE:
			if (imsg_get_data(&imsg, &hid, sizeof(hid)) == -1)
				goto bad;
			if (pool_release(d->pool, hid.holdid,
			    d->proxy_gen) == -1) {
				imsg_free(&imsg);
				proxy_hostile(d, "sent a release of a hold it "
				    "does not have", type);
				return (-1);
			}
			if (plink.holds > 0)
				plink.holds--;
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
			/* what a model answered: into the log and status */
			pool_probe_result(d->pool, res.loadid, res.ok,
			    res.status, proxy_clean(body, sizeof(body),
			    res.body));
			break;
		case IMSG_STATUS_REQ:
			proxy_status(d, &imsg);
			break;
		case IMSG_CANCEL:
			if (proxy_cancel_asked(d, &imsg) == -1) {
				imsg_free(&imsg);
				return (-1);
			}
			break;
		case IMSG_CANCEL_DONE:
			if (proxy_cancelled(d, &imsg) == -1) {
				imsg_free(&imsg);
				return (-1);
			}
			break;
		case IMSG_LOG:
			if (proxy_log(&imsg) == -1)
				goto bad;
			break;
		case IMSG_ADMIN:
			if (proxy_admin(d, &imsg) == -1) {
				imsg_free(&imsg);
				return (-1);
			}
			break;
		case IMSG_LOGS_REQ:
		case IMSG_LOGS_UNFOLLOW:
			if (proxy_logs(d, &imsg, type) == -1) {
				imsg_free(&imsg);
				return (-1);
			}
			break;
		case IMSG_PROXY_READY:
			if (imsg_get_len(&imsg) != 0)
				goto bad;
			d->proxy_ready = 1;
			d->proxy_quick_deaths = 0;
			log_info("agency-proxy ready, pid %d",
			    (int)d->proxy_pid);
			/* The service manager hears of it (the first). */
			notify_ready();
			notify_status(d);
			if (ready_cb != NULL)
				ready_cb(ready_arg, d);
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
		proxy_hostile(d, "sent an invalid message", type);
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
