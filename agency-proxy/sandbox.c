/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The proxy's sandbox, applied after the privilege drop (privsep.c) and
 * before the event loop: Landlock (no file system access; where the
 * kernel has them, TCP connect only to the model ports, no bind, and
 * signals and abstract unix sockets scoped to the process), then a
 * seccomp allowlist.  "agency-proxy -T" (sandbox_selftest) applies the
 * same code in child processes and tries what it must forbid.
 *
 * Models on Unix sockets (%s, agencyd's sockdir.c) need AF_UNIX
 * connect, and Landlock cannot restrict connect() to a pathname socket.
 * What keeps the proxy from every other socket is then: as root, its
 * chroot, in which the models' socket directories are the only sockets
 * (and -T tries one outside it); in user mode nothing here, but
 * agencyd's control sockets refuse it by its peer credentials (its pid;
 * as root its uid too).  Abstract sockets are scoped by Landlock ABI 6.
 *
 * Calls: privsep.c (the self-test drops privileges as the proxy does),
 * common/log.c.
 */
#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <linux/landlock.h>

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <grp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proxy.h"

/*
 * Debian 12's <linux/landlock.h> stops at ABI 2; what later ABIs add is
 * defined here and only used when the kernel reports that ABI.
 */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER		(1ULL << 13)	/* ABI 2 */
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE		(1ULL << 14)	/* ABI 3 */
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV		(1ULL << 15)	/* ABI 5 */
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP		(1ULL << 0)	/* ABI 4 */
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP		(1ULL << 1)	/* ABI 4 */
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET	(1ULL << 0)	/* ABI 6 */
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL			(1ULL << 1)	/* ABI 6 */
#endif
/* An enumerator in newer headers: the rule type number is ABI. */
#define SANDBOX_RULE_NET_PORT			2

#define LL_FS_ABI1	(LANDLOCK_ACCESS_FS_EXECUTE |			\
			 LANDLOCK_ACCESS_FS_WRITE_FILE |		\
			 LANDLOCK_ACCESS_FS_READ_FILE |			\
			 LANDLOCK_ACCESS_FS_READ_DIR |			\
			 LANDLOCK_ACCESS_FS_REMOVE_DIR |		\
			 LANDLOCK_ACCESS_FS_REMOVE_FILE |		\
			 LANDLOCK_ACCESS_FS_MAKE_CHAR |			\
			 LANDLOCK_ACCESS_FS_MAKE_DIR |			\
			 LANDLOCK_ACCESS_FS_MAKE_REG |			\
			 LANDLOCK_ACCESS_FS_MAKE_SOCK |			\
			 LANDLOCK_ACCESS_FS_MAKE_FIFO |			\
			 LANDLOCK_ACCESS_FS_MAKE_BLOCK |		\
			 LANDLOCK_ACCESS_FS_MAKE_SYM)

/* The kernel's structures as of ABI 6; it takes a shorter size too. */
struct ll_ruleset_attr {
	uint64_t	handled_access_fs;
	uint64_t	handled_access_net;	/* ABI 4 */
	uint64_t	scoped;			/* ABI 6 */
};

struct ll_net_port_attr {
	uint64_t	allowed_access;
	uint64_t	port;
};

/* The sandbox's parts, so that -T can try Landlock on its own. */
#define SB_LANDLOCK	0x1
#define SB_SECCOMP	0x2
#define SB_ALL		(SB_LANDLOCK | SB_SECCOMP)

static int	 sandbox_abi;		/* 0: no Landlock */

static int	 landlock_version(void);
static int	 landlock_apply(const struct proto_port_range *, size_t);
static int	 landlock_ports(int, const struct proto_port_range *, size_t);
static int	 landlock_enforce(int);
static int	 seccomp_apply(void);
static int	 sandbox_parts(const struct proto_port_range *, size_t, int);

static int
landlock_version(void)
{
	int	 abi;

	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	if (abi == -1) {
		if (errno == ENOSYS || errno == EOPNOTSUPP)
			return (0);
		return (-1);
	}
	return (abi);
}

/* Rules allowing connect to each port of the n ranges r. */
static int
landlock_ports(int fd, const struct proto_port_range *r, size_t n)
{
	struct ll_net_port_attr	 np;
	unsigned int		 port;
	size_t			 i;

	for (i = 0; i < n; i++) {
		for (port = r[i].lo; port <= r[i].hi; port++) {
			memset(&np, 0, sizeof(np));
			np.allowed_access = LANDLOCK_ACCESS_NET_CONNECT_TCP;
			np.port = port;
			if (syscall(SYS_landlock_add_rule, fd,
			    SANDBOX_RULE_NET_PORT, &np, 0) == -1) {
				log_warn("%s: landlock_add_rule port %u",
				    __func__, port);
				return (-1);
			}
		}
	}
	return (0);
}

