/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A stand-in libnvidia-ml.so.1 for the tests: the NVML calls the probe
 * makes (agency-gpu/nvml.c), answered from the state file beside it
 * (state.h).  Devices are the file's; a device's used memory is its
 * base and the bytes of the live processes on it; the running compute
 * processes are those processes, with NVML's protocol for a list that
 * does not fit (NVML_ERROR_INSUFFICIENT_SIZE and the count needed).
 * "fail CALL CODE" lines make a call fail.  The state is read again at
 * each nvmlDeviceGetCount, as a snapshot of the probe begins with it.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "state.h"

typedef int			 nvmlReturn_t;
typedef struct nvml_dev		*nvmlDevice_t;

#define NVML_SUCCESS			0
#define NVML_ERROR_UNINITIALIZED	1
#define NVML_ERROR_INVALID_ARGUMENT	2
#define NVML_ERROR_INSUFFICIENT_SIZE	7
#define NVML_ERROR_DRIVER_NOT_LOADED	9
#define NVML_VALUE_NOT_AVAILABLE	(~0ULL)

typedef struct {
	unsigned long long	 total, free, used;
} nvmlMemory_t;

typedef struct {
	char			 busIdLegacy[16];
	unsigned int		 domain, bus, device, pciDeviceId;
	unsigned int		 pciSubSystemId;
	char			 busId[32];
} nvmlPciInfo_t;

typedef struct {
	unsigned int		 pid;
	unsigned long long	 usedGpuMemory;
	unsigned int		 gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
	unsigned int		 pid;
	unsigned long long	 usedGpuMemory;
} nvmlProcessInfo_v1_t;

/* Every call the probe makes, exported. */
nvmlReturn_t	 nvmlInit_v2(void);
nvmlReturn_t	 nvmlInit(void);
nvmlReturn_t	 nvmlShutdown(void);
const char	*nvmlErrorString(nvmlReturn_t);
nvmlReturn_t	 nvmlDeviceGetCount_v2(unsigned int *);
nvmlReturn_t	 nvmlDeviceGetHandleByIndex_v2(unsigned int, nvmlDevice_t *);
nvmlReturn_t	 nvmlDeviceGetUUID(nvmlDevice_t, char *, unsigned int);
nvmlReturn_t	 nvmlDeviceGetName(nvmlDevice_t, char *, unsigned int);
nvmlReturn_t	 nvmlDeviceGetPciInfo_v3(nvmlDevice_t, nvmlPciInfo_t *);
nvmlReturn_t	 nvmlDeviceGetMemoryInfo(nvmlDevice_t, nvmlMemory_t *);
nvmlReturn_t	 nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_t *);
nvmlReturn_t	 nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_t *);
nvmlReturn_t	 nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t,
		    unsigned int *, nvmlProcessInfo_v1_t *);

static struct st_state	 st;
static int		 inited;

nvmlReturn_t
nvmlInit_v2(void)
{
	int	 e;

	if (st_read(&st) == -1)
		return (NVML_ERROR_DRIVER_NOT_LOADED);
	if ((e = st_fail(&st, "init")) != 0)
		return (e);
	inited = 1;
	return (NVML_SUCCESS);
}

nvmlReturn_t
nvmlInit(void)
{
	return (nvmlInit_v2());
}

nvmlReturn_t
nvmlShutdown(void)
{
	if (!inited)
		return (NVML_ERROR_UNINITIALIZED);
	inited = 0;
	return (NVML_SUCCESS);
}

const char *
nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS:
		return ("Success");
	case NVML_ERROR_UNINITIALIZED:
		return ("Uninitialized");
	case NVML_ERROR_INVALID_ARGUMENT:
		return ("Invalid Argument");
	case NVML_ERROR_INSUFFICIENT_SIZE:
		return ("Insufficient Size");
	case NVML_ERROR_DRIVER_NOT_LOADED:
		return ("Driver Not Loaded");
	default:
		return ("Unknown Error (stand-in)");
	}
}

/* The device of a handle (its index + 1), or NULL. */
static const struct st_device *
dev_of(nvmlDevice_t h, unsigned int *idx)
{
	uintptr_t	 i = (uintptr_t)h;

	if (!inited || i == 0 || i > (uintptr_t)st.ndev)
		return (NULL);
	*idx = (unsigned int)(i - 1);
	return (&st.dev[i - 1]);
}

