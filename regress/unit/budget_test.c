/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The request bodies' budget of agency-proxy (conn_budget.c): what a
 * body takes, what is refused, what is given back.
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
	int64_t		 a = 0, b = 0, c = 0, s[5];
	size_t		 i;

	conn_budget_configure(32 * MIB, 16 * MIB);
	ATF_CHECK_EQ(figures().body_max, 32 * MIB);
	/* A big body may take seven eighths of it: 28M. */
	ATF_REQUIRE_EQ(conn_budget_take(&a, 16 * MIB), 0);
	ATF_CHECK_EQ(a, 16 * MIB);
	ATF_CHECK_EQ(conn_budget_take(&b, 12 * MIB + 1), -1);
	ATF_CHECK_EQ(b, 0);
	ATF_CHECK_EQ(figures().body_refused, 1);
	ATF_REQUIRE_EQ(conn_budget_take(&b, 12 * MIB), 0);
	/* The last eighth is for small ones (64K at most each). */
	ATF_CHECK_EQ(conn_budget_take(&c, 64 * KIB + 1), -1);
	for (i = 0; i < 5; i++)
		ATF_CHECK_EQ(conn_budget_take(&s[i], 64 * KIB), 0);
	ATF_CHECK_EQ(figures().body_bytes, 28 * MIB + 5 * 64 * KIB);
	/* A body of nothing takes nothing, even when full. */
	c = 0;
	ATF_CHECK_EQ(conn_budget_take(&c, 0), 0);
	ATF_CHECK_EQ(c, 0);
	/* Everything given back. */
	conn_budget_give(&a);
	conn_budget_give(&b);
	for (i = 0; i < 5; i++)
		conn_budget_give(&s[i]);
	ATF_CHECK_EQ(a, 0);
	ATF_CHECK_EQ(figures().body_bytes, 0);
	ATF_CHECK_EQ(figures().body_refused, 2);
}

ATF_TC_WITHOUT_HEAD(one_body_at_least);
ATF_TC_BODY(one_body_at_least, tc)
{
	int64_t		 a = 0, b = 0;

	/* A budget below max body is raised to it... */
	conn_budget_configure(1 * MIB, 8 * MIB);
	ATF_CHECK_EQ(figures().body_max, 8 * MIB);
	/* ...and a body of max body fits when nothing else is held, though
	 * seven eighths of the budget are less. */
	ATF_REQUIRE_EQ(conn_budget_take(&a, 8 * MIB), 0);
	ATF_CHECK_EQ(conn_budget_take(&b, 1), -1);
	conn_budget_give(&a);
	ATF_CHECK_EQ(conn_budget_take(&b, 1), 0);
	conn_budget_give(&b);
	ATF_CHECK_EQ(figures().body_bytes, 0);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, small_and_big);
	ATF_TP_ADD_TC(tp, one_body_at_least);
	return (atf_no_error());
}
