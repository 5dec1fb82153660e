/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * What agency knows of its models, in Ollama's shapes (ollama.h):
 * /api/tags, /api/ps, /api/show and /api/version; the answer to a
 * request that only loads (or stops) a model; and the refusal of the
 * routes that manage models, since agency serves the models its
 * configuration names.  The fields are listed above put_name.
 *
 * Calls: ollama_out.c, rules.c (rerr_set), routes.c (routes_kind_name),
 * common/sha256.c.
 */
#include <sys/types.h>

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy.h"
#include "ollama.h"
#include "routes.h"
#include "sha256.h"

#define NS		1000000000LL

/* The routes of Ollama's that change its store of models. */
static const char *const	 managing[] = {
	"/api/pull", "/api/push", "/api/create", "/api/copy", "/api/delete",
	"/api/blobs/",
};

/*
 * The fields, in the order Ollama's Go types write them, and what
 * agency puts in each:
 *
 *   name, model     the served name (and each alias, an entry of its
 *                   own), with ":latest" when it has no tag, as Ollama
 *                   names a model; a request may name it either way
 *   modified_at     the time the caller gives (the upstream's, or when
 *                   agency first served the model)
 *   size            the caller's: the upstream's size on disk, or 0
 *   digest          SHA-256 of the model's runtime and upstream as the
 *                   configuration names them: it changes when the name
 *                   is pointed elsewhere; it is not of the weights
 *   details         format "gguf" for a .gguf upstream, else ""; family,
 *                   parameter_size and quantization_level where the
 *                   caller knows them, else "" (families: [family], or
 *                   null); parent_model ""
 *   capabilities    completion (chat, vision), vision, embedding: what
 *                   the runtime's kind says; never "tools" or
 *                   "thinking", which agency cannot know
 *   expires_at      (ps) last used + the idle timeout; now + it while
 *                   busy; with no idle timeout, now + 2^63-1 ns, which
 *                   is how Ollama writes "kept loaded"
 *   size_vram       (ps) the caller's (0 until agency knows GPUs)
 *   context_length  (ps) the caller's, 0 when not known
 *   model_info      (show) agency.runtime, agency.kind, agency.aliases
 *                   and FAMILY.context_length where known; never the
 *                   upstream's path
 */

/* A name as Ollama lists one: with a tag. */
static int
put_name(struct buf *b, const char *name)
{
	char	*t;
	int	 r;

	if (strchr(name, ':') != NULL)
		return (ollama_put_string(b, name));
	if (asprintf(&t, "%s:latest", name) == -1)
		return (-1);
	r = ollama_put_string(b, t);
	free(t);
	return (r);
}

static int
ends_with(const char *s, const char *t)
{
	size_t	 n = strlen(s), m = strlen(t);

	return (n >= m && strcasecmp(s + n - m, t) == 0);
}

static int
put_digest(struct buf *b, const struct ollama_model *m)
{
	struct sha256	 c;
	uint8_t		 d[SHA256_LEN];
	char		 hex[SHA256_HEXLEN];

	sha256_init(&c);
	sha256_update(&c, m->runtime, strlen(m->runtime) + 1);
	sha256_update(&c, m->upstream, strlen(m->upstream) + 1);
	sha256_final(&c, d);
	sha256_hex(d, hex);
	if (ollama_puts(b, "\"") == -1 || ollama_puts(b, hex) == -1 ||
	    ollama_puts(b, "\"") == -1)
		return (-1);
	return (0);
}

static int
put_details(struct buf *b, const struct ollama_model *m)
{
	const char	*family = m->family != NULL ? m->family : "";

	if (ollama_puts(b, "\"details\":{\"parent_model\":\"\",\"format\":")
	    == -1 || ollama_put_string(b, ends_with(m->upstream, ".gguf") ?
	    "gguf" : "") == -1 || ollama_puts(b, ",\"family\":") == -1 ||
	    ollama_put_string(b, family) == -1 ||
	    ollama_puts(b, ",\"families\":") == -1)
		return (-1);
	if (family[0] == '\0') {
		if (ollama_puts(b, "null") == -1)
			return (-1);
	} else if (ollama_puts(b, "[") == -1 ||
	    ollama_put_string(b, family) == -1 || ollama_puts(b, "]") == -1)
		return (-1);
	if (ollama_puts(b, ",\"parameter_size\":") == -1 ||
	    ollama_put_string(b, m->parameter_size != NULL ?
	    m->parameter_size : "") == -1 ||
	    ollama_puts(b, ",\"quantization_level\":") == -1 ||
	    ollama_put_string(b, m->quantization != NULL ?
	    m->quantization : "") == -1)
		return (-1);
	if (m->context > 0 && (ollama_puts(b, ",\"context_length\":") == -1 ||
	    ollama_put_int(b, m->context) == -1))
		return (-1);
	return (ollama_puts(b, "}"));
}

