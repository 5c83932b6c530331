/*
 * Flame graph trie, folded reader/writer and SVG renderer.
 *
 * Nodes live in one array (index 0 is the root) and point to their parent
 * only; a child is found through one open-addressing table keyed by
 * (parent, name id), and names are interned once in an arena.  That keeps a
 * node at 24 bytes plus ~8 bytes of table, and the hot path (add) at two
 * hash probes per frame.  Children are sorted only when writing.
 *
 * One file of ~1700 lines on purpose: the SVG renderer (the last 45%)
 * walks the trie's node array and name arena directly, and splitting it off
 * would mean exporting that layout to a second file that depends on it in
 * every detail.
 */
#include "exporter/flamegraph.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/cleanup.h"

#define ROOT		0u
#define NONE		UINT32_MAX
#define NAME_TRUNC	0u	/* name id of "[truncated]", interned at creation */
/* Name arena bytes allowed per node of max_nodes (bounds memory). */
#define NAME_BYTES_PER_NODE 128u

struct fg_node {
	uint32_t name;
	uint32_t parent;
	uint64_t self;
	uint64_t total;
};

struct fg_name {
	uint32_t off;
	uint32_t len;
	uint32_t hash;
};

struct flamegraph {
	size_t max_nodes;	/* frame nodes, root excluded */
	size_t regular_limit;	/* frame nodes creatable for real frames */

	struct fg_node *nodes;	/* nodes[0] = root */
	uint32_t nnodes;	/* root included */
	uint32_t nodes_cap;
	uint32_t *node_ht;	/* node index per slot, 0 = empty (root is nobody's child) */
	uint32_t node_ht_mask;

	char *arena;
	size_t arena_len, arena_cap, arena_limit;
	struct fg_name *names;
	uint32_t nnames, names_cap;
	uint32_t *name_ht;	/* name id + 1 per slot, 0 = empty */
	uint32_t name_ht_mask;

	char scratch[FLAMEGRAPH_MAX_FRAME_LEN];
	struct flamegraph_stats st;
};

/* ---- small helpers --------------------------------------------------------- */

static inline uint64_t sat_add(uint64_t a, uint64_t b, bool *sat)
{
	uint64_t r;

	if (__builtin_add_overflow(a, b, &r)) {
		*sat = true;
		return UINT64_MAX;
	}
	return r;
}

#define ONES	0x0101010101010101ull
#define HIGHS	0x8080808080808080ull

/* High bit set in each byte of v that frame names may not hold as is:
 * < 0x20, 0x7f, ';' and any byte >= 0x80 (UTF-8 to validate). */
static inline uint64_t special_bytes(uint64_t v)
{
	uint64_t lt20 = (v - ONES * 0x20) & ~v;
	uint64_t del = v ^ (ONES * 0x7f), semi = v ^ (ONES * ';');

	del = (del - ONES) & ~del;
	semi = (semi - ONES) & ~semi;
	return (lt20 | del | semi | v) & HIGHS;
}

/*
 * Hash for table lookups only (not stable across byte orders; colours use
 * fnv1a below), fused with the check whether the bytes need normalising:
 * the hot path reads each name once, eight bytes at a time.
 */
static bool scan_hash(const char *p, size_t n, uint32_t *ret_hash)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ (n * 0x100000001b3ull), v, bad = 0;
	const char *end = p + n;
	size_t left = n;

	while (left > 8) {
		memcpy(&v, p, 8);
		bad |= special_bytes(v);
		h = (h ^ v) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
		p += 8;
		left -= 8;
	}
	/*
	 * The last 1..8 bytes as one word from whole loads (assembling it byte
	 * by byte in memory stalls store forwarding).  Overlap with bytes seen
	 * already is harmless; padding is 'A', never "special".
	 */
	if (n >= 8) {
		memcpy(&v, end - 8, 8);
	} else if (n >= 4) {
		uint32_t a, b;

		memcpy(&a, p, 4);
		memcpy(&b, end - 4, 4);
		v = a | (uint64_t)b << 32;
	} else if (n) {
		v = (uint64_t)(unsigned char)p[0] | (uint64_t)(unsigned char)p[n / 2] << 8 |
		    (uint64_t)(unsigned char)p[n - 1] << 16 | 0x4141414141ull << 24;
	} else {
		v = ONES * 'A';
	}
	bad |= special_bytes(v);
	h = (h ^ v) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 32;
	*ret_hash = (uint32_t)h;
	return !bad;
}

static uint32_t hash_bytes(const char *p, size_t n)
{
	uint32_t h;

	(void)scan_hash(p, n, &h);
	return h;
}

static inline uint32_t hash_pair(uint32_t parent, uint32_t name)
{
	uint64_t h = ((uint64_t)parent << 32 | name) * 0x9e3779b97f4a7c15ull;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (uint32_t)h;
}

