/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agencyd's side of the GPU probe (agency-gpu): started as the proxy is
 * (fork, exec, its end of a socketpair on fd 3), but never as root: the
 * child takes the model user's groups, gid and uid before the exec, so
 * that NVML is never loaded in a privileged process (the probe's head
 * says why that user).  Its environment is empty.
 *
 * agencyd drives the channel (common/gpuproto.h): a poll every
 * interval, or when asked, one at a time, each answered within a
 * deadline; the list of watched processes between polls.  Whatever the
 * probe sends is checked by gpusnap.c.  A probe that lies (a rule of
 * gpusnap.c broken, a broken message, an fd), hangs (no answer in
 * time) or dies loses its figures at once (the lost callback), is
 * killed, and is started again after a delay that doubles from
 * backoff_min to backoff_max, and is back at the least once a probe has
 * lived stable_ms and answered.  Nothing it sends can grow agencyd:
 * what it may send is bounded by the poll out, and what agencyd queues
 * for it is one list and one poll.
 *
 * The caller reaps (its SIGCHLD handler calls gpulink_reaped).  Calls
 * below it: gpusnap.c, spawn.c (spawn_describe_exit) and proxylink.c
 * (its log lines escaped and at a priority as the proxy's).
 *
 * Calls: gpusnap.c, proxylink.c, spawn.c, common/imsg.c, common/log.c.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <errno.h>
#include <event.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "agencyd.h"
#include "gpu.h"
#include "log.h"

#define GPULINK_GROUPS_MAX	64	/* the user's groups */
#define GPULINK_READS_MAX	4	/* reads of a full buffer a turn */

struct gpulink {
	struct gpulink_conf	 conf;
	gpulink_figures_cb	 figures;
	gpulink_lost_cb		 lost;
	gpulink_event_cb	 event;
	void			*arg;

	pid_t			 pid;		/* 0: none */
	int			 up;		/* the channel is open */
	int			 stopping;
	int			 have;		/* good holds figures */
	int			 answered;	/* this probe answered */
	struct timespec		 started;	/* monotonic */
	int			 backoff;	/* ms, the next restart's */
	int			 again;		/* a poll asked while one
						 * was out */
	uint64_t		 reqid;
	struct imsgev		 iev;
	struct event		 tick;
	struct event		 deadline;
	struct event		 restart;

	uint32_t		*watch;		/* the probe's list, sorted */
	size_t			 nwatch;
	uint32_t		*pending;	/* the next list */
	size_t			 npending;
	int			 changed;	/* pending is to be sent */

	struct gpu_snap		*snap;		/* being read */
	struct gpu_table	*good;		/* the last whole one */
};

static void	gl_dispatch(int, short, void *);
static void	gl_tick(int, short, void *);
static void	gl_deadline(int, short, void *);
static void	gl_restart(int, short, void *);
static void	gl_fault(struct gpulink *, const char *, ...)
		    __attribute__((__format__ (printf, 2, 3)));

/* Whether ms have passed since the probe started. */
static int
lived(const struct gpulink *l, int ms)
{
	struct timespec	 now, d;

	clock_gettime(CLOCK_MONOTONIC, &now);
	timespecsub(&now, &l->started, &d);
	return (d.tv_sec > ms / 1000 || (d.tv_sec == ms / 1000 &&
	    d.tv_nsec >= (long)(ms % 1000) * 1000000));
}

static void
ms_tv(int ms, struct timeval *tv)
{
	tv->tv_sec = ms / 1000;
	tv->tv_usec = (ms % 1000) * 1000;
}

static int
conf_ms(int v, int def)
{
	return (v > 0 ? v : def);
}

struct gpulink *
gpulink_new(const struct gpulink_conf *conf, gpulink_figures_cb figures,
    gpulink_lost_cb lost, gpulink_event_cb ev, void *arg)
{
	struct gpulink	*l;

	if ((l = calloc(1, sizeof(*l))) == NULL ||
	    (l->watch = calloc(GPU_WATCH_MAX, sizeof(uint32_t))) == NULL ||
	    (l->pending = calloc(GPU_WATCH_MAX, sizeof(uint32_t))) == NULL ||
	    (l->snap = calloc(1, sizeof(*l->snap))) == NULL ||
	    (l->good = calloc(1, sizeof(*l->good))) == NULL) {
		log_warn("%s", __func__);
		gpulink_free(l);
		return (NULL);
	}
	l->conf = *conf;
	l->conf.interval_ms = conf_ms(conf->interval_ms, GPULINK_INTERVAL);
	l->conf.first_ms = conf_ms(conf->first_ms, GPULINK_FIRST);
	l->conf.answer_ms = conf_ms(conf->answer_ms, GPULINK_ANSWER);
	l->conf.backoff_min_ms = conf_ms(conf->backoff_min_ms,
	    GPULINK_BACKOFF_MIN);
	l->conf.backoff_max_ms = conf_ms(conf->backoff_max_ms,
	    GPULINK_BACKOFF_MAX);
	if (l->conf.backoff_max_ms < l->conf.backoff_min_ms)
		l->conf.backoff_max_ms = l->conf.backoff_min_ms;
	l->conf.stable_ms = conf_ms(conf->stable_ms, GPULINK_STABLE);
	l->backoff = l->conf.backoff_min_ms;
	l->figures = figures;
	l->lost = lost;
	l->event = ev;
	l->arg = arg;
	evtimer_set(&l->tick, gl_tick, l);
	evtimer_set(&l->deadline, gl_deadline, l);
	evtimer_set(&l->restart, gl_restart, l);
	return (l);
}

/* The user's ids and groups, before the fork; -1 when not to be run. */
static int
gl_creds(const struct gpulink *l, uid_t *uid, gid_t *gid, gid_t *groups,
    int *ngroups)
{
	struct passwd	*pw;

	if (getuid() != 0 && geteuid() != 0) {
		*ngroups = -1;		/* user mode: as we are */
		return (0);
	}
	if (l->conf.user == NULL) {
		log_warnx("agency-gpu never runs as root, and no user is set "
		    "to run it as");
		return (-1);
	}
	if ((pw = getpwnam(l->conf.user)) == NULL) {
		log_warnx("agency-gpu: unknown user %s", l->conf.user);
		return (-1);
	}
	if (pw->pw_uid == 0) {
		log_warnx("agency-gpu: user %s is root; it never runs as root",
		    l->conf.user);
		return (-1);
	}
	*uid = pw->pw_uid;
	*gid = pw->pw_gid;
	*ngroups = GPULINK_GROUPS_MAX;
	if (getgrouplist(pw->pw_name, pw->pw_gid, groups, ngroups) == -1) {
		log_warnx("agency-gpu: user %s is in more than %d groups",
		    l->conf.user, GPULINK_GROUPS_MAX);
		return (-1);
	}
	return (0);
}

/* The child: the user's credentials, then the probe.  Never returns. */
static __dead void
gl_child(const struct gpulink *l, int fd, char *const argv[], uid_t uid,
    gid_t gid, const gid_t *groups, int ngroups, pid_t parent)
{
	static char	*envp[4];
	sigset_t	 none;
	size_t		 n = 0;
#ifdef __SANITIZE_ADDRESS__
	/* A sanitizer build's reports, as for the proxy. */
	const char	*keep[] = { "ASAN_OPTIONS", "LSAN_OPTIONS",
			    "UBSAN_OPTIONS" };
	static char	 buf[3][1024];
	const char	*v;
	size_t		 i;

	for (i = 0; i < 3; i++)
		if ((v = getenv(keep[i])) != NULL &&
		    (size_t)snprintf(buf[n], sizeof(buf[n]), "%s=%s", keep[i],
		    v) < sizeof(buf[n])) {
			envp[n] = buf[n];
			n++;
		}
#endif
	envp[n] = NULL;

	/* Its own session: a terminal's ^C is agencyd's to handle. */
	(void)setsid();
	if (dup2(fd, 3) == -1)
		_exit(127);
	closefrom(4);
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);
	if (ngroups >= 0 && (setgroups((size_t)ngroups, groups) == -1 ||
	    setresgid(gid, gid, gid) == -1 ||
	    setresuid(uid, uid, uid) == -1)) {
		dprintf(STDERR_FILENO, "agencyd: agency-gpu: cannot become "
		    "%s: %s\n", l->conf.user, strerror(errno));
		_exit(127);
	}
	/* After the last credential change, which would clear it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != parent)
		_exit(127);
	execve(l->conf.path, argv, envp);
	dprintf(STDERR_FILENO, "agencyd: exec %s: %s\n", l->conf.path,
	    strerror(errno));
	_exit(127);
}

static void
gl_send(struct gpulink *l, uint32_t type, const void *data, size_t len)
{
	if (imsg_compose(&l->iev.ibuf, type, 0, 0, -1, data, len) == -1)
		gl_fault(l, "could not be sent a message (%s)",
		    strerror(errno));
	else
		imsgev_add(&l->iev);
}

/* The pending list becomes the probe's; only while no poll is out. */
static void
gl_flush_watch(struct gpulink *l)
{
	struct gpu_watch	*w;

	if (!l->changed || !l->up)
		return;
	memcpy(l->watch, l->pending, l->npending * sizeof(uint32_t));
	l->nwatch = l->npending;
	l->changed = 0;
	if ((w = calloc(1, sizeof(*w))) == NULL) {
		gl_fault(l, "could not be sent its list (%s)",
		    strerror(errno));
		return;
	}
	w->n = (uint32_t)l->nwatch;
	memcpy(w->pid, l->watch, l->nwatch * sizeof(uint32_t));
	gl_send(l, IMSG_GPU_WATCH, w, sizeof(*w));
	free(w);
}

static void
gl_send_poll(struct gpulink *l, int deadline_ms)
{
	struct gpu_poll	 p;
	struct timeval	 tv;

	gl_flush_watch(l);
	if (!l->up)
		return;
	memset(&p, 0, sizeof(p));
	p.reqid = ++l->reqid;
	gpu_snap_expect(l->snap, p.reqid, l->watch, l->nwatch);
	ms_tv(deadline_ms, &tv);
	evtimer_add(&l->deadline, &tv);
	gl_send(l, IMSG_GPU_POLL, &p, sizeof(p));
}

int
gpulink_start(struct gpulink *l)
{
	char		*argv[12], verbose[] = "-vv", enforce[] = "-K";
	char		 optl[] = "-L", opts[] = "-S", optp[] = "-P";
	static char	 name[] = "agency-gpu";
	gid_t		 groups[GPULINK_GROUPS_MAX], gid = 0;
	uid_t		 uid = 0;
	struct timeval	 tv;
	pid_t		 pid, parent = getpid();
	int		 sp[2], argc = 0, ngroups = 0;

	if (l->pid != 0 || l->stopping)
		return (0);
	if (gl_creds(l, &uid, &gid, groups, &ngroups) == -1)
		return (-1);
	argv[argc++] = name;
	if (l->conf.verbose > 0) {
		verbose[l->conf.verbose > 1 ? 3 : 2] = '\0';
		argv[argc++] = verbose;
	}
	if (l->conf.enforce)
		argv[argc++] = enforce;
	/* Test only: paths agencyd's own options give. */
	if (l->conf.nvml != NULL) {
		argv[argc++] = optl;
		argv[argc++] = (char *)(uintptr_t)l->conf.nvml;
	}
	if (l->conf.sysfs != NULL) {
		argv[argc++] = opts;
		argv[argc++] = (char *)(uintptr_t)l->conf.sysfs;
	}
	if (l->conf.proc != NULL) {
		argv[argc++] = optp;
		argv[argc++] = (char *)(uintptr_t)l->conf.proc;
	}
	argv[argc] = NULL;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) == -1) {
		log_warn("%s: socketpair", __func__);
		return (-1);
	}
	log_flush();	/* not twice: the child must not inherit lines */
	switch ((pid = fork())) {
	case -1:
		log_warn("%s: fork", __func__);
		close(sp[0]);
		close(sp[1]);
		return (-1);
	case 0:
		gl_child(l, sp[1], argv, uid, gid, groups, ngroups, parent);
	default:
		break;
	}
	close(sp[1]);
	l->pid = pid;
	l->up = 1;
	l->answered = 0;
	clock_gettime(CLOCK_MONOTONIC, &l->started);
	imsgev_init(&l->iev, sp[0], gl_dispatch, l);
	imsg_refuse_fds(&l->iev.ibuf);
	log_debug("%s: agency-gpu started, pid %d", __func__, (int)pid);
	if (l->event != NULL)
		l->event(pid, 0, l->arg);
	/* The list it is to watch, then the first poll. */
	if (l->nwatch > 0 && !l->changed) {
		memcpy(l->pending, l->watch, l->nwatch * sizeof(uint32_t));
		l->npending = l->nwatch;
		l->changed = 1;
	}
	gl_send_poll(l, l->conf.first_ms);
	if (l->up) {
		ms_tv(l->conf.interval_ms, &tv);
		evtimer_add(&l->tick, &tv);
	}
	return (0);
}

