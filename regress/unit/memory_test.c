/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * memory.c: /proc/meminfo, cgroup limits, reserve, need, formatting.
 * Sample files live in data/ next to this program (srcdir).
 */
#include <sys/stat.h>

#include <atf-c.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"
#include "memory.h"

#define GIB	MEM_GIB
#define MIB	MEM_MIB

static char	pathbuf[4][PATH_MAX];
static int	pathidx;

/* A file under data/; four rotating buffers so a call can take several. */
static const char *
data(const atf_tc_t *tc, const char *name)
{
	char	*p = pathbuf[pathidx++ % 4];

	snprintf(p, PATH_MAX, "%s/data/%s",
	    atf_tc_get_config_var(tc, "srcdir"), name);
	return (p);
}

static void
setup(void)
{
	log_init(1, LOG_DAEMON);
}

static void
mkfile(const char *path, off_t size)
{
	int	 fd;

	ATF_REQUIRE((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) !=
	    -1);
	ATF_REQUIRE(ftruncate(fd, size) == 0);
	close(fd);
}

static void
mkdirs(const char *path)
{
	ATF_REQUIRE_MSG(mkdir(path, 0755) == 0, "mkdir %s", path);
}

static int
cgroom(const atf_tc_t *tc, const char *proc, int64_t *room)
{
	*room = -42;
	return (mem_cgroup_room(data(tc, proc), data(tc, "cg2"),
	    data(tc, "cg1"), room));
}

ATF_TC_WITHOUT_HEAD(meminfo_parse);
ATF_TC_BODY(meminfo_parse, tc)
{
	int64_t	 avail = 0, total = 0;

	setup();
	ATF_REQUIRE_EQ(mem_read_meminfo(data(tc, "meminfo.sample"), &avail,
	    &total), 0);
	ATF_CHECK_EQ(avail, 22359608LL * 1024);
	ATF_CHECK_EQ(total, 24684084LL * 1024);
}

ATF_TC_WITHOUT_HEAD(meminfo_malformed);
ATF_TC_BODY(meminfo_malformed, tc)
{
	int64_t	 avail, total;

	setup();
	ATF_CHECK_EQ(mem_read_meminfo(data(tc, "meminfo.noavail"), &avail,
	    &total), -1);
	ATF_CHECK_EQ(mem_read_meminfo(data(tc, "meminfo.badnum"), &avail,
	    &total), -1);
	ATF_CHECK_EQ(mem_read_meminfo(data(tc, "proc_cgroup.empty"), &avail,
	    &total), -1);
	ATF_CHECK_EQ(mem_read_meminfo(data(tc, "no-such-file"), &avail,
	    &total), -1);
}

ATF_TC_WITHOUT_HEAD(cgroup_v2_max);
ATF_TC_BODY(cgroup_v2_max, tc)
{
	int64_t	 room;

	setup();
	/* memory.max "max" and a root without memory.max: no limit. */
	ATF_CHECK_EQ(cgroom(tc, "proc_cgroup.v2unlimited", &room), 1);
	ATF_CHECK_EQ(room, -42);
	/* A cgroup that is not under the mount (no cgroup namespace). */
	ATF_CHECK_EQ(cgroom(tc, "proc_cgroup.v2missing", &room), 1);
}

ATF_TC_WITHOUT_HEAD(cgroup_v2_limit);
ATF_TC_BODY(cgroup_v2_limit, tc)
{
	int64_t	 room;

	setup();
	ATF_REQUIRE_EQ(cgroom(tc, "proc_cgroup.v2limited", &room), 0);
	ATF_CHECK_EQ(room, 7 * GIB);
	/* Usage above the limit is no room, not a negative one. */
	ATF_REQUIRE_EQ(cgroom(tc, "proc_cgroup.v2over", &room), 0);
	ATF_CHECK_EQ(room, 0);
}

