/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl's output: the status table, its JSON form, and the small
 * formatters they use.  Nothing here touches a socket or the clock; the
 * caller passes the time and the width, so the output can be tested.
 *
 * Calls: common/proto.c, common/status_json.c.
 */
#include <sys/types.h>

#include <errno.h>
#include <json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "status_json.h"

enum {
	COL_MODEL,
	COL_STATE,
	COL_LAZY,
	COL_REQS,
	COL_QUEUED,
	COL_USED,
	COL_IDLE,
	COL_PID,
	COL_PORT,
	COL_NEED,
	COL_NCOLS
};

#define CELL_MAX	AGENCY_NAME_MAX
#define COL_GAP		2

static const char	*col_names[COL_NCOLS] = {
	"MODEL", "STATE", "LAZY", "REQS", "QUEUED", "LAST USED", "IDLE STOP",
	"PID", "PORT", "NEED"
};

/* Whether a status record from agencyd can be shown as it is. */
int
status_valid(const struct proto_status *st)
{
	if (st->model[0] == '\0')
		return (0);
	if (proto_state_name(st->state) == NULL ||
	    proto_wait_name(st->waiting) == NULL)
		return (0);
	if (st->pid < 0 || st->need < 0 ||
	    proto_need_from_name(st->need_from) == NULL)
		return (0);
	if (st->idle_timeout < 0 || st->idle_stop_at < -1 || st->fairness < 0)
		return (0);
	return (1);
}

/* Append a copy; -1 with EBADMSG for a bad record, ENOMEM, or E2BIG. */
int
status_add(struct ctl_status *s, const struct proto_status *st)
{
	struct proto_status	*p;
	size_t			 size;

	if (!status_valid(st)) {
		errno = EBADMSG;
		return (-1);
	}
	if (s->n >= CTL_MODELS_MAX) {
		errno = E2BIG;
		return (-1);
	}
	if (s->n == s->size) {
		size = s->size == 0 ? 16 : s->size * 2;
		if ((p = reallocarray(s->models, size, sizeof(*p))) == NULL)
			return (-1);
		s->models = p;
		s->size = size;
	}
	s->models[s->n++] = *st;
	return (0);
}

/*
 * Append an alias of the last model added; -1 with EBADMSG when it
 * names another model or is empty, ENOMEM, or E2BIG.
 */
int
status_add_alias(struct ctl_status *s, const struct proto_alias *al)
{
	struct proto_alias	*p;
	size_t			 size;

	if (al->alias[0] == '\0' || s->n == 0 ||
	    strcmp(al->model, s->models[s->n - 1].model) != 0) {
		errno = EBADMSG;
		return (-1);
	}
	if (s->naliases >= CTL_ALIASES_MAX) {
		errno = E2BIG;
		return (-1);
	}
	if (s->naliases == s->asize) {
		size = s->asize == 0 ? 16 : s->asize * 2;
		if ((p = reallocarray(s->aliases, size, sizeof(*p))) == NULL)
			return (-1);
		s->aliases = p;
		s->asize = size;
	}
	s->aliases[s->naliases++] = *al;
	return (0);
}

/* The memory figures, once; -1 with EBADMSG for a second or bad one. */
int
status_set_memory(struct ctl_status *s, const struct proto_memory *pm)
{
	if (s->has_memory || pm->in_use < 0 || pm->budget < 0 ||
	    pm->available < -1 || pm->total < -1 || pm->reserve < -1) {
		errno = EBADMSG;
		return (-1);
	}
	s->memory = *pm;
	s->has_memory = 1;
	return (0);
}

/* The same for a key's count; the name must be a key's name. */
int
status_add_key(struct ctl_status *s, const struct proto_key_status *k)
{
	struct proto_key_status	*p;
	size_t			 size;

	if (k->name[0] == '\0') {
		errno = EBADMSG;
		return (-1);
	}
	if (s->nkeys >= CTL_MODELS_MAX) {
		errno = E2BIG;
		return (-1);
	}
	if (s->nkeys == s->keysize) {
		size = s->keysize == 0 ? 16 : s->keysize * 2;
		if ((p = reallocarray(s->keys, size, sizeof(*p))) == NULL)
			return (-1);
		s->keys = p;
		s->keysize = size;
	}
	s->keys[s->nkeys++] = *k;
	return (0);
}

void
status_clear(struct ctl_status *s)
{
	free(s->models);
	free(s->aliases);
	s->models = NULL;
	s->aliases = NULL;
	s->n = s->size = 0;
	s->naliases = s->asize = 0;
	s->has_memory = 0;
	free(s->keys);
	s->keys = NULL;
	s->nkeys = s->keysize = 0;
}

