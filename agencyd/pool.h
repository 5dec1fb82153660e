/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The pool: one record per served model, its state, its holds, and the
 * one queue on which every change of state runs (see DESIGN.md, "The
 * pool").  It is a pure state machine: every effect (spawning, signals,
 * readiness probes, the clock, timers, memory, logging, answers) goes
 * through struct pool_ops, so that the tests drive it with fake ones.
 *
 * Callbacks may read (pool_count, pool_status, pool_plan) but must not
 * otherwise call back into the pool, with two exceptions: spawn may
 * answer with pool_spawned from within, and the done callbacks of
 * pool_load, pool_unload, pool_remove, pool_restart and pool_stop_all
 * may call anything.  kill and probe must answer later (from the event
 * loop), never from within.
 *
 * Scheduling (DESIGN.md, "Waiting instead of refusing").  A request that
 * cannot be served at once may wait: for a slot (max_requests), or for
 * its model's load, which may itself wait for its turn or for memory
 * held by busy models.  Waiting requests are bounded (max_queue, global
 * and per model) and timed (queue_timeout, per model).  When no model
 * may wait (every queue_timeout is 0) the pool is the reference pool:
 * every change of state runs on one queue, one at a time, and a lazy
 * model that does not fit is refused at once.  Otherwise only changes
 * of the same model, and the decisions that make room, are ordered:
 * loads of different models run at the same time.
 */
#ifndef AGENCY_POOL_H
#define AGENCY_POOL_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "memory.h"
#include "proto.h"

#define POOL_STOP_GRACE		5000		/* ms, SIGTERM to SIGKILL */
#define POOL_EXIT_GRACE		250		/* ms, an exit before stop-all */
#define POOL_BACKOFF_MIN	1000		/* ms, first restart */
#define POOL_BACKOFF_MAX	(5 * 60 * 1000)	/* ms */
#define POOL_BACKOFF_RESET	(5 * 60 * 1000)	/* ms ready: backoff resets */
#define POOL_REPROBE		250		/* ms, after a probe gave up */
#define POOL_GIB		(1024LL * 1024 * 1024)
#define POOL_LINGER		1000		/* ms, an idle model stays in use
						 * for a waiting load (batching) */
#define POOL_GUESS_REQUEST	1000		/* ms, before one was timed */
#define POOL_GUESS_LOAD		10000		/* ms, before one was timed */
#define POOL_RETRY_MAX		PROTO_RETRY_MAX	/* s, the longest Retry-After */
#define POOL_PROGRESS		500		/* ms, at least, between two
						 * tellings of what changed */
/*
 * The fairness window by default: POOL_FAIRNESS_K times the mean
 * measured load of the model that keeps the memory (what stopping it
 * early costs its clients: a load again), within these bounds.  Ten
 * loads' time keeps swapping to about a tenth of the time two models
 * that take turns are served; two seconds at least, so that fast loads
 * do not swap at every request; a minute at most, so that a request
 * never waits longer than that for a model that loads slowly.
 */
#define POOL_FAIRNESS_K		10
#define POOL_FAIRNESS_MIN	2000		/* ms */
#define POOL_FAIRNESS_MAX	60000		/* ms */
#define POOL_FAIRNESS_MEASURED	(-1)		/* the setting: the default */

/* What is fixed about a served model. */
struct pool_plan {
	char		 name[AGENCY_NAME_MAX];
	char		 upstream[AGENCY_PATH_MAX];
	char		 label[AGENCY_PATH_MAX];	/* in messages */
	int		 lazy;
	int64_t		 need;		/* bytes */
	int		 need_from;	/* enum proto_need_from */
	int64_t		 idle_timeout;	/* ms; 0: never (lazy only) */
	int64_t		 load_timeout;	/* ms; 0: never */
	void		*arg;		/* the caller's (its model_conf) */
	/* scheduling: pool_set_limits changes these without a restart */
	int64_t		 queue_timeout;	/* ms a request may wait; 0: none */
	uint32_t	 max_queue;	/* its waiting requests; 0: no bound */
	uint32_t	 max_requests;	/* in flight at once; 0: no bound */
};

struct pool_settings {
	int64_t		 reserve;	/* bytes; -1: min(2 GiB, 5% of total) */
	int64_t		 budget;	/* bytes; 0: none */
	int		 overcommit;
	uint16_t	 port_lo;
	uint16_t	 port_hi;
	uint32_t	 max_queue;	/* waiting requests in all; 0: none */
	int64_t		 fairness;	/* ms, the fairness window; < 0:
					 * from each model's loads */
};

