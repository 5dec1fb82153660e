/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A bounded YAML reader for llama-swap's configuration: libyaml's
 * events made into a tree of mappings, sequences and scalars, with the
 * line of each.  Only what llama-swap's documented configuration uses is
 * taken; anchors, aliases, tags, directives and more than one document
 * are refused with the line and what to write instead.  The bounds
 * (import.h) hold whatever the file is: its size is checked by the
 * caller, the depth, the number of nodes and each scalar's length here.
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "import.h"

#define YAML_TAG_PREFIX	"tag:yaml.org,2002:"

struct yread {
	struct ynode	*stack[YAML_DEPTH_MAX];
	size_t		 depth;
	size_t		 nodes;
	struct ynode	*root;
	int		 docs;
	int		*line;
	char		*err;
	size_t		 errlen;
};

static int	yread_fail(struct yread *, int, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));
static int	yread_event(struct yread *, const yaml_event_t *);
static int	yread_add(struct yread *, struct ynode *);
static int	yread_scalar(struct yread *, struct ynode *, const yaml_event_t *,
		    int);
static int	yread_keys(struct yread *, const struct ynode *);
static int	key_cmp(const void *, const void *);

static int
yread_fail(struct yread *r, int line, const char *fmt, ...)
{
	va_list	ap;

	*r->line = line;
	va_start(ap, fmt);
	(void)vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return (-1);
}

