/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The front door's client connections: accepted (with the peer's
 * credentials on a Unix socket, its address on TCP), read, parsed
 * (h1.c), each request's header shown to the handler registered at
 * start-up (conn_init: http.c's) before any of its body is read or any
 * body budget taken (conn_budget.c, for the owner the handler names),
 * then handed one request at a time to the handler or to its refused, written back, capped, given deadlines, and closed
 * with a lingering close.  News for a running request goes to the owner
 * its handler set (conn_set_owner).
 *
 * Invariants: a connection is freed only from its own callbacks or from
 * conn_abort, never while conn.c is on the stack for it (c->inproc).
 * Its read event stays added for its whole life; its write event only
 * while output waits.  Only input a connection leaves unfinished is kept
 * in a buffer of its own, and that buffer's size, less what the body
 * budget holds for it, is taken from the header budget (conn_budget.c,
 * the client's address or user its owner) before it grows: an
 * unfinished header the budget has no room for is refused (503).  While
 * a request runs (CS_BUSY), what the client sends is only kept, up to
 * CONN_PIPELINE_MAX and what the header budget lets it keep.
 *
 * Calls: conn_tls.c, conn_budget.c, h1.c, buf.c, scan.c, multipart.c,
 * state.c, common/log.c.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/event_struct.h>
#include <event2/listener.h>

#include "h1.h"
#include "log.h"
#include "proxy.h"

#define CONN_READ		(64 * 1024)	/* the shared read buffer */
#define CONN_MARK_READ		(128 * 1024)	/* a read of a form's body, */
#define CONN_MARK_PIECES	16		/* as many a turn at most */
#define CONN_FIRST		(16 * 1024)	/* a request's first read */
#define CONN_HEADER_MAX		(64 * 1024)	/* a request's header */
#define CONN_PIPELINE_MAX	(64 * 1024)	/* kept while BUSY */
#define CONN_FIT_MIN		4096		/* c->in, fitted */
#define CONN_TRIM_BYTES		(4 * 1024 * 1024)	/* let go: trim */
#define CONN_LINGER_MS		2000		/* a lingering close, at most */
#define CONN_LINGER_BYTES	(1024 * 1024)	/* read and dropped, at most */
#define CONN_EVICT_MS		1000		/* waited, to be closed at the
						 * cap for a new connection */
#define FD_MIN			64		/* below: no proxy */
#define PEER_GROUPS_MAX		65536		/* a client's groups, read */

enum conn_state {
	CS_HEADER,		/* reading a request's header */
	CS_BODY,		/* reading its body */
	CS_BUSY,		/* a request runs */
	CS_CLOSING,		/* the last answer goes out, then linger */
	CS_LINGER,		/* written; input read and dropped */
};

struct hconn {
	TAILQ_ENTRY(hconn)	 entry;
	TAILQ_ENTRY(hconn)	 wentry;	/* waiting, oldest first */
	int			 inwait;
	int			 fd;
	enum conn_state		 state;
	struct event		 rev;
	struct event		 wev;
	struct buf		 in;		/* unfinished input */
	struct buf		 out;		/* what the socket did not take */
	size_t			 outoff;	/* of out, written */
	int64_t			 since;		/* the state's deadline's start */
	int64_t			 lastio;
	struct bhold		 held;		/* of the body budget */
	struct bhold		 hheld;		/* of the header budget: what
						 * c->in has beyond held */
	char			 hown[AGENCY_NAME_MAX + 16];	/* whose
						 * share hheld is of */
	size_t			 lingered;	/* bytes dropped */
	/* CS_BODY */
	size_t			 hdrlen;
	int64_t			 clen;		/* -1: chunked */
	struct h1_chunked	 ch;
	size_t			 rawpos;	/* chunked: next raw byte */
	size_t			 bodylen;	/* chunked: decoded so far */
	int			 form;		/* a form of known length: */
	struct mmarks		 marks;		/* its body's marks so far */
	/* the running request */
	size_t			 reqend;	/* in c->in, its end (0: it
						 * is not in c->in) */
	struct prescan		 pre;		/* of a body of known length */
	int			 taken;		/* its owner took c->in */
	struct hreq		 req;
	void			(*gone)(void *);
	void			(*drained)(void *);
	void			*arg;
	int			 inproc;	/* conn.c is on the stack */
	int			 dead;		/* free when off the stack */
	int			 broken;	/* a write failed */
	int			 paused;	/* read event deleted */
	int			 eof;		/* the client is done sending */
	struct tls		*tls;		/* NULL: plain */
	int			 rwantw;	/* a TLS read waits for POLLOUT */
	int			 wwantr;	/* a TLS write waits for POLLIN */
};
TAILQ_HEAD(hconns, hconn);

struct lsn {
	TAILQ_ENTRY(lsn)	 entry;
	struct evconnlistener	*lev;
	struct tls		*tls;		/* its server context, or NULL */
	int			 unixsock;
};
TAILQ_HEAD(lsns, lsn);

static struct hconns	 conns = TAILQ_HEAD_INITIALIZER(conns);
static struct hconns	 waiting = TAILQ_HEAD_INITIALIZER(waiting);
static struct lsns	 lsns = TAILQ_HEAD_INITIALIZER(lsns);
static struct conn_stats stats;
static const struct conn_handler *handler;
static struct event	*sweep_ev;
static struct event	*resume_ev;
static struct event	*cap_ev;
static int64_t		 header_timeout;	/* ms; 0: none */
static int64_t		 body_timeout;		/* ms */
static int64_t		 max_body;
static uint64_t		 auto_max;		/* from the fd limit */
static int		 accept_paused;		/* out of fds, for a while */
static int		 cap_paused;		/* at the cap, none to give way */
static int64_t		 let_go;		/* bytes freed since a trim */
static char		 rbuf[CONN_READ];

static void	 conn_acceptcb(struct evconnlistener *, evutil_socket_t,
		    struct sockaddr *, int, void *);
static void	 conn_readcb(evutil_socket_t, short, void *);
static void	 conn_writecb(evutil_socket_t, short, void *);
static void	 conn_sweep(evutil_socket_t, short, void *);
static void	 conn_resume(evutil_socket_t, short, void *);
static void	 conn_trim(void);
static void	 cap_check(void);
static int	 accept_stopped(void);
static void	 cap_timer(evutil_socket_t, short, void *);
static void	 accept_errorcb(struct evconnlistener *, void *);
static size_t	 conn_consume(struct hconn *, char *, size_t);
static void	 conn_end(struct hconn *);
static void	 conn_free(struct hconn *);
static void	 form_start(struct hconn *, const struct h1_msg *);
static void	 form_mark(struct hconn *);
static void	 conn_linger(struct hconn *);
static void	 conn_refuse(struct hconn *, int);
static void	 wait_enter(struct hconn *);
static void	 wait_leave(struct hconn *);
static int	 in_charge(struct hconn *, size_t, int);

/*
 * Before the sandbox: raise the fd limit to its hard limit, and take the
 * default cap from it.  h takes the requests.
 */
void
conn_init(const struct conn_handler *h)
{
	struct rlimit	 rl;
	rlim_t		 n = 1024, reserve;

	handler = h;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
				log_warn("%s: setrlimit", __func__);
			(void)getrlimit(RLIMIT_NOFILE, &rl);
		}
		n = rl.rlim_cur;
	}
	/* Too few to serve anyone: say so, rather than serve one. */
	if (n < FD_MIN)
		fatalx("the file descriptor limit (RLIMIT_NOFILE) is %llu: "
		    "the front door needs at least %d", (unsigned long long)n,
		    FD_MIN);
	if (n > 1000000)
		n = 1000000;
	/*
	 * Idle keep-alive clients hold no upstream connection, busy ones
	 * one each: three quarters of the fds for clients lets many idle
	 * ones wait while a quarter of them could be busy at once; past
	 * that, accept pauses rather than spins.  The fds kept back for
	 * the parent, the listeners and the probes are a quarter of a
	 * small limit.
	 */
	reserve = n / 4 < PROXY_FD_RESERVE ? n / 4 : PROXY_FD_RESERVE;
	auto_max = (n - reserve) / 4 * 3;
	stats.max = auto_max;

	if ((sweep_ev = event_new(px->base, -1, EV_PERSIST, conn_sweep,
	    NULL)) == NULL ||
	    (resume_ev = evtimer_new(px->base, conn_resume, NULL)) == NULL ||
	    (cap_ev = evtimer_new(px->base, cap_timer, NULL)) == NULL)
		fatalx("%s: event_new", __func__);
}

