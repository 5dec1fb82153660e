/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Each message of proto.h, written and read field by field, the two
 * side by side; and the table of which message goes which way with
 * which structure.  The reading side is where a message is checked: its
 * strings, its enums and flags, the ids that may not be 0.  What needs
 * the receiver's state (a hold it holds, a cancel it sent) is the
 * receiver's to check.  Calls: msg.c, imsg.c.
 */
#include <sys/types.h>

#include <stdint.h>
#include <string.h>

#include "imsg.h"
#include "msg.h"
#include "proto.h"

/*
 * A message's codec: put writes the structure, get reads it back (it
 * may fail the reader for a value it refuses; type tells apart the
 * messages that share a structure).
 */
struct proto_codec {
	size_t		 size;		/* of its structure; 0: no payload */
	void		(*put)(struct msgw *, const void *);
	void		(*get)(struct msgr *, uint32_t, void *);
};

struct proto_type {
	int				 known;
	enum proto_from			 from;
	const struct proto_codec	*codec;
};

/* -- ids -- */

static void
put_reqid(struct msgw *w, const void *p)
{
	const struct proto_reqid	*m = p;

	msg_add_u64(w, m->reqid);
}

static void
get_reqid(struct msgr *r, uint32_t type, void *p)
{
	struct proto_reqid	*m = p;

	(void)type;
	m->reqid = msg_get_u64(r);
}

static void
put_holdid(struct msgw *w, const void *p)
{
	const struct proto_holdid	*m = p;

	msg_add_u64(w, m->holdid);
}

static void
get_holdid(struct msgr *r, uint32_t type, void *p)
{
	struct proto_holdid	*m = p;

	(void)type;
	m->holdid = msg_get_u64(r);
}

static void
put_loadid(struct msgw *w, const void *p)
{
	const struct proto_loadid	*m = p;

	msg_add_u64(w, m->loadid);
}

static void
get_loadid(struct msgr *r, uint32_t type, void *p)
{
	struct proto_loadid	*m = p;

	(void)type;
	m->loadid = msg_get_u64(r);
}

/* -- holds -- */

static void
put_hold_req(struct msgw *w, const void *p)
{
	const struct proto_hold_req	*m = p;

	msg_add_u64(w, m->reqid);
	msg_add_strn(w, m->model, sizeof(m->model));
	msg_add_u32(w, m->flags);
	msg_add_strn(w, m->key, sizeof(m->key));
}

static void
get_hold_req(struct msgr *r, uint32_t type, void *p)
{
	struct proto_hold_req	*m = p;

	(void)type;
	m->reqid = msg_get_u64(r);
	msg_get_str(r, m->model, sizeof(m->model));
	m->flags = msg_get_u32(r);
	msg_get_str(r, m->key, sizeof(m->key));
	if (m->reqid == 0)
		msg_fail(r, "a request id 0");
	if ((m->flags & ~PROTO_HOLD_FLAGS) != 0)
		msg_fail(r, "a flag of no meaning");
}

static void
put_hold_grant(struct msgw *w, const void *p)
{
	const struct proto_hold_grant	*m = p;

	msg_add_u64(w, m->reqid);
	msg_add_u64(w, m->holdid);
	msg_add_u16(w, m->port);
	msg_add_strn(w, m->upstream, sizeof(m->upstream));
	msg_add_strn(w, m->label, sizeof(m->label));
	msg_add_strn(w, m->sock, sizeof(m->sock));
}

static void
get_hold_grant(struct msgr *r, uint32_t type, void *p)
{
	struct proto_hold_grant	*m = p;

	(void)type;
	m->reqid = msg_get_u64(r);
	m->holdid = msg_get_u64(r);
	m->port = msg_get_u16(r);
	msg_get_str(r, m->upstream, sizeof(m->upstream));
	msg_get_str(r, m->label, sizeof(m->label));
	msg_get_str(r, m->sock, sizeof(m->sock));
	if (m->sock[0] != '\0' && m->sock[0] != '/')
		msg_fail(r, "a socket path that is not absolute");
}

static void
put_hold_wait(struct msgw *w, const void *p)
{
	const struct proto_hold_wait	*m = p;

	msg_add_u64(w, m->reqid);
	msg_add_i32(w, m->wait);
	msg_add_u32(w, m->ahead);
	msg_add_i64(w, m->load_ms);
}