struct ynode *
ytree_read(const char *buf, size_t len, int *line, char *err, size_t errlen)
{
	yaml_parser_t	 parser;
	yaml_event_t	 ev;
	struct yread	 r;
	int		 done = 0, rv = 0;

	memset(&r, 0, sizeof(r));
	r.line = line;
	r.err = err;
	r.errlen = errlen;
	*line = 0;
	if (!yaml_parser_initialize(&parser)) {
		(void)snprintf(err, errlen, "out of memory");
		return (NULL);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf,
	    len);
	while (!done && rv == 0) {
		if (!yaml_parser_parse(&parser, &ev)) {
			rv = yread_fail(&r, (int)parser.problem_mark.line + 1,
			    "%s%s%s%s", parser.problem != NULL ?
			    parser.problem : "malformed YAML",
			    parser.context != NULL ? " (" : "",
			    parser.context != NULL ? parser.context : "",
			    parser.context != NULL ? ")" : "");
			break;
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		rv = yread_event(&r, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	if (rv == 0 && r.root == NULL)
		rv = yread_fail(&r, 0, "the file holds no YAML document");
	if (rv == -1) {
		/* Every node made is in the root's tree by now. */
		ytree_free(r.root);
		return (NULL);
	}
	return (r.root);
}

/* A scalar's node n (new, freed on failure) filled from ev and added. */
static int
yread_scalar(struct yread *r, struct ynode *n, const yaml_event_t *ev,
    int line)
{
	size_t		 i;

	n->kind = YN_SCALAR;
	n->len = ev->data.scalar.length;
	switch (ev->data.scalar.style) {
	case YAML_SINGLE_QUOTED_SCALAR_STYLE:
	case YAML_DOUBLE_QUOTED_SCALAR_STYLE:
		n->style = YS_QUOTED;
		break;
	case YAML_LITERAL_SCALAR_STYLE:
	case YAML_FOLDED_SCALAR_STYLE:
		n->style = YS_BLOCK;
		break;
	default:
		n->style = YS_PLAIN;
		break;
	}
	if (n->len > YAML_STR_MAX) {
		free(n);
		return (yread_fail(r, line, "a string of more than "
		    "%d bytes", YAML_STR_MAX));
	}
	/* Control characters are the markers of lsmacro.c. */
	for (i = 0; i < n->len; i++) {
		if ((ev->data.scalar.value[i] < 0x20 &&
		    ev->data.scalar.value[i] != '\t' &&
		    ev->data.scalar.value[i] != '\n') ||
		    ev->data.scalar.value[i] == 0x7f) {
			free(n);
			return (yread_fail(r, line, "a control "
			    "character (0x%02x) in a string",
			    ev->data.scalar.value[i]));
		}
	}
	if ((n->str = malloc(n->len + 1)) == NULL) {
		free(n);
		return (yread_fail(r, line, "out of memory"));
	}
	memcpy(n->str, ev->data.scalar.value, n->len);
	n->str[n->len] = '\0';
	return (yread_add(r, n));
}

static int
yread_event(struct yread *r, const yaml_event_t *ev)
{
	struct ynode	*n;
	int		 line = (int)ev->start_mark.line + 1;
	const unsigned char *anchor = NULL, *tag = NULL;

	switch (ev->type) {
	case YAML_STREAM_START_EVENT:
	case YAML_STREAM_END_EVENT:
	case YAML_DOCUMENT_END_EVENT:
	case YAML_NO_EVENT:
		return (0);
	case YAML_DOCUMENT_START_EVENT:
		if (ev->data.document_start.version_directive != NULL ||
		    ev->data.document_start.tag_directives.start !=
		    ev->data.document_start.tag_directives.end)
			return (yread_fail(r, line, "YAML directives (%%YAML, "
			    "%%TAG) are not part of llama-swap's "
			    "configuration"));
		if (r->docs++ > 0)
			return (yread_fail(r, line, "a second YAML document: "
			    "llama-swap reads one"));
		return (0);
	case YAML_ALIAS_EVENT:
		return (yread_fail(r, line, "an alias (*%s): llama-swap's "
		    "documented configuration uses none; write the value "
		    "out", (const char *)ev->data.alias.anchor));
	case YAML_SCALAR_EVENT:
		anchor = ev->data.scalar.anchor;
		tag = ev->data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor;
		tag = ev->data.sequence_start.tag;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor;
		tag = ev->data.mapping_start.tag;
		break;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (r->depth == 0)
			return (yread_fail(r, line, "unbalanced YAML"));
		n = r->stack[--r->depth];
		return (n->kind == YN_MAP ? yread_keys(r, n) : 0);
	default:
		return (yread_fail(r, line, "unknown YAML event"));
	}
	if (anchor != NULL)
		return (yread_fail(r, line, "an anchor (&%s): llama-swap's "
		    "documented configuration uses none; write the value "
		    "out", (const char *)anchor));
	/* libyaml gives !!int as tag:yaml.org,2002:int. */
	if (tag != NULL)
		return (yread_fail(r, line, "a tag (%s%s): llama-swap's "
		    "documented configuration uses none",
		    strncmp((const char *)tag, YAML_TAG_PREFIX,
		    strlen(YAML_TAG_PREFIX)) == 0 ? "!!" : "",
		    (const char *)tag + (strncmp((const char *)tag,
		    YAML_TAG_PREFIX, strlen(YAML_TAG_PREFIX)) == 0 ?
		    strlen(YAML_TAG_PREFIX) : 0)));
	if (r->nodes >= YAML_NODES_MAX)
		return (yread_fail(r, line, "more than %d YAML nodes",
		    YAML_NODES_MAX));
	if ((n = calloc(1, sizeof(*n))) == NULL)
		return (yread_fail(r, line, "out of memory"));
	r->nodes++;
	n->line = line;
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return (yread_scalar(r, n, ev, line));
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		n->kind = ev->type == YAML_SEQUENCE_START_EVENT ? YN_SEQ :
		    YN_MAP;
		if (yread_add(r, n) == -1)
			return (-1);
		if (r->depth >= YAML_DEPTH_MAX)
			return (yread_fail(r, line, "nested more than %d "
			    "deep", YAML_DEPTH_MAX));
		r->stack[r->depth++] = n;
		return (0);
	default:
		free(n);
		return (yread_fail(r, line, "unknown YAML event"));
	}
}

/* n in its parent, or as the root; n is the tree's from here on. */
static int
yread_add(struct yread *r, struct ynode *n)
{
	struct ynode	*p, **k;
	size_t		 size;

	if (r->depth == 0) {
		if (r->root != NULL) {
			ytree_free(n);
			return (yread_fail(r, n->line, "a second YAML "
			    "document"));
		}
		r->root = n;
		return (0);
	}
	p = r->stack[r->depth - 1];
	if (p->nkid == p->kidsize) {
		size = p->kidsize == 0 ? 8 : p->kidsize * 2;
		if ((k = reallocarray(p->kid, size, sizeof(*k))) == NULL) {
			ytree_free(n);
			return (yread_fail(r, n->line, "out of memory"));
		}
		p->kid = k;
		p->kidsize = size;
	}
	p->kid[p->nkid++] = n;
	if (p->kind == YN_MAP && p->nkid % 2 == 1 && n->kind != YN_SCALAR)
		return (yread_fail(r, n->line, "a key that is %s: "
		    "llama-swap's keys are strings", ynode_what(n)));
	return (0);
}

static int
key_cmp(const void *a, const void *b)
{
	const struct ynode	*x = *(const struct ynode *const *)a;
	const struct ynode	*y = *(const struct ynode *const *)b;
	int			 c;

	if ((c = strcmp(x->str, y->str)) != 0)
		return (c);
	return (x->line < y->line ? -1 : x->line > y->line);
}

/* Every key of a mapping once: sorted, so a large one stays cheap. */
static int
yread_keys(struct yread *r, const struct ynode *map)
{
	const struct ynode	**keys;
	size_t			  i, n = map->nkid / 2;
	int			  rv = 0;

	if (n < 2)
		return (0);
	if ((keys = reallocarray(NULL, n, sizeof(*keys))) == NULL)
		return (yread_fail(r, map->line, "out of memory"));
	for (i = 0; i < n; i++)
		keys[i] = map->kid[2 * i];
	qsort(keys, n, sizeof(*keys), key_cmp);
	for (i = 1; i < n; i++) {
		if (strcmp(keys[i - 1]->str, keys[i]->str) == 0) {
			rv = yread_fail(r, keys[i]->line, "key \"%s\" given "
			    "twice (first at line %d)", keys[i]->str,
			    keys[i - 1]->line);
			break;
		}
	}
	free(keys);
	return (rv);
}

void
ytree_free(struct ynode *n)
{
	size_t	i;

	if (n == NULL)
		return;
	for (i = 0; i < n->nkid; i++)
		ytree_free(n->kid[i]);
	free(n->kid);
	free(n->str);
	free(n);
}

const struct ynode *
ymap_get(const struct ynode *map, const char *key, const struct ynode **keyp)
{
	size_t	i;

	if (map == NULL || map->kind != YN_MAP)
		return (NULL);
	for (i = 0; i + 1 < map->nkid; i += 2) {
		if (strcmp(map->kid[i]->str, key) == 0) {
			if (keyp != NULL)
				*keyp = map->kid[i];
			return (map->kid[i + 1]);
		}
	}
	return (NULL);
}

int
ynode_null(const struct ynode *n)
{
	return (n == NULL || (n->kind == YN_SCALAR && n->style == YS_PLAIN &&
	    (n->len == 0 || strcmp(n->str, "~") == 0 ||
	    strcmp(n->str, "null") == 0 || strcmp(n->str, "Null") == 0 ||
	    strcmp(n->str, "NULL") == 0)));
}

const char *
ynode_what(const struct ynode *n)
{
	switch (n->kind) {
	case YN_MAP:
		return ("a mapping");
	case YN_SEQ:
		return ("a list");
	case YN_SCALAR:
		return (ynode_null(n) ? "empty" : "a string");
	default:
		return ("unknown");
	}
}
