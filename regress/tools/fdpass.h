/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * For the attack tools (ctlattack, proxyattack): bytes sent with file
 * descriptors, as a peer that should send none would.
 */
#ifndef REGRESS_FDPASS_H
#define REGRESS_FDPASS_H

#include <sys/types.h>
#include <sys/socket.h>

#include <string.h>

#define FDPASS_MAX	16

/* sendmsg of len bytes with nfds copies of fd (at most FDPASS_MAX). */
static inline ssize_t
fdpass_send(int s, const void *buf, size_t len, int fd, int nfds)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cmsg;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
	} cmsgbuf;
	int		 i;

	if (nfds > FDPASS_MAX)
		nfds = FDPASS_MAX;
	memset(&msg, 0, sizeof(msg));
	memset(&cmsgbuf, 0, sizeof(cmsgbuf));
	iov.iov_base = (void *)(uintptr_t)buf;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cmsgbuf.buf;
	msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	for (i = 0; i < nfds; i++)
		memcpy(CMSG_DATA(cmsg) + i * sizeof(int), &fd, sizeof(int));
	return (sendmsg(s, &msg, MSG_NOSIGNAL));
}

#endif /* REGRESS_FDPASS_H */
