/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The control socket: agency-ctl's way in.  Every connection has its own
 * buffers; a client that sends something malformed or unknown is
 * dropped and logged.  A restricted socket answers status alone.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agencyd.h"
#include "control.h"
#include "log.h"

struct ctl_sock {
	char		 path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int		 fd;
	int		 restricted;
	struct event	 ev;
	struct event	 pause;
};

struct ctl_conn {
	TAILQ_ENTRY(ctl_conn)	 entry;
	struct imsgev		 iev;
	uint32_t		 id;
	int			 restricted;
};

static TAILQ_HEAD(, ctl_conn)	ctl_conns = TAILQ_HEAD_INITIALIZER(ctl_conns);
static struct ctl_sock		ctl_main = { .fd = -1 };
static struct ctl_sock		ctl_restricted = { .fd = -1 };
static uint32_t			ctl_nextid = 1;
static unsigned int		ctl_nconns;

static void	control_accept(int, short, void *);
static void	control_dispatch(int, short, void *);
static void	control_drop(struct ctl_conn *);

static int
control_addr(const char *path, struct sockaddr_un *sun)
{
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlcpy(sun->sun_path, path, sizeof(sun->sun_path)) >=
	    sizeof(sun->sun_path)) {
		log_warnx("control socket path too long: %s", path);
		return (-1);
	}
	return (0);
}

/* Refuse to start when another agencyd answers on path; remove a stale
 * socket that nobody answers on. */
int
control_check(const char *path)
{
	struct sockaddr_un	sun;
	int			s, r;

	if (control_addr(path, &sun) == -1)
		return (-1);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		log_warn("%s: socket", __func__);
		return (-1);
	}
	r = connect(s, (struct sockaddr *)&sun, sizeof(sun));
	close(s);
	if (r == 0) {
		log_warnx("another agencyd is running on %s", path);
		return (-1);
	}
	if (errno == ECONNREFUSED) {
		log_info("removing the stale control socket %s", path);
		if (unlink(path) == -1) {
			log_warn("%s: unlink %s", __func__, path);
			return (-1);
		}
	}
	return (0);
}

static int
control_listen(struct ctl_sock *cs, const char *path, int restricted)
{
	struct sockaddr_un	sun;
	mode_t			old;
	int			s;

	if (control_addr(path, &sun) == -1)
		return (-1);
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		log_warn("%s: socket", __func__);
		return (-1);
	}
	if (unlink(path) == -1 && errno != ENOENT) {
		log_warn("%s: unlink %s", __func__, path);
		close(s);
		return (-1);
	}
	old = umask(restricted ? 0111 : 0117);
	if (bind(s, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		log_warn("%s: bind %s", __func__, path);
		umask(old);
		close(s);
		return (-1);
	}
	umask(old);
	if (chmod(path, restricted ? 0666 : 0660) == -1 ||
	    listen(s, CONTROL_BACKLOG) == -1) {
		log_warn("%s: %s", __func__, path);
		(void)unlink(path);
		close(s);
		return (-1);
	}
	(void)strlcpy(cs->path, path, sizeof(cs->path));
	cs->fd = s;
	cs->restricted = restricted;
	event_set(&cs->ev, s, EV_READ | EV_PERSIST, control_accept, cs);
	event_add(&cs->ev, NULL);
	evtimer_set(&cs->pause, control_accept, cs);
	return (0);
}

int
control_init(struct agencyd *d, const char *path, const char *rpath)
{
	(void)d;
	if (control_listen(&ctl_main, path, 0) == -1)
		return (-1);
	/* both sockets were checked by main, in the foreground */
	if (rpath != NULL && rpath[0] != '\0' &&
	    control_listen(&ctl_restricted, rpath, 1) == -1)
		return (-1);
	return (0);
}

static void
control_sock_close(struct ctl_sock *cs)
{
	if (cs->fd == -1)
		return;
	event_del(&cs->ev);
	evtimer_del(&cs->pause);
	close(cs->fd);
	(void)unlink(cs->path);
	cs->fd = -1;
}

/* Stop accepting; connections already open may finish. */
void
control_close(struct agencyd *d)
{
	(void)d;
	control_sock_close(&ctl_main);
	control_sock_close(&ctl_restricted);
}

void
control_cleanup(struct agencyd *d)
{
	struct ctl_conn	*c;

	control_close(d);
	while ((c = TAILQ_FIRST(&ctl_conns)) != NULL)
		control_drop(c);
}

