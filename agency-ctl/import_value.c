/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl import: the bottom of the importer.  Errors and notes (said
 * on stderr in the order of the file's lines), comments in the output,
 * the sections the output is put together from, and the values read
 * from the YAML tree: scalars, numbers, booleans, lists, macros and
 * their expansion.  Nothing here knows a llama-swap setting.
 *
 * Calls: lscmd.c, lsmacro.c, yamlread.c.
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
#include "import_priv.h"
#include "sha256.h"

static void	merr(struct imp *, struct imodel *, int, const char *, ...)
		    __attribute__((__format__ (printf, 4, 5)));
static int	note_add(struct inotes *, int, const char *);
static int	note_cmp(const void *, const void *);
static int	parse_int(const char *, long long *);
static int	scalar(struct imp *, const struct ynode *, struct imodel *,
		    const char *);
static int	get_value(struct imp *, struct imodel *, const struct ynode *,
		    const char *, const char *,
		    int (*)(const char *, long long *), long long *);


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

/* fmt's text into buf (len at most IMP_TEXT_MAX), the markers as their
 * macros. */
void
vunmark(char *buf, size_t len, const char *fmt, va_list ap)
{
	char	 raw[IMP_TEXT_MAX];

	(void)vsnprintf(raw, sizeof(raw), fmt, ap);
	unmark(buf, len, raw);
}

/* An error: kept, so that all are said in the order of the lines. */
void
imp_err(struct imp *imp, int line, const char *fmt, ...)
{
	va_list	 ap;
	char	 text[IMP_TEXT_MAX];

	va_start(ap, fmt);
	vunmark(text, sizeof(text), fmt, ap);
	va_end(ap);
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
void
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
void
imp_note(struct imp *imp, FILE *sect, const char *indent, int line,
    const char *where, const char *fmt, ...)
{
	va_list		 ap;
	char		 text[IMP_TEXT_MAX], at[2200], *s;

	va_start(ap, fmt);
	vunmark(text, sizeof(text), fmt, ap);
	va_end(ap);
	/* Values from the file may hold a line's end. */
	for (s = text; *s != '\0'; s++)
		if (*s == '\n' || *s == '\t')
			*s = ' ';
	if (sect != NULL)
		put_comment(sect, indent, text);
	if (where != NULL) {
		(void)snprintf(at, sizeof(at), "%s: %s", where, text);
		(void)note_add(&imp->notes, line, at);
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
void
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
void
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

int
sect_open(struct isect *s)
{
	s->buf = NULL;
	s->len = 0;
	return ((s->f = open_memstream(&s->buf, &s->len)) == NULL ? -1 : 0);
}

void
sect_close(struct isect *s)
{
	if (s->f != NULL)
		fclose(s->f);
	s->f = NULL;
	free(s->buf);
	s->buf = NULL;
}

/* A string agency.conf can hold in len bytes: one line, not empty. */
int
str_ok(const char *s, size_t len)
{
	return (s[0] != '\0' && strlen(s) < len && strchr(s, '\n') == NULL);
}

/*
 * An upstream agency takes that is not a path: "name" or "org/name",
 * as agencyd's check_upstream has it.
 */
int
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
int
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
char *
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

int
get_int(struct imp *imp, struct imodel *m, const struct ynode *n,
    const char *field, long long *v)
{
	return (get_value(imp, m, n, field, "an integer", parse_int, v));
}

int
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
int
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
void
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
