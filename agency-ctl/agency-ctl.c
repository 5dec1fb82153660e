/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl: steer agencyd over its control socket.
 *
 * One request a connection.  The answer is read to its end marker
 * (IMSG_CTL_END, or IMSG_CTL_STATUS_END for status); every message in
 * it is read whole by proto.c, and anything else is reported as a
 * broken answer rather than trusted.  "logs -f"
 * has no end: it prints each line agencyd sends until it is interrupted
 * or agencyd closes.
 *
 * The exit status says what went wrong (ctl.h, CTL_EXIT_*): the command
 * line, no agencyd to answer, a refusal, or a model that failed.
 *
 * Calls: import.c, show.c, common/config.c, common/imsg.c,
 * common/msg.c, common/proto.c.
 */
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <err.h>
#include <errno.h>
#include <grp.h>
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
#include "import.h"
#include "log.h"
#include "msg.h"
#include "proto.h"
#include "version.h"

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
	CTL_IMPORT,
};

struct ctl_cmd {
	const char	*name;
	enum ctl_action	 action;
	const char	*opts;		/* its options (getopt), -j with them */
	int		 minargs;	/* operands after the command */
	int		 maxargs;
};

static const struct ctl_cmd ctl_cmds[] = {
	{ "cancel",	CTL_CANCEL,	"j",	1, 1 },
	{ "import",	CTL_IMPORT,	"",	2, 2 },
	{ "load",	CTL_LOAD,	"jn",	1, 1 },
	{ "log",	CTL_LOG,	"j",	1, 1 },
	{ "logs",	CTL_LOGS,	"fj",	1, 1 },
	{ "plan",	CTL_PLAN,	"j",	1, 1 },
	{ "reload",	CTL_RELOAD,	"j",	0, 0 },
	{ "status",	CTL_STATUS,	"j",	0, 1 },
	{ "unload",	CTL_UNLOAD,	"j",	1, 1 },
};

struct ctl {
	const struct ctl_cmd	*cmd;
	const char		*model;		/* as given: a name or alias */
	const char		*file;		/* import: the file to read */
	int			 json;
	int			 wait;		/* load: until ready */
	int			 follow;	/* logs -f */
	int			 verbose;	/* log: 2 verbose, 1 brief */

	struct imsgbuf		 ibuf;
	struct ctl_status	 status;
	json_object		*lines;		/* reload's and plan's INFO,
						 * logs -j */
	char			 result[PROTO_MSG_MAX];
	int			 ok;		/* IMSG_CTL_OK came */
	int			 failed;	/* an error came: its status */

	int			 progress;	/* drawing the load timer */
	int			 drawn;		/* a timer line is on screen */
	int64_t			 start;		/* ms, monotonic */
};

__dead static void	usage(int);
static const struct ctl_cmd *ctl_lookup(const char *);
static void		ctl_args(struct ctl *, int, char **);
__dead static void	ctl_import(struct ctl *);
static int		ctl_connect(const char *);
static int		ctl_connect_default(const char *);
static void		ctl_request(struct ctl *);
static int		ctl_dispatch(struct ctl *, struct imsg *);
static void		ctl_follow_line(struct ctl *, const char *);
__dead static void	ctl_done(struct ctl *);
__dead static void	ctl_refused(struct ctl *);
static void		lines_add(struct ctl *, const char *);
static void		lines_print(struct ctl *, FILE *);
static void		lines_json(struct ctl *, const char *);
static void		json_print(json_object *, int);
static void		result_json(struct ctl *, const char *,
			    json_object *);
static int		result_string_json(struct ctl *);
static void		out_flush(void);
static void		progress_draw(struct ctl *);
static void		progress_clear(struct ctl *);
__dead static void	broken(struct ctl *, const char *);

