/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * multipart/form-data bodies (RFC 7578, framed as RFC 2046 has it): the
 * boundary of a Content-Type, and one pass over a body that checks its
 * framing and finds the fields the front door reads (the model, and
 * whether it asks for a stream), with the byte range of the model's
 * value; and the pieces of the body with another value there (or a
 * model field put first), so that it is sent without copying the rest.
 * Pure functions on memory, no I/O; only the marks below allocate (a
 * body's list of them).  Calls no other file
 * of agency-proxy (fuzz_multipart links it alone).
 *
 * The reading is strict, so that no server behind the front door can
 * read a field this one did not (see multipart.c for each rule): CRLF
 * line ends only; the body starts with its first delimiter and ends
 * with the closing one (and at most one CRLF); a delimiter inside a
 * part's data is an error, not data; each part has one
 * Content-Disposition of form-data with a name, and none of RFC 2231's
 * parameters, no parameter twice, no backslash escape; the model and stream
 * fields come once, the model not as a file, and short.
 */
#ifndef AGENCY_MULTIPART_H
#define AGENCY_MULTIPART_H

#include <sys/types.h>

#define MULTIPART_BOUNDARY_MAX	70	/* RFC 2046, 5.1.1 */
#define MULTIPART_HEAD_MAX	8192	/* a part's header lines, together */
#define MULTIPART_MODEL_MAX	127	/* bytes of the model's value */

/* What multipart_scan found in a body. */
struct mform {
	int	 has_model;	/* a field "model" */
	size_t	 model_off;	/* its value: bytes [off, off + len) */
	size_t	 model_len;
	int	 has_stream;	/* a field "stream" */
	int	 stream;	/* that says true */
	size_t	 nparts;
	size_t	 nfiles;	/* parts with a filename */
};

/* A piece of a body to be sent: len bytes at p. */
struct mpiece {
	const char	*p;
	size_t		 len;
};

#define MULTIPART_PIECES	3

/*
 * Where "\r\n--" is in a body, noted as it arrives (multipart_mark) while
 * its bytes are still in the cache, so that the scan at its end need not
 * read a file's bytes again: starts before done were looked at, and each
 * found is in v, in order; over: more than MULTIPART_MARKS_MAX, not kept.
 */
#define MULTIPART_MARKS_MAX	4096
struct mmarks {
	size_t	*v;
	size_t	 n;
	size_t	 cap;
	size_t	 done;
	int	 over;
};

void	multipart_mark(struct mmarks *, const char *, size_t);
void	multipart_marks_reset(struct mmarks *);
void	multipart_marks_free(struct mmarks *);

/*
 * The first delimiter d (dlen bytes, "\r\n--" and a boundary) in
 * [p, end), or NULL.  multipart_simd: the widest vectors it uses, 0
 * SSE2, 1 AVX2, 2 AVX-512; -1 (at first) the CPU's widest; tests set
 * it.  Without SSE2, memmem(3).
 */
extern int	 multipart_simd;
const char	*multipart_find(const char *, const char *, const char *,
		    size_t);

/* Whether a Content-Type's value is multipart/form-data. */
int	multipart_is_form(const char *);

/*
 * The boundary of a multipart/form-data Content-Type's value, into buf
 * (at least MULTIPART_BOUNDARY_MAX + 1 bytes); 0, or -1 with a message
 * for the client in *err.
 */
int	multipart_boundary(const char *, char *, size_t, const char **);

/*
 * Read body (len bytes, at most max) as a form with boundary b into *f;
 * with marks (or NULL) that cover it, its delimiters are looked for only
 * there.  Returns 0, or a negated HTTP status for the client with a
 * message in *err: -413 when len is over max, -400 when the form is
 * malformed.
 */
int	multipart_scan(const char *, size_t, const char *, size_t,
	    const struct mmarks *, struct mform *, const char **);

/*
 * A form read by multipart_scan (body, len bytes, boundary b, *f) with
 * model as its model's value: the value replaced, or a model field put
 * first in a form that has none, written into head (headsize bytes).
 * The pieces go into v (MULTIPART_PIECES at most) and their count is
 * returned; 0 when model cannot be a value (empty, a control character)
 * or head is too small.
 */
size_t	multipart_splice(const char *, size_t, const struct mform *,
	    const char *, const char *, char *, size_t, struct mpiece *);

#endif /* AGENCY_MULTIPART_H */
