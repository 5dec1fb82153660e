/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl import llama-swap FILE: a llama-swap configuration made an
 * agency.conf.  The file is read into a tree (yamlread.c), llama-swap's
 * macros are expanded by its rules (lsmacro.c), each model's cmd is
 * split into words (lscmd.c) where ${PORT}, ${MODEL_ID} and the model's
 * file become %p, %m and %u, and models whose commands differ only in
 * their own values share one runtime.  Whatever agency cannot carry
 * over is written as a comment where it would have gone, and said
 * again on standard error with the line it came from.  What llama-swap
 * itself refuses, and what the reader's bounds refuse, are errors
 * (FILE:LINE: message); then nothing is written.
 *
 * The statements that agency.conf does not have yet (struct
 * import_features) are written as comments; each place that depends on
 * one tests its flag, so that switching it on in import_defaults()
 * writes the statement instead.
 *
 * Calls: lscmd.c, lsmacro.c, show.c, yamlread.c, common/sha256.c.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "import.h"
#include "sha256.h"

#define IMPORT_MODELS_MAX	4096
#define LS_HEALTH_MIN		15	/* s: llama-swap raises a lower one */
#define LS_START_PORT		5800	/* llama-swap's and agency's */
#define IMPORT_PORTS		200	/* the size of agency's default range */
#define LISTEN_PORT		8080	/* agency's front door and llama-swap's,
					 * unless told otherwise */
#define MAX_REQUESTS_LIMIT	65535	/* agency.conf's max requests */
/* A guess of the context's memory a token: f16 keys and values of a
 * 7-8B model with grouped-query attention.  The sizing issue's
 * estimate from the file's header replaces it. */
#define GUESS_KV_TOKEN		(128 * 1024)
#define COMMENT_WIDTH		72
/* Models of one program and runtime settings looked at together for
 * the commands they share: the search is quadratic in them. */
#define CLUSTER_MAX		64

enum ex_flags {
	EX_CMD = 0x01,		/* ${MODEL_ID} is %m, comment lines out */
	EX_PID = 0x02,		/* ${PID} may stay (cmdStop) */
	EX_PORTS = 0x04,	/* cmd: whether it has ${PORT} decides */
};

struct imodel {
	char		*id;
	int		 line;
	int		 skip;		/* written as a comment only */
	char		*skipwhy;
	struct macros	 scope;		/* MODEL_ID, the globals, its own */
	int		 uses_port;	/* cmd has ${PORT} */
	struct words	 argv;
	char		*file;		/* the model file named in cmd */
	char		*upstream;
	const char	*kind;
	char		*ready;		/* NULL: /health */
	int		 send_upstream;
	int		 progress;	/* -1: the global one */
	char		*stop;		/* a stop command (template) */
	struct words	 strip;		/* sorted */
	int64_t		 idle;		/* s; -1: the global one */
	long long	 max_requests;
	struct words	 aliases;
	struct words	 env;
	int		 unlisted;
	int		 preload;
	int64_t		 memory;	/* bytes; 0: agency's own */
	char		*memory_why;
	char		*notes;		/* comments for its block */
	size_t		 noteslen;
	FILE		*notesf;
	size_t		 rt;		/* its runtime */
	char		*args;		/* its own arguments (%a) */
};

struct iruntime {
	char		 name[AGENCY_NAME_MAX];
	char		 command[AGENCY_CMD_MAX];
	size_t		 model;		/* its first model: the settings */
	char		*shared;	/* features.args off: with %a */
	char		*others;	/* the runtimes it would be one with */
};

struct isect {
	FILE		*f;
	char		*buf;
	size_t		 len;
};

/* A message for stderr; they are said in the order of the lines. */
struct inote {
	int		 line;
	size_t		 seq;
	char		*text;
};

struct inotes {
	struct inote	*v;
	size_t		 n;
	size_t		 size;
};

struct imp {
	const struct import_opts *o;
	int			 nerr;
	struct inotes		 errs;
	struct inotes		 notes;
	struct isect		 glob;		/* global statements */
	struct isect		 keys;
	struct isect		 trail;		/* groups and the like */
	struct macros		 gm;
	struct imodel		*m;
	size_t			 nm;
	struct iruntime		*rt;
	size_t			 nrt;
	int			 progress;	/* -1: not given */
	int			 include_aliases;
	int			 nkeys;
};

static void	imp_err(struct imp *, int, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));
static void	merr(struct imp *, struct imodel *, int, const char *, ...)
		    __attribute__((__format__ (printf, 4, 5)));
static void	imp_note(struct imp *, FILE *, const char *, int,
		    const char *, const char *, ...)
		    __attribute__((__format__ (printf, 6, 7)));
static int	note_cmp(const void *, const void *);
static int	note_add(struct inotes *, int, const char *);
static void	notes_print(struct inotes *, const char *, FILE *);
static void	unmark(char *, size_t, const char *);
static void	put_comment(FILE *, const char *, const char *);
static void	put_str(FILE *, const char *);
static int	sect_open(struct isect *);
static void	sect_close(struct isect *);
static int	str_ok(const char *, size_t);
static int	valid_id(const char *);
static int	parse_int(const char *, long long *);
static int	parse_bool(const char *, long long *);
static char	*expand(struct imp *, struct imodel *, const struct ynode *,
		    const char *, int);
static int	scalar(struct imp *, const struct ynode *, struct imodel *,
		    const char *);
static int	get_value(struct imp *, struct imodel *, const struct ynode *,
		    const char *, const char *,
		    int (*)(const char *, long long *), long long *);
static int	get_int(struct imp *, struct imodel *, const struct ynode *,
		    const char *, long long *);
static int	get_bool(struct imp *, struct imodel *, const struct ynode *,
		    const char *, int *);
static int	get_list(struct imp *, struct imodel *, const struct ynode *,
		    const char *, struct words *);
static void	read_macros(struct imp *, const struct ynode *,
		    struct macros *, const char *);
static void	read_models(struct imp *, const struct ynode *);
static void	read_model(struct imp *, struct imodel *,
		    const struct ynode *);
static void	model_skip(struct imp *, struct imodel *, int, const char *,
		    ...) __attribute__((__format__ (printf, 4, 5)));
static int	model_cmd(struct imp *, struct imodel *, const struct ynode *,
		    const struct ynode *);
static int	model_proxy(struct imp *, struct imodel *,
		    const struct ynode *, int);
static void	model_upstream(struct imp *, struct imodel *,
		    const struct ynode *, int);
static void	model_kind(struct imodel *, const struct ynode *);
static void	model_memory(struct imp *, struct imodel *, int);
static void	model_field(struct imp *, struct imodel *,
		    const struct ynode *, const struct ynode *);
static void	model_filters(struct imp *, struct imodel *,
		    const struct ynode *);
static void	model_stop(struct imp *, struct imodel *,
		    const struct ynode *);
static int	port_replace(struct imodel *, const char *);
static const char *prog_base(const struct imodel *);
static int	is_container(const struct imodel *);
static int	model_file(const char *);
static int	has_word(const struct imodel *, const char *);
static int	list_has(const struct ynode *, const char *);
static void	strip_fields(struct imp *, struct imodel *,
		    const struct ynode *, const char *, struct words *);
static void	set_by_id(struct imp *, struct imodel *,
		    const struct ynode *);
static int	str_cmp(const void *, const void *);
static int	str_same(const char *, const char *);
static int	marked(const struct words *, size_t, size_t, int);
static int	alias_add(struct imp *, struct imodel *, const char *, int);
static struct imodel *model_find(struct imp *, const char *);
static void	read_global(struct imp *, const struct ynode *,
		    const struct ynode *);
static void	read_keys(struct imp *, const struct ynode *);
static void	read_hooks(struct imp *, const struct ynode *);
static void	read_routing(struct imp *, const struct ynode *,
		    const struct ynode *);
static void	read_groups(struct imp *, const struct ynode *, int);
static void	runtimes_make(struct imp *);
static int	share(struct imp *, const size_t *, size_t, char *, size_t);
static void	runtimes_cluster(struct imp *, size_t *, size_t, int,
		    const char *);
static void	runtime_add(struct imp *, const size_t *, size_t,
		    const char *);
static int	rt_same(const struct imodel *, const struct imodel *);
static void	write_runtime(struct imp *, FILE *, const struct iruntime *);
static void	write_model(struct imp *, FILE *, const struct imodel *);
static void	write_size(FILE *, int64_t);
static void	imodel_free(struct imodel *);

void
import_defaults(struct import_opts *o)
{
	memset(o, 0, sizeof(*o));
	/* Phase 2 switches these on as the features reach main. */
	o->features.args = 0;
	o->features.preload = 0;
	o->features.unlisted = 0;
	o->features.strip = 0;
	o->features.stop = 0;
	o->name = "-";
}

/*
 * Messages.
 */

/* s with the markers of import.h written as the macros they were. */
static void
unmark(char *buf, size_t len, const char *s)
{
	size_t	o = 0;

	for (; *s != '\0' && o + 1 < len; s++) {
		if (*s == MARK_PORT || *s == MARK_MODEL || *s == MARK_UPSTREAM)
			o += strlcpy(buf + o, *s == MARK_PORT ? "${PORT}" :
			    *s == MARK_MODEL ? "${MODEL_ID}" : "%u", len - o);
		else
			buf[o++] = *s;
		if (o >= len)
			o = len - 1;
	}
	buf[o] = '\0';
}

/* An error: kept, so that all are said in the order of the lines. */
static void
imp_err(struct imp *imp, int line, const char *fmt, ...)
{
	va_list	 ap;
	char	 raw[2048], text[2048];

	va_start(ap, fmt);
	(void)vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	unmark(text, sizeof(text), raw);
	imp->nerr++;
	(void)note_add(&imp->errs, line, text);
}

/* An error of model m's, if any: the model named first. */
static void
merr(struct imp *imp, struct imodel *m, int line, const char *fmt, ...)
{
	va_list	 ap;
	char	 text[2048];

	va_start(ap, fmt);
	(void)vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (m != NULL)
		imp_err(imp, line, "model \"%s\": %s", m->id, text);
	else
		imp_err(imp, line, "%s", text);
}

/* A message for stderr; -1 when there is no memory for it. */
static int
note_add(struct inotes *ns, int line, const char *text)
{
	struct inote	*n;
	size_t		 size;
	char		*p;

	if (ns->n == ns->size) {
		size = ns->size == 0 ? 32 : ns->size * 2;
		if ((n = reallocarray(ns->v, size, sizeof(*n))) == NULL)
			return (-1);
		ns->v = n;
		ns->size = size;
	}
	n = &ns->v[ns->n];
	if ((n->text = strdup(text)) == NULL)
		return (-1);
	/* Values from the file may hold a line's end: one line a message. */
	for (p = n->text; *p != '\0'; p++)
		if (*p == '\n' || *p == '\t')
			*p = ' ';
	n->line = line;
	n->seq = ns->n++;
	return (0);
}

/* The messages in the order of their lines, and freed. */
static void
notes_print(struct inotes *ns, const char *name, FILE *f)
{
	size_t	i;

	if (ns->n > 0)
		qsort(ns->v, ns->n, sizeof(*ns->v), note_cmp);
	for (i = 0; i < ns->n; i++) {
		if (f != NULL && ns->v[i].line > 0)
			fprintf(f, "%s:%d: %s\n", name, ns->v[i].line,
			    ns->v[i].text);
		else if (f != NULL)
			fprintf(f, "%s: %s\n", name, ns->v[i].text);
		free(ns->v[i].text);
	}
	free(ns->v);
	memset(ns, 0, sizeof(*ns));
}

/*
 * Something not carried over: a comment in sect (indent before each of
 * its lines), and the same on stderr with its line and where (a model).
 */
