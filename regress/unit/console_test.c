/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The console's files as compiled into the proxy (console_assets.c,
 * written by tools/embed from console/): each is there with its type and
 * tag, the page loads nothing but them, and nothing in them needs the
 * policy loosened (no inline script, style or handler; no other origin).
 */
#include <sys/types.h>

#include <atf-c.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "console_assets.h"

/* The asset's bytes as a string (assets hold no NUL). */
static char *
text_of(const char *path)
{
	const struct console_asset	*a;
	char				*s;

	a = console_asset(path);
	ATF_REQUIRE_MSG(a != NULL, "%s is not served", path);
	ATF_REQUIRE_MSG(memchr(a->data, '\0', a->len) == NULL,
	    "%s holds a NUL", path);
	ATF_REQUIRE((s = malloc(a->len + 1)) != NULL);
	memcpy(s, a->data, a->len);
	s[a->len] = '\0';
	return (s);
}

/* The next occurrence of needle in s, ignoring ASCII case. */
static const char *
find_ci(const char *s, const char *needle)
{
	size_t	 n = strlen(needle);

	for (; *s != '\0'; s++)
		if (strncasecmp(s, needle, n) == 0)
			return (s);
	return (NULL);
}

ATF_TC_WITHOUT_HEAD(assets);
ATF_TC_BODY(assets, tc)
{
	static const struct {
		const char	*path;
		const char	*type;
	} want[] = {
		{ "/", "text/html; charset=utf-8" },
		{ "/console/console.css", "text/css; charset=utf-8" },
		{ "/console/console.js", "text/javascript; charset=utf-8" },
		{ "/console/icon.svg", "image/svg+xml" },
	};
	const struct console_asset	*a, *b;
	size_t				 i, j;

	ATF_CHECK_EQ(console_nassets(), sizeof(want) / sizeof(want[0]));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		a = console_asset(want[i].path);
		ATF_REQUIRE_MSG(a != NULL, "%s is not served", want[i].path);
		ATF_CHECK_STREQ(a->type, want[i].type);
		ATF_CHECK_MSG(a->len > 100, "%s: %zu bytes", a->path, a->len);
		/* a strong tag: "16 hex digits" */
		ATF_CHECK_EQ(strlen(a->etag), 18);
		ATF_CHECK(a->etag[0] == '"' && a->etag[17] == '"');
		for (j = 1; j < 17; j++)
			ATF_CHECK(isxdigit((unsigned char)a->etag[j]));
	}
	for (i = 0; i < console_nassets(); i++)
		for (j = i + 1; j < console_nassets(); j++) {
			a = console_asset_at(i);
			b = console_asset_at(j);
			ATF_CHECK_MSG(strcmp(a->etag, b->etag) != 0,
			    "%s and %s share a tag", a->path, b->path);
		}
	ATF_CHECK(console_asset_at(console_nassets()) == NULL);
	ATF_CHECK(console_asset("/console/") == NULL);
	ATF_CHECK(console_asset("/console/console.js/") == NULL);
	ATF_CHECK(console_asset("") == NULL);
	ATF_CHECK(console_asset("/index.html") == NULL);
}

/*
 * Every src= and href= of the page is one of the files served, or a
 * fragment of the page; no tag runs inline code or style.
 */
