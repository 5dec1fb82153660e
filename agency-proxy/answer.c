/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The front door's own answers: whole answers put together and written
 * to a client connection, JSON answers, errors in the shape of the
 * route's family (OpenAI's, or Anthropic's on its routes), redirects,
 * the answers to requests that could not be read, the status line's
 * reason phrases, and the access-log line.  http.c, status.c, events.c
 * and relay.c answer through it.  The one table of statuses
 * holds each status's reason phrase and, for the statuses conn.c refuses
 * a request with, the error's code and message.
 *
 * Calls: conn.c (to write), buf.c, common/log.c.
 */
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "log.h"
#include "proxy.h"
#include "routes.h"

/*
 * Every status the front door answers with itself.  code and message:
 * the error of a request refused unread (conn.c, through http.c's
 * handler), NULL for a status that is never that.
 */
static const struct status {
	int		 status;
	const char	*reason;
	const char	*code;
	const char	*message;
} statuses[] = {
	{ 200, "OK", NULL, NULL },
	{ 202, "Accepted", NULL, NULL },
	{ 204, "No Content", NULL, NULL },
	{ 304, "Not Modified", NULL, NULL },
	{ 308, "Permanent Redirect", NULL, NULL },
	{ 400, "Bad Request", "invalid_request",
	    "The request is not valid HTTP/1.1." },
	{ 401, "Unauthorized", NULL, NULL },
	{ 403, "Forbidden", NULL, NULL },
	{ 404, "Not Found", NULL, NULL },
	{ 405, "Method Not Allowed", NULL, NULL },
	{ 408, "Request Timeout", "body_timeout",
	    "The request body did not arrive in time." },
	{ 413, "Payload Too Large", "body_too_large",
	    "The request body is too large." },
	{ 414, "URI Too Long", NULL, NULL },
	{ 415, "Unsupported Media Type", NULL, NULL },
	{ 429, "Too Many Requests", NULL, NULL },
	{ 431, "Request Header Fields Too Large", "header_too_large",
	    "The request header is too large." },
	{ 499, "Client Closed Request", NULL, NULL },
	{ 500, "Internal Server Error", NULL, NULL },
	{ 501, "Not Implemented", "not_implemented",
	    "That Transfer-Encoding is not supported." },
	{ 502, "Bad Gateway", NULL, NULL },
	{ 503, "Service Unavailable", "server_busy",
	    "The front door holds as many requests as it may; try "
	    "again." },
	{ 504, "Gateway Timeout", NULL, NULL },
	{ 505, "HTTP Version Not Supported", "version_not_supported",
	    "Only HTTP/1.0 and HTTP/1.1 are served here." },
};

static const struct status *
status_find(int status)
{
	size_t	 i;

	for (i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].status == status)
			return (&statuses[i]);
	return (NULL);
}

static const char *
reason(int status)
{
	const struct status	*st;

	if ((st = status_find(status)) != NULL)
		return (st->reason);
	return (status < 400 ? "OK" : "Error");
}

const char *
answer_error_type(int status)
{
	if (status >= 500)
		return ("server_error");
	/* as OpenAI's own answer to a wrong key */
	if (status == 401)
		return ("invalid_request_error");
	if (status == 403)
		return ("permission_error");
	if (status == 404)
		return ("not_found_error");
	if (status == 429)
		return ("rate_limit_error");
	return ("invalid_request_error");
}

/*
 * Anthropic's error type for a status: its own list, invalid_request_error
 * for the other statuses of a request refused (400, 405, 408, 414, 415,
 * 431 ...), and api_error for any other failure of ours.
 */
static const char *
anthropic_type(int status)
{
	static const struct {
		int		 status;
		const char	*type;
	} types[] = {
		{ 401, "authentication_error" },
		{ 403, "permission_error" },
		{ 404, "not_found_error" },
		{ 413, "request_too_large" },
		{ 429, "rate_limit_error" },
		{ 503, "overloaded_error" },
	};
	size_t	 i;

	for (i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].status == status)
			return (types[i].type);
	return (status >= 400 && status < 500 && status != 499 ?
	    "invalid_request_error" : "api_error");
}

/* The answer's bytes are put together here, then written at once. */
static struct buf	 hb;

static void
h_add(const void *p, size_t n)
{
	if (buf_add(&hb, p, n, 4096) == -1)
		fatal("%s", __func__);
}

