/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Ollama's requests (ollama.h): a body of /api/chat, /api/generate,
 * /api/embed or /api/embeddings read and turned into the OpenAI body of
 * the model server's route, /v1/chat/completions, /v1/completions (a
 * raw generate) or /v1/embeddings.  What each field becomes, or why it
 * is ignored or refused, is the table at the head of
 * regress/unit/ollama_test.c.
 *
 * json-c reads the body, not scan.c: every such body is rebuilt (the
 * options go up a level, images become content parts, a tool call's
 * arguments become a string, format becomes response_format), which is
 * what the fast path exists to avoid; scan.c says yes only to a body
 * that goes on as its own bytes.  rules_parse gives the body the same
 * checks as every other route's (strict UTF-8, one object, depth), and
 * what is built from it is made of copies of its own values, so that
 * no more is allocated than the body's size allows.  It happens once a
 * request; the answers, which come a chunk at a time, are read by
 * ollama_stream.c's own reader.
 *
 * Calls: rules.c (rules_parse, rerr_set).
 */
#include <sys/types.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "proxy.h"
#include "ollama.h"

#define MATCH_WINDOW	16	/* tool calls a tool_name is looked for in */

/* The options Ollama's Options and Runner have: each read as its type,
 * as Ollama reads it, and mapped to the OpenAI field "to" or, NULL,
 * ignored (the model process's own settings are the operator's). */
enum {
	OPT_INT,		/* any number, cut to an integer */
	OPT_FLOAT,		/* any number */
	OPT_BOOL,
	OPT_STRINGS,		/* an array of strings */
};

static const struct option {
	const char	*name;
	int		 type;
	const char	*to;
} options[] = {
	{ "num_predict", OPT_INT, "max_tokens" },
	{ "temperature", OPT_FLOAT, "temperature" },
	{ "top_p", OPT_FLOAT, "top_p" },
	{ "top_k", OPT_INT, "top_k" },
	{ "min_p", OPT_FLOAT, "min_p" },
	{ "typical_p", OPT_FLOAT, "typical_p" },
	{ "repeat_penalty", OPT_FLOAT, "repeat_penalty" },
	{ "repeat_last_n", OPT_INT, "repeat_last_n" },
	{ "presence_penalty", OPT_FLOAT, "presence_penalty" },
	{ "frequency_penalty", OPT_FLOAT, "frequency_penalty" },
	{ "seed", OPT_INT, "seed" },
	{ "stop", OPT_STRINGS, "stop" },
	{ "num_keep", OPT_INT, NULL },
	{ "num_ctx", OPT_INT, NULL },
	{ "num_batch", OPT_INT, NULL },
	{ "num_gpu", OPT_INT, NULL },
	{ "main_gpu", OPT_INT, NULL },
	{ "use_mmap", OPT_BOOL, NULL },
	{ "num_thread", OPT_INT, NULL },
	{ "draft_num_predict", OPT_INT, NULL },
};

/* The assistant message whose tool calls the tool messages after it
 * answer, in order. */
struct answered {
	json_object	*calls;		/* its converted tool_calls, or NULL */
	size_t		 next;
};

static int
oom(struct rerr *e)
{
	rerr_set(e, 500, "internal_error", "out of memory");
	return (-1);
}

/* Add v to o as k (v is taken, even on failure). */
static int
put(json_object *o, const char *k, json_object *v, struct rerr *e)
{
	if (v == NULL || json_object_object_add(o, k, v) != 0) {
		json_object_put(v);
		return (oom(e));
	}
	return (0);
}

/* A new object added to o as k: *child, or -1. */
static int
child(json_object *o, const char *k, json_object **c, struct rerr *e)
{
	if ((*c = json_object_new_object()) == NULL)
		return (oom(e));
	return (put(o, k, *c, e));
}

static int
push(json_object *a, json_object *v, struct rerr *e)
{
	if (v == NULL || json_object_array_add(a, v) != 0) {
		json_object_put(v);
		return (oom(e));
	}
	return (0);
}

/* A new object at the end of a: *item, or -1. */
static int
item(json_object *a, json_object **it, struct rerr *e)
{
	if ((*it = json_object_new_object()) == NULL)
		return (oom(e));
	return (push(a, *it, e));
}

/*
 * The member k of o when it has type t: 1 and *v; 0 when it is absent
 * or null; -1 and e when it is of another type.
 */
