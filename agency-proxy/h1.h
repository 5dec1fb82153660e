/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * HTTP/1.x messages (RFC 9112): the request and status lines, the header
 * fields, and the framing they imply, parsed from bytes that came off a
 * socket; and the chunked transfer coding, decoded in place.  Pure
 * functions on memory: no allocation, no I/O.  The front door (conn.c)
 * parses its clients' requests with them, upstream.c the model servers'
 * answers.
 */
#ifndef AGENCY_H1_H
#define AGENCY_H1_H

#include <sys/types.h>

#include <stdint.h>

#define H1_MAX_HEADERS	100

struct h1_header {
	const char	*name;		/* into the parsed buffer */
	size_t		 namelen;
	const char	*value;		/* without surrounding spaces */
	size_t		 valuelen;
};

struct h1_msg {
	/* request line */
	const char	*method;
	size_t		 methodlen;
	const char	*target;
	size_t		 targetlen;
	/* status line */
	int		 status;	/* 100-999 */
	const char	*reason;
	size_t		 reasonlen;

	int		 minor;		/* HTTP/1.minor: 0 or 1 */
	struct h1_header headers[H1_MAX_HEADERS];
	size_t		 nheaders;

	/* what the fields say of the framing */
	int64_t		 content_length;	/* -1: none */
	int		 ncontent_length;	/* fields seen */
	int		 chunked;	/* Transfer-Encoding ends in chunked */
	int		 te;		/* a Transfer-Encoding field was seen */
	int		 keepalive;	/* by version and Connection */
	int		 expect_continue;	/* Expect: 100-continue */
};

/*
 * Parse the header block at the start of buf (len bytes), at most max
 * bytes long.  Returns the length of the block, the empty line included
 * (> 0); 0 when it is not complete yet (and len < max: at len == max
 * an incomplete block is already known to be too long); or a negated
 * HTTP status for the client:
 *   -400  malformed (see h1.c for each rule)
 *   -431  the block is longer than max, or has over H1_MAX_HEADERS fields
 *   -501  a request Transfer-Encoding other than chunked
 *   -505  a version other than HTTP/1.0 and HTTP/1.1
 * On success every pointer of m points into buf.
 */
int		 h1_parse_request(const char *, size_t, size_t, struct h1_msg *);
int		 h1_parse_response(const char *, size_t, size_t, struct h1_msg *);

/* The first field of that name (case-insensitive), or NULL. */
const struct h1_header *h1_find(const struct h1_msg *, const char *);

/* Whether a comma-separated field value lists token (case-insensitive). */
int		 h1_has_token(const char *, size_t, const char *);

/* Whether a field (its name, of len bytes) is one a proxy never passes
 * on, either way (RFC 9110 7.6.1), or one it sets itself (Host, the
 * framing, Expect). */
int		 h1_hop(const char *, size_t);

/* The chunked transfer coding, decoded in place. */
struct h1_chunked {
	int		 state;
	uint64_t	 left;		/* of the current chunk's data */
	size_t		 linelen;	/* of a size or trailer line so far */
	int		 digits;
};

void		 h1_chunked_init(struct h1_chunked *);

/*
 * Decode buf[0..len): the data of the chunks is moved to the front of
 * buf, its length put in *datalen.  Returns the number of input bytes
 * used: all of them, unless the last chunk and its trailer section ended
 * inside buf, in which case *done is set and what follows belongs to the
 * next message.  Returns -1 on a framing error (a bad size line, a size
 * over 2^62, a missing CRLF after a chunk's data, a size or trailer line
 * over 4096 bytes).  State carries across calls, so input may be split
 * anywhere.
 */
ssize_t		 h1_chunked_decode(struct h1_chunked *, char *, size_t,
		    size_t *, int *);

#endif /* AGENCY_H1_H */
