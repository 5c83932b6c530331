/*
 * A sliding window of 1-second slots (Rover's continuous-profiling window):
 * each slot keeps the last value put in its second; a policy item asks how
 * many of the last Period seconds hold a value at or over its threshold.
 * Seconds without a value count as not satisfying it.  A value type with a
 * bounded array (len slots, len <= CP_PERIOD_MAX), owned by its monitor.
 */
#ifndef EMBER_ANALYZER_CONTINUOUS_WINDOW_H
#define EMBER_ANALYZER_CONTINUOUS_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

struct cp_slot {
	int64_t sec;	/* the second the value belongs to; INT64_MIN = empty */
	double value;
};

struct cp_window {
	uint32_t len;
	struct cp_slot *slots;
};

/* 0 or -ENOMEM / -EINVAL (len 0).  Grows or shrinks an initialised window, keeping what still fits. */
int cp_window__resize(struct cp_window *w, uint32_t len);
/* Frees the slots; the window may be resized again. */
void cp_window__fini(struct cp_window *w);
/* The value of second sec (a later put in the same second replaces it). */
void cp_window__put(struct cp_window *w, int64_t sec, double value);
/*
 * Seconds among now_sec-period+1 .. now_sec (period clamped to len) whose
 * value is >= threshold; *last (if not NULL) gets the latest such value.
 */
uint32_t cp_window__count(const struct cp_window *w, int64_t now_sec, uint32_t period, double threshold,
			  double *last);
/* The value of the latest second in the window; 0 when empty (then *sec = INT64_MIN). */
double cp_window__latest(const struct cp_window *w, int64_t *sec);

/*
 * The HTTP monitors' window: per second, the exchanges that completed in it
 * (count, errors, summed response time), from which the error rate (errors
 * / count x 100) and the average response time (ms) of each second follow.
 */
struct cp_agg_slot {
	int64_t sec;	/* INT64_MIN = empty */
	uint32_t count, errors;
	double sum_ms;
};

struct cp_agg_window {
	uint32_t len;
	struct cp_agg_slot *slots;
};

enum cp_agg_value { CP_AGG_ERROR_RATE, CP_AGG_AVG_MS };

int cp_agg_window__resize(struct cp_agg_window *w, uint32_t len);
void cp_agg_window__fini(struct cp_agg_window *w);
void cp_agg_window__add(struct cp_agg_window *w, int64_t sec, bool error, double ms);
/* As cp_window__count, on each second's value; seconds without exchanges count as not satisfying. */
uint32_t cp_agg_window__count(const struct cp_agg_window *w, enum cp_agg_value v, int64_t now_sec, uint32_t period,
			      double threshold, double *last);

#endif