static void
get_hold_wait(struct msgr *r, uint32_t type, void *p)
{
	struct proto_hold_wait	*m = p;

	(void)type;
	m->reqid = msg_get_u64(r);
	m->wait = msg_get_enum(r, WAIT_NONE + 1, WAIT_LAST);
	m->ahead = msg_get_u32(r);
	m->load_ms = msg_get_range(r, -1, INT64_MAX);
}

static void
put_hold_refuse(struct msgw *w, const void *p)
{
	const struct proto_hold_refuse	*m = p;

	msg_add_u64(w, m->reqid);
	msg_add_i32(w, m->reason);
	msg_add_strn(w, m->message, sizeof(m->message));
	msg_add_i32(w, m->retry_after);
}

static void
get_hold_refuse(struct msgr *r, uint32_t type, void *p)
{
	struct proto_hold_refuse	*m = p;

	(void)type;
	m->reqid = msg_get_u64(r);
	m->reason = msg_get_enum(r, REFUSE_NOT_LOADED, REFUSE_LAST);
	msg_get_str(r, m->message, sizeof(m->message));
	m->retry_after = msg_get_enum(r, 0, PROTO_RETRY_MAX);
}

/* -- probes -- */

static void
put_probe(struct msgw *w, const void *p)
{
	const struct proto_probe	*m = p;

	msg_add_u64(w, m->loadid);
	msg_add_u16(w, m->port);
	msg_add_i32(w, m->method);
	msg_add_strn(w, m->path, sizeof(m->path));
	msg_add_strn(w, m->body, sizeof(m->body));
	msg_add_strn(w, m->label, sizeof(m->label));
	msg_add_strn(w, m->sock, sizeof(m->sock));
}

static void
get_probe(struct msgr *r, uint32_t type, void *p)
{
	struct proto_probe	*m = p;

	(void)type;
	m->loadid = msg_get_u64(r);
	m->port = msg_get_u16(r);
	m->method = msg_get_enum(r, READY_GET, READY_POST);
	msg_get_str(r, m->path, sizeof(m->path));
	msg_get_str(r, m->body, sizeof(m->body));
	msg_get_str(r, m->label, sizeof(m->label));
	msg_get_str(r, m->sock, sizeof(m->sock));
	if (m->port == 0 || m->path[0] != '/')
		msg_fail(r, "a probe of port 0 or of no path");
	if (m->sock[0] != '\0' && m->sock[0] != '/')
		msg_fail(r, "a socket path that is not absolute");
}

static void
put_probe_result(struct msgw *w, const void *p)
{
	const struct proto_probe_result	*m = p;

	msg_add_u64(w, m->loadid);
	msg_add_i32(w, m->ok);
	msg_add_i32(w, m->status);
	msg_add_strn(w, m->body, sizeof(m->body));
}

static void
get_probe_result(struct msgr *r, uint32_t type, void *p)
{
	struct proto_probe_result	*m = p;

	(void)type;
	m->loadid = msg_get_u64(r);
	m->ok = msg_get_bool(r);
	m->status = msg_get_i32(r);
	msg_get_str(r, m->body, sizeof(m->body));
}

/* -- status -- */

static void
put_status(struct msgw *w, const void *p)
{
	const struct proto_status	*m = p;
	uint32_t			 i;

	msg_add_u64(w, m->reqid);
	msg_add_strn(w, m->model, sizeof(m->model));
	msg_add_strn(w, m->runtime, sizeof(m->runtime));
	msg_add_i32(w, m->state);
	msg_add_i32(w, m->lazy);
	msg_add_strn(w, m->error, sizeof(m->error));
	msg_add_u32(w, m->in_progress);
	msg_add_i64(w, m->last_used);
	msg_add_i32(w, m->pid);
	msg_add_u16(w, m->port);
	msg_add_i64(w, m->need);
	msg_add_u64(w, m->requests);
	msg_add_u64(w, m->loads);
	msg_add_u64(w, m->restarts);
	msg_add_i64(w, m->loaded_at);
	msg_add_u64(w, m->evictions);
	msg_add_u64(w, m->load_failures);
	msg_add_u64(w, m->load_ms_sum);
	for (i = 0; i < PROTO_LOAD_NBOUNDS + 1; i++)
		msg_add_u64(w, m->load_hist[i]);
	msg_add_i32(w, m->need_from);
	msg_add_u32(w, m->queued);
	msg_add_i32(w, m->waiting);
	msg_add_i64(w, m->oldest_wait);
	msg_add_u32(w, m->max_requests);
	msg_add_i64(w, m->idle_timeout);
	msg_add_i64(w, m->fairness);
	msg_add_i64(w, m->idle_stop_at);
	msg_add_i64(w, m->restart_at);
	msg_add_i32(w, m->change);
	msg_add_strn(w, m->change_for, sizeof(m->change_for));
	msg_add_u32(w, m->nload_ms);
	for (i = 0; i < m->nload_ms && i < PROTO_LOAD_HISTORY; i++)
		msg_add_i64(w, m->load_ms[i]);
}

