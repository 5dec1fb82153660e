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
 *   short     a hold request one byte short (its key without its NUL)
 *   unknown   a message of a type agencyd does not know
 *   nostring  a hold request whose model name has no NUL in its bound
 *   flags     a hold request with a flag agencyd does not know
 *   trailing  a hold request with a byte after its last field
 *   range     a load over HTTP of an operation that is none
 *   parent    a message only agencyd sends (a grant)
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
#include "msg.h"
#include "proto.h"

/* A message as a proxy writes it, then cut by one byte (cut -1) or
 * with one more (cut 1). */
static void
put(struct imsgbuf *ibuf, uint32_t type, const void *data, size_t len,
    int cut)
{
	struct msgw	 w;

	if (proto_write(&w, FROM_PROXY, type, data, len) == -1)
		errx(1, "message %u does not write", type);
	if (cut == -1)
		w.len--;
	else if (cut == 1)
		msg_add_bytes(&w, "", 1);
	if (msg_compose(ibuf, type, 0, -1, &w) == -1)
		err(1, "imsg_compose");
}

int
main(int argc, char *argv[])
{
	struct msgw		 w;
	struct proto_hold_grant	 g;
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
	(void)strlcpy(r.model, "m", sizeof(r.model));
	if (strcmp(mode, "release") == 0) {
		memset(&h, 0, sizeof(h));
		h.holdid = 12345;
		put(&ibuf, IMSG_HOLD_RELEASE, &h, sizeof(h), 0);
	} else if (strcmp(mode, "short") == 0) {
		put(&ibuf, IMSG_HOLD_REQ, &r, sizeof(r), -1);
	} else if (strcmp(mode, "unknown") == 0) {
		imsg_compose(&ibuf, IMSG_MAXTYPE + 7, 0, 0, -1, NULL, 0);
	} else if (strcmp(mode, "nostring") == 0) {
		/* as a hold request: its id, then a name that never ends */
		msg_init(&w);
		msg_add_u64(&w, r.reqid);
		for (i = 0; i < (int)sizeof(r.model) + 8; i++)
			msg_add_bytes(&w, "x", 1);
		msg_add_bytes(&w, "", 1);
		msg_add_u32(&w, 0);
		msg_add_str(&w, "");
		msg_compose(&ibuf, IMSG_HOLD_REQ, 0, -1, &w);
	} else if (strcmp(mode, "flags") == 0) {
		/* written as any other: its reader refuses it */
		r.flags = PROTO_HOLD_PROGRESS | 0x80;
		put(&ibuf, IMSG_HOLD_REQ, &r, sizeof(r), 0);
	} else if (strcmp(mode, "trailing") == 0) {
		put(&ibuf, IMSG_HOLD_REQ, &r, sizeof(r), 1);
	} else if (strcmp(mode, "range") == 0) {
		msg_init(&w);
		msg_add_u64(&w, 1);		/* reqid */
		msg_add_i32(&w, ADMIN_STOP + 1);	/* op */
		msg_add_i32(&w, 0);		/* wait */
		msg_add_str(&w, "m");
		msg_compose(&ibuf, IMSG_ADMIN, 0, -1, &w);
	} else if (strcmp(mode, "parent") == 0) {
		memset(&g, 0, sizeof(g));
		g.reqid = g.holdid = 1;
		g.port = 5800;
		if (proto_write(&w, FROM_PARENT, IMSG_HOLD_GRANT, &g,
		    sizeof(g)) == -1)
			errx(1, "the grant does not write");
		msg_compose(&ibuf, IMSG_HOLD_GRANT, 0, -1, &w);
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
