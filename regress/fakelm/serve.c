/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * fakelm's HTTP side: the OpenAI routes, deterministic answers, token
 * pacing, what happens when a client leaves, and the per-request log line.
 */

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/http_struct.h>	/* an HTTP/1.0 answer to a 1.1 request */
#include <event2/keyvalq_struct.h>

#include <json-c/json.h>

#include "http_method.h"
#include "fakelm.h"
#include "../tools/cksum.h"

#define JSON_FLAGS	(JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE)

static int			 crash_armed = 1;
static unsigned long long	 seq;
static struct json_tokener	*tok;

static void	handle(struct evhttp_request *, void *);
static void	log_received(struct evhttp_request *, const char *);
static const char *reason(int);
static void	health(struct evhttp_request *, const char *);
static void	models(struct evhttp_request *, const char *);
static void	embeddings(struct evhttp_request *, const char *);
static void	completion(struct evhttp_request *, const char *,
		    enum route);
static void	stall(struct evhttp_request *, const char *);
static void	bytes_answer(struct evhttp_request *, const char *,
		    const char *);
static void	bytes_fill(struct evbuffer *, size_t, unsigned long long);
static int	bytes_step(struct gen *);
static void	gen_free(struct gen *);
static void	gen_split(struct gen *);
static int	gen_step(struct gen *);
static void	gen_tick(evutil_socket_t, short, void *);
static void	gen_closed(struct evhttp_connection *, void *);
static void	gen_watch(struct gen *);
static void	gen_peer(evutil_socket_t, short, void *);
static int	gen_drop(struct gen *);
static void	gen_chunk(struct gen *, struct json_object *);
static struct json_object *gen_object(struct gen *, int);
static struct json_object *usage_object(long long, long long);
static void	gen_finish(struct gen *);
static __dead void gen_crash(struct gen *);

void
say(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vfprintf(stdout, fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

void
complain(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

void
oom(void)
{
	complain("fakelm: out of memory");
	exit(1);
}

void
crash(int use_abort)
{
	struct rlimit	rl = { 0, 0 };

	fflush(stdout);
	fflush(stderr);
	if (use_abort) {
		/* A crash, but no core file left in the test's directory. */
		(void)setrlimit(RLIMIT_CORE, &rl);
		abort();
	}
	_exit(1);
}

void
serve_init(struct evhttp *http)
{
	if ((tok = json_tokener_new()) == NULL) {
		complain("fakelm: json_tokener_new failed");
		exit(1);
	}
	evhttp_set_max_body_size(http, conf.max_body);
	/* Slow answers are the point; never time a client out for them. */
	evhttp_set_timeout(http, 3600);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_OPTIONS);
	evhttp_set_gencb(http, handle, NULL);
}

long long
mono_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

void
log_request(const char *method, const char *path, const char *model,
    int status, size_t tokens, int closed)
{
	if (conf.stamp)
		fprintf(stderr, "fakelm: %s %s model=%s status=%d tokens=%zu "
		    "closed_early=%d mono_ns=%lld\n", method, path,
		    model == NULL ? "-" : model, status, tokens, closed,
		    mono_ns());
	else
		fprintf(stderr, "fakelm: %s %s model=%s status=%d tokens=%zu "
		    "closed_early=%d\n", method, path,
		    model == NULL ? "-" : model, status, tokens, closed);
}

/* --log-requests: a request as it arrives, before any answer. */
static void
log_received(struct evhttp_request *req, const char *path)
{
	struct evhttp_connection	*evcon;
	char				*host = NULL;
	ev_uint16_t			 port = 0;

	if ((evcon = evhttp_request_get_connection(req)) != NULL)
		evhttp_connection_get_peer(evcon, &host, &port);
	complain("fakelm: request: %s %s %s", http_method_name(req), path,
	    host != NULL ? host : "-");
}

static const char *
reason(int code)
{
	switch (code) {
	case 200:
		return ("OK");
	case 400:
		return ("Bad Request");
	case 404:
		return ("Not Found");
	case 405:
		return ("Method Not Allowed");
	case 500:
		return ("Internal Server Error");
	case 503:
		return ("Service Unavailable");
	default:
		return ("Status");
	}
}

/* Send obj as the whole answer and drop our reference to it. */
void
send_json(struct evhttp_request *req, int code, struct json_object *obj)
{
	struct evbuffer	*buf;
	const char	*s;
	size_t		 len;

	s = json_object_to_json_string_length(obj, JSON_FLAGS,
	    &len);
	buf = evhttp_request_get_output_buffer(req);
	evbuffer_add(buf, s, len);
	evbuffer_add(buf, "\n", 1);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	evhttp_send_reply(req, code, reason(code), NULL);
	json_object_put(obj);
}

void
reply_json(struct evhttp_request *req, int code, struct json_object *obj,
    const char *path, const char *model, size_t tokens)
{
	log_request(http_method_name(req), path, model, code, tokens, 0);
	send_json(req, code, obj);
}

void
reply_error(struct evhttp_request *req, int code, const char *path,
    const char *model, const char *type, const char *fmt, ...)
{
	struct json_object	*obj, *err;
	char			*msg;
	va_list			 ap;

	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) == -1)
		msg = NULL;
	va_end(ap);

	obj = json_object_new_object();
	err = json_object_new_object();
	json_object_object_add(err, "message",
	    json_object_new_string(msg == NULL ? "error" : msg));
	if (apis_anthropic(path)) {
		/* Anthropic's shape: its type names the status */
		json_object_object_add(err, "type",
		    json_object_new_string(apis_error_type(code)));
		json_object_object_add(obj, "type",
		    json_object_new_string("error"));
	} else {
		json_object_object_add(err, "type",
		    json_object_new_string(type));
		json_object_object_add(err, "code", json_object_new_int(code));
	}
	json_object_object_add(obj, "error", err);
	free(msg);
	reply_json(req, code, obj, path, model, 0);
}