ATF_TC_WITHOUT_HEAD(page_self_contained);
ATF_TC_BODY(page_self_contained, tc)
{
	static const char	*attrs[] = { " src=\"", " href=\"" };
	const char		*tag, *gt;
	char			*html, *p, *end, ref[256];
	size_t			 i, nref = 0;

	html = text_of("/");
	for (i = 0; i < 2; i++) {
		for (p = html; (p = strstr(p, attrs[i])) != NULL; p = end) {
			p += strlen(attrs[i]);
			ATF_REQUIRE((end = strchr(p, '"')) != NULL);
			ATF_REQUIRE((size_t)(end - p) < sizeof(ref));
			memcpy(ref, p, end - p);
			ref[end - p] = '\0';
			nref++;
			ATF_CHECK_MSG(ref[0] == '#' || console_asset(ref) != NULL,
			    "the page refers to %s, which is not served", ref);
		}
	}
	ATF_CHECK_MSG(nref >= 3, "only %zu references", nref);
	/* every script has a src, and there is no style element */
	for (tag = html; (tag = find_ci(tag, "<script")) != NULL; tag++) {
		ATF_REQUIRE((gt = strchr(tag, '>')) != NULL);
		ATF_CHECK_MSG(memmem(tag, gt - tag, " src=", 5) != NULL,
		    "an inline script: %.*s", (int)(gt - tag), tag);
	}
	ATF_CHECK_MSG(find_ci(html, "<style") == NULL, "a style element");
	ATF_CHECK_MSG(find_ci(html, " style=") == NULL, "a style attribute");
	ATF_CHECK_MSG(find_ci(html, " onclick=") == NULL &&
	    find_ci(html, " onload=") == NULL &&
	    find_ci(html, " onerror=") == NULL, "an inline handler");
	ATF_CHECK_MSG(find_ci(html, "javascript:") == NULL,
	    "a javascript: URL");
	free(html);
}

/* No file names another origin: the only URL with a scheme is the SVG
 * namespace, which is a name, not a fetch. */
ATF_TC_WITHOUT_HEAD(no_other_origin);
ATF_TC_BODY(no_other_origin, tc)
{
	static const char	*ns = "http://www.w3.org/2000/svg";
	const char		*p;
	char			*s;
	size_t			 i;

	for (i = 0; i < console_nassets(); i++) {
		s = text_of(console_asset_at(i)->path);
		for (p = s; (p = find_ci(p, "http")) != NULL; p++)
			ATF_CHECK_MSG(strncmp(p, ns, strlen(ns)) == 0 ||
			    (strncasecmp(p, "http:", 5) != 0 &&
			    strncasecmp(p, "https:", 6) != 0),
			    "%s names another origin: %.40s",
			    console_asset_at(i)->path, p);
		ATF_CHECK_MSG(strstr(s, "//cdn") == NULL &&
		    find_ci(s, "@import") == NULL,
		    "%s imports", console_asset_at(i)->path);
		free(s);
	}
	/* the script never writes markup from data */
	s = text_of("/console/console.js");
	ATF_CHECK_MSG(strstr(s, "innerHTML") == NULL &&
	    strstr(s, "outerHTML") == NULL &&
	    strstr(s, "insertAdjacentHTML") == NULL &&
	    strstr(s, "document.write") == NULL &&
	    strstr(s, "eval(") == NULL, "the script writes markup or evals");
	free(s);
}

ATF_TC_WITHOUT_HEAD(policy);
ATF_TC_BODY(policy, tc)
{
	const char	*csp = CONSOLE_CSP;

	ATF_CHECK(strncmp(csp, "default-src 'none';", 19) == 0);
	ATF_CHECK(strstr(csp, "unsafe") == NULL);
	ATF_CHECK(strstr(csp, "data:") == NULL);
	ATF_CHECK(strstr(csp, "*") == NULL);
	ATF_CHECK(strstr(csp, "script-src 'self'") != NULL);
	ATF_CHECK(strstr(csp, "style-src 'self'") != NULL);
	ATF_CHECK(strstr(csp, "connect-src 'self'") != NULL);
	ATF_CHECK(strstr(csp, "frame-ancestors 'none'") != NULL);
	ATF_CHECK(strchr(csp, '\r') == NULL && strchr(csp, '\n') == NULL);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, assets);
	ATF_TP_ADD_TC(tp, page_self_contained);
	ATF_TP_ADD_TC(tp, no_other_origin);
	ATF_TP_ADD_TC(tp, policy);
	return (atf_no_error());
}
