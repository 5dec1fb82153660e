/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The admin routes that stay open or wait on agencyd (console/EVENTS.md):
 * GET /v1/agency/events, GET /v1/agency/logs/MODEL (?follow=1), and
 * POST /v1/agency/load, /unload and /stop.
 *
 * What agencyd reports once (a sync of every model's record, each change
 * of state, queue figures, memory) is kept here as a mirror and fanned
 * out by sse.c's hubs: one for the events, numbered with this proxy's
 * random stream, and one for each model whose log is followed, numbered
 * with the log's own line numbers.  A new subscriber gets a snapshot
 * made from the mirror (or resumes from the backlog); the summary of
 * requests and tokens per model is made here every EVENTS_SUMMARY_MS
 * from metrics.c's counters, and the last 15 minutes of them go with a
 * snapshot, as do the last changes an operator reads (state, reload and
 * cancel events, bounded in count and bytes), so that a console opened
 * now shows what just happened.  A subscriber's connection is its own:
 * the hub writes to it while it keeps up, and aborts it when its unsent
 * output would go over EVENTS_SUB_QUEUED.
 *
 * Calls: sse.c, answer.c, metrics.c, conn.c, parent.c, state.c,
 * common/config.c, common/log.c, common/proto.c, common/status_json.c.
 */
#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "proxy.h"
#include "sse.h"
#include "status_json.h"

#define EVENTS_SUMMARY_MS	5000
#define EVENTS_HISTORY		180	/* summaries: 15 minutes */
#define EVENTS_RECENT		100	/* changes a snapshot repeats */
#define EVENTS_RECENT_BYTES	(64 * 1024)
#define EVENTS_PING_S		15
#define EVENTS_BACKLOG		1024	/* events */
#define EVENTS_BACKLOG_BYTES	(256 * 1024)
#define EVENTS_SUB_QUEUED	(64 * 1024)
#define EVENTS_SUBS		256	/* on the events stream */
#define EVENTS_LOG_SUBS		64	/* on one model's log */
#define EVENTS_SNDBUF		(64 * 1024)
#define EVENTS_PENDING		64	/* logs and loads waiting on agencyd */

/* A model as agencyd last reported it. */
struct evmodel {
	TAILQ_ENTRY(evmodel)	 entry;
	struct proto_status	 st;
	int			 changed;	/* by the reload being synced */
	uint64_t		 requests;	/* metrics' counts at the last */
	uint64_t		 ptok;		/* summary */
	uint64_t		 ctok;
};
TAILQ_HEAD(evmodels, evmodel);

/* A subscriber: one connection on a hub. */
struct evsub {
	TAILQ_ENTRY(evsub)	 entry;
	struct hreq		*r;
	struct sse_hub		*hub;
	struct sse_sub		*sub;
	struct evlog		*log;	/* NULL: the events stream */
};
TAILQ_HEAD(evsubs, evsub);

/* A model's log, followed. */
struct evlog {
	TAILQ_ENTRY(evlog)	 entry;
	char			 model[AGENCY_NAME_MAX];
	struct sse_hub		*hub;
	size_t			 nsubs;
};

/* A request waiting on agencyd: a log's ring, a load, an unload or a
 * stop. */
enum pend_kind { PEND_LOGS, PEND_FOLLOW, PEND_LOAD, PEND_UNLOAD, PEND_STOP };

/* Each admin op's pend and path, by enum proto_admin_op. */
static const struct {
	int		 kind;
	const char	*path;
} admin_ops[] = {
	[ADMIN_LOAD] = { PEND_LOAD, "/v1/agency/load" },
	[ADMIN_UNLOAD] = { PEND_UNLOAD, "/v1/agency/unload" },
	[ADMIN_STOP] = { PEND_STOP, "/v1/agency/stop" },
};
struct pend {
	TAILQ_ENTRY(pend)	 entry;
	uint64_t		 reqid;
	int			 kind;
	struct hreq		*r;	/* NULL: the client left */
	char			 model[AGENCY_NAME_MAX];
	uint64_t		 after;	/* follow: the lines it has */
	uint64_t		 first;	/* the first line's seq, 0: none */
	int			 wrote;	/* follow: the header is out */
	int			 op;	/* a load's, unload's or stop's */
	json_object		*lines;	/* PEND_LOGS */
	int64_t			 t0;
	char			 path[AGENCY_PATH_MAX];	/* for the log */
	char			 who[2 * AGENCY_NAME_MAX + 16];	/* its key or
								 * user, for
								 * the log */
};

/*
 * The last events of a kind, oldest first: a ring of JSON objects held
 * here, bounded in count and (when maxbytes is not 0) in the bytes of
 * their text.
 */