/* A new or reloaded configuration: the cap, the body limits, the
 * deadlines. */
void
conn_configure(const struct pconf *conf)
{
	struct timeval	 tv;
	int64_t		 ms;

	stats.max = conf->max_connections > 0 ?
	    (uint64_t)conf->max_connections : auto_max;
	header_timeout = conf->header_timeout;
	body_timeout = conf->body_timeout;
	max_body = conf->max_body;
	conn_budget_configure(conf->body_buffer, max_body, conf->body_share,
	    conf->header_buffer, conf->header_share);
	evtimer_del(sweep_ev);
	/* late by at most a quarter of the shorter deadline, or a second */
	ms = header_timeout > 0 && header_timeout < body_timeout ?
	    header_timeout : body_timeout;
	ms /= 4;
	if (ms < 50)
		ms = 50;
	if (ms > 1000)
		ms = 1000;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(sweep_ev, &tv);
	/* a new cap may be over or under the connections open */
	cap_check();
}

/*
 * Accept on fd (listening, non-blocking), with TLS when tls is a server
 * context (which the listener takes), and the peers' credentials on a
 * Unix socket; the listener is returned.
 */
void *
conn_listen(int fd, void *tls, int unixsock)
{
	struct lsn	*l;

	if ((l = calloc(1, sizeof(*l))) == NULL)
		return (NULL);
	if ((l->lev = evconnlistener_new(px->base, conn_acceptcb, l,
	    LEV_OPT_CLOSE_ON_FREE, 0, fd)) == NULL) {
		free(l);
		return (NULL);
	}
	l->tls = tls;
	l->unixsock = unixsock;
	evconnlistener_set_error_cb(l->lev, accept_errorcb);
	if (accept_stopped())
		evconnlistener_disable(l->lev);
	TAILQ_INSERT_TAIL(&lsns, l, entry);
	return (l);
}

void
conn_unlisten(void *arg)
{
	struct lsn	*l = arg;

	TAILQ_REMOVE(&lsns, l, entry);
	evconnlistener_free(l->lev);	/* closes the socket */
	conn_tls_free(l->tls);		/* connections keep their own */
	free(l);
}

/* A Unix socket's client: its uid and gid, and its groups. */
static void
peer_read(struct hconn *c)
{
	struct ucred	 uc;
	socklen_t	 len = sizeof(uc);
	uint32_t	*g = NULL;

	c->req.peer.unixsock = 1;
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &uc, &len) == -1 ||
	    len != sizeof(uc)) {
		log_warn("%s: SO_PEERCRED", __func__);
		return;
	}
	c->req.peer.uid = uc.uid;
	c->req.peer.gid = uc.gid;
	c->req.peer.known = 1;
	/* as many as the kernel has, up to what a user may be in */
	len = 64 * sizeof(*g);
	for (;;) {
		if ((g = malloc(len)) == NULL)
			break;
		if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, g,
		    &len) == 0) {
			c->req.peer.groups = g;
			c->req.peer.ngroups = len / sizeof(*g);
			return;
		}
		free(g);
		g = NULL;
		if (errno != ERANGE || len > PEER_GROUPS_MAX * sizeof(*g))
			break;
	}
	/* without its groups, a group rule may miss it: never more */
	log_debug("%s: SO_PEERGROUPS: %s", __func__, strerror(errno));
}

/* A TCP client's address, as text: whose share of the body budget
 * its requests take when they come without a key. */
