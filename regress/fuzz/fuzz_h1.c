/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: the HTTP/1.x parser (h1.c).  The input is parsed
 * as a request and as a response header block, and decoded as a chunked
 * body: whole, split in two at a point the first byte picks, and a byte
 * at a time.
 *
 * Invariants: no crash, no read outside the input (each copy is in a
 * buffer of its own size); a parse returns a known value, and on success
 * every pointer is inside the block it returns and the fields agree with
 * the rules (a request's framing, a response's status); the block is
 * self-delimiting (the same result from just its bytes, 0 from any
 * shorter prefix, -431 with a max one byte short); an error in a line
 * stays the same with a larger max; a request has at most one
 * Transfer-Encoding field.  The chunked decoder returns -1 or a count
 * within the input, never more data than input, and the same data, end
 * and count however the input is split; and what it has decoded plus
 * the chunk it is in (its size so far, while the size line is read)
 * never exceeds the body's whole length, so that a limit checked on it
 * (the front door's 413 at a size line) refuses no body that fits.
 *
 * FUZZ_WRITE_SEEDS=DIR writes the seed corpus into DIR and exits.
 */
#include <sys/types.h>

#include <err.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "h1.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define MAX	8192		/* the front door's limit */

static struct h1_msg	 m1, m2;

static void
fail(const char *what, int request)
{
	fprintf(stderr, "fuzz_h1: %s: %s\n", request == 1 ? "request" :
	    request == 0 ? "response" : "chunked", what);
	abort();
}

static int
parse(int request, const char *buf, size_t len, size_t max,
    struct h1_msg *m)
{
	if (request)
		return (h1_parse_request(buf, len, max, m));
	return (h1_parse_response(buf, len, max, m));
}

/* Whether p (n bytes) is inside [buf, buf + len). */
static int
inside(const char *p, size_t n, const char *buf, size_t len)
{
	return (p != NULL && p >= buf && p <= buf + len &&
	    n <= (size_t)(buf + len - p));
}

static int
ows(char c)
{
	return (c == ' ' || c == '\t');
}

/* A parse that succeeded with r: what m holds. */
static void
check_msg(int request, const char *buf, int r, const struct h1_msg *m)
{
	const struct h1_header	*h, *f;
	char			 name[64];
	size_t			 i, len = (size_t)r;

	if (m->minor != 0 && m->minor != 1)
		fail("minor", request);
	if (request) {
		if (!inside(m->method, m->methodlen, buf, len) ||
		    m->methodlen == 0 ||
		    !inside(m->target, m->targetlen, buf, len) ||
		    m->targetlen == 0 || m->status != 0 || m->reason != NULL)
			fail("request line", request);
		if (m->te && (!m->chunked || m->ncontent_length > 0 ||
		    m->minor != 1))
			fail("request framing", request);
		if ((f = h1_find(m, "transfer-encoding")) != NULL)
			for (i = 0; i < m->nheaders; i++)
				if (&m->headers[i] != f &&
				    m->headers[i].namelen == 17 &&
				    strncasecmp(m->headers[i].name,
				    "transfer-encoding", 17) == 0)
					fail("two Transfer-Encoding", request);
		if (m->expect_continue && m->minor != 1)
			fail("expect", request);
	} else {
		if (m->method != NULL || m->target != NULL ||
		    m->status < 100 || m->status > 999 ||
		    !inside(m->reason, m->reasonlen, buf, len))
			fail("status line", request);
		if (m->te && m->content_length != -1)
			fail("response framing", request);
		if (m->expect_continue)
			fail("expect", request);
	}
	if (m->nheaders > H1_MAX_HEADERS)
		fail("nheaders", request);
	for (i = 0; i < m->nheaders; i++) {
		h = &m->headers[i];
		if (!inside(h->name, h->namelen, buf, len) ||
		    h->namelen == 0 ||
		    !inside(h->value, h->valuelen, buf, len) ||
		    (h->valuelen > 0 && (ows(h->value[0]) ||
		    ows(h->value[h->valuelen - 1]))) ||
		    memchr(h->value, '\r', h->valuelen) != NULL ||
		    memchr(h->value, '\n', h->valuelen) != NULL ||
		    memchr(h->value, '\0', h->valuelen) != NULL)
			fail("field", request);
		/* h1_find: this field or an earlier one of its name */
		if (h->namelen < sizeof(name)) {
			memcpy(name, h->name, h->namelen);
			name[h->namelen] = '\0';
			if ((f = h1_find(m, name)) == NULL ||
			    f > h || f->namelen != h->namelen ||
			    strncasecmp(f->name, name, h->namelen) != 0)
				fail("h1_find", request);
		}
	}
	if (h1_find(m, "") != NULL)
		fail("h1_find of nothing", request);
	if ((h1_find(m, "content-length") != NULL) !=
	    (m->ncontent_length > 0) ||
	    (h1_find(m, "transfer-encoding") != NULL) != m->te)
		fail("fields not seen", request);
	if (m->content_length < -1 || m->ncontent_length < 0 ||
	    (m->ncontent_length == 0 && m->content_length != -1) ||
	    (m->chunked && !m->te))
		fail("framing", request);
	if ((m->keepalive != 0 && m->keepalive != 1) ||
	    (m->chunked != 0 && m->chunked != 1) ||
	    (m->te != 0 && m->te != 1))
		fail("flags", request);
}

static void
check_parse(int request, const uint8_t *data, size_t size)
{
	char	*buf;
	size_t	 k, small;
	int	 r, r2;

	if ((buf = malloc(size ? size : 1)) == NULL)
		return;
	memcpy(buf, data, size);
	r = parse(request, buf, size, MAX, &m1);
	if (r > 0) {
		if ((size_t)r > size || r > MAX)
			fail("length", request);
		check_msg(request, buf, r, &m1);
		/* just the block, and a max that fits it */
		if (parse(request, buf, r, r, &m2) != r)
			fail("not self-delimiting", request);
		/* one byte short */
		if (parse(request, buf, r, r - 1, &m2) != -431)
			fail("max one short", request);
		/* a prefix */
		k = size > 1 ? data[1] % (size_t)r : 0;
		if (parse(request, buf, k, MAX, &m2) != 0)
			fail("prefix", request);
	} else if (r == 0) {
		if (size >= MAX)
			fail("0 at max", request);
	} else if (r == -400 || (request && (r == -501 || r == -505))) {
		/* an error in a line: the same with any larger max */
		if (parse(request, buf, size, (size_t)-1, &m2) != r)
			fail("error not stable", request);
	} else if (r != -431)
		fail("return value", request);

	/* a small max: the same block if it fits, else -431 */
	small = size > 2 ? data[2] : 0;
	r2 = parse(request, buf, size, small, &m2);
	if (r > 0 && (size_t)r <= small && r2 != r)
		fail("small max, fits", request);
	if (r > 0 && (size_t)r > small && r2 != -431)
		fail("small max, too long", request);
	if (r == 0 && r2 != (size < small ? 0 : -431))
		fail("small max, incomplete", request);
	if (r2 > 0 && (size_t)r2 > small)
		fail("small max exceeded", request);
	free(buf);
}

/* What decoding gave, piece by piece. */
struct dec {
	char	*out;		/* the data, concatenated */
	size_t	 outlen;
	size_t	 used;
	int	 done;
	int	 err;
	uint64_t ahead;		/* the most of outlen + left seen */
};

/*
 * Decode the n bytes at data as the next piece into d, in buf (room
 * for n bytes, no more, so an overread shows).
 */
static void
piece(struct h1_chunked *c, const uint8_t *data, size_t n, char *buf,
    struct dec *d)
{
	size_t	 dl;
	ssize_t	 r;
	int	 done;

	if (d->err || d->done)
		return;
	memcpy(buf, data, n);
	r = h1_chunked_decode(c, buf, n, &dl, &done);
	if (r == -1) {
		d->err = 1;
		/* and it stays an error */
		if (h1_chunked_decode(c, buf, n, &dl, &done) != -1)
			fail("error not kept", 2);
		return;
	}
	if (r < 0 || (size_t)r > n || dl > (size_t)r ||
	    (done != 0 && done != 1) || (!done && (size_t)r != n))
		fail("counts", 2);
	memcpy(d->out + d->outlen, buf, dl);
	d->outlen += dl;
	d->used += r;
	d->done = done;
	if (d->outlen + c->left > d->ahead)
		d->ahead = d->outlen + c->left;
	/* once done, nothing more is taken */
	if (done && (h1_chunked_decode(c, buf, n, &dl, &done) != 0 ||
	    !done || dl != 0))
		fail("done not kept", 2);
}

static int
same(const struct dec *a, const struct dec *b)
{
	if (a->err || b->err)
		return (a->err == b->err);
	return (a->done == b->done && a->used == b->used &&
	    a->outlen == b->outlen && memcmp(a->out, b->out, a->outlen) == 0);
}

static void
check_chunked(const uint8_t *data, size_t size)
{
	struct h1_chunked	 c;
	struct dec		 whole, split, bytes;
	char			*w = NULL, *a = NULL, *b = NULL, *one = NULL;
	size_t			 k, i;

	memset(&whole, 0, sizeof(whole));
	memset(&split, 0, sizeof(split));
	memset(&bytes, 0, sizeof(bytes));
	k = size > 0 ? data[0] % (size + 1) : 0;
	if ((whole.out = malloc(size + 1)) == NULL ||
	    (split.out = malloc(size + 1)) == NULL ||
	    (bytes.out = malloc(size + 1)) == NULL ||
	    (w = malloc(size ? size : 1)) == NULL ||
	    (a = malloc(k ? k : 1)) == NULL ||
	    (b = malloc(size - k ? size - k : 1)) == NULL ||
	    (one = malloc(1)) == NULL)
		goto out;

	h1_chunked_init(&c);
	piece(&c, data, size, w, &whole);

	h1_chunked_init(&c);
	piece(&c, data, k, a, &split);
	piece(&c, data + k, size - k, b, &split);

	h1_chunked_init(&c);
	for (i = 0; i < size && !bytes.err && !bytes.done; i++)
		piece(&c, data + i, 1, one, &bytes);

	if (!same(&whole, &split))
		fail("split differs", 2);
	if (!same(&whole, &bytes))
		fail("a byte at a time differs", 2);
	if (bytes.done && bytes.ahead > bytes.outlen)
		fail("decoded and pending over the whole", 2);
 out:
	free(whole.out);
	free(split.out);
	free(bytes.out);
	free(w);
	free(a);
	free(b);
	free(one);
}

/* The seeds: requests, responses and chunked bodies, good and bad. */
static void
write_seeds(const char *dir)
{
	static const char *seeds[] = {
		"GET / HTTP/1.1\r\nHost: localhost:8080\r\n\r\n",
		"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		    "Content-Type: application/json\r\nContent-Length: 2\r\n"
		    "\r\n{}",
		"POST /v1/completions HTTP/1.1\r\nHost: a\r\n"
		    "Transfer-Encoding: gzip, chunked\r\n"
		    "Expect: 100-continue\r\n\r\n",
		"\r\n\nGET /health HTTP/1.0\nConnection: keep-alive\n\n",
		"GET / HTTP/1.1\r\nConnection: foo, close\r\n"
		    "Content-Length: 5\r\nContent-Length: 5\r\n\r\n",
		"GET / HTTP/2.0\r\n\r\n",
		"GET / HTTP/1.1\r\n folded: x\r\n\r\n",
		"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
		"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhi",
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
		    "Content-Length: 9\r\n\r\n",
		"HTTP/1.0 204 \r\nConnection: keep-alive\r\n\r\n",
		"HTTP/1.1 100\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
		"HTTP/1.1 502 Bad \xff Gateway\r\nTransfer-Encoding: identity\r\n"
		    "\r\n",
		"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
		"\x03" "3;a=\"b\"\r\nabc\r\nA\r\n0123456789\r\n0\r\nT: x\r\n\r\n"
		    "GET",
		"\x01" "1 ; e\nx\n00\nT: 1\n\n",
		"1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\n\r\n",
		"3fffffffffffffff\r\nabc",
		"4000000000000000\r\n",
		"5\r\nhelloX\r\n",
		"0\r\n\r\n",
		"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
		    "Origin: http://evil.example\r\n"
		    "transfer-encoding: chunked\r\n\r\n",
	};
	static char	 longer[2][4200];
	const char	*p;
	char		 path[1024];
	size_t		 i, len, n = sizeof(seeds) / sizeof(seeds[0]);
	int		 fd;

	/* Lines at the chunked limit (4096 bytes), longer than libFuzzer's
	 * default inputs: a size line just at it, a trailer line over. */
	memcpy(longer[0], "1;", 2);
	memset(longer[0] + 2, 'e', 4094);
	memcpy(longer[0] + 4096, "\r\nx\r\n0\r\n\r\n", 11);
	memcpy(longer[1], "0\r\n", 3);
	memset(longer[1] + 3, 't', 4097);
	memcpy(longer[1] + 4100, "\r\n\r\n", 5);

	for (i = 0; i < n + 2; i++) {
		p = i < n ? seeds[i] : longer[i - n];
		len = strlen(p);
		(void)snprintf(path, sizeof(path), "%s/seed-%03zu", dir, i);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) ==
		    -1 || write(fd, p, len) != (ssize_t)len)
			err(1, "%s", path);
		close(fd);
	}
	exit(0);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char	*seeds;

	(void)argc;
	(void)argv;
	if ((seeds = getenv("FUZZ_WRITE_SEEDS")) != NULL)
		write_seeds(seeds);
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	check_parse(1, data, size);
	check_parse(0, data, size);
	check_chunked(data, size);
	return (0);
}