static void
imp_note(struct imp *imp, FILE *sect, const char *indent, int line,
    const char *where, const char *fmt, ...)
{
	va_list		 ap;
	char		 raw[2200], text[2048], *s;

	va_start(ap, fmt);
	(void)vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	unmark(text, sizeof(text), raw);
	/* Values from the file may hold a line's end. */
	for (s = text; *s != '\0'; s++)
		if (*s == '\n' || *s == '\t')
			*s = ' ';
	if (sect != NULL)
		put_comment(sect, indent, text);
	if (where != NULL) {
		(void)snprintf(raw, sizeof(raw), "%s: %s", where, text);
		(void)note_add(&imp->notes, line, raw);
	} else
		(void)note_add(&imp->notes, line, text);
}

static int
note_cmp(const void *a, const void *b)
{
	const struct inote	*x = a, *y = b;

	if (x->line != y->line)
		return (x->line < y->line ? -1 : 1);
	return (x->seq < y->seq ? -1 : x->seq > y->seq);
}

/* A comment, its words wrapped at COMMENT_WIDTH columns. */
static void
put_comment(FILE *f, const char *indent, const char *text)
{
	const char	*w = text, *e;
	size_t		 col, start, len;
	int		 first = 1;

	start = indent[0] == '\t' ? 8 : strlen(indent);
	while (*w != '\0') {
		fprintf(f, "%s#%s", indent, first ? "" : "  ");
		col = start + (first ? 1 : 3);
		first = 0;
		do {
			while (*w == ' ')
				w++;
			if (*w == '\0')
				break;
			for (e = w; *e != '\0' && *e != ' '; e++)
				;
			len = e - w;
			if (col + 1 + len > COMMENT_WIDTH &&
			    col > start + 3)
				break;
			fprintf(f, " %.*s", (int)len, w);
			col += 1 + len;
			w = e;
		} while (*w != '\0');
		fputc('\n', f);
		while (*w == ' ')
			w++;
	}
}

/* A quoted string of agency.conf. */
static void
put_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s != '\0'; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static int
sect_open(struct isect *s)
{
	s->buf = NULL;
	s->len = 0;
	return ((s->f = open_memstream(&s->buf, &s->len)) == NULL ? -1 : 0);
}

static void
sect_close(struct isect *s)
{
	if (s->f != NULL)
		fclose(s->f);
	s->f = NULL;
	free(s->buf);
	s->buf = NULL;
}

/* A string agency.conf can hold in len bytes: one line, not empty. */
static int
str_ok(const char *s, size_t len)
{
	return (s[0] != '\0' && strlen(s) < len && strchr(s, '\n') == NULL);
}

/*
 * An upstream agency takes that is not a path: "name" or "org/name",
 * as agencyd's check_upstream has it.
 */
static int
valid_id(const char *s)
{
	const char	*c, *e;
	size_t		 len;
	int		 n = 0;

	if (s[0] == '\0' || s[0] == '/' || strlen(s) >= AGENCY_PATH_MAX ||
	    strchr(s, '\n') != NULL)
		return (0);
	for (c = s;; c = e + 1) {
		if ((e = strchr(c, '/')) == NULL)
			e = c + strlen(c);
		len = e - c;
		if (++n > 2 || len == 0 || (len == 1 && c[0] == '.') ||
		    (len == 2 && c[0] == '.' && c[1] == '.'))
			return (0);
		if (*e == '\0')
			return (1);
	}
}

/* A decimal integer, as llama-swap's integers are written. */
static int
parse_int(const char *s, long long *v)
{
	const char	*errstr;

	*v = strtonum(s, -1000000000LL, 1000000000LL, &errstr);
	return (errstr == NULL ? 0 : -1);
}

/* YAML's bools, with the words yaml.v3 takes for a bool field. */
static int
parse_bool(const char *s, long long *v)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes",
	    "Yes", "YES", "on", "On", "ON", "y", "Y", NULL };
	static const char *const no[] = { "false", "False", "FALSE", "no",
	    "No", "NO", "off", "Off", "OFF", "n", "N", NULL };
	size_t	i;

	for (i = 0; yes[i] != NULL; i++)
		if (strcmp(s, yes[i]) == 0)
			return (*v = 1, 0);
	for (i = 0; no[i] != NULL; i++)
		if (strcmp(s, no[i]) == 0)
			return (*v = 0, 0);
	return (-1);
}

/*
 * Values.
 */

/* n is a scalar, or an error naming field (of model m, if any). */
static int
scalar(struct imp *imp, const struct ynode *n, struct imodel *m,
    const char *field)
{
	if (n->kind == YN_SCALAR)
		return (0);
	merr(imp, m, n->line, "%s: a value, not %s", field, ynode_what(n));
	return (-1);
}

/*
 * A scalar with llama-swap's macros expanded: ${env.NAME}, then the
 * global macros, or a model's scope and ${PORT} for a model.  NULL after
 * an error.
 */
static char *
expand(struct imp *imp, struct imodel *m, const struct ynode *n,
    const char *field, int flags)
{
	struct macros	 port;
	char		 err[256], name[MACRO_NAME_MAX + 8], *s, *t;
	const char	*p, *src;
	struct macro	 pm;

	if (scalar(imp, n, m, field) == -1)
		return (NULL);
	src = n->str;
	t = NULL;
	if (flags & EX_CMD) {
		if ((t = cmd_uncomment(src)) == NULL) {
			imp_err(imp, n->line, "out of memory");
			return (NULL);
		}
		src = t;
	}
	s = macro_env(src, err, sizeof(err));
	free(t);
	if (s == NULL) {
		merr(imp, m, n->line, "%s: %s", field, err);
		return (NULL);
	}
	if (m != NULL) {
		/* The scope's first macro is MODEL_ID. */
		free(m->scope.m[0].value);
		m->scope.m[0].value = strdup((flags & EX_CMD) ? "\002" : m->id);
		if (m->scope.m[0].value == NULL) {
			free(s);
			imp_err(imp, n->line, "out of memory");
			return (NULL);
		}
	}
	t = macro_expand(m != NULL ? &m->scope : &imp->gm, s, err,
	    sizeof(err));
	free(s);
	if ((s = t) == NULL) {
		merr(imp, m, n->line, "%s: %s", field, err);
		return (NULL);
	}
	/* ${PORT} is a model's when its cmd, macros in, has it. */
	if (m != NULL && (flags & EX_PORTS))
		m->uses_port = strstr(s, "${PORT}") != NULL;
	if (m != NULL && m->uses_port && strstr(s, "${PORT}") != NULL) {
		memset(&pm, 0, sizeof(pm));
		(void)strlcpy(pm.name, "PORT", sizeof(pm.name));
		pm.value = (char *)"\001";
		port.m = &pm;
		port.n = port.size = 1;
		t = macro_expand(&port, s, err, sizeof(err));
		free(s);
		if ((s = t) == NULL) {
			merr(imp, m, n->line, "%s: %s", field, err);
			return (NULL);
		}
	}
	for (p = s; (p = macro_left(p, name, sizeof(name))) != NULL; p += 2) {
		if ((flags & EX_PID) && strcmp(name, "PID") == 0)
			continue;
		if (m != NULL && strcmp(name, "PORT") == 0)
			merr(imp, m, n->line, "%s: ${PORT} is given only to a "
			    "model whose cmd uses it", field);
		else
			merr(imp, m, n->line, "%s: unknown macro ${%s}", field,
			    name);
		free(s);
		return (NULL);
	}
	return (s);
}

/* A scalar with its macros, read by parse; an error says what it is not. */
static int
get_value(struct imp *imp, struct imodel *m, const struct ynode *n,
    const char *field, const char *what,
    int (*parse)(const char *, long long *), long long *v)
{
	char	*s;
	int	 rv;

	if ((s = expand(imp, m, n, field, 0)) == NULL)
		return (-1);
	if ((rv = parse(s, v)) == -1)
		merr(imp, m, n->line, "%s: \"%s\" is not %s", field, s, what);
	free(s);
	return (rv);
}

static int
get_int(struct imp *imp, struct imodel *m, const struct ynode *n,
    const char *field, long long *v)
{
	return (get_value(imp, m, n, field, "an integer", parse_int, v));
}

static int
get_bool(struct imp *imp, struct imodel *m, const struct ynode *n,
    const char *field, int *v)
{
	long long	b;

	if (get_value(imp, m, n, field, "true or false", parse_bool, &b) ==
	    -1)
		return (-1);
	*v = b != 0;
	return (0);
}

/* A list of strings, each expanded; null is the empty list. */
static int
get_list(struct imp *imp, struct imodel *m, const struct ynode *n,
    const char *field, struct words *out)
{
	char	*s;
	size_t	 i;

	memset(out, 0, sizeof(*out));
	if (ynode_null(n))
		return (0);
	if (n->kind != YN_SEQ) {
		merr(imp, m, n->line, "%s: a list, not %s", field,
		    ynode_what(n));
		return (-1);
	}
	for (i = 0; i < n->nkid; i++) {
		if ((s = expand(imp, m, n->kid[i], field, 0)) == NULL) {
			words_free(out);
			return (-1);
		}
		if (words_add(out, s) == -1) {
			free(s);
			words_free(out);
			merr(imp, m, n->kid[i]->line, "%s: more than %d items",
			    field, CMD_WORDS_MAX);
			return (-1);
		}
		free(s);
	}
	return (0);
}

/*
 * Macros: each a scalar, its name and value as llama-swap takes them.
 */
static void
read_macros(struct imp *imp, const struct ynode *n, struct macros *ms,
    const char *model)
{
	const struct ynode	*k, *v;
	char			 err[256], *val, *env;
	size_t			 i;

	if (ynode_null(n))
		return;
	if (n->kind != YN_MAP) {
		imp_err(imp, n->line, "%s%s%smacros: a mapping, not %s",
		    model != NULL ? "model \"" : "", model != NULL ? model : "",
		    model != NULL ? "\": " : "", ynode_what(n));
		return;
	}
	for (i = 0; i + 1 < n->nkid; i += 2) {
		k = n->kid[i];
		v = n->kid[i + 1];
		if (v->kind != YN_SCALAR || ynode_null(v)) {
			imp_err(imp, v->line, "macro \"%s\" is %s: a string, "
			    "a number or a bool", k->str, ynode_what(v));
			continue;
		}
		if ((val = macro_scalar(v->str, v->style == YS_PLAIN)) ==
		    NULL) {
			imp_err(imp, v->line, "out of memory");
			continue;
		}
		/* ${env.NAME} is replaced before anything else. */
		env = macro_env(val, err, sizeof(err));
		free(val);
		if (env == NULL) {
			imp_err(imp, v->line, "macro \"%s\": %s", k->str, err);
			continue;
		}
		if (macro_check(k->str, env, err, sizeof(err)) == -1)
			imp_err(imp, k->line, "%s%s%s%s", model != NULL ?
			    "model \"" : "", model != NULL ? model : "",
			    model != NULL ? "\": " : "", err);
		else if (macros_set(ms, k->str, env, k->line) == -1)
			imp_err(imp, k->line, "more than %d macros",
			    MACROS_MAX);
		free(env);
	}
}

/*
 * Models.
 */

static void
model_skip(struct imp *imp, struct imodel *m, int line, const char *fmt, ...)
{
	va_list	 ap;
	char	 raw[1024], why[1024];

	va_start(ap, fmt);
	(void)vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	unmark(why, sizeof(why), raw);
	if (m->skip)
		return;
	m->skip = 1;
	free(m->skipwhy);
	m->skipwhy = strdup(why);
	imp_note(imp, NULL, "", line, NULL, "model \"%s\" is not carried "
	    "over: %s", m->id, why);
}

static struct imodel *
model_find(struct imp *imp, const char *name)
{
	size_t	i, j;

	for (i = 0; i < imp->nm; i++)
		if (strcmp(imp->m[i].id, name) == 0)
			return (&imp->m[i]);
	for (i = 0; i < imp->nm; i++)
		for (j = 0; j < imp->m[i].aliases.n; j++)
			if (strcmp(imp->m[i].aliases.w[j], name) == 0)
				return (&imp->m[i]);
	return (NULL);
}

