/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The GPU probe's messages as agencyd reads them: every figure is a
 * claim, checked before it counts, since the probe runs as the model
 * user, whom a model process could take over.  A snapshot is taken
 * whole, and only when it keeps every rule (above gpu_snap_feed); a lie
 * leaves s->why and nothing else: the caller kills the probe.  Log
 * lines are taken between and inside snapshots, at most GPU_LOGS_MAX
 * between two answers.  Pure: no I/O, no allocation.
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

enum {
	GS_IDLE,		/* no snapshot begun */
	GS_DEVICES,		/* its head came: devices */
	GS_PROCS,		/* all its devices came: processes */
};

static enum gpu_feed
lie(struct gpu_snap *s, const char *fmt, ...)
    __attribute__((__format__ (printf, 2, 3)));

static enum gpu_feed
lie(struct gpu_snap *s, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	(void)vsnprintf(s->why, sizeof(s->why), fmt, ap);
	va_end(ap);
	s->phase = GS_IDLE;
	return (GPU_FEED_LIE);
}

void
gpu_snap_expect(struct gpu_snap *s, uint64_t reqid, const uint32_t *watch,
    size_t nwatch)
{
	s->phase = GS_IDLE;
	s->want = reqid;
	s->watch = watch;
	s->nwatch = nwatch;
	s->why[0] = '\0';
}

/* A string that ends inside its array, not empty, each byte allowed. */
static int
field_ok(const char *f, size_t size, const char *extra, int empty_ok)
{
	const char	*nul;
	size_t		 i, len;

	if ((nul = memchr(f, '\0', size)) == NULL)
		return (0);
	len = (size_t)(nul - f);
	if (len == 0)
		return (empty_ok);
	for (i = 0; i < len; i++) {
		if (extra == NULL) {
			if (f[i] < 0x20 || f[i] > 0x7e)
				return (0);
		} else if (!((f[i] >= '0' && f[i] <= '9') ||
		    (f[i] >= 'a' && f[i] <= 'z') ||
		    (f[i] >= 'A' && f[i] <= 'Z') || strchr(extra, f[i]) !=
		    NULL))
			return (0);
	}
	return (1);
}

static int
pid_cmp(const void *a, const void *b)
{
	uint32_t	 x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x < y ? -1 : x > y);
}

static int
watched(const struct gpu_snap *s, uint32_t pid)
{
	return (s->nwatch > 0 && bsearch(&pid, s->watch, s->nwatch,
	    sizeof(*s->watch), pid_cmp) != NULL);
}

static int
proc_cmp(const void *a, const void *b)
{
	const struct gpu_proc	*x = a, *y = b;

	if (x->dev != y->dev)
		return (x->dev < y->dev ? -1 : 1);
	return (x->pid < y->pid ? -1 : x->pid > y->pid);
}

static enum gpu_feed
feed_head(struct gpu_snap *s, const void *data, size_t len)
{
	struct gpu_snap_head	 h;

	if (s->phase != GS_IDLE)
		return (lie(s, "began a snapshot inside another"));
	if (len != sizeof(h))
		return (lie(s, "sent a snapshot head of %zu bytes", len));
	memcpy(&h, data, sizeof(h));
	if (s->want == 0)
		return (lie(s, "sent a snapshot nobody asked for"));
	if (h.reqid != s->want)
		return (lie(s, "answered poll %llu, not %llu",
		    (unsigned long long)h.reqid,
		    (unsigned long long)s->want));
	if ((h.backends & ~(uint32_t)(GPU_BACKEND_NVML | GPU_BACKEND_AMD))
	    != 0 || h.pad != 0)
		return (lie(s, "sent unknown bits in a snapshot head"));
	if (h.ndev > GPU_DEVICES_MAX)
		return (lie(s, "claimed %u devices", h.ndev));
	if (h.nproc > GPU_PROCS_MAX ||
	    (uint64_t)h.nproc > (uint64_t)h.ndev * s->nwatch)
		return (lie(s, "claimed %u process figures for %u devices "
		    "and %zu processes", h.nproc, h.ndev, s->nwatch));
	memset(&s->t, 0, offsetof(struct gpu_table, dev));
	s->t.reqid = h.reqid;
	s->t.backends = h.backends;
	/* The counts announced; the table's count what came. */
	s->ndev_said = h.ndev;
	s->nproc_said = h.nproc;
	memset(s->sum, 0, sizeof(s->sum));
	s->phase = h.ndev > 0 ? GS_DEVICES : GS_PROCS;
	return (GPU_FEED_MORE);
}

