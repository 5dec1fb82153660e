/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-proxy: the unprivileged front door, and the declarations its
 * files share.  agencyd starts it as "agency-proxy [-dv] [-p lo:hi ...]
 * [-u user]" with its end of a socketpair on fd 3; it drops privileges
 * (privsep.c) before it reads anything, confines itself (sandbox.c:
 * each -p is a range of model ports it may connect to, which IMSG_PORTS
 * may narrow), then runs one libevent loop (proxy.c).
 *
 * Calls go one way (regress/layout/cycles_test); what must reach back
 * up goes through a handler registered at start-up (conn_init,
 * parent_init).  The prototypes below follow README's order of the
 * files, from the bottom up; README also says how the decisions the
 * design left open were settled.
 */
#ifndef AGENCY_PROXY_H
#define AGENCY_PROXY_H

#include <sys/types.h>
#include <sys/queue.h>

#include <stdint.h>

#include <json-c/json.h>

#include "config.h"
#include "multipart.h"
#include "proto.h"

/* A method of none of libevent's EVHTTP_REQ_* types, for http_decide */
#define HTTP_REQ_UNKNOWN	(1 << 15)

#define PROXY_FD		3	/* the parent's end of the socketpair */
#define PROXY_IDLE_TIMEOUT	60	/* s: an idle client connection */
#define PROXY_POOL_MAX		64	/* idle upstream connections a port */
#define PROBE_BACKOFF_MIN	10	/* ms */
#define PROBE_BACKOFF_MAX	250	/* ms */
#define PROBE_ATTEMPT_TIMEOUT	2	/* s */
#define PROXY_FD_RESERVE	64	/* fds kept from the connection cap */
#define PROXY_ACCEPT_PAUSE	1	/* s without accepting, out of fds */

struct evbuffer;
struct event_base;
struct imsg;
struct imsgev;
struct h1_msg;
struct hconn;
struct paccess;

/* The client of a Unix-socket listener, as the kernel tells it. */
struct hpeer {
	int		 unixsock;	/* came on a Unix-socket listener */
	int		 known;		/* its credentials were read */
	uint32_t	 uid;
	uint32_t	 gid;
	uint32_t	*groups;	/* supplementary (SO_PEERGROUPS) */
	size_t		 ngroups;
	char		 addr[48];	/* a TCP client's address, or "" */
};

/* The request a client connection runs (conn.c), for its answer. */
struct hreq {
	struct hconn	*conn;
	const struct prescan *pre;	/* what conn.c noted of its body as
					 * it came in, or NULL */
	int		 minor;		/* HTTP/1.minor */
	int		 keepalive;	/* the client asked to keep it */
	int		 head;		/* HEAD: no body in the answer */
	int		 family;	/* the shape of its errors (enum
					 * route_family), as its handler
					 * found it; 0 until then */
	/* the connection's, from its accept */
	int		 tls;
	struct hpeer	 peer;
	/* the request's, set by its handler: the origin the answer's
	 * Access-Control-Allow-Origin names ("": none) */
	char		 cors[AGENCY_ORIGIN_MAX];
};

/* An error for the client, in the OpenAI shape. */
struct rerr {
	int		 status;
	const char	*code;
	char		 message[PROTO_MSG_MAX];
};

struct proxy {
	struct event_base	*base;
	struct imsgev		*iev;
	struct pconf		*conf;		/* NULL until the first END */
	int			 ready;		/* PROXY_READY was sent */
	uint64_t		 seq;		/* last request id */
};

/* state.c: what the whole process shares */
extern struct proxy	*px;
int64_t		 now_ms(void);
void		 now_reset(void);

/* buf.c: a growable buffer */
struct buf {
	char		*b;
	size_t		 len;		/* bytes held */
	size_t		 cap;
};

