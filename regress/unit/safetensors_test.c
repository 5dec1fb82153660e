/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * safetensors.c: safetensors headers and config.json, written here as
 * text.  A header is handed over without the data after it (in a
 * buffer of its own size), so that a read of the data would be caught.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sizing.h"

/* The header json as a file's first bytes; the data is datalen more. */
static int
st(const char *json, uint64_t datalen, struct sizing_figures *f, char *err)
{
	size_t	 n = strlen(json);
	uint8_t	*b;
	int	 i, r;

	ATF_REQUIRE((b = malloc(8 + n)) != NULL);
	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)n >> (8 * i));
	memcpy(b + 8, json, n);
	err[0] = '\0';
	r = safetensors_figures(b, 8 + n, 8 + n + datalen, f, err,
	    SIZING_ERR_MAX);
	free(b);
	return (r);
}

static int
cfg(const char *json, struct sizing_figures *f, char *err)
{
	char	*b;
	int	 r;

	/* Not NUL-terminated: a read past the end is caught. */
	ATF_REQUIRE((b = malloc(strlen(json))) != NULL);
	memcpy(b, json, strlen(json));
	err[0] = '\0';
	r = hfconfig_figures(b, strlen(json), f, err, SIZING_ERR_MAX);
	free(b);
	return (r);
}

#define LLAMA_CONFIG	"{\"architectures\": [\"LlamaForCausalLM\"], "	\
	"\"model_type\": \"llama\", \"hidden_size\": 64, "		\
	"\"intermediate_size\": 160, \"num_hidden_layers\": 2, "	\
	"\"num_attention_heads\": 8, \"num_key_value_heads\": 2, "	\
	"\"max_position_embeddings\": 2048, \"vocab_size\": 100, "	\
	"\"rope_scaling\": null, \"torch_dtype\": \"bfloat16\"}"

/* embed 100x64 BF16, 2 layers of q 64x64 F16 and norm 64 F32, head. */
#define LLAMA_ST	"{\"__metadata__\": {\"format\": \"pt\"}, "	\
	"\"model.embed_tokens.weight\": {\"dtype\": \"BF16\", "		\
	"\"shape\": [100, 64], \"data_offsets\": [0, 12800]}, "		\
	"\"model.layers.0.self_attn.q_proj.weight\": {\"dtype\": \"F16\", " \
	"\"shape\": [64, 64], \"data_offsets\": [12800, 20992]}, "	\
	"\"model.layers.1.self_attn.q_proj.weight\": {\"dtype\": \"F16\", " \
	"\"shape\": [64, 64], \"data_offsets\": [20992, 29184]}, "	\
	"\"model.layers.1.input_layernorm.weight\": {\"dtype\": \"F32\", " \
	"\"shape\": [64], \"data_offsets\": [29184, 29440]}, "		\
	"\"lm_head.weight\": {\"dtype\": \"F4\", "			\
	"\"shape\": [100, 64], \"data_offsets\": [29440, 32640]}}"
#define LLAMA_DATA	32640

