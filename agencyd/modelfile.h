/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * A model's files, opened and then read for their figures (sizing.h):
 * a GGUF file (with the other files of a split model), or a directory
 * of safetensors shards with its config.json.  Opening and reading are
 * apart so that the unprivileged child (sizer.c) opens every file
 * before it locks itself down to reading them: its sandbox has no open.
 */
#ifndef AGENCY_MODELFILE_H
#define AGENCY_MODELFILE_H

#include <sys/types.h>

#include "sizing.h"

#define MODELFILE_MAX		64	/* files of one model */
#define MODELFILE_CONFIG_MAX	(1024 * 1024)	/* config.json's bytes */

struct modelfile {
	int	 format;		/* SIZING_GGUF, SIZING_SAFETENSORS */
	int	 fd[MODELFILE_MAX];	/* the GGUF file first */
	int	 nfd;
	int	 config;		/* config.json, or -1 */
};

/*
 * Open what path names: a GGUF file (NAME-00001-of-0000M.gguf opens the
 * other M - 1 files of the split beside it), a .safetensors file (with
 * config.json beside it when there is one), or a directory holding
 * *.safetensors files (and config.json), else exactly one *.gguf file
 * besides mmproj*.gguf (a vision projector, not the model).  0, or -1
 * with why in err and nothing left open.
 */
int	modelfile_open(const char *, struct modelfile *, char *, size_t);

/*
 * Read the figures of what modelfile_open opened: fstat and mmap each
 * file, the header only where its length is known first (safetensors),
 * and read config.json.  0, or -1 with why in err.
 */
int	modelfile_read(const struct modelfile *, struct sizing_figures *,
	    char *, size_t);

void	modelfile_close(struct modelfile *);

#endif /* AGENCY_MODELFILE_H */
