/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The state file of measured peaks.  See peaks.h.  Calls common/
 * sha256.c.
 *
 * Calls: common/log.c, common/sha256.c.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "peaks.h"

#define PEAKS_DEPTH	8		/* {"peaks": [{...}]}, and a little */

/* Say why in err, and fail. */
#define bad(err, errlen, ...)	(snprintf(err, errlen, __VA_ARGS__), -1)

static int	key_equal(const struct peak_key *, const struct peak_key *);
static int	get_i64(struct json_object *, const char *, int64_t, int64_t *);
static int	entry(struct json_object *, struct peak_entry *, char *,
		    size_t);
static int	dir_open(const char *, char *, size_t);

void
peaks_init(struct peaks *p)
{
	p->v = NULL;
	p->n = 0;
}

void
peaks_free(struct peaks *p)
{
	free(p->v);
	peaks_init(p);
}

int
peaks_key(struct peak_key *k, const char *model, const struct stat *st,
    char *const *argv, uint32_t ctx)
{
	struct sha256	 h;
	size_t		 i;

	memset(k, 0, sizeof(*k));
	if (strlcpy(k->model, model, sizeof(k->model)) >= sizeof(k->model))
		return (-1);
	k->dev = (uint64_t)st->st_dev;
	k->ino = (uint64_t)st->st_ino;
	k->size = (int64_t)st->st_size;
	k->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 +
	    st->st_mtim.tv_nsec;
	sha256_init(&h);
	/* Each word with its NUL: "a" "bc" is not "ab" "c". */
	for (i = 0; argv != NULL && argv[i] != NULL; i++)
		sha256_update(&h, argv[i], strlen(argv[i]) + 1);
	sha256_final(&h, k->argv);
	k->ctx = ctx;
	return (0);
}

static int
key_equal(const struct peak_key *a, const struct peak_key *b)
{
	return (strcmp(a->model, b->model) == 0 && a->dev == b->dev &&
	    a->ino == b->ino && a->size == b->size &&
	    a->mtime_ns == b->mtime_ns && a->ctx == b->ctx &&
	    memcmp(a->argv, b->argv, sizeof(a->argv)) == 0);
}

const struct peak_entry *
peaks_find(const struct peaks *p, const struct peak_key *k)
{
	size_t	 i;

	for (i = 0; i < p->n; i++)
		if (key_equal(&p->v[i].key, k))
			return (&p->v[i]);
	return (NULL);
}

int
peaks_put(struct peaks *p, const struct peak_key *k, int64_t peak,
    int64_t now)
{
	struct peak_entry	*e, *nv;
	size_t			 i, oldest = 0;

	for (i = 0; i < p->n; i++)
		if (key_equal(&p->v[i].key, k)) {
			e = &p->v[i];
			if (peak > e->peak)
				e->peak = peak;
			e->when = now;
			return (0);
		}
	if (p->n == PEAKS_MAX) {
		for (i = 1; i < p->n; i++)
			if (p->v[i].when < p->v[oldest].when)
				oldest = i;
		e = &p->v[oldest];
	} else {
		if ((nv = reallocarray(p->v, p->n + 1, sizeof(*nv))) == NULL)
			return (-1);
		p->v = nv;
		e = &p->v[p->n++];
	}
	e->key = *k;
	e->peak = peak;
	e->when = now;
	return (0);
}

size_t
peaks_forget(struct peaks *p, const char *model)
{
	size_t	 i = 0, n = 0;

	while (i < p->n) {
		if (strcmp(p->v[i].key.model, model) == 0) {
			p->v[i] = p->v[--p->n];
			n++;
		} else
			i++;
	}
	return (n);
}

/* A field that is an integer from 0 to max: 0, or -1. */
static int
get_i64(struct json_object *o, const char *name, int64_t max, int64_t *v)
{
	struct json_object	*f;

	if (!json_object_object_get_ex(o, name, &f) ||
	    !json_object_is_type(f, json_type_int))
		return (-1);
	errno = 0;
	*v = json_object_get_int64(f);
	if (errno != 0 || *v < 0 || *v > max)
		return (-1);
	return (0);
}

