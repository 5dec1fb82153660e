/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agency-ctl's output (agency-ctl/show.c): the status table with what
 * an operator asked for (lazy models, aliases, when an idle model stops,
 * the memory against the budget), one model's status, and the JSON.
 * The clock and the width are passed in, so the text is exact.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <errno.h>
#include <json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"

#define NOW	1700000000000LL		/* ms since the epoch */
#define GIB	(1024LL * 1024 * 1024)

static struct proto_status
model(const char *name, int state, int lazy, int64_t need)
{
	struct proto_status	st;

	memset(&st, 0, sizeof(st));
	(void)strlcpy(st.model, name, sizeof(st.model));
	(void)strlcpy(st.runtime, "llama", sizeof(st.runtime));
	st.state = state;
	st.lazy = lazy;
	st.need = need;
	st.need_from = NEED_CONFIGURED;
	st.last_used = -1;
	st.loaded_at = -1;
	st.oldest_wait = -1;
	st.idle_stop_at = -1;
	st.restart_at = -1;
	return (st);
}

static void
alias(struct ctl_status *s, const char *m, const char *a)
{
	struct proto_alias	al;

	memset(&al, 0, sizeof(al));
	(void)strlcpy(al.model, m, sizeof(al.model));
	(void)strlcpy(al.alias, a, sizeof(al.alias));
	ATF_REQUIRE(status_add_alias(s, &al) == 0);
}

/* What f printed, in a buffer the test frees. */
static char *
output(void (*f)(FILE *, const struct ctl_status *, int64_t, size_t),
    const struct ctl_status *s, size_t width)
{
	char	*buf = NULL;
	size_t	 len = 0;
	FILE	*fp;

	ATF_REQUIRE((fp = open_memstream(&buf, &len)) != NULL);
	f(fp, s, NOW, width);
	ATF_REQUIRE(fclose(fp) == 0);
	return (buf);
}

/* Two lazy models and one loaded at start, as a budget holds them. */
static void
scene(struct ctl_status *s)
{
	struct proto_status	st;
	struct proto_memory	pm;

	memset(s, 0, sizeof(*s));
	st = model("qwen", STATE_READY, 1, 6 * GIB);
	st.pid = 2211;
	st.port = 5800;
	st.last_used = NOW - 60 * 1000;
	st.loaded_at = NOW - 3600 * 1000;
	st.idle_timeout = 15 * 60 * 1000;
	st.idle_stop_at = st.last_used + st.idle_timeout;
	st.fairness = 12 * 1000;
	st.requests = 12;
	st.loads = 2;
	st.nload_ms = 2;
	st.load_ms[0] = 1200;
	st.load_ms[1] = 900;
	ATF_REQUIRE(status_add(s, &st) == 0);
	alias(s, "qwen", "q");
	alias(s, "qwen", "big");
	st = model("llama", STATE_STOPPED, 1, 7 * GIB + GIB / 2);
	st.idle_timeout = 15 * 60 * 1000;
	ATF_REQUIRE(status_add(s, &st) == 0);
	st = model("embed", STATE_READY, 0, 2 * GIB);
	st.pid = 2300;
	st.port = 5801;
	st.last_used = NOW - 5000;
	ATF_REQUIRE(status_add(s, &st) == 0);
	memset(&pm, 0, sizeof(pm));
	pm.in_use = 8 * GIB;
	pm.budget = 20 * GIB;
	pm.available = 30 * GIB;
	pm.total = 64 * GIB;
	pm.reserve = 2 * GIB;
	ATF_REQUIRE(status_set_memory(s, &pm) == 0);
}

ATF_TC_WITHOUT_HEAD(span);
ATF_TC_BODY(span, tc)
{
	char	buf[32];

	fmt_span(buf, sizeof(buf), 0);
	ATF_CHECK_STREQ(buf, "0s");
	fmt_span(buf, sizeof(buf), 45 * 1000 + 999);
	ATF_CHECK_STREQ(buf, "45s");
	fmt_span(buf, sizeof(buf), 15 * 60 * 1000);
	ATF_CHECK_STREQ(buf, "15m");
	fmt_span(buf, sizeof(buf), 90 * 1000);
	ATF_CHECK_STREQ(buf, "1m30s");
	fmt_span(buf, sizeof(buf), (2 * 3600 + 5 * 60 + 7) * 1000LL);
	ATF_CHECK_STREQ(buf, "2h5m");
	fmt_span(buf, sizeof(buf), 3 * 86400 * 1000LL);
	ATF_CHECK_STREQ(buf, "3d");
	fmt_span(buf, sizeof(buf), -5);
	ATF_CHECK_STREQ(buf, "0s");
}

