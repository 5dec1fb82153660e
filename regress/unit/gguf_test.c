/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * gguf.c: the figures of GGUF headers, made here byte by byte (a
 * llama-shaped model, then each way a header can be wrong), and of the
 * real tiny models of ../shared/realserver where it is there.  Each
 * header is handed over in a buffer of its own size, without the
 * tensors' data, so that a read past it is caught (by ASan in the
 * sanitizer build) and the reader is seen to need none of the data.
 */
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include <atf-c.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sizing.h"
#include "gguf_build.h"

static int
figures(const struct gb *b, uint64_t fsize, struct sizing_figures *f,
    char *err)
{
	uint8_t	*copy;
	int	 r;

	/* Exactly the header: a read past it is a heap overflow. */
	ATF_REQUIRE((copy = malloc(b->len ? b->len : 1)) != NULL);
	memcpy(copy, b->p, b->len);
	r = gguf_figures(copy, b->len, fsize, f, err, SIZING_ERR_MAX);
	free(copy);
	return (r);
}

#define LL_LAYERS	3
#define LL_EMBD		256
#define LL_FF		512
#define LL_VOCAB	1000

/*
 * A llama-shaped model: 8 heads, 2 KV heads of 32, 3 layers of F16 and
 * Q8_0 matrices, F32 norms and embeddings; *per_layer gets each layer's
 * bytes, *in and *out the rest.  extra (may be NULL) adds pairs.
 */
static void
llama(struct gb *b, uint64_t *per_layer, uint64_t *in, uint64_t *out,
    uint32_t nextra, void (*extra)(struct gb *))
{
	char		 n[64];
	uint32_t	 i;
	uint64_t	 lb;

	gb_head(b, 3, 2 + 2 * LL_LAYERS + 1, 7 + nextra);
	kv_str(b, "general.architecture", "llama");
	kv_str(b, "general.name", "crafted");
	kv_u32(b, "llama.block_count", LL_LAYERS);
	kv_u32(b, "llama.context_length", 4096);
	kv_u32(b, "llama.embedding_length", LL_EMBD);
	kv_u32(b, "llama.attention.head_count", 8);
	kv_u32(b, "llama.attention.head_count_kv", 2);
	if (extra != NULL)
		extra(b);
	*in = tensor(b, "token_embd.weight", LL_EMBD, LL_VOCAB, T_F32);
	*out = tensor(b, "output_norm.weight", LL_EMBD, 1, T_F32);
	for (i = 0; i < LL_LAYERS; i++) {
		snprintf(n, sizeof(n), "blk.%u.attn_q.weight", i);
		lb = tensor(b, n, LL_EMBD, LL_EMBD, T_F16);
		snprintf(n, sizeof(n), "blk.%u.ffn_up.weight", i);
		lb += tensor(b, n, LL_EMBD, LL_FF, T_Q8_0);
		per_layer[i] = lb;
	}
	*out += tensor(b, "output.weight", LL_EMBD, LL_VOCAB, T_Q4_0);
}

ATF_TC_WITHOUT_HEAD(crafted);
ATF_TC_BODY(crafted, tc)
{
	struct gb		 b;
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];
	uint64_t		 pl[LL_LAYERS], in, out;
	uint32_t		 i;

	llama(&b, pl, &in, &out, 0, NULL);
	ATF_REQUIRE_MSG(figures(&b, filesize(&b), &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.format, SIZING_GGUF);
	ATF_CHECK_STREQ(f.arch, "llama");
	ATF_CHECK_EQ(f.layers, LL_LAYERS);
	ATF_CHECK_EQ(f.ctx_train, 4096);
	ATF_CHECK_EQ(f.embd, LL_EMBD);
	ATF_CHECK_EQ(f.heads, 8);
	ATF_CHECK_EQ(f.heads_kv, 2);
	ATF_CHECK_EQ(f.key_len, LL_EMBD / 8);
	ATF_CHECK_EQ(f.value_len, LL_EMBD / 8);
	ATF_CHECK_EQ(f.tensors, 2 + 2 * LL_LAYERS + 1);
	ATF_CHECK_EQ(f.weights_in, (uint64_t)LL_EMBD * LL_VOCAB * 4);
	ATF_CHECK_EQ(f.weights_out, in / LL_VOCAB + LL_EMBD / 32 * 18 *
	    LL_VOCAB);
	ATF_CHECK_EQ(f.weights_in, in);
	ATF_CHECK_EQ(f.weights_out, out);
	for (i = 0; i < LL_LAYERS; i++) {
		ATF_CHECK_EQ(f.layer[i].weights, pl[i]);
		ATF_CHECK_EQ(f.layer[i].weights, LL_EMBD * LL_EMBD * 2 +
		    LL_EMBD / 32 * 34 * LL_FF);
		/* 2 KV heads of 256 / 8 */
		ATF_CHECK_EQ(f.layer[i].k_width, 64);
		ATF_CHECK_EQ(f.layer[i].v_width, 64);
		ATF_CHECK_EQ(f.layer[i].swa, 0);
	}
	ATF_CHECK_EQ(f.layer[LL_LAYERS].weights, 0);
	ATF_CHECK_EQ(sizing_check(&f, err, sizeof(err)), 0);
	free(b.p);
}