static void
read_models(struct imp *imp, const struct ynode *n)
{
	struct imodel	*m;
	size_t		 i, nm;

	if (ynode_null(n))
		return;
	if (n->kind != YN_MAP) {
		imp_err(imp, n->line, "models: a mapping of model ids, not %s",
		    ynode_what(n));
		return;
	}
	nm = n->nkid / 2;
	if (nm > IMPORT_MODELS_MAX) {
		imp_err(imp, n->line, "more than %d models",
		    IMPORT_MODELS_MAX);
		return;
	}
	if ((imp->m = calloc(nm, sizeof(*imp->m))) == NULL) {
		imp_err(imp, n->line, "out of memory");
		return;
	}
	for (i = 0; i < nm; i++) {
		m = &imp->m[imp->nm++];
		m->line = n->kid[2 * i]->line;
		m->idle = -1;
		m->progress = -1;
		m->kind = "chat";
		if ((m->id = strdup(n->kid[2 * i]->str)) == NULL ||
		    (m->notesf = open_memstream(&m->notes, &m->noteslen)) ==
		    NULL) {
			imp_err(imp, m->line, "out of memory");
			return;
		}
	}
	/* Models first, then what may name them: aliases must be unique. */
	for (i = 0; i < nm; i++)
		read_model(imp, &imp->m[i], n->kid[2 * i + 1]);
}

static void
read_model(struct imp *imp, struct imodel *m, const struct ynode *n)
{
	const struct ynode	*cmd, *v, *cmdkey = NULL;
	size_t			 i;
	int			 nerr = imp->nerr, fixed;

	if (!str_ok(m->id, AGENCY_NAME_MAX)) {
		model_skip(imp, m, m->line, "agency's model names are 1 to "
		    "%d bytes on one line", AGENCY_NAME_MAX - 1);
		return;
	}
	if (n->kind != YN_MAP) {
		imp_err(imp, n->line, "model \"%s\": a mapping, not %s", m->id,
		    ynode_what(n));
		return;
	}
	/* MODEL_ID, then the global macros, then the model's own. */
	if (macros_set(&m->scope, "MODEL_ID", m->id, m->line) == -1) {
		imp_err(imp, m->line, "out of memory");
		return;
	}
	for (i = 0; i < imp->gm.n; i++)
		if (macros_set(&m->scope, imp->gm.m[i].name,
		    imp->gm.m[i].value, imp->gm.m[i].line) == -1) {
			imp_err(imp, m->line, "out of memory");
			return;
		}
	if ((v = ymap_get(n, "macros", NULL)) != NULL)
		read_macros(imp, v, &m->scope, m->id);

	if ((cmd = ymap_get(n, "cmd", &cmdkey)) == NULL || ynode_null(cmd)) {
		imp_err(imp, n->line, "model \"%s\" has no cmd", m->id);
		return;
	}
	if (imp->nerr > nerr || model_cmd(imp, m, cmdkey, cmd) == -1)
		return;
	if ((fixed = model_proxy(imp, m, ymap_get(n, "proxy", NULL),
	    cmdkey->line)) == -1)
		return;
	model_upstream(imp, m, ymap_get(n, "useModelName", NULL),
	    cmdkey->line);
	model_kind(m, ymap_get(n, "capabilities", NULL));
	for (i = 0; i + 1 < n->nkid; i += 2)
		model_field(imp, m, n->kid[i], n->kid[i + 1]);
	if (!m->skip)
		model_memory(imp, m, cmdkey->line);
	if (fixed && !m->skip)
		imp_note(imp, m->notesf, "\t", fixed, m->id, "proxy: agency "
		    "gives each model server a port of its own range (%%p), "
		    "written in cmd where the fixed port was");
}

/* cmd: expanded and split; its program must be one agency can run. */
static int
model_cmd(struct imp *imp, struct imodel *m, const struct ynode *key,
    const struct ynode *cmd)
{
	const char	*prog;
	char		*s;

	if ((s = expand(imp, m, cmd, "cmd", EX_CMD | EX_PORTS)) == NULL)
		return (-1);
	if (words_split(s, &m->argv) == -1) {
		free(s);
		imp_err(imp, cmd->line, "model \"%s\": cmd has more than %d "
		    "words", m->id, CMD_WORDS_MAX);
		return (-1);
	}
	free(s);
	if (m->argv.n == 0) {
		imp_err(imp, cmd->line, "model \"%s\": cmd is empty", m->id);
		return (-1);
	}
	prog = m->argv.w[0];
	if (prog[0] == '\0' || word_marked(prog, MARK_PORT) ||
	    word_marked(prog, MARK_MODEL))
		model_skip(imp, m, key->line, "its program \"%s\" is empty or "
		    "made from ${PORT} or ${MODEL_ID}", prog);
	else if (prog[0] != '/' && strchr(prog, '/') != NULL)
		model_skip(imp, m, key->line, "its program %s is a relative "
		    "path: agency runs an absolute path, or a name it looks "
		    "up in PATH", prog);
	return (0);
}

/* The port of a server that listens where cmd says: replaced by %p. */
static int
port_replace(struct imodel *m, const char *port)
{
	char		*w, *prev, *e, *c1, *c2, *nw;
	size_t		 i, plen = strlen(port);
	int		 n = 0;

	for (i = 1; i < m->argv.n; i++) {
		w = m->argv.w[i];
		prev = m->argv.w[i - 1];
		nw = NULL;
		if (strcmp(w, port) == 0 && prev[0] == '-')
			nw = strdup("\001");
		else if (w[0] == '-' && (e = strchr(w, '=')) != NULL &&
		    strcmp(e + 1, port) == 0) {
			if (asprintf(&nw, "%.*s\001", (int)(e + 1 - w), w) ==
			    -1)
				nw = NULL;
		} else if (strcmp(prev, "-p") == 0 ||
		    strcmp(prev, "--publish") == 0) {
			/* A container's: PORT:INNER or HOST:PORT:INNER. */
			c1 = strchr(w, ':');
			c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
			if (c1 != NULL && c2 == NULL &&
			    (size_t)(c1 - w) == plen &&
			    strncmp(w, port, plen) == 0) {
				if (asprintf(&nw, "\001%s", c1) == -1)
					nw = NULL;
			} else if (c2 != NULL && (size_t)(c2 - c1 - 1) ==
			    plen && strncmp(c1 + 1, port, plen) == 0) {
				if (asprintf(&nw, "%.*s\001%s",
				    (int)(c1 + 1 - w), w, c2) == -1)
					nw = NULL;
			}
		}
		if (nw != NULL) {
			free(m->argv.w[i]);
			m->argv.w[i] = nw;
			n++;
		}
	}
	return (n);
}

/*
 * proxy: where llama-swap sends the model's requests.  agency sends them
 * to 127.0.0.1 and the port it gave; a server elsewhere cannot be
 * carried over, and a fixed port becomes %p where cmd names it.  The
 * line of proxy when a fixed port was replaced, 0, or -1 on an error.
 */
static int
model_proxy(struct imp *imp, struct imodel *m, const struct ynode *n,
    int cmdline)
{
	const char	*host, *hend, *port, *path;
	char		*url, portbuf[8];
	size_t		 hlen, plen;
	int		 rv = 0;

	if (ynode_null(n)) {
		if (!m->uses_port) {
			imp_err(imp, cmdline, "model \"%s\": cmd has no "
			    "${PORT} and no proxy says where its server "
			    "listens", m->id);
			return (-1);
		}
		return (0);
	}
	if ((url = expand(imp, m, n, "proxy", 0)) == NULL)
		return (-1);
	if (strncmp(url, "http://", 7) != 0) {
		model_skip(imp, m, n->line, "proxy %s: agency reaches its "
		    "model servers over plain HTTP on this machine", url);
		goto done;
	}
	host = url + 7;
	if (*host == '[')
		hend = (hend = strchr(host, ']')) != NULL ? hend + 1 :
		    host + strlen(host);
	else
		hend = host + strcspn(host, ":/");
	hlen = hend - host;
	if (!((hlen == 9 && strncmp(host, "localhost", 9) == 0) ||
	    (hlen >= 4 && strncmp(host, "127.", 4) == 0) ||
	    (hlen == 7 && strncmp(host, "0.0.0.0", 7) == 0) ||
	    (hlen == 5 && strncmp(host, "[::1]", 5) == 0))) {
		model_skip(imp, m, n->line, "proxy %s: its server is on "
		    "another machine, and agency runs and reaches model "
		    "servers on this one", url);
		goto done;
	}
	port = "80";
	plen = 2;
	path = hend;
	if (*hend == ':') {
		port = hend + 1;
		plen = strcspn(port, "/");
		path = port + plen;
	}
	if (*path != '\0' && strcmp(path, "/") != 0) {
		model_skip(imp, m, n->line, "proxy %s: agency sends requests "
		    "to the paths the client asked for, not under %s", url,
		    path);
		goto done;
	}
	if (plen == 1 && port[0] == MARK_PORT)
		goto done;
	if (plen == 0 || plen >= sizeof(portbuf) ||
	    strspn(port, "0123456789") < plen) {
		imp_err(imp, n->line, "model \"%s\": proxy %s: not a port",
		    m->id, url);
		rv = -1;
		goto done;
	}
	memcpy(portbuf, port, plen);
	portbuf[plen] = '\0';
	if (m->uses_port)
		imp_note(imp, m->notesf, "\t", n->line, m->id, "proxy port %s: "
		    "agency connects to the port cmd is given (%%p)", portbuf);
	else if (port_replace(m, portbuf) == 0)
		model_skip(imp, m, n->line, "proxy port %s: agency gives each "
		    "model server a port of its own (%%p), and cmd has no %s "
		    "to give it in", portbuf, portbuf);
	else
		rv = n->line;
 done:
	free(url);
	return (rv);
}

/* The program's name without its directory. */
static const char *
prog_base(const struct imodel *m)
{
	const char	*s = strrchr(m->argv.w[0], '/');

	return (s != NULL ? s + 1 : m->argv.w[0]);
}

static int
is_container(const struct imodel *m)
{
	const char	*b = prog_base(m);

	return (strcmp(b, "docker") == 0 || strcmp(b, "podman") == 0 ||
	    strcmp(b, "nerdctl") == 0);
}

/*
 * A name that is a model's file rather than a model's id: llama.cpp's
 * -m takes only files, and a relative path is no id though agency.conf
 * would take "models/x.gguf" for one.
 */
static int
model_file(const char *v)
{
	static const char *const ext[] = { ".gguf", ".bin", ".ggml",
	    ".safetensors", ".pt", ".pth", ".onnx", NULL };
	size_t	i, n = strlen(v), e;

	for (i = 0; ext[i] != NULL; i++) {
		e = strlen(ext[i]);
		if (n > e && strcmp(v + n - e, ext[i]) == 0)
			return (1);
	}
	return (v[0] == '.');
}

/*
 * upstream: the model's file or id from cmd (-m, --model, -hf, vllm
 * serve ID), which becomes %u; useModelName, when it is the model agency
 * sends (send model upstream); else the model's name stands in.
 */
