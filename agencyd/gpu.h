/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agencyd's side of the GPUs (issue 30): the probe's figures, checked
 * (gpusnap.c); the probe process, started, polled and restarted
 * (gpulink.c); and where a model goes on the devices (place.c, a pure
 * decision).  Nothing here is wired into the pool or the configuration
 * yet: phase 2 does that.
 */
#ifndef AGENCY_GPU_H
#define AGENCY_GPU_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "gpuproto.h"

/*
 * gpusnap.c: one snapshot as agencyd reads it from the probe.
 */

/* What a snapshot holds once whole: figures that passed every check. */
struct gpu_table {
	uint64_t		 reqid;
	uint32_t		 backends;	/* GPU_BACKEND_* */
	uint32_t		 ndev;
	uint32_t		 nproc;
	struct gpu_device	 dev[GPU_DEVICES_MAX];
	struct gpu_proc		 proc[GPU_PROCS_MAX];	/* by dev, then pid */
};

struct gpu_snap {
	int			 phase;		/* GS_* (gpusnap.c) */
	uint64_t		 want;		/* the poll out, 0: none */
	const uint32_t		*watch;		/* sorted, the probe's list */
	size_t			 nwatch;
	unsigned int		 logs;		/* lines since the last answer */
	uint32_t		 ndev_said;	/* the head's counts */
	uint32_t		 nproc_said;
	uint64_t		 sum[GPU_DEVICES_MAX];	/* procs' bytes */
	struct gpu_table	 t;		/* being read */
	char			 why[160];	/* the lie, said */
};

/* What gpu_snap_feed makes of one message. */
enum gpu_feed {
	GPU_FEED_LIE = -1,	/* s->why says which rule it broke */
	GPU_FEED_MORE,		/* taken; more to come */
	GPU_FEED_WHOLE,		/* s->t is a whole snapshot */
	GPU_FEED_LOG,		/* a log line: *line, priority *pri */
};

/* Ready to read the answer to poll reqid, for the sorted watch list
 * (which must stay as it is until the answer is whole). */
void		 gpu_snap_expect(struct gpu_snap *, uint64_t,
		    const uint32_t *, size_t);
/* One message from the probe: its type, its payload of len bytes, and
 * its header's peerid.  A line is a pointer into data. */
enum gpu_feed	 gpu_snap_feed(struct gpu_snap *, uint32_t, uint32_t,
		    const void *, size_t, const char **, int *);
/* The figure of a process on a device in a whole table, or -1. */
int64_t		 gpu_table_proc(const struct gpu_table *, uint32_t,
		    uint32_t);

/*
 * gpulink.c: the probe process.
 */

/* Test-only settings are marked: agencyd's own options give them in
 * phase 2 (never the configuration, never the proxy). */
struct gpulink_conf {
	const char	*path;		/* the probe program */
	const char	*user;		/* run as (as root: required) */
	const char	*nvml;		/* test only: the library, or NULL */
	const char	*sysfs;		/* test only: sysfs root, or NULL */
	const char	*proc;		/* test only: /proc root, or NULL */
	int		 enforce;	/* the probe's seccomp kills (-K) */
	int		 verbose;
	int		 interval_ms;	/* a poll this often */
	int		 first_ms;	/* the first answer's deadline */
	int		 answer_ms;	/* the others' */
	int		 backoff_min_ms;	/* first restart's delay */
	int		 backoff_max_ms;	/* doubling up to this */
	int		 stable_ms;	/* lived this long, answered: the
					 * next restart waits the least */
};

#define GPULINK_INTERVAL	5000
#define GPULINK_FIRST		30000	/* nvmlInit may take seconds */
#define GPULINK_ANSWER		10000
#define GPULINK_BACKOFF_MIN	1000
#define GPULINK_BACKOFF_MAX	(5 * 60 * 1000)
#define GPULINK_STABLE		60000

struct gpulink;

/* A whole snapshot, as checked; valid until the next call. */
typedef void	(*gpulink_figures_cb)(const struct gpu_table *, void *);
/* The figures are gone (why: the probe lied, hung, died or stopped). */
typedef void	(*gpulink_lost_cb)(const char *, void *);
/* The probe was started (pid) or is to be in ms (pid 0). */
typedef void	(*gpulink_event_cb)(pid_t, int, void *);

