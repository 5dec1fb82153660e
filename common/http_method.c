/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Calls: none.
 */
/* Method names for log lines, shared by the front door and fakelm. */
#include <event2/http.h>

#include "http_method.h"

const char *
http_method_name(struct evhttp_request *req)
{
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET:
		return ("GET");
	case EVHTTP_REQ_POST:
		return ("POST");
	case EVHTTP_REQ_HEAD:
		return ("HEAD");
	case EVHTTP_REQ_PUT:
		return ("PUT");
	case EVHTTP_REQ_DELETE:
		return ("DELETE");
	case EVHTTP_REQ_OPTIONS:
		return ("OPTIONS");
	case EVHTTP_REQ_TRACE:
		return ("TRACE");
	case EVHTTP_REQ_CONNECT:
		return ("CONNECT");
	case EVHTTP_REQ_PATCH:
		return ("PATCH");
	default:
		return ("OTHER");
	}
}
