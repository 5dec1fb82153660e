/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * fakelm's other APIs, in the shapes their official clients read:
 * Anthropic's Messages (POST /v1/messages, streamed as Anthropic's
 * events, and /v1/messages/count_tokens), OpenAI's Responses (POST
 * /v1/responses, streamed as its events, and /v1/responses/input_tokens),
 * and rerank (/v1/rerank, /v1/reranking, /rerank, as llama-server has
 * them).  Answers are generated as chat's are (serve.c): the words of
 * the last user message, then tokN, a token a step, so --token-ms,
 * --stops-on-close and a client's leaving work alike.
 */

#include <sys/types.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <json-c/json.h>

#include "http_method.h"
#include "fakelm.h"

static void	messages(struct evhttp_request *, const char *);
static void	count_tokens(struct evhttp_request *, const char *);
static void	responses(struct evhttp_request *, const char *);
static void	input_tokens(struct evhttp_request *, const char *);
static void	rerank(struct evhttp_request *, const char *);

static const struct {
	const char	*path;
	void		(*fn)(struct evhttp_request *, const char *);
} routes[] = {
	{ "/v1/messages",		messages },
	{ "/v1/messages/count_tokens",	count_tokens },
	{ "/v1/responses",		responses },
	{ "/v1/responses/input_tokens",	input_tokens },
	{ "/v1/rerank",			rerank },
	{ "/v1/reranking",		rerank },
	{ "/rerank",			rerank },
	{ "/v1/audio/transcriptions",	upload },
	{ "/v1/audio/translations",	upload },
	{ "/v1/images/edits",		upload },
	{ "/inference",			upload },	/* whisper-server's */
};

/* The text of a prompt: all of it (counted), and what is echoed. */
struct prompt {
	struct evbuffer	*all;
	struct evbuffer	*last;
};

static void	prompt_init(struct prompt *);
static void	prompt_free(struct prompt *);
static long long prompt_count(struct prompt *);
static const char *prompt_echo(struct prompt *);

/* Whether a request for path gets Anthropic's shapes, errors included. */
int
apis_anthropic(const char *path)
{
	return (strcmp(path, "/v1/messages") == 0 ||
	    strncmp(path, "/v1/messages/", 13) == 0);
}

/* Anthropic's error type for a status. */
const char *
apis_error_type(int code)
{
	switch (code) {
	case 401:
		return ("authentication_error");
	case 403:
		return ("permission_error");
	case 404:
		return ("not_found_error");
	case 413:
		return ("request_too_large");
	case 429:
		return ("rate_limit_error");
	case 503:
	case 529:
		return ("overloaded_error");
	default:
		return (code >= 500 ? "api_error" : "invalid_request_error");
	}
}

/*
 * GET /redirect?to=WHERE: 302 to WHERE, as a server's own page may
 * redirect (for agency's passthrough, which must keep it under its
 * prefix).
 */
static void
redirect(struct evhttp_request *req, const char *path)
{
	const struct evhttp_uri	*uri = evhttp_request_get_evhttp_uri(req);
	const char		*q = uri != NULL ? evhttp_uri_get_query(uri) :
				    NULL;

	if (q == NULL || strncmp(q, "to=", 3) != 0 || q[3] == '\0') {
		reply_error(req, 400, path, NULL, "invalid_request_error",
		    "/redirect wants ?to=WHERE");
		return;
	}
	evhttp_add_header(evhttp_request_get_output_headers(req), "Location",
	    q + 3);
	log_request(http_method_name(req), path, NULL, 302, 0, 0);
	evhttp_send_reply(req, 302, "Found", NULL);
}

/* Answers a request for one of these routes and returns 1, else 0. */
int
apis_route(struct evhttp_request *req, const char *path)
{
	size_t	 i;

	if (strcmp(path, "/redirect") == 0) {
		redirect(req, path);
		return (1);
	}

	for (i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		if (strcmp(path, routes[i].path) != 0)
			continue;
		if (evhttp_request_get_command(req) != EVHTTP_REQ_POST)
			reply_error(req, 405, path, NULL,
			    "invalid_request_error",
			    "Method %s not allowed on %s",
			    http_method_name(req), path);
		else
			routes[i].fn(req, path);
		return (1);
	}
	return (0);
}

