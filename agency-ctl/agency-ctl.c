/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl: steer agencyd over its control socket.
 *
 * One request a connection.  The answer is read to its end marker
 * (IMSG_CTL_END, or IMSG_STATUS_END for status); every message in it is
 * checked for its exact size and NUL-terminated strings, and anything
 * else is reported as a broken answer rather than trusted.
 */
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <err.h>
#include <errno.h>
#include <json.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "ctl.h"
#include "imsg.h"
#include "log.h"
#include "proto.h"

#define PROGRESS_MS	100	/* how often the load timer is redrawn */

enum ctl_action {
	CTL_STATUS,
	CTL_LOAD,
	CTL_UNLOAD,
	CTL_CANCEL,
	CTL_RELOAD,
	CTL_LOG,
	CTL_LOGS,
	CTL_PLAN,
};

struct ctl_cmd {
	const char	*name;
	enum ctl_action	 action;
	int		 nargs;		/* operands after the command */
};

static const struct ctl_cmd ctl_cmds[] = {
	{ "cancel",	CTL_CANCEL,	1 },
	{ "load",	CTL_LOAD,	1 },
	{ "log",	CTL_LOG,	1 },
	{ "logs",	CTL_LOGS,	1 },
	{ "plan",	CTL_PLAN,	1 },
	{ "reload",	CTL_RELOAD,	0 },
	{ "status",	CTL_STATUS,	0 },
	{ "unload",	CTL_UNLOAD,	1 },
};

struct ctl {
	const struct ctl_cmd	*cmd;
	const char		*model;
	int			 json;
	int			 wait;		/* load: until ready */
	int			 verbose;	/* log: 2 verbose, 1 brief */

	struct imsgbuf		 ibuf;
	struct ctl_status	 status;
	json_object		*lines;		/* reload's and plan's INFO,
						 * logs -j */
	char			 result[PROTO_MSG_MAX];
	int			 ok;		/* IMSG_CTL_OK came */
	int			 failed;	/* IMSG_CTL_ERROR came */

	int			 progress;	/* drawing the load timer */
	int			 drawn;		/* a timer line is on screen */
	int64_t			 start;		/* ms, monotonic */
};

__dead static void	usage(int);
static const struct ctl_cmd *ctl_lookup(const char *);
static int		ctl_connect(const char *);
static void		ctl_request(struct ctl *);
static int		ctl_dispatch(struct ctl *, struct imsg *);
__dead static void	ctl_done(struct ctl *);
static void		lines_add(struct ctl *, const char *);
static void		lines_print(struct ctl *, FILE *);
static void		lines_json(struct ctl *, const char *);
static void		progress_draw(struct ctl *);
static void		progress_clear(struct ctl *);
__dead static void	broken(struct ctl *, const char *);

__dead static void
usage(int help)
{
	extern char	*__progname;
	FILE		*fp = help ? stdout : stderr;

	fprintf(fp, "usage: %s [-hj] [-s socket] command [argument]\n",
	    __progname);
	fprintf(fp, "commands:\n"
	    "\tstatus\n"
	    "\tload [-n] model\n"
	    "\tunload model\n"
	    "\tcancel model\n"
	    "\treload\n"
	    "\tlog verbose | brief\n"
	    "\tlogs model\n"
	    "\tplan model\n");
	exit(help ? 0 : 1);
}

