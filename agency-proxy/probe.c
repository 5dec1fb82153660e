/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Readiness probes for the parent: the answer of a model process is only
 * ever read here, in the unprivileged process.  Connection refused, a
 * timed out attempt and 503 (llama-server while it loads) are retried
 * with backoff; any other answer is the result.  Started and cancelled
 * by dispatch.c; the result goes back with parent_send.
 *
 * A model on a Unix socket (%s in its command) is asked over it.
 * libevent 2.1's evhttp connects only to addresses, so that attempt is
 * a small client of its own: the request written, the answer read to
 * its close (Connection: close) or to PROBE_UNIX_READ bytes, and read
 * with h1.c's parser.
 *
 * Calls: parent.c, state.c, h1.c, common/log.c.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "h1.h"
#include "log.h"
#include "proxy.h"

/*
 * Until the server first answers, an attempt costs it nothing but a
 * refused connect: for the first PROBE_EAGER_MS attempts go every
 * PROBE_EAGER_INTERVAL, then until PROBE_STEADY_MS every
 * PROBE_STEADY_INTERVAL, then back off from PROBE_BACKOFF_MIN to
 * PROBE_BACKOFF_MAX: most servers start within a second, and a doubling
 * backoff (10, 20, 40, 80, 160 ms) would answer one that took 100 ms up
 * to 50 ms late.  The first attempt comes a fraction of a millisecond
 * after the spawn, before any server listens, so a server that starts at
 * once (a few ms of exec and setup) is seen within a millisecond rather
 * than at the next 5 ms step (bench/run: the cold-start slack).
 *
 * Once it has answered (llama-server answers 503 while it loads), every
 * attempt is a request the server may log, and its log ring is what an
 * operator reads after a failed load: the wait is then a quarter of the
 * time the load has taken so far, PROBE_BACKOFF_MIN at least and
 * PROBE_ANSWERED_MAX at most.  A load is seen ready at most a quarter of
 * its time late, and an 8 s load is asked some 30 times, not 300.
 */
#define PROBE_EAGER_MS		200
#define PROBE_EAGER_INTERVAL	1	/* ms */
#define PROBE_STEADY_MS		1000
#define PROBE_STEADY_INTERVAL	5	/* ms */
#define PROBE_ANSWERED_DIV	4	/* the wait: elapsed / this */
#define PROBE_ANSWERED_MAX	10000	/* ms */
#define PROBE_UNIX_READ		(16 * 1024)	/* of an answer on a socket */

/* An attempt over a Unix socket. */
struct probe_unix {
	int		 fd;
	struct event	*ev;
	char		*out;		/* the request */
	size_t		 outlen;
	size_t		 sent;
	char		*in;		/* the answer, NUL-terminated */
	size_t		 inlen;
};

struct probe {
	TAILQ_ENTRY(probe)		 entry;
	struct proto_probe		 p;
	struct evhttp_connection	*evcon;
	struct evhttp_request		*req;
	struct event			*timer;
	struct probe_unix		 u;		/* fd -1: none */
	int				 backoff;	/* ms */
	int				 answered;	/* HTTP came back */
	int64_t				 started;	/* now_ms() */
	unsigned int			 attempts;
	char				 body[PROTO_PROBE_BODY + 1];
	size_t				 bodylen;
};
TAILQ_HEAD(, probe)	probes = TAILQ_HEAD_INITIALIZER(probes);

static void	 probe_attempt(struct probe *);
static void	 probe_done(struct evhttp_request *, void *);
static void	 probe_chunk(struct evhttp_request *, void *);
static void	 probe_timer(evutil_socket_t, short, void *);
static void	 probe_free(struct probe *);
static void	 evcon_free_cb(evutil_socket_t, short, void *);
static void	 probe_finish(struct probe *, int);
static void	 unix_attempt(struct probe *);
static void	 unix_event(evutil_socket_t, short, void *);
static void	 unix_close(struct probe *);

