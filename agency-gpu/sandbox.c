/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The probe's sandbox (gpu_sandbox, whose rules are above it), applied
 * once NVML is loaded and initialised, as far as a vendor library we
 * cannot read allows; its seccomp filter runs in log mode until
 * "make check-gpu" has passed on a real card.  gpu_selftest (-Z DIR)
 * applies the same and tries what it forbids.
 *
 * Calls: common/log.c.
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <netinet/in.h>

#include <linux/landlock.h>

#include <errno.h>
#include <fcntl.h>
#include <seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "probe.h"
#include "log.h"

/* What Debian 12's header lacks, used only where the kernel has it. */
#define GPU_LL_TRUNCATE		(1ULL << 14)	/* ABI 3 */
#define GPU_LL_IOCTL_DEV	(1ULL << 15)	/* ABI 5 */
#define GPU_LL_NET_BIND		(1ULL << 0)	/* ABI 4 */
#define GPU_LL_NET_CONNECT	(1ULL << 1)	/* ABI 4 */
#define GPU_LL_SCOPE_SIGNAL	(1ULL << 1)	/* ABI 6 */

/* The ruleset attribute as of ABI 6; older kernels take a prefix. */
struct gpu_ll_attr {
	uint64_t	 fs;
	uint64_t	 net;
	uint64_t	 scoped;
};

/* Every file right of ABI 1 and 2 (REFER). */
#define GPU_LL_FS	(((LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1) |	\
			    LANDLOCK_ACCESS_FS_REFER)
#define GPU_LL_READ	(LANDLOCK_ACCESS_FS_READ_FILE |			\
			    LANDLOCK_ACCESS_FS_READ_DIR)

static void
limit(int resource)
{
	struct rlimit	 rl;

	rl.rlim_cur = rl.rlim_max = 0;
	if (setrlimit(resource, &rl) == -1)
		fatal("%s: setrlimit", __func__);
}

/* A rule: the rights under path. */
static int
ll_path(int ruleset, const char *path, uint64_t rights)
{
	struct landlock_path_beneath_attr	 pb;
	int					 fd, r;

	if ((fd = open(path, O_PATH | O_CLOEXEC)) == -1) {
		log_warn("%s: %s", __func__, path);
		return (-1);
	}
	memset(&pb, 0, sizeof(pb));
	pb.allowed_access = rights;
	pb.parent_fd = fd;
	r = (int)syscall(SYS_landlock_add_rule, ruleset,
	    LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	if (r == -1)
		log_warn("%s: landlock_add_rule %s", __func__, path);
	close(fd);
	return (r);
}

static int
landlock(void)
{
	struct gpu_ll_attr	 a;
	size_t			 alen;
	uint64_t		 dev;
	int			 abi, fd;

	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	if (abi <= 0) {
		log_info("Landlock is not available: the sandbox is the "
		    "limits and seccomp");
		return (0);
	}
	memset(&a, 0, sizeof(a));
	a.fs = GPU_LL_FS | (abi >= 3 ? GPU_LL_TRUNCATE : 0) |
	    (abi >= 5 ? GPU_LL_IOCTL_DEV : 0);
	alen = offsetof(struct gpu_ll_attr, net);
	if (abi >= 4) {
		a.net = GPU_LL_NET_BIND | GPU_LL_NET_CONNECT;
		alen = offsetof(struct gpu_ll_attr, scoped);
	}
	if (abi >= 6) {
		a.scoped = GPU_LL_SCOPE_SIGNAL;
		alen = sizeof(a);
	}
	if ((fd = (int)syscall(SYS_landlock_create_ruleset, &a, alen,
	    0)) == -1) {
		log_warn("%s: landlock_create_ruleset", __func__);
		return (-1);
	}
	dev = GPU_LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE |
	    (abi >= 5 ? GPU_LL_IOCTL_DEV : 0);
	if (ll_path(fd, "/", GPU_LL_READ) == -1 ||
	    ll_path(fd, "/dev", dev) == -1 ||
	    syscall(SYS_landlock_restrict_self, fd, 0) == -1) {
		log_warn("%s: Landlock", __func__);
		close(fd);
		return (-1);
	}
	close(fd);
	log_debug("%s: Landlock ABI %d: reads anywhere, writes under /dev "
	    "alone%s", __func__, abi, abi >= 4 ? ", no TCP" : "");
	return (0);
}

/*
 * What the probe calls once sandboxed, found with strace of the tests
 * against the stand-ins (regress/gpu), and by reading glibc's exit and
 * abort paths: the event loop, its channel, reading files, memory.
 */
static const int sc_allow[] = {
	SCMP_SYS(epoll_wait), SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl),
	SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday),
	SCMP_SYS(read), SCMP_SYS(readv), SCMP_SYS(write), SCMP_SYS(writev),
	SCMP_SYS(close), SCMP_SYS(openat), SCMP_SYS(newfstatat),
	SCMP_SYS(fstat), SCMP_SYS(lseek), SCMP_SYS(getdents64),
	SCMP_SYS(readlinkat), SCMP_SYS(readlink),
	SCMP_SYS(brk), SCMP_SYS(munmap), SCMP_SYS(mremap),
	SCMP_SYS(madvise), SCMP_SYS(futex), SCMP_SYS(getrandom),
	SCMP_SYS(exit_group), SCMP_SYS(exit), SCMP_SYS(getpid),
	SCMP_SYS(gettid), SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigreturn),
	SCMP_SYS(restart_syscall),
