/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Unit tests for common/imsg.c: framing, partial reads and writes, fd
 * passing, hostile headers, payload getters and the libevent glue.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <atf-c.h>
#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imsg.h"

/* Bounds for loops that wait on sockets, so a bug fails, not hangs. */
#define SPIN_MAX	100000

static void
mkpair(int sv[2])
{
	ATF_REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
}

static void
nonblock(int fd)
{
	int	 flags;

	ATF_REQUIRE((flags = fcntl(fd, F_GETFL)) != -1);
	ATF_REQUIRE(fcntl(fd, F_SETFL, flags | O_NONBLOCK) != -1);
}

static int
is_closed(int fd)
{
	return (fcntl(fd, F_GETFD) == -1 && errno == EBADF);
}

/* A pipe whose read end does not block, so a leaked writer shows up as
 * EAGAIN instead of a hang. */
static void
mkpipe(int p[2])
{
	ATF_REQUIRE(pipe(p) == 0);
	nonblock(p[0]);
}

/* 0 when every writer of the pipe is closed (EOF), else -1. */
static int
pipe_eof(int rfd)
{
	char	 c;

	return (read(rfd, &c, 1) == 0 ? 0 : -1);
}

/* Send raw bytes, and an fd if not -1, as a broken or hostile peer would. */
static void
send_raw(int sock, const void *buf, size_t len, int fd)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cmsg;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cmsgbuf;

	memset(&msg, 0, sizeof(msg));
	memset(&cmsgbuf, 0, sizeof(cmsgbuf));
	iov.iov_base = (void *)(uintptr_t)buf;
	iov.iov_len = len;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	if (fd != -1) {
		msg.msg_control = cmsgbuf.buf;
		msg.msg_controllen = sizeof(cmsgbuf.buf);
		cmsg = CMSG_FIRSTHDR(&msg);
		cmsg->cmsg_len = CMSG_LEN(sizeof(int));
		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
	}
	ATF_REQUIRE(sendmsg(sock, &msg, 0) == (ssize_t)len);
}

static void
send_hdr(int sock, uint32_t type, uint32_t len, uint32_t flags, int fd)
{
	struct imsg_hdr	 hdr;

	memset(&hdr, 0, sizeof(hdr));
	hdr.type = type;
	hdr.len = len;
	hdr.flags = flags;
	send_raw(sock, &hdr, sizeof(hdr), fd);
}

/* Bytes still queued for writing. */
static size_t
queued_bytes(struct imsgbuf *ibuf)
{
	struct ibuf	*buf;
	size_t		 n = 0;

	TAILQ_FOREACH(buf, &ibuf->w.bufs, entry)
		n += buf->wpos - buf->rpos;
	return (n);
}

static void
fill(unsigned char *p, size_t len, unsigned int seed)
{
	size_t	 i;

	for (i = 0; i < len; i++)
		p[i] = (seed * 31 + i) & 0xff;
}

static int
check_fill(const unsigned char *p, size_t len, unsigned int seed)
{
	size_t	 i;

	for (i = 0; i < len; i++)
		if (p[i] != ((seed * 31 + i) & 0xff))
			return (-1);
	return (0);
}

/*
 * Get one message that is already on its way: the reader does not block
 * and every read must bring bytes, so a lost message fails, not hangs.
 */
static void
get_msg(struct imsgbuf *r, struct imsg *imsg)
{
	ssize_t	 n;
	int	 i;

	nonblock(r->fd);
	for (i = 0; i < 1000; i++) {
		if ((n = imsg_get(r, imsg)) > 0)
			return;
		ATF_REQUIRE_EQ_MSG(n, 0, "imsg_get: %s", strerror(errno));
		ATF_REQUIRE_MSG(imsg_read(r) > 0, "imsg_read: %s",
		    strerror(errno));
	}
	atf_tc_fail("no message after %d reads", i);
}

ATF_TC_WITHOUT_HEAD(roundtrip_many);
ATF_TC_BODY(roundtrip_many, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	unsigned char	 payload[64];
	size_t		 total = 0, len;
	ssize_t		 n;
	unsigned int	 i;
	int		 sv[2];

	mkpair(sv);
	imsg_init(&w, sv[0]);
	imsg_init(&r, sv[1]);
	for (i = 0; i < 500; i++) {
		len = i % 50;
		fill(payload, len, i);
		/* pid 0 means our own; every tenth names another */
		ATF_REQUIRE(imsg_compose(&w, 1000 + i, i * 7,
		    i % 10 == 0 ? 4242 : 0, -1, payload, len) != -1);
		total += IMSG_HEADER_SIZE + len;
	}
	ATF_REQUIRE_EQ(w.w.queued, 500);
	ATF_REQUIRE(total < IMSG_READ_BUFSIZE);
	ATF_REQUIRE_EQ(imsg_flush(&w), 0);
	ATF_REQUIRE_EQ(w.w.queued, 0);

	/* All of it in one read. */
	nonblock(sv[1]);
	n = imsg_read(&r);
	ATF_REQUIRE_EQ_MSG(n, (ssize_t)total, "read %zd of %zu", n, total);

	for (i = 0; i < 500; i++) {
		len = i % 50;
		n = imsg_get(&r, &imsg);
		ATF_REQUIRE_EQ_MSG(n, (ssize_t)(IMSG_HEADER_SIZE + len),
		    "message %u: %zd", i, n);
		ATF_CHECK_EQ(imsg_get_type(&imsg), 1000 + i);
		ATF_CHECK_EQ(imsg_get_id(&imsg), i * 7);
		ATF_CHECK_EQ(imsg_get_pid(&imsg),
		    i % 10 == 0 ? 4242 : getpid());
		ATF_CHECK_EQ(imsg_get_len(&imsg), len);
		ATF_CHECK_EQ(imsg.fd, -1);
		ATF_REQUIRE(imsg_get_data(&imsg, payload, len) == 0);
		ATF_CHECK_MSG(check_fill(payload, len, i) == 0,
		    "payload %u differs", i);
		imsg_free(&imsg);
	}
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 0);
	ATF_REQUIRE_EQ(imsg_read(&r), -1);
	ATF_REQUIRE_EQ(errno, EAGAIN);
	imsg_clear(&w);
	imsg_clear(&r);
}

