/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Model processes: argv and environment, the reaper, fork+exec, output
 * capture, and the ring of a model's last lines.  See spawn.h.
 * It calls no other file of agencyd: its callers hear of a line or an
 * end through the callbacks of struct spawn_req.
 *
 * Calls: common/log.c.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "spawn.h"

/* How a child says what failed before exec; EOF on the pipe: exec ran. */
struct spawn_failure {
	int	 error;
	char	 what[32];
};

/*
 * What the reaper tells agencyd, one record a write: STARTED (the model
 * ran exec) or FAILED (it did not; nothing is left), later EXITED
 * (nothing of the model is left; how the model itself ended).
 */
enum {
	REPORT_STARTED = 1,
	REPORT_FAILED,
	REPORT_EXITED,
};

struct spawn_report {
	int32_t	 kind;
	int32_t	 error;		/* FAILED: errno */
	int32_t	 pid;		/* STARTED: the model's */
	int32_t	 status;	/* EXITED: the model's wait status */
	char	 what[32];	/* FAILED: the step that failed */
};

/* The model's credentials, looked up before the fork. */
struct spawn_creds {
	int		 doswitch;
	uid_t		 uid;
	gid_t		 gid;
	gid_t		*groups;
	int		 ngroups;
};

struct strvec {
	char	**v;
	size_t	  n;
	size_t	  cap;
};

static int	strvec_add(struct strvec *, char *);
static void	strvec_free(struct strvec *);
static int	expand_word(const char *, const struct spawn_tokens *,
		    char **, char *, size_t);
static int	env_put(struct strvec *, const char *, const char *, char *,
		    size_t);
static void	signals_reset(int);
static __dead void child_fail(int, const char *);
static __dead void child_run(const struct spawn_req *, int, int, int, int,
		    pid_t, const struct spawn_creds *);
static void	reaper_report(int, int, int, int, int, const char *);
static __dead void reaper_fail(int, const char *);
static void	reaper_keep(int *, int);
static void	reaper_children(int);
static int64_t	reaper_now(void);
static __dead void reaper_wait(pid_t, int);
static __dead void reaper_run(const struct spawn_req *, int, int, int, int,
		    pid_t, const struct spawn_creds *);
static int	lookup_user(const char *, struct spawn_creds *, char *,
		    size_t);
static void	closepair(int *);
static void	spawn_read(int, short, void *);
static int	stream_drain(struct spawn_stream *);
static void	stream_feed(struct spawn_stream *, const char *, size_t);
static void	stream_emit(struct spawn_stream *);
static void	stream_finish(struct spawn_stream *);

/*
 * The ring.
 */

int
ring_init(struct ring *r, size_t cap)
{
	memset(r, 0, sizeof(*r));
	if (cap == 0)
		cap = 1;
	if ((r->lines = calloc(cap, sizeof(*r->lines))) == NULL) {
		log_warn("%s", __func__);
		return (-1);
	}
	r->cap = cap;
	return (0);
}

void
ring_push(struct ring *r, const char *line)
{
	char	*s;
	size_t	 i;

	if (r->lines == NULL)
		return;
	if ((s = strdup(line)) == NULL) {
		log_warn("%s", __func__);
		return;
	}
	r->pushed++;
	if (r->count < r->cap) {
		r->lines[(r->first + r->count) % r->cap] = s;
		r->count++;
		return;
	}
	/* Full: the newest takes the oldest's place. */
	i = r->first;
	free(r->lines[i]);
	r->lines[i] = s;
	r->first = (r->first + 1) % r->cap;
}

uint64_t
ring_seq(const struct ring *r, size_t i)
{
	return (r->pushed - r->count + i + 1);
}

size_t
ring_count(const struct ring *r)
{
	return (r->count);
}

const char *
ring_get(const struct ring *r, size_t i)
{
	if (i >= r->count)
		return (NULL);
	return (r->lines[(r->first + i) % r->cap]);
}

void
ring_clear(struct ring *r)
{
	size_t	 i;

	for (i = 0; i < r->count; i++) {
		free(r->lines[(r->first + i) % r->cap]);
		r->lines[(r->first + i) % r->cap] = NULL;
	}
	r->first = r->count = 0;
}

void
ring_free(struct ring *r)
{
	if (r->lines == NULL)
		return;
	ring_clear(r);
	free(r->lines);
	r->lines = NULL;
	r->cap = 0;
}

/*
 * argv and environment.
 */

