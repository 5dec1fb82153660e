/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * holdbench: holds per second over the socketpair, agencyd's real side.
 *
 * agencyd runs it in place of agency-proxy (-P): it takes the config on
 * fd 3 as the proxy does, says it is ready, answers every readiness
 * probe "200" without probing, and then asks for holds on one model as
 * fast as agencyd grants them: each grant is released and a new hold is
 * asked for in the same write, WINDOW holds in flight, for SECONDS, for
 * each window of BENCH_WINDOWS.  So it measures agencyd's proxy link
 * (hostile-input checks included), the pool's acquire and release and
 * our imsg both ways, with no HTTP.  Results go to BENCH_HOLDS_OUT as
 * "window W holds N seconds S per_s R parent_us_per_hold C" lines (C:
 * agencyd's CPU time, user and system, per hold, when its CPU clock
 * can be read, else -1); then it waits to be stopped.
 *
 * With BENCH_LOGLINES=1 each release also carries the access-log line
 * the proxy sends for a request (IMSG_LOG), so that a hold costs what
 * a proxied request costs agencyd.  BENCH_HELD=N holds N more for the
 * whole run first, as long streams would.
 *
 * Environment: BENCH_MODEL (nginx), BENCH_WINDOWS ("1 32"),
 * BENCH_SECONDS (3), BENCH_LOGLINES (0), BENCH_HELD (0),
 * BENCH_HOLDS_OUT (required).
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "imsg.h"
#include "log.h"
#include "msg.h"
#include "proto.h"

static struct imsgbuf	 ib;
static uint64_t		 next_reqid;
static const char	*model;
static int		 loglines;

/* agencyd's CPU time in seconds, or -1. */
static double
parent_cpu_s(void)
{
	struct timespec	 ts;
	clockid_t	 cid;

	if (clock_getcpuclockid(getppid(), &cid) != 0 ||
	    clock_gettime(cid, &ts) == -1)
		return (-1);
	return (ts.tv_sec + ts.tv_nsec / 1e9);
}

static double
now_s(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (ts.tv_sec + ts.tv_nsec / 1e9);
}

/* A message as the proxy writes it (proto.c). */
static void
put_msg(uint32_t type, const void *data, size_t len)
{
	struct msgw	 w;

	if (proto_write(&w, FROM_PROXY, type, data, len) == -1 ||
	    msg_compose(&ib, type, 0, -1, &w) == -1)
		fatal("compose");
}

static void
ask(void)
{
	struct proto_hold_req	 hr;

	memset(&hr, 0, sizeof(hr));
	hr.reqid = ++next_reqid;
	(void)strlcpy(hr.model, model, sizeof(hr.model));
	put_msg(IMSG_HOLD_REQ, &hr, sizeof(hr));
}

/* The proxy's access-log line of a request, as http_log makes it. */
static void
logline(void)
{
	struct proto_log	 lg;
	int			 n;

	lg.pri = LOG_INFO;
	n = snprintf(lg.line, sizeof(lg.line),
	    "POST /v1/chat/completions %s 200 %llums 9->2 tokens", model,
	    (unsigned long long)(next_reqid % 7));
	if (n < 0 || (size_t)n >= sizeof(lg.line))
		fatalx("log line");
	put_msg(IMSG_LOG, &lg, sizeof(lg));
}

static void
release(uint64_t holdid)
{
	struct proto_holdid	 ph;

	memset(&ph, 0, sizeof(ph));
	ph.holdid = holdid;
	put_msg(IMSG_HOLD_RELEASE, &ph, sizeof(ph));
	if (loglines)
		logline();
}

/* Read what there is, blocking until something; -1 at EOF. */
static int
fill(void)
{
	struct pollfd	 pfd;
	ssize_t		 n;

	if (imsg_flush(&ib) == -1)
		return (-1);
	pfd.fd = ib.fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, 1000) <= 0)
		return (0);
	if ((n = imsg_read(&ib)) == -1 && errno != EAGAIN)
		return (-1);
	return (n == 0 ? -1 : 0);
}

/*
 * One message: the config is taken and dropped, probes are answered.
 * Returns the hold id of a grant, 0 for anything else.
 */
