/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * multipart/form-data (multipart.c): the boundary of a Content-Type, and
 * the scan of a body: its framing, the model's byte range, the stream
 * field, each refusal with its message; the delimiter search at each
 * width against memmem(3), and marks taken as a body comes in.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "multipart.h"

#define MAX	(1024 * 1024)
/* A string literal and its length, NULs inside it counted. */
#define S(s)	(s), (sizeof(s) - 1)

#define CD	"Content-Disposition: form-data; "
/* A form with boundary "b" of a model field and a file. */
#define FORM(model)							\
	"--b\r\n" CD "name=\"file\"; filename=\"a.wav\"\r\n"		\
	"Content-Type: audio/wav\r\n\r\n"				\
	"RIFF\r\n--\r\n-b\r\nx--b\r\n-b--\r\n"					\
	"--b\r\n" CD "name=\"model\"\r\n\r\n" model "\r\n"		\
	"--b--\r\n"

static struct mform	 f;
static const char	*err;

static int
scan(const char *s, size_t len)
{
	err = NULL;
	return (multipart_scan(s, len, "b", MAX, NULL, &f, &err));
}

/* s is refused 400 with a message that has want in it. */
#define CHECK_BAD(s, want) do {						\
	int r_ = scan(S(s));						\
	ATF_CHECK_EQ_MSG(r_, -400, "%s: %d", #s, r_);			\
	ATF_CHECK_MSG(err != NULL && strstr(err, (want)) != NULL,	\
	    "%s: message '%s', want '%s'", #s, err ? err : "(none)",	\
	    (want));							\
} while (0)

/* The model's value as the scan found it. */
static const char *
model_of(const char *s)
{
	static char	 buf[256];

	ATF_REQUIRE(f.has_model && f.model_len < sizeof(buf));
	memcpy(buf, s + f.model_off, f.model_len);
	buf[f.model_len] = '\0';
	return (buf);
}

/* A form whose model is n bytes of 'm', scanned. */
static int
scan_model(size_t n)
{
	char	 buf[512];
	int	 len;

	ATF_REQUIRE(n < 256);
	len = snprintf(buf, sizeof(buf), "--b\r\n" CD "name=model\r\n\r\n"
	    "%.*s\r\n--b--\r\n", (int)n, "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm"
	    "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm"
	    "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm"
	    "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm"
	    "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmm");
	ATF_REQUIRE(len > 0 && (size_t)len < sizeof(buf));
	return (scan(buf, (size_t)len));
}

