/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * spawn.c: argv and environment building, the ring, exit descriptions,
 * and real children of /bin/sh whose output is drained by a libevent
 * loop that runs until a condition holds or a deadline passes.  Each
 * child runs under its reaper, which the test reaps; the processes a
 * child leaves behind are found by a marker in their environment.
 */
#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atf-c.h>
#include <dirent.h>
#include <grp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <event.h>
#include <pwd.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "spawn.h"

#define DEADLINE	10	/* seconds for any wait on a child */

static char	 err[SPAWN_ERR_MAX];

/* What the children said, in the order the callbacks saw it. */
static struct ring	 seen;
static struct ring	 logged;
static int		 eof;
static int		 timed_out;
static const char	*want;		/* stop the loop on this line */
static int		 got_want;

static void
on_line(void *arg, const char *line)
{
	(void)arg;
	ring_push(&seen, line);
	if (want != NULL && strcmp(line, want) == 0)
		got_want = 1;
}

static void
on_eof(void *arg)
{
	(void)arg;
	eof = 1;
}

static void
on_log(int pri, const char *line)
{
	(void)pri;
	ring_push(&logged, line);
}

static void
on_deadline(int fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;
	timed_out = 1;
}

static void
setup(void)
{
	log_init(1, LOG_DAEMON);
	log_sethook(on_log);
	ATF_REQUIRE(ring_init(&seen, 1000) == 0);
	ATF_REQUIRE(ring_init(&logged, 1000) == 0);
	event_init();
	eof = timed_out = got_want = 0;
	want = NULL;
}

/* Run the loop until *cond or the deadline; returns *cond. */
static int
loop_until(const int *cond)
{
	struct event	 deadline;
	struct timeval	 tv = { DEADLINE, 0 };

	timed_out = 0;
	evtimer_set(&deadline, on_deadline, NULL);
	evtimer_add(&deadline, &tv);
	while (!*cond && !timed_out)
		event_loop(EVLOOP_ONCE);
	evtimer_del(&deadline);
	return (*cond);
}

/* waitpid with a deadline; the status, or fails the test. */
static int
reap(pid_t pid)
{
	struct timespec	 ts = { 0, 10 * 1000 * 1000 };
	time_t		 end = time(NULL) + DEADLINE;
	pid_t		 r;
	int		 status;

	for (;;) {
		r = waitpid(pid, &status, WNOHANG);
		if (r == pid)
			return (status);
		ATF_REQUIRE_MSG(r == 0, "waitpid: %s", strerror(errno));
		if (time(NULL) > end) {
			kill(pid, SIGKILL);
			atf_tc_fail("child %d did not exit in time", (int)pid);
		}
		nanosleep(&ts, NULL);
	}
}

/* Reap a model's reaper: the model's own wait status. */
static int
reap_model(struct spawn_proc *sp)
{
	ATF_REQUIRE(sp->reaper > 0);
	return (spawn_reaped(sp, reap(sp->reaper)));
}

static int
seen_index(const struct ring *r, const char *line)
{
	size_t	 i;

	for (i = 0; i < ring_count(r); i++)
		if (strcmp(ring_get(r, i), line) == 0)
			return ((int)i);
	return (-1);
}

static pid_t
start_sh(const char *script, char **envp, struct spawn_proc *sp,
    struct ring *ring)
{
	char			*argv[] = { "/bin/sh", "-c", NULL, NULL };
	struct spawn_req	 req;
	pid_t			 pid;

	argv[2] = (char *)(uintptr_t)script;
	memset(&req, 0, sizeof(req));
	req.argv = argv;
	req.envp = envp;
	req.label = "m1";
	req.ring = ring;
	req.line_cb = on_line;
	req.eof_cb = on_eof;
	pid = spawn_start(&req, sp, err, sizeof(err));
	ATF_REQUIRE_MSG(pid > 0, "spawn_start: %s", err);
	return (pid);
}

static char **
base_env(void)
{
	char	**envp;

	ATF_REQUIRE_MSG(spawn_env("tester", "/nonexistent", "m1", "5801",
	    NULL, NULL, &envp, err, sizeof(err)) == 0, "spawn_env: %s", err);
	return (envp);
}

/* An environment with SPAWN_TEST_MARK=mark, to find what a child left. */
static char **
mark_env(const char *mark)
{
	struct strlist	 l;
	char		**envp, kv[128];

	TAILQ_INIT(&l);
	snprintf(kv, sizeof(kv), "SPAWN_TEST_MARK=%s", mark);
	ATF_REQUIRE(strlist_add(&l, kv) == 0);
	ATF_REQUIRE_MSG(spawn_env("tester", "/nonexistent", "m1", "5801",
	    NULL, &l, &envp, err, sizeof(err)) == 0, "spawn_env: %s", err);
	strlist_clear(&l);
	return (envp);
}

/* A mark no other test run uses. */
static void
make_mark(char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "%s-%d-%lld", what, (int)getpid(),
	    (long long)time(NULL));
}

/* A field of /proc/pid/stat after the command: 0 the state, 1 ppid. */
static long long
stat_field(pid_t pid, int field)
{
	char		 path[64], buf[512], *p;
	long long	 v;
	ssize_t		 n;
	int		 fd;
	char		 state;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((fd = open(path, O_RDONLY)) == -1)
		return (-1);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return (-1);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL ||
	    sscanf(p + 1, " %c %lld", &state, &v) != 2)
		return (-1);
	return (field == 0 ? state : v);
}

