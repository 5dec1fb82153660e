/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Command lines: llama-swap's cmd split into words as llama-swap splits
 * it (lines that begin with '#' dropped, a line that ends in a backslash
 * joined to the next, then POSIX shell words: quotes and backslashes,
 * no expansion), and words written back as agency's spawn reads a
 * command template (agencyd/spawn.c): quoted where they must be, a
 * literal % doubled, the markers of import.h as %p, %m and %u.  Pure
 * functions.
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

enum split_state {
	SP_SPACE,
	SP_WORD,
	SP_SINGLE,
	SP_DOUBLE,
};

static char	*strip_comments(const char *, int);
static int	word_needs_quotes(const char *);
static int	put(char *, size_t, size_t *, const char *, size_t);
static int	value_word(const char *);

int
words_add(struct words *ws, const char *w)
{
	char	**v;
	size_t	  size;

	if (ws->n >= CMD_WORDS_MAX)
		return (-1);
	if (ws->n == ws->size) {
		size = ws->size == 0 ? 16 : ws->size * 2;
		if ((v = reallocarray(ws->w, size, sizeof(*v))) == NULL)
			return (-1);
		ws->w = v;
		ws->size = size;
	}
	if ((ws->w[ws->n] = strdup(w)) == NULL)
		return (-1);
	ws->n++;
	return (0);
}

void
words_free(struct words *ws)
{
	size_t	i;

	for (i = 0; i < ws->n; i++)
		free(ws->w[i]);
	free(ws->w);
	memset(ws, 0, sizeof(*ws));
}

int
words_equal(const struct words *a, const struct words *b)
{
	size_t	i;

	if (a->n != b->n)
		return (0);
	for (i = 0; i < a->n; i++)
		if (strcmp(a->w[i], b->w[i]) != 0)
			return (0);
	return (1);
}

int
word_marked(const char *w, int mark)
{
	return (strchr(w, mark) != NULL);
}

/*
 * llama-swap's command without the lines that begin with '#' (after
 * blanks), and with join, as it is split: a backslash that ends a line
 * made a blank.
 */
static char *
strip_comments(const char *s, int join)
{
	const char	*line, *end, *a, *b;
	char		*out;
	size_t		 o = 0;

	if ((out = malloc(strlen(s) + 2)) == NULL)
		return (NULL);
	for (line = s; ; line = end + 1) {
		if ((end = strchr(line, '\n')) == NULL)
			end = line + strlen(line);
		for (a = line; a < end && (*a == ' ' || *a == '\t' ||
		    *a == '\r'); a++)
			;
		for (b = end; b > a && (b[-1] == ' ' || b[-1] == '\t' ||
		    b[-1] == '\r'); b--)
			;
		if (a < end && *a == '#') {
			if (*end == '\0')
				break;
			continue;
		}
		if (o > 0)
			out[o++] = '\n';
		if (join && b > a && b[-1] == '\\') {
			memcpy(out + o, a, b - 1 - a);
			o += b - 1 - a;
			out[o++] = ' ';
		} else {
			memcpy(out + o, line, end - line);
			o += end - line;
		}
		if (*end == '\0')
			break;
	}
	out[o] = '\0';
	return (out);
}

char *
cmd_uncomment(const char *s)
{
	return (strip_comments(s, 0));
}

int
words_split(const char *cmd, struct words *ws)
{
	enum split_state	 st = SP_SPACE;
	char			*s, *tok;
	const char		*p;
	size_t			 t = 0;
	int			 have = 0, c, e, rv = -1;

	memset(ws, 0, sizeof(*ws));
	if ((s = strip_comments(cmd, 1)) == NULL)
		return (-1);
	if ((tok = malloc(strlen(s) + 1)) == NULL) {
		free(s);
		return (-1);
	}
	for (p = s; *p != '\0'; p++) {
		c = (unsigned char)*p;
		e = -1;
		/* A backslash: what it makes of the next character. */
		if (c == '\\' && st != SP_SINGLE) {
			if (p[1] == '\0' || p[1] == '\n') {
				if (p[1] != '\0')
					p++;
				continue;	/* a joined line: nothing */
			}
			if (st != SP_DOUBLE || strchr("$`\"\\", p[1]) != NULL)
				e = (unsigned char)*++p;
		}
		switch (st) {
		case SP_SPACE:
			if (e != -1) {
				st = SP_WORD;
				tok[t++] = e;
				have = 1;
			} else if (c == '\'' || c == '"') {
				st = c == '\'' ? SP_SINGLE : SP_DOUBLE;
				have = 1;
			} else if (c != ' ' && c != '\t' && c != '\n') {
				st = SP_WORD;
				tok[t++] = c;
				have = 1;
			}
			break;
		case SP_WORD:
			if (e != -1)
				tok[t++] = e;
			else if (c == '\'' || c == '"')
				st = c == '\'' ? SP_SINGLE : SP_DOUBLE;
			else if (c == ' ' || c == '\t' || c == '\n') {
				tok[t] = '\0';
				if (words_add(ws, tok) == -1)
					goto done;
				t = 0;
				have = 0;
				st = SP_SPACE;
			} else
				tok[t++] = c;
			break;
		case SP_SINGLE:
		case SP_DOUBLE:
			if (e != -1)
				tok[t++] = e;
			else if (c == (st == SP_SINGLE ? '\'' : '"'))
				st = SP_WORD;
			else
				tok[t++] = c;
			break;
		default:
			goto done;
		}
	}
	/* An open quote ends with the text, as llama-swap takes it. */
	if (have) {
		tok[t] = '\0';
		if (words_add(ws, tok) == -1)
			goto done;
	}
	rv = 0;
 done:
	free(tok);
	free(s);
	if (rv == -1)
		words_free(ws);
	return (rv);
}

