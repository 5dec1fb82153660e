/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The log of every program (log.h): lines to stderr (in the journal's
 * form when systemd reads it) or to syslog.
 *
 * Calls: none.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <paths.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

/* Room for the stderr lines of one event-loop turn, usually. */
#define LOG_BUFSIZE	16384

static int		 log_debug_fg;	/* stderr rather than syslog */
static int		 log_journal;	/* stderr is the journal: "<pri>" */
static int		 log_verbose;
static const char	*log_procname;
static log_hook_t	 log_hook;
static log_hook_t	 log_observer;
static int		 log_buffered;	/* stderr lines wait for log_flush */
static int		 log_atexit;	/* log_flush is an atexit handler */
static size_t		 log_buflen;
static char		 log_buf[LOG_BUFSIZE];

static int	 log_bufv(int, const char *, va_list)
		    __attribute__((__format__ (printf, 2, 0)));
static int	 log_bufstr(int, const char *, const char *);
static int	 log_stderr_is_journal(void);

void
log_init(int n_debug, int facility)
{
	extern char	*__progname;

	log_flush();
	log_debug_fg = n_debug;
	log_verbose = n_debug;
	log_journal = n_debug && log_stderr_is_journal();
	log_procinit(__progname);

	if (!log_debug_fg)
		openlog(__progname, LOG_PID | LOG_NDELAY, facility);

	tzset();
}

/*
 * systemd connects stderr to the journal and says so in JOURNAL_STREAM
 * ("DEVICE:INODE" of that stream): a line that starts with "<N>" then
 * has priority N (sd-daemon(3)).
 */
static int
log_stderr_is_journal(void)
{
	struct stat		 st;
	unsigned long long	 dev, ino;
	const char		*s;

	if ((s = getenv("JOURNAL_STREAM")) == NULL ||
	    sscanf(s, "%llu:%llu", &dev, &ino) != 2 ||
	    fstat(STDERR_FILENO, &st) == -1)
		return (0);
	return ((unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino);
}

/*
 * Whether a daemon should log to stderr rather than syslog: when a
 * service manager reads its stderr (systemd's JOURNAL_STREAM and
 * NOTIFY_SOCKET), and when no syslog daemon listens on /dev/log (where
 * syslog(3) would drop every line without a word).
 */
int
log_stderr_wanted(void)
{
	struct sockaddr_un	 sun;
	const char		*s;
	int			 fd, ok;

	if (((s = getenv("JOURNAL_STREAM")) != NULL && *s != '\0') ||
	    ((s = getenv("NOTIFY_SOCKET")) != NULL && *s != '\0'))
		return (1);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlcpy(sun.sun_path, _PATH_LOG, sizeof(sun.sun_path)) >=
	    sizeof(sun.sun_path))
		return (1);
	if ((fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return (1);
	ok = connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	close(fd);
	return (!ok);
}

void
log_procinit(const char *procname)
{
	if (procname != NULL)
		log_procname = procname;
}

void
log_setverbose(int v)
{
	log_verbose = v;
}

int
log_getverbose(void)
{
	return (log_verbose);
}

void
log_sethook(log_hook_t hook)
{
	log_hook = hook;
}

/* Also hand every line to fn (NULL: stop), e.g. to show a reload's
 * errors to the client that asked for it. */
void
log_setobserver(log_hook_t fn)
{
	log_observer = fn;
}

/*
 * A daemon that logs to stderr in the foreground (agencyd -d) may keep
 * its lines here and write them with one write(2) a turn of its event
 * loop: it calls log_flush at the end of every turn, before it forks
 * or waits, and exit flushes too.  Lines still go out in order, whole.
 */
void
log_setbuffered(int on)
{
	if (!on) {
		log_flush();
		log_buffered = 0;
		return;
	}
	/* Without the exit handler a line could be lost: stay unbuffered. */
	if (!log_atexit && atexit(log_flush) == 0)
		log_atexit = 1;
	log_buffered = log_atexit;
}

void
log_flush(void)
{
	struct pollfd	 pfd;
	size_t		 off = 0;
	ssize_t		 n;
	int		 saved_errno = errno;

	while (off < log_buflen) {
		n = write(STDERR_FILENO, log_buf + off, log_buflen - off);
		if (n == -1) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				/* Someone made it non-blocking: wait, as
				 * a blocking stderr would. */
				pfd.fd = STDERR_FILENO;
				pfd.events = POLLOUT;
				if (poll(&pfd, 1, -1) != -1 || errno == EINTR)
					continue;
			}
			break;		/* lost, as stdio would lose them */
		}
		off += n;
	}
	log_buflen = 0;
	errno = saved_errno;
}

/* "<N>" for the journal, or nothing: at most 4 bytes and a NUL. */
static size_t
log_pri_prefix(int pri, char *buf)
{
	if (!log_journal) {
		buf[0] = '\0';
		return (0);
	}
	buf[0] = '<';
	buf[1] = '0' + (LOG_PRI(pri) & 7);
	buf[2] = '>';
	buf[3] = '\0';
	return (3);
}

/* Append "<pri>procname: " and the formatted line with its newline,
 * after a flush if it does not fit; -1 when it would not fit an empty
 * buffer. */
