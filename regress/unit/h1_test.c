/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The HTTP/1.x parser (h1.c): request and status lines, header fields,
 * the framing they imply, and the chunked coding.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "h1.h"

#define MAX	8192
/* A string literal and its length, NULs inside it counted. */
#define S(s)	(s), (sizeof(s) - 1)

static struct h1_msg	 msg;

/*
 * s, len bytes, with control and 8-bit bytes escaped, for messages; two
 * may be used in one message.
 */
static const char *
show(const char *s, size_t len)
{
	static char	 bufs[2][512];
	static int	 which;
	char		*out = bufs[which++ & 1];
	size_t		 i, o = 0;
	unsigned char	 c;

	for (i = 0; i < len && o + 5 < sizeof(bufs[0]); i++) {
		c = (unsigned char)s[i];
		if (c == '\r')
			o += snprintf(out + o, sizeof(bufs[0]) - o, "\\r");
		else if (c == '\n')
			o += snprintf(out + o, sizeof(bufs[0]) - o, "\\n");
		else if (c < 0x20 || c >= 0x7f)
			o += snprintf(out + o, sizeof(bufs[0]) - o, "\\x%02x", c);
		else
			out[o++] = c;
	}
	out[o] = '\0';
	return (out);
}

static int
req(const char *s, size_t len)
{
	return (h1_parse_request(s, len, MAX, &msg));
}

static int
resp(const char *s, size_t len)
{
	return (h1_parse_response(s, len, MAX, &msg));
}

#define CHECK_REQ(s, want) do {						\
	int r_ = req(S(s));						\
	ATF_CHECK_MSG(r_ == (want), "request \"%s\": %d, want %d",	\
	    show(S(s)), r_, (want));					\
} while (0)

/* The whole of s is the block. */
#define CHECK_REQ_OK(s)		CHECK_REQ(s, (int)sizeof(s) - 1)
#define CHECK_RESP_OK(s)	CHECK_RESP(s, (int)sizeof(s) - 1)

#define CHECK_RESP(s, want) do {					\
	int r_ = resp(S(s));						\
	ATF_CHECK_MSG(r_ == (want), "response \"%s\": %d, want %d",	\
	    show(S(s)), r_, (want));					\
} while (0)

/* Whether p (n bytes) is the string s. */
static int
is(const char *p, size_t n, const char *s)
{
	return (p != NULL && n == strlen(s) && memcmp(p, s, n) == 0);
}

/* Whether field i of msg is name: value. */
static int
field(size_t i, const char *name, const char *value)
{
	return (i < msg.nheaders &&
	    is(msg.headers[i].name, msg.headers[i].namelen, name) &&
	    is(msg.headers[i].value, msg.headers[i].valuelen, value));
}

ATF_TC_WITHOUT_HEAD(req_simple);
ATF_TC_BODY(req_simple, tc)
{
	static const char	 s[] = "GET /v1/models?x=1 HTTP/1.1\r\n"
				    "Host: localhost:8080\r\n"
				    "Accept: */*\r\n"
				    "\r\n";

	ATF_REQUIRE_EQ(req(S(s)), (int)sizeof(s) - 1);
	ATF_CHECK(is(msg.method, msg.methodlen, "GET"));
	ATF_CHECK(msg.method == s);
	ATF_CHECK(is(msg.target, msg.targetlen, "/v1/models?x=1"));
	ATF_CHECK_EQ(msg.minor, 1);
	ATF_CHECK_EQ(msg.status, 0);
	ATF_CHECK(msg.reason == NULL);
	ATF_CHECK_EQ(msg.nheaders, 2);
	ATF_CHECK(field(0, "Host", "localhost:8080"));
	ATF_CHECK(field(1, "Accept", "*/*"));
	ATF_CHECK(msg.headers[0].name == s + 29);
	ATF_CHECK_EQ(msg.content_length, -1);
	ATF_CHECK_EQ(msg.ncontent_length, 0);
	ATF_CHECK_EQ(msg.te, 0);
	ATF_CHECK_EQ(msg.chunked, 0);
	ATF_CHECK_EQ(msg.keepalive, 1);
	ATF_CHECK_EQ(msg.expect_continue, 0);

	/* no fields at all */
	CHECK_REQ_OK("OPTIONS * HTTP/1.0\r\n\r\n");
	ATF_CHECK(is(msg.target, msg.targetlen, "*"));
	ATF_CHECK_EQ(msg.minor, 0);
	ATF_CHECK_EQ(msg.nheaders, 0);
	ATF_CHECK_EQ(msg.keepalive, 0);

	/* every tchar in a method */
	CHECK_REQ_OK("!#$%&'*+-.^_`|~09azAZ / HTTP/1.1\r\n\r\n");
	ATF_CHECK(is(msg.method, msg.methodlen, "!#$%&'*+-.^_`|~09azAZ"));
}

ATF_TC_WITHOUT_HEAD(req_body);
ATF_TC_BODY(req_body, tc)
{
	static const char	 head[] = "POST /v1/chat/completions "
				    "HTTP/1.1\r\n"
				    "Host: a\r\n"
				    "Content-Length: 5\r\n"
				    "\r\n";
	char			 s[256];

	snprintf(s, sizeof(s), "%shello", head);
	ATF_CHECK_EQ(req(s, strlen(s)), (int)sizeof(head) - 1);
	ATF_CHECK_EQ(msg.content_length, 5);
	ATF_CHECK_EQ(msg.ncontent_length, 1);
	ATF_CHECK(is(msg.method, msg.methodlen, "POST"));
	/* a pipelined request after it changes nothing */
	snprintf(s, sizeof(s), "%shelloGET / HTTP/1.1\r\n\r\n", head);
	ATF_CHECK_EQ(req(s, strlen(s)), (int)sizeof(head) - 1);
	ATF_CHECK_EQ(msg.nheaders, 2);
}

ATF_TC_WITHOUT_HEAD(req_bare_lf);
ATF_TC_BODY(req_bare_lf, tc)
{
	static const char	 s[] = "GET / HTTP/1.1\nHost: a\nX: b\n\nbody";
	static const char	 mixed[] = "GET / HTTP/1.1\nHost: a\r\n\n";

	ATF_CHECK_EQ(req(S(s)), (int)sizeof(s) - 5);
	ATF_CHECK_EQ(msg.nheaders, 2);
	ATF_CHECK(field(0, "Host", "a"));
	ATF_CHECK(field(1, "X", "b"));
	ATF_CHECK_EQ(msg.minor, 1);
	ATF_CHECK_EQ(req(S(mixed)), (int)sizeof(mixed) - 1);
	ATF_CHECK(field(0, "Host", "a"));
	CHECK_RESP("HTTP/1.1 200 OK\nContent-Length: 2\n\nhi", 35);
	ATF_CHECK_EQ(msg.content_length, 2);
}

