/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The operator console's files (console/), compiled into the proxy at
 * build time: tools/embed writes console_assets.c, which is built, never
 * edited.  console/EVENTS.md is the page's contract with the proxy.
 */
#ifndef CONSOLE_ASSETS_H
#define CONSOLE_ASSETS_H

#include <stddef.h>

/*
 * The policy the console's files are served with: nothing inline,
 * nothing from elsewhere, no framing.
 */
#define CONSOLE_CSP	"default-src 'none'; script-src 'self'; " \
			"style-src 'self'; img-src 'self'; " \
			"connect-src 'self'; base-uri 'none'; " \
			"form-action 'none'; frame-ancestors 'none'"

struct console_asset {
	const char		*path;	/* the URL path it is served at */
	const char		*type;	/* its Content-Type */
	const char		*etag;	/* a strong ETag, quotes included */
	const unsigned char	*data;
	size_t			 len;
};

/* The file served at path, or NULL. */
const struct console_asset	*console_asset(const char *);
size_t				 console_nassets(void);
const struct console_asset	*console_asset_at(size_t);

#endif /* CONSOLE_ASSETS_H */
