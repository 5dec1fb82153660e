/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agencyd: the supervisor.  It owns the pool of model processes, starts
 * agency-proxy (the unprivileged front door) and restarts it when it
 * dies, and answers agency-ctl on its control socket.  It never parses
 * bytes that came from the network or from a model process.
 *
 * main: options, configuration, start-up, signals, reaping, shutdown.
 * The top of agencyd: it calls the files below it (agencyd.h lists
 * them) and none of them calls it.  The pool reaches poolops.c through
 * the ops table given here, and a model's lines reach control.c and
 * proxylink.c through the hook set here.
 *
 * Calls: control.c, emit.c, keystats.c, listeners.c, model.c, notify.c,
 * parse.y, pool.c, pool_status.c, poolops.c, printconf.c, privdrop.c,
 * proxylink.c, proxysvc.c, reload.c, sockdir.c, common/config.c,
 * common/log.c.
 */
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <err.h>
#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <limits.h>
#include <paths.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "agencyd.h"
#include "control.h"
#include "log.h"
#include "memory.h"
#include "version.h"

/* The Makefile's, from the install variables. */
#ifndef CONF_PATH
#define CONF_PATH	AGENCY_CONF
#endif

__dead static void	usage(void);
static void		agencyd_options(struct agencyd *, int, char *[],
			    const char **, int *);
static void		agencyd_configure(struct agencyd *, const char *, int);
static void		agencyd_check(struct agencyd *);
static void		agencyd_background(struct agencyd *);
static void		agencyd_signals(struct agencyd *);
static void		agencyd_start(struct agencyd *);
static void		agencyd_sig(int, short, void *);
static void		agencyd_reap(struct agencyd *);
static void		agencyd_shutdown(struct agencyd *);
static struct pool	*agencyd_pool(struct agencyd *);
static void		 agencyd_loop(struct event_base *);
static char		*agencyd_abspath(const char *);
static void		 agencyd_daemon(int);
static void		 agencyd_shutdown_done(void *);
static void		 agencyd_model_line(void *, const char *, uint64_t,
			    const char *);

__dead static void
usage(void)
{
	extern char	*__progname;

	fprintf(stderr, "usage: %s [-dnVv] [-D macro=value] [-f file] "
	    "[-P proxy] [-s socket]\n", __progname);
	exit(1);
}

int
main(int argc, char *argv[])
{
	struct agencyd		 d;
	struct event_base	*base;
	const char		*sockpath = NULL;
	char			*conffile;
	int			 noaction = 0;

	memset(&d, 0, sizeof(d));
	TAILQ_INIT(&d.models);
	TAILQ_INIT(&d.draining);
	TAILQ_INIT(&d.probes);
	TAILQ_INIT(&d.keystats);
	d.conffile = CONF_PATH;
	d.proxy_path = PROXY_PATH;

	log_init(1, LOG_DAEMON);	/* stderr until we know better */
	agencyd_options(&d, argc, argv, &sockpath, &noaction);
	agencyd_configure(&d, sockpath, noaction);
	/* Reloads read it again from wherever we are by then. */
	d.conffile = conffile = agencyd_abspath(d.conffile);
	agencyd_check(&d);
	agencyd_background(&d);

	if ((base = event_init()) == NULL)
		fatalx("event_init");
	agencyd_signals(&d);
	agencyd_start(&d);
	log_info("agencyd started, %zu models, pid %d",
	    pool_count(d.pool), (int)getpid());
	agencyd_loop(base);

	control_cleanup(&d);
	listeners_close(d.conf);
	keystats_free(&d);
	pool_free(d.pool);
	proxy_cleanup();
	models_free(&d);
	config_free(d.conf);
	log_info("agencyd exiting");
	free(conffile);
	return (0);
}