static void
peer_addr(struct hconn *c, const struct sockaddr *sa, int salen)
{
	const struct sockaddr_in	*sin;
	const struct sockaddr_in6	*sin6;
	const void			*a = NULL;

	if (sa->sa_family == AF_INET && salen >= (int)sizeof(*sin)) {
		sin = (const struct sockaddr_in *)(const void *)sa;
		a = &sin->sin_addr;
	} else if (sa->sa_family == AF_INET6 &&
	    salen >= (int)sizeof(*sin6)) {
		sin6 = (const struct sockaddr_in6 *)(const void *)sa;
		a = &sin6->sin6_addr;
	}
	if (a == NULL || inet_ntop(sa->sa_family, a, c->req.peer.addr,
	    sizeof(c->req.peer.addr)) == NULL)
		(void)strlcpy(c->req.peer.addr, "?",
		    sizeof(c->req.peer.addr));
}

/*
 * Whose share of the header budget the connection's input takes: its
 * client's address, or its user on a Unix socket, since no key is known
 * before a header is whole; while a body is read, the owner its body
 * takes the body budget for (owner, or NULL: the client).  What it
 * holds moves to the new owner, taken even over the budget.
 */
static void
in_owner(struct hconn *c, const char *owner)
{
	(void)conn_budget_header(&c->hheld, "", 0, 0);
	if (owner != NULL)
		(void)strlcpy(c->hown, owner, sizeof(c->hown));
	else if (!c->req.peer.unixsock)
		(void)snprintf(c->hown, sizeof(c->hown), "addr=%s",
		    c->req.peer.addr);
	else if (c->req.peer.known)
		(void)snprintf(c->hown, sizeof(c->hown), "uid=%u",
		    c->req.peer.uid);
	else
		(void)strlcpy(c->hown, "uid=?", sizeof(c->hown));
	(void)in_charge(c, c->in.cap, 1);
}

/*
 * The connection that has waited longest for its request (or in a
 * lingering close), or NULL; in left, the ms until it has waited long
 * enough to be taken for slow and give way at the cap (0 or less: it
 * has).
 */
static struct hconn *
evict_first(int64_t *left)
{
	struct hconn	*c;

	if ((c = TAILQ_FIRST(&waiting)) != NULL)
		*left = c->since + CONN_EVICT_MS - now_ms();
	return (c);
}

/*
 * At the cap: close the connection that has waited longest, if it may
 * give way.  Returns whether one was closed.
 */
static int
conn_evict(void)
{
	struct hconn	*c;
	int64_t		 left;

	if ((c = evict_first(&left)) == NULL || left > 0)
		return (0);
	stats.evicted++;
	c->broken = 1;
	conn_end(c);
	return (1);
}

/*
 * A new connection.  At the cap, it closes the one that has waited
 * longest for its request (or in a lingering close) if that one may give
 * way (conn_evict); cap_check stops accepting before a new one would
 * find none, so that clients wait in the kernel's backlog in the order
 * they came.
 */
static void
conn_acceptcb(struct evconnlistener *lev, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct lsn	*l = arg;
	struct hconn	*c;

	(void)lev;
	stats.accepted++;
	if (stats.open >= stats.max && !conn_evict()) {
		stats.refused++;
		close(fd);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		log_warn("%s: calloc", __func__);
		close(fd);
		return;
	}
	c->fd = fd;
	c->state = CS_HEADER;
	c->since = c->lastio = now_ms();
	c->req.conn = c;
	if (l->unixsock)
		peer_read(c);
	else
		peer_addr(c, sa, salen);
	in_owner(c, NULL);
	/* the handshake comes with the first reads */
	if (l->tls != NULL && (c->tls = conn_tls_accept(l->tls, fd)) == NULL) {
		close(fd);
		free(c->req.peer.groups);
		free(c);
		return;
	}
	c->req.tls = c->tls != NULL;
	if (event_assign(&c->rev, px->base, fd, EV_READ | EV_PERSIST,
	    conn_readcb, c) == -1 ||
	    event_assign(&c->wev, px->base, fd, EV_WRITE | EV_PERSIST,
	    conn_writecb, c) == -1 ||
	    event_add(&c->rev, NULL) == -1) {
		log_warnx("%s: cannot watch a connection", __func__);
		close(fd);
		conn_tls_free(c->tls);
		free(c->req.peer.groups);
		free(c);
		return;
	}
	TAILQ_INSERT_TAIL(&conns, c, entry);
	stats.open++;
	wait_enter(c);
	if (stats.open >= stats.max)
		cap_check();
}

/* The list of connections waiting for a request, or lingering, oldest
 * first: enter it anew at each such state. */
static void
wait_enter(struct hconn *c)
{
	wait_leave(c);
	TAILQ_INSERT_TAIL(&waiting, c, wentry);
	c->inwait = 1;
	/* one that may give way in time, where there was none */
	if (cap_paused)
		cap_check();
}

static void
wait_leave(struct hconn *c)
{
	if (!c->inwait)
		return;
	TAILQ_REMOVE(&waiting, c, wentry);
	c->inwait = 0;
}

/*
 * What c->in takes of the header budget when its size is cap: what the
 * body budget does not hold for it.  0, or -1 when more does not fit
 * (force: it is taken all the same, for input already kept).
 */
static int
in_charge(struct hconn *c, size_t cap, int force)
{
	int64_t	 n = (int64_t)cap - c->held.n;

	/* a chunked body's raw bytes: bounded by in_limit, beside the
	 * max body the body budget holds for it */
	if (n < 0 || (c->state == CS_BODY && c->clen < 0))
		n = 0;
	return (conn_budget_header(&c->hheld, c->hown, n, force));
}

/*
 * Make room for n more bytes of input, the size doubling from first;
 * -1 past limit or out of memory, -2 when the header budget has no room
 * for it (the buffer as it was).
 */
static int
in_reserve(struct hconn *c, size_t n, size_t first, size_t limit)
{
	size_t	 cap;

	if ((cap = buf_grown(&c->in, n, first, limit)) == 0)
		return (-1);
	if (cap > c->in.cap && in_charge(c, cap, 0) == -1)
		return (-2);
	if (buf_reserve(&c->in, n, first, limit) == -1) {
		(void)in_charge(c, c->in.cap, 1);
		return (-1);
	}
	return (0);
}

static void
in_release(struct hconn *c)
{
	buf_release(&c->in, 0);
	(void)in_charge(c, 0, 0);
}

