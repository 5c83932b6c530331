/*
 * Flame graphs: a trie of stack frames (root first) with uint64 weights,
 * written as folded stacks ("a;b;c 12\n") or as a self-contained interactive
 * SVG.  Library module: never logs; int functions return 0 or -errno.
 *
 * Not thread-safe: one flamegraph belongs to one thread at a time.
 *
 * Frame names are normalised when they enter the trie, so that every folded
 * line parses back to the same stack and every name is valid XML text:
 *   - ';'                          -> ':'   (';' separates frames)
 *   - bytes 0x00-0x1f and 0x7f      -> '?'   (newline ends a line)
 *   - invalid UTF-8 sequences      -> U+FFFD, one per invalid byte
 *   - longer than FLAMEGRAPH_MAX_FRAME_LEN bytes -> cut at a UTF-8 boundary
 *   - empty                        -> "[unknown]"
 * The rule is idempotent: a normalised name normalises to itself.  Each
 * rewritten name counts in stats.sanitized_frames (and cut ones also in
 * stats.long_frames).
 *
 * Memory is bounded by max_nodes (trie nodes, root excluded) and by a name
 * arena of max_nodes * 128 bytes.  When a stack needs a node past the bound,
 * its remaining frames are replaced by one "[truncated]" child of the deepest
 * prefix that already exists (or of the root when even that child cannot be
 * created); the weight is kept, so totals never change, and it is counted in
 * stats.truncated_stacks / truncated_weight.  Stacks deeper than
 * FLAMEGRAPH_MAX_DEPTH frames end in a "[truncated]" frame too (counted in
 * stats.deep_stacks).  Weights saturate at UINT64_MAX (stats.saturated).
 */
#ifndef EMBER_EXPORTER_FLAMEGRAPH_H
#define EMBER_EXPORTER_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define FLAMEGRAPH_DEFAULT_MAX_NODES (1u << 20)
#define FLAMEGRAPH_MAX_NODES_LIMIT   (1u << 28)
#define FLAMEGRAPH_MAX_FRAME_LEN     4096
#define FLAMEGRAPH_MAX_DEPTH         1024
/* Longest folded line the readers accept, newline excluded. */
#define FLAMEGRAPH_MAX_LINE          (1u << 20)
#define FLAMEGRAPH_TRUNCATED_FRAME   "[truncated]"
#define FLAMEGRAPH_UNKNOWN_FRAME     "[unknown]"

struct flamegraph;

/* max_nodes: 0 = FLAMEGRAPH_DEFAULT_MAX_NODES.  NULL with errno EINVAL
 * (max_nodes > FLAMEGRAPH_MAX_NODES_LIMIT) or ENOMEM. */
struct flamegraph *flamegraph__new(size_t max_nodes);

/* Destroys fg (NULL is fine).  Returns NULL for `fg = flamegraph__free(fg);`. */
struct flamegraph *flamegraph__free(struct flamegraph *fg);

/* Drops every stack and zeroes the counters; keeps max_nodes and memory. */
void flamegraph__clear(struct flamegraph *fg);

/*
 * Adds one stack of nframes NUL-terminated names, root first, with weight.
 * Weight 0 is a no-op.  -EINVAL: nframes == 0 or a NULL frame (nothing
 * added).  -ENOMEM: nothing weighed, though empty nodes may remain.
 */
int flamegraph__add(struct flamegraph *fg, const char *const *frames, size_t nframes,
		    uint64_t weight);

/*
 * Parses one folded line "f1;f2;...;fn COUNT" (an optional trailing "\n" or
 * "\r\n" is allowed; COUNT is the decimal text after the last space, 1-20
 * digits, <= UINT64_MAX) and adds it.  line need not be NUL-terminated and
 * may contain any bytes (frames are normalised).  -EINVAL on a malformed
 * line (no space, empty stack, bad count, longer than FLAMEGRAPH_MAX_LINE);
 * -ENOMEM.  Neither counts in stats.bad_lines: the load functions do that.
 */
int flamegraph__add_folded_line(struct flamegraph *fg, const char *line, size_t len);

/*
 * Adds every line of a folded buffer / stream.  Empty lines are skipped,
 * malformed ones counted in stats.bad_lines and skipped, good ones counted
 * in stats.lines.  Returns 0, -ENOMEM, or -EIO (read error on in).
 */
