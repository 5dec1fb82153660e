/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The figures of a model's files (sizing.h), read by a helper (helper.h)
 * as the model user, sandboxed: the files are the model user's to
 * write, so root never parses them.  agencyd asks for a path and gets a
 * callback, once, with figures it has checked (sizing_check, and their
 * weights against the bytes the files hold) or with why there are none:
 * the files cannot be read, or the child lied, hung past its deadline or
 * died.  A caller treats "none" as no estimate.
 */
#ifndef AGENCY_SIZER_H
#define AGENCY_SIZER_H

#include <stdint.h>

#include "imsg.h"
#include "sizing.h"

#define SIZER_DEADLINE_MS	10000	/* default: a header is quick */

/* The child's one message: figures, or why there are none. */
#define SIZER_MSG_FIGURES	0x53495a01	/* struct sizer_result */
#define SIZER_MSG_ERROR		0x53495a02	/* a string */

struct sizer_result {
	struct sizing_figures	 f;
	uint64_t		 bytes;		/* the files read, in all */
};

/* figures NULL: none, and why says why. */
typedef void	(*sizer_cb)(void *, const struct sizing_figures *,
		    const char *);

struct sizer;

/*
 * Read path's figures as user (NULL: as ourselves), within deadline_ms
 * (0: SIZER_DEADLINE_MS).  0 with *sp set until the callback (then it
 * is freed), or -1 with why in err (no callback then).
 */
int	sizer_ask(const char *, const char *, int, sizer_cb, void *,
	    struct sizer **, char *, size_t);

/* No callback any more; the child is killed (and still reaped). */
void	sizer_cancel(struct sizer *);

/*
 * For tests: the child's job once its files are open and it is
 * sandboxed (path, the channel to agencyd; the exit status), in place
 * of the real reader.  NULL puts the real one back.
 */
typedef int	(*sizer_job)(const char *, struct imsgbuf *);
void	sizer_set_job(sizer_job);

#endif /* AGENCY_SIZER_H */
