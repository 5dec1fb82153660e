/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-gpu's pure parts: DRM fdinfo as amdgpu writes it (amd.c), and
 * the snapshot that keeps agencyd's rules (snapshot.c).
 */
#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"
#include "probe.h"

#define MIB	(1ULL << 20)
#define GIB	(1ULL << 30)

static struct drm_client	 c;

ATF_TC_WITHOUT_HEAD(fdinfo_amdgpu);
ATF_TC_BODY(fdinfo_amdgpu, tc)
{
	/* As an amdgpu of kernel 6.1 writes it. */
	const char	*text = "pos:\t0\nflags:\t02100002\nmnt_id:\t24\n"
	    "ino:\t1052\ndrm-driver:\tamdgpu\ndrm-pdev:\t0000:03:00.0\n"
	    "drm-client-id:\t17\ndrm-memory-vram:\t524288 KiB\n"
	    "drm-memory-gtt: \t2048 KiB\ndrm-memory-cpu: \t0 KiB\n";

	ATF_REQUIRE_EQ(amd_fdinfo(text, &c), 1);
	ATF_CHECK_STREQ(c.pdev, "0000:03:00.0");
	ATF_CHECK_EQ(c.has_id, 1);
	ATF_CHECK_EQ(c.id, 17);
	ATF_CHECK_EQ(c.vram, 512 * MIB);
}

ATF_TC_WITHOUT_HEAD(fdinfo_units);
ATF_TC_BODY(fdinfo_units, tc)
{
	ATF_REQUIRE_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-memory-vram: 100 MiB\n", &c), 1);
	ATF_CHECK_EQ(c.vram, 100 * MIB);
	ATF_CHECK_EQ(c.has_id, 0);
	ATF_REQUIRE_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-memory-vram: 3 GiB\n", &c), 1);
	ATF_CHECK_EQ(c.vram, 3 * GIB);
	ATF_REQUIRE_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-memory-vram: 4096\n", &c), 1);
	ATF_CHECK_EQ(c.vram, 4096);
	/* Newer kernels: resident, then total. */
	ATF_REQUIRE_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-total-vram: 9 MiB\ndrm-resident-vram: 7 MiB\n", &c), 1);
	ATF_CHECK_EQ(c.vram, 7 * MIB);
	ATF_REQUIRE_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-total-vram: 9 MiB\n", &c), 1);
	ATF_CHECK_EQ(c.vram, 9 * MIB);
	/* The older key first. */
	ATF_REQUIRE_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-resident-vram: 7 MiB\ndrm-memory-vram: 5 MiB\n", &c), 1);
	ATF_CHECK_EQ(c.vram, 5 * MIB);
	/* A figure past any device's is cut to the bound. */
	ATF_REQUIRE_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-memory-vram: 2000000000000 MiB\n", &c), 1);
	ATF_CHECK_EQ(c.vram, GPU_MEM_MAX);
}

ATF_TC_WITHOUT_HEAD(fdinfo_not_taken);
ATF_TC_BODY(fdinfo_not_taken, tc)
{
	/* Not DRM; DRM without VRAM; keys that only begin alike. */
	ATF_CHECK_EQ(amd_fdinfo("pos:\t0\nflags:\t02\n", &c), 0);
	ATF_CHECK_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-memory-gtt: 5 MiB\n", &c), 0);
	ATF_CHECK_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-memory-vram0: 5 MiB\n", &c), 0);
	ATF_CHECK_EQ(amd_fdinfo("xdrm-pdev: 0000:03:00.0\n"
	    "drm-memory-vram: 5 MiB\n", &c), 0);
	/* A number that is none, or too large, is not a figure. */
	ATF_CHECK_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-memory-vram: lots\n", &c), 0);
	ATF_CHECK_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-memory-vram: 99999999999999999999999 KiB\n", &c), 0);
	ATF_CHECK_EQ(amd_fdinfo("drm-pdev: 0000:03:00.0\n"
	    "drm-memory-vram: 5 PiB\n", &c), 0);
	ATF_CHECK_EQ(amd_fdinfo("drm-pdev:\t\ndrm-memory-vram: 5\n", &c), 0);
	ATF_CHECK_EQ(amd_fdinfo("", &c), 0);
}

static struct snapshot	*s;
static uint32_t		 watched[] = { 10, 20, 30 };

static void
begin(void)
{
	log_init(1, LOG_DAEMON);
	if (s == NULL)
		ATF_REQUIRE((s = calloc(1, sizeof(*s))) != NULL);
	snap_begin(s, watched, 3);
}