static void
model_upstream(struct imp *imp, struct imodel *m, const struct ynode *use,
    int line)
{
	static const char *const mopts[] = { "-m", "--model", NULL };
	static const char *const hfopts[] = { "-hf", "-hfr", "--hf-repo",
	    NULL };
	char		*v = NULL, *name = NULL, *why = NULL, *s, *w;
	ssize_t		 i;
	int		 eq = 0, usable = 0, path = 0, relative = 0;
	size_t		 k;

	if (m->skip)
		return;
	if ((i = words_option(&m->argv, mopts, &eq)) != -1)
		path = strcmp(m->argv.w[eq ? i : i - 1], "-m") == 0 ||
		    strncmp(m->argv.w[i], "-m=", 3) == 0;
	else
		i = words_option(&m->argv, hfopts, &eq);
	if (i == -1 && strcmp(prog_base(m), "vllm") == 0 && m->argv.n > 2 &&
	    strcmp(m->argv.w[1], "serve") == 0 && m->argv.w[2][0] != '-') {
		i = 2;
		eq = 0;
	}
	if (i != -1) {
		w = m->argv.w[i];
		s = eq ? strchr(w, '=') + 1 : w;
		/* ${MODEL_ID} in the path: the name, as agency has it. */
		if ((v = malloc(strlen(s) + strlen(m->id) * strlen(s) + 1)) ==
		    NULL)
			return;
		for (k = 0; *s != '\0'; s++) {
			if (*s == MARK_MODEL) {
				memcpy(v + k, m->id, strlen(m->id));
				k += strlen(m->id);
			} else
				v[k++] = *s;
		}
		v[k] = '\0';
		if (word_marked(v, MARK_PORT))
			why = "its model is named with ${PORT}";
		else if (is_container(m))
			why = "its model's file is inside the container";
		else if (v[0] != '/' && (path || !valid_id(v) ||
		    model_file(v)))
			relative = 1;
		else if (strlen(v) >= AGENCY_PATH_MAX)
			why = "its model's path is too long";
		else
			usable = 1;
		if (usable && v[0] == '/' && !is_container(m))
			m->file = strdup(v);
	} else
		why = "cmd names no model file (-m, --model, -hf)";

	if (!ynode_null(use) && (name = expand(imp, m, use, "useModelName",
	    0)) != NULL && name[0] != '\0') {
		if (usable && strcmp(name, v) == 0)
			m->send_upstream = 1;
		else if (valid_id(name) || (name[0] == '/' &&
		    str_ok(name, AGENCY_PATH_MAX))) {
			/* The file stays in cmd as it is; agency sends this. */
			m->upstream = strdup(name);
			m->send_upstream = 1;
			usable = 0;
		} else
			imp_note(imp, m->notesf, "\t", use->line, m->id,
			    "useModelName \"%s\": agency sends a model's name, "
			    "its upstream or the client's value, and this can "
			    "be no upstream (an absolute path or a model id)",
			    name);
	}
	free(name);
	if (usable) {
		m->upstream = v;
		v = NULL;
		w = m->argv.w[i];
		if (eq) {
			if (asprintf(&s, "%.*s\003", (int)(strchr(w, '=') + 1 -
			    w), w) == -1)
				s = NULL;
		} else
			s = strdup("\003");
		if (s != NULL) {
			free(m->argv.w[i]);
			m->argv.w[i] = s;
		}
	}
	if (relative)
		imp_note(imp, m->notesf, "\t", line, m->id, "cmd: %s is relative "
		    "to where llama-swap ran, and agency starts model servers "
		    "in the model user's home: write it absolute%s", v,
		    m->upstream != NULL ? "" : "; the model's name stands in "
		    "for upstream, and agency sizes the model by its headroom "
		    "alone unless memory is set");
	free(v);
	if (m->upstream != NULL)
		return;
	if (valid_id(m->id))
		m->upstream = strdup(m->id);
	else if ((m->upstream = strdup(m->id)) != NULL) {
		for (s = m->upstream; *s != '\0'; s++)
			if (*s == '/')
				*s = '_';
		if (strcmp(m->upstream, ".") == 0 ||
		    strcmp(m->upstream, "..") == 0)
			m->upstream[0] = '_';
	}
	if (why != NULL && !relative)
		imp_note(imp, m->notesf, "\t", line, m->id, "upstream: %s; "
		    "the model's name stands in, and agency sizes the model "
		    "by its headroom alone unless memory is set", why);
}

static int
has_word(const struct imodel *m, const char *w)
{
	size_t	i;

	for (i = 1; i < m->argv.n; i++)
		if (strcmp(m->argv.w[i], w) == 0)
			return (1);
	return (0);
}

static int
list_has(const struct ynode *list, const char *s)
{
	size_t	i;

	if (list == NULL || list->kind != YN_SEQ)
		return (0);
	for (i = 0; i < list->nkid; i++)
		if (list->kid[i]->kind == YN_SCALAR &&
		    strcmp(list->kid[i]->str, s) == 0)
			return (1);
	return (0);
}

/* The runtime's kind, from llama-server's options or capabilities. */
static void
model_kind(struct imodel *m, const struct ynode *caps)
{
	const struct ynode	*in, *out, *rr;
	long long		 rerank = 0;

	if (m->skip)
		return;
	in = ymap_get(caps, "in", NULL);
	out = ymap_get(caps, "out", NULL);
	if ((rr = ymap_get(caps, "reranker", NULL)) != NULL &&
	    rr->kind == YN_SCALAR)
		(void)parse_bool(rr->str, &rerank);
	if (has_word(m, "--embedding") || has_word(m, "--embeddings"))
		m->kind = "embedding";
	else if (has_word(m, "--reranking") || has_word(m, "--rerank") ||
	    rerank)
		m->kind = "rerank";
	else if (list_has(in, "image") || has_word(m, "--mmproj") ||
	    has_word(m, "-mm"))
		m->kind = "vision";
	else if (list_has(in, "audio"))
		m->kind = "transcription";
	else if (list_has(out, "audio"))
		m->kind = "speech";
	else if (list_has(out, "image"))
		m->kind = "image";
}

/*
 * memory: a guess where cmd and the model's file tell: the file, and
 * for the context (-c) GUESS_KV_TOKEN a token, at least agency's 1G of
 * headroom.  Written with a comment that says it is one.
 */
static void
model_memory(struct imp *imp, struct imodel *m, int line)
{
	static const char *const copts[] = { "-c", "--ctx-size", NULL };
	static const char *const gopts[] = { "-ngl", "--n-gpu-layers",
	    "--gpu-layers", NULL };
	struct stat	 st;
	const char	*w, *errstr;
	char		 fs[32];
	ssize_t		 i;
	int		 eq;
	long long	 ctx = 0;
	int64_t		 ctxmem, need;

	if ((i = words_option(&m->argv, gopts, &eq)) != -1) {
		w = eq ? strchr(m->argv.w[i], '=') + 1 : m->argv.w[i];
		imp_note(imp, m->notesf, "\t", line, m->id, "%s %s: layers on "
		    "a GPU, which agency does not count yet: memory is the "
		    "host's", m->argv.w[eq ? i : i - 1], w);
	}
	if ((i = words_option(&m->argv, copts, &eq)) != -1) {
		w = eq ? strchr(m->argv.w[i], '=') + 1 : m->argv.w[i];
		ctx = strtonum(w, 0, 100000000LL, &errstr);
		if (errstr != NULL)
			ctx = 0;
	}
	if (m->file == NULL || stat(m->file, &st) == -1 ||
	    !S_ISREG(st.st_mode) || st.st_size <= 0) {
		if (ctx > 0)
			imp_note(imp, m->notesf, "\t", line, m->id, "context "
			    "of %lld tokens: agency counts the model's file "
			    "and 1G of headroom, not the context; set memory "
			    "if it needs more", ctx);
		return;
	}
	/* Without a context, only where agency cannot size the file. */
	if (ctx == 0 && m->upstream != NULL &&
	    strcmp(m->upstream, m->file) == 0)
		return;
	ctxmem = ctx * GUESS_KV_TOKEN;
	if (ctxmem < 1024LL * 1024 * 1024)
		ctxmem = 1024LL * 1024 * 1024;
	need = st.st_size + ctxmem;
	need = (need + (1 << 20) - 1) & ~(int64_t)((1 << 20) - 1);
	m->memory = need;
	fmt_size(fs, sizeof(fs), st.st_size);
	if (ctx > 0) {
		if (asprintf(&m->memory_why, "memory: a guess, the file's %s "
		    "and %lld tokens of context at %dK a token (at least 1G); "
		    "agency's estimate from the file will replace it", fs, ctx,
		    GUESS_KV_TOKEN / 1024) == -1)
			m->memory_why = NULL;
	} else if (asprintf(&m->memory_why, "memory: the file's %s and 1G "
	    "of headroom, as agency counts a model's file", fs) == -1)
		m->memory_why = NULL;
}

static int
alias_add(struct imp *imp, struct imodel *m, const char *a, int line)
{
	struct imodel	*o;

	if (!str_ok(a, AGENCY_NAME_MAX)) {
		imp_note(imp, m->notesf, "\t", line, m->id, "alias \"%s\": "
		    "agency's aliases are 1 to %d bytes on one line", a,
		    AGENCY_NAME_MAX - 1);
		return (0);
	}
	if ((o = model_find(imp, a)) != NULL) {
		if (o == m)
			return (0);
		if (strcmp(o->id, a) == 0) {
			imp_note(imp, m->notesf, "\t", line, m->id, "alias "
			    "\"%s\" is the name of another model, which "
			    "llama-swap serves under it", a);
			return (0);
		}
		imp_err(imp, line, "model \"%s\": alias \"%s\" is also model "
		    "\"%s\"'s", m->id, a, o->id);
		return (-1);
	}
	if (words_add(&m->aliases, a) == -1) {
		imp_err(imp, line, "model \"%s\": more than %d aliases",
		    m->id, CMD_WORDS_MAX);
		return (-1);
	}
	return (0);
}

static int
str_cmp(const void *a, const void *b)
{
	return (strcmp(*(char *const *)a, *(char *const *)b));
}

/* stripParams' fields as llama-swap takes them: trimmed, once, sorted. */
static void
strip_fields(struct imp *imp, struct imodel *m, const struct ynode *v,
    const char *key, struct words *fields)
{
	char	*s, *f, *p, *e;
	size_t	 j;

	memset(fields, 0, sizeof(*fields));
	if ((s = expand(imp, m, v, key, 0)) == NULL)
		return;
	for (p = s; (f = strsep(&p, ",")) != NULL; ) {
		while (*f == ' ' || *f == '\t')
			f++;
		for (e = f + strlen(f); e > f && (e[-1] == ' ' ||
		    e[-1] == '\t'); e--)
			e[-1] = '\0';
		/* llama-swap never strips "model". */
		if (*f == '\0' || strcmp(f, "model") == 0)
			continue;
		if (strlen(f) >= AGENCY_FIELD_MAX) {
			imp_note(imp, m->notesf, "\t", v->line, m->id, "%s: "
			    "field \"%s\" is longer than agency's %d bytes",
			    key, f, AGENCY_FIELD_MAX - 1);
			continue;
		}
		for (j = 0; j < fields->n; j++)
			if (strcmp(fields->w[j], f) == 0)
				break;
		if (j == fields->n)
			(void)words_add(fields, f);
	}
	free(s);
	qsort(fields->w, fields->n, sizeof(*fields->w), str_cmp);
}

/* setParamsByID: its ids (with the model's macros) become aliases. */
static void
set_by_id(struct imp *imp, struct imodel *m, const struct ynode *v)
{
	struct macros	*sc = &m->scope;
	struct imodel	*o;
	char		 err[256], *s;
	size_t		 j;

	if (v->kind != YN_MAP) {
		imp_err(imp, v->line, "model \"%s\": filters.setParamsByID: "
		    "a mapping, not %s", m->id, ynode_what(v));
		return;
	}
	for (j = 0; j + 1 < v->nkid; j += 2) {
		free(sc->m[0].value);
		if ((sc->m[0].value = strdup(m->id)) == NULL ||
		    (s = macro_expand(sc, v->kid[j]->str, err,
		    sizeof(err))) == NULL) {
			imp_err(imp, v->kid[j]->line, "model \"%s\": filters."
			    "setParamsByID: %s", m->id, sc->m[0].value == NULL ?
			    "out of memory" : err);
			continue;
		}
		if (strcmp(s, m->id) != 0) {
			if ((o = model_find(imp, s)) != NULL &&
			    strcmp(o->id, s) == 0)
				imp_err(imp, v->kid[j]->line, "model \"%s\": "
				    "filters.setParamsByID: \"%s\" is a model's "
				    "id", m->id, s);
			else
				(void)alias_add(imp, m, s, v->kid[j]->line);
		}
		free(s);
	}
}

