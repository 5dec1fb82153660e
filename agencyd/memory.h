/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Memory measurements for the pool's fit test: what the machine (or the
 * memory-limited cgroup agencyd runs in) has available, the default
 * reserve, and what a model needs.  The readers take their paths as
 * parameters so that tests feed them sample files.
 */
#ifndef AGENCY_MEMORY_H
#define AGENCY_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "proto.h"

/* What the fit test measures against (pool.h). */
struct mem_snapshot {
	int64_t		available;	/* bytes */
	int64_t		total;		/* bytes */
};

#define MEM_KIB			1024LL
#define MEM_MIB			(1024LL * MEM_KIB)
#define MEM_GIB			(1024LL * MEM_MIB)

#define MEM_HEADROOM		(1LL * MEM_GIB)
#define MEM_HEADROOM_IMAGE	(4LL * MEM_GIB)
#define MEM_RESERVE_MAX		(2LL * MEM_GIB)

#define MEM_PROC_MEMINFO	"/proc/meminfo"
#define MEM_PROC_CGROUP		"/proc/self/cgroup"
#define MEM_CGROUP_V2_ROOT	"/sys/fs/cgroup"
#define MEM_CGROUP_V2_HYBRID	"/sys/fs/cgroup/unified"
#define MEM_CGROUP_V1_ROOT	"/sys/fs/cgroup/memory"

/* The smallest mem_fmt() buffer that holds any value. */
#define MEM_FMT_LEN		32

/*
 * MemAvailable and MemTotal, in bytes, from a file in /proc/meminfo's
 * format.  0 on success, -1 (logged) when the file cannot be read or
 * lacks either field.
 */
int	mem_read_meminfo(const char *, int64_t *, int64_t *);

/*
 * The room left in the memory-limited cgroup that the process described
 * by proc_cgroup (a /proc/self/cgroup-format file) belongs to: the
 * tightest (limit - usage) over its cgroup and every ancestor, for v2
 * (memory.max, memory.current under v2root) and v1 (memory.limit_in_bytes,
 * memory.usage_in_bytes under v1root); never below 0.  A level whose
 * files are missing is skipped.  Returns 0 with *room set, 1 when no
 * level has a limit, -1 (logged) on an unreadable or malformed file.
 */
int	mem_cgroup_room(const char *, const char *, const char *, int64_t *);

/*
 * The live machine: MemAvailable lowered to the cgroup's room when
 * agencyd runs in a limited one, and MemTotal.  The v2 root is
 * /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid (v1 + v2) host.
 * 0 on success, -1 (logged) when /proc/meminfo cannot be read; an error
 * reading the cgroup is logged and ignored.
 */
int	mem_snapshot(struct mem_snapshot *);

/* The reserve when none is configured: min(2 GiB, 5% of total). */
int64_t	mem_reserve_default(int64_t);

/*
 * What a model needs: the configured size when it is > 0; otherwise the
 * size on disk of the upstream plus a headroom (MEM_HEADROOM, or
 * MEM_HEADROOM_IMAGE for KIND_IMAGE).  An upstream starting with '/' is
 * a file or a directory (its regular files summed recursively; symlinks
 * to files are followed, symlinks to directories are not entered).  Any
 * other upstream is a model id ("ORG/NAME", an optional ":TAG" ignored)
 * looked up in the Hugging Face cache that the model's own environment
 * envp (NAME=VALUE strings, NULL-terminated; NULL: none) names:
 * $HF_HUB_CACHE, else $HUGGINGFACE_HUB_CACHE, else $HF_HOME/hub, else
 * $XDG_CACHE_HOME/huggingface/hub, else $HOME/.cache/huggingface/hub (a
 * leading "~/" is $HOME; a path that is not absolute is not looked up);
 * never agencyd's own environment.  There, the snapshot refs/main names,
 * else everything under blobs/.  When nothing is found on disk the need
 * is the headroom alone (logged at debug level).  Sums saturate at
 * INT64_MAX.  *from (when not NULL) says which it was: NEED_CONFIGURED,
 * NEED_FILE, NEED_DIRECTORY, NEED_HF_CACHE or NEED_HEADROOM.
 */
int64_t	mem_need(const char *, int64_t, enum model_kind, char *const *,
	    int *);

/*
 * The bytes under a path as mem_need() counts them (without headroom);
 * -1 when the path does not exist or cannot be read.
 */
int64_t	mem_disk_size(const char *);

/* a + b for sizes: a negative one counts as 0, the sum stops at
 * INT64_MAX. */
int64_t	mem_add(int64_t, int64_t);

/* Bytes for people: "512 B", "4 KiB", "512 MiB", "6.0 GiB", "1.5 TiB". */
void	mem_fmt(char *, size_t, int64_t);

#endif /* AGENCY_MEMORY_H */