/* What c->in no longer needs let go, out of a body's state: after a
 * body it may have the body's size and a few bytes that followed. */
static void
in_fit(struct hconn *c)
{
	if (c->state == CS_BODY)
		return;
	buf_fit(&c->in, CONN_FIT_MIN);
	(void)in_charge(c, c->in.cap, 1);
}

/* The most input a connection may keep in its state. */
static size_t
in_limit(const struct hconn *c)
{
	switch (c->state) {
	case CS_BODY:
		/* a length: the body and one read past it */
		if (c->clen >= 0)
			return (c->hdrlen + (size_t)c->clen + CONN_READ);
		return (c->hdrlen + (size_t)max_body * 2 + 4096);
	case CS_HEADER:
		return (CONN_HEADER_MAX + 4096);
	default:
		return (CONN_PIPELINE_MAX);
	}
}

/*
 * Read at most len bytes: > 0, 0 at the end, -1 with errno (EAGAIN:
 * nothing to read now).  A TLS read that waits to write adds the write
 * event; one that fills buf may leave more in libtls, which no event
 * would tell: the read callback runs again.
 */
static ssize_t
io_read(struct hconn *c, void *buf, size_t len)
{
	ssize_t	 n;
	int	 wantw = 0, saved;

	if (c->tls == NULL)
		return (read(c->fd, buf, len));
	n = conn_tls_read(c->tls, buf, len, &wantw);
	if (wantw) {
		saved = errno;
		c->rwantw = 1;
		event_add(&c->wev, NULL);
		errno = saved;
	}
	if (n > 0 && (size_t)n == len && !c->paused)
		event_active(&c->rev, EV_READ, 1);
	return (n);
}

/* Write at most len bytes: the bytes written, or -1 with errno (EAGAIN:
 * none now).  A TLS write that waits to read is resumed by the read
 * event. */
static ssize_t
io_write(struct hconn *c, const void *buf, size_t len)
{
	int	 wantr = 0;
	ssize_t	 n;

	if (c->tls == NULL)
		return (write(c->fd, buf, len));
	if ((n = conn_tls_write(c->tls, buf, len, &wantr)) == -1 && wantr)
		c->wwantr = 1;
	return (n);
}

/* The strings of a body of known length that came so far (a form's are
 * marked instead, form_mark). */
static void
in_prescan(struct hconn *c)
{
	if (c->state == CS_BODY && c->clen >= 0 && !c->form &&
	    c->in.len > c->hdrlen)
		prescan_feed(&c->pre, c->in.b + c->hdrlen,
		    c->in.len - c->hdrlen);
}

/*
 * The answer goes out, or is out: what the client sends is read and
 * dropped, for at most CONN_LINGER_BYTES once lingering.
 */
static void
read_drop(struct hconn *c)
{
	ssize_t	 n;

	n = io_read(c, rbuf, sizeof(rbuf));
	if (n == 0 || (n == -1 && errno != EAGAIN && errno != EINTR))
		conn_end(c);
	else if (n > 0 && c->state == CS_LINGER &&
	    (c->lingered += n) > CONN_LINGER_BYTES)
		conn_free(c);
}

/*
 * Where the next read goes: into the shared buffer when nothing is
 * pending, no more than a small request; of a long body, into the room
 * made for all of it; else after what c->in keeps.  0 with *dst and
 * *room; 1: do not read now (pipelined up to the limit: the read event
 * is paused); -1: the connection must end (out of memory).
 */
static int
read_place(struct hconn *c, char **dst, size_t *room)
{
	size_t	 total;
	int	 r;

	if (c->in.len == 0 && c->state == CS_HEADER) {
		*dst = rbuf;
		*room = CONN_FIRST;
	} else if (c->state == CS_BODY && c->clen >= 0) {
		/* all that is left of the body, in room made for it all */
		total = c->hdrlen + (size_t)c->clen;
		*room = total - c->in.len;
		if ((r = in_reserve(c, *room, 4096, total)) == -2) {
			conn_refuse(c, 503);
			return (1);
		}
		if (r == -1)
			return (-1);
		/* a form's, a piece at a time: marked while in the cache */
		if (c->form && *room > CONN_MARK_READ)
			*room = CONN_MARK_READ;
		*dst = c->in.b + c->in.len;
	} else {
		*room = c->state == CS_BODY ? CONN_READ : 4096;
		if ((r = in_reserve(c, *room, 4096, in_limit(c))) != 0)
			*room = c->in.cap - c->in.len;
		if (*room == 0 && c->state == CS_BUSY) {
			/* pipelined up to the limit, or to what the header
			 * budget lets it keep: read on after it */
			event_del(&c->rev);
			c->paused = 1;
			return (1);
		}
		if (*room == 0 && r == -2) {
			/* a header (or chunked body) the budget has no
			 * room to keep */
			conn_refuse(c, 503);
			return (1);
		}
		*dst = c->in.b + c->in.len;
	}
	return (0);
}

/*
 * The requests in the n bytes read into the shared buffer; what they
 * leave unfinished is copied into c->in, with room for all of a body of
 * known length.
 */
static void
read_shared(struct hconn *c, size_t n)
{
	size_t	 used, total;
	int	 r;

	c->inproc = 1;
	used = conn_consume(c, rbuf, n);
	c->inproc = 0;
	if (c->dead) {
		conn_free(c);
		return;
	}
	if (c->state == CS_CLOSING) {
		/* the rest is not read */
		if (conn_queued(c) == 0)
			conn_linger(c);
		return;
	}
	if (used == n)
		return;
	/* a body of known length: room for all of it */
	total = c->state == CS_BODY && c->clen >= 0 ?
	    c->hdrlen + (size_t)c->clen : n - used;
	r = in_reserve(c, total, total < 4096 ? 4096 : total, in_limit(c));
	if (r == -2 && c->state != CS_BUSY) {
		/* no room to keep it in the header budget: refused */
		conn_refuse(c, 503);
		if (c->state == CS_CLOSING && conn_queued(c) == 0)
			conn_linger(c);
		return;
	}
	if (r != 0) {
		/* out of memory, or input pipelined behind a running
		 * request that the budget has no room for */
		conn_end(c);
		return;
	}
	memcpy(c->in.b, rbuf + used, n - used);
	c->in.len = n - used;
	in_prescan(c);
	form_mark(c);
}