int flamegraph__load_folded_buf(struct flamegraph *fg, const char *buf, size_t len);
int flamegraph__load_folded(struct flamegraph *fg, FILE *in);

/*
 * Writes one "f1;...;fn weight\n" line per stack with self weight > 0, in
 * frame-wise lexicographic order (stacks compared frame by frame with a
 * byte comparison of the names; a stack precedes its extensions), which is
 * deterministic and the order DFS over name-sorted children yields.
 * Returns 0, -ENOMEM, or -EIO when writing to out failed.
 */
int flamegraph__write_folded(const struct flamegraph *fg, FILE *out);

struct flamegraph_svg_opts {
	size_t sz;		/* sizeof(struct flamegraph_svg_opts) */
	const char *title;	/* NULL = "Flame Graph" */
	const char *subtitle;	/* NULL = none */
	const char *unit;	/* weight unit, e.g. "samples", "µs"; NULL = "samples" */
	unsigned width;		/* image width in px; 0 = 1200, allowed 200..100000 */
	double min_width;	/* frames narrower (px) are not drawn; 0 = 0.1 */
	/*
	 * Ends the subtitle (or makes one) with the number of distinct stacks
	 * in the graph as drawn, e.g. "1 stack", "40 stacks (3 too narrow to
	 * show)": a caller's own count (records received, windows) would not
	 * match the picture.
	 */
	bool count_stacks;
};

/*
 * Writes a standalone SVG (inline CSS and JS): hover details and tooltips,
 * click to zoom, Reset zoom, Search (button, Ctrl-F or '/') by regex with the
 * matched percentage.  opts may be NULL (defaults).  Every text from frames
 * and opts is XML-escaped (control characters dropped, invalid UTF-8
 * replaced).  A title too long for the space between the buttons, and a
 * subtitle too long for the width, wrap at spaces (at most 3 lines each,
 * then cut with "..", the whole text in the tooltip).
 *
 * Unresolved frames are drawn merged per module: a stripped library's
 * "libcrypto.so.3+0x1a2b" frames (module+0x<hex offset>, as the symbolizer
 * names what it cannot resolve; "_[k]" after it for kernel ones) become one
 * "[libcrypto.so.3]" box per place in the graph ("[anon]", "[kernel]_[k]" for
 * modules already in brackets), and a run of them calling each other
 * becomes one box.  Weights are added, never dropped: each box weighs the
 * sum of the frames merged into it, and its tooltip lists their offsets,
 * heaviest first, each with the weight it holds less what deeper frames of
 * the same run hold (so they add up to the box).  The trie and the folded output keep the
 * exact frames, for symbolizing them later.
 *
 * Returns 0, -EINVAL (bad opts: sz too small, non-zero unknown tail, width
 * out of range, min_width < 0), -ENOMEM or -EIO.
 */
int flamegraph__write_svg(const struct flamegraph *fg, FILE *out,
			  const struct flamegraph_svg_opts *opts);

/* Sum of all weights added (saturating). */
uint64_t flamegraph__total(const struct flamegraph *fg);

struct flamegraph_stats {
	uint64_t nodes;			/* trie nodes, root excluded */
	uint64_t unique_stacks;		/* nodes with self weight > 0 = folded lines */
	uint64_t stacks;		/* stacks added with weight > 0 */
	uint64_t truncated_stacks;	/* stacks cut by the node / name bound */
	uint64_t truncated_weight;	/* their weight, kept under "[truncated]" */
	uint64_t deep_stacks;		/* stacks cut at FLAMEGRAPH_MAX_DEPTH */
	uint64_t sanitized_frames;	/* frame names rewritten (see above) */
	uint64_t long_frames;		/* ... of which cut to FLAMEGRAPH_MAX_FRAME_LEN */
	uint64_t saturated;		/* weight additions that hit UINT64_MAX */
	uint64_t lines;			/* folded lines loaded */
	uint64_t bad_lines;		/* folded lines rejected by the load functions */
	uint64_t name_bytes;		/* bytes of interned frame names */
};

void flamegraph__stats(const struct flamegraph *fg, struct flamegraph_stats *ret);

#endif
