// SPDX-License-Identifier: GPL-2.0
/*
 * The benchmark of tools/blkctx: in the guest, for each workload and each
 * ext4 context policy, make ext4 on the emulated eMMC, run the workload
 * until the card's flash model reaches steady state, then count what a
 * further volume of host writes costs in NAND programs and garbage
 * collection.  Everything is counted, nothing is timed.
 *
 * Parameters come from the kernel command line (the guest has no other
 * way in): ctxbench.workloads=mail,db,mix,phone,seq ctxbench.policies=none,inode,...
 * ctxbench.warmup=N ctxbench.volume=N (in tenths of the card's logical size)
 * ctxbench.seeds=N,N,... (each workload and policy runs once per seed)
 * ctxbench.fill=N (percent of the filesystem kept in use)
 * ctxbench.discard=0|1 (mount -o discard, so that deleted files reach the
 * flash model as trims; the default, as a periodic fstrim would do too).
 *
 * Every run starts from the state of a new card: ctxbench discards the whole
 * card, after which the card's flash model has erased every block (mmc_emu
 * does that when no page holds data), and checks it. Then it replays the
 * card's command log of the run through the same FTL code in userspace
 * (ftlreplay): with the logged contexts the counts must be the card's own,
 * exactly, and with future-knowledge placement they give the limit, the
 * best that placement by true lifetime gets from the card's streams; placed
 * by the lifetime of the data each write replaces (learned from the past
 * only, as SepBIT does in a device) they show what learning gets.
 *
 * A policy is a name for /sys/fs/ext4/<disk>/context_policy, with
 * "+journal" to mount with journal_context as well, or "default" to leave
 * the kernel as it is: a kernel without context policies runs only that.
 *
 * Workloads (each step ends in fsync, as the programs they stand for do,
 * so that writeback, and so the counts, follow the workload and not the
 * flusher's timing):
 *   mail  a mail server: messages of 4..64 KiB (one in ten 256 KiB..2 MiB
 *         with an attachment) created in 8 mailbox directories, and random
 *         messages deleted to keep the filesystem at the fill level
 *   db    a database: a table file of 40% of the filesystem overwritten in
 *         4 KiB pages at random (80% of writes to a hot 20%), beside an
 *         append-only log of 16 KiB records in 4 MiB segments, the oldest
 *         of 4 deleted as a new one starts
 *   mix   mail and db in one process, taking turns step by step
 *   phone a phone's storage from real programs: four apps, each with a
 *         sqlite3 database (WAL, with Android's settings: synchronous=FULL,
 *         wal_autocheckpoint=100, journal_size_limit=512 KiB) that keeps
 *         its newest 1500 rows of 100..2000 bytes, a cache directory of
 *         8..128 KiB files that the app drops whole beyond 1 MiB, and a
 *         package of 1..2 MiB replaced by write, fsync and rename; and a
 *         camera: photos of 1..3 MiB with a thumbnail and a row in a
 *         gallery database, the oldest photo deleted to keep the fill.
 *         Of 1000 steps 650 are a transaction of one app (the apps take
 *         45, 25, 20 and 10% of them), 270 a cache file, 75 a photo and 5
 *         an app update.  Each database has its own sqlite3 process.
 *   seq   one file of half the filesystem written sequentially, for the
 *         request and merge counts (no steady state: warmup is ignored),
 *         and the card's write commands of the file's own blocks
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>
/* the card, found as the kselftests find it: never a disk of another card */
#include "../mmc/emmc_emu.h"

#define FTL		EMU_DIR "ftl"
#define EMU_LOG		EMU_DIR "log"
#define EMU_CLEAR	EMU_DIR "clear"
#define FILE_EXTENTS	256
#define MAX_FILES	65536
#define MAIL_DIRS	8
#define DB_PAGE		4096
#define LOG_RECORD	16384
#define LOG_SEGMENT	(4 << 20)
#define LOG_KEEP	4
#define PHONE_APPS	4
#define APP_ROWS_KEPT	1500
#define APP_CACHE_LIMIT	(1 << 20)

static char replay_path[4096];
static char policy_path[PATH_MAX], diskstat_path[PATH_MAX];

struct counters {
	unsigned long long host_pages, nand_pages, gc_moved, erases;
	unsigned long long write_reqs, write_merges;
	unsigned long long free_blocks, open_blocks, mapped_pages, log_next;
};

static struct {
	char workloads[256], policies[256], seeds[256];
	unsigned int warmup, volume, fill, discard;
} opt = { "mail,db,mix", "none,inode", "1", 10, 20, 80, 1 };

static unsigned long long page_bytes, logical_pages, block_bytes, op_percent;
static unsigned long long physical_blocks, card_sectors;
static unsigned long long fs_bytes;
static unsigned char buf[2 << 20];

__attribute__((noreturn, format(printf, 1, 2)))
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("ctxbench: error: ");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
	exit(1);
}