struct pool_ops {
	/* Start the process for a load on port; answer with pool_spawned,
	 * later or from within. */
	void	 (*spawn)(void *, const struct pool_plan *, uint64_t spawnid,
		    uint16_t port);
	/* 1 when nothing listens on port. */
	int	 (*port_free)(void *, uint16_t port);
	/* Signal a model process: SIGTERM its process group, SIGKILL
	 * everything it started. */
	void	 (*kill)(void *, pid_t pid, int sig);
	/* Ask the proxy to probe port; answer with pool_probe_result. */
	void	 (*probe)(void *, const struct pool_plan *, uint64_t loadid,
		    uint16_t port);
	void	 (*probe_cancel)(void *, uint64_t loadid);
	int64_t	 (*now)(void *);		/* ms since the epoch */
	void	*(*timer_add)(void *, int64_t ms, void (*)(void *), void *);
	void	 (*timer_del)(void *, void *);	/* never for a fired one */
	int	 (*memory)(void *, struct mem_snapshot *);	/* -1: unknown */
	void	 (*log)(void *, int pri, const char *line);
	void	 (*granted)(void *, uint64_t reqid, uint64_t holdid,
		    const struct pool_plan *, uint16_t port);
	/* retry_after: seconds for a Retry-After, 0 for none */
	void	 (*refused)(void *, uint64_t reqid, int reason,
		    int retry_after, const char *message);
	/* A record changed state. */
	void	 (*changed)(void *, const struct pool_plan *);
	/*
	 * What a request of pool_acquire_progress waits for (enum
	 * proto_wait), the requests for its model that came before it and
	 * still wait, and how long its load has run (WAIT_LOAD; else -1):
	 * once it has waited a turn of the loop, then when the wait or
	 * ahead change, at most every POOL_PROGRESS ms.  Always from a
	 * timer.  May be NULL: nothing is told.
	 */
	void	 (*waiting)(void *, uint64_t reqid, int wait, uint32_t ahead,
		    int64_t load_ms);
};

/* Counters for metrics. */
struct pool_stats {
	uint64_t	 grants;
	uint64_t	 refusals;
	uint64_t	 evictions;
	uint64_t	 load_failures;
	uint64_t	 deaths;	/* exits the pool did not cause */
	uint64_t	 idle_unloads;
	uint64_t	 queued;	/* requests that waited in the queue */
	uint64_t	 queue_timeouts;
	uint64_t	 queue_full;	/* refused: a queue was full */
};

/* One record as the eviction candidate and pool_room see it. */
struct pool_view {
	enum proto_state state;
	int		 lazy;
	uint32_t	 in_progress;
	int64_t		 last_used;	/* -1: never */
	int64_t		 need;		/* bytes */
	int		 running;	/* has a process (may be exiting) */
	int		 kept;		/* idle, but in use while a load
					 * waits: not stopped for it yet */
	int		 claim;		/* its load was queued before the
					 * one decided on and has not
					 * started its process: it will
					 * claim its need */
	int		 held;		/* lazy, loaded since the first of
					 * those claims came: it stays,
					 * for them, as models that are not
					 * lazy do */
};

/* What pool_room decides for a lazy model's load. */
enum pool_room {
	ROOM_FITS,		/* load it */
	ROOM_EVICT,		/* stop the set first */
	ROOM_WAIT,		/* busy (or kept) lazy models hold the memory */
	ROOM_NEVER,		/* nothing that can be stopped makes it fit */
	ROOM_BEHIND,		/* not its turn, and it does not fit now
				 * beside what the loads before it claim */
};

/* Whose decision pool_room takes. */
enum pool_room_mode {
	ROOM_MODE_TURN,		/* the load whose turn it is to make room */
	ROOM_MODE_AHEAD,	/* another load, while one makes room: it
				 * may start now, never stop anything */
	ROOM_MODE_REFERENCE,	/* the reference pool: one model at a time,
				 * the least recently used */
};

/* How the set to stop was chosen (struct pool_stops). */
enum pool_stops_how {
	STOPS_FEWEST,		/* the fewest that free what is missing */
	STOPS_LRU,		/* the reference pool: the least recently used */
	STOPS_ONE_BY_ONE,	/* the idle models' needs do not cover what
				 * the measured memory lacks: the least
				 * recently used, then measure again */
};

