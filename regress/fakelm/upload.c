/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * fakelm's uploads: a multipart/form-data body (RFC 7578) posted to
 * /v1/audio/transcriptions, /v1/audio/translations, /v1/images/edits or
 * whisper-server's /inference is answered with what arrived, so that a
 * test can tell the bytes came through intact: the size and cksum(1)
 * digest of the whole body and of each file, and the value of each
 * other field.  A form that is not well formed is a 400 that says why.
 *
 * The reading is fakelm's own, strict, and shares nothing with agency's,
 * so that the two check each other: CRLF line ends, a body that starts
 * with its first delimiter and ends with the last one (and at most a
 * CRLF), parts with a Content-Disposition of form-data and a name.
 */

#include <sys/types.h>

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <json-c/json.h>

#include "fakelm.h"
#include "../tools/cksum.h"

#define BOUNDARY_MAX	70	/* RFC 2046 */
#define PARAM_MAX	1024

struct form {
	struct json_object	*fields;	/* name: value */
	struct json_object	*files;		/* [{name, filename, ...}] */
	const char		*model;		/* in fields */
	const char		*format;	/* response_format */
};

/* The value of parameter name of a header field's value, unquoted. */
static int
param(const char *v, const char *name, char *out, size_t size)
{
	size_t		 n = strlen(name), o;
	const char	*p = v;

	while ((p = strchr(p, ';')) != NULL) {
		p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncasecmp(p, name, n) != 0 || p[n] != '=')
			continue;
		p += n + 1;
		o = 0;
		if (*p == '"') {
			for (p++; *p != '"'; p++) {
				if (*p == '\\' && p[1] != '\0')
					p++;
				if (*p == '\0' || o + 1 >= size)
					return (-1);
				out[o++] = *p;
			}
		} else
			while (*p != '\0' && *p != ';' && *p != ' ' &&
			    *p != '\t') {
				if (o + 1 >= size)
					return (-1);
				out[o++] = *p++;
			}
		out[o] = '\0';
		return (0);
	}
	return (-1);
}

static const char *
find(const char *p, const char *end, const char *s, size_t n)
{
	return (memmem(p, end - p, s, n));
}

/*
 * One part's header lines, from p up to the empty line; sets the name,
 * the filename (or "" with *file 0) and the type; returns where the
 * data begins, or NULL with *err.
 */
static const char *
part_head(const char *p, const char *end, char *name, char *filename,
    char *type, int *file, const char **err)
{
	char		 line[PARAM_MAX];
	const char	*eol;
	size_t		 n;
	int		 disposition = 0;

	*file = 0;
	type[0] = '\0';
	for (;;) {
		if ((eol = find(p, end, "\r\n", 2)) == NULL) {
			*err = "a part's header does not end";
			return (NULL);
		}
		if (eol == p)
			break;
		if ((n = eol - p) >= sizeof(line)) {
			*err = "a part's header line is too long";
			return (NULL);
		}
		memcpy(line, p, n);
		line[n] = '\0';
		p = eol + 2;
		if (strncasecmp(line, "Content-Disposition:", 20) == 0) {
			if (strncasecmp(line + 20 + strspn(line + 20, " \t"),
			    "form-data", 9) != 0 ||
			    param(line, "name", name, PARAM_MAX) == -1) {
				*err = "a part is not form-data with a name";
				return (NULL);
			}
			if (param(line, "filename", filename, PARAM_MAX) == 0)
				*file = 1;
			disposition = 1;
		} else if (strncasecmp(line, "Content-Type:", 13) == 0)
			(void)strlcpy(type, line + 13 + strspn(line + 13,
			    " \t"), PARAM_MAX);
		else if (strchr(line, ':') == NULL) {
			*err = "a part's header line is not a field";
			return (NULL);
		}
	}
	if (!disposition) {
		*err = "a part has no Content-Disposition";
		return (NULL);
	}
	return (p + 2);
}

/* A part into the form; -1 with *err when it cannot be. */
static int
form_add(struct form *f, const char *name, const char *filename,
    const char *type, int file, const char *data, size_t len,
    const char **err)
{
	struct json_object	*o, *v, *a;
	struct cksum		 ck;
	char			 sum[CKSUM_STR];

	if (file) {
		cksum_init(&ck);
		cksum_add(&ck, data, len);
		o = json_object_new_object();
		json_object_object_add(o, "name",
		    json_object_new_string(name));
		json_object_object_add(o, "filename",
		    json_object_new_string(filename));
		json_object_object_add(o, "content_type",
		    json_object_new_string(type));
		json_object_object_add(o, "size",
		    json_object_new_int64((int64_t)len));
		json_object_object_add(o, "cksum",
		    json_object_new_string(cksum_str(&ck, sum)));
		json_object_array_add(f->files, o);
		return (0);
	}
	if (memchr(data, '\0', len) != NULL) {
		*err = "a field's value holds a NUL";
		return (-1);
	}
	v = json_object_new_string_len(data, (int)len);
	if (json_object_object_get_ex(f->fields, name, &o)) {
		/* a field given more than once: its values in order */
		if (!json_object_is_type(o, json_type_array)) {
			a = json_object_new_array();
			json_object_array_add(a, json_object_get(o));
			json_object_object_add(f->fields, name, a);
			o = a;
		}
		json_object_array_add(o, v);
		return (0);
	}
	json_object_object_add(f->fields, name, v);
	if (strcmp(name, "model") == 0)
		f->model = json_object_get_string(v);
	else if (strcmp(name, "response_format") == 0)
		f->format = json_object_get_string(v);
	return (0);
}