/* Put the ruleset fd in force on this process, and close it. */
static int
landlock_enforce(int fd)
{
	int	 rv = 0;

	if (syscall(SYS_landlock_restrict_self, fd, 0) == -1) {
		log_warn("%s: landlock_restrict_self", __func__);
		rv = -1;
	}
	close(fd);
	return (rv);
}

static int
landlock_apply(const struct proto_port_range *ports, size_t nports)
{
	struct ll_ruleset_attr	 attr;
	size_t			 attrlen;
	int			 abi, fd;

	if ((abi = landlock_version()) == -1) {
		log_warn("%s: landlock version", __func__);
		return (-1);
	}
	sandbox_abi = abi;
	if (abi == 0) {
		log_warnx("Landlock is not available in this kernel: "
		    "the sandbox is the chroot, the limits and seccomp");
		return (0);
	}

	/* No rule for the file system: every right it knows is denied. */
	memset(&attr, 0, sizeof(attr));
	attr.handled_access_fs = LL_FS_ABI1;
	if (abi >= 2)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		attr.handled_access_fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	attrlen = offsetof(struct ll_ruleset_attr, handled_access_net);
	if (abi >= 4) {
		/* Listening sockets come from agencyd: no bind at all. */
		attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP;
		if (nports > 0)
			attr.handled_access_net |=
			    LANDLOCK_ACCESS_NET_CONNECT_TCP;
		else
			log_warnx("%s: no model port range (-p): outgoing "
			    "connections are not limited", __func__);
		attrlen = offsetof(struct ll_ruleset_attr, scoped);
	}
	if (abi >= 6) {
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET |
		    LANDLOCK_SCOPE_SIGNAL;
		attrlen = sizeof(attr);
	}

	if ((fd = syscall(SYS_landlock_create_ruleset, &attr, attrlen,
	    0)) == -1) {
		log_warn("%s: landlock_create_ruleset", __func__);
		return (-1);
	}
	if (abi >= 4 && nports > 0 && landlock_ports(fd, ports,
	    nports) == -1) {
		close(fd);
		return (-1);
	}
	/* Required by landlock_restrict_self; privsep_drop set it too. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1) {
		log_warn("%s: PR_SET_NO_NEW_PRIVS", __func__);
		close(fd);
		return (-1);
	}
	if (landlock_enforce(fd) == -1)
		return (-1);
	log_debug("%s: Landlock ABI %d: no file access%s%s", __func__, abi,
	    abi >= 4 ? (nports > 0 ? ", connect to the model ports only, "
	    "no bind" : ", no bind") : "",
	    abi >= 6 ? ", signals and abstract sockets scoped" : "");
	return (0);
}

/*
 * What the running proxy calls, found with strace on the integration
 * tests (forwarding, streaming, cancel, probes, reload) and by reading
 * glibc's exit and abort paths.  Everything before the event loop
 * (getpwnam, chroot, epoll_create1) is done by then.
 */
static const struct {
	int		 nr;
	const char	*name;
} sc_allow[] = {
	/* the event loop: libevent's epoll backend and its clock */
	{ SCMP_SYS(epoll_wait),		"epoll_wait" },
	{ SCMP_SYS(epoll_pwait),	"epoll_pwait" },
	{ SCMP_SYS(epoll_ctl),		"epoll_ctl" },
	{ SCMP_SYS(clock_gettime),	"clock_gettime" },	/* no vDSO */
	{ SCMP_SYS(gettimeofday),	"gettimeofday" },
	/* sockets handed over or made: evbuffer I/O, imsg with fds */
	{ SCMP_SYS(read),		"read" },
	{ SCMP_SYS(readv),		"readv" },
	{ SCMP_SYS(write),		"write" },	/* stderr, at exit */
	{ SCMP_SYS(writev),		"writev" },
	{ SCMP_SYS(accept4),		"accept4" },
	{ SCMP_SYS(connect),		"connect" },	/* Landlock: ports */
	{ SCMP_SYS(getsockopt),		"getsockopt" },	/* SO_ERROR */
	{ SCMP_SYS(getpeername),	"getpeername" },
	{ SCMP_SYS(shutdown),		"shutdown" },
	{ SCMP_SYS(close),		"close" },
	/* malloc (mmap and mprotect below, without PROT_EXEC) */
	{ SCMP_SYS(brk),		"brk" },
	{ SCMP_SYS(munmap),		"munmap" },
	{ SCMP_SYS(mremap),		"mremap" },
	{ SCMP_SYS(madvise),		"madvise" },
	{ SCMP_SYS(futex),		"futex" },	/* glibc's locks */
	{ SCMP_SYS(getrandom),		"getrandom" },	/* json-c's seed */
	/* ending: exit(), and abort() (tgkill below, to itself only) */
	{ SCMP_SYS(exit_group),		"exit_group" },
	{ SCMP_SYS(exit),		"exit" },
	{ SCMP_SYS(getpid),		"getpid" },
	{ SCMP_SYS(gettid),		"gettid" },
	{ SCMP_SYS(rt_sigprocmask),	"rt_sigprocmask" },
	{ SCMP_SYS(rt_sigreturn),	"rt_sigreturn" },
	{ SCMP_SYS(restart_syscall),	"restart_syscall" },
	/* sandbox_narrow: Landlock only ever takes rights away */
	{ SCMP_SYS(landlock_create_ruleset), "landlock_create_ruleset" },
	{ SCMP_SYS(landlock_add_rule),	"landlock_add_rule" },
	{ SCMP_SYS(landlock_restrict_self), "landlock_restrict_self" },
#ifdef __SANITIZE_ADDRESS__
	/*
	 * SANITIZE=1 builds: what the sanitizers' runtime calls once the
	 * filter is in (strace of the integration tests).  No prctl: it
	 * calls none after the sandbox, and its report path stops before
	 * one, at readlink("/proc/self/exe").
	 */
	{ SCMP_SYS(sigaltstack),	"sigaltstack" },
	{ SCMP_SYS(sched_yield),	"sched_yield" },
#endif
};

/* An int argument as the kernel reads it, for SCMP_CMP_MASKED_EQ. */
#define SC_FLAGS	((scmp_datum_t)0xffffffff)

static int
seccomp_rule(scmp_filter_ctx ctx, int nr, const char *name,
    unsigned int n, ...)
{
	struct scmp_arg_cmp	 cmp[3];
	va_list			 ap;
	unsigned int		 i;
	int			 r;

	va_start(ap, n);
	for (i = 0; i < n && i < 3; i++)
		cmp[i] = va_arg(ap, struct scmp_arg_cmp);
	va_end(ap);
	if ((r = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, i,
	    cmp)) < 0) {
		errno = -r;
		log_warn("%s: seccomp_rule_add %s", __func__, name);
		return (-1);
	}
	return (0);
}