ATF_TC_WITHOUT_HEAD(split_reads);
ATF_TC_BODY(split_reads, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	unsigned char	 raw[2048], payload[1000];
	size_t		 rawlen = 0, len1, i;
	ssize_t		 n;
	int		 a[2], b[2], got = 0;

	mkpair(a);
	mkpair(b);
	imsg_init(&w, a[0]);
	imsg_init(&r, b[1]);
	fill(payload, 300, 1);
	ATF_REQUIRE(imsg_compose(&w, 1, 0, 0, -1, payload, 300) != -1);
	fill(payload, 1000, 2);
	ATF_REQUIRE(imsg_compose(&w, 2, 0, 0, -1, payload, 1000) != -1);
	ATF_REQUIRE_EQ(imsg_flush(&w), 0);
	len1 = IMSG_HEADER_SIZE + 300;
	while (rawlen < len1 + IMSG_HEADER_SIZE + 1000) {
		n = read(a[1], raw + rawlen, sizeof(raw) - rawlen);
		ATF_REQUIRE(n > 0);
		rawlen += n;
	}
	ATF_REQUIRE_EQ(rawlen, len1 + IMSG_HEADER_SIZE + 1000);

	/* Feed the two messages one byte a read. */
	for (i = 0; i < rawlen; i++) {
		ATF_REQUIRE(write(b[0], raw + i, 1) == 1);
		ATF_REQUIRE_EQ(imsg_read(&r), 1);
		n = imsg_get(&r, &imsg);
		if (i == len1 - 1 || i == rawlen - 1) {
			ATF_REQUIRE_MSG(n > 0, "no message at byte %zu", i);
			got++;
			ATF_REQUIRE_EQ(imsg_get_type(&imsg), (uint32_t)got);
			ATF_REQUIRE(imsg_get_data(&imsg, payload,
			    got == 1 ? 300 : 1000) == 0);
			ATF_CHECK(check_fill(payload, got == 1 ? 300 : 1000,
			    got) == 0);
			imsg_free(&imsg);
		} else
			ATF_REQUIRE_EQ_MSG(n, 0, "imsg_get %zd at byte %zu",
			    n, i);
	}
	ATF_REQUIRE_EQ(got, 2);
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), 0);
	imsg_clear(&w);
	imsg_clear(&r);
}

ATF_TC_WITHOUT_HEAD(fd_passing);
ATF_TC_BODY(fd_passing, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	char		 c;
	int		 sv[2], p1[2], p2[2], fd, sent1, sent2, flags;

	mkpair(sv);
	mkpipe(p1);
	mkpipe(p2);
	imsg_init(&w, sv[0]);
	imsg_init(&r, sv[1]);
	sent1 = p1[1];
	sent2 = p2[1];
	/* fd, none, fd: each fd must land on its own message */
	ATF_REQUIRE(imsg_compose(&w, 1, 0, 0, p1[1], "a", 1) != -1);
	ATF_REQUIRE(imsg_compose(&w, 2, 0, 0, -1, "b", 1) != -1);
	ATF_REQUIRE(imsg_compose(&w, 3, 0, 0, p2[1], "c", 1) != -1);
	ATF_REQUIRE_EQ(imsg_flush(&w), 0);
	/* The sender closes what it passed once it is written. */
	ATF_CHECK(is_closed(sent1));
	ATF_CHECK(is_closed(sent2));

	get_msg(&r, &imsg);
	ATF_REQUIRE_EQ(imsg_get_type(&imsg), 1);
	ATF_REQUIRE((fd = imsg_get_fd(&imsg)) != -1);
	ATF_CHECK_EQ(imsg.fd, -1);
	ATF_REQUIRE((flags = fcntl(fd, F_GETFD)) != -1);
	ATF_CHECK_MSG(flags & FD_CLOEXEC, "received fd not close-on-exec");
	ATF_REQUIRE(write(fd, "1", 1) == 1);
	ATF_REQUIRE(read(p1[0], &c, 1) == 1 && c == '1');
	close(fd);
	imsg_free(&imsg);
	/* The only writer left was ours. */
	ATF_CHECK_EQ(pipe_eof(p1[0]), 0);

	get_msg(&r, &imsg);
	ATF_REQUIRE_EQ(imsg_get_type(&imsg), 2);
	ATF_CHECK_EQ(imsg_get_fd(&imsg), -1);
	imsg_free(&imsg);

	get_msg(&r, &imsg);
	ATF_REQUIRE_EQ(imsg_get_type(&imsg), 3);
	ATF_REQUIRE((fd = imsg_get_fd(&imsg)) != -1);
	ATF_REQUIRE(write(fd, "3", 1) == 1);
	ATF_REQUIRE(read(p2[0], &c, 1) == 1 && c == '3');
	close(fd);
	imsg_free(&imsg);
	ATF_CHECK_EQ(pipe_eof(p2[0]), 0);

	imsg_clear(&w);
	imsg_clear(&r);
	close(p1[0]);
	close(p2[0]);
}

