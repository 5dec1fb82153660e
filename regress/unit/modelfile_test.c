/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * modelfile.c: which files a model path names, opened and read: a GGUF
 * file, a split GGUF, a directory of safetensors shards and config.json,
 * a directory with one GGUF; and the refusals, none leaving a
 * descriptor open.  Files are made in the test's own directory.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <atf-c.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "modelfile.h"
#include "testutil.h"
#include "gguf_build.h"

static void
put(const char *path, const void *p, size_t n)
{
	int	 fd;

	ATF_REQUIRE((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644)) !=
	    -1);
	ATF_REQUIRE(write(fd, p, n) == (ssize_t)n);
	close(fd);
}

/* A GGUF file: its header, then zeros for the data. */
static void
gguf_file(const char *path, struct gb *b)
{
	gb_data(b);
	put(path, b->p, b->len);
	free(b->p);
}

/* A llama of 2 layers; with split, only its first layer's tensor. */
static void
llama(const char *path, int split)
{
	struct gb	 b;

	gb_head(&b, 3, split ? 1 : 3, 4);
	kv_str(&b, "general.architecture", "llama");
	kv_u32(&b, "llama.block_count", 2);
	kv_u32(&b, "llama.embedding_length", 64);
	kv_u32(&b, "llama.attention.head_count", 4);
	tensor(&b, "blk.0.attn_q.weight", 64, 64, T_F32);
	if (!split) {
		tensor(&b, "blk.1.attn_q.weight", 64, 64, T_F32);
		tensor(&b, "output.weight", 64, 10, T_F16);
	}
	gguf_file(path, &b);
}

/* The other file of a split: no architecture, the rest of the tensors. */
static void
llama_split2(const char *path)
{
	struct gb	 b;

	gb_head(&b, 3, 2, 2);
	gb_str(&b, "split.no");
	gb_u32(&b, V_U16);
	gb_bytes(&b, "\1\0", 2);
	kv_u32(&b, "split.count", 2);
	tensor(&b, "blk.1.attn_q.weight", 64, 64, T_F32);
	tensor(&b, "output.weight", 64, 10, T_F16);
	gguf_file(path, &b);
}

/* A safetensors file: its header, then datalen zeros. */
static void
st_file(const char *path, const char *json, size_t datalen)
{
	size_t	 n = strlen(json), i;
	uint8_t	*b;

	ATF_REQUIRE((b = calloc(1, 8 + n + datalen)) != NULL);
	for (i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)n >> (8 * i));
	memcpy(b + 8, json, n);
	put(path, b, 8 + n + datalen);
	free(b);
}

static int
figures(const char *path, struct sizing_figures *f, char *err)
{
	struct modelfile	 m;
	int			 before = open_fds(), r;

	err[0] = '\0';
	if (modelfile_open(path, &m, err, SIZING_ERR_MAX) == -1) {
		ATF_CHECK_EQ_MSG(open_fds(), before, "%s: a descriptor left open",
		    path);
		return (-1);
	}
	r = modelfile_read(&m, f, err, SIZING_ERR_MAX);
	/* Read twice: the same (no file offset is relied on). */
	if (r == 0) {
		struct sizing_figures	 again;

		ATF_CHECK_EQ(modelfile_read(&m, &again, err, SIZING_ERR_MAX),
		    0);
		ATF_CHECK(memcmp(&again, f, sizeof(again)) == 0);
	}
	modelfile_close(&m);
	ATF_CHECK_EQ_MSG(open_fds(), before, "%s: a descriptor left open", path);
	return (r);
}

static uint64_t
weights(const struct sizing_figures *f)
{
	return (f->weights_in + f->weights_out + f->layer[0].weights +
	    f->layer[1].weights);
}

