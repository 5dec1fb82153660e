/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The files that hold secrets, read for parse.y: API keys (only their
 * SHA-256 is kept) and TLS certificates with their private keys, which
 * must match, be in date, and (the keys) be readable by agencyd's user
 * alone.  A certificate is parsed here with libcrypto only to check it;
 * agency-proxy gets the bytes and hands them to libtls.
 *
 * Calls: common/config.c, common/sha256.c.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "agencyd.h"
#include "sha256.h"

#define CERT_FILE_MAX	(1024 * 1024)	/* a certificate chain */
#define KEY_FILE_MAX	(64 * 1024)	/* a private key */
#define SECRET_FILE_MAX	4096		/* an API key, and a newline */

/*
 * A whole file into *buf (NUL-terminated, not counted in *len).  A
 * secret one must be a file of agencyd's user that neither its group
 * nor others may use at all, as ssh wants its private keys.  0, or -1
 * with why said.
 */
static int
file_read(const char *path, size_t max, int secret, uint8_t **buf,
    size_t *len, char *why, size_t whylen)
{
	struct stat	 st;
	uint8_t		*b = NULL;
	size_t		 n = 0;
	ssize_t		 r;
	int		 fd;

	*buf = NULL;
	*len = 0;
	/* Non-blocking, so that a FIFO cannot hang agencyd. */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY |
	    O_CLOEXEC)) == -1) {
		(void)strlcpy(why, strerror(errno), whylen);
		return (-1);
	}
	if (fstat(fd, &st) == -1) {
		(void)strlcpy(why, strerror(errno), whylen);
		goto fail;
	}
	if (!S_ISREG(st.st_mode)) {
		(void)strlcpy(why, "not a regular file", whylen);
		goto fail;
	}
	if (secret && st.st_uid != geteuid()) {
		(void)snprintf(why, whylen, "owned by uid %lu, not by %s",
		    (unsigned long)st.st_uid, geteuid() == 0 ? "root" :
		    "the user agencyd runs as");
		goto fail;
	}
	if (secret && (st.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
		(void)snprintf(why, whylen, "%s (mode %04o): make it 0600",
		    (st.st_mode & S_IROTH) ? "readable by others" :
		    (st.st_mode & S_IRGRP) ? "readable by its group" :
		    "open to its group or others",
		    (unsigned int)(st.st_mode & 07777));
		goto fail;
	}
	if (st.st_size < 0 || (uintmax_t)st.st_size > max) {
		(void)snprintf(why, whylen, "larger than %zu bytes", max);
		goto fail;
	}
	if ((b = malloc(max + 1)) == NULL) {
		(void)strlcpy(why, strerror(errno), whylen);
		goto fail;
	}
	/* Read to the end: the size may have changed since fstat. */
	for (;;) {
		if ((r = read(fd, b + n, max + 1 - n)) == -1) {
			if (errno == EINTR)
				continue;
			(void)strlcpy(why, strerror(errno), whylen);
			goto fail;
		}
		if (r == 0)
			break;
		n += r;
		if (n > max) {
			(void)snprintf(why, whylen, "larger than %zu bytes",
			    max);
			goto fail;
		}
	}
	close(fd);
	b[n] = '\0';
	*buf = b;
	*len = n;
	return (0);
 fail:
	freezero(b, max + 1);
	close(fd);
	return (-1);
}

/* Whether s, of len bytes, may be an API key: 0, or -1 with why said. */
int
secret_ok(const char *s, size_t len, char *why, size_t whylen)
{
	size_t	i;

	if (len < AGENCY_SECRET_MIN || len > AGENCY_SECRET_MAX) {
		(void)snprintf(why, whylen, "the key is %zu bytes long, not "
		    "%d to %d", len, AGENCY_SECRET_MIN, AGENCY_SECRET_MAX);
		return (-1);
	}
	for (i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] >= 0x7f) {
			(void)snprintf(why, whylen, "the key holds a byte "
			    "that is not printable ASCII (at %zu)", i);
			return (-1);
		}
	return (0);
}