/* Bytes in binary units: "512B", "1.5K", "6.0G", "40G"; "-" for none. */
void
fmt_size(char *buf, size_t len, int64_t bytes)
{
	static const char	 units[] = "KMGTPE";
	double			 v;
	size_t			 i;

	if (bytes <= 0) {
		(void)snprintf(buf, len, "-");
		return;
	}
	if (bytes < 1024) {
		(void)snprintf(buf, len, "%lldB", (long long)bytes);
		return;
	}
	v = (double)bytes / 1024.0;
	/* 1023.6K reads better as 1.0M than as 1024K. */
	for (i = 0; v >= 1023.5 && units[i + 1] != '\0'; i++)
		v /= 1024.0;
	if (v < 9.95)
		(void)snprintf(buf, len, "%.1f%c", v, units[i]);
	else
		(void)snprintf(buf, len, "%.0f%c", v, units[i]);
}

/* As fmt_size, but "0" for none: an amount, not a field left empty. */
static void
fmt_amount(char *buf, size_t len, int64_t bytes)
{
	if (bytes > 0)
		fmt_size(buf, len, bytes);
	else
		(void)snprintf(buf, len, "0");
}

/* How long ago a time in ms since the epoch was: "3m ago"; "never". */
void
fmt_ago(char *buf, size_t len, int64_t now, int64_t then)
{
	int64_t	s;

	if (then < 0) {
		(void)snprintf(buf, len, "never");
		return;
	}
	s = now > then ? (now - then) / 1000 : 0;
	if (s < 60)
		(void)snprintf(buf, len, "%llds ago", (long long)s);
	else if (s < 60 * 60)
		(void)snprintf(buf, len, "%lldm ago", (long long)(s / 60));
	else if (s < 24 * 60 * 60)
		(void)snprintf(buf, len, "%lldh ago", (long long)(s / 3600));
	else
		(void)snprintf(buf, len, "%lldd ago", (long long)(s / 86400));
}

/* A duration in ms, its two largest units: "45s", "15m", "1m30s", "2h5m",
 * "3d"; "0s" for none. */
void
fmt_span(char *buf, size_t len, int64_t ms)
{
	static const struct {
		int64_t		 s;
		char		 unit;
	} units[] = { { 86400, 'd' }, { 3600, 'h' }, { 60, 'm' }, { 1, 's' } };
	int64_t		 sec = ms > 0 ? ms / 1000 : 0, rest;
	size_t		 i;

	for (i = 0; i + 1 < sizeof(units) / sizeof(units[0]); i++)
		if (sec >= units[i].s)
			break;
	rest = (sec % units[i].s) / (i + 1 < sizeof(units) /
	    sizeof(units[0]) ? units[i + 1].s : 1);
	if (rest > 0 && units[i].s > 1)
		(void)snprintf(buf, len, "%lld%c%lld%c",
		    (long long)(sec / units[i].s), units[i].unit,
		    (long long)rest, units[i + 1].unit);
	else
		(void)snprintf(buf, len, "%lld%c",
		    (long long)(sec / units[i].s), units[i].unit);
}

/* When the idle timeout stops the model: "in 14m30s", "now", or "-"
 * when it is not counting (busy, not ready, not lazy, none set). */
void
fmt_idle_stop(char *buf, size_t len, int64_t now,
    const struct proto_status *st)
{
	char	span[32];

	if (st->idle_stop_at < 0) {
		(void)snprintf(buf, len, "-");
		return;
	}
	if (st->idle_stop_at <= now) {
		(void)snprintf(buf, len, "now");
		return;
	}
	fmt_span(span, sizeof(span), st->idle_stop_at - now);
	(void)snprintf(buf, len, "in %s", span);
}

/*
 * "memory: 13G in use, budget 24G (11G left); 30G available, 2.0G
 * reserved": the need of the loaded models, the budget when there is
 * one, and what the fit test reads.
 */
