/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * bench/ollamabench: what a streamed token costs the proxy on Ollama's
 * route against OpenAI's (issue 35 wants at most 1.2x), as far as phase
 * 1 has it: the translation (ollama_stream_feed) of each chunk against
 * the pass-through the forwarder does to the same chunk today.
 *
 * A chunk is one of llama-server's SSE events for one token (as
 * shared/realserver's sends them: 266 bytes, "data: " and "\n\n"), in
 * the chunked coding of its answer.  For each, both ways do what
 * forward.c does (upstream_bytes and client_data): the chunked coding
 * decoded in place (h1_chunked_decode), the piece looked at for usage
 * (a memmem for "tokens", its last 128 bytes kept), and the output put
 * in the client's chunked coding.  The Ollama way puts the piece through
 * the translation first, and frames its lines instead of the piece.
 *
 * Two settings, each a ratio in one run: "memory", the work alone on
 * bytes already read (and a memcpy of the chunk into the read buffer,
 * the same both ways); and "syscalls", each chunk also written to a
 * socket, read from it, the output written to another and read from
 * that: four system calls, where the proxy makes three a token
 * (epoll_wait, read, write) and runs libevent's dispatch.  The time is
 * the thread's CPU time of a whole round (preemption on a loaded
 * machine is not counted), over its chunks.  Rounds alternate the two
 * ways; the median round of each is given, in ns a chunk.  Phase 2
 * measures the proxy whole.
 *
 * usage: ollamabench [-r rounds] [-n chunks]
 */
#include <sys/types.h>
#include <sys/socket.h>

#include <err.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "h1.h"
#include "proxy.h"
#include "ollama.h"

#define UP_READ		(64 * 1024)	/* forward.c's read buffer */
#define CARRY		128		/* and the usage scan's carry */

struct way {
	struct h1_chunked	 ch;
	char			 carry[CARRY];
	size_t			 carrylen;
	int64_t			 hits;		/* usage scans that looked */
	struct buf		 out;		/* the client's bytes */
	struct buf		 lines;		/* the translation's */
	struct ollama_stream	 st;
	int			 ollama;
};

static double
cpu_ns(void)
{
	struct timespec	 t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (t.tv_sec * 1e9 + t.tv_nsec);
}

static int
cmp_double(const void *a, const void *b)
{
	double	 x = *(const double *)a, y = *(const double *)b;

	return (x < y ? -1 : x > y);
}

/* forward.c's usage_scan, as far as a token's chunk takes it. */
static void
usage_look(struct way *w, const char *d, size_t len)
{
	size_t	 n;

	if (memmem(d, len, "tokens", 6) != NULL ||
	    memmem(w->carry, w->carrylen, "usage", 5) != NULL)
		w->hits++;
	n = len < sizeof(w->carry) ? len : sizeof(w->carry);
	memcpy(w->carry, d + len - n, n);
	w->carrylen = n;
}

/* In the client's chunked coding, as client_data frames a piece. */
static void
frame(struct buf *out, const char *d, size_t len)
{
	char	 h[24], *e = h + sizeof(h), *p = e;
	size_t	 v = len;

	do {
		*--p = "0123456789abcdef"[v % 16];
		v /= 16;
	} while (v != 0);
	if (buf_add(out, p, e - p, 16384) == -1 ||
	    buf_add(out, "\r\n", 2, 16384) == -1 ||
	    buf_add(out, d, len, 16384) == -1 ||
	    buf_add(out, "\r\n", 2, 16384) == -1)
		errx(1, "out of memory");
}

/* One read's bytes (in place): decoded, looked at, translated or not,
 * framed for the client. */
static void
piece(struct way *w, char *b, size_t len)
{
	size_t	 dlen;
	int	 done;

	if (h1_chunked_decode(&w->ch, b, len, &dlen, &done) != (ssize_t)len)
		errx(1, "the chunked coding does not read");
	usage_look(w, b, dlen);
	if (!w->ollama) {
		frame(&w->out, b, dlen);
		return;
	}
	w->lines.len = 0;
	if (ollama_stream_feed(&w->st, b, dlen, 2000000000LL, &w->lines) ==
	    -1)
		errx(1, "the translation ended the stream: %.*s",
		    (int)w->lines.len, w->lines.b);
	if (w->lines.len > 0)
		frame(&w->out, w->lines.b, w->lines.len);
}