struct jring {
	json_object		**v;
	size_t			*len;	/* of each one's text; or NULL */
	size_t			 cap, maxbytes;
	size_t			 first, n, bytes;
};

static struct evmodels	 models = TAILQ_HEAD_INITIALIZER(models);
static struct evmodels	 nmodels = TAILQ_HEAD_INITIALIZER(nmodels);
static struct evsubs	 subs = TAILQ_HEAD_INITIALIZER(subs);
static TAILQ_HEAD(, evlog) logs = TAILQ_HEAD_INITIALIZER(logs);
static TAILQ_HEAD(, pend) pends = TAILQ_HEAD_INITIALIZER(pends);
static size_t		 npends;
static struct sse_hub	*hub;
static struct proto_ev_memory mem;
static int		 have_mem, syncing, synced;
static json_object	*history_v[EVENTS_HISTORY];
static struct jring	 history = { history_v, NULL, EVENTS_HISTORY, 0,
			    0, 0, 0 };
static json_object	*recent_v[EVENTS_RECENT];
static size_t		 recent_len[EVENTS_RECENT];
static struct jring	 recent = { recent_v, recent_len, EVENTS_RECENT,
			    EVENTS_RECENT_BYTES, 0, 0, 0 };
static struct event	 summary_ev, ping_ev;
static uint64_t		 dropped;

static int	 sub_write(void *, const void *, size_t);
static size_t	 sub_queued(void *);
static void	 sub_drop(void *);

static const struct sse_ops	 sub_ops = { sub_write, sub_queued, sub_drop };

static const struct sse_limits	 events_limits = {
	EVENTS_BACKLOG, EVENTS_BACKLOG_BYTES, EVENTS_SUB_QUEUED, EVENTS_SUBS
};
static const struct sse_limits	 log_limits = {
	0, 0, EVENTS_SUB_QUEUED, EVENTS_LOG_SUBS
};

/* --- JSON ------------------------------------------------------------ */

/* The wall clock, for the times events carry. */
static int64_t
wall_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static json_object *
ms_or_null(int64_t v)
{
	return (v < 0 ? NULL : json_object_new_int64(v));
}

static const char *
change_name(int32_t c)
{
	switch (c) {
	case CHANGE_REQUEST:
		return ("request");
	case CHANGE_LOAD:
		return ("load");
	case CHANGE_START:
		return ("start");
	case CHANGE_RESTART:
		return ("restart");
	case CHANGE_LOADED:
		return ("loaded");
	case CHANGE_EVICTED:
		return ("evicted");
	case CHANGE_IDLE:
		return ("idle");
	case CHANGE_RELOAD:
		return ("reload");
	case CHANGE_SHUTDOWN:
		return ("shutdown");
	case CHANGE_UNLOAD:
		return ("unload");
	case CHANGE_LOAD_FAILED:
		return ("load-failed");
	case CHANGE_EXITED:
		return ("exited");
	case CHANGE_REFUSED:
		return ("refused");
	case CHANGE_STOPPED:
		return ("stopped");
	case CHANGE_STOP:
		return ("stop");
	default:
		return (NULL);
	}
}

/*
 * A model's record, as GET /v1/agency/status and the events show it:
 * with the reason of its last change and whom an eviction was for, so
 * that a console opened after the change still says why.
 */
json_object *
events_record(const struct proto_status *st, const struct pmodel *pm)
{
	json_object	*o, *a;
	const char	*why;
	size_t		 i;

	if ((a = json_object_new_array()) == NULL)
		fatal("%s", __func__);
	if (pm != NULL)
		for (i = 0; i < pm->aliases.n; i++)
			json_object_array_add(a,
			    json_object_new_string(pm->aliases.v[i]));
	if ((o = status_json(st, a)) == NULL)
		fatal("%s", __func__);
	why = change_name(st->change);
	json_object_object_add(o, "reason", why != NULL ?
	    json_object_new_string(why) : NULL);
	json_object_object_add(o, "for", st->change_for[0] != '\0' ?
	    json_object_new_string(st->change_for) : NULL);
	return (o);
}

static const struct pmodel *
pmodel_of(const char *name)
{
	return (px->conf != NULL ? pconf_find_model(px->conf, name) : NULL);
}

static json_object *
memory_json(void)
{
	json_object	*o;

	if (!have_mem)
		return (NULL);
	if ((o = status_memory_json(&mem.mem)) == NULL)
		fatal("%s", __func__);
	return (o);
}

static json_object *
models_json(void)
{
	struct evmodel	*m;
	json_object	*a;

	a = json_object_new_array();
	TAILQ_FOREACH(m, &models, entry)
		json_object_array_add(a, events_record(&m->st,
		    pmodel_of(m->st.model)));
	return (a);
}

static const char *
text(json_object *o)
{
	return (json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE));
}

