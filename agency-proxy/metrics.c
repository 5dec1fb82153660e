/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * GET /metrics in the Prometheus text exposition format (0.0.4): the
 * counts the proxy keeps itself (requests by how they ended, tokens,
 * how long model requests waited for their hold and how that ended),
 * rendered with what the parent's status says of each model and the
 * client connections' figures (status.c hands them over).  The proxy's
 * counts start at zero with it; agencyd's survive a proxy restart.
 *
 * Calls: common/proto.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stddef.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "log.h"
#include "proxy.h"

/* The classes counted; the first six are always shown. */
enum mclass {
	MC_2XX,
	MC_4XX,
	MC_5XX,
	MC_499,		/* the client left */
	MC_CANCELLED,
	MC_CUT,		/* the answer began, and was cut */
	MC_1XX,
	MC_3XX,
	MC_N
};

static const char	*class_names[MC_N] = { "2xx", "4xx", "5xx", "499",
			    "cancelled", "cut", "1xx", "3xx" };
#define MC_SHOWN	6

struct mcount {
	TAILQ_ENTRY(mcount)	 entry;
	char			 model[AGENCY_NAME_MAX];
	uint64_t		 codes[MC_N];
	uint64_t		 ptok;
	uint64_t		 ctok;
};
TAILQ_HEAD(mcounts, mcount);

/* Requests of a key, or of a Unix socket's user, to a model. */
struct wcount {
	TAILQ_ENTRY(wcount)	 entry;
	int			 user;		/* 0: a key */
	char			 who[AGENCY_NAME_MAX];
	char			 model[AGENCY_NAME_MAX];
	uint64_t		 codes[MC_N];
};
TAILQ_HEAD(wcounts, wcount);

static struct mcounts	 mcounts = TAILQ_HEAD_INITIALIZER(mcounts);
/* While a rendering runs: whether it may show a model (status.c's
 * answer's view, for an admin key limited to some models). */
static int		(*shown)(const void *, const char *);
static const void	*shown_arg;
static struct wcounts	 wcounts = TAILQ_HEAD_INITIALIZER(wcounts);
static uint64_t		 unrouted[MC_N];

/* The wait histogram's upper bounds, ms. */
static const int64_t	 wait_bounds[] = { 5, 10, 25, 50, 100, 250, 500,
			    1000, 2500, 5000, 10000, 30000, 60000, 120000,
			    300000, 600000 };
#define NWAIT	(sizeof(wait_bounds) / sizeof(wait_bounds[0]))

/* The waits of one model that ended one way (and refusals, for one
 * reason), kept in the list by model, then outcome and reason. */
struct mwait {
	TAILQ_ENTRY(mwait)	 entry;
	char			 model[AGENCY_NAME_MAX];
	int			 outcome;	/* enum metrics_wait */
	int			 reason;	/* MW_REFUSED: enum
						 * proto_refusal; else 0 */
	uint64_t		 hist[NWAIT + 1];	/* not cumulated */
	uint64_t		 ms_sum;
};
TAILQ_HEAD(mwaits, mwait);

static struct mwaits	 mwaits = TAILQ_HEAD_INITIALIZER(mwaits);

static enum mclass
classify(int status, int end)
{
	switch (end) {
	case END_CLIENT_LEFT:
		return (MC_499);
	case END_CANCELLED:
		return (MC_CANCELLED);
	case END_CUT:
	case END_STOPPED:
		return (MC_CUT);
	case END_DONE:
	default:
		break;
	}
	if (status == 499)
		return (MC_499);
	if (status >= 100 && status < 200)
		return (MC_1XX);
	if (status >= 200 && status < 300)
		return (MC_2XX);
	if (status >= 300 && status < 400)
		return (MC_3XX);
	if (status >= 400 && status < 500)
		return (MC_4XX);
	return (MC_5XX);	/* 5xx, and no answer at all */
}

/* A model's counts, made when create and there are none yet; NULL when
 * there are none. */
