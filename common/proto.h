/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The messages between agencyd and agency-proxy over their socketpair,
 * and between agencyd and agency-ctl over the control socket.
 *
 * Every payload is a fixed-size struct: the receiver takes it only when
 * the length is exact (imsg_get_data) and every string in it is
 * NUL-terminated inside its array (proto_strok).  agencyd treats anything
 * else from the proxy as an attack and restarts the proxy.
 *
 * One exception, for the message of every request: IMSG_HOLD_GRANTV is
 * a struct proto_grant_head followed by two strings, each with its NUL
 * (proto_grantv takes it apart), rather than 2 KB mostly of zeroes.
 */
#ifndef AGENCY_PROTO_H
#define AGENCY_PROTO_H

#include <stdint.h>
#include <string.h>

#include "config.h"

#define PROTO_MSG_MAX		512	/* a refusal or error message */
#define PROTO_PROBE_BODY	500	/* bytes of a probe answer kept */
#define PROTO_LOGLINE_MAX	1024
#define PROTO_RETRY_MAX		3600	/* s, the longest Retry-After */

/*
 * The load-duration histogram's upper bounds in ms (Prometheus "le"
 * buckets); a struct proto_status carries one count a bucket, not
 * cumulated, and one more for loads slower than the last bound.
 */
#define PROTO_LOAD_BOUNDS	{ 100, 250, 500, 1000, 2500, 5000, 10000, \
				    30000, 60000, 120000, 300000, 600000 }
#define PROTO_LOAD_NBOUNDS	12
#define PROTO_LOAD_HISTORY	10	/* load durations a status keeps */

enum imsg_type {
	IMSG_NONE,

	/* parent -> proxy: the configuration, in this order */
	IMSG_CONF_START,	/* struct proto_conf_global */
	IMSG_CONF_LISTEN,	/* struct proto_listen, with the socket fd */
	IMSG_CONF_RUNTIME,	/* struct proto_runtime */
	IMSG_CONF_ROUTE,	/* struct proto_str, of the last runtime */
	IMSG_CONF_PART,		/* struct proto_str, of the last runtime */
	IMSG_CONF_REFUSE,	/* struct proto_str, of the last runtime */
	IMSG_CONF_MOVE,		/* struct proto_move, of the last runtime */
	IMSG_CONF_MODEL,	/* struct proto_model */
	IMSG_CONF_ALIAS,	/* struct proto_str, of the last model */
	IMSG_CONF_END,		/* no payload: swap in the new config */
	/* IMSG_CONF_NAME, a server name, is after IMSG_HOLD_GRANTV */

	/* holds */
	IMSG_HOLD_REQ,		/* proxy -> parent: struct proto_hold_req */
	IMSG_HOLD_WITHDRAW,	/* proxy -> parent: struct proto_reqid */
	IMSG_HOLD_GRANT_OLD,	/* no longer sent nor taken: the slot keeps
				 * the numbers of the messages after it */
	IMSG_HOLD_REFUSE,	/* parent -> proxy: struct proto_hold_refuse */
	IMSG_HOLD_RELEASE,	/* proxy -> parent: struct proto_holdid */

	/* readiness probes, run by the proxy for the parent */
	IMSG_PROBE,		/* parent -> proxy: struct proto_probe */
	IMSG_PROBE_CANCEL,	/* parent -> proxy: struct proto_loadid */
	IMSG_PROBE_RESULT,	/* proxy -> parent: struct proto_probe_result */

	/* status for GET /v1/agency/status and agency-ctl status */
	IMSG_STATUS_REQ,	/* struct proto_reqid */
	IMSG_STATUS_MODEL,	/* struct proto_status, one a model */
	IMSG_STATUS_END,	/* struct proto_reqid */

	/*
	 * ending the requests in progress of one model: agencyd sends the
	 * proxy IMSG_CANCEL, the proxy answers IMSG_CANCEL_DONE with the
	 * same reqid and model and the count.  The proxy asks for one (its
	 * admin route) with IMSG_CANCEL and its own reqid, which agencyd
	 * sends back as the cancel; agencyd's own reqids have the top bit
	 * set.  A report of a cancel agencyd did not send is hostile.
	 */
	IMSG_CANCEL,		/* either way: struct proto_cancel */
	IMSG_CANCEL_DONE,	/* proxy -> parent: struct proto_cancel */

