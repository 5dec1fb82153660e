/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Model processes: the argv from a runtime's command template, the
 * scrubbed environment, fork+exec in a new session as the model user,
 * and the capture of stdout and stderr, line by line, into a ring of the
 * last lines and the log.
 *
 * Each model runs under a reaper of its own, a child of agencyd that
 * stays root: it is a child subreaper, so whatever the model forks
 * comes back to it when its parent goes (even after setsid or a double
 * fork), and nothing of the model outlives it; it kills everything it
 * has when agencyd dies, even by SIGKILL (PR_SET_PDEATHSIG).  The
 * caller reaps the reaper (SIGCHLD), which exits only once nothing of
 * the model is left, and learns from it how the model itself ended.
 */
#ifndef AGENCY_SPAWN_H
#define AGENCY_SPAWN_H

#include <sys/types.h>

#include <event.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"

#define SPAWN_RING_LINES	200	/* lines a model's ring keeps */
#define SPAWN_LINE_MAX		1024	/* longer lines are cut and go on */
#define SPAWN_ERR_MAX		256	/* an err buffer that always fits */

/*
 * The reaper: what is left of a model after its own process exited gets
 * SIGTERM, and SIGKILL after SPAWN_REAP_GRACE; while it kills, it looks
 * again every SPAWN_REAP_POLL.  agencyd asks it to stop the model with
 * SIGTERM and to kill everything with SPAWN_SIG_KILL, which is also what
 * it gets when agencyd dies.
 */
#define SPAWN_REAP_GRACE	2000	/* ms */
#define SPAWN_REAP_POLL		100	/* ms */
#define SPAWN_SIG_KILL		SIGUSR1

#define SPAWN_PATH	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:" \
			    "/sbin:/bin"

/* The last lines of a model's output, oldest first; owned by the model. */
struct ring {
	char		**lines;
	size_t		  cap;
	size_t		  first;	/* index of the oldest line */
	size_t		  count;
	uint64_t	  pushed;	/* lines ever pushed: the last's seq */
};

/* What to start.  argv and envp are NULL-terminated; the caller owns them. */
struct spawn_req {
	char		**argv;
	char		**envp;
	const char	 *user;		/* NULL: stay who we are */
	const char	 *dir;		/* working directory; NULL or gone: / */
	mode_t		  umask;	/* 0: 022 */
	const char	 *label;	/* prefixes each logged line */
	struct ring	 *ring;		/* NULL: lines go only to the log */
	void		(*line_cb)(void *, const char *);
	void		(*eof_cb)(void *);	/* both streams at EOF */
	void		 *cb_arg;
};

struct spawn_stream {
	struct spawn_proc	*sp;
	int			 fd;		/* -1: closed */
	struct event		 ev;
	size_t			 len;
	char			 buf[SPAWN_LINE_MAX + 1];
};

struct spawn_proc {
	pid_t			 pid;		/* the model; its pgid */
	pid_t			 reaper;	/* our child; -1: reaped */
	int			 report_fd;	/* the reaper's; -1: closed */
	int			 stdin_fd;	/* write end; -1: closed */
	struct spawn_stream	 out;
	struct spawn_stream	 err;
	struct ring		*ring;
	char			 label[AGENCY_NAME_MAX];
	void			(*line_cb)(void *, const char *);
	void			(*eof_cb)(void *);
	void			*cb_arg;
	int			 eof_sent;
};

/* The values of a command template's tokens; NULL: none here. */
struct spawn_tokens {
	const char	*port;		/* %p */
	const char	*sock;		/* %s, the model's Unix socket */
	const char	*upstream;	/* %u */
	const char	*model;		/* %m */
};

/*
 * spawn_argv(template, tokens, &argv, err, errlen):
 * split a command template into a NULL-terminated argv without a shell
 * (blanks separate words; '...' and "..." group; a backslash outside
 * single quotes takes the next character literally), then expand %p
 * (port), %s (socket), %u (upstream), %m (model) and %% in each word
 * (a token with no value is an error); an expansion
 * never splits a word.  argv[0] must be an absolute path or a bare
 * name (looked up in the child's PATH).  0 with *argvp set (free it with
 * spawn_argv_free()), or -1 with a message in err.
 */
