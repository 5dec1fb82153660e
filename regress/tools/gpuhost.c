/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * gpuhost: agencyd's side of the GPU probe (agencyd/gpulink.c, with
 * its checks of gpusnap.c) in a program of its own, until phase 2 puts
 * it in agencyd.  It starts the probe, reaps it, and prints what
 * agencyd would get, one line an event, flushed:
 *
 *	start pid=P
 *	snapshot reqid=R backends=B ndev=N nproc=M
 *	device index=I vendor=V vindex=X id=ID pci=PCI total=T used=U
 *	    flags=F name=NAME			(one line)
 *	proc dev=I pid=P bytes=B flags=F
 *	end
 *	lost why=WHY
 *	restart in=MS
 *	done
 *
 * and agencyd's log on standard error.  Commands on standard input,
 * one a line: "watch PID...", "poll", "quit".  It ends (stopping the
 * probe and reaping it) at "quit", at end of input with -q, after -n
 * snapshots, -l losses of the figures, -r restarts, or -t seconds.
 *
 * usage: gpuhost -p probe [-Kqv] [-u user] [-L lib] [-S sysfs]
 *	[-P proc] [-i interval] [-f first] [-a answer] [-b min] [-B max]
 *	[-s stable] [-n snapshots] [-l losses] [-r restarts] [-t seconds]
 *	[-w pid,...]
 */
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "gpu.h"
#include "log.h"
#include "numarg.h"

#define HOST_PIDS_MAX	GPU_WATCH_MAX

static struct gpulink	*link_;
static long long	 snapshots, want = -1;
static long long	 losses, want_losses = -1;
static long long	 restarts, want_restarts = -1;
static int		 ending, quit_on_eof;
static struct event	 ev_stdin, ev_chld, ev_time, ev_term;

static __dead void
usage(void)
{
	fprintf(stderr, "usage: gpuhost -p probe [-Kqv] [-u user] "
	    "[-L lib] [-S sysfs] [-P proc]\n"
	    "\t[-i interval] [-f first] [-a answer] [-b min] [-B max] "
	    "[-s stable]\n\t[-n snapshots] [-l losses] [-r restarts] "
	    "[-t seconds] [-w pid,...]\n");
	exit(2);
}

/* Once the probe is stopped and reaped. */
static void
done(void)
{
	static int	 said;

	if (said++)
		return;
	printf("done\n");
	fflush(stdout);
	event_loopexit(NULL);
}

static void
finish(void)
{
	if (ending)
		return;
	ending = 1;
	gpulink_stop(link_);
	if (gpulink_pid(link_) == 0)
		done();
}

static void
on_figures(const struct gpu_table *t, void *arg)
{
	const struct gpu_device	*d;
	const struct gpu_proc	*p;
	uint32_t		 i;

	(void)arg;
	printf("snapshot reqid=%llu backends=%u ndev=%u nproc=%u\n",
	    (unsigned long long)t->reqid, t->backends, t->ndev, t->nproc);
	for (i = 0; i < t->ndev; i++) {
		d = &t->dev[i];
		printf("device index=%u vendor=%u vindex=%u id=%s pci=%s "
		    "total=%llu used=%llu flags=%u name=%s\n", d->index,
		    d->vendor, d->vindex, d->id, d->pci,
		    (unsigned long long)d->total, (unsigned long long)d->used,
		    d->flags, d->name);
	}
	for (i = 0; i < t->nproc; i++) {
		p = &t->proc[i];
		printf("proc dev=%u pid=%u bytes=%llu flags=%u\n", p->dev,
		    p->pid, (unsigned long long)p->bytes, p->flags);
	}
	printf("end\n");
	fflush(stdout);
	if (want >= 0 && ++snapshots >= want)
		finish();
}

static void
on_lost(const char *why, void *arg)
{
	(void)arg;
	printf("lost why=%s\n", why);
	fflush(stdout);
	if (want_losses >= 0 && ++losses >= want_losses)
		finish();
}

static void
on_event(pid_t pid, int ms, void *arg)
{
	(void)arg;
	if (pid > 0)
		printf("start pid=%ld\n", (long)pid);
	else
		printf("restart in=%d\n", ms);
	fflush(stdout);
	if (pid == 0 && want_restarts >= 0 && ++restarts >= want_restarts)
		finish();
}

/* "1,2,3" or "1 2 3" into pids; their count. */
static size_t
parse_pids(char *s, pid_t *pids)
{
	char	*w;
	size_t	 n = 0;

	while ((w = strsep(&s, ", \t\n")) != NULL) {
		if (*w == '\0')
			continue;
		if (n == HOST_PIDS_MAX)
			errx(2, "more than %d pids", HOST_PIDS_MAX);
		pids[n++] = (pid_t)numarg(w, 1, 1LL << 30, "pid");
	}
	return (n);
}

