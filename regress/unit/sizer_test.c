/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * sizer.c and helper.c: a model's figures read by a forked child that
 * drops to another user (nobody) and sandboxes itself, on the real tiny
 * GGUFs of ../shared/realserver; and with lying stand-ins in the child's
 * place (sizer_set_job): absurd figures, messages of the wrong size or
 * type, two answers, none, a hang past the deadline, a crash, and calls
 * the sandbox forbids.  Each must end in one callback with no figures
 * and why, with the child reaped and no descriptor left open.  As root
 * (the user switch); the parts that need no switch run as anyone.
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atf-c.h>
#include <dirent.h>
#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "gguf_build.h"
#include "helper.h"
#include "log.h"
#include "modelfile.h"
#include "sizer.h"
#include "testutil.h"

struct answer {
	int			 called;
	int			 ok;
	struct sizing_figures	 f;
	char			 why[PATH_MAX + 512];
};

static void
answered(void *arg, const struct sizing_figures *f, const char *why)
{
	struct answer	*a = arg;

	a->called++;
	a->ok = f != NULL;
	if (f != NULL)
		a->f = *f;
	strlcpy(a->why, why != NULL ? why : "", sizeof(a->why));
}

static void
tick(int fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
}

/* Run the loop until *flag or ms pass; then until no helper is left. */
static void
loop_until(const int *flag, int ms)
{
	struct event	 t;
	struct timeval	 tv = { 0, 20000 };
	int64_t		 end = test_now_ms() + ms;

	evtimer_set(&t, tick, NULL);
	while ((flag == NULL || !*flag) && test_now_ms() < end) {
		evtimer_add(&t, &tv);
		event_loop(EVLOOP_ONCE);
	}
	end = test_now_ms() + 10000;
	while (helper_count() > 0 && test_now_ms() < end) {
		evtimer_add(&t, &tv);
		event_loop(EVLOOP_ONCE);
	}
	evtimer_del(&t);
	ATF_CHECK_EQ_MSG(helper_count(), 0, "a helper was never reaped");
}

/*
 * Ask for path's figures as user with job in the child (NULL: the real
 * reader); check the callback came once, and nothing was left behind.
 */
static void
ask(const char *path, const char *user, int deadline, sizer_job job,
    struct answer *a)
{
	struct sizer	*s;
	char		 err[256];
	int		 before = open_fds(), status;
	pid_t		 pid;

	memset(a, 0, sizeof(*a));
	sizer_set_job(job);
	ATF_REQUIRE_MSG(sizer_ask(path, user, deadline, answered, a, &s, err,
	    sizeof(err)) == 0, "%s", err);
	ATF_REQUIRE_EQ(helper_count(), 1);
	loop_until(&a->called, 30000);
	ATF_REQUIRE_EQ_MSG(a->called, 1, "%d callbacks", a->called);
	ATF_CHECK_EQ_MSG(open_fds(), before, "a descriptor left open");
	/* Reaped already: no child of ours is left. */
	pid = waitpid(-1, &status, WNOHANG);
	ATF_CHECK_MSG(pid == -1 && errno == ECHILD, "a child left: %d",
	    (int)pid);
	sizer_set_job(NULL);
}

static void
setup(void)
{
	log_init(1, LOG_DAEMON);
	log_setverbose(2);
	event_init();
}

/* A directory every user may enter, in /tmp, named in ./dir. */
static const char *
open_dir(void)
{
	static char	 dir[64];
	FILE		*fp;

	strlcpy(dir, "/tmp/agency-sizer.XXXXXX", sizeof(dir));
	ATF_REQUIRE(mkdtemp(dir) != NULL);
	ATF_REQUIRE(chmod(dir, 0755) == 0);
	ATF_REQUIRE((fp = fopen("dir", "w")) != NULL);
	fprintf(fp, "%s\n", dir);
	fclose(fp);
	return (dir);
}

static void
remove_dir(void)
{
	char	 dir[64], cmd[128];
	FILE	*fp;

	if ((fp = fopen("dir", "r")) == NULL)
		return;
	if (fgets(dir, sizeof(dir), fp) != NULL &&
	    strncmp(dir, "/tmp/agency-sizer.", 18) == 0) {
		dir[strcspn(dir, "\n")] = '\0';
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		(void)system(cmd);
	}
	fclose(fp);
}

