/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Helpers: fork, drop to the model user, sandbox, one job, imsg back.
 * See helper.h.  Calls spawn.c (spawn_describe_exit).
 *
 * Calls: spawn.c, common/imsg.c, common/log.c.
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "helper.h"
#include "log.h"
#include "spawn.h"

#ifndef P_PIDFD
#define P_PIDFD		3
#endif

/* What a child says when its set-up failed: a string. */
#define HELPER_MSG_FAILED	0x48454c01

struct helper {
	TAILQ_ENTRY(helper)	 entry;
	char			 name[64];
	pid_t			 pid;
	int			 pidfd;
	struct event		 pidev;
	struct event		 timer;
	struct imsgev		 iev;
	int			 sock;		/* -1: closed */
	int			 deadline_ms;
	int			 cancelled;
	int			 have_status;
	int			 status;
	char			 why[HELPER_WHY_MAX];	/* "": none yet */
	int			(*on_msg)(void *, struct imsg *, char *,
				    size_t);
	void			(*on_end)(void *, const char *);
	void			*cbarg;
};

static TAILQ_HEAD(, helper)	helpers = TAILQ_HEAD_INITIALIZER(helpers);

/* The user to become, looked up before the fork. */
struct helper_creds {
	int	 doswitch;
	uid_t	 uid;
	gid_t	 gid;
	char	 name[256];
};

/* Every job may do these, once it is sandboxed. */
static const int	base_calls[] = {
	SCMP_SYS(read), SCMP_SYS(pread64), SCMP_SYS(lseek),
	SCMP_SYS(fstat), SCMP_SYS(newfstatat), SCMP_SYS(close),
	SCMP_SYS(poll), SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap),
	SCMP_SYS(madvise), SCMP_SYS(futex), SCMP_SYS(getrandom),
	SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday), SCMP_SYS(getpid),
	SCMP_SYS(gettid), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn),
	SCMP_SYS(restart_syscall), SCMP_SYS(exit), SCMP_SYS(exit_group),
#ifdef __SANITIZE_ADDRESS__
	/* SANITIZE=1: the sanitizers' runtime, as in the proxy's filter */
	SCMP_SYS(sigaltstack), SCMP_SYS(sched_yield),
#endif
};

static void	helper_io(int, short, void *);
static void	helper_timeout(int, short, void *);
static void	helper_exited(int, short, void *);
static void	helper_drain(struct helper *);
static void	helper_close(struct helper *);
static void	helper_kill(struct helper *, const char *, ...)
		    __attribute__((__format__ (printf, 2, 3)));
static void	helper_finish(struct helper *);
static void	child_say(struct imsgbuf *, const char *);
static int	child_limits(void);
static int	child_drop(const struct helper_creds *);
static int	child_seccomp(const int *, char *, size_t);
static __dead void child_main(const struct helper_req *, int, pid_t,
		    const struct helper_creds *);

/*
 * The child.
 */

/* Tell agencyd why the set-up failed; it logs and hands on the text. */
static void
child_say(struct imsgbuf *ibuf, const char *why)
{
	(void)imsg_compose(ibuf, HELPER_MSG_FAILED, 0, 0, -1, why,
	    strlen(why) + 1);
	(void)imsg_flush(ibuf);
}

static int
child_limits(void)
{
	static const struct {
		int	 resource;
		rlim_t	 max;
	} limits[] = {
		{ RLIMIT_FSIZE, 0 },
		{ RLIMIT_NPROC, 0 },
		{ RLIMIT_CORE, 0 },
		{ RLIMIT_NOFILE, HELPER_FILES_MAX },
#ifndef __SANITIZE_ADDRESS__
		/* ASan's shadow and allocator are mapped already */
		{ RLIMIT_DATA, HELPER_DATA_MAX },
#endif
	};
	struct rlimit	 rl;
	size_t		 i;

	for (i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		rl.rlim_cur = rl.rlim_max = limits[i].max;
		if (setrlimit(limits[i].resource, &rl) == -1)
			return (-1);
	}
	return (0);
}

/* Become the user, for good: root cannot be had back. */
static int
child_drop(const struct helper_creds *cr)
{
	if (!cr->doswitch)
		return (0);
	if (initgroups(cr->name, cr->gid) == -1 ||
	    setresgid(cr->gid, cr->gid, cr->gid) == -1 ||
	    setresuid(cr->uid, cr->uid, cr->uid) == -1)
		return (-1);
	if (cr->uid != 0 && (setuid(0) != -1 || seteuid(0) != -1)) {
		errno = EPERM;
		return (-1);
	}
	return (0);
}

