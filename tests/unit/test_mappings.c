/*
 * Unit tests for analyzer/mappings: the executable-mapping manager, with fake
 * maps and files and two handlers.  Several processes share a file: each
 * handler examines it once, attaches it in each process, and is detached when
 * it stops following one; a handler's failure is counted and the rest goes on.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>

#include "analyzer/mappings.h"

#define NPIDS 4

/* The fake processes: pid 100 + i has maps text[i] (NULL: gone). */
static const char *text[NPIDS];
static int maps_reads, file_opens;
static uint64_t fail_open_start;   /* open_file fails for the mapping starting there */

#define LIBC "7f0000000000-7f0000001000 r-xp 00000000 08:01 42 /usr/lib/libc.so.6\n"
#define LIBC_RO "7f0000001000-7f0000002000 r--p 00001000 08:01 42 /usr/lib/libc.so.6\n"
#define APP "400000-401000 r-xp 00000000 08:01 7 /usr/bin/app\n"
#define APP2 "500000-501000 r-xp 00000000 08:01 8 /usr/bin/app2\n"
#define DLOPEN "7f0000100000-7f0000101000 r-xp 00000000 08:01 99 /usr/lib/libplug.so\n"
#define HEAP "600000-700000 rw-p 00000000 00:00 0 [heap]\n"

static int fake_fd(const char *s)
{
	int fd = memfd_create("fake", 0);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, s, strlen(s)), (ssize_t)strlen(s));
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

static int open_maps(void *ctx, uint32_t pid)
{
	(void)ctx;
	maps_reads++;
	if (pid < 100 || pid >= 100 + NPIDS || !text[pid - 100])
		return -ESRCH;
	return fake_fd(text[pid - 100]);
}

static int open_file(void *ctx, uint32_t pid, uint64_t start, uint64_t end)
{
	(void)ctx;
	(void)pid;
	(void)end;
	if (start == fail_open_start)
		return -ENOENT;
	file_opens++;
	return fake_fd("\177ELF");
}

/* A handler's record of what it was told. */
struct rec {
	int id;
	int examined[128];      /* by inode */
	int attached[NPIDS];    /* by process */
	int attached_null;      /* with no data */
	int open_errs;
	int ends, detached[NPIDS], released, live;
	int fail_examine_ino;   /* examine fails for this inode */
	int stale_once_ino;     /* attach answers -ESTALE once for this inode */
	int decline;            /* begin declines */
	int last_err;
	bool last_changed;
	uint64_t last_tag;
};

struct data { uint64_t ino; struct rec *owner; };

static int h_begin(void *ctx, struct mappings_look *l)
{
	struct rec *r = ctx;

	(void)l;
	return r->decline ? -EOPNOTSUPP : 0;
}

static bool h_wants(void *ctx, const struct mappings_look *l, const struct maps_entry *e)
{
	(void)ctx;
	(void)l;
	return e->kind == MAPS_FILE && (e->perms & MAPS_PERM_X);
}

static int h_examine(void *ctx, int fd, const struct maps_entry *e, void **ret)
{
	struct rec *r = ctx;
	struct data *d;
	char buf[4];

	assert_int_equal(pread(fd, buf, 4, 0), 4);
	r->examined[e->inode]++;
	if ((int)e->inode == r->fail_examine_ino)
		return -EIO;
	d = calloc(1, sizeof(*d));
	assert_non_null(d);
	d->ino = e->inode;
	d->owner = r;
	r->live++;
	*ret = d;
	return 0;
}

static int h_attach(void *ctx, struct mappings_look *l, const struct maps_entry *e, void *data, int open_err)
{
	struct rec *r = ctx;
	struct data *d = data;

	if (open_err) {
		r->open_errs++;
		l->again = true;
		return 0;
	}
	if (d) {
		assert_ptr_equal(d->owner, r);
		assert_int_equal(d->ino, e->inode);
	}
	if ((int)e->inode == r->stale_once_ino) {
		r->stale_once_ino = 0;
		return -ESTALE;
	}
	r->attached[l->pid - 100]++;
	r->attached_null += !d;
	return 0;
}

static int h_end(void *ctx, struct mappings_look *l)
{
	struct rec *r = ctx;

	r->ends++;
	r->last_err = l->err;
	r->last_changed = l->changed;
	r->last_tag = l->tag;
	return l->err;
}

static void h_detach(void *ctx, uint32_t pid, uint64_t tag)
{
	struct rec *r = ctx;

	(void)tag;
	r->detached[pid - 100]++;
}