ATF_TC_WITHOUT_HEAD(cgroup_v2_nested);
ATF_TC_BODY(cgroup_v2_nested, tc)
{
	int64_t	 room;

	setup();
	/*
	 * leaf: 2G - 512M = 1.5G; child: max; nested: 4G - 3G = 1G.
	 * The tightest is an ancestor's.
	 */
	ATF_REQUIRE_EQ(cgroom(tc, "proc_cgroup.v2nested", &room), 0);
	ATF_CHECK_EQ(room, 1 * GIB);
}

ATF_TC_WITHOUT_HEAD(cgroup_v1_limit);
ATF_TC_BODY(cgroup_v1_limit, tc)
{
	int64_t	 room;

	setup();
	/* grp: 2G - 512M; the v1 root's huge limit is none; v2 has none. */
	ATF_REQUIRE_EQ(cgroom(tc, "proc_cgroup.v1limited", &room), 0);
	ATF_CHECK_EQ(room, 2 * GIB - 512 * MIB);
	/* memory co-mounted with another controller. */
	ATF_REQUIRE_EQ(cgroom(tc, "proc_cgroup.v1comount", &room), 0);
	ATF_CHECK_EQ(room, 2 * GIB - 512 * MIB);
	/* Without a v1 root the v1 line is not looked at. */
	ATF_CHECK_EQ(mem_cgroup_room(data(tc, "proc_cgroup.v1limited"),
	    data(tc, "cg2"), NULL, &room), 1);
}

ATF_TC_WITHOUT_HEAD(cgroup_none);
ATF_TC_BODY(cgroup_none, tc)
{
	int64_t	 room;

	setup();
	/* v1 "unlimited" (page-rounded LLONG_MAX) at every level. */
	ATF_CHECK_EQ(cgroom(tc, "proc_cgroup.v1free", &room), 1);
	ATF_CHECK_EQ(room, -42);
}

ATF_TC_WITHOUT_HEAD(cgroup_malformed);
ATF_TC_BODY(cgroup_malformed, tc)
{
	int64_t	 room;

	setup();
	ATF_CHECK_EQ(cgroom(tc, "proc_cgroup.malformed", &room), -1);
	ATF_CHECK_EQ(cgroom(tc, "proc_cgroup.badid", &room), -1);
	ATF_CHECK_EQ(cgroom(tc, "proc_cgroup.empty", &room), -1);
	ATF_CHECK_EQ(cgroom(tc, "proc_cgroup.v2bad", &room), -1);
	ATF_CHECK_EQ(cgroom(tc, "no-such-file", &room), -1);
	ATF_CHECK_EQ(room, -42);
}

ATF_TC_WITHOUT_HEAD(snapshot_live);
ATF_TC_BODY(snapshot_live, tc)
{
	struct mem_snapshot	 ms;
	int64_t			 avail, total;

	(void)tc;
	setup();
	if (access(MEM_PROC_MEMINFO, R_OK) == -1)
		atf_tc_skip("no %s", MEM_PROC_MEMINFO);
	ATF_REQUIRE_EQ(mem_read_meminfo(MEM_PROC_MEMINFO, &avail, &total),
	    0);
	ATF_REQUIRE_EQ(mem_snapshot(&ms), 0);
	ATF_CHECK(ms.total == total);
	ATF_CHECK(ms.available >= 0);
	ATF_CHECK(ms.available <= ms.total);
}

ATF_TC_WITHOUT_HEAD(reserve_default);
ATF_TC_BODY(reserve_default, tc)
{
	(void)tc;
	ATF_CHECK_EQ(mem_reserve_default(8 * GIB), 8 * GIB / 20);
	ATF_CHECK_EQ(mem_reserve_default(100 * GIB), 2 * GIB);
	ATF_CHECK_EQ(mem_reserve_default(40 * GIB), 2 * GIB);
}

