/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * bigbody [-c conns] [-m model] [-p ms] [-s bytes] [-t seconds]
 *     [-w seconds] port: on conns connections at once (default 40), POST
 * chat completions whose bodies are bytes long (default 15 MB) to
 * 127.0.0.1:port as fast as the server takes them, one a connection
 * ("Connection: close"), each followed by a new one -p ms (default 20)
 * after the server closed it, for -t seconds (default 5, at most 600).
 * Then, for at most -w seconds (default 0), no new connection, and the
 * requests in flight are finished and answered (an admitted body makes
 * a round trip of its size twice through the server: on a loaded
 * machine, longer than the flood may last).  Then print how many
 * answers came by status ("none" when the connection closed without
 * one; those still open at the end count as "open") and how many bytes
 * were sent.  For the tests of the front door's bound on the request
 * bytes it keeps.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numarg.h"
#include "tool.h"

#define MAXCONNS	1000
#define WRITE_MAX	(256 * 1024)	/* a write, so that an answer that
					 * came stops the rest soon */

struct bconn {
	size_t		 off;		/* of the request, sent */
	char		 line[16];	/* the start of the answer */
	size_t		 got;
	int64_t		 next;		/* when to connect again */
};

static void
usage(void)
{
	fprintf(stderr, "usage: bigbody [-c conns] [-m model] [-p ms] "
	    "[-s bytes] [-t seconds] [-w seconds] port\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	struct sockaddr_in	 sin;
	struct pollfd		*pfd;
	struct bconn		*bc;
	const char		*model = "m";
	char			*req, buf[65536];
	size_t			 size = 15 << 20, hlen, len, pre;
	uint64_t		 ok = 0, busy = 0, big = 0, other = 0, none = 0;
	uint64_t		 sent = 0, left = 0;
	int64_t			 end, drain, now;
	ssize_t			 n;
	int			 ch, conns = 40, pause = 20, seconds = 5, port;
	int			 i, status, wait = 0, inflight;

	while ((ch = getopt(argc, argv, "c:m:p:s:t:w:")) != -1) {
		switch (ch) {
		case 'c':
			conns = numarg(optarg, 1, MAXCONNS, "conns");
			break;
		case 'm':
			model = optarg;
			break;
		case 'p':
			pause = numarg(optarg, 0, 60000, "pause");
			break;
		case 's':
			size = numarg(optarg, 256, 1 << 30, "bytes");
			break;
		case 't':
			seconds = numarg(optarg, 1, 600, "seconds");
			break;
		case 'w':
			wait = numarg(optarg, 0, 600, "seconds");
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 1 || strlen(model) > 100)
		usage();
	port = numarg(argv[optind], 1, 65535, "port");
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	tool_init();

	/* The request: a header, and a chat body of exactly size bytes. */
	if ((req = malloc(size + 512)) == NULL)
		err(2, NULL);
	hlen = snprintf(req, 512, "POST /v1/chat/completions HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\nConnection: close\r\n\r\n", port, size);
	pre = snprintf(req + hlen, 256, "{\"model\":\"%s\",\"max_tokens\":1,"
	    "\"messages\":[{\"role\":\"user\",\"content\":\"", model);
	if (pre + 4 > size)
		errx(2, "-s %zu is too small for a body", size);
	memset(req + hlen + pre, 'a', size - pre - 4);
	memcpy(req + hlen + size - 4, "\"}]}", 4);
	len = hlen + size;

	if ((pfd = calloc(conns, sizeof(*pfd))) == NULL ||
	    (bc = calloc(conns, sizeof(*bc))) == NULL)
		err(2, NULL);
	for (i = 0; i < conns; i++)
		pfd[i].fd = -1;
	end = now_ms() + (int64_t)seconds * 1000;
	drain = end + (int64_t)wait * 1000;
	inflight = 0;
	while ((now = now_ms()) < end || (now < drain && inflight > 0)) {
		for (i = 0; i < conns && now < end; i++) {
			if (pfd[i].fd != -1 || now < bc[i].next)
				continue;
			memset(&bc[i], 0, sizeof(bc[i]));
			pfd[i].fd = tool_connect(&sin, SOCK_NONBLOCK);
			pfd[i].events = POLLIN | POLLOUT;
			if (pfd[i].fd != -1)
				inflight++;
		}
		if (poll(pfd, conns, 10) == -1 && errno != EINTR)
			err(2, "poll");
		for (i = 0; i < conns; i++) {
			if (pfd[i].fd == -1 || pfd[i].revents == 0)
				continue;
			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR))) {
				if (!(pfd[i].revents & POLLOUT) ||
				    bc[i].off == len)
					continue;
				n = write(pfd[i].fd, req + bc[i].off,
				    len - bc[i].off > WRITE_MAX ? WRITE_MAX :
				    len - bc[i].off);
				if (n > 0) {
					bc[i].off += n;
					sent += n;
				}
				if (bc[i].off == len)
					pfd[i].events = POLLIN;
				continue;
			}
			n = read(pfd[i].fd, buf, sizeof(buf));
			if (n == -1 && (errno == EAGAIN || errno == EINTR))
				continue;
			if (n > 0) {
				if (bc[i].got < sizeof(bc[i].line) - 1) {
					size_t	 k = sizeof(bc[i].line) - 1 -
					    bc[i].got;

					if ((size_t)n < k)
						k = n;
					memcpy(bc[i].line + bc[i].got, buf, k);
					bc[i].got += k;
				}
				/* answered: send no more of it */
				pfd[i].events = POLLIN;
				continue;
			}
			/* the server closed it (or reset it): count it */
			status = 0;
			if (bc[i].got >= 12)
				(void)sscanf(bc[i].line, "HTTP/1.%*d %d",
				    &status);
			if (status == 200)
				ok++;
			else if (status == 503)
				busy++;
			else if (status == 413)
				big++;
			else if (status == 0)
				none++;
			else
				other++;
			close(pfd[i].fd);
			pfd[i].fd = -1;
			bc[i].next = now_ms() + pause;
			inflight--;
		}
	}
	for (i = 0; i < conns; i++)
		if (pfd[i].fd != -1) {
			close(pfd[i].fd);
			left++;
		}
	printf("answers: 200=%llu 503=%llu 413=%llu other=%llu none=%llu "
	    "open=%llu; %llu MB sent\n", (unsigned long long)ok,
	    (unsigned long long)busy, (unsigned long long)big,
	    (unsigned long long)other, (unsigned long long)none,
	    (unsigned long long)left, (unsigned long long)(sent >> 20));
	free(req);
	free(pfd);
	free(bc);
	return (0);
}