static int
entry(struct json_object *o, struct peak_entry *e, char *err, size_t errlen)
{
	struct json_object	*f;
	const char		*s;
	int64_t			 dev, ino, ctx;

	memset(e, 0, sizeof(*e));
	if (!json_object_is_type(o, json_type_object))
		return (bad(err, errlen, "an entry that is not an object"));
	if (!json_object_object_get_ex(o, "model", &f) ||
	    !json_object_is_type(f, json_type_string) ||
	    json_object_get_string_len(f) == 0 ||
	    (size_t)json_object_get_string_len(f) >= sizeof(e->key.model) ||
	    strlen(s = json_object_get_string(f)) !=
	    (size_t)json_object_get_string_len(f))
		return (bad(err, errlen, "an entry without a model name"));
	(void)strlcpy(e->key.model, s, sizeof(e->key.model));
	if (!json_object_object_get_ex(o, "argv", &f) ||
	    !json_object_is_type(f, json_type_string) ||
	    sha256_unhex(json_object_get_string(f), e->key.argv) == -1)
		return (bad(err, errlen, "%.64s: no argv digest",
		    e->key.model));
	/* dev and ino are kept as the 63 bits the kernel uses. */
	if (get_i64(o, "dev", INT64_MAX, &dev) == -1 ||
	    get_i64(o, "ino", INT64_MAX, &ino) == -1 ||
	    get_i64(o, "size", INT64_MAX, &e->key.size) == -1 ||
	    get_i64(o, "mtime_ns", INT64_MAX, &e->key.mtime_ns) == -1 ||
	    get_i64(o, "ctx", UINT32_MAX, &ctx) == -1 ||
	    get_i64(o, "peak", INT64_MAX, &e->peak) == -1 ||
	    get_i64(o, "when", INT64_MAX, &e->when) == -1)
		return (bad(err, errlen, "%.64s: a field missing or out of "
		    "range", e->key.model));
	e->key.dev = (uint64_t)dev;
	e->key.ino = (uint64_t)ino;
	e->key.ctx = (uint32_t)ctx;
	return (0);
}

