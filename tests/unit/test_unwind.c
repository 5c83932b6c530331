/*
 * Unwind tables: analyzer/unwind/eh_frame on hand-written CFI (each rule the BPF
 * unwinder applies, and the ones it cannot) and on the system's own files;
 * collector/unwind_store's checks of what an analyzer sends (order, types,
 * ownership, overlaps, room, eviction).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector/unwind_store.h"
#include "analyzer/unwind/eh_frame.h"

/* ---- hand-written .eh_frame --------------------------------------------- */

struct buf { uint8_t b[512]; size_t n; };
static void put(struct buf *b, const void *p, size_t n) { if (n) memcpy(b->b + b->n, p, n); b->n += n; }
static void u8(struct buf *b, uint8_t v) { put(b, &v, 1); }
static void u32(struct buf *b, uint32_t v) { put(b, &v, 4); }

#define SEC_VADDR 0x10000u
#define FN 0x2000u

/* CIE "zR" (or aug), code 1, data -8, ra 16, pcrel|sdata4, initial: def_cfa rsp+8; ra at cfa-8. Returns its offset. */
static size_t cie(struct buf *b, const char *aug)
{
	size_t at = b->n, len_at;
	uint8_t init[] = { 0x0c, 7, 8, 0x90, 1 };

	len_at = b->n;
	u32(b, 0);
	u32(b, 0); /* CIE id */
	u8(b, 1);
	put(b, aug, strlen(aug) + 1);
	u8(b, 1);       /* code align */
	u8(b, 0x78);    /* data align -8 */
	u8(b, 16);      /* ra */
	u8(b, 1);       /* augmentation length */
	u8(b, 0x1b);    /* pcrel | sdata4 */
	put(b, init, sizeof(init));
	while ((b->n - len_at - 4) % 8)
		u8(b, 0);
	uint32_t len = (uint32_t)(b->n - len_at - 4);
	memcpy(b->b + len_at, &len, 4);
	return at;
}

static void fde(struct buf *b, size_t cie_at, uint32_t begin, uint32_t range, const uint8_t *ins, size_t n)
{
	size_t len_at = b->n;

	u32(b, 0);
	u32(b, (uint32_t)(b->n - cie_at));         /* CIE pointer: back from this field */
	u32(b, begin - (SEC_VADDR + (uint32_t)b->n)); /* pc-relative */
	u32(b, range);
	u8(b, 0);                                    /* augmentation length */
	put(b, ins, n);
	while ((b->n - len_at - 4) % 8)
		u8(b, 0);
	uint32_t len = (uint32_t)(b->n - len_at - 4);
	memcpy(b->b + len_at, &len, 4);
}

static void rows_of(struct buf *b, struct unwind_row **rows, size_t *n)
{
	u32(b, 0); /* terminator */
	assert_int_equal(eh_frame__rows_section(b->b, b->n, SEC_VADDR, 0, 0, rows, n, NULL), 0);
}

static void row_is(const struct unwind_row *r, uint32_t pc, int type, int cfa_off, int fp_off)
{
	assert_int_equal(r->pc, pc);
	assert_int_equal(r->type, type);
	assert_int_equal(r->cfa_off, cfa_off);
	assert_int_equal(r->fp_off8 * 8, fp_off);
}

static void test_prologue_epilogue(void **state)
{
	/* push rbp; mov rsp,rbp; ... ; remember; leave-like def_cfa rsp+8; ret; restore */
	uint8_t ins[] = {
		0x41, 0x0e, 16, 0x86, 2,       /* +1: cfa rsp+16; rbp at cfa-16 */
		0x43, 0x0d, 6,                 /* +3: cfa = rbp (+16) */
		0x60, 0x0a, 0x0c, 7, 8,        /* +0x20: remember; cfa rsp+8 */
		0x41, 0x0b,                    /* +1: restore (rbp+16 again) */
	};
	struct buf b = { .n = 0 };
	struct unwind_row *r;
	size_t n;

	(void)state;
	fde(&b, cie(&b, "zR"), FN, 0x40, ins, sizeof(ins));
	rows_of(&b, &r, &n);
	assert_int_equal(n, 6);
	row_is(&r[0], FN, UNW_CFA_RSP, 8, 0);
	row_is(&r[1], FN + 1, UNW_CFA_RSP, 16, -16);
	row_is(&r[2], FN + 4, UNW_CFA_RBP, 16, -16);
	row_is(&r[3], FN + 0x24, UNW_CFA_RSP, 8, -16);
	row_is(&r[4], FN + 0x25, UNW_CFA_RBP, 16, -16);
	row_is(&r[5], FN + 0x40, UNW_NONE, 0, 0);
	assert_int_equal(eh_frame__find(r, n, FN + 0x10), 2);
	assert_int_equal(eh_frame__find(r, n, FN - 1), -1);
	free(r);
}