/*
 * Asked for with the request header X-Fakelm-Echo-Headers: the names of
 * the request's header fields, in lower case and in order, in the
 * answer's X-Fakelm-Headers, so that a test sees what a proxy passed on
 * (and what it took out).  With X-Fakelm-Hop: NAME, the answer has a
 * field NAME and names it in its Connection field, for a proxy not to
 * pass on.
 */
static void
echo_headers(struct evhttp_request *req)
{
	struct evkeyvalq	*in = evhttp_request_get_input_headers(req);
	struct evkeyvalq	*out = evhttp_request_get_output_headers(req);
	struct evkeyval		*kv;
	const char		*hop;
	char			 names[2048], *p;
	size_t			 n = 0;

	if ((hop = evhttp_find_header(in, "X-Fakelm-Hop")) != NULL) {
		evhttp_add_header(out, "Connection", hop);
		evhttp_add_header(out, hop, "1");
	}
	if (evhttp_find_header(in, "X-Fakelm-Echo-Headers") == NULL)
		return;
	names[0] = '\0';
	TAILQ_FOREACH(kv, in, next) {
		if (n + strlen(kv->key) + 3 >= sizeof(names))
			break;
		n += snprintf(names + n, sizeof(names) - n, "%s%s",
		    n > 0 ? ", " : "", kv->key);
	}
	for (p = names; *p != '\0'; p++)
		*p = tolower((unsigned char)*p);
	evhttp_add_header(out, "X-Fakelm-Headers", names);
}

static void
handle(struct evhttp_request *req, void *arg)
{
	const struct evhttp_uri	*uri;
	const char		*path = NULL, *spec;
	enum evhttp_cmd_type	 cmd = evhttp_request_get_command(req);

	(void)arg;

	if ((uri = evhttp_request_get_evhttp_uri(req)) != NULL)
		path = evhttp_uri_get_path(uri);
	if (path == NULL || *path == '\0')
		path = "/";
	if (conf.log_requests)
		log_received(req, path);
	echo_headers(req);

	if (strcmp(path, "/health") == 0) {
		health(req, path);
		return;
	}
	if (!loaded) {
		reply_error(req, 503, path, NULL, "unavailable_error",
		    "Loading model");
		return;
	}
	if (conf.stall) {
		stall(req, path);
		return;
	}
	spec = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "X-Fakelm-Answer");
	if (spec != NULL) {
		bytes_answer(req, path, spec);
		return;
	}
	if (apis_route(req, path))
		return;
	if (strcmp(path, "/v1/models") == 0) {
		if (cmd != EVHTTP_REQ_GET)
			goto method;
		models(req, path);
	} else if (strcmp(path, "/v1/chat/completions") == 0) {
		if (cmd != EVHTTP_REQ_POST)
			goto method;
		completion(req, path, ROUTE_CHAT);
	} else if (strcmp(path, "/v1/completions") == 0) {
		if (cmd != EVHTTP_REQ_POST)
			goto method;
		completion(req, path, ROUTE_COMPLETION);
	} else if (strcmp(path, "/v1/embeddings") == 0) {
		if (cmd != EVHTTP_REQ_POST)
			goto method;
		embeddings(req, path);
	} else
		reply_error(req, 404, path, NULL, "invalid_request_error",
		    "No route for %s %s", http_method_name(req), path);
	return;
 method:
	reply_error(req, 405, path, NULL, "invalid_request_error",
	    "Method %s not allowed on %s", http_method_name(req), path);
}

static void
health(struct evhttp_request *req, const char *path)
{
	struct json_object	*obj = json_object_new_object();

	json_object_object_add(obj, "status",
	    json_object_new_string(loaded ? "ok" : "loading"));
	reply_json(req, loaded ? conf.ready_status : 503, obj, path, NULL, 0);
}

static void
models(struct evhttp_request *req, const char *path)
{
	struct json_object	*obj, *data, *m;

	obj = json_object_new_object();
	data = json_object_new_array();
	m = json_object_new_object();
	json_object_object_add(m, "id", json_object_new_string(conf.model));
	json_object_object_add(m, "object", json_object_new_string("model"));
	json_object_object_add(m, "created", json_object_new_int64(0));
	json_object_object_add(m, "owned_by",
	    json_object_new_string("fakelm"));
	json_object_array_add(data, m);
	json_object_object_add(obj, "object", json_object_new_string("list"));
	json_object_object_add(obj, "data", data);
	reply_json(req, 200, obj, path, NULL, 0);
}