/* xorshift64*: the same sequence for the same seed, on every architecture */
static uint64_t next_random(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 2685821657736338717ULL;
}

static uint64_t below(uint64_t *s, uint64_t n)
{
	return n ? next_random(s) % n : 0;
}

static unsigned long long ftl_value(const char *text, const char *key)
{
	size_t len = strlen(key);
	const char *p = text;

	while (p && *p) {
		if (!strncmp(p, key, len) && p[len] == ':')
			return strtoull(p + len + 1, NULL, 10);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	die("no %s in " FTL, key);
	return 0;
}

static void read_counters(struct counters *c)
{
	char text[4096];
	unsigned long long v[11];
	size_t n;
	FILE *f;

	f = fopen(FTL, "r");
	if (!f)
		die("cannot read " FTL ": %s", strerror(errno));
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	c->host_pages = ftl_value(text, "host_pages_written");
	c->nand_pages = ftl_value(text, "nand_pages_programmed");
	c->gc_moved = ftl_value(text, "gc_pages_moved");
	c->erases = ftl_value(text, "blocks_erased");
	c->free_blocks = ftl_value(text, "free_blocks");
	c->open_blocks = ftl_value(text, "open_blocks");
	c->mapped_pages = ftl_value(text, "mapped_pages");
	c->log_next = ftl_value(text, "log_next");
	page_bytes = ftl_value(text, "page_bytes");
	logical_pages = ftl_value(text, "logical_pages");
	block_bytes = ftl_value(text, "block_bytes");
	op_percent = ftl_value(text, "op_percent");
	physical_blocks = ftl_value(text, "physical_blocks");

	/* Documentation/block/stat.rst: writes are fields 5 and 6 */
	f = fopen(diskstat_path, "r");
	if (!f || fscanf(f, "%llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
			 &v[3], &v[4], &v[5]) != 6)
		die("cannot read %s", diskstat_path);
	fclose(f);
	c->write_reqs = v[4];
	c->write_merges = v[5];
}

static void must_write(const char *path, const char *s)
{
	int err = write_string(path, s);

	if (err)
		die("cannot write %s to %s: %s", s, path, strerror(err));
}

static void write_all(int fd, size_t len, off_t off, uint64_t *rng)
{
	size_t i;

	if (len > sizeof(buf))
		die("write_all: %zu bytes is more than the buffer's %zu", len, sizeof(buf));
	/* data that does not compress or dedupe, should a model ever care */
	for (i = 0; i + 8 <= len; i += 8) {
		uint64_t r = next_random(rng);

		memcpy(buf + i, &r, 8);
	}
	if (pwrite(fd, buf, len, off) != (ssize_t)len)
		die("write: %s", strerror(errno));
}

static unsigned long long used_bytes(void)
{
	struct statvfs sv;

	if (statvfs(MNT, &sv))
		die("statvfs: %s", strerror(errno));
	return (unsigned long long)(sv.f_blocks - sv.f_bfree) * sv.f_frsize;
}

/* mail: create and delete messages around the fill level */
struct mail {
	uint64_t rng;
	unsigned int nr, next_id;
	unsigned int *ids;
};

static void mail_init(struct mail *m, uint64_t seed)
{
	char path[64];
	int d;

	m->rng = seed;
	m->nr = 0;
	m->next_id = 0;
	m->ids = calloc(MAX_FILES, sizeof(*m->ids));
	if (!m->ids)
		die("out of memory");
	for (d = 0; d < MAIL_DIRS; d++) {
		snprintf(path, sizeof(path), MNT "/mail%d", d);
		if (mkdir(path, 0755) && errno != EEXIST)
			die("mkdir %s: %s", path, strerror(errno));
	}
}

static void mail_path(char *path, size_t len, unsigned int id)
{
	snprintf(path, len, MNT "/mail%u/msg%u", id % MAIL_DIRS, id);
}

static void mail_step(struct mail *m, unsigned long long target)
{
	static const unsigned int small_kib[] = { 4, 4, 8, 8, 12, 16, 24, 32, 48, 64 };
	char path[64];
	size_t size;
	unsigned int i;
	int fd;

	while (m->nr && (used_bytes() > target || m->nr == MAX_FILES)) {
		i = below(&m->rng, m->nr);
		mail_path(path, sizeof(path), m->ids[i]);
		if (unlink(path))
			die("unlink %s: %s", path, strerror(errno));
		m->ids[i] = m->ids[--m->nr];
	}
	if (below(&m->rng, 10) == 0)
		size = (256 + below(&m->rng, 1793)) << 10;
	else
		size = small_kib[below(&m->rng, 10)] << 10;
	mail_path(path, sizeof(path), m->next_id);
	fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0600);
	if (fd < 0)
		die("create %s: %s", path, strerror(errno));
	write_all(fd, size, 0, &m->rng);
	if (fsync(fd) || close(fd))
		die("fsync %s: %s", path, strerror(errno));
	m->ids[m->nr++] = m->next_id++;
}

