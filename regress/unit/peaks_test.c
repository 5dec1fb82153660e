/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * peaks.c: the measured peaks kept across restarts: keys (a new file or
 * argv or context is learned anew), the larger kept, forgotten, bounded;
 * the text strict and round-tripping; the file written atomically in a
 * directory only root or agencyd's user may write, read back after a
 * "restart", a corrupt one ignored.
 */
#include <sys/types.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <atf-c.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "log.h"
#include "peaks.h"
#include "testutil.h"

static struct stat	 file1;

static void
key(struct peak_key *k, const char *model, const char *arg, uint32_t ctx)
{
	char	 a[PATH_MAX];
	char	*argv[] = { "/usr/bin/llama-server", "-m", a, NULL };

	strlcpy(a, arg, sizeof(a));
	ATF_REQUIRE_EQ(peaks_key(k, model, &file1, argv, ctx), 0);
}

static void
setup(void)
{
	log_init(1, LOG_DAEMON);
	memset(&file1, 0, sizeof(file1));
	file1.st_dev = 2049;
	file1.st_ino = 1234567;
	file1.st_size = 240887232;
	file1.st_mtim.tv_sec = 1764750000;
	file1.st_mtim.tv_nsec = 123456789;
}

ATF_TC_WITHOUT_HEAD(keys);
ATF_TC_BODY(keys, tc)
{
	struct peak_key	 a, b;
	struct stat	 st;
	char		*w1[] = { "a", "bc", NULL }, *w2[] = { "ab", "c", NULL };
	char		 big[AGENCY_NAME_MAX + 1];

	setup();
	key(&a, "m", "x.gguf", 4096);
	key(&b, "m", "x.gguf", 4096);
	ATF_CHECK(memcmp(&a, &b, sizeof(a)) == 0);
	ATF_CHECK_EQ(a.mtime_ns, 1764750000123456789LL);
	ATF_CHECK_EQ(a.ino, 1234567);
	key(&b, "m", "y.gguf", 4096);
	ATF_CHECK(memcmp(a.argv, b.argv, sizeof(a.argv)) != 0);
	/* Word bounds count. */
	ATF_REQUIRE_EQ(peaks_key(&a, "m", &file1, w1, 1), 0);
	ATF_REQUIRE_EQ(peaks_key(&b, "m", &file1, w2, 1), 0);
	ATF_CHECK(memcmp(a.argv, b.argv, sizeof(a.argv)) != 0);
	/* A changed file: another key. */
	st = file1;
	st.st_mtim.tv_nsec++;
	ATF_REQUIRE_EQ(peaks_key(&b, "m", &st, w1, 1), 0);
	ATF_CHECK(b.mtime_ns != a.mtime_ns);
	memset(big, 'n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ATF_CHECK_EQ(peaks_key(&a, big, &file1, w1, 1), -1);
}

ATF_TC_WITHOUT_HEAD(put_find_forget);
ATF_TC_BODY(put_find_forget, tc)
{
	struct peaks		 p;
	struct peak_key		 k, k2, other;
	const struct peak_entry	*e;
	struct stat		 st;
	char			*argv[] = { "x", NULL };

	setup();
	peaks_init(&p);
	key(&k, "m", "x.gguf", 4096);
	ATF_CHECK(peaks_find(&p, &k) == NULL);
	ATF_REQUIRE_EQ(peaks_put(&p, &k, 1000, 10), 0);
	ATF_REQUIRE((e = peaks_find(&p, &k)) != NULL);
	ATF_CHECK_EQ(e->peak, 1000);
	/* A smaller peak keeps the larger; a larger replaces it. */
	ATF_REQUIRE_EQ(peaks_put(&p, &k, 900, 11), 0);
	ATF_CHECK_EQ(peaks_find(&p, &k)->peak, 1000);
	ATF_CHECK_EQ(peaks_find(&p, &k)->when, 11);
	ATF_REQUIRE_EQ(peaks_put(&p, &k, 1500, 12), 0);
	ATF_CHECK_EQ(peaks_find(&p, &k)->peak, 1500);
	ATF_CHECK_EQ(p.n, 1);
	/* Another context, another entry; a new file is not known. */
	key(&k2, "m", "x.gguf", 8192);
	ATF_CHECK(peaks_find(&p, &k2) == NULL);
	ATF_REQUIRE_EQ(peaks_put(&p, &k2, 3000, 13), 0);
	st = file1;
	st.st_size++;
	ATF_REQUIRE_EQ(peaks_key(&other, "m", &st, argv, 4096), 0);
	ATF_CHECK(peaks_find(&p, &other) == NULL);
	key(&other, "n", "x.gguf", 4096);
	ATF_REQUIRE_EQ(peaks_put(&p, &other, 5, 14), 0);
	ATF_CHECK_EQ(p.n, 3);
	ATF_CHECK_EQ(peaks_forget(&p, "m"), 2);
	ATF_CHECK_EQ(p.n, 1);
	ATF_CHECK(peaks_find(&p, &k) == NULL);
	ATF_CHECK(peaks_find(&p, &other) != NULL);
	ATF_CHECK_EQ(peaks_forget(&p, "m"), 0);
	peaks_free(&p);
}

/* Bounded: past PEAKS_MAX the oldest goes. */
ATF_TC_WITHOUT_HEAD(bounded);
ATF_TC_BODY(bounded, tc)
{
	struct peaks	 p;
	struct peak_key	 k;
	char		 name[32];
	int		 i;

	setup();
	peaks_init(&p);
	for (i = 0; i < PEAKS_MAX + 10; i++) {
		snprintf(name, sizeof(name), "m%d", i);
		key(&k, name, "x", 1);
		/* m5 is the oldest of all */
		ATF_REQUIRE_EQ(peaks_put(&p, &k, i, i == 5 ? 0 : 100 + i), 0);
	}
	ATF_CHECK_EQ(p.n, PEAKS_MAX);
	key(&k, "m5", "x", 1);
	ATF_CHECK(peaks_find(&p, &k) == NULL);
	key(&k, "m0", "x", 1);
	ATF_CHECK(peaks_find(&p, &k) == NULL);
	key(&k, "m1033", "x", 1);
	ATF_CHECK(peaks_find(&p, &k) != NULL);
	peaks_free(&p);
}

ATF_TC_WITHOUT_HEAD(text);
ATF_TC_BODY(text, tc)
{
	struct peaks	 p, q;
	struct peak_key	 k;
	char		*t, err[256];
	size_t		 len, i;

	setup();
	peaks_init(&p);
	key(&k, "qwen \"7b\"\n\\", "x.gguf", 4096);
	ATF_REQUIRE_EQ(peaks_put(&p, &k, 6442450944LL, 1764750000), 0);
	key(&k, "tiny", "y.gguf", 512);
	ATF_REQUIRE_EQ(peaks_put(&p, &k, 45000000, 1764750001), 0);
	ATF_REQUIRE((t = peaks_format(&p, &len)) != NULL);
	ATF_CHECK_EQ(len, strlen(t));
	ATF_REQUIRE_MSG(peaks_parse(t, len, &q, err, sizeof(err)) == 0, "%s",
	    err);
	ATF_REQUIRE_EQ(q.n, 2);
	for (i = 0; i < 2; i++)
		ATF_CHECK(memcmp(&p.v[i], &q.v[i], sizeof(p.v[i])) == 0);
	free(t);
	peaks_free(&p);
	peaks_free(&q);
}

ATF_TC_WITHOUT_HEAD(text_refused);
ATF_TC_BODY(text_refused, tc)
{
#define E(f)	"{\"model\":\"m\",\"dev\":1,\"ino\":2,\"size\":3,"		\
	"\"mtime_ns\":4,\"argv\":\"" H "\",\"ctx\":5,\"peak\":6," f	\
	"\"when\":7}"
#define H	"00112233445566778899aabbccddeeff"			\
	"00112233445566778899aabbccddeeff"
	static const struct {
		const char	*text;
		const char	*why;
	} cases[] = {
		{ "", "not JSON" },
		{ "{\"version\":1,\"peaks\":[]", "not JSON" },
		{ "[]", "not one JSON object" },
		{ "{\"version\":1,\"peaks\":[]} x", "not one JSON object" },
		{ "{\"version\":2,\"peaks\":[]}", "not version 1" },
		{ "{\"version\":\"1\",\"peaks\":[]}", "not version 1" },
		{ "{\"version\":1}", "no list of peaks" },
		{ "{\"version\":1,\"peaks\":{}}", "no list of peaks" },
		{ "{\"version\":1,\"peaks\":[1]}", "not an object" },
		{ "{\"version\":1,\"peaks\":[{\"model\":\"\"}]}",
		    "without a model name" },
		{ "{\"version\":1,\"peaks\":[{\"model\":\"a\\u0000b\"}]}",
		    "without a model name" },
		{ "{\"version\":1,\"peaks\":[{\"model\":\"m\",\"argv\":\"xy\"}]}",
		    "no argv digest" },
		{ "{\"version\":1,\"peaks\":[{\"model\":\"m\",\"dev\":1,"
		    "\"ino\":2,\"size\":3,\"mtime_ns\":4,\"argv\":\"" H "\","
		    "\"ctx\":5,\"peak\":-6,\"when\":7}]}", "out of range" },
		{ "{\"version\":1,\"peaks\":[{\"model\":\"m\",\"dev\":1,"
		    "\"ino\":2,\"size\":3,\"mtime_ns\":4,\"argv\":\"" H "\","
		    "\"ctx\":4294967296,\"peak\":6,\"when\":7}]}",
		    "out of range" },
		{ "{\"version\":1,\"peaks\":[{\"model\":\"m\",\"dev\":1,"
		    "\"ino\":2,\"size\":3,\"mtime_ns\":4,\"argv\":\"" H "\","
		    "\"ctx\":5,\"peak\":6.5,\"when\":7}]}", "out of range" },
		{ "{\"version\":1,\"peaks\":[" E("") "," E("") "]}",
		    "given twice" },
		{ "{\"version\":1,\"peaks\":[[[[[[[[1]]]]]]]]}", "not JSON" },
	};
	struct peaks	 p;
	char		 err[256], *t;
	size_t		 i, len;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		ATF_CHECK_EQ_MSG(peaks_parse(cases[i].text,
		    strlen(cases[i].text), &p, err, sizeof(err)), -1,
		    "case %zu read", i);
		ATF_CHECK_MATCH_MSG(cases[i].why, err, "case %zu: \"%s\"", i,
		    err);
		ATF_CHECK_EQ(p.n, 0);
		ATF_CHECK(p.v == NULL);
	}
	/* One entry is read; unknown fields are let by. */
	t = "{\"version\":1,\"peaks\":[" E("\"new\":[1],") "],\"x\":1}\n";
	ATF_REQUIRE_MSG(peaks_parse(t, strlen(t), &p, err, sizeof(err)) == 0,
	    "%s", err);
	ATF_CHECK_EQ(p.n, 1);
	ATF_CHECK_EQ(p.v[0].peak, 6);
	ATF_CHECK_EQ(p.v[0].key.ctx, 5);
	peaks_free(&p);
	/* Too many. */
	len = 64 + (PEAKS_MAX + 1) * 4;
	ATF_REQUIRE((t = malloc(len)) != NULL);
	strlcpy(t, "{\"version\":1,\"peaks\":[", len);
	for (i = 0; i <= PEAKS_MAX; i++)
		strlcat(t, i == 0 ? "1" : ",1", len);
	strlcat(t, "]}", len);
	ATF_CHECK_EQ(peaks_parse(t, strlen(t), &p, err, sizeof(err)), -1);
	ATF_CHECK_MATCH("1025 peaks, more than 1024", err);
	free(t);
#undef E
#undef H
}

