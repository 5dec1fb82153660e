/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * NVIDIA's devices through NVML, libnvidia-ml.so.1, opened with dlopen:
 * agency is never linked with it, so a machine without it builds,
 * installs and runs as before (the probe then finds no NVIDIA device,
 * and says so only at debug level).
 *
 * The declarations are our own, from NVML's documented API: the calls
 * return nvmlReturn_t (an int-sized enum, 0 success); a device is an
 * opaque pointer; nvmlMemory_t is three unsigned long longs (total,
 * free, used); nvmlPciInfo_t is a 16-byte legacy bus id, five unsigned
 * ints (domain, bus, device, PCI device id, subsystem id) and a 32-byte
 * bus id; nvmlProcessInfo_t of the _v2 and _v3 process calls is the
 * pid, the used bytes (all ones when not available), and two unsigned
 * ints of MIG instances; the _v1 call's has only the first two.
 *
 * Calls: snapshot.c, common/log.c.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"
#include "log.h"

#define NV_SUCCESS			0
#define NV_ERROR_INSUFFICIENT_SIZE	7
#define NV_VALUE_NOT_AVAILABLE		(~0ULL)
#define NV_UUID_LEN			96	/* UUID_V2_BUFFER_SIZE */
#define NV_NAME_LEN			96	/* NAME_V2_BUFFER_SIZE */

typedef int			 nvret;
typedef struct nv_device	*nvdev;

struct nv_memory {
	unsigned long long	 total;
	unsigned long long	 free;
	unsigned long long	 used;
};

struct nv_pci {
	char			 bus_id_legacy[16];
	unsigned int		 domain;
	unsigned int		 bus;
	unsigned int		 device;
	unsigned int		 pci_device_id;
	unsigned int		 pci_subsystem_id;
	char			 bus_id[32];
};

struct nv_proc {			/* _v2 and _v3 */
	unsigned int		 pid;
	unsigned long long	 used;
	unsigned int		 gpu_instance;
	unsigned int		 compute_instance;
};

struct nv_proc_v1 {
	unsigned int		 pid;
	unsigned long long	 used;
};

static struct {
	void		*lib;
	nvret		(*init)(void);
	nvret		(*shutdown)(void);
	const char	*(*error)(nvret);
	nvret		(*count)(unsigned int *);
	nvret		(*handle)(unsigned int, nvdev *);
	nvret		(*uuid)(nvdev, char *, unsigned int);
	nvret		(*name)(nvdev, char *, unsigned int);
	nvret		(*pci)(nvdev, struct nv_pci *);
	nvret		(*memory)(nvdev, struct nv_memory *);
	nvret		(*procs)(nvdev, unsigned int *, void *);
	int		 procs_v1;	/* procs takes struct nv_proc_v1 */
	void		*buf;		/* GPU_PROCS_MAX of the larger */
} nv;

static const char *
nv_error(nvret r)
{
	static char	 num[32];

	if (nv.error != NULL)
		return (nv.error(r));
	(void)snprintf(num, sizeof(num), "NVML error %d", r);
	return (num);
}

/* The first of the names the library has; NULL if none. */
static void *
nv_sym(const char *const *names)
{
	void	*f;

	for (; *names != NULL; names++)
		if ((f = dlsym(nv.lib, *names)) != NULL)
			return (f);
	return (NULL);
}

#define NV_SYM(field, ...) do {						\
	static const char *const n_[] = { __VA_ARGS__, NULL };		\
	*(void **)&nv.field = nv_sym(n_);				\
} while (0)

