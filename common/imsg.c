/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency's own imsg: framing, fd passing and buffering for messages over
 * a unix stream socket.  See imsg.h for the rules.
 *
 * Calls: log.c.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imsg.h"
#include "log.h"

/* iovecs a sendmsg; well below IOV_MAX */
#define IMSG_IOV_BATCH		64
/*
 * A well-behaved peer sends one fd a sendmsg and Linux hands out at most
 * one fd-carrying chunk a recvmsg; the room for more is for a peer that
 * does otherwise, whose fds we then close instead of losing track.
 */
#define IMSG_CMSG_FDS		16

/* What msgbuf_write did, told apart for imsg_flush. */
#define WRITE_ERROR		-1
#define WRITE_CLOSED		0
#define WRITE_PROGRESS		1
#define WRITE_BLOCKED		2

static int	 msgbuf_write(struct msgbuf *);
static void	 msgbuf_clear(struct msgbuf *);
static void	 ibuf_free(struct ibuf *);
static int	 imsg_queue_fd(struct imsgbuf *, int);
static void	 imsg_close_fds(struct imsgbuf *);

void
imsg_init(struct imsgbuf *ibuf, int fd)
{
	/* rbuf needs no clearing: only rlen bytes of it are ever read */
	TAILQ_INIT(&ibuf->fds);
	ibuf->roff = 0;
	ibuf->rlen = 0;
	TAILQ_INIT(&ibuf->w.bufs);
	ibuf->w.queued = 0;
	ibuf->w.qbytes = 0;
	ibuf->w.fd = fd;
	ibuf->fd = fd;
	ibuf->pid = getpid();
	ibuf->nofds = 0;
}

void
imsg_refuse_fds(struct imsgbuf *ibuf)
{
	ibuf->nofds = 1;
}

static int
imsg_queue_fd(struct imsgbuf *ibuf, int fd)
{
	struct imsg_fd	*ifd;

	if ((ifd = calloc(1, sizeof(*ifd))) == NULL)
		return (-1);
	ifd->fd = fd;
	TAILQ_INSERT_TAIL(&ibuf->fds, ifd, entry);
	return (0);
}

static void
imsg_close_fds(struct imsgbuf *ibuf)
{
	struct imsg_fd	*ifd;

	while ((ifd = TAILQ_FIRST(&ibuf->fds)) != NULL) {
		TAILQ_REMOVE(&ibuf->fds, ifd, entry);
		close(ifd->fd);
		free(ifd);
	}
}

ssize_t
imsg_read(struct imsgbuf *ibuf)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cmsg;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * IMSG_CMSG_FDS)];
	} cmsgbuf;
	ssize_t		 n;
	size_t		 i, nfds;
	int		 fd, bad = 0;

	/* Move what is left of a message to the front to make room. */
	if (ibuf->roff > 0) {
		memmove(ibuf->rbuf, ibuf->rbuf + ibuf->roff,
		    ibuf->rlen - ibuf->roff);
		ibuf->rlen -= ibuf->roff;
		ibuf->roff = 0;
	}
	/*
	 * Only read when there is room: a read of 0 bytes would look like
	 * EOF, and fds must come with the bytes they belong to.  MAX_IMSGSIZE
	 * is far below the buffer, so a reader that calls imsg_get until it
	 * returns 0 never gets here.
	 */
	if (ibuf->rlen >= sizeof(ibuf->rbuf)) {
		errno = ENOBUFS;
		return (-1);
	}

	memset(&msg, 0, sizeof(msg));
	memset(&cmsgbuf, 0, sizeof(cmsgbuf));
	iov.iov_base = ibuf->rbuf + ibuf->rlen;
	iov.iov_len = sizeof(ibuf->rbuf) - ibuf->rlen;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	/*
	 * With no room for control data the kernel installs none of the
	 * fds that came: it closes them and says MSG_CTRUNC.  They never
	 * take a slot of our fd table, however many a peer sends.
	 */
	if (!ibuf->nofds) {
		msg.msg_control = cmsgbuf.buf;
		msg.msg_controllen = sizeof(cmsgbuf.buf);
	}

	do {
		n = recvmsg(ibuf->fd, &msg, MSG_CMSG_CLOEXEC);
	} while (n == -1 && errno == EINTR);
	if (n == -1)
		return (-1);
	if (ibuf->nofds) {
		if (msg.msg_flags & MSG_CTRUNC) {
			errno = EBADMSG;
			return (-1);
		}
		ibuf->rlen += n;
		return (n);
	}

	for (cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL;
	    cmsg = CMSG_NXTHDR(&msg, cmsg)) {
		if (cmsg->cmsg_level != SOL_SOCKET ||
		    cmsg->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nfds; i++) {
			memcpy(&fd, CMSG_DATA(cmsg) + i * sizeof(int),
			    sizeof(fd));
			if (bad || imsg_queue_fd(ibuf, fd) == -1) {
				close(fd);
				bad = 1;
			}
		}
	}
	/* The bytes count even if an fd was lost: the channel is broken
	 * either way, and the caller learns it now. */
	ibuf->rlen += n;
	if (bad) {
		errno = ENOMEM;
		return (-1);
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		/* The kernel closed fds we had no room for. */
		errno = EBADMSG;
		return (-1);
	}
	return (n);
}

