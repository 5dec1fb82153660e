/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * gpusnap.c: the GPU probe's messages as agencyd reads them.  A good
 * snapshot is taken whole; each rule broken is a lie, named.
 */
#include <atf-c.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "gpu.h"

#define GIB	(1ULL << 30)

static struct gpu_snap	*s;
static uint32_t		 watched[] = { 100, 200, 300 };

static void
setup(void)
{
	if (s == NULL)
		ATF_REQUIRE((s = calloc(1, sizeof(*s))) != NULL);
	gpu_snap_expect(s, 7, watched, 3);
}

static enum gpu_feed
feed(uint32_t type, const void *data, size_t len)
{
	const char	*line = NULL;
	int		 pri = -1;

	return (gpu_snap_feed(s, type, 0, data, len, &line, &pri));
}

static enum gpu_feed
head(uint64_t reqid, uint32_t ndev, uint32_t nproc)
{
	struct gpu_snap_head	 h;

	memset(&h, 0, sizeof(h));
	h.reqid = reqid;
	h.backends = GPU_BACKEND_NVML;
	h.ndev = ndev;
	h.nproc = nproc;
	return (feed(IMSG_GPU_SNAP_START, &h, sizeof(h)));
}

static struct gpu_device
dev(uint32_t i, const char *id, uint64_t total, uint64_t used)
{
	struct gpu_device	 d;

	memset(&d, 0, sizeof(d));
	d.index = i;
	d.vendor = GPU_VENDOR_NVIDIA;
	d.vindex = i;
	d.total = total;
	d.used = used;
	strlcpy(d.id, id, sizeof(d.id));
	strlcpy(d.pci, "0000:01:00.0", sizeof(d.pci));
	strlcpy(d.name, "NVIDIA Test 24G", sizeof(d.name));
	return (d);
}

static enum gpu_feed
device(struct gpu_device d)
{
	return (feed(IMSG_GPU_DEVICE, &d, sizeof(d)));
}

static enum gpu_feed
proc(uint32_t d, uint32_t pid, uint64_t bytes, uint32_t flags)
{
	struct gpu_proc	 p;

	memset(&p, 0, sizeof(p));
	p.dev = d;
	p.pid = pid;
	p.bytes = bytes;
	p.flags = flags;
	return (feed(IMSG_GPU_PROC, &p, sizeof(p)));
}

static enum gpu_feed
end(uint64_t reqid)
{
	struct gpu_snap_end	 e;

	e.reqid = reqid;
	return (feed(IMSG_GPU_SNAP_END, &e, sizeof(e)));
}

#define MORE(x)		ATF_REQUIRE_EQ_MSG((x), GPU_FEED_MORE, "%s", s->why)
#define LIE(x, msg)	do {						\
	ATF_REQUIRE_EQ((x), GPU_FEED_LIE);				\
	ATF_CHECK_STREQ_MSG(s->why, (msg), "why: %s", s->why);		\
} while (0)

ATF_TC_WITHOUT_HEAD(whole);
ATF_TC_BODY(whole, tc)
{
	setup();
	MORE(head(7, 2, 3));
	MORE(device(dev(0, "GPU-aaaa", 24 * GIB, 10 * GIB)));
	MORE(device(dev(1, "GPU-bbbb", 16 * GIB, 3 * GIB)));
	MORE(proc(1, 300, GIB, 0));
	MORE(proc(0, 100, 4 * GIB, 0));
	MORE(proc(0, 200, 0, GPU_PROC_UNKNOWN));
	ATF_REQUIRE_EQ(end(7), GPU_FEED_WHOLE);
	ATF_CHECK_EQ(s->t.ndev, 2);
	ATF_CHECK_EQ(s->t.nproc, 3);
	ATF_CHECK_EQ(s->t.backends, GPU_BACKEND_NVML);
	ATF_CHECK_STREQ(s->t.dev[1].id, "GPU-bbbb");
	/* By device, then pid. */
	ATF_CHECK_EQ(s->t.proc[0].pid, 100);
	ATF_CHECK_EQ(s->t.proc[2].dev, 1);
	ATF_CHECK_EQ(gpu_table_proc(&s->t, 0, 100), (int64_t)(4 * GIB));
	ATF_CHECK_EQ(gpu_table_proc(&s->t, 1, 300), (int64_t)GIB);
	ATF_CHECK_EQ(gpu_table_proc(&s->t, 1, 100), -1);
	/* Answered: the next one must be asked for. */
	LIE(head(7, 0, 0), "sent a snapshot nobody asked for");
}

ATF_TC_WITHOUT_HEAD(empty);
ATF_TC_BODY(empty, tc)
{
	setup();
	MORE(head(7, 0, 0));
	ATF_REQUIRE_EQ(end(7), GPU_FEED_WHOLE);
	ATF_CHECK_EQ(s->t.ndev, 0);
}

