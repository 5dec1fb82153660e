/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * Sizing a model from its own files (issue 31): the figures read from a
 * GGUF file (gguf.c) or from safetensors files and config.json
 * (safetensors.c), their check, and the estimate made from them
 * (estimate.c).
 *
 * The readers are pure functions over bytes in memory.  Their input is
 * written by the model user, so agencyd never runs them as root: an
 * unprivileged, sandboxed child does (sizer.c) and sends the figures,
 * which agencyd checks again (sizing_check) before it uses them.  No
 * reader allocates in proportion to a count the file gives, and none
 * reads a tensor's data: only the header before it.
 */
#ifndef AGENCY_SIZING_H
#define AGENCY_SIZING_H

#include <stddef.h>
#include <stdint.h>

#define SIZING_LAYERS_MAX	512	/* as llama.cpp's LLAMA_MAX_LAYERS */
#define SIZING_ARCH_MAX		32	/* with the NUL */
#define SIZING_ERR_MAX		160	/* an err buffer that always fits */
/* Bounds on a sane model, for sizing_check: a width, a count. */
#define SIZING_DIM_MAX		(1U << 20)
#define SIZING_CTX_MAX		(1U << 26)	/* 64 Mi tokens */
#define SIZING_BYTES_MAX	(1ULL << 50)	/* 1 PiB of weights */
#define SIZING_EST_MAX		(1ULL << 60)	/* any part of an estimate */

enum sizing_format {
	SIZING_GGUF = 1,
	SIZING_SAFETENSORS = 2,
};

/* One layer (GGUF's blk.N, safetensors' model.layers.N). */
struct sizing_layer {
	uint64_t	weights;	/* bytes of its tensors */
	uint32_t	k_width;	/* K elements a cell: key length x KV heads */
	uint32_t	v_width;	/* V elements a cell */
	uint32_t	swa;		/* 1: a sliding-window layer */
	uint32_t	pad;		/* 0 */
};

/*
 * What a model's files say about its size.  A fixed size, so that the
 * child sends it in one message that agencyd reads with an exact length.
 * Widths are elements, weights bytes.
 */
struct sizing_figures {
	uint32_t		format;		/* enum sizing_format */
	char			arch[SIZING_ARCH_MAX];
	uint32_t		layers;
	uint32_t		ctx_train;	/* trained context; 0: unknown */
	uint32_t		embd;
	uint32_t		ff;		/* widest feed-forward a token
						 * passes (experts used x
						 * their width for MoE) */
	uint32_t		heads;		/* the most of any layer */
	uint32_t		heads_kv;	/* the most of any layer */
	uint32_t		key_len;	/* a head's, full layers */
	uint32_t		value_len;
	uint32_t		swa_window;	/* tokens; 0: none */
	uint32_t		vocab;		/* 0: unknown */
	uint32_t		pad;		/* 0 */
	uint64_t		weights_in;	/* outside the layers: the
						 * embeddings and the rest */
	uint64_t		weights_out;	/* the output norm and head */
	uint64_t		tensors;
	struct sizing_layer	layer[SIZING_LAYERS_MAX];
};

/*
 * gguf.c: the figures of a GGUF file (version 2 or 3, little-endian)
 * from its first len bytes; filesize is the whole file's size (len <=
 * filesize: the tensors' data need not be in buf).  Reads the header
 * only: the key-value pairs it needs, the tensor infos (their type and
 * shape give each tensor's bytes), and checks that every tensor lies in
 * the file, aligned, one after the other as llama.cpp requires (so none
 * overlaps another).  0 with *f filled in, or -1 with why in err.
 */
int	gguf_figures(const uint8_t *, size_t, uint64_t,
	    struct sizing_figures *, char *, size_t);

/*
 * A second (third ...) file of a model split by llama.cpp's gguf-split
 * (NAME-0000N-of-0000M.gguf), read as gguf_figures reads the first: its
 * tensors' bytes are added to *f, whose layer count the first file set.
 * 0, or -1 with why in err (f is then unchanged).
 */
int	gguf_add_split(const uint8_t *, size_t, uint64_t,
	    struct sizing_figures *, char *, size_t);

/*
 * A ggml type's block: elements a block and bytes a block, 0 for a
 * type this reader does not know (or that ggml removed).
 */
int	gguf_type_block(uint32_t, uint32_t *, uint32_t *);
/* A ggml type by its name ("f16", "q8_0"; either case): -1 if none. */
int	gguf_type_byname(const char *);