ATF_TC_WITHOUT_HEAD(need_configured);
ATF_TC_BODY(need_configured, tc)
{
	(void)tc;
	setup();
	int	 from = -1;

	ATF_CHECK_EQ(mem_need("/no/such/model.gguf", 6 * GIB, KIND_CHAT,
	    NULL, &from), 6 * GIB);
	ATF_CHECK_EQ(from, NEED_CONFIGURED);
	ATF_CHECK_EQ(mem_need("org/name", 3 * GIB, KIND_IMAGE, NULL, NULL),
	    3 * GIB);
}

ATF_TC_WITHOUT_HEAD(need_file);
ATF_TC_BODY(need_file, tc)
{
	char	 cwd[PATH_MAX], path[PATH_MAX + 32];
	int	 from = -1;

	(void)tc;
	setup();
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(path, sizeof(path), "%s/model.gguf", cwd);
	mkfile(path, 5 * MIB);
	ATF_CHECK_EQ(mem_need(path, 0, KIND_CHAT, NULL, &from),
	    5 * MIB + GIB);
	ATF_CHECK_EQ(from, NEED_FILE);
	ATF_CHECK_EQ(mem_need(path, -1, KIND_EMBEDDING, NULL, NULL),
	    5 * MIB + GIB);
	/* Missing: the headroom alone. */
	snprintf(path, sizeof(path), "%s/absent.gguf", cwd);
	ATF_CHECK_EQ(mem_need(path, 0, KIND_CHAT, NULL, &from), GIB);
	ATF_CHECK_EQ(from, NEED_HEADROOM);
}

ATF_TC_WITHOUT_HEAD(need_dir);
ATF_TC_BODY(need_dir, tc)
{
	char	 cwd[PATH_MAX], dir[PATH_MAX + 64], p[PATH_MAX + 128];
	int	 from = -1;

	(void)tc;
	setup();
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(dir, sizeof(dir), "%s/model", cwd);
	mkdirs(dir);
	snprintf(p, sizeof(p), "%s/weights-1.safetensors", dir);
	mkfile(p, 3 * MIB);
	snprintf(p, sizeof(p), "%s/weights-2.safetensors", dir);
	mkfile(p, 2 * MIB);
	snprintf(p, sizeof(p), "%s/sub", dir);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/sub/tokenizer.json", dir);
	mkfile(p, 1000);
	/* A symlink to a file outside counts (HF snapshots are links). */
	snprintf(p, sizeof(p), "%s/blob", cwd);
	mkfile(p, 7 * MIB);
	snprintf(p, sizeof(p), "%s/linked.safetensors", dir);
	ATF_REQUIRE(symlink("../blob", p) == 0);
	/* A symlink to a directory is not entered. */
	snprintf(p, sizeof(p), "%s/other", cwd);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/other/big", cwd);
	mkfile(p, 100 * MIB);
	snprintf(p, sizeof(p), "%s/otherlink", dir);
	ATF_REQUIRE(symlink("../other", p) == 0);
	/* A dangling link is ignored. */
	snprintf(p, sizeof(p), "%s/dangling", dir);
	ATF_REQUIRE(symlink("../nowhere", p) == 0);

	ATF_CHECK_EQ(mem_disk_size(dir), 12 * MIB + 1000);
	ATF_CHECK_EQ(mem_need(dir, 0, KIND_CHAT, NULL, &from),
	    12 * MIB + 1000 + GIB);
	ATF_CHECK_EQ(from, NEED_DIRECTORY);
}

ATF_TC_WITHOUT_HEAD(need_image);
ATF_TC_BODY(need_image, tc)
{
	char	 cwd[PATH_MAX], path[PATH_MAX + 32];

	(void)tc;
	setup();
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(path, sizeof(path), "%s/sd.safetensors", cwd);
	mkfile(path, 2 * MIB);
	ATF_CHECK_EQ(mem_need(path, 0, KIND_IMAGE, NULL, NULL),
	    2 * MIB + 4 * GIB);
	ATF_CHECK_EQ(mem_need("/no/such/thing", 0, KIND_IMAGE, NULL, NULL),
	    4 * GIB);
}