ATF_TC_WITHOUT_HEAD(heads);
ATF_TC_BODY(heads, tc)
{
	struct gpu_snap_head	 h;

	setup();
	LIE(head(8, 0, 0), "answered poll 8, not 7");
	setup();
	LIE(head(7, GPU_DEVICES_MAX + 1, 0), "claimed 65 devices");
	setup();
	LIE(head(7, 1, 4), "claimed 4 process figures for 1 devices and 3 "
	    "processes");
	setup();
	memset(&h, 0, sizeof(h));
	h.reqid = 7;
	LIE(feed(IMSG_GPU_SNAP_START, &h, sizeof(h) - 1),
	    "sent a snapshot head of 23 bytes");
	setup();
	h.backends = 0x4;
	LIE(feed(IMSG_GPU_SNAP_START, &h, sizeof(h)),
	    "sent unknown bits in a snapshot head");
	setup();
	MORE(head(7, 1, 0));
	LIE(head(7, 1, 0), "began a snapshot inside another");
	gpu_snap_expect(s, 0, watched, 3);
	LIE(head(0, 0, 0), "sent a snapshot nobody asked for");
}

ATF_TC_WITHOUT_HEAD(devices);
ATF_TC_BODY(devices, tc)
{
	struct gpu_device	 d;
	char			 big[sizeof(d) + 1];

	setup();
	MORE(head(7, 1, 0));
	LIE(device(dev(0, "GPU-a", 8 * GIB, 9 * GIB)),
	    "claimed 9663676416 of 8589934592 bytes used on device 0");
	setup();
	MORE(head(7, 1, 0));
	LIE(device(dev(0, "GPU-a", 0, 0)),
	    "claimed 0 of 0 bytes used on device 0");
	setup();
	MORE(head(7, 1, 0));
	LIE(device(dev(0, "GPU-a", GPU_MEM_MAX + 1, 0)),
	    "claimed 0 of 1125899906842625 bytes used on device 0");
	/* The largest that is not a lie. */
	setup();
	MORE(head(7, 1, 0));
	MORE(device(dev(0, "GPU-a", GPU_MEM_MAX, GPU_MEM_MAX)));
	ATF_REQUIRE_EQ(end(7), GPU_FEED_WHOLE);
	setup();
	MORE(head(7, 2, 0));
	LIE(device(dev(1, "GPU-a", 8 * GIB, 0)),
	    "sent device 1 in place 0");
	setup();
	MORE(head(7, 2, 0));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 0)));
	LIE(device(dev(1, "GPU-a", 8 * GIB, 0)),
	    "named devices 0 and 1 both GPU-a");
	setup();
	MORE(head(7, 2, 0));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 0)));
	d = dev(1, "GPU-b", 8 * GIB, 0);
	d.vindex = 0;
	LIE(device(d), "gave devices 0 and 1 one vendor index");
	setup();
	MORE(head(7, 1, 0));
	d = dev(0, "GPU-a", 8 * GIB, 0);
	d.vendor = 3;
	LIE(device(d), "named vendor 3 for device 0");
	setup();
	MORE(head(7, 1, 0));
	d = dev(0, "GPU-a", 8 * GIB, 0);
	d.flags = 0x10;
	LIE(device(d), "sent unknown flags for device 0");
	memset(big, 0, sizeof(big));
	/* A device whose memory could not be read has no figures. */
	setup();
	MORE(head(7, 1, 0));
	d = dev(0, "GPU-a", 8 * GIB, 0);
	d.flags = GPU_DEV_NOMEM;
	LIE(device(d), "gave figures for device 0, whose memory it could "
	    "not read");
	setup();
	MORE(head(7, 1, 0));
	d = dev(0, "GPU-a", 0, 0);
	d.flags = GPU_DEV_NOMEM | GPU_DEV_NOPROC;
	MORE(device(d));
	ATF_REQUIRE_EQ(end(7), GPU_FEED_WHOLE);
	setup();
	MORE(head(7, 0, 0));
	LIE(device(dev(0, "GPU-a", 8 * GIB, 0)),
	    "sent a device outside a snapshot's list");
	setup();
	MORE(head(7, 1, 0));
	LIE(feed(IMSG_GPU_DEVICE, big, sizeof(big)),
	    "sent a device of 257 bytes");
}