static struct probe *
probe_find(uint64_t loadid)
{
	struct probe	*pr;

	TAILQ_FOREACH(pr, &probes, entry)
		if (pr->p.loadid == loadid)
			return (pr);
	return (NULL);
}

void
probe_start(const struct proto_probe *pp)
{
	struct probe	*pr;

	if ((pr = probe_find(pp->loadid)) != NULL) {
		log_warnx("probe %llu: started twice",
		    (unsigned long long)pp->loadid);
		probe_free(pr);
	}
	if ((pr = calloc(1, sizeof(*pr))) == NULL)
		fatal("%s: calloc", __func__);
	pr->p = *pp;
	pr->u.fd = -1;
	pr->backoff = PROBE_BACKOFF_MIN;
	pr->started = now_ms();
	if ((pr->timer = evtimer_new(px->base, probe_timer, pr)) == NULL)
		fatal("%s: evtimer_new", __func__);
	TAILQ_INSERT_TAIL(&probes, pr, entry);
	probe_attempt(pr);
}

void
probe_cancel(uint64_t loadid)
{
	struct probe	*pr;

	if ((pr = probe_find(loadid)) != NULL)
		probe_free(pr);
}

static void
probe_free(struct probe *pr)
{
	struct evhttp_request	*req = pr->req;

	TAILQ_REMOVE(&probes, pr, entry);
	pr->req = NULL;
	if (req != NULL)
		evhttp_cancel_request(req);
	if (pr->evcon != NULL)
		evhttp_connection_free(pr->evcon);
	unix_close(pr);
	event_free(pr->timer);
	free(pr);
}

static void
probe_attempt(struct probe *pr)
{
	struct evkeyvalq	*h;
	char			 host[32];

	pr->attempts++;
	pr->bodylen = 0;
	pr->body[0] = '\0';
	if (pr->p.sock[0] != '\0') {
		unix_attempt(pr);
		return;
	}
	if ((pr->evcon = evhttp_connection_base_new(px->base, NULL,
	    "127.0.0.1", pr->p.port)) == NULL ||
	    (pr->req = evhttp_request_new(probe_done, pr)) == NULL)
		fatalx("%s: out of memory", __func__);
	evhttp_connection_set_retries(pr->evcon, 0);
	evhttp_connection_set_timeout(pr->evcon, PROBE_ATTEMPT_TIMEOUT);
	evhttp_request_set_chunked_cb(pr->req, probe_chunk);
	h = evhttp_request_get_output_headers(pr->req);
	(void)snprintf(host, sizeof(host), "127.0.0.1:%u", pr->p.port);
	evhttp_add_header(h, "Host", host);
	evhttp_add_header(h, "Connection", "close");
	if (pr->p.method == READY_POST) {
		evhttp_add_header(h, "Content-Type", "application/json");
		evbuffer_add(evhttp_request_get_output_buffer(pr->req),
		    pr->p.body, strlen(pr->p.body));
	}
	if (evhttp_make_request(pr->evcon, pr->req, pr->p.method ==
	    READY_POST ? EVHTTP_REQ_POST : EVHTTP_REQ_GET, pr->p.path) == -1) {
		pr->req = NULL;
		probe_done(NULL, pr);
	}
}

static void
probe_chunk(struct evhttp_request *req, void *arg)
{
	struct probe	*pr = arg;
	struct evbuffer	*buf = evhttp_request_get_input_buffer(req);
	size_t		 room = PROTO_PROBE_BODY - pr->bodylen, len;

	len = evbuffer_get_length(buf);
	if (len > room)
		len = room;
	if (len > 0) {
		evbuffer_copyout(buf, pr->body + pr->bodylen, len);
		pr->bodylen += len;
		pr->body[pr->bodylen] = '\0';
	}
	evbuffer_drain(buf, evbuffer_get_length(buf));
}

