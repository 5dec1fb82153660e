/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Unit tests for the messages of common/proto.h.
 *
 * ctl_numbers pins the control protocol (agency-ctl <-> agencyd): an
 * agency-ctl of one build talks to the agencyd of another, so each
 * message keeps its number for good.  A change here is a change of the
 * protocol, never a refactor.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <stdint.h>

#include "proto.h"

ATF_TC_WITHOUT_HEAD(ctl_numbers);
ATF_TC_BODY(ctl_numbers, tc)
{
	ATF_CHECK_EQ(IMSG_STATUS_REQ, 19);
	ATF_CHECK_EQ(IMSG_STATUS_MODEL, 20);
	ATF_CHECK_EQ(IMSG_STATUS_END, 21);
	ATF_CHECK_EQ(IMSG_CTL_LOAD, 26);
	ATF_CHECK_EQ(IMSG_CTL_UNLOAD, 27);
	ATF_CHECK_EQ(IMSG_CTL_CANCEL, 28);
	ATF_CHECK_EQ(IMSG_CTL_RELOAD, 29);
	ATF_CHECK_EQ(IMSG_CTL_VERBOSE, 30);
	ATF_CHECK_EQ(IMSG_CTL_LOGS, 31);
	ATF_CHECK_EQ(IMSG_CTL_LOGLINE, 32);
	ATF_CHECK_EQ(IMSG_CTL_OK, 33);
	ATF_CHECK_EQ(IMSG_CTL_ERROR, 34);
	ATF_CHECK_EQ(IMSG_CTL_INFO, 35);
	ATF_CHECK_EQ(IMSG_CTL_END, 36);
	ATF_CHECK_EQ(IMSG_CTL_PLAN, 39);
	ATF_CHECK_EQ(IMSG_CTL_STATUS, 42);
	ATF_CHECK_EQ(IMSG_STATUS_ALIAS, 43);
	ATF_CHECK_EQ(IMSG_STATUS_MEMORY, 44);
	ATF_CHECK_EQ(IMSG_CTL_FOLLOW, 45);
	ATF_CHECK_EQ(IMSG_CTL_FAILED, 46);
	ATF_CHECK_EQ(IMSG_STATUS_KEY, 55);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, ctl_numbers);
	return (atf_no_error());
}
