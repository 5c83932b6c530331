/*
 * Flame graph throughput: stacks added per second into a trie of ~50k unique
 * stacks, folded write/read speed, and SVG render time and size.
 * Prints "name: value unit" lines.  Options:
 *   --stacks N     unique stacks to generate (default 50000)
 *   --samples N    stacks added in the timed phase (default 2000000)
 *   --svg PATH     also write the SVG there (for a look in a browser)
 *   --folded PATH  also write the folded stacks there
 *   --load PATH    no benchmark: load a folded file, write --svg/--folded
 *                  (a converter for manual checks and the SVG script test)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exporter/flamegraph.h"

#define NAMES	  6000
#define MAX_DEPTH 48

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return rng * 2685821657736338717ull;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

struct stack {
	uint16_t n;
	uint16_t f[MAX_DEPTH];
};

static int write_to(const char *path, int (*fn)(const struct flamegraph *, FILE *),
		    const struct flamegraph *fg)
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f)
		return -errno;
	err = fn(fg, f);
	if (fclose(f) && !err)
		err = -EIO;
	return err;
}

static int svg_default(const struct flamegraph *fg, FILE *f)
{
	struct flamegraph_svg_opts o = {
		.sz = sizeof(o), .title = "ember bench flame graph",
		.subtitle = "synthetic stacks", .unit = "samples",
	};

	return flamegraph__write_svg(fg, f, &o);
}

static int convert(const char *in, const char *svg_path, const char *folded_path)
{
	struct flamegraph *fg = flamegraph__new(0);
	struct flamegraph_stats st;
	FILE *f = fopen(in, "r");
	int err = -ENOMEM;

	if (!f || !fg) {
		fprintf(stderr, "cannot open %s\n", in);
		goto out;
	}
	err = flamegraph__load_folded(fg, f);
	if (!err && svg_path)
		err = write_to(svg_path, svg_default, fg);
	if (!err && folded_path)
		err = write_to(folded_path, flamegraph__write_folded, fg);
	flamegraph__stats(fg, &st);
	printf("lines: %llu bad_lines: %llu nodes: %llu\n", (unsigned long long)st.lines,
	       (unsigned long long)st.bad_lines, (unsigned long long)st.nodes);
	if (err)
		fprintf(stderr, "conversion failed: %s\n", strerror(-err));
out:
	if (f)
		fclose(f);
	flamegraph__free(fg);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	size_t nstacks = 50000, nsamples = 2000000, bytes = 0;
	const char *svg_path = NULL, *folded_path = NULL, *load_path = NULL;
	static char names[NAMES][48];
	const char *frames[MAX_DEPTH];
	struct flamegraph *fg = NULL, *back = NULL;
	struct flamegraph_stats st;
	struct stack *stacks;
	char *buf = NULL;
	FILE *mem;
	double t;
	int err = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--stacks") && i + 1 < argc)
			nstacks = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
			nsamples = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--svg") && i + 1 < argc)
			svg_path = argv[++i];
		else if (!strcmp(argv[i], "--folded") && i + 1 < argc)
			folded_path = argv[++i];
		else if (!strcmp(argv[i], "--load") && i + 1 < argc)
			load_path = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--stacks N] [--samples N] [--svg PATH] [--folded PATH]\n",
				argv[0]);
			return 2;
		}
	}
	if (load_path)
		return convert(load_path, svg_path, folded_path);
	if (!nstacks)
		nstacks = 1;
	for (int i = 0; i < NAMES; i++) {
		if (i % 10 == 9)
			snprintf(names[i], sizeof(names[i]), "kfunc_%d_[k]", i);
		else
			snprintf(names[i], sizeof(names[i]), "ns%d::Class%d::method_%d(int)", i % 17, i % 101, i);
	}
	/*
	 * Realistic sharing: each stack copies a prefix of an earlier one and
	 * grows from there, so the trie has long common trunks and bushy tops.
	 */
	stacks = calloc(nstacks, sizeof(*stacks));
	if (!stacks)
		return 1;
	for (size_t i = 0; i < nstacks; i++) {
		struct stack *s = &stacks[i];
		size_t keep = 0;

		if (i) {
			const struct stack *p = &stacks[rnd() % i];

			/* Keep 70-100% of it: depths settle around 20-25 frames. */
			keep = p->n - (size_t)(p->n * 0.3 * (double)(rnd() % 1001) / 1000.0);
			memcpy(s->f, p->f, keep * sizeof(s->f[0]));
		}
		s->n = (uint16_t)(keep + 1 + rnd() % 6);
		if (s->n > MAX_DEPTH)
			s->n = MAX_DEPTH;
		for (size_t k = keep; k < s->n; k++)
			s->f[k] = (uint16_t)(rnd() % NAMES);
	}

	fg = flamegraph__new(0);
	back = flamegraph__new(0);
	if (!fg || !back)
		goto out;
	/* Skewed picks: a few stacks are hot, most are rare. */
	uint64_t nframes = 0;

	t = now();
	for (size_t i = 0; i < nsamples; i++) {
		uint64_t r = rnd();
		double u = (double)(r >> 11) / 9007199254740992.0;
		/* Scatter the hot ranks: early stacks are shallower than later ones. */
		size_t rank = (size_t)(u * u * u * (double)nstacks);
		const struct stack *s = &stacks[(rank * 7919u) % nstacks];

		for (size_t k = 0; k < s->n; k++)
			frames[k] = names[s->f[k]];
		if (flamegraph__add(fg, frames, s->n, 1 + (r & 3)))
			goto out;
		nframes += s->n;
	}
	t = now() - t;
	flamegraph__stats(fg, &st);
	printf("flamegraph_add_rate: %.0f stacks/s\n", nsamples / t);
	printf("flamegraph_add_ns: %.1f ns/stack\n", t * 1e9 / nsamples);
	printf("flamegraph_add_depth: %.1f frames/stack\n", (double)nframes / nsamples);
	/* Make every generated stack present, for the render figures below. */
	for (size_t i = 0; i < nstacks; i++) {
		for (size_t k = 0; k < stacks[i].n; k++)
			frames[k] = names[stacks[i].f[k]];
		if (flamegraph__add(fg, frames, stacks[i].n, 1))
			goto out;
	}
	flamegraph__stats(fg, &st);
	printf("flamegraph_unique_stacks: %llu stacks\n", (unsigned long long)st.unique_stacks);
	printf("flamegraph_nodes: %llu nodes\n", (unsigned long long)st.nodes);

	mem = open_memstream(&buf, &bytes);
	if (!mem)
		goto out;
	t = now();
	if (flamegraph__write_folded(fg, mem))
		goto out;
	fclose(mem);
	t = now() - t;
	printf("flamegraph_folded_write: %.1f ms\n", t * 1e3);
	printf("flamegraph_folded_size: %.1f KiB\n", bytes / 1024.0);
	t = now();
	if (flamegraph__load_folded_buf(back, buf, bytes))
		goto out;
	t = now() - t;
	printf("flamegraph_folded_read: %.0f lines/s\n", st.unique_stacks / t);
	free(buf);
	buf = NULL;

	mem = open_memstream(&buf, &bytes);
	if (!mem)
		goto out;
	t = now();
	if (svg_default(fg, mem))
		goto out;
	fclose(mem);
	t = now() - t;
	{
		size_t frames_drawn = 0;

		for (const char *p = strstr(buf, "<g data-w="); p; p = strstr(p + 1, "<g data-w="))
			frames_drawn++;
		printf("flamegraph_svg_render: %.1f ms\n", t * 1e3);
		printf("flamegraph_svg_size: %.1f KiB\n", bytes / 1024.0);
		printf("flamegraph_svg_frames: %zu frames\n", frames_drawn);
	}
	if (svg_path && write_to(svg_path, svg_default, fg)) {
		fprintf(stderr, "cannot write %s\n", svg_path);
		goto out;
	}
	if (folded_path && write_to(folded_path, flamegraph__write_folded, fg)) {
		fprintf(stderr, "cannot write %s\n", folded_path);
		goto out;
	}
	err = 0;
out:
	if (err)
		fprintf(stderr, "bench_flamegraph failed\n");
	free(buf);
	free(stacks);
	flamegraph__free(fg);
	flamegraph__free(back);
	return err;
}
