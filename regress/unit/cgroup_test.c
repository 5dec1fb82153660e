/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * cgroup.c: the parsers; a stand-in cgroup v2 tree made here (what
 * agencyd writes, what it reads back); and, as root, this machine's
 * real hierarchy: cgroup v1's memory controller (a model's cgroup below
 * the test's own, fakelm killed by the kernel at its limit, a kill of
 * all in it, a sweep of another run's leftovers, a helper joining it),
 * and a real cgroup v2 hierarchy with the memory controller where there
 * is one (skipped, saying why, where there is none).
 */
#include <sys/types.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <atf-c.h>
#include <errno.h>
#include <event.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "footprint.h"
#include "helper.h"
#include "log.h"
#include "memory.h"
#include "testutil.h"

#define MIB	(1024LL * 1024)

static void
put(const char *path, const char *text)
{
	FILE	*fp;

	ATF_REQUIRE_MSG((fp = fopen(path, "w")) != NULL, "%s", path);
	fputs(text, fp);
	fclose(fp);
}

static const char *
get(const char *path)
{
	static char	 buf[4096];
	FILE		*fp;
	size_t		 n;

	buf[0] = '\0';
	if ((fp = fopen(path, "r")) == NULL)
		return ("(none)");
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	fclose(fp);
	return (buf);
}

/* waitpid with a deadline: the status, or -1 when it did not end. */
static int
reap(pid_t pid, int ms)
{
	int64_t	 end = test_now_ms() + ms;
	int	 status;

	while (test_now_ms() < end) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return (status);
		usleep(10000);
	}
	return (-1);
}

ATF_TC_WITHOUT_HEAD(parse_self);
ATF_TC_BODY(parse_self, tc)
{
	char	 v2[PATH_MAX], v1[PATH_MAX], t[256], path[PATH_MAX];
	FILE	*fp;
	size_t	 n;

#define SELF(s)	cg_parse_self(s, strlen(s), v2, sizeof(v2), v1, sizeof(v1))
	/* Files of memory_test: v1 with v2 beside, co-mounted, v2 only. */
	snprintf(path, sizeof(path), "%s/data/proc_cgroup.v1limited",
	    atf_tc_get_config_var(tc, "srcdir"));
	ATF_REQUIRE((fp = fopen(path, "r")) != NULL);
	n = fread(t, 1, sizeof(t) - 1, fp);
	fclose(fp);
	t[n] = '\0';
	ATF_CHECK_EQ(SELF(t), 0);
	ATF_CHECK_STREQ(v2, "/");
	ATF_CHECK_STREQ(v1, "/grp");
	ATF_CHECK_EQ(SELF("4:memory,cpu:/grp\n"), 0);
	ATF_CHECK_STREQ(v1, "/grp");
	ATF_CHECK_STREQ(v2, "");
	ATF_CHECK_EQ(SELF("0::/nested/child/leaf\n"), 0);
	ATF_CHECK_STREQ(v2, "/nested/child/leaf");
	ATF_CHECK_STREQ(v1, "");
	/* This machine's. */
	ATF_CHECK_EQ(SELF("9:name=systemd:/\n4:memory:/process_api/64f6\n"
	    "1:cpu:/\n0::/\n"), 0);
	ATF_CHECK_STREQ(v1, "/process_api/64f6");
	ATF_CHECK_EQ(SELF("12:memory:/a:b\n"), 0);	/* ':' in a path */
	ATF_CHECK_STREQ(v1, "/a:b");
	ATF_CHECK_EQ(SELF("4:memoryx:/x\n"), 0);
	ATF_CHECK_STREQ(v1, "");
	ATF_CHECK_EQ(SELF("this is not a cgroup file\n"), -1);
	ATF_CHECK_EQ(SELF("x:memory:/grp\n"), -1);
	ATF_CHECK_EQ(SELF("4:memory:grp\n"), -1);
	ATF_CHECK_EQ(SELF("0::/a/../b\n"), -1);
	ATF_CHECK_EQ(SELF(":memory:/a\n"), -1);
#undef SELF
}

