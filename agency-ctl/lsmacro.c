/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * llama-swap's macros, by its documented rules: ${env.NAME} from the
 * environment first; then the macros of a scope, the last declared
 * replaced first, so that a macro may use those declared before it;
 * names of letters, digits, '_' and '-' under 64 bytes, never PID, PORT
 * or MODEL_ID, and no macro naming itself.  A value that YAML reads as
 * a number or a bool is written as llama-swap (Go's %v) writes it: 1.0
 * is "1", 1e6 is "1e+06".  Pure string functions, bounded by
 * MACRO_EXPAND_MAX.
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import.h"

static int	name_char(int);
static char	*go_int(const char *);
static char	*go_float(const char *);
static int	yaml_float(const char *);
static char	*replace_all(const char *, const char *, const char *,
		    char *, size_t);

static int
name_char(int c)
{
	return (isalnum((unsigned char)c) || c == '_' || c == '-');
}

int
macro_check(const char *name, const char *value, char *err, size_t errlen)
{
	const char	*s;
	char		 slug[MACRO_NAME_MAX + 4];

	if (strlen(name) >= MACRO_NAME_MAX) {
		(void)snprintf(err, errlen, "macro name \"%s\" is longer than "
		    "%d bytes", name, MACRO_NAME_MAX - 1);
		return (-1);
	}
	if (name[0] == '\0') {
		(void)snprintf(err, errlen, "an empty macro name");
		return (-1);
	}
	for (s = name; *s != '\0'; s++) {
		if (!name_char(*s)) {
			(void)snprintf(err, errlen, "macro name \"%s\" has "
			    "characters other than letters, digits, _ and -",
			    name);
			return (-1);
		}
	}
	if (strcmp(name, "PID") == 0 || strcmp(name, "PORT") == 0 ||
	    strcmp(name, "MODEL_ID") == 0) {
		(void)snprintf(err, errlen, "macro name \"%s\" is reserved",
		    name);
		return (-1);
	}
	(void)snprintf(slug, sizeof(slug), "${%s}", name);
	if (strstr(value, slug) != NULL) {
		(void)snprintf(err, errlen, "macro \"%s\" uses itself", name);
		return (-1);
	}
	return (0);
}

/*
 * An integer as Go's strconv.ParseInt(s, 0, 64) reads it once YAML has
 * taken the underscores out (0x, 0o, 0b and a leading 0 for octal), in
 * decimal; NULL when s is not one.
 */
static char *
go_int(const char *in)
{
	char		 buf[80], *p = buf, *end, *out;
	const char	*s;
	int		 base = 10, neg = 0;
	uint64_t	 v;

	/* YAML tries a number only for a scalar that begins so. */
	if (!isdigit((unsigned char)in[0]) && in[0] != '+' && in[0] != '-')
		return (NULL);
	for (s = in; *s != '\0' && p < buf + sizeof(buf) - 1; s++)
		if (*s != '_')
			*p++ = *s;
	if (*s != '\0')
		return (NULL);
	*p = '\0';
	p = buf;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	} else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) {
		base = 8;
		p += 2;
	} else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
		base = 2;
		p += 2;
	} else if (p[0] == '0' && p[1] != '\0')
		base = 8;
	if (*p == '\0' || !isalnum((unsigned char)*p))
		return (NULL);
	errno = 0;
	v = strtoull(p, &end, base);
	if (*end != '\0' || errno == ERANGE)
		return (NULL);
	/* Go takes a negative one down to INT64_MIN, a positive to 2^64-1. */
	if (neg && v > (uint64_t)INT64_MAX + 1)
		return (NULL);
	if (asprintf(&out, "%s%" PRIu64, neg && v != 0 ? "-" : "", v) == -1)
		return (NULL);
	return (out);
}

/* YAML's float: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static int
yaml_float(const char *s)
{
	int	digits = 0;

	if (*s == '+' || *s == '-')
		s++;
	while (isdigit((unsigned char)*s)) {
		s++;
		digits++;
	}
	if (*s == '.') {
		s++;
		if (digits == 0 && !isdigit((unsigned char)*s))
			return (0);
		while (isdigit((unsigned char)*s)) {
			s++;
			digits++;
		}
	}
	if (digits == 0)
		return (0);
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!isdigit((unsigned char)*s))
			return (0);
		while (isdigit((unsigned char)*s))
			s++;
	}
	return (*s == '\0');
}

/*
 * A float as Go's %v writes a float64: the fewest digits that read back
 * to it, in %e form when its exponent is under -4 or 6 and over.
 */
