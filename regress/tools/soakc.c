/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * soakc [-v] [-C ms] [-c conns] [-d percent] [-P ms] [-s seed]
 *     [-t seconds] [-T ms] port model...: the soak test's client.  Keeps
 * conns (default 64) connections busy for -t seconds (default 60)
 * against 127.0.0.1:port, each sending chat completions one after
 * another (Connection: close), half of them streamed, max_tokens 1 to
 * 24.  The model is picked in phases of -P ms (default 2000): in phase
 * k, 90% of the requests go to the models k and k+1 (mod the number of
 * models) and 10% to any; so with models that do not all fit, the one
 * that leaves the pair drains and is evicted for the one that joins it,
 * and the stray requests wait for memory (or evict an idle model).  The
 * client leaves -d percent (default 5) of the requests at a random
 * moment in their first 300 ms, counted apart when no byte of the
 * answer had come (the request was waiting: queued, or its model
 * loading).
 *
 * With -C ms, every so many ms it reads GET /v1/agency/status (noting
 * how many requests wait) and, when some model has requests waiting and
 * none in progress, cancels that model's requests with POST
 * /v1/agency/cancel: a cancel of queued requests.  A request in flight when its model was
 * cancelled may end cancelled: 499, a stream whose last event is the
 * "cancelled" error, or an answer cut short (a race of the status read
 * with a grant).  The cancels' counts must agree: the clients saw no
 * more cancelled requests than agency reported, and agency reported no
 * more than the clients saw plus those that left.
 *
 * Every answer is read to its end (at most -T ms, default 30000) and
 * judged:
 *
 *   ok-json        200, a JSON object with "choices"
 *   ok-stream      200, SSE whose every data line is JSON, ending in
 *                  data: [DONE]
 *   not_enough_memory, load_failed, queue_full, queue_timeout
 *                  503, 502, 503 or 429, 503 with that error code in
 *                  the OpenAI shape (documented refusals)
 *   cancelled      499, or the ends above of a cancelled request
 *   client-left    the driver closed the connection itself
 *
 * anything else is a violation (another status or code, a body that is
 * not well formed, a truncated stream, no answer in time, a refused
 * connection, an admin route that did not answer 200), printed with its
 * first bytes.  Prints the counts and exits 0 only when there was no
 * violation.
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <json.h>

#include "numarg.h"
#include "tool.h"

#define MAXCONNS	1024
#define MAXMODELS	16
#define INMAX		(1024 * 1024)

#define ADMINMAX	(256 * 1024)	/* an admin route's answer */
#define ADMIN_SECONDS	5		/* and how long it may take */

enum outcome { O_JSON, O_STREAM, O_NOMEM, O_LOADFAIL, O_QFULL, O_QFULL429,
    O_QTIMEOUT, O_CANCELLED, O_CANCELSTREAM, O_CANCELCUT, O_LEFTWAIT,
    O_LEFT, O_BADSTATUS, O_BADBODY, O_TRUNCATED, O_TIMEOUT, O_CONNECT,
    O_BADADMIN, O_N };

static const char *outname[O_N] = { "ok-json", "ok-stream",
    "not_enough_memory", "load_failed", "queue_full", "queue_full-429",
    "queue_timeout", "cancelled", "cancelled-stream", "cancelled-cut",
    "client-left-waiting", "client-left", "VIOLATION-status",
    "VIOLATION-body", "VIOLATION-truncated", "VIOLATION-timeout",
    "VIOLATION-connect", "VIOLATION-admin" };

struct conn {
	int		 fd;
	int		 stream;
	const char	*model;
	int		 mi;		/* models[mi] */
	char		 out[1024];
	size_t		 outlen, off;
	char		*in;
	size_t		 inlen;
	int64_t		 start, leave_at, deadline;
};

static const char *models[MAXMODELS];
static int	 nmodels, port, verbose, phase_ms = 2000;
static int64_t	 t0;
static uint64_t	 rng;
static unsigned long counts[O_N], bymodel[MAXMODELS][O_N];