static int
seccomp_apply(void)
{
	scmp_filter_ctx	 ctx;
	size_t		 i;
	int		 r, fam, proto;
	static const int fams[] = { AF_INET, AF_INET6 };
	static const int protos[] = { 0, IPPROTO_TCP };
	static const int fcntls[] = { F_GETFL, F_SETFL, F_GETFD, F_SETFD };

	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL) {
		log_warnx("%s: seccomp_init", __func__);
		return (-1);
	}
	/* A system call of another ABI (i386, x32) kills as well. */
	if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_KILL_PROCESS)) < 0) {
		errno = -r;
		log_warn("%s: seccomp_attr_set", __func__);
		goto fail;
	}
	for (i = 0; i < sizeof(sc_allow) / sizeof(sc_allow[0]); i++)
		if (seccomp_rule(ctx, sc_allow[i].nr, sc_allow[i].name,
		    0) == -1)
			goto fail;

	/*
	 * The imsg channel: sendmsg with MSG_NOSIGNAL, recvmsg with
	 * MSG_CMSG_CLOEXEC, and no other flag.  Landlock checks connect(),
	 * not the connection MSG_FASTOPEN makes inside sendmsg or sendto,
	 * so a Fast Open flag would reach any port: sendto is not allowed
	 * at all, and sendmsg only without it.  The kernel reads the flags
	 * as 32 bits; so does the mask.
	 */
	if (seccomp_rule(ctx, SCMP_SYS(sendmsg), "sendmsg", 1,
	    SCMP_A2(SCMP_CMP_MASKED_EQ, SC_FLAGS & ~(scmp_datum_t)MSG_NOSIGNAL,
	    0)) == -1 ||
	    seccomp_rule(ctx, SCMP_SYS(recvmsg), "recvmsg", 1,
	    SCMP_A2(SCMP_CMP_MASKED_EQ,
	    SC_FLAGS & ~(scmp_datum_t)MSG_CMSG_CLOEXEC, 0)) == -1)
		goto fail;
	/*
	 * Upstream connections only: TCP over IPv4 or IPv6, or a Unix
	 * stream socket (a model's, %s), with no flag but non-blocking and
	 * close-on-exec.
	 */
	for (fam = 0; fam < 2; fam++)
		for (proto = 0; proto < 2; proto++)
			if (seccomp_rule(ctx, SCMP_SYS(socket), "socket", 3,
			    SCMP_A0(SCMP_CMP_EQ, fams[fam]),
			    SCMP_A1(SCMP_CMP_MASKED_EQ, SC_FLAGS &
			    ~(scmp_datum_t)(SOCK_NONBLOCK | SOCK_CLOEXEC),
			    SOCK_STREAM),
			    SCMP_A2(SCMP_CMP_EQ, protos[proto])) == -1)
				goto fail;
	if (seccomp_rule(ctx, SCMP_SYS(socket), "socket", 3,
	    SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
	    SCMP_A1(SCMP_CMP_MASKED_EQ, SC_FLAGS &
	    ~(scmp_datum_t)(SOCK_NONBLOCK | SOCK_CLOEXEC), SOCK_STREAM),
	    SCMP_A2(SCMP_CMP_EQ, 0)) == -1)
		goto fail;
	/* O_NONBLOCK and FD_CLOEXEC, nothing else. */
	for (i = 0; i < sizeof(fcntls) / sizeof(fcntls[0]); i++)
		if (seccomp_rule(ctx, SCMP_SYS(fcntl), "fcntl", 1,
		    SCMP_A1(SCMP_CMP_EQ, fcntls[i])) == -1)
			goto fail;
	/* TCP_NODELAY on upstream connections, and a fixed send buffer
	 * for the event streams' clients (conn_sndbuf); nothing else. */
	if (seccomp_rule(ctx, SCMP_SYS(setsockopt), "setsockopt", 2,
	    SCMP_A1(SCMP_CMP_EQ, IPPROTO_TCP),
	    SCMP_A2(SCMP_CMP_EQ, TCP_NODELAY)) == -1 ||
	    seccomp_rule(ctx, SCMP_SYS(setsockopt), "setsockopt", 2,
	    SCMP_A1(SCMP_CMP_EQ, SOL_SOCKET),
	    SCMP_A2(SCMP_CMP_EQ, SO_SNDBUF)) == -1)
		goto fail;
	/* evbuffer_read (the probes' evhttp) asks how much is there. */
	if (seccomp_rule(ctx, SCMP_SYS(ioctl), "ioctl", 1,
	    SCMP_A1(SCMP_CMP_EQ, FIONREAD)) == -1)
		goto fail;
	/* Memory, never executable. */
	if (seccomp_rule(ctx, SCMP_SYS(mmap), "mmap", 1,
	    SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)) == -1 ||
	    seccomp_rule(ctx, SCMP_SYS(mprotect), "mprotect", 1,
	    SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0)) == -1)
		goto fail;
	/* abort() signals itself; no other process. */
	if (seccomp_rule(ctx, SCMP_SYS(tgkill), "tgkill", 1,
	    SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)getpid())) == -1)
		goto fail;

	if ((r = seccomp_load(ctx)) < 0) {
		errno = -r;
		log_warn("%s: seccomp_load", __func__);
		goto fail;
	}
	seccomp_release(ctx);
	return (0);
 fail:
	seccomp_release(ctx);
	return (-1);
}