static int64_t
now_ms(clockid_t clock)
{
	struct timespec	ts;

	if (clock_gettime(clock, &ts) == -1)
		err(1, "clock_gettime");
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

static const struct ctl_cmd *
ctl_lookup(const char *name)
{
	size_t	i;

	for (i = 0; i < sizeof(ctl_cmds) / sizeof(ctl_cmds[0]); i++)
		if (strcmp(ctl_cmds[i].name, name) == 0)
			return (&ctl_cmds[i]);
	return (NULL);
}

int
main(int argc, char *argv[])
{
	struct ctl	 ctl;
	struct imsg	 imsg;
	struct pollfd	 pfd;
	char		 defsock[AGENCY_PATH_MAX];
	const char	*sockpath = NULL;
	ssize_t		 n;
	int		 ch, fd, timeout, done = 0;

	memset(&ctl, 0, sizeof(ctl));
	ctl.wait = 1;

	/* "+": options end at the command, which may have its own. */
	while ((ch = getopt(argc, argv, "+hjs:")) != -1) {
		switch (ch) {
		case 'h':
			usage(1);
		case 'j':
			ctl.json = 1;
			break;
		case 's':
			sockpath = optarg;
			break;
		default:
			usage(0);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		usage(0);
	if ((ctl.cmd = ctl_lookup(argv[0])) == NULL) {
		warnx("unknown command: %s", argv[0]);
		usage(0);
	}

	if (ctl.cmd->action == CTL_LOAD) {
		optreset = 1;
		optind = 1;
		opterr = 0;
		while ((ch = getopt(argc, argv, "+n")) != -1) {
			switch (ch) {
			case 'n':
				ctl.wait = 0;
				break;
			default:
				warnx("load: unknown option -%c", optopt);
				usage(0);
			}
		}
		argc -= optind;
		argv += optind;
	} else {
		argc--;
		argv++;
	}
	if (argc != ctl.cmd->nargs)
		usage(0);

	switch (ctl.cmd->action) {
	case CTL_LOG:
		if (strcmp(argv[0], "verbose") == 0)
			ctl.verbose = 2;
		else if (strcmp(argv[0], "brief") == 0)
			ctl.verbose = 1;
		else {
			warnx("log takes verbose or brief, not %s", argv[0]);
			usage(0);
		}
		break;
	case CTL_LOAD:
	case CTL_UNLOAD:
	case CTL_CANCEL:
	case CTL_LOGS:
	case CTL_PLAN:
		ctl.model = argv[0];
		if (ctl.model[0] == '\0' ||
		    strlen(ctl.model) >= AGENCY_NAME_MAX)
			errx(1, "invalid model name: %s", ctl.model);
		break;
	default:
		break;
	}

	if (sockpath == NULL) {
		if (config_default_socket(defsock, sizeof(defsock)) == -1)
			errx(1, "the default control socket path is too "
			    "long; use -s");
		sockpath = defsock;
	}

	/* A closed socket is an error to report, not a silent death. */
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		err(1, "signal");

	fd = ctl_connect(sockpath);
	imsg_init(&ctl.ibuf, fd);
	ctl_request(&ctl);
	if (imsg_flush(&ctl.ibuf) == -1)
		err(1, "write to %s", sockpath);

	if (ctl.cmd->action == CTL_LOAD && ctl.wait &&
	    isatty(STDOUT_FILENO) && isatty(STDERR_FILENO)) {
		ctl.progress = 1;
		ctl.start = now_ms(CLOCK_MONOTONIC);
	}

	while (!done) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		pfd.revents = 0;
		timeout = ctl.progress ? PROGRESS_MS : -1;
		if (ctl.progress)
			progress_draw(&ctl);
		if ((n = poll(&pfd, 1, timeout)) == -1) {
			if (errno == EINTR)
				continue;
			progress_clear(&ctl);
			err(1, "poll");
		}
		if (n == 0)
			continue;

		if ((n = imsg_read(&ctl.ibuf)) == -1) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			progress_clear(&ctl);
			err(1, "read from %s", sockpath);
		}
		if (n == 0)
			broken(&ctl, "agencyd closed the connection before "
			    "answering");

		while (!done) {
			if ((n = imsg_get(&ctl.ibuf, &imsg)) == -1)
				broken(&ctl, "malformed message from agencyd");
			if (n == 0)
				break;
			done = ctl_dispatch(&ctl, &imsg);
			imsg_free(&imsg);
		}
	}
	close(fd);
	ctl_done(&ctl);
}

/*
 * A user's commands go only to an agencyd of root's or of its own:
 * anyone else who put a socket where it looks (a shared directory, a
 * path given with -s) would read them and could answer anything.  Root
 * may talk to any (a demo run as nobody, say).  The file's owner makes
 * the message; the listener's credentials, which cannot be swapped under
 * us between the check and the connect, decide.
 */
static int
ctl_owner_ok(uid_t uid)
{
	return (uid == 0 || uid == getuid() || getuid() == 0);
}

static int
ctl_connect(const char *path)
{
	struct sockaddr_un	sun;
	struct stat		st;
	struct ucred		cred;
	socklen_t		len = sizeof(cred);
	int			fd;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		errx(1, "socket path too long: %s", path);
	if (stat(path, &st) == 0 && !ctl_owner_ok(st.st_uid))
		errx(1, "%s belongs to uid %u, not to root or you: not "
		    "talking to it", path, (unsigned int)st.st_uid);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(1, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		switch (errno) {
		case ENOENT:
		case ECONNREFUSED:
			errx(1, "cannot connect to %s: %s (is agencyd "
			    "running?)", path, strerror(errno));
		default:
			errx(1, "cannot connect to %s: %s", path,
			    strerror(errno));
		}
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1)
		err(1, "%s: SO_PEERCRED", path);
	if (!ctl_owner_ok(cred.uid))
		errx(1, "%s is served by uid %u, not by root or you: not "
		    "talking to it", path, (unsigned int)cred.uid);
	return (fd);
}

static void
ctl_request(struct ctl *ctl)
{
	struct proto_reqid	 r;
	struct proto_ctl_model	 cm;
	struct proto_ctl_verbose cv;
	uint32_t		 type;
	int			 rv;

	memset(&cm, 0, sizeof(cm));
	if (ctl->model != NULL)
		(void)strlcpy(cm.model, ctl->model, sizeof(cm.model));

	switch (ctl->cmd->action) {
	case CTL_STATUS:
		memset(&r, 0, sizeof(r));
		rv = imsg_compose(&ctl->ibuf, IMSG_STATUS_REQ, 0, 0, -1, &r,
		    sizeof(r));
		break;
	case CTL_LOAD:
	case CTL_UNLOAD:
	case CTL_CANCEL:
	case CTL_LOGS:
	case CTL_PLAN:
		if (ctl->cmd->action == CTL_LOAD) {
			type = IMSG_CTL_LOAD;
			cm.wait = ctl->wait;
		} else if (ctl->cmd->action == CTL_UNLOAD)
			type = IMSG_CTL_UNLOAD;
		else if (ctl->cmd->action == CTL_CANCEL)
			type = IMSG_CTL_CANCEL;
		else if (ctl->cmd->action == CTL_PLAN)
			type = IMSG_CTL_PLAN;
		else
			type = IMSG_CTL_LOGS;
		rv = imsg_compose(&ctl->ibuf, type, 0, 0, -1, &cm,
		    sizeof(cm));
		break;
	case CTL_RELOAD:
		rv = imsg_compose(&ctl->ibuf, IMSG_CTL_RELOAD, 0, 0, -1,
		    NULL, 0);
		break;
	case CTL_LOG:
		memset(&cv, 0, sizeof(cv));
		cv.verbose = ctl->verbose;
		rv = imsg_compose(&ctl->ibuf, IMSG_CTL_VERBOSE, 0, 0, -1,
		    &cv, sizeof(cv));
		break;
	default:
		errx(1, "%s: unknown action", __func__);
	}
	if (rv == -1)
		err(1, "imsg_compose");
}

/* Take one message of the answer; 1 when the answer is complete. */
static int
ctl_dispatch(struct ctl *ctl, struct imsg *imsg)
{
	struct proto_status	 st;
	struct proto_reqid	 r;
	struct proto_ctl_result	 res;
	struct proto_log	 lg;
	enum ctl_action		 action = ctl->cmd->action;

	switch (imsg_get_type(imsg)) {
	case IMSG_STATUS_MODEL:
		if (action != CTL_STATUS)
			broken(ctl, "unexpected message from agencyd");
		if (imsg_get_data(imsg, &st, sizeof(st)) == -1)
			broken(ctl, "malformed status from agencyd");
		if (status_add(&ctl->status, &st) == -1) {
			if (errno == ENOMEM)
				err(1, "status");
			broken(ctl, "malformed status from agencyd");
		}
		return (0);
	case IMSG_STATUS_END:
		if (action != CTL_STATUS ||
		    imsg_get_data(imsg, &r, sizeof(r)) == -1)
			broken(ctl, "unexpected message from agencyd");
		ctl->ok = 1;
		return (1);
	case IMSG_CTL_OK:
	case IMSG_CTL_ERROR:
	case IMSG_CTL_INFO:
		if (imsg_get_data(imsg, &res, sizeof(res)) == -1 ||
		    !PROTO_STROK(res.message))
			broken(ctl, "malformed answer from agencyd");
		if (imsg_get_type(imsg) == IMSG_CTL_INFO) {
			if (action != CTL_RELOAD && action != CTL_PLAN)
				broken(ctl, "unexpected message from agencyd");
			lines_add(ctl, res.message);
			return (0);
		}
		if (ctl->ok || ctl->failed)
			broken(ctl, "agencyd answered twice");
		(void)strlcpy(ctl->result, res.message, sizeof(ctl->result));
		if (imsg_get_type(imsg) == IMSG_CTL_OK)
			ctl->ok = 1;
		else
			ctl->failed = 1;
		/* An error may answer status, on a socket that refuses it. */
		return (0);
	case IMSG_CTL_LOGLINE:
		if (action != CTL_LOGS ||
		    imsg_get_data(imsg, &lg, sizeof(lg)) == -1 ||
		    !PROTO_STROK(lg.line))
			broken(ctl, "malformed log line from agencyd");
		if (ctl->json)
			lines_add(ctl, lg.line);
		else
			show_text(stdout, lg.line);
		return (0);
	case IMSG_CTL_END:
		if (imsg_get_len(imsg) != 0)
			broken(ctl, "malformed answer from agencyd");
		return (1);
	default:
		broken(ctl, "unexpected message from agencyd");
	}
}

/* The whole answer is in: print the outcome and exit. */
__dead static void
ctl_done(struct ctl *ctl)
{
	struct winsize	 ws;
	char		 msg[PROTO_MSG_MAX];
	const char	*errstr;
	long long	 count;
	size_t		 width;

	progress_clear(ctl);

	if (ctl->failed) {
		/* What a failed reload said are its parse errors. */
		lines_print(ctl, stderr);
		show_clean(msg, ctl->result, sizeof(msg));
		errx(1, "%s", msg);
	}

	switch (ctl->cmd->action) {
	case CTL_STATUS:
		if (!ctl->ok)
			broken(ctl, "agencyd ended the status early");
		if (ctl->json) {
			if (show_status_json(stdout, &ctl->status) == -1)
				errx(1, "cannot write the status as JSON");
		} else {
			width = 80;
			if (isatty(STDOUT_FILENO) &&
			    ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 &&
			    ws.ws_col > 0)
				width = ws.ws_col;
			show_status(stdout, &ctl->status,
			    now_ms(CLOCK_REALTIME), width);
		}
		status_clear(&ctl->status);
		break;
	case CTL_LOGS:
		if (ctl->json)
			lines_json(ctl, NULL);
		break;
	case CTL_CANCEL:
		if (!ctl->ok)
			broken(ctl, "agencyd answered without a result");
		count = strtonum(ctl->result, 0, UINT32_MAX, &errstr);
		if (errstr != NULL)
			broken(ctl, "agencyd answered cancel with no count");
		if (ctl->json)
			printf("{ \"cancelled\": %lld }\n", count);
		else
			printf("%s: cancelled %lld request%s\n", ctl->model,
			    count, count == 1 ? "" : "s");
		break;
	case CTL_LOAD:
	case CTL_UNLOAD:
		if (!ctl->ok)
			broken(ctl, "agencyd answered without a result");
		printf("%s: ", ctl->model);
		show_text(stdout, ctl->result);
		break;
	case CTL_PLAN:
		if (!ctl->ok)
			broken(ctl, "agencyd answered without a result");
		if (ctl->json)
			lines_json(ctl, ctl->result);
		else
			lines_print(ctl, stdout);
		break;
	case CTL_RELOAD:
		lines_print(ctl, stdout);
		/* FALLTHROUGH */
	case CTL_LOG:
		if (!ctl->ok)
			broken(ctl, "agencyd answered without a result");
		show_text(stdout, ctl->result);
		break;
	default:
		break;
	}
	if (fflush(stdout) == EOF || ferror(stdout))
		err(1, "stdout");
	exit(0);
}

/* Keep a line of the answer for the end: reload's changes, logs -j. */
static void
lines_add(struct ctl *ctl, const char *line)
{
	if (ctl->lines == NULL &&
	    (ctl->lines = json_object_new_array()) == NULL)
		err(1, "%s", __func__);
	if (json_object_array_length(ctl->lines) >= CTL_LINES_MAX)
		broken(ctl, "too many lines from agencyd");
	if (json_object_array_add(ctl->lines,
	    json_object_new_string(line)) == -1)
		err(1, "%s", __func__);
}

/* {"model": ..., "action": action (unless NULL), "lines": [...]} */
static void
lines_json(struct ctl *ctl, const char *action)
{
	json_object	*o;
	const char	*s;

	if ((o = json_object_new_object()) == NULL ||
	    (ctl->lines == NULL && (ctl->lines =
	    json_object_new_array()) == NULL))
		err(1, "%s", ctl->cmd->name);
	json_object_object_add(o, "model",
	    json_object_new_string(ctl->model));
	if (action != NULL)
		json_object_object_add(o, "action",
		    json_object_new_string(action));
	json_object_object_add(o, "lines", ctl->lines);
	ctl->lines = NULL;
	if ((s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY |
	    JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)) == NULL)
		errx(1, "cannot write the %s as JSON", ctl->cmd->name);
	printf("%s\n", s);
	json_object_put(o);
}

static void
lines_print(struct ctl *ctl, FILE *fp)
{
	json_object	*o;
	size_t		 i, n;

	if (ctl->lines == NULL)
		return;
	n = json_object_array_length(ctl->lines);
	for (i = 0; i < n; i++) {
		o = json_object_array_get_idx(ctl->lines, i);
		show_text(fp, json_object_get_string(o));
	}
	fflush(fp);
}

/* "loading qwen... 3.2s", redrawn in place on the terminal. */
static void
progress_draw(struct ctl *ctl)
{
	int64_t	ms;

	ms = now_ms(CLOCK_MONOTONIC) - ctl->start;
	fprintf(stderr, "\rloading %s... %lld.%llds\033[K", ctl->model,
	    (long long)(ms / 1000), (long long)(ms % 1000 / 100));
	fflush(stderr);
	ctl->drawn = 1;
}

static void
progress_clear(struct ctl *ctl)
{
	if (!ctl->drawn)
		return;
	fprintf(stderr, "\r\033[K");
	fflush(stderr);
	ctl->drawn = 0;
}

__dead static void
broken(struct ctl *ctl, const char *msg)
{
	progress_clear(ctl);
	errx(1, "%s", msg);
}
