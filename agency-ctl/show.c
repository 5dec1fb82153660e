/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl's output: the status table, its JSON form, and the small
 * formatters they use.  Nothing here touches a socket or the clock; the
 * caller passes the time and the width, so the output can be tested.
 */
#include <sys/types.h>

#include <errno.h>
#include <json.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

enum {
	COL_MODEL,
	COL_STATE,
	COL_REQS,
	COL_QUEUED,
	COL_USED,
	COL_PID,
	COL_PORT,
	COL_NEED,
	COL_FROM,
	COL_NCOLS
};

#define CELL_MAX	AGENCY_NAME_MAX
#define COL_GAP		2

static const char	*col_names[COL_NCOLS] = {
	"MODEL", "STATE", "REQS", "QUEUED", "LAST USED", "PID", "PORT", "NEED",
	"FROM"
};

/* Whether a status record from agencyd can be shown as it is. */
int
status_valid(const struct proto_status *st)
{
	if (!PROTO_STROK(st->model) || st->model[0] == '\0' ||
	    !PROTO_STROK(st->runtime) || !PROTO_STROK(st->error))
		return (0);
	if (proto_state_name(st->state) == NULL ||
	    proto_wait_name(st->waiting) == NULL)
		return (0);
	if (st->pid < 0 || st->need < 0 ||
	    proto_need_from_name(st->need_from) == NULL)
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

void
status_clear(struct ctl_status *s)
{
	free(s->models);
	s->models = NULL;
	s->n = s->size = 0;
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
	if (st->pid > 0)
		(void)snprintf(cells[COL_PID], CELL_MAX, "%d", st->pid);
	else
		(void)snprintf(cells[COL_PID], CELL_MAX, "-");
	if (st->port > 0)
		(void)snprintf(cells[COL_PORT], CELL_MAX, "%u", st->port);
	else
		(void)snprintf(cells[COL_PORT], CELL_MAX, "-");
	fmt_size(cells[COL_NEED], CELL_MAX, st->need);
	(void)snprintf(cells[COL_FROM], CELL_MAX, "%s",
	    proto_need_from_name(st->need_from));
}

/*
 * An error under its model's row, whole: "    error: " and the text,
 * wrapped at spaces to width columns (a word longer than a line is
 * split), each further line indented as far.
 */
static void
show_error(FILE *fp, const char *err, size_t width)
{
	static const char	 head[] = "    error: ";
	size_t			 indent = sizeof(head) - 1, room, n, brk;

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

/*
 * The table, one model a line, in agencyd's order; a model's error, if
 * it has one, follows on lines of its own, whole (see show_error).
 */
void
show_status(FILE *fp, const struct ctl_status *s, int64_t now, size_t width)
{
	char	 cells[COL_NCOLS][CELL_MAX];
	char	 err[PROTO_MSG_MAX];
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
		show_clean(err, s->models[i].error, sizeof(err));
		if (err[0] != '\0')
			show_error(fp, err, width);
	}
}

static json_object *
ms_or_null(int64_t ms)
{
	return (ms < 0 ? NULL : json_object_new_int64(ms));
}

/*
 * {"models":[...]} with the fields and the order of agency-proxy's
 * GET /v1/agency/status, so one parser reads both.
 */
int
show_status_json(FILE *fp, const struct ctl_status *s)
{
	const struct proto_status	*st;
	json_object			*top, *arr, *o;
	const char			*out;
	size_t				 i;
	int				 rv = 0;

	if ((top = json_object_new_object()) == NULL ||
	    (arr = json_object_new_array()) == NULL) {
		json_object_put(top);
		return (-1);
	}
	json_object_object_add(top, "models", arr);
	for (i = 0; i < s->n; i++) {
		st = &s->models[i];
		if ((o = json_object_new_object()) == NULL) {
			json_object_put(top);
			return (-1);
		}
		json_object_object_add(o, "model",
		    json_object_new_string(st->model));
		json_object_object_add(o, "runtime",
		    json_object_new_string(st->runtime));
		json_object_object_add(o, "state",
		    json_object_new_string(proto_state_name(st->state)));
		json_object_object_add(o, "error", st->error[0] == '\0' ?
		    NULL : json_object_new_string(st->error));
		json_object_object_add(o, "requestsInProgress",
		    json_object_new_int64(st->in_progress));
		json_object_object_add(o, "lastUsedAt",
		    ms_or_null(st->last_used));
		json_object_object_add(o, "lazy",
		    json_object_new_boolean(st->lazy != 0));
		json_object_object_add(o, "pid", st->pid > 0 ?
		    json_object_new_int64(st->pid) : NULL);
		json_object_object_add(o, "port", st->port > 0 ?
		    json_object_new_int64(st->port) : NULL);
		json_object_object_add(o, "need",
		    json_object_new_int64(st->need));
		json_object_object_add(o, "needFrom", json_object_new_string(
		    proto_need_from_name(st->need_from)));
		json_object_object_add(o, "requests",
		    json_object_new_int64((int64_t)st->requests));
		json_object_object_add(o, "loads",
		    json_object_new_int64((int64_t)st->loads));
		json_object_object_add(o, "loadFailures",
		    json_object_new_int64((int64_t)st->load_failures));
		json_object_object_add(o, "evictions",
		    json_object_new_int64((int64_t)st->evictions));
		json_object_object_add(o, "restarts",
		    json_object_new_int64((int64_t)st->restarts));
		json_object_object_add(o, "loadedAt",
		    ms_or_null(st->loaded_at));
		json_object_object_add(o, "queued",
		    json_object_new_int64(st->queued));
		json_object_object_add(o, "oldestWaitMs",
		    ms_or_null(st->oldest_wait));
		json_object_object_add(o, "waitingFor",
		    st->waiting == WAIT_NONE ? NULL :
		    json_object_new_string(proto_wait_name(st->waiting)));
		json_object_object_add(o, "maxRequests",
		    st->max_requests > 0 ?
		    json_object_new_int64(st->max_requests) : NULL);
		if (json_object_array_add(arr, o) == -1) {
			json_object_put(o);
			json_object_put(top);
			return (-1);
		}
	}
	out = json_object_to_json_string_ext(top, JSON_C_TO_STRING_PRETTY |
	    JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (out == NULL || fprintf(fp, "%s\n", out) < 0)
		rv = -1;
	json_object_put(top);
	return (rv);
}