static void
extra_shape(struct gb *b)
{
	static const uint32_t	 kv[LL_LAYERS] = { 4, 0, 2 };

	kv_u32(b, "llama.attention.key_length", 48);
	kv_u32(b, "llama.attention.value_length", 40);
	kv_u32(b, "llama.attention.sliding_window", 1024);
	kv_u32(b, "llama.feed_forward_length", LL_FF);
	kv_u32(b, "llama.expert_count", 8);
	kv_u32(b, "llama.expert_used_count", 2);
	kv_u32(b, "llama.expert_feed_forward_length", 400);
	kv_str(b, "llama.unrelated", "ignored");
	kv_arr_u32(b, "llama.attention.head_count_kv_unused", LL_LAYERS, kv);
}

static void
extra_pattern(struct gb *b)
{
	static const uint32_t	 kv[LL_LAYERS] = { 4, 0, 2 };
	static const uint32_t	 swa[LL_LAYERS] = { 1, 0, 1 };

	extra_shape(b);
	kv_arr_u32(b, "llama.attention.sliding_window_pattern", LL_LAYERS,
	    swa);
	kv_u32(b, "llama.attention.key_length_swa", 16);
	kv_arr_u32(b, "llama.attention.head_count_kv", LL_LAYERS, kv);
}

/* Per-layer KV heads, head lengths, sliding layers, experts. */
ATF_TC_WITHOUT_HEAD(shape);
ATF_TC_BODY(shape, tc)
{
	struct gb		 b;
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];
	uint64_t		 pl[LL_LAYERS], in, out;
	uint8_t			*p;

	/* head_count_kv is given twice here: the second is an array. */
	llama(&b, pl, &in, &out, 12, extra_pattern);
	ATF_CHECK_EQ(figures(&b, filesize(&b), &f, err), -1);
	ATF_CHECK_MATCH("head_count_kv given twice", err);
	free(b.p);

	/* Without the scalar: rename it, same length. */
	llama(&b, pl, &in, &out, 12, extra_pattern);
	ATF_REQUIRE((p = memmem(b.p, b.len, "llama.attention.head_count_kv",
	    29)) != NULL);
	memcpy(p, "llama.attention.head_count_kX", 29);
	ATF_REQUIRE_MSG(figures(&b, filesize(&b), &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.key_len, 48);
	ATF_CHECK_EQ(f.value_len, 40);
	ATF_CHECK_EQ(f.swa_window, 1024);
	ATF_CHECK_EQ(f.heads_kv, 4);
	/* MoE: 2 experts of 400 a token is wider than the dense 512 */
	ATF_CHECK_EQ(f.ff, 800);
	ATF_CHECK_EQ(f.layer[0].swa, 1);
	ATF_CHECK_EQ(f.layer[0].k_width, 16 * 4);	/* key_length_swa */
	ATF_CHECK_EQ(f.layer[0].v_width, 40 * 4);
	ATF_CHECK_EQ(f.layer[1].swa, 0);
	ATF_CHECK_EQ(f.layer[1].k_width, 0);		/* no KV heads */
	ATF_CHECK_EQ(f.layer[2].swa, 1);
	ATF_CHECK_EQ(f.layer[2].k_width, 16 * 2);
	ATF_CHECK_EQ(f.layer[2].v_width, 40 * 2);
	free(b.p);
}