ATF_TC_WITHOUT_HEAD(strings);
ATF_TC_BODY(strings, tc)
{
	struct gpu_device	 d;
	const char		*why = "sent a malformed id, PCI address or "
				    "name for device 0";

	setup();
	MORE(head(7, 1, 0));
	d = dev(0, "GPU-a", 8 * GIB, 0);
	memset(d.id, 'A', sizeof(d.id));
	LIE(device(d), why);
	setup();
	MORE(head(7, 1, 0));
	LIE(device(dev(0, "", 8 * GIB, 0)), why);
	setup();
	MORE(head(7, 1, 0));
	LIE(device(dev(0, "GPU a", 8 * GIB, 0)), why);
	setup();
	MORE(head(7, 1, 0));
	LIE(device(dev(0, "GPU-a/../x", 8 * GIB, 0)), why);
	setup();
	MORE(head(7, 1, 0));
	d = dev(0, "GPU-a", 8 * GIB, 0);
	strlcpy(d.name, "bell\a", sizeof(d.name));
	LIE(device(d), why);
	setup();
	MORE(head(7, 1, 0));
	d = dev(0, "GPU-a", 8 * GIB, 0);
	strlcpy(d.pci, "0000:01:00.0;", sizeof(d.pci));
	LIE(device(d), why);
	/* An empty PCI address or name is allowed. */
	setup();
	MORE(head(7, 1, 0));
	d = dev(0, "0000:03:00.0", 8 * GIB, 0);
	d.pci[0] = d.name[0] = '\0';
	MORE(device(d));
}

ATF_TC_WITHOUT_HEAD(procs);
ATF_TC_BODY(procs, tc)
{
	struct gpu_device	 d;
	struct gpu_proc		 p;

	setup();
	MORE(head(7, 1, 2));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 2 * GIB)));
	LIE(proc(0, 400, GIB, 0), "gave a figure for pid 400, not watched");
	setup();
	MORE(head(7, 1, 2));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 2 * GIB)));
	LIE(proc(1, 100, GIB, 0), "gave a figure for device 1 of 1");
	setup();
	MORE(head(7, 1, 2));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 2 * GIB)));
	MORE(proc(0, 100, GIB, 0));
	LIE(proc(0, 200, GIB + 1, 0), "gave processes more than the "
	    "2147483648 bytes used on device 0");
	setup();
	MORE(head(7, 1, 1));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 2 * GIB)));
	LIE(proc(0, 100, 1, GPU_PROC_UNKNOWN), "claimed 1 bytes for pid 100");
	setup();
	MORE(head(7, 1, 1));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 2 * GIB)));
	LIE(proc(0, 100, 1, 0x8), "sent unknown flags in a process figure");
	setup();
	MORE(head(7, 1, 2));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 2 * GIB)));
	MORE(proc(0, 100, GIB, 0));
	MORE(proc(0, 100, 0, 0));
	LIE(end(7), "gave pid 100 two figures on device 0");
	setup();
	MORE(head(7, 1, 1));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 2 * GIB)));
	MORE(proc(0, 100, GIB, 0));
	LIE(proc(0, 200, 0, 0), "sent more than the 1 process figures it "
	    "announced");
	setup();
	MORE(head(7, 1, 2));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 2 * GIB)));
	MORE(proc(0, 100, GIB, 0));
	LIE(end(7), "sent 1 process figures of the 2 it announced");
	setup();
	MORE(head(7, 2, 1));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 2 * GIB)));
	LIE(proc(0, 100, GIB, 0), "sent a process figure before its "
	    "devices");
	setup();
	MORE(head(7, 1, 1));
	d = dev(0, "GPU-a", 8 * GIB, 2 * GIB);
	d.flags = GPU_DEV_NOPROC;
	MORE(device(d));
	LIE(proc(0, 100, GIB, 0), "gave a process figure for device 0, which "
	    "has none");
	setup();
	MORE(head(7, 1, 1));
	MORE(device(dev(0, "GPU-a", 8 * GIB, 2 * GIB)));
	memset(&p, 0, sizeof(p));
	LIE(feed(IMSG_GPU_PROC, &p, sizeof(p) - 8),
	    "sent a process figure of 16 bytes");
}

ATF_TC_WITHOUT_HEAD(ends);
ATF_TC_BODY(ends, tc)
{
	setup();
	LIE(end(7), "ended a snapshot it had not begun");
	setup();
	MORE(head(7, 1, 0));
	LIE(end(7), "ended a snapshot before all its devices");
	setup();
	MORE(head(7, 0, 0));
	LIE(end(6), "ended snapshot 7 as 6");
	setup();
	MORE(head(7, 0, 0));
	LIE(feed(IMSG_GPU_SNAP_END, "x", 1), "sent a snapshot end of 1 bytes");
	setup();
	LIE(feed(IMSG_GPU_POLL, NULL, 0), "sent a message of unknown type 2");
	setup();
	LIE(feed(IMSG_GPU_MAXTYPE + 1, NULL, 0),
	    "sent a message of unknown type 9");
	setup();
	LIE(feed(IMSG_GPU_DEVICE, NULL, 10),
	    "sent a payload that is not there");
}

