/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: the imsg reader (imsg_read, imsg_get and the
 * getters) on arbitrary byte streams over a unix socketpair, written in
 * chunks whose lengths come from the input, some carrying fds (a pipe
 * end, one or many a sendmsg), mixed with well-formed messages queued
 * with imsg_compose and sent with imsg_write.  The reader reads and
 * takes messages until an error or EOF, as the daemons do.
 *
 * An input of odd length is read as a control socket reads: fds
 * refused (imsg_refuse_fds).
 *
 * Each message taken is also read as every one of its possible senders'
 * (proto.c's typed reader; the configuration's by confimsg.c, in the
 * order the messages came, as the proxy reads them): a message that
 * reads is written back byte for byte the same (one way to write each
 * field), and a configuration received whole is freed with its sockets.
 *
 * Invariants: no crash, no leak, and every fd closed afterwards (the
 * process has as many fds open as before the run); a reader that
 * refuses fds never holds one, not even for a moment; the writer's count
 * of bytes queued is what its queue holds.
 *
 * Input: a sequence of operations, each an opcode byte and its bytes:
 *   0  raw chunk: a length byte, then that many bytes (fewer at the end)
 *   1  raw chunk with fds: a count byte (1..24 fds), a length byte, bytes
 *   2  compose: type, peerid and length bytes, a flag byte (bit 0: with
 *      an fd), then the payload
 *   3  let the reader read and take what it can
 *   4  the writer closes its end (EOF); the reader reads to the end
 * (the opcode is taken modulo 5; its high bits scale the lengths).
 *
 * FUZZ_WRITE_SEEDS=DIR writes seed streams into DIR and exits.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "imsg.h"
#include "log.h"
#include "msg.h"
#include "proto.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define MAX_FDS_A_CHUNK	24	/* above the reader's room (16) */

struct input {
	const uint8_t	*p;
	size_t		 left;
};

static int		 base_fds;
static int		 nofds;		/* the reader refuses fds */
static struct conf_recv	 crecv;		/* the configuration, as read */

static int
count_fds(void)
{
	DIR		*dir;
	struct dirent	*de;
	int		 n = 0;

	if ((dir = opendir("/proc/self/fd")) == NULL)
		err(1, "/proc/self/fd");
	while ((de = readdir(dir)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return (n - 1);		/* the directory's own */
}

static void
seed(const char *dir, int *n, const uint8_t *s, size_t len)
{
	char	path[1024];
	int	fd;

	(void)snprintf(path, sizeof(path), "%s/seed-%03d", dir, (*n)++);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    write(fd, s, len) != (ssize_t)len)
		err(1, "%s", path);
	close(fd);
}

#define SEED(...) do {							\
	static const uint8_t s_[] = { __VA_ARGS__ };			\
	seed(dir, &n, s_, sizeof(s_));					\
} while (0)

/* a header: type, len (little-endian, header included), flags */
#define HDR(t, l, f)	(t), 0, 0, 0, (l) & 0xff, (l) >> 8, 0, 0,	\
			0, 0, 0, 0, 0x10, 0x27, 0, 0, (f), 0, 0, 0

/* Valid streams: composed messages, with and without fds, big ones,
 * and the same bytes by hand, split inside a header and a payload. */
static void
write_seeds(const char *dir)
{
	int	n = 0;

	SEED(2, 1, 0, 16, 0, 'a', 'b', 'c', 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
	    11, 12, 3);
	SEED(2, 5, 1, 8, 1, 1, 2, 3, 4, 5, 6, 7, 8, 3, 2, 6, 2, 0, 0, 3,
	    2, 7, 3, 4, 1, 'x', 'y', 'z', 0, 4);
	SEED(252, 9, 0, 255, 0, 0xaa, 3, 252, 10, 0, 255, 1, 0xbb, 4);
	SEED(0, 20, HDR(3, 20, 0), 3, 0, 24, HDR(4, 24, 0), 1, 2, 3, 4, 3);
	SEED(0, 7, HDR(3, 28, 0), 3, 0, 0x15, 1, 2, 3, 4, 5, 6, 7, 8, 3,
	    4);
	SEED(1, 0, 20, HDR(5, 20, 1), 3, 1, 1, 20, HDR(5, 20, 1), 3);
	SEED(1, 20, 20, HDR(5, 20, 1), 3);		/* too many fds */
	SEED(0, 20, HDR(5, 20, 1), 3);			/* flag, no fd */
	SEED(0, 20, HDR(5, 0xff, 2), 3);		/* bad flags */
	SEED(0, 20, HDR(5, 0x11, 0), 4);		/* short len */
	/* typed: a hold release, a status request, a log line; the start
	 * of a configuration and its end */
	SEED(2, IMSG_HOLD_RELEASE, 0, 8, 0, 1, 0, 0, 0, 0, 0, 0, 0,
	    2, IMSG_STATUS_REQ, 0, 8, 0, 7, 0, 0, 0, 0, 0, 0, 0,
	    2, IMSG_LOG, 0, 7, 0, 6, 0, 0, 0, 'o', 'k', 0, 3);
	SEED(2, IMSG_CONF_END, 0, 0, 0, 3);
	exit(0);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char	*seeds;

	(void)argc;
	(void)argv;
	if ((seeds = getenv("FUZZ_WRITE_SEEDS")) != NULL)
		write_seeds(seeds);
	log_init(1, LOG_DAEMON);
	log_sethook(NULL);
	return (0);
}