ATF_TC_WITHOUT_HEAD(req_leading_empty);
ATF_TC_BODY(req_leading_empty, tc)
{
	static const char	 s[] = "\r\n\nGET / HTTP/1.1\r\n\r\n";

	ATF_CHECK_EQ(req(S(s)), (int)sizeof(s) - 1);
	ATF_CHECK(msg.method == s + 3);
	ATF_CHECK(is(msg.method, msg.methodlen, "GET"));
	/* eight are skipped, not nine */
	CHECK_REQ_OK("\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n");
	CHECK_REQ("\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\n\r\nGET / HTTP/1.1\r\n\r\n",
	    -400);
	/* only empty lines so far: wait */
	CHECK_REQ("\r\n\r\n", 0);
	CHECK_REQ("\r\n\r", 0);
	/* a line of spaces is not empty */
	CHECK_REQ(" \r\nGET / HTTP/1.1\r\n\r\n", -400);
	/* responses have none */
	CHECK_RESP("\r\nHTTP/1.1 200 OK\r\n\r\n", -400);
}

ATF_TC_WITHOUT_HEAD(req_incomplete);
ATF_TC_BODY(req_incomplete, tc)
{
	static const char	*good[] = {
		"\r\nPOST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n",
		"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n",
		"GET / HTTP/1.0\nX:\nY:  \t\n\n",
		NULL
	};
	size_t			 i, k, len;
	int			 r;

	for (i = 0; good[i] != NULL; i++) {
		len = strlen(good[i]);
		for (k = 0; k < len; k++) {
			r = req(good[i], k);
			ATF_CHECK_MSG(r == 0, "\"%s\", %zu bytes: %d",
			    show(good[i], len), k, r);
		}
		r = req(good[i], len);
		/* the first has TE and CL: complete, then refused */
		ATF_CHECK_EQ(r, i == 0 ? -400 : (int)len);
	}
	/* the same for a response */
	len = strlen("HTTP/1.1 204\r\nServer: x\r\n\r\n");
	for (k = 0; k < len; k++)
		ATF_CHECK_EQ(resp("HTTP/1.1 204\r\nServer: x\r\n\r\n", k), 0);
	ATF_CHECK_EQ(resp("HTTP/1.1 204\r\nServer: x\r\n\r\n", len),
	    (int)len);
	/* an error in a complete line is seen before the end */
	CHECK_REQ("GET / HTTP/1.1\r\nBad Field: x\r\nHost: a", -400);
	CHECK_REQ("GET  / HTTP/1.1\r\n", -400);
}