static char *
go_float(const char *s)
{
	char	 tmp[64], digits[32], *e, *out;
	double	 d;
	int	 p, nd = 0, exp, i, neg;
	size_t	 o = 0;

	if (strcmp(s, ".inf") == 0 || strcmp(s, ".Inf") == 0 ||
	    strcmp(s, ".INF") == 0 || strcmp(s, "+.inf") == 0 ||
	    strcmp(s, "+.Inf") == 0 || strcmp(s, "+.INF") == 0)
		return (strdup("+Inf"));
	if (strcmp(s, "-.inf") == 0 || strcmp(s, "-.Inf") == 0 ||
	    strcmp(s, "-.INF") == 0)
		return (strdup("-Inf"));
	if (strcmp(s, ".nan") == 0 || strcmp(s, ".NaN") == 0 ||
	    strcmp(s, ".NAN") == 0)
		return (strdup("NaN"));
	if (!yaml_float(s))
		return (NULL);
	d = strtod(s, NULL);
	if (isinf(d))
		return (strdup(d > 0 ? "+Inf" : "-Inf"));
	neg = signbit(d) != 0;
	if (d == 0)
		return (strdup(neg ? "-0" : "0"));
	for (p = 1; p <= 17; p++) {
		(void)snprintf(tmp, sizeof(tmp), "%.*e", p - 1, d);
		if (strtod(tmp, NULL) == d)
			break;
	}
	/* tmp is [-]D[.DDD]e[+-]XX */
	for (e = tmp; *e != 'e'; e++)
		if (isdigit((unsigned char)*e))
			digits[nd++] = *e;
	digits[nd] = '\0';
	exp = atoi(e + 1);
	if ((out = malloc(nd + 32)) == NULL)
		return (NULL);
	if (neg)
		out[o++] = '-';
	if (exp < -4 || exp >= 6) {
		out[o++] = digits[0];
		if (nd > 1) {
			out[o++] = '.';
			for (i = 1; i < nd; i++)
				out[o++] = digits[i];
		}
		(void)snprintf(out + o, 16, "e%c%02d", exp < 0 ? '-' : '+',
		    exp < 0 ? -exp : exp);
		return (out);
	}
	if (exp < 0) {
		out[o++] = '0';
		out[o++] = '.';
		for (i = 0; i < -exp - 1; i++)
			out[o++] = '0';
		for (i = 0; i < nd; i++)
			out[o++] = digits[i];
	} else {
		for (i = 0; i <= exp; i++)
			out[o++] = i < nd ? digits[i] : '0';
		if (nd > exp + 1) {
			out[o++] = '.';
			for (i = exp + 1; i < nd; i++)
				out[o++] = digits[i];
		}
	}
	out[o] = '\0';
	return (out);
}

char *
macro_scalar(const char *s, int plain)
{
	char	*v;

	if (!plain)
		return (strdup(s));
	if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 ||
	    strcmp(s, "TRUE") == 0)
		return (strdup("true"));
	if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 ||
	    strcmp(s, "FALSE") == 0)
		return (strdup("false"));
	if ((v = go_int(s)) != NULL || (v = go_float(s)) != NULL)
		return (v);
	return (strdup(s));
}

int
macros_set(struct macros *ms, const char *name, const char *value, int line)
{
	struct macro	*m;
	size_t		 i, size;
	char		*v;

	if ((v = strdup(value)) == NULL)
		return (-1);
	for (i = 0; i < ms->n; i++) {
		if (strcmp(ms->m[i].name, name) == 0) {
			free(ms->m[i].value);
			ms->m[i].value = v;
			ms->m[i].line = line;
			return (0);
		}
	}
	if (ms->n >= MACROS_MAX || strlen(name) >= MACRO_NAME_MAX) {
		free(v);
		return (-1);
	}
	if (ms->n == ms->size) {
		size = ms->size == 0 ? 16 : ms->size * 2;
		if ((m = reallocarray(ms->m, size, sizeof(*m))) == NULL) {
			free(v);
			return (-1);
		}
		ms->m = m;
		ms->size = size;
	}
	m = &ms->m[ms->n++];
	(void)strlcpy(m->name, name, sizeof(m->name));
	m->value = v;
	m->line = line;
	return (0);
}

void
macros_free(struct macros *ms)
{
	size_t	i;

	for (i = 0; i < ms->n; i++)
		free(ms->m[i].value);
	free(ms->m);
	memset(ms, 0, sizeof(*ms));
}

