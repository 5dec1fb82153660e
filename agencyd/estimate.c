/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The figures' check (sizing_check), and what a model will take from
 * them (sizing_estimate, which says how it follows llama.cpp's buffers,
 * checked against the real llama-server by regress/real/sizing_test).
 * See sizing.h.  Pure: no I/O.
 *
 * Calls: gguf.c.
 */
#include <sys/types.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sizing.h"

#define bad	sizing_err

int
sizing_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list	 ap;

	va_start(ap, fmt);
	(void)vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return (-1);
}

int
sizing_check(const struct sizing_figures *f, char *err, size_t errlen)
{
	uint64_t	 total;
	uint32_t	 i;
	size_t		 n;

	if (f->format != SIZING_GGUF && f->format != SIZING_SAFETENSORS)
		return (bad(err, errlen, "unknown format %u", f->format));
	if ((n = strnlen(f->arch, sizeof(f->arch))) == sizeof(f->arch))
		return (bad(err, errlen, "an architecture name without its "
		    "end"));
	for (i = 0; i < n; i++)
		if ((unsigned char)f->arch[i] <= ' ' ||
		    (unsigned char)f->arch[i] >= 0x7f)
			return (bad(err, errlen, "an architecture name with "
			    "a byte %#x", (unsigned char)f->arch[i]));
	for (; i < sizeof(f->arch); i++)
		if (f->arch[i] != '\0')
			return (bad(err, errlen, "bytes after the "
			    "architecture name"));
	if (f->layers == 0 || f->layers > SIZING_LAYERS_MAX)
		return (bad(err, errlen, "%u layers", f->layers));
	if (f->ctx_train > SIZING_CTX_MAX || f->swa_window > SIZING_CTX_MAX)
		return (bad(err, errlen, "a context of %u tokens",
		    f->ctx_train > SIZING_CTX_MAX ? f->ctx_train :
		    f->swa_window));
	if (f->embd > SIZING_DIM_MAX || f->ff > SIZING_DIM_MAX ||
	    f->heads > SIZING_DIM_MAX || f->heads_kv > SIZING_DIM_MAX ||
	    f->key_len > SIZING_DIM_MAX || f->value_len > SIZING_DIM_MAX ||
	    f->vocab > SIZING_DIM_MAX)
		return (bad(err, errlen, "a width over %u", SIZING_DIM_MAX));
	if (f->heads_kv > f->heads && f->heads != 0)
		return (bad(err, errlen, "%u KV heads for %u heads",
		    f->heads_kv, f->heads));
	if (f->pad != 0)
		return (bad(err, errlen, "padding that is not zero"));
	if (f->weights_in > SIZING_BYTES_MAX ||
	    f->weights_out > SIZING_BYTES_MAX)
		return (bad(err, errlen, "weights over %llu bytes",
		    (unsigned long long)SIZING_BYTES_MAX));
	total = f->weights_in + f->weights_out;
	for (i = 0; i < SIZING_LAYERS_MAX; i++) {
		const struct sizing_layer	*l = &f->layer[i];

		if (i >= f->layers) {
			if (l->weights != 0 || l->k_width != 0 ||
			    l->v_width != 0 || l->swa != 0 || l->pad != 0)
				return (bad(err, errlen, "layer %u of %u is "
				    "set", i, f->layers));
			continue;
		}
		if (l->weights > SIZING_BYTES_MAX || l->pad != 0 ||
		    l->swa > 1 || l->k_width > SIZING_DIM_MAX ||
		    l->v_width > SIZING_DIM_MAX)
			return (bad(err, errlen, "layer %u is out of bounds",
			    i));
		if (l->swa && f->swa_window == 0)
			return (bad(err, errlen, "layer %u slides without a "
			    "window", i));
		total += l->weights;
		if (total > SIZING_BYTES_MAX)
			return (bad(err, errlen, "weights over %llu bytes",
			    (unsigned long long)SIZING_BYTES_MAX));
	}
	return (0);
}

void
sizing_params_init(struct sizing_params *p)
{
	memset(p, 0, sizeof(*p));
	p->type_k = p->type_v = gguf_type_byname("f16");
	p->flash_attn = 1;
	p->base = -1;
}

static uint64_t
pad(uint64_t n, uint64_t to)
{
	return ((n + to - 1) / to * to);
}

/* The bytes of a row of w elements of a ggml type (blocks rounded up). */
static uint64_t
row(uint32_t blck, uint32_t size, uint32_t w)
{
	return (((uint64_t)w + blck - 1) / blck * size);
}

/* *acc += a * b, 0; -1 once over SIZING_EST_MAX. */
static int
addmul(uint64_t *acc, uint64_t a, uint64_t b)
{
	uint64_t	 m;

	if (__builtin_mul_overflow(a, b, &m) || m > SIZING_EST_MAX ||
	    *acc + m > SIZING_EST_MAX)
		return (-1);
	*acc += m;
	return (0);
}