/*
 * The requests in what c->in keeps; what they used goes.  room: the
 * room the last read had (0: c->in was full).
 */
static void
read_kept(struct hconn *c, size_t room)
{
	size_t	 used;
	int	 taken;

	c->inproc = 1;
	used = conn_consume(c, c->in.b, c->in.len);
	c->inproc = 0;
	taken = c->taken;
	c->taken = 0;
	if (c->dead) {
		conn_free(c);
		return;
	}
	if (c->state == CS_CLOSING) {
		in_release(c);		/* the rest is not read */
		if (conn_queued(c) == 0)
			conn_linger(c);
		return;
	}
	if (taken) {
		/* the request has the buffer, and nothing followed it */
	} else if (used > 0) {
		/* state may have moved: CS_BODY keeps offsets from 0 */
		memmove(c->in.b, c->in.b + used, c->in.len - used);
		c->in.len -= used;
		in_fit(c);
	} else if (room == 0 && (c->state == CS_HEADER ||
	    c->state == CS_BODY)) {
		/* full and nothing taken: cannot happen, but never spin */
		log_warnx("%s: a full buffer made no progress", __func__);
		conn_end(c);
		return;
	}
	if (c->in.len == 0)
		in_release(c);
}

static void
conn_readcb(evutil_socket_t fd, short ev, void *arg)
{
	struct hconn	*c = arg;
	ssize_t		 n;
	size_t		 room;
	char		*dst;
	int		 r, pieces = 0;

	(void)fd;
	(void)ev;
	if (c->broken) {
		conn_end(c);
		return;
	}
	if (c->wwantr) {
		/* the write that waited for input goes on */
		c->wwantr = 0;
		if (conn_queued(c) > 0)
			event_add(&c->wev, NULL);
	}
	if (c->state == CS_CLOSING && conn_queued(c) == 0) {
		conn_linger(c);
		return;
	}
	if (c->state == CS_CLOSING || c->state == CS_LINGER) {
		read_drop(c);
		return;
	}
 again:
	if ((r = read_place(c, &dst, &room)) != 0) {
		if (r == -1)
			conn_end(c);
		return;
	}
	/*
	 * Full, reading a request: what is kept holds a whole request (its
	 * header is at most CONN_HEADER_MAX, its body fits in_limit), or
	 * it is refused.  Work it off before reading more.
	 */
	n = room == 0 ? -2 : io_read(c, dst, room);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			n = -2;		/* nothing new; process what is kept */
		else {
			conn_end(c);
			return;
		}
	}
	if (n == 0) {
		conn_end(c);
		return;
	}
	if (n > 0) {
		c->lastio = now_ms();
		if (dst == rbuf) {
			read_shared(c, (size_t)n);
			return;
		}
		c->in.len += n;
		in_prescan(c);
		form_mark(c);
		/* a form's next piece now, while the socket has one */
		if (c->state == CS_BODY && c->form && (size_t)n == room &&
		    c->in.len < c->hdrlen + (size_t)c->clen &&
		    ++pieces < CONN_MARK_PIECES)
			goto again;
	}
	if ((c->state == CS_HEADER || c->state == CS_BODY) && c->in.len > 0)
		read_kept(c, room);
}

/* Hand up a request that cannot be read, to be answered with status;
 * the connection closes after the answer. */
static void
conn_refuse(struct hconn *c, int status)
{
	c->state = CS_BUSY;
	wait_leave(c);
	c->req.minor = 1;
	c->req.keepalive = 0;
	c->req.head = 0;
	handler->refused(&c->req, status);
}

/* A body about to be read: whether it is a form to mark as it comes. */
static void
form_start(struct hconn *c, const struct h1_msg *m)
{
	const struct h1_header	*h;
	char			 ct[64];
	size_t			 n;

	multipart_marks_reset(&c->marks);
	c->form = 0;
	if (c->clen <= 0 || (h = h1_find(m, "Content-Type")) == NULL)
		return;
	/* the media type is at its start: its parameters may be cut off */
	n = h->valuelen < sizeof(ct) ? h->valuelen : sizeof(ct) - 1;
	memcpy(ct, h->value, n);
	ct[n] = '\0';
	c->form = multipart_is_form(ct);
}

/* The body bytes in c->in so far, marked if it is a form. */
static void
form_mark(struct hconn *c)
{
	size_t	 have;

	if (c->state != CS_BODY || !c->form || c->in.len <= c->hdrlen)
		return;
	have = c->in.len - c->hdrlen;
	if (have > (size_t)c->clen)
		have = c->clen;
	multipart_mark(&c->marks, c->in.b + c->hdrlen, have);
}

/* The marks of the body of the request being handed up; NULL if there
 * are none that cover it. */
const struct mmarks *
conn_body_marks(struct hconn *c)
{
	if (!c->form || c->marks.over)
		return (NULL);
	return (&c->marks);
}

/*
 * A request's header to the handler's access checks, before any of its
 * body is read: 0 when it passed (owner says whose share of the budget
 * its body takes), -1 when the handler answered it; then a body it
 * announced is not read, and the connection closes after the answer.
 */
static int
conn_admit(struct hconn *c, const struct h1_msg *m, char *owner,
    size_t size)
{
	int	 body = c->clen != 0;

	c->state = CS_BUSY;
	wait_leave(c);
	c->req.minor = m->minor;
	c->req.keepalive = m->keepalive && !body;
	c->req.head = m->methodlen == 4 && memcmp(m->method, "HEAD", 4) == 0;
	if (handler->header(&c->req, m, body, owner, size) == -1)
		return (-1);
	c->state = CS_HEADER;
	return (0);
}

/*
 * The header of a request, at the start of buf (len bytes): parsed into
 * m, let in by the handler's access checks, its body's length checked
 * and taken from the budget, and the connection made ready for its
 * body.  1: read the body; 0: the header is not all here; -1: the
 * request was refused and nothing more of buf is read; -2: it was
 * refused on its header alone and had no body, and what follows the
 * header (c->hdrlen bytes) is read on.
 */
