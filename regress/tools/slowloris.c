/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * slowloris [-br] [-c conns] [-H size] [-i ms] [-k key] [-P count]
 *     [-s size] [-T cafile] [-t seconds] [-u path] port:
 * open conns
 * (default 500) connections to 127.0.0.1:port and send, on each, one
 * byte of a request's header every -i ms (default 1000), never finishing
 * the header, for -t seconds (default 10, at most 600); then close them
 * all and print how many connections were made, how many the server
 * closed before the end and how many bytes were sent.  Exits 0 when
 * every connection was made (the server closing them is the server's
 * right).
 *
 * -b: the header is sent whole at once, with a Content-Length of size
 * bytes (-s, default 1 MB), and the body is what comes a byte at a
 * time; with -k, the header carries the API key key.
 * -r: a connection the server closed is made again at the next byte's
 * time, so that conns stay open all along (made counts them all).
 * -H: the header's first size bytes (a long field) are sent at once,
 * and the rest of that field a byte at a time.
 * -P: count whole requests (GET /v1/models, with the key of -k) are
 * sent at once, pipelined, and nothing after them; their answers are
 * read.
 * -T: over TLS, trusting the CA certificate in cafile (the server's
 * name: localhost).  -u: to the Unix socket at path instead of
 * 127.0.0.1:port (port is still the Host header's).
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <tls.h>
#include <unistd.h>

#include "numarg.h"
#include "tool.h"

#define MAXCONNS	20000

static void
usage(void)
{
	fprintf(stderr, "usage: slowloris [-br] [-c conns] [-H size] "
	    "[-i ms] [-k key] [-P count] [-s size] [-T cafile] "
	    "[-t seconds] [-u path] port\n");
	exit(2);
}

static struct sockaddr_in	 inaddr;
static struct sockaddr_un	 sun;		/* -u: sun_path set */
static struct tls_config	*tlsconf;	/* -T */
static struct tls		**tlss;		/* each connection's, -T */

/* Send all of len bytes on connection i: 0, or -1. */
static int
slow_send(int fd, int i, const char *p, size_t len)
{
	ssize_t	 n;

	if (tlss == NULL)
		return (send(fd, p, len, MSG_NOSIGNAL) == (ssize_t)len ? 0 :
		    -1);
	while (len > 0) {
		n = tls_write(tlss[i], p, len);
		if (n == TLS_WANT_POLLIN || n == TLS_WANT_POLLOUT)
			continue;
		if (n < 0)
			return (-1);
		p += n;
		len -= n;
	}
	return (0);
}

/* Read what connection i has: > 0; -2, nothing yet (a TLS record
 * that was not data, or not all here); 0 at its end or on an error. */
static ssize_t
slow_read(int fd, int i, char *buf, size_t len)
{
	ssize_t	 n;

	if (tlss == NULL)
		return (read(fd, buf, len));
	n = tls_read(tlss[i], buf, len);
	if (n == TLS_WANT_POLLIN || n == TLS_WANT_POLLOUT)
		return (-2);
	return (n < 0 ? 0 : n);
}

static void
slow_close(int fd, int i)
{
	if (tlss != NULL && tlss[i] != NULL) {
		tls_free(tlss[i]);
		tlss[i] = NULL;
	}
	close(fd);
}

/* Connection i, made anew, with its header when the body is what
 * trickles. */
static int
slow_connect(int i, const char *head, size_t hlen)
{
	int	 fd;

	if (sun.sun_path[0] == '\0')
		fd = tool_connect(&inaddr, 0);
	else if ((fd = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
		warn("socket");
	else if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		warn("connect");
		close(fd);
		fd = -1;
	}
	if (fd == -1)
		return (-1);
	if (tlss != NULL && ((tlss[i] = tls_client()) == NULL ||
	    tls_configure(tlss[i], tlsconf) == -1 ||
	    tls_connect_socket(tlss[i], fd, "localhost") == -1 ||
	    tls_handshake(tlss[i]) == -1)) {
		warnx("tls: %s", tlss[i] != NULL ? tls_error(tlss[i]) :
		    "tls_client");
		slow_close(fd, i);
		return (-1);
	}
	if (hlen > 0 && slow_send(fd, i, head, hlen) == -1) {
		warn("send");
		slow_close(fd, i);
		return (-1);
	}
	/* a TLS read never waits for a record that is not all here */
	if (tlss != NULL && fcntl(fd, F_SETFL, O_NONBLOCK) == -1)
		warn("fcntl");
	return (fd);
}

int
main(int argc, char *argv[])
{
	static const char	 filler[] = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	struct pollfd		*pfd;
	size_t			*off, hlen = 0;
	char			*head = NULL, req[1024], buf[512];
	const char		*trickle;
	int64_t			 t0, end, tick;
	long			 sent = 0;
	ssize_t			 r;
	int			 ch, conns = 500, interval = 1000, seconds = 10;
	int			 i, made = 0, closed = 0, failed = 0, n, port;
	int			 body = 0, again = 0, size = 1048576;
	int			 hsize = 0, pipelined = 0;
	size_t			 one;
	char			 auth[160] = "";

	while ((ch = getopt(argc, argv, "bc:H:i:k:P:rs:T:t:u:")) != -1) {
		switch (ch) {
		case 'b':
			body = 1;
			break;
		case 'c':
			conns = numarg(optarg, 1, MAXCONNS, "conns");
			break;
		case 'H':
			hsize = numarg(optarg, 1, 1 << 20, "size");
			break;
		case 'P':
			pipelined = numarg(optarg, 1, 100000, "count");
			break;
		case 'i':
			interval = numarg(optarg, 10, 60000, "interval");
			break;
		case 'k':
			if ((size_t)snprintf(auth, sizeof(auth),
			    "Authorization: Bearer %s\r\n", optarg) >=
			    sizeof(auth))
				errx(2, "the key is too long");
			break;
		case 'r':
			again = 1;
			break;
		case 's':
			size = numarg(optarg, 1, 1 << 30, "size");
			break;
		case 'T':
			if ((tlsconf = tls_config_new()) == NULL ||
			    tls_config_set_ca_file(tlsconf, optarg) == -1)
				errx(2, "the CA file %s", optarg);
			break;
		case 't':
			seconds = numarg(optarg, 1, 600, "seconds");
			break;
		case 'u':
			sun.sun_family = AF_UNIX;
			if (strlcpy(sun.sun_path, optarg,
			    sizeof(sun.sun_path)) >= sizeof(sun.sun_path))
				errx(2, "the path is too long");
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 1)
		usage();
	port = numarg(argv[optind], 1, 65535, "port");
	memset(&inaddr, 0, sizeof(inaddr));
	inaddr.sin_family = AF_INET;
	inaddr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	inaddr.sin_port = htons(port);
	if (body) {
		if ((head = malloc(512)) == NULL)
			err(2, NULL);
		hlen = snprintf(head, 512, "POST /v1/chat/completions "
		    "HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: "
		    "application/json\r\n%sContent-Length: %d\r\n\r\n",
		    port, auth, size);
		trickle = filler;
	} else if (pipelined) {
		one = snprintf(req, sizeof(req), "GET /v1/models HTTP/1.1\r\n"
		    "Host: 127.0.0.1:%d\r\n%s\r\n", port, auth);
		if ((head = calloc(pipelined, one)) == NULL)
			err(2, NULL);
		for (i = 0; i < pipelined; i++)
			memcpy(head + i * one, req, one);
		hlen = (size_t)pipelined * one;
		trickle = "";
	} else if (hsize > 0) {
		if ((head = malloc(hsize + 256)) == NULL)
			err(2, NULL);
		hlen = snprintf(head, 256, "POST /v1/chat/completions "
		    "HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: "
		    "application/json\r\nX-Slow: ", port);
		memset(head + hlen, 'a', hsize);
		hlen += hsize;
		trickle = filler;
	} else {
		(void)snprintf(req, sizeof(req), "POST /v1/chat/completions "
		    "HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: "
		    "application/json\r\nX-Slow: %s", port, filler);
		trickle = req;
	}
	tool_init();
	if ((pfd = calloc(conns, sizeof(*pfd))) == NULL ||
	    (off = calloc(conns, sizeof(*off))) == NULL ||
	    (tlsconf != NULL && (tlss = calloc(conns, sizeof(*tlss))) == NULL))
		err(2, NULL);

	t0 = now_ms();
	end = t0 + (int64_t)seconds * 1000;
	for (i = 0; i < conns; i++) {
		if ((pfd[i].fd = slow_connect(i, head, hlen)) == -1) {
			failed++;
			continue;
		}
		made++;
		pfd[i].events = POLLIN;
	}
	printf("%d connections made in %lld ms\n", made,
	    (long long)(now_ms() - t0));
	fflush(stdout);

	/* A byte on each every interval; notice the server's closes. */
	for (tick = now_ms(); now_ms() < end; ) {
		if (now_ms() >= tick) {
			for (i = 0; i < conns; i++) {
				if (pfd[i].fd == -1 && again) {
					off[i] = 0;
					pfd[i].fd = slow_connect(i, head,
					    hlen);
					if (pfd[i].fd == -1)
						failed++;
					else
						made++;
				}
				if (pfd[i].fd == -1 ||
				    trickle[off[i]] == '\0')
					continue;
				if (slow_send(pfd[i].fd, i, trickle + off[i],
				    1) == 0) {
					off[i]++;
					sent++;
				}
			}
			tick += interval;
		}
		n = poll(pfd, conns, (int)(tick - now_ms() > 0 ?
		    tick - now_ms() : 0));
		if (n == -1 && errno != EINTR)
			err(2, "poll");
		for (i = 0; n > 0 && i < conns; i++) {
			if (pfd[i].fd == -1 || pfd[i].revents == 0)
				continue;
			r = slow_read(pfd[i].fd, i, buf, sizeof(buf));
			if (r > 0 || r == -2)
				continue;	/* an answer: wait for the close */
			slow_close(pfd[i].fd, i);
			pfd[i].fd = -1;
			closed++;
		}
	}
	for (i = 0; i < conns; i++)
		if (pfd[i].fd != -1)
			slow_close(pfd[i].fd, i);
	printf("%d connections made, %d failed, %d closed by the server, "
	    "%ld bytes sent in %lld ms\n", made, failed, closed, sent,
	    (long long)(now_ms() - t0));
	free(pfd);
	free(off);
	free(tlss);
	tls_config_free(tlsconf);
	free(head);
	return (failed == 0 ? 0 : 1);
}