ATF_TC_WITHOUT_HEAD(devices);
ATF_TC_BODY(devices, tc)
{
	char	 id[16];
	int	 i;

	begin();
	ATF_REQUIRE(snap_add_device(s, GPU_VENDOR_NVIDIA, 0, "GPU-a") !=
	    NULL);
	ATF_CHECK(snap_add_device(s, GPU_VENDOR_AMD, 0, "GPU-a") == NULL);
	ATF_CHECK(snap_add_device(s, GPU_VENDOR_AMD, 0, "") == NULL);
	ATF_CHECK(snap_add_device(s, GPU_VENDOR_AMD, 0, "a b") == NULL);
	ATF_CHECK(snap_add_device(s, GPU_VENDOR_AMD, 0, "../x") == NULL);
	ATF_CHECK_EQ(s->ndev, 1);
	for (i = 1; i < GPU_DEVICES_MAX; i++) {
		snprintf(id, sizeof(id), "GPU-%d", i);
		ATF_REQUIRE(snap_add_device(s, GPU_VENDOR_NVIDIA, i, id) !=
		    NULL);
	}
	ATF_CHECK(snap_add_device(s, GPU_VENDOR_NVIDIA, 64, "GPU-x") == NULL);
	ATF_CHECK_EQ(s->ndev, GPU_DEVICES_MAX);
	ATF_CHECK_EQ(s->dev[63].index, 63);
}

ATF_TC_WITHOUT_HEAD(names);
ATF_TC_BODY(names, tc)
{
	char	 buf[8];

	snap_name(buf, sizeof(buf), "ab\tc\x80" "d");
	ATF_CHECK_STREQ(buf, "ab?c?d");
	snap_name(buf, sizeof(buf), "abcdefghij");
	ATF_CHECK_STREQ(buf, "abcdefg");
}

ATF_TC_WITHOUT_HEAD(procs);
ATF_TC_BODY(procs, tc)
{
	struct gpu_device	*d;

	begin();
	d = snap_add_device(s, GPU_VENDOR_AMD, 0, "0000:03:00.0");
	d->total = 8 * GIB;
	d->used = 4 * GIB;
	snap_add_proc(s, 0, 10, GIB, 0);
	snap_add_proc(s, 0, 10, GIB, 0);	/* a second client: added */
	snap_add_proc(s, 0, 99, GIB, 0);	/* not watched */
	snap_add_proc(s, 1, 20, GIB, 0);	/* no such device */
	snap_add_proc(s, 0, 20, 5, GPU_PROC_UNKNOWN);
	ATF_REQUIRE_EQ(s->nproc, 2);
	ATF_CHECK_EQ(s->proc[0].bytes, 2 * GIB);
	ATF_CHECK_EQ(s->proc[1].bytes, 0);
	ATF_CHECK_EQ(s->proc[1].flags, GPU_PROC_UNKNOWN);
	snap_add_proc(s, 0, 20, MIB, 0);	/* known after all */
	ATF_CHECK_EQ(s->proc[1].flags, 0);
	ATF_CHECK_EQ(s->proc[1].bytes, MIB);
	snap_settle(s);
	ATF_CHECK_EQ(s->proc[0].bytes, 2 * GIB);
}

ATF_TC_WITHOUT_HEAD(settle);
ATF_TC_BODY(settle, tc)
{
	struct gpu_device	*a, *b, *z;

	begin();
	a = snap_add_device(s, GPU_VENDOR_AMD, 0, "0000:03:00.0");
	a->total = 8 * GIB;
	a->used = 9 * GIB;
	b = snap_add_device(s, GPU_VENDOR_AMD, 1, "0000:04:00.0");
	b->total = 8 * GIB;
	b->used = 3 * GIB;
	z = snap_add_device(s, GPU_VENDOR_AMD, 2, "0000:05:00.0");
	z->total = GPU_MEM_MAX + 1;
	snap_add_proc(s, 1, 10, 2 * GIB, 0);
	snap_add_proc(s, 1, 20, 2 * GIB, 0);	/* 4 on 3 used */
	snap_add_proc(s, 2, 30, GIB, 0);
	snap_settle(s);
	ATF_CHECK_EQ(a->used, 8 * GIB);
	ATF_REQUIRE_EQ(s->nproc, 2);
	ATF_CHECK_EQ(s->proc[0].bytes, 2 * GIB);
	ATF_CHECK_EQ(s->proc[1].bytes, GIB);
	/* A device whose total is absurd has no figures at all. */
	ATF_CHECK_EQ(z->flags, GPU_DEV_NOMEM | GPU_DEV_NOPROC);
	ATF_CHECK_EQ(z->total, 0);
	ATF_CHECK_EQ(z->used, 0);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, fdinfo_amdgpu);
	ATF_TP_ADD_TC(tp, fdinfo_units);
	ATF_TP_ADD_TC(tp, fdinfo_not_taken);
	ATF_TP_ADD_TC(tp, devices);
	ATF_TP_ADD_TC(tp, names);
	ATF_TP_ADD_TC(tp, procs);
	ATF_TP_ADD_TC(tp, settle);
	return (atf_no_error());
}