/* The canceller's figures; last_cancel: when each model was last
 * cancelled (-1: never). */
static int64_t	 last_cancel[MAXMODELS];
static unsigned long polls, polls_waiting, max_waiting, cancels;
static unsigned long agency_cancelled;

static uint64_t
next(void)
{
	return (splitmix64(&rng));
}

/* Undo chunked framing in place; -1 when it is not well formed. */
static int
dechunk(char *p, size_t len, size_t *outlen)
{
	size_t		 r = 0, w = 0, n;
	char		*end;

	for (;;) {
		if (r >= len)
			return (-1);
		n = strtoul(p + r, &end, 16);
		if (end == p + r || (size_t)(end - p) + 2 > len ||
		    end[0] != '\r' || end[1] != '\n')
			return (-1);
		r = end - p + 2;
		if (n == 0)
			break;
		if (r + n + 2 > len || p[r + n] != '\r' || p[r + n + 1] != '\n')
			return (-1);
		memmove(p + w, p + r, n);
		w += n;
		r += n + 2;
	}
	*outlen = w;
	p[w] = '\0';
	return (0);
}

static int
json_has(const char *s, size_t len, const char *key, struct json_object **out)
{
	struct json_tokener	*tok;
	struct json_object	*o, *v;

	if ((tok = json_tokener_new()) == NULL)
		err(2, NULL);
	o = json_tokener_parse_ex(tok, s, (int)len);
	if (o == NULL || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len ||
	    !json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, key, &v)) {
		json_tokener_free(tok);
		json_object_put(o);
		return (0);
	}
	json_tokener_free(tok);
	if (out != NULL)
		*out = o;
	else
		json_object_put(o);
	return (1);
}

/* Whether an SSE data line is the error event of a cancel. */
static int
cancel_event(const char *data)
{
	struct json_object	*o, *e, *code;
	int			 yes = 0;

	if (!json_has(data, strlen(data), "error", &o))
		return (0);
	if (json_object_object_get_ex(o, "error", &e) &&
	    json_object_object_get_ex(e, "code", &code) &&
	    json_object_is_type(code, json_type_string) &&
	    strcmp(json_object_get_string(code), "cancelled") == 0)
		yes = 1;
	json_object_put(o);
	return (yes);
}

/*
 * SSE: every data line JSON with "choices", the last one [DONE]; or,
 * for a cancelled stream, the last one the "cancelled" error event.
 */
static enum outcome
judge_stream(char *body)
{
	char	*line, *save = NULL;
	int	 done = 0, chunks = 0, cancelled = 0;

	for (line = strtok_r(body, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "\r")] = '\0';
		if (*line == '\0')
			continue;
		if (done || cancelled)
			return (O_BADBODY);	/* something after the end */
		if (strncmp(line, "data: ", 6) != 0)
			continue;		/* other SSE fields */
		if (strcmp(line + 6, "[DONE]") == 0) {
			done = 1;
			continue;
		}
		if (cancel_event(line + 6)) {
			cancelled = 1;
			continue;
		}
		if (!json_has(line + 6, strlen(line + 6), "choices", NULL))
			return (O_BADBODY);
		chunks++;
	}
	if (cancelled)
		return (O_CANCELSTREAM);
	return (done && chunks > 0 ? O_STREAM : O_TRUNCATED);
}