static void
jring_drop_first(struct jring *j)
{
	json_object_put(j->v[j->first]);
	if (j->len != NULL)
		j->bytes -= j->len[j->first];
	j->first = (j->first + 1) % j->cap;
	j->n--;
}

/* Keep o (held here from now on), the oldest going to make room. */
static void
jring_push(struct jring *j, json_object *o)
{
	size_t	 i, len = 0;

	if (j->len != NULL)
		len = strlen(text(o));
	while (j->n > 0 && (j->n == j->cap || (j->maxbytes > 0 &&
	    j->bytes + len > j->maxbytes)))
		jring_drop_first(j);
	i = (j->first + j->n++) % j->cap;
	j->v[i] = o;
	if (j->len != NULL) {
		j->len[i] = len;
		j->bytes += len;
	}
}

/* What the ring holds, oldest first, as a new array. */
static json_object *
jring_array(const struct jring *j)
{
	json_object	*a = json_object_new_array();
	size_t		 i;

	for (i = 0; i < j->n; i++)
		json_object_array_add(a,
		    json_object_get(j->v[(j->first + i) % j->cap]));
	return (a);
}

/*
 * An event a console lists, as the snapshot repeats it: its type and id,
 * and its members but the whole records and the memory, which the
 * snapshot has as they are now.
 */
static void
recent_keep(const char *type, uint64_t seq, json_object *o)
{
	json_object	*e;
	char		 id[32];

	if (strcmp(type, "state") != 0 && strcmp(type, "reload") != 0 &&
	    strcmp(type, "cancel") != 0)
		return;
	sse_id(id, sizeof(id), sse_stream(hub), seq);
	e = json_object_new_object();
	json_object_object_add(e, "type", json_object_new_string(type));
	json_object_object_add(e, "id", json_object_new_string(id));
	json_object_object_foreach(o, key, val) {
		if (strcmp(key, "record") == 0 ||
		    strcmp(key, "models") == 0 || strcmp(key, "memory") == 0)
			continue;
		json_object_object_add(e, key, json_object_get(val));
	}
	jring_push(&recent, e);
}

/* Publish an event of type with o (put here) on the events hub. */
static void
publish(const char *type, json_object *o)
{
	uint64_t	 seq;

	if (hub != NULL) {
		if ((seq = sse_publish(hub, type, text(o))) == 0)
			log_warnx("%s: a %s event could not be published",
			    __func__, type);
		else
			recent_keep(type, seq, o);
	}
	json_object_put(o);
}

static json_object *
ev_new(int64_t t)
{
	json_object	*o = json_object_new_object();

	json_object_object_add(o, "time", json_object_new_int64(t > 0 ? t :
	    wall_ms()));
	return (o);
}

static json_object *
snapshot_json(void)
{
	json_object	*o;
	char		 stream[16];

	o = ev_new(0);
	(void)snprintf(stream, sizeof(stream), "%08x", sse_stream(hub));
	json_object_object_add(o, "stream", json_object_new_string(stream));
	json_object_object_add(o, "memory", memory_json());
	json_object_object_add(o, "models", models_json());
	json_object_object_add(o, "summaryMs",
	    json_object_new_int64(EVENTS_SUMMARY_MS));
	json_object_object_add(o, "history", jring_array(&history));
	json_object_object_add(o, "recent", jring_array(&recent));
	return (o);
}

/* --- subscribers ------------------------------------------------------ */

static int
sub_write(void *arg, const void *p, size_t len)
{
	struct evsub	*s = arg;

	return (conn_write(s->r->conn, p, len));
}

static size_t
sub_queued(void *arg)
{
	struct evsub	*s = arg;

	return (conn_queued(s->r->conn));
}

static void
evsub_free(struct evsub *s)
{
	struct evlog	*l = s->log;

	TAILQ_REMOVE(&subs, s, entry);
	/* a log nobody follows goes later (evlog_reap): its hub may be
	 * the one whose fan-out dropped s */
	if (l != NULL)
		l->nsubs--;
	free(s);
}

/* The hub dropped it (it fell behind, or a write failed). */
static void
sub_drop(void *arg)
{
	struct evsub	*s = arg;
	struct hconn	*c = s->r->conn;

	dropped++;
	s->sub = NULL;
	evsub_free(s);
	conn_abort(c);
}

/* The client left. */
static void
sub_gone(void *arg)
{
	struct evsub	*s = arg;

	if (s->sub != NULL)
		sse_unsubscribe(s->hub, s->sub);
	evsub_free(s);
}

