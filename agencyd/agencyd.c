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
 * The top of agencyd: it calls the files below it (control.c, reload.c,
 * models.c, emit.c, proxylink.c, served.c, notify.c, printconf.c,
 * privdrop.c, parse.y, the pool) and none of them calls it.  The pool
 * reaches models.c through the ops table given here, and a model's
 * lines reach control.c and proxylink.c through the hook set here.
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
	struct agency_conf	*conf;
	struct event		 ev_sigint, ev_sigterm, ev_sighup, ev_sigchld;
	struct event_base	*base;
	const char		*sockpath = NULL;
	char			*conffile = NULL;
	int			 ch, noaction = 0, opts, tostderr;

	memset(&d, 0, sizeof(d));
	TAILQ_INIT(&d.models);
	TAILQ_INIT(&d.draining);
	TAILQ_INIT(&d.probes);
	TAILQ_INIT(&d.keystats);
	d.conffile = CONF_PATH;
	d.proxy_path = PROXY_PATH;

	log_init(1, LOG_DAEMON);	/* stderr until we know better */

	while ((ch = getopt(argc, argv, "D:df:nP:s:Vv")) != -1) {
		switch (ch) {
		case 'D':
			if (cmdline_symset(optarg) < 0)
				log_warnx("could not parse macro definition %s",
				    optarg);
			break;
		case 'd':
			d.debug = 1;
			break;
		case 'f':
			d.conffile = optarg;
			break;
		case 'n':
			noaction = 1;
			break;
		case 'P':
			d.proxy_path = optarg;
			break;
		case 's':
			sockpath = optarg;
			break;
		case 'V':
			printf("agencyd %s\n", AGENCY_VERSION);
			exit(0);
		case 'v':
			d.verbose++;
			break;
		default:
			usage();
		}
	}
	argc -= optind;
	argv += optind;
	if (argc > 0)
		usage();

	opts = (d.verbose ? AGENCYD_OPT_VERBOSE : 0) |
	    (d.verbose > 1 ? AGENCYD_OPT_VERBOSE2 : 0) |
	    (noaction ? AGENCYD_OPT_NOACTION : 0);
	if ((conf = parse_config(d.conffile, opts)) == NULL)
		exit(1);
	if (sockpath != NULL && strlcpy(conf->socket, sockpath,
	    sizeof(conf->socket)) >= sizeof(conf->socket))
		errx(1, "socket path too long");

	if (noaction) {
		if (d.verbose)
			print_config(stdout, conf);
		fprintf(stderr, "configuration OK\n");
		config_free(conf);
		exit(0);
	}
	d.conf = conf;
	keystats_reload(&d, conf);
	/* Reloads read it again from wherever we are by then. */
	d.conffile = conffile = agencyd_abspath(d.conffile);

	if (access(d.proxy_path, X_OK) == -1)
		err(1, "%s", d.proxy_path);
	if (getuid() == 0 && getpwnam(conf->user) == NULL)
		errx(1, "unknown user %s", conf->user);

	/* Fail in the foreground, where the operator can see it. */
	if (control_check(conf->socket) == -1 ||
	    (conf->rsocket[0] != '\0' && control_check(conf->rsocket) == -1))
		exit(1);
	if (listeners_bind(conf) == -1) {
		listeners_close(conf);
		exit(1);
	}

	/* Where lines are seen: a service manager's stderr, or ours when
	 * no syslog daemon would take them. */
	tostderr = d.debug || log_stderr_wanted();
	log_init(tostderr, LOG_DAEMON);
	log_setverbose(d.verbose + d.debug);
	/* A service manager that waits for READY=1 keeps us as its child. */
	if (!notify_init() && !d.debug)
		agencyd_daemon(tostderr);

	if ((base = event_init()) == NULL)
		fatalx("event_init");
	signal(SIGPIPE, SIG_IGN);
	signal_set(&ev_sigint, SIGINT, agencyd_sig, &d);
	signal_set(&ev_sigterm, SIGTERM, agencyd_sig, &d);
	signal_set(&ev_sighup, SIGHUP, agencyd_sig, &d);
	signal_set(&ev_sigchld, SIGCHLD, agencyd_sig, &d);
	signal_add(&ev_sigint, NULL);
	signal_add(&ev_sigterm, NULL);
	signal_add(&ev_sighup, NULL);
	signal_add(&ev_sigchld, NULL);

	if (control_init(&d, conf->socket, conf->rsocket) == -1)
		fatalx("cannot open the control socket");
	/* What the models write, to the clients that follow it, on the
	 * control socket and through the proxy alike. */
	models_on_line(agencyd_model_line, &d);
	if (agencyd_drop_caps() == -1)
		fatalx("cannot give up capabilities");
	if ((d.pool = agencyd_pool(&d)) == NULL)
		fatal("pool");
	if (models_setup(&d) == -1)
		fatal("models");
	proxysvc_init(&d);
	if (proxy_start(&d) == -1)
		fatalx("cannot start agency-proxy");
	emit_init(&d);
	pool_start(d.pool);

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

	(void)d;
	event_loopexit(NULL);
}
