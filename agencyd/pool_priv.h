/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The pool's own records, shared by its files and by no other file
 * (pool.h is the interface).  Its files, pool.c at the top and
 * pool_decide.c at the bottom, each call only those below them, in
 * agencyd/README's order.
 *
 * Invariants.  Every change of state (load, unload, idle unload, stop
 * all, replace, remove, restart) is an op on p->queue, in the order it
 * was asked for, and runs (possibly across callbacks) until it finishes.
 * In the reference pool (no model may wait: !p->parallel) only the op
 * at the head runs; otherwise an op starts once no op before it touches
 * its model, and only one load at a time makes room (p->room).  State
 * is read again every time an op resumes.  A replace or remove is the
 * model's idle_op, on the queue only while nothing holds the model.  A
 * waiter is "queued" (bounded by max_queue, timed by queue_timeout)
 * only while what it waits for has not started.  A waiter is told of
 * its progress only from a timer, never from within the call that made
 * it wait.
 */
#ifndef AGENCY_POOL_PRIV_H
#define AGENCY_POOL_PRIV_H

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/tree.h>

#include "pool.h"

enum op_kind {
	OP_LOAD,
	OP_UNLOAD,	/* explicit: the model stays unloaded */
	OP_IDLE,	/* idle timeout: only if still idle */
	OP_STOPALL,
	OP_REPLACE,	/* once idle: stop, swap the plan, maybe load */
	OP_REMOVE,	/* once idle: stop, free the record */
	OP_RESTART,	/* stop, then load */
};

enum op_phase {
	PH_QUEUED,
	PH_ROOM,	/* load: started, waiting for its turn to make room */
	PH_WAITMEM,	/* load: making room, waiting for busy models */
	PH_EVICTING,	/* load: waiting for the exits of those it
			 * stopped to make room */
	PH_SPAWNING,	/* load: spawn called, no answer yet */
	PH_PROBING,	/* load: probe out, or waiting to ask again */
	PH_KILLING,	/* load: waiting for our own child's exit */
	PH_EXITING,	/* unload, replace, remove, restart: the exit */
	PH_REAPING,	/* stop all: waiting for every exit */
};

struct pool_model;

struct pool_done {
	TAILQ_ENTRY(pool_done)	 entry;
	pool_load_cb		 load;
	pool_done_cb		 done;
	void			*arg;
};
TAILQ_HEAD(pool_dones, pool_done);

struct pool_op {
	TAILQ_ENTRY(pool_op)	 entry;
	enum op_kind		 kind;
	enum op_phase		 phase;
	struct pool_model	*pm;
	uint64_t		 gen;		/* pm->stop_gen when queued */
	uint64_t		 spawnid;
	uint64_t		 loadid;
	int64_t			 spawned_at;	/* ms, the load's first spawn */
	int			 spawned;	/* spawned_at is set */
	int64_t			 wait_since;	/* ms, PH_WAITMEM began */
	int64_t			 began;		/* ms it began to act; 0 */
	int64_t			 since;		/* ms, when it was queued */
	uint32_t		 nvictims;	/* stopped for it, running */
	void			*timeout;	/* the load timeout */
	void			*timer;		/* grace or probe again */
	char			 error[PROTO_MSG_MAX];
	uint16_t		 bad_port;
	int			 retried;
	int			 restart;	/* a non-lazy restart */
	int			 reason;	/* refusal when it fails */
	int			 queued;	/* on the list, not parked */
	int			 was_loaded;	/* replace: load again */
	int			 want_load;	/* replace: pool_load came */
	int			 by_request;	/* a request asked for it */
	int			 cause;		/* CHANGE_START, _RELOAD or 0 */
	int			 answered;	/* waiters and dones are */
	struct pool_dones	 dones;
};
TAILQ_HEAD(pool_ops_q, pool_op);

struct pool_waiter {
	TAILQ_ENTRY(pool_waiter) entry;		/* in the order they came */
	uint64_t		 reqid;
	uint32_t		 owner;
	struct pool_model	*pm;
	struct pool_op		*op;		/* NULL: a slot */
	int64_t			 since;		/* ms, when it came */
	int			 queued;	/* bounded and timed */
	void			*deadline;	/* the queue timeout */
	int			 progress;	/* its waits are told */
	int			 fresh;		/* not yet seen by a telling */
	int			 told;		/* enum proto_wait; -1: none */
	uint32_t		 told_ahead;
};
TAILQ_HEAD(pool_waiters, pool_waiter);