void
fmt_memory(char *buf, size_t len, const struct proto_memory *pm)
{
	char	used[32], budget[32], left[32], avail[32], reserve[32];
	char	part[128];

	fmt_amount(used, sizeof(used), pm->in_use);
	if (pm->budget > 0) {
		fmt_size(budget, sizeof(budget), pm->budget);
		if (pm->in_use <= pm->budget) {
			fmt_amount(left, sizeof(left),
			    pm->budget - pm->in_use);
			(void)snprintf(part, sizeof(part), "budget %s (%s "
			    "left)", budget, left);
		} else {
			fmt_amount(left, sizeof(left),
			    pm->in_use - pm->budget);
			(void)snprintf(part, sizeof(part), "budget %s (%s "
			    "over)", budget, left);
		}
	} else
		(void)snprintf(part, sizeof(part), "no budget");
	if (pm->available < 0) {
		(void)snprintf(buf, len, "memory: %s in use, %s; available "
		    "memory unknown", used, part);
		return;
	}
	fmt_amount(avail, sizeof(avail), pm->available);
	fmt_amount(reserve, sizeof(reserve), pm->reserve);
	(void)snprintf(buf, len, "memory: %s in use, %s; %s available, %s "
	    "reserved", used, part, avail, reserve);
}

/* A copy safe to put on a terminal: control characters become '?'. */
void
show_clean(char *dst, const char *src, size_t len)
{
	size_t	i;

	if (len == 0)
		return;
	for (i = 0; i < len - 1 && src[i] != '\0'; i++) {
		if ((unsigned char)src[i] < 0x20 && src[i] != '\t')
			dst[i] = '?';
		else if ((unsigned char)src[i] == 0x7f)
			dst[i] = '?';
		else
			dst[i] = src[i];
	}
	dst[i] = '\0';
}

/* One line of text from agencyd or a model process, made safe. */
void
show_text(FILE *fp, const char *s)
{
	for (; *s != '\0'; s++) {
		if (((unsigned char)*s < 0x20 && *s != '\t') ||
		    (unsigned char)*s == 0x7f)
			putc('?', fp);
		else
			putc(*s, fp);
	}
	putc('\n', fp);
}

static void
row_cells(const struct proto_status *st, int64_t now,
    char cells[COL_NCOLS][CELL_MAX])
{
	show_clean(cells[COL_MODEL], st->model, CELL_MAX);
	(void)snprintf(cells[COL_STATE], CELL_MAX, "%s",
	    proto_state_name(st->state));
	(void)snprintf(cells[COL_LAZY], CELL_MAX, "%s", st->lazy ? "yes" :
	    "no");
	if (st->max_requests > 0)
		(void)snprintf(cells[COL_REQS], CELL_MAX, "%u/%u",
		    st->in_progress, st->max_requests);
	else
		(void)snprintf(cells[COL_REQS], CELL_MAX, "%u",
		    st->in_progress);
	/* "2 memory 12s": how many wait, for what, the oldest how long. */
	if (st->queued == 0)
		(void)snprintf(cells[COL_QUEUED], CELL_MAX, "-");
	else
		(void)snprintf(cells[COL_QUEUED], CELL_MAX, "%u %s%s%llds",
		    st->queued, proto_wait_name(st->waiting),
		    st->waiting != WAIT_NONE ? " " : "",
		    (long long)(st->oldest_wait > 0 ?
		    st->oldest_wait / 1000 : 0));
	fmt_ago(cells[COL_USED], CELL_MAX, now, st->last_used);
	fmt_idle_stop(cells[COL_IDLE], CELL_MAX, now, st);
	if (st->pid > 0)
		(void)snprintf(cells[COL_PID], CELL_MAX, "%d", st->pid);
	else
		(void)snprintf(cells[COL_PID], CELL_MAX, "-");
	if (st->port > 0)
		(void)snprintf(cells[COL_PORT], CELL_MAX, "%u", st->port);
	else
		(void)snprintf(cells[COL_PORT], CELL_MAX, "-");
	fmt_size(cells[COL_NEED], CELL_MAX, st->need);
}

/*
 * Text under its head, whole ("    error: " and a model's error, say):
 * wrapped at spaces to width columns (a word longer than a line is
 * split), each further line indented as far as the head.
 */
static void
show_wrapped(FILE *fp, const char *head, const char *err, size_t width)
{
	size_t	 indent = strlen(head), room, n, brk;

	room = width > indent + CTL_ERROR_MIN ? width - indent :
	    CTL_ERROR_MIN;
	fputs(head, fp);
	for (;;) {
		while (*err == ' ')
			err++;
		n = strlen(err);
		if (n <= room) {
			fprintf(fp, "%s\n", err);
			return;
		}
		/* The last space that leaves a line of at most room. */
		for (brk = room; brk > 0 && err[brk] != ' '; brk--)
			;
		if (brk == 0) {
			/* One long word: cut it, on a character. */
			brk = room;
			while (brk > 1 && ((unsigned char)err[brk] & 0xc0) ==
			    0x80)
				brk--;
		}
		fprintf(fp, "%.*s\n%*s", (int)brk, err, (int)indent, "");
		err += brk;
	}
}