/* The answer's header: a stream the proxy ends by closing. */
static int
sse_head(struct hreq *r)
{
	static const char	 head[] = "HTTP/1.1 200 OK\r\n"
	    "Content-Type: text/event-stream\r\n"
	    "Cache-Control: no-store\r\n"
	    "X-Accel-Buffering: no\r\n"
	    "Connection: close\r\n\r\n";

	r->keepalive = 0;
	conn_sndbuf(r->conn, EVENTS_SNDBUF);
	return (conn_write(r->conn, head, sizeof(head) - 1));
}

static struct evsub *
evsub_new(struct hreq *r, struct sse_hub *h, struct evlog *l)
{
	struct evsub	*s;

	if ((s = calloc(1, sizeof(*s))) == NULL)
		return (NULL);
	s->r = r;
	s->hub = h;
	s->log = l;
	TAILQ_INSERT_TAIL(&subs, s, entry);
	if (l != NULL)
		l->nsubs++;
	return (s);
}

/*
 * GET /v1/agency/events, with the Last-Event-ID it sent (or NULL);
 * path and who (access.c's access_who) for the access log, which has
 * its answer.
 */
void
events_stream(struct hreq *r, const char *last, const char *path,
    const char *who)
{
	struct evsub	*s;
	struct sse_stats st;
	json_object	*snap = NULL;
	uint64_t	 after;
	int64_t		 t0 = now_ms();

	if (hub == NULL || !synced) {
		answer_error_retry(r, 503, "starting",
		    "The proxy has not heard from agencyd yet.", 1);
		answer_log("GET", path, "-", 503, now_ms() - t0, -1, -1, who);
		return;
	}
	sse_stats(hub, &st);
	if (st.subs >= EVENTS_SUBS) {
		answer_error_retry(r, 503, "too_many_subscribers",
		    "Too many clients follow the events.", 5);
		answer_log("GET", path, "-", 503, now_ms() - t0, -1, -1, who);
		return;
	}
	if ((s = evsub_new(r, hub, NULL)) == NULL) {
		answer_error(r, 503, "out_of_memory", "Out of memory.");
		answer_log("GET", path, "-", 503, now_ms() - t0, -1, -1, who);
		return;
	}
	if (!sse_resumable(hub, last, &after))
		snap = snapshot_json();
	if (sse_head(r) == -1 || (s->sub = sse_subscribe(hub, s, last,
	    snap != NULL ? "snapshot" : NULL, snap != NULL ? text(snap) :
	    NULL)) == NULL) {
		if (snap != NULL)
			json_object_put(snap);
		evsub_free(s);
		conn_abort(r->conn);
		answer_log("GET", path, "-", 500, now_ms() - t0, -1, -1, who);
		return;
	}
	if (snap != NULL)
		json_object_put(snap);
	conn_set_owner(r->conn, sub_gone, NULL, s);
	answer_log("GET", path, "-", 200, now_ms() - t0, -1, -1, who);
}

/* --- logs, loads and unloads: waiting on agencyd ---------------------- */

static struct pend *
pend_new(struct hreq *r, int kind, const char *model)
{
	struct pend	*p;

	if (npends >= EVENTS_PENDING || (p = calloc(1, sizeof(*p))) == NULL) {
		answer_error_retry(r, 503, "busy",
		    "Too many admin requests wait for agencyd.", 1);
		return (NULL);
	}
	p->reqid = ++px->seq;
	p->kind = kind;
	p->r = r;
	p->t0 = now_ms();
	(void)strlcpy(p->model, model, sizeof(p->model));
	TAILQ_INSERT_TAIL(&pends, p, entry);
	npends++;
	return (p);
}

/* The access-log line of a logs request, with its answer (-1: the
 * client left first). */
static void
pend_log(const struct pend *p, int status)
{
	answer_log_end("GET", p->path, p->model, status < 0 ? 499 : status,
	    now_ms() - p->t0, -1, -1, -1, status < 0 ? END_CLIENT_LEFT :
	    END_DONE, p->who);
}

static void
pend_free(struct pend *p)
{
	TAILQ_REMOVE(&pends, p, entry);
	npends--;
	if (p->lines != NULL)
		json_object_put(p->lines);
	free(p);
}

static struct pend *
pend_find(uint64_t reqid)
{
	struct pend	*p;

	TAILQ_FOREACH(p, &pends, entry)
		if (p->reqid == reqid)
			return (p);
	return (NULL);
}

/* The client of a waiting request left: its answer is dropped. */
static void
pend_gone(void *arg)
{
	struct pend	*p = arg;

	p->r = NULL;
}

/* GET /v1/agency/logs/MODEL, follow or not, after line seq last; path
 * and who for the access log, which has its answer. */