static int
put_capabilities(struct buf *b, const struct ollama_model *m)
{
	const char	*c;

	switch (m->kind) {
	case KIND_CHAT:
		c = "[\"completion\"]";
		break;
	case KIND_VISION:
		c = "[\"completion\",\"vision\"]";
		break;
	case KIND_EMBEDDING:
		c = "[\"embedding\"]";
		break;
	default:
		return (0);
	}
	if (ollama_puts(b, ",\"capabilities\":") == -1 ||
	    ollama_puts(b, c) == -1)
		return (-1);
	return (0);
}

/* One entry of /api/tags, under name. */
static int
tag(struct buf *b, const struct ollama_model *m, const char *name)
{
	if (ollama_puts(b, "{\"name\":") == -1 || put_name(b, name) == -1 ||
	    ollama_puts(b, ",\"model\":") == -1 || put_name(b, name) == -1 ||
	    ollama_puts(b, ",\"modified_at\":") == -1 ||
	    ollama_put_time(b, m->modified) == -1 ||
	    ollama_puts(b, ",\"size\":") == -1 ||
	    ollama_put_int(b, m->size) == -1 ||
	    ollama_puts(b, ",\"digest\":") == -1 || put_digest(b, m) == -1 ||
	    ollama_puts(b, ",") == -1 || put_details(b, m) == -1 ||
	    put_capabilities(b, m) == -1 || ollama_puts(b, "}") == -1)
		return (-1);
	return (0);
}

int
ollama_tags(const struct ollama_model *m, size_t n, struct buf *b)
{
	size_t	 i, k, e = 0;

	if (ollama_puts(b, "{\"models\":[") == -1)
		return (-1);
	for (i = 0; i < n; i++) {
		if ((e++ > 0 && ollama_puts(b, ",") == -1) ||
		    tag(b, &m[i], m[i].name) == -1)
			return (-1);
		for (k = 0; k < m[i].naliases; k++)
			if (ollama_puts(b, ",") == -1 ||
			    tag(b, &m[i], m[i].aliases[k]) == -1)
				return (-1);
	}
	return (ollama_puts(b, "]}"));
}

/* When a loaded model would be stopped, at now (ns since the epoch),
 * as seconds and ns: see the head of this file. */
static void
expires(const struct ollama_model *m, int64_t now, int64_t *sec,
    int64_t *ns)
{
	int64_t	 at;

	if (m->idle_ns <= 0) {
		/* now + 2^63-1 ns, past what an int64 of ns holds */
		*sec = now / NS + INT64_MAX / NS;
		*ns = now % NS + INT64_MAX % NS;
	} else {
		at = m->busy || m->last_used <= 0 ? now : m->last_used;
		at = at > INT64_MAX - m->idle_ns ? INT64_MAX : at + m->idle_ns;
		*sec = at / NS;
		*ns = at % NS;
	}
	if (*ns >= NS) {
		*sec += 1;
		*ns -= NS;
	}
}

struct psent {
	const struct ollama_model	*m;
	int64_t				 sec;
	int64_t				 ns;
};

/* Latest expiry first, as Ollama lists them. */
static int
ps_cmp(const void *a, const void *b)
{
	const struct psent	*x = a, *y = b;

	if (x->sec != y->sec)
		return (x->sec > y->sec ? -1 : 1);
	if (x->ns != y->ns)
		return (x->ns > y->ns ? -1 : 1);
	return (x->m < y->m ? -1 : x->m > y->m);
}

int
ollama_ps(const struct ollama_model *m, size_t n, int64_t now, struct buf *b)
{
	struct psent	*v;
	size_t		 i, k = 0;
	int		 r = -1;

	if ((v = reallocarray(NULL, n + 1, sizeof(*v))) == NULL)
		return (-1);
	for (i = 0; i < n; i++) {
		if (!m[i].loaded)
			continue;
		v[k].m = &m[i];
		expires(&m[i], now, &v[k].sec, &v[k].ns);
		k++;
	}
	qsort(v, k, sizeof(*v), ps_cmp);
	if (ollama_puts(b, "{\"models\":[") == -1)
		goto done;
	for (i = 0; i < k; i++)
		if ((i > 0 && ollama_puts(b, ",") == -1) ||
		    ollama_puts(b, "{\"name\":") == -1 ||
		    put_name(b, v[i].m->name) == -1 ||
		    ollama_puts(b, ",\"model\":") == -1 ||
		    put_name(b, v[i].m->name) == -1 ||
		    ollama_puts(b, ",\"size\":") == -1 ||
		    ollama_put_int(b, v[i].m->size) == -1 ||
		    ollama_puts(b, ",\"digest\":") == -1 ||
		    put_digest(b, v[i].m) == -1 || ollama_puts(b, ",") == -1 ||
		    put_details(b, v[i].m) == -1 ||
		    ollama_puts(b, ",\"expires_at\":") == -1 ||
		    ollama_put_clock(b, v[i].sec, v[i].ns) == -1 ||
		    ollama_puts(b, ",\"size_vram\":") == -1 ||
		    ollama_put_int(b, v[i].m->size_vram) == -1 ||
		    ollama_puts(b, ",\"context_length\":") == -1 ||
		    ollama_put_int(b, v[i].m->context) == -1 ||
		    ollama_puts(b, "}") == -1)
			goto done;
	r = ollama_puts(b, "]}");
 done:
	free(v);
	return (r);
}