/*
 * The live processes (not zombies) whose environment holds the mark,
 * up to max of them in pids (may be NULL); with comm set, only those
 * whose command is comm.  The count.
 */
static size_t
marked(const char *mark, const char *comm, pid_t *pids, size_t max)
{
	DIR		*d;
	struct dirent	*de;
	char		 path[64], key[128], c[64], *buf;
	const char	*errstr, *e;
	size_t		 found = 0, len = 65536;
	ssize_t		 n, got;
	pid_t		 pid;
	int		 fd;

	snprintf(key, sizeof(key), "SPAWN_TEST_MARK=%s", mark);
	ATF_REQUIRE((buf = malloc(len)) != NULL);
	ATF_REQUIRE((d = opendir("/proc")) != NULL);
	while ((de = readdir(d)) != NULL) {
		pid = strtonum(de->d_name, 1, INT_MAX, &errstr);
		if (errstr != NULL || stat_field(pid, 0) == 'Z')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
		if ((fd = open(path, O_RDONLY)) == -1)
			continue;
		for (got = 0; (size_t)got < len - 1; got += n)
			if ((n = read(fd, buf + got, len - 1 - got)) <= 0)
				break;
		close(fd);
		buf[got] = '\0';
		for (e = buf; e < buf + got; e += strlen(e) + 1)
			if (strcmp(e, key) == 0)
				break;
		if (e >= buf + got)
			continue;
		if (comm != NULL) {
			snprintf(path, sizeof(path), "/proc/%d/comm",
			    (int)pid);
			if ((fd = open(path, O_RDONLY)) == -1)
				continue;
			n = read(fd, c, sizeof(c) - 1);
			close(fd);
			c[n > 0 ? n : 0] = '\0';
			c[strcspn(c, "\n")] = '\0';
			if (strcmp(c, comm) != 0)
				continue;
		}
		if (pids != NULL && found < max)
			pids[found] = pid;
		found++;
	}
	closedir(d);
	free(buf);
	return (found);
}

/* Wait until n processes with the mark run comm; fails at the deadline. */
static void
wait_marked(const char *mark, const char *comm, size_t n)
{
	struct timespec	 ts = { 0, 10 * 1000 * 1000 };
	time_t		 end = time(NULL) + DEADLINE;

	while (marked(mark, comm, NULL, 0) != n) {
		if (time(NULL) > end)
			atf_tc_fail("%zu %s processes with mark %s, not %zu",
			    marked(mark, comm, NULL, 0), comm, mark, n);
		nanosleep(&ts, NULL);
	}
}

static int64_t
now_ms(void)
{
	struct timespec	 ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
}

/* spawn_argv with %p, %u and %m, and no socket. */
static int
argv4(const char *tmpl, const char *port, const char *upstream,
    const char *model, char ***v, char *e, size_t elen)
{
	struct spawn_tokens	 t = { port, NULL, upstream, model };

	return (spawn_argv(tmpl, &t, v, e, elen));
}

ATF_TC_WITHOUT_HEAD(argv_split);
ATF_TC_BODY(argv_split, tc)
{
	char	**v;

	(void)tc;
	ATF_REQUIRE_MSG(argv4("  /bin/x  -a\tb 'c d' \"e \\\" f\" "
	    "g\\ h 'i'\"j\"k \"\" '\\n'  ", "1", "u", "m", &v, err,
	    sizeof(err)) == 0, "%s", err);
	ATF_CHECK_STREQ(v[0], "/bin/x");
	ATF_CHECK_STREQ(v[1], "-a");
	ATF_CHECK_STREQ(v[2], "b");
	ATF_CHECK_STREQ(v[3], "c d");
	ATF_CHECK_STREQ(v[4], "e \" f");
	ATF_CHECK_STREQ(v[5], "g h");
	ATF_CHECK_STREQ(v[6], "ijk");
	ATF_CHECK_STREQ(v[7], "");
	ATF_CHECK_STREQ(v[8], "\\n");	/* single quotes keep backslashes */
	ATF_CHECK(v[9] == NULL);
	spawn_argv_free(v);

	/* A bare name is looked up in PATH by the child. */
	ATF_REQUIRE(argv4("llama-server --port %p", "1", "u", "m", &v,
	    err, sizeof(err)) == 0);
	ATF_CHECK_STREQ(v[0], "llama-server");
	spawn_argv_free(v);
}

ATF_TC_WITHOUT_HEAD(argv_expand);
ATF_TC_BODY(argv_expand, tc)
{
	char	**v;

	(void)tc;
	ATF_REQUIRE_MSG(argv4("/usr/bin/llama-server --host 127.0.0.1 "
	    "--port %p -m %u --alias %m --pct 100%% --x=%p:%m %%p",
	    "5801", "/srv/my models/q 7b.gguf", "qwen", &v, err,
	    sizeof(err)) == 0, "%s", err);
	ATF_CHECK_STREQ(v[0], "/usr/bin/llama-server");
	ATF_CHECK_STREQ(v[4], "5801");
	ATF_CHECK_STREQ(v[5], "-m");
	/* An expansion never splits a word. */
	ATF_CHECK_STREQ(v[6], "/srv/my models/q 7b.gguf");
	ATF_CHECK_STREQ(v[8], "qwen");
	ATF_CHECK_STREQ(v[10], "100%");
	ATF_CHECK_STREQ(v[11], "--x=5801:qwen");
	ATF_CHECK_STREQ(v[12], "%p");
	ATF_CHECK(v[13] == NULL);
	spawn_argv_free(v);

	/* Quotes around an expansion are fine too; a value's quotes stay. */
	ATF_REQUIRE(argv4("/bin/x \"%u\"", "1", "it's \"q\"", "m", &v,
	    err, sizeof(err)) == 0);
	ATF_CHECK_STREQ(v[1], "it's \"q\"");
	ATF_CHECK(v[2] == NULL);
	spawn_argv_free(v);
}