static void
way_init(struct way *w, int ollama)
{
	static const struct ollama_times	 t = { 1700000000000000000LL,
	    1000000000LL, 1250000000LL, 1300000000LL };
	struct ollama_req			 r;

	memset(w, 0, sizeof(*w));
	h1_chunked_init(&w->ch);
	w->ollama = ollama;
	memset(&r, 0, sizeof(r));
	r.api = OLLAMA_CHAT;
	r.stream = 1;
	ollama_stream_init(&w->st, &r, "qwen2.5-7b", &t);
}

static void
way_free(struct way *w)
{
	ollama_stream_free(&w->st);
	buf_release(&w->out, 0);
	buf_release(&w->lines, 0);
}

/* A round of n chunks one way, in CPU ns a chunk: in memory (up NULL),
 * or each through up and down. */
static double
round_of(const char *chunk, size_t clen, int n, int ollama, int up[2],
    int down[2])
{
	static char	 ubuf[UP_READ], sink[UP_READ];
	struct way	 w;
	double		 t;
	ssize_t		 k;
	int		 i;

	way_init(&w, ollama);
	t = cpu_ns();
	for (i = 0; i < n; i++) {
		if (up == NULL) {
			memcpy(ubuf, chunk, clen);
			piece(&w, ubuf, clen);
			w.out.len = 0;
			continue;
		}
		if (write(up[1], chunk, clen) != (ssize_t)clen)
			err(1, "write upstream");
		if ((k = read(up[0], ubuf, sizeof(ubuf))) != (ssize_t)clen)
			err(1, "read upstream");
		piece(&w, ubuf, (size_t)k);
		if (write(down[0], w.out.b, w.out.len) != (ssize_t)w.out.len)
			err(1, "write to the client");
		if (read(down[1], sink, sizeof(sink)) != (ssize_t)w.out.len)
			err(1, "read as the client");
		w.out.len = 0;
	}
	t = cpu_ns() - t;
	way_free(&w);
	return (t / n);
}

int
main(int argc, char *argv[])
{
	static const char	 event[] = "data: {\"choices\":[{\"finish_reason\":"
	    "null,\"index\":0,\"delta\":{\"content\":\" Blood\"}}],\"created\":"
	    "1796287010,\"id\":\"chatcmpl-9dVxfLI94JjzZCxI6iGZNYtTxiQWkPYR\","
	    "\"model\":\"/work/shared/realserver/tiny-a.gguf\","
	    "\"system_fingerprint\":\"b0-unknown\",\"object\":"
	    "\"chat.completion.chunk\"}\n\n";
	char			 chunk[512];
	double			*t[2][2], med[2][2];
	int			 up[2], down[2], ch, rounds = 15, n = 20000, r, m, s;
	size_t			 clen;

	while ((ch = getopt(argc, argv, "n:r:")) != -1) {
		switch (ch) {
		case 'n':
			n = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: ollamabench [-r rounds] "
			    "[-n chunks]\n");
			return (2);
		}
	}
	if (rounds < 1 || n < 1)
		errx(2, "bad arguments");
	clen = (size_t)snprintf(chunk, sizeof(chunk), "%zx\r\n%s\r\n",
	    strlen(event), event);
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, up) == -1 ||
	    socketpair(AF_UNIX, SOCK_STREAM, 0, down) == -1)
		err(1, "socketpair");
	for (s = 0; s < 2; s++)
		for (m = 0; m < 2; m++)
			if ((t[s][m] = calloc(rounds, sizeof(double))) == NULL)
				err(1, NULL);
	/* a round of each to warm up, then the rounds, alternating */
	for (s = 0; s < 2; s++)
		for (m = 0; m < 2; m++)
			(void)round_of(chunk, clen, n / 10 + 1, m,
			    s ? up : NULL, down);
	for (r = 0; r < rounds; r++)
		for (s = 0; s < 2; s++)
			for (m = 0; m < 2; m++)
				t[s][m][r] = round_of(chunk, clen, n, m,
				    s ? up : NULL, down);
	for (s = 0; s < 2; s++)
		for (m = 0; m < 2; m++) {
			qsort(t[s][m], rounds, sizeof(double), cmp_double);
			med[s][m] = t[s][m][rounds / 2];
		}
	printf("| a %zu-byte chunk | OpenAI ns | Ollama ns | more ns | "
	    "Ollama / OpenAI |\n|---|---:|---:|---:|---:|\n", strlen(event));
	for (s = 0; s < 2; s++)
		printf("| %s | %.0f | %.0f | %.0f | %.2f |\n", s ? "syscalls" :
		    "memory", med[s][0], med[s][1], med[s][1] - med[s][0],
		    med[s][1] / med[s][0]);
	return (0);
}
