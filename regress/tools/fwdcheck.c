/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * fwdcheck [-0c] [-a bytes] [-b file [-e file]]... [-H field]...
 *     [-p path] [-t ms] port [answer ...]
 *
 * Byte-exact checks of what the front door forwards.  Sends POSTs to
 * 127.0.0.1:port one after another on one connection, one for each
 * answer argument: with the header "X-Fakelm-Answer: ANSWER" (fakelm's
 * answers of known bytes) or, for "-", without it.  Each answer is read
 * by its own framing, strictly, and described in a line:
 *
 *	N HTTP/1.x STATUS FRAMING BYTES answer=A request=R
 *
 * FRAMING is length, chunked or close (the body ended with the
 * connection); BYTES the body's length.  A is "ok" when the digest of
 * the body (cksum.h) is the one the answer's X-Fakelm-Answer-Cksum
 * names, "bad" when it is not, "none" without that header; R is the same
 * for the body sent (or the -e file given after it) and
 * X-Fakelm-Body-Cksum, what the model received.
 * After the last answer, or one that ends the connection: "end open"
 * when the connection is open with nothing more on it, "end closed" when
 * the server closed it, "end stray N" when N bytes more came.  An answer
 * that is not well-formed HTTP/1.1 prints "N error: WHAT" and exits 1.
 *
 *  -0        HTTP/1.0 requests, with Connection: keep-alive
 *  -a bytes  close the connection once that many bytes of the first
 *            answer's body are in, and print "1 HTTP/1.x STATUS FRAMING
 *            aborted"
 *  -b file   a request body; given more than once, the requests take
 *            them in turn (default: an empty body)
 *  -c        send the bodies chunked, in pieces of varied sizes
 *  -e file   what the model is to receive of the -b body before it
 *            (default: that body itself)
 *  -H field  one more header field, "Name: value"; a Host or a
 *            Content-Type replaces the default one (Host: 127.0.0.1:port,
 *            Content-Type: application/json)
 *  -p path   the request target (default /v1/chat/completions)
 *  -t ms     the longest wait for the next byte of an answer, or for the
 *            close of a connection that is to close (default 10000)
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cksum.h"
#include "numarg.h"
#include "tool.h"

#define HEADER_MAX	(64 * 1024)
#define LINE_MAX_CH	1024		/* a chunk-size or trailer line */
#define MAX_BODIES	8
#define MAX_FIELDS	16
#define STRAY_WAIT	100		/* ms: a keep-alive end stays quiet */

struct body {
	const char	*data;
	size_t		 len;
	char		 sum[CKSUM_STR];
	char		 want[CKSUM_STR];	/* what the model is to get */
};

struct answer {
	int		 minor;
	int		 status;
	int64_t		 length;	/* -1: none */
	int		 chunked;
	int		 close;		/* Connection: close, or 1.0 without
					 * keep-alive */
	char		 answer_sum[CKSUM_STR];
	char		 body_sum[CKSUM_STR];
};

static struct body	 bodies[MAX_BODIES];
static size_t		 nbodies;
static int		 fd = -1;
static char		*in;		/* what came and is not used yet */
static size_t		 inlen, incap;
static int		 eof;
static int		 wait_ms = 10000;
static int		 seq;		/* the answer being read */

static void		 usage(void);
static void		 fail(const char *, ...)
			    __attribute__((__format__ (printf, 1, 2),
			    __noreturn__));
static int		 fill(int);
static void		 need(size_t);
static void		 consume(size_t);
static void		 send_all(const char *, size_t);
static void		 load_body(struct body *, const char *);
static void		 send_request(const char *, const char *, int, int,
			    char **, size_t, const struct body *, const char *);
static void		 read_header(struct answer *);
static int		 read_body(const struct answer *, struct cksum *,
			    int64_t);
static void		 end_check(int);

static void
usage(void)
{
	fprintf(stderr, "usage: fwdcheck [-0c] [-a bytes] [-b file "
	    "[-e file]] [-H field] [-p path]\n"
	    "                [-t ms] port [answer ...]\n");
	exit(2);
}

/* A malformed answer, or a connection that failed: said, and exit 1. */
static void
fail(const char *fmt, ...)
{
	va_list	 ap;

	printf("%d error: ", seq);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(1);
}