static void
prompt_init(struct prompt *p)
{
	if ((p->all = evbuffer_new()) == NULL ||
	    (p->last = evbuffer_new()) == NULL)
		oom();
}

static void
prompt_free(struct prompt *p)
{
	evbuffer_free(p->all);
	evbuffer_free(p->last);
}

static long long
prompt_count(struct prompt *p)
{
	evbuffer_add(p->all, "", 1);
	return (count_words((const char *)evbuffer_pullup(p->all, -1)));
}

static const char *
prompt_echo(struct prompt *p)
{
	evbuffer_add(p->last, "", 1);
	return ((const char *)evbuffer_pullup(p->last, -1));
}

static int
is_user(struct json_object *msg)
{
	struct json_object	*role;

	return (json_object_object_get_ex(msg, "role", &role) &&
	    json_object_is_type(role, json_type_string) &&
	    strcmp(json_object_get_string(role), "user") == 0);
}

/*
 * Anthropic's system and messages into p, or -1 after answering 400.
 * A content is a string or blocks, of which the text blocks count.
 */
static int
anthropic_prompt(struct evhttp_request *req, const char *path,
    const char *model, struct json_object *body, struct prompt *p)
{
	struct json_object	*msgs, *m, *content;
	size_t			 i, n;

	if (json_object_object_get_ex(body, "system", &content))
		content_text(content, p->all);
	if (!json_object_object_get_ex(body, "messages", &msgs) ||
	    !json_object_is_type(msgs, json_type_array)) {
		reply_error(req, 400, path, model, "invalid_request_error",
		    "messages: Field required, an array");
		return (-1);
	}
	n = json_object_array_length(msgs);
	for (i = 0; i < n; i++) {
		m = json_object_array_get_idx(msgs, i);
		if (!json_object_object_get_ex(m, "content", &content))
			continue;
		content_text(content, p->all);
		if (is_user(m)) {
			evbuffer_drain(p->last, evbuffer_get_length(p->last));
			content_text(content, p->last);
		}
	}
	return (0);
}

/*
 * The anthropic-* request headers, echoed as X-Fakelm-Anthropic-*; with
 * --anthropic-strict, no anthropic-version is a 400 (and -1), as the
 * Anthropic API answers.
 */
static int
anthropic_headers(struct evhttp_request *req, const char *path)
{
	struct evkeyvalq	*in = evhttp_request_get_input_headers(req);
	struct evkeyvalq	*out = evhttp_request_get_output_headers(req);
	const char		*v;

	if ((v = evhttp_find_header(in, "anthropic-version")) != NULL)
		evhttp_add_header(out, "X-Fakelm-Anthropic-Version", v);
	else if (conf.anthropic_strict) {
		reply_error(req, 400, path, NULL, "invalid_request_error",
		    "anthropic-version: header is required");
		return (-1);
	}
	if ((v = evhttp_find_header(in, "anthropic-beta")) != NULL)
		evhttp_add_header(out, "X-Fakelm-Anthropic-Beta", v);
	return (0);
}

static struct json_object *
jstr(const char *s)
{
	return (json_object_new_string(s));
}

