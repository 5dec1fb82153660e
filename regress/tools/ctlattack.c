/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * ctlattack [-c conns] [-n count] [-t seconds] mode path: what a local
 * user can do to agencyd's control socket, for the tests that check it
 * stays bounded.  Every mode is bounded by count and by seconds.
 *
 *   flood    one connection; status requests as fast as the socket
 *            takes them, never reading an answer, until count were sent
 *            or seconds passed.  Prints "sent N".
 *   fds      an imsg header announcing the longest message, then count
 *            one-byte sends of its payload, each carrying 16 fds (of
 *            /dev/null), connecting again (and sending a header again)
 *            whenever the server closed the connection.
 *            Prints "sent N with fds on K connections".
 *   idle     conns connections that send nothing.
 *   partial  conns connections that send half an imsg header.
 *            Both print "open N", then wait (seconds at most) for the
 *            server to close them: "closed N of M, the last after T ms".
 *   follow   (ctlattack follow path model) one connection that asks to
 *            follow the model's lines and never reads them.  Prints
 *            "following", then "closed after T ms" when the server
 *            closed it, or "open after T ms" at the deadline.
 *
 * Exits 0 unless something the attacker itself needed failed.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fdpass.h"
#include "imsg.h"
#include "msg.h"
#include "numarg.h"
#include "proto.h"
#include "tool.h"

#define MAXCONNS	4096

static struct sockaddr_un	sun;

static void
usage(void)
{
	fprintf(stderr, "usage: ctlattack [-c conns] [-n count] [-t seconds] "
	    "flood | fds | idle | partial path\n"
	    "       ctlattack [-t seconds] follow path model\n");
	exit(2);
}

/* A connection, or -1 when the server refused it (closed or full). */
static int
connect_to(int nonblock)
{
	int	s;

	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC |
	    (nonblock ? SOCK_NONBLOCK : 0), 0)) == -1)
		err(2, "socket");
	if (connect(s, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		if (errno == EAGAIN || errno == ECONNREFUSED)
			warn("connect %s", sun.sun_path);
		else
			err(2, "connect %s", sun.sun_path);
		close(s);
		return (-1);
	}
	return (s);
}

static void
flood(long long count, int64_t deadline)
{
	struct imsg_hdr		 hdr;
	struct proto_reqid	 r;
	struct msgw		 w;
	unsigned char		 msg[sizeof(hdr) + sizeof(r)];
	unsigned char		 batch[sizeof(msg) * 256];
	struct pollfd		 pfd;
	long long		 sent = 0;
	size_t			 off = 0, i;
	ssize_t			 n;
	int			 s;

	if ((s = connect_to(1)) == -1)
		exit(1);
	/* a status request as agency-ctl writes it (proto.c) */
	memset(&r, 0, sizeof(r));
	if (proto_write(&w, FROM_CTL, IMSG_CTL_STATUS_REQ, &r,
	    sizeof(r)) == -1 || w.len != sizeof(r))
		errx(2, "a status request does not write");
	memset(&hdr, 0, sizeof(hdr));
	hdr.type = IMSG_CTL_STATUS_REQ;
	hdr.len = sizeof(msg);
	memcpy(msg, &hdr, sizeof(hdr));
	memcpy(msg + sizeof(hdr), w.buf, w.len);
	for (i = 0; i < sizeof(batch) / sizeof(msg); i++)
		memcpy(batch + i * sizeof(msg), msg, sizeof(msg));

	while (sent < count && now_ms() < deadline) {
		n = write(s, batch + off, sizeof(batch) - off);
		if (n == -1) {
			if (errno == EPIPE || errno == ECONNRESET)
				break;
			if (errno != EAGAIN)
				err(2, "write");
			pfd.fd = s;
			pfd.events = POLLOUT;
			(void)poll(&pfd, 1, 50);
			continue;
		}
		/* the batch repeats the message: go on from where it was */
		off += n;
		sent += off / sizeof(msg);
		off %= sizeof(msg);
	}
	printf("sent %lld\n", sent);
	fflush(stdout);
	close(s);
}

static void
fds(long long count, int64_t deadline)
{
	struct imsg_hdr	 hdr;
	unsigned char	 byte = 0;
	long long	 sent = 0, conns = 0;
	int		 s = -1, devnull;

	if ((devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) == -1)
		err(2, "/dev/null");
	while (sent < count && now_ms() < deadline) {
		if (s == -1) {
			if ((s = connect_to(0)) == -1)
				break;
			conns++;
			/* an unfinished message keeps what came with it */
			memset(&hdr, 0, sizeof(hdr));
			hdr.type = IMSG_CTL_STATUS_REQ;
			hdr.len = MAX_IMSGSIZE;
			if (fdpass_send(s, &hdr, sizeof(hdr), devnull,
			    FDPASS_MAX) == -1) {
				close(s);
				s = -1;
			}
			continue;
		}
		if (fdpass_send(s, &byte, 1, devnull, FDPASS_MAX) == -1) {
			if (errno != EPIPE && errno != ECONNRESET &&
			    errno != ETOOMANYREFS)
				err(2, "sendmsg");
			close(s);
			s = -1;
			continue;
		}
		sent++;
	}
	if (s != -1)
		close(s);
	close(devnull);
	printf("sent %lld with fds on %lld connections\n", sent, conns);
	fflush(stdout);
}

