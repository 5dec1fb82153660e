/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A process tree's memory from /proc, or a cgroup's.  See footprint.h.
 * Calls cgroup.c (cg_read).
 *
 * Calls: cgroup.c.
 */
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "footprint.h"

/* The kernel writes these files whole in one read of this size. */
#define FP_READ_MAX	8192
/* More KiB than any machine has (1 EiB): a malformed value. */
#define FP_KIB_MAX	(1LL << 50)

static int	kib_field(const char *, size_t, const char *, int64_t *);
struct fp_field;
static int	fields(const char *, size_t, const struct fp_field *, size_t,
		    struct fp_proc *);
static ssize_t	read_small(const char *, char *, size_t);

/*
 * The value of "NAME:   123 kB" in text, in bytes: 1 when found, 0 when
 * not there, -1 when its line is malformed.
 */
static int
kib_field(const char *text, size_t len, const char *name, int64_t *v)
{
	const char	*p = text, *end = text + len, *nl;
	size_t		 nlen = strlen(name);
	int64_t		 n;
	int		 digits;

	for (; p < end; p = nl + 1) {
		if ((nl = memchr(p, '\n', end - p)) == NULL)
			nl = end;
		if ((size_t)(nl - p) <= nlen || memcmp(p, name, nlen) != 0 ||
		    p[nlen] != ':')
			continue;
		p += nlen + 1;
		while (p < nl && (*p == ' ' || *p == '\t'))
			p++;
		for (n = 0, digits = 0; p < nl && *p >= '0' && *p <= '9';
		    p++, digits++) {
			n = n * 10 + (*p - '0');
			if (n > FP_KIB_MAX)
				return (-1);
		}
		if (digits == 0 || nl - p != 3 || memcmp(p, " kB", 3) != 0)
			return (-1);
		*v = n * 1024;
		return (1);
	}
	return (0);
}

/* The fields of table (name, where in struct fp_proc, needed). */
struct fp_field {
	const char	*name;
	size_t		 off;
	int		 needed;
};

static int
fields(const char *text, size_t len, const struct fp_field *f, size_t n,
    struct fp_proc *p)
{
	int64_t		 v;
	size_t		 i;
	int		 r;

	for (i = 0; i < n; i++) {
		v = 0;
		if ((r = kib_field(text, len, f[i].name, &v)) == -1 ||
		    (r == 0 && f[i].needed))
			return (-1);
		*(int64_t *)(void *)((char *)p + f[i].off) = v;
	}
	return (0);
}

int
fp_parse_status(const char *text, size_t len, struct fp_proc *p)
{
	static const struct fp_field	 f[] = {
		{ "VmRSS", offsetof(struct fp_proc, rss), 1 },
		{ "VmHWM", offsetof(struct fp_proc, hwm), 1 },
		{ "RssAnon", offsetof(struct fp_proc, anon), 0 },
		{ "VmSwap", offsetof(struct fp_proc, swap), 0 },
	};

	return (fields(text, len, f, sizeof(f) / sizeof(f[0]), p));
}

int
fp_parse_rollup(const char *text, size_t len, struct fp_proc *p)
{
	static const struct fp_field	 f[] = {
		{ "Rss", offsetof(struct fp_proc, rss), 1 },
		{ "Pss", offsetof(struct fp_proc, pss), 1 },
	};

	return (fields(text, len, f, sizeof(f) / sizeof(f[0]), p));
}

int
fp_parse_children(const char *text, size_t len, pid_t *pids, size_t max,
    size_t *n)
{
	const char	*p = text, *end = text + len;
	long long	 v;
	int		 seen = 0, digits;

	for (;;) {
		while (p < end && (*p == ' ' || *p == '\n'))
			p++;
		if (p == end)
			return (seen);
		for (v = 0, digits = 0; p < end && *p >= '0' && *p <= '9';
		    p++, digits++) {
			v = v * 10 + (*p - '0');
			if (v > INT_MAX)
				return (-1);
		}
		if (digits == 0 || v == 0 || (p < end && *p != ' ' &&
		    *p != '\n'))
			return (-1);
		seen++;
		if (*n < max)
			pids[(*n)++] = (pid_t)v;
	}
}

