/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The messages between agencyd and agency-proxy over their socketpair
 * (enum imsg_type), and between agency-ctl and agencyd over the control
 * socket (enum ctl_type), with the structures their payloads are read
 * into.  proto.c writes and reads each one field by field (msg.c), in
 * one table: a payload that is short, long, has a string without its NUL
 * or a value out of its range is refused there, and the caller treats
 * that as an attack (agencyd, of the proxy), a broken parent (the proxy)
 * or a broken client.  The configuration's messages are confimsg.c's.
 * The control protocol's numbers are fixed for good (above enum
 * ctl_type); the proxy's are free to change.
 */
#ifndef AGENCY_PROTO_H
#define AGENCY_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"

struct imsg;
struct msgw;

#define PROTO_MSG_MAX		512	/* a refusal or error message */
#define PROTO_PROBE_BODY	500	/* bytes of a probe answer kept */
#define PROTO_LOGLINE_MAX	1024
#define PROTO_RETRY_MAX		3600	/* s, the longest Retry-After */
#define PROTO_SOCK_MAX		108	/* a model's socket: sun_path */

/*
 * The load-duration histogram's upper bounds in ms (Prometheus "le"
 * buckets); a struct proto_status carries one count a bucket, not
 * cumulated, and one more for loads slower than the last bound.
 */
#define PROTO_LOAD_BOUNDS	{ 100, 250, 500, 1000, 2500, 5000, 10000, \
				    30000, 60000, 120000, 300000, 600000 }
#define PROTO_LOAD_NBOUNDS	12
#define PROTO_LOAD_HISTORY	10	/* load durations a status keeps */

/* agencyd <-> agency-proxy; the payload of each is said beside it. */
enum imsg_type {
	IMSG_NONE,

	/*
	 * parent -> proxy: the configuration, in this order (confimsg.c):
	 * START and its global lists, each listener (its socket with it)
	 * and a TLS one's certificate and key in pieces, each runtime and
	 * its rules, each model and its aliases, the keys and the allow
	 * rules each with its models, the users' names, END.
	 */
	IMSG_CONF_START,
	IMSG_CONF_LIST,
	IMSG_CONF_LISTEN,
	IMSG_CONF_TLS_CERT,
	IMSG_CONF_TLS_KEY,
	IMSG_CONF_RUNTIME,
	IMSG_CONF_ROUTE,
	IMSG_CONF_PART,
	IMSG_CONF_REFUSE,
	IMSG_CONF_MOVE,
	IMSG_CONF_MODEL,
	IMSG_CONF_ALIAS,
	IMSG_CONF_KEY,
	IMSG_CONF_KEY_MODEL,
	IMSG_CONF_ALLOW,
	IMSG_CONF_ALLOW_MODEL,
	IMSG_CONF_USER,
	IMSG_CONF_END,

	/* holds: the proxy asks, the parent grants or refuses (and, when
	 * asked to, tells a waiting request what it waits for) */
	IMSG_HOLD_REQ,		/* proxy -> parent: hold_req */
	IMSG_HOLD_WITHDRAW,	/* proxy -> parent: reqid */
	IMSG_HOLD_GRANT,	/* parent -> proxy: hold_grant */
	IMSG_HOLD_REFUSE,	/* parent -> proxy: hold_refuse */
	IMSG_HOLD_WAIT,		/* parent -> proxy: hold_wait */
	IMSG_HOLD_RELEASE,	/* proxy -> parent: holdid */

	/* readiness probes, run by the proxy for the parent */
	IMSG_PROBE,		/* parent -> proxy: probe */
	IMSG_PROBE_CANCEL,	/* parent -> proxy: loadid */
	IMSG_PROBE_RESULT,	/* proxy -> parent: probe_result */

	/* GET /v1/agency/status and /metrics */
	IMSG_STATUS_REQ,	/* proxy -> parent: reqid */
	IMSG_STATUS_MODEL,	/* parent -> proxy: status, one a model */
	IMSG_STATUS_END,	/* parent -> proxy: status_end */

	/*
	 * Ending the requests in progress of one model: agencyd sends the
	 * proxy CANCEL, the proxy answers CANCEL_DONE with the same reqid
	 * and model and the count.  The proxy asks for one (its admin
	 * route) with CANCEL and its own reqid, which agencyd sends back
	 * as the cancel; agencyd's own reqids have the top bit set.  A
	 * report of a cancel agencyd did not send is hostile.
	 */
	IMSG_CANCEL,		/* either way: cancel */
	IMSG_CANCEL_DONE,	/* proxy -> parent: cancel */

