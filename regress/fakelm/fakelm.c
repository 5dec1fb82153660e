/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * fakelm: the process side of a stand-in model server.  It loads (or
 * pretends to), binds, says it is ready, and exits the ways a real model
 * server does: on SIGTERM, when its parent's pipe closes, or by crashing.
 */

#include <sys/types.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/http.h>

#include "fakelm.h"

struct fakelm_conf	 conf;
struct event_base	*base;
int			 loaded;

static struct evhttp	*http;
static int		 bound_port = -1;
/* Volatile: never read, its pages would otherwise be no store at all
 * to the compiler, which may drop the memset that makes them resident. */
static char		*volatile rss_mem;
static int		 exiting;

static __dead void	usage(FILE *, int);
static long long	number(const char *, const char *, long long,
			    long long);
static size_t		size(const char *, const char *);
static void		bind_port(void);
static void		load(void);
static void		load_done(evutil_socket_t, short, void *);
static void		crash_timer(evutil_socket_t, short, void *);
static void		on_signal(evutil_socket_t, short, void *);
static void		exit_timer(evutil_socket_t, short, void *);
static void		on_stdin(evutil_socket_t, short, void *);
static void		timer_once(long long, event_callback_fn);

enum {
	OPT_HOST = 256,
	OPT_PORT,
	OPT_MODEL,
	OPT_LOAD_MS,
	OPT_BIND_EARLY,
	OPT_RSS,
	OPT_FAIL_LOAD,
	OPT_READY_STATUS,
	OPT_TOKEN_MS,
	OPT_STOPS_ON_CLOSE,
	OPT_CRASH_AFTER_MS,
	OPT_CRASH_MID_STREAM,
	OPT_IGNORE_TERM,
	OPT_SLOW_EXIT_MS,
	OPT_STALL,
	OPT_STAMP,
	OPT_MAX_BODY,
	OPT_ANTHROPIC_STRICT,
	OPT_ANY_MODEL,
	OPT_LOG_REQUESTS,
	OPT_VRAM,
	OPT_VRAM_DEVICE,
	OPT_CUDA_LIB
};

static const struct option longopts[] = {
	{ "host",		required_argument,	NULL, OPT_HOST },
	{ "port",		required_argument,	NULL, OPT_PORT },
	{ "model",		required_argument,	NULL, OPT_MODEL },
	{ "load-ms",		required_argument,	NULL, OPT_LOAD_MS },
	{ "bind-early",		no_argument,		NULL, OPT_BIND_EARLY },
	{ "rss",		required_argument,	NULL, OPT_RSS },
	{ "fail-load",		no_argument,		NULL, OPT_FAIL_LOAD },
	{ "ready-status",	required_argument,	NULL, OPT_READY_STATUS },
	{ "token-ms",		required_argument,	NULL, OPT_TOKEN_MS },
	{ "stops-on-close",	required_argument,	NULL,
	    OPT_STOPS_ON_CLOSE },
	{ "crash-after-ms",	required_argument,	NULL,
	    OPT_CRASH_AFTER_MS },
	{ "crash-mid-stream",	required_argument,	NULL,
	    OPT_CRASH_MID_STREAM },
	{ "ignore-term",	no_argument,		NULL, OPT_IGNORE_TERM },
	{ "slow-exit-ms",	required_argument,	NULL, OPT_SLOW_EXIT_MS },
	{ "stall",		no_argument,		NULL, OPT_STALL },
	{ "stamp",		no_argument,		NULL, OPT_STAMP },
	{ "max-body",		required_argument,	NULL, OPT_MAX_BODY },
	{ "anthropic-strict",	no_argument,		NULL,
	    OPT_ANTHROPIC_STRICT },
	{ "any-model",		no_argument,		NULL, OPT_ANY_MODEL },
	{ "log-requests",	no_argument,		NULL,
	    OPT_LOG_REQUESTS },
	{ "vram",		required_argument,	NULL, OPT_VRAM },
	{ "vram-device",	required_argument,	NULL,
	    OPT_VRAM_DEVICE },
	{ "cuda-lib",		required_argument,	NULL, OPT_CUDA_LIB },
	{ "help",		no_argument,		NULL, 'h' },
	{ NULL,			0,			NULL, 0 }
};

#define MS_MAX	(24LL * 3600 * 1000)

