/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * estimate.c: the estimate from figures, part by part, against the
 * arithmetic written out here; regress/real/sizing_test holds it
 * against the real llama-server.
 */
#include <sys/types.h>

#include <atf-c.h>
#include <stdint.h>
#include <string.h>

#include "sizing.h"

#define MIB	(1024LL * 1024)

/* Three layers of 1000 bytes each (the last 3000), 64 wide, KV 32. */
static void
figures(struct sizing_figures *f)
{
	uint32_t	 i;

	memset(f, 0, sizeof(*f));
	f->format = SIZING_GGUF;
	strlcpy(f->arch, "llama", sizeof(f->arch));
	f->layers = 3;
	f->ctx_train = 1000;
	f->embd = 64;
	f->ff = 100;
	f->heads = 4;
	f->heads_kv = 2;
	f->key_len = f->value_len = 16;
	f->vocab = 500;
	f->weights_in = 7000;
	f->weights_out = 11000;
	for (i = 0; i < 3; i++) {
		f->layer[i].weights = i == 2 ? 3000 : 1000;
		f->layer[i].k_width = f->layer[i].v_width = 32;
	}
}

static void
estimate(const struct sizing_figures *f, const struct sizing_params *p,
    struct sizing_estimate *e)
{
	char	 err[SIZING_ERR_MAX];

	ATF_REQUIRE_EQ_MSG(sizing_check(f, err, sizeof(err)), 0, "%s", err);
	ATF_REQUIRE_MSG(sizing_estimate(f, p, e, err, sizeof(err)) == 0, "%s",
	    err);
	ATF_CHECK_EQ(e->host, e->host_weights + e->host_kv +
	    e->host_compute + e->host_base);
	ATF_CHECK_EQ(e->dev, e->dev_weights + e->dev_kv + e->dev_compute);
}

/* All on the host: the file's context, f16 caches, flash attention. */
ATF_TC_WITHOUT_HEAD(host);
ATF_TC_BODY(host, tc)
{
	struct sizing_figures	 f;
	struct sizing_params	 p;
	struct sizing_estimate	 e;

	figures(&f);
	sizing_params_init(&p);
	estimate(&f, &p, &e);
	ATF_CHECK_EQ(e.ctx, 1000);
	ATF_CHECK_EQ(e.cells, 1024);		/* rounded up to 256 */
	ATF_CHECK_EQ(e.swa_cells, 0);
	ATF_CHECK_EQ(e.gpu_layers, 0);
	ATF_CHECK_EQ(e.host_weights, 7000 + 11000 + 5000);
	/* 3 layers x 1024 cells x (32 + 32) f16 */
	ATF_CHECK_EQ(e.host_kv, 3 * 1024 * 64 * 2);
	/* 512 tokens x 4 bytes x (3 x 100 + 4 x 64), the f16 mask, and
	 * the logits of 4 sequences */
	ATF_CHECK_EQ(e.host_compute, 512 * 4 * (300 + 256) + 1024 * 512 * 2 +
	    500 * 4 * 4);
	ATF_CHECK_EQ(e.host_base, SIZING_BASE_DEFAULT);
	ATF_CHECK_EQ(e.dev, 0);

	/* A context, a micro-batch, sequences and a base of its own. */
	p.ctx = 256;
	p.ubatch = 128;
	p.seqs = 1;
	p.base = 5;
	estimate(&f, &p, &e);
	ATF_CHECK_EQ(e.cells, 256);
	ATF_CHECK_EQ(e.host_kv, 3 * 256 * 64 * 2);
	ATF_CHECK_EQ(e.host_compute, 128 * 4 * (300 + 256) + 256 * 128 * 2 +
	    500 * 4);
	ATF_CHECK_EQ(e.host_base, 5);
	p.ctx = 257;
	estimate(&f, &p, &e);
	ATF_CHECK_EQ(e.cells, 512);

	/* Without flash attention: the f32 scores and a mask's copy. */
	sizing_params_init(&p);
	p.flash_attn = 0;
	estimate(&f, &p, &e);
	ATF_CHECK_EQ(e.host_compute, 512 * 4 * (300 + 256) + 1024 * 512 * 2 +
	    1024 * 512 * (4 * 4 + 2) + 500 * 4 * 4);
}

/* Quantized caches: whole blocks a row. */
ATF_TC_WITHOUT_HEAD(cache_types);
ATF_TC_BODY(cache_types, tc)
{
	struct sizing_figures	 f;
	struct sizing_params	 p;
	struct sizing_estimate	 e;
	char			 err[SIZING_ERR_MAX];

	figures(&f);
	f.layer[0].k_width = 40;	/* not whole blocks of 32 */
	sizing_params_init(&p);
	p.ctx = 256;
	p.type_k = gguf_type_byname("q8_0");
	p.type_v = gguf_type_byname("q4_0");
	estimate(&f, &p, &e);
	ATF_CHECK_EQ(e.host_kv, 256 * ((2 * 34 + 18) + 2 * (34 + 18)));
	p.type_k = gguf_type_byname("f32");
	p.type_v = gguf_type_byname("bf16");
	estimate(&f, &p, &e);
	ATF_CHECK_EQ(e.host_kv, 256 * ((40 * 4 + 32 * 2) + 2 * (32 * 6)));
	p.type_v = 4;		/* no such type */
	ATF_CHECK_EQ(sizing_estimate(&f, &p, &e, err, sizeof(err)), -1);
	ATF_CHECK_MATCH("unknown cache type", err);
}