void
events_logs(struct hreq *r, const struct pmodel *m, int follow,
    const char *last, const char *path, const char *who)
{
	struct proto_logs_req	 lr;
	struct pend		*p;
	uint32_t		 stream;
	uint64_t		 after = 0;

	if (last != NULL && (sse_parse_id(last, &stream, &after) == -1 ||
	    stream != 0))
		after = 0;
	if ((p = pend_new(r, follow ? PEND_FOLLOW : PEND_LOGS,
	    m->name)) == NULL) {
		answer_log("GET", path, m->name, 503, 0, -1, -1, who);
		return;
	}
	(void)strlcpy(p->path, path, sizeof(p->path));
	(void)strlcpy(p->who, who, sizeof(p->who));
	p->after = after;
	if (!follow)
		p->lines = json_object_new_array();
	memset(&lr, 0, sizeof(lr));
	lr.reqid = p->reqid;
	lr.follow = follow;
	(void)strlcpy(lr.model, m->name, sizeof(lr.model));
	parent_send(IMSG_LOGS_REQ, &lr, sizeof(lr));
	conn_set_owner(r->conn, pend_gone, NULL, p);
}

static json_object *
line_json(const struct proto_logline *ll)
{
	json_object	*o = json_object_new_object();

	json_object_object_add(o, "seq",
	    json_object_new_int64((int64_t)ll->seq));
	json_object_object_add(o, "line", json_object_new_string(ll->line));
	return (o);
}

static struct evlog *
evlog_find(const char *model)
{
	struct evlog	*l;

	TAILQ_FOREACH(l, &logs, entry)
		if (strcmp(l->model, model) == 0)
			return (l);
	return (NULL);
}

/*
 * A follower's answer begins: the header, "retry:", and a gap when lines
 * after the one it has are gone from the ring.  -1 when its connection
 * failed.
 */
static int
follow_start(struct pend *p)
{
	char	 buf[128];
	int	 n;

	if (p->wrote)
		return (0);
	p->wrote = 1;
	if (sse_head(p->r) == -1)
		return (-1);
	n = snprintf(buf, sizeof(buf), "retry: %d\n\n", SSE_RETRY_MS);
	if (conn_write(p->r->conn, buf, (size_t)n) == -1)
		return (-1);
	if (p->after > 0 && p->first > p->after + 1) {
		n = snprintf(buf, sizeof(buf), "event: gap\ndata: "
		    "{\"missed\":%llu}\n\n",
		    (unsigned long long)(p->first - p->after - 1));
		if (conn_write(p->r->conn, buf, (size_t)n) == -1)
			return (-1);
	}
	return (0);
}

static int
follow_pending(const char *model)
{
	struct pend	*p;

	TAILQ_FOREACH(p, &pends, entry)
		if (p->kind == PEND_FOLLOW && strcmp(p->model, model) == 0)
			return (1);
	return (0);
}

/*
 * The logs nobody follows any more, and nobody is about to: agencyd may
 * stop sending their lines.  Never from within a hub's fan-out.
 */
static void
evlog_reap(void)
{
	struct proto_logs_req	 lr;
	struct evlog		*l, *next;

	for (l = TAILQ_FIRST(&logs); l != NULL; l = next) {
		next = TAILQ_NEXT(l, entry);
		if (l->nsubs > 0 || follow_pending(l->model))
			continue;
		memset(&lr, 0, sizeof(lr));
		(void)strlcpy(lr.model, l->model, sizeof(lr.model));
		parent_send(IMSG_LOGS_UNFOLLOW, &lr, sizeof(lr));
		TAILQ_REMOVE(&logs, l, entry);
		sse_hub_free(l->hub);
		free(l);
	}
}

/* A line of a model's log: of a ring asked for, or new (reqid 0). */
void
events_logline(const struct proto_logline *ll)
{
	struct pend	*p;
	struct evlog	*l;
	json_object	*o;
	char		 id[32];
	char		 buf[PROTO_LOGLINE_MAX * 6 + 128];
	int		 n;

	if (ll->reqid == 0) {
		evlog_reap();
		if ((l = evlog_find(ll->model)) == NULL)
			return;
		o = line_json(ll);
		(void)sse_publish_seq(l->hub, ll->seq, "line", text(o));
		json_object_put(o);
		return;
	}
	if ((p = pend_find(ll->reqid)) == NULL || p->r == NULL)
		return;
	if (p->first == 0)
		p->first = ll->seq;
	if (p->kind == PEND_LOGS) {
		json_object_array_add(p->lines, line_json(ll));
		return;
	}
	if (ll->seq <= p->after)
		return;
	if (follow_start(p) == -1)
		return;
	o = line_json(ll);
	sse_id(id, sizeof(id), 0, ll->seq);
	if ((n = sse_format(buf, sizeof(buf), id, "line", text(o))) > 0)
		(void)conn_write(p->r->conn, buf, (size_t)n);
	p->after = ll->seq;
	json_object_put(o);
}

