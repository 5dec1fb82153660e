/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A model's status record as JSON, shared by agency-ctl and agency-proxy
 * so that one parser reads what either prints.  Times are ms since the
 * epoch, durations ms; what is unknown or does not apply is null.
 *
 * Calls: proto.c.
 */
#include <json.h>
#include <stdint.h>

#include "proto.h"
#include "status_json.h"

static json_object *
ms_or_null(int64_t v)
{
	return (v < 0 ? NULL : json_object_new_int64(v));
}

json_object *
status_json(const struct proto_status *st, json_object *aliases)
{
	json_object	*o, *h;
	const char	*from, *wait;
	uint32_t	 i;

	if ((o = json_object_new_object()) == NULL ||
	    (h = json_object_new_array()) == NULL) {
		json_object_put(o);
		json_object_put(aliases);
		return (NULL);
	}
	if (aliases == NULL && (aliases = json_object_new_array()) == NULL) {
		json_object_put(o);
		json_object_put(h);
		return (NULL);
	}
	json_object_object_add(o, "model", json_object_new_string(st->model));
	json_object_object_add(o, "runtime",
	    json_object_new_string(st->runtime));
	json_object_object_add(o, "state",
	    json_object_new_string(proto_state_name_or(st->state)));
	json_object_object_add(o, "error", st->error[0] == '\0' ? NULL :
	    json_object_new_string(st->error));
	json_object_object_add(o, "requestsInProgress",
	    json_object_new_int64(st->in_progress));
	json_object_object_add(o, "lastUsedAt", ms_or_null(st->last_used));
	json_object_object_add(o, "lazy", json_object_new_boolean(st->lazy));
	json_object_object_add(o, "pid", st->pid > 0 ?
	    json_object_new_int64(st->pid) : NULL);
	json_object_object_add(o, "port", st->port > 0 ?
	    json_object_new_int64(st->port) : NULL);
	json_object_object_add(o, "need", json_object_new_int64(st->need));
	from = proto_need_from_name(st->need_from);
	json_object_object_add(o, "needFrom", from == NULL ? NULL :
	    json_object_new_string(from));
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
	json_object_object_add(o, "loadedAt", ms_or_null(st->loaded_at));
	json_object_object_add(o, "queued", json_object_new_int64(st->queued));
	json_object_object_add(o, "oldestWaitMs", ms_or_null(st->oldest_wait));
	wait = st->waiting == WAIT_NONE ? NULL : proto_wait_name(st->waiting);
	json_object_object_add(o, "waitingFor", wait == NULL ? NULL :
	    json_object_new_string(wait));
	json_object_object_add(o, "maxRequests", st->max_requests > 0 ?
	    json_object_new_int64(st->max_requests) : NULL);
	json_object_object_add(o, "aliases", aliases);
	json_object_object_add(o, "idleTimeoutMs", st->idle_timeout > 0 ?
	    json_object_new_int64(st->idle_timeout) : NULL);
	json_object_object_add(o, "fairnessWindowMs", st->fairness > 0 ?
	    json_object_new_int64(st->fairness) : NULL);
	json_object_object_add(o, "idleStopAt", ms_or_null(st->idle_stop_at));
	json_object_object_add(o, "restartAt", ms_or_null(st->restart_at));
	for (i = 0; i < st->nload_ms && i < PROTO_LOAD_HISTORY; i++)
		json_object_array_add(h, json_object_new_int64(st->load_ms[i]));
	json_object_object_add(o, "loadHistory", h);
	return (o);
}

/* The memory the models are measured against (struct proto_memory). */
json_object *
status_memory_json(const struct proto_memory *pm)
{
	json_object	*o;

	if ((o = json_object_new_object()) == NULL)
		return (NULL);
	json_object_object_add(o, "inUse", json_object_new_int64(pm->in_use));
	json_object_object_add(o, "budget", pm->budget > 0 ?
	    json_object_new_int64(pm->budget) : NULL);
	json_object_object_add(o, "available", ms_or_null(pm->available));
	json_object_object_add(o, "total", ms_or_null(pm->total));
	json_object_object_add(o, "reserve", ms_or_null(pm->reserve));
	return (o);
}
