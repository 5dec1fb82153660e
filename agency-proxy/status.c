/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The front door's answers that wait on the parent: the admin status
 * and /metrics, made of the parent's status of each model, and the
 * admin cancel, which agencyd sends (it restarts a model that goes on
 * generating after a close, and only for a cancel it sent) and then
 * tells us of.  Each asks once, answers when the parent has said all,
 * and is logged then; a client that leaves first is logged as 499.
 *
 * An admin key limited to some models sees only those (access.c's
 * access_view, taken when the request came): in the status, in the
 * metrics, and as the model an eviction was for.
 *
 * Calls: events.c, answer.c, metrics.c, conn.c, parent.c, access.c,
 * state.c, common/config.c, common/log.c, common/status_json.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include <json-c/json.h>

#include "log.h"
#include "proxy.h"
#include "status_json.h"

enum sreq_kind {
	SREQ_STATUS,
	SREQ_METRICS,
	SREQ_CANCEL,
};

struct sreq {
	TAILQ_ENTRY(sreq)	 entry;
	uint64_t		 reqid;
	enum sreq_kind		 kind;
	struct hreq		*r;		/* NULL: the client left */
	const char		*method;
	char			 path[AGENCY_PATH_MAX];
	char			 model[AGENCY_NAME_MAX];	/* cancel's */
	int64_t			 t0;
	json_object		*models;	/* status: the records */
	struct proto_status	*sts;		/* metrics: the statuses */
	size_t			 nsts;
	struct pview		 view;		/* the models it may show */
};
TAILQ_HEAD(sreqs, sreq);

static struct sreqs	 sreqs = TAILQ_HEAD_INITIALIZER(sreqs);

static void	 sreq_gone(void *);

/* A request that waits on the parent, its id the next of the proxy's;
 * NULL, answered, when there is no memory for it. */
static struct sreq *
sreq_new(struct hreq *r, struct http_decision *dc, enum sreq_kind kind)
{
	struct sreq	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL) {
		answer_error(r, 500, "internal_error", "Out of memory.");
		return (NULL);
	}
	s->reqid = ++px->seq;
	s->kind = kind;
	s->r = r;
	s->method = kind == SREQ_CANCEL ? "POST" : "GET";
	(void)strlcpy(s->path, dc->path, sizeof(s->path));
	(void)strlcpy(s->model, kind == SREQ_CANCEL ? dc->model->name : "-",
	    sizeof(s->model));
	s->t0 = now_ms();
	access_view(&dc->acc, px->conf, &s->view);
	TAILQ_INSERT_TAIL(&sreqs, s, entry);
	conn_set_owner(r->conn, sreq_gone, NULL, s);
	return (s);
}

static struct sreq *
sreq_find(uint64_t reqid, int cancel)
{
	struct sreq	*s;

	TAILQ_FOREACH(s, &sreqs, entry)
		if (s->reqid == reqid)
			return ((s->kind == SREQ_CANCEL) == cancel ? s : NULL);
	return (NULL);
}

/* Its end: logged with status (499: the client left), and freed. */
static void
sreq_end(struct sreq *s, int status)
{
	answer_log_end(s->method, s->path, s->model, status, now_ms() - s->t0,
	    -1, -1, -1, status == 499 ? END_CLIENT_LEFT : END_DONE, "");
	TAILQ_REMOVE(&sreqs, s, entry);
	json_object_put(s->models);
	free(s->sts);
	access_view_clear(&s->view);
	free(s);
}

/* From conn.c: the client left before the parent answered. */
static void
sreq_gone(void *arg)
{
	sreq_end(arg, 499);
}

/* The client, its answer to be written: NULL if it left.  It is no
 * longer the connection's owner. */
static struct hreq *
sreq_client(struct sreq *s)
{
	struct hreq	*r = s->r;

	s->r = NULL;
	return (r);
}

static void
ask_status(uint64_t reqid)
{
	struct proto_reqid	 pr;

	memset(&pr, 0, sizeof(pr));
	pr.reqid = reqid;
	parent_send(IMSG_STATUS_REQ, &pr, sizeof(pr));
}