static enum gpu_feed
feed_device(struct gpu_snap *s, const void *data, size_t len)
{
	struct gpu_device	 d;
	uint32_t		 i;

	if (s->phase != GS_DEVICES)
		return (lie(s, "sent a device outside a snapshot's list"));
	if (len != sizeof(d))
		return (lie(s, "sent a device of %zu bytes", len));
	memcpy(&d, data, sizeof(d));
	if (d.index != s->t.ndev)
		return (lie(s, "sent device %u in place %u", d.index,
		    s->t.ndev));
	if (d.vendor != GPU_VENDOR_NVIDIA && d.vendor != GPU_VENDOR_AMD)
		return (lie(s, "named vendor %u for device %u", d.vendor,
		    d.index));
	if ((d.flags & ~(uint32_t)(GPU_DEV_NOMEM | GPU_DEV_NOPROC)) != 0)
		return (lie(s, "sent unknown flags for device %u", d.index));
	if (!field_ok(d.id, sizeof(d.id), "-:._", 0) ||
	    !field_ok(d.pci, sizeof(d.pci), ":.", 1) ||
	    !field_ok(d.name, sizeof(d.name), NULL, 1))
		return (lie(s, "sent a malformed id, PCI address or name "
		    "for device %u", d.index));
	if (d.flags & GPU_DEV_NOMEM) {
		if (d.total != 0 || d.used != 0)
			return (lie(s, "gave figures for device %u, whose "
			    "memory it could not read", d.index));
	} else if (d.total == 0 || d.total > GPU_MEM_MAX ||
	    d.used > d.total)
		return (lie(s, "claimed %llu of %llu bytes used on "
		    "device %u", (unsigned long long)d.used,
		    (unsigned long long)d.total, d.index));
	for (i = 0; i < s->t.ndev; i++) {
		if (strcmp(s->t.dev[i].id, d.id) == 0)
			return (lie(s, "named devices %u and %u both %s", i,
			    d.index, d.id));
		if (s->t.dev[i].vendor == d.vendor &&
		    s->t.dev[i].vindex == d.vindex)
			return (lie(s, "gave devices %u and %u one vendor "
			    "index", i, d.index));
	}
	s->t.dev[s->t.ndev++] = d;
	if (s->t.ndev == s->ndev_said)
		s->phase = GS_PROCS;
	return (GPU_FEED_MORE);
}

static enum gpu_feed
feed_proc(struct gpu_snap *s, const void *data, size_t len)
{
	struct gpu_proc		 p;

	if (s->phase != GS_PROCS)
		return (lie(s, "sent a process figure before its devices"));
	if (len != sizeof(p))
		return (lie(s, "sent a process figure of %zu bytes", len));
	if (s->t.nproc == s->nproc_said)
		return (lie(s, "sent more than the %u process figures it "
		    "announced", s->nproc_said));
	memcpy(&p, data, sizeof(p));
	if (p.dev >= s->t.ndev)
		return (lie(s, "gave a figure for device %u of %u", p.dev,
		    s->t.ndev));
	if ((p.flags & ~(uint32_t)GPU_PROC_UNKNOWN) != 0 || p.pad != 0)
		return (lie(s, "sent unknown flags in a process figure"));
	if (s->t.dev[p.dev].flags & GPU_DEV_NOPROC)
		return (lie(s, "gave a process figure for device %u, which "
		    "has none", p.dev));
	if (!watched(s, p.pid))
		return (lie(s, "gave a figure for pid %u, not watched",
		    p.pid));
	if (((p.flags & GPU_PROC_UNKNOWN) && p.bytes != 0) ||
	    p.bytes > GPU_MEM_MAX)
		return (lie(s, "claimed %llu bytes for pid %u",
		    (unsigned long long)p.bytes, p.pid));
	/* At most GPU_PROCS_MAX figures of at most 2^50: no overflow. */
	s->sum[p.dev] += p.bytes;
	if (s->sum[p.dev] > s->t.dev[p.dev].used)
		return (lie(s, "gave processes more than the %llu bytes "
		    "used on device %u",
		    (unsigned long long)s->t.dev[p.dev].used, p.dev));
	s->t.proc[s->t.nproc++] = p;
	return (GPU_FEED_MORE);
}