ATF_TC_WITHOUT_HEAD(idle_stop);
ATF_TC_BODY(idle_stop, tc)
{
	struct proto_status	st = model("m", STATE_READY, 1, GIB);
	char			buf[32];

	fmt_idle_stop(buf, sizeof(buf), NOW, &st);
	ATF_CHECK_STREQ(buf, "-");
	st.idle_stop_at = NOW + 14 * 60 * 1000 + 30 * 1000;
	fmt_idle_stop(buf, sizeof(buf), NOW, &st);
	ATF_CHECK_STREQ(buf, "in 14m30s");
	/* due (its timer fires now, or a turn of the loop later) */
	st.idle_stop_at = NOW;
	fmt_idle_stop(buf, sizeof(buf), NOW, &st);
	ATF_CHECK_STREQ(buf, "now");
	st.idle_stop_at = NOW - 1000;
	fmt_idle_stop(buf, sizeof(buf), NOW, &st);
	ATF_CHECK_STREQ(buf, "now");
}

ATF_TC_WITHOUT_HEAD(memory_line);
ATF_TC_BODY(memory_line, tc)
{
	struct proto_memory	pm;
	char			buf[256];

	memset(&pm, 0, sizeof(pm));
	pm.in_use = 13 * GIB + GIB / 2;
	pm.budget = 24 * GIB;
	pm.available = 30 * GIB;
	pm.total = 64 * GIB;
	pm.reserve = 2 * GIB;
	fmt_memory(buf, sizeof(buf), &pm);
	ATF_CHECK_STREQ(buf, "memory: 14G in use, budget 24G (10G left); "
	    "30G available, 2.0G reserved");
	pm.budget = 0;
	fmt_memory(buf, sizeof(buf), &pm);
	ATF_CHECK_STREQ(buf, "memory: 14G in use, no budget; 30G available, "
	    "2.0G reserved");
	/* overcommitted: more in use than the budget */
	pm.budget = 8 * GIB;
	fmt_memory(buf, sizeof(buf), &pm);
	ATF_CHECK_STREQ(buf, "memory: 14G in use, budget 8.0G (5.5G over); "
	    "30G available, 2.0G reserved");
	/* nothing loaded, nothing measured */
	pm.in_use = 0;
	pm.budget = 8 * GIB;
	pm.available = pm.total = pm.reserve = -1;
	fmt_memory(buf, sizeof(buf), &pm);
	ATF_CHECK_STREQ(buf, "memory: 0 in use, budget 8.0G (8.0G left); "
	    "available memory unknown");
}

ATF_TC_WITHOUT_HEAD(table);
ATF_TC_BODY(table, tc)
{
	struct ctl_status	 s;
	char			*out;

	scene(&s);
	out = output(show_status, &s, 80);
	ATF_CHECK_STREQ(out,
"MODEL  STATE    LAZY  REQS  QUEUED  LAST USED  IDLE STOP  PID   PORT  NEED\n"
"qwen   ready    yes   0     -       1m ago     in 14m     2211  5800  6.0G\n"
"    aliases: q, big\n"
"llama  stopped  yes   0     -       never      -          -     -     7.5G\n"
"embed  ready    no    0     -       5s ago     -          2300  5801  2.0G\n"
"memory: 8.0G in use, budget 20G (12G left); 30G available, 2.0G reserved\n");
	free(out);
	status_clear(&s);
}

