/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-gpu: the GPU probe.  agencyd starts it (agencyd/gpulink.c) as
 * the model user, never root (README says why), with its end of a
 * socketpair on fd 3, asks it which devices there are and how much
 * memory each has and each watched process uses, and gets back figures
 * alone (common/gpuproto.h), which it checks as it would a stranger's.
 * Its sandbox (sandbox.c) runs its seccomp filter in log mode until
 * "make check-gpu" has passed on a real card.
 *
 * Calls: snapshot.c, nvml.c, amd.c, sandbox.c, common/imsg.c,
 * common/log.c.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <err.h>
#include <errno.h>
#include <event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "probe.h"
#include "imsg.h"
#include "log.h"
#include "version.h"

static struct imsgev	 iev;
static int		 up;
static unsigned int	 logs;		/* lines since the last answer */
static unsigned int	 dropped;
static struct snapshot	*snap;
static uint32_t		*watch;
static size_t		 nwatch;
static const char	*sysfs = GPU_SYSFS;
static const char	*procfs = GPU_PROC;

/*
 * Options -L, -S and -P are for tests only (agencyd passes them from
 * its own options, never from the configuration, and the proxy cannot
 * reach either): the NVML library's path, and the roots of sysfs and
 * /proc, so that the suite's stand-ins take the place of the real ones.
 */
static __dead void
usage(void)
{
	extern char	*__progname;

	fprintf(stderr, "usage: %s [-dKVv] [-L library] [-P proc] "
	    "[-S sysfs] [-Z dir]\n", __progname);
	exit(1);
}

/*
 * Each line to agencyd, which takes GPU_LOGS_MAX between two answers:
 * the probe keeps under it and says how many it left out.
 */
static void
loghook(int pri, const char *line)
{
	static int	 busy;
	char		 cut[GPU_LOGLINE_MAX];
	size_t		 len;

	if (busy || !up) {
		fprintf(stderr, "agency-gpu: %s\n", line);
		return;
	}
	if (logs >= GPU_LOGS_MAX - 1) {
		dropped++;
		return;
	}
	busy = 1;
	logs++;
	if ((len = strlen(line)) >= sizeof(cut)) {
		(void)strlcpy(cut, line, sizeof(cut));
		line = cut;
		len = sizeof(cut) - 1;
	}
	if (imsg_compose(&iev.ibuf, IMSG_GPU_LOG, pri < 0 ? LOG_INFO :
	    (uint32_t)pri, 0, -1, line, len + 1) == -1)
		fprintf(stderr, "agency-gpu: %s\n", line);
	else if (pri <= LOG_CRIT)
		(void)imsg_flush(&iev.ibuf);	/* we are exiting */
	else
		imsgev_add(&iev);
	busy = 0;
}

static void
send_msg(uint32_t type, const void *data, size_t len)
{
	if (imsg_compose(&iev.ibuf, type, 0, 0, -1, data, len) == -1)
		fatal("%s: imsg_compose", __func__);
}

/* One snapshot, as the poll asked, then its end. */
static void
answer(uint64_t reqid)
{
	struct gpu_snap_head	 h;
	struct gpu_snap_end	 e;
	uint32_t		 i;

	snap_begin(snap, watch, nwatch);
	nvml_collect(snap);
	amd_collect(snap, sysfs, procfs);
	snap_settle(snap);
	if (dropped > 0) {
		logs = 0;
		log_warnx("%u log lines left out", dropped);
		dropped = 0;
	}
	memset(&h, 0, sizeof(h));
	h.reqid = reqid;
	h.backends = snap->backends;
	h.ndev = snap->ndev;
	h.nproc = snap->nproc;
	send_msg(IMSG_GPU_SNAP_START, &h, sizeof(h));
	for (i = 0; i < snap->ndev; i++)
		send_msg(IMSG_GPU_DEVICE, &snap->dev[i], sizeof(snap->dev[i]));
	for (i = 0; i < snap->nproc; i++)
		send_msg(IMSG_GPU_PROC, &snap->proc[i],
		    sizeof(snap->proc[i]));
	memset(&e, 0, sizeof(e));
	e.reqid = reqid;
	send_msg(IMSG_GPU_SNAP_END, &e, sizeof(e));
	logs = 0;
	imsgev_add(&iev);
}