static int
sandbox_parts(const struct proto_port_range *ports, size_t nports,
    int parts)
{
	if ((parts & SB_LANDLOCK) && landlock_apply(ports, nports) == -1)
		return (-1);
	/* Last: after it, nothing can be set up any more. */
	if ((parts & SB_SECCOMP) && seccomp_apply() == -1)
		return (-1);
	return (0);
}

/*
 * ports are the model ports, nports ranges of them (0: none given).
 * Landlock can only be narrowed later (sandbox_narrow), so a reload that
 * adds ports needs a new proxy.
 */
int
sandbox_apply(const struct proto_port_range *ports, size_t nports)
{
	return (sandbox_parts(ports, nports, SB_ALL));
}

/*
 * From now on connect only to these model ports, a part of those allowed
 * so far: one more Landlock layer, which handles TCP connect alone.  The
 * kernel stacks a few (16) layers at most; -1 then, or on any error, and
 * the caller ends the process rather than keep more rights than agencyd
 * means it to have.  Without Landlock's TCP rules (ABI < 4) there is
 * nothing to narrow.
 */
int
sandbox_narrow(const struct proto_port_range *ports, size_t nports)
{
	struct ll_ruleset_attr	 attr;
	size_t			 attrlen;
	int			 fd;

	if (sandbox_abi < 4 || nports == 0)
		return (0);
	memset(&attr, 0, sizeof(attr));
	attr.handled_access_net = LANDLOCK_ACCESS_NET_CONNECT_TCP;
	attrlen = offsetof(struct ll_ruleset_attr, scoped);
	if ((fd = syscall(SYS_landlock_create_ruleset, &attr, attrlen,
	    0)) == -1) {
		log_warn("%s: landlock_create_ruleset", __func__);
		return (-1);
	}
	if (landlock_ports(fd, ports, nports) == -1) {
		close(fd);
		return (-1);
	}
	return (landlock_enforce(fd));
}