#ifdef __SANITIZE_ADDRESS__
	SCMP_SYS(sigaltstack), SCMP_SYS(sched_yield),
#endif
};

#define SC_FLAGS	((scmp_datum_t)0xffffffff)

static int
sc_rule(scmp_filter_ctx ctx, int nr, unsigned int n, struct scmp_arg_cmp a,
    struct scmp_arg_cmp b)
{
	struct scmp_arg_cmp	 cmp[2] = { a, b };
	int			 r;

	if ((r = seccomp_rule_add_array(ctx, SCMP_ACT_ALLOW, nr, n,
	    cmp)) < 0) {
		errno = -r;
		log_warn("%s: seccomp_rule_add %d", __func__, nr);
		return (-1);
	}
	return (0);
}

static int
seccomp(int enforce)
{
	static const int	 fcntls[] = { F_GETFL, F_SETFL, F_GETFD,
				    F_SETFD };
	struct scmp_arg_cmp	 none = SCMP_A0(SCMP_CMP_EQ, 0);
	scmp_filter_ctx		 ctx;
	uint32_t		 act;
	size_t			 i;
	int			 r;

	act = enforce ? SCMP_ACT_KILL_PROCESS : SCMP_ACT_LOG;
	if ((ctx = seccomp_init(act)) == NULL) {
		log_warnx("%s: seccomp_init", __func__);
		return (-1);
	}
	if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH,
	    SCMP_ACT_KILL_PROCESS)) < 0)
		goto fail;
	for (i = 0; i < sizeof(sc_allow) / sizeof(sc_allow[0]); i++)
		if (sc_rule(ctx, sc_allow[i], 0, none, none) == -1)
			goto fail;
	/* The channel: no flag but these. */
	if (sc_rule(ctx, SCMP_SYS(sendmsg), 1, SCMP_A2(SCMP_CMP_MASKED_EQ,
	    SC_FLAGS & ~(scmp_datum_t)MSG_NOSIGNAL, 0), none) == -1 ||
	    sc_rule(ctx, SCMP_SYS(recvmsg), 1, SCMP_A2(SCMP_CMP_MASKED_EQ,
	    SC_FLAGS & ~(scmp_datum_t)MSG_CMSG_CLOEXEC, 0), none) == -1)
		goto fail;
	for (i = 0; i < sizeof(fcntls) / sizeof(fcntls[0]); i++)
		if (sc_rule(ctx, SCMP_SYS(fcntl), 1,
		    SCMP_A1(SCMP_CMP_EQ, (scmp_datum_t)fcntls[i]), none) == -1)
			goto fail;
	/* Memory, never executable: NVML is loaded already. */
	if (sc_rule(ctx, SCMP_SYS(mmap), 1, SCMP_A2(SCMP_CMP_MASKED_EQ,
	    PROT_EXEC, 0), none) == -1 ||
	    sc_rule(ctx, SCMP_SYS(mprotect), 1, SCMP_A2(SCMP_CMP_MASKED_EQ,
	    PROT_EXEC, 0), none) == -1)
		goto fail;
	/* abort() signals itself; the NVML stand-in asks whether a process
	 * lives (signal 0). */
	if (sc_rule(ctx, SCMP_SYS(tgkill), 1, SCMP_A0(SCMP_CMP_EQ,
	    (scmp_datum_t)getpid()), none) == -1 ||
	    sc_rule(ctx, SCMP_SYS(kill), 1, SCMP_A1(SCMP_CMP_EQ, 0),
	    none) == -1)
		goto fail;
	if ((r = seccomp_load(ctx)) < 0)
		goto fail;
	seccomp_release(ctx);
	log_debug("%s: seccomp in %s mode", __func__, enforce ? "kill" :
	    "log");
	return (0);
 fail:
	log_warnx("%s: the seccomp filter could not be made", __func__);
	seccomp_release(ctx);
	return (-1);
}

