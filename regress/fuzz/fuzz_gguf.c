/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: the GGUF header reader (gguf.c), whose input the
 * model user writes.  The input is a whole file.
 *
 * Invariants: no crash, no read outside the input; -1 always with a
 * message; on success the figures pass agencyd's own check of what a
 * child sends (sizing_check), the weights fit in the file, the same
 * figures come back when the file is said to be longer (the tensors'
 * data is never read, so its bytes cannot matter), and read as the
 * other file of a split it adds its weights once more; and an estimate made
 * from them, at a few contexts and cache types, is made without
 * overflow (UBSan) and adds up.
 *
 * FUZZ_WRITE_SEEDS=DIR writes the seed corpus into DIR and exits.
 */
#include <sys/types.h>

#include <err.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sizing.h"
#include "gguf_build.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct sizing_figures	 f1, f2;

static void
fail(const char *what)
{
	fprintf(stderr, "fuzz_gguf: %s\n", what);
	abort();
}

static uint64_t
weights(const struct sizing_figures *f)
{
	uint64_t	 w = f->weights_in + f->weights_out;
	uint32_t	 i;

	for (i = 0; i < f->layers; i++)
		w += f->layer[i].weights;
	return (w);
}

/* Estimates at a few settings: made or refused, never overflowing. */
static void
estimates(const struct sizing_figures *f)
{
	static const uint32_t	 ctxs[] = { 0, 1, 4096, SIZING_CTX_MAX };
	static const uint32_t	 gpu[] = { 0, 1, 100000 };
	struct sizing_params	 p;
	struct sizing_estimate	 e;
	char			 err[SIZING_ERR_MAX];
	size_t			 i, j;

	for (i = 0; i < sizeof(ctxs) / sizeof(ctxs[0]); i++)
		for (j = 0; j < sizeof(gpu) / sizeof(gpu[0]); j++) {
			sizing_params_init(&p);
			p.ctx = ctxs[i];
			p.gpu_layers = gpu[j];
			p.flash_attn = j != 1;
			if (j == 2)
				p.type_k = p.type_v = gguf_type_byname("q4_0");
			err[0] = '\0';
			if (sizing_estimate(f, &p, &e, err, sizeof(err)) != 0) {
				if (err[0] == '\0')
					fail("an estimate refused without a "
					    "message");
				continue;
			}
			if (e.host_weights < 0 || e.host_kv < 0 ||
			    e.host_compute < 0 || e.dev_weights < 0 ||
			    e.dev_kv < 0 || e.dev_compute < 0 ||
			    e.host != e.host_weights + e.host_kv +
			    e.host_compute + e.host_base ||
			    e.dev != e.dev_weights + e.dev_kv + e.dev_compute ||
			    e.gpu_layers > f->layers ||
			    (uint64_t)(e.host_weights + e.dev_weights) !=
			    weights(f))
				fail("an estimate that does not add up");
		}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	 err[SIZING_ERR_MAX], why[SIZING_ERR_MAX];
	int	 r;

	err[0] = '\0';
	r = gguf_figures(data, size, size, &f1, err, sizeof(err));
	if (r != 0 && r != -1)
		fail("an unknown result");
	if (r == -1) {
		if (err[0] == '\0')
			fail("refused without a message");
		return (0);
	}
	if (sizing_check(&f1, why, sizeof(why)) != 0) {
		fprintf(stderr, "check: %s\n", why);
		fail("figures read fail the check");
	}
	if (weights(&f1) > size)
		fail("more weights than file");
	if (gguf_figures(data, size, (uint64_t)size + 4096, &f2, err,
	    sizeof(err)) != 0 || memcmp(&f1, &f2, sizeof(f1)) != 0)
		fail("a longer file reads otherwise");
	/* Read again as a split's other file: its tensors once more. */
	f2 = f1;
	if (gguf_add_split(data, size, size, &f2, err, sizeof(err)) != 0 ||
	    weights(&f2) != 2 * weights(&f1))
		fail("a file read as a split's adds otherwise");
	estimates(&f1);
	return (0);
}