/* db: random page overwrites of a table, an append-only log beside it */
struct db {
	uint64_t rng;
	int table, log;
	unsigned long long pages, log_bytes;
	unsigned int segment;
};

static void db_open_segment(struct db *d)
{
	char path[64];

	snprintf(path, sizeof(path), MNT "/db/log.%u", d->segment);
	d->log = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_APPEND, 0600);
	if (d->log < 0)
		die("create %s: %s", path, strerror(errno));
	d->log_bytes = 0;
}

static void db_init(struct db *d, uint64_t seed)
{
	unsigned long long size = fs_bytes * 2 / 5, off;

	d->rng = seed;
	d->pages = size / DB_PAGE;
	if (mkdir(MNT "/db", 0755) && errno != EEXIST)
		die("mkdir db: %s", strerror(errno));
	d->table = open(MNT "/db/table", O_CREAT | O_RDWR, 0600);
	if (d->table < 0)
		die("create table: %s", strerror(errno));
	for (off = 0; off < d->pages * DB_PAGE; off += sizeof(buf)) {
		size_t len = d->pages * DB_PAGE - off;

		write_all(d->table, len < sizeof(buf) ? len : sizeof(buf), off, &d->rng);
	}
	if (fsync(d->table))
		die("fsync table: %s", strerror(errno));
	d->segment = 0;
	db_open_segment(d);
}

static void db_step(struct db *d)
{
	unsigned long long page, hot = d->pages / 5;
	char path[64];
	int i;

	for (i = 0; i < 4; i++) {
		if (below(&d->rng, 10) < 8)
			page = below(&d->rng, hot);
		else
			page = hot + below(&d->rng, d->pages - hot);
		write_all(d->table, DB_PAGE, page * DB_PAGE, &d->rng);
	}
	write_all(d->log, LOG_RECORD, 0, &d->rng);
	d->log_bytes += LOG_RECORD;
	if (fdatasync(d->log) || fdatasync(d->table))
		die("fdatasync: %s", strerror(errno));
	if (d->log_bytes >= LOG_SEGMENT) {
		close(d->log);
		d->segment++;
		if (d->segment >= LOG_KEEP) {
			snprintf(path, sizeof(path), MNT "/db/log.%u",
				 d->segment - LOG_KEEP);
			if (unlink(path))
				die("unlink %s: %s", path, strerror(errno));
		}
		db_open_segment(d);
	}
}

/* A sqlite3 process on one database, fed SQL through a pipe. */
struct sqlite {
	char path[64];
	pid_t pid;
	FILE *in, *out;
};

/*
 * Run SQL and wait until sqlite3 has done it: the "ok" it prints after,
 * so that a step ends when its transaction is on the card.  -bail ends
 * sqlite3 at an error, which ends the benchmark here.  @first, if not
 * NULL, gets the first line the SQL printed.
 */
__attribute__((format(printf, 4, 5)))
static void sqlite_run(struct sqlite *s, char *first, size_t len, const char *fmt, ...)
{
	char line[256];
	va_list ap;

	va_start(ap, fmt);
	vfprintf(s->in, fmt, ap);
	va_end(ap);
	fputs(";\nSELECT 'ok';\n", s->in);
	if (fflush(s->in))
		die("sqlite3 on %s: %s", s->path, strerror(errno));
	if (first)
		*first = '\0';
	while (fgets(line, sizeof(line), s->out)) {
		if (!strcmp(line, "ok\n"))
			return;
		if (first && !*first)
			snprintf(first, len, "%s", line);
	}
	die("sqlite3 on %s ended", s->path);
}

static void sqlite_start(struct sqlite *s, const char *path)
{
	int to[2], from[2];
	char mode[256];

	snprintf(s->path, sizeof(s->path), "%s", path);
	/* close-on-exec: no sqlite3 holds another one's pipe open */
	if (pipe2(to, O_CLOEXEC) || pipe2(from, O_CLOEXEC))
		die("pipe: %s", strerror(errno));
	s->pid = fork();
	if (s->pid < 0)
		die("fork: %s", strerror(errno));
	if (!s->pid) {
		/* ctxbench ignores SIGPIPE; sqlite3 gets the default */
		signal(SIGPIPE, SIG_DFL);
		if (dup2(to[0], 0) < 0 || dup2(from[1], 1) < 0)
			_exit(127);
		execlp("sqlite3", "sqlite3", "-batch", "-bail", "-init", "/dev/null", path,
		       (char *)NULL);
		fprintf(stderr, "ctxbench: cannot run sqlite3: %s\n", strerror(errno));
		_exit(127);
	}
	close(to[0]);
	close(from[1]);
	s->in = fdopen(to[1], "w");
	s->out = fdopen(from[0], "r");
	if (!s->in || !s->out)
		die("fdopen: %s", strerror(errno));
	sqlite_run(s, mode, sizeof(mode), "PRAGMA journal_mode=WAL");
	if (strcmp(mode, "wal\n"))
		die("sqlite3 on %s: journal mode %s, not WAL", path, mode);
	sqlite_run(s, NULL, 0, "PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=100; PRAGMA journal_size_limit=524288; CREATE TABLE item(id INTEGER PRIMARY KEY, t INTEGER, body BLOB)");
}

