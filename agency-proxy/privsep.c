/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Dropping privileges, before the proxy reads anything from anyone.
 *
 * Calls: common/log.c.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <grp.h>
#include <pwd.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proxy.h"

static void
limit(int resource, const char *name)
{
	struct rlimit	 rl;

	rl.rlim_cur = rl.rlim_max = 0;
	if (setrlimit(resource, &rl) == -1)
		fatal("%s: setrlimit %s", __func__, name);
}

void
privsep_drop(const char *user)
{
	struct passwd	*pw;
	struct stat	 st;
	uid_t		 ruid, euid, suid;
	gid_t		 rgid, egid, sgid;

	if (getuid() == 0 && user != NULL) {
		if ((pw = getpwnam(user)) == NULL)
			fatalx("%s: unknown user %s", __func__, user);
		if (stat(pw->pw_dir, &st) == -1)
			fatal("%s: stat %s", __func__, pw->pw_dir);
		if (!S_ISDIR(st.st_mode) || st.st_uid != 0 ||
		    (st.st_mode & (S_IWGRP | S_IWOTH)) != 0)
			fatalx("%s: %s must be a directory owned by root and "
			    "not writable by group or others", __func__,
			    pw->pw_dir);
		if (chroot(pw->pw_dir) == -1)
			fatal("%s: chroot %s", __func__, pw->pw_dir);
		if (chdir("/") == -1)
			fatal("%s: chdir /", __func__);
		if (setgroups(1, &pw->pw_gid) == -1 ||
		    setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) == -1 ||
		    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid) == -1)
			fatal("%s: cannot drop privileges to %s", __func__,
			    user);
		if (getresuid(&ruid, &euid, &suid) == -1 ||
		    getresgid(&rgid, &egid, &sgid) == -1)
			fatal("%s: getresuid", __func__);
		if (ruid != pw->pw_uid || euid != pw->pw_uid ||
		    suid != pw->pw_uid || rgid != pw->pw_gid ||
		    egid != pw->pw_gid || sgid != pw->pw_gid)
			fatalx("%s: still privileged after the switch",
			    __func__);
		if (setuid(0) != -1)
			fatalx("%s: could become root again", __func__);
		log_debug("%s: chrooted to %s as %s", __func__, pw->pw_dir,
		    user);
	} else if (getuid() == 0)
		log_warnx("running as root without a user to drop to: "
		    "no chroot, no user switch");
	else
		log_info("user mode: no chroot, no user switch");

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		fatal("%s: PR_SET_NO_NEW_PRIVS", __func__);
	limit(RLIMIT_NPROC, "RLIMIT_NPROC");
	limit(RLIMIT_FSIZE, "RLIMIT_FSIZE");
}