static enum outcome
judge(struct conn *c)
{
	struct json_object	*o, *e, *code;
	char			*body, *h;
	const char		*cs;
	size_t			 blen, clen = 0;
	int			 status, chunked = 0, haslen = 0;

	c->in[c->inlen] = '\0';
	if (sscanf(c->in, "HTTP/1.%*d %d", &status) != 1)
		return (c->inlen == 0 ? O_TRUNCATED : O_BADSTATUS);
	if ((body = strstr(c->in, "\r\n\r\n")) == NULL)
		return (O_TRUNCATED);
	*body = '\0';
	body += 4;
	blen = c->inlen - (body - c->in);
	for (h = strstr(c->in, "\r\n"); h != NULL; h = strstr(h + 2, "\r\n")) {
		if (strncasecmp(h + 2, "transfer-encoding:", 18) == 0 &&
		    strcasestr(h + 2, "chunked") != NULL)
			chunked = 1;
		if (strncasecmp(h + 2, "content-length:", 15) == 0) {
			clen = strtoul(h + 17, NULL, 10);
			haslen = 1;
		}
	}
	if (chunked && dechunk(body, blen, &blen) == -1)
		return (O_TRUNCATED);
	/* cut short, not ill-formed */
	if (!chunked && haslen && blen < clen)
		return (O_TRUNCATED);

	if (status == 200) {
		if (c->stream)
			return (judge_stream(body));
		return (json_has(body, blen, "choices", NULL) ? O_JSON :
		    O_BADBODY);
	}
	if (!json_has(body, blen, "error", &o))
		return (O_BADBODY);
	cs = "";
	if (json_object_object_get_ex(o, "error", &e) &&
	    json_object_object_get_ex(e, "code", &code) &&
	    json_object_is_type(code, json_type_string))
		cs = json_object_get_string(code);
	if (status == 503 && strcmp(cs, "not_enough_memory") == 0)
		status = O_NOMEM;
	else if (status == 502 && strcmp(cs, "load_failed") == 0)
		status = O_LOADFAIL;
	else if (status == 503 && strcmp(cs, "queue_full") == 0)
		status = O_QFULL;
	else if (status == 429 && strcmp(cs, "queue_full") == 0)
		status = O_QFULL429;
	else if (status == 503 && strcmp(cs, "queue_timeout") == 0)
		status = O_QTIMEOUT;
	else if (status == 499 && strcmp(cs, "cancelled") == 0)
		status = O_CANCELLED;
	else
		status = O_BADSTATUS;
	json_object_put(o);
	return ((enum outcome)status);
}

static void
finish(struct conn *c, enum outcome o)
{
	/* Only a request in flight when its model was cancelled ends so;
	 * a cancel event anywhere else is a body nobody asked for. */
	if (last_cancel[c->mi] >= c->start) {
		if (o == O_TRUNCATED)
			o = O_CANCELCUT;
	} else if (o == O_CANCELSTREAM || o == O_CANCELLED)
		o = o == O_CANCELLED ? O_BADSTATUS : O_BADBODY;
	counts[o]++;
	bymodel[c->mi][o]++;
	if (o >= O_BADSTATUS || verbose > 1) {
		c->in[c->inlen < 300 ? c->inlen : 300] = '\0';
		printf("%s: %s %s after %lld ms: %s\n", outname[o], c->model,
		    c->stream ? "stream" : "json",
		    (long long)(now_ms() - c->start), c->in);
	}
	close(c->fd);
	c->fd = -1;
}

