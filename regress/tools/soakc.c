/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * soakc [-v] [-c conns] [-d percent] [-P ms] [-s seed] [-t seconds] [-T ms]
 *     port model...: the soak test's client.  Keeps conns (default 64)
 * connections busy for -t seconds (default 60) against 127.0.0.1:port,
 * each sending chat completions one after another (Connection: close),
 * half of them streamed, max_tokens 1 to 24.  The model is picked in
 * phases of -P ms (default 2000): in phase k, 90% of the requests go to
 * the models k and k+1 (mod the number of models) and 10% to any; so
 * with models that do not all fit, the one that leaves the pair drains
 * and is evicted for the one that joins it, and the stray requests are
 * refused (or evict an idle model).  The client leaves -d percent
 * (default 5) of the requests at a random moment in their first 300 ms.  Every answer is read to its end (at most -T ms,
 * default 30000) and judged:
 *
 *   ok-json        200, a JSON object with "choices"
 *   ok-stream      200, SSE whose every data line is JSON, ending in
 *                  data: [DONE]
 *   not_enough_memory, load_failed, cancelled
 *                  503, 502, 499 with that error code in the OpenAI
 *                  shape (documented refusals)
 *   client-left    the driver closed the connection itself
 *
 * anything else is a violation (another status or code, a body that is
 * not well formed, a truncated stream, no answer in time, a refused
 * connection), printed with its first bytes.  Prints the counts and
 * exits 0 only when there was no violation.
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

enum outcome { O_JSON, O_STREAM, O_NOMEM, O_LOADFAIL, O_CANCELLED,
    O_LEFT, O_BADSTATUS, O_BADBODY, O_TRUNCATED, O_TIMEOUT, O_CONNECT,
    O_N };

static const char *outname[O_N] = { "ok-json", "ok-stream",
    "not_enough_memory", "load_failed", "cancelled", "client-left",
    "VIOLATION-status", "VIOLATION-body", "VIOLATION-truncated",
    "VIOLATION-timeout", "VIOLATION-connect" };

struct conn {
	int		 fd;
	int		 stream;
	const char	*model;
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

/* SSE: every data line JSON with "choices", the last one [DONE]. */
static enum outcome
judge_stream(char *body)
{
	char	*line, *save = NULL;
	int	 done = 0, chunks = 0;

	for (line = strtok_r(body, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save)) {
		line[strcspn(line, "\r")] = '\0';
		if (*line == '\0')
			continue;
		if (done)
			return (O_BADBODY);	/* something after [DONE] */
		if (strncmp(line, "data: ", 6) != 0)
			continue;		/* other SSE fields */
		if (strcmp(line + 6, "[DONE]") == 0) {
			done = 1;
			continue;
		}
		if (!json_has(line + 6, strlen(line + 6), "choices", NULL))
			return (O_BADBODY);
		chunks++;
	}
	return (done && chunks > 0 ? O_STREAM : O_TRUNCATED);
}

static enum outcome
judge(struct conn *c)
{
	struct json_object	*o, *e, *code;
	char			*body, *h;
	const char		*cs;
	size_t			 blen;
	int			 status, chunked = 0;

	c->in[c->inlen] = '\0';
	if (sscanf(c->in, "HTTP/1.%*d %d", &status) != 1)
		return (c->inlen == 0 ? O_TRUNCATED : O_BADSTATUS);
	if ((body = strstr(c->in, "\r\n\r\n")) == NULL)
		return (O_TRUNCATED);
	*body = '\0';
	body += 4;
	blen = c->inlen - (body - c->in);
	for (h = strstr(c->in, "\r\n"); h != NULL; h = strstr(h + 2, "\r\n"))
		if (strncasecmp(h + 2, "transfer-encoding:", 18) == 0 &&
		    strcasestr(h + 2, "chunked") != NULL)
			chunked = 1;
	if (chunked && dechunk(body, blen, &blen) == -1)
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
	    json_object_object_get_ex(e, "code", &code))
		cs = json_object_get_string(code);
	if (status == 503 && strcmp(cs, "not_enough_memory") == 0)
		status = O_NOMEM;
	else if (status == 502 && strcmp(cs, "load_failed") == 0)
		status = O_LOADFAIL;
	else if (status == 499)
		status = O_CANCELLED;
	else
		status = O_BADSTATUS;
	json_object_put(o);
	return ((enum outcome)status);
}

static void
finish(struct conn *c, enum outcome o)
{
	int	m;

	counts[o]++;
	for (m = 0; m < nmodels; m++)
		if (models[m] == c->model)
			bymodel[m][o]++;
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
		c->model = models[next() % nmodels];
	else
		c->model = models[(k + (int)(next() & 1)) % nmodels];
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
		finish(c, O_LEFT);
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

static void
usage(void)
{
	fprintf(stderr, "usage: soakc [-v] [-c conns] [-d percent] [-P ms] [-s seed] "
	    "[-t seconds] [-T ms] port model...\n");
	exit(2);
}

int
main(int argc, char *argv[])
{
	struct conn	*cs;
	struct pollfd	*pfd;
	unsigned long	 total = 0, bad = 0;
	uint64_t	 seed;
	int64_t		 end;
	int		 ch, conns = 64, leave = 5, secs = 60, tmo = 30000;
	int		 i, m, o, active;

	seed = 1;
	while ((ch = getopt(argc, argv, "c:d:P:s:t:T:v")) != -1) {
		switch (ch) {
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
	for (i = 1; i < argc; i++)
		models[nmodels++] = argv[i];
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
	for (;;) {
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
	printf("violations %lu\n", bad);
	for (i = 0; i < conns; i++)
		free(cs[i].in);
	free(cs);
	free(pfd);
	return (bad == 0 ? 0 : 1);
}
