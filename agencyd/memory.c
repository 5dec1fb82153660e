/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Memory measurements: /proc/meminfo, the cgroup limits (v2 and v1), the
 * default reserve and a model's need.  See memory.h.  It calls no other
 * file of agencyd.
 *
 * Calls: common/log.c.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "memory.h"

/* v1 reports "no limit" as a page-rounded LLONG_MAX; anything this big. */
#define MEM_V1_UNLIMITED	(1LL << 62)

/* How deep mem_disk_size() descends; a model tree is never this deep. */
#define MEM_MAX_DEPTH		32

static int	parse_i64(const char *, int64_t *);
static int	read_value(const char *, int, int64_t *);
static int	cgroup_walk(int, const char *, const char *, const char *,
		    const char *, int64_t *);
static int64_t	dir_size(int, int);
static int64_t	disk_size(const char *, int *);
static const char *env_get(char *const *, const char *);
static int	hub_path(char *const *, char *, size_t);
static int64_t	hf_cache_size(const char *, char *const *);

int
mem_read_meminfo(const char *path, int64_t *available, int64_t *total)
{
	FILE		*fp;
	char		*line = NULL, *p;
	size_t		 linesz = 0;
	int64_t		 v, *dst;
	int		 have_avail = 0, have_total = 0;
	const char	*errstr;

	if ((fp = fopen(path, "r")) == NULL) {
		log_warn("%s: %s", __func__, path);
		return (-1);
	}
	while (getline(&line, &linesz, fp) != -1) {
		if (strncmp(line, "MemAvailable:", 13) == 0) {
			dst = available;
			p = line + 13;
			have_avail = 1;
		} else if (strncmp(line, "MemTotal:", 9) == 0) {
			dst = total;
			p = line + 9;
			have_total = 1;
		} else
			continue;
		p += strspn(p, " \t");
		p[strcspn(p, " \t\n")] = '\0';
		v = strtonum(p, 0, LLONG_MAX / 1024, &errstr);
		if (errstr != NULL) {
			log_warnx("%s: %s: value \"%s\" is %s", __func__,
			    path, p, errstr);
			goto bad;
		}
		/* The kernel writes "kB" and means KiB. */
		*dst = v * 1024;
	}
	if (ferror(fp)) {
		log_warn("%s: %s", __func__, path);
		goto bad;
	}
	if (!have_avail || !have_total) {
		log_warnx("%s: %s: no %s", __func__, path,
		    have_avail ? "MemTotal" : "MemAvailable");
		goto bad;
	}
	free(line);
	fclose(fp);
	return (0);
 bad:
	free(line);
	fclose(fp);
	return (-1);
}

static int
parse_i64(const char *s, int64_t *v)
{
	const char	*errstr;

	*v = strtonum(s, 0, LLONG_MAX, &errstr);
	return (errstr == NULL ? 0 : -1);
}

/*
 * One number from a cgroup file.  Returns 0 with *v set, 1 when the file
 * does not exist or (with maxok) says "max", -1 when it is malformed.
 */
static int
read_value(const char *path, int maxok, int64_t *v)
{
	char	 buf[64];
	ssize_t	 n;
	int	 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return (1);
		log_warn("%s: %s", __func__, path);
		return (-1);
	}
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n == -1) {
		log_warn("%s: %s", __func__, path);
		return (-1);
	}
	buf[n] = '\0';
	if (n > 0 && buf[n - 1] == '\n')
		buf[--n] = '\0';
	if (maxok && strcmp(buf, "max") == 0)
		return (1);
	if (parse_i64(buf, v) == -1) {
		log_warnx("%s: %s: not a number: \"%s\"", __func__, path, buf);
		return (-1);
	}
	return (0);
}

/*
 * Walk from root/cgpath up to root, lowering *room to each level's
 * limit minus usage.  Returns 0 when some level has a limit, 1 when
 * none has, -1 on error.
 */