int
peaks_parse(const char *buf, size_t len, struct peaks *p, char *err,
    size_t errlen)
{
	struct json_tokener	*tok;
	struct json_object	*root = NULL, *v, *arr;
	size_t			 i, j, n, end;
	int64_t			 version;

	peaks_init(p);
	if (len > PEAKS_FILE_MAX)
		return (bad(err, errlen, "over %d bytes", PEAKS_FILE_MAX));
	if ((tok = json_tokener_new_ex(PEAKS_DEPTH)) == NULL)
		return (bad(err, errlen, "out of memory"));
	root = json_tokener_parse_ex(tok, buf, (int)len);
	if (root == NULL ||
	    json_tokener_get_error(tok) != json_tokener_success) {
		json_tokener_free(tok);
		json_object_put(root);
		return (bad(err, errlen, "not JSON"));
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (end < len && (buf[end] == '\n' || buf[end] == ' '))
		end++;
	if (end != len || !json_object_is_type(root, json_type_object)) {
		(void)bad(err, errlen, "not one JSON object");
		goto fail;
	}
	if (get_i64(root, "version", INT64_MAX, &version) == -1 ||
	    version != PEAKS_VERSION) {
		(void)bad(err, errlen, "not version %d", PEAKS_VERSION);
		goto fail;
	}
	if (!json_object_object_get_ex(root, "peaks", &arr) ||
	    !json_object_is_type(arr, json_type_array)) {
		(void)bad(err, errlen, "no list of peaks");
		goto fail;
	}
	if ((n = json_object_array_length(arr)) > PEAKS_MAX) {
		(void)bad(err, errlen, "%zu peaks, more than %d", n, PEAKS_MAX);
		goto fail;
	}
	if (n > 0 && (p->v = calloc(n, sizeof(*p->v))) == NULL) {
		(void)bad(err, errlen, "out of memory");
		goto fail;
	}
	for (i = 0; i < n; i++) {
		v = json_object_array_get_idx(arr, i);
		if (entry(v, &p->v[i], err, errlen) == -1)
			goto fail;
		for (j = 0; j < i; j++)
			if (key_equal(&p->v[j].key, &p->v[i].key)) {
				(void)bad(err, errlen, "%.64s: a key given twice",
				    p->v[i].key.model);
				goto fail;
			}
		p->n = i + 1;
	}
	json_object_put(root);
	return (0);
 fail:
	json_object_put(root);
	peaks_free(p);
	return (-1);
}

char *
peaks_format(const struct peaks *p, size_t *len)
{
	struct json_object	*root, *arr, *o;
	const struct peak_entry	*e;
	const char		*s;
	char			 hex[SHA256_HEXLEN], *out = NULL;
	size_t			 i;

	if ((root = json_object_new_object()) == NULL ||
	    (arr = json_object_new_array()) == NULL) {
		json_object_put(root);
		return (NULL);
	}
	json_object_object_add(root, "version",
	    json_object_new_int(PEAKS_VERSION));
	json_object_object_add(root, "peaks", arr);
	for (i = 0; i < p->n; i++) {
		e = &p->v[i];
		if ((o = json_object_new_object()) == NULL)
			goto done;
		sha256_hex(e->key.argv, hex);
		json_object_object_add(o, "model",
		    json_object_new_string(e->key.model));
		json_object_object_add(o, "dev",
		    json_object_new_int64((int64_t)e->key.dev & INT64_MAX));
		json_object_object_add(o, "ino",
		    json_object_new_int64((int64_t)e->key.ino & INT64_MAX));
		json_object_object_add(o, "size",
		    json_object_new_int64(e->key.size));
		json_object_object_add(o, "mtime_ns",
		    json_object_new_int64(e->key.mtime_ns));
		json_object_object_add(o, "argv", json_object_new_string(hex));
		json_object_object_add(o, "ctx",
		    json_object_new_int64(e->key.ctx));
		json_object_object_add(o, "peak",
		    json_object_new_int64(e->peak));
		json_object_object_add(o, "when",
		    json_object_new_int64(e->when));
		json_object_array_add(arr, o);
	}
	s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN);
	if (s != NULL && (out = strdup(s)) != NULL)
		*len = strlen(out);
 done:
	json_object_put(root);
	return (out);
}

/*
 * The directory, opened for the file, once every directory from / to
 * it (links resolved first) is found safe: root's or ours, written by
 * no one else but where sticky on the way.  Each is opened from the one
 * before, following no link, so what is checked is what is walked.
 */