/* A Message: with its text (NULL: none yet, as message_start has it). */
static struct json_object *
message_object(struct gen *g, const char *text)
{
	struct json_object	*obj, *content, *block, *usage;

	obj = json_object_new_object();
	json_object_object_add(obj, "id", jstr(g->id));
	json_object_object_add(obj, "type", jstr("message"));
	json_object_object_add(obj, "role", jstr("assistant"));
	json_object_object_add(obj, "model", jstr(answer_model(g->model)));
	content = json_object_new_array();
	if (text != NULL) {
		block = json_object_new_object();
		json_object_object_add(block, "type", jstr("text"));
		json_object_object_add(block, "text", jstr(text));
		json_object_array_add(content, block);
	}
	json_object_object_add(obj, "content", content);
	json_object_object_add(obj, "stop_reason", text == NULL ? NULL :
	    jstr(g->limited ? "max_tokens" : "end_turn"));
	json_object_object_add(obj, "stop_sequence", NULL);
	usage = json_object_new_object();
	json_object_object_add(usage, "input_tokens",
	    json_object_new_int64(g->prompt_tokens));
	json_object_object_add(usage, "output_tokens",
	    json_object_new_int64(text == NULL ? 0 : (int64_t)g->sent));
	json_object_object_add(obj, "usage", usage);
	return (obj);
}

static struct json_object *
typed(const char *type)
{
	struct json_object	*obj = json_object_new_object();

	json_object_object_add(obj, "type", jstr(type));
	return (obj);
}

static void
messages_start(struct gen *g)
{
	struct json_object	*ev, *block;

	ev = typed("message_start");
	json_object_object_add(ev, "message", message_object(g, NULL));
	gen_sse(g, "message_start", ev);
	ev = typed("content_block_start");
	json_object_object_add(ev, "index", json_object_new_int(0));
	block = typed("text");
	json_object_object_add(block, "text", jstr(""));
	json_object_object_add(ev, "content_block", block);
	gen_sse(g, "content_block_start", ev);
	gen_sse(g, "ping", typed("ping"));
}

/* The token's text, also kept in g->text for the end. */
static char *
step_text(struct gen *g)
{
	struct evbuffer	*t;
	char		*s;
	size_t		 len;

	if ((t = evbuffer_new()) == NULL)
		oom();
	gen_token(g, g->sent, t);
	len = evbuffer_get_length(t);
	if ((s = malloc(len + 1)) == NULL)
		oom();
	evbuffer_copyout(t, s, len);
	s[len] = '\0';
	evbuffer_add_buffer(g->text, t);
	evbuffer_free(t);
	return (s);
}

static void
messages_step(struct gen *g)
{
	struct json_object	*ev, *delta;
	char			*s = step_text(g);

	ev = typed("content_block_delta");
	json_object_object_add(ev, "index", json_object_new_int(0));
	delta = typed("text_delta");
	json_object_object_add(delta, "text", jstr(s));
	json_object_object_add(ev, "delta", delta);
	gen_sse(g, "content_block_delta", ev);
	free(s);
}

/* The whole text so far, NUL-terminated. */
static const char *
gen_text(struct gen *g)
{
	evbuffer_add(g->text, "", 1);
	return ((const char *)evbuffer_pullup(g->text, -1));
}

static void
messages_finish(struct gen *g)
{
	struct json_object	*ev, *delta, *usage;

	if (!g->stream) {
		/* frees the request */
		send_json(g->req, 200, message_object(g, gen_text(g)));
		return;
	}
	ev = typed("content_block_stop");
	json_object_object_add(ev, "index", json_object_new_int(0));
	gen_sse(g, "content_block_stop", ev);
	ev = typed("message_delta");
	delta = json_object_new_object();
	json_object_object_add(delta, "stop_reason",
	    jstr(g->limited ? "max_tokens" : "end_turn"));
	json_object_object_add(delta, "stop_sequence", NULL);
	json_object_object_add(ev, "delta", delta);
	usage = json_object_new_object();
	json_object_object_add(usage, "output_tokens",
	    json_object_new_int64((int64_t)g->sent));
	json_object_object_add(ev, "usage", usage);
	gen_sse(g, "message_delta", ev);
	gen_sse(g, "message_stop", typed("message_stop"));
	/* frees the request, also when the client has gone */
	evhttp_send_reply_end(g->req);
}

static const struct gen_api messages_api = {
	messages_start, messages_step, messages_finish
};

static int
stream_of(struct json_object *body)
{
	struct json_object	*v;

	return (json_object_object_get_ex(body, "stream", &v) &&
	    json_object_get_boolean(v));
}

