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
 * by agencyd until its owner is given, so it is never more open than
 * asked for.  Owner and mode are changed only through a descriptor of
 * the socket file bind made (its device and inode, kept), never by the
 * path: whoever may rename in the directory could put a link there in
 * between.  Such directories are refused: every directory on the way
 * is root's, agencyd's or the listener owner's, and none but the last
 * may be writable by others unless it is sticky.  A stale socket (it
 * refuses connections: nobody listens) is removed; a path that is not a
 * socket, or one that something answers on, is an error.
 *
 * Calls: common/log.c.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <linux/rtnetlink.h>
#include <linux/unix_diag.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agencyd.h"
#include "log.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2	452	/* Linux 6.6; the same on every arch */
#endif

static int	listen_tcp(struct listen_conf *);
static int	listen_unix(struct listen_conf *);
static int	sock_file_id(int, dev_t *, ino_t *);
static int	sock_file_open(const struct listen_conf *);
static int	sock_file_chmod(int, mode_t);
static int	dir_safe(const char *, const struct stat *, uid_t, int);
static int	path_dirs_safe(const char *, uid_t);

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

/*
 * The device and inode of the file bind made for the Unix socket s, as
 * the kernel's socket diagnostics give them (the socket's own inode,
 * which fstat on it gives, names it there).  -1 where the kernel has
 * no unix_diag.
 */
