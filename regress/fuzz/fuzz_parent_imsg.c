/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: agencyd's handling of sequences of imsgs from the
 * proxy (proxy_dispatch, proxylink.c) and from agency-ctl clients
 * (control_dispatch, control.c), with everything else that can happen
 * in between: spawns answered or failing, model processes exiting,
 * time passing (the pool's timers), the proxy's channel closing and a
 * new proxy taking over, a shutdown.
 *
 * The two dispatchers are static, so this file compiles proxylink.c and
 * control.c itself (the product code, unchanged; proxysvc.c, which the
 * link hands each message to, comes from the library) and calls them as
 * libevent would, on a socketpair whose other end the harness writes.
 * The pool is the real one (pool.c, poolops.c's operations) with fake
 * effects that never fork: spawn, kill, clock, timers, memory.  A fresh
 * agencyd is set up for each input from a configuration of two models.
 *
 * Invariants, after every step:
 * - the requests in progress the pool reports add up to the holds the
 *   proxy was granted and has not released, and the link counts those
 *   and the requests waiting, never more than the proxy's fds (the
 *   harness runs with 128);
 * - only a request the current proxy asked for and did not withdraw is
 *   granted or refused, and only once; hold ids are never reused; only
 *   one that asked for it, and waits, is told what it waits for, and
 *   a hold request with an unknown flag drops the proxy;
 * - a release of a hold the proxy has keeps it; a release of one it has
 *   not, a malformed frame, or a closed channel drops it, and then it
 *   has no holds left;
 * - what agencyd writes to the proxy is well framed and reads back as
 *   the proxy reads it (proto.c, and the configuration confimsg.c),
 *   and every grant carries a hold id the pool granted;
 * - a message the proxy wrote whole and then cut short or lengthened
 *   drops it (the typed reader takes no less and no more);
 * - a cancel report keeps the proxy only for a cancel agencyd sent it;
 *   fds from the proxy, or from a control client, drop the sender and
 *   are closed at once (the other end of the pipe sent sees EOF);
 * - the link pauses reading for status answers only while some are
 *   queued (no pause that nothing would end), and no control client
 *   has more queued than its bound;
 * - no crash, no leak (LSan, at the end of each input).
 *
 * Input: a config byte (bit 0: model b is not lazy; bit 1: spawns are
 * answered from within), then steps, each an opcode byte and its bytes
 * (see step()).  FUZZ_WRITE_SEEDS=DIR writes seed sequences and exits.
 */
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <err.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "msg.h"
#include "../../agencyd/proxylink.c"
/* Binding the listeners is an effect like spawning: faked below. */
#define listeners_bind	real_listeners_bind
int	real_listeners_bind(struct agency_conf *);
#include "../../agencyd/listeners.c"
#undef listeners_bind
#include "../../agencyd/control.c"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* What agencyd.c's shutdown does when the models are stopped. */
static void
shutdown_done(void *arg)
{
	(void)arg;
}

/* What emit.c's hook does for a new proxy: the events stream's sync. */
static void
proxy_ready_sync(void *arg, struct agencyd *d)
{
	(void)arg;
	emit_sync(d, 0, 1, NULL);
}

int	listeners_bind(struct agency_conf *);

static int	bind_fails;

/* A socket for every listener that has none, as if bound. */
int
listeners_bind(struct agency_conf *conf)
{
	struct listen_conf	*l;

	TAILQ_FOREACH(l, &conf->listens, entry) {
		if (l->fd != -1)
			continue;
		if (bind_fails)
			return (-1);
		if ((l->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC,
		    0)) == -1)
			err(1, "socket");
	}
	return (0);
}

static const char *confs[] = {
	/* both lazy, only one fits the budget; requests wait, bounded */
	"ports 5800 to 5999\n"
	"memory budget 5G\n"
	"max queue 4\n"
	"fairness window 2s\n"
	"runtime \"llama\" {\n"
	"\tcommand \"/nonexistent/llama --port %p -m %u\"\n"
	"\tready get \"/health\"\n"
	"\tstops on close always\n"
	"}\n"
	"runtime \"vllm\" {\n"
	"\tcommand \"/nonexistent/vllm serve %u --port %p\"\n"
	"\tready post \"/v1/completions\" body \"{}\"\n"
	"\tstops on close never\n"
	"}\n"
	"model \"a\" {\n\truntime \"llama\"\n\tupstream \"/m/a.gguf\"\n"
	"\tlazy\n\tmemory 3G\n\tidle timeout 1m\n\tload timeout 10s\n"
	"\tmax requests 2\n\tmax queue 2\n\tqueue timeout 30s\n"
	"\talias \"aa\"\n}\n"
	"model \"b\" {\n\truntime \"vllm\"\n\tupstream \"org/b\"\n"
	"\tlazy\n\tmemory 3G\n}\n",
	/* b is not lazy: loaded at start, restarted when it dies; nothing
	 * waits (the reference pool) */
	"ports 5800 to 5999\n"
	"memory budget 5G\n"
	"queue timeout 0s\n"
	"runtime \"llama\" {\n"
	"\tcommand \"/nonexistent/llama --port %p -m %u\"\n"
	"\tready get \"/health\"\n"
	"\tstops on close always\n"
	"}\n"
	"runtime \"vllm\" {\n"
	"\tcommand \"/nonexistent/vllm serve %u --port %p\"\n"
	"\tready get \"/health\"\n"
	"\tstops on close stream\n"
	"}\n"
	"model \"a\" {\n\truntime \"llama\"\n\tupstream \"/m/a.gguf\"\n"
	"\tlazy\n\tmemory 3G\n\talias \"aa\"\n}\n"
	"model \"b\" {\n\truntime \"vllm\"\n\tupstream \"org/b\"\n"
	"\tmemory 2G\n}\n",
	/* for reloads: b goes, c comes, a changes, another listener */
	"listen on 127.0.0.1 port 8081\n"
	"ports 5800 to 5999\n"
	"runtime \"llama\" {\n"
	"\tcommand \"/nonexistent/llama --port %p -m %u -c 2\"\n"
	"\tready get \"/health\"\n"
	"}\n"
	"model \"a\" {\n\truntime \"llama\"\n\tupstream \"/m/a.gguf\"\n"
	"\tmemory 1G\n}\n"
	"model \"c\" {\n\truntime \"llama\"\n\tupstream \"/m/c.gguf\"\n"
	"\tlazy\n\tmemory 1G\n\talias \"b\"\n}\n",
	/* for reloads: does not parse */
	"model \"a\" {\n",
};
#define NCONFS	(sizeof(confs) / sizeof(confs[0]))


/* The fake world. */
struct ftimer {
	TAILQ_ENTRY(ftimer)	 entry;
	int64_t			 at;
	void			(*fn)(void *);
	void			*arg;
};
TAILQ_HEAD(ftimers, ftimer);

struct fspawn {
	TAILQ_ENTRY(fspawn)	 entry;
	uint64_t		 spawnid;
};
TAILQ_HEAD(fspawns, fspawn);

#define MAXPROCS	64
#define MAXHOLDS	4096	/* every grant of one input, bursts included */
#define MAXREQS		1024	/* a burst of 510 over those waiting */
#define MAXCONNS	3
#define MAXCANCELS	64
#define NOFILE		128	/* the proxy's fds: its bound of holds */

static struct {
	struct agencyd		 d;
	int			 conf_fd;
	int			 conf_which;
	char			 conf_path[64];
	int			 spawn_inline;
	int64_t			 now;
	struct mem_snapshot	 mem;
	struct ftimers		 timers;
	struct fspawns		 spawns;
	pid_t			 next_pid;
	struct {
		pid_t	pid;
		int	sig;	/* the last signal it was sent */
	}			 procs[MAXPROCS];
	size_t			 nprocs;

	int			 pfd;		/* our end of the proxy's */
	struct imsgbuf		 pib;		/* what agencyd sent on it */
	struct conf_recv	 crecv;		/* its configuration, read */
	uint64_t		 holds[MAXHOLDS];	/* granted, held */
	size_t			 nholds;
	uint64_t		 seen[MAXHOLDS];	/* every hold id */
	size_t			 nseen;
	uint64_t		 reqs[MAXREQS];	/* asked, not answered */
	size_t			 nreqs;
	uint64_t		 told[MAXREQS];	/* asked to be told waits */
	size_t			 ntold;
	struct proto_cancel	 cancels[MAXCANCELS];	/* sent to it */
	size_t			 ncancels;
	int			 in_dispatch;