/* A model that may be stopped, as pool_stop_set sees it. */
struct pool_cand {
	int64_t		 frees;		/* bytes stopping it frees */
	int64_t		 last_used;	/* ms; -1: never */
};

/* The set pool_room chose to stop, and why. */
struct pool_stops {
	struct pool_cand *cand;		/* the caller's, n long: work space */
	size_t		*stop;		/* the caller's, 2n long: the set,
					 * indexes of the views, oldest
					 * first; then work space */
	size_t		 n;		/* the set's size */
	size_t		 ncand;		/* idle lazy models there were */
	int64_t		 missing;	/* bytes short, by need */
	int		 how;		/* enum pool_stops_how */
};

/* What a request for a model would do now (pool_explain). */
enum pool_verdict {
	VERDICT_GRANT,		/* served at once */
	VERDICT_JOIN,		/* waits for a load in progress */
	VERDICT_LOAD,		/* loads it in place */
	VERDICT_EVICT,		/* stops idle models, then loads it */
	VERDICT_WAIT,		/* waits in the queue */
	VERDICT_REFUSE,
};

/* What a wait estimate is made of (pool_wait_estimate). */
struct pool_guess {
	int		 ready;		/* the model is ready */
	uint32_t	 ahead;		/* requests waiting before this one */
	uint32_t	 slots;		/* max requests; 0: none */
	int64_t		 req_ms;	/* mean request; -1: none timed yet */
	int64_t		 load_ms;	/* mean load; -1: none timed yet */
	int64_t		 drain_ms;	/* until busy models free the memory;
					 * -1: nothing to wait for */
};

struct pool;

typedef void	(*pool_load_cb)(void *, int ok, const char *err);
typedef void	(*pool_done_cb)(void *);

/* A pool with no models; the settings are copied. */
struct pool	*pool_new(const struct pool_ops *, void *,
		    const struct pool_settings *);
/* Free everything without signalling or answering anyone. */
void		 pool_free(struct pool *);
void		 pool_set_settings(struct pool *,
		    const struct pool_settings *);
/* Add a served model (the plan is copied), in config order; -1 when the
 * name is taken or out of memory. */
int		 pool_add(struct pool *, const struct pool_plan *);
/* Queue a load of every model that is not lazy, in config order. */
void		 pool_start(struct pool *);

/* Hold a model for request reqid of owner: answered with granted or
 * refused, possibly before returning.  A lazy model is loaded first; a
 * loading one is waited for; a full model (max_requests) or one a
 * waiting load needs the memory of (fairness window) is queued for. */
void		 pool_acquire(struct pool *, const char *, uint64_t reqid,
		    uint32_t owner);
/* The same, and while the request waits, ops->waiting tells what for. */
void		 pool_acquire_progress(struct pool *, const char *,
		    uint64_t reqid, uint32_t owner);
/* The client of a waiting request left: it is never granted or refused,
 * and its place in the queue is free.  A load in progress goes on; a
 * load that has not started and that nobody else waits for is dropped.
 * 1 when it was waiting, 0 when owner has no such request (already
 * answered). */
int		 pool_withdraw(struct pool *, uint64_t reqid, uint32_t owner);
/* Release a hold; -1 (nothing changed) when owner holds no such hold,
 * which includes a second release of the same hold. */
int		 pool_release(struct pool *, uint64_t holdid, uint32_t owner);
/* Owner is gone: release all its holds and forget its waiting requests. */
void		 pool_release_owner(struct pool *, uint32_t owner);

/* A model's queue_timeout, max_queue and max_requests from plan (the
 * rest of it is ignored), at once; -1 for an unknown model. */
int		 pool_set_limits(struct pool *, const struct pool_plan *);

/* Warm a model, clearing an explicit unload; cb (may be NULL) when it is
 * ready or the load failed, at once when it is ready already.  -1 for
 * an unknown model. */
int		 pool_load(struct pool *, const char *, pool_load_cb, void *);
/* Unload a model until the next pool_load: a load in progress is ended
 * (its waiters get load-failed); done (may be NULL) after the exit.  -1
 * for an unknown model. */
int		 pool_unload(struct pool *, const char *, pool_done_cb, void *);
/* Stop a lazy model now, to be loaded again by its next request (an
 * unload's refusals end): as an unload, a load in progress is ended (its
 * waiters get load-failed) and requests in flight end with its process;
 * done (may be NULL) after the exit.  -1 for an unknown model, -2 for
 * one that is not lazy (nothing would load it again). */