/* The end of a ring asked for: answer it, or subscribe its follower. */
void
events_logs_end(const struct proto_logs_end *le)
{
	struct pend	*p;
	struct evlog	*l;
	struct evsub	*s;
	struct hreq	*r;
	json_object	*o;

	if ((p = pend_find(le->reqid)) == NULL)
		return;
	if ((r = p->r) == NULL) {
		pend_log(p, -1);
		pend_free(p);
		return;
	}
	conn_set_owner(r->conn, NULL, NULL, NULL);
	if (!le->found) {
		answer_error(r, 404, "model_not_found", "No such model.");
		pend_log(p, 404);
		pend_free(p);
		return;
	}
	if (p->kind == PEND_LOGS) {
		o = json_object_new_object();
		json_object_object_add(o, "model",
		    json_object_new_string(p->model));
		json_object_object_add(o, "lines", json_object_get(p->lines));
		answer_json(r, 200, o);
		json_object_put(o);
		pend_log(p, 200);
		pend_free(p);
		return;
	}
	if ((l = evlog_find(p->model)) == NULL) {
		if ((l = calloc(1, sizeof(*l))) == NULL ||
		    (l->hub = sse_hub_new(&sub_ops, 0, &log_limits)) == NULL) {
			free(l);
			goto fail;
		}
		(void)strlcpy(l->model, p->model, sizeof(l->model));
		TAILQ_INSERT_TAIL(&logs, l, entry);
	}
	if (follow_start(p) == -1 || (s = evsub_new(r, l->hub, l)) == NULL)
		goto fail;
	/* the ring's lines are out: from now on, the hub's */
	if ((s->sub = sse_attach(l->hub, s)) == NULL) {
		evsub_free(s);
		goto fail;
	}
	conn_set_owner(r->conn, sub_gone, NULL, s);
	pend_log(p, 200);
	pend_free(p);
	return;
 fail:
	/* cut: after its header if that went out */
	conn_abort(r->conn);
	pend_log(p, p->wrote ? 200 : 500);
	pend_free(p);
}

/* POST /v1/agency/load, unload or stop (op, enum proto_admin_op) of m,
 * load waiting or not; who asked, for the access log (access.c's
 * access_who). */
void
events_admin(struct hreq *r, const struct pmodel *m, int op, int wait,
    const char *who)
{
	struct proto_admin	 a;
	struct pend		*p;

	if ((p = pend_new(r, admin_ops[op].kind, m->name)) == NULL)
		return;
	(void)strlcpy(p->who, who, sizeof(p->who));
	p->op = op;
	memset(&a, 0, sizeof(a));
	a.reqid = p->reqid;
	a.op = op;
	a.wait = wait;
	(void)strlcpy(a.model, m->name, sizeof(a.model));
	parent_send(IMSG_ADMIN, &a, sizeof(a));
	conn_set_owner(r->conn, pend_gone, NULL, p);
}

void
events_admin_done(const struct proto_admin_done *d)
{
	struct pend	*p;
	struct hreq	*r;
	json_object	*o;

	if ((p = pend_find(d->reqid)) == NULL)
		return;
	if ((r = p->r) != NULL) {
		conn_set_owner(r->conn, NULL, NULL, NULL);
		if (d->status >= 400)
			answer_error(r, d->status, d->code, d->message);
		else {
			o = json_object_new_object();
			json_object_object_add(o, "model",
			    json_object_new_string(p->model));
			json_object_object_add(o, "state",
			    json_object_new_string(d->message));
			answer_json(r, d->status, o);
			json_object_put(o);
		}
		answer_log("POST", admin_ops[p->op].path, p->model, d->status,
		    now_ms() - p->t0, -1, -1, p->who);
	}
	pend_free(p);
}

/* --- what agencyd reports ------------------------------------------- */

static struct evmodel *
evmodel_find(struct evmodels *h, const char *name)
{
	struct evmodel	*m;

	TAILQ_FOREACH(m, h, entry)
		if (strcmp(m->st.model, name) == 0)
			return (m);
	return (NULL);
}

static void
evmodels_clear(struct evmodels *h)
{
	struct evmodel	*m;

	while ((m = TAILQ_FIRST(h)) != NULL) {
		TAILQ_REMOVE(h, m, entry);
		free(m);
	}
}

/*
 * After a reload: the followers of a model no longer served get an "end"
 * and their connection closes once that is out.
 */
static void
events_logs_removed(void)
{
	static const char	 end[] = "event: end\ndata: "
	    "{\"reason\":\"removed\"}\n\n";
	struct evsub		*s, *next;
	struct hconn		*c;

	for (s = TAILQ_FIRST(&subs); s != NULL; s = next) {
		next = TAILQ_NEXT(s, entry);
		if (s->log == NULL ||
		    evmodel_find(&models, s->log->model) != NULL)
			continue;
		c = s->r->conn;
		(void)conn_write(c, end, sizeof(end) - 1);
		sse_unsubscribe(s->hub, s->sub);
		conn_set_owner(c, NULL, NULL, NULL);
		evsub_free(s);
		conn_done(c, 0);
	}
	evlog_reap();
}