ssize_t
imsg_peek(struct imsgbuf *ibuf, struct imsg_hdr *hdr)
{
	size_t	 avail = ibuf->rlen - ibuf->roff;

	if (avail < IMSG_HEADER_SIZE)
		return (0);
	memcpy(hdr, ibuf->rbuf + ibuf->roff, sizeof(*hdr));
	if (hdr->len < IMSG_HEADER_SIZE || hdr->len > MAX_IMSGSIZE ||
	    (hdr->flags & ~IMSGF_HASFD) != 0) {
		errno = EBADMSG;
		return (-1);
	}
	if (avail < hdr->len)
		return (0);
	return (hdr->len);
}

size_t
imsg_partial(const struct imsgbuf *ibuf)
{
	return (ibuf->rlen - ibuf->roff);
}

ssize_t
imsg_get(struct imsgbuf *ibuf, struct imsg *imsg)
{
	struct imsg_hdr	 hdr;
	struct imsg_fd	*ifd;
	size_t		 avail, datalen;
	ssize_t		 n;
	void		*data = NULL;

	avail = ibuf->rlen - ibuf->roff;
	/*
	 * An fd arrives with its message's first byte, so one queued while
	 * no message is even begun belongs to none.
	 */
	if (avail == 0 && !TAILQ_EMPTY(&ibuf->fds)) {
		imsg_close_fds(ibuf);
		errno = EBADMSG;
		return (-1);
	}
	if ((n = imsg_peek(ibuf, &hdr)) <= 0)
		return (n);
	if ((hdr.flags & IMSGF_HASFD) && TAILQ_EMPTY(&ibuf->fds)) {
		errno = EBADMSG;
		return (-1);
	}

	datalen = hdr.len - IMSG_HEADER_SIZE;
	if (datalen > 0) {
		if ((data = malloc(datalen)) == NULL)
			return (-1);
		memcpy(data, ibuf->rbuf + ibuf->roff + IMSG_HEADER_SIZE,
		    datalen);
	}

	memset(imsg, 0, sizeof(*imsg));
	imsg->hdr = hdr;
	imsg->data = data;
	imsg->fd = -1;
	if (hdr.flags & IMSGF_HASFD) {
		ifd = TAILQ_FIRST(&ibuf->fds);
		TAILQ_REMOVE(&ibuf->fds, ifd, entry);
		imsg->fd = ifd->fd;
		free(ifd);
	}

	ibuf->roff += hdr.len;
	if (ibuf->roff == ibuf->rlen)
		ibuf->roff = ibuf->rlen = 0;
	return (hdr.len);
}

int
imsg_compose(struct imsgbuf *ibuf, uint32_t type, uint32_t peerid,
    pid_t pid, int fd, const void *data, size_t datalen)
{
	struct iovec	 iov;

	/* composev takes const iovecs but iov_base is not const */
	iov.iov_base = (void *)(uintptr_t)data;
	iov.iov_len = datalen;
	return (imsg_composev(ibuf, type, peerid, pid, fd, &iov,
	    datalen > 0 ? 1 : 0));
}

int
imsg_composev(struct imsgbuf *ibuf, uint32_t type, uint32_t peerid,
    pid_t pid, int fd, const struct iovec *iov, int iovcnt)
{
	struct imsg_hdr	 hdr;
	struct ibuf	*buf;
	size_t		 len = IMSG_HEADER_SIZE;
	int		 i;

	if (iovcnt < 0 || (iovcnt > 0 && iov == NULL)) {
		errno = EINVAL;
		return (-1);
	}
	/* Checked one iovec at a time so the sum cannot wrap. */
	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > MAX_IMSGSIZE - len) {
			errno = ERANGE;
			return (-1);
		}
		len += iov[i].iov_len;
	}

	if ((buf = calloc(1, sizeof(*buf))) == NULL)
		return (-1);
	if ((buf->buf = malloc(len)) == NULL) {
		free(buf);
		return (-1);
	}
	memset(&hdr, 0, sizeof(hdr));
	hdr.type = type;
	hdr.len = len;
	hdr.peerid = peerid;
	hdr.pid = pid != 0 ? (uint32_t)pid : (uint32_t)ibuf->pid;
	hdr.flags = fd != -1 ? IMSGF_HASFD : 0;
	memcpy(buf->buf, &hdr, sizeof(hdr));
	buf->wpos = sizeof(hdr);
	for (i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len == 0)
			continue;
		memcpy(buf->buf + buf->wpos, iov[i].iov_base, iov[i].iov_len);
		buf->wpos += iov[i].iov_len;
	}
	buf->size = len;
	buf->rpos = 0;
	buf->fd = fd;

	TAILQ_INSERT_TAIL(&ibuf->w.bufs, buf, entry);
	ibuf->w.queued++;
	ibuf->w.qbytes += len;
	return (1);
}