static int
sock_file_id(int s, dev_t *dev, ino_t *ino)
{
	struct {
		struct nlmsghdr		nlh;
		struct unix_diag_req	req;
	}			 q;
	union {
		struct nlmsghdr	nlh;
		char		buf[1024];
	}			 r;
	struct sockaddr_nl	 nl;
	struct unix_diag_vfs	 vfs;
	struct stat		 st;
	struct rtattr		*a;
	ssize_t			 n;
	int			 fd, len, found = 0;

	if (fstat(s, &st) == -1 || (fd = socket(AF_NETLINK, SOCK_DGRAM |
	    SOCK_CLOEXEC, NETLINK_SOCK_DIAG)) == -1)
		return (-1);
	memset(&q, 0, sizeof(q));
	q.nlh.nlmsg_len = sizeof(q);
	q.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
	q.nlh.nlmsg_flags = NLM_F_REQUEST;
	q.req.sdiag_family = AF_UNIX;
	q.req.udiag_states = ~0U;
	q.req.udiag_ino = st.st_ino;
	q.req.udiag_show = UDIAG_SHOW_VFS;
	q.req.udiag_cookie[0] = q.req.udiag_cookie[1] = ~0U;	/* none */
	memset(&nl, 0, sizeof(nl));
	nl.nl_family = AF_NETLINK;
	if (sendto(fd, &q, sizeof(q), 0, (struct sockaddr *)&nl,
	    sizeof(nl)) == -1 || (n = recv(fd, &r, sizeof(r), 0)) == -1) {
		close(fd);
		return (-1);
	}
	close(fd);
	if (!NLMSG_OK(&r.nlh, n) || r.nlh.nlmsg_type != SOCK_DIAG_BY_FAMILY ||
	    r.nlh.nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
		return (-1);
	len = r.nlh.nlmsg_len - NLMSG_LENGTH(sizeof(struct unix_diag_msg));
	a = (struct rtattr *)((char *)NLMSG_DATA(&r.nlh) +
	    NLMSG_ALIGN(sizeof(struct unix_diag_msg)));
	for (; RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == UNIX_DIAG_VFS &&
		    RTA_PAYLOAD(a) >= sizeof(vfs)) {
			memcpy(&vfs, RTA_DATA(a), sizeof(vfs));
			found = 1;
		}
	if (!found)
		return (-1);
	/* the kernel's own encoding: 12 bits of major above 20 of minor */
	*dev = makedev(vfs.udiag_vfs_dev >> 20, vfs.udiag_vfs_dev & 0xfffff);
	*ino = vfs.udiag_vfs_ino;
	return (0);
}

/* An O_PATH descriptor of the socket file bind made for l, or -1 when
 * something else is at its path now (logged). */
static int
sock_file_open(const struct listen_conf *l)
{
	struct stat	st;
	int		fd;

	if ((fd = open(l->path, O_PATH | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		log_warn("%s: %s", __func__, l->path);
		return (-1);
	}
	if (fstat(fd, &st) == -1 || !S_ISSOCK(st.st_mode) ||
	    st.st_dev != l->sock_dev || st.st_ino != l->sock_ino) {
		log_warnx("%s: %s is no longer the socket agencyd made",
		    __func__, l->path);
		close(fd);
		return (-1);
	}
	return (fd);
}

/* The mode of the file behind an O_PATH descriptor: fchmodat2 where the
 * kernel has it (6.6), else through /proc, which reaches the same inode
 * (glibc 2.36's fchmodat cannot take such a descriptor). */
static int
sock_file_chmod(int fd, mode_t mode)
{
	char	proc[32];

	if (syscall(SYS_fchmodat2, fd, "", mode, AT_EMPTY_PATH) == 0)
		return (0);
	if (errno != ENOSYS && errno != EINVAL && errno != EOPNOTSUPP)
		return (-1);
	(void)snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return (chmod(proc, mode));
}

/*
 * Whether a directory on the way to a listener (st, from lstat) may be
 * trusted with it: root's, agencyd's user's or the listener owner's
 * (whom the socket is given anyway), and writable by no one else; above
 * the last one, a sticky directory writable by others is enough, since
 * they may not rename what they do not own there.
 */
static int
dir_safe(const char *dir, const struct stat *st, uid_t owner, int last)
{
	if (!S_ISDIR(st->st_mode))
		return (1);	/* the bind will say what is wrong */
	if (st->st_uid != 0 && st->st_uid != geteuid() &&
	    st->st_uid != owner) {
		log_warnx("%s belongs to uid %u: a listener's directories "
		    "must be root's or its owner's", dir,
		    (unsigned int)st->st_uid);
		return (0);
	}
	if ((st->st_mode & (S_IWGRP | S_IWOTH)) == 0 ||
	    (!last && (st->st_mode & S_ISVTX)))
		return (1);
	log_warnx("%s is writable by others (mode %04o): they could put a "
	    "link in place of a listener's socket", dir,
	    (unsigned int)(st->st_mode & 07777));
	return (0);
}

/*
 * Every directory on the way to the Unix socket at path, as written and
 * with its links resolved, must be safe (dir_safe) for a socket given
 * to owner.  -1 when one is not (logged).
 */
static int
path_dirs_safe(const char *path, uid_t owner)
{
	char		 dir[PATH_MAX], real[PATH_MAX], *walk[2], *p, c;
	struct stat	 st;
	size_t		 i;

	if (strlcpy(dir, path, sizeof(dir)) >= sizeof(dir) ||
	    (p = strrchr(dir, '/')) == NULL)
		return (-1);
	p[p == dir ? 1 : 0] = '\0';
	if (realpath(dir, real) == NULL) {
		log_warn("%s: %s", __func__, dir);
		return (-1);
	}
	walk[0] = dir;
	walk[1] = real;
	for (i = 0; i < 2; i++) {
		for (p = walk[i];; p++) {
			if (*p != '/' && *p != '\0')
				continue;
			c = *p;
			*p = '\0';
			if (lstat(p == walk[i] ? "/" : walk[i], &st) == -1) {
				log_warn("%s: %s", __func__, walk[i]);
				return (-1);
			}
			if (!S_ISLNK(st.st_mode) && !dir_safe(p == walk[i] ?
			    "/" : walk[i], &st, owner, c == '\0'))
				return (-1);
			*p = c;
			if (c == '\0' || p[1] == '\0')
				break;
		}
	}
	return (0);
}

static int
listen_unix(struct listen_conf *l)
{
	struct stat	 st;
	mode_t		 old;
	int		 s, fd;

	if (path_dirs_safe(l->path, l->uid) == -1) {
		log_warnx("%s: listen on \"%s\": refused", __func__, l->path);
		return (-1);
	}
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
	/* Without unix_diag, the file at the path now, in a directory
	 * that only root and the owner may write. */
	if (sock_file_id(s, &l->sock_dev, &l->sock_ino) == -1) {
		if (lstat(l->path, &st) == -1)
			st.st_ino = 0;
		l->sock_dev = st.st_dev;
		l->sock_ino = st.st_ino;
	}
	if ((fd = sock_file_open(l)) == -1 ||
	    fchownat(fd, "", l->uid, l->gid, AT_EMPTY_PATH) == -1 ||
	    listen(s, SOMAXCONN) == -1) {
		log_warn("%s: listen on \"%s\"", __func__, l->path);
		if (fd != -1)
			close(fd);
		(void)unlink(l->path);
		close(s);
		return (-1);
	}
	close(fd);
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
 * A Unix socket kept across a reload (o's, taken over by l), given the
 * owner, group and mode of the new configuration: back to agencyd, so
 * that no capability but CAP_CHOWN is needed to change its mode, then
 * on to its owner, each through a descriptor of the very file.
 */
int
listener_update(const struct listen_conf *o, struct listen_conf *l)
{
	int	fd, r;

	l->sock_dev = o->sock_dev;
	l->sock_ino = o->sock_ino;
	if (l->path[0] == '\0' || (o->uid == l->uid && o->gid == l->gid &&
	    o->mode == l->mode))
		return (0);
	if ((fd = sock_file_open(l)) == -1)
		return (-1);
	r = fchownat(fd, "", geteuid(), getegid(), AT_EMPTY_PATH) == -1 ||
	    sock_file_chmod(fd, l->mode) == -1 ||
	    fchownat(fd, "", l->uid, l->gid, AT_EMPTY_PATH) == -1;
	if (r)
		log_warn("%s: %s", __func__, l->path);
	close(fd);
	return (r ? -1 : 0);
}

/* A listener given up: its socket closed and, for a Unix one, its path
 * removed when it is still the socket bind made. */
void
listener_close(struct listen_conf *l)
{
	int	fd;

	if (l->fd < 0)
		return;
	close(l->fd);
	l->fd = -1;
	if (l->path[0] == '\0' || (fd = sock_file_open(l)) == -1)
		return;
	close(fd);
	if (unlink(l->path) == -1)
		log_warn("%s: unlink %s", __func__, l->path);
}

void
listeners_close(struct agency_conf *conf)
{
	struct listen_conf	*l;

	TAILQ_FOREACH(l, &conf->listens, entry)
		listener_close(l);
}