void
events_sync_start(const struct proto_ev_sync *es)
{
	(void)es;
	evmodels_clear(&nmodels);
	syncing = 1;
}

void
events_sync_record(const struct proto_ev_record *er)
{
	struct evmodel	*m, *old;

	if (!syncing)
		fatalx("parent: a record outside a sync");
	if ((m = calloc(1, sizeof(*m))) == NULL)
		fatal("%s", __func__);
	m->st = er->st;
	m->changed = er->changed;
	/* the summary's counts go on from where they were */
	if ((old = evmodel_find(&models, m->st.model)) != NULL) {
		m->requests = old->requests;
		m->ptok = old->ptok;
		m->ctok = old->ctok;
	} else
		metrics_totals(m->st.model, &m->requests, &m->ptok, &m->ctok);
	TAILQ_INSERT_TAIL(&nmodels, m, entry);
}

void
events_sync_end(const struct proto_ev_sync *es)
{
	struct evmodel	*m;
	json_object	*o, *added, *removed, *changed;

	if (!syncing)
		fatalx("parent: a sync's end without its start");
	syncing = 0;
	if (!es->reload || !synced) {
		evmodels_clear(&models);
		TAILQ_CONCAT(&models, &nmodels, entry);
		synced = 1;
		return;
	}
	o = ev_new(es->time);
	json_object_object_add(o, "ok", json_object_new_boolean(es->ok));
	if (!es->ok) {
		json_object_object_add(o, "error",
		    json_object_new_string(es->error));
		evmodels_clear(&nmodels);
		publish("reload", o);
		return;
	}
	added = json_object_new_array();
	removed = json_object_new_array();
	changed = json_object_new_array();
	TAILQ_FOREACH(m, &nmodels, entry) {
		if (evmodel_find(&models, m->st.model) == NULL)
			json_object_array_add(added,
			    json_object_new_string(m->st.model));
		else if (m->changed)
			json_object_array_add(changed,
			    json_object_new_string(m->st.model));
	}
	TAILQ_FOREACH(m, &models, entry)
		if (evmodel_find(&nmodels, m->st.model) == NULL)
			json_object_array_add(removed,
			    json_object_new_string(m->st.model));
	evmodels_clear(&models);
	TAILQ_CONCAT(&models, &nmodels, entry);
	json_object_object_add(o, "added", added);
	json_object_object_add(o, "removed", removed);
	json_object_object_add(o, "changed", changed);
	json_object_object_add(o, "models", models_json());
	json_object_object_add(o, "memory", memory_json());
	publish("reload", o);
	events_logs_removed();
}

void
events_state(const struct proto_ev_state *es)
{
	struct evmodel	*m;
	json_object	*o;
	const char	*why;

	if ((m = evmodel_find(&models, es->st.model)) == NULL)
		return;
	m->st = es->st;
	o = ev_new(es->time);
	json_object_object_add(o, "model",
	    json_object_new_string(es->st.model));
	json_object_object_add(o, "state", json_object_new_string(
	    proto_state_name_or(es->st.state)));
	json_object_object_add(o, "from", json_object_new_string(
	    proto_state_name_or(es->from)));
	why = change_name(es->st.change);
	json_object_object_add(o, "reason", why != NULL ?
	    json_object_new_string(why) : NULL);
	switch (es->st.change) {
	case CHANGE_LOADED:
		json_object_object_add(o, "loadMs", es->st.nload_ms > 0 ?
		    json_object_new_int64(es->st.load_ms[
		    es->st.nload_ms - 1]) : NULL);
		break;
	case CHANGE_EVICTED:
		json_object_object_add(o, "for",
		    json_object_new_string(es->st.change_for));
		break;
	case CHANGE_LOAD_FAILED:
	case CHANGE_EXITED:
		json_object_object_add(o, "error",
		    json_object_new_string(es->st.error));
		json_object_object_add(o, "restartInS", es->st.restart_at > 0 ?
		    json_object_new_int64((es->st.restart_at - es->time +
		    999) / 1000) : NULL);
		break;
	default:
		break;
	}
	json_object_object_add(o, "record", events_record(&m->st,
	    pmodel_of(m->st.model)));
	json_object_object_add(o, "memory", memory_json());
	publish("state", o);
}