int
ollama_show(const struct ollama_model *m, struct buf *b)
{
	const char	*kind = routes_kind_name(m->kind);
	char		*key;
	size_t		 i;
	int		 r;

	if (ollama_puts(b, "{") == -1 || put_details(b, m) == -1 ||
	    ollama_puts(b, ",\"model_info\":{\"agency.runtime\":") == -1 ||
	    ollama_put_string(b, m->runtime) == -1 ||
	    ollama_puts(b, ",\"agency.kind\":") == -1 ||
	    ollama_put_string(b, kind != NULL ? kind : "") == -1 ||
	    ollama_puts(b, ",\"agency.aliases\":[") == -1)
		return (-1);
	for (i = 0; i < m->naliases; i++)
		if ((i > 0 && ollama_puts(b, ",") == -1) ||
		    ollama_put_string(b, m->aliases[i]) == -1)
			return (-1);
	if (ollama_puts(b, "]") == -1)
		return (-1);
	if (m->family != NULL && m->family[0] != '\0' &&
	    (ollama_puts(b, ",\"general.architecture\":") == -1 ||
	    ollama_put_string(b, m->family) == -1))
		return (-1);
	if (m->context > 0) {
		/* "FAMILY.context_length", as a GGUF's metadata names it */
		if (asprintf(&key, "%s.context_length", m->family != NULL &&
		    m->family[0] != '\0' ? m->family : "agency") == -1)
			return (-1);
		r = ollama_puts(b, ",") == -1 || ollama_put_string(b, key) ==
		    -1 || ollama_puts(b, ":") == -1 ||
		    ollama_put_int(b, m->context) == -1 ? -1 : 0;
		free(key);
		if (r == -1)
			return (-1);
	}
	if (ollama_puts(b, "}") == -1 || put_capabilities(b, m) == -1 ||
	    ollama_puts(b, ",\"modified_at\":") == -1 ||
	    ollama_put_time(b, m->modified) == -1 || ollama_puts(b, "}") == -1)
		return (-1);
	return (0);
}

int
ollama_version(struct buf *b)
{
	return (ollama_puts(b, "{\"version\":\"" OLLAMA_API_VERSION "\"}"));
}

int
ollama_loaded(const struct ollama_req *r, const char *model, int stopped,
    int64_t now, struct buf *b)
{
	const char	*why = stopped ? "unload" : "load";

	switch (r->api) {
	case OLLAMA_EMBED:
		if (ollama_puts(b, "{\"model\":") == -1 ||
		    ollama_put_string(b, model) == -1 ||
		    ollama_puts(b, ",\"embeddings\":[]}") == -1)
			return (-1);
		return (0);
	case OLLAMA_EMBEDDINGS:
		return (ollama_puts(b, "{\"embedding\":[]}"));
	default:
		break;
	}
	if (ollama_puts(b, "{\"model\":") == -1 ||
	    ollama_put_string(b, model) == -1 ||
	    ollama_puts(b, ",\"created_at\":") == -1 ||
	    ollama_put_time(b, now) == -1 ||
	    ollama_puts(b, r->api == OLLAMA_CHAT ?
	    ",\"message\":{\"role\":\"assistant\",\"content\":\"\"}" :
	    ",\"response\":\"\"") == -1 ||
	    ollama_puts(b, ",\"done\":true,\"done_reason\":\"") == -1 ||
	    ollama_puts(b, why) == -1 || ollama_puts(b, "\"}") == -1)
		return (-1);
	return (0);
}

int
ollama_refused(const char *path, struct rerr *e)
{
	size_t	 i, n;

	for (i = 0; i < sizeof(managing) / sizeof(managing[0]); i++) {
		n = strlen(managing[i]);
		if (managing[i][n - 1] == '/' ? strncmp(path, managing[i], n) !=
		    0 : strcmp(path, managing[i]) != 0)
			continue;
		rerr_set(e, 403, "not_available", "agency serves the models "
		    "its configuration names: %s is not available (name the "
		    "model in agency.conf and reload)", managing[i]);
		return (1);
	}
	return (0);
}