static void test_special_rules(void **state)
{
	uint8_t plt[] = { 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22 };
	uint8_t undef_ra[] = { 0x07, 16 };
	uint8_t cfa_r10[] = { 0x42, 0x0c, 10, 0 };   /* +2: cfa = r10: not expressible */
	uint8_t big[] = { 0x0e, 0x80, 0x80, 0x08 };  /* cfa rsp+131072: beyond a row's 16 bits */
	struct buf b = { .n = 0 };
	struct unwind_row *r;
	size_t n, c = cie(&b, "zR"), cs = cie(&b, "zRS");

	(void)state;
	fde(&b, c, 0x3000, 0x20, plt, sizeof(plt));
	fde(&b, c, 0x3100, 0x10, undef_ra, sizeof(undef_ra));
	fde(&b, cs, 0x3200, 0x10, NULL, 0);
	fde(&b, c, 0x3300, 0x10, cfa_r10, sizeof(cfa_r10));
	fde(&b, c, 0x3400, 0x10, big, sizeof(big));
	rows_of(&b, &r, &n);
	row_is(&r[eh_frame__find(r, n, 0x3005)], 0x3000, UNW_PLT, 11, 0);
	row_is(&r[eh_frame__find(r, n, 0x3105)], 0x3100, UNW_END, 0, 0);
	row_is(&r[eh_frame__find(r, n, 0x3205)], 0x3200, UNW_SIGNAL, 0, 0);
	row_is(&r[eh_frame__find(r, n, 0x3300)], 0x3300, UNW_CFA_RSP, 8, 0);
	row_is(&r[eh_frame__find(r, n, 0x3305)], 0x3302, UNW_NONE, 0, 0);
	row_is(&r[eh_frame__find(r, n, 0x3405)], 0x3302, UNW_NONE, 0, 0); /* merged with the rows before */
	row_is(&r[eh_frame__find(r, n, 0x3020)], 0x3020, UNW_NONE, 0, 0); /* between functions */
	free(r);
}

static void test_malformed(void **state)
{
	uint8_t bad_op[] = { 0x41, 0x3f };           /* an unknown opcode */
	uint8_t deep[40];
	struct buf b = { .n = 0 };
	struct unwind_row *r;
	struct eh_frame_stats st;
	size_t n, c = cie(&b, "zR");

	(void)state;
	memset(deep, 0x0a, sizeof(deep));            /* remember_state beyond any sane depth */
	fde(&b, c, 0x4000, 0x10, bad_op, sizeof(bad_op));
	fde(&b, c, 0x4100, 0x10, deep, sizeof(deep));
	u32(&b, 0xffff);                             /* a length past the section */
	assert_int_equal(eh_frame__rows_section(b.b, b.n, SEC_VADDR, 0, 0, &r, &n, &st), 0);
	assert_int_equal(st.bad_entries, 3);
	/* What was parsed before the bad opcode stands, then the function ends. */
	row_is(&r[eh_frame__find(r, n, 0x4000)], 0x4000, UNW_CFA_RSP, 8, 0);
	free(r);
	/* A cap on rows is an error, never a silent cut. */
	b.n = 0;
	c = cie(&b, "zR");
	for (uint32_t i = 0; i < 20; i++)
		fde(&b, c, 0x5000 + 0x10 * i, 0x8, NULL, 0);
	u32(&b, 0);
	assert_int_equal(eh_frame__rows_section(b.b, b.n, SEC_VADDR, 0, 4, &r, &n, NULL), -E2BIG);
	assert_null(r);
}