static int
member(json_object *o, const char *k, json_type t, json_object **v,
    struct rerr *e)
{
	static const char	*names[] = {
		[json_type_boolean] = "a boolean",
		[json_type_double] = "a number",
		[json_type_int] = "a number",
		[json_type_object] = "an object",
		[json_type_array] = "an array",
		[json_type_string] = "a string",
	};

	*v = NULL;
	if (!json_object_object_get_ex(o, k, v) ||
	    json_object_is_type(*v, json_type_null)) {
		*v = NULL;
		return (0);
	}
	if (json_object_is_type(*v, t) || (t == json_type_double &&
	    json_object_is_type(*v, json_type_int)))
		return (1);
	rerr_set(e, 400, "invalid_field", "the field '%s' must be %s", k,
	    names[t]);
	*v = NULL;
	return (-1);
}

/* A string member: "" when absent or null. */
static int
string(json_object *o, const char *k, const char **s, size_t *len,
    struct rerr *e)
{
	json_object	*v;
	int		 r;

	*s = "";
	*len = 0;
	if ((r = member(o, k, json_type_string, &v, e)) == 1) {
		*s = json_object_get_string(v);
		*len = (size_t)json_object_get_string_len(v);
	}
	return (r);
}

/* A number as Ollama takes one for an integer: cut toward zero. */
static int
integer(json_object *v, int64_t *out)
{
	double	 d;

	if (json_object_is_type(v, json_type_int)) {
		*out = json_object_get_int64(v);
		return (0);
	}
	if (!json_object_is_type(v, json_type_double))
		return (-1);
	d = json_object_get_double(v);
	if (!isfinite(d) || d >= 9.2e18 || d <= -9.2e18)
		return (-1);
	*out = (int64_t)d;
	return (0);
}

/*
 * keep_alive, as Ollama's Duration reads it: a number of seconds, or a
 * string of Go's durations ("5m", "1h30m", "0"); negative is forever.
 */
static int
go_duration(const char *s, int64_t *ms)
{
	static const struct unit {
		const char	*name;
		double		 ms;
	} units[] = {
		{ "ns", 1e-6 }, { "us", 1e-3 }, { "\xc2\xb5s", 1e-3 },
		{ "\xce\xbcs", 1e-3 }, { "ms", 1 }, { "s", 1e3 },
		{ "m", 60e3 }, { "h", 3600e3 },
	};
#define NUNITS	(sizeof(units) / sizeof(units[0]))
	const char	*p = s;
	double		 total = 0, v, scale;
	size_t		 i, n, best;
	int		 neg = 0, digits;

	if (*p == '-' || *p == '+')
		neg = *p++ == '-';
	if (strcmp(p, "0") == 0) {
		*ms = 0;
		return (0);
	}
	if (*p == '\0')
		return (-1);
	while (*p != '\0') {
		v = 0;
		digits = 0;
		while (*p >= '0' && *p <= '9') {
			v = v * 10 + (*p++ - '0');
			digits++;
		}
		if (*p == '.') {
			p++;
			for (scale = 0.1; *p >= '0' && *p <= '9'; scale /= 10) {
				v += (*p++ - '0') * scale;
				digits++;
			}
		}
		if (digits == 0)
			return (-1);
		/* the longest unit that is there: "ms" before "m" */
		best = NUNITS;
		n = 0;
		for (i = 0; i < NUNITS; i++)
			if (strncmp(p, units[i].name, strlen(units[i].name)) ==
			    0 && strlen(units[i].name) > n) {
				best = i;
				n = strlen(units[i].name);
			}
		if (best == NUNITS)
			return (-1);
		p += n;
		total += v * units[best].ms;
		if (total > 9.2e15)
			return (-1);
	}
	/* "-0s" is 0, as in Go */
	*ms = neg && total > 0 ? -1 : (int64_t)total;
	return (0);
#undef NUNITS
}

int
ollama_keep_alive(json_object *v, int *keep, int64_t *ms)
{
	double	 d;

	*ms = 0;
	if (v == NULL || json_object_is_type(v, json_type_null)) {
		*keep = OLLAMA_KEEP_DEFAULT;
		return (0);
	}
	if (json_object_is_type(v, json_type_int) ||
	    json_object_is_type(v, json_type_double)) {
		d = json_object_get_double(v);
		if (!isfinite(d))
			return (-1);
		if (d < 0) {
			*keep = OLLAMA_KEEP_FOREVER;
			return (0);
		}
		if (d > 9.2e12)
			return (-1);
		*keep = OLLAMA_KEEP_FOR;
		*ms = (int64_t)(d * 1000);
		return (0);
	}
	if (!json_object_is_type(v, json_type_string) ||
	    go_duration(json_object_get_string(v), ms) == -1)
		return (-1);
	*keep = *ms < 0 ? OLLAMA_KEEP_FOREVER : OLLAMA_KEEP_FOR;
	if (*ms < 0)
		*ms = 0;
	return (0);
}

