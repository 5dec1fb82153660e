/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Who a request comes from and what it may do, decided without effects
 * for http.c's http_decide (and so fuzzed with it): its API key, or the
 * allow rules of the user and groups of a Unix socket's client; the
 * models that lets it use, and the admin routes; whose share of the
 * body budget its body takes (access_owner); the CORS origins and the
 * headers a preflight may ask for; where the client is, and whether on
 * this host (access_addr, access_local).
 *
 * With no key in the configuration the front door serves whoever
 * reaches it, as before keys, and credentials are not looked at (they
 * go on to the model, whose own they may be).  With keys, a request
 * needs one, as "Authorization: Bearer KEY" or "x-api-key: KEY"; a
 * credential that is not a key's, or two that are not the same key's,
 * is wrong.  A presented secret is digested (SHA-256) and compared with
 * every key's digest in constant time, all of them every time, so that
 * neither which key matched nor how much of one did shows in the time
 * taken.  On a Unix socket with allow rules, a client is let in by the
 * rules that name its user or one of its groups; without a matching
 * rule it needs a key, or is refused when there are no keys.  A key
 * decides for a client the rules let in too; a credential that is no
 * key's is ignored there (OpenAI's clients always send a placeholder).
 *
 * Calls: rules.c, common/config.c, common/sha256.c.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy.h"
#include "sha256.h"

/* Request headers a CORS preflight may ask for besides the three that
 * are always allowed: those the OpenAI clients send. */
static const char	*cors_extra[] = {
	"openai-beta", "openai-organization", "openai-project",
};
#define CORS_BASE	"Authorization, Content-Type, X-Api-Key"
#define CORS_STAINLESS	"x-stainless-"

static int
blank(int c)
{
	return (c == ' ' || c == '\t');
}

/*
 * The token of an Authorization value "Bearer TOKEN" (the scheme in any
 * case, then white space): 0 with tok and len set, -1 if it is not one.
 */
int
access_bearer(const char *v, const char **tok, size_t *len)
{
	size_t	n;

	if (strncasecmp(v, "Bearer", 6) != 0 || !blank(v[6]))
		return (-1);
	for (v += 6; blank(*v); v++)
		;
	/* h1.c took the value's trailing blanks off */
	if ((n = strlen(v)) == 0)
		return (-1);
	*tok = v;
	*len = n;
	return (0);
}

/* The key whose secret s is: every digest compared, found or not. */
static const struct pkey *
key_find(const struct pconf *c, const char *s, size_t len)
{
	const struct pkey	*k, *found = NULL;
	uint8_t			 d[SHA256_LEN];
	int			 eq;

	sha256(s, len, d);
	TAILQ_FOREACH(k, &c->keys, entry) {
		eq = sha256_equal(k->digest, d);
		if (eq && found == NULL)
			found = k;
	}
	return (found);
}

/* The key of a field's value (x-api-key: the value, which h1.c took
 * the blanks around off). */
static const struct pkey *
apikey_find(const struct pconf *c, const char *v)
{
	size_t	n = strlen(v);

	return (n == 0 ? NULL : key_find(c, v, n));
}

/*
 * An address as text, the way inet_ntop writes it, IPv4 mapped into
 * IPv6 written as IPv4 (a dual-stack listener's clients), into buf (at
 * least INET6_ADDRSTRLEN bytes); -1 if s is no IPv4 or IPv6 address.
 */
static int
addr_canon(const char *s, char *buf, size_t size)
{
	struct in6_addr	 in6;
	struct in_addr	 in4;
	const char	*p;

	if (inet_pton(AF_INET, s, &in4) == 1)
		p = inet_ntop(AF_INET, &in4, buf, size);
	else if (inet_pton(AF_INET6, s, &in6) != 1)
		return (-1);
	else if (IN6_IS_ADDR_V4MAPPED(&in6)) {
		memcpy(&in4, &in6.s6_addr[12], sizeof(in4));
		p = inet_ntop(AF_INET, &in4, buf, size);
	} else
		p = inet_ntop(AF_INET6, &in6, buf, size);
	return (p == NULL ? -1 : 0);
}

