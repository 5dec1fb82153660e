/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A cgroup for each model.  See cgroup.h.  Calls memory.c (mem_fmt)
 * and common/sha256.c (a long model name's hash).
 *
 * Calls: memory.c, common/log.c, common/sha256.c.
 */
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "log.h"
#include "memory.h"
#include "sha256.h"

/* v1 writes "no limit" as a page-rounded LLONG_MAX: anything this big. */
#define CG_V1_UNLIMITED		(1LL << 62)
#define CG_FILE_MAX		65536	/* cgroup.procs of a big tree */
#define CG_NAME_KEEP		150	/* a long name's part kept */
#define CG_KILL_ROUNDS		16	/* v1: passes over cgroup.procs */
#define CG_KILL_KEEP		1024	/* pids a kill remembers */

/* Say why in err, and fail. */
#define bad(err, errlen, ...)	(snprintf(err, errlen, __VA_ARGS__), -1)

static ssize_t	cg_readf(const char *, const char *, char *, size_t);
static int	cg_writef(const char *, const char *, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));
static int	has_word(const char *, const char *);
static int	member(pid_t, const struct cg *);

/* dir/name's text, NUL-terminated: bytes read, or -1 with errno. */
static ssize_t
cg_readf(const char *dir, const char *name, char *buf, size_t size)
{
	char	 path[PATH_MAX];
	ssize_t	 n, got = 0;
	int	 fd, saved;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path)) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	while ((size_t)got < size - 1 && (n = read(fd, buf + got,
	    size - 1 - got)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			saved = errno;
			close(fd);
			errno = saved;
			return (-1);
		}
		got += n;
	}
	close(fd);
	buf[got] = '\0';
	return (got);
}

/* Write dir/name whole, in one write (cgroupfs takes one at a time). */
static int
cg_writef(const char *dir, const char *name, const char *fmt, ...)
{
	char	 path[PATH_MAX], buf[64];
	va_list	 ap;
	int	 fd, len, saved;

	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (len < 0 || (size_t)len >= sizeof(buf) ||
	    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path)) {
		errno = ENAMETOOLONG;
		return (-1);
	}
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0644)) == -1)
		return (-1);
	if (write(fd, buf, len) != len) {
		saved = errno;
		close(fd);
		errno = saved != 0 ? saved : EIO;
		return (-1);
	}
	return (close(fd));
}

/* Whether a blank-separated list holds word. */
static int
has_word(const char *list, const char *word)
{
	const char	*p = list;
	size_t		 n = strlen(word);

	while ((p = strstr(p, word)) != NULL) {
		if ((p == list || p[-1] == ' ' || p[-1] == '\n' ||
		    p[-1] == '+') && (p[n] == '\0' || p[n] == ' ' ||
		    p[n] == '\n'))
			return (1);
		p += n;
	}
	return (0);
}

int
cg_parse_self(const char *text, size_t len, char *v2, size_t v2len,
    char *v1, size_t v1len)
{
	const char	*p = text, *end = text + len, *nl, *c1, *c2, *w;
	size_t		 plen;
	int		 mem;

	v2[0] = v1[0] = '\0';
	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			nl = end;
		if (nl == p)
			continue;
		/* ID:CONTROLLERS:PATH; PATH may hold ':' */
		if ((c1 = memchr(p, ':', nl - p)) == NULL ||
		    (c2 = memchr(c1 + 1, ':', nl - c1 - 1)) == NULL ||
		    c1 == p || c2[1] != '/')
			return (-1);
		for (w = p; w < c1; w++)
			if (*w < '0' || *w > '9')
				return (-1);
		plen = nl - c2 - 1;
		if (memmem(c2 + 1, plen, "/..", 3) != NULL ||
		    memchr(c2 + 1, '\0', plen) != NULL)
			return (-1);
		if (c1 - p == 1 && p[0] == '0' && c2 == c1 + 1) {
			if (plen >= v2len)
				return (-1);
			memcpy(v2, c2 + 1, plen);
			v2[plen] = '\0';
			continue;
		}
		/* "memory" among the controllers, comma-separated */
		mem = 0;
		for (w = c1 + 1; w < c2; ) {
			const char	*e = memchr(w, ',', c2 - w);

			if (e == NULL)
				e = c2;
			if (e - w == 6 && memcmp(w, "memory", 6) == 0)
				mem = 1;
			w = e + 1;
		}
		if (mem) {
			if (plen >= v1len)
				return (-1);
			memcpy(v1, c2 + 1, plen);
			v1[plen] = '\0';
		}
	}
	return (0);
}

