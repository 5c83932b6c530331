#include "l7/hpack.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- Huffman ------------------------------------------------------------
 * RFC 7541 Appendix B is a canonical Huffman code (codes of one length are
 * consecutive and ordered by symbol), so the code lengths alone define it:
 * below is that data, one length per symbol 0..256 (256 = EOS).  The decoder
 * tables are derived from it once.
 */
static const uint8_t huff_len[257] = {
	13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28,
	28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28,
	6, 10, 10, 12, 13, 6, 8, 11, 10, 10, 8, 11, 8, 6, 6, 6,
	5, 5, 5, 6, 6, 6, 6, 6, 6, 6, 7, 8, 15, 6, 12, 10,
	13, 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
	7, 7, 7, 7, 7, 7, 7, 7, 8, 7, 8, 13, 19, 13, 14, 6,
	15, 5, 6, 5, 6, 5, 6, 6, 6, 5, 7, 7, 6, 6, 6, 5,
	6, 7, 6, 5, 5, 6, 7, 7, 7, 7, 7, 15, 11, 14, 13, 28,
	20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23,
	24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24,
	22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23,
	21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23,
	26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25,
	19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27,
	20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23,
	26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26,
	30,
};

#define HUFF_MAXLEN 30
#define HUFF_FAST   8   /* bits resolved by one table lookup */

static struct {
	uint16_t sorted[257];             /* symbols ordered by (length, symbol) */
	uint32_t first[HUFF_MAXLEN + 2];  /* first code of each length */
	uint16_t count[HUFF_MAXLEN + 2];
	uint16_t offset[HUFF_MAXLEN + 2]; /* index in sorted[] of that first code */
	/* fast[v]: symbol and length of the code (<= 8 bits) prefixing byte v, len 0 = longer */
	uint16_t fast_sym[1 << HUFF_FAST];
	uint8_t fast_len[1 << HUFF_FAST];
} huff;

static pthread_once_t huff_once = PTHREAD_ONCE_INIT;

static void huff_build(void)
{
	unsigned n = 0;
	uint32_t code = 0;

	for (unsigned l = 1; l <= HUFF_MAXLEN; l++) {
		huff.offset[l] = (uint16_t)n;
		for (unsigned s = 0; s < 257; s++)
			if (huff_len[s] == l)
				huff.sorted[n++] = (uint16_t)s;
		huff.count[l] = (uint16_t)(n - huff.offset[l]);
	}
	for (unsigned l = 1; l <= HUFF_MAXLEN; l++) {
		huff.first[l] = code;
		code = (code + huff.count[l]) << 1;
	}
	for (unsigned l = 1; l <= HUFF_FAST; l++) {
		for (unsigned i = 0; i < huff.count[l]; i++) {
			uint32_t c = huff.first[l] + i;
			unsigned shift = HUFF_FAST - l;

			for (uint32_t v = c << shift; v < ((c + 1) << shift); v++) {
				huff.fast_sym[v] = huff.sorted[huff.offset[l] + i];
				huff.fast_len[v] = (uint8_t)l;
			}
		}
	}
}

long hpack__huffman_decode(const uint8_t *in, size_t n, char *out, size_t cap)
{
	uint64_t bits = 0;  /* left-aligned at bit 63 */
	unsigned nbits = 0;
	size_t i = 0, o = 0;

	pthread_once(&huff_once, huff_build);
	for (;;) {
		unsigned len, sym;

		while (nbits <= 56 && i < n) {
			bits |= (uint64_t)in[i++] << (56 - nbits);
			nbits += 8;
		}
		if (!nbits)
			break;
		/* Past the end the padding is ones, so look at the bits padded with ones. */
		uint64_t v = bits | (nbits < 64 ? (~0ULL >> nbits) : 0);
		unsigned top = (unsigned)(v >> (64 - HUFF_FAST));

		len = huff.fast_len[top];
		sym = huff.fast_sym[top];
		if (!len) {
			uint32_t code = 0;

			for (len = HUFF_FAST + 1; len <= HUFF_MAXLEN; len++) {
				code = (uint32_t)(v >> (64 - len));
				if (huff.count[len] && code - huff.first[len] < huff.count[len] &&
				    code >= huff.first[len])
					break;
			}
			if (len > HUFF_MAXLEN)
				return -EPROTO;
			sym = huff.sorted[huff.offset[len] + (code - huff.first[len])];
		}
		if (len > nbits) {
			/* Only padding left: fewer than 8 bits, all ones (an EOS prefix). */
			if (nbits >= 8 || (bits >> (64 - nbits)) != (1ULL << nbits) - 1)
				return -EPROTO;
			break;
		}
		if (sym == 256)
			return -EPROTO; /* EOS inside a string */
		if (o + 1 < cap)
			out[o] = (char)sym;
		o++;
		bits <<= len;
		nbits -= len;
	}
	if (cap)
		out[o < cap ? o : cap - 1] = 0;
	return (long)o;
}

/* ---- tables ---------------------------------------------------------------- */

