// SPDX-License-Identifier: GPL-2.0
/*
 * ftlreplay: replay the emulated eMMC's command log through the card's own
 * FTL model (drivers/mmc/host/mmc_emu_ftl.c, built here unchanged), from a
 * new card, and count a window of it.
 *
 *   ftlreplay --sectors N --page-bytes N --block-bytes N --op-percent N
 *             --from SEQ --count-from SEQ --count-to SEQ
 *             --placement logged|future|past LOG
 *
 * LOG is the text of mmc_emu's debugfs "log" from the command with
 * sequence number SEQ (the first after the card was fully discarded, so
 * that the card's model was in the state of a new one) up to at least
 * --count-to. Writes and discards before --count-from bring the model to
 * the state the card was in; the counters of the commands from
 * --count-from to before --count-to are printed.
 *
 * Placement:
 *   logged  each write in the context the card received it with: the
 *           counts must equal the card's own (ctxbench checks that)
 *   future  each page in a stream chosen from its true lifetime, read from
 *           the log's future: the number of host pages written until the
 *           page is overwritten or discarded, in powers of two. Pages never
 *           overwritten within the log share one stream. This is the
 *           future-knowledge placement that SepBIT (FAST '22) uses as its
 *           oracle: the card's streams and GC as they are, with placement
 *           no filesystem can know. It bounds what placement can gain.
 *   past    each page in the stream of the lifetime that the data it
 *           replaces lived (overwritten now, or discarded earlier), in the
 *           same classes; a page with no such history in the last stream.
 *           This learns from the past only, as SepBIT itself does inside a
 *           device for user writes: what placement by learned lifetimes
 *           gets with per-page history and no knowledge of names.
 *
 * The log must be complete: a missing sequence number, an ERASE (whose
 * erase-group rounding the log does not record) or a line that does not
 * parse stops the replay with an error rather than a wrong count.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mmc_emu_ftl.h"

#define SECTOR		512
#define NO_EVENT	UINT32_MAX
#define NEVER		UINT64_MAX
/* Lifetimes below 2^LIFE_SHIFT pages share the first stream */
#define LIFE_SHIFT	5

struct cmd {
	uint64_t seq;
	uint64_t start;
	uint32_t count;
	uint8_t ctx;
	bool write;
};

static struct {
	uint64_t sectors, from, count_from, count_to;
	unsigned int page_bytes, block_bytes, op_percent;
} opt;

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "ftlreplay: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(1);
}

static uint64_t number(const char *name, const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || *s == '-')
		die("--%s %s is not a number", name, s);
	return v;
}

static void *grow(void *p, size_t cap, size_t size)
{
	p = realloc(p, cap * size);
	if (!p)
		die("out of memory");
	return p;
}

/* The log's writes and discards from --from to before --count-to */
static struct cmd *read_log(FILE *f, size_t *nr)
{
	char line[256], op[16], result[16], reason[16], flags[16];
	uint64_t seq, start, expect = opt.from;
	unsigned int count, ctx;
	struct cmd *cmds = NULL;
	size_t n = 0, cap = 0;

	while (expect < opt.count_to && fgets(line, sizeof(line), f)) {
		flags[0] = '\0';
		if (sscanf(line, "%" SCNu64 " %15s %" SCNu64 " %u %u %15s %15s %15s", &seq,
			   op, &start, &count, &ctx, result, reason, flags) < 6)
			die("log line does not parse: %s", line);
		if (seq < expect)
			continue;
		if (seq > expect)
			die("the log has no command %" PRIu64 " (the next is %" PRIu64 "): the ring lost commands; raise mmc_emu.log_entries",
			    expect, seq);
		expect++;
		/* Failed commands change nothing; boot partitions are not the model's */
		if (strcmp(result, "ok") || !count || strstr(flags, "boot"))
			continue;
		if (!strcmp(op, "R"))
			continue;
		if (!strcmp(op, "ERASE"))
			die("command %" PRIu64 " is an ERASE, whose erase groups the log does not record", seq);
		if (strcmp(op, "W") && strcmp(op, "TRIM") && strcmp(op, "DISCARD"))
			die("command %" PRIu64 ": unknown operation %s", seq, op);
		if (n == cap) {
			cap = cap ? 2 * cap : 4096;
			cmds = grow(cmds, cap, sizeof(*cmds));
		}
		cmds[n].seq = seq;
		cmds[n].start = start;
		cmds[n].count = count;
		cmds[n].ctx = ctx;
		cmds[n].write = !strcmp(op, "W");
		n++;
	}
	if (expect < opt.count_to)
		die("the log ends at command %" PRIu64 ", before %" PRIu64, expect,
		    opt.count_to);
	*nr = n;
	return cmds;
}