/* Whether s (as addr_canon writes it) is a loopback address. */
int
access_loopback(const char *s)
{
	struct in_addr	 in4;

	if (inet_pton(AF_INET, s, &in4) == 1)
		return ((ntohl(in4.s_addr) >> 24) == 127);
	return (strcmp(s, "::1") == 0);
}

/* The last element of a comma-separated list (v), without the blanks
 * around it, into buf; "" if it is empty or too long. */
static void
list_last(const char *v, char *buf, size_t size)
{
	const char	*s, *e = v + strlen(v);
	size_t		 n;

	if ((s = strrchr(v, ',')) != NULL)
		v = s + 1;
	while (blank(*v))
		v++;
	while (e > v && blank(e[-1]))
		e--;
	if ((n = e - v) >= size)
		n = 0;
	memcpy(buf, v, n);
	buf[n] = '\0';
}

/*
 * The address a TCP request comes from, into buf (ACCESS_ADDR_MAX
 * bytes): its peer's, or, where that is a trusted proxy's and the
 * request carries X-Forwarded-For, the last address there (the one the
 * proxy added: a client may send its own field, which the proxy keeps
 * before its own).  A trusted proxy's request without the field is the
 * proxy's own (HAProxy's "option forwardfor" adds it to every request
 * it passes on).  "?" when that is not an address (no client of this
 * host), or the peer's could not be read.  Not for a Unix socket's
 * client.
 */
void
access_addr(const struct pconf *c, const struct http_hdrs *hh, char *buf,
    size_t size)
{
	char	 peer[ACCESS_ADDR_MAX], fwd[ACCESS_ADDR_MAX];

	(void)strlcpy(buf, "?", size);
	if (hh->peer == NULL || addr_canon(hh->peer->addr, peer,
	    sizeof(peer)) == -1)
		return;
	if (hh->forwarded == NULL || !pstrs_has(&c->proxies, peer)) {
		(void)strlcpy(buf, peer, size);
		return;
	}
	list_last(hh->forwarded, fwd, sizeof(fwd));
	if (addr_canon(fwd, peer, sizeof(peer)) == 0)
		(void)strlcpy(buf, peer, size);
}

/*
 * Whether the request's client is on this host: a Unix socket's, or
 * one at a loopback address (access_addr): 127.0.0.0/8 or ::1 (or
 * 127.0.0.0/8 mapped into IPv6).  127.0.0.2 is one: Linux drops a
 * packet from another host that claims a loopback source (a "martian",
 * unless route_localnet is set), so only a process of this host has
 * one.
 */
int
access_local(const struct pconf *c, const struct http_hdrs *hh)
{
	char	 addr[ACCESS_ADDR_MAX];

	if (hh->peer != NULL && hh->peer->unixsock)
		return (1);
	access_addr(c, hh, addr, sizeof(addr));
	return (access_loopback(addr));
}

/* Whether allow rule a names the peer's user or one of its groups. */
static int
rule_matches(const struct pallow *a, const struct hpeer *p)
{
	size_t	i;

	if (a->kind == ALLOW_USER)
		return (p->uid == a->id);
	if (p->gid == a->id)
		return (1);
	for (i = 0; i < p->ngroups; i++)
		if (p->groups[i] == a->id)
			return (1);
	return (0);
}

/* Whether allow rules let the socket's client p in: a->rules, and
 * a->admin when one of them has admin. */
static int
peer_rules(const struct pconf *c, const struct hpeer *p, struct paccess *a)
{
	const struct pallow	*r;

	if (p == NULL || !p->known)
		return (0);
	TAILQ_FOREACH(r, &c->allows, entry)
		if (rule_matches(r, p)) {
			a->rules = 1;
			a->admin |= r->admin;
		}
	return (a->rules);
}

/*
 * Whether a request is let in, and as what (a).  -1 with e set when it
 * is not: 401 invalid_api_key (a->wrong when a credential was given and
 * is wrong, for the fixed delay), or 403 peer_not_allowed.
 */
