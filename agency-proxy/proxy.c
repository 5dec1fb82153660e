/*
 * agency-proxy: started by agencyd with its end of a socketpair on fd 3.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <err.h>
#include <event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "imsg.h"
#include "log.h"
#include "proxy.h"

static struct proxy	 proxy;
struct proxy		*px = &proxy;

static __dead void
usage(void)
{
	extern char	*__progname;

	fprintf(stderr, "usage: %s [-dv] [-u user]\n", __progname);
	exit(1);
}

int
main(int argc, char *argv[])
{
	struct stat	 st;
	const char	*user = NULL;
	int		 ch, debug = 0, verbose = 0;

	while ((ch = getopt(argc, argv, "du:v")) != -1) {
		switch (ch) {
		case 'd':
			debug = 1;
			break;
		case 'u':
			user = optarg;
			break;
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
	parent_init(PROXY_FD);
	log_sethook(parent_loghook);

	privsep_drop(user);

	http_init();
	log_debug("started, waiting for the configuration");
	event_dispatch();
	fatalx("event loop ended");
}