size_t		 buf_grown(const struct buf *, size_t, size_t, size_t);
int		 buf_reserve(struct buf *, size_t, size_t, size_t);
void		 buf_fit(struct buf *, size_t);
int		 buf_add(struct buf *, const void *, size_t, size_t);
int		 buf_num(struct buf *, uint64_t, int, size_t);
void		 buf_release(struct buf *, size_t);

/* privsep.c */
void		 privsep_drop(const char *);

/* sandbox.c */
int		 sandbox_apply(const struct proto_port_range *, size_t);
int		 sandbox_narrow(const struct proto_port_range *, size_t);
int		 sandbox_selftest(const char *, uint16_t, uint16_t);

/* utf8.c */
extern int	 scan_portable;		/* how strings are scanned (tests): */
#define SCAN_BEST	0		/* AVX2 where the CPU has it */
#define SCAN_WORDS	1		/* 64-bit words, never SIMD */
#define SCAN_SSE2	2		/* never AVX2 */
size_t		 utf8_seq(const unsigned char *, size_t);
int		 utf8_valid(const unsigned char *, size_t);

/* scan.c: what rules_scan notes of a body for the fast path */
#define RSCAN_TOP	64
#define RSCAN_TYPES	8		/* content parts' types, each once */
#define RSCAN_TYPELEN	32
struct rfield {			/* a member of the top object, by offset */
	size_t		 name;		/* its name's first byte (no quote) */
	size_t		 namelen;
	size_t		 value;		/* its value's first byte */
	size_t		 valuelen;
};
struct rscan {
	char		 model[AGENCY_NAME_MAX];
	int		 has_model;	/* a string; else absent or null */
	int		 stream;	/* "stream": true */
	int64_t		 max_tokens;	/* -1: absent or null */
	int64_t		 max_completion_tokens;
	int64_t		 max_output_tokens;
	const char	*base;		/* the bytes scanned */
	size_t		 open;		/* offset of the top object's { */
	size_t		 close;		/* and of its } */
	struct rfield	 top[RSCAN_TOP];	/* its members, in order */
	size_t		 ntop;
	/* the names (routes_part_name) of the content parts' types, for
	 * splice_rules to ask the runtime about; their other checks (an
	 * inline image, nesting) are the scan's own */
	char		 types[RSCAN_TYPES][RSCAN_TYPELEN];
	size_t		 ntypes;
};

/* What prescan_feed notes of a body as it comes in: its strings. */
#define PRESCAN_MAX	16384
struct prescan {
	size_t		 pos;		/* the next byte to look at */
	int		 in;		/* in a string, begun at start */
	int		 esc;		/* which has an escape */
	size_t		 start;
	int		 off;		/* no more is noted */
	struct pstr {
		size_t	 start;		/* its opening quote */
		size_t	 end;		/* its closing quote */
		int	 esc;
	}		*s;
	size_t		 n;
	size_t		 cap;
};

void		 prescan_feed(struct prescan *, const char *, size_t);
void		 prescan_reset(struct prescan *);
void		 prescan_clear(struct prescan *);
int		 rules_scan(const char *, size_t, const struct prescan *,
		    struct rscan *);
int		 rules_scan_parts(const char *, size_t, const struct prescan *,
		    int, struct rscan *);
int		 rules_plain(const char *, size_t);
int		 scan_digits(const char *, size_t, size_t, int64_t *);
const unsigned char *scan_json_number(const unsigned char *,
		    const unsigned char *, int *);
int		 scan_count(const char *, size_t, int64_t *);

/* rules.c: pure functions, unit-tested */
/* Which models a request may use (access.c decides): ok(arg, m) says
 * whether m is one; a NULL scope, or a NULL ok, lets it use every one. */
struct pscope {
	int		(*ok)(const void *, const struct pmodel *);
	const void	*arg;
};

int		 rules_name_check(const char *, size_t, struct rerr *);
int		 rules_pick_model(const struct pconf *, json_object *,
		    const struct pscope *, struct pmodel **, struct rerr *);
