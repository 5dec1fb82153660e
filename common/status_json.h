/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
#ifndef AGENCY_STATUS_JSON_H
#define AGENCY_STATUS_JSON_H

#include <json.h>

#include "proto.h"

/*
 * A model's record as JSON, the one shape of agency-ctl status -j, of
 * GET /v1/agency/status and of the events stream: st's fields, and
 * aliases (an array of strings, taken over; NULL: none).  NULL when
 * out of memory.
 */
json_object	*status_json(const struct proto_status *, json_object *);
/* The memory, the same way: {"inUse", "budget", "available", "total",
 * "reserve"}, bytes, null where unknown (or no budget). */
json_object	*status_memory_json(const struct proto_memory *);

#endif /* AGENCY_STATUS_JSON_H */
