/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Requests counted by API key, for agency-ctl status.  The proxy names
 * the key of each hold it asks for; a name that is not a key of the
 * configuration (a reload removed it while the request was on its way)
 * is not counted.  A key keeps its count across reloads that keep it.
 *
 * Calls: common/log.c.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>

#include "agencyd.h"
#include "log.h"

static struct keystat *
keystat_find(struct keystat_head *h, const char *name)
{
	struct keystat	*ks;

	TAILQ_FOREACH(ks, h, entry)
		if (strcmp(ks->name, name) == 0)
			return (ks);
	return (NULL);
}

void
keystats_count(struct agencyd *d, const char *name)
{
	struct keystat	*ks;

	if (name[0] != '\0' && (ks = keystat_find(&d->keystats, name)) != NULL)
		ks->requests++;
}

/* One entry a key of conf, in its order, with the count it had. */
void
keystats_reload(struct agencyd *d, const struct agency_conf *conf)
{
	struct keystat_head	 nh;
	struct keystat		*ks, *o;
	struct key_conf		*k;

	TAILQ_INIT(&nh);
	TAILQ_FOREACH(k, &conf->keys, entry) {
		if ((ks = calloc(1, sizeof(*ks))) == NULL)
			fatal("%s: calloc", __func__);
		(void)strlcpy(ks->name, k->name, sizeof(ks->name));
		if ((o = keystat_find(&d->keystats, k->name)) != NULL)
			ks->requests = o->requests;
		TAILQ_INSERT_TAIL(&nh, ks, entry);
	}
	keystats_free(d);
	TAILQ_CONCAT(&d->keystats, &nh, entry);
}

void
keystats_free(struct agencyd *d)
{
	struct keystat	*ks;

	while ((ks = TAILQ_FIRST(&d->keystats)) != NULL) {
		TAILQ_REMOVE(&d->keystats, ks, entry);
		free(ks);
	}
}

void
keystats_fill(const struct keystat *ks, struct proto_key_status *pk)
{
	memset(pk, 0, sizeof(*pk));
	(void)strlcpy(pk->name, ks->name, sizeof(pk->name));
	pk->requests = ks->requests;
}
