/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-proxy: started by agencyd with its end of a socketpair on fd 3.
 * main owns the start-up (options, privileges, sandbox) and the loop;
 * it registers dispatch.c with the parent's channel and starts the
 * HTTP layer, which registers itself with conn.c.  See README here for
 * the files and a request's way through them.
 *
 * Calls: dispatch.c, http.c, parent.c, privsep.c, sandbox.c, state.c,
 * conn_tls.c, events.c, common/log.c.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <err.h>
#include <event.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "imsg.h"
#include "log.h"
#include "proxy.h"
#include "version.h"

static __dead void
usage(void)
{
	extern char	*__progname;

	fprintf(stderr, "usage: %s [-dTVv] [-p lo:hi ...] [-u user]\n",
	    __progname);
	exit(1);
}

/*
 * "lo:hi", model ports: Landlock allows connect to them alone.  Given
 * once a range, the configured one and, while a reload moves models,
 * the ports they are still on.
 */
static void
parse_ports(const char *arg, uint16_t *lo, uint16_t *hi)
{
	char		 buf[16], *colon;
	const char	*errstr;

	if (strlcpy(buf, arg, sizeof(buf)) >= sizeof(buf) ||
	    (colon = strchr(buf, ':')) == NULL)
		errx(1, "-p %s: expected lo:hi", arg);
	*colon++ = '\0';
	*lo = strtonum(buf, 1, USHRT_MAX, &errstr);
	if (errstr != NULL)
		errx(1, "-p %s: low port is %s", arg, errstr);
	*hi = strtonum(colon, *lo, USHRT_MAX, &errstr);
	if (errstr != NULL)
		errx(1, "-p %s: high port is %s", arg, errstr);
}

int
main(int argc, char *argv[])
{
	struct stat		 st;
	struct proto_port_range	 ports[PROTO_PORT_RANGES];
	const char		*user = NULL;
	size_t			 nports = 0;
	int			 ch, debug = 0, selftest = 0, verbose = 0;

	while ((ch = getopt(argc, argv, "dp:Tu:Vv")) != -1) {
		switch (ch) {
		case 'd':
			debug = 1;
			break;
		case 'p':
			if (nports == PROTO_PORT_RANGES)
				errx(1, "-p: more than %d ranges",
				    PROTO_PORT_RANGES);
			parse_ports(optarg, &ports[nports].lo,
			    &ports[nports].hi);
			nports++;
			break;
		case 'T':
			selftest = 1;
			break;
		case 'u':
			user = optarg;
			break;
		case 'V':
			printf("agency-proxy %s\n", AGENCY_VERSION);
			exit(0);
		case 'v':
			verbose++;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	if (argc != 0)
		usage();

	if (selftest) {
		log_init(1, LOG_DAEMON);
		log_setverbose(verbose);
		/* as the proxy does, so that its sandbox is the one tried */
		conn_tls_init();
		return (sandbox_selftest(user, nports > 0 ? ports[0].lo : 0,
		    nports > 0 ? ports[0].hi : 0));
	}

	log_init(debug, LOG_DAEMON);
	log_setverbose(verbose > 0 ? verbose + 1 : debug);
	log_procinit("proxy");

	if (fstat(PROXY_FD, &st) == -1 || !S_ISSOCK(st.st_mode))
		errx(1, "fd %d is not the parent's socket: agencyd starts "
		    "this program", PROXY_FD);

	/* Writes to a client that left fail with EPIPE, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	/* RLIMIT_FSIZE 0: a write to a file fails instead of killing us */
	signal(SIGXFSZ, SIG_IGN);

	if ((px->base = event_init()) == NULL)
		errx(1, "event_init");
	parent_init(PROXY_FD, dispatch_imsg, dispatch_lost);
	log_sethook(parent_loghook);

	/* libtls's library reads its configuration: not in the chroot */
	conn_tls_init();
	privsep_drop(user);

	http_init();
	events_init();
	/* Last: from here on, only what the event loop needs. */
	if (sandbox_apply(ports, nports) == -1)
		fatalx("cannot apply the sandbox");
	log_debug("started, waiting for the configuration");
	/* One turn at a time: what a turn queued for the parent goes out
	 * at its end, in one write. */
	for (;;) {
		parent_flush();
		now_reset();
		if (event_base_loop(px->base, EVLOOP_ONCE) != 0)
			break;
	}
	fatalx("event loop ended");
}