int
cg_parse_value(const char *text, size_t len, int64_t *v)
{
	int64_t	 n = 0;
	size_t	 i = 0;

	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == ' '))
		len--;
	if (len == 3 && memcmp(text, "max", 3) == 0) {
		*v = -1;
		return (0);
	}
	if (len == 0)
		return (-1);
	for (; i < len; i++) {
		if (text[i] < '0' || text[i] > '9' ||
		    n > (INT64_MAX - 9) / 10)
			return (-1);
		n = n * 10 + (text[i] - '0');
	}
	*v = n;
	return (0);
}

int
cg_parse_keyed(const char *text, size_t len, const char *key, int64_t *v)
{
	const char	*p = text, *end = text + len, *nl;
	size_t		 klen = strlen(key);

	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			nl = end;
		if ((size_t)(nl - p) > klen + 1 && memcmp(p, key, klen) == 0 &&
		    p[klen] == ' ')
			return (cg_parse_value(p + klen + 1, nl - p - klen - 1,
			    v) == 0 ? 1 : -1);
	}
	return (0);
}

int
cg_find(const char *proc_cgroup, const char *v2root, const char *v1root,
    const char *instance, struct cg_base *b, char *err, size_t errlen)
{
	char		 text[4096], v2[PATH_MAX], v1[PATH_MAX], buf[4096];
	char		 why2[PATH_MAX + 64];
	size_t		 i, n;
	ssize_t		 got;
	int		 fd;

	memset(b, 0, sizeof(*b));
	if ((n = strlen(instance)) == 0 || n >= sizeof(b->instance))
		return (bad(err, errlen, "instance \"%s\": 1 to %zu bytes",
		    instance, sizeof(b->instance) - 1));
	for (i = 0; i < n; i++)
		if (!((instance[i] >= 'a' && instance[i] <= 'z') ||
		    (instance[i] >= 'A' && instance[i] <= 'Z') ||
		    (instance[i] >= '0' && instance[i] <= '9') ||
		    instance[i] == '_' || instance[i] == '-'))
			return (bad(err, errlen, "instance \"%s\": letters, "
			    "digits, '_' and '-' only", instance));
	(void)strlcpy(b->instance, instance, sizeof(b->instance));

	if ((fd = open(proc_cgroup, O_RDONLY | O_CLOEXEC)) == -1)
		return (bad(err, errlen, "%s: %s", proc_cgroup,
		    strerror(errno)));
	got = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (got <= 0 || cg_parse_self(text, got, v2, sizeof(v2), v1,
	    sizeof(v1)) == -1)
		return (bad(err, errlen, "%s: not what the kernel writes",
		    proc_cgroup));

	strlcpy(why2, "no cgroup v2", sizeof(why2));
	if (v2root != NULL && v2[0] != '\0') {
		/* agencyd's own leaf, from a start before: its parent. */
		n = strlen(v2);
		if (n > strlen(CG_SUPERVISOR) + 1 && strcmp(v2 + n -
		    strlen(CG_SUPERVISOR), CG_SUPERVISOR) == 0 &&
		    v2[n - strlen(CG_SUPERVISOR) - 1] == '/')
			v2[n - strlen(CG_SUPERVISOR) - 1] = '\0';
		if ((size_t)snprintf(b->dir, sizeof(b->dir), "%s%s", v2root,
		    strcmp(v2, "/") == 0 ? "" : v2) >= sizeof(b->dir))
			return (bad(err, errlen, "cgroup path too long"));
		if (cg_readf(b->dir, "cgroup.controllers", buf,
		    sizeof(buf)) != -1 && has_word(buf, "memory")) {
			b->version = CG_V2;
			return (0);
		}
		snprintf(why2, sizeof(why2), "cgroup v2 %s has no memory "
		    "controller", b->dir);
	}
	if (v1root != NULL && v1[0] != '\0') {
		if ((size_t)snprintf(b->dir, sizeof(b->dir), "%s%s", v1root,
		    strcmp(v1, "/") == 0 ? "" : v1) >= sizeof(b->dir))
			return (bad(err, errlen, "cgroup path too long"));
		if (cg_readf(b->dir, "memory.limit_in_bytes", buf,
		    sizeof(buf)) != -1) {
			b->version = CG_V1;
			return (0);
		}
		return (bad(err, errlen, "%s; cgroup v1 %s: %s", why2, b->dir,
		    strerror(errno)));
	}
	b->dir[0] = '\0';
	if (v1root == NULL)
		return (bad(err, errlen, "%s", why2));
	return (bad(err, errlen, "%s, and no cgroup v1 memory hierarchy",
	    why2));
}

