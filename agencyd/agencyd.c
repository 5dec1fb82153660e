#include <sys/types.h>

#include <err.h>
#include <stdio.h>
#include <stdlib.h>
#include <syslog.h>
#include <unistd.h>

#include "agencyd.h"
#include "log.h"

__dead static void	usage(void);

__dead static void
usage(void)
{
	extern char	*__progname;

	fprintf(stderr, "usage: %s [-dnv] [-D macro=value] [-f file]\n",
	    __progname);
	exit(1);
}

int
main(int argc, char *argv[])
{
	struct agency_conf	*conf;
	const char		*conffile = AGENCY_CONF;
	int			 ch, debug = 0, noaction = 0, verbose = 0;
	int			 opts;

	log_init(1, LOG_DAEMON);	/* stderr until we know better */

	while ((ch = getopt(argc, argv, "D:df:nv")) != -1) {
		switch (ch) {
		case 'D':
			if (cmdline_symset(optarg) < 0)
				log_warnx("could not parse macro definition %s",
				    optarg);
			break;
		case 'd':
			debug = 1;
			break;
		case 'f':
			conffile = optarg;
			break;
		case 'n':
			noaction = 1;
			break;
		case 'v':
			verbose++;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc > 0)
		usage();

	opts = (verbose ? AGENCYD_OPT_VERBOSE : 0) |
	    (verbose > 1 ? AGENCYD_OPT_VERBOSE2 : 0) |
	    (noaction ? AGENCYD_OPT_NOACTION : 0);
	if ((conf = parse_config(conffile, opts)) == NULL)
		exit(1);

	if (noaction) {
		if (verbose)
			print_config(stdout, conf);
		fprintf(stderr, "configuration OK\n");
		config_free(conf);
		exit(0);
	}

	(void)debug;
	errx(1, "serving is not built yet: only -n works in this build");
}
