/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl import: llama-swap's global settings, its API keys, hooks,
 * groups and routing, mapped to agency.conf's global statements or said
 * as notes where agency has none.
 *
 * Calls: import_model.c, import_value.c, lscmd.c, yamlread.c,
 * common/sha256.c.
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

static void	global_ports(struct imp *, const struct ynode *, const char *);
static void	global_log(struct imp *, const struct ynode *, const char *);
static void	read_keys(struct imp *, const struct ynode *);
static void	read_hooks(struct imp *, const struct ynode *);
static void	read_groups(struct imp *, const struct ynode *, int);


/*
 * The rest of the file.
 */

static void
read_keys(struct imp *imp, const struct ynode *n)
{
	struct words	 keys;
	uint8_t		 d[SHA256_LEN];
	char		 hex[SHA256_HEXLEN];
	size_t		 i, j;

	if (get_list(imp, NULL, n, "apiKeys", &keys) == -1)
		return;
	for (i = 0; i < keys.n; i++) {
		if (keys.w[i][0] == '\0') {
			imp_err(imp, n->kid[i]->line, "apiKeys: an empty key");
			continue;
		}
		if (strchr(keys.w[i], ' ') != NULL) {
			imp_err(imp, n->kid[i]->line, "apiKeys: a key with a "
			    "space");
			continue;
		}
		for (j = 0; j < i; j++)
			if (strcmp(keys.w[i], keys.w[j]) == 0)
				break;
		if (j < i)
			continue;	/* the same key once */
		if (imp->nkeys == 0)
			put_comment(imp->keys.f, "", "llama-swap's apiKeys, by "
			    "their SHA-256: agency's admin routes and /metrics "
			    "take only a key with admin.");
		sha256(keys.w[i], strlen(keys.w[i]), d);
		sha256_hex(d, hex);
		fprintf(imp->keys.f, "key \"llama-swap-%d\" {\n\tsecret sha256 "
		    "\"%s\"\n}\n\n", ++imp->nkeys, hex);
	}
	words_free(&keys);
}

static void
read_hooks(struct imp *imp, const struct ynode *n)
{
	const struct ynode	*os, *pl, *k;
	struct imodel		*m;
	struct words		 list;
	size_t			 i;
	char			*s, *e;

	if (ynode_null(n))
		return;
	if (n->kind != YN_MAP) {
		imp_err(imp, n->line, "hooks: a mapping, not %s",
		    ynode_what(n));
		return;
	}
	for (i = 0; i + 1 < n->nkid; i += 2)
		if (strcmp(n->kid[i]->str, "on_startup") != 0)
			imp_note(imp, imp->glob.f, "", n->kid[i]->line, NULL,
			    "hooks.%s: llama-swap's only hook is on_startup",
			    n->kid[i]->str);
	if ((os = ymap_get(n, "on_startup", &k)) == NULL || ynode_null(os))
		return;
	if (os->kind != YN_MAP) {
		imp_err(imp, os->line, "hooks.on_startup: a mapping, not %s",
		    ynode_what(os));
		return;
	}
	if ((pl = ymap_get(os, "preload", &k)) == NULL ||
	    get_list(imp, NULL, pl, "hooks.on_startup.preload", &list) == -1)
		return;
	for (i = 0; i < list.n; i++) {
		s = list.w[i];
		while (*s == ' ' || *s == '\t')
			s++;
		for (e = s + strlen(s); e > s && (e[-1] == ' ' ||
		    e[-1] == '\t'); e--)
			e[-1] = '\0';
		if (*s == '\0')
			continue;
		if ((m = model_find(imp, s)) == NULL || m->skip) {
			imp_note(imp, imp->glob.f, "", pl->kid[i]->line, NULL,
			    "hooks.on_startup.preload: \"%s\" is %s", s,
			    m == NULL ? "no model" : "a model not carried over");
			continue;
		}
		if (m->preload)
			continue;	/* by its name and an alias */
		m->preload = 1;
		if (!imp->o->features.preload)
			imp_note(imp, m->notesf, "\t", pl->kid[i]->line, m->id,
			    "hooks.on_startup.preload: agency loads at start "
			    "only a model that is not lazy, and never stops "
			    "that one to make room (no preload yet)");
	}
	words_free(&list);
}