/* An HF cache repo: blobs a (4M) and b (1M), old (8M) from another rev. */
static void
hf_repo(const char *hub, const char *repo, int withref)
{
	char	 p[PATH_MAX];
	FILE	*fp;

	snprintf(p, sizeof(p), "%s/%s", hub, repo);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/%s/blobs", hub, repo);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/%s/blobs/aaaa", hub, repo);
	mkfile(p, 4 * MIB);
	snprintf(p, sizeof(p), "%s/%s/blobs/bbbb", hub, repo);
	mkfile(p, 1 * MIB);
	snprintf(p, sizeof(p), "%s/%s/blobs/oooo", hub, repo);
	mkfile(p, 8 * MIB);
	snprintf(p, sizeof(p), "%s/%s/snapshots", hub, repo);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/%s/snapshots/rev1", hub, repo);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/%s/snapshots/rev1/model.safetensors", hub,
	    repo);
	ATF_REQUIRE(symlink("../../blobs/aaaa", p) == 0);
	snprintf(p, sizeof(p), "%s/%s/snapshots/rev1/config.json", hub, repo);
	ATF_REQUIRE(symlink("../../blobs/bbbb", p) == 0);
	snprintf(p, sizeof(p), "%s/%s/snapshots/rev0", hub, repo);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/%s/snapshots/rev0/model.safetensors", hub,
	    repo);
	ATF_REQUIRE(symlink("../../blobs/oooo", p) == 0);
	if (!withref)
		return;
	snprintf(p, sizeof(p), "%s/%s/refs", hub, repo);
	mkdirs(p);
	snprintf(p, sizeof(p), "%s/%s/refs/main", hub, repo);
	ATF_REQUIRE((fp = fopen(p, "w")) != NULL);
	fputs("rev1", fp);		/* HF writes no newline */
	fclose(fp);
}

/* base/rel in buf, made with every directory on the way. */
static void
hf_hub(char *buf, size_t len, const char *base, const char *rel)
{
	char	*p;

	ATF_REQUIRE((size_t)snprintf(buf, len, "%s/%s", base, rel) < len);
	for (p = buf + strlen(base) + 1; (p = strchr(p, '/')) != NULL; p++) {
		*p = '\0';
		mkdirs(buf);
		*p = '/';
	}
	mkdirs(buf);
}

/* mem_need() of id with one NAME=VALUE (and HOME=home, when given). */
static int64_t
need_with(const char *id, const char *kv, const char *home, int *from)
{
	char	*envp[4], homekv[PATH_MAX + 8];
	int	 n = 0;

	envp[n++] = (char *)(uintptr_t)"PATH=/usr/bin:/bin";
	if (kv != NULL)
		envp[n++] = (char *)(uintptr_t)kv;
	if (home != NULL) {
		ATF_REQUIRE(strlcpy(homekv, "HOME=", sizeof(homekv)) == 5 &&
		    strlcat(homekv, home, sizeof(homekv)) < sizeof(homekv));
		envp[n++] = homekv;
	}
	envp[n] = NULL;
	return (mem_need(id, 0, KIND_CHAT, envp, from));
}