static int
strvec_add(struct strvec *sv, char *s)
{
	char	**nv;
	size_t	  ncap;

	/* Room for s and the terminating NULL. */
	if (sv->n + 2 > sv->cap) {
		ncap = sv->cap == 0 ? 8 : sv->cap * 2;
		if ((nv = reallocarray(sv->v, ncap, sizeof(*nv))) == NULL)
			return (-1);
		sv->v = nv;
		sv->cap = ncap;
	}
	sv->v[sv->n++] = s;
	sv->v[sv->n] = NULL;
	return (0);
}

static void
strvec_free(struct strvec *sv)
{
	size_t	 i;

	for (i = 0; i < sv->n; i++)
		free(sv->v[i]);
	free(sv->v);
	sv->v = NULL;
	sv->n = sv->cap = 0;
}

void
spawn_argv_free(char **v)
{
	char	**p;

	if (v == NULL)
		return;
	for (p = v; *p != NULL; p++)
		free(*p);
	free(v);
}

/*
 * The command template's tokens (agency.conf(5)): %p the port, %s the
 * model's Unix socket, %u the upstream, %m the model's name.  0 with
 * *val (NULL: it has no value here), or -1 when c names no token.
 */
static int
token_value(int c, const struct spawn_tokens *t, const char **val)
{
	switch (c) {
	case 'p':
		*val = t->port;
		return (0);
	case 's':
		*val = t->sock;
		return (0);
	case 'u':
		*val = t->upstream;
		return (0);
	case 'm':
		*val = t->model;
		return (0);
	default:
		*val = NULL;
		return (-1);
	}
}

int
spawn_uses(const char *tmpl, int c)
{
	const char	*p;

	for (p = tmpl; *p != '\0'; p++) {
		if (*p != '%' || p[1] == '\0')
			continue;
		if (*++p == c)
			return (1);
	}
	return (0);
}