static void
get_status(struct msgr *r, uint32_t type, void *p)
{
	struct proto_status	*m = p;
	uint32_t		 i;

	(void)type;
	m->reqid = msg_get_u64(r);
	msg_get_str(r, m->model, sizeof(m->model));
	msg_get_str(r, m->runtime, sizeof(m->runtime));
	m->state = msg_get_enum(r, STATE_STOPPED, STATE_UNLOADED);
	m->lazy = msg_get_bool(r);
	msg_get_str(r, m->error, sizeof(m->error));
	m->in_progress = msg_get_u32(r);
	m->last_used = msg_get_i64(r);
	m->pid = msg_get_i32(r);
	m->port = msg_get_u16(r);
	m->need = msg_get_i64(r);
	m->requests = msg_get_u64(r);
	m->loads = msg_get_u64(r);
	m->restarts = msg_get_u64(r);
	m->loaded_at = msg_get_i64(r);
	m->evictions = msg_get_u64(r);
	m->load_failures = msg_get_u64(r);
	m->load_ms_sum = msg_get_u64(r);
	for (i = 0; i < PROTO_LOAD_NBOUNDS + 1; i++)
		m->load_hist[i] = msg_get_u64(r);
	m->need_from = msg_get_enum(r, NEED_CONFIGURED, NEED_HEADROOM);
	m->queued = msg_get_u32(r);
	m->waiting = msg_get_enum(r, WAIT_NONE, WAIT_LAST);
	m->oldest_wait = msg_get_i64(r);
	m->max_requests = msg_get_u32(r);
	m->idle_timeout = msg_get_i64(r);
	m->fairness = msg_get_i64(r);
	m->idle_stop_at = msg_get_i64(r);
	m->restart_at = msg_get_i64(r);
	m->change = msg_get_enum(r, CHANGE_NONE, CHANGE_LAST);
	msg_get_str(r, m->change_for, sizeof(m->change_for));
	m->nload_ms = msg_get_u32(r);
	if (m->nload_ms > PROTO_LOAD_HISTORY) {
		msg_fail(r, "more load times than a status keeps");
		m->nload_ms = 0;
	}
	for (i = 0; i < m->nload_ms; i++)
		m->load_ms[i] = msg_get_i64(r);
	if (m->model[0] == '\0')
		msg_fail(r, "a status of no model");
}

static void
put_alias(struct msgw *w, const void *p)
{
	const struct proto_alias	*m = p;

	msg_add_strn(w, m->model, sizeof(m->model));
	msg_add_strn(w, m->alias, sizeof(m->alias));
}

static void
get_alias(struct msgr *r, uint32_t type, void *p)
{
	struct proto_alias	*m = p;

	(void)type;
	msg_get_str(r, m->model, sizeof(m->model));
	msg_get_str(r, m->alias, sizeof(m->alias));
}

static void
put_memory(struct msgw *w, const void *p)
{
	const struct proto_memory	*m = p;

	msg_add_i64(w, m->in_use);
	msg_add_i64(w, m->budget);
	msg_add_i64(w, m->available);
	msg_add_i64(w, m->total);
	msg_add_i64(w, m->reserve);
}

static void
get_memory(struct msgr *r, uint32_t type, void *p)
{
	struct proto_memory	*m = p;

	(void)type;
	m->in_use = msg_get_i64(r);
	m->budget = msg_get_i64(r);
	m->available = msg_get_i64(r);
	m->total = msg_get_i64(r);
	m->reserve = msg_get_i64(r);
}

static void
put_status_end(struct msgw *w, const void *p)
{
	const struct proto_status_end	*m = p;

	msg_add_u64(w, m->reqid);
	put_memory(w, &m->mem);
}