/* The body as JSON, or NULL after answering 400. */
struct json_object *
parse_body(struct evhttp_request *req, const char *path)
{
	struct evbuffer		*in = evhttp_request_get_input_buffer(req);
	struct json_object	*obj;
	size_t			 len = evbuffer_get_length(in);
	const char		*s;

	s = (const char *)evbuffer_pullup(in, -1);
	if (s == NULL || len == 0) {
		reply_error(req, 400, path, NULL, "invalid_request_error",
		    "Request body is empty");
		return (NULL);
	}
	json_tokener_reset(tok);
	obj = json_tokener_parse_ex(tok, s, (int)len);
	if (obj == NULL || json_tokener_get_error(tok) != json_tokener_success ||
	    !json_object_is_type(obj, json_type_object)) {
		json_object_put(obj);
		reply_error(req, 400, path, NULL, "invalid_request_error",
		    "Request body is not a JSON object");
		return (NULL);
	}
	return (obj);
}

/*
 * Sets *modelp to the model the body names (NULL when it names none) and
 * returns 0, or answers 400/404 and returns -1.
 */
int
check_model(struct evhttp_request *req, const char *path,
    struct json_object *body, const char **modelp)
{
	struct json_object	*m;
	const char		*name;

	*modelp = NULL;
	if (!json_object_object_get_ex(body, "model", &m))
		return (0);
	if (!json_object_is_type(m, json_type_string)) {
		reply_error(req, 400, path, NULL, "invalid_request_error",
		    "model must be a string");
		return (-1);
	}
	name = json_object_get_string(m);
	if (!conf.any_model && strcmp(name, conf.model) != 0) {
		reply_error(req, 404, path, name, "invalid_request_error",
		    "The model '%s' does not exist; this server serves '%s'",
		    name, conf.model);
		return (-1);
	}
	*modelp = name;
	return (0);
}

/* The model an answer names: with --any-model, the one it was sent. */
const char *
answer_model(const char *sent)
{
	return (conf.any_model && sent != NULL ? sent : conf.model);
}

long long
count_words(const char *s)
{
	long long	n = 0;
	int		in = 0;

	for (; *s != '\0'; s++) {
		if (isspace((unsigned char)*s))
			in = 0;
		else if (!in) {
			in = 1;
			n++;
		}
	}
	return (n);
}

/*
 * The text of a message's content: a string, or the text parts (Chat's
 * and Anthropic's "text", the Responses API's "input_text" and
 * "output_text").
 */
void
content_text(struct json_object *content, struct evbuffer *out)
{
	struct json_object	*part, *type, *text;
	const char		*t;
	size_t			 i, n;

	if (json_object_is_type(content, json_type_string)) {
		evbuffer_add_printf(out, "%s ",
		    json_object_get_string(content));
		return;
	}
	if (!json_object_is_type(content, json_type_array))
		return;
	n = json_object_array_length(content);
	for (i = 0; i < n; i++) {
		part = json_object_array_get_idx(content, i);
		if (!json_object_object_get_ex(part, "type", &type) ||
		    !json_object_object_get_ex(part, "text", &text))
			continue;
		t = json_object_get_string(type);
		if (strcmp(t, "text") == 0 || strcmp(t, "input_text") == 0 ||
		    strcmp(t, "output_text") == 0)
			evbuffer_add_printf(out, "%s ",
			    json_object_get_string(text));
	}
}

static void
embeddings(struct evhttp_request *req, const char *path)
{
	struct json_object	*body, *input, *obj, *data, *e, *vec, *s;
	const char		*model, *text;
	long long		 ptok = 0;
	uint64_t		 h;
	size_t			 i, j, n;
	const unsigned char	*p;
	double			 d;
	char			 num[16];

	if ((body = parse_body(req, path)) == NULL)
		return;
	if (check_model(req, path, body, &model) == -1)
		goto done;
	if (!json_object_object_get_ex(body, "input", &input) ||
	    (!json_object_is_type(input, json_type_string) &&
	    !json_object_is_type(input, json_type_array))) {
		reply_error(req, 400, path, model, "invalid_request_error",
		    "input must be a string or an array of strings");
		goto done;
	}
	n = json_object_is_type(input, json_type_string) ? 1 :
	    json_object_array_length(input);
	data = json_object_new_array();
	for (i = 0; i < n; i++) {
		s = json_object_is_type(input, json_type_string) ? input :
		    json_object_array_get_idx(input, i);
		text = json_object_get_string(s);
		ptok += count_words(text);
		/* FNV-1a of the text, then stirred once per dimension. */
		h = 14695981039346656037ULL;
		for (p = (const unsigned char *)text; *p != '\0'; p++)
			h = (h ^ *p) * 1099511628211ULL;
		vec = json_object_new_array();
		for (j = 0; j < FAKELM_EMBED_DIM; j++) {
			h = (h ^ (j + 1)) * 1099511628211ULL;
			d = (double)(h % 2001) / 1000.0 - 1.0;
			snprintf(num, sizeof(num), "%.3f", d);
			json_object_array_add(vec,
			    json_object_new_double_s(d, num));
		}
		e = json_object_new_object();
		json_object_object_add(e, "object",
		    json_object_new_string("embedding"));
		json_object_object_add(e, "index",
		    json_object_new_int64((int64_t)i));
		json_object_object_add(e, "embedding", vec);
		json_object_array_add(data, e);
	}
	obj = json_object_new_object();
	json_object_object_add(obj, "object", json_object_new_string("list"));
	json_object_object_add(obj, "data", data);
	json_object_object_add(obj, "model",
	    json_object_new_string(answer_model(model)));
	json_object_object_add(obj, "usage", usage_object(ptok, -1));
	reply_json(req, 200, obj, path, model, 0);
 done:
	json_object_put(body);
}