int		 rules_route_allowed(const struct pruntime *, const char *);
int		 rules_check_route(const struct pmodel *, const char *,
		    struct rerr *);
int		 rules_apply(const struct pruntime *, const char *,
		    json_object *, struct rerr *, int *);
int		 rules_fast(const char *, size_t, const struct prescan *, int,
		    struct rscan *);
int		 rules_part_allowed(const struct pruntime *, const char *);
int		 rules_pick_name(const struct pconf *, const char *,
		    const struct pscope *, struct pmodel **, struct rerr *);
int		 rules_stops_stream(const struct pruntime *, int);
int64_t		 rules_cap(const struct pmodel *);
int		 rules_rewrite(json_object *, const char *, int64_t, int,
		    const char *);
int		 rules_stops(const struct pruntime *, json_object *);
int		 rules_stream(json_object *);
json_object	*rules_parse(const char *, size_t, struct rerr *);
void		 rerr_set(struct rerr *, int, const char *, const char *, ...)
		    __attribute__((__format__ (printf, 4, 5)));

/* splice.c: the rules' changes to a body on the fast path, as pieces */
#define SPLICE_PIECES	32
#define SPLICE_MOVES	8		/* members the rules may add */
enum {
	SP_NONE,
	SP_MODEL,			/* the value of "model" */
	SP_MAX_TOKENS,			/* of "max_tokens" */
	SP_MAX_COMPLETION,		/* of "max_completion_tokens" */
	SP_MAX_OUTPUT,			/* of "max_output_tokens" */
	SP_N_PREDICT,			/* of "n_predict" */
	SP_STREAM,
};
struct spiece {
	size_t		 off;		/* in the body, or in text */
	size_t		 len;
	uint8_t		 text;
	uint8_t		 role;
};
struct splice {
	struct spiece	 p[SPLICE_PIECES];
	size_t		 np;
	size_t		 nmembers;	/* of the top object, as it stands */
	size_t		 tail;		/* where what follows them begins */
	int		 changed;	/* a rule changed the body */
	int64_t		 max_tokens;	/* as they stand: -1 absent, null */
	int64_t		 max_completion_tokens;
	int64_t		 max_output_tokens;
	int64_t		 n_predict;
	char		 text[1024];	/* names, numbers, the model's */
	size_t		 textlen;
};

struct iovec;
int		 splice_rules(const struct pruntime *, const struct rscan *,
		    struct splice *, struct rerr *);
struct route;
int		 splice_route(const struct route *);
int		 splice_rewrite(struct splice *, const char *, const char *,
		    int64_t, int, const struct route *);
size_t		 splice_iov(const struct splice *, const char *,
		    struct iovec *, size_t, size_t *);

/* parent.c: the channel to the parent */
void		 parent_init(int, void (*)(struct imsg *), void (*)(void));
void		 parent_send(uint32_t, const void *, size_t);
void		 parent_flush(void);
void		 parent_loghook(int, const char *);

/* conn.c: the client connections */
struct conn_stats {
	uint64_t	 open;		/* now */
	uint64_t	 max;		/* the cap in force */
	uint64_t	 accepted;
	uint64_t	 refused;	/* over the cap */
	uint64_t	 evicted;	/* closed at the cap for a new one */
	uint64_t	 timed_out;	/* no request header in time */
	uint64_t	 body_timed_out;	/* no whole body in time */
	uint64_t	 accept_pauses;	/* out of fds */
	uint64_t	 cap_pauses;	/* at the cap, none to give way */
	int64_t		 body_bytes;	/* of the body budget, taken */
	int64_t		 body_max;	/* the budget */
	uint64_t	 body_refused;	/* 503: over the budget */
	uint64_t	 body_share_refused;	/* of them, over a share */
	int64_t		 header_bytes;	/* of the header budget, taken */
	int64_t		 header_max;	/* the budget */
	uint64_t	 header_refused;	/* over the budget */
	uint64_t	 header_share_refused;	/* of them, over a share */
};