static int
expand_word(const char *w, const struct spawn_tokens *t, char **out,
    char *err, size_t errlen)
{
	const char	*val;
	char		*s;
	size_t		 len = 0, cap, vlen;
	const char	*p;

	/* Worst case: every expansion is as long as the longest value. */
	cap = strlen(w) + 1;
	for (p = w; *p != '\0'; p++) {
		if (*p != '%' || p[1] == '\0')
			continue;
		p++;
		if (token_value(*p, t, &val) == 0 &&
		    val != NULL)
			cap += strlen(val);
	}
	if ((s = malloc(cap)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return (-1);
	}
	for (p = w; *p != '\0'; p++) {
		if (*p != '%') {
			s[len++] = *p;
			continue;
		}
		p++;
		if (*p == '\0') {
			snprintf(err, errlen, "trailing %% in command");
			goto fail;
		}
		if (*p == '%') {
			s[len++] = '%';
			continue;
		}
		if (token_value(*p, t, &val) == -1) {
			if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
				snprintf(err, errlen, "unknown %%\\x%02x in "
				    "command", (unsigned char)*p);
			else
				snprintf(err, errlen, "unknown %%%c in command",
				    *p);
			goto fail;
		}
		if (val == NULL) {
			snprintf(err, errlen, "%%%c in command has no value",
			    *p);
			goto fail;
		}
		vlen = strlen(val);
		memcpy(s + len, val, vlen);
		len += vlen;
	}
	s[len] = '\0';
	*out = s;
	return (0);
 fail:
	free(s);
	return (-1);
}

static int
isblankc(char c)
{
	return (c == ' ' || c == '\t' || c == '\n' || c == '\r');
}

int
spawn_argv(const char *tmpl, const struct spawn_tokens *t, char ***argvp,
    char *err, size_t errlen)
{
	struct strvec	 sv = { NULL, 0, 0 };
	const char	*p = tmpl;
	char		*word, *w;
	size_t		 wl;

	*argvp = NULL;
	if ((word = malloc(strlen(tmpl) + 1)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return (-1);
	}
	for (;;) {
		while (isblankc(*p))
			p++;
		if (*p == '\0')
			break;
		wl = 0;
		while (*p != '\0' && !isblankc(*p)) {
			switch (*p) {
			case '\'':
				for (p++; *p != '\0' && *p != '\''; p++)
					word[wl++] = *p;
				if (*p == '\0') {
					snprintf(err, errlen, "unterminated "
					    "single quote in command");
					goto fail;
				}
				p++;
				break;
			case '"':
				for (p++; *p != '\0' && *p != '"'; p++) {
					if (*p == '\\' && *++p == '\0')
						break;
					word[wl++] = *p;
				}
				if (*p == '\0') {
					snprintf(err, errlen, "unterminated "
					    "double quote in command");
					goto fail;
				}
				p++;
				break;
			case '\\':
				if (*++p == '\0') {
					snprintf(err, errlen, "trailing "
					    "backslash in command");
					goto fail;
				}
				word[wl++] = *p++;
				break;
			default:
				word[wl++] = *p++;
				break;
			}
		}
		word[wl] = '\0';
		if (expand_word(word, t, &w, err, errlen) == -1)
			goto fail;
		if (strvec_add(&sv, w) == -1) {
			free(w);
			snprintf(err, errlen, "out of memory");
			goto fail;
		}
	}
	if (sv.n == 0) {
		snprintf(err, errlen, "empty command");
		goto fail;
	}
	if (sv.v[0][0] == '\0' ||
	    (sv.v[0][0] != '/' && strchr(sv.v[0], '/') != NULL)) {
		snprintf(err, errlen, "program \"%s\" is neither an absolute "
		    "path nor a name to look up in PATH", sv.v[0]);
		goto fail;
	}
	free(word);
	*argvp = sv.v;
	return (0);
 fail:
	free(word);
	strvec_free(&sv);
	return (-1);
}

/* Set NAME=VALUE (value NULL: kv is already "NAME=VALUE"), replacing. */
static int
env_put(struct strvec *sv, const char *kv, const char *value, char *err,
    size_t errlen)
{
	const char	*eq;
	char		*s;
	size_t		 klen, i;

	if (value != NULL) {
		if (asprintf(&s, "%s=%s", kv, value) == -1) {
			snprintf(err, errlen, "out of memory");
			return (-1);
		}
	} else if ((s = strdup(kv)) == NULL) {
		snprintf(err, errlen, "out of memory");
		return (-1);
	}
	if ((eq = strchr(s, '=')) == NULL || eq == s) {
		snprintf(err, errlen, "environment entry \"%s\" is not "
		    "NAME=VALUE", s);
		free(s);
		return (-1);
	}
	klen = eq - s + 1;		/* with the '=' */
	for (i = 0; i < sv->n; i++) {
		if (strncmp(sv->v[i], s, klen) == 0) {
			free(sv->v[i]);
			sv->v[i] = s;
			return (0);
		}
	}
	if (strvec_add(sv, s) == -1) {
		free(s);
		snprintf(err, errlen, "out of memory");
		return (-1);
	}
	return (0);
}

int
spawn_env(const char *user, const char *home, const char *model,
    const char *port, const struct strlist *rtenv,
    const struct strlist *modelenv, char ***envp, char *err, size_t errlen)
{
	struct strvec	 sv = { NULL, 0, 0 };
	struct strent	*se;

	*envp = NULL;
	if (env_put(&sv, "PATH", SPAWN_PATH, err, errlen) == -1)
		goto fail;
	if (home != NULL && env_put(&sv, "HOME", home, err, errlen) == -1)
		goto fail;
	if (user != NULL && (env_put(&sv, "USER", user, err, errlen) == -1 ||
	    env_put(&sv, "LOGNAME", user, err, errlen) == -1))
		goto fail;
	/* Python servers otherwise guess ASCII for their output. */
	if (env_put(&sv, "LANG", "C.UTF-8", err, errlen) == -1 ||
	    env_put(&sv, "AGENCY_EXIT_WITH_PARENT", "1", err, errlen) == -1)
		goto fail;
	if (model != NULL &&
	    env_put(&sv, "AGENCY_MODEL", model, err, errlen) == -1)
		goto fail;
	if (port != NULL && env_put(&sv, "AGENCY_PORT", port, err, errlen) == -1)
		goto fail;
	if (rtenv != NULL)
		TAILQ_FOREACH(se, rtenv, entry)
			if (env_put(&sv, se->s, NULL, err, errlen) == -1)
				goto fail;
	if (modelenv != NULL)
		TAILQ_FOREACH(se, modelenv, entry)
			if (env_put(&sv, se->s, NULL, err, errlen) == -1)
				goto fail;
	*envp = sv.v;
	return (0);
 fail:
	strvec_free(&sv);
	return (-1);
}

/*
 * Starting the process.
 */

static void
closepair(int *p)
{
	if (p[0] != -1)
		close(p[0]);
	if (p[1] != -1)
		close(p[1]);
	p[0] = p[1] = -1;
}

static int
lookup_user(const char *user, struct spawn_creds *cr, char *err,
    size_t errlen)
{
	struct passwd	*pw;
	gid_t		*groups = NULL, *ng;
	int		 n = 16, have;

	memset(cr, 0, sizeof(*cr));
	if (user == NULL)
		return (0);
	errno = 0;
	if ((pw = getpwnam(user)) == NULL) {
		snprintf(err, errlen, "user %s: %s", user,
		    errno ? strerror(errno) : "no such user");
		return (-1);
	}
	if (geteuid() != 0) {
		/* User mode runs models as ourselves; nothing to switch. */
		if (pw->pw_uid == geteuid())
			return (0);
		snprintf(err, errlen, "cannot run as %s: not root", user);
		return (-1);
	}
	/* Look the groups up here: the child makes no NSS calls. */
	for (;;) {
		if ((ng = reallocarray(groups, n, sizeof(*ng))) == NULL) {
			free(groups);
			snprintf(err, errlen, "out of memory");
			return (-1);
		}
		groups = ng;
		have = n;
		if (getgrouplist(pw->pw_name, pw->pw_gid, groups, &have) != -1)
			break;
		if (have <= n) {
			/* glibc sets have; be safe if it did not grow. */
			n *= 2;
		} else
			n = have;
		if (n > 65536) {
			free(groups);
			snprintf(err, errlen, "user %s: too many groups",
			    user);
			return (-1);
		}
	}
	cr->doswitch = 1;
	cr->uid = pw->pw_uid;
	cr->gid = pw->pw_gid;
	cr->groups = groups;
	cr->ngroups = have;
	return (0);
}

/* Every handler back to SIG_DFL; every signal blocked, or none. */
static void
signals_reset(int blocked)
{
	struct sigaction	 sa;
	sigset_t		 set;
	int			 sig;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	sigemptyset(&sa.sa_mask);
	for (sig = 1; sig < NSIG; sig++)
		(void)sigaction(sig, &sa, NULL);
	if (blocked)
		sigfillset(&set);
	else
		sigemptyset(&set);
	(void)sigprocmask(SIG_SETMASK, &set, NULL);
}

/* Report a failure to the parent on fd and end.  Signal-safe only. */
static __dead void
child_fail(int fd, const char *what)
{
	struct spawn_failure	 f;

	memset(&f, 0, sizeof(f));
	f.error = errno;
	strlcpy(f.what, what, sizeof(f.what));
	(void)write(fd, &f, sizeof(f));
	_exit(127);
}

static __dead void
child_run(const struct spawn_req *req, int in_r, int out_w, int err_w,
    int ex_w, pid_t parent, const struct spawn_creds *cr)
{
	const char		*path = SPAWN_PATH, *p, *e;
	char			 file[4096];
	size_t			 dlen, flen;
	int			 fds[3], ex, i, eacces = 0;

	/* The parent's handlers (libevent's) must not run here. */
	signals_reset(0);

	if (setsid() == -1)
		child_fail(ex_w, "setsid");

	/* Lift every end above 2 first so that no dup2 clobbers another. */
	if ((fds[0] = fcntl(in_r, F_DUPFD_CLOEXEC, 3)) == -1 ||
	    (fds[1] = fcntl(out_w, F_DUPFD_CLOEXEC, 3)) == -1 ||
	    (fds[2] = fcntl(err_w, F_DUPFD_CLOEXEC, 3)) == -1 ||
	    (ex = fcntl(ex_w, F_DUPFD_CLOEXEC, 3)) == -1)
		child_fail(ex_w, "fcntl");
	for (i = 0; i < 3; i++)
		if (dup2(fds[i], i) == -1)
			child_fail(ex, "dup2");
	if (ex != 3) {
		if (dup2(ex, 3) == -1)
			child_fail(ex, "dup2");
		ex = 3;
	}
	if (fcntl(ex, F_SETFD, FD_CLOEXEC) == -1)
		child_fail(ex, "fcntl");
	closefrom(4);

	if (cr->doswitch) {
		if (setgroups(cr->ngroups, cr->groups) == -1)
			child_fail(ex, "setgroups");
		if (setresgid(cr->gid, cr->gid, cr->gid) == -1)
			child_fail(ex, "setresgid");
		if (setresuid(cr->uid, cr->uid, cr->uid) == -1)
			child_fail(ex, "setresuid");
	}
	/* After the last credential change, which would clear it. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1)
		child_fail(ex, "prctl");
	if (getppid() != parent)
		_exit(127);

	/* Not agencyd's umask and directory; as the model user. */
	umask(req->umask != 0 ? req->umask : 022);
	if ((req->dir == NULL || chdir(req->dir) == -1) && chdir("/") == -1)
		child_fail(ex, "chdir");

	if (strchr(req->argv[0], '/') != NULL) {
		execve(req->argv[0], req->argv, req->envp);
		child_fail(ex, "exec");
	}
	for (i = 0; req->envp != NULL && req->envp[i] != NULL; i++)
		if (strncmp(req->envp[i], "PATH=", 5) == 0)
			path = req->envp[i] + 5;
	flen = strlen(req->argv[0]);
	for (p = path; ; p = e + 1) {
		if ((e = strchr(p, ':')) == NULL)
			e = p + strlen(p);
		dlen = e - p;
		if (dlen == 0) {
			p = ".";
			dlen = 1;
		}
		if (dlen + 1 + flen < sizeof(file)) {
			memcpy(file, p, dlen);
			file[dlen] = '/';
			memcpy(file + dlen + 1, req->argv[0], flen + 1);
			execve(file, req->argv, req->envp);
			switch (errno) {
			case EACCES:
				eacces = 1;
				break;
			case ENOENT:
			case ENOTDIR:
			case ELOOP:
			case ENAMETOOLONG:
				break;
			default:
				child_fail(ex, "exec");
			}
		}
		if (*e == '\0')
			break;
	}
	errno = eacces ? EACCES : ENOENT;
	child_fail(ex, "exec");
}

/*
 * The reaper.
 */

/* One record to agencyd; a short write cannot happen below PIPE_BUF. */
static void
reaper_report(int fd, int kind, int error, int pid, int status,
    const char *what)
{
	struct spawn_report	 r;

	memset(&r, 0, sizeof(r));
	r.kind = kind;
	r.error = error;
	r.pid = pid;
	r.status = status;
	if (what != NULL)
		strlcpy(r.what, what, sizeof(r.what));
	(void)write(fd, &r, sizeof(r));
}

/* Nothing was started: say why and end. */
static __dead void
reaper_fail(int fd, const char *what)
{
	reaper_report(fd, REPORT_FAILED, errno, 0, 0, what);
	_exit(127);
}

/*
 * Keep the n descriptors of fds (moved above 2 first) and 0-2 on
 * /dev/null; close every other one, agencyd's sockets and the other
 * models' pipes above all: holding them would keep their ends open.
 */
static void
reaper_keep(int *fds, int n)
{
	int	 fd, i, max = 2, kept, null;

	for (i = 0; i < n; i++)
		if (fds[i] <= 2 &&
		    (fds[i] = fcntl(fds[i], F_DUPFD_CLOEXEC, 3)) == -1)
			_exit(127);
	if ((null = open("/dev/null", O_RDWR)) != -1) {
		for (fd = 0; fd <= 2; fd++)
			if (null != fd)
				(void)dup2(null, fd);
		if (null > 2)
			close(null);
	}
	for (i = 0; i < n; i++)
		if (fds[i] > max)
			max = fds[i];
	for (fd = 3; fd < max; fd++) {
		for (kept = 0, i = 0; i < n; i++)
			if (fds[i] == fd)
				kept = 1;
		if (!kept)
			(void)close(fd);
	}
	closefrom(max + 1);
}

/*
 * Signal every child of ours: the model, and what it left behind that
 * came to us.  Only our own children: we reap them, so none of these
 * pids can be another process's by now.
 */
static void
reaper_children(int sig)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[64], buf[256], *p;
	const char	*errstr;
	pid_t		 self = getpid();
	long long	 pid, ppid;
	ssize_t		 n;
	int		 fd;

	if ((d = opendir("/proc")) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		pid = strtonum(de->d_name, 1, INT_MAX, &errstr);
		if (errstr != NULL || pid == self)
			continue;
		(void)snprintf(path, sizeof(path), "/proc/%lld/stat", pid);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
			continue;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = '\0';
		/* "pid (comm) S ppid ...": comm may hold anything. */
		if ((p = strrchr(buf, ')')) == NULL ||
		    sscanf(p + 1, " %*c %lld", &ppid) != 1 || ppid != self)
			continue;
		(void)kill((pid_t)pid, sig);
	}
	closedir(d);
}

static int64_t
reaper_now(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/*
 * Until we have no child left: reap, pass agencyd's SIGTERM on to the
 * model's process group, kill everything on SPAWN_SIG_KILL (agencyd's
 * request, or its death), and once the model has exited, give what it
 * left SIGTERM, then SIGKILL after the grace.  Then tell agencyd how the
 * model ended, and end.
 */
static __dead void
reaper_wait(pid_t model, int rep)
{
	struct timespec	 ts;
	sigset_t	 set;
	int64_t		 deadline = -1, left;
	pid_t		 pid;
	int		 status, mstatus = 0, mgone = 0, killing = 0, sig;

	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SPAWN_SIG_KILL);
	for (;;) {
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			if (pid != model || mgone)
				continue;
			mstatus = status;
			mgone = 1;
			if (!killing) {
				reaper_children(SIGTERM);
				deadline = reaper_now() + SPAWN_REAP_GRACE;
			}
		}
		if (pid == -1 && errno == ECHILD)
			break;
		if (deadline != -1 && reaper_now() >= deadline)
			killing = 1;
		if (killing) {
			if (!mgone)
				(void)kill(-model, SIGKILL);
			reaper_children(SIGKILL);
			left = SPAWN_REAP_POLL;
		} else if (deadline != -1)
			left = deadline - reaper_now();
		else
			left = -1;
		if (left >= 0) {
			ts.tv_sec = left / 1000;
			ts.tv_nsec = (left % 1000) * 1000000;
			sig = sigtimedwait(&set, NULL, &ts);
		} else
			sig = sigwaitinfo(&set, NULL);
		switch (sig) {
		case SIGTERM:
			if (!mgone)
				(void)kill(-model, SIGTERM);
			else
				reaper_children(SIGTERM);
			break;
		case SPAWN_SIG_KILL:
			killing = 1;
			break;
		default:
			/* SIGCHLD, or the time is up: look again. */
			break;
		}
	}
	reaper_report(rep, REPORT_EXITED, 0, 0, mstatus, NULL);
	_exit(0);
}

