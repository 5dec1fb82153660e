/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * freeport [N]: print N (default 1) TCP ports on 127.0.0.1 that were free
 * a moment ago, one a line, by binding port 0.  The sockets are all held
 * until every port is chosen, so the ports differ.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char *argv[])
{
	struct sockaddr_in	 sin;
	socklen_t		 len;
	const char		*errstr;
	int			*fds, i, n = 1;

	if (argc > 2) {
		fprintf(stderr, "usage: freeport [count]\n");
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