static int
cgroup_walk(int v2, const char *root, const char *cgpath, const char *limitf,
    const char *usagef, int64_t *room)
{
	char	 dir[PATH_MAX], path[PATH_MAX], *slash;
	int64_t	 limit, usage, r;
	int	 found = 0, ret;

	if (cgpath[0] != '/') {
		log_warnx("%s: cgroup path \"%s\" is not absolute",
		    __func__, cgpath);
		return (-1);
	}
	if (strstr(cgpath, "/..") != NULL) {
		log_warnx("%s: cgroup path \"%s\" has \"..\"", __func__,
		    cgpath);
		return (-1);
	}
	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", root,
	    strcmp(cgpath, "/") == 0 ? "" : cgpath) >= sizeof(dir)) {
		log_warnx("%s: cgroup path too long", __func__);
		return (-1);
	}
	for (;;) {
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir,
		    limitf) >= sizeof(path)) {
			log_warnx("%s: cgroup path too long", __func__);
			return (-1);
		}
		if ((ret = read_value(path, v2, &limit)) == -1)
			return (-1);
		if (ret == 0 && !v2 && limit >= MEM_V1_UNLIMITED)
			ret = 1;
		if (ret == 0) {
			if ((size_t)snprintf(path, sizeof(path), "%s/%s",
			    dir, usagef) >= sizeof(path))
				return (-1);
			if ((ret = read_value(path, 0, &usage)) == -1)
				return (-1);
			if (ret == 1)
				usage = 0;	/* a limit but no usage file */
			r = limit > usage ? limit - usage : 0;
			if (!found || r < *room)
				*room = r;
			found = 1;
		}
		/* Stop after the mount's root. */
		if (strlen(dir) <= strlen(root))
			break;
		if ((slash = strrchr(dir, '/')) == NULL)
			break;
		*slash = '\0';
	}
	return (found ? 0 : 1);
}

int
mem_cgroup_room(const char *proc_cgroup, const char *v2root,
    const char *v1root, int64_t *room)
{
	FILE	*fp;
	char	*line = NULL, *hid, *ctls, *path, *c, *ctl;
	size_t	 linesz = 0;
	int64_t	 r, best = 0;
	int	 found = 0, ret, lines = 0;

	if ((fp = fopen(proc_cgroup, "r")) == NULL) {
		log_warn("%s: %s", __func__, proc_cgroup);
		return (-1);
	}
	while (getline(&line, &linesz, fp) != -1) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '\0')
			continue;
		lines++;
		/* hierarchy-ID:controller-list:cgroup-path */
		hid = line;
		if ((ctls = strchr(hid, ':')) == NULL)
			goto malformed;
		*ctls++ = '\0';
		if ((path = strchr(ctls, ':')) == NULL)
			goto malformed;
		*path++ = '\0';
		if (parse_i64(hid, &r) == -1)
			goto malformed;

		ret = 1;
		if (r == 0 && ctls[0] == '\0') {
			if (v2root == NULL)
				continue;
			ret = cgroup_walk(1, v2root, path, "memory.max",
			    "memory.current", &r);
		} else {
			if (v1root == NULL)
				continue;
			c = ctls;
			while ((ctl = strsep(&c, ",")) != NULL)
				if (strcmp(ctl, "memory") == 0)
					break;
			if (ctl == NULL)
				continue;
			ret = cgroup_walk(0, v1root, path,
			    "memory.limit_in_bytes", "memory.usage_in_bytes",
			    &r);
		}
		switch (ret) {
		case 0:
			if (!found || r < best)
				best = r;
			found = 1;
			break;
		case 1:
			break;
		default:
			goto bad;
		}
	}
	if (ferror(fp)) {
		log_warn("%s: %s", __func__, proc_cgroup);
		goto bad;
	}
	if (lines == 0) {
		log_warnx("%s: %s: empty", __func__, proc_cgroup);
		goto bad;
	}
	free(line);
	fclose(fp);
	if (!found)
		return (1);
	*room = best;
	return (0);

 malformed:
	log_warnx("%s: %s: malformed line", __func__, proc_cgroup);
 bad:
	free(line);
	fclose(fp);
	return (-1);
}

int
mem_snapshot(struct mem_snapshot *ms)
{
	const char	*v2root = MEM_CGROUP_V2_ROOT;
	int64_t		 avail, total, room;

	if (mem_read_meminfo(MEM_PROC_MEMINFO, &avail, &total) == -1)
		return (-1);
	/* A hybrid host mounts v2 at unified/ and v1 controllers beside. */
	if (access(MEM_CGROUP_V2_ROOT "/cgroup.controllers", F_OK) == -1 &&
	    access(MEM_CGROUP_V2_HYBRID "/cgroup.controllers", F_OK) == 0)
		v2root = MEM_CGROUP_V2_HYBRID;
	switch (mem_cgroup_room(MEM_PROC_CGROUP, v2root, MEM_CGROUP_V1_ROOT,
	    &room)) {
	case 0:
		if (room < avail)
			avail = room;
		break;
	case 1:
		break;
	default:
		log_warnx("%s: cgroup limit unknown, using MemAvailable",
		    __func__);
		break;
	}
	ms->available = avail;
	ms->total = total;
	return (0);
}

