/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-proxy as a process: the test plays agencyd on fd 3, runs a small
 * upstream model server in a child, and talks HTTP to the proxy over
 * loopback.  Every wait has a deadline.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <atf-c.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <json-c/json.h>

#include "config.h"
#include "imsg.h"
#include "msg.h"
#include "proto.h"

#define WAIT_MS		5000
#define NCHUNKS		5
#define CHUNK_MS	100

/* A message from the proxy, read whole as agencyd reads it. */
struct qmsg {
	uint32_t	 type;
	union proto_msg	 u;
};

struct harness {
	pid_t		 proxy;
	pid_t		 upstream;
	uint16_t	 upport;
	struct imsgbuf	 ib;
	uint16_t	 port;		/* the proxy's listener */
	struct qmsg	 q[256];
	size_t		 nq;
	char		 logs[65536];
	size_t		 loglen;
	uint64_t	 barrier;
};

static int64_t
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static int
listen_any(uint16_t *port)
{
	struct sockaddr_in	 sin;
	socklen_t		 len = sizeof(sin);
	int			 fd, one = 1;

	ATF_REQUIRE((fd = socket(AF_INET, SOCK_STREAM, 0)) != -1);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ATF_REQUIRE(bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	ATF_REQUIRE(listen(fd, 16) == 0);
	ATF_REQUIRE(getsockname(fd, (struct sockaddr *)&sin, &len) == 0);
	*port = ntohs(sin.sin_port);
	return (fd);
}

/* ---- the upstream model server (a child) ---- */

struct stream {
	struct evhttp_request	*req;
	struct event		*ev;
	int			 n;
	char			 model[128];
};

static int	 up_health_503;		/* 503 answers before a 200 */
static int	 up_health_calls;
static int	 up_completed, up_aborted;

static void
up_stream_closed(struct evhttp_connection *evcon, void *arg)
{
	struct stream	*s = arg;

	(void)evcon;
	up_aborted++;
	event_free(s->ev);
	if (evhttp_request_get_connection(s->req) == NULL)
		evhttp_request_free(s->req);
	free(s);
}

static void
up_stream_tick(evutil_socket_t fd, short ev, void *arg)
{
	struct stream	*s = arg;
	struct evbuffer	*b = evbuffer_new();
	struct timeval	 tv = { 0, CHUNK_MS * 1000 };

	(void)fd;
	(void)ev;
	if (s->n < NCHUNKS) {
		evbuffer_add_printf(b, "data: {\"model\":\"%s\",\"choices\":"
		    "[{\"delta\":{\"content\":\"t%d\"}}]}\n\n", s->model, s->n);
		evhttp_send_reply_chunk(s->req, b);
		s->n++;
		evtimer_add(s->ev, &tv);
	} else {
		evbuffer_add_printf(b, "data: {\"choices\":[],\"usage\":"
		    "{\"prompt_tokens\":7,\"completion_tokens\":%d}}\n\n"
		    "data: [DONE]\n\n", NCHUNKS);
		evhttp_send_reply_chunk(s->req, b);
		evhttp_connection_set_closecb(
		    evhttp_request_get_connection(s->req), NULL, NULL);
		evhttp_send_reply_end(s->req);
		up_completed++;
		event_free(s->ev);
		free(s);
	}
	evbuffer_free(b);
}

static void
up_cb(struct evhttp_request *req, void *arg)
{
	struct event_base	*base = arg;
	const char		*path = evhttp_request_get_uri(req);
	struct evbuffer		*in = evhttp_request_get_input_buffer(req);
	struct evbuffer		*out = evbuffer_new();
	struct stream		*s;
	json_object		*body, *v;
	const char		*model = "";
	int			 stream = 0;
	struct timeval		 tv = { 0, CHUNK_MS * 1000 };

	if (strcmp(path, "/health") == 0) {
		if (up_health_calls++ < up_health_503) {
			evbuffer_add_printf(out, "{\"status\":\"loading\"}");
			evhttp_send_reply(req, 503, "Loading", out);
		} else {
			evbuffer_add_printf(out, "ok after %d",
			    up_health_calls);
			evhttp_send_reply(req, 200, "OK", out);
		}
		evbuffer_free(out);
		return;
	}
	if (strcmp(path, "/stats") == 0) {
		evbuffer_add_printf(out, "completed=%d aborted=%d",
		    up_completed, up_aborted);
		evhttp_send_reply(req, 200, "OK", out);
		evbuffer_free(out);
		return;
	}
	/* The body as a string: the buffer has no NUL of its own. */
	evbuffer_add(in, "", 1);
	body = json_tokener_parse((const char *)evbuffer_pullup(in, -1));
	if (body != NULL && json_object_object_get_ex(body, "model", &v))
		model = json_object_get_string(v);
	if (body != NULL && json_object_object_get_ex(body, "stream", &v))
		stream = json_object_get_boolean(v);
	if (!stream) {
		evbuffer_add_printf(out, "{\"seen\":%s,\"usage\":"
		    "{\"prompt_tokens\":3,\"completion_tokens\":5}}",
		    body ? json_object_to_json_string_ext(body,
		    JSON_C_TO_STRING_PLAIN) : "null");
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Type", "application/json");
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "X-Upstream", "yes");
		evhttp_send_reply(req, 200, "OK", out);
	} else {
		s = calloc(1, sizeof(*s));
		s->req = req;
		snprintf(s->model, sizeof(s->model), "%s", model);
		s->ev = evtimer_new(base, up_stream_tick, s);
		evhttp_connection_set_closecb(
		    evhttp_request_get_connection(req), up_stream_closed, s);
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Content-Type", "text/event-stream");
		evhttp_send_reply_start(req, 200, "OK");
		evtimer_add(s->ev, &tv);
	}
	json_object_put(body);
	evbuffer_free(out);
}

/* An upstream on port, bound after delay_ms (0: now). */
static pid_t
upstream_start(uint16_t port, int delay_ms, int health_503)
{
	struct sockaddr_in	 sin;
	struct event_base	*base;
	struct evhttp		*http;
	pid_t			 pid;
	int			 fd, one = 1;

	ATF_REQUIRE((pid = fork()) != -1);
	if (pid != 0)
		return (pid);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (delay_ms > 0)
		usleep(delay_ms * 1000);
	up_health_503 = health_503;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(port);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 16) == -1)
		_exit(2);
	evutil_make_socket_nonblocking(fd);
	base = event_base_new();
	http = evhttp_new(base);
	evhttp_set_gencb(http, up_cb, base);
	evhttp_accept_socket(http, fd);
	event_base_dispatch(base);
	_exit(0);
}

static uint16_t
free_port(void)
{
	uint16_t	 port;
	int		 fd;

	fd = listen_any(&port);
	close(fd);
	return (port);
}

/* ---- the parent's side of the channel ---- */

/* A message as agencyd writes it (the configuration's: send_config). */
static void
h_send(struct harness *h, uint32_t type, int fd, const void *data,
    size_t len)
{
	struct msgw	 w;

	ATF_REQUIRE(proto_write(&w, FROM_PARENT, type, data, len) == 0);
	ATF_REQUIRE(msg_compose(&h->ib, type, 0, fd, &w) != -1);
	ATF_REQUIRE(imsg_flush(&h->ib) == 0);
}