/*
 * Length of the valid UTF-8 sequence at p (RFC 3629: shortest form, no
 * surrogates, <= U+10FFFF), or 0 when the bytes there are not one.
 */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned char c = p[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (p[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (n < 3 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80)
			return 0;
		if (c == 0xe0 && p[1] < 0xa0)	/* overlong */
			return 0;
		if (c == 0xed && p[1] >= 0xa0)	/* surrogate */
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (n < 4 || (p[1] & 0xc0) != 0x80 || (p[2] & 0xc0) != 0x80 ||
		    (p[3] & 0xc0) != 0x80)
			return 0;
		if (c == 0xf0 && p[1] < 0x90)	/* overlong */
			return 0;
		if (c == 0xf4 && p[1] >= 0x90)	/* > U+10FFFF */
			return 0;
		return 4;
	}
	return 0;
}

/* ---- names ----------------------------------------------------------------- */

static inline const char *name_ptr(const struct flamegraph *fg, uint32_t id)
{
	return fg->arena + fg->names[id].off;
}

static uint32_t name_find(const struct flamegraph *fg, const char *p, size_t len, uint32_t h)
{
	uint32_t i = h & fg->name_ht_mask;

	for (;;) {
		uint32_t slot = fg->name_ht[i];
		const struct fg_name *nm;

		if (!slot)
			return NONE;
		nm = &fg->names[slot - 1];
		if (nm->hash == h && nm->len == len && !memcmp(fg->arena + nm->off, p, len))
			return slot - 1;
		i = (i + 1) & fg->name_ht_mask;
	}
}

static int grow_table(uint32_t **tab, uint32_t *mask, uint32_t count)
{
	size_t cap = (size_t)*mask + 1;
	uint32_t *nt;

	/* Load factor stays <= 1/2 so probes stay short. */
	if ((size_t)count * 2 < cap)
		return 0;
	nt = calloc(cap * 2, sizeof(*nt));
	if (!nt)
		return -ENOMEM;
	free(*tab);
	*tab = nt;
	*mask = (uint32_t)(cap * 2 - 1);
	return 1;	/* caller rehashes */
}

static int name_add(struct flamegraph *fg, const char *p, size_t len, uint32_t h, uint32_t *ret)
{
	uint32_t i;
	int err;

	if (fg->nnames == fg->names_cap) {
		uint32_t ncap = fg->names_cap * 2;
		struct fg_name *nn = realloc(fg->names, (size_t)ncap * sizeof(*nn));

		if (!nn)
			return -ENOMEM;
		fg->names = nn;
		fg->names_cap = ncap;
	}
	if (fg->arena_len + len > fg->arena_cap) {
		size_t ncap = fg->arena_cap;
		char *na;

		while (ncap < fg->arena_len + len)
			ncap *= 2;
		if (ncap > fg->arena_limit)
			ncap = fg->arena_limit;
		na = realloc(fg->arena, ncap);
		if (!na)
			return -ENOMEM;
		fg->arena = na;
		fg->arena_cap = ncap;
	}
	err = grow_table(&fg->name_ht, &fg->name_ht_mask, fg->nnames + 1);
	if (err < 0)
		return err;
	if (err > 0) {
		for (uint32_t id = 0; id < fg->nnames; id++) {
			i = fg->names[id].hash & fg->name_ht_mask;
			while (fg->name_ht[i])
				i = (i + 1) & fg->name_ht_mask;
			fg->name_ht[i] = id + 1;
		}
	}
	memcpy(fg->arena + fg->arena_len, p, len);
	fg->names[fg->nnames] = (struct fg_name){
		.off = (uint32_t)fg->arena_len, .len = (uint32_t)len, .hash = h,
	};
	fg->arena_len += len;
	i = h & fg->name_ht_mask;
	while (fg->name_ht[i])
		i = (i + 1) & fg->name_ht_mask;
	fg->name_ht[i] = fg->nnames + 1;
	*ret = fg->nnames++;
	fg->st.name_bytes = fg->arena_len;
	return 0;
}

/*
 * Normalises one frame name (rules in the header) and hashes the result.
 * Returns the bytes to use: p itself when nothing changes (the common case),
 * else fg->scratch or a constant.
 */
static const char *normalise(struct flamegraph *fg, const char *p, size_t len, size_t *ret_len,
			     uint32_t *ret_hash)
{
	const unsigned char *u = (const unsigned char *)p;
	size_t i, o = 0;
	bool cut = false;

	if (len == 0) {
		fg->st.sanitized_frames++;
		*ret_len = sizeof(FLAMEGRAPH_UNKNOWN_FRAME) - 1;
		*ret_hash = hash_bytes(FLAMEGRAPH_UNKNOWN_FRAME, *ret_len);
		return FLAMEGRAPH_UNKNOWN_FRAME;
	}
	if (len <= FLAMEGRAPH_MAX_FRAME_LEN && scan_hash(p, len, ret_hash)) {
		*ret_len = len;
		return p;
	}
	for (i = 0; i < len;) {
		unsigned char c = u[i];
		size_t n = 1;
		const char *src;
		char one;

		if (c < 0x80) {
			one = (c < 0x20 || c == 0x7f) ? '?' : c == ';' ? ':' : (char)c;
			src = &one;
		} else {
			n = utf8_seq(u + i, len - i);
			src = p + i;
			if (!n) {
				src = "\xef\xbf\xbd";
				n = 3;
			}
		}
		if (o + n > FLAMEGRAPH_MAX_FRAME_LEN) {
			cut = true;
			break;
		}
		memcpy(fg->scratch + o, src, n);
		o += n;
		/* An invalid byte consumes 1 input byte but writes 3. */
		i += (src == p + i) ? n : 1;
	}
	if (o != len || memcmp(fg->scratch, p, len)) {
		fg->st.sanitized_frames++;
		if (cut)
			fg->st.long_frames++;
	}
	*ret_len = o;
	*ret_hash = hash_bytes(fg->scratch, o);
	return fg->scratch;
}

/* ---- nodes ----------------------------------------------------------------- */

static uint32_t child_find(const struct flamegraph *fg, uint32_t parent, uint32_t name)
{
	uint32_t i = hash_pair(parent, name) & fg->node_ht_mask;

	for (;;) {
		uint32_t n = fg->node_ht[i];

		if (!n)
			return NONE;
		if (fg->nodes[n].parent == parent && fg->nodes[n].name == name)
			return n;
		i = (i + 1) & fg->node_ht_mask;
	}
}

static int node_new(struct flamegraph *fg, uint32_t parent, uint32_t name, uint32_t *ret)
{
	uint32_t i, n;
	int err;

	if (fg->nnodes == fg->nodes_cap) {
		size_t ncap = (size_t)fg->nodes_cap * 2;
		struct fg_node *nn;

		if (ncap > fg->max_nodes + 1)
			ncap = fg->max_nodes + 1;
		if (ncap <= fg->nodes_cap)
			return -EOVERFLOW;	/* callers keep nnodes <= max_nodes */
		nn = realloc(fg->nodes, ncap * sizeof(*nn));
		if (!nn)
			return -ENOMEM;
		fg->nodes = nn;
		fg->nodes_cap = (uint32_t)ncap;
	}
	err = grow_table(&fg->node_ht, &fg->node_ht_mask, fg->nnodes);
	if (err < 0)
		return err;
	if (err > 0) {
		for (n = 1; n < fg->nnodes; n++) {
			i = hash_pair(fg->nodes[n].parent, fg->nodes[n].name) & fg->node_ht_mask;
			while (fg->node_ht[i])
				i = (i + 1) & fg->node_ht_mask;
			fg->node_ht[i] = n;
		}
	}
	n = fg->nnodes++;
	fg->nodes[n] = (struct fg_node){ .name = name, .parent = parent };
	i = hash_pair(parent, name) & fg->node_ht_mask;
	while (fg->node_ht[i])
		i = (i + 1) & fg->node_ht_mask;
	fg->node_ht[i] = n;
	fg->st.nodes = fg->nnodes - 1;
	*ret = n;
	return 0;
}

/*
 * The "[truncated]" child that takes a stack's remaining frames.  Ordinary
 * frames stop at regular_limit, truncation children of inner nodes may use
 * the slack up to max_nodes - 1, and the very last slot is kept for the
 * root's one, so a home for the weight always exists.
 */
static int trunc_child(struct flamegraph *fg, uint32_t parent, uint32_t *ret)
{
	uint32_t c = child_find(fg, parent, NAME_TRUNC);
	size_t used = fg->nnodes - 1;

	if (c != NONE) {
		*ret = c;
		return 0;
	}
	if (used + 1 < fg->max_nodes || (parent == ROOT && used < fg->max_nodes))
		return node_new(fg, parent, NAME_TRUNC, ret);
	if (parent != ROOT)
		return trunc_child(fg, ROOT, ret);
	return -EOVERFLOW;	/* unreachable: see the slot reservation above */
}

struct walk {
	uint32_t cur;
	uint32_t depth;
	bool cut;	/* remaining frames go nowhere: cur is a "[truncated]" node */
	bool capped;	/* ... because of the node/name bound */
	bool deep;	/* ... because of FLAMEGRAPH_MAX_DEPTH */
};

static int walk_step(struct flamegraph *fg, struct walk *w, const char *p, size_t len)
{
	const char *q;
	size_t qlen;
	uint32_t h, nid, c;
	int err;

	if (w->cut)
		return 0;
	if (w->depth >= FLAMEGRAPH_MAX_DEPTH) {
		w->cut = w->deep = true;
		return trunc_child(fg, w->cur, &w->cur);
	}
	q = normalise(fg, p, len, &qlen, &h);
	nid = name_find(fg, q, qlen, h);
	if (nid != NONE) {
		c = child_find(fg, w->cur, nid);
		if (c != NONE) {
			w->cur = c;
			w->depth++;
			return 0;
		}
	}
	if (fg->nnodes - 1 < fg->regular_limit &&
	    (nid != NONE || fg->arena_len + qlen <= fg->arena_limit)) {
		if (nid == NONE) {
			err = name_add(fg, q, qlen, h, &nid);
			if (err < 0)
				return err;
		}
		err = node_new(fg, w->cur, nid, &w->cur);
		if (err < 0)
			return err;
		w->depth++;
		return 0;
	}
	w->cut = w->capped = true;
	return trunc_child(fg, w->cur, &w->cur);
}

static void walk_weigh(struct flamegraph *fg, const struct walk *w, uint64_t weight)
{
	bool sat = false;
	uint32_t n = w->cur;
	struct fg_node *leaf = &fg->nodes[n];

	if (!leaf->self)
		fg->st.unique_stacks++;
	leaf->self = sat_add(leaf->self, weight, &sat);
	for (;;) {
		fg->nodes[n].total = sat_add(fg->nodes[n].total, weight, &sat);
		if (n == ROOT)
			break;
		n = fg->nodes[n].parent;
	}
	fg->st.stacks++;
	if (w->capped) {
		fg->st.truncated_stacks++;
		fg->st.truncated_weight = sat_add(fg->st.truncated_weight, weight, &sat);
	}
	if (w->deep)
		fg->st.deep_stacks++;
	if (sat)
		fg->st.saturated++;
}

/* ---- lifecycle ------------------------------------------------------------- */

static int reset_tables(struct flamegraph *fg)
{
	uint32_t id;

	fg->nnodes = 1;
	fg->nodes[ROOT] = (struct fg_node){ .name = NONE, .parent = NONE };
	memset(fg->node_ht, 0, ((size_t)fg->node_ht_mask + 1) * sizeof(*fg->node_ht));
	memset(fg->name_ht, 0, ((size_t)fg->name_ht_mask + 1) * sizeof(*fg->name_ht));
	fg->nnames = 0;
	fg->arena_len = 0;
	memset(&fg->st, 0, sizeof(fg->st));
	return name_add(fg, FLAMEGRAPH_TRUNCATED_FRAME, sizeof(FLAMEGRAPH_TRUNCATED_FRAME) - 1,
			hash_bytes(FLAMEGRAPH_TRUNCATED_FRAME,
				   sizeof(FLAMEGRAPH_TRUNCATED_FRAME) - 1), &id);
}

struct flamegraph *flamegraph__new(size_t max_nodes)
{
	struct flamegraph *fg;
	size_t slack;

	if (max_nodes == 0)
		max_nodes = FLAMEGRAPH_DEFAULT_MAX_NODES;
	if (max_nodes > FLAMEGRAPH_MAX_NODES_LIMIT) {
		errno = EINVAL;
		return NULL;
	}
	fg = calloc(1, sizeof(*fg));
	if (!fg)
		goto nomem;
	fg->max_nodes = max_nodes;
	slack = max_nodes / 16;
	fg->regular_limit = max_nodes - 1 - slack;
	fg->arena_limit = max_nodes * NAME_BYTES_PER_NODE;
	if (fg->arena_limit < 64 * 1024)
		fg->arena_limit = 64 * 1024;
	if (fg->arena_limit > UINT32_MAX)
		fg->arena_limit = UINT32_MAX;

	fg->nodes_cap = max_nodes + 1 < 1024 ? (uint32_t)max_nodes + 1 : 1024;
	fg->nodes = malloc(fg->nodes_cap * sizeof(*fg->nodes));
	fg->node_ht_mask = 1024 - 1;
	fg->node_ht = calloc(fg->node_ht_mask + 1, sizeof(*fg->node_ht));
	fg->names_cap = 256;
	fg->names = malloc(fg->names_cap * sizeof(*fg->names));
	fg->name_ht_mask = 512 - 1;
	fg->name_ht = calloc(fg->name_ht_mask + 1, sizeof(*fg->name_ht));
	fg->arena_cap = 4096;
	fg->arena = malloc(fg->arena_cap);
	if (!fg->nodes || !fg->node_ht || !fg->names || !fg->name_ht || !fg->arena)
		goto nomem;
	if (reset_tables(fg) < 0)
		goto nomem;
	return fg;
nomem:
	flamegraph__free(fg);
	errno = ENOMEM;
	return NULL;
}

struct flamegraph *flamegraph__free(struct flamegraph *fg)
{
	if (!fg)
		return NULL;
	free(fg->nodes);
	free(fg->node_ht);
	free(fg->names);
	free(fg->name_ht);
	free(fg->arena);
	free(fg);
	return NULL;
}

void flamegraph__clear(struct flamegraph *fg)
{
	if (!fg)
		return;
	/* Cannot fail: the tables are empty and already hold one name. */
	(void)reset_tables(fg);
}

uint64_t flamegraph__total(const struct flamegraph *fg)
{
	return fg->nodes[ROOT].total;
}

void flamegraph__stats(const struct flamegraph *fg, struct flamegraph_stats *ret)
{
	*ret = fg->st;
}

/* ---- adding ---------------------------------------------------------------- */

int flamegraph__add(struct flamegraph *fg, const char *const *frames, size_t nframes,
		    uint64_t weight)
{
	struct walk w = { .cur = ROOT };
	int err;

	if (!nframes || !frames)
		return -EINVAL;
	for (size_t i = 0; i < nframes; i++)
		if (!frames[i])
			return -EINVAL;
	if (!weight)
		return 0;
	for (size_t i = 0; i < nframes && !w.cut; i++) {
		err = walk_step(fg, &w, frames[i], strlen(frames[i]));
		if (err < 0)
			return err;
	}
	walk_weigh(fg, &w, weight);
	return 0;
}

/* Splits "stack count" and validates both; sets the stack span and count. */
static int parse_line(const char *line, size_t len, size_t *ret_stack_len, uint64_t *ret_count)
{
	size_t sp, i;
	uint64_t v = 0;

	if (len && line[len - 1] == '\n')
		len--;
	if (len && line[len - 1] == '\r')
		len--;
	if (len > FLAMEGRAPH_MAX_LINE)
		return -EINVAL;
	sp = len;
	while (sp > 0 && line[sp - 1] != ' ')
		sp--;
	if (sp == 0)		/* no space at all */
		return -EINVAL;
	if (sp - 1 == 0)	/* empty stack */
		return -EINVAL;
	if (len - sp == 0 || len - sp > 20)
		return -EINVAL;
	for (i = sp; i < len; i++) {
		unsigned d = (unsigned char)line[i] - '0';

		if (d > 9)
			return -EINVAL;
		if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, d, &v))
			return -EINVAL;
	}
	*ret_stack_len = sp - 1;
	*ret_count = v;
	return 0;
}

