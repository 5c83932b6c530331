#include "symbolizer/kallsyms.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"
#include "symbolizer/lines.h"
#include "symbolizer/tables.h"

#define KALLSYMS_DEFAULT_MAX (4u << 20)
#define KALLSYMS_MAX_MODULES 65535

struct ksym {
	uint64_t addr;
	uint32_t name;   /* arena offset */
	uint32_t order;  /* line order: aliases keep the first listed; indexes the module list while loading */
};

struct kallsyms {
	struct ksym *syms;
	size_t n;
	struct str_arena arena;
	uint32_t *mod_off;    /* arena offsets of module labels */
	uint16_t *sym_mod;    /* per symbol: 0 = core kernel, else index + 1 into mod_off */
	size_t nmod, mod_cap;
	struct kallsyms_stats stats;
};

static int arena_add(struct kallsyms *ks, const char *s, size_t len, uint32_t *ret_off)
{
	size_t off;
	int r = tables__add_string(&ks->arena, s, len, 1 << 16, UINT32_MAX, &off);

	if (!r)
		*ret_off = (uint32_t)off;
	return r;
}

/* Returns 0 for the core kernel, else module index + 1, or -errno. */
static int intern_module(struct kallsyms *ks, const char *s, size_t len, int *last)
{
	uint32_t off;
	int r;

	/* Lines come grouped by module, so the previous label almost always matches. */
	if (*last > 0) {
		const char *m = ks->arena.buf + ks->mod_off[*last - 1];

		if (strlen(m) == len && !memcmp(m, s, len))
			return *last;
	}
	for (size_t i = 0; i < ks->nmod; i++) {
		const char *m = ks->arena.buf + ks->mod_off[i];

		if (strlen(m) == len && !memcmp(m, s, len))
			return *last = (int)i + 1;
	}
	if (ks->nmod >= KALLSYMS_MAX_MODULES)
		return -E2BIG;
	if (ks->nmod == ks->mod_cap && tables__grow(&ks->mod_off, sizeof(*ks->mod_off), &ks->mod_cap, 64))
		return -ENOMEM;
	r = arena_add(ks, s, len, &off);
	if (r)
		return r;
	ks->mod_off[ks->nmod++] = off;
	return *last = (int)ks->nmod;
}

/* "ffffffff81000000 T name[\t[module]]" */
static int parse_line(const char *line, size_t len, uint64_t *ret_addr, char *ret_type,
		      const char **ret_name, size_t *ret_name_len, const char **ret_mod,
		      size_t *ret_mod_len)
{
	const char *p = line, *end = line + len, *name, *tab;
	uint64_t v = 0;

	if (lines__parse_hex(&p, end, &v) || end - p < 4 || p[0] != ' ' || p[2] != ' ')
		return -EINVAL;
	*ret_type = p[1];
	name = p + 3;
	tab = memchr(name, '\t', (size_t)(end - name));
	*ret_mod = NULL;
	*ret_mod_len = 0;
	if (tab) {
		const char *m = tab + 1;
		size_t ml = (size_t)(end - m);

		if (ml < 3 || m[0] != '[' || m[ml - 1] != ']')
			return -EINVAL;
		*ret_mod = m;
		*ret_mod_len = ml;
		if (memchr(m, '\0', ml) || memchr(m + 1, ']', ml - 2))
			return -EINVAL;
	} else {
		tab = end;
	}
	if (tab == name || memchr(name, '\0', (size_t)(tab - name)))
		return -EINVAL;
	*ret_addr = v;
	*ret_name = name;
	*ret_name_len = (size_t)(tab - name);
	return 0;
}

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return tables__cmp_u64(x->addr, y->addr) ?: tables__cmp_u64(x->order, y->order);
}

struct kallsyms *kallsyms__free(struct kallsyms *ks)
{
	if (!ks)
		return NULL;
	free(ks->syms);
	free(ks->arena.buf);
	free(ks->mod_off);
	free(ks->sym_mod);
	free(ks);
	return NULL;
}

static void kallsyms_freep(struct kallsyms **ks)
{
	kallsyms__free(*ks);
}

struct kallsyms *kallsyms__read(int fd, size_t max_symbols)
{
	_cleanup_(kallsyms_freep) struct kallsyms *ks = NULL;
	_cleanup_free_ struct line_reader *lr = NULL;
	_cleanup_free_ uint16_t *mods = NULL;
	size_t cap = 0, zero_addr = 0;
	int last_mod = 0, r;
	const char *line;
	size_t len;