static struct mcount *
mcount_get(const char *model, int create)
{
	struct mcount	*m;

	TAILQ_FOREACH(m, &mcounts, entry)
		if (strcmp(m->model, model) == 0)
			break;
	if (m != NULL || !create || (m = calloc(1, sizeof(*m))) == NULL)
		return (m);
	(void)strlcpy(m->model, model, sizeof(m->model));
	TAILQ_INSERT_TAIL(&mcounts, m, entry);
	return (m);
}

static void
wcount_add(int user, const char *who, const char *model, enum mclass c)
{
	struct wcount	*w;

	TAILQ_FOREACH(w, &wcounts, entry)
		if (w->user == user && strcmp(w->who, who) == 0 &&
		    strcmp(w->model, model) == 0)
			break;
	if (w == NULL) {
		if ((w = calloc(1, sizeof(*w))) == NULL)
			return;
		w->user = user;
		(void)strlcpy(w->who, who, sizeof(w->who));
		(void)strlcpy(w->model, model, sizeof(w->model));
		TAILQ_INSERT_TAIL(&wcounts, w, entry);
	}
	w->codes[c]++;
}

/*
 * A request for model ended with status; tokens < 0: not reported.  key
 * and user: the name of its key and of its Unix socket's user, or NULL
 * or "" (never a secret).
 */
void
metrics_request(const char *model, const char *key, const char *user,
    int status, int64_t ptok, int64_t ctok)
{
	metrics_request_end(model, key, user, status, END_DONE, ptok, ctok);
}

/* The same, for a request that may have ended otherwise (enum req_end). */
void
metrics_request_end(const char *model, const char *key, const char *user,
    int status, int end, int64_t ptok, int64_t ctok)
{
	struct mcount	*m;

	if (key != NULL && key[0] != '\0')
		wcount_add(0, key, model, classify(status, end));
	if (user != NULL && user[0] != '\0')
		wcount_add(1, user, model, classify(status, end));
	if ((m = mcount_get(model, 1)) == NULL)
		return;
	m->codes[classify(status, end)]++;
	if (ptok > 0)
		m->ptok += ptok;
	if (ctok > 0)
		m->ctok += ctok;
}

static struct mwait *
mwait_get(const char *model, int outcome, int reason)
{
	struct mwait	*w, *last = NULL, *nw;

	TAILQ_FOREACH(w, &mwaits, entry) {
		if (strcmp(w->model, model) != 0) {
			if (last != NULL)
				break;		/* past the model's */
			continue;
		}
		if (w->outcome == outcome && w->reason == reason)
			return (w);
		if (w->outcome > outcome ||
		    (w->outcome == outcome && w->reason > reason))
			break;			/* the new one goes before */
		last = w;
	}
	if ((nw = calloc(1, sizeof(*nw))) == NULL)
		return (NULL);
	(void)strlcpy(nw->model, model, sizeof(nw->model));
	nw->outcome = outcome;
	nw->reason = reason;
	if (w != NULL && strcmp(w->model, model) == 0)
		TAILQ_INSERT_BEFORE(w, nw, entry);
	else if (last != NULL)
		TAILQ_INSERT_AFTER(&mwaits, last, nw, entry);
	else
		TAILQ_INSERT_TAIL(&mwaits, nw, entry);
	return (nw);
}

/* A model request's wait for its model ended, after ms, with outcome
 * (and, refused, reason). */
void
metrics_wait(const char *model, int outcome, int reason, int64_t ms)
{
	struct mwait	*w;
	size_t		 i;

	if (outcome != MW_REFUSED)
		reason = 0;
	if ((w = mwait_get(model, outcome, reason)) == NULL)
		return;
	if (ms < 0)
		ms = 0;
	for (i = 0; i < NWAIT && ms > wait_bounds[i]; i++)
		;
	w->hist[i]++;
	w->ms_sum += (uint64_t)ms;
}