ATF_TC_WITHOUT_HEAD(argv_socket);
ATF_TC_BODY(argv_socket, tc)
{
	struct spawn_tokens	 t = { "5801", "/run/m.x/abc/sock", "/m.gguf",
				    "qwen" };
	char			**v;

	(void)tc;
	ATF_REQUIRE_MSG(spawn_argv("/bin/llama-server --host %s -m %u", &t,
	    &v, err, sizeof(err)) == 0, "%s", err);
	ATF_CHECK_STREQ(v[2], "/run/m.x/abc/sock");
	ATF_CHECK_STREQ(v[4], "/m.gguf");
	spawn_argv_free(v);
	ATF_CHECK(spawn_uses("/bin/x --host %s", 's'));
	ATF_CHECK(!spawn_uses("/bin/x --host %%s --port %p", 's'));
	ATF_CHECK(spawn_uses("/bin/x --host %%s --port %p", 'p'));

	/* Without a socket, %s is an error, not an empty word. */
	t.sock = NULL;
	v = (char **)1;
	ATF_CHECK_EQ(spawn_argv("/bin/x --uds %s", &t, &v, err,
	    sizeof(err)), -1);
	ATF_CHECK(v == NULL);
	ATF_CHECK_MSG(strstr(err, "%s in command has no value") != NULL,
	    "%s", err);
}

static void
argv_fails(const char *tmpl, const char *port, const char *msg)
{
	char	**v = (char **)1;

	err[0] = '\0';
	ATF_CHECK_EQ_MSG(argv4(tmpl, port, "u", "m", &v, err,
	    sizeof(err)), -1, "template [%s] accepted", tmpl);
	ATF_CHECK(v == NULL);
	ATF_CHECK_MSG(strstr(err, msg) != NULL,
	    "template [%s]: error [%s] lacks [%s]", tmpl, err, msg);
}

ATF_TC_WITHOUT_HEAD(argv_errors);
ATF_TC_BODY(argv_errors, tc)
{
	(void)tc;
	argv_fails("/bin/x --port %x", "1", "unknown %x");
	argv_fails("/bin/x --port %P", "1", "unknown %P");
	argv_fails("/bin/x 100%", "1", "trailing %");
	argv_fails("/bin/x 'abc", "1", "unterminated single quote");
	argv_fails("/bin/x \"abc", "1", "unterminated double quote");
	argv_fails("/bin/x \"abc\\\"", "1", "unterminated double quote");
	argv_fails("/bin/x abc\\", "1", "trailing backslash");
	argv_fails("", "1", "empty command");
	argv_fails(" \t\n ", "1", "empty command");
	argv_fails("./llama-server", "1", "./llama-server");
	argv_fails("'' -x", "1", "neither an absolute path");
	argv_fails("/bin/x --port %p", NULL, "%p");
}