int64_t
mem_reserve_default(int64_t total)
{
	int64_t	 r;

	if (total <= 0)
		return (MEM_RESERVE_MAX);
	r = total / 20;
	return (r < MEM_RESERVE_MAX ? r : MEM_RESERVE_MAX);
}

int64_t
mem_add(int64_t a, int64_t b)
{
	if (a < 0)
		a = 0;
	if (b < 0)
		b = 0;
	return (a > INT64_MAX - b ? INT64_MAX : a + b);
}

/* The regular files under an open directory; closes dfd. */
static int64_t
dir_size(int dfd, int depth)
{
	DIR		*d;
	struct dirent	*de;
	struct stat	 lst, st;
	int64_t		 sum = 0;
	int		 fd;

	if ((d = fdopendir(dfd)) == NULL) {
		log_warn("%s: fdopendir", __func__);
		close(dfd);
		return (0);
	}
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd(d), de->d_name, &lst,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (S_ISLNK(lst.st_mode)) {
			/* Hugging Face snapshots link to blobs: follow. */
			if (fstatat(dirfd(d), de->d_name, &st, 0) == -1)
				continue;
			if (S_ISREG(st.st_mode))
				sum = mem_add(sum, st.st_size);
			continue;
		}
		if (S_ISREG(lst.st_mode)) {
			sum = mem_add(sum, lst.st_size);
			continue;
		}
		if (!S_ISDIR(lst.st_mode) || depth >= MEM_MAX_DEPTH)
			continue;
		if ((fd = openat(dirfd(d), de->d_name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) == -1)
			continue;
		sum = mem_add(sum, dir_size(fd, depth + 1));
	}
	closedir(d);
	return (sum);
}

/* mem_disk_size(), and whether it was a file or a directory. */
static int64_t
disk_size(const char *path, int *from)
{
	struct stat	 st;
	int		 fd;

	if (stat(path, &st) == -1)
		return (-1);
	if (S_ISREG(st.st_mode)) {
		*from = NEED_FILE;
		return (st.st_size);
	}
	if (!S_ISDIR(st.st_mode))
		return (-1);
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return (-1);
	*from = NEED_DIRECTORY;
	return (dir_size(fd, 0));
}

int64_t
mem_disk_size(const char *path)
{
	int	 from;

	return (disk_size(path, &from));
}

/* NAME's value in a NAME=VALUE list; NULL when absent or empty. */
static const char *
env_get(char *const *envp, const char *name)
{
	size_t	 len = strlen(name);

	for (; envp != NULL && *envp != NULL; envp++)
		if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
			return ((*envp)[len + 1] != '\0' ? *envp + len + 1 :
			    NULL);
	return (NULL);
}

/*
 * The hub directory of the HF cache that envp names, as huggingface_hub
 * finds it.  0, or -1 when there is none or it is not absolute.
 */
static int
hub_path(char *const *envp, char *hub, size_t len)
{
	const char	*v, *home = env_get(envp, "HOME"), *tail = "";
	char		 base[PATH_MAX];
	size_t		 n;

	if ((v = env_get(envp, "HF_HUB_CACHE")) == NULL &&
	    (v = env_get(envp, "HUGGINGFACE_HUB_CACHE")) == NULL) {
		if ((v = env_get(envp, "HF_HOME")) != NULL)
			tail = "/hub";
		else if ((v = env_get(envp, "XDG_CACHE_HOME")) != NULL)
			tail = "/huggingface/hub";
		else if ((v = home) != NULL)
			tail = "/.cache/huggingface/hub";
		else
			return (-1);
	}
	if (strncmp(v, "~/", 2) == 0) {
		if (home == NULL)
			return (-1);
		n = snprintf(base, sizeof(base), "%s%s", home, v + 1);
	} else
		n = strlcpy(base, v, sizeof(base));
	if (n >= sizeof(base) || base[0] != '/')
		return (-1);
	if ((size_t)snprintf(hub, len, "%s%s", base, tail) >= len)
		return (-1);
	return (0);
}

