/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * agencyd's sets of model ports (ports.c): what agency-proxy may connect
 * to while a reload moves models off their old ports.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <string.h>

#include "agencyd.h"

static const char *
fmt(const struct proto_ports *p)
{
	static char	buf[512];

	ports_format(p, buf, sizeof(buf));
	return (buf);
}

ATF_TC_WITHOUT_HEAD(add);
ATF_TC_BODY(add, tc)
{
	struct proto_ports	p;

	ports_init(&p, 29000, 29019);
	ATF_CHECK_STREQ(fmt(&p), "29000-29019");
	ATF_CHECK(proto_ports_ok(&p));
	/* in the range: nothing to add */
	ports_add(&p, 29000);
	ports_add(&p, 29019);
	ATF_CHECK_STREQ(fmt(&p), "29000-29019");
	/* a model left on its old port */
	ports_add(&p, 5805);
	ATF_CHECK_STREQ(fmt(&p), "5805, 29000-29019");
	ports_add(&p, 5805);
	ATF_CHECK_STREQ(fmt(&p), "5805, 29000-29019");
	/* neighbours join: 5806, then 5804 */
	ports_add(&p, 5806);
	ports_add(&p, 5804);
	ATF_CHECK_STREQ(fmt(&p), "5804-5806, 29000-29019");
	/* next to the range, either side */
	ports_add(&p, 29020);
	ports_add(&p, 28999);
	ATF_CHECK_STREQ(fmt(&p), "5804-5806, 28999-29020");
	/* one that joins two */
	ports_add(&p, 6000);
	ports_add(&p, 6002);
	ports_add(&p, 6001);
	ATF_CHECK_STREQ(fmt(&p), "5804-5806, 6000-6002, 28999-29020");
	ports_add(&p, 65535);
	ports_add(&p, 1);
	ATF_CHECK_STREQ(fmt(&p),
	    "1, 5804-5806, 6000-6002, 28999-29020, 65535");
	ATF_CHECK(proto_ports_ok(&p));
	ports_add(&p, 0);	/* no port */
	ATF_CHECK_EQ(p.n, 5);
}

/* More ranges than a message holds: the closest two become one, and
 * every port asked for stays in. */
ATF_TC_WITHOUT_HEAD(full);
ATF_TC_BODY(full, tc)
{
	struct proto_ports	p;
	unsigned int		i;

	ports_init(&p, 100, 100);
	for (i = 1; i < PROTO_PORT_RANGES; i++)
		ports_add(&p, (uint16_t)(100 + 10 * i));
	ATF_CHECK_EQ(p.n, PROTO_PORT_RANGES);
	/* 255 is 5 from 250 (the closest pair is now 250 and 255) */
	ports_add(&p, 255);
	ATF_CHECK_EQ(p.n, PROTO_PORT_RANGES);
	ATF_CHECK_STREQ(fmt(&p), "100, 110, 120, 130, 140, 150, 160, 170, "
	    "180, 190, 200, 210, 220, 230, 240, 250-255");
	ATF_CHECK(proto_ports_ok(&p));
	for (i = 0; i < PROTO_PORT_RANGES; i++)
		ATF_CHECK(ports_has(&p, (uint16_t)(100 + 10 * i)));
	ATF_CHECK(ports_has(&p, 255));
	ATF_CHECK(!ports_has(&p, 105));
	/* far away: still in, two others join */
	ports_add(&p, 60000);
	ATF_CHECK_EQ(p.n, PROTO_PORT_RANGES);
	ATF_CHECK(ports_has(&p, 60000));
	ATF_CHECK(ports_has(&p, 100));
	ATF_CHECK(proto_ports_ok(&p));
}

ATF_TC_WITHOUT_HEAD(within);
ATF_TC_BODY(within, tc)
{
	struct proto_ports	a, b;

	ports_init(&a, 29000, 29019);
	ports_init(&b, 29000, 29019);
	ATF_CHECK(ports_within(&a, &b) && ports_within(&b, &a));
	ports_add(&b, 5805);
	/* the proxy (b) may reach more than a needs: narrow it */
	ATF_CHECK(ports_within(&a, &b));
	ATF_CHECK(!ports_within(&b, &a));
	/* a disjoint range: not within, a new proxy */
	ports_init(&a, 30000, 30019);
	ATF_CHECK(!ports_within(&a, &b));
	/* part of a range */
	ports_init(&a, 29005, 29010);
	ATF_CHECK(ports_within(&a, &b));
	ports_init(&a, 29010, 29020);
	ATF_CHECK(!ports_within(&a, &b));
	/* a port outside: its own range */
	ports_init(&a, 29000, 29019);
	ports_add(&a, 5805);
	ATF_CHECK(ports_within(&a, &b) && ports_within(&b, &a));
	ports_add(&a, 5807);
	ATF_CHECK(!ports_within(&a, &b));
}

ATF_TC_WITHOUT_HEAD(ok);
ATF_TC_BODY(ok, tc)
{
	struct proto_ports	p;

	memset(&p, 0, sizeof(p));
	ATF_CHECK(!proto_ports_ok(&p));			/* none */
	p.n = 1;
	ATF_CHECK(!proto_ports_ok(&p));			/* port 0 */
	p.r[0].lo = 10;
	p.r[0].hi = 9;
	ATF_CHECK(!proto_ports_ok(&p));			/* empty */
	p.r[0].hi = 10;
	ATF_CHECK(proto_ports_ok(&p));
	p.n = PROTO_PORT_RANGES + 1;
	ATF_CHECK(!proto_ports_ok(&p));			/* too many */
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, add);
	ATF_TP_ADD_TC(tp, full);
	ATF_TP_ADD_TC(tp, within);
	ATF_TP_ADD_TC(tp, ok);
	return (atf_no_error());
}