/* A /proc file whole (they are small): bytes read, or -1. */
static ssize_t
read_small(const char *path, char *buf, size_t size)
{
	ssize_t	 n, got = 0;
	int	 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	while ((size_t)got < size && (n = read(fd, buf + got,
	    size - got)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			close(fd);
			return (-1);
		}
		got += n;
	}
	close(fd);
	return (got);
}

int
fp_tree(pid_t root, pid_t *pids, size_t max)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[64 + NAME_MAX], buf[FP_READ_MAX];
	size_t		 n = 0, i;
	ssize_t		 got;
	int		 seen, total = 1;

	if (max == 0)
		return (-1);
	(void)snprintf(path, sizeof(path), "/proc/%d/task", (int)root);
	if (access(path, F_OK) == -1)
		return (-1);
	pids[n++] = root;
	/* Breadth first: pids[i] is each one found, its children after. */
	for (i = 0; i < n; i++) {
		(void)snprintf(path, sizeof(path), "/proc/%d/task",
		    (int)pids[i]);
		if ((d = opendir(path)) == NULL)
			continue;	/* gone since */
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			(void)snprintf(path, sizeof(path),
			    "/proc/%d/task/%s/children", (int)pids[i],
			    de->d_name);
			if ((got = read_small(path, buf, sizeof(buf))) <= 0)
				continue;
			if ((seen = fp_parse_children(buf, got, pids, max,
			    &n)) > 0)
				total += seen;
		}
		closedir(d);
	}
	return (total);
}

int
fp_proc_read(pid_t pid, struct fp_proc *p, int pss)
{
	char	 path[64], buf[FP_READ_MAX];
	ssize_t	 got;

	memset(p, 0, sizeof(*p));
	(void)snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if ((got = read_small(path, buf, sizeof(buf))) <= 0 ||
	    fp_parse_status(buf, got, p) == -1)
		return (-1);
	if (!pss)
		return (0);
	(void)snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	if ((got = read_small(path, buf, sizeof(buf))) <= 0 ||
	    fp_parse_rollup(buf, got, p) == -1)
		return (-1);
	return (0);
}

int
fp_sample_pids(const pid_t *pids, size_t n, struct fp_sample *s, int pss)
{
	struct fp_proc	 p;
	size_t		 i;

	memset(s, 0, sizeof(*s));
	for (i = 0; i < n; i++) {
		if (fp_proc_read(pids[i], &p, pss) == -1)
			continue;
		s->rss += p.rss;
		s->pss += p.pss;
		s->swap += p.swap;
		s->hwm += p.hwm >= p.rss ? p.hwm : p.rss;
		s->procs++;
	}
	return (s->procs > 0 ? 0 : -1);
}

int
fp_sample_tree(pid_t root, struct fp_sample *s, int pss)
{
	pid_t	 pids[FP_TREE_MAX];
	int	 n;

	memset(s, 0, sizeof(*s));
	if ((n = fp_tree(root, pids, FP_TREE_MAX)) == -1)
		return (-1);
	if (fp_sample_pids(pids, n < FP_TREE_MAX ? (size_t)n : FP_TREE_MAX,
	    s, pss) == -1)
		return (-1);
	s->truncated = n > FP_TREE_MAX;
	return (0);
}

int
fp_measure(const struct cg *cg, pid_t root, struct fp_sample *s)
{
	struct cg_stats	 st;

	if (cg == NULL)
		return (fp_sample_tree(root, s, 0));
	memset(s, 0, sizeof(*s));
	if (cg_read(cg, &st) == -1)
		return (-1);
	s->rss = st.usage;
	s->hwm = st.peak > st.usage ? st.peak : st.usage;
	/* A cgroup is one whole, as a single process is: its peak is
	 * known, not bounded. */
	s->procs = 1;
	return (0);
}

void
fp_peak_add(struct fp_peak *pk, const struct fp_sample *s)
{
	int64_t	 known = s->rss;

	/* One process: its VmHWM is its peak, between samples too. */
	if (s->procs == 1 && s->hwm > known)
		known = s->hwm;
	if (known > pk->peak)
		pk->peak = known;
	if (s->hwm > pk->bound)
		pk->bound = s->hwm;
	if (pk->bound < pk->peak)
		pk->bound = pk->peak;
	pk->last = s->rss;
	pk->samples++;
}
