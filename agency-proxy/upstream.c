/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The model servers' side of a model request, in HTTP/1.1 of our own:
 * kept connections to their ports, or to their Unix sockets for a model
 * whose command has %s (PROXY_POOL_MAX idle a server at most),
 * the request written in one writev (its header made here, its body's
 * pieces taken from where they are), and the answer read and framed
 * (h1.c parses its header; then chunked, of a known length, or to the
 * close), what each read brought of it handed to the request's sink at
 * once, its end or failure to the request's owner.
 *
 * A connection keeps its read event added for its whole life, idle or
 * not, so that a closed idle connection is seen and dropped, and a
 * request costs no epoll_ctl.  request_timeout bounds the wait for the
 * answer's header and then every gap between two reads.  A connection
 * goes back to the pool only when its answer ended where a read ended
 * and all of its request went out.
 *
 * Calls: h1.c, buf.c, state.c.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/event_struct.h>

#include "h1.h"
#include "log.h"
#include "proxy.h"

#define UP_READ			(64 * 1024)	/* the shared read buffer */
#define UP_HEADER_MAX		(64 * 1024)	/* an answer's header */

struct upconn {
	TAILQ_ENTRY(upconn)	 entry;		/* idle */
	int			 fd;
	uint16_t		 port;
	char			 sock[PROTO_SOCK_MAX];	/* "": the port */
	struct event		 rev;
	struct event		 wev;
	struct event		 timer;
	/* the request's; no owner: idle */
	int			(*sink)(void *, const struct h1_msg *, int,
				    const char *, size_t, int);
	void			*sinkarg;
	const struct upstream_owner *owner;
	void			*ownerarg;
	int			 head;		/* its answer has no body */
	int			 connecting;
	int			 reused;	/* served an answer before */
	int			 paused;	/* rev deleted: slow client */
	int			 inidle;	/* on the idle list */
	/* the request's unwritten part: the header's copied, the body's
	 * where it is (the owner's, which outlives the writing) */
	struct iovec		 iov[UPSTREAM_PIECES + 1];
	int			 iovn;		/* 0: none */
	int			 iovi;		/* the next one */
	char			*out;		/* the header's */
	char			*in;		/* an answer's partial header */
	size_t			 inlen;
	/* the answer being read */
	int			 got;		/* any byte of it */
	int			 began;		/* the owner was told so */
	int			 hdone;
	int64_t			 left;		/* of a known length */
	int			 chunked;
	struct h1_chunked	 ch;
	int			 toclose;	/* ends at EOF */
	int			 keepalive;
};
TAILQ_HEAD(upconns, upconn);

/* What a read brought of the answer, for its sink. */
struct upread {
	struct h1_msg		 m;
	int			 header;	/* m is its header */
	int			 nobody;	/* which says none follows */
	const char		*data;		/* of its body */
	size_t			 len;
	int			 end;		/* it is whole */
	int			 reusable;	/* nothing followed it */
};

static struct upconns	 idle = TAILQ_HEAD_INITIALIZER(idle);
static char		 ubuf[UP_READ];
static struct buf	 hb;		/* a request's header */

static void	 up_readcb(evutil_socket_t, short, void *);
static void	 up_writecb(evutil_socket_t, short, void *);
static void	 up_timeout(evutil_socket_t, short, void *);
static void	 uc_free(struct upconn *);

