// SPDX-License-Identifier: GPL-2.0
/*
 * The demo of tools/blkctx: in the guest, make ext4 on the emulated eMMC,
 * write a few files, and print, from the card's own command log, which
 * context ID the writes of each file's blocks carried.  It fails when a
 * file's writes are missing from the log or, where the disk has write
 * streams, carried another context than ext4's inode policy gives.
 *
 * The card is found, mapped and logged with the kselftests' own helpers.
 */
#define _GNU_SOURCE
#include <sys/mount.h>
#include "../mmc/emmc_emu.h"

#define NR_FILES 6

static struct log_entry card_log[MAX_LOG];

static int write_file(const char *path, size_t size, struct file_info *fi)
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
	if (fsync(fd) || map_file(fd, fi)) {
		close(fd);
		return -1;
	}
	return close(fd);
}

int main(void)
{
	static const char * const names[NR_FILES] = {
		"photo.jpg", "notes.txt", "music.ogg", "cache.db", "log.1", "mail.mbox"
	};
	static const size_t sizes[NR_FILES] = {
		1 << 20, 8192, 512 << 10, 64 << 10, 16 << 10, 256 << 10
	};
	static struct file_info files[NR_FILES];
	unsigned int streams, ctx, expected, i, wrong = 0;
	int e, n;

	if (emmc_find()) {
		printf("ctxdemo: no emulated eMMC (mmc_emu) with a disk\n");
		return 1;
	}
	streams = queue_number("max_write_streams") > 0 ? queue_number("max_write_streams") : 0;
	printf("ctxdemo: %s has %u write streams (eMMC contexts)\n", emmc.dev, streams);
	if (run_cmd("mke2fs -q -F -t ext4 -E nodiscard %s", emmc.dev) ||
	    (mkdir(MNT, 0755) && errno != EEXIST) ||
	    /* ext4 places nothing by default: ask for a stream per file */
	    mount(emmc.dev, MNT, "ext4", 0, "context_policy=inode")) {
		printf("ctxdemo: could not make and mount ext4 on %s\n", emmc.dev);
		return 1;
	}
	write_string(EMU_DIR "clear", "1");
	for (i = 0; i < NR_FILES; i++) {
		snprintf(files[i].path, sizeof(files[i].path), MNT "/%s", names[i]);
		if (write_file(files[i].path, sizes[i], &files[i])) {
			printf("ctxdemo: could not write %s\n", files[i].path);
			return 1;
		}
	}
	sync();
	n = read_log(card_log, MAX_LOG);
	if (n < 0) {
		printf("ctxdemo: no card log in " EMU_DIR "\n");
		return 1;
	}

	printf("%-10s %6s %8s  %-8s %s\n", "file", "inode", "KiB", "expected",
	       "contexts of the card's writes to its blocks");
	for (i = 0; i < NR_FILES; i++) {
		unsigned int seen[16] = {}, writes = 0;

		for (e = 0; e < n; e++) {
			if (strcmp(card_log[e].op, "W") || card_log[e].ctx > 15 ||
			    !overlaps(&files[i], &card_log[e]))
				continue;
			seen[card_log[e].ctx]++;
			writes++;
		}
		expected = fold(files[i].ino, streams);
		printf("%-10s %6lu %8zu  %-8u", names[i], files[i].ino, sizes[i] >> 10,
		       expected);
		for (ctx = 0; ctx < 16; ctx++)
			if (seen[ctx])
				printf(" ctx %u: %u writes", ctx, seen[ctx]);
		printf("\n");
		/* without streams every write carries context 0 */
		if (!writes || seen[expected] != writes)
			wrong++;
	}
	/* mmc-utils reads EXT_CSD itself, independently of the kernel's view */
	fflush(stdout);
	if (run_cmd("mmc extcsd read %s | grep -E 'CONTEXT|LARGE_UNIT' | grep -v ': 0x00$' | sed 's/^/ctxdemo: mmc extcsd read: /'",
		    emmc.dev))
		printf("ctxdemo: mmc extcsd read failed\n");
	umount(MNT);
	if (wrong)
		printf("ctxdemo: %u of %u files have writes in another context than expected, or none\n",
		       wrong, NR_FILES);
	return wrong ? 1 : 0;
}