ATF_TC_WITHOUT_HEAD(boundary);
ATF_TC_BODY(boundary, tc)
{
	char		 b[MULTIPART_BOUNDARY_MAX + 1];
	const char	*e;
	static const struct {
		const char	*ct;
		const char	*want;	/* the boundary, or NULL: refused */
	} cases[] = {
		{ "multipart/form-data; boundary=abc", "abc" },
		{ "Multipart/Form-Data;boundary=abc", "abc" },
		{ "multipart/form-data ; charset=utf-8; BOUNDARY=x-y_z.1",
		    "x-y_z.1" },
		{ "multipart/form-data; boundary=\"a b:c?d\"", "a b:c?d" },
		{ "multipart/form-data; boundary=\"a\\\"b\"", NULL },
		{ "multipart/form-data; boundary=\"a\\bc\"", "abc" },
		{ "multipart/form-data; boundary=----WebKitFormBoundary7MA4"
		    "YWxkTrZu0gW", "----WebKitFormBoundary7MA4YWxkTrZu0gW" },
		{ "multipart/form-data; boundary=abc;", "abc" },
		/* 70 is the longest */
		{ "multipart/form-data; boundary=1234567890123456789012345"
		    "678901234567890123456789012345678901234567890",
		    "1234567890123456789012345678901234567890123456789012"
		    "345678901234567890" },
		{ "multipart/form-data; boundary=1234567890123456789012345"
		    "6789012345678901234567890123456789012345678901", NULL },
		{ "multipart/form-data", NULL },
		{ "multipart/form-data; charset=utf-8", NULL },
		{ "multipart/form-data; boundary=", NULL },
		{ "multipart/form-data; boundary=\"\"", NULL },
		{ "multipart/form-data; boundary=\"ends \"", NULL },
		{ "multipart/form-data; boundary=a; boundary=a", NULL },
		{ "multipart/form-data; boundary = a", NULL },
		{ "multipart/form-data; boundary=\"open", NULL },
		{ "multipart/form-data; boundary=\"a\tb\"", NULL },
		{ "multipart/form-data; boundary=a{b", NULL },
		{ "multipart/form-data boundary=a", NULL },
		{ "multipart/form-datax; boundary=a", NULL },
		{ "multipart/mixed; boundary=a", NULL },
		{ "application/json", NULL },
	};
	size_t		 i;
	int		 r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		e = NULL;
		r = multipart_boundary(cases[i].ct, b, sizeof(b), &e);
		if (cases[i].want == NULL) {
			ATF_CHECK_EQ_MSG(r, -1, "'%s' taken as '%s'",
			    cases[i].ct, b);
			ATF_CHECK_MSG(e != NULL && e[0] != '\0',
			    "'%s': no message", cases[i].ct);
		} else {
			ATF_CHECK_EQ_MSG(r, 0, "'%s' refused: %s",
			    cases[i].ct, e);
			if (r == 0)
				ATF_CHECK_STREQ_MSG(b, cases[i].want, "'%s'",
				    cases[i].ct);
		}
	}
	ATF_CHECK(multipart_boundary(NULL, b, sizeof(b), &e) == -1);
	/* a buffer too small for it */
	ATF_CHECK(multipart_boundary("multipart/form-data; boundary=abcd",
	    b, 4, &e) == -1);
}

ATF_TC_WITHOUT_HEAD(is_form);
ATF_TC_BODY(is_form, tc)
{
	ATF_CHECK(multipart_is_form("multipart/form-data; boundary=a"));
	ATF_CHECK(multipart_is_form("MULTIPART/FORM-DATA"));
	ATF_CHECK(multipart_is_form("multipart/form-data\t;x=y"));
	ATF_CHECK(!multipart_is_form("multipart/form-dat"));
	ATF_CHECK(!multipart_is_form("multipart/form-data-x"));
	ATF_CHECK(!multipart_is_form("application/json"));
	ATF_CHECK(!multipart_is_form(" multipart/form-data"));
	ATF_CHECK(!multipart_is_form(NULL));
}

ATF_TC_WITHOUT_HEAD(model);
ATF_TC_BODY(model, tc)
{
	const char	 ok[] = FORM("qwen2.5-7b");

	ATF_REQUIRE_EQ_MSG(scan(S(ok)), 0, "%s", err);
	ATF_CHECK_STREQ(model_of(ok), "qwen2.5-7b");
	ATF_CHECK_EQ(f.model_off, (size_t)(strstr(ok, "qwen") - ok));
	ATF_CHECK_EQ(f.nparts, 2);
	ATF_CHECK_EQ(f.nfiles, 1);
	ATF_CHECK(!f.stream && !f.has_stream);

	/* no model; no CRLF after the last delimiter; padding */
	ATF_CHECK_EQ(scan(S("--b\r\n" CD "name=x\r\n\r\n1\r\n--b--")), 0);
	ATF_CHECK(!f.has_model);
	ATF_CHECK_EQ(f.nparts, 1);
	ATF_CHECK_EQ(scan(S("--b \t\r\n" CD "name=model\r\n\r\nm\r\n"
	    "--b-- \r\n")), 0);
	ATF_CHECK_STREQ(model_of("--b \t\r\n" CD "name=model\r\n\r\nm\r\n"
	    "--b-- \r\n"), "m");
	/* header names in any case, other headers */
	ATF_CHECK_EQ(scan(S("--b\r\nX-Other: 1\r\ncontent-disposition:"
	    "form-data;name=\"model\"\r\ncontent-type: text/plain\r\n"
	    "\r\nm\r\n--b--")), 0);
	ATF_CHECK(f.has_model);
	/* "Model" and a name of "model" inside another do not count */
	ATF_CHECK_EQ(scan(S("--b\r\n" CD "name=Model\r\n\r\nm\r\n--b\r\n"
	    CD "name=\"models\"\r\n\r\nm\r\n--b--")), 0);
	ATF_CHECK(!f.has_model);
	/* an empty part, and an empty file */
	ATF_CHECK_EQ(scan(S("--b\r\n" CD "name=a\r\n\r\n\r\n--b\r\n" CD
	    "name=f; filename=\"x\"\r\n\r\n\r\n--b--")), 0);
	ATF_CHECK_EQ(f.nparts, 2);
	ATF_CHECK_EQ(f.nfiles, 1);
}

