/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: the GPU probe's messages as agencyd reads them
 * (agencyd/gpusnap.c, as gpulink.c feeds it), a poll out at a time.
 *
 * Input: a byte whose low 3 bits are the count of watched pids, that
 * many bytes (pid 1 + the byte's low 3 bits, so that they repeat), then
 * either (the first byte's high bit clear) messages, each a type byte,
 * a peerid byte, a little-endian 16-bit length and that many payload
 * bytes (fewer at the end), handed to gpu_snap_feed; or (high bit set)
 * the rest as a byte stream through a socketpair, read with imsg_read
 * and imsg_get, fds refused, as gpulink.c reads the probe.
 *
 * After a lie or a whole snapshot the next poll is expected.
 * Invariants, checked on every whole snapshot (abort when broken): the
 * rules gpusnap.c's head lists hold of what it took.
 *
 * FUZZ_WRITE_SEEDS=DIR writes seeds (good snapshots, and lies) into DIR
 * and exits.
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "gpu.h"
#include "imsg.h"
#include "log.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define STREAM_MAX	65536

static struct gpu_snap	*s;
static uint32_t		 watch[8];
static size_t		 nwatch;
static uint64_t		 reqid;

static int
pid_cmp(const void *a, const void *b)
{
	uint32_t	 x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x < y ? -1 : x > y);
}

static int
watched(uint32_t pid)
{
	return (bsearch(&pid, watch, nwatch, sizeof(watch[0]), pid_cmp) !=
	    NULL);
}

#define CHECK(c) do {							\
	if (!(c)) {							\
		fprintf(stderr, "invariant broken: %s\n", #c);		\
		abort();						\
	}								\
} while (0)

static void
check_whole(const struct gpu_table *t)
{
	const struct gpu_device	*d;
	const struct gpu_proc	*p;
	uint64_t		 sum[GPU_DEVICES_MAX];
	uint32_t		 i, j;

	CHECK(t->reqid == reqid);
	CHECK(t->ndev <= GPU_DEVICES_MAX);
	CHECK(t->nproc <= GPU_PROCS_MAX);
	CHECK((uint64_t)t->nproc <= (uint64_t)t->ndev * nwatch);
	memset(sum, 0, sizeof(sum));
	for (i = 0; i < t->ndev; i++) {
		d = &t->dev[i];
		CHECK(d->index == i);
		CHECK(d->vendor == GPU_VENDOR_NVIDIA ||
		    d->vendor == GPU_VENDOR_AMD);
		CHECK(memchr(d->id, '\0', sizeof(d->id)) != NULL);
		CHECK(d->id[0] != '\0');
		CHECK(memchr(d->pci, '\0', sizeof(d->pci)) != NULL);
		CHECK(memchr(d->name, '\0', sizeof(d->name)) != NULL);
		if (d->flags & GPU_DEV_NOMEM)
			CHECK(d->total == 0 && d->used == 0);
		else
			CHECK(d->total > 0 && d->total <= GPU_MEM_MAX &&
			    d->used <= d->total);
		for (j = 0; j < i; j++)
			CHECK(strcmp(t->dev[j].id, d->id) != 0);
	}
	for (i = 0; i < t->nproc; i++) {
		p = &t->proc[i];
		CHECK(p->dev < t->ndev);
		CHECK(watched(p->pid));
		CHECK(!(t->dev[p->dev].flags & GPU_DEV_NOPROC));
		CHECK(!(p->flags & GPU_PROC_UNKNOWN) || p->bytes == 0);
		if (i > 0)
			CHECK(t->proc[i - 1].dev < p->dev ||
			    (t->proc[i - 1].dev == p->dev &&
			    t->proc[i - 1].pid < p->pid));
		sum[p->dev] += p->bytes;
		CHECK(sum[p->dev] <= t->dev[p->dev].used);
		CHECK(gpu_table_proc(t, p->dev, p->pid) == (int64_t)p->bytes);
	}
}

/* One message; after a lie or a whole snapshot, the next poll. */
static void
one(uint32_t type, uint32_t peerid, const void *data, size_t len)
{
	const char	*line = NULL;
	int		 pri = 0;

	switch (gpu_snap_feed(s, type, peerid, data, len, &line, &pri)) {
	case GPU_FEED_LIE:
		CHECK(s->why[0] != '\0');
		gpu_snap_expect(s, ++reqid, watch, nwatch);
		break;
	case GPU_FEED_WHOLE:
		check_whole(&s->t);
		gpu_snap_expect(s, ++reqid, watch, nwatch);
		break;
	case GPU_FEED_LOG:
		CHECK(line != NULL && strlen(line) < GPU_LOGLINE_MAX);
		break;
	case GPU_FEED_MORE:
		break;
	default:
		CHECK(0);
	}
}

static void
messages(const uint8_t *p, size_t left)
{
	uint32_t	 type, peerid;
	size_t		 len;
	uint8_t		*copy;

	while (left >= 4) {
		type = p[0];
		peerid = p[1];
		len = (size_t)p[2] | (size_t)p[3] << 8;
		p += 4;
		left -= 4;
		if (len > left)
			len = left;
		/* A copy of its own size: reads past it are seen. */
		if ((copy = malloc(len > 0 ? len : 1)) == NULL)
			abort();
		memcpy(copy, p, len);
		one(type, peerid, len > 0 ? copy : NULL, len);
		free(copy);
		p += len;
		left -= len;
	}
}

static void
stream(const uint8_t *p, size_t left)
{
	struct imsgbuf	*ib;
	struct imsg	 imsg;
	ssize_t		 n;
	int		 sp[2];

	if (left > STREAM_MAX)
		left = STREAM_MAX;
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sp) == -1)
		err(1, "socketpair");
	if (left > 0 && write(sp[1], p, left) != (ssize_t)left)
		err(1, "write");
	close(sp[1]);
	if ((ib = calloc(1, sizeof(*ib))) == NULL)
		abort();
	imsg_init(ib, sp[0]);
	imsg_refuse_fds(ib);
	for (;;) {
		if ((n = imsg_read(ib)) == -1 && errno != EAGAIN)
			break;
		if (n == 0)
			break;
		while ((n = imsg_get(ib, &imsg)) > 0) {
			one(imsg_get_type(&imsg), imsg_get_id(&imsg),
			    imsg.data, imsg_get_len(&imsg));
			imsg_free(&imsg);
		}
		if (n == -1)
			break;
	}
	imsg_clear(ib);
	free(ib);
	close(sp[0]);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t	 i;
	int	 raw;

	if (size < 1)
		return (0);
	raw = data[0] & 0x80;
	nwatch = data[0] & 0x7;
	if (nwatch > 0 && size < 1 + nwatch)
		return (0);
	for (i = 0; i < nwatch; i++)
		watch[i] = 1 + (data[1 + i] & 0x7);
	qsort(watch, nwatch, sizeof(watch[0]), pid_cmp);
	reqid = 1;
	gpu_snap_expect(s, reqid, watch, nwatch);
	s->logs = 0;
	data += 1 + nwatch;
	size -= 1 + nwatch;
	if (raw)
		stream(data, size);
	else
		messages(data, size);
	return (0);
}