static int
pid_cmp(const void *a, const void *b)
{
	uint32_t	 x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x < y ? -1 : x > y);
}

static void
dispatch(int fd, short event, void *arg)
{
	struct gpu_watch	*w;
	struct gpu_poll		 p;
	struct imsg		 imsg;
	ssize_t			 n;

	(void)fd;
	(void)arg;
	if (imsgev_io(&iev, event) == -1) {
		/* agencyd is gone, or stopped us: nothing more to do. */
		log_debug("the channel closed");
		exit(0);
	}
	for (;;) {
		if ((n = imsg_get(&iev.ibuf, &imsg)) == -1)
			fatalx("a broken message from agencyd");
		if (n == 0)
			break;
		switch (imsg_get_type(&imsg)) {
		case IMSG_GPU_WATCH:
			if (imsg_get_len(&imsg) != sizeof(*w))
				fatalx("a list of %zu bytes",
				    imsg_get_len(&imsg));
			w = imsg.data;
			if (w->n > GPU_WATCH_MAX)
				fatalx("a list of %u processes", w->n);
			memcpy(watch, w->pid, w->n * sizeof(*watch));
			nwatch = w->n;
			qsort(watch, nwatch, sizeof(*watch), pid_cmp);
			break;
		case IMSG_GPU_POLL:
			if (imsg_get_data(&imsg, &p, sizeof(p)) == -1)
				fatalx("a poll of %zu bytes",
				    imsg_get_len(&imsg));
			answer(p.reqid);
			break;
		default:
			fatalx("a message of unknown type %u from agencyd",
			    imsg_get_type(&imsg));
		}
		imsg_free(&imsg);
	}
	imsgev_add(&iev);
}

int
main(int argc, char *argv[])
{
	struct stat	 st;
	const char	*nvml = GPU_NVML_LIB, *selftest = NULL;
	int		 ch, debug = 0, enforce = 0, verbose = 0;

	while ((ch = getopt(argc, argv, "dKL:P:S:VvZ:")) != -1) {
		switch (ch) {
		case 'd':
			debug = 1;
			break;
		case 'K':
			enforce = 1;
			break;
		case 'L':
			nvml = optarg;
			break;
		case 'P':
			procfs = optarg;
			break;
		case 'S':
			sysfs = optarg;
			break;
		case 'V':
			printf("agency-gpu %s\n", AGENCY_VERSION);
			exit(0);
		case 'v':
			verbose++;
			break;
		case 'Z':
			selftest = optarg;
			break;
		default:
			usage();
		}
	}
	if (optind != argc)
		usage();
	if (getuid() == 0 || geteuid() == 0 || getgid() == 0 ||
	    getegid() == 0)
		errx(1, "never runs as root: agencyd starts it as the model "
		    "user");

	/* RLIMIT_FSIZE 0: a write to a file fails instead of killing us */
	signal(SIGXFSZ, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	log_init(1, LOG_DAEMON);
	log_setverbose(verbose > 0 ? verbose + 1 : debug);
	log_procinit("gpu");
	if (selftest != NULL)
		return (gpu_selftest(selftest, enforce));
	if (fstat(GPU_FD, &st) == -1 || !S_ISSOCK(st.st_mode))
		errx(1, "fd %d is not the parent's socket: agencyd starts "
		    "this program", GPU_FD);
	if ((snap = calloc(1, sizeof(*snap))) == NULL ||
	    (watch = calloc(GPU_WATCH_MAX, sizeof(*watch))) == NULL)
		err(1, "calloc");

	if (event_init() == NULL)
		errx(1, "event_init");
	imsgev_init(&iev, GPU_FD, dispatch, NULL);
	up = 1;
	log_sethook(loghook);

	/* The vendor library first: the sandbox follows its loading. */
	(void)nvml_open(nvml);
	if (gpu_sandbox(enforce) == -1)
		fatalx("cannot apply the sandbox");
	imsgev_add(&iev);
	(void)event_dispatch();
	fatalx("event loop ended");
}