static __dead void
usage(FILE *fp, int code)
{
	extern char	*__progname;

	fprintf(fp,
"usage: %s [-h] [--host ADDR] [--port PORT] [--model NAME] [--load-ms N]\n"
"       [--bind-early] [--rss SIZE] [--fail-load] [--ready-status N]\n"
"       [--token-ms N] [--stops-on-close always|never|stream]\n"
"       [--crash-after-ms N] [--crash-mid-stream K] [--ignore-term]\n"
"       [--slow-exit-ms N] [--stall] [--stamp] [--any-model]\n"
"       [--log-requests] [--max-body SIZE] [--anthropic-strict]\n"
"       [--vram SIZE] [--vram-device N] [--cuda-lib PATH]\n"
"\n"
"An OpenAI-compatible stand-in model server for tests and benchmarks.\n"
"\n"
"  --host ADDR        address to listen on (default 127.0.0.1); a path\n"
"                     that ends in .sock: a Unix socket (--port unused)\n"
"  --port PORT        port to listen on; 0 picks a free one, which the\n"
"                     listening and ready lines report (default 8080)\n"
"  --model NAME       the model served; a request naming another model\n"
"                     gets 404 (default fakelm)\n"
"  --load-ms N        take N ms to load; the port is bound only once\n"
"                     loaded (default 0)\n"
"  --bind-early       bind at once; /health answers 503 and the model\n"
"                     routes 503 until loaded\n"
"  --rss SIZE         allocate and touch SIZE bytes while loading\n"
"                     (suffixes K, M, G)\n"
"  --fail-load        exit 1 with a message on stderr after the load time\n"
"  --ready-status N   answer /health with status N once loaded (default 200)\n"
"  --token-ms N       wait N ms before each token (default 0)\n"
"  --stops-on-close always|never|stream\n"
"                     whether a client closing mid-answer stops the\n"
"                     generation: always, never, or only for streamed\n"
"                     requests (default always)\n"
"  --crash-after-ms N abort N ms after ready\n"
"  --crash-mid-stream K\n"
"                     exit 1 after K tokens of the next streamed answer\n"
"  --ignore-term      ignore SIGTERM and SIGINT\n"
"  --slow-exit-ms N   exit N ms after SIGTERM or SIGINT (default 0)\n"
"  --stall            accept requests and never answer (/health still does)\n"
"  --stamp            for benchmarks: add \"mono_ns\", CLOCK_MONOTONIC in ns\n"
"                     when written, to each streamed chunk, and mono_ns=N\n"
"                     to the ready line and the request log lines\n"
"  --max-body SIZE    the largest request body taken (default 16M)\n"
"  --anthropic-strict answer 400 to an Anthropic request without an\n"
"                     anthropic-version header, as the Anthropic API does\n"
"  --any-model        serve whatever model a request names, and answer\n"
"                     with that name (--model when it names none), as a\n"
"                     server that takes the request's model does\n"
"  --log-requests     log a line for each request as it arrives, as\n"
"                     llama-server does, besides the line of its answer\n"
"  --vram SIZE        take SIZE bytes of device memory while loading, and\n"
"                     hold them until exit, through the CUDA driver API\n"
"                     (a load that cannot take them fails)\n"
"  --vram-device N    on the CUDA device of ordinal N among those\n"
"                     CUDA_VISIBLE_DEVICES shows (default 0)\n"
"  --cuda-lib PATH    the CUDA driver library (default libcuda.so.1)\n"
"  -h, --help         print this text and exit\n"
"\n"
"Routes: GET /health, GET /v1/models, POST /v1/chat/completions,\n"
"POST /v1/completions, POST /v1/embeddings; Anthropic's POST /v1/messages\n"
"and /v1/messages/count_tokens (errors in Anthropic's shape; the headers\n"
"anthropic-version and anthropic-beta echoed as X-Fakelm-Anthropic-*);\n"
"OpenAI's POST /v1/responses and /v1/responses/input_tokens; rerank at\n"
"POST /v1/rerank, /v1/reranking and /rerank (a document's score is the\n"
"share of the query's words it has); and multipart/form-data uploads\n"
"at POST /v1/audio/transcriptions, /v1/audio/translations,\n"
"/v1/images/edits and /inference, answered with the size and cksum(1)\n"
"digest of the body and of each file, and the other fields' values.\n"
"GET /redirect?to=WHERE answers 302 with Location: WHERE.\n"
"\n"
"A request with the header \"X-Fakelm-Answer: FRAMING SIZE [MS]\", on any\n"
"route but /health, is answered 200 with SIZE bytes of text, framed by\n"
"FRAMING: length (Content-Length), chunked, or close (an HTTP/1.0 answer\n"
"that ends with the connection, as chunked does for an HTTP/1.0 request),\n"
"the last two in pieces MS ms apart.  The headers X-Fakelm-Body-Cksum and\n"
"X-Fakelm-Answer-Cksum name the cksum(1) digests (\"CRC LENGTH\") of the\n"
"request body received and of the answer body sent.\n"
"A generating route reads \"n_predict\" before its own length field, as\n"
"llama-server does, and names the one it read in X-Fakelm-Limit, as it\n"
"came (\"none\" if neither is there).\n"
"A request with the header \"X-Fakelm-Echo-Headers\" is answered with\n"
"\"X-Fakelm-Headers\", the names of its header fields in lower case.\n"
"A request with the header \"X-Fakelm-Hop: NAME\" is answered with a field\n"
"NAME that its Connection field names.\n"
"Environment: AGENCY_EXIT_WITH_PARENT=1 exits 0 when stdin reaches EOF.\n",
	    __progname);
	exit(code);
}