static void
extra_gemma(struct gb *b)
{
	kv_u32(b, "gemma3.attention.sliding_window", 512);
}

/* llama.cpp's own pattern where the file has none: gemma3's 5 of 6. */
ATF_TC_WITHOUT_HEAD(swa_period);
ATF_TC_BODY(swa_period, tc)
{
	struct gb		 b;
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];
	uint8_t			*p;
	uint32_t		 i;

	gb_head(&b, 3, 0, 6);
	kv_str(&b, "general.architecture", "gemma3");
	kv_u32(&b, "gemma3.block_count", 12);
	kv_u32(&b, "gemma3.embedding_length", 64);
	kv_u32(&b, "gemma3.attention.head_count", 4);
	kv_u32(&b, "gemma3.attention.head_count_kv", 1);
	extra_gemma(&b);
	ATF_REQUIRE_MSG(figures(&b, filesize(&b), &f, err) == 0, "%s", err);
	for (i = 0; i < 12; i++)
		ATF_CHECK_EQ_MSG(f.layer[i].swa, i % 6 != 5, "layer %u", i);
	/* No window: no layer slides, whatever the architecture. */
	ATF_REQUIRE((p = memmem(b.p, b.len, "gemma3.attention.sliding_window",
	    31)) != NULL);
	memcpy(p, "gemma3.attention.sliding_windoX", 31);
	ATF_REQUIRE_MSG(figures(&b, filesize(&b), &f, err) == 0, "%s", err);
	for (i = 0; i < 12; i++)
		ATF_CHECK_EQ(f.layer[i].swa, 0);
	free(b.p);
}

/* Every prefix of a header is refused with a message, and none is read
 * past. */
ATF_TC_WITHOUT_HEAD(truncated);
ATF_TC_BODY(truncated, tc)
{
	struct gb		 b;
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];
	uint64_t		 pl[LL_LAYERS], in, out;
	size_t			 n, full;

	llama(&b, pl, &in, &out, 0, NULL);
	full = b.len;
	for (n = 0; n < full; n++) {
		b.len = n;
		err[0] = '\0';
		ATF_REQUIRE_EQ_MSG(figures(&b, filesize(&b) + full, &f, err),
		    -1, "a prefix of %zu bytes was read", n);
		ATF_REQUIRE_MSG(err[0] != '\0', "no message at %zu", n);
	}
	b.len = full;
	ATF_CHECK_EQ(figures(&b, filesize(&b), &f, err), 0);
	/* The data is not there: the file is too short for it. */
	ATF_CHECK_EQ(figures(&b, filesize(&b) - 1, &f, err), -1);
	ATF_CHECK_MATCH("past the end of the file", err);
	free(b.p);
}