struct gen *
gen_new(struct evhttp_request *req, const char *path, const char *model)
{
	struct gen	*g;

	if ((g = calloc(1, sizeof(*g))) == NULL ||
	    (g->path = strdup(path)) == NULL ||
	    (model != NULL && (g->model = strdup(model)) == NULL) ||
	    (g->text = evbuffer_new()) == NULL ||
	    (g->ev = event_new(base, -1, 0, gen_tick, g)) == NULL) {
		complain("fakelm: out of memory");
		exit(1);
	}
	g->req = req;
	g->evcon = evhttp_request_get_connection(req);
	g->method = http_method_name(req);
	g->crash_at = -1;
	g->tick_ms = conf.token_ms;
	g->created = (long long)time(NULL);
	return (g);
}

static void
gen_free(struct gen *g)
{
	event_free(g->ev);
	if (g->watch != NULL)
		event_free(g->watch);
	evbuffer_free(g->text);
	free(g->words);
	free(g->echo);
	free(g->model);
	free(g->path);
	free(g);
}

static void
stall(struct evhttp_request *req, const char *path)
{
	struct gen	*g;

	g = gen_new(req, path, NULL);
	g->stalled = 1;
	g->stops = 1;
	gen_watch(g);
}

/*
 * X-Fakelm-Answer: FRAMING SIZE [MS], on any route but /health, whatever
 * the body: 200 with SIZE bytes a test can check, ended by their
 * Content-Length (FRAMING "length"), by the chunked coding ("chunked"),
 * or, in an HTTP/1.0 answer, by the close of the connection ("close").
 * The last two go out in pieces of 1, 7, 300, 4096 and 70001 bytes in
 * turn, MS ms apart; to an HTTP/1.0 request, both are "close".
 * X-Fakelm-Body-Cksum names the digest (cksum.h) of the request body as
 * it arrived, X-Fakelm-Answer-Cksum that of the answer's body.
 */
static void
bytes_answer(struct evhttp_request *req, const char *path, const char *spec)
{
	struct evbuffer		*in = evhttp_request_get_input_buffer(req);
	struct evkeyvalq	*hdrs = evhttp_request_get_output_headers(req);
	struct evbuffer		*body;
	struct cksum		 ck;
	struct gen		*g;
	enum framing		 framing;
	const char		*errstr = NULL, *w[4];
	char			 buf[64], *p, *t, sum[CKSUM_STR];
	long long		 size, ms = 0;
	size_t			 n = 0;

	if (strlcpy(buf, spec, sizeof(buf)) >= sizeof(buf))
		goto bad;
	p = buf;
	while (n < 4 && (t = strsep(&p, " ")) != NULL)
		if (*t != '\0')
			w[n++] = t;
	if (n < 2 || n > 3)
		goto bad;
	if (strcmp(w[0], "length") == 0)
		framing = FRAME_LENGTH;
	else if (strcmp(w[0], "chunked") == 0)
		framing = FRAME_CHUNKED;
	else if (strcmp(w[0], "close") == 0)
		framing = FRAME_CLOSE;
	else
		goto bad;
	size = strtonum(w[1], 0, FAKELM_BYTES_MAX, &errstr);
	if (errstr == NULL && n == 3)
		ms = strtonum(w[2], 0, 60000, &errstr);
	if (errstr != NULL)
		goto bad;

	cksum_init(&ck);
	cksum_add(&ck, evbuffer_pullup(in, -1), evbuffer_get_length(in));
	evhttp_add_header(hdrs, "X-Fakelm-Body-Cksum", cksum_str(&ck, sum));
	if ((body = evbuffer_new()) == NULL) {
		complain("fakelm: out of memory");
		exit(1);
	}
	bytes_fill(body, (size_t)size, ++seq);
	cksum_init(&ck);
	cksum_add(&ck, evbuffer_pullup(body, -1), (size_t)size);
	evhttp_add_header(hdrs, "X-Fakelm-Answer-Cksum", cksum_str(&ck, sum));
	evhttp_add_header(hdrs, "Content-Type", "text/plain");

	if (framing == FRAME_LENGTH) {
		log_request(http_method_name(req), path, NULL, 200, 0, 0);
		evhttp_send_reply(req, 200, "OK", body);
		evbuffer_free(body);
		return;
	}
	g = gen_new(req, path, NULL);
	g->framing = framing;
	g->tick_ms = ms;
	g->stops = conf.stops_on_close != STOPS_NEVER;
	evbuffer_add_buffer(g->text, body);
	evbuffer_free(body);
	/*
	 * libevent frames an answer to a 1.1 request in chunks; as a 1.0
	 * request's, kept alive by no Connection field, it writes no framing
	 * at all and closes at the end.  That is also the answer to a 1.0
	 * request for chunks, which HTTP/1.0 does not have.
	 */
	if (framing == FRAME_CLOSE || req->minor == 0) {
		req->minor = 0;
		evhttp_remove_header(evhttp_request_get_input_headers(req),
		    "Connection");
	}
	evhttp_send_reply_start(req, 200, "OK");
	gen_run(g);
	return;
 bad:
	reply_error(req, 400, path, NULL, "invalid_request_error",
	    "X-Fakelm-Answer is FRAMING SIZE [MS]: length, chunked or close, "
	    "0 to %d bytes, 0 to 60000 ms", FAKELM_BYTES_MAX);
}