/* A model group's members: every one once, in one group only. */
static void
read_groups(struct imp *imp, const struct ynode *g, int line)
{
	const struct ynode	*grp, *v;
	struct words		 mem, all, names;
	struct imodel		*m;
	char			 text[2048], field[AGENCY_NAME_MAX + 32];
	size_t			 i, j, k, o;
	int			 swap, excl, pers, ingroup;

	memset(&all, 0, sizeof(all));
	memset(&names, 0, sizeof(names));
	if (!ynode_null(g) && g->kind != YN_MAP) {
		imp_err(imp, g->line, "groups: a mapping, not %s",
		    ynode_what(g));
		return;
	}
	for (i = 0; g != NULL && i + 1 < g->nkid; i += 2) {
		grp = g->kid[i + 1];
		if (grp->kind != YN_MAP) {
			imp_err(imp, grp->line, "group \"%s\": a mapping, not "
			    "%s", g->kid[i]->str, ynode_what(grp));
			continue;
		}
		/* llama-swap's defaults: one at a time, stopping the rest. */
		swap = excl = 1;
		pers = 0;
		(void)snprintf(field, sizeof(field), "group \"%s\": swap",
		    g->kid[i]->str);
		if ((v = ymap_get(grp, "swap", NULL)) != NULL)
			(void)get_bool(imp, NULL, v, field, &swap);
		(void)snprintf(field, sizeof(field), "group \"%s\": exclusive",
		    g->kid[i]->str);
		if ((v = ymap_get(grp, "exclusive", NULL)) != NULL)
			(void)get_bool(imp, NULL, v, field, &excl);
		(void)snprintf(field, sizeof(field), "group \"%s\": persistent",
		    g->kid[i]->str);
		if ((v = ymap_get(grp, "persistent", NULL)) != NULL)
			(void)get_bool(imp, NULL, v, field, &pers);
		(void)snprintf(field, sizeof(field), "group \"%s\": members",
		    g->kid[i]->str);
		v = ymap_get(grp, "members", NULL);
		if (v == NULL || get_list(imp, NULL, v, field, &mem) == -1)
			continue;
		o = 0;
		text[0] = '\0';
		for (j = 0; j < mem.n; j++) {
			for (k = 0; k < j; k++)
				if (strcmp(mem.w[k], mem.w[j]) == 0)
					break;
			if (k < j) {
				imp_err(imp, v->kid[j]->line, "group \"%s\": "
				    "model \"%s\" twice", g->kid[i]->str,
				    mem.w[j]);
				continue;
			}
			for (k = 0; k < all.n; k++)
				if (strcmp(all.w[k], mem.w[j]) == 0)
					break;
			if (k < all.n) {
				imp_err(imp, v->kid[j]->line, "model \"%s\" is "
				    "in two groups: %s and %s", mem.w[j],
				    names.w[k], g->kid[i]->str);
				continue;
			}
			(void)words_add(&all, mem.w[j]);
			(void)words_add(&names, g->kid[i]->str);
			m = model_find(imp, mem.w[j]);
			o += snprintf(text + o, o < sizeof(text) ?
			    sizeof(text) - o : 0, "%s\"%s\"%s", j > 0 ? ", " :
			    "", mem.w[j], m == NULL ? " (no such model)" :
			    m->skip ? " (not carried over)" : "");
		}
		words_free(&mem);
		for (j = 0; j + 1 < grp->nkid; j += 2)
			if (strcmp(grp->kid[j]->str, "swap") != 0 &&
			    strcmp(grp->kid[j]->str, "exclusive") != 0 &&
			    strcmp(grp->kid[j]->str, "persistent") != 0 &&
			    strcmp(grp->kid[j]->str, "members") != 0)
				imp_note(imp, imp->trail.f, "",
				    grp->kid[j]->line, NULL, "group \"%s\": "
				    "%s: not a setting of a group; left out",
				    g->kid[i]->str, grp->kid[j]->str);
		imp_note(imp, imp->trail.f, "", g->kid[i]->line, NULL, "group "
		    "\"%s\" (%s; %s%s): %s. agency has no groups yet: these "
		    "models load side by side while memory allows.",
		    g->kid[i]->str, swap ? "one member at a time" :
		    "its members together", excl ? "loading one stops the "
		    "other groups" : "other groups stay", pers ? "; other "
		    "groups never stop it" : "", o > 0 ? text : "no members");
	}
	/* The rest are in llama-swap's default group: one at a time. */
	o = 0;
	k = 0;
	text[0] = '\0';
	for (i = 0; i < imp->nm; i++) {
		ingroup = 0;
		for (j = 0; j < all.n; j++)
			if (strcmp(all.w[j], imp->m[i].id) == 0)
				ingroup = 1;
		if (ingroup || imp->m[i].skip)
			continue;
		o += snprintf(text + o, o < sizeof(text) ? sizeof(text) - o :
		    0, "%s\"%s\"", k++ > 0 ? ", " : "", imp->m[i].id);
	}
	if (all.n > 0 && k > 0)
		imp_note(imp, imp->trail.f, "", line, NULL, "the models in no "
		    "group, %s, are llama-swap's default group (one member at "
		    "a time; loading one stops the other groups). agency has "
		    "no groups yet: these models load side by side while "
		    "memory allows.", text);
	else if (all.n == 0 && k > 1)
		imp_note(imp, imp->trail.f, "", line, NULL, "llama-swap runs "
		    "one of these models at a time, having no groups here: "
		    "%s. agency runs side by side the models that fit in "
		    "memory, and memory budget bounds them.", text);
	words_free(&all);
	words_free(&names);
}

