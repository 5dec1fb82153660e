/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * footprint.c: the parsers on text captured from this machine's /proc
 * (data/smaps_rollup.llama and data/status.llama: llama-server with
 * tiny-c; data/children.two: a shell with two children) and on text
 * made wrong; the peak over samples; and a live tree of processes made
 * here (a mapped file's resident pages count).
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/wait.h>

#include <atf-c.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "footprint.h"

#define KIB	1024LL
#define MIB	(1024 * KIB)

static char *
slurp(const atf_tc_t *tc, const char *name, size_t *len)
{
	char	 path[PATH_MAX], *buf;
	FILE	*fp;

	snprintf(path, sizeof(path), "%s/data/%s",
	    atf_tc_get_config_var(tc, "srcdir"), name);
	ATF_REQUIRE_MSG((fp = fopen(path, "r")) != NULL, "%s", path);
	ATF_REQUIRE((buf = malloc(65536)) != NULL);
	*len = fread(buf, 1, 65536, fp);
	fclose(fp);
	return (buf);
}

ATF_TC_WITHOUT_HEAD(status);
ATF_TC_BODY(status, tc)
{
	struct fp_proc	 p;
	char		*t;
	size_t		 len;

	t = slurp(tc, "status.llama", &len);
	memset(&p, 0, sizeof(p));
	p.pss = 7;
	ATF_REQUIRE_EQ(fp_parse_status(t, len, &p), 0);
	ATF_CHECK_EQ(p.rss, 269232 * KIB);
	ATF_CHECK_EQ(p.hwm, 269232 * KIB);
	ATF_CHECK_EQ(p.anon, 18940 * KIB);
	ATF_CHECK_EQ(p.swap, 0);
	ATF_CHECK_EQ(p.pss, 7);
	/* Cut before its VmHWM line: none. */
	ATF_CHECK_EQ(fp_parse_status(t, 300, &p), -1);
	free(t);

#define STATUS(s)	fp_parse_status(s, strlen(s), &p)
	ATF_CHECK_EQ(STATUS("VmHWM:\t20 kB\nVmRSS:\t12 kB\nVmSwap: 3 kB\n"),
	    0);
	ATF_CHECK_EQ(p.rss, 12 * KIB);
	ATF_CHECK_EQ(p.hwm, 20 * KIB);
	ATF_CHECK_EQ(p.swap, 3 * KIB);
	ATF_CHECK_EQ(p.anon, 0);
	ATF_CHECK_EQ(STATUS("VmHWM: 4 kB\nVmRSS: 4 kB"), 0);	/* no newline */
	/* A kernel thread has neither. */
	ATF_CHECK_EQ(STATUS("Name:\tkthreadd\nState:\tS\n"), -1);
	ATF_CHECK_EQ(STATUS("VmHWM: 4 kB\n"), -1);
	ATF_CHECK_EQ(STATUS("VmHWM: 4 kB\nVmRSS: kB\n"), -1);
	ATF_CHECK_EQ(STATUS("VmHWM: 4 kB\nVmRSS: 12 MB\n"), -1);
	ATF_CHECK_EQ(STATUS("VmHWM: 4 kB\nVmRSS: 12 kB x\n"), -1);
	ATF_CHECK_EQ(STATUS("VmHWM: 4 kB\nVmRSS: -12 kB\n"), -1);
	ATF_CHECK_EQ(STATUS("VmHWM: 4 kB\nVmRSS: 99999999999999999999 kB\n"),
	    -1);
	ATF_CHECK_EQ(STATUS("VmHWM: 4 kB\nVmRSS: 1125899906842625 kB\n"),
	    -1);
	ATF_CHECK_EQ(STATUS("VmHWM: 4 kB\nVmRSS: 1 kB\nRssAnon: 1x kB\n"),
	    -1);
	/* A field whose name starts alike is another field. */
	ATF_CHECK_EQ(STATUS("VmRSSx: 5 kB\nVmHWM: 6 kB\nVmRSS: 6 kB\n"), 0);
	ATF_CHECK_EQ(p.rss, 6 * KIB);
#undef STATUS
}

ATF_TC_WITHOUT_HEAD(rollup);
ATF_TC_BODY(rollup, tc)
{
	struct fp_proc	 p;
	char		*t;
	size_t		 len;

	t = slurp(tc, "smaps_rollup.llama", &len);
	memset(&p, 0, sizeof(p));
	p.hwm = 7;
	ATF_REQUIRE_EQ(fp_parse_rollup(t, len, &p), 0);
	ATF_CHECK_EQ(p.rss, 269232 * KIB);
	ATF_CHECK_EQ(p.pss, 264836 * KIB);
	ATF_CHECK_EQ(p.hwm, 7);
	ATF_CHECK_EQ(fp_parse_rollup(t, 80, &p), -1);
	ATF_CHECK_EQ(fp_parse_rollup("Rss: 1 kB\n", 10, &p), -1);  /* no Pss */
	free(t);
}

ATF_TC_WITHOUT_HEAD(children);
ATF_TC_BODY(children, tc)
{
	pid_t	 pids[4];
	size_t	 n = 0, len;
	char	*t;

	t = slurp(tc, "children.two", &len);
	ATF_CHECK_EQ(fp_parse_children(t, len, pids, 4, &n), 2);
	ATF_REQUIRE_EQ(n, 2);
	ATF_CHECK_EQ(pids[0], 981);
	ATF_CHECK_EQ(pids[1], 983);
	/* Full: counted, not added. */
	n = 1;
	ATF_CHECK_EQ(fp_parse_children(t, len, pids, 2, &n), 2);
	ATF_CHECK_EQ(n, 2);
	ATF_CHECK_EQ(pids[1], 981);
	free(t);
	n = 0;
	ATF_CHECK_EQ(fp_parse_children("", 0, pids, 4, &n), 0);
	ATF_CHECK_EQ(fp_parse_children("7\n", 2, pids, 4, &n), 1);
	ATF_CHECK_EQ(pids[0], 7);
	ATF_CHECK_EQ(fp_parse_children("12 x", 4, pids, 4, &n), -1);
	ATF_CHECK_EQ(fp_parse_children("0 ", 2, pids, 4, &n), -1);
	ATF_CHECK_EQ(fp_parse_children("1-2", 3, pids, 4, &n), -1);
	ATF_CHECK_EQ(fp_parse_children("99999999999", 11, pids, 4, &n), -1);
}

ATF_TC_WITHOUT_HEAD(peak);
ATF_TC_BODY(peak, tc)
{
	struct fp_peak		 pk;
	struct fp_sample	 s;

	memset(&pk, 0, sizeof(pk));
	memset(&s, 0, sizeof(s));
	/* Two processes: the sum of Rss is known, the sum of peaks bounds. */
	s.procs = 2;
	s.rss = 100;
	s.hwm = 150;
	fp_peak_add(&pk, &s);
	ATF_CHECK_EQ(pk.peak, 100);
	ATF_CHECK_EQ(pk.bound, 150);
	s.rss = 80;
	s.hwm = 150;
	fp_peak_add(&pk, &s);
	ATF_CHECK_EQ(pk.peak, 100);
	ATF_CHECK_EQ(pk.last, 80);
	ATF_CHECK_EQ(pk.samples, 2);
	/* One process: its VmHWM is a peak it had. */
	s.procs = 1;
	s.rss = 90;
	s.hwm = 120;
	fp_peak_add(&pk, &s);
	ATF_CHECK_EQ(pk.peak, 120);
	ATF_CHECK_EQ(pk.bound, 150);
	s.rss = 200;
	s.hwm = 200;
	fp_peak_add(&pk, &s);
	ATF_CHECK_EQ(pk.peak, 200);
	ATF_CHECK_EQ(pk.bound, 200);
}

/*
 * A tree: the root maps and touches a file of 16 MiB, forks a child
 * that touches 8 MiB and forks a grandchild; all wait to be killed.
 * Each writes a byte to ready when it is set.
 */
static pid_t
tree(int ready, const char *file)
{
	pid_t	 root, child;
	char	*p;
	int	 fd;
	size_t	 i;

	if ((root = fork()) != 0)
		return (root);
	if ((fd = open(file, O_RDONLY)) == -1 ||
	    (p = mmap(NULL, 16 * MIB, PROT_READ, MAP_SHARED, fd, 0)) ==
	    MAP_FAILED)
		_exit(1);
	for (i = 0; i < 16 * MIB; i += 4096)
		(void)*(volatile char *)(p + i);
	if ((child = fork()) == 0) {
		if ((p = malloc(8 * MIB)) == NULL)
			_exit(1);
		memset(p, 1, 8 * MIB);
		if (fork() == 0) {
			(void)write(ready, "g", 1);
			pause();
			_exit(0);
		}
		(void)write(ready, "c", 1);
		pause();
		_exit(0);
	}
	(void)write(ready, "r", 1);
	pause();
	_exit(0);
}

ATF_TC_WITHOUT_HEAD(live_tree);
ATF_TC_BODY(live_tree, tc)
{
	struct fp_sample	 s;
	struct fp_proc		 p;
	pid_t			 pids[8], root;
	char			 buf[3];
	int			 n, fd, pipefd[2], i, got = 0;

	ATF_REQUIRE((fd = open("file", O_WRONLY | O_CREAT, 0644)) != -1);
	ATF_REQUIRE(ftruncate(fd, 16 * MIB) == 0);
	close(fd);
	ATF_REQUIRE(pipe(pipefd) == 0);
	root = tree(pipefd[1], "file");
	ATF_REQUIRE(root > 0);
	while (got < 3)
		ATF_REQUIRE((n = read(pipefd[0], buf, sizeof(buf))) > 0 &&
		    (got += n) > 0);

	n = fp_tree(root, pids, 8);
	ATF_REQUIRE_EQ_MSG(n, 3, "%d in the tree", n);
	ATF_CHECK_EQ(pids[0], root);
	/* Cut at 2: still counted. */
	ATF_CHECK_EQ(fp_tree(root, pids, 2), 3);

	ATF_REQUIRE_EQ(fp_proc_read(root, &p, 1), 0);
	/* The mapped file's pages are in its Rss, not its anonymous. */
	ATF_CHECK_MSG(p.rss >= 16 * MIB, "root Rss %lld",
	    (long long)p.rss);
	ATF_CHECK_MSG(p.anon < 8 * MIB, "root anonymous %lld",
	    (long long)p.anon);
	ATF_CHECK(p.hwm >= p.rss);

	ATF_REQUIRE_EQ(fp_sample_tree(root, &s, 1), 0);
	ATF_CHECK_EQ(s.procs, 3);
	ATF_CHECK_EQ(s.truncated, 0);
	/* 16 MiB of file in the root, 8 MiB in the child (the child's
	 * copy of the mapping is not touched by it). */
	ATF_CHECK_MSG(s.rss >= 24 * MIB, "tree Rss %lld", (long long)s.rss);
	ATF_CHECK(s.hwm >= s.rss);
	ATF_CHECK(s.pss <= s.rss);
	/* No cgroup: the same, from /proc. */
	ATF_REQUIRE_EQ(fp_measure(NULL, root, &s), 0);
	ATF_CHECK_EQ(s.procs, 3);
	ATF_CHECK_MSG(s.rss >= 24 * MIB, "tree Rss %lld", (long long)s.rss);

	for (i = n - 1; i >= 0; i--)
		(void)kill(pids[i], SIGKILL);
	(void)waitpid(root, NULL, 0);
	/* Gone: no tree, nothing sampled. */
	ATF_CHECK_EQ(fp_tree(root, pids, 8), -1);
	ATF_CHECK_EQ(fp_sample_tree(root, &s, 1), -1);
	ATF_CHECK_EQ(fp_sample_pids(pids, 1, &s, 0), -1);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, status);
	ATF_TP_ADD_TC(tp, rollup);
	ATF_TP_ADD_TC(tp, children);
	ATF_TP_ADD_TC(tp, peak);
	ATF_TP_ADD_TC(tp, live_tree);
	return (atf_no_error());
}
