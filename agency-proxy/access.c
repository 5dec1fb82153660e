/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Who a request comes from and what it may do, decided without effects
 * for http.c's http_decide (and so fuzzed with it): its API key, or the
 * allow rules of the user and groups of a Unix socket's client; the
 * models that lets it use, and the admin routes; and the CORS origins
 * and the headers a preflight may ask for.
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
 * rule it needs a key, or is refused when there are no keys.  A key's
 * credential decides for a client the rules let in as well; one that is
 * no key's is ignored for such a client, since the OpenAI clients
 * always send one, a placeholder where the socket needs none.
 *
 * Calls: rules.c, common/config.c, common/sha256.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

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