static void
start(struct conn *c, int leave_pct)
{
	struct sockaddr_in	sin;
	int			max, k;

	k = (int)((now_ms() - t0) / phase_ms) % nmodels;
	if (next() % 10 == 0)
		c->mi = next() % nmodels;
	else
		c->mi = (k + (int)(next() & 1)) % nmodels;
	c->model = models[c->mi];
	c->stream = next() & 1;
	max = 1 + next() % 24;
	c->outlen = snprintf(c->out + 512, 512, "{\"model\":\"%s\","
	    "\"max_tokens\":%d,\"stream\":%s,\"messages\":[{\"role\":"
	    "\"user\",\"content\":\"soak\"}]}", c->model, max,
	    c->stream ? "true" : "false");
	c->outlen = snprintf(c->out, 512, "POST /v1/chat/completions "
	    "HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: "
	    "application/json\r\nConnection: close\r\nContent-Length: %zu"
	    "\r\n\r\n%s", port, c->outlen, c->out + 512);
	c->off = 0;
	c->inlen = 0;
	c->start = now_ms();
	c->leave_at = (int)(next() % 100) < leave_pct ?
	    c->start + (int64_t)(next() % 300) : -1;
	if ((c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1)
		err(2, "socket");
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(c->fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 &&
	    errno != EINPROGRESS)
		finish(c, O_CONNECT);
}

static void
step(struct conn *c, short revents)
{
	ssize_t		n;
	int		e;
	socklen_t	len = sizeof(e);

	if (c->leave_at >= 0 && now_ms() >= c->leave_at) {
		finish(c, c->inlen == 0 ? O_LEFTWAIT : O_LEFT);
		return;
	}
	if (c->off < c->outlen && (revents & (POLLOUT | POLLERR | POLLHUP))) {
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &len) == 0 &&
		    e != 0) {
			finish(c, O_CONNECT);
			return;
		}
		n = send(c->fd, c->out + c->off, c->outlen - c->off,
		    MSG_NOSIGNAL);
		if (n > 0)
			c->off += n;
		else if (n == -1 && errno != EAGAIN && errno != EINTR) {
			finish(c, O_CONNECT);
			return;
		}
	}
	if (revents & (POLLIN | POLLERR | POLLHUP)) {
		n = recv(c->fd, c->in + c->inlen, INMAX - c->inlen, 0);
		if (n > 0) {
			c->inlen += n;
			if (c->inlen == INMAX) {
				finish(c, O_BADBODY);
				return;
			}
		} else if (n == 0) {
			finish(c, judge(c));
			return;
		} else if (errno != EAGAIN && errno != EINTR) {
			finish(c, O_TRUNCATED);
			return;
		}
	}
	if (now_ms() >= c->deadline)
		finish(c, O_TIMEOUT);
}

/*
 * An admin route, on a connection of its own, waited for (at most
 * ADMIN_SECONDS each way): the status, and *bodyp the body in buf; -1
 * when there was no answer.
 */
static int
admin(const char *method, const char *path, const char *body, char *buf,
    size_t size, char **bodyp)
{
	struct sockaddr_in	 sin;
	struct timeval		 tv = { ADMIN_SECONDS, 0 };
	char			 req[512], *h, *b;
	size_t			 len = 0, blen;
	ssize_t			 n;
	int			 fd, rl, status = -1;

	if (body != NULL)
		rl = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\n"
		    "Host: 127.0.0.1:%d\r\nConnection: close\r\n"
		    "Content-Type: application/json\r\nContent-Length: %zu"
		    "\r\n\r\n%s", method, path, port, strlen(body), body);
	else
		rl = snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\n"
		    "Host: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
		    method, path, port);
	if (rl < 0 || (size_t)rl >= sizeof(req))
		errx(2, "%s: request too long", __func__);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((fd = tool_connect(&sin, 0)) == -1)
		return (-1);
	if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) == -1)
		err(2, "setsockopt");
	if (send(fd, req, rl, MSG_NOSIGNAL) != rl) {
		close(fd);
		return (-1);
	}
	while (len < size - 1 && (n = recv(fd, buf + len, size - 1 - len,
	    0)) > 0)
		len += n;
	close(fd);
	buf[len] = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 ||
	    (b = strstr(buf, "\r\n\r\n")) == NULL)
		return (-1);
	*b = '\0';
	b += 4;
	blen = len - (b - buf);
	for (h = strstr(buf, "\r\n"); h != NULL; h = strstr(h + 2, "\r\n"))
		if (strncasecmp(h + 2, "transfer-encoding:", 18) == 0 &&
		    strcasestr(h + 2, "chunked") != NULL &&
		    dechunk(b, blen, &blen) == -1)
			return (-1);
	*bodyp = b;
	return (status);
}