nvmlReturn_t
nvmlDeviceGetCount_v2(unsigned int *n)
{
	int	 e;

	if (!inited)
		return (NVML_ERROR_UNINITIALIZED);
	if (st_read(&st) == -1)
		return (NVML_ERROR_DRIVER_NOT_LOADED);
	if ((e = st_fail(&st, "count")) != 0)
		return (e);
	*n = (unsigned int)st.ndev;
	return (NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetHandleByIndex_v2(unsigned int i, nvmlDevice_t *h)
{
	if (!inited)
		return (NVML_ERROR_UNINITIALIZED);
	if (i >= (unsigned int)st.ndev || h == NULL)
		return (NVML_ERROR_INVALID_ARGUMENT);
	*h = (nvmlDevice_t)(uintptr_t)(i + 1);
	return (NVML_SUCCESS);
}

static nvmlReturn_t
copy_str(char *buf, unsigned int len, const char *s)
{
	if (buf == NULL || strlen(s) >= len)
		return (NVML_ERROR_INSUFFICIENT_SIZE);
	memcpy(buf, s, strlen(s) + 1);
	return (NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetUUID(nvmlDevice_t h, char *buf, unsigned int len)
{
	const struct st_device	*d;
	unsigned int		 i;
	int			 e;

	if ((d = dev_of(h, &i)) == NULL)
		return (NVML_ERROR_INVALID_ARGUMENT);
	if ((e = st_fail(&st, "uuid")) != 0)
		return (e);
	return (copy_str(buf, len, d->uuid));
}

nvmlReturn_t
nvmlDeviceGetName(nvmlDevice_t h, char *buf, unsigned int len)
{
	const struct st_device	*d;
	unsigned int		 i;

	if ((d = dev_of(h, &i)) == NULL)
		return (NVML_ERROR_INVALID_ARGUMENT);
	return (copy_str(buf, len, d->name));
}

nvmlReturn_t
nvmlDeviceGetPciInfo_v3(nvmlDevice_t h, nvmlPciInfo_t *pci)
{
	const struct st_device	*d;
	unsigned int		 i, dom, bus, dev, fn;

	if ((d = dev_of(h, &i)) == NULL || pci == NULL)
		return (NVML_ERROR_INVALID_ARGUMENT);
	memset(pci, 0, sizeof(*pci));
	if (sscanf(d->pci, "%x:%x:%x.%x", &dom, &bus, &dev, &fn) != 4)
		return (NVML_ERROR_INVALID_ARGUMENT);
	pci->domain = dom;
	pci->bus = bus;
	pci->device = dev;
	pci->pciDeviceId = 0x10de | (0x2204u << 16);
	(void)snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.0",
	    dom, bus, dev);
	(void)snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy),
	    "%04X:%02X:%02X.0", dom & 0xffff, bus & 0xff, dev & 0xff);
	return (NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m)
{
	const struct st_device	*d;
	unsigned int		 i;
	int			 e;

	if ((d = dev_of(h, &i)) == NULL || m == NULL)
		return (NVML_ERROR_INVALID_ARGUMENT);
	if ((e = st_fail(&st, "memory")) != 0)
		return (e);
	m->total = d->total;
	m->used = st_used(&st, i);
	m->free = m->used > m->total ? 0 : m->total - m->used;
	return (NVML_SUCCESS);
}

/* The live processes of device i, in NVML's count protocol. */
static nvmlReturn_t
procs(nvmlDevice_t h, unsigned int *count, void *infos, int v1)
{
	nvmlProcessInfo_t	*p = infos;
	nvmlProcessInfo_v1_t	*p1 = infos;
	unsigned long long	 used;
	unsigned int		 i, n = 0, have;
	int			 k, e;

	if (dev_of(h, &i) == NULL || count == NULL)
		return (NVML_ERROR_INVALID_ARGUMENT);
	if ((e = st_fail(&st, "processes")) != 0)
		return (e);
	have = *count;
	for (k = 0; k < st.nproc; k++)
		if (st.proc[k].dev == i && st_alive(st.proc[k].pid))
			n++;
	*count = n;
	if (n > have || (n > 0 && infos == NULL))
		return (NVML_ERROR_INSUFFICIENT_SIZE);
	n = 0;
	for (k = 0; k < st.nproc; k++) {
		if (st.proc[k].dev != i || !st_alive(st.proc[k].pid))
			continue;
		used = st.proc[k].na ? NVML_VALUE_NOT_AVAILABLE :
		    st.proc[k].bytes;
		if (v1) {
			p1[n].pid = st.proc[k].pid;
			p1[n].usedGpuMemory = used;
		} else {
			p[n].pid = st.proc[k].pid;
			p[n].usedGpuMemory = used;
			p[n].gpuInstanceId = p[n].computeInstanceId =
			    0xffffffffu;
		}
		n++;
	}
	return (NVML_SUCCESS);
}

nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t h, unsigned int *count,
    nvmlProcessInfo_t *infos)
{
	return (procs(h, count, infos, 0));
}

nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses_v2(nvmlDevice_t h, unsigned int *count,
    nvmlProcessInfo_t *infos)
{
	return (procs(h, count, infos, 0));
}

nvmlReturn_t
nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t h, unsigned int *count,
    nvmlProcessInfo_v1_t *infos)
{
	return (procs(h, count, infos, 1));
}