int flamegraph__add_folded_line(struct flamegraph *fg, const char *line, size_t len)
{
	struct walk w = { .cur = ROOT };
	size_t slen, start = 0;
	uint64_t count;
	int err;

	if (!line && len)
		return -EINVAL;
	err = parse_line(line, len, &slen, &count);
	if (err < 0)
		return err;
	if (!count)
		return 0;
	for (size_t i = 0; i <= slen && !w.cut; i++) {
		if (i < slen && line[i] != ';')
			continue;
		err = walk_step(fg, &w, line + start, i - start);
		if (err < 0)
			return err;
		start = i + 1;
	}
	walk_weigh(fg, &w, count);
	return 0;
}

static bool blank(const char *p, size_t n)
{
	return n == 0 || (n == 1 && p[0] == '\r');
}

/* One line without its '\n'; shared by both loaders. */
static int load_line(struct flamegraph *fg, const char *p, size_t n)
{
	int err;

	if (blank(p, n))
		return 0;
	err = flamegraph__add_folded_line(fg, p, n);
	if (err == -EINVAL) {
		fg->st.bad_lines++;
		return 0;
	}
	if (err < 0)
		return err;
	fg->st.lines++;
	return 0;
}

int flamegraph__load_folded_buf(struct flamegraph *fg, const char *buf, size_t len)
{
	size_t pos = 0;
	int err;

	if (!buf && len)
		return -EINVAL;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - (buf + pos)) : len - pos;

		err = load_line(fg, buf + pos, n);
		if (err < 0)
			return err;
		pos += n + 1;
	}
	return 0;
}