/* A status's end, with a memory of 3 MB in use and no budget. */
static void
status_end_send(struct harness *h, uint64_t reqid)
{
	struct proto_status_end	 end;

	memset(&end, 0, sizeof(end));
	end.reqid = reqid;
	end.mem.in_use = 3 << 20;
	end.mem.available = 1 << 30;
	end.mem.total = 2LL << 30;
	end.mem.reserve = -1;
	h_send(h, IMSG_STATUS_END, -1, &end, sizeof(end));
}

/* Read what the proxy sent within ms, each message read whole as
 * agencyd reads it; logs are kept aside. */
static void
h_pump(struct harness *h, int ms)
{
	struct pollfd	 pfd;
	struct imsg	 imsg;
	struct qmsg	*q;
	union proto_msg	 u;
	const char	*why;
	ssize_t		 n;

	pfd.fd = h->ib.fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, ms) <= 0)
		return;
	n = imsg_read(&h->ib);
	if (n == 0)
		atf_tc_fail("the proxy closed its channel; logs:\n%s",
		    h->logs);
	if (n == -1 && errno != EAGAIN)
		atf_tc_fail("imsg_read: %s", strerror(errno));
	while ((n = imsg_get(&h->ib, &imsg)) > 0) {
		ATF_REQUIRE_MSG(proto_read(&imsg, FROM_PROXY, &u, sizeof(u),
		    &why) == 0, "message %u: %s", imsg_get_type(&imsg), why);
		if (imsg_get_type(&imsg) == IMSG_LOG) {
			ATF_REQUIRE(u.log.pri >= 0 && u.log.pri <= LOG_DEBUG);
			fprintf(stderr, "proxy: %s\n", u.log.line);
			h->loglen += snprintf(h->logs + h->loglen,
			    sizeof(h->logs) - h->loglen, "%s\n", u.log.line);
			if (h->loglen >= sizeof(h->logs))
				h->loglen = 0;
		} else {
			ATF_REQUIRE(h->nq < 256);
			q = &h->q[h->nq++];
			q->type = imsg_get_type(&imsg);
			q->u = u;
		}
		imsg_free(&imsg);
	}
	ATF_REQUIRE(n == 0);
}

/* Take the first queued message of a type (and reqid if nonzero). */
static int
h_take(struct harness *h, uint32_t type, void *data, size_t len)
{
	size_t	 i;

	for (i = 0; i < h->nq; i++) {
		if (h->q[i].type != type)
			continue;
		ATF_REQUIRE(len <= sizeof(h->q[i].u));
		memcpy(data, &h->q[i].u, len);
		memmove(&h->q[i], &h->q[i + 1],
		    (h->nq - i - 1) * sizeof(h->q[0]));
		h->nq--;
		return (1);
	}
	return (0);
}

static void
h_wait(struct harness *h, uint32_t type, void *data, size_t len)
{
	int64_t	 end = now_ms() + WAIT_MS;

	while (!h_take(h, type, data, len)) {
		if (now_ms() > end)
			atf_tc_fail("no message %u in %d ms; logs:\n%s", type,
			    WAIT_MS, h->logs);
		h_pump(h, 50);
	}
}

static size_t
h_count(struct harness *h, uint32_t type)
{
	size_t	 i, n = 0;

	for (i = 0; i < h->nq; i++)
		if (h->q[i].type == type)
			n++;
	return (n);
}

/* Everything the proxy sent before answering this is queued after it. */
static void
h_barrier(struct harness *h)
{
	struct proto_cancel	 pc;

	memset(&pc, 0, sizeof(pc));
	pc.reqid = 1000000 + ++h->barrier;
	strlcpy(pc.model, "no-such-model", sizeof(pc.model));
	h_send(h, IMSG_CANCEL, -1, &pc, sizeof(pc));
	for (;;) {
		h_wait(h, IMSG_CANCEL_DONE, &pc, sizeof(pc));
		if (pc.reqid == 1000000 + h->barrier)
			break;
	}
	ATF_REQUIRE_EQ(pc.cancelled, 0);
}

/* A runtime of the configuration send_config builds. */
static struct runtime_conf *
conf_runtime(struct agency_conf *c, const char *name, int kind, int stops,
    int64_t max_tokens)
{
	struct runtime_conf	*rt;

	ATF_REQUIRE((rt = config_runtime_new()) != NULL);
	strlcpy(rt->name, name, sizeof(rt->name));
	rt->kind = kind;
	rt->stops = stops;
	rt->max_tokens = max_tokens;
	TAILQ_INSERT_TAIL(&c->runtimes, rt, entry);
	return (rt);
}

static struct model_conf *
conf_model(struct agency_conf *c, const char *name, struct runtime_conf *rt,
    int64_t max_tokens)
{
	struct model_conf	*m;

	ATF_REQUIRE((m = config_model_new()) != NULL);
	strlcpy(m->name, name, sizeof(m->name));
	strlcpy(m->runtime, rt->name, sizeof(m->runtime));
	m->rt = rt;
	snprintf(m->upstream, sizeof(m->upstream), "/srv/%s.gguf", name);
	m->max_tokens = max_tokens;
	TAILQ_INSERT_TAIL(&c->models, m, entry);
	return (m);
}

/* The configuration, as agencyd sends it (confimsg.c). */
static void
send_config(struct harness *h, int64_t max_body)
{
	struct agency_conf	*c;
	struct listen_conf	 l;
	struct runtime_conf	*llama;
	struct rule_move	*mv;
	struct model_conf	*m;
	char			 label[AGENCY_PATH_MAX];
	int			 lfd;

	ATF_REQUIRE((c = config_new()) != NULL);
	c->max_body = max_body;
	c->request_timeout = 3000;
	c->header_timeout = 0;
	c->body_timeout = 3000;
	c->body_buffer = 64 << 20;
	c->queue_timeout = 0;
	c->console = 0;
	ATF_REQUIRE(config_set_globals(&h->ib, c) == 0);

	lfd = listen_any(&h->port);
	memset(&l, 0, sizeof(l));
	strlcpy(l.host, "127.0.0.1", sizeof(l.host));
	l.port = h->port;
	ATF_REQUIRE(config_set_listen(&h->ib, &l, &c->tls, lfd) == 0);

	llama = conf_runtime(c, "llama", KIND_CHAT, STOPS_ALWAYS, 0);
	ATF_REQUIRE((mv = calloc(1, sizeof(*mv))) != NULL);
	strlcpy(mv->from, "max_completion_tokens", sizeof(mv->from));
	strlcpy(mv->to, "max_tokens", sizeof(mv->to));
	TAILQ_INSERT_TAIL(&llama->moves, mv, entry);
	ATF_REQUIRE(strlist_add(&llama->refuse, "logit_bias") == 0);
	conf_runtime(c, "keep", KIND_CHAT, STOPS_NEVER, 100);
	conf_runtime(c, "emb", KIND_EMBEDDING, STOPS_ALWAYS, 0);
	TAILQ_FOREACH(llama, &c->runtimes, entry)
		ATF_REQUIRE(config_set_runtime(&h->ib, llama) == 0);

	m = conf_model(c, "alpha", config_find_runtime(c, "llama"), 0);
	ATF_REQUIRE(strlist_add(&m->aliases, "a") == 0);
	conf_model(c, "beta", config_find_runtime(c, "keep"), 0);
	conf_model(c, "vec", config_find_runtime(c, "emb"), 0);
	TAILQ_FOREACH(m, &c->models, entry) {
		snprintf(label, sizeof(label), "model %s", m->name);
		ATF_REQUIRE(config_set_model(&h->ib, m, label) == 0);
	}
	ATF_REQUIRE(config_set_end(&h->ib) == 0);
	ATF_REQUIRE(imsg_flush(&h->ib) == 0);
	config_free(c);
}

