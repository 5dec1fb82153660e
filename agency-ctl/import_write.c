/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl import: the runtimes (models whose commands differ only in
 * their own values share one, clustered by the words they share) and
 * the writing of runtimes and models as agency.conf blocks.
 *
 * Calls: import_model.c, import_value.c, lscmd.c, lsmacro.c.
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

static int	str_same(const char *, const char *);
static int	rt_same(const struct imodel *, const struct imodel *);
static void	runtime_add(struct imp *, const size_t *, size_t,
		    const char *);
static int	marked(const struct words *, size_t, size_t, int);
static void	runtimes_cluster(struct imp *, size_t *, size_t, int,
		    const char *);
static void	write_size(FILE *, int64_t);


/*
 * Runtimes: models whose commands and runtime settings are the same
 * share one; so do those whose commands differ only in their own
 * arguments, once agency has %a.
 */

static int
str_same(const char *a, const char *b)
{
	return (a == b || (a != NULL && b != NULL && strcmp(a, b) == 0));
}

static int
rt_same(const struct imodel *a, const struct imodel *b)
{
	return (strcmp(a->argv.w[0], b->argv.w[0]) == 0 &&
	    strcmp(a->kind, b->kind) == 0 && str_same(a->ready, b->ready) &&
	    a->send_upstream == b->send_upstream &&
	    a->progress == b->progress && str_same(a->stop, b->stop) &&
	    words_equal(&a->strip, &b->strip));
}

static void
runtime_add(struct imp *imp, const size_t *idx, size_t n, const char *cmd)
{
	struct iruntime	*r, *nr;
	struct imodel	*m = &imp->m[idx[0]];
	char		 base[AGENCY_NAME_MAX];
	size_t		 i, j;
	int		 k;

	if ((nr = reallocarray(imp->rt, imp->nrt + 1, sizeof(*nr))) == NULL) {
		imp_err(imp, 0, "out of memory");
		return;
	}
	imp->rt = nr;
	r = &imp->rt[imp->nrt];
	memset(r, 0, sizeof(*r));
	r->model = idx[0];
	/* Shared, by its program's name; a model's own, by the model's. */
	if (strlcpy(base, n > 1 || cmd != NULL ? prog_base(m) : m->id,
	    sizeof(base)) >= sizeof(base) || base[0] == '\0')
		(void)strlcpy(base, "runtime", sizeof(base));
	(void)strlcpy(r->name, base, sizeof(r->name));
	for (k = 2;; k++) {
		for (j = 0; j < imp->nrt; j++)
			if (strcmp(imp->rt[j].name, r->name) == 0)
				break;
		if (j == imp->nrt)
			break;
		(void)snprintf(r->name, sizeof(r->name), "%.*s-%d",
		    (int)sizeof(base) - 12, base, k);
	}
	if (cmd != NULL)
		(void)strlcpy(r->command, cmd, sizeof(r->command));
	else
		(void)words_template(&m->argv, 0, m->argv.n, r->command,
		    sizeof(r->command));
	for (i = 0; i < n; i++)
		imp->m[idx[i]].rt = imp->nrt;
	imp->nrt++;
}

/* Whether a word of argv from i to j (excluded) has a marker. */
static int
marked(const struct words *w, size_t i, size_t j, int mark)
{
	for (; i < j; i++)
		if (word_marked(w->w[i], mark))
			return (1);
	return (0);
}

/*
 * Whether the models idx share a command but for their own arguments:
 * the common words hold %p, and what differs no marker.  Then shared
 * is the command with %a and each model's args are set.
 */
int
share(struct imp *imp, const size_t *idx, size_t n, char *shared,
    size_t len)
{
	const struct words	*set[CLUSTER_MAX];
	struct imodel		*x = &imp->m[idx[0]];
	char			 a[AGENCY_CMD_MAX], b[AGENCY_CMD_MAX];
	size_t			 pre, suf, k, w;

	if (n < 2 || n > CLUSTER_MAX)
		return (0);
	for (k = 0; k < n; k++)
		set[k] = &imp->m[idx[k]].argv;
	words_common(set, n, &pre, &suf);
	if (!marked(&x->argv, 0, pre, MARK_PORT) &&
	    !marked(&x->argv, x->argv.n - suf, x->argv.n, MARK_PORT))
		return (0);
	for (k = 0; k < n; k++) {
		w = set[k]->n - suf;
		if (marked(set[k], pre, w, MARK_PORT) ||
		    marked(set[k], pre, w, MARK_MODEL) ||
		    marked(set[k], pre, w, MARK_UPSTREAM))
			return (0);
	}
	if (words_template(&x->argv, 0, pre, a, sizeof(a)) == -1 ||
	    words_template(&x->argv, x->argv.n - suf, x->argv.n, b,
	    sizeof(b)) == -1 || (size_t)snprintf(shared, len, "%s %%a%s%s", a,
	    suf > 0 ? " " : "", b) >= len)
		return (0);
	for (k = 0; k < n; k++) {
		x = &imp->m[idx[k]];
		free(x->args);
		x->args = NULL;
		if (set[k]->n - suf > pre && words_template(set[k], pre,
		    set[k]->n - suf, a, sizeof(a)) == 0)
			x->args = strdup(a);
	}
	return (1);
}

