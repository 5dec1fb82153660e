/*
 * Copyright (c) 2026 The agency authors
 * SPDX-License-Identifier: ISC (see the file LICENSE)
 */
/*
 * AMD's devices through amdgpu's sysfs files, and a process's use of
 * them through DRM fdinfo.
 *
 * Devices: each SYSFS/class/drm/cardN whose device has vendor 0x1002
 * and mem_info_vram_total (bytes, as mem_info_vram_used); its stable id
 * is its PCI address, the last part of the device link; its name,
 * product_name where the driver has it.  They are ranked by N.
 *
 * Processes: for each watched pid, each fd of PROC/PID/fd that links
 * into /dev/dri/, then its PROC/PID/fdinfo/FD, in the format of the
 * kernel's "DRM client usage stats": "drm-pdev" names the device,
 * "drm-client-id" the client (an fd opened once and shared, by dup or
 * by fork, shows one client several times: each counts once), and
 * "drm-memory-vram" (older kernels) or "drm-resident-vram" or
 * "drm-total-vram" its VRAM, a number with an optional unit (KiB, MiB,
 * GiB).  Reading another process's fdinfo needs its uid or ptrace
 * rights: the probe runs as the model user (gpu.c's head).
 *
 * Calls: snapshot.c, common/log.c.
 */
#include <sys/types.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "probe.h"
#include "log.h"

#define AMD_VENDOR		"0x1002"
#define AMD_CARDS_MAX		GPU_DEVICES_MAX
#define AMD_FDS_MAX		65536	/* a process's fds looked at */
#define AMD_CLIENTS_MAX		4096	/* clients counted a snapshot */
#define AMD_FILE_MAX		8192	/* an fdinfo or sysfs file */

/* A small file's text, NUL-terminated: its length, or -1. */
static ssize_t
read_text(int dirfd, const char *path, char *buf, size_t size)
{
	ssize_t	 n, len = 0;
	int	 fd;

	if ((fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC)) == -1)
		return (-1);
	while ((size_t)len < size - 1) {
		if ((n = read(fd, buf + len, size - 1 - (size_t)len)) == -1) {
			if (errno == EINTR)
				continue;
			close(fd);
			return (-1);
		}
		if (n == 0)
			break;
		len += n;
	}
	close(fd);
	buf[len] = '\0';
	return (len);
}

/* A decimal number of bytes, then a unit or nothing: 0, or -1. */
static int
bytes_of(const char *s, uint64_t *v)
{
	unsigned long long	 n;
	uint64_t		 mult = 1;
	char			*end;

	while (*s == ' ' || *s == '\t')
		s++;
	if (*s < '0' || *s > '9')
		return (-1);
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return (-1);
	while (*end == ' ' || *end == '\t')
		end++;
	if (strncmp(end, "KiB", 3) == 0)
		mult = 1ULL << 10, end += 3;
	else if (strncmp(end, "MiB", 3) == 0)
		mult = 1ULL << 20, end += 3;
	else if (strncmp(end, "GiB", 3) == 0)
		mult = 1ULL << 30, end += 3;
	if (*end != '\0' && *end != '\n' && *end != ' ')
		return (-1);
	*v = n > GPU_MEM_MAX / mult ? GPU_MEM_MAX : n * mult;
	return (0);
}

/* The value of key in text ("key:" at a line's start), or NULL. */
static const char *
value_of(const char *text, const char *key)
{
	const char	*p = text;
	size_t		 klen = strlen(key);

	while (p != NULL && *p != '\0') {
		if (strncmp(p, key, klen) == 0 && p[klen] == ':')
			return (p + klen + 1);
		if ((p = strchr(p, '\n')) != NULL)
			p++;
	}
	return (NULL);
}

int
amd_fdinfo(const char *text, struct drm_client *c)
{
	static const char *const vram[] = { "drm-memory-vram",
	    "drm-resident-vram", "drm-total-vram" };
	const char	*v;
	size_t		 i, len;
	uint64_t	 n;

	memset(c, 0, sizeof(*c));
	if ((v = value_of(text, "drm-pdev")) == NULL)
		return (0);
	v += strspn(v, " \t");
	len = strcspn(v, " \t\n");
	if (len == 0 || len >= sizeof(c->pdev))
		return (0);
	memcpy(c->pdev, v, len);
	if ((v = value_of(text, "drm-client-id")) != NULL &&
	    bytes_of(v, &n) == 0) {
		c->id = n;
		c->has_id = 1;
	}
	for (i = 0; i < sizeof(vram) / sizeof(vram[0]); i++)
		if ((v = value_of(text, vram[i])) != NULL &&
		    bytes_of(v, &c->vram) == 0)
			return (1);
	return (0);
}

static int
card_number(const char *name)
{
	const char	*errstr;
	long long	 n;

	if (strncmp(name, "card", 4) != 0)
		return (-1);
	n = strtonum(name + 4, 0, INT_MAX, &errstr);
	return (errstr != NULL ? -1 : (int)n);
}

static int
int_cmp(const void *a, const void *b)
{
	int	 x = *(const int *)a, y = *(const int *)b;

	return (x < y ? -1 : x > y);
}

