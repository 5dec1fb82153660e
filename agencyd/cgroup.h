/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A cgroup for each model, below agencyd's own: its memory capped there
 * when asked, so that a model that outgrows its need is killed by the
 * kernel in its own cgroup rather than the host's OOM killer choosing;
 * its usage, peak and OOM kills read from the cgroup's counters; all of
 * it killed at once; and the leftovers of an agencyd that died swept
 * when the next one starts.
 *
 * cgroup v2 with the memory controller delegated to agencyd (a systemd
 * unit's Delegate=yes), or cgroup v1's memory hierarchy where that is
 * what is mounted.  A model's cgroup is named "agency.INSTANCE.MODEL"
 * (MODEL with bytes other than letters, digits, '.', '_' and '-' as
 * %XX): INSTANCE tells two agencyd on one host apart, so neither sweeps
 * the other's.  The paths are parameters, so that tests use a stand-in
 * tree: files are written with O_CREAT, which cgroupfs ignores for its
 * own files and refuses for any other (a stand-in gets the file).
 */
#ifndef AGENCY_CGROUP_H
#define AGENCY_CGROUP_H

#include <sys/types.h>

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define CG_INSTANCE_MAX		32	/* with the NUL */
#define CG_PREFIX		"agency."
#define CG_SUPERVISOR		"agencyd"	/* v2: agencyd's own leaf */
#define CG_PROC_CGROUP		"/proc/self/cgroup"
#define CG_V2_ROOT		"/sys/fs/cgroup"
#define CG_V2_HYBRID		"/sys/fs/cgroup/unified"
#define CG_V1_ROOT		"/sys/fs/cgroup/memory"

enum cg_version {
	CG_V1 = 1,
	CG_V2 = 2,
};

/* Where agencyd's models' cgroups go. */
struct cg_base {
	int	 version;
	char	 dir[PATH_MAX];
	char	 instance[CG_INSTANCE_MAX];
};

/* One model's cgroup. */
struct cg {
	int	 version;
	char	 dir[PATH_MAX];
};

/* Its counters, bytes; -1 where the kernel does not say. */
struct cg_stats {
	int64_t	 usage;		/* memory.current, memory.usage_in_bytes */
	int64_t	 peak;		/* memory.peak, memory.max_usage_in_bytes */
	int64_t	 limit;		/* memory.max, memory.limit_in_bytes: -1 none */
	int64_t	 oom_kills;	/* killed by the OOM killer, in the cgroup */
	int64_t	 limited;	/* hit the limit: v2's "max", v1's failcnt */
};

/*
 * Pure parsers of the kernel's text (len bytes).
 * cg_parse_self: /proc/self/cgroup: the v2 path ("0::PATH") and the v1
 * memory controller's ("N:...memory...:PATH"), each "" when absent; 0,
 * or -1 on a malformed line or a path with "..".
 * cg_parse_value: one number, or "max" (-1); 0, or -1.
 * cg_parse_keyed: the value of "KEY N" lines (memory.events,
 * memory.oom_control): 1 when found, 0 when not, -1 when malformed.
 */
int	cg_parse_self(const char *, size_t, char *, size_t, char *, size_t);
int	cg_parse_value(const char *, size_t, int64_t *);
int	cg_parse_keyed(const char *, size_t, const char *, int64_t *);

/*
 * agencyd's own cgroup, from proc_cgroup (CG_PROC_CGROUP) under the v2
 * root (NULL: none) or the v1 memory root (NULL: none): v2 where the
 * memory controller is available to it, else v1's memory hierarchy.
 * instance: 1 to 31 letters, digits, '_' or '-'.  0, or -1 with why
 * there is no cgroup for models in err.
 */
int	cg_find(const char *, const char *, const char *, const char *,
	    struct cg_base *, char *, size_t);

/*
 * v2: let the models' cgroups have the memory controller: agencyd moves
 * itself into a leaf of its own (CG_SUPERVISOR) when its cgroup holds
 * processes (v2 has no controllers where there are processes), then
 * enables +memory for the children.  v1: nothing.  0, or -1 with err.
 */
int	cg_prepare(const struct cg_base *, char *, size_t);

/* The directory name of a model's cgroup (a buffer of NAME_MAX + 1). */
int	cg_name(const struct cg_base *, const char *, char *, size_t);

/* Make (or take over, from a previous run) the model's cgroup. */
int	cg_create(const struct cg_base *, const char *, struct cg *, char *,
	    size_t);

/* Move pid in (its threads and later children go with it). */
int	cg_attach(const struct cg *, pid_t);

/* The cgroup.procs a helper writes "0" to, to join (helper.h). */
int	cg_procs_path(const struct cg *, char *, size_t);

/* Cap its memory at bytes; bytes <= 0 lifts the cap. */
int	cg_set_limit(const struct cg *, int64_t);

int	cg_read(const struct cg *, struct cg_stats *);

/* What a model killed at its limit is told: "out of memory at its limit
 * of 64.0 MiB". */
void	cg_oom_reason(const struct cg_stats *, char *, size_t);

/*
 * SIGKILL everything in it: cgroup.kill where the kernel has it (v2,
 * 5.14), else each pid of cgroup.procs, by a pidfd held while its
 * membership is checked.  Returns the processes signalled, or -1.
 */
int	cg_kill(const struct cg *);

/* 1 when no process is in it, 0 when some are, -1 on an error. */
int	cg_empty(const struct cg *);

/* Remove it (it must be empty): 0, or -1 (EBUSY while not). */
int	cg_remove(const struct cg *);

/*
 * The cgroups of a previous agencyd of the same instance: each killed,
 * waited for (up to wait_ms in all) and removed.  Returns how many were
 * removed, or -1 on an error (what could not be removed is logged).
 */
int	cg_sweep(const struct cg_base *, int);

#endif /* AGENCY_CGROUP_H */