/* What ended for model so far: requests, prompt and completion tokens
 * (events.c's summaries take the differences). */
void
metrics_totals(const char *model, uint64_t *req, uint64_t *ptok,
    uint64_t *ctok)
{
	struct mcount	*m;
	size_t		 i;

	*req = *ptok = *ctok = 0;
	if ((m = mcount_get(model, 0)) == NULL)
		return;
	for (i = 0; i < MC_N; i++)
		*req += m->codes[i];
	*ptok = m->ptok;
	*ctok = m->ctok;
}

/* A request refused before a model was chosen. */
void
metrics_unrouted(int status)
{
	unrouted[classify(status, END_DONE)]++;
}

/* A label value: backslash, double quote and newline escaped. */
static void
label(struct evbuffer *b, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			evbuffer_add(b, "\\\\", 2);
		else if (*s == '"')
			evbuffer_add(b, "\\\"", 2);
		else if (*s == '\n')
			evbuffer_add(b, "\\n", 2);
		else
			evbuffer_add(b, s, 1);
	}
}

static void
family(struct evbuffer *b, const char *name, const char *type,
    const char *help)
{
	evbuffer_add_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help,
	    name, type);
}

/* A metric of one sample, without labels. */
static void
single(struct evbuffer *b, const char *name, const char *type,
    const char *help, uint64_t v)
{
	family(b, name, type, help);
	evbuffer_add_printf(b, "%s %llu\n", name, (unsigned long long)v);
}

/* name{model="m"[,extra]} value */
static void
sample(struct evbuffer *b, const char *name, const char *model,
    const char *extra, uint64_t v)
{
	evbuffer_add_printf(b, "%s{model=\"", name);
	label(b, model);
	evbuffer_add_printf(b, "\"%s%s} %llu\n", extra[0] != '\0' ? "," : "",
	    extra, (unsigned long long)v);
}

static int
show(const char *model)
{
	return (shown == NULL || shown(shown_arg, model));
}

static void
render_who(struct evbuffer *b, int user)
{
	struct wcount	*w;
	const char	*name = user ? "agency_user_requests_total" :
			    "agency_key_requests_total";
	int		 c;

	TAILQ_FOREACH(w, &wcounts, entry) {
		if (w->user != user || !show(w->model))
			continue;
		for (c = 0; c < MC_N; c++) {
			if (c >= MC_SHOWN && w->codes[c] == 0)
				continue;
			evbuffer_add_printf(b, "%s{%s=\"", name,
			    user ? "user" : "key");
			label(b, w->who);
			evbuffer_add_printf(b, "\",model=\"");
			label(b, w->model);
			evbuffer_add_printf(b, "\",code=\"%s\"} %llu\n",
			    class_names[c], (unsigned long long)w->codes[c]);
		}
	}
}

static void
render_requests(struct evbuffer *b)
{
	struct mcount	*m;
	char		 extra[32];
	int		 c;

	family(b, "agency_requests_total", "counter", "Model requests by "
	    "how they ended: the status class the client got; 499 the "
	    "client left first, cancelled, or cut (the answer began and "
	    "was cut).");
	TAILQ_FOREACH(m, &mcounts, entry)
		for (c = 0; c < MC_N; c++) {
			if ((c >= MC_SHOWN && m->codes[c] == 0) ||
			    !show(m->model))
				continue;
			(void)snprintf(extra, sizeof(extra), "code=\"%s\"",
			    class_names[c]);
			sample(b, "agency_requests_total", m->model, extra,
			    m->codes[c]);
		}
	family(b, "agency_key_requests_total", "counter", "Model requests "
	    "by API key and the status class the client got.");
	render_who(b, 0);
	family(b, "agency_user_requests_total", "counter", "Model requests "
	    "on a Unix socket by the client's user (uid=N when its name is "
	    "not known) and status class.");
	render_who(b, 1);
	family(b, "agency_unrouted_requests_total", "counter", "Requests "
	    "refused before a model was chosen (no such route or model, "
	    "bad body, admin guards), by status class.");
	for (c = 0; c < MC_N; c++) {
		if (c >= MC_SHOWN && unrouted[c] == 0)
			continue;
		evbuffer_add_printf(b, "agency_unrouted_requests_total"
		    "{code=\"%s\"} %llu\n", class_names[c],
		    (unsigned long long)unrouted[c]);
	}
	family(b, "agency_prompt_tokens_total", "counter", "Prompt tokens "
	    "of the answers that reported usage.");
	TAILQ_FOREACH(m, &mcounts, entry)
		if (show(m->model))
			sample(b, "agency_prompt_tokens_total", m->model, "",
			    m->ptok);
	family(b, "agency_completion_tokens_total", "counter", "Completion "
	    "tokens of the answers that reported usage.");
	TAILQ_FOREACH(m, &mcounts, entry)
		if (show(m->model))
			sample(b, "agency_completion_tokens_total", m->model,
			    "", m->ctok);
}

