/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * fakelm --vram: take device memory while it runs, as a model server
 * does, through the CUDA driver API loaded with dlopen ("libcuda.so.1",
 * or --cuda-lib): cuInit, cuDeviceGet, cuCtxCreate, cuMemAlloc.  The
 * same code takes real memory on a real card (the driver alone, no
 * toolkit) and a stand-in's on the suite's (regress/gpu/cuda.c).  The
 * device is an ordinal among those CUDA_VISIBLE_DEVICES lets it see.
 * The memory is given back at exit (cuMemFree, cuCtxDestroy); a process
 * killed gives it back through the driver.
 *
 * cuda.h maps cuCtxCreate, cuMemAlloc, cuMemFree and cuCtxDestroy to
 * their _v2 entry points (64-bit sizes and pointers), which the library
 * exports beside the old ones: those are looked up first.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fakelm.h"

typedef int			 cu_result;
typedef int			 cu_device;
typedef void			*cu_context;
typedef unsigned long long	 cu_ptr;

static struct {
	void		*lib;
	cu_result	(*init)(unsigned int);
	cu_result	(*device_get)(cu_device *, int);
	cu_result	(*ctx_create)(cu_context *, unsigned int, cu_device);
	cu_result	(*ctx_destroy)(cu_context);
	cu_result	(*mem_alloc)(cu_ptr *, size_t);
	cu_result	(*mem_free)(cu_ptr);
	cu_result	(*error)(cu_result, const char **);
	cu_context	 ctx;
	cu_ptr		 ptr;
} cu;

static void *
sym(const char *v2, const char *v1)
{
	void	*f;

	if (v2 != NULL && (f = dlsym(cu.lib, v2)) != NULL)
		return (f);
	return (dlsym(cu.lib, v1));
}

static const char *
cu_error(cu_result r)
{
	static char	 num[32];
	const char	*s = NULL;

	if (cu.error != NULL && cu.error(r, &s) == 0 && s != NULL)
		return (s);
	(void)snprintf(num, sizeof(num), "CUDA error %d", r);
	return (num);
}

static void
vram_release(void)
{
	if (cu.ptr != 0)
		(void)cu.mem_free(cu.ptr);
	if (cu.ctx != NULL)
		(void)cu.ctx_destroy(cu.ctx);
	cu.ptr = 0;
	cu.ctx = NULL;
}

int
vram_claim(const char *lib, int ordinal, size_t bytes, char *err,
    size_t errlen)
{
	cu_device	 dev;
	cu_result	 r;

	if ((cu.lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL)) == NULL) {
		(void)snprintf(err, errlen, "%s", dlerror());
		return (-1);
	}
	*(void **)&cu.init = sym(NULL, "cuInit");
	*(void **)&cu.device_get = sym(NULL, "cuDeviceGet");
	*(void **)&cu.ctx_create = sym("cuCtxCreate_v2", "cuCtxCreate");
	*(void **)&cu.ctx_destroy = sym("cuCtxDestroy_v2", "cuCtxDestroy");
	*(void **)&cu.mem_alloc = sym("cuMemAlloc_v2", "cuMemAlloc");
	*(void **)&cu.mem_free = sym("cuMemFree_v2", "cuMemFree");
	*(void **)&cu.error = sym(NULL, "cuGetErrorString");
	if (cu.init == NULL || cu.device_get == NULL ||
	    cu.ctx_create == NULL || cu.ctx_destroy == NULL ||
	    cu.mem_alloc == NULL || cu.mem_free == NULL) {
		(void)snprintf(err, errlen, "%s lacks the driver API", lib);
		return (-1);
	}
	if ((r = cu.init(0)) != 0) {
		(void)snprintf(err, errlen, "cuInit: %s", cu_error(r));
		return (-1);
	}
	if ((r = cu.device_get(&dev, ordinal)) != 0) {
		(void)snprintf(err, errlen, "cuDeviceGet %d: %s", ordinal,
		    cu_error(r));
		return (-1);
	}
	if ((r = cu.ctx_create(&cu.ctx, 0, dev)) != 0) {
		(void)snprintf(err, errlen, "cuCtxCreate: %s", cu_error(r));
		cu.ctx = NULL;
		return (-1);
	}
	if ((r = cu.mem_alloc(&cu.ptr, bytes)) != 0) {
		(void)snprintf(err, errlen, "cuMemAlloc %zu: %s", bytes,
		    cu_error(r));
		cu.ptr = 0;
		vram_release();
		return (-1);
	}
	(void)atexit(vram_release);
	return (0);
}
