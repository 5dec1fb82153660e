/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A model's files: which they are, opened, then mapped and read.  See
 * modelfile.h.  Calls gguf.c, safetensors.c and estimate.c (sizing_err).
 *
 * Calls: estimate.c, gguf.c, safetensors.c.
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modelfile.h"

#define bad	sizing_err

static int	ends_with(const char *, const char *);
static int	add(struct modelfile *, int, const char *, char *, size_t);
static int	open_at(int, const char *, int *, char *, size_t);
static int	open_split(const char *, struct modelfile *, char *, size_t);
static int	open_dir(int, const char *, struct modelfile *, char *,
		    size_t);
static int	read_config(int, struct sizing_figures *, char *, size_t);
static int	read_one(int, int, int, struct sizing_figures *, char *,
		    size_t);

static int
ends_with(const char *s, const char *suffix)
{
	size_t	 n = strlen(s), m = strlen(suffix);

	return (n > m && strcmp(s + n - m, suffix) == 0);
}

static int
add(struct modelfile *m, int fd, const char *name, char *err, size_t errlen)
{
	if (m->nfd == MODELFILE_MAX) {
		close(fd);
		return (bad(err, errlen, "%s: more than %d files", name,
		    MODELFILE_MAX));
	}
	m->fd[m->nfd++] = fd;
	return (0);
}

/* A regular file under dirfd (AT_FDCWD: a path). */
static int
open_at(int dirfd, const char *name, int *fdp, char *err, size_t errlen)
{
	struct stat	 st;
	int		 fd;

	if ((fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY |
	    O_NONBLOCK)) == -1)
		return (bad(err, errlen, "%s: %s", name, strerror(errno)));
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		close(fd);
		return (bad(err, errlen, "%s: not a regular file", name));
	}
	*fdp = fd;
	return (0);
}

/* NAME-00001-of-0000M.gguf: the other files of the split. */
static int
open_split(const char *path, struct modelfile *m, char *err, size_t errlen)
{
	const char	*p;
	char		 other[PATH_MAX];
	size_t		 stem;
	int		 count, i, fd;

	/* "-00001-of-00003.gguf" is 20 bytes. */
	if (strlen(path) < 20)
		return (0);
	p = path + strlen(path) - 20;
	if (strncmp(p, "-00001-of-", 10) != 0 ||
	    sscanf(p + 10, "%5d", &count) != 1 || strcmp(p + 15, ".gguf") != 0)
		return (0);
	if (count < 1 || count > MODELFILE_MAX)
		return (bad(err, errlen, "%s: a split of %d files", path,
		    count));
	stem = p - path;
	for (i = 2; i <= count; i++) {
		if ((size_t)snprintf(other, sizeof(other), "%.*s-%05d-of-%05d"
		    ".gguf", (int)stem, path, i, count) >= sizeof(other))
			return (bad(err, errlen, "%s: path too long", path));
		if (open_at(AT_FDCWD, other, &fd, err, errlen) == -1 ||
		    add(m, fd, other, err, errlen) == -1)
			return (-1);
	}
	return (0);
}

/* A directory: its safetensors shards, else its one GGUF file. */
static int
open_dir(int dfd, const char *path, struct modelfile *m, char *err,
    size_t errlen)
{
	DIR		*d;
	struct dirent	*de;
	char		 gguf[NAME_MAX + 1];
	int		 fd, ngguf = 0, ret = -1;

	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return (bad(err, errlen, "%s: %s", path, strerror(errno)));
	}
	m->format = SIZING_SAFETENSORS;
	while ((errno = 0, de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (ends_with(de->d_name, ".safetensors")) {
			if (open_at(dirfd(d), de->d_name, &fd, err,
			    errlen) == -1 ||
			    add(m, fd, de->d_name, err, errlen) == -1)
				goto done;
		} else if (strcmp(de->d_name, "config.json") == 0) {
			if (open_at(dirfd(d), de->d_name, &m->config, err,
			    errlen) == -1)
				goto done;
		} else if (ends_with(de->d_name, ".gguf") &&
		    strncmp(de->d_name, "mmproj", 6) != 0) {
			ngguf++;
			(void)strlcpy(gguf, de->d_name, sizeof(gguf));
		}
	}
	if (errno != 0) {
		bad(err, errlen, "%s: %s", path, strerror(errno));
		goto done;
	}
	if (m->nfd == 0 && ngguf == 1) {
		m->format = SIZING_GGUF;
		if (open_at(dirfd(d), gguf, &fd, err, errlen) == -1 ||
		    add(m, fd, gguf, err, errlen) == -1)
			goto done;
	}
	if (m->nfd == 0) {
		bad(err, errlen, "%s: no .safetensors file and %s .gguf file",
		    path, ngguf == 0 ? "no" : "more than one");
		goto done;
	}
	ret = 0;
 done:
	closedir(d);
	return (ret);
}