/*
 * Issue 29, item 4: a Content-Disposition a server behind the front door
 * reads otherwise than this one is refused.  python-multipart and Go's
 * mime package take RFC 2231's name* (and name*0, name*1) over name;
 * which of two names counts differs; a backslash is unescaped by some
 * and kept by others.  Each would route on "whisper" while the server
 * read another model.
 */
ATF_TC_WITHOUT_HEAD(disposition_tricks);
ATF_TC_BODY(disposition_tricks, tc)
{
	static const struct {
		const char	*params;
		const char	*want;
	} cases[] = {
		{ "name=\"model\"; name*=UTF-8''attacker", "RFC 2231" },
		{ "name*=UTF-8''model", "RFC 2231" },
		{ "name=\"model\"; name*0=\"attac\"; name*1=\"ker\"",
		    "RFC 2231" },
		{ "name=\"model\"; name*0*=UTF-8''attacker", "RFC 2231" },
		{ "name=\"model\"; NAME*=UTF-8''x", "RFC 2231" },
		{ "name=\"f\"; filename*=UTF-8''a.wav", "RFC 2231" },
		{ "name=\"f\"; filename*0=\"a\"; filename*1=\"b\"",
		    "RFC 2231" },
		{ "name=\"model\"; name=\"other\"", "twice" },
		{ "name=\"model\"; Name=\"model\"", "twice" },
		{ "name=\"f\"; filename=\"a\"; filename=\"b\"", "twice" },
		{ "name=\"f\"; x=1; x=1", "twice" },
		{ "name=\"mo\\del\"", "backslash" },
		{ "name=\"model\\\"\"", "backslash" },
		{ "name=\"f\"; filename=\"a\\\\b\"", "backslash" },
		{ "name=m; a=1; b=1; c=1; d=1; e=1; f=1; g=1; h=1",
		    "too many" },
	};
	char	 body[512];
	size_t	 i;
	int	 n, r;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		n = snprintf(body, sizeof(body), "--b\r\n" CD "%s\r\n\r\n"
		    "whisper\r\n--b--\r\n", cases[i].params);
		ATF_REQUIRE(n > 0 && (size_t)n < sizeof(body));
		r = scan(body, (size_t)n);
		ATF_CHECK_EQ_MSG(r, -400, "%s: %d", cases[i].params, r);
		ATF_CHECK_MSG(err != NULL && strstr(err, cases[i].want) !=
		    NULL && strstr(err, "Content-Disposition") != NULL,
		    "%s: '%s'", cases[i].params, err ? err : "(none)");
	}
	/* eight parameters are taken; other parameters once each, any
	 * case; a quoted value with no backslash */
	ATF_CHECK_EQ(scan(S("--b\r\n" CD "name=model; a=1; b=1; c=1; d=1; "
	    "e=1; f=1; g=1\r\n\r\nm\r\n--b--")), 0);
	ATF_CHECK(f.has_model);
	ATF_CHECK_EQ(scan(S("--b\r\n" CD "NAME=\"f\"; FileName=\"a b;c\"; "
	    "size=3\r\n\r\nabc\r\n--b--")), 0);
	ATF_CHECK_EQ(f.nfiles, 1);
	/* the Content-Type's boundary may still have a quoted-pair */
	ATF_CHECK_EQ(multipart_boundary("multipart/form-data; "
	    "boundary=\"a\\b\"", body, sizeof(body), &err), 0);
	ATF_CHECK_STREQ(body, "ab");
}