/*
 * Read what comes within ms: 1 when bytes came, 0 at the end of the
 * connection (a reset too), -1 when nothing came in time.
 */
static int
fill(int ms)
{
	struct pollfd	 pfd;
	ssize_t		 n;
	char		*p;
	int		 r;

	if (eof)
		return (0);
	if (inlen + 65536 > incap) {
		if ((p = realloc(in, inlen + 65536)) == NULL)
			err(1, NULL);
		in = p;
		incap = inlen + 65536;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	for (;;) {
		if ((r = poll(&pfd, 1, ms)) == -1) {
			if (errno == EINTR)
				continue;
			err(1, "poll");
		}
		if (r == 0)
			return (-1);
		if ((n = read(fd, in + inlen, incap - inlen)) == -1) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			if (errno != ECONNRESET)
				err(1, "read");
			n = 0;
		}
		if (n == 0) {
			eof = 1;
			return (0);
		}
		inlen += n;
		return (1);
	}
}

/* At least n bytes in, or fail. */
static void
need(size_t n)
{
	while (inlen < n) {
		switch (fill(wait_ms)) {
		case 0:
			fail("the connection closed %zu bytes short",
			    n - inlen);
		case -1:
			fail("nothing for %d ms, %zu bytes short", wait_ms,
			    n - inlen);
		default:
			break;
		}
	}
}

static void
consume(size_t n)
{
	memmove(in, in + n, inlen - n);
	inlen -= n;
}

static void
send_all(const char *p, size_t len)
{
	ssize_t	 n;

	while (len > 0) {
		if ((n = write(fd, p, len)) == -1) {
			if (errno == EINTR)
				continue;
			fail("write: %s", strerror(errno));
		}
		p += n;
		len -= n;
	}
}

static void
load_body(struct body *b, const char *path)
{
	struct stat	 st;
	struct cksum	 ck;
	ssize_t		 n;
	char		*d;
	int		 bfd;

	if ((bfd = open(path, O_RDONLY)) == -1 || fstat(bfd, &st) == -1)
		err(2, "%s", path);
	if ((d = malloc(st.st_size + 1)) == NULL)
		err(1, NULL);
	for (b->len = 0; b->len < (size_t)st.st_size; b->len += n)
		if ((n = read(bfd, d + b->len, st.st_size - b->len)) <= 0)
			err(2, "%s: read", path);
	close(bfd);
	b->data = d;
	cksum_init(&ck);
	cksum_add(&ck, b->data, b->len);
	cksum_str(&ck, b->sum);
	(void)strlcpy(b->want, b->sum, sizeof(b->want));
}

/* One request: the header, then the body as it is or chunked. */
static void
send_request(const char *path, const char *port, int minor, int chunk,
    char **fields, size_t nfields, const struct body *b, const char *spec)
{
	static const size_t	 sizes[] = { 1, 13, 500, 8192, 65539 };
	char			 head[8192], line[32];
	size_t			 i, off, n, k = 0;
	int			 host = 0, ctype = 0, len;

	len = snprintf(head, sizeof(head), "POST %s HTTP/1.%d\r\n", path,
	    minor);
	for (i = 0; i < nfields; i++) {
		if (strncasecmp(fields[i], "Host:", 5) == 0)
			host = 1;
		if (strncasecmp(fields[i], "Content-Type:", 13) == 0)
			ctype = 1;
		len += snprintf(head + len, sizeof(head) - len, "%s\r\n",
		    fields[i]);
	}
	if (!host)
		len += snprintf(head + len, sizeof(head) - len,
		    "Host: 127.0.0.1:%s\r\n", port);
	if (!ctype)
		len += snprintf(head + len, sizeof(head) - len,
		    "Content-Type: application/json\r\n");
	if (minor == 0)
		len += snprintf(head + len, sizeof(head) - len,
		    "Connection: keep-alive\r\n");
	if (strcmp(spec, "-") != 0)
		len += snprintf(head + len, sizeof(head) - len,
		    "X-Fakelm-Answer: %s\r\n", spec);
	if (chunk)
		len += snprintf(head + len, sizeof(head) - len,
		    "Transfer-Encoding: chunked\r\n\r\n");
	else
		len += snprintf(head + len, sizeof(head) - len,
		    "Content-Length: %zu\r\n\r\n", b->len);
	if (len < 0 || (size_t)len >= sizeof(head))
		errx(2, "the request header is too long");
	send_all(head, len);
	if (!chunk) {
		send_all(b->data, b->len);
		return;
	}
	for (off = 0; off < b->len; off += n) {
		n = sizes[k++ % (sizeof(sizes) / sizeof(sizes[0]))];
		if (n > b->len - off)
			n = b->len - off;
		send_all(line, snprintf(line, sizeof(line), "%zx\r\n", n));
		send_all(b->data + off, n);
		send_all("\r\n", 2);
	}
	send_all("0\r\n\r\n", 5);
}

