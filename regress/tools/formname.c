/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * formname: how the front door reads a form part's name.  Each line of
 * standard input is the value of a part's Content-Disposition field; a
 * one-part form with it (boundary "b") is read by agency-proxy's own
 * multipart_scan, and one line is written for it: "refused" (the form
 * would get 400), "model" (the part is the form's model field) or
 * "other".  For regress/integration/formdiff_test, which holds these
 * against the parameter parsing of the servers behind agency.
 */
#include <sys/types.h>

#include <err.h>
#include <stdio.h>
#include <string.h>

#include "multipart.h"

int
main(void)
{
	char		 line[4096], form[8192];
	struct mform	 f;
	const char	*why;
	size_t		 len;
	int		 n, r;

	while (fgets(line, sizeof(line), stdin) != NULL) {
		len = strcspn(line, "\n");
		line[len] = '\0';
		n = snprintf(form, sizeof(form), "--b\r\nContent-Disposition: "
		    "%s\r\n\r\nm1\r\n--b--\r\n", line);
		if (n < 0 || (size_t)n >= sizeof(form))
			errx(2, "line too long");
		memset(&f, 0, sizeof(f));
		why = NULL;
		r = multipart_scan(form, n, "b", sizeof(form), NULL, &f, &why);
		if (r != 0)
			puts("refused");
		else
			puts(f.has_model ? "model" : "other");
		if (fflush(stdout) == EOF)
			err(2, "stdout");
	}
	return (0);
}
