/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * benchc: the small HTTP clients of bench/run, on one epoll loop.
 *
 *   benchc stream PORT CONNS ROUNDS SECONDS BODY
 *	CONNS connections at once, each making ROUNDS streamed POSTs to
 *	/v1/chat/completions in turn (Connection: close).  Every
 *	"mono_ns":N that fakelm --stamp put in a chunk is matched with
 *	CLOCK_MONOTONIC when the read that brought it returned: the time
 *	the chunk took from fakelm's write to our read.  Prints
 *	"ok N failed N chunks N p50_us X p99_us X max_us X".
 *
 *   benchc idle PORT CONNS SECONDS
 *	CONNS keep-alive connections, a GET /health on each, all held
 *	open SECONDS, then a second GET /health on each.  Prints
 *	"open N first_ok N second_ok N failed N".
 *
 *   benchc first PORT BODY
 *	One POST; prints "status N sent_ns T first_byte_ns T done_ns T".
 *
 *   benchc loop PORT SECONDS CONNS PAUSE_MS BODY MODEL...
 *	CONNS clients on each MODEL, each sending BODY (its "@M@" the
 *	model) to /v1/chat/completions one request after another
 *	(Connection: close) for SECONDS; a client whose request was
 *	refused waits PAUSE_MS before its next.  Prints, a line a model,
 *	"model M ok N refused N unfinished N p50_ms X p99_ms X max_ms X"
 *	(the times of the answers that succeeded, from the connect to
 *	the end), then "refusal M STATUS CODE N" for each kind of
 *	refusal (CODE the error's code, "-" for none).  Requests still
 *	open at the end are cut and counted unfinished.
 *
 * Everything is bounded by a deadline; only 127.0.0.1.
 */
#include <sys/types.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUFSZ		65536
#define CARRY		64
#define LOOP_MODELS	8
#define LOOP_KINDS	16
#define LOOP_ANSWER	8192		/* kept of each answer, for its code */

struct conn {
	int		 fd;
	int		 state;		/* 0 connecting/sending, 1 reading, 2 done */
	int		 round;
	int		 ok;
	size_t		 sent;
	size_t		 got;		/* bytes of the current answer */
	int		 status;
	long long	 first_ns;
	char		 carry[CARRY];
	size_t		 carrylen;
	char		 head[512];	/* start of the answer */
	size_t		 headlen;
	/* loop */
	int		 model;
	const char	*rq;		/* its request, else req */
	size_t		 rqlen;
	long long	 start_ns;
	long long	 resume_ns;	/* pausing until then; 0: not */
	char		*ans;
	size_t		 anslen;
};

static struct sockaddr_in	 sin;
static int			 ep;
static char			*req;
static size_t			 reqlen;
static long long		*samples;
static size_t			 nsamples, maxsamples;

static long long
now_ns(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
}

static void
raise_nofile(void)
{
	struct rlimit	 rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int
open_conn(struct conn *c)
{
	struct epoll_event	 ev;
	int			 on = 1;

	if ((c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0)) == -1)
		return (-1);
	(void)setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
	if (connect(c->fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 &&
	    errno != EINPROGRESS) {
		close(c->fd);
		c->fd = -1;
		return (-1);
	}
	c->state = 0;
	c->sent = c->got = c->headlen = c->carrylen = 0;
	c->status = 0;
	c->first_ns = 0;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLOUT | EPOLLIN;
	ev.data.ptr = c;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, c->fd, &ev) == -1)
		err(1, "epoll_ctl");
	return (0);
}

static void
close_conn(struct conn *c)
{
	if (c->fd != -1) {
		(void)epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
	}
	c->fd = -1;
}

static void
add_sample(long long v)
{
	if (nsamples == maxsamples) {
		maxsamples = maxsamples ? maxsamples * 2 : 4096;
		if ((samples = reallocarray(samples, maxsamples,
		    sizeof(*samples))) == NULL)
			err(1, NULL);
	}
	samples[nsamples++] = v;
}