int
modelfile_open(const char *path, struct modelfile *m, char *err,
    size_t errlen)
{
	struct stat	 st;
	char		 dir[PATH_MAX], *slash;
	int		 fd;

	memset(m, 0, sizeof(*m));
	m->config = -1;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY |
	    O_NONBLOCK)) == -1)
		return (bad(err, errlen, "%s: %s", path, strerror(errno)));
	if (fstat(fd, &st) == -1) {
		close(fd);
		return (bad(err, errlen, "%s: %s", path, strerror(errno)));
	}
	if (S_ISDIR(st.st_mode)) {
		if (open_dir(fd, path, m, err, errlen) == -1)
			goto fail;
		return (0);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return (bad(err, errlen, "%s: not a file or a directory",
		    path));
	}
	m->fd[m->nfd++] = fd;
	if (ends_with(path, ".safetensors")) {
		m->format = SIZING_SAFETENSORS;
		if (strlcpy(dir, path, sizeof(dir)) >= sizeof(dir))
			goto toolong;
		if ((slash = strrchr(dir, '/')) != NULL)
			*slash = '\0';
		else
			(void)strlcpy(dir, ".", sizeof(dir));
		if (strlcat(dir, "/config.json", sizeof(dir)) >= sizeof(dir))
			goto toolong;
		if (open_at(AT_FDCWD, dir, &fd, err, errlen) == 0)
			m->config = fd;
		return (0);
	}
	m->format = SIZING_GGUF;
	if (open_split(path, m, err, errlen) == -1)
		goto fail;
	return (0);
 toolong:
	bad(err, errlen, "%s: path too long", path);
 fail:
	modelfile_close(m);
	return (-1);
}

void
modelfile_close(struct modelfile *m)
{
	int	 i;

	for (i = 0; i < m->nfd; i++)
		close(m->fd[i]);
	m->nfd = 0;
	if (m->config != -1)
		close(m->config);
	m->config = -1;
}

static int
read_config(int fd, struct sizing_figures *f, char *err, size_t errlen)
{
	char	*buf;
	size_t	 len = 0;
	ssize_t	 n;
	int	 r;

	if ((buf = malloc(MODELFILE_CONFIG_MAX + 1)) == NULL)
		return (bad(err, errlen, "config.json: out of memory"));
	while (len <= MODELFILE_CONFIG_MAX && (n = pread(fd, buf + len,
	    MODELFILE_CONFIG_MAX + 1 - len, (off_t)len)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			free(buf);
			return (bad(err, errlen, "config.json: %s",
			    strerror(errno)));
		}
		len += n;
	}
	if (len > MODELFILE_CONFIG_MAX) {
		free(buf);
		return (bad(err, errlen, "config.json: over %d bytes",
		    MODELFILE_CONFIG_MAX));
	}
	r = hfconfig_figures(buf, len, f, err, errlen);
	free(buf);
	return (r);
}

/* One file of the model (a GGUF model's first sets the shape). */
static int
read_one(int fd, int format, int first, struct sizing_figures *f, char *err,
    size_t errlen)
{
	struct stat	 st;
	uint8_t		 lenb[8], *p;
	uint64_t	 hlen;
	size_t		 maplen;
	int		 r;

	if (fstat(fd, &st) == -1)
		return (bad(err, errlen, "fstat: %s", strerror(errno)));
	if (st.st_size <= 0)
		return (bad(err, errlen, "an empty file"));
	maplen = (size_t)st.st_size;
	if (format == SIZING_SAFETENSORS) {
		/* Its first 8 bytes say how much of it is header. */
		if (st.st_size < 8 || pread(fd, lenb, 8, 0) != 8)
			return (bad(err, errlen, "no header length"));
		if ((hlen = safetensors_header_len(lenb, 8)) == 0 ||
		    hlen > (uint64_t)st.st_size - 8)
			return (bad(err, errlen, "a header length that cannot "
			    "be"));
		maplen = 8 + hlen;
	}
	if ((p = mmap(NULL, maplen, PROT_READ, MAP_PRIVATE, fd, 0)) ==
	    MAP_FAILED)
		return (bad(err, errlen, "mmap: %s", strerror(errno)));
	if (format == SIZING_SAFETENSORS)
		r = safetensors_figures(p, maplen, st.st_size, f, err, errlen);
	else if (first)
		r = gguf_figures(p, maplen, st.st_size, f, err, errlen);
	else
		r = gguf_add_split(p, maplen, st.st_size, f, err, errlen);
	munmap(p, maplen);
	return (r);
}

int
modelfile_read(const struct modelfile *m, struct sizing_figures *f,
    char *err, size_t errlen)
{
	int	 i;

	memset(f, 0, sizeof(*f));
	if (m->format != SIZING_GGUF && m->format != SIZING_SAFETENSORS)
		return (bad(err, errlen, "no model files"));
	/* config.json first: it says how many layers there are. */
	if (m->config != -1 && read_config(m->config, f, err, errlen) == -1)
		return (-1);
	for (i = 0; i < m->nfd; i++)
		if (read_one(m->fd[i], m->format, i == 0, f, err, errlen) == -1)
			return (-1);
	return (sizing_check(f, err, errlen));
}