static void sqlite_stop(struct sqlite *s)
{
	char line[256];
	int status = 0;

	fclose(s->in);
	while (fgets(line, sizeof(line), s->out))
		;
	fclose(s->out);
	if (waitpid(s->pid, &status, 0) != s->pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		die("sqlite3 on %s failed (status 0x%x)", s->path, status);
}

/* phone: apps with a database, a cache and a package; a camera */
struct app {
	struct sqlite db;
	unsigned int rows, cache_first, cache_next;
	unsigned long long cache_bytes;
};

struct phone {
	uint64_t rng;
	struct app app[PHONE_APPS];
	struct sqlite gallery;
	unsigned int photo_first, photo_next;
	unsigned int transactions, cache_files, caches_dropped, updates;
};

static void phone_mkdir(const char *fmt, unsigned int n)
{
	char path[64];

	snprintf(path, sizeof(path), fmt, n);
	if (mkdir(path, 0755) && errno != EEXIST)
		die("mkdir %s: %s", path, strerror(errno));
}

/* a file of @size bytes, on the card when it returns */
static void phone_file(const char *path, size_t size, uint64_t *rng)
{
	int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0600);
	size_t off, len;

	if (fd < 0)
		die("create %s: %s", path, strerror(errno));
	for (off = 0; off < size; off += len) {
		len = size - off < sizeof(buf) ? size - off : sizeof(buf);
		write_all(fd, len, off, rng);
	}
	if (fsync(fd) || close(fd))
		die("fsync %s: %s", path, strerror(errno));
}

/* an app update: the new package beside the old, then renamed over it */
static void phone_update(struct phone *p, unsigned int a)
{
	char tmp[64], path[64];
	int dir;

	snprintf(tmp, sizeof(tmp), MNT "/phone/app%u/base.apk.new", a);
	snprintf(path, sizeof(path), MNT "/phone/app%u/base.apk", a);
	phone_file(tmp, (1024 + below(&p->rng, 1025)) << 10, &p->rng);
	if (rename(tmp, path))
		die("rename %s: %s", tmp, strerror(errno));
	p->updates++;
	snprintf(path, sizeof(path), MNT "/phone/app%u", a);
	dir = open(path, O_RDONLY | O_DIRECTORY);
	if (dir < 0 || fsync(dir) || close(dir))
		die("fsync %s: %s", path, strerror(errno));
}

static void phone_init(struct phone *p, uint64_t seed)
{
	char path[64];
	unsigned int a;

	/* a sqlite3 that died is a write error, not a signal */
	signal(SIGPIPE, SIG_IGN);
	memset(p, 0, sizeof(*p));
	p->rng = seed;
	phone_mkdir(MNT "/phone", 0);
	phone_mkdir(MNT "/phone/DCIM", 0);
	phone_mkdir(MNT "/phone/thumbs", 0);
	snprintf(path, sizeof(path), MNT "/phone/gallery.db");
	sqlite_start(&p->gallery, path);
	for (a = 0; a < PHONE_APPS; a++) {
		phone_mkdir(MNT "/phone/app%u", a);
		phone_mkdir(MNT "/phone/app%u/cache", a);
		phone_update(p, a);
		snprintf(path, sizeof(path), MNT "/phone/app%u/data.db", a);
		sqlite_start(&p->app[a].db, path);
	}
}

static void phone_stop(struct phone *p)
{
	unsigned int a;

	for (a = 0; a < PHONE_APPS; a++)
		sqlite_stop(&p->app[a].db);
	sqlite_stop(&p->gallery);
	printf("ctxbench: phone: transactions=%u cache_files=%u caches_dropped=%u photos=%u photos_deleted=%u updates=%u\n",
	       p->transactions, p->cache_files, p->caches_dropped, p->photo_next,
	       p->photo_first, p->updates);
	fflush(stdout);
}