/* The runtimes of a cluster: models that share, or one. */
static void
runtimes_cluster(struct imp *imp, size_t *c, size_t nc, int ok,
    const char *shared)
{
	struct imodel	*m = imp->m;
	size_t		 sub[CLUSTER_MAX], ns, first, j, k, o = 0;
	char		 names[1024];

	if (ok && imp->o->features.args) {
		runtime_add(imp, c, nc, shared);
		return;
	}
	/* Without %a, one runtime a command. */
	first = imp->nrt;
	for (k = 0; k < nc; k++) {
		if (m[c[k]].rt != (size_t)-1)
			continue;
		ns = 0;
		for (j = k; j < nc; j++)
			if (m[c[j]].rt == (size_t)-1 &&
			    words_equal(&m[c[k]].argv, &m[c[j]].argv))
				sub[ns++] = c[j];
		runtime_add(imp, sub, ns, NULL);
	}
	if (!ok || imp->nrt - first < 2)
		return;
	names[0] = '\0';
	for (j = first; j < imp->nrt; j++)
		o += snprintf(names + o, o < sizeof(names) ? sizeof(names) - o :
		    0, "%s\"%s\"", j == first ? "" : j + 1 == imp->nrt ?
		    " and " : ", ", imp->rt[j].name);
	imp->rt[first].shared = strdup(shared);
	imp->rt[first].others = strdup(names);
	imp_note(imp, NULL, "", m[c[0]].line, NULL, "runtimes %s are one "
	    "once agency has a model's own arguments (%%a)", names);
}

/*
 * Models with the same program and runtime settings, in clusters: each
 * model with those after it that share its command but for their own
 * arguments (greedy, over at most CLUSTER_MAX models a group).
 */
void
runtimes_make(struct imp *imp)
{
	struct imodel	*m = imp->m;
	size_t		 grp[CLUSTER_MAX], c[CLUSTER_MAX], ng, nc, i, j, k;
	char		 shared[AGENCY_CMD_MAX], *done;
	int		 ok;

	if ((done = calloc(imp->nm + 1, 1)) == NULL) {
		imp_err(imp, 0, "out of memory");
		return;
	}
	for (i = 0; i < imp->nm; i++) {
		if (m[i].skip || done[i])
			continue;
		ng = 0;
		for (j = i; j < imp->nm && ng < CLUSTER_MAX; j++)
			if (!m[j].skip && !done[j] && rt_same(&m[i], &m[j])) {
				grp[ng++] = j;
				done[j] = 1;
			}
		for (k = 0; k < ng; k++) {
			if (m[grp[k]].rt != (size_t)-1)
				continue;
			c[0] = grp[k];
			nc = 1;
			ok = 0;
			for (j = k + 1; j < ng; j++) {
				if (m[grp[j]].rt != (size_t)-1)
					continue;
				c[nc] = grp[j];
				if (words_equal(&m[c[0]].argv, &m[c[nc]].argv) ||
				    share(imp, c, nc + 1, shared,
				    sizeof(shared)))
					nc++;
			}
			/* The cluster's own: one command, or shared. */
			for (j = 1; j < nc; j++)
				if (!words_equal(&m[c[0]].argv, &m[c[j]].argv))
					break;
			if (j < nc)
				ok = share(imp, c, nc, shared, sizeof(shared));
			if (!ok)
				for (j = 0; j < nc; j++) {
					free(m[c[j]].args);
					m[c[j]].args = NULL;
				}
			runtimes_cluster(imp, c, nc, ok, shared);
		}
	}
	free(done);
}

/*
 * Writing.
 */

static void
write_size(FILE *f, int64_t bytes)
{
	if (bytes % (1024LL * 1024 * 1024) == 0)
		fprintf(f, "%lldG", (long long)(bytes >> 30));
	else
		fprintf(f, "%lldM", (long long)(bytes >> 20));
}

