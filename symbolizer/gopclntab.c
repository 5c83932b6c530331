#include "symbolizer/gopclntab.h"

#include <errno.h>
#include <string.h>

#define MAGIC_118 0xfffffff0u
#define MAGIC_120 0xfffffff1u
#define MAGIC_116 0xfffffffau
#define MAGIC_12 0xfffffffbu

struct rd {
	const uint8_t *b;
	size_t len;
	bool be;
};

static uint32_t u32(const struct rd *r, size_t off)
{
	const uint8_t *p = r->b + off;

	if (r->be)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static uint64_t word(const struct rd *r, size_t off, unsigned ptrsize)
{
	uint64_t v = 0;

	if (ptrsize == 4)
		return u32(r, off);
	for (unsigned i = 0; i < 8; i++)
		v |= (uint64_t)r->b[off + (r->be ? 7 - i : i)] << (8 * i);
	return v;
}

int gopclntab__parse(const uint8_t *buf, size_t len, uint64_t text_fallback, bool big_endian,
		     size_t max_funcs, gopclntab_fn fn, void *ctx, struct gopclntab_stats *ret_stats)
{
	struct gopclntab_stats st = { 0 };
	struct rd r = { .b = buf, .len = len, .be = big_endian };
	uint64_t nfunc, text, nameoff_base, pcln, ftab_bytes;
	unsigned ptrsize;
	uint32_t magic;
	int ret = 0;

	if (ret_stats)
		*ret_stats = st;
	if (!buf || len < 8 || !fn)
		return -ENOEXEC;
	magic = u32(&r, 0);
	if (buf[4] || buf[5] || (buf[6] != 1 && buf[6] != 2 && buf[6] != 4) || (buf[7] != 4 && buf[7] != 8))
		return -ENOEXEC;
	if (magic == MAGIC_116 || magic == MAGIC_12)
		return -EPROTONOSUPPORT;
	if (magic != MAGIC_118 && magic != MAGIC_120)
		return -ENOEXEC;
	ptrsize = buf[7];
	if (len < 8 + 8 * (size_t)ptrsize)
		return -EBADMSG;
	nfunc = word(&r, 8, ptrsize);
	text = word(&r, 8 + 2 * ptrsize, ptrsize);
	nameoff_base = word(&r, 8 + 3 * ptrsize, ptrsize);
	pcln = word(&r, 8 + 7 * ptrsize, ptrsize);
	if (!text)
		text = text_fallback;
	/* functab: nfunc pairs plus the end entry, 4-byte fields. */
	if (nameoff_base >= len || pcln >= len || nfunc > (len - pcln) / 8)
		return -EBADMSG;
	ftab_bytes = nfunc * 8 + 4;
	if (ftab_bytes > len - pcln)
		return -EBADMSG;

	for (uint64_t i = 0; i < nfunc; i++) {
		uint64_t entry_off = u32(&r, pcln + i * 8), func_off = u32(&r, pcln + i * 8 + 4);
		uint64_t end_off = u32(&r, pcln + (i + 1) * 8), fpos, npos;
		int32_t nameoff;
		const char *name;
		size_t nlen;

		if (end_off <= entry_off || text + end_off < text) {
			st.bad_funcs++;
			continue;
		}
		fpos = pcln + func_off;
		if (func_off > len - pcln || len - fpos < 8) {
			st.bad_funcs++;
			continue;
		}
		nameoff = (int32_t)u32(&r, fpos + 4);
		if (nameoff < 0 || (uint64_t)nameoff >= len - nameoff_base) {
			st.bad_funcs++;
			continue;
		}
		npos = nameoff_base + (uint64_t)nameoff;
		name = (const char *)buf + npos;
		nlen = strnlen(name, len - npos);
		if (nlen == len - npos || nlen == 0) {
			st.bad_funcs++;
			continue;
		}
		if (max_funcs && st.funcs >= max_funcs) {
			st.dropped++;
			continue;
		}
		ret = fn(ctx, text + entry_off, text + end_off, name, nlen);
		if (ret)
			break;
		st.funcs++;
	}
	if (ret_stats)
		*ret_stats = st;
	if (ret)
		return ret;
	return st.funcs > INT32_MAX ? INT32_MAX : (int)st.funcs;
}