static void
ibuf_free(struct ibuf *buf)
{
	if (buf->fd != -1)
		close(buf->fd);
	free(buf->buf);
	free(buf);
}

static int
msgbuf_write(struct msgbuf *w)
{
	struct iovec	 iov[IMSG_IOV_BATCH];
	struct msghdr	 msg;
	struct cmsghdr	*cmsg;
	struct ibuf	*buf, *next, *fdbuf = NULL;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cmsgbuf;
	ssize_t		 n;
	size_t		 left;
	int		 i = 0;

	if (TAILQ_EMPTY(&w->bufs))
		return (WRITE_PROGRESS);

	memset(&msg, 0, sizeof(msg));
	memset(&cmsgbuf, 0, sizeof(cmsgbuf));
	TAILQ_FOREACH(buf, &w->bufs, entry) {
		if (i >= IMSG_IOV_BATCH)
			break;
		/*
		 * An fd goes with the first byte of its message, so a message
		 * with one starts a sendmsg of its own.  The fd is closed once
		 * that byte is out, so a half-sent message has none left.
		 */
		if (buf->fd != -1) {
			if (i > 0)
				break;
			fdbuf = buf;
		}
		iov[i].iov_base = buf->buf + buf->rpos;
		iov[i].iov_len = buf->wpos - buf->rpos;
		i++;
	}
	msg.msg_iov = iov;
	msg.msg_iovlen = i;
	if (fdbuf != NULL) {
		msg.msg_control = cmsgbuf.buf;
		msg.msg_controllen = sizeof(cmsgbuf.buf);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		memcpy(CMSG_DATA(cmsg), &fdbuf->fd, sizeof(int));
	}

	do {
		n = sendmsg(w->fd, &msg, MSG_NOSIGNAL);
	} while (n == -1 && errno == EINTR);
	if (n == -1) {
		switch (errno) {
		case EAGAIN:
#if EWOULDBLOCK != EAGAIN
		case EWOULDBLOCK:
#endif
		case ENOBUFS:
			return (WRITE_BLOCKED);
		case EPIPE:
		case ECONNRESET:
			return (WRITE_CLOSED);
		default:
			return (WRITE_ERROR);
		}
	}

	if (fdbuf != NULL) {
		close(fdbuf->fd);
		fdbuf->fd = -1;
	}
	left = n;
	w->qbytes -= n;
	for (buf = TAILQ_FIRST(&w->bufs); buf != NULL && left > 0;
	    buf = next) {
		next = TAILQ_NEXT(buf, entry);
		if (left < buf->wpos - buf->rpos) {
			buf->rpos += left;
			break;
		}
		left -= buf->wpos - buf->rpos;
		TAILQ_REMOVE(&w->bufs, buf, entry);
		w->queued--;
		ibuf_free(buf);
	}
	return (WRITE_PROGRESS);
}

int
imsg_write(struct imsgbuf *ibuf)
{
	switch (msgbuf_write(&ibuf->w)) {
	case WRITE_ERROR:
		return (-1);
	case WRITE_CLOSED:
		return (0);
	case WRITE_PROGRESS:
	case WRITE_BLOCKED:
		return (1);
	default:
		errno = EINVAL;
		return (-1);
	}
}

int
imsg_flush(struct imsgbuf *ibuf)
{
	struct pollfd	 pfd;

	while (ibuf->w.queued > 0) {
		switch (msgbuf_write(&ibuf->w)) {
		case WRITE_ERROR:
			return (-1);
		case WRITE_CLOSED:
			errno = EPIPE;
			return (-1);
		case WRITE_PROGRESS:
			break;
		case WRITE_BLOCKED:
			pfd.fd = ibuf->w.fd;
			pfd.events = POLLOUT;
			pfd.revents = 0;
			if (poll(&pfd, 1, -1) == -1 && errno != EINTR)
				return (-1);
			break;
		default:
			errno = EINVAL;
			return (-1);
		}
	}
	return (0);
}