ATF_TC_WITHOUT_HEAD(req_max);
ATF_TC_BODY(req_max, tc)
{
	static const char	 s[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
	size_t			 n = sizeof(s) - 1, i;
	char			*big;

	ATF_CHECK_EQ(h1_parse_request(s, n, n, &msg), (int)n);
	ATF_CHECK_EQ(h1_parse_request(s, n, n + 1, &msg), (int)n);
	ATF_CHECK_EQ(h1_parse_request(s, n, n - 1, &msg), -431);
	ATF_CHECK_EQ(h1_parse_request(s, n, 0, &msg), -431);
	/* incomplete, shorter than max: wait; as long or longer: -431 */
	ATF_CHECK_EQ(h1_parse_request(s, n - 1, n, &msg), 0);
	ATF_CHECK_EQ(h1_parse_request(s, n - 1, n - 1, &msg), -431);
	ATF_CHECK_EQ(h1_parse_request(s, n - 1, 10, &msg), -431);
	/* the same inside the start line */
	ATF_CHECK_EQ(h1_parse_request(s, 14, 15, &msg), 0);
	ATF_CHECK_EQ(h1_parse_request(s, 14, 14, &msg), -431);
	ATF_CHECK_EQ(h1_parse_request(s, 14, 15, &msg), 0);
	ATF_CHECK_EQ(h1_parse_request("\r\n\r\n", 4, 4, &msg), -431);
	ATF_CHECK_EQ(h1_parse_response("HTTP/1.1 200 OK\r\n\r\n", 19, 18,
	    &msg), -431);

	/* one long field, no end in sight */
	ATF_REQUIRE((big = malloc(3 * MAX)) != NULL);
	memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
	for (i = 19; i < 3 * MAX; i++)
		big[i] = 'a';
	ATF_CHECK_EQ(req(big, MAX - 1), 0);
	ATF_CHECK_EQ(req(big, MAX), -431);
	ATF_CHECK_EQ(req(big, 3 * MAX), -431);
	/* the same, ended after max */
	memcpy(big + 2 * MAX, "\r\n\r\n", 4);
	ATF_CHECK_EQ(req(big, 3 * MAX), -431);
	ATF_CHECK_EQ(h1_parse_request(big, 3 * MAX, 3 * MAX, &msg),
	    2 * MAX + 4);
	/* a max over INT_MAX is not a problem */
	ATF_CHECK_EQ(h1_parse_request(big, 3 * MAX, (size_t)-1, &msg),
	    2 * MAX + 4);
	free(big);
}

ATF_TC_WITHOUT_HEAD(req_too_many_headers);
ATF_TC_BODY(req_too_many_headers, tc)
{
	char	 s[4096];
	size_t	 i, n;

	n = snprintf(s, sizeof(s), "GET / HTTP/1.1\r\n");
	for (i = 0; i < H1_MAX_HEADERS; i++)
		n += snprintf(s + n, sizeof(s) - n, "X%zu: %zu\r\n", i, i);
	n += snprintf(s + n, sizeof(s) - n, "\r\n");
	ATF_REQUIRE(n < sizeof(s) - 32);
	ATF_CHECK_EQ(req(s, n), (int)n);
	ATF_CHECK_EQ(msg.nheaders, H1_MAX_HEADERS);
	ATF_CHECK(field(99, "X99", "99"));

	/* one more, and it is refused as soon as that field is seen */
	n -= 2;
	n += snprintf(s + n, sizeof(s) - n, "Y: y\r\n");
	ATF_CHECK_EQ(req(s, n), -431);
	n += snprintf(s + n, sizeof(s) - n, "\r\n");
	ATF_CHECK_EQ(req(s, n), -431);
	ATF_CHECK_EQ(resp(s, n), -400);	/* not a status line */
	memcpy(s, "HTTP/1.1 200 X\r\n", 16);
	ATF_CHECK_EQ(resp(s, n), -431);
}

ATF_TC_WITHOUT_HEAD(req_malformed);
ATF_TC_BODY(req_malformed, tc)
{
	/* obs-fold, at the first field and after one */
	CHECK_REQ("GET / HTTP/1.1\r\n Host: a\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n", -400);
	/* whitespace before the colon, no colon, no name */
	CHECK_REQ("GET / HTTP/1.1\r\nHost : a\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nHost\t: a\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nHost a\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\n: a\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nX/Y: a\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nX\x80: a\r\n\r\n", -400);
	/* control bytes in a value */
	CHECK_REQ("GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nX: \0\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nX: a\x01\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nX: a\x1b[0m\r\n\r\n", -400);
	/* a CR alone, wherever it is */
	CHECK_REQ("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nX: a\r\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\rHost: a\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\n\r\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1\r\r\n\r\n", -400);
	CHECK_REQ("GET /\r HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("\rGET / HTTP/1.1\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 200 OK\r\nX: a\rb\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 200 O\rK\r\n\r\n", -400);
	/* the method */
	CHECK_REQ("G(T / HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("GE\x80T / HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("G\0T / HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ(" / HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("GET\t/ HTTP/1.1\r\n\r\n", -400);
	/* the target */
	CHECK_REQ("GET /a b HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("GET /a\x01 HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("GET /a\x7f HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("GET /caf\xc3\xa9 HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("GET /a\tb HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("GET /\0 HTTP/1.1\r\n\r\n", -400);
	/* the spaces */
	CHECK_REQ("GET  / HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("GET /  HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.1 \r\n\r\n", -400);
	CHECK_REQ("GET HTTP/1.1\r\n\r\n", -400);
	CHECK_REQ("GET /\r\n\r\n", -400);
	CHECK_REQ("GET\r\n\r\n", -400);
	CHECK_REQ("GET / \r\n\r\n", -400);
	/* the version */
	CHECK_REQ("GET / HTTP/1.1x\r\n\r\n", -400);
	CHECK_REQ("GET / http/1.1\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/11.1\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1,1\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/1.a\r\n\r\n", -400);
	CHECK_REQ("GET / HTTP/2\r\n\r\n", -400);
	CHECK_REQ("GET / HTTPS/1.1\r\n\r\n", -400);
	/* two Host fields */
	CHECK_REQ("GET / HTTP/1.1\r\nHost: a\r\nhost: a\r\n\r\n", -400);
	/* a value with obs-text is fine */
	CHECK_REQ_OK("GET / HTTP/1.1\r\nX: caf\xc3\xa9\r\n\r\n");
	ATF_CHECK(field(0, "X", "caf\xc3\xa9"));
}

ATF_TC_WITHOUT_HEAD(req_version);
ATF_TC_BODY(req_version, tc)
{
	CHECK_REQ_OK("GET / HTTP/1.0\r\n\r\n");
	ATF_CHECK_EQ(msg.minor, 0);
	CHECK_REQ_OK("GET / HTTP/1.1\r\n\r\n");
	ATF_CHECK_EQ(msg.minor, 1);
	CHECK_REQ("GET / HTTP/2.0\r\n\r\n", -505);
	CHECK_REQ("GET / HTTP/1.2\r\n\r\n", -505);
	CHECK_REQ("GET / HTTP/0.9\r\n\r\n", -505);
	CHECK_REQ("GET / HTTP/3.0\r\n\r\n", -505);
	CHECK_REQ("GET / HTTP/9.9\r\n\r\n", -505);
	/* -505 as soon as the line is complete */
	CHECK_REQ("PRI * HTTP/2.0\r\n", -505);
}

ATF_TC_WITHOUT_HEAD(req_content_length);
ATF_TC_BODY(req_content_length, tc)
{
	static const char	*bad[] = { "+5", "5 5", "-1", "-0",
				    "99999999999999999999",
				    "9223372036854775808", "", "0x5", "5,",
				    "5, 5", "5;", "5.0", "\xd9\xa5", NULL };
	char			 s[256];
	size_t			 i;
	int			 r;

	for (i = 0; bad[i] != NULL; i++) {
		snprintf(s, sizeof(s), "POST / HTTP/1.1\r\n"
		    "Content-Length: %s\r\n\r\n", bad[i]);
		r = req(s, strlen(s));
		ATF_CHECK_MSG(r == -400, "Content-Length \"%s\": %d",
		    bad[i], r);
		r = resp(s, strlen(s));
		ATF_CHECK_EQ(r, -400);
	}

	CHECK_REQ_OK("POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n");
	ATF_CHECK_EQ(msg.content_length, 0);
	ATF_CHECK_EQ(msg.ncontent_length, 1);
	CHECK_REQ_OK("POST / HTTP/1.1\r\ncontent-length: 0005\r\n\r\n");
	ATF_CHECK_EQ(msg.content_length, 5);
	CHECK_REQ_OK("POST / HTTP/1.1\r\nCONTENT-LENGTH:  \t42 \t\r\n\r\n");
	ATF_CHECK_EQ(msg.content_length, 42);
	CHECK_REQ_OK("POST / HTTP/1.1\r\n"
	    "Content-Length: 9223372036854775807\r\n\r\n");
	ATF_CHECK_EQ(msg.content_length, INT64_MAX);

	/* the same twice: the caller decides */
	CHECK_REQ_OK("POST / HTTP/1.1\r\nContent-Length: 5\r\n"
	    "Content-Length: 5\r\n\r\n");
	ATF_CHECK_EQ(msg.content_length, 5);
	ATF_CHECK_EQ(msg.ncontent_length, 2);
	CHECK_REQ_OK("POST / HTTP/1.1\r\nContent-Length: 5\r\n"
	    "Content-Length: 05\r\n\r\n");
	ATF_CHECK_EQ(msg.ncontent_length, 2);
	/* two that differ */
	CHECK_REQ("POST / HTTP/1.1\r\nContent-Length: 5\r\n"
	    "Content-Length: 6\r\n\r\n", -400);
	CHECK_REQ("POST / HTTP/1.1\r\nContent-Length: 0\r\n"
	    "Content-Length: 5\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
	    "Content-Length: 6\r\n\r\n", -400);
	/* a name that only starts the same is another field */
	CHECK_REQ_OK("POST / HTTP/1.1\r\nContent-Lengthx: y\r\n\r\n");
	ATF_CHECK_EQ(msg.content_length, -1);
	ATF_CHECK_EQ(msg.ncontent_length, 0);
}

ATF_TC_WITHOUT_HEAD(req_transfer_encoding);
ATF_TC_BODY(req_transfer_encoding, tc)
{
	CHECK_REQ_OK("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n");
	ATF_CHECK_EQ(msg.te, 1);
	ATF_CHECK_EQ(msg.chunked, 1);
	ATF_CHECK_EQ(msg.content_length, -1);
	CHECK_REQ_OK("POST / HTTP/1.1\r\ntransfer-encoding: ChUnKeD\r\n\r\n");
	ATF_CHECK_EQ(msg.chunked, 1);
	CHECK_REQ_OK("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n"
	    "\r\n");
	ATF_CHECK_EQ(msg.te, 1);
	ATF_CHECK_EQ(msg.chunked, 1);
	CHECK_REQ_OK("POST / HTTP/1.1\r\nTransfer-Encoding: gzip,chunked ,\r\n"
	    "\r\n");
	ATF_CHECK_EQ(msg.chunked, 1);
	/*
	 * Two fields: refused, whatever they say, even the same (another
	 * party could take the first, or join them otherwise).
	 */
	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", -400);
	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	    "Transfer-Encoding: gzip\r\n\r\n", -400);
	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	    "transfer-encoding: chunked\r\n\r\n", -400);
	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	    "Host: a\r\nTransfer-Encoding: chunked\r\n\r\n", -400);

	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n", -501);
	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked, gzip\r\n"
	    "\r\n", -501);
	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: chunkedx\r\n\r\n",
	    -501);
	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked;q=1\r\n"
	    "\r\n", -501);
	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: identity\r\n\r\n",
	    -501);
	/* no coding at all */
	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding:\r\n\r\n", -400);
	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: , ,\r\n\r\n", -400);
	/* with Content-Length, either order, even when not chunked */
	CHECK_REQ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	    "Content-Length: 5\r\n\r\n", -400);
	CHECK_REQ("POST / HTTP/1.1\r\nContent-Length: 5\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n", -400);
	CHECK_REQ("POST / HTTP/1.1\r\nContent-Length: 5\r\n"
	    "Transfer-Encoding: gzip\r\n\r\n", -400);
	/* on HTTP/1.0 */
	CHECK_REQ("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
	    -400);
}

