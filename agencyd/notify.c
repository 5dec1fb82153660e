/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Talking to a service manager (systemd's Type=notify) through
 * sd_notify(3): READY=1 once the front door serves, STATUS= with the
 * models, STOPPING=1 on shutdown.
 *
 * The socket is taken out of the environment at start-up so that
 * neither the proxy nor a model process inherits it (a child that
 * wrote to it would speak for agencyd), and put back only for the
 * moment of each message: sd_notify's unset_environment removes it
 * again.
 *
 * It reads the pool's status, and calls no other file of agencyd.
 *
 * Calls: pool_status.c, common/log.c.
 */
#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "agencyd.h"
#include "log.h"

#define NOTIFY_STATUS_MAX	256	/* what systemctl status shows */

static char	*notify_socket;
static int	 notify_readied;
static char	 notify_last[NOTIFY_STATUS_MAX];

static void	 notify_send(const char *);

/* 1 when a service manager waits for our messages. */
int
notify_init(void)
{
	const char	*s;

	if ((s = getenv("NOTIFY_SOCKET")) == NULL || *s == '\0')
		return (0);
	if ((notify_socket = strdup(s)) == NULL)
		fatal("%s: strdup", __func__);
	if (unsetenv("NOTIFY_SOCKET") == -1)
		fatal("%s: unsetenv", __func__);
	return (1);
}

static void
notify_send(const char *msg)
{
	int	r;

	if (notify_socket == NULL)
		return;
	if (setenv("NOTIFY_SOCKET", notify_socket, 1) == -1) {
		log_warn("%s: setenv", __func__);
		return;
	}
	if ((r = sd_notify(1, msg)) < 0)
		log_warnx("%s: sd_notify: %s", __func__, strerror(-r));
	else if (r == 0)
		log_warnx("%s: NOTIFY_SOCKET went away", __func__);
}

/* The front door serves: the service has started.  Only the first
 * proxy's readiness counts; a restarted proxy is not a new start. */
void
notify_ready(void)
{
	char	msg[64];

	if (notify_readied)
		return;
	notify_readied = 1;
	(void)snprintf(msg, sizeof(msg), "READY=1\nMAINPID=%ld",
	    (long)getpid());
	notify_send(msg);
}

void
notify_stopping(void)
{
	notify_send("STOPPING=1");
}

/*
 * "3 models, 1 ready: qwen, 1 loading, 1 failed", sent only when it
 * differs from the last one, since the pool calls this on every change.
 */
void
notify_status(struct agencyd *d)
{
	struct proto_status	 st;
	char			 names[NOTIFY_STATUS_MAX];
	char			 msg[NOTIFY_STATUS_MAX];
	char			 line[NOTIFY_STATUS_MAX + sizeof("STATUS=")];
	size_t			 i, n, ready = 0, loading = 0, failed = 0;
	int			 len;

	if (notify_socket == NULL || d->pool == NULL)
		return;
	names[0] = '\0';
	n = pool_count(d->pool);
	for (i = 0; i < n; i++) {
		if (pool_status(d->pool, i, &st) == -1)
			continue;
		switch (st.state) {
		case STATE_READY:
			/* A long list is cut; the count says the rest. */
			if (ready++ > 0)
				(void)strlcat(names, ", ", sizeof(names));
			(void)strlcat(names, st.model, sizeof(names));
			break;
		case STATE_LOADING:
			loading++;
			break;
		case STATE_FAILED:
			failed++;
			break;
		default:
			break;
		}
	}

	len = snprintf(msg, sizeof(msg), "%zu model%s, %zu ready%s%s",
	    n, n == 1 ? "" : "s", ready, ready > 0 ? ": " : "", names);
	if (len >= 0 && (size_t)len < sizeof(msg) && loading > 0)
		len += snprintf(msg + len, sizeof(msg) - len,
		    ", %zu loading", loading);
	if (len >= 0 && (size_t)len < sizeof(msg) && failed > 0)
		(void)snprintf(msg + len, sizeof(msg) - len,
		    ", %zu failed", failed);

	if (strcmp(msg, notify_last) == 0)
		return;
	(void)strlcpy(notify_last, msg, sizeof(notify_last));
	(void)snprintf(line, sizeof(line), "STATUS=%s", msg);
	notify_send(line);
}
