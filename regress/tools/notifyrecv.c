/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * notifyrecv [-H port] path: play the service manager's end of
 * sd_notify(3).  Bind a unix datagram socket at path and print every
 * field of every message as "PID FIELD=VALUE", PID being the sender's
 * as the kernel tells it (SO_PASSCRED), so a test sees who spoke.
 *
 * With -H, on each READY=1 ask GET /health of 127.0.0.1:port right
 * away, with a short deadline, and print "PID health STATUS" (0: no
 * answer), so a test sees whether the front door served when READY=1
 * was sent.  Runs until killed.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>

#include <netinet/in.h>

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HEALTH_TIMEOUT	300	/* ms */

static void		usage(void) __attribute__((__noreturn__));
static int		health(uint16_t);

static void
usage(void)
{
	fprintf(stderr, "usage: notifyrecv [-H port] path\n");
	exit(1);
}

/* The status code of GET /health, or 0. */
static int
health(uint16_t port)
{
	struct sockaddr_in	 sin;
	struct timeval		 tv;
	char			 buf[512];
	const char		 req[] = "GET /health HTTP/1.0\r\n"
				    "Host: 127.0.0.1\r\n\r\n";
	ssize_t			 n;
	size_t			 got = 0;
	int			 s, code = 0;

	if ((s = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return (0);
	tv.tv_sec = 0;
	tv.tv_usec = HEALTH_TIMEOUT * 1000;
	(void)setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	(void)setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if (connect(s, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    write(s, req, sizeof(req) - 1) != (ssize_t)(sizeof(req) - 1))
		goto done;
	while (got < sizeof(buf) - 1 &&
	    (n = read(s, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += n;
	buf[got] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &code) != 1)
		code = 0;
 done:
	close(s);
	return (code);
}

int
main(int argc, char *argv[])
{
	struct sockaddr_un	 sun;
	struct msghdr		 msg;
	struct iovec		 iov;
	struct cmsghdr		*cmsg;
	struct ucred		 cred;
	union {
		struct cmsghdr	 hdr;
		char		 buf[CMSG_SPACE(sizeof(struct ucred))];
	}			 cbuf;
	char			 buf[4096], *line, *next;
	const char		*errstr;
	ssize_t			 n;
	uint16_t		 port = 0;
	int			 ch, s, on = 1;
	long			 pid;

	while ((ch = getopt(argc, argv, "H:")) != -1) {
		switch (ch) {
		case 'H':
			port = strtonum(optarg, 1, 65535, &errstr);
			if (errstr != NULL)
				errx(1, "port is %s: %s", errstr, optarg);
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc != 1)
		usage();

	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, argv[0], sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		errx(1, "path too long: %s", argv[0]);
	if ((s = socket(AF_UNIX, SOCK_DGRAM, 0)) == -1)
		err(1, "socket");
	(void)unlink(argv[0]);
	if (bind(s, (struct sockaddr *)&sun, sizeof(sun)) == -1)
		err(1, "bind %s", argv[0]);
	if (setsockopt(s, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) == -1)
		err(1, "SO_PASSCRED");

	for (;;) {
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf) - 1;
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cbuf.buf;
		msg.msg_controllen = sizeof(cbuf.buf);
		if ((n = recvmsg(s, &msg, 0)) == -1)
			err(1, "recvmsg");
		buf[n] = '\0';
		pid = 0;
		for (cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL;
		    cmsg = CMSG_NXTHDR(&msg, cmsg)) {
			if (cmsg->cmsg_level == SOL_SOCKET &&
			    cmsg->cmsg_type == SCM_CREDENTIALS &&
			    cmsg->cmsg_len == CMSG_LEN(sizeof(cred))) {
				memcpy(&cred, CMSG_DATA(cmsg), sizeof(cred));
				pid = cred.pid;
			}
		}
		for (line = buf; line != NULL && *line != '\0'; line = next) {
			if ((next = strchr(line, '\n')) != NULL)
				*next++ = '\0';
			printf("%ld %s\n", pid, line);
			if (port != 0 && strcmp(line, "READY=1") == 0)
				printf("%ld health %d\n", pid, health(port));
		}
	}
}
