/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: the state file of measured peaks (peaks.c), which
 * agencyd reads at start; a file that was damaged must be ignored, never
 * misread.  The input is the file's text.
 *
 * Invariants: no crash, no read outside the input; -1 always with a
 * message and nothing kept; on success at most PEAKS_MAX peaks, no key
 * twice, and what is read is written back (peaks_format) to a text that
 * reads as the same peaks.
 *
 * FUZZ_WRITE_SEEDS=DIR writes the seed corpus into DIR and exits.
 */
#include <sys/types.h>

#include <err.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "peaks.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void
fail(const char *what)
{
	fprintf(stderr, "fuzz_peaks: %s\n", what);
	abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct peaks	 p, q;
	char		 err[256], *t;
	size_t		 i, len;

	err[0] = '\0';
	if (peaks_parse((const char *)data, size, &p, err, sizeof(err)) ==
	    -1) {
		if (err[0] == '\0')
			fail("refused without a message");
		if (p.n != 0 || p.v != NULL)
			fail("refused, and something kept");
		return (0);
	}
	if (p.n > PEAKS_MAX)
		fail("more peaks than the bound");
	for (i = 0; i < p.n; i++)
		if (peaks_find(&p, &p.v[i].key) != &p.v[i])
			fail("a key twice");
	if ((t = peaks_format(&p, &len)) == NULL)
		fail("cannot be written");
	if (peaks_parse(t, len, &q, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n%s\n", err, t);
		fail("what was written does not read");
	}
	if (q.n != p.n || (p.n > 0 && memcmp(p.v, q.v, p.n * sizeof(*p.v))
	    != 0))
		fail("what was written reads otherwise");
	free(t);
	peaks_free(&p);
	peaks_free(&q);
	return (0);
}

static __attribute__((__noreturn__)) void
write_seeds(const char *dir)
{
	static const char *const seeds[] = {
		"{\"version\":1,\"peaks\":[]}",
		"{\"version\":1,\"peaks\":[{\"model\":\"qwen2.5-7b\",\"dev\":2049,"
		    "\"ino\":1234567,\"size\":4683073184,\"mtime_ns\":"
		    "1764750000123456789,\"argv\":\"00112233445566778899aabb"
		    "ccddeeff00112233445566778899aabbccddeeff\",\"ctx\":32768,"
		    "\"peak\":6442450944,\"when\":1764750000},{\"model\":"
		    "\"tiny \\\"a\\\"\",\"dev\":0,\"ino\":9223372036854775807,"
		    "\"size\":0,\"mtime_ns\":0,\"argv\":\"ffffffffffffffffffff"
		    "ffffffffffffffffffffffffffffffffffffffffffff\",\"ctx\":"
		    "4294967295,\"peak\":0,\"when\":0}]}\n",
	};
	char		 path[1024];
	size_t		 i, len;
	int		 fd;

	for (i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		len = strlen(seeds[i]);
		(void)snprintf(path, sizeof(path), "%s/seed-%03zu", dir, i);
		if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) ==
		    -1 || write(fd, seeds[i], len) != (ssize_t)len)
			err(1, "%s", path);
		close(fd);
	}
	exit(0);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char	*seeds;

	(void)argc;
	(void)argv;
	if ((seeds = getenv("FUZZ_WRITE_SEEDS")) != NULL)
		write_seeds(seeds);
	return (0);
}