	struct {
		struct ctl_conn	*c;
		uint32_t	 id;
		int		 fd;	/* our end, -1: none */
	}			 conns[MAXCONNS];
	int			 stopped;
	uint64_t		 line_seq;	/* the models' lines */
} w;

static void
conf_write(size_t which)
{
	size_t	len = strlen(confs[which]);

	if (ftruncate(w.conf_fd, 0) == -1 ||
	    pwrite(w.conf_fd, confs[which], len, 0) != (ssize_t)len)
		err(1, "memfd");
}

static struct pool_ops	 fake_ops;
static int		 verbose;

#define CHECK(cond) do {						\
	if (!(cond)) {							\
		fprintf(stderr, "%s:%d: invariant broken: %s\n",	\
		    __FILE__, __LINE__, #cond);				\
		abort();						\
	}								\
} while (0)

static void
log_drop(int pri, const char *line)
{
	if (verbose)
		fprintf(stderr, "log %d: %s\n", pri, line);
}

/* --- the fake effects --- */

static void
f_spawn(void *ctx, const struct pool_plan *plan, uint64_t spawnid,
    uint16_t port)
{
	struct fspawn	*s;

	(void)ctx;
	(void)plan;
	(void)port;
	if (w.spawn_inline) {
		CHECK(w.nprocs < MAXPROCS);
		w.procs[w.nprocs].pid = w.next_pid++;
		w.procs[w.nprocs].sig = 0;
		pool_spawned(w.d.pool, spawnid, w.procs[w.nprocs++].pid, NULL);
		return;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL)
		err(1, NULL);
	s->spawnid = spawnid;
	TAILQ_INSERT_TAIL(&w.spawns, s, entry);
}

static int
f_port_free(void *ctx, uint16_t port)
{
	(void)ctx;
	return (port % 7 != 3);		/* some ports are taken */
}

static void
f_kill(void *ctx, pid_t pgid, int sig)
{
	size_t	i;

	(void)ctx;
	for (i = 0; i < w.nprocs; i++)
		if (w.procs[i].pid == pgid)
			w.procs[i].sig = sig;
}

static int64_t
f_now(void *ctx)
{
	(void)ctx;
	return (w.now);
}

static void *
f_timer_add(void *ctx, int64_t ms, void (*fn)(void *), void *arg)
{
	struct ftimer	*t, *e;

	(void)ctx;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		err(1, NULL);
	t->at = w.now + (ms < 0 ? 0 : ms);
	t->fn = fn;
	t->arg = arg;
	/* in order of deadline, first come first among equals */
	TAILQ_FOREACH(e, &w.timers, entry)
		if (e->at > t->at)
			break;
	if (e != NULL)
		TAILQ_INSERT_BEFORE(e, t, entry);
	else
		TAILQ_INSERT_TAIL(&w.timers, t, entry);
	return (t);
}

static void
f_timer_del(void *ctx, void *timer)
{
	struct ftimer	*t = timer, *e;

	(void)ctx;
	if (t == NULL)
		return;
	TAILQ_FOREACH(e, &w.timers, entry)
		if (e == t)
			break;
	CHECK(e != NULL);	/* never a fired or unknown one */
	TAILQ_REMOVE(&w.timers, t, entry);
	free(t);
}

static int
f_memory(void *ctx, struct mem_snapshot *ms)
{
	(void)ctx;
	if (w.mem.total == 0)
		return (-1);
	*ms = w.mem;
	return (0);
}

static void
f_log(void *ctx, int pri, const char *line)
{
	(void)ctx;
	log_drop(pri, line);
}

/*
 * The request is answered, or withdrawn: it waits no more.  A hostile
 * proxy may send one id twice, once asking to be told its waits and
 * once not, and which of the two ends is the pool's to choose: the ids
 * that asked are kept while as many requests with the id still wait.
 */
static int
req_take(uint64_t reqid)
{
	size_t	i, left = 0, asked = 0;
	int	found = -1;

	for (i = 0; i < w.nreqs; i++)
		if (w.reqs[i] == reqid) {
			w.reqs[i] = w.reqs[--w.nreqs];
			found = 0;
			break;
		}
	for (i = 0; i < w.nreqs; i++)
		if (w.reqs[i] == reqid)
			left++;
	for (i = 0; i < w.ntold; i++)
		if (w.told[i] == reqid)
			asked++;
	for (i = 0; asked > left && i < w.ntold; i++)
		if (w.told[i] == reqid) {
			w.told[i] = w.told[--w.ntold];
			asked--;
			i--;
		}
	return (found);
}

static void
f_granted(void *ctx, uint64_t reqid, uint64_t holdid,
    const struct pool_plan *plan, uint16_t port)
{
	size_t	i;

	if (verbose)
		fprintf(stderr, "granted req %llu hold %llu\n",
		    (unsigned long long)reqid, (unsigned long long)holdid);
	CHECK(w.d.proxy_up);
	CHECK(req_take(reqid) == 0);	/* asked for, not withdrawn */
	for (i = 0; i < w.nseen; i++)
		CHECK(w.seen[i] != holdid);	/* never reused */
	CHECK(w.nholds < MAXHOLDS && w.nseen < MAXHOLDS);
	w.seen[w.nseen++] = holdid;
	w.holds[w.nholds++] = holdid;
	CHECK(port >= 5800 && port <= 5999);
	model_pool_ops.granted(ctx, reqid, holdid, plan, port);
}

static void
f_refused(void *ctx, uint64_t reqid, int reason, int retry_after,
    const char *message)
{
	if (verbose)
		fprintf(stderr, "refused req %llu: %s\n",
		    (unsigned long long)reqid, message);
	CHECK(w.d.proxy_up);
	CHECK(req_take(reqid) == 0);
	CHECK(reason >= REFUSE_NOT_LOADED && reason <= REFUSE_LAST);
	CHECK(retry_after >= 0 && retry_after <= PROTO_RETRY_MAX);
	model_pool_ops.refused(ctx, reqid, reason, retry_after, message);
}

static void
f_waiting(void *ctx, uint64_t reqid, int wait, uint32_t ahead,
    int64_t load_ms)
{
	size_t	i;
	int	asked = 0, waits = 0;

	if (verbose)
		fprintf(stderr, "req %llu waits for %d, %u ahead\n",
		    (unsigned long long)reqid, wait, ahead);
	CHECK(w.d.proxy_up);
	CHECK(!w.in_dispatch);		/* from a timer alone */
	for (i = 0; i < w.ntold; i++)
		if (w.told[i] == reqid)
			asked = 1;
	for (i = 0; i < w.nreqs; i++)
		if (w.reqs[i] == reqid)
			waits = 1;
	CHECK(asked && waits);
	CHECK(wait > WAIT_NONE && wait <= WAIT_LAST);
	CHECK((wait == WAIT_LOAD) == (load_ms >= 0) && load_ms >= -1);
	CHECK(ahead < MAXREQS);
	model_pool_ops.waiting(ctx, reqid, wait, ahead, load_ms);
}

/* --- the proxy's side --- */

static void
drain(int fd)
{
	char		 buf[65536];
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cmsg;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * 16)];
	} cmsgbuf;
	int		 pfd;
	size_t		 i, n;

	if (fd == -1)
		return;
	for (;;) {
		memset(&msg, 0, sizeof(msg));
		iov.iov_base = buf;
		iov.iov_len = sizeof(buf);
		msg.msg_iov = &iov;
		msg.msg_iovlen = 1;
		msg.msg_control = cmsgbuf.buf;
		msg.msg_controllen = sizeof(cmsgbuf.buf);
		if (recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) <= 0)
			return;
		for (cmsg = CMSG_FIRSTHDR(&msg); cmsg != NULL;
		    cmsg = CMSG_NXTHDR(&msg, cmsg)) {
			if (cmsg->cmsg_level != SOL_SOCKET ||
			    cmsg->cmsg_type != SCM_RIGHTS)
				continue;
			n = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (i = 0; i < n; i++) {
				memcpy(&pfd, CMSG_DATA(cmsg) + i * sizeof(int),
				    sizeof(int));
				close(pfd);
			}
		}
	}
}