/* "model": as named, and the name looked up (without ":latest"). */
static int
read_model(json_object *in, struct ollama_req *r, struct rerr *e)
{
	const char	*s;
	size_t		 len;

	if (string(in, "model", &s, &len, e) == -1)
		return (-1);
	if (len == 0)
		return (0);
	if (len >= sizeof(r->model) || memchr(s, '\0', len) != NULL) {
		rerr_set(e, 404, "model_not_found", "model '%.100s' not found",
		    s);
		return (-1);
	}
	memcpy(r->model, s, len + 1);
	memcpy(r->lookup, s, len + 1);
	if (len > 7 && strcmp(r->lookup + len - 7, ":latest") == 0)
		r->lookup[len - 7] = '\0';
	r->named = 1;
	return (0);
}

/* The options: each known one read as its type; those agency maps set
 * on out (when out is not NULL). */
static int
read_options(json_object *in, json_object *out, struct rerr *e)
{
	const struct option	*o;
	json_object		*opts, *v, *a;
	int64_t			 n;
	size_t			 i, k, len;
	int			 rc;

	if ((rc = member(in, "options", json_type_object, &opts, e)) != 1)
		return (rc);
	for (i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		o = &options[i];
		if (!json_object_object_get_ex(opts, o->name, &v) ||
		    json_object_is_type(v, json_type_null))
			continue;
		switch (o->type) {
		case OPT_INT:
			if (integer(v, &n) == -1)
				goto bad;
			if (out == NULL || o->to == NULL)
				break;
			/* num_predict -1 (no end) and -2 (the context), a
			 * seed of -1 (any): the server's own */
			if ((strcmp(o->name, "num_predict") == 0 && n <= 0) ||
			    (strcmp(o->name, "seed") == 0 && n < 0))
				break;
			if (put(out, o->to, json_object_new_int64(n), e) == -1)
				return (-1);
			break;
		case OPT_FLOAT:
			if (!json_object_is_type(v, json_type_double) &&
			    !json_object_is_type(v, json_type_int))
				goto bad;
			if (out != NULL && o->to != NULL &&
			    put(out, o->to, json_object_get(v), e) == -1)
				return (-1);
			break;
		case OPT_BOOL:
			if (!json_object_is_type(v, json_type_boolean))
				goto bad;
			break;
		case OPT_STRINGS:
			if (!json_object_is_type(v, json_type_array))
				goto bad;
			len = json_object_array_length(v);
			for (k = 0; k < len; k++)
				if (!json_object_is_type(
				    json_object_array_get_idx(v, k),
				    json_type_string))
					goto bad;
			if (out == NULL || o->to == NULL || len == 0)
				break;
			if ((a = json_object_new_array_ext((int)len)) == NULL)
				return (oom(e));
			for (k = 0; k < len; k++)
				(void)json_object_array_add(a, json_object_get(
				    json_object_array_get_idx(v, k)));
			if (put(out, o->to, a, e) == -1)
				return (-1);
			break;
		default:
			break;
		}
	}
	return (0);
 bad:
	rerr_set(e, 400, "invalid_option", "option \"%s\" must be %s",
	    o->name, o->type == OPT_INT ? "an integer" : o->type == OPT_FLOAT ?
	    "a number" : o->type == OPT_BOOL ? "a boolean" :
	    "an array of strings");
	return (-1);
}

/* The fields every request has: model, keep_alive, options. */
static int
read_common(json_object *in, struct ollama_req *r, struct rerr *e)
{
	json_object	*v = NULL;

	if (read_model(in, r, e) == -1)
		return (-1);
	(void)json_object_object_get_ex(in, "keep_alive", &v);
	if (ollama_keep_alive(v, &r->keep, &r->keep_ms) == -1) {
		rerr_set(e, 400, "invalid_keep_alive", "keep_alive must be a "
		    "number of seconds or a duration such as \"5m\"");
		return (-1);
	}
	return (0);
}

/* A boolean member, def when absent or null. */
static int
boolean(json_object *in, const char *k, int def, int *out, struct rerr *e)
{
	json_object	*v;
	int		 r;

	*out = def;
	if ((r = member(in, k, json_type_boolean, &v, e)) == 1)
		*out = json_object_get_boolean(v);
	return (r == -1 ? -1 : 0);
}