/* keepalive of a request of version minor with Connection: conn. */
static int
keepalive(int minor, const char *conn)
{
	char	 s[256];
	int	 r;

	if (conn != NULL)
		snprintf(s, sizeof(s), "GET / HTTP/1.%d\r\nConnection: %s\r\n"
		    "\r\n", minor, conn);
	else
		snprintf(s, sizeof(s), "GET / HTTP/1.%d\r\n\r\n", minor);
	r = req(s, strlen(s));
	ATF_REQUIRE_EQ_MSG(r, (int)strlen(s), "%s", show(s, strlen(s)));
	return (msg.keepalive);
}

ATF_TC_WITHOUT_HEAD(req_keepalive);
ATF_TC_BODY(req_keepalive, tc)
{
	ATF_CHECK_EQ(keepalive(1, NULL), 1);
	ATF_CHECK_EQ(keepalive(1, "close"), 0);
	ATF_CHECK_EQ(keepalive(1, "Close"), 0);
	ATF_CHECK_EQ(keepalive(1, "keep-alive"), 1);
	ATF_CHECK_EQ(keepalive(1, "foo, close"), 0);
	ATF_CHECK_EQ(keepalive(1, "keep-alive, close"), 0);
	ATF_CHECK_EQ(keepalive(1, "closed"), 1);
	ATF_CHECK_EQ(keepalive(1, "upgrade"), 1);
	ATF_CHECK_EQ(keepalive(0, NULL), 0);
	ATF_CHECK_EQ(keepalive(0, "close"), 0);
	ATF_CHECK_EQ(keepalive(0, "keep-alive"), 1);
	ATF_CHECK_EQ(keepalive(0, "Keep-Alive"), 1);
	ATF_CHECK_EQ(keepalive(0, "foo, keep-alive"), 1);
	ATF_CHECK_EQ(keepalive(0, "foo, close"), 0);
	ATF_CHECK_EQ(keepalive(0, "keep-alive, close"), 0);
	ATF_CHECK_EQ(keepalive(0, "keep-alives"), 0);

	/* several Connection fields: all count */
	CHECK_REQ_OK("GET / HTTP/1.1\r\nConnection: upgrade\r\n"
	    "connection: close\r\n\r\n");
	ATF_CHECK_EQ(msg.keepalive, 0);
	CHECK_REQ_OK("GET / HTTP/1.0\r\nConnection: keep-alive\r\n"
	    "Connection: close\r\n\r\n");
	ATF_CHECK_EQ(msg.keepalive, 0);
	CHECK_REQ_OK("GET / HTTP/1.0\r\nConnection: x\r\n"
	    "Connection: keep-alive\r\n\r\n");
	ATF_CHECK_EQ(msg.keepalive, 1);
}

ATF_TC_WITHOUT_HEAD(req_expect);
ATF_TC_BODY(req_expect, tc)
{
	CHECK_REQ_OK("POST / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n");
	ATF_CHECK_EQ(msg.expect_continue, 1);
	CHECK_REQ_OK("POST / HTTP/1.1\r\nexpect:  100-Continue \r\n\r\n");
	ATF_CHECK_EQ(msg.expect_continue, 1);
	CHECK_REQ_OK("POST / HTTP/1.1\r\nX: 1\r\nEXPECT:100-CONTINUE\r\n\r\n");
	ATF_CHECK_EQ(msg.expect_continue, 1);
	CHECK_REQ_OK("POST / HTTP/1.1\r\nExpect: 100-continues\r\n\r\n");
	ATF_CHECK_EQ(msg.expect_continue, 0);
	CHECK_REQ_OK("POST / HTTP/1.1\r\nExpect: 200-ok\r\n\r\n");
	ATF_CHECK_EQ(msg.expect_continue, 0);
	CHECK_REQ_OK("POST / HTTP/1.1\r\nX-Expect: 100-continue\r\n\r\n");
	ATF_CHECK_EQ(msg.expect_continue, 0);
	CHECK_REQ_OK("POST / HTTP/1.1\r\n\r\n");
	ATF_CHECK_EQ(msg.expect_continue, 0);
	/* an HTTP/1.0 client's expectation is ignored (RFC 9110 10.1.1) */
	CHECK_REQ_OK("POST / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n");
	ATF_CHECK_EQ(msg.expect_continue, 0);
	/* not for responses */
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\nExpect: 100-continue\r\n\r\n");
	ATF_CHECK_EQ(msg.expect_continue, 0);
}

ATF_TC_WITHOUT_HEAD(req_ows);
ATF_TC_BODY(req_ows, tc)
{
	static const char	 s[] = "GET / HTTP/1.1\r\n"
				    "A: \t a b \t \r\n"
				    "B:c\r\n"
				    "C:\r\n"
				    "D:   \t \r\n"
				    "E:\tx\ty\n"
				    "\r\n";

	ATF_REQUIRE_EQ(req(S(s)), (int)sizeof(s) - 1);
	ATF_CHECK_EQ(msg.nheaders, 5);
	ATF_CHECK(field(0, "A", "a b"));
	ATF_CHECK(field(1, "B", "c"));
	ATF_CHECK(field(2, "C", ""));
	ATF_CHECK(field(3, "D", ""));
	ATF_CHECK(field(4, "E", "x\ty"));
	/* an empty value still points into the buffer */
	ATF_CHECK(msg.headers[2].value >= s &&
	    msg.headers[2].value <= s + sizeof(s));
	ATF_CHECK(msg.headers[0].value == s + 21);
}