/* The conf is copied, its strings are not.  Call event_init first. */
struct gpulink	*gpulink_new(const struct gpulink_conf *,
		    gpulink_figures_cb, gpulink_lost_cb, gpulink_event_cb,
		    void *);
/* Start the probe; -1 when it cannot be (said), and no retry. */
int		 gpulink_start(struct gpulink *);
/* 1 when pid was the probe's (reaped by the caller's waitpid), else 0 */
int		 gpulink_reaped(struct gpulink *, pid_t, int);
/* The processes to report from the next snapshot on (copied). */
int		 gpulink_watch(struct gpulink *, const pid_t *, size_t);
/* A snapshot now, or right after the one being answered. */
void		 gpulink_poll(struct gpulink *);
/* The last whole snapshot, or NULL while there is none valid. */
const struct gpu_table *gpulink_table(const struct gpulink *);
pid_t		 gpulink_pid(const struct gpulink *);
/* The delay of the next restart, in ms (for tests). */
int		 gpulink_backoff(const struct gpulink *);
/* SIGTERM the probe, start no other; the caller still reaps it. */
void		 gpulink_stop(struct gpulink *);
void		 gpulink_free(struct gpulink *);

/*
 * place.c: where a model goes on the devices, as a pure decision.
 */

#define PLACE_DEV_MAX		GPU_DEVICES_MAX	/* bits of a mask */
#define PLACE_SPAN_MAX		16		/* devices a model spans */
#define PLACE_UNCHECKED		INT64_MAX	/* a figure not checked */

struct place_dev {
	const char	*id;		/* stable id (may be NULL) */
	int64_t		 total;		/* bytes; <= 0: not usable */
	int64_t		 headroom;	/* kept free */
	int64_t		 outside;	/* used by processes agency did not
					 * start, measured */
	int		 usable;	/* agency may use it at all */
};

/* A model's standing, for what its memory counts and whether it goes. */
enum place_state {
	PLACE_STOPPED,		/* holds nothing */
	PLACE_IDLE,		/* loaded, lazy, idle: may be stopped */
	PLACE_BUSY,		/* loaded or loading, lazy: not now */
	PLACE_FIXED,		/* loaded or loading, never stopped */
};

struct place_model {
	enum place_state state;
	int64_t		 host;		/* host memory it needs */
	int64_t		 last_used;	/* ms; -1: never */
	uint32_t	 span;		/* devices (0: a CPU model) */
	int64_t		 share[PLACE_SPAN_MAX];	/* need on slot i */
	uint64_t	 allowed;	/* devices it may use, bit i */
	uint8_t		 dev[PLACE_SPAN_MAX];	/* held: slot i's device */
};

struct place_table {
	int64_t			 host_free;	/* for models, now (or
						 * PLACE_UNCHECKED) */
	int64_t			 budget_free;	/* left of the budget (or
						 * PLACE_UNCHECKED) */
	uint32_t		 ndev;
	struct place_dev	 dev[PLACE_DEV_MAX];
	size_t			 nmodel;
	const struct place_model *model;
};

enum place_verdict {
	PLACE_FITS,		/* load it on dev[] */
	PLACE_EVICT,		/* stop stop[], then load it on dev[] */
	PLACE_WAIT,		/* busy lazy models hold the room */
	PLACE_NEVER,		/* nothing that can stop makes room */
};

/* Where short: a device, or these. */
#define PLACE_SHORT_HOST	(-1)
#define PLACE_SHORT_BUDGET	(-2)
#define PLACE_SHORT_DEVICES	(-3)	/* too few devices it may use */

struct place_result {
	enum place_verdict verdict;
	uint32_t	 ndev;			/* = the model's span */
	uint8_t		 dev[PLACE_SPAN_MAX];	/* slot i's device */
	size_t		 nstop;
	size_t		*stop;		/* the caller's, 2 * nmodel long:
					 * the search works in the rest */
	int		 short_on;	/* WAIT, NEVER: a device or
					 * PLACE_SHORT_* */
};

/* Where model self goes now: see place.c's head for the rule. */
enum place_verdict place_decide(const struct place_table *, size_t,
		    struct place_result *);
/* The mask of the devices named (each an index or an id); -1 with
 * *bad the first name that is neither. */
int		 place_mask(const struct place_table *, const char *const *,
		    size_t, uint64_t *, size_t *);
/* "fits", "evict", "wait", "never". */
const char	*place_verdict_name(enum place_verdict);

#endif /* AGENCY_GPU_H */
