/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The fan-out of server-sent events (sse.c) with fake subscribers: the
 * exact bytes each one gets, ids, resume from the backlog or a snapshot,
 * the backlog's bounds, and the drop of a subscriber that falls behind.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sse.h"

struct fsub {
	char		 out[16384];
	size_t		 len;
	size_t		 queued;	/* what the fake connection holds */
	int		 stalled;	/* it sends nothing: writes queue */
	int		 fail;		/* writes fail */
	int		 drops;
};

static int
f_write(void *arg, const void *p, size_t len)
{
	struct fsub	*f = arg;

	if (f->fail)
		return (-1);
	ATF_REQUIRE(f->len + len < sizeof(f->out));
	memcpy(f->out + f->len, p, len);
	f->len += len;
	f->out[f->len] = '\0';
	if (f->stalled)
		f->queued += len;
	return (0);
}

static size_t
f_queued(void *arg)
{
	return (((struct fsub *)arg)->queued);
}

static void
f_drop(void *arg)
{
	((struct fsub *)arg)->drops++;
}

static const struct sse_ops	 fops = { f_write, f_queued, f_drop };

static struct sse_hub *
hub(uint32_t stream, size_t events, size_t bytes, size_t queued,
    size_t subs)
{
	struct sse_limits	 lim = { events, bytes, queued, subs };
	struct sse_hub		*h;

	ATF_REQUIRE((h = sse_hub_new(&fops, stream, &lim)) != NULL);
	return (h);
}

static void
reset(struct fsub *f)
{
	f->len = 0;
	f->out[0] = '\0';
}

ATF_TC_WITHOUT_HEAD(format);
ATF_TC_BODY(format, tc)
{
	char	 buf[128];

	ATF_CHECK_EQ(sse_format(buf, sizeof(buf), "abc.1", "state",
	    "{\"a\":1}"), 38);
	ATF_CHECK_STREQ(buf, "id: abc.1\nevent: state\ndata: {\"a\":1}\n\n");
	ATF_CHECK_EQ(sse_format(buf, sizeof(buf), NULL, "line", "{}"), 22);
	ATF_CHECK_STREQ(buf, "event: line\ndata: {}\n\n");
	/* a line break anywhere would end the event early */
	ATF_CHECK_EQ(sse_format(buf, sizeof(buf), NULL, "a", "{}\n"), -1);
	ATF_CHECK_EQ(sse_format(buf, sizeof(buf), NULL, "a", "x\ry"), -1);
	ATF_CHECK_EQ(sse_format(buf, sizeof(buf), NULL, "a\n", "{}"), -1);
	ATF_CHECK_EQ(sse_format(buf, sizeof(buf), "1\n", "a", "{}"), -1);
	ATF_CHECK_EQ(sse_format(buf, sizeof(buf), NULL, "", "{}"), -1);
	/* too long for the buffer */
	ATF_CHECK_EQ(sse_format(buf, 20, NULL, "line", "{}"), -1);
}

ATF_TC_WITHOUT_HEAD(ids);
ATF_TC_BODY(ids, tc)
{
	static const char	*bad[] = { "", ".", "1.", "x", "-1", "1 ",
	    "0000000g.1", "00000000.1", "1234567.1", "12345678.", "12345678.x",
	    "12345678.-1", "12345678.1.2", "ABCDEF01.1", "12345678..1",
	    "99999999999999999999", "12345678.12345678901234567890" };
	char			 id[32];
	uint32_t		 stream;
	uint64_t		 seq;
	size_t			 i;

	sse_id(id, sizeof(id), 0x5c0f93e1, 41);
	ATF_CHECK_STREQ(id, "5c0f93e1.41");
	ATF_CHECK_EQ(sse_parse_id(id, &stream, &seq), 0);
	ATF_CHECK_EQ(stream, 0x5c0f93e1);
	ATF_CHECK_EQ(seq, 41);
	sse_id(id, sizeof(id), 1, 18446744073709551615ULL);
	ATF_CHECK_STREQ(id, "00000001.18446744073709551615");
	sse_id(id, sizeof(id), 0, 7);
	ATF_CHECK_STREQ(id, "7");
	ATF_CHECK_EQ(sse_parse_id(id, &stream, &seq), 0);
	ATF_CHECK_EQ(stream, 0);
	ATF_CHECK_EQ(seq, 7);
	ATF_CHECK_EQ(sse_parse_id("0", &stream, &seq), 0);
	ATF_CHECK_EQ(seq, 0);
	ATF_CHECK_EQ(sse_parse_id(NULL, &stream, &seq), -1);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ATF_CHECK_MSG(sse_parse_id(bad[i], &stream, &seq) == -1,
		    "'%s' was taken", bad[i]);
}