ATF_TC_WITHOUT_HEAD(gguf);
ATF_TC_BODY(gguf, tc)
{
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];

	llama("m.gguf", 0);
	ATF_REQUIRE_MSG(figures("m.gguf", &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.format, SIZING_GGUF);
	ATF_CHECK_EQ(f.layers, 2);
	ATF_CHECK_EQ(f.layer[1].weights, 64 * 64 * 4);
	ATF_CHECK_EQ(f.weights_out, 64 * 10 * 2);

	/* In a directory, beside a vision projector. */
	ATF_REQUIRE(mkdir("d", 0755) == 0);
	llama("d/model.gguf", 0);
	put("d/mmproj-model-f16.gguf", "GGUF", 4);
	put("d/README.md", "x", 1);
	ATF_REQUIRE_MSG(figures("d", &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.layers, 2);
	/* Two models: which one? */
	llama("d/other.gguf", 0);
	ATF_CHECK_EQ(figures("d", &f, err), -1);
	ATF_CHECK_MATCH("more than one .gguf", err);
}

ATF_TC_WITHOUT_HEAD(split);
ATF_TC_BODY(split, tc)
{
	struct sizing_figures	 f, whole;
	char			 err[SIZING_ERR_MAX];

	llama("whole.gguf", 0);
	ATF_REQUIRE_MSG(figures("whole.gguf", &whole, err) == 0, "%s", err);
	llama("m-00001-of-00002.gguf", 1);
	/* The second is missing. */
	ATF_CHECK_EQ(figures("m-00001-of-00002.gguf", &f, err), -1);
	ATF_CHECK_MATCH("m-00002-of-00002.gguf", err);
	llama_split2("m-00002-of-00002.gguf");
	ATF_REQUIRE_MSG(figures("m-00001-of-00002.gguf", &f, err) == 0, "%s",
	    err);
	ATF_CHECK_EQ(f.layers, 2);
	ATF_CHECK_EQ(f.layer[0].weights, whole.layer[0].weights);
	ATF_CHECK_EQ(f.layer[1].weights, whole.layer[1].weights);
	ATF_CHECK_EQ(f.weights_out, whole.weights_out);
	ATF_CHECK_EQ(f.tensors, 3);
	/* A bad second file fails the whole. */
	put("m-00002-of-00002.gguf", "GGUF\3\0\0\0", 8);
	ATF_CHECK_EQ(figures("m-00001-of-00002.gguf", &f, err), -1);
	ATF_CHECK_MATCH("truncated", err);
}

#define CONFIG	"{\"num_hidden_layers\": 2, \"hidden_size\": 8, "		\
	"\"num_attention_heads\": 2, \"num_key_value_heads\": 1}"
#define SHARD(layer)							\
	"{\"model.layers." #layer ".mlp.up_proj.weight\": {\"dtype\": "	\
	"\"F16\", \"shape\": [8, 4], \"data_offsets\": [0, 64]}}"

ATF_TC_WITHOUT_HEAD(safetensors);
ATF_TC_BODY(safetensors, tc)
{
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX];

	ATF_REQUIRE(mkdir("hf", 0755) == 0);
	put("hf/config.json", CONFIG, strlen(CONFIG));
	st_file("hf/model-00001-of-00002.safetensors", SHARD(0), 64);
	st_file("hf/model-00002-of-00002.safetensors", SHARD(1), 64);
	put("hf/tokenizer.json", "{}", 2);
	ATF_REQUIRE_MSG(figures("hf", &f, err) == 0, "%s", err);
	ATF_CHECK_EQ(f.format, SIZING_SAFETENSORS);
	ATF_CHECK_EQ(f.layers, 2);
	ATF_CHECK_EQ(f.heads_kv, 1);
	ATF_CHECK_EQ(f.layer[0].weights, 64);
	ATF_CHECK_EQ(f.layer[1].weights, 64);
	ATF_CHECK_EQ(f.layer[1].k_width, 4);
	ATF_CHECK_EQ(weights(&f), 128);

	/* One shard by its path: config.json beside it is read. */
	ATF_REQUIRE_MSG(figures("hf/model-00002-of-00002.safetensors", &f,
	    err) == 0, "%s", err);
	ATF_CHECK_EQ(f.layers, 2);
	ATF_CHECK_EQ(f.layer[0].weights, 0);
	ATF_CHECK_EQ(f.layer[1].weights, 64);

	/* A shard with a bad header fails the whole. */
	st_file("hf/extra.safetensors", SHARD(1), 63);
	ATF_CHECK_EQ(figures("hf", &f, err), -1);
	ATF_CHECK_MATCH("larger than the file", err);
}

ATF_TC_WITHOUT_HEAD(refused);
ATF_TC_BODY(refused, tc)
{
	struct sizing_figures	 f;
	char			 err[SIZING_ERR_MAX], name[64], *big;
	int			 i;

	ATF_CHECK_EQ(figures("nonexistent", &f, err), -1);
	ATF_CHECK_MATCH("nonexistent: No such file", err);
	ATF_CHECK_EQ(figures("/dev/null", &f, err), -1);
	ATF_CHECK_MATCH("not a file or a directory", err);
	put("empty.gguf", "", 0);
	ATF_CHECK_EQ(figures("empty.gguf", &f, err), -1);
	ATF_CHECK_MATCH("empty file", err);
	put("junk.gguf", "not a model", 11);
	ATF_CHECK_EQ(figures("junk.gguf", &f, err), -1);
	ATF_CHECK_MATCH("not a GGUF file", err);

	ATF_REQUIRE(mkdir("none", 0755) == 0);
	ATF_CHECK_EQ(figures("none", &f, err), -1);
	ATF_CHECK_MATCH("no .safetensors file and no .gguf", err);

	/* A config.json over its bound. */
	ATF_REQUIRE(mkdir("bigcfg", 0755) == 0);
	ATF_REQUIRE((big = malloc(MODELFILE_CONFIG_MAX + 1)) != NULL);
	memset(big, ' ', MODELFILE_CONFIG_MAX + 1);
	put("bigcfg/config.json", big, MODELFILE_CONFIG_MAX + 1);
	free(big);
	st_file("bigcfg/a.safetensors", SHARD(0), 64);
	ATF_CHECK_EQ(figures("bigcfg", &f, err), -1);
	ATF_CHECK_MATCH("config.json: over", err);

	/* More shards than one model may have. */
	ATF_REQUIRE(mkdir("many", 0755) == 0);
	for (i = 0; i <= MODELFILE_MAX; i++) {
		snprintf(name, sizeof(name), "many/%03d.safetensors", i);
		st_file(name, SHARD(0), 64);
	}
	ATF_CHECK_EQ(figures("many", &f, err), -1);
	ATF_CHECK_MATCH("more than 64 files", err);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, gguf);
	ATF_TP_ADD_TC(tp, split);
	ATF_TP_ADD_TC(tp, safetensors);
	ATF_TP_ADD_TC(tp, refused);
	return (atf_no_error());
}
