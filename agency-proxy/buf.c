/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A growable buffer of bytes, for what conn.c reads and writes,
 * answer.c's answers, what relay.c writes to clients and upstream.c to
 * model servers: its size doubles from the size its user starts it at,
 * up to a limit.  Calls no other file of
 * agency-proxy.
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy.h"

/*
 * The size buf_reserve would make for n more bytes (the size it has,
 * when they fit): the size doubles from first, and stops at limit
 * (SIZE_MAX: none); 0 when len + n is over limit.
 */
size_t
buf_grown(const struct buf *b, size_t n, size_t first, size_t limit)
{
	size_t	 cap;

	if (b->len + n <= b->cap)
		return (b->cap);
	if (b->len + n > limit)
		return (0);
	cap = b->cap ? b->cap : first;
	while (cap < b->len + n)
		cap *= 2;
	return (cap > limit ? limit : cap);
}

/*
 * Make room for n more bytes, as buf_grown says.  -1, the buffer as it
 * was, when len + n is over limit or memory is short.
 */
int
buf_reserve(struct buf *b, size_t n, size_t first, size_t limit)
{
	size_t	 cap;
	char	*p;

	if (b->len + n <= b->cap)
		return (0);
	if ((cap = buf_grown(b, n, first, limit)) == 0)
		return (-1);
	if ((p = realloc(b->b, cap)) == NULL)
		return (-1);
	b->b = p;
	b->cap = cap;
	return (0);
}

/* Add n bytes at the end, making room as buf_reserve does. */
int
buf_add(struct buf *b, const void *p, size_t n, size_t first)
{
	if (n == 0)
		return (0);
	if (buf_reserve(b, n, first, SIZE_MAX) == -1)
		return (-1);
	memcpy(b->b + b->len, p, n);
	b->len += n;
	return (0);
}

/* Add a number, in decimal or (base 16) hex, without printf; room as
 * buf_add makes it. */
int
buf_num(struct buf *b, uint64_t v, int base, size_t first)
{
	char	 d[24], *e = d + sizeof(d), *p = e;

	do {
		*--p = "0123456789abcdef"[v % base];
		v /= base;
	} while (v != 0);
	return (buf_add(b, p, e - p, first));
}

/* Its size down to what it holds, keep bytes at least, when that lets
 * half of it go or more; as it was if realloc fails. */
void
buf_fit(struct buf *b, size_t keep)
{
	size_t	 cap = b->len > keep ? b->len : keep;
	char	*p;

	if (b->b == NULL || cap > b->cap / 2)
		return;
	if ((p = realloc(b->b, cap)) == NULL)
		return;
	b->b = p;
	b->cap = cap;
}

/* Let the memory go, when the buffer is bigger than keep bytes (0: in
 * any case); it is empty after. */
void
buf_release(struct buf *b, size_t keep)
{
	b->len = 0;
	if (b->cap <= keep && keep > 0)
		return;
	free(b->b);
	b->b = NULL;
	b->cap = 0;
}