/* A directory of ours, 0700, under the test's own. */
static const char *
statedir(void)
{
	static char	 dir[PATH_MAX];

	ATF_REQUIRE(getcwd(dir, sizeof(dir) - 8) != NULL);
	strlcat(dir, "/state", sizeof(dir));
	ATF_REQUIRE(mkdir(dir, 0700) == 0);
	return (dir);
}

static int
entries(const char *dir)
{
	DIR		*d;
	struct dirent	*de;
	int		 n = 0;

	ATF_REQUIRE((d = opendir(dir)) != NULL);
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' || strncmp(de->d_name, ".peaks", 6) ==
		    0)
			n++;
	closedir(d);
	return (n);
}

/*
 * The directories above the test's work directory may be anything (a
 * home 0755 of another user, /tmp): the file tests skip when they are
 * not safe, saying so.
 */
static void
need_safe(const char *dir)
{
	struct peaks	 p;
	char		 err[256];

	if (peaks_load(dir, &p, err, sizeof(err)) == -1)
		atf_tc_skip("the work directory is not under safe ones: %s",
		    err);
}

ATF_TC_WITHOUT_HEAD(file);
ATF_TC_BODY(file, tc)
{
	struct peaks	 p, q;
	struct peak_key	 k;
	struct stat	 st;
	char		 err[256], path[PATH_MAX];
	const char	*dir;

	setup();
	dir = statedir();
	need_safe(dir);
	/* No file yet: nothing known. */
	ATF_REQUIRE_MSG(peaks_load(dir, &p, err, sizeof(err)) == 0, "%s", err);
	ATF_CHECK_EQ(p.n, 0);
	key(&k, "m", "x.gguf", 4096);
	ATF_REQUIRE_EQ(peaks_put(&p, &k, 1234567, 99), 0);
	ATF_REQUIRE_MSG(peaks_save(dir, &p, err, sizeof(err)) == 0, "%s", err);
	snprintf(path, sizeof(path), "%s/%s", dir, PEAKS_FILE);
	ATF_REQUIRE(stat(path, &st) == 0);
	ATF_CHECK_EQ(st.st_mode & 07777, 0600);
	ATF_CHECK_EQ(entries(dir), 1);		/* no temporary left */
	/* A restart: read back. */
	ATF_REQUIRE_MSG(peaks_load(dir, &q, err, sizeof(err)) == 0, "%s", err);
	ATF_REQUIRE_EQ(q.n, 1);
	ATF_CHECK_EQ(peaks_find(&q, &k)->peak, 1234567);
	/* Saved again over it. */
	ATF_REQUIRE_EQ(peaks_put(&q, &k, 2000000, 100), 0);
	ATF_REQUIRE_EQ(peaks_save(dir, &q, err, sizeof(err)), 0);
	peaks_free(&q);
	ATF_REQUIRE_EQ(peaks_load(dir, &q, err, sizeof(err)), 0);
	ATF_CHECK_EQ(peaks_find(&q, &k)->peak, 2000000);
	ATF_CHECK_EQ(entries(dir), 1);
	peaks_free(&q);
	peaks_free(&p);
}

