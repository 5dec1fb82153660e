/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * GGUF headers made byte by byte, for gguf_test.c and the fuzzer's
 * seeds (regress/fuzz/fuzz_gguf.c): a pair at a time, and tensor infos
 * laid one after the other as a writer lays them.
 */
#ifndef AGENCY_GGUF_BUILD_H
#define AGENCY_GGUF_BUILD_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define T_F32	0
#define T_F16	1
#define T_Q4_0	2
#define T_Q8_0	8

enum { V_U8 = 0, V_I8, V_U16, V_I16, V_U32, V_I32, V_F32, V_BOOL,
    V_STRING, V_ARRAY, V_U64, V_I64, V_F64 };

/* A header being written. */
struct gb {
	uint8_t		*p;
	size_t		 len;
	size_t		 cap;
	uint64_t	 data;		/* the tensors' bytes so far */
	uint32_t	 align;
};

static inline void
gb_bytes(struct gb *b, const void *v, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		if ((b->p = realloc(b->p, b->cap)) == NULL)
			abort();
	}
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

static inline void
gb_u32(struct gb *b, uint32_t v)
{
	uint8_t	 x[4] = { v, v >> 8, v >> 16, v >> 24 };

	gb_bytes(b, x, 4);
}

static inline void
gb_u64(struct gb *b, uint64_t v)
{
	gb_u32(b, (uint32_t)v);
	gb_u32(b, (uint32_t)(v >> 32));
}

static inline void
gb_str(struct gb *b, const char *s)
{
	gb_u64(b, strlen(s));
	gb_bytes(b, s, strlen(s));
}

static inline void
gb_head(struct gb *b, uint32_t version, uint64_t ntensors, uint64_t nkv)
{
	memset(b, 0, sizeof(*b));
	b->align = 32;
	gb_bytes(b, "GGUF", 4);
	gb_u32(b, version);
	gb_u64(b, ntensors);
	gb_u64(b, nkv);
}

static inline void
kv_u32(struct gb *b, const char *key, uint32_t v)
{
	gb_str(b, key);
	gb_u32(b, V_U32);
	gb_u32(b, v);
}

static inline void
kv_str(struct gb *b, const char *key, const char *v)
{
	gb_str(b, key);
	gb_u32(b, V_STRING);
	gb_str(b, v);
}

static inline void
kv_arr_u32(struct gb *b, const char *key, uint32_t n, const uint32_t *v)
{
	uint32_t	 i;

	gb_str(b, key);
	gb_u32(b, V_ARRAY);
	gb_u32(b, V_U32);
	gb_u64(b, n);
	for (i = 0; i < n; i++)
		gb_u32(b, v[i]);
}

/* A tensor's info, laid after the ones before it; bytes it takes. */
static inline uint64_t
tensor(struct gb *b, const char *name, uint64_t ne0, uint64_t ne1,
    uint32_t type)
{
	uint64_t	 bytes;

	switch (type) {
	case T_F32:
		bytes = ne0 * 4;
		break;
	case T_F16:
		bytes = ne0 * 2;
		break;
	case T_Q8_0:
		bytes = ne0 / 32 * 34;
		break;
	default:
		bytes = ne0 / 32 * 18;
		break;
	}
	bytes *= ne1;
	gb_str(b, name);
	gb_u32(b, ne1 == 1 ? 1 : 2);
	gb_u64(b, ne0);
	if (ne1 != 1)
		gb_u64(b, ne1);
	gb_u32(b, type);
	gb_u64(b, b->data);
	b->data += (bytes + b->align - 1) / b->align * b->align;
	return (bytes);
}

/* Zeros after the header for the tensors' data: a whole file. */
static inline void
gb_data(struct gb *b)
{
	static const uint8_t	 zero[64];
	uint64_t		 left;

	while (b->len % b->align != 0)
		gb_bytes(b, zero, 1);
	for (left = b->data; left > 0; left -= left > 64 ? 64 : left)
		gb_bytes(b, zero, left > 64 ? 64 : left);
}

/* The file's size: the header, padded, and the data. */
static inline uint64_t
filesize(const struct gb *b)
{
	return ((b->len + b->align - 1) / b->align * b->align + b->data);
}

#endif /* AGENCY_GGUF_BUILD_H */
