/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * ssehold [-n] [-b bytes] [-c conns] [-H host] [-l id] [-o dir]
 *     [-t seconds] port path: open conns (default 1) subscriptions to
 * the server-sent events at 127.0.0.1:port path, and hold them for -t
 * seconds (default 10, at most 3600) or until SIGTERM or SIGINT.
 * "ready" is printed once every one has its answer's header; at the end,
 * how many were made, how many the server closed and how many bytes came.
 *
 * -H the Host sent (default 127.0.0.1:port); -l a Last-Event-ID to send;
 * -o dir: what connection i received goes to dir/i, header included.
 * -n: never read (a subscriber that does not read), with -b the receive
 * buffer asked for before connecting, so that the server's queue for it
 * fills soon; whether the server dropped it is the server's to say.
 * Exits 0 when every connection was made and answered 200 (-n: made),
 * 1 otherwise.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numarg.h"
#include "tool.h"

#define MAXCONNS	5000

struct sub {
	int		 fd;
	int		 out;		/* -o's file, or -1 */
	int		 answered;	/* its header came */
	int		 ok;		/* with status 200 */
	int		 closed;	/* by the server */
	char		 head[16];	/* the start of the answer */
	size_t		 headlen;
	uint64_t	 bytes;
};

static volatile sig_atomic_t	 stop;

static void
on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static void
usage(void)
{
	fprintf(stderr, "usage: ssehold [-n] [-b bytes] [-c conns] [-H host] "
	    "[-l id] [-o dir] [-t seconds] port path\n");
	exit(2);
}

/* One subscription: connected, asked; -1 when it could not be made. */
static int
subscribe(struct sub *s, const struct sockaddr_in *sin, int rcvbuf,
    const char *req, size_t reqlen)
{
	int	 fd;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1) {
		warn("socket");
		return (-1);
	}
	if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
	    sizeof(rcvbuf)) == -1)
		warn("SO_RCVBUF");
	if (connect(fd, (const struct sockaddr *)sin, sizeof(*sin)) == -1 ||
	    write(fd, req, reqlen) != (ssize_t)reqlen) {
		warn("connect");
		close(fd);
		return (-1);
	}
	(void)fcntl(fd, F_SETFL, O_NONBLOCK);
	s->fd = fd;
	return (0);
}

/* Read what came; 0 while open, -1 once the server closed it. */
static int
drain(struct sub *s)
{
	char	 buf[16384];
	ssize_t	 n;
	size_t	 k;

	for (;;) {
		if ((n = read(s->fd, buf, sizeof(buf))) == -1)
			return (errno == EAGAIN || errno == EINTR ? 0 : -1);
		if (n == 0)
			return (-1);
		s->bytes += (uint64_t)n;
		if (s->headlen < sizeof(s->head) - 1) {
			k = sizeof(s->head) - 1 - s->headlen;
			if (k > (size_t)n)
				k = (size_t)n;
			memcpy(s->head + s->headlen, buf, k);
			s->headlen += k;
			s->head[s->headlen] = '\0';
		}
		if (!s->answered && s->headlen >= 12) {
			s->answered = 1;
			s->ok = strncmp(s->head, "HTTP/1.1 200", 12) == 0;
		}
		if (s->out != -1 && write(s->out, buf, (size_t)n) != n)
			err(1, "write");
	}
}

int
main(int argc, char *argv[])
{
	struct sockaddr_in	 sin;
	struct sub		*subs;
	struct pollfd		*pfd;
	const char		*host = NULL, *last = NULL, *dir = NULL;
	char			 req[1024], hostbuf[64], path[PATH_MAX];
	int64_t			 end;
	long long		 secs = 10;
	int			 ch, i, conns = 1, noread = 0, rcvbuf = 0;
	int			 made = 0, closed = 0, okcount = 0, ready = 0;
	int			 reqlen, port;
	uint64_t		 bytes = 0;

	while ((ch = getopt(argc, argv, "b:c:H:l:no:t:")) != -1) {
		switch (ch) {
		case 'b':
			rcvbuf = (int)numarg(optarg, 1, 1 << 24, "bytes");
			break;
		case 'c':
			conns = (int)numarg(optarg, 1, MAXCONNS, "conns");
			break;
		case 'H':
			host = optarg;
			break;
		case 'l':
			last = optarg;
			break;
		case 'n':
			noread = 1;
			break;
		case 'o':
			dir = optarg;
			break;
		case 't':
			secs = numarg(optarg, 1, 3600, "seconds");
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 2 || argv[1][0] != '/')
		usage();
	port = (int)numarg(argv[0], 1, 65535, "port");
	tool_init();
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	if (host == NULL) {
		(void)snprintf(hostbuf, sizeof(hostbuf), "127.0.0.1:%d", port);
		host = hostbuf;
	}
	reqlen = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\n"
	    "Accept: text/event-stream\r\n%s%s%s\r\n", argv[1], host,
	    last != NULL ? "Last-Event-ID: " : "", last != NULL ? last : "",
	    last != NULL ? "\r\n" : "");
	if (reqlen < 0 || (size_t)reqlen >= sizeof(req))
		errx(2, "the request is too long");
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((uint16_t)port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

	if ((subs = calloc(conns, sizeof(*subs))) == NULL ||
	    (pfd = calloc(conns, sizeof(*pfd))) == NULL)
		err(1, "calloc");
	for (i = 0; i < conns; i++) {
		subs[i].fd = -1;
		subs[i].out = -1;
		if (dir != NULL) {
			(void)snprintf(path, sizeof(path), "%s/%d", dir, i);
			if ((subs[i].out = open(path, O_WRONLY | O_CREAT |
			    O_TRUNC, 0644)) == -1)
				err(1, "%s", path);
		}
		if (subscribe(&subs[i], &sin, noread ? rcvbuf : 0, req,
		    (size_t)reqlen) == 0)
			made++;
	}
	if (noread && made == conns) {
		printf("ready\n");
		fflush(stdout);
		ready = 1;
	}

	end = now_ms() + secs * 1000;
	while (!stop && now_ms() < end) {
		for (i = 0; i < conns; i++) {
			pfd[i].fd = subs[i].closed || noread ? -1 : subs[i].fd;
			pfd[i].events = POLLIN;
		}
		if (poll(pfd, conns, 100) == -1 && errno != EINTR)
			err(1, "poll");
		for (i = 0; i < conns; i++) {
			if (pfd[i].fd == -1 || pfd[i].revents == 0)
				continue;
			if (drain(&subs[i]) == -1) {
				subs[i].closed = 1;
				closed++;
			}
		}
		if (!ready) {
			for (i = 0; i < conns && subs[i].answered; i++)
				;
			if (i == conns) {
				printf("ready\n");
				fflush(stdout);
				ready = 1;
			}
		}
	}
	for (i = 0; i < conns; i++) {
		bytes += subs[i].bytes;
		okcount += subs[i].ok;
		if (subs[i].fd != -1)
			close(subs[i].fd);
		if (subs[i].out != -1)
			close(subs[i].out);
	}
	printf("made %d closed %d ok %d bytes %llu\n", made, closed, okcount,
	    (unsigned long long)bytes);
	free(subs);
	free(pfd);
	return (made == conns && (noread || okcount == conns) ? 0 : 1);
}
