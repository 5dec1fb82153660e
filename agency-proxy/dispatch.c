/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The parent's messages, at the top of the proxy: each one parent.c
 * reads is checked here and handed down, the configuration built
 * (rules.c's pconf) and put in force (http.c's listeners), holds to
 * forward.c, status to status.c, probes to probe.c, cancels to
 * forward.c.
 * Anything malformed from the parent is fatal: the parent is trusted,
 * so a bad message means a broken channel.  Nothing calls into this
 * file but proxy.c, which registers it with parent.c.
 *
 * The access part of the configuration (keys as digests, allow rules,
 * CORS origins, user names, and each TLS listener's certificate and key
 * in pieces) is built here too; the key's bytes are the listener's until
 * http.c has made its TLS context.
 *
 * Calls: http.c, status.c, forward.c, probe.c, rules.c, sandbox.c,
 * parent.c, state.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imsg.h"
#include "log.h"
#include "proxy.h"

static void	 conf_imsg(struct imsg *, uint32_t);
static void	 conf_access(struct imsg *, uint32_t);
static void	 events_imsg(struct imsg *, uint32_t);
static void	 conf_end(void);

static void
getdata(struct imsg *imsg, void *data, size_t len)
{
	if (imsg_get_data(imsg, data, len) == -1)
		fatalx("parent: message %u with a bad length %zu",
		    imsg_get_type(imsg), imsg_get_len(imsg));
}

#define STROK(a, what) do {						\
	if (!PROTO_STROK(a))						\
		fatalx("parent: %s without a NUL", (what));		\
} while (0)

/* A message from the parent (parent.c hands each here). */
void
dispatch_imsg(struct imsg *imsg)
{
	struct proto_hold_grant		 grant;
	struct proto_hold_refuse	 refuse;
	struct proto_hold_wait		 wait;
	struct proto_probe		 probe;
	struct proto_loadid		 lid;
	struct proto_status		 st;
	struct proto_reqid		 rid;
	struct proto_cancel		 cancel;
	struct proto_ports		 ports;
	uint32_t			 type = imsg_get_type(imsg);

	switch (type) {
	case IMSG_CONF_START:
	case IMSG_CONF_LISTEN:
	case IMSG_CONF_RUNTIME:
	case IMSG_CONF_ROUTE:
	case IMSG_CONF_PART:
	case IMSG_CONF_REFUSE:
	case IMSG_CONF_MOVE:
	case IMSG_CONF_MODEL:
	case IMSG_CONF_ALIAS:
	case IMSG_CONF_NAME:
	case IMSG_CONF_END:
	case IMSG_CONF_CORS:
	case IMSG_CONF_TLS_CERT:
	case IMSG_CONF_TLS_KEY:
	case IMSG_CONF_KEY:
	case IMSG_CONF_KEY_MODEL:
	case IMSG_CONF_ALLOW:
	case IMSG_CONF_ALLOW_MODEL:
	case IMSG_CONF_USER:
		conf_imsg(imsg, type);
		break;
	case IMSG_HOLD_GRANTV:
		/* What agencyd sends: the same grant, its strings unpadded. */
		if (proto_grantv(imsg->data, imsg_get_len(imsg), &grant) == -1)
			fatalx("parent: a grant of %zu bytes that does not "
			    "parse", imsg_get_len(imsg));
		forward_grant(&grant);
		break;
	case IMSG_HOLD_REFUSE:
		getdata(imsg, &refuse, sizeof(refuse));
		STROK(refuse.message, "refusal message");
		if (refuse.reason < REFUSE_NOT_LOADED ||
		    refuse.reason > REFUSE_LAST)
			fatalx("parent: refusal reason %d", refuse.reason);
		if (refuse.retry_after < 0 ||
		    refuse.retry_after > PROTO_RETRY_MAX)
			fatalx("parent: retry after %d", refuse.retry_after);
		forward_refuse(&refuse);
		break;
	case IMSG_HOLD_WAIT:
		getdata(imsg, &wait, sizeof(wait));
		if (wait.wait <= WAIT_NONE || wait.wait > WAIT_LAST ||
		    wait.load_ms < -1)
			fatalx("parent: a wait for %d, load %lld ms", wait.wait,
			    (long long)wait.load_ms);
		forward_wait(&wait);
		break;
	case IMSG_PROBE:
		getdata(imsg, &probe, sizeof(probe));
		STROK(probe.path, "probe path");
		STROK(probe.body, "probe body");
		STROK(probe.label, "probe label");
		if (probe.method != READY_GET && probe.method != READY_POST)
			fatalx("parent: probe method %d", probe.method);
		if (probe.port == 0 || probe.path[0] != '/')
			fatalx("parent: probe of port %u path %s",
			    probe.port, probe.path);
		probe_start(&probe);
		break;
	case IMSG_PROBE_CANCEL:
		getdata(imsg, &lid, sizeof(lid));
		probe_cancel(lid.loadid);
		break;
	case IMSG_STATUS_MODEL:
		getdata(imsg, &st, sizeof(st));
		STROK(st.model, "status model");
		STROK(st.runtime, "status runtime");
		STROK(st.error, "status error");
		status_record(&st);
		break;
	case IMSG_STATUS_END:
		getdata(imsg, &rid, sizeof(rid));
		status_end(rid.reqid);
		break;
	case IMSG_CANCEL:
		getdata(imsg, &cancel, sizeof(cancel));
		STROK(cancel.model, "cancel model");
		cancel.cancelled = forward_cancel(cancel.model);
		parent_send(IMSG_CANCEL_DONE, &cancel, sizeof(cancel));
		events_cancel(cancel.model, cancel.cancelled);
		/* the admin route's, when it asked for this one */
		status_cancelled(cancel.reqid, cancel.model,
		    cancel.cancelled);
		break;
	case IMSG_PORTS:
		getdata(imsg, &ports, sizeof(ports));
		if (!proto_ports_ok(&ports))
			fatalx("parent: model ports that are no ranges");
		/* Fewer rights or none: agencyd starts a new proxy. */
		if (sandbox_narrow(ports.r, ports.n) == -1)
			fatalx("cannot narrow the sandbox to the new model "
			    "ports");
		log_debug("sandbox: connect only to the model ports of %u "
		    "range%s from now on", ports.n, ports.n == 1 ? "" : "s");
		break;
	case IMSG_EV_SYNC_START:
	case IMSG_EV_RECORD:
	case IMSG_EV_SYNC_END:
	case IMSG_EV_STATE:
	case IMSG_EV_QUEUE:
	case IMSG_EV_MEMORY:
	case IMSG_ADMIN_DONE:
	case IMSG_LOGS_LINE:
	case IMSG_LOGS_END:
		events_imsg(imsg, type);
		break;
	default:
		fatalx("parent: unexpected message type %u", type);
	}
}

