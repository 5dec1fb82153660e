/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The configuration's two forms (config.h): their lifetime and
 * look-ups, and the table of the global settings with their defaults.
 * agencyd builds its form in parse.y, the proxy its own from
 * confimsg.c; agency-ctl only needs the default control socket.  Calls
 * nothing of agency's.
 *
 * Calls: none.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/un.h>

#include <netinet/in.h>

#include <pwd.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

#define A(f)		offsetof(struct agency_conf, f)
#define P(f)		offsetof(struct pconf, f)
#define SIZE(f)		sizeof(((struct agency_conf *)0)->f)
/* a number, or a yes or no (kind), of agencyd's alone */
#define NUM(kw, kind, print, f, def) \
	{ kw, kind, print, A(f), 0, 0, -1, def, NULL, 0 }
/* one the proxy is sent too, from min up */
#define SENT(kw, kind, print, f, def, min) \
	{ kw, kind, print, A(f), 0, 0, P(f), def, NULL, min }
#define STR(kw, print, f, def, poff) \
	{ kw, CK_STRING, print, A(f), 0, SIZE(f), poff, 0, def, 0 }
#define NAMES(kw, f, pf) \
	{ kw, CK_NAMES, CP_CHANGED, A(f), 0, 0, P(pf), 0, NULL, 0 }

/*
 * Every global setting, in the order -nv prints them (after the
 * listeners, the TLS files and the control sockets, which printconf.c
 * writes itself).
 */
const struct conf_global conf_globals[] = {
	STR("user", CP_ALWAYS, user, AGENCY_USER, -1),
	STR("model user", CP_ALWAYS, model_user, AGENCY_MODEL_USER, -1),
	{ "ports", CK_PORTS, CP_ALWAYS, A(port_lo), A(port_hi), 0, -1, 0,
	    NULL, 0 },
	NUM("memory reserve", CK_SIZE, CP_CHANGED, reserve, -1),
	NUM("memory budget", CK_SIZE, CP_CHANGED, budget, 0),
	NUM("overcommit", CK_BOOL, CP_ALWAYS, overcommit, 0),
	SENT("console", CK_BOOL, CP_CHANGED, console, 1, 0),
	SENT("max body", CK_SIZE, CP_ALWAYS, max_body, DEFAULT_MAX_BODY, 1),
	SENT("request timeout", CK_DURATION, CP_ALWAYS, request_timeout,
	    DEFAULT_REQUEST_TIMEOUT, 1),
	NUM("load timeout", CK_DURATION, CP_ALWAYS, load_timeout,
	    DEFAULT_LOAD_TIMEOUT),
	SENT("header timeout", CK_DURATION, CP_CHANGED, header_timeout,
	    DEFAULT_HEADER_TIMEOUT, 0),
	SENT("max connections", CK_NUMBER, CP_CHANGED, max_connections, 0, 0),
	SENT("body timeout", CK_DURATION, CP_CHANGED, body_timeout,
	    DEFAULT_BODY_TIMEOUT, 1),
	SENT("body buffer", CK_SIZE, CP_CHANGED, body_buffer,
	    DEFAULT_BODY_BUFFER, 1),
	SENT("body share", CK_NUMBER, CP_CHANGED, body_share,
	    DEFAULT_BODY_SHARE, 1),
	SENT("header buffer", CK_SIZE, CP_CHANGED, header_buffer,
	    DEFAULT_HEADER_BUFFER, 1),
	SENT("header share", CK_NUMBER, CP_CHANGED, header_share,
	    DEFAULT_HEADER_SHARE, 1),
	NAMES("server name", server_names, names),
	SENT("server name any", CK_FLAG, CP_CHANGED, host_any, 0, 0),
	NAMES("cors origin", cors_origins, cors),
	NAMES("trusted proxy", trusted_proxies, proxies),
	NUM("idle timeout", CK_DURATION, CP_CHANGED, idle_timeout, 0),
	SENT("queue timeout", CK_DURATION, CP_CHANGED, queue_timeout,
	    DEFAULT_QUEUE_TIMEOUT, 0),
	NUM("max queue", CK_NUMBER, CP_CHANGED, max_queue, DEFAULT_MAX_QUEUE),
	NUM("fairness window", CK_DURATION, CP_CHANGED, fairness,
	    DEFAULT_FAIRNESS),
	NUM("shutdown timeout", CK_DURATION, CP_CHANGED, shutdown_timeout,
	    DEFAULT_SHUTDOWN_TIMEOUT),
	NUM("loading progress", CK_BOOL, CP_CHANGED, progress, 0),
	STR("default model", CP_CHANGED, default_model, "", P(default_model)),
	{ NULL, 0, 0, 0, 0, 0, -1, 0, NULL, 0 }
};

