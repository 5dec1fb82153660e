/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The budgets of agency-proxy (conn_budget.c): what a body takes, what
 * is refused, what is given back, and each owner's share; what a
 * connection's input takes of the header budget as it grows and
 * shrinks.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <stdint.h>
#include <string.h>

#include "proxy.h"

#define KIB	(1024LL)
#define MIB	(1024LL * KIB)

static struct conn_stats
figures(void)
{
	struct conn_stats	 cs;

	memset(&cs, 0, sizeof(cs));
	conn_budget_stats(&cs);
	return (cs);
}

ATF_TC_WITHOUT_HEAD(small_and_big);
ATF_TC_BODY(small_and_big, tc)
{
	struct bhold	 a = { 0, NULL }, b = a, c = a, s[5];
	size_t		 i;

	memset(s, 0, sizeof(s));

	conn_budget_configure(32 * MIB, 16 * MIB, 100,
	    16 * MIB, 50);
	ATF_CHECK_EQ(figures().body_max, 32 * MIB);
	/* A big body may take seven eighths of it: 28M. */
	ATF_REQUIRE_EQ(conn_budget_take(&a, "x", 16 * MIB), 0);
	ATF_CHECK_EQ(a.n, 16 * MIB);
	ATF_CHECK_EQ(conn_budget_take(&b, "x", 12 * MIB + 1), -1);
	ATF_CHECK_EQ(b.n, 0);
	ATF_CHECK_EQ(figures().body_refused, 1);
	ATF_REQUIRE_EQ(conn_budget_take(&b, "x", 12 * MIB), 0);
	/* The last eighth is for small ones (64K at most each). */
	ATF_CHECK_EQ(conn_budget_take(&c, "x", 64 * KIB + 1), -1);
	for (i = 0; i < 5; i++)
		ATF_CHECK_EQ(conn_budget_take(&s[i], "x", 64 * KIB), 0);
	ATF_CHECK_EQ(figures().body_bytes, 28 * MIB + 5 * 64 * KIB);
	/* A body of nothing takes nothing, even when full. */
	memset(&c, 0, sizeof(c));
	ATF_CHECK_EQ(conn_budget_take(&c, "x", 0), 0);
	ATF_CHECK_EQ(c.n, 0);
	/* Everything given back. */
	conn_budget_give(&a);
	conn_budget_give(&b);
	for (i = 0; i < 5; i++)
		conn_budget_give(&s[i]);
	ATF_CHECK_EQ(a.n, 0);
	ATF_CHECK_EQ(figures().body_bytes, 0);
	ATF_CHECK_EQ(figures().body_refused, 2);
}

ATF_TC_WITHOUT_HEAD(one_body_at_least);
ATF_TC_BODY(one_body_at_least, tc)
{
	struct bhold	 a = { 0, NULL }, b = a;

	/* A budget below max body is raised to it... */
	conn_budget_configure(1 * MIB, 8 * MIB, 100,
	    16 * MIB, 50);
	ATF_CHECK_EQ(figures().body_max, 8 * MIB);
	/* ...and a body of max body fits when nothing else is held, though
	 * seven eighths of the budget are less. */
	ATF_REQUIRE_EQ(conn_budget_take(&a, "x", 8 * MIB), 0);
	ATF_CHECK_EQ(conn_budget_take(&b, "x", 1), -1);
	conn_budget_give(&a);
	ATF_CHECK_EQ(conn_budget_take(&b, "x", 1), 0);
	conn_budget_give(&b);
	ATF_CHECK_EQ(figures().body_bytes, 0);
}

/*
 * An owner holds at most its share (here a half) of the budget, but its
 * first body always fits; the others keep the rest.
 */
ATF_TC_WITHOUT_HEAD(share);
ATF_TC_BODY(share, tc)
{
	struct bhold	 a[4], b[2], z = { 0, NULL };
	size_t		 i;
	uint64_t	 refused0;

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	conn_budget_configure(16 * MIB, 4 * MIB, 50,
	    16 * MIB, 50);
	refused0 = figures().body_refused;
	/* key=a: 4M, 4M fill its 8M; 64K more is over */
	ATF_REQUIRE_EQ(conn_budget_take(&a[0], "key=a", 4 * MIB), 0);
	ATF_REQUIRE_EQ(conn_budget_take(&a[1], "key=a", 4 * MIB), 0);
	ATF_CHECK_EQ(conn_budget_held("key=a"), 8 * MIB);
	ATF_CHECK_EQ(conn_budget_take(&a[2], "key=a", 64 * KIB), -1);
	ATF_CHECK_EQ(a[2].n, 0);
	ATF_CHECK_EQ(figures().body_share_refused, 1);
	ATF_CHECK_EQ(figures().body_refused, refused0 + 1);
	/* another key has the rest, to its own share */
	ATF_REQUIRE_EQ(conn_budget_take(&b[0], "key=b", 4 * MIB), 0);
	ATF_CHECK_EQ(conn_budget_take(&b[1], "key=b", 64 * KIB), 0);
	ATF_CHECK_EQ(conn_budget_held("key=b"), 4 * MIB + 64 * KIB);
	/* what one of its bodies gives back is its own again */
	conn_budget_give(&a[0]);
	ATF_CHECK_EQ(conn_budget_held("key=a"), 4 * MIB);
	ATF_CHECK_EQ(conn_budget_take(&a[0], "key=a", 4 * MIB), 0);
	/* one that holds nothing takes its first body, though its share
	 * (1%: 167772 bytes) is less than it */
	conn_budget_configure(16 * MIB, 4 * MIB, 1,
	    16 * MIB, 50);
	ATF_CHECK_EQ(conn_budget_take(&z, "addr=10.0.0.1", 1 * MIB), 0);
	ATF_CHECK_EQ(conn_budget_take(&a[3], "addr=10.0.0.1", 1), -1);
	conn_budget_give(&z);
	ATF_CHECK_EQ(conn_budget_held("addr=10.0.0.1"), 0);
	ATF_CHECK_EQ(conn_budget_take(&a[3], "addr=10.0.0.1", 1), 0);
	ATF_CHECK(a[3].owner != NULL);
	/* given back: nothing held by anyone */
	for (i = 0; i < 4; i++)
		conn_budget_give(&a[i]);
	for (i = 0; i < 2; i++)
		conn_budget_give(&b[i]);
	ATF_CHECK_EQ(conn_budget_held("key=a"), 0);
	ATF_CHECK_EQ(conn_budget_held("key=b"), 0);
	ATF_CHECK_EQ(figures().body_bytes, 0);
	/* the whole budget is a key's at 100 */
	conn_budget_configure(16 * MIB, 4 * MIB, 100,
	    16 * MIB, 50);
	ATF_REQUIRE_EQ(conn_budget_take(&a[0], "key=a", 4 * MIB), 0);
	ATF_REQUIRE_EQ(conn_budget_take(&a[1], "key=a", 4 * MIB), 0);
	ATF_REQUIRE_EQ(conn_budget_take(&a[2], "key=a", 4 * MIB), 0);
	for (i = 0; i < 3; i++)
		conn_budget_give(&a[i]);
}