/* A new connection to port (or sock), connecting; NULL with *err. */
static struct upconn *
uc_connect(uint16_t port, const char *sock, const char **err)
{
	struct upconn		*uc;
	struct sockaddr_in	 sin;
	struct sockaddr_un	 sun;
	struct sockaddr		*sa;
	socklen_t		 salen;
	int			 fd, one = 1;

	if ((fd = socket(sock[0] != '\0' ? AF_UNIX : AF_INET, SOCK_STREAM |
	    SOCK_NONBLOCK | SOCK_CLOEXEC, 0)) == -1) {
		*err = errno == EMFILE || errno == ENFILE ?
		    "out of file descriptors" : "cannot make a socket";
		return (NULL);
	}
	if (sock[0] != '\0') {
		memset(&sun, 0, sizeof(sun));
		sun.sun_family = AF_UNIX;
		if (strlcpy(sun.sun_path, sock, sizeof(sun.sun_path)) >=
		    sizeof(sun.sun_path)) {
			*err = "socket path too long";
			close(fd);
			return (NULL);
		}
		sa = (struct sockaddr *)&sun;
		salen = sizeof(sun);
	} else {
		/* one write a request; nothing to wait for */
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one,
		    sizeof(one));
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = htons(port);
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		sa = (struct sockaddr *)&sin;
		salen = sizeof(sin);
	}
	/* A Unix socket whose backlog is full says EAGAIN: retried as
	 * a refusal is, by the owner. */
	if (connect(fd, sa, salen) == -1 && errno != EINPROGRESS) {
		*err = errno == ECONNREFUSED || errno == ENOENT ||
		    errno == EAGAIN ? "connection refused" :
		    "connection failed";
		close(fd);
		return (NULL);
	}
	if ((uc = calloc(1, sizeof(*uc))) == NULL) {
		*err = "out of memory";
		close(fd);
		return (NULL);
	}
	uc->fd = fd;
	uc->port = port;
	(void)strlcpy(uc->sock, sock, sizeof(uc->sock));
	uc->connecting = 1;
	if (event_assign(&uc->rev, px->base, fd, EV_READ | EV_PERSIST,
	    up_readcb, uc) == -1 ||
	    event_assign(&uc->wev, px->base, fd, EV_WRITE | EV_PERSIST,
	    up_writecb, uc) == -1 ||
	    evtimer_assign(&uc->timer, px->base, up_timeout, uc) == -1 ||
	    event_add(&uc->rev, NULL) == -1 ||
	    event_add(&uc->wev, NULL) == -1) {
		*err = "cannot watch the connection";
		close(fd);
		free(uc);
		return (NULL);
	}
	return (uc);
}

/* Whether uc goes where port and sock say. */
static int
uc_to(const struct upconn *uc, uint16_t port, const char *sock)
{
	return (uc->port == port && strcmp(uc->sock, sock) == 0);
}

/* An idle connection to port (or sock), or a new one (connecting);
 * NULL with *err saying why there is none. */
struct upconn *
upstream_open(uint16_t port, const char *sock, const char **err)
{
	struct upconn	*uc;

	TAILQ_FOREACH(uc, &idle, entry)
		if (uc_to(uc, port, sock)) {
			TAILQ_REMOVE(&idle, uc, entry);
			uc->inidle = 0;
			return (uc);
		}
	return (uc_connect(port, sock, err));
}

/* Close the idle connections to port (or sock). */
void
upstream_drop(uint16_t port, const char *sock)
{
	struct upconn	*uc, *next;

	for (uc = TAILQ_FIRST(&idle); uc != NULL; uc = next) {
		next = TAILQ_NEXT(uc, entry);
		if (uc_to(uc, port, sock))
			uc_free(uc);
	}
}

/* Its answer over, a connection waits for the next request to its
 * port, or is closed when the port has enough waiting. */
static void
idle_put(struct upconn *uc)
{
	struct upconn	*u;
	size_t		 n = 0;

	uc->owner = NULL;
	uc->reused = 1;
	evtimer_del(&uc->timer);
	free(uc->in);
	uc->in = NULL;
	uc->inlen = 0;
	TAILQ_FOREACH(u, &idle, entry)
		if (uc_to(u, uc->port, uc->sock) && ++n >= PROXY_POOL_MAX) {
			uc_free(uc);
			return;
		}
	TAILQ_INSERT_HEAD(&idle, uc, entry);
	uc->inidle = 1;
}

static void
uc_free(struct upconn *uc)
{
	if (uc->inidle)
		TAILQ_REMOVE(&idle, uc, entry);
	event_del(&uc->rev);
	event_del(&uc->wev);
	evtimer_del(&uc->timer);
	close(uc->fd);
	free(uc->out);
	free(uc->in);
	free(uc);
}

/* The owner is done with the connection before its answer ended. */
void
upstream_close(struct upconn *uc)
{
	uc_free(uc);
}