/* A configuration the proxy read whole: its sockets closed. */
static void
conf_done(void)
{
	struct plisten	*l;

	TAILQ_FOREACH(l, &w.crecv.conf->listens, entry)
		close(l->fd);
	pconf_free(w.crecv.conf);
	w.crecv.conf = NULL;
}

/* Read what agencyd sent the proxy, as the proxy would: every message
 * well framed and read whole, every grant of a hold granted. */
static void
drain_proxy(void)
{
	union proto_msg	 u;
	struct imsg	 imsg;
	const char	*why;
	ssize_t		 n;
	size_t		 i;
	uint32_t	 type;
	int		 seen, rv;

	if (w.pfd == -1)
		return;
	while ((n = imsg_read(&w.pib)) > 0) {
		while ((n = imsg_get(&w.pib, &imsg)) > 0) {
			type = imsg_get_type(&imsg);
			if (type >= IMSG_CONF_FIRST && type <= IMSG_CONF_LAST) {
				rv = config_recv(&w.crecv, &imsg);
				if (rv == -1 && verbose)
					fprintf(stderr, "config: %s\n",
					    w.crecv.why);
				CHECK(rv != -1);
				if (rv == 1)
					conf_done();
				imsg_free(&imsg);
				continue;
			}
			if (proto_read(&imsg, FROM_PARENT, &u, sizeof(u),
			    &why) == -1 && verbose)
				fprintf(stderr, "type %u: %s\n", type, why);
			CHECK(proto_read(&imsg, FROM_PARENT, &u, sizeof(u),
			    &why) == 0);
			if (type == IMSG_CANCEL && w.ncancels < MAXCANCELS)
				w.cancels[w.ncancels++] = u.cancel;
			if (type == IMSG_HOLD_GRANT) {
				for (i = 0, seen = 0; i < w.nseen; i++)
					if (w.seen[i] == u.hold_grant.holdid)
						seen = 1;
				CHECK(seen);
			}
			imsg_free(&imsg);
		}
		CHECK(n == 0);		/* well framed */
	}
	CHECK(n == 0 || errno == EAGAIN);
}

/* proxy_start without the fork: a socketpair and a new generation. */
static void
proxy_fake_start(void)
{
	struct agencyd	*d = &w.d;
	struct probe	*pr;
	int		 sp[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0, sp) == -1)
		err(1, "socketpair");
	/* no process (proxy_hostile kills nobody), as proxy_start has it */
	if (proxy_link_open(d, sp[0]) == -1)
		errx(1, "proxy_link_open");
	CHECK(plink.fdmax == NOFILE);
	d->proxy_started = mono_ms();
	w.pfd = sp[1];
	imsg_init(&w.pib, w.pfd);
	w.ncancels = 0;
	TAILQ_FOREACH(pr, &d->probes, entry)
		proxy_send_probe(d, &pr->p);
}

static void
proxy_gone(void)
{
	/* What the proxy was granted went with it. */
	w.nholds = 0;
	w.nreqs = 0;
	w.ntold = 0;
	w.ncancels = 0;
	if (w.pfd != -1) {
		imsg_clear(&w.pib);
		close(w.pfd);
	}
	w.pfd = -1;
	config_recv_clear(&w.crecv);
}

static void
proxy_io(void)
{
	int	up = w.d.proxy_up;

	if (!up)
		return;
	w.in_dispatch = 1;
	proxy_dispatch(w.d.proxy_iev.ibuf.fd, EV_READ | EV_WRITE, &w.d);
	w.in_dispatch = 0;
	if (!w.d.proxy_up)
		proxy_gone();
	drain_proxy();
}

/*
 * Until agencyd has taken all it was sent: answers are read, so a link
 * paused for status answers goes on (a bounded number of turns: one
 * that never does would be a bug).
 */
static void
proxy_io_all(void)
{
	int	n, unread;

	for (n = 0; w.d.proxy_up; n++) {
		CHECK(n < 10000);
		proxy_io();
		if (w.d.proxy_up && !plink.rpaused &&
		    ioctl(w.d.proxy_iev.ibuf.fd, FIONREAD, &unread) == 0 &&
		    unread == 0)
			break;
	}
}

static void
check(void)
{
	struct proto_status	st;
	struct imsg_hdr		hdr;
	struct ctl_conn		*c;
	size_t			i, n;
	uint64_t		sum = 0;
	int			unread;

	n = pool_count(w.d.pool);
	for (i = 0; i < n; i++) {
		CHECK(pool_status(w.d.pool, i, &st) == 0);
		CHECK(memchr(st.model, '\0', sizeof(st.model)) != NULL &&
		    memchr(st.error, '\0', sizeof(st.error)) != NULL);
		CHECK(proto_state_name(st.state) != NULL);
		CHECK(proto_wait_name(st.waiting) != NULL);
		sum += st.in_progress;
	}
	if (verbose && sum != w.nholds)
		fprintf(stderr, "in progress %llu, holds %zu\n",
		    (unsigned long long)sum, w.nholds);
	CHECK(sum == w.nholds);
	if (!w.d.proxy_up)
		CHECK(w.nholds == 0 && w.nreqs == 0);
	else {
		/* what it was sent all taken: it counts what the pool has */
		if (!plink.rpaused && imsg_peek(&w.d.proxy_iev.ibuf,
		    &hdr) == 0 && ioctl(w.d.proxy_iev.ibuf.fd, FIONREAD,
		    &unread) == 0 && unread == 0) {
			if (verbose && plink.holds != w.nholds + w.nreqs)
				fprintf(stderr, "link holds %llu, harness "
				    "%zu + %zu\n", (unsigned long long)
				    plink.holds, w.nholds, w.nreqs);
			CHECK(plink.holds == w.nholds + w.nreqs);
		}
		CHECK(plink.holds <= plink.fdmax);
		/* a pause only while answers wait to go out */
		CHECK(!plink.rpaused || w.d.proxy_iev.ibuf.w.queued > 0);
	}
	CHECK(pool_status(w.d.pool, n, &st) == -1);
	TAILQ_FOREACH(c, &ctl_conns, entry)
		CHECK(c->iev.ibuf.w.qbytes <= CONTROL_QUEUE_BYTES);
}

/* --- the input --- */

struct input {
	const uint8_t	*p;
	size_t		 left;
};

static unsigned int
u8(struct input *in)
{
	if (in->left == 0)
		return (0);
	in->left--;
	return (*in->p++);
}

static void
bytes(struct input *in, void *dst, size_t len)
{
	size_t	n = len < in->left ? len : in->left;

	memset(dst, 0, len);
	memcpy(dst, in->p, n);
	in->p += n;
	in->left -= n;
}

/*
 * A model name: served, alias, unknown, empty, or as long as it may be.
 * (A string that does not end in its bound is a damaged message's:
 * see payload.)
 */
static void
name(struct input *in, char *dst, size_t size)
{
	static const char	*names[] = { "a", "b", "aa", "nosuch", "" };
	unsigned int		 c = u8(in) % 6;

	memset(dst, 0, size);
	if (c < 5)
		(void)strlcpy(dst, names[c], size);
	else
		memset(dst, 'x', size - 1);
}

/* A string from the input, or (rarely) as long as it may be. */
static void
text(struct input *in, char *dst, size_t size)
{
	unsigned int	len = u8(in);

	memset(dst, 0, size);
	if (len == 255) {
		memset(dst, 'y', size - 1);
		return;
	}
	if (len >= size)
		len = size - 1;
	bytes(in, dst, len);
	dst[len] = '\0';
}

static uint64_t
reqid(struct input *in)
{
	return (u8(in) % 8);	/* small: they collide, 0 is invalid */
}

/* Write one framed message; flags and len may lie. */
static void
frame(int fd, uint32_t type, const void *data, size_t len, uint32_t hlen,
    uint32_t flags)
{
	struct imsg_hdr	 hdr;
	unsigned char	 buf[MAX_IMSGSIZE + sizeof(hdr)];
	ssize_t		 n;

	if (fd == -1)
		return;
	if (len > MAX_IMSGSIZE)
		len = MAX_IMSGSIZE;
	memset(&hdr, 0, sizeof(hdr));
	hdr.type = type;
	hdr.len = hlen;
	hdr.flags = flags;
	hdr.pid = 4242;
	memcpy(buf, &hdr, sizeof(hdr));
	if (len > 0)
		memcpy(buf + sizeof(hdr), data, len);
	n = write(fd, buf, sizeof(hdr) + len);
	CHECK(n == (ssize_t)(sizeof(hdr) + len));
}

