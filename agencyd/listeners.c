/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The front door's listening sockets, bound here (as root, before the
 * proxy starts and on reload) and handed to the proxy: TCP ones, and
 * Unix sockets made with the owner, group and mode agency.conf gives.
 *
 * A Unix socket gets its mode from the umask as bind creates it, owned
 * by agencyd until lchown gives it away, so it is never more open than
 * asked for; lchown and the socket test go by the path itself, never
 * through a link.  A stale socket (it refuses connections: nobody
 * listens) is removed; a path that is not a socket, or one that
 * something answers on, is an error.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "agencyd.h"
#include "log.h"

static int	listen_tcp(struct listen_conf *);
static int	listen_unix(struct listen_conf *);

static int
listen_tcp(struct listen_conf *l)
{
	int	s, on = 1;

	if ((s = socket(l->ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK |
	    SOCK_CLOEXEC, 0)) == -1) {
		log_warn("%s: socket for %s port %u", __func__, l->host,
		    l->port);
		return (-1);
	}
	if (setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) == -1)
		log_warn("%s: SO_REUSEADDR", __func__);
	/*
	 * Accepted sockets inherit it: the proxy passes each SSE chunk on
	 * at once, and Nagle would hold a chunk back until the client
	 * acknowledged the one before.  Set here, as the sandboxed proxy
	 * has no setsockopt.
	 */
	if (setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) == -1)
		log_warn("%s: TCP_NODELAY", __func__);
	if (l->ss.ss_family == AF_INET6 && setsockopt(s, IPPROTO_IPV6,
	    IPV6_V6ONLY, &on, sizeof(on)) == -1)
		log_warn("%s: IPV6_V6ONLY", __func__);
	if (bind(s, (struct sockaddr *)&l->ss, l->sslen) == -1 ||
	    listen(s, SOMAXCONN) == -1) {
		log_warn("%s: listen on %s port %u", __func__, l->host,
		    l->port);
		close(s);
		return (-1);
	}
	l->fd = s;
	return (0);
}

/*
 * Before a bind on the Unix socket at sun (what names it in the log):
 * 1 when something answers there, 0 when the bind may go ahead (nothing
 * answers), -1 on an error (logged).  A socket refusing connections
 * (ECONNREFUSED: nobody listens) is stale and removed; any other failure
 * to connect leaves the path to the bind, which says what is wrong.
 */
int
unix_stale_remove(const struct sockaddr_un *sun, const char *what)
{
	int	s, r, saved;

	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1) {
		log_warn("%s: socket", __func__);
		return (-1);
	}
	r = connect(s, (const struct sockaddr *)sun, sizeof(*sun));
	saved = errno;
	close(s);
	if (r == 0)
		return (1);
	if (saved == ECONNREFUSED) {
		log_info("removing the stale %s %s", what, sun->sun_path);
		if (unlink(sun->sun_path) == -1 && errno != ENOENT) {
			log_warn("%s: unlink %s", __func__, sun->sun_path);
			return (-1);
		}
	}
	return (0);
}

static int
listen_unix(struct listen_conf *l)
{
	struct stat	 st;
	mode_t		 old;
	int		 s;

	if (lstat(l->path, &st) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_warnx("%s: listen on \"%s\": there is a file "
			    "there that is not a socket", __func__, l->path);
			return (-1);
		}
		switch (unix_stale_remove((const struct sockaddr_un *)&l->ss,
		    "socket")) {
		case -1:
			return (-1);
		case 1:
			log_warnx("%s: listen on \"%s\": something answers "
			    "there already", __func__, l->path);
			return (-1);
		}
	} else if (errno != ENOENT) {
		log_warn("%s: %s", __func__, l->path);
		return (-1);
	}
	if ((s = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		log_warn("%s: socket for %s", __func__, l->path);
		return (-1);
	}
	old = umask(~l->mode & 0777);
	if (bind(s, (struct sockaddr *)&l->ss, l->sslen) == -1) {
		log_warn("%s: listen on \"%s\"", __func__, l->path);
		umask(old);
		close(s);
		return (-1);
	}
	umask(old);
	if (lchown(l->path, l->uid, l->gid) == -1 ||
	    listen(s, SOMAXCONN) == -1) {
		log_warn("%s: listen on \"%s\"", __func__, l->path);
		(void)unlink(l->path);
		close(s);
		return (-1);
	}
	l->fd = s;
	return (0);
}

/* Bind every listener that has no socket yet. */
int
listeners_bind(struct agency_conf *conf)
{
	struct listen_conf	*l;

	TAILQ_FOREACH(l, &conf->listens, entry) {
		if (l->fd != -1)
			continue;
		if ((l->path[0] != '\0' ? listen_unix(l) : listen_tcp(l)) == -1)
			return (-1);
	}
	return (0);
}

/*
 * A Unix socket kept across a reload, given the owner, group and mode
 * of the new configuration: back to agencyd, so that no capability
 * but CAP_CHOWN is needed to change its mode, then on to its owner.
 */
int
listener_update(const struct listen_conf *o, const struct listen_conf *l)
{
	struct stat	st;

	if (l->path[0] == '\0' || (o->uid == l->uid && o->gid == l->gid &&
	    o->mode == l->mode))
		return (0);
	if (lstat(l->path, &st) == -1 || !S_ISSOCK(st.st_mode)) {
		log_warnx("%s: %s is no longer our socket", __func__, l->path);
		return (-1);
	}
	if (lchown(l->path, geteuid(), getegid()) == -1 ||
	    chmod(l->path, l->mode) == -1 ||
	    lchown(l->path, l->uid, l->gid) == -1) {
		log_warn("%s: %s", __func__, l->path);
		return (-1);
	}
	return (0);
}

/* A listener given up: its socket closed and, for a Unix one, its path
 * removed (when it is still a socket). */
void
listener_close(struct listen_conf *l)
{
	struct stat	st;

	if (l->fd < 0)
		return;
	close(l->fd);
	l->fd = -1;
	if (l->path[0] != '\0' && lstat(l->path, &st) == 0 &&
	    S_ISSOCK(st.st_mode) && unlink(l->path) == -1)
		log_warn("%s: unlink %s", __func__, l->path);
}

void
listeners_close(struct agency_conf *conf)
{
	struct listen_conf	*l;

	TAILQ_FOREACH(l, &conf->listens, entry)
		listener_close(l);
}