/* A model's status as the parent sends it, checked. */
static void
status_check(const struct proto_status *st)
{
	STROK(st->model, "status model");
	STROK(st->runtime, "status runtime");
	STROK(st->error, "status error");
	STROK(st->change_for, "status change");
	if (proto_state_name(st->state) == NULL ||
	    proto_wait_name(st->waiting) == NULL ||
	    st->change < CHANGE_NONE || st->change > CHANGE_LAST ||
	    st->nload_ms > PROTO_LOAD_HISTORY)
		fatalx("parent: status of %s: state %d, waiting %d, change %d, "
		    "%u loads", st->model, st->state, st->waiting, st->change,
		    st->nload_ms);
}

/* The events stream's messages (events.c). */
static void
events_imsg(struct imsg *imsg, uint32_t type)
{
	struct proto_ev_sync		 es;
	struct proto_ev_record		 er;
	struct proto_ev_state		 est;
	struct proto_ev_queue		 q;
	struct proto_ev_memory		 em;
	struct proto_admin_done		 ad;
	struct proto_logline		 ll;
	struct proto_logs_end		 le;

	switch (type) {
	case IMSG_EV_SYNC_START:
	case IMSG_EV_SYNC_END:
		getdata(imsg, &es, sizeof(es));
		STROK(es.error, "sync error");
		if ((es.reload != 0 && es.reload != 1) ||
		    (es.ok != 0 && es.ok != 1))
			fatalx("parent: sync reload %d ok %d", es.reload, es.ok);
		if (type == IMSG_EV_SYNC_START)
			events_sync_start(&es);
		else
			events_sync_end(&es);
		break;
	case IMSG_EV_RECORD:
		getdata(imsg, &er, sizeof(er));
		status_check(&er.st);
		events_sync_record(&er);
		break;
	case IMSG_EV_STATE:
		getdata(imsg, &est, sizeof(est));
		status_check(&est.st);
		if (est.from != -1 && proto_state_name(est.from) == NULL)
			fatalx("parent: a change from state %d", est.from);
		events_state(&est);
		break;
	case IMSG_EV_QUEUE:
		getdata(imsg, &q, sizeof(q));
		STROK(q.model, "queue model");
		if (proto_wait_name(q.waiting) == NULL)
			fatalx("parent: queue waiting %d", q.waiting);
		events_queue(&q);
		break;
	case IMSG_EV_MEMORY:
		getdata(imsg, &em, sizeof(em));
		events_memory(&em);
		break;
	case IMSG_ADMIN_DONE:
		getdata(imsg, &ad, sizeof(ad));
		STROK(ad.code, "admin code");
		STROK(ad.message, "admin message");
		if (ad.status < 200 || ad.status > 599)
			fatalx("parent: admin status %d", ad.status);
		events_admin_done(&ad);
		break;
	case IMSG_LOGS_LINE:
		getdata(imsg, &ll, sizeof(ll));
		STROK(ll.model, "log model");
		STROK(ll.line, "log line");
		events_logline(&ll);
		break;
	case IMSG_LOGS_END:
		getdata(imsg, &le, sizeof(le));
		STROK(le.model, "log model");
		events_logs_end(&le);
		break;
	default:
		fatalx("parent: events message %u", type);
	}
}