struct pool_hold {
	TAILQ_ENTRY(pool_hold)	 entry;		/* in the order granted */
	RB_ENTRY(pool_hold)	 node;		/* by holdid */
	uint64_t		 holdid;
	uint32_t		 owner;
	int64_t			 since;		/* ms, granted */
	struct pool_model	*pm;
};
TAILQ_HEAD(pool_holds, pool_hold);
RB_HEAD(pool_hold_tree, pool_hold);

struct pool_model {
	TAILQ_ENTRY(pool_model)	 entry;
	struct pool		*pool;
	struct pool_plan	 plan;
	enum proto_state	 state;
	char			 error[PROTO_MSG_MAX];
	pid_t			 pid;		/* alive, whatever the state */
	uint16_t		 port;
	uint32_t		 in_progress;
	int64_t			 last_used;
	int64_t			 last_grant;	/* ms; -1: never */
	int64_t			 loaded_at;
	uint64_t		 requests;
	uint64_t		 loads;
	uint64_t		 restarts;
	uint64_t		 evictions;
	uint64_t		 load_failures;
	uint64_t		 load_ms_sum;
	uint64_t		 load_hist[PROTO_LOAD_NBOUNDS + 1];
	uint64_t		 req_ms_sum;	/* of the released holds */
	uint64_t		 req_count;
	uint32_t		 nwait;		/* its waiters */
	uint32_t		 nslot;		/* of them, for a slot */
	uint32_t		 nqueued;	/* of them, queued */
	uint32_t		 counted;	/* a telling's count of them */
	uint64_t		 stop_gen;	/* bumped by each unload */
	int			 unloaded;	/* not-loaded until a load */
	int			 unload_pending;
	int			 removed;	/* no longer served */
	int64_t			 backoff;	/* ms, last restart delay */
	struct pool_op		*load_op;	/* the newest load */
	struct pool_op		*evictor;	/* stopped for this load, and
						 * not exited yet */
	struct pool_op		*idle_op;	/* replace or remove */
	struct pool_plan	 next_plan;	/* a pending replace's */
	void			*idle_timer;
	void			*restart_timer;
	void			*grace_timer;	/* EXIT_GRACE after a death */
	/* for the events: why its state, when a restart is due, the
	 * durations of its last loads */
	int			 change;	/* enum proto_change */
	char			 change_for[AGENCY_NAME_MAX];
	int64_t			 restart_at;	/* -1: none due */
	int64_t			 recent[PROTO_LOAD_HISTORY];
	uint32_t		 nrecent;
};
TAILQ_HEAD(pool_models, pool_model);

struct pool {
	const struct pool_ops	*ops;
	void			*ctx;
	/* queue_run, for the timers of the files below pool_change.c */
	void			(*run)(struct pool *);
	struct pool_settings	 set;
	struct pool_models	 models;
	size_t			 nmodels;
	struct pool_ops_q	 queue;
	struct pool_waiters	 waiters;
	struct pool_holds	 holds;
	struct pool_hold_tree	 hold_tree;	/* the same, for releases */
	struct pool_stats	 stats;
	uint64_t		 next_id;
	uint16_t		 next_port;
	uint32_t		 nqueued;	/* queued waiters */
	int			 parallel;	/* some model may wait */
	int			 running;	/* inside queue_run */
	int			 rerun;		/* queue_run: look again */
	int			 recheck;	/* a wait for memory: look
						 * again */
	int			 ahead;		/* loads behind the one making
						 * room: look again */
	struct pool_op		*room;		/* the load making room */
	void			*fair_timer;	/* a fairness window ends */
	uint32_t		 nprogress;	/* waiters told their waits */
	void			*progress_timer;
	int64_t			 progress_due;	/* ms, when it fires */
	int64_t			 progress_at;	/* ms, the last full telling */
	int			 progress_new;	/* new waiters to tell */
	int			 progress_dirty; /* the others may have
						 * changed */
	int			 stopping;
	int			 starting;	/* in pool_start */
	int			 killed_all;	/* stop all sent SIGKILL */
	void			*stop_timer;
};

/* pool_record.c */
void		 plog(struct pool *, int, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));
void		 pmsgf(char *, size_t, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));
int64_t		 pnow(struct pool *);
void		 ptimer_cancel(struct pool *, void **);
int		 pm_change_default(const struct pool_model *, enum proto_state);
void		 pm_set_state(struct pool_model *, enum proto_state,
		    const char *);
void		 pm_set_state_why(struct pool_model *, enum proto_state,
		    const char *, int, const char *);