/* Close the channel and forget what it was doing; the process stays. */
static void
gl_drop(struct gpulink *l)
{
	if (!l->up)
		return;
	imsgev_clear(&l->iev);
	close(l->iev.ibuf.fd);
	l->up = 0;
	l->again = 0;
	evtimer_del(&l->tick);
	evtimer_del(&l->deadline);
	gpu_snap_expect(l->snap, 0, NULL, 0);
}

/*
 * The figures are gone.  Said for a fault, and when a probe goes away
 * with figures in hand, once.
 */
static void
gl_lose(struct gpulink *l, const char *why, int fault)
{
	int	 had = l->have;

	l->have = 0;
	if (l->lost != NULL && (had || fault))
		l->lost(why, l->arg);
}

static void
gl_fault(struct gpulink *l, const char *fmt, ...)
{
	char	 why[256];
	va_list	 ap;

	va_start(ap, fmt);
	(void)vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	log_warnx("agency-gpu %s: killing it; its figures are dropped", why);
	if (l->pid > 0)
		(void)kill(l->pid, SIGKILL);
	gl_drop(l);
	gl_lose(l, why, 1);
}

static void
gl_answered(struct gpulink *l)
{
	struct gpu_table	*t;

	evtimer_del(&l->deadline);
	/* The whole one becomes the good one; its space is reused. */
	t = l->good;
	memcpy(t, &l->snap->t, offsetof(struct gpu_table, dev) +
	    l->snap->t.ndev * sizeof(t->dev[0]));
	memcpy(t->proc, l->snap->t.proc, l->snap->t.nproc *
	    sizeof(t->proc[0]));
	l->have = 1;
	l->answered = 1;
	if (l->figures != NULL)
		l->figures(t, l->arg);
	if (!l->up)
		return;
	if (l->again) {
		l->again = 0;
		gl_send_poll(l, l->conf.answer_ms);
	} else
		gl_flush_watch(l);
}