ATF_TC_WITHOUT_HEAD(find);
ATF_TC_BODY(find, tc)
{
	static const char	 s[] = "GET / HTTP/1.1\r\n"
				    "Host: one\r\n"
				    "X-Thing: a\r\n"
				    "x-thing: b\r\n"
				    "\r\n";
	const struct h1_header	*h;

	ATF_REQUIRE_EQ(req(S(s)), (int)sizeof(s) - 1);
	ATF_REQUIRE((h = h1_find(&msg, "host")) != NULL);
	ATF_CHECK(is(h->value, h->valuelen, "one"));
	ATF_REQUIRE((h = h1_find(&msg, "HOST")) != NULL);
	ATF_CHECK(h == &msg.headers[0]);
	ATF_REQUIRE((h = h1_find(&msg, "X-THING")) != NULL);
	ATF_CHECK(is(h->value, h->valuelen, "a"));
	ATF_CHECK(h1_find(&msg, "Hos") == NULL);
	ATF_CHECK(h1_find(&msg, "Hostx") == NULL);
	ATF_CHECK(h1_find(&msg, "X-Thin") == NULL);
	ATF_CHECK(h1_find(&msg, "") == NULL);
	ATF_CHECK(h1_find(&msg, "Content-Length") == NULL);
}

/* Issue 29, item 10: the fields a Connection field names are this hop's
 * (RFC 9110 7.6.1), in any case and any place of its list, from any of
 * its Connection fields; others are not. */
ATF_TC_WITHOUT_HEAD(hop_in);
ATF_TC_BODY(hop_in, tc)
{
	static const char	 s[] = "POST / HTTP/1.1\r\n"
				    "Host: one\r\n"
				    "Connection: keep-alive, X-Hop ,x-other\r\n"
				    "X-Hop: 1\r\n"
				    "X-Other: 2\r\n"
				    "connection: X-Third\r\n"
				    "X-Third: 3\r\n"
				    "X-Kept: 4\r\n"
				    "X-Ho: 5\r\n"
				    "\r\n";

	ATF_REQUIRE_EQ(req(S(s)), (int)sizeof(s) - 1);
	ATF_CHECK(h1_hop_in(&msg, S("X-Hop")));
	ATF_CHECK(h1_hop_in(&msg, S("x-hop")));
	ATF_CHECK(h1_hop_in(&msg, S("X-Other")));
	ATF_CHECK(h1_hop_in(&msg, S("X-Third")));
	ATF_CHECK(h1_hop_in(&msg, S("Keep-Alive")));
	ATF_CHECK(h1_hop_in(&msg, S("Connection")));
	ATF_CHECK(h1_hop_in(&msg, S("Host")));
	ATF_CHECK(!h1_hop_in(&msg, S("X-Kept")));
	ATF_CHECK(!h1_hop_in(&msg, S("X-Ho")));
	ATF_CHECK(!h1_hop_in(&msg, S("X-Hop2")));
	ATF_CHECK(!h1_hop_in(&msg, S("Content-Type")));
}

ATF_TC_WITHOUT_HEAD(has_token);
ATF_TC_BODY(has_token, tc)
{
	ATF_CHECK(h1_has_token(S("close"), "close"));
	ATF_CHECK(h1_has_token(S("Close"), "close"));
	ATF_CHECK(h1_has_token(S("close"), "CLOSE"));
	ATF_CHECK(h1_has_token(S(" foo ,\tclose\t"), "close"));
	ATF_CHECK(h1_has_token(S("foo,,close,"), "close"));
	ATF_CHECK(h1_has_token(S("close,foo"), "close"));
	ATF_CHECK(h1_has_token(S("keep-alive, Upgrade"), "upgrade"));
	ATF_CHECK(!h1_has_token(S("closed"), "close"));
	ATF_CHECK(!h1_has_token(S("clos"), "close"));
	ATF_CHECK(!h1_has_token(S("xclose"), "close"));
	ATF_CHECK(!h1_has_token(S("cl ose"), "close"));
	ATF_CHECK(!h1_has_token(S("close;x"), "close"));
	ATF_CHECK(!h1_has_token(S(""), "close"));
	ATF_CHECK(!h1_has_token(S(" , ,"), "close"));
	ATF_CHECK(!h1_has_token(S("foo"), "close"));
	/* only len bytes count */
	ATF_CHECK(!h1_has_token("foo, close", 6, "close"));
	ATF_CHECK(h1_has_token("foo, closed", 10, "close"));
}

ATF_TC_WITHOUT_HEAD(resp_status);
ATF_TC_BODY(resp_status, tc)
{
	static const char	 s[] = "HTTP/1.1 200 OK\r\n"
				    "Content-Length: 2\r\n\r\nhi";
	static const char	 empty[] = "HTTP/1.1 204 \r\n\r\n";
	static const char	 none[] = "HTTP/1.1 204\r\n\r\n";

	ATF_REQUIRE_EQ(resp(S(s)), (int)sizeof(s) - 3);
	ATF_CHECK_EQ(msg.status, 200);
	ATF_CHECK(is(msg.reason, msg.reasonlen, "OK"));
	ATF_CHECK_EQ(msg.minor, 1);
	ATF_CHECK(msg.method == NULL && msg.target == NULL);
	ATF_CHECK_EQ(msg.content_length, 2);
	ATF_CHECK_EQ(msg.keepalive, 1);
	ATF_CHECK(field(0, "Content-Length", "2"));

	ATF_CHECK_EQ(resp(S(empty)), (int)sizeof(empty) - 1);
	ATF_CHECK_EQ(msg.status, 204);
	ATF_CHECK(msg.reason == empty + 13 && msg.reasonlen == 0);
	ATF_CHECK_EQ(resp(S(none)), (int)sizeof(none) - 1);
	ATF_CHECK_EQ(msg.status, 204);
	ATF_CHECK(msg.reason == none + 12 && msg.reasonlen == 0);

	CHECK_RESP_OK("HTTP/1.0 404 Not Found\r\n\r\n");
	ATF_CHECK_EQ(msg.status, 404);
	ATF_CHECK_EQ(msg.minor, 0);
	ATF_CHECK(is(msg.reason, msg.reasonlen, "Not Found"));
	CHECK_RESP_OK("HTTP/1.1 100 Continue\r\n\r\n");
	ATF_CHECK_EQ(msg.status, 100);
	CHECK_RESP_OK("HTTP/1.1 999 \tx\xff \r\n\r\n");
	ATF_CHECK_EQ(msg.status, 999);
	ATF_CHECK(is(msg.reason, msg.reasonlen, "\tx\xff "));
}

ATF_TC_WITHOUT_HEAD(resp_bad);
ATF_TC_BODY(resp_bad, tc)
{
	CHECK_RESP("HTTP/1.1 99 OK\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 099 OK\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 1000 OK\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 1000\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 abc OK\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 2x0 OK\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 20\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1  200 OK\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 200\tOK\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 200 O\x01K\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 200 O\0K\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 \r\n\r\n", -400);
	CHECK_RESP("http/1.1 200 OK\r\n\r\n", -400);
	CHECK_RESP("HTTP/2.0 200 OK\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.2 200 OK\r\n\r\n", -400);
	CHECK_RESP("HTTP/0.9 200 OK\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1x200 OK\r\n\r\n", -400);
	CHECK_RESP("GET / HTTP/1.1\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 200 OK\r\n Folded: x\r\n\r\n", -400);
	CHECK_RESP("HTTP/1.1 200 OK\r\nX : y\r\n\r\n", -400);
	/* not a request's rules: two Host fields are no matter */
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\nHost: a\r\nHost: b\r\n\r\n");
}