/* The client took what it was slow to take: read the answer again. */
void
upstream_resume(struct upconn *uc)
{
	if (uc->paused) {
		uc->paused = 0;
		event_add(&uc->rev, NULL);
	}
}

/* Whether the request still goes out, its body's pieces in use. */
int
upstream_sending(const struct upconn *uc)
{
	return (uc->iovn > 0);
}

static void
timer_arm(struct upconn *uc)
{
	struct timeval	 tv;
	int64_t		 ms = px->conf->request_timeout;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(&uc->timer, &tv);
}

/* The request failed before its answer's end: the connection goes, then
 * its owner hears why.  A kept connection that failed before any byte
 * of the answer never had the request read: it may go again. */
static void
up_fail(struct upconn *uc, const char *what, int how)
{
	const struct upstream_owner	*owner = uc->owner;
	void				*arg = uc->ownerarg;

	if (how == UPSTREAM_FAILED && uc->reused && !uc->got)
		how = UPSTREAM_STALE;
	uc_free(uc);
	owner->fail(arg, what, how);
}

/* The answer is whole (its last read, ur): the sink's last read, the
 * connection back to the pool when reusable, and the owner's end. */
static void
up_done(struct upconn *uc, const struct upread *ur)
{
	const struct upstream_owner	*owner = uc->owner;
	void				*arg = uc->ownerarg;

	(void)uc->sink(uc->sinkarg, ur->header ? &ur->m : NULL, ur->nobody,
	    ur->data, ur->len, 1);
	/* not one whose request is still going out, or whose answer came
	 * before all of it: what is left would start the next request */
	if (ur->reusable && uc->keepalive && !uc->paused && !uc->connecting &&
	    uc->iovn == 0)
		idle_put(uc);
	else
		uc_free(uc);
	owner->done(arg);
}

/* The request is out and its answer has begun: it cannot go again. */
static void
up_began(struct upconn *uc)
{
	if (uc->got && uc->iovn == 0 && !uc->began) {
		uc->began = 1;
		uc->owner->began(uc->ownerarg);
	}
}

/* Past n bytes of uc's unwritten pieces. */
static void
uc_advance(struct upconn *uc, size_t n)
{
	struct iovec	*v;

	while (uc->iovi < uc->iovn) {
		v = &uc->iov[uc->iovi];
		if (n < v->iov_len) {
			v->iov_base = (char *)v->iov_base + n;
			v->iov_len -= n;
			return;
		}
		n -= v->iov_len;
		uc->iovi++;
	}
	free(uc->out);
	uc->out = NULL;
	uc->iovn = uc->iovi = 0;
}

/* Add s to the request's header. */
static int
h_str(const char *s)
{
	return (buf_add(&hb, s, strlen(s), 1024));
}

/* The request's header, in hb: its line, the Host of the model server,
 * the client's end-to-end fields, and those of its body. */
static int
header_make(const struct upconn *uc, const struct upstream_req *rq,
    size_t len)
{
	hb.len = 0;
	if (h_str(rq->method) == -1 || h_str(" ") == -1 ||
	    h_str(rq->target) == -1 ||
	    h_str(" HTTP/1.1\r\nHost: 127.0.0.1:") == -1 ||
	    buf_num(&hb, uc->port, 10, 1024) == -1 || h_str("\r\n") == -1 ||
	    buf_add(&hb, rq->headers, rq->headerslen, 1024) == -1)
		return (-1);
	if (rq->json && h_str("Content-Type: application/json\r\n") == -1)
		return (-1);
	if ((rq->length || len > 0) && (h_str("Content-Length: ") == -1 ||
	    buf_num(&hb, len, 10, 1024) == -1 || h_str("\r\n") == -1))
		return (-1);
	return (h_str("\r\n"));
}

/*
 * Send rq on uc, the connection the owner opened: what the socket takes
 * of it in one writev, the rest kept for up_writecb (the header as a
 * copy, the body's pieces where they are).  -1 when the connection
 * failed: it is gone and the owner was told (its fail).
 */
