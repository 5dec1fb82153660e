/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl import llama-swap FILE: a llama-swap configuration made an
 * agency.conf.  This file holds the entry points and the order of the
 * work; import_priv.h lists the importer's other files.  The file is read into a tree (yamlread.c), llama-swap's
 * macros are expanded by its rules (lsmacro.c), each model's cmd is
 * split into words (lscmd.c) where ${PORT}, ${MODEL_ID} and the model's
 * file become %p, %m and %u, and models whose commands differ only in
 * their own values share one runtime.  Whatever agency cannot carry
 * over is written as a comment where it would have gone, and said
 * again on standard error with the line it came from.  What llama-swap
 * itself refuses, and what the reader's bounds refuse, are errors
 * (FILE:LINE: message); then nothing is written.
 *
 * The statements that agency.conf does not have yet (struct
 * import_features) are written as comments; each place that depends on
 * one tests its flag, so that switching it on in import_defaults()
 * writes the statement instead.
 *
 * Calls: import_global.c, import_model.c, import_value.c,
 * import_write.c, lscmd.c, lsmacro.c, yamlread.c.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "import.h"
#include "import_priv.h"
#include "sha256.h"

void
import_defaults(struct import_opts *o)
{
	memset(o, 0, sizeof(*o));
	/* Phase 2 switches these on as the features reach main. */
	o->features.args = 0;
	o->features.preload = 0;
	o->features.unlisted = 0;
	o->features.strip = 0;
	o->features.stop = 0;
	o->name = "-";
}

/*
 * The configuration made onto out, and on errf what was said about it
 * and a summary: -1 when out cannot be written.
 */
static int
write_conf(struct imp *imp, FILE *out, FILE *errf, size_t nmodels,
    size_t naliases)
{
	size_t		 i, nnotes;

	fprintf(out, "# agency.conf from the llama-swap configuration %s\n"
	    "# (agency-ctl import llama-swap).  The comments say what was "
	    "not\n# carried over, and why.  llama-swap listens where its "
	    "-listen\n# says (:8080, every address, by default); agency "
	    "listens on\n# 127.0.0.1 port 8080 unless a listen statement "
	    "says otherwise.\n\n", strcmp(imp->o->name, "-") == 0 ?
	    "on standard input" : imp->o->name);
	fflush(imp->glob.f);
	if (imp->glob.len > 0) {
		fwrite(imp->glob.buf, 1, imp->glob.len, out);
		fputc('\n', out);
	}
	for (i = 0; i < imp->nrt; i++)
		write_runtime(imp, out, &imp->rt[i]);
	for (i = 0; i < imp->nm; i++)
		write_model(imp, out, &imp->m[i]);
	fflush(imp->keys.f);
	fwrite(imp->keys.buf, 1, imp->keys.len, out);
	fflush(imp->trail.f);
	fwrite(imp->trail.buf, 1, imp->trail.len, out);
	if (fflush(out) == EOF || ferror(out)) {
		imp_err(imp, 0, "cannot write: %s", strerror(errno));
		return (-1);
	}
	nnotes = imp->notes.n;
	notes_print(&imp->notes, imp->o->name, errf);
	fprintf(errf, "%s: %zu model%s in %zu runtime%s, %zu alias%s, %d "
	    "key%s; %zu thing%s not carried over (see the comments)\n",
	    imp->o->name, nmodels, nmodels == 1 ? "" : "s", imp->nrt,
	    imp->nrt == 1 ? "" : "s", naliases, naliases == 1 ? "" : "es",
	    imp->nkeys, imp->nkeys == 1 ? "" : "s", nnotes,
	    nnotes == 1 ? "" : "s");
	return (0);
}