static void
admin_failed(const char *what, int status, const char *body)
{
	counts[O_BADADMIN]++;
	printf("%s: %s answered %d: %.300s\n", outname[O_BADADMIN], what,
	    status, body != NULL ? body : "");
}

/* An integer member of a JSON object, or -1. */
static int64_t
member_int(struct json_object *o, const char *key)
{
	struct json_object	*v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return (-1);
	return (json_object_get_int64(v));
}

/*
 * Read the status; when some model has requests waiting and none in
 * progress, cancel that model's requests (one chosen at random): they
 * are all queued or waiting for its load.
 */
static void
cancel_round(void)
{
	static char		 buf[ADMINMAX];
	struct json_object	*o, *list, *e, *name;
	char			*body = NULL, req[128];
	int64_t			 queued, busy;
	unsigned long		 waiting = 0;
	int			 cand[MAXMODELS], ncand = 0, i, m, status;
	size_t			 k;

	status = admin("GET", "/v1/agency/status", NULL, buf, sizeof(buf),
	    &body);
	if (status != 200 || (o = json_tokener_parse(body)) == NULL) {
		admin_failed("GET /v1/agency/status", status, body);
		return;
	}
	polls++;
	if (!json_object_object_get_ex(o, "models", &list) ||
	    !json_object_is_type(list, json_type_array)) {
		json_object_put(o);
		admin_failed("GET /v1/agency/status", status, body);
		return;
	}
	for (k = 0; k < json_object_array_length(list); k++) {
		e = json_object_array_get_idx(list, k);
		if (!json_object_object_get_ex(e, "model", &name) ||
		    !json_object_is_type(name, json_type_string))
			continue;
		queued = member_int(e, "queued");
		busy = member_int(e, "requestsInProgress");
		if (queued > 0)
			waiting += queued;
		for (m = 0; m < nmodels; m++)
			if (strcmp(models[m], json_object_get_string(name)) ==
			    0 && queued > 0 && busy == 0 && ncand < MAXMODELS)
				cand[ncand++] = m;
	}
	json_object_put(o);
	if (waiting > 0)
		polls_waiting++;
	if (waiting > max_waiting)
		max_waiting = waiting;
	if (ncand == 0)
		return;

	m = cand[next() % ncand];
	last_cancel[m] = now_ms();
	snprintf(req, sizeof(req), "{\"model\":\"%s\"}", models[m]);
	status = admin("POST", "/v1/agency/cancel", req, buf, sizeof(buf),
	    &body);
	if (status != 200 || (o = json_tokener_parse(body)) == NULL ||
	    (i = (int)member_int(o, "cancelled")) < 0) {
		if (status == 200)
			json_object_put(o);
		admin_failed("POST /v1/agency/cancel", status, body);
		return;
	}
	json_object_put(o);
	cancels++;
	agency_cancelled += i;
	if (verbose)
		printf("cancelled %d requests for %s\n", i, models[m]);
}

