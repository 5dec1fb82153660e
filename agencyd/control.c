/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The control socket: agency-ctl's way in.  Every connection has its own
 * buffers; a client that sends something malformed or unknown is
 * dropped and logged.  A restricted socket answers status alone.
 *
 * Nothing a client does grows agencyd beyond a small bound, whoever it
 * is (the restricted socket is open to every local user):
 * - one request at a time: the next is not read until the answer to the
 *   last is written out (so a client that sends and never reads fills
 *   its own socket, not our memory), and an answer over CONTROL_QUEUE_*
 *   drops the client;
 * - no fds: the channel refuses them, and a client that sends one is
 *   dropped (the kernel closes them before they reach us);
 * - deadlines: a client that sends nothing, leaves a message unfinished
 *   or does not read its answer is dropped after CONTROL_TIMEOUT;
 * - a client following a model's lines (IMSG_CTL_FOLLOW) is sent each
 *   new line as any answer, within the same bounds: one that does not
 *   read is dropped; it may send nothing more;
 * - each socket has its own cap, for the main socket's room.
 * agency-proxy (it may connect to Unix sockets) is refused by its peer
 * credentials (control_peer_is_proxy).
 * Calls: keystats.c, listeners.c, model.c, pool.c, pool_decide.c,
 * pool_status.c, proxysvc.c, reload.c, spawn.c, common/config.c,
 * common/imsg.c, common/log.c, common/msg.c, common/proto.c.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agencyd.h"
#include "control.h"
#include "log.h"
#include "msg.h"

struct ctl_sock {
	char		 path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int		 fd;
	int		 restricted;
	unsigned int	 nconns;
	unsigned int	 maxconns;
	int		 full;		/* at the cap, and said so */
	struct event	 ev;
	struct event	 pause;
};

/* What a connection waits for, which says its deadline. */
enum ctl_wait {
	CW_NONE,	/* agencyd: a load, an unload, a cancel */
	CW_REQUEST,	/* the client: a request (idle) */
	CW_MESSAGE,	/* the client: the rest of a message begun */
	CW_READER,	/* the client: to read its answer */
	CW_FOLLOW,	/* agencyd: a new line of the model it follows */
	CW_DOOMED,	/* nothing: it is dropped at once */
};

struct ctl_conn {
	TAILQ_ENTRY(ctl_conn)	 entry;
	struct imsgev		 iev;
	struct ctl_sock		*cs;
	struct event		 deadline;
	enum ctl_wait		 wait;
	uint32_t		 id;
	int			 restricted;
	int			 pending;	/* an answer comes later */
	int			 doomed;	/* over a bound */
	int			 processing;	/* in control_process */
	int			 following;	/* IMSG_CTL_FOLLOW: the lines */
	char			 follow[AGENCY_NAME_MAX];	/* of it */
};

static TAILQ_HEAD(, ctl_conn)	ctl_conns = TAILQ_HEAD_INITIALIZER(ctl_conns);
static struct ctl_sock		ctl_main = {
	.fd = -1, .maxconns = CONTROL_MAIN_CONNS
};
static struct ctl_sock		ctl_restricted = {
	.fd = -1, .restricted = 1, .maxconns = CONTROL_RESTRICTED_CONNS
};
static uint32_t			ctl_nextid = 1;
static struct agencyd		*ctl_env;	/* control_init's */
static int			ctl_proxy_has_uid;	/* as root */
static uid_t			ctl_proxy_uid;

static void	control_accept(int, short, void *);
static struct ctl_conn *control_conn_new(struct ctl_sock *, int);
static void	control_dispatch(int, short, void *);
static void	control_deadline(int, short, void *);
static void	control_drop(struct ctl_conn *);
static void	control_doom(struct ctl_conn *, const char *);
static void	control_events(struct ctl_conn *, int);
static void	control_process(struct ctl_conn *);

static int
control_addr(const char *path, struct sockaddr_un *sun)
{
	if (path[0] == '\0') {
		log_warnx("no control socket: name one with \"socket\", or "
		    "set HOME or XDG_RUNTIME_DIR");
		return (-1);
	}
	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (strlcpy(sun->sun_path, path, sizeof(sun->sun_path)) >=
	    sizeof(sun->sun_path)) {
		log_warnx("control socket path too long: %s", path);
		return (-1);
	}
	return (0);
}