ATF_TC_WITHOUT_HEAD(stream);
ATF_TC_BODY(stream, tc)
{
	ATF_CHECK_EQ(scan(S("--b\r\n" CD "name=stream\r\n\r\ntrue\r\n"
	    "--b--")), 0);
	ATF_CHECK(f.has_stream && f.stream);
	ATF_CHECK_EQ(scan(S("--b\r\n" CD "name=stream\r\n\r\nTRUE\r\n"
	    "--b--")), 0);
	ATF_CHECK(f.stream);
	ATF_CHECK_EQ(scan(S("--b\r\n" CD "name=stream\r\n\r\nfalse\r\n"
	    "--b--")), 0);
	ATF_CHECK(f.has_stream && !f.stream);
	ATF_CHECK_EQ(scan(S("--b\r\n" CD "name=stream\r\n\r\ntrue \r\n"
	    "--b--")), 0);
	ATF_CHECK(!f.stream);
	ATF_CHECK_EQ(scan(S("--b\r\n" CD "name=stream; filename=s\r\n\r\n"
	    "true\r\n--b--")), 0);
	ATF_CHECK(!f.stream);
	CHECK_BAD("--b\r\n" CD "name=stream\r\n\r\ntrue\r\n--b\r\n" CD
	    "name=stream\r\n\r\nfalse\r\n--b--", "'stream' twice");
}

ATF_TC_WITHOUT_HEAD(framing);
ATF_TC_BODY(framing, tc)
{
	CHECK_BAD("", "start with its boundary");
	CHECK_BAD("--", "start with its boundary");
	CHECK_BAD("\r\n--b\r\n" CD "name=a\r\n\r\nx\r\n--b--",
	    "start with its boundary");
	CHECK_BAD("preamble\r\n--b\r\n" CD "name=a\r\n\r\nx\r\n--b--",
	    "start with its boundary");
	CHECK_BAD("--b", "does not end in CRLF");
	CHECK_BAD("--b\n" CD "name=a\n\nx\n--b--", "does not end in CRLF");
	CHECK_BAD("--bc\r\n" CD "name=a\r\n\r\nx\r\n--b--",
	    "does not end in CRLF");
	/* the boundary inside a part, not followed as a delimiter is */
	CHECK_BAD("--b\r\n" CD "name=a\r\n\r\nx\r\n--bc\r\ny\r\n--b--",
	    "boundary is inside a part");
	CHECK_BAD("--b--", "no parts");
	CHECK_BAD("--b--\r\n", "no parts");
	CHECK_BAD("--b\r\n" CD "name=a\r\n\r\nx\r\n--b--\r\nepilogue",
	    "after its closing boundary");
	CHECK_BAD("--b\r\n" CD "name=a\r\n\r\nx\r\n--b--\r\n\r\n",
	    "after its closing boundary");
	CHECK_BAD("--b\r\n" CD "name=a\r\n\r\nx\r\n--b--x",
	    "after its closing boundary");
	CHECK_BAD("--b\r\n" CD "name=a\r\n\r\nx\r\n--b", "does not end in CRLF");
	CHECK_BAD("--b\r\n" CD "name=a\r\n\r\nx", "does not end with");
	CHECK_BAD("--b\r\n" CD "name=a\r\n\r\nx\r\n--", "does not end with");
	CHECK_BAD("--b\r\n" CD "name=a\r\n\r\nx\n--b--", "does not end with");
	/* the data starts after the empty line: no delimiter in it */
	CHECK_BAD("--b\r\n" CD "name=a\r\n\r\n--b--", "starts with the boundary");
	CHECK_BAD("--b\r\n" CD "name=a\r\n\r\n--b\r\n" CD "name=model\r\n\r\n"
	    "x\r\n--b--", "starts with the boundary");
	ATF_CHECK_EQ(scan(S("--b\r\n" CD "name=a\r\n\r\n--c\r\n--b--")), 0);
	CHECK_BAD("--b\r\n" CD "name=a\r\n", "do not end");
	CHECK_BAD("--b\r\n" CD "name=a", "do not end");
}

