/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The parent's messages, at the top of the proxy: each one parent.c
 * reads is read whole (proto.c; the configuration's, confimsg.c) and
 * handed to the file that owns it: holds, cancels and the drain to
 * forward.c, status to status.c, probes to probe.c, events to events.c.
 * Anything malformed from the parent is fatal: the parent is trusted, so
 * a bad message means a broken channel.  A whole configuration is put in
 * force here (http.c's listeners).  Nothing calls into this file but
 * proxy.c, which registers it with parent.c.
 *
 * Calls: http.c, status.c, forward.c, events.c, probe.c, sandbox.c,
 * parent.c, state.c, common/config.c, common/confimsg.c, common/imsg.c,
 * common/log.c, common/proto.c.
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

/* The configuration being received, until its end. */
static struct conf_recv	 incoming;

static void	 dispatch_conf(struct imsg *);
static void	 dispatch_cancel(struct proto_cancel *);
static void	 dispatch_ports(const struct proto_ports *);

/* A message from the parent (parent.c hands each here). */
void
dispatch_imsg(struct imsg *imsg)
{
	union proto_msg	 u;
	const char	*why;
	uint32_t	 type = imsg_get_type(imsg);

	if (type >= IMSG_CONF_FIRST && type <= IMSG_CONF_LAST) {
		dispatch_conf(imsg);
		return;
	}
	if (proto_read(imsg, FROM_PARENT, &u, sizeof(u), &why) == -1)
		fatalx("parent: message %u: %s", type, why);
	switch (type) {
	case IMSG_HOLD_GRANT:
		forward_grant(&u.hold_grant);
		break;
	case IMSG_HOLD_REFUSE:
		forward_refuse(&u.hold_refuse);
		break;
	case IMSG_HOLD_WAIT:
		forward_wait(&u.hold_wait);
		break;
	case IMSG_PROBE:
		probe_start(&u.probe);
		break;
	case IMSG_PROBE_CANCEL:
		probe_cancel(u.loadid.loadid);
		break;
	case IMSG_STATUS_MODEL:
		status_record(&u.status);
		break;
	case IMSG_STATUS_END:
		status_end(&u.status_end);
		break;
	case IMSG_CANCEL:
		dispatch_cancel(&u.cancel);
		break;
	case IMSG_PORTS:
		dispatch_ports(&u.ports);
		break;
	case IMSG_DRAIN:
		forward_drain(&u.drain);
		break;
	case IMSG_EV_SYNC_START:
		events_sync_start(&u.ev_sync);
		break;
	case IMSG_EV_RECORD:
		events_sync_record(&u.ev_record);
		break;
	case IMSG_EV_SYNC_END:
		events_sync_end(&u.ev_sync);
		break;
	case IMSG_EV_STATE:
		events_state(&u.ev_state);
		break;
	case IMSG_EV_QUEUE:
		events_queue(&u.ev_queue);
		break;
	case IMSG_EV_MEMORY:
		events_memory(&u.ev_memory);
		break;
	case IMSG_ADMIN_DONE:
		events_admin_done(&u.admin_done);
		break;
	case IMSG_LOGS_LINE:
		events_logline(&u.logline);
		break;
	case IMSG_LOGS_END:
		events_logs_end(&u.logs_end);
		break;
	default:
		fatalx("parent: unexpected message type %u", type);
	}
}

/* A part of the configuration; at its end, the new one in force. */
static void
dispatch_conf(struct imsg *imsg)
{
	struct pconf	*old = px->conf;

	switch (config_recv(&incoming, imsg)) {
	case -1:
		fatalx("parent: configuration message %u: %s",
		    imsg_get_type(imsg), incoming.why);
	case 0:
		return;
	default:
		break;
	}
	pconf_created(incoming.conf, old, (int64_t)time(NULL));
	px->conf = incoming.conf;
	incoming.conf = NULL;
	http_swap_listeners(old, px->conf);
	pconf_free(old);
	log_info("configuration: %zu models, %s", pconf_nmodels(px->conf),
	    old == NULL ? "first" : "reloaded");
	if (!px->ready) {
		px->ready = 1;
		parent_send(IMSG_PROXY_READY, NULL, 0);
	}
}

/* End a model's requests, and say how many; the admin route's, when it
 * asked for this one, hears of it too. */
static void
dispatch_cancel(struct proto_cancel *c)
{
	c->cancelled = forward_cancel(c->model);
	parent_send(IMSG_CANCEL_DONE, c, sizeof(*c));
	events_cancel(c->model, c->cancelled);
	status_cancelled(c->reqid, c->model, c->cancelled);
}

/* Fewer model ports: the sandbox narrows (more need a new proxy). */
static void
dispatch_ports(const struct proto_ports *p)
{
	if (sandbox_narrow(p->r, p->n) == -1)
		fatalx("cannot narrow the sandbox to the new model ports");
	log_debug("sandbox: connect only to the model ports of %u range%s "
	    "from now on", p->n, p->n == 1 ? "" : "s");
}

/* The parent is gone: nothing can be released any more. */
void
dispatch_lost(void)
{
	forward_shutdown();
}