/* Every "mono_ns":N in carry + data, against t. */
static void
scan_stamps(struct conn *c, const char *data, size_t len, long long t)
{
	static char	 tmp[BUFSZ + CARRY];
	const char	*p, *q, *end, *from, *key = "\"mono_ns\":";
	size_t		 klen = strlen(key), keep;
	long long	 v;

	memcpy(tmp, c->carry, c->carrylen);
	memcpy(tmp + c->carrylen, data, len);
	end = tmp + c->carrylen + len;
	from = tmp;		/* what is before it is done with */
	for (p = tmp; (p = memmem(p, end - p, key, klen)) != NULL; p = q) {
		v = 0;
		for (q = p + klen; q < end && *q >= '0' && *q <= '9'; q++)
			v = v * 10 + (*q - '0');
		if (q == end) {
			from = p;	/* cut: the next read finishes it */
			goto carry;
		}
		add_sample(t - v);
		if (getenv("BENCHC_DEBUG") != NULL)
			fprintf(stderr, "%lld ", (t - v) / 1000);
		from = q;
	}
	/* a key split by the read */
	if ((size_t)(end - from) > klen - 1)
		from = end - (klen - 1);
 carry:
	keep = end - from;
	if (keep > CARRY)
		keep = CARRY;
	memcpy(c->carry, end - keep, keep);
	c->carrylen = keep;
}

static void
note_head(struct conn *c, const char *data, size_t len)
{
	size_t	 room = sizeof(c->head) - 1 - c->headlen;

	if (len > room)
		len = room;
	memcpy(c->head + c->headlen, data, len);
	c->headlen += len;
	c->head[c->headlen] = '\0';
	if (c->status == 0 && c->headlen >= 12 &&
	    strncmp(c->head, "HTTP/1.", 7) == 0)
		c->status = atoi(c->head + 9);
}

static int
usage(void)
{
	fprintf(stderr, "usage: benchc stream PORT CONNS ROUNDS SECONDS BODY\n"
	    "       benchc idle PORT CONNS SECONDS\n"
	    "       benchc first PORT BODY\n"
	    "       benchc loop PORT SECONDS CONNS PAUSE_MS BODY MODEL...\n");
	return (2);
}

static int
cmp_ll(const void *a, const void *b)
{
	long long	 x = *(const long long *)a, y = *(const long long *)b;

	return (x < y ? -1 : x > y);
}

/* The front door answers only a Host with its own name and port. */
static void
make_post(const char *body, int close_it)
{
	if (asprintf(&req, "POST /v1/chat/completions HTTP/1.1\r\n"
	    "Host: 127.0.0.1:%u\r\nContent-Type: application/json\r\n"
	    "Content-Length: %zu\r\n%s\r\n%s", ntohs(sin.sin_port),
	    strlen(body), close_it ? "Connection: close\r\n" : "",
	    body) == -1)
		err(1, NULL);
	reqlen = strlen(req);
}

/* Send what is left of req; 1 when all is out. */
static int
send_req(struct conn *c)
{
	ssize_t	 n;

	const char	*r = c->rq != NULL ? c->rq : req;
	size_t		 len = c->rq != NULL ? c->rqlen : reqlen;

	while (c->sent < len) {
		n = write(c->fd, r + c->sent, len - c->sent);
		if (n == -1)
			return (errno == EAGAIN || errno == ENOTCONN ? 0 : -1);
		c->sent += n;
	}
	return (1);
}