static void
render_histogram(struct evbuffer *b, const struct proto_status *st)
{
	static const int64_t	 bounds[] = PROTO_LOAD_BOUNDS;
	const char		*name = "agency_model_load_duration_seconds";
	char			 extra[32];
	uint64_t		 cum = 0;
	size_t			 i;

	for (i = 0; i <= PROTO_LOAD_NBOUNDS; i++) {
		cum += st->load_hist[i];
		if (i < PROTO_LOAD_NBOUNDS)
			(void)snprintf(extra, sizeof(extra), "le=\"%g\"",
			    bounds[i] / 1000.0);
		else
			(void)strlcpy(extra, "le=\"+Inf\"", sizeof(extra));
		evbuffer_add_printf(b, "%s_bucket{model=\"", name);
		label(b, st->model);
		evbuffer_add_printf(b, "\",%s} %llu\n", extra,
		    (unsigned long long)cum);
	}
	evbuffer_add_printf(b, "%s_sum{model=\"", name);
	label(b, st->model);
	evbuffer_add_printf(b, "\"} %llu.%03llu\n",
	    (unsigned long long)(st->load_ms_sum / 1000),
	    (unsigned long long)(st->load_ms_sum % 1000));
	sample(b, "agency_model_load_duration_seconds_count", st->model, "",
	    cum);
}

/*
 * The queue: its depth per model, and the wait histogram, with the
 * labels outcome ("granted", "withdrawn", "refused") and, for refusals,
 * reason (proto_refusal_name).  Every served model shows "granted".
 */
static void
render_queue(struct evbuffer *b, const struct proto_status *st, size_t n)
{
	static const char	*outcomes[] = { "granted", "withdrawn",
				    "refused" };
	const char		*name = "agency_queue_wait_seconds";
	const char		*rn;
	struct mwait		*w;
	char			 extra[96];
	uint64_t		 cum;
	size_t			 i;
	int			 k;

	family(b, "agency_queue_depth", "gauge", "Requests waiting for the "
	    "model now: for its load, or for a slot.");
	for (i = 0; i < n; i++)
		sample(b, "agency_queue_depth", st[i].model, "",
		    st[i].queued);

	for (i = 0; i < n; i++)
		(void)mwait_get(st[i].model, MW_GRANTED, 0);
	family(b, name, "histogram", "Time a model request waited for its "
	    "model (a load, the queue), by how the wait ended: granted, "
	    "withdrawn (the client left or was cancelled) or refused, and "
	    "why.");
	TAILQ_FOREACH(w, &mwaits, entry) {
		if (!show(w->model))
			continue;
		k = snprintf(extra, sizeof(extra), "outcome=\"%s\"",
		    outcomes[w->outcome]);
		if (w->outcome == MW_REFUSED &&
		    (rn = proto_refusal_name(w->reason)) != NULL)
			(void)snprintf(extra + k, sizeof(extra) - k,
			    ",reason=\"%s\"", rn);
		cum = 0;
		for (i = 0; i <= NWAIT; i++) {
			cum += w->hist[i];
			evbuffer_add_printf(b, "%s_bucket{model=\"", name);
			label(b, w->model);
			if (i < NWAIT)
				evbuffer_add_printf(b, "\",%s,le=\"%g\"} %llu\n",
				    extra, wait_bounds[i] / 1000.0,
				    (unsigned long long)cum);
			else
				evbuffer_add_printf(b, "\",%s,le=\"+Inf\"} "
				    "%llu\n", extra, (unsigned long long)cum);
		}
		evbuffer_add_printf(b, "%s_sum{model=\"", name);
		label(b, w->model);
		evbuffer_add_printf(b, "\",%s} %llu.%03llu\n", extra,
		    (unsigned long long)(w->ms_sum / 1000),
		    (unsigned long long)(w->ms_sum % 1000));
		sample(b, "agency_queue_wait_seconds_count", w->model, extra,
		    cum);
	}
}

