/*
 * The front door's client connections: counted for the metrics, capped,
 * given a deadline for each request's header, and kept from spinning
 * when accept runs out of file descriptors.
 *
 * libevent 2.1's evhttp tells nobody when a connection comes or goes.
 * Two public hooks are enough:
 *
 * - evhttp_set_bevcb: evhttp asks us for each accepted connection's
 *   bufferevent, then (in the same call, before it returns to the loop)
 *   makes the evhttp_connection and sets the bufferevent's callbacks with
 *   that connection as their argument.  We note the bufferevent, take a
 *   reference on it, and activate an event that runs later in the same
 *   loop turn ("adopt"): there bufferevent_getcb gives us the
 *   evhttp_connection.  Our reference keeps the bufferevent's memory
 *   valid in between, even when evhttp gave up the connection at once
 *   (its callbacks are then NULL, and we only drop the reference).  The
 *   bufferevent closes its socket when freed (BEV_OPT_CLOSE_ON_FREE), so
 *   that socket stays open, and its number unused, for as long as we
 *   hold the reference.
 * - evhttp_connection_set_closecb: evhttp calls it from
 *   evhttp_connection_free, whichever way a server connection ends, while
 *   the connection is still whole.  Ours is the only close callback on
 *   client connections (forward.c sets its own through
 *   conn_set_closecb); it forgets the connection there, so nothing here
 *   ever points to a freed connection.
 *
 * The header deadline: a connection must send the end of a request's
 * header within header_timeout of being accepted, or of the end of its
 * previous answer (evhttp_request_set_on_complete_cb).  evhttp has no
 * hook at the end of a header, so a callback on the bufferevent's input
 * buffer looks at each piece as it arrives for the empty line that ends
 * it (a LF, an optional CR, a LF: two bytes kept across pieces, since
 * evhttp drains each header line as it parses it).  A sweep closes the
 * late ones with evhttp_connection_free, from a timer of ours, never
 * from inside one of the connection's own callbacks.  The body is not
 * under this deadline: the idle timeout (PROXY_IDLE_TIMEOUT) and
 * max_body bound it.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/tree.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>

#include "log.h"
#include "proxy.h"

/* libbsd's <sys/tree.h> marks its static functions so; glibc has none */
#ifndef __unused
#define __unused	__attribute__((__unused__))
#endif

struct conn {
	TAILQ_ENTRY(conn)		 entry;		/* pending or open */
	RB_ENTRY(conn)			 node;		/* open, by evcon */
	struct bufferevent		*bev;
	struct evhttp_connection	*evcon;		/* NULL: pending */
	struct evbuffer_cb_entry	*incb;
	int64_t				 since;		/* ms, the deadline's */
	int				 hdone;		/* header is in */
	char				 tail[2];	/* last bytes seen */
	size_t				 ntail;
	void				(*closecb)(struct evhttp_connection *,
					    void *);
	void				*closearg;
};
TAILQ_HEAD(conns, conn);
RB_HEAD(conntree, conn);

static int	 conn_cmp(struct conn *, struct conn *);
RB_PROTOTYPE_STATIC(conntree, conn, node, conn_cmp);
RB_GENERATE_STATIC(conntree, conn, node, conn_cmp);

static struct conns	 pending = TAILQ_HEAD_INITIALIZER(pending);
static struct conns	 open_conns = TAILQ_HEAD_INITIALIZER(open_conns);
static struct conntree	 tree = RB_INITIALIZER(&tree);
static struct conn_stats stats;
static struct event	*adopt_ev;
static struct event	*sweep_ev;
static struct event	*resume_ev;
static int64_t		 header_timeout;	/* ms; 0: none */
static uint64_t		 auto_max;		/* from the fd limit */
static int		 paused;

static struct bufferevent *conn_bevcb(struct event_base *, void *);
static void	 conn_adopt(evutil_socket_t, short, void *);
static void	 conn_closecb(struct evhttp_connection *, void *);
static void	 conn_inputcb(struct evbuffer *,
		    const struct evbuffer_cb_info *, void *);
static void	 conn_done(struct evhttp_request *, void *);
static void	 conn_sweep(evutil_socket_t, short, void *);
static void	 conn_resume(evutil_socket_t, short, void *);
static void	 accept_errorcb(struct evconnlistener *, void *);

static int
conn_cmp(struct conn *a, struct conn *b)
{
	uintptr_t	 x = (uintptr_t)a->evcon, y = (uintptr_t)b->evcon;

	return (x < y ? -1 : x > y);
}

/*
 * Before the sandbox: raise the fd limit to its hard limit, and take the
 * default cap from it, half of what is left after a reserve, so that
 * each client connection can have its upstream connection too.
 */
