/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * sse.c: the fan-out of server-sent events (console/EVENTS.md).  A hub
 * numbers what is published ("STREAM.SEQ" ids, or bare SEQ for a hub
 * with no stream), keeps a backlog bounded in count and bytes, resumes a
 * subscriber from a Last-Event-ID the backlog still covers or gives it a
 * snapshot, and writes each event to every subscriber, dropping one
 * whose unsent output would go over its bound.  It is pure: the writes,
 * the queue sizes and the drops go through struct sse_ops, so that the
 * unit tests drive it without sockets.
 */
#ifndef AGENCY_SSE_H
#define AGENCY_SSE_H

#include <stddef.h>
#include <stdint.h>

#define SSE_RETRY_MS		2000	/* the "retry:" a subscriber gets */
#define SSE_TYPE_MAX		32	/* bytes of an event type, NUL in */

struct sse_hub;
struct sse_sub;

struct sse_ops {
	/* Queue bytes for the subscriber's client: 0, or -1 when it is
	 * gone (the hub then drops it). */
	int	 (*write)(void *, const void *, size_t);
	/* Bytes queued for the client and not yet sent. */
	size_t	 (*queued)(void *);
	/* The subscriber fell behind or is gone: the hub has forgotten it;
	 * close its connection (never call the hub from here). */
	void	 (*drop)(void *);
};

struct sse_limits {
	size_t		 backlog_events;	/* 0: no backlog */
	size_t		 backlog_bytes;
	size_t		 sub_queued;	/* a subscriber's unsent bytes */
	size_t		 subs;		/* subscribers at once */
};

struct sse_stats {
	size_t		 subs;		/* now */
	size_t		 backlog_events;
	size_t		 backlog_bytes;
	uint64_t	 published;
	uint64_t	 dropped;	/* fell behind */
	uint64_t	 resumed;	/* from the backlog */
	uint64_t	 snapshots;
};

/*
 * A hub; stream is its random part of the ids, 0 for bare sequence
 * numbers (which the publisher then gives).  NULL when out of memory.
 */
struct sse_hub	*sse_hub_new(const struct sse_ops *, uint32_t,
		    const struct sse_limits *);
/* Drop every subscriber (ops->drop) and free the hub. */
void		 sse_hub_free(struct sse_hub *);

/*
 * The event, numbered next (or seq, for a hub with no stream, which
 * must grow), to the backlog and to every subscriber.  data is one line
 * of JSON.  Returns its sequence number, or 0 when it could not be
 * formatted (a type or data with a line break, or out of memory).
 */
uint64_t	 sse_publish(struct sse_hub *, const char *, const char *);
uint64_t	 sse_publish_seq(struct sse_hub *, uint64_t, const char *,
		    const char *);
/* A comment line to every subscriber, that keeps idle streams alive. */
void		 sse_ping(struct sse_hub *);

/*
 * Whether a Last-Event-ID (NULL: none) can be resumed from the backlog:
 * 1 with *after the last sequence number the client has, else 0.
 */
int		 sse_resumable(const struct sse_hub *, const char *,
		    uint64_t *);

/*
 * A new subscriber: "retry:", then the events after last_id when the
 * backlog covers it, else the snapshot (type and one line of JSON, given
 * by the caller, which may be NULL for none) numbered as the last event
 * published.  NULL when the hub is full or the first writes failed
 * (nothing to undo: the caller answers the client).
 */
struct sse_sub	*sse_subscribe(struct sse_hub *, void *, const char *,
		    const char *, const char *);
/* A subscriber that was given what it needs by the caller: nothing is
 * written now.  NULL when the hub is full or out of memory. */
struct sse_sub	*sse_attach(struct sse_hub *, void *);
/* Forget a subscriber (its client went away); no ops->drop. */
void		 sse_unsubscribe(struct sse_hub *, struct sse_sub *);

uint64_t	 sse_last(const struct sse_hub *);
uint32_t	 sse_stream(const struct sse_hub *);
void		 sse_stats(const struct sse_hub *, struct sse_stats *);

/*
 * Format an event into buf: "id: ID\nevent: TYPE\ndata: DATA\n\n", the
 * id left out when id is NULL.  The length, or -1 when it does not fit
 * or type, id or data holds a line break (or type is empty).
 */
int		 sse_format(char *, size_t, const char *, const char *,
		    const char *);
/* "STREAM.SEQ" (8 hex digits, a dot, decimal) or, with stream 0, "SEQ"
 * into buf (at least 32 bytes). */
void		 sse_id(char *, size_t, uint32_t, uint64_t);
/* The parts of such an id: 0, or -1 when it is not one. */
int		 sse_parse_id(const char *, uint32_t *, uint64_t *);

#endif /* AGENCY_SSE_H */
