/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Preloaded into agencyd by a test: right after its SWAPLINK_AT-th call
 * that gives a file an owner (lchown or fchownat), the file at
 * SWAPLINK_PATH is moved to SWAPLINK_PATH.moved and a symlink to
 * SWAPLINK_TARGET put in its place, as a local user who may rename in
 * the directory could between two of agencyd's calls.  The race made
 * certain, so a test can tell whether agencyd then acts on the link.
 * The variable LD_PRELOAD is taken out at once, so that nothing agencyd
 * starts has the shim.
 */
#include <sys/types.h>

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int	calls;

__attribute__((constructor)) static void
swaplink_init(void)
{
	unsetenv("LD_PRELOAD");
}

static void
swaplink_after(void)
{
	const char	*path, *target, *at;
	char		 moved[4096];

	if ((path = getenv("SWAPLINK_PATH")) == NULL ||
	    (target = getenv("SWAPLINK_TARGET")) == NULL ||
	    (at = getenv("SWAPLINK_AT")) == NULL || ++calls != atoi(at))
		return;
	(void)snprintf(moved, sizeof(moved), "%s.moved", path);
	if (rename(path, moved) == -1 || symlink(target, path) == -1)
		perror("swaplink");
}

int
lchown(const char *path, uid_t uid, gid_t gid)
{
	int	(*real)(const char *, uid_t, gid_t);
	int	r;

	real = (int (*)(const char *, uid_t, gid_t))dlsym(RTLD_NEXT, "lchown");
	r = real(path, uid, gid);
	swaplink_after();
	return (r);
}

int
fchownat(int fd, const char *path, uid_t uid, gid_t gid, int flags)
{
	int	(*real)(int, const char *, uid_t, gid_t, int);
	int	r;

	real = (int (*)(int, const char *, uid_t, gid_t, int))
	    dlsym(RTLD_NEXT, "fchownat");
	r = real(fd, path, uid, gid, flags);
	swaplink_after();
	return (r);
}