/*
 * A save that cannot be written (the disk full: here a file size limit
 * of the text's length, so that the last byte, its newline, fails)
 * fails saying so, leaves the file before it whole, and leaves no
 * temporary file and no descriptor behind.
 */
ATF_TC_WITHOUT_HEAD(save_fails);
ATF_TC_BODY(save_fails, tc)
{
	struct peaks	 p, q;
	struct peak_key	 k, k2;
	struct rlimit	 rl, old;
	char		 err[256], *text;
	const char	*dir;
	size_t		 len;
	int		 before;

	setup();
	dir = statedir();
	need_safe(dir);
	peaks_init(&p);
	key(&k, "m", "x.gguf", 4096);
	ATF_REQUIRE_EQ(peaks_put(&p, &k, 1234567, 99), 0);
	ATF_REQUIRE_MSG(peaks_save(dir, &p, err, sizeof(err)) == 0, "%s", err);
	key(&k2, "n", "y.gguf", 8192);
	ATF_REQUIRE_EQ(peaks_put(&p, &k2, 7654321, 100), 0);
	ATF_REQUIRE((text = peaks_format(&p, &len)) != NULL);
	free(text);

	ATF_REQUIRE(signal(SIGXFSZ, SIG_IGN) != SIG_ERR);
	ATF_REQUIRE(getrlimit(RLIMIT_FSIZE, &old) == 0);
	rl = old;
	rl.rlim_cur = len;
	ATF_REQUIRE(setrlimit(RLIMIT_FSIZE, &rl) == 0);
	before = open_fds();
	err[0] = '\0';
	ATF_CHECK_EQ(peaks_save(dir, &p, err, sizeof(err)), -1);
	ATF_CHECK_EQ_MSG(open_fds(), before, "a descriptor left open");
	ATF_REQUIRE(setrlimit(RLIMIT_FSIZE, &old) == 0);
	ATF_CHECK_MATCH(PEAKS_FILE ": File too large", err);
	ATF_CHECK_EQ(entries(dir), 1);		/* no temporary left */
	ATF_REQUIRE_MSG(peaks_load(dir, &q, err, sizeof(err)) == 0, "%s", err);
	ATF_REQUIRE_EQ(q.n, 1);
	ATF_CHECK_EQ(peaks_find(&q, &k)->peak, 1234567);
	ATF_CHECK(peaks_find(&q, &k2) == NULL);
	peaks_free(&q);
	peaks_free(&p);
}

