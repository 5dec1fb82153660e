/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * proxyattack: a compromised agency-proxy, run by agencyd in its place
 * (agencyd -P), for the tests that check agencyd stays bounded and
 * keeps its own counsel.  The mode is the first line of
 * ./proxyattack.mode (agencyd gives the proxy no environment): a word
 * and maybe a count.  It appends its pid to ./proxyattack.starts, takes
 * the configuration, says it is ready, answers every readiness probe
 * (200, or in mode probe a hostile 500) until the first model is ready,
 * then, once ./proxyattack.go exists (10 s at most), does what the mode
 * says and waits, reading nothing more, until agencyd kills it or closes
 * the channel (60 s at most).
 *
 *   holds N     N hold requests for the first model
 *   status N    N status requests
 *   canceldone  a report of a cancel of the first model never sent
 *   fds N       the header of the longest message, then N one-byte
 *               pieces of it, each with 16 fds
 *   log         log lines with a newline and a terminal escape in
 *               them, at LOG_EMERG and at a priority with a facility
 *   probe       every probe answered 500 with such a body
 *   quiet       nothing: it only serves probes
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "fdpass.h"
#include "imsg.h"
#include "msg.h"
#include "numarg.h"
#include "proto.h"
#include "tool.h"

#define EVIL		"evil\nagencyd: forged line\033[31m\\x"

static struct imsgbuf	 ib;
static char		 model[AGENCY_NAME_MAX];
static char		 mode[64] = "quiet";
static long long	 count = 1;

/* Queue a message as a proxy writes it (proto.c). */
static void
queue(uint32_t type, const void *data, size_t len)
{
	struct msgw	 w;

	if (proto_write(&w, FROM_PROXY, type, data, len) == -1)
		errx(1, "message %u does not write", type);
	if (msg_compose(&ib, type, 0, -1, &w) == -1)
		err(1, "imsg_compose");
}

static void
send_now(uint32_t type, const void *data, size_t len)
{
	queue(type, data, len);
	if (imsg_flush(&ib) == -1)
		exit(0);	/* agencyd closed the channel: killed */
}

static void
answer_probe(struct imsg *imsg)
{
	struct proto_probe		p;
	struct proto_probe_result	r;
	const char			*why;

	if (proto_read(imsg, FROM_PARENT, &p, sizeof(p), &why) == -1)
		errx(1, "bad probe: %s", why);
	memset(&r, 0, sizeof(r));
	r.loadid = p.loadid;
	if (strcmp(mode, "probe") == 0) {
		r.ok = 0;
		r.status = 500;
		(void)strlcpy(r.body, EVIL, sizeof(r.body));
	} else {
		r.ok = 1;
		r.status = 200;
	}
	send_now(IMSG_PROBE_RESULT, &r, sizeof(r));
}

/* Take messages until the configuration is in and the first model's
 * probe was answered (or, with no probe coming, the configuration). */
static void
take(int probes)
{
	struct msgr		 m;
	struct imsg		 imsg;
	ssize_t			 n;
	int			 conf = 0, done = 0;

	while (!done) {
		if ((n = imsg_read(&ib)) == -1 && errno != EAGAIN)
			err(1, "imsg_read");
		if (n == 0)
			exit(0);
		while (!done && (n = imsg_get(&ib, &imsg)) > 0) {
			switch (imsg_get_type(&imsg)) {
			case IMSG_CONF_MODEL:
				/* its name is the first field */
				if (model[0] == '\0') {
					msg_read(&m, &imsg);
					msg_get_str(&m, model, sizeof(model));
				}
				break;
			case IMSG_CONF_END:
				conf = 1;
				send_now(IMSG_PROXY_READY, NULL, 0);
				if (!probes)
					done = 1;
				break;
			case IMSG_PROBE:
				answer_probe(&imsg);
				done = conf;
				break;
			default:
				break;
			}
			imsg_free(&imsg);
		}
		if (n == -1)
			err(1, "imsg_get");
	}
}

