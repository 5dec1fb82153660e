/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-gpu, the GPU probe: what its files share.  See README here.
 */
#ifndef AGENCY_PROBE_H
#define AGENCY_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "gpuproto.h"

#define GPU_FD		3	/* agencyd's socketpair */
#define GPU_NVML_LIB	"libnvidia-ml.so.1"
#define GPU_SYSFS	"/sys"
#define GPU_PROC	"/proc"

/*
 * snapshot.c: one snapshot being made, held to the rules agencyd
 * checks (agencyd/gpusnap.c), so that only a broken probe breaks them.
 */
struct snapshot {
	uint32_t		 backends;
	uint32_t		 ndev;
	struct gpu_device	 dev[GPU_DEVICES_MAX];
	uint32_t		 nproc;
	struct gpu_proc		 proc[GPU_PROCS_MAX];
	const uint32_t		*watch;		/* sorted */
	size_t			 nwatch;
};

void	 snap_begin(struct snapshot *, const uint32_t *, size_t);
/* A new device (zeroed but for these), or NULL when the table is full
 * or the id is taken or malformed (said once). */
struct gpu_device *snap_add_device(struct snapshot *, uint32_t, uint32_t,
	    const char *);
/* A copy of src into dst as agencyd takes it: printable ASCII. */
void	 snap_name(char *, size_t, const char *);
int	 snap_watched(const struct snapshot *, uint32_t);
/* bytes of pid on device dev: added to what it has there already. */
void	 snap_add_proc(struct snapshot *, uint32_t, uint32_t, uint64_t,
	    uint32_t);
/* The last corrections: used <= total, processes within used. */
void	 snap_settle(struct snapshot *);

/* nvml.c: NVIDIA's management library, opened with dlopen. */
int	 nvml_open(const char *);	/* 0: loaded, initialised */
void	 nvml_collect(struct snapshot *);
void	 nvml_close(void);

/* amd.c: amdgpu's sysfs files, and DRM fdinfo for the processes. */
struct drm_client {
	char		 pdev[GPU_PCI_MAX];
	uint64_t	 id;
	int		 has_id;
	uint64_t	 vram;		/* bytes */
};
/* An fdinfo file's text (NUL-terminated): 1 when it is a DRM client of
 * a PCI device with a VRAM figure, 0 otherwise. */
int	 amd_fdinfo(const char *, struct drm_client *);
void	 amd_collect(struct snapshot *, const char *, const char *);

/* sandbox.c */
int	 gpu_sandbox(int);
int	 gpu_selftest(const char *, int);

#endif /* AGENCY_PROBE_H */
