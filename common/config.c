/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The configuration's lifetime and look-ups.  agencyd builds it in
 * parse.y; agency-ctl only needs the default control socket.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/un.h>

#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"

struct agency_conf *
config_new(void)
{
	struct agency_conf	*conf;

	if ((conf = calloc(1, sizeof(*conf))) == NULL)
		return (NULL);
	TAILQ_INIT(&conf->listens);
	TAILQ_INIT(&conf->runtimes);
	TAILQ_INIT(&conf->models);
	TAILQ_INIT(&conf->server_names);
	TAILQ_INIT(&conf->cors_origins);
	TAILQ_INIT(&conf->keys);
	TAILQ_INIT(&conf->allows);

	/* The listen default is applied after parsing: any listen replaces it. */
	if (config_default_socket(conf->socket, sizeof(conf->socket)) == -1)
		conf->socket[0] = '\0';
	(void)strlcpy(conf->user, AGENCY_USER, sizeof(conf->user));
	(void)strlcpy(conf->model_user, AGENCY_MODEL_USER,
	    sizeof(conf->model_user));
	conf->port_lo = DEFAULT_PORT_LO;
	conf->port_hi = DEFAULT_PORT_HI;
	conf->reserve = -1;
	conf->budget = 0;
	conf->overcommit = 0;
	conf->console = 1;
	conf->max_body = DEFAULT_MAX_BODY;
	conf->request_timeout = DEFAULT_REQUEST_TIMEOUT;
	conf->load_timeout = DEFAULT_LOAD_TIMEOUT;
	conf->idle_timeout = 0;
	conf->header_timeout = DEFAULT_HEADER_TIMEOUT;
	conf->max_connections = 0;
	conf->body_timeout = DEFAULT_BODY_TIMEOUT;
	conf->body_buffer = DEFAULT_BODY_BUFFER;
	conf->queue_timeout = DEFAULT_QUEUE_TIMEOUT;
	conf->max_queue = DEFAULT_MAX_QUEUE;
	conf->fairness = DEFAULT_FAIRNESS;
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