static int
b64(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return (c - 'A');
	if (c >= 'a' && c <= 'z')
		return (c - 'a' + 26);
	if (c >= '0' && c <= '9')
		return (c - '0' + 52);
	if (c == '+')
		return (62);
	if (c == '/')
		return (63);
	return (-1);
}

/*
 * The image type of base64 data, from its first bytes (the server reads
 * the bytes themselves; the type only has to be an image's, for the
 * rules, which take only data:image/ URLs): NULL when the data is not
 * base64 as Go decodes it (padded, nothing else) or not an image of a
 * type a model server reads.
 */
static const char *
image_type(const char *s, size_t len)
{
	unsigned char	 h[12];
	size_t		 i, pad = 0;
	int		 v[16];

	if (len == 0 || len % 4 != 0)
		return (NULL);
	if (s[len - 1] == '=')
		pad = s[len - 2] == '=' ? 2 : 1;
	for (i = 0; i < len - pad; i++)
		if (b64((unsigned char)s[i]) == -1)
			return (NULL);
	if (len < 16)
		return (NULL);
	for (i = 0; i < 16; i++)
		v[i] = s[i] == '=' ? 0 : b64((unsigned char)s[i]);
	for (i = 0; i < 4; i++) {
		h[3 * i] = (unsigned char)(v[4 * i] << 2 | v[4 * i + 1] >> 4);
		h[3 * i + 1] = (unsigned char)(v[4 * i + 1] << 4 |
		    v[4 * i + 2] >> 2);
		h[3 * i + 2] = (unsigned char)(v[4 * i + 2] << 6 | v[4 * i + 3]);
	}
	if (memcmp(h, "\x89PNG\r\n\x1a\n", 8) == 0)
		return ("image/png");
	if (memcmp(h, "\xff\xd8\xff", 3) == 0)
		return ("image/jpeg");
	if (memcmp(h, "GIF87a", 6) == 0 || memcmp(h, "GIF89a", 6) == 0)
		return ("image/gif");
	if (memcmp(h, "RIFF", 4) == 0 && memcmp(h + 8, "WEBP", 4) == 0)
		return ("image/webp");
	if (memcmp(h, "BM", 2) == 0)
		return ("image/bmp");
	return (NULL);
}

/* The images of a message (or a generate) as image_url parts of an
 * OpenAI content, onto parts. */
static int
image_parts(json_object *images, const char *where, json_object *parts,
    struct rerr *e)
{
	json_object	*img, *part, *iu;
	const char	*s, *type;
	char		*url;
	size_t		 i, n, len;

	n = json_object_array_length(images);
	for (i = 0; i < n; i++) {
		img = json_object_array_get_idx(images, i);
		if (!json_object_is_type(img, json_type_string)) {
			rerr_set(e, 400, "invalid_image",
			    "%s images[%zu] must be a string", where, i);
			return (-1);
		}
		s = json_object_get_string(img);
		len = (size_t)json_object_get_string_len(img);
		if ((type = image_type(s, len)) == NULL) {
			rerr_set(e, 400, "invalid_image", "%s images[%zu] is "
			    "not a base64 PNG, JPEG, GIF, WebP or BMP image",
			    where, i);
			return (-1);
		}
		if (asprintf(&url, "data:%s;base64,%s", type, s) == -1)
			return (oom(e));
		part = json_object_new_object();
		iu = json_object_new_object();
		if (part == NULL || iu == NULL ||
		    put(iu, "url", json_object_new_string(url), e) == -1 ||
		    put(part, "type", json_object_new_string("image_url"),
		    e) == -1 || put(part, "image_url", json_object_get(iu),
		    e) == -1 || push(parts, json_object_get(part), e) == -1) {
			free(url);
			json_object_put(part);
			json_object_put(iu);
			return (oom(e));
		}
		free(url);
		json_object_put(part);
		json_object_put(iu);
	}
	return (0);
}

/* A message's content for OpenAI: the text alone, or its images then
 * the text as parts. */
static json_object *
content(const char *text, size_t len, json_object *images, const char *where,
    struct rerr *e)
{
	json_object	*parts, *t;

