/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * control_peer_is_proxy: which control clients are agency-proxy, by the
 * credentials the kernel gives (SO_PEERCRED).  In user mode its pid is
 * all that tells it from agency-ctl (same uid); as root its uid too.
 */
#include <sys/types.h>

#include <atf-c.h>

#include "control.h"

ATF_TC_WITHOUT_HEAD(user_mode_pid);
ATF_TC_BODY(user_mode_pid, tc)
{
	(void)tc;
	/* Same uid as agencyd and the proxy: only the pid tells. */
	ATF_CHECK(control_peer_is_proxy(4242, 1000, 4242, 0, 0));
	ATF_CHECK(!control_peer_is_proxy(4243, 1000, 4242, 0, 0));
	/* No proxy running: pid 0 is nobody's. */
	ATF_CHECK(!control_peer_is_proxy(0, 1000, 0, 0, 0));
	ATF_CHECK(!control_peer_is_proxy(4242, 1000, 0, 0, 0));
}

ATF_TC_WITHOUT_HEAD(root_uid);
ATF_TC_BODY(root_uid, tc)
{
	(void)tc;
	/* Any process of the proxy's user, whatever its pid. */
	ATF_CHECK(control_peer_is_proxy(77, 998, 4242, 1, 998));
	ATF_CHECK(control_peer_is_proxy(4242, 998, 4242, 1, 998));
	/* Root and other users are served. */
	ATF_CHECK(!control_peer_is_proxy(77, 0, 4242, 1, 998));
	ATF_CHECK(!control_peer_is_proxy(77, 65534, 4242, 1, 998));
	/* No uid known: the uid alone says nothing. */
	ATF_CHECK(!control_peer_is_proxy(77, 998, 4242, 0, 998));
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, user_mode_pid);
	ATF_TP_ADD_TC(tp, root_uid);
	return (atf_no_error());
}
