/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * sizes [-F] [-b base] [-c ctx] [-g gpu-layers] [-k type] [-s seqs]
 *     [-u ubatch] [-v type] PATH
 *
 * The figures agencyd's readers take from a model's files (agencyd/
 * modelfile.c: a GGUF file or a safetensors directory) and the estimate
 * made from them, one "name value" a line, bytes as integers; for the
 * tests that hold them against what a real llama-server logs and takes.
 * -F: no flash attention; -k, -v: the KV cache types ("f16", "q8_0").
 * Exits 1 with the reader's message when the files cannot be read.
 */
#include <sys/types.h>

#include <err.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "modelfile.h"
#include "numarg.h"
#include "sizing.h"

static void
usage(void)
{
	fprintf(stderr, "usage: sizes [-F] [-b base] [-c ctx] "
	    "[-g gpu-layers] [-k type] [-s seqs] [-u ubatch] [-v type] "
	    "PATH\n");
	exit(2);
}

static int
cache_type(const char *name)
{
	int	 t;

	if ((t = gguf_type_byname(name)) == -1)
		errx(2, "unknown cache type %s", name);
	return (t);
}

int
main(int argc, char *argv[])
{
	struct modelfile	 m;
	struct sizing_figures	 f;
	struct sizing_params	 p;
	struct sizing_estimate	 e;
	char			 err[SIZING_ERR_MAX];
	uint64_t		 kv;
	uint32_t		 i;
	int			 ch;

	sizing_params_init(&p);
	while ((ch = getopt(argc, argv, "Fb:c:g:k:s:u:v:")) != -1) {
		switch (ch) {
		case 'F':
			p.flash_attn = 0;
			break;
		case 'b':
			p.base = numarg(optarg, 0, INT64_MAX / 2, "base");
			break;
		case 'c':
			p.ctx = numarg(optarg, 1, SIZING_CTX_MAX, "context");
			break;
		case 'g':
			p.gpu_layers = numarg(optarg, 0, 100000, "gpu layers");
			break;
		case 'k':
			p.type_k = cache_type(optarg);
			break;
		case 's':
			p.seqs = numarg(optarg, 1, 4096, "sequences");
			break;
		case 'u':
			p.ubatch = numarg(optarg, 1, 65536, "micro-batch");
			break;
		case 'v':
			p.type_v = cache_type(optarg);
			break;
		default:
			usage();
		}
	}
	if (argc - optind != 1)
		usage();
	if (modelfile_open(argv[optind], &m, err, sizeof(err)) == -1 ||
	    modelfile_read(&m, &f, err, sizeof(err)) == -1)
		errx(1, "%s", err);
	modelfile_close(&m);

	printf("format %s\n", f.format == SIZING_GGUF ? "gguf" :
	    "safetensors");
	printf("arch %s\n", f.arch);
	printf("layers %u\n", f.layers);
	printf("ctx_train %u\n", f.ctx_train);
	printf("embd %u\n", f.embd);
	printf("ff %u\n", f.ff);
	printf("heads %u\n", f.heads);
	printf("heads_kv %u\n", f.heads_kv);
	printf("key_len %u\n", f.key_len);
	printf("value_len %u\n", f.value_len);
	printf("swa_window %u\n", f.swa_window);
	printf("vocab %u\n", f.vocab);
	printf("tensors %" PRIu64 "\n", f.tensors);
	kv = f.weights_in + f.weights_out;
	for (i = 0; i < f.layers; i++)
		kv += f.layer[i].weights;
	printf("weights %" PRIu64 "\n", kv);
	printf("weights_in %" PRIu64 "\n", f.weights_in);
	printf("weights_out %" PRIu64 "\n", f.weights_out);
	for (i = 0; i < f.layers; i++)
		printf("layer %u %" PRIu64 " %u %u %u\n", i,
		    f.layer[i].weights, f.layer[i].k_width, f.layer[i].v_width,
		    f.layer[i].swa);

	if (sizing_estimate(&f, &p, &e, err, sizeof(err)) == -1)
		errx(1, "estimate: %s", err);
	printf("ctx %u\n", e.ctx);
	printf("cells %u\n", e.cells);
	printf("swa_cells %u\n", e.swa_cells);
	printf("gpu_layers %u\n", e.gpu_layers);
	printf("host_weights %" PRId64 "\n", e.host_weights);
	printf("host_kv %" PRId64 "\n", e.host_kv);
	printf("host_compute %" PRId64 "\n", e.host_compute);
	printf("host_base %" PRId64 "\n", e.host_base);
	printf("host %" PRId64 "\n", e.host);
	printf("dev_weights %" PRId64 "\n", e.dev_weights);
	printf("dev_kv %" PRId64 "\n", e.dev_kv);
	printf("dev_compute %" PRId64 "\n", e.dev_compute);
	printf("dev %" PRId64 "\n", e.dev);
	return (0);
}