/* What a connection holds of a budget (conn_budget.c). */
struct bowner;
struct bhold {
	int64_t		 n;		/* bytes */
	struct bowner	*owner;		/* whose share they are of */
};

/* Where conn.c hands its requests, registered at start-up (http.c). */
struct conn_handler {
	/* A complete request; body (len bytes) is the handler's to change
	 * until it answers. */
	void	(*request)(struct hreq *, const struct h1_msg *, char *,
		    size_t);
	/*
	 * A request's header, before any of its body is read (body: one
	 * is announced): 0 when it passed the access checks, with owner
	 * (size bytes) naming whose share of the body budget it takes; -1
	 * when it was refused, and answered (closing the connection after
	 * the answer when a body is announced).
	 */
	int	(*header)(struct hreq *, const struct h1_msg *, int, char *,
		    size_t);
	/* A request that cannot be read, refused with status (408, 413,
	 * 431, 501, 503, 505, or 400 for the rest): to be answered; the
	 * connection closes after it. */
	void	(*refused)(struct hreq *, int);
};

void		 conn_init(const struct conn_handler *);
void		 conn_configure(const struct pconf *);
void		*conn_listen(int, void *, int);
void		 conn_unlisten(void *);
char		*conn_take_input(struct hconn *);
int		 conn_write(struct hconn *, const void *, size_t);
const struct mmarks *conn_body_marks(struct hconn *);
size_t		 conn_queued(const struct hconn *);
void		 conn_set_owner(struct hconn *, void (*)(void *),
		    void (*)(void *), void *);
void		 conn_done(struct hconn *, int);
void		 conn_abort(struct hconn *);
void		 conn_get_stats(struct conn_stats *);
void		 conn_sndbuf(struct hconn *, int);

/* conn_tls.c: TLS with libtls, for conn.c and the listeners */
struct tls;
void		 conn_tls_init(void);
void		*conn_tls_server(const uint8_t *, size_t, const uint8_t *,
		    size_t, char *, size_t);
void		 conn_tls_free(void *);
struct tls	*conn_tls_accept(void *, int);
ssize_t		 conn_tls_read(struct tls *, void *, size_t, int *);
ssize_t		 conn_tls_write(struct tls *, const void *, size_t, int *);
void		 conn_tls_close(struct tls *);

/* conn_budget.c: the budgets of request bodies and of the rest of the
 * input, over all connections */
void		 conn_budget_configure(int64_t, int64_t, int64_t, int64_t,
		    int64_t);
int		 conn_budget_take(struct bhold *, const char *, int64_t);
void		 conn_budget_give(struct bhold *);
int		 conn_budget_header(struct bhold *, const char *, int64_t,
		    int);
int64_t		 conn_budget_given(void);
int64_t		 conn_budget_held(const char *);
int64_t		 conn_budget_header_held(const char *);
void		 conn_budget_stats(struct conn_stats *);

/* upstream.c: the model servers' side of a model request */
#define UPSTREAM_PIECES	SPLICE_PIECES	/* of a request's body, at most */
/* How a request failed there (upstream_owner's fail). */
#define UPSTREAM_FAILED		0
#define UPSTREAM_STALE		1	/* a kept connection closed before
					 * any byte of the answer: the
					 * request was never read */
#define UPSTREAM_TIMEOUT	2	/* no answer, or no more of it, in
					 * the request timeout */

/* Whose request it is: told of its end, after the sink's, and of its
 * failure; the connection is no longer the owner's then. */
struct upstream_owner {
	void	(*began)(void *);	/* it is out, and its answer began:
					 * it cannot go again */
	void	(*done)(void *);
	void	(*fail)(void *, const char *, int);	/* why, UPSTREAM_* */
};

/*
 * A request for a model server.  Its sink has its answer a read at a
 * time: the header if it came in that read (else NULL; with 1 when no
 * body follows it), len bytes of the body, and 1 when the answer is
 * whole; it returns 1 when its client is slow: no more is read then
 * until upstream_resume.
 */
