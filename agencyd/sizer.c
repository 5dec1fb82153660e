/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A model's figures, read by an unprivileged helper.  See sizer.h.
 * Calls helper.c, modelfile.c and estimate.c (sizing_check).
 *
 * Calls: estimate.c, helper.c, modelfile.c, common/imsg.c,
 * common/log.c.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "helper.h"
#include "log.h"
#include "modelfile.h"
#include "sizer.h"

struct sizer {
	char			 path[PATH_MAX];
	struct helper		*helper;
	off_t			 size;		/* a plain file's; -1 */
	int			 answered;
	int			 have;		/* result holds figures */
	struct sizer_result	 result;
	char			 error[SIZING_ERR_MAX];
	sizer_cb		 cb;
	void			*arg;
};

/* The child's state: its copy of what it was forked with. */
static struct modelfile	 child_files;
static sizer_job	 job_override;

static int	child_setup(void *, char *, size_t);
static int	child_run(void *, struct imsgbuf *);
static int	real_job(const char *, struct imsgbuf *);
static int	on_msg(void *, struct imsg *, char *, size_t);
static void	on_end(void *, const char *);

void
sizer_set_job(sizer_job job)
{
	job_override = job;
}

/* As the model user: open the files (the sandbox has no open). */
static int
child_setup(void *arg, char *why, size_t whylen)
{
	struct sizer	*s = arg;

	return (modelfile_open(s->path, &child_files, why, whylen));
}

static int
real_job(const char *path, struct imsgbuf *ibuf)
{
	struct sizer_result	 r;
	struct stat		 st;
	char			 err[SIZING_ERR_MAX];
	int			 i;

	(void)path;
	memset(&r, 0, sizeof(r));
	if (modelfile_read(&child_files, &r.f, err, sizeof(err)) == -1)
		return (imsg_compose(ibuf, SIZER_MSG_ERROR, 0, 0, -1, err,
		    strlen(err) + 1) == -1);
	for (i = 0; i < child_files.nfd; i++)
		if (fstat(child_files.fd[i], &st) == 0)
			r.bytes += (uint64_t)st.st_size;
	return (imsg_compose(ibuf, SIZER_MSG_FIGURES, 0, 0, -1, &r,
	    sizeof(r)) == -1);
}

static int
child_run(void *arg, struct imsgbuf *ibuf)
{
	struct sizer	*s = arg;

	return ((job_override != NULL ? job_override : real_job)(s->path,
	    ibuf));
}

int
sizer_ask(const char *path, const char *user, int deadline_ms, sizer_cb cb,
    void *arg, struct sizer **sp, char *err, size_t errlen)
{
	struct helper_req	 req;
	struct sizer		*s;
	struct stat		 st;

	*sp = NULL;
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		snprintf(err, errlen, "out of memory");
		return (-1);
	}
	if (strlcpy(s->path, path, sizeof(s->path)) >= sizeof(s->path)) {
		snprintf(err, errlen, "%s: path too long", path);
		free(s);
		return (-1);
	}
	/* Only its size, to hold the child's count to: nothing read. */
	s->size = stat(path, &st) == 0 && S_ISREG(st.st_mode) ?
	    st.st_size : -1;
	s->cb = cb;
	s->arg = arg;
	memset(&req, 0, sizeof(req));
	req.name = "sizer";
	req.user = user;
	req.deadline_ms = deadline_ms > 0 ? deadline_ms : SIZER_DEADLINE_MS;
	req.setup = child_setup;
	req.run = child_run;
	req.arg = s;
	req.on_msg = on_msg;
	req.on_end = on_end;
	req.cbarg = s;
	if (helper_start(&req, &s->helper, err, errlen) == -1) {
		free(s);
		return (-1);
	}
	*sp = s;
	return (0);
}

void
sizer_cancel(struct sizer *s)
{
	helper_cancel(s->helper);
	free(s);
}

/* The child's one message, held to what a reader could have found. */
static int
on_msg(void *arg, struct imsg *imsg, char *why, size_t whylen)
{
	struct sizer	*s = arg;
	uint64_t	 w;
	uint32_t	 i;
	size_t		 n;

	if (s->answered) {
		snprintf(why, whylen, "sent a second answer");
		return (-1);
	}
	s->answered = 1;
	switch (imsg_get_type(imsg)) {
	case SIZER_MSG_FIGURES:
		if (imsg_get_data(imsg, &s->result, sizeof(s->result)) == -1) {
			snprintf(why, whylen, "sent figures of %zu bytes, not "
			    "%zu", imsg_get_len(imsg), sizeof(s->result));
			return (-1);
		}
		if (sizing_check(&s->result.f, s->error,
		    sizeof(s->error)) == -1) {
			snprintf(why, whylen, "sent figures refused: %s",
			    s->error);
			return (-1);
		}
		w = s->result.f.weights_in + s->result.f.weights_out;
		for (i = 0; i < s->result.f.layers; i++)
			w += s->result.f.layer[i].weights;
		if (w > s->result.bytes) {
			snprintf(why, whylen, "sent %llu bytes of weights in "
			    "%llu bytes of files", (unsigned long long)w,
			    (unsigned long long)s->result.bytes);
			return (-1);
		}
		/* A file named: it was read whole (with a split's others). */
		if (s->size != -1 && s->result.bytes < (uint64_t)s->size) {
			snprintf(why, whylen, "read %llu bytes of a file of "
			    "%lld", (unsigned long long)s->result.bytes,
			    (long long)s->size);
			return (-1);
		}
		s->have = 1;
		return (0);
	case SIZER_MSG_ERROR:
		if (imsg_get_string(imsg, s->error, sizeof(s->error)) == -1) {
			snprintf(why, whylen, "sent an error that is not a "
			    "string of %zu bytes at most", sizeof(s->error));
			return (-1);
		}
		for (n = 0; s->error[n] != '\0'; n++)
			if ((unsigned char)s->error[n] < 0x20 ||
			    (unsigned char)s->error[n] >= 0x7f)
				s->error[n] = '?';
		return (0);
	default:
		snprintf(why, whylen, "sent a message of type %#x",
		    imsg_get_type(imsg));
		return (-1);
	}
}

static void
on_end(void *arg, const char *why)
{
	struct sizer	*s = arg;
	char		 msg[PATH_MAX + SIZING_ERR_MAX + HELPER_WHY_MAX];

	if (why == NULL && s->have)
		s->cb(s->arg, &s->result.f, NULL);
	else {
		if (why != NULL)
			snprintf(msg, sizeof(msg), "reading %s: %s", s->path,
			    why);
		else if (s->error[0] != '\0')
			snprintf(msg, sizeof(msg), "reading %s: %s", s->path,
			    s->error);
		else
			snprintf(msg, sizeof(msg), "reading %s: ended without "
			    "figures", s->path);
		log_debug("%s: %s", __func__, msg);
		s->cb(s->arg, NULL, msg);
	}
	free(s);
}