static void
model_filters(struct imp *imp, struct imodel *m, const struct ynode *n)
{
	const struct ynode	*k, *v, *strip;
	struct words		 fields;
	size_t			 i;

	if (ynode_null(n))
		return;
	if (n->kind != YN_MAP) {
		imp_err(imp, n->line, "model \"%s\": filters: a mapping, not "
		    "%s", m->id, ynode_what(n));
		return;
	}
	/* stripParams, or the older strip_params when it is empty. */
	if ((strip = ymap_get(n, "stripParams", NULL)) == NULL ||
	    ynode_null(strip))
		strip = ymap_get(n, "strip_params", NULL);
	for (i = 0; i + 1 < n->nkid; i += 2) {
		k = n->kid[i];
		v = n->kid[i + 1];
		if (strcmp(k->str, "stripParams") == 0 ||
		    strcmp(k->str, "strip_params") == 0) {
			if (v != strip || ynode_null(v))
				continue;
			strip_fields(imp, m, v, k->str, &fields);
			if (fields.n == 0)
				continue;
			if (imp->o->features.strip) {
				words_free(&m->strip);
				m->strip = fields;
				continue;
			}
			imp_note(imp, m->notesf, "\t", v->line, m->id, "filters."
			    "%s \"%s\": agency does not strip request fields "
			    "yet (its refuse refuses a request that has one)",
			    k->str, v->str);
			words_free(&fields);
		} else if (strcmp(k->str, "setParams") == 0)
			imp_note(imp, m->notesf, "\t", k->line, m->id, "filters."
			    "setParams: agency sets no request fields");
		else if (strcmp(k->str, "setParamsByID") == 0) {
			if (ynode_null(v))
				continue;
			set_by_id(imp, m, v);
			imp_note(imp, m->notesf, "\t", k->line, m->id, "filters."
			    "setParamsByID: its ids are aliases here, but "
			    "agency sets no request fields for them");
		} else
			imp_note(imp, m->notesf, "\t", k->line, m->id, "filters."
			    "%s: not a filter of llama-swap's; left out",
			    k->str);
	}
}

/* cmdStop: a runtime's stop command, or agency's own stop. */
static void
model_stop(struct imp *imp, struct imodel *m, const struct ynode *n)
{
	struct words	 w;
	char		*s, tmpl[AGENCY_CMD_MAX];

	if (ynode_null(n) || (s = expand(imp, m, n, "cmdStop",
	    EX_CMD | EX_PID)) == NULL)
		return;
	if (strstr(s, "${PID}") != NULL) {
		imp_note(imp, m->notesf, "\t", n->line, m->id, "cmdStop: "
		    "agency stops a model server itself (SIGTERM to its "
		    "process group, SIGKILL 5s later): nothing stands for "
		    "${PID}");
	} else if (!imp->o->features.stop) {
		imp_note(imp, m->notesf, "\t", n->line, m->id, "cmdStop: "
		    "agency has no stop command yet; it sends SIGTERM to the "
		    "server's process group, SIGKILL 5s later (a container "
		    "run with --init --rm stops with it)");
	} else if (words_split(s, &w) == 0) {
		if (w.n > 0 && words_template(&w, 0, w.n, tmpl,
		    sizeof(tmpl)) == 0)
			m->stop = strdup(tmpl);
		else
			imp_note(imp, m->notesf, "\t", n->line, m->id,
			    "cmdStop: empty, or too long for agency.conf");
		words_free(&w);
	}
	free(s);
}

/* One setting of a model, in the order of the file. */
static void
model_field(struct imp *imp, struct imodel *m, const struct ynode *key,
    const struct ynode *v)
{
	const char	*k = key->str;
	struct words	 list;
	char		*s;
	long long	 n;
	size_t		 i;
	int		 b;

	if (m->skip || strcmp(k, "macros") == 0 || strcmp(k, "cmd") == 0 ||
	    strcmp(k, "proxy") == 0 || strcmp(k, "useModelName") == 0)
		return;
	if (strcmp(k, "aliases") == 0) {
		if (get_list(imp, m, v, k, &list) == -1)
			return;
		for (i = 0; i < list.n; i++)
			if (alias_add(imp, m, list.w[i], v->kind == YN_SEQ ?
			    v->kid[i]->line : v->line) == -1)
				break;
		words_free(&list);
	} else if (strcmp(k, "env") == 0) {
		if (get_list(imp, m, v, k, &list) == -1)
			return;
		for (i = 0; i < list.n; i++) {
			s = list.w[i];
			if (word_marked(s, MARK_PORT))
				imp_note(imp, m->notesf, "\t", v->kid[i]->line,
				    m->id, "env: ${PORT}: agency gives the port "
				    "in cmd (%%p) and as AGENCY_PORT, not in "
				    "env");
			else if (!str_ok(s, AGENCY_ENV_MAX) ||
			    strchr(s, '=') == NULL || s[0] == '=' ||
			    isdigit((unsigned char)s[0]) ||
			    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijkl"
			    "mnopqrstuvwxyz0123456789_") != (size_t)(strchr(s,
			    '=') - s))
				imp_note(imp, m->notesf, "\t", v->kid[i]->line,
				    m->id, "env \"%s\": agency takes NAME=value "
				    "(letters, digits and _), under %d bytes", s,
				    AGENCY_ENV_MAX);
			else
				(void)words_add(&m->env, s);
		}
		words_free(&list);
	} else if (strcmp(k, "checkEndpoint") == 0) {
		if ((s = expand(imp, m, v, k, 0)) == NULL)
			return;
		if (strcmp(s, "none") == 0)
			imp_note(imp, m->notesf, "\t", v->line, m->id,
			    "checkEndpoint none: agency always waits for a "
			    "ready probe; it asks /health, so set ready get "
			    "for a server that has none");
		else if (s[0] != '/' || !str_ok(s, AGENCY_PATH_MAX))
			imp_note(imp, m->notesf, "\t", v->line, m->id,
			    "checkEndpoint \"%s\": agency's ready path begins "
			    "with / (it asks /health)", s);
		else if (strcmp(s, "/health") != 0) {
			free(m->ready);
			m->ready = s;
			s = NULL;
		}
		free(s);
	} else if (strcmp(k, "ttl") == 0) {
		if (get_int(imp, m, v, k, &n) == -1)
			return;
		if (n < -1)
			imp_err(imp, v->line, "model \"%s\": ttl %lld: 0 or "
			    "more, or -1 for globalTTL", m->id, n);
		else if (n >= 0)
			m->idle = n;
	} else if (strcmp(k, "concurrencyLimit") == 0) {
		if (get_int(imp, m, v, k, &n) == -1 || n <= 0)
			return;
		if (n > MAX_REQUESTS_LIMIT)
			n = MAX_REQUESTS_LIMIT;
		m->max_requests = n;
		imp_note(imp, m->notesf, "\t", v->line, m->id, "concurrencyLimit"
		    ": agency makes the requests past the limit wait for a "
		    "slot (queue timeout, max queue) where llama-swap answers "
		    "429");
	} else if (strcmp(k, "sendLoadingState") == 0) {
		if (get_bool(imp, m, v, k, &b) == 0)
			m->progress = b;
	} else if (strcmp(k, "unlisted") == 0) {
		if (get_bool(imp, m, v, k, &b) == -1 || !b)
			return;
		m->unlisted = 1;
		if (!imp->o->features.unlisted)
			imp_note(imp, m->notesf, "\t", v->line, m->id,
			    "unlisted: agency lists every model in /v1/models "
			    "(no unlisted yet)");
	} else if (strcmp(k, "cmdStop") == 0)
		model_stop(imp, m, v);
	else if (strcmp(k, "filters") == 0)
		model_filters(imp, m, v);
	else if (strcmp(k, "name") == 0 || strcmp(k, "description") == 0) {
		if ((s = expand(imp, m, v, k, 0)) == NULL)
			return;
		if (s[0] != '\0')
			imp_note(imp, m->notesf, "\t", v->line, m->id, "%s "
			    "\"%s\": agency's /v1/models has no display name or "
			    "description", k, s);
		free(s);
	} else if (strcmp(k, "capabilities") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id, "capabilities: "
		    "agency's /v1/models does not list them (they chose the "
		    "runtime's kind, %s)", m->kind);
	else if (strcmp(k, "metadata") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id, "metadata: "
		    "agency's /v1/models carries none");
	else if (strcmp(k, "unloadTimeout") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id, "unloadTimeout:"
		    " agency gives a model server 5s after SIGTERM before "
		    "SIGKILL");
	else if (strcmp(k, "timeouts") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id, "timeouts: "
		    "agency's request, header and body timeouts are global "
		    "(agency.conf(5))");
	else if (strcmp(k, "compat") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id, "compat: "
		    "agency forwards no websockets");
	else if (strcmp(k, "healthCheckTimeout") == 0)
		imp_note(imp, m->notesf, "\t", key->line, m->id,
		    "healthCheckTimeout: llama-swap takes only the global one");
	else
		imp_note(imp, m->notesf, "\t", key->line, m->id, "%s: not a "
		    "setting of a llama-swap model; left out", k);
}

/*
 * The rest of the file.
 */

static void
read_keys(struct imp *imp, const struct ynode *n)
{
	struct words	 keys;
	uint8_t		 d[SHA256_LEN];
	char		 hex[SHA256_HEXLEN];
	size_t		 i, j;

	if (get_list(imp, NULL, n, "apiKeys", &keys) == -1)
		return;
	for (i = 0; i < keys.n; i++) {
		if (keys.w[i][0] == '\0') {
			imp_err(imp, n->kid[i]->line, "apiKeys: an empty key");
			continue;
		}
		if (strchr(keys.w[i], ' ') != NULL) {
			imp_err(imp, n->kid[i]->line, "apiKeys: a key with a "
			    "space");
			continue;
		}
		for (j = 0; j < i; j++)
			if (strcmp(keys.w[i], keys.w[j]) == 0)
				break;
		if (j < i)
			continue;	/* the same key once */
		if (imp->nkeys == 0)
			put_comment(imp->keys.f, "", "llama-swap's apiKeys, by "
			    "their SHA-256: agency's admin routes and /metrics "
			    "take only a key with admin.");
		sha256(keys.w[i], strlen(keys.w[i]), d);
		sha256_hex(d, hex);
		fprintf(imp->keys.f, "key \"llama-swap-%d\" {\n\tsecret sha256 "
		    "\"%s\"\n}\n\n", ++imp->nkeys, hex);
	}
	words_free(&keys);
}

static void
read_hooks(struct imp *imp, const struct ynode *n)
{
	const struct ynode	*os, *pl, *k;
	struct imodel		*m;
	struct words		 list;
	size_t			 i;
	char			*s, *e;

	if (ynode_null(n))
		return;
	if (n->kind != YN_MAP) {
		imp_err(imp, n->line, "hooks: a mapping, not %s",
		    ynode_what(n));
		return;
	}
	for (i = 0; i + 1 < n->nkid; i += 2)
		if (strcmp(n->kid[i]->str, "on_startup") != 0)
			imp_note(imp, imp->glob.f, "", n->kid[i]->line, NULL,
			    "hooks.%s: llama-swap's only hook is on_startup",
			    n->kid[i]->str);
	if ((os = ymap_get(n, "on_startup", &k)) == NULL || ynode_null(os))
		return;
	if (os->kind != YN_MAP) {
		imp_err(imp, os->line, "hooks.on_startup: a mapping, not %s",
		    ynode_what(os));
		return;
	}
	if ((pl = ymap_get(os, "preload", &k)) == NULL ||
	    get_list(imp, NULL, pl, "hooks.on_startup.preload", &list) == -1)
		return;
	for (i = 0; i < list.n; i++) {
		s = list.w[i];
		while (*s == ' ' || *s == '\t')
			s++;
		for (e = s + strlen(s); e > s && (e[-1] == ' ' ||
		    e[-1] == '\t'); e--)
			e[-1] = '\0';
		if (*s == '\0')
			continue;
		if ((m = model_find(imp, s)) == NULL || m->skip) {
			imp_note(imp, imp->glob.f, "", pl->kid[i]->line, NULL,
			    "hooks.on_startup.preload: \"%s\" is %s", s,
			    m == NULL ? "no model" : "a model not carried over");
			continue;
		}
		if (m->preload)
			continue;	/* by its name and an alias */
		m->preload = 1;
		if (!imp->o->features.preload)
			imp_note(imp, m->notesf, "\t", pl->kid[i]->line, m->id,
			    "hooks.on_startup.preload: agency loads at start "
			    "only a model that is not lazy, and never stops "
			    "that one to make room (no preload yet)");
	}
	words_free(&list);
}