/* Counts and lengths that cannot be. */
ATF_TC_WITHOUT_HEAD(huge_counts);
ATF_TC_BODY(huge_counts, tc)
{
	struct gb		 b;
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];
	uint64_t		 pl[LL_LAYERS], in, out, last;

	gb_head(&b, 3, UINT64_MAX, 1);
	kv_str(&b, "general.architecture", "llama");
	ATF_CHECK_EQ(figures(&b, 1 << 20, &f, err), -1);
	ATF_CHECK_MATCH("tensors cannot fit", err);
	free(b.p);

	gb_head(&b, 3, 0, 1ULL << 62);
	kv_str(&b, "general.architecture", "llama");
	ATF_CHECK_EQ(figures(&b, 1 << 20, &f, err), -1);
	ATF_CHECK_MATCH("key-value pairs cannot fit", err);
	free(b.p);

	/* A key of 2^64 - 1 bytes. */
	gb_head(&b, 3, 0, 1);
	gb_u64(&b, UINT64_MAX);
	gb_bytes(&b, "general.architecture", 20);
	ATF_CHECK_EQ(figures(&b, 1 << 20, &f, err), -1);
	ATF_CHECK_MATCH("truncated", err);
	free(b.p);

	/* Arrays longer than the file, of strings and of numbers. */
	gb_head(&b, 3, 0, 2);
	kv_str(&b, "general.architecture", "llama");
	gb_str(&b, "tokenizer.ggml.tokens");
	gb_u32(&b, V_ARRAY);
	gb_u32(&b, V_STRING);
	gb_u64(&b, 1ULL << 61);
	ATF_CHECK_EQ(figures(&b, 1 << 20, &f, err), -1);
	ATF_CHECK_MATCH("array of .* strings is longer", err);
	free(b.p);
	gb_head(&b, 3, 0, 2);
	kv_str(&b, "general.architecture", "llama");
	gb_str(&b, "llama.attention.head_count");
	gb_u32(&b, V_ARRAY);
	gb_u32(&b, V_U64);
	gb_u64(&b, UINT64_MAX / 4);
	ATF_CHECK_EQ(figures(&b, 1 << 20, &f, err), -1);
	ATF_CHECK_MATCH("array of .* values is longer", err);
	free(b.p);

	/* A tensor whose shape overflows, and one larger than the file. */
	llama(&b, pl, &in, &out, 0, NULL);
	last = b.data - (out - LL_EMBD * 4 + 31) / 32 * 32;
	b.len -= 4 + 8 + 8 + 8 + 4 + 8 + strlen("output.weight");
	gb_str(&b, "output.weight");
	gb_u32(&b, 2);
	gb_u64(&b, 1ULL << 40);
	gb_u64(&b, 1ULL << 40);
	gb_u32(&b, T_F32);
	gb_u64(&b, b.data);
	ATF_CHECK_EQ(figures(&b, filesize(&b) + (1ULL << 30), &f, err), -1);
	ATF_CHECK_MATCH("larger than the file", err);
	b.len -= 4 + 8 + 8 + 8 + 4 + 8 + strlen("output.weight");
	gb_str(&b, "output.weight");
	gb_u32(&b, 2);
	gb_u64(&b, 1024);
	gb_u64(&b, 1024);
	gb_u32(&b, T_F32);
	gb_u64(&b, last);
	/* One byte short of its end. */
	ATF_CHECK_EQ(figures(&b, last + 4 * 1024 * 1024 - 1, &f, err), -1);
	ATF_CHECK_MATCH("ends past the end of the file", err);

	/* Bytes that wrap around when padded to the alignment. */
	b.len -= 4 + 8 + 8 + 8 + 4 + 8 + strlen("output.weight");
	gb_str(&b, "output.weight");
	gb_u32(&b, 2);
	gb_u64(&b, UINT64_MAX - 15);
	gb_u64(&b, 1);
	gb_u32(&b, 24);		/* i8: a byte an element */
	gb_u64(&b, last);
	ATF_CHECK_EQ(figures(&b, filesize(&b), &f, err), -1);
	ATF_CHECK_MATCH("larger than the file", err);

	/* Five dimensions. */
	b.len -= 4 + 8 + 8 + 8 + 4 + 8 + strlen("output.weight");
	gb_str(&b, "output.weight");
	gb_u32(&b, 5);
	ATF_CHECK_EQ(figures(&b, filesize(&b), &f, err), -1);
	ATF_CHECK_MATCH("5 dimensions", err);
	free(b.p);

	/* More layers than llama.cpp allows. */
	gb_head(&b, 3, 0, 3);
	kv_str(&b, "general.architecture", "llama");
	kv_u32(&b, "llama.block_count", SIZING_LAYERS_MAX + 1);
	kv_u32(&b, "llama.attention.head_count", 8);
	ATF_CHECK_EQ(figures(&b, 1 << 20, &f, err), -1);
	ATF_CHECK_MATCH("block_count is 513, more than 512", err);
	free(b.p);
}

/* A header with one pair, value type vt, bytes v of vlen. */
static void
one_pair(struct gb *b, const char *key, uint32_t vt, const void *v,
    size_t vlen)
{
	gb_head(b, 3, 0, 4);
	kv_str(b, "general.architecture", "llama");
	kv_u32(b, "llama.attention.head_count", 8);
	if (strcmp(key, "llama.block_count") != 0)
		kv_u32(b, "llama.block_count", 2);
	else
		kv_str(b, "general.name", "x");
	gb_str(b, key);
	gb_u32(b, vt);
	gb_bytes(b, v, vlen);
}