static int
child_seccomp(const int *extra, char *why, size_t whylen)
{
	scmp_filter_ctx	 ctx;
	size_t		 i;
	int		 r = -1;

	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL) {
		snprintf(why, whylen, "seccomp_init failed");
		return (-1);
	}
	for (i = 0; i < sizeof(base_calls) / sizeof(base_calls[0]); i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, base_calls[i],
		    0) < 0)
			goto done;
	for (i = 0; extra != NULL && extra[i] != 0 &&
	    i < HELPER_SYSCALLS_MAX; i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, extra[i], 0) < 0)
			goto done;
	/* imsg on our socket, and nothing else written anywhere. */
	if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(write), 1,
	    SCMP_A0(SCMP_CMP_EQ, HELPER_FD)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(sendmsg), 1,
	    SCMP_A0(SCMP_CMP_EQ, HELPER_FD)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(recvmsg), 1,
	    SCMP_A0(SCMP_CMP_EQ, HELPER_FD)) < 0)
		goto done;
	/* Memory, never executable; abort() to ourselves only. */
	if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
	    SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
	    SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)) < 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
	    SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid())) < 0)
		goto done;
	if (seccomp_load(ctx) < 0)
		goto done;
	r = 0;
 done:
	if (r == -1)
		snprintf(why, whylen, "the seccomp filter could not be set");
	seccomp_release(ctx);
	return (r);
}

static __dead void
child_main(const struct helper_req *req, int sock, pid_t parent,
    const struct helper_creds *cr)
{
	struct imsgbuf		 ibuf;
	struct sigaction	 sa;
	sigset_t		 none;
	char			 why[HELPER_WHY_MAX];
	int			 fd, i, sig, status;

	/* agencyd's handlers (libevent's) are not ours. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	sigemptyset(&none);
	(void)sigprocmask(SIG_SETMASK, &none, NULL);

	/* Our socket at HELPER_FD, /dev/null on 0-2, nothing else. */
	if (sock != HELPER_FD && (dup2(sock, HELPER_FD) == -1 ||
	    close(sock) == -1))
		_exit(126);
	if ((fd = open("/dev/null", O_RDWR)) == -1)
		_exit(126);
	for (i = 0; i <= 2; i++)
		if (fd != i && dup2(fd, i) == -1)
			_exit(126);
	closefrom(HELPER_FD + 1);
	imsg_init(&ibuf, HELPER_FD);
	(void)prctl(PR_SET_NAME, "agency-helper");

	if (req->cgroup_procs != NULL) {
		/* "0": the writer itself. */
		if ((fd = open(req->cgroup_procs, O_WRONLY | O_CLOEXEC)) ==
		    -1 || write(fd, "0", 1) != 1) {
			snprintf(why, sizeof(why), "joining %s: %s",
			    req->cgroup_procs, strerror(errno));
			child_say(&ibuf, why);
			_exit(1);
		}
		close(fd);
	}
	if (child_limits() == -1 || child_drop(cr) == -1) {
		snprintf(why, sizeof(why), "%s: %s", cr->doswitch ?
		    "dropping privileges" : "limits", strerror(errno));
		child_say(&ibuf, why);
		_exit(1);
	}
	/* After the last change of credentials, which clears it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		snprintf(why, sizeof(why), "prctl: %s", strerror(errno));
		child_say(&ibuf, why);
		_exit(1);
	}
	if (getppid() != parent)
		_exit(1);	/* agencyd is gone */

	why[0] = '\0';
	if (req->setup != NULL && req->setup(req->arg, why, sizeof(why)) ==
	    -1) {
		child_say(&ibuf, why[0] != '\0' ? why : "set-up failed");
		_exit(1);
	}
	if (child_seccomp(req->syscalls, why, sizeof(why)) == -1) {
		child_say(&ibuf, why);
		_exit(1);
	}
	status = req->run(req->arg, &ibuf);
	(void)imsg_flush(&ibuf);
	_exit(status);
}

/*
 * agencyd's side.
 */