	/* POST /v1/agency/load and unload, answered once */
	IMSG_ADMIN,		/* proxy -> parent: admin */
	IMSG_ADMIN_DONE,	/* parent -> proxy: admin_done */

	/*
	 * A model's log: the parent answers LOGS_REQ with a LOGS_LINE for
	 * each line of the ring (with the reqid) and LOGS_END.  With
	 * follow, every new line of that model comes as a LOGS_LINE with
	 * reqid 0 until the proxy sends LOGS_UNFOLLOW for it.
	 */
	IMSG_LOGS_REQ,		/* proxy -> parent: logs_req */
	IMSG_LOGS_LINE,		/* parent -> proxy: logline */
	IMSG_LOGS_END,		/* parent -> proxy: logs_end */
	IMSG_LOGS_UNFOLLOW,	/* proxy -> parent: logs_req */

	/*
	 * The events stream (console/EVENTS.md), parent -> proxy, each
	 * event once: a sync (START, a RECORD a served model in config
	 * order, END) when the proxy is ready and after each reload; a
	 * STATE for each change of state; a QUEUE when a model's requests
	 * in flight or waiting changed; the MEMORY now and then.
	 */
	IMSG_EV_SYNC_START,	/* ev_sync */
	IMSG_EV_RECORD,		/* ev_record */
	IMSG_EV_SYNC_END,	/* ev_sync */
	IMSG_EV_STATE,		/* ev_state */
	IMSG_EV_QUEUE,		/* ev_queue */
	IMSG_EV_MEMORY,		/* ev_memory */

	IMSG_LOG,		/* proxy -> parent: log, a line for the log
				 * at the proxy's priority */
	IMSG_PROXY_READY,	/* proxy -> parent: serving, no payload */
	/* parent -> proxy: ports, the model ports it may connect to from
	 * now on, fewer than before (see struct proto_ports) */
	IMSG_PORTS,

	IMSG_MAXTYPE
};

#define IMSG_CONF_FIRST		IMSG_CONF_START
#define IMSG_CONF_LAST		IMSG_CONF_END

/*
 * agency-ctl <-> agencyd: the control protocol.
 *
 * The proxy's numbers are internal, free to change with both programs.
 * The control protocol's are not: an agency-ctl may be older or newer
 * than its agencyd, so each message keeps its number for good
 * (regress/unit/proto_test pins them).  It is, request first:
 *
 *   19  CTL_STATUS_REQ     ctl -> d  reqid: every model; answered with
 *                                    STATUS_MODEL, its STATUS_ALIASes,
 *                                    each model, STATUS_MEMORY, a
 *                                    STATUS_KEY a key, STATUS_END
 *   42  CTL_STATUS         ctl -> d  ctl_model: one model (name or
 *                                    alias), answered as 19 without keys
 *   20  CTL_STATUS_MODEL   d -> ctl  status
 *   43  CTL_STATUS_ALIAS   d -> ctl  alias
 *   44  CTL_STATUS_MEMORY  d -> ctl  memory
 *   55  CTL_STATUS_KEY     d -> ctl  key_status
 *   21  CTL_STATUS_END     d -> ctl  reqid
 *   26  CTL_LOAD           ctl -> d  ctl_model (wait: when ready)
 *   27  CTL_UNLOAD         ctl -> d  ctl_model
 *   28  CTL_CANCEL         ctl -> d  ctl_model
 *   29  CTL_RELOAD         ctl -> d  nothing; INFO lines, then OK/ERROR
 *   30  CTL_VERBOSE        ctl -> d  ctl_verbose (0 to 3)
 *   31  CTL_LOGS           ctl -> d  ctl_model: the ring's LOGLINEs
 *   45  CTL_FOLLOW         ctl -> d  ctl_model: LOGLINEs until a close
 *   39  CTL_PLAN           ctl -> d  ctl_model; INFO lines, OK verdict
 *   32  CTL_LOGLINE        d -> ctl  log
 *   33  CTL_OK             d -> ctl  ctl_result: done
 *   34  CTL_ERROR          d -> ctl  ctl_result: refused
 *   46  CTL_FAILED         d -> ctl  ctl_result: done, the load failed
 *   35  CTL_INFO           d -> ctl  ctl_result: a line to print
 *   36  CTL_END            d -> ctl  nothing: the answer is complete
 *
 * Each answer but a status ends with CTL_END.  A new message takes a
 * number never used (56 and up); the others below 56 are retired.
 */