static int
byte(struct input *in)
{
	if (in->left == 0)
		return (-1);
	in->left--;
	return (*in->p++);
}

static size_t
take(struct input *in, size_t want, const uint8_t **p)
{
	if (want > in->left)
		want = in->left;
	*p = in->p;
	in->p += want;
	in->left -= want;
	return (want);
}

static size_t
queued_bytes(struct imsgbuf *ibuf)
{
	struct ibuf	*buf;
	size_t		 n = 0;

	TAILQ_FOREACH(buf, &ibuf->w.bufs, entry)
		n += buf->wpos - buf->rpos;
	return (n);
}

/* A message read as each of its senders' by the typed readers. */
static void
typed(struct imsg *imsg)
{
	static const enum proto_from	 froms[] = { FROM_PARENT, FROM_PROXY,
					    FROM_CTL, FROM_AGENCYD };
	static struct msgw		 w;
	union proto_msg			 u;
	const char			*why;
	struct plisten			*l;
	uint32_t			 type = imsg_get_type(imsg);
	size_t				 i, len = imsg_get_len(imsg);

	for (i = 0; i < sizeof(froms) / sizeof(froms[0]); i++) {
		if (proto_read(imsg, froms[i], &u, sizeof(u), &why) == -1) {
			if (why == NULL)
				abort();
			continue;
		}
		/* what reads writes back as it came */
		if (proto_write(&w, froms[i], type, &u, proto_size(froms[i],
		    type)) == -1 || w.len != len ||
		    (len > 0 && memcmp(w.buf, imsg->data, len) != 0))
			abort();
	}
	if (type < IMSG_CONF_FIRST || type > IMSG_CONF_LAST)
		return;
	switch (config_recv(&crecv, imsg)) {
	case -1:
		if (crecv.why == NULL)
			abort();
		config_recv_clear(&crecv);
		break;
	case 1:
		TAILQ_FOREACH(l, &crecv.conf->listens, entry)
			close(l->fd);
		pconf_free(crecv.conf);
		crecv.conf = NULL;
		break;
	default:
		break;
	}
}

/* Check a message as a careful reader would, then let it go. */
static void
use(struct imsg *imsg, ssize_t n)
{
	char		 str[64];
	uint64_t	 word;
	struct stat	 st;
	size_t		 len = imsg_get_len(imsg);
	int		 fd;

	if (n < (ssize_t)IMSG_HEADER_SIZE || n > MAX_IMSGSIZE ||
	    (size_t)n != len + IMSG_HEADER_SIZE ||
	    (len > 0) != (imsg->data != NULL) ||
	    (imsg->hdr.flags & ~IMSGF_HASFD) != 0 ||
	    ((imsg->hdr.flags & IMSGF_HASFD) != 0) != (imsg->fd != -1))
		abort();
	(void)imsg_get_type(imsg);
	(void)imsg_get_id(imsg);
	(void)imsg_get_pid(imsg);
	if (imsg_get_data(imsg, &word, sizeof(word)) == 0 &&
	    len != sizeof(word))
		abort();
	if (imsg_get_string(imsg, str, sizeof(str)) == 0 &&
	    memchr(str, '\0', sizeof(str)) == NULL)
		abort();
	typed(imsg);
	if (imsg->fd != -1) {
		if (nofds)
			abort();
		/* A passed fd is a real, open one. */
		if (fstat(imsg->fd, &st) == -1)
			abort();
		/* Half of them the caller takes; imsg_free closes the rest. */
		if (len & 1) {
			fd = imsg_get_fd(imsg);
			if (imsg->fd != -1)
				abort();
			close(fd);
		}
	}
	imsg_free(imsg);
}

