/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * gpuliar: a GPU probe that breaks the rules, to run in agency-gpu's
 * place (gpuhost -p).  It takes the probe's options, and -L, which
 * names NVML's library for the real one, names what to do here:
 *
 *	ok		answer every poll with one device and the watched
 *			processes' figures, 1 GiB each
 *	okthenlie	answer the first poll well, the second with used
 *			memory above the total
 *	absurd		used memory above the total
 *	manydev		65 devices claimed
 *	dupid		two devices with one id
 *	badid		an id that fills its array, no NUL
 *	procsum		processes using more than the device's used memory
 *	unwatched	a figure for a pid nobody asked about
 *	unasked		a snapshot before any poll
 *	wrongreq	the answer to another poll
 *	short		a snapshot head one byte short
 *	unknown		a message of a type that does not exist
 *	fd		a file descriptor with the answer
 *	garbage		bytes that are no message at all
 *	logflood	40 log lines, then the answer
 *	hang		read the polls, answer none
 *	die		exit 3 at once
 */
#include <sys/types.h>

#include <err.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "gpuproto.h"
#include "imsg.h"

#define GIB	(1ULL << 30)

static struct imsgbuf	 ib;
static const char	*mode = "ok";
static uint32_t		 watch[GPU_WATCH_MAX];
static uint32_t		 nwatch;
static int		 polls;

static void
put(uint32_t type, uint32_t peerid, int fd, const void *data, size_t len)
{
	if (imsg_compose(&ib, type, peerid, 0, fd, data, len) == -1)
		err(1, "imsg_compose");
}

static void
device(uint32_t i, const char *id, uint64_t total, uint64_t used)
{
	struct gpu_device	 d;

	memset(&d, 0, sizeof(d));
	d.index = i;
	d.vendor = GPU_VENDOR_NVIDIA;
	d.vindex = i;
	d.total = total;
	d.used = used;
	(void)strlcpy(d.id, id, sizeof(d.id));
	(void)strlcpy(d.pci, "0000:01:00.0", sizeof(d.pci));
	(void)strlcpy(d.name, "liar", sizeof(d.name));
	put(IMSG_GPU_DEVICE, 0, -1, &d, sizeof(d));
}

static void
proc(uint32_t dev, uint32_t pid, uint64_t bytes)
{
	struct gpu_proc	 p;

	memset(&p, 0, sizeof(p));
	p.dev = dev;
	p.pid = pid;
	p.bytes = bytes;
	put(IMSG_GPU_PROC, 0, -1, &p, sizeof(p));
}

static void
head(uint64_t reqid, uint32_t ndev, uint32_t nproc, size_t len)
{
	struct gpu_snap_head	 h;

	memset(&h, 0, sizeof(h));
	h.reqid = reqid;
	h.backends = GPU_BACKEND_NVML;
	h.ndev = ndev;
	h.nproc = nproc;
	put(IMSG_GPU_SNAP_START, 0, -1, &h, len);
}

static void
end(uint64_t reqid)
{
	struct gpu_snap_end	 e;

	e.reqid = reqid;
	put(IMSG_GPU_SNAP_END, 0, -1, &e, sizeof(e));
}

/* A good snapshot: one 80 GiB device, the watched at 1 GiB each. */
static void
good(uint64_t reqid)
{
	uint32_t	 i, n = nwatch > 64 ? 64 : nwatch;

	head(reqid, 1, n, sizeof(struct gpu_snap_head));
	device(0, "GPU-liar-0", 80 * GIB, 70 * GIB);
	for (i = 0; i < n; i++)
		proc(0, watch[i], GIB);
	end(reqid);
}