ATF_TC_WITHOUT_HEAD(llama);
ATF_TC_BODY(llama, tc)
{
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];

	memset(&f, 0, sizeof(f));
	ATF_REQUIRE_MSG(cfg(LLAMA_CONFIG, &f, err) == 0, "%s", err);
	ATF_REQUIRE_MSG(st(LLAMA_ST, LLAMA_DATA, &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.format, SIZING_SAFETENSORS);
	ATF_CHECK_STREQ(f.arch, "llama");
	ATF_CHECK_EQ(f.layers, 2);
	ATF_CHECK_EQ(f.embd, 64);
	ATF_CHECK_EQ(f.heads, 8);
	ATF_CHECK_EQ(f.heads_kv, 2);
	ATF_CHECK_EQ(f.key_len, 8);
	ATF_CHECK_EQ(f.ctx_train, 2048);
	ATF_CHECK_EQ(f.ff, 160);
	ATF_CHECK_EQ(f.vocab, 100);
	ATF_CHECK_EQ(f.tensors, 5);
	ATF_CHECK_EQ(f.weights_in, 12800);
	ATF_CHECK_EQ(f.layer[0].weights, 8192);
	ATF_CHECK_EQ(f.layer[1].weights, 8192 + 256);
	ATF_CHECK_EQ(f.weights_out, 3200);		/* 4 bits */
	ATF_CHECK_EQ(f.layer[0].k_width, 16);
	ATF_CHECK_EQ(f.layer[1].v_width, 16);
	ATF_CHECK_EQ(sizing_check(&f, err, sizeof(err)), 0);

	/* A second shard adds up. */
	ATF_REQUIRE_MSG(st(LLAMA_ST, LLAMA_DATA, &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.layer[1].weights, 2 * (8192 + 256));
	ATF_CHECK_EQ(f.weights_in, 2 * 12800);
	ATF_CHECK_EQ(f.tensors, 10);

	/* Without config.json, the layers come from the tensors. */
	memset(&f, 0, sizeof(f));
	ATF_REQUIRE_MSG(st(LLAMA_ST, LLAMA_DATA, &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.layers, 2);
	ATF_CHECK_EQ(f.layer[1].weights, 8192 + 256);
	/* A config with one layer, read after: the second is outside. */
	ATF_REQUIRE_MSG(cfg("{\"num_hidden_layers\": 1, \"hidden_size\": 64,"
	    "\"num_attention_heads\": 8}", &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.layers, 1);
	ATF_CHECK_EQ(f.layer[1].weights, 0);
	ATF_CHECK_EQ(f.weights_in, 12800 + 8192 + 256);
	ATF_CHECK_EQ(sizing_check(&f, err, sizeof(err)), 0);

	/* That config read first: layer 1's tensors are outside too. */
	memset(&f, 0, sizeof(f));
	ATF_REQUIRE_MSG(cfg("{\"num_hidden_layers\": 1, \"hidden_size\": 64,"
	    "\"num_attention_heads\": 8}", &f, err) == 0, "%s", err);
	ATF_REQUIRE_MSG(st(LLAMA_ST, LLAMA_DATA, &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.layers, 1);
	ATF_CHECK_EQ(f.layer[0].weights, 8192);
	ATF_CHECK_EQ(f.layer[1].weights, 0);
	ATF_CHECK_EQ(f.weights_in, 12800 + 8192 + 256);
	ATF_CHECK_EQ(sizing_check(&f, err, sizeof(err)), 0);
}

/* Each header: its data's length, and what it must be refused with. */
ATF_TC_WITHOUT_HEAD(bad_headers);
ATF_TC_BODY(bad_headers, tc)
{
	static const struct {
		const char	*json;
		uint64_t	 data;
		const char	*why;
	} cases[] = {
		{ "[]", 0, "not a JSON object" },
		{ "{ ", 0, "not JSON" },
		{ "{} x", 0, "not a JSON object" },
		{ "{\"a\": 1}", 0, "not a dtype" },
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [1]}}", 2,
		    "not a dtype" },
		{ "{\"a\": {\"dtype\": \"Q4\", \"shape\": [1], "
		    "\"data_offsets\": [0, 1]}}", 1, "unknown dtype Q4" },
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [-1], "
		    "\"data_offsets\": [0, 2]}}", 2, "not a count" },
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [1.5], "
		    "\"data_offsets\": [0, 2]}}", 2, "not a count" },
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [1,1,1,1,1,1,1,1,1],"
		    " \"data_offsets\": [0, 2]}}", 2, "9 dimensions" },
		{ "{\"a\": {\"dtype\": \"F64\", \"shape\": [4294967296, "
		    "4294967296], \"data_offsets\": [0, 8]}}", 8,
		    "larger than the file" },
		{ "{\"a\": {\"dtype\": \"F64\", \"shape\": "
		    "[18446744073709551615], \"data_offsets\": [0, 8]}}", 8,
		    "larger than the file" },
		{ "{\"a\": {\"dtype\": \"F4\", \"shape\": [3], "
		    "\"data_offsets\": [0, 2]}}", 2, "not whole bytes" },
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [1], "
		    "\"data_offsets\": [0]}}", 2, "not two counts" },
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [1], "
		    "\"data_offsets\": [2, 0]}}", 2, "outside" },
		{ "{\"a\": {\"dtype\": \"U8\", \"shape\": [1], "
		    "\"data_offsets\": [0, 2]}}", 1, "outside" },
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [2], "
		    "\"data_offsets\": [0, 2]}}", 4, "2 bytes of data for 4" },
		/* overlap: b over a's second half */
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [2], "
		    "\"data_offsets\": [0, 4]}, \"b\": {\"dtype\": \"F16\", "
		    "\"shape\": [2], \"data_offsets\": [2, 6]}}", 6,
		    "data at 4: two tensors over it" },
		/* the same range twice */
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [2], "
		    "\"data_offsets\": [0, 4]}, \"b\": {\"dtype\": \"U8\", "
		    "\"shape\": [4], \"data_offsets\": [0, 4]}}", 4,
		    "two tensors over it" },
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [1], "
		    "\"data_offsets\": [2, 4]}}", 4, "data at 0: a hole" },
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [1], "
		    "\"data_offsets\": [0, 2]}}", 6, "4 bytes of data after" },
		/* a name given twice: json-c keeps one, the other's bytes
		 * are a hole */
		{ "{\"a\": {\"dtype\": \"F16\", \"shape\": [1], "
		    "\"data_offsets\": [0, 2]}, \"a\": {\"dtype\": \"F16\", "
		    "\"shape\": [1], \"data_offsets\": [2, 4]}}", 4,
		    "data at 0: a hole" },
		{ "{\"a\": {\"b\": {\"c\": {\"d\": {\"e\": {\"f\": {\"g\": "
		    "{\"h\": {}}}}}}}}}", 0, "not JSON" },
	};
	struct sizing_figures	 f, before;
	char			 err[SIZING_ERR_MAX];
	size_t			 i;

	memset(&before, 0, sizeof(before));
	before.layers = 1;
	before.layer[0].weights = 7;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f = before;
		ATF_CHECK_EQ_MSG(st(cases[i].json, cases[i].data, &f, err), -1,
		    "case %zu accepted", i);
		ATF_CHECK_MATCH_MSG(cases[i].why, err, "case %zu: \"%s\"", i,
		    err);
		ATF_CHECK_MSG(memcmp(&f, &before, sizeof(f)) == 0,
		    "case %zu changed the figures", i);
	}
}

