/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Typed payloads: a message is written field by field (msg_add_*) and
 * read back the same way (msg_get_*), so that every length, every
 * string's NUL and every value's range is checked here and nowhere else.
 *
 * A field is its bytes in host order (both ends run on one host), a
 * string its bytes and its NUL.  A reader that runs short, meets a
 * string without its NUL inside the bound its reader gives, a value out
 * of its range, or (msg_end) bytes after the last field, is failed:
 * every later get returns zeroes, and why says the first failure.  What
 * a failure means is the caller's: a hostile proxy, a broken parent.
 */
#ifndef AGENCY_MSG_H
#define AGENCY_MSG_H

#include <sys/types.h>

#include <stdint.h>

#include "imsg.h"

#define MSG_PAYLOAD_MAX		(MAX_IMSGSIZE - IMSG_HEADER_SIZE)

/* A payload being written; err once something did not fit. */
struct msgw {
	unsigned char	 buf[MSG_PAYLOAD_MAX];
	size_t		 len;
	int		 err;
};

/* A payload being read; why is NULL until it fails. */
struct msgr {
	const unsigned char	*p;
	size_t			 left;
	const char		*why;
};

void		 msg_init(struct msgw *);
void		 msg_add_u16(struct msgw *, uint16_t);
void		 msg_add_u32(struct msgw *, uint32_t);
void		 msg_add_i32(struct msgw *, int32_t);
void		 msg_add_u64(struct msgw *, uint64_t);
void		 msg_add_i64(struct msgw *, int64_t);
void		 msg_add_str(struct msgw *, const char *);
void		 msg_add_strn(struct msgw *, const char *, size_t);
void		 msg_add_bytes(struct msgw *, const void *, size_t);
/* imsg_compose of what was written: 1, or -1 (with errno; ERANGE when
 * it did not fit).  The fd is as imsg_compose has it. */
int		 msg_compose(struct imsgbuf *, uint32_t, uint32_t, int,
		    const struct msgw *);

void		 msg_read(struct msgr *, const struct imsg *);
void		 msg_read_bytes(struct msgr *, const void *, size_t);
uint16_t	 msg_get_u16(struct msgr *);
uint32_t	 msg_get_u32(struct msgr *);
int32_t		 msg_get_i32(struct msgr *);
uint64_t	 msg_get_u64(struct msgr *);
int64_t		 msg_get_i64(struct msgr *);
/* 0 or 1; anything else fails the reader */
int		 msg_get_bool(struct msgr *);
/* lo to hi, else fails it */
int32_t		 msg_get_enum(struct msgr *, int32_t, int32_t);
int64_t		 msg_get_range(struct msgr *, int64_t, int64_t);
/* A string and its NUL into an array of that size. */
void		 msg_get_str(struct msgr *, char *, size_t);
void		 msg_get_bytes(struct msgr *, void *, size_t);
/* What is left, all of it (the rest of a payload of bytes). */
size_t		 msg_get_rest(struct msgr *, const void **);
/* Fail the reader for a reason of the caller's (a value it refuses). */
void		 msg_fail(struct msgr *, const char *);
/* 0 when every field read and nothing is left, else -1. */
int		 msg_end(struct msgr *);

#endif /* AGENCY_MSG_H */