int	spawn_argv(const char *, const struct spawn_tokens *, char ***, char *,
	    size_t);
/* Whether template uses the token %c (c: 'p', 's', ...). */
int	spawn_uses(const char *, int);
void	spawn_argv_free(char **);

/*
 * spawn_env(user, home, model, port, runtime_env, model_env, &envp, err,
 * errlen): the scrubbed environment: PATH=SPAWN_PATH, HOME, USER and LOGNAME
 * (when given), LANG=C.UTF-8, AGENCY_EXIT_WITH_PARENT=1,
 * AGENCY_MODEL=model, AGENCY_PORT=port; then the runtime's env, then the
 * model's env (either list may be NULL), each replacing an earlier
 * variable of the same name.  0 with *envp set (free it with
 * spawn_argv_free()), or -1 with a message in err for an entry that is
 * not NAME=VALUE.
 */
int	spawn_env(const char *, const char *, const char *, const char *,
	    const struct strlist *, const struct strlist *, char ***, char *,
	    size_t);

/*
 * Fork the reaper, which forks and execs req in a new session (its pgid
 * is its pid), stdin a pipe whose write end agencyd keeps, stdout and
 * stderr pipes that are read with libevent events on the default base;
 * as root with req->user set, switch to that user's groups, gid and uid;
 * PR_SET_PDEATHSIG(SIGKILL) after the last credential change; umask 022
 * and req->dir as the working directory (/ when it cannot be entered).
 * Waits for the exec (the child reports a failure on a close-on-exec
 * pipe, the reaper passes it on; both do only system calls before it,
 * so the wait is short): returns the model's pid with *sp filled in
 * (sp->reaper is the process to reap), or -1 with a message in err
 * naming what failed (the reaper has then been reaped here).  *sp holds
 * the read events: it must stay where it is until spawn_close().
 * Callbacks get req->cb_arg; line_cb must not free *sp, eof_cb (called
 * once, last) may.
 */
pid_t	spawn_start(const struct spawn_req *, struct spawn_proc *, char *,
	    size_t);

/*
 * Signal a model through its reaper: SIGKILL kills the model's process
 * group and everything else the model started; any other signal sends
 * SIGTERM to the model's process group (and, once the model has exited,
 * to what it left).  Nothing once the reaper has been reaped.
 */
void	spawn_signal(const struct spawn_proc *, int);

/*
 * The reaper was reaped with wait status status: the model's own wait
 * status as the reaper saw it (status itself when the reaper left no
 * word, say when it was killed).  Call it once, before spawn_close().
 */
int	spawn_reaped(struct spawn_proc *, int);

/*
 * Drain what the pipes hold without blocking, flush partial lines, stop
 * the events and close every descriptor (stdin's write end and the
 * reaper's pipe too).  Does not call eof_cb.  Safe to call more than
 * once.  Call it after reaping the reaper, or whenever the record lets
 * go of it.
 */
void	spawn_close(struct spawn_proc *);

/* Whether a line of output says the port was taken. */
int	spawn_line_addr_in_use(const char *);

/* "exited with N", "was killed by SIGKILL" (+ " (core dumped)"). */
void	spawn_describe_exit(int, char *, size_t);

/* The ring: 0 or -1 on allocation failure; push copies the line. */
int		 ring_init(struct ring *, size_t);
void		 ring_push(struct ring *, const char *);
size_t		 ring_count(const struct ring *);
const char	*ring_get(const struct ring *, size_t);	/* 0 is oldest */
/* The seq of the i-th line held (the first line pushed is 1). */
uint64_t	 ring_seq(const struct ring *, size_t);
void		 ring_clear(struct ring *);
void		 ring_free(struct ring *);

#endif /* AGENCY_SPAWN_H */