int flamegraph__load_folded(struct flamegraph *fg, FILE *in)
{
	/*
	 * A line may span reads: the buffer holds at most one maximal line plus
	 * one read, and grows to that only when a line needs it.
	 */
	const size_t chunk = 64 * 1024, max_cap = FLAMEGRAPH_MAX_LINE + 2 + chunk;
	size_t cap = 2 * chunk, have = 0;
	_cleanup_free_ char *buf = malloc(cap);
	bool skipping = false;	/* inside a line that was too long */
	int err;

	if (!buf)
		return -ENOMEM;
	for (;;) {
		size_t got, pos = 0;
		bool eof;

		if (cap - have < chunk) {
			size_t ncap = cap * 2 < max_cap ? cap * 2 : max_cap;
			char *nb = realloc(buf, ncap);

			if (!nb)
				return -ENOMEM;
			buf = nb;
			cap = ncap;
		}
		got = fread(buf + have, 1, chunk, in);
		eof = got < chunk;

		if (eof && ferror(in))
			return -EIO;
		have += got;
		for (;;) {
			char *nl = memchr(buf + pos, '\n', have - pos);
			size_t n;

			if (!nl)
				break;
			n = (size_t)(nl - (buf + pos));
			if (skipping)
				skipping = false;
			else if ((err = load_line(fg, buf + pos, n)) < 0)
				return err;
			pos += n + 1;
		}
		memmove(buf, buf + pos, have - pos);
		have -= pos;
		if (have > FLAMEGRAPH_MAX_LINE + 1) {
			/* Too long to be valid: drop it now, and the rest up to '\n'. */
			if (!skipping)
				fg->st.bad_lines++;
			skipping = true;
			have = 0;
		}
		if (eof)
			break;
	}
	if (have && !skipping && (err = load_line(fg, buf, have)) < 0)
		return err;
	return 0;
}

/* ---- traversal for writers ------------------------------------------------- */

/* Children of every node, each run sorted by name: CSR arrays. */
struct order {
	uint32_t *start;	/* nnodes + 1 */
	uint32_t *child;	/* nnodes - 1 */
};

static int cmp_names(const void *a, const void *b, void *ctx)
{
	const struct flamegraph *fg = ctx;
	const struct fg_name *x = &fg->names[fg->nodes[*(const uint32_t *)a].name];
	const struct fg_name *y = &fg->names[fg->nodes[*(const uint32_t *)b].name];
	int r = memcmp(fg->arena + x->off, fg->arena + y->off, x->len < y->len ? x->len : y->len);

	if (r)
		return r;
	return x->len < y->len ? -1 : x->len > y->len;
}

static void order_free(struct order *o)
{
	free(o->start);
	free(o->child);
}

static int order_build(const struct flamegraph *fg, struct order *o)
{
	uint32_t n = fg->nnodes;

	o->start = calloc((size_t)n + 1, sizeof(*o->start));
	o->child = malloc(((size_t)n) * sizeof(*o->child));
	if (!o->start || !o->child) {
		order_free(o);
		return -ENOMEM;
	}
	for (uint32_t i = 1; i < n; i++)
		o->start[fg->nodes[i].parent + 1]++;
	for (uint32_t i = 0; i < n; i++)
		o->start[i + 1] += o->start[i];
	/* Fill using start[] as cursors shifted by one, then it ends up exact. */
	for (uint32_t i = 1; i < n; i++)
		o->child[o->start[fg->nodes[i].parent]++] = i;
	for (uint32_t i = n; i > 0; i--)
		o->start[i] = o->start[i - 1];
	o->start[0] = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t a = o->start[i], b = o->start[i + 1];

		if (b - a > 1)
			qsort_r(o->child + a, b - a, sizeof(*o->child), cmp_names, (void *)fg);
	}
	return 0;
}

/* Depth never exceeds FLAMEGRAPH_MAX_DEPTH frames + "[truncated]" + root. */
#define STACK_MAX (FLAMEGRAPH_MAX_DEPTH + 2)

int flamegraph__write_folded(const struct flamegraph *fg, FILE *out)
{
	struct order o = { 0 };
	struct dfs { uint32_t node, next; } *stk;
	size_t sp = 0;
	int err;

	err = order_build(fg, &o);
	if (err < 0)
		return err;
	stk = malloc(STACK_MAX * sizeof(*stk));
	if (!stk) {
		err = -ENOMEM;
		goto cleanup;
	}
	stk[sp++] = (struct dfs){ ROOT, o.start[ROOT] };
	while (sp) {
		struct dfs *top = &stk[sp - 1];
		uint32_t c;

		if (top->next == o.start[top->node + 1]) {
			sp--;
			continue;
		}
		c = o.child[top->next++];
		if (sp == STACK_MAX) {
			err = -EOVERFLOW;	/* unreachable by construction */
			goto cleanup;
		}
		stk[sp++] = (struct dfs){ c, o.start[c] };
		if (!fg->nodes[c].self)
			continue;
		for (size_t i = 1; i < sp; i++) {
			const struct fg_name *nm = &fg->names[fg->nodes[stk[i].node].name];

			if (i > 1)
				putc_unlocked(';', out);
			fwrite_unlocked(fg->arena + nm->off, 1, nm->len, out);
		}
		fprintf(out, " %" PRIu64 "\n", fg->nodes[c].self);
	}
	err = (fflush(out) || ferror(out)) ? -EIO : 0;
cleanup:
	free(stk);
	order_free(&o);
	return err;
}

/* ---- SVG ------------------------------------------------------------------- */

/* Geometry, shared with the script (which reads FH/XPAD/FONTW from C). */
#define SVG_FRAME_H	16
#define SVG_FONT_PX	12
#define SVG_FONT_W	7.3	/* monospace advance at 12px, slightly generous */
#define SVG_XPAD	10
#define SVG_BOTTOM	34
#define SVG_TITLE_W	10.3	/* monospace advance at 17px */
/* Kept free beside the title for "Reset zoom" and "Reset search" (12 characters). */
#define SVG_BTN_ROOM	(12 * SVG_FONT_W + 12)

struct svg_cfg {
	const char *title, *subtitle, *unit;
	unsigned width;
	double min_width;
	bool count_stacks;
};

#define OPT_HAS(o, f) ((o)->sz >= offsetof(__typeof__(*(o)), f) + sizeof((o)->f))

static int svg_cfg_get(const struct flamegraph_svg_opts *o, struct svg_cfg *c)
{
	*c = (struct svg_cfg){ "Flame Graph", NULL, "samples", 1200, 0.1, false };
	if (!o)
		return 0;
	if (o->sz < sizeof(o->sz))
		return -EINVAL;
	/* A newer caller's extra fields must be zero: we would ignore them. */
	for (size_t i = sizeof(*o); i < o->sz; i++)
		if (((const unsigned char *)o)[i])
			return -EINVAL;
	if (OPT_HAS(o, title) && o->title)
		c->title = o->title;
	if (OPT_HAS(o, subtitle))
		c->subtitle = o->subtitle;
	if (OPT_HAS(o, unit) && o->unit)
		c->unit = o->unit;
	if (OPT_HAS(o, width) && o->width)
		c->width = o->width;
	if (OPT_HAS(o, min_width) && o->min_width != 0)
		c->min_width = o->min_width;
	if (OPT_HAS(o, count_stacks))
		c->count_stacks = o->count_stacks;
	if (c->width < 200 || c->width > 100000 || !(c->min_width >= 0) || c->min_width > 1e6)
		return -EINVAL;
	return 0;
}

/*
 * XML text/attribute escape: markup characters as entities, control
 * characters dropped (XML 1.0 cannot carry them), invalid UTF-8 as U+FFFD.
 */