/* Every subscriber gets the same bytes; a new one its snapshot first. */
ATF_TC_WITHOUT_HEAD(fan_out);
ATF_TC_BODY(fan_out, tc)
{
	struct sse_hub		*h = hub(0xabcdef01, 16, 4096, 4096, 8);
	struct fsub		 a = { 0 }, b = { 0 };
	struct sse_stats	 st;

	ATF_REQUIRE(sse_subscribe(h, &a, NULL, "snapshot", "{\"s\":0}") !=
	    NULL);
	ATF_CHECK_STREQ(a.out, "retry: 2000\n\nid: abcdef01.0\n"
	    "event: snapshot\ndata: {\"s\":0}\n\n");
	reset(&a);
	ATF_CHECK_EQ(sse_publish(h, "state", "{\"n\":1}"), 1);
	ATF_CHECK_EQ(sse_publish(h, "queue", "{\"n\":2}"), 2);
	ATF_CHECK_STREQ(a.out, "id: abcdef01.1\nevent: state\n"
	    "data: {\"n\":1}\n\nid: abcdef01.2\nevent: queue\n"
	    "data: {\"n\":2}\n\n");
	ATF_REQUIRE(sse_subscribe(h, &b, NULL, "snapshot", "{\"s\":2}") !=
	    NULL);
	ATF_CHECK_STREQ(b.out, "retry: 2000\n\nid: abcdef01.2\n"
	    "event: snapshot\ndata: {\"s\":2}\n\n");
	reset(&a);
	reset(&b);
	sse_ping(h);
	ATF_CHECK_EQ(sse_publish(h, "cancel", "{}"), 3);
	ATF_CHECK_STREQ(a.out, ": ping\n\nid: abcdef01.3\nevent: cancel\n"
	    "data: {}\n\n");
	ATF_CHECK_STREQ(b.out, a.out);
	/* what cannot be framed is not published, nor numbered */
	ATF_CHECK_EQ(sse_publish(h, "x", "a\nb"), 0);
	ATF_CHECK_EQ(sse_last(h), 3);
	sse_stats(h, &st);
	ATF_CHECK_EQ(st.subs, 2);
	ATF_CHECK_EQ(st.published, 3);
	ATF_CHECK_EQ(st.snapshots, 2);
	ATF_CHECK_EQ(st.backlog_events, 3);
	sse_hub_free(h);
	ATF_CHECK_EQ(a.drops, 1);
	ATF_CHECK_EQ(b.drops, 1);
}