static void
put(const char *path, const char *text, size_t len)
{
	int	 fd;

	ATF_REQUIRE((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) !=
	    -1);
	ATF_REQUIRE(write(fd, text, len) == (ssize_t)len);
	close(fd);
}

/* A file that does not read is ignored: the peaks are learned again. */
ATF_TC_WITHOUT_HEAD(file_corrupt);
ATF_TC_BODY(file_corrupt, tc)
{
	struct peaks	 p;
	struct peak_key	 k;
	struct stat	 st;
	char		 err[256], path[PATH_MAX], other[PATH_MAX], *big;
	const char	*dir;

	setup();
	dir = statedir();
	need_safe(dir);
	snprintf(path, sizeof(path), "%s/%s", dir, PEAKS_FILE);
	put(path, "{\"version\":1,\"peaks\":[{\"model\":", 31);
	ATF_REQUIRE_EQ(peaks_load(dir, &p, err, sizeof(err)), 0);
	ATF_CHECK_EQ(p.n, 0);
	/* Too large. */
	ATF_REQUIRE((big = calloc(1, PEAKS_FILE_MAX + 1)) != NULL);
	memset(big, ' ', PEAKS_FILE_MAX + 1);
	put(path, big, PEAKS_FILE_MAX + 1);
	free(big);
	ATF_REQUIRE_EQ(peaks_load(dir, &p, err, sizeof(err)), 0);
	ATF_CHECK_EQ(p.n, 0);
	/* A link in its place, to a file that reads, is not followed (and
	 * is replaced). */
	key(&k, "m", "x", 1);
	ATF_REQUIRE_EQ(peaks_put(&p, &k, 5, 6), 0);
	ATF_REQUIRE(mkdir("elsewhere", 0700) == 0);
	ATF_REQUIRE_MSG(peaks_save("elsewhere", &p, err, sizeof(err)) == 0,
	    "%s", err);
	peaks_free(&p);
	ATF_REQUIRE(unlink(path) == 0);
	ATF_REQUIRE(realpath("elsewhere/" PEAKS_FILE, other) != NULL);
	ATF_REQUIRE(symlink(other, path) == 0);
	ATF_REQUIRE_EQ(peaks_load(dir, &p, err, sizeof(err)), 0);
	ATF_CHECK_EQ(p.n, 0);
	ATF_REQUIRE_EQ(peaks_put(&p, &k, 5, 6), 0);
	ATF_REQUIRE_MSG(peaks_save(dir, &p, err, sizeof(err)) == 0, "%s", err);
	peaks_free(&p);
	ATF_REQUIRE_EQ(peaks_load(dir, &p, err, sizeof(err)), 0);
	ATF_CHECK_EQ(p.n, 1);
	ATF_REQUIRE(lstat(path, &st) == 0);
	ATF_CHECK(S_ISREG(st.st_mode));
	peaks_free(&p);
}

