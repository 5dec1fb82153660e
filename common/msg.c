/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Typed payloads, written and read field by field (msg.h).  The only
 * place a payload's length, a string's NUL or a value's range is
 * checked.  Calls: imsg.c.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "imsg.h"
#include "msg.h"

void
msg_init(struct msgw *w)
{
	w->len = 0;
	w->err = 0;
}

void
msg_add_bytes(struct msgw *w, const void *p, size_t n)
{
	if (w->err || n > sizeof(w->buf) - w->len) {
		w->err = 1;
		return;
	}
	if (n > 0)
		memcpy(w->buf + w->len, p, n);
	w->len += n;
}

void
msg_add_str(struct msgw *w, const char *s)
{
	msg_add_bytes(w, s, strlen(s) + 1);
}

/* A string kept in an array of size bytes: one that does not end in it
 * fails the writer rather than be read past. */
void
msg_add_strn(struct msgw *w, const char *s, size_t size)
{
	size_t	 n = strnlen(s, size);

	if (n == size)
		w->err = 1;
	else
		msg_add_bytes(w, s, n + 1);
}

int
msg_compose(struct imsgbuf *ibuf, uint32_t type, uint32_t peerid, int fd,
    const struct msgw *w)
{
	if (w->err) {
		errno = ERANGE;
		return (-1);
	}
	return (imsg_compose(ibuf, type, peerid, 0, fd, w->buf, w->len));
}

void
msg_read_bytes(struct msgr *r, const void *p, size_t len)
{
	r->p = p;
	r->left = p != NULL ? len : 0;
	r->why = NULL;
}

void
msg_read(struct msgr *r, const struct imsg *imsg)
{
	msg_read_bytes(r, imsg->data, imsg_get_len(imsg));
}

void
msg_fail(struct msgr *r, const char *why)
{
	if (r->why == NULL)
		r->why = why;
	r->left = 0;
}

/* n bytes into dst, or zeroes once the reader failed. */
static void
take(struct msgr *r, void *dst, size_t n)
{
	if (r->why == NULL && n > r->left)
		msg_fail(r, "too short");
	if (r->why != NULL) {
		memset(dst, 0, n);
		return;
	}
	if (n == 0)
		return;
	memcpy(dst, r->p, n);
	r->p += n;
	r->left -= n;
}

/*
 * The fixed-width fields, each written and read as its bytes: defines
 * msg_add_u16 and msg_get_u16, and so on for each type below.
 */
#define FIXED(type, add, get)						\
void									\
add(struct msgw *w, type v)						\
{									\
	msg_add_bytes(w, &v, sizeof(v));				\
}									\
									\
type									\
get(struct msgr *r)							\
{									\
	type	 v;							\
									\
	take(r, &v, sizeof(v));						\
	return (v);							\
}

FIXED(uint16_t, msg_add_u16, msg_get_u16)
FIXED(uint32_t, msg_add_u32, msg_get_u32)
FIXED(int32_t, msg_add_i32, msg_get_i32)
FIXED(uint64_t, msg_add_u64, msg_get_u64)
FIXED(int64_t, msg_add_i64, msg_get_i64)

/* v, or lo once v out of [lo, hi] has failed the reader. */
static int64_t
in_range(struct msgr *r, int64_t v, int64_t lo, int64_t hi)
{
	if (v < lo || v > hi) {
		msg_fail(r, "a value out of its range");
		return (lo);
	}
	return (v);
}

int32_t
msg_get_enum(struct msgr *r, int32_t lo, int32_t hi)
{
	return ((int32_t)in_range(r, msg_get_i32(r), lo, hi));
}

int
msg_get_bool(struct msgr *r)
{
	return (msg_get_enum(r, 0, 1));
}

int64_t
msg_get_range(struct msgr *r, int64_t lo, int64_t hi)
{
	return (in_range(r, msg_get_i64(r), lo, hi));
}

void
msg_get_str(struct msgr *r, char *dst, size_t size)
{
	const unsigned char	*nul;
	size_t			 n;

	dst[0] = '\0';
	if (r->why != NULL)
		return;
	n = r->left < size ? r->left : size;
	if (n == 0 || (nul = memchr(r->p, '\0', n)) == NULL) {
		msg_fail(r, r->left < size ? "a string without its NUL" :
		    "a string too long");
		return;
	}
	n = nul - r->p + 1;
	memcpy(dst, r->p, n);
	r->p += n;
	r->left -= n;
}

void
msg_get_bytes(struct msgr *r, void *dst, size_t n)
{
	take(r, dst, n);
}

size_t
msg_get_rest(struct msgr *r, const void **p)
{
	size_t	 n = r->left;

	*p = r->p;
	r->p += n;
	r->left = 0;
	return (n);
}

int
msg_end(struct msgr *r)
{
	if (r->why == NULL && r->left > 0)
		msg_fail(r, "bytes after its last field");
	return (r->why == NULL ? 0 : -1);
}