/* groups and matrix, at the top (older files) or under routing. */
void
read_routing(struct imp *imp, const struct ynode *root,
    const struct ynode *models)
{
	const struct ynode	*g, *mx, *r, *router = NULL, *use = NULL;
	const struct ynode	*set = NULL, *sg = NULL, *smx = NULL, *sch;
	const struct ynode	*v;
	char			*u = NULL;
	int			 legacy, line = models != NULL ? models->line :
				    1;

	g = ymap_get(root, "groups", NULL);
	mx = ymap_get(root, "matrix", NULL);
	legacy = (!ynode_null(g) && g->nkid > 0) || !ynode_null(mx);
	if ((r = ymap_get(root, "routing", NULL)) != NULL && !ynode_null(r)) {
		if (r->kind != YN_MAP) {
			imp_err(imp, r->line, "routing: a mapping, not %s",
			    ynode_what(r));
			return;
		}
		router = ymap_get(r, "router", NULL);
		use = ymap_get(router, "use", NULL);
		set = ymap_get(router, "settings", NULL);
		sg = ymap_get(set, "groups", NULL);
		smx = ymap_get(set, "matrix", NULL);
		if ((sch = ymap_get(r, "scheduler", NULL)) != NULL) {
			if ((v = ymap_get(sch, "use", NULL)) != NULL &&
			    (u = expand(imp, NULL, v, "routing.scheduler.use",
			    0)) != NULL && u[0] != '\0' &&
			    strcmp(u, "fifo") != 0)
				imp_err(imp, v->line, "routing.scheduler.use: "
				    "\"%s\" is not fifo", u);
			free(u);
			u = NULL;
			if ((v = ymap_get(ymap_get(ymap_get(sch, "settings",
			    NULL), "fifo", NULL), "priority", NULL)) != NULL &&
			    !ynode_null(v))
				imp_note(imp, imp->trail.f, "", v->line, NULL,
				    "routing.scheduler priorities: agency "
				    "serves the requests that wait in the "
				    "order they came");
		}
		if (legacy && (!ynode_null(use) || !ynode_null(sg) ||
		    !ynode_null(smx))) {
			imp_err(imp, r->line, "routing.router with the older "
			    "groups or matrix at the top: llama-swap takes "
			    "one or the other");
			return;
		}
	}
	if (!legacy && !ynode_null(use) &&
	    (u = expand(imp, NULL, use, "routing.router.use", 0)) == NULL)
		return;
	if (u != NULL && strcmp(u, "matrix") == 0) {
		if (ynode_null(smx))
			imp_err(imp, use->line, "routing.router.use is matrix "
			    "but routing.router.settings.matrix is not set");
		mx = smx;
	} else if (u != NULL && u[0] != '\0' && strcmp(u, "group") != 0) {
		imp_err(imp, use->line, "routing.router.use: \"%s\" is "
		    "neither group nor matrix", u);
		free(u);
		return;
	} else if (!legacy)
		g = sg;
	free(u);
	if (!ynode_null(mx) && !ynode_null(g) && g->nkid > 0) {
		imp_err(imp, mx->line, "both groups and matrix: llama-swap "
		    "takes one or the other");
		return;
	}
	if (!ynode_null(mx)) {
		imp_note(imp, imp->trail.f, "", mx->line, NULL, "matrix: agency "
		    "has no rules of which models may run together; it runs "
		    "side by side the models that fit in memory, and memory "
		    "budget bounds them.");
		return;
	}
	read_groups(imp, ynode_null(g) ? NULL : g, line);
}