/* A field's value, its spaces around taken off, into buf. */
static void
value(const char *v, size_t n, char *buf, size_t size)
{
	while (n > 0 && (*v == ' ' || *v == '\t')) {
		v++;
		n--;
	}
	while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
		n--;
	if (n >= size)
		fail("a value of %zu bytes in a field read here", n);
	memcpy(buf, v, n);
	buf[n] = '\0';
}

/* Whether the list s has the token t, in any case. */
static int
has_token(const char *s, const char *t)
{
	size_t	 n = strlen(t);

	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == ',')
			s++;
		if (*s == '\0')
			return (0);
		if (strncasecmp(s, t, n) == 0 && (s[n] == '\0' ||
		    s[n] == ',' || s[n] == ' ' || s[n] == '\t'))
			return (1);
		while (*s != '\0' && *s != ',')
			s++;
	}
}

/* The next final answer's header (1xx skipped), taken out of in. */
static void
read_header(struct answer *a)
{
	char		*end, *p, *eol, *colon, v[256];
	size_t		 k;
	const char	*errstr;
	int64_t		 cl;
	int		 keepalive, r;

	for (;;) {
		while ((end = memmem(in, inlen, "\r\n\r\n", 4)) == NULL) {
			if (inlen > HEADER_MAX)
				fail("a header of more than %d bytes",
				    HEADER_MAX);
			if ((r = fill(wait_ms)) == 0)
				fail(inlen == 0 ? "closed before the answer" :
				    "closed in the header");
			if (r == -1)
				fail("no answer in %d ms", wait_ms);
		}
		memset(a, 0, sizeof(*a));
		a->length = -1;
		eol = memmem(in, end + 2 - in, "\r\n", 2);
		if (eol - in < 12 || memcmp(in, "HTTP/1.", 7) != 0 ||
		    (in[7] != '0' && in[7] != '1') || in[8] != ' ' ||
		    in[9] < '1' || in[9] > '5' || in[10] < '0' ||
		    in[10] > '9' || in[11] < '0' || in[11] > '9' ||
		    (eol - in > 12 && in[12] != ' '))
			fail("not a status line: %.*s", (int)(eol - in), in);
		a->minor = in[7] - '0';
		a->status = (in[9] - '0') * 100 + (in[10] - '0') * 10 +
		    (in[11] - '0');
		keepalive = a->minor == 1;
		for (p = eol + 2; p < end + 2; p = eol + 2) {
			eol = memmem(p, end + 2 - p, "\r\n", 2);
			if ((colon = memchr(p, ':', eol - p)) == NULL ||
			    colon == p)
				fail("not a field line: %.*s", (int)(eol - p),
				    p);
			k = colon - p;
#define IS(name)	(k == strlen(name) && strncasecmp(p, name, k) == 0)
			if (!IS("Content-Length") &&
			    !IS("Transfer-Encoding") && !IS("Connection") &&
			    !IS("X-Fakelm-Answer-Cksum") &&
			    !IS("X-Fakelm-Body-Cksum"))
				continue;
			value(colon + 1, eol - colon - 1, v, sizeof(v));
			if (IS("Content-Length")) {
				cl = strtonum(v, 0, INT64_MAX, &errstr);
				if (errstr != NULL || (a->length != -1 &&
				    a->length != cl))
					fail("Content-Length: %s", v);
				a->length = cl;
			} else if (IS("Transfer-Encoding")) {
				if (strcasecmp(v, "chunked") != 0 ||
				    a->chunked)
					fail("Transfer-Encoding: %s", v);
				a->chunked = 1;
			} else if (IS("Connection")) {
				if (has_token(v, "close"))
					a->close = 1;
				if (has_token(v, "keep-alive"))
					keepalive = 1;
			} else if (IS("X-Fakelm-Answer-Cksum"))
				(void)strlcpy(a->answer_sum, v,
				    sizeof(a->answer_sum));
			else if (IS("X-Fakelm-Body-Cksum"))
				(void)strlcpy(a->body_sum, v,
				    sizeof(a->body_sum));
#undef IS
		}
		if (a->chunked && a->length != -1)
			fail("both Content-Length and chunked");
		if (!keepalive)
			a->close = 1;
		consume(end + 4 - in);
		if (a->status >= 200)
			return;
	}
}