static void h_release(void *ctx, void *data)
{
	struct rec *r = ctx;

	r->released++;
	r->live--;
	free(data);
}

static struct mappings *new_manager(uint32_t max_files, struct rec *a, struct rec *b)
{
	struct mappings_opts o = { .open_maps = open_maps, .open_file = open_file, .max_files = max_files,
				   .period_ms = 1000 };
	struct mappings_handler h = { .begin = h_begin, .wants = h_wants, .examine = h_examine, .attach = h_attach,
				      .end = h_end, .detach = h_detach, .release = h_release };
	struct mappings *m = mappings__new(&o);

	assert_non_null(m);
	memset(a, 0, sizeof(*a));
	memset(b, 0, sizeof(*b));
	h.name = "a";
	h.ctx = a;
	a->id = mappings__add_handler(m, &h);
	h.name = "b";
	h.ctx = b;
	b->id = mappings__add_handler(m, &h);
	assert_int_equal(a->id, 0);
	assert_int_equal(b->id, 1);
	maps_reads = file_opens = 0;
	fail_open_start = 0;
	return m;
}

/* Three processes map libc: each handler examines it once and attaches it in each. */
static void test_shared_file(void **state)
{
	struct rec a, b;
	struct mappings *m = new_manager(0, &a, &b);
	struct mappings_stats st;

	(void)state;
	text[0] = APP LIBC LIBC_RO HEAP;
	text[1] = APP LIBC HEAP;
	text[2] = APP2 LIBC;
	for (uint32_t pid = 100; pid < 103; pid++)
		assert_int_equal(mappings__follow(m, a.id, pid, 1, MAPPINGS_F_TIMER), 0);
	assert_int_equal(mappings__follow(m, b.id, 100, 7, 0), 0);
	assert_int_equal(mappings__follow(m, b.id, 101, 7, 0), 0);
	for (uint32_t pid = 100; pid < 103; pid++)
		assert_int_equal(mappings__look(m, pid), 0);
	assert_int_equal(mappings__look(m, 103), -ENOENT);
	/* One read per look, however many handlers follow the process. */
	assert_int_equal(maps_reads, 3);
	assert_int_equal(a.examined[42], 1);
	assert_int_equal(a.examined[7], 1);
	assert_int_equal(a.examined[8], 1);
	assert_int_equal(b.examined[42], 1);
	assert_int_equal(b.examined[8], 0);   /* b does not follow the process that maps it */
	assert_int_equal(a.attached[0], 2);
	assert_int_equal(a.attached[1], 2);
	assert_int_equal(a.attached[2], 2);
	assert_int_equal(b.attached[0], 2);
	assert_int_equal(b.attached[2], 0);
	assert_int_equal(b.last_tag, 7);
	assert_true(a.last_changed);
	/* One open per file and handler. */
	assert_int_equal(file_opens, 3 + 2);

	/* Nothing changed: read, but nothing attached. */
	assert_int_equal(mappings__look(m, 100), 0);
	assert_int_equal(a.attached[0], 2);
	assert_false(a.last_changed);
	assert_int_equal(a.ends, 4);

	/* A dlopen in 101: attached there again, the new file examined. */
	text[1] = APP LIBC DLOPEN HEAP;
	assert_int_equal(mappings__look(m, 101), 0);
	assert_int_equal(a.attached[1], 5);
	assert_int_equal(a.examined[99], 1);
	assert_int_equal(a.examined[42], 1);

	/* Unfollowed: detached; the process is forgotten with its last subscription. */
	mappings__unfollow(m, a.id, 100, 1);
	assert_int_equal(a.detached[0], 1);
	mappings__stats(m, &st);
	assert_int_equal(st.procs, 3);
	mappings__unfollow(m, b.id, 100, 7);
	mappings__stats(m, &st);
	assert_int_equal(st.procs, 2);
	assert_int_equal(b.detached[0], 1);
	mappings__unfollow_tag(m, a.id, 1);
	assert_int_equal(a.detached[1], 1);
	assert_int_equal(a.detached[2], 1);
	assert_int_equal(b.detached[1], 0);
	mappings__stats(m, &st);
	assert_int_equal(st.procs, 1);
	assert_int_equal(st.files, 4);
	assert_int_equal(st.h[0].examined, 4);
	assert_int_equal(st.h[0].failures, 0);

	/* The files' data outlive the processes; released with the manager. */
	assert_int_equal(a.live, 4);
	mappings__free(m);
	assert_int_equal(a.live, 0);
	assert_int_equal(b.live, 0);
}