ATF_TC_WITHOUT_HEAD(parse_values);
ATF_TC_BODY(parse_values, tc)
{
	static const char	 events[] = "low 0\nhigh 0\nmax 5\noom 2\n"
	    "oom_kill 1\noom_group_kill 0\n";
	static const char	 oomc[] = "oom_kill_disable 0\nunder_oom 0\n"
	    "oom_kill 3\n";
	int64_t			 v = 42;

#define VALUE(s)	cg_parse_value(s, strlen(s), &v)
	ATF_CHECK_EQ(VALUE("123\n"), 0);
	ATF_CHECK_EQ(v, 123);
	ATF_CHECK_EQ(VALUE("max\n"), 0);
	ATF_CHECK_EQ(v, -1);
	ATF_CHECK_EQ(VALUE("9223372036854771712\n"), 0);	/* v1's none */
	ATF_CHECK_EQ(VALUE(""), -1);
	ATF_CHECK_EQ(VALUE("12x"), -1);
	ATF_CHECK_EQ(VALUE("-1"), -1);
	ATF_CHECK_EQ(VALUE("99999999999999999999"), -1);
#undef VALUE
	ATF_CHECK_EQ(cg_parse_keyed(events, strlen(events), "max", &v), 1);
	ATF_CHECK_EQ(v, 5);
	ATF_CHECK_EQ(cg_parse_keyed(events, strlen(events), "oom", &v), 1);
	ATF_CHECK_EQ(v, 2);
	ATF_CHECK_EQ(cg_parse_keyed(events, strlen(events), "oom_kill", &v),
	    1);
	ATF_CHECK_EQ(v, 1);
	ATF_CHECK_EQ(cg_parse_keyed(oomc, strlen(oomc), "oom_kill", &v), 1);
	ATF_CHECK_EQ(v, 3);
	ATF_CHECK_EQ(cg_parse_keyed(oomc, strlen(oomc), "max", &v), 0);
	ATF_CHECK_EQ(cg_parse_keyed("oom_kill x\n", 11, "oom_kill", &v), -1);
}