static const struct { const char *name, *value; } static_table[61] = {
	{ ":authority", "" }, { ":method", "GET" }, { ":method", "POST" }, { ":path", "/" },
	{ ":path", "/index.html" }, { ":scheme", "http" }, { ":scheme", "https" },
	{ ":status", "200" }, { ":status", "204" }, { ":status", "206" }, { ":status", "304" },
	{ ":status", "400" }, { ":status", "404" }, { ":status", "500" }, { "accept-charset", "" },
	{ "accept-encoding", "gzip, deflate" }, { "accept-language", "" }, { "accept-ranges", "" },
	{ "accept", "" }, { "access-control-allow-origin", "" }, { "age", "" }, { "allow", "" },
	{ "authorization", "" }, { "cache-control", "" }, { "content-disposition", "" },
	{ "content-encoding", "" }, { "content-language", "" }, { "content-length", "" },
	{ "content-location", "" }, { "content-range", "" }, { "content-type", "" },
	{ "cookie", "" }, { "date", "" }, { "etag", "" }, { "expect", "" }, { "expires", "" },
	{ "from", "" }, { "host", "" }, { "if-match", "" }, { "if-modified-since", "" },
	{ "if-none-match", "" }, { "if-range", "" }, { "if-unmodified-since", "" },
	{ "last-modified", "" }, { "link", "" }, { "location", "" }, { "max-forwards", "" },
	{ "proxy-authenticate", "" }, { "proxy-authorization", "" }, { "range", "" },
	{ "referer", "" }, { "refresh", "" }, { "retry-after", "" }, { "server", "" },
	{ "set-cookie", "" }, { "strict-transport-security", "" }, { "transfer-encoding", "" },
	{ "user-agent", "" }, { "vary", "" }, { "via", "" }, { "www-authenticate", "" },
};

struct hp_entry {
	char *name, *value;   /* one allocation; value follows name */
	uint32_t nlen, vlen;  /* stored (possibly truncated) lengths */
	size_t size;          /* RFC size: full name + value lengths + 32 */
	bool unknown;
};

struct hpack {
	struct hp_entry *ring;  /* newest at (head + len - 1) % cap */
	size_t cap, head, len;
	size_t size, max_size, limit;
	bool partial;
	struct hpack_stats st;
	char name[HPACK_STR_MAX + 1], value[HPACK_STR_MAX + 1];
};

struct hpack *hpack__new(size_t max_table)
{
	struct hpack *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	h->limit = max_table ? max_table : 4096;
	h->max_size = h->limit < 4096 ? h->limit : 4096;
	h->cap = h->limit / 32 + 1;
	h->ring = calloc(h->cap, sizeof(*h->ring));
	if (!h->ring) {
		free(h);
		return NULL;
	}
	pthread_once(&huff_once, huff_build);
	return h;
}

static void evict_one(struct hpack *h)
{
	struct hp_entry *e = &h->ring[h->head];

	h->size -= e->size;
	free(e->name);
	e->name = NULL;
	h->head = (h->head + 1) % h->cap;
	h->len--;
	h->st.evictions++;
}

struct hpack *hpack__free(struct hpack *h)
{
	if (!h)
		return NULL;
	while (h->len)
		evict_one(h);
	free(h->ring);
	free(h);
	return NULL;
}

void hpack__set_partial(struct hpack *h, bool partial) { h->partial = partial; }

void hpack__forget(struct hpack *h)
{
	while (h->len)
		evict_one(h);
	h->partial = true;
}
const struct hpack_stats *hpack__stats(const struct hpack *h) { return &h->st; }
size_t hpack__table_len(const struct hpack *h) { return h->len; }
size_t hpack__table_size(const struct hpack *h) { return h->size; }

static void evict_to(struct hpack *h, size_t max)
{
	while (h->len && h->size > max)
		evict_one(h);
}

static int insert(struct hpack *h, const char *name, size_t nlen, size_t nfull,
		  const char *value, size_t vlen, size_t vfull, bool unknown)
{
	size_t size = nfull + vfull + 32;
	struct hp_entry *e;
	char *mem;

	if (size > h->max_size) {
		/* RFC 7541 4.4: an entry larger than the table empties it. */
		evict_to(h, 0);
		return 0;
	}
	evict_to(h, h->max_size - size);
	if (h->len == h->cap)
		evict_one(h);
	mem = malloc(nlen + vlen + 2);
	if (!mem)
		return -ENOMEM;
	memcpy(mem, name, nlen);
	mem[nlen] = 0;
	memcpy(mem + nlen + 1, value, vlen);
	mem[nlen + 1 + vlen] = 0;
	e = &h->ring[(h->head + h->len) % h->cap];
	*e = (struct hp_entry){ .name = mem, .value = mem + nlen + 1, .nlen = (uint32_t)nlen,
				.vlen = (uint32_t)vlen, .size = size, .unknown = unknown };
	h->len++;
	h->size += size;
	return 0;
}

