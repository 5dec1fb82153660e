/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The readiness probes' schedule (probe_delay), played out on a clock
 * of our own: eager while nothing answers, and few requests, each late
 * by a bounded share, once the server answers while it loads.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <atf-c.h>
#include <stdint.h>

#include "proxy.h"

/*
 * A load that takes load ms, whose server first answers (503) at first
 * ms (-1: never before it is ready): the attempts made until one comes
 * at or after load, each taking no time; *seen is when that one came.
 * *answered_attempts counts those the server answered, the ones it may
 * log.
 */
static unsigned int
play(int64_t load, int64_t first, int64_t *seen,
    unsigned int *answered_attempts)
{
	int64_t		 t = 0;
	int		 backoff = PROBE_BACKOFF_MIN, answered = 0;
	unsigned int	 n = 0;

	*answered_attempts = 0;
	for (;;) {
		n++;
		if (t >= load) {
			*seen = t;
			return (n);
		}
		if (first >= 0 && t >= first) {
			answered = 1;
			(*answered_attempts)++;
		}
		t += probe_delay(t, answered, &backoff);
		ATF_REQUIRE_MSG(n < 100000, "the probe never reached %lld ms",
		    (long long)load);
	}
}

ATF_TC_WITHOUT_HEAD(eager_until_answered);
ATF_TC_BODY(eager_until_answered, tc)
{
	int	 backoff = PROBE_BACKOFF_MIN;

	/* A closed port costs the server nothing: asked at once. */
	ATF_CHECK_EQ(probe_delay(0, 0, &backoff), 1);
	ATF_CHECK_EQ(probe_delay(199, 0, &backoff), 1);
	ATF_CHECK_EQ(probe_delay(200, 0, &backoff), 5);
	ATF_CHECK_EQ(probe_delay(999, 0, &backoff), 5);
	ATF_CHECK_EQ(backoff, PROBE_BACKOFF_MIN);
	/* then backing off to PROBE_BACKOFF_MAX */
	ATF_CHECK_EQ(probe_delay(1000, 0, &backoff), 10);
	ATF_CHECK_EQ(probe_delay(1010, 0, &backoff), 20);
	ATF_CHECK_EQ(probe_delay(1030, 0, &backoff), 40);
	ATF_CHECK_EQ(probe_delay(1070, 0, &backoff), 80);
	ATF_CHECK_EQ(probe_delay(1150, 0, &backoff), 160);
	ATF_CHECK_EQ(probe_delay(1310, 0, &backoff), PROBE_BACKOFF_MAX);
	ATF_CHECK_EQ(probe_delay(60000, 0, &backoff), PROBE_BACKOFF_MAX);
}

ATF_TC_WITHOUT_HEAD(answered_grows);
ATF_TC_BODY(answered_grows, tc)
{
	int	 backoff = PROBE_BACKOFF_MIN;

	/* Answered: a quarter of the time so far, within bounds. */
	ATF_CHECK_EQ(probe_delay(0, 1, &backoff), PROBE_BACKOFF_MIN);
	ATF_CHECK_EQ(probe_delay(20, 1, &backoff), PROBE_BACKOFF_MIN);
	ATF_CHECK_EQ(probe_delay(400, 1, &backoff), 100);
	ATF_CHECK_EQ(probe_delay(8000, 1, &backoff), 2000);
	ATF_CHECK_EQ(probe_delay(40000, 1, &backoff), 10000);
	ATF_CHECK_EQ(probe_delay(600000, 1, &backoff), 10000);
	ATF_CHECK_EQ(backoff, PROBE_BACKOFF_MIN);	/* not moved */
}

/* What the schedule comes to over whole loads. */
ATF_TC_WITHOUT_HEAD(loads);
ATF_TC_BODY(loads, tc)
{
	int64_t		 seen;
	unsigned int	 n, logged;

	/* A server that starts at once is seen within a millisecond. */
	n = play(3, -1, &seen, &logged);
	ATF_CHECK_EQ(seen, 3);
	ATF_CHECK_EQ(logged, 0);

	/* llama-server: answering 503 from 15 ms, ready after 300 ms. */
	n = play(300, 15, &seen, &logged);
	ATF_CHECK_MSG(seen <= 300 + 300 / 4, "seen at %lld ms",
	    (long long)seen);
	ATF_CHECK_MSG(logged <= 20, "%u requests in 300 ms", logged);

	/* The 8 s load of issue 13: a few dozen requests, not hundreds. */
	n = play(8000, 15, &seen, &logged);
	ATF_CHECK_MSG(logged <= 40, "%u requests in 8 s", logged);
	ATF_CHECK_MSG(seen <= 8000 + 8000 / 4, "seen at %lld ms",
	    (long long)seen);

	/* Ten minutes: the rate is bounded, the lateness too. */
	n = play(600000, 15, &seen, &logged);
	ATF_CHECK_MSG(logged <= 120, "%u requests in 10 min", logged);
	ATF_CHECK_MSG(seen <= 600000 + 10000, "seen at %lld ms",
	    (long long)seen);

	/* A server that listens only once loaded (vLLM): nothing logged,
	 * seen within PROBE_BACKOFF_MAX. */
	n = play(60000, -1, &seen, &logged);
	ATF_CHECK_EQ(logged, 0);
	ATF_CHECK(seen <= 60000 + PROBE_BACKOFF_MAX);
	ATF_CHECK(n > 0);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, eager_until_answered);
	ATF_TP_ADD_TC(tp, answered_grows);
	ATF_TP_ADD_TC(tp, loads);
	return (atf_no_error());
}