/*
 * In user mode the default socket lives in a directory only its user may
 * enter ($XDG_RUNTIME_DIR, or ~/.agency made here): anyone else who
 * could create or replace it there would get agency-ctl's commands.
 */
static int
control_private_dir(const char *path)
{
	char		 dir[AGENCY_PATH_MAX], def[AGENCY_PATH_MAX];
	char		*slash;
	struct stat	 st;

	if (getuid() == 0 ||
	    config_default_socket(def, sizeof(def)) == -1 ||
	    strcmp(path, def) != 0)
		return (0);
	if (strlcpy(dir, path, sizeof(dir)) >= sizeof(dir) ||
	    (slash = strrchr(dir, '/')) == NULL || slash == dir)
		return (0);
	*slash = '\0';
	if (mkdir(dir, 0700) == -1 && errno != EEXIST) {
		log_warn("%s: mkdir %s", __func__, dir);
		return (-1);
	}
	if (lstat(dir, &st) == -1) {
		log_warn("%s: %s", __func__, dir);
		return (-1);
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 077) != 0) {
		log_warnx("%s must be a directory of yours that only you may "
		    "enter (mode 0700) to hold the control socket", dir);
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

	if (control_addr(path, &sun) == -1 || control_private_dir(path) == -1)
		return (-1);
	switch (unix_stale_remove(&sun, "control socket")) {
	case -1:
		return (-1);
	case 1:
		log_warnx("another agencyd is running on %s", path);
		return (-1);
	}
	return (0);
}

/*
 * The socket gets its mode from the umask as bind creates it: a chmod
 * of the path afterwards would follow whatever someone put there in
 * between (a symlink to a file of root's, say).
 */
static int
control_listen(struct ctl_sock *cs, const char *path)
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
	/* 0666 restricted, else 0660 */
	old = umask(cs->restricted ? 0111 : 0117);
	if (bind(s, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		log_warn("%s: bind %s", __func__, path);
		umask(old);
		close(s);
		return (-1);
	}
	umask(old);
	if (listen(s, CONTROL_BACKLOG) == -1) {
		log_warn("%s: listen %s", __func__, path);
		(void)unlink(path);
		close(s);
		return (-1);
	}
	(void)strlcpy(cs->path, path, sizeof(cs->path));
	cs->fd = s;
	event_set(&cs->ev, s, EV_READ | EV_PERSIST, control_accept, cs);
	event_add(&cs->ev, NULL);
	evtimer_set(&cs->pause, control_accept, cs);
	return (0);
}

int
control_init(struct agencyd *d, const char *path, const char *rpath)
{
	struct passwd	*pw;

	ctl_env = d;
	if (getuid() == 0 && (pw = getpwnam(d->conf->user)) != NULL &&
	    pw->pw_uid != 0) {
		ctl_proxy_has_uid = 1;
		ctl_proxy_uid = pw->pw_uid;
	}
	if (control_listen(&ctl_main, path) == -1)
		return (-1);
	/* both sockets were checked by main, in the foreground */
	if (rpath != NULL && rpath[0] != '\0' &&
	    control_listen(&ctl_restricted, rpath) == -1)
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

int
control_peer_is_proxy(pid_t pid, uid_t uid, pid_t proxy_pid, int has_uid,
    uid_t proxy_uid)
{
	if (proxy_pid > 0 && pid == proxy_pid)
		return (1);
	return (has_uid && uid == proxy_uid);
}

static void
control_accept(int fd, short event, void *arg)
{
	struct ctl_sock		*cs = arg;
	struct timeval		 tv = { 1, 0 };
	struct ucred		 cred;
	socklen_t		 len = sizeof(cred);
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
	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1) {
		log_warn("%s: SO_PEERCRED", __func__);
		close(s);
		return;
	}
	if (control_peer_is_proxy(cred.pid, cred.uid, ctl_env->proxy_pid,
	    ctl_proxy_has_uid, ctl_proxy_uid)) {
		log_warnx("control: %s: refused a client that is "
		    "agency-proxy (pid %ld, uid %lu)", cs->path,
		    (long)cred.pid, (unsigned long)cred.uid);
		close(s);
		return;
	}
	if (cs->nconns >= cs->maxconns) {
		/* Said once until a place is free again, not once a client. */
		if (!cs->full)
			log_warnx("control: %s has its %u clients; closing "
			    "new ones until one leaves", cs->path,
			    cs->maxconns);
		cs->full = 1;
		close(s);
		return;
	}
	(void)control_conn_new(cs, s);
}