/*
 * Seeds: the same snapshots as messages and as a stream.
 */
static uint8_t	 sbuf[16384];
static size_t	 slen;

static void
put(int framed, uint32_t type, uint32_t peerid, const void *d, size_t len)
{
	struct imsg_hdr	 h;

	if (framed) {
		memset(&h, 0, sizeof(h));
		h.type = type;
		h.peerid = peerid;
		h.len = (uint32_t)(sizeof(h) + len);
		memcpy(sbuf + slen, &h, sizeof(h));
		slen += sizeof(h);
	} else {
		sbuf[slen++] = (uint8_t)type;
		sbuf[slen++] = (uint8_t)peerid;
		sbuf[slen++] = (uint8_t)(len & 0xff);
		sbuf[slen++] = (uint8_t)(len >> 8);
	}
	memcpy(sbuf + slen, d, len);
	slen += len;
}

static void
snapshot(int framed, uint64_t id, int variant)
{
	struct gpu_snap_head	 h;
	struct gpu_device	 d;
	struct gpu_proc		 p;
	struct gpu_snap_end	 e;

	memset(&h, 0, sizeof(h));
	h.reqid = id;
	h.backends = GPU_BACKEND_NVML;
	h.ndev = 2;
	h.nproc = 2;
	put(framed, IMSG_GPU_SNAP_START, 0, &h, sizeof(h));
	memset(&d, 0, sizeof(d));
	d.vendor = GPU_VENDOR_NVIDIA;
	d.total = 24ULL << 30;
	d.used = variant == 1 ? 25ULL << 30 : 4ULL << 30;
	strlcpy(d.id, "GPU-11111111-2222", sizeof(d.id));
	strlcpy(d.pci, "0000:01:00.0", sizeof(d.pci));
	strlcpy(d.name, "NVIDIA Stand-in 24G", sizeof(d.name));
	put(framed, IMSG_GPU_DEVICE, 0, &d, sizeof(d));
	d.index = d.vindex = 1;
	d.vendor = GPU_VENDOR_AMD;
	d.vindex = 0;
	d.used = 2ULL << 30;
	strlcpy(d.id, variant == 2 ? "GPU-11111111-2222" : "0000:03:00.0",
	    sizeof(d.id));
	put(framed, IMSG_GPU_DEVICE, 0, &d, sizeof(d));
	memset(&p, 0, sizeof(p));
	p.pid = 2;
	p.bytes = variant == 3 ? 5ULL << 30 : 1ULL << 30;
	put(framed, IMSG_GPU_PROC, 0, &p, sizeof(p));
	p.dev = 1;
	p.pid = variant == 4 ? 7 : 3;
	put(framed, IMSG_GPU_PROC, 0, &p, sizeof(p));
	put(framed, IMSG_GPU_LOG, LOG_INFO, "NVML: a line", 13);
	e.reqid = id;
	put(framed, IMSG_GPU_SNAP_END, 0, &e, sizeof(e));
}

static void
write_seed(const char *dir, int n, int framed)
{
	char	 path[1024];
	int	 fd;

	(void)snprintf(path, sizeof(path), "%s/seed-%03d", dir, n);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    write(fd, sbuf, slen) != (ssize_t)slen)
		err(1, "%s", path);
	close(fd);
	(void)framed;
}

static void
write_seeds(const char *dir)
{
	int	 n = 0, framed, variant;

	for (framed = 0; framed < 2; framed++)
		for (variant = 0; variant < 5; variant++) {
			slen = 0;
			/* watch pids 2 and 3 */
			sbuf[slen++] = (uint8_t)((framed ? 0x80 : 0) | 2);
			sbuf[slen++] = 1;
			sbuf[slen++] = 2;
			snapshot(framed, 1, variant);
			snapshot(framed, 2, 0);
			write_seed(dir, n++, framed);
		}
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
	if ((s = calloc(1, sizeof(*s))) == NULL)
		err(1, "calloc");
	return (0);
}