	if (images == NULL || json_object_array_length(images) == 0) {
		if ((t = json_object_new_string_len(text, (int)len)) == NULL)
			(void)oom(e);
		return (t);
	}
	if ((parts = json_object_new_array()) == NULL) {
		(void)oom(e);
		return (NULL);
	}
	if (image_parts(images, where, parts, e) == -1) {
		json_object_put(parts);
		return (NULL);
	}
	if (len > 0) {
		if ((t = json_object_new_object()) == NULL ||
		    put(t, "type", json_object_new_string("text"), e) == -1 ||
		    put(t, "text", json_object_new_string_len(text, (int)len),
		    e) == -1 || push(parts, t, e) == -1) {
			json_object_put(parts);
			return (NULL);
		}
	}
	return (parts);
}

/* An assistant's tool calls, Ollama's into OpenAI's: arguments as a
 * string of JSON, an id made where it has none. */
static json_object *
tool_calls(json_object *calls, size_t mi, struct rerr *e)
{
	json_object	*out, *c, *f, *name, *args, *id, *oc, *of;
	const char	*text;
	char		 made[48];
	size_t		 i, n;

	n = json_object_array_length(calls);
	if ((out = json_object_new_array_ext((int)n)) == NULL) {
		(void)oom(e);
		return (NULL);
	}
	for (i = 0; i < n; i++) {
		c = json_object_array_get_idx(calls, i);
		if (!json_object_is_type(c, json_type_object) ||
		    member(c, "function", json_type_object, &f, e) != 1 ||
		    member(f, "name", json_type_string, &name, e) != 1 ||
		    member(f, "arguments", json_type_object, &args, e) == -1 ||
		    member(c, "id", json_type_string, &id, e) == -1) {
			rerr_set(e, 400, "invalid_tool_call",
			    "messages[%zu].tool_calls[%zu] must have a function "
			    "with a name and an object of arguments", mi, i);
			goto fail;
		}
		text = args == NULL ? "{}" : json_object_to_json_string_ext(
		    args, JSON_C_TO_STRING_PLAIN |
		    JSON_C_TO_STRING_NOSLASHESCAPE);
		(void)snprintf(made, sizeof(made), "call_%zu_%zu", mi, i);
		if (item(out, &oc, e) == -1 ||
		    put(oc, "id", id != NULL ? json_object_get(id) :
		    json_object_new_string(made), e) == -1 ||
		    put(oc, "type", json_object_new_string("function"), e) ==
		    -1 || child(oc, "function", &of, e) == -1 ||
		    put(of, "name", json_object_get(name), e) == -1 ||
		    put(of, "arguments", json_object_new_string(text), e) == -1)
			goto fail;
	}
	return (out);
 fail:
	json_object_put(out);
	return (NULL);
}

/* The id of the call a tool message answers: the next of the last
 * assistant's, or, when its name is not that call's, the first of the
 * next few with that name. */
static json_object *
answered_id(struct answered *an, const char *name)
{
	json_object	*c, *f, *n;
	size_t		 i, len;

	if (an->calls == NULL)
		return (NULL);
	len = json_object_array_length(an->calls);
	for (i = an->next; i < len && i < an->next + MATCH_WINDOW; i++) {
		c = json_object_array_get_idx(an->calls, i);
		if (name[0] != '\0' &&
		    (!json_object_object_get_ex(c, "function", &f) ||
		    !json_object_object_get_ex(f, "name", &n) ||
		    strcmp(json_object_get_string(n), name) != 0))
			continue;
		if (i == an->next)
			an->next++;
		(void)json_object_object_get_ex(c, "id", &n);
		return (n);
	}
	return (NULL);
}

static void
lower(char *s)
{
	for (; *s != '\0'; s++)
		if (*s >= 'A' && *s <= 'Z')
			*s += 'a' - 'A';
}

/* One of /api/chat's messages onto list. */
static int
message(json_object *m, size_t i, json_object *list, struct answered *an,
    struct rerr *e)
{
	json_object	*o, *images, *calls, *c, *id;
	const char	*role, *text, *thinking, *name, *callid;
	size_t		 rlen, tlen, thlen, nlen, clen;
	char		 where[48], *lrole;