static void xml_put(FILE *out, const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		unsigned char c = u[i];
		size_t n;

		if (c < 0x80) {
			switch (c) {
			case '<': fputs("&lt;", out); break;
			case '>': fputs("&gt;", out); break;
			case '&': fputs("&amp;", out); break;
			case '"': fputs("&quot;", out); break;
			case '\'': fputs("&apos;", out); break;
			default:
				if (c >= 0x20 && c != 0x7f)
					putc_unlocked(c, out);
			}
			i++;
			continue;
		}
		n = utf8_seq(u + i, len - i);
		/* U+FFFE/U+FFFF are not XML characters either. */
		if (n == 3 && c == 0xef && u[i + 1] == 0xbf && u[i + 2] >= 0xbe)
			n = 0;
		if (n) {
			fwrite_unlocked(s + i, 1, n, out);
			i += n;
		} else {
			fputs("\xef\xbf\xbd", out);
			i++;
		}
	}
}

static void xml_puts(FILE *out, const char *s)
{
	xml_put(out, s, strlen(s));
}

/* Code points in valid UTF-8 (names are normalised, hence valid). */
static size_t utf8_chars(const char *s, size_t len)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

/* Byte length of the first k code points. */
static size_t utf8_prefix(const char *s, size_t len, size_t k)
{
	size_t i = 0;

	while (i < len && k) {
		i++;
		while (i < len && ((unsigned char)s[i] & 0xc0) == 0x80)
			i++;
		k--;
	}
	return i;
}

static void put_grouped(FILE *out, uint64_t v)
{
	char buf[24];
	int n = snprintf(buf, sizeof(buf), "%" PRIu64, v);

	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			putc_unlocked(',', out);
		putc_unlocked(buf[i], out);
	}
}

static uint32_t fnv1a(const char *s, size_t n)
{
	uint32_t h = 2166136261u;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h;
}

static bool ends_with(const char *s, size_t n, const char *suf)
{
	size_t k = strlen(suf);

	return n >= k && !memcmp(s + n - k, suf, k);
}

/* Same name, same colour, in every graph: hash-driven, warm for user code. */
static void frame_colour(const char *s, size_t n, bool root, unsigned rgb[3])
{
	uint32_t h = fnv1a(s, n);
	double a = (h & 0xff) / 255.0, b = ((h >> 8) & 0xff) / 255.0, c = ((h >> 16) & 0xff) / 255.0;

	if (root || ends_with(s, n, FLAMEGRAPH_TRUNCATED_FRAME)) {
		rgb[0] = rgb[1] = rgb[2] = 190 + (unsigned)(20 * a);
	} else if (ends_with(s, n, "_[k]")) {	/* kernel: blue */
		rgb[0] = 70 + (unsigned)(50 * a);
		rgb[1] = 140 + (unsigned)(60 * b);
		rgb[2] = 205 + (unsigned)(50 * c);
	} else if (ends_with(s, n, "_[j]")) {	/* JIT: green */
		rgb[0] = 70 + (unsigned)(60 * a);
		rgb[1] = 185 + (unsigned)(55 * b);
		rgb[2] = 70 + (unsigned)(50 * c);
	} else {				/* red .. yellow */
		rgb[0] = 205 + (unsigned)(50 * a);
		rgb[1] = 50 + (unsigned)(170 * b);
		rgb[2] = 20 + (unsigned)(45 * c);
	}
}

/* ---- the graph as drawn: unresolved frames merged per module ------------- */

#define KSUFFIX		"_[k]"
/* Offsets listed in a merged box's tooltip. */
#define SVG_MAX_OFFSETS	8

/*
 * Whether s is an unresolved frame, "module+0x<1-16 hex digits>" with
 * "_[k]" after it for a kernel one (sym_frame__format's spelling), and the
 * name to draw it under: "[module]", or the module as is when it is in
 * brackets already, then the suffix.  buf has room for n bytes, which is
 * always enough: the drawn name is shorter than the frame.
 */
static bool unresolved_box(const char *s, size_t n, char *buf, size_t *ret_len)
{
	size_t k = ends_with(s, n, KSUFFIX) ? sizeof(KSUFFIX) - 1 : 0, end = n - k, i = end, m;

	while (i > 0 && ((s[i - 1] >= '0' && s[i - 1] <= '9') || (s[i - 1] >= 'a' && s[i - 1] <= 'f')))
		i--;
	if (i == end || end - i > 16 || i < 4 || memcmp(s + i - 3, "+0x", 3))
		return false;
	m = i - 3;
	if (s[0] == '[' && s[m - 1] == ']' && m >= 2) {
		memcpy(buf, s, m);
		*ret_len = m;
	} else {
		buf[0] = '[';
		memcpy(buf + 1, s, m);
		buf[m + 1] = ']';
		*ret_len = m + 2;
	}
	memcpy(buf + *ret_len, s + end, k);
	*ret_len += k;
	return true;
}

/* One offset of a merged box: the frame's name id in the source graph and its weight. */
struct box_off {
	uint32_t box;
	uint32_t name;
	uint64_t w;
};

struct drawn {
	const struct flamegraph *g;	/* what is drawn: the source, or `own` */
	struct flamegraph *own;		/* the merged copy, when any frame merged */
	const struct flamegraph *src;
	struct box_off *offs;		/* by box, heaviest first within one */
	size_t noffs;
	uint64_t stacks;		/* distinct stacks drawn (nodes with self weight) */
};