static void
refused(const char *key, uint32_t vt, const void *v, size_t vlen,
    const char *why)
{
	struct gb		 b;
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];

	one_pair(&b, key, vt, v, vlen);
	ATF_CHECK_EQ_MSG(figures(&b, 1 << 20, &f, err), -1, "%s accepted",
	    key);
	ATF_CHECK_MATCH_MSG(why, err, "%s: \"%s\", not \"%s\"", key, err,
	    why);
	free(b.p);
}

/* Values of the wrong type, sign or size. */
ATF_TC_WITHOUT_HEAD(wrong_types);
ATF_TC_BODY(wrong_types, tc)
{
	static const uint8_t	 str1[] = { 1, 0, 0, 0, 0, 0, 0, 0, '4' };
	static const uint8_t	 neg[] = { 0xff, 0xff, 0xff, 0xff };
	static const uint8_t	 f32[] = { 0, 0, 0x80, 0x3f };
	static const uint8_t	 three[] = { 3, 0, 0, 0 };
	static const uint8_t	 zero[] = { 0, 0, 0, 0 };
	static const uint8_t	 u64[] = { 32, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t	 nested[] = { V_ARRAY, 0, 0, 0, 1, 0, 0, 0,
	    0, 0, 0, 0 };
	static const uint8_t	 short_arr[] = { V_U32, 0, 0, 0, 1, 0, 0, 0,
	    0, 0, 0, 0, 8, 0, 0, 0 };
	static const uint8_t	 float_arr[] = { V_F32, 0, 0, 0, 2, 0, 0, 0,
	    0, 0, 0, 0, 0, 0, 0x80, 0x3f, 0, 0, 0x80, 0x3f };

	refused("llama.block_count", V_STRING, str1, sizeof(str1),
	    "block_count is not an integer");
	refused("llama.block_count", V_F32, f32, sizeof(f32),
	    "block_count is not an integer");
	refused("llama.block_count", V_I32, neg, sizeof(neg),
	    "block_count is negative");
	refused("llama.block_count", V_U32, zero, sizeof(zero), "no layers");
	refused("llama.context_length", V_I32, neg, sizeof(neg),
	    "context_length is negative");
	refused("general.alignment", V_U64, u64, sizeof(u64),
	    "alignment is not a u32");
	refused("general.alignment", V_U32, three, sizeof(three),
	    "not a power of two");
	refused("general.alignment", V_U32, zero, sizeof(zero),
	    "not a power of two");
	refused("llama.embedding_length", 13, zero, sizeof(zero),
	    "unknown value type 13");
	refused("llama.attention.head_count_kv", V_ARRAY, nested,
	    sizeof(nested), "array of arrays");
	refused("llama.attention.head_count_kv", V_ARRAY, short_arr,
	    sizeof(short_arr), "1 values for 2 layers");
	refused("llama.attention.head_count_kv", V_ARRAY, float_arr,
	    sizeof(float_arr), "not an array of integers");
	refused("general.architecture", V_STRING, str1, sizeof(str1),
	    "general.architecture given twice");
}

/* A tensor info as the llama() model's last one, but with these. */
static void
last_tensor(struct gb *b, uint32_t type, uint64_t ne0, uint64_t off)
{
	b->len -= 4 + 8 + 8 + 8 + 4 + 8 + strlen("output.weight");
	gb_str(b, "output.weight");
	gb_u32(b, 2);
	gb_u64(b, ne0);
	gb_u64(b, LL_VOCAB);
	gb_u32(b, type);
	gb_u64(b, off);
}

/* Where tensors lie: one after the other, aligned, none over another. */
ATF_TC_WITHOUT_HEAD(offsets);
ATF_TC_BODY(offsets, tc)
{
	struct gb		 b;
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];
	uint64_t		 pl[LL_LAYERS], in, out, last;

	llama(&b, pl, &in, &out, 0, NULL);
	/* The offset of the last tensor, as llama() laid it. */
	last = b.data - (out - LL_EMBD * 4 + 31) / 32 * 32;
	last_tensor(&b, T_Q4_0, LL_EMBD, last);
	ATF_REQUIRE_MSG(figures(&b, filesize(&b), &f, err) == 0, "%s", err);

	/* Over the tensor before it. */
	last_tensor(&b, T_Q4_0, LL_EMBD, last - 32);
	ATF_CHECK_EQ(figures(&b, filesize(&b), &f, err), -1);
	ATF_CHECK_MATCH("output.weight: at offset .*, not .* where the one "
	    "before it ends", err);
	/* At the very start, over the first. */
	last_tensor(&b, T_Q4_0, LL_EMBD, 0);
	ATF_CHECK_EQ(figures(&b, filesize(&b), &f, err), -1);
	/* After a gap, or not aligned. */
	last_tensor(&b, T_Q4_0, LL_EMBD, last + 32);
	ATF_CHECK_EQ(figures(&b, filesize(&b) + 32, &f, err), -1);
	last_tensor(&b, T_Q4_0, LL_EMBD, last + 1);
	ATF_CHECK_EQ(figures(&b, filesize(&b) + 32, &f, err), -1);
	/* An unknown type, a removed one, a row that is not whole blocks. */
	last_tensor(&b, 4, LL_EMBD, last);
	ATF_CHECK_EQ(figures(&b, filesize(&b), &f, err), -1);
	ATF_CHECK_MATCH("unknown type 4", err);
	last_tensor(&b, 1000, LL_EMBD, last);
	ATF_CHECK_EQ(figures(&b, filesize(&b), &f, err), -1);
	ATF_CHECK_MATCH("unknown type 1000", err);
	last_tensor(&b, T_Q4_0, LL_EMBD + 16, last);
	ATF_CHECK_EQ(figures(&b, filesize(&b) + LL_VOCAB * 18, &f, err), -1);
	ATF_CHECK_MATCH("not whole blocks of 32", err);
	free(b.p);
}