enum ctl_type {
	IMSG_CTL_STATUS_REQ = 19,
	IMSG_CTL_STATUS_MODEL = 20,
	IMSG_CTL_STATUS_END = 21,
	IMSG_CTL_LOAD = 26,
	IMSG_CTL_UNLOAD = 27,
	IMSG_CTL_CANCEL = 28,
	IMSG_CTL_RELOAD = 29,
	IMSG_CTL_VERBOSE = 30,
	IMSG_CTL_LOGS = 31,
	IMSG_CTL_LOGLINE = 32,
	IMSG_CTL_OK = 33,
	IMSG_CTL_ERROR = 34,
	IMSG_CTL_INFO = 35,
	IMSG_CTL_END = 36,
	IMSG_CTL_PLAN = 39,
	IMSG_CTL_STATUS = 42,
	IMSG_CTL_STATUS_ALIAS = 43,
	IMSG_CTL_STATUS_MEMORY = 44,
	IMSG_CTL_FOLLOW = 45,
	IMSG_CTL_FAILED = 46,
	IMSG_CTL_STATUS_KEY = 55,
	IMSG_CTL_MAXTYPE
};

/* The most bytes of a certificate chain and of a key (agencyd's
 * secrets.c reads no more); a piece is at most PROTO_TLS_PIECE. */
#define PROTO_TLS_CERT_MAX	(1024 * 1024)
#define PROTO_TLS_KEY_MAX	(64 * 1024)
#define PROTO_TLS_PIECE		8192

enum proto_refusal {
	REFUSE_NOT_LOADED,
	REFUSE_LOAD_FAILED,
	REFUSE_NOT_ENOUGH_MEMORY,
	REFUSE_STOPPING,
	REFUSE_UNKNOWN_MODEL,	/* a race with a reload removing it */
	REFUSE_QUEUE_FULL,	/* the queue (all, or the model's) is full */
	REFUSE_QUEUE_TIMEOUT,	/* waited its queue timeout */
	REFUSE_MODEL_BUSY,	/* max requests in flight, its queue full */
};
#define REFUSE_LAST	REFUSE_MODEL_BUSY

enum proto_state {
	STATE_STOPPED,
	STATE_LOADING,
	STATE_READY,
	STATE_FAILED,
	STATE_UNLOADED,		/* stopped by an unload: refused until a load */
};

/* What a model's waiting requests wait for (struct proto_status). */
enum proto_wait {
	WAIT_NONE,
	WAIT_TURN,		/* its load, queued behind other changes */
	WAIT_MEMORY,		/* its load, for busy models to drain */
	WAIT_SLOT,		/* a slot of a ready model */
	WAIT_LOAD,		/* its load, which has begun (IMSG_HOLD_WAIT
				 * only) */
};
#define WAIT_LAST	WAIT_LOAD

/* Where a model's need came from. */
enum proto_need_from {
	NEED_CONFIGURED,	/* its memory statement */
	NEED_FILE,		/* the upstream file, and the headroom */
	NEED_DIRECTORY,		/* the files under the upstream directory */
	NEED_HF_CACHE,		/* the model id's files in the HF cache */
	NEED_HEADROOM,		/* nothing on disk: the headroom alone */
};

/* Why a model is in its state (struct proto_status, the events). */
enum proto_change {
	CHANGE_NONE,
	CHANGE_REQUEST,		/* loading: a request needs it */
	CHANGE_LOAD,		/* loading: an operator asked */
	CHANGE_START,		/* loading: not lazy, at start or reload */
	CHANGE_RESTART,		/* loading: again, after a failure */
	CHANGE_LOADED,		/* ready */
	CHANGE_EVICTED,		/* stopped to make room (change_for) */
	CHANGE_IDLE,		/* stopped after its idle timeout */
	CHANGE_RELOAD,		/* stopped: its configuration changed */
	CHANGE_SHUTDOWN,	/* stopped: agencyd stops */
	CHANGE_UNLOAD,		/* unloaded by an operator */
	CHANGE_LOAD_FAILED,	/* failed: its load */
	CHANGE_EXITED,		/* failed: its process exited */
	CHANGE_REFUSED,		/* stopped: did not fit, was not started */
	CHANGE_STOPPED,		/* stopped, for another reason */
};
#define CHANGE_LAST	CHANGE_STOPPED