/* A client on socket s of cs, or NULL (and s closed). */
static struct ctl_conn *
control_conn_new(struct ctl_sock *cs, int s)
{
	struct ctl_conn		*c;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		log_warn("%s", __func__);
		close(s);
		return (NULL);
	}
	c->id = ctl_nextid++;
	if (ctl_nextid == 0)
		ctl_nextid = 1;
	c->cs = cs;
	c->restricted = cs->restricted;
	c->wait = CW_NONE;
	imsgev_init(&c->iev, s, control_dispatch, c);
	imsg_refuse_fds(&c->iev.ibuf);
	evtimer_set(&c->deadline, control_deadline, c);
	TAILQ_INSERT_TAIL(&ctl_conns, c, entry);
	cs->nconns++;
	control_events(c, 0);
	return (c);
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
	evtimer_del(&c->deadline);
	imsgev_clear(&c->iev);
	close(c->iev.ibuf.fd);
	if (c->cs->nconns > 0)
		c->cs->nconns--;
	c->cs->full = 0;
	free(c);
}

/*
 * Over a bound, from wherever that was seen (a pool callback, a reload
 * that logs to it): what was queued goes at once, the connection at the
 * next turn of the loop, when nobody holds it any more.
 */
static void
control_doom(struct ctl_conn *c, const char *why)
{
	if (c->doomed)
		return;
	log_warnx("control: client %u %s; dropping it", c->id, why);
	c->doomed = 1;
	imsgev_clear(&c->iev);
	control_events(c, 0);
}

/*
 * Queue one message of an answer, within the bound of what one client
 * may have queued.
 */
static void
control_compose(struct ctl_conn *c, uint32_t type, const void *data,
    size_t len)
{
	struct msgbuf	*w = &c->iev.ibuf.w;
	struct msgw	 m;

	if (c->doomed)
		return;
	if (proto_write(&m, FROM_AGENCYD, type, data, len) == -1) {
		log_warnx("%s: a message of type %u that cannot be written",
		    __func__, type);
		control_doom(c, "cannot be answered");
		return;
	}
	if (w->queued >= CONTROL_QUEUE_MSGS ||
	    w->qbytes + IMSG_HEADER_SIZE + m.len > CONTROL_QUEUE_BYTES) {
		control_doom(c, "has an answer over the bound");
		return;
	}
	if (msg_compose(&c->iev.ibuf, type, 0, -1, &m) == -1) {
		log_warn("%s: client %u", __func__, c->id);
		control_doom(c, "cannot be answered");
		return;
	}
	control_events(c, 0);
}

/*
 * The events and the deadline for what the connection waits for now.
 * Requests are read only when no answer is owed or queued; a deadline
 * starts when the wait does (and again when a slow reader takes some of
 * its answer: progress is not idleness).
 */
static void
control_events(struct ctl_conn *c, int progress)
{
	struct timeval	 tv;
	enum ctl_wait	 wait;

	if (c->doomed)
		wait = CW_DOOMED;
	else if (c->iev.ibuf.w.queued > 0)
		wait = CW_READER;
	else if (c->following)
		wait = CW_FOLLOW;	/* reading: its close is seen */
	else if (c->pending)
		wait = CW_NONE;
	else if (imsg_partial(&c->iev.ibuf) > 0)
		wait = CW_MESSAGE;
	else
		wait = CW_REQUEST;
	if (wait != CW_DOOMED)
		imsgev_pause(&c->iev, wait == CW_READER || wait == CW_NONE);
	if (wait == c->wait && !(wait == CW_READER && progress))
		return;
	c->wait = wait;
	evtimer_del(&c->deadline);
	if (wait == CW_NONE || wait == CW_FOLLOW)
		return;
	tv.tv_sec = wait == CW_DOOMED ? 0 : CONTROL_TIMEOUT;
	tv.tv_usec = 0;
	evtimer_add(&c->deadline, &tv);
}

