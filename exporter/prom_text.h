/*
 * The Prometheus text exposition format (0.0.4) for ember's meters: a
 * bounded table holding the latest value of every series, rendered on
 * demand.  Pure (no I/O, no threads, no protobuf): the HTTP backend
 * (exporter/prometheus_backend.c) converts Ember__Meter into prom_meter and
 * serialises access with its own mutex.
 *
 * Identity of a series is (family name, label set) after sanitising; label
 * order does not matter.  Meters carry cumulative counters, so an update
 * replaces the previous value.  Naming:
 *   - metric names are sanitised to [a-zA-Z_:][a-zA-Z0-9_:]*, label names to
 *     [a-zA-Z_][a-zA-Z0-9_]* (the grammar allows no ':' there) and never start
 *     with the reserved "__"; every other byte becomes '_', a leading digit
 *     gets a '_' in front;
 *   - counters get the "_total" suffix unless they have it (Prometheus'
 *     naming rule that `promtool check metrics` enforces);
 *   - histograms render _bucket{le=...} (cumulative, always ending with
 *     le="+Inf" = hist_count), _sum (= value) and _count;
 *   - the label names `le` and `quantile` are reserved (histograms,
 *     summaries): a meter using them is refused.
 * A family has one type: a meter whose type differs from its family's, or
 * whose name collides with a histogram's _bucket/_sum/_count series, is
 * refused (counted as a conflict).  Label values and help texts are escaped
 * and invalid UTF-8 in them is replaced by U+FFFD, so the output always
 * parses.  No timestamps are exposed: Prometheus stamps the scrape.
 */
#ifndef EMBER_PROM_TEXT_H
#define EMBER_PROM_TEXT_H

#include <stddef.h>
#include <stdint.h>

#define PROM_DEFAULT_MAX_SERIES 10000
#define PROM_MAX_NAME      200		/* metric name, bytes (before "_total") */
#define PROM_MAX_LABEL_NAME 128
#define PROM_MAX_LABEL_VALUE 1024
#define PROM_MAX_LABELS    32
#define PROM_MAX_LABELSET  4096		/* a series' rendered {…} text */
#define PROM_MAX_HELP      1024		/* longer help texts are cut */
#define PROM_MAX_BUCKETS   64
#define PROM_MAX_RENDER    (32u << 20)	/* a scrape stops at a series boundary past this */

struct prom_label { const char *name, *value; };
struct prom_bucket { double upper_bound; uint64_t count; };	/* cumulative count */

/* Borrowed for the duration of the call. */
struct prom_meter {
	const char *name;
	const char *help;			/* NULL or "": a generic text is shown */
	const struct prom_label *labels;
	size_t n_labels;
	double value;				/* counter / gauge value; histogram: sum */
	int is_counter;
	const struct prom_bucket *buckets;	/* n_buckets > 0 makes it a histogram */
	size_t n_buckets;
	uint64_t hist_count;
};

struct prom_table_stats {
	uint64_t series;			/* live series (gauge) */
	uint64_t families;			/* live families (gauge) */
	uint64_t updates;			/* accepted updates */
	uint64_t series_added;
	uint64_t series_dropped;		/* refused: the table was full */
	uint64_t series_expired;
	uint64_t series_dropped_by_label;	/* forgotten by prom_table__drop */
	uint64_t invalid;			/* refused: malformed meter */
	uint64_t conflicts;			/* refused: type or name conflict */
	uint64_t renders;
	uint64_t render_bytes;			/* sum over renders */
	uint64_t render_truncated;		/* renders cut at PROM_MAX_RENDER */
	uint64_t nomem;
};

/* A growable output buffer, reused across renders.  Zero-initialise it. */
struct prom_buf {
	char *p;
	size_t len, cap;
};
void prom_buf__release(struct prom_buf *b);

struct prom_table;

/* max_series 0 = PROM_DEFAULT_MAX_SERIES.  NULL + errno on failure. */
struct prom_table *prom_table__new(size_t max_series);
/* Accepts NULL; returns NULL. */
struct prom_table *prom_table__free(struct prom_table *t);

/*
 * Insert or replace one series; now_ms is remembered for prom_table__expire.
 * 0, -EINVAL (malformed: empty or too long name, too many or duplicate
 * labels, bad buckets...), -EEXIST (type / name conflict), -ENOSPC (table
 * full: counted in series_dropped), -ENOMEM.
 */
int prom_table__update(struct prom_table *t, const struct prom_meter *m, uint64_t now_ms);

/* Forget series not updated since now_ms - max_age_ms; returns how many. */
size_t prom_table__expire(struct prom_table *t, uint64_t now_ms, uint64_t max_age_ms);

/*
 * Forget, now, every series of the families whose (sanitised) names start
 * with prefix that carries the label `label` with exactly this value (the
 * process a gauge was about is gone).  Returns how many (counted in
 * series_dropped_by_label), or -EINVAL for an empty, too long or unusable
 * label name or value.
 */
int prom_table__drop(struct prom_table *t, const char *prefix, const char *label, const char *value);

/*
 * Render every series into out (replacing its content; NUL-terminated, the
 * NUL not counted in out->len), families sorted by name, series by labels.
 * 0 or -ENOMEM (out is then empty).  Past PROM_MAX_RENDER bytes the rest is left
 * out at a series boundary (counted in render_truncated).
 */
int prom_table__render(struct prom_table *t, struct prom_buf *out);

void prom_table__stats(const struct prom_table *t, struct prom_table_stats *ret);

/*
 * Sanitise a metric name (is_label = 0) or a label name (1) into buf; returns
 * the length, -EINVAL for an empty name, -ENAMETOOLONG when it does not fit.
 */
int prom_text__sanitize_name(const char *in, int is_label, char *buf, size_t len);

/* The format's number syntax: shortest round-trip decimal, NaN, +Inf, -Inf.
 * buf >= 32 bytes; returns the length. */
int prom_text__format_double(double v, char *buf, size_t len);

#endif