static void
copy(const char *from, const char *to, mode_t mode)
{
	char	 buf[65536];
	ssize_t	 n;
	int	 in, out;

	ATF_REQUIRE_MSG((in = open(from, O_RDONLY)) != -1, "%s", from);
	ATF_REQUIRE((out = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode)) !=
	    -1);
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ATF_REQUIRE(write(out, buf, n) == n);
	ATF_REQUIRE(n == 0);
	ATF_REQUIRE(fchmod(out, mode) == 0);
	close(in);
	close(out);
}

static void
need_root(void)
{
	if (geteuid() != 0)
		atf_tc_skip("switching users needs root");
	if (getpwnam("nobody") == NULL)
		atf_tc_skip("no user nobody");
}

/* A real tiny model of ../shared/realserver, copied to dir (0644). */
static void
real_copy(const atf_tc_t *tc, const char *name, const char *dir, char *to,
    size_t tolen)
{
	char	 from[PATH_MAX];

	snprintf(from, sizeof(from), "%s/../../../shared/realserver/%s",
	    atf_tc_get_config_var(tc, "srcdir"), name);
	if (access(from, R_OK) == -1)
		atf_tc_skip("no %s (../shared/realserver is absent)", from);
	snprintf(to, tolen, "%s/%s", dir, name);
	copy(from, to, 0644);
}

/* A small GGUF made here, to dir/name with mode. */
static void
crafted(const char *dir, const char *name, mode_t mode, char *to,
    size_t tolen)
{
	struct gb	 b;
	int		 fd;

	gb_head(&b, 3, 1, 3);
	kv_str(&b, "general.architecture", "llama");
	kv_u32(&b, "llama.block_count", 1);
	kv_u32(&b, "llama.attention.head_count", 2);
	tensor(&b, "blk.0.ffn_up.weight", 32, 4, T_F32);
	gb_data(&b);
	snprintf(to, tolen, "%s/%s", dir, name);
	ATF_REQUIRE((fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, mode)) !=
	    -1);
	ATF_REQUIRE(write(fd, b.p, b.len) == (ssize_t)b.len);
	ATF_REQUIRE(fchmod(fd, mode) == 0);
	close(fd);
	free(b.p);
}

/* The figures the reader finds in this process. */
static void
in_process(const char *path, struct sizing_figures *f)
{
	struct modelfile	 m;
	char			 err[SIZING_ERR_MAX];

	ATF_REQUIRE_MSG(modelfile_open(path, &m, err, sizeof(err)) == 0 &&
	    modelfile_read(&m, f, err, sizeof(err)) == 0, "%s", err);
	modelfile_close(&m);
}

ATF_TC_WITH_CLEANUP(real_gguf);
ATF_TC_HEAD(real_gguf, tc)
{
	atf_tc_set_md_var(tc, "descr", "tiny-a and tiny-b read as nobody, "
	    "sandboxed: the figures the reader finds in process");
}
ATF_TC_BODY(real_gguf, tc)
{
	static const char	*names[] = { "tiny-a.gguf", "tiny-b.gguf" };
	struct sizing_figures	 f;
	struct answer		 a;
	char			 path[PATH_MAX];
	const char		*dir;
	size_t			 i;

	need_root();
	setup();
	dir = open_dir();
	for (i = 0; i < 2; i++) {
		real_copy(tc, names[i], dir, path, sizeof(path));
		in_process(path, &f);
		ask(path, "nobody", 0, NULL, &a);
		ATF_CHECK_MSG(a.ok, "%s: %s", names[i], a.why);
		ATF_CHECK_STREQ(a.why, "");
		ATF_CHECK_EQ(a.f.layers, i == 0 ? 2 : 3);
		ATF_CHECK_MSG(memcmp(&a.f, &f, sizeof(f)) == 0,
		    "%s: other figures than in process", names[i]);
	}
}
ATF_TC_CLEANUP(real_gguf, tc)
{
	(void)tc;
	remove_dir();
}