/* size bytes of lower-case letters, digits and newlines, from seed. */
static void
bytes_fill(struct evbuffer *out, size_t size, unsigned long long seed)
{
	static const char	 set[] =
				    "abcdefghijklmnopqrstuvwxyz0123456789\n";
	char			 buf[4096];
	uint64_t		 x = seed;
	size_t			 i, n;

	while (size > 0) {
		n = size < sizeof(buf) ? size : sizeof(buf);
		for (i = 0; i < n; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			buf[i] = set[(x >> 33) % (sizeof(set) - 1)];
		}
		evbuffer_add(out, buf, n);
		size -= n;
	}
}

/* The next piece of a bytes_answer, or its end; 1 while there is more. */
static int
bytes_step(struct gen *g)
{
	static const size_t	 sizes[] = { 1, 7, 300, 4096, 70001 };
	struct evbuffer		*piece;
	size_t			 n, left = evbuffer_get_length(g->text);

	if (left == 0 || (g->closed && g->stops)) {
		gen_finish(g);
		return (0);
	}
	n = sizes[g->sent % (sizeof(sizes) / sizeof(sizes[0]))];
	if ((piece = evbuffer_new()) == NULL) {
		complain("fakelm: out of memory");
		exit(1);
	}
	evbuffer_remove_buffer(g->text, piece, n < left ? n : left);
	/* Does nothing once the client has gone. */
	evhttp_send_reply_chunk(g->req, piece);
	evbuffer_free(piece);
	g->sent++;
	return (1);
}

static void
completion(struct evhttp_request *req, const char *path, enum route route)
{
	struct json_object	*body, *v, *msgs, *m, *role, *content, *o, *p;
	struct evbuffer		*all = NULL, *last = NULL;
	const char		*model, *key;
	struct gen		*g;
	long long		 max;
	int			 limited, stream = 0, usage = 0;
	size_t			 i, n;

	if ((body = parse_body(req, path)) == NULL)
		return;
	if (check_model(req, path, body, &model) == -1)
		goto done;

	key = "max_tokens";
	if (route == ROUTE_CHAT &&
	    json_object_object_get_ex(body, "max_completion_tokens", &v))
		key = "max_completion_tokens";
	if (max_tokens_of(req, path, model, body, key, &max, &limited) == -1)
		goto done;
	if (json_object_object_get_ex(body, "stream", &v))
		stream = json_object_get_boolean(v);
	if (stream && json_object_object_get_ex(body, "stream_options", &o) &&
	    json_object_object_get_ex(o, "include_usage", &v))
		usage = json_object_get_boolean(v);

	if ((all = evbuffer_new()) == NULL || (last = evbuffer_new()) == NULL) {
		complain("fakelm: out of memory");
		exit(1);
	}
	if (route == ROUTE_CHAT) {
		if (!json_object_object_get_ex(body, "messages", &msgs) ||
		    !json_object_is_type(msgs, json_type_array)) {
			reply_error(req, 400, path, model,
			    "invalid_request_error",
			    "messages must be an array");
			goto done;
		}
		n = json_object_array_length(msgs);
		for (i = 0; i < n; i++) {
			m = json_object_array_get_idx(msgs, i);
			if (!json_object_object_get_ex(m, "content", &content))
				continue;
			content_text(content, all);
			if (json_object_object_get_ex(m, "role", &role) &&
			    strcmp(json_object_get_string(role), "user") == 0) {
				evbuffer_drain(last, evbuffer_get_length(last));
				content_text(content, last);
			}
		}
	} else {
		if (!json_object_object_get_ex(body, "prompt", &v) ||
		    (!json_object_is_type(v, json_type_string) &&
		    !json_object_is_type(v, json_type_array))) {
			reply_error(req, 400, path, model,
			    "invalid_request_error",
			    "prompt must be a string or an array of strings");
			goto done;
		}
		/* Every prompt counts; the last one is echoed. */
		n = json_object_is_type(v, json_type_string) ? 1 :
		    json_object_array_length(v);
		for (i = 0; i < n; i++) {
			p = json_object_is_type(v, json_type_string) ? v :
			    json_object_array_get_idx(v, i);
			evbuffer_drain(last, evbuffer_get_length(last));
			content_text(p, last);
			content_text(p, all);
		}
	}
	evbuffer_add(all, "", 1);
	evbuffer_add(last, "", 1);

	g = gen_new(req, path, model);
	g->route = route;
	g->include_usage = usage;
	g->limited = limited;
	g->prompt_tokens = count_words((const char *)evbuffer_pullup(all, -1));
	gen_begin(g, max, stream, route == ROUTE_CHAT ? "chatcmpl-fakelm" :
	    "cmpl-fakelm", (const char *)evbuffer_pullup(last, -1));
	gen_run(g);
 done:
	if (all != NULL)
		evbuffer_free(all);
	if (last != NULL)
		evbuffer_free(last);
	json_object_put(body);
}

/*
 * The limit a body gives, read as llama-server reads it: "n_predict"
 * first, then the route's field key (null is none).  X-Fakelm-Limit
 * reports it as it came, as JSON text ("none" if there is none), on
 * whatever the answer is; then the count of tokens it asks for (*limited
 * set), or else the default; -1 after answering 400.
 */