/*
 * Write a message's first byte with an fd (the write end of a new pipe)
 * and the rest after it; returns the read end, to see the fd closed.
 */
static int
frame_fd(int fd, uint32_t type, const void *data, size_t len)
{
	struct msghdr	 msg;
	struct iovec	 iov;
	struct cmsghdr	*cmsg;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cmsgbuf;
	struct imsg_hdr	 hdr;
	unsigned char	 buf[MAX_IMSGSIZE + sizeof(hdr)];
	int		 p[2];

	if (len > MAX_IMSGSIZE - sizeof(hdr))
		len = MAX_IMSGSIZE - sizeof(hdr);
	memset(&hdr, 0, sizeof(hdr));
	hdr.type = type;
	hdr.len = sizeof(hdr) + len;
	hdr.flags = IMSGF_HASFD;
	memcpy(buf, &hdr, sizeof(hdr));
	if (len > 0)
		memcpy(buf + sizeof(hdr), data, len);
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) == -1)
		err(1, "pipe");
	memset(&msg, 0, sizeof(msg));
	memset(&cmsgbuf, 0, sizeof(cmsgbuf));
	iov.iov_base = buf;
	iov.iov_len = 1;
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cmsgbuf.buf;
	msg.msg_controllen = sizeof(cmsgbuf.buf);
	cmsg = CMSG_FIRSTHDR(&msg);
	cmsg->cmsg_len = CMSG_LEN(sizeof(int));
	cmsg->cmsg_level = SOL_SOCKET;
	cmsg->cmsg_type = SCM_RIGHTS;
	memcpy(CMSG_DATA(cmsg), &p[1], sizeof(int));
	CHECK(sendmsg(fd, &msg, 0) == 1);
	CHECK(write(fd, buf + 1, sizeof(hdr) + len - 1) ==
	    (ssize_t)(sizeof(hdr) + len - 1));
	close(p[1]);
	return (p[0]);
}

/* The fd frame_fd sent is closed: its pipe's reader sees EOF. */
static void
check_fd_closed(int rfd)
{
	char	c;

	CHECK(read(rfd, &c, 1) == 0);
	close(rfd);
}

static const uint32_t	proxy_types[] = { IMSG_HOLD_REQ, IMSG_HOLD_WITHDRAW,
			    IMSG_HOLD_RELEASE, IMSG_PROBE_RESULT,
			    IMSG_STATUS_REQ, IMSG_CANCEL_DONE, IMSG_LOG,
			    IMSG_PROXY_READY, IMSG_CANCEL, IMSG_ADMIN,
			    IMSG_LOGS_REQ, IMSG_LOGS_UNFOLLOW };
#define NPROXY_TYPES	(sizeof(proxy_types) / sizeof(proxy_types[0]))

static const uint32_t	ctl_types[] = { IMSG_CTL_STATUS_REQ, IMSG_CTL_LOAD,
			    IMSG_CTL_UNLOAD, IMSG_CTL_CANCEL, IMSG_CTL_RELOAD,
			    IMSG_CTL_VERBOSE, IMSG_CTL_LOGS, IMSG_CTL_PLAN,
			    IMSG_CTL_STATUS, IMSG_CTL_FOLLOW };
#define NCTL_TYPES	(sizeof(ctl_types) / sizeof(ctl_types[0]))

/*
 * What the receiver makes of a payload: *whole 1 and *m when it reads
 * (then a release is a release of *relid), 0 when it does not.
 */
static size_t
reads(enum proto_from from, uint32_t type, const void *buf, size_t len,
    union proto_msg *m, int *whole, int *release, uint64_t *relid)
{
	struct imsg	 imsg;
	const char	*why;

	memset(&imsg, 0, sizeof(imsg));
	imsg.hdr.type = type;
	imsg.hdr.len = IMSG_HEADER_SIZE + len;
	imsg.fd = -1;
	imsg.data = len > 0 ? (void *)(uintptr_t)buf : NULL;
	*whole = proto_read(&imsg, from, m, sizeof(*m), &why) == 0;
	*release = *whole && type == IMSG_HOLD_RELEASE;
	if (*release)
		*relid = m->holdid.holdid;
	return (len);
}

/* A message of the proxy's made from the input's fields: its length. */
static size_t
make_link(struct input *in, uint32_t type, unsigned int shape,
    union proto_msg *m)
{
	struct proto_hold_req		*hr = &m->hold_req;
	struct proto_probe_result	*res = &m->probe_result;
	struct proto_cancel		*pc = &m->cancel;
	struct proto_admin		*pa = &m->admin;
	struct proto_logs_req		*lr = &m->logs_req;
	struct probe			*pr;
	unsigned int			 c, i;
	size_t				 n = 0;

	switch (type) {
	case IMSG_HOLD_REQ:
		hr->reqid = reqid(in);
		name(in, hr->model, sizeof(hr->model));
		/* progress asked, or not; now and then a flag nobody knows */
		hr->flags = (shape & 0xf0) == 0xf0 ? shape :
		    (shape >> 2) & PROTO_HOLD_PROGRESS;
		n = sizeof(*hr);
		break;
	case IMSG_HOLD_WITHDRAW:
	case IMSG_STATUS_REQ:
		m->reqid.reqid = reqid(in);
		n = sizeof(m->reqid);
		break;
	case IMSG_HOLD_RELEASE:
		c = u8(in);
		if (c < 0xc0 && w.nholds > 0)
			m->holdid.holdid = w.holds[c % w.nholds];
		else if (c < 0xe0 && w.nseen > 0)	/* maybe released */
			m->holdid.holdid = w.seen[c % w.nseen];
		else
			m->holdid.holdid = c & 0x1f;
		n = sizeof(m->holdid);
		break;
	case IMSG_PROBE_RESULT:
		c = u8(in);
		i = 0;
		TAILQ_FOREACH(pr, &w.d.probes, entry)
			if (i++ == c % 4)
				break;
		res->loadid = pr != NULL ? pr->p.loadid : c;
		c = u8(in);
		res->ok = c & 1;
		res->status = (c & 2) ? 0 : (c & 1) ? 200 : 500;
		text(in, res->body, sizeof(res->body));
		n = sizeof(*res);
		break;
	case IMSG_CANCEL_DONE:
		/* mostly one agencyd sent; else a forgery */
		c = u8(in);
		if (c < 0xc0 && w.ncancels > 0) {
			*pc = w.cancels[c % w.ncancels];
			if (c & 0x40)
				name(in, pc->model, sizeof(pc->model));
		} else {
			pc->reqid = c & 0x80 ? (1ULL << 63) | (c & 7) : c;
			name(in, pc->model, sizeof(pc->model));
		}
		pc->cancelled = u8(in) % 3;
		n = sizeof(*pc);
		break;
	case IMSG_CANCEL:
		/* the admin route asks: its own id, maybe one in use */
		c = u8(in);
		pc->reqid = c & 0x80 ? (1ULL << 63) | c : c % 4;
		name(in, pc->model, sizeof(pc->model));
		n = sizeof(*pc);
		break;
	case IMSG_LOG:
		/* at priority 0: agencyd keeps it to LOG_CRIT */
		text(in, m->log.line, sizeof(m->log.line));
		n = sizeof(m->log);
		break;
	case IMSG_ADMIN:
		/* a load or unload; id 0, op 2 or wait 2 are hostile */
		c = u8(in);
		pa->reqid = c % 8;
		pa->op = (c >> 3) % 3;
		pa->wait = (c >> 5) % 3;
		name(in, pa->model, sizeof(pa->model));
		n = sizeof(*pa);
		break;
	case IMSG_LOGS_REQ:
	case IMSG_LOGS_UNFOLLOW:
		c = u8(in);
		lr->reqid = c % 8;
		lr->follow = (c >> 3) % 3;
		name(in, lr->model, sizeof(lr->model));
		n = sizeof(*lr);
		break;
	default:
		break;	/* IMSG_PROXY_READY: nothing */
	}
	return (n);
}