static const char *
env_get(char **envp, const char *name)
{
	size_t	 n = strlen(name);

	for (; *envp != NULL; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			return (*envp + n + 1);
	return (NULL);
}

static int
env_count(char **envp, const char *name)
{
	size_t	 n = strlen(name);
	int	 c = 0;

	for (; *envp != NULL; envp++)
		if (strncmp(*envp, name, n) == 0 && (*envp)[n] == '=')
			c++;
	return (c);
}

ATF_TC_WITHOUT_HEAD(env_precedence);
ATF_TC_BODY(env_precedence, tc)
{
	struct strlist	 rt, md, bad;
	char		**e;

	(void)tc;
	TAILQ_INIT(&rt);
	TAILQ_INIT(&md);
	TAILQ_INIT(&bad);
	ATF_REQUIRE(strlist_add(&rt, "HF_HUB_OFFLINE=1") == 0);
	ATF_REQUIRE(strlist_add(&rt, "LANG=en_US.UTF-8") == 0);
	ATF_REQUIRE(strlist_add(&rt, "SHARED=runtime") == 0);
	ATF_REQUIRE(strlist_add(&md, "SHARED=model") == 0);
	ATF_REQUIRE(strlist_add(&md, "CUDA_VISIBLE_DEVICES=") == 0);
	ATF_REQUIRE(strlist_add(&md, "AGENCY_PORT=9") == 0);
	ATF_REQUIRE(setenv("SPAWN_TEST_SECRET", "leak", 1) == 0);

	ATF_REQUIRE_MSG(spawn_env("_agencym", "/var/empty", "qwen", "5801",
	    &rt, &md, &e, err, sizeof(err)) == 0, "%s", err);
	ATF_CHECK_STREQ(env_get(e, "PATH"), SPAWN_PATH);
	ATF_CHECK_STREQ(env_get(e, "HOME"), "/var/empty");
	ATF_CHECK_STREQ(env_get(e, "USER"), "_agencym");
	ATF_CHECK_STREQ(env_get(e, "LOGNAME"), "_agencym");
	ATF_CHECK_STREQ(env_get(e, "AGENCY_EXIT_WITH_PARENT"), "1");
	ATF_CHECK_STREQ(env_get(e, "AGENCY_MODEL"), "qwen");
	ATF_CHECK_STREQ(env_get(e, "HF_HUB_OFFLINE"), "1");
	/* The runtime over the defaults, the model over the runtime. */
	ATF_CHECK_STREQ(env_get(e, "LANG"), "en_US.UTF-8");
	ATF_CHECK_STREQ(env_get(e, "SHARED"), "model");
	ATF_CHECK_STREQ(env_get(e, "AGENCY_PORT"), "9");
	ATF_CHECK_STREQ(env_get(e, "CUDA_VISIBLE_DEVICES"), "");
	ATF_CHECK_EQ(env_count(e, "SHARED"), 1);
	ATF_CHECK_EQ(env_count(e, "AGENCY_PORT"), 1);
	ATF_CHECK_EQ(env_count(e, "LANG"), 1);
	/* Nothing of ours leaks in. */
	ATF_CHECK(env_get(e, "SPAWN_TEST_SECRET") == NULL);
	spawn_argv_free(e);

	/* Without user and lists: the defaults alone. */
	ATF_REQUIRE(spawn_env(NULL, NULL, "m", "1", NULL, NULL, &e, err,
	    sizeof(err)) == 0);
	ATF_CHECK(env_get(e, "HOME") == NULL);
	ATF_CHECK(env_get(e, "USER") == NULL);
	ATF_CHECK_STREQ(env_get(e, "LANG"), "C.UTF-8");
	spawn_argv_free(e);

	ATF_REQUIRE(strlist_add(&bad, "NOEQUALS") == 0);
	ATF_CHECK_EQ(spawn_env(NULL, NULL, "m", "1", NULL, &bad, &e, err,
	    sizeof(err)), -1);
	ATF_CHECK(strstr(err, "NOEQUALS") != NULL);
	ATF_CHECK(e == NULL);
	strlist_clear(&bad);
	ATF_REQUIRE(strlist_add(&bad, "=value") == 0);
	ATF_CHECK_EQ(spawn_env(NULL, NULL, "m", "1", &bad, NULL, &e, err,
	    sizeof(err)), -1);
	strlist_clear(&bad);
	strlist_clear(&rt);
	strlist_clear(&md);
}

ATF_TC_WITHOUT_HEAD(ring_wrap);
ATF_TC_BODY(ring_wrap, tc)
{
	struct ring	 r;
	char		 line[32];
	int		 i;

	(void)tc;
	ATF_REQUIRE(ring_init(&r, SPAWN_RING_LINES) == 0);
	ATF_CHECK_EQ(ring_count(&r), 0);
	ATF_CHECK(ring_get(&r, 0) == NULL);
	for (i = 0; i < 150; i++) {
		snprintf(line, sizeof(line), "line %d", i);
		ring_push(&r, line);
	}
	ATF_CHECK_EQ(ring_count(&r), 150);
	ATF_CHECK_STREQ(ring_get(&r, 0), "line 0");
	ATF_CHECK_STREQ(ring_get(&r, 149), "line 149");
	for (; i < 450; i++) {
		snprintf(line, sizeof(line), "line %d", i);
		ring_push(&r, line);
	}
	/* The newest 200, oldest first. */
	ATF_REQUIRE_EQ(ring_count(&r), 200);
	for (i = 0; i < 200; i++) {
		snprintf(line, sizeof(line), "line %d", 250 + i);
		ATF_CHECK_STREQ(ring_get(&r, i), line);
	}
	ATF_CHECK(ring_get(&r, 200) == NULL);
	/* each line's number: 251 to 450 */
	ATF_CHECK_EQ(ring_seq(&r, 0), 251);
	ATF_CHECK_EQ(ring_seq(&r, 199), 450);
	ring_clear(&r);
	ATF_CHECK_EQ(ring_count(&r), 0);
	/* the numbers go on across a clear */
	ring_push(&r, "again");
	ATF_CHECK_EQ(ring_count(&r), 1);
	ATF_CHECK_STREQ(ring_get(&r, 0), "again");
	ATF_CHECK_EQ(ring_seq(&r, 0), 451);
	ATF_CHECK_EQ(r.pushed, 451);
	ring_free(&r);
	ring_free(&r);
}

ATF_TC_WITHOUT_HEAD(describe_exit);
ATF_TC_BODY(describe_exit, tc)
{
	char	 buf[64];
	pid_t	 pid;

	(void)tc;
	if ((pid = fork()) == 0)
		_exit(3);
	ATF_REQUIRE(pid > 0);
	spawn_describe_exit(reap(pid), buf, sizeof(buf));
	ATF_CHECK_STREQ(buf, "exited with 3");

	if ((pid = fork()) == 0) {
		pause();
		_exit(0);
	}
	ATF_REQUIRE(pid > 0);
	ATF_REQUIRE(kill(pid, SIGKILL) == 0);
	spawn_describe_exit(reap(pid), buf, sizeof(buf));
	ATF_CHECK_STREQ(buf, "was killed by SIGKILL");

	/* Statuses as the kernel encodes them. */
	spawn_describe_exit(0, buf, sizeof(buf));
	ATF_CHECK_STREQ(buf, "exited with 0");
	spawn_describe_exit(SIGTERM, buf, sizeof(buf));
	ATF_CHECK_STREQ(buf, "was killed by SIGTERM");
	spawn_describe_exit(SIGSEGV | 0x80, buf, sizeof(buf));
	ATF_CHECK_STREQ(buf, "was killed by SIGSEGV (core dumped)");
}

ATF_TC_WITHOUT_HEAD(addr_in_use);
ATF_TC_BODY(addr_in_use, tc)
{
	(void)tc;
	ATF_CHECK(spawn_line_addr_in_use("error: Address already in use"));
	ATF_CHECK(spawn_line_addr_in_use("listen tcp 127.0.0.1:5800: bind: "
	    "address already in use"));
	ATF_CHECK(spawn_line_addr_in_use("Error: listen EADDRINUSE: "
	    "address already in use :::5800"));
	ATF_CHECK(spawn_line_addr_in_use("main: couldn't bind HTTP server "
	    "socket, hostname: 127.0.0.1, port: 5800"));
	ATF_CHECK(spawn_line_addr_in_use("ERROR:    [Errno 98] error while "
	    "attempting to bind on address ('127.0.0.1', 5800)"));
	ATF_CHECK(spawn_line_addr_in_use("bind failed"));
	ATF_CHECK(!spawn_line_addr_in_use("server listening on 127.0.0.1"));
	ATF_CHECK(!spawn_line_addr_in_use("loading model"));
	ATF_CHECK(!spawn_line_addr_in_use(""));
}

ATF_TC_WITHOUT_HEAD(spawn_output);
ATF_TC_BODY(spawn_output, tc)
{
	struct spawn_proc	 sp;
	struct ring		 r, outs, errs;
	char			**envp, x1024[SPAWN_LINE_MAX + 1], x452[453];
	pid_t			 pid;
	size_t			 i;

	(void)tc;
	setup();
	ATF_REQUIRE(ring_init(&r, SPAWN_RING_LINES) == 0);
	envp = base_env();
	pid = start_sh(
	    "echo out1; echo err1 >&2; echo out2; echo err2 >&2; "
	    "head -c 2500 /dev/zero | tr '\\0' x; echo; "
	    "printf 'crlf\\r\\n'; printf 'esc\\033[0m\\n'; "
	    "echo out3; printf 'last-no-newline'", envp, &sp, &r);
	ATF_CHECK_EQ(sp.pid, pid);
	ATF_REQUIRE_MSG(loop_until(&eof), "no EOF before the deadline");
	ATF_CHECK_EQ(reap_model(&sp), 0);
	spawn_close(&sp);

	/* Each stream in its own order; the last line flushed at EOF. */
	/*
	 * Each stream in its own order (how the two interleave is up to
	 * the scheduler); the last line flushed at EOF; 2500 x cut at
	 * 1024, 1024, then the 452 left.
	 */
	ATF_REQUIRE(ring_init(&outs, 100) == 0);
	ATF_REQUIRE(ring_init(&errs, 100) == 0);
	for (i = 0; i < ring_count(&seen); i++)
		ring_push(strncmp(ring_get(&seen, i), "err", 3) == 0 ?
		    &errs : &outs, ring_get(&seen, i));
	memset(x1024, 'x', SPAWN_LINE_MAX);
	x1024[SPAWN_LINE_MAX] = '\0';
	memset(x452, 'x', 452);
	x452[452] = '\0';
	{
		const char	*want_out[] = { "out1", "out2", x1024, x1024,
		    x452, "crlf", "esc?[0m", "out3", "last-no-newline" };
		const char	*want_err[] = { "err1", "err2" };

		ATF_CHECK_EQ(ring_count(&outs), 9);
		for (i = 0; i < 9 && i < ring_count(&outs); i++)
			ATF_CHECK_STREQ_MSG(ring_get(&outs, i), want_out[i],
			    "stdout line %zu", i);
		ATF_CHECK_EQ(ring_count(&errs), 2);
		for (i = 0; i < 2 && i < ring_count(&errs); i++)
			ATF_CHECK_STREQ(ring_get(&errs, i), want_err[i]);
	}
	ring_free(&outs);
	ring_free(&errs);

	/* The model's ring holds the same lines; the log has the label. */
	ATF_CHECK_EQ(ring_count(&r), ring_count(&seen));
	for (i = 0; i < ring_count(&r); i++)
		ATF_CHECK_STREQ(ring_get(&r, i), ring_get(&seen, i));
	ATF_CHECK(seen_index(&logged, "m1: out1") >= 0);
	ATF_CHECK(seen_index(&logged, "m1: err2") >= 0);
	ATF_CHECK(seen_index(&logged, "m1: last-no-newline") >= 0);

	/* The ring outlives the process record. */
	memset(&sp, 0xa5, sizeof(sp));
	ATF_CHECK(seen_index(&r, "last-no-newline") >= 0);
	ring_free(&r);
	spawn_argv_free(envp);
}

ATF_TC_WITHOUT_HEAD(spawn_pgrp_env_stdin);
ATF_TC_BODY(spawn_pgrp_env_stdin, tc)
{
	struct spawn_proc	 sp;
	char			**envp;
	pid_t			 pid;

	(void)tc;
	setup();
	ATF_REQUIRE(setenv("SPAWN_TEST_SECRET", "leak", 1) == 0);
	envp = base_env();
	/* The child blocks on stdin until we close our end. */
	pid = start_sh("env; echo ENV-DONE; cat >/dev/null; echo stdin-eof",
	    envp, &sp, NULL);

	/* Its own session and process group, set up before exec. */
	ATF_CHECK_EQ(getpgid(pid), pid);
	ATF_CHECK_EQ(getsid(pid), pid);

	want = "ENV-DONE";
	ATF_REQUIRE_MSG(loop_until(&got_want), "no ENV-DONE in time");
	ATF_CHECK(seen_index(&seen, "AGENCY_EXIT_WITH_PARENT=1") >= 0);
	ATF_CHECK(seen_index(&seen, "AGENCY_MODEL=m1") >= 0);
	ATF_CHECK(seen_index(&seen, "AGENCY_PORT=5801") >= 0);
	ATF_CHECK(seen_index(&seen, "PATH=" SPAWN_PATH) >= 0);
	ATF_CHECK(seen_index(&seen, "SPAWN_TEST_SECRET=leak") == -1);
	ATF_CHECK(seen_index(&seen, "stdin-eof") == -1);
	/* Still waiting on stdin, under its reaper. */
	ATF_CHECK_EQ(waitpid(sp.reaper, NULL, WNOHANG), 0);
	ATF_CHECK(kill(pid, 0) == 0);

	close(sp.stdin_fd);
	sp.stdin_fd = -1;
	ATF_REQUIRE_MSG(loop_until(&eof), "no EOF after closing stdin");
	ATF_CHECK(seen_index(&seen, "stdin-eof") >= 0);
	ATF_CHECK_EQ(reap_model(&sp), 0);
	spawn_close(&sp);
	spawn_argv_free(envp);
}

ATF_TC_WITHOUT_HEAD(spawn_drain_at_close);
ATF_TC_BODY(spawn_drain_at_close, tc)
{
	struct spawn_proc	 sp;
	struct ring		 r;
	char			**envp;
	pid_t			 pid;

	(void)tc;
	setup();
	ATF_REQUIRE(ring_init(&r, SPAWN_RING_LINES) == 0);
	envp = base_env();
	/* The loop never runs: spawn_close() must read what is left. */
	pid = start_sh("i=0; while [ $i -lt 300 ]; do echo line $i; "
	    "i=$((i+1)); done; printf tail", envp, &sp, &r);
	ATF_CHECK(pid > 0);
	ATF_CHECK_EQ(reap_model(&sp), 0);
	spawn_close(&sp);
	ATF_CHECK_EQ(ring_count(&r), 200);
	ATF_CHECK_STREQ(ring_get(&r, 0), "line 101");
	ATF_CHECK_STREQ(ring_get(&r, 198), "line 299");
	ATF_CHECK_STREQ(ring_get(&r, 199), "tail");
	ATF_CHECK_EQ(sp.out.fd, -1);
	ATF_CHECK_EQ(sp.err.fd, -1);
	ATF_CHECK_EQ(sp.stdin_fd, -1);
	spawn_close(&sp);		/* twice is harmless */
	ring_free(&r);
	spawn_argv_free(envp);
}

ATF_TC_WITHOUT_HEAD(spawn_exec_missing);
ATF_TC_BODY(spawn_exec_missing, tc)
{
	char			*argv1[] = { "/nonexistent/agency-model", NULL };
	char			*argv2[] = { "agency-no-such-program", NULL };
	char			*argv3[] = { "/dev/null", NULL };
	struct spawn_req	 req;
	struct spawn_proc	 sp;
	char			**envp;

	(void)tc;
	setup();
	envp = base_env();
	memset(&req, 0, sizeof(req));
	req.envp = envp;
	req.label = "m1";

	req.argv = argv1;
	ATF_CHECK_EQ(spawn_start(&req, &sp, err, sizeof(err)), -1);
	ATF_CHECK_MSG(strstr(err, "/nonexistent/agency-model") != NULL &&
	    strstr(err, strerror(ENOENT)) != NULL, "err: %s", err);

	/* Looked up in PATH, not found anywhere. */
	req.argv = argv2;
	ATF_CHECK_EQ(spawn_start(&req, &sp, err, sizeof(err)), -1);
	ATF_CHECK_MSG(strstr(err, "agency-no-such-program") != NULL &&
	    strstr(err, strerror(ENOENT)) != NULL, "err: %s", err);

	req.argv = argv3;
	ATF_CHECK_EQ(spawn_start(&req, &sp, err, sizeof(err)), -1);
	ATF_CHECK_MSG(strstr(err, "/dev/null") != NULL &&
	    strstr(err, strerror(EACCES)) != NULL, "err: %s", err);

	req.argv = argv1;
	req.user = "agency-no-such-user";
	ATF_CHECK_EQ(spawn_start(&req, &sp, err, sizeof(err)), -1);
	ATF_CHECK_MSG(strstr(err, "agency-no-such-user") != NULL,
	    "err: %s", err);

	/* The failed children were reaped; nothing is left over. */
	ATF_CHECK_EQ(waitpid(-1, NULL, WNOHANG), -1);
	ATF_CHECK_EQ(errno, ECHILD);
	spawn_argv_free(envp);
}

ATF_TC_WITHOUT_HEAD(spawn_user);
ATF_TC_BODY(spawn_user, tc)
{
	char			*argv[] = { "/bin/sh", "-c",
	    "echo uid=$(id -u) gid=$(id -g) groups=$(id -G); "
	    "grep -E '^(Uid|Gid|Groups):' /proc/self/status", NULL };
	struct spawn_req	 req;
	struct spawn_proc	 sp;
	struct passwd		*pw;
	char			**envp, line[128];
	gid_t			 ours[] = { 0, 4 };
	pid_t			 pid;

	(void)tc;
	if (geteuid() != 0)
		atf_tc_skip("switching users needs root");
	if ((pw = getpwnam("nobody")) == NULL)
		atf_tc_skip("no user nobody");
	/* Groups of our own that the child must not keep. */
	ATF_REQUIRE(setgroups(2, ours) == 0);
	setup();
	envp = base_env();
	memset(&req, 0, sizeof(req));
	req.argv = argv;
	req.envp = envp;
	req.user = "nobody";
	req.label = "m1";
	req.line_cb = on_line;
	req.eof_cb = on_eof;
	ATF_REQUIRE_MSG((pid = spawn_start(&req, &sp, err, sizeof(err))) > 0,
	    "%s", err);
	ATF_REQUIRE(loop_until(&eof));
	ATF_CHECK(pid > 0);
	ATF_CHECK_EQ(reap_model(&sp), 0);
	spawn_close(&sp);
	/* Supplementary groups are nobody's own, not root's. */
	snprintf(line, sizeof(line), "uid=%u gid=%u groups=%u",
	    (unsigned)pw->pw_uid, (unsigned)pw->pw_gid,
	    (unsigned)pw->pw_gid);
	ATF_CHECK_MSG(seen_index(&seen, line) >= 0, "no line [%s]", line);
	spawn_argv_free(envp);
}

ATF_TC_WITHOUT_HEAD(spawn_pdeathsig);
ATF_TC_BODY(spawn_pdeathsig, tc)
{
	/*
	 * A model with a worker that ignores SIGTERM and one that left
	 * its session and its parent (setsid, double fork); neither
	 * reads stdin.
	 */
	char			*argv[] = { "/bin/sh", "-c",
	    "(trap '' TERM; exec sleep 1000) & "
	    "setsid sh -c '(exec sleep 1000 </dev/null) &'; "
	    "exec sleep 1000", NULL };
	struct spawn_req	 req;
	struct spawn_proc	 sp;
	char			 mark[64], **envp;
	pid_t			 mid, pids[2];
	int			 p[2];

	(void)tc;
	make_mark(mark, sizeof(mark), "pdeath");
	envp = mark_env(mark);
	/* Orphans come to us, so we can reap the reaper. */
	ATF_REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
	ATF_REQUIRE(pipe(p) == 0);
	if ((mid = fork()) == 0) {
		/* A stand-in agencyd that starts a model and dies. */
		close(p[0]);
		event_init();
		memset(&req, 0, sizeof(req));
		req.argv = argv;
		req.envp = envp;
		req.label = "m1";
		if (spawn_start(&req, &sp, err, sizeof(err)) == -1)
			_exit(1);
		wait_marked(mark, "sleep", 3);
		pids[0] = sp.pid;
		pids[1] = sp.reaper;
		(void)write(p[1], pids, sizeof(pids));
		_exit(0);
	}
	ATF_REQUIRE(mid > 0);
	close(p[1]);
	ATF_REQUIRE_EQ(read(p[0], pids, sizeof(pids)), (ssize_t)sizeof(pids));
	close(p[0]);
	ATF_CHECK_EQ(reap(mid), 0);
	ATF_REQUIRE(pids[0] > 0 && pids[1] > 0);
	/* The reaper comes to us once it has nothing left. */
	ATF_CHECK_EQ(reap(pids[1]), 0);
	ATF_CHECK_EQ(marked(mark, NULL, NULL, 0), 0);
	spawn_argv_free(envp);
}

ATF_TC_WITHOUT_HEAD(reaper_stop_leftovers);
ATF_TC_BODY(reaper_stop_leftovers, tc)
{
	struct spawn_proc	 sp;
	char			 mark[64], **envp;
	int64_t			 t0, dt;
	int			 status;

	(void)tc;
	setup();
	make_mark(mark, sizeof(mark), "stop");
	envp = mark_env(mark);
	/* The reproduction: a worker that ignores SIGTERM. */
	start_sh("(trap '' TERM; exec sleep 1000) & exec sleep 1000", envp,
	    &sp, NULL);
	wait_marked(mark, "sleep", 2);

	t0 = now_ms();
	spawn_signal(&sp, SIGTERM);
	status = reap_model(&sp);
	dt = now_ms() - t0;
	/* How the model itself ended, not how its reaper did. */
	ATF_CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
	    "model status %#x", status);
	/* The reaper ended only once nothing of the model was left. */
	ATF_CHECK_EQ(marked(mark, NULL, NULL, 0), 0);
	/* The worker outlived SIGTERM: SIGKILL came after the grace. */
	ATF_CHECK_MSG(dt >= SPAWN_REAP_GRACE - 50, "stopped in %lld ms",
	    (long long)dt);
	spawn_close(&sp);
	spawn_argv_free(envp);
}