int
max_tokens_of(struct evhttp_request *req, const char *path,
    const char *model, struct json_object *body, const char *key,
    long long *max, int *limited)
{
	struct json_object	*v;

	*max = FAKELM_DEFAULT_TOKENS;
	*limited = 0;
	if (json_object_object_get_ex(body, "n_predict", &v) &&
	    !json_object_is_type(v, json_type_null))
		key = "n_predict";
	if (!json_object_object_get_ex(body, key, &v) ||
	    json_object_is_type(v, json_type_null)) {
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "X-Fakelm-Limit", "none");
		return (0);
	}
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "X-Fakelm-Limit", json_object_to_json_string_ext(v,
	    JSON_C_TO_STRING_PLAIN));
	if (!json_object_is_type(v, json_type_int) ||
	    (*max = json_object_get_int64(v)) < 0 ||
	    *max > FAKELM_MAX_TOKENS) {
		reply_error(req, 400, path, model, "invalid_request_error",
		    "%s must be an integer from 0 to %d", key,
		    FAKELM_MAX_TOKENS);
		return (-1);
	}
	*limited = 1;
	return (0);
}

/*
 * Ready g to generate max tokens (streamed or not) that echo the words
 * of echo, for an answer with the id PREFIX-N: how a close ends it,
 * whether --crash-mid-stream ends it.  gen_run runs it.
 */
void
gen_begin(struct gen *g, long long max, int stream, const char *prefix,
    const char *echo)
{
	g->stream = stream;
	g->ntok = (size_t)max;
	if ((g->echo = strdup(echo)) == NULL)
		oom();
	gen_split(g);
	switch (conf.stops_on_close) {
	case STOPS_ALWAYS:
		g->stops = 1;
		break;
	case STOPS_NEVER:
		g->stops = 0;
		break;
	case STOPS_STREAM:
		g->stops = stream;
		break;
	default:
		g->stops = 1;
		break;
	}
	snprintf(g->id, sizeof(g->id), "%s-%llu", prefix, ++seq);
	if (stream && crash_armed && conf.crash_mid_stream >= 0) {
		crash_armed = 0;
		g->crash_at = conf.crash_mid_stream;
	}
}

/* Split the echo into words, as many as there will be tokens. */
static void
gen_split(struct gen *g)
{
	size_t	i = 0, start;

	if ((g->words = reallocarray(NULL, g->ntok + 1,
	    sizeof(*g->words))) == NULL) {
		complain("fakelm: out of memory");
		exit(1);
	}
	while (g->nwords < g->ntok && g->echo[i] != '\0') {
		while (isspace((unsigned char)g->echo[i]))
			i++;
		if (g->echo[i] == '\0')
			break;
		start = i;
		while (g->echo[i] != '\0' &&
		    !isspace((unsigned char)g->echo[i]))
			i++;
		g->words[g->nwords].off = start;
		g->words[g->nwords].len = i - start;
		g->nwords++;
	}
}

/*
 * Token i (from 0): the i-th word of the last user message, then "tokN"
 * with N counting from 1 over all tokens; every token but the first
 * starts with a space, so the tokens joined are the answer's text.
 */
void
gen_token(struct gen *g, size_t i, struct evbuffer *out)
{
	if (i > 0)
		evbuffer_add(out, " ", 1);
	if (i < g->nwords)
		evbuffer_add(out, g->echo + g->words[i].off, g->words[i].len);
	else
		evbuffer_add_printf(out, "tok%zu", i + 1);
}

void
gen_run(struct gen *g)
{
	struct timeval	tv;

	if (g->stream) {
		evhttp_add_header(evhttp_request_get_output_headers(g->req),
		    "Content-Type", "text/event-stream");
		evhttp_add_header(evhttp_request_get_output_headers(g->req),
		    "Cache-Control", "no-cache");
		evhttp_send_reply_start(g->req, 200, "OK");
		if (g->api != NULL)
			g->api->start(g);
	}
	if (g->tick_ms == 0) {
		/* Nothing to wait for: answer in one go. */
		while (gen_step(g) == 1)
			;
		return;
	}
	gen_watch(g);
	tv.tv_sec = g->tick_ms / 1000;
	tv.tv_usec = (g->tick_ms % 1000) * 1000;
	event_add(g->ev, &tv);
}

/* Emit one token, or finish; 1 while there is more to do. */
static int
gen_step(struct gen *g)
{
	struct evbuffer		*t;
	struct json_object	*chunk, *choice, *delta;

	if (g->framing != FRAME_NONE)
		return (bytes_step(g));
	if (g->crash_at >= 0 && g->sent == (size_t)g->crash_at)
		gen_crash(g);
	if (g->sent >= g->ntok || (g->closed && g->stops)) {
		gen_finish(g);
		return (0);
	}
	if (!g->stream) {
		gen_token(g, g->sent, g->text);
		g->sent++;
		return (1);
	}
	if (g->api != NULL) {
		g->api->step(g);
		g->sent++;
		return (1);
	}
	if ((t = evbuffer_new()) == NULL) {
		complain("fakelm: out of memory");
		exit(1);
	}
	gen_token(g, g->sent, t);
	evbuffer_add(t, "", 1);
	chunk = gen_object(g, 1);
	choice = json_object_array_get_idx(
	    json_object_object_get(chunk, "choices"), 0);
	if (g->route == ROUTE_CHAT) {
		delta = json_object_new_object();
		if (g->sent == 0)
			json_object_object_add(delta, "role",
			    json_object_new_string("assistant"));
		json_object_object_add(delta, "content",
		    json_object_new_string((const char *)evbuffer_pullup(t,
		    -1)));
		json_object_object_add(choice, "delta", delta);
	} else
		json_object_object_add(choice, "text",
		    json_object_new_string((const char *)evbuffer_pullup(t,
		    -1)));
	json_object_object_add(choice, "finish_reason", NULL);
	evbuffer_free(t);
	gen_chunk(g, chunk);
	g->sent++;
	return (1);
}