/*
 * The Responses instructions and input into p, or -1 after answering
 * 400.  The input is a string (the user's) or items: messages, whose
 * content counts, and function call outputs, whose output does.
 */
static int
responses_prompt(struct evhttp_request *req, const char *path,
    const char *model, struct json_object *body, struct prompt *p)
{
	struct json_object	*input, *item, *v;
	size_t			 i, n;

	if (json_object_object_get_ex(body, "instructions", &v))
		content_text(v, p->all);
	if (!json_object_object_get_ex(body, "input", &input) ||
	    (!json_object_is_type(input, json_type_string) &&
	    !json_object_is_type(input, json_type_array))) {
		reply_error(req, 400, path, model, "invalid_request_error",
		    "input must be a string or an array of items");
		return (-1);
	}
	if (json_object_is_type(input, json_type_string)) {
		content_text(input, p->all);
		content_text(input, p->last);
		return (0);
	}
	n = json_object_array_length(input);
	for (i = 0; i < n; i++) {
		item = json_object_array_get_idx(input, i);
		if (json_object_object_get_ex(item, "output", &v))
			content_text(v, p->all);
		if (!json_object_object_get_ex(item, "content", &v))
			continue;
		content_text(v, p->all);
		if (is_user(item)) {
			evbuffer_drain(p->last, evbuffer_get_length(p->last));
			content_text(v, p->last);
		}
	}
	return (0);
}

static const char *
response_status(struct gen *g)
{
	return (g->limited ? "incomplete" : "completed");
}

/* The output_text part; text NULL: empty and to come. */
static struct json_object *
output_part(const char *text)
{
	struct json_object	*part = typed("output_text");

	json_object_object_add(part, "text", jstr(text == NULL ? "" : text));
	json_object_object_add(part, "annotations", json_object_new_array());
	return (part);
}

/* The message item; text NULL: in progress, no content yet. */
static struct json_object *
output_item(struct gen *g, const char *text)
{
	struct json_object	*item = typed("message"), *content;

	json_object_object_add(item, "id", jstr(g->item));
	json_object_object_add(item, "status",
	    jstr(text == NULL ? "in_progress" : "completed"));
	json_object_object_add(item, "role", jstr("assistant"));
	content = json_object_new_array();
	if (text != NULL)
		json_object_array_add(content, output_part(text));
	json_object_object_add(item, "content", content);
	return (item);
}

/* A Response: with its text, or (NULL) in progress and empty. */
static struct json_object *
response_object(struct gen *g, const char *text)
{
	struct json_object	*obj, *output, *usage, *why = NULL;

	obj = json_object_new_object();
	json_object_object_add(obj, "id", jstr(g->id));
	json_object_object_add(obj, "object", jstr("response"));
	json_object_object_add(obj, "created_at",
	    json_object_new_int64(g->created));
	json_object_object_add(obj, "status",
	    jstr(text == NULL ? "in_progress" : response_status(g)));
	if (text != NULL && g->limited) {
		why = json_object_new_object();
		json_object_object_add(why, "reason",
		    jstr("max_output_tokens"));
	}
	json_object_object_add(obj, "incomplete_details", why);
	json_object_object_add(obj, "model", jstr(answer_model(g->model)));
	output = json_object_new_array();
	if (text != NULL)
		json_object_array_add(output, output_item(g, text));
	json_object_object_add(obj, "output", output);
	if (text != NULL) {
		usage = json_object_new_object();
		json_object_object_add(usage, "input_tokens",
		    json_object_new_int64(g->prompt_tokens));
		json_object_object_add(usage, "output_tokens",
		    json_object_new_int64((int64_t)g->sent));
		json_object_object_add(usage, "total_tokens",
		    json_object_new_int64(g->prompt_tokens +
		    (int64_t)g->sent));
		json_object_object_add(obj, "usage", usage);
	} else
		json_object_object_add(obj, "usage", NULL);
	return (obj);
}