/*
 * The estimate follows what llama.cpp allocates (its log says each
 * part: "model buffer size", "KV buffer size", "compute buffer size",
 * "output buffer size"), checked against the real llama-server here
 * (regress/real/sizing_test):
 *
 *   weights  every tensor's bytes (llama.cpp maps the whole file and
 *            touches all of it while it loads)
 *   KV       for each layer, cells x (K row + V row) bytes of the cache
 *            types; cells are the context rounded up to 256, or for a
 *            sliding-window layer min(that, window x sequences +
 *            micro-batch, rounded up to 256) (llama-kv-cache-iswa.cpp)
 *   compute  the scheduler's buffer for one micro-batch: about
 *            3 x feed-forward + 4 x embedding floats a token (fitted to
 *            the logged buffer of llama-shaped models from 64 to 1024
 *            wide: within 0.3 MiB above it, never below), the f16 KQ
 *            mask (cells x micro-batch), and without flash attention
 *            the f32 scores (cells x micro-batch x heads) and an f16
 *            copy of the mask (cells x micro-batch); plus the
 *            logits of each sequence (vocabulary x sequences floats)
 *   base     the server itself (SIZING_BASE_DEFAULT for llama-server)
 *
 * With layers on a device, the last ones go there with their KV, the
 * output head too when every layer is offloaded and more are asked for
 * (llama.cpp's -ngl), and the compute buffer with them; the host keeps
 * a buffer for the input's embeddings (2 x embedding floats a token)
 * and the logits.  That split is llama.cpp's rule, not checked here on
 * a device (there is none).
 */
int
sizing_estimate(const struct sizing_figures *f,
    const struct sizing_params *p, struct sizing_estimate *e, char *err,
    size_t errlen)
{
	const struct sizing_layer	*l;
	uint64_t			 ctx, cells, swa, ub, seqs, kv;
	uint64_t			 compute = 0, hcompute = 0, hw, hkv = 0;
	uint64_t			 dw = 0, dkv = 0;
	uint32_t			 kb, ks, vb, vs, i, first_dev;

	memset(e, 0, sizeof(*e));
	if (!gguf_type_block(p->type_k, &kb, &ks) ||
	    !gguf_type_block(p->type_v, &vb, &vs))
		return (bad(err, errlen, "an unknown cache type"));
	if ((ctx = p->ctx != 0 ? p->ctx : f->ctx_train) == 0)
		return (bad(err, errlen, "no context: none given, none in the "
		    "file"));
	if (ctx > SIZING_CTX_MAX)
		return (bad(err, errlen, "a context of %llu tokens",
		    (unsigned long long)ctx));
	ub = p->ubatch != 0 ? p->ubatch : SIZING_UBATCH_DEFAULT;
	seqs = p->seqs != 0 ? p->seqs : SIZING_SEQS_DEFAULT;
	if (ub > SIZING_CTX_MAX || seqs > SIZING_DIM_MAX ||
	    p->base > (int64_t)SIZING_BYTES_MAX)
		return (bad(err, errlen, "a micro-batch, sequence count or "
		    "base out of bounds"));
	cells = pad(ctx, SIZING_CELL_PAD);
	swa = pad((uint64_t)f->swa_window * seqs + ub, SIZING_CELL_PAD);
	if (swa > cells)
		swa = cells;
	e->ctx = (uint32_t)ctx;
	e->cells = (uint32_t)cells;
	e->swa_cells = f->swa_window != 0 ? (uint32_t)swa : 0;

	/* The last gpu_layers layers on the device (sizing_check bounded
	 * the weights: their sums cannot overflow). */
	e->gpu_layers = p->gpu_layers < f->layers ? p->gpu_layers : f->layers;
	first_dev = f->layers - e->gpu_layers;
	hw = f->weights_in;
	if (p->gpu_layers > f->layers)
		dw = f->weights_out;
	else
		hw += f->weights_out;
	for (i = 0; i < f->layers; i++) {
		l = &f->layer[i];
		kv = row(kb, ks, l->k_width) + row(vb, vs, l->v_width);
		if (i >= first_dev) {
			dw += l->weights;
			if (addmul(&dkv, l->swa ? swa : cells, kv) == -1)
				goto big;
		} else {
			hw += l->weights;
			if (addmul(&hkv, l->swa ? swa : cells, kv) == -1)
				goto big;
		}
	}

	if (addmul(&compute, ub * 4, 3 * (uint64_t)f->ff +
	    4 * (uint64_t)f->embd) == -1 ||
	    addmul(&compute, cells * 2, ub) == -1 ||
	    (!p->flash_attn && addmul(&compute, cells * ub,
	    (uint64_t)f->heads * 4 + 2) == -1))
		goto big;
	if (e->gpu_layers > 0) {
		e->dev_compute = (int64_t)compute;
		if (addmul(&hcompute, ub * 4 * 2, f->embd) == -1)
			goto big;
	} else
		hcompute = compute;
	if (addmul(&hcompute, (uint64_t)f->vocab * 4, seqs) == -1)
		goto big;

	e->host_weights = (int64_t)hw;
	e->host_kv = (int64_t)hkv;
	e->host_compute = (int64_t)hcompute;
	e->host_base = p->base >= 0 ? p->base : SIZING_BASE_DEFAULT;
	e->dev_weights = (int64_t)dw;
	e->dev_kv = (int64_t)dkv;
	/* Each part is at most 2^60 bytes: the sums fit. */
	e->host = e->host_weights + e->host_kv + e->host_compute +
	    e->host_base;
	e->dev = e->dev_weights + e->dev_kv + e->dev_compute;
	return (0);
 big:
	memset(e, 0, sizeof(*e));
	return (bad(err, errlen, "an estimate over %llu bytes",
	    (unsigned long long)SIZING_EST_MAX));
}