void
conn_init(void)
{
	struct rlimit	 rl;
	rlim_t		 n = 1024;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_cur < rl.rlim_max) {
			rl.rlim_cur = rl.rlim_max;
			if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
				log_warn("%s: setrlimit", __func__);
			(void)getrlimit(RLIMIT_NOFILE, &rl);
		}
		n = rl.rlim_cur;
	}
	if (n > 1000000)
		n = 1000000;
	/*
	 * Idle keep-alive clients hold no upstream connection, busy ones
	 * one each: three quarters of the fds for clients lets many idle
	 * ones wait while a quarter of them could be busy at once; past
	 * that, accept pauses rather than spins.
	 */
	auto_max = n > PROXY_FD_RESERVE + 4 ?
	    (n - PROXY_FD_RESERVE) / 4 * 3 : 1;
	stats.max = auto_max;

	evhttp_set_bevcb(px->http, conn_bevcb, NULL);
	if ((adopt_ev = event_new(px->base, -1, 0, conn_adopt, NULL)) ==
	    NULL ||
	    (sweep_ev = event_new(px->base, -1, EV_PERSIST, conn_sweep,
	    NULL)) == NULL ||
	    (resume_ev = evtimer_new(px->base, conn_resume, NULL)) == NULL)
		fatalx("%s: event_new", __func__);
}

/* A new or reloaded configuration: the cap and the deadline. */
void
conn_configure(const struct pconf *conf)
{
	struct timeval	 tv;
	int64_t		 ms;

	stats.max = conf->max_connections > 0 ?
	    (uint64_t)conf->max_connections : auto_max;
	header_timeout = conf->header_timeout;
	evtimer_del(sweep_ev);
	if (header_timeout <= 0)
		return;
	/* late by at most a quarter of the deadline, or a second */
	ms = header_timeout / 4;
	if (ms < 50)
		ms = 50;
	if (ms > 1000)
		ms = 1000;
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(sweep_ev, &tv);
}

/* evhttp's accept: a bufferevent for the new connection, adopted later
 * in this loop turn. */
static struct bufferevent *
conn_bevcb(struct event_base *base, void *arg)
{
	struct conn		*c;
	struct bufferevent	*bev;

	(void)arg;
	if ((bev = bufferevent_socket_new(base, -1,
	    BEV_OPT_CLOSE_ON_FREE)) == NULL)
		return (NULL);	/* evhttp makes its own: not counted */
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		bufferevent_free(bev);
		return (NULL);
	}
	c->bev = bev;
	bufferevent_incref(bev);	/* dropped by conn_adopt */
	TAILQ_INSERT_TAIL(&pending, c, entry);
	event_active(adopt_ev, EV_TIMEOUT, 1);
	return (bev);
}

static void
conn_adopt(evutil_socket_t fd, short ev, void *arg)
{
	struct conn			*c;
	struct evhttp_connection	*evcon;
	bufferevent_data_cb		 readcb;
	void				*cbarg;

	(void)fd;
	(void)ev;
	(void)arg;
	while ((c = TAILQ_FIRST(&pending)) != NULL) {
		TAILQ_REMOVE(&pending, c, entry);
		bufferevent_getcb(c->bev, &readcb, NULL, NULL, &cbarg);
		if (readcb == NULL || cbarg == NULL) {
			/* evhttp let it go already: ours was the last
			 * reference, which closes the socket */
			bufferevent_decref(c->bev);
			free(c);
			continue;
		}
		evcon = cbarg;
		stats.accepted++;
		if (stats.open >= stats.max) {
			stats.refused++;
			bufferevent_decref(c->bev);
			free(c);
			evhttp_connection_free(evcon);
			continue;
		}
		c->evcon = evcon;
		c->since = now_ms();
		if ((c->incb = evbuffer_add_cb(bufferevent_get_input(c->bev),
		    conn_inputcb, c)) == NULL) {
			bufferevent_decref(c->bev);
			free(c);
			evhttp_connection_free(evcon);
			continue;
		}
		evhttp_connection_set_closecb(evcon, conn_closecb, c);
		bufferevent_decref(c->bev);	/* evcon holds it */
		RB_INSERT(conntree, &tree, c);
		TAILQ_INSERT_TAIL(&open_conns, c, entry);
		stats.open++;
	}
}

/* From evhttp_connection_free, the connection still whole. */
static void
conn_closecb(struct evhttp_connection *evcon, void *arg)
{
	struct conn	*c = arg;

	if (c->closecb != NULL)
		c->closecb(evcon, c->closearg);
	evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->incb);
	RB_REMOVE(conntree, &tree, c);
	TAILQ_REMOVE(&open_conns, c, entry);
	stats.open--;
	free(c);
}

static struct conn *
conn_find(struct evhttp_connection *evcon)
{
	struct conn	 key;

	if (evcon == NULL)
		return (NULL);
	key.evcon = evcon;
	return (RB_FIND(conntree, &tree, &key));
}

/* forward.c's close callback of a client connection (NULL: none). */
void
conn_set_closecb(struct evhttp_connection *evcon,
    void (*cb)(struct evhttp_connection *, void *), void *arg)
{
	struct conn	*c;

	if ((c = conn_find(evcon)) == NULL) {
		/* not ours (no bufferevent of ours): evhttp's own hook */
		evhttp_connection_set_closecb(evcon, cb, arg);
		return;
	}
	c->closecb = cb;
	c->closearg = arg;
}

