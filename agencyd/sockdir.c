/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The directories of the models' Unix sockets (issue 29 item 2): a
 * model server whose command has %s listens on DIR/sock, and only the
 * model user and the proxy may enter DIR.
 *
 * As root: BASE = ~proxy/agency-models.H (H hashes the control socket's
 * path: two agencyd on one host keep apart), root's, 0711, inside the
 * proxy's chroot.  Each model process gets DIR = BASE/XXXXXX (mkdtemp),
 * the model user's and the proxy group's, 02710 (the group may only
 * search; setgid gives the socket the proxy's group; the server's umask
 * 007 lets the group connect).  Models share one uid, so a directory
 * keeps their names apart, not one server from another's.  In user
 * mode BASE is beside the control socket, 0700, as is each DIR.
 *
 * What is under BASE is written by a model user agencyd does not trust:
 * it is removed through directory fds (unlinkat, openat O_NOFOLLOW),
 * never by a path a link could redirect, two levels deep.
 *
 * Calls: common/log.c.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sockdir.h"

#define SOCKDIR_PREFIX	"agency-models."
#define SOCKDIR_TMPL	"XXXXXX"

static void	rm_entries(int, int);

/* FNV-1a, 32 bits: a short name for the control socket's path. */
static uint32_t
name_hash(const char *s)
{
	uint32_t	 h = 2166136261U;

	for (; *s != '\0'; s++) {
		h ^= (unsigned char)*s;
		h *= 16777619U;
	}
	return (h);
}