static const char	*proxy_user;

static void
proxy_start(const atf_tc_t *tc, struct harness *h, int64_t max_body)
{
	char		 path[1024];
	int		 sp[2];
	struct qmsg	 dummy;

	(void)dummy;
	memset(h, 0, sizeof(*h));
	snprintf(path, sizeof(path), "%s/../../agency-proxy/agency-proxy",
	    atf_tc_get_config_var(tc, "srcdir"));
	ATF_REQUIRE_MSG(access(path, X_OK) == 0, "no %s", path);
	signal(SIGPIPE, SIG_IGN);
	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == 0);
	ATF_REQUIRE((h->proxy = fork()) != -1);
	if (h->proxy == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(sp[0]);
		if (sp[1] != 3) {
			dup2(sp[1], 3);
			close(sp[1]);
		}
		if (proxy_user != NULL)
			execl(path, "agency-proxy", "-d", "-v", "-u",
			    proxy_user, (char *)NULL);
		else
			execl(path, "agency-proxy", "-d", "-v", (char *)NULL);
		_exit(127);
	}
	close(sp[1]);
	imsg_init(&h->ib, sp[0]);
	send_config(h, max_body);
	h_wait(h, IMSG_PROXY_READY, &dummy, 0);
}

static void
proxy_stop(struct harness *h)
{
	int	 status;

	if (h->upstream > 0) {
		kill(h->upstream, SIGKILL);
		waitpid(h->upstream, &status, 0);
		h->upstream = 0;
	}
	/* EOF on fd 3 must end the proxy */
	close(h->ib.fd);
	ATF_REQUIRE(waitpid(h->proxy, &status, 0) == h->proxy);
	ATF_REQUIRE(WIFEXITED(status));
}

/* ---- the HTTP client ---- */

static int
cl_connect(struct harness *h)
{
	struct sockaddr_in	 sin;
	int			 fd;

	ATF_REQUIRE((fd = socket(AF_INET, SOCK_STREAM, 0)) != -1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(h->port);
	ATF_REQUIRE(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	return (fd);
}

static int
cl_send(struct harness *h, const char *method, const char *path,
    const char *host, const char *ctype, const char *body)
{
	char	 head[2048];
	int	 fd = cl_connect(h), n;
	char	 hostbuf[64];

	if (host == NULL) {
		snprintf(hostbuf, sizeof(hostbuf), "127.0.0.1:%u", h->port);
		host = hostbuf;
	}
	n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nHost: %s\r\n"
	    "Connection: close\r\n%s%s%sContent-Length: %zu\r\n\r\n",
	    method, path, host, ctype ? "Content-Type: " : "",
	    ctype ? ctype : "", ctype ? "\r\n" : "",
	    body ? strlen(body) : 0);
	ATF_REQUIRE(write(fd, head, n) == n);
	if (body != NULL && *body != '\0')
		ATF_REQUIRE(write(fd, body, strlen(body)) ==
		    (ssize_t)strlen(body));
	return (fd);
}

/* Read until EOF, pumping the channel meanwhile. */
static char *
cl_read(struct harness *h, int fd)
{
	static char	 buf[1 << 20];
	size_t		 len = 0;
	struct pollfd	 pfd;
	int64_t		 end = now_ms() + WAIT_MS;
	ssize_t		 n;

	for (;;) {
		ATF_REQUIRE_MSG(now_ms() < end, "no answer; got: %.*s",
		    (int)len, buf);
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 20) == 0) {
			h_pump(h, 0);
			continue;
		}
		n = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (n <= 0)
			break;
		len += n;
	}
	buf[len] = '\0';
	close(fd);
	return (buf);
}

static int
status_of(const char *resp)
{
	int	 code = 0;

	sscanf(resp, "HTTP/1.%*d %d", &code);
	return (code);
}

static char *
request(struct harness *h, const char *method, const char *path,
    const char *host, const char *ctype, const char *body)
{
	return (cl_read(h, cl_send(h, method, path, host, ctype, body)));
}

#define CHECK_HAS(resp, s)	ATF_CHECK_MSG(strstr((resp), (s)) != NULL, \
				    "no '%s' in: %s", (s), (resp))

static void
grant(struct harness *h, uint64_t reqid, uint64_t holdid, uint16_t port,
    const char *upstream)
{
	struct proto_hold_grant	 g;

	memset(&g, 0, sizeof(g));
	g.reqid = reqid;
	g.holdid = holdid;
	g.port = port;
	ATF_REQUIRE(strlcpy(g.upstream, upstream, sizeof(g.upstream)) <
	    sizeof(g.upstream));
	strlcpy(g.label, "lbl", sizeof(g.label));
	h_send(h, IMSG_HOLD_GRANT, -1, &g, sizeof(g));
}

/* Exactly one release for the hold, and no other. */
static void
released_once(struct harness *h, uint64_t holdid)
{
	struct proto_holdid	 ph;

	h_wait(h, IMSG_HOLD_RELEASE, &ph, sizeof(ph));
	ATF_CHECK_EQ(ph.holdid, holdid);
	h_barrier(h);
	ATF_CHECK_EQ_MSG(h_count(h, IMSG_HOLD_RELEASE), 0,
	    "hold %llu released more than once", (unsigned long long)holdid);
}

static void
start_upstream(struct harness *h)
{
	char	 path[64];
	int64_t	 end = now_ms() + WAIT_MS;
	int	 fd;
	struct sockaddr_in	 sin;

	h->upport = free_port();
	h->upstream = upstream_start(h->upport, 0, 0);
	/* wait until it accepts */
	(void)path;
	for (;;) {
		ATF_REQUIRE(now_ms() < end);
		fd = socket(AF_INET, SOCK_STREAM, 0);
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sin.sin_port = htons(h->upport);
		if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0) {
			close(fd);
			break;
		}
		close(fd);
		usleep(5000);
	}
}

static char *
upstream_stats(struct harness *h)
{
	static char	 out[256];
	struct sockaddr_in	 sin;
	char		 buf[4096];
	const char	*req = "GET /stats HTTP/1.0\r\n\r\n";
	ssize_t		 n;
	size_t		 len = 0;
	int		 fd;
	char		*p;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(h->upport);
	ATF_REQUIRE(connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0);
	ATF_REQUIRE(write(fd, req, strlen(req)) == (ssize_t)strlen(req));
	while ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += n;
	buf[len] = '\0';
	close(fd);
	p = strstr(buf, "completed=");
	snprintf(out, sizeof(out), "%s", p ? p : "");
	return (out);
}

/* ---- the tests ---- */

