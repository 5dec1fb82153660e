/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A stand-in libcuda.so.1: the CUDA driver API calls fakelm makes to
 * take device memory (regress/fakelm/vram.c), which record what this
 * process holds in the state file beside the library (state.h), where
 * the NVML stand-in reports it.  CUDA_VISIBLE_DEVICES is honoured as
 * the driver does: indexes or UUIDs (a UUID's prefix will do), up to
 * the first that names no device; ordinals count the visible ones.
 * An allocation past a device's total fails CUDA_ERROR_OUT_OF_MEMORY.
 * Both the plain names and the _v2 ones (which cuda.h maps the plain
 * ones to) are exported, with the _v2 types: 64-bit sizes and
 * pointers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"

typedef int			 CUresult;
typedef int			 CUdevice;
typedef struct cu_ctx		*CUcontext;
typedef unsigned long long	 CUdeviceptr;

#define CUDA_SUCCESS			0
#define CUDA_ERROR_INVALID_VALUE	1
#define CUDA_ERROR_OUT_OF_MEMORY	2
#define CUDA_ERROR_NOT_INITIALIZED	3
#define CUDA_ERROR_NO_DEVICE		100
#define CUDA_ERROR_INVALID_DEVICE	101
#define CUDA_ERROR_INVALID_CONTEXT	201
#define CUDA_ERROR_UNKNOWN		999

#define ALLOCS_MAX	256

struct cu_ctx {
	unsigned int		 dev;		/* the state's index */
	CUdeviceptr		 ptr[ALLOCS_MAX];
	unsigned long long	 size[ALLOCS_MAX];
};

CUresult	 cuInit(unsigned int);
CUresult	 cuDeviceGetCount(int *);
CUresult	 cuDeviceGet(CUdevice *, int);
CUresult	 cuCtxCreate_v2(CUcontext *, unsigned int, CUdevice);
CUresult	 cuCtxCreate(CUcontext *, unsigned int, CUdevice);
CUresult	 cuCtxDestroy_v2(CUcontext);
CUresult	 cuCtxDestroy(CUcontext);
CUresult	 cuMemAlloc_v2(CUdeviceptr *, size_t);
CUresult	 cuMemAlloc(CUdeviceptr *, size_t);
CUresult	 cuMemFree_v2(CUdeviceptr);
CUresult	 cuMemFree(CUdeviceptr);
CUresult	 cuGetErrorString(CUresult, const char **);

static struct st_state	 st;
static int		 inited;
static unsigned int	 visible[ST_DEVICES_MAX];	/* ordinal -> index */
static int		 nvisible;
static CUcontext	 current;
static CUdeviceptr	 next_ptr = 0x7f0000000000ULL;

/* The state's device an entry of CUDA_VISIBLE_DEVICES names, or -1. */
static int
named(const char *e, size_t len)
{
	char		 buf[96], *end;
	long		 n;
	int		 i, hit = -1;

	if (len == 0 || len >= sizeof(buf))
		return (-1);
	memcpy(buf, e, len);
	buf[len] = '\0';
	n = strtol(buf, &end, 10);
	if (*end == '\0')
		return (n >= 0 && n < st.ndev ? (int)n : -1);
	for (i = 0; i < st.ndev; i++)
		if (strncmp(st.dev[i].uuid, buf, len) == 0) {
			if (hit != -1)
				return (-1);	/* a prefix of two */
			hit = i;
		}
	return (hit);
}

CUresult
cuInit(unsigned int flags)
{
	const char	*v, *p, *comma;
	int		 i, d;

	if (flags != 0)
		return (CUDA_ERROR_INVALID_VALUE);
	if (st_read(&st) == -1)
		return (CUDA_ERROR_UNKNOWN);
	nvisible = 0;
	if ((v = getenv("CUDA_VISIBLE_DEVICES")) == NULL) {
		for (i = 0; i < st.ndev; i++)
			visible[nvisible++] = (unsigned int)i;
	} else {
		for (p = v; *p != '\0' && nvisible < ST_DEVICES_MAX;
		    p = comma + 1) {
			if ((comma = strchr(p, ',')) == NULL)
				comma = p + strlen(p);
			if ((d = named(p, (size_t)(comma - p))) == -1)
				break;
			visible[nvisible++] = (unsigned int)d;
			if (*comma == '\0')
				break;
		}
	}
	if (nvisible == 0)
		return (CUDA_ERROR_NO_DEVICE);
	inited = 1;
	return (CUDA_SUCCESS);
}

CUresult
cuDeviceGetCount(int *n)
{
	if (!inited)
		return (CUDA_ERROR_NOT_INITIALIZED);
	*n = nvisible;
	return (CUDA_SUCCESS);
}

CUresult
cuDeviceGet(CUdevice *dev, int ordinal)
{
	if (!inited)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if (dev == NULL || ordinal < 0 || ordinal >= nvisible)
		return (CUDA_ERROR_INVALID_DEVICE);
	*dev = ordinal;
	return (CUDA_SUCCESS);
}

CUresult
cuCtxCreate_v2(CUcontext *ctx, unsigned int flags, CUdevice dev)
{
	CUcontext	 c;

	(void)flags;
	if (!inited)
		return (CUDA_ERROR_NOT_INITIALIZED);
	if (ctx == NULL || dev < 0 || dev >= nvisible)
		return (CUDA_ERROR_INVALID_DEVICE);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		return (CUDA_ERROR_OUT_OF_MEMORY);
	c->dev = visible[dev];
	*ctx = current = c;
	return (CUDA_SUCCESS);
}

CUresult
cuCtxCreate(CUcontext *ctx, unsigned int flags, CUdevice dev)
{
	return (cuCtxCreate_v2(ctx, flags, dev));
}

CUresult
cuMemAlloc_v2(CUdeviceptr *ptr, size_t bytes)
{
	int	 i, r;

	if (current == NULL)
		return (CUDA_ERROR_INVALID_CONTEXT);
	if (ptr == NULL || bytes == 0)
		return (CUDA_ERROR_INVALID_VALUE);
	for (i = 0; i < ALLOCS_MAX && current->size[i] != 0; i++)
		;
	if (i == ALLOCS_MAX)
		return (CUDA_ERROR_OUT_OF_MEMORY);
	if ((r = st_update(current->dev, (unsigned int)getpid(),
	    (long long)bytes)) != 0)
		return (r == 1 ? CUDA_ERROR_OUT_OF_MEMORY :
		    CUDA_ERROR_UNKNOWN);
	current->ptr[i] = next_ptr;
	current->size[i] = bytes;
	next_ptr += (bytes + 0xfffff) & ~0xfffffULL;
	*ptr = current->ptr[i];
	return (CUDA_SUCCESS);
}

CUresult
cuMemAlloc(CUdeviceptr *ptr, size_t bytes)
{
	return (cuMemAlloc_v2(ptr, bytes));
}

CUresult
cuMemFree_v2(CUdeviceptr ptr)
{
	int	 i;

	if (current == NULL)
		return (CUDA_ERROR_INVALID_CONTEXT);
	for (i = 0; i < ALLOCS_MAX; i++)
		if (current->size[i] != 0 && current->ptr[i] == ptr)
			break;
	if (i == ALLOCS_MAX)
		return (CUDA_ERROR_INVALID_VALUE);
	(void)st_update(current->dev, (unsigned int)getpid(),
	    -(long long)current->size[i]);
	current->size[i] = 0;
	return (CUDA_SUCCESS);
}

CUresult
cuMemFree(CUdeviceptr ptr)
{
	return (cuMemFree_v2(ptr));
}

CUresult
cuCtxDestroy_v2(CUcontext ctx)
{
	unsigned long long	 sum = 0;
	int			 i;

	if (ctx == NULL)
		return (CUDA_ERROR_INVALID_CONTEXT);
	for (i = 0; i < ALLOCS_MAX; i++)
		sum += ctx->size[i];
	if (sum > 0)
		(void)st_update(ctx->dev, (unsigned int)getpid(),
		    -(long long)sum);
	if (current == ctx)
		current = NULL;
	free(ctx);
	return (CUDA_SUCCESS);
}

CUresult
cuCtxDestroy(CUcontext ctx)
{
	return (cuCtxDestroy_v2(ctx));
}

CUresult
cuGetErrorString(CUresult r, const char **s)
{
	switch (r) {
	case CUDA_SUCCESS:
		*s = "no error";
		break;
	case CUDA_ERROR_OUT_OF_MEMORY:
		*s = "out of memory";
		break;
	case CUDA_ERROR_NO_DEVICE:
		*s = "no CUDA-capable device is detected";
		break;
	case CUDA_ERROR_INVALID_DEVICE:
		*s = "invalid device ordinal";
		break;
	default:
		*s = "stand-in error";
		break;
	}
	return (CUDA_SUCCESS);
}