/* A message of agency-ctl's made from the input's fields: its length. */
static size_t
make_ctl(struct input *in, uint32_t type, union proto_msg *m)
{
	size_t	 n = 0;

	switch (type) {
	case IMSG_CTL_STATUS_REQ:
		m->reqid.reqid = reqid(in);
		n = sizeof(m->reqid);
		break;
	case IMSG_CTL_LOAD:
	case IMSG_CTL_UNLOAD:
	case IMSG_CTL_CANCEL:
	case IMSG_CTL_LOGS:
	case IMSG_CTL_PLAN:
	case IMSG_CTL_STATUS:
	case IMSG_CTL_FOLLOW:
		name(in, m->ctl_model.model, sizeof(m->ctl_model.model));
		m->ctl_model.wait = u8(in) & 1;
		n = sizeof(m->ctl_model);
		break;
	case IMSG_CTL_VERBOSE:
		m->ctl_verbose.verbose = (int8_t)u8(in) % 5;
		n = sizeof(m->ctl_verbose);
		break;
	default:
		break;	/* IMSG_CTL_RELOAD: nothing */
	}
	return (n);
}

/*
 * A payload for type: made from the input's fields (shape 0-2) and
 * written as proto.c writes it (from says who sends it), then damaged
 * as damage says (0 not, 1 its last byte cut, 2 a byte more, 3 a byte
 * changed); or raw bytes of the input (shape 3: the length comes next).
 * Returns the length.  Whatever was made of it, it is then read as its
 * receiver reads it: *whole says whether it reads (damaged or raw bytes
 * may), *m is what it reads as, *release whether it reads as a release.
 */
static size_t
payload(struct input *in, enum proto_from from, uint32_t type,
    unsigned int damage, void *buf, size_t size, union proto_msg *m,
    int *whole, int *release, uint64_t *relid)
{
	struct msgw			 mw;
	unsigned int			 shape = u8(in), c;
	size_t				 len = 0, n;

	memset(buf, 0, size);
	memset(m, 0, sizeof(*m));
	if ((shape & 3) == 3) {
		len = (size_t)u8(in) * (shape >> 2 & 7 ? 1 : 8);
		if (len > size)
			len = size;
		bytes(in, buf, len);
		return (reads(from, type, buf, len, m, whole, release, relid));
	}
	n = from == FROM_CTL ? make_ctl(in, type, m) :
	    make_link(in, type, shape, m);
	/* A type of no payload that is not its sender's writes nothing. */
	if (proto_write(&mw, from, type, m, n) == -1)
		mw.len = 0;
	len = mw.len < size ? mw.len : size;
	memcpy(buf, mw.buf, len);
	switch (damage) {
	case 1:
		if (len > 0)
			len--;
		break;
	case 2:
		if (len < size)
			((unsigned char *)buf)[len++] = 0;
		break;
	case 3:
		if (len > 0) {
			c = u8(in) % len;
			((unsigned char *)buf)[c] ^= 1 + u8(in) % 255;
		}
		break;
	default:
		break;
	}
	return (reads(from, type, buf, len, m, whole, release, relid));
}

/*
 * The type of a step's type byte: a known one, anything (0xf0 up: the
 * next byte), or a known one with an fd (0xe8 to 0xef); below, each
 * known type once a lap, the lap saying how its message is damaged.
 */
static uint32_t
step_type(struct input *in, unsigned int c, const uint32_t *types,
    size_t ntypes, unsigned int *damage)
{
	*damage = 0;
	if (c >= 0xf0)
		return (u8(in));	/* anything, known or not */
	if (c < 0xe8)
		*damage = (c / ntypes) % 4;
	return (types[c % ntypes]);
}

static void
step_proxy(struct input *in)
{
	static unsigned char	 buf[MAX_IMSGSIZE];
	union proto_msg		 m;
	unsigned int		 c = u8(in), damage;
	uint32_t		 type;
	uint64_t		 relid = 0;
	size_t			 len, i;
	int			 release, held = 0, rfd, sent = -1, whole;
	int			 bad = 0;

	type = step_type(in, c, proxy_types, NPROXY_TYPES, &damage);
	len = payload(in, FROM_PROXY, type, damage, buf,
	    sizeof(buf) - IMSG_HEADER_SIZE, &m, &whole, &release, &relid);
	if (!w.d.proxy_up)
		return;
	if (c >= 0xe8 && c < 0xf0) {
		/* with an fd: never taken, the proxy dropped (once what
		 * waited before it was read) */
		rfd = frame_fd(w.pfd, type, buf, len);
		proxy_io_all();
		CHECK(!w.d.proxy_up);
		check_fd_closed(rfd);
		return;
	}
	/* What agencyd sent is read first: the cancels among it. */
	proxy_io_all();
	for (i = 0; i < 8 && w.d.proxy_up &&
	    w.d.proxy_iev.ibuf.w.queued > 0; i++)
		proxy_io();
	if (!w.d.proxy_up)
		return;
	if (type == IMSG_CANCEL_DONE && whole &&
	    w.d.proxy_iev.ibuf.w.queued == 0) {
		for (i = 0; i < w.ncancels; i++)
			if (w.cancels[i].reqid == m.cancel.reqid &&
			    strcmp(w.cancels[i].model, m.cancel.model) == 0)
				break;
		sent = i < w.ncancels;
		if (sent)	/* reported once */
			w.cancels[i] = w.cancels[--w.ncancels];
	}
	for (i = 0; release && i < w.nholds; i++)
		if (w.holds[i] == relid)
			held = 1;
	if (type == IMSG_HOLD_REQ && whole) {
		/* a waiting request, if agencyd takes it */
		if (m.hold_req.reqid != 0 && w.nreqs < MAXREQS)
			w.reqs[w.nreqs++] = m.hold_req.reqid;
		if ((m.hold_req.flags & PROTO_HOLD_PROGRESS) &&
		    w.ntold < MAXREQS)
			w.told[w.ntold++] = m.hold_req.reqid;
		bad = (m.hold_req.flags & ~PROTO_HOLD_FLAGS) != 0;
	}
	if (type == IMSG_HOLD_WITHDRAW && whole)
		/* one waiting request with that id (a hostile proxy may
		 * reuse ids: the pool withdraws one at a time) */
		(void)req_take(m.reqid.reqid);
	/* A release of a held hold ends it as agencyd reads it, and the
	 * invariants are checked from within that reading. */
	if (release && held)
		for (i = 0; i < w.nholds; i++)
			if (w.holds[i] == relid) {
				w.holds[i] = w.holds[--w.nholds];
				break;
			}
	/* a load, unload or log request that is not one */
	if (type == IMSG_ADMIN && whole)
		bad = m.admin.reqid == 0 || m.admin.op > ADMIN_STOP ||
		    m.admin.wait > 1;
	if ((type == IMSG_LOGS_REQ || type == IMSG_LOGS_UNFOLLOW) && whole)
		bad = (type == IMSG_LOGS_REQ && m.logs_req.reqid == 0) ||
		    m.logs_req.follow > 1;
	if (verbose)
		fprintf(stderr, "proxy sends type %u len %zu\n", type, len);
	frame(w.pfd, type, buf, len, len + IMSG_HEADER_SIZE, 0);
	proxy_io_all();
	if (verbose && !w.d.proxy_up)
		fprintf(stderr, "proxy dropped\n");
	if (sent == 0 || bad)
		CHECK(!w.d.proxy_up);	/* a forged report, a bad message */
	/* what does not read (damaged, raw, of no type) drops it */
	if (!whole)
		CHECK(!w.d.proxy_up);
	if (release) {
		if (held)
			CHECK(w.d.proxy_up);
		else
			CHECK(!w.d.proxy_up);
	}
	/* A request the pool did not take (a bad message) waits no more. */
	if (!w.d.proxy_up)
		proxy_gone();
}

static struct ctl_conn *
conn_new(int restricted, int *fdp)
{
	struct ctl_conn	*c;
	int		 sp[2];

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
	    0, sp) == -1)
		err(1, "socketpair");
	/* as control_accept makes one */
	if ((c = control_conn_new(restricted ? &ctl_restricted : &ctl_main,
	    sp[0])) == NULL)
		err(1, NULL);
	*fdp = sp[1];
	return (c);
}