struct upstream_req {
	const char			*method;
	const char			*target;
	const char			*headers;	/* end-to-end lines */
	size_t				 headerslen;
	int				 json;		/* add a JSON
							 * Content-Type */
	int				 length;	/* a Content-Length
							 * for no body too */
	int				 head;		/* its answer has no
							 * body */
	const struct iovec		*body;		/* where its bytes
							 * are */
	int				 nbody;
	int				(*sink)(void *,
					    const struct h1_msg *, int,
					    const char *, size_t, int);
	void				*sinkarg;
	const struct upstream_owner	*owner;
	void				*ownerarg;
};

struct upconn;
/* To port, or to the Unix socket sock where it is not "". */
struct upconn	*upstream_open(uint16_t, const char *, const char **);
int		 upstream_send(struct upconn *, const struct upstream_req *);
void		 upstream_close(struct upconn *);
void		 upstream_resume(struct upconn *);
int		 upstream_sending(const struct upconn *);
void		 upstream_drop(uint16_t, const char *);

/*
 * How a model request ended, when not as its answer ended: what the
 * access log says after the status, and what /metrics counts it as.
 */
enum req_end {
	END_DONE,		/* answered whole, or refused */
	END_CLIENT_LEFT,	/* the client went first: 499 */
	END_CANCELLED,		/* cancelled (agency-ctl, the admin route) */
	END_CUT,		/* the answer had begun and was cut: the model
				 * closed or broke it, or it ran past the
				 * request timeout */
	END_STOPPED,		/* ended by agency's shutdown (its drain) */
};

/* metrics.c */
/* How a request's wait for its hold ended (metrics_wait). */
enum metrics_wait {
	MW_GRANTED,
	MW_WITHDRAWN,		/* the client left, or it was cancelled */
	MW_REFUSED,		/* with an enum proto_refusal */
};

/* The events stream's figures (events.c), for the metrics. */
struct events_stats {
	uint64_t	 subscribers;	/* to the events, now */
	uint64_t	 log_followers;	/* of logs, now */
	uint64_t	 dropped;	/* fell behind, in all */
};

void		 metrics_request(const char *, const char *, const char *, int,
		    int64_t, int64_t);
void		 metrics_request_end(const char *, const char *, const char *,
		    int, int, int64_t, int64_t);
void		 metrics_wait(const char *, int, int, int64_t);
void		 metrics_unrouted(int);
void		 metrics_totals(const char *, uint64_t *, uint64_t *,
		    uint64_t *);
void		 metrics_render(struct evbuffer *, const struct proto_status *,
		    size_t, const struct conn_stats *,
		    const struct events_stats *,
		    int (*)(const void *, const char *), const void *);

/* answer.c: the front door's own answers */
void		 answer_reply(struct hreq *, int, const char *, const char *,
		    size_t);
void		 answer_headers(struct hreq *, int, const char *, const char *,
		    const void *, size_t);
void		 answer_json(struct hreq *, int, json_object *);
json_object	*answer_error_object(int, const char *, const char *);
json_object	*answer_error_object_as(int, int, const char *, const char *);
void		 answer_error(struct hreq *, int, const char *, const char *);
void		 answer_error_retry(struct hreq *, int, const char *,
		    const char *, int);
void		 answer_error_as(struct hreq *, int, int, const char *,
		    const char *, int);
void		 answer_redirect(struct hreq *, int, const char *);
int		 answer_refused(struct hreq *, int);
const char	*answer_error_type(int);
void		 answer_log(const char *, const char *, const char *, int,
		    int64_t, int64_t, int64_t, const char *);
void		 answer_log_end(const char *, const char *, const char *, int,
		    int64_t, int64_t, int64_t, int64_t, int, const char *);
size_t		 answer_cors(const struct hreq *, char *, size_t);
void		 answer_preflight(struct hreq *, const char *, const char *);

