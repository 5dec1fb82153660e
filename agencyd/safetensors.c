/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The figures of a safetensors model: each file's header (an 8-byte
 * little-endian length, then that many bytes of JSON: for each tensor
 * its dtype, shape and data_offsets into the data after the header),
 * and the model's shape from its config.json.  See sizing.h.
 *
 * json-c parses the JSON, so what it allocates grows with the header:
 * the header is held to SAFETENSORS_HEADER_MAX bytes and
 * SAFETENSORS_TENSORS_MAX tensors, config.json to HFCONFIG_MAX bytes,
 * and the nesting to a few levels.  The only allocation of our own is
 * the list of data ranges, to find an overlap or a hole (the format
 * allows neither), bounded the same way.  Calls estimate.c (sizing_err).
 *
 * Calls: estimate.c.
 */
#include <sys/types.h>

#include <ctype.h>
#include <json.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sizing.h"

#define SAFETENSORS_HEADER_MAX	(16 * 1024 * 1024)
#define SAFETENSORS_TENSORS_MAX	(1 << 17)
#define SAFETENSORS_DIMS_MAX	8
#define HFCONFIG_MAX		(1024 * 1024)
#define JSON_DEPTH		8

#define bad			sizing_err

/* dtypes and their bits an element (the format's list). */
static const struct {
	const char	*name;
	uint32_t	 bits;
} dtypes[] = {
	{ "BOOL", 8 }, { "U8", 8 }, { "I8", 8 }, { "F8_E5M2", 8 },
	{ "F8_E4M3", 8 }, { "F8_E8M0", 8 }, { "I16", 16 }, { "U16", 16 },
	{ "F16", 16 }, { "BF16", 16 }, { "I32", 32 }, { "U32", 32 },
	{ "F32", 32 }, { "I64", 64 }, { "U64", 64 }, { "F64", 64 },
	{ "C64", 64 }, { "F4", 4 }, { "F6_E2M3", 6 }, { "F6_E3M2", 6 },
};

/* Where a layer's tensors are named: PREFIX N "." */
static const char *const layer_prefixes[] = {
	"model.layers.",
	"model.language_model.layers.",
	"language_model.model.layers.",
	"model.decoder.layers.",
	"transformer.h.",
	"transformer.blocks.",
	"gpt_neox.layers.",
	"backbone.layers.",
};

/* The output head, sent to a device with the last layer. */
static const char *const out_prefixes[] = {
	"lm_head.",
	"embed_out.",
	"output.",
};

struct range {
	uint64_t	 begin;
	uint64_t	 end;
};

static struct json_object *json_parse(const char *, size_t, const char *,
		    char *, size_t);
static int	get_u64(struct json_object *, uint64_t *);
static int	range_cmp(const void *, const void *);
static int	layer_index(const char *, uint32_t, uint32_t *);
static int	tensor(const char *, struct json_object *, uint64_t,
		    struct range *, uint64_t *, char *, size_t);
static int	cfg_u32(struct json_object *, struct json_object *,
		    const char *const *, uint32_t, uint32_t *, char *,
		    size_t);

/* A JSON object in len bytes, blanks after it allowed; NULL on error. */
static struct json_object *
json_parse(const char *buf, size_t len, const char *what, char *err,
    size_t errlen)
{
	struct json_tokener	*tok;
	struct json_object	*obj;
	size_t			 end;

	if (len > INT_MAX) {
		bad(err, errlen, "%s: too long", what);
		return (NULL);
	}
	if ((tok = json_tokener_new_ex(JSON_DEPTH)) == NULL) {
		bad(err, errlen, "%s: out of memory", what);
		return (NULL);
	}
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	if (obj == NULL ||
	    json_tokener_get_error(tok) != json_tokener_success) {
		bad(err, errlen, "%s: not JSON (%s)", what,
		    json_tokener_error_desc(json_tokener_get_error(tok)));
		json_object_put(obj);
		json_tokener_free(tok);
		return (NULL);
	}
	end = json_tokener_get_parse_end(tok);
	json_tokener_free(tok);
	while (end < len && (buf[end] == ' ' || buf[end] == '\t' ||
	    buf[end] == '\r' || buf[end] == '\n'))
		end++;
	if (end < len || !json_object_is_type(obj, json_type_object)) {
		bad(err, errlen, "%s: not a JSON object", what);
		json_object_put(obj);
		return (NULL);
	}
	return (obj);
}