static long long
number(const char *what, const char *s, long long lo, long long hi)
{
	const char	*errstr;
	long long	 n;

	n = strtonum(s, lo, hi, &errstr);
	if (errstr != NULL) {
		complain("fakelm: %s %s is %s", what, s, errstr);
		usage(stderr, 1);
	}
	return (n);
}

static size_t
size(const char *what, const char *s)
{
	char		 buf[32];
	size_t		 len;
	long long	 mult = 1, n;

	if (strlcpy(buf, s, sizeof(buf)) >= sizeof(buf)) {
		complain("fakelm: %s %s is too long", what, s);
		usage(stderr, 1);
	}
	len = strlen(buf);
	if (len > 0) {
		switch (buf[len - 1]) {
		case 'k':
		case 'K':
			mult = 1024LL;
			break;
		case 'm':
		case 'M':
			mult = 1024LL * 1024;
			break;
		case 'g':
		case 'G':
			mult = 1024LL * 1024 * 1024;
			break;
		default:
			break;
		}
		if (mult != 1)
			buf[len - 1] = '\0';
	}
	n = number(what, buf, 0, (64LL << 30) / mult);
	return ((size_t)(n * mult));
}

static void
timer_once(long long ms, event_callback_fn cb)
{
	struct timeval	tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	if (event_base_once(base, -1, EV_TIMEOUT, cb, NULL, &tv) == -1) {
		complain("fakelm: event_base_once failed");
		exit(1);
	}
}

/*
 * A host that ends in ".sock" is a Unix socket's path, as llama-server
 * takes it: listened on there, port 0.
 */
static int
bind_unix(void)
{
	struct sockaddr_un	 sun;
	size_t			 len = strlen(conf.host);
	int			 fd;

	if (len < 5 || strcmp(conf.host + len - 5, ".sock") != 0)
		return (0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (len >= sizeof(sun.sun_path)) {
		complain("fakelm: socket path too long: %s", conf.host);
		exit(1);
	}
	memcpy(sun.sun_path, conf.host, len);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1 ||
	    bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    listen(fd, 128) == -1 ||
	    evhttp_accept_socket_with_handle(http, fd) == NULL) {
		complain("fakelm: cannot listen on %s: %s", conf.host,
		    strerror(errno));
		exit(1);
	}
	bound_port = 0;
	say("fakelm: listening pid=%ld port=0 socket=%s model=%s",
	    (long)getpid(), conf.host, conf.model);
	return (1);
}

static void
bind_port(void)
{
	struct evhttp_bound_socket	*bs;
	struct sockaddr_storage		 ss;
	socklen_t			 len = sizeof(ss);
	evutil_socket_t			 fd;
	int				 on = 1;

	if (bind_unix())
		return;
	bs = evhttp_bind_socket_with_handle(http, conf.host,
	    (ev_uint16_t)conf.port);
	if (bs == NULL) {
		complain("fakelm: cannot bind %s port %d: %s", conf.host,
		    conf.port, strerror(errno));
		exit(1);
	}
	fd = evhttp_bound_socket_get_fd(bs);
	/*
	 * Accepted sockets inherit it: each chunk goes out when written,
	 * as uvicorn (vLLM) sends them, instead of waiting behind Nagle
	 * for a keep-alive client's delayed acknowledgement (30-40 ms).
	 */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)) == -1)
		complain("fakelm: TCP_NODELAY: %s", strerror(errno));
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1) {
		complain("fakelm: getsockname: %s", strerror(errno));
		exit(1);
	}
	switch (ss.ss_family) {
	case AF_INET:
		bound_port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
		break;
	case AF_INET6:
		bound_port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
		break;
	default:
		complain("fakelm: bound an unknown address family");
		exit(1);
	}
	say("fakelm: listening pid=%ld port=%d model=%s", (long)getpid(),
	    bound_port, conf.model);
}

