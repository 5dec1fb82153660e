/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
#ifndef AGENCY_HTTP_METHOD_H
#define AGENCY_HTTP_METHOD_H

struct evhttp_request;

/* The request's method as it goes into a log line ("OTHER" if unknown). */
const char	*http_method_name(struct evhttp_request *);

#endif /* AGENCY_HTTP_METHOD_H */