ATF_TC_WITHOUT_HEAD(resp_framing);
ATF_TC_BODY(resp_framing, tc)
{
	/* chunked: Content-Length is ignored */
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	ATF_CHECK_EQ(msg.chunked, 1);
	ATF_CHECK_EQ(msg.te, 1);
	ATF_CHECK_EQ(msg.content_length, -1);
	ATF_CHECK_EQ(msg.ncontent_length, 1);
	ATF_CHECK_EQ(msg.keepalive, 0);
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	ATF_CHECK_EQ(msg.chunked, 1);
	ATF_CHECK_EQ(msg.content_length, -1);
	ATF_CHECK_EQ(msg.keepalive, 1);
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n"
	    "\r\n");
	ATF_CHECK_EQ(msg.chunked, 1);
	/* not chunked: read until the close */
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\nTransfer-Encoding: identity\r\n"
	    "\r\n");
	ATF_CHECK_EQ(msg.te, 1);
	ATF_CHECK_EQ(msg.chunked, 0);
	ATF_CHECK_EQ(msg.content_length, -1);
	ATF_CHECK_EQ(msg.keepalive, 0);
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n"
	    "Content-Length: 3\r\n\r\n");
	ATF_CHECK_EQ(msg.chunked, 0);
	ATF_CHECK_EQ(msg.content_length, -1);
	ATF_CHECK_EQ(msg.keepalive, 0);
	CHECK_RESP("HTTP/1.1 200 OK\r\nTransfer-Encoding:\r\n\r\n", -400);
	/* two fields of a response: the last one's last coding counts */
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n");
	ATF_CHECK_EQ(msg.chunked, 1);
	/* on HTTP/1.0, as a response: no -400 */
	CHECK_RESP_OK("HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
	ATF_CHECK_EQ(msg.chunked, 1);
	/* Content-Length alone */
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n");
	ATF_CHECK_EQ(msg.content_length, 12);
	ATF_CHECK_EQ(msg.te, 0);
	ATF_CHECK_EQ(msg.chunked, 0);
	ATF_CHECK_EQ(msg.keepalive, 1);
	/* neither */
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\n\r\n");
	ATF_CHECK_EQ(msg.content_length, -1);
	ATF_CHECK_EQ(msg.chunked, 0);
}

ATF_TC_WITHOUT_HEAD(resp_keepalive);
ATF_TC_BODY(resp_keepalive, tc)
{
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\n\r\n");
	ATF_CHECK_EQ(msg.keepalive, 1);
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
	ATF_CHECK_EQ(msg.keepalive, 0);
	CHECK_RESP_OK("HTTP/1.1 200 OK\r\nConnection: x, CLOSE\r\n\r\n");
	ATF_CHECK_EQ(msg.keepalive, 0);
	CHECK_RESP_OK("HTTP/1.0 200 OK\r\n\r\n");
	ATF_CHECK_EQ(msg.keepalive, 0);
	CHECK_RESP_OK("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n\r\n");
	ATF_CHECK_EQ(msg.keepalive, 1);
	CHECK_RESP_OK("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\n"
	    "Connection: close\r\n\r\n");
	ATF_CHECK_EQ(msg.keepalive, 0);
}

/* What decoding a message in pieces gave. */
struct dec {
	char	 out[8192];
	size_t	 outlen;
	size_t	 used;		/* input bytes consumed */
	int	 done;
	int	 err;
};

/*
 * Decode msg (len bytes): first a piece of first bytes, then pieces of
 * step bytes; 0 for either means the rest at once.  Each piece goes
 * into a buffer of its own size, as reads would.
 */
static void
decode(const char *m, size_t len, size_t first, size_t step, struct dec *d)
{
	struct h1_chunked	 c;
	char			*buf, more[11];
	size_t			 off = 0, n, dl;
	ssize_t			 r;
	int			 done;

	memset(d, 0, sizeof(*d));
	h1_chunked_init(&c);
	while (off < len) {
		n = off == 0 ? first : step;
		if (n == 0 || n > len - off)
			n = len - off;
		ATF_REQUIRE((buf = malloc(n)) != NULL);
		memcpy(buf, m + off, n);
		r = h1_chunked_decode(&c, buf, n, &dl, &done);
		if (r == -1) {
			/* and it stays an error */
			memcpy(buf, m + off, n);
			ATF_CHECK_EQ(h1_chunked_decode(&c, buf, n, &dl,
			    &done), -1);
			free(buf);
			d->err = 1;
			return;
		}
		ATF_REQUIRE(r >= 0 && (size_t)r <= n && dl <= (size_t)r);
		ATF_REQUIRE(done || (size_t)r == n);
		ATF_REQUIRE(d->outlen + dl <= sizeof(d->out));
		memcpy(d->out + d->outlen, buf, dl);
		free(buf);
		d->outlen += dl;
		d->used += r;
		off += n;
		if ((d->done = done))
			break;
	}
	/* once done, done: the next message is not touched */
	if (d->done) {
		memcpy(more, "1\r\nx\r\n0\r\n\r\n", 11);
		ATF_CHECK_EQ(h1_chunked_decode(&c, more, 11, &dl, &done), 0);
		ATF_CHECK(done == 1 && dl == 0);
		ATF_CHECK(memcmp(more, "1\r\nx\r\n", 6) == 0);
	}
}

/* Decode m whole; check the data, done and the bytes used. */
static void
check_decode(const char *m, size_t len, const char *want, int wdone,
    size_t wused)
{
	struct dec	 d;

	decode(m, len, 0, 0, &d);
	ATF_CHECK_MSG(!d.err, "\"%s\": error", show(m, len));
	ATF_CHECK_MSG(d.outlen == strlen(want) &&
	    memcmp(d.out, want, d.outlen) == 0, "\"%s\": data \"%s\"",
	    show(m, len), show(d.out, d.outlen));
	ATF_CHECK_MSG(d.done == wdone, "\"%s\": done %d", show(m, len),
	    d.done);
	ATF_CHECK_MSG(d.used == wused, "\"%s\": used %zu, want %zu",
	    show(m, len), d.used, wused);
}

static int
decode_err(const char *m, size_t len)
{
	struct dec	 d;

	decode(m, len, 0, 0, &d);
	return (d.err);
}

#define CHECK_BAD(s)	ATF_CHECK_MSG(decode_err(S(s)), "\"%s\" accepted", \
			    show(S(s)))

