/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * rawhttp [-r bytes] [-t ms] port: send standard input as it is to
 * 127.0.0.1:port, then print all that comes back until the server closes
 * the connection, followed by a last line "<closed>", or "<timeout>" when
 * nothing more came for ms milliseconds (default 3000).  For the tests of
 * what the front door does with bytes that curl would not send:
 * pipelined requests, HTTP/1.0, chunked bodies, malformed requests.
 *
 * -r sets the socket's receive buffer (SO_RCVBUF) before connecting: a
 * small one keeps what the server writes in the server's send queue
 * while rawhttp is still sending, where a reset would destroy it.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <err.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numarg.h"

static void
usage(void)
{
	fprintf(stderr, "usage: rawhttp [-r bytes] [-t ms] port\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	struct sockaddr_in	 sin;
	struct pollfd		 pfd;
	char			 buf[65536];
	size_t			 len = 0;
	ssize_t			 n, w;
	int			 ch, fd, ms = 3000, rcvbuf = 0;

	while ((ch = getopt(argc, argv, "r:t:")) != -1) {
		switch (ch) {
		case 'r':
			rcvbuf = numarg(optarg, 1, 1 << 24, "receive buffer");
			break;
		case 't':
			ms = numarg(optarg, 1, 600000, "timeout");
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 1)
		usage();

	/* a write the server refused: read its answer, not die */
	signal(SIGPIPE, SIG_IGN);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(numarg(argv[0], 1, 65535, "port"));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		err(1, "socket");
	if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf,
	    sizeof(rcvbuf)) == -1)
		err(1, "SO_RCVBUF");
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		err(1, "connect");

	/* All of standard input, in as few writes as it comes in. */
	while ((n = read(STDIN_FILENO, buf, sizeof(buf))) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			err(1, "read");
		}
		for (len = 0; len < (size_t)n; len += w)
			if ((w = write(fd, buf + len, n - len)) == -1) {
				if (errno == EINTR) {
					w = 0;
					continue;
				}
				/* refused mid-request: read the answer */
				goto out;
			}
	}
 out:
	pfd.fd = fd;
	pfd.events = POLLIN;
	for (;;) {
		if ((n = poll(&pfd, 1, ms)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "poll");
		}
		if (n == 0) {
			printf("\n<timeout>\n");
			break;
		}
		if ((n = read(fd, buf, sizeof(buf))) == -1) {
			if (errno == EINTR)
				continue;
			if (errno == ECONNRESET) {
				printf("\n<closed>\n");
				break;
			}
			err(1, "read");
		}
		if (n == 0) {
			printf("\n<closed>\n");
			break;
		}
		fwrite(buf, 1, n, stdout);
	}
	close(fd);
	return (0);
}