ATF_TC_WITHOUT_HEAD(reaper_kill_escaped);
ATF_TC_BODY(reaper_kill_escaped, tc)
{
	struct spawn_proc	 sp;
	char			 mark[64], **envp;
	pid_t			 pids[8];
	size_t			 i, n, ours;
	int			 status;

	(void)tc;
	setup();
	make_mark(mark, sizeof(mark), "escaped");
	envp = mark_env(mark);
	/* Two that leave: a new session, and a double fork. */
	start_sh("setsid sh -c '(trap \"\" TERM HUP; exec sleep 1000) &'; "
	    "(sleep 1000 &); exec sleep 1000", envp, &sp, NULL);
	wait_marked(mark, "sleep", 3);
	/* Their parents are gone: they came to the reaper, not to init. */
	n = marked(mark, "sleep", pids, 8);
	for (i = ours = 0; i < n && i < 8; i++)
		if (pids[i] != sp.pid &&
		    stat_field(pids[i], 1) == (long long)sp.reaper)
			ours++;
	ATF_CHECK_EQ(ours, 2);

	spawn_signal(&sp, SIGKILL);
	status = reap_model(&sp);
	ATF_CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	    "model status %#x", status);
	ATF_CHECK_EQ(marked(mark, NULL, NULL, 0), 0);
	spawn_close(&sp);
	spawn_argv_free(envp);
}