ATF_TC_WITHOUT_HEAD(chunked_simple);
ATF_TC_BODY(chunked_simple, tc)
{
	struct h1_chunked	 c;
	char			 buf[64];
	size_t			 dl = 99;
	int			 done = 99;

	check_decode(S("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"),
	    "hello world", 1, 26);
	/* the data moves to the front of the buffer, in place */
	h1_chunked_init(&c);
	memcpy(buf, "3\r\nabc\r\n2\r\nde\r\n", 15);
	ATF_CHECK_EQ(h1_chunked_decode(&c, buf, 15, &dl, &done), 15);
	ATF_CHECK_EQ(dl, 5);
	ATF_CHECK_EQ(done, 0);
	ATF_CHECK(memcmp(buf, "abcde", 5) == 0);
	/* nothing in, nothing out */
	ATF_CHECK_EQ(h1_chunked_decode(&c, buf, 0, &dl, &done), 0);
	ATF_CHECK(dl == 0 && done == 0);
	memcpy(buf, "0\r\n\r\n", 5);
	ATF_CHECK_EQ(h1_chunked_decode(&c, buf, 5, &dl, &done), 5);
	ATF_CHECK(dl == 0 && done == 1);
	/* not done without the final empty line */
	check_decode(S("5\r\nhello\r\n0\r\n"), "hello", 0, 13);
	check_decode(S("5\r\nhello\r\n0\r\n\r"), "hello", 0, 14);
	/* bare LF */
	check_decode(S("3\nabc\n0\n\n"), "abc", 1, 9);
	check_decode(S("3\r\nabc\n0\r\n\n"), "abc", 1, 11);
	/* the data may hold anything */
	check_decode(S("4\r\n\r\n\r\n\r\n0\r\n\r\n"), "\r\n\r\n", 1, 14);
}

ATF_TC_WITHOUT_HEAD(chunked_ext);
ATF_TC_BODY(chunked_ext, tc)
{
	char	*s;
	size_t	 n;

	check_decode(S("5;name=val\r\nhello\r\n0;last\r\n\r\n"), "hello", 1,
	    29);
	check_decode(S("5;a=\"q;\\\"x\";b\r\nhello\r\n0\r\n\r\n"), "hello", 1,
	    27);
	check_decode(S("5 ;a\r\nhello\r\n0\t; b\r\n\r\n"), "hello", 1, 22);
	check_decode(S("5;\r\nhello\r\n0\r\n\r\n"), "hello", 1, 16);
	/* a size line of 4096 bytes, then one over */
	ATF_REQUIRE((s = malloc(8192)) != NULL);
	memcpy(s, "1;", 2);
	memset(s + 2, 'e', 4094);
	memcpy(s + 4096, "\r\nx\r\n0\r\n\r\n", 10);
	check_decode(s, 4106, "x", 1, 4106);
	n = 4097;
	memset(s + 2, 'e', n - 2);
	memcpy(s + n, "\r\nx\r\n0\r\n\r\n", 10);
	ATF_CHECK(decode_err(s, n + 10));
	/* the same with the digits or the spaces before the ";" */
	memset(s, '0', 4095);
	memcpy(s + 4095, "1\r\nx\r\n0\r\n\r\n", 11);
	check_decode(s, 4106, "x", 1, 4106);
	memset(s, '0', 4096);
	memcpy(s + 4096, "1\r\nx\r\n0\r\n\r\n", 11);
	ATF_CHECK(decode_err(s, 4107));
	memset(s, ' ', 4096);
	s[0] = '1';
	memcpy(s + 4096, ";\r\nx\r\n0\r\n\r\n", 11);
	ATF_CHECK(decode_err(s, 4107));
	s[4095] = ';';
	memcpy(s + 4096, "\r\nx\r\n0\r\n\r\n", 10);
	check_decode(s, 4106, "x", 1, 4106);
	free(s);
}

ATF_TC_WITHOUT_HEAD(chunked_trailers);
ATF_TC_BODY(chunked_trailers, tc)
{
	char	*s;

	check_decode(S("3\r\nabc\r\n0\r\nX-A: 1\r\nX-B: 2\r\n\r\n"), "abc", 1,
	    29);
	check_decode(S("0\r\nX-A: 1\nX-B: 2\r\n\n"), "", 1, 19);
	/* ignored, whatever they hold, but a bare CR */
	check_decode(S("0\r\n\x01\xff junk\r\n\r\n"), "", 1, 14);
	CHECK_BAD("0\r\nX-A: 1\rX\r\n\r\n");
	/* not done until the empty line */
	check_decode(S("0\r\nX-A: 1\r\n"), "", 0, 11);
	/* a trailer line of 4096 bytes, then one over */
	ATF_REQUIRE((s = malloc(8192)) != NULL);
	memcpy(s, "0\r\n", 3);
	memset(s + 3, 't', 4096);
	memcpy(s + 3 + 4096, "\r\n\r\n", 4);
	check_decode(s, 4103, "", 1, 4103);
	memset(s + 3, 't', 4097);
	memcpy(s + 3 + 4097, "\r\n\r\n", 4);
	ATF_CHECK(decode_err(s, 4104));
	free(s);
}

ATF_TC_WITHOUT_HEAD(chunked_hex);
ATF_TC_BODY(chunked_hex, tc)
{
	static const char	 d26[] = "abcdefghijklmnopqrstuvwxyz";
	char			 s[256];

	snprintf(s, sizeof(s), "a\r\n%.10s\r\nA\r\n%.10s\r\n6\r\n%.6s\r\n"
	    "0\r\n\r\n", d26, d26 + 10, d26 + 20);
	check_decode(s, strlen(s), d26, 1, strlen(s));
	snprintf(s, sizeof(s), "0000001A\r\n%s\r\n00\r\n\r\n", d26);
	check_decode(s, strlen(s), d26, 1, strlen(s));
	snprintf(s, sizeof(s), "1a\r\n%s\r\n0\r\n\r\n", d26);
	check_decode(s, strlen(s), d26, 1, strlen(s));
	snprintf(s, sizeof(s), "1A\r\n%s\r\n0\r\n\r\n", d26);
	check_decode(s, strlen(s), d26, 1, strlen(s));
	/* as large as may be: 2^62 - 1, then more leading zeros */
	check_decode(S("3fffffffffffffff\r\nab"), "ab", 0, 20);
	check_decode(S("00000000000000000000003FFFFFFFFFFFFFFF\r\nab"), "ab",
	    0, 42);
	check_decode(S("ffffffffffffff\r\nab"), "ab", 0, 18);
}

ATF_TC_WITHOUT_HEAD(chunked_zero);
ATF_TC_BODY(chunked_zero, tc)
{
	check_decode(S("0\r\n\r\n"), "", 1, 5);
	check_decode(S("0\n\n"), "", 1, 3);
	check_decode(S("000\r\n\r\n"), "", 1, 7);
	check_decode(S("0"), "", 0, 1);
}