int
cg_prepare(const struct cg_base *b, char *err, size_t errlen)
{
	char	 buf[CG_FILE_MAX], leaf[PATH_MAX], *p, *e;
	long	 pid;

	if (b->version != CG_V2)
		return (0);
	if (cg_readf(b->dir, "cgroup.subtree_control", buf, sizeof(buf)) !=
	    -1 && has_word(buf, "memory"))
		return (0);
	/* No controller for children while processes are here. */
	if (cg_readf(b->dir, "cgroup.procs", buf, sizeof(buf)) == -1)
		return (bad(err, errlen, "%s/cgroup.procs: %s", b->dir,
		    strerror(errno)));
	if (buf[strspn(buf, " \n")] != '\0') {
		if ((size_t)snprintf(leaf, sizeof(leaf), "%s/%s", b->dir,
		    CG_SUPERVISOR) >= sizeof(leaf))
			return (bad(err, errlen, "cgroup path too long"));
		if (mkdir(leaf, 0755) == -1 && errno != EEXIST)
			return (bad(err, errlen, "%s: %s", leaf,
			    strerror(errno)));
		for (p = buf; *p != '\0'; p = e) {
			pid = strtol(p, &e, 10);
			if (e == p)
				break;
			/* One that has gone since is no matter. */
			if (pid > 0 && cg_writef(leaf, "cgroup.procs", "%ld",
			    pid) == -1 && errno != ESRCH)
				return (bad(err, errlen, "moving %ld to %s: %s",
				    pid, leaf, strerror(errno)));
		}
	}
	if (cg_writef(b->dir, "cgroup.subtree_control", "+memory") == -1)
		return (bad(err, errlen, "%s/cgroup.subtree_control: +memory: "
		    "%s", b->dir, strerror(errno)));
	return (0);
}

int
cg_name(const struct cg_base *b, const char *model, char *buf, size_t size)
{
	static const char	 hex[] = "0123456789abcdef";
	uint8_t			 d[SHA256_LEN];
	char			 esc[3 * 256 + 1];
	size_t			 i, n = 0;
	int			 r;

	for (i = 0; model[i] != '\0' && n < sizeof(esc) - 4; i++) {
		unsigned char	 c = model[i];

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		    (c >= '0' && c <= '9') || c == '.' || c == '_' ||
		    c == '-')
			esc[n++] = c;
		else {
			esc[n++] = '%';
			esc[n++] = hex[c >> 4];
			esc[n++] = hex[c & 15];
		}
	}
	esc[n] = '\0';
	if (model[0] == '\0' || model[i] != '\0')
		return (-1);
	if (n > CG_NAME_KEEP) {
		/* Too long for a name: a part of it, and a hash of it all. */
		sha256(model, strlen(model), d);
		esc[CG_NAME_KEEP] = '~';
		for (i = 0; i < 8; i++) {
			esc[CG_NAME_KEEP + 1 + 2 * i] = hex[d[i] >> 4];
			esc[CG_NAME_KEEP + 2 + 2 * i] = hex[d[i] & 15];
		}
		esc[CG_NAME_KEEP + 17] = '\0';
	}
	r = snprintf(buf, size, CG_PREFIX "%s.%s", b->instance, esc);
	return (r < 0 || (size_t)r >= size ? -1 : 0);
}

int
cg_create(const struct cg_base *b, const char *model, struct cg *cg,
    char *err, size_t errlen)
{
	char	 name[NAME_MAX + 1];

	memset(cg, 0, sizeof(*cg));
	if (cg_name(b, model, name, sizeof(name)) == -1)
		return (bad(err, errlen, "model \"%.64s\": no cgroup name",
		    model));
	cg->version = b->version;
	if ((size_t)snprintf(cg->dir, sizeof(cg->dir), "%s/%s", b->dir,
	    name) >= sizeof(cg->dir))
		return (bad(err, errlen, "cgroup path too long"));
	if (mkdir(cg->dir, 0755) == -1 && errno != EEXIST)
		return (bad(err, errlen, "%s: %s", cg->dir, strerror(errno)));
	return (0);
}

int
cg_attach(const struct cg *cg, pid_t pid)
{
	if (cg_writef(cg->dir, "cgroup.procs", "%d", (int)pid) == -1) {
		log_warn("%s: %s: %d", __func__, cg->dir, (int)pid);
		return (-1);
	}
	return (0);
}