static void
control_accept(int fd, short event, void *arg)
{
	struct ctl_sock		*cs = arg;
	struct ctl_conn		*c;
	struct timeval		 tv = { 1, 0 };
	int			 s;

	(void)fd;
	if (event & EV_TIMEOUT) {
		event_add(&cs->ev, NULL);	/* the pause is over */
		return;
	}
	if ((s = accept4(cs->fd, NULL, NULL, SOCK_NONBLOCK |
	    SOCK_CLOEXEC)) == -1) {
		if (errno == EMFILE || errno == ENFILE) {
			/* Out of fds: wait a second instead of spinning. */
			log_warn("%s: accept", __func__);
			event_del(&cs->ev);
			evtimer_add(&cs->pause, &tv);
		} else if (errno != EAGAIN && errno != EINTR &&
		    errno != ECONNABORTED)
			log_warn("%s: accept", __func__);
		return;
	}
	if (ctl_nconns >= CONTROL_MAX_CONNS) {
		log_warnx("%s: too many control connections", __func__);
		close(s);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL) {
		log_warn("%s", __func__);
		close(s);
		return;
	}
	c->id = ctl_nextid++;
	if (ctl_nextid == 0)
		ctl_nextid = 1;
	c->restricted = cs->restricted;
	imsgev_init(&c->iev, s, control_dispatch, c);
	imsgev_add(&c->iev);
	TAILQ_INSERT_TAIL(&ctl_conns, c, entry);
	ctl_nconns++;
}

static struct ctl_conn *
control_byid(uint32_t id)
{
	struct ctl_conn	*c;

	TAILQ_FOREACH(c, &ctl_conns, entry)
		if (c->id == id)
			return (c);
	return (NULL);
}

static void
control_drop(struct ctl_conn *c)
{
	TAILQ_REMOVE(&ctl_conns, c, entry);
	imsgev_clear(&c->iev);
	close(c->iev.ibuf.fd);
	free(c);
	ctl_nconns--;
}

static void
control_result(struct ctl_conn *c, uint32_t type, const char *fmt, ...)
    __attribute__((__format__ (printf, 3, 4)));

static void
control_result(struct ctl_conn *c, uint32_t type, const char *fmt, ...)
{
	struct proto_ctl_result	r;
	va_list			ap;

	memset(&r, 0, sizeof(r));
	va_start(ap, fmt);
	(void)vsnprintf(r.message, sizeof(r.message), fmt, ap);
	va_end(ap);
	imsgev_compose(&c->iev, type, 0, 0, -1, &r, sizeof(r));
}

static void
control_end(struct ctl_conn *c)
{
	imsgev_compose(&c->iev, IMSG_CTL_END, 0, 0, -1, NULL, 0);
}

/* A line already logged, for the client alone. */
void
control_line(struct ctl_conn *c, const char *line)
{
	struct proto_ctl_result	r;

	if (c == NULL)
		return;
	memset(&r, 0, sizeof(r));
	(void)strlcpy(r.message, line, sizeof(r.message));
	imsgev_compose(&c->iev, IMSG_CTL_INFO, 0, 0, -1, &r, sizeof(r));
}

/* A line for the log, and for the client when there is one. */
void
control_info(struct ctl_conn *c, const char *fmt, ...)
{
	char	line[PROTO_MSG_MAX];
	va_list	ap;

	va_start(ap, fmt);
	(void)vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	log_info("%s", line);
	control_line(c, line);
}

/* "unknown model x; served: a, b" */
static void
control_unknown(struct agencyd *d, struct ctl_conn *c, const char *name)
{
	struct model	*m;
	char		 list[PROTO_MSG_MAX] = "";

	TAILQ_FOREACH(m, &d->models, entry) {
		if (list[0] != '\0')
			(void)strlcat(list, ", ", sizeof(list));
		(void)strlcat(list, m->plan.name, sizeof(list));
	}
	control_result(c, IMSG_CTL_ERROR, "unknown model %s; served: %s",
	    name, list[0] != '\0' ? list : "none");
	control_end(c);
}

static void
control_load_done(void *arg, int ok, const char *err)
{
	struct ctl_conn	*c;

	if ((c = control_byid((uint32_t)(uintptr_t)arg)) == NULL)
		return;		/* it went away while it waited */
	if (ok)
		control_result(c, IMSG_CTL_OK, "ready");
	else
		control_result(c, IMSG_CTL_ERROR, "%s", err != NULL ? err :
		    "load failed");
	control_end(c);
}

static void
control_unload_done(void *arg)
{
	struct ctl_conn	*c;

	if ((c = control_byid((uint32_t)(uintptr_t)arg)) == NULL)
		return;
	control_result(c, IMSG_CTL_OK, "stopped");
	control_end(c);
}

static void
control_status(struct agencyd *d, struct ctl_conn *c)
{
	struct proto_status	st;
	struct proto_reqid	r;
	size_t			i, n;

	n = pool_count(d->pool);
	for (i = 0; i < n; i++) {
		if (pool_status(d->pool, i, &st) == -1)
			continue;
		st.reqid = 0;
		models_fill_status(d, &st);
		imsgev_compose(&c->iev, IMSG_STATUS_MODEL, 0, 0, -1, &st,
		    sizeof(st));
	}
	memset(&r, 0, sizeof(r));
	imsgev_compose(&c->iev, IMSG_STATUS_END, 0, 0, -1, &r, sizeof(r));
}