/* The reaper: set itself up, start the model, wait for it and its own. */
static __dead void
reaper_run(const struct spawn_req *req, int in_r, int out_w, int err_w,
    int rep, pid_t parent, const struct spawn_creds *cr)
{
	struct spawn_failure	 f;
	ssize_t			 n;
	pid_t			 model, self;
	int			 fds[4], ex[2];

	/*
	 * agencyd's handlers must not run here.  Every signal stays
	 * blocked (as it was for the fork): the ones we act on are taken
	 * with sigtimedwait, and nothing but SIGKILL, which only root may
	 * send us, ends the reaper before its model.
	 */
	signals_reset(1);

	fds[0] = in_r;
	fds[1] = out_w;
	fds[2] = err_w;
	fds[3] = rep;
	reaper_keep(fds, 4);
	in_r = fds[0];
	out_w = fds[1];
	err_w = fds[2];
	rep = fds[3];

	/* Out of agencyd's session: a terminal's signals are not ours. */
	if (setsid() == -1)
		reaper_fail(rep, "setsid");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) == -1)
		reaper_fail(rep, "prctl");
	if (prctl(PR_SET_PDEATHSIG, SPAWN_SIG_KILL) == -1)
		reaper_fail(rep, "prctl");
	if (getppid() != parent)
		_exit(127);	/* agencyd is gone: start nothing */
	(void)prctl(PR_SET_NAME, "agency-reaper");
	setproctitle("reaper for %s", req->label != NULL ? req->label :
	    req->argv[0]);

	if (pipe2(ex, O_CLOEXEC) == -1)
		reaper_fail(rep, "pipe");
	self = getpid();
	switch (model = fork()) {
	case -1:
		reaper_fail(rep, "fork");
	case 0:
		close(ex[0]);
		close(rep);
		child_run(req, in_r, out_w, err_w, ex[1], self, cr);
		/* NOTREACHED */
	default:
		break;
	}
	close(in_r);
	close(out_w);
	close(err_w);
	close(ex[1]);

	/* EOF: the exec happened and closed the child's end. */
	do {
		n = read(ex[0], &f, sizeof(f));
	} while (n == -1 && errno == EINTR);
	close(ex[0]);
	if (n != 0) {
		/* The child ends at once; reap it so nobody else sees it. */
		while (waitpid(model, NULL, 0) == -1 && errno == EINTR)
			;
		if (n == (ssize_t)sizeof(f)) {
			f.what[sizeof(f.what) - 1] = '\0';
			reaper_report(rep, REPORT_FAILED, f.error, 0, 0,
			    f.what);
		} else
			reaper_report(rep, REPORT_FAILED, 0, 0, 0, "report");
		_exit(127);
	}
	reaper_report(rep, REPORT_STARTED, 0, model, 0, NULL);
	reaper_wait(model, rep);
}

