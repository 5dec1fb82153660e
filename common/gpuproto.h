/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The messages between agencyd and agency-gpu, the GPU probe, over
 * their socketpair (the probe's fd 3).  A channel of its own: the type
 * numbers are not proto.h's.
 *
 * agencyd drives it.  It tells the probe which processes to report
 * (IMSG_GPU_WATCH, only between snapshots) and asks for a snapshot
 * (IMSG_GPU_POLL), on a timer and when it wants figures at once; one
 * poll is out at a time.  The probe answers each poll with one snapshot:
 *
 *	IMSG_GPU_SNAP_START	struct gpu_snap_head (ndev, nproc)
 *	IMSG_GPU_DEVICE		struct gpu_device, ndev of them, by index
 *	IMSG_GPU_PROC		struct gpu_proc, nproc of them
 *	IMSG_GPU_SNAP_END	struct gpu_snap_end
 *
 * and may send IMSG_GPU_LOG lines at any time.  Nothing else ever comes
 * from the probe, and it sends no fds.  agencyd takes every figure as a
 * claim to check (agencyd/gpusnap.c): a snapshot that breaks any rule
 * below is a lie, and the probe is killed and its figures dropped.
 *
 * Every payload is a fixed-size struct, taken only when the length is
 * exact; strings are NUL-terminated inside their arrays.
 */
#ifndef AGENCY_GPUPROTO_H
#define AGENCY_GPUPROTO_H

#include <stdint.h>

#define GPU_DEVICES_MAX		64	/* devices in a snapshot */
#define GPU_WATCH_MAX		2048	/* processes agencyd asks about */
#define GPU_PROCS_MAX		4096	/* (device, process) figures */
#define GPU_ID_MAX		96	/* NVML's UUID buffer (v2) */
#define GPU_PCI_MAX		32	/* "0000:03:00.0", NVML's bus id */
#define GPU_NAME_MAX		96	/* the product's name */
#define GPU_LOGLINE_MAX		512
#define GPU_LOGS_MAX		32	/* lines between two answers */
/* No device has a petabyte: a figure above it is a lie. */
#define GPU_MEM_MAX		(1ULL << 50)

enum gpu_imsg {
	IMSG_GPU_NONE,
	/* agencyd -> probe */
	IMSG_GPU_WATCH,		/* struct gpu_watch: the processes, all */
	IMSG_GPU_POLL,		/* struct gpu_poll */
	/* probe -> agencyd */
	IMSG_GPU_SNAP_START,	/* struct gpu_snap_head */
	IMSG_GPU_DEVICE,	/* struct gpu_device */
	IMSG_GPU_PROC,		/* struct gpu_proc */
	IMSG_GPU_SNAP_END,	/* struct gpu_snap_end */
	IMSG_GPU_LOG,		/* the line with its NUL (its only one, at
				 * most GPU_LOGLINE_MAX bytes); the priority
				 * in the header's peerid */
	IMSG_GPU_MAXTYPE
};

/* The processes whose use to report, replacing the last list. */
struct gpu_watch {
	uint32_t	 n;
	uint32_t	 pid[GPU_WATCH_MAX];
};

struct gpu_poll {
	uint64_t	 reqid;		/* never 0 */
};

/* Which ways of reading devices the probe has (gpu_snap_head). */
#define GPU_BACKEND_NVML	0x1	/* libnvidia-ml loaded and initialised */
#define GPU_BACKEND_AMD		0x2	/* an amdgpu device in sysfs */

struct gpu_snap_head {
	uint64_t	 reqid;		/* the poll's */
	uint32_t	 backends;	/* GPU_BACKEND_* */
	uint32_t	 ndev;		/* <= GPU_DEVICES_MAX */
	uint32_t	 nproc;		/* <= GPU_PROCS_MAX */
	uint32_t	 pad;
};

#define GPU_VENDOR_NVIDIA	1
#define GPU_VENDOR_AMD		2

/* gpu_device flags */
#define GPU_DEV_NOMEM		0x1	/* its memory could not be read:
					 * total and used are 0 */
#define GPU_DEV_NOPROC		0x2	/* nor its processes' use */

struct gpu_device {
	uint32_t	 index;		/* its place in the snapshot */
	uint32_t	 vendor;	/* GPU_VENDOR_* */
	uint32_t	 vindex;	/* the vendor's own: NVML's index, or
					 * the amdgpu card's rank */
	uint32_t	 flags;		/* GPU_DEV_* */
	uint64_t	 total;		/* bytes */
	uint64_t	 used;		/* bytes, <= total */
	char		 id[GPU_ID_MAX];	/* stable: "GPU-<uuid>", or the
						 * PCI address on AMD */
	char		 pci[GPU_PCI_MAX];	/* "0000:03:00.0" */
	char		 name[GPU_NAME_MAX];
};

/* gpu_proc flags */
#define GPU_PROC_UNKNOWN	0x1	/* on the device, its use not known
					 * (NVML_VALUE_NOT_AVAILABLE): bytes 0 */

/* One watched process's memory on one device. */
struct gpu_proc {
	uint32_t	 dev;		/* a device index of this snapshot */
	uint32_t	 pid;		/* a pid of the watch list */
	uint32_t	 flags;		/* GPU_PROC_* */
	uint32_t	 pad;
	uint64_t	 bytes;
};

struct gpu_snap_end {
	uint64_t	 reqid;		/* the head's */
};

#endif /* AGENCY_GPUPROTO_H */
