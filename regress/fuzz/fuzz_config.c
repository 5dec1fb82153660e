/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: a file's bytes into parse_config(), as agencyd -n
 * reads them.  A configuration that parses must print (print_config) to
 * a normalized form that parses back to the same text, as the golden
 * tests require of every good case.
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agencyd.h"
#include "log.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int	in_fd = -1, out_fd = -1;
static FILE	*stderr_real;		/* ours, for a broken invariant */
static char	in_path[64], out_path[64];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FILE	*devnull;

	(void)argc;
	(void)argv;
	if ((in_fd = memfd_create("fuzz_config", 0)) == -1 ||
	    (out_fd = memfd_create("fuzz_config_out", 0)) == -1)
		err(1, "memfd_create");
	/* As root the parser reads only files no one else may write. */
	if (fchmod(in_fd, 0600) == -1 || fchmod(out_fd, 0600) == -1)
		err(1, "fchmod");
	(void)snprintf(in_path, sizeof(in_path), "/proc/self/fd/%d", in_fd);
	(void)snprintf(out_path, sizeof(out_path), "/proc/self/fd/%d",
	    out_fd);
	/*
	 * The parser's errors go to stderr: silence them once.  libFuzzer
	 * and the sanitizers keep the real fd 2 (they took the FILE, or
	 * write the fd itself), so crash reports still show.
	 */
	if ((devnull = fopen("/dev/null", "w")) == NULL)
		err(1, "/dev/null");
	stderr_real = stderr;
	stderr = devnull;
	log_init(1, LOG_DAEMON);
	return (0);
}

static void
load(int fd, const void *data, size_t len)
{
	if (ftruncate(fd, 0) == -1 ||
	    (len > 0 && pwrite(fd, data, len, 0) != (ssize_t)len))
		err(1, "memfd write");
}

/* The normalized form of conf, in a malloc'd string. */
static char *
printed(const struct agency_conf *conf, size_t *lenp)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*f;

	if ((f = open_memstream(&buf, &len)) == NULL)
		err(1, "open_memstream");
	print_config(f, conf);
	if (fclose(f) != 0)
		err(1, "print_config");
	*lenp = len;
	return (buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct agency_conf	*conf, *again;
	char			*p1, *p2;
	size_t			 l1, l2;

	/* Big files say nothing small ones do not; keep runs fast. */
	if (size > 64 * 1024)
		return (-1);
	load(in_fd, data, size);
	if ((conf = parse_config(in_path, AGENCYD_OPT_NOACTION)) == NULL)
		return (0);

	p1 = printed(conf, &l1);
	config_free(conf);
	load(out_fd, p1, l1);
	if ((again = parse_config(out_path, AGENCYD_OPT_NOACTION)) == NULL) {
		fprintf(stderr_real, "normalized form does not parse:\n%s\n", p1);
		abort();
	}
	p2 = printed(again, &l2);
	config_free(again);
	if (l1 != l2 || memcmp(p1, p2, l1) != 0) {
		fprintf(stderr_real, "normalized form changes when read back:\n"
		    "--- first\n%s--- again\n%s", p1, p2);
		abort();
	}
	free(p1);
	free(p2);
	return (0);
}