/*
 * A connection's input grows and shrinks in the header budget: within
 * it and its client's share (here a half), more is refused and the hold
 * stays as it was; forced, it is taken over the budget; shrunk to 0,
 * the hold is empty and the bytes count as given back.
 */
ATF_TC_WITHOUT_HEAD(headers);
ATF_TC_BODY(headers, tc)
{
	struct bhold	 a = { 0, NULL }, b = a, c = a, d = a;
	uint64_t	 refused0, share0;

	conn_budget_configure(16 * MIB, 4 * MIB, 50, 1 * MIB, 50);
	ATF_CHECK_EQ(figures().header_max, 1 * MIB);
	refused0 = figures().header_refused;
	share0 = figures().header_share_refused;
	(void)conn_budget_given();
	/* addr=a: 4K, then 256K, then 512K (its share) */
	ATF_REQUIRE_EQ(conn_budget_header(&a, "addr=a", 4 * KIB, 0), 0);
	ATF_REQUIRE_EQ(conn_budget_header(&a, "", 256 * KIB, 0), 0);
	ATF_REQUIRE_EQ(conn_budget_header(&b, "addr=a", 256 * KIB, 0), 0);
	ATF_CHECK_EQ(conn_budget_header_held("addr=a"), 512 * KIB);
	/* one byte more is over its share: refused, a as it was */
	ATF_CHECK_EQ(conn_budget_header(&a, "", 256 * KIB + 1, 0), -1);
	ATF_CHECK_EQ(a.n, 256 * KIB);
	ATF_CHECK_EQ(figures().header_share_refused, share0 + 1);
	/* another client: its first bytes, then the budget is full */
	ATF_REQUIRE_EQ(conn_budget_header(&c, "addr=b", 512 * KIB, 0), 0);
	ATF_CHECK_EQ(figures().header_bytes, 1 * MIB);
	ATF_CHECK_EQ(conn_budget_header(&d, "addr=c", 1, 0), -1);
	ATF_CHECK_EQ(d.n, 0);
	ATF_CHECK(d.owner == NULL);
	ATF_CHECK_EQ(figures().header_refused, refused0 + 2);
	ATF_CHECK_EQ(figures().header_share_refused, share0 + 1);
	/* forced: taken over the budget */
	ATF_REQUIRE_EQ(conn_budget_header(&d, "addr=c", 64 * KIB, 1), 0);
	ATF_CHECK_EQ(figures().header_bytes, 1 * MIB + 64 * KIB);
	/* shrunk, and let go */
	ATF_REQUIRE_EQ(conn_budget_header(&a, "", 4 * KIB, 0), 0);
	ATF_CHECK_EQ(conn_budget_header_held("addr=a"), 260 * KIB);
	ATF_CHECK_EQ(conn_budget_header(&a, "", 0, 0), 0);
	ATF_CHECK(a.owner == NULL);
	ATF_CHECK_EQ(conn_budget_header(&b, "", 0, 0), 0);
	ATF_CHECK_EQ(conn_budget_header(&c, "", 0, 0), 0);
	ATF_CHECK_EQ(conn_budget_header(&d, "", 0, 0), 0);
	ATF_CHECK_EQ(conn_budget_header_held("addr=a"), 0);
	ATF_CHECK_EQ(figures().header_bytes, 0);
	ATF_CHECK_EQ(conn_budget_given(), 1 * MIB + 64 * KIB);
	ATF_CHECK_EQ(conn_budget_given(), 0);
	/* the bodies' budget is another: untouched */
	ATF_CHECK_EQ(figures().body_bytes, 0);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, headers);
	ATF_TP_ADD_TC(tp, small_and_big);
	ATF_TP_ADD_TC(tp, one_body_at_least);
	ATF_TP_ADD_TC(tp, share);
	return (atf_no_error());
}
