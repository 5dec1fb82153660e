/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * bench/scanbench: the strict scan of a long body alone (issue 15), each
 * way the proxy has of scanning strings: 64-bit words, SSE2, and AVX2
 * where the CPU has it (scan_portable chooses).  A body is read from its
 * file in pieces of 128 KB into fresh memory, each piece noted as it
 * comes (prescan_feed), then scanned whole (rules_scan), as conn.c and
 * http.c do; only the prescan and the scan are timed (now_us).  The ways alternate in ROUNDS rounds of REPS bodies each,
 * and the median round is given, in microseconds a megabyte.
 *
 * usage: scanbench [-r rounds] [-n reps] name file ...
 *
 * Besides the files given (name and path in pairs), three bodies of 1 MB
 * are made here: "ascii", English words with no escape and no byte >=
 * 0x80; "cjk", text that is mostly characters of three bytes (Japanese
 * and Chinese) with some Cyrillic, an escaped newline between sentences;
 * and "cjk-escaped", the same with each of those characters written as
 * a \u escape, as JSON encoders that keep to ASCII write it.
 */
#include <sys/types.h>

#include <err.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proxy.h"

#define PIECE	(128 * 1024)
#define MADE	(1024 * 1024)

struct body {
	const char	*name;
	char		*b;
	size_t		 len;
};

/* The monotonic clock, which the vDSO reads without a system call (the
 * CPU-time clock costs one, a microsecond here, more than the scan of a
 * piece of ASCII); the medians of the rounds leave out what preemption
 * adds. */
static double
now_us(void)
{
	struct timespec	 t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec * 1e6 + t.tv_nsec / 1e3);
}

/* A chat body of about MADE bytes whose contents repeat text. */
static void
make_body(struct body *bd, const char *name, const char *text)
{
	static const char	 head[] = "{\"model\":\"m\",\"messages\":[";
	static const char	 tail[] = "],\"max_tokens\":16}";
	size_t			 tl = strlen(text), cap = MADE + 8192, n, k;
	char			*b;
	int			 i;

	if ((b = malloc(cap)) == NULL)
		err(1, NULL);
	memcpy(b, head, sizeof(head) - 1);
	n = sizeof(head) - 1;
	for (i = 0; n + 4096 + tl < MADE; i++) {
		n += snprintf(b + n, cap - n, "%s{\"role\":\"%s\",\"content\":\"",
		    i ? "," : "", i % 2 ? "assistant" : "user");
		/* about 4 KB a message */
		for (k = 0; k + tl <= 4000 && n + tl + 64 < cap; k += tl) {
			memcpy(b + n, text, tl);
			n += tl;
		}
		n += snprintf(b + n, cap - n, "\"}");
	}
	memcpy(b + n, tail, sizeof(tail) - 1);
	bd->name = name;
	bd->b = b;
	bd->len = n + sizeof(tail) - 1;
}

static void
read_body(struct body *bd, const char *name, const char *path)
{
	FILE	*f;
	long	 n;

	if ((f = fopen(path, "rb")) == NULL || fseek(f, 0, SEEK_END) == -1 ||
	    (n = ftell(f)) <= 0 || fseek(f, 0, SEEK_SET) == -1)
		err(1, "%s", path);
	if ((bd->b = malloc(n)) == NULL)
		err(1, NULL);
	if (fread(bd->b, 1, n, f) != (size_t)n)
		errx(1, "%s: short read", path);
	fclose(f);
	bd->name = name;
	bd->len = n;
}

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

/* The time of one body's prescan and scan, the body copied into
 * fresh memory piece by piece first, as a socket's reads would. */