/* A row's default into one form's configuration, at off (off2). */
static void
global_default(const struct conf_global *g, char *base, size_t off,
    size_t off2, int proxy)
{
	switch (g->kind) {
	case CK_SIZE:
	case CK_DURATION:
	case CK_NUMBER:
		*(int64_t *)(void *)(base + off) = g->def;
		break;
	case CK_BOOL:
	case CK_FLAG:
		*(int *)(void *)(base + off) = (int)g->def;
		break;
	case CK_STRING:
		(void)strlcpy(base + off, g->sdef, g->size);
		break;
	case CK_NAMES:
		if (proxy)
			memset(base + off, 0, sizeof(struct pstrs));
		else
			TAILQ_INIT((struct strlist *)(void *)(base + off));
		break;
	case CK_PORTS:
		*(in_port_t *)(void *)(base + off) = DEFAULT_PORT_LO;
		*(in_port_t *)(void *)(base + off2) = DEFAULT_PORT_HI;
		break;
	default:
		break;
	}
}

int
config_global_default(const struct conf_global *g,
    const struct agency_conf *conf)
{
	const char	*base = (const char *)conf;

	switch (g->kind) {
	case CK_SIZE:
	case CK_DURATION:
	case CK_NUMBER:
		return (*(const int64_t *)(const void *)(base + g->off) ==
		    g->def);
	case CK_BOOL:
	case CK_FLAG:
		return (*(const int *)(const void *)(base + g->off) ==
		    g->def);
	case CK_STRING:
		return (strcmp(base + g->off, g->sdef) == 0);
	case CK_NAMES:
		return (TAILQ_EMPTY((const struct strlist *)(const void *)
		    (base + g->off)));
	case CK_PORTS:
		return (*(const in_port_t *)(const void *)(base + g->off) ==
		    DEFAULT_PORT_LO && *(const in_port_t *)(const void *)
		    (base + g->off2) == DEFAULT_PORT_HI);
	default:
		return (0);
	}
}

struct agency_conf *
config_new(void)
{
	struct agency_conf		*conf;
	const struct conf_global	*g;

	if ((conf = calloc(1, sizeof(*conf))) == NULL)
		return (NULL);
	TAILQ_INIT(&conf->listens);
	TAILQ_INIT(&conf->runtimes);
	TAILQ_INIT(&conf->models);
	TAILQ_INIT(&conf->keys);
	TAILQ_INIT(&conf->allows);
	for (g = conf_globals; g->keyword != NULL; g++)
		global_default(g, (char *)conf, g->off, g->off2, 0);

	/* The listen default is applied after parsing: any listen replaces it. */
	if (config_default_socket(conf->socket, sizeof(conf->socket)) == -1)
		conf->socket[0] = '\0';
	return (conf);
}

/*
 * The control socket when none is configured: the system one for root;
 * in user mode one in a directory only the user may enter, the runtime
 * directory or else ~/.agency (never /tmp, where another user could be
 * first to take the name).
 */
int
config_default_socket(char *buf, size_t len)
{
	struct sockaddr_un	 sun;
	struct passwd		*pw;
	const char		*dir;
	int			 n;

	if (getuid() == 0)
		n = snprintf(buf, len, "%s", AGENCY_SOCKET);
	else if ((dir = getenv("XDG_RUNTIME_DIR")) != NULL && dir[0] == '/')
		n = snprintf(buf, len, "%s/agency.sock", dir);
	else if (((dir = getenv("HOME")) != NULL && dir[0] == '/') ||
	    ((pw = getpwuid(getuid())) != NULL &&
	    (dir = pw->pw_dir) != NULL && dir[0] == '/'))
		n = snprintf(buf, len, "%s%s%s/agency.sock", dir,
		    dir[strlen(dir) - 1] == '/' ? "" : "/", AGENCY_USER_DIR);
	else
		return (-1);
	if (n < 0 || (size_t)n >= len || (size_t)n >= sizeof(sun.sun_path))
		return (-1);
	return (0);
}