static void
load(void)
{
	char	 err[256];

	say("fakelm: loading pid=%ld model=%s load_ms=%lld rss=%zu",
	    (long)getpid(), conf.model, conf.load_ms, conf.rss);
	if (conf.bind_early)
		bind_port();
	if (conf.vram > 0) {
		if (vram_claim(conf.cuda_lib, conf.vram_device, conf.vram,
		    err, sizeof(err)) == -1) {
			complain("fakelm: cannot take %zu bytes of device "
			    "memory: %s", conf.vram, err);
			exit(1);
		}
		say("fakelm: vram pid=%ld bytes=%zu device=%d",
		    (long)getpid(), conf.vram, conf.vram_device);
	}
	if (conf.rss > 0) {
		/* Touch every page so the memory counts as resident. */
		if ((rss_mem = malloc(conf.rss)) == NULL) {
			complain("fakelm: cannot allocate %zu bytes", conf.rss);
			exit(1);
		}
		memset(rss_mem, 0xa5, conf.rss);
	}
	timer_once(conf.load_ms, load_done);
}

static void
load_done(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;

	if (conf.fail_load) {
		complain("fakelm: failed to load model %s (--fail-load)",
		    conf.model);
		exit(1);
	}
	if (bound_port == -1)
		bind_port();
	loaded = 1;
	if (conf.stamp)
		say("fakelm: ready pid=%ld port=%d model=%s mono_ns=%lld",
		    (long)getpid(), bound_port, conf.model, mono_ns());
	else
		say("fakelm: ready pid=%ld port=%d model=%s", (long)getpid(),
		    bound_port, conf.model);
	if (conf.crash_after_ms >= 0)
		timer_once(conf.crash_after_ms, crash_timer);
}

static void
crash_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;

	complain("fakelm: crashing %lld ms after ready (--crash-after-ms)",
	    conf.crash_after_ms);
	crash(1);
}

static void
on_signal(evutil_socket_t sig, short ev, void *arg)
{
	const char	*name = sig == SIGINT ? "SIGINT" : "SIGTERM";

	(void)ev;
	(void)arg;

	if (conf.ignore_term) {
		complain("fakelm: %s ignored (--ignore-term)", name);
		return;
	}
	if (exiting)
		return;
	exiting = 1;
	complain("fakelm: %s, exiting in %lld ms", name, conf.slow_exit_ms);
	timer_once(conf.slow_exit_ms, exit_timer);
}

static void
exit_timer(evutil_socket_t fd, short ev, void *arg)
{
	(void)fd;
	(void)ev;
	(void)arg;

	complain("fakelm: exiting");
	exit(0);
}

static void
on_stdin(evutil_socket_t fd, short ev, void *arg)
{
	char	buf[512];
	ssize_t	n;

	(void)ev;
	(void)arg;

	n = read(fd, buf, sizeof(buf));
	if (n == -1) {
		if (errno == EINTR || errno == EAGAIN)
			return;
		complain("fakelm: read stdin: %s, exiting", strerror(errno));
		exit(0);
	}
	if (n == 0) {
		complain("fakelm: stdin closed, exiting");
		exit(0);
	}
	/* Whatever the parent writes is not for us. */
}