/* The child reads as the user: a file only root may read is refused. */
ATF_TC_WITH_CLEANUP(as_user);
ATF_TC_HEAD(as_user, tc)
{
	atf_tc_set_md_var(tc, "descr", "The child reads as the model user, "
	    "not as root");
}
ATF_TC_BODY(as_user, tc)
{
	struct answer	 a;
	char		 path[PATH_MAX];
	const char	*dir;

	need_root();
	setup();
	dir = open_dir();
	crafted(dir, "m.gguf", 0644, path, sizeof(path));
	ask(path, "nobody", 0, NULL, &a);
	ATF_CHECK_MSG(a.ok, "%s", a.why);
	ATF_CHECK_EQ(a.f.layer[0].weights, 32 * 4 * 4);
	/* Only root may read it: not the child. */
	ATF_REQUIRE(chmod(path, 0600) == 0);
	ask(path, "nobody", 0, NULL, &a);
	ATF_CHECK(!a.ok);
	ATF_CHECK_MATCH("m.gguf: Permission denied", a.why);
	/* As ourselves (root), it is read. */
	ask(path, NULL, 0, NULL, &a);
	ATF_CHECK_MSG(a.ok, "%s", a.why);
	ask("/nonexistent/model.gguf", NULL, 0, NULL, &a);
	ATF_CHECK(!a.ok);
	ATF_CHECK_MATCH("No such file or directory", a.why);
}
ATF_TC_CLEANUP(as_user, tc)
{
	(void)tc;
	remove_dir();
}

/*
 * The stand-ins.  Each runs in the child, sandboxed, in place of the
 * reader: they may only do what the sandbox lets a job do.
 */

static void
good_figures(struct sizer_result *r)
{
	memset(r, 0, sizeof(*r));
	r->f.format = SIZING_GGUF;
	strlcpy(r->f.arch, "llama", sizeof(r->f.arch));
	r->f.layers = 2;
	r->f.heads = 4;
	r->f.layer[0].weights = r->f.layer[1].weights = 1000;
	r->bytes = 1u << 20;
}

static int
job_good(const char *path, struct imsgbuf *ibuf)
{
	struct sizer_result	 r;

	(void)path;
	good_figures(&r);
	return (imsg_compose(ibuf, SIZER_MSG_FIGURES, 0, 0, -1, &r,
	    sizeof(r)) == -1);
}

static int
job_no_layers(const char *path, struct imsgbuf *ibuf)
{
	struct sizer_result	 r;

	(void)path;
	good_figures(&r);
	r.f.layers = 0;
	return (imsg_compose(ibuf, SIZER_MSG_FIGURES, 0, 0, -1, &r,
	    sizeof(r)) == -1);
}

static int
job_past_layers(const char *path, struct imsgbuf *ibuf)
{
	struct sizer_result	 r;

	(void)path;
	good_figures(&r);
	r.f.layer[7].k_width = 99;
	return (imsg_compose(ibuf, SIZER_MSG_FIGURES, 0, 0, -1, &r,
	    sizeof(r)) == -1);
}

static int
job_heavy(const char *path, struct imsgbuf *ibuf)
{
	struct sizer_result	 r;

	(void)path;
	good_figures(&r);
	r.bytes = 1999;		/* less than the weights */
	return (imsg_compose(ibuf, SIZER_MSG_FIGURES, 0, 0, -1, &r,
	    sizeof(r)) == -1);
}

static int
job_short_file(const char *path, struct imsgbuf *ibuf)
{
	struct sizer_result	 r;

	(void)path;
	good_figures(&r);
	r.bytes = 2000;		/* the file named is larger */
	return (imsg_compose(ibuf, SIZER_MSG_FIGURES, 0, 0, -1, &r,
	    sizeof(r)) == -1);
}

static int
job_short(const char *path, struct imsgbuf *ibuf)
{
	struct sizer_result	 r;

	(void)path;
	good_figures(&r);
	return (imsg_compose(ibuf, SIZER_MSG_FIGURES, 0, 0, -1, &r,
	    sizeof(r) - 1) == -1);
}

static int
job_twice(const char *path, struct imsgbuf *ibuf)
{
	return (job_good(path, ibuf) || job_good(path, ibuf));
}

static int
job_flood(const char *path, struct imsgbuf *ibuf)
{
	int	 i;

	for (i = 0; i < 1000; i++) {
		if (job_good(path, ibuf) != 0 || imsg_flush(ibuf) == -1)
			return (0);	/* killed, or the socket closed */
	}
	return (0);
}

static int
job_type(const char *path, struct imsgbuf *ibuf)
{
	(void)path;
	return (imsg_compose(ibuf, 12345, 0, 0, -1, "x", 1) == -1);
}

static int
job_unterminated(const char *path, struct imsgbuf *ibuf)
{
	(void)path;
	return (imsg_compose(ibuf, SIZER_MSG_ERROR, 0, 0, -1, "abc", 3) ==
	    -1);
}