static void
seed(const char *dir, int n, struct gb *b)
{
	char	 path[1024];
	int	 fd;

	gb_data(b);
	(void)snprintf(path, sizeof(path), "%s/seed-%03d", dir, n);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1 ||
	    write(fd, b->p, b->len) != (ssize_t)b->len)
		err(1, "%s", path);
	close(fd);
	free(b->p);
}

static __attribute__((__noreturn__)) void
write_seeds(const char *dir)
{
	static const uint32_t	 kv[2] = { 2, 1 };
	static const uint32_t	 swa[2] = { 1, 0 };
	struct gb		 b;

	/* llama: 2 layers, GQA, a short token list. */
	gb_head(&b, 3, 5, 8);
	kv_str(&b, "general.architecture", "llama");
	kv_u32(&b, "llama.block_count", 2);
	kv_u32(&b, "llama.context_length", 256);
	kv_u32(&b, "llama.embedding_length", 64);
	kv_u32(&b, "llama.feed_forward_length", 128);
	kv_u32(&b, "llama.attention.head_count", 4);
	kv_u32(&b, "llama.attention.head_count_kv", 2);
	gb_str(&b, "tokenizer.ggml.tokens");
	gb_u32(&b, V_ARRAY);
	gb_u32(&b, V_STRING);
	gb_u64(&b, 3);
	gb_str(&b, "<s>");
	gb_str(&b, "a");
	gb_str(&b, "b");
	tensor(&b, "token_embd.weight", 64, 3, T_F32);
	tensor(&b, "blk.0.attn_q.weight", 64, 64, T_F16);
	tensor(&b, "blk.1.attn_q.weight", 64, 64, T_Q8_0);
	tensor(&b, "output_norm.weight", 64, 1, T_F32);
	tensor(&b, "output.weight", 64, 3, T_Q4_0);
	seed(dir, 0, &b);

	/* A sliding window, a pattern per layer, per-layer KV heads. */
	gb_head(&b, 3, 2, 8);
	kv_str(&b, "general.architecture", "gemma3");
	kv_u32(&b, "general.alignment", 64);
	kv_u32(&b, "gemma3.block_count", 2);
	kv_u32(&b, "gemma3.embedding_length", 32);
	kv_u32(&b, "gemma3.attention.head_count", 2);
	kv_arr_u32(&b, "gemma3.attention.head_count_kv", 2, kv);
	kv_u32(&b, "gemma3.attention.sliding_window", 16);
	kv_arr_u32(&b, "gemma3.attention.sliding_window_pattern", 2, swa);
	b.align = 64;
	tensor(&b, "blk.0.attn_k.weight", 32, 32, T_F32);
	tensor(&b, "blk.1.ffn_up.weight", 32, 5, T_F16);
	seed(dir, 1, &b);

	/* Experts and head lengths of their own, version 2. */
	gb_head(&b, 2, 1, 8);
	kv_str(&b, "general.architecture", "qwen3moe");
	kv_u32(&b, "qwen3moe.block_count", 1);
	kv_u32(&b, "qwen3moe.attention.head_count", 4);
	kv_u32(&b, "qwen3moe.attention.key_length", 16);
	kv_u32(&b, "qwen3moe.attention.value_length", 8);
	kv_u32(&b, "qwen3moe.expert_count", 8);
	kv_u32(&b, "qwen3moe.expert_used_count", 2);
	kv_u32(&b, "qwen3moe.expert_feed_forward_length", 96);
	tensor(&b, "blk.0.ffn_gate_exps.weight", 32, 8, T_Q8_0);
	seed(dir, 2, &b);
	exit(0);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char	*seeds;

	(void)argc;
	(void)argv;
	if ((seeds = getenv("FUZZ_WRITE_SEEDS")) != NULL)
		write_seeds(seeds);
	return (0);
}
