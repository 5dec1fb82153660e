/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency's own imsg: framed messages with an optional passed fd over a
 * unix stream socket, in the shape of OpenBSD's imsg(3) API.
 *
 * A message is a header (type, len, peerid, pid, flags; len counts the
 * header) and len - IMSG_HEADER_SIZE bytes of payload.  Messages larger
 * than MAX_IMSGSIZE are refused on both sides.
 *
 * Passed fds: the sender sets IMSGF_HASFD and sends the fd with the
 * first byte of its message, one fd a sendmsg.  The receiver queues fds
 * in arrival order and each IMSGF_HASFD message takes the oldest.  A
 * flagged message without a queued fd, an fd no message claims, or an
 * unknown flag is a broken peer: imsg_get fails with EBADMSG.
 *
 * A channel that must carry no fds at all (a control socket: its clients
 * are not trusted) says so with imsg_refuse_fds: fds that come anyway are
 * never installed (the kernel drops them) and imsg_read fails with
 * EBADMSG.
 *
 * imsg_init leaves the socket's mode alone: on a blocking socket
 * imsg_read and imsg_write block.  imsgev_init makes it non-blocking.
 */
#ifndef AGENCY_IMSG_H
#define AGENCY_IMSG_H

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/uio.h>

#include <event.h>
#include <stdint.h>

#define MAX_IMSGSIZE		16384
#define IMSG_READ_BUFSIZE	65536

struct imsg_hdr {
	uint32_t	type;
	uint32_t	len;		/* header included */
	uint32_t	peerid;
	uint32_t	pid;
	uint32_t	flags;		/* IMSGF_* */
};
#define IMSG_HEADER_SIZE	sizeof(struct imsg_hdr)
#define IMSGF_HASFD		0x1	/* an fd came with the first byte */

/* One queued outgoing message. */
struct ibuf {
	TAILQ_ENTRY(ibuf)	 entry;
	unsigned char		*buf;
	size_t			 size;
	size_t			 wpos;		/* bytes filled */
	size_t			 rpos;		/* bytes written out */
	int			 fd;		/* to pass, or -1 */
};

struct msgbuf {
	TAILQ_HEAD(, ibuf)	 bufs;
	uint32_t		 queued;	/* messages */
	size_t			 qbytes;	/* bytes not yet written */
	int			 fd;
};

/* Received fds waiting for the message they came with. */
struct imsg_fd {
	TAILQ_ENTRY(imsg_fd)	 entry;
	int			 fd;
};

struct imsgbuf {
	TAILQ_HEAD(, imsg_fd)	 fds;
	unsigned char		 rbuf[IMSG_READ_BUFSIZE];
	size_t			 roff;		/* first byte not handed out */
	size_t			 rlen;		/* bytes in rbuf, from 0 */
	struct msgbuf		 w;
	int			 fd;
	pid_t			 pid;
	int			 nofds;		/* imsg_refuse_fds */
};

struct imsg {
	struct imsg_hdr		 hdr;
	int			 fd;		/* passed with it, or -1 */
	void			*data;		/* payload, or NULL */
};

void	 imsg_init(struct imsgbuf *, int);
void	 imsg_refuse_fds(struct imsgbuf *);
/* -1 with errno (EAGAIN when nothing to read yet, ENOBUFS when the read
 * buffer is full because imsg_get was not called), 0 at EOF, else bytes */
ssize_t	 imsg_read(struct imsgbuf *);
/* -1 with EBADMSG for a broken peer (bad length, flags or fds: drop it),
 * 0 when no whole message is buffered yet, else the message's len */
ssize_t	 imsg_get(struct imsgbuf *, struct imsg *);
/* As imsg_get, but only the header, and the message stays for imsg_get */
ssize_t	 imsg_peek(struct imsgbuf *, struct imsg_hdr *);
/* Bytes of a message begun and not yet all read (0: none begun). */
size_t	 imsg_partial(const struct imsgbuf *);
/* 1 when queued, -1 with errno (ERANGE when over MAX_IMSGSIZE).  A pid
 * of 0 sends our own (getpid() at imsg_init).
 * The fd (or -1) is the buffer's on success and closed once sent; on
 * failure it stays the caller's. */
int	 imsg_compose(struct imsgbuf *, uint32_t, uint32_t, pid_t, int,
	    const void *, size_t);
int	 imsg_composev(struct imsgbuf *, uint32_t, uint32_t, pid_t, int,
	    const struct iovec *, int);
/* -1 with errno on error, 0 when the peer closed, 1 after progress; a
 * socket that would block is progress of nothing and keeps the queue. */
int	 imsg_write(struct imsgbuf *);
/* Write until the queue is empty, polling while the socket is full:
 * 0, or -1 with errno (EPIPE when the peer closed). */
int	 imsg_flush(struct imsgbuf *);
void	 imsg_free(struct imsg *);		/* closes an fd not taken */
void	 imsg_clear(struct imsgbuf *);		/* drops queues, closes fds */

uint32_t imsg_get_type(const struct imsg *);
uint32_t imsg_get_id(const struct imsg *);
pid_t	 imsg_get_pid(const struct imsg *);
size_t	 imsg_get_len(const struct imsg *);	/* payload bytes */
int	 imsg_get_fd(struct imsg *);		/* the caller owns it */
/* 0 when the payload is exactly that many bytes, else -1 with EBADMSG */
int	 imsg_get_data(const struct imsg *, void *, size_t);
/* 0 when the payload fits the buffer and holds a NUL (the string ends at
 * the first one), else -1 with EBADMSG. */
int	 imsg_get_string(const struct imsg *, char *, size_t);

/*
 * libevent glue, on the default base (call event_init first), as the
 * daemons use it: write events are asked for only while messages are
 * queued.  The handler is called with EV_READ and/or EV_WRITE and the
 * data given to imsgev_init (pass the imsgev or what holds it).  The
 * event is persistent, changed only when the events wanted change:
 * imsgev_io and imsgev_compose adjust it to the queue, and a handler
 * that composes with imsg_compose calls imsgev_add.
 * imsgev_clear does not close the socket; its owner does.
 */
struct imsgev {
	struct imsgbuf		 ibuf;
	void			(*handler)(int, short, void *);
	struct event		 ev;
	void			*data;
	short			 events;
	int			 rpaused;	/* imsgev_pause */
};

void	 imsgev_init(struct imsgev *, int, void (*)(int, short, void *),
	    void *);
void	 imsgev_add(struct imsgev *);		/* (re)arm for the queue */
/* 1: stop asking for EV_READ (a peer that must first read what it was
 * sent: backpressure), 0: ask again.  Takes effect at once. */
void	 imsgev_pause(struct imsgev *, int);
void	 imsgev_clear(struct imsgev *);		/* del event, free queues */
int	 imsgev_compose(struct imsgev *, uint32_t, uint32_t, pid_t, int,
	    const void *, size_t);
/* Default I/O for a handler: read or write as the event says.  Returns
 * -1 when the channel is dead (error or EOF), else 0. */
int	 imsgev_io(struct imsgev *, short);

#endif /* AGENCY_IMSG_H */