static void
answer(uint64_t reqid)
{
	struct gpu_device	 d;
	char			 line[64];
	uint32_t		 i;
	int			 fd;

	polls++;
	if (strcmp(mode, "ok") == 0 || strcmp(mode, "unasked") == 0 ||
	    (strcmp(mode, "okthenlie") == 0 && polls == 1))
		good(reqid);
	else if (strcmp(mode, "absurd") == 0 ||
	    strcmp(mode, "okthenlie") == 0) {
		head(reqid, 1, 0, sizeof(struct gpu_snap_head));
		device(0, "GPU-liar-0", 8 * GIB, 9 * GIB);
		end(reqid);
	} else if (strcmp(mode, "manydev") == 0) {
		head(reqid, GPU_DEVICES_MAX + 1, 0,
		    sizeof(struct gpu_snap_head));
		end(reqid);
	} else if (strcmp(mode, "dupid") == 0) {
		head(reqid, 2, 0, sizeof(struct gpu_snap_head));
		device(0, "GPU-liar-0", 8 * GIB, GIB);
		device(1, "GPU-liar-0", 8 * GIB, GIB);
		end(reqid);
	} else if (strcmp(mode, "badid") == 0) {
		head(reqid, 1, 0, sizeof(struct gpu_snap_head));
		memset(&d, 0, sizeof(d));
		d.vendor = GPU_VENDOR_NVIDIA;
		d.total = 8 * GIB;
		memset(d.id, 'A', sizeof(d.id));
		put(IMSG_GPU_DEVICE, 0, -1, &d, sizeof(d));
		end(reqid);
	} else if (strcmp(mode, "procsum") == 0) {
		head(reqid, 1, nwatch > 0 ? 1 : 0,
		    sizeof(struct gpu_snap_head));
		device(0, "GPU-liar-0", 8 * GIB, GIB);
		if (nwatch > 0)
			proc(0, watch[0], 2 * GIB);
		end(reqid);
	} else if (strcmp(mode, "unwatched") == 0) {
		head(reqid, 1, 1, sizeof(struct gpu_snap_head));
		device(0, "GPU-liar-0", 8 * GIB, 2 * GIB);
		proc(0, 1, GIB);
		end(reqid);
	} else if (strcmp(mode, "wrongreq") == 0) {
		head(reqid + 1, 0, 0, sizeof(struct gpu_snap_head));
		end(reqid + 1);
	} else if (strcmp(mode, "short") == 0) {
		head(reqid, 0, 0, sizeof(struct gpu_snap_head) - 1);
	} else if (strcmp(mode, "unknown") == 0) {
		put(99, 0, -1, NULL, 0);
	} else if (strcmp(mode, "fd") == 0) {
		if ((fd = open("/dev/null", O_RDONLY)) == -1)
			err(1, "/dev/null");
		head(reqid, 0, 0, sizeof(struct gpu_snap_head));
		put(IMSG_GPU_SNAP_END, 0, fd, &reqid, sizeof(reqid));
	} else if (strcmp(mode, "garbage") == 0) {
		memset(line, 0xff, sizeof(line));
		if (write(3, line, sizeof(line)) == -1)
			err(1, "write");
	} else if (strcmp(mode, "logflood") == 0) {
		for (i = 0; i < 40; i++) {
			(void)snprintf(line, sizeof(line), "line %u", i);
			put(IMSG_GPU_LOG, LOG_INFO, -1, line,
			    strlen(line) + 1);
		}
		good(reqid);
	} else if (strcmp(mode, "hang") == 0)
		return;
	else
		errx(1, "unknown mode %s", mode);
	if (imsg_flush(&ib) == -1)
		exit(0);
}

int
main(int argc, char *argv[])
{
	struct gpu_watch	 w;
	struct gpu_poll		 p;
	struct imsg		 imsg;
	ssize_t			 n;
	int			 ch;

	while ((ch = getopt(argc, argv, "dKL:P:S:v")) != -1)
		if (ch == 'L')
			mode = optarg;
	imsg_init(&ib, 3);
	if (strcmp(mode, "die") == 0)
		exit(3);
	if (strcmp(mode, "unasked") == 0) {
		head(999, 0, 0, sizeof(struct gpu_snap_head));
		end(999);
		(void)imsg_flush(&ib);
	}
	for (;;) {
		if ((n = imsg_read(&ib)) == -1)
			err(1, "imsg_read");
		if (n == 0)
			exit(0);
		while ((n = imsg_get(&ib, &imsg)) > 0) {
			switch (imsg_get_type(&imsg)) {
			case IMSG_GPU_WATCH:
				if (imsg_get_data(&imsg, &w, sizeof(w)) == -1)
					errx(1, "a bad list");
				nwatch = w.n;
				memcpy(watch, w.pid, sizeof(watch));
				break;
			case IMSG_GPU_POLL:
				if (imsg_get_data(&imsg, &p, sizeof(p)) == -1)
					errx(1, "a bad poll");
				answer(p.reqid);
				break;
			default:
				errx(1, "type %u", imsg_get_type(&imsg));
			}
			imsg_free(&imsg);
		}
		if (n == -1)
			err(1, "imsg_get");
	}
}
