/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The normalized configuration, as "agencyd -nv" prints it: a fixed order,
 * one statement a line, canonical units.  Parsing the output gives the
 * same configuration, and printing that gives the same text.  The
 * global settings go by common/config.c's table.  It calls no other
 * file of agencyd.
 *
 * Calls: common/config.c, common/sha256.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <netinet/in.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "agencyd.h"
#include "sha256.h"

static void	print_string(FILE *, const char *);
static void	print_size(FILE *, int64_t);
static void	print_duration(FILE *, int64_t);
static void	print_strlist(FILE *, const char *, const struct strlist *);
static void	print_runtime(FILE *, const struct agency_conf *,
		    const struct runtime_conf *);
static void	print_model(FILE *, const struct agency_conf *,
		    const struct model_conf *);
static void	print_listen(FILE *, const struct listen_conf *);
static void	print_names(FILE *, const struct strlist *);
static void	print_key(FILE *, const struct key_conf *);
static void	print_allow(FILE *, const struct allow_conf *);
static void	print_global(FILE *, const struct agency_conf *,
		    const struct conf_global *);

static void
print_string(FILE *fp, const char *s)
{
	fputc('"', fp);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', fp);
		fputc(*s, fp);
	}
	fputc('"', fp);
}

/* The largest unit that divides the size exactly. */
static void
print_size(FILE *fp, int64_t v)
{
	static const struct {
		char	 suffix;
		int	 shift;
	} units[] = { { 'T', 40 }, { 'G', 30 }, { 'M', 20 }, { 'K', 10 } };
	size_t	 i;

	for (i = 0; v != 0 && i < sizeof(units) / sizeof(units[0]); i++) {
		if (v % (1LL << units[i].shift) == 0) {
			fprintf(fp, "%" PRId64 "%c", v >> units[i].shift,
			    units[i].suffix);
			return;
		}
	}
	fprintf(fp, "%" PRId64, v);
}

/* The largest unit that divides the duration (in ms) exactly. */
static void
print_duration(FILE *fp, int64_t ms)
{
	if (ms == 0)
		fprintf(fp, "0s");
	else if (ms % (60 * 60 * 1000) == 0)
		fprintf(fp, "%" PRId64 "h", ms / (60 * 60 * 1000));
	else if (ms % (60 * 1000) == 0)
		fprintf(fp, "%" PRId64 "m", ms / (60 * 1000));
	else if (ms % 1000 == 0)
		fprintf(fp, "%" PRId64 "s", ms / 1000);
	else
		fprintf(fp, "%" PRId64 "ms", ms);
}

static void
print_strlist(FILE *fp, const char *keyword, const struct strlist *list)
{
	const struct strent	*se;

	TAILQ_FOREACH(se, list, entry) {
		fprintf(fp, "\t%s ", keyword);
		print_string(fp, se->s);
		fputc('\n', fp);
	}
}

/* A loading progress equal to the global one is left to it. */
static void
print_runtime(FILE *fp, const struct agency_conf *conf,
    const struct runtime_conf *rt)
{
	static const char	*kinds[] = {
		[KIND_CHAT] = "chat",
		[KIND_EMBEDDING] = "embedding",
		[KIND_SPEECH] = "speech",
		[KIND_IMAGE] = "image",
		[KIND_VISION] = "vision",
		[KIND_RERANK] = "rerank",
		[KIND_TRANSCRIPTION] = "transcription",
	};
	static const char	*stops[] = {
		[STOPS_ALWAYS] = "always",
		[STOPS_NEVER] = "never",
		[STOPS_STREAM] = "stream",
	};
	static const char	*sends[] = {
		[SEND_NAME] = "name",
		[SEND_UPSTREAM] = "upstream",
		[SEND_UNCHANGED] = "unchanged",
	};
	const struct rule_move	*mv;

	fprintf(fp, "runtime ");
	print_string(fp, rt->name);
	fprintf(fp, " {\n\tcommand ");
	print_string(fp, rt->command);
	fprintf(fp, "\n\tready %s ",
	    rt->ready_method == READY_POST ? "post" : "get");
	print_string(fp, rt->ready_path);
	if (rt->ready_method == READY_POST && rt->ready_body[0] != '\0') {
		fprintf(fp, " body ");
		print_string(fp, rt->ready_body);
	}
	fprintf(fp, "\n\tkind %s\n", kinds[rt->kind]);
	fprintf(fp, "\tstops on close %s\n", stops[rt->stops]);
	fprintf(fp, "\tsend model %s\n", sends[rt->send_model]);
	if (rt->progress != conf->progress)
		fprintf(fp, "\tloading progress %s\n",
		    rt->progress ? "yes" : "no");
	if (rt->max_tokens != 0)
		fprintf(fp, "\tmax tokens %" PRId64 "\n", rt->max_tokens);
	if (rt->passthrough)
		fprintf(fp, "\tpassthrough yes\n");
	print_strlist(fp, "env", &rt->env);
	print_strlist(fp, "route", &rt->routes);
	print_strlist(fp, "part", &rt->parts);
	TAILQ_FOREACH(mv, &rt->moves, entry) {
		fprintf(fp, "\tmove ");
		print_string(fp, mv->from);
		fprintf(fp, " to ");
		print_string(fp, mv->to);
		fputc('\n', fp);
	}
	print_strlist(fp, "refuse", &rt->refuse);
	fprintf(fp, "}\n");
}