ATF_TC_WITHOUT_HEAD(not_gguf);
ATF_TC_BODY(not_gguf, tc)
{
	struct gb		 b;
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];

	gb_head(&b, 1, 0, 0);
	ATF_CHECK_EQ(figures(&b, b.len, &f, err), -1);
	ATF_CHECK_MATCH("version 1 is not supported", err);
	free(b.p);
	gb_head(&b, 3U << 24, 0, 0);
	ATF_CHECK_EQ(figures(&b, b.len, &f, err), -1);
	ATF_CHECK_MATCH("big-endian", err);
	free(b.p);
	gb_head(&b, 3, 0, 0);
	b.p[0] = 'g';
	ATF_CHECK_EQ(figures(&b, b.len, &f, err), -1);
	ATF_CHECK_MATCH("not a GGUF file", err);
	b.p[0] = 'G';
	ATF_CHECK_EQ(figures(&b, b.len, &f, err), -1);
	ATF_CHECK_MATCH("no general.architecture", err);
	/* The bytes given cannot be more than the file. */
	ATF_CHECK_EQ(figures(&b, b.len - 1, &f, err), -1);
	free(b.p);
}

/* Which tensors are a layer's: blk.N. with N a layer, written as
 * llama.cpp writes it; the rest are outside.  No head_count_kv: as many
 * KV heads as heads. */
ATF_TC_WITHOUT_HEAD(layer_names);
ATF_TC_BODY(layer_names, tc)
{
	static const char	*outside[] = { "blk.2.x", "blk.01.x", "blk.x",
	    "blkk.0.x", "blk.0", "blk..x", "blk.99999999999.x",
	    "token_embd.weight" };
	struct gb		 b;
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];
	size_t			 i, n = sizeof(outside) / sizeof(outside[0]);

	gb_head(&b, 3, 2 + n, 4);
	kv_str(&b, "general.architecture", "llama");
	kv_u32(&b, "llama.block_count", 2);
	kv_u32(&b, "llama.embedding_length", 64);
	kv_u32(&b, "llama.attention.head_count", 4);
	tensor(&b, "blk.0.attn_q.weight", 32, 2, T_F32);
	tensor(&b, "blk.1.attn_q.weight", 32, 3, T_F32);
	for (i = 0; i < n; i++)
		tensor(&b, outside[i], 32, 1, T_F32);
	ATF_REQUIRE_MSG(figures(&b, filesize(&b), &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.layer[0].weights, 32 * 2 * 4);
	ATF_CHECK_EQ(f.layer[1].weights, 32 * 3 * 4);
	ATF_CHECK_EQ(f.layer[2].weights, 0);
	ATF_CHECK_EQ(f.weights_in, n * 32 * 4);
	ATF_CHECK_EQ(f.weights_out, 0);
	ATF_CHECK_EQ(f.heads_kv, 4);
	ATF_CHECK_EQ(f.layer[0].k_width, 64);
	ATF_CHECK_EQ(f.layer[1].v_width, 64);
	free(b.p);
}

