/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The configuration from agencyd to the proxy: for each part, the
 * sending (config_set_*, from agencyd's form) and the receiving
 * (config_get_*, into the proxy's form) side by side, field by field
 * through msg.c.  The global settings go by conf_globals[], in its
 * order, so that a new one needs no code here.  The receiver checks
 * what it is sent as the sender wrote it and fails on anything else;
 * it never trusts an order it was not sent in (a rule before its
 * runtime, an alias before its model, a model of no runtime).
 *
 * Calls: msg.c, imsg.c, config.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "imsg.h"
#include "msg.h"
#include "proto.h"

static int
compose(struct imsgbuf *ib, uint32_t type, int fd, const struct msgw *w)
{
	return (msg_compose(ib, type, 0, fd, w) == -1 ? -1 : 0);
}

static int
fail(struct conf_recv *r, const char *why)
{
	if (r->why == NULL)
		r->why = why;
	return (-1);
}

/* The reader's end: its failure, or the caller's, or 0. */
static int
got(struct conf_recv *r, struct msgr *m)
{
	if (msg_end(m) == -1)
		return (fail(r, m->why));
	return (0);
}

/* A string of a list (a runtime's rules, a model's aliases...). */
static int
set_str(struct imsgbuf *ib, uint32_t type, const char *s)
{
	struct msgw	 w;

	msg_init(&w);
	msg_add_strn(&w, s, AGENCY_PATH_MAX);
	return (compose(ib, type, -1, &w));
}

static int
set_strs(struct imsgbuf *ib, uint32_t type, const struct strlist *l)
{
	const struct strent	*se;

	TAILQ_FOREACH(se, l, entry)
		if (set_str(ib, type, se->s) == -1)
			return (-1);
	return (0);
}

static int
get_str(struct conf_recv *r, struct imsg *imsg, char s[AGENCY_PATH_MAX])
{
	struct msgr	 m;

	msg_read(&m, imsg);
	msg_get_str(&m, s, AGENCY_PATH_MAX);
	return (got(r, &m));
}

/* -- the global settings -- */

int
config_set_globals(struct imsgbuf *ib, const struct agency_conf *conf)
{
	const struct conf_global	*g;
	const char			*f;
	struct msgw			 w;
	uint32_t			 row;

	msg_init(&w);
	for (g = conf_globals; g->keyword != NULL; g++) {
		if (g->poff == -1)
			continue;
		f = (const char *)conf + g->off;
		switch (g->kind) {
		case CK_SIZE:
		case CK_DURATION:
		case CK_NUMBER:
			msg_add_i64(&w, *(const int64_t *)(const void *)f);
			break;
		case CK_BOOL:
		case CK_FLAG:
			msg_add_i32(&w, *(const int *)(const void *)f);
			break;
		case CK_STRING:
			msg_add_strn(&w, f, g->size);
			break;
		default:
			break;		/* lists follow */
		}
	}
	if (compose(ib, IMSG_CONF_START, -1, &w) == -1)
		return (-1);
	for (row = 0, g = conf_globals; g->keyword != NULL; g++, row++) {
		const struct strent	*se;

		if (g->poff == -1 || g->kind != CK_NAMES)
			continue;
		TAILQ_FOREACH(se, (const struct strlist *)(const void *)
		    ((const char *)conf + g->off), entry) {
			msg_init(&w);
			msg_add_u32(&w, row);
			msg_add_strn(&w, se->s, AGENCY_PATH_MAX);
			if (compose(ib, IMSG_CONF_LIST, -1, &w) == -1)
				return (-1);
		}
	}
	return (0);
}

static int
config_get_globals(struct conf_recv *r, struct imsg *imsg)
{
	const struct conf_global	*g;
	struct msgr			 m;
	char				*f;

	if (r->conf != NULL)
		return (fail(r, "a second start"));
	if ((r->conf = pconf_new()) == NULL)
		return (fail(r, "out of memory"));
	msg_read(&m, imsg);
	for (g = conf_globals; g->keyword != NULL; g++) {
		if (g->poff == -1)
			continue;
		f = (char *)r->conf + g->poff;
		switch (g->kind) {
		case CK_SIZE:
		case CK_DURATION:
		case CK_NUMBER:
			*(int64_t *)(void *)f = msg_get_range(&m, g->min,
			    INT64_MAX);
			break;
		case CK_BOOL:
		case CK_FLAG:
			*(int *)(void *)f = msg_get_bool(&m);
			break;
		case CK_STRING:
			msg_get_str(&m, f, g->size);
			break;
		default:
			break;
		}
	}
	return (got(r, &m));
}

/* An item of a global list: which row's, then the string. */
static int
config_get_list(struct conf_recv *r, struct imsg *imsg)
{
	const struct conf_global	*g;
	struct msgr			 m;
	char				 s[AGENCY_PATH_MAX];
	uint32_t			 row, n;

	msg_read(&m, imsg);
	row = msg_get_u32(&m);
	msg_get_str(&m, s, sizeof(s));
	if (got(r, &m) == -1)
		return (-1);
	for (n = 0, g = conf_globals; g->keyword != NULL && n < row; g++)
		n++;
	if (g->keyword == NULL || g->poff == -1 || g->kind != CK_NAMES)
		return (fail(r, "an item of no list"));
	if (pstrs_add((struct pstrs *)(void *)((char *)r->conf + g->poff),
	    s) == -1)
		return (fail(r, "out of memory"));
	return (0);
}

/* -- listeners: a socket each, and a TLS one's files' bytes -- */

/* Bytes in pieces the proxy puts back together. */
static int
set_pieces(struct imsgbuf *ib, uint32_t type, const uint8_t *p, size_t len)
{
	struct msgw	 w;
	size_t		 n;

	for (; len > 0; p += n, len -= n) {
		n = len < PROTO_TLS_PIECE ? len : PROTO_TLS_PIECE;
		msg_init(&w);
		msg_add_bytes(&w, p, n);
		if (compose(ib, type, -1, &w) == -1)
			return (-1);
	}
	return (0);
}

/*
 * A listener with its socket (fd: this function's, closed when it cannot
 * be queued), and for TLS its certificate and key as agencyd read them
 * (tf): the proxy opens no file.
 */
int
config_set_listen(struct imsgbuf *ib, const struct listen_conf *l,
    const struct tls_files *tf, int fd)
{
	struct msgw	 w;

	msg_init(&w);
	msg_add_strn(&w, l->host, sizeof(l->host));
	msg_add_u16(&w, l->port);
	msg_add_i32(&w, l->tls);
	msg_add_strn(&w, l->path, sizeof(l->path));
	if (compose(ib, IMSG_CONF_LISTEN, fd, &w) == -1) {
		close(fd);
		return (-1);
	}
	if (!l->tls)
		return (0);
	if (tf->cert_pem == NULL || tf->key_pem == NULL)
		return (-1);
	return (set_pieces(ib, IMSG_CONF_TLS_CERT, tf->cert_pem,
	    tf->cert_len) == -1 || set_pieces(ib, IMSG_CONF_TLS_KEY,
	    tf->key_pem, tf->key_len) == -1 ? -1 : 0);
}

static int
config_get_listen(struct conf_recv *r, struct imsg *imsg)
{
	struct plisten	*l;
	struct msgr	 m;
	int		 fd;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return (fail(r, "out of memory"));
	l->fd = -1;
	TAILQ_INSERT_TAIL(&r->conf->listens, l, entry);
	r->listen = l;
	msg_read(&m, imsg);
	msg_get_str(&m, l->host, sizeof(l->host));
	l->port = msg_get_u16(&m);
	l->tls = msg_get_bool(&m);
	msg_get_str(&m, l->path, sizeof(l->path));
	if (l->path[0] != '\0' && (l->tls || l->host[0] != '\0'))
		msg_fail(&m, "a Unix socket with a host or TLS");
	if (got(r, &m) == -1)
		return (-1);
	if ((fd = imsg_get_fd(imsg)) == -1)
		return (fail(r, "a listener without its socket"));
	l->fd = fd;
	return (0);
}

/* Append a piece of the last TLS listener's certificate or key; a key's
 * bytes are never left behind in freed memory. */
static int
config_get_piece(struct conf_recv *r, struct imsg *imsg)
{
	struct msgr	 m;
	const void	*p;
	uint8_t		**buf, *b;
	size_t		*len, max, n;

	if (r->listen == NULL || !r->listen->tls)
		return (fail(r, "a TLS piece without a TLS listener"));
	if (imsg_get_type(imsg) == IMSG_CONF_TLS_CERT) {
		buf = &r->listen->cert;
		len = &r->listen->certlen;
		max = PROTO_TLS_CERT_MAX;
	} else {
		buf = &r->listen->key;
		len = &r->listen->keylen;
		max = PROTO_TLS_KEY_MAX;
	}
	msg_read(&m, imsg);
	n = msg_get_rest(&m, &p);
	if (n == 0 || n > PROTO_TLS_PIECE || *len + n > max)
		return (fail(r, "a TLS piece too long or empty"));
	if ((b = malloc(*len + n)) == NULL)
		return (fail(r, "out of memory"));
	if (*len > 0)
		memcpy(b, *buf, *len);
	memcpy(b + *len, p, n);
	freezero(*buf, *len);
	*buf = b;
	*len += n;
	return (0);
}

/* -- runtimes and their rules -- */

int
config_set_runtime(struct imsgbuf *ib, const struct runtime_conf *rt)
{
	const struct rule_move	*mv;
	struct msgw		 w;

	msg_init(&w);
	msg_add_strn(&w, rt->name, sizeof(rt->name));
	msg_add_i32(&w, rt->kind);
	msg_add_i32(&w, rt->stops);
	msg_add_i64(&w, rt->max_tokens);
	msg_add_i32(&w, rt->passthrough);
	msg_add_i32(&w, rt->progress);
	if (compose(ib, IMSG_CONF_RUNTIME, -1, &w) == -1 ||
	    set_strs(ib, IMSG_CONF_ROUTE, &rt->routes) == -1 ||
	    set_strs(ib, IMSG_CONF_PART, &rt->parts) == -1 ||
	    set_strs(ib, IMSG_CONF_REFUSE, &rt->refuse) == -1)
		return (-1);
	TAILQ_FOREACH(mv, &rt->moves, entry) {
		msg_init(&w);
		msg_add_strn(&w, mv->from, sizeof(mv->from));
		msg_add_strn(&w, mv->to, sizeof(mv->to));
		if (compose(ib, IMSG_CONF_MOVE, -1, &w) == -1)
			return (-1);
	}
	return (0);
}

static int
config_get_runtime(struct conf_recv *r, struct imsg *imsg)
{
	struct msgr	 m;
	char		 name[AGENCY_NAME_MAX];
	int		 kind, stops, passthrough, progress;
	int64_t		 max_tokens;

	msg_read(&m, imsg);
	msg_get_str(&m, name, sizeof(name));
	kind = msg_get_enum(&m, KIND_CHAT, KIND_TRANSCRIPTION);
	stops = msg_get_enum(&m, STOPS_ALWAYS, STOPS_STREAM);
	max_tokens = msg_get_range(&m, 0, INT64_MAX);
	passthrough = msg_get_bool(&m);
	progress = msg_get_bool(&m);
	if (got(r, &m) == -1)
		return (-1);
	if ((r->rt = pconf_add_runtime(r->conf, name, kind, stops,
	    max_tokens)) == NULL)
		return (fail(r, "out of memory"));
	r->rt->passthrough = passthrough;
	r->rt->progress = progress;
	return (0);
}

/* A route, a content-part type or a refused field of the last runtime. */
static int
config_get_rule(struct conf_recv *r, struct imsg *imsg)
{
	char		 s[AGENCY_PATH_MAX];
	struct pstrs	*l;

	if (r->rt == NULL)
		return (fail(r, "a rule before a runtime"));
	if (get_str(r, imsg, s) == -1)
		return (-1);
	switch (imsg_get_type(imsg)) {
	case IMSG_CONF_ROUTE:
		l = &r->rt->routes;
		break;
	case IMSG_CONF_PART:
		l = &r->rt->parts;
		break;
	default:
		l = &r->rt->refuse;
		break;
	}
	return (pstrs_add(l, s) == -1 ? fail(r, "out of memory") : 0);
}

static int
config_get_move(struct conf_recv *r, struct imsg *imsg)
{
	struct msgr	 m;
	char		 from[AGENCY_FIELD_MAX], to[AGENCY_FIELD_MAX];

	if (r->rt == NULL)
		return (fail(r, "a move before a runtime"));
	msg_read(&m, imsg);
	msg_get_str(&m, from, sizeof(from));
	msg_get_str(&m, to, sizeof(to));
	if (got(r, &m) == -1)
		return (-1);
	return (pruntime_add_move(r->rt, from, to) == -1 ?
	    fail(r, "out of memory") : 0);
}

/* -- models, with the label agencyd logs them by -- */

int
config_set_model(struct imsgbuf *ib, const struct model_conf *mc,
    const char *label)
{
	struct msgw	 w;

	msg_init(&w);
	msg_add_strn(&w, mc->name, sizeof(mc->name));
	msg_add_strn(&w, mc->rt->name, sizeof(mc->rt->name));
	msg_add_strn(&w, mc->upstream, sizeof(mc->upstream));
	msg_add_strn(&w, label, AGENCY_PATH_MAX);
	msg_add_i64(&w, mc->max_tokens);
	return (compose(ib, IMSG_CONF_MODEL, -1, &w) == -1 ||
	    set_strs(ib, IMSG_CONF_ALIAS, &mc->aliases) == -1 ? -1 : 0);
}

static int
config_get_model(struct conf_recv *r, struct imsg *imsg)
{
	struct msgr	 m;
	char		 name[AGENCY_NAME_MAX], runtime[AGENCY_NAME_MAX];
	char		 upstream[AGENCY_PATH_MAX], label[AGENCY_PATH_MAX];
	int64_t		 max_tokens;

	msg_read(&m, imsg);
	msg_get_str(&m, name, sizeof(name));
	msg_get_str(&m, runtime, sizeof(runtime));
	msg_get_str(&m, upstream, sizeof(upstream));
	msg_get_str(&m, label, sizeof(label));
	max_tokens = msg_get_range(&m, 0, INT64_MAX);
	if (got(r, &m) == -1)
		return (-1);
	if (pconf_find_model(r->conf, name) != NULL)
		return (fail(r, "a model twice"));
	if ((r->model = pconf_add_model(r->conf, name, runtime, upstream,
	    label, max_tokens)) == NULL)
		return (fail(r, "a model of no runtime sent"));
	return (0);
}

static int
config_get_alias(struct conf_recv *r, struct imsg *imsg)
{
	char	 s[AGENCY_PATH_MAX];

	if (r->model == NULL)
		return (fail(r, "an alias before a model"));
	if (get_str(r, imsg, s) == -1)
		return (-1);
	return (pstrs_add(&r->model->aliases, s) == -1 ?
	    fail(r, "out of memory") : 0);
}

/* -- access: keys, allow rules, users' names -- */

/* A key's name and digest, never its secret, and its models. */
int
config_set_key(struct imsgbuf *ib, const struct key_conf *k)
{
	struct msgw	 w;

	msg_init(&w);
	msg_add_strn(&w, k->name, sizeof(k->name));
	msg_add_bytes(&w, k->digest, sizeof(k->digest));
	msg_add_i32(&w, k->admin);
	msg_add_i64(&w, k->max_requests);
	return (compose(ib, IMSG_CONF_KEY, -1, &w) == -1 ||
	    set_strs(ib, IMSG_CONF_KEY_MODEL, &k->models) == -1 ? -1 : 0);
}

static int
config_get_key(struct conf_recv *r, struct imsg *imsg)
{
	struct msgr	 m;
	char		 name[AGENCY_NAME_MAX];
	uint8_t		 digest[AGENCY_DIGEST_LEN];
	int		 admin;
	int64_t		 max_requests;

	msg_read(&m, imsg);
	msg_get_str(&m, name, sizeof(name));
	msg_get_bytes(&m, digest, sizeof(digest));
	admin = msg_get_bool(&m);
	max_requests = msg_get_range(&m, 0, INT64_MAX);
	if (name[0] == '\0')
		msg_fail(&m, "a key of no name");
	if (got(r, &m) == 0 && (r->key = pconf_add_key(r->conf, name, digest,
	    admin, max_requests)) == NULL)
		(void)fail(r, "out of memory");
	explicit_bzero(digest, sizeof(digest));
	return (r->why != NULL ? -1 : 0);
}

int
config_set_allow(struct imsgbuf *ib, const struct allow_conf *a)
{
	struct msgw	 w;

	msg_init(&w);
	msg_add_i32(&w, a->kind);
	msg_add_u32(&w, a->id);
	msg_add_strn(&w, a->name, sizeof(a->name));
	msg_add_i32(&w, a->admin);
	return (compose(ib, IMSG_CONF_ALLOW, -1, &w) == -1 ||
	    set_strs(ib, IMSG_CONF_ALLOW_MODEL, &a->models) == -1 ? -1 : 0);
}

static int
config_get_allow(struct conf_recv *r, struct imsg *imsg)
{
	struct msgr	 m;
	char		 name[AGENCY_NAME_MAX];
	int		 kind, admin;
	uint32_t	 id;

	msg_read(&m, imsg);
	kind = msg_get_enum(&m, ALLOW_USER, ALLOW_GROUP);
	id = msg_get_u32(&m);
	msg_get_str(&m, name, sizeof(name));
	admin = msg_get_bool(&m);
	if (got(r, &m) == -1)
		return (-1);
	if ((r->allow = pconf_add_allow(r->conf, kind, id, name,
	    admin)) == NULL)
		return (fail(r, "out of memory"));
	return (0);
}

/* A model a key or rule names: the model's own name, once. */
static int
config_get_access_model(struct conf_recv *r, struct imsg *imsg)
{
	struct pstrs	*models;
	struct pmodel	*pm;
	char		 s[AGENCY_PATH_MAX];

	if (imsg_get_type(imsg) == IMSG_CONF_KEY_MODEL)
		models = r->key != NULL ? &r->key->models : NULL;
	else
		models = r->allow != NULL ? &r->allow->models : NULL;
	if (models == NULL)
		return (fail(r, "a model of no key or rule"));
	if (get_str(r, imsg, s) == -1)
		return (-1);
	if ((pm = pconf_find_model(r->conf, s)) == NULL)
		return (fail(r, "access to a model not sent"));
	if (!pstrs_has(models, pm->name) && pstrs_add(models, pm->name) == -1)
		return (fail(r, "out of memory"));
	return (0);
}

/* A user's name, which the proxy cannot look up itself. */
int
config_set_user(struct imsgbuf *ib, uint32_t uid, const char *name)
{
	struct msgw	 w;

	msg_init(&w);
	msg_add_u32(&w, uid);
	msg_add_strn(&w, name, AGENCY_NAME_MAX);
	return (compose(ib, IMSG_CONF_USER, -1, &w));
}

static int
config_get_user(struct conf_recv *r, struct imsg *imsg)
{
	struct msgr	 m;
	char		 name[AGENCY_NAME_MAX];
	uint32_t	 uid;

	msg_read(&m, imsg);
	uid = msg_get_u32(&m);
	msg_get_str(&m, name, sizeof(name));
	if (got(r, &m) == -1)
		return (-1);
	return (pconf_add_user(r->conf, uid, name) == -1 ?
	    fail(r, "out of memory") : 0);
}

/* -- the end: the configuration is whole -- */

int
config_set_end(struct imsgbuf *ib)
{
	struct msgw	 w;

	msg_init(&w);
	return (compose(ib, IMSG_CONF_END, -1, &w));
}

static int
config_get_end(struct conf_recv *r, struct imsg *imsg)
{
	struct plisten	*l;

	if (imsg_get_len(imsg) != 0)
		return (fail(r, "an end with a payload"));
	TAILQ_FOREACH(l, &r->conf->listens, entry)
		if (l->tls && (l->certlen == 0 || l->keylen == 0))
			return (fail(r, "a TLS listener without its "
			    "certificate and key"));
	r->rt = NULL;
	r->model = NULL;
	r->listen = NULL;
	r->key = NULL;
	r->allow = NULL;
	return (1);
}

int
config_recv(struct conf_recv *r, struct imsg *imsg)
{
	uint32_t	 type = imsg_get_type(imsg);

	r->why = NULL;
	if (type != IMSG_CONF_START && r->conf == NULL)
		return (fail(r, "a part of the configuration before its "
		    "start"));
	switch (type) {
	case IMSG_CONF_START:
		return (config_get_globals(r, imsg));
	case IMSG_CONF_LIST:
		return (config_get_list(r, imsg));
	case IMSG_CONF_LISTEN:
		return (config_get_listen(r, imsg));
	case IMSG_CONF_TLS_CERT:
	case IMSG_CONF_TLS_KEY:
		return (config_get_piece(r, imsg));
	case IMSG_CONF_RUNTIME:
		return (config_get_runtime(r, imsg));
	case IMSG_CONF_ROUTE:
	case IMSG_CONF_PART:
	case IMSG_CONF_REFUSE:
		return (config_get_rule(r, imsg));
	case IMSG_CONF_MOVE:
		return (config_get_move(r, imsg));
	case IMSG_CONF_MODEL:
		return (config_get_model(r, imsg));
	case IMSG_CONF_ALIAS:
		return (config_get_alias(r, imsg));
	case IMSG_CONF_KEY:
		return (config_get_key(r, imsg));
	case IMSG_CONF_ALLOW:
		return (config_get_allow(r, imsg));
	case IMSG_CONF_KEY_MODEL:
	case IMSG_CONF_ALLOW_MODEL:
		return (config_get_access_model(r, imsg));
	case IMSG_CONF_USER:
		return (config_get_user(r, imsg));
	case IMSG_CONF_END:
		return (config_get_end(r, imsg));
	default:
		return (fail(r, "not a message of the configuration"));
	}
}

/* A configuration half received goes, its sockets closed. */
void
config_recv_clear(struct conf_recv *r)
{
	struct plisten	*l;

	if (r->conf != NULL)
		TAILQ_FOREACH(l, &r->conf->listens, entry)
			if (l->fd != -1)
				close(l->fd);
	pconf_free(r->conf);
	memset(r, 0, sizeof(*r));
}
