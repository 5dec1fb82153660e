/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The figures' check, and what a model will take from them.  See
 * sizing.h.  Calls gguf.c for ggml's types (the KV cache's).
 */
#include <sys/types.h>

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sizing.h"

static int	bad(char *, size_t, const char *, ...)
		    __attribute__((__format__ (printf, 3, 4)));

static int
bad(char *err, size_t errlen, const char *fmt, ...)
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