static void
probe_done(struct evhttp_request *req, void *arg)
{
	struct probe			*pr = arg;
	struct timeval			 tv;
	int				 code;

	if (pr->req == NULL && req != NULL)
		return;		/* cancelled */
	pr->req = NULL;
	code = req == NULL ? 0 : evhttp_request_get_response_code(req);
	if (req != NULL && code != 0)
		probe_chunk(req, pr);

	/* the connection is done with; not from inside its callback */
	tv.tv_sec = tv.tv_usec = 0;
	if (event_base_once(px->base, -1, EV_TIMEOUT, evcon_free_cb,
	    pr->evcon, &tv) == -1)
		fatalx("%s: event_base_once", __func__);
	pr->evcon = NULL;
	probe_finish(pr, code);
}

/* An attempt's answer, code (0: none): once more, or the result. */
static void
probe_finish(struct probe *pr, int code)
{
	struct proto_probe_result	 res;
	struct timeval			 tv;
	int				 delay;

	if (code == 0 || code == 503) {
		if (code != 0)
			pr->answered = 1;
		delay = probe_delay(now_ms() - pr->started, pr->answered,
		    &pr->backoff);
		tv.tv_sec = delay / 1000;
		tv.tv_usec = (delay % 1000) * 1000;
		evtimer_add(pr->timer, &tv);
		return;
	}

	/* It ends up in an error message: no line break at its end. */
	while (pr->bodylen > 0 && (pr->body[pr->bodylen - 1] == '\n' ||
	    pr->body[pr->bodylen - 1] == '\r' ||
	    pr->body[pr->bodylen - 1] == ' '))
		pr->body[--pr->bodylen] = '\0';
	memset(&res, 0, sizeof(res));
	res.loadid = pr->p.loadid;
	res.status = code;
	res.ok = code >= 200 && code < 300;
	(void)strlcpy(res.body, pr->body, sizeof(res.body));
	log_debug("probe %llu: %s answered %d after %u attempts",
	    (unsigned long long)pr->p.loadid, pr->p.label, code,
	    pr->attempts);
	parent_send(IMSG_PROBE_RESULT, &res, sizeof(res));
	probe_free(pr);
}

static void
unix_close(struct probe *pr)
{
	if (pr->u.ev != NULL)
		event_free(pr->u.ev);
	if (pr->u.fd != -1)
		close(pr->u.fd);
	free(pr->u.out);
	free(pr->u.in);
	memset(&pr->u, 0, sizeof(pr->u));
	pr->u.fd = -1;
}