ATF_TC(health_models);
ATF_TC_HEAD(health_models, tc)
{
	atf_tc_set_md_var(tc, "descr", "/health and /v1/models");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(health_models, tc)
{
	struct harness	 h;
	char		*r;

	proxy_start(tc, &h, 1 << 20);
	r = request(&h, "GET", "/health", NULL, NULL, NULL);
	ATF_CHECK_EQ(status_of(r), 200);
	CHECK_HAS(r, "{\"status\":\"ok\"}");
	r = request(&h, "GET", "/v1/models", NULL, NULL, NULL);
	ATF_CHECK_EQ(status_of(r), 200);
	CHECK_HAS(r, "\"object\":\"list\"");
	CHECK_HAS(r, "\"id\":\"alpha\"");
	CHECK_HAS(r, "\"id\":\"a\"");
	CHECK_HAS(r, "\"id\":\"beta\"");
	CHECK_HAS(r, "\"id\":\"vec\"");
	proxy_stop(&h);
}

ATF_TC(forward_rewrite);
ATF_TC_HEAD(forward_rewrite, tc)
{
	atf_tc_set_md_var(tc, "descr", "a chat completion is forwarded "
	    "with the model rewritten, the cap applied and usage logged");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(forward_rewrite, tc)
{
	struct harness		 h;
	struct proto_hold_req	 hr;
	char			*r;
	int			 fd;

	proxy_start(tc, &h, 1 << 20);
	start_upstream(&h);

	fd = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"a\",\"messages\":[{\"role\":"
	    "\"user\",\"content\":\"hi\"}],\"max_completion_tokens\":9}");
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	ATF_CHECK_STREQ(hr.model, "alpha");	/* the alias resolved */
	ATF_CHECK(hr.reqid != 0);
	grant(&h, hr.reqid, 77, h.upport, "alpha-upstream");
	r = cl_read(&h, fd);
	ATF_CHECK_EQ(status_of(r), 200);
	CHECK_HAS(r, "\"model\":\"alpha-upstream\"");
	CHECK_HAS(r, "\"max_tokens\":9");	/* moved */
	ATF_CHECK(strstr(r, "max_completion_tokens") == NULL);
	CHECK_HAS(r, "X-Upstream: yes");
	released_once(&h, 77);
	CHECK_HAS(h.logs, "POST /v1/chat/completions alpha 200");
	CHECK_HAS(h.logs, "3->5 tokens");

	/* the cap of the runtime "keep" (100), added when absent */
	fd = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"beta\",\"max_tokens\":5000}");
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	ATF_CHECK_STREQ(hr.model, "beta");
	grant(&h, hr.reqid, 78, h.upport, "beta-up");
	r = cl_read(&h, fd);
	ATF_CHECK_EQ(status_of(r), 200);
	CHECK_HAS(r, "\"max_tokens\":100");
	released_once(&h, 78);
	proxy_stop(&h);
}

ATF_TC(upstream_request);
ATF_TC_HEAD(upstream_request, tc)
{
	atf_tc_set_md_var(tc, "descr", "the request a model server gets is "
	    "exactly its line, the model server's Host, the client's "
	    "end-to-end fields, its length and the body as the grant made "
	    "it; the answer's header and body reach the client");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(upstream_request, tc)
{
	struct harness		 h;
	struct proto_hold_req	 hr;
	struct pollfd		 pfd;
	const char		*body =
				    "{\"model\":\"vec-up\",\"input\":\"x\"}";
	const char		*answer = "HTTP/1.1 200 OK\r\n"
				    "Content-Type: application/json\r\n"
				    "Content-Length: 11\r\n\r\n{\"data\":[]}";
	char			 want[512], got[512], *r;
	size_t			 len = 0;
	ssize_t			 n;
	int64_t			 end;
	uint16_t		 port;
	int			 lfd, ufd = -1, fd, wantlen;

	proxy_start(tc, &h, 1 << 20);
	lfd = listen_any(&port);
	fd = cl_send(&h, "POST", "/v1/embeddings", NULL, "application/json",
	    "{\"model\":\"vec\",\"input\":\"x\"}");
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	grant(&h, hr.reqid, 79, port, "vec-up");
	wantlen = snprintf(want, sizeof(want), "POST /v1/embeddings "
	    "HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nContent-Type: "
	    "application/json\r\nContent-Length: %zu\r\n\r\n%s", port,
	    strlen(body), body);
	/* what the model server reads, all of it */
	end = now_ms() + WAIT_MS;
	while (len < (size_t)wantlen) {
		ATF_REQUIRE_MSG(now_ms() < end, "got %zu bytes: %.*s", len,
		    (int)len, got);
		pfd.fd = ufd == -1 ? lfd : ufd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 20) == 0) {
			h_pump(&h, 0);
			continue;
		}
		if (ufd == -1) {
			ATF_REQUIRE((ufd = accept(lfd, NULL, NULL)) != -1);
			continue;
		}
		n = read(ufd, got + len, sizeof(got) - 1 - len);
		ATF_REQUIRE_MSG(n > 0, "the request ended at %zu bytes", len);
		len += n;
	}
	got[len] = '\0';
	ATF_CHECK_EQ(len, (size_t)wantlen);
	ATF_CHECK_MSG(memcmp(got, want, wantlen) == 0,
	    "sent:\n%s\nwanted:\n%s", got, want);
	ATF_REQUIRE(write(ufd, answer, strlen(answer)) ==
	    (ssize_t)strlen(answer));
	r = cl_read(&h, fd);
	ATF_CHECK_EQ(status_of(r), 200);
	CHECK_HAS(r, "Content-Length: 11\r\n");
	CHECK_HAS(r, "\r\n\r\n{\"data\":[]}");
	released_once(&h, 79);
	close(ufd);
	close(lfd);
	proxy_stop(&h);
}

ATF_TC(stream_spaced);
ATF_TC_HEAD(stream_spaced, tc)
{
	atf_tc_set_md_var(tc, "descr", "streamed chunks reach the client "
	    "as they come, and the hold is released once");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(stream_spaced, tc)
{
	struct harness		 h;
	struct proto_hold_req	 hr;
	struct pollfd		 pfd;
	char			 buf[65536];
	size_t			 len = 0;
	int64_t			 first = -1, last = -1, end;
	int			 fd, reads = 0;
	ssize_t			 n;

	proxy_start(tc, &h, 1 << 20);
	start_upstream(&h);
	fd = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"alpha\",\"stream\":true}");
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	grant(&h, hr.reqid, 5, h.upport, "up");
	end = now_ms() + WAIT_MS;
	for (;;) {
		ATF_REQUIRE(now_ms() < end);
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 20) == 0)
			continue;
		if ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) <= 0)
			break;
		buf[len + n] = '\0';
		if (memmem(buf + len, n, "data:", 5) != NULL) {
			if (first == -1)
				first = now_ms();
			last = now_ms();
			reads++;
		}
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	ATF_CHECK_EQ(status_of(buf), 200);
	CHECK_HAS(buf, "text/event-stream");
	CHECK_HAS(buf, "data: [DONE]");
	/* five chunks 100 ms apart: spread over >= 300 ms, several reads */
	ATF_CHECK_MSG(last - first >= 3 * CHUNK_MS, "chunks came within %lld"
	    " ms", (long long)(last - first));
	ATF_CHECK_MSG(reads >= 4, "only %d reads carried data", reads);
	released_once(&h, 5);
	CHECK_HAS(h.logs, "7->5 tokens");
	proxy_stop(&h);
}