/* A JSON integer that is not negative: 0, or -1. */
static int
get_u64(struct json_object *o, uint64_t *v)
{
	int64_t	 i;

	if (!json_object_is_type(o, json_type_int))
		return (-1);
	i = json_object_get_int64(o);
	if (i < 0)
		return (-1);
	/* Over INT64_MAX json-c keeps a u64; nothing in a file is that
	 * large, and the callers bound what they take. */
	*v = i == INT64_MAX ? json_object_get_uint64(o) : (uint64_t)i;
	return (0);
}

static int
range_cmp(const void *a, const void *b)
{
	const struct range	*x = a, *y = b;

	if (x->begin != y->begin)
		return (x->begin < y->begin ? -1 : 1);
	if (x->end != y->end)
		return (x->end < y->end ? -1 : 1);
	return (0);
}

/* The layer of a tensor named PREFIX N ".", when N < max: 1, else 0. */
static int
layer_index(const char *name, uint32_t max, uint32_t *layer)
{
	const char	*p;
	uint64_t	 n;
	size_t		 i, plen;

	for (i = 0; i < sizeof(layer_prefixes) / sizeof(layer_prefixes[0]);
	    i++) {
		plen = strlen(layer_prefixes[i]);
		if (strncmp(name, layer_prefixes[i], plen) != 0)
			continue;
		p = name + plen;
		if (!isdigit((unsigned char)*p) || (p[0] == '0' &&
		    isdigit((unsigned char)p[1])))
			return (0);
		for (n = 0; isdigit((unsigned char)*p); p++) {
			n = n * 10 + (*p - '0');
			if (n >= max)
				return (0);
		}
		if (*p != '.')
			return (0);
		*layer = (uint32_t)n;
		return (1);
	}
	return (0);
}

/* One tensor's entry: its range in the data, and its bytes. */
static int
tensor(const char *name, struct json_object *t, uint64_t datalen,
    struct range *r, uint64_t *bytes, char *err, size_t errlen)
{
	struct json_object	*dt, *sh, *off, *e;
	const char		*dtype;
	uint64_t		 n = 1, d, bits = 0, nbits;
	size_t			 i, nd;

	if (!json_object_is_type(t, json_type_object) ||
	    !json_object_object_get_ex(t, "dtype", &dt) ||
	    !json_object_object_get_ex(t, "shape", &sh) ||
	    !json_object_object_get_ex(t, "data_offsets", &off) ||
	    !json_object_is_type(dt, json_type_string) ||
	    !json_object_is_type(sh, json_type_array) ||
	    !json_object_is_type(off, json_type_array))
		return (bad(err, errlen, "tensor %.64s: not a dtype, a "
		    "shape and data_offsets", name));
	dtype = json_object_get_string(dt);
	for (i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (strcmp(dtype, dtypes[i].name) == 0)
			bits = dtypes[i].bits;
	if (bits == 0)
		return (bad(err, errlen, "tensor %.64s: unknown dtype %.16s",
		    name, dtype));
	if ((nd = json_object_array_length(sh)) > SAFETENSORS_DIMS_MAX)
		return (bad(err, errlen, "tensor %.64s: %zu dimensions", name,
		    nd));
	for (i = 0; i < nd; i++) {
		e = json_object_array_get_idx(sh, i);
		if (get_u64(e, &d) == -1)
			return (bad(err, errlen, "tensor %.64s: a dimension "
			    "that is not a count", name));
		if (__builtin_mul_overflow(n, d, &n))
			return (bad(err, errlen, "tensor %.64s: larger than "
			    "the file", name));
	}
	if (__builtin_mul_overflow(n, bits, &nbits) || nbits / 8 > datalen)
		return (bad(err, errlen, "tensor %.64s: larger than the file",
		    name));
	if (nbits % 8 != 0)
		return (bad(err, errlen, "tensor %.64s: not whole bytes",
		    name));
	*bytes = nbits / 8;
	if (json_object_array_length(off) != 2 ||
	    get_u64(json_object_array_get_idx(off, 0), &r->begin) == -1 ||
	    get_u64(json_object_array_get_idx(off, 1), &r->end) == -1)
		return (bad(err, errlen, "tensor %.64s: data_offsets are not "
		    "two counts", name));
	if (r->begin > r->end || r->end > datalen)
		return (bad(err, errlen, "tensor %.64s: data [%llu, %llu) "
		    "outside the %llu bytes of data", name,
		    (unsigned long long)r->begin, (unsigned long long)r->end,
		    (unsigned long long)datalen));
	if (r->end - r->begin != *bytes)
		return (bad(err, errlen, "tensor %.64s: %llu bytes of data "
		    "for %llu", name, (unsigned long long)(r->end - r->begin),
		    (unsigned long long)*bytes));
	return (0);
}

uint64_t
safetensors_header_len(const uint8_t *buf, size_t len)
{
	uint64_t	 n = 0;
	int		 i;

	if (len < 8)
		return (0);
	for (i = 7; i >= 0; i--)
		n = n << 8 | buf[i];
	return (n >= 2 && n <= SAFETENSORS_HEADER_MAX ? n : 0);
}

int
safetensors_figures(const uint8_t *buf, size_t len, uint64_t filesize,
    struct sizing_figures *fout, char *err, size_t errlen)
{
	struct sizing_figures	 f;
	struct json_object	*root = NULL;
	struct json_object_iterator it, end;
	struct range		*ranges = NULL;
	const char		*name;
	uint64_t		 hlen, datalen, bytes = 0, at;
	uint32_t		 layer, max;
	size_t			 n = 0, cap, i;
	int			 ret = -1;