int
import_llama_swap(const char *buf, size_t len, const struct import_opts *o,
    FILE *out, FILE *errf)
{
	struct imp		 imp;
	struct ynode		*root;
	const struct ynode	*models, *mkey = NULL;
	char			 err[512], cmd[AGENCY_CMD_MAX];
	size_t			 i, nmodels = 0, naliases = 0;
	int			 line, rv = -1;

	memset(&imp, 0, sizeof(imp));
	imp.o = o;
	imp.progress = -1;
	root = NULL;
	if (len > YAML_FILE_MAX) {
		imp_err(&imp, 0, "larger than %d bytes", YAML_FILE_MAX);
		goto done;
	}
	if ((root = ytree_read(buf, len, &line, err, sizeof(err))) == NULL) {
		imp_err(&imp, line, "%s", err);
		goto done;
	}
	if (sect_open(&imp.glob) == -1 || sect_open(&imp.keys) == -1 ||
	    sect_open(&imp.trail) == -1) {
		imp_err(&imp, 0, "out of memory");
		goto done;
	}
	if (root->kind != YN_MAP) {
		imp_err(&imp, root->line, "the file is %s, not llama-swap's "
		    "mapping of settings", ynode_what(root));
		goto done;
	}
	read_macros(&imp, ymap_get(root, "macros", NULL), &imp.gm, NULL);
	if ((models = ymap_get(root, "models", &mkey)) == NULL ||
	    ynode_null(models)) {
		imp_err(&imp, root->line, "no models");
		goto done;
	}
	if (imp.nerr == 0)
		read_models(&imp, models);
	for (i = 0; i + 1 < root->nkid; i += 2)
		read_global(&imp, root->kid[i], root->kid[i + 1]);
	read_routing(&imp, root, mkey);
	for (i = 0; i < imp.nm; i++) {
		imp.m[i].rt = (size_t)-1;
		if (!imp.m[i].skip) {
			nmodels++;
			naliases += imp.m[i].aliases.n;
		}
		/* A command agency.conf cannot hold: no model. */
		if (!imp.m[i].skip && words_template(&imp.m[i].argv, 0,
		    imp.m[i].argv.n, cmd, sizeof(cmd)) == -1) {
			model_skip(&imp, &imp.m[i], imp.m[i].line, "its "
			    "command is longer than agency's %d bytes, or has "
			    "a line's end in a word", AGENCY_CMD_MAX - 1);
			nmodels--;
			naliases -= imp.m[i].aliases.n;
		}
	}
	if (naliases > 0 && !imp.include_aliases)
		imp_note(&imp, imp.glob.f, "", mkey->line, NULL, "aliases: "
		    "agency's /v1/models lists them, which llama-swap does "
		    "only with includeAliasesInList");
	if (imp.nerr > 0)
		goto done;
	if (nmodels == 0) {
		imp_err(&imp, mkey->line, "no model could be carried over, "
		    "and agency.conf needs one");
		goto done;
	}
	runtimes_make(&imp);
	if (imp.nerr > 0)
		goto done;
	if (write_conf(&imp, out, errf, nmodels, naliases) == -1)
		goto done;
	rv = 0;
 done:
	for (i = 0; i < imp.nm; i++)
		imodel_free(&imp.m[i]);
	free(imp.m);
	for (i = 0; i < imp.nrt; i++) {
		free(imp.rt[i].shared);
		free(imp.rt[i].others);
	}
	free(imp.rt);
	macros_free(&imp.gm);
	sect_close(&imp.glob);
	sect_close(&imp.keys);
	sect_close(&imp.trail);
	notes_print(&imp.errs, o->name, errf);
	notes_print(&imp.notes, o->name, NULL);
	ytree_free(root);
	return (rv);
}

int
import_llama_swap_file(const char *path, const struct import_opts *o,
    FILE *out, FILE *errf)
{
	struct stat	 st;
	char		*buf;
	size_t		 len = 0;
	ssize_t		 n;
	int		 fd, rv;

	if (strcmp(path, "-") == 0)
		fd = STDIN_FILENO;
	else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		fprintf(errf, "%s: %s\n", path, strerror(errno));
		return (-1);
	}
	if (fstat(fd, &st) == -1 || (fd != STDIN_FILENO && !S_ISREG(st.st_mode))) {
		fprintf(errf, "%s: not a regular file\n", path);
		if (fd != STDIN_FILENO)
			close(fd);
		return (-1);
	}
	/* One byte more than the bound tells a file that is too large. */
	if ((buf = malloc(YAML_FILE_MAX + 1)) == NULL) {
		fprintf(errf, "%s: out of memory\n", path);
		if (fd != STDIN_FILENO)
			close(fd);
		return (-1);
	}
	while (len <= YAML_FILE_MAX &&
	    (n = read(fd, buf + len, YAML_FILE_MAX + 1 - len)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			fprintf(errf, "%s: %s\n", path, strerror(errno));
			free(buf);
			if (fd != STDIN_FILENO)
				close(fd);
			return (-1);
		}
		len += n;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	rv = import_llama_swap(buf, len, o, out, errf);
	free(buf);
	return (rv);
}