/* one transaction: new rows, sometimes a row rewritten, the oldest dropped */
static void phone_transaction(struct phone *p, struct app *app)
{
	char sql[1024];
	unsigned int n = 1 + below(&p->rng, 3), first;
	int len;

	len = snprintf(sql, sizeof(sql), "BEGIN");
	while (n--)
		len += snprintf(sql + len, sizeof(sql) - len,
				"; INSERT INTO item(t, body) VALUES(%u, randomblob(%u))",
				++app->rows, 100 + (unsigned int)below(&p->rng, 1901));
	first = app->rows > APP_ROWS_KEPT ? app->rows - APP_ROWS_KEPT + 1 : 1;
	if (below(&p->rng, 4) == 0)
		len += snprintf(sql + len, sizeof(sql) - len,
				"; UPDATE item SET body = randomblob(%u) WHERE id = %u",
				100 + (unsigned int)below(&p->rng, 1901),
				first + (unsigned int)below(&p->rng, app->rows - first + 1));
	snprintf(sql + len, sizeof(sql) - len,
		 "; DELETE FROM item WHERE id < %u; COMMIT", first);
	p->transactions++;
	sqlite_run(&app->db, NULL, 0, "%s", sql);
}

static void phone_cache(struct phone *p, unsigned int a)
{
	struct app *app = &p->app[a];
	size_t size = (8 + below(&p->rng, 121)) << 10;
	char path[64];

	if (app->cache_bytes + size > APP_CACHE_LIMIT) {
		for (; app->cache_first < app->cache_next; app->cache_first++) {
			snprintf(path, sizeof(path), MNT "/phone/app%u/cache/c%u",
				 a, app->cache_first);
			if (unlink(path))
				die("unlink %s: %s", path, strerror(errno));
		}
		app->cache_bytes = 0;
		p->caches_dropped++;
	}
	snprintf(path, sizeof(path), MNT "/phone/app%u/cache/c%u", a, app->cache_next++);
	phone_file(path, size, &p->rng);
	app->cache_bytes += size;
	p->cache_files++;
}

static void photo_paths(char *photo, char *thumb, size_t len, unsigned int n)
{
	snprintf(photo, len, MNT "/phone/DCIM/IMG_%05u.jpg", n);
	snprintf(thumb, len, MNT "/phone/thumbs/%05u.jpg", n);
}

static void phone_photo(struct phone *p)
{
	char photo[64], thumb[64];

	photo_paths(photo, thumb, sizeof(photo), p->photo_next);
	phone_file(photo, (1024 + below(&p->rng, 2049)) << 10, &p->rng);
	phone_file(thumb, (16 + below(&p->rng, 33)) << 10, &p->rng);
	/* the gallery's row ids are the photos' numbers plus one, given */
	sqlite_run(&p->gallery, NULL, 0,
		   "INSERT INTO item(id, t, body) VALUES(%u, %u, randomblob(200))",
		   p->photo_next + 1, p->photo_next);
	p->photo_next++;
}

static void phone_step(struct phone *p, unsigned long long target)
{
	static const unsigned int app_share[PHONE_APPS] = { 45, 25, 20, 10 };
	unsigned int r, a, pick;
	char photo[64], thumb[64];

	while (used_bytes() > target) {
		if (p->photo_first == p->photo_next)
			die("phone: the filesystem is over the fill with no photo left to delete");
		photo_paths(photo, thumb, sizeof(photo), p->photo_first);
		if (unlink(photo) || unlink(thumb))
			die("unlink %s: %s", photo, strerror(errno));
		sqlite_run(&p->gallery, NULL, 0, "DELETE FROM item WHERE id = %u", ++p->photo_first);
	}
	pick = below(&p->rng, 100);
	for (a = 0; a < PHONE_APPS - 1 && pick >= app_share[a]; a++)
		pick -= app_share[a];
	r = below(&p->rng, 1000);
	if (r < 650)
		phone_transaction(p, &p->app[a]);
	else if (r < 920)
		phone_cache(p, a);
	else if (r < 995)
		phone_photo(p);
	else
		phone_update(p, a);
}

/* A workload in progress: mail, db, both taking turns step by step, or phone. */
struct load {
	struct mail *mail;
	struct db *db;
	struct phone *phone;
};

/* Run the load until the card has taken pages more host pages. */
static void run_until(struct load *l, unsigned long long pages,
		      unsigned long long fill_target)
{
	struct counters c;
	unsigned long long start;

	read_counters(&c);
	start = c.host_pages;
	do {
		if (l->mail)
			mail_step(l->mail, fill_target);
		if (l->db)
			db_step(l->db);
		if (l->phone)
			phone_step(l->phone, fill_target);
		read_counters(&c);
	} while (c.host_pages - start < pages);
}

/*
 * The card's write commands that touch the file's blocks, from its command
 * log: how many requests the file's data became, whatever else the kernel
 * wrote meanwhile (journal, metadata).
 */