static void
step_ctl(struct input *in)
{
	static unsigned char	 buf[MAX_IMSGSIZE];
	union proto_msg		 m;
	unsigned int		 k = u8(in) % MAXCONNS, c = u8(in), damage;
	uint32_t		 type;
	uint64_t		 relid;
	size_t			 len;
	int			 release, fd, rfd, paused, whole;

	type = step_type(in, c, ctl_types, NCTL_TYPES, &damage);
	len = payload(in, FROM_CTL, type, damage, buf,
	    sizeof(buf) - IMSG_HEADER_SIZE, &m, &whole, &release, &relid);
	if (w.conns[k].c == NULL) {
		w.conns[k].c = conn_new(k == 2, &w.conns[k].fd);
		w.conns[k].id = w.conns[k].c->id;
	}
	fd = w.conns[k].fd;
	if (c >= 0xe8 && c < 0xf0) {
		/* with an fd: dropped when read (at once, unless it waits
		 * for an answer to be read first), the fd never taken */
		rfd = frame_fd(fd, type, buf, len);
		paused = w.conns[k].c->iev.rpaused;
		control_dispatch(w.conns[k].c->iev.ibuf.fd,
		    EV_READ | EV_WRITE, w.conns[k].c);
		if (!paused && control_byid(w.conns[k].id) != NULL)
			control_dispatch(w.conns[k].c->iev.ibuf.fd, EV_READ,
			    w.conns[k].c);
		if (control_byid(w.conns[k].id) == NULL) {
			close(fd);
			check_fd_closed(rfd);
			w.conns[k].c = NULL;
			w.conns[k].fd = -1;
		} else {
			CHECK(paused || w.conns[k].c->iev.rpaused);
			close(rfd);
		}
		proxy_io();
		return;
	}
	frame(fd, type, buf, len, len + IMSG_HEADER_SIZE, 0);
	control_dispatch(w.conns[k].c->iev.ibuf.fd, EV_READ | EV_WRITE,
	    w.conns[k].c);
	if (control_byid(w.conns[k].id) == NULL) {
		/* dropped: it freed the connection */
		close(fd);
		w.conns[k].c = NULL;
		w.conns[k].fd = -1;
	} else
		drain(fd);
	/* what it did to the pool may have answered the proxy */
	proxy_io();
}

static void
step_close_ctl(struct input *in)
{
	unsigned int	 k = u8(in) % MAXCONNS, i;
	struct ctl_conn	*c;

	if (w.conns[k].c == NULL)
		return;
	close(w.conns[k].fd);
	/*
	 * EOF drops it, once what it sent before is taken and answered
	 * (an answer that cannot be written drops it too); one whose
	 * answer comes later goes when it comes (or at the end).
	 */
	for (i = 0; i < 8 && (c = control_byid(w.conns[k].id)) != NULL &&
	    !c->pending; i++)
		control_dispatch(c->iev.ibuf.fd, EV_READ | EV_WRITE, c);
	CHECK((c = control_byid(w.conns[k].id)) == NULL || c->pending);
	w.conns[k].c = NULL;
	w.conns[k].fd = -1;
}

/*
 * Many hold or status requests in one write, taken as agencyd takes
 * them while the socket is full: over the bound of holds the proxy is
 * dropped; status answers go a few at a time, the rest waiting while
 * what was answered is not read (read at once, c & 4, or every fourth
 * turn).  Whatever it pauses for, agencyd must get through all of it
 * once the proxy reads (else it would wait for nothing).
 */
static void
step_burst(struct input *in)
{
	struct proto_hold_req	 hr;
	struct proto_reqid	 rq;
	struct imsg_hdr		 hdr;
	struct msgw		 mw;
	static unsigned char	 buf[510 * (sizeof(hdr) + sizeof(hr))];
	unsigned int		 c = u8(in), n = u8(in) * 2, i, rounds = 0;
	size_t			 len = 0, off = 0;
	ssize_t			 k;

	if (!w.d.proxy_up)
		return;
	for (i = 0; i < n; i++) {
		memset(&hdr, 0, sizeof(hdr));
		hdr.pid = 4242;
		if (c & 1) {
			memset(&rq, 0, sizeof(rq));
			rq.reqid = i + 1;
			hdr.type = IMSG_STATUS_REQ;
			CHECK(proto_write(&mw, FROM_PROXY, hdr.type, &rq,
			    sizeof(rq)) == 0);
		} else {
			memset(&hr, 0, sizeof(hr));
			hr.reqid = 1000 + i;
			(void)strlcpy(hr.model, c & 2 ? "b" : "a",
			    sizeof(hr.model));
			hdr.type = IMSG_HOLD_REQ;
			CHECK(proto_write(&mw, FROM_PROXY, hdr.type, &hr,
			    sizeof(hr)) == 0);
			if (w.nreqs < MAXREQS)
				w.reqs[w.nreqs++] = hr.reqid;
		}
		hdr.len = sizeof(hdr) + mw.len;
		memcpy(buf + len, &hdr, sizeof(hdr));
		memcpy(buf + len + sizeof(hdr), mw.buf, mw.len);
		len += hdr.len;
	}
	while (off < len && w.d.proxy_up) {
		if ((k = write(w.pfd, buf + off, len - off)) > 0) {
			off += k;
			continue;
		}
		CHECK(k == -1 && errno == EAGAIN);
		/* full: agencyd reads; its answers are read (c & 4), or
		 * left a few turns first */
		CHECK(++rounds < 10000);
		w.in_dispatch = 1;
		proxy_dispatch(w.d.proxy_iev.ibuf.fd, EV_READ | EV_WRITE,
		    &w.d);
		w.in_dispatch = 0;
		if (!w.d.proxy_up)
			proxy_gone();
		else if ((c & 4) || rounds % 4 == 0)
			drain_proxy();
		check();
	}
	/* and all of it taken before the next step */
	proxy_io_all();
}

static void
step_spawned(struct input *in)
{
	struct fspawn	*s;
	unsigned int	 c = u8(in);

	if ((s = TAILQ_FIRST(&w.spawns)) == NULL)
		return;
	TAILQ_REMOVE(&w.spawns, s, entry);
	if ((c & 3) == 3 || w.nprocs >= MAXPROCS)
		pool_spawned(w.d.pool, s->spawnid, -1, "exec failed");
	else {
		w.procs[w.nprocs].pid = w.next_pid++;
		w.procs[w.nprocs].sig = 0;
		pool_spawned(w.d.pool, s->spawnid, w.procs[w.nprocs++].pid,
		    NULL);
	}
	free(s);
	proxy_io();
}

static void
step_exit(struct input *in)
{
	unsigned int	 c = u8(in), how = u8(in);
	pid_t		 pid;
	int		 status;

	if (w.nprocs == 0)
		return;
	c %= w.nprocs;
	pid = w.procs[c].pid;
	if (w.procs[c].sig != 0 && !(how & 0x80))
		status = w.procs[c].sig;		/* killed by it */
	else if (how & 1)
		status = (how >> 1) & 0x7f ? ((how >> 1) & 0x1f) + 1 : 9;
	else
		status = ((how >> 1) & 0xff) << 8;	/* exited with */
	w.procs[c] = w.procs[--w.nprocs];
	models_reaped(&w.d, pid, status);
	proxy_io();
}

static void
step_tick(struct input *in)
{
	struct ftimer	*t;
	unsigned int	 c = u8(in);
	int64_t		 until;
	int		 n = 0;

	until = w.now + ((c & 0x80) ? (int64_t)(c & 0x7f) * 60000 :
	    (int64_t)c * 50);
	while ((t = TAILQ_FIRST(&w.timers)) != NULL && t->at <= until) {
		CHECK(++n < 100000);	/* timers that never settle */
		TAILQ_REMOVE(&w.timers, t, entry);
		if (t->at > w.now)
			w.now = t->at;
		t->fn(t->arg);
		free(t);
	}
	w.now = until;
	proxy_io();
}