/* Logical pages that a discard drops: those it covers fully, as the model */
static void trim_pages(uint64_t start, uint64_t count, uint64_t spp,
		       uint64_t logical_pages, uint64_t *first, uint64_t *stop)
{
	uint64_t end = start + count;

	*first = (start + spp - 1) / spp;
	*stop = end == opt.sectors ? logical_pages : end / spp;
}

/* The logical pages a command changes: all it touches, or a trim's whole ones */
static void cmd_pages(const struct cmd *c, uint64_t spp, uint64_t logical_pages,
		      uint64_t *first, uint64_t *stop)
{
	if (c->write) {
		*first = c->start / spp;
		*stop = (c->start + c->count - 1) / spp + 1;
	} else {
		trim_pages(c->start, c->count, spp, logical_pages, first, stop);
	}
}

/* The stream of a lifetime in host pages: log2 classes from 2^LIFE_SHIFT */
static uint8_t life_stream(uint64_t life)
{
	int k;

	for (k = 0; life >> 1; k++)
		life >>= 1;
	k -= LIFE_SHIFT;
	if (k < 0)
		k = 0;
	if (k > EMU_FTL_NR_CTX - 2)
		k = EMU_FTL_NR_CTX - 2;
	return k;
}

/*
 * The stream of each page written, from the number of host pages written
 * until it dies: log2 classes from 2^LIFE_SHIFT up, the longest-lived and
 * the never-dying in the last stream.
 */
static uint8_t *future_streams(const struct cmd *cmds, size_t nr,
			       uint64_t spp, uint64_t logical_pages)
{
	uint32_t *last = malloc(logical_pages * sizeof(*last));
	uint64_t *born = NULL, *death = NULL, t = 0, lpn, first, stop;
	size_t i, cap = 0, n = 0, e;
	uint8_t *stream;

	if (!last)
		die("out of memory");
	memset(last, 0xff, logical_pages * sizeof(*last));
	for (i = 0; i < nr; i++) {
		cmd_pages(&cmds[i], spp, logical_pages, &first, &stop);
		for (lpn = first; lpn < stop; lpn++) {
			if (last[lpn] != NO_EVENT)
				death[last[lpn]] = t;
			last[lpn] = NO_EVENT;
			if (!cmds[i].write)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 4096;
				born = grow(born, cap, sizeof(*born));
				death = grow(death, cap, sizeof(*death));
			}
			born[n] = t++;
			death[n] = NEVER;
			last[lpn] = n++;
		}
	}
	stream = malloc(n ? n : 1);
	if (!stream)
		die("out of memory");
	for (e = 0; e < n; e++)
		stream[e] = death[e] == NEVER ? EMU_FTL_NR_CTX - 1 :
			    life_stream(death[e] - born[e]);
	free(last);
	free(born);
	free(death);
	return stream;
}

/*
 * The stream of each page written, from how long the data it replaces
 * lived: the page's previous version, overwritten now or discarded before.
 * Only the past is read. A page that never held data goes to the last
 * stream.
 */
static uint8_t *past_streams(const struct cmd *cmds, size_t nr,
			     uint64_t spp, uint64_t logical_pages)
{
	uint64_t *born = malloc(logical_pages * sizeof(*born));
	uint64_t *lived = malloc(logical_pages * sizeof(*lived));
	uint64_t t = 0, lpn, first, stop;
	size_t i, cap = 0, n = 0;
	uint8_t *stream = NULL;

	if (!born || !lived)
		die("out of memory");
	for (lpn = 0; lpn < logical_pages; lpn++)
		born[lpn] = lived[lpn] = NEVER;
	for (i = 0; i < nr; i++) {
		cmd_pages(&cmds[i], spp, logical_pages, &first, &stop);
		for (lpn = first; lpn < stop; lpn++) {
			if (born[lpn] != NEVER)
				lived[lpn] = t - born[lpn];
			born[lpn] = NEVER;
			if (!cmds[i].write)
				continue;
			if (n == cap) {
				cap = cap ? 2 * cap : 4096;
				stream = grow(stream, cap, sizeof(*stream));
			}
			stream[n++] = lived[lpn] == NEVER ? EMU_FTL_NR_CTX - 1 :
				      life_stream(lived[lpn]);
			born[lpn] = t++;
		}
	}
	free(born);
	free(lived);
	return stream ? stream : grow(NULL, 1, 1);
}

static void check(int ret, const struct cmd *c)
{
	if (ret)
		die("the model refused command %" PRIu64 " (%s %" PRIu64 " %u): %s",
		    c->seq, c->write ? "W" : "DISCARD", c->start, c->count,
		    strerror(-ret));
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ftlreplay --sectors N --page-bytes N --block-bytes N --op-percent N\n"
		   "                 --from SEQ --count-from SEQ --count-to SEQ\n"
		   "                 --placement logged|future|past LOG\n");
}