/* idle and partial: open conns, then wait for the server to close them. */
static void
hold(int conns, int partial, int64_t deadline)
{
	static struct pollfd	 pfd[MAXCONNS];
	unsigned char		 half[IMSG_HEADER_SIZE / 2], buf[4096];
	int64_t			 start, last = 0;
	int			 i, n, open = 0, closed = 0, s;

	memset(half, 0, sizeof(half));
	half[0] = IMSG_CTL_STATUS_REQ;
	for (i = 0; i < conns; i++) {
		pfd[i].fd = -1;
		if ((s = connect_to(0)) == -1)
			continue;
		if (partial && write(s, half, sizeof(half)) == -1)
			warn("write");
		pfd[i].fd = s;
		pfd[i].events = POLLIN;
		open++;
	}
	printf("open %d\n", open);
	fflush(stdout);
	start = now_ms();
	while (closed < open && now_ms() < deadline) {
		if ((n = poll(pfd, conns, 100)) == -1)
			err(2, "poll");
		for (i = 0; n > 0 && i < conns; i++) {
			if (pfd[i].fd == -1 || pfd[i].revents == 0)
				continue;
			if (read(pfd[i].fd, buf, sizeof(buf)) > 0)
				continue;	/* an answer: wait for the close */
			close(pfd[i].fd);
			pfd[i].fd = -1;
			closed++;
			last = now_ms() - start;
		}
	}
	for (i = 0; i < conns; i++)
		if (pfd[i].fd != -1)
			close(pfd[i].fd);
	printf("closed %d of %d, the last after %lld ms\n", closed, open,
	    (long long)last);
	fflush(stdout);
}

/* follow: a follower that never reads what it is sent. */
static void
follow(const char *model, int64_t deadline)
{
	struct imsg_hdr		 hdr;
	struct proto_ctl_model	 cm;
	struct msgw		 w;
	unsigned char		 msg[sizeof(hdr) + sizeof(w.buf)];
	struct pollfd		 pfd;
	int64_t			 start;
	int			 s, closed = 0;

	if ((s = connect_to(0)) == -1)
		exit(1);
	memset(&cm, 0, sizeof(cm));
	if (strlcpy(cm.model, model, sizeof(cm.model)) >= sizeof(cm.model))
		errx(2, "model name too long");
	if (proto_write(&w, FROM_CTL, IMSG_CTL_FOLLOW, &cm, sizeof(cm)) == -1)
		errx(2, "a follow does not write");
	memset(&hdr, 0, sizeof(hdr));
	hdr.type = IMSG_CTL_FOLLOW;
	hdr.len = sizeof(hdr) + w.len;
	memcpy(msg, &hdr, sizeof(hdr));
	memcpy(msg + sizeof(hdr), w.buf, w.len);
	if (write(s, msg, hdr.len) != (ssize_t)hdr.len)
		err(2, "write");
	printf("following\n");
	fflush(stdout);
	start = now_ms();
	/* Its close is seen without reading what waits in the buffer. */
	while (!closed && now_ms() < deadline) {
		pfd.fd = s;
		pfd.events = POLLRDHUP;
		pfd.revents = 0;
		if (poll(&pfd, 1, 100) == -1)
			err(2, "poll");
		closed = (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
	}
	printf("%s after %lld ms\n", closed ? "closed" : "open",
	    (long long)(now_ms() - start));
	fflush(stdout);
	close(s);
}

int
main(int argc, char *argv[])
{
	const char	*mode;
	long long	 count = 1000000;
	int64_t		 deadline;
	int		 ch, conns = 1, seconds = 10;

	while ((ch = getopt(argc, argv, "c:n:t:")) != -1) {
		switch (ch) {
		case 'c':
			conns = numarg(optarg, 1, MAXCONNS, "conns");
			break;
		case 'n':
			count = numarg(optarg, 1, 1LL << 40, "count");
			break;
		case 't':
			seconds = numarg(optarg, 1, 600, "seconds");
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 2)
		usage();
	mode = argv[0];
	if ((strcmp(mode, "follow") == 0) != (argc == 3) || argc > 3)
		usage();
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, argv[1], sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		errx(2, "path too long");
	tool_init();
	deadline = now_ms() + seconds * 1000LL;

	if (strcmp(mode, "flood") == 0)
		flood(count, deadline);
	else if (strcmp(mode, "fds") == 0)
		fds(count, deadline);
	else if (strcmp(mode, "idle") == 0)
		hold(conns, 0, deadline);
	else if (strcmp(mode, "partial") == 0)
		hold(conns, 1, deadline);
	else if (strcmp(mode, "follow") == 0)
		follow(argv[2], deadline);
	else
		usage();
	return (0);
}