pid_t
spawn_start(const struct spawn_req *req, struct spawn_proc *sp, char *err,
    size_t errlen)
{
	struct spawn_report	 r;
	struct spawn_creds	 cr;
	sigset_t		 all, old;
	pid_t			 reaper, parent;
	ssize_t			 n;
	int			 in[2] = { -1, -1 }, out[2] = { -1, -1 };
	int			 er[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int			 saved;

	memset(sp, 0, sizeof(*sp));
	sp->pid = sp->reaper = -1;
	sp->report_fd = sp->stdin_fd = sp->out.fd = sp->err.fd = -1;
	if (req->argv == NULL || req->argv[0] == NULL) {
		snprintf(err, errlen, "no command");
		return (-1);
	}
	if (lookup_user(req->user, &cr, err, errlen) == -1)
		return (-1);
	if (pipe2(in, O_CLOEXEC) == -1 || pipe2(out, O_CLOEXEC) == -1 ||
	    pipe2(er, O_CLOEXEC) == -1 || pipe2(rep, O_CLOEXEC) == -1) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		goto fail;
	}

	/* The child must not inherit lines that we have yet to write. */
	log_flush();
	parent = getpid();
	sigfillset(&all);
	(void)sigprocmask(SIG_BLOCK, &all, &old);
	switch (reaper = fork()) {
	case -1:
		saved = errno;
		(void)sigprocmask(SIG_SETMASK, &old, NULL);
		snprintf(err, errlen, "fork: %s", strerror(saved));
		goto fail;
	case 0:
		reaper_run(req, in[0], out[1], er[1], rep[1], parent, &cr);
		/* NOTREACHED */
	default:
		break;
	}
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	free(cr.groups);
	cr.groups = NULL;
	close(in[0]);
	close(out[1]);
	close(er[1]);
	close(rep[1]);
	in[0] = out[1] = er[1] = rep[1] = -1;

	/* The reaper says once the model ran exec, or why it did not. */
	do {
		n = read(rep[0], &r, sizeof(r));
	} while (n == -1 && errno == EINTR);
	if (n != (ssize_t)sizeof(r) || r.kind != REPORT_STARTED ||
	    r.pid <= 0) {
		if (n == (ssize_t)sizeof(r) && r.kind == REPORT_FAILED) {
			r.what[sizeof(r.what) - 1] = '\0';
			if (strcmp(r.what, "exec") == 0)
				snprintf(err, errlen, "exec %s: %s",
				    req->argv[0], strerror(r.error));
			else
				snprintf(err, errlen, "%s before exec %s: %s",
				    r.what, req->argv[0], strerror(r.error));
		} else
			snprintf(err, errlen, "exec %s: lost the reaper's "
			    "report", req->argv[0]);
		/* It ends at once; reap it so nobody else sees it. */
		while (waitpid(reaper, NULL, 0) == -1 && errno == EINTR)
			;
		goto fail;
	}

	if (fcntl(out[0], F_SETFL, O_NONBLOCK) == -1 ||
	    fcntl(er[0], F_SETFL, O_NONBLOCK) == -1 ||
	    fcntl(rep[0], F_SETFL, O_NONBLOCK) == -1)
		log_warn("%s: fcntl", __func__);

	sp->pid = r.pid;
	sp->reaper = reaper;
	sp->report_fd = rep[0];
	sp->stdin_fd = in[1];
	sp->ring = req->ring;
	sp->line_cb = req->line_cb;
	sp->eof_cb = req->eof_cb;
	sp->cb_arg = req->cb_arg;
	if (req->label != NULL)
		(void)strlcpy(sp->label, req->label, sizeof(sp->label));
	sp->out.sp = sp->err.sp = sp;
	sp->out.fd = out[0];
	sp->err.fd = er[0];
	event_set(&sp->out.ev, sp->out.fd, EV_READ | EV_PERSIST, spawn_read,
	    &sp->out);
	event_set(&sp->err.ev, sp->err.fd, EV_READ | EV_PERSIST, spawn_read,
	    &sp->err);
	if (event_add(&sp->out.ev, NULL) == -1 ||
	    event_add(&sp->err.ev, NULL) == -1)
		log_warnx("%s: event_add failed", __func__);
	return (sp->pid);

 fail:
	free(cr.groups);
	closepair(in);
	closepair(out);
	closepair(er);
	closepair(rep);
	return (-1);
}