static void
on_stdin(int fd, short ev, void *arg)
{
	static char	 buf[65536];
	static size_t	 len;
	static pid_t	 pids[HOST_PIDS_MAX];
	char		*nl, *line;
	ssize_t		 n;

	(void)ev;
	(void)arg;
	if ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) <= 0) {
		if (n == -1 && errno == EINTR)
			return;
		event_del(&ev_stdin);
		if (quit_on_eof)
			finish();
		return;
	}
	len += (size_t)n;
	buf[len] = '\0';
	while ((nl = strchr(buf, '\n')) != NULL) {
		*nl = '\0';
		line = buf;
		if (strncmp(line, "watch", 5) == 0) {
			n = (ssize_t)parse_pids(line + 5, pids);
			if (gpulink_watch(link_, pids, (size_t)n) == -1)
				warn("watch");
		} else if (strcmp(line, "poll") == 0)
			gpulink_poll(link_);
		else if (strcmp(line, "quit") == 0)
			finish();
		else if (*line != '\0')
			warnx("unknown command: %s", line);
		len -= (size_t)(nl + 1 - buf);
		memmove(buf, nl + 1, len + 1);
	}
	if (len == sizeof(buf) - 1)
		errx(2, "a line too long");
}

static void
on_sig(int sig, short ev, void *arg)
{
	pid_t	 pid;
	int	 status;

	(void)ev;
	(void)arg;
	if (sig != SIGCHLD) {
		finish();
		return;
	}
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (!gpulink_reaped(link_, pid, status))
			continue;
		printf("reaped pid=%ld\n", (long)pid);
		fflush(stdout);
		if (ending)
			done();
	}
}

static void
on_time(int fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	finish();
}

int
main(int argc, char *argv[])
{
	struct gpulink_conf	 c;
	struct stat		 st;
	struct timeval		 tv;
	pid_t			 pids[HOST_PIDS_MAX];
	size_t			 npids = 0;
	long long		 secs = 0;
	int			 ch, verbose = 0;

	memset(&c, 0, sizeof(c));
	while ((ch = getopt(argc, argv,
	    "a:B:b:f:i:KL:l:n:P:p:qr:S:s:t:u:vw:")) != -1) {
		switch (ch) {
		case 'a':
			c.answer_ms = (int)numarg(optarg, 1, 3600000, "-a");
			break;
		case 'B':
			c.backoff_max_ms = (int)numarg(optarg, 1, 3600000,
			    "-B");
			break;
		case 'b':
			c.backoff_min_ms = (int)numarg(optarg, 1, 3600000,
			    "-b");
			break;
		case 'f':
			c.first_ms = (int)numarg(optarg, 1, 3600000, "-f");
			break;
		case 'i':
			c.interval_ms = (int)numarg(optarg, 1, 3600000, "-i");
			break;
		case 'K':
			c.enforce = 1;
			break;
		case 'L':
			c.nvml = optarg;
			break;
		case 'l':
			want_losses = numarg(optarg, 1, 1000000, "-l");
			break;
		case 'n':
			want = numarg(optarg, 1, 1000000, "-n");
			break;
		case 'r':
			want_restarts = numarg(optarg, 1, 1000000, "-r");
			break;
		case 'P':
			c.proc = optarg;
			break;
		case 'p':
			c.path = optarg;
			break;
		case 'q':
			quit_on_eof = 1;
			break;
		case 'S':
			c.sysfs = optarg;
			break;
		case 's':
			c.stable_ms = (int)numarg(optarg, 1, 3600000, "-s");
			break;
		case 't':
			secs = numarg(optarg, 1, 3600, "-t");
			break;
		case 'u':
			c.user = optarg;
			break;
		case 'v':
			verbose++;
			break;
		case 'w':
			npids = parse_pids(optarg, pids);
			break;
		default:
			usage();
		}
	}
	if (optind != argc || c.path == NULL)
		usage();
	c.verbose = verbose;
	setvbuf(stdout, NULL, _IOLBF, 0);
	log_init(1, LOG_DAEMON);
	log_setverbose(verbose);
	signal(SIGPIPE, SIG_IGN);
	if (event_init() == NULL)
		errx(2, "event_init");
	if ((link_ = gpulink_new(&c, on_figures, on_lost, on_event, NULL)) ==
	    NULL)
		errx(2, "gpulink_new");
	if (npids > 0 && gpulink_watch(link_, pids, npids) == -1)
		err(2, "watch");
	signal_set(&ev_chld, SIGCHLD, on_sig, NULL);
	signal_add(&ev_chld, NULL);
	signal_set(&ev_term, SIGTERM, on_sig, NULL);
	signal_add(&ev_term, NULL);
	/* Commands from a pipe, a socket or a terminal; not from a file. */
	if (fstat(STDIN_FILENO, &st) == 0 && (S_ISFIFO(st.st_mode) ||
	    S_ISSOCK(st.st_mode) || isatty(STDIN_FILENO))) {
		event_set(&ev_stdin, STDIN_FILENO, EV_READ | EV_PERSIST,
		    on_stdin, NULL);
		event_add(&ev_stdin, NULL);
	}
	if (secs > 0) {
		evtimer_set(&ev_time, on_time, NULL);
		tv.tv_sec = secs;
		tv.tv_usec = 0;
		evtimer_add(&ev_time, &tv);
	}
	if (gpulink_start(link_) == -1)
		errx(1, "the probe cannot be started");
	(void)event_dispatch();
	gpulink_free(link_);
	return (0);
}