static int
conn_header(struct hconn *c, const char *buf, size_t len, struct h1_msg *m)
{
	char	 owner[AGENCY_NAME_MAX + 16];
	size_t	 total;
	int	 r;

	r = h1_parse_request(buf, len, CONN_HEADER_MAX, m);
	if (r == 0)
		return (0);	/* wait for the rest */
	c->req.family = 0;	/* OpenAI's, until the handler knows */
	if (r < 0) {
		conn_refuse(c, -r);
		return (-1);
	}
	c->hdrlen = r;
	prescan_reset(&c->pre);
	c->clen = m->chunked ? -1 : m->content_length < 0 ? 0 :
	    m->content_length;
	/* who it is, before anything is done for its body */
	if (conn_admit(c, m, owner, sizeof(owner)) == -1)
		return (c->clen == 0 ? -2 : -1);
	if (m->chunked) {
		h1_chunked_init(&c->ch);
		c->rawpos = r;
		c->bodylen = 0;
	} else if (c->clen > max_body) {
		conn_refuse(c, 413);
		return (-1);
	}
	/* its share of the budget, kept until it is answered */
	if (conn_budget_take(&c->held, owner, c->clen < 0 ? max_body :
	    c->clen) == -1) {
		conn_refuse(c, 503);
		return (-1);
	}
	in_owner(c, owner);
	c->state = CS_BODY;
	c->since = now_ms();
	wait_enter(c);
	form_start(c, m);
	if (m->expect_continue && m->minor == 1) {
		/* only when the body is not all here */
		total = c->clen >= 0 ? c->hdrlen + (size_t)c->clen : 0;
		if (c->clen < 0 || len < total)
			(void)conn_write(c, "HTTP/1.1 100 Continue\r\n\r\n",
			    25);
	}
	return (1);
}

/*
 * More of a chunked body, decoded in place after its header (buf, len
 * bytes, starts with the request).  1: the body is whole, *total the
 * bytes of buf the request took; 0: more is to come, and what is kept
 * (*total bytes: the header and the body so far) is moved to the end of
 * buf, which the caller keeps; -1: the request was refused.
 */
static int
conn_chunked(struct hconn *c, char *buf, size_t len, size_t *total)
{
	size_t	 datalen;
	ssize_t	 n;
	int	 done;

	n = h1_chunked_decode(&c->ch, buf + c->rawpos, len - c->rawpos,
	    &datalen, &done);
	if (n < 0) {
		conn_refuse(c, 400);
		return (-1);
	}
	memmove(buf + c->hdrlen + c->bodylen, buf + c->rawpos, datalen);
	c->bodylen += datalen;
	c->rawpos += n;
	/*
	 * Over the limit with the chunk being read: known from its size
	 * line, before its data comes (while a size line is read, left is
	 * the size so far).
	 */
	if (c->bodylen + c->ch.left > (uint64_t)max_body) {
		conn_refuse(c, 413);
		return (-1);
	}
	if (!done) {
		*total = c->hdrlen + c->bodylen;
		memmove(buf + len - *total, buf, *total);
		c->rawpos = *total;
		return (0);
	}
	*total = c->rawpos;
	return (1);
}

/*
 * Dispatch the requests that are complete in buf; returns the bytes
 * used.  A request in CS_BODY keeps its bytes at the start of buf (the
 * caller keeps them in c->in), with a chunked body decoded in place
 * after the header.
 */
static size_t
conn_consume(struct hconn *c, char *buf, size_t len)
{
	struct h1_msg	 m;
	size_t		 used = 0, datalen, total;
	int		 r, parsed;
	char		*body;

	while (used < len && (c->state == CS_HEADER || c->state == CS_BODY)) {
		parsed = 0;
		if (c->state == CS_HEADER) {
			parsed = 1;
			r = conn_header(c, buf + used, len - used, &m);
			if (r == 0)
				return (used);
			if (r == -1)
				return (len);
			if (r == -2) {
				/* answered: what follows is the next */
				used += c->hdrlen;
				if (c->dead)
					return (len);
				continue;
			}
		}
		/* CS_BODY: offsets from buf + used */
		if (c->clen >= 0) {
			total = c->hdrlen + (size_t)c->clen;
			if (len - used < total)
				return (used);
			datalen = c->clen;
		} else {
			r = conn_chunked(c, buf + used, len - used, &total);
			if (r == 0)
				return (len - total);
			if (r == -1)
				return (len);
			datalen = c->bodylen;
		}
		body = buf + used + c->hdrlen;
		/* The header again, if it was parsed from another read. */
		if (!parsed && h1_parse_request(buf + used, c->hdrlen,
		    CONN_HEADER_MAX, &m) != (int)c->hdrlen) {
			conn_refuse(c, 400);
			return (len);
		}
		c->state = CS_BUSY;
		wait_leave(c);
		c->req.minor = m.minor;
		c->req.keepalive = m.keepalive;
		c->req.head = m.methodlen == 4 &&
		    memcmp(m.method, "HEAD", 4) == 0;
		used += total;
		/* the request's owner may take c->in if it is all its own */
		c->reqend = buf == c->in.b && used == c->in.len ? used : 0;
		/* the notes are of c->in's bytes */
		c->req.pre = buf == c->in.b && c->clen >= 0 ? &c->pre : NULL;
		handler->request(&c->req, &m, body, datalen);
		c->req.pre = NULL;
		prescan_reset(&c->pre);
		c->reqend = 0;
		if (c->dead || c->taken)
			return (len);
	}
	return (used);
}

/*
 * For the owner of the request being handed up: the buffer its header
 * and body are in, the owner's from now on (to free); the body stays
 * where it is.  NULL when the request is not alone in a buffer of the
 * connection's (it came in one read, or with more after it): then the
 * owner copies what it keeps.
 */
char *
conn_take_input(struct hconn *c)
{
	char	*b;

	if (c->reqend == 0 || c->taken)
		return (NULL);
	b = c->in.b;
	c->in.b = NULL;
	c->in.len = c->in.cap = 0;
	(void)in_charge(c, 0, 0);
	c->taken = 1;
	return (b);
}