ATF_TC_WITHOUT_HEAD(one_model);
ATF_TC_BODY(one_model, tc)
{
	struct ctl_status	 s;
	struct proto_status	 st;
	char			*out;

	scene(&s);
	/* "status qwen": the first model of the scene alone */
	s.n = 1;
	out = output(show_model, &s, 80);
	ATF_CHECK_STREQ(out,
	    "model:      qwen\n"
	    "aliases:    q, big\n"
	    "runtime:    llama\n"
	    "state:      ready\n"
	    "lazy:       yes, idle timeout 15m: stops in 14m unless used\n"
	    "fairness:   window 12s: keeps memory a waiting load needs at "
	    "most so long\n"
	    "requests:   0 in progress, 12 in all\n"
	    "last used:  1m ago\n"
	    "loaded:     1h ago (loads 2, failed 0, restarts 0, evictions 0)\n"
	    "process:    pid 2211, port 5800\n"
	    "need:       6.0G (configured)\n"
	    "memory: 8.0G in use, budget 20G (12G left); 30G available, "
	    "2.0G reserved\n");
	free(out);
	status_clear(&s);

	/* loaded at start, failed, waited for */
	memset(&s, 0, sizeof(s));
	st = model("embed", STATE_FAILED, 0, 2 * GIB);
	st.need_from = NEED_FILE;
	st.queued = 2;
	st.waiting = WAIT_TURN;
	st.oldest_wait = 12 * 1000;
	(void)strlcpy(st.error, "model embed exited with 1", sizeof(st.error));
	ATF_REQUIRE(status_add(&s, &st) == 0);
	out = output(show_model, &s, 80);
	ATF_CHECK_STREQ(out,
	    "model:      embed\n"
	    "runtime:    llama\n"
	    "state:      failed\n"
	    "lazy:       no: loaded at start, never stopped to make room\n"
	    "requests:   0 in progress, 0 in all\n"
	    "queued:     2 waiting for turn, the oldest for 12s\n"
	    "last used:  never\n"
	    "loaded:     never (loads 0, failed 0, restarts 0, evictions 0)\n"
	    "need:       2.0G (file)\n"
	    "error:      model embed exited with 1\n");
	free(out);
	status_clear(&s);
}

ATF_TC_WITHOUT_HEAD(json);
ATF_TC_BODY(json, tc)
{
	struct ctl_status	 s;
	json_object		*top, *models, *m, *v, *mem;
	char			*buf = NULL;
	size_t			 len = 0;
	FILE			*fp;

	scene(&s);
	ATF_REQUIRE((fp = open_memstream(&buf, &len)) != NULL);
	ATF_REQUIRE(show_status_json(fp, &s) == 0);
	ATF_REQUIRE(fclose(fp) == 0);
	ATF_REQUIRE((top = json_tokener_parse(buf)) != NULL);
	ATF_REQUIRE(json_object_object_get_ex(top, "models", &models));
	ATF_REQUIRE_EQ(json_object_array_length(models), 3);

	m = json_object_array_get_idx(models, 0);
	ATF_REQUIRE(json_object_object_get_ex(m, "aliases", &v));
	ATF_CHECK_STREQ(json_object_to_json_string_ext(v,
	    JSON_C_TO_STRING_PLAIN), "[\"q\",\"big\"]");
	ATF_REQUIRE(json_object_object_get_ex(m, "lazy", &v));
	ATF_CHECK(json_object_get_boolean(v));
	ATF_REQUIRE(json_object_object_get_ex(m, "idleTimeoutMs", &v));
	ATF_CHECK_EQ(json_object_get_int64(v), 15 * 60 * 1000);
	ATF_REQUIRE(json_object_object_get_ex(m, "idleStopAt", &v));
	ATF_CHECK_EQ(json_object_get_int64(v), NOW + 14 * 60 * 1000);
	ATF_REQUIRE(json_object_object_get_ex(m, "fairnessWindowMs", &v));
	ATF_CHECK_EQ(json_object_get_int64(v), 12 * 1000);
	/* the events stream's fields too (status_json, one record) */
	ATF_REQUIRE(json_object_object_get_ex(m, "loadHistory", &v));
	ATF_CHECK_STREQ(json_object_to_json_string_ext(v,
	    JSON_C_TO_STRING_PLAIN), "[1200,900]");
	ATF_REQUIRE(json_object_object_get_ex(m, "restartAt", &v));
	ATF_CHECK(v == NULL);

	/* lazy, stopped: a timeout that is not counting */
	m = json_object_array_get_idx(models, 1);
	ATF_REQUIRE(json_object_object_get_ex(m, "idleStopAt", &v));
	ATF_CHECK(v == NULL);
	ATF_REQUIRE(json_object_object_get_ex(m, "aliases", &v));
	ATF_CHECK_EQ(json_object_array_length(v), 0);
	ATF_REQUIRE(json_object_object_get_ex(m, "loadHistory", &v));
	ATF_CHECK_EQ(json_object_array_length(v), 0);
	/* loaded at start: no timeout */
	m = json_object_array_get_idx(models, 2);
	ATF_REQUIRE(json_object_object_get_ex(m, "lazy", &v));
	ATF_CHECK(!json_object_get_boolean(v));
	ATF_REQUIRE(json_object_object_get_ex(m, "idleTimeoutMs", &v));
	ATF_CHECK(v == NULL);
	ATF_REQUIRE(json_object_object_get_ex(m, "fairnessWindowMs", &v));
	ATF_CHECK(v == NULL);

	ATF_REQUIRE(json_object_object_get_ex(top, "memory", &mem));
	ATF_REQUIRE(json_object_object_get_ex(mem, "inUse", &v));
	ATF_CHECK_EQ(json_object_get_int64(v), 8 * GIB);
	ATF_REQUIRE(json_object_object_get_ex(mem, "budget", &v));
	ATF_CHECK_EQ(json_object_get_int64(v), 20 * GIB);
	ATF_REQUIRE(json_object_object_get_ex(mem, "available", &v));
	ATF_CHECK_EQ(json_object_get_int64(v), 30 * GIB);
	ATF_REQUIRE(json_object_object_get_ex(mem, "reserve", &v));
	ATF_CHECK_EQ(json_object_get_int64(v), 2 * GIB);
	json_object_put(top);
	free(buf);
	status_clear(&s);
}