/* startPort: agency's range of ports, the front door's kept out. */
static void
global_ports(struct imp *imp, const struct ynode *v, const char *k)
{
	long long	 n, lo, hi;

	if (get_int(imp, NULL, v, k, &n) == -1)
		return;
	if (n < 1 || n > 65535)
		imp_err(imp, v->line, "startPort %lld: 1 to 65535", n);
	else if (n != LS_START_PORT) {
		lo = n;
		hi = n + IMPORT_PORTS - 1 > 65535 ? 65535 :
		    n + IMPORT_PORTS - 1;
		/* Never the front door's own port. */
		if (lo <= LISTEN_PORT && hi >= LISTEN_PORT) {
			if (LISTEN_PORT - lo >= hi - LISTEN_PORT)
				hi = LISTEN_PORT - 1;
			else
				lo = LISTEN_PORT + 1;
		}
		put_comment(imp->glob.f, "", "llama-swap's startPort: "
		    "agency gives model servers the ports of a range, "
		    "which holds no port the front door listens on.");
		fprintf(imp->glob.f, "ports %lld to %lld\n", lo, hi);
	}
}

/* logLevel, logToStdout, logTimeFormat: notes, as agency has its own. */
static void
global_log(struct imp *imp, const struct ynode *v, const char *k)
{
	char		*s;

	if ((s = expand(imp, NULL, v, k, 0)) == NULL)
		return;
	if (strcmp(k, "logLevel") == 0) {
		if (strcmp(s, "debug") == 0)
			imp_note(imp, imp->glob.f, "", v->line, NULL, "logLevel "
			    "debug: start agencyd with -v, or run agency-ctl "
			    "log verbose");
		else if (strcmp(s, "info") != 0)
			imp_note(imp, imp->glob.f, "", v->line, NULL, "logLevel "
			    "%s: agency has no quieter log than its own", s);
	} else if (strcmp(k, "logToStdout") == 0) {
		if (strcmp(s, "proxy") != 0)
			imp_note(imp, imp->glob.f, "", v->line, NULL,
			    "logToStdout %s: agency logs the model servers' "
			    "lines with its own; agency-ctl logs MODEL shows "
			    "one model's", s);
	} else if (strcmp(k, "logTimeFormat") == 0) {
		if (s[0] != '\0')
			imp_note(imp, imp->glob.f, "", v->line, NULL,
			    "logTimeFormat %s: agency's log has its own "
			    "timestamps", s);
	}
	free(s);
}