	(void)snprintf(where, sizeof(where), "messages[%zu]", i);
	if (!json_object_is_type(m, json_type_object)) {
		rerr_set(e, 400, "invalid_message", "%s must be an object",
		    where);
		return (-1);
	}
	if (string(m, "role", &role, &rlen, e) == -1 ||
	    string(m, "content", &text, &tlen, e) == -1 ||
	    string(m, "thinking", &thinking, &thlen, e) == -1 ||
	    string(m, "tool_name", &name, &nlen, e) == -1 ||
	    string(m, "tool_call_id", &callid, &clen, e) == -1 ||
	    member(m, "images", json_type_array, &images, e) == -1 ||
	    member(m, "tool_calls", json_type_array, &calls, e) == -1)
		return (-1);
	if (rlen == 0) {
		rerr_set(e, 400, "invalid_message", "%s has no role", where);
		return (-1);
	}
	if (item(list, &o, e) == -1)
		return (-1);
	if ((lrole = strdup(role)) == NULL)
		return (oom(e));
	lower(lrole);
	if (put(o, "role", json_object_new_string(lrole), e) == -1 ||
	    (c = content(text, tlen, images, where, e)) == NULL ||
	    put(o, "content", c, e) == -1) {
		free(lrole);
		return (-1);
	}
	if (thlen > 0 && put(o, "reasoning_content",
	    json_object_new_string_len(thinking, (int)thlen), e) == -1) {
		free(lrole);
		return (-1);
	}
	if (calls != NULL && json_object_array_length(calls) > 0) {
		if ((c = tool_calls(calls, i, e)) == NULL) {
			free(lrole);
			return (-1);
		}
		an->calls = c;
		an->next = 0;
		if (put(o, "tool_calls", c, e) == -1) {
			free(lrole);
			an->calls = NULL;
			return (-1);
		}
	}
	if (strcmp(lrole, "tool") == 0) {
		if (clen > 0)
			id = json_object_new_string_len(callid, (int)clen);
		else if ((id = answered_id(an, name)) != NULL)
			id = json_object_get(id);
		if (id != NULL && put(o, "tool_call_id", id, e) == -1) {
			free(lrole);
			return (-1);
		}
	}
	free(lrole);
	return (0);
}

/*
 * What chat and generate share: stream, format, think, logprobs, and
 * the fields agency refuses.  chat: the body goes to chat completions
 * (not raw completions).
 */