__dead static void
usage(int help)
{
	extern char	*__progname;
	FILE		*fp = help ? stdout : stderr;

	fprintf(fp, "usage: %s [-hjV] [-s socket] command [argument]\n",
	    __progname);
	fprintf(fp, "commands:\n"
	    "\tstatus [model]\n"
	    "\tload [-n] model\n"
	    "\tunload model\n"
	    "\tcancel model\n"
	    "\treload\n"
	    "\tlog verbose | brief\n"
	    "\tlogs [-f] model\n"
	    "\tplan model\n"
	    "\timport llama-swap file\n"
	    "each command but import also takes -j after it\n");
	exit(help ? CTL_EXIT_OK : CTL_EXIT_USAGE);
}

static int64_t
now_ms(clockid_t clock)
{
	struct timespec	ts;

	if (clock_gettime(clock, &ts) == -1)
		err(CTL_EXIT_ERROR, "clock_gettime");
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
	struct pollfd	 pfd[2];
	char		 defsock[AGENCY_PATH_MAX];
	const char	*sockpath = NULL;
	ssize_t		 n;
	int		 ch, fd, timeout, done = 0;

	memset(&ctl, 0, sizeof(ctl));
	ctl.wait = 1;

	/* "+": options end at the command, which may have its own. */
	while ((ch = getopt(argc, argv, "+hjs:V")) != -1) {
		switch (ch) {
		case 'h':
			usage(1);
		case 'j':
			ctl.json = 1;
			break;
		case 's':
			sockpath = optarg;
			break;
		case 'V':
			printf("agency-ctl %s\n", AGENCY_VERSION);
			out_flush();
			exit(CTL_EXIT_OK);
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
	ctl_args(&ctl, argc, argv);
	if (ctl.cmd->action == CTL_IMPORT)
		ctl_import(&ctl);

	/*
	 * Output closed early ("agency-ctl logs m | head"): the end, with
	 * no message, as for any filter.  The socket is written with
	 * MSG_NOSIGNAL: its closing is reported, not a silent death.
	 */
	if (signal(SIGPIPE, SIG_DFL) == SIG_ERR)
		err(CTL_EXIT_ERROR, "signal");

	if (sockpath == NULL) {
		if (config_default_socket(defsock, sizeof(defsock)) == -1)
			errx(CTL_EXIT_UNREACHABLE, "the default control socket "
			    "path is too long; use -s");
		fd = ctl_connect_default(defsock);
	} else
		fd = ctl_connect(sockpath);
	imsg_init(&ctl.ibuf, fd);
	ctl_request(&ctl);
	if (imsg_flush(&ctl.ibuf) == -1)
		err(CTL_EXIT_UNREACHABLE, "cannot send the command to agencyd");

	if (ctl.cmd->action == CTL_LOAD && ctl.wait &&
	    isatty(STDOUT_FILENO) && isatty(STDERR_FILENO)) {
		ctl.progress = 1;
		ctl.start = now_ms(CLOCK_MONOTONIC);
	}

	while (!done) {
		pfd[0].fd = fd;
		pfd[0].events = POLLIN;
		pfd[0].revents = 0;
		/* A follower ends once its reader has, new lines or not. */
		pfd[1].fd = STDOUT_FILENO;
		pfd[1].events = 0;
		pfd[1].revents = 0;
		timeout = ctl.progress ? PROGRESS_MS : -1;
		if (ctl.progress)
			progress_draw(&ctl);
		if ((n = poll(pfd, ctl.follow ? 2 : 1, timeout)) == -1) {
			if (errno == EINTR)
				continue;
			progress_clear(&ctl);
			err(CTL_EXIT_ERROR, "poll");
		}
		if (pfd[1].revents & (POLLERR | POLLHUP))
			exit(CTL_EXIT_OK);
		if (n == 0 || pfd[0].revents == 0)
			continue;

		if ((n = imsg_read(&ctl.ibuf)) == -1) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			progress_clear(&ctl);
			err(CTL_EXIT_UNREACHABLE, "cannot read agencyd's answer");
		}
		if (n == 0)
			broken(&ctl, ctl.follow ? "agencyd closed the "
			    "connection" : "agencyd closed the connection "
			    "before answering");

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
 * The command's own options and its operands, after it: each command
 * takes -j there too, and the options may come after the operands.
 */
static void
ctl_args(struct ctl *ctl, int argc, char **argv)
{
	const struct ctl_cmd	*cmd = ctl->cmd;
	int			 ch, nargs;

	optreset = 1;
	optind = 1;
	opterr = 0;
	while ((ch = getopt(argc, argv, cmd->opts)) != -1) {
		switch (ch) {
		case 'f':
			ctl->follow = 1;
			break;
		case 'j':
			ctl->json = 1;
			break;
		case 'n':
			ctl->wait = 0;
			break;
		default:
			warnx("%s: unknown option -%c", cmd->name, optopt);
			usage(0);
		}
	}
	argc -= optind;
	argv += optind;
	nargs = argc;
	if (nargs < cmd->minargs || nargs > cmd->maxargs)
		usage(0);

	switch (cmd->action) {
	case CTL_IMPORT:
		if (strcmp(argv[0], "llama-swap") != 0) {
			warnx("import takes llama-swap, not %s", argv[0]);
			usage(0);
		}
		ctl->file = argv[1];
		break;
	case CTL_LOG:
		if (strcmp(argv[0], "verbose") == 0)
			ctl->verbose = 2;
		else if (strcmp(argv[0], "brief") == 0)
			ctl->verbose = 1;
		else {
			warnx("log takes verbose or brief, not %s", argv[0]);
			usage(0);
		}
		break;
	case CTL_RELOAD:
		break;
	case CTL_STATUS:
		if (nargs == 0)
			break;
		/* FALLTHROUGH */
	default:	/* load, unload, cancel, logs, plan: on one model */
		ctl->model = argv[0];
		if (ctl->model[0] == '\0' ||
		    strlen(ctl->model) >= AGENCY_NAME_MAX)
			errx(CTL_EXIT_USAGE, "invalid model name: %s",
			    ctl->model);
		break;
	}
}

/*
 * import llama-swap FILE: an agency.conf on standard output, made from
 * llama-swap's configuration (import.c); no agencyd is asked.
 */
__dead static void
ctl_import(struct ctl *ctl)
{
	struct import_opts	o;

	if (ctl->json)
		errx(CTL_EXIT_USAGE, "import writes agency.conf, never JSON");
	import_defaults(&o);
	o.name = ctl->file;
	if (import_llama_swap_file(ctl->file, &o, stdout, stderr) == -1)
		exit(CTL_EXIT_ERROR);
	out_flush();
	exit(CTL_EXIT_OK);
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

/* Connected to path: 0 and *fdp, or the errno of the connect. */
static int
ctl_try(const char *path, int *fdp)
{
	struct sockaddr_un	sun;
	struct stat		st;
	struct ucred		cred;
	socklen_t		len = sizeof(cred);
	int			fd, e;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, path, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		return (ENAMETOOLONG);
	if (stat(path, &st) == 0 && !ctl_owner_ok(st.st_uid))
		errx(CTL_EXIT_UNREACHABLE, "%s belongs to uid %u, not to root "
		    "or you: not talking to it", path, (unsigned int)st.st_uid);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		err(CTL_EXIT_ERROR, "socket");
	if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1) {
		e = errno;
		close(fd);
		return (e);
	}
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == -1)
		err(CTL_EXIT_UNREACHABLE, "%s: SO_PEERCRED", path);
	if (!ctl_owner_ok(cred.uid))
		errx(CTL_EXIT_UNREACHABLE, "%s is served by uid %u, not by root "
		    "or you: not talking to it", path, (unsigned int)cred.uid);
	*fdp = fd;
	return (0);
}

/*
 * The restricted socket an operator puts beside a control socket, as
 * agency.conf(5)'s example does: "/run/agency.sock" has
 * "/run/agency-status.sock".
 */
static void
ctl_rpath(const char *path, char *buf, size_t len)
{
	size_t	n = strlen(path);

	if (n > 5 && strcmp(path + n - 5, ".sock") == 0)
		(void)snprintf(buf, len, "%.*s-status.sock", (int)(n - 5),
		    path);
	else
		(void)snprintf(buf, len, "%s-status", path);
}

/* Who may use path, and the way in for status: the restricted socket. */
static void
ctl_denied(const char *path, char *buf, size_t len)
{
	char		 rpath[AGENCY_PATH_MAX], grp[32];
	struct stat	 st;
	struct group	*gr;

	ctl_rpath(path, rpath, sizeof(rpath));
	if (stat(rpath, &st) == 0 && S_ISSOCK(st.st_mode)) {
		(void)snprintf(buf, len, "any user may ask for the status on "
		    "its restricted socket: agency-ctl -s %s status", rpath);
		return;
	}
	if (stat(path, &st) == 0 && (gr = getgrgid(st.st_gid)) != NULL)
		(void)snprintf(grp, sizeof(grp), "group %s", gr->gr_name);
	else
		(void)snprintf(grp, sizeof(grp), "its group");
	(void)snprintf(buf, len, "only root and the members of %s may use it; "
	    "a restricted socket, such as socket \"%s\" restricted in "
	    "agency.conf, lets any user ask for the status", grp, rpath);
}

/*
 * No agencyd to talk to on path (error e).  own: the user's own socket,
 * which did not exist, when path is the system's tried instead.
 */
__dead static void
ctl_unreachable(const char *path, int e, const char *own)
{
	char	 why[3 * AGENCY_PATH_MAX], where[3 * AGENCY_PATH_MAX];

	if (e == ENAMETOOLONG)
		errx(CTL_EXIT_UNREACHABLE, "socket path too long: %s", path);
	switch (e) {
	case ENOENT:
	case ECONNREFUSED:
		(void)snprintf(why, sizeof(why), "(is agencyd running?)");
		break;
	case EACCES:
	case EPERM:
		ctl_denied(path, why, sizeof(why));
		break;
	default:
		why[0] = '\0';
		break;
	}
	if (own != NULL)
		(void)snprintf(where, sizeof(where), "no agencyd of yours "
		    "answers on %s (%s), and the system's on %s", own,
		    strerror(ENOENT), path);
	else
		(void)snprintf(where, sizeof(where), "cannot connect to %s",
		    path);
	if (why[0] == '\0')
		errx(CTL_EXIT_UNREACHABLE, "%s: %s", where, strerror(e));
	if (why[0] == '(')
		errx(CTL_EXIT_UNREACHABLE, "%s: %s %s", where, strerror(e),
		    why);
	errx(CTL_EXIT_UNREACHABLE, "%s: %s; %s", where, strerror(e), why);
}

static int
ctl_connect(const char *path)
{
	int	fd, e;

	if ((e = ctl_try(path, &fd)) != 0)
		ctl_unreachable(path, e, NULL);
	return (fd);
}

/*
 * The default socket, own.  A user's own agencyd has its socket in the
 * user's directory; when there is none but the system's socket is
 * there, that is the agencyd meant, and it is used.
 */
static int
ctl_connect_default(const char *own)
{
	struct stat	st;
	int		fd, e;

	if ((e = ctl_try(own, &fd)) == 0)
		return (fd);
	if (e != ENOENT || getuid() == 0 || strcmp(own, AGENCY_SOCKET) == 0 ||
	    stat(AGENCY_SOCKET, &st) == -1)
		ctl_unreachable(own, e, NULL);
	if ((e = ctl_try(AGENCY_SOCKET, &fd)) != 0)
		ctl_unreachable(AGENCY_SOCKET, e, own);
	return (fd);
}

/* Queue a message, as proto.c writes it. */
static void
ctl_send(struct ctl *ctl, uint32_t type, const void *data, size_t len)
{
	struct msgw	 w;

	if (proto_write(&w, FROM_CTL, type, data, len) == -1)
		errx(CTL_EXIT_ERROR, "%s: message %u", __func__, type);
	if (msg_compose(&ctl->ibuf, type, 0, -1, &w) == -1)
		err(CTL_EXIT_ERROR, "imsg_compose");
}

static void
ctl_request(struct ctl *ctl)
{
	struct proto_reqid	 r;
	struct proto_ctl_model	 cm;
	struct proto_ctl_verbose cv;
	uint32_t		 type;

	memset(&cm, 0, sizeof(cm));
	if (ctl->model != NULL)
		(void)strlcpy(cm.model, ctl->model, sizeof(cm.model));

	switch (ctl->cmd->action) {
	case CTL_STATUS:
		if (ctl->model != NULL) {
			ctl_send(ctl, IMSG_CTL_STATUS, &cm, sizeof(cm));
			break;
		}
		memset(&r, 0, sizeof(r));
		ctl_send(ctl, IMSG_CTL_STATUS_REQ, &r, sizeof(r));
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
		else if (ctl->follow)
			type = IMSG_CTL_FOLLOW;
		else
			type = IMSG_CTL_LOGS;
		ctl_send(ctl, type, &cm, sizeof(cm));
		break;
	case CTL_RELOAD:
		ctl_send(ctl, IMSG_CTL_RELOAD, NULL, 0);
		break;
	case CTL_LOG:
		memset(&cv, 0, sizeof(cv));
		cv.verbose = ctl->verbose;
		ctl_send(ctl, IMSG_CTL_VERBOSE, &cv, sizeof(cv));
		break;
	default:
		errx(CTL_EXIT_ERROR, "%s: unknown action", __func__);
	}
}

/* A status record of the answer (its models, aliases, memory, keys). */
static void
ctl_status_part(struct ctl *ctl, uint32_t type, const union proto_msg *u)
{
	int	 rv;

	if (ctl->cmd->action != CTL_STATUS)
		broken(ctl, "unexpected message from agencyd");
	switch (type) {
	case IMSG_CTL_STATUS_MODEL:
		rv = status_add(&ctl->status, &u->status);
		break;
	case IMSG_CTL_STATUS_ALIAS:
		rv = status_add_alias(&ctl->status, &u->alias);
		break;
	case IMSG_CTL_STATUS_MEMORY:
		rv = status_set_memory(&ctl->status, &u->memory);
		break;
	default:
		rv = status_add_key(&ctl->status, &u->key_status);
		break;
	}
	if (rv == -1 && errno == ENOMEM)
		err(CTL_EXIT_ERROR, "status");
	if (rv == -1)
		broken(ctl, "malformed status from agencyd");
}

/* The outcome (OK, ERROR, FAILED) or a line to print (INFO). */
static void
ctl_result(struct ctl *ctl, uint32_t type, const char *message)
{
	enum ctl_action	 action = ctl->cmd->action;

	if (type == IMSG_CTL_INFO) {
		if (action != CTL_RELOAD && action != CTL_PLAN)
			broken(ctl, "unexpected message from agencyd");
		lines_add(ctl, message);
		return;
	}
	if (ctl->ok || ctl->failed)
		broken(ctl, "agencyd answered twice");
	(void)strlcpy(ctl->result, message, sizeof(ctl->result));
	if (type == IMSG_CTL_OK)
		ctl->ok = 1;
	else if (type == IMSG_CTL_FAILED && action == CTL_LOAD)
		ctl->failed = CTL_EXIT_FAILED;
	else if (type == IMSG_CTL_FAILED)
		broken(ctl, "unexpected message from agencyd");
	else
		ctl->failed = CTL_EXIT_REFUSED;
	/* An error may answer status, on a socket that refuses it. */
}

/* Take one message of the answer, read whole by proto.c; 1 when the
 * answer is complete. */
static int
ctl_dispatch(struct ctl *ctl, struct imsg *imsg)
{
	union proto_msg		 u;
	const char		*why;
	uint32_t		 type = imsg_get_type(imsg);

	if (proto_read(imsg, FROM_AGENCYD, &u, sizeof(u), &why) == -1)
		broken(ctl, "malformed message from agencyd");
	switch (type) {
	case IMSG_CTL_STATUS_MODEL:
	case IMSG_CTL_STATUS_ALIAS:
	case IMSG_CTL_STATUS_MEMORY:
	case IMSG_CTL_STATUS_KEY:
		ctl_status_part(ctl, type, &u);
		return (0);
	case IMSG_CTL_STATUS_END:
		if (ctl->cmd->action != CTL_STATUS)
			broken(ctl, "unexpected message from agencyd");
		ctl->ok = 1;
		return (1);
	case IMSG_CTL_OK:
	case IMSG_CTL_ERROR:
	case IMSG_CTL_FAILED:
	case IMSG_CTL_INFO:
		ctl_result(ctl, type, u.ctl_result.message);
		return (0);
	case IMSG_CTL_LOGLINE:
		if (ctl->cmd->action != CTL_LOGS)
			broken(ctl, "malformed log line from agencyd");
		if (ctl->follow)
			ctl_follow_line(ctl, u.log.line);
		else if (ctl->json)
			lines_add(ctl, u.log.line);
		else
			show_text(stdout, u.log.line);
		return (0);
	case IMSG_CTL_END:
		return (1);
	default:
		broken(ctl, "unexpected message from agencyd");
	}
}

/* logs -f: each line as it comes (a JSON object a line with -j). */
static void
ctl_follow_line(struct ctl *ctl, const char *line)
{
	json_object	*o;

	if (!ctl->json) {
		show_text(stdout, line);
		out_flush();
		return;
	}
	if ((o = json_object_new_object()) == NULL)
		err(CTL_EXIT_ERROR, "%s", __func__);
	json_object_object_add(o, "model", json_object_new_string(ctl->model));
	json_object_object_add(o, "line", json_object_new_string(line));
	json_print(o, 0);
	out_flush();
}

/*
 * The output is written, or agency-ctl ends: quietly when the reader
 * went away (as with SIGPIPE, should it be ignored), else with an error.
 */
static void
out_flush(void)
{
	if (fflush(stdout) != EOF && !ferror(stdout))
		return;
	if (errno == EPIPE)
		exit(CTL_EXIT_OK);
	err(CTL_EXIT_ERROR, "stdout");
}

/* The whole answer is in: print the outcome and exit. */
__dead static void
ctl_done(struct ctl *ctl)
{
	struct winsize	 ws;
	const char	*errstr;
	long long	 count;
	size_t		 width;

	progress_clear(ctl);

	if (ctl->failed)
		ctl_refused(ctl);

	switch (ctl->cmd->action) {
	case CTL_STATUS:
		if (!ctl->ok)
			broken(ctl, "agencyd ended the status early");
		if (ctl->json) {
			if (show_status_json(stdout, &ctl->status) == -1)
				errx(CTL_EXIT_ERROR, "cannot write the status "
				    "as JSON");
			status_clear(&ctl->status);
			break;
		}
		width = 80;
		if (isatty(STDOUT_FILENO) &&
		    ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 &&
		    ws.ws_col > 0)
			width = ws.ws_col;
		if (ctl->model != NULL)
			show_model(stdout, &ctl->status,
			    now_ms(CLOCK_REALTIME), width);
		else
			show_status(stdout, &ctl->status,
			    now_ms(CLOCK_REALTIME), width);
		status_clear(&ctl->status);
		break;
	case CTL_LOGS:
		if (ctl->follow)
			broken(ctl, "agencyd ended the lines");
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
			result_json(ctl, "cancelled",
			    json_object_new_int64(count));
		else
			printf("%s: cancelled %lld request%s\n", ctl->model,
			    count, count == 1 ? "" : "s");
		break;
	case CTL_LOAD:
	case CTL_UNLOAD:
		if (result_string_json(ctl))
			break;
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
	case CTL_LOG:
		if (result_string_json(ctl))
			break;
		lines_print(ctl, stdout);
		show_text(stdout, ctl->result);
		break;
	default:
		break;
	}
	out_flush();
	exit(CTL_EXIT_OK);
}

/*
 * agencyd said no, or the model failed: the reason on stderr (after
 * what a failed reload said, its parse errors), and with -j also as
 * {"error": ...} on stdout; the exit status tells which.
 */
__dead static void
ctl_refused(struct ctl *ctl)
{
	char	msg[PROTO_MSG_MAX];

	if (ctl->json)
		result_json(ctl, "error", json_object_new_string(ctl->result));
	else
		lines_print(ctl, stderr);
	out_flush();
	show_clean(msg, ctl->result, sizeof(msg));
	errx(ctl->failed, "%s", msg);
}

/* {"model": ... (when one was named), key: value, "lines": [...] (when
 * agencyd sent any)} */
static void
result_json(struct ctl *ctl, const char *key, json_object *value)
{
	json_object	*o;

	if ((o = json_object_new_object()) == NULL)
		err(CTL_EXIT_ERROR, "%s", ctl->cmd->name);
	if (ctl->model != NULL)
		json_object_object_add(o, "model",
		    json_object_new_string(ctl->model));
	json_object_object_add(o, key, value);
	if (ctl->lines != NULL) {
		json_object_object_add(o, "lines", ctl->lines);
		ctl->lines = NULL;
	}
	json_print(o, 1);
}

/* A result that is a string: as {"result": ...} when -j asked for JSON
 * (1), else 0 for the caller to print it.  Without one it is broken. */
static int
result_string_json(struct ctl *ctl)
{
	if (!ctl->ok)
		broken(ctl, "agencyd answered without a result");
	if (!ctl->json)
		return (0);
	result_json(ctl, "result", json_object_new_string(ctl->result));
	return (1);
}

/* Print and free o, pretty or on one line. */
static void
json_print(json_object *o, int pretty)
{
	const char	*s;
	int		 flags = JSON_C_TO_STRING_NOSLASHESCAPE;

	if (pretty)
		flags |= JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED;
	if ((s = json_object_to_json_string_ext(o, flags)) == NULL)
		errx(CTL_EXIT_ERROR, "cannot write JSON");
	printf("%s\n", s);
	json_object_put(o);
}

/* Keep a line of the answer for the end: reload's changes, logs -j. */
static void
lines_add(struct ctl *ctl, const char *line)
{
	if (ctl->lines == NULL &&
	    (ctl->lines = json_object_new_array()) == NULL)
		err(CTL_EXIT_ERROR, "%s", __func__);
	if (json_object_array_length(ctl->lines) >= CTL_LINES_MAX)
		broken(ctl, "too many lines from agencyd");
	if (json_object_array_add(ctl->lines,
	    json_object_new_string(line)) == -1)
		err(CTL_EXIT_ERROR, "%s", __func__);
}

/* {"model": ..., "action": action (unless NULL), "lines": [...]} */
static void
lines_json(struct ctl *ctl, const char *action)
{
	json_object	*o;

	if ((o = json_object_new_object()) == NULL ||
	    (ctl->lines == NULL && (ctl->lines =
	    json_object_new_array()) == NULL))
		err(CTL_EXIT_ERROR, "%s", ctl->cmd->name);
	json_object_object_add(o, "model",
	    json_object_new_string(ctl->model));
	if (action != NULL)
		json_object_object_add(o, "action",
		    json_object_new_string(action));
	json_object_object_add(o, "lines", ctl->lines);
	ctl->lines = NULL;
	json_print(o, 1);
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

/* agencyd went away, or answered what it must not: not to be trusted. */
__dead static void
broken(struct ctl *ctl, const char *msg)
{
	progress_clear(ctl);
	if (ctl->follow)
		out_flush();
	errx(CTL_EXIT_UNREACHABLE, "%s", msg);
}
