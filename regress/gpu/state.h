/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The state the GPU stand-ins share (regress/gpu): the file "gpu-state"
 * in the directory the stand-in library was loaded from, so that a test
 * puts a copy of the libraries and its state side by side and needs no
 * environment (agencyd gives its children none).  Lines:
 *
 *	device UUID PCI TOTAL BASE NAME...
 *		a device, indexed in the order of these lines; BASE
 *		bytes are used by the driver itself
 *	proc INDEX PID BYTES
 *		PID uses BYTES on device INDEX ("na": NVML knows the
 *		process but not its use); counted only while PID lives
 *	fail CALL CODE
 *		the NVML stand-in's CALL (init, count, uuid, memory,
 *		processes) answers NVML error CODE
 *
 * The test writes devices and fails; the CUDA stand-in adds and removes
 * its own process's lines (st_update), under a lock file beside it,
 * and replaces the file whole (rename), so a reader never sees half of
 * one.  Sizes are bytes, with an optional K, M or G.
 */
#ifndef STANDIN_STATE_H
#define STANDIN_STATE_H

#include <stddef.h>

#define ST_DEVICES_MAX	64
#define ST_PROCS_MAX	8192
#define ST_FAILS_MAX	8
#define ST_FILE		"gpu-state"
#define ST_LOCK		"gpu-state.lock"

struct st_device {
	char			 uuid[96];
	char			 pci[32];
	char			 name[96];
	unsigned long long	 total;
	unsigned long long	 base;
};

struct st_proc {
	unsigned int		 dev;
	unsigned int		 pid;
	unsigned long long	 bytes;
	int			 na;
};

struct st_state {
	int			 ndev;
	struct st_device	 dev[ST_DEVICES_MAX];
	int			 nproc;
	struct st_proc		 proc[ST_PROCS_MAX];
	int			 nfail;
	char			 fail_call[ST_FAILS_MAX][16];
	int			 fail_code[ST_FAILS_MAX];
};

/* The state file's path (beside the library), into buf. */
int	st_path(char *, size_t, const char *);
/* 0, or -1 when the file is missing or malformed. */
int	st_read(struct st_state *);
/* The error code a call is to fail with, or 0. */
int	st_fail(const struct st_state *, const char *);
/* Whether pid is alive (a process of another user counts). */
int	st_alive(unsigned int);
/* Memory used on device dev: its base and its live processes'. */
unsigned long long st_used(const struct st_state *, unsigned int);
/*
 * Locked: add delta bytes to pid's line on dev (removed at 0).  0, or
 * 1 when it would take the device past its total (nothing changed),
 * or -1 on an error.
 */
int	st_update(unsigned int, unsigned int, long long);

#endif /* STANDIN_STATE_H */