void
read_global(struct imp *imp, const struct ynode *key, const struct ynode *v)
{
	const char	*k = key->str;
	char		 text[1024];
	long long	 n;
	size_t		 i, o;
	int		 b;

	if (strcmp(k, "macros") == 0 || strcmp(k, "models") == 0 ||
	    strcmp(k, "groups") == 0 || strcmp(k, "matrix") == 0 ||
	    strcmp(k, "routing") == 0)
		return;
	if (strcmp(k, "healthCheckTimeout") == 0) {
		if (get_int(imp, NULL, v, k, &n) == -1)
			return;
		fprintf(imp->glob.f, "load timeout %llds\n",
		    n < LS_HEALTH_MIN ? LS_HEALTH_MIN : n);
	} else if (strcmp(k, "globalTTL") == 0) {
		if (get_int(imp, NULL, v, k, &n) == -1)
			return;
		if (n < 0)
			imp_err(imp, v->line, "globalTTL %lld: 0 or more", n);
		else if (n > 0)
			fprintf(imp->glob.f, "idle timeout %llds\n", n);
	} else if (strcmp(k, "startPort") == 0)
		global_ports(imp, v, k);
	else if (strcmp(k, "sendLoadingState") == 0) {
		if (get_bool(imp, NULL, v, k, &b) == -1)
			return;
		imp->progress = b;
		if (b)
			imp_note(imp, imp->glob.f, "", v->line, NULL,
			    "sendLoadingState: agency's loading progress is "
			    "comment lines of the event stream, which clients "
			    "do not show, not reasoning text");
		fprintf(imp->glob.f, "loading progress %s\n", b ? "yes" : "no");
	} else if (strcmp(k, "includeAliasesInList") == 0) {
		if (get_bool(imp, NULL, v, k, &b) == 0)
			imp->include_aliases = b;
	} else if (strcmp(k, "logLevel") == 0 ||
	    strcmp(k, "logToStdout") == 0 || strcmp(k, "logTimeFormat") == 0)
		global_log(imp, v, k);
	else if (strcmp(k, "logRequests") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "logRequests: "
		    "agency logs every request (its access log)");
	else if (strcmp(k, "unloadTimeout") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "unloadTimeout: "
		    "agency gives a model server 5s after SIGTERM before "
		    "SIGKILL");
	else if (strcmp(k, "metricsMaxInMemory") == 0 ||
	    strcmp(k, "captureBuffer") == 0 || strcmp(k, "store") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "%s: agency "
		    "keeps no history of requests; it counts them in /metrics",
		    k);
	else if (strcmp(k, "performance") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "performance: "
		    "agency reports memory in status and /metrics, and polls "
		    "nothing else");
	else if (strcmp(k, "ui") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "ui: agency's "
		    "console has no settings but console yes or no");
	else if (strcmp(k, "apiKeys") == 0)
		read_keys(imp, v);
	else if (strcmp(k, "hooks") == 0)
		read_hooks(imp, v);
	else if (strcmp(k, "upstream") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "upstream: "
		    "agency's /upstream/MODEL/ routes are a runtime's "
		    "passthrough, off unless set, and ignore no paths");
	else if (strcmp(k, "profiles") == 0 || strcmp(k, "selectors") == 0 ||
	    strcmp(k, "peers") == 0) {
		o = 0;
		text[0] = '\0';
		for (i = 0; v->kind == YN_MAP && i + 1 < v->nkid; i += 2)
			o += snprintf(text + o, o < sizeof(text) ?
			    sizeof(text) - o : 0, "%s\"%s\"", i > 0 ? ", " : "",
			    v->kid[i]->str);
		imp_note(imp, imp->glob.f, "", key->line, NULL, "%s %s: %s", k,
		    text, strcmp(k, "peers") == 0 ? "agency serves the models "
		    "it runs, not other servers'" : strcmp(k, "profiles") == 0 ?
		    "agency has no switchable model names" : "agency has no "
		    "model names that pick another model");
	} else
		imp_note(imp, imp->glob.f, "", key->line, NULL, "%s: not a "
		    "setting of llama-swap's; left out", k);
}