/* One card's device directory, into s when it is an amdgpu. */
static void
amd_card(struct snapshot *s, int drm, int card, uint32_t *rank)
{
	struct gpu_device	*d;
	char			 dev[32], buf[256], link[PATH_MAX];
	const char		*pci;
	uint64_t		 total, used;
	ssize_t			 n;
	int			 fd;

	(void)snprintf(dev, sizeof(dev), "card%d/device", card);
	if ((fd = openat(drm, dev, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) ==
	    -1)
		return;
	if (read_text(fd, "vendor", buf, sizeof(buf)) == -1 ||
	    strncmp(buf, AMD_VENDOR, strlen(AMD_VENDOR)) != 0 ||
	    read_text(fd, "mem_info_vram_total", buf, sizeof(buf)) == -1 ||
	    bytes_of(buf, &total) == -1 ||
	    (n = readlinkat(drm, dev, link, sizeof(link) - 1)) <= 0)
		goto done;
	if (read_text(fd, "mem_info_vram_used", buf, sizeof(buf)) == -1 ||
	    bytes_of(buf, &used) == -1)
		used = 0;
	link[n] = '\0';
	pci = strrchr(link, '/') != NULL ? strrchr(link, '/') + 1 : link;
	if ((d = snap_add_device(s, GPU_VENDOR_AMD, *rank, pci)) == NULL)
		goto done;
	(*rank)++;
	(void)strlcpy(d->pci, pci, sizeof(d->pci));
	d->total = total;
	d->used = used;
	if (read_text(fd, "product_name", buf, sizeof(buf)) > 0) {
		buf[strcspn(buf, "\n")] = '\0';
		snap_name(d->name, sizeof(d->name), buf);
	} else
		(void)strlcpy(d->name, "AMD GPU", sizeof(d->name));
	s->backends |= GPU_BACKEND_AMD;
 done:
	close(fd);
}

/* The amdgpu cards of sysfs, into s, ranked by their number. */
static void
amd_devices(struct snapshot *s, const char *sysfs)
{
	struct dirent	*de;
	DIR		*dir;
	char		 path[PATH_MAX];
	uint32_t	 rank = 0;
	int		 cards[AMD_CARDS_MAX], ncards = 0, i, c;

	if ((size_t)snprintf(path, sizeof(path), "%s/class/drm", sysfs) >=
	    sizeof(path) || (dir = opendir(path)) == NULL)
		return;
	while ((de = readdir(dir)) != NULL && ncards < AMD_CARDS_MAX)
		if ((c = card_number(de->d_name)) >= 0)
			cards[ncards++] = c;
	qsort(cards, (size_t)ncards, sizeof(cards[0]), int_cmp);
	for (i = 0; i < ncards; i++)
		amd_card(s, dirfd(dir), cards[i], &rank);
	closedir(dir);
}

/* Clients counted in this snapshot: (device, id), each once. */
struct seen {
	size_t		 n;
	uint32_t	 dev[AMD_CLIENTS_MAX];
	uint64_t	 id[AMD_CLIENTS_MAX];
};

static int
seen_once(struct seen *sn, uint32_t dev, uint64_t id)
{
	size_t	 i;

	for (i = 0; i < sn->n; i++)
		if (sn->dev[i] == dev && sn->id[i] == id)
			return (0);
	if (sn->n < AMD_CLIENTS_MAX) {
		sn->dev[sn->n] = dev;
		sn->id[sn->n++] = id;
	}
	return (1);
}

/* The DRM clients of pid on the devices from first on. */
static void
amd_pid(struct snapshot *s, const char *proc, uint32_t pid, uint32_t first,
    struct seen *sn)
{
	struct drm_client	 c;
	struct dirent		*de;
	DIR			*dir;
	char			 path[PATH_MAX], link[64], *text;
	uint32_t		 d;
	ssize_t			 n;
	int			 info, fds = 0;

	if ((size_t)snprintf(path, sizeof(path), "%s/%u/fd", proc, pid) >=
	    sizeof(path) || (dir = opendir(path)) == NULL)
		return;
	(void)snprintf(path, sizeof(path), "%s/%u/fdinfo", proc, pid);
	if ((info = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		closedir(dir);
		return;
	}
	if ((text = malloc(AMD_FILE_MAX)) == NULL)
		goto done;
	while ((de = readdir(dir)) != NULL && fds++ < AMD_FDS_MAX) {
		if (de->d_name[0] == '.' ||
		    (n = readlinkat(dirfd(dir), de->d_name, link,
		    sizeof(link) - 1)) <= 0)
			continue;
		link[n] = '\0';
		if (strncmp(link, "/dev/dri/", 9) != 0 ||
		    read_text(info, de->d_name, text, AMD_FILE_MAX) == -1 ||
		    !amd_fdinfo(text, &c))
			continue;
		for (d = first; d < s->ndev; d++)
			if (strcasecmp(s->dev[d].pci, c.pdev) == 0)
				break;
		if (d == s->ndev || (c.has_id && !seen_once(sn, d, c.id)))
			continue;
		snap_add_proc(s, d, pid, c.vram, 0);
	}
	free(text);
 done:
	close(info);
	closedir(dir);
}

void
amd_collect(struct snapshot *s, const char *sysfs, const char *proc)
{
	struct seen	*sn;
	size_t		 i;
	uint32_t	 first = s->ndev;

	amd_devices(s, sysfs);
	if (first == s->ndev || s->nwatch == 0)
		return;
	if ((sn = calloc(1, sizeof(*sn))) == NULL) {
		log_warn("%s", __func__);
		return;
	}
	for (i = 0; i < s->nwatch; i++)
		amd_pid(s, proc, s->watch[i], first, sn);
	free(sn);
}
