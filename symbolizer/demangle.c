#include "symbolizer/demangle.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#define DEFAULT_MAX_BYTES ((size_t)16 << 20)
#define NOT_MANGLED ((char *)1) /* cached negative answer */

struct dm_slot {
	uint64_t idx;   /* symbol index + 1; 0 = empty */
	char *s;        /* malloc'd demangled name, or NOT_MANGLED */
};

struct dm_cache {
	struct dm_slot *t;
	size_t cap, n;      /* open addressing, cap a power of two, n < cap * 3/4 */
	size_t bytes, max_bytes;
};

bool demangle__looks_mangled(const char *name)
{
	if (!name || name[0] != '_')
		return false;
	if (name[1] == 'Z' || name[1] == 'R')
		return true;
	return name[1] == '_' && name[2] == 'Z';
}

char *demangle__dup(const char *name)
{
	if (!demangle__looks_mangled(name) || strnlen(name, DEMANGLE_MAX_INPUT + 1) > DEMANGLE_MAX_INPUT)
		return NULL;
	return cplus_demangle(name[1] == '_' ? name + 1 : name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}

void dm_scratch__clear(struct dm_scratch *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	s->n = 0;
}

struct dm_cache *dm_cache__new(size_t max_bytes)
{
	struct dm_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max_bytes = max_bytes ? max_bytes : DEFAULT_MAX_BYTES;
	c->bytes = sizeof(*c);
	return c;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static struct dm_slot *slot_find(const struct dm_cache *c, uint64_t key)
{
	size_t i;

	if (!c->cap)
		return NULL;
	for (i = mix(key) & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
		if (c->t[i].idx == key || !c->t[i].idx)
			return &c->t[i];
	}
}

static int grow(struct dm_cache *c)
{
	size_t ncap = c->cap ? c->cap * 2 : 256;
	struct dm_slot *old = c->t;
	size_t ocap = c->cap;

	if (c->bytes + ncap * sizeof(*old) > c->max_bytes)
		return -ENOSPC;
	c->t = calloc(ncap, sizeof(*c->t));
	if (!c->t) {
		c->t = old;
		return -ENOMEM;
	}
	c->cap = ncap;
	for (size_t i = 0; i < ocap; i++) {
		if (old[i].idx)
			*slot_find(c, old[i].idx) = old[i];
	}
	free(old);
	c->bytes += (ncap - ocap) * sizeof(*old);
	return 0;
}

static const char *to_scratch(char *d, const char *name, struct dm_scratch *scratch, struct dm_stats *st)
{
	if (scratch->n == scratch->cap) {
		size_t ncap = scratch->cap ? scratch->cap * 2 : 64;
		char **v = reallocarray(scratch->v, ncap, sizeof(*v));

		if (!v) {
			free(d);
			return name;
		}
		scratch->v = v;
		scratch->cap = ncap;
	}
	scratch->v[scratch->n++] = d;
	st->scratch++;
	return d;
}

const char *dm_cache__get(struct dm_cache *c, size_t idx, const char *name, struct dm_scratch *scratch,
			  struct dm_stats *st)
{
	uint64_t key = (uint64_t)idx + 1;
	struct dm_slot *sl;
	char *d;
	size_t len;

	if (!c || !demangle__looks_mangled(name))
		return name;
	sl = slot_find(c, key);
	if (sl && sl->idx)
		return sl->s == NOT_MANGLED ? name : sl->s;
	d = demangle__dup(name);
	if (!d)
		st->not_mangled++;
	else
		st->demangled++;
	len = d ? strlen(d) + 1 : 0;
	if ((c->n + 1 > c->cap / 4 * 3 && grow(c)) || c->bytes + len > c->max_bytes) {
		/* Full: this call's frames still get the name, from the caller's scratch list. */
		if (!d)
			return name;
		return scratch ? to_scratch(d, name, scratch, st) : (free(d), name);
	}
	sl = slot_find(c, key);
	sl->idx = key;
	sl->s = d ? d : NOT_MANGLED;
	c->n++;
	c->bytes += len;
	return d ? d : name;
}

size_t dm_cache__memory(const struct dm_cache *c)
{
	return c ? c->bytes : 0;
}

struct dm_cache *dm_cache__free(struct dm_cache *c)
{
	if (!c)
		return NULL;
	for (size_t i = 0; i < c->cap; i++) {
		if (c->t[i].idx && c->t[i].s != NOT_MANGLED)
			free(c->t[i].s);
	}
	free(c->t);
	free(c);
	return NULL;
}