/* relay.c: the client's side of a model request */
struct event;
struct relay {
	struct hreq	*r;		/* the client's; NULL: gone, or done */
	uint64_t	 id;		/* the request's, for the log */
	int		 minor;		/* the client's HTTP/1.x */
	int		 family;	/* enum route_family: of its errors */
	int		 head;		/* HEAD passed through: no body */
	const char	*prefix;	/* passed through: "/upstream/MODEL",
					 * for Location; else NULL */
	uint16_t	 port;		/* the model server's, once held */
	const char	*model;		/* its name, for the comment lines */
	const char	*label;		/* the model's, for errors */
	int		 status;	/* the answer's, or ours */
	int		 replied;	/* a header went to the client */
	int		 chunked;	/* to the client */
	int		 closing;	/* its close ends the answer */
	int		 sse;		/* text/event-stream */
	int64_t		 ptok;		/* tokens, from the answer's usage */
	int64_t		 ctok;
	char		 carry[128];	/* the end of the last piece */
	size_t		 carrylen;
	/* loading progress */
	struct event	*tick;		/* NULL: not asked for */
	int		 ticking;
	int		 waited;	/* our own header went out */
	int		 granted;	/* held: the model has it */
	int		 wait;		/* enum proto_wait, as told */
	uint32_t	 ahead;
	int64_t		 load_ms;	/* as told, at told_at */
	int64_t		 told_at;
	int64_t		 granted_at;
	int		 nostream;	/* the answer under ours is none */
	struct buf	 kept;		/* of it, for the error event */
};

int		 relay_answer(void *, const struct h1_msg *, int,
		    const char *, size_t, int);
void		 relay_init(struct relay *, struct hreq *, uint64_t, int);
int		 relay_progress(struct relay *);
void		 relay_told(struct relay *, const struct proto_hold_wait *);
void		 relay_granted(struct relay *, uint16_t);
void		 relay_error(struct relay *, int, const char *, const char *,
		    int);
void		 relay_cut(struct relay *);
void		 relay_cancelled(struct relay *);
void		 relay_stopped(struct relay *, int, int);
void		 relay_free(struct relay *);

/* probe.c */
void		 probe_start(const struct proto_probe *);
void		 probe_cancel(uint64_t);
int		 probe_delay(int64_t, int, int *);

/* keyq.c: the slots of keys with max requests */
int		 keyq_enter(const char *, int64_t, void *);
void		*keyq_leave(const char *, void *, int);

/* events.c: the events stream, logs, loads and unloads over HTTP */
void		 events_init(void);
json_object	*events_record(const struct proto_status *,
		    const struct pmodel *);
void		 events_stream(struct hreq *, const char *, const char *,
		    const char *);
void		 events_logs(struct hreq *, const struct pmodel *, int,
		    const char *, const char *, const char *);
void		 events_admin(struct hreq *, const struct pmodel *, int, int,
		    const char *);
void		 events_admin_done(const struct proto_admin_done *);
void		 events_logline(const struct proto_logline *);
void		 events_logs_end(const struct proto_logs_end *);
void		 events_sync_start(const struct proto_ev_sync *);
void		 events_sync_record(const struct proto_ev_record *);
void		 events_sync_end(const struct proto_ev_sync *);
void		 events_state(const struct proto_ev_state *);
void		 events_queue(const struct proto_ev_queue *);
void		 events_memory(const struct proto_ev_memory *);
void		 events_cancel(const char *, uint32_t);
int		 events_model_state(const char *);
void		 events_get_stats(struct events_stats *);

/* forward.c: model requests (http.c's HTTP_HOLD and HTTP_PASS) */
struct http_decision;
void		 forward_start(struct hreq *, struct http_decision *);
void		 forward_pass(struct hreq *, struct http_decision *);
void		 forward_grant(const struct proto_hold_grant *);
void		 forward_refuse(const struct proto_hold_refuse *);
void		 forward_wait(const struct proto_hold_wait *);
uint32_t	 forward_cancel(const char *);
void		 forward_shutdown(void);
void		 forward_drain(const struct proto_drain *);
int		 forward_draining(void);