static void
control_deadline(int fd, short event, void *arg)
{
	struct ctl_conn	*c = arg;

	(void)fd;
	(void)event;
	switch (c->wait) {
	case CW_REQUEST:
		log_debug("control: client %u sent nothing for %d s; dropping "
		    "it", c->id, CONTROL_TIMEOUT);
		break;
	case CW_MESSAGE:
		log_warnx("control: client %u left a message unfinished for "
		    "%d s; dropping it", c->id, CONTROL_TIMEOUT);
		break;
	case CW_READER:
		log_warnx("control: client %u did not read its answer for %d "
		    "s; dropping it", c->id, CONTROL_TIMEOUT);
		break;
	case CW_DOOMED:
	case CW_NONE:
	case CW_FOLLOW:
	default:
		break;
	}
	control_drop(c);
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
	control_compose(c, type, &r, sizeof(r));
}

static void
control_end(struct ctl_conn *c)
{
	control_compose(c, IMSG_CTL_END, NULL, 0);
}

/*
 * The end of an answer that came later: the client may send again.  An
 * answer given at once, from within the request, leaves the rest to the
 * loop that took the request.
 */
static void
control_later_end(struct ctl_conn *c)
{
	c->pending = 0;
	control_end(c);
	if (!c->processing)
		control_process(c);
}

/* A line already logged, for the client alone. */
static void
control_line(struct ctl_conn *c, const char *line)
{
	struct proto_ctl_result	r;

	if (c == NULL)
		return;
	memset(&r, 0, sizeof(r));
	(void)strlcpy(r.message, line, sizeof(r.message));
	control_compose(c, IMSG_CTL_INFO, &r, sizeof(r));
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
		control_result(c, IMSG_CTL_FAILED, "%s", err != NULL ? err :
		    "load failed");
	control_later_end(c);
}

static void
control_unload_done(void *arg)
{
	struct ctl_conn	*c;

	if ((c = control_byid((uint32_t)(uintptr_t)arg)) == NULL)
		return;
	control_result(c, IMSG_CTL_OK, "stopped");
	control_later_end(c);
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
	control_later_end(c);
}

/* A line of a plan or a reload, for the client that asked. */
static void
control_say(void *arg, const char *line)
{
	control_line(arg, line);
}

/* What a request for the model would do now: lines, then the verdict. */
static void
control_plan(struct agencyd *d, struct ctl_conn *c, struct model *m)
{
	int	 v;

	if ((v = pool_explain(d->pool, m->plan.name, control_say,
	    c)) == -1)
		control_result(c, IMSG_CTL_ERROR, "%s is not served",
		    m->plan.name);
	else
		control_result(c, IMSG_CTL_OK, "%s", pool_verdict_name(v));
	control_end(c);
}

/*
 * The status of every model, or of only one: each model's record and
 * its aliases, then the memory they are measured against.
 */
static void
control_status(struct agencyd *d, struct ctl_conn *c, struct model *only)
{
	struct proto_status	 st;
	struct proto_key_status	 pk;
	struct proto_alias	 al;
	struct proto_memory	 pm;
	struct proto_reqid	 r;
	struct keystat		*ks;
	struct model		*m;
	struct strent		*se;
	size_t			 i, n;

	n = pool_count(d->pool);
	for (i = 0; i < n; i++) {
		if (pool_status(d->pool, i, &st) == -1 ||
		    (only != NULL && strcmp(st.model, only->plan.name) != 0))
			continue;
		st.reqid = 0;
		models_fill_status(d, &st);
		control_compose(c, IMSG_CTL_STATUS_MODEL, &st,
		    sizeof(st));
		if ((m = model_find(d, st.model)) == NULL || m->mc == NULL)
			continue;
		TAILQ_FOREACH(se, &m->mc->aliases, entry) {
			memset(&al, 0, sizeof(al));
			(void)strlcpy(al.model, st.model, sizeof(al.model));
			(void)strlcpy(al.alias, se->s, sizeof(al.alias));
			control_compose(c, IMSG_CTL_STATUS_ALIAS, &al,
			    sizeof(al));
		}
	}
	models_memory(d, &pm);
	control_compose(c, IMSG_CTL_STATUS_MEMORY, &pm, sizeof(pm));
	/* the requests by key, in a whole status */
	if (only == NULL)
		TAILQ_FOREACH(ks, &d->keystats, entry) {
			keystats_fill(ks, &pk);
			control_compose(c, IMSG_CTL_STATUS_KEY, &pk,
			    sizeof(pk));
		}
	memset(&r, 0, sizeof(r));
	control_compose(c, IMSG_CTL_STATUS_END, &r, sizeof(r));
}