static void
gen_tick(evutil_socket_t fd, short ev, void *arg)
{
	struct gen	*g = arg;
	struct timeval	 tv;

	(void)fd;
	(void)ev;

	if (g->stalled) {
		/* Only a client's close wakes a stalled request. */
		log_request(g->method, g->path, g->model, 0, 0, 1);
		if (!gen_drop(g))
			evhttp_send_reply(g->req, 500, "Stalled", NULL);
		gen_free(g);
		return;
	}
	if (gen_step(g) == 0)
		return;
	tv.tv_sec = g->tick_ms / 1000;
	tv.tv_usec = (g->tick_ms % 1000) * 1000;
	event_add(g->ev, &tv);
}

/*
 * libevent 2.1 does not read from a connection while its request waits
 * for an answer, so it would see a client leave only when a write fails.
 * Watch the socket ourselves to see it at once.  Both ways stay armed:
 * gen_closed tells us when libevent frees the connection.
 */
static void
gen_watch(struct gen *g)
{
	struct bufferevent	*bev;

	if (g->evcon == NULL)
		return;
	evhttp_connection_set_closecb(g->evcon, gen_closed, g);
	if ((bev = evhttp_connection_get_bufferevent(g->evcon)) == NULL)
		return;
	g->watch = event_new(base, bufferevent_getfd(bev), EV_READ, gen_peer,
	    g);
	if (g->watch == NULL || event_add(g->watch, NULL) == -1) {
		complain("fakelm: cannot watch a client's socket");
		exit(1);
	}
}

static void
gen_peer(evutil_socket_t fd, short ev, void *arg)
{
	struct gen	*g = arg;
	char		 c;
	ssize_t		 n;

	(void)ev;

	n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
	if (n == -1 && (errno == EAGAIN || errno == EINTR)) {
		event_add(g->watch, NULL);
		return;
	}
	if (n > 0)
		return;		/* a pipelined request: leave it to libevent */
	g->peer_gone = 1;
	g->closed = 1;
	if (g->stops) {
		event_del(g->ev);
		event_active(g->ev, EV_TIMEOUT, 1);
	} else
		complain("fakelm: client closed %s %s early; generating to the "
		    "end (stops-on-close %s)", g->method, g->path,
		    conf.stops_on_close == STOPS_NEVER ? "never" : "stream");
}

/*
 * Done with a request: when its client is known gone but libevent still
 * holds the connection, free that (and the request with it); returns 1
 * then, 0 when the caller must still answer to free the request.
 */
static int
gen_drop(struct gen *g)
{
	if (g->watch != NULL) {
		event_free(g->watch);
		g->watch = NULL;
	}
	if (g->evcon == NULL)
		return (0);
	evhttp_connection_set_closecb(g->evcon, NULL, NULL);
	if (!g->peer_gone)
		return (0);
	evhttp_connection_free(g->evcon);
	g->evcon = NULL;
	return (1);
}

/*
 * The client closed the connection.  libevent has detached the request
 * from it (and is freeing the connection as we speak), so only note it
 * here and let the timer decide, outside libevent's teardown.
 */
static void
gen_closed(struct evhttp_connection *evcon, void *arg)
{
	struct gen	*g = arg;

	(void)evcon;

	g->evcon = NULL;
	if (g->closed)
		return;		/* gen_peer saw it first */
	g->closed = 1;
	if (g->stops) {
		event_del(g->ev);
		event_active(g->ev, EV_TIMEOUT, 1);
	} else
		complain("fakelm: client closed %s %s early; generating to the "
		    "end (stops-on-close %s)", g->method, g->path,
		    conf.stops_on_close == STOPS_NEVER ? "never" : "stream");
}

static void
gen_chunk(struct gen *g, struct json_object *obj)
{
	gen_sse(g, NULL, obj);
}

/*
 * One server-sent event, named event (NULL: no name), with obj as its
 * data (NULL: [DONE]); drops our reference to obj.
 */
void
gen_sse(struct gen *g, const char *event, struct json_object *obj)
{
	struct evbuffer	*buf;
	const char	*s;
	size_t		 len;

	if ((buf = evbuffer_new()) == NULL)
		oom();
	if (event != NULL)
		evbuffer_add_printf(buf, "event: %s\n", event);
	if (obj == NULL)
		evbuffer_add_printf(buf, "data: [DONE]\n\n");
	else {
		/* when written: the client's read time minus this is the
		 * time the chunk took to arrive (same clock, same host) */
		if (conf.stamp)
			json_object_object_add(obj, "mono_ns",
			    json_object_new_int64(mono_ns()));
		s = json_object_to_json_string_length(obj,
		    JSON_FLAGS, &len);
		evbuffer_add(buf, "data: ", 6);
		evbuffer_add(buf, s, len);
		evbuffer_add(buf, "\n\n", 2);
		json_object_put(obj);
	}
	/* Does nothing once the client has gone. */
	evhttp_send_reply_chunk(g->req, buf);
	evbuffer_free(buf);
}