int
access_decide(const struct pconf *c, const struct http_hdrs *hh,
    struct paccess *a, struct rerr *e)
{
	const struct pkey	*k1 = NULL, *k2 = NULL;
	const struct hpeer	*p;
	const char		*tok, *name;
	size_t			 len;
	int			 keys, bad = 0;

	memset(a, 0, sizeof(*a));
	a->conf = c;
	/* a socket's client whose credentials could not be read is
	 * matched by no rule (never taken for a TCP client) */
	p = hh->peer != NULL && hh->peer->unixsock ? hh->peer : NULL;
	if (p != NULL) {
		a->peer = p;
		if (!p->known)
			(void)strlcpy(a->user, "unknown", sizeof(a->user));
		else if ((name = pconf_user_name(c, p->uid)) != NULL)
			(void)strlcpy(a->user, name, sizeof(a->user));
		else
			(void)snprintf(a->user, sizeof(a->user), "uid=%u",
			    p->uid);
	}
	keys = !TAILQ_EMPTY(&c->keys);
	if (!keys && (p == NULL || TAILQ_EMPTY(&c->allows))) {
		a->open = 1;
		a->admin = 1;
		return (0);
	}
	if (keys && (hh->authorization != NULL || hh->apikey != NULL)) {
		if (hh->authorization != NULL) {
			if (access_bearer(hh->authorization, &tok, &len) == 0)
				k1 = key_find(c, tok, len);
			bad |= k1 == NULL;
		}
		if (hh->apikey != NULL)
			bad |= (k2 = apikey_find(c, hh->apikey)) == NULL;
		if (!bad && (k1 == NULL || k2 == NULL || k1 == k2)) {
			a->key = k1 != NULL ? k1 : k2;
			a->admin = a->key->admin;
			return (0);
		}
		/* a placeholder, for a client the rules let in */
		if (peer_rules(c, p, a))
			return (0);
		a->wrong = 1;
		rerr_set(e, 401, "invalid_api_key", "Incorrect API key "
		    "provided.");
		return (-1);
	}
	if (peer_rules(c, p, a))
		return (0);
	if (keys) {
		rerr_set(e, 401, "invalid_api_key", "No API key was given: "
		    "send it as \"Authorization: Bearer KEY\" or "
		    "\"x-api-key: KEY\".");
		return (-1);
	}
	rerr_set(e, 403, "peer_not_allowed", "No allow rule lets the user "
	    "'%s' use this front door.", a->user);
	return (-1);
}

static int
models_allow(const struct pstrs *models, const struct pmodel *m)
{
	return (models->n == 0 || pstrs_has(models, m->name));
}

/* Whether the request a let in may use model m. */
int
access_model_ok(const struct paccess *a, const struct pmodel *m)
{
	const struct pallow	*r;

	if (a->open)
		return (1);
	if (a->key != NULL)
		return (models_allow(&a->key->models, m));
	if (a->rules && a->peer != NULL && a->peer->known)
		TAILQ_FOREACH(r, &a->conf->allows, entry)
			if (rule_matches(r, a->peer) &&
			    models_allow(&r->models, m))
				return (1);
	return (0);
}

static int
scope_ok(const void *arg, const struct pmodel *m)
{
	return (access_model_ok(arg, m));
}

/* The models a lets a request use, as rules.c takes them. */
void
access_scope(const struct paccess *a, struct pscope *sc)
{
	sc->ok = a->open ? NULL : scope_ok;
	sc->arg = a;
}

/* Whether a may use only some models by its configuration (a key's or
 * rule's list), whatever models there are now. */
int
access_scoped(const struct paccess *a)
{
	const struct pallow	*r;

	if (a->open)
		return (0);
	if (a->key != NULL)
		return (a->key->models.n > 0);
	if (a->rules && a->peer != NULL && a->peer->known)
		TAILQ_FOREACH(r, &a->conf->allows, entry)
			if (rule_matches(r, a->peer) && r->models.n == 0)
				return (0);
	return (1);
}

