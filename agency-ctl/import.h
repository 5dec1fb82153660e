/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl import llama-swap: what the importer's files share,
 * beginning with the bounded YAML reader (yamlread.c).
 */
#ifndef AGENCY_CTL_IMPORT_H
#define AGENCY_CTL_IMPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * yamlread.c: a YAML file as a tree, with the features llama-swap's
 * documented configuration uses (mappings, sequences, scalars of every
 * style) and no others: anchors, aliases, tags, directives and a second
 * document are refused, as are duplicate keys, keys that are not
 * strings and control characters in strings.
 */
#define YAML_FILE_MAX	(1024 * 1024)	/* bytes; llama-swap's full
					 * example is 30K */
#define YAML_DEPTH_MAX	32		/* nested mappings and sequences */
#define YAML_NODES_MAX	65536
#define YAML_STR_MAX	65536		/* bytes in one scalar */

enum ynode_kind {
	YN_SCALAR,
	YN_MAP,
	YN_SEQ,
};

enum ynode_style {
	YS_PLAIN,		/* may be a number, a bool or null */
	YS_QUOTED,		/* '...' or "...": always a string */
	YS_BLOCK,		/* | or >: always a string */
};

struct ynode {
	enum ynode_kind	  kind;
	enum ynode_style  style;	/* scalars */
	int		  line;		/* from 1 */
	char		 *str;		/* scalars: NUL-terminated */
	size_t		  len;
	struct ynode	**kid;		/* maps: key, value, key, ...;
					 * sequences: the items */
	size_t		  nkid;
	size_t		  kidsize;
};

/* The tree of buf, or NULL with *line (0: no line) and a message. */
struct ynode	*ytree_read(const char *, size_t, int *, char *, size_t);
void		 ytree_free(struct ynode *);
/* A mapping's value for key (the key's node through keyp), or NULL. */
const struct ynode *ymap_get(const struct ynode *, const char *,
		    const struct ynode **);
/* A plain empty scalar, ~ or null: YAML's null. */
int		 ynode_null(const struct ynode *);
/* The type name of a node for messages: "a mapping", ... */
const char	*ynode_what(const struct ynode *);

#endif /* AGENCY_CTL_IMPORT_H */