ATF_TC_WITHOUT_HEAD(need_hf_cache);
ATF_TC_BODY(need_hf_cache, tc)
{
	char	 cwd[PATH_MAX], hub[PATH_MAX + 32], home[PATH_MAX + 32];
	char	 kv[PATH_MAX + 64];
	int	 from = -1;

	(void)tc;
	setup();
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(hub, sizeof(hub), "%s/hub", cwd);
	mkdirs(hub);
	hf_repo(hub, "models--Org--Model-7B", 1);
	hf_repo(hub, "models--noref", 0);
	snprintf(kv, sizeof(kv), "HF_HUB_CACHE=%s", hub);

	/* refs/main's snapshot only: 4M + 1M. */
	ATF_CHECK_EQ(need_with("Org/Model-7B", kv, NULL, &from),
	    5 * MIB + GIB);
	ATF_CHECK_EQ(from, NEED_HF_CACHE);
	/* A llama.cpp-style ":quant" tag is not part of the repo name. */
	ATF_CHECK_EQ(need_with("Org/Model-7B:Q4_K_M", kv, NULL, NULL),
	    5 * MIB + GIB);
	/* No refs/main: every blob, 4M + 1M + 8M. */
	ATF_CHECK_EQ(need_with("noref", kv, NULL, NULL), 13 * MIB + GIB);
	/* Not in the cache: the headroom alone. */
	ATF_CHECK_EQ(need_with("Org/Absent", kv, NULL, &from), GIB);
	ATF_CHECK_EQ(from, NEED_HEADROOM);
	ATF_CHECK_EQ(mem_need("Org/Absent", 0, KIND_IMAGE, NULL, NULL),
	    4 * GIB);

	/* The legacy name, HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub. */
	snprintf(kv, sizeof(kv), "HUGGINGFACE_HUB_CACHE=%s", hub);
	ATF_CHECK_EQ(need_with("Org/Model-7B", kv, NULL, NULL),
	    5 * MIB + GIB);
	snprintf(kv, sizeof(kv), "HF_HOME=%s", cwd);
	ATF_CHECK_EQ(need_with("Org/Model-7B", kv, NULL, NULL),
	    5 * MIB + GIB);
	hf_hub(hub, sizeof(hub), cwd, "xdg/huggingface/hub");
	hf_repo(hub, "models--Org--Model-7B", 1);
	snprintf(kv, sizeof(kv), "XDG_CACHE_HOME=%s/xdg", cwd);
	ATF_CHECK_EQ(need_with("Org/Model-7B", kv, NULL, NULL),
	    5 * MIB + GIB);

	/* HOME/.cache/huggingface/hub last. */
	snprintf(home, sizeof(home), "%s/home", cwd);
	mkdirs(home);
	ATF_CHECK_EQ(need_with("Org/Model-7B", NULL, home, NULL), GIB);
	hf_hub(hub, sizeof(hub), home, ".cache/huggingface/hub");
	hf_repo(hub, "models--Org--Model-7B", 1);
	ATF_CHECK_EQ(need_with("Org/Model-7B", NULL, home, NULL),
	    5 * MIB + GIB);
	/* "~/" is the model's home; a relative path is not looked up. */
	ATF_CHECK_EQ(need_with("Org/Model-7B", "HF_HOME=~/.cache/huggingface",
	    home, NULL), 5 * MIB + GIB);
	ATF_CHECK_EQ(need_with("Org/Model-7B", "HF_HOME=hub", home, &from),
	    GIB);
	ATF_CHECK_EQ(from, NEED_HEADROOM);
}

ATF_TC_WITHOUT_HEAD(need_hf_own_env);
ATF_TC_BODY(need_hf_own_env, tc)
{
	char	 cwd[PATH_MAX], hub[PATH_MAX + 32], kv[PATH_MAX + 64];

	(void)tc;
	setup();
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(hub, sizeof(hub), "%s/hub", cwd);
	mkdirs(hub);
	hf_repo(hub, "models--Org--Model-7B", 1);
	/* Ours points at the cache; the model's environment does not. */
	ATF_REQUIRE(setenv("HF_HUB_CACHE", hub, 1) == 0);
	ATF_REQUIRE(setenv("HF_HOME", cwd, 1) == 0);
	ATF_CHECK_EQ(need_with("Org/Model-7B", NULL, NULL, NULL), GIB);
	ATF_CHECK_EQ(mem_need("Org/Model-7B", 0, KIND_CHAT, NULL, NULL),
	    GIB);
	/* And the other way round. */
	ATF_REQUIRE(setenv("HF_HUB_CACHE", "/nonexistent", 1) == 0);
	snprintf(kv, sizeof(kv), "HF_HUB_CACHE=%s", hub);
	ATF_CHECK_EQ(need_with("Org/Model-7B", kv, NULL, NULL),
	    5 * MIB + GIB);
	ATF_REQUIRE(unsetenv("HF_HUB_CACHE") == 0);
	ATF_REQUIRE(unsetenv("HF_HOME") == 0);
}

