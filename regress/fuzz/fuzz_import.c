/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: agency-ctl import llama-swap (agency-ctl/import.c,
 * and the YAML reader, macros and command lines under it), a file's
 * bytes as the configuration, with the features phase 2 brings off and
 * on (the first byte's low bit).
 *
 * Invariants: no crash, leak or unbounded work; an import that fails
 * writes nothing to its output and says why, each line of that beginning
 * with the file's name; one that succeeds writes an agency.conf that
 * agencyd's own parser (parse_config, as agencyd -n) takes, once each
 * runtime's program is one that exists (/bin/true), with the features
 * off: what is not on main yet is only ever a comment.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <err.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agencyd.h"
#include "import.h"
#include "log.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define NAME	"in.yaml"

static int	 conf_fd = -1;
static char	 conf_dir[64];
static char	 conf_path[96];
static FILE	*stderr_real;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FILE	*devnull;

	(void)argc;
	(void)argv;
	/*
	 * The configuration in a directory of its own: parse_config refuses
	 * an id naming a file beside the configuration, so no other file
	 * may be there, and the configuration's own name is one no import
	 * writes (a space and a "#").
	 */
	(void)snprintf(conf_dir, sizeof(conf_dir), "/tmp/fuzz_import.XXXXXX");
	if (mkdtemp(conf_dir) == NULL)
		err(1, "%s", conf_dir);
	(void)snprintf(conf_path, sizeof(conf_path), "%s/#fuzz import",
	    conf_dir);
	if ((conf_fd = open(conf_path, O_RDWR | O_CREAT | O_TRUNC, 0600)) ==
	    -1)
		err(1, "%s", conf_path);
	/* agencyd's parser warns and errs on stderr: silence it once. */
	if ((devnull = fopen("/dev/null", "w")) == NULL)
		err(1, "/dev/null");
	stderr_real = stderr;
	stderr = devnull;
	log_init(1, LOG_DAEMON);
	/* What ${env.NAME} finds, so that such files get further. */
	(void)setenv("HOME", "/home/fuzz", 1);
	return (0);
}

static void
fail(const char *what, const char *out, const char *errs)
{
	fprintf(stderr_real, "fuzz_import: %s\n--- output\n%s--- errors\n%s",
	    what, out != NULL ? out : "", errs != NULL ? errs : "");
	abort();
}

/*
 * out with each runtime's program /bin/true: the parser checks that it
 * exists.  0, or -1 for a program it cannot tell (a quoted one).
 */
static int
stand_in(const char *out, FILE *f)
{
	const char	*line, *end, *p;
	static const char cmd[] = "\tcommand \"";

	for (line = out; *line != '\0'; line = end) {
		if ((end = strchr(line, '\n')) != NULL)
			end++;
		else
			end = line + strlen(line);
		if (strncmp(line, cmd, sizeof(cmd) - 1) != 0) {
			fwrite(line, 1, end - line, f);
			continue;
		}
		p = line + sizeof(cmd) - 1;
		if (*p == '\'' || *p == '\\')
			return (-1);
		while (p < end && *p != ' ' && *p != '"')
			p++;
		fprintf(f, "%s/bin/true", cmd);
		fwrite(p, 1, end - p, f);
	}
	return (0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct import_opts	 o;
	struct agency_conf	*conf;
	FILE			*out, *errs, *f;
	char			*obuf = NULL, *ebuf = NULL, *cbuf = NULL;
	const char		*line;
	size_t			 olen = 0, elen = 0, clen = 0;
	int			 rv;

	if (size > 256 * 1024)
		return (-1);
	import_defaults(&o);
	o.name = NAME;
	if (size > 0 && (data[0] & 1))
		o.features.args = o.features.preload = o.features.unlisted =
		    o.features.strip = o.features.stop = 1;
	if ((out = open_memstream(&obuf, &olen)) == NULL ||
	    (errs = open_memstream(&ebuf, &elen)) == NULL)
		err(1, "open_memstream");
	rv = import_llama_swap((const char *)data, size, &o, out, errs);
	fclose(out);
	fclose(errs);
	if (rv != 0 && rv != -1)
		fail("neither 0 nor -1", obuf, ebuf);
	if (rv == -1 && olen != 0)
		fail("a failed import wrote output", obuf, ebuf);
	if (elen == 0 || ebuf[elen - 1] != '\n')
		fail("no message, or one without its line's end", obuf, ebuf);
	for (line = ebuf; *line != '\0'; line = strchr(line, '\n') + 1)
		if (strncmp(line, NAME ":", sizeof(NAME)) != 0)
			fail("a message without the file's name", obuf, ebuf);
	if (rv == 0 && !o.features.args) {
		if ((f = open_memstream(&cbuf, &clen)) == NULL)
			err(1, "open_memstream");
		rv = stand_in(obuf, f);
		fclose(f);
		if (rv == 0) {
			if (ftruncate(conf_fd, 0) == -1 ||
			    pwrite(conf_fd, cbuf, clen, 0) != (ssize_t)clen)
				err(1, "%s", conf_path);
			if ((conf = parse_config(conf_path,
			    AGENCYD_OPT_NOACTION)) == NULL)
				fail("agencyd does not take the import", cbuf,
				    ebuf);
			config_free(conf);
		}
	}
	free(obuf);
	free(ebuf);
	free(cbuf);
	return (0);
}