/*
 * Every whole message read so far; -1 when the probe was dropped.
 */
static int
gl_messages(struct gpulink *l)
{
	struct imsg	 imsg;
	const char	*line = NULL;
	char		 buf[4 * GPU_LOGLINE_MAX + 1];
	ssize_t		 n;
	int		 pri = 0;
	enum gpu_feed	 r;

	for (;;) {
		if ((n = imsg_get(&l->iev.ibuf, &imsg)) == -1) {
			gl_fault(l, "sent a broken message");
			return (-1);
		}
		if (n == 0)
			return (0);
		r = gpu_snap_feed(l->snap, imsg_get_type(&imsg),
		    imsg_get_id(&imsg), imsg.data, imsg_get_len(&imsg), &line,
		    &pri);
		switch (r) {
		case GPU_FEED_LIE:
			imsg_free(&imsg);
			gl_fault(l, "%s", l->snap->why);
			return (-1);
		case GPU_FEED_LOG:
			pri = proxy_log_priority((uint32_t)pri);
			if (pri != LOG_DEBUG || log_getverbose() > 1)
				log_str(pri, "agency-gpu: ",
				    proxy_clean(buf, sizeof(buf), line));
			break;
		case GPU_FEED_WHOLE:
			imsg_free(&imsg);
			gl_answered(l);
			if (!l->up)
				return (-1);
			continue;
		case GPU_FEED_MORE:
		default:
			break;
		}
		imsg_free(&imsg);
	}
}