static void
usage(void)
{
	fprintf(stderr, "usage: soakc [-v] [-C ms] [-c conns] [-d percent] "
	    "[-P ms] [-s seed]\n"
	    "             [-t seconds] [-T ms] port model...\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	struct conn	*cs;
	struct pollfd	*pfd;
	unsigned long	 total = 0, bad = 0, seen;
	uint64_t	 seed;
	int64_t		 end, next_cancel;
	int		 ch, conns = 64, leave = 5, secs = 60, tmo = 30000;
	int		 cancel_ms = 0;
	int		 i, m, o, active;

	seed = 1;
	while ((ch = getopt(argc, argv, "C:c:d:P:s:t:T:v")) != -1) {
		switch (ch) {
		case 'C':
			cancel_ms = numarg(optarg, 10, 3600000, "cancel period");
			break;
		case 'c':
			conns = numarg(optarg, 1, MAXCONNS, "conns");
			break;
		case 'd':
			leave = numarg(optarg, 0, 100, "percent");
			break;
		case 'P':
			phase_ms = numarg(optarg, 100, 3600000, "phase");
			break;
		case 's':
			seed = numarg(optarg, 0, INT64_MAX, "seed");
			break;
		case 't':
			secs = numarg(optarg, 1, 86400, "seconds");
			break;
		case 'T':
			tmo = numarg(optarg, 100, 600000, "timeout");
			break;
		case 'v':
			verbose++;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 2 || argc - 1 > MAXMODELS)
		usage();
	port = numarg(argv[0], 1, 65535, "port");
	for (i = 1; i < argc; i++) {
		last_cancel[nmodels] = -1;
		models[nmodels++] = argv[i];
	}
	rng = seed;
	tool_init();
	if ((cs = calloc(conns, sizeof(*cs))) == NULL ||
	    (pfd = calloc(conns, sizeof(*pfd))) == NULL)
		err(2, NULL);
	for (i = 0; i < conns; i++) {
		cs[i].fd = -1;
		if ((cs[i].in = malloc(INMAX + 1)) == NULL)
			err(2, NULL);
	}

	t0 = now_ms();
	end = t0 + (int64_t)secs * 1000;
	next_cancel = t0 + cancel_ms;
	for (;;) {
		if (cancel_ms > 0 && now_ms() >= next_cancel &&
		    now_ms() < end) {
			cancel_round();
			next_cancel = now_ms() + cancel_ms;
		}
		active = 0;
		for (i = 0; i < conns; i++) {
			/* A new request while there is time left. */
			if (cs[i].fd == -1 && now_ms() < end) {
				start(&cs[i], leave);
				cs[i].deadline = cs[i].start + tmo;
			}
			pfd[i].fd = cs[i].fd;
			pfd[i].events = 0;
			if (cs[i].fd == -1)
				continue;
			active++;
			pfd[i].events = POLLIN;
			if (cs[i].off < cs[i].outlen)
				pfd[i].events |= POLLOUT;
		}
		if (active == 0)
			break;
		if (poll(pfd, conns, 20) == -1 && errno != EINTR)
			err(2, "poll");
		for (i = 0; i < conns; i++)
			if (cs[i].fd != -1)
				step(&cs[i], pfd[i].revents);
	}

	for (o = 0; o < O_N; o++) {
		total += counts[o];
		if (o >= O_BADSTATUS)
			bad += counts[o];
	}
	printf("requests %lu in %lld ms, %d connections, seed %llu\n", total,
	    (long long)(now_ms() - t0), conns, (unsigned long long)seed);
	for (o = 0; o < O_N; o++) {
		if (counts[o] == 0 && o >= O_BADSTATUS)
			continue;
		printf("  %-20s %8lu  (", outname[o], counts[o]);
		for (m = 0; m < nmodels; m++)
			printf("%s%s %lu", m ? ", " : "", models[m],
			    bymodel[m][o]);
		printf(")\n");
	}
	if (cancel_ms > 0) {
		printf("status read %lu times, requests waiting in %lu, at most "
		    "%lu at once\n", polls, polls_waiting, max_waiting);
		/* Every cancelled request was seen so, or its client left. */
		seen = counts[O_CANCELLED] + counts[O_CANCELSTREAM] +
		    counts[O_CANCELCUT];
		printf("cancels of waiting requests %lu: agency cancelled %lu, "
		    "the clients saw %lu\n", cancels, agency_cancelled, seen);
		if (seen > agency_cancelled || agency_cancelled > seen +
		    counts[O_LEFTWAIT] + counts[O_LEFT]) {
			printf("VIOLATION-cancel: agency cancelled %lu, the "
			    "clients saw %lu and left %lu\n", agency_cancelled,
			    seen, counts[O_LEFTWAIT] + counts[O_LEFT]);
			bad++;
		}
	}
	printf("violations %lu\n", bad);
	for (i = 0; i < conns; i++)
		free(cs[i].in);
	free(cs);
	free(pfd);
	return (bad == 0 ? 0 : 1);
}
