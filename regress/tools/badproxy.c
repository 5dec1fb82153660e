/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * badproxy: stands in for agency-proxy (agencyd -P) and misbehaves on
 * the socketpair, so a test can see agencyd treat it as hostile.  The
 * mode is the first line of ./badproxy.mode (agencyd gives the proxy no
 * environment of its own).  It appends its pid to ./badproxy.starts,
 * reads the configuration up to IMSG_CONF_END, sends what the mode says,
 * then waits for agencyd to act.
 *
 *   release   a release of a hold it was never granted
 *   short     a hold request one byte short
 *   unknown   a message of a type agencyd does not know
 *   nostring  a hold request whose model name has no NUL
 *   flags     a hold request with a flag agencyd does not know
 */
#include <sys/types.h>

#include <err.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imsg.h"
#include "proto.h"

int
main(int argc, char *argv[])
{
	struct imsgbuf		 ibuf;
	struct imsg		 imsg;
	struct proto_holdid	 h;
	struct proto_hold_req	 r;
	struct pollfd		 pfd;
	FILE			*f;
	ssize_t			 n;
	int			 done = 0, i;
	char			 mode[64] = "release";

	/* agencyd gives the proxy's options; the mode comes by file. */
	(void)argc;
	(void)argv;
	if ((f = fopen("badproxy.mode", "r")) != NULL) {
		if (fgets(mode, sizeof(mode), f) == NULL)
			(void)strlcpy(mode, "release", sizeof(mode));
		mode[strcspn(mode, "\n")] = '\0';
		fclose(f);
	}
	if ((f = fopen("badproxy.starts", "a")) != NULL) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
	imsg_init(&ibuf, 3);
	while (!done) {
		if ((n = imsg_read(&ibuf)) == -1 && errno != EAGAIN)
			err(1, "imsg_read");
		if (n == 0)
			exit(0);
		while (!done && (n = imsg_get(&ibuf, &imsg)) > 0) {
			if (imsg_get_type(&imsg) == IMSG_CONF_END)
				done = 1;
			imsg_free(&imsg);
		}
		if (n == -1)
			err(1, "imsg_get");
	}

	memset(&r, 0, sizeof(r));
	r.reqid = 1;
	if (strcmp(mode, "release") == 0) {
		memset(&h, 0, sizeof(h));
		h.holdid = 12345;
		imsg_compose(&ibuf, IMSG_HOLD_RELEASE, 0, 0, -1, &h, sizeof(h));
	} else if (strcmp(mode, "short") == 0) {
		(void)strlcpy(r.model, "m", sizeof(r.model));
		imsg_compose(&ibuf, IMSG_HOLD_REQ, 0, 0, -1, &r, sizeof(r) - 1);
	} else if (strcmp(mode, "unknown") == 0) {
		imsg_compose(&ibuf, IMSG_MAXTYPE + 7, 0, 0, -1, NULL, 0);
	} else if (strcmp(mode, "nostring") == 0) {
		for (i = 0; i < (int)sizeof(r.model); i++)
			r.model[i] = 'x';
		imsg_compose(&ibuf, IMSG_HOLD_REQ, 0, 0, -1, &r, sizeof(r));
	} else if (strcmp(mode, "flags") == 0) {
		(void)strlcpy(r.model, "m", sizeof(r.model));
		r.flags = PROTO_HOLD_PROGRESS | 0x80;
		imsg_compose(&ibuf, IMSG_HOLD_REQ, 0, 0, -1, &r, sizeof(r));
	} else
		errx(2, "unknown mode %s", mode);
	if (imsg_flush(&ibuf) == -1)
		err(1, "imsg_flush");

	/* agencyd should kill us; EOF or 30 s, whichever comes first. */
	pfd.fd = 3;
	pfd.events = POLLIN;
	for (i = 0; i < 300; i++) {
		if (poll(&pfd, 1, 100) == 1 && read(3, &h, sizeof(h)) <= 0)
			exit(0);
	}
	exit(0);
}