/* What agencyd refuses of figures a child sends. */
ATF_TC_WITHOUT_HEAD(check);
ATF_TC_BODY(check, tc)
{
	struct gb		 b;
	struct sizing_figures	 good, f;
	char			 err[SIZING_ERR_MAX];
	uint64_t		 pl[LL_LAYERS], in, out;

	llama(&b, pl, &in, &out, 0, NULL);
	ATF_REQUIRE_MSG(figures(&b, filesize(&b), &good, err) == 0, "%s",
	    err);
	free(b.p);
	ATF_REQUIRE_EQ(sizing_check(&good, err, sizeof(err)), 0);
#define REFUSED(change, why) do {					\
		f = good;						\
		change;							\
		ATF_CHECK_EQ_MSG(sizing_check(&f, err, sizeof(err)), -1,	\
		    "%s accepted", #change);				\
		ATF_CHECK_MATCH_MSG(why, err, "%s: %s", #change, err);	\
	} while (0)
	REFUSED(f.format = 3, "unknown format");
	REFUSED(memset(f.arch, 'a', sizeof(f.arch)), "without its end");
	REFUSED(f.arch[0] = '\n', "a byte 0xa");
	REFUSED(f.arch[sizeof(f.arch) - 1] = 'x', "after the architecture");
	REFUSED(f.layers = 0, "0 layers");
	REFUSED(f.layers = SIZING_LAYERS_MAX + 1, "513 layers");
	REFUSED(f.ctx_train = SIZING_CTX_MAX + 1, "a context of");
	REFUSED(f.swa_window = UINT32_MAX, "a context of");
	REFUSED(f.embd = SIZING_DIM_MAX + 1, "a width over");
	REFUSED(f.vocab = UINT32_MAX, "a width over");
	REFUSED(f.heads_kv = 9, "9 KV heads for 8 heads");
	REFUSED(f.pad = 1, "padding");
	REFUSED(f.weights_in = SIZING_BYTES_MAX + 1, "weights over");
	REFUSED(f.layer[0].weights = SIZING_BYTES_MAX / 2;
	    f.layer[1].weights = SIZING_BYTES_MAX / 2 + 1, "weights over");
	REFUSED(f.layer[1].k_width = SIZING_DIM_MAX + 1, "layer 1 is out");
	REFUSED(f.layer[2].swa = 2, "layer 2 is out");
	REFUSED(f.layer[2].swa = 1, "slides without a window");
	REFUSED(f.layer[LL_LAYERS].weights = 1, "layer 3 of 3 is set");
	REFUSED(f.layer[SIZING_LAYERS_MAX - 1].v_width = 1, "of 3 is set");
#undef REFUSED
}

ATF_TC_WITHOUT_HEAD(types);
ATF_TC_BODY(types, tc)
{
	uint32_t	 blck = 0, size = 0;

	ATF_CHECK(gguf_type_block(T_Q4_0, &blck, &size));
	ATF_CHECK_EQ(blck, 32);
	ATF_CHECK_EQ(size, 18);
	ATF_CHECK(gguf_type_block(T_Q8_0, &blck, &size));
	ATF_CHECK_EQ(size, 34);
	ATF_CHECK(gguf_type_block(30, &blck, &size));	/* bf16 */
	ATF_CHECK_EQ(blck, 1);
	ATF_CHECK_EQ(size, 2);
	ATF_CHECK(!gguf_type_block(4, &blck, &size));	/* removed */
	ATF_CHECK(!gguf_type_block(UINT32_MAX, &blck, &size));
	ATF_CHECK_EQ(gguf_type_byname("F16"), 1);
	ATF_CHECK_EQ(gguf_type_byname("q8_0"), 8);
	ATF_CHECK_EQ(gguf_type_byname("q4_0"), 2);
	ATF_CHECK_EQ(gguf_type_byname("f32"), 0);
	ATF_CHECK_EQ(gguf_type_byname("q4"), -1);
	ATF_CHECK_EQ(gguf_type_byname(""), -1);
}

/* The real tiny models: llama, 64 and 128 wide, 2 and 3 layers. */
static void
real(const atf_tc_t *tc, const char *file, uint32_t layers, uint32_t embd,
    uint64_t weights)
{
	struct sizing_figures	 f;
	struct stat		 st;
	char			 path[PATH_MAX], err[SIZING_ERR_MAX];
	uint64_t		 total;
	uint32_t		 i;
	void			*p;
	int			 fd;

	snprintf(path, sizeof(path), "%s/../../../shared/realserver/%s",
	    atf_tc_get_config_var(tc, "srcdir"), file);
	if ((fd = open(path, O_RDONLY)) == -1)
		atf_tc_skip("no %s (../shared/realserver is absent)", path);
	ATF_REQUIRE(fstat(fd, &st) == 0);
	ATF_REQUIRE((p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd,
	    0)) != MAP_FAILED);
	ATF_REQUIRE_MSG(gguf_figures(p, st.st_size, st.st_size, &f, err,
	    sizeof(err)) == 0, "%s: %s", file, err);
	munmap(p, st.st_size);
	close(fd);
	ATF_CHECK_STREQ(f.arch, "llama");
	ATF_CHECK_EQ(f.layers, layers);
	ATF_CHECK_EQ(f.embd, embd);
	ATF_CHECK_EQ(f.heads, 4);
	ATF_CHECK_EQ(f.heads_kv, 4);
	ATF_CHECK_EQ(f.ctx_train, 512);
	ATF_CHECK_EQ(f.vocab, 32000);
	ATF_CHECK_EQ(f.tensors, 3 + 9 * layers);
	total = f.weights_in + f.weights_out;
	for (i = 0; i < layers; i++) {
		ATF_CHECK_EQ(f.layer[i].k_width, embd);
		total += f.layer[i].weights;
	}
	/* All F32 (make-tiny-gguf.py): 4 bytes a parameter. */
	ATF_CHECK_EQ(total, weights);
	ATF_CHECK_EQ(f.weights_in, 32000ULL * embd * 4);
	ATF_CHECK_EQ(sizing_check(&f, err, sizeof(err)), 0);
}