int
cg_procs_path(const struct cg *cg, char *buf, size_t size)
{
	int	 r;

	r = snprintf(buf, size, "%s/cgroup.procs", cg->dir);
	return (r < 0 || (size_t)r >= size ? -1 : 0);
}

int
cg_set_limit(const struct cg *cg, int64_t bytes)
{
	int	 r;

	if (cg->version == CG_V2) {
		if (bytes > 0)
			r = cg_writef(cg->dir, "memory.max", "%lld",
			    (long long)bytes);
		else
			r = cg_writef(cg->dir, "memory.max", "max");
		/* At its limit it is killed, not pushed to swap (where the
		 * kernel accounts swap). */
		if (r == 0)
			(void)cg_writef(cg->dir, "memory.swap.max", "%s",
			    bytes > 0 ? "0" : "max");
	} else {
		/* memory+swap may never be below memory: lift it first. */
		(void)cg_writef(cg->dir, "memory.memsw.limit_in_bytes", "-1");
		r = cg_writef(cg->dir, "memory.limit_in_bytes", "%lld",
		    bytes > 0 ? (long long)bytes : -1LL);
		if (r == 0 && bytes > 0)
			(void)cg_writef(cg->dir, "memory.memsw.limit_in_bytes",
			    "%lld", (long long)bytes);
	}
	if (r == -1)
		log_warn("%s: %s", __func__, cg->dir);
	return (r);
}

int
cg_read(const struct cg *cg, struct cg_stats *st)
{
	char		 buf[4096];
	const char	*cur, *peak, *max, *ev;
	ssize_t		 n;

	st->usage = st->peak = st->limit = st->oom_kills = st->limited = -1;
	if (cg->version == CG_V2) {
		cur = "memory.current";
		peak = "memory.peak";
		max = "memory.max";
		ev = "memory.events";
	} else {
		cur = "memory.usage_in_bytes";
		peak = "memory.max_usage_in_bytes";
		max = "memory.limit_in_bytes";
		ev = "memory.oom_control";
	}
	if ((n = cg_readf(cg->dir, cur, buf, sizeof(buf))) == -1 ||
	    cg_parse_value(buf, n, &st->usage) == -1) {
		log_warnx("%s: %s/%s unreadable", __func__, cg->dir, cur);
		return (-1);
	}
	/* Those an older kernel lacks stay -1. */
	if ((n = cg_readf(cg->dir, peak, buf, sizeof(buf))) != -1)
		(void)cg_parse_value(buf, n, &st->peak);
	if ((n = cg_readf(cg->dir, max, buf, sizeof(buf))) != -1 &&
	    cg_parse_value(buf, n, &st->limit) == 0 &&
	    st->limit >= CG_V1_UNLIMITED)
		st->limit = -1;
	if ((n = cg_readf(cg->dir, ev, buf, sizeof(buf))) != -1) {
		(void)cg_parse_keyed(buf, n, "oom_kill", &st->oom_kills);
		if (cg->version == CG_V2)
			(void)cg_parse_keyed(buf, n, "max", &st->limited);
	}
	if (cg->version == CG_V1 && (n = cg_readf(cg->dir, "memory.failcnt",
	    buf, sizeof(buf))) != -1)
		(void)cg_parse_value(buf, n, &st->limited);
	return (0);
}

void
cg_oom_reason(const struct cg_stats *st, char *buf, size_t size)
{
	char	 lim[MEM_FMT_LEN];

	if (st->limit > 0) {
		mem_fmt(lim, sizeof(lim), st->limit);
		snprintf(buf, size, "out of memory at its limit of %s", lim);
	} else
		snprintf(buf, size, "out of memory in its cgroup");
}

/* Whether pid is in cg now (its /proc/PID/cgroup names cg's path). */
static int
member(pid_t pid, const struct cg *cg)
{
	char	 path[64], text[4096], v2[PATH_MAX], v1[PATH_MAX];
	size_t	 n, m;
	ssize_t	 got;
	int	 fd;
	const char *mine;

	(void)snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (0);
	got = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (got <= 0 || cg_parse_self(text, got, v2, sizeof(v2), v1,
	    sizeof(v1)) == -1)
		return (0);
	mine = cg->version == CG_V2 ? v2 : v1;
	/* The path as /proc writes it ends cg's directory. */
	n = strlen(cg->dir);
	m = strlen(mine);
	return (m > 1 && m <= n && strcmp(cg->dir + n - m, mine) == 0);
}

