/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * What agencyd gives up once it is running as root.  It still starts
 * model processes as their user and the proxy in its chroot, signals
 * them, binds listening sockets on reload (giving a Unix one its owner)
 * and reads model files to size them; every other capability leaves its
 * bounding set, so neither it nor anything it starts can have one
 * again.  It calls no other file of agencyd.
 *
 * Calls: common/log.c.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <linux/capability.h>

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "agencyd.h"
#include "log.h"

static const int	keep_caps[] = {
	CAP_CHOWN,		/* the owner of a Unix-socket listener */
	CAP_DAC_OVERRIDE,	/* config, include and model files */
	CAP_DAC_READ_SEARCH,
	CAP_KILL,		/* model processes run as another user */
	CAP_SETGID,		/* model processes and the proxy */
	CAP_SETUID,
	CAP_SYS_CHROOT,		/* the proxy, each time it starts */
	CAP_NET_BIND_SERVICE,	/* listen on a port below 1024 on reload */
};

static int
cap_kept(int cap)
{
	size_t	i;

	for (i = 0; i < sizeof(keep_caps) / sizeof(keep_caps[0]); i++)
		if (keep_caps[i] == cap)
			return (1);
	return (0);
}

uint64_t
agencyd_caps_kept(void)
{
	uint64_t	mask = 0;
	size_t		i;

	for (i = 0; i < sizeof(keep_caps) / sizeof(keep_caps[0]); i++)
		mask |= 1ULL << keep_caps[i];
	return (mask);
}

int
agencyd_drop_caps(void)
{
	struct __user_cap_header_struct	hdr;
	struct __user_cap_data_struct	data[2];
	int				cap, in;

	if (geteuid() != 0)
		return (0);	/* user mode: nothing to give up */

	/* The bounding set first: that needs CAP_SETPCAP, dropped below.
	 * What a service manager left out of it is gone already (and
	 * without CAP_SETPCAP it could not be dropped again). */
	for (cap = 0; (in = prctl(PR_CAPBSET_READ, cap, 0, 0, 0)) >= 0;
	    cap++) {
		if (cap_kept(cap) || in == 0)
			continue;
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == -1) {
			log_warn("%s: PR_CAPBSET_DROP %d", __func__, cap);
			return (-1);
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) == -1 &&
	    errno != EINVAL) {
		log_warn("%s: PR_CAP_AMBIENT_CLEAR_ALL", __func__);
		return (-1);
	}

	memset(&hdr, 0, sizeof(hdr));
	memset(data, 0, sizeof(data));
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	hdr.pid = 0;
	for (cap = 0; cap < 64; cap++) {
		/* Only what we have: capset refuses to add to it. */
		if (!cap_kept(cap) || prctl(PR_CAPBSET_READ, cap, 0, 0, 0) != 1)
			continue;
		data[cap / 32].effective |= 1U << (cap % 32);
		data[cap / 32].permitted |= 1U << (cap % 32);
	}
	if (syscall(SYS_capset, &hdr, data) == -1) {
		log_warn("%s: capset", __func__);
		return (-1);
	}
	log_debug("%s: kept capabilities 0x%llx", __func__,
	    (unsigned long long)agencyd_caps_kept());
	return (0);
}