static int
job_error(const char *path, struct imsgbuf *ibuf)
{
	static const char	 e[] = "bad\033[31m file\n";

	(void)path;
	return (imsg_compose(ibuf, SIZER_MSG_ERROR, 0, 0, -1, e,
	    sizeof(e)) == -1);
}

static int
job_nothing(const char *path, struct imsgbuf *ibuf)
{
	(void)path;
	(void)ibuf;
	return (0);
}

static int
job_exit3(const char *path, struct imsgbuf *ibuf)
{
	(void)path;
	(void)ibuf;
	return (3);
}

static int
job_hang(const char *path, struct imsgbuf *ibuf)
{
	(void)path;
	(void)ibuf;
	for (;;)
		(void)poll(NULL, 0, -1);
	return (0);
}

static int
job_abort(const char *path, struct imsgbuf *ibuf)
{
	(void)path;
	(void)ibuf;
	abort();
}

static int
job_open(const char *path, struct imsgbuf *ibuf)
{
	(void)ibuf;
	(void)open(path, O_RDONLY);
	return (job_good(path, ibuf));
}

static int
job_stderr(const char *path, struct imsgbuf *ibuf)
{
	(void)write(2, "x", 1);
	return (job_good(path, ibuf));
}

static int
job_fork(const char *path, struct imsgbuf *ibuf)
{
	if (fork() == 0)
		_exit(0);
	return (job_good(path, ibuf));
}

static int
job_exec_map(const char *path, struct imsgbuf *ibuf)
{
	void	*p;

	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE |
	    MAP_ANONYMOUS, -1, 0);
	(void)p;
	return (job_good(path, ibuf));
}

ATF_TC_WITH_CLEANUP(liars);
ATF_TC_HEAD(liars, tc)
{
	atf_tc_set_md_var(tc, "descr", "A child that lies, hangs, dies or "
	    "breaks out of its sandbox gives no figures, and why");
}
ATF_TC_BODY(liars, tc)
{
	static const struct {
		sizer_job	 job;
		const char	*why;
	} cases[] = {
		{ job_no_layers, "sent figures refused: 0 layers" },
		{ job_past_layers, "refused: layer 7 of 2 is set" },
		{ job_heavy, "sent 2000 bytes of weights in 1999 bytes" },
		{ job_short_file, "read 2000 bytes of a file of" },
		{ job_short, "sent figures of [0-9]+ bytes, not" },
		{ job_twice, "sent a second answer" },
		{ job_flood, "sent a second answer" },
		{ job_type, "sent a message of type 0x3039" },
		{ job_unterminated, "sent an error that is not a string" },
		{ job_error, "reading .*: bad\\?\\[31m file\\?$" },
		{ job_nothing, "ended without figures" },
		{ job_exit3, "exited with 3" },
		{ job_abort, "was killed by SIGABRT" },
		{ job_open, "was killed by SIGSYS" },
		{ job_stderr, "was killed by SIGSYS" },
		{ job_fork, "was killed by SIGSYS" },
		{ job_exec_map, "was killed by SIGSYS" },
	};
	struct answer	 a;
	char		 path[PATH_MAX];
	const char	*dir, *user;
	size_t		 i;

	setup();
	dir = open_dir();
	snprintf(path, sizeof(path), "%s/model.gguf", dir);
	copy("/dev/null", path, 0644);
	ATF_REQUIRE(truncate(path, 4096) == 0);
	user = geteuid() == 0 && getpwnam("nobody") != NULL ? "nobody" :
	    NULL;
	/* The stand-in that tells the truth is believed. */
	ask(path, user, 0, job_good, &a);
	ATF_CHECK_MSG(a.ok, "%s", a.why);
	ATF_CHECK_EQ(a.f.layer[1].weights, 1000);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ask(path, user, 0, cases[i].job, &a);
		ATF_CHECK_MSG(!a.ok, "case %zu: figures taken", i);
		ATF_CHECK_MATCH_MSG(cases[i].why, a.why, "case %zu: \"%s\"",
		    i, a.why);
	}
}
ATF_TC_CLEANUP(liars, tc)
{
	(void)tc;
	remove_dir();
}