/* The length before the header. */
ATF_TC_WITHOUT_HEAD(header_length);
ATF_TC_BODY(header_length, tc)
{
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];
	uint8_t			 b[16];

	memset(&f, 0, sizeof(f));
	memset(b, 0, sizeof(b));
	ATF_CHECK_EQ(safetensors_figures(b, 7, 100, &f, err, sizeof(err)), -1);
	ATF_CHECK_MATCH("no header length", err);
	ATF_CHECK_EQ(safetensors_figures(b, 16, 100, &f, err, sizeof(err)),
	    -1);
	ATF_CHECK_MATCH("cannot be", err);
	b[0] = 9;	/* 9 bytes, and 8 are there */
	ATF_CHECK_EQ(safetensors_figures(b, 16, 100, &f, err, sizeof(err)),
	    -1);
	ATF_CHECK_MATCH("a header of 9 bytes in 8", err);
	ATF_CHECK_EQ(safetensors_header_len(b, 16), 9);
	b[0] = 0;
	b[3] = 2;	/* 32 MiB */
	ATF_CHECK_EQ(safetensors_header_len(b, 16), 0);
	b[3] = 0;
	b[7] = 0x80;
	ATF_CHECK_EQ(safetensors_header_len(b, 16), 0);
	ATF_CHECK_EQ(safetensors_header_len(b, 7), 0);
	ATF_CHECK_EQ(safetensors_figures(b, 16, 15, &f, err, sizeof(err)),
	    -1);
}