	IMSG_LOG,		/* proxy -> parent: the line, its NUL the
				 * last byte and its only one, at most
				 * PROTO_LOGLINE_MAX bytes; the priority in
				 * the header's peerid (proto_logline) */
	IMSG_PROXY_READY,	/* proxy -> parent: serving, no payload */

	/* agency-ctl <-> agencyd */
	IMSG_CTL_LOAD,		/* struct proto_ctl_model */
	IMSG_CTL_UNLOAD,	/* struct proto_ctl_model */
	IMSG_CTL_CANCEL,	/* struct proto_ctl_model */
	IMSG_CTL_RELOAD,	/* no payload */
	IMSG_CTL_VERBOSE,	/* struct proto_ctl_verbose */
	IMSG_CTL_LOGS,		/* struct proto_ctl_model */
	IMSG_CTL_LOGLINE,	/* struct proto_log */
	IMSG_CTL_OK,		/* struct proto_ctl_result */
	IMSG_CTL_ERROR,		/* struct proto_ctl_result */
	IMSG_CTL_INFO,		/* struct proto_ctl_result: a line to print */
	IMSG_CTL_END,		/* no payload: the answer is complete */

	/* parent -> proxy, a hold granted: struct proto_grant_head, then
	 * upstream, then label, each with its NUL (proto_grantv) */
	IMSG_HOLD_GRANTV,

	/* parent -> proxy, between IMSG_CONF_START and the first
	 * IMSG_CONF_RUNTIME: a "server name", struct proto_str */
	IMSG_CONF_NAME,
	/* agency-ctl -> agencyd: struct proto_ctl_model; the answer is
	 * IMSG_CTL_INFO lines, IMSG_CTL_OK with the verdict, IMSG_CTL_END */
	IMSG_CTL_PLAN,
	/* parent -> proxy: struct proto_ports, the model ports it may
	 * connect to from now on, fewer than before (see proto_ports) */
	IMSG_PORTS,
	/* parent -> proxy: struct proto_hold_wait, what a waiting request
	 * that asked for it (PROTO_HOLD_PROGRESS) waits for: once it has
	 * waited a turn of agencyd's loop, then when that changes */
	IMSG_HOLD_WAIT,

	/*
	 * agency-ctl <-> agencyd, added for operators.  A status, whole or
	 * of one model, is answered on the control socket with each
	 * model's IMSG_STATUS_MODEL followed by its IMSG_STATUS_ALIAS
	 * messages, then one IMSG_STATUS_MEMORY, then IMSG_STATUS_END.
	 */
	IMSG_CTL_STATUS,	/* struct proto_ctl_model: one model (its name
				 * or an alias); or IMSG_CTL_ERROR, END */
	IMSG_STATUS_ALIAS,	/* agencyd -> ctl: struct proto_alias */
	IMSG_STATUS_MEMORY,	/* agencyd -> ctl: struct proto_memory */
	/* struct proto_ctl_model: the model's lines (IMSG_CTL_LOGLINE),
	 * then each new one as it comes, until either side closes */
	IMSG_CTL_FOLLOW,
	/* agencyd -> ctl: struct proto_ctl_result: what was asked was
	 * done, and the model failed (its load) */
	IMSG_CTL_FAILED,

	/*
	 * Access (keys, TLS, Unix sockets, CORS), parent -> proxy, within
	 * the configuration: after IMSG_CONF_START, the CORS origins;
	 * after a TLS listener's IMSG_CONF_LISTEN, its certificate and
	 * key in pieces; after the last IMSG_CONF_MODEL, the keys and the
	 * allow rules, each followed by its models.
	 */
	IMSG_CONF_CORS,		/* struct proto_str, an origin */
	IMSG_CONF_TLS_CERT,	/* bytes: the next piece of the last
				 * listener's certificate chain (PEM) */
	IMSG_CONF_TLS_KEY,	/* bytes: the next piece of its key (PEM) */
	IMSG_CONF_KEY,		/* struct proto_key */
	IMSG_CONF_KEY_MODEL,	/* struct proto_str, of the last key */
	IMSG_CONF_ALLOW,	/* struct proto_allow */
	IMSG_CONF_ALLOW_MODEL,	/* struct proto_str, of the last rule */
	IMSG_CONF_USER,		/* struct proto_user: a name for the log */
	/* agencyd -> agency-ctl, a whole status: after IMSG_STATUS_MEMORY
	 * and before IMSG_STATUS_END, struct proto_key_status, one a key */
	IMSG_STATUS_KEY,