/* Last-Event-ID: the events after it when the backlog covers it. */
ATF_TC_WITHOUT_HEAD(resume);
ATF_TC_BODY(resume, tc)
{
	struct sse_hub	*h = hub(0x11111111, 3, 4096, 4096, 8);
	struct fsub	 f = { 0 };
	struct sse_sub	*s;
	uint64_t	 after;
	int		 i;

	for (i = 1; i <= 5; i++)
		ATF_REQUIRE(sse_publish(h, "e", "{}") == (uint64_t)i);
	/* the backlog holds 3, 4 and 5 */
	ATF_CHECK(sse_resumable(h, "11111111.2", &after) && after == 2);
	ATF_CHECK(sse_resumable(h, "11111111.4", &after) && after == 4);
	ATF_CHECK(sse_resumable(h, "11111111.5", &after) && after == 5);
	ATF_CHECK(!sse_resumable(h, "11111111.1", &after));	/* gone */
	ATF_CHECK(!sse_resumable(h, "11111111.6", &after));	/* future */
	ATF_CHECK(!sse_resumable(h, "22222222.4", &after));	/* restarted */
	ATF_CHECK(!sse_resumable(h, "4", &after));
	ATF_CHECK(!sse_resumable(h, "junk", &after));
	ATF_CHECK(!sse_resumable(h, NULL, &after));

	ATF_REQUIRE((s = sse_subscribe(h, &f, "11111111.3", "snapshot",
	    "{}")) != NULL);
	ATF_CHECK_STREQ(f.out, "retry: 2000\n\nid: 11111111.4\nevent: e\n"
	    "data: {}\n\nid: 11111111.5\nevent: e\ndata: {}\n\n");
	sse_unsubscribe(h, s);
	reset(&f);
	ATF_REQUIRE((s = sse_subscribe(h, &f, "11111111.5", "snapshot",
	    "{}")) != NULL);
	ATF_CHECK_STREQ(f.out, "retry: 2000\n\n");
	sse_unsubscribe(h, s);
	reset(&f);
	ATF_REQUIRE((s = sse_subscribe(h, &f, "11111111.1", "snapshot",
	    "{\"all\":1}")) != NULL);
	ATF_CHECK_STREQ(f.out, "retry: 2000\n\nid: 11111111.5\n"
	    "event: snapshot\ndata: {\"all\":1}\n\n");
	sse_unsubscribe(h, s);
	/* unsubscribed: no more writes, and no drop */
	reset(&f);
	ATF_CHECK_EQ(sse_publish(h, "e", "{}"), 6);
	ATF_CHECK_EQ(f.len, 0);
	sse_hub_free(h);
	ATF_CHECK_EQ(f.drops, 0);
}

/* The backlog is bounded in bytes too; an event over it empties it. */
ATF_TC_WITHOUT_HEAD(backlog_bytes);
ATF_TC_BODY(backlog_bytes, tc)
{
	struct sse_hub		*h = hub(0x22222222, 100, 200, 4096, 8);
	struct sse_stats	 st;
	char			 big[300];
	uint64_t		 after;
	int			 i;

	/* each event is 41 bytes: "id: 22222222.N\nevent: e\ndata: {}\n\n" */
	for (i = 1; i <= 9; i++)
		ATF_REQUIRE(sse_publish(h, "e", "{\"x\":0}") != 0);
	sse_stats(h, &st);
	ATF_CHECK(st.backlog_bytes <= 200);
	ATF_CHECK_EQ(st.backlog_events, 200 / (st.backlog_bytes /
	    st.backlog_events));
	ATF_CHECK(!sse_resumable(h, "22222222.3", &after));
	ATF_CHECK(sse_resumable(h, "22222222.8", &after));
	memset(big, 'a', sizeof(big) - 1);
	big[0] = '"';
	big[sizeof(big) - 2] = '"';
	big[sizeof(big) - 1] = '\0';
	ATF_CHECK_EQ(sse_publish(h, "e", big), 10);
	sse_stats(h, &st);
	ATF_CHECK_EQ(st.backlog_events, 0);
	ATF_CHECK_EQ(st.backlog_bytes, 0);
	/* the last one can still be resumed from: nothing follows it */
	ATF_CHECK(sse_resumable(h, "22222222.10", &after) && after == 10);
	ATF_CHECK(!sse_resumable(h, "22222222.9", &after));
	sse_hub_free(h);
}

/*
 * A subscriber that does not read is dropped when an event would take
 * its queue over the bound; the others go on.
 */