static void
get_status_end(struct msgr *r, uint32_t type, void *p)
{
	struct proto_status_end	*m = p;

	m->reqid = msg_get_u64(r);
	get_memory(r, type, &m->mem);
}

static void
put_key_status(struct msgw *w, const void *p)
{
	const struct proto_key_status	*m = p;

	msg_add_u64(w, m->reqid);
	msg_add_strn(w, m->name, sizeof(m->name));
	msg_add_u64(w, m->requests);
}

static void
get_key_status(struct msgr *r, uint32_t type, void *p)
{
	struct proto_key_status	*m = p;

	(void)type;
	m->reqid = msg_get_u64(r);
	msg_get_str(r, m->name, sizeof(m->name));
	m->requests = msg_get_u64(r);
	if (m->name[0] == '\0')
		msg_fail(r, "a key of no name");
}

/* -- cancels, admin, logs -- */

static void
put_cancel(struct msgw *w, const void *p)
{
	const struct proto_cancel	*m = p;

	msg_add_u64(w, m->reqid);
	msg_add_strn(w, m->model, sizeof(m->model));
	msg_add_u32(w, m->cancelled);
}

static void
get_cancel(struct msgr *r, uint32_t type, void *p)
{
	struct proto_cancel	*m = p;

	(void)type;
	m->reqid = msg_get_u64(r);
	msg_get_str(r, m->model, sizeof(m->model));
	m->cancelled = msg_get_u32(r);
}

static void
put_admin(struct msgw *w, const void *p)
{
	const struct proto_admin	*m = p;

	msg_add_u64(w, m->reqid);
	msg_add_i32(w, m->op);
	msg_add_i32(w, m->wait);
	msg_add_strn(w, m->model, sizeof(m->model));
}

static void
get_admin(struct msgr *r, uint32_t type, void *p)
{
	struct proto_admin	*m = p;

	(void)type;
	m->reqid = msg_get_u64(r);
	m->op = msg_get_enum(r, ADMIN_LOAD, ADMIN_UNLOAD);
	m->wait = msg_get_bool(r);
	msg_get_str(r, m->model, sizeof(m->model));
	if (m->reqid == 0)
		msg_fail(r, "a request id 0");
}

static void
put_admin_done(struct msgw *w, const void *p)
{
	const struct proto_admin_done	*m = p;

	msg_add_u64(w, m->reqid);
	msg_add_i32(w, m->status);
	msg_add_strn(w, m->code, sizeof(m->code));
	msg_add_strn(w, m->message, sizeof(m->message));
}

static void
get_admin_done(struct msgr *r, uint32_t type, void *p)
{
	struct proto_admin_done	*m = p;

	(void)type;
	m->reqid = msg_get_u64(r);
	m->status = msg_get_enum(r, 200, 599);
	msg_get_str(r, m->code, sizeof(m->code));
	msg_get_str(r, m->message, sizeof(m->message));
}

static void
put_logs_req(struct msgw *w, const void *p)
{
	const struct proto_logs_req	*m = p;

	msg_add_u64(w, m->reqid);
	msg_add_i32(w, m->follow);
	msg_add_strn(w, m->model, sizeof(m->model));
}

/* An unfollow needs no id: it answers nothing. */
static void
get_logs_req(struct msgr *r, uint32_t type, void *p)
{
	struct proto_logs_req	*m = p;

	m->reqid = msg_get_u64(r);
	m->follow = msg_get_bool(r);
	msg_get_str(r, m->model, sizeof(m->model));
	if (type == IMSG_LOGS_REQ && m->reqid == 0)
		msg_fail(r, "a request id 0");
}

static void
put_logline(struct msgw *w, const void *p)
{
	const struct proto_logline	*m = p;

	msg_add_u64(w, m->reqid);
	msg_add_u64(w, m->seq);
	msg_add_strn(w, m->model, sizeof(m->model));
	msg_add_strn(w, m->line, sizeof(m->line));
}

static void
get_logline(struct msgr *r, uint32_t type, void *p)
{
	struct proto_logline	*m = p;

	(void)type;
	m->reqid = msg_get_u64(r);
	m->seq = msg_get_u64(r);
	msg_get_str(r, m->model, sizeof(m->model));
	msg_get_str(r, m->line, sizeof(m->line));
}

