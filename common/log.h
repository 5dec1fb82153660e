/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Logging in the manner of OpenBSD's daemons: stderr in the foreground,
 * syslog otherwise, or a hook that carries each line elsewhere (a child
 * process sends its lines to the parent over imsg).  On stderr that is
 * systemd's journal, each line starts with its priority ("<3>").
 */
#ifndef AGENCY_LOG_H
#define AGENCY_LOG_H

#include <stdarg.h>
#include <syslog.h>

#ifndef __dead
#define __dead		__attribute__((__noreturn__))
#endif

/* Where a line goes when a hook is set: priority, then the whole line. */
typedef void	(*log_hook_t)(int, const char *);

void	log_init(int, int);
int	log_stderr_wanted(void);
void	log_procinit(const char *);
void	log_setverbose(int);
int	log_getverbose(void);
void	log_sethook(log_hook_t);
void	log_setobserver(log_hook_t);
/* With stderr (debug) logging: 1 keeps lines in a buffer until
 * log_flush (or until it fills, or exit); 0 flushes and writes each
 * line at once again. */
void	log_setbuffered(int);
void	log_flush(void);
void	log_warn(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
void	log_warnx(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
void	log_info(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
void	log_debug(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
/* A line of prefix and then str as it is: logit(pri, "%s%s", ...),
 * without the formatting. */
void	log_str(int, const char *, const char *);
void	logit(int, const char *, ...)
	    __attribute__((__format__ (printf, 2, 3)));
void	vlog(int, const char *, va_list)
	    __attribute__((__format__ (printf, 2, 0)));
__dead void fatal(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));
__dead void fatalx(const char *, ...)
	    __attribute__((__format__ (printf, 1, 2)));

#endif /* AGENCY_LOG_H */
