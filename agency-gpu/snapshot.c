/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * One snapshot being made by the backends (nvml.c, amd.c).  It keeps
 * the rules agencyd holds the probe to (agencyd/gpusnap.c): a driver
 * that reports something odd gets its figure corrected or left out
 * here, and said once, rather than have agencyd take the probe for a
 * liar and restart it again and again.
 *
 * Calls: common/log.c.
 */
#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "log.h"

void
snap_begin(struct snapshot *s, const uint32_t *watch, size_t nwatch)
{
	s->backends = 0;
	s->ndev = 0;
	s->nproc = 0;
	s->watch = watch;
	s->nwatch = nwatch;
}

/* An id agencyd takes: letters, digits and "-:._", not empty. */
static int
id_ok(const char *id)
{
	size_t	 i, len = strlen(id);

	if (len == 0 || len >= GPU_ID_MAX)
		return (0);
	for (i = 0; i < len; i++)
		if (!((id[i] >= '0' && id[i] <= '9') ||
		    (id[i] >= 'a' && id[i] <= 'z') ||
		    (id[i] >= 'A' && id[i] <= 'Z') ||
		    strchr("-:._", id[i]) != NULL))
			return (0);
	return (1);
}

struct gpu_device *
snap_add_device(struct snapshot *s, uint32_t vendor, uint32_t vindex,
    const char *id)
{
	static int		 said_full, said_id;
	struct gpu_device	*d;
	uint32_t		 i;

	if (s->ndev == GPU_DEVICES_MAX) {
		if (!said_full++)
			log_warnx("more than %d devices: the others are left "
			    "out", GPU_DEVICES_MAX);
		return (NULL);
	}
	for (i = 0; i < s->ndev; i++)
		if (strcmp(s->dev[i].id, id) == 0)
			break;
	if (!id_ok(id) || i < s->ndev) {
		if (!said_id++)
			log_warnx("a device's id is malformed or taken (%.40s):"
			    " it is left out", id);
		return (NULL);
	}
	d = &s->dev[s->ndev];
	memset(d, 0, sizeof(*d));
	d->index = s->ndev++;
	d->vendor = vendor;
	d->vindex = vindex;
	(void)strlcpy(d->id, id, sizeof(d->id));
	return (d);
}

void
snap_name(char *dst, size_t size, const char *src)
{
	size_t	 i;

	if (size == 0)
		return;
	for (i = 0; i + 1 < size && src[i] != '\0'; i++)
		dst[i] = src[i] >= 0x20 && src[i] <= 0x7e ? src[i] : '?';
	dst[i] = '\0';
}

static int
pid_cmp(const void *a, const void *b)
{
	uint32_t	 x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x < y ? -1 : x > y);
}

int
snap_watched(const struct snapshot *s, uint32_t pid)
{
	return (s->nwatch > 0 && bsearch(&pid, s->watch, s->nwatch,
	    sizeof(*s->watch), pid_cmp) != NULL);
}

void
snap_add_proc(struct snapshot *s, uint32_t dev, uint32_t pid,
    uint64_t bytes, uint32_t flags)
{
	struct gpu_proc	*p;
	uint32_t	 i;

	if (dev >= s->ndev || !snap_watched(s, pid) ||
	    (s->dev[dev].flags & GPU_DEV_NOPROC))
		return;
	if (flags & GPU_PROC_UNKNOWN)
		bytes = 0;
	if (bytes > GPU_MEM_MAX)
		bytes = GPU_MEM_MAX;
	for (i = 0; i < s->nproc; i++) {
		p = &s->proc[i];
		if (p->dev == dev && p->pid == pid) {
			p->bytes += bytes;
			if (p->bytes > GPU_MEM_MAX)
				p->bytes = GPU_MEM_MAX;
			if (!(flags & GPU_PROC_UNKNOWN))
				p->flags &= ~(uint32_t)GPU_PROC_UNKNOWN;
			return;
		}
	}
	/* Each (device, watched pid) once: never more than the bound. */
	if (s->nproc == GPU_PROCS_MAX)
		return;
	p = &s->proc[s->nproc++];
	memset(p, 0, sizeof(*p));
	p->dev = dev;
	p->pid = pid;
	p->flags = flags & GPU_PROC_UNKNOWN;
	p->bytes = bytes;
}

void
snap_settle(struct snapshot *s)
{
	static int		 said_total, said_sum;
	struct gpu_device	*d;
	uint64_t		 sum[GPU_DEVICES_MAX];
	uint32_t		 i;

	for (i = 0; i < s->ndev; i++) {
		d = &s->dev[i];
		if (!(d->flags & GPU_DEV_NOMEM) && (d->total == 0 ||
		    d->total > GPU_MEM_MAX)) {
			if (!said_total++)
				log_warnx("device %s reports %llu bytes in "
				    "all: its figures are left out", d->id,
				    (unsigned long long)d->total);
			d->flags |= GPU_DEV_NOMEM;
		}
		if (d->flags & GPU_DEV_NOMEM) {
			d->flags |= GPU_DEV_NOPROC;
			d->total = d->used = 0;
		} else if (d->used > d->total)
			d->used = d->total;
	}
	memset(sum, 0, sizeof(sum));
	for (i = 0; i < s->nproc; i++) {
		d = &s->dev[s->proc[i].dev];
		if (d->flags & GPU_DEV_NOPROC) {
			s->proc[i--] = s->proc[--s->nproc];
			continue;
		}
		/* Shared buffers may be counted twice: never past used. */
		if (s->proc[i].bytes > d->used - sum[d->index]) {
			if (!said_sum++)
				log_warnx("device %s: its processes' figures "
				    "add up to more than its used memory; "
				    "cut to it", d->id);
			s->proc[i].bytes = d->used - sum[d->index];
		}
		sum[d->index] += s->proc[i].bytes;
	}
}