ATF_TC_WITHOUT_HEAD(fd_closed_on_free);
ATF_TC_BODY(fd_closed_on_free, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	int		 sv[2], p[2], fd;

	mkpair(sv);
	mkpipe(p);
	imsg_init(&w, sv[0]);
	imsg_init(&r, sv[1]);
	ATF_REQUIRE(imsg_compose(&w, 1, 0, 0, p[1], NULL, 0) != -1);
	ATF_REQUIRE_EQ(imsg_flush(&w), 0);
	ATF_REQUIRE(imsg_read(&r) > 0);
	ATF_REQUIRE(imsg_get(&r, &imsg) > 0);
	fd = imsg.fd;
	ATF_REQUIRE(fd != -1);
	ATF_REQUIRE(!is_closed(fd));
	/* Dropped without imsg_get_fd: the message's fd goes with it. */
	imsg_free(&imsg);
	ATF_CHECK(is_closed(fd));
	ATF_CHECK_EQ(pipe_eof(p[0]), 0);
	imsg_clear(&w);
	imsg_clear(&r);
	close(p[0]);
}

ATF_TC_WITHOUT_HEAD(fd_closed_on_clear);
ATF_TC_BODY(fd_closed_on_clear, tc)
{
	struct imsgbuf	 w, r;
	int		 sv[2], p[2], q[2];

	mkpair(sv);
	mkpipe(p);
	mkpipe(q);
	imsg_init(&w, sv[0]);
	imsg_init(&r, sv[1]);

	/* Queued and never written. */
	ATF_REQUIRE(imsg_compose(&w, 1, 0, 0, p[1], NULL, 0) != -1);
	imsg_clear(&w);
	ATF_CHECK_EQ(w.w.queued, 0);
	ATF_CHECK(is_closed(p[1]));
	ATF_CHECK_EQ(pipe_eof(p[0]), 0);

	/* Received and never handed out. */
	ATF_REQUIRE(imsg_compose(&w, 1, 0, 0, q[1], NULL, 0) != -1);
	ATF_REQUIRE_EQ(imsg_flush(&w), 0);
	ATF_REQUIRE(imsg_read(&r) > 0);
	ATF_REQUIRE(!TAILQ_EMPTY(&r.fds));
	imsg_clear(&r);
	ATF_CHECK(TAILQ_EMPTY(&r.fds));
	ATF_CHECK_EQ(pipe_eof(q[0]), 0);
	close(p[0]);
	close(q[0]);
}