/* Switch c's epoll interest to reading: its request is out. */
static void
want_read(struct conn *c)
{
	struct epoll_event	 ev;

	c->state = 1;
	memset(&ev, 0, sizeof(ev));
	ev.events = EPOLLIN;
	ev.data.ptr = c;
	(void)epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static int
run_stream(int nconn, int rounds, int secs, const char *body)
{
	struct epoll_event	*evs;
	struct conn		*cs, *c;
	static char		 buf[BUFSZ];
	long long		 deadline = now_ns() + secs * 1000000000LL, t;
	int			 i, n, live = 0, ok = 0, failed = 0, r;
	ssize_t			 k;

	make_post(body, 1);
	if ((cs = calloc(nconn, sizeof(*cs))) == NULL ||
	    (evs = calloc(nconn, sizeof(*evs))) == NULL)
		err(1, NULL);
	for (i = 0; i < nconn; i++) {
		if (open_conn(&cs[i]) == -1) {
			failed++;
			continue;
		}
		live++;
	}
	while (live > 0 && now_ns() < deadline) {
		n = epoll_wait(ep, evs, nconn, 200);
		for (i = 0; i < n; i++) {
			c = evs[i].data.ptr;
			if (c->fd == -1)
				continue;
			if (c->state == 0) {
				if ((r = send_req(c)) == -1)
					goto fail;
				if (r == 1)
					want_read(c);
				continue;
			}
			for (;;) {
				k = read(c->fd, buf, sizeof(buf));
				t = now_ns();
				if (k == -1 && errno == EAGAIN)
					break;
				if (k <= 0)
					break;
				if (c->first_ns == 0)
					c->first_ns = t;
				note_head(c, buf, k);
				scan_stamps(c, buf, k, t);
				/* [DONE] may be split; the status is enough */
				if (memmem(buf, k, "[DONE]", 6) != NULL)
					c->ok = 1;
			}
			if (k == -1 && errno == EAGAIN)
				continue;
			/* EOF or error: the answer is over */
			if (c->status == 200 && c->ok && k == 0)
				ok++;
			else
				failed++;
			close_conn(c);
			c->ok = 0;
			if (++c->round < rounds && open_conn(c) == 0)
				continue;
			live--;
			continue;
 fail:
			failed++;
			close_conn(c);
			live--;
		}
	}
	failed += live;		/* out of time */
	qsort(samples, nsamples, sizeof(*samples), cmp_ll);
	printf("ok %d failed %d chunks %zu", ok, failed, nsamples);
	if (nsamples > 0)
		printf(" p50_us %.1f p99_us %.1f max_us %.1f",
		    samples[nsamples / 2] / 1000.0,
		    samples[(nsamples * 99) / 100] / 1000.0,
		    samples[nsamples - 1] / 1000.0);
	printf("\n");
	return (0);
}

static const char	 health[] = "GET /health HTTP/1.1\r\n"
			    "Host: 127.0.0.1\r\n\r\n";

/* A whole answer in c->head?  (Content-Length bodies only.) */
static int
answer_done(struct conn *c)
{
	char		*e, *cl;
	size_t		 hl, blen;

	if ((e = strstr(c->head, "\r\n\r\n")) == NULL)
		return (0);
	hl = e + 4 - c->head;
	if ((cl = strcasestr(c->head, "Content-Length:")) == NULL || cl > e)
		return (1);
	blen = strtoul(cl + 15, NULL, 10);
	return (c->got >= hl + blen);
}

static void
idle_phase(struct conn *cs, int nconn, long long deadline, int *okp)
{
	struct epoll_event	*evs;
	struct conn		*c;
	static char		 buf[BUFSZ];
	int			 i, n, pending = 0, r;
	ssize_t			 k;

	if ((evs = calloc(nconn, sizeof(*evs))) == NULL)
		err(1, NULL);
	for (i = 0; i < nconn; i++) {
		c = &cs[i];
		if (c->fd == -1)
			continue;
		struct epoll_event ev;

		c->state = 0;
		c->sent = c->got = c->headlen = 0;
		c->status = 0;
		memset(&ev, 0, sizeof(ev));
		ev.events = EPOLLOUT | EPOLLIN;
		ev.data.ptr = c;
		(void)epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
		pending++;
	}
	*okp = 0;
	while (pending > 0 && now_ns() < deadline) {
		n = epoll_wait(ep, evs, nconn, 200);
		for (i = 0; i < n; i++) {
			c = evs[i].data.ptr;
			if (c->fd == -1 || c->state == 2)
				continue;
			if (c->state == 0) {
				if ((r = send_req(c)) == -1)
					goto bad;
				if (r == 1)
					want_read(c);
				continue;
			}
			k = read(c->fd, buf, sizeof(buf));
			if (k == -1 && errno == EAGAIN)
				continue;
			if (k <= 0)
				goto bad;
			note_head(c, buf, k);
			c->got += k;
			if (answer_done(c)) {
				if (c->status == 200)
					(*okp)++;
				c->state = 2;
				pending--;
			}
			continue;
 bad:
			close_conn(c);
			pending--;
		}
	}
	free(evs);
}

static int
run_idle(int nconn, int secs)
{
	struct conn	*cs;
	long long	 deadline;
	int		 i, open = 0, ok1, ok2;

	req = (char *)health;
	reqlen = strlen(health);
	if ((cs = calloc(nconn, sizeof(*cs))) == NULL)
		err(1, NULL);
	for (i = 0; i < nconn; i++) {
		if (open_conn(&cs[i]) == 0)
			open++;
		else
			cs[i].fd = -1;
	}
	deadline = now_ns() + 60 * 1000000000LL;
	idle_phase(cs, nconn, deadline, &ok1);
	/* idle: nothing asked of epoll, nothing sent */
	sleep(secs);
	deadline = now_ns() + 60 * 1000000000LL;
	idle_phase(cs, nconn, deadline, &ok2);
	for (i = 0; i < nconn; i++)
		if (cs[i].fd != -1)
			close_conn(&cs[i]);
	printf("open %d first_ok %d second_ok %d failed %d\n", open, ok1, ok2,
	    nconn - ok2);
	return (0);
}

static int
run_first(const char *body)
{
	struct conn	 c;
	static char	 buf[BUFSZ];
	struct timeval	 tv = { 30, 0 };
	long long	 sent, deadline;
	ssize_t		 k;

	make_post(body, 1);
	memset(&c, 0, sizeof(c));
	if ((c.fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		err(1, "socket");
	if (connect(c.fd, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		err(1, "connect");
	sent = now_ns();
	if (write(c.fd, req, reqlen) != (ssize_t)reqlen)
		err(1, "write");
	deadline = sent + 30 * 1000000000LL;
	/* a read never waits past the deadline */
	if (setsockopt(c.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1)
		err(1, "setsockopt");
	while (now_ns() < deadline) {
		k = read(c.fd, buf, sizeof(buf));
		if (k <= 0)
			break;
		if (c.first_ns == 0)
			c.first_ns = now_ns();
		note_head(&c, buf, k);
	}
	printf("status %d sent_ns %lld first_byte_ns %lld done_ns %lld\n",
	    c.status, sent, c.first_ns, now_ns());
	return (c.status == 200 ? 0 : 1);
}

/*
 * loop: clients on several models at once, counting what each answer
 * was.
 */
struct loop_model {
	const char	*name;
	char		*rq;
	size_t		 rqlen;
	unsigned long	 ok, refused, unfinished;
	long long	*lat;		/* ns, of the answers that succeeded */
	size_t		 nlat, maxlat;
};

struct loop_kind {
	int		 model;
	int		 status;
	char		 code[48];
	unsigned long	 n;
};

static struct loop_model	 lms[LOOP_MODELS];
static struct loop_kind		 kinds[LOOP_MODELS * LOOP_KINDS];
static size_t			 nkinds;

static void
loop_refused(int model, int status, const char *code)
{
	size_t	 i;

	lms[model].refused++;
	for (i = 0; i < nkinds; i++)
		if (kinds[i].model == model && kinds[i].status == status &&
		    strcmp(kinds[i].code, code) == 0) {
			kinds[i].n++;
			return;
		}
	if (nkinds == sizeof(kinds) / sizeof(kinds[0]))
		errx(1, "too many kinds of refusal");
	kinds[nkinds].model = model;
	kinds[nkinds].status = status;
	strlcpy(kinds[nkinds].code, code, sizeof(kinds[nkinds].code));
	kinds[nkinds++].n = 1;
}

/* The error's "code" of an answer, "-" without one. */
static void
answer_code(const char *ans, char *code, size_t len)
{
	const char	*p;
	size_t		 n = 0;

	strlcpy(code, "-", len);
	if ((p = strstr(ans, "\r\n\r\n")) == NULL ||
	    (p = strstr(p, "\"code\"")) == NULL)
		return;
	p += 6;
	while (*p == ' ' || *p == ':' || *p == '"')
		p++;
	while (n + 1 < len && (isalnum((unsigned char)p[n]) || p[n] == '_'))
		n++;
	if (n > 0) {
		memcpy(code, p, n);
		code[n] = '\0';
	}
}

/* An answer is over (EOF): count it; 1 when it succeeded. */
static int
loop_judge(struct conn *c, long long t)
{
	struct loop_model	*m = &lms[c->model];
	char			 code[48];
	int			 status = 0;

	c->ans[c->anslen] = '\0';
	if (strncmp(c->ans, "HTTP/1.", 7) == 0 && c->anslen >= 12)
		status = atoi(c->ans + 9);
	if (status == 200) {
		m->ok++;
		if (m->nlat == m->maxlat) {
			m->maxlat = m->maxlat ? m->maxlat * 2 : 1024;
			if ((m->lat = reallocarray(m->lat, m->maxlat,
			    sizeof(*m->lat))) == NULL)
				err(1, NULL);
		}
		m->lat[m->nlat++] = t - c->start_ns;
		return (1);
	}
	answer_code(c->ans, code, sizeof(code));
	loop_refused(c->model, status, status == 0 ? "no-answer" : code);
	return (0);
}

static void
loop_open(struct conn *c)
{
	c->resume_ns = 0;
	c->anslen = 0;
	c->start_ns = now_ns();
	if (open_conn(c) == -1) {
		loop_refused(c->model, 0, "connect");
		c->resume_ns = now_ns() + 100000000LL;
	}
}

static int
run_loop(int secs, int nconn, int pause_ms, const char *body, int nmodels,
    char **names)
{
	struct epoll_event	*evs;
	struct conn		*cs, *c;
	struct loop_model	*m;
	long long		 deadline = now_ns() + secs * 1000000000LL, t;
	int			 i, n, r, total = nconn * nmodels;
	size_t			 k;
	ssize_t			 got;
	char			*b, *at;

	if (nmodels > LOOP_MODELS || nconn < 1)
		return (usage());
	for (i = 0; i < nmodels; i++) {
		m = &lms[i];
		m->name = names[i];
		/* the body with every @M@ the model's name */
		if ((b = strdup(body)) == NULL)
			err(1, NULL);
		while ((at = strstr(b, "@M@")) != NULL) {
			char	*nb;

			*at = '\0';
			if (asprintf(&nb, "%s%s%s", b, m->name, at + 3) == -1)
				err(1, NULL);
			free(b);
			b = nb;
		}
		make_post(b, 1);
		free(b);
		m->rq = req;
		m->rqlen = reqlen;
	}
	if ((cs = calloc(total, sizeof(*cs))) == NULL ||
	    (evs = calloc(total, sizeof(*evs))) == NULL)
		err(1, NULL);
	for (i = 0; i < total; i++) {
		c = &cs[i];
		c->fd = -1;
		c->model = i / nconn;
		c->rq = lms[c->model].rq;
		c->rqlen = lms[c->model].rqlen;
		if ((c->ans = malloc(LOOP_ANSWER + 1)) == NULL)
			err(1, NULL);
		loop_open(c);
	}
	while ((t = now_ns()) < deadline) {
		for (i = 0; i < total; i++)
			if (cs[i].fd == -1 && cs[i].resume_ns <= t)
				loop_open(&cs[i]);
		n = epoll_wait(ep, evs, total, 10);
		for (i = 0; i < n; i++) {
			c = evs[i].data.ptr;
			if (c->fd == -1)
				continue;
			if (c->state == 0) {
				if ((r = send_req(c)) == 1)
					want_read(c);
				else if (r == -1) {
					close_conn(c);
					loop_refused(c->model, 0, "no-answer");
					c->resume_ns = now_ns() +
					    pause_ms * 1000000LL;
				}
				continue;
			}
			for (;;) {
				char	 sink[BUFSZ];
				size_t	 room = LOOP_ANSWER - c->anslen;

				got = read(c->fd, room > 0 ? c->ans +
				    c->anslen : sink, room > 0 ? room :
				    sizeof(sink));
				if (got <= 0)
					break;
				if (room > 0)
					c->anslen += got;
			}
			if (got == -1 && errno == EAGAIN)
				continue;
			/* EOF or error: the answer is over */
			close_conn(c);
			c->resume_ns = loop_judge(c, now_ns()) ? 0 :
			    now_ns() + pause_ms * 1000000LL;
		}
	}
	for (i = 0; i < total; i++) {
		if (cs[i].fd == -1)
			continue;
		close_conn(&cs[i]);
		lms[cs[i].model].unfinished++;
	}
	for (i = 0; i < nmodels; i++) {
		m = &lms[i];
		qsort(m->lat, m->nlat, sizeof(*m->lat), cmp_ll);
		printf("model %s ok %lu refused %lu unfinished %lu", m->name,
		    m->ok, m->refused, m->unfinished);
		if (m->nlat > 0)
			printf(" p50_ms %.1f p99_ms %.1f max_ms %.1f",
			    m->lat[m->nlat / 2] / 1e6,
			    m->lat[(m->nlat * 99) / 100] / 1e6,
			    m->lat[m->nlat - 1] / 1e6);
		else
			printf(" p50_ms - p99_ms - max_ms -");
		printf("\n");
	}
	for (k = 0; k < nkinds; k++)
		printf("refusal %s %d %s %lu\n", lms[kinds[k].model].name,
		    kinds[k].status, kinds[k].code, kinds[k].n);
	return (0);
}

int
main(int argc, char *argv[])
{
	int	 port;

	if (argc < 3)
		return (usage());
	raise_nofile();
	port = atoi(argv[2]);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((ep = epoll_create1(0)) == -1)
		err(1, "epoll_create1");
	if (strcmp(argv[1], "stream") == 0 && argc == 7)
		return (run_stream(atoi(argv[3]), atoi(argv[4]),
		    atoi(argv[5]), argv[6]));
	if (strcmp(argv[1], "idle") == 0 && argc == 5)
		return (run_idle(atoi(argv[3]), atoi(argv[4])));
	if (strcmp(argv[1], "first") == 0 && argc == 4)
		return (run_first(argv[3]));
	if (strcmp(argv[1], "loop") == 0 && argc >= 8)
		return (run_loop(atoi(argv[3]), atoi(argv[4]), atoi(argv[5]),
		    argv[6], argc - 7, argv + 7));
	return (usage());
}