static unsigned long long file_writes(int fd)
{
	size_t size = sizeof(struct fiemap) + FILE_EXTENTS * sizeof(struct fiemap_extent);
	struct fiemap *fm = calloc(1, size);
	unsigned long long seq, start, count, n = 0;
	char line[256], op[8];
	unsigned int i;
	FILE *f;

	if (!fm)
		die("out of memory");
	fm->fm_length = FIEMAP_MAX_OFFSET;
	fm->fm_flags = FIEMAP_FLAG_SYNC;
	fm->fm_extent_count = FILE_EXTENTS;
	if (ioctl(fd, FS_IOC_FIEMAP, fm))
		die("FIEMAP: %s", strerror(errno));
	if (fm->fm_mapped_extents == FILE_EXTENTS)
		die("the file has more than %d extents", FILE_EXTENTS);
	f = fopen(EMU_LOG, "r");
	if (!f)
		die("cannot read " EMU_LOG);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llu %7s %llu %llu", &seq, op, &start, &count) != 4 ||
		    strcmp(op, "W"))
			continue;
		for (i = 0; i < fm->fm_mapped_extents; i++) {
			unsigned long long first = fm->fm_extents[i].fe_physical / 512;
			unsigned long long sectors = fm->fm_extents[i].fe_length / 512;

			if (start < first + sectors && first < start + count) {
				n++;
				break;
			}
		}
	}
	fclose(f);
	free(fm);
	return n;
}

/* Returns the number of the card's write commands of the file's data. */
static unsigned long long seq_run(uint64_t seed)
{
	unsigned long long size = fs_bytes / 2, off, n;
	uint64_t rng = seed;
	int fd = open(MNT "/seq", O_CREAT | O_TRUNC | O_WRONLY, 0600);

	if (fd < 0)
		die("create seq: %s", strerror(errno));
	/* the log ring holds the last 4096 commands: plenty for one file */
	must_write(EMU_CLEAR, "1");
	for (off = 0; off < size; off += sizeof(buf))
		write_all(fd, sizeof(buf), off, &rng);
	if (fsync(fd))
		die("fsync seq: %s", strerror(errno));
	n = file_writes(fd);
	if (close(fd))
		die("close seq: %s", strerror(errno));
	return n;
}

/*
 * Discard the whole card, so that its flash model is a new card's, and
 * check that it is: every run starts from the same state.
 */
static void start_from_new_card(void)
{
	uint64_t range[2] = { 0, card_sectors * 512 };
	struct counters c;
	int fd = open(emmc.dev, O_WRONLY);

	if (fd < 0 || ioctl(fd, BLKDISCARD, range) || close(fd))
		die("cannot discard %s: %s", emmc.dev, strerror(errno));
	read_counters(&c);
	if (c.mapped_pages || c.open_blocks || c.free_blocks != physical_blocks)
		die("the card is not new after a full discard: %llu pages mapped, %llu blocks open, %llu of %llu free",
		    c.mapped_pages, c.open_blocks, c.free_blocks, physical_blocks);
}

/* Replay the log from @from, count from @a to @b: "ftlreplay: ..." */
static void replay(const char *placement, unsigned long long from,
		   const struct counters *a, const struct counters *b,
		   char *out, size_t len)
{
	char cmd[5120];
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "%s --sectors %llu --page-bytes %llu --block-bytes %llu --op-percent %llu --from %llu --count-from %llu --count-to %llu --placement %s " EMU_LOG,
		 replay_path, card_sectors, page_bytes, block_bytes, op_percent, from,
		 a->log_next, b->log_next, placement);
	p = popen(cmd, "r");
	if (!p || !fgets(out, len, p) || pclose(p))
		die("%s failed", cmd);
	out[strcspn(out, "\n")] = '\0';
	if (strncmp(out, "ftlreplay: ", 11))
		die("%s printed %s", cmd, out);
}

/* the text after @key in a replay's line */
static const char *replay_field(const char *line, const char *key)
{
	const char *p = strstr(line, key);

	if (!p)
		die("no %s in %s", key, line);
	return p + strlen(key);
}

static unsigned long long replay_value(const char *line, const char *key)
{
	return strtoull(replay_field(line, key), NULL, 10);
}

/*
 * The counts of the card between @a and @b must be what its log gives
 * through the same FTL code, exactly; then the same log placed by the
 * lifetime of the data each write replaces (@learned) and by true
 * lifetimes (@limit).
 */
static void check_and_limit(unsigned long long from, const struct counters *a,
			    const struct counters *b, char *learned, char *limit,
			    size_t len)
{
	char logged[256];

	replay("logged", from, a, b, logged, sizeof(logged));
	if (replay_value(logged, " host_pages=") != b->host_pages - a->host_pages ||
	    replay_value(logged, " nand_pages=") != b->nand_pages - a->nand_pages ||
	    replay_value(logged, " gc_moved=") != b->gc_moved - a->gc_moved ||
	    replay_value(logged, " erases=") != b->erases - a->erases)
		die("the replay of the log differs from the card: %s, card host_pages=%llu nand_pages=%llu gc_moved=%llu erases=%llu",
		    logged, b->host_pages - a->host_pages,
		    b->nand_pages - a->nand_pages, b->gc_moved - a->gc_moved,
		    b->erases - a->erases);
	replay("past", from, a, b, learned, len);
	replay("future", from, a, b, limit, len);
}