/*
 * safetensors.c: one safetensors file, from its first len bytes
 * (filesize as above): its 8-byte header length, then the JSON header's
 * tensors (dtype, shape, data_offsets), each checked to lie in the file
 * with the size its dtype and shape give, and none overlapping another.
 * Adds the tensors' bytes to *f (per layer for "model.layers.N." and
 * the like, so a model's shards add up); sets f->format.  0, or -1 with
 * why in err (f is then unchanged).
 */
int	safetensors_figures(const uint8_t *, size_t, uint64_t,
	    struct sizing_figures *, char *, size_t);
/* The bytes a safetensors file's header takes, from its first 8; 0 if
 * they do not make a sane length. */
uint64_t safetensors_header_len(const uint8_t *, size_t);

/*
 * A Hugging Face config.json (len bytes, not NUL-terminated): the
 * model's shape (layers, heads, KV heads, head length, hidden size,
 * context, sliding window and which layers use it), from its
 * "text_config" when it has one.  Sets the layers' K and V widths in
 * *f, keeps the weights.  0, or -1 with why in err.
 */
int	hfconfig_figures(const char *, size_t, struct sizing_figures *,
	    char *, size_t);

/*
 * estimate.c: what a model will take, host and device.
 */

/* How the model is run: what the estimate depends on besides its files. */
struct sizing_params {
	uint32_t	ctx;		/* tokens; 0: the file's trained */
	int		type_k;		/* ggml type of the K cache (f16) */
	int		type_v;
	uint32_t	gpu_layers;	/* layers on a device (the last
					 * ones); > layers: the output too */
	uint32_t	ubatch;		/* tokens a micro-batch; 0: 512 */
	uint32_t	seqs;		/* parallel sequences; 0: 4 */
	int		flash_attn;	/* 0: the KQ matrix is built */
	int64_t		base;		/* the server's own, besides the
					 * model; -1: SIZING_BASE_DEFAULT */
};

#define SIZING_UBATCH_DEFAULT	512	/* llama.cpp's n_ubatch */
#define SIZING_SEQS_DEFAULT	4	/* llama-server's parallel "auto" */
#define SIZING_CELL_PAD		256	/* llama.cpp pads KV cells to it */
/* llama-server's own memory besides the model's (libraries, heap,
 * threads): 24.7 MiB of VmHWM over its logged buffers with tiny-a (17 MB)
 * on Debian 12, x86-64.  Larger models leave part of their compute and
 * KV buffers untouched, which makes up for it. */
#define SIZING_BASE_DEFAULT	(24LL * 1024 * 1024)

/* Each part in bytes; host and device. */
struct sizing_estimate {
	uint32_t	ctx;		/* the context it was made for */
	uint32_t	cells;		/* KV cells of a full layer */
	uint32_t	swa_cells;	/* of a sliding-window layer */
	uint32_t	gpu_layers;	/* as many as there are */
	int64_t		host_weights;
	int64_t		host_kv;
	int64_t		host_compute;
	int64_t		host_base;
	int64_t		host;		/* their sum */
	int64_t		dev_weights;
	int64_t		dev_kv;
	int64_t		dev_compute;
	int64_t		dev;		/* their sum */
};

/* snprintf(err, errlen, ...), then -1: for the readers' errors. */
int	sizing_err(char *, size_t, const char *, ...)
	    __attribute__((__format__ (printf, 3, 4)));

/* The defaults: f16 caches, no layer offloaded, flash attention. */
void	sizing_params_init(struct sizing_params *);

/*
 * Whether figures are sane and consistent (received from a child that
 * may lie): known format, NUL-terminated arch, 1 to SIZING_LAYERS_MAX
 * layers and nothing set past them, widths and context within bounds,
 * weights within SIZING_BYTES_MAX in all, the padding zero.  0, or -1
 * with why in err.
 */
int	sizing_check(const struct sizing_figures *, char *, size_t);

/*
 * The estimate: the weights (all of them, as llama.cpp maps the whole
 * file), the KV cache for the context and cache types, a compute-buffer
 * allowance and the server's base, split between host and device by
 * the layers offloaded.  The figures must have passed sizing_check.
 * 0, or -1 with why in err (an unknown cache type, no context, a
 * micro-batch or sequence count out of bounds).
 */
int	sizing_estimate(const struct sizing_figures *,
	    const struct sizing_params *, struct sizing_estimate *, char *,
	    size_t);

#endif /* AGENCY_SIZING_H */