/* The front door's own figures, each a family of one sample: as
 * metrics_render puts their values in order. */
static const struct {
	const char	*name;
	const char	*type;
	const char	*help;
} singles[] = {
	{ "agency_events_subscribers", "gauge",
	    "Clients of the events stream (GET /v1/agency/events)." },
	{ "agency_events_log_followers", "gauge", "Clients following a "
	    "model's log (GET /v1/agency/logs/MODEL?follow=1)." },
	{ "agency_events_dropped_total", "counter", "Subscribers "
	    "disconnected because their unsent events passed the bound." },
	{ "agency_client_connections", "gauge",
	    "Client connections open on the front door." },
	{ "agency_client_connections_max", "gauge", "The cap on client "
	    "connections; a new one closes the one that waited longest, or "
	    "waits in the backlog." },
	{ "agency_client_connections_accepted_total", "counter",
	    "Client connections accepted." },
	{ "agency_client_connections_refused_total", "counter",
	    "Client connections closed at once for being over the cap." },
	{ "agency_client_connections_cap_pauses_total", "counter",
	    "Times the front door stopped accepting at the cap, new "
	    "connections waiting in the backlog until one could give way." },
	{ "agency_client_connections_evicted_total", "counter",
	    "Client connections closed at the cap to make room for a new "
	    "one, having waited longest for a request." },
	{ "agency_client_connections_timed_out_total", "counter",
	    "Client connections closed for not sending a request's header "
	    "in time." },
	{ "agency_request_body_timeouts_total", "counter",
	    "Requests refused (408) for not sending the whole body in time." },
	{ "agency_request_body_bytes", "gauge", "Bytes of the body buffer "
	    "taken by the requests being read or served." },
	{ "agency_request_body_bytes_max", "gauge", "The body buffer: past "
	    "it, requests with a body are refused (503)." },
	{ "agency_request_body_refused_total", "counter",
	    "Requests refused (503) for want of room in the body buffer." },
	{ "agency_request_body_share_refused_total", "counter",
	    "Of them, those refused for their key's (or client's) share of "
	    "it (body share)." },
	{ "agency_request_header_bytes", "gauge", "Bytes of the header "
	    "buffer taken by what connections keep besides bodies: "
	    "unfinished headers, pipelined requests." },
	{ "agency_request_header_bytes_max", "gauge", "The header buffer: "
	    "past it, unfinished headers are refused (503) and pipelined "
	    "input waits." },
	{ "agency_request_header_refused_total", "counter",
	    "Times input was not kept for want of room in the header "
	    "buffer." },
	{ "agency_request_header_share_refused_total", "counter",
	    "Of them, those for the client's share of it (header share)." },
	{ "agency_accept_pauses_total", "counter", "Times the front door "
	    "stopped accepting for a while, out of file descriptors." },
};
#define NSINGLES	(sizeof(singles) / sizeof(singles[0]))

