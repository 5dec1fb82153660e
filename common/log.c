#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "log.h"

static int		 log_debug_fg;	/* stderr rather than syslog */
static int		 log_verbose;
static const char	*log_procname;
static log_hook_t	 log_hook;
static log_hook_t	 log_observer;

void
log_init(int n_debug, int facility)
{
	extern char	*__progname;

	log_debug_fg = n_debug;
	log_verbose = n_debug;
	log_procinit(__progname);

	if (!log_debug_fg)
		openlog(__progname, LOG_PID | LOG_NDELAY, facility);

	tzset();
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
		/* A prefix tells the processes apart in one terminal. */
		if (log_procname != NULL)
			fprintf(stderr, "%s: ", log_procname);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
		fflush(stderr);
	} else
		vsyslog(pri, fmt, ap);

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