/* An empty runtime, or model: its lists ready, nothing else set. */
struct runtime_conf *
config_runtime_new(void)
{
	struct runtime_conf	*rt;

	if ((rt = calloc(1, sizeof(*rt))) == NULL)
		return (NULL);
	TAILQ_INIT(&rt->env);
	TAILQ_INIT(&rt->routes);
	TAILQ_INIT(&rt->parts);
	TAILQ_INIT(&rt->refuse);
	TAILQ_INIT(&rt->moves);
	return (rt);
}

struct model_conf *
config_model_new(void)
{
	struct model_conf	*m;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return (NULL);
	TAILQ_INIT(&m->aliases);
	TAILQ_INIT(&m->env);
	return (m);
}

static void
runtime_free(struct runtime_conf *rt)
{
	struct rule_move	*mv;

	strlist_clear(&rt->env);
	strlist_clear(&rt->routes);
	strlist_clear(&rt->parts);
	strlist_clear(&rt->refuse);
	while ((mv = TAILQ_FIRST(&rt->moves)) != NULL) {
		TAILQ_REMOVE(&rt->moves, mv, entry);
		free(mv);
	}
	free(rt);
}

static void
model_conf_free(struct model_conf *m)
{
	strlist_clear(&m->aliases);
	strlist_clear(&m->env);
	free(m);
}

/* A key, its secret wiped. */
void
config_key_free(struct key_conf *k)
{
	strlist_clear(&k->models);
	freezero(k, sizeof(*k));
}

/* The bytes read of a certificate and key; the key's are wiped. */
void
tls_files_clear(struct tls_files *tf)
{
	free(tf->cert_pem);
	freezero(tf->key_pem, tf->key_len);
	tf->cert_pem = tf->key_pem = NULL;
	tf->cert_len = tf->key_len = 0;
}

void
config_free(struct agency_conf *conf)
{
	struct listen_conf	*lc;
	struct runtime_conf	*rt;
	struct model_conf	*m;
	struct key_conf		*k;
	struct allow_conf	*a;

	if (conf == NULL)
		return;
	while ((lc = TAILQ_FIRST(&conf->listens)) != NULL) {
		TAILQ_REMOVE(&conf->listens, lc, entry);
		tls_files_clear(&lc->tlsf);
		free(lc);
	}
	while ((rt = TAILQ_FIRST(&conf->runtimes)) != NULL) {
		TAILQ_REMOVE(&conf->runtimes, rt, entry);
		runtime_free(rt);
	}
	while ((m = TAILQ_FIRST(&conf->models)) != NULL) {
		TAILQ_REMOVE(&conf->models, m, entry);
		model_conf_free(m);
	}
	while ((k = TAILQ_FIRST(&conf->keys)) != NULL) {
		TAILQ_REMOVE(&conf->keys, k, entry);
		config_key_free(k);
	}
	while ((a = TAILQ_FIRST(&conf->allows)) != NULL) {
		TAILQ_REMOVE(&conf->allows, a, entry);
		strlist_clear(&a->models);
		free(a);
	}
	strlist_clear(&conf->server_names);
	strlist_clear(&conf->cors_origins);
	strlist_clear(&conf->trusted_proxies);
	tls_files_clear(&conf->tls);
	free(conf);
}

/* A model by its name or by one of its aliases. */
struct model_conf *
config_find_model(struct agency_conf *conf, const char *name)
{
	struct model_conf	*m;

	TAILQ_FOREACH(m, &conf->models, entry) {
		if (strcmp(m->name, name) == 0 ||
		    strlist_contains(&m->aliases, name))
			return (m);
	}
	return (NULL);
}

struct runtime_conf *
config_find_runtime(struct agency_conf *conf, const char *name)
{
	struct runtime_conf	*rt;

	TAILQ_FOREACH(rt, &conf->runtimes, entry) {
		if (strcmp(rt->name, name) == 0)
			return (rt);
	}
	return (NULL);
}

struct key_conf *
config_find_key(struct agency_conf *conf, const char *name)
{
	struct key_conf	*k;

	TAILQ_FOREACH(k, &conf->keys, entry) {
		if (strcmp(k->name, name) == 0)
			return (k);
	}
	return (NULL);
}

const struct tls_files *
config_listen_tls(const struct agency_conf *conf, const struct listen_conf *lc)
{
	return (lc->tls_own ? &lc->tlsf : &conf->tls);
}