int
upstream_send(struct upconn *uc, const struct upstream_req *rq)
{
	ssize_t	 w = 0;
	size_t	 len = 0;
	int	 i;

	uc->sink = rq->sink;
	uc->sinkarg = rq->sinkarg;
	uc->owner = rq->owner;
	uc->ownerarg = rq->ownerarg;
	uc->head = rq->head;
	uc->got = uc->began = uc->hdone = uc->chunked = uc->toclose = 0;
	uc->keepalive = 0;
	uc->left = -1;
	for (i = 0; i < rq->nbody; i++) {
		uc->iov[i + 1] = rq->body[i];
		len += rq->body[i].iov_len;
	}
	if (header_make(uc, rq, len) == -1) {
		up_fail(uc, "out of memory", UPSTREAM_FAILED);
		return (-1);
	}
	uc->iov[0].iov_base = hb.b;
	uc->iov[0].iov_len = hb.len;
	uc->iovn = rq->nbody + 1;
	uc->iovi = 0;
	timer_arm(uc);
	if (!uc->connecting) {
		if ((w = writev(uc->fd, uc->iov, uc->iovn)) == -1) {
			if (errno != EAGAIN && errno != EINTR) {
				up_fail(uc, "connection failed",
				    UPSTREAM_FAILED);
				return (-1);
			}
			w = 0;
		}
		uc_advance(uc, (size_t)w);
		if (uc->iovn == 0)
			return (0);
	}
	if (uc->iovi == 0) {
		free(uc->out);
		if ((uc->out = malloc(uc->iov[0].iov_len)) == NULL) {
			up_fail(uc, "connection failed", UPSTREAM_FAILED);
			return (-1);
		}
		memcpy(uc->out, uc->iov[0].iov_base, uc->iov[0].iov_len);
		uc->iov[0].iov_base = uc->out;
	}
	if (!uc->connecting)
		event_add(&uc->wev, NULL);
	return (0);
}

static void
up_writecb(evutil_socket_t fd, short ev, void *arg)
{
	struct upconn	*uc = arg;
	ssize_t		 n;
	int		 err = 0;
	socklen_t	 len = sizeof(err);

	(void)ev;
	if (uc->connecting) {
		uc->connecting = 0;
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == -1)
			err = errno;
		if (err != 0) {
			if (uc->owner != NULL)
				up_fail(uc, err == ECONNREFUSED ?
				    "connection refused" :
				    "connection failed", UPSTREAM_FAILED);
			else
				uc_free(uc);
			return;
		}
	}
	if (uc->iovn > 0) {
		n = writev(fd, uc->iov + uc->iovi, uc->iovn - uc->iovi);
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				return;
			if (uc->owner != NULL)
				up_fail(uc, "connection failed",
				    UPSTREAM_FAILED);
			else
				uc_free(uc);
			return;
		}
		uc_advance(uc, (size_t)n);
		if (uc->iovn > 0)
			return;
		if (uc->owner != NULL)
			up_began(uc);
	}
	event_del(&uc->wev);
}

/* The start of a header that is not all here yet, kept for the next
 * read; -1 when there is no memory for it. */
static int
header_keep(struct upconn *uc, const char *d, size_t len)
{
	char	*t;

	if (d != uc->in) {
		if ((t = malloc(len)) == NULL)
			return (-1);
		memcpy(t, d, len);
		free(uc->in);
		uc->in = t;
	}
	uc->inlen = len;
	return (0);
}

/* The answer's header (not an interim one), in ur: its framing.  1
 * when it has no body. */
static int
header_read(struct upconn *uc, struct upread *ur)
{
	const struct h1_msg	*m = &ur->m;

	uc->hdone = 1;
	ur->header = 1;
	ur->nobody = m->status == 204 || m->status == 304 || uc->head;
	uc->keepalive = m->keepalive;
	if (ur->nobody)
		uc->left = 0;
	else if (m->chunked) {
		uc->chunked = 1;
		h1_chunked_init(&uc->ch);
	} else if (m->content_length >= 0)
		uc->left = m->content_length;
	else {
		uc->toclose = 1;
		uc->keepalive = 0;
	}
	return (uc->left == 0);
}

