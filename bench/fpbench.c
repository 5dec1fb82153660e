/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * fpbench [-a anon-MiB] [-m map-MiB] [-n trees] [-r rounds] [-t threads]
 *     FILE
 *
 * The cost of measuring models from /proc (agencyd/footprint.c): N
 * process trees stand in for N running models, each a root with T
 * threads that maps the first M MiB of FILE (a model file) and touches
 * every page, and allocates and touches A MiB, with one child process.
 * Then R rounds each sample every tree (fp_sample_tree: the tree from
 * /proc/PID/task/TID/children, then each process's status), and R more
 * with each process's smaps_rollup too (for Pss: the kernel walks the
 * page tables), alternating; it prints the wall and CPU time a round of
 * N trees and a tree (medians over rounds) for each, and what one sample
 * found.  Every process it started is killed by its pid at the end.
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>

#include <err.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "footprint.h"

#define MIB	(1024LL * 1024)

static void *
idle(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return (NULL);
}

/* One stand-in model: says so on ready when it is set, then waits. */
static pid_t
model(const char *file, int64_t map, int64_t anon, int threads, int ready)
{
	pthread_t	 t;
	pid_t		 pid;
	char		*p;
	int64_t		 i;
	int		 fd, k;

	if ((pid = fork()) != 0)
		return (pid);
	if ((fd = open(file, O_RDONLY)) == -1 ||
	    (p = mmap(NULL, map, PROT_READ, MAP_SHARED, fd, 0)) == MAP_FAILED)
		_exit(1);
	for (i = 0; i < map; i += 4096)
		(void)*(volatile char *)(p + i);
	if (anon > 0) {
		if ((p = malloc(anon)) == NULL)
			_exit(1);
		memset(p, 1, anon);
	}
	for (k = 0; k < threads; k++)
		if (pthread_create(&t, NULL, idle, NULL) != 0)
			_exit(1);
	if (fork() == 0) {
		for (;;)
			pause();
	}
	(void)write(ready, "x", 1);
	for (;;)
		pause();
}

static int64_t
ns(clockid_t c)
{
	struct timespec	 ts;

	clock_gettime(c, &ts);
	return ((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
}

static int
cmp64(const void *a, const void *b)
{
	int64_t	 x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x < y ? -1 : x > y);
}

int
main(int argc, char *argv[])
{
	struct fp_sample	 s;
	pid_t			*roots, pids[FP_TREE_MAX];
	int64_t			 anon = 16, map = 64, *wall[2], *cpu[2], w0, c0;
	int			 n = 50, rounds = 20, threads = 8, ch, i, r, k;
	int			 pss;
	int			 pfd[2], got = 0, m;
	char			 buf[64];
	double			 load[3];

	while ((ch = getopt(argc, argv, "a:m:n:r:t:")) != -1) {
		switch (ch) {
		case 'a':
			anon = atoll(optarg);
			break;
		case 'm':
			map = atoll(optarg);
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 't':
			threads = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (argc - optind != 1 || n < 1 || rounds < 1 || map < 1)
		goto usage;
	anon *= MIB;
	map *= MIB;
	if ((roots = calloc(n, sizeof(*roots))) == NULL)
		err(1, "calloc");
	for (pss = 0; pss < 2; pss++)
		if ((wall[pss] = calloc(rounds, sizeof(int64_t))) == NULL ||
		    (cpu[pss] = calloc(rounds, sizeof(int64_t))) == NULL)
			err(1, "calloc");
	if (pipe(pfd) == -1)
		err(1, "pipe");
	for (i = 0; i < n; i++)
		if ((roots[i] = model(argv[optind], map, anon, threads,
		    pfd[1])) == -1)
			err(1, "fork");
	while (got < n && (m = read(pfd[0], buf, sizeof(buf))) > 0)
		got += m;
	if (got < n)
		errx(1, "the models did not all start");

	for (r = 0; r < 2 * rounds; r++) {
		pss = r % 2;
		w0 = ns(CLOCK_MONOTONIC);
		c0 = ns(CLOCK_PROCESS_CPUTIME_ID);
		for (i = 0; i < n; i++)
			if (fp_sample_tree(roots[i], &s, pss) == -1)
				errx(1, "tree %d: no sample", i);
		wall[pss][r / 2] = ns(CLOCK_MONOTONIC) - w0;
		cpu[pss][r / 2] = ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	}
	(void)getloadavg(load, 3);
	printf("%d trees (a root of %d threads mapping %lld MiB, %lld MiB "
	    "anonymous, and a child), %d rounds each way, load %.2f\n", n,
	    threads, (long long)(map / MIB), (long long)(anon / MIB), rounds,
	    load[0]);
	for (pss = 0; pss < 2; pss++) {
		qsort(wall[pss], rounds, sizeof(int64_t), cmp64);
		qsort(cpu[pss], rounds, sizeof(int64_t), cmp64);
		printf("%-20s a round of %d trees %8.2f ms wall %8.2f ms CPU; "
		    "a tree %7.1f us wall %7.1f us CPU (medians)\n",
		    pss ? "status+smaps_rollup" : "status", n,
		    wall[pss][rounds / 2] / 1e6, cpu[pss][rounds / 2] / 1e6,
		    wall[pss][rounds / 2] / 1e3 / n,
		    cpu[pss][rounds / 2] / 1e3 / n);
	}
	printf("a sample of tree 0: %d processes, Rss %.1f MiB, Pss %.1f "
	    "MiB, sum of VmHWM %.1f MiB\n", s.procs, s.rss / (double)MIB,
	    s.pss / (double)MIB, s.hwm / (double)MIB);

	/* Every process started, by pid: children first. */
	for (i = 0; i < n; i++) {
		m = fp_tree(roots[i], pids, FP_TREE_MAX);
		for (k = (m < FP_TREE_MAX ? m : FP_TREE_MAX) - 1; k >= 0; k--)
			(void)kill(pids[k], SIGKILL);
	}
	for (i = 0; i < n; i++)
		(void)waitpid(roots[i], NULL, 0);
	return (0);
 usage:
	fprintf(stderr, "usage: fpbench [-a anon-MiB] [-m map-MiB] "
	    "[-n trees] [-r rounds] [-t threads] FILE\n");
	return (2);
}