/* The envelope of an answer or a chunk, with one empty choice. */
static struct json_object *
gen_object(struct gen *g, int chunk)
{
	struct json_object	*obj, *choices, *choice;
	const char		*object;

	if (g->route == ROUTE_CHAT)
		object = chunk ? "chat.completion.chunk" : "chat.completion";
	else
		object = "text_completion";
	obj = json_object_new_object();
	json_object_object_add(obj, "id", json_object_new_string(g->id));
	json_object_object_add(obj, "object", json_object_new_string(object));
	json_object_object_add(obj, "created",
	    json_object_new_int64(g->created));
	json_object_object_add(obj, "model",
	    json_object_new_string(answer_model(g->model)));
	choices = json_object_new_array();
	choice = json_object_new_object();
	json_object_object_add(choice, "index", json_object_new_int(0));
	json_object_array_add(choices, choice);
	json_object_object_add(obj, "choices", choices);
	return (obj);
}

static struct json_object *
usage_object(long long prompt, long long completion)
{
	struct json_object	*u = json_object_new_object();

	json_object_object_add(u, "prompt_tokens",
	    json_object_new_int64(prompt));
	if (completion >= 0)
		json_object_object_add(u, "completion_tokens",
		    json_object_new_int64(completion));
	json_object_object_add(u, "total_tokens", json_object_new_int64(
	    prompt + (completion >= 0 ? completion : 0)));
	return (u);
}

static void
gen_finish(struct gen *g)
{
	struct json_object	*obj, *choice, *msg;
	const char		*finish = g->limited ? "length" : "stop";
	size_t			 len;

	log_request(g->method, g->path, g->model, 200, g->sent, g->closed);
	if (gen_drop(g)) {
		gen_free(g);
		return;
	}
	if (g->framing != FRAME_NONE) {
		/* the end of the pieces; for FRAME_CLOSE, the close */
		evhttp_send_reply_end(g->req);
		gen_free(g);
		return;
	}
	if (g->api != NULL) {
		/* answers, and so frees the request */
		g->api->finish(g);
		gen_free(g);
		return;
	}
	if (g->stream) {
		obj = gen_object(g, 1);
		choice = json_object_array_get_idx(
		    json_object_object_get(obj, "choices"), 0);
		if (g->route == ROUTE_CHAT)
			json_object_object_add(choice, "delta",
			    json_object_new_object());
		else
			json_object_object_add(choice, "text",
			    json_object_new_string(""));
		json_object_object_add(choice, "finish_reason",
		    json_object_new_string(finish));
		gen_chunk(g, obj);
		if (g->include_usage) {
			obj = gen_object(g, 1);
			json_object_object_add(obj, "choices",
			    json_object_new_array());
			json_object_object_add(obj, "usage", usage_object(
			    g->prompt_tokens, (long long)g->sent));
			gen_chunk(g, obj);
		}
		gen_chunk(g, NULL);
		/* Frees the request, also when the client has gone. */
		evhttp_send_reply_end(g->req);
		gen_free(g);
		return;
	}

	obj = gen_object(g, 0);
	choice = json_object_array_get_idx(
	    json_object_object_get(obj, "choices"), 0);
	len = evbuffer_get_length(g->text);
	if (g->route == ROUTE_CHAT) {
		msg = json_object_new_object();
		json_object_object_add(msg, "role",
		    json_object_new_string("assistant"));
		json_object_object_add(msg, "content",
		    json_object_new_string_len((const char *)evbuffer_pullup(
		    g->text, -1), (int)len));
		json_object_object_add(choice, "message", msg);
	} else {
		json_object_object_add(choice, "text",
		    json_object_new_string_len((const char *)evbuffer_pullup(
		    g->text, -1), (int)len));
		json_object_object_add(choice, "logprobs", NULL);
	}
	json_object_object_add(choice, "finish_reason",
	    json_object_new_string(finish));
	json_object_object_add(obj, "usage",
	    usage_object(g->prompt_tokens, (long long)g->sent));
	/* Frees the request, also when the client has gone. */
	send_json(g->req, 200, obj);
	gen_free(g);
}

/*
 * --crash-mid-stream: push what was written to the client out first, so
 * it really has seen the tokens before the connection drops.
 */
static __dead void
gen_crash(struct gen *g)
{
	struct bufferevent	*bev;
	struct evbuffer		*out;
	evutil_socket_t		 fd;
	int			 tries;

	if (g->evcon != NULL && !g->peer_gone &&
	    (bev = evhttp_connection_get_bufferevent(g->evcon)) != NULL) {
		out = bufferevent_get_output(bev);
		fd = bufferevent_getfd(bev);
		for (tries = 0; tries < 1000 &&
		    evbuffer_get_length(out) > 0; tries++)
			if (evbuffer_write(out, fd) == -1)
				break;
	}
	complain("fakelm: crashing after %zu tokens of %s "
	    "(--crash-mid-stream)", g->sent, g->path);
	crash(0);
}