void
events_queue(const struct proto_ev_queue *q)
{
	struct evmodel	*m;
	json_object	*o;

	if ((m = evmodel_find(&models, q->model)) == NULL)
		return;
	m->st.in_progress = q->in_progress;
	m->st.queued = q->queued;
	m->st.waiting = q->waiting;
	m->st.oldest_wait = q->oldest_wait;
	m->st.last_used = q->last_used;
	o = ev_new(q->time);
	json_object_object_add(o, "model", json_object_new_string(q->model));
	json_object_object_add(o, "requestsInProgress",
	    json_object_new_int64(q->in_progress));
	json_object_object_add(o, "queued", json_object_new_int64(q->queued));
	json_object_object_add(o, "oldestWaitMs", ms_or_null(q->oldest_wait));
	json_object_object_add(o, "waitingFor", q->waiting == WAIT_NONE ?
	    NULL : json_object_new_string(proto_wait_name(q->waiting)));
	json_object_object_add(o, "lastUsedAt", ms_or_null(q->last_used));
	publish("queue", o);
}

void
events_memory(const struct proto_ev_memory *em)
{
	mem = *em;
	have_mem = 1;
}

/* An operator ended n requests of model (the admin route or agency-ctl). */
void
events_cancel(const char *model, uint32_t n)
{
	json_object	*o;

	o = ev_new(0);
	json_object_object_add(o, "model", json_object_new_string(model));
	json_object_object_add(o, "cancelled", json_object_new_int64(n));
	publish("cancel", o);
}

/* The state of a served model for /v1/models, or -1 unknown. */
int
events_model_state(const char *name)
{
	struct evmodel	*m;

	return ((m = evmodel_find(&models, name)) != NULL ? m->st.state : -1);
}

/* --- timers ----------------------------------------------------------- */

static void
summary_tick(int fd, short ev, void *arg)
{
	struct timeval	 tv = { EVENTS_SUMMARY_MS / 1000, 0 };
	struct evmodel	*m;
	json_object	*o, *ms, *e;
	uint64_t	 req, ptok, ctok;

	(void)fd;
	(void)ev;
	(void)arg;
	evtimer_add(&summary_ev, &tv);
	if (!synced)
		return;
	o = ev_new(0);
	json_object_object_add(o, "intervalMs",
	    json_object_new_int64(EVENTS_SUMMARY_MS));
	ms = json_object_new_object();
	TAILQ_FOREACH(m, &models, entry) {
		metrics_totals(m->st.model, &req, &ptok, &ctok);
		e = json_object_new_object();
		json_object_object_add(e, "requests",
		    json_object_new_int64((int64_t)(req - m->requests)));
		json_object_object_add(e, "promptTokens",
		    json_object_new_int64((int64_t)(ptok - m->ptok)));
		json_object_object_add(e, "completionTokens",
		    json_object_new_int64((int64_t)(ctok - m->ctok)));
		json_object_object_add(ms, m->st.model, e);
		m->requests = req;
		m->ptok = ptok;
		m->ctok = ctok;
	}
	json_object_object_add(o, "models", ms);
	/* the history keeps it without the memory */
	jring_push(&history, json_object_get(o));
	/* the event: the same members (shared, neither changes again),
	 * and the memory */
	e = json_object_new_object();
	json_object_object_foreach(o, key, val)
		json_object_object_add(e, key, json_object_get(val));
	json_object_object_add(e, "memory", memory_json());
	json_object_put(o);
	publish("summary", e);
}

static void
ping_tick(int fd, short ev, void *arg)
{
	struct timeval	 tv = { EVENTS_PING_S, 0 };
	struct evlog	*l;

	(void)fd;
	(void)ev;
	(void)arg;
	evtimer_add(&ping_ev, &tv);
	if (hub != NULL)
		sse_ping(hub);
	TAILQ_FOREACH(l, &logs, entry)
		sse_ping(l->hub);
	evlog_reap();
}

void
events_init(void)
{
	struct timeval	 s = { EVENTS_SUMMARY_MS / 1000, 0 };
	struct timeval	 p = { EVENTS_PING_S, 0 };
	uint32_t	 stream;

	do
		stream = arc4random();
	while (stream == 0);
	if ((hub = sse_hub_new(&sub_ops, stream, &events_limits)) == NULL)
		fatal("%s", __func__);
	evtimer_set(&summary_ev, summary_tick, NULL);
	evtimer_set(&ping_ev, ping_tick, NULL);
	evtimer_add(&summary_ev, &s);
	evtimer_add(&ping_ev, &p);
}

void
events_get_stats(struct events_stats *es)
{
	struct sse_stats	 st;
	struct evlog		*l;

	memset(es, 0, sizeof(*es));
	if (hub != NULL) {
		sse_stats(hub, &st);
		es->subscribers = st.subs;
	}
	TAILQ_FOREACH(l, &logs, entry)
		es->log_followers += l->nsubs;
	es->dropped = dropped;
}