static void
put_logs_end(struct msgw *w, const void *p)
{
	const struct proto_logs_end	*m = p;

	msg_add_u64(w, m->reqid);
	msg_add_i32(w, m->found);
	msg_add_strn(w, m->model, sizeof(m->model));
}

static void
get_logs_end(struct msgr *r, uint32_t type, void *p)
{
	struct proto_logs_end	*m = p;

	(void)type;
	m->reqid = msg_get_u64(r);
	m->found = msg_get_bool(r);
	msg_get_str(r, m->model, sizeof(m->model));
}

/* A line for the log, or of a model's log for agency-ctl.  The proxy's
 * priority is any number: agencyd keeps it to its own. */
static void
put_log(struct msgw *w, const void *p)
{
	const struct proto_log	*m = p;

	msg_add_i32(w, m->pri);
	msg_add_strn(w, m->line, sizeof(m->line));
}

static void
get_log(struct msgr *r, uint32_t type, void *p)
{
	struct proto_log	*m = p;

	(void)type;
	m->pri = msg_get_i32(r);
	msg_get_str(r, m->line, sizeof(m->line));
}

/* -- the events stream -- */

static void
put_ev_sync(struct msgw *w, const void *p)
{
	const struct proto_ev_sync	*m = p;

	msg_add_i64(w, m->time);
	msg_add_i32(w, m->reload);
	msg_add_i32(w, m->ok);
	msg_add_strn(w, m->error, sizeof(m->error));
}

static void
get_ev_sync(struct msgr *r, uint32_t type, void *p)
{
	struct proto_ev_sync	*m = p;

	(void)type;
	m->time = msg_get_i64(r);
	m->reload = msg_get_bool(r);
	m->ok = msg_get_bool(r);
	msg_get_str(r, m->error, sizeof(m->error));
}

static void
put_ev_record(struct msgw *w, const void *p)
{
	const struct proto_ev_record	*m = p;

	msg_add_i32(w, m->changed);
	put_status(w, &m->st);
}

static void
get_ev_record(struct msgr *r, uint32_t type, void *p)
{
	struct proto_ev_record	*m = p;

	m->changed = msg_get_bool(r);
	get_status(r, type, &m->st);
}

static void
put_ev_state(struct msgw *w, const void *p)
{
	const struct proto_ev_state	*m = p;

	msg_add_i64(w, m->time);
	msg_add_i32(w, m->from);
	put_status(w, &m->st);
}

/* from: a state, or -1 for a model that had none (a new one) */
static void
get_ev_state(struct msgr *r, uint32_t type, void *p)
{
	struct proto_ev_state	*m = p;

	m->time = msg_get_i64(r);
	m->from = msg_get_enum(r, -1, STATE_UNLOADED);
	get_status(r, type, &m->st);
}

static void
put_ev_queue(struct msgw *w, const void *p)
{
	const struct proto_ev_queue	*m = p;

	msg_add_i64(w, m->time);
	msg_add_strn(w, m->model, sizeof(m->model));
	msg_add_u32(w, m->in_progress);
	msg_add_u32(w, m->queued);
	msg_add_i32(w, m->waiting);
	msg_add_i64(w, m->oldest_wait);
	msg_add_i64(w, m->last_used);
}

static void
get_ev_queue(struct msgr *r, uint32_t type, void *p)
{
	struct proto_ev_queue	*m = p;

	(void)type;
	m->time = msg_get_i64(r);
	msg_get_str(r, m->model, sizeof(m->model));
	m->in_progress = msg_get_u32(r);
	m->queued = msg_get_u32(r);
	m->waiting = msg_get_enum(r, WAIT_NONE, WAIT_LAST);
	m->oldest_wait = msg_get_i64(r);
	m->last_used = msg_get_i64(r);
}

static void
put_ev_memory(struct msgw *w, const void *p)
{
	const struct proto_ev_memory	*m = p;

	msg_add_i64(w, m->time);
	put_memory(w, &m->mem);
}

static void
get_ev_memory(struct msgr *r, uint32_t type, void *p)
{
	struct proto_ev_memory	*m = p;

	m->time = msg_get_i64(r);
	get_memory(r, type, &m->mem);
}

/* -- the sandbox's ports -- */

static void
put_ports(struct msgw *w, const void *p)
{
	const struct proto_ports	*m = p;
	uint32_t			 i;

	msg_add_u32(w, m->n);
	for (i = 0; i < m->n && i < PROTO_PORT_RANGES; i++) {
		msg_add_u16(w, m->r[i].lo);
		msg_add_u16(w, m->r[i].hi);
	}
}