/* Shapes of the configs models ship. */
ATF_TC_WITHOUT_HEAD(configs);
ATF_TC_BODY(configs, tc)
{
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];
	uint32_t		 i;

	/* gemma3: a text_config, a sliding window, layer_types */
	memset(&f, 0, sizeof(f));
	ATF_REQUIRE_MSG(cfg("{\"model_type\": \"gemma3\", \"text_config\": {"
	    "\"model_type\": \"gemma3_text\", \"hidden_size\": 2560, "
	    "\"num_hidden_layers\": 4, \"num_attention_heads\": 8, "
	    "\"num_key_value_heads\": 4, \"head_dim\": 256, "
	    "\"sliding_window\": 1024, \"layer_types\": [\"sliding_attention\","
	    " \"sliding_attention\", \"sliding_attention\", "
	    "\"full_attention\"]}, \"vision_config\": {\"num_hidden_layers\": "
	    "27}}", &f, err) == 0, "%s", err);
	ATF_CHECK_STREQ(f.arch, "gemma3_text");
	ATF_CHECK_EQ(f.layers, 4);
	ATF_CHECK_EQ(f.key_len, 256);
	ATF_CHECK_EQ(f.swa_window, 1024);
	for (i = 0; i < 4; i++) {
		ATF_CHECK_EQ(f.layer[i].swa, i != 3);
		ATF_CHECK_EQ(f.layer[i].k_width, 1024);
	}
	ATF_CHECK_EQ(sizing_check(&f, err, sizeof(err)), 0);

	/* a pattern instead of types; a null falls back to the root */
	memset(&f, 0, sizeof(f));
	ATF_REQUIRE_MSG(cfg("{\"num_hidden_layers\": 12, \"text_config\": {"
	    "\"num_hidden_layers\": null, \"hidden_size\": 64, "
	    "\"num_attention_heads\": 4, \"sliding_window\": 512, "
	    "\"sliding_window_pattern\": 6}}", &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.layers, 12);
	for (i = 0; i < 12; i++)
		ATF_CHECK_EQ(f.layer[i].swa, i % 6 != 5);

	/* Qwen2: a window that is not used; MoE experts */
	memset(&f, 0, sizeof(f));
	ATF_REQUIRE_MSG(cfg("{\"model_type\": \"qwen2_moe\", "
	    "\"hidden_size\": 64, \"num_hidden_layers\": 2, "
	    "\"num_attention_heads\": 4, \"intermediate_size\": 128, "
	    "\"moe_intermediate_size\": 96, \"num_experts_per_tok\": 4, "
	    "\"sliding_window\": 4096, \"use_sliding_window\": false}", &f,
	    err) == 0, "%s", err);
	ATF_CHECK_EQ(f.swa_window, 0);
	ATF_CHECK_EQ(f.layer[0].swa, 0);
	ATF_CHECK_EQ(f.ff, 384);
	ATF_CHECK_EQ(f.heads_kv, 4);
	ATF_CHECK_EQ(f.layer[0].k_width, 64);
	/* An architecture name is kept to safe bytes. */
	memset(&f, 0, sizeof(f));
	ATF_REQUIRE_MSG(cfg("{\"model_type\": \"a b\\n/c\", "
	    "\"num_hidden_layers\": 1, \"num_attention_heads\": 1}", &f,
	    err) == 0, "%s", err);
	ATF_CHECK_STREQ(f.arch, "a_b__c");
}

ATF_TC_WITHOUT_HEAD(bad_configs);
ATF_TC_BODY(bad_configs, tc)
{
	static const struct {
		const char	*json;
		const char	*why;
	} cases[] = {
		{ "[1]", "not a JSON object" },
		{ "{\"hidden_size\": 64}", "no layer count" },
		{ "{\"num_hidden_layers\": 0}", "no layer count" },
		{ "{\"num_hidden_layers\": 513}", "not a count up to 512" },
		{ "{\"num_hidden_layers\": \"2\"}", "not a count" },
		{ "{\"num_hidden_layers\": 2}", "no attention heads" },
		{ "{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
		    "\"num_key_value_heads\": 8}", "not a count up to 4" },
		{ "{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
		    "\"hidden_size\": -64}", "hidden_size is not a count" },
		{ "{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
		    "\"head_dim\": 1048576}", "a KV width over" },
		{ "{\"num_hidden_layers\": 2, \"num_attention_heads\": 4, "
		    "\"sliding_window\": 8, \"layer_types\": [\"full\"]}",
		    "1 layer_types for 2 layers" },
	};
	struct sizing_figures	 f, before;
	char			 err[SIZING_ERR_MAX];
	size_t			 i;

	memset(&before, 0, sizeof(before));
	before.layers = 3;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		f = before;
		ATF_CHECK_EQ_MSG(cfg(cases[i].json, &f, err), -1,
		    "case %zu accepted", i);
		ATF_CHECK_MATCH_MSG(cases[i].why, err, "case %zu: \"%s\"", i,
		    err);
		ATF_CHECK_MSG(memcmp(&f, &before, sizeof(f)) == 0,
		    "case %zu changed the figures", i);
	}
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, llama);
	ATF_TP_ADD_TC(tp, bad_headers);
	ATF_TP_ADD_TC(tp, header_length);
	ATF_TP_ADD_TC(tp, configs);
	ATF_TP_ADD_TC(tp, bad_configs);
	return (atf_no_error());
}