/* One line of a chunked body, CRLF taken off, into buf. */
static void
chunk_line(char *buf)
{
	char	*eol;
	int	 r;

	while ((eol = memmem(in, inlen, "\r\n", 2)) == NULL) {
		if (inlen > LINE_MAX_CH)
			fail("a chunk line of more than %d bytes",
			    LINE_MAX_CH);
		if ((r = fill(wait_ms)) == 0)
			fail("closed in a chunk line");
		if (r == -1)
			fail("nothing for %d ms in a chunk line", wait_ms);
	}
	if (eol - in > LINE_MAX_CH)
		fail("a chunk line of more than %d bytes", LINE_MAX_CH);
	memcpy(buf, in, eol - in);
	buf[eol - in] = '\0';
	consume(eol + 2 - in);
}

/*
 * Take n bytes of the body (all that comes, to the close, for n -1) into
 * ck; with abort >= 0, return 1 as soon as the body has that many bytes.
 */
static int
take(struct cksum *ck, int64_t n, int64_t abort_at)
{
	size_t	 k;
	int	 r;

	while (n != 0) {
		if (abort_at >= 0 && (int64_t)ck->len >= abort_at)
			return (1);
		if (inlen == 0) {
			if ((r = fill(wait_ms)) == 0) {
				if (n < 0)
					return (0);
				fail("closed %lld bytes into the body",
				    (long long)ck->len);
			}
			if (r == -1)
				fail("nothing for %d ms, %lld bytes into the "
				    "body", wait_ms, (long long)ck->len);
			continue;
		}
		k = inlen;
		if (n >= 0 && (uint64_t)n < k)
			k = (size_t)n;
		if (abort_at >= 0 && (uint64_t)(abort_at - ck->len) < k)
			k = (size_t)(abort_at - ck->len);
		cksum_add(ck, in, k);
		consume(k);
		if (n > 0)
			n -= k;
	}
	return (abort_at >= 0 && (int64_t)ck->len >= abort_at);
}

/* The body, by the answer's framing; 1 when it was aborted. */
static int
read_body(const struct answer *a, struct cksum *ck, int64_t abort_at)
{
	char		 line[LINE_MAX_CH + 1], *p;
	uint64_t	 size;
	int		 d;

	if (a->status == 204 || a->status == 304)
		return (0);
	if (!a->chunked)
		return (take(ck, a->length, abort_at));
	for (;;) {
		chunk_line(line);
		size = 0;
		for (p = line; *p != '\0' && *p != ';'; p++) {
			if (*p >= '0' && *p <= '9')
				d = *p - '0';
			else if (*p >= 'a' && *p <= 'f')
				d = *p - 'a' + 10;
			else if (*p >= 'A' && *p <= 'F')
				d = *p - 'A' + 10;
			else
				fail("not a chunk size: %s", line);
			if (size >> 56)
				fail("a chunk size too large: %s", line);
			size = size * 16 + d;
		}
		if (p == line)
			fail("not a chunk size: %s", line);
		if (size == 0)
			break;
		if (take(ck, (int64_t)size, abort_at))
			return (1);
		need(2);
		if (memcmp(in, "\r\n", 2) != 0)
			fail("no CRLF after %llu bytes of chunk data",
			    (unsigned long long)size);
		consume(2);
	}
	/* trailer fields, up to the empty line */
	do
		chunk_line(line);
	while (line[0] != '\0');
	return (0);
}