struct proto_reqid {
	uint64_t	reqid;
};

struct proto_holdid {
	uint64_t	holdid;
};

struct proto_loadid {
	uint64_t	loadid;
};

struct proto_key_status {
	uint64_t	reqid;
	char		name[AGENCY_NAME_MAX];
	uint64_t	requests;	/* since it was defined */
};

struct proto_hold_req {
	uint64_t	reqid;
	char		model[AGENCY_NAME_MAX];	/* the served name */
	uint32_t	flags;		/* PROTO_HOLD_*; any other: hostile */
	/* added for access */
	char		key[AGENCY_NAME_MAX];	/* its key's name; "" */
};

/* Tell the request what it waits for (IMSG_HOLD_WAIT), while it waits. */
#define PROTO_HOLD_PROGRESS	0x1
#define PROTO_HOLD_FLAGS	PROTO_HOLD_PROGRESS

/* IMSG_HOLD_GRANT.  upstream: what the model server is sent as the
 * body's "model" (the runtime's send model); "" leaves the client's.
 * sock: the model's Unix socket as the proxy reaches it (in its chroot),
 * "" for a model on its TCP port (%s in its command, agency.conf(5)). */
struct proto_hold_grant {
	uint64_t	reqid;
	uint64_t	holdid;
	uint16_t	port;
	char		upstream[AGENCY_PATH_MAX];
	char		label[AGENCY_PATH_MAX];
	char		sock[PROTO_SOCK_MAX];
};

/*
 * IMSG_HOLD_WAIT.  ahead: the requests for the same model that came
 * before it and still wait; load_ms: how long its model's load has run
 * (WAIT_LOAD), -1 otherwise.
 */
struct proto_hold_wait {
	uint64_t	reqid;
	int32_t		wait;		/* enum proto_wait, not WAIT_NONE */
	uint32_t	ahead;
	int64_t		load_ms;
};

struct proto_hold_refuse {
	uint64_t	reqid;
	int32_t		reason;		/* enum proto_refusal */
	char		message[PROTO_MSG_MAX];
	int32_t		retry_after;	/* s, 0: no Retry-After */
};

struct proto_probe {
	uint64_t	loadid;
	uint16_t	port;
	int32_t		method;		/* enum ready_method */
	char		path[AGENCY_PATH_MAX];
	char		body[AGENCY_BODY_MAX];
	char		label[AGENCY_PATH_MAX];
	char		sock[PROTO_SOCK_MAX];	/* as in proto_hold_grant */
};

struct proto_probe_result {
	uint64_t	loadid;
	int32_t		ok;		/* answered 2xx */
	int32_t		status;		/* HTTP status, 0: no answer */
	char		body[PROTO_PROBE_BODY + 1];
};

struct proto_status {
	uint64_t	reqid;
	char		model[AGENCY_NAME_MAX];
	char		runtime[AGENCY_NAME_MAX];
	int32_t		state;		/* enum proto_state */
	int32_t		lazy;
	char		error[PROTO_MSG_MAX];
	uint32_t	in_progress;
	int64_t		last_used;	/* ms since the epoch; -1: never */
	int32_t		pid;		/* 0: none */
	uint16_t	port;		/* 0: none */
	int64_t		need;		/* bytes */
	uint64_t	requests;
	uint64_t	loads;
	uint64_t	restarts;
	int64_t		loaded_at;	/* ms since the epoch; -1: never */
	/* added for metrics */
	uint64_t	evictions;	/* stopped to make room */
	uint64_t	load_failures;
	uint64_t	load_ms_sum;	/* of the successful loads */
	uint64_t	load_hist[PROTO_LOAD_NBOUNDS + 1];
	int32_t		need_from;	/* enum proto_need_from */
	/* added for scheduling */
	uint32_t	queued;		/* requests waiting for it */
	int32_t		waiting;	/* enum proto_wait */
	int64_t		oldest_wait;	/* ms the oldest has waited; -1 */
	uint32_t	max_requests;	/* 0: no bound */
	/* added for agency-ctl status and the events stream */
	int64_t		idle_timeout;	/* ms; 0: none (or not lazy) */
	int64_t		fairness;	/* ms it is kept for a load that
					 * waits for memory once used; 0: not
					 * lazy (never stopped for room) */
	int64_t		idle_stop_at;	/* ms since the epoch when its idle
					 * timeout stops it unless it is used
					 * first; -1: not counting */
	int64_t		restart_at;	/* ms since the epoch; -1: none due */
	int32_t		change;		/* enum proto_change: why its state */
	char		change_for[AGENCY_NAME_MAX];	/* evicted for */
	uint32_t	nload_ms;	/* of load_ms */
	int64_t		load_ms[PROTO_LOAD_HISTORY];	/* oldest first */
};