static void
conf_imsg(struct imsg *imsg, uint32_t type)
{
	struct proto_conf_global	 g;
	struct proto_listen		 pl;
	struct proto_runtime		 prt;
	struct proto_model		 pm;
	struct proto_move		 mv;
	struct proto_str		 s;
	struct plisten			*l;
	struct pconf			*c = px->nconf;
	int				 fd;

	if (type != IMSG_CONF_START && c == NULL)
		fatalx("parent: config message %u outside START..END", type);

	switch (type) {
	case IMSG_CONF_START:
		if (c != NULL)
			fatalx("parent: CONF_START twice");
		getdata(imsg, &g, sizeof(g));
		STROK(g.default_model, "default model");
		if ((c = px->nconf = pconf_new()) == NULL)
			fatal("%s: pconf_new", __func__);
		if (g.max_body <= 0 || g.request_timeout <= 0)
			fatalx("parent: max body %lld, request timeout %lld",
			    (long long)g.max_body,
			    (long long)g.request_timeout);
		if (g.header_timeout < 0 || g.max_connections < 0)
			fatalx("parent: header timeout %lld, max connections "
			    "%lld", (long long)g.header_timeout,
			    (long long)g.max_connections);
		if (g.body_timeout <= 0 || g.body_buffer <= 0 ||
		    (g.host_any != 0 && g.host_any != 1) ||
		    (g.console != 0 && g.console != 1) || g.queue_timeout < 0)
			fatalx("parent: body timeout %lld, body buffer %lld, "
			    "host any %d, console %d, queue timeout %lld",
			    (long long)g.body_timeout,
			    (long long)g.body_buffer, g.host_any, g.console,
			    (long long)g.queue_timeout);
		c->max_body = g.max_body;
		c->request_timeout = g.request_timeout;
		c->header_timeout = g.header_timeout;
		c->max_connections = g.max_connections;
		c->body_timeout = g.body_timeout;
		c->body_buffer = g.body_buffer;
		c->host_any = g.host_any;
		c->console = g.console;
		c->port_lo = g.port_lo;
		c->port_hi = g.port_hi;
		c->queue_timeout = g.queue_timeout;
		(void)strlcpy(c->default_model, g.default_model,
		    sizeof(c->default_model));
		px->nrt = NULL;
		px->nmodel = NULL;
		px->nlisten = NULL;
		px->nkey = NULL;
		px->nallow = NULL;
		break;
	case IMSG_CONF_LISTEN:
		getdata(imsg, &pl, sizeof(pl));
		STROK(pl.host, "listen host");
		STROK(pl.path, "listen path");
		if ((pl.tls != 0 && pl.tls != 1) ||
		    (pl.path[0] != '\0' && (pl.tls || pl.host[0] != '\0')))
			fatalx("parent: listen %s path %s tls %d", pl.host,
			    pl.path, pl.tls);
		if ((fd = imsg_get_fd(imsg)) == -1)
			fatalx("parent: CONF_LISTEN without a socket");
		if ((l = calloc(1, sizeof(*l))) == NULL)
			fatal("%s: calloc", __func__);
		l->fd = fd;
		l->port = pl.port;
		l->tls = pl.tls;
		(void)strlcpy(l->host, pl.host, sizeof(l->host));
		(void)strlcpy(l->path, pl.path, sizeof(l->path));
		TAILQ_INSERT_TAIL(&c->listens, l, entry);
		px->nlisten = l;
		break;
	case IMSG_CONF_RUNTIME:
		getdata(imsg, &prt, sizeof(prt));
		STROK(prt.name, "runtime name");
		if (prt.kind < KIND_CHAT || prt.kind > KIND_TRANSCRIPTION ||
		    prt.stops < STOPS_ALWAYS || prt.stops > STOPS_STREAM ||
		    prt.max_tokens < 0 || (prt.passthrough != 0 &&
		    prt.passthrough != 1) ||
		    (prt.progress != 0 && prt.progress != 1))
			fatalx("parent: runtime %s: kind %d stops %d",
			    prt.name, prt.kind, prt.stops);
		if ((px->nrt = pconf_add_runtime(c, prt.name, prt.kind,
		    prt.stops, prt.max_tokens)) == NULL)
			fatal("%s: runtime %s", __func__, prt.name);
		px->nrt->passthrough = prt.passthrough;
		px->nrt->progress = prt.progress;
		break;
	case IMSG_CONF_ROUTE:
	case IMSG_CONF_PART:
	case IMSG_CONF_REFUSE:
		getdata(imsg, &s, sizeof(s));
		STROK(s.s, "runtime string");
		if (px->nrt == NULL)
			fatalx("parent: runtime rule %u before a runtime",
			    type);
		if (pstrs_add(type == IMSG_CONF_ROUTE ? &px->nrt->routes :
		    type == IMSG_CONF_PART ? &px->nrt->parts :
		    &px->nrt->refuse, s.s) == -1)
			fatal("%s: pstrs_add", __func__);
		break;
	case IMSG_CONF_MOVE:
		getdata(imsg, &mv, sizeof(mv));
		STROK(mv.from, "move from");
		STROK(mv.to, "move to");
		if (px->nrt == NULL)
			fatalx("parent: move before a runtime");
		if (pruntime_add_move(px->nrt, mv.from, mv.to) == -1)
			fatal("%s: pruntime_add_move", __func__);
		break;
	case IMSG_CONF_MODEL:
		getdata(imsg, &pm, sizeof(pm));
		STROK(pm.name, "model name");
		STROK(pm.runtime, "model runtime");
		STROK(pm.upstream, "model upstream");
		STROK(pm.label, "model label");
		if (pm.max_tokens < 0)
			fatalx("parent: model %s: max tokens", pm.name);
		if (pconf_find_model(c, pm.name) != NULL)
			fatalx("parent: model %s twice", pm.name);
		if ((px->nmodel = pconf_add_model(c, pm.name, pm.runtime,
		    pm.upstream, pm.label, pm.max_tokens)) == NULL)
			fatalx("parent: model %s: unknown runtime %s",
			    pm.name, pm.runtime);
		break;
	case IMSG_CONF_ALIAS:
		getdata(imsg, &s, sizeof(s));
		STROK(s.s, "alias");
		if (px->nmodel == NULL)
			fatalx("parent: alias before a model");
		if (pstrs_add(&px->nmodel->aliases, s.s) == -1)
			fatal("%s: pstrs_add", __func__);
		break;
	case IMSG_CONF_NAME:
		getdata(imsg, &s, sizeof(s));
		STROK(s.s, "server name");
		if (pstrs_add(&c->names, s.s) == -1)
			fatal("%s: pstrs_add", __func__);
		break;
	case IMSG_CONF_END:
		if (imsg_get_len(imsg) != 0)
			fatalx("parent: CONF_END with a payload");
		TAILQ_FOREACH(l, &c->listens, entry)
			if (l->tls && (l->certlen == 0 || l->keylen == 0))
				fatalx("parent: listen on %s port %u: TLS "
				    "without its certificate and key",
				    l->host, l->port);
		conf_end();
		break;
	default:
		conf_access(imsg, type);
		break;
	}
}