/* The system's own files: whole rules where they must be. */
static void test_system_files(void **state)
{
	const char *libc = "/lib/x86_64-linux-gnu/libc.so.6";
	struct unwind_row *r;
	struct eh_frame_stats st;
	size_t n, signal = 0, plt = 0, end = 0;
	int fd = open(libc, O_RDONLY);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(eh_frame__rows_fd(fd, 0, &r, &n, &st), 0);
	close(fd);
	assert_true(n > 10000);
	assert_int_equal(st.bad_entries, 0);
	for (size_t i = 0; i < n; i++) {
		signal += r[i].type == UNW_SIGNAL;
		plt += r[i].type == UNW_PLT;
		end += r[i].type == UNW_END;
		if (i)
			assert_true(r[i].pc > r[i - 1].pc);
	}
	assert_int_equal(signal, 1); /* __restore_rt */
	assert_true(plt >= 1);
	assert_true(end >= 1);       /* clone/thread start: the return address is undefined */
	free(r);
	/* Not an x86-64 ELF file. */
	fd = open("/etc/hostname", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(eh_frame__rows_fd(fd, 0, &r, &n, NULL), -ENOEXEC);
	close(fd);
}

/* ---- the collector's store ----------------------------------------------- */

static struct unwind_row written[256];
static struct unwind_proc last_proc;
static int proc_set, proc_cleared;

static int w_rows(void *ctx, uint32_t first, const struct unwind_row *rows, uint32_t n)
{
	(void)ctx;
	assert_true(first + n <= 256);
	memcpy(written + first, rows, n * sizeof(*rows));
	return 0;
}

static int w_proc(void *ctx, uint32_t tgid, uint32_t slot, const struct unwind_proc *p)
{
	(void)ctx;
	(void)tgid;
	(void)slot;
	if (p) {
		last_proc = *p;
		proc_set++;
	} else {
		proc_cleared++;
	}
	return 0;
}

static struct ctl_unwind_rows *chunk(uint32_t id, uint32_t first, uint32_t n, uint32_t pc0)
{
	struct ctl_unwind_rows *c = calloc(1, sizeof(*c) + n * sizeof(struct unwind_row));

	c->id = id;
	c->first = first;
	c->n = n;
	for (uint32_t i = 0; i < n; i++)
		c->rows[i] = (struct unwind_row){ .pc = pc0 + 16 * i, .type = UNW_CFA_RSP, .cfa_off = 8 };
	return c;
}

static uint32_t table(struct unwind_store *us, uint32_t shard, uint64_t key, uint32_t nrows, int want)
{
	struct ctl_unwind_table t = { .key = key, .nrows = nrows };
	struct ctl_unwind_table_ans a;

	assert_int_equal(unwind_store__table(us, shard, &t, &a), want);
	return a.id;
}

static void test_store(void **state)
{
	struct unwind_store_ops ops = { .write_rows = w_rows, .set_proc = w_proc };
	struct unwind_store *us = unwind_store__new(100, 2, 0, &ops);
	struct ctl_unwind_rows *c;
	struct ctl_unwind_proc p = { .pid = 42, .nmaps = 2 };
	struct unwind_store_stats st;
	uint32_t a, b2;

	(void)state;
	assert_non_null(us);
	table(us, 0, 7, 0, -ENOENT);                  /* look-up of an unknown key */
	a = table(us, 0, 7, 60, 0);
	table(us, 1, 7, 60, -EBUSY);                  /* another shard's table being written */
	c = chunk(a, 0, 30, 0x1000);
	assert_int_equal(unwind_store__rows(us, 1, c), -EINVAL); /* not its owner */
	assert_int_equal(unwind_store__rows(us, 0, c), 0);
	assert_int_equal(unwind_store__rows(us, 0, c), -EINVAL); /* out of order: first must be 30 */
	free(c);
	c = chunk(a, 30, 30, 0x1000);                 /* pcs going back */
	assert_int_equal(unwind_store__rows(us, 0, c), -EINVAL);
	free(c);
	c = chunk(a, 30, 30, 0x2000);
	c->rows[3].type = UNW_TYPE_MAX;
	assert_int_equal(unwind_store__rows(us, 0, c), -EINVAL);
	c->rows[3].type = UNW_END;
	assert_int_equal(unwind_store__rows(us, 0, c), 0);
	assert_int_equal(unwind_store__rows(us, 0, c), -EALREADY);
	free(c);
	assert_int_equal(written[59].pc, 0x2000 + 16 * 29);

	/* Room: 40 rows left; 50 do not fit while table a is in use. */
	p.maps[0] = (struct ctl_unwind_map){ .start = 0x1000, .end = 0x2000, .bias = 0, .table = a };
	p.maps[1] = (struct ctl_unwind_map){ .start = 0x1800, .end = 0x3000, .table = UNWIND_NO_TABLE };
	assert_int_equal(unwind_store__proc(us, &p), -EINVAL);  /* overlapping mappings */
	p.maps[1].start = 0x2000;
	p.maps[1].end = UNWIND_MAX_ADDR + 4096;
	assert_int_equal(unwind_store__proc(us, &p), -EINVAL);  /* beyond what the search compares */
	p.maps[1].end = 0x3000;
	assert_int_equal(unwind_store__proc(us, &p), 0);
	assert_int_equal(last_proc.maps[0].first, 0);
	assert_int_equal(last_proc.maps[0].nrows, 60);
	assert_int_equal(last_proc.maps[1].nrows, 0);
	table(us, 0, 8, 50, -ENOSPC);
	b2 = table(us, 0, 9, 40, 0);
	p.maps[1].table = b2;
	assert_int_equal(unwind_store__proc(us, &p), -EINVAL);  /* an incomplete table */
	/* Two processes fit, a third does not. */
	p.maps[1].table = UNWIND_NO_TABLE;
	p.pid = 43;
	assert_int_equal(unwind_store__proc(us, &p), 0);
	p.pid = 44;
	assert_int_equal(unwind_store__proc(us, &p), -ENOSPC);
	unwind_store__stats(us, &st);
	assert_int_equal(st.procs, 2);
	assert_int_equal(st.tables, 2);
	assert_int_equal(st.rows, 100);
	assert_int_equal(st.refused, 2);
	/* Once no process uses a, its room can go to a new table (a is evicted). */
	unwind_store__forget(us, 42);
	unwind_store__forget(us, 43);
	assert_int_equal(proc_cleared, 2);
	table(us, 0, 8, 50, 0);
	table(us, 0, 7, 0, -ENOENT);
	unwind_store__free(us);
	assert_null(unwind_store__new(0, 1, 0, &ops));
	/* Within the grace period, an unused table is not evicted: the new one is refused. */
	us = unwind_store__new(100, 2, 3600000000000ull, &ops);
	table(us, 0, 1, 60, 0);
	table(us, 0, 2, 50, -ENOSPC);
	unwind_store__free(us);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_prologue_epilogue),
		cmocka_unit_test(test_special_rules),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_system_files),
		cmocka_unit_test(test_store),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