/* IMSG_CTL_STATUS_ALIAS: an alias of the model of the status before it. */
struct proto_alias {
	char		model[AGENCY_NAME_MAX];
	char		alias[AGENCY_NAME_MAX];
};

/*
 * IMSG_CTL_STATUS_MEMORY: what the models' memory is measured against.  In
 * use is the need of every model loaded or loading; available is what
 * the fit test reads (MemAvailable, or the cgroup's room), of which
 * reserve is kept free.  Bytes; -1 where unknown; budget 0: none.
 */
struct proto_memory {
	int64_t		in_use;
	int64_t		budget;
	int64_t		available;
	int64_t		total;
	int64_t		reserve;
};

/* IMSG_STATUS_END: a status's last message, with the memory the models'
 * needs are measured against (as agency-ctl's STATUS_MEMORY). */
struct proto_status_end {
	uint64_t		reqid;
	struct proto_memory	mem;
};

struct proto_cancel {
	uint64_t	reqid;
	char		model[AGENCY_NAME_MAX];
	uint32_t	cancelled;
};

/* IMSG_LOG (pri: as the proxy logs it) and IMSG_CTL_LOGLINE. */
struct proto_log {
	int32_t		pri;
	char		line[PROTO_LOGLINE_MAX];
};

struct proto_ctl_model {
	char		model[AGENCY_NAME_MAX];
	int32_t		wait;		/* load: answer when ready */
};

/* A sync of the model records (IMSG_EV_SYNC_START and _END). */
struct proto_ev_sync {
	int64_t		time;		/* ms since the epoch */
	int32_t		reload;		/* 1: after a reload, 0: a new proxy */
	int32_t		ok;		/* the reload took (records follow) */
	char		error[PROTO_MSG_MAX];	/* why it did not */
};

struct proto_ev_record {
	int32_t		changed;	/* replaced by this reload */
	struct proto_status st;
};

struct proto_ev_state {
	int64_t		time;
	int32_t		from;		/* enum proto_state */
	struct proto_status st;		/* after the change */
};

struct proto_ev_queue {
	int64_t		time;
	char		model[AGENCY_NAME_MAX];
	uint32_t	in_progress;
	uint32_t	queued;
	int32_t		waiting;	/* enum proto_wait */
	int64_t		oldest_wait;	/* ms; -1 */
	int64_t		last_used;	/* ms since the epoch; -1 */
};

/* IMSG_EV_MEMORY: the memory as a status shows it, and when. */
struct proto_ev_memory {
	int64_t			time;
	struct proto_memory	mem;
};

enum proto_admin_op {
	ADMIN_LOAD,
	ADMIN_UNLOAD,
};

struct proto_admin {
	uint64_t	reqid;
	int32_t		op;		/* enum proto_admin_op */
	int32_t		wait;		/* load: answer once it is ready */
	char		model[AGENCY_NAME_MAX];
};

/* The answer: an HTTP status; below 400 message is the model's state
 * ("ready", "loading", "unloaded"), else code and message are the
 * error's. */
struct proto_admin_done {
	uint64_t	reqid;
	int32_t		status;
	char		code[AGENCY_NAME_MAX];
	char		message[PROTO_MSG_MAX];
};

struct proto_logs_req {
	uint64_t	reqid;
	int32_t		follow;
	char		model[AGENCY_NAME_MAX];
};

/* seq counts the model's lines since agencyd started, from 1. */
struct proto_logline {
	uint64_t	reqid;		/* 0: a new line, followed */
	uint64_t	seq;
	char		model[AGENCY_NAME_MAX];
	char		line[PROTO_LOGLINE_MAX];
};