ATF_TC_WITHOUT_HEAD(names);
ATF_TC_BODY(names, tc)
{
	struct cg_base	 b;
	char		 n1[NAME_MAX + 1], n2[NAME_MAX + 1], big[200];

	memset(&b, 0, sizeof(b));
	strlcpy(b.instance, "i1", sizeof(b.instance));
	ATF_REQUIRE_EQ(cg_name(&b, "qwen2.5-7b_q4", n1, sizeof(n1)), 0);
	ATF_CHECK_STREQ(n1, "agency.i1.qwen2.5-7b_q4");
	ATF_REQUIRE_EQ(cg_name(&b, "a b/c\n..", n1, sizeof(n1)), 0);
	ATF_CHECK_STREQ(n1, "agency.i1.a%20b%2fc%0a..");
	ATF_CHECK_EQ(cg_name(&b, "", n1, sizeof(n1)), -1);
	/* Long names: cut, with a hash of the whole, and told apart. */
	memset(big, '/', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ATF_REQUIRE_EQ(cg_name(&b, big, n1, sizeof(n1)), 0);
	big[sizeof(big) - 2] = 'x';
	ATF_REQUIRE_EQ(cg_name(&b, big, n2, sizeof(n2)), 0);
	ATF_CHECK(strlen(n1) <= NAME_MAX);
	ATF_CHECK(strchr(n1, '~') != NULL);
	ATF_CHECK(strcmp(n1, n2) != 0);
	ATF_CHECK_EQ(cg_name(&b, "m", n1, 8), -1);
}

/* A stand-in v2 tree under ./cg: the root, and svc agencyd runs in. */
static void
standin(const char *controllers)
{
	char	 t[64];

	ATF_REQUIRE(mkdir("cg", 0755) == 0);
	ATF_REQUIRE(mkdir("cg/svc", 0755) == 0);
	put("cg/cgroup.controllers", "cpu io memory pids\n");
	put("cg/svc/cgroup.controllers", controllers);
	put("cg/svc/cgroup.subtree_control", "");
	snprintf(t, sizeof(t), "%d\n", (int)getpid());
	put("cg/svc/cgroup.procs", t);
	put("self", "4:memory:/v1grp\n0::/svc\n");
}

ATF_TC_WITHOUT_HEAD(find);
ATF_TC_BODY(find, tc)
{
	struct cg_base	 b;
	char		 err[256];

	log_init(1, LOG_DAEMON);
	standin("pids\n");
	/* No memory for v2, no v1: why, both. */
	ATF_CHECK_EQ(cg_find("self", "cg", NULL, "i1", &b, err, sizeof(err)),
	    -1);
	ATF_CHECK_STREQ(err, "cgroup v2 cg/svc has no memory controller");
	ATF_CHECK_EQ(cg_find("self", "cg", "nov1", "i1", &b, err,
	    sizeof(err)), -1);
	ATF_CHECK_MATCH("no memory controller; cgroup v1 nov1/v1grp: No such "
	    "file", err);
	put("self2", "0::/svc\n");
	ATF_CHECK_EQ(cg_find("self2", "cg", "nov1", "i1", &b, err,
	    sizeof(err)), -1);
	ATF_CHECK_MATCH("no memory controller, and no cgroup v1 memory "
	    "hierarchy", err);
	/* v1 beside it. */
	ATF_REQUIRE(mkdir("v1", 0755) == 0);
	ATF_REQUIRE(mkdir("v1/v1grp", 0755) == 0);
	put("v1/v1grp/memory.limit_in_bytes", "9223372036854771712\n");
	ATF_REQUIRE_MSG(cg_find("self", "cg", "v1", "i1", &b, err,
	    sizeof(err)) == 0, "%s", err);
	ATF_CHECK_EQ(b.version, CG_V1);
	ATF_CHECK_STREQ(b.dir, "v1/v1grp");
	/* v2 with memory first. */
	put("cg/svc/cgroup.controllers", "memory pids\n");
	ATF_REQUIRE_MSG(cg_find("self", "cg", "v1", "i1", &b, err,
	    sizeof(err)) == 0, "%s", err);
	ATF_CHECK_EQ(b.version, CG_V2);
	ATF_CHECK_STREQ(b.dir, "cg/svc");
	ATF_CHECK_STREQ(b.instance, "i1");
	/* Started again from its leaf: the leaf's parent. */
	put("self", "0::/svc/agencyd\n");
	ATF_REQUIRE_MSG(cg_find("self", "cg", NULL, "i1", &b, err,
	    sizeof(err)) == 0, "%s", err);
	ATF_CHECK_STREQ(b.dir, "cg/svc");
	/* Instances. */
	ATF_CHECK_EQ(cg_find("self", "cg", NULL, "", &b, err, sizeof(err)),
	    -1);
	ATF_CHECK_EQ(cg_find("self", "cg", NULL, "a.b", &b, err, sizeof(err)),
	    -1);
	ATF_CHECK_EQ(cg_find("self", "cg", NULL,
	    "abcdefghijabcdefghijabcdefghijab", &b, err, sizeof(err)), -1);
	ATF_CHECK_EQ(cg_find("nonexistent", "cg", NULL, "i", &b, err,
	    sizeof(err)), -1);
}

/* What agencyd writes into a v2 tree, and reads back from it. */
ATF_TC_WITHOUT_HEAD(standin_v2);
ATF_TC_BODY(standin_v2, tc)
{
	struct cg_base		 b;
	struct cg		 cg;
	struct cg_stats		 st;
	char			 err[256], t[64], path[PATH_MAX];
	const char		*d;
	pid_t			 child;

	log_init(1, LOG_DAEMON);
	standin("memory pids\n");
	ATF_REQUIRE_MSG(cg_find("self", "cg", NULL, "i1", &b, err,
	    sizeof(err)) == 0, "%s", err);
	/* agencyd into a leaf of its own, then memory for the children. */
	ATF_REQUIRE_MSG(cg_prepare(&b, err, sizeof(err)) == 0, "%s", err);
	snprintf(t, sizeof(t), "%d", (int)getpid());
	ATF_CHECK_STREQ(get("cg/svc/agencyd/cgroup.procs"), t);
	ATF_CHECK_STREQ(get("cg/svc/cgroup.subtree_control"), "+memory");
	/* Done already: nothing moved again. */
	put("cg/svc/agencyd/cgroup.procs", "");
	ATF_REQUIRE_EQ(cg_prepare(&b, err, sizeof(err)), 0);
	ATF_CHECK_STREQ(get("cg/svc/agencyd/cgroup.procs"), "");

	ATF_REQUIRE_MSG(cg_create(&b, "my model/v1", &cg, err,
	    sizeof(err)) == 0, "%s", err);
	d = "cg/svc/agency.i1.my%20model%2fv1";
	ATF_CHECK_STREQ(cg.dir, d);
	ATF_CHECK_EQ(cg.version, CG_V2);
	/* Again: taken over. */
	ATF_REQUIRE_EQ(cg_create(&b, "my model/v1", &cg, err, sizeof(err)),
	    0);

	ATF_REQUIRE_EQ(cg_set_limit(&cg, 64 * MIB), 0);
	snprintf(path, sizeof(path), "%s/memory.max", d);
	ATF_CHECK_STREQ(get(path), "67108864");
	snprintf(path, sizeof(path), "%s/memory.swap.max", d);
	ATF_CHECK_STREQ(get(path), "0");
	ATF_REQUIRE_EQ(cg_set_limit(&cg, 0), 0);
	snprintf(path, sizeof(path), "%s/memory.max", d);
	ATF_CHECK_STREQ(get(path), "max");
	snprintf(path, sizeof(path), "%s/memory.swap.max", d);
	ATF_CHECK_STREQ(get(path), "max");

	ATF_REQUIRE_EQ(cg_attach(&cg, 4242), 0);
	snprintf(path, sizeof(path), "%s/cgroup.procs", d);
	ATF_CHECK_STREQ(get(path), "4242");
	ATF_REQUIRE_EQ(cg_procs_path(&cg, t, sizeof(t)), 0);
	ATF_CHECK_STREQ(t, path);

	/* The counters as the kernel writes them. */
	snprintf(path, sizeof(path), "%s/memory.current", d);
	put(path, "1000\n");
	snprintf(path, sizeof(path), "%s/memory.peak", d);
	put(path, "5000\n");
	snprintf(path, sizeof(path), "%s/memory.max", d);
	put(path, "67108864\n");
	snprintf(path, sizeof(path), "%s/memory.events", d);
	put(path, "low 0\nhigh 0\nmax 3\noom 2\noom_kill 1\n");
	ATF_REQUIRE_EQ(cg_read(&cg, &st), 0);
	ATF_CHECK_EQ(st.usage, 1000);
	ATF_CHECK_EQ(st.peak, 5000);
	ATF_CHECK_EQ(st.limit, 64 * MIB);
	ATF_CHECK_EQ(st.oom_kills, 1);
	ATF_CHECK_EQ(st.limited, 3);
	cg_oom_reason(&st, t, sizeof(t));
	ATF_CHECK_STREQ(t, "out of memory at its limit of 64 MiB");
	/* A kernel without memory.peak: unknown. */
	snprintf(path, sizeof(path), "%s/memory.peak", d);
	ATF_REQUIRE(unlink(path) == 0);
	ATF_REQUIRE_EQ(cg_read(&cg, &st), 0);
	ATF_CHECK_EQ(st.peak, -1);

	/* cgroup.kill where there is one. */
	snprintf(path, sizeof(path), "%s/cgroup.procs", d);
	put(path, "4242\n4243\n");
	ATF_CHECK_EQ(cg_empty(&cg), 0);
	snprintf(path, sizeof(path), "%s/cgroup.kill", d);
	put(path, "");
	ATF_CHECK_EQ(cg_kill(&cg), 2);
	ATF_CHECK_STREQ(get(path), "1");
	/* Without it, each pid: one that is not in the cgroup (this
	 * stand-in's) is left alone. */
	ATF_REQUIRE(unlink(path) == 0);
	if ((child = fork()) == 0) {
		pause();
		_exit(0);
	}
	ATF_REQUIRE(child > 0);
	snprintf(path, sizeof(path), "%s/cgroup.procs", d);
	snprintf(t, sizeof(t), "%d\n", (int)child);
	put(path, t);
	ATF_CHECK_EQ(cg_kill(&cg), 0);
	ATF_CHECK_EQ(kill(child, 0), 0);
	(void)kill(child, SIGKILL);
	(void)waitpid(child, NULL, 0);
	put(path, "");
	ATF_CHECK_EQ(cg_empty(&cg), 1);
}

/* The leftovers of this instance are swept, another's are not. */
ATF_TC_WITHOUT_HEAD(standin_sweep);
ATF_TC_BODY(standin_sweep, tc)
{
	struct cg_base	 b;
	struct stat	 sb;
	char		 err[256];

	log_init(1, LOG_DAEMON);
	standin("memory pids\n");
	ATF_REQUIRE_MSG(cg_find("self", "cg", NULL, "i1", &b, err,
	    sizeof(err)) == 0, "%s", err);
	ATF_REQUIRE(mkdir("cg/svc/agency.i1.a", 0755) == 0);
	ATF_REQUIRE(mkdir("cg/svc/agency.i1.b%20c", 0755) == 0);
	ATF_REQUIRE(mkdir("cg/svc/agency.i10.a", 0755) == 0);
	ATF_REQUIRE(mkdir("cg/svc/agency.other.a", 0755) == 0);
	ATF_REQUIRE(mkdir("cg/svc/agencyd", 0755) == 0);
	put("cg/svc/agency.i1.file", "");
	ATF_CHECK_EQ(cg_sweep(&b, 100), 2);
	ATF_CHECK(stat("cg/svc/agency.i1.a", &sb) == -1 && errno == ENOENT);
	ATF_CHECK(stat("cg/svc/agency.i1.b%20c", &sb) == -1);
	ATF_CHECK(stat("cg/svc/agency.i10.a", &sb) == 0);
	ATF_CHECK(stat("cg/svc/agency.other.a", &sb) == 0);
	ATF_CHECK(stat("cg/svc/agencyd", &sb) == 0);
	ATF_CHECK(stat("cg/svc/agency.i1.file", &sb) == 0);
}

/*
 * The real hierarchies.
 */

/* This test's own instance, kept in ./instance for the cleanup. */
static const char *
instance(void)
{
	static char	 inst[CG_INSTANCE_MAX];

	snprintf(inst, sizeof(inst), "test%d", (int)getpid());
	put("instance", inst);
	return (inst);
}

static void
sweep_after(const char *v2root, const char *v1root)
{
	struct cg_base	 b;
	char		 err[256], inst[CG_INSTANCE_MAX], *nl;

	log_init(1, LOG_DAEMON);
	strlcpy(inst, get("instance"), sizeof(inst));
	if ((nl = strchr(inst, '\n')) != NULL)
		*nl = '\0';
	if (strncmp(inst, "test", 4) != 0)
		return;
	if (cg_find(CG_PROC_CGROUP, v2root, v1root, inst, &b, err,
	    sizeof(err)) == 0)
		(void)cg_sweep(&b, 2000);
	strlcpy(b.instance, "other", sizeof(b.instance));
	strlcat(b.instance, inst + 4, sizeof(b.instance));
	if (b.dir[0] != '\0')
		(void)cg_sweep(&b, 2000);
}

/* Fork a child that waits for the word, then runs argv. */
static pid_t
held(int *go, char *const argv[])
{
	pid_t	 pid;
	int	 p[2];
	char	 c;

	ATF_REQUIRE(pipe(p) == 0);
	if ((pid = fork()) == 0) {
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(1);
		execv(argv[0], argv);
		_exit(127);
	}
	ATF_REQUIRE(pid > 0);
	close(p[0]);
	*go = p[1];
	return (pid);
}

static void
go(int fd)
{
	ATF_REQUIRE(write(fd, "g", 1) == 1);
	close(fd);
}

/*
 * The life of a model's cgroup on a real hierarchy: killed by the
 * kernel at its limit, then everything in it killed, removed, and a
 * sweep of this instance's leftovers that spares another's.
 */
static void
real_cycle(const atf_tc_t *tc, struct cg_base *b)
{
	struct cg	 cg, other;
	struct cg_stats	 st;
	struct cg_base	 ob;
	struct fp_sample s;
	struct fp_peak	 pk;
	char		 err[256], fakelm[PATH_MAX], why[128];
	char		*fl[] = { fakelm, "--port", "0", "--rss", "256M", NULL };
	char		*sl[] = { "/bin/sleep", "60", NULL };
	pid_t		 pid, a, c;
	int		 fd, status;

	memset(&pk, 0, sizeof(pk));
	snprintf(fakelm, sizeof(fakelm), "%s/../fakelm/fakelm",
	    atf_tc_get_config_var(tc, "srcdir"));
	ATF_REQUIRE_MSG(access(fakelm, X_OK) == 0, "no %s", fakelm);
	ATF_CHECK_EQ(cg_sweep(b, 2000), 0);
	ATF_REQUIRE_MSG(cg_prepare(b, err, sizeof(err)) == 0, "%s", err);
	ATF_REQUIRE_MSG(cg_create(b, "oom model", &cg, err, sizeof(err)) == 0,
	    "%s", err);
	ATF_REQUIRE_EQ(cg_set_limit(&cg, 64 * MIB), 0);
	ATF_REQUIRE_EQ(cg_read(&cg, &st), 0);
	ATF_CHECK_EQ(st.limit, 64 * MIB);

	/* fakelm touches 256 MiB in a cgroup of 64: the kernel kills it. */
	pid = held(&fd, fl);
	ATF_REQUIRE_EQ(cg_attach(&cg, pid), 0);
	go(fd);
	status = reap(pid, 30000);
	ATF_REQUIRE_MSG(status != -1, "fakelm was not killed");
	ATF_CHECK_MSG(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
	    "fakelm ended with status %#x, not SIGKILL", status);
	ATF_REQUIRE_EQ(cg_read(&cg, &st), 0);
	ATF_CHECK_MSG(st.oom_kills >= 1 || st.limited >= 1,
	    "no OOM kill counted (oom_kill %lld, limited %lld)",
	    (long long)st.oom_kills, (long long)st.limited);
	ATF_CHECK_MSG(st.peak == -1 || (st.peak > 48 * MIB &&
	    st.peak <= 64 * MIB), "peak %lld", (long long)st.peak);
	cg_oom_reason(&st, why, sizeof(why));
	ATF_CHECK_STREQ(why, "out of memory at its limit of 64 MiB");
	/* Its footprint from the cgroup: the kernel's own peak. */
	ATF_REQUIRE_EQ(fp_measure(&cg, 0, &s), 0);
	fp_peak_add(&pk, &s);
	ATF_CHECK_MSG(st.peak == -1 || pk.peak == st.peak, "peak %lld, "
	    "the cgroup's %lld", (long long)pk.peak, (long long)st.peak);
	ATF_CHECK(pk.peak >= s.rss);
	ATF_REQUIRE_EQ(cg_set_limit(&cg, 0), 0);
	ATF_REQUIRE_EQ(cg_read(&cg, &st), 0);
	ATF_CHECK_EQ(st.limit, -1);

	/* Two in it: both killed at once, then it can go. */
	a = held(&fd, sl);
	ATF_REQUIRE_EQ(cg_attach(&cg, a), 0);
	go(fd);
	c = held(&fd, sl);
	ATF_REQUIRE_EQ(cg_attach(&cg, c), 0);
	go(fd);
	ATF_CHECK_EQ(cg_empty(&cg), 0);
	ATF_CHECK_EQ(cg_remove(&cg), -1);		/* EBUSY */
	ATF_CHECK_EQ(cg_kill(&cg), 2);
	ATF_CHECK(WIFSIGNALED(reap(a, 5000)));
	ATF_CHECK(WIFSIGNALED(reap(c, 5000)));
	ATF_CHECK_EQ(cg_empty(&cg), 1);
	ATF_CHECK_EQ(cg_remove(&cg), 0);

	/* Left by "a previous agencyd": a cgroup with a process in it,
	 * and one of another instance. */
	ATF_REQUIRE_MSG(cg_create(b, "left", &cg, err, sizeof(err)) == 0,
	    "%s", err);
	a = held(&fd, sl);
	ATF_REQUIRE_EQ(cg_attach(&cg, a), 0);
	go(fd);
	ob = *b;
	snprintf(ob.instance, sizeof(ob.instance), "other%s",
	    b->instance + 4);
	ATF_REQUIRE_MSG(cg_create(&ob, "kept", &other, err, sizeof(err)) == 0,
	    "%s", err);
	ATF_CHECK_EQ(cg_sweep(b, 5000), 1);
	ATF_CHECK(WIFSIGNALED(reap(a, 5000)));
	ATF_CHECK(access(cg.dir, F_OK) == -1);
	ATF_CHECK(access(other.dir, F_OK) == 0);
	ATF_CHECK_EQ(cg_sweep(&ob, 2000), 1);
}

ATF_TC_WITH_CLEANUP(real_v1);
ATF_TC_HEAD(real_v1, tc)
{
	atf_tc_set_md_var(tc, "descr", "On cgroup v1's memory hierarchy: "
	    "fakelm killed at its limit, a kill, a sweep");
	atf_tc_set_md_var(tc, "timeout", "120");
}
ATF_TC_BODY(real_v1, tc)
{
	struct cg_base	 b;
	char		 err[256];

	if (geteuid() != 0)
		atf_tc_skip("making cgroups needs root");
	log_init(1, LOG_DAEMON);
	if (cg_find(CG_PROC_CGROUP, NULL, CG_V1_ROOT, instance(), &b, err,
	    sizeof(err)) == -1)
		atf_tc_skip("no cgroup v1 memory hierarchy: %s", err);
	ATF_REQUIRE_EQ(b.version, CG_V1);
	real_cycle(tc, &b);
}
ATF_TC_CLEANUP(real_v1, tc)
{
	(void)tc;
	sweep_after(NULL, CG_V1_ROOT);
}

/* The v2 hierarchy this machine mounts: where, and its root. */
static const char *
v2root(void)
{
	if (access(CG_V2_ROOT "/cgroup.controllers", F_OK) == 0)
		return (CG_V2_ROOT);
	if (access(CG_V2_HYBRID "/cgroup.controllers", F_OK) == 0)
		return (CG_V2_HYBRID);
	return (NULL);
}

ATF_TC_WITH_CLEANUP(real_v2);
ATF_TC_HEAD(real_v2, tc)
{
	atf_tc_set_md_var(tc, "descr", "On a cgroup v2 hierarchy with the "
	    "memory controller: fakelm killed at its limit, a kill, a sweep");
	atf_tc_set_md_var(tc, "timeout", "120");
}
ATF_TC_BODY(real_v2, tc)
{
	struct cg_base	 b;
	const char	*root;
	char		 err[256];

	if (geteuid() != 0)
		atf_tc_skip("making cgroups needs root");
	log_init(1, LOG_DAEMON);
	if ((root = v2root()) == NULL)
		atf_tc_skip("no cgroup v2 hierarchy mounted");
	if (cg_find(CG_PROC_CGROUP, root, NULL, instance(), &b, err,
	    sizeof(err)) == -1)
		atf_tc_skip("%s", err);
	ATF_REQUIRE_EQ(b.version, CG_V2);
	real_cycle(tc, &b);
}
ATF_TC_CLEANUP(real_v2, tc)
{
	(void)tc;
	sweep_after(v2root(), NULL);
}

/*
 * A helper that joins a model's cgroup (issue 32's warming will): its
 * set-up reads where it is, before its sandbox, and it tells.
 */
static char	joined[512];

static int
where_setup(void *arg, char *why, size_t whylen)
{
	FILE	*fp;
	size_t	 n;

	(void)arg;
	if ((fp = fopen("/proc/self/cgroup", "r")) == NULL) {
		snprintf(why, whylen, "cannot read /proc/self/cgroup");
		return (-1);
	}
	n = fread(joined, 1, sizeof(joined) - 1, fp);
	joined[n] = '\0';
	fclose(fp);
	return (0);
}

static int
where_run(void *arg, struct imsgbuf *ibuf)
{
	(void)arg;
	return (imsg_compose(ibuf, 1, 0, 0, -1, joined, strlen(joined) + 1) ==
	    -1);
}

struct where {
	int	 ended;
	char	 why[HELPER_WHY_MAX];
	char	 text[512];
};

static int
where_msg(void *arg, struct imsg *imsg, char *why, size_t whylen)
{
	struct where	*w = arg;

	(void)why;
	(void)whylen;
	return (imsg_get_string(imsg, w->text, sizeof(w->text)));
}

static void
where_end(void *arg, const char *why)
{
	struct where	*w = arg;

	w->ended = 1;
	strlcpy(w->why, why != NULL ? why : "", sizeof(w->why));
}

ATF_TC_WITH_CLEANUP(helper_joins);
ATF_TC_HEAD(helper_joins, tc)
{
	atf_tc_set_md_var(tc, "descr", "A helper joins a model's cgroup "
	    "before it drops its privileges");
}
ATF_TC_BODY(helper_joins, tc)
{
	struct helper_req	 req;
	struct helper		*h;
	struct where		 w;
	struct cg_base		 b;
	struct cg		 cg;
	char			 err[256], procs[PATH_MAX];
	const char		*rel;
	int64_t			 end;

	if (geteuid() != 0)
		atf_tc_skip("making cgroups needs root");
	log_init(1, LOG_DAEMON);
	if (cg_find(CG_PROC_CGROUP, v2root(), CG_V1_ROOT, instance(), &b, err,
	    sizeof(err)) == -1)
		atf_tc_skip("no cgroup for models: %s", err);
	ATF_REQUIRE_MSG(cg_prepare(&b, err, sizeof(err)) == 0, "%s", err);
	ATF_REQUIRE_MSG(cg_create(&b, "warm", &cg, err, sizeof(err)) == 0,
	    "%s", err);
	ATF_REQUIRE_EQ(cg_procs_path(&cg, procs, sizeof(procs)), 0);

	event_init();
	memset(&w, 0, sizeof(w));
	memset(&req, 0, sizeof(req));
	req.name = "joiner";
	req.user = getpwnam("nobody") != NULL ? "nobody" : NULL;
	req.cgroup_procs = procs;
	req.deadline_ms = 10000;
	req.setup = where_setup;
	req.run = where_run;
	req.on_msg = where_msg;
	req.on_end = where_end;
	req.cbarg = &w;
	ATF_REQUIRE_MSG(helper_start(&req, &h, err, sizeof(err)) == 0, "%s",
	    err);
	end = test_now_ms() + 15000;
	while (!w.ended && test_now_ms() < end) {
		(void)event_loop(EVLOOP_ONCE | EVLOOP_NONBLOCK);
		usleep(5000);
	}
	ATF_REQUIRE_MSG(w.ended, "the helper never ended");
	ATF_CHECK_STREQ(w.why, "");
	/* Its line names the model's cgroup. */
	rel = strstr(cg.dir, "/agency.");
	ATF_REQUIRE(rel != NULL);
	ATF_CHECK_MSG(strstr(w.text, rel) != NULL, "not joined: %s", w.text);
	ATF_CHECK_EQ(cg_empty(&cg), 1);
	ATF_CHECK_EQ(cg_remove(&cg), 0);
}
ATF_TC_CLEANUP(helper_joins, tc)
{
	(void)tc;
	sweep_after(v2root(), CG_V1_ROOT);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, parse_self);
	ATF_TP_ADD_TC(tp, parse_values);
	ATF_TP_ADD_TC(tp, names);
	ATF_TP_ADD_TC(tp, find);
	ATF_TP_ADD_TC(tp, standin_v2);
	ATF_TP_ADD_TC(tp, standin_sweep);
	ATF_TP_ADD_TC(tp, real_v1);
	ATF_TP_ADD_TC(tp, real_v2);
	ATF_TP_ADD_TC(tp, helper_joins);
	return (atf_no_error());
}