/*
 * An API key from its file: the first line, without its line end and
 * without trailing blanks, into its SHA-256.  0, or -1 with why said.
 */
int
secret_file_digest(const char *path, uint8_t digest[AGENCY_DIGEST_LEN],
    char *why, size_t whylen)
{
	uint8_t	*buf;
	size_t	 len, n;
	int	 ret = -1;

	if (file_read(path, SECRET_FILE_MAX, 1, &buf, &len, why,
	    whylen) == -1)
		return (-1);
	if (memchr(buf, '\0', len) != NULL) {
		(void)strlcpy(why, "a NUL byte in it", whylen);
		goto done;
	}
	n = strcspn((char *)buf, "\r\n");
	if (buf[n] != '\0' && buf[n + strspn((char *)buf + n, "\r\n \t")] !=
	    '\0') {
		(void)strlcpy(why, "more than one line", whylen);
		goto done;
	}
	while (n > 0 && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		n--;
	if (secret_ok((char *)buf, n, why, whylen) == -1)
		goto done;
	sha256(buf, n, digest);
	ret = 0;
 done:
	freezero(buf, len + 1);
	return (ret);
}

/* No passphrase: an encrypted key is refused, never asked for. */
static int
no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return (0);
}

static void
asn1_date(const ASN1_TIME *t, char *buf, size_t len)
{
	struct tm	tm;

	memset(&tm, 0, sizeof(tm));
	if (ASN1_TIME_to_tm(t, &tm) != 1 ||
	    strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		(void)strlcpy(buf, "an unreadable date", len);
}

/*
 * Read a certificate and its key into tf, and check that the first
 * certificate in the file is in date and that the key is its own.
 * 0, or -1 with why said and *bad_key set when the key is at fault.
 */
int
tls_files_read(struct tls_files *tf, char *why, size_t whylen, int *bad_key)
{
	X509		*x = NULL;
	EVP_PKEY	*pk = NULL;
	BIO		*bio = NULL;
	char		 date[64];
	int		 ret = -1;

	tls_files_clear(tf);
	*bad_key = 0;
	if (file_read(tf->cert, CERT_FILE_MAX, 0, &tf->cert_pem,
	    &tf->cert_len, why, whylen) == -1)
		goto done;
	if ((bio = BIO_new_mem_buf(tf->cert_pem, (int)tf->cert_len)) == NULL ||
	    (x = PEM_read_bio_X509(bio, NULL, no_passphrase, NULL)) == NULL) {
		(void)strlcpy(why, "no PEM certificate in it", whylen);
		goto done;
	}
	BIO_free(bio);
	bio = NULL;
	if (X509_cmp_current_time(X509_get0_notAfter(x)) <= 0) {
		asn1_date(X509_get0_notAfter(x), date, sizeof(date));
		(void)snprintf(why, whylen, "expired on %s", date);
		goto done;
	}
	if (X509_cmp_current_time(X509_get0_notBefore(x)) >= 0) {
		asn1_date(X509_get0_notBefore(x), date, sizeof(date));
		(void)snprintf(why, whylen, "not valid before %s", date);
		goto done;
	}

	*bad_key = 1;
	if (file_read(tf->key, KEY_FILE_MAX, 1, &tf->key_pem, &tf->key_len,
	    why, whylen) == -1)
		goto done;
	if ((bio = BIO_new_mem_buf(tf->key_pem, (int)tf->key_len)) == NULL ||
	    (pk = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase,
	    NULL)) == NULL) {
		(void)strlcpy(why, "no PEM private key without a passphrase "
		    "in it", whylen);
		goto done;
	}
	if (X509_check_private_key(x, pk) != 1) {
		(void)snprintf(why, whylen, "does not match tls certificate "
		    "\"%s\"", tf->cert);
		goto done;
	}
	ret = 0;
 done:
	BIO_free(bio);
	X509_free(x);
	EVP_PKEY_free(pk);
	ERR_clear_error();
	if (ret == -1)
		tls_files_clear(tf);
	return (ret);
}