/* The aliases of a model, "a, b", made safe; "" when it has none. */
static void
model_aliases(const struct ctl_status *s, const char *model, char *buf,
    size_t len)
{
	char	 one[AGENCY_NAME_MAX];
	size_t	 i;

	buf[0] = '\0';
	for (i = 0; i < s->naliases; i++) {
		if (strcmp(s->aliases[i].model, model) != 0)
			continue;
		show_clean(one, s->aliases[i].alias, sizeof(one));
		if (buf[0] != '\0')
			(void)strlcat(buf, ", ", len);
		(void)strlcat(buf, one, len);
	}
}

/*
 * The table, one model a line, in agencyd's order; a model's aliases
 * and its error, if it has them, follow on lines of their own, whole
 * (see show_wrapped); the memory figures end it.
 */
void
show_status(FILE *fp, const struct ctl_status *s, int64_t now, size_t width)
{
	char	 cells[COL_NCOLS][CELL_MAX];
	char	 err[PROTO_MSG_MAX], line[PROTO_MSG_MAX];
	size_t	 w[COL_NCOLS], i, c;

	for (c = 0; c < COL_NCOLS; c++)
		w[c] = strlen(col_names[c]);
	for (i = 0; i < s->n; i++) {
		row_cells(&s->models[i], now, cells);
		for (c = 0; c < COL_NCOLS; c++)
			if (strlen(cells[c]) > w[c])
				w[c] = strlen(cells[c]);
	}

	for (c = 0; c + 1 < COL_NCOLS; c++)
		fprintf(fp, "%-*s", (int)(w[c] + COL_GAP), col_names[c]);
	fprintf(fp, "%s\n", col_names[c]);

	for (i = 0; i < s->n; i++) {
		row_cells(&s->models[i], now, cells);
		for (c = 0; c + 1 < COL_NCOLS; c++)
			fprintf(fp, "%-*s", (int)(w[c] + COL_GAP), cells[c]);
		fprintf(fp, "%s\n", cells[c]);
		model_aliases(s, s->models[i].model, line, sizeof(line));
		if (line[0] != '\0')
			show_wrapped(fp, "    aliases: ", line, width);
		show_clean(err, s->models[i].error, sizeof(err));
		if (err[0] != '\0')
			show_wrapped(fp, "    error: ", err, width);
	}
	if (s->has_memory) {
		fmt_memory(line, sizeof(line), &s->memory);
		show_wrapped(fp, "", line, width);
	}
	if (s->nkeys == 0)
		return;
	/* Key names are plain (agency.conf(5)): no cleaning needed. */
	c = strlen("KEY");
	for (i = 0; i < s->nkeys; i++)
		if (strlen(s->keys[i].name) > c)
			c = strlen(s->keys[i].name);
	fprintf(fp, "\n%-*sREQUESTS\n", (int)(c + COL_GAP), "KEY");
	for (i = 0; i < s->nkeys; i++)
		fprintf(fp, "%-*s%llu\n", (int)(c + COL_GAP), s->keys[i].name,
		    (unsigned long long)s->keys[i].requests);
}

/*
 * One model, a field a line ("status MODEL"): what the table has, and
 * where its need came from, its counts and its idle timeout.
 */