int
strlist_add(struct strlist *list, const char *s)
{
	struct strent	*se;

	if ((se = calloc(1, sizeof(*se))) == NULL)
		return (-1);
	if ((se->s = strdup(s)) == NULL) {
		free(se);
		return (-1);
	}
	TAILQ_INSERT_TAIL(list, se, entry);
	return (0);
}

void
strlist_clear(struct strlist *list)
{
	struct strent	*se;

	while ((se = TAILQ_FIRST(list)) != NULL) {
		TAILQ_REMOVE(list, se, entry);
		free(se->s);
		free(se);
	}
}

int
strlist_contains(const struct strlist *list, const char *s)
{
	const struct strent	*se;

	TAILQ_FOREACH(se, list, entry) {
		if (strcmp(se->s, s) == 0)
			return (1);
	}
	return (0);
}

int
pstrs_add(struct pstrs *l, const char *s)
{
	char	**v;
	char	 *d;

	if ((d = strdup(s)) == NULL)
		return (-1);
	if ((v = reallocarray(l->v, l->n + 1, sizeof(*v))) == NULL) {
		free(d);
		return (-1);
	}
	v[l->n++] = d;
	l->v = v;
	return (0);
}

int
pstrs_has(const struct pstrs *l, const char *s)
{
	size_t	 i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return (1);
	return (0);
}