/* A handler failing (examine, a file that cannot be opened) is counted; the rest goes on. */
static void test_failures(void **state)
{
	struct rec a, b;
	struct mappings *m = new_manager(0, &a, &b);
	struct mappings_stats st;
	uint64_t v[MAPC_MAX];

	(void)state;
	text[0] = APP LIBC;
	text[1] = APP LIBC;
	b.fail_examine_ino = 42;
	assert_int_equal(mappings__follow(m, a.id, 100, 0, 0), 0);
	assert_int_equal(mappings__follow(m, b.id, 100, 0, 0), 0);
	assert_int_equal(mappings__follow(m, b.id, 101, 0, 0), 0);
	assert_int_equal(mappings__look(m, 100), 0);
	assert_int_equal(mappings__look(m, 101), 0);
	/* b's failure is remembered (not examined again) and attached without data. */
	assert_int_equal(b.examined[42], 1);
	assert_int_equal(b.attached[0], 2);
	assert_int_equal(b.attached[1], 2);
	assert_int_equal(b.attached_null, 2);
	assert_int_equal(a.attached[0], 2);
	assert_int_equal(a.attached_null, 0);
	mappings__stats(m, &st);
	assert_int_equal(st.h[1].failures, 1);
	assert_int_equal(st.h[0].failures, 0);

	/* A file that cannot be opened: not examined, tried again at the next look. */
	text[2] = APP2 DLOPEN;
	fail_open_start = 0x7f0000100000;
	assert_int_equal(mappings__follow(m, a.id, 102, 0, 0), 0);
	assert_int_equal(mappings__look(m, 102), 0);
	assert_int_equal(a.open_errs, 1);
	assert_int_equal(a.examined[99], 0);
	fail_open_start = 0;
	assert_int_equal(mappings__look(m, 102), 0);   /* unchanged, but the handler asked again */
	assert_int_equal(a.examined[99], 1);
	assert_true(a.last_changed);

	/* -ESTALE: examined again, attached again. */
	text[0] = APP LIBC DLOPEN;
	a.stale_once_ino = 42;
	assert_int_equal(mappings__look(m, 100), 0);
	assert_int_equal(a.examined[42], 2);
	assert_int_equal(a.attached[0], 5);

	/* A process gone: end hears it, nothing attached. */
	text[1] = NULL;
	assert_int_equal(mappings__look(m, 101), 0);
	assert_int_equal(b.last_err, -ESRCH);
	mappings__stats(m, &st);
	assert_int_equal(st.maps_errors, 1);

	/* Published (common/counters.h): the manager's counters, the handlers' summed. */
	mappings__counters(m, v);
	assert_int_equal(v[MAPC_LOOKS], st.looks);
	assert_int_equal(v[MAPC_READ_ERRORS], 1);
	assert_int_equal(v[MAPC_OPEN_ERRORS], 1);
	assert_int_equal(v[MAPC_PROCESSES], 3);
	assert_int_equal(v[MAPC_FILES], st.files);
	assert_int_equal(v[MAPC_HANDLER_FAILURES], 1);   /* b's, handler 1 */
	assert_int_equal(v[MAPC_EXAMINED], st.h[0].examined + st.h[1].examined);
	assert_int_equal(v[MAPC_ATTACHED], st.h[0].attached + st.h[1].attached);
	for (unsigned i = 0; i < MAPC_MAX; i++) {
		assert_non_null(mappings_counters[i].name);
		assert_int_equal(strncmp(mappings_counters[i].name, "mappings_", 9), 0);
		assert_int_equal(mappings_counters[i].level, i == MAPC_PROCESSES || i == MAPC_FILES);
		for (unsigned j = 0; j < i; j++)
			assert_string_not_equal(mappings_counters[i].name, mappings_counters[j].name);
	}
	mappings__free(m);
	assert_int_equal(a.live, 0);
	assert_int_equal(b.live, 0);
}

/* The slow timer looks at its subscriptions only, every period; a declining handler costs no read. */
/*
 * Mapping events in a burst (a loader mapping its libraries): one look
 * MAPPINGS_SETTLE_MS after the first, another after an event that came just
 * before a look (its library's code may not have been mapped yet), and a
 * process mapping all the time is read once per MAPPINGS_LOOK_GAP_MS after
 * MAPPINGS_QUICK_LOOKS quick looks.
 */