ATF_TC_WITHOUT_HEAD(aliases_checked);
ATF_TC_BODY(aliases_checked, tc)
{
	struct ctl_status	 s;
	struct proto_status	 st = model("a", STATE_STOPPED, 1, GIB);
	struct proto_alias	 al;
	struct proto_memory	 pm;

	memset(&s, 0, sizeof(s));
	memset(&al, 0, sizeof(al));
	(void)strlcpy(al.model, "a", sizeof(al.model));
	(void)strlcpy(al.alias, "x", sizeof(al.alias));
	/* before any model */
	errno = 0;
	ATF_CHECK(status_add_alias(&s, &al) == -1 && errno == EBADMSG);
	ATF_REQUIRE(status_add(&s, &st) == 0);
	ATF_CHECK(status_add_alias(&s, &al) == 0);
	/* of another model than the last */
	(void)strlcpy(al.model, "b", sizeof(al.model));
	ATF_CHECK(status_add_alias(&s, &al) == -1 && errno == EBADMSG);
	/* empty (one not ended inside its array is proto.c's to refuse:
	 * proto_test's strings_bounded) */
	(void)strlcpy(al.model, "a", sizeof(al.model));
	al.alias[0] = '\0';
	ATF_CHECK(status_add_alias(&s, &al) == -1 && errno == EBADMSG);
	ATF_CHECK_EQ(s.naliases, 1);

	/* memory: once, and no negative sizes */
	memset(&pm, 0, sizeof(pm));
	pm.in_use = -1;
	ATF_CHECK(status_set_memory(&s, &pm) == -1);
	pm.in_use = 0;
	pm.available = pm.total = pm.reserve = -1;
	ATF_CHECK(status_set_memory(&s, &pm) == 0);
	ATF_CHECK(status_set_memory(&s, &pm) == -1);
	/* a status whose idle fields make no sense is refused */
	st.idle_stop_at = -2;
	ATF_CHECK(!status_valid(&st));
	st.idle_stop_at = -1;
	st.idle_timeout = -1;
	ATF_CHECK(!status_valid(&st));
	status_clear(&s);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, span);
	ATF_TP_ADD_TC(tp, idle_stop);
	ATF_TP_ADD_TC(tp, memory_line);
	ATF_TP_ADD_TC(tp, table);
	ATF_TP_ADD_TC(tp, one_model);
	ATF_TP_ADD_TC(tp, json);
	ATF_TP_ADD_TC(tp, aliases_checked);
	return (atf_no_error());
}