static void
get_ports(struct msgr *r, uint32_t type, void *p)
{
	struct proto_ports	*m = p;
	uint32_t		 i;

	(void)type;
	if ((m->n = msg_get_u32(r)) > PROTO_PORT_RANGES) {
		msg_fail(r, "more port ranges than there may be");
		return;
	}
	for (i = 0; i < m->n; i++) {
		m->r[i].lo = msg_get_u16(r);
		m->r[i].hi = msg_get_u16(r);
	}
	if (!proto_ports_ok(m))
		msg_fail(r, "model ports that are no ranges");
}

/* -- agency-ctl's -- */

static void
put_ctl_model(struct msgw *w, const void *p)
{
	const struct proto_ctl_model	*m = p;

	msg_add_strn(w, m->model, sizeof(m->model));
	msg_add_i32(w, m->wait);
}

static void
get_ctl_model(struct msgr *r, uint32_t type, void *p)
{
	struct proto_ctl_model	*m = p;

	(void)type;
	msg_get_str(r, m->model, sizeof(m->model));
	m->wait = msg_get_bool(r);
}

static void
put_ctl_verbose(struct msgw *w, const void *p)
{
	const struct proto_ctl_verbose	*m = p;

	msg_add_i32(w, m->verbose);
}

static void
get_ctl_verbose(struct msgr *r, uint32_t type, void *p)
{
	struct proto_ctl_verbose	*m = p;

	(void)type;
	m->verbose = msg_get_enum(r, 0, 3);
}

static void
put_ctl_result(struct msgw *w, const void *p)
{
	const struct proto_ctl_result	*m = p;

	msg_add_strn(w, m->message, sizeof(m->message));
}

static void
get_ctl_result(struct msgr *r, uint32_t type, void *p)
{
	struct proto_ctl_result	*m = p;

	(void)type;
	msg_get_str(r, m->message, sizeof(m->message));
}

/* -- the tables -- */

#define CODEC(name)	{ sizeof(struct proto_##name), put_##name, get_##name }

static const struct proto_codec	 c_none = { 0, NULL, NULL };
static const struct proto_codec	 c_reqid = CODEC(reqid);
static const struct proto_codec	 c_holdid = CODEC(holdid);
static const struct proto_codec	 c_loadid = CODEC(loadid);
static const struct proto_codec	 c_hold_req = CODEC(hold_req);
static const struct proto_codec	 c_hold_grant = CODEC(hold_grant);
static const struct proto_codec	 c_hold_wait = CODEC(hold_wait);
static const struct proto_codec	 c_hold_refuse = CODEC(hold_refuse);
static const struct proto_codec	 c_probe = CODEC(probe);
static const struct proto_codec	 c_probe_result = CODEC(probe_result);
static const struct proto_codec	 c_status = CODEC(status);
static const struct proto_codec	 c_alias = CODEC(alias);
static const struct proto_codec	 c_memory = CODEC(memory);
static const struct proto_codec	 c_status_end = CODEC(status_end);
static const struct proto_codec	 c_key_status = CODEC(key_status);
static const struct proto_codec	 c_cancel = CODEC(cancel);
static const struct proto_codec	 c_admin = CODEC(admin);
static const struct proto_codec	 c_admin_done = CODEC(admin_done);
static const struct proto_codec	 c_logs_req = CODEC(logs_req);
static const struct proto_codec	 c_logline = CODEC(logline);
static const struct proto_codec	 c_logs_end = CODEC(logs_end);
static const struct proto_codec	 c_log = CODEC(log);
static const struct proto_codec	 c_ev_sync = CODEC(ev_sync);
static const struct proto_codec	 c_ev_record = CODEC(ev_record);
static const struct proto_codec	 c_ev_state = CODEC(ev_state);
static const struct proto_codec	 c_ev_queue = CODEC(ev_queue);
static const struct proto_codec	 c_ev_memory = CODEC(ev_memory);
static const struct proto_codec	 c_ports = CODEC(ports);
static const struct proto_codec	 c_ctl_model = CODEC(ctl_model);
static const struct proto_codec	 c_ctl_verbose = CODEC(ctl_verbose);
static const struct proto_codec	 c_ctl_result = CODEC(ctl_result);