ATF_TC_WITHOUT_HEAD(real_tiny_a);
ATF_TC_BODY(real_tiny_a, tc)
{
	/* llama-server: "model params = 4.18 M", "file size = 15.94 MiB" */
	real(tc, "tiny-a.gguf", 2, 64, 4 * (2ULL * 32000 * 64 + 64 +
	    2 * (4 * 64 * 64 + 2 * 64 + 3 * 64 * 128)));
}

ATF_TC_WITHOUT_HEAD(real_tiny_b);
ATF_TC_BODY(real_tiny_b, tc)
{
	real(tc, "tiny-b.gguf", 3, 128, 4 * (2ULL * 32000 * 128 + 128 +
	    3 * (4 * 128 * 128 + 2 * 128 + 3 * 128 * 256)));
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, crafted);
	ATF_TP_ADD_TC(tp, shape);
	ATF_TP_ADD_TC(tp, swa_period);
	ATF_TP_ADD_TC(tp, truncated);
	ATF_TP_ADD_TC(tp, huge_counts);
	ATF_TP_ADD_TC(tp, wrong_types);
	ATF_TP_ADD_TC(tp, offsets);
	ATF_TP_ADD_TC(tp, not_gguf);
	ATF_TP_ADD_TC(tp, layer_names);
	ATF_TP_ADD_TC(tp, check);
	ATF_TP_ADD_TC(tp, types);
	ATF_TP_ADD_TC(tp, real_tiny_a);
	ATF_TP_ADD_TC(tp, real_tiny_b);
	return (atf_no_error());
}