static void
control_logline(struct ctl_conn *c, const char *line)
{
	struct proto_log	lg;

	memset(&lg, 0, sizeof(lg));
	lg.pri = LOG_INFO;
	(void)strlcpy(lg.line, line, sizeof(lg.line));
	control_compose(c, IMSG_CTL_LOGLINE, &lg, sizeof(lg));
}

/* The lines the model's ring holds; with follow, each new one after. */
static void
control_logs(struct ctl_conn *c, struct model *m, int follow)
{
	size_t	i, n;

	n = ring_count(&m->ring);
	for (i = 0; i < n; i++)
		control_logline(c, ring_get(&m->ring, i));
	if (!follow) {
		control_end(c);
		return;
	}
	c->following = 1;
	(void)strlcpy(c->follow, m->plan.name, sizeof(c->follow));
	log_debug("control: client %u follows %s", c->id, c->follow);
}

/* A new line of a model (models_on_line, through agencyd.c): to each
 * of its followers. */
void
control_model_line(const char *model, const char *line)
{
	struct ctl_conn	*c, *next;

	/* (A follower over its bound is only doomed here, not freed.) */
	for (c = TAILQ_FIRST(&ctl_conns); c != NULL; c = next) {
		next = TAILQ_NEXT(c, entry);
		if (c->following && strcmp(c->follow, model) == 0)
			control_logline(c, line);
	}
}

static void
control_load(struct agencyd *d, struct ctl_conn *c, struct model *m, int wait)
{
	if (d->stopping) {
		control_result(c, IMSG_CTL_ERROR, "agencyd is shutting down");
		control_end(c);
		return;
	}
	if (!wait) {
		(void)pool_load(d->pool, m->plan.name, NULL, NULL);
		control_result(c, IMSG_CTL_OK, "loading");
		control_end(c);
		return;
	}
	c->pending = 1;
	(void)pool_load(d->pool, m->plan.name, control_load_done,
	    (void *)(uintptr_t)c->id);
}

static void
control_cancel(struct agencyd *d, struct ctl_conn *c, struct model *m)
{
	if (!d->proxy_up) {
		control_result(c, IMSG_CTL_ERROR,
		    "agency-proxy is not running");
		control_end(c);
		return;
	}
	c->pending = 1;
	proxy_cancel(d, m->plan.name, control_cancel_done,
	    (void *)(uintptr_t)c->id);
}

static void
control_reload(struct agencyd *d, struct ctl_conn *c)
{
	if (agencyd_reload(d, control_say, c) == 0)
		control_result(c, IMSG_CTL_OK, "configuration reloaded");
	else
		control_result(c, IMSG_CTL_ERROR, "configuration not changed");
	control_end(c);
}

static void
control_verbose(struct ctl_conn *c, int verbose)
{
	log_setverbose(verbose);
	log_info("log level set to %s", verbose > 1 ? "verbose" : "brief");
	control_result(c, IMSG_CTL_OK, "log %s",
	    verbose > 1 ? "verbose" : "brief");
	control_end(c);
}

/*
 * One request, read whole by proto.c; -1 when it was malformed (the
 * caller drops the client).  An answer is either queued here or owed
 * (c->pending) until a callback gives it.
 */
