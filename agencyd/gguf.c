/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The figures of a GGUF file, from its header.  See sizing.h.
 *
 * The layout (llama.cpp's docs/gguf.md, gguf-py): "GGUF", a u32
 * version, a u64 count of tensors and one of key-value pairs; each pair
 * a string key, a u32 value type and the value (a string is a u64
 * length and its bytes; an array a u32 element type, a u64 count and the
 * elements); then each tensor's info: a string name, a u32 count of
 * dimensions, that many u64 dimensions, a u32 ggml type and a u64
 * offset into the data, which starts at the next multiple of the
 * alignment (general.alignment, 32 by default).  Little-endian.
 *
 * Every length and count is checked against the bytes left before it
 * is used, and nothing is allocated: the pairs are read in two passes
 * (the architecture names the keys of the second), arrays are kept as
 * places in the buffer and read per layer once the layer count is
 * known.  It calls no other file of agencyd.
 *
 * Calls: none.
 */
#include <sys/types.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sizing.h"

#define GGUF_MAGIC		"GGUF"
#define GGUF_ALIGN_DEFAULT	32
#define GGUF_ALIGN_MAX		(1U << 20)
#define GGUF_DIMS_MAX		4	/* GGML_MAX_DIMS */
#define GGUF_NAME_MAX		64	/* GGML_MAX_NAME, with the NUL */
#define GGUF_KEY_MAX		256	/* longer keys are never ours */
/* The least a pair or a tensor info takes: a bound on their counts. */
#define GGUF_KV_MIN		(8 + 4 + 1)
#define GGUF_TI_MIN		(8 + 4 + 4 + 8)

enum gguf_vtype {
	GV_U8 = 0, GV_I8, GV_U16, GV_I16, GV_U32, GV_I32, GV_F32, GV_BOOL,
	GV_STRING, GV_ARRAY, GV_U64, GV_I64, GV_F64, GV_NTYPES
};

/* A value as read: a scalar's number, or where an array's elements are. */
struct gval {
	int		 set;
	uint32_t	 type;		/* a scalar's, or an array's elements' */
	int		 array;
	int		 neg;		/* a negative scalar */
	uint64_t	 u;		/* a scalar that is not */
	uint64_t	 n;		/* an array's count */
	const uint8_t	*p;		/* an array's first element */
};

/* The keys of the architecture that the figures come from. */
enum {
	K_CTX, K_EMBD, K_LAYERS, K_FF, K_EXPERTS, K_EXPERTS_USED, K_EXPERT_FF,
	K_VOCAB, K_HEADS, K_HEADS_KV, K_KEY_LEN, K_VALUE_LEN, K_KEY_LEN_SWA,
	K_VALUE_LEN_SWA, K_SWA, K_SWA_PATTERN, K_NKEYS
};

static const char *const arch_keys[K_NKEYS] = {
	"context_length",
	"embedding_length",
	"block_count",
	"feed_forward_length",
	"expert_count",
	"expert_used_count",
	"expert_feed_forward_length",
	"vocab_size",
	"attention.head_count",
	"attention.head_count_kv",
	"attention.key_length",
	"attention.value_length",
	"attention.key_length_swa",
	"attention.value_length_swa",
	"attention.sliding_window",
	"attention.sliding_window_pattern",
};

/*
 * Where llama.cpp sets the sliding-window layers itself for an
 * architecture that has no pattern key (llama-model.cpp's
 * set_swa_pattern calls): every period-th layer is a full one, the last
 * of each period, or the first with dense_first.
 */
static const struct {
	const char	*arch;
	uint32_t	 period;
	int		 dense_first;
} swa_periods[] = {
	{ "gemma2",	2, 0 },
	{ "gemma3",	6, 0 },
	{ "cohere2",	4, 0 },
	{ "gpt-oss",	2, 0 },
};

/* ggml's types: elements and bytes a block (gguf-py's GGML_QUANT_SIZES). */
static const struct {
	const char	*name;
	uint32_t	 blck;
	uint32_t	 size;
} ggml_types[] = {
	[0] = { "f32", 1, 4 },
	[1] = { "f16", 1, 2 },
	[2] = { "q4_0", 32, 18 },
	[3] = { "q4_1", 32, 20 },
	[6] = { "q5_0", 32, 22 },
	[7] = { "q5_1", 32, 24 },
	[8] = { "q8_0", 32, 34 },
	[9] = { "q8_1", 32, 40 },
	[10] = { "q2_k", 256, 84 },
	[11] = { "q3_k", 256, 110 },
	[12] = { "q4_k", 256, 144 },
	[13] = { "q5_k", 256, 176 },
	[14] = { "q6_k", 256, 210 },
	[15] = { "q8_k", 256, 292 },
	[16] = { "iq2_xxs", 256, 66 },
	[17] = { "iq2_xs", 256, 74 },
	[18] = { "iq3_xxs", 256, 98 },
	[19] = { "iq1_s", 256, 50 },
	[20] = { "iq4_nl", 32, 18 },
	[21] = { "iq3_s", 256, 110 },
	[22] = { "iq2_s", 256, 82 },
	[23] = { "iq4_xs", 256, 136 },
	[24] = { "i8", 1, 1 },
	[25] = { "i16", 1, 2 },
	[26] = { "i32", 1, 4 },
	[27] = { "i64", 1, 8 },
	[28] = { "f64", 1, 8 },
	[29] = { "iq1_m", 256, 56 },
	[30] = { "bf16", 1, 2 },
	[34] = { "tq1_0", 256, 54 },
	[35] = { "tq2_0", 256, 66 },
	[39] = { "mxfp4", 32, 17 },
	[40] = { "nvfp4", 64, 36 },
	[41] = { "q1_0", 128, 18 },
	[42] = { "q2_0", 64, 18 },
};
#define GGML_NTYPES	(sizeof(ggml_types) / sizeof(ggml_types[0]))

/* A cursor over the header; the first failure's message stays in err. */
struct rd {
	const uint8_t	*p;
	size_t		 len;
	size_t		 off;
	char		*err;
	size_t		 errlen;
};

static int	fail(struct rd *, const char *, ...)
		    __attribute__((__format__ (printf, 2, 3)));
static int	rd_u32(struct rd *, uint32_t *);
static int	rd_u64(struct rd *, uint64_t *);
static int	rd_skip(struct rd *, uint64_t);
static int	rd_str(struct rd *, const uint8_t **, uint64_t *);
static uint32_t	vtype_size(uint32_t);
static int	rd_value(struct rd *, uint32_t, struct gval *);
static int	val_uint(uint32_t, const uint8_t *, uint64_t *);
static int	scalar_u32(struct rd *, const char *, const struct gval *,
		    uint32_t, uint32_t *);
static int	per_layer(struct rd *, const char *, const struct gval *,
		    uint32_t, uint32_t *);
static int	kv_pass(struct rd *, uint64_t, const char *,
		    struct gval *, struct gval *, struct gval *,
		    struct gval *);
static int	layer_of(const uint8_t *, uint64_t, uint32_t);
static int	shape(struct rd *, struct sizing_figures *, struct gval *);
static int	head(struct rd *, const uint8_t *, size_t, uint64_t, char *,
		    size_t, uint64_t *, uint64_t *);
static int	alignment(struct rd *, const struct gval *, uint32_t *);
static int	tensors(struct rd *, uint64_t, uint32_t, uint64_t,
		    struct sizing_figures *);

static uint64_t
le64(const uint8_t *p)
{
	return ((uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	    (uint64_t)p[3] << 24 | (uint64_t)p[4] << 32 |
	    (uint64_t)p[5] << 40 | (uint64_t)p[6] << 48 |
	    (uint64_t)p[7] << 56);
}

static uint32_t
le32(const uint8_t *p)
{
	return ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24);
}

static int
fail(struct rd *r, const char *fmt, ...)
{
	va_list	 ap;

	if (r->err[0] != '\0')
		return (-1);
	va_start(ap, fmt);
	(void)vsnprintf(r->err, r->errlen, fmt, ap);
	va_end(ap);
	return (-1);
}

static int
rd_skip(struct rd *r, uint64_t n)
{
	if (n > r->len - r->off)
		return (fail(r, "truncated at byte %zu (%llu more wanted, "
		    "%zu there)", r->off, (unsigned long long)n,
		    r->len - r->off));
	r->off += n;
	return (0);
}

static int
rd_u32(struct rd *r, uint32_t *v)
{
	if (r->len - r->off < 4)
		return (rd_skip(r, 4));
	*v = le32(r->p + r->off);
	r->off += 4;
	return (0);
}

static int
rd_u64(struct rd *r, uint64_t *v)
{
	if (r->len - r->off < 8)
		return (rd_skip(r, 8));
	*v = le64(r->p + r->off);
	r->off += 8;
	return (0);
}

static int
rd_str(struct rd *r, const uint8_t **s, uint64_t *n)
{
	if (rd_u64(r, n) == -1)
		return (-1);
	*s = r->p + r->off;
	return (rd_skip(r, *n));
}

/* A fixed-size value type's bytes; 0 for a string, an array, unknown. */
static uint32_t
vtype_size(uint32_t t)
{
	switch (t) {
	case GV_U8:
	case GV_I8:
	case GV_BOOL:
		return (1);
	case GV_U16:
	case GV_I16:
		return (2);
	case GV_U32:
	case GV_I32:
	case GV_F32:
		return (4);
	case GV_U64:
	case GV_I64:
	case GV_F64:
		return (8);
	default:
		return (0);
	}
}

/* Read past a value of type t, noting in *v what it was and where. */
static int
rd_value(struct rd *r, uint32_t t, struct gval *v)
{
	const uint8_t	*s;
	uint64_t	 n, i, slen;
	uint32_t	 et, sz;

	memset(v, 0, sizeof(*v));
	v->type = t;
	if (t == GV_STRING)
		return (rd_str(r, &s, &slen));
	if (t != GV_ARRAY) {
		if ((sz = vtype_size(t)) == 0)
			return (fail(r, "unknown value type %u at byte %zu", t,
			    r->off - 4));
		if (r->len - r->off >= sz &&
		    val_uint(t, r->p + r->off, &v->u) == -1)
			v->neg = 1;
		return (rd_skip(r, sz));
	}
	if (rd_u32(r, &et) == -1 || rd_u64(r, &n) == -1)
		return (-1);
	v->array = 1;
	v->type = et;
	v->n = n;
	v->p = r->p + r->off;
	if (et == GV_ARRAY)
		return (fail(r, "an array of arrays at byte %zu", r->off));
	if (et == GV_STRING) {
		/* Each string takes 8 bytes at least: n is bounded. */
		if (n > (r->len - r->off) / 8)
			return (fail(r, "an array of %llu strings is longer "
			    "than the file", (unsigned long long)n));
		for (i = 0; i < n; i++)
			if (rd_str(r, &s, &slen) == -1)
				return (-1);
		return (0);
	}
	if ((sz = vtype_size(et)) == 0)
		return (fail(r, "unknown array type %u at byte %zu", et,
		    r->off));
	if (n > (r->len - r->off) / sz)
		return (fail(r, "an array of %llu values is longer than the "
		    "file", (unsigned long long)n));
	return (rd_skip(r, n * sz));
}

/* An integer (or bool) value at p as unsigned: -1 if negative or not one. */
static int
val_uint(uint32_t t, const uint8_t *p, uint64_t *u)
{
	int64_t	 s;

	switch (t) {
	case GV_U8:
	case GV_BOOL:
		*u = p[0];
		return (0);
	case GV_I8:
		s = (int8_t)p[0];
		break;
	case GV_U16:
		*u = (uint64_t)p[0] | (uint64_t)p[1] << 8;
		return (0);
	case GV_I16:
		s = (int16_t)(p[0] | p[1] << 8);
		break;
	case GV_U32:
		*u = le32(p);
		return (0);
	case GV_I32:
		s = (int32_t)le32(p);
		break;
	case GV_U64:
		*u = le64(p);
		return (0);
	case GV_I64:
		s = (int64_t)le64(p);
		break;
	default:
		return (-1);
	}
	if (s < 0)
		return (-1);
	*u = (uint64_t)s;
	return (0);
}

/* A key's scalar integer, at most max; a missing key leaves *out. */
static int
scalar_u32(struct rd *r, const char *key, const struct gval *v,
    uint32_t max, uint32_t *out)
{
	if (!v->set)
		return (0);
	if (v->array || vtype_size(v->type) == 0 || v->type == GV_F32 ||
	    v->type == GV_F64)
		return (fail(r, "%s is not an integer", key));
	if (v->neg)
		return (fail(r, "%s is negative", key));
	if (v->u > max)
		return (fail(r, "%s is %llu, more than %u", key,
		    (unsigned long long)v->u, max));
	*out = (uint32_t)v->u;
	return (0);
}

/*
 * A key that is a scalar or an array of one value a layer, into
 * out[0..layers-1]; a missing key leaves out alone.
 */
static int
per_layer(struct rd *r, const char *key, const struct gval *v,
    uint32_t layers, uint32_t *out)
{
	uint64_t	 u;
	uint32_t	 i, one, sz;

	if (!v->set)
		return (0);
	if (!v->array) {
		one = 0;
		if (scalar_u32(r, key, v, SIZING_DIM_MAX, &one) == -1)
			return (-1);
		for (i = 0; i < layers; i++)
			out[i] = one;
		return (0);
	}
	if (v->n != layers)
		return (fail(r, "%s has %llu values for %u layers", key,
		    (unsigned long long)v->n, layers));
	if ((sz = vtype_size(v->type)) == 0 || v->type == GV_F32 ||
	    v->type == GV_F64)
		return (fail(r, "%s is not an array of integers", key));
	for (i = 0; i < layers; i++) {
		if (val_uint(v->type, v->p + (size_t)i * sz, &u) == -1)
			return (fail(r, "%s[%u] is negative", key, i));
		if (u > SIZING_DIM_MAX)
			return (fail(r, "%s[%u] is %llu, more than %u", key, i,
			    (unsigned long long)u, SIZING_DIM_MAX));
		out[i] = (uint32_t)u;
	}
	return (0);
}

/*
 * One pass over the pairs.  Without arch: general.architecture into
 * *archv, general.alignment into *alignv.  With it: the architecture's
 * keys into keys[] and the tokenizer's token list into *tokens.  A key
 * that matters given twice is an error.
 */
static int
kv_pass(struct rd *r, uint64_t nkv, const char *arch, struct gval *archv,
    struct gval *alignv, struct gval *keys, struct gval *tokens)
{
	const uint8_t	*key = NULL;
	struct gval	 v, *dst;
	uint64_t	 i, klen = 0;
	size_t		 alen = arch != NULL ? strlen(arch) : 0, start;
	uint32_t	 t;
	int		 k;

	for (i = 0; i < nkv; i++) {
		if (rd_str(r, &key, &klen) == -1 || rd_u32(r, &t) == -1)
			return (-1);
		start = r->off;
		if (rd_value(r, t, &v) == -1)
			return (-1);
		if (t == GV_STRING) {
			/* A string's bytes, for the architecture. */
			v.p = r->p + start + 8;
			v.n = r->off - start - 8;
		}
		v.set = 1;
		dst = NULL;
		if (klen > GGUF_KEY_MAX)
			continue;
		if (arch == NULL) {
			if (klen == 20 && memcmp(key, "general.architecture",
			    20) == 0)
				dst = archv;
			else if (klen == 17 && memcmp(key, "general.alignment",
			    17) == 0)
				dst = alignv;
		} else if (klen == 21 && memcmp(key, "tokenizer.ggml.tokens",
		    21) == 0)
			dst = tokens;
		else if (klen > alen + 1 && memcmp(key, arch, alen) == 0 &&
		    key[alen] == '.') {
			for (k = 0; k < K_NKEYS; k++)
				if (strlen(arch_keys[k]) == klen - alen - 1 &&
				    memcmp(key + alen + 1, arch_keys[k],
				    klen - alen - 1) == 0) {
					dst = &keys[k];
					break;
				}
		}
		if (dst == NULL)
			continue;
		if (dst->set)
			return (fail(r, "key %.*s given twice", (int)klen,
			    (const char *)key));
		*dst = v;
	}
	return (0);
}

/* The layer of a tensor named blk.N.*, or -1. */
static int
layer_of(const uint8_t *name, uint64_t len, uint32_t layers)
{
	uint64_t	 i, n = 0;

	if (len < 6 || memcmp(name, "blk.", 4) != 0)
		return (-1);
	for (i = 4; i < len && isdigit(name[i]); i++) {
		n = n * 10 + (name[i] - '0');
		if (n >= layers)
			return (-1);
	}
	if (i == 4 || i >= len || name[i] != '.' ||
	    (name[4] == '0' && i > 5))
		return (-1);
	return ((int)n);
}

/* The attention's shape from the keys, into f's layers. */
static int
shape(struct rd *r, struct sizing_figures *f, struct gval *keys)
{
	uint32_t	 heads[SIZING_LAYERS_MAX], heads_kv[SIZING_LAYERS_MAX];
	uint32_t	 ff[SIZING_LAYERS_MAX], pattern[SIZING_LAYERS_MAX];
	uint32_t	 i, klen = 0, vlen = 0, klen_swa, vlen_swa;
	uint32_t	 period = 0, used = 0, eff = 0, experts = 0;
	size_t		 j;
	int		 dense_first = 0, have_pattern = 0, have_period = 0;

	memset(heads, 0, sizeof(heads));
	memset(ff, 0, sizeof(ff));
	memset(pattern, 0, sizeof(pattern));
	if (scalar_u32(r, "context_length", &keys[K_CTX], SIZING_CTX_MAX,
	    &f->ctx_train) == -1 ||
	    scalar_u32(r, "embedding_length", &keys[K_EMBD], SIZING_DIM_MAX,
	    &f->embd) == -1 ||
	    scalar_u32(r, "vocab_size", &keys[K_VOCAB], SIZING_DIM_MAX,
	    &f->vocab) == -1 ||
	    per_layer(r, "attention.head_count", &keys[K_HEADS], f->layers,
	    heads) == -1 ||
	    per_layer(r, "feed_forward_length", &keys[K_FF], f->layers,
	    ff) == -1 ||
	    scalar_u32(r, "expert_count", &keys[K_EXPERTS], SIZING_DIM_MAX,
	    &experts) == -1 ||
	    scalar_u32(r, "expert_used_count", &keys[K_EXPERTS_USED],
	    SIZING_DIM_MAX, &used) == -1 ||
	    scalar_u32(r, "expert_feed_forward_length", &keys[K_EXPERT_FF],
	    SIZING_DIM_MAX, &eff) == -1 ||
	    scalar_u32(r, "attention.sliding_window", &keys[K_SWA],
	    SIZING_CTX_MAX, &f->swa_window) == -1)
		return (-1);
	if (!keys[K_HEADS].set)
		return (fail(r, "no %s.attention.head_count", f->arch));
	/* KV heads default to the heads (llama.cpp's n_head_kv). */
	memcpy(heads_kv, heads, sizeof(heads_kv));
	if (per_layer(r, "attention.head_count_kv", &keys[K_HEADS_KV],
	    f->layers, heads_kv) == -1)
		return (-1);
	for (i = 0; i < f->layers; i++) {
		if (heads_kv[i] > heads[i])
			return (fail(r, "layer %u: %u KV heads for %u heads",
			    i, heads_kv[i], heads[i]));
		if (heads[i] > f->heads)
			f->heads = heads[i];
		if (heads_kv[i] > f->heads_kv)
			f->heads_kv = heads_kv[i];
		if (ff[i] > f->ff)
			f->ff = ff[i];
	}
	if (used > experts)
		return (fail(r, "expert_used_count %u is more than "
		    "expert_count %u", used, experts));
	if ((uint64_t)used * eff > f->ff)
		f->ff = (uint64_t)used * eff > SIZING_DIM_MAX ?
		    SIZING_DIM_MAX : used * eff;
	/* A head's length defaults to the width over layer 0's heads. */
	if (heads[0] != 0)
		klen = vlen = f->embd / heads[0];
	if (scalar_u32(r, "attention.key_length", &keys[K_KEY_LEN],
	    SIZING_DIM_MAX, &klen) == -1 ||
	    scalar_u32(r, "attention.value_length", &keys[K_VALUE_LEN],
	    SIZING_DIM_MAX, &vlen) == -1)
		return (-1);
	klen_swa = klen;
	vlen_swa = vlen;
	if (scalar_u32(r, "attention.key_length_swa", &keys[K_KEY_LEN_SWA],
	    SIZING_DIM_MAX, &klen_swa) == -1 ||
	    scalar_u32(r, "attention.value_length_swa",
	    &keys[K_VALUE_LEN_SWA], SIZING_DIM_MAX, &vlen_swa) == -1)
		return (-1);
	f->key_len = klen;
	f->value_len = vlen;

	/* Which layers slide: the file's pattern, else llama.cpp's own. */
	if (keys[K_SWA_PATTERN].set && keys[K_SWA_PATTERN].array) {
		if (per_layer(r, "attention.sliding_window_pattern",
		    &keys[K_SWA_PATTERN], f->layers, pattern) == -1)
			return (-1);
		have_pattern = 1;
	} else if (keys[K_SWA_PATTERN].set) {
		if (scalar_u32(r, "attention.sliding_window_pattern",
		    &keys[K_SWA_PATTERN], SIZING_LAYERS_MAX, &period) == -1)
			return (-1);
		have_period = 1;
	} else
		for (j = 0; j < sizeof(swa_periods) / sizeof(swa_periods[0]);
		    j++)
			if (strcmp(f->arch, swa_periods[j].arch) == 0) {
				period = swa_periods[j].period;
				dense_first = swa_periods[j].dense_first;
				have_period = 1;
			}
	for (i = 0; i < f->layers; i++) {
		if (f->swa_window == 0)
			f->layer[i].swa = 0;
		else if (have_pattern)
			f->layer[i].swa = pattern[i] != 0;
		else if (have_period && period == 0)
			f->layer[i].swa = 1;	/* every layer slides */
		else if (have_period)
			f->layer[i].swa = dense_first ? i % period != 0 :
			    i % period < period - 1;
		/* A window without a pattern we know: all full, the most. */
		if (f->layer[i].swa) {
			f->layer[i].k_width = klen_swa * heads_kv[i];
			f->layer[i].v_width = vlen_swa * heads_kv[i];
		} else {
			f->layer[i].k_width = klen * heads_kv[i];
			f->layer[i].v_width = vlen * heads_kv[i];
		}
		if (f->layer[i].k_width > SIZING_DIM_MAX ||
		    f->layer[i].v_width > SIZING_DIM_MAX)
			return (fail(r, "layer %u: a KV width over %u", i,
			    SIZING_DIM_MAX));
	}
	return (0);
}

int
gguf_type_block(uint32_t type, uint32_t *blck, uint32_t *size)
{
	if (type >= GGML_NTYPES || ggml_types[type].blck == 0)
		return (0);
	*blck = ggml_types[type].blck;
	*size = ggml_types[type].size;
	return (1);
}

int
gguf_type_byname(const char *name)
{
	size_t	 i;

	for (i = 0; i < GGML_NTYPES; i++)
		if (ggml_types[i].name != NULL &&
		    strcasecmp(ggml_types[i].name, name) == 0)
			return ((int)i);
	return (-1);
}

/*
 * The start of a header: magic, version and counts, each count bounded
 * by the bytes left; r is set up over buf.
 */
static int
head(struct rd *r, const uint8_t *buf, size_t len, uint64_t filesize,
    char *err, size_t errlen, uint64_t *ntensors, uint64_t *nkv)
{
	uint32_t	 version;

	memset(r, 0, sizeof(*r));
	r->p = buf;
	r->len = len;
	r->err = err;
	r->errlen = errlen;
	if (errlen > 0)
		err[0] = '\0';
	if (len > filesize)
		return (fail(r, "%zu bytes read of a file of %llu", len,
		    (unsigned long long)filesize));
	if (len < 4 || memcmp(buf, GGUF_MAGIC, 4) != 0)
		return (fail(r, "not a GGUF file"));
	r->off = 4;
	if (rd_u32(r, &version) == -1 || rd_u64(r, ntensors) == -1 ||
	    rd_u64(r, nkv) == -1)
		return (-1);
	if (version != 2 && version != 3)
		return (fail(r, "GGUF version %u is not supported%s", version,
		    version > 0xffff ? " (a big-endian file?)" : ""));
	if (*nkv > (len - r->off) / GGUF_KV_MIN)
		return (fail(r, "%llu key-value pairs cannot fit in the file",
		    (unsigned long long)*nkv));
	if (*ntensors > (len - r->off) / GGUF_TI_MIN)
		return (fail(r, "%llu tensors cannot fit in the file",
		    (unsigned long long)*ntensors));
	return (0);
}

/* general.alignment, or the default. */
static int
alignment(struct rd *r, const struct gval *v, uint32_t *align)
{
	*align = GGUF_ALIGN_DEFAULT;
	if (!v->set)
		return (0);
	if (v->array || v->type != GV_U32)
		return (fail(r, "general.alignment is not a u32"));
	*align = (uint32_t)v->u;
	if (*align == 0 || (*align & (*align - 1)) != 0 ||
	    *align > GGUF_ALIGN_MAX)
		return (fail(r, "general.alignment %u is not a power of two "
		    "up to %u", *align, GGUF_ALIGN_MAX));
	return (0);
}

/*
 * The tensor infos: each one's bytes, added to f's layers or the rest,
 * and where it lies: one after the other, aligned, all in the file.
 */
static int
tensors(struct rd *r, uint64_t ntensors, uint32_t align, uint64_t filesize,
    struct sizing_figures *f)
{
	const uint8_t	*name;
	uint64_t	 nlen = 0, ne[GGUF_DIMS_MAX], off, expect = 0, nbytes;
	uint64_t	 rows, dstart, i;
	uint32_t	 ndims, type, blck, tsize, d;
	int		 l;

	f->tensors += ntensors;
	for (i = 0; i < ntensors; i++) {
		if (rd_str(r, &name, &nlen) == -1 ||
		    rd_u32(r, &ndims) == -1)
			return (-1);
		if (nlen >= GGUF_NAME_MAX)
			return (fail(r, "tensor %llu: a name of %llu bytes",
			    (unsigned long long)i, (unsigned long long)nlen));
		if (ndims > GGUF_DIMS_MAX)
			return (fail(r, "tensor %.*s: %u dimensions",
			    (int)nlen, (const char *)name, ndims));
		for (d = 0; d < GGUF_DIMS_MAX; d++) {
			ne[d] = 1;
			if (d < ndims && rd_u64(r, &ne[d]) == -1)
				return (-1);
		}
		if (rd_u32(r, &type) == -1 || rd_u64(r, &off) == -1)
			return (-1);
		if (!gguf_type_block(type, &blck, &tsize))
			return (fail(r, "tensor %.*s: unknown type %u",
			    (int)nlen, (const char *)name, type));
		if (ne[0] % blck != 0)
			return (fail(r, "tensor %.*s: %llu columns are not "
			    "whole blocks of %u", (int)nlen,
			    (const char *)name, (unsigned long long)ne[0],
			    blck));
		if (__builtin_mul_overflow(ne[1], ne[2], &rows) ||
		    __builtin_mul_overflow(rows, ne[3], &rows) ||
		    __builtin_mul_overflow(ne[0] / blck, (uint64_t)tsize,
		    &nbytes) ||
		    __builtin_mul_overflow(nbytes, rows, &nbytes) ||
		    nbytes > filesize)
			return (fail(r, "tensor %.*s: larger than the file",
			    (int)nlen, (const char *)name));
		if (off != expect)
			return (fail(r, "tensor %.*s: at offset %llu, not "
			    "%llu where the one before it ends", (int)nlen,
			    (const char *)name, (unsigned long long)off,
			    (unsigned long long)expect));
		/* Both are below the file's size: no overflow. */
		expect += (nbytes + align - 1) / align * align;
		if (expect > filesize)
			return (fail(r, "tensor %.*s: ends past the end of "
			    "the file", (int)nlen, (const char *)name));
		if ((l = layer_of(name, nlen, f->layers)) >= 0)
			f->layer[l].weights += nbytes;
		else if (nlen >= 6 && memcmp(name, "output", 6) == 0)
			f->weights_out += nbytes;
		else
			f->weights_in += nbytes;
	}
	dstart = ((uint64_t)r->off + align - 1) / align * align;
	if (dstart > filesize || expect > filesize - dstart)
		return (fail(r, "the tensors' data (%llu bytes from byte "
		    "%llu) is past the end of the file (%llu bytes)",
		    (unsigned long long)expect, (unsigned long long)dstart,
		    (unsigned long long)filesize));
	return (0);
}

int
gguf_figures(const uint8_t *buf, size_t len, uint64_t filesize,
    struct sizing_figures *f, char *err, size_t errlen)
{
	struct rd	 r;
	struct gval	 archv, alignv, tokens, keys[K_NKEYS];
	uint64_t	 ntensors, nkv, kvstart, i;
	uint32_t	 align;

	memset(f, 0, sizeof(*f));
	if (head(&r, buf, len, filesize, err, errlen, &ntensors, &nkv) == -1)
		return (-1);
	kvstart = r.off;
	memset(&archv, 0, sizeof(archv));
	memset(&alignv, 0, sizeof(alignv));
	memset(&tokens, 0, sizeof(tokens));
	memset(keys, 0, sizeof(keys));
	if (kv_pass(&r, nkv, NULL, &archv, &alignv, NULL, NULL) == -1)
		return (-1);
	if (!archv.set || archv.type != GV_STRING || archv.array)
		return (fail(&r, "no general.architecture string"));
	if (archv.n == 0 || archv.n >= sizeof(f->arch))
		return (fail(&r, "an architecture name of %llu bytes",
		    (unsigned long long)archv.n));
	for (i = 0; i < archv.n; i++)
		if (!isalnum(archv.p[i]) && archv.p[i] != '-' &&
		    archv.p[i] != '_' && archv.p[i] != '.')
			return (fail(&r, "the architecture name has a byte "
			    "%#x", archv.p[i]));
	memcpy(f->arch, archv.p, archv.n);
	if (alignment(&r, &alignv, &align) == -1)
		return (-1);
	r.off = kvstart;
	if (kv_pass(&r, nkv, f->arch, NULL, NULL, keys, &tokens) == -1)
		return (-1);

	if (!keys[K_LAYERS].set)
		return (fail(&r, "no %s.block_count", f->arch));
	if (scalar_u32(&r, "block_count", &keys[K_LAYERS], SIZING_LAYERS_MAX,
	    &f->layers) == -1)
		return (-1);
	if (f->layers == 0)
		return (fail(&r, "no layers"));
	if (tokens.set && tokens.array && tokens.type == GV_STRING &&
	    f->vocab == 0)
		f->vocab = tokens.n > SIZING_DIM_MAX ? SIZING_DIM_MAX :
		    (uint32_t)tokens.n;
	if (shape(&r, f, keys) == -1)
		return (-1);
	f->format = SIZING_GGUF;
	return (tensors(&r, ntensors, align, filesize, f));
}

int
gguf_add_split(const uint8_t *buf, size_t len, uint64_t filesize,
    struct sizing_figures *fout, char *err, size_t errlen)
{
	struct sizing_figures	 f;
	struct rd		 r;
	struct gval		 archv, alignv;
	uint64_t		 ntensors, nkv;
	uint32_t		 align;

	if (head(&r, buf, len, filesize, err, errlen, &ntensors, &nkv) == -1)
		return (-1);
	memset(&archv, 0, sizeof(archv));
	memset(&alignv, 0, sizeof(alignv));
	if (kv_pass(&r, nkv, NULL, &archv, &alignv, NULL, NULL) == -1 ||
	    alignment(&r, &alignv, &align) == -1)
		return (-1);
	f = *fout;
	if (tensors(&r, ntensors, align, filesize, &f) == -1)
		return (-1);
	*fout = f;
	return (0);
}
