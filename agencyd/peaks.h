/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The state file: the measured peak of each model, kept across
 * restarts, so that the second load of a model is sized by what the
 * first one took.  A peak is keyed by the model's name, its file's
 * identity (device, inode, size, mtime: a new file is learned anew),
 * its argv (a digest) and its context.
 *
 * The file is JSON ({"version": 1, "peaks": [...]}), at most
 * PEAKS_FILE_MAX bytes and PEAKS_MAX entries (the oldest go first).  It
 * is written whole and atomically: a temporary file beside it, fsync,
 * rename over it, fsync of the directory.  The directory must be safe
 * (peaks_load, peaks_save): every directory from / to it, its links
 * resolved, belongs to root or to agencyd's user and none may be
 * written by others, but a sticky one on the way (/tmp); each is opened
 * from the one before without following links, so a directory changed
 * after its check is not walked.  A file that does not read (corrupt,
 * too large, not a plain file of ours) is ignored with a warning: the
 * peaks are learned again.
 */
#ifndef AGENCY_PEAKS_H
#define AGENCY_PEAKS_H

#include <sys/types.h>
#include <sys/stat.h>

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "sha256.h"

#define PEAKS_MAX		1024
#define PEAKS_FILE_MAX		(1024 * 1024)
#define PEAKS_FILE		"peaks.json"
#define PEAKS_VERSION		1

struct peak_key {
	char		 model[AGENCY_NAME_MAX];
	uint64_t	 dev;
	uint64_t	 ino;
	int64_t		 size;
	int64_t		 mtime_ns;
	uint8_t		 argv[SHA256_LEN];	/* its words, NUL after each */
	uint32_t	 ctx;
};

struct peak_entry {
	struct peak_key	 key;
	int64_t		 peak;		/* bytes */
	int64_t		 when;		/* seconds since the epoch */
};

struct peaks {
	struct peak_entry	*v;
	size_t			 n;
};

void	peaks_init(struct peaks *);
void	peaks_free(struct peaks *);

/* The key of a model run with argv (NULL-terminated) and ctx, its file
 * as st says.  0, or -1 when the name is too long. */
int	peaks_key(struct peak_key *, const char *, const struct stat *,
	    char *const *, uint32_t);

const struct peak_entry *peaks_find(const struct peaks *,
	    const struct peak_key *);

/*
 * A peak measured: kept when it is larger than the one known (a peak
 * does not shrink until forgotten), stamped now.  A new key past
 * PEAKS_MAX takes the oldest one's place.  0, or -1 (out of memory).
 */
int	peaks_put(struct peaks *, const struct peak_key *, int64_t, int64_t);

/* Forget every peak of the model: how many there were. */
size_t	peaks_forget(struct peaks *, const char *);

/*
 * The file's text, pure: peaks_parse reads it (strictly: the version,
 * every field of every entry, in range, no key twice) into *p (empty on
 * an error, with why in err); peaks_format writes it (free it).
 */
int	peaks_parse(const char *, size_t, struct peaks *, char *, size_t);
char	*peaks_format(const struct peaks *, size_t *);

/*
 * dir/PEAKS_FILE.  peaks_load: 0 with *p read, or empty when there is
 * no file or it does not read (a warning); -1 with why in err when the
 * directory is not safe or cannot be opened (nothing may be kept
 * there).  peaks_save: 0, or -1 with why (the old file stays whole).
 */
int	peaks_load(const char *, struct peaks *, char *, size_t);
int	peaks_save(const char *, const struct peaks *, char *, size_t);

#endif /* AGENCY_PEAKS_H */