static void
step(struct input *in)
{
	static char	line[SPAWN_LINE_MAX + 1], model[AGENCY_NAME_MAX];
	unsigned int	op = u8(in);

	if (verbose)
		fprintf(stderr, "step %u (%u)\n", op % 12, in->left > 0 ?
		    *in->p : 0);
	switch (op % 12) {
	case 0:
	case 1:
	case 2:
		step_proxy(in);
		break;
	case 3:
		step_ctl(in);
		break;
	case 4:
		step_spawned(in);
		break;
	case 5:
		step_exit(in);
		break;
	case 6:
		step_tick(in);
		break;
	case 7:
		/* the proxy closes its end: agencyd sees EOF */
		if (w.d.proxy_up) {
			shutdown(w.pfd, SHUT_WR);
			proxy_io_all();
			CHECK(!w.d.proxy_up);
		}
		break;
	case 8:
		if (!w.d.proxy_up)
			proxy_fake_start();
		break;
	case 9:
		/* a frame no imsg reader takes: a bad length or flags */
		if (w.d.proxy_up) {
			static const uint32_t lens[] = { 0, 19,
			    MAX_IMSGSIZE + 1, 0xffffffff };

			op = u8(in);
			if (op & 4)
				frame(w.pfd, IMSG_LOG, NULL, 0,
				    IMSG_HEADER_SIZE, op & 8 ? IMSGF_HASFD :
				    0x100);
			else
				frame(w.pfd, IMSG_LOG, NULL, 0, lens[op & 3],
				    0);
			proxy_io_all();
			CHECK(!w.d.proxy_up);
		}
		break;
	case 10:
		if (!w.stopped) {
			w.stopped = 1;
			w.d.stopping = 1;
			pool_stop_all(w.d.pool, shutdown_done, &w.d);
			proxy_io();
		}
		break;
	case 11:
		op = u8(in);
		if ((op & 0x18) == 0x18)
			step_burst(in);
		else if (op & 1)
			step_close_ctl(in);
		else if (op & 2)
			bind_fails = !bind_fails;
		else if ((op & 0x1f) == 0x10) {
			/* a model writes a line: to its followers (spawn.c
			 * cuts lines to SPAWN_LINE_MAX, each terminated) */
			name(in, model, sizeof(model));
			model[sizeof(model) - 1] = '\0';
			text(in, line, sizeof(line));
			line[sizeof(line) - 1] = '\0';
			/* as agencyd.c's hook: to both kinds of follower */
			control_model_line(model, line);
			proxy_model_line(&w.d, model, ++w.line_seq, line);
		} else if (op & 4) {
			/* the file changes: the next reload sees it */
			w.conf_which = (w.conf_which + 1 + (op >> 3)) %
			    NCONFS;
			conf_write(w.conf_which);
		} else {
			w.mem.total = 32LL << 30;
			w.mem.available = (int64_t)(op >> 1) << 27;
		}
		break;
	default:
		abort();
	}
	check();
}

static void
setup(int which)
{
	struct agencyd		*d = &w.d;
	struct pool_settings	 ps;
	size_t			 i;

	memset(d, 0, sizeof(*d));
	TAILQ_INIT(&d->models);
	TAILQ_INIT(&d->draining);
	TAILQ_INIT(&d->probes);
	TAILQ_INIT(&w.timers);
	TAILQ_INIT(&w.spawns);
	ctl_env = d;	/* as control_init sets it */
	w.now = 1700000000000LL;
	w.mem.total = 32LL << 30;
	w.mem.available = 16LL << 30;
	w.next_pid = 100000;
	w.nprocs = w.nholds = w.nseen = w.nreqs = 0;
	w.stopped = 0;
	w.pfd = -1;
	for (i = 0; i < MAXCONNS; i++) {
		w.conns[i].c = NULL;
		w.conns[i].fd = -1;
		w.conns[i].id = 0;
	}

	w.conf_which = which;
	conf_write(which);
	d->conffile = w.conf_path;
	d->proxy_path = "/nonexistent/agency-proxy";
	if ((d->conf = parse_config(d->conffile, 0)) == NULL)
		errx(1, "the harness's configuration does not parse");
	bind_fails = 0;
	if (listeners_bind(d->conf) == -1)
		errx(1, "listeners_bind");

	agencyd_pool_settings(d->conf, &ps);
	if ((d->pool = pool_new(&fake_ops, d, &ps)) == NULL)
		err(1, "pool_new");
	if (models_setup(d) == -1)
		errx(1, "models_setup");
	proxy_on_ready(proxy_ready_sync, NULL);
	proxysvc_init(d);
	proxy_fake_start();
	pool_start(d->pool);
	proxy_io();
}

static void
teardown(void)
{
	struct agencyd	*d = &w.d;
	struct ftimer	*t;
	struct fspawn	*s;
	struct probe	*pr;
	struct listen_conf *l;
	size_t		 i;

	for (i = 0; i < MAXCONNS; i++)
		if (w.conns[i].fd != -1)
			close(w.conns[i].fd);
	control_cleanup(d);
	if (d->proxy_up)
		proxy_drop(d);
	proxy_gone();
	pool_free(d->pool);
	proxy_cleanup();
	models_free(d);
	/* agencyd exits with its listeners open; we go on */
	TAILQ_FOREACH(l, &d->conf->listens, entry)
		if (l->fd >= 0)
			close(l->fd);
	config_free(d->conf);
	while ((pr = TAILQ_FIRST(&d->probes)) != NULL) {
		TAILQ_REMOVE(&d->probes, pr, entry);
		free(pr);
	}
	while ((t = TAILQ_FIRST(&w.timers)) != NULL) {
		TAILQ_REMOVE(&w.timers, t, entry);
		free(t);
	}
	while ((s = TAILQ_FIRST(&w.spawns)) != NULL) {
		TAILQ_REMOVE(&w.spawns, s, entry);
		free(s);
	}
	ctl_env = NULL;
}

static void write_seeds(const char *);

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct rlimit	 rl;
	const char	*seeds;

	(void)argc;
	(void)argv;
	if ((seeds = getenv("FUZZ_WRITE_SEEDS")) != NULL)
		write_seeds(seeds);
	verbose = getenv("FUZZ_VERBOSE") != NULL;
	signal(SIGPIPE, SIG_IGN);
	rl.rlim_cur = rl.rlim_max = NOFILE;
	if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
		err(1, "setrlimit");
	log_init(1, LOG_DAEMON);
	log_sethook(log_drop);
	if (event_init() == NULL)
		errx(1, "event_init");
	if ((w.conf_fd = memfd_create("fuzz_parent_conf", 0)) == -1)
		err(1, "memfd_create");
	/* As root the parser reads only files no one else may write. */
	if (fchmod(w.conf_fd, 0600) == -1)
		err(1, "fchmod");
	(void)snprintf(w.conf_path, sizeof(w.conf_path), "/proc/self/fd/%d",
	    w.conf_fd);

	fake_ops = model_pool_ops;	/* probe, probe_cancel, changed */
	fake_ops.spawn = f_spawn;
	fake_ops.port_free = f_port_free;
	fake_ops.kill = f_kill;
	fake_ops.now = f_now;
	fake_ops.timer_add = f_timer_add;
	fake_ops.timer_del = f_timer_del;
	fake_ops.memory = f_memory;
	fake_ops.log = f_log;
	fake_ops.granted = f_granted;
	fake_ops.refused = f_refused;
	fake_ops.waiting = f_waiting;
	return (0);
}

static int
count_fds(void)
{
	DIR		*dir;
	struct dirent	*de;
	int		 n = 0;

	if ((dir = opendir("/proc/self/fd")) == NULL)
		err(1, "/proc/self/fd");
	while ((de = readdir(dir)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(dir);
	return (n);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct input	in = { data, size };
	unsigned int	flags = u8(&in);
	int		n = 0, fds = count_fds();

	w.spawn_inline = (flags & 2) != 0;
	setup(flags & 1);	/* the first two; the others for reloads */
	check();
	while (in.left > 0 && n++ < 512)
		step(&in);
	teardown();
	CHECK(count_fds() == fds);	/* every socket closed */
	return (0);
}

/* --- seeds: sequences that reach the deeper paths --- */

static void
seed(const char *dir, int *n, const uint8_t *s, size_t len)
{
	char	path[1024];
	int	fd;

	(void)snprintf(path, sizeof(path), "%s/seed-%03d", dir, (*n)++);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    write(fd, s, len) != (ssize_t)len)
		err(1, "%s", path);
	close(fd);
}

#define SEED(...) do {							\
	static const uint8_t s_[] = { __VA_ARGS__ };			\
	seed(dir, &n, s_, sizeof(s_));					\
} while (0)