/* status.c: the answers that wait on the parent */
void		 status_get(struct hreq *, struct http_decision *);
void		 status_metrics(struct hreq *, struct http_decision *);
void		 status_cancel(struct hreq *, struct http_decision *);
void		 status_record(const struct proto_status *);
void		 status_end(const struct proto_status_end *);
void		 status_cancelled(uint64_t, const char *, uint32_t);

/* The header fields a decision reads; NULL when absent.  And what the
 * connection is: TLS or not, and a Unix socket's client. */
struct http_hdrs {
	const char		*host;
	const char		*origin;
	const char		*ctype;
	const struct mmarks	*marks;	/* a form's, as it came: or NULL */
	const char		*query;	/* what follows "?" in the target */
	const char		*authorization;
	const char		*apikey;	/* x-api-key */
	const char		*acrm;	/* Access-Control-Request-Method */
	const char		*acrh;	/* Access-Control-Request-Headers */
	const char		*forwarded;	/* the last X-Forwarded-For */
	int			 tls;
	const struct hpeer	*peer;
};

/* access.c: who a request comes from, and what it may do (pure) */
struct paccess {
	const struct pconf	*conf;
	const struct pkey	*key;	/* the key it came with */
	const struct hpeer	*peer;	/* a Unix socket's client */
	int			 rules;	/* let in by allow rules */
	int			 open;	/* no keys nor rules apply */
	int			 admin;	/* may use the admin routes */
	int			 wrong;	/* refused: a wrong credential */
	char			 user[AGENCY_NAME_MAX];	/* the peer's name,
							 * or "uid=N"; "" */
};

#define ACCESS_ADDR_MAX		48	/* an address as text, and NUL */

/* The models a request's answers may show (access_view). */
struct pview {
	int		 all;		/* every one, now and later */
	struct pstrs	 models;	/* else these */
};

int		 access_bearer(const char *, const char **, size_t *);
void		 access_addr(const struct pconf *, const struct http_hdrs *,
		    char *, size_t);
int		 access_local(const struct pconf *, const struct http_hdrs *);
int		 access_loopback(const char *);
int		 access_scoped(const struct paccess *);
void		 access_view(const struct paccess *, const struct pconf *,
		    struct pview *);
int		 access_view_has(const struct pview *, const char *);
void		 access_view_clear(struct pview *);
void		 access_view_refusal(const struct pview *, int, const char *,
		    const char *, char *, size_t);
int		 access_decide(const struct pconf *, const struct http_hdrs *,
		    struct paccess *, struct rerr *);
int		 access_model_ok(const struct paccess *, const struct pmodel *);
void		 access_owner(const struct pconf *, const struct paccess *,
		    const struct http_hdrs *, char *, size_t);
void		 access_scope(const struct paccess *, struct pscope *);
void		 access_who(const struct paccess *, char *, size_t);
int		 access_cors_listed(const struct pconf *, const char *);
int		 access_cors_headers(const char *, char *, size_t);

/* http.c: what to do with a request, decided before any effect */
enum http_action {
	HTTP_ERROR,		/* answer e */
	HTTP_HEALTH,
	HTTP_MODELS,
	HTTP_STATUS,		/* admin status */
	HTTP_CANCEL,		/* admin cancel of model */
	HTTP_HOLD,		/* ask for a hold on model for body */
	HTTP_METRICS,		/* GET /metrics, guarded like admin */
	HTTP_PREFLIGHT,		/* a CORS preflight, granted */
	HTTP_PASS,		/* /upstream/MODEL/...: to model as it is */
	HTTP_REDIRECT,		/* /upstream/MODEL: to /upstream/MODEL/ */
	HTTP_CONSOLE,		/* a file of the console: asset */
	HTTP_EVENTS,		/* the events stream */
	HTTP_LOGS,		/* model's log, follow or not */
	HTTP_LOAD,		/* admin load of model, wait or not */
	HTTP_UNLOAD,		/* admin unload of model */
	HTTP_STOP,		/* admin stop of model */
};

