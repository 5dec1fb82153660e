/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The fan-out of server-sent events (sse.h).  Each event is formatted
 * once, kept in the backlog as it goes on the wire, and the same bytes
 * are written to every subscriber: the cost of a subscriber is its
 * connection's queue, which the bound keeps small.
 *
 * Calls: none.
 */
#include <sys/types.h>
#include <sys/queue.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sse.h"

struct sse_ev {
	TAILQ_ENTRY(sse_ev)	 entry;
	uint64_t		 seq;
	size_t			 len;
	char			 text[];
};

struct sse_sub {
	TAILQ_ENTRY(sse_sub)	 entry;
	void			*arg;
};

struct sse_hub {
	const struct sse_ops	*ops;
	uint32_t		 stream;
	struct sse_limits	 lim;
	uint64_t		 seq;		/* the last published */
	TAILQ_HEAD(, sse_ev)	 backlog;
	TAILQ_HEAD(, sse_sub)	 subs;
	struct sse_stats	 st;
};

static void	 backlog_trim(struct sse_hub *, size_t, size_t);
static void	 fan_out(struct sse_hub *, const char *, size_t);
static int	 sub_write(struct sse_hub *, struct sse_sub *, const char *,
		    size_t);
static void	 sub_drop(struct sse_hub *, struct sse_sub *);

struct sse_hub *
sse_hub_new(const struct sse_ops *ops, uint32_t stream,
    const struct sse_limits *lim)
{
	struct sse_hub	*h;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		return (NULL);
	h->ops = ops;
	h->stream = stream;
	h->lim = *lim;
	TAILQ_INIT(&h->backlog);
	TAILQ_INIT(&h->subs);
	return (h);
}

void
sse_hub_free(struct sse_hub *h)
{
	struct sse_sub	*s;

	if (h == NULL)
		return;
	while ((s = TAILQ_FIRST(&h->subs)) != NULL)
		sub_drop(h, s);
	backlog_trim(h, 0, 0);
	free(h);
}

void
sse_id(char *buf, size_t size, uint32_t stream, uint64_t seq)
{
	if (stream != 0)
		(void)snprintf(buf, size, "%08" PRIx32 ".%" PRIu64, stream,
		    seq);
	else
		(void)snprintf(buf, size, "%" PRIu64, seq);
}

/* Decimal digits only, at most 19 (no overflow), at least one. */
static int
parse_seq(const char *s, uint64_t *seq)
{
	uint64_t	 v = 0;
	size_t		 n;

	for (n = 0; s[n] != '\0'; n++) {
		if (s[n] < '0' || s[n] > '9' || n == 19)
			return (-1);
		v = v * 10 + (uint64_t)(s[n] - '0');
	}
	if (n == 0)
		return (-1);
	*seq = v;
	return (0);
}

int
sse_parse_id(const char *id, uint32_t *stream, uint64_t *seq)
{
	uint32_t	 v = 0;
	size_t		 i;
	int		 c;

	if (id == NULL)
		return (-1);
	if (strchr(id, '.') == NULL) {
		*stream = 0;
		return (parse_seq(id, seq));
	}
	for (i = 0; i < 8; i++) {
		c = (unsigned char)id[i];
		if (c >= '0' && c <= '9')
			v = v << 4 | (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint32_t)(c - 'a' + 10);
		else
			return (-1);
	}
	if (id[8] != '.' || v == 0 || parse_seq(id + 9, seq) == -1)
		return (-1);
	*stream = v;
	return (0);
}

static int
has_break(const char *s)
{
	return (strpbrk(s, "\r\n") != NULL);
}

int
sse_format(char *buf, size_t size, const char *id, const char *type,
    const char *data)
{
	int	 n;

	if (type[0] == '\0' || has_break(type) || has_break(data) ||
	    (id != NULL && has_break(id)))
		return (-1);
	if (id != NULL)
		n = snprintf(buf, size, "id: %s\nevent: %s\ndata: %s\n\n", id,
		    type, data);
	else
		n = snprintf(buf, size, "event: %s\ndata: %s\n\n", type, data);
	if (n < 0 || (size_t)n >= size)
		return (-1);
	return (n);
}

/* Free the oldest events until at most n and bytes are left. */
static void
backlog_trim(struct sse_hub *h, size_t n, size_t bytes)
{
	struct sse_ev	*e;

	while ((e = TAILQ_FIRST(&h->backlog)) != NULL &&
	    (h->st.backlog_events > n || h->st.backlog_bytes > bytes)) {
		TAILQ_REMOVE(&h->backlog, e, entry);
		h->st.backlog_events--;
		h->st.backlog_bytes -= e->len;
		free(e);
	}
}

static void
sub_drop(struct sse_hub *h, struct sse_sub *s)
{
	void	*arg = s->arg;

	TAILQ_REMOVE(&h->subs, s, entry);
	h->st.subs--;
	free(s);
	h->ops->drop(arg);
}

/* Write to one subscriber, or drop it: 0, or -1 when it was dropped. */
static int
sub_write(struct sse_hub *h, struct sse_sub *s, const char *p, size_t len)
{
	size_t	 q;

	q = h->ops->queued(s->arg);
	if (q > h->lim.sub_queued || len > h->lim.sub_queued - q ||
	    h->ops->write(s->arg, p, len) == -1) {
		h->st.dropped++;
		sub_drop(h, s);
		return (-1);
	}
	return (0);
}