ATF_TC_WITHOUT_HEAD(logs);
ATF_TC_BODY(logs, tc)
{
	const char	*line = NULL;
	char		 big[GPU_LOGLINE_MAX + 1];
	int		 pri = -1, i;

	setup();
	ATF_REQUIRE_EQ(gpu_snap_feed(s, IMSG_GPU_LOG, LOG_WARNING,
	    "NVML: hello", 12, &line, &pri), GPU_FEED_LOG);
	ATF_CHECK_STREQ(line, "NVML: hello");
	ATF_CHECK_EQ(pri, LOG_WARNING);
	/* Inside a snapshot too. */
	MORE(head(7, 0, 0));
	ATF_REQUIRE_EQ(gpu_snap_feed(s, IMSG_GPU_LOG, LOG_INFO, "x", 2,
	    &line, &pri), GPU_FEED_LOG);
	ATF_REQUIRE_EQ(end(7), GPU_FEED_WHOLE);
	setup();
	LIE(gpu_snap_feed(s, IMSG_GPU_LOG, 0, "ab", 2, &line, &pri),
	    "sent a malformed log line");
	setup();
	LIE(gpu_snap_feed(s, IMSG_GPU_LOG, 0, "a\0b", 4, &line, &pri),
	    "sent a malformed log line");
	setup();
	LIE(gpu_snap_feed(s, IMSG_GPU_LOG, 0, "", 0, &line, &pri),
	    "sent a malformed log line");
	memset(big, 'a', sizeof(big));
	big[sizeof(big) - 1] = '\0';
	setup();
	LIE(gpu_snap_feed(s, IMSG_GPU_LOG, 0, big, sizeof(big), &line, &pri),
	    "sent a malformed log line");
	/* GPU_LOGS_MAX between two answers; an answer starts again. */
	setup();
	s->logs = 0;
	for (i = 0; i < GPU_LOGS_MAX; i++)
		ATF_REQUIRE_EQ(gpu_snap_feed(s, IMSG_GPU_LOG, 0, "x", 2, &line,
		    &pri), GPU_FEED_LOG);
	MORE(head(7, 0, 0));
	ATF_REQUIRE_EQ(end(7), GPU_FEED_WHOLE);
	ATF_REQUIRE_EQ(gpu_snap_feed(s, IMSG_GPU_LOG, 0, "x", 2, &line, &pri),
	    GPU_FEED_LOG);
	s->logs = GPU_LOGS_MAX;
	LIE(gpu_snap_feed(s, IMSG_GPU_LOG, 0, "x", 2, &line, &pri),
	    "logged more than 32 lines between two answers");
}

/* The most figures a snapshot may hold, and one more. */
ATF_TC_WITHOUT_HEAD(bounds);
ATF_TC_BODY(bounds, tc)
{
	static uint32_t	 many[GPU_WATCH_MAX];
	char		 id[32];
	uint32_t	 i, d;

	for (i = 0; i < GPU_WATCH_MAX; i++)
		many[i] = i + 1;
	if (s == NULL)
		ATF_REQUIRE((s = calloc(1, sizeof(*s))) != NULL);
	gpu_snap_expect(s, 1, many, GPU_WATCH_MAX);
	MORE(head(1, 2, GPU_PROCS_MAX));
	for (d = 0; d < 2; d++) {
		snprintf(id, sizeof(id), "GPU-%u", d);
		MORE(device(dev(d, id, 80 * GIB, 80 * GIB)));
	}
	for (i = 0; i < GPU_PROCS_MAX; i++)
		MORE(proc(i % 2, many[i / 2], 1 << 20, 0));
	ATF_REQUIRE_EQ(end(1), GPU_FEED_WHOLE);
	ATF_CHECK_EQ(s->t.nproc, GPU_PROCS_MAX);
	ATF_CHECK_EQ(gpu_table_proc(&s->t, 1, GPU_WATCH_MAX), 1 << 20);
	gpu_snap_expect(s, 2, many, GPU_WATCH_MAX);
	LIE(head(2, 3, GPU_PROCS_MAX + 1), "claimed 4097 process figures for "
	    "3 devices and 2048 processes");
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, whole);
	ATF_TP_ADD_TC(tp, empty);
	ATF_TP_ADD_TC(tp, heads);
	ATF_TP_ADD_TC(tp, devices);
	ATF_TP_ADD_TC(tp, strings);
	ATF_TP_ADD_TC(tp, procs);
	ATF_TP_ADD_TC(tp, ends);
	ATF_TP_ADD_TC(tp, logs);
	ATF_TP_ADD_TC(tp, bounds);
	return (atf_no_error());
}