/* How the connection ends after the last answer. */
static void
end_check(int closing)
{
	int	 r;

	if (inlen == 0) {
		r = fill(closing ? wait_ms : STRAY_WAIT);
		if (r == 0) {
			printf("end closed\n");
			return;
		}
		if (r == -1) {
			printf("end open\n");
			return;
		}
	}
	/* what else is on its way, briefly */
	while (fill(STRAY_WAIT) == 1)
		;
	printf("end stray %zu\n", inlen);
}

int
main(int argc, char *argv[])
{
	struct sockaddr_in	 sin;
	struct body		 empty, e;
	struct answer		 a;
	struct cksum		 ck;
	char			*fields[MAX_FIELDS], sum[CKSUM_STR];
	const char		*path = "/v1/chat/completions", *port, *spec;
	const char		*framing;
	const struct body	*b;
	size_t			 nfields = 0;
	int64_t			 abort_at = -1;
	int			 ch, i, minor = 1, chunk = 0, n;

	tool_init();
	while ((ch = getopt(argc, argv, "0a:b:ce:H:p:t:")) != -1) {
		switch (ch) {
		case '0':
			minor = 0;
			break;
		case 'a':
			abort_at = numarg(optarg, 0, INT64_MAX, "abort");
			break;
		case 'b':
			if (nbodies == MAX_BODIES)
				errx(2, "at most %d bodies", MAX_BODIES);
			load_body(&bodies[nbodies++], optarg);
			break;
		case 'c':
			chunk = 1;
			break;
		case 'e':
			if (nbodies == 0)
				usage();
			load_body(&e, optarg);
			(void)strlcpy(bodies[nbodies - 1].want, e.sum,
			    sizeof(e.sum));
			free((void *)(uintptr_t)e.data);
			break;
		case 'H':
			if (nfields == MAX_FIELDS)
				errx(2, "at most %d fields", MAX_FIELDS);
			fields[nfields++] = optarg;
			break;
		case 'p':
			path = optarg;
			break;
		case 't':
			wait_ms = numarg(optarg, 1, 600000, "timeout");
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage();
	port = argv[0];
	/* never NULL, for memmem and memmove */
	if ((in = malloc(65536)) == NULL)
		err(1, NULL);
	incap = 65536;
	memset(&empty, 0, sizeof(empty));
	empty.data = "";
	cksum_init(&ck);
	cksum_str(&ck, empty.sum);
	(void)strlcpy(empty.want, empty.sum, sizeof(empty.want));

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(numarg(port, 1, 65535, "port"));
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		err(1, "socket");
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		err(1, "connect");

	n = argc > 1 ? argc - 1 : 1;
	for (i = 0; i < n; i++) {
		seq = i + 1;
		spec = argc > 1 ? argv[i + 1] : "-";
		b = nbodies > 0 ? &bodies[i % nbodies] : &empty;
		send_request(path, port, minor, chunk, fields, nfields, b,
		    spec);
		read_header(&a);
		framing = a.chunked ? "chunked" : a.length >= 0 ? "length" :
		    a.status == 204 || a.status == 304 ? "none" : "close";
		if (!a.chunked && a.length < 0)
			a.close = 1;
		cksum_init(&ck);
		if (read_body(&a, &ck, i == 0 ? abort_at : -1)) {
			printf("%d HTTP/1.%d %d %s aborted\n", seq, a.minor,
			    a.status, framing);
			fflush(stdout);
			close(fd);
			return (0);
		}
		printf("%d HTTP/1.%d %d %s %llu answer=%s request=%s\n", seq,
		    a.minor, a.status, framing, (unsigned long long)ck.len,
		    a.answer_sum[0] == '\0' ? "none" :
		    strcmp(a.answer_sum, cksum_str(&ck, sum)) == 0 ? "ok" :
		    "bad",
		    a.body_sum[0] == '\0' ? "none" :
		    strcmp(a.body_sum, b->want) == 0 ? "ok" : "bad");
		if (a.close)
			break;
	}
	seq = 0;
	end_check(a.close);
	close(fd);
	return (0);
}