/* Sliding layers hold window x sequences + micro-batch cells. */
ATF_TC_WITHOUT_HEAD(sliding);
ATF_TC_BODY(sliding, tc)
{
	struct sizing_figures	 f;
	struct sizing_params	 p;
	struct sizing_estimate	 e;

	figures(&f);
	f.swa_window = 100;
	f.layer[0].swa = f.layer[1].swa = 1;
	sizing_params_init(&p);
	p.ctx = 8192;
	estimate(&f, &p, &e);
	/* 100 x 4 + 512 = 912, to 1024 */
	ATF_CHECK_EQ(e.swa_cells, 1024);
	ATF_CHECK_EQ(e.host_kv, (2 * 1024 + 8192) * 64 * 2);
	/* Never more than a full layer's. */
	p.ctx = 600;
	estimate(&f, &p, &e);
	ATF_CHECK_EQ(e.cells, 768);
	ATF_CHECK_EQ(e.swa_cells, 768);
	ATF_CHECK_EQ(e.host_kv, 3 * 768 * 64 * 2);
	p.ctx = 8192;
	p.seqs = 1;
	p.ubatch = 156;
	estimate(&f, &p, &e);
	ATF_CHECK_EQ(e.swa_cells, 256);
}

/* Layers on a device: the last ones, with their KV and the compute. */
ATF_TC_WITHOUT_HEAD(offload);
ATF_TC_BODY(offload, tc)
{
	struct sizing_figures	 f;
	struct sizing_params	 p;
	struct sizing_estimate	 e;
	int64_t			 compute;

	figures(&f);
	sizing_params_init(&p);
	p.ctx = 256;
	p.gpu_layers = 1;
	estimate(&f, &p, &e);
	compute = 512 * 4 * (300 + 256) + 256 * 512 * 2;
	ATF_CHECK_EQ(e.gpu_layers, 1);
	ATF_CHECK_EQ(e.dev_weights, 3000);	/* the last layer */
	ATF_CHECK_EQ(e.host_weights, 7000 + 11000 + 2000);
	ATF_CHECK_EQ(e.dev_kv, 256 * 64 * 2);
	ATF_CHECK_EQ(e.host_kv, 2 * 256 * 64 * 2);
	ATF_CHECK_EQ(e.dev_compute, compute);
	ATF_CHECK_EQ(e.host_compute, 512 * 4 * 2 * 64 + 500 * 4 * 4);

	/* Every layer: the output stays, unless more are asked for. */
	p.gpu_layers = 3;
	estimate(&f, &p, &e);
	ATF_CHECK_EQ(e.dev_weights, 5000);
	ATF_CHECK_EQ(e.host_weights, 7000 + 11000);
	ATF_CHECK_EQ(e.host_kv, 0);
	p.gpu_layers = 999;
	estimate(&f, &p, &e);
	ATF_CHECK_EQ(e.gpu_layers, 3);
	ATF_CHECK_EQ(e.dev_weights, 5000 + 11000);
	ATF_CHECK_EQ(e.host_weights, 7000);
	ATF_CHECK_EQ(e.dev_kv, 3 * 256 * 64 * 2);
	ATF_CHECK_EQ(e.dev_compute, compute);
}

ATF_TC_WITHOUT_HEAD(refused);
ATF_TC_BODY(refused, tc)
{
	struct sizing_figures	 f;
	struct sizing_params	 p;
	struct sizing_estimate	 e;
	char			 err[SIZING_ERR_MAX];

	figures(&f);
	f.ctx_train = 0;
	sizing_params_init(&p);
	ATF_CHECK_EQ(sizing_estimate(&f, &p, &e, err, sizeof(err)), -1);
	ATF_CHECK_MATCH("no context", err);
	p.ctx = SIZING_CTX_MAX + 1;
	ATF_CHECK_EQ(sizing_estimate(&f, &p, &e, err, sizeof(err)), -1);
	ATF_CHECK_MATCH("a context of", err);
	p.ctx = 512;
	p.base = INT64_MAX;
	ATF_CHECK_EQ(sizing_estimate(&f, &p, &e, err, sizeof(err)), -1);
	ATF_CHECK_MATCH("out of bounds", err);
	/* The largest figures sizing_check lets by: an error, not an
	 * overflow (UBSan in the sanitizer build). */
	sizing_params_init(&p);
	p.ctx = SIZING_CTX_MAX;
	p.ubatch = SIZING_CTX_MAX;
	p.seqs = SIZING_DIM_MAX;
	p.flash_attn = 0;
	f.heads = f.ff = f.embd = f.vocab = SIZING_DIM_MAX;
	f.heads_kv = 1;
	f.swa_window = SIZING_CTX_MAX;
	f.layer[0].swa = 1;
	f.layer[1].k_width = SIZING_DIM_MAX;
	ATF_REQUIRE_EQ_MSG(sizing_check(&f, err, sizeof(err)), 0, "%s", err);
	ATF_CHECK_EQ(sizing_estimate(&f, &p, &e, err, sizeof(err)), -1);
	ATF_CHECK_MATCH("an estimate over", err);
	ATF_CHECK_EQ(e.host, 0);
}

ATF_TP_ADD_TCS(tp)
{
	ATF_TP_ADD_TC(tp, host);
	ATF_TP_ADD_TC(tp, cache_types);
	ATF_TP_ADD_TC(tp, sliding);
	ATF_TP_ADD_TC(tp, offload);
	ATF_TP_ADD_TC(tp, refused);
	return (atf_no_error());
}