void
spawn_signal(const struct spawn_proc *sp, int sig)
{
	if (sp->reaper <= 0)
		return;
	if (kill(sp->reaper, sig == SIGKILL ? SPAWN_SIG_KILL : SIGTERM) ==
	    -1 && errno != ESRCH)
		log_warn("%s: %s: kill %d", __func__, sp->label,
		    (int)sp->reaper);
}

int
spawn_reaped(struct spawn_proc *sp, int status)
{
	struct spawn_report	 r;
	ssize_t			 n = -1;

	if (sp->report_fd != -1) {
		do {
			n = read(sp->report_fd, &r, sizeof(r));
		} while (n == -1 && errno == EINTR);
		close(sp->report_fd);
		sp->report_fd = -1;
	}
	if (n == (ssize_t)sizeof(r) && r.kind == REPORT_EXITED)
		status = r.status;
	else
		log_warnx("%s: %s: its reaper ended without a word", __func__,
		    sp->label);
	sp->reaper = -1;
	return (status);
}

/*
 * Output capture.
 */

static void
stream_emit(struct spawn_stream *ss)
{
	struct spawn_proc	*sp = ss->sp;
	char			*line = ss->buf;
	size_t			 i, len = ss->len;

	ss->len = 0;
	if (len > 0 && line[len - 1] == '\r')
		len--;
	line[len] = '\0';
	/* Keep terminal escapes and other controls out of the log. */
	for (i = 0; i < len; i++)
		if (((unsigned char)line[i] < 0x20 && line[i] != '\t') ||
		    (unsigned char)line[i] == 0x7f)
			line[i] = '?';
	if (sp->ring != NULL)
		ring_push(sp->ring, line);
	log_info("%s: %s", sp->label, line);
	if (sp->line_cb != NULL)
		sp->line_cb(sp->cb_arg, line);
}

