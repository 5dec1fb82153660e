/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The version of the whole tree: what agencyd, agency-proxy and
 * agency-ctl print for -V.  debian/changelog's newest entry carries the
 * same (regress/layout/version_test holds them together).
 */
#ifndef AGENCY_VERSION_H
#define AGENCY_VERSION_H

#define AGENCY_VERSION	"0.1.0"

#endif /* AGENCY_VERSION_H */
