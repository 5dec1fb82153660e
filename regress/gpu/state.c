/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * The GPU stand-ins' shared state file (state.h says its format).
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "state.h"

int
st_path(char *buf, size_t size, const char *file)
{
	Dl_info		 info;
	const char	*slash;
	size_t		 dlen;

	if (dladdr((void *)(uintptr_t)st_path, &info) == 0 ||
	    info.dli_fname == NULL ||
	    (slash = strrchr(info.dli_fname, '/')) == NULL)
		return (-1);
	dlen = (size_t)(slash - info.dli_fname);
	if ((size_t)snprintf(buf, size, "%.*s/%s", (int)dlen, info.dli_fname,
	    file) >= size)
		return (-1);
	return (0);
}

static int
size_of(const char *s, unsigned long long *v)
{
	char		*end;

	errno = 0;
	*v = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return (-1);
	switch (*end) {
	case 'K':
		*v <<= 10;
		end++;
		break;
	case 'M':
		*v <<= 20;
		end++;
		break;
	case 'G':
		*v <<= 30;
		end++;
		break;
	default:
		break;
	}
	return (*end == '\0' ? 0 : -1);
}

static int
parse(struct st_state *st, FILE *fp)
{
	struct st_device	*d;
	struct st_proc		*p;
	char			 line[512], w[4][128], *name;
	int			 n, off;

	memset(st, 0, offsetof(struct st_state, proc));
	st->nproc = 0;
	st->nfail = 0;
	while (fgets(line, sizeof(line), fp) != NULL) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == '#' || line[0] == '\0')
			continue;
		if (strncmp(line, "device ", 7) == 0) {
			if (st->ndev == ST_DEVICES_MAX)
				return (-1);
			d = &st->dev[st->ndev++];
			memset(d, 0, sizeof(*d));
			if (sscanf(line + 7, "%95s %31s %127s %127s %n",
			    d->uuid, d->pci, w[0], w[1], &off) != 4 ||
			    size_of(w[0], &d->total) == -1 ||
			    size_of(w[1], &d->base) == -1)
				return (-1);
			name = line + 7 + off;
			(void)snprintf(d->name, sizeof(d->name), "%s", name);
		} else if (strncmp(line, "proc ", 5) == 0) {
			if (st->nproc == ST_PROCS_MAX)
				return (-1);
			p = &st->proc[st->nproc++];
			memset(p, 0, sizeof(*p));
			if (sscanf(line + 5, "%u %u %127s", &p->dev, &p->pid,
			    w[0]) != 3)
				return (-1);
			if (strcmp(w[0], "na") == 0)
				p->na = 1;
			else if (size_of(w[0], &p->bytes) == -1)
				return (-1);
		} else if (strncmp(line, "fail ", 5) == 0) {
			if (st->nfail == ST_FAILS_MAX)
				return (-1);
			n = st->nfail++;
			if (sscanf(line + 5, "%15s %d", st->fail_call[n],
			    &st->fail_code[n]) != 2)
				return (-1);
		} else
			return (-1);
	}
	return (ferror(fp) ? -1 : 0);
}

int
st_read(struct st_state *st)
{
	char	 path[4096];
	FILE	*fp;
	int	 r;

	if (st_path(path, sizeof(path), ST_FILE) == -1 ||
	    (fp = fopen(path, "re")) == NULL)
		return (-1);
	r = parse(st, fp);
	fclose(fp);
	return (r);
}

int
st_fail(const struct st_state *st, const char *call)
{
	int	 i;

	for (i = 0; i < st->nfail; i++)
		if (strcmp(st->fail_call[i], call) == 0)
			return (st->fail_code[i]);
	return (0);
}

int
st_alive(unsigned int pid)
{
	return (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

unsigned long long
st_used(const struct st_state *st, unsigned int dev)
{
	unsigned long long	 used;
	int			 i;

	if ((int)dev >= st->ndev)
		return (0);
	used = st->dev[dev].base;
	for (i = 0; i < st->nproc; i++)
		if (st->proc[i].dev == dev && !st->proc[i].na &&
		    st_alive(st->proc[i].pid))
			used += st->proc[i].bytes;
	return (used);
}

static int
write_state(const struct st_state *st, const char *path)
{
	char	 tmp[4200];
	FILE	*fp;
	int	 i;

	(void)snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
	if ((fp = fopen(tmp, "we")) == NULL)
		return (-1);
	fprintf(fp, "# written by the CUDA stand-in, pid %ld\n",
	    (long)getpid());
	for (i = 0; i < st->ndev; i++)
		fprintf(fp, "device %s %s %llu %llu %s\n", st->dev[i].uuid,
		    st->dev[i].pci, st->dev[i].total, st->dev[i].base,
		    st->dev[i].name);
	for (i = 0; i < st->nfail; i++)
		fprintf(fp, "fail %s %d\n", st->fail_call[i],
		    st->fail_code[i]);
	for (i = 0; i < st->nproc; i++) {
		if (st->proc[i].na)
			fprintf(fp, "proc %u %u na\n", st->proc[i].dev,
			    st->proc[i].pid);
		else
			fprintf(fp, "proc %u %u %llu\n", st->proc[i].dev,
			    st->proc[i].pid, st->proc[i].bytes);
	}
	if (fflush(fp) == EOF || fsync(fileno(fp)) == -1) {
		fclose(fp);
		unlink(tmp);
		return (-1);
	}
	fclose(fp);
	/* Readable by the probe, which runs as another user. */
	(void)chmod(tmp, 0644);
	if (rename(tmp, path) == -1) {
		unlink(tmp);
		return (-1);
	}
	return (0);
}

int
st_update(unsigned int dev, unsigned int pid, long long delta)
{
	static struct st_state	 st;
	char			 path[4096], lock[4096];
	int			 fd, i, r = -1;

	if (st_path(path, sizeof(path), ST_FILE) == -1 ||
	    st_path(lock, sizeof(lock), ST_LOCK) == -1)
		return (-1);
	if ((fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) == -1)
		return (-1);
	(void)fchmod(fd, 0666);
	if (flock(fd, LOCK_EX) == -1)
		goto done;
	if (st_read(&st) == -1 || (int)dev >= st.ndev)
		goto done;
	if (delta > 0 && st_used(&st, dev) + (unsigned long long)delta >
	    st.dev[dev].total) {
		r = 1;
		goto done;
	}
	/* Processes gone are the driver's to forget: drop their lines. */
	for (i = 0; i < st.nproc; i++)
		if (!st.proc[i].na && !st_alive(st.proc[i].pid))
			st.proc[i--] = st.proc[--st.nproc];
	for (i = 0; i < st.nproc; i++)
		if (st.proc[i].dev == dev && st.proc[i].pid == pid &&
		    !st.proc[i].na)
			break;
	if (i == st.nproc) {
		if (delta <= 0 || st.nproc == ST_PROCS_MAX)
			goto done;
		memset(&st.proc[i], 0, sizeof(st.proc[i]));
		st.proc[i].dev = dev;
		st.proc[i].pid = pid;
		st.nproc++;
	}
	if (delta < 0 && st.proc[i].bytes < (unsigned long long)-delta)
		st.proc[i].bytes = 0;
	else
		st.proc[i].bytes += (unsigned long long)delta;
	if (st.proc[i].bytes == 0)
		st.proc[i] = st.proc[--st.nproc];
	r = write_state(&st, path) == -1 ? -1 : 0;
 done:
	close(fd);
	return (r);
}
