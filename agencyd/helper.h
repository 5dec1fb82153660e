/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Helpers: short-lived children of agencyd that do one job on what the
 * model user may write (read a model file's header, bring a file into
 * the page cache), so that root never does it.
 *
 * A helper is forked (no exec, as the reapers are) and, before its job:
 * leaves agencyd's signal handlers, keeps only its end of a socketpair
 * (moved to HELPER_FD) and /dev/null on 0-2, joins a cgroup if asked
 * (the model's, so that what it brings in is charged there), sets
 * PR_SET_PDEATHSIG(SIGKILL) and PR_SET_NO_NEW_PRIVS, lowers its limits
 * (no file written, no process forked, no core, few descriptors; its
 * heap bounded), drops to the model user (groups, gid, uid, checked),
 * runs the job's setup as that user (it opens what it needs), and then
 * locks itself down with a seccomp allowlist: reading, mapping without
 * PROT_EXEC, fstat, imsg on its socket, exit, and what the job adds.
 * Anything else kills it (SIGSYS).  Then the job runs, tells agencyd
 * what it found over imsg on the socket, and exits.
 *
 * In agencyd nothing blocks: the socket and a pidfd of the child are
 * read with libevent on the default base, and a deadline kills a child
 * that takes too long.  Every message is handed to the job's parent
 * side, which treats it as hostile (it may return -1 to have the child
 * killed); the end comes once, when the child has exited and been
 * reaped, with how it ended.  Calls no other file of agencyd.
 */
#ifndef AGENCY_HELPER_H
#define AGENCY_HELPER_H

#include <sys/types.h>

#include <stddef.h>

#include "imsg.h"

#define HELPER_FD		3	/* the child's end of the socketpair */
#define HELPER_WHY_MAX		192	/* a why buffer that always fits */
#define HELPER_FILES_MAX	128	/* descriptors the child may hold */
#define HELPER_DATA_MAX		(256LL * 1024 * 1024)	/* its heap */
#define HELPER_SYSCALLS_MAX	16	/* a job's own */

struct helper;

struct helper_req {
	const char	*name;		/* for the log and the process title */
	const char	*user;		/* NULL: stay who we are */
	const char	*cgroup_procs;	/* a cgroup.procs to join, or NULL */
	int		 deadline_ms;	/* > 0 */
	/* System calls the job needs besides the helpers' own (by
	 * number, any arguments), 0-terminated; NULL: none. */
	const int	*syscalls;

	/* In the child, as the user, before the sandbox: 0, or -1 with why
	 * in the buffer (sent to agencyd, then the child exits 1). */
	int		(*setup)(void *, char *, size_t);
	/* In the child, sandboxed: the job.  Talks to agencyd over imsg
	 * on its socket (HELPER_FD); its return is the exit status. */
	int		(*run)(void *, struct imsgbuf *);
	void		*arg;		/* for setup and run, in the child */

	/* In agencyd: each message: 0, or -1 with why in the buffer to
	 * have the child killed as a liar.  Then the end, once: why is
	 * NULL when the child exited 0 by itself, else what happened
	 * ("was killed by SIGSYS", "did not end within 5000 ms", the
	 * setup's error, the message refused ...).  Neither is called
	 * after helper_cancel. */
	int		(*on_msg)(void *, struct imsg *, char *, size_t);
	void		(*on_end)(void *, const char *);
	void		*cbarg;
};

/*
 * Start a helper: 0 with *hp set (it is the helper's until its end), or
 * -1 with why in err (no child is left).  Needs event_init first.
 */
int	helper_start(const struct helper_req *, struct helper **, char *,
	    size_t);

/* The child's pid (for tests and the log). */
pid_t	helper_pid(const struct helper *);

/*
 * Kill the child and forget the callbacks: no message or end is handed
 * on any more.  The child is still reaped, and the helper freed then.
 */
void	helper_cancel(struct helper *);

/*
 * For agencyd's SIGCHLD loop, which reaps every child it has: 1 when pid
 * was a helper's (its end then comes with that status), 0 otherwise.
 */
int	helper_reaped(pid_t, int);

/* Helpers not yet ended (reaped and freed). */
int	helper_count(void);

#endif /* AGENCY_HELPER_H */