static void
fan_out(struct sse_hub *h, const char *p, size_t len)
{
	struct sse_sub	*s, *next;

	for (s = TAILQ_FIRST(&h->subs); s != NULL; s = next) {
		next = TAILQ_NEXT(s, entry);
		(void)sub_write(h, s, p, len);
	}
}

uint64_t
sse_publish_seq(struct sse_hub *h, uint64_t seq, const char *type,
    const char *data)
{
	struct sse_ev	*e;
	char		 id[32];
	size_t		 size;
	int		 n;

	if (seq <= h->seq)
		return (0);
	sse_id(id, sizeof(id), h->stream, seq);
	/* the framing is under 64 bytes besides id, type and data */
	size = strlen(id) + strlen(type) + strlen(data) + 64;
	if ((e = malloc(sizeof(*e) + size)) == NULL)
		return (0);
	if ((n = sse_format(e->text, size, id, type, data)) == -1) {
		free(e);
		return (0);
	}
	e->seq = seq;
	e->len = (size_t)n;
	h->seq = seq;
	h->st.published++;
	fan_out(h, e->text, e->len);
	if (h->lim.backlog_events == 0 || e->len > h->lim.backlog_bytes) {
		/* nothing older may be resumed across it */
		backlog_trim(h, 0, 0);
		free(e);
		return (seq);
	}
	TAILQ_INSERT_TAIL(&h->backlog, e, entry);
	h->st.backlog_events++;
	h->st.backlog_bytes += e->len;
	backlog_trim(h, h->lim.backlog_events, h->lim.backlog_bytes);
	return (seq);
}

uint64_t
sse_publish(struct sse_hub *h, const char *type, const char *data)
{
	return (sse_publish_seq(h, h->seq + 1, type, data));
}

void
sse_ping(struct sse_hub *h)
{
	static const char	 ping[] = ": ping\n\n";

	fan_out(h, ping, sizeof(ping) - 1);
}

int
sse_resumable(const struct sse_hub *h, const char *last, uint64_t *after)
{
	const struct sse_ev	*first;
	uint32_t		 stream;
	uint64_t		 seq;

	if (last == NULL || sse_parse_id(last, &stream, &seq) == -1 ||
	    stream != h->stream || h->stream == 0 || seq > h->seq)
		return (0);
	/* the client has everything, or the backlog holds what follows */
	first = TAILQ_FIRST(&h->backlog);
	if (seq != h->seq && (first == NULL || first->seq > seq + 1))
		return (0);
	*after = seq;
	return (1);
}

struct sse_sub *
sse_subscribe(struct sse_hub *h, void *arg, const char *last,
    const char *stype, const char *sdata)
{
	struct sse_sub	*s;
	struct sse_ev	*e;
	uint64_t	 after;
	char		 pre[32], id[32], *buf;
	size_t		 size;
	int		 n;

	if (h->st.subs >= h->lim.subs || (s = calloc(1, sizeof(*s))) == NULL)
		return (NULL);
	s->arg = arg;
	n = snprintf(pre, sizeof(pre), "retry: %d\n\n", SSE_RETRY_MS);
	if (h->ops->write(arg, pre, (size_t)n) == -1) {
		free(s);
		return (NULL);
	}
	if (sse_resumable(h, last, &after)) {
		h->st.resumed++;
		TAILQ_FOREACH(e, &h->backlog, entry)
			if (e->seq > after &&
			    h->ops->write(arg, e->text, e->len) == -1) {
				free(s);
				return (NULL);
			}
	} else if (stype != NULL) {
		h->st.snapshots++;
		sse_id(id, sizeof(id), h->stream, h->seq);
		size = strlen(id) + strlen(stype) + strlen(sdata) + 64;
		if ((buf = malloc(size)) == NULL) {
			free(s);
			return (NULL);
		}
		if ((n = sse_format(buf, size, h->stream != 0 ? id : NULL,
		    stype, sdata)) == -1 ||
		    h->ops->write(arg, buf, (size_t)n) == -1) {
			free(buf);
			free(s);
			return (NULL);
		}
		free(buf);
	}
	TAILQ_INSERT_TAIL(&h->subs, s, entry);
	h->st.subs++;
	return (s);
}

struct sse_sub *
sse_attach(struct sse_hub *h, void *arg)
{
	struct sse_sub	*s;

	if (h->st.subs >= h->lim.subs || (s = calloc(1, sizeof(*s))) == NULL)
		return (NULL);
	s->arg = arg;
	TAILQ_INSERT_TAIL(&h->subs, s, entry);
	h->st.subs++;
	return (s);
}

void
sse_unsubscribe(struct sse_hub *h, struct sse_sub *s)
{
	if (s == NULL)
		return;
	TAILQ_REMOVE(&h->subs, s, entry);
	h->st.subs--;
	free(s);
}

uint64_t
sse_last(const struct sse_hub *h)
{
	return (h->seq);
}

uint32_t
sse_stream(const struct sse_hub *h)
{
	return (h->stream);
}

void
sse_stats(const struct sse_hub *h, struct sse_stats *st)
{
	*st = h->st;
}