/*
 * -T: each attempt runs in a child process of its own, which drops
 * privileges as the proxy does, applies the sandbox and tries one thing;
 * the result comes back over a pipe, or the child is killed by SIGSYS.
 * Each attempt runs twice: with the whole sandbox, which decides the exit
 * status, and with Landlock alone, to show the second layer holds too.
 */
enum {
	T_OPEN, T_CREATE, T_EXEC, T_CONNECT, T_CONNECT_FAR, T_FASTOPEN,
	T_SIGNAL, T_BIND, T_NARROWED, T_UNIX, T_ABSTRACT, T_UNIX_DGRAM,
	T_MAX
};

enum {
	R_ALLOWED,		/* it worked: the sandbox failed */
	R_DENIED,		/* EACCES or EPERM */
	R_ERROR,		/* another error: not a proof */
	R_UNCHECKED,		/* could not be tried honestly */
	R_KILLED,		/* SIGSYS: seccomp */
	R_BROKEN		/* the child died otherwise */
};

struct tresult {
	int		 r;
	int		 err;
	char		 why[96];
};

struct tenv {
	const char	*user;
	uint16_t	 port_lo;
	uint16_t	 port_hi;
	uint16_t	 port_out;	/* outside the range */
	pid_t		 target;	/* agencyd's stand-in */
	char		 tmpname[64];
	int		 loop_denied;	/* T_CONNECT gave EACCES */
	char		 unixpath[64];	/* a stand-in control socket */
	char		 abstract[64];	/* an abstract one, after its NUL */
	int		 unixfd;	/* listening on unixpath */
	int		 absfd;
	int		 chrooted;	/* as the proxy is, as root */
};

static const char *t_label[T_MAX] = {
	"open /etc/passwd",
	"create a file in /tmp",
	"exec /bin/true",
	"connect to 127.0.0.1 outside the model ports",
	"connect to 192.0.2.1 (not loopback)",
	"Fast Open (sendmsg MSG_FASTOPEN) to 127.0.0.1 outside the model ports",
	"signal agencyd (a stand-in: same user, no sandbox)",
	"bind 127.0.0.1 port 0",
	"connect to a model port narrowed away",
	"connect to a Unix socket outside the chroot (agencyd's stand-in)",
	"connect to an abstract Unix socket outside the sandbox",
	"make a Unix datagram socket",
};

static void
t_send(int fd, int r, int err, const char *why)
{
	struct tresult	 tr;

	memset(&tr, 0, sizeof(tr));
	tr.r = r;
	tr.err = err;
	if (why != NULL)
		(void)strlcpy(tr.why, why, sizeof(tr.why));
	(void)write(fd, &tr, sizeof(tr));
}

static void
t_errno(int fd, int rv)
{
	if (rv != -1)
		t_send(fd, R_ALLOWED, 0, NULL);
	else if (errno == ECONNREFUSED)
		t_send(fd, R_ALLOWED, 0, "connection refused: nothing "
		    "listens, but the sandbox let it through");
	else if (errno == EACCES || errno == EPERM)
		t_send(fd, R_DENIED, errno, NULL);
	else
		t_send(fd, R_ERROR, errno, NULL);
}