/* The whole exposition, from our counters, the pool's status and the
 * client connections' counts; of the models, those shows lets it show
 * (all, when NULL). */
void
metrics_render(struct evbuffer *b, const struct proto_status *st, size_t n,
    const struct conn_stats *cs, const struct events_stats *es,
    int (*shows)(const void *, const char *), const void *arg)
{
	static const int	 states[] = { STATE_STOPPED, STATE_LOADING,
				    STATE_READY, STATE_FAILED, STATE_UNLOADED };
	char			 extra[32];
	static const struct {
		const char	*name;
		const char	*help;
		size_t		 off;	/* of a uint64_t in proto_status */
	}			 counters[] = {
		{ "agency_model_loads_total", "Loads that ended ready.",
		    offsetof(struct proto_status, loads) },
		{ "agency_model_load_failures_total", "Loads that failed.",
		    offsetof(struct proto_status, load_failures) },
		{ "agency_model_evictions_total", "Times the model was "
		    "stopped to make room for another.",
		    offsetof(struct proto_status, evictions) },
		{ "agency_model_restarts_total", "Restarts of the model's "
		    "process (after a death, or by a cancel).",
		    offsetof(struct proto_status, restarts) },
	};
	uint64_t		 v[NSINGLES];
	size_t			 i, j, k;

	/* Every served model shows, requested yet or not; but of the
	 * models the proxy counted, only those shows (or NULL) lets it
	 * (st holds those alone already). */
	for (i = 0; i < n; i++)
		(void)mcount_get(st[i].model, 1);
	shown = shows;
	shown_arg = arg;
	render_requests(b);

	family(b, "agency_requests_in_progress", "gauge", "Requests holding "
	    "the model (granted, not yet released).");
	for (i = 0; i < n; i++)
		sample(b, "agency_requests_in_progress", st[i].model, "",
		    st[i].in_progress);
	family(b, "agency_model_state", "gauge", "1 for the state the model "
	    "is in, 0 for the others.");
	for (i = 0; i < n; i++)
		for (j = 0; j < sizeof(states) / sizeof(states[0]); j++) {
			(void)snprintf(extra, sizeof(extra), "state=\"%s\"",
			    proto_state_name_or(states[j]));
			sample(b, "agency_model_state", st[i].model, extra,
			    st[i].state == states[j]);
		}
	for (k = 0; k < sizeof(counters) / sizeof(counters[0]); k++) {
		family(b, counters[k].name, "counter", counters[k].help);
		for (i = 0; i < n; i++)
			sample(b, counters[k].name, st[i].model, "",
			    *(const uint64_t *)(const void *)
			    ((const char *)&st[i] + counters[k].off));
	}
	family(b, "agency_model_load_duration_seconds", "histogram",
	    "Time from the spawn of the model's process to ready, of the "
	    "loads that ended ready.");
	for (i = 0; i < n; i++)
		render_histogram(b, &st[i]);
	render_queue(b, st, n);
	shown = NULL;
	shown_arg = NULL;

	v[0] = es->subscribers;
	v[1] = es->log_followers;
	v[2] = es->dropped;
	v[3] = cs->open;
	v[4] = cs->max;
	v[5] = cs->accepted;
	v[6] = cs->refused;
	v[7] = cs->cap_pauses;
	v[8] = cs->evicted;
	v[9] = cs->timed_out;
	v[10] = cs->body_timed_out;
	v[11] = cs->body_bytes;
	v[12] = cs->body_max;
	v[13] = cs->body_refused;
	v[14] = cs->body_share_refused;
	v[15] = cs->header_bytes;
	v[16] = cs->header_max;
	v[17] = cs->header_refused;
	v[18] = cs->header_share_refused;
	v[19] = cs->accept_pauses;
	for (i = 0; i < NSINGLES; i++)
		single(b, singles[i].name, singles[i].type, singles[i].help,
		    v[i]);
}