/* Directories others may write, or that are not root's or ours. */
ATF_TC_WITHOUT_HEAD(dir_unsafe);
ATF_TC_BODY(dir_unsafe, tc)
{
	struct peaks	 p;
	struct passwd	*pw;
	char		 err[256], sub[PATH_MAX], link[PATH_MAX];
	const char	*dir;

	setup();
	dir = statedir();
	need_safe(dir);
	peaks_init(&p);
	ATF_REQUIRE(chmod(dir, 0777) == 0);
	ATF_CHECK_EQ(peaks_load(dir, &p, err, sizeof(err)), -1);
	ATF_CHECK_MATCH("may be written by others \\(mode 0777\\)", err);
	ATF_CHECK_EQ(peaks_save(dir, &p, err, sizeof(err)), -1);
	ATF_CHECK_EQ(entries(dir), 0);
	/* Sticky on the way is fine, not as the last. */
	ATF_REQUIRE(chmod(dir, 01777) == 0);
	ATF_CHECK_EQ(peaks_save(dir, &p, err, sizeof(err)), -1);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	ATF_REQUIRE(mkdir(sub, 0755) == 0);
	ATF_CHECK_MSG(peaks_save(sub, &p, err, sizeof(err)) == 0, "%s", err);
	ATF_REQUIRE(chmod(dir, 0775) == 0);
	ATF_CHECK_EQ(peaks_save(sub, &p, err, sizeof(err)), -1);
	ATF_REQUIRE(chmod(dir, 0755) == 0);
	ATF_CHECK_EQ(peaks_save(sub, &p, err, sizeof(err)), 0);
	/* Through a link: the directory it names is what counts. */
	snprintf(link, sizeof(link), "%s/link", dir);
	ATF_REQUIRE(symlink(sub, link) == 0);
	ATF_CHECK_MSG(peaks_load(link, &p, err, sizeof(err)) == 0, "%s", err);
	ATF_REQUIRE(chmod(sub, 0757) == 0);
	ATF_CHECK_EQ(peaks_load(link, &p, err, sizeof(err)), -1);
	ATF_REQUIRE(chmod(sub, 0755) == 0);
	/* Another user's. */
	if (geteuid() == 0 && (pw = getpwnam("nobody")) != NULL) {
		ATF_REQUIRE(chown(sub, pw->pw_uid, pw->pw_gid) == 0);
		ATF_CHECK_EQ(peaks_load(sub, &p, err, sizeof(err)), -1);
		ATF_CHECK_MATCH("belongs to uid", err);
	}
	ATF_CHECK_EQ(peaks_load("/nonexistent/state", &p, err, sizeof(err)),
	    -1);
	peaks_free(&p);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, keys);
	ATF_TP_ADD_TC(tp, put_find_forget);
	ATF_TP_ADD_TC(tp, bounded);
	ATF_TP_ADD_TC(tp, text);
	ATF_TP_ADD_TC(tp, text_refused);
	ATF_TP_ADD_TC(tp, file);
	ATF_TP_ADD_TC(tp, file_corrupt);
	ATF_TP_ADD_TC(tp, save_fails);
	ATF_TP_ADD_TC(tp, dir_unsafe);
	return (atf_no_error());
}