/*
 * The bytes of a read, into ur: the header (1xx skipped), then the body
 * by its framing, decoded in place.  0, or -1 on an error (the owner
 * was told).
 */
static int
up_bytes(struct upconn *uc, char *d, size_t len, struct upread *ur)
{
	ssize_t	 k;
	int	 r;

	while (len > 0 && !uc->hdone) {
		if ((r = h1_parse_response(d, len, UP_HEADER_MAX,
		    &ur->m)) == 0) {
			if (header_keep(uc, d, len) == -1) {
				up_fail(uc, "out of memory", UPSTREAM_FAILED);
				return (-1);
			}
			return (0);
		}
		if (r < 0 || ur->m.status == 101) {
			up_fail(uc, "invalid answer", UPSTREAM_FAILED);
			return (-1);
		}
		d += r;
		len -= r;
		if (ur->m.status >= 200 && header_read(uc, ur)) {
			ur->end = 1;
			ur->reusable = len == 0;
			return (0);
		}
	}
	if (len == 0)
		return (0);
	ur->data = d;
	if (uc->chunked) {
		if ((k = h1_chunked_decode(&uc->ch, d, len, &ur->len,
		    &ur->end)) < 0) {
			up_fail(uc, "invalid chunked answer", UPSTREAM_FAILED);
			return (-1);
		}
		ur->reusable = (size_t)k == len;
		return (0);
	}
	ur->len = uc->left >= 0 && (uint64_t)uc->left < len ?
	    (size_t)uc->left : len;
	if (uc->left >= 0 && (uc->left -= ur->len) == 0) {
		ur->end = 1;
		ur->reusable = ur->len == len;
	}
	return (0);
}

static void
up_readcb(evutil_socket_t fd, short ev, void *arg)
{
	struct upconn	*uc = arg;
	struct upread	 ur;
	ssize_t		 n;
	size_t		 room = sizeof(ubuf);
	char		*d = ubuf;

	(void)ev;
	if (uc->owner == NULL) {
		/* idle: closed by the model server, or talking out of turn */
		uc_free(uc);
		return;
	}
	/* the rest of a header */
	if (uc->inlen > 0 && UP_HEADER_MAX + 1 - uc->inlen < room)
		room = UP_HEADER_MAX + 1 - uc->inlen;
	if ((n = read(fd, ubuf, room)) == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		up_fail(uc, errno == ECONNREFUSED ? "connection refused" :
		    "connection failed", UPSTREAM_FAILED);
		return;
	}
	if (n == 0) {
		if (uc->hdone && uc->toclose) {
			ur.header = ur.nobody = ur.reusable = 0;
			ur.data = NULL;
			ur.len = 0;
			ur.end = 1;
			up_done(uc, &ur);
		} else
			up_fail(uc, uc->got ? "connection closed mid-answer" :
			    "connection closed", UPSTREAM_FAILED);
		return;
	}
	uc->got = 1;
	timer_arm(uc);
	if (uc->inlen > 0) {
		if ((d = realloc(uc->in, uc->inlen + n)) == NULL) {
			up_fail(uc, "out of memory", UPSTREAM_FAILED);
			return;
		}
		memcpy(d + uc->inlen, ubuf, n);
		uc->in = d;
		n += uc->inlen;
		uc->inlen = 0;
	}
	ur.header = ur.nobody = ur.end = ur.reusable = 0;
	ur.data = NULL;
	ur.len = 0;
	if (up_bytes(uc, d, (size_t)n, &ur) == -1)
		return;
	if (ur.end) {
		up_done(uc, &ur);
		return;
	}
	if ((ur.header || ur.len > 0) && uc->sink(uc->sinkarg, ur.header ?
	    &ur.m : NULL, ur.nobody, ur.data, ur.len, 0) && !uc->paused) {
		/* the client is slow: read on when it took it */
		event_del(&uc->rev);
		uc->paused = 1;
	}
	if (uc->inlen == 0 && uc->in != NULL) {
		free(uc->in);
		uc->in = NULL;
	}
	up_began(uc);
}

/* No answer, or no more of it, in request_timeout. */
static void
up_timeout(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	up_fail(arg, "no answer in time", UPSTREAM_TIMEOUT);
}