/* Read and take messages: 0 to go on, -1 once the channel is done. */
static int
drain(struct imsgbuf *r)
{
	struct imsg	 imsg;
	ssize_t		 n, got;

	for (;;) {
		n = imsg_read(r);
		if (nofds && !TAILQ_EMPTY(&r->fds))
			abort();
		if (n == 0)
			return (-1);		/* EOF */
		if (n == -1) {
			/* A reader that takes every whole message never
			 * fills its buffer. */
			if (errno == ENOBUFS)
				abort();
			if (errno != EAGAIN)
				return (-1);
		}
		for (;;) {
			if ((got = imsg_get(r, &imsg)) == -1)
				return (-1);	/* broken peer: drop */
			if (got == 0)
				break;
			use(&imsg, got);
		}
		if (n == -1)
			return (0);		/* nothing more for now */
	}
}

static int
send_raw(int s, const uint8_t *p, size_t len, int fd, int nfds)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cmsg;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * MAX_FDS_A_CHUNK)];
	} cmsgbuf;
	int		 i;

	memset(&msg, 0, sizeof(msg));
	iov.iov_base = (void *)(uintptr_t)p;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (nfds > 0) {
		memset(&cmsgbuf, 0, sizeof(cmsgbuf));
		msg.msg_control = cmsgbuf.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		for (i = 0; i < nfds; i++)
			memcpy(CMSG_DATA(cmsg) + i * sizeof(int), &fd,
			    sizeof(int));
	}
	return (sendmsg(s, &msg, MSG_NOSIGNAL) == -1 ? -1 : 0);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input	 in = { data, size };
	struct imsgbuf	 r, w;
	const uint8_t	*p;
	uint8_t		 payload[MAX_IMSGSIZE];
	int		 sp[2], pp[2], op, c, nfds, done = 0, wclosed = 0;
	uint32_t	 type, peerid;
	size_t		 len, got;

	/* Counted each run: libFuzzer opens files of its own. */
	base_fds = count_fds();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0, sp) == -1 || pipe2(pp, O_CLOEXEC) == -1)
		err(1, "socketpair/pipe");
	imsg_init(&r, sp[0]);
	imsg_init(&w, sp[1]);
	if ((nofds = size & 1))
		imsg_refuse_fds(&r);

	while (!done && (op = byte(&in)) != -1) {
		switch (op % 5) {
		case 0:
		case 1:
			nfds = 0;
			if (op % 5 == 1) {
				if ((c = byte(&in)) == -1)
					break;
				nfds = 1 + c % MAX_FDS_A_CHUNK;
			}
			if ((c = byte(&in)) == -1)
				break;
			len = take(&in, (size_t)c * ((op >> 4) + 1), &p);
			if (len == 0 || wclosed)
				break;
			if (send_raw(sp[1], p, len, pp[0], nfds) == -1 &&
			    errno == EAGAIN) {
				if (drain(&r) == -1)
					done = 1;
				else
					(void)send_raw(sp[1], p, len, pp[0],
					    nfds);
			}
			break;
		case 2:
			if ((c = byte(&in)) == -1)
				break;
			type = c;
			if ((c = byte(&in)) == -1)
				break;
			peerid = c;
			if ((c = byte(&in)) == -1)
				break;
			len = (size_t)c * ((op >> 3) + 1);
			if ((c = byte(&in)) == -1)
				break;
			memset(payload, 0, sizeof(payload));
			if (len > sizeof(payload))
				len = sizeof(payload);
			if ((got = take(&in, len, &p)) > 0)
				memcpy(payload, p, got);
			if (wclosed)
				break;
			{
				int	fd = -1;

				if ((c & 1) && (fd = dup(pp[1])) == -1)
					err(1, "dup");
				if (imsg_compose(&w, type, peerid, 0, fd,
				    payload, len) == -1) {
					if (len + IMSG_HEADER_SIZE <=
					    MAX_IMSGSIZE)
						abort();
					if (fd != -1)
						close(fd);
				}
			}
			if (w.w.qbytes != queued_bytes(&w))
				abort();
			/* Write what the socket takes; the rest waits. */
			while (w.w.queued > 0) {
				if (imsg_write(&w) != 1)
					break;
				if (w.w.qbytes != queued_bytes(&w))
					abort();
				if (w.w.queued > 0 && drain(&r) == -1) {
					done = 1;
					break;
				}
			}
			break;
		case 3:
			if (drain(&r) == -1)
				done = 1;
			break;
		case 4:
			if (!wclosed) {
				imsg_clear(&w);
				close(sp[1]);
				wclosed = 1;
			}
			while (!done)
				if (drain(&r) == -1)
					done = 1;
			break;
		default:
			abort();
		}
	}
	if (!done)
		(void)drain(&r);

	config_recv_clear(&crecv);
	imsg_clear(&r);
	imsg_clear(&w);
	close(sp[0]);
	if (!wclosed)
		close(sp[1]);
	close(pp[0]);
	close(pp[1]);
	if (count_fds() != base_fds) {
		fprintf(stderr, "fds open: %d, before: %d\n", count_fds(),
		    base_fds);
		abort();
	}
	return (0);
}