	/*
	 * The events stream (console/EVENTS.md), parent -> proxy, each
	 * event once: a sync (START, a RECORD a served model in config
	 * order, END) when the proxy is ready and after each reload; a
	 * STATE for each change of state; a QUEUE when a model's requests
	 * in flight or waiting changed; the MEMORY now and then.
	 */
	IMSG_EV_SYNC_START,	/* struct proto_ev_sync */
	IMSG_EV_RECORD,		/* struct proto_ev_record */
	IMSG_EV_SYNC_END,	/* struct proto_ev_sync */
	IMSG_EV_STATE,		/* struct proto_ev_state */
	IMSG_EV_QUEUE,		/* struct proto_ev_queue */
	IMSG_EV_MEMORY,		/* struct proto_ev_memory */

	/*
	 * POST /v1/agency/load and unload: proxy -> parent IMSG_ADMIN,
	 * answered IMSG_ADMIN_DONE with its reqid, once, as agency-ctl's
	 * load and unload are answered.
	 */
	IMSG_ADMIN,		/* proxy -> parent: struct proto_admin */
	IMSG_ADMIN_DONE,	/* parent -> proxy: struct proto_admin_done */

	/*
	 * A model's log: proxy -> parent IMSG_LOGS_REQ; the parent answers
	 * with an IMSG_LOGS_LINE for each line of the ring (with the
	 * reqid) and IMSG_LOGS_END.  With follow, every new line of that
	 * model comes as an IMSG_LOGS_LINE with reqid 0 until the proxy
	 * sends IMSG_LOGS_UNFOLLOW for it.
	 */
	IMSG_LOGS_REQ,		/* proxy -> parent: struct proto_logs_req */
	IMSG_LOGS_LINE,		/* parent -> proxy: struct proto_logline */
	IMSG_LOGS_END,		/* parent -> proxy: struct proto_logs_end */
	IMSG_LOGS_UNFOLLOW,	/* proxy -> parent: struct proto_logs_req */

