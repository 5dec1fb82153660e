/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * TLS for the front door's connections, with libtls: a listener's server
 * context (TLS 1.2 and 1.3, ALPN http/1.1, the certificate and key from
 * memory: the proxy opens no file), a connection's context from it (the
 * handshake comes with its first reads), and its reads, writes and close.
 * A connection's context outlives its listener's, so a reload gives new
 * connections the new certificate and leaves the others as they are.
 *
 * The only file of the proxy that calls libtls.
 *
 * Calls: common/log.c.
 */
#include <sys/types.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <tls.h>

#include "log.h"
#include "proxy.h"

/*
 * Before the privilege drop: libtls and the library under it read their
 * configuration now, while there are files to read.
 */
void
conn_tls_init(void)
{
	if (tls_init() == -1)
		fatalx("tls_init failed");
}

/*
 * A TLS server context for a certificate chain and its key (PEM, in
 * memory): TLS 1.2 and 1.3, ALPN http/1.1.  NULL with why said if
 * libtls refuses them.
 */
void *
conn_tls_server(const uint8_t *cert, size_t certlen, const uint8_t *key,
    size_t keylen, char *why, size_t whylen)
{
	struct tls_config	*cfg;
	struct tls		*ctx = NULL;

	if ((cfg = tls_config_new()) == NULL) {
		(void)strlcpy(why, "tls_config_new failed", whylen);
		return (NULL);
	}
	if (tls_config_set_protocols(cfg, TLS_PROTOCOL_TLSv1_2 |
	    TLS_PROTOCOL_TLSv1_3) == -1 ||
	    tls_config_set_alpn(cfg, "http/1.1") == -1 ||
	    tls_config_set_keypair_mem(cfg, cert, certlen, key, keylen) == -1) {
		(void)strlcpy(why, tls_config_error(cfg), whylen);
		goto done;
	}
	if ((ctx = tls_server()) == NULL) {
		(void)strlcpy(why, "tls_server failed", whylen);
		goto done;
	}
	if (tls_configure(ctx, cfg) == -1) {
		(void)strlcpy(why, tls_error(ctx), whylen);
		tls_free(ctx);
		ctx = NULL;
	}
 done:
	/* the context keeps what it needs; the key's copy goes */
	tls_config_clear_keys(cfg);
	tls_config_free(cfg);
	return (ctx);
}

/* A server's or a connection's context; NULL is none. */
void
conn_tls_free(void *ctx)
{
	tls_free(ctx);
}

/* The context of a connection accepted on fd by a server's; NULL, said
 * in the log, when libtls refuses it. */
struct tls *
conn_tls_accept(void *server, int fd)
{
	struct tls	*ctx = NULL;

	if (tls_accept_socket(server, &ctx, fd) == -1) {
		log_warnx("%s: tls_accept_socket: %s", __func__,
		    tls_error(server));
		return (NULL);
	}
	return (ctx);
}

/*
 * A libtls result as read(2) and write(2) give theirs: -1 with EAGAIN
 * when it must wait, and *other set when it waits for the other event
 * than its own (the handshake's turn: a read that waits to write, a
 * write that waits to read).
 */
static ssize_t
io_tls(struct tls *ctx, ssize_t n, ssize_t otherwant, int *other)
{
	if (n == TLS_WANT_POLLIN || n == TLS_WANT_POLLOUT) {
		*other = n == otherwant;
		errno = EAGAIN;
		return (-1);
	}
	if (n == -1) {
		log_debug("%s: %s", __func__, tls_error(ctx));
		errno = EIO;
	}
	return (n);
}

/* Read at most len bytes: as read(2); *wantw set when the read waits
 * for the socket to be writable. */
ssize_t
conn_tls_read(struct tls *ctx, void *buf, size_t len, int *wantw)
{
	return (io_tls(ctx, tls_read(ctx, buf, len), TLS_WANT_POLLOUT,
	    wantw));
}

/* Write at most len bytes: as write(2); *wantr set when the write waits
 * for the socket to be readable. */
ssize_t
conn_tls_write(struct tls *ctx, const void *buf, size_t len, int *wantr)
{
	return (io_tls(ctx, tls_write(ctx, buf, len), TLS_WANT_POLLIN,
	    wantr));
}

/* TLS's own end (close_notify), if the socket takes it now. */
void
conn_tls_close(struct tls *ctx)
{
	(void)tls_close(ctx);
}