ATF_TC_WITHOUT_HEAD(headers);
ATF_TC_BODY(headers, tc)
{
	char	*big;
	size_t	 n;
	int	 r;

	CHECK_BAD("--b\r\n\r\nx\r\n--b--", "Content-Disposition");
	CHECK_BAD("--b\r\nContent-Type: a/b\r\n\r\nx\r\n--b--",
	    "Content-Disposition");
	CHECK_BAD("--b\r\nContent-Disposition: attachment; name=a\r\n\r\n"
	    "x\r\n--b--", "Content-Disposition");
	CHECK_BAD("--b\r\nContent-Disposition: form-datax; name=a\r\n\r\n"
	    "x\r\n--b--", "Content-Disposition");
	CHECK_BAD("--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--",
	    "Content-Disposition");
	CHECK_BAD("--b\r\n" CD "name=a; name=b\r\n\r\nx\r\n--b--",
	    "Content-Disposition");
	CHECK_BAD("--b\r\n" CD "name=a\r\n" CD "name=b\r\n\r\nx\r\n--b--",
	    "Content-Disposition");
	CHECK_BAD("--b\r\n" CD "name=\"a\r\n\r\nx\r\n--b--",
	    "Content-Disposition");
	CHECK_BAD("--b\r\n" CD "name=\r\n\r\nx\r\n--b--",
	    "Content-Disposition");
	CHECK_BAD("--b\r\n" CD "name a\r\n\r\nx\r\n--b--",
	    "Content-Disposition");
	/* folding, bare CR or LF, NUL, no colon, an empty name */
	CHECK_BAD("--b\r\n" CD "name=a\r\n x\r\n\r\nx\r\n--b--", "malformed");
	CHECK_BAD("--b\r\n" CD "name=a\nX: y\r\n\r\nx\r\n--b--", "malformed");
	CHECK_BAD("--b\r\n" CD "name=a\rX: y\r\n\r\nx\r\n--b--", "malformed");
	CHECK_BAD("--b\r\n" CD "name=a\0\r\n\r\nx\r\n--b--", "malformed");
	CHECK_BAD("--b\r\nnonsense\r\n" CD "name=a\r\n\r\nx\r\n--b--",
	    "malformed");
	CHECK_BAD("--b\r\n: v\r\n" CD "name=a\r\n\r\nx\r\n--b--", "malformed");
	CHECK_BAD("--b\r\nX : v\r\n" CD "name=a\r\n\r\nx\r\n--b--",
	    "malformed");

	/* the header lines of a part are bounded together */
	n = MULTIPART_HEAD_MAX + 100;
	ATF_REQUIRE((big = malloc(n)) != NULL);
	memset(big, 'x', n);
	memcpy(big, "--b\r\nX-Long: ", 13);
	memcpy(big + n - 16, "\r\n\r\nx\r\n--b--\r\n", 15);
	err = NULL;
	r = multipart_scan(big, n - 1, "b", MAX, NULL, &f, &err);
	ATF_CHECK_EQ(r, -400);
	ATF_CHECK(err != NULL && strstr(err, "too long") != NULL);
	free(big);
}