/* A Responses event of type, numbered; the caller adds to it. */
static struct json_object *
resp_event(struct gen *g, const char *type)
{
	struct json_object	*ev = typed(type);

	json_object_object_add(ev, "sequence_number",
	    json_object_new_int64(g->seqno++));
	return (ev);
}

/* The item, output and content indexes an event about the part has. */
static void
resp_where(struct gen *g, struct json_object *ev, int part)
{
	if (part)
		json_object_object_add(ev, "item_id", jstr(g->item));
	json_object_object_add(ev, "output_index", json_object_new_int(0));
	if (part)
		json_object_object_add(ev, "content_index",
		    json_object_new_int(0));
}

static void
resp_send(struct gen *g, struct json_object *ev)
{
	struct json_object	*type;

	json_object_object_get_ex(ev, "type", &type);
	gen_sse(g, json_object_get_string(type), ev);
}

static void
responses_start(struct gen *g)
{
	struct json_object	*ev;

	ev = resp_event(g, "response.created");
	json_object_object_add(ev, "response", response_object(g, NULL));
	resp_send(g, ev);
	ev = resp_event(g, "response.in_progress");
	json_object_object_add(ev, "response", response_object(g, NULL));
	resp_send(g, ev);
	ev = resp_event(g, "response.output_item.added");
	resp_where(g, ev, 0);
	json_object_object_add(ev, "item", output_item(g, NULL));
	resp_send(g, ev);
	ev = resp_event(g, "response.content_part.added");
	resp_where(g, ev, 1);
	json_object_object_add(ev, "part", output_part(NULL));
	resp_send(g, ev);
}

static void
responses_step(struct gen *g)
{
	struct json_object	*ev;
	char			*s = step_text(g);

	ev = resp_event(g, "response.output_text.delta");
	resp_where(g, ev, 1);
	json_object_object_add(ev, "delta", jstr(s));
	resp_send(g, ev);
	free(s);
}

static void
responses_finish(struct gen *g)
{
	struct json_object	*ev;
	const char		*text = gen_text(g);
	char			 type[64];

	if (!g->stream) {
		/* frees the request */
		send_json(g->req, 200, response_object(g, text));
		return;
	}
	ev = resp_event(g, "response.output_text.done");
	resp_where(g, ev, 1);
	json_object_object_add(ev, "text", jstr(text));
	resp_send(g, ev);
	ev = resp_event(g, "response.content_part.done");
	resp_where(g, ev, 1);
	json_object_object_add(ev, "part", output_part(text));
	resp_send(g, ev);
	ev = resp_event(g, "response.output_item.done");
	resp_where(g, ev, 0);
	json_object_object_add(ev, "item", output_item(g, text));
	resp_send(g, ev);
	(void)snprintf(type, sizeof(type), "response.%s", response_status(g));
	ev = resp_event(g, type);
	json_object_object_add(ev, "response", response_object(g, text));
	resp_send(g, ev);
	/* frees the request, also when the client has gone */
	evhttp_send_reply_end(g->req);
}

static const struct gen_api responses_api = {
	responses_start, responses_step, responses_finish
};

/*
 * The two APIs' generating and counting routes, alike but for these: the
 * Anthropic headers checked, the field of the tokens' bound, the prompt,
 * the answer's shapes and ids, the count's object.
 */
struct family {
	int		 anthropic;
	const char	*max_field;
	int		(*prompt)(struct evhttp_request *, const char *,
			    const char *, struct json_object *,
			    struct prompt *);
	const struct gen_api *api;
	const char	*id;
	const char	*count_object;	/* NULL: none */
};

static const struct family messages_family = {
	1, "max_tokens", anthropic_prompt, &messages_api, "msg_fakelm", NULL
};
static const struct family responses_family = {
	0, "max_output_tokens", responses_prompt, &responses_api,
	"resp_fakelm", "response.input_tokens"
};