/* A child that never answers is killed at its deadline. */
ATF_TC_WITH_CLEANUP(deadline);
ATF_TC_HEAD(deadline, tc)
{
	atf_tc_set_md_var(tc, "descr", "A child that hangs is killed at its "
	    "deadline and reaped");
}
ATF_TC_BODY(deadline, tc)
{
	struct answer	 a;
	char		 path[PATH_MAX];
	const char	*dir;
	int64_t		 t0, took;

	setup();
	dir = open_dir();
	snprintf(path, sizeof(path), "%s/model.gguf", dir);
	copy("/dev/null", path, 0644);
	t0 = test_now_ms();
	ask(path, NULL, 300, job_hang, &a);
	took = test_now_ms() - t0;
	ATF_CHECK(!a.ok);
	ATF_CHECK_MATCH("did not end within 300 ms", a.why);
	/* libevent's timers run on CLOCK_MONOTONIC_COARSE (a 4 ms tick
	 * here): one may fire a tick or two before this precise clock says
	 * 300 ms (297 ms was seen). */
	ATF_CHECK_MSG(took >= 290 && took < 5000, "answered after %lld ms",
	    (long long)took);
}
ATF_TC_CLEANUP(deadline, tc)
{
	(void)tc;
	remove_dir();
}

/* Cancelled: no callback, the child killed and reaped all the same. */
ATF_TC_WITH_CLEANUP(cancel);
ATF_TC_HEAD(cancel, tc)
{
	atf_tc_set_md_var(tc, "descr", "A cancelled reader calls back no "
	    "more, and its child is reaped");
}
ATF_TC_BODY(cancel, tc)
{
	struct sizer	*s;
	struct answer	 a;
	char		 path[PATH_MAX], err[256];
	const char	*dir;
	int		 before, status;
	pid_t		 pid;

	setup();
	dir = open_dir();
	snprintf(path, sizeof(path), "%s/model.gguf", dir);
	copy("/dev/null", path, 0644);
	before = open_fds();
	memset(&a, 0, sizeof(a));
	sizer_set_job(job_hang);
	ATF_REQUIRE_MSG(sizer_ask(path, NULL, 0, answered, &a, &s, err,
	    sizeof(err)) == 0, "%s", err);
	sizer_cancel(s);
	loop_until(NULL, 300);
	ATF_CHECK_EQ(a.called, 0);
	ATF_CHECK_EQ(open_fds(), before);
	pid = waitpid(-1, &status, WNOHANG);
	ATF_CHECK_MSG(pid == -1 && errno == ECHILD, "a child left: %d",
	    (int)pid);
	sizer_set_job(NULL);
}
ATF_TC_CLEANUP(cancel, tc)
{
	(void)tc;
	remove_dir();
}

/* agencyd's SIGCHLD loop may reap a helper first: its end still comes,
 * with the status it hands over. */
ATF_TC_WITH_CLEANUP(reaped_elsewhere);
ATF_TC_HEAD(reaped_elsewhere, tc)
{
	atf_tc_set_md_var(tc, "descr", "A helper reaped by agencyd's own "
	    "loop ends with that status");
}
ATF_TC_BODY(reaped_elsewhere, tc)
{
	struct sizer	*s;
	struct answer	 a;
	char		 path[PATH_MAX], err[256];
	const char	*dir;
	int		 status;
	pid_t		 pid;

	setup();
	dir = open_dir();
	snprintf(path, sizeof(path), "%s/model.gguf", dir);
	copy("/dev/null", path, 0644);
	memset(&a, 0, sizeof(a));
	sizer_set_job(job_exit3);
	ATF_REQUIRE_MSG(sizer_ask(path, NULL, 0, answered, &a, &s, err,
	    sizeof(err)) == 0, "%s", err);
	/* As agencyd_reap does: wait for any child, hand it on. */
	while ((pid = waitpid(-1, &status, 0)) == -1 && errno == EINTR)
		;
	ATF_REQUIRE(pid > 0);
	ATF_CHECK_EQ(helper_reaped(pid, status), 1);
	ATF_CHECK_EQ(helper_reaped(pid + 100000, status), 0);
	loop_until(&a.called, 10000);
	ATF_CHECK_EQ(a.called, 1);
	ATF_CHECK_MATCH("exited with 3", a.why);
	sizer_set_job(NULL);
}
ATF_TC_CLEANUP(reaped_elsewhere, tc)
{
	(void)tc;
	remove_dir();
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, real_gguf);
	ATF_TP_ADD_TC(tp, as_user);
	ATF_TP_ADD_TC(tp, liars);
	ATF_TP_ADD_TC(tp, deadline);
	ATF_TP_ADD_TC(tp, cancel);
	ATF_TP_ADD_TC(tp, reaped_elsewhere);
	return (atf_no_error());
}