/* Timeouts equal to the global defaults are left to them. */
static void
print_model(FILE *fp, const struct agency_conf *conf,
    const struct model_conf *m)
{
	fprintf(fp, "model ");
	print_string(fp, m->name);
	fprintf(fp, " {\n\truntime ");
	print_string(fp, m->runtime);
	fprintf(fp, "\n\tupstream ");
	print_string(fp, m->upstream);
	fputc('\n', fp);
	if (m->lazy)
		fprintf(fp, "\tlazy\n");
	if (m->memory != 0) {
		fprintf(fp, "\tmemory ");
		print_size(fp, m->memory);
		fputc('\n', fp);
	}
	if (m->lazy && m->idle_timeout != conf->idle_timeout) {
		fprintf(fp, "\tidle timeout ");
		print_duration(fp, m->idle_timeout);
		fputc('\n', fp);
	}
	if (m->load_timeout != conf->load_timeout) {
		fprintf(fp, "\tload timeout ");
		print_duration(fp, m->load_timeout);
		fputc('\n', fp);
	}
	if (m->max_tokens != 0)
		fprintf(fp, "\tmax tokens %" PRId64 "\n", m->max_tokens);
	if (m->queue_timeout != conf->queue_timeout) {
		fprintf(fp, "\tqueue timeout ");
		print_duration(fp, m->queue_timeout);
		fputc('\n', fp);
	}
	if (m->max_queue != 0)
		fprintf(fp, "\tmax queue %" PRId64 "\n", m->max_queue);
	if (m->max_requests != 0)
		fprintf(fp, "\tmax requests %" PRId64 "\n", m->max_requests);
	print_strlist(fp, "alias", &m->aliases);
	print_strlist(fp, "env", &m->env);
	fprintf(fp, "}\n");
}

static void
print_listen(FILE *fp, const struct listen_conf *lc)
{
	if (lc->path[0] != '\0') {
		fprintf(fp, "listen on ");
		print_string(fp, lc->path);
		if (lc->owner[0] != '\0') {
			fprintf(fp, " owner ");
			print_string(fp, lc->owner);
		}
		if (lc->group[0] != '\0') {
			fprintf(fp, " group ");
			print_string(fp, lc->group);
		}
		fprintf(fp, " mode %04o\n", (unsigned int)lc->mode);
		return;
	}
	fprintf(fp, "listen on %s port %u", lc->host, lc->port);
	if (!lc->tls)
		fputc('\n', fp);
	else if (!lc->tls_own)
		fprintf(fp, " tls\n");
	else {
		fprintf(fp, " tls {\n\ttls certificate ");
		print_string(fp, lc->tlsf.cert);
		fprintf(fp, "\n\ttls key ");
		print_string(fp, lc->tlsf.key);
		fprintf(fp, "\n}\n");
	}
}

/* A list of models on the line of its statement. */
static void
print_names(FILE *fp, const struct strlist *list)
{
	const struct strent	*se;

	TAILQ_FOREACH(se, list, entry) {
		fputc(' ', fp);
		print_string(fp, se->s);
	}
}

/* A key's secret as it was written: its file, or its digest. */
static void
print_key(FILE *fp, const struct key_conf *k)
{
	char	hex[SHA256_HEXLEN];

	fprintf(fp, "key ");
	print_string(fp, k->name);
	if (k->secret_file[0] != '\0') {
		fprintf(fp, " {\n\tsecret file ");
		print_string(fp, k->secret_file);
	} else {
		sha256_hex(k->digest, hex);
		fprintf(fp, " {\n\tsecret sha256 \"%s\"", hex);
	}
	fputc('\n', fp);
	if (!TAILQ_EMPTY(&k->models)) {
		fprintf(fp, "\tmodels");
		print_names(fp, &k->models);
		fputc('\n', fp);
	}
	if (k->admin)
		fprintf(fp, "\tadmin\n");
	if (k->max_requests != 0)
		fprintf(fp, "\tmax requests %" PRId64 "\n", k->max_requests);
	fprintf(fp, "}\n");
}