/* Look for the empty line that ends a header: LF [CR] LF. */
static int
header_end(struct conn *c, const char *p, size_t len)
{
	char	 w[4];
	size_t	 i, n;

	/* across the previous piece */
	memcpy(w, c->tail, c->ntail);
	n = c->ntail;
	for (i = 0; i < len && n < sizeof(w); i++)
		w[n++] = p[i];
	if (memmem(w, n, "\n\n", 2) != NULL ||
	    memmem(w, n, "\n\r\n", 3) != NULL)
		return (1);
	if (memmem(p, len, "\n\n", 2) != NULL ||
	    memmem(p, len, "\n\r\n", 3) != NULL)
		return (1);
	/* the last two bytes of all seen, for the next piece */
	for (i = len > 2 ? len - 2 : 0; i < len; i++) {
		if (c->ntail == sizeof(c->tail)) {
			c->tail[0] = c->tail[1];
			c->ntail = 1;
		}
		c->tail[c->ntail++] = p[i];
	}
	return (0);
}

/* Look through len bytes of buf from off. */
static void
header_scan(struct conn *c, struct evbuffer *buf, size_t off, size_t len)
{
	struct evbuffer_ptr		 ptr;
	struct evbuffer_iovec		 v[8];
	int				 i, n;
	size_t				 take;

	while (len > 0 && !c->hdone) {
		if (evbuffer_ptr_set(buf, &ptr, off, EVBUFFER_PTR_SET) == -1)
			return;
		if ((n = evbuffer_peek(buf, len, &ptr, v, 8)) <= 0)
			return;
		if (n > 8)
			n = 8;
		for (i = 0; i < n && len > 0 && !c->hdone; i++) {
			take = v[i].iov_len < len ? v[i].iov_len : len;
			if (header_end(c, v[i].iov_base, take))
				c->hdone = 1;
			off += take;
			len -= take;
		}
	}
}

static void
conn_inputcb(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct conn	*c = arg;
	size_t		 len;

	if (c->hdone || info->n_added == 0)
		return;
	len = evbuffer_get_length(buf);
	if (info->n_added > len)
		return;
	header_scan(c, buf, len - info->n_added, info->n_added);
}

/* At the start of each request evhttp hands us (http_cb). */
void
conn_request(struct evhttp_request *req)
{
	struct conn	*c;

	if ((c = conn_find(evhttp_request_get_connection(req))) == NULL)
		return;
	c->hdone = 1;	/* and the body too */
	evhttp_request_set_on_complete_cb(req, conn_done, c);
}

/* The answer is out: the next request's header is due from now.  What
 * a client pipelined is in the input buffer already. */
static void
conn_done(struct evhttp_request *req, void *arg)
{
	struct conn	*c = arg;
	struct evbuffer	*in = bufferevent_get_input(c->bev);

	(void)req;
	c->hdone = 0;
	c->ntail = 0;
	c->since = now_ms();
	header_scan(c, in, 0, evbuffer_get_length(in));
}

static void
conn_sweep(evutil_socket_t fd, short ev, void *arg)
{
	struct conn	*c, *next;
	int64_t		 now = now_ms();
	uint64_t	 n = 0;

	(void)fd;
	(void)ev;
	(void)arg;
	if (header_timeout <= 0)
		return;
	for (c = TAILQ_FIRST(&open_conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->hdone || now - c->since < header_timeout)
			continue;
		/* Reading a header, so no request of ours is on it; the
		 * close callback frees c (and may not touch next: it only
		 * forgets its own). */
		stats.timed_out++;
		n++;
		evhttp_connection_free(c->evcon);
	}
	if (n > 0)
		log_debug("closed %llu connections without a request header "
		    "in %lld ms", (unsigned long long)n,
		    (long long)header_timeout);
}

/* Note a new listener, to pause it when accept runs out of fds. */
void
conn_listening(struct evhttp_bound_socket *bound)
{
	struct evconnlistener	*lev;

	if ((lev = evhttp_bound_socket_get_listener(bound)) != NULL)
		evconnlistener_set_error_cb(lev, accept_errorcb);
}

static void
listeners_enable(int on)
{
	struct plisten		*l;
	struct evconnlistener	*lev;

	if (px->conf == NULL)
		return;
	TAILQ_FOREACH(l, &px->conf->listens, entry) {
		if (l->bound == NULL ||
		    (lev = evhttp_bound_socket_get_listener(l->bound)) == NULL)
			continue;
		if (on)
			evconnlistener_enable(lev);
		else
			evconnlistener_disable(lev);
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
	if (paused)
		return;
	paused = 1;
	stats.accept_pauses++;
	log_warnx("accept: %s: not accepting for %d s (%llu connections "
	    "open)", strerror(err), PROXY_ACCEPT_PAUSE,
	    (unsigned long long)stats.open);
	listeners_enable(0);
	evtimer_add(resume_ev, &tv);
}

static void
conn_resume(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	paused = 0;
	listeners_enable(1);
}

void
conn_get_stats(struct conn_stats *cs)
{
	*cs = stats;
}