static uint64_t
handle(struct imsg *imsg)
{
	struct proto_hold_grant		 g;
	struct proto_probe		 pr;
	struct proto_probe_result	 res;
	const char			*why;

	switch (imsg_get_type(imsg)) {
	case IMSG_CONF_END:
		put_msg(IMSG_PROXY_READY, NULL, 0);
		break;
	case IMSG_PROBE:
		if (proto_read(imsg, FROM_PARENT, &pr, sizeof(pr), &why) == -1)
			fatalx("probe: %s", why);
		memset(&res, 0, sizeof(res));
		res.loadid = pr.loadid;
		res.ok = 1;
		res.status = 200;
		put_msg(IMSG_PROBE_RESULT, &res, sizeof(res));
		break;
	case IMSG_HOLD_GRANT:
		/* read as the proxy reads it */
		if (proto_read(imsg, FROM_PARENT, &g, sizeof(g), &why) == -1)
			fatalx("a grant that does not read: %s", why);
		return (g.holdid);
	case IMSG_HOLD_REFUSE:
		fatalx("a hold was refused");
	default:
		break;		/* config, status, cancel: not ours */
	}
	return (0);
}

int
main(void)
{
	struct imsg	 imsg;
	FILE		*out;
	const char	*path, *s;
	char		*windows, *w, *last;
	double		 secs = 3, t0, t1, c0, c1;
	uint64_t	 holdid, grants;
	ssize_t		 n;
	int		 window, inflight, ready = 0, held = 0, granted;

	log_init(1, 0);
	signal(SIGPIPE, SIG_IGN);
	if ((path = getenv("BENCH_HOLDS_OUT")) == NULL)
		fatalx("BENCH_HOLDS_OUT is not set");
	if ((model = getenv("BENCH_MODEL")) == NULL)
		model = "nginx";
	if ((s = getenv("BENCH_SECONDS")) != NULL)
		secs = atof(s);
	if ((s = getenv("BENCH_LOGLINES")) != NULL)
		loglines = atoi(s) != 0;
	if ((s = getenv("BENCH_HELD")) != NULL)
		held = atoi(s);
	if ((windows = strdup((s = getenv("BENCH_WINDOWS")) ? s : "1 32")) ==
	    NULL)
		fatal(NULL);
	imsg_init(&ib, 3);

	/* Up to the first grant: the model is loaded and ready. */
	ask();
	while (!ready) {
		if (fill() == -1)
			fatalx("agencyd went away");
		while ((n = imsg_get(&ib, &imsg)) > 0) {
			if ((holdid = handle(&imsg)) != 0) {
				release(holdid);
				ready = 1;
			}
			imsg_free(&imsg);
		}
		if (n == -1)
			fatal("imsg_get");
	}
	/* The long holds, never released. */
	for (granted = 0; granted < held; granted++)
		ask();
	while (granted > 0) {
		if (fill() == -1)
			fatalx("agencyd went away");
		while ((n = imsg_get(&ib, &imsg)) > 0) {
			if (handle(&imsg) != 0)
				granted--;
			imsg_free(&imsg);
		}
		if (n == -1)
			fatal("imsg_get");
	}

	if ((out = fopen(path, "w")) == NULL)
		fatal("%s", path);
	for (w = strtok_r(windows, " ", &last); w != NULL;
	    w = strtok_r(NULL, " ", &last)) {
		window = atoi(w);
		grants = 0;
		c0 = parent_cpu_s();
		t0 = now_s();
		for (inflight = 0; inflight < window; inflight++)
			ask();
		while (inflight > 0) {
			if (fill() == -1)
				fatalx("agencyd went away");
			t1 = now_s();
			while ((n = imsg_get(&ib, &imsg)) > 0) {
				if ((holdid = handle(&imsg)) != 0) {
					grants++;
					release(holdid);
					if (t1 - t0 < secs)
						ask();
					else
						inflight--;
				}
				imsg_free(&imsg);
			}
			if (n == -1)
				fatal("imsg_get");
		}
		if (imsg_flush(&ib) == -1)
			fatal("flush");
		t1 = now_s();
		c1 = parent_cpu_s();
		fprintf(out, "window %d holds %llu seconds %.2f per_s %.0f "
		    "parent_us_per_hold %.3f\n", window,
		    (unsigned long long)grants, t1 - t0, grants / (t1 - t0),
		    c0 >= 0 && c1 >= 0 && grants > 0 ?
		    (c1 - c0) * 1e6 / grants : -1.0);
		fflush(out);
	}
	fclose(out);
	/* Stay: agencyd would start another one. */
	for (;;) {
		if (fill() == -1)
			exit(0);
		while ((n = imsg_get(&ib, &imsg)) > 0) {
			if ((holdid = handle(&imsg)) != 0)
				release(holdid);
			imsg_free(&imsg);
		}
		if (n == -1)
			exit(0);
	}
}