int
helper_start(const struct helper_req *req, struct helper **hp, char *err,
    size_t errlen)
{
	struct helper		*h;
	struct helper_creds	 cr;
	struct passwd		*pw;
	struct timeval		 tv;
	sigset_t		 all, old;
	pid_t			 parent;
	int			 sv[2], saved;

	*hp = NULL;
	memset(&cr, 0, sizeof(cr));
	if (req->run == NULL || req->deadline_ms <= 0) {
		snprintf(err, errlen, "no job or no deadline");
		return (-1);
	}
	if (req->user != NULL) {
		errno = 0;
		if ((pw = getpwnam(req->user)) == NULL) {
			snprintf(err, errlen, "user %s: %s", req->user,
			    errno ? strerror(errno) : "no such user");
			return (-1);
		}
		if (geteuid() == 0) {
			cr.doswitch = 1;
			cr.uid = pw->pw_uid;
			cr.gid = pw->pw_gid;
			if (strlcpy(cr.name, pw->pw_name, sizeof(cr.name)) >=
			    sizeof(cr.name)) {
				snprintf(err, errlen, "user %s: name too long",
				    req->user);
				return (-1);
			}
		} else if (pw->pw_uid != geteuid()) {
			snprintf(err, errlen, "cannot run as %s: not root",
			    req->user);
			return (-1);
		}
	}
	if ((h = calloc(1, sizeof(*h))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return (-1);
	}
	(void)strlcpy(h->name, req->name != NULL ? req->name : "helper",
	    sizeof(h->name));
	h->sock = h->pidfd = -1;
	h->deadline_ms = req->deadline_ms;
	h->on_msg = req->on_msg;
	h->on_end = req->on_end;
	h->cbarg = req->cbarg;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		snprintf(err, errlen, "socketpair: %s", strerror(errno));
		free(h);
		return (-1);
	}

	/* The child must not inherit lines that we have yet to write, nor
	 * run a handler of ours before it has let go of them. */
	log_flush();
	parent = getpid();
	sigfillset(&all);
	(void)sigprocmask(SIG_BLOCK, &all, &old);
	switch (h->pid = fork()) {
	case -1:
		saved = errno;
		(void)sigprocmask(SIG_SETMASK, &old, NULL);
		close(sv[0]);
		close(sv[1]);
		free(h);
		snprintf(err, errlen, "fork: %s", strerror(saved));
		return (-1);
	case 0:
		close(sv[0]);
		child_main(req, sv[1], parent, &cr);
		/* NOTREACHED */
	default:
		break;
	}
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	close(sv[1]);

	if ((h->pidfd = syscall(SYS_pidfd_open, h->pid, 0)) == -1) {
		/* Cannot follow it: end it here, and reap it. */
		saved = errno;
		(void)kill(h->pid, SIGKILL);
		while (waitpid(h->pid, NULL, 0) == -1 && errno == EINTR)
			;
		close(sv[0]);
		free(h);
		snprintf(err, errlen, "pidfd_open: %s", strerror(saved));
		return (-1);
	}
	h->sock = sv[0];
	imsgev_init(&h->iev, h->sock, helper_io, h);
	imsgev_add(&h->iev);
	event_set(&h->pidev, h->pidfd, EV_READ, helper_exited, h);
	evtimer_set(&h->timer, helper_timeout, h);
	tv.tv_sec = h->deadline_ms / 1000;
	tv.tv_usec = (h->deadline_ms % 1000) * 1000;
	if (event_add(&h->pidev, NULL) == -1 ||
	    evtimer_add(&h->timer, &tv) == -1)
		log_warnx("%s: %s: event_add failed", __func__, h->name);
	TAILQ_INSERT_TAIL(&helpers, h, entry);
	*hp = h;
	return (0);
}

pid_t
helper_pid(const struct helper *h)
{
	return (h->pid);
}

int
helper_count(void)
{
	struct helper	*h;
	int		 n = 0;

	TAILQ_FOREACH(h, &helpers, entry)
		n++;
	return (n);
}

/* Kill the child (once its pid is ours to kill: not yet reaped). */
static void
helper_kill(struct helper *h, const char *fmt, ...)
{
	va_list	 ap;

	if (h->why[0] == '\0' && fmt != NULL) {
		va_start(ap, fmt);
		(void)vsnprintf(h->why, sizeof(h->why), fmt, ap);
		va_end(ap);
	}
	if (h->pidfd != -1 &&
	    syscall(SYS_pidfd_send_signal, h->pidfd, SIGKILL, NULL, 0) == -1 &&
	    errno != ESRCH)
		log_warn("%s: %s: kill %d", __func__, h->name, (int)h->pid);
}

void
helper_cancel(struct helper *h)
{
	h->cancelled = 1;
	h->on_msg = NULL;
	h->on_end = NULL;
	helper_kill(h, "cancelled");
	helper_close(h);
}

