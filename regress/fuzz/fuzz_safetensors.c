/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * libFuzzer harness: the safetensors header reader and the config.json
 * reader (safetensors.c), whose input the model user writes.  The input
 * is read as a safetensors file, twice (as the only file, and after a
 * config.json of two layers), and as a config.json.
 *
 * Invariants: no crash, no read outside the input; -1 always with a
 * message and the figures as they were; on success the weights added
 * fit in the file, and the figures pass agencyd's own check of what a
 * child sends (sizing_check) once they have layers; a config.json read
 * gives figures that pass it too.
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

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CONFIG	"{\"num_hidden_layers\": 2, \"hidden_size\": 64, " \
	"\"num_attention_heads\": 4, \"num_key_value_heads\": 2}"

static struct sizing_figures	 before, f, cfg;

static void
fail(const char *what)
{
	fprintf(stderr, "fuzz_safetensors: %s\n", what);
	abort();
}

static uint64_t
weights(const struct sizing_figures *x)
{
	uint64_t	 w = x->weights_in + x->weights_out;
	uint32_t	 i;

	for (i = 0; i < SIZING_LAYERS_MAX; i++)
		w += x->layer[i].weights;
	return (w);
}

static void
check(const struct sizing_figures *start, const uint8_t *data, size_t size)
{
	char	 err[SIZING_ERR_MAX], why[SIZING_ERR_MAX];
	int	 r;

	before = *start;
	f = before;
	err[0] = '\0';
	r = safetensors_figures(data, size, size, &f, err, sizeof(err));
	if (r == -1) {
		if (err[0] == '\0')
			fail("refused without a message");
		if (memcmp(&f, &before, sizeof(f)) != 0)
			fail("refused, and the figures changed");
		return;
	}
	if (r != 0)
		fail("an unknown result");
	if (weights(&f) - weights(&before) > size)
		fail("more weights than file");
	if (f.layers > 0 && sizing_check(&f, why, sizeof(why)) != 0) {
		fprintf(stderr, "check: %s\n", why);
		fail("figures read fail the check");
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sizing_figures	 zero;
	char			 err[SIZING_ERR_MAX], why[SIZING_ERR_MAX];

	memset(&zero, 0, sizeof(zero));
	check(&zero, data, size);
	check(&cfg, data, size);

	f = zero;
	err[0] = '\0';
	if (hfconfig_figures((const char *)data, size, &f, err,
	    sizeof(err)) == 0) {
		if (sizing_check(&f, why, sizeof(why)) != 0) {
			fprintf(stderr, "check: %s\n", why);
			fail("config figures fail the check");
		}
	} else if (err[0] == '\0')
		fail("a config refused without a message");
	else if (memcmp(&f, &zero, sizeof(f)) != 0)
		fail("a config refused, and the figures changed");
	return (0);
}

static void
seed(const char *dir, int n, const char *json, size_t datalen)
{
	char	 path[1024];
	uint8_t	 len[8];
	size_t	 jl = strlen(json), i;
	int	 fd;

	for (i = 0; i < 8; i++)
		len[i] = (uint8_t)((uint64_t)jl >> (8 * i));
	(void)snprintf(path, sizeof(path), "%s/seed-%03d", dir, n);
	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) == -1)
		err(1, "%s", path);
	if (datalen != (size_t)-1 && write(fd, len, 8) != 8)
		err(1, "%s", path);
	if (write(fd, json, jl) != (ssize_t)jl)
		err(1, "%s", path);
	for (i = 0; datalen != (size_t)-1 && i < datalen; i++)
		if (write(fd, "", 1) != 1)
			err(1, "%s", path);
	close(fd);
}

static __attribute__((__noreturn__)) void
write_seeds(const char *dir)
{
	seed(dir, 0, "{\"__metadata__\": {\"format\": \"pt\"}, "
	    "\"model.embed_tokens.weight\": {\"dtype\": \"BF16\", "
	    "\"shape\": [4, 8], \"data_offsets\": [0, 64]}, "
	    "\"model.layers.0.mlp.up_proj.weight\": {\"dtype\": \"F32\", "
	    "\"shape\": [8, 2], \"data_offsets\": [64, 128]}, "
	    "\"model.layers.1.input_layernorm.weight\": {\"dtype\": \"F4\", "
	    "\"shape\": [8], \"data_offsets\": [128, 132]}, "
	    "\"lm_head.weight\": {\"dtype\": \"F8_E4M3\", "
	    "\"shape\": [4, 8], \"data_offsets\": [132, 164]}}", 164);
	seed(dir, 1, "{\"transformer.h.0.attn.weight\": {\"dtype\": \"U8\", "
	    "\"shape\": [], \"data_offsets\": [0, 1]}}   ", 1);
	seed(dir, 2, "{\"model_type\": \"gemma3\", \"text_config\": {"
	    "\"hidden_size\": 64, \"num_hidden_layers\": 3, "
	    "\"num_attention_heads\": 4, \"num_key_value_heads\": 1, "
	    "\"head_dim\": 32, \"sliding_window\": 16, \"layer_types\": ["
	    "\"sliding_attention\", \"sliding_attention\", "
	    "\"full_attention\"], \"max_position_embeddings\": 8192}}",
	    (size_t)-1);
	seed(dir, 3, "{\"model_type\": \"qwen2_moe\", \"hidden_size\": 64, "
	    "\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
	    "\"moe_intermediate_size\": 32, \"num_experts_per_tok\": 2, "
	    "\"sliding_window\": 4096, \"sliding_window_pattern\": 2, "
	    "\"use_sliding_window\": true, \"vocab_size\": 100}", (size_t)-1);
	exit(0);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char	*seeds;
	char		 err[SIZING_ERR_MAX];

	(void)argc;
	(void)argv;
	if ((seeds = getenv("FUZZ_WRITE_SEEDS")) != NULL)
		write_seeds(seeds);
	if (hfconfig_figures(CONFIG, strlen(CONFIG), &cfg, err,
	    sizeof(err)) != 0)
		errx(1, "config: %s", err);
	return (0);
}