/* Read body (len bytes) as a form with boundary b; -1 with *err. */
static int
form_read(struct form *f, const char *body, size_t len, const char *b,
    const char **err)
{
	const char	*p = body, *end = body + len, *data, *next;
	char		 delim[BOUNDARY_MAX + 5];
	char		 name[PARAM_MAX], filename[PARAM_MAX], type[PARAM_MAX];
	size_t		 dlen;
	int		 file;

	/* "\r\n--" b: the first one is at the very start, without CRLF */
	dlen = (size_t)snprintf(delim, sizeof(delim), "\r\n--%s", b);
	if (len < dlen - 2 || memcmp(p, delim + 2, dlen - 2) != 0) {
		*err = "the body does not start with the boundary";
		return (-1);
	}
	p += dlen - 2;
	for (;;) {
		if (end - p >= 2 && memcmp(p, "--", 2) == 0) {
			p += 2;
			if (p == end || (end - p == 2 &&
			    memcmp(p, "\r\n", 2) == 0))
				return (0);
			*err = "bytes after the closing boundary";
			return (-1);
		}
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end - p < 2 || memcmp(p, "\r\n", 2) != 0) {
			*err = "a boundary line does not end in CRLF";
			return (-1);
		}
		p += 2;
		if ((data = part_head(p, end, name, filename, type, &file,
		    err)) == NULL)
			return (-1);
		if ((next = find(data, end, delim, dlen)) == NULL) {
			*err = "a part does not end with the boundary";
			return (-1);
		}
		if (form_add(f, name, filename, type, file, data,
		    next - data, err) == -1)
			return (-1);
		p = next + dlen;
	}
}

void
upload(struct evhttp_request *req, const char *path)
{
	struct evkeyvalq	*in = evhttp_request_get_input_headers(req);
	struct evbuffer		*buf = evhttp_request_get_input_buffer(req);
	struct json_object	*obj, *mj, *body;
	struct form		 f;
	struct cksum		 ck;
	const char		*ct, *err = NULL, *model;
	const char		*s;
	char			 b[PARAM_MAX], sum[CKSUM_STR], text[96];
	size_t			 len = evbuffer_get_length(buf);

	memset(&f, 0, sizeof(f));
	ct = evhttp_find_header(in, "Content-Type");
	if (ct == NULL || strncasecmp(ct, "multipart/form-data", 19) != 0) {
		reply_error(req, 415, path, NULL, "invalid_request_error",
		    "%s takes multipart/form-data", path);
		return;
	}
	if (param(ct, "boundary", b, sizeof(b)) == -1 || b[0] == '\0' ||
	    strlen(b) > BOUNDARY_MAX) {
		reply_error(req, 400, path, NULL, "invalid_request_error",
		    "the Content-Type has no boundary of 1 to %d characters",
		    BOUNDARY_MAX);
		return;
	}
	s = len == 0 ? "" : (const char *)evbuffer_pullup(buf, -1);
	f.fields = json_object_new_object();
	f.files = json_object_new_array();
	if (form_read(&f, s, len, b, &err) == -1) {
		reply_error(req, 400, path, NULL, "invalid_request_error",
		    "malformed multipart body: %s", err);
		goto done;
	}
	/* the model's check of a JSON body, on a body of the model alone */
	body = json_object_new_object();
	if (f.model != NULL)
		json_object_object_add(body, "model",
		    json_object_new_string(f.model));
	if (check_model(req, path, body, &model) == -1) {
		json_object_put(body);
		goto done;
	}
	mj = json_object_new_string(model != NULL ? model : "-");
	json_object_put(body);

	cksum_init(&ck);
	cksum_add(&ck, s, len);
	(void)snprintf(text, sizeof(text), "fakelm heard %zu bytes in %zu "
	    "files", len, json_object_array_length(f.files));
	if (f.format != NULL && strcmp(f.format, "text") == 0) {
		log_request("POST", path, json_object_get_string(mj), 200, 0,
		    0);
		evbuffer_add_printf(evhttp_request_get_output_buffer(req),
		    "%s\n", text);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Type", "text/plain; charset=utf-8");
		evhttp_send_reply(req, 200, "OK", NULL);
		json_object_put(mj);
		goto done;
	}
	obj = json_object_new_object();
	json_object_object_add(obj, "text", json_object_new_string(text));
	json_object_object_add(obj, "model", json_object_new_string(
	    answer_model(f.model)));
	json_object_object_add(obj, "size", json_object_new_int64(
	    (int64_t)len));
	json_object_object_add(obj, "cksum", json_object_new_string(
	    cksum_str(&ck, sum)));
	json_object_object_add(obj, "fields", json_object_get(f.fields));
	json_object_object_add(obj, "files", json_object_get(f.files));
	reply_json(req, 200, obj, path, json_object_get_string(mj), 0);
	json_object_put(mj);
 done:
	json_object_put(f.fields);
	json_object_put(f.files);
}