#define PARENT(c)	{ 1, FROM_PARENT, &(c) }
#define PROXY(c)	{ 1, FROM_PROXY, &(c) }
#define CTL(c)		{ 1, FROM_CTL, &(c) }
#define AGENCYD(c)	{ 1, FROM_AGENCYD, &(c) }

/* agencyd <-> agency-proxy; the configuration's are confimsg.c's. */
static const struct proto_type	 link_types[IMSG_MAXTYPE] = {
	[IMSG_HOLD_REQ] = PROXY(c_hold_req),
	[IMSG_HOLD_WITHDRAW] = PROXY(c_reqid),
	[IMSG_HOLD_GRANT] = PARENT(c_hold_grant),
	[IMSG_HOLD_REFUSE] = PARENT(c_hold_refuse),
	[IMSG_HOLD_WAIT] = PARENT(c_hold_wait),
	[IMSG_HOLD_RELEASE] = PROXY(c_holdid),
	[IMSG_PROBE] = PARENT(c_probe),
	[IMSG_PROBE_CANCEL] = PARENT(c_loadid),
	[IMSG_PROBE_RESULT] = PROXY(c_probe_result),
	[IMSG_STATUS_REQ] = PROXY(c_reqid),
	[IMSG_STATUS_MODEL] = PARENT(c_status),
	[IMSG_STATUS_END] = PARENT(c_status_end),
	[IMSG_CANCEL] = { 1, FROM_PARENT, &c_cancel },	/* and the proxy */
	[IMSG_CANCEL_DONE] = PROXY(c_cancel),
	[IMSG_ADMIN] = PROXY(c_admin),
	[IMSG_ADMIN_DONE] = PARENT(c_admin_done),
	[IMSG_LOGS_REQ] = PROXY(c_logs_req),
	[IMSG_LOGS_LINE] = PARENT(c_logline),
	[IMSG_LOGS_END] = PARENT(c_logs_end),
	[IMSG_LOGS_UNFOLLOW] = PROXY(c_logs_req),
	[IMSG_EV_SYNC_START] = PARENT(c_ev_sync),
	[IMSG_EV_RECORD] = PARENT(c_ev_record),
	[IMSG_EV_SYNC_END] = PARENT(c_ev_sync),
	[IMSG_EV_STATE] = PARENT(c_ev_state),
	[IMSG_EV_QUEUE] = PARENT(c_ev_queue),
	[IMSG_EV_MEMORY] = PARENT(c_ev_memory),
	[IMSG_LOG] = PROXY(c_log),
	[IMSG_PROXY_READY] = PROXY(c_none),
	[IMSG_PORTS] = PARENT(c_ports),
};

static const struct proto_type	 ctl_types[IMSG_CTL_MAXTYPE] = {
	[IMSG_CTL_STATUS_REQ] = CTL(c_reqid),
	[IMSG_CTL_STATUS] = CTL(c_ctl_model),
	[IMSG_CTL_LOAD] = CTL(c_ctl_model),
	[IMSG_CTL_UNLOAD] = CTL(c_ctl_model),
	[IMSG_CTL_CANCEL] = CTL(c_ctl_model),
	[IMSG_CTL_RELOAD] = CTL(c_none),
	[IMSG_CTL_VERBOSE] = CTL(c_ctl_verbose),
	[IMSG_CTL_LOGS] = CTL(c_ctl_model),
	[IMSG_CTL_FOLLOW] = CTL(c_ctl_model),
	[IMSG_CTL_PLAN] = CTL(c_ctl_model),
	[IMSG_CTL_STATUS_MODEL] = AGENCYD(c_status),
	[IMSG_CTL_STATUS_ALIAS] = AGENCYD(c_alias),
	[IMSG_CTL_STATUS_MEMORY] = AGENCYD(c_memory),
	[IMSG_CTL_STATUS_KEY] = AGENCYD(c_key_status),
	[IMSG_CTL_STATUS_END] = AGENCYD(c_reqid),
	[IMSG_CTL_LOGLINE] = AGENCYD(c_log),
	[IMSG_CTL_OK] = AGENCYD(c_ctl_result),
	[IMSG_CTL_ERROR] = AGENCYD(c_ctl_result),
	[IMSG_CTL_FAILED] = AGENCYD(c_ctl_result),
	[IMSG_CTL_INFO] = AGENCYD(c_ctl_result),
	[IMSG_CTL_END] = AGENCYD(c_none),
};

