/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * SHA-256 (FIPS 180-4), for API keys: agencyd digests the secrets it
 * reads, agency-proxy digests what a client presents and compares the
 * two.  Our own, so that the proxy's sandbox never meets a library that
 * looks for its configuration or its providers on first use.
 */
#ifndef AGENCY_SHA256_H
#define AGENCY_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN	32
#define SHA256_HEXLEN	(2 * SHA256_LEN + 1)	/* with the NUL */

struct sha256 {
	uint32_t	h[8];
	uint64_t	len;		/* bytes so far */
	uint8_t		buf[64];
	size_t		nbuf;
};

void	sha256_init(struct sha256 *);
void	sha256_update(struct sha256 *, const void *, size_t);
void	sha256_final(struct sha256 *, uint8_t [SHA256_LEN]);
void	sha256(const void *, size_t, uint8_t [SHA256_LEN]);
/* 1 when the two digests are the same, in a time that does not
 * depend on where they differ. */
int	sha256_equal(const uint8_t [SHA256_LEN], const uint8_t [SHA256_LEN]);
/* Lower-case hex, with its NUL. */
void	sha256_hex(const uint8_t [SHA256_LEN], char [SHA256_HEXLEN]);
/* The value of a hex digit of either case, or -1 if c is not one. */
int	hex_value(int);
/* 64 hex digits, either case, into a digest: 0, or -1 if not that. */
int	sha256_unhex(const char *, uint8_t [SHA256_LEN]);

#endif /* AGENCY_SHA256_H */