ATF_TC_WITHOUT_HEAD(model_refused);
ATF_TC_BODY(model_refused, tc)
{
	CHECK_BAD(FORM("") , "1 to 127 bytes");
	CHECK_BAD(FORM("a\tb"), "1 to 127 bytes");
	CHECK_BAD(FORM("a\x7f"), "1 to 127 bytes");
	CHECK_BAD(FORM("a\rb"), "1 to 127 bytes");
	/* 127 bytes are the most */
	ATF_CHECK_EQ(scan_model(MULTIPART_MODEL_MAX), 0);
	ATF_CHECK_EQ(f.model_len, MULTIPART_MODEL_MAX);
	ATF_CHECK_EQ(scan_model(MULTIPART_MODEL_MAX + 1), -400);
	ATF_CHECK(err != NULL && strstr(err, "1 to 127 bytes") != NULL);
	/* UTF-8 is the caller's to check */
	ATF_CHECK_EQ(scan(S(FORM("\xc3\xa9t\xc3\xa9"))), 0);
	CHECK_BAD("--b\r\n" CD "name=model\r\n\r\na\r\n--b\r\n" CD
	    "name=model\r\n\r\na\r\n--b--", "'model' twice");
	CHECK_BAD("--b\r\n" CD "name=model; filename=m\r\n\r\na\r\n--b--",
	    "plain field");
	CHECK_BAD("--b\r\n" CD "name=model\r\nContent-Transfer-Encoding: "
	    "base64\r\n\r\nYQ==\r\n--b--", "plain field");
}

ATF_TC_WITHOUT_HEAD(bounds);
ATF_TC_BODY(bounds, tc)
{
	const char	 ok[] = FORM("m");
	const char	*e = NULL;
	char		 b[MULTIPART_BOUNDARY_MAX + 2];
	size_t		 i;

	ATF_CHECK_EQ(multipart_scan(S(ok), "b", sizeof(ok) - 1, NULL, &f, &e),
	    0);
	ATF_CHECK_EQ(multipart_scan(S(ok), "b", sizeof(ok) - 2, NULL, &f, &e),
	    -413);
	ATF_CHECK(e != NULL && strstr(e, "too large") != NULL);
	ATF_CHECK_EQ(multipart_scan(S(ok), "", MAX, NULL, &f, &e), -400);
	/* an empty body, which may come as NULL */
	ATF_CHECK_EQ(multipart_scan(NULL, 0, "b", MAX, NULL, &f, &e), -400);
	memset(b, 'b', sizeof(b) - 1);
	b[sizeof(b) - 1] = '\0';
	ATF_CHECK_EQ(multipart_scan(S(ok), b, MAX, NULL, &f, &e), -400);
	/* every cut of a good form is refused, never read past */
	for (i = 0; i < sizeof(ok) - 3; i++) {
		char	*cut = malloc(i + 1);

		ATF_REQUIRE(cut != NULL);
		memcpy(cut, ok, i);
		ATF_CHECK_EQ_MSG(multipart_scan(cut, i, "b", MAX, NULL, &f, &e),
		    -400, "cut at %zu", i);
		free(cut);
	}
}

/* The pieces joined. */
static char *
join(const struct mpiece *v, size_t n, size_t *len)
{
	static char	 buf[4096];
	size_t		 i;

	*len = 0;
	for (i = 0; i < n; i++) {
		ATF_REQUIRE(*len + v[i].len < sizeof(buf));
		memcpy(buf + *len, v[i].p, v[i].len);
		*len += v[i].len;
	}
	buf[*len] = '\0';
	return (buf);
}