static int
read_generation(json_object *in, json_object *out, struct ollama_req *r,
    int chat, struct rerr *e)
{
	json_object	*v, *rf, *js, *k;
	const char	*s;
	int		 b, n;
	int64_t		 top = 0;

	if (boolean(in, "stream", 1, &r->stream, e) == -1 ||
	    put(out, "stream", json_object_new_boolean(r->stream), e) == -1)
		return (-1);
	if (r->stream && (child(out, "stream_options", &v, e) == -1 ||
	    put(v, "include_usage", json_object_new_boolean(1), e) == -1))
		return (-1);
	if (read_options(in, out, e) == -1)
		return (-1);

	/* format: "json", or a JSON schema */
	if (json_object_object_get_ex(in, "format", &v) &&
	    !json_object_is_type(v, json_type_null) &&
	    !(json_object_is_type(v, json_type_string) &&
	    json_object_get_string_len(v) == 0)) {
		if (child(out, "response_format", &rf, e) == -1)
			return (-1);
		if (json_object_is_type(v, json_type_string) &&
		    strcmp(json_object_get_string(v), "json") == 0) {
			if (put(rf, "type", json_object_new_string(
			    "json_object"), e) == -1)
				return (-1);
		} else if (json_object_is_type(v, json_type_object)) {
			if (put(rf, "type", json_object_new_string(
			    "json_schema"), e) == -1 ||
			    child(rf, "json_schema", &js, e) == -1 ||
			    put(js, "name", json_object_new_string("format"),
			    e) == -1 ||
			    put(js, "schema", json_object_get(v), e) == -1)
				return (-1);
		} else {
			rerr_set(e, 400, "invalid_format", "format must be "
			    "\"json\" or a JSON schema (an object)");
			return (-1);
		}
	}

	/* think: a boolean, or how hard */
	if (json_object_object_get_ex(in, "think", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		s = json_object_is_type(v, json_type_string) ?
		    json_object_get_string(v) : NULL;
		if (!json_object_is_type(v, json_type_boolean) && (s == NULL ||
		    (strcmp(s, "low") != 0 && strcmp(s, "medium") != 0 &&
		    strcmp(s, "high") != 0 && strcmp(s, "max") != 0))) {
			rerr_set(e, 400, "invalid_think", "think must be true, "
			    "false, \"low\", \"medium\", \"high\" or \"max\"");
			return (-1);
		}
		if (chat) {
			b = s != NULL || json_object_get_boolean(v);
			if (child(out, "chat_template_kwargs", &k, e) == -1 ||
			    put(k, "enable_thinking",
			    json_object_new_boolean(b), e) == -1)
				return (-1);
			if (s != NULL && put(out, "reasoning_effort",
			    json_object_new_string(strcmp(s, "max") == 0 ?
			    "high" : s), e) == -1)
				return (-1);
		}
	}

	if (boolean(in, "logprobs", 0, &b, e) == -1)
		return (-1);
	if (member(in, "top_logprobs", json_type_double, &v, e) == -1 ||
	    (v != NULL && integer(v, &top) == -1) || top < 0 ||
	    top > OLLAMA_TOP_LOGPROBS) {
		rerr_set(e, 400, "invalid_top_logprobs", "top_logprobs must be "
		    "between 0 and %d", OLLAMA_TOP_LOGPROBS);
		return (-1);
	}
	if (b && !chat) {
		rerr_set(e, 400, "unsupported_field", "logprobs are not "
		    "translated for a raw generate");
		return (-1);
	}
	if (b && (put(out, "logprobs", json_object_new_boolean(1), e) == -1 ||
	    (top > 0 && put(out, "top_logprobs", json_object_new_int64(top),
	    e) == -1)))
		return (-1);

	/* the context window is the operator's: read, not used */
	if (boolean(in, "truncate", 1, &n, e) == -1 ||
	    boolean(in, "shift", 1, &n, e) == -1 ||
	    boolean(in, "_debug_render_only", 0, &b, e) == -1)
		return (-1);
	if (b) {
		rerr_set(e, 400, "unsupported_field", "agency does not render "
		    "prompt templates (_debug_render_only): the model server "
		    "applies the model's own");
		return (-1);
	}
	return (0);
}

static int
chat(json_object *in, json_object *out, struct ollama_req *r,
    struct rerr *e)
{
	json_object	*msgs, *list, *tools;
	struct answered	 an = { NULL, 0 };
	size_t		 i, n = 0;

	r->route = "/v1/chat/completions";
	if (member(in, "messages", json_type_array, &msgs, e) == -1)
		return (-1);
	if (msgs != NULL)
		n = json_object_array_length(msgs);
	r->load = n == 0;
	if (put(out, "messages", list = json_object_new_array_ext((int)n),
	    e) == -1)
		return (-1);
	for (i = 0; i < n; i++)
		if (message(json_object_array_get_idx(msgs, i), i, list, &an,
		    e) == -1)
			return (-1);
	if (read_generation(in, out, r, 1, e) == -1 ||
	    member(in, "tools", json_type_array, &tools, e) == -1)
		return (-1);
	if (tools != NULL && json_object_array_length(tools) > 0 &&
	    put(out, "tools", json_object_get(tools), e) == -1)
		return (-1);
	return (0);
}

static int
generate(json_object *in, json_object *out, struct ollama_req *r,
    struct rerr *e)
{
	json_object	*images, *ctx, *list, *m, *c;
	const char	*prompt, *suffix, *system, *tmpl;
	size_t		 plen, slen, sylen, tlen;
	int		 raw;

	if (string(in, "prompt", &prompt, &plen, e) == -1 ||
	    string(in, "suffix", &suffix, &slen, e) == -1 ||
	    string(in, "system", &system, &sylen, e) == -1 ||
	    string(in, "template", &tmpl, &tlen, e) == -1 ||
	    member(in, "images", json_type_array, &images, e) == -1 ||
	    member(in, "context", json_type_array, &ctx, e) == -1 ||
	    boolean(in, "raw", 0, &raw, e) == -1)
		return (-1);
	if (slen > 0) {
		rerr_set(e, 400, "unsupported_field", "suffix is not "
		    "translated: the model server's completions route does not "
		    "fill in the middle");
		return (-1);
	}
	if (tlen > 0) {
		rerr_set(e, 400, "unsupported_field", "template is not "
		    "translated: the model server applies the model's own");
		return (-1);
	}
	if (ctx != NULL && json_object_array_length(ctx) > 0) {
		rerr_set(e, 400, "unsupported_field", "context is not "
		    "translated: agency keeps no context; send the "
		    "conversation to /api/chat");
		return (-1);
	}
	if (raw && sylen > 0) {
		rerr_set(e, 400, "unsupported_field",
		    "raw mode does not take a system message");
		return (-1);
	}
	if (raw && images != NULL && json_object_array_length(images) > 0) {
		rerr_set(e, 400, "unsupported_field", "raw mode does not take "
		    "images: it goes to the completions route");
		return (-1);
	}
	r->load = plen == 0;
	if (raw) {
		r->route = "/v1/completions";
		if (put(out, "prompt", json_object_new_string_len(prompt,
		    (int)plen), e) == -1)
			return (-1);
		return (read_generation(in, out, r, 0, e));
	}
	r->route = "/v1/chat/completions";
	if (put(out, "messages", list = json_object_new_array(), e) == -1)
		return (-1);
	if (sylen > 0 && (item(list, &m, e) == -1 ||
	    put(m, "role", json_object_new_string("system"), e) == -1 ||
	    put(m, "content", json_object_new_string_len(system, (int)sylen),
	    e) == -1))
		return (-1);
	if (item(list, &m, e) == -1 ||
	    put(m, "role", json_object_new_string("user"), e) == -1 ||
	    (c = content(prompt, plen, images, "the prompt's", e)) == NULL ||
	    put(m, "content", c, e) == -1)
		return (-1);
	return (read_generation(in, out, r, 1, e));
}

static int
embed(json_object *in, json_object *out, struct ollama_req *r,
    struct rerr *e)
{
	json_object	*v = NULL, *dim;
	size_t		 i, n;
	int		 t;

	r->route = "/v1/embeddings";
	r->stream = 0;
	if (read_options(in, NULL, e) == -1 ||
	    boolean(in, "truncate", 1, &t, e) == -1 ||
	    member(in, "dimensions", json_type_double, &dim, e) == -1)
		return (-1);
	if (dim != NULL && integer(dim, &r->dimensions) == -1) {
		rerr_set(e, 400, "invalid_field",
		    "the field 'dimensions' must be an integer");
		return (-1);
	}
	if (r->dimensions < 0)
		r->dimensions = 0;
	(void)json_object_object_get_ex(in, "input", &v);
	if (v == NULL || json_object_is_type(v, json_type_null)) {
		r->load = 1;
		return (0);
	}
	if (json_object_is_type(v, json_type_string)) {
		r->load = json_object_get_string_len(v) == 0;
		return (put(out, "input", json_object_get(v), e));
	}
	if (!json_object_is_type(v, json_type_array))
		goto bad;
	n = json_object_array_length(v);
	for (i = 0; i < n; i++)
		if (!json_object_is_type(json_object_array_get_idx(v, i),
		    json_type_string))
			goto bad;
	r->load = n == 0;
	return (put(out, "input", json_object_get(v), e));
 bad:
	rerr_set(e, 400, "invalid_input",
	    "input must be a string or an array of strings");
	return (-1);
}

static int
embeddings(json_object *in, json_object *out, struct ollama_req *r,
    struct rerr *e)
{
	const char	*prompt;
	size_t		 len;

	r->route = "/v1/embeddings";
	r->stream = 0;
	if (read_options(in, NULL, e) == -1 ||
	    string(in, "prompt", &prompt, &len, e) == -1)
		return (-1);
	r->load = len == 0;
	return (put(out, "input", json_object_new_string_len(prompt,
	    (int)len), e));
}

int
ollama_request(int api, const char *buf, size_t len, struct ollama_req *r,
    struct rerr *e)
{
	json_object	*in, *out = NULL;
	int		 rc;

	memset(r, 0, sizeof(*r));
	memset(e, 0, sizeof(*e));
	r->api = api;
	if ((in = rules_parse(buf, len, e)) == NULL)
		return (-1);
	if (read_common(in, r, e) == -1)
		goto fail;
	if ((out = json_object_new_object()) == NULL) {
		(void)oom(e);
		goto fail;
	}
	if (r->named && put(out, "model", json_object_new_string(r->lookup),
	    e) == -1)
		goto fail;
	switch (api) {
	case OLLAMA_CHAT:
		rc = chat(in, out, r, e);
		break;
	case OLLAMA_GENERATE:
		rc = generate(in, out, r, e);
		break;
	case OLLAMA_EMBED:
		rc = embed(in, out, r, e);
		break;
	case OLLAMA_EMBEDDINGS:
		rc = embeddings(in, out, r, e);
		break;
	default:
		rerr_set(e, 404, "route_not_found", "no such route");
		rc = -1;
		break;
	}
	if (rc == -1)
		goto fail;
	json_object_put(in);
	if (r->load) {
		json_object_put(out);
		out = NULL;
	}
	r->body = out;
	return (0);
 fail:
	json_object_put(in);
	json_object_put(out);
	r->body = NULL;
	return (-1);
}

void
ollama_req_clear(struct ollama_req *r)
{
	json_object_put(r->body);
	r->body = NULL;
}
