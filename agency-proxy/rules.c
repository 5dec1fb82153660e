/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The request rules: which model a body names, which routes and content
 * parts a runtime allows, the moves, refusals and caps it makes; pure
 * functions on json-c objects over the proxy's configuration
 * (common/config.c), no I/O, so the unit tests drive them.
 *
 * Calls: scan.c, utf8.c, routes.c, common/config.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "log.h"
#include "proxy.h"
#include "routes.h"

static const char	*text_parts[] = { "text", NULL };
static const char	*vision_parts[] = { "text", "image_url", NULL };

static json_object	*path_get(json_object *, const char *, json_object **,
			    char *, size_t);
static int		 path_set(json_object *, const char *, json_object *);
static void		 path_prune(json_object *, const char *);
static int		 check_parts(const struct pruntime *, const char *,
			    json_object *, struct rerr *);

void
rerr_set(struct rerr *e, int status, const char *code, const char *fmt, ...)
{
	va_list	 ap;

	e->status = status;
	e->code = code;
	va_start(ap, fmt);
	(void)vsnprintf(e->message, sizeof(e->message), fmt, ap);
	va_end(ap);
}

/* A body is one JSON object, nothing after it but white space. */
json_object *
rules_parse(const char *buf, size_t len, struct rerr *e)
{
	struct json_tokener	*tok;
	json_object		*obj;
	size_t			 end;

	if (len == 0) {
		rerr_set(e, 400, "invalid_json", "The body is empty.");
		return (NULL);
	}
	if (!utf8_valid((const unsigned char *)buf, len)) {
		rerr_set(e, 400, "invalid_json", "The body is not valid UTF-8.");
		return (NULL);
	}
	/* json-c takes an int; max body is not held under it by parse.y */
	if (len > INT_MAX) {
		rerr_set(e, 413, "body_too_large", "The body is too large.");
		return (NULL);
	}
	/*
	 * A tokener of its own for each body: json_tokener_reset leaves
	 * some of its state (the \u escape in progress among it), so a
	 * shared one let one request's body change how the next one read
	 * (the fuzzer's fast/slow comparison caught it).  utf8_valid above
	 * held the bytes to RFC 3629, stricter than json-c's own
	 * JSON_TOKENER_VALIDATE_UTF8, so that pass is not asked for.
	 */
	if ((tok = json_tokener_new_ex(64)) == NULL) {
		rerr_set(e, 500, "internal_error", "Out of memory.");
		return (NULL);
	}
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	if (obj == NULL || json_tokener_get_error(tok) != json_tokener_success) {
		json_object_put(obj);
		json_tokener_free(tok);
		rerr_set(e, 400, "invalid_json", "The body is not valid JSON.");
		return (NULL);
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	for (; end < len; end++)
		if (strchr(" \t\r\n", buf[end]) == NULL || buf[end] == '\0')
			break;
	if (end < len) {
		json_object_put(obj);
		rerr_set(e, 400, "invalid_json", "The body is not valid JSON.");
		return (NULL);
	}
	if (!json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		rerr_set(e, 400, "invalid_json",
		    "The body must be a JSON object.");
		return (NULL);
	}
	return (obj);
}

/* Whether the scope lets a request use m (no scope: every model). */
static int
in_scope(const struct pscope *sc, const struct pmodel *m)
{
	return (sc == NULL || sc->ok == NULL || sc->ok(sc->arg, m));
}

/* The served models a request may use, as an error message lists them:
 * a key never learns of the others. */
static void
served_names(const struct pconf *c, const struct pscope *sc, char *buf,
    size_t size)
{
	struct pmodel	*m;

	buf[0] = '\0';
	TAILQ_FOREACH(m, &c->models, entry) {
		if (!in_scope(sc, m))
			continue;
		if (buf[0] != '\0')
			(void)strlcat(buf, ", ", size);
		(void)strlcat(buf, m->name, size);
	}
	if (buf[0] == '\0')
		(void)strlcpy(buf, "none", size);
}

int
rules_pick_model(const struct pconf *c, json_object *body,
    const struct pscope *sc, struct pmodel **mp, struct rerr *e)
{
	json_object	*jm;

	*mp = NULL;
	if (json_object_object_get_ex(body, "model", &jm) &&
	    !json_object_is_type(jm, json_type_null)) {
		if (!json_object_is_type(jm, json_type_string)) {
			rerr_set(e, 400, "invalid_model",
			    "The field 'model' must be a string.");
			return (-1);
		}
		return (rules_pick_name(c, json_object_get_string(jm), sc, mp,
		    e));
	}
	return (rules_pick_name(c, NULL, sc, mp, e));
}

/* The model a body names (NULL: it names none), if sc lets the request
 * use it; one it may not use does not exist, for it. */
int
rules_pick_name(const struct pconf *c, const char *name,
    const struct pscope *sc, struct pmodel **mp, struct rerr *e)
{
	char		 names[PROTO_MSG_MAX - 64];

	*mp = NULL;
	if (name != NULL)
		;
	else if (c->default_model[0] != '\0')
		name = c->default_model;
	else if (pconf_nmodels(c) == 1) {
		/* the one model, unless the request may not use it */
		*mp = TAILQ_FIRST(&c->models);
		if (in_scope(sc, *mp))
			return (0);
		name = (*mp)->name;
	} else {
		served_names(c, sc, names, sizeof(names));
		rerr_set(e, 400, "model_required",
		    "The body names no model; served models: %s.", names);
		return (-1);
	}
	if ((*mp = pconf_find_model(c, name)) == NULL ||
	    !in_scope(sc, *mp)) {
		*mp = NULL;
		served_names(c, sc, names, sizeof(names));
		rerr_set(e, 404, "model_not_found",
		    "The model '%.100s' does not exist; served models: %s.",
		    name, names);
		return (-1);
	}
	return (0);
}

/* Valid UTF-8 that rules_scan takes: see scan.c.  parts: the route's
 * (routes.h), whose content parts the scan reads as check_parts does. */
int
rules_fast(const char *buf, size_t len, const struct prescan *pre,
    int parts, struct rscan *rs)
{
	/* the scan checks UTF-8 itself, in strings, the only place it
	 * takes bytes >= 0x80 */
	return (len > 0 && rules_scan_parts(buf, len, pre, parts, rs));
}

int
rules_route_allowed(const struct pruntime *rt, const char *path)
{
	const char *const	*r;
	size_t			 i;

	if (rt->routes.n > 0)
		return (pstrs_has(&rt->routes, path));
	if ((r = routes_of_kind(rt->kind)) == NULL)
		return (0);
	for (i = 0; r[i] != NULL; i++)
		if (strcmp(r[i], path) == 0)
			return (1);
	return (0);
}

int
rules_check_route(const struct pmodel *m, const char *path, struct rerr *e)
{
	if (rules_route_allowed(m->rt, path))
		return (0);
	rerr_set(e, 404, "route_not_found",
	    "The model '%s' does not serve %.200s.", m->name, path);
	return (-1);
}

/* Whether a runtime takes content parts of a type (its "part" list's
 * name: routes_part_name). */
int
rules_part_allowed(const struct pruntime *rt, const char *type)
{
	const char	**p;
	size_t		  i;

	if (rt->parts.n > 0)
		return (pstrs_has(&rt->parts, type));
	p = rt->kind == KIND_VISION ? vision_parts : text_parts;
	for (i = 0; p[i] != NULL; i++)
		if (strcmp(p[i], type) == 0)
			return (1);
	return (0);
}

static const char *
member_string(json_object *obj, const char *key)
{
	json_object	*v;

	if (!json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return (NULL);
	return (json_object_get_string(v));
}

/* Only inline images: the model process must never fetch or open. */
static int
check_image_url(json_object *part, struct rerr *e)
{
	json_object	*iu;
	const char	*url = NULL;

	if (json_object_object_get_ex(part, "image_url", &iu)) {
		if (json_object_is_type(iu, json_type_string))
			url = json_object_get_string(iu);
		else if (json_object_is_type(iu, json_type_object))
			url = member_string(iu, "url");
	}
	if (url == NULL || strncmp(url, "data:image/", 11) != 0) {
		rerr_set(e, 400, "image_url_not_allowed",
		    "Only data:image/ URLs are allowed in image_url parts.");
		return (-1);
	}
	return (0);
}

/*
 * An image or a file of a part, as its family carries it: never a URL
 * or an id of a file the server would fetch or look up.
 */
static int
check_media(int parts, const char *name, json_object *part, struct rerr *e)
{
	json_object	*src;
	const char	*t, *url;

	switch (parts) {
	case PARTS_MESSAGES:
		/* {"source":{"type":"base64"|"text"|"content",...}} */
		t = json_object_object_get_ex(part, "source", &src) ?
		    member_string(src, "type") : NULL;
		if (t == NULL || (strcmp(t, "base64") != 0 &&
		    (strcmp(name, "file") != 0 || (strcmp(t, "text") != 0 &&
		    strcmp(t, "content") != 0)))) {
			rerr_set(e, 400, "source_not_allowed", "Only inline "
			    "sources (base64) are allowed in image and "
			    "document blocks.");
			return (-1);
		}
		return (0);
	case PARTS_RESPONSES:
		if (strcmp(name, "image_url") == 0) {
			url = member_string(part, "image_url");
			if (url == NULL || strncmp(url, "data:image/", 11) !=
			    0 || json_object_object_get_ex(part, "file_id",
			    NULL)) {
				rerr_set(e, 400, "image_url_not_allowed",
				    "Only data:image/ URLs are allowed in "
				    "input_image parts.");
				return (-1);
			}
			return (0);
		}
		if (json_object_object_get_ex(part, "file_url", NULL) ||
		    json_object_object_get_ex(part, "file_id", NULL)) {
			rerr_set(e, 400, "file_not_allowed", "Only inline "
			    "files (file_data) are allowed in input_file "
			    "parts.");
			return (-1);
		}
		return (0);
	default:
		if (strcmp(name, "image_url") == 0)
			return (check_image_url(part, e));
		if (json_object_object_get_ex(part, "file", &src) &&
		    json_object_object_get_ex(src, "file_id", NULL)) {
			rerr_set(e, 400, "file_not_allowed", "Only inline "
			    "files (file_data) are allowed in file parts.");
			return (-1);
		}
		return (0);
	}
}

static int	 check_content(const struct pruntime *, int, json_object *,
		    int, struct rerr *);

/* One content part (an Anthropic block, a Responses part). */
static int
check_part(const struct pruntime *rt, int parts, json_object *part,
    int depth, struct rerr *e)
{
	json_object	*content;
	const char	*type, *name;

	if (!json_object_is_type(part, json_type_object) ||
	    (type = member_string(part, "type")) == NULL) {
		rerr_set(e, 400, "invalid_content_part",
		    "A content part has no type.");
		return (-1);
	}
	if (parts == PARTS_MESSAGES) {
		/* the blocks of a conversation with tools, not media */
		if (strcmp(type, "tool_use") == 0 ||
		    strcmp(type, "thinking") == 0 ||
		    strcmp(type, "redacted_thinking") == 0)
			return (0);
		if (strcmp(type, "tool_result") == 0) {
			if (!json_object_object_get_ex(part, "content",
			    &content))
				return (0);
			return (check_content(rt, parts, content, depth + 1,
			    e));
		}
	}
	name = routes_part_name(parts, type);
	if (!rules_part_allowed(rt, name)) {
		rerr_set(e, 400, "content_part_not_allowed",
		    "Content parts of type '%.100s' are not allowed for this "
		    "model.", type);
		return (-1);
	}
	if (strcmp(name, "image_url") == 0 || strcmp(name, "file") == 0)
		return (check_media(parts, name, part, e));
	return (0);
}

/* A content: a string, or an array of parts. */
static int
check_content(const struct pruntime *rt, int parts, json_object *content,
    int depth, struct rerr *e)
{
	size_t	 i, n;

	if (!json_object_is_type(content, json_type_array))
		return (0);
	if (depth > 2) {
		rerr_set(e, 400, "invalid_content_part",
		    "Content parts are nested too deep.");
		return (-1);
	}
	n = json_object_array_length(content);
	for (i = 0; i < n; i++)
		if (check_part(rt, parts, json_object_array_get_idx(content,
		    i), depth, e) == -1)
			return (-1);
	return (0);
}

/* The contents of a list of messages (chat, Messages) or of input
 * items (Responses: a message's content, a tool call's output). */
static int
check_list(const struct pruntime *rt, int parts, json_object *body,
    const char *key, struct rerr *e)
{
	json_object	*list, *item, *content;
	size_t		 i, n;

	if (!json_object_object_get_ex(body, key, &list) ||
	    (parts == PARTS_RESPONSES &&
	    json_object_is_type(list, json_type_string)))
		return (0);
	if (!json_object_is_type(list, json_type_array)) {
		rerr_set(e, 400, "invalid_messages",
		    "The field '%s' must be an array.", key);
		return (-1);
	}
	n = json_object_array_length(list);
	for (i = 0; i < n; i++) {
		item = json_object_array_get_idx(list, i);
		if (!json_object_is_type(item, json_type_object))
			continue;
		if (json_object_object_get_ex(item, "content", &content) &&
		    check_content(rt, parts, content, 0, e) == -1)
			return (-1);
		if (parts == PARTS_RESPONSES &&
		    json_object_object_get_ex(item, "output", &content) &&
		    check_content(rt, parts, content, 0, e) == -1)
			return (-1);
	}
	return (0);
}

/* The content parts of a body of the route at path, where it has them. */
static int
check_parts(const struct pruntime *rt, const char *path, json_object *body,
    struct rerr *e)
{
	const struct route	*r = routes_find(path);
	json_object		*sys;

	switch (r->parts) {
	case PARTS_CHAT:
		return (check_list(rt, r->parts, body, "messages", e));
	case PARTS_MESSAGES:
		if (json_object_object_get_ex(body, "system", &sys) &&
		    check_content(rt, r->parts, sys, 0, e) == -1)
			return (-1);
		return (check_list(rt, r->parts, body, "messages", e));
	case PARTS_RESPONSES:
		if (check_list(rt, r->parts, body, "instructions", e) == -1)
			return (-1);
		return (check_list(rt, r->parts, body, "input", e));
	default:
		return (0);
	}
}

/*
 * The value at a dotted path ("a.b.c") of objects, or NULL.  With parentp,
 * also the object holding it and the last key.
 */
static json_object *
path_get(json_object *obj, const char *path, json_object **parentp,
    char *key, size_t keysize)
{
	char	 buf[AGENCY_FIELD_MAX], *p, *dot;
	json_object	*cur = obj, *next;

	if (strlcpy(buf, path, sizeof(buf)) >= sizeof(buf))
		return (NULL);
	p = buf;
	for (;;) {
		if (!json_object_is_type(cur, json_type_object))
			return (NULL);
		if ((dot = strchr(p, '.')) != NULL)
			*dot = '\0';
		if (!json_object_object_get_ex(cur, p, &next))
			return (NULL);
		if (dot == NULL) {
			if (parentp != NULL)
				*parentp = cur;
			if (key != NULL)
				(void)strlcpy(key, p, keysize);
			return (next);
		}
		cur = next;
		p = dot + 1;
	}
}

/* Set a dotted path, making the objects on the way; takes val. */
static int
path_set(json_object *obj, const char *path, json_object *val)
{
	char		 buf[AGENCY_FIELD_MAX], *p, *dot;
	json_object	*cur = obj, *next;

	if (strlcpy(buf, path, sizeof(buf)) >= sizeof(buf))
		goto fail;
	p = buf;
	while ((dot = strchr(p, '.')) != NULL) {
		*dot = '\0';
		if (!json_object_object_get_ex(cur, p, &next)) {
			if ((next = json_object_new_object()) == NULL ||
			    json_object_object_add(cur, p, next) != 0)
				goto fail;
		} else if (!json_object_is_type(next, json_type_object))
			goto fail;
		cur = next;
		p = dot + 1;
	}
	if (json_object_object_add(cur, p, val) != 0)
		goto fail;
	return (0);
 fail:
	json_object_put(val);
	return (-1);
}

/* Remove the objects on a dotted path that the removal left empty. */
static void
path_prune(json_object *obj, const char *path)
{
	char		 buf[AGENCY_FIELD_MAX], key[AGENCY_FIELD_MAX], *dot;
	json_object	*v, *parent;

	if (strlcpy(buf, path, sizeof(buf)) >= sizeof(buf))
		return;
	while ((dot = strrchr(buf, '.')) != NULL) {
		*dot = '\0';
		if ((v = path_get(obj, buf, &parent, key, sizeof(key))) ==
		    NULL || !json_object_is_type(v, json_type_object) ||
		    json_object_object_length(v) != 0)
			return;
		json_object_object_del(parent, key);
	}
}

int
rules_apply(const struct pruntime *rt, const char *path, json_object *body,
    struct rerr *e, int *changed)
{
	json_object	*from, *to, *parent;
	char		 key[AGENCY_FIELD_MAX];
	size_t		 i;

	*changed = 0;
	if (check_parts(rt, path, body, e) == -1)
		return (-1);

	for (i = 0; i < rt->nmoves; i++) {
		const struct pmove *mv = &rt->moves[i];

		if ((from = path_get(body, mv->from, &parent, key,
		    sizeof(key))) == NULL)
			continue;
		if ((to = path_get(body, mv->to, NULL, NULL, 0)) != NULL) {
			if (!json_object_equal(from, to)) {
				rerr_set(e, 400, "conflicting_fields",
				    "Conflicting fields %s and %s.",
				    mv->from, mv->to);
				return (-1);
			}
		} else if (path_set(body, mv->to,
		    json_object_get(from)) == -1) {
			rerr_set(e, 400, "invalid_field",
			    "Cannot move %s to %s.", mv->from, mv->to);
			return (-1);
		}
		json_object_object_del(parent, key);
		path_prune(body, mv->from);
		*changed = 1;
	}

	for (i = 0; i < rt->refuse.n; i++) {
		if (path_get(body, rt->refuse.v[i], NULL, NULL, 0) != NULL) {
			rerr_set(e, 400, "field_not_allowed",
			    "The field '%s' is not allowed for this model.",
			    rt->refuse.v[i]);
			return (-1);
		}
	}
	return (0);
}

int64_t
rules_cap(const struct pmodel *m)
{
	if (m->max_tokens > 0)
		return (m->max_tokens);
	return (m->rt->max_tokens);
}

static int
cap_field(json_object *body, const char *field, int64_t cap, int *seen)
{
	json_object	*v;

	if (!json_object_object_get_ex(body, field, &v) ||
	    json_object_is_type(v, json_type_null))
		return (0);
	*seen = 1;
	if ((json_object_is_type(v, json_type_int) ||
	    json_object_is_type(v, json_type_double)) &&
	    json_object_get_double(v) <= (double)cap)
		return (0);
	json_object_object_add(body, field, json_object_new_int64(cap));
	return (1);
}

/*
 * The upstream's model name ("": the client's own "model", or none, is
 * left as it is), and the cap (0: none) on the fields of the route at
 * path (routes.c), the first of them added when a body of a chat or
 * vision runtime has none.
 */
int
rules_rewrite(json_object *body, const char *upstream, int64_t cap, int kind,
    const char *path)
{
	const struct route	*r = routes_find(path);
	json_object		*v;
	int			 seen = 0, changed = 0, k;

	if (upstream[0] == '\0')
		;	/* the runtime's send model unchanged */
	else if (!json_object_object_get_ex(body, "model", &v) ||
	    !json_object_is_type(v, json_type_string) ||
	    strcmp(json_object_get_string(v), upstream) != 0) {
		json_object_object_add(body, "model",
		    json_object_new_string(upstream));
		changed = 1;
	}
	if (cap <= 0)
		return (changed);
	for (k = 0; k < ROUTE_CAPS && r->cap[k] != NULL; k++)
		changed |= cap_field(body, r->cap[k], cap, &seen);
	if (r->add && r->cap[0] != NULL && !seen &&
	    (kind == KIND_CHAT || kind == KIND_VISION)) {
		json_object_object_add(body, r->cap[0],
		    json_object_new_int64(cap));
		changed = 1;
	}
	return (changed);
}

/* Whether the client's leaving should stop this request upstream. */
int
rules_stops(const struct pruntime *rt, json_object *body)
{
	return (rules_stops_stream(rt, rules_stream(body)));
}

/* Whether the body has "stream": true. */
int
rules_stream(json_object *body)
{
	json_object	*v;

	return (json_object_object_get_ex(body, "stream", &v) &&
	    json_object_is_type(v, json_type_boolean) &&
	    json_object_get_boolean(v));
}

/* Whether closing the connection stops a request, streamed or not. */
int
rules_stops_stream(const struct pruntime *rt, int stream)
{
	switch (rt->stops) {
	case STOPS_ALWAYS:
		return (1);
	case STOPS_NEVER:
		return (0);
	case STOPS_STREAM:
		return (stream);
	default:
		return (1);
	}
}