/*
 * The CORS fields of an answer to a request of a listed origin (see
 * access.c): that origin alone, never "*" and never credentials, and
 * Vary, since another origin gets another answer.
 */
size_t
answer_cors(const struct hreq *r, char *buf, size_t size)
{
	int	n;

	if (r->cors[0] == '\0') {
		buf[0] = '\0';
		return (0);
	}
	n = snprintf(buf, size, "Access-Control-Allow-Origin: %s\r\n"
	    "Vary: Origin\r\n", r->cors);
	if (n < 0 || (size_t)n >= size)
		fatalx("%s: too long", __func__);
	return (n);
}

/* A whole answer, in two parts; then the connection reads on, or
 * closes.  xhdr: header lines of its own, each ending in CRLF, or "". */
static void
answer(struct hreq *r, int status, const char *ctype, const char *xhdr,
    const char *a, size_t alen, const char *b, size_t blen)
{
	char	 head[AGENCY_PATH_MAX + 2048], cors[AGENCY_ORIGIN_MAX + 64];
	int	 n;

	(void)answer_cors(r, cors, sizeof(cors));
	n = snprintf(head, sizeof(head), "HTTP/1.%d %d %s\r\n"
	    "Content-Type: %s\r\nContent-Length: %zu\r\n%s%s%s\r\n",
	    r->minor >= 1 ? 1 : 0, status, reason(status), ctype, alen + blen,
	    xhdr, cors, !r->keepalive ? "Connection: close\r\n" :
	    r->minor == 0 ? "Connection: keep-alive\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(head))
		fatalx("%s: header too long", __func__);
	hb.len = 0;
	h_add(head, n);
	if (!r->head) {
		h_add(a, alen);
		h_add(b, blen);
	}
	(void)conn_write(r->conn, hb.b, hb.len);
	buf_release(&hb, 65536);
	conn_done(r->conn, 1);
}

void
answer_reply(struct hreq *r, int status, const char *ctype,
    const char *body, size_t len)
{
	answer(r, status, ctype, "", body, len, NULL, 0);
}

/* The answer to a CORS preflight that access.c granted: 204, the
 * route's method, the header fields allowed, how long to keep it. */
void
answer_preflight(struct hreq *r, const char *method, const char *headers)
{
	char	 head[2048], cors[AGENCY_ORIGIN_MAX + 64];
	int	 n;

	(void)answer_cors(r, cors, sizeof(cors));
	n = snprintf(head, sizeof(head), "HTTP/1.%d 204 No Content\r\n%s"
	    "Access-Control-Allow-Methods: %s\r\n"
	    "Access-Control-Allow-Headers: %s\r\n"
	    "Access-Control-Max-Age: %d\r\n%s\r\n",
	    r->minor >= 1 ? 1 : 0, cors, method, headers, CORS_MAX_AGE,
	    !r->keepalive ? "Connection: close\r\n" :
	    r->minor == 0 ? "Connection: keep-alive\r\n" : "");
	if (n < 0 || (size_t)n >= sizeof(head))
		fatalx("%s: header too long", __func__);
	(void)conn_write(r->conn, head, n);
	conn_done(r->conn, 1);
}

/* An answer with header lines of its own (xhdr: each ending in CRLF). */
void
answer_headers(struct hreq *r, int status, const char *ctype,
    const char *xhdr, const void *body, size_t len)
{
	answer(r, status, ctype, xhdr, body, len, NULL, 0);
}

static void
json_answer(struct hreq *r, int status, const char *xhdr, json_object *obj)
{
	const char	*s;

	s = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	answer(r, status, "application/json", xhdr, s, strlen(s), "\n", 1);
}

void
answer_json(struct hreq *r, int status, json_object *obj)
{
	json_answer(r, status, "", obj);
}

/*
 * An error in the shape of a route family (enum route_family): OpenAI's,
 * {"error":{"message","type","code"}}, or Anthropic's,
 * {"type":"error","error":{"type","message"}}.  The caller's to put.
 */
json_object *
answer_error_object_as(int family, int status, const char *code,
    const char *message)
{
	json_object	*obj, *err;

	obj = json_object_new_object();
	err = json_object_new_object();
	if (family == FAMILY_ANTHROPIC) {
		json_object_object_add(obj, "type",
		    json_object_new_string("error"));
		json_object_object_add(err, "type",
		    json_object_new_string(anthropic_type(status)));
		json_object_object_add(err, "message",
		    json_object_new_string(message));
	} else {
		json_object_object_add(err, "message",
		    json_object_new_string(message));
		json_object_object_add(err, "type",
		    json_object_new_string(answer_error_type(status)));
		json_object_object_add(err, "code",
		    json_object_new_string(code));
	}
	json_object_object_add(obj, "error", err);
	return (obj);
}

json_object *
answer_error_object(int status, const char *code, const char *message)
{
	return (answer_error_object_as(FAMILY_OPENAI, status, code,
	    message));
}

void
answer_error(struct hreq *r, int status, const char *code,
    const char *message)
{
	answer_error_retry(r, status, code, message, 0);
}

/* An error in the OpenAI shape with a Retry-After of seconds (0: none). */
void
answer_error_retry(struct hreq *r, int status, const char *code,
    const char *message, int retry_after)
{
	answer_error_as(r, FAMILY_OPENAI, status, code, message,
	    retry_after);
}

/* An error in the shape of a family, with a Retry-After (0: none). */
void
answer_error_as(struct hreq *r, int family, int status, const char *code,
    const char *message, int retry_after)
{
	json_object	*obj;
	char		 xhdr[40] = "";

	obj = answer_error_object_as(family, status, code, message);
	if (retry_after > 0)
		(void)snprintf(xhdr, sizeof(xhdr), "Retry-After: %d\r\n",
		    retry_after);
	else if (status == 401)
		(void)strlcpy(xhdr, "WWW-Authenticate: Bearer\r\n",
		    sizeof(xhdr));
	json_answer(r, status, xhdr, obj);
	json_object_put(obj);
}

/* A redirect to location (a path of the front door's), empty bodied. */
void
answer_redirect(struct hreq *r, int status, const char *location)
{
	char	 xhdr[AGENCY_PATH_MAX + 16];

	if ((size_t)snprintf(xhdr, sizeof(xhdr), "Location: %s\r\n",
	    location) >= sizeof(xhdr))
		fatalx("%s: location too long", __func__);
	answer(r, status, "text/plain", xhdr, "", 0, NULL, 0);
}

/*
 * A request that could not be read, refused with a status of the
 * table's (any other is taken for 400) in the shape of its route's
 * errors when its header said the route, and the connection closed
 * after it.  Returns the status answered.
 */
int
answer_refused(struct hreq *r, int status)
{
	const struct status	*st;

	if ((st = status_find(status)) == NULL || st->code == NULL)
		st = status_find(400);
	r->keepalive = 0;
	answer_error_as(r, r->family, st->status, st->code, st->message, 0);
	return (st->status);
}

/* The access-log line of a request; tokens < 0: not reported.  who:
 * its key and user (access_who), or NULL; never a secret. */
void
answer_log(const char *method, const char *path, const char *model,
    int status, int64_t ms, int64_t ptok, int64_t ctok, const char *who)
{
	answer_log_end(method, path, model, status, ms, -1, ptok, ctok,
	    END_DONE, who);
}

/*
 * The same, for a model request: "waited Nms" after the duration when
 * waited >= 0, how long it waited for its model (its hold's answer, or
 * until it left); how it ended when otherwise than its answer (enum
 * req_end); who it was, last: "POST /v1/chat/completions qwen 499 812ms
 * waited 790ms (client left) key=alice".
 */
void
answer_log_end(const char *method, const char *path, const char *model,
    int status, int64_t ms, int64_t waited, int64_t ptok, int64_t ctok,
    int end, const char *who)
{
	char		 w[40], tokens[64];
	const char	*how, *sp = who != NULL && who[0] != '\0' ? " " : "";

	switch (end) {
	case END_CLIENT_LEFT:
		how = " (client left)";
		break;
	case END_CANCELLED:
		how = " (cancelled)";
		break;
	case END_CUT:
		how = " (cut mid-answer)";
		break;
	case END_STOPPED:
		how = " (ended by the shutdown)";
		break;
	case END_DONE:
	default:
		how = "";
		break;
	}
	if (who == NULL)
		who = "";
	w[0] = '\0';
	if (waited >= 0)
		(void)snprintf(w, sizeof(w), " waited %lldms",
		    (long long)waited);
	tokens[0] = '\0';
	if (ptok >= 0 && ctok >= 0)
		(void)snprintf(tokens, sizeof(tokens), " %lld->%lld tokens",
		    (long long)ptok, (long long)ctok);
	log_info("%s %s %s %d %lldms%s%s%s%s%s", method, path, model,
	    status, (long long)ms, w, tokens, how, sp, who);
}