static void
disconnect_case(const atf_tc_t *tc, const char *model, int stops)
{
	struct harness		 h;
	struct proto_hold_req	 hr;
	struct proto_holdid	 ph;
	struct pollfd		 pfd;
	char			 buf[4096], body[128];
	int64_t			 t0, end;
	int			 fd;
	ssize_t			 n;

	proxy_start(tc, &h, 1 << 20);
	start_upstream(&h);
	snprintf(body, sizeof(body), "{\"model\":\"%s\",\"stream\":true}",
	    model);
	fd = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", body);
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	grant(&h, hr.reqid, 9, h.upport, "up");
	/* the first chunk, then leave */
	end = now_ms() + WAIT_MS;
	for (;;) {
		ATF_REQUIRE(now_ms() < end);
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 20) == 0)
			continue;
		ATF_REQUIRE((n = read(fd, buf, sizeof(buf) - 1)) > 0);
		buf[n] = '\0';
		if (strstr(buf, "data:") != NULL)
			break;
	}
	t0 = now_ms();
	close(fd);
	h_wait(&h, IMSG_HOLD_RELEASE, &ph, sizeof(ph));
	ATF_CHECK_EQ(ph.holdid, 9);
	h_barrier(&h);
	ATF_CHECK_EQ(h_count(&h, IMSG_HOLD_RELEASE), 0);
	if (stops) {
		/* released before the answer could have ended */
		ATF_CHECK_MSG(now_ms() - t0 < (NCHUNKS - 1) * CHUNK_MS,
		    "release took %lld ms", (long long)(now_ms() - t0));
		end = now_ms() + WAIT_MS;
		while (strcmp(upstream_stats(&h), "completed=0 aborted=1")
		    != 0) {
			ATF_REQUIRE_MSG(now_ms() < end, "upstream: %s",
			    upstream_stats(&h));
			usleep(10000);
		}
	} else {
		/* drained: the upstream finished its answer first */
		ATF_CHECK_STREQ(upstream_stats(&h), "completed=1 aborted=0");
		ATF_CHECK_MSG(now_ms() - t0 >= (NCHUNKS - 2) * CHUNK_MS,
		    "released after %lld ms", (long long)(now_ms() - t0));
	}
	proxy_stop(&h);
}