static int
log_bufv(int pri, const char *fmt, va_list ap)
{
	char	 pp[4];
	size_t	 plen, pplen, room;
	va_list	 ap2;
	int	 n, tries;

	pplen = log_pri_prefix(pri, pp);
	plen = pplen + (log_procname != NULL ? strlen(log_procname) + 2 : 0);
	for (tries = 0; tries < 2; tries++) {
		room = sizeof(log_buf) - log_buflen;
		if (plen + 1 < room) {
			memcpy(log_buf + log_buflen, pp, pplen);
			if (log_procname != NULL) {
				memcpy(log_buf + log_buflen + pplen,
				    log_procname, plen - pplen - 2);
				memcpy(log_buf + log_buflen + plen - 2, ": ", 2);
			}
			va_copy(ap2, ap);
			n = vsnprintf(log_buf + log_buflen + plen, room - plen,
			    fmt, ap2);
			va_end(ap2);
			if (n < 0)
				return (-1);
			/* The newline takes the place of the NUL. */
			if ((size_t)n < room - plen) {
				log_buflen += plen + n;
				log_buf[log_buflen++] = '\n';
				return (0);
			}
		}
		if (log_buflen == 0)
			break;
		log_flush();
	}
	return (-1);
}

/* log_bufv of "%s%s", prefix, str. */
static int
log_bufstr(int pri, const char *prefix, const char *str)
{
	char	 pp[4];
	size_t	 plen, pplen, len1, len2;

	pplen = log_pri_prefix(pri, pp);
	plen = log_procname != NULL ? strlen(log_procname) : 0;
	len1 = strlen(prefix);
	len2 = strlen(str);
	/* "<pri>procname: ", prefix, str, newline */
	if (pplen + plen + 2 + len1 + len2 + 1 > sizeof(log_buf))
		return (-1);
	if (pplen + plen + 2 + len1 + len2 + 1 > sizeof(log_buf) - log_buflen)
		log_flush();
	memcpy(log_buf + log_buflen, pp, pplen);
	log_buflen += pplen;
	if (log_procname != NULL) {
		memcpy(log_buf + log_buflen, log_procname, plen);
		log_buflen += plen;
		log_buf[log_buflen++] = ':';
		log_buf[log_buflen++] = ' ';
	}
	memcpy(log_buf + log_buflen, prefix, len1);
	log_buflen += len1;
	memcpy(log_buf + log_buflen, str, len2);
	log_buflen += len2;
	log_buf[log_buflen++] = '\n';
	return (0);
}

void
log_str(int pri, const char *prefix, const char *str)
{
	if (log_buffered && log_debug_fg && log_hook == NULL &&
	    log_observer == NULL && log_bufstr(pri, prefix, str) == 0)
		return;
	logit(pri, "%s%s", prefix, str);
}

void
logit(int pri, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vlog(pri, fmt, ap);
	va_end(ap);
}

void
vlog(int pri, const char *fmt, va_list ap)
{
	char	line[2048];
	int	saved_errno = errno;
	va_list	ap2;

	if (log_observer != NULL) {
		va_copy(ap2, ap);
		(void)vsnprintf(line, sizeof(line), fmt, ap2);
		va_end(ap2);
		log_observer(pri, line);
	}
	if (log_hook != NULL) {
		(void)vsnprintf(line, sizeof(line), fmt, ap);
		log_hook(pri, line);
	} else if (log_debug_fg) {
		if (log_buffered && log_bufv(pri, fmt, ap) == 0)
			goto done;
		log_flush();	/* what is buffered comes first */
		if (log_journal)
			fprintf(stderr, "<%d>", LOG_PRI(pri));
		/* A prefix tells the processes apart in one terminal. */
		if (log_procname != NULL)
			fprintf(stderr, "%s: ", log_procname);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		fflush(stderr);
	} else
		vsyslog(pri, fmt, ap);
 done:
	errno = saved_errno;
}

void
log_warn(const char *emsg, ...)
{
	char	*nfmt;
	va_list	 ap;
	int	 saved_errno = errno;

	va_start(ap, emsg);
	if (emsg == NULL)
		logit(LOG_ERR, "%s", strerror(saved_errno));
	else if (asprintf(&nfmt, "%s: %s", emsg, strerror(saved_errno)) == -1)
		vlog(LOG_ERR, emsg, ap);	/* best effort */
	else {
		vlog(LOG_ERR, nfmt, ap);
		free(nfmt);
	}
	va_end(ap);
	errno = saved_errno;
}

void
log_warnx(const char *emsg, ...)
{
	va_list	ap;

	va_start(ap, emsg);
	vlog(LOG_ERR, emsg, ap);
	va_end(ap);
}

void
log_info(const char *emsg, ...)
{
	va_list	ap;

	va_start(ap, emsg);
	vlog(LOG_INFO, emsg, ap);
	va_end(ap);
}

void
log_debug(const char *emsg, ...)
{
	va_list	ap;

	if (log_verbose > 1) {
		va_start(ap, emsg);
		vlog(LOG_DEBUG, emsg, ap);
		va_end(ap);
	}
}

static __dead void
vfatalc(int code, const char *emsg, va_list ap)
{
	char	 s[1024];
	char	*sep;

	if (emsg != NULL) {
		(void)vsnprintf(s, sizeof(s), emsg, ap);
		sep = ": ";
	} else {
		s[0] = '\0';
		sep = "";
	}
	if (code)
		logit(LOG_CRIT, "fatal in %s: %s%s%s",
		    log_procname ? log_procname : "?", s, sep, strerror(code));
	else
		logit(LOG_CRIT, "fatal in %s%s%s",
		    log_procname ? log_procname : "?", sep, s);
	log_flush();
	exit(1);
}

void
fatal(const char *emsg, ...)
{
	va_list	ap;

	va_start(ap, emsg);
	vfatalc(errno, emsg, ap);
	va_end(ap);
}

void
fatalx(const char *emsg, ...)
{
	va_list	ap;

	va_start(ap, emsg);
	vfatalc(0, emsg, ap);
	va_end(ap);
}
