/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * UTF-8 as RFC 3629 has it, for the two readers of a body: rules.c's
 * check before json-c, and scan.c's strings.  Pure functions; calls no
 * other file of agency-proxy.
 */
#include <sys/types.h>

#include <stdint.h>

#include "proxy.h"

/*
 * The length of the UTF-8 sequence (RFC 3629) at p, of at most left
 * bytes, that starts with a byte >= 0x80; 0 if it is not one: a stray
 * continuation byte, an overlong form, a surrogate, past U+10FFFF, or
 * cut short.
 */
size_t
utf8_seq(const unsigned char *p, size_t left)
{
	size_t		n, k;
	uint32_t	c = p[0], min;

	if ((c & 0xe0) == 0xc0) {
		n = 1;
		c &= 0x1f;
		min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		n = 2;
		c &= 0x0f;
		min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		n = 3;
		c &= 0x07;
		min = 0x10000;
	} else
		return (0);
	if (left <= n)
		return (0);
	for (k = 1; k <= n; k++) {
		if ((p[k] & 0xc0) != 0x80)
			return (0);
		c = (c << 6) | (p[k] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return (0);
	return (n + 1);
}

/*
 * Well-formed UTF-8 as RFC 3629 has it: no overlong forms, no
 * surrogates, nothing above U+10FFFF.  (json-c's own check lets the
 * first two through.)
 */
int
utf8_valid(const unsigned char *p, size_t len)
{
	size_t	 i = 0, n;

	while (i < len) {
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		if ((n = utf8_seq(p + i, len - i)) == 0)
			return (0);
		i += n;
	}
	return (1);
}