/* @file_writes: for seq, the card's write commands of the file's data */
static void print_result(const char *workload, const char *policy,
			 unsigned long long seed, const struct counters *a,
			 const struct counters *b, unsigned long long file_writes,
			 const char *learned, const char *limit)
{
	unsigned long long host = b->host_pages - a->host_pages;
	unsigned long long nand = b->nand_pages - a->nand_pages;
	unsigned long long waf = host ? (nand * 1000 + host / 2) / host : 0;

	printf("ctxbench: workload=%s policy=%s seed=%llu host_pages=%llu nand_pages=%llu gc_moved=%llu erases=%llu write_requests=%llu write_merges=%llu waf=%llu.%03llu open_blocks=%llu",
	       workload, policy, seed, host, nand, b->gc_moved - a->gc_moved,
	       b->erases - a->erases, b->write_reqs - a->write_reqs,
	       b->write_merges - a->write_merges, waf / 1000, waf % 1000,
	       b->open_blocks);
	if (file_writes)
		printf(" file_writes=%llu", file_writes);
	if (limit)
		printf(" replay=exact learned_nand_pages=%llu learned_waf=%s limit_nand_pages=%llu limit_gc_moved=%llu limit_waf=%s",
		       replay_value(learned, " nand_pages="),
		       replay_field(learned, " waf="),
		       replay_value(limit, " nand_pages="),
		       replay_value(limit, " gc_moved="), replay_field(limit, " waf="));
	printf("\n");
	fflush(stdout);
}

#define JOURNAL_SUFFIX	"+journal"

static void run(const char *workload, const char *policy,
		unsigned long long seed)
{
	struct load l = { NULL, NULL, NULL };
	struct counters a, b, start;
	unsigned long long target, file_writes;
	char learned[256], limit[256];
	struct statvfs sv;
	char name[64], options[64];
	size_t len;
	struct mail m;
	struct db d;
	struct phone ph;

	snprintf(name, sizeof(name), "%s", policy);
	len = strlen(name);
	snprintf(options, sizeof(options), "%s", opt.discard ? "discard" : "");
	if (len > strlen(JOURNAL_SUFFIX) &&
	    !strcmp(name + len - strlen(JOURNAL_SUFFIX), JOURNAL_SUFFIX)) {
		name[len - strlen(JOURNAL_SUFFIX)] = '\0';
		strcat(options, *options ? ",journal_context" : "journal_context");
	}
	start_from_new_card();
	must_write(EMU_CLEAR, "1");
	read_counters(&start);
	if (run_cmd("mke2fs -q -F -E nodiscard -t ext4 %s", emmc.dev))
		die("mke2fs failed");
	if (mount(emmc.dev, MNT, "ext4", 0, options))
		die("mount -o %s: %s", options, strerror(errno));
	if (strcmp(name, "default")) {
		if (access(policy_path, F_OK))
			die("no %s (a kernel without ext4 context policies?)", policy_path);
		must_write(policy_path, name);
	}
	if (statvfs(MNT, &sv))
		die("statvfs: %s", strerror(errno));
	fs_bytes = (unsigned long long)sv.f_blocks * sv.f_frsize;
	target = fs_bytes * opt.fill / 100;

	read_counters(&a);
	if (!strcmp(workload, "seq")) {
		file_writes = seq_run(seed);
		read_counters(&b);
		print_result(workload, policy, seed, &a, &b, file_writes, NULL, NULL);
		goto out;
	}
	if (!strcmp(workload, "mail") || !strcmp(workload, "mix")) {
		mail_init(&m, seed);
		l.mail = &m;
	}
	if (!strcmp(workload, "db") || !strcmp(workload, "mix")) {
		db_init(&d, seed + 1);
		l.db = &d;
	}
	if (!strcmp(workload, "phone")) {
		phone_init(&ph, seed);
		l.phone = &ph;
	}
	if (!l.mail && !l.db && !l.phone)
		die("unknown workload %s", workload);
	run_until(&l, logical_pages * opt.warmup / 10, target);
	read_counters(&a);
	run_until(&l, logical_pages * opt.volume / 10, target);
	read_counters(&b);
	check_and_limit(start.log_next, &a, &b, learned, limit, sizeof(limit));
	print_result(workload, policy, seed, &a, &b, 0, learned, limit);
	if (l.mail)
		free(m.ids);
	if (l.db) {
		close(d.table);
		close(d.log);
	}
	/* after the counted window: the last connection checkpoints */
	if (l.phone)
		phone_stop(&ph);
out:
	if (umount(MNT))
		die("umount: %s", strerror(errno));
}

/* the names of a comma-separated list, empty ones not counted */
static unsigned int list_length(const char *list)
{
	unsigned int n = 0;
	const char *p;

	for (p = list; *p; p++)
		if (*p != ',' && (p == list || p[-1] == ','))
			n++;
	return n;
}