static void
print_allow(FILE *fp, const struct allow_conf *a)
{
	fprintf(fp, "allow %s ", a->kind == ALLOW_USER ? "user" : "group");
	print_string(fp, a->name);
	if (!TAILQ_EMPTY(&a->models)) {
		fprintf(fp, " models");
		print_names(fp, &a->models);
	}
	if (a->admin)
		fprintf(fp, " admin");
	fputc('\n', fp);
}

/* A global setting as conf_globals[] describes it. */
static void
print_global(FILE *fp, const struct agency_conf *conf,
    const struct conf_global *g)
{
	const char		*f = (const char *)conf + g->off;
	const int64_t		*v = (const int64_t *)(const void *)f;
	const int		*b = (const int *)(const void *)f;
	const in_port_t		*lo = (const in_port_t *)(const void *)f;
	const in_port_t		*hi = (const in_port_t *)(const void *)
				    ((const char *)conf + g->off2);
	const struct strent	*se;

	fprintf(fp, "%s", g->keyword);
	switch (g->kind) {
	case CK_SIZE:
		fputc(' ', fp);
		print_size(fp, *v);
		break;
	case CK_DURATION:
		fputc(' ', fp);
		print_duration(fp, *v);
		break;
	case CK_NUMBER:
		fprintf(fp, " %" PRId64, *v);
		break;
	case CK_BOOL:
		fprintf(fp, " %s", *b ? "yes" : "no");
		break;
	case CK_STRING:
		fputc(' ', fp);
		print_string(fp, f);
		break;
	case CK_NAMES:
		/* a line each, the keyword on each */
		TAILQ_FOREACH(se, (const struct strlist *)(const void *)f,
		    entry) {
			if (se != TAILQ_FIRST((const struct strlist *)
			    (const void *)f))
				fprintf(fp, "\n%s", g->keyword);
			fputc(' ', fp);
			print_string(fp, se->s);
		}
		break;
	case CK_PORTS:
		fprintf(fp, " %u to %u", *lo, *hi);
		break;
	case CK_FLAG:
	default:
		break;
	}
	fputc('\n', fp);
}

/*
 * Everything is printed, defaults included, except what has no written
 * form (an automatic reserve, no budget, no idle timeout, no default
 * model) and the control socket when it is the default: that one depends
 * on who runs agencyd.  The global settings follow conf_globals[].
 */
void
print_config(FILE *fp, const struct agency_conf *conf)
{
	const struct listen_conf	*lc;
	const struct runtime_conf	*rt;
	const struct model_conf		*m;
	const struct key_conf		*k;
	const struct allow_conf		*a;
	const struct conf_global	*g;
	char				 defsock[sizeof(conf->socket)];

	TAILQ_FOREACH(lc, &conf->listens, entry)
		print_listen(fp, lc);
	if (conf->tls.cert[0] != '\0') {
		fprintf(fp, "tls certificate ");
		print_string(fp, conf->tls.cert);
		fprintf(fp, "\ntls key ");
		print_string(fp, conf->tls.key);
		fputc('\n', fp);
	}
	if (config_default_socket(defsock, sizeof(defsock)) == -1 ||
	    strcmp(defsock, conf->socket) != 0) {
		fprintf(fp, "socket ");
		print_string(fp, conf->socket);
		fputc('\n', fp);
	}
	if (conf->rsocket[0] != '\0') {
		fprintf(fp, "socket ");
		print_string(fp, conf->rsocket);
		fprintf(fp, " restricted\n");
	}
	for (g = conf_globals; g->keyword != NULL; g++)
		if (g->print == CP_ALWAYS || !config_global_default(g, conf))
			print_global(fp, conf, g);

	TAILQ_FOREACH(rt, &conf->runtimes, entry) {
		fputc('\n', fp);
		print_runtime(fp, conf, rt);
	}
	TAILQ_FOREACH(m, &conf->models, entry) {
		fputc('\n', fp);
		print_model(fp, conf, m);
	}
	TAILQ_FOREACH(k, &conf->keys, entry) {
		fputc('\n', fp);
		print_key(fp, k);
	}
	if (!TAILQ_EMPTY(&conf->allows))
		fputc('\n', fp);
	TAILQ_FOREACH(a, &conf->allows, entry)
		print_allow(fp, a);
}