static void
stream_feed(struct spawn_stream *ss, const char *data, size_t n)
{
	size_t	 i;

	for (i = 0; i < n; i++) {
		if (data[i] == '\n') {
			stream_emit(ss);
			continue;
		}
		if (ss->len == SPAWN_LINE_MAX)
			stream_emit(ss);	/* cut here, go on */
		ss->buf[ss->len++] = data[i];
	}
}

/* Read what is there: 1 at EOF or on an error, 0 when it would block. */
static int
stream_drain(struct spawn_stream *ss)
{
	char	 buf[4096];
	ssize_t	 n;
	int	 i;

	/* Bounded, so one chatty child cannot hold the loop. */
	for (i = 0; i < 16; i++) {
		n = read(ss->fd, buf, sizeof(buf));
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return (0);
			log_warn("%s: %s: read", __func__, ss->sp->label);
			return (1);
		}
		if (n == 0)
			return (1);
		stream_feed(ss, buf, n);
	}
	return (0);
}

static void
stream_finish(struct spawn_stream *ss)
{
	if (ss->fd == -1)
		return;
	if (ss->len > 0)
		stream_emit(ss);
	event_del(&ss->ev);
	close(ss->fd);
	ss->fd = -1;
}

static void
spawn_read(int fd, short event, void *arg)
{
	struct spawn_stream	*ss = arg;
	struct spawn_proc	*sp = ss->sp;

	(void)fd;
	(void)event;
	if (stream_drain(ss) == 0)
		return;
	stream_finish(ss);
	if (sp->out.fd == -1 && sp->err.fd == -1 && !sp->eof_sent) {
		sp->eof_sent = 1;
		/* Last: the callback may free sp. */
		if (sp->eof_cb != NULL)
			sp->eof_cb(sp->cb_arg);
	}
}