struct pool_model *pm_find(struct pool *, const char *);
struct pool_model *pm_by_pid(struct pool *, pid_t);
struct pool_op	*pm_running_op(struct pool *, struct pool_model *);
int		 pm_slots_free(const struct pool_model *);
void		 pm_free(struct pool *, struct pool_model *);
void		 pm_new_plan(struct pool_model *, const struct pool_plan *);
void		 parallel_update(struct pool *);
struct pool_op	*op_alloc(struct pool *, enum op_kind, struct pool_model *);
void		 op_free(struct pool *, struct pool_op *);
void		 op_enqueue(struct pool *, struct pool_op *);
void		 op_park(struct pool *, struct pool_op *);
struct pool_op	*op_new(struct pool *, enum op_kind, struct pool_model *);
struct pool_op	*op_queue_load(struct pool *, struct pool_model *);
int		 op_wanted(struct pool *, struct pool_op *);
int		 op_waiting(const struct pool_op *);
int		 op_doomed(struct pool *, const struct pool_op *);
int		 op_add_done(struct pool_op *, pool_load_cb, pool_done_cb,
		    void *);
void		 room_release(struct pool *, struct pool_op *);

/* pool_wait.c */
void		 req_refuse(struct pool *, uint64_t, int, int, const char *,
		    ...)
		    __attribute__((__format__ (printf, 5, 6)));
void		 req_refuse_unloaded(struct pool *, struct pool_model *,
		    uint64_t);
void		 hold_grant(struct pool *, struct pool_model *, uint64_t,
		    uint32_t);
struct pool_hold *hold_find(struct pool *, uint64_t);
void		 hold_unlink(struct pool *, struct pool_hold *);
int		 waiter_add(struct pool *, struct pool_model *,
		    struct pool_op *, uint64_t, uint32_t, int, int);
void		 waiter_free(struct pool *, struct pool_waiter *);
void		 waiter_queue(struct pool *, struct pool_waiter *);
void		 waiter_unqueue(struct pool *, struct pool_waiter *);
void		 waiter_to_slot(struct pool *, struct pool_waiter *);
int		 waiter_admit(struct pool *, struct pool_model *, int,
		    uint64_t);
void		 waiters_pump(struct pool *);
void		 progress_touch(struct pool *);
void		 op_started(struct pool *, struct pool_op *);
void		 op_drop_unwanted(struct pool *, struct pool_op *);
void		 op_drop_unwanted_all(struct pool *);
int		 pm_closed(struct pool *, struct pool_model *, int64_t);
int		 pm_kept(struct pool *, struct pool_model *);
void		 fair_arm(struct pool *, struct pool_op *);
void		 pm_blockers(struct pool *, struct pool_model *, char *,
		    size_t);
int64_t		 pm_wait_ms(struct pool *, struct pool_model *);
int64_t		 pm_fairness(struct pool *, struct pool_model *);
int		 pm_restart_due(struct pool *, struct pool_model *);
int64_t		 pm_window_left(struct pool *, struct pool_model *);
int64_t		 pm_mean_load(const struct pool_model *);
int		 pm_retry_after(struct pool *, struct pool_model *);

/* pool_status.c */
/* What a decision on room for a load is made on, and the decision. */
struct room {
	struct mem_snapshot	 mem;
	struct mem_snapshot	*memp;		/* &mem, or NULL: unknown */
	int64_t			 reserve;
	struct pool_view	*v;		/* the records, as pool_room
						 * sees them */
	size_t			 n;
	size_t			 self;		/* the loading one's index */
	int			 mode;		/* enum pool_room_mode */
	int			 verdict;	/* enum pool_room */
	struct pool_stops	 st;		/* ROOM_EVICT: the set */
	int64_t			 used;		/* the others' needs */
};
int		 room_gather(struct pool *, struct pool_model *,
		    const struct pool_op *, int, struct room *);
int		 room_decide(struct pool *, struct room *);
void		 room_done(struct room *);
void		 room_stop_why(struct pool *, const struct room *, size_t,
		    char *, size_t);
struct pool_model *pm_at(struct pool *, size_t);
void		 room_figures(struct pool *, int64_t,
		    const struct mem_snapshot *, int64_t, int64_t, char *,
		    size_t);
void		 nomem_message(struct pool *, struct pool_model *,
		    const struct mem_snapshot *, int64_t, int64_t, char *,
		    size_t);

/* pool_change.c */
void		 queue_run(struct pool *);
void		 hold_drop(struct pool *, struct pool_hold *);
void		 load_doom(struct pool *, struct pool_op *);
void		 pm_doom_load(struct pool *, struct pool_model *);
void		 stop_grace_cb(void *);

#endif /* AGENCY_POOL_PRIV_H */