static void
gl_dispatch(int fd, short event, void *arg)
{
	struct gpulink	*l = arg;
	struct imsgbuf	*ibuf = &l->iev.ibuf;
	ssize_t		 n;
	int		 full, reads = 0;

	(void)fd;
	if ((event & EV_WRITE) && imsg_write(ibuf) == -1) {
		gl_fault(l, "broke its channel (%s)", strerror(errno));
		return;
	}
	do {
		full = 0;
		if (event & EV_READ) {
			if ((n = imsg_read(ibuf)) == -1 && errno == EBADMSG) {
				gl_fault(l, "sent a file descriptor");
				return;
			}
			if (n == -1 && errno != EAGAIN &&
			    errno != ECONNRESET) {
				gl_fault(l, "broke its channel (%s)",
				    strerror(errno));
				return;
			}
			if (n == 0 || (n == -1 && errno == ECONNRESET)) {
				/* It died, or is dying: SIGCHLD says how. */
				gl_drop(l);
				gl_lose(l, "it closed its channel", 0);
				return;
			}
			full = ibuf->rlen == sizeof(ibuf->rbuf);
		}
		if (gl_messages(l) == -1)
			return;
	} while (full && ++reads < GPULINK_READS_MAX);
	imsgev_add(&l->iev);
}