	lr = line_reader__new(fd);
	if (!lr)
		return NULL;
	if (!max_symbols)
		max_symbols = KALLSYMS_DEFAULT_MAX;
	if (max_symbols > UINT32_MAX)
		max_symbols = UINT32_MAX;
	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return NULL;
	while ((r = line_reader__next(lr, &line, &len)) > 0) {
		const char *name, *mod;
		size_t name_len, mod_len;
		uint64_t addr;
		uint32_t off;
		char type;
		int mi = 0;

		ks->stats.lines++;
		if (parse_line(line, len, &addr, &type, &name, &name_len, &mod, &mod_len)) {
			ks->stats.bad_lines++;
			continue;
		}
		if (type != 't' && type != 'T' && type != 'w' && type != 'W') {
			ks->stats.skipped++;
			continue;
		}
		if (!addr) {
			zero_addr++;
			ks->stats.skipped++;
			continue;
		}
		if (ks->n >= max_symbols) {
			ks->stats.dropped++;
			continue;
		}
		if (mod) {
			mi = intern_module(ks, mod, mod_len, &last_mod);
			if (mi == -E2BIG) {
				ks->stats.dropped++;
				continue;
			}
			if (mi < 0) {
				errno = -mi;
				return NULL;
			}
		}
		if (ks->n == cap) {
			size_t scap = cap;

			/* syms and mods grow in step: one capacity for both. */
			if (tables__grow(&ks->syms, sizeof(*ks->syms), &scap, 4096) ||
			    tables__grow(&mods, sizeof(*mods), &cap, 4096)) {
				errno = ENOMEM;
				return NULL;
			}
		}
		r = arena_add(ks, name, name_len, &off);
		if (r == -E2BIG) {
			ks->stats.dropped++;
			continue;
		}
		if (r) {
			errno = -r;
			return NULL;
		}
		mods[ks->n] = (uint16_t)mi;
		ks->syms[ks->n] = (struct ksym){ .addr = addr, .name = off, .order = (uint32_t)ks->n };
		ks->n++;
	}
	if (r < 0) {
		errno = -r;
		return NULL;
	}
	if (ks->n == 0) {
		errno = zero_addr ? EPERM : ENOENT;
		return NULL;
	}
	qsort(ks->syms, ks->n, sizeof(*ks->syms), cmp_ksym);

	/* Keep one symbol per address (the first listed); store its module beside it. */
	ks->sym_mod = malloc(ks->n * sizeof(*ks->sym_mod));
	if (!ks->sym_mod) {
		errno = ENOMEM;
		return NULL;
	}
	{
		size_t w = 0;

		for (size_t i = 0; i < ks->n; i++) {
			if (w && ks->syms[w - 1].addr == ks->syms[i].addr)
				continue;
			ks->sym_mod[w] = mods[ks->syms[i].order];
			ks->syms[w++] = ks->syms[i];
		}
		ks->n = w;
	}
	{
		struct ksym *t = realloc(ks->syms, ks->n * sizeof(*t));

		if (t)
			ks->syms = t;
	}
	ks->stats.symbols = ks->n;
	ks->stats.modules = ks->nmod;
	return TAKE_PTR(ks);
}

int kallsyms__lookup(const struct kallsyms *ks, uint64_t addr, const char **ret_name,
		     uint64_t *ret_offset, const char **ret_module)
{
	size_t lo, i;
	uint64_t span;

	if (!ks || !ks->n)
		return -ENOENT;
	lo = TABLES_UPPER_BOUND(ks->syms, ks->n, addr, addr);
	if (lo == 0)
		return -ENOENT;
	i = lo - 1;
	if (i + 1 < ks->n) {
		span = ks->syms[i + 1].addr - ks->syms[i].addr;
		/* A module's last symbol is not bounded by the next module's first. */
		if (ks->sym_mod[i + 1] != ks->sym_mod[i] && span > KALLSYMS_LAST_SPAN)
			span = KALLSYMS_LAST_SPAN;
	} else {
		span = KALLSYMS_LAST_SPAN;
	}
	if (addr - ks->syms[i].addr >= span)
		return -ENOENT;
	*ret_name = ks->arena.buf + ks->syms[i].name;
	*ret_offset = addr - ks->syms[i].addr;
	*ret_module = ks->sym_mod[i] ? ks->arena.buf + ks->mod_off[ks->sym_mod[i] - 1] : NULL;
	return 0;
}

uint64_t kallsyms__find_name(const struct kallsyms *ks, const char *name)
{
	uint64_t found = 0;

	if (!ks || !name)
		return 0;
	for (size_t i = 0; i < ks->n; i++) {
		if (strcmp(ks->arena.buf + ks->syms[i].name, name))
			continue;
		if (!ks->sym_mod[i])
			return ks->syms[i].addr;
		if (!found)
			found = ks->syms[i].addr;
	}
	return found;
}

void kallsyms__stats(const struct kallsyms *ks, struct kallsyms_stats *ret)
{
	if (ks)
		*ret = ks->stats;
	else
		*ret = (struct kallsyms_stats){ 0 };
}

size_t kallsyms__memory(const struct kallsyms *ks)
{
	if (!ks)
		return 0;
	return sizeof(*ks) + ks->n * (sizeof(*ks->syms) + sizeof(*ks->sym_mod)) + ks->arena.cap +
	       ks->mod_cap * sizeof(*ks->mod_off);
}