static int
control_request(struct agencyd *d, struct ctl_conn *c, struct imsg *imsg)
{
	union proto_msg		 u;
	struct model		*m = NULL;
	const char		*why;
	uint32_t		 type = imsg_get_type(imsg);

	if (c->restricted && type != IMSG_CTL_STATUS_REQ &&
	    type != IMSG_CTL_STATUS) {
		control_result(c, IMSG_CTL_ERROR, "permission denied: "
		    "this socket allows status only");
		control_end(c);
		return (0);
	}
	if (proto_read(imsg, FROM_CTL, &u, sizeof(u), &why) == -1) {
		log_warnx("control: client %u: %s", c->id, why);
		return (-1);
	}
	switch (type) {
	case IMSG_CTL_STATUS_REQ:
		control_status(d, c, NULL);
		return (0);
	case IMSG_CTL_RELOAD:
		control_reload(d, c);
		return (0);
	case IMSG_CTL_VERBOSE:
		control_verbose(c, u.ctl_verbose.verbose);
		return (0);
	default:
		break;
	}
	/* The others name a model, or an alias, as the front door takes
	 * them. */
	if ((m = model_resolve(d, u.ctl_model.model)) == NULL) {
		control_unknown(d, c, u.ctl_model.model);
		return (0);
	}
	switch (type) {
	case IMSG_CTL_STATUS:
		control_status(d, c, m);
		break;
	case IMSG_CTL_LOAD:
		control_load(d, c, m, u.ctl_model.wait);
		break;
	case IMSG_CTL_UNLOAD:
		c->pending = 1;
		(void)pool_unload(d->pool, m->plan.name, control_unload_done,
		    (void *)(uintptr_t)c->id);
		break;
	case IMSG_CTL_CANCEL:
		control_cancel(d, c, m);
		break;
	case IMSG_CTL_LOGS:
	case IMSG_CTL_FOLLOW:
		control_logs(c, m, type == IMSG_CTL_FOLLOW);
		break;
	case IMSG_CTL_PLAN:
		control_plan(d, c, m);
		break;
	default:
		return (-1);
	}
	return (0);
}

/*
 * Take the requests read so far, one at a time: the next only once the
 * answer to the last is written out and none is owed.  May drop c.
 */
static void
control_process(struct ctl_conn *c)
{
	struct agencyd	*d = ctl_env;
	struct imsg	 imsg;
	ssize_t		 n;
	uint32_t	 type;

	c->processing = 1;
	while (!c->doomed && !c->pending && !c->following &&
	    c->iev.ibuf.w.queued == 0) {
		if ((n = imsg_get(&c->iev.ibuf, &imsg)) == -1) {
			log_warnx("control: client %u sent a malformed "
			    "message; dropping the client", c->id);
			control_drop(c);
			return;
		}
		if (n == 0)
			break;
		type = imsg_get_type(&imsg);
		if (control_request(d, c, &imsg) == -1) {
			log_warnx("control: invalid message (type %u); "
			    "dropping the client", type);
			imsg_free(&imsg);
			control_drop(c);
			return;
		}
		imsg_free(&imsg);
	}
	c->processing = 0;
	if (c->following && !c->doomed && c->iev.ibuf.rlen > 0) {
		log_warnx("control: client %u sent a message while it follows "
		    "a model's lines; dropping it", c->id);
		control_drop(c);
		return;
	}
	control_events(c, 0);
}

static void
control_dispatch(int fd, short event, void *arg)
{
	struct ctl_conn	*c = arg;
	struct imsgbuf	*ibuf = &c->iev.ibuf;
	ssize_t		 n;
	size_t		 before;

	(void)fd;
	if (c->doomed)
		return;
	/* (EV_READ only comes unpaused; a full buffer waits its turn.) */
	if ((event & EV_READ) && !c->iev.rpaused) {
		if ((n = imsg_read(ibuf)) == -1 && errno != EAGAIN &&
		    errno != ENOBUFS) {
			if (errno == EBADMSG)
				log_warnx("control: client %u sent file "
				    "descriptors; dropping it", c->id);
			else
				log_warn("control: client %u: read", c->id);
			control_drop(c);
			return;
		}
		if (n == 0) {
			control_drop(c);
			return;
		}
	}
	if (event & EV_WRITE) {
		before = ibuf->w.qbytes;
		switch (imsg_write(ibuf)) {
		case -1:
			log_warn("control: client %u: write", c->id);
			/* FALLTHROUGH */
		case 0:
			control_drop(c);
			return;
		default:
			break;
		}
		if (ibuf->w.qbytes < before)
			control_events(c, 1);
	}
	control_process(c);
}