ATF_TC_WITHOUT_HEAD(need_hf_fifo_ref);
ATF_TC_BODY(need_hf_fifo_ref, tc)
{
	char	 cwd[PATH_MAX], hub[PATH_MAX + 32], kv[PATH_MAX + 64];
	char	 p[PATH_MAX + 128];

	(void)tc;
	setup();
	ATF_REQUIRE(getcwd(cwd, sizeof(cwd)) != NULL);
	snprintf(hub, sizeof(hub), "%s/hub", cwd);
	mkdirs(hub);
	hf_repo(hub, "models--Org--Model-7B", 0);
	snprintf(p, sizeof(p), "%s/models--Org--Model-7B/refs", hub);
	mkdirs(p);
	/* A FIFO as refs/main: no reader would block us forever. */
	snprintf(p, sizeof(p), "%s/models--Org--Model-7B/refs/main", hub);
	ATF_REQUIRE(mkfifo(p, 0644) == 0);
	snprintf(kv, sizeof(kv), "HF_HUB_CACHE=%s", hub);
	/* Every blob instead: 4M + 1M + 8M. */
	ATF_CHECK_EQ(need_with("Org/Model-7B", kv, NULL, NULL),
	    13 * MIB + GIB);
}

ATF_TC_WITHOUT_HEAD(fmt);
ATF_TC_BODY(fmt, tc)
{
	char	 buf[MEM_FMT_LEN];

	(void)tc;
	mem_fmt(buf, sizeof(buf), 6 * GIB);
	ATF_CHECK_STREQ(buf, "6.0 GiB");
	mem_fmt(buf, sizeof(buf), 512 * MIB);
	ATF_CHECK_STREQ(buf, "512 MiB");
	mem_fmt(buf, sizeof(buf), 3 * GIB / 2);
	ATF_CHECK_STREQ(buf, "1.5 GiB");
	mem_fmt(buf, sizeof(buf), 4096);
	ATF_CHECK_STREQ(buf, "4 KiB");
	mem_fmt(buf, sizeof(buf), 100);
	ATF_CHECK_STREQ(buf, "100 B");
	mem_fmt(buf, sizeof(buf), 0);
	ATF_CHECK_STREQ(buf, "0 B");
	mem_fmt(buf, sizeof(buf), -2 * GIB);
	ATF_CHECK_STREQ(buf, "-2.0 GiB");
	mem_fmt(buf, sizeof(buf), 2048 * GIB);
	ATF_CHECK_STREQ(buf, "2.0 TiB");
	mem_fmt(buf, sizeof(buf), INT64_MIN);
	ATF_CHECK(strstr(buf, "TiB") != NULL);
	/* Truncated, still terminated. */
	mem_fmt(buf, 4, 6 * GIB);
	ATF_CHECK_STREQ(buf, "6.0");
}

ATF_TC_WITHOUT_HEAD(add_saturates);
ATF_TC_BODY(add_saturates, tc)
{
	(void)tc;
	ATF_CHECK_EQ(mem_add(2 * GIB, 3 * GIB), 5 * GIB);
	ATF_CHECK_EQ(mem_add(INT64_MAX, 1), INT64_MAX);
	ATF_CHECK_EQ(mem_add(INT64_MAX - 1, INT64_MAX), INT64_MAX);
	ATF_CHECK_EQ(mem_add(INT64_MAX, INT64_MAX), INT64_MAX);
	/* A negative size (unknown) adds nothing. */
	ATF_CHECK_EQ(mem_add(-1, GIB), GIB);
	ATF_CHECK_EQ(mem_add(GIB, INT64_MIN), GIB);
}

/*
 * Sparse files as large as a file can be, on tmpfs, which allows
 * INT64_MAX bytes (ext4 stops at 16 TiB).  Their directory's name is
 * kept in ./shmdir for the cleanup.
 */