/* GET /v1/agency/status: the parent's record of each model. */
void
status_get(struct hreq *r, struct http_decision *dc)
{
	struct sreq	*s;

	if ((s = sreq_new(r, dc, SREQ_STATUS)) == NULL)
		return;
	s->models = json_object_new_array();
	ask_status(s->reqid);
}

/* GET /metrics: our counters and the parent's status of each model. */
void
status_metrics(struct hreq *r, struct http_decision *dc)
{
	struct sreq	*s;

	if ((s = sreq_new(r, dc, SREQ_METRICS)) != NULL)
		ask_status(s->reqid);
}

/* POST /v1/agency/cancel: agencyd sends the cancel, and the answer
 * waits for it (status_cancelled). */
void
status_cancel(struct hreq *r, struct http_decision *dc)
{
	struct proto_cancel	 pc;
	struct sreq		*s;

	if ((s = sreq_new(r, dc, SREQ_CANCEL)) == NULL)
		return;
	memset(&pc, 0, sizeof(pc));
	pc.reqid = s->reqid;
	(void)strlcpy(pc.model, s->model, sizeof(pc.model));
	parent_send(IMSG_CANCEL, &pc, sizeof(pc));
}

/* A model's status, for the request that asked. */
void
status_record(const struct proto_status *st)
{
	struct proto_status	*n;
	struct sreq		*s;
	json_object		*o;

	if ((s = sreq_find(st->reqid, 0)) == NULL ||
	    !access_view_has(&s->view, st->model))
		return;
	if (s->kind == SREQ_STATUS) {
		/* the record the events stream shows too, but whom an
		 * eviction was for when it may not show that model */
		o = events_record(st, px->conf != NULL ?
		    pconf_find_model(px->conf, st->model) : NULL);
		if (st->change_for[0] != '\0' &&
		    !access_view_has(&s->view, st->change_for))
			json_object_object_add(o, "for", NULL);
		json_object_array_add(s->models, o);
		return;
	}
	if ((n = reallocarray(s->sts, s->nsts + 1, sizeof(*n))) == NULL)
		return;
	s->sts = n;
	s->sts[s->nsts++] = *st;
}

static int
view_shows(const void *arg, const char *model)
{
	return (access_view_has(arg, model));
}

static void
metrics_answer(struct hreq *r, const struct sreq *s)
{
	struct evbuffer		*buf;
	struct conn_stats	 cs;
	struct events_stats	 es;

	if ((buf = evbuffer_new()) == NULL)
		fatal("%s: evbuffer_new", __func__);
	conn_get_stats(&cs);
	events_get_stats(&es);
	metrics_render(buf, s->sts, s->nsts, &cs, &es, view_shows,
	    &s->view);
	answer_reply(r, 200, "text/plain; version=0.0.4; charset=utf-8",
	    (const char *)evbuffer_pullup(buf, -1), evbuffer_get_length(buf));
	evbuffer_free(buf);
}

/* The parent has sent every model's status, and the memory: the answer. */
void
status_end(const struct proto_status_end *end)
{
	struct sreq	*s;
	struct hreq	*r;
	json_object	*obj, *mem;

	if ((s = sreq_find(end->reqid, 0)) == NULL)
		return;
	if ((r = sreq_client(s)) != NULL && s->kind == SREQ_METRICS)
		metrics_answer(r, s);
	else if (r != NULL) {
		obj = json_object_new_object();
		json_object_object_add(obj, "models",
		    json_object_get(s->models));
		if ((mem = status_memory_json(&end->mem)) == NULL)
			fatal("%s: status_memory_json", __func__);
		json_object_object_add(obj, "memory", mem);
		answer_json(r, 200, obj);
		json_object_put(obj);
	}
	sreq_end(s, 200);
}

/* The cancel agencyd sent for reqid ended n requests. */
void
status_cancelled(uint64_t reqid, const char *model, uint32_t n)
{
	struct sreq	*s;
	struct hreq	*r;
	json_object	*obj;

	if ((s = sreq_find(reqid, 1)) == NULL || strcmp(s->model, model) != 0)
		return;
	if ((r = sreq_client(s)) != NULL) {
		obj = json_object_new_object();
		json_object_object_add(obj, "cancelled",
		    json_object_new_int64(n));
		answer_json(r, 200, obj);
		json_object_put(obj);
	}
	sreq_end(s, 200);
}