/* The command line: -f, -P, -d and -v into d, the rest for main. */
static void
agencyd_options(struct agencyd *d, int argc, char *argv[],
    const char **sockpath, int *noaction)
{
	int	 ch;

	while ((ch = getopt(argc, argv, "D:df:nP:s:Vv")) != -1) {
		switch (ch) {
		case 'D':
			if (cmdline_symset(optarg) < 0)
				log_warnx("could not parse macro definition %s",
				    optarg);
			break;
		case 'd':
			d->debug = 1;
			break;
		case 'f':
			d->conffile = optarg;
			break;
		case 'n':
			*noaction = 1;
			break;
		case 'P':
			d->proxy_path = optarg;
			break;
		case 's':
			*sockpath = optarg;
			break;
		case 'V':
			printf("agencyd %s\n", AGENCY_VERSION);
			exit(0);
		case 'v':
			d->verbose++;
			break;
		default:
			usage();
		}
	}
	if (argc > optind)
		usage();
}

/* The configuration, read and checked; with -n, said OK and exit. */
static void
agencyd_configure(struct agencyd *d, const char *sockpath, int noaction)
{
	struct agency_conf	*conf;
	int			 opts;

	opts = (d->verbose ? AGENCYD_OPT_VERBOSE : 0) |
	    (d->verbose > 1 ? AGENCYD_OPT_VERBOSE2 : 0) |
	    (noaction ? AGENCYD_OPT_NOACTION : 0);
	if ((conf = parse_config(d->conffile, opts)) == NULL)
		exit(1);
	if (sockpath != NULL && strlcpy(conf->socket, sockpath,
	    sizeof(conf->socket)) >= sizeof(conf->socket))
		errx(1, "socket path too long");

	if (noaction) {
		if (d->verbose)
			print_config(stdout, conf);
		fprintf(stderr, "configuration OK\n");
		config_free(conf);
		exit(0);
	}
	d->conf = conf;
	keystats_reload(d, conf);
}

/*
 * What can fail before the background, where the operator sees it: the
 * proxy's program, the proxy's user, the control sockets, the listeners.
 */
static void
agencyd_check(struct agencyd *d)
{
	struct agency_conf	*conf = d->conf;

	if (access(d->proxy_path, X_OK) == -1)
		err(1, "%s", d->proxy_path);
	if (getuid() == 0 && getpwnam(conf->user) == NULL)
		errx(1, "unknown user %s", conf->user);
	if (control_check(conf->socket) == -1 ||
	    (conf->rsocket[0] != '\0' && control_check(conf->rsocket) == -1))
		exit(1);
	if (listeners_bind(conf) == -1) {
		listeners_close(conf);
		exit(1);
	}
}

/*
 * The log where lines are seen (a service manager's stderr, or ours
 * when no syslog daemon would take them), then into the background
 * unless a service manager waits for READY=1 and keeps us as its child.
 */
static void
agencyd_background(struct agencyd *d)
{
	int	 tostderr;

	tostderr = d->debug || log_stderr_wanted();
	log_init(tostderr, LOG_DAEMON);
	log_setverbose(d->verbose + d->debug);
	if (!notify_init() && !d->debug)
		agencyd_daemon(tostderr);
}

/* SIGINT, SIGTERM, SIGHUP and SIGCHLD to agencyd_sig, in the loop. */
static void
agencyd_signals(struct agencyd *d)
{
	static struct event	 ev[4];
	static const int	 sigs[4] = { SIGINT, SIGTERM, SIGHUP, SIGCHLD };
	size_t			 i;

	signal(SIGPIPE, SIG_IGN);
	for (i = 0; i < 4; i++) {
		signal_set(&ev[i], sigs[i], agencyd_sig, d);
		signal_add(&ev[i], NULL);
	}
}

/*
 * The control socket, the capabilities given up, the pool and its
 * models, the proxy, the events; then the models that are not lazy
 * start loading.
 */
static void
agencyd_start(struct agencyd *d)
{
	if (control_init(d, d->conf->socket, d->conf->rsocket) == -1)
		fatalx("cannot open the control socket");
	/* Only models with %s need it: they fail to start without it. */
	if (sockdir_init(&d->sockdirs, d->conf->socket, d->conf->user,
	    d->conf->model_user) == -1)
		log_warnx("no directory for the models' sockets: %s",
		    d->sockdirs.why);
	/* What the models write, to the clients that follow it, on the
	 * control socket and through the proxy alike. */
	models_on_line(agencyd_model_line, d);
	if (agencyd_drop_caps() == -1)
		fatalx("cannot give up capabilities");
	if ((d->pool = agencyd_pool(d)) == NULL)
		fatal("pool");
	if (models_setup(d) == -1)
		fatal("models");
	proxysvc_init(d);
	if (proxy_start(d) == -1)
		fatalx("cannot start agency-proxy");
	emit_init(d);
	pool_start(d->pool);
}