/* Append a piece of the last TLS listener's certificate or key. */
static void
conf_piece(struct imsg *imsg, uint8_t **buf, size_t *len, size_t max)
{
	size_t	 n = imsg_get_len(imsg);
	uint8_t	*b;

	if (n == 0 || n > PROTO_TLS_PIECE || *len + n > max)
		fatalx("parent: a TLS piece of %zu bytes after %zu", n, *len);
	/* a key's bytes are never left behind in freed memory */
	if ((b = malloc(*len + n)) == NULL)
		fatal("%s: malloc", __func__);
	if (*len > 0)
		memcpy(b, *buf, *len);
	freezero(*buf, *len);
	if (imsg_get_data(imsg, b + *len, n) == -1)
		fatalx("parent: a TLS piece that does not read");
	*buf = b;
	*len += n;
}

/* A model a key or rule names: the model's own name, once. */
static void
conf_model_add(struct pconf *c, struct pstrs *models, const char *name)
{
	struct pmodel	*m;

	if ((m = pconf_find_model(c, name)) == NULL)
		fatalx("parent: access to an unknown model %s", name);
	if (!pstrs_has(models, m->name) && pstrs_add(models, m->name) == -1)
		fatal("%s: pstrs_add", __func__);
}

/* The access part of the configuration. */
static void
conf_access(struct imsg *imsg, uint32_t type)
{
	struct proto_key	 pk;
	struct proto_allow	 pa;
	struct proto_user	 pu;
	struct proto_str	 s;
	struct pconf		*c = px->nconf;

	switch (type) {
	case IMSG_CONF_CORS:
		getdata(imsg, &s, sizeof(s));
		STROK(s.s, "cors origin");
		if (pstrs_add(&c->cors, s.s) == -1)
			fatal("%s: pstrs_add", __func__);
		break;
	case IMSG_CONF_TLS_CERT:
	case IMSG_CONF_TLS_KEY:
		if (px->nlisten == NULL || !px->nlisten->tls)
			fatalx("parent: a TLS piece without a TLS listener");
		if (type == IMSG_CONF_TLS_CERT)
			conf_piece(imsg, &px->nlisten->cert,
			    &px->nlisten->certlen, PROTO_TLS_CERT_MAX);
		else
			conf_piece(imsg, &px->nlisten->key,
			    &px->nlisten->keylen, PROTO_TLS_KEY_MAX);
		break;
	case IMSG_CONF_KEY:
		getdata(imsg, &pk, sizeof(pk));
		STROK(pk.name, "key name");
		if ((pk.admin != 0 && pk.admin != 1) || pk.max_requests < 0 ||
		    pk.name[0] == '\0')
			fatalx("parent: key %s: admin %d max requests %lld",
			    pk.name, pk.admin, (long long)pk.max_requests);
		if ((px->nkey = pconf_add_key(c, pk.name, pk.digest, pk.admin,
		    pk.max_requests)) == NULL)
			fatal("%s: pconf_add_key", __func__);
		explicit_bzero(&pk, sizeof(pk));
		break;
	case IMSG_CONF_KEY_MODEL:
		getdata(imsg, &s, sizeof(s));
		STROK(s.s, "key model");
		if (px->nkey == NULL)
			fatalx("parent: a key's model before a key");
		conf_model_add(c, &px->nkey->models, s.s);
		break;
	case IMSG_CONF_ALLOW:
		getdata(imsg, &pa, sizeof(pa));
		STROK(pa.name, "allow name");
		if ((pa.kind != ALLOW_USER && pa.kind != ALLOW_GROUP) ||
		    (pa.admin != 0 && pa.admin != 1))
			fatalx("parent: allow rule %s: kind %d admin %d",
			    pa.name, pa.kind, pa.admin);
		if ((px->nallow = pconf_add_allow(c, pa.kind, pa.id, pa.name,
		    pa.admin)) == NULL)
			fatal("%s: pconf_add_allow", __func__);
		break;
	case IMSG_CONF_ALLOW_MODEL:
		getdata(imsg, &s, sizeof(s));
		STROK(s.s, "allow model");
		if (px->nallow == NULL)
			fatalx("parent: a rule's model before a rule");
		conf_model_add(c, &px->nallow->models, s.s);
		break;
	case IMSG_CONF_USER:
		getdata(imsg, &pu, sizeof(pu));
		STROK(pu.name, "user name");
		if (pconf_add_user(c, pu.uid, pu.name) == -1)
			fatal("%s: pconf_add_user", __func__);
		break;
	default:
		fatalx("parent: config message %u", type);
	}
}

static void
conf_end(void)
{
	struct pconf	*old = px->conf;

	pconf_created(px->nconf, old, (int64_t)time(NULL));
	px->conf = px->nconf;
	px->nconf = NULL;
	px->nrt = NULL;
	px->nmodel = NULL;
	px->nlisten = NULL;
	px->nkey = NULL;
	px->nallow = NULL;
	http_swap_listeners(old, px->conf);
	pconf_free(old);
	log_info("configuration: %zu models, %s", pconf_nmodels(px->conf),
	    old == NULL ? "first" : "reloaded");
	if (!px->ready) {
		px->ready = 1;
		parent_send(IMSG_PROXY_READY, NULL, 0);
	}
}

/* The parent is gone: nothing can be released any more. */
void
dispatch_lost(void)
{
	forward_shutdown();
}
