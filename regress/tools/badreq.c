/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * badreq [-v] [-c conns] [-n count] [-s seed] [-t ms] [-m model] port:
 * send count malformed HTTP requests to 127.0.0.1:port, conns (default
 * 32) connections at a time, each request on its own connection, and
 * classify each answer.  The requests are made deterministically from
 * seed and their index (so a failing index can be sent again alone with
 * -s SEED -n 1 -i INDEX): random bytes, truncated bodies, huge headers,
 * invalid UTF-8 in JSON, deep JSON nesting, wrong Content-Lengths, bad
 * chunked framing, bad request lines, pipelined garbage.
 *
 * An answer is "4xx" when every status line received is 4xx (or 501 or
 * 505, the refusals of a transfer coding or an HTTP version), "closed"
 * when the server closed (or reset) the connection without a status
 * line, and OTHER otherwise: a 2xx, 3xx or 5xx status line, or nothing
 * before the per-connection deadline (-t, default 5000 ms), or a
 * connection that could not be made.  Prints the counts, by kind with
 * -v (and each OTHER with its first line), and exits 0 only when OTHER
 * is 0.
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "numarg.h"
#include "tool.h"

#define MAXCONNS	512
#define NITEMS(a)	(sizeof(a) / sizeof((a)[0]))
#define INMAX		(64 * 1024)

enum kind {
	K_RANDOM,		/* random bytes */
	K_RANDOM_HEADERS,	/* a request line, then random header bytes */
	K_TRUNC_BODY,		/* Content-Length N, fewer bytes, EOF */
	K_HUGE_HEADER,		/* one header line of 70-200 KB */
	K_MANY_HEADERS,		/* thousands of headers */
	K_BAD_UTF8_MODEL,	/* invalid UTF-8 in the model name */
	K_BAD_UTF8_CONTENT,	/* invalid UTF-8 in a message, served model */
	K_DEEP_ARRAY,		/* up to 100k '[' */
	K_DEEP_OBJECT,		/* up to 50k '{"a":' */
	K_BAD_CL,		/* Content-Length not a number, negative, huge */
	K_CL_SHORT,		/* Content-Length shorter than the body */
	K_CL_LONG,		/* Content-Length longer than the body, EOF */
	K_BAD_CHUNKED,		/* Transfer-Encoding: chunked, bad framing */
	K_BAD_LINE,		/* bad method, version, or a huge target */
	K_NOT_JSON,		/* random bytes as a JSON body */
	K_PIPELINE,		/* several bad requests, then garbage */
	K_NKINDS
};

static const char *kindname[K_NKINDS] = {
	"random", "random-headers", "truncated-body", "huge-header",
	"many-headers", "bad-utf8-model", "bad-utf8-content", "deep-array",
	"deep-object", "bad-content-length", "content-length-short",
	"content-length-long", "bad-chunked", "bad-request-line",
	"not-json", "pipelined-garbage"
};

enum outcome { O_4XX, O_CLOSED, O_2XX, O_3XX, O_5XX, O_TIMEOUT,
    O_CONNECT, O_BADLINE, O_NOUTCOMES };

static const char *outname[O_NOUTCOMES] = {
	"4xx", "closed", "2xx", "3xx", "5xx", "timeout", "connect-failed",
	"unparsable"
};

struct buf {
	char	*p;
	size_t	 len, cap;
};

struct slot {
	int		 fd;
	int		 index;
	enum kind	 kind;
	int		 eof;		/* shut the write side once sent */
	struct buf	 out;
	size_t		 off;
	char		 in[INMAX + 1];
	size_t		 inlen;
	int64_t		 deadline;
};

static uint64_t	 rng;
static const char *model = "m";
static int	 port, verbose, deadline_ms = 5000;
static unsigned long counts[K_NKINDS][O_NOUTCOMES];

static uint64_t
next(void)
{
	return (splitmix64(&rng));
}

/* A number in [lo, hi]. */
static size_t
between(size_t lo, size_t hi)
{
	return (lo + next() % (hi - lo + 1));
}