static int
t_connect(const char *addr, uint16_t port, int nonblock)
{
	struct sockaddr_in	 sin;
	int			 s, rv, saved;

	if ((s = socket(AF_INET, SOCK_STREAM |
	    (nonblock ? SOCK_NONBLOCK : 0), 0)) == -1)
		return (-1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	(void)inet_pton(AF_INET, addr, &sin.sin_addr);
	rv = connect(s, (struct sockaddr *)&sin, sizeof(sin));
	if (rv == -1 && errno == EINPROGRESS)
		rv = 0;		/* a SYN went out: allowed */
	saved = errno;
	close(s);
	errno = saved;
	return (rv);
}

/*
 * A TCP Fast Open connect: sendmsg with MSG_FASTOPEN connects and sends
 * in one call, without connect(), the call Landlock's port rule checks.
 */
static int
t_fastopen(uint16_t port)
{
	struct sockaddr_in	 sin;
	struct msghdr		 msg;
	struct iovec		 iov;
	char			 x = 'x';
	int			 s, rv, saved;

	if ((s = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		return (-1);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	iov.iov_base = &x;
	iov.iov_len = 1;
	memset(&msg, 0, sizeof(msg));
	msg.msg_name = &sin;
	msg.msg_namelen = sizeof(sin);
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	rv = sendmsg(s, &msg, MSG_FASTOPEN | MSG_NOSIGNAL);
	saved = errno;
	close(s);
	errno = saved;
	return (rv == -1 ? -1 : 0);
}

/* connect to the Unix socket path (abstract: its name after a NUL). */
static int
t_unix(const char *path, int abstract)
{
	struct sockaddr_un	 sun;
	socklen_t		 len;
	int			 s, rv, saved;

	if ((s = socket(AF_UNIX, SOCK_STREAM, 0)) == -1)
		return (-1);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	(void)strlcpy(sun.sun_path + (abstract ? 1 : 0), path,
	    sizeof(sun.sun_path) - 1);
	len = offsetof(struct sockaddr_un, sun_path) + (abstract ? 1 : 0) +
	    strlen(path) + (abstract ? 0 : 1);
	rv = connect(s, (struct sockaddr *)&sun, len);
	saved = errno;
	close(s);
	errno = saved;
	return (rv);
}

/* The child: never returns. */
static __dead void
t_child(struct tenv *env, int test, int parts, int fd)
{
	struct sockaddr_in	 sin;
	struct proto_port_range	 ports[2];
	char			*targv[] = { (char *)"true", NULL };
	char			*tenvp[] = { NULL };
	size_t			 nports;
	int			 dfd = -1, s, rv, devnull;

	if (log_getverbose() < 1 &&
	    (devnull = open("/dev/null", O_WRONLY)) != -1)
		(void)dup2(devnull, STDERR_FILENO);

	/* Handles taken before the chroot reach the real files. */
	switch (test) {
	case T_OPEN:
		dfd = open("/etc", O_PATH | O_DIRECTORY | O_CLOEXEC);
		break;
	case T_CREATE:
		dfd = open("/tmp", O_PATH | O_DIRECTORY | O_CLOEXEC);
		break;
	case T_EXEC:
		dfd = open("/bin/true", O_PATH | O_CLOEXEC);
		break;
	default:
		break;
	}
	if ((test == T_OPEN || test == T_CREATE || test == T_EXEC) &&
	    dfd == -1) {
		t_send(fd, R_UNCHECKED, errno, "cannot open its target");
		_exit(0);
	}

	privsep_drop(env->user);

	if (test == T_SIGNAL && kill(env->target, 0) == -1) {
		t_send(fd, R_UNCHECKED, errno, "out of reach before the "
		    "sandbox");
		_exit(0);
	}
	/* T_NARROWED: allowed port_out too, then narrowed to the range. */
	ports[0].lo = env->port_lo;
	ports[0].hi = env->port_hi;
	ports[1].lo = ports[1].hi = env->port_out;
	nports = env->port_lo == 0 ? 0 : test == T_NARROWED ? 2 : 1;
	if (sandbox_parts(ports, nports, parts) == -1)
		_exit(2);
	if (test == T_NARROWED && (nports == 0 || sandbox_abi < 4)) {
		t_send(fd, R_UNCHECKED, 0, nports == 0 ? "no model ports" :
		    "no Landlock TCP rules");
		_exit(0);
	}
	if (test == T_NARROWED && sandbox_narrow(ports, 1) == -1) {
		t_send(fd, R_ERROR, errno, "sandbox_narrow failed");
		_exit(0);
	}
	if (parts == SB_LANDLOCK && sandbox_abi == 0) {
		t_send(fd, R_UNCHECKED, 0, "no Landlock");
		_exit(0);
	}

	switch (test) {
	case T_OPEN:
		rv = openat(dfd, "passwd", O_RDONLY);
		t_errno(fd, rv);
		break;
	case T_CREATE:
		rv = openat(dfd, env->tmpname, O_WRONLY | O_CREAT | O_EXCL,
		    0600);
		t_errno(fd, rv);
		break;
	case T_EXEC:
		/* On success the program runs and exits 0 without a word. */
		rv = syscall(SYS_execveat, dfd, "", targv, tenvp,
		    AT_EMPTY_PATH);
		t_errno(fd, rv);
		break;
	case T_CONNECT:
	case T_NARROWED:
		t_errno(fd, t_connect("127.0.0.1", env->port_out, 0));
		break;
	case T_CONNECT_FAR:
		/*
		 * Landlock filters by port, not address: this is tried only
		 * when the same port on loopback was just denied, so that no
		 * packet can leave.
		 */
		if (!env->loop_denied)
			t_send(fd, R_UNCHECKED, 0, "the kernel cannot filter "
			    "by address and did not deny the port");
		else
			t_errno(fd, t_connect("192.0.2.1", env->port_out, 1));
		break;
	case T_FASTOPEN:
		t_errno(fd, t_fastopen(env->port_out));
		break;
	case T_SIGNAL:
		t_errno(fd, kill(env->target, 0));
		break;
	case T_UNIX:
		rv = t_unix(env->unixpath, 0);
		if (rv == -1 && errno == ENOENT && env->chrooted)
			/* chrooted: not there at all */
			t_send(fd, R_DENIED, ENOENT, NULL);
		else if (rv == 0 && !env->chrooted)
			t_send(fd, R_UNCHECKED, 0, "user mode: any socket of "
			    "the user's; agencyd refuses the proxy's pid");
		else
			t_errno(fd, rv);
		break;
	case T_ABSTRACT:
		if (sandbox_abi < 6 && parts == SB_LANDLOCK) {
			t_send(fd, R_UNCHECKED, 0, "no Landlock scoping");
			break;
		}
		t_errno(fd, t_unix(env->abstract, 1));
		break;
	case T_UNIX_DGRAM:
		t_errno(fd, socket(AF_UNIX, SOCK_DGRAM, 0));
		break;
	case T_BIND:
		if ((s = socket(AF_INET, SOCK_STREAM, 0)) == -1) {
			t_errno(fd, -1);
			break;
		}
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		t_errno(fd, bind(s, (struct sockaddr *)&sin, sizeof(sin)));
		break;
	default:
		break;
	}
	_exit(0);
}

static int
t_run(struct tenv *env, int test, int parts, struct tresult *tr)
{
	char		 path[128];
	pid_t		 pid;
	ssize_t		 n;
	int		 p[2], status;

	memset(tr, 0, sizeof(*tr));
	if (pipe2(p, O_CLOEXEC) == -1)
		fatal("%s: pipe2", __func__);
	fflush(stdout);
	fflush(stderr);
	switch ((pid = fork())) {
	case -1:
		fatal("%s: fork", __func__);
	case 0:
		close(p[0]);
		t_child(env, test, parts, p[1]);
	default:
		break;
	}
	close(p[1]);
	do {
		n = read(p[0], tr, sizeof(*tr));
	} while (n == -1 && errno == EINTR);
	close(p[0]);
	while (waitpid(pid, &status, 0) == -1)
		if (errno != EINTR)
			fatal("%s: waitpid", __func__);
	if (test == T_CREATE) {
		(void)snprintf(path, sizeof(path), "/tmp/%s", env->tmpname);
		(void)unlink(path);
	}

	if (n == (ssize_t)sizeof(*tr))
		return (tr->r);
	memset(tr, 0, sizeof(*tr));
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		tr->r = R_KILLED;
	else if (test == T_EXEC && WIFEXITED(status) &&
	    WEXITSTATUS(status) == 0) {
		tr->r = R_ALLOWED;
		(void)strlcpy(tr->why, "the program ran", sizeof(tr->why));
	} else {
		tr->r = R_BROKEN;
		if (WIFSIGNALED(status))
			(void)snprintf(tr->why, sizeof(tr->why),
			    "killed by signal %d", WTERMSIG(status));
		else
			(void)snprintf(tr->why, sizeof(tr->why),
			    "exited %d before trying", WEXITSTATUS(status));
	}
	return (tr->r);
}

static void
t_format(const struct tresult *tr, char *buf, size_t len)
{
	const char	*e = tr->err ? strerrorname_np(tr->err) : NULL;

	switch (tr->r) {
	case R_ALLOWED:
		(void)snprintf(buf, len, "allowed%s%s%s",
		    tr->why[0] ? " (" : "", tr->why, tr->why[0] ? ")" : "");
		break;
	case R_DENIED:
		(void)snprintf(buf, len, "denied (%s)", e ? e : "?");
		break;
	case R_KILLED:
		(void)snprintf(buf, len, "killed by SIGSYS");
		break;
	case R_ERROR:
		(void)snprintf(buf, len, "failed (%s), not a denial",
		    e ? e : "?");
		break;
	case R_UNCHECKED:
		(void)snprintf(buf, len, "not checked: %s%s%s%s", tr->why,
		    e ? " (" : "", e ? e : "", e ? ")" : "");
		break;
	default:
		(void)snprintf(buf, len, "error: %s", tr->why);
		break;
	}
}

/*
 * The Unix sockets the sandbox must keep the proxy from: one at a path
 * in /tmp anyone may connect to (as agencyd's restricted control socket
 * is), so that only the sandbox is in the way, and an abstract one.
 */
static void
t_listen(struct tenv *env)
{
	struct sockaddr_un	 sun;
	socklen_t		 len;

	(void)snprintf(env->unixpath, sizeof(env->unixpath),
	    "/tmp/agency-proxy-T.%ld.sock", (long)getpid());
	(void)snprintf(env->abstract, sizeof(env->abstract),
	    "agency-proxy-T.%ld", (long)getpid());
	(void)unlink(env->unixpath);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	(void)strlcpy(sun.sun_path, env->unixpath, sizeof(sun.sun_path));
	if ((env->unixfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
	    0)) == -1 ||
	    bind(env->unixfd, (struct sockaddr *)&sun, sizeof(sun)) == -1 ||
	    chmod(env->unixpath, 0666) == -1 ||
	    listen(env->unixfd, 4) == -1)
		fatal("%s: %s", __func__, env->unixpath);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	(void)strlcpy(sun.sun_path + 1, env->abstract,
	    sizeof(sun.sun_path) - 1);
	len = offsetof(struct sockaddr_un, sun_path) + 1 +
	    strlen(env->abstract);
	if ((env->absfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC,
	    0)) == -1 ||
	    bind(env->absfd, (struct sockaddr *)&sun, len) == -1 ||
	    listen(env->absfd, 4) == -1)
		fatal("%s: abstract %s", __func__, env->abstract);
}

/* A process with the proxy's credentials, outside the sandbox. */
static pid_t
t_target(const char *user)
{
	struct passwd	*pw;
	pid_t		 pid;

	switch ((pid = fork())) {
	case -1:
		fatal("%s: fork", __func__);
	case 0:
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
		if (getuid() == 0 && user != NULL) {
			if ((pw = getpwnam(user)) == NULL)
				_exit(1);
			if (setgroups(1, &pw->pw_gid) == -1 ||
			    setresgid(pw->pw_gid, pw->pw_gid,
			    pw->pw_gid) == -1 ||
			    setresuid(pw->pw_uid, pw->pw_uid,
			    pw->pw_uid) == -1)
				_exit(1);
		}
		for (;;)
			pause();
	default:
		break;
	}
	return (pid);
}

int
sandbox_selftest(const char *user, uint16_t port_lo, uint16_t port_hi)
{
	struct tenv	 env;
	struct tresult	 full, ll;
	char		 a[128], b[128];
	int		 abi, test, bad = 0;

	memset(&env, 0, sizeof(env));
	memset(&full, 0, sizeof(full));
	memset(&ll, 0, sizeof(ll));
	env.user = user;
	env.port_lo = port_lo;
	env.port_hi = port_hi;
	if (port_lo == 0)
		env.port_out = 5799;	/* below the default range */
	else
		env.port_out = port_lo > 1 ? port_lo - 1 : port_hi + 1;
	(void)snprintf(env.tmpname, sizeof(env.tmpname),
	    "agency-proxy-T.%ld", (long)getpid());

	if ((abi = landlock_version()) == -1)
		fatal("landlock version");
	printf("sandbox: Landlock ABI %d (%s), seccomp allowlist\n", abi,
	    abi == 0 ? "not available" : abi < 4 ? "files" :
	    abi < 6 ? "files, TCP ports" : "files, TCP ports, scoping");
	if (port_lo != 0)
		printf("model ports: %u to %u; outside: %u\n", port_lo,
		    port_hi, env.port_out);
	else
		printf("model ports: none given (-p)\n");
	printf("credentials: %s\n", getuid() == 0 && user != NULL ?
	    "chroot and the user switch" : getuid() == 0 ?
	    "root, no user switch (no -u)" : "user mode (no chroot)");

	env.chrooted = getuid() == 0 && user != NULL;
	t_listen(&env);
	env.target = t_target(user);
	for (test = 0; test < T_MAX; test++) {
		if (test == T_CONNECT_FAR)
			env.loop_denied = full.r == R_DENIED;
		t_run(&env, test, SB_ALL, &full);
		if (test == T_CONNECT_FAR)
			env.loop_denied = ll.r == R_DENIED;
		t_run(&env, test, SB_LANDLOCK, &ll);
		t_format(&full, a, sizeof(a));
		t_format(&ll, b, sizeof(b));
		printf("%s: %s; Landlock alone: %s\n", t_label[test], a, b);
		if (full.r != R_DENIED && full.r != R_KILLED &&
		    !((test == T_CONNECT_FAR || test == T_NARROWED ||
		    test == T_UNIX) && full.r == R_UNCHECKED))
			bad++;
	}
	(void)kill(env.target, SIGKILL);
	(void)waitpid(env.target, NULL, 0);
	close(env.unixfd);
	close(env.absfd);
	(void)unlink(env.unixpath);
	printf("%s\n", bad ? "FAILED: something was allowed" :
	    "every attempt was denied");
	fflush(stdout);
	return (bad ? 1 : 0);
}

#ifdef __SANITIZE_ADDRESS__
/*
 * SANITIZE=1 builds: LeakSanitizer's check at exit stops the process's
 * threads with ptrace and reads /proc, which the sandbox forbids, so the
 * check would end the proxy with SIGSYS.  Its leaks are looked for by
 * the fuzzers instead.
 */
const char	*__lsan_default_options(void);

const char *
__lsan_default_options(void)
{
	return ("detect_leaks=0");
}
#endif