int
cg_kill(const struct cg *cg)
{
	char	 buf[CG_FILE_MAX], path[PATH_MAX], *p, *e;
	pid_t	 done[CG_KILL_KEEP];
	long	 pid;
	int	 round, n = 0, found, pidfd, i, ndone = 0;

	if (cg->version == CG_V2 && (size_t)snprintf(path, sizeof(path),
	    "%s/cgroup.kill", cg->dir) < sizeof(path) &&
	    access(path, F_OK) == 0) {
		if (cg_readf(cg->dir, "cgroup.procs", buf, sizeof(buf)) != -1)
			for (p = buf; (pid = strtol(p, &e, 10)) > 0; p = e)
				n++;
		if (cg_writef(cg->dir, "cgroup.kill", "1") == -1) {
			log_warn("%s: %s", __func__, path);
			return (-1);
		}
		return (n);
	}
	/*
	 * Each pid, again while new ones come (they fork): a pidfd pins the
	 * one whose membership is checked.  Those killed stay listed until
	 * they are reaped; they are not counted twice.
	 */
	for (round = 0; round < CG_KILL_ROUNDS; round++) {
		if (cg_readf(cg->dir, "cgroup.procs", buf, sizeof(buf)) ==
		    -1) {
			log_warn("%s: %s/cgroup.procs", __func__, cg->dir);
			return (-1);
		}
		found = 0;
		for (p = buf; (pid = strtol(p, &e, 10)) > 0; p = e) {
			for (i = 0; i < ndone && done[i] != (pid_t)pid; i++)
				;
			if (i < ndone)
				continue;
			if ((pidfd = syscall(SYS_pidfd_open, (pid_t)pid,
			    0)) == -1)
				continue;	/* gone */
			if (member((pid_t)pid, cg) && syscall(
			    SYS_pidfd_send_signal, pidfd, SIGKILL, NULL,
			    0) == 0) {
				found++;
				n++;
				if (ndone < CG_KILL_KEEP)
					done[ndone++] = (pid_t)pid;
			}
			close(pidfd);
		}
		if (found == 0)
			break;
	}
	return (n);
}

int
cg_empty(const struct cg *cg)
{
	char	 buf[CG_FILE_MAX];

	if (cg_readf(cg->dir, "cgroup.procs", buf, sizeof(buf)) == -1)
		return (-1);
	return (buf[strspn(buf, " \n")] == '\0');
}

int
cg_remove(const struct cg *cg)
{
	if (rmdir(cg->dir) == -1) {
		if (errno != EBUSY)
			log_warn("%s: %s", __func__, cg->dir);
		return (-1);
	}
	return (0);
}

int
cg_sweep(const struct cg_base *b, int wait_ms)
{
	DIR			*d;
	struct dirent		*de;
	struct cg		*left = NULL, *nl;
	struct timespec		 ts = { 0, 10 * 1000 * 1000 };
	char			 prefix[sizeof(CG_PREFIX) + CG_INSTANCE_MAX];
	size_t			 nleft = 0, i, plen;
	int			 waited = 0, removed = 0, ret = 0;

	plen = (size_t)snprintf(prefix, sizeof(prefix), CG_PREFIX "%s.",
	    b->instance);
	if ((d = opendir(b->dir)) == NULL) {
		log_warn("%s: %s", __func__, b->dir);
		return (-1);
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, prefix, plen) != 0 ||
		    de->d_type != DT_DIR)
			continue;
		if ((nl = reallocarray(left, nleft + 1,
		    sizeof(*left))) == NULL) {
			log_warn("%s", __func__);
			ret = -1;
			break;
		}
		left = nl;
		left[nleft].version = b->version;
		if ((size_t)snprintf(left[nleft].dir, sizeof(left[nleft].dir),
		    "%s/%s", b->dir, de->d_name) >= sizeof(left[nleft].dir))
			continue;
		log_info("sweeping %s, left by an agencyd before",
		    left[nleft].dir);
		(void)cg_kill(&left[nleft]);
		nleft++;
	}
	closedir(d);
	/* The killed take a moment to go: at start-up, before the loop. */
	for (i = 0; i < nleft; ) {
		if (cg_remove(&left[i]) == 0) {
			removed++;
			left[i] = left[--nleft];
			continue;
		}
		if (errno != EBUSY || waited >= wait_ms) {
			log_warnx("%s: %s could not be removed", __func__,
			    left[i].dir);
			ret = -1;
			i++;
			continue;
		}
		(void)nanosleep(&ts, NULL);
		waited += 10;
	}
	free(left);
	return (ret == -1 ? -1 : removed);
}