	IMSG_MAXTYPE
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

struct proto_str {
	char		s[AGENCY_PATH_MAX];
};

struct proto_reqid {
	uint64_t	reqid;
};

struct proto_holdid {
	uint64_t	holdid;
};

struct proto_loadid {
	uint64_t	loadid;
};

struct proto_conf_global {
	int64_t		max_body;
	int64_t		request_timeout;	/* ms */
	uint16_t	port_lo;
	uint16_t	port_hi;
	char		default_model[AGENCY_NAME_MAX];
	/* added for connection hardening */
	int64_t		header_timeout;		/* ms */
	int64_t		max_connections;	/* 0: from the fd limit */
	/* added for the front door's hardening */
	int64_t		body_timeout;		/* ms */
	int64_t		body_buffer;		/* bytes, all bodies */
	int32_t		host_any;		/* 1: no Host check */
	/* added for access */
	int64_t		queue_timeout;		/* ms, a key's wait */
	/* added for the console */
	int32_t		console;		/* 1: GET / serves it */
};

struct proto_listen {
	char		host[AGENCY_NAME_MAX];
	uint16_t	port;
	/* added for access */
	int32_t		tls;		/* its certificate and key follow */
	char		path[AGENCY_PATH_MAX];	/* a Unix socket; host "" */
};

/* A key: its name and the SHA-256 of its secret, never the secret. */
struct proto_key {
	char		name[AGENCY_NAME_MAX];
	uint8_t		digest[AGENCY_DIGEST_LEN];
	int32_t		admin;
	int64_t		max_requests;	/* 0: no bound */
};

/* A rule of the Unix-socket listeners: a uid or a gid, and its name. */
struct proto_allow {
	int32_t		kind;		/* enum allow_kind */
	uint32_t	id;
	char		name[AGENCY_NAME_MAX];
	int32_t		admin;
};

/* A user's name, which the proxy cannot look up itself. */
struct proto_user {
	uint32_t	uid;
	char		name[AGENCY_NAME_MAX];
};

struct proto_key_status {
	uint64_t	reqid;
	char		name[AGENCY_NAME_MAX];
	uint64_t	requests;	/* since it was defined */
};

struct proto_runtime {
	char		name[AGENCY_NAME_MAX];
	int32_t		kind;		/* enum model_kind */
	int32_t		stops;		/* enum stops_on_close */
	int64_t		max_tokens;
	int32_t		passthrough;	/* 1: /upstream/MODEL/... */
	int32_t		progress;	/* loading progress: 0 or 1 */
};

struct proto_move {
	char		from[AGENCY_FIELD_MAX];
	char		to[AGENCY_FIELD_MAX];
};

struct proto_model {
	char		name[AGENCY_NAME_MAX];
	char		runtime[AGENCY_NAME_MAX];
	char		upstream[AGENCY_PATH_MAX];
	char		label[AGENCY_PATH_MAX];
	int64_t		max_tokens;	/* 0: the runtime's */
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

struct proto_hold_grant {
	uint64_t	reqid;
	uint64_t	holdid;
	uint16_t	port;
	char		upstream[AGENCY_PATH_MAX];
	char		label[AGENCY_PATH_MAX];
};

/* IMSG_HOLD_GRANTV: this, then upstream and label, each with its NUL,
 * each shorter than AGENCY_PATH_MAX.  The upstream is what the model
 * server is sent as the body's "model" (the runtime's send model); ""
 * leaves the client's. */
struct proto_grant_head {
	uint64_t	reqid;
	uint64_t	holdid;
	uint16_t	port;
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
	int64_t		idle_stop_at;	/* ms since the epoch when its idle
					 * timeout stops it unless it is used
					 * first; -1: not counting */
	int64_t		restart_at;	/* ms since the epoch; -1: none due */
	int32_t		change;		/* enum proto_change: why its state */
	char		change_for[AGENCY_NAME_MAX];	/* evicted for */
	uint32_t	nload_ms;	/* of load_ms */
	int64_t		load_ms[PROTO_LOAD_HISTORY];	/* oldest first */
};

/* IMSG_STATUS_ALIAS: one alias of the model of the status before it. */
struct proto_alias {
	char		model[AGENCY_NAME_MAX];
	char		alias[AGENCY_NAME_MAX];
};

/*
 * IMSG_STATUS_MEMORY: what the models' memory is measured against.  In
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

struct proto_cancel {
	uint64_t	reqid;
	char		model[AGENCY_NAME_MAX];
	uint32_t	cancelled;
};

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

/* Whether every string array in a payload ends inside itself. */
static inline int
proto_strok(const char *s, size_t size)
{
	return (memchr(s, '\0', size) != NULL);
}

#define PROTO_STROK(a)	proto_strok((a), sizeof(a))

/*
 * An IMSG_LOG payload of len bytes: the line, or NULL when it is not
 * 1 to PROTO_LOGLINE_MAX bytes ending in its only NUL.
 */
static inline const char *
proto_logline(const void *data, size_t len)
{
	if (data == NULL || len == 0 || len > PROTO_LOGLINE_MAX ||
	    memchr(data, '\0', len) != (const char *)data + len - 1)
		return (NULL);
	return ((const char *)data);
}

/*
 * An IMSG_HOLD_GRANTV payload of len bytes into a whole grant: 0, or -1
 * when it is not a head and exactly two strings that fit, each ended by
 * its NUL, and nothing after them.
 */
static inline int
proto_grantv(const void *data, size_t len, struct proto_hold_grant *g)
{
	struct proto_grant_head	 h;
	const char		*p, *nul;
	size_t			 n;

	if (data == NULL || len < sizeof(h) + 2)
		return (-1);
	memcpy(&h, data, sizeof(h));
	p = (const char *)data + sizeof(h);
	len -= sizeof(h);
	/* upstream: its NUL inside the array, with a label after it */
	if ((nul = (const char *)memchr(p, '\0', len)) == NULL ||
	    (n = nul - p + 1) > sizeof(g->upstream) || n == len)
		return (-1);
	memcpy(g->upstream, p, n);
	p += n;
	len -= n;
	/* label: its only NUL is the last byte */
	if (len > sizeof(g->label) ||
	    (const char *)memchr(p, '\0', len) != p + len - 1)
		return (-1);
	memcpy(g->label, p, len);
	g->reqid = h.reqid;
	g->holdid = h.holdid;
	g->port = h.port;
	return (0);
}

/* "stopped", "loading", "ready", "failed", "unloaded"; NULL for
 * anything else. */
static inline const char *
proto_state_name(int32_t state)
{
	switch (state) {
	case STATE_STOPPED:
		return ("stopped");
	case STATE_LOADING:
		return ("loading");
	case STATE_READY:
		return ("ready");
	case STATE_FAILED:
		return ("failed");
	case STATE_UNLOADED:
		return ("unloaded");
	default:
		return (NULL);
	}
}

/* "turn", "memory", "slot", "load"; "" for WAIT_NONE, NULL for anything
 * else. */
static inline const char *
proto_wait_name(int32_t wait)
{
	switch (wait) {
	case WAIT_NONE:
		return ("");
	case WAIT_TURN:
		return ("turn");
	case WAIT_MEMORY:
		return ("memory");
	case WAIT_SLOT:
		return ("slot");
	case WAIT_LOAD:
		return ("load");
	default:
		return (NULL);
	}
}

/* A refusal's reason for metrics: "not_loaded", "load_failed",
 * "not_enough_memory", "stopping", "unknown_model", "queue_full",
 * "queue_timeout", "model_busy"; NULL for anything else. */
static inline const char *
proto_refusal_name(int32_t reason)
{
	switch (reason) {
	case REFUSE_NOT_LOADED:
		return ("not_loaded");
	case REFUSE_LOAD_FAILED:
		return ("load_failed");
	case REFUSE_NOT_ENOUGH_MEMORY:
		return ("not_enough_memory");
	case REFUSE_STOPPING:
		return ("stopping");
	case REFUSE_UNKNOWN_MODEL:
		return ("unknown_model");
	case REFUSE_QUEUE_FULL:
		return ("queue_full");
	case REFUSE_QUEUE_TIMEOUT:
		return ("queue_timeout");
	case REFUSE_MODEL_BUSY:
		return ("model_busy");
	default:
		return (NULL);
	}
}

/* "configured", "file", "directory", "hf-cache", "headroom"; or NULL. */
static inline const char *
proto_need_from_name(int32_t from)
{
	switch (from) {
	case NEED_CONFIGURED:
		return ("configured");
	case NEED_FILE:
		return ("file");
	case NEED_DIRECTORY:
		return ("directory");
	case NEED_HF_CACHE:
		return ("hf-cache");
	case NEED_HEADROOM:
		return ("headroom");
	default:
		return (NULL);
	}
}

static inline const char *
proto_state_name_or(int32_t state)
{
	const char	*s = proto_state_name(state);

	return (s != NULL ? s : "unknown");
}

/*
 * The model ports agency-proxy may connect to, as ranges: the configured
 * range, and during a reload that moved it, the port of each model
 * process still outside it.  It gets them on its command line (-p lo:hi,
 * once a range) and, when they shrink, in IMSG_PORTS: Landlock can only
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

/* Whether an IMSG_PORTS payload is 1 to PROTO_PORT_RANGES ranges, each
 * within 1..65535 and not empty. */
static inline int
proto_ports_ok(const struct proto_ports *p)
{
	uint32_t	i;

	if (p->n < 1 || p->n > PROTO_PORT_RANGES)
		return (0);
	for (i = 0; i < p->n; i++)
		if (p->r[i].lo == 0 || p->r[i].lo > p->r[i].hi)
			return (0);
	return (1);
}

#endif /* AGENCY_PROTO_H */