ATF_TC_WITHOUT_HEAD(splice);
ATF_TC_BODY(splice, tc)
{
	const char	 ok[] = FORM("alias");
	const char	 none[] = "--b\r\n" CD "name=file; filename=a\r\n\r\n"
			    "RIFF\r\n--b--\r\n";
	struct mpiece	 v[MULTIPART_PIECES];
	char		 head[256], *s;
	size_t		 n, len;

	/* the value replaced, the rest as it was */
	ATF_REQUIRE_EQ(scan(S(ok)), 0);
	n = multipart_splice(ok, sizeof(ok) - 1, &f, "b", "/srv/m.gguf",
	    head, sizeof(head), v);
	ATF_REQUIRE_EQ(n, 3);
	s = join(v, n, &len);
	ATF_CHECK_STREQ(s, FORM("/srv/m.gguf"));
	ATF_CHECK(v[0].p == ok && v[2].p + v[2].len == ok + sizeof(ok) - 1);
	/* a form without a model: one put first */
	ATF_REQUIRE_EQ(scan(S(none)), 0);
	n = multipart_splice(none, sizeof(none) - 1, &f, "b", "w", head,
	    sizeof(head), v);
	ATF_REQUIRE_EQ(n, 2);
	s = join(v, n, &len);
	ATF_CHECK_STREQ(s, "--b\r\nContent-Disposition: form-data; "
	    "name=\"model\"\r\n\r\nw\r\n--b\r\n" CD "name=file; "
	    "filename=a\r\n\r\nRIFF\r\n--b--\r\n");
	ATF_REQUIRE_EQ(scan(s, len), 0);
	ATF_CHECK_STREQ(model_of(s), "w");
	ATF_CHECK_EQ(f.nparts, 2);
	/* no value can hold a line end; nor fit a head too small */
	ATF_REQUIRE_EQ(scan(S(ok)), 0);
	ATF_CHECK_EQ(multipart_splice(ok, sizeof(ok) - 1, &f, "b", "a\r\nb",
	    head, sizeof(head), v), 0);
	ATF_CHECK_EQ(multipart_splice(ok, sizeof(ok) - 1, &f, "b", "",
	    head, sizeof(head), v), 0);
	ATF_REQUIRE_EQ(scan(S(none)), 0);
	ATF_CHECK_EQ(multipart_splice(none, sizeof(none) - 1, &f, "b", "w",
	    head, 20, v), 0);
}

/* The widths of multipart_find this CPU runs: 0 SSE2, 1 AVX2, 2 AVX-512. */
static int
widths(void)
{
#ifdef __SSE2__
	return (__builtin_cpu_supports("avx512bw") ? 3 :
	    __builtin_cpu_supports("avx2") ? 2 : 1);
#else
	return (1);
#endif
}

ATF_TC_WITHOUT_HEAD(find);
ATF_TC_BODY(find, tc)
{
	/* bytes that make candidates (a CR, a dash three on) often */
	const char	 abc[] = "\r\n-bx";
	const char	 d[] = "\r\n--bb";
	char		*body;
	const char	*got, *want;
	size_t		 len = 1000, i, j, k;
	int		 w, bad;

	ATF_REQUIRE((body = malloc(len)) != NULL);
	srandom(18);
	for (w = 0; w < widths(); w++) {
		multipart_simd = w;
		for (k = 0; k < 20; k++) {
			for (i = 0; i < len; i++)
				body[i] = abc[random() % 5];
			/* every start, and ends from each of its last bytes */
			for (bad = 0, i = 0; i < len && !bad; i++)
				for (j = len - 140; j <= len && !bad; j += 7) {
					if (j < i)
						continue;
					got = multipart_find(body + i, body + j,
					    d, sizeof(d) - 1);
					want = memmem(body + i, j - i, d,
					    sizeof(d) - 1);
					ATF_CHECK_MSG(got == want, "width %d "
					    "[%zu, %zu): %td, want %td", w, i,
					    j, got ? got - body : -1,
					    want ? want - body : -1);
					bad = got != want;
				}
		}
		/* one alone, at each place: found where it ends the range,
		 * not when the range ends a byte short of it */
		memset(body, 'x', len);
		for (i = 0; i + 6 <= len; i++) {
			memcpy(body + i, d, 6);
			ATF_CHECK_MSG(multipart_find(body, body + i + 6, d,
			    sizeof(d) - 1) == body + i, "width %d at %zu", w,
			    i);
			ATF_CHECK_MSG(multipart_find(body, body + i + 5, d,
			    sizeof(d) - 1) == NULL, "width %d at %zu", w, i);
			ATF_CHECK_MSG(multipart_find(body, body + len, d,
			    sizeof(d) - 1) == body + i, "width %d at %zu", w,
			    i);
			memset(body + i, 'x', 6);
		}
	}
	multipart_simd = -1;
	free(body);
}