/* A model id's files in the Hugging Face cache; -1 when not there. */
static int64_t
hf_cache_size(const char *id, char *const *envp)
{
	char		 hub[PATH_MAX], repo[PATH_MAX], path[PATH_MAX];
	char		 rev[256], name[PATH_MAX];
	struct stat	 st;
	size_t		 i, n;
	ssize_t		 got;
	int		 fd;

	if (hub_path(envp, hub, sizeof(hub)) == -1)
		return (-1);

	/* "org/name:tag" -> "models--org--name" */
	n = strlcpy(name, "models--", sizeof(name));
	for (i = 0; id[i] != '\0' && id[i] != ':'; i++) {
		if (n + 3 >= sizeof(name))
			return (-1);
		if (id[i] == '/') {
			name[n++] = '-';
			name[n++] = '-';
		} else
			name[n++] = id[i];
	}
	name[n] = '\0';
	if (i == 0)
		return (-1);
	if ((size_t)snprintf(repo, sizeof(repo), "%s/%s", hub, name) >=
	    sizeof(repo))
		return (-1);

	/*
	 * The revision main points at, else every blob there is.  The
	 * cache may be the model user's: a FIFO or a device there must not
	 * block or feed us.
	 */
	if ((size_t)snprintf(path, sizeof(path), "%s/refs/main", repo) >=
	    sizeof(path))
		return (-1);
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) != -1) {
		got = -1;
		if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
			got = read(fd, rev, sizeof(rev) - 1);
		close(fd);
		if (got > 0) {
			rev[got] = '\0';
			rev[strcspn(rev, "\r\n")] = '\0';
			if (rev[0] != '\0' && strchr(rev, '/') == NULL &&
			    strcmp(rev, "..") != 0 &&
			    (size_t)snprintf(path, sizeof(path),
			    "%s/snapshots/%s", repo, rev) < sizeof(path))
				return (mem_disk_size(path));
		}
	}
	if ((size_t)snprintf(path, sizeof(path), "%s/blobs", repo) >=
	    sizeof(path))
		return (-1);
	return (mem_disk_size(path));
}

int64_t
mem_need(const char *upstream, int64_t configured, enum model_kind kind,
    char *const *envp, int *fromp)
{
	int64_t	 headroom, size;
	int	 from = NEED_HEADROOM;

	if (fromp == NULL)
		fromp = &from;
	if (configured > 0) {
		*fromp = NEED_CONFIGURED;
		return (configured);
	}
	switch (kind) {
	case KIND_IMAGE:
		headroom = MEM_HEADROOM_IMAGE;
		break;
	default:
		headroom = MEM_HEADROOM;
		break;
	}
	if (upstream == NULL || upstream[0] == '\0')
		size = -1;
	else if (upstream[0] == '/')
		size = disk_size(upstream, &from);
	else {
		size = hf_cache_size(upstream, envp);
		from = NEED_HF_CACHE;
	}
	if (size < 0) {
		log_debug("%s: %s: nothing on disk, need is the headroom",
		    __func__, upstream == NULL ? "(none)" : upstream);
		*fromp = NEED_HEADROOM;
		return (headroom);
	}
	*fromp = from;
	return (mem_add(size, headroom));
}

void
mem_fmt(char *buf, size_t len, int64_t bytes)
{
	const char	*sign = "";
	uint64_t	 b;

	if (len == 0)
		return;
	if (bytes < 0) {
		sign = "-";
		b = -(uint64_t)bytes;
	} else
		b = bytes;
	if (b >= 1024ULL * MEM_GIB)
		(void)snprintf(buf, len, "%s%.1f TiB", sign,
		    (double)b / (1024.0 * MEM_GIB));
	else if (b >= (uint64_t)MEM_GIB)
		(void)snprintf(buf, len, "%s%.1f GiB", sign,
		    (double)b / MEM_GIB);
	else if (b >= (uint64_t)MEM_MIB)
		(void)snprintf(buf, len, "%s%llu MiB", sign,
		    (unsigned long long)((b + MEM_MIB / 2) / MEM_MIB));
	else if (b >= (uint64_t)MEM_KIB)
		(void)snprintf(buf, len, "%s%llu KiB", sign,
		    (unsigned long long)((b + MEM_KIB / 2) / MEM_KIB));
	else
		(void)snprintf(buf, len, "%s%llu B", sign,
		    (unsigned long long)b);
}