static int cmp_off_name(const void *a, const void *b)
{
	const struct box_off *x = a, *y = b;

	if (x->box != y->box)
		return x->box < y->box ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static int cmp_off_weight(const void *a, const void *b)
{
	const struct box_off *x = a, *y = b;

	if (x->box != y->box)
		return x->box < y->box ? -1 : 1;
	if (x->w != y->w)
		return x->w > y->w ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static void drawn_free(struct drawn *d)
{
	flamegraph__free(d->own);
	free(d->offs);
}

/*
 * The copy's names for the source's: name_map[id] is the copy's id, and
 * merged[id] says whether it is an unresolved frame drawn as its module.
 */
static int map_names(const struct flamegraph *src, struct flamegraph *dst, uint32_t *name_map,
		     bool *merged, char *buf)
{
	for (uint32_t id = 0; id < src->nnames; id++) {
		const char *p = name_ptr(src, id);
		size_t len = src->names[id].len;
		uint32_t h, nid;
		int err;

		merged[id] = unresolved_box(p, len, buf, &len);
		if (merged[id])
			p = buf;
		h = hash_bytes(p, len);
		nid = name_find(dst, p, len, h);
		if (nid == NONE) {
			/* Never more bytes than the source holds (merged names are shorter). */
			if (dst->arena_len + len > dst->arena_limit)
				return -EOVERFLOW;
			err = name_add(dst, p, len, h, &nid);
			if (err < 0)
				return err;
		}
		name_map[id] = nid;
	}
	return 0;
}

/*
 * The graph to draw.  Without unresolved frames that is fg itself.  Else a
 * copy where each node goes to the copy's node for its parent's and its own
 * drawn name, or -- an unresolved frame under one of the same module -- to
 * its parent's (one box for a run); a node adds its total only where it
 * starts a box, since a parent's total holds its children's.  Nodes come
 * after their parents in the array, so one pass in index order does it.
 */
static int drawn_build(const struct flamegraph *fg, struct drawn *d)
{
	_cleanup_free_ uint32_t *name_map = NULL, *map = NULL;
	_cleanup_free_ bool *merged = NULL;
	_cleanup_free_ uint64_t *own_w = NULL;
	_cleanup_free_ char *buf = NULL;
	struct flamegraph *c;
	bool any = false, sat = false;
	size_t n = 0;
	int err;

	*d = (struct drawn){ .g = fg, .src = fg };
	merged = calloc(fg->nnames, sizeof(*merged));
	buf = malloc(FLAMEGRAPH_MAX_FRAME_LEN);
	if (!merged || !buf)
		return -ENOMEM;
	for (uint32_t id = 0; id < fg->nnames && !any; id++) {
		size_t len;

		any = unresolved_box(name_ptr(fg, id), fg->names[id].len, buf, &len);
	}
	if (!any) {
		for (uint32_t i = 1; i < fg->nnodes; i++)
			d->stacks += fg->nodes[i].self > 0;
		return 0;
	}
	c = d->own = flamegraph__new(fg->max_nodes);
	name_map = malloc(fg->nnames * sizeof(*name_map));
	map = malloc(fg->nnodes * sizeof(*map));
	own_w = malloc(fg->nnodes * sizeof(*own_w));
	if (!c || !name_map || !map || !own_w)
		return -ENOMEM;
	err = map_names(fg, c, name_map, merged, buf);
	if (err < 0)
		return err;
	map[ROOT] = ROOT;
	c->nodes[ROOT].total = fg->nodes[ROOT].total;
	for (uint32_t i = 1; i < fg->nnodes; i++) {
		const struct fg_node *nd = &fg->nodes[i];
		uint32_t p = nd->parent, to;

		own_w[i] = nd->total;
		if (merged[nd->name] && p != ROOT && merged[fg->nodes[p].name] &&
		    name_map[fg->nodes[p].name] == name_map[nd->name]) {
			to = map[p];
			/* The run's deeper frame holds it (a saturated parent may hold less). */
			own_w[p] = own_w[p] > nd->total ? own_w[p] - nd->total : 0;
		} else {
			to = child_find(c, map[p], name_map[nd->name]);
			/* Never more nodes than the source has: the bound holds. */
			if (to == NONE && (err = node_new(c, map[p], name_map[nd->name], &to)) < 0)
				return err;
			c->nodes[to].total = sat_add(c->nodes[to].total, nd->total, &sat);
		}
		c->nodes[to].self = sat_add(c->nodes[to].self, nd->self, &sat);
		map[i] = to;
		n += merged[nd->name];
	}
	for (uint32_t i = 1; i < c->nnodes; i++)
		d->stacks += c->nodes[i].self > 0;
	c->st.unique_stacks = d->stacks;
	d->g = c;

	d->offs = malloc((n ? n : 1) * sizeof(*d->offs));
	if (!d->offs)
		return -ENOMEM;
	for (uint32_t i = 1; i < fg->nnodes; i++)
		if (merged[fg->nodes[i].name] && own_w[i])
			d->offs[d->noffs++] = (struct box_off){ map[i], fg->nodes[i].name, own_w[i] };
	/* One entry per offset and box (recursion can bring one offset twice), then heaviest first. */
	qsort(d->offs, d->noffs, sizeof(*d->offs), cmp_off_name);
	n = 0;
	for (size_t i = 0; i < d->noffs; i++) {
		if (n && d->offs[n - 1].box == d->offs[i].box && d->offs[n - 1].name == d->offs[i].name)
			d->offs[n - 1].w = sat_add(d->offs[n - 1].w, d->offs[i].w, &sat);
		else
			d->offs[n++] = d->offs[i];
	}
	d->noffs = n;
	qsort(d->offs, d->noffs, sizeof(*d->offs), cmp_off_weight);
	return 0;
}

/* The offsets merged into box: a run of d->offs, or none. */
static const struct box_off *drawn_offsets(const struct drawn *d, uint32_t box, size_t *ret_n)
{
	size_t lo = 0, hi = d->noffs, i;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (d->offs[mid].box < box)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = lo; i < d->noffs && d->offs[i].box == box; i++)
		;
	*ret_n = i - lo;
	return d->offs + lo;
}

struct vis {
	uint32_t node;
	uint32_t depth;
	double x, w;
};

/* Our own script; reads geometry from the elements, not from frame names. */
static const char svg_script[] =
"(function () {\n"
"'use strict';\n"
"var C = window.EMBER_FG, EPS = 0.01, HL = 'rgb(230,0,230)';\n"
"var frames = document.getElementById('frames');\n"
"var details = document.getElementById('details');\n"
"var matched = document.getElementById('matched');\n"
"var unzoomBtn = document.getElementById('unzoom');\n"
"var searchBtn = document.getElementById('search');\n"
"var all = [], zoomedTo = null, searching = null;\n"
"var gs = frames.getElementsByTagName('g');\n"
"for (var i = 0; i < gs.length; i++) {\n"
"  var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
"  var tip = g.getElementsByTagName('title')[0].textContent, nl = tip.indexOf('\\n');\n"
"  g.fgIndex = i;\n"
"  all.push({ g: g, r: r, t: g.getElementsByTagName('text')[0],\n"
"    name: nl < 0 ? tip : tip.substring(0, nl), info: tip.split('\\n').slice(0, 2).join(' '),\n"
"    w: +g.getAttribute('data-w'), x: +r.getAttribute('x'), y: +r.getAttribute('y'),\n"
"    wd: +r.getAttribute('width'), fill: r.getAttribute('fill') });\n"
"}\n"
"function fit(e, w) {\n"
"  var n = Math.floor((w - 6) / C.fontw), cs = Array.from(e.name);\n"
"  if (cs.length <= n) return e.name;\n"
"  return n < 3 ? '' : cs.slice(0, n - 2).join('') + '..';\n"
"}\n"
"function place(e, x, w, cls) {\n"
"  e.g.setAttribute('class', cls);\n"
"  if (cls === 'hide') return;\n"
"  e.r.setAttribute('x', x.toFixed(2));\n"
"  e.r.setAttribute('width', w.toFixed(2));\n"
"  e.t.setAttribute('x', (x + 3).toFixed(2));\n"
"  e.t.textContent = fit(e, w);\n"
"}\n"
"/* Root is at the bottom: a larger y is shallower. */\n"
"function zoom(f) {\n"
"  var full = C.width - 2 * C.xpad, s = full / f.wd;\n"
"  all.forEach(function (e) {\n"
"    if (e.y > f.y) {\n"
"      if (e.x <= f.x + EPS && e.x + e.wd >= f.x + f.wd - EPS) place(e, C.xpad, full, 'anc');\n"
"      else place(e, 0, 0, 'hide');\n"
"    } else if (e.y === f.y) {\n"
"      if (e === f) place(e, C.xpad, full, '');\n"
"      else place(e, 0, 0, 'hide');\n"
"    } else if (e.x >= f.x - EPS && e.x + e.wd <= f.x + f.wd + EPS) {\n"
"      place(e, C.xpad + (e.x - f.x) * s, e.wd * s, '');\n"
"    } else place(e, 0, 0, 'hide');\n"
"  });\n"
"  zoomedTo = f;\n"
"  unzoomBtn.setAttribute('class', 'btn');\n"
"}\n"
"function unzoom() {\n"
"  if (!zoomedTo) return;\n"
"  all.forEach(function (e) { place(e, e.x, e.wd, ''); });\n"
"  zoomedTo = null;\n"
"  unzoomBtn.setAttribute('class', 'btn hide');\n"
"}\n"
"function resetSearch() {\n"
"  all.forEach(function (e) { e.r.setAttribute('fill', e.fill); });\n"
"  searching = null;\n"
"  matched.textContent = '';\n"
"  searchBtn.textContent = 'Search';\n"
"}\n"
"function search(term) {\n"
"  if (term === undefined)\n"
"    term = window.prompt('Search frames (regular expression):', searching ? searching.source : '');\n"
"  if (term === null) return;\n"
"  if (term === '') { resetSearch(); return; }\n"
"  var re;\n"
"  try { re = new RegExp(term); } catch (err) { window.alert('Bad regular expression: ' + err.message); return; }\n"
"  var hits = [];\n"
"  all.forEach(function (e) {\n"
"    var m = re.test(e.name);\n"
"    e.r.setAttribute('fill', m ? HL : e.fill);\n"
"    if (m) hits.push(e);\n"
"  });\n"
"  /* Count a match only when no matched ancestor already holds its weight. */\n"
"  hits.sort(function (a, b) { return a.x - b.x || b.y - a.y; });\n"
"  var sum = 0, end = -Infinity;\n"
"  hits.forEach(function (e) {\n"
"    if (e.x >= end - EPS) { sum += e.w; end = e.x + e.wd; }\n"
"  });\n"
"  searching = re;\n"
"  searchBtn.textContent = 'Reset search';\n"
"  matched.textContent = 'Matched: ' + (C.total ? (100 * sum / C.total).toFixed(2) : '0.00') + '%';\n"
"}\n"
"function entryOf(ev) {\n"
"  for (var n = ev.target; n && n !== frames; n = n.parentNode)\n"
"    if (n.fgIndex !== undefined) return all[n.fgIndex];\n"
"  return null;\n"
"}\n"
"frames.addEventListener('mouseover', function (ev) {\n"
"  var e = entryOf(ev);\n"
"  if (e) details.textContent = e.info;\n"
"});\n"
"frames.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
"frames.addEventListener('click', function (ev) {\n"
"  var e = entryOf(ev);\n"
"  if (e) zoom(e);\n"
"});\n"
"unzoomBtn.addEventListener('click', unzoom);\n"
"searchBtn.addEventListener('click', function () { if (searching) resetSearch(); else search(); });\n"
"window.addEventListener('keydown', function (ev) {\n"
"  if (((ev.ctrlKey || ev.metaKey) && (ev.key === 'f' || ev.key === 'F')) || ev.key === 'F3' ||\n"
"      (ev.key === '/' && !ev.ctrlKey)) {\n"
"    ev.preventDefault();\n"
"    search();\n"
"  } else if (ev.key === 'Escape') {\n"
"    unzoom();\n"
"    resetSearch();\n"
"  }\n"
"});\n"
"window.emberFlamegraph = { zoom: function (i) { zoom(all[i]); }, unzoom: unzoom,\n"
"  search: search, resetSearch: resetSearch, frames: all };\n"
"})();\n";

static const char svg_style[] =
"text { font-family: monospace; font-size: 12px; fill: #000; }\n"
"#title { font-size: 17px; text-anchor: middle; }\n"
"#subtitle { text-anchor: middle; fill: #555; }\n"
".btn { cursor: pointer; fill: #225; text-decoration: underline; }\n"
"#frames g { cursor: pointer; }\n"
"#frames g:hover rect { stroke: #000; stroke-width: 0.5; }\n"
"#frames text { pointer-events: none; }\n"
".hide { display: none; }\n"
".anc rect { opacity: 0.55; }\n";

static void svg_label(FILE *out, const char *s, size_t len, double w)
{
	double room = (w - 6) / SVG_FONT_W;
	size_t n = room > 0 ? (size_t)room : 0;

	/* Same rule as fit() in the script, which relabels after a zoom. */
	if (utf8_chars(s, len) <= n) {
		xml_put(out, s, len);
		return;
	}
	if (n < 3)
		return;
	xml_put(out, s, utf8_prefix(s, len, n - 2));
	fputs("..", out);
}

/* Visible frames in DFS order with their geometry; ret_max_depth too. */
static int svg_layout(const struct flamegraph *fg, const struct order *o, const struct svg_cfg *c,
		      struct vis **ret, size_t *ret_n, uint32_t *ret_max_depth)
{
	struct dfs { uint32_t node, next, depth; uint64_t cum; double x; } *stk = NULL;
	struct vis *v = NULL;
	size_t n = 0, cap = 256, sp = 0;
	uint64_t total = fg->nodes[ROOT].total;
	double full = (double)c->width - 2 * SVG_XPAD, scale;
	uint32_t maxd = 0;
	int err = 0;

	*ret = NULL;
	*ret_n = 0;
	*ret_max_depth = 0;
	if (!total)
		return 0;
	scale = full / (double)total;
	stk = malloc(STACK_MAX * sizeof(*stk));
	v = malloc(cap * sizeof(*v));
	if (!stk || !v) {
		err = -ENOMEM;
		goto cleanup;
	}
	v[n++] = (struct vis){ ROOT, 0, SVG_XPAD, full };
	stk[sp++] = (struct dfs){ ROOT, o->start[ROOT], 0, 0, SVG_XPAD };
	while (sp) {
		struct dfs *top = &stk[sp - 1];
		uint32_t ch;
		double x, w;
		bool sat = false;

		if (top->next == o->start[top->node + 1]) {
			sp--;
			continue;
		}
		ch = o->child[top->next++];
		x = top->x + (double)top->cum * scale;
		w = (double)fg->nodes[ch].total * scale;
		top->cum = sat_add(top->cum, fg->nodes[ch].total, &sat);
		/* Too narrow to see: its weight already widens the parent. */
		if (w < c->min_width || w <= 0)
			continue;
		if (sp == STACK_MAX) {
			err = -EOVERFLOW;	/* unreachable by construction */
			goto cleanup;
		}
		if (n == cap) {
			struct vis *nv = realloc(v, cap * 2 * sizeof(*v));

			if (!nv) {
				err = -ENOMEM;
				goto cleanup;
			}
			v = nv;
			cap *= 2;
		}
		v[n++] = (struct vis){ ch, top->depth + 1, x, w };
		if (top->depth + 1 > maxd)
			maxd = top->depth + 1;
		stk[sp] = (struct dfs){ ch, o->start[ch], top->depth + 1, 0, x };
		sp++;
	}
	*ret = v;
	*ret_n = n;
	*ret_max_depth = maxd;
	v = NULL;
cleanup:
	free(stk);
	free(v);
	return err;
}

/*
 * Splits text (valid UTF-8 or not: it is escaped when written) into at most
 * max_lines lines of at most room code points, at spaces where it can; the
 * last line that does not fit is cut, ending in "..".  Fills line starts and
 * byte lengths; returns the line count and whether the text was cut.
 */
#define SVG_MAX_LINES 3
static size_t wrap_lines(const char *s, size_t len, size_t room, size_t starts[], size_t lens[],
			 bool *ret_cut)
{
	size_t pos = 0, nl = 0;

	*ret_cut = false;
	if (room < 4)
		room = 4;
	while (pos < len && nl < SVG_MAX_LINES) {
		size_t rest = len - pos, cut, brk;

		if (utf8_chars(s + pos, rest) <= room) {
			starts[nl] = pos;
			lens[nl++] = rest;
			break;
		}
		if (nl == SVG_MAX_LINES - 1) {	/* the last line: cut, ".." added by the writer */
			starts[nl] = pos;
			lens[nl++] = utf8_prefix(s + pos, rest, room - 2);
			*ret_cut = true;
			break;
		}
		/* The last space within room + 1 code points ends the line (the space is dropped). */
		cut = utf8_prefix(s + pos, rest, room + 1);
		for (brk = cut; brk > 0 && s[pos + brk - 1] != ' '; brk--)
			;
		if (brk > 1)
			cut = brk - 1;
		else
			cut = utf8_prefix(s + pos, rest, room);
		starts[nl] = pos;
		lens[nl++] = cut;
		pos += cut;
		while (pos < len && s[pos] == ' ')
			pos++;
	}
	return nl;
}

/*
 * A centred text element of one or more lines (tspans), the whole text as
 * its tooltip when it had to be cut.  Returns the y of its last line.
 */
static double svg_lines(FILE *out, const char *id, const char *text, double cx, double y,
			double line_h, size_t room)
{
	size_t starts[SVG_MAX_LINES], lens[SVG_MAX_LINES], len = strlen(text), n;
	bool cut;

	n = wrap_lines(text, len, room, starts, lens, &cut);
	fprintf(out, "<text id=\"%s\" x=\"%.1f\" y=\"%.1f\">", id, cx, y);
	if (cut) {
		fputs("<title>", out);
		xml_put(out, text, len);
		fputs("</title>", out);
	}
	if (n <= 1 && !cut) {
		xml_put(out, text, len);
	} else {
		for (size_t i = 0; i < n; i++) {
			fprintf(out, "<tspan x=\"%.1f\" dy=\"%.1f\">", cx, i ? line_h : 0.0);
			xml_put(out, text + starts[i], lens[i]);
			if (cut && i == n - 1)
				fputs("..", out);
			fputs("</tspan>", out);
		}
	}
	fputs("</text>\n", out);
	return y + (double)(n ? n - 1 : 0) * line_h;
}

/* The offsets merged into a box, in its tooltip: "module+0x1a2b 1,234 samples" lines. */
static void svg_offsets(FILE *out, const struct drawn *d, uint32_t box, const char *unit)
{
	size_t n;
	const struct box_off *o = drawn_offsets(d, box, &n);

	for (size_t i = 0; i < n && i < SVG_MAX_OFFSETS; i++) {
		putc_unlocked('\n', out);
		xml_put(out, name_ptr(d->src, o[i].name), d->src->names[o[i].name].len);
		putc_unlocked(' ', out);
		put_grouped(out, o[i].w);
		putc_unlocked(' ', out);
		xml_puts(out, unit);
	}
	if (n > SVG_MAX_OFFSETS)
		fprintf(out, "\n... and %zu more offsets", n - SVG_MAX_OFFSETS);
}

/* "1 stack" / "N stacks", and how many are too narrow to draw. */
static void stacks_text(char *buf, size_t len, uint64_t stacks, uint64_t shown)
{
	int n = snprintf(buf, len, "%" PRIu64 " stack%s", stacks, stacks == 1 ? "" : "s");

	if (shown < stacks && n > 0 && (size_t)n < len)
		snprintf(buf + n, len - n, " (%" PRIu64 " too narrow to show)", stacks - shown);
}

int flamegraph__write_svg(const struct flamegraph *fg, FILE *out,
			  const struct flamegraph_svg_opts *opts)
{
	struct svg_cfg c;
	struct drawn d;
	struct order o = { 0 };
	struct vis *v = NULL;
	size_t nv = 0, title_room, sub_room;
	uint32_t maxd = 0;
	uint64_t total = fg->nodes[ROOT].total, shown = 0;
	_cleanup_free_ char *sub = NULL;
	unsigned top, height;
	double ty;
	int err;

	err = svg_cfg_get(opts, &c);
	if (err < 0)
		return err;
	err = drawn_build(fg, &d);
	if (err < 0)
		goto cleanup;
	err = order_build(d.g, &o);
	if (err < 0)
		goto cleanup;
	err = svg_layout(d.g, &o, &c, &v, &nv, &maxd);
	if (err < 0)
		goto cleanup;
	for (size_t i = 1; i < nv; i++)
		shown += d.g->nodes[v[i].node].self > 0;
	if (c.count_stacks) {
		char st[96];

		stacks_text(st, sizeof(st), d.stacks, shown);
		if (asprintf(&sub, "%s%s%s", c.subtitle ? c.subtitle : "", c.subtitle ? ", " : "", st) < 0) {
			sub = NULL;
			err = -ENOMEM;
			goto cleanup;
		}
		c.subtitle = sub;
	}

	/*
	 * The title shares its row with "Reset zoom" on the left and "Search" /
	 * "Reset search" on the right: it keeps out of their way on both sides.
	 */
	title_room = (size_t)(((double)c.width - 2 * (SVG_XPAD + SVG_BTN_ROOM)) / SVG_TITLE_W);
	sub_room = (size_t)(((double)c.width - 2 * SVG_XPAD) / SVG_FONT_W);

	/* Header lines first (their count sets the height), into a buffer. */
	{
		_cleanup_free_ char *hdr = NULL;
		size_t hlen = 0;
		FILE *h = open_memstream(&hdr, &hlen);

		if (!h) {
			err = -ENOMEM;
			goto cleanup;
		}
		ty = svg_lines(h, "title", c.title, c.width / 2.0, 24, 20, title_room);
		if (c.subtitle)
			ty = svg_lines(h, "subtitle", c.subtitle, c.width / 2.0, ty + 20, 16, sub_room);
		if (fclose(h)) {
			err = -ENOMEM;
			goto cleanup;
		}
		top = (unsigned)ty + (c.subtitle ? 20 : 22);
		height = top + (maxd + 1) * SVG_FRAME_H + SVG_BOTTOM;
		fprintf(out,
			"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
			"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%u\" height=\"%u\""
			" viewBox=\"0 0 %u %u\">\n"
			"<style type=\"text/css\"><![CDATA[\n%s]]></style>\n"
			"<script type=\"text/ecmascript\"><![CDATA[\n"
			"window.EMBER_FG = { total: %" PRIu64 ", width: %u, xpad: %d, fontw: %.2f };\n"
			"]]></script>\n"
			"<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" fill=\"#f6f6f0\"/>\n",
			c.width, height, c.width, height, svg_style, total, c.width, SVG_XPAD, SVG_FONT_W,
			c.width, height);
		fwrite_unlocked(hdr, 1, hlen, out);
	}
	fprintf(out, "<text id=\"unzoom\" class=\"btn hide\" x=\"%d\" y=\"24\">Reset zoom</text>\n",
		SVG_XPAD);
	fprintf(out, "<text id=\"search\" class=\"btn\" x=\"%u\" y=\"24\" style=\"text-anchor:end\">"
		"Search</text>\n", c.width - SVG_XPAD);
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n", SVG_XPAD, height - 12);
	fprintf(out, "<text id=\"matched\" x=\"%u\" y=\"%u\" style=\"text-anchor:end\"></text>\n",
		c.width - SVG_XPAD, height - 12);
	if (!total)
		fprintf(out, "<text x=\"%.1f\" y=\"%u\" style=\"text-anchor:middle\">No samples</text>\n",
			c.width / 2.0, top + SVG_FRAME_H - 4);

	fputs("<g id=\"frames\">\n", out);
	for (size_t i = 0; i < nv; i++) {
		const struct fg_node *nd = &d.g->nodes[v[i].node];
		bool root = v[i].node == ROOT;
		const char *s = root ? "all" : name_ptr(d.g, nd->name);
		size_t len = root ? 3 : d.g->names[nd->name].len;
		unsigned y = top + (maxd - v[i].depth) * SVG_FRAME_H, rgb[3];

		frame_colour(s, len, root, rgb);
		fprintf(out, "<g data-w=\"%" PRIu64 "\"><title>", nd->total);
		xml_put(out, s, len);
		putc_unlocked('\n', out);
		put_grouped(out, nd->total);
		putc_unlocked(' ', out);
		xml_puts(out, c.unit);
		fprintf(out, " (%.2f%%)", (double)nd->total * 100.0 / (double)total);
		if (d.noffs && !root)
			svg_offsets(out, &d, v[i].node, c.unit);
		fprintf(out, "</title><rect x=\"%.2f\" y=\"%u\" width=\"%.2f\" height=\"%d\""
			" rx=\"2\" fill=\"rgb(%u,%u,%u)\"/><text x=\"%.2f\" y=\"%.1f\">",
			v[i].x, y, v[i].w, SVG_FRAME_H - 1, rgb[0], rgb[1], rgb[2], v[i].x + 3, y + 11.5);
		svg_label(out, s, len, v[i].w);
		fputs("</text></g>\n", out);
	}
	fputs("</g>\n", out);
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n",
		svg_script);
	err = (fflush(out) || ferror(out)) ? -EIO : 0;
cleanup:
	free(v);
	order_free(&o);
	drawn_free(&d);
	return err;
}