void
imsg_free(struct imsg *imsg)
{
	if (imsg->fd != -1) {
		close(imsg->fd);
		imsg->fd = -1;
	}
	free(imsg->data);
	imsg->data = NULL;
}

static void
msgbuf_clear(struct msgbuf *w)
{
	struct ibuf	*buf;

	while ((buf = TAILQ_FIRST(&w->bufs)) != NULL) {
		TAILQ_REMOVE(&w->bufs, buf, entry);
		ibuf_free(buf);
	}
	w->queued = 0;
	w->qbytes = 0;
}

void
imsg_clear(struct imsgbuf *ibuf)
{
	msgbuf_clear(&ibuf->w);
	imsg_close_fds(ibuf);
	ibuf->roff = ibuf->rlen = 0;
}

uint32_t
imsg_get_type(const struct imsg *imsg)
{
	return (imsg->hdr.type);
}

uint32_t
imsg_get_id(const struct imsg *imsg)
{
	return (imsg->hdr.peerid);
}

pid_t
imsg_get_pid(const struct imsg *imsg)
{
	return ((pid_t)imsg->hdr.pid);
}

size_t
imsg_get_len(const struct imsg *imsg)
{
	return (imsg->hdr.len - IMSG_HEADER_SIZE);
}

int
imsg_get_fd(struct imsg *imsg)
{
	int	 fd = imsg->fd;

	imsg->fd = -1;
	return (fd);
}

int
imsg_get_data(const struct imsg *imsg, void *data, size_t len)
{
	if (imsg_get_len(imsg) != len) {
		errno = EBADMSG;
		return (-1);
	}
	if (len > 0)
		memcpy(data, imsg->data, len);
	return (0);
}

int
imsg_get_string(const struct imsg *imsg, char *str, size_t size)
{
	size_t	 len = imsg_get_len(imsg);

	if (len == 0 || len > size ||
	    memchr(imsg->data, '\0', len) == NULL) {
		errno = EBADMSG;
		return (-1);
	}
	memcpy(str, imsg->data, len);
	return (0);
}

void
imsgev_init(struct imsgev *iev, int fd, void (*handler)(int, short, void *),
    void *data)
{
	int	 flags;

	imsg_init(&iev->ibuf, fd);
	iev->handler = handler;
	iev->data = data;
	iev->events = EV_READ;
	iev->rpaused = 0;
	if ((flags = fcntl(fd, F_GETFL)) == -1 ||
	    fcntl(fd, F_SETFL, flags | O_NONBLOCK) == -1)
		fatal("%s: fcntl", __func__);
	event_set(&iev->ev, fd, iev->events, iev->handler, iev->data);
}

/*
 * The event is persistent and only changed when the events wanted
 * change: each event_del and event_add is an epoll_ctl, and a busy
 * channel re-arms for every message it sends or reads.
 */
void
imsgev_add(struct imsgev *iev)
{
	short	 events = iev->rpaused ? 0 : EV_READ;

	if (iev->ibuf.w.queued > 0)
		events |= EV_WRITE;
	if (events == iev->events &&
	    event_pending(&iev->ev, events, NULL) == events)
		return;
	event_del(&iev->ev);
	iev->events = events;
	if (events == 0)
		return;		/* nothing to wait for until unpaused */
	event_set(&iev->ev, iev->ibuf.fd, events | EV_PERSIST, iev->handler,
	    iev->data);
	if (event_add(&iev->ev, NULL) == -1)
		fatalx("%s: event_add", __func__);
}

void
imsgev_pause(struct imsgev *iev, int on)
{
	iev->rpaused = on;
	imsgev_add(iev);
}

void
imsgev_clear(struct imsgev *iev)
{
	event_del(&iev->ev);
	imsg_clear(&iev->ibuf);
	iev->events = 0;
}

int
imsgev_compose(struct imsgev *iev, uint32_t type, uint32_t peerid,
    pid_t pid, int fd, const void *data, size_t datalen)
{
	int	 ret;

	if ((ret = imsg_compose(&iev->ibuf, type, peerid, pid, fd, data,
	    datalen)) != -1)
		imsgev_add(iev);
	return (ret);
}

int
imsgev_io(struct imsgev *iev, short event)
{
	ssize_t	 n;

	if (event & EV_READ) {
		n = imsg_read(&iev->ibuf);
		if (n == -1 && errno != EAGAIN) {
			log_warn("%s: read", __func__);
			return (-1);
		}
		if (n == 0)
			return (-1);
	}
	if (event & EV_WRITE) {
		switch (imsg_write(&iev->ibuf)) {
		case -1:
			log_warn("%s: write", __func__);
			return (-1);
		case 0:
			return (-1);
		default:
			break;
		}
	}
	imsgev_add(iev);
	return (0);
}