/*
 * The sandbox:
 *
 *   - not dumpable: the model processes, of the same user, cannot
 *     ptrace it or read its memory;
 *   - no new privileges; no core files, no file growing (RLIMIT_FSIZE
 *     0).  Not RLIMIT_NPROC: its threads, should NVML make any, would
 *     count against every process of the model user;
 *   - Landlock: files and directories may be read anywhere (NVML reads
 *     /proc, /sys and its own files, the AMD side sysfs and fdinfo),
 *     written and ioctl'd only under /dev (the NVIDIA device nodes);
 *     no file is made, removed, renamed or executed; no TCP at all;
 *     no signal to a process outside it;
 *   - a seccomp allowlist, fitted to what the probe does with the
 *     stand-in libraries of the tests (regress/gpu).  Fitted to the
 *     stand-in, it would kill the real NVML on its first ioctl, so it
 *     runs in log mode (SECCOMP_RET_LOG: a call outside it is allowed
 *     and the kernel logs it, "type=1326" lines in the kernel log)
 *     until "make check-gpu" has passed on a real card with -K, which
 *     makes it kill instead.  check-gpu lists the calls logged, to
 *     be added here.
 */
int
gpu_sandbox(int enforce)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		fatal("%s: PR_SET_DUMPABLE", __func__);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		fatal("%s: PR_SET_NO_NEW_PRIVS", __func__);
	limit(RLIMIT_FSIZE);
	limit(RLIMIT_CORE);
	if (landlock() == -1)
		return (-1);
	return (seccomp(enforce));
}

/*
 * -Z DIR: sandboxed as the probe is, try to make a file in DIR (which
 * the user may write: Landlock must refuse it) and then to open a TCP
 * socket (outside the allowlist: logged, or with -K the end of us).
 * One line a try on standard output.
 */
int
gpu_selftest(const char *dir, int enforce)
{
	char	 path[1024];
	int	 fd;

	if (gpu_sandbox(enforce) == -1) {
		printf("sandbox: failed\n");
		return (1);
	}
	printf("sandbox: applied\n");
	(void)snprintf(path, sizeof(path), "%s/selftest", dir);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) == -1)
		printf("create: %s\n", errno == EACCES ? "denied" :
		    strerror(errno));
	else {
		printf("create: allowed\n");
		close(fd);
	}
	fflush(stdout);
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		printf("socket: %s\n", strerror(errno));
	else {
		printf("socket: allowed\n");
		close(fd);
	}
	fflush(stdout);
	return (0);
}