/* The body and its prompt, or -1 after answering. */
static int
family_read(struct evhttp_request *req, const char *path,
    const struct family *f, struct json_object **body, const char **model,
    struct prompt *p)
{
	prompt_init(p);
	*body = NULL;
	if ((f->anthropic && anthropic_headers(req, path) == -1) ||
	    (*body = parse_body(req, path)) == NULL)
		return (-1);
	if (check_model(req, path, *body, model) == -1 ||
	    f->prompt(req, path, *model, *body, p) == -1)
		return (-1);
	return (0);
}

static void
generate(struct evhttp_request *req, const char *path, const struct family *f)
{
	struct json_object	*body;
	struct prompt		 p;
	struct gen		*g;
	const char		*model;
	long long		 max;
	int			 limited;

	if (family_read(req, path, f, &body, &model, &p) == -1 ||
	    max_tokens_of(req, path, model, body, f->max_field, &max,
	    &limited) == -1)
		goto done;
	g = gen_new(req, path, model);
	g->api = f->api;
	g->limited = limited;
	g->prompt_tokens = prompt_count(&p);
	gen_begin(g, max, stream_of(body), f->id, prompt_echo(&p));
	if (f->api == &responses_api)
		(void)snprintf(g->item, sizeof(g->item), "msg_%s", g->id);
	gen_run(g);
 done:
	prompt_free(&p);
	json_object_put(body);
}

static void
count(struct evhttp_request *req, const char *path, const struct family *f)
{
	struct json_object	*body, *obj;
	struct prompt		 p;
	const char		*model;

	if (family_read(req, path, f, &body, &model, &p) == -1)
		goto done;
	obj = json_object_new_object();
	if (f->count_object != NULL)
		json_object_object_add(obj, "object", jstr(f->count_object));
	json_object_object_add(obj, "input_tokens",
	    json_object_new_int64(prompt_count(&p)));
	reply_json(req, 200, obj, path, model, 0);
 done:
	prompt_free(&p);
	json_object_put(body);
}

static void
messages(struct evhttp_request *req, const char *path)
{
	generate(req, path, &messages_family);
}

static void
count_tokens(struct evhttp_request *req, const char *path)
{
	count(req, path, &messages_family);
}

static void
responses(struct evhttp_request *req, const char *path)
{
	generate(req, path, &responses_family);
}

static void
input_tokens(struct evhttp_request *req, const char *path)
{
	count(req, path, &responses_family);
}

/* Whether word (len bytes) is one of the words of s. */
static int
has_word(const char *s, const char *word, size_t len)
{
	const char	*p = s, *q;

	while ((q = strstr(p, word)) != NULL) {
		if ((q == s || q[-1] == ' ') &&
		    (q[len] == '\0' || q[len] == ' '))
			return (1);
		p = q + 1;
	}
	return (0);
}

/*
 * The share of the query's words that are words of the document, in
 * thousandths (words are split on single spaces).
 */
static int
relevance(const char *query, const char *doc)
{
	char		*q, *w, *p;
	int		 n = 0, hit = 0;

	if ((q = strdup(query)) == NULL)
		oom();
	p = q;
	while ((w = strsep(&p, " ")) != NULL) {
		if (*w == '\0')
			continue;
		n++;
		hit += has_word(doc, w, strlen(w));
	}
	free(q);
	return (n == 0 ? 0 : hit * 1000 / n);
}

struct ranked {
	size_t		 index;
	int		 score;		/* thousandths */
	const char	*text;
};

static int
ranked_cmp(const void *a, const void *b)
{
	const struct ranked	*x = a, *y = b;

	if (x->score != y->score)
		return (x->score > y->score ? -1 : 1);
	return (x->index < y->index ? -1 : x->index > y->index);
}

static int
flag_of(struct json_object *body, const char *name)
{
	struct json_object	*v;

	return (json_object_object_get_ex(body, name, &v) &&
	    json_object_get_boolean(v));
}

/*
 * Rerank: "documents" (strings or objects with a "text") answered as
 * llama-server and Jina do, or "texts" answered as Hugging Face's TEI
 * does (an array).  The score of a document is the share of the query's
 * words it has; the results are best first, then in their order.
 */