/* step opcodes */
#define P	0	/* proxy message: type index, shape, fields */
#define C	3	/* control message: conn, type index, shape, fields */
#define SP	4	/* spawn answered: how */
#define EX	5	/* a process exits: which, how */
#define TK	6	/* time passes: how much */
#define EOFP	7
#define NEWP	8
#define BAD	9
#define STOP	10
#define MISC	11
/* proxy type indexes */
#define REQ	0
#define WDR	1
#define REL	2
#define PRB	3
#define STA	4
#define CND	5
#define LOG	6
#define RDY	7
#define CNL	8	/* IMSG_CANCEL: the proxy asks */
#define WITHFD	0xe8	/* a type index byte: the message comes with an fd */
#define LAP	12	/* a type index this much higher: its message
			 * damaged (1 cut, 2 lengthened, 3 changed) */
#define BURST	0x18	/* MISC: a burst; then kind (bit 0 status, bit 2
			 * read at once) and half the count */

static void
write_seeds(const char *dir)
{
	int	n = 0;

	/* a lazy load: hold request, spawn, probe ok, release */
	SEED(0, P, RDY, 0, P, REQ, 0, 1, 0, SP, 0, P, PRB, 0, 0, 1, 2,
	    'o', 'k', P, REL, 0, 0, STA, 0);
	SEED(0, P, REQ, 0, 1, 0, SP, 0, P, PRB, 0, 0, 1, 0,
	    P, REQ, 0, 2, 0, P, REL, 0, 0, P, REL, 0, 0, P, REL, 0, 0xf0);
	/* both lazy models, only one fits: eviction */
	SEED(0, P, REQ, 0, 1, 0, SP, 0, P, PRB, 0, 0, 1, 0, P, REL, 0, 0,
	    TK, 10, P, REQ, 0, 2, 1, SP, 0, P, PRB, 0, 0, 1, 0, EX, 0, 0,
	    P, PRB, 0, 0, 1, 0, P, STA, 0, 3);
	/* busy: the other cannot load */
	SEED(0, P, REQ, 0, 1, 0, SP, 0, P, PRB, 0, 0, 1, 0,
	    P, REQ, 0, 2, 1, TK, 200, P, WDR, 0, 2);
	/* a failing spawn, a failing probe, a load timeout */
	SEED(0, P, REQ, 0, 1, 0, SP, 3, P, REQ, 0, 2, 0, SP, 0,
	    P, PRB, 0, 0, 0, 3, 'b', 'a', 'd', TK, 0x81, P, REQ, 0, 3, 0);
	/* the model dies while held; the proxy dies while holding */
	SEED(2, P, REQ, 0, 1, 0, P, PRB, 0, 0, 1, 0, EX, 0, 1,
	    P, REQ, 0, 2, 0, P, PRB, 0, 0, 1, 0, EOFP, NEWP,
	    P, REQ, 0, 3, 0);
	/* not lazy b: loaded at start, restarted after a death */
	SEED(1, SP, 0, P, PRB, 0, 0, 1, 0, P, REQ, 0, 1, 1, EX, 0, 2,
	    TK, 40, SP, 0, P, PRB, 0, 0, 1, 0, P, REL, 0, 0);
	/* control: status, load and wait, unload, logs, verbose, reload */
	SEED(0, C, 0, 0, 0, 0, C, 0, 1, 0, 0, 1, SP, 0,
	    P, PRB, 0, 0, 1, 0, C, 1, 2, 0, 0, C, 0, 6, 0, 1,
	    C, 0, 5, 0, 2, C, 1, 4, 0, TK, 3);
	SEED(0, C, 2, 1, 0, 0, 0, C, 2, 0, 0, 0, MISC, 1, 2);
	/* cancel through the proxy and back */
	SEED(0, P, REQ, 0, 1, 0, SP, 0, P, PRB, 0, 0, 1, 0,
	    C, 0, 3, 0, 0, P, CND, 0, 0, 0, 1, P, CND, 0, 1, 1, 1);
	SEED(1, SP, 0, P, PRB, 0, 0, 1, 0, C, 1, 3, 1, 1,
	    P, CND, 0, 1, 1, 2, TK, 30, SP, 0, P, PRB, 0, 0, 1, 0);
	/* bad messages: wrong sizes, unterminated strings, bad frames */
	SEED(0, P, REQ, 3, 10, 1, 2, 3, NEWP, P, REQ, 0, 1, 5,
	    NEWP, P, LOG, 0, 3, 255, NEWP, BAD, 2, NEWP, P, 0xf0, 99, 0);
	SEED(0, P, REL, 0, 0x1f, NEWP, P, REQ, 0, 0, 0, NEWP,
	    C, 0, 0xf0, 200, 0, C, 1, 5, 3, 2, 1, 1);
	/* messages written whole, then cut, lengthened or changed; raw
	 * bytes that read as a hold request */
	SEED(0, P, REQ + LAP, 0, 1, 0, NEWP, P, STA + 2 * LAP, 0, 1,
	    NEWP, P, REQ + 3 * LAP, 0, 1, 0, 9, 0x40, P, REQ + 3 * LAP, 0,
	    2, 1, 0, 1, C, 0, 1 + 3 * 10, 0, 0, 0, 2, 1);
	SEED(0, P, REQ, 7, 15, 5, 0, 0, 0, 0, 0, 0, 0, 'a', 0, 0, 0, 0, 0, 0,
	    SP, 0, P, PRB, 0, 0, 1, 0);
	/* shutdown with requests waiting and holds out */
	SEED(0, P, REQ, 0, 1, 0, SP, 0, P, PRB, 0, 0, 1, 0, P, REQ, 0, 2, 1,
	    STOP, EX, 0, 0, EX, 0, 0, TK, 0x81, P, REL, 0, 0);
	/* reloads: the same file, a changed one, one that does not parse,
	 * one whose listener cannot be bound */
	SEED(0, P, REQ, 0, 1, 0, SP, 0, P, PRB, 0, 0, 1, 0, C, 0, 4, 0,
	    MISC, 4, C, 0, 4, 0, P, REL, 0, 0, TK, 10, SP, 0,
	    P, PRB, 0, 0, 1, 0, P, STA, 0, 1, MISC, 4, C, 1, 4, 0,
	    MISC, 2, MISC, 12, C, 0, 4, 0, MISC, 2, C, 0, 4, 0);
	SEED(1, P, REQ, 0, 1, 1, SP, 0, SP, 0, P, PRB, 0, 0, 1, 0,
	    P, PRB, 0, 1, 1, 0, MISC, 4, C, 0, 4, 0, TK, 1, SP, 0,
	    P, PRB, 0, 0, 1, 0, P, REL, 0, 0, TK, 20, SP, 0,
	    P, PRB, 0, 0, 1, 0, P, REQ, 0, 2, 2);
	SEED(3, P, REQ, 0, 1, 0, P, PRB, 0, 0, 1, 0, P, LOG, 0, 6, 4,
	    'h', 'e', 'l', 'o', MISC, 2, P, REQ, 0, 2, 1, TK, 0x82);
	/* bursts: status answered a few at a time, unread a while; holds
	 * of a ready model over the proxy's fds */
	SEED(0, MISC, BURST, 1, 200, P, STA, 0, 1, MISC, BURST, 5, 100);
	SEED(0, P, REQ, 0, 1, 0, SP, 0, P, PRB, 0, 0, 1, 0,
	    MISC, BURST, 4, 100, NEWP, MISC, BURST, 0, 30, P, REL, 0, 0);
	/* the admin route's cancel, reported; then reported again, and a
	 * report of a cancel never sent */
	SEED(0, P, REQ, 0, 1, 0, SP, 0, P, PRB, 0, 0, 1, 0,
	    P, CNL, 0, 1, 0, P, CND, 0, 0, 1, P, CND, 0, 0, 1, NEWP,
	    P, CND, 0, 0xc1, 0, 1);
	SEED(1, SP, 0, P, PRB, 0, 0, 1, 0, C, 0, 3, 0, 1, 0, P, CNL, 0, 1, 1,
	    P, CND, 0, 0, 1, P, CND, 0, 1, 2, EOFP, NEWP, C, 0, 3, 0, 1, 0);
	/* fds: from a control client, from the proxy */
	SEED(0, C, 0, WITHFD, 0, 0, C, 2, WITHFD + 1, 0, 0, 0, C, 1, 0, 0, 0,
	    C, 1, WITHFD, 0, 0);
	SEED(0, P, WITHFD + 4, 0, 1, NEWP, P, REQ, 0, 1, 0, P, WITHFD, 0, 1, 0);
	exit(0);
}
