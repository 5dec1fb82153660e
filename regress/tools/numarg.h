/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The test tools' one way to take a number from the command line: in
 * range or exit 2 with what was wrong.
 */
#ifndef REGRESS_NUMARG_H
#define REGRESS_NUMARG_H

#include <err.h>
#include <stdlib.h>

static inline long long
numarg(const char *s, long long lo, long long hi, const char *what)
{
	const char	*errstr;
	long long	 n;

	n = strtonum(s, lo, hi, &errstr);
	if (errstr != NULL)
		errx(2, "%s %s: %s", what, errstr, s);
	return (n);
}

#endif /* REGRESS_NUMARG_H */