/* count messages of type, each made by fill from its index, unread. */
static void
flood(uint32_t type, size_t len, void (*fill)(void *, long long))
{
	union {
		struct proto_hold_req	hr;
		struct proto_reqid	rq;
	}			 u;
	long long		 i;

	for (i = 0; i < count; i++) {
		memset(&u, 0, sizeof(u));
		fill(&u, i);
		queue(type, &u, len);
		if ((i + 1) % 1024 == 0 && imsg_flush(&ib) == -1)
			return;
	}
	(void)imsg_flush(&ib);
}

static void
fill_hold(void *p, long long i)
{
	struct proto_hold_req	*r = p;

	r->reqid = i + 1;
	(void)strlcpy(r->model, model, sizeof(r->model));
}

static void
fill_status(void *p, long long i)
{
	struct proto_reqid	*r = p;

	r->reqid = i + 1;
}

static void
fds(void)
{
	struct imsg_hdr	 hdr;
	unsigned char	 byte = 0;
	long long	 i;
	int		 devnull;

	if ((devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		err(1, "/dev/null");
	memset(&hdr, 0, sizeof(hdr));
	hdr.type = IMSG_LOG;
	hdr.len = MAX_IMSGSIZE;
	for (i = 0; i <= count; i++)
		if (fdpass_send(3, i == 0 ? (void *)&hdr : (void *)&byte,
		    i == 0 ? sizeof(hdr) : 1, devnull, FDPASS_MAX) == -1)
			break;	/* closed: killed */
	close(devnull);
}

int
main(int argc, char *argv[])
{
	struct proto_cancel	 c;
	struct proto_log	 lg;
	struct pollfd		 pfd;
	FILE			*f;
	char			 line[128], *sp;
	int			 i;

	/* agencyd gives the proxy's options; the mode comes by file */
	(void)argc;
	(void)argv;
	tool_init();
	if ((f = fopen("proxyattack.mode", "r")) != NULL) {
		if (fgets(line, sizeof(line), f) != NULL) {
			line[strcspn(line, "\n")] = '\0';
			if ((sp = strchr(line, ' ')) != NULL) {
				*sp++ = '\0';
				count = numarg(sp, 0, 1LL << 32, "count");
			}
			(void)strlcpy(mode, line, sizeof(mode));
		}
		fclose(f);
	}
	if ((f = fopen("proxyattack.starts", "a")) != NULL) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	imsg_init(&ib, 3);
	take(1);
	/* The test measures agencyd first, then says go (10 s at most). */
	for (i = 0; i < 1000 && access("proxyattack.go", F_OK) == -1; i++)
		(void)poll(NULL, 0, 10);

	if (strcmp(mode, "holds") == 0)
		flood(IMSG_HOLD_REQ, sizeof(struct proto_hold_req), fill_hold);
	else if (strcmp(mode, "status") == 0)
		flood(IMSG_STATUS_REQ, sizeof(struct proto_reqid), fill_status);
	else if (strcmp(mode, "canceldone") == 0) {
		memset(&c, 0, sizeof(c));
		(void)strlcpy(c.model, model, sizeof(c.model));
		c.cancelled = 1;
		send_now(IMSG_CANCEL_DONE, &c, sizeof(c));
	} else if (strcmp(mode, "fds") == 0)
		fds();
	else if (strcmp(mode, "log") == 0) {
		memset(&lg, 0, sizeof(lg));
		(void)strlcpy(lg.line, EVIL, sizeof(lg.line));
		lg.pri = LOG_EMERG;
		send_now(IMSG_LOG, &lg, sizeof(lg));
		lg.pri = LOG_AUTH | LOG_ERR;
		send_now(IMSG_LOG, &lg, sizeof(lg));
	} else if (strcmp(mode, "probe") != 0 && strcmp(mode, "quiet") != 0)
		errx(2, "unknown mode %s", mode);

	/* These go on serving probes until agencyd closes the channel. */
	if (strcmp(mode, "probe") == 0 || strcmp(mode, "quiet") == 0)
		for (;;)
			take(1);
	/* The others read nothing more: EOF, a kill, or 60 s. */
	pfd.fd = 3;
	pfd.events = 0;
	for (i = 0; i < 600; i++)
		if (poll(&pfd, 1, 100) == 1 &&
		    (pfd.revents & (POLLHUP | POLLERR)))
			exit(0);
	return (0);
}