/* Marks of s taken step bytes at a time. */
static void
mark(struct mmarks *mk, const char *s, size_t len, size_t step)
{
	size_t	 have;

	multipart_marks_reset(mk);
	for (have = 0; have < len; ) {
		have = have + step < len ? have + step : len;
		multipart_mark(mk, s, have);
	}
}

ATF_TC_WITHOUT_HEAD(marks);
ATF_TC_BODY(marks, tc)
{
	const char	 ok[] = FORM("m");
	const char	 in[] = "--b\r\n" CD "name=f; filename=a\r\n\r\n"
			    "x\r\n--b-x\r\n--b--\r\n";
	struct mmarks	 mk;
	struct mform	 g;
	char		*big;
	size_t		 step, i, n;

	memset(&mk, 0, sizeof(mk));
	ATF_REQUIRE_EQ(scan(S(ok)), 0);
	g = f;
	for (step = 1; step < sizeof(ok); step++) {
		mark(&mk, S(ok), step);
		ATF_CHECK_EQ_MSG(multipart_scan(S(ok), "b", MAX, &mk, &f,
		    &err), 0, "step %zu", step);
		ATF_CHECK_MSG(memcmp(&f, &g, sizeof(f)) == 0, "step %zu",
		    step);
	}
	/* the CRLF "--" marks: those of ok, the data's own among them */
	mark(&mk, S(ok), 1);
	for (n = 0, i = 0; i + 4 <= sizeof(ok) - 1; i++)
		n += memcmp(ok + i, "\r\n--", 4) == 0;
	ATF_CHECK_EQ(mk.n, n);
	/* a delimiter in the data, found by its mark */
	mark(&mk, S(in), 3);
	ATF_CHECK_EQ(multipart_scan(S(in), "b", MAX, &mk, &f, &err), -400);
	ATF_CHECK(err != NULL && strstr(err, "boundary is inside") != NULL);
	/* marks that do not cover the body (taken of less) are not used */
	mark(&mk, S(ok), 1);
	mk.done = 10;
	mk.n = 0;
	ATF_CHECK_EQ(multipart_scan(S(ok), "b", MAX, &mk, &f, &err), 0);
	ATF_CHECK(memcmp(&f, &g, sizeof(f)) == 0);
	/* too many: not kept, and the scan looks for itself */
	n = (MULTIPART_MARKS_MAX + 1) * 4 + sizeof(ok);
	ATF_REQUIRE((big = malloc(n)) != NULL);
	i = strstr(ok, "RIFF") - ok;
	memcpy(big, ok, i);
	for (step = 0; step <= MULTIPART_MARKS_MAX; step++)
		memcpy(big + i + step * 4, "\r\n--", 4);
	memcpy(big + i + step * 4, ok + i, sizeof(ok) - 1 - i);
	n = i + step * 4 + sizeof(ok) - 1 - i;
	mark(&mk, big, n, 4096);
	ATF_CHECK(mk.over);
	ATF_CHECK_EQ(multipart_scan(big, n, "b", MAX, &mk, &f, &err), 0);
	ATF_CHECK_STREQ(model_of(big), "m");
	multipart_marks_free(&mk);
	free(big);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, boundary);
	ATF_TP_ADD_TC(tp, is_form);
	ATF_TP_ADD_TC(tp, disposition_tricks);
	ATF_TP_ADD_TC(tp, model);
	ATF_TP_ADD_TC(tp, stream);
	ATF_TP_ADD_TC(tp, framing);
	ATF_TP_ADD_TC(tp, headers);
	ATF_TP_ADD_TC(tp, model_refused);
	ATF_TP_ADD_TC(tp, bounds);
	ATF_TP_ADD_TC(tp, splice);
	ATF_TP_ADD_TC(tp, find);
	ATF_TP_ADD_TC(tp, marks);
	return (atf_no_error());
}