ATF_TC_WITHOUT_HEAD(slow_dropped);
ATF_TC_BODY(slow_dropped, tc)
{
	struct sse_hub		*h = hub(0x33333333, 16, 4096, 100, 8);
	struct fsub		 fast = { 0 }, slow = { 0 };
	struct sse_stats	 st;
	size_t			 held;
	int			 i;

	ATF_REQUIRE(sse_subscribe(h, &fast, NULL, NULL, NULL) != NULL);
	ATF_REQUIRE(sse_subscribe(h, &slow, NULL, NULL, NULL) != NULL);
	slow.stalled = 1;
	for (i = 0; i < 10 && slow.drops == 0; i++)
		(void)sse_publish(h, "e", "{\"pad\":\"xxxxxxxxxx\"}");
	ATF_CHECK_EQ(slow.drops, 1);
	ATF_CHECK(slow.queued <= 100);
	held = slow.len;
	for (i = 0; i < 5; i++)
		(void)sse_publish(h, "e", "{}");
	ATF_CHECK_EQ(slow.len, held);		/* nothing more for it */
	ATF_CHECK_EQ(slow.drops, 1);
	ATF_CHECK_EQ(fast.drops, 0);
	ATF_CHECK(strstr(fast.out, "33333333.") != NULL);
	sse_stats(h, &st);
	ATF_CHECK_EQ(st.subs, 1);
	ATF_CHECK_EQ(st.dropped, 1);
	/* a ping counts against the bound too */
	fast.stalled = 1;
	fast.queued = 95;
	sse_ping(h);
	ATF_CHECK_EQ(fast.drops, 1);
	/* a write that fails drops it as well */
	ATF_REQUIRE(sse_subscribe(h, &slow, NULL, NULL, NULL) != NULL);
	slow.queued = 0;
	slow.stalled = 0;
	slow.fail = 1;
	(void)sse_publish(h, "e", "{}");
	ATF_CHECK_EQ(slow.drops, 2);
	sse_stats(h, &st);
	ATF_CHECK_EQ(st.subs, 0);
	ATF_CHECK_EQ(st.dropped, 3);
	sse_hub_free(h);
}

/* The cap on subscribers, a first write that fails, a bare-id hub. */
ATF_TC_WITHOUT_HEAD(limits);
ATF_TC_BODY(limits, tc)
{
	struct sse_hub	*h = hub(0x44444444, 16, 4096, 4096, 2);
	struct fsub	 f[3];
	struct sse_hub	*lines;

	memset(f, 0, sizeof(f));
	ATF_CHECK(sse_subscribe(h, &f[0], NULL, NULL, NULL) != NULL);
	ATF_CHECK(sse_subscribe(h, &f[1], NULL, NULL, NULL) != NULL);
	ATF_CHECK(sse_subscribe(h, &f[2], NULL, NULL, NULL) == NULL);
	ATF_CHECK_EQ(f[2].len, 0);
	sse_hub_free(h);

	h = hub(0x44444444, 16, 4096, 4096, 2);
	f[0].fail = 1;
	f[0].drops = 0;
	ATF_CHECK(sse_subscribe(h, &f[0], NULL, "snapshot", "{}") == NULL);
	ATF_CHECK_EQ(f[0].drops, 0);
	sse_hub_free(h);

	/* a log's hub: bare sequence numbers the publisher gives, which
	 * only grow; no backlog to resume from */
	lines = hub(0, 0, 0, 4096, 4);
	memset(&f[1], 0, sizeof(f[1]));
	ATF_REQUIRE(sse_subscribe(lines, &f[1], "12", NULL, NULL) != NULL);
	ATF_CHECK_EQ(sse_publish_seq(lines, 13, "line", "{\"seq\":13}"), 13);
	ATF_CHECK_EQ(sse_publish_seq(lines, 13, "line", "{}"), 0);
	ATF_CHECK_EQ(sse_publish_seq(lines, 12, "line", "{}"), 0);
	ATF_CHECK_STREQ(f[1].out, "retry: 2000\n\nid: 13\nevent: line\n"
	    "data: {\"seq\":13}\n\n");
	/* attached: nothing written until the next event, then it */
	memset(&f[2], 0, sizeof(f[2]));
	ATF_REQUIRE(sse_attach(lines, &f[2]) != NULL);
	ATF_CHECK_EQ(f[2].len, 0);
	ATF_CHECK_EQ(sse_publish_seq(lines, 20, "line", "{}"), 20);
	ATF_CHECK_STREQ(f[2].out, "id: 20\nevent: line\ndata: {}\n\n");
	ATF_CHECK(sse_attach(lines, &f[0]) != NULL);
	ATF_CHECK(sse_attach(lines, &f[0]) != NULL);
	ATF_CHECK(sse_attach(lines, &f[0]) == NULL);	/* 4 at most */
	sse_hub_free(lines);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, format);
	ATF_TP_ADD_TC(tp, ids);
	ATF_TP_ADD_TC(tp, fan_out);
	ATF_TP_ADD_TC(tp, resume);
	ATF_TP_ADD_TC(tp, backlog_bytes);
	ATF_TP_ADD_TC(tp, slow_dropped);
	ATF_TP_ADD_TC(tp, limits);
	return (atf_no_error());
}
