/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * freeport [N]: print N (default 1) TCP ports on 127.0.0.1 that were free
 * a moment ago, one a line, by binding port 0.  The sockets are all held
 * until every port is chosen, so the ports differ.
 *
 * freeport -b N: print the first of N consecutive ports that were all
 * free a moment ago, chosen at random below the kernel's ephemeral range
 * (net.ipv4.ip_local_port_range), for a model port range: the source
 * ports of the suite's own connections (clients, the proxy's upstream
 * connections) come from the ephemeral range and would otherwise make
 * ports of a small model range taken now and then.  Checked as agencyd
 * checks a model port: bound with SO_REUSEADDR, so TIME-WAIT is free.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BLOCK_LOW	10000	/* the lowest port a block may start at */

/* The first port of the kernel's ephemeral range, 32768 by default. */
static int
ephemeral_low(void)
{
	FILE	*f;
	int	 lo = 32768, hi;

	if ((f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) !=
	    NULL) {
		if (fscanf(f, "%d %d", &lo, &hi) != 2)
			lo = 32768;
		fclose(f);
	}
	return (lo);
}

static int
port_free(int port)
{
	struct sockaddr_in	 sin;
	int			 s, ok, one = 1;

	if ((s = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		err(1, "socket");
	(void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	ok = bind(s, (struct sockaddr *)&sin, sizeof(sin)) == 0;
	close(s);
	return (ok);
}

static int
block(int n)
{
	int	 hi, tries, p, i;

	hi = ephemeral_low() - n;
	if (hi <= BLOCK_LOW)
		errx(1, "no room below the ephemeral range");
	for (tries = 0; tries < 1000; tries++) {
		p = BLOCK_LOW + (int)arc4random_uniform(hi - BLOCK_LOW);
		for (i = 0; i < n; i++)
			if (!port_free(p + i))
				break;
		if (i == n) {
			printf("%d\n", p);
			return (0);
		}
	}
	errx(1, "no %d free ports in a row", n);
}

int
main(int argc, char *argv[])
{
	struct sockaddr_in	 sin;
	socklen_t		 len;
	const char		*errstr;
	int			*fds, i, n = 1;

	if (argc == 3 && strcmp(argv[1], "-b") == 0) {
		n = strtonum(argv[2], 1, 1000, &errstr);
		if (errstr != NULL)
			errx(1, "count is %s: %s", errstr, argv[2]);
		return (block(n));
	}
	if (argc > 2) {
		fprintf(stderr, "usage: freeport [count] | -b count\n");
		return (1);
	}
	if (argc == 2) {
		n = strtonum(argv[1], 1, 64, &errstr);
		if (errstr != NULL)
			errx(1, "count is %s: %s", errstr, argv[1]);
	}
	if ((fds = calloc(n, sizeof(*fds))) == NULL)
		err(1, NULL);
	for (i = 0; i < n; i++) {
		if ((fds[i] = socket(AF_INET, SOCK_STREAM, 0)) == -1)
			err(1, "socket");
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		if (bind(fds[i], (struct sockaddr *)&sin, sizeof(sin)) == -1)
			err(1, "bind");
		len = sizeof(sin);
		if (getsockname(fds[i], (struct sockaddr *)&sin, &len) == -1)
			err(1, "getsockname");
		printf("%u\n", ntohs(sin.sin_port));
	}
	for (i = 0; i < n; i++)
		close(fds[i]);
	free(fds);
	return (0);
}