/*
 * What the answers of a request let in (a) may show of the models, kept
 * past a reload (the answer may wait on the parent): every model, or
 * those of the configuration c it may use now.  A scoped admin key's
 * status, metrics and refusals name no other model.
 */
void
access_view(const struct paccess *a, const struct pconf *c, struct pview *v)
{
	const struct pmodel	*m;

	memset(v, 0, sizeof(*v));
	if (!access_scoped(a)) {
		v->all = 1;
		return;
	}
	TAILQ_FOREACH(m, &c->models, entry)
		if (access_model_ok(a, m) && pstrs_add(&v->models, m->name) ==
		    -1)
			break;		/* out of memory: shows fewer */
}

/* Whether v shows the model of that name. */
int
access_view_has(const struct pview *v, const char *model)
{
	return (v->all || pstrs_has(&v->models, model));
}

void
access_view_clear(struct pview *v)
{
	pstrs_clear(&v->models);
	v->all = 0;
}

/* Append s (n bytes) to buf, as far as it goes. */
static void
append(char *buf, size_t size, const char *s, size_t n)
{
	size_t	 len = strlen(buf);

	if (len + 1 >= size)
		return;
	if (n > size - len - 1)
		n = size - len - 1;
	memcpy(buf + len, s, n);
	buf[len + n] = '\0';
}

/*
 * The list agencyd ends a refusal with, "NAME (why), NAME (why)", as v
 * shows it: the items of the models it shows, in its order, and "other
 * models" for what else there was; after sep.
 */
static void
scope_list(const struct pview *v, const char *list, const char *sep,
    char *buf, size_t size)
{
	const char	*p, *name, *end;
	size_t		 i, n, used = 0, items = 0;

	for (i = 0; i < v->models.n; i++) {
		name = v->models.v[i];
		n = strlen(name);
		for (p = list; (p = strstr(p, name)) != NULL; p++) {
			if ((p != list && (p - list < 2 ||
			    strncmp(p - 2, ", ", 2) != 0)) ||
			    strncmp(p + n, " (", 2) != 0 ||
			    (end = strchr(p + n + 2, ')')) == NULL)
				continue;
			sep = items++ == 0 ? sep : ", ";
			append(buf, size, sep, strlen(sep));
			append(buf, size, p, end + 1 - p);
			used += end + 1 - p;
			break;
		}
	}
	if (used + (items > 0 ? 2 * (items - 1) : 0) < strlen(list)) {
		sep = items == 0 ? sep : ", ";
		append(buf, size, sep, strlen(sep));
		append(buf, size, "other models", 12);
	}
}

/*
 * A pool's refusal (agencyd's message msg, for the request's own model)
 * as the request may see it, into buf: as it is when v shows every
 * model; else the models it names that v does not show are left out
 * ("other models" stands for them).  Two messages name them: not enough
 * memory for MODEL (FIGURES): NAME (why), ...; and a queue timeout's
 * "... memory held by NAME (why), ...".  Another not enough memory is
 * said without the names.
 */
void
access_view_refusal(const struct pview *v, int reason, const char *model,
    const char *msg, char *buf, size_t size)
{
	static const char	 held[] = "memory held by ";
	char			 head[AGENCY_NAME_MAX + 32];
	const char		*p;

	(void)strlcpy(buf, msg, size);
	if (v->all)
		return;
	if (reason == REFUSE_NOT_ENOUGH_MEMORY) {
		(void)snprintf(head, sizeof(head), "not enough memory for %s (",
		    model);
		if (strncmp(msg, head, strlen(head)) != 0 ||
		    (p = strchr(msg + strlen(head), ')')) == NULL ||
		    strncmp(p, "): ", 3) != 0) {
			(void)snprintf(buf, size, "not enough memory for %s",
			    model);
			return;
		}
		if (strcmp(p + 3, "nothing is loaded") == 0)
			return;
		buf[0] = '\0';
		append(buf, size, msg, p + 1 - msg);
		scope_list(v, p + 3, ": ", buf, size);
	} else if (reason == REFUSE_QUEUE_TIMEOUT &&
	    (p = strstr(msg, held)) != NULL) {
		buf[0] = '\0';
		append(buf, size, msg, p + sizeof(held) - 1 - msg);
		scope_list(v, p + sizeof(held) - 1, "", buf, size);
	}
}

