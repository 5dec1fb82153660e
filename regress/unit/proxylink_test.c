/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Unit tests for the pure parts of agencyd's proxy link (proxylink.c):
 * how a line from the proxy is escaped for the log, and the priorities
 * a proxy may log at.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <stdint.h>
#include <string.h>
#include <syslog.h>

#include "agencyd.h"

static const char *
clean(const char *s)
{
	static char	 buf[4 * PROTO_LOGLINE_MAX + 1];

	return (proxy_clean(buf, sizeof(buf), s));
}

ATF_TC_WITHOUT_HEAD(clean_plain);
ATF_TC_BODY(clean_plain, tc)
{
	char		 buf[64];
	const char	*line = "POST /v1/chat/completions qwen 200 12ms 5->9";

	/* A line with nothing to escape is the line itself, not a copy. */
	ATF_CHECK(proxy_clean(buf, sizeof(buf), line) == line);
	ATF_CHECK_STREQ(clean(""), "");
}

ATF_TC_WITHOUT_HEAD(clean_escapes);
ATF_TC_BODY(clean_escapes, tc)
{
	/* No newline, carriage return or escape survives: no forged line,
	 * no terminal sequence; and a backslash is doubled, so an escape
	 * in the log is always one of ours. */
	ATF_CHECK_STREQ(clean("a\nagencyd: forged"), "a\\nagencyd: forged");
	ATF_CHECK_STREQ(clean("x\r\ty"), "x\\r\\ty");
	ATF_CHECK_STREQ(clean("\033[31mred"), "\\033[31mred");
	ATF_CHECK_STREQ(clean("back\\slash"), "back\\\\slash");
	ATF_CHECK_STREQ(clean("\177\001"), "\\177\\001");
	/* Bytes above ASCII (UTF-8, C1 controls) as octal. */
	ATF_CHECK_STREQ(clean("caf\303\251 \233"), "caf\\303\\251 \\233");
}

ATF_TC_WITHOUT_HEAD(clean_bounded);
ATF_TC_BODY(clean_bounded, tc)
{
	char	 src[PROTO_LOGLINE_MAX], small[16];

	/* The worst case fits the room the callers give. */
	memset(src, '\033', sizeof(src) - 1);
	src[sizeof(src) - 1] = '\0';
	ATF_CHECK_EQ(strlen(clean(src)), 4 * (sizeof(src) - 1));
	/* Less room: cut at a whole escape, and ended inside the room. */
	memset(small, 'z', sizeof(small));
	ATF_CHECK_STREQ(proxy_clean(small, sizeof(small) - 1, src),
	    "\\033\\033\\033");
	ATF_CHECK_EQ(small[sizeof(small) - 1], 'z');
}

ATF_TC_WITHOUT_HEAD(log_priority);
ATF_TC_BODY(log_priority, tc)
{
	/* What the proxy uses stays. */
	ATF_CHECK_EQ(proxy_log_priority(LOG_CRIT), LOG_CRIT);
	ATF_CHECK_EQ(proxy_log_priority(LOG_ERR), LOG_ERR);
	ATF_CHECK_EQ(proxy_log_priority(LOG_WARNING), LOG_WARNING);
	ATF_CHECK_EQ(proxy_log_priority(LOG_INFO), LOG_INFO);
	ATF_CHECK_EQ(proxy_log_priority(LOG_DEBUG), LOG_DEBUG);
	/* Nothing that syslog may put on every terminal. */
	ATF_CHECK_EQ(proxy_log_priority(LOG_EMERG), LOG_CRIT);
	ATF_CHECK_EQ(proxy_log_priority(LOG_ALERT), LOG_CRIT);
	/* No facility of its choosing. */
	ATF_CHECK_EQ(proxy_log_priority(LOG_AUTH | LOG_ERR), LOG_INFO);
	ATF_CHECK_EQ(proxy_log_priority(LOG_KERN | LOG_EMERG), LOG_CRIT);
	ATF_CHECK_EQ(proxy_log_priority(UINT32_MAX), LOG_INFO);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, clean_plain);
	ATF_TP_ADD_TC(tp, clean_escapes);
	ATF_TP_ADD_TC(tp, clean_bounded);
	ATF_TP_ADD_TC(tp, log_priority);
	return (atf_no_error());
}