static void
helper_close(struct helper *h)
{
	if (h->sock == -1)
		return;
	imsgev_clear(&h->iev);
	close(h->sock);
	h->sock = -1;
}

/* Every message that has come: handed on, or the child is a liar. */
static void
helper_drain(struct helper *h)
{
	struct imsg	 imsg;
	char		 why[HELPER_WHY_MAX];
	ssize_t		 n;
	size_t		 i;
	int		 r;

	while (h->sock != -1) {
		if ((n = imsg_get(&h->iev.ibuf, &imsg)) == -1) {
			helper_kill(h, "sent a broken message");
			helper_close(h);
			return;
		}
		if (n == 0)
			return;
		if (imsg_get_type(&imsg) == HELPER_MSG_FAILED) {
			if (imsg_get_string(&imsg, why, sizeof(why)) == -1)
				strlcpy(why, "set-up failed", sizeof(why));
			/* Its text, made safe for the log. */
			for (i = 0; why[i] != '\0'; i++)
				if ((unsigned char)why[i] < 0x20 ||
				    (unsigned char)why[i] >= 0x7f)
					why[i] = '?';
			if (h->why[0] == '\0')
				(void)strlcpy(h->why, why, sizeof(h->why));
			imsg_free(&imsg);
			continue;
		}
		why[0] = '\0';
		r = h->on_msg != NULL ? h->on_msg(h->cbarg, &imsg, why,
		    sizeof(why)) : 0;
		imsg_free(&imsg);
		if (r == -1) {
			helper_kill(h, "%s", why[0] != '\0' ? why :
			    "sent a message agencyd refused");
			helper_close(h);
			return;
		}
	}
}

static void
helper_io(int fd, short event, void *arg)
{
	struct helper	*h = arg;

	(void)fd;
	if (imsgev_io(&h->iev, event) == -1) {
		/* EOF or an error: take what came, then no more. */
		helper_drain(h);
		helper_close(h);
		return;
	}
	helper_drain(h);
}

static void
helper_timeout(int fd, short event, void *arg)
{
	struct helper	*h = arg;

	(void)fd;
	(void)event;
	helper_kill(h, "did not end within %d ms", h->deadline_ms);
}

/* The child has exited: reap it, take its last messages, end. */
static void
helper_exited(int fd, short event, void *arg)
{
	struct helper	*h = arg;
	siginfo_t	 si;

	(void)fd;
	(void)event;
	memset(&si, 0, sizeof(si));
	if (!h->have_status) {
		if (waitid((idtype_t)P_PIDFD, h->pidfd, &si,
		    WEXITED | WNOHANG) == -1) {
			if (errno != ECHILD)
				log_warn("%s: %s: waitid", __func__, h->name);
		} else if (si.si_pid == 0) {
			/* Not yet: look again when it is. */
			if (event_add(&h->pidev, NULL) == -1)
				log_warnx("%s: event_add failed", __func__);
			return;
		} else {
			h->have_status = 1;
			h->status = si.si_code == CLD_EXITED ?
			    W_EXITCODE(si.si_status, 0) :
			    W_EXITCODE(0, si.si_status) |
			    (si.si_code == CLD_DUMPED ? WCOREFLAG : 0);
		}
	}
	helper_finish(h);
}

int
helper_reaped(pid_t pid, int status)
{
	struct helper	*h;

	TAILQ_FOREACH(h, &helpers, entry)
		if (h->pid == pid && !h->have_status) {
			h->have_status = 1;
			h->status = status;
			return (1);
		}
	return (0);
}

static void
helper_finish(struct helper *h)
{
	char	 how[64];

	/* What it wrote before it went is in the socket's buffer. */
	if (h->sock != -1) {
		while (imsg_read(&h->iev.ibuf) > 0)
			helper_drain(h);
		helper_drain(h);
		helper_close(h);
	}
	if (h->why[0] == '\0' && (!h->have_status || h->status != 0)) {
		if (h->have_status)
			spawn_describe_exit(h->status, how, sizeof(how));
		else
			strlcpy(how, "ended, reaped elsewhere", sizeof(how));
		(void)strlcpy(h->why, how, sizeof(h->why));
	}
	event_del(&h->pidev);
	evtimer_del(&h->timer);
	close(h->pidfd);
	h->pidfd = -1;
	TAILQ_REMOVE(&helpers, h, entry);
	if (!h->cancelled && h->on_end != NULL)
		h->on_end(h->cbarg, h->why[0] != '\0' ? h->why : NULL);
	free(h);
}