ATF_TC_WITHOUT_HEAD(bad_len_small);
ATF_TC_BODY(bad_len_small, tc)
{
	struct imsgbuf	 r;
	struct imsg	 imsg;
	int		 sv[2];

	mkpair(sv);
	imsg_init(&r, sv[1]);
	send_hdr(sv[0], 1, IMSG_HEADER_SIZE - 1, 0, -1);
	ATF_REQUIRE_EQ(imsg_read(&r), (ssize_t)IMSG_HEADER_SIZE);
	errno = 0;
	ATF_CHECK_EQ(imsg_get(&r, &imsg), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	imsg_clear(&r);

	send_hdr(sv[0], 1, 0, 0, -1);
	ATF_REQUIRE(imsg_read(&r) > 0);
	errno = 0;
	ATF_CHECK_EQ(imsg_get(&r, &imsg), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	imsg_clear(&r);

	/* The smallest good one passes. */
	send_hdr(sv[0], 7, IMSG_HEADER_SIZE, 0, -1);
	ATF_REQUIRE(imsg_read(&r) > 0);
	ATF_REQUIRE_EQ(imsg_get(&r, &imsg), (ssize_t)IMSG_HEADER_SIZE);
	ATF_CHECK_EQ(imsg_get_type(&imsg), 7);
	ATF_CHECK_EQ(imsg_get_len(&imsg), 0);
	ATF_CHECK(imsg.data == NULL);
	imsg_free(&imsg);
	imsg_clear(&r);
}

ATF_TC_WITHOUT_HEAD(bad_len_large);
ATF_TC_BODY(bad_len_large, tc)
{
	struct imsgbuf	 r;
	struct imsg	 imsg;
	int		 sv[2];

	mkpair(sv);
	imsg_init(&r, sv[1]);
	/* Refused from the header alone, before any payload comes. */
	send_hdr(sv[0], 1, MAX_IMSGSIZE + 1, 0, -1);
	ATF_REQUIRE(imsg_read(&r) > 0);
	errno = 0;
	ATF_CHECK_EQ(imsg_get(&r, &imsg), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	imsg_clear(&r);

	send_hdr(sv[0], 1, UINT32_MAX, 0, -1);
	ATF_REQUIRE(imsg_read(&r) > 0);
	errno = 0;
	ATF_CHECK_EQ(imsg_get(&r, &imsg), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	imsg_clear(&r);
}

ATF_TC_WITHOUT_HEAD(max_size);
ATF_TC_BODY(max_size, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	struct iovec	 iov[2];
	static unsigned char big[MAX_IMSGSIZE + 1], back[MAX_IMSGSIZE];
	size_t		 max = MAX_IMSGSIZE - IMSG_HEADER_SIZE;
	int		 sv[2];

	mkpair(sv);
	imsg_init(&w, sv[0]);
	imsg_init(&r, sv[1]);
	fill(big, sizeof(big), 9);

	errno = 0;
	ATF_CHECK_EQ(imsg_compose(&w, 1, 0, 0, -1, big, max + 1), -1);
	ATF_CHECK_EQ(errno, ERANGE);
	iov[0].iov_base = big;
	iov[0].iov_len = max;
	iov[1].iov_base = big;
	iov[1].iov_len = 1;
	errno = 0;
	ATF_CHECK_EQ(imsg_composev(&w, 1, 0, 0, -1, iov, 2), -1);
	ATF_CHECK_EQ(errno, ERANGE);
	/* A sum that would wrap around is refused too. */
	iov[0].iov_len = 1;
	iov[1].iov_len = SIZE_MAX;
	errno = 0;
	ATF_CHECK_EQ(imsg_composev(&w, 1, 0, 0, -1, iov, 2), -1);
	ATF_CHECK_EQ(errno, ERANGE);
	ATF_CHECK_EQ(w.w.queued, 0);

	/* Exactly the maximum goes through. */
	ATF_REQUIRE(imsg_compose(&w, 2, 0, 0, -1, big, max) != -1);
	ATF_REQUIRE_EQ(imsg_flush(&w), 0);
	get_msg(&r, &imsg);
	ATF_REQUIRE_EQ(imsg_get_len(&imsg), max);
	ATF_REQUIRE(imsg_get_data(&imsg, back, max) == 0);
	ATF_CHECK(memcmp(back, big, max) == 0);
	imsg_free(&imsg);
	imsg_clear(&w);
	imsg_clear(&r);
}

/* Send one message through a fresh pair and hand it back. */
static void
roundtrip(struct imsg *imsg, const void *data, size_t len)
{
	struct imsgbuf	 w, r;
	int		 sv[2];

	mkpair(sv);
	imsg_init(&w, sv[0]);
	imsg_init(&r, sv[1]);
	ATF_REQUIRE(imsg_compose(&w, 1, 0, 0, -1, data, len) != -1);
	ATF_REQUIRE_EQ(imsg_flush(&w), 0);
	get_msg(&r, imsg);
	imsg_clear(&w);
	imsg_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(get_data_exact);
ATF_TC_BODY(get_data_exact, tc)
{
	struct imsg	 imsg;
	uint64_t	 v = 0x0102030405060708ULL, out;
	unsigned char	 big[sizeof(v) + 1];

	roundtrip(&imsg, &v, sizeof(v));
	errno = 0;
	ATF_CHECK_EQ(imsg_get_data(&imsg, &out, sizeof(v) - 1), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	errno = 0;
	ATF_CHECK_EQ(imsg_get_data(&imsg, big, sizeof(big)), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	out = 0;
	ATF_CHECK_EQ(imsg_get_data(&imsg, &out, sizeof(out)), 0);
	ATF_CHECK(out == v);
	imsg_free(&imsg);

	roundtrip(&imsg, NULL, 0);
	ATF_CHECK_EQ(imsg_get_data(&imsg, NULL, 0), 0);
	errno = 0;
	ATF_CHECK_EQ(imsg_get_data(&imsg, &out, 1), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	imsg_free(&imsg);
}

ATF_TC_WITHOUT_HEAD(get_string);
ATF_TC_BODY(get_string, tc)
{
	struct imsg	 imsg;
	char		 s[6];

	roundtrip(&imsg, "hello", 6);
	ATF_CHECK_EQ(imsg_get_string(&imsg, s, sizeof(s)), 0);
	ATF_CHECK_STREQ(s, "hello");
	/* One byte short of room for the NUL. */
	errno = 0;
	ATF_CHECK_EQ(imsg_get_string(&imsg, s, 5), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	imsg_free(&imsg);

	/* No NUL at all. */
	roundtrip(&imsg, "hello", 5);
	memset(s, 'x', sizeof(s));
	errno = 0;
	ATF_CHECK_EQ(imsg_get_string(&imsg, s, sizeof(s)), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	imsg_free(&imsg);

	roundtrip(&imsg, NULL, 0);
	ATF_CHECK_EQ(imsg_get_string(&imsg, s, sizeof(s)), -1);
	imsg_free(&imsg);

	/* A NUL inside is enough; what follows it is not read. */
	roundtrip(&imsg, "hi\0jk", 5);
	ATF_CHECK_EQ(imsg_get_string(&imsg, s, sizeof(s)), 0);
	ATF_CHECK_STREQ(s, "hi");
	imsg_free(&imsg);
}

ATF_TC_WITHOUT_HEAD(peer_close);
ATF_TC_BODY(peer_close, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	int		 sv[2];

	mkpair(sv);
	imsg_init(&w, sv[0]);
	imsg_init(&r, sv[1]);
	nonblock(sv[1]);
	errno = 0;
	ATF_CHECK_EQ(imsg_read(&r), -1);
	ATF_CHECK_EQ(errno, EAGAIN);

	/* What was sent before the close still arrives, then EOF. */
	ATF_REQUIRE(imsg_compose(&w, 5, 0, 0, -1, "x", 1) != -1);
	ATF_REQUIRE_EQ(imsg_flush(&w), 0);
	imsg_clear(&w);
	close(sv[0]);
	ATF_REQUIRE(imsg_read(&r) > 0);
	ATF_REQUIRE(imsg_get(&r, &imsg) > 0);
	ATF_CHECK_EQ(imsg_get_type(&imsg), 5);
	imsg_free(&imsg);
	ATF_CHECK_EQ(imsg_read(&r), 0);
	imsg_clear(&r);
}

ATF_TC_WITHOUT_HEAD(write_peer_closed);
ATF_TC_BODY(write_peer_closed, tc)
{
	struct imsgbuf	 w;
	int		 sv[2];

	mkpair(sv);
	imsg_init(&w, sv[0]);
	close(sv[1]);
	/* No SIGPIPE may kill us: the test dies if one is raised. */
	ATF_REQUIRE(imsg_compose(&w, 1, 0, 0, -1, "x", 1) != -1);
	ATF_CHECK_EQ(imsg_write(&w), 0);
	ATF_CHECK_EQ(w.w.queued, 1);
	errno = 0;
	ATF_CHECK_EQ(imsg_flush(&w), -1);
	ATF_CHECK_EQ(errno, EPIPE);
	imsg_clear(&w);
}

ATF_TC_WITHOUT_HEAD(write_eagain);
ATF_TC_BODY(write_eagain, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	static unsigned char payload[4000];
	size_t		 before_bytes, rpos;
	uint32_t	 before;
	int		 sv[2], sz = 4096, i, got = 0, blocked = 0;

	mkpair(sv);
	ATF_REQUIRE(setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz,
	    sizeof(sz)) == 0);
	ATF_REQUIRE(setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sz,
	    sizeof(sz)) == 0);
	nonblock(sv[0]);
	nonblock(sv[1]);
	imsg_init(&w, sv[0]);
	imsg_init(&r, sv[1]);
	for (i = 0; i < 64; i++) {
		fill(payload, sizeof(payload), i);
		ATF_REQUIRE(imsg_compose(&w, i, 0, 0, -1, payload,
		    sizeof(payload)) != -1);
	}

	/* Write until the socket takes no more. */
	for (i = 0; i < SPIN_MAX; i++) {
		before = w.w.queued;
		before_bytes = queued_bytes(&w);
		ATF_REQUIRE_EQ(imsg_write(&w), 1);
		if (w.w.queued == before && queued_bytes(&w) == before_bytes) {
			blocked = 1;
			break;
		}
	}
	ATF_REQUIRE_MSG(blocked, "the socket never filled");
	ATF_REQUIRE(w.w.queued > 0);
	ATF_REQUIRE(w.w.queued < 64);

	/* Blocked writes leave the queue exactly as it was. */
	before = w.w.queued;
	before_bytes = queued_bytes(&w);
	rpos = TAILQ_FIRST(&w.w.bufs)->rpos;
	for (i = 0; i < 3; i++) {
		ATF_REQUIRE_EQ(imsg_write(&w), 1);
		ATF_CHECK_EQ(w.w.queued, before);
		ATF_CHECK_EQ(queued_bytes(&w), before_bytes);
		ATF_CHECK_EQ(TAILQ_FIRST(&w.w.bufs)->rpos, rpos);
	}

	/* Drain; every message arrives whole and in order. */
	for (i = 0; i < SPIN_MAX && got < 64; i++) {
		ATF_REQUIRE_EQ(imsg_write(&w), 1);
		if (imsg_read(&r) == -1)
			ATF_REQUIRE_EQ(errno, EAGAIN);
		while (imsg_get(&r, &imsg) > 0) {
			ATF_REQUIRE_EQ(imsg_get_type(&imsg), (uint32_t)got);
			ATF_REQUIRE(imsg_get_data(&imsg, payload,
			    sizeof(payload)) == 0);
			ATF_REQUIRE_MSG(check_fill(payload, sizeof(payload),
			    got) == 0, "message %d differs", got);
			imsg_free(&imsg);
			got++;
		}
	}
	ATF_CHECK_EQ(got, 64);
	ATF_CHECK_EQ(w.w.queued, 0);
	ATF_CHECK(TAILQ_EMPTY(&w.w.bufs));
	imsg_clear(&w);
	imsg_clear(&r);
}

ATF_TC_WITHOUT_HEAD(read_buffer_full);
ATF_TC_BODY(read_buffer_full, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	static unsigned char payload[MAX_IMSGSIZE];
	size_t		 len = MAX_IMSGSIZE - IMSG_HEADER_SIZE;
	ssize_t		 n;
	int		 sv[2], i, got = 0, full = 0;

	mkpair(sv);
	nonblock(sv[1]);
	imsg_init(&w, sv[0]);
	imsg_init(&r, sv[1]);
	/* More than the read buffer holds. */
	for (i = 0; i < 6; i++) {
		fill(payload, len, i);
		ATF_REQUIRE(imsg_compose(&w, i, 0, 0, -1, payload, len) != -1);
	}
	ATF_REQUIRE(6 * MAX_IMSGSIZE > IMSG_READ_BUFSIZE);
	ATF_REQUIRE_EQ(imsg_flush(&w), 0);
	for (i = 0; i < 100; i++) {
		n = imsg_read(&r);
		if (n == -1 && errno == ENOBUFS) {
			full = 1;
			break;
		}
		ATF_REQUIRE_MSG(n > 0, "read %zd errno %d", n, errno);
	}
	ATF_REQUIRE(full);
	ATF_CHECK_EQ(r.rlen, IMSG_READ_BUFSIZE);

	/* Handing messages out makes room again; nothing is lost. */
	for (i = 0; i < 100 && got < 6; i++) {
		while (imsg_get(&r, &imsg) > 0) {
			ATF_REQUIRE_EQ(imsg_get_type(&imsg), (uint32_t)got);
			ATF_REQUIRE(imsg_get_data(&imsg, payload, len) == 0);
			ATF_REQUIRE(check_fill(payload, len, got) == 0);
			imsg_free(&imsg);
			got++;
		}
		if (got < 6)
			ATF_REQUIRE(imsg_read(&r) > 0);
	}
	ATF_CHECK_EQ(got, 6);
	imsg_clear(&w);
	imsg_clear(&r);
}

ATF_TC_WITHOUT_HEAD(hostile_fds);
ATF_TC_BODY(hostile_fds, tc)
{
	struct imsgbuf	 r;
	struct imsg	 imsg;
	int		 sv[2], p[2];

	mkpair(sv);
	mkpipe(p);
	imsg_init(&r, sv[1]);

	/* An fd that no message claims is closed and the peer refused. */
	send_hdr(sv[0], 1, IMSG_HEADER_SIZE, 0, p[1]);
	close(p[1]);
	ATF_REQUIRE(imsg_read(&r) > 0);
	ATF_REQUIRE(imsg_get(&r, &imsg) > 0);
	ATF_CHECK_EQ(imsg.fd, -1);
	imsg_free(&imsg);
	errno = 0;
	ATF_CHECK_EQ(imsg_get(&r, &imsg), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	ATF_CHECK(TAILQ_EMPTY(&r.fds));
	ATF_CHECK_EQ(pipe_eof(p[0]), 0);
	close(p[0]);
	imsg_clear(&r);

	/* A message that says it has an fd but came without one. */
	send_hdr(sv[0], 1, IMSG_HEADER_SIZE, IMSGF_HASFD, -1);
	ATF_REQUIRE(imsg_read(&r) > 0);
	errno = 0;
	ATF_CHECK_EQ(imsg_get(&r, &imsg), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	imsg_clear(&r);

	/* Flags we do not know. */
	send_hdr(sv[0], 1, IMSG_HEADER_SIZE, 0x80, -1);
	ATF_REQUIRE(imsg_read(&r) > 0);
	errno = 0;
	ATF_CHECK_EQ(imsg_get(&r, &imsg), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	imsg_clear(&r);
}

struct evtest {
	struct imsgev	 iev;
	int		 calls;
	int		 got;
	int		 dead;
};

static void
ev_handler(int fd, short event, void *arg)
{
	struct evtest	*t = arg;
	struct imsg	 imsg;
	ssize_t		 n;

	(void)fd;
	t->calls++;
	if (imsgev_io(&t->iev, event) == -1) {
		t->dead = 1;
		imsgev_clear(&t->iev);
		return;
	}
	while ((n = imsg_get(&t->iev.ibuf, &imsg)) > 0) {
		t->got++;
		imsg_free(&imsg);
	}
	if (n == -1) {
		t->dead = 1;
		imsgev_clear(&t->iev);
	}
}

ATF_TC_WITHOUT_HEAD(imsgev_write_events);
ATF_TC_BODY(imsgev_write_events, tc)
{
	struct evtest	 t;
	struct imsgbuf	 peer;
	struct imsg	 imsg;
	int		 sv[2], i, flags;

	event_init();
	mkpair(sv);
	memset(&t, 0, sizeof(t));
	imsgev_init(&t.iev, sv[0], ev_handler, &t);
	ATF_REQUIRE((flags = fcntl(sv[0], F_GETFL)) != -1);
	ATF_CHECK(flags & O_NONBLOCK);
	imsg_init(&peer, sv[1]);

	imsgev_add(&t.iev);
	ATF_CHECK_EQ(t.iev.events, EV_READ);
	ATF_CHECK(event_pending(&t.iev.ev, EV_READ, NULL));
	ATF_CHECK(!event_pending(&t.iev.ev, EV_WRITE, NULL));

	/* Queued: ask for write events. */
	ATF_REQUIRE(imsgev_compose(&t.iev, 9, 1, 0, -1, "ping", 5) != -1);
	ATF_CHECK_EQ(t.iev.events, EV_READ | EV_WRITE);
	ATF_CHECK(event_pending(&t.iev.ev, EV_WRITE, NULL));

	for (i = 0; i < 100 && t.iev.ibuf.w.queued > 0; i++)
		event_loop(EVLOOP_NONBLOCK);
	ATF_REQUIRE_EQ(t.iev.ibuf.w.queued, 0);
	ATF_CHECK(t.calls > 0);
	/* Empty: read events only. */
	ATF_CHECK_EQ(t.iev.events, EV_READ);
	ATF_CHECK(event_pending(&t.iev.ev, EV_READ, NULL));
	ATF_CHECK(!event_pending(&t.iev.ev, EV_WRITE, NULL));
	/* And with nothing to do, the handler is not called again. */
	t.calls = 0;
	for (i = 0; i < 10; i++)
		event_loop(EVLOOP_NONBLOCK);
	ATF_CHECK_EQ(t.calls, 0);

	get_msg(&peer, &imsg);
	ATF_CHECK_EQ(imsg_get_type(&imsg), 9);
	ATF_CHECK_EQ(imsg_get_id(&imsg), 1);
	imsg_free(&imsg);

	/* Reading through the glue. */
	ATF_REQUIRE(imsg_compose(&peer, 10, 0, 0, -1, NULL, 0) != -1);
	ATF_REQUIRE(imsg_compose(&peer, 11, 0, 0, -1, NULL, 0) != -1);
	ATF_REQUIRE_EQ(imsg_flush(&peer), 0);
	for (i = 0; i < 100 && t.got < 2; i++)
		event_loop(EVLOOP_NONBLOCK);
	ATF_CHECK_EQ(t.got, 2);
	ATF_CHECK(!t.dead);

	/* The peer going away ends the channel. */
	imsg_clear(&peer);
	close(sv[1]);
	for (i = 0; i < 100 && !t.dead; i++)
		event_loop(EVLOOP_NONBLOCK);
	ATF_CHECK(t.dead);
	ATF_CHECK(!event_pending(&t.iev.ev, EV_READ | EV_WRITE, NULL));
	close(sv[0]);
}

/* The fds a process has open. */
static int
count_fds(void)
{
	int	 fd, n = 0;

	for (fd = 0; fd < 1024; fd++)
		if (fcntl(fd, F_GETFD) != -1)
			n++;
	return (n);
}

ATF_TC_WITHOUT_HEAD(refuse_fds);
ATF_TC_BODY(refuse_fds, tc)
{
	struct imsgbuf	 r;
	struct imsg	 imsg;
	int		 sv[2], p[2], before, i;

	mkpair(sv);
	mkpipe(p);
	imsg_init(&r, sv[1]);
	imsg_refuse_fds(&r);

	/* Without fds the channel works as any other. */
	send_hdr(sv[0], 7, IMSG_HEADER_SIZE, 0, -1);
	ATF_REQUIRE(imsg_read(&r) > 0);
	ATF_REQUIRE(imsg_get(&r, &imsg) > 0);
	ATF_CHECK_EQ(imsg_get_type(&imsg), 7);
	imsg_free(&imsg);

	/*
	 * The start of a message with fds, a few times: the read fails and
	 * none of them was ever ours.
	 */
	before = count_fds();
	for (i = 0; i < 4; i++)
		send_raw(sv[0], "x", 1, p[1]);
	close(p[1]);
	errno = 0;
	ATF_CHECK_EQ(imsg_read(&r), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	ATF_CHECK_EQ(count_fds(), before - 1);
	ATF_CHECK(TAILQ_EMPTY(&r.fds));
	/* What is left in the socket goes with it: every writer is closed. */
	close(sv[0]);
	close(sv[1]);
	ATF_CHECK_EQ(pipe_eof(p[0]), 0);
	close(p[0]);
	imsg_clear(&r);

	/* A message that says it has an fd, without one: broken peer. */
	mkpair(sv);
	imsg_init(&r, sv[1]);
	imsg_refuse_fds(&r);
	send_hdr(sv[0], 1, IMSG_HEADER_SIZE, IMSGF_HASFD, -1);
	ATF_REQUIRE(imsg_read(&r) > 0);
	errno = 0;
	ATF_CHECK_EQ(imsg_get(&r, &imsg), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	imsg_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(queue_bytes_peek_partial);
ATF_TC_BODY(queue_bytes_peek_partial, tc)
{
	struct imsgbuf	 w, r;
	struct imsg	 imsg;
	struct imsg_hdr	 hdr;
	unsigned char	 data[1000];
	int		 sv[2];

	mkpair(sv);
	imsg_init(&w, sv[0]);
	imsg_init(&r, sv[1]);
	fill(data, sizeof(data), 3);

	/* What is queued, in messages and in bytes. */
	ATF_CHECK_EQ(w.w.qbytes, 0);
	ATF_REQUIRE(imsg_compose(&w, 1, 0, 0, -1, data, 100) == 1);
	ATF_REQUIRE(imsg_compose(&w, 2, 0, 0, -1, data, sizeof(data)) == 1);
	ATF_CHECK_EQ(w.w.queued, 2);
	ATF_CHECK_EQ(w.w.qbytes, 2 * IMSG_HEADER_SIZE + 100 + sizeof(data));
	ATF_CHECK_EQ(w.w.qbytes, queued_bytes(&w));
	ATF_REQUIRE_EQ(imsg_flush(&w), 0);
	ATF_CHECK_EQ(w.w.qbytes, 0);
	ATF_REQUIRE(imsg_compose(&w, 3, 0, 0, -1, data, 10) == 1);
	imsg_clear(&w);
	ATF_CHECK_EQ(w.w.qbytes, 0);

	/* Peek tells the next whole message and leaves it. */
	ATF_CHECK_EQ(imsg_partial(&r), 0);
	ATF_CHECK_EQ(imsg_peek(&r, &hdr), 0);
	get_msg(&r, &imsg);
	ATF_CHECK_EQ(imsg_get_type(&imsg), 1);
	imsg_free(&imsg);
	while (imsg_peek(&r, &hdr) == 0)
		ATF_REQUIRE(imsg_read(&r) > 0);
	ATF_CHECK_EQ(hdr.type, 2);
	ATF_CHECK_EQ(imsg_peek(&r, &hdr), (ssize_t)(IMSG_HEADER_SIZE +
	    sizeof(data)));
	ATF_REQUIRE(imsg_get(&r, &imsg) > 0);
	ATF_CHECK_EQ(imsg_get_type(&imsg), 2);
	imsg_free(&imsg);
	ATF_CHECK_EQ(imsg_partial(&r), 0);

	/* Half a header, then half a payload: begun, not whole. */
	send_raw(sv[0], "abcde", 5, -1);
	ATF_REQUIRE(imsg_read(&r) == 5);
	ATF_CHECK_EQ(imsg_partial(&r), 5);
	ATF_CHECK_EQ(imsg_peek(&r, &hdr), 0);
	imsg_clear(&r);
	send_hdr(sv[0], 4, IMSG_HEADER_SIZE + 8, 0, -1);
	send_raw(sv[0], "1234", 4, -1);
	while (imsg_partial(&r) < IMSG_HEADER_SIZE + 4)
		ATF_REQUIRE(imsg_read(&r) > 0);
	ATF_CHECK_EQ(imsg_peek(&r, &hdr), 0);
	ATF_CHECK_EQ(imsg_get(&r, &imsg), 0);
	/* A bad header is bad to peek at too. */
	imsg_clear(&r);
	send_hdr(sv[0], 4, 3, 0, -1);
	ATF_REQUIRE(imsg_read(&r) > 0);
	errno = 0;
	ATF_CHECK_EQ(imsg_peek(&r, &hdr), -1);
	ATF_CHECK_EQ(errno, EBADMSG);
	imsg_clear(&r);
	close(sv[0]);
	close(sv[1]);
}

ATF_TC_WITHOUT_HEAD(imsgev_pause_read);
ATF_TC_BODY(imsgev_pause_read, tc)
{
	struct evtest	 t;
	struct imsgbuf	 peer;
	int		 sv[2], i;

	event_init();
	mkpair(sv);
	memset(&t, 0, sizeof(t));
	imsgev_init(&t.iev, sv[0], ev_handler, &t);
	imsg_init(&peer, sv[1]);
	imsgev_add(&t.iev);

	/* Paused and nothing queued: no event at all; what comes waits. */
	imsgev_pause(&t.iev, 1);
	ATF_CHECK_EQ(t.iev.events, 0);
	ATF_CHECK(!event_pending(&t.iev.ev, EV_READ | EV_WRITE, NULL));
	ATF_REQUIRE(imsg_compose(&peer, 10, 0, 0, -1, NULL, 0) != -1);
	ATF_REQUIRE_EQ(imsg_flush(&peer), 0);
	for (i = 0; i < 10; i++)
		event_loop(EVLOOP_NONBLOCK);
	ATF_CHECK_EQ(t.calls, 0);

	/* Paused with something queued: write events only. */
	ATF_REQUIRE(imsgev_compose(&t.iev, 9, 0, 0, -1, "x", 1) != -1);
	ATF_CHECK_EQ(t.iev.events, EV_WRITE);
	ATF_CHECK(!event_pending(&t.iev.ev, EV_READ, NULL));
	for (i = 0; i < 100 && t.iev.ibuf.w.queued > 0; i++)
		event_loop(EVLOOP_NONBLOCK);
	ATF_CHECK_EQ(t.iev.ibuf.w.queued, 0);
	ATF_CHECK_EQ(t.got, 0);

	/* Again: what waited is read. */
	imsgev_pause(&t.iev, 0);
	ATF_CHECK_EQ(t.iev.events, EV_READ);
	for (i = 0; i < 100 && t.got < 1; i++)
		event_loop(EVLOOP_NONBLOCK);
	ATF_CHECK_EQ(t.got, 1);
	imsgev_clear(&t.iev);
	imsg_clear(&peer);
	close(sv[0]);
	close(sv[1]);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, roundtrip_many);
	ATF_TP_ADD_TC(tp, split_reads);
	ATF_TP_ADD_TC(tp, fd_passing);
	ATF_TP_ADD_TC(tp, fd_closed_on_free);
	ATF_TP_ADD_TC(tp, fd_closed_on_clear);
	ATF_TP_ADD_TC(tp, bad_len_small);
	ATF_TP_ADD_TC(tp, bad_len_large);
	ATF_TP_ADD_TC(tp, max_size);
	ATF_TP_ADD_TC(tp, get_data_exact);
	ATF_TP_ADD_TC(tp, get_string);
	ATF_TP_ADD_TC(tp, peer_close);
	ATF_TP_ADD_TC(tp, write_peer_closed);
	ATF_TP_ADD_TC(tp, write_eagain);
	ATF_TP_ADD_TC(tp, read_buffer_full);
	ATF_TP_ADD_TC(tp, hostile_fds);
	ATF_TP_ADD_TC(tp, imsgev_write_events);
	ATF_TP_ADD_TC(tp, refuse_fds);
	ATF_TP_ADD_TC(tp, queue_bytes_peek_partial);
	ATF_TP_ADD_TC(tp, imsgev_pause_read);
	return (atf_no_error());
}