/* idx >= 1.  Returns 0 with name/value set, 1 when unknown, -EPROTO. */
static int lookup(struct hpack *h, uint64_t idx, const char **name, size_t *nlen,
		  const char **value, size_t *vlen)
{
	const struct hp_entry *e;

	if (idx == 0)
		return -EPROTO;
	if (idx <= 61) {
		*name = static_table[idx - 1].name;
		*nlen = strlen(*name);
		*value = static_table[idx - 1].value;
		*vlen = strlen(*value);
		return 0;
	}
	idx -= 62;
	if (idx >= h->len) {
		/*
		 * Mid-connection this is an entry from before the capture; with the
		 * whole history it is an encoder bug, reported the same way rather
		 * than failing the rest of the block.
		 */
		h->st.unknown_refs++;
		return 1;
	}
	e = &h->ring[(h->head + h->len - 1 - idx) % h->cap];
	if (e->unknown)
		return 1;
	*name = e->name;
	*nlen = e->nlen;
	*value = e->value;
	*vlen = e->vlen;
	return 0;
}

static int read_int(const uint8_t **p, const uint8_t *end, unsigned prefix, uint64_t *ret)
{
	uint64_t max = (1u << prefix) - 1, v;
	unsigned shift = 0;

	if (*p >= end)
		return -EPROTO;
	v = **p & max;
	(*p)++;
	if (v < max) {
		*ret = v;
		return 0;
	}
	for (;;) {
		uint8_t b;

		if (*p >= end || shift > 28)
			return -EPROTO;
		b = *(*p)++;
		v += (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	*ret = v;
	return 0;
}

/* Reads a string literal into buf (HPACK_STR_MAX + 1).  ret_full = real length. */
static int read_str(struct hpack *h, const uint8_t **p, const uint8_t *end, char *buf,
		    size_t *ret_len, size_t *ret_full)
{
	bool huffman;
	uint64_t n;
	size_t keep;

	if (*p >= end)
		return -EPROTO;
	huffman = **p & 0x80;
	if (read_int(p, end, 7, &n) < 0 || n > (uint64_t)(end - *p))
		return -EPROTO;
	if (huffman) {
		long r = hpack__huffman_decode(*p, (size_t)n, buf, HPACK_STR_MAX + 1);

		if (r < 0)
			return -EPROTO;
		*ret_full = (size_t)r;
		keep = (size_t)r > HPACK_STR_MAX ? HPACK_STR_MAX : (size_t)r;
	} else {
		*ret_full = (size_t)n;
		keep = n > HPACK_STR_MAX ? HPACK_STR_MAX : (size_t)n;
		memcpy(buf, *p, keep);
		buf[keep] = 0;
	}
	if (keep < *ret_full)
		h->st.truncated++;
	*p += n;
	*ret_len = keep;
	return 0;
}

int hpack__decode(struct hpack *h, const uint8_t *block, size_t len, hpack_header_fn cb, void *ctx)
{
	const uint8_t *p = block, *end;
	int err = -EPROTO;

	h->st.blocks++;
	if (!len)
		return 0;
	end = block + len;
	while (p < end) {
		uint8_t b = *p;
		const char *name = NULL, *value = NULL;
		size_t nlen = 0, vlen = 0, nfull, vfull;
		unsigned flags = 0;
		uint64_t idx;
		bool add;
		int r;

		if (b & 0x80) { /* indexed field */
			if (read_int(&p, end, 7, &idx) < 0)
				goto fail;
			r = lookup(h, idx, &name, &nlen, &value, &vlen);
			if (r < 0)
				goto fail;
			h->st.headers++;
			if (r)
				cb(ctx, "", 0, "", 0, HPACK_UNKNOWN);
			else
				cb(ctx, name, nlen, value, vlen, 0);
			continue;
		}
		if ((b & 0xe0) == 0x20) { /* dynamic table size update */
			if (read_int(&p, end, 5, &idx) < 0)
				goto fail;
			h->max_size = idx < h->limit ? (size_t)idx : h->limit;
			evict_to(h, h->max_size);
			continue;
		}
		/* literal: with incremental indexing (01), without (0000), never (0001) */
		add = (b & 0xc0) == 0x40;
		if (read_int(&p, end, add ? 6 : 4, &idx) < 0)
			goto fail;
		if (idx) {
			const char *iv;
			size_t ivl;

			r = lookup(h, idx, &name, &nlen, &iv, &ivl);
			if (r < 0)
				goto fail;
			if (r) {
				flags |= HPACK_UNKNOWN;
				name = "";
				nlen = 0;
			}
			/* Copy: the entry may be evicted by the insertion below. */
			memcpy(h->name, name, nlen);
			h->name[nlen] = 0;
			nfull = nlen;
		} else {
			if (read_str(h, &p, end, h->name, &nlen, &nfull) < 0)
				goto fail;
		}
		if (read_str(h, &p, end, h->value, &vlen, &vfull) < 0)
			goto fail;
		if (vlen < vfull)
			flags |= HPACK_TRUNCATED;
		if (add) {
			err = insert(h, h->name, nlen, nfull, h->value, vlen, vfull, flags & HPACK_UNKNOWN);
			if (err < 0)
				goto fail;
			err = -EPROTO;
		}
		h->st.headers++;
		cb(ctx, h->name, nlen, h->value, vlen, flags);
	}
	return 0;
fail:
	h->st.malformed++;
	return err;
}