int
main(int argc, char *argv[])
{
	struct event	*ev;
	const char	*env;
	int		 ch, sigs[] = { SIGTERM, SIGINT };
	size_t		 i;

	conf.host = "127.0.0.1";
	conf.port = 8080;
	conf.model = "fakelm";
	conf.crash_after_ms = -1;
	conf.crash_mid_stream = -1;
	conf.ready_status = 200;
	conf.stops_on_close = STOPS_ALWAYS;
	conf.max_body = FAKELM_MAX_BODY;
	conf.cuda_lib = "libcuda.so.1";

	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case OPT_HOST:
			conf.host = optarg;
			break;
		case OPT_PORT:
			conf.port = number("--port", optarg, 0, 65535);
			break;
		case OPT_MODEL:
			if (*optarg == '\0')
				usage(stderr, 1);
			conf.model = optarg;
			break;
		case OPT_LOAD_MS:
			conf.load_ms = number("--load-ms", optarg, 0, MS_MAX);
			break;
		case OPT_BIND_EARLY:
			conf.bind_early = 1;
			break;
		case OPT_RSS:
			conf.rss = size("--rss", optarg);
			break;
		case OPT_FAIL_LOAD:
			conf.fail_load = 1;
			break;
		case OPT_READY_STATUS:
			conf.ready_status = number("--ready-status", optarg,
			    100, 599);
			break;
		case OPT_TOKEN_MS:
			conf.token_ms = number("--token-ms", optarg, 0,
			    MS_MAX);
			break;
		case OPT_STOPS_ON_CLOSE:
			if (strcmp(optarg, "always") == 0)
				conf.stops_on_close = STOPS_ALWAYS;
			else if (strcmp(optarg, "never") == 0)
				conf.stops_on_close = STOPS_NEVER;
			else if (strcmp(optarg, "stream") == 0)
				conf.stops_on_close = STOPS_STREAM;
			else {
				complain("fakelm: --stops-on-close %s: "
				    "want always, never or stream", optarg);
				usage(stderr, 1);
			}
			break;
		case OPT_CRASH_AFTER_MS:
			conf.crash_after_ms = number("--crash-after-ms",
			    optarg, 0, MS_MAX);
			break;
		case OPT_CRASH_MID_STREAM:
			conf.crash_mid_stream = number("--crash-mid-stream",
			    optarg, 0, FAKELM_MAX_TOKENS);
			break;
		case OPT_IGNORE_TERM:
			conf.ignore_term = 1;
			break;
		case OPT_SLOW_EXIT_MS:
			conf.slow_exit_ms = number("--slow-exit-ms", optarg,
			    0, MS_MAX);
			break;
		case OPT_STALL:
			conf.stall = 1;
			break;
		case OPT_STAMP:
			conf.stamp = 1;
			break;
		case OPT_MAX_BODY:
			conf.max_body = (long long)size("--max-body", optarg);
			break;
		case OPT_ANTHROPIC_STRICT:
			conf.anthropic_strict = 1;
			break;
		case OPT_ANY_MODEL:
			conf.any_model = 1;
			break;
		case OPT_LOG_REQUESTS:
			conf.log_requests = 1;
			break;
		case OPT_VRAM:
			conf.vram = size("--vram", optarg);
			break;
		case OPT_VRAM_DEVICE:
			conf.vram_device = number("--vram-device", optarg, 0,
			    1023);
			break;
		case OPT_CUDA_LIB:
			conf.cuda_lib = optarg;
			break;
		case 'h':
			usage(stdout, 0);
		default:
			usage(stderr, 1);
		}
	}
	if (optind != argc)
		usage(stderr, 1);

	/* A client that leaves must not kill us with SIGPIPE. */
	signal(SIGPIPE, SIG_IGN);

	if ((base = event_base_new()) == NULL) {
		complain("fakelm: event_base_new failed");
		exit(1);
	}
	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		ev = evsignal_new(base, sigs[i], on_signal, NULL);
		if (ev == NULL || evsignal_add(ev, NULL) == -1) {
			complain("fakelm: cannot watch signal %d", sigs[i]);
			exit(1);
		}
	}
	env = getenv("AGENCY_EXIT_WITH_PARENT");
	if (env != NULL && strcmp(env, "1") == 0) {
		ev = event_new(base, STDIN_FILENO, EV_READ | EV_PERSIST,
		    on_stdin, NULL);
		/* A pipe, as agency gives; a file or /dev/null cannot be. */
		if (ev == NULL || event_add(ev, NULL) == -1)
			complain("fakelm: cannot watch stdin; "
			    "AGENCY_EXIT_WITH_PARENT ignored");
	}

	if ((http = evhttp_new(base)) == NULL) {
		complain("fakelm: evhttp_new failed");
		exit(1);
	}
	serve_init(http);
	load();

	if (event_base_dispatch(base) == -1) {
		complain("fakelm: event loop failed");
		exit(1);
	}
	return (0);
}