int
nvml_open(const char *path)
{
	static const char *const v1[] = {
	    "nvmlDeviceGetComputeRunningProcesses", NULL };
	nvret		 r;

	if ((nv.lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		log_debug("no NVIDIA library: %s", dlerror());
		return (-1);
	}
	NV_SYM(init, "nvmlInit_v2", "nvmlInit");
	NV_SYM(shutdown, "nvmlShutdown");
	NV_SYM(error, "nvmlErrorString");
	NV_SYM(count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
	NV_SYM(handle, "nvmlDeviceGetHandleByIndex_v2",
	    "nvmlDeviceGetHandleByIndex");
	NV_SYM(uuid, "nvmlDeviceGetUUID");
	NV_SYM(name, "nvmlDeviceGetName");
	NV_SYM(pci, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2");
	NV_SYM(memory, "nvmlDeviceGetMemoryInfo");
	NV_SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v3",
	    "nvmlDeviceGetComputeRunningProcesses_v2");
	if (nv.procs == NULL) {
		*(void **)&nv.procs = nv_sym(v1);
		nv.procs_v1 = 1;
	}
	if (nv.init == NULL || nv.shutdown == NULL || nv.count == NULL ||
	    nv.handle == NULL || nv.uuid == NULL || nv.memory == NULL ||
	    nv.procs == NULL) {
		log_warnx("%s lacks calls the probe needs: no NVIDIA devices",
		    path);
		goto fail;
	}
	if ((nv.buf = calloc(GPU_PROCS_MAX, sizeof(struct nv_proc))) ==
	    NULL) {
		log_warn("%s", __func__);
		goto fail;
	}
	if ((r = nv.init()) != NV_SUCCESS) {
		log_info("NVML did not start (%s): no NVIDIA devices",
		    nv_error(r));
		goto fail;
	}
	log_debug("NVML loaded from %s", path);
	return (0);
 fail:
	free(nv.buf);
	(void)dlclose(nv.lib);
	memset(&nv, 0, sizeof(nv));
	return (-1);
}

void
nvml_close(void)
{
	if (nv.lib == NULL)
		return;
	(void)nv.shutdown();
	free(nv.buf);
	(void)dlclose(nv.lib);
	memset(&nv, 0, sizeof(nv));
}

/* The running processes of h that are watched, into device d. */
static void
nv_procs(struct snapshot *s, nvdev h, struct gpu_device *d)
{
	static int		 said;
	struct nv_proc		*p = nv.buf;
	struct nv_proc_v1	*p1 = nv.buf;
	unsigned int		 n = GPU_PROCS_MAX, i, pid;
	unsigned long long	 used;
	nvret			 r;

	if ((r = nv.procs(h, &n, nv.buf)) != NV_SUCCESS) {
		if (!said++)
			log_warnx("NVML: the processes of %s: %s%s", d->id,
			    nv_error(r), r == NV_ERROR_INSUFFICIENT_SIZE ?
			    " (more than the probe takes)" : "");
		d->flags |= GPU_DEV_NOPROC;
		return;
	}
	for (i = 0; i < n && i < GPU_PROCS_MAX; i++) {
		pid = nv.procs_v1 ? p1[i].pid : p[i].pid;
		used = nv.procs_v1 ? p1[i].used : p[i].used;
		if (used == NV_VALUE_NOT_AVAILABLE)
			snap_add_proc(s, d->index, pid, 0, GPU_PROC_UNKNOWN);
		else
			snap_add_proc(s, d->index, pid, used, 0);
	}
}

void
nvml_collect(struct snapshot *s)
{
	static int		 said_handle, said_mem;
	struct gpu_device	*d;
	struct nv_memory	 mem;
	struct nv_pci		 pci;
	char			 uuid[NV_UUID_LEN], name[NV_NAME_LEN];
	unsigned int		 n, i;
	nvdev			 h;
	nvret			 r;

	if (nv.lib == NULL)
		return;
	s->backends |= GPU_BACKEND_NVML;
	if ((r = nv.count(&n)) != NV_SUCCESS) {
		if (!said_handle++)
			log_warnx("NVML: device count: %s", nv_error(r));
		return;
	}
	for (i = 0; i < n; i++) {
		memset(uuid, 0, sizeof(uuid));
		if ((r = nv.handle(i, &h)) != NV_SUCCESS ||
		    (r = nv.uuid(h, uuid, sizeof(uuid))) != NV_SUCCESS) {
			if (!said_handle++)
				log_warnx("NVML: device %u: %s: left out", i,
				    nv_error(r));
			continue;
		}
		uuid[sizeof(uuid) - 1] = '\0';
		if ((d = snap_add_device(s, GPU_VENDOR_NVIDIA, i, uuid)) ==
		    NULL)
			continue;
		memset(&pci, 0, sizeof(pci));
		if (nv.pci != NULL && nv.pci(h, &pci) == NV_SUCCESS)
			(void)snprintf(d->pci, sizeof(d->pci),
			    "%04x:%02x:%02x.0", pci.domain, pci.bus,
			    pci.device);
		memset(name, 0, sizeof(name));
		if (nv.name != NULL && nv.name(h, name, sizeof(name)) ==
		    NV_SUCCESS) {
			name[sizeof(name) - 1] = '\0';
			snap_name(d->name, sizeof(d->name), name);
		}
		if ((r = nv.memory(h, &mem)) != NV_SUCCESS) {
			if (!said_mem++)
				log_warnx("NVML: the memory of %s: %s", d->id,
				    nv_error(r));
			d->flags |= GPU_DEV_NOMEM | GPU_DEV_NOPROC;
			continue;
		}
		d->total = mem.total;
		d->used = mem.used;
		nv_procs(s, h, d);
	}
}