static void
gl_tick(int fd, short ev, void *arg)
{
	struct gpulink	*l = arg;
	struct timeval	 tv;

	(void)fd;
	(void)ev;
	if (!l->up)
		return;
	if (l->snap->want == 0)
		gl_send_poll(l, l->conf.answer_ms);
	if (l->up) {
		ms_tv(l->conf.interval_ms, &tv);
		evtimer_add(&l->tick, &tv);
	}
}

static void
gl_deadline(int fd, short ev, void *arg)
{
	struct gpulink	*l = arg;

	(void)fd;
	(void)ev;
	if (l->up)
		gl_fault(l, "did not answer within %d ms", l->answered ?
		    l->conf.answer_ms : l->conf.first_ms);
}

static void
gl_restart(int fd, short ev, void *arg)
{
	struct gpulink	*l = arg;

	(void)fd;
	(void)ev;
	if (l->stopping || l->pid != 0)
		return;
	if (gpulink_start(l) == -1)
		log_warnx("agency-gpu cannot be started: no GPU figures");
}

int
gpulink_reaped(struct gpulink *l, pid_t pid, int status)
{
	struct timeval	 tv;
	char		 how[64];
	int		 delay;

	if (pid <= 0 || pid != l->pid)
		return (0);
	spawn_describe_exit(status, how, sizeof(how));
	l->pid = 0;
	gl_drop(l);
	gl_lose(l, how, 0);
	if (l->stopping) {
		log_debug("%s: agency-gpu %s", __func__, how);
		return (1);
	}
	/* One that lived and answered starts again soon. */
	if (l->answered && lived(l, l->conf.stable_ms))
		l->backoff = l->conf.backoff_min_ms;
	delay = l->backoff;
	l->backoff = l->backoff > l->conf.backoff_max_ms / 2 ?
	    l->conf.backoff_max_ms : l->backoff * 2;
	log_warnx("agency-gpu %s; starting a new one in %d ms", how, delay);
	if (l->event != NULL)
		l->event(0, delay, l->arg);
	ms_tv(delay, &tv);
	evtimer_add(&l->restart, &tv);
	return (1);
}

static int
pid_cmp(const void *a, const void *b)
{
	uint32_t	 x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x < y ? -1 : x > y);
}

int
gpulink_watch(struct gpulink *l, const pid_t *pids, size_t n)
{
	size_t	 i, k = 0, u = 0;

	if (n > GPU_WATCH_MAX) {
		errno = E2BIG;
		return (-1);
	}
	for (i = 0; i < n; i++)
		if (pids[i] > 0)
			l->pending[k++] = (uint32_t)pids[i];
	qsort(l->pending, k, sizeof(uint32_t), pid_cmp);
	/* Each once: the probe's figures are a pid's, once a device. */
	for (i = 0; i < k; i++)
		if (u == 0 || l->pending[u - 1] != l->pending[i])
			l->pending[u++] = l->pending[i];
	l->npending = u;
	l->changed = 1;
	if (l->up && l->snap->want == 0)
		gl_flush_watch(l);
	return (0);
}

void
gpulink_poll(struct gpulink *l)
{
	if (!l->up)
		return;
	if (l->snap->want != 0)
		l->again = 1;
	else
		gl_send_poll(l, l->conf.answer_ms);
}

const struct gpu_table *
gpulink_table(const struct gpulink *l)
{
	return (l->have ? l->good : NULL);
}

pid_t
gpulink_pid(const struct gpulink *l)
{
	return (l->pid);
}

int
gpulink_backoff(const struct gpulink *l)
{
	return (l->backoff);
}

void
gpulink_stop(struct gpulink *l)
{
	l->stopping = 1;
	evtimer_del(&l->restart);
	if (l->pid > 0)
		(void)kill(l->pid, SIGTERM);
	gl_drop(l);
	gl_lose(l, "stopped", 0);
}

void
gpulink_free(struct gpulink *l)
{
	if (l == NULL)
		return;
	if (l->up)
		gl_drop(l);
	if (evtimer_initialized(&l->tick)) {
		evtimer_del(&l->tick);
		evtimer_del(&l->deadline);
		evtimer_del(&l->restart);
	}
	free(l->watch);
	free(l->pending);
	free(l->snap);
	free(l->good);
	free(l);
}