/* Remove what directory dfd holds; depth: levels of directories more. */
static void
rm_entries(int dfd, int depth)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*dp;
	int		 fd, sub;

	if ((fd = dup(dfd)) == -1 || (dp = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		log_warn("%s: fdopendir", __func__);
		return;
	}
	while ((de = readdir(dp)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (!S_ISDIR(st.st_mode)) {
			if (unlinkat(dfd, de->d_name, 0) == -1)
				log_warn("%s: unlink %s", __func__,
				    de->d_name);
			continue;
		}
		if (depth > 0 && (sub = openat(dfd, de->d_name, O_RDONLY |
		    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) != -1) {
			rm_entries(sub, depth - 1);
			close(sub);
		}
		if (unlinkat(dfd, de->d_name, AT_REMOVEDIR) == -1)
			log_warn("%s: rmdir %s", __func__, de->d_name);
	}
	closedir(dp);
}

int
sockdir_init(struct sockdirs *sd, const char *ctlsock,
    const char *proxy_user, const char *model_user)
{
	struct passwd	*pw;
	struct stat	 st;
	char		 parent[PATH_MAX], *slash;
	size_t		 len;
	int		 fd;

	memset(sd, 0, sizeof(*sd));
	if (getuid() == 0) {
		if ((pw = getpwnam(model_user)) == NULL) {
			(void)snprintf(sd->why, sizeof(sd->why),
			    "model user %s does not exist", model_user);
			return (-1);
		}
		sd->model_uid = pw->pw_uid;
		sd->model_gid = pw->pw_gid;
		if ((pw = getpwnam(proxy_user)) == NULL) {
			(void)snprintf(sd->why, sizeof(sd->why),
			    "user %s does not exist", proxy_user);
			return (-1);
		}
		sd->proxy_gid = pw->pw_gid;
		sd->shared = 1;
		len = strlcpy(parent, pw->pw_dir, sizeof(parent));
		while (len > 1 && parent[len - 1] == '/')
			parent[--len] = '\0';
		/* The proxy sees its home as "/". */
		sd->strip = strcmp(parent, "/") == 0 ? 0 : len;
	} else {
		(void)strlcpy(parent, ctlsock, sizeof(parent));
		if ((slash = strrchr(parent, '/')) == NULL)
			(void)strlcpy(parent, ".", sizeof(parent));
		else if (slash == parent)
			parent[1] = '\0';
		else
			*slash = '\0';
	}
	if ((size_t)snprintf(sd->base, sizeof(sd->base), "%s%s%s%08x",
	    parent, strcmp(parent, "/") == 0 ? "" : "/", SOCKDIR_PREFIX,
	    name_hash(ctlsock)) >= sizeof(sd->base) ||
	    strlen(sd->base) + sizeof("/" SOCKDIR_TMPL "/" SOCKDIR_SOCK) >
	    PROTO_SOCK_MAX) {
		(void)snprintf(sd->why, sizeof(sd->why), "the directory of "
		    "the models' sockets, in %.40s, makes too long a socket "
		    "path", parent);
		sd->base[0] = '\0';
		return (-1);
	}

	/* Left by a run that ended without its shutdown: emptied. */
	if (mkdir(sd->base, 0700) == -1 && errno != EEXIST)
		goto fail;
	if ((fd = open(sd->base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		goto fail;
	if (fstat(fd, &st) == -1 || st.st_uid != getuid()) {
		errno = EPERM;
		close(fd);
		goto fail;
	}
	rm_entries(fd, 2);
	if (fchmod(fd, sd->shared ? 0711 : 0700) == -1) {
		close(fd);
		goto fail;
	}
	close(fd);
	log_info("the models' sockets are in %s", sd->base);
	return (0);
 fail:
	(void)snprintf(sd->why, sizeof(sd->why), "%.90s: %s", sd->base,
	    strerror(errno));
	sd->base[0] = '\0';
	return (-1);
}

int
sockdir_make(const struct sockdirs *sd, struct sockdir *m, char *err,
    size_t errlen)
{
	char	 dir[PATH_MAX];
	int	 fd;

	memset(m, 0, sizeof(*m));
	if (sd->base[0] == '\0') {
		(void)snprintf(err, errlen, "no socket directory: %s",
		    sd->why);
		return (-1);
	}
	if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", sd->base,
	    SOCKDIR_TMPL) >= sizeof(dir) || mkdtemp(dir) == NULL) {
		(void)snprintf(err, errlen, "mkdtemp %s: %s", dir,
		    strerror(errno));
		return (-1);
	}
	(void)strlcpy(m->dir, dir, sizeof(m->dir));
	/* Mode first, while it is still ours; then its owner. */
	if (sd->shared) {
		if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC)) == -1 ||
		    fchmod(fd, 02710) == -1 ||
		    fchown(fd, sd->model_uid, sd->proxy_gid) == -1) {
			(void)snprintf(err, errlen, "%s: %s", dir,
			    strerror(errno));
			if (fd != -1)
				close(fd);
			sockdir_remove(sd, m);
			return (-1);
		}
		close(fd);
	}
	/* sockdir_init saw that it fits. */
	if ((size_t)snprintf(m->server, sizeof(m->server), "%s/%s", dir,
	    SOCKDIR_SOCK) >= sizeof(m->server)) {
		(void)snprintf(err, errlen, "socket path too long");
		sockdir_remove(sd, m);
		return (-1);
	}
	(void)strlcpy(m->proxy, m->server + sd->strip, sizeof(m->proxy));
	return (0);
}

void
sockdir_remove(const struct sockdirs *sd, struct sockdir *m)
{
	const char	*name;
	int		 fd, sub;

	if (m->dir[0] == '\0')
		return;
	name = strrchr(m->dir, '/') + 1;
	if ((fd = open(sd->base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		if ((sub = openat(fd, name, O_RDONLY | O_DIRECTORY |
		    O_NOFOLLOW | O_CLOEXEC)) != -1) {
			rm_entries(sub, 1);
			close(sub);
		}
		if (unlinkat(fd, name, AT_REMOVEDIR) == -1 && errno != ENOENT)
			log_warn("%s: rmdir %s", __func__, m->dir);
		close(fd);
	}
	memset(m, 0, sizeof(*m));
}

void
sockdir_fini(struct sockdirs *sd)
{
	int	 fd;

	if (sd->base[0] == '\0')
		return;
	if ((fd = open(sd->base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) != -1) {
		rm_entries(fd, 2);
		close(fd);
	}
	if (rmdir(sd->base) == -1 && errno != ENOENT)
		log_warn("%s: rmdir %s", __func__, sd->base);
	sd->base[0] = '\0';
}