static void parse_cmdline(void)
{
	char line[4096], *arg, *save;
	FILE *f = fopen("/proc/cmdline", "r");

	if (!f || !fgets(line, sizeof(line), f))
		die("cannot read /proc/cmdline");
	fclose(f);
	for (arg = strtok_r(line, " \n", &save); arg; arg = strtok_r(NULL, " \n", &save)) {
		if (!strncmp(arg, "ctxbench.workloads=", 19))
			snprintf(opt.workloads, sizeof(opt.workloads), "%s", arg + 19);
		else if (!strncmp(arg, "ctxbench.policies=", 18))
			snprintf(opt.policies, sizeof(opt.policies), "%s", arg + 18);
		else if (!strncmp(arg, "ctxbench.warmup=", 16))
			opt.warmup = strtoul(arg + 16, NULL, 10);
		else if (!strncmp(arg, "ctxbench.volume=", 16))
			opt.volume = strtoul(arg + 16, NULL, 10);
		else if (!strncmp(arg, "ctxbench.fill=", 14))
			opt.fill = strtoul(arg + 14, NULL, 10);
		else if (!strncmp(arg, "ctxbench.discard=", 17))
			opt.discard = strtoul(arg + 17, NULL, 10);
		else if (!strncmp(arg, "ctxbench.seeds=", 15))
			snprintf(opt.seeds, sizeof(opt.seeds), "%s", arg + 15);
	}
	if (!opt.volume || opt.fill < 10 || opt.fill > 95 ||
	    strspn(opt.seeds, "0123456789,") != strlen(opt.seeds) ||
	    !strtoull(opt.seeds, NULL, 10))
		die("bad parameters: volume %u fill %u seeds %s", opt.volume,
		    opt.fill, opt.seeds);
}

int main(void)
{
	char workloads[256], policies[256], seeds[256], *w, *p, *sd;
	char *sw, *sp, *ss, *slash, path[PATH_MAX];
	struct counters c;
	unsigned int streams, runs = 0;
	ssize_t len;

	parse_cmdline();
	/* ftlreplay is installed beside ctxbench */
	len = readlink("/proc/self/exe", replay_path, sizeof(replay_path) - 16);
	if (len <= 0 || !(slash = memrchr(replay_path, '/', len)))
		die("cannot find where ctxbench is");
	strcpy(slash + 1, "ftlreplay");
	if (access(replay_path, X_OK))
		die("no %s", replay_path);
	if (mkdir(MNT, 0755) && errno != EEXIST)
		die("mkdir " MNT ": %s", strerror(errno));
	if (emmc_find())
		die("no emulated eMMC (mmc_emu) with a disk");
	snprintf(policy_path, sizeof(policy_path), "/sys/fs/ext4/%s/context_policy", emmc.disk);
	snprintf(diskstat_path, sizeof(diskstat_path), "/sys/block/%s/stat", emmc.disk);
	snprintf(path, sizeof(path), "/sys/block/%s/size", emmc.disk);
	if (read_number(path) <= 0)
		die("cannot read %s", path);
	card_sectors = read_number(path);
	read_counters(&c);
	/* a kernel without write streams has no such file */
	streams = queue_number("max_write_streams") > 0 ? queue_number("max_write_streams") : 0;
	printf("ctxbench: seeds=%s fill=%u%% discard=%u warmup=%u.%u volume=%u.%u page_bytes=%llu block_bytes=%llu op_percent=%llu logical_pages=%llu physical_blocks=%llu streams=%u\n",
	       opt.seeds, opt.fill, opt.discard, opt.warmup / 10,
	       opt.warmup % 10, opt.volume / 10, opt.volume % 10, page_bytes,
	       block_bytes, op_percent, logical_pages, physical_blocks, streams);
	/* a KTAP plan and a result per run, so that the host can say how far it is */
	printf("TAP version 13\n1..%u\n",
	       list_length(opt.workloads) * list_length(opt.policies) *
	       list_length(opt.seeds));
	fflush(stdout);
	snprintf(workloads, sizeof(workloads), "%s", opt.workloads);
	for (w = strtok_r(workloads, ",", &sw); w; w = strtok_r(NULL, ",", &sw)) {
		snprintf(policies, sizeof(policies), "%s", opt.policies);
		for (p = strtok_r(policies, ",", &sp); p; p = strtok_r(NULL, ",", &sp)) {
			snprintf(seeds, sizeof(seeds), "%s", opt.seeds);
			for (sd = strtok_r(seeds, ",", &ss); sd;
			     sd = strtok_r(NULL, ",", &ss)) {
				run(w, p, strtoull(sd, NULL, 10));
				printf("ok %u %s %s seed %s\n", ++runs, w, p, sd);
				fflush(stdout);
			}
		}
	}
	printf("ctxbench: done\n");
	return 0;
}