#define AUTH_DELAY_MS		250	/* before the 401 of a wrong key */
#define CORS_MAX_AGE		600	/* s, a preflight's answer kept */
#define CORS_HEADERS_MAX	512

struct console_asset;
struct route;

/*
 * What to do with a request (http_decide), and what its handler needs of
 * the request (set by http_request; what points into the request holds
 * while the handler runs).
 */
struct http_decision {
	int		 action;	/* enum http_action */
	struct rerr	 e;		/* HTTP_ERROR */
	struct pmodel	*model;		/* HTTP_CANCEL, HTTP_HOLD; for
					 * HTTP_ERROR, the model the rules
					 * refused it for (or NULL) */
	json_object	*body;		/* HTTP_HOLD: the rules applied; the
					 * caller's to put (forward_start
					 * takes it) */
	int		 plain;		/* HTTP_HOLD: no rule changed it and
					 * its bytes may go on as they are */
	int		 fast;		/* HTTP_HOLD: body is NULL, scan is
					 * what the rules needed of it and
					 * splice what they made of it */
	int		 stream;	/* HTTP_HOLD: it asks for a stream */
	struct rscan	 scan;
	struct paccess	 acc;		/* who, once let in */
	int		 delay;		/* ms before the answer (a wrong
					 * key) */
	char		 cors[AGENCY_ORIGIN_MAX];	/* the origin granted,
							 * or "" */
	const char	*pf_method;	/* HTTP_PREFLIGHT: the method */
	char		 pf_headers[CORS_HEADERS_MAX];	/* and headers */
	struct splice	 splice;
	const struct route *route;	/* routes.c's, of its path */
	int		 family;	/* enum route_family: the shape of
					 * the errors */
	int		 form;		/* HTTP_HOLD: body is NULL, a form
					 * read into mf with boundary */
	struct mform	 mf;
	char		 boundary[MULTIPART_BOUNDARY_MAX + 1];
	size_t		 prefix;	/* HTTP_PASS, HTTP_REDIRECT: the
					 * length of "/upstream/MODEL" */
	const struct console_asset *asset;	/* HTTP_CONSOLE */
	int		 follow;	/* HTTP_LOGS: ?follow=1 */
	int		 wait;		/* HTTP_LOAD: "wait", true unless
					 * false */
	/* the request's */
	const char	*method;
	const char	*path;
	const char	*target;	/* for the model: path and query */
	const struct h1_msg *hm;
	char		*raw;		/* its body's bytes, as they came */
	size_t		 rawlen;
	int64_t		 t0;		/* when it was read */
	char		 who[2 * AGENCY_NAME_MAX + 16];	/* for the log */
};

extern int	 http_fastpath;		/* 0: json-c for every body */

void		 http_decide(const struct pconf *, int, const char *,
		    const struct http_hdrs *, const char *, size_t,
		    const struct prescan *, struct http_decision *);
int		 http_decide_header(const struct pconf *, int, const char *,
		    const struct http_hdrs *, int, struct http_decision *);
void		 http_init(void);
void		 http_swap_listeners(struct pconf *, struct pconf *);

/* hosts.c: Host, Origin and the admin routes' guard */
int		 http_host_ok(const struct pconf *, const char *);
int		 http_origin_ok(const struct pconf *, const char *,
		    const char *, int);
int		 hosts_admin_guard(const struct pconf *,
		    const struct http_hdrs *, int, int, struct rerr *);
int		 hosts_json_ctype(const char *);

/* dispatch.c: the parent's messages */
void		 dispatch_imsg(struct imsg *);
void		 dispatch_lost(void);

#endif /* AGENCY_PROXY_H */