void
pstrs_clear(struct pstrs *l)
{
	size_t	 i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* The proxy's form: its defaults are agencyd's. */
struct pconf *
pconf_new(void)
{
	struct pconf			*c;
	const struct conf_global	*g;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		return (NULL);
	TAILQ_INIT(&c->runtimes);
	TAILQ_INIT(&c->models);
	TAILQ_INIT(&c->listens);
	TAILQ_INIT(&c->keys);
	TAILQ_INIT(&c->allows);
	for (g = conf_globals; g->keyword != NULL; g++)
		if (g->poff != -1)
			global_default(g, (char *)c, (size_t)g->poff, 0, 1);
	return (c);
}

/* Listeners are the HTTP layer's to close (http_swap_listeners). */
void
pconf_free(struct pconf *c)
{
	struct pruntime	*rt;
	struct pmodel	*m;
	struct plisten	*l;
	struct pkey	*k;
	struct pallow	*a;

	if (c == NULL)
		return;
	while ((rt = TAILQ_FIRST(&c->runtimes)) != NULL) {
		TAILQ_REMOVE(&c->runtimes, rt, entry);
		pstrs_clear(&rt->routes);
		pstrs_clear(&rt->parts);
		pstrs_clear(&rt->refuse);
		free(rt->moves);
		free(rt);
	}
	while ((m = TAILQ_FIRST(&c->models)) != NULL) {
		TAILQ_REMOVE(&c->models, m, entry);
		pstrs_clear(&m->aliases);
		free(m);
	}
	while ((l = TAILQ_FIRST(&c->listens)) != NULL) {
		TAILQ_REMOVE(&c->listens, l, entry);
		free(l->cert);
		freezero(l->key, l->keylen);
		free(l);
	}
	while ((k = TAILQ_FIRST(&c->keys)) != NULL) {
		TAILQ_REMOVE(&c->keys, k, entry);
		pstrs_clear(&k->models);
		freezero(k, sizeof(*k));
	}
	while ((a = TAILQ_FIRST(&c->allows)) != NULL) {
		TAILQ_REMOVE(&c->allows, a, entry);
		pstrs_clear(&a->models);
		free(a);
	}
	free(c->users);
	pstrs_clear(&c->names);
	pstrs_clear(&c->cors);
	pstrs_clear(&c->proxies);
	free(c);
}

struct pkey *
pconf_add_key(struct pconf *c, const char *name,
    const uint8_t digest[AGENCY_DIGEST_LEN], int admin, int64_t max_requests)
{
	struct pkey	*k;

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return (NULL);
	(void)strlcpy(k->name, name, sizeof(k->name));
	memcpy(k->digest, digest, sizeof(k->digest));
	k->admin = admin;
	k->max_requests = max_requests;
	TAILQ_INSERT_TAIL(&c->keys, k, entry);
	return (k);
}

struct pallow *
pconf_add_allow(struct pconf *c, int kind, uint32_t id, const char *name,
    int admin)
{
	struct pallow	*a;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return (NULL);
	a->kind = kind;
	a->id = id;
	(void)strlcpy(a->name, name, sizeof(a->name));
	a->admin = admin;
	TAILQ_INSERT_TAIL(&c->allows, a, entry);
	return (a);
}

int
pconf_add_user(struct pconf *c, uint32_t uid, const char *name)
{
	struct puser	*u;

	if ((u = reallocarray(c->users, c->nusers + 1, sizeof(*u))) == NULL)
		return (-1);
	c->users = u;
	u[c->nusers].uid = uid;
	(void)strlcpy(u[c->nusers].name, name, sizeof(u[c->nusers].name));
	c->nusers++;
	return (0);
}

/* A user's name, if the parent told us; NULL otherwise. */
const char *
pconf_user_name(const struct pconf *c, uint32_t uid)
{
	size_t	i;

	for (i = 0; i < c->nusers; i++)
		if (c->users[i].uid == uid)
			return (c->users[i].name);
	return (NULL);
}

struct pruntime *
pconf_add_runtime(struct pconf *c, const char *name, int kind, int stops,
    int64_t max_tokens)
{
	struct pruntime	*rt;

	if ((rt = calloc(1, sizeof(*rt))) == NULL)
		return (NULL);
	if (strlcpy(rt->name, name, sizeof(rt->name)) >= sizeof(rt->name)) {
		free(rt);
		return (NULL);
	}
	rt->kind = kind;
	rt->stops = stops;
	rt->max_tokens = max_tokens;
	TAILQ_INSERT_TAIL(&c->runtimes, rt, entry);
	return (rt);
}

int
pruntime_add_move(struct pruntime *rt, const char *from, const char *to)
{
	struct pmove	*mv;

	if ((mv = reallocarray(rt->moves, rt->nmoves + 1,
	    sizeof(*mv))) == NULL)
		return (-1);
	rt->moves = mv;
	mv = &rt->moves[rt->nmoves];
	if (strlcpy(mv->from, from, sizeof(mv->from)) >= sizeof(mv->from) ||
	    strlcpy(mv->to, to, sizeof(mv->to)) >= sizeof(mv->to))
		return (-1);
	rt->nmoves++;
	return (0);
}

/* NULL when the runtime is unknown or a string does not fit. */
struct pmodel *
pconf_add_model(struct pconf *c, const char *name, const char *runtime,
    const char *upstream, const char *label, int64_t max_tokens)
{
	struct pruntime	*rt;
	struct pmodel	*m;

	TAILQ_FOREACH(rt, &c->runtimes, entry)
		if (strcmp(rt->name, runtime) == 0)
			break;
	if (rt == NULL)
		return (NULL);
	if ((m = calloc(1, sizeof(*m))) == NULL)
		return (NULL);
	if (strlcpy(m->name, name, sizeof(m->name)) >= sizeof(m->name) ||
	    strlcpy(m->upstream, upstream, sizeof(m->upstream)) >=
	    sizeof(m->upstream) ||
	    strlcpy(m->label, label, sizeof(m->label)) >= sizeof(m->label)) {
		free(m);
		return (NULL);
	}
	m->rt = rt;
	m->max_tokens = max_tokens;
	TAILQ_INSERT_TAIL(&c->models, m, entry);
	return (m);
}

struct pmodel *
pconf_find_model(const struct pconf *c, const char *name)
{
	struct pmodel	*m;

	TAILQ_FOREACH(m, &c->models, entry)
		if (strcmp(m->name, name) == 0)
			return (m);
	TAILQ_FOREACH(m, &c->models, entry)
		if (pstrs_has(&m->aliases, name))
			return (m);
	return (NULL);
}

/*
 * When each model of a new configuration was first served, for the
 * models list's "created": as in the old one (NULL at the first), or
 * now for a model it did not have.
 */
void
pconf_created(struct pconf *c, const struct pconf *old, int64_t now)
{
	struct pmodel	*m, *o;

	TAILQ_FOREACH(m, &c->models, entry) {
		m->created = now;
		if (old == NULL)
			continue;
		TAILQ_FOREACH(o, &old->models, entry)
			if (strcmp(o->name, m->name) == 0) {
				m->created = o->created;
				break;
			}
	}
}

size_t
pconf_nmodels(const struct pconf *c)
{
	struct pmodel	*m;
	size_t		 n = 0;

	TAILQ_FOREACH(m, &c->models, entry)
		n++;
	return (n);
}