int main(int argc, char **argv)
{
	static const struct option options[] = {
		{ "sectors", required_argument, NULL, 's' },
		{ "page-bytes", required_argument, NULL, 'p' },
		{ "block-bytes", required_argument, NULL, 'b' },
		{ "op-percent", required_argument, NULL, 'o' },
		{ "from", required_argument, NULL, 'f' },
		{ "count-from", required_argument, NULL, 'a' },
		{ "count-to", required_argument, NULL, 'z' },
		{ "placement", required_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{}
	};
	struct emu_ftl_stats a = {}, b;
	uint64_t spp, logical_pages, lpn, end;
	unsigned long long waf;
	uint8_t *stream = NULL;
	const char *placement = NULL;
	struct emu_ftl *ftl;
	struct cmd *cmds;
	size_t nr, i, e = 0;
	bool counting = false;
	int c, ret;
	FILE *f;

	while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
		switch (c) {
		case 's': opt.sectors = number("sectors", optarg); break;
		case 'p': opt.page_bytes = number("page-bytes", optarg); break;
		case 'b': opt.block_bytes = number("block-bytes", optarg); break;
		case 'o': opt.op_percent = number("op-percent", optarg); break;
		case 'f': opt.from = number("from", optarg); break;
		case 'a': opt.count_from = number("count-from", optarg); break;
		case 'z': opt.count_to = number("count-to", optarg); break;
		case 'P': placement = optarg; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc - 1 || !placement || !opt.sectors || !opt.page_bytes ||
	    !opt.block_bytes) {
		usage(stderr);
		return 2;
	}
	if (strcmp(placement, "logged") && strcmp(placement, "future") &&
	    strcmp(placement, "past"))
		die("--placement %s: logged, future or past", placement);
	if (opt.from > opt.count_from || opt.count_from > opt.count_to)
		die("need --from <= --count-from <= --count-to");

	f = fopen(argv[optind], "r");
	if (!f)
		die("%s: %s", argv[optind], strerror(errno));
	cmds = read_log(f, &nr);
	fclose(f);

	ftl = mmc_emu_ftl_create(opt.sectors * SECTOR, opt.page_bytes,
				 opt.block_bytes, opt.op_percent);
	if (IS_ERR(ftl))
		die("the model refused the geometry");
	spp = opt.page_bytes / SECTOR;
	mmc_emu_ftl_stats(ftl, &b);
	logical_pages = b.logical_pages;
	if (!strcmp(placement, "future"))
		stream = future_streams(cmds, nr, spp, logical_pages);
	else if (!strcmp(placement, "past"))
		stream = past_streams(cmds, nr, spp, logical_pages);

	for (i = 0; i <= nr; i++) {
		if (!counting && (i == nr || cmds[i].seq >= opt.count_from)) {
			mmc_emu_ftl_stats(ftl, &a);
			counting = true;
		}
		if (i == nr)
			break;
		if (!cmds[i].write) {
			check(mmc_emu_ftl_trim(ftl, cmds[i].start, cmds[i].count), &cmds[i]);
			continue;
		}
		/* logged: as the card received it */
		if (!stream) {
			check(mmc_emu_ftl_write(ftl, cmds[i].start, cmds[i].count,
						cmds[i].ctx), &cmds[i]);
			continue;
		}
		/* Page by page, each in its own stream */
		end = cmds[i].start + cmds[i].count;
		for (lpn = cmds[i].start / spp; lpn * spp < end; lpn++) {
			uint64_t s = lpn * spp > cmds[i].start ? lpn * spp : cmds[i].start;
			uint64_t t = (lpn + 1) * spp < end ? (lpn + 1) * spp : end;

			ret = mmc_emu_ftl_write(ftl, s, t - s, stream[e++]);
			check(ret, &cmds[i]);
		}
	}
	mmc_emu_ftl_stats(ftl, &b);
	b.host_pages_written -= a.host_pages_written;
	b.nand_pages_programmed -= a.nand_pages_programmed;
	b.gc_pages_moved -= a.gc_pages_moved;
	b.blocks_erased -= a.blocks_erased;
	waf = mmc_emu_ftl_wa_milli(&b);
	printf("ftlreplay: placement=%s host_pages=%llu nand_pages=%llu gc_moved=%llu erases=%llu waf=%llu.%03llu\n",
	       placement, b.host_pages_written, b.nand_pages_programmed,
	       b.gc_pages_moved, b.blocks_erased, waf / 1000, waf % 1000);
	mmc_emu_ftl_destroy(ftl);
	free(stream);
	free(cmds);
	return 0;
}