static int
word_needs_quotes(const char *w)
{
	return (w[0] == '\0' || strpbrk(w, " \t'\"\\") != NULL);
}

static int
put(char *buf, size_t len, size_t *o, const char *s, size_t n)
{
	if (n >= len - *o)
		return (-1);
	memcpy(buf + *o, s, n);
	*o += n;
	buf[*o] = '\0';
	return (0);
}

int
words_template(const struct words *ws, size_t i, size_t j, char *buf,
    size_t len)
{
	const char	*w, *s;
	size_t		 o = 0, k;
	int		 q;
	char		 c;

	if (len == 0)
		return (-1);
	buf[0] = '\0';
	for (k = i; k < j && k < ws->n; k++) {
		w = ws->w[k];
		if (strchr(w, '\n') != NULL)
			return (-1);
		if (k > i && put(buf, len, &o, " ", 1) == -1)
			return (-1);
		/* Single quotes take everything but a single quote. */
		q = !word_needs_quotes(w) ? 0 : strchr(w, '\'') == NULL ?
		    '\'' : '"';
		if (q != 0) {
			c = (char)q;
			if (put(buf, len, &o, &c, 1) == -1)
				return (-1);
		}
		for (s = w; *s != '\0'; s++) {
			switch (*s) {
			case MARK_PORT:
				if (put(buf, len, &o, "%p", 2) == -1)
					return (-1);
				continue;
			case MARK_MODEL:
				if (put(buf, len, &o, "%m", 2) == -1)
					return (-1);
				continue;
			case MARK_UPSTREAM:
				if (put(buf, len, &o, "%u", 2) == -1)
					return (-1);
				continue;
			case '%':
				if (put(buf, len, &o, "%%", 2) == -1)
					return (-1);
				continue;
			case '"':
			case '\\':
				if (q == '"' && put(buf, len, &o, "\\", 1) ==
				    -1)
					return (-1);
				break;
			default:
				break;
			}
			if (put(buf, len, &o, s, 1) == -1)
				return (-1);
		}
		if (q != 0) {
			c = (char)q;
			if (put(buf, len, &o, &c, 1) == -1)
				return (-1);
		}
	}
	return (0);
}

ssize_t
words_option(const struct words *ws, const char *const *names, int *eq)
{
	size_t	i, k, n;

	for (i = 1; i < ws->n; i++) {
		for (k = 0; names[k] != NULL; k++) {
			n = strlen(names[k]);
			if (strcmp(ws->w[i], names[k]) == 0 && i + 1 < ws->n) {
				*eq = 0;
				return ((ssize_t)i + 1);
			}
			if (strncmp(ws->w[i], names[k], n) == 0 &&
			    ws->w[i][n] == '=') {
				*eq = 1;
				return ((ssize_t)i);
			}
		}
	}
	return (-1);
}

/* A word that is an option's value rather than an option. */
static int
value_word(const char *w)
{
	return (w[0] != '-');
}

void
words_common(const struct words *const *set, size_t n, size_t *prep,
    size_t *sufp)
{
	size_t	min, pre, suf, i;
	int	split = 0;

	*prep = *sufp = 0;
	if (n == 0)
		return;
	min = set[0]->n;
	for (i = 1; i < n; i++)
		if (set[i]->n < min)
			min = set[i]->n;
	for (pre = 0; pre < min; pre++) {
		for (i = 1; i < n; i++)
			if (strcmp(set[i]->w[pre], set[0]->w[pre]) != 0)
				break;
		if (i < n)
			break;
	}
	for (suf = 0; pre + suf < min; suf++) {
		for (i = 1; i < n; i++)
			if (strcmp(set[i]->w[set[i]->n - 1 - suf],
			    set[0]->w[set[0]->n - 1 - suf]) != 0)
				break;
		if (i < n)
			break;
	}
	/* "--ctx-size 4096" and "--ctx-size 8192" differ as a whole. */
	if (pre > 1 && pre < min && !value_word(set[0]->w[pre - 1])) {
		for (i = 0; i < n; i++)
			if (value_word(set[i]->w[pre]))
				split = 1;
		if (split)
			pre--;
	}
	/* The same at the end: "--x 1" and "--y 1" before a common end. */
	split = 0;
	if (suf > 0 && value_word(set[0]->w[set[0]->n - suf])) {
		for (i = 0; i < n; i++)
			if (set[i]->n - suf > pre &&
			    !value_word(set[i]->w[set[i]->n - suf - 1]))
				split = 1;
		if (split)
			suf--;
	}
	*prep = pre;
	*sufp = suf;
}
