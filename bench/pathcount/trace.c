/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 *
 * trace.c: -finstrument-functions hooks for bench/pathcount.  Each
 * function entry and exit is written as a record (the kind, '>' or '<',
 * then the function's offset from the executable's start, 8 bytes
 * little-endian) to TRACE_PATH, a pipe opened before main and so
 * before the sandbox.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

extern char __executable_start[];
static int trace_fd = -1;

__attribute__((no_instrument_function, constructor)) static void
trace_open(void)
{
	const char *p = TRACE_PATH;

	if (p != NULL)
		trace_fd = open(p, O_WRONLY | O_APPEND | O_CREAT, 0666);
}

__attribute__((no_instrument_function)) static void
trace_put(char kind, void *fn)
{
	unsigned char rec[9];
	uint64_t off = (uint64_t)((char *)fn - __executable_start);
	int i;

	if (trace_fd == -1)
		return;
	rec[0] = kind;
	for (i = 0; i < 8; i++)
		rec[1 + i] = off >> (8 * i);
	(void)write(trace_fd, rec, sizeof(rec));
}

__attribute__((no_instrument_function)) void
__cyg_profile_func_enter(void *fn, void *site)
{
	(void)site;
	trace_put('>', fn);
}

__attribute__((no_instrument_function)) void
__cyg_profile_func_exit(void *fn, void *site)
{
	(void)site;
	trace_put('<', fn);
}