ATF_TC(disconnect_stop);
ATF_TC_HEAD(disconnect_stop, tc)
{
	atf_tc_set_md_var(tc, "descr", "client leaves mid-stream, stops on "
	    "close always: upstream closed, hold released at once");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(disconnect_stop, tc)
{
	disconnect_case(tc, "alpha", 1);
}

ATF_TC(disconnect_drain);
ATF_TC_HEAD(disconnect_drain, tc)
{
	atf_tc_set_md_var(tc, "descr", "client leaves mid-stream, stops on "
	    "close never: the answer drains, then the release");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(disconnect_drain, tc)
{
	disconnect_case(tc, "beta", 0);
}

ATF_TC(upstream_refused);
ATF_TC_HEAD(upstream_refused, tc)
{
	atf_tc_set_md_var(tc, "descr", "nothing on the granted port: 502 "
	    "naming the label, hold released once");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(upstream_refused, tc)
{
	struct harness		 h;
	struct proto_hold_req	 hr;
	char			*r;
	int			 fd;

	proxy_start(tc, &h, 1 << 20);
	fd = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"alpha\"}");
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	grant(&h, hr.reqid, 11, free_port(), "up");
	r = cl_read(&h, fd);
	ATF_CHECK_EQ(status_of(r), 502);
	CHECK_HAS(r, "\"message\":\"lbl: ");
	CHECK_HAS(r, "\"code\":\"upstream_error\"");
	released_once(&h, 11);
	proxy_stop(&h);
}

/* A model request the parent refuses with reason and retry_after: the
 * answer the client reads. */
static char *
refused_answer(struct harness *h, int reason, int retry, const char *msg)
{
	struct proto_hold_req		 hr;
	struct proto_hold_refuse	 rf;
	int				 fd;

	fd = cl_send(h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"alpha\"}");
	h_wait(h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	memset(&rf, 0, sizeof(rf));
	rf.reqid = hr.reqid;
	rf.reason = reason;
	rf.retry_after = retry;
	strlcpy(rf.message, msg, sizeof(rf.message));
	h_send(h, IMSG_HOLD_REFUSE, -1, &rf, sizeof(rf));
	return (cl_read(h, fd));
}

ATF_TC(refusals);
ATF_TC_HEAD(refusals, tc)
{
	atf_tc_set_md_var(tc, "descr", "the parent's refusals map to 503 "
	    "and 502 with its message; nothing to release");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(refusals, tc)
{
	struct harness			 h;
	char				*r;

	proxy_start(tc, &h, 1 << 20);
	r = refused_answer(&h, REFUSE_NOT_ENOUGH_MEMORY, 0,
	    "need 6G, have 2G: beta busy");
	ATF_CHECK_EQ(status_of(r), 503);
	CHECK_HAS(r, "need 6G, have 2G: beta busy");
	CHECK_HAS(r, "\"code\":\"not_enough_memory\"");
	ATF_CHECK(strstr(r, "Retry-After") == NULL);

	r = refused_answer(&h, REFUSE_LOAD_FAILED, 0,
	    "model alpha exited with 1");
	ATF_CHECK_EQ(status_of(r), 502);
	CHECK_HAS(r, "\"code\":\"load_failed\"");
	h_barrier(&h);
	ATF_CHECK_EQ(h_count(&h, IMSG_HOLD_RELEASE), 0);
	proxy_stop(&h);
}

ATF_TC(refusals_queue);
ATF_TC_HEAD(refusals_queue, tc)
{
	atf_tc_set_md_var(tc, "descr", "the queue's refusals: 503 "
	    "queue_full and queue_timeout, 429 for a busy model, each with "
	    "the parent's Retry-After");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(refusals_queue, tc)
{
	static const struct {
		int		 reason;
		int		 retry;
		int		 status;
		const char	*code;
		const char	*header;
	} cases[] = {
		{ REFUSE_QUEUE_FULL, 12, 503, "queue_full",
		    "\r\nRetry-After: 12\r\n" },
		{ REFUSE_QUEUE_TIMEOUT, 3600, 503, "queue_timeout",
		    "\r\nRetry-After: 3600\r\n" },
		{ REFUSE_MODEL_BUSY, 1, 429, "queue_full",
		    "\r\nRetry-After: 1\r\n" },
	};
	struct harness			 h;
	char				*r = NULL;
	size_t				 i;

	proxy_start(tc, &h, 1 << 20);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = refused_answer(&h, cases[i].reason, cases[i].retry,
		    "alpha: the queue says no");
		ATF_CHECK_EQ(status_of(r), cases[i].status);
		CHECK_HAS(r, cases[i].header);
		CHECK_HAS(r, cases[i].code);
		CHECK_HAS(r, "alpha: the queue says no");
	}
	CHECK_HAS(r, "HTTP/1.1 429 Too Many Requests\r\n");
	CHECK_HAS(r, "\"type\":\"rate_limit_error\"");
	h_barrier(&h);
	ATF_CHECK_EQ(h_count(&h, IMSG_HOLD_RELEASE), 0);
	proxy_stop(&h);
}

ATF_TC(withdraw);
ATF_TC_HEAD(withdraw, tc)
{
	atf_tc_set_md_var(tc, "descr", "a client that leaves before the "
	    "grant is withdrawn; a late grant is released at once");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(withdraw, tc)
{
	struct harness		 h;
	struct proto_hold_req	 hr;
	struct proto_reqid	 pr;
	int			 fd;

	proxy_start(tc, &h, 1 << 20);
	fd = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"alpha\"}");
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	close(fd);
	h_wait(&h, IMSG_HOLD_WITHDRAW, &pr, sizeof(pr));
	ATF_CHECK_EQ(pr.reqid, hr.reqid);
	grant(&h, hr.reqid, 21, 1, "up");
	released_once(&h, 21);
	/* a grant nobody asked for */
	grant(&h, 424242, 22, 1, "up");
	released_once(&h, 22);
	proxy_stop(&h);
}

ATF_TC(errors);
ATF_TC_HEAD(errors, tc)
{
	atf_tc_set_md_var(tc, "descr", "404, 400, 413, 403 and 415 in the "
	    "OpenAI error shape, before any hold");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(errors, tc)
{
	struct harness	 h;
	char		*r, big[3000];

	proxy_start(tc, &h, 2048);
	r = request(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"nope\"}");
	ATF_CHECK_EQ(status_of(r), 404);
	CHECK_HAS(r, "served models: alpha, beta, vec");
	CHECK_HAS(r, "\"code\":\"model_not_found\"");
	CHECK_HAS(r, "\"type\":");

	r = request(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":");
	ATF_CHECK_EQ(status_of(r), 400);
	CHECK_HAS(r, "\"code\":\"invalid_json\"");

	r = request(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"messages\":[]}");
	ATF_CHECK_EQ(status_of(r), 400);
	CHECK_HAS(r, "\"code\":\"model_required\"");

	r = request(&h, "POST", "/v1/embeddings", NULL, "application/json",
	    "{\"model\":\"alpha\"}");
	ATF_CHECK_EQ(status_of(r), 404);
	CHECK_HAS(r, "does not serve /v1/embeddings");

	r = request(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"alpha\",\"logit_bias\":{}}");
	ATF_CHECK_EQ(status_of(r), 400);
	CHECK_HAS(r, "logit_bias");

	r = request(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"alpha\",\"messages\":[{"
	    "\"role\":\"user\",\"content\":[{\"type\":\"image_url\","
	    "\"image_url\":{\"url\":\"http://evil/x.png\"}}]}]}");
	ATF_CHECK_EQ(status_of(r), 400);

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	r = request(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", big);
	ATF_CHECK_EQ(status_of(r), 413);

	r = request(&h, "GET", "/v1/agency/status", "evil.example:80", NULL,
	    NULL);
	ATF_CHECK_EQ(status_of(r), 403);
	CHECK_HAS(r, "\"code\":\"forbidden_host\"");
	r = request(&h, "GET", "/v1/agency/status", "127.0.0.1:1", NULL,
	    NULL);
	ATF_CHECK_EQ(status_of(r), 403);

	r = request(&h, "POST", "/v1/agency/cancel", NULL, "text/plain",
	    "{\"model\":\"alpha\"}");
	ATF_CHECK_EQ(status_of(r), 415);

	r = request(&h, "GET", "/nowhere", NULL, NULL, NULL);
	ATF_CHECK_EQ(status_of(r), 404);

	h_barrier(&h);
	ATF_CHECK_EQ(h_count(&h, IMSG_HOLD_REQ), 0);
	proxy_stop(&h);
}

ATF_TC(probe_retry);
ATF_TC_HEAD(probe_retry, tc)
{
	atf_tc_set_md_var(tc, "descr", "a probe retries a closed port until "
	    "it opens, and retries 503 until 200");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(probe_retry, tc)
{
	struct harness			 h;
	struct proto_probe		 pp;
	struct proto_probe_result	 res;
	int64_t				 t0;

	proxy_start(tc, &h, 1 << 20);

	/* the port opens 300 ms later */
	h.upport = free_port();
	memset(&pp, 0, sizeof(pp));
	pp.loadid = 31;
	pp.port = h.upport;
	pp.method = READY_GET;
	strlcpy(pp.path, "/health", sizeof(pp.path));
	strlcpy(pp.label, "m", sizeof(pp.label));
	t0 = now_ms();
	h_send(&h, IMSG_PROBE, -1, &pp, sizeof(pp));
	h.upstream = upstream_start(h.upport, 300, 0);
	h_wait(&h, IMSG_PROBE_RESULT, &res, sizeof(res));
	ATF_CHECK_EQ(res.loadid, 31);
	ATF_CHECK_EQ(res.ok, 1);
	ATF_CHECK_EQ(res.status, 200);
	ATF_CHECK_STREQ(res.body, "ok after 1");
	ATF_CHECK(now_ms() - t0 >= 300);
	kill(h.upstream, SIGKILL);
	waitpid(h.upstream, NULL, 0);

	/* 503 three times, then 200 */
	h.upport = free_port();
	h.upstream = upstream_start(h.upport, 0, 3);
	pp.loadid = 32;
	pp.port = h.upport;
	h_send(&h, IMSG_PROBE, -1, &pp, sizeof(pp));
	h_wait(&h, IMSG_PROBE_RESULT, &res, sizeof(res));
	ATF_CHECK_EQ(res.loadid, 32);
	ATF_CHECK_EQ(res.ok, 1);
	ATF_CHECK_STREQ(res.body, "ok after 4");

	/* a cancelled probe never answers */
	pp.loadid = 33;
	pp.port = free_port();
	h_send(&h, IMSG_PROBE, -1, &pp, sizeof(pp));
	{
		struct proto_loadid	 pl = { 33 };

		h_send(&h, IMSG_PROBE_CANCEL, -1, &pl, sizeof(pl));
	}
	h_barrier(&h);
	ATF_CHECK_EQ(h_count(&h, IMSG_PROBE_RESULT), 0);
	proxy_stop(&h);
}

ATF_TC(status_json);
ATF_TC_HEAD(status_json, tc)
{
	atf_tc_set_md_var(tc, "descr", "GET /v1/agency/status is built from "
	    "the parent's STATUS_MODEL messages");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(status_json, tc)
{
	struct harness		 h;
	struct proto_reqid	 pr;
	struct proto_status	 st;
	json_object		*o, *models, *m, *v;
	char			*r, *body;
	int			 fd;

	proxy_start(tc, &h, 1 << 20);
	fd = cl_send(&h, "GET", "/v1/agency/status", NULL, NULL, NULL);
	h_wait(&h, IMSG_STATUS_REQ, &pr, sizeof(pr));
	memset(&st, 0, sizeof(st));
	st.reqid = pr.reqid;
	strlcpy(st.model, "alpha", sizeof(st.model));
	strlcpy(st.runtime, "llama", sizeof(st.runtime));
	st.state = STATE_READY;
	st.in_progress = 2;
	st.last_used = 1700000000123LL;
	st.pid = 4242;
	st.port = 5801;
	st.loaded_at = 1700000000000LL;
	st.loads = 1;
	h_send(&h, IMSG_STATUS_MODEL, -1, &st, sizeof(st));
	memset(&st, 0, sizeof(st));
	st.reqid = pr.reqid;
	strlcpy(st.model, "beta", sizeof(st.model));
	st.state = STATE_FAILED;
	strlcpy(st.error, "model beta was killed by SIGKILL",
	    sizeof(st.error));
	st.last_used = -1;
	st.loaded_at = -1;
	h_send(&h, IMSG_STATUS_MODEL, -1, &st, sizeof(st));
	status_end_send(&h, pr.reqid);
	r = cl_read(&h, fd);
	ATF_REQUIRE_EQ(status_of(r), 200);
	ATF_REQUIRE((body = strstr(r, "\r\n\r\n")) != NULL);
	ATF_REQUIRE_MSG((o = json_tokener_parse(body + 4)) != NULL, "%s", r);
	ATF_REQUIRE(json_object_object_get_ex(o, "models", &models));
	ATF_REQUIRE_EQ(json_object_array_length(models), 2);
	/* the memory that came with the end */
	ATF_REQUIRE(json_object_object_get_ex(o, "memory", &v));
	ATF_CHECK(json_object_object_get_ex(v, "inUse", &m));
	ATF_CHECK_EQ(json_object_get_int64(m), 3 << 20);
	ATF_CHECK(json_object_object_get_ex(v, "budget", &m));
	ATF_CHECK(m == NULL);
	m = json_object_array_get_idx(models, 0);
	json_object_object_get_ex(m, "state", &v);
	ATF_CHECK_STREQ(json_object_get_string(v), "ready");
	json_object_object_get_ex(m, "requestsInProgress", &v);
	ATF_CHECK_EQ(json_object_get_int(v), 2);
	json_object_object_get_ex(m, "lastUsedAt", &v);
	ATF_CHECK_EQ(json_object_get_int64(v), 1700000000123LL);
	json_object_object_get_ex(m, "error", &v);
	ATF_CHECK(v == NULL);
	json_object_object_get_ex(m, "pid", &v);
	ATF_CHECK_EQ(json_object_get_int(v), 4242);
	m = json_object_array_get_idx(models, 1);
	json_object_object_get_ex(m, "state", &v);
	ATF_CHECK_STREQ(json_object_get_string(v), "failed");
	json_object_object_get_ex(m, "error", &v);
	ATF_CHECK_STREQ(json_object_get_string(v),
	    "model beta was killed by SIGKILL");
	ATF_CHECK(json_object_object_get_ex(m, "lastUsedAt", &v) && v == NULL);
	json_object_put(o);
	proxy_stop(&h);
}

ATF_TC(metrics_text);
ATF_TC_HEAD(metrics_text, tc)
{
	atf_tc_set_md_var(tc, "descr", "GET /metrics is the Prometheus text "
	    "from the parent's status and the proxy's counters, guarded "
	    "by the admin Host check");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(metrics_text, tc)
{
	struct harness		 h;
	struct proto_reqid	 pr;
	struct proto_status	 st;
	char			*r;
	int			 fd;
	size_t			 i;
	static const char	*want[] = {
		"HTTP/1.1 200 ",
		"Content-Type: text/plain; version=0.0.4",
		"# TYPE agency_requests_total counter\n",
		"agency_requests_total{model=\"alpha\",code=\"2xx\"} 0\n",
		"agency_unrouted_requests_total{code=\"4xx\"} 2\n",
		"agency_requests_in_progress{model=\"alpha\"} 2\n",
		"agency_model_state{model=\"alpha\",state=\"ready\"} 1\n",
		"agency_model_state{model=\"alpha\",state=\"failed\"} 0\n",
		"agency_model_loads_total{model=\"alpha\"} 2\n",
		"agency_model_load_failures_total{model=\"alpha\"} 1\n",
		"agency_model_evictions_total{model=\"alpha\"} 3\n",
		"agency_model_restarts_total{model=\"alpha\"} 4\n",
		"# TYPE agency_model_load_duration_seconds histogram\n",
		"agency_model_load_duration_seconds_bucket{model=\"alpha\","
		    "le=\"0.1\"} 1\n",
		"agency_model_load_duration_seconds_bucket{model=\"alpha\","
		    "le=\"0.5\"} 1\n",
		"agency_model_load_duration_seconds_bucket{model=\"alpha\","
		    "le=\"1\"} 2\n",
		"agency_model_load_duration_seconds_bucket{model=\"alpha\","
		    "le=\"+Inf\"} 2\n",
		"agency_model_load_duration_seconds_sum{model=\"alpha\"} "
		    "1.100\n",
		"agency_model_load_duration_seconds_count{model=\"alpha\"} 2\n",
		"# TYPE agency_client_connections gauge\n",
		"agency_client_connections 1\n",
		NULL
	};

	proxy_start(tc, &h, 1 << 20);
	/* A foreign Host: 403, and the parent is not asked. */
	fd = cl_send(&h, "GET", "/metrics", "evil.example:80", NULL, NULL);
	r = cl_read(&h, fd);
	ATF_REQUIRE_EQ_MSG(status_of(r), 403, "%s", r);
	fd = cl_send(&h, "POST", "/metrics", NULL, "application/json", "{}");
	r = cl_read(&h, fd);
	ATF_REQUIRE_EQ_MSG(status_of(r), 405, "%s", r);

	fd = cl_send(&h, "GET", "/metrics", NULL, NULL, NULL);
	h_wait(&h, IMSG_STATUS_REQ, &pr, sizeof(pr));
	memset(&st, 0, sizeof(st));
	st.reqid = pr.reqid;
	strlcpy(st.model, "alpha", sizeof(st.model));
	strlcpy(st.runtime, "llama", sizeof(st.runtime));
	st.state = STATE_READY;
	st.in_progress = 2;
	st.loads = 2;
	st.load_failures = 1;
	st.evictions = 3;
	st.restarts = 4;
	st.load_hist[0] = 1;		/* 100 ms */
	st.load_hist[3] = 1;		/* 1 s */
	st.load_ms_sum = 1100;
	h_send(&h, IMSG_STATUS_MODEL, -1, &st, sizeof(st));
	status_end_send(&h, pr.reqid);
	r = cl_read(&h, fd);
	for (i = 0; want[i] != NULL; i++)
		ATF_CHECK_MSG(strstr(r, want[i]) != NULL, "no \"%s\" in %s",
		    want[i], r);
	proxy_stop(&h);
}

ATF_TC(cancel);
ATF_TC_HEAD(cancel, tc)
{
	atf_tc_set_md_var(tc, "descr", "cancel (the admin route's sent by "
	    "the parent it asks) ends a streaming request and a waiting one, "
	    "answers the count, releases the hold");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(cancel, tc)
{
	struct harness		 h;
	struct proto_hold_req	 hr, hr2;
	struct proto_cancel	 pc, pc2;
	struct proto_reqid	 pr;
	struct pollfd		 pfd;
	char			 buf[4096], *r;
	int			 fd, fd2, fd3;
	int64_t			 end;
	ssize_t			 n;

	proxy_start(tc, &h, 1 << 20);
	start_upstream(&h);
	fd = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"alpha\",\"stream\":true}");
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	grant(&h, hr.reqid, 41, h.upport, "up");
	end = now_ms() + WAIT_MS;
	for (;;) {
		ATF_REQUIRE(now_ms() < end);
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 20) == 0)
			continue;
		ATF_REQUIRE((n = read(fd, buf, sizeof(buf) - 1)) > 0);
		buf[n] = '\0';
		if (strstr(buf, "data:") != NULL)
			break;
	}
	fd2 = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"a\"}");
	h_wait(&h, IMSG_HOLD_REQ, &hr2, sizeof(hr2));

	/* the proxy asks the parent, which sends the cancel back */
	fd3 = cl_send(&h, "POST", "/v1/agency/cancel", NULL,
	    "application/json", "{\"model\":\"a\"}");
	h_wait(&h, IMSG_CANCEL, &pc, sizeof(pc));
	ATF_CHECK(pc.reqid != 0);
	ATF_CHECK_STREQ(pc.model, "alpha");
	h_send(&h, IMSG_CANCEL, -1, &pc, sizeof(pc));
	h_wait(&h, IMSG_CANCEL_DONE, &pc2, sizeof(pc2));
	ATF_CHECK_EQ(pc2.reqid, pc.reqid);
	ATF_CHECK_STREQ(pc2.model, "alpha");
	ATF_CHECK_EQ(pc2.cancelled, 2);
	r = cl_read(&h, fd3);
	ATF_CHECK_EQ(status_of(r), 200);
	CHECK_HAS(r, "{\"cancelled\":2}");
	h_wait(&h, IMSG_HOLD_WITHDRAW, &pr, sizeof(pr));
	ATF_CHECK_EQ(pr.reqid, hr2.reqid);
	released_once(&h, 41);
	r = cl_read(&h, fd2);
	ATF_CHECK_EQ(status_of(r), 499);
	CHECK_HAS(r, "\"code\":\"cancelled\"");
	r = cl_read(&h, fd);		/* closed, without the end */
	ATF_CHECK(strstr(r, "[DONE]") == NULL);

	/* from agency-ctl, through the parent */
	fd = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"beta\"}");
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	memset(&pc, 0, sizeof(pc));
	pc.reqid = 99;
	strlcpy(pc.model, "beta", sizeof(pc.model));
	h_send(&h, IMSG_CANCEL, -1, &pc, sizeof(pc));
	h_wait(&h, IMSG_CANCEL_DONE, &pc, sizeof(pc));
	ATF_CHECK_EQ(pc.reqid, 99);
	ATF_CHECK_EQ(pc.cancelled, 1);
	r = cl_read(&h, fd);
	ATF_CHECK_EQ(status_of(r), 499);
	proxy_stop(&h);
}

ATF_TC(timeout_504);
ATF_TC_HEAD(timeout_504, tc)
{
	atf_tc_set_md_var(tc, "descr", "an upstream that never answers gets "
	    "504 after request_timeout, and the hold is released");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(timeout_504, tc)
{
	struct harness		 h;
	struct proto_hold_req	 hr;
	uint16_t		 port;
	int64_t			 t0;
	char			*r;
	int			 fd, mute;

	proxy_start(tc, &h, 1 << 20);
	mute = listen_any(&port);	/* accepts in the kernel, never answers */
	fd = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"alpha\"}");
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	t0 = now_ms();
	grant(&h, hr.reqid, 51, port, "up");
	r = cl_read(&h, fd);
	ATF_CHECK_EQ(status_of(r), 504);
	CHECK_HAS(r, "\"code\":\"timeout\"");
	ATF_CHECK(now_ms() - t0 >= 2900);	/* request_timeout 3000 ms */
	released_once(&h, 51);
	close(mute);
	proxy_stop(&h);
}

ATF_TC(reload);
ATF_TC_HEAD(reload, tc)
{
	atf_tc_set_md_var(tc, "descr", "a second config replaces the "
	    "listeners; a request in progress keeps running");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(reload, tc)
{
	struct harness		 h;
	struct proto_hold_req	 hr;
	struct sockaddr_in	 sin;
	uint16_t		 oldport;
	char			*r;
	int			 fd, s;

	proxy_start(tc, &h, 1 << 20);
	start_upstream(&h);
	fd = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"alpha\"}");
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	oldport = h.port;
	send_config(&h, 1 << 20);
	h_barrier(&h);
	ATF_CHECK(h.port != oldport);
	/* the waiting request goes on */
	grant(&h, hr.reqid, 61, h.upport, "up");
	r = cl_read(&h, fd);
	ATF_CHECK_EQ(status_of(r), 200);
	released_once(&h, 61);
	/* the new listener serves, the old one is closed */
	r = request(&h, "GET", "/health", NULL, NULL, NULL);
	ATF_CHECK_EQ(status_of(r), 200);
	ATF_REQUIRE((s = socket(AF_INET, SOCK_STREAM, 0)) != -1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(oldport);
	ATF_CHECK(connect(s, (struct sockaddr *)&sin, sizeof(sin)) == -1);
	close(s);
	ATF_CHECK_EQ(h_count(&h, IMSG_PROXY_READY), 0);	/* only once */
	proxy_stop(&h);
}

#define PD_USER	"_agencyprx_t"
#define PD_HOME	"/tmp/agency-proxy-test-home"

ATF_TC_WITH_CLEANUP(privdrop);
ATF_TC_HEAD(privdrop, tc)
{
	atf_tc_set_md_var(tc, "descr", "as root with -u: chrooted to the "
	    "user's home, the user's ids, no new privileges; still forwards");
	atf_tc_set_md_var(tc, "require.user", "root");
	atf_tc_set_md_var(tc, "timeout", "30");
}
ATF_TC_BODY(privdrop, tc)
{
	struct harness		 h;
	struct proto_hold_req	 hr;
	char			 path[64], buf[4096], *r;
	FILE			*fp;
	int			 fd, uidok = 0, nnp = 0;
	ssize_t			 n;

	(void)mkdir(PD_HOME, 0755);
	ATF_REQUIRE(chown(PD_HOME, 0, 0) == 0 && chmod(PD_HOME, 0755) == 0);
	(void)system("userdel " PD_USER " 2>/dev/null");
	ATF_REQUIRE(system("useradd -r -d " PD_HOME " -s /usr/sbin/nologin "
	    PD_USER) == 0);
	proxy_user = PD_USER;
	proxy_start(tc, &h, 1 << 20);
	proxy_user = NULL;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)h.proxy);
	ATF_REQUIRE((fp = fopen(path, "r")) != NULL);
	while (fgets(buf, sizeof(buf), fp) != NULL) {
		if (strncmp(buf, "Uid:", 4) == 0 && strstr(buf, "\t0") == NULL)
			uidok = 1;
		if (strncmp(buf, "NoNewPrivs:\t1", 13) == 0)
			nnp = 1;
	}
	fclose(fp);
	ATF_CHECK_MSG(uidok, "the proxy still has uid 0");
	ATF_CHECK(nnp);
	snprintf(path, sizeof(path), "/proc/%d/root", (int)h.proxy);
	ATF_REQUIRE((n = readlink(path, buf, sizeof(buf) - 1)) > 0);
	buf[n] = '\0';
	ATF_CHECK_STREQ(buf, PD_HOME);

	start_upstream(&h);
	fd = cl_send(&h, "POST", "/v1/chat/completions", NULL,
	    "application/json", "{\"model\":\"alpha\"}");
	h_wait(&h, IMSG_HOLD_REQ, &hr, sizeof(hr));
	grant(&h, hr.reqid, 71, h.upport, "alpha-up");
	r = cl_read(&h, fd);
	ATF_CHECK_EQ(status_of(r), 200);
	CHECK_HAS(r, "\"model\":\"alpha-up\"");
	released_once(&h, 71);
	proxy_stop(&h);
}
ATF_TC_CLEANUP(privdrop, tc)
{
	(void)tc;
	(void)system("userdel " PD_USER " 2>/dev/null");
	(void)rmdir(PD_HOME);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, privdrop);
	ATF_TP_ADD_TC(tp, timeout_504);
	ATF_TP_ADD_TC(tp, reload);
	ATF_TP_ADD_TC(tp, health_models);
	ATF_TP_ADD_TC(tp, forward_rewrite);
	ATF_TP_ADD_TC(tp, stream_spaced);
	ATF_TP_ADD_TC(tp, disconnect_stop);
	ATF_TP_ADD_TC(tp, disconnect_drain);
	ATF_TP_ADD_TC(tp, upstream_refused);
	ATF_TP_ADD_TC(tp, refusals);
	ATF_TP_ADD_TC(tp, refusals_queue);
	ATF_TP_ADD_TC(tp, withdraw);
	ATF_TP_ADD_TC(tp, upstream_request);
	ATF_TP_ADD_TC(tp, errors);
	ATF_TP_ADD_TC(tp, probe_retry);
	ATF_TP_ADD_TC(tp, status_json);
	ATF_TP_ADD_TC(tp, metrics_text);
	ATF_TP_ADD_TC(tp, cancel);
	return (atf_no_error());
}