static enum gpu_feed
feed_end(struct gpu_snap *s, const void *data, size_t len)
{
	struct gpu_snap_end	 e;
	uint32_t		 i;

	if (s->phase != GS_PROCS)
		return (lie(s, "ended a snapshot %s", s->phase == GS_IDLE ?
		    "it had not begun" : "before all its devices"));
	if (len != sizeof(e))
		return (lie(s, "sent a snapshot end of %zu bytes", len));
	memcpy(&e, data, sizeof(e));
	if (e.reqid != s->t.reqid)
		return (lie(s, "ended snapshot %llu as %llu",
		    (unsigned long long)s->t.reqid,
		    (unsigned long long)e.reqid));
	if (s->t.nproc != s->nproc_said)
		return (lie(s, "sent %u process figures of the %u it "
		    "announced", s->t.nproc, s->nproc_said));
	qsort(s->t.proc, s->t.nproc, sizeof(s->t.proc[0]), proc_cmp);
	for (i = 1; i < s->t.nproc; i++)
		if (proc_cmp(&s->t.proc[i - 1], &s->t.proc[i]) == 0)
			return (lie(s, "gave pid %u two figures on device %u",
			    s->t.proc[i].pid, s->t.proc[i].dev));
	s->phase = GS_IDLE;
	s->want = 0;
	s->logs = 0;
	return (GPU_FEED_WHOLE);
}

/*
 * A message of the probe's.  The probe runs as the model user, whom a
 * model process could take over (ptrace is off, but a model is
 * code we did not write), so a snapshot is only taken whole and only
 * when it keeps every rule:
 *
 *   - it answers the poll out (its reqid), and only then comes;
 *   - exact sizes; strings end inside their arrays, ids and PCI
 *     addresses of their own characters, names printable;
 *   - at most GPU_DEVICES_MAX devices and GPU_PROCS_MAX process
 *     figures, and no more figures than watched processes a device;
 *   - devices in index order, known vendors and flags, distinct ids
 *     and vendor indexes, 0 < total <= GPU_MEM_MAX, used <= total
 *     (or both 0 for a device whose memory could not be read);
 *   - process figures on a device of the snapshot that has them, of a
 *     watched pid, once a (device, pid), and summing to no more than
 *     the device's used memory;
 *   - the counts it announced, then its end, with its reqid.
 */
enum gpu_feed
gpu_snap_feed(struct gpu_snap *s, uint32_t type, uint32_t peerid,
    const void *data, size_t len, const char **line, int *pri)
{
	if (len > 0 && data == NULL)
		return (lie(s, "sent a payload that is not there"));
	switch (type) {
	case IMSG_GPU_SNAP_START:
		return (feed_head(s, data, len));
	case IMSG_GPU_DEVICE:
		return (feed_device(s, data, len));
	case IMSG_GPU_PROC:
		return (feed_proc(s, data, len));
	case IMSG_GPU_SNAP_END:
		return (feed_end(s, data, len));
	case IMSG_GPU_LOG:
		if (len == 0 || len > GPU_LOGLINE_MAX ||
		    memchr(data, '\0', len) != (const char *)data + len - 1)
			return (lie(s, "sent a malformed log line"));
		if (++s->logs > GPU_LOGS_MAX)
			return (lie(s, "logged more than %d lines between "
			    "two answers", GPU_LOGS_MAX));
		*line = data;
		*pri = (int)peerid;
		return (GPU_FEED_LOG);
	default:
		return (lie(s, "sent a message of unknown type %u", type));
	}
}

int64_t
gpu_table_proc(const struct gpu_table *t, uint32_t dev, uint32_t pid)
{
	struct gpu_proc	 key, *p;

	memset(&key, 0, sizeof(key));
	key.dev = dev;
	key.pid = pid;
	p = bsearch(&key, t->proc, t->nproc, sizeof(t->proc[0]), proc_cmp);
	return (p == NULL ? -1 : (int64_t)p->bytes);
}