/* s with every slug replaced by val; NULL and why when it is too long. */
static char *
replace_all(const char *s, const char *slug, const char *val, char *err,
    size_t errlen)
{
	const char	*p, *q;
	char		*out;
	size_t		 slen = strlen(slug), vlen = strlen(val), n = 0, len;

	for (p = s; (q = strstr(p, slug)) != NULL; p = q + slen)
		n++;
	len = strlen(s);
	if (n > 0 && vlen > slen &&
	    (vlen - slen > MACRO_EXPAND_MAX / n ||
	    len + n * (vlen - slen) > MACRO_EXPAND_MAX)) {
		(void)snprintf(err, errlen, "macros make a value of more than "
		    "%d bytes", MACRO_EXPAND_MAX);
		return (NULL);
	}
	if ((out = malloc(len + (vlen > slen ? n * (vlen - slen) : 0) + 1)) ==
	    NULL) {
		(void)snprintf(err, errlen, "out of memory");
		return (NULL);
	}
	len = 0;
	for (p = s; (q = strstr(p, slug)) != NULL; p = q + slen) {
		memcpy(out + len, p, q - p);
		len += q - p;
		memcpy(out + len, val, vlen);
		len += vlen;
	}
	(void)strlcpy(out + len, p, strlen(p) + 1);
	return (out);
}

char *
macro_env(const char *s, char *err, size_t errlen)
{
	const char	*p, *q, *v;
	char		*out, *next, name[256];
	size_t		 off = 0, len, vlen, at;

	if ((out = strdup(s)) == NULL) {
		(void)snprintf(err, errlen, "out of memory");
		return (NULL);
	}
	/* One use at a time; a value is never read again for macros. */
	while ((p = strstr(out + off, "${env.")) != NULL) {
		at = p - out;
		for (q = p + 6; *q == '_' || isalnum((unsigned char)*q); q++)
			;
		len = q - (p + 6);
		if (*q != '}' || len == 0 || isdigit((unsigned char)p[6])) {
			/* Not one of llama-swap's: macro_left reports it. */
			off = at + 6;
			continue;
		}
		if (len >= sizeof(name)) {
			(void)snprintf(err, errlen, "an environment variable "
			    "name of more than %zu bytes", sizeof(name) - 1);
			free(out);
			return (NULL);
		}
		memcpy(name, p + 6, len);
		name[len] = '\0';
		if ((v = getenv(name)) == NULL) {
			(void)snprintf(err, errlen, "environment variable "
			    "\"%s\" is not set", name);
			free(out);
			return (NULL);
		}
		vlen = strlen(v);
		for (p = v; *p != '\0'; p++) {
			if ((unsigned char)*p < 0x20 || *p == 0x7f) {
				(void)snprintf(err, errlen, "environment "
				    "variable \"%s\" has a line's end or a "
				    "control character", name);
				free(out);
				return (NULL);
			}
		}
		if (strlen(out) - (len + 7) + vlen > MACRO_EXPAND_MAX) {
			(void)snprintf(err, errlen, "macros make a value of "
			    "more than %d bytes", MACRO_EXPAND_MAX);
			free(out);
			return (NULL);
		}
		if (asprintf(&next, "%.*s%s%s", (int)at, out, v,
		    out + at + len + 7) == -1) {
			(void)snprintf(err, errlen, "out of memory");
			free(out);
			return (NULL);
		}
		free(out);
		out = next;
		off = at + vlen;
	}
	return (out);
}

char *
macro_expand(const struct macros *ms, const char *s, char *err,
    size_t errlen)
{
	char	*out, *next, slug[MACRO_NAME_MAX + 4];
	size_t	 i;

	if ((out = strdup(s)) == NULL) {
		(void)snprintf(err, errlen, "out of memory");
		return (NULL);
	}
	for (i = ms->n; i-- > 0; ) {
		(void)snprintf(slug, sizeof(slug), "${%s}", ms->m[i].name);
		if (strstr(out, slug) == NULL)
			continue;
		next = replace_all(out, slug, ms->m[i].value, err, errlen);
		free(out);
		if ((out = next) == NULL)
			return (NULL);
	}
	return (out);
}

const char *
macro_left(const char *s, char *buf, size_t len)
{
	const char	*p, *q;

	for (p = s; (p = strstr(p, "${")) != NULL; p += 2) {
		for (q = p + 2; name_char(*q) || *q == '.'; q++)
			;
		if (*q != '}' || q == p + 2)
			continue;
		(void)snprintf(buf, len, "%.*s", (int)(q - (p + 2)), p + 2);
		return (p);
	}
	return (NULL);
}