static void
grow(struct buf *b, size_t n)
{
	if (b->len + n + 1 <= b->cap)
		return;
	while (b->len + n + 1 > b->cap)
		b->cap = b->cap ? b->cap * 2 : 1024;
	if ((b->p = realloc(b->p, b->cap)) == NULL)
		err(2, NULL);
}

static void
add(struct buf *b, const void *p, size_t n)
{
	grow(b, n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
adds(struct buf *b, const char *s)
{
	add(b, s, strlen(s));
}

static void __attribute__((format(printf, 2, 3)))
addf(struct buf *b, const char *fmt, ...)
{
	va_list	ap;
	char	*s;
	int	 n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n == -1)
		err(2, NULL);
	add(b, s, n);
	free(s);
}

static void
addrand(struct buf *b, size_t n)
{
	size_t	i;
	char	c;

	for (i = 0; i < n; i++) {
		c = (char)(next() & 0xff);
		add(b, &c, 1);
	}
}

static void
addrep(struct buf *b, const char *s, size_t times)
{
	size_t	i, n = strlen(s);

	grow(b, n * times);
	for (i = 0; i < times; i++)
		add(b, s, n);
}

/* A POST to a model route with body and an exact Content-Length. */
static void
post(struct buf *b, const struct buf *body)
{
	addf(b, "POST /v1/chat/completions HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n\r\n", port, body->len);
	add(b, body->p, body->len);
}

static void
make(struct slot *s, uint64_t seed, int index)
{
	struct buf	 body = { NULL, 0, 0 }, *b = &s->out;
	static const char *badcl[] = { "abc", "-1", "99999999999999999999999",
	    "1 2", "0x10", "+5", "", "18446744073709551616", "12abc" };
	static const char *badutf8[] = { "\xff\xfe", "\xc0\x80", "\xed\xa0\x80",
	    "\xf8\x88\x80\x80\x80", "\xe2\x82", "\x80", "\xf4\x90\x80\x80" };
	static const char *lines[] = { "GARBAGE /v1/models HTTP/1.1",
	    "GET /v1/models HTTP/9.9", "GET /v1/models", "GET  HTTP/1.1",
	    "POST /v1/chat/completions HTTP/1.1 extra", "\x01\x02\x03 / HTTP/1.1",
	    "GET /v1/models HTTP/1.1\x7f" };
	size_t		 i, n, k;

	rng = seed ^ ((uint64_t)index * 0xd1342543de82ef95ULL);
	next();
	s->index = index;
	s->kind = (enum kind)(next() % K_NKINDS);
	s->eof = 0;
	s->off = 0;
	s->inlen = 0;
	b->len = 0;

	switch (s->kind) {
	case K_RANDOM:
		addrand(b, between(1, 8192));
		s->eof = 1;
		break;
	case K_RANDOM_HEADERS:
		addf(b, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n",
		    port);
		addrand(b, between(1, 4096));
		adds(b, "\r\n\r\n");
		s->eof = 1;
		break;
	case K_TRUNC_BODY:
		addf(&body, "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\","
		    "\"content\":\"", model);
		addrep(&body, "x", between(10, 2000));
		adds(&body, "\"}]}");
		n = between(0, body.len - 1);
		addf(b, "POST /v1/chat/completions HTTP/1.1\r\n"
		    "Host: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
		    "Content-Length: %zu\r\n\r\n", port, body.len);
		add(b, body.p, n);
		s->eof = 1;
		break;
	case K_HUGE_HEADER:
		addf(b, "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
		    "X-Huge: ", port);
		addrep(b, "a", between(70 * 1024, 200 * 1024));
		adds(b, "\r\nContent-Length: 2\r\n\r\n{}");
		break;
	case K_MANY_HEADERS:
		addf(b, "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n",
		    port);
		/* 22 bytes each: always over the proxy's 64 KB of headers */
		n = between(4000, 12000);
		for (i = 0; i < n; i++)
			addf(b, "X-H%06zu: 0123456789\r\n", i);
		adds(b, "\r\n");
		break;
	case K_BAD_UTF8_MODEL:
		adds(&body, "{\"model\":\"");
		adds(&body, model);
		adds(&body, badutf8[next() % NITEMS(badutf8)]);
		adds(&body, "\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
		post(b, &body);
		break;
	case K_BAD_UTF8_CONTENT:
		addf(&body, "{\"model\":\"%s\",\"max_tokens\":1,\"messages\":"
		    "[{\"role\":\"user\",\"content\":\"hi", model);
		adds(&body, badutf8[next() % NITEMS(badutf8)]);
		adds(&body, "\"}]}");
		post(b, &body);
		break;
	case K_DEEP_ARRAY:
		addf(&body, "{\"model\":\"%s\",\"messages\":", model);
		addrep(&body, "[", between(1000, 100000));
		if (next() & 1)
			addrep(&body, "]", between(0, 1000));
		post(b, &body);
		break;
	case K_DEEP_OBJECT:
		addf(&body, "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\","
		    "\"content\":", model);
		addrep(&body, "{\"a\":", between(100, 50000));
		post(b, &body);
		break;
	case K_BAD_CL:
		k = next() % (NITEMS(badcl) + 1);
		addf(&body, "{\"model\":\"%s\",\"messages\":[]}", model);
		addf(b, "POST /v1/chat/completions HTTP/1.1\r\n"
		    "Host: 127.0.0.1:%d\r\nContent-Type: application/json\r\n",
		    port);
		if (k == NITEMS(badcl))	/* two that disagree */
			addf(b, "Content-Length: %zu\r\nContent-Length: %zu\r\n",
			    body.len, body.len + 7);
		else
			addf(b, "Content-Length: %s\r\n", badcl[k]);
		adds(b, "\r\n");
		add(b, body.p, body.len);
		/* no EOF: a complete request, for the answer to be seen */
		break;
	case K_CL_SHORT:
		addf(&body, "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\","
		    "\"content\":\"hello\"}]}", model);
		n = between(1, body.len - 1);
		addf(b, "POST /v1/chat/completions HTTP/1.1\r\n"
		    "Host: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
		    "Content-Length: %zu\r\n\r\n", port, n);
		add(b, body.p, body.len);
		s->eof = 1;
		break;
	case K_CL_LONG:
		addf(&body, "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\","
		    "\"content\":\"hello\"}]}", model);
		addf(b, "POST /v1/chat/completions HTTP/1.1\r\n"
		    "Host: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
		    "Content-Length: %zu\r\n\r\n", port,
		    body.len + between(1, 100000));
		add(b, body.p, body.len);
		s->eof = 1;
		break;
	case K_BAD_CHUNKED:
		addf(b, "POST /v1/chat/completions HTTP/1.1\r\n"
		    "Host: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n", port);
		switch (next() % 4) {
		case 0:
			adds(b, "zz\r\n{}\r\n0\r\n\r\n");
			break;
		case 1:
			adds(b, "ffffffffffffffffff\r\n{}\r\n");
			break;
		case 2:
			adds(b, "-5\r\n{}\r\n0\r\n\r\n");
			break;
		default:
			adds(b, "5\r\n{}\r\n0\r\n\r\n");	/* short chunk */
			break;
		}
		s->eof = 1;
		break;
	case K_BAD_LINE:
		k = next() % (NITEMS(lines) + 1);
		if (k == NITEMS(lines)) {
			adds(b, "GET /");
			addrep(b, "a", between(70 * 1024, 150 * 1024));
			adds(b, " HTTP/1.1");
		} else
			adds(b, lines[k]);
		addf(b, "\r\nHost: 127.0.0.1:%d\r\n\r\n", port);
		s->eof = 1;
		break;
	case K_NOT_JSON:
		addrand(&body, between(1, 4096));
		body.p[0] = '#';	/* never valid JSON */
		post(b, &body);
		break;
	case K_PIPELINE:
		n = between(2, 5);
		for (i = 0; i < n; i++) {
			body.len = 0;
			addf(&body, "{\"model\":\"%s\",\"messages\":[", model);
			addrand(&body, between(0, 64));
			post(b, &body);
		}
		addrand(b, between(1, 2048));
		s->eof = 1;
		break;
	case K_NKINDS:
		break;
	}
	free(body.p);
}

static enum outcome
classify(struct slot *s, int closed)
{
	char	*p, *line;
	int	 code, any4xx = 0;

	s->in[s->inlen] = '\0';
	for (p = s->in; p != NULL && p < s->in + s->inlen; ) {
		line = p;
		if (strncmp(line, "HTTP/1.", 7) == 0) {
			if (sscanf(line, "HTTP/1.%*d %d", &code) != 1)
				return (O_BADLINE);
			/* 501 and 505 refuse what the request asked of
			 * the protocol (RFC 9112 6.1, RFC 9110 15.6.6):
			 * refusals, like a 4xx; any other 5xx is not */
			if (code >= 500 && code != 501 && code != 505)
				return (O_5XX);
			if (code >= 400)
				any4xx = 1;
			else if (code >= 300)
				return (O_3XX);
			else
				return (O_2XX);
		}
		if ((p = memchr(line, '\n', s->in + s->inlen - line)) != NULL)
			p++;
	}
	if (any4xx)
		return (O_4XX);
	if (s->inlen > 0 && closed)
		return (O_BADLINE);	/* bytes, but no status line */
	return (closed ? O_CLOSED : O_TIMEOUT);
}

/* Whether a complete answer (status line and headers) is in. */
static int
answered(struct slot *s)
{
	s->in[s->inlen] = '\0';
	return (strstr(s->in, "\r\n\r\n") != NULL);
}

static void
finish(struct slot *s, enum outcome o)
{
	struct linger	l = { 1, 0 };
	char		*nl;

	counts[s->kind][o]++;
	if (verbose > 1 || (verbose && o != O_4XX && o != O_CLOSED)) {
		s->in[s->inlen] = '\0';
		if ((nl = strpbrk(s->in, "\r\n")) != NULL)
			*nl = '\0';
		printf("request %d (%s, %zu bytes, %zu sent): %s: %.80s\n",
		    s->index, kindname[s->kind], s->out.len, s->off,
		    outname[o], s->in);
	}
	if (s->fd != -1) {
		/* A reset: leave no TIME_WAIT behind on this side. */
		setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
		close(s->fd);
	}
	s->fd = -1;
}

static int
start(struct slot *s, uint64_t seed, int index)
{
	struct sockaddr_in	sin;

	make(s, seed, index);
	s->deadline = now_ms() + deadline_ms;
	if ((s->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1)
		err(2, "socket");
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(s->fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 &&
	    errno != EINPROGRESS) {
		warn("connect");
		finish(s, O_CONNECT);
		return (-1);
	}
	return (0);
}

/* Go on with a slot after poll: 1 when it has ended. */
static int
step(struct slot *s, short revents)
{
	ssize_t	n;
	int	e;
	socklen_t len = sizeof(e);

	if (s->off < s->out.len && (revents & (POLLOUT | POLLERR | POLLHUP))) {
		if (s->off == 0 && getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &e,
		    &len) == 0 && e != 0) {
			if (e == ECONNREFUSED) {
				finish(s, O_CONNECT);
				return (1);
			}
		}
		n = send(s->fd, s->out.p + s->off, s->out.len - s->off,
		    MSG_NOSIGNAL);
		if (n > 0) {
			s->off += n;
			if (s->off == s->out.len && s->eof)
				shutdown(s->fd, SHUT_WR);
		} else if (n == -1 && errno != EAGAIN && errno != EINTR) {
			/* The server gave up on us: read what it said. */
			s->off = s->out.len;
		}
	}
	if (revents & (POLLIN | POLLERR | POLLHUP)) {
		n = recv(s->fd, s->in + s->inlen, INMAX - s->inlen, 0);
		if (n > 0) {
			s->inlen += n;
			/* One answer is enough unless more were sent. */
			if (s->kind != K_PIPELINE && answered(s)) {
				finish(s, classify(s, 0));
				return (1);
			}
			if (s->inlen == INMAX) {
				finish(s, classify(s, 1));
				return (1);
			}
		} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
			finish(s, classify(s, 1));
			return (1);
		}
	}
	if (now_ms() >= s->deadline) {
		/* Answers to pipelined requests, then an open connection. */
		finish(s, classify(s, 0) == O_4XX ? O_4XX : O_TIMEOUT);
		return (1);
	}
	return (0);
}

static void
usage(void)
{
	fprintf(stderr, "usage: badreq [-v] [-c conns] [-i first] [-m model] "
	    "[-n count] [-s seed] [-t ms] port\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	struct slot	*slots;
	struct pollfd	*pfd;
	uint64_t	 seed = 1;
	unsigned long	 total[O_NOUTCOMES] = { 0 }, other;
	int		 ch, conns = 32, count = 10000, first = 0, i, k, o;
	int		 issued, done, active;
	int64_t		 t0;

	while ((ch = getopt(argc, argv, "c:i:m:n:s:t:v")) != -1) {
		switch (ch) {
		case 'c':
			conns = numarg(optarg, 1, MAXCONNS, "conns");
			break;
		case 'i':
			first = numarg(optarg, 0, INT32_MAX / 2, "first");
			break;
		case 'm':
			model = optarg;
			break;
		case 'n':
			count = numarg(optarg, 1, 10000000, "count");
			break;
		case 's':
			seed = numarg(optarg, 0, INT64_MAX, "seed");
			break;
		case 't':
			deadline_ms = numarg(optarg, 1, 600000, "deadline");
			break;
		case 'v':
			verbose++;
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 1)
		usage();
	port = numarg(argv[optind], 1, 65535, "port");
	tool_init();

	if ((slots = calloc(conns, sizeof(*slots))) == NULL ||
	    (pfd = calloc(conns, sizeof(*pfd))) == NULL)
		err(2, NULL);
	for (i = 0; i < conns; i++)
		slots[i].fd = -1;

	t0 = now_ms();
	issued = done = 0;
	while (done < count) {
		active = 0;
		for (i = 0; i < conns; i++) {
			while (slots[i].fd == -1 && issued < count) {
				if (start(&slots[i], seed, first + issued++) == 0)
					break;
				done++;
			}
			pfd[i].fd = slots[i].fd;
			pfd[i].events = 0;
			if (slots[i].fd == -1)
				continue;
			active++;
			pfd[i].events = POLLIN;
			if (slots[i].off < slots[i].out.len)
				pfd[i].events |= POLLOUT;
		}
		if (active == 0)
			break;
		if (poll(pfd, conns, 100) == -1 && errno != EINTR)
			err(2, "poll");
		for (i = 0; i < conns; i++) {
			if (slots[i].fd == -1)
				continue;
			if (step(&slots[i], pfd[i].revents))
				done++;
		}
	}

	for (k = 0; k < K_NKINDS; k++)
		for (o = 0; o < O_NOUTCOMES; o++)
			total[o] += counts[k][o];
	other = 0;
	for (o = O_2XX; o < O_NOUTCOMES; o++)
		other += total[o];
	if (verbose) {
		for (k = 0; k < K_NKINDS; k++) {
			printf("%-22s", kindname[k]);
			for (o = 0; o < O_NOUTCOMES; o++)
				if (counts[k][o])
					printf(" %s %lu", outname[o],
					    counts[k][o]);
			printf("\n");
		}
	}
	printf("requests %d seed %llu in %lld ms: 4xx %lu closed %lu "
	    "OTHER %lu (2xx %lu 3xx %lu 5xx %lu timeout %lu connect-failed "
	    "%lu unparsable %lu)\n", count, (unsigned long long)seed,
	    (long long)(now_ms() - t0), total[O_4XX], total[O_CLOSED], other,
	    total[O_2XX], total[O_3XX], total[O_5XX], total[O_TIMEOUT],
	    total[O_CONNECT], total[O_BADLINE]);
	for (i = 0; i < conns; i++)
		free(slots[i].out.p);
	free(slots);
	free(pfd);
	return (other == 0 ? 0 : 1);
}
