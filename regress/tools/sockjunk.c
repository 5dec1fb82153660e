/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * sockjunk [-c clients] [-n bytes] [-H] path: connect to a unix socket
 * (clients at once, default 1), write garbage (bytes of random data, or
 * with -H an imsg header claiming a huge length), then wait up to 5 s
 * for the server to close each connection.  Prints how many were closed
 * by the server and exits 0 only when every one was.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <err.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "numarg.h"

#define MAXCLIENTS	1000

static void
usage(void)
{
	fprintf(stderr, "usage: sockjunk [-H] [-c clients] [-n bytes] path\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	struct sockaddr_un	 sun;
	struct pollfd		*pfd;
	unsigned char		*junk, buf[512];
	uint32_t		 hdr[5];
	int			 ch, i, n = 4096, clients = 1, header = 0;
	int			 closed = 0, left, s;

	while ((ch = getopt(argc, argv, "c:Hn:")) != -1) {
		switch (ch) {
		case 'c':
			clients = numarg(optarg, 1, MAXCLIENTS, "clients");
			break;
		case 'H':
			header = 1;
			break;
		case 'n':
			n = numarg(optarg, 1, 1 << 24, "bytes");
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 1)
		usage();

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, argv[optind], sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		errx(2, "path too long");
	if ((junk = malloc(n)) == NULL ||
	    (pfd = calloc(clients, sizeof(*pfd))) == NULL)
		err(2, NULL);
	arc4random_buf(junk, n);
	/* type, len, peerid, pid, flags: a length far over any maximum */
	hdr[0] = 1;
	hdr[1] = 0x7fffffff;
	hdr[2] = hdr[3] = hdr[4] = 0;

	for (i = 0; i < clients; i++) {
		if ((s = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
			err(2, "socket");
		if (connect(s, (struct sockaddr *)&sun, sizeof(sun)) == -1)
			err(2, "connect %s", sun.sun_path);
		if (header) {
			if (write(s, hdr, sizeof(hdr)) == -1)
				warn("write");
		} else if (write(s, junk, n) == -1 && errno != EPIPE &&
		    errno != ECONNRESET)
			warn("write");
		pfd[i].fd = s;
		pfd[i].events = POLLIN;
	}

	/* Wait for each to be closed by the server, 5 s at the most. */
	for (left = clients; left > 0; ) {
		if ((ch = poll(pfd, clients, 5000)) == -1)
			err(2, "poll");
		if (ch == 0)
			break;
		for (i = 0; i < clients; i++) {
			if (pfd[i].fd == -1 || pfd[i].revents == 0)
				continue;
			ch = read(pfd[i].fd, buf, sizeof(buf));
			if (ch > 0)
				continue;	/* an answer; wait for the close */
			close(pfd[i].fd);
			pfd[i].fd = -1;
			closed++;
			left--;
		}
	}
	for (i = 0; i < clients; i++)
		if (pfd[i].fd != -1)
			close(pfd[i].fd);
	free(pfd);
	free(junk);
	printf("%d of %d closed by the server\n", closed, clients);
	return (closed == clients ? 0 : 1);
}