/* The codec of a message that from sends, or NULL. */
static const struct proto_codec *
proto_codec(enum proto_from from, uint32_t type)
{
	const struct proto_type	*t;

	if (from == FROM_CTL || from == FROM_AGENCYD) {
		if (type >= IMSG_CTL_MAXTYPE)
			return (NULL);
		t = &ctl_types[type];
	} else {
		if (type >= IMSG_MAXTYPE)
			return (NULL);
		t = &link_types[type];
		/* the proxy asks for a cancel as agencyd sends one */
		if (type == IMSG_CANCEL)
			return (t->codec);
	}
	return (t->known && t->from == from ? t->codec : NULL);
}

size_t
proto_size(enum proto_from from, uint32_t type)
{
	const struct proto_codec	*c;

	return ((c = proto_codec(from, type)) != NULL ? c->size : 0);
}

int
proto_write(struct msgw *w, enum proto_from from, uint32_t type,
    const void *data, size_t len)
{
	const struct proto_codec	*c;

	msg_init(w);
	if ((c = proto_codec(from, type)) == NULL || len != c->size)
		return (-1);
	if (c->put != NULL)
		c->put(w, data);
	return (w->err ? -1 : 0);
}

int
proto_read(const struct imsg *imsg, enum proto_from from, void *data,
    size_t size, const char **why)
{
	const struct proto_codec	*c;
	struct msgr			 r;

	if ((c = proto_codec(from, imsg_get_type(imsg))) == NULL) {
		*why = "a message of no known type";
		return (-1);
	}
	if (c->size > size) {
		*why = "a message too big for its reader";
		return (-1);
	}
	/* Its reader sets every field (a string up to its NUL): no memset
	 * of a line's 1 KB for each log line. */
	msg_read(&r, imsg);
	if (c->get != NULL)
		c->get(&r, imsg_get_type(imsg), data);
	if (msg_end(&r) == -1) {
		*why = r.why;
		return (-1);
	}
	return (0);
}

int
proto_ports_ok(const struct proto_ports *p)
{
	uint32_t	i;

	if (p->n < 1 || p->n > PROTO_PORT_RANGES)
		return (0);
	for (i = 0; i < p->n; i++)
		if (p->r[i].lo == 0 || p->r[i].lo > p->r[i].hi)
			return (0);
	return (1);
}

const char *
proto_state_name(int32_t state)
{
	switch (state) {
	case STATE_STOPPED:
		return ("stopped");
	case STATE_LOADING:
		return ("loading");
	case STATE_READY:
		return ("ready");
	case STATE_FAILED:
		return ("failed");
	case STATE_UNLOADED:
		return ("unloaded");
	default:
		return (NULL);
	}
}

const char *
proto_state_name_or(int32_t state)
{
	const char	*s = proto_state_name(state);

	return (s != NULL ? s : "unknown");
}

const char *
proto_wait_name(int32_t wait)
{
	switch (wait) {
	case WAIT_NONE:
		return ("");
	case WAIT_TURN:
		return ("turn");
	case WAIT_MEMORY:
		return ("memory");
	case WAIT_SLOT:
		return ("slot");
	case WAIT_LOAD:
		return ("load");
	default:
		return (NULL);
	}
}

const char *
proto_refusal_name(int32_t reason)
{
	switch (reason) {
	case REFUSE_NOT_LOADED:
		return ("not_loaded");
	case REFUSE_LOAD_FAILED:
		return ("load_failed");
	case REFUSE_NOT_ENOUGH_MEMORY:
		return ("not_enough_memory");
	case REFUSE_STOPPING:
		return ("stopping");
	case REFUSE_UNKNOWN_MODEL:
		return ("unknown_model");
	case REFUSE_QUEUE_FULL:
		return ("queue_full");
	case REFUSE_QUEUE_TIMEOUT:
		return ("queue_timeout");
	case REFUSE_MODEL_BUSY:
		return ("model_busy");
	default:
		return (NULL);
	}
}

const char *
proto_need_from_name(int32_t from)
{
	switch (from) {
	case NEED_CONFIGURED:
		return ("configured");
	case NEED_FILE:
		return ("file");
	case NEED_DIRECTORY:
		return ("directory");
	case NEED_HF_CACHE:
		return ("hf-cache");
	case NEED_HEADROOM:
		return ("headroom");
	default:
		return (NULL);
	}
}