/*
 * Write what the socket takes now, keep the rest.  Returns -1 if the
 * connection is failing (the owner hears of it through gone).
 */
int
conn_write(struct hconn *c, const void *p, size_t len)
{
	ssize_t	 n = 0;

	if (c->dead || c->broken)
		return (-1);
	if (c->out.len == c->outoff) {
		c->outoff = c->out.len = 0;
		n = io_write(c, p, len);
		if (n == -1) {
			if (errno != EAGAIN && errno != EINTR) {
				c->broken = 1;
				/* end it from its own callback */
				event_active(&c->rev, EV_READ, 1);
				return (-1);
			}
			n = 0;
		}
		if ((size_t)n == len)
			return (0);
	}
	len -= n;
	if (c->out.len + len > c->out.cap && c->outoff > 0) {
		memmove(c->out.b, c->out.b + c->outoff,
		    c->out.len - c->outoff);
		c->out.len -= c->outoff;
		c->outoff = 0;
	}
	if (buf_add(&c->out, (const char *)p + n, len, 4096) == -1) {
		c->broken = 1;
		event_active(&c->rev, EV_READ, 1);
		return (-1);
	}
	if (!c->wwantr)
		event_add(&c->wev, NULL);
	return (0);
}

size_t
conn_queued(const struct hconn *c)
{
	return (c->out.len - c->outoff);
}

static void
conn_writecb(evutil_socket_t fd, short ev, void *arg)
{
	struct hconn	*c = arg;
	ssize_t		 n;

	(void)fd;
	(void)ev;
	if (c->rwantw) {
		/* the read that waited for this goes on */
		c->rwantw = 0;
		event_active(&c->rev, EV_READ, 1);
		if (conn_queued(c) == 0) {
			event_del(&c->wev);
			return;
		}
	}
	n = io_write(c, c->out.b + c->outoff, c->out.len - c->outoff);
	if (n == -1) {
		if (c->wwantr)
			event_del(&c->wev);	/* the read event resumes it */
		if (errno == EAGAIN || errno == EINTR)
			return;
		conn_end(c);
		return;
	}
	c->lastio = now_ms();
	c->outoff += n;
	if (c->outoff < c->out.len)
		return;
	event_del(&c->wev);
	c->outoff = 0;
	if (c->out.cap > 65536)
		let_go += c->out.cap;
	buf_release(&c->out, 65536);
	if (c->state == CS_CLOSING) {
		conn_linger(c);
		return;
	}
	if (c->drained != NULL)
		c->drained(c->arg);
}

/* The owner of the running request: told when the client goes, or when
 * its queued output has gone out. */
void
conn_set_owner(struct hconn *c, void (*gone)(void *),
    void (*drained)(void *), void *arg)
{
	c->gone = gone;
	c->drained = drained;
	c->arg = arg;
}

/* The answer to the running request is written (or queued). */
void
conn_done(struct hconn *c, int keepalive)
{
	c->gone = NULL;
	c->drained = NULL;
	c->arg = NULL;
	if (c->dead)
		return;
	conn_budget_give(&c->held);
	/* what c->in keeps is the header budget's now, its client's (as
	 * much as the connection read past its request, at most
	 * CONN_READ); it is fitted once conn_consume leaves it */
	if (!c->inproc)
		in_fit(c);
	in_owner(c, NULL);
	if (!keepalive || !c->req.keepalive || c->broken) {
		c->state = CS_CLOSING;
		/* what it sent after this is dropped; not while
		 * conn_consume may still be reading it (conn_readcb
		 * drops it then) */
		if (c->in.len > 0 && !c->inproc)
			in_release(c);
		/* the answer is out: linger, from conn_readcb */
		if (c->broken && c->inproc)
			c->dead = 1;
		else if ((conn_queued(c) == 0 || c->broken) && !c->inproc)
			event_active(&c->rev, EV_READ, 1);
		return;
	}
	c->state = CS_HEADER;
	c->since = now_ms();
	wait_enter(c);
	if (c->paused) {
		c->paused = 0;
		event_add(&c->rev, NULL);
		/* what libtls may hold has no event of its own */
		if (c->tls != NULL && !c->inproc)
			event_active(&c->rev, EV_READ, 1);
	}
	/* what was pipelined meanwhile, unless conn_consume goes on */
	if (c->in.len > 0 && !c->inproc)
		event_active(&c->rev, EV_READ, 1);
}

/*
 * The last answer is out: shut down writing, so that the client sees
 * its end, and read until the client closes (bounded in time by the
 * sweep and in bytes by conn_readcb), so that what it still sends does
 * not make the close a reset.
 */
static void
conn_linger(struct hconn *c)
{
	/* TLS's own end first, if the socket takes it now */
	if (c->tls != NULL && !c->eof)
		conn_tls_close(c->tls);
	if (c->eof || shutdown(c->fd, SHUT_WR) == -1) {
		conn_free(c);
		return;
	}
	c->state = CS_LINGER;
	c->since = now_ms();
	c->lingered = 0;
	wait_enter(c);
	if (c->paused) {
		c->paused = 0;
		event_add(&c->rev, NULL);
	}
}

/* End the connection now, mid-answer: the owner is not called. */
void
conn_abort(struct hconn *c)
{
	c->gone = NULL;
	c->drained = NULL;
	c->arg = NULL;
	if (c->inproc) {
		c->dead = 1;
		return;
	}
	conn_free(c);
}

/* The client left, a read or write failed, or a closing connection is
 * done: tell the owner, then free. */
static void
conn_end(struct hconn *c)
{
	void	(*gone)(void *) = c->gone;
	void	*arg = c->arg;

	if (c->state == CS_CLOSING && c->gone == NULL && !c->broken &&
	    conn_queued(c) > 0) {
		/* EOF while the answer goes out: write on, read no more */
		event_del(&c->rev);
		c->paused = 1;
		c->eof = 1;
		return;
	}
	c->gone = NULL;
	c->drained = NULL;
	c->arg = NULL;
	if (gone != NULL) {
		c->inproc = 1;
		gone(arg);
		c->inproc = 0;
	}
	conn_free(c);
}