ATF_TC_WITH_CLEANUP(need_saturates);
ATF_TC_HEAD(need_saturates, tc)
{
	atf_tc_set_md_var(tc, "descr", "Sizes on disk add up without "
	    "wrapping: huge sparse files need INT64_MAX, never less");
}
ATF_TC_BODY(need_saturates, tc)
{
	char	 dir[] = "/dev/shm/agency-memtest-XXXXXX", p[PATH_MAX];
	FILE	*fp;
	int	 fd, from;

	(void)tc;
	setup();
	if (mkdtemp(dir) == NULL)
		atf_tc_skip("no tmpfs at /dev/shm");
	ATF_REQUIRE((fp = fopen("shmdir", "w")) != NULL);
	fprintf(fp, "%s\n", dir);
	fclose(fp);
	snprintf(p, sizeof(p), "%s/a.safetensors", dir);
	ATF_REQUIRE((fd = open(p, O_WRONLY | O_CREAT, 0644)) != -1);
	if (ftruncate(fd, INT64_MAX) == -1) {
		close(fd);
		atf_tc_skip("/dev/shm holds no file of INT64_MAX bytes");
	}
	close(fd);
	/* One: size + headroom would wrap. */
	ATF_CHECK_EQ(mem_need(p, 0, KIND_CHAT, NULL, &from), INT64_MAX);
	ATF_CHECK_EQ(from, NEED_FILE);
	/* Two in a directory: the sum would wrap to -2 and count as none. */
	snprintf(p, sizeof(p), "%s/b.safetensors", dir);
	mkfile(p, INT64_MAX);
	ATF_CHECK_EQ(mem_disk_size(dir), INT64_MAX);
	ATF_CHECK_EQ(mem_need(dir, 0, KIND_CHAT, NULL, &from), INT64_MAX);
	ATF_CHECK_EQ(from, NEED_DIRECTORY);
}
ATF_TC_CLEANUP(need_saturates, tc)
{
	char	 dir[PATH_MAX], p[PATH_MAX + 32];
	FILE	*fp;

	(void)tc;
	if ((fp = fopen("shmdir", "r")) == NULL)
		return;
	if (fgets(dir, sizeof(dir), fp) != NULL) {
		dir[strcspn(dir, "\n")] = '\0';
		if (strncmp(dir, "/dev/shm/agency-memtest-", 24) == 0) {
			snprintf(p, sizeof(p), "%s/a.safetensors", dir);
			(void)unlink(p);
			snprintf(p, sizeof(p), "%s/b.safetensors", dir);
			(void)unlink(p);
			(void)rmdir(dir);
		}
	}
	fclose(fp);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, meminfo_parse);
	ATF_TP_ADD_TC(tp, meminfo_malformed);
	ATF_TP_ADD_TC(tp, cgroup_v2_max);
	ATF_TP_ADD_TC(tp, cgroup_v2_limit);
	ATF_TP_ADD_TC(tp, cgroup_v2_nested);
	ATF_TP_ADD_TC(tp, cgroup_v1_limit);
	ATF_TP_ADD_TC(tp, cgroup_none);
	ATF_TP_ADD_TC(tp, cgroup_malformed);
	ATF_TP_ADD_TC(tp, snapshot_live);
	ATF_TP_ADD_TC(tp, reserve_default);
	ATF_TP_ADD_TC(tp, need_configured);
	ATF_TP_ADD_TC(tp, need_file);
	ATF_TP_ADD_TC(tp, need_dir);
	ATF_TP_ADD_TC(tp, need_image);
	ATF_TP_ADD_TC(tp, need_hf_cache);
	ATF_TP_ADD_TC(tp, fmt);
	ATF_TP_ADD_TC(tp, need_hf_own_env);
	ATF_TP_ADD_TC(tp, need_hf_fifo_ref);
	ATF_TP_ADD_TC(tp, add_saturates);
	ATF_TP_ADD_TC(tp, need_saturates);
	return (atf_no_error());
}