void
show_model(FILE *fp, const struct ctl_status *s, int64_t now, size_t width)
{
	const struct proto_status	*st;
	char				 a[PROTO_MSG_MAX], b[64], c[64];
	char				 line[PROTO_MSG_MAX];
	size_t				 i;

	for (i = 0; i < s->n; i++) {
		st = &s->models[i];
		if (i > 0)
			fputc('\n', fp);
		show_clean(a, st->model, sizeof(a));
		fprintf(fp, "model:      %s\n", a);
		model_aliases(s, st->model, a, sizeof(a));
		if (a[0] != '\0')
			show_wrapped(fp, "aliases:    ", a, width);
		show_clean(a, st->runtime, sizeof(a));
		fprintf(fp, "runtime:    %s\n", a);
		fprintf(fp, "state:      %s\n", proto_state_name(st->state));
		if (!st->lazy)
			fprintf(fp, "lazy:       no: loaded at start, never "
			    "stopped to make room\n");
		else if (st->idle_timeout <= 0)
			fprintf(fp, "lazy:       yes, no idle timeout\n");
		else {
			fmt_span(b, sizeof(b), st->idle_timeout);
			fmt_idle_stop(c, sizeof(c), now, st);
			if (st->idle_stop_at >= 0)
				fprintf(fp, "lazy:       yes, idle timeout %s: "
				    "stops %s unless used\n", b, c);
			else
				fprintf(fp, "lazy:       yes, idle timeout %s\n",
				    b);
		}
		if (st->fairness > 0) {
			fmt_span(b, sizeof(b), st->fairness);
			fprintf(fp, "fairness:   window %s: keeps memory a "
			    "waiting load needs at most so long\n", b);
		}
		if (st->max_requests > 0)
			fprintf(fp, "requests:   %u in progress (at most %u), "
			    "%llu in all\n", st->in_progress, st->max_requests,
			    (unsigned long long)st->requests);
		else
			fprintf(fp, "requests:   %u in progress, %llu in all\n",
			    st->in_progress, (unsigned long long)st->requests);
		if (st->queued > 0) {
			fmt_span(b, sizeof(b), st->oldest_wait);
			fprintf(fp, "queued:     %u%s%s, the oldest for %s\n",
			    st->queued, st->waiting != WAIT_NONE ?
			    " waiting for " : "", st->waiting != WAIT_NONE ?
			    proto_wait_name(st->waiting) : "", b);
		}
		fmt_ago(a, sizeof(a), now, st->last_used);
		fprintf(fp, "last used:  %s\n", a);
		fmt_ago(a, sizeof(a), now, st->loaded_at);
		fprintf(fp, "loaded:     %s (loads %llu, failed %llu, "
		    "restarts %llu, evictions %llu)\n", a,
		    (unsigned long long)st->loads,
		    (unsigned long long)st->load_failures,
		    (unsigned long long)st->restarts,
		    (unsigned long long)st->evictions);
		if (st->pid > 0)
			fprintf(fp, "process:    pid %d, port %u\n", st->pid,
			    st->port);
		fmt_size(a, sizeof(a), st->need);
		fprintf(fp, "need:       %s (%s)\n", a,
		    proto_need_from_name(st->need_from));
		show_clean(a, st->error, sizeof(a));
		if (a[0] != '\0')
			show_wrapped(fp, "error:      ", a, width);
	}
	if (s->has_memory) {
		fmt_memory(line, sizeof(line), &s->memory);
		show_wrapped(fp, "", line, width);
	}
}

/*
 * {"models":[...]}, each the record of agency-proxy's GET
 * /v1/agency/status (status_json), and the memory.
 */
int
show_status_json(FILE *fp, const struct ctl_status *s)
{
	const struct proto_status	*st;
	json_object			*top, *arr, *o, *al;
	const char			*out;
	size_t				 i, k;
	int				 rv = 0;

	if ((top = json_object_new_object()) == NULL ||
	    (arr = json_object_new_array()) == NULL) {
		json_object_put(top);
		return (-1);
	}
	json_object_object_add(top, "models", arr);
	for (i = 0; i < s->n; i++) {
		st = &s->models[i];
		if ((al = json_object_new_array()) == NULL) {
			json_object_put(top);
			return (-1);
		}
		for (k = 0; k < s->naliases; k++)
			if (strcmp(s->aliases[k].model, st->model) == 0)
				json_object_array_add(al,
				    json_object_new_string(
				    s->aliases[k].alias));
		if ((o = status_json(st, al)) == NULL) {
			json_object_put(top);
			return (-1);
		}
		if (json_object_array_add(arr, o) == -1) {
			json_object_put(o);
			json_object_put(top);
			return (-1);
		}
	}
	if (s->has_memory) {
		if ((o = status_memory_json(&s->memory)) == NULL) {
			json_object_put(top);
			return (-1);
		}
		json_object_object_add(top, "memory", o);
	}
	/* With keys: "keys": [{"key", "requests"}], requests since the
	 * key was defined. */
	if (s->nkeys > 0) {
		if ((arr = json_object_new_array()) == NULL) {
			json_object_put(top);
			return (-1);
		}
		json_object_object_add(top, "keys", arr);
		for (i = 0; i < s->nkeys; i++) {
			if ((o = json_object_new_object()) == NULL) {
				json_object_put(top);
				return (-1);
			}
			json_object_object_add(o, "key",
			    json_object_new_string(s->keys[i].name));
			json_object_object_add(o, "requests", json_object_new_int64(
			    (int64_t)s->keys[i].requests));
			if (json_object_array_add(arr, o) == -1) {
				json_object_put(o);
				json_object_put(top);
				return (-1);
			}
		}
	}
	out = json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY |
	    JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (out == NULL || fprintf(fp, "%s\n", out) < 0)
		rv = -1;
	json_object_put(top);
	return (rv);
}
