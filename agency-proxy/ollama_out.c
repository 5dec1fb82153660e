/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * What the Ollama routes write with (ollama.h): bytes and numbers onto a
 * buffer, C strings as JSON strings, times as Go writes a time.Time in
 * JSON (RFC 3339 in UTC, nanoseconds with their trailing zeros left
 * off), and Ollama's error shape, {"error":"..."}.
 *
 * Calls: buf.c.
 */
#include <sys/types.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "proxy.h"
#include "ollama.h"

#define OUT_FIRST	256	/* a buffer's first size */

int
ollama_put(struct buf *b, const char *p, size_t n)
{
	return (buf_add(b, p, n, OUT_FIRST));
}

int
ollama_puts(struct buf *b, const char *s)
{
	return (buf_add(b, s, strlen(s), OUT_FIRST));
}

int
ollama_put_int(struct buf *b, int64_t v)
{
	char	 t[24];
	int	 n;

	n = snprintf(t, sizeof(t), "%" PRId64, v);
	return (buf_add(b, t, (size_t)n, OUT_FIRST));
}

/* s as a JSON string, quotes and all (json-c's escapes, "/" kept). */
int
ollama_put_string(struct buf *b, const char *s)
{
	json_object	*o;
	const char	*t;
	int		 r;

	if ((o = json_object_new_string(s)) == NULL)
		return (-1);
	t = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	r = t == NULL ? -1 : ollama_puts(b, t);
	json_object_put(o);
	return (r);
}

/*
 * "YYYY-MM-DDTHH:MM:SS" of a time in seconds since the epoch (UTC),
 * into buf (at least 32 bytes); its length.
 */
size_t
ollama_stamp(char *buf, size_t size, int64_t sec)
{
	struct tm	 tm;
	time_t		 s = (time_t)sec;

	if (gmtime_r(&s, &tm) == NULL ||
	    strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		(void)strlcpy(buf, "1970-01-01T00:00:00", size);
	return (strlen(buf));
}

/* A time as Go's time.Time is in JSON, "2024-06-04T14:38:31.83753Z":
 * sec since the epoch and ns (0 to 999999999) past it. */
int
ollama_put_clock(struct buf *b, int64_t sec, int64_t ns)
{
	char	 t[64];
	size_t	 n;
	int	 k;

	t[0] = '"';
	n = 1 + ollama_stamp(t + 1, sizeof(t) - 16, sec);
	if (ns != 0) {
		k = snprintf(t + n, sizeof(t) - n, ".%09lld", (long long)ns);
		n += (size_t)k;
		while (t[n - 1] == '0')
			n--;
	}
	t[n++] = 'Z';
	t[n++] = '"';
	return (ollama_put(b, t, n));
}

/* The same of a time in ns since the epoch. */
int
ollama_put_time(struct buf *b, int64_t ns)
{
	int64_t	 sec = ns / 1000000000, frac = ns % 1000000000;

	if (frac < 0) {
		frac += 1000000000;
		sec--;
	}
	return (ollama_put_clock(b, sec, frac));
}

/* Ollama's error shape, {"error":"msg"} (no line break: a line of a
 * stream adds its own). */
int
ollama_error(struct buf *b, const char *msg)
{
	if (ollama_puts(b, "{\"error\":") == -1 ||
	    ollama_put_string(b, msg) == -1 || ollama_puts(b, "}") == -1)
		return (-1);
	return (0);
}
