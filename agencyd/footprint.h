/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A model's measured footprint: the memory of its process tree, from
 * /proc where it has no cgroup of its own (cgroup.h reads a cgroup's
 * own counters).  The parsers are pure functions over the text the
 * kernel writes; the samplers read /proc and call them.
 *
 * A sample sums each process's Rss (the mapped model file's resident
 * pages count: its RssFile) and its VmHWM (the most Rss that process
 * ever had), from /proc/PID/status: counters the kernel keeps, cheap to
 * read.  The tree's true peak lies between the largest sum of Rss
 * sampled and the sum of VmHWM; for a single process (llama-server)
 * VmHWM is its peak exactly.  Pages two processes of the tree share
 * count in each; asked for, /proc/PID/smaps_rollup gives Pss too (each
 * shared page in shares), at a cost that grows with what is mapped: the
 * kernel walks the page tables (bench/fpbench measures both).
 */
#ifndef AGENCY_FOOTPRINT_H
#define AGENCY_FOOTPRINT_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#define FP_TREE_MAX	1024	/* processes of one tree sampled */

/* One process's figures, bytes. */
struct fp_proc {
	int64_t		 rss;
	int64_t		 pss;		/* 0: not read */
	int64_t		 anon;
	int64_t		 swap;
	int64_t		 hwm;		/* VmHWM */
};

/* A tree's, summed. */
struct fp_sample {
	int64_t		 rss;
	int64_t		 pss;
	int64_t		 swap;
	int64_t		 hwm;
	int		 procs;		/* sampled */
	int		 truncated;	/* more than FP_TREE_MAX */
};

/* What a model took, sample after sample. */
struct fp_peak {
	int64_t		 peak;		/* the most it is known to have had */
	int64_t		 bound;		/* the most it can have had */
	int64_t		 last;		/* the last sample's Rss */
	int64_t		 samples;
};

/*
 * /proc/PID/status's text (len bytes): VmRSS, VmHWM, RssAnon and VmSwap
 * into p (the kernel's kB are KiB).  0, or -1 when VmRSS or VmHWM is
 * missing (a kernel thread has neither) or a line of a field it reads
 * is malformed.  Leaves p->pss alone.
 */
int	fp_parse_status(const char *, size_t, struct fp_proc *);

/* smaps_rollup's text: its Pss into p->pss (and Rss, the same as the
 * status's); 0, or -1 as above. */
int	fp_parse_rollup(const char *, size_t, struct fp_proc *);

/*
 * /proc/PID/task/TID/children's text: pids separated by blanks, added
 * to pids[*n] onwards while *n < max.  Returns how many it saw (more
 * than it added when max was reached), or -1 on a word that is not a
 * pid.
 */
int	fp_parse_children(const char *, size_t, pid_t *, size_t, size_t *);

/*
 * The tree under root (root too, first), read from the children of each
 * of its threads: at most max pids into pids; returns how many there
 * were (more than max: the list is cut), or -1 when root is gone.
 */
int	fp_tree(pid_t, pid_t *, size_t);

/* One process's figures, Pss too when asked (the last argument); -1
 * when it is gone or cannot be read. */
int	fp_proc_read(pid_t, struct fp_proc *, int);

/* The sum over pids (gone ones skipped); 0, or -1 when none was read. */
int	fp_sample_pids(const pid_t *, size_t, struct fp_sample *, int);

/* fp_tree then fp_sample_pids. */
int	fp_sample_tree(pid_t, struct fp_sample *, int);

/*
 * A model's footprint now: from its cgroup's own counters when it has
 * one (cg not NULL: its usage, and the kernel's peak where it keeps one,
 * memory.peak or memory.max_usage_in_bytes, as hwm), else from /proc
 * under root (status only).  0, or -1.
 */
struct cg;
int	fp_measure(const struct cg *, pid_t, struct fp_sample *);

/* Take a sample into the peak: pure. */
void	fp_peak_add(struct fp_peak *, const struct fp_sample *);

#endif /* AGENCY_FOOTPRINT_H */