static void
conn_free(struct hconn *c)
{
	wait_leave(c);
	conn_budget_give(&c->held);
	event_del(&c->rev);
	event_del(&c->wev);
	conn_tls_free(c->tls);
	close(c->fd);
	free(c->req.peer.groups);
	TAILQ_REMOVE(&conns, c, entry);
	stats.open--;
	if (cap_paused)
		cap_check();
	in_release(c);
	let_go += c->out.cap;
	buf_release(&c->out, 0);
	prescan_clear(&c->pre);
	multipart_marks_free(&c->marks);
	let_go += sizeof(*c);
	free(c);
}

/*
 * The deadlines, from a timer: a request's header within header_timeout
 * of the accept or of the end of the previous answer (or, with no header
 * timeout, PROXY_IDLE_TIMEOUT of quiet); its body within body_timeout of
 * the end of its header (408); no pause in a body, nor in output, longer
 * than PROXY_IDLE_TIMEOUT; a lingering close within CONN_LINGER_MS.
 */
static void
conn_sweep(evutil_socket_t fd, short ev, void *arg)
{
	struct hconn	*c, *next;
	int64_t		 now = now_ms(), idle = PROXY_IDLE_TIMEOUT * 1000;
	uint64_t	 n = 0, nb = 0;

	(void)fd;
	(void)ev;
	(void)arg;
	for (c = TAILQ_FIRST(&conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		switch (c->state) {
		case CS_HEADER:
			if (header_timeout > 0 ?
			    now - c->since < header_timeout :
			    now - c->lastio < idle)
				continue;
			stats.timed_out++;
			n++;
			break;
		case CS_BODY:
			if (now - c->lastio < idle &&
			    now - c->since < body_timeout)
				continue;
			/* answered, and closed when that is out */
			stats.body_timed_out++;
			nb++;
			conn_refuse(c, 408);
			continue;
		case CS_LINGER:
			if (now - c->since < CONN_LINGER_MS)
				continue;
			conn_free(c);
			continue;
		case CS_BUSY:
		case CS_CLOSING:
			if (conn_queued(c) == 0 || now - c->lastio < idle)
				continue;
			break;
		}
		/* Only its own: the owner may end other requests, never
		 * other connections. */
		c->broken = 1;
		conn_end(c);
	}
	if (n > 0)
		log_debug("closed %llu connections without a request header "
		    "in %lld ms", (unsigned long long)n,
		    (long long)header_timeout);
	if (nb > 0)
		log_debug("refused %llu request bodies not read in %lld ms",
		    (unsigned long long)nb, (long long)body_timeout);
	conn_trim();
}

/*
 * Once enough input, output and connections were let go, the memory
 * they had goes back to the system: glibc's malloc keeps what was freed
 * below its top, so that the memory of many clients that held headers
 * and left would stay the proxy's.
 */
static void
conn_trim(void)
{
	if ((let_go += conn_budget_given()) < CONN_TRIM_BYTES)
		return;
	let_go = 0;
#ifdef __GLIBC__
	(void)malloc_trim(0);
#endif
}

/* Whether the listeners stop accepting: out of fds, or at the cap. */
static int
accept_stopped(void)
{
	return (accept_paused || cap_paused);
}

/* Each listener accepting, or not, as accept_stopped says. */
static void
listeners_update(void)
{
	struct lsn	*l;

	TAILQ_FOREACH(l, &lsns, entry) {
		if (accept_stopped())
			evconnlistener_disable(l->lev);
		else
			evconnlistener_enable(l->lev);
	}
}

/*
 * libevent calls this for an accept error it does not retry by itself.
 * Out of fds, the pending connection stays in the backlog and the
 * listener would be readable again at once: stop accepting for a while
 * rather than spin.
 */
static void
accept_errorcb(struct evconnlistener *lev, void *arg)
{
	struct timeval	 tv = { PROXY_ACCEPT_PAUSE, 0 };
	int		 err = EVUTIL_SOCKET_ERROR();

	(void)lev;
	(void)arg;
	switch (err) {
	case EMFILE:
	case ENFILE:
	case ENOBUFS:
	case ENOMEM:
		break;
	default:
		log_warnx("accept: %s", strerror(err));
		return;
	}
	if (accept_paused)
		return;
	accept_paused = 1;
	stats.accept_pauses++;
	log_warnx("accept: %s: not accepting for %d s (%llu connections "
	    "open)", strerror(err), PROXY_ACCEPT_PAUSE,
	    (unsigned long long)stats.open);
	listeners_update();
	evtimer_add(resume_ev, &tv);
}

static void
conn_resume(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	accept_paused = 0;
	listeners_update();
}

/*
 * Accept, or not, at the cap: under it, or with a connection that has
 * waited long enough to give way to the next one, accept; otherwise stop
 * accepting, and look again when the oldest waiting has waited long
 * enough (the timer), when one closes (conn_free) or when one starts to
 * wait where none did (wait_enter).
 */
static void
cap_check(void)
{
	struct hconn	*c;
	struct timeval	 tv;
	int64_t		 left = 0;
	int		 pause;

	c = evict_first(&left);
	pause = stats.open >= stats.max && (c == NULL || left > 0);
	if (pause && c != NULL && !evtimer_pending(cap_ev, NULL)) {
		tv.tv_sec = left / 1000;
		tv.tv_usec = (left % 1000) * 1000;
		evtimer_add(cap_ev, &tv);
	}
	if (pause == cap_paused)
		return;
	cap_paused = pause;
	if (pause)
		stats.cap_pauses++;
	else
		evtimer_del(cap_ev);
	listeners_update();
}

static void
cap_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	cap_check();
}

void
conn_get_stats(struct conn_stats *cs)
{
	*cs = stats;
	conn_budget_stats(cs);
}

/*
 * The kernel's send buffer of a connection, fixed at bytes: a stream
 * that stays open (events.c) then holds a bounded amount in the kernel
 * for a client that stops reading, and its queue here shows it soon.
 */
void
conn_sndbuf(struct hconn *c, int bytes)
{
	if (setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &bytes,
	    sizeof(bytes)) == -1)
		log_warn("%s: SO_SNDBUF", __func__);
}