ATF_TC_WITHOUT_HEAD(reaper_status);
ATF_TC_BODY(reaper_status, tc)
{
	struct spawn_proc	 sp;
	char			**envp;
	int			 status;

	(void)tc;
	setup();
	envp = base_env();
	start_sh("exit 3", envp, &sp, NULL);
	status = reap_model(&sp);
	ATF_CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 3,
	    "status %#x", status);
	spawn_close(&sp);

	/* A signal without a core dump, so nothing is written to /. */
	start_sh("kill -USR2 $$", envp, &sp, NULL);
	status = reap_model(&sp);
	ATF_CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGUSR2,
	    "status %#x", status);
	spawn_close(&sp);

	/* Twice is harmless, and signals after the reaping go nowhere. */
	ATF_CHECK_EQ(sp.reaper, -1);
	spawn_signal(&sp, SIGKILL);
	spawn_argv_free(envp);
}

ATF_TC_WITHOUT_HEAD(spawn_umask_dir);
ATF_TC_BODY(spawn_umask_dir, tc)
{
	char			*argv[] = { "/bin/sh", "-c", "umask; pwd", NULL };
	struct spawn_req	 req;
	struct spawn_proc	 sp;
	char			 cwd[PATH_MAX], home[PATH_MAX], real[PATH_MAX];
	char			**envp;
	mode_t			 old;

	(void)tc;
	setup();
	envp = base_env();
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	ATF_REQUIRE((size_t)snprintf(home, sizeof(home), "%.*s/home",
	    (int)sizeof(cwd) - 8, cwd) < sizeof(home));
	ATF_REQUIRE(mkdir(home, 0755) == 0);
	ATF_REQUIRE(realpath(home, real) != NULL);
	memset(&req, 0, sizeof(req));
	req.argv = argv;
	req.envp = envp;
	req.label = "m1";
	req.line_cb = on_line;
	req.eof_cb = on_eof;

	/* Not what agencyd has: umask 0 and another directory. */
	old = umask(0);
	req.dir = home;
	ATF_REQUIRE_MSG(spawn_start(&req, &sp, err, sizeof(err)) > 0, "%s",
	    err);
	ATF_REQUIRE(loop_until(&eof));
	ATF_CHECK_EQ(reap_model(&sp), 0);
	spawn_close(&sp);
	ATF_CHECK_MSG(seen_index(&seen, "0022") == 0, "umask: %s",
	    ring_get(&seen, 0));
	ATF_CHECK_MSG(seen_index(&seen, real) == 1, "pwd: %s",
	    ring_get(&seen, 1));

	/* A home that cannot be entered: /. */
	ring_clear(&seen);
	eof = 0;
	req.dir = "/nonexistent/agency-home";
	ATF_REQUIRE_MSG(spawn_start(&req, &sp, err, sizeof(err)) > 0, "%s",
	    err);
	ATF_REQUIRE(loop_until(&eof));
	ATF_CHECK_EQ(reap_model(&sp), 0);
	spawn_close(&sp);
	ATF_CHECK(seen_index(&seen, "0022") == 0);
	ATF_CHECK_MSG(seen_index(&seen, "/") == 1, "pwd: %s",
	    ring_get(&seen, 1));
	umask(old);
	spawn_argv_free(envp);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, argv_split);
	ATF_TP_ADD_TC(tp, argv_expand);
	ATF_TP_ADD_TC(tp, argv_socket);
	ATF_TP_ADD_TC(tp, argv_errors);
	ATF_TP_ADD_TC(tp, env_precedence);
	ATF_TP_ADD_TC(tp, ring_wrap);
	ATF_TP_ADD_TC(tp, describe_exit);
	ATF_TP_ADD_TC(tp, addr_in_use);
	ATF_TP_ADD_TC(tp, spawn_output);
	ATF_TP_ADD_TC(tp, spawn_pgrp_env_stdin);
	ATF_TP_ADD_TC(tp, spawn_drain_at_close);
	ATF_TP_ADD_TC(tp, spawn_exec_missing);
	ATF_TP_ADD_TC(tp, spawn_user);
	ATF_TP_ADD_TC(tp, spawn_pdeathsig);
	ATF_TP_ADD_TC(tp, reaper_stop_leftovers);
	ATF_TP_ADD_TC(tp, reaper_kill_escaped);
	ATF_TP_ADD_TC(tp, reaper_status);
	ATF_TP_ADD_TC(tp, spawn_umask_dir);
	return (atf_no_error());
}
