/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The digest of a body that fakelm names in its X-Fakelm-*-Cksum answer
 * headers and fwdcheck compares: the CRC of POSIX cksum(1), so that a
 * shell test can check one with "cksum < FILE" too.  Written "CRC LEN",
 * as cksum prints it.  Taken a piece at a time.
 */
#ifndef REGRESS_CKSUM_H
#define REGRESS_CKSUM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CKSUM_STR	32	/* "4294967295 18446744073709551615" */

struct cksum {
	uint32_t	 crc;
	uint64_t	 len;
};

static inline uint32_t
cksum_byte(uint32_t crc, unsigned char c)
{
	int	 i;

	crc ^= (uint32_t)c << 24;
	for (i = 0; i < 8; i++)
		crc = crc & 0x80000000U ? (crc << 1) ^ 0x04c11db7U : crc << 1;
	return (crc);
}

static inline void
cksum_init(struct cksum *ck)
{
	ck->crc = 0;
	ck->len = 0;
}

static inline void
cksum_add(struct cksum *ck, const void *p, size_t n)
{
	const unsigned char	*s = p;
	size_t			 i;

	for (i = 0; i < n; i++)
		ck->crc = cksum_byte(ck->crc, s[i]);
	ck->len += n;
}

/* "CRC LEN" into buf (CKSUM_STR bytes); ck may take more after it. */
static inline const char *
cksum_str(const struct cksum *ck, char *buf)
{
	uint32_t	 crc = ck->crc;
	uint64_t	 n;

	/* the length goes in too, low byte first, without its high zeros */
	for (n = ck->len; n != 0; n >>= 8)
		crc = cksum_byte(crc, n & 0xff);
	(void)snprintf(buf, CKSUM_STR, "%lu %llu", (unsigned long)~crc,
	    (unsigned long long)ck->len);
	return (buf);
}

#endif /* REGRESS_CKSUM_H */