/* A model group's members: every one once, in one group only. */
static void
read_groups(struct imp *imp, const struct ynode *g, int line)
{
	const struct ynode	*grp, *v;
	struct words		 mem, all, names;
	struct imodel		*m;
	char			 text[2048], field[AGENCY_NAME_MAX + 32];
	size_t			 i, j, k, o;
	int			 swap, excl, pers, ingroup;

	memset(&all, 0, sizeof(all));
	memset(&names, 0, sizeof(names));
	if (!ynode_null(g) && g->kind != YN_MAP) {
		imp_err(imp, g->line, "groups: a mapping, not %s",
		    ynode_what(g));
		return;
	}
	for (i = 0; g != NULL && i + 1 < g->nkid; i += 2) {
		grp = g->kid[i + 1];
		if (grp->kind != YN_MAP) {
			imp_err(imp, grp->line, "group \"%s\": a mapping, not "
			    "%s", g->kid[i]->str, ynode_what(grp));
			continue;
		}
		/* llama-swap's defaults: one at a time, stopping the rest. */
		swap = excl = 1;
		pers = 0;
		(void)snprintf(field, sizeof(field), "group \"%s\": swap",
		    g->kid[i]->str);
		if ((v = ymap_get(grp, "swap", NULL)) != NULL)
			(void)get_bool(imp, NULL, v, field, &swap);
		(void)snprintf(field, sizeof(field), "group \"%s\": exclusive",
		    g->kid[i]->str);
		if ((v = ymap_get(grp, "exclusive", NULL)) != NULL)
			(void)get_bool(imp, NULL, v, field, &excl);
		(void)snprintf(field, sizeof(field), "group \"%s\": persistent",
		    g->kid[i]->str);
		if ((v = ymap_get(grp, "persistent", NULL)) != NULL)
			(void)get_bool(imp, NULL, v, field, &pers);
		(void)snprintf(field, sizeof(field), "group \"%s\": members",
		    g->kid[i]->str);
		v = ymap_get(grp, "members", NULL);
		if (v == NULL || get_list(imp, NULL, v, field, &mem) == -1)
			continue;
		o = 0;
		text[0] = '\0';
		for (j = 0; j < mem.n; j++) {
			for (k = 0; k < j; k++)
				if (strcmp(mem.w[k], mem.w[j]) == 0)
					break;
			if (k < j) {
				imp_err(imp, v->kid[j]->line, "group \"%s\": "
				    "model \"%s\" twice", g->kid[i]->str,
				    mem.w[j]);
				continue;
			}
			for (k = 0; k < all.n; k++)
				if (strcmp(all.w[k], mem.w[j]) == 0)
					break;
			if (k < all.n) {
				imp_err(imp, v->kid[j]->line, "model \"%s\" is "
				    "in two groups: %s and %s", mem.w[j],
				    names.w[k], g->kid[i]->str);
				continue;
			}
			(void)words_add(&all, mem.w[j]);
			(void)words_add(&names, g->kid[i]->str);
			m = model_find(imp, mem.w[j]);
			o += snprintf(text + o, o < sizeof(text) ?
			    sizeof(text) - o : 0, "%s\"%s\"%s", j > 0 ? ", " :
			    "", mem.w[j], m == NULL ? " (no such model)" :
			    m->skip ? " (not carried over)" : "");
		}
		words_free(&mem);
		for (j = 0; j + 1 < grp->nkid; j += 2)
			if (strcmp(grp->kid[j]->str, "swap") != 0 &&
			    strcmp(grp->kid[j]->str, "exclusive") != 0 &&
			    strcmp(grp->kid[j]->str, "persistent") != 0 &&
			    strcmp(grp->kid[j]->str, "members") != 0)
				imp_note(imp, imp->trail.f, "",
				    grp->kid[j]->line, NULL, "group \"%s\": "
				    "%s: not a setting of a group; left out",
				    g->kid[i]->str, grp->kid[j]->str);
		imp_note(imp, imp->trail.f, "", g->kid[i]->line, NULL, "group "
		    "\"%s\" (%s; %s%s): %s. agency has no groups yet: these "
		    "models load side by side while memory allows.",
		    g->kid[i]->str, swap ? "one member at a time" :
		    "its members together", excl ? "loading one stops the "
		    "other groups" : "other groups stay", pers ? "; other "
		    "groups never stop it" : "", o > 0 ? text : "no members");
	}
	/* The rest are in llama-swap's default group: one at a time. */
	o = 0;
	k = 0;
	text[0] = '\0';
	for (i = 0; i < imp->nm; i++) {
		ingroup = 0;
		for (j = 0; j < all.n; j++)
			if (strcmp(all.w[j], imp->m[i].id) == 0)
				ingroup = 1;
		if (ingroup || imp->m[i].skip)
			continue;
		o += snprintf(text + o, o < sizeof(text) ? sizeof(text) - o :
		    0, "%s\"%s\"", k++ > 0 ? ", " : "", imp->m[i].id);
	}
	if (all.n > 0 && k > 0)
		imp_note(imp, imp->trail.f, "", line, NULL, "the models in no "
		    "group, %s, are llama-swap's default group (one member at "
		    "a time; loading one stops the other groups). agency has "
		    "no groups yet: these models load side by side while "
		    "memory allows.", text);
	else if (all.n == 0 && k > 1)
		imp_note(imp, imp->trail.f, "", line, NULL, "llama-swap runs "
		    "one of these models at a time, having no groups here: "
		    "%s. agency runs side by side the models that fit in "
		    "memory, and memory budget bounds them.", text);
	words_free(&all);
	words_free(&names);
}

/* groups and matrix, at the top (older files) or under routing. */
static void
read_routing(struct imp *imp, const struct ynode *root,
    const struct ynode *models)
{
	const struct ynode	*g, *mx, *r, *router = NULL, *use = NULL;
	const struct ynode	*set = NULL, *sg = NULL, *smx = NULL, *sch;
	const struct ynode	*v;
	char			*u = NULL;
	int			 legacy, line = models != NULL ? models->line :
				    1;

	g = ymap_get(root, "groups", NULL);
	mx = ymap_get(root, "matrix", NULL);
	legacy = (!ynode_null(g) && g->nkid > 0) || !ynode_null(mx);
	if ((r = ymap_get(root, "routing", NULL)) != NULL && !ynode_null(r)) {
		if (r->kind != YN_MAP) {
			imp_err(imp, r->line, "routing: a mapping, not %s",
			    ynode_what(r));
			return;
		}
		router = ymap_get(r, "router", NULL);
		use = ymap_get(router, "use", NULL);
		set = ymap_get(router, "settings", NULL);
		sg = ymap_get(set, "groups", NULL);
		smx = ymap_get(set, "matrix", NULL);
		if ((sch = ymap_get(r, "scheduler", NULL)) != NULL) {
			if ((v = ymap_get(sch, "use", NULL)) != NULL &&
			    (u = expand(imp, NULL, v, "routing.scheduler.use",
			    0)) != NULL && u[0] != '\0' &&
			    strcmp(u, "fifo") != 0)
				imp_err(imp, v->line, "routing.scheduler.use: "
				    "\"%s\" is not fifo", u);
			free(u);
			u = NULL;
			if ((v = ymap_get(ymap_get(ymap_get(sch, "settings",
			    NULL), "fifo", NULL), "priority", NULL)) != NULL &&
			    !ynode_null(v))
				imp_note(imp, imp->trail.f, "", v->line, NULL,
				    "routing.scheduler priorities: agency "
				    "serves the requests that wait in the "
				    "order they came");
		}
		if (legacy && (!ynode_null(use) || !ynode_null(sg) ||
		    !ynode_null(smx))) {
			imp_err(imp, r->line, "routing.router with the older "
			    "groups or matrix at the top: llama-swap takes "
			    "one or the other");
			return;
		}
	}
	if (!legacy && !ynode_null(use) &&
	    (u = expand(imp, NULL, use, "routing.router.use", 0)) == NULL)
		return;
	if (u != NULL && strcmp(u, "matrix") == 0) {
		if (ynode_null(smx))
			imp_err(imp, use->line, "routing.router.use is matrix "
			    "but routing.router.settings.matrix is not set");
		mx = smx;
	} else if (u != NULL && u[0] != '\0' && strcmp(u, "group") != 0) {
		imp_err(imp, use->line, "routing.router.use: \"%s\" is "
		    "neither group nor matrix", u);
		free(u);
		return;
	} else if (!legacy)
		g = sg;
	free(u);
	if (!ynode_null(mx) && !ynode_null(g) && g->nkid > 0) {
		imp_err(imp, mx->line, "both groups and matrix: llama-swap "
		    "takes one or the other");
		return;
	}
	if (!ynode_null(mx)) {
		imp_note(imp, imp->trail.f, "", mx->line, NULL, "matrix: agency "
		    "has no rules of which models may run together; it runs "
		    "side by side the models that fit in memory, and memory "
		    "budget bounds them.");
		return;
	}
	read_groups(imp, ynode_null(g) ? NULL : g, line);
}