static void
control_logs(struct agencyd *d, struct ctl_conn *c, struct model *m)
{
	struct proto_log	lg;
	size_t			i, n;

	(void)d;
	n = ring_count(&m->ring);
	for (i = 0; i < n; i++) {
		memset(&lg, 0, sizeof(lg));
		lg.pri = LOG_INFO;
		(void)strlcpy(lg.line, ring_get(&m->ring, i), sizeof(lg.line));
		imsgev_compose(&c->iev, IMSG_CTL_LOGLINE, 0, 0, -1, &lg,
		    sizeof(lg));
	}
	control_end(c);
}

/* The proxy ended the model's requests, or went away first. */
static void
control_cancel_done(void *arg, int ok, uint32_t cancelled)
{
	struct ctl_conn	*c;

	if ((c = control_byid((uint32_t)(uintptr_t)arg)) == NULL)
		return;
	if (ok)
		control_result(c, IMSG_CTL_OK, "%u", cancelled);
	else
		control_result(c, IMSG_CTL_ERROR, "agency-proxy exited before "
		    "it answered");
	control_end(c);
}

static void
control_dispatch(int fd, short event, void *arg)
{
	struct ctl_conn		*c = arg;
	struct agencyd		*d = env;
	struct imsg		 imsg;
	struct proto_ctl_model	 cm;
	struct proto_ctl_verbose cv;
	struct model		*m;
	ssize_t			 n;
	uint32_t		 type;
	void			*cbarg;

	(void)fd;
	if (imsgev_io(&c->iev, event) == -1) {
		control_drop(c);
		return;
	}
	cbarg = (void *)(uintptr_t)c->id;

	for (;;) {
		if ((n = imsg_get(&c->iev.ibuf, &imsg)) == -1) {
			log_warnx("control: malformed message; dropping the "
			    "client");
			control_drop(c);
			return;
		}
		if (n == 0)
			break;
		type = imsg_get_type(&imsg);

		if (c->restricted && type != IMSG_STATUS_REQ) {
			control_result(c, IMSG_CTL_ERROR, "permission denied: "
			    "this socket allows status only");
			control_end(c);
			imsg_free(&imsg);
			continue;
		}

		m = NULL;
		switch (type) {
		case IMSG_CTL_LOAD:
		case IMSG_CTL_UNLOAD:
		case IMSG_CTL_CANCEL:
		case IMSG_CTL_LOGS:
			if (imsg_get_data(&imsg, &cm, sizeof(cm)) == -1 ||
			    !PROTO_STROK(cm.model))
				goto bad;
			if ((m = model_find(d, cm.model)) == NULL) {
				control_unknown(d, c, cm.model);
				imsg_free(&imsg);
				continue;
			}
			break;
		default:
			break;
		}

		switch (type) {
		case IMSG_STATUS_REQ:
			if (imsg_get_len(&imsg) != sizeof(struct proto_reqid))
				goto bad;
			control_status(d, c);
			break;
		case IMSG_CTL_LOAD:
			if (d->stopping) {
				control_result(c, IMSG_CTL_ERROR,
				    "agencyd is shutting down");
				control_end(c);
				break;
			}
			if (!cm.wait) {
				(void)pool_load(d->pool, m->plan.name, NULL,
				    NULL);
				control_result(c, IMSG_CTL_OK, "loading");
				control_end(c);
			} else
				(void)pool_load(d->pool, m->plan.name,
				    control_load_done, cbarg);
			break;
		case IMSG_CTL_UNLOAD:
			(void)pool_unload(d->pool, m->plan.name,
			    control_unload_done, cbarg);
			break;
		case IMSG_CTL_CANCEL:
			if (!d->proxy_up) {
				control_result(c, IMSG_CTL_ERROR,
				    "agency-proxy is not running");
				control_end(c);
				break;
			}
			proxy_cancel(d, m->plan.name, control_cancel_done,
			    cbarg);
			break;
		case IMSG_CTL_RELOAD:
			if (imsg_get_len(&imsg) != 0)
				goto bad;
			if (agencyd_reload(d, c) == 0)
				control_result(c, IMSG_CTL_OK,
				    "configuration reloaded");
			else
				control_result(c, IMSG_CTL_ERROR,
				    "configuration not changed");
			control_end(c);
			break;
		case IMSG_CTL_VERBOSE:
			if (imsg_get_data(&imsg, &cv, sizeof(cv)) == -1 ||
			    cv.verbose < 0 || cv.verbose > 3)
				goto bad;
			log_setverbose(cv.verbose);
			log_info("log level set to %s", cv.verbose > 1 ?
			    "verbose" : "brief");
			control_result(c, IMSG_CTL_OK, "log %s",
			    cv.verbose > 1 ? "verbose" : "brief");
			control_end(c);
			break;
		case IMSG_CTL_LOGS:
			control_logs(d, c, m);
			break;
		default:
			goto bad;
		}
		imsg_free(&imsg);
		continue;
 bad:
		log_warnx("control: invalid message (type %u); dropping the "
		    "client", type);
		imsg_free(&imsg);
		control_drop(c);
		return;
	}
	imsgev_add(&c->iev);
}
