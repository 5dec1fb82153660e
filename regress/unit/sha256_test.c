/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Unit tests for common/sha256.c: the vectors of FIPS 180-4's examples
 * (NIST's "abc", the two-block messages, a million "a"), lengths around
 * the padding's edges, any split of the input, the hex forms and the
 * comparison.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sha256.h"

static void
check_hex(const char *what, const uint8_t d[SHA256_LEN], const char *want)
{
	char	hex[SHA256_HEXLEN];

	sha256_hex(d, hex);
	ATF_CHECK_STREQ_MSG(hex, want, "%s", what);
}

static void
check_msg(const char *msg, const char *want)
{
	uint8_t	d[SHA256_LEN];

	sha256(msg, strlen(msg), d);
	check_hex(msg, d, want);
}

ATF_TC_WITHOUT_HEAD(fips_vectors);
ATF_TC_BODY(fips_vectors, tc)
{
	check_msg("",
	    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check_msg("abc",
	    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check_msg("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
	    "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	check_msg("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmn"
	    "hijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
	    "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

ATF_TC_WITHOUT_HEAD(million_a);
ATF_TC_BODY(million_a, tc)
{
	struct sha256	 s;
	uint8_t		 d[SHA256_LEN];
	char		 chunk[1000];
	int		 i;

	/* In pieces that are not a multiple of the block. */
	memset(chunk, 'a', sizeof(chunk));
	sha256_init(&s);
	for (i = 0; i < 1000; i++)
		sha256_update(&s, chunk, sizeof(chunk));
	sha256_final(&s, d);
	check_hex("a million a", d,
	    "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

/* 55 bytes leave room for the padding in the block, 56 do not; 64 and
 * 120 fill blocks exactly.  Digests from sha256sum(1). */
ATF_TC_WITHOUT_HEAD(padding_edges);
ATF_TC_BODY(padding_edges, tc)
{
	static const struct {
		size_t		 n;
		const char	*want;
	} v[] = {
	    { 55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318" },
	    { 56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a" },
	    { 63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34" },
	    { 64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb" },
	    { 65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0" },
	    { 119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb" },
	    { 120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c" },
	};
	uint8_t		 d[SHA256_LEN];
	char		 msg[128], what[32];
	size_t		 i;

	memset(msg, 'a', sizeof(msg));
	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		sha256(msg, v[i].n, d);
		(void)snprintf(what, sizeof(what), "%zu a", v[i].n);
		check_hex(what, d, v[i].want);
	}
}

/* Any two pieces, and byte by byte, give the digest of the whole. */
ATF_TC_WITHOUT_HEAD(splits);
ATF_TC_BODY(splits, tc)
{
	struct sha256	 s;
	uint8_t		 msg[200], whole[SHA256_LEN], d[SHA256_LEN];
	size_t		 i, cut;

	for (i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7 + 3);
	sha256(msg, sizeof(msg), whole);
	for (cut = 0; cut <= sizeof(msg); cut++) {
		sha256_init(&s);
		sha256_update(&s, msg, cut);
		sha256_update(&s, msg + cut, sizeof(msg) - cut);
		sha256_final(&s, d);
		ATF_CHECK_MSG(memcmp(d, whole, sizeof(d)) == 0, "cut at %zu",
		    cut);
	}
	sha256_init(&s);
	for (i = 0; i < sizeof(msg); i++)
		sha256_update(&s, msg + i, 1);
	sha256_final(&s, d);
	ATF_CHECK(memcmp(d, whole, sizeof(d)) == 0);
}

ATF_TC_WITHOUT_HEAD(hex);
ATF_TC_BODY(hex, tc)
{
	static const char	*bad[] = {
		"",
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a",
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad0",
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ag",
		"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f2001 ad",
		"0xa7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015a",
	};
	uint8_t		 d[SHA256_LEN], abc[SHA256_LEN];
	size_t		 i;

	sha256("abc", 3, abc);
	ATF_REQUIRE(sha256_unhex("BA7816BF8F01CFEA414140DE5DAE2223B00361A3"
	    "96177A9CB410FF61F20015AD", d) == 0);
	ATF_CHECK(memcmp(d, abc, sizeof(d)) == 0);
	ATF_REQUIRE(sha256_unhex("ba7816bf8f01cfea414140de5dae2223b00361a3"
	    "96177a9cb410ff61f20015ad", d) == 0);
	ATF_CHECK(memcmp(d, abc, sizeof(d)) == 0);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ATF_CHECK_MSG(sha256_unhex(bad[i], d) == -1, "\"%s\"", bad[i]);
}

/* Equal only when every byte is, wherever the first difference is. */
ATF_TC_WITHOUT_HEAD(equal);
ATF_TC_BODY(equal, tc)
{
	uint8_t	a[SHA256_LEN], b[SHA256_LEN];
	int	i, bit;

	sha256("abc", 3, a);
	memcpy(b, a, sizeof(b));
	ATF_CHECK(sha256_equal(a, b));
	for (i = 0; i < SHA256_LEN; i++)
		for (bit = 0; bit < 8; bit++) {
			b[i] ^= 1 << bit;
			ATF_CHECK_MSG(!sha256_equal(a, b), "byte %d bit %d", i,
			    bit);
			b[i] ^= 1 << bit;
		}
	ATF_CHECK(sha256_equal(a, b));
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, fips_vectors);
	ATF_TP_ADD_TC(tp, million_a);
	ATF_TP_ADD_TC(tp, padding_edges);
	ATF_TP_ADD_TC(tp, splits);
	ATF_TP_ADD_TC(tp, hex);
	ATF_TP_ADD_TC(tp, equal);
	return (0);
}