static void
read_global(struct imp *imp, const struct ynode *key, const struct ynode *v)
{
	const char	*k = key->str;
	char		*s, text[1024];
	long long	 n, lo, hi;
	size_t		 i, o;
	int		 b;

	if (strcmp(k, "macros") == 0 || strcmp(k, "models") == 0 ||
	    strcmp(k, "groups") == 0 || strcmp(k, "matrix") == 0 ||
	    strcmp(k, "routing") == 0)
		return;
	if (strcmp(k, "healthCheckTimeout") == 0) {
		if (get_int(imp, NULL, v, k, &n) == -1)
			return;
		fprintf(imp->glob.f, "load timeout %llds\n",
		    n < LS_HEALTH_MIN ? LS_HEALTH_MIN : n);
	} else if (strcmp(k, "globalTTL") == 0) {
		if (get_int(imp, NULL, v, k, &n) == -1)
			return;
		if (n < 0)
			imp_err(imp, v->line, "globalTTL %lld: 0 or more", n);
		else if (n > 0)
			fprintf(imp->glob.f, "idle timeout %llds\n", n);
	} else if (strcmp(k, "startPort") == 0) {
		if (get_int(imp, NULL, v, k, &n) == -1)
			return;
		if (n < 1 || n > 65535)
			imp_err(imp, v->line, "startPort %lld: 1 to 65535", n);
		else if (n != LS_START_PORT) {
			lo = n;
			hi = n + IMPORT_PORTS - 1 > 65535 ? 65535 :
			    n + IMPORT_PORTS - 1;
			/* Never the front door's own port. */
			if (lo <= LISTEN_PORT && hi >= LISTEN_PORT) {
				if (LISTEN_PORT - lo >= hi - LISTEN_PORT)
					hi = LISTEN_PORT - 1;
				else
					lo = LISTEN_PORT + 1;
			}
			put_comment(imp->glob.f, "", "llama-swap's startPort: "
			    "agency gives model servers the ports of a range, "
			    "which holds no port the front door listens on.");
			fprintf(imp->glob.f, "ports %lld to %lld\n", lo, hi);
		}
	} else if (strcmp(k, "sendLoadingState") == 0) {
		if (get_bool(imp, NULL, v, k, &b) == -1)
			return;
		imp->progress = b;
		if (b)
			imp_note(imp, imp->glob.f, "", v->line, NULL,
			    "sendLoadingState: agency's loading progress is "
			    "comment lines of the event stream, which clients "
			    "do not show, not reasoning text");
		fprintf(imp->glob.f, "loading progress %s\n", b ? "yes" : "no");
	} else if (strcmp(k, "includeAliasesInList") == 0) {
		if (get_bool(imp, NULL, v, k, &b) == 0)
			imp->include_aliases = b;
	} else if (strcmp(k, "logLevel") == 0) {
		if ((s = expand(imp, NULL, v, k, 0)) == NULL)
			return;
		if (strcmp(s, "debug") == 0)
			imp_note(imp, imp->glob.f, "", v->line, NULL, "logLevel "
			    "debug: start agencyd with -v, or run agency-ctl "
			    "log verbose");
		else if (strcmp(s, "info") != 0)
			imp_note(imp, imp->glob.f, "", v->line, NULL, "logLevel "
			    "%s: agency has no quieter log than its own", s);
		free(s);
	} else if (strcmp(k, "logToStdout") == 0) {
		if ((s = expand(imp, NULL, v, k, 0)) == NULL)
			return;
		if (strcmp(s, "proxy") != 0)
			imp_note(imp, imp->glob.f, "", v->line, NULL,
			    "logToStdout %s: agency logs the model servers' "
			    "lines with its own; agency-ctl logs MODEL shows "
			    "one model's", s);
		free(s);
	} else if (strcmp(k, "logTimeFormat") == 0) {
		if ((s = expand(imp, NULL, v, k, 0)) == NULL)
			return;
		if (s[0] != '\0')
			imp_note(imp, imp->glob.f, "", v->line, NULL,
			    "logTimeFormat %s: agency's log has its own "
			    "timestamps", s);
		free(s);
	} else if (strcmp(k, "logRequests") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "logRequests: "
		    "agency logs every request (its access log)");
	else if (strcmp(k, "unloadTimeout") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "unloadTimeout: "
		    "agency gives a model server 5s after SIGTERM before "
		    "SIGKILL");
	else if (strcmp(k, "metricsMaxInMemory") == 0 ||
	    strcmp(k, "captureBuffer") == 0 || strcmp(k, "store") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "%s: agency "
		    "keeps no history of requests; it counts them in /metrics",
		    k);
	else if (strcmp(k, "performance") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "performance: "
		    "agency reports memory in status and /metrics, and polls "
		    "nothing else");
	else if (strcmp(k, "ui") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "ui: agency's "
		    "console has no settings but console yes or no");
	else if (strcmp(k, "apiKeys") == 0)
		read_keys(imp, v);
	else if (strcmp(k, "hooks") == 0)
		read_hooks(imp, v);
	else if (strcmp(k, "upstream") == 0)
		imp_note(imp, imp->glob.f, "", key->line, NULL, "upstream: "
		    "agency's /upstream/MODEL/ routes are a runtime's "
		    "passthrough, off unless set, and ignore no paths");
	else if (strcmp(k, "profiles") == 0 || strcmp(k, "selectors") == 0 ||
	    strcmp(k, "peers") == 0) {
		o = 0;
		text[0] = '\0';
		for (i = 0; v->kind == YN_MAP && i + 1 < v->nkid; i += 2)
			o += snprintf(text + o, o < sizeof(text) ?
			    sizeof(text) - o : 0, "%s\"%s\"", i > 0 ? ", " : "",
			    v->kid[i]->str);
		imp_note(imp, imp->glob.f, "", key->line, NULL, "%s %s: %s", k,
		    text, strcmp(k, "peers") == 0 ? "agency serves the models "
		    "it runs, not other servers'" : strcmp(k, "profiles") == 0 ?
		    "agency has no switchable model names" : "agency has no "
		    "model names that pick another model");
	} else
		imp_note(imp, imp->glob.f, "", key->line, NULL, "%s: not a "
		    "setting of llama-swap's; left out", k);
}

/*
 * Runtimes: models whose commands and runtime settings are the same
 * share one; so do those whose commands differ only in their own
 * arguments, once agency has %a.
 */

static int
str_same(const char *a, const char *b)
{
	return (a == b || (a != NULL && b != NULL && strcmp(a, b) == 0));
}

static int
rt_same(const struct imodel *a, const struct imodel *b)
{
	return (strcmp(a->argv.w[0], b->argv.w[0]) == 0 &&
	    strcmp(a->kind, b->kind) == 0 && str_same(a->ready, b->ready) &&
	    a->send_upstream == b->send_upstream &&
	    a->progress == b->progress && str_same(a->stop, b->stop) &&
	    words_equal(&a->strip, &b->strip));
}

static void
runtime_add(struct imp *imp, const size_t *idx, size_t n, const char *cmd)
{
	struct iruntime	*r, *nr;
	struct imodel	*m = &imp->m[idx[0]];
	char		 base[AGENCY_NAME_MAX];
	size_t		 i, j;
	int		 k;

	if ((nr = reallocarray(imp->rt, imp->nrt + 1, sizeof(*nr))) == NULL) {
		imp_err(imp, 0, "out of memory");
		return;
	}
	imp->rt = nr;
	r = &imp->rt[imp->nrt];
	memset(r, 0, sizeof(*r));
	r->model = idx[0];
	/* Shared, by its program's name; a model's own, by the model's. */
	if (strlcpy(base, n > 1 || cmd != NULL ? prog_base(m) : m->id,
	    sizeof(base)) >= sizeof(base) || base[0] == '\0')
		(void)strlcpy(base, "runtime", sizeof(base));
	(void)strlcpy(r->name, base, sizeof(r->name));
	for (k = 2;; k++) {
		for (j = 0; j < imp->nrt; j++)
			if (strcmp(imp->rt[j].name, r->name) == 0)
				break;
		if (j == imp->nrt)
			break;
		(void)snprintf(r->name, sizeof(r->name), "%.*s-%d",
		    (int)sizeof(base) - 12, base, k);
	}
	if (cmd != NULL)
		(void)strlcpy(r->command, cmd, sizeof(r->command));
	else
		(void)words_template(&m->argv, 0, m->argv.n, r->command,
		    sizeof(r->command));
	for (i = 0; i < n; i++)
		imp->m[idx[i]].rt = imp->nrt;
	imp->nrt++;
}

/* Whether a word of argv from i to j (excluded) has a marker. */
static int
marked(const struct words *w, size_t i, size_t j, int mark)
{
	for (; i < j; i++)
		if (word_marked(w->w[i], mark))
			return (1);
	return (0);
}

/*
 * Whether the models idx share a command but for their own arguments:
 * the common words hold %p, and what differs no marker.  Then shared
 * is the command with %a and each model's args are set.
 */
static int
share(struct imp *imp, const size_t *idx, size_t n, char *shared,
    size_t len)
{
	const struct words	*set[CLUSTER_MAX];
	struct imodel		*x = &imp->m[idx[0]];
	char			 a[AGENCY_CMD_MAX], b[AGENCY_CMD_MAX];
	size_t			 pre, suf, k, w;

	if (n < 2 || n > CLUSTER_MAX)
		return (0);
	for (k = 0; k < n; k++)
		set[k] = &imp->m[idx[k]].argv;
	words_common(set, n, &pre, &suf);
	if (!marked(&x->argv, 0, pre, MARK_PORT) &&
	    !marked(&x->argv, x->argv.n - suf, x->argv.n, MARK_PORT))
		return (0);
	for (k = 0; k < n; k++) {
		w = set[k]->n - suf;
		if (marked(set[k], pre, w, MARK_PORT) ||
		    marked(set[k], pre, w, MARK_MODEL) ||
		    marked(set[k], pre, w, MARK_UPSTREAM))
			return (0);
	}
	if (words_template(&x->argv, 0, pre, a, sizeof(a)) == -1 ||
	    words_template(&x->argv, x->argv.n - suf, x->argv.n, b,
	    sizeof(b)) == -1 || (size_t)snprintf(shared, len, "%s %%a%s%s", a,
	    suf > 0 ? " " : "", b) >= len)
		return (0);
	for (k = 0; k < n; k++) {
		x = &imp->m[idx[k]];
		free(x->args);
		x->args = NULL;
		if (set[k]->n - suf > pre && words_template(set[k], pre,
		    set[k]->n - suf, a, sizeof(a)) == 0)
			x->args = strdup(a);
	}
	return (1);
}

/* The runtimes of a cluster: models that share, or one. */
static void
runtimes_cluster(struct imp *imp, size_t *c, size_t nc, int ok,
    const char *shared)
{
	struct imodel	*m = imp->m;
	size_t		 sub[CLUSTER_MAX], ns, first, j, k, o = 0;
	char		 names[1024];

	if (ok && imp->o->features.args) {
		runtime_add(imp, c, nc, shared);
		return;
	}
	/* Without %a, one runtime a command. */
	first = imp->nrt;
	for (k = 0; k < nc; k++) {
		if (m[c[k]].rt != (size_t)-1)
			continue;
		ns = 0;
		for (j = k; j < nc; j++)
			if (m[c[j]].rt == (size_t)-1 &&
			    words_equal(&m[c[k]].argv, &m[c[j]].argv))
				sub[ns++] = c[j];
		runtime_add(imp, sub, ns, NULL);
	}
	if (!ok || imp->nrt - first < 2)
		return;
	names[0] = '\0';
	for (j = first; j < imp->nrt; j++)
		o += snprintf(names + o, o < sizeof(names) ? sizeof(names) - o :
		    0, "%s\"%s\"", j == first ? "" : j + 1 == imp->nrt ?
		    " and " : ", ", imp->rt[j].name);
	imp->rt[first].shared = strdup(shared);
	imp->rt[first].others = strdup(names);
	imp_note(imp, NULL, "", m[c[0]].line, NULL, "runtimes %s are one "
	    "once agency has a model's own arguments (%%a)", names);
}

/*
 * Models with the same program and runtime settings, in clusters: each
 * model with those after it that share its command but for their own
 * arguments (greedy, over at most CLUSTER_MAX models a group).
 */
static void
runtimes_make(struct imp *imp)
{
	struct imodel	*m = imp->m;
	size_t		 grp[CLUSTER_MAX], c[CLUSTER_MAX], ng, nc, i, j, k;
	char		 shared[AGENCY_CMD_MAX], *done;
	int		 ok;

	if ((done = calloc(imp->nm + 1, 1)) == NULL) {
		imp_err(imp, 0, "out of memory");
		return;
	}
	for (i = 0; i < imp->nm; i++) {
		if (m[i].skip || done[i])
			continue;
		ng = 0;
		for (j = i; j < imp->nm && ng < CLUSTER_MAX; j++)
			if (!m[j].skip && !done[j] && rt_same(&m[i], &m[j])) {
				grp[ng++] = j;
				done[j] = 1;
			}
		for (k = 0; k < ng; k++) {
			if (m[grp[k]].rt != (size_t)-1)
				continue;
			c[0] = grp[k];
			nc = 1;
			ok = 0;
			for (j = k + 1; j < ng; j++) {
				if (m[grp[j]].rt != (size_t)-1)
					continue;
				c[nc] = grp[j];
				if (words_equal(&m[c[0]].argv, &m[c[nc]].argv) ||
				    share(imp, c, nc + 1, shared,
				    sizeof(shared)))
					nc++;
			}
			/* The cluster's own: one command, or shared. */
			for (j = 1; j < nc; j++)
				if (!words_equal(&m[c[0]].argv, &m[c[j]].argv))
					break;
			if (j < nc)
				ok = share(imp, c, nc, shared, sizeof(shared));
			if (!ok)
				for (j = 0; j < nc; j++) {
					free(m[c[j]].args);
					m[c[j]].args = NULL;
				}
			runtimes_cluster(imp, c, nc, ok, shared);
		}
	}
	free(done);
}