static void test_look_soon(void **state)
{
	struct rec a, b;
	struct mappings *m = new_manager(0, &a, &b);
	uint64_t t = 5000;

	(void)state;
	text[0] = APP;
	assert_int_equal(mappings__follow(m, b.id, 100, 5, 0), 0);   /* events only: the timer does nothing */
	assert_int_equal(mappings__look_soon(m, 101, t), -ENOENT);
	assert_int_equal(mappings__next_due(m), UINT64_MAX);
	/* a burst within the settling time: one look at its first event + MAPPINGS_SETTLE_MS */
	assert_int_equal(mappings__look_soon(m, 100, t), 0);
	assert_int_equal(mappings__look_soon(m, 100, t + 1), 0);
	assert_int_equal(mappings__next_due(m), t + MAPPINGS_SETTLE_MS);
	mappings__tick(m, t + MAPPINGS_SETTLE_MS - 1);
	assert_int_equal(maps_reads, 0);
	text[0] = APP LIBC;
	mappings__tick(m, t + MAPPINGS_SETTLE_MS);
	assert_int_equal(maps_reads, 1);
	assert_int_equal(b.examined[42], 1);
	/* the event at t + 1 came less than MAPPINGS_SETTLE_MS before that look: once more */
	assert_int_equal(mappings__next_due(m), t + 2 * MAPPINGS_SETTLE_MS);
	mappings__tick(m, t + 2 * MAPPINGS_SETTLE_MS);
	assert_int_equal(maps_reads, 2);
	assert_int_equal(mappings__next_due(m), UINT64_MAX);
	mappings__tick(m, t + 1000);
	assert_int_equal(maps_reads, 2);            /* nothing due, no timer subscription */
	/* a process mapping all the time: MAPPINGS_QUICK_LOOKS quick looks, then one per gap */
	t = 10000;
	for (uint64_t now = t; now < t + 1000; now++) {
		assert_int_equal(mappings__look_soon(m, 100, now), 0);
		mappings__tick(m, now);
	}
	assert_true(maps_reads - 2 >= 1000 / MAPPINGS_LOOK_GAP_MS);
	assert_true(maps_reads - 2 <= MAPPINGS_QUICK_LOOKS + 1000 / MAPPINGS_LOOK_GAP_MS + 1);
	mappings__free(m);
}

static void test_timer(void **state)
{
	struct rec a, b;
	struct mappings *m = new_manager(0, &a, &b);

	(void)state;
	text[0] = APP;
	text[1] = APP LIBC;
	assert_int_equal(mappings__follow(m, a.id, 100, 0, MAPPINGS_F_TIMER), 0);
	assert_int_equal(mappings__follow(m, b.id, 101, 5, 0), 0);   /* events only */
	mappings__tick(m, 10000);
	assert_int_equal(maps_reads, 1);
	assert_int_equal(a.ends, 1);
	assert_int_equal(b.ends, 0);
	mappings__tick(m, 10500);   /* within the period */
	assert_int_equal(maps_reads, 1);
	mappings__tick(m, 11000);
	assert_int_equal(maps_reads, 2);
	/* Following again adds the timer. */
	assert_int_equal(mappings__follow(m, b.id, 101, 5, MAPPINGS_F_TIMER), 0);
	mappings__tick(m, 12000);
	assert_int_equal(maps_reads, 4);
	assert_int_equal(b.ends, 1);
	/* Every handler declines: the maps are not read. */
	a.decline = 1;
	b.decline = 1;
	mappings__tick(m, 13000);
	assert_int_equal(maps_reads, 4);
	mappings__free(m);
}

/* Beyond max_files the cache is emptied (data released) and files examined again. */
static void test_cache_full(void **state)
{
	struct rec a, b;
	struct mappings *m = new_manager(2, &a, &b);
	struct mappings_stats st;

	(void)state;
	text[0] = APP LIBC;
	text[1] = APP2;
	assert_int_equal(mappings__follow(m, a.id, 100, 0, 0), 0);
	assert_int_equal(mappings__follow(m, a.id, 101, 0, 0), 0);
	assert_int_equal(mappings__look(m, 100), 0);
	assert_int_equal(mappings__look(m, 101), 0);
	mappings__stats(m, &st);
	assert_int_equal(st.files_cleared, 1);
	assert_int_equal(st.files, 1);
	assert_int_equal(a.released, 2);
	assert_int_equal(a.live, 1);
	mappings__free(m);
	assert_int_equal(a.live, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shared_file),
		cmocka_unit_test(test_failures),
		cmocka_unit_test(test_timer),
		cmocka_unit_test(test_look_soon),
		cmocka_unit_test(test_cache_full),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