static void
rerank(struct evhttp_request *req, const char *path)
{
	struct json_object	*body, *q, *docs = NULL, *d, *t, *obj, *res, *r;
	struct json_object	*doc;
	struct ranked		*rk = NULL;
	const char		*model, *query;
	long long		 top = -1, words;
	int			 tei = 0;
	size_t			 i, n;
	char			 num[16];

	if ((body = parse_body(req, path)) == NULL)
		return;
	if (check_model(req, path, body, &model) == -1)
		goto done;
	if (!json_object_object_get_ex(body, "query", &q) ||
	    !json_object_is_type(q, json_type_string)) {
		reply_error(req, 400, path, model, "invalid_request_error",
		    "query must be a string");
		goto done;
	}
	query = json_object_get_string(q);
	if (!json_object_object_get_ex(body, "documents", &docs) &&
	    json_object_object_get_ex(body, "texts", &docs))
		tei = 1;
	if (docs == NULL || !json_object_is_type(docs, json_type_array)) {
		reply_error(req, 400, path, model, "invalid_request_error",
		    "documents must be an array");
		goto done;
	}
	if (json_object_object_get_ex(body, "top_n", &t) &&
	    !json_object_is_type(t, json_type_null)) {
		if (!json_object_is_type(t, json_type_int) ||
		    (top = json_object_get_int64(t)) < 0) {
			reply_error(req, 400, path, model,
			    "invalid_request_error",
			    "top_n must be a whole number");
			goto done;
		}
	}
	n = json_object_array_length(docs);
	if ((rk = calloc(n + 1, sizeof(*rk))) == NULL)
		oom();
	words = count_words(query);
	for (i = 0; i < n; i++) {
		d = json_object_array_get_idx(docs, i);
		if (json_object_is_type(d, json_type_object) &&
		    json_object_object_get_ex(d, "text", &t))
			d = t;
		if (!json_object_is_type(d, json_type_string)) {
			reply_error(req, 400, path, model,
			    "invalid_request_error",
			    "documents[%zu] must be a string or have a text",
			    i);
			goto done;
		}
		rk[i].index = i;
		rk[i].text = json_object_get_string(d);
		rk[i].score = relevance(query, rk[i].text);
		words += count_words(rk[i].text);
	}
	qsort(rk, n, sizeof(*rk), ranked_cmp);
	if (top >= 0 && (size_t)top < n)
		n = (size_t)top;
	res = json_object_new_array();
	for (i = 0; i < n; i++) {
		r = json_object_new_object();
		json_object_object_add(r, "index",
		    json_object_new_int64((int64_t)rk[i].index));
		(void)snprintf(num, sizeof(num), "%d.%03d",
		    rk[i].score / 1000, rk[i].score % 1000);
		json_object_object_add(r, tei ? "score" : "relevance_score",
		    json_object_new_double_s(rk[i].score / 1000.0, num));
		if (tei && flag_of(body, "return_text"))
			json_object_object_add(r, "text", jstr(rk[i].text));
		else if (!tei && flag_of(body, "return_documents")) {
			doc = json_object_new_object();
			json_object_object_add(doc, "text", jstr(rk[i].text));
			json_object_object_add(r, "document", doc);
		}
		json_object_array_add(res, r);
	}
	if (tei) {
		reply_json(req, 200, res, path, model, 0);
		goto done;
	}
	obj = json_object_new_object();
	json_object_object_add(obj, "model", jstr(answer_model(model)));
	json_object_object_add(obj, "object", jstr("list"));
	r = json_object_new_object();
	json_object_object_add(r, "prompt_tokens", json_object_new_int64(words));
	json_object_object_add(r, "total_tokens", json_object_new_int64(words));
	json_object_object_add(obj, "usage", r);
	json_object_object_add(obj, "results", res);
	reply_json(req, 200, obj, path, model, 0);
 done:
	free(rk);
	json_object_put(body);
}