static void
unix_attempt(struct probe *pr)
{
	struct sockaddr_un	 sun;
	struct timeval		 tv = { PROBE_ATTEMPT_TIMEOUT, 0 };
	int			 n, post = pr->p.method == READY_POST;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, pr->p.sock, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		fatalx("%s: socket path too long", __func__);
	if ((pr->u.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1)
		fatal("%s: socket", __func__);
	/* Not there yet, nobody listening, its backlog full: not yet. */
	if (connect(pr->u.fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 &&
	    errno != EINPROGRESS) {
		if (errno != ENOENT && errno != ECONNREFUSED &&
		    errno != EAGAIN)
			log_debug("probe %llu: connect %s: %s",
			    (unsigned long long)pr->p.loadid, pr->p.sock,
			    strerror(errno));
		unix_close(pr);
		probe_finish(pr, 0);
		return;
	}
	if (post)
		n = asprintf(&pr->u.out, "POST %s HTTP/1.1\r\n"
		    "Host: localhost\r\nConnection: close\r\n"
		    "Content-Type: application/json\r\n"
		    "Content-Length: %zu\r\n\r\n%s", pr->p.path,
		    strlen(pr->p.body), pr->p.body);
	else
		n = asprintf(&pr->u.out, "GET %s HTTP/1.1\r\n"
		    "Host: localhost\r\nConnection: close\r\n\r\n",
		    pr->p.path);
	if (n == -1 || (pr->u.in = malloc(PROBE_UNIX_READ + 1)) == NULL)
		fatal("%s", __func__);
	pr->u.outlen = n;
	if ((pr->u.ev = event_new(px->base, pr->u.fd, EV_READ | EV_WRITE |
	    EV_PERSIST, unix_event, pr)) == NULL ||
	    event_add(pr->u.ev, &tv) == -1)
		fatalx("%s: event", __func__);
}

/*
 * The status of the answer in in, read by h1.c as an upstream answer is,
 * its body (the chunks' data, if chunked) copied to pr->body; 0 when it
 * is not a whole HTTP answer.
 */
static int
unix_answer(struct probe *pr)
{
	struct h1_msg		 m;
	struct h1_chunked	 ch;
	char			*b;
	size_t			 len;
	int			 hl, done = 0;

	if ((hl = h1_parse_response(pr->u.in, pr->u.inlen, pr->u.inlen,
	    &m)) <= 0)
		return (0);
	b = pr->u.in + hl;
	len = pr->u.inlen - hl;
	if (m.chunked) {
		h1_chunked_init(&ch);
		if (h1_chunked_decode(&ch, b, len, &len, &done) == -1)
			return (0);
	}
	if (len > PROTO_PROBE_BODY)
		len = PROTO_PROBE_BODY;
	memcpy(pr->body, b, len);
	pr->body[len] = '\0';
	pr->bodylen = strlen(pr->body);
	return (m.status);
}

static void
unix_event(evutil_socket_t fd, short ev, void *arg)
{
	struct probe	*pr = arg;
	struct timeval	 tv = { PROBE_ATTEMPT_TIMEOUT, 0 };
	ssize_t		 n;
	int		 code;

	if (ev & EV_TIMEOUT) {
		unix_close(pr);
		probe_finish(pr, 0);
		return;
	}
	if ((ev & EV_WRITE) && pr->u.sent < pr->u.outlen) {
		n = write(fd, pr->u.out + pr->u.sent,
		    pr->u.outlen - pr->u.sent);
		if (n == -1 && errno != EAGAIN && errno != EINTR) {
			unix_close(pr);
			probe_finish(pr, 0);
			return;
		}
		if (n > 0)
			pr->u.sent += n;
		if (pr->u.sent == pr->u.outlen) {
			/* Only reads from now on. */
			event_del(pr->u.ev);
			if (event_assign(pr->u.ev, px->base, fd, EV_READ |
			    EV_PERSIST, unix_event, pr) == -1 ||
			    event_add(pr->u.ev, &tv) == -1)
				fatalx("%s: event", __func__);
		}
	}
	if (!(ev & EV_READ))
		return;
	n = read(fd, pr->u.in + pr->u.inlen, PROBE_UNIX_READ - pr->u.inlen);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n > 0) {
		pr->u.inlen += n;
		if (pr->u.inlen < PROBE_UNIX_READ)
			return;
	}
	/* Its close, an error or all we read of it: the answer as is. */
	code = unix_answer(pr);
	unix_close(pr);
	probe_finish(pr, code);
}

/*
 * The wait in ms before the next attempt of a probe that began elapsed
 * ms ago, by the schedule above; *backoff is the probe's doubling wait
 * (PROBE_BACKOFF_MIN at first), which it moves on.
 */
int
probe_delay(int64_t elapsed, int answered, int *backoff)
{
	int64_t	 d;
	int	 delay;

	if (answered) {
		d = elapsed / PROBE_ANSWERED_DIV;
		if (d < PROBE_BACKOFF_MIN)
			d = PROBE_BACKOFF_MIN;
		if (d > PROBE_ANSWERED_MAX)
			d = PROBE_ANSWERED_MAX;
		return ((int)d);
	}
	if (elapsed < PROBE_EAGER_MS)
		return (PROBE_EAGER_INTERVAL);
	if (elapsed < PROBE_STEADY_MS)
		return (PROBE_STEADY_INTERVAL);
	delay = *backoff;
	*backoff *= 2;
	if (*backoff > PROBE_BACKOFF_MAX)
		*backoff = PROBE_BACKOFF_MAX;
	return (delay);
}

static void
probe_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	probe_attempt(arg);
}

static void
evcon_free_cb(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	evhttp_connection_free(arg);
}
