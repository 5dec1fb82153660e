/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The channel to agencyd on fd 3, its sending and receiving: messages
 * to the parent are queued and written at the end of a loop turn, log
 * lines go the same way, and each message read is handed to the
 * dispatch registered by parent_init (dispatch.c), which checks it.
 * When the parent is gone, the registered lost callback runs and the
 * process exits.
 *
 * Messages go out as proto.c writes them.
 *
 * Calls: state.c, common/imsg.c, common/log.c, common/msg.c,
 * common/proto.c.  Called by everything that tells the parent
 * something; calls nothing above it.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "imsg.h"
#include "log.h"
#include "msg.h"
#include "proxy.h"

#define PARENT_LAZY_MS		1		/* see parent_send */
#define PARENT_LAZY_MAX		(32 * 1024)

static struct imsgev	 parent_iev;
static int		 parent_up;
static int		 parent_urgent;
static struct event	 parent_lazy_ev;

static void	(*parent_handler)(struct imsg *);
static void	(*parent_gone)(void);

static void	 parent_lazy(int, short, void *);
static void	 parent_dispatch(int, short, void *);

/* handler is given each message from the parent; gone is called when
 * the parent is gone, before the process exits. */
void
parent_init(int fd, void (*handler)(struct imsg *), void (*gone)(void))
{
	parent_handler = handler;
	parent_gone = gone;
	imsgev_init(&parent_iev, fd, parent_dispatch, &parent_iev);
	px->iev = &parent_iev;
	parent_up = 1;
	imsgev_add(&parent_iev);
	evtimer_set(&parent_lazy_ev, parent_lazy, NULL);
}

/*
 * Messages to the parent are queued, and the queue written at the end of
 * a loop turn (parent_flush, from proxy.c's loop): the holds asked for by
 * all the requests a turn read go in one sendmsg, and no EV_WRITE is
 * asked for unless the socket is full.  A turn that queued only releases
 * and log lines (answers that ended) does not wake agencyd for them:
 * they wait for the next message that matters, for PARENT_LAZY_MS at
 * most, or until PARENT_LAZY_MAX bytes are queued.
 */
static void
parent_lazy(int fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	parent_urgent = 1;	/* parent_flush at the end of this turn */
}

void
parent_send(uint32_t type, const void *data, size_t len)
{
	struct msgw	 w;

	if (!parent_up)
		return;
	if (proto_write(&w, FROM_PROXY, type, data, len) == -1)
		fatalx("%s: a message of type %u that cannot be written",
		    __func__, type);
	if (msg_compose(&parent_iev.ibuf, type, 0, -1, &w) == -1)
		fatal("%s: imsg_compose", __func__);
	if (type != IMSG_HOLD_RELEASE)
		parent_urgent = 1;
}

static __dead void
parent_lost(void)
{
	parent_up = 0;
	log_sethook(NULL);
	parent_gone();
	fprintf(stderr, "agency-proxy: the parent is gone\n");
	exit(0);
}

void
parent_flush(void)
{
	struct timeval	 tv = { 0, PARENT_LAZY_MS * 1000 };

	if (!parent_up)
		return;
	if (parent_iev.ibuf.w.queued > 0 && !parent_urgent &&
	    parent_iev.ibuf.w.queued < PARENT_LAZY_MAX &&
	    !(parent_iev.events & EV_WRITE)) {
		if (!evtimer_pending(&parent_lazy_ev, NULL))
			evtimer_add(&parent_lazy_ev, &tv);
		return;
	}
	parent_urgent = 0;
	evtimer_del(&parent_lazy_ev);
	/* imsg_write: 1 when it wrote or would block */
	if (parent_iev.ibuf.w.queued > 0 && imsg_write(&parent_iev.ibuf) <= 0)
		parent_lost();
	/* EV_WRITE while (and only while) something is left */
	imsgev_add(&parent_iev);
}

/* Every log line goes to the parent, which logs it as ours. */
void
parent_loghook(int pri, const char *line)
{
	static int	 busy;
	struct msgw	 w;
	struct proto_log lg;

	if (busy || !parent_up) {
		fprintf(stderr, "agency-proxy: %s\n", line);
		return;
	}
	busy = 1;
	/* no longer than the parent takes */
	lg.pri = pri < 0 ? LOG_INFO : pri;
	(void)strlcpy(lg.line, line, sizeof(lg.line));
	if (proto_write(&w, FROM_PROXY, IMSG_LOG, &lg, sizeof(lg)) == -1 ||
	    msg_compose(&parent_iev.ibuf, IMSG_LOG, 0, -1, &w) == -1)
		fprintf(stderr, "agency-proxy: %s\n", line);
	else if (pri <= LOG_CRIT)
		(void)imsg_flush(&parent_iev.ibuf);	/* we are exiting */
	busy = 0;
}

static void
parent_dispatch(int fd, short event, void *arg)
{
	struct imsgev	*iev = arg;
	struct imsg	 imsg;
	ssize_t		 n;

	(void)fd;
	/* as imsgev_io, but the events are parent_flush's to set */
	if (event & EV_READ) {
		n = imsg_read(&iev->ibuf);
		if ((n == -1 && errno != EAGAIN) || n == 0)
			parent_lost();
	}
	if ((event & EV_WRITE) && imsg_write(&iev->ibuf) <= 0)
		parent_lost();
	if (event & EV_WRITE)
		parent_urgent = 1;	/* what is left goes at the turn's end */
	for (;;) {
		if ((n = imsg_get(&iev->ibuf, &imsg)) == -1)
			fatal("%s: imsg_get", __func__);
		if (n == 0)
			break;
		parent_handler(&imsg);
		imsg_free(&imsg);
	}
}