static int
dir_open(const char *dir, char *err, size_t errlen)
{
	struct stat	 st;
	char		 real[PATH_MAX], *p, *next;
	int		 fd, nfd, last;

	if (realpath(dir, real) == NULL)
		return (bad(err, errlen, "%s: %s", dir, strerror(errno)));
	if ((fd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return (bad(err, errlen, "/: %s", strerror(errno)));
	for (p = real;;) {
		while (*p == '/')
			p++;
		last = *p == '\0';
		if (fstat(fd, &st) == -1) {
			(void)bad(err, errlen, "%s: %s", real, strerror(errno));
			goto fail;
		}
		if (st.st_uid != 0 && st.st_uid != geteuid()) {
			(void)bad(err, errlen, "%s: a directory on the way belongs "
			    "to uid %u, not root or us", real,
			    (unsigned int)st.st_uid);
			goto fail;
		}
		if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0 &&
		    (last || (st.st_mode & S_ISVTX) == 0)) {
			(void)bad(err, errlen, "%s: a directory on the way may be "
			    "written by others (mode %04o)", real,
			    (unsigned int)(st.st_mode & 07777));
			goto fail;
		}
		if (last)
			return (fd);
		if ((next = strchr(p, '/')) != NULL)
			*next = '\0';
		nfd = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (nfd == -1) {
			(void)bad(err, errlen, "%s: %s", real, strerror(errno));
			goto fail;
		}
		close(fd);
		fd = nfd;
		if (next == NULL)
			p += strlen(p);
		else {
			*next = '/';
			p = next;
		}
	}
 fail:
	close(fd);
	return (-1);
}

int
peaks_load(const char *dir, struct peaks *p, char *err, size_t errlen)
{
	struct stat	 st;
	char		*buf, why[256];
	ssize_t		 n, got = 0;
	int		 dfd, fd;

	peaks_init(p);
	if ((dfd = dir_open(dir, err, errlen)) == -1)
		return (-1);
	fd = openat(dfd, PEAKS_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	close(dfd);
	if (fd == -1) {
		if (errno != ENOENT)
			log_warnx("%s/%s: %s: ignored, peaks are learned "
			    "again", dir, PEAKS_FILE, strerror(errno));
		return (0);
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != 0 && st.st_uid != geteuid()) ||
	    st.st_size > PEAKS_FILE_MAX) {
		log_warnx("%s/%s: not a file of ours up to %d bytes: ignored, "
		    "peaks are learned again", dir, PEAKS_FILE,
		    PEAKS_FILE_MAX);
		close(fd);
		return (0);
	}
	if ((buf = malloc(st.st_size + 1)) == NULL) {
		close(fd);
		return (bad(err, errlen, "out of memory"));
	}
	while (got < st.st_size && (n = read(fd, buf + got,
	    st.st_size - got)) > 0)
		got += n;
	close(fd);
	if (got != st.st_size ||
	    peaks_parse(buf, got, p, why, sizeof(why)) == -1) {
		log_warnx("%s/%s: %s: ignored, peaks are learned again", dir,
		    PEAKS_FILE, got != st.st_size ? "short read" : why);
		peaks_init(p);
	}
	free(buf);
	return (0);
}

int
peaks_save(const char *dir, const struct peaks *p, char *err,
    size_t errlen)
{
	char	 tmp[64], *text;
	size_t	 len = 0, off = 0;
	ssize_t	 n;
	int	 dfd, fd = -1, saved;

	if ((text = peaks_format(p, &len)) == NULL)
		return (bad(err, errlen, "out of memory"));
	if (len > PEAKS_FILE_MAX) {
		free(text);
		return (bad(err, errlen, "over %d bytes", PEAKS_FILE_MAX));
	}
	if ((dfd = dir_open(dir, err, errlen)) == -1) {
		free(text);
		return (-1);
	}
	(void)snprintf(tmp, sizeof(tmp), ".%s.%08x", PEAKS_FILE,
	    arc4random());
	if ((fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600)) == -1)
		goto fail;
	while (off < len) {
		if ((n = write(fd, text + off, len - off)) == -1) {
			if (errno == EINTR)
				continue;
			goto fail;
		}
		off += n;
	}
	if (write(fd, "\n", 1) != 1 || fsync(fd) == -1)
		goto fail;
	if (close(fd) == -1) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	if (renameat(dfd, tmp, dfd, PEAKS_FILE) == -1)
		goto fail;
	/* The rename itself, on disk. */
	if (fsync(dfd) == -1)
		log_warn("%s: fsync %s", __func__, dir);
	close(dfd);
	free(text);
	return (0);
 fail:
	saved = errno;
	if (fd != -1)
		close(fd);
	(void)unlinkat(dfd, tmp, 0);
	close(dfd);
	free(text);
	return (bad(err, errlen, "%s/%s: %s", dir, PEAKS_FILE,
	    strerror(saved)));
}