/* path made absolute against the working directory, not resolved. */
static char *
agencyd_abspath(const char *path)
{
	char	 cwd[PATH_MAX], *abs;

	if (path[0] == '/')
		abs = strdup(path);
	else if (getcwd(cwd, sizeof(cwd)) == NULL)
		fatal("getcwd");
	else if (asprintf(&abs, "%s/%s", cwd, path) == -1)
		abs = NULL;
	if (abs == NULL)
		fatal("%s", __func__);
	return (abs);
}

/*
 * Into the background.  With the log on stderr, stderr stays what it
 * was (a file, a terminal) and only stdin and stdout go to /dev/null.
 */
static void
agencyd_daemon(int keep_stderr)
{
	int	fd;

	if (daemon(0, keep_stderr) == -1)
		fatal("daemon");
	if (!keep_stderr)
		return;
	if ((fd = open(_PATH_DEVNULL, O_RDWR)) == -1)
		fatal("%s: %s", __func__, _PATH_DEVNULL);
	if (dup2(fd, STDIN_FILENO) == -1 || dup2(fd, STDOUT_FILENO) == -1)
		fatal("%s: dup2", __func__);
	if (fd > STDERR_FILENO)
		close(fd);
}

/*
 * event_dispatch, one turn at a time: in the foreground the log lines
 * of a turn (the proxy's access-log lines, say) go to stderr in one
 * write at its end rather than in one write each.
 */
static void
agencyd_loop(struct event_base *base)
{
	int	 r;

	log_setbuffered(1);
	do {
		r = event_base_loop(base, EVLOOP_ONCE);
		log_flush();
	} while (r == 0 && !event_base_got_exit(base) &&
	    !event_base_got_break(base));
	log_setbuffered(0);
}

static struct pool *
agencyd_pool(struct agencyd *d)
{
	struct pool_settings	ps;

	agencyd_pool_settings(d->conf, &ps);
	return (pool_new(&model_pool_ops, d, &ps));
}

/* A new line of a model (models_on_line), to each side that follows. */
static void
agencyd_model_line(void *arg, const char *model, uint64_t seq,
    const char *line)
{
	struct agencyd	*d = arg;

	control_model_line(model, line);
	proxy_model_line(d, model, seq, line);
}

static void
agencyd_sig(int sig, short event, void *arg)
{
	struct agencyd	*d = arg;

	(void)event;
	switch (sig) {
	case SIGINT:
	case SIGTERM:
		agencyd_shutdown(d);
		break;
	case SIGHUP:
		log_info("SIGHUP: reloading %s", d->conffile);
		(void)agencyd_reload(d, NULL, NULL);
		break;
	case SIGCHLD:
		agencyd_reap(d);
		break;
	default:
		fatalx("unexpected signal %d", sig);
	}
}

static void
agencyd_reap(struct agencyd *d)
{
	pid_t	pid;
	int	status;

	for (;;) {
		pid = waitpid(-1, &status, WNOHANG);
		if (pid == -1) {
			if (errno == EINTR)
				continue;
			if (errno != ECHILD)
				log_warn("%s: waitpid", __func__);
			return;
		}
		if (pid == 0)
			return;
		if (pid == d->proxy_pid)
			proxy_died(d, status);
		else
			models_reaped(d, pid, status);
	}
}

static void
agencyd_shutdown(struct agencyd *d)
{
	if (d->stopping) {
		log_info("still stopping the model processes");
		return;
	}
	log_info("stopping");
	d->stopping = 1;
	notify_stopping();
	emit_stop();
	/* No new connections: the proxy goes first. */
	proxy_stop(d);
	control_close(d);
	pool_stop_all(d->pool, agencyd_shutdown_done, d);
}

static void
agencyd_shutdown_done(void *arg)
{
	struct agencyd	*d = arg;

	sockdir_fini(&d->sockdirs);
	event_loopexit(NULL);
}