ATF_TC_WITHOUT_HEAD(chunked_next);
ATF_TC_BODY(chunked_next, tc)
{
	static const char	 m[] = "3\r\nabc\r\n0\r\n\r\n"
				    "HTTP/1.1 200 OK\r\n\r\n";
	struct h1_chunked	 c;
	char			 buf[64];
	size_t			 dl;
	ssize_t			 r;
	int			 done;

	h1_chunked_init(&c);
	memcpy(buf, m, sizeof(m) - 1);
	r = h1_chunked_decode(&c, buf, sizeof(m) - 1, &dl, &done);
	ATF_CHECK_EQ(r, 13);
	ATF_CHECK_EQ(done, 1);
	ATF_CHECK_EQ(dl, 3);
	ATF_CHECK(memcmp(buf, "abc", 3) == 0);
	/* what follows is left alone */
	ATF_CHECK(memcmp(buf + 13, "HTTP/1.1 200 OK\r\n\r\n", 19) == 0);
	/* and a later call takes nothing */
	r = h1_chunked_decode(&c, buf + 13, 19, &dl, &done);
	ATF_CHECK(r == 0 && dl == 0 && done == 1);
	check_decode(S("0\r\nT: x\r\n\r\n0\r\n\r\n"), "", 1, 11);
	check_decode(S("1\nx\n0\n\nGET"), "x", 1, 7);
}

/* Whole, at every split point and a byte at a time, the same result. */
static void
check_splits(const char *m, size_t len)
{
	struct dec	 whole, d;
	size_t		 k, step;

	decode(m, len, 0, 0, &whole);
	for (k = 1; k < len; k++) {
		decode(m, len, k, 0, &d);
		ATF_CHECK_MSG(d.err == whole.err && d.done == whole.done &&
		    (d.err || (d.used == whole.used &&
		    d.outlen == whole.outlen &&
		    memcmp(d.out, whole.out, d.outlen) == 0)),
		    "\"%s\" split at %zu differs", show(m, len), k);
	}
	for (step = 1; step < 8; step++) {
		decode(m, len, step, step, &d);
		ATF_CHECK_MSG(d.err == whole.err && d.done == whole.done &&
		    (d.err || (d.used == whole.used &&
		    d.outlen == whole.outlen &&
		    memcmp(d.out, whole.out, d.outlen) == 0)),
		    "\"%s\" %zu bytes at a time differs", show(m, len), step);
	}
}

ATF_TC_WITHOUT_HEAD(chunked_split);
ATF_TC_BODY(chunked_split, tc)
{
	struct dec	 d;

	check_splits(S("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n"));
	check_splits(S("3;a=b\r\nabc\r\nA\r\n0123456789\r\n0\r\nT: x\r\n"
	    "\r\nNEXT"));
	check_splits(S("3\nabc\n0\nT: y\n\nXX"));
	check_splits(S("1 ; e\r\nx\r\n00\r\n\r\n"));
	check_splits(S("10\r\n0123456789abcdef\r\n1\r\n\n\r\n0\r\n\r\n"));
	check_splits(S("5\r\nhel"));
	/* errors, found wherever the input is cut */
	check_splits(S("5\r\nhelloX\r\n0\r\n\r\n"));
	check_splits(S("3\r\nabc\r\n0\r\n\rZ"));
	check_splits(S("3\r\nabc\r\nzz\r\n"));
	/* the whole decodes are what they should be */
	decode(S("3;a=b\r\nabc\r\nA\r\n0123456789\r\n0\r\nT: x\r\n\r\nNEXT"),
	    0, 0, &d);
	ATF_CHECK(d.done && d.used == 38 && d.outlen == 13 &&
	    memcmp(d.out, "abc0123456789", 13) == 0);
	decode(S("5\r\nhelloX\r\n0\r\n\r\n"), 1, 1, &d);
	ATF_CHECK(d.err);
}

ATF_TC_WITHOUT_HEAD(chunked_errors);
ATF_TC_BODY(chunked_errors, tc)
{
	/* the size */
	CHECK_BAD("g\r\n");
	CHECK_BAD("\r\n");
	CHECK_BAD("\n");
	CHECK_BAD(";x\r\n");
	CHECK_BAD(" 5\r\n");
	CHECK_BAD("-5\r\n");
	CHECK_BAD("+5\r\n");
	CHECK_BAD("0x5\r\n");
	CHECK_BAD("5 5\r\n");
	CHECK_BAD("5 \r\n");
	CHECK_BAD("5\t\r\n");
	CHECK_BAD("5\0\r\n");
	CHECK_BAD("4000000000000000\r\n");
	CHECK_BAD("10000000000000000\r\n");
	CHECK_BAD("ffffffffffffffffffff\r\n");
	/* the line ends */
	CHECK_BAD("3\rabc\r\n");
	CHECK_BAD("3;x\rabc\r\n");
	CHECK_BAD("3\r\nabcX");
	CHECK_BAD("3\r\nabc\rX");
	CHECK_BAD("3\r\nabc\r\r\n");
	CHECK_BAD("3\r\nabc3\r\nabc\r\n");
	CHECK_BAD("0\r\n\rX");
	CHECK_BAD("0\r\nT: x\rY");
	/* a later size */
	CHECK_BAD("3\r\nabc\r\nx\r\n");
	CHECK_BAD("3\r\nabc\r\n\r\n");
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, req_simple);
	ATF_TP_ADD_TC(tp, req_body);
	ATF_TP_ADD_TC(tp, req_bare_lf);
	ATF_TP_ADD_TC(tp, req_leading_empty);
	ATF_TP_ADD_TC(tp, req_incomplete);
	ATF_TP_ADD_TC(tp, req_max);
	ATF_TP_ADD_TC(tp, req_too_many_headers);
	ATF_TP_ADD_TC(tp, req_malformed);
	ATF_TP_ADD_TC(tp, req_version);
	ATF_TP_ADD_TC(tp, req_content_length);
	ATF_TP_ADD_TC(tp, req_transfer_encoding);
	ATF_TP_ADD_TC(tp, req_keepalive);
	ATF_TP_ADD_TC(tp, req_expect);
	ATF_TP_ADD_TC(tp, req_ows);
	ATF_TP_ADD_TC(tp, find);
	ATF_TP_ADD_TC(tp, has_token);
	ATF_TP_ADD_TC(tp, hop_in);
	ATF_TP_ADD_TC(tp, resp_status);
	ATF_TP_ADD_TC(tp, resp_bad);
	ATF_TP_ADD_TC(tp, resp_framing);
	ATF_TP_ADD_TC(tp, resp_keepalive);
	ATF_TP_ADD_TC(tp, chunked_simple);
	ATF_TP_ADD_TC(tp, chunked_ext);
	ATF_TP_ADD_TC(tp, chunked_trailers);
	ATF_TP_ADD_TC(tp, chunked_hex);
	ATF_TP_ADD_TC(tp, chunked_zero);
	ATF_TP_ADD_TC(tp, chunked_next);
	ATF_TP_ADD_TC(tp, chunked_split);
	ATF_TP_ADD_TC(tp, chunked_errors);
	return (atf_no_error());
}