void
write_runtime(struct imp *imp, FILE *f, const struct iruntime *r)
{
	const struct imodel	*m = &imp->m[r->model];
	char			 text[AGENCY_CMD_MAX + 256];
	size_t			 i;

	fprintf(f, "runtime ");
	put_str(f, r->name);
	fprintf(f, " {\n");
	if (r->shared != NULL) {
		(void)snprintf(text, sizeof(text), "Runtimes %s are one once "
		    "agency has a model's own arguments (%%a, not there yet), "
		    "with the command \"%s\" and each model's own args.",
		    r->others, r->shared);
		put_comment(f, "\t", text);
	}
	fprintf(f, "\tcommand ");
	put_str(f, r->command);
	fputc('\n', f);
	if (m->ready != NULL) {
		fprintf(f, "\tready get ");
		put_str(f, m->ready);
		fputc('\n', f);
	}
	if (strcmp(m->kind, "chat") != 0)
		fprintf(f, "\tkind %s\n", m->kind);
	if (m->send_upstream)
		fprintf(f, "\tsend model upstream\n");
	if (m->progress != -1)
		fprintf(f, "\tloading progress %s\n", m->progress ? "yes" :
		    "no");
	/* Phase 2: statements of features not on main yet. */
	if (imp->o->features.stop && m->stop != NULL) {
		fprintf(f, "\tstop ");
		put_str(f, m->stop);
		fputc('\n', f);
	}
	for (i = 0; imp->o->features.strip && i < m->strip.n; i++) {
		fprintf(f, "\tstrip ");
		put_str(f, m->strip.w[i]);
		fputc('\n', f);
	}
	fprintf(f, "}\n\n");
}

void
write_model(struct imp *imp, FILE *f, const struct imodel *m)
{
	char	 text[AGENCY_CMD_MAX + 64];
	size_t	 i;

	if (m->skip) {
		(void)snprintf(text, sizeof(text), "llama-swap's model \"%s\" "
		    "is not carried over: %s.", m->id, m->skipwhy != NULL ?
		    m->skipwhy : "");
		put_comment(f, "", text);
		fputc('\n', f);
		return;
	}
	fprintf(f, "model ");
	put_str(f, m->id);
	fprintf(f, " {\n\truntime ");
	put_str(f, imp->rt[m->rt].name);
	fprintf(f, "\n\tupstream ");
	put_str(f, m->upstream);
	fprintf(f, "\n\tlazy\n");
	if (m->memory > 0) {
		if (m->memory_why != NULL)
			put_comment(f, "\t", m->memory_why);
		fprintf(f, "\tmemory ");
		write_size(f, m->memory);
		fputc('\n', f);
	}
	if (m->idle >= 0)
		fprintf(f, "\tidle timeout %llds\n", (long long)m->idle);
	if (m->max_requests > 0)
		fprintf(f, "\tmax requests %lld\n", m->max_requests);
	for (i = 0; i < m->aliases.n; i++) {
		fprintf(f, "\talias ");
		put_str(f, m->aliases.w[i]);
		fputc('\n', f);
	}
	for (i = 0; i < m->env.n; i++) {
		fprintf(f, "\tenv ");
		put_str(f, m->env.w[i]);
		fputc('\n', f);
	}
	/* Phase 2: statements of features not on main yet. */
	if (m->args != NULL && imp->o->features.args) {
		fprintf(f, "\targs ");
		put_str(f, m->args);
		fputc('\n', f);
	} else if (m->args != NULL) {
		(void)snprintf(text, sizeof(text), "its own arguments, once "
		    "agency has %%a: args \"%s\"", m->args);
		put_comment(f, "\t", text);
	}
	if (m->preload && imp->o->features.preload)
		fprintf(f, "\tpreload\n");
	if (m->unlisted && imp->o->features.unlisted)
		fprintf(f, "\tunlisted\n");
	fflush(m->notesf);
	if (m->noteslen > 0)
		fwrite(m->notes, 1, m->noteslen, f);
	fprintf(f, "}\n\n");
}

void
imodel_free(struct imodel *m)
{
	free(m->id);
	free(m->skipwhy);
	macros_free(&m->scope);
	words_free(&m->argv);
	free(m->file);
	free(m->upstream);
	free(m->ready);
	free(m->stop);
	words_free(&m->strip);
	words_free(&m->aliases);
	words_free(&m->env);
	free(m->memory_why);
	if (m->notesf != NULL)
		fclose(m->notesf);
	free(m->notes);
	free(m->args);
}