int		 pool_stop(struct pool *, const char *, pool_done_cb, void *);
/*
 * Reload and cancel.
 *
 * pool_remove: the model is no longer served.  At once: pool_acquire
 * refuses it REFUSE_UNKNOWN_MODEL ("<name> is not served"), pool_load,
 * pool_unload, pool_restart, pool_replace and pool_plan no longer find it
 * (so pool_add may add the name again), its waiting requests are refused
 * REFUSE_UNKNOWN_MODEL and a load of it in progress ends as an unload
 * would end it (pool_load callbacks get "<name> is no longer served").
 * Holds keep their process, and pool_release of them keeps working.
 * Once it is idle, on the queue: its process, if any, is stopped like an
 * unload's (SIGTERM, SIGKILL after POOL_STOP_GRACE), the record is freed
 * (ops->changed is called once it has left the list) and done (may be
 * NULL) runs.  Until it is freed, pool_count and pool_status keep listing
 * it with its state and requests in progress, so an operator sees it
 * draining.  -1 for an unknown model (or out of memory).
 */
int		 pool_remove(struct pool *, const char *, pool_done_cb, void *);
/*
 * pool_replace: the model named plan->name has a new plan (copied).  With
 * no process and no spawn in progress, the plan is swapped at once (a
 * failed record becomes stopped; a model that is not lazy, not unloaded,
 * is loaded).  Otherwise the new plan is pending: pool_plan answers it,
 * and new requests (and pool_load, pool_restart) wait for the replace
 * instead of being granted the old process.  Holds in progress keep the
 * old process; once the model is idle, on the queue, its process is
 * stopped, the plan swapped, and the model loaded again with the new plan
 * when it was ready or loading, is not lazy, or anyone waits for it.  A
 * load that is in progress when pool_replace is called finishes with the
 * old plan (its waiters get the old process) and the replace follows.
 * The old plan, arg included, stays in use (spawn, probe, granted) until
 * the swap, which ops->changed announces.  A second pool_replace before
 * the swap only changes the pending plan.  -1 for an unknown model (or
 * out of memory).
 */
int		 pool_replace(struct pool *, const struct pool_plan *);
/*
 * pool_restart: stop the model's process and load it again, on the queue,
 * without making it not-loaded (unlike pool_unload).  Until the restart
 * reaches the head of the queue the old process is still granted; from
 * then on the model is loading (the old process is stopped whatever holds
 * it: the caller ends those requests) and new requests and pool_load wait
 * for the new process.  A second pool_restart before it starts joins the
 * first.  done (may be NULL) once the new process is ready or its load
 * failed; at once when the model is not ready (nothing to restart), is
 * being unloaded, or agency is stopping.  With a replace pending, done
 * waits for the replace, which restarts it anyway.  -1 for an unknown
 * model.
 */
int		 pool_restart(struct pool *, const char *, pool_done_cb,
		    void *);

/* Refuse everything from now on, SIGTERM every process group, SIGKILL
 * after POOL_STOP_GRACE; done once every process has been reaped. */
void		 pool_stop_all(struct pool *, pool_done_cb, void *);
/* Whether pool_stop_all was called. */
int		 pool_stopping(struct pool *);

/* The answer to ops->spawn: pid > 0, or err. */
void		 pool_spawned(struct pool *, uint64_t spawnid, pid_t,
		    const char *err);
/* The answer to ops->probe: ok, or the status and the start of the body
 * of a wrong answer; status 0 (no answer: the prober gave up) asks again
 * after POOL_REPROBE, within the load timeout. */
void		 pool_probe_result(struct pool *, uint64_t loadid, int ok,
		    int status, const char *body);
/* A reaped child, reported once nothing it started is left (agencyd
 * reaps the model's reaper, see spawn.h), with the wait status of the
 * process spawn answered; addr_in_use: its output said its port was
 * taken; said: the last error line it wrote, or NULL, which a failed
 * load quotes.  Unknown pids are ignored. */
void		 pool_child_exited(struct pool *, pid_t, int wstatus,
		    int addr_in_use, const char *said);

/* The number of models, and the status of the i-th in config order
 * (model, state, lazy, error, in_progress, last_used, pid, port, need,
 * requests, loads, restarts, loaded_at, evictions, load_failures, the
 * load-duration histogram and the queue figures; reqid and runtime are
 * the caller's); -1 when i is out of range.  A model stopped by
 * pool_unload shows STATE_UNLOADED. */