/*
 * Whose share of the body budget a request let in (a) takes, into buf:
 * its key's, or, without one, its Unix socket client's user or its TCP
 * client's address (access_addr: behind a trusted proxy, the client's,
 * not the proxy's).  Clients the rules let in without a key are told
 * apart by user, as the rules are; those whose user could not be read
 * share one.
 */
void
access_owner(const struct pconf *c, const struct paccess *a,
    const struct http_hdrs *hh, char *buf, size_t size)
{
	const struct hpeer	*p = hh->peer;
	char			 addr[ACCESS_ADDR_MAX];

	if (a->key != NULL)
		(void)snprintf(buf, size, "key=%s", a->key->name);
	else if (p != NULL && p->unixsock && p->known)
		(void)snprintf(buf, size, "uid=%u", p->uid);
	else if (p != NULL && p->unixsock)
		(void)strlcpy(buf, "uid=?", size);
	else {
		access_addr(c, hh, addr, sizeof(addr));
		(void)snprintf(buf, size, "addr=%s", addr);
	}
}

/* Who it was, for the access log: "key=NAME", "user=NAME" (or
 * "user=uid=N"), both, or "". */
void
access_who(const struct paccess *a, char *buf, size_t size)
{
	buf[0] = '\0';
	if (a->key != NULL)
		(void)snprintf(buf, size, "key=%s", a->key->name);
	if (a->user[0] != '\0')
		(void)snprintf(buf + strlen(buf), size - strlen(buf),
		    "%suser=%s", buf[0] != '\0' ? " " : "", a->user);
}

/* Whether origin, as a browser sends it, is one of the CORS origins
 * (which agencyd wrote in the same form). */
int
access_cors_listed(const struct pconf *c, const char *origin)
{
	size_t	i;

	for (i = 0; i < c->cors.n; i++)
		if (strcasecmp(c->cors.v[i], origin) == 0)
			return (1);
	return (0);
}

/*
 * The Access-Control-Allow-Headers of a preflight that asked for the
 * header fields in req (a comma-separated list; NULL: none): the three
 * always allowed, and the OpenAI clients' own that it asked for.  -1 if
 * it asked for any other.
 */
int
access_cors_headers(const char *req, char *buf, size_t size)
{
	char		 name[64];
	const char	*p, *end;
	size_t		 n, i;
	int		 known;

	(void)strlcpy(buf, CORS_BASE, size);
	for (p = req; p != NULL && *p != '\0'; p = *end == ',' ? end + 1 :
	    end) {
		while (blank(*p) || *p == ',')
			p++;
		if (*p == '\0')
			break;
		for (end = p; *end != '\0' && *end != ','; end++)
			;
		for (n = end - p; n > 0 && blank(p[n - 1]); n--)
			;
		if (n >= sizeof(name))
			return (-1);
		for (i = 0; i < n; i++) {
			if (!isalnum((unsigned char)p[i]) && p[i] != '-')
				return (-1);
			name[i] = tolower((unsigned char)p[i]);
		}
		name[n] = '\0';
		if (strcmp(name, "authorization") == 0 ||
		    strcmp(name, "content-type") == 0 ||
		    strcmp(name, "x-api-key") == 0)
			continue;
		known = strncmp(name, CORS_STAINLESS,
		    sizeof(CORS_STAINLESS) - 1) == 0 &&
		    name[sizeof(CORS_STAINLESS) - 1] != '\0';
		for (i = 0; !known && i < sizeof(cors_extra) /
		    sizeof(cors_extra[0]); i++)
			known = strcmp(name, cors_extra[i]) == 0;
		if (!known)
			return (-1);
		if (strlen(buf) + n + 3 >= size)
			return (-1);
		(void)strlcat(buf, ", ", size);
		(void)strlcat(buf, name, size);
	}
	return (0);
}
