/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: multipart/form-data (multipart.c).  The input is a
 * Content-Type line, "\n", and a body; without a "\n" in its first 256
 * bytes it is all body, with the boundary "b".
 *
 * Invariants: no crash, no read outside the input (the body and the
 * Content-Type are each copied into a buffer of their own size); a
 * boundary taken is 1 to 70 bchars not ending in a space; a scan returns
 * 0, -400 or -413, with a message when it fails, -413 exactly when the
 * body is over max; on success the model's range is inside the body,
 * 1 to MULTIPART_MODEL_MAX bytes without a control character, there is
 * a part, and no more files than parts.  And the rewrite the front door
 * makes (multipart_splice): the model's value replaced by another
 * (shorter, and longer), or a model field put first in a form that has
 * none, the body reads again as the same form, with that value at the
 * range the pieces give it and one part more if it was put first.
 *
 * The delimiter search (multipart_find, SSE2, AVX2 and AVX-512 where
 * the CPU has them) finds what memmem(3) finds; and marks taken as the
 * body arrives, in pieces the input's first byte sizes, give the same
 * scan as no marks.
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
#include <unistd.h>

#include "multipart.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define MAX	(1024 * 1024)

static void
fail(const char *what)
{
	fprintf(stderr, "fuzz_multipart: %s\n", what);
	abort();
}

/* body spliced with m as its model, scanned again. */
static void
check_rewrite(const char *body, size_t len, const char *b,
    const struct mform *f, const char *m)
{
	struct mpiece	 v[MULTIPART_PIECES];
	struct mform	 g;
	const char	*e = NULL;
	char		 head[MULTIPART_BOUNDARY_MAX + 200], *n;
	size_t		 mlen = strlen(m), nlen = 0, np, i, at;

	if ((np = multipart_splice(body, len, f, b, m, head, sizeof(head),
	    v)) == 0)
		fail("a model cannot be spliced in");
	for (i = 0; i < np; i++)
		nlen += v[i].len;
	if ((n = malloc(nlen)) == NULL)
		fail("out of memory");
	for (nlen = 0, i = 0; i < np; i++) {
		memcpy(n + nlen, v[i].p, v[i].len);
		nlen += v[i].len;
	}
	if (multipart_scan(n, nlen, b, MAX, NULL, &g, &e) != 0) {
		fprintf(stderr, "rewritten: %s\n", e);
		fail("a rewritten form does not read");
	}
	/* where the value lands: in the place of the old, or first */
	at = f->has_model ? f->model_off : v[0].len - mlen - 2;
	if (!g.has_model || g.model_off != at || g.model_len != mlen ||
	    memcmp(n + g.model_off, m, mlen) != 0)
		fail("a rewritten form has another model");
	if (g.nparts != f->nparts + !f->has_model || g.nfiles != f->nfiles ||
	    g.stream != f->stream || g.has_stream != f->has_stream)
		fail("a rewritten form has other parts");
	free(n);
}

/*
 * multipart_find against memmem, at each width the CPU has, from the
 * first 130 starts of body (every alignment of the widest step) and
 * every 61st after.
 */
static void
check_find(const char *body, size_t len, const char *b)
{
	char		 d[MULTIPART_BOUNDARY_MAX + 5];
	size_t		 dlen = strlen(b) + 4, i;
	int		 w, widths = 1;

#ifdef __SSE2__
	widths = __builtin_cpu_supports("avx512bw") ? 3 :
	    __builtin_cpu_supports("avx2") ? 2 : 1;
#endif
	memcpy(d, "\r\n--", 4);
	memcpy(d + 4, b, dlen - 4);
	for (w = 0; w < widths; w++) {
		multipart_simd = w;
		for (i = 0; i <= len; i += i < 130 ? 1 : 61)
			if (multipart_find(body + i, body + len, d, dlen) !=
			    memmem(body + i, len - i, d, dlen))
				fail("multipart_find and memmem disagree");
	}
	multipart_simd = -1;
}

/* The scan with marks taken in pieces of step bytes is the scan. */
static void
check_marks(const char *body, size_t len, const char *b, size_t step)
{
	struct mmarks	 mk;
	struct mform	 f, g;
	const char	*e1 = NULL, *e2 = NULL;
	size_t		 have;
	int		 r1, r2;

	memset(&mk, 0, sizeof(mk));
	for (have = 0; have < len; ) {
		have = have + step < len ? have + step : len;
		multipart_mark(&mk, body, have);
	}
	r1 = multipart_scan(body, len, b, MAX, NULL, &f, &e1);
	r2 = multipart_scan(body, len, b, MAX, &mk, &g, &e2);
	if (r1 != r2 || (r1 == 0 && memcmp(&f, &g, sizeof(f)) != 0) ||
	    (r1 != 0 && strcmp(e1, e2) != 0))
		fail("marks change the scan");
	multipart_marks_free(&mk);
}

