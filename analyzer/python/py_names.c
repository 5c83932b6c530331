#include "analyzer/python/py_names.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PY_TEXT_LEN 200

struct entry {
	uint64_t addr;
	uint32_t tgid;
	bool used;
	char text[PY_TEXT_LEN];
};

struct py_names {
	struct entry *e;
	uint32_t cap;       /* a power of two, twice max */
	uint32_t n, max;
	uint64_t cleared;
};

struct py_names *py_names__new(uint32_t max)
{
	struct py_names *pn = calloc(1, sizeof(*pn));
	uint32_t cap = 16;

	if (!pn)
		return NULL;
	pn->max = max ? max : 65536;
	while (cap < 2 * pn->max)
		cap *= 2;
	pn->cap = cap;
	pn->e = calloc(cap, sizeof(*pn->e));
	if (!pn->e) {
		free(pn);
		errno = ENOMEM;
		return NULL;
	}
	return pn;
}

static uint32_t slot_of(const struct py_names *pn, uint32_t tgid, uint64_t addr)
{
	uint64_t h = (addr ^ ((uint64_t)tgid << 47)) * 0x9e3779b97f4a7c15ull;

	return (uint32_t)(h >> 32) & (pn->cap - 1);
}

static struct entry *find(const struct py_names *pn, uint32_t tgid, uint64_t addr)
{
	for (uint32_t s = slot_of(pn, tgid, addr), i = 0; i < pn->cap; i++, s = (s + 1) & (pn->cap - 1)) {
		struct entry *e = &pn->e[s];

		if (!e->used || (e->tgid == tgid && e->addr == addr))
			return e;
	}
	return NULL;
}

/* At most len bytes of s up to its NUL, kept printable: the rest becomes '_'. */
static size_t clean(char *dst, size_t room, const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && s[i] && n + 1 < room; i++)
		dst[n++] = (s[i] > 0x20 && s[i] < 0x7f && s[i] != ';') ? s[i] : '_';
	dst[n] = 0;
	return n;
}

int py_names__put(struct py_names *pn, const void *data, uint32_t len)
{
	struct ember_rec_pycode r;
	char file[sizeof(r.filename) + 1], qual[sizeof(r.qualname) + 1];
	const char *base;
	struct entry *e;

	if (len != sizeof(r))
		return -EBADMSG;
	memcpy(&r, data, sizeof(r));
	clean(file, sizeof(file), r.filename, sizeof(r.filename));
	clean(qual, sizeof(qual), r.qualname, sizeof(r.qualname));
	base = strrchr(file, '/');
	base = base && base[1] ? base + 1 : file;
	e = find(pn, r.tgid, r.addr);
	if (e && !e->used && pn->n >= pn->max) {
		memset(pn->e, 0, (size_t)pn->cap * sizeof(*pn->e));
		pn->n = 0;
		pn->cleared++;
		e = find(pn, r.tgid, r.addr);
	}
	if (!e)
		return 0;
	if (!e->used) {
		e->used = true;
		e->tgid = r.tgid;
		e->addr = r.addr;
		pn->n++;
	}
	snprintf(e->text, sizeof(e->text), "%s:%s", base[0] ? base : "?", qual[0] ? qual : "?");
	return 0;
}

int py_names__frame(const struct py_names *pn, uint32_t tgid, uint64_t addr, char *buf, size_t len)
{
	const struct entry *e = find(pn, tgid, addr);

	if (!e || !e->used)
		return -ENOENT;
	snprintf(buf, len, "%s", e->text);
	return 0;
}

void py_names__forget(struct py_names *pn, uint32_t tgid)
{
	bool any = false;

	for (uint32_t i = 0; i < pn->cap; i++)
		if (pn->e[i].used && pn->e[i].tgid == tgid)
			any = true;
	if (!any)
		return;
	/* Rebuilt without tgid's: removing from open addressing in place would break other chains. */
	struct entry *old = pn->e;
	struct entry *neu = calloc(pn->cap, sizeof(*neu));

	if (!neu)
		return;
	pn->e = neu;
	pn->n = 0;
	for (uint32_t i = 0; i < pn->cap; i++) {
		struct entry *e;

		if (!old[i].used || old[i].tgid == tgid)
			continue;
		e = find(pn, old[i].tgid, old[i].addr);
		if (e) {
			*e = old[i];
			pn->n++;
		}
	}
	free(old);
}

uint64_t py_names__cleared(const struct py_names *pn)
{
	return pn->cleared;
}

struct py_names *py_names__free(struct py_names *pn)
{
	if (!pn)
		return NULL;
	free(pn->e);
	free(pn);
	return NULL;
}
