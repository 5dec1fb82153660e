/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl import llama-swap: what the importer's files share.  The
 * calls go one way: import*.c (the mapping and the writing, see
 * import_priv.h) use
 * lscmd.c (command lines), lsmacro.c (llama-swap's macros) and
 * yamlread.c (the bounded YAML reader); none of those uses another.
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

/*
 * lsmacro.c: llama-swap's macros.  A scope is the list of macros in the
 * order they are substituted: llama-swap replaces the last declared
 * first, so a macro may use the macros declared before it.
 */
#define MACRO_NAME_MAX	64		/* llama-swap: under 64 bytes */
#define MACRO_EXPAND_MAX 65536		/* bytes a value may grow to */
#define MACROS_MAX	1024		/* in one scope */

/*
 * Markers the expansion leaves for the values agency fills in itself:
 * ${PORT} and ${MODEL_ID} in a command become %p and %m.  The YAML
 * reader refuses control characters, so none comes from the file.
 */
#define MARK_PORT	'\001'
#define MARK_MODEL	'\002'
#define MARK_UPSTREAM	'\003'		/* lscmd.c: the word that is %u */

struct macro {
	char	 name[MACRO_NAME_MAX];
	char	*value;			/* as llama-swap prints it */
	int	 line;
};

struct macros {
	struct macro	*m;
	size_t		 n;
	size_t		 size;
};

/* 0, or -1 with a message: the name or the value is not one it takes. */
int		 macro_check(const char *, const char *, char *, size_t);
/* The value of a plain scalar as Go's %v prints what YAML made of it. */
char		*macro_scalar(const char *, int);
/* Add or replace (in place, as a model's macro overrides a global). */
int		 macros_set(struct macros *, const char *, const char *, int);
void		 macros_free(struct macros *);
/* ${env.NAME} from the environment: a new string, or NULL and why. */
char		*macro_env(const char *, char *, size_t);
/* The scope's macros in s: a new string, or NULL and why. */
char		*macro_expand(const struct macros *, const char *, char *,
		    size_t);
/* The first ${NAME} left in s (its name in buf), or NULL. */
const char	*macro_left(const char *, char *, size_t);

/*
 * lscmd.c: llama-swap's command lines and agency's command templates.
 */
#define CMD_WORDS_MAX	1024

struct words {
	char	**w;
	size_t	  n;
	size_t	  size;
};

/* cmd without its comment lines, as llama-swap reads it before macros. */
char		*cmd_uncomment(const char *);
/* As llama-swap splits cmd: comment lines out, then POSIX words. */
int		 words_split(const char *, struct words *);
int		 words_add(struct words *, const char *);
void		 words_free(struct words *);
int		 words_equal(const struct words *, const struct words *);
/* Whether the word carries a marker (MARK_*). */
int		 word_marked(const char *, int);
/*
 * The words as agency's spawn reads a command, markers as %p, %m and
 * %u and a literal % doubled, from word i to word j (excluded); into
 * buf.  -1 when it does not fit or a word cannot be written (a line's
 * end in it).
 */
int		 words_template(const struct words *, size_t, size_t, char *,
		    size_t);
/* The word after an option (-o V, --opt V, --opt=V): its index, or -1. */
ssize_t		 words_option(const struct words *, const char *const *,
		    int *);
/*
 * The common beginning and end of a set of commands: how many words
 * all share at the start (*pre) and at the end (*suf), never counting
 * the same word twice, and not ending the beginning at an option
 * whose value differs.
 */
void		 words_common(const struct words *const *, size_t, size_t *,
		    size_t *);

/*
 * import.c
 */

/*
 * What agency.conf has that main does not yet: with a feature off the
 * importer writes what would use it as a comment and falls back to
 * what there is, so that its output is a valid agency.conf today.
 * Each is switched on, here and in import_defaults(), once it is on
 * main.
 */
struct import_features {
	int	args;		/* %a and a model's args: issue 33 item 20 */
	int	preload;	/* loaded at start, evictable: issue 33 item 20 */
	int	unlisted;	/* out of /v1/models: issue 33 item 20 */
	int	strip;		/* a request field dropped: issue 33 item 20 */
	int	stop;		/* a runtime's stop command: issue 36 item 2 */
};

struct import_opts {
	struct import_features	 features;
	/* "Today" for messages that depend on nothing else: tests. */
	const char		*name;		/* the file, in messages */
};

void		 import_defaults(struct import_opts *);
/*
 * Read a llama-swap configuration of len bytes and write an agency.conf
 * to out and the summary to err.  0, or -1 after FILE:LINE: errors on
 * err and nothing on out.
 */
int		 import_llama_swap(const char *, size_t,
		    const struct import_opts *, FILE *, FILE *);
/* The same from a file ("-": standard input), bounded by YAML_FILE_MAX. */
int		 import_llama_swap_file(const char *,
		    const struct import_opts *, FILE *, FILE *);

#endif /* AGENCY_CTL_IMPORT_H */