static void
check_scan(const char *body, size_t len, const char *b)
{
	struct mform	 f;
	const char	*e = NULL;
	size_t		 i;
	int		 r;

	r = multipart_scan(body, len, b, MAX, NULL, &f, &e);
	if (r != 0 && r != -400 && r != -413)
		fail("an unknown result");
	if (r != 0 && (e == NULL || e[0] == '\0'))
		fail("a refusal without a message");
	if ((r == -413) != (len > MAX))
		fail("413 and the length disagree");
	if (len > 0) {
		e = NULL;
		if (multipart_scan(body, len, b, len - 1, NULL, &f, &e) != -413)
			fail("a body over max is not 413");
	}
	if (r != 0)
		return;
	r = multipart_scan(body, len, b, MAX, NULL, &f, &e);
	if (f.nparts == 0 || f.nfiles > f.nparts)
		fail("the counts of parts are wrong");
	if (f.stream && !f.has_stream)
		fail("a stream without its field");
	if (!f.has_model) {
		check_rewrite(body, len, b, &f, "whisper-large-v3");
		return;
	}
	if (f.model_off > len || f.model_len > len - f.model_off ||
	    f.model_len == 0 || f.model_len > MULTIPART_MODEL_MAX)
		fail("the model's range is wrong");
	/* after its part's empty line, up to a delimiter */
	if (f.model_off < 4 || memcmp(body + f.model_off - 4, "\r\n\r\n", 4) !=
	    0 || len - f.model_off - f.model_len < 4 + strlen(b) ||
	    memcmp(body + f.model_off + f.model_len, "\r\n--", 4) != 0 ||
	    memcmp(body + f.model_off + f.model_len + 4, b, strlen(b)) != 0)
		fail("the model's range is not a part's data");
	for (i = 0; i < f.model_len; i++)
		if ((unsigned char)body[f.model_off + i] < 0x20 ||
		    body[f.model_off + i] == 0x7f)
			fail("a control character in the model");
	check_rewrite(body, len, b, &f, "x");
	check_rewrite(body, len, b, &f, "/srv/models/qwen2.5-7b-instruct-"
	    "q4_k_m.gguf");
}

static void
write_seeds(const char *dir)
{
	static const char *seeds[] = {
		"--b\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n"
		    "whisper\r\n--b\r\nContent-Disposition: form-data; "
		    "name=\"file\"; filename=\"a.wav\"\r\nContent-Type: "
		    "audio/wav\r\n\r\nRIFF\r\n--b\r\n--b--\r\n",
		"multipart/form-data; boundary=\"----x y\"\n"
		    "------x y\r\nContent-Disposition: form-data; name=stream"
		    "\r\n\r\ntrue\r\n------x y \r\ncontent-disposition: "
		    "form-data; name=\"mo\\del\"\r\n\r\nm\r\n------x y--",
		"multipart/form-data; charset=utf-8; boundary=zz\n"
		    "--zz\r\nContent-Disposition: form-data; name=a; "
		    "filename*=UTF-8''%e2\r\nContent-Transfer-Encoding: "
		    "base64\r\n\r\n\r\n--zz--\r\n",
		"--b\r\nContent-Disposition: form-data; name=model\r\n\r\n"
		    "a\r\n--b\r\nContent-Disposition: form-data; name=model"
		    "\r\n\r\nb\r\n--b--",
		"--b\r\nContent-Disposition: form-data; name=x\r\n\r\n"
		    "\r\n--bc\r\n--b--\r\nepilogue",
		"--b\r\nX: 1\r\n folded\r\n\r\n\r\n--b--",
		("multipart/form-data; boundary=a; boundary=b\n--a--"),
		("multipart/mixed; boundary=b\n--b--"),
		/* issue 29: what other parsers read otherwise, refused */
		"--b\r\nContent-Disposition: form-data; name=\"model\"; "
		    "name*=UTF-8''attacker\r\n\r\nw\r\n--b--\r\n",
		"--b\r\nContent-Disposition: form-data; name=\"model\"; "
		    "name*0=\"attac\"; name*1*=ker\r\n\r\nw\r\n--b--\r\n",
		"--b\r\nContent-Disposition: form-data; name=\"f\"; "
		    "filename*0=\"a\"; filename=\"b\"; FILENAME=\"c\"\r\n"
		    "\r\nx\r\n--b--\r\n",
		"--b\r\nContent-Disposition: form-data; name=\"mo\\\"del\""
		    "\r\n\r\nw\r\n--b--\r\n",
	};
	char		 path[1024];
	size_t		 i, len;
	int		 fd;

	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		len = strlen(seeds[i]);
		(void)snprintf(path, sizeof(path), "%s/seed-%03zu", dir, i);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) ==
		    -1 || write(fd, seeds[i], len) != (ssize_t)len)
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
	const uint8_t	*nl;
	char		*ct = NULL, *body, b[MULTIPART_BOUNDARY_MAX + 1];
	const char	*e = NULL;
	size_t		 ctlen = 0, n, i;

	nl = memchr(data, '\n', size < 256 ? size : 256);
	if (nl != NULL) {
		ctlen = nl - data;
		if ((ct = malloc(ctlen + 1)) == NULL)
			fail("out of memory");
		memcpy(ct, data, ctlen);
		ct[ctlen] = '\0';
		if (multipart_boundary(ct, b, sizeof(b), &e) != 0) {
			if (e == NULL || e[0] == '\0')
				fail("a refused boundary without a message");
			free(ct);
			return (0);
		}
		n = strlen(b);
		if (n == 0 || n > MULTIPART_BOUNDARY_MAX || b[n - 1] == ' ')
			fail("a boundary of a wrong length");
		for (i = 0; i < n; i++)
			if (b[i] < ' ' || b[i] > '~' || strchr("\"\\<>@[]{}|"
			    ";!#$%&*^`~", b[i]) != NULL)
				fail("a boundary with a character not in bchars");
		if (!multipart_is_form(ct))
			fail("a boundary of a type that is not a form");
		free(ct);
		data += ctlen + 1;
		size -= ctlen + 1;
	} else
		(void)strlcpy(b, "b", sizeof(b));
	/* its own buffer, so that a read past it is caught */
	if ((body = malloc(size == 0 ? 1 : size)) == NULL)
		fail("out of memory");
	memcpy(body, data, size);
	check_scan(body, size, b);
	if (size > 0) {
		check_find(body, size, b);
		check_marks(body, size, b,
		    1 + (unsigned char)body[0] % 61);
	}
	free(body);
	return (0);
}