/*
 * Writing.
 */

static void
write_size(FILE *f, int64_t bytes)
{
	if (bytes % (1024LL * 1024 * 1024) == 0)
		fprintf(f, "%lldG", (long long)(bytes >> 30));
	else
		fprintf(f, "%lldM", (long long)(bytes >> 20));
}

static void
write_runtime(struct imp *imp, FILE *f, const struct iruntime *r)
{
	const struct imodel	*m = &imp->m[r->model];
	char			 text[AGENCY_CMD_MAX + 256];
	size_t			 i;

	fprintf(f, "runtime ");
	put_str(f, r->name);
	fprintf(f, " {\n");
	if (r->shared != NULL) {
		(void)snprintf(text, sizeof(text), "Runtimes %s are one once "
		    "agency has a model's own arguments (%%a, not there yet), "
		    "with the command \"%s\" and each model's own args.",
		    r->others, r->shared);
		put_comment(f, "\t", text);
	}
	fprintf(f, "\tcommand ");
	put_str(f, r->command);
	fputc('\n', f);
	if (m->ready != NULL) {
		fprintf(f, "\tready get ");
		put_str(f, m->ready);
		fputc('\n', f);
	}
	if (strcmp(m->kind, "chat") != 0)
		fprintf(f, "\tkind %s\n", m->kind);
	if (m->send_upstream)
		fprintf(f, "\tsend model upstream\n");
	if (m->progress != -1)
		fprintf(f, "\tloading progress %s\n", m->progress ? "yes" :
		    "no");
	/* Phase 2: statements of features not on main yet. */
	if (imp->o->features.stop && m->stop != NULL) {
		fprintf(f, "\tstop ");
		put_str(f, m->stop);
		fputc('\n', f);
	}
	for (i = 0; imp->o->features.strip && i < m->strip.n; i++) {
		fprintf(f, "\tstrip ");
		put_str(f, m->strip.w[i]);
		fputc('\n', f);
	}
	fprintf(f, "}\n\n");
}

static void
write_model(struct imp *imp, FILE *f, const struct imodel *m)
{
	char	 text[AGENCY_CMD_MAX + 64];
	size_t	 i;

	if (m->skip) {
		(void)snprintf(text, sizeof(text), "llama-swap's model \"%s\" "
		    "is not carried over: %s.", m->id, m->skipwhy != NULL ?
		    m->skipwhy : "");
		put_comment(f, "", text);
		fputc('\n', f);
		return;
	}
	fprintf(f, "model ");
	put_str(f, m->id);
	fprintf(f, " {\n\truntime ");
	put_str(f, imp->rt[m->rt].name);
	fprintf(f, "\n\tupstream ");
	put_str(f, m->upstream);
	fprintf(f, "\n\tlazy\n");
	if (m->memory > 0) {
		if (m->memory_why != NULL)
			put_comment(f, "\t", m->memory_why);
		fprintf(f, "\tmemory ");
		write_size(f, m->memory);
		fputc('\n', f);
	}
	if (m->idle >= 0)
		fprintf(f, "\tidle timeout %llds\n", (long long)m->idle);
	if (m->max_requests > 0)
		fprintf(f, "\tmax requests %lld\n", m->max_requests);
	for (i = 0; i < m->aliases.n; i++) {
		fprintf(f, "\talias ");
		put_str(f, m->aliases.w[i]);
		fputc('\n', f);
	}
	for (i = 0; i < m->env.n; i++) {
		fprintf(f, "\tenv ");
		put_str(f, m->env.w[i]);
		fputc('\n', f);
	}
	/* Phase 2: statements of features not on main yet. */
	if (m->args != NULL && imp->o->features.args) {
		fprintf(f, "\targs ");
		put_str(f, m->args);
		fputc('\n', f);
	} else if (m->args != NULL) {
		(void)snprintf(text, sizeof(text), "its own arguments, once "
		    "agency has %%a: args \"%s\"", m->args);
		put_comment(f, "\t", text);
	}
	if (m->preload && imp->o->features.preload)
		fprintf(f, "\tpreload\n");
	if (m->unlisted && imp->o->features.unlisted)
		fprintf(f, "\tunlisted\n");
	fflush(m->notesf);
	if (m->noteslen > 0)
		fwrite(m->notes, 1, m->noteslen, f);
	fprintf(f, "}\n\n");
}

static void
imodel_free(struct imodel *m)
{
	free(m->id);
	free(m->skipwhy);
	macros_free(&m->scope);
	words_free(&m->argv);
	free(m->file);
	free(m->upstream);
	free(m->ready);
	free(m->stop);
	words_free(&m->strip);
	words_free(&m->aliases);
	words_free(&m->env);
	free(m->memory_why);
	if (m->notesf != NULL)
		fclose(m->notesf);
	free(m->notes);
	free(m->args);
}

int
import_llama_swap(const char *buf, size_t len, const struct import_opts *o,
    FILE *out, FILE *errf)
{
	struct imp		 imp;
	struct ynode		*root;
	const struct ynode	*models, *mkey = NULL;
	char			 err[512], cmd[AGENCY_CMD_MAX];
	size_t			 i, nmodels = 0, naliases = 0, nnotes;
	int			 line, rv = -1;

	memset(&imp, 0, sizeof(imp));
	imp.o = o;
	imp.progress = -1;
	root = NULL;
	if (len > YAML_FILE_MAX) {
		imp_err(&imp, 0, "larger than %d bytes", YAML_FILE_MAX);
		goto done;
	}
	if ((root = ytree_read(buf, len, &line, err, sizeof(err))) == NULL) {
		imp_err(&imp, line, "%s", err);
		goto done;
	}
	if (sect_open(&imp.glob) == -1 || sect_open(&imp.keys) == -1 ||
	    sect_open(&imp.trail) == -1) {
		imp_err(&imp, 0, "out of memory");
		goto done;
	}
	if (root->kind != YN_MAP) {
		imp_err(&imp, root->line, "the file is %s, not llama-swap's "
		    "mapping of settings", ynode_what(root));
		goto done;
	}
	read_macros(&imp, ymap_get(root, "macros", NULL), &imp.gm, NULL);
	if ((models = ymap_get(root, "models", &mkey)) == NULL ||
	    ynode_null(models)) {
		imp_err(&imp, root->line, "no models");
		goto done;
	}
	if (imp.nerr == 0)
		read_models(&imp, models);
	for (i = 0; i + 1 < root->nkid; i += 2)
		read_global(&imp, root->kid[i], root->kid[i + 1]);
	read_routing(&imp, root, mkey);
	for (i = 0; i < imp.nm; i++) {
		imp.m[i].rt = (size_t)-1;
		if (!imp.m[i].skip) {
			nmodels++;
			naliases += imp.m[i].aliases.n;
		}
		/* A command agency.conf cannot hold: no model. */
		if (!imp.m[i].skip && words_template(&imp.m[i].argv, 0,
		    imp.m[i].argv.n, cmd, sizeof(cmd)) == -1) {
			model_skip(&imp, &imp.m[i], imp.m[i].line, "its "
			    "command is longer than agency's %d bytes, or has "
			    "a line's end in a word", AGENCY_CMD_MAX - 1);
			nmodels--;
			naliases -= imp.m[i].aliases.n;
		}
	}
	if (naliases > 0 && !imp.include_aliases)
		imp_note(&imp, imp.glob.f, "", mkey->line, NULL, "aliases: "
		    "agency's /v1/models lists them, which llama-swap does "
		    "only with includeAliasesInList");
	if (imp.nerr > 0)
		goto done;
	if (nmodels == 0) {
		imp_err(&imp, mkey->line, "no model could be carried over, "
		    "and agency.conf needs one");
		goto done;
	}
	runtimes_make(&imp);
	if (imp.nerr > 0)
		goto done;

	fprintf(out, "# agency.conf from the llama-swap configuration %s\n"
	    "# (agency-ctl import llama-swap).  The comments say what was "
	    "not\n# carried over, and why.  llama-swap listens where its "
	    "-listen\n# says (:8080, every address, by default); agency "
	    "listens on\n# 127.0.0.1 port 8080 unless a listen statement "
	    "says otherwise.\n\n", strcmp(o->name, "-") == 0 ?
	    "on standard input" : o->name);
	fflush(imp.glob.f);
	if (imp.glob.len > 0) {
		fwrite(imp.glob.buf, 1, imp.glob.len, out);
		fputc('\n', out);
	}
	for (i = 0; i < imp.nrt; i++)
		write_runtime(&imp, out, &imp.rt[i]);
	for (i = 0; i < imp.nm; i++)
		write_model(&imp, out, &imp.m[i]);
	fflush(imp.keys.f);
	fwrite(imp.keys.buf, 1, imp.keys.len, out);
	fflush(imp.trail.f);
	fwrite(imp.trail.buf, 1, imp.trail.len, out);
	if (fflush(out) == EOF || ferror(out)) {
		imp_err(&imp, 0, "cannot write: %s", strerror(errno));
		goto done;
	}
	nnotes = imp.notes.n;
	notes_print(&imp.notes, o->name, errf);
	fprintf(errf, "%s: %zu model%s in %zu runtime%s, %zu alias%s, %d "
	    "key%s; %zu thing%s not carried over (see the comments)\n",
	    o->name, nmodels, nmodels == 1 ? "" : "s", imp.nrt,
	    imp.nrt == 1 ? "" : "s", naliases, naliases == 1 ? "" : "es",
	    imp.nkeys, imp.nkeys == 1 ? "" : "s", nnotes,
	    nnotes == 1 ? "" : "s");
	rv = 0;
 done:
	for (i = 0; i < imp.nm; i++)
		imodel_free(&imp.m[i]);
	free(imp.m);
	for (i = 0; i < imp.nrt; i++) {
		free(imp.rt[i].shared);
		free(imp.rt[i].others);
	}
	free(imp.rt);
	macros_free(&imp.gm);
	sect_close(&imp.glob);
	sect_close(&imp.keys);
	sect_close(&imp.trail);
	notes_print(&imp.errs, o->name, errf);
	notes_print(&imp.notes, o->name, NULL);
	ytree_free(root);
	return (rv);
}

int
import_llama_swap_file(const char *path, const struct import_opts *o,
    FILE *out, FILE *errf)
{
	struct stat	 st;
	char		*buf;
	size_t		 len = 0;
	ssize_t		 n;
	int		 fd, rv;

	if (strcmp(path, "-") == 0)
		fd = STDIN_FILENO;
	else if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		fprintf(errf, "%s: %s\n", path, strerror(errno));
		return (-1);
	}
	if (fstat(fd, &st) == -1 || (fd != STDIN_FILENO && !S_ISREG(st.st_mode))) {
		fprintf(errf, "%s: not a regular file\n", path);
		if (fd != STDIN_FILENO)
			close(fd);
		return (-1);
	}
	/* One byte more than the bound tells a file that is too large. */
	if ((buf = malloc(YAML_FILE_MAX + 1)) == NULL) {
		fprintf(errf, "%s: out of memory\n", path);
		if (fd != STDIN_FILENO)
			close(fd);
		return (-1);
	}
	while (len <= YAML_FILE_MAX &&
	    (n = read(fd, buf + len, YAML_FILE_MAX + 1 - len)) != 0) {
		if (n == -1) {
			if (errno == EINTR)
				continue;
			fprintf(errf, "%s: %s\n", path, strerror(errno));
			free(buf);
			if (fd != STDIN_FILENO)
				close(fd);
			return (-1);
		}
		len += n;
	}
	if (fd != STDIN_FILENO)
		close(fd);
	rv = import_llama_swap(buf, len, o, out, errf);
	free(buf);
	return (rv);
}