static double
one(const struct body *bd, struct prescan *ps)
{
	static struct rscan	 rs;
	double			 t, spent = 0;
	size_t			 at, n;
	char			*b;

	if ((b = malloc(bd->len)) == NULL)
		err(1, NULL);
	prescan_reset(ps);
	for (at = 0; at < bd->len; at += n) {
		n = bd->len - at < PIECE ? bd->len - at : PIECE;
		memcpy(b + at, bd->b + at, n);
		t = now_us();
		prescan_feed(ps, b, at + n);
		spent += now_us() - t;
	}
	t = now_us();
	if (rules_scan(b, bd->len, ps, &rs) != 1)
		errx(1, "%s: the scan does not take it", bd->name);
	spent += now_us() - t;
	free(b);
	return (spent);
}

int
main(int argc, char *argv[])
{
	static const int	 modes[] = { SCAN_WORDS, SCAN_SSE2, SCAN_BEST };
	struct body		 bodies[16];
	struct prescan		 ps;
	double			*t[3], med[3], sum;
	size_t			 nb = 0, i, m;
	int			 ch, rounds = 9, reps = 20, r, k;

	while ((ch = getopt(argc, argv, "n:r:")) != -1) {
		switch (ch) {
		case 'n':
			reps = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: scanbench [-r rounds] "
			    "[-n reps] name file ...\n");
			return (2);
		}
	}
	argc -= optind;
	argv += optind;
	if (rounds < 1 || reps < 1 || argc % 2 != 0 || argc / 2 > 13)
		errx(2, "bad arguments");
	for (k = 0; k < argc; k += 2)
		read_body(&bodies[nb++], argv[k], argv[k + 1]);
	make_body(&bodies[nb++], "ascii", "the model reads a long prompt "
	    "and answers with a short one; ");
	make_body(&bodies[nb++], "cjk", "\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e"
	    "\xe3\x81\xae\xe6\x96\x87\xe7\xab\xa0\xe3\x82\x92\xe6\x9b\xb8\xe3"
	    "\x81\x8f\xe3\x80\x82\xe4\xb8\xad\xe6\x96\x87\xe7\x9a\x84\xe5\x8f"
	    "\xa5\xe5\xad\x90\xe3\x80\x82\\n\xd0\xa0\xd1\x83\xd1\x81\xd1\x81"
	    "\xd0\xba\xd0\xb8\xd0\xb9 \xd1\x82\xd0\xb5\xd0\xba\xd1\x81\xd1\x82."
	    " ");
	/* the same as an encoder that keeps to ASCII writes it */
	make_body(&bodies[nb++], "cjk-escaped", "\\u65e5\\u672c\\u8a9e"
	    "\\u306e\\u6587\\u7ae0\\u3092\\u66f8\\u304f\\u3002\\u4e2d"
	    "\\u6587\\u7684\\u53e5\\u5b50\\u3002\\n\\u0420\\u0443"
	    "\\u0441\\u0441\\u043a\\u0438\\u0439 \\u0442\\u0435\\u043a"
	    "\\u0441\\u0442. ");
	for (m = 0; m < 3; m++)
		if ((t[m] = calloc(rounds, sizeof(double))) == NULL)
			err(1, NULL);
	memset(&ps, 0, sizeof(ps));
	printf("| body | bytes | words us/MB | SSE2 us/MB | best us/MB "
	    "(%s) | best / SSE2 |\n|---|---:|---:|---:|---:|---:|\n",
	    __builtin_cpu_supports("avx2") ? "AVX2" : "no AVX2: SSE2");
	for (i = 0; i < nb; i++) {
		for (r = 0; r < rounds; r++)
			for (m = 0; m < 3; m++) {
				scan_portable = modes[m];
				sum = 0;
				for (k = 0; k < reps; k++)
					sum += one(&bodies[i], &ps);
				t[m][r] = sum / reps * (1024.0 * 1024.0) /
				    bodies[i].len;
			}
		for (m = 0; m < 3; m++) {
			qsort(t[m], rounds, sizeof(double), cmp_double);
			med[m] = t[m][rounds / 2];
		}
		printf("| %s | %zu | %.0f | %.0f | %.0f | %.2f |\n",
		    bodies[i].name, bodies[i].len, med[0], med[1], med[2],
		    med[2] / med[1]);
	}
	prescan_clear(&ps);
	return (0);
}
