/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * ollama_json.c: the one-pass JSON reader of the model server's
 * answers, for ollama_stream.c.  Spans point into the bytes read.
 */
#ifndef AGENCY_PROXY_OLLAMA_JSON_H
#define AGENCY_PROXY_OLLAMA_JSON_H

#include <stddef.h>
#include <stdint.h>

struct buf;

#define FIRST		256	/* a buffer's first size */

/* A JSON reader over bytes. */
struct jr {
	const unsigned char	*p;
	const unsigned char	*end;
	int			 depth;
	int			 copying;	/* in jr_copy: names strict */
};

/* A span of a JSON string's bytes, between its quotes, as written. */
struct span {
	const char	*s;
	size_t		 len;
	int		 set;		/* a string (not absent or null) */
};

/* A reader over len bytes at d (an empty buffer's d may be NULL). */
void	jr_init(struct jr *, const char *, size_t);
int	jr_number(struct jr *, const char **, size_t *);
int	jr_null(struct jr *);
int	jr_open(struct jr *, unsigned char);
/* *first for jr_member: an object not entered yet, or null (read as
 * an empty one). */
#define JR_OBJECT	2
int	jr_member(struct jr *, int *, const char **, size_t *);
int	jr_element(struct jr *, int *);
int	jr_is(const char *, size_t, const char *);
int	jr_skip(struct jr *);
int	jr_copy(struct jr *, struct buf *);
int	jr_span(struct jr *, struct span *);
int	jr_count(struct jr *, int64_t *);
int	jr_ms(struct jr *, int64_t *);
int	jr_unescape(struct buf *, const char *, size_t, size_t);

/* Past the white space at p. */
static inline void
jr_ws(struct jr *j)
{
	while (j->p < j->end && *j->p <= ' ' && (*j->p == ' ' ||
	    *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

#endif /* AGENCY_PROXY_OLLAMA_JSON_H */
