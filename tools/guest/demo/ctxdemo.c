// SPDX-License-Identifier: GPL-2.0
/*
 * The demo of tools/blkctx: in the guest, make ext4 on the emulated eMMC,
 * write a few files, and print, from the card's own command log, which
 * context ID the writes of each file's blocks carried.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEV	"/dev/mmcblk0"
#define MNT	"/tmp/emmc"
#define EMU	"/sys/kernel/debug/mmc_emu/"
#define NR_EXT	64

struct extent { unsigned long long start, len; };

static int map(const char *path, struct extent *ext)
{
	size_t size = sizeof(struct fiemap) + NR_EXT * sizeof(struct fiemap_extent);
	struct fiemap *fm = calloc(1, size);
	int fd = open(path, O_RDONLY), n = -1, i;

	if (fd >= 0 && fm) {
		fm->fm_length = FIEMAP_MAX_OFFSET;
		fm->fm_flags = FIEMAP_FLAG_SYNC;
		fm->fm_extent_count = NR_EXT;
		if (!ioctl(fd, FS_IOC_FIEMAP, fm)) {
			n = fm->fm_mapped_extents;
			for (i = 0; i < n; i++) {
				ext[i].start = fm->fm_extents[i].fe_physical / 512;
				ext[i].len = fm->fm_extents[i].fe_length / 512;
			}
		}
	}
	if (fd >= 0)
		close(fd);
	free(fm);
	return n;
}

static int write_file(const char *path, size_t size)
{
	static char buf[65536];
	size_t done;
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);

	if (fd < 0)
		return -1;
	memset(buf, path[strlen(path) - 1], sizeof(buf));
	for (done = 0; done < size; done += sizeof(buf))
		if (write(fd, buf, size - done < sizeof(buf) ? size - done : sizeof(buf)) < 0)
			break;
	fsync(fd);
	return close(fd);
}

int main(void)
{
	static const char *names[] = { "photo.jpg", "notes.txt", "music.ogg",
				       "cache.db", "log.1", "mail.mbox" };
	static const size_t sizes[] = { 1 << 20, 8192, 512 << 10, 64 << 10,
					16 << 10, 256 << 10 };
	char path[64], line[256], op[8], res[8];
	unsigned long long start, count, seq;
	unsigned int ctx, streams = 0;
	struct extent ext[NR_EXT];
	struct stat st;
	FILE *f;
	int i, e, n;

	f = fopen("/sys/block/mmcblk0/queue/max_write_streams", "r");
	if (!f || fscanf(f, "%u", &streams) != 1) {
		printf("ctxdemo: no emulated eMMC at %s\n", DEV);
		return 1;
	}
	fclose(f);
	printf("ctxdemo: %s has %u write streams (eMMC contexts)\n", DEV, streams);
	if (system("mke2fs -q -F -t ext4 -E nodiscard " DEV) ||
	    (mkdir(MNT, 0755) && access(MNT, F_OK)) ||
	    /* ext4 places nothing by default: ask for a stream per file */
	    mount(DEV, MNT, "ext4", 0, "context_policy=inode")) {
		printf("ctxdemo: could not make and mount ext4 on %s\n", DEV);
		return 1;
	}
	f = fopen(EMU "clear", "w");
	if (f)
		fclose(f);
	for (i = 0; i < 6; i++) {
		snprintf(path, sizeof(path), MNT "/%s", names[i]);
		write_file(path, sizes[i]);
	}
	sync();

	printf("%-10s %6s %8s  %-8s %s\n", "file", "inode", "KiB", "expected",
	       "contexts of the card's writes to its blocks");
	for (i = 0; i < 6; i++) {
		unsigned int seen[16] = {};

		snprintf(path, sizeof(path), MNT "/%s", names[i]);
		n = map(path, ext);
		if (n < 0 || stat(path, &st))
			continue;
		f = fopen(EMU "log", "r");
		while (f && fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%llu %7s %llu %llu %u %7s", &seq, op, &start,
				   &count, &ctx, res) != 6 || strcmp(op, "W") || ctx > 15)
				continue;
			for (e = 0; e < n; e++)
				if (start < ext[e].start + ext[e].len &&
				    ext[e].start < start + count)
					seen[ctx]++;
		}
		if (f)
			fclose(f);
		printf("%-10s %6lu %8zu  %-8u", names[i], (unsigned long)st.st_ino,
		       sizes[i] >> 10,
		       streams ? 1 + (unsigned int)((st.st_ino - 1) % streams) : 0);
		for (ctx = 0; ctx < 16; ctx++)
			if (seen[ctx])
				printf(" ctx %u: %u writes", ctx, seen[ctx]);
		printf("\n");
	}
	/* mmc-utils reads EXT_CSD itself, independently of the kernel's view */
	fflush(stdout);
	if (system("mmc extcsd read " DEV " | grep -E 'CONTEXT|LARGE_UNIT' | grep -v ': 0x00$' | sed 's/^/ctxdemo: mmc extcsd read: /'"))
		printf("ctxdemo: mmc extcsd read failed\n");
	umount(MNT);
	return 0;
}