struct proto_logs_end {
	uint64_t	reqid;
	int32_t		found;		/* 0: no such model */
	char		model[AGENCY_NAME_MAX];
};

struct proto_ctl_verbose {
	int32_t		verbose;
};

struct proto_ctl_result {
	char		message[PROTO_MSG_MAX];
};

/*
 * The model ports agency-proxy may connect to, as ranges: the configured
 * range, and during a reload that moved it, the port of each model
 * process still outside it.  It gets them on its command line (-p lo:hi,
 * once a range) and, when they shrink, in IMSG_PORTS (1 to
 * PROTO_PORT_RANGES ranges, none empty nor from port 0): Landlock can only
 * narrow what a process may do, so more ports need a new proxy.
 */
#define PROTO_PORT_RANGES	16

struct proto_port_range {
	uint16_t	lo;
	uint16_t	hi;
};

struct proto_ports {
	uint32_t		n;
	struct proto_port_range	r[PROTO_PORT_RANGES];
};

/* Every payload, for a reader that takes any message of a channel. */
union proto_msg {
	struct proto_reqid		 reqid;
	struct proto_holdid		 holdid;
	struct proto_loadid		 loadid;
	struct proto_hold_req		 hold_req;
	struct proto_hold_grant		 hold_grant;
	struct proto_hold_wait		 hold_wait;
	struct proto_hold_refuse	 hold_refuse;
	struct proto_probe		 probe;
	struct proto_probe_result	 probe_result;
	struct proto_status		 status;
	struct proto_alias		 alias;
	struct proto_memory		 memory;
	struct proto_status_end		 status_end;
	struct proto_key_status		 key_status;
	struct proto_cancel		 cancel;
	struct proto_log		 log;
	struct proto_ctl_model		 ctl_model;
	struct proto_ctl_verbose	 ctl_verbose;
	struct proto_ctl_result		 ctl_result;
	struct proto_ev_sync		 ev_sync;
	struct proto_ev_record		 ev_record;
	struct proto_ev_state		 ev_state;
	struct proto_ev_queue		 ev_queue;
	struct proto_ev_memory		 ev_memory;
	struct proto_admin		 admin;
	struct proto_admin_done		 admin_done;
	struct proto_logs_req		 logs_req;
	struct proto_logline		 logline;
	struct proto_logs_end		 logs_end;
	struct proto_ports		 ports;
};

/* Who sends a message: the sender writes, the receiver reads, as it. */
enum proto_from {
	FROM_PARENT,		/* agencyd, to the proxy */
	FROM_PROXY,		/* the proxy, to agencyd */
	FROM_CTL,		/* agency-ctl, to agencyd */
	FROM_AGENCYD,		/* agencyd, to agency-ctl */
};

/* proto.c */
/* The payload of a message of type that from sends, from the structure
 * of len bytes it is kept in: 0, or -1 when from sends no such message,
 * len is not its structure's or it does not fit. */
int		 proto_write(struct msgw *, enum proto_from, uint32_t,
		    const void *, size_t);
/* The size of the structure a message of type that from sends is kept
 * in; 0 for a message of no payload, or none from sends. */
size_t		 proto_size(enum proto_from, uint32_t);
/* A message from one who sends it, read into its structure (at most
 * size bytes; a union proto_msg takes any): 0, or -1 with why. */
int		 proto_read(const struct imsg *, enum proto_from, void *,
		    size_t, const char **);
int		 proto_ports_ok(const struct proto_ports *);
/* "stopped", "loading", "ready", "failed", "unloaded"; NULL for
 * anything else. */
const char	*proto_state_name(int32_t);
const char	*proto_state_name_or(int32_t);
/* "turn", "memory", "slot", "load"; "" for WAIT_NONE, NULL for
 * anything else. */
const char	*proto_wait_name(int32_t);
/* A refusal's reason for metrics: "not_loaded", "load_failed",
 * "not_enough_memory", "stopping", "unknown_model", "queue_full",
 * "queue_timeout", "model_busy"; NULL for anything else. */
const char	*proto_refusal_name(int32_t);
/* "configured", "file", "directory", "hf-cache", "headroom"; or NULL. */
const char	*proto_need_from_name(int32_t);

#endif /* AGENCY_PROTO_H */