size_t		 pool_count(struct pool *);
int		 pool_status(struct pool *, size_t, struct proto_status *);
/* The same for a served model by name (not one draining after
 * pool_remove); -1 when there is none. */
int		 pool_status_name(struct pool *, const char *,
		    struct proto_status *);
/* A model's plan, or NULL. */
const struct pool_plan *pool_plan(struct pool *, const char *);
/* The counters since pool_new. */
void		 pool_stats(struct pool *, struct pool_stats *);
/*
 * What a request for the model would do now, without doing it: the
 * verdict, and lines for an operator (through line, in order) with the
 * memory arithmetic, the models it would stop or wait for, and an
 * estimated wait.  -1 for an unknown model.
 */
int		 pool_explain(struct pool *, const char *,
		    void (*line)(void *, const char *), void *);
/* "grant", "join", "load", "evict", "wait", "refuse". */
const char	*pool_verdict_name(int);

/*
 * Pure decisions (pool_decide.c), exported for the tests.
 */
/* The reserve: setting when >= 0, else min(2 GiB, 5% of total). */
int64_t		 pool_reserve(int64_t setting, int64_t total);
/* The fit test: 1 when need fits: available >= need + reserve (mem
 * NULL: unknown, not checked) and, with a budget, committed + need <=
 * budget. */
int		 pool_fits(const struct mem_snapshot *, int64_t reserve,
		    int64_t budget, int64_t committed, int64_t need);
/* The choice of the model to stop: the index of the ready, idle, lazy
 * view but self (n or more: none) used least recently (the first among
 * equals) that is not kept, or -1. */
ssize_t		 pool_eviction_candidate(const struct pool_view *, size_t,
		    size_t self);
/*
 * The set of candidates to stop so that they free at least want bytes:
 * the fewest; of the sets of that many, the one whose most recently
 * used member was used longest ago, then the one whose members are the
 * oldest (the first in the table among equals).  stop (2n long) gets
 * the indexes, oldest first; the rest is work space.  Its size, 0 when
 * want <= 0, -1 when all of them would not be enough.  O(n^2) steps.
 */
ssize_t		 pool_stop_set(const struct pool_cand *, size_t,
		    int64_t want, size_t *stop);
/* The needs of the views but self that hold memory: loaded, loading or
 * still running. */
int64_t		 pool_committed(const struct pool_view *, size_t, size_t self);
/*
 * The one rule for making room (DESIGN.md, the pool), for v[self] (its
 * need), by the fit test over what the others hold (the loading ones
 * count against the measured memory too, as they have not taken theirs
 * yet):
 *  - ROOM_MODE_AHEAD: ROOM_FITS when it fits now and also beside what
 *    the loads before it (claim) will take once they stop every lazy
 *    model but the held and loading ones; else ROOM_BEHIND.
 *  - ROOM_FITS when it fits now.
 *  - ROOM_EVICT with st's set, unless by need the budget shows that
 *    stopping every idle one would not be enough: the fewest idle lazy
 *    models that free what is missing (pool_stop_set); when their needs
 *    cannot cover what the measured memory lacks, or in
 *    ROOM_MODE_REFERENCE, the least recently used alone.
 *  - ROOM_WAIT when stopping the busy and kept lazy ones as well would
 *    be enough; ROOM_NEVER otherwise.
 */
int		 pool_room(const struct pool_view *, size_t, size_t self,
		    const struct mem_snapshot *, int64_t reserve,
		    int64_t budget, int mode, struct pool_stops *);
/* The fairness window in ms: setting when >= 0, else POOL_FAIRNESS_K
 * times load_ms (the mean load; < 0: none measured, POOL_GUESS_LOAD)
 * within POOL_FAIRNESS_MIN and POOL_FAIRNESS_MAX. */
int64_t		 pool_fairness(int64_t setting, int64_t load_ms);
/* How long a request would wait, in ms, from what was measured. */
int64_t		 pool_wait_estimate(const struct pool_guess *);
/* A Retry-After in seconds for a wait of ms: 1 to POOL_RETRY_MAX. */
int		 pool_retry_after(int64_t);
/* The load-duration bucket of ms: the first bound (PROTO_LOAD_BOUNDS)
 * it is within, or PROTO_LOAD_NBOUNDS past the last. */
size_t		 pool_load_bucket(int64_t);
/* "exited with N" or "was killed by SIGNAME". */
void		 pool_describe_exit(int wstatus, char *, size_t);

#endif /* AGENCY_POOL_H */