	if (len > filesize)
		return (bad(err, errlen, "%zu bytes read of a file of %llu",
		    len, (unsigned long long)filesize));
	if (len < 8)
		return (bad(err, errlen, "no header length"));
	if ((hlen = safetensors_header_len(buf, len)) == 0)
		return (bad(err, errlen, "a header length that cannot be"));
	if (hlen > len - 8)
		return (bad(err, errlen, "a header of %llu bytes in %zu",
		    (unsigned long long)hlen, len - 8));
	datalen = filesize - 8 - hlen;
	if ((root = json_parse((const char *)buf + 8, hlen, "header", err,
	    errlen)) == NULL)
		return (-1);
	if ((cap = json_object_object_length(root)) > SAFETENSORS_TENSORS_MAX) {
		bad(err, errlen, "%zu tensors", cap);
		goto done;
	}
	if ((ranges = calloc(cap > 0 ? cap : 1, sizeof(*ranges))) == NULL) {
		bad(err, errlen, "out of memory");
		goto done;
	}
	f = *fout;
	max = f.layers != 0 ? f.layers : SIZING_LAYERS_MAX;
	it = json_object_iter_begin(root);
	end = json_object_iter_end(root);
	for (; !json_object_iter_equal(&it, &end);
	    json_object_iter_next(&it)) {
		name = json_object_iter_peek_name(&it);
		if (strcmp(name, "__metadata__") == 0)
			continue;
		if (tensor(name, json_object_iter_peek_value(&it), datalen,
		    &ranges[n], &bytes, err, errlen) == -1)
			goto done;
		n++;
		if (layer_index(name, max, &layer)) {
			f.layer[layer].weights += bytes;
			if (layer >= f.layers)
				f.layers = layer + 1;
		} else {
			for (i = 0; i < sizeof(out_prefixes) /
			    sizeof(out_prefixes[0]); i++)
				if (strncmp(name, out_prefixes[i],
				    strlen(out_prefixes[i])) == 0)
					break;
			if (i < sizeof(out_prefixes) / sizeof(out_prefixes[0]))
				f.weights_out += bytes;
			else
				f.weights_in += bytes;
		}
	}
	/* The data: every byte a tensor's, one tensor's only. */
	qsort(ranges, n, sizeof(*ranges), range_cmp);
	for (at = 0, i = 0; i < n; i++) {
		if (ranges[i].begin != at) {
			bad(err, errlen, "data at %llu: %s",
			    (unsigned long long)at, ranges[i].begin < at ?
			    "two tensors over it" : "a hole");
			goto done;
		}
		at = ranges[i].end;
	}
	if (at != datalen) {
		bad(err, errlen, "%llu bytes of data after the tensors",
		    (unsigned long long)(datalen - at));
		goto done;
	}
	f.format = SIZING_SAFETENSORS;
	f.tensors += n;
	*fout = f;
	ret = 0;
 done:
	free(ranges);
	json_object_put(root);
	return (ret);
}

/*
 * A count from the first of keys that obj (else, when not NULL, dflt)
 * has and is not null, at most max: 0 with *v set, 1 when none has it,
 * -1 when it is not a count.
 */
static int
cfg_u32(struct json_object *obj, struct json_object *dflt,
    const char *const *keys, uint32_t max, uint32_t *v, char *err,
    size_t errlen)
{
	struct json_object	*o, *from;
	uint64_t		 u;
	size_t			 i;
	int			 pass;

	for (pass = 0; pass < 2; pass++) {
		from = pass == 0 ? obj : dflt;
		if (from == NULL)
			continue;
		for (i = 0; keys[i] != NULL; i++) {
			if (!json_object_object_get_ex(from, keys[i], &o) ||
			    o == NULL)
				continue;
			if (get_u64(o, &u) == -1 || u > max)
				return (bad(err, errlen, "config.json: %s is "
				    "not a count up to %u", keys[i], max));
			*v = (uint32_t)u;
			return (0);
		}
	}
	return (1);
}

/*
 * The layers' attention from config.json (c, or root for what c lacks):
 * which are a sliding window's, and their K and V widths; the tensors
 * of layers past f->layers counted in f->weights_in.  -1 with err.
 */
static int
hf_layers(struct sizing_figures *f, struct json_object *c,
    struct json_object *root, uint32_t hdim, uint32_t kv, char *err,
    size_t errlen)
{
	static const char *const k_swa[] = { "sliding_window", NULL };
	static const char *const k_period[] = { "sliding_window_pattern",
	    NULL };
	struct json_object	*o, *types = NULL;
	uint32_t		 period = 0, i;
	size_t			 n;

	/* A window, unless use_sliding_window says no (Qwen2). */
	f->swa_window = 0;
	if (cfg_u32(c, root, k_swa, SIZING_CTX_MAX, &f->swa_window, err,
	    errlen) == -1)
		return (-1);
	if (json_object_object_get_ex(c, "use_sliding_window", &o) &&
	    json_object_is_type(o, json_type_boolean) &&
	    !json_object_get_boolean(o))
		f->swa_window = 0;
	if (cfg_u32(c, root, k_period, SIZING_LAYERS_MAX, &period, err,
	    errlen) == -1)
		return (-1);
	if (json_object_object_get_ex(c, "layer_types", &o) &&
	    json_object_is_type(o, json_type_array)) {
		if ((n = json_object_array_length(o)) != f->layers) {
			bad(err, errlen, "config.json: %zu layer_types for %u "
			    "layers", n, f->layers);
			return (-1);
		}
		types = o;
	}
	for (i = 0; i < SIZING_LAYERS_MAX; i++) {
		struct sizing_layer	*l = &f->layer[i];

		if (i >= f->layers) {
			/* Tensors past config's layers were read first. */
			f->weights_in += l->weights;
			memset(l, 0, sizeof(*l));
			continue;
		}
		l->swa = 0;
		if (f->swa_window != 0 && types != NULL) {
			o = json_object_array_get_idx(types, i);
			l->swa = json_object_is_type(o, json_type_string) &&
			    strcmp(json_object_get_string(o),
			    "sliding_attention") == 0;
		} else if (f->swa_window != 0 && period != 0)
			l->swa = i % period < period - 1;
		l->k_width = l->v_width = hdim * kv;
	}
	return (0);
}

int
hfconfig_figures(const char *buf, size_t len, struct sizing_figures *fout,
    char *err, size_t errlen)
{
	static const char *const k_layers[] = { "num_hidden_layers",
	    "n_layer", "num_layers", NULL };
	static const char *const k_embd[] = { "hidden_size", "n_embd",
	    "d_model", NULL };
	static const char *const k_heads[] = { "num_attention_heads",
	    "n_head", "num_heads", NULL };
	static const char *const k_kv[] = { "num_key_value_heads", NULL };
	static const char *const k_hdim[] = { "head_dim", NULL };
	static const char *const k_ctx[] = { "max_position_embeddings",
	    "n_positions", "max_seq_len", NULL };
	static const char *const k_ff[] = { "intermediate_size", "n_inner",
	    "ffn_dim", NULL };
	static const char *const k_eff[] = { "moe_intermediate_size", NULL };
	static const char *const k_used[] = { "num_experts_per_tok", NULL };
	static const char *const k_vocab[] = { "vocab_size", NULL };
	struct sizing_figures	 f;
	struct json_object	*root, *c, *o;
	const char		*arch = NULL;
	uint32_t		 hdim, kv, eff = 0, used = 0, i;
	int			 ret = -1, r;

	if (len > HFCONFIG_MAX)
		return (bad(err, errlen, "config.json: over %d bytes",
		    HFCONFIG_MAX));
	if ((root = json_parse(buf, len, "config.json", err, errlen)) == NULL)
		return (-1);
	f = *fout;
	/* A multimodal model's language model is its text_config. */
	c = root;
	if (json_object_object_get_ex(root, "text_config", &o) &&
	    json_object_is_type(o, json_type_object))
		c = o;
	if ((json_object_object_get_ex(c, "model_type", &o) ||
	    json_object_object_get_ex(root, "model_type", &o)) &&
	    json_object_is_type(o, json_type_string))
		arch = json_object_get_string(o);
	memset(f.arch, 0, sizeof(f.arch));
	for (i = 0; arch != NULL && arch[i] != '\0' &&
	    i < sizeof(f.arch) - 1; i++)
		f.arch[i] = isalnum((unsigned char)arch[i]) ||
		    strchr("-_.", arch[i]) != NULL ? arch[i] : '_';

	f.layers = 0;
	if ((r = cfg_u32(c, root, k_layers, SIZING_LAYERS_MAX, &f.layers, err,
	    errlen)) == -1)
		goto done;
	if (r == 1 || f.layers == 0) {
		bad(err, errlen, "config.json: no layer count");
		goto done;
	}
	if (cfg_u32(c, root, k_embd, SIZING_DIM_MAX, &f.embd, err,
	    errlen) == -1 ||
	    cfg_u32(c, root, k_heads, SIZING_DIM_MAX, &f.heads, err,
	    errlen) == -1 ||
	    cfg_u32(c, root, k_ctx, SIZING_CTX_MAX, &f.ctx_train, err,
	    errlen) == -1 ||
	    cfg_u32(c, root, k_ff, SIZING_DIM_MAX, &f.ff, err, errlen) == -1 ||
	    cfg_u32(c, root, k_eff, SIZING_DIM_MAX, &eff, err, errlen) == -1 ||
	    cfg_u32(c, root, k_used, SIZING_DIM_MAX, &used, err,
	    errlen) == -1 ||
	    cfg_u32(c, root, k_vocab, SIZING_DIM_MAX, &f.vocab, err,
	    errlen) == -1)
		goto done;
	if (f.heads == 0) {
		bad(err, errlen, "config.json: no attention heads");
		goto done;
	}
	kv = f.heads;
	hdim = f.embd / f.heads;
	if (cfg_u32(c, root, k_kv, f.heads, &kv, err, errlen) == -1 ||
	    cfg_u32(c, root, k_hdim, SIZING_DIM_MAX, &hdim, err,
	    errlen) == -1)
		goto done;
	if ((uint64_t)eff * used > f.ff)
		f.ff = (uint64_t)eff * used > SIZING_DIM_MAX ? SIZING_DIM_MAX :
		    eff * used;
	f.heads_kv = kv;
	f.key_len = f.value_len = hdim;
	if ((uint64_t)hdim * kv > SIZING_DIM_MAX) {
		bad(err, errlen, "config.json: a KV width over %u",
		    SIZING_DIM_MAX);
		goto done;
	}

	if (hf_layers(&f, c, root, hdim, kv, err, errlen) == -1)
		goto done;
	f.format = SIZING_SAFETENSORS;
	*fout = f;
	ret = 0;
 done:
	json_object_put(root);
	return (ret);
}