void
spawn_close(struct spawn_proc *sp)
{
	struct spawn_stream	*ss;
	int			 i, j;

	for (i = 0; i < 2; i++) {
		ss = i == 0 ? &sp->out : &sp->err;
		if (ss->fd == -1)
			continue;
		/* What the child wrote before it went is still wanted. */
		for (j = 0; j < 64; j++)
			if (stream_drain(ss) == 1)
				break;
		stream_finish(ss);
	}
	sp->eof_sent = 1;
	if (sp->stdin_fd != -1) {
		close(sp->stdin_fd);
		sp->stdin_fd = -1;
	}
	if (sp->report_fd != -1) {
		close(sp->report_fd);
		sp->report_fd = -1;
	}
}

int
spawn_line_addr_in_use(const char *line)
{
	static const char	*needles[] = {
		"address already in use",	/* strerror(EADDRINUSE) */
		"eaddrinuse",
		"address in use",
		"couldn't bind",		/* llama-server */
		"could not bind",
		"bind failed",
		"failed to bind",
		"unable to bind",
		"port is already in use",
		"errno 98]",			/* Python */
	};
	size_t			 i;

	for (i = 0; i < sizeof(needles) / sizeof(needles[0]); i++)
		if (strcasestr(line, needles[i]) != NULL)
			return (1);
	return (0);
}

void
spawn_describe_exit(int status, char *buf, size_t len)
{
	const char	*name;
	char		 num[16];
	int		 sig;

	if (WIFEXITED(status)) {
		snprintf(buf, len, "exited with %d", WEXITSTATUS(status));
		return;
	}
	if (WIFSIGNALED(status) || WIFSTOPPED(status)) {
		sig = WIFSIGNALED(status) ? WTERMSIG(status) :
		    WSTOPSIG(status);
		if ((name = sigabbrev_np(sig)) == NULL) {
			snprintf(num, sizeof(num), "%d", sig);
			name = num;
		}
		snprintf(buf, len, "was %s by %s%s%s",
		    WIFSIGNALED(status) ? "killed" : "stopped",
		    name == num ? "signal " : "SIG", name,
		    WIFSIGNALED(status) && WCOREDUMP(status) ?
		    " (core dumped)" : "");
		return;
	}
	snprintf(buf, len, "ended with status %#x", status);
}
