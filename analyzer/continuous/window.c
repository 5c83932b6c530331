/* Sliding window of 1-second slots: see window.h. */
#include "analyzer/continuous/window.h"

#include <errno.h>
#include <stdlib.h>

static uint32_t slot_of(const struct cp_window *w, int64_t sec)
{
	int64_t m = sec % (int64_t)w->len;

	return (uint32_t)(m < 0 ? m + w->len : m);
}

int cp_window__resize(struct cp_window *w, uint32_t len)
{
	struct cp_slot *s;

	if (!len)
		return -EINVAL;
	if (len == w->len)
		return 0;
	s = malloc(len * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < len; i++)
		s[i].sec = INT64_MIN;
	/* Keep each slot at its second's place in the new ring; later seconds win. */
	for (uint32_t i = 0; i < w->len; i++) {
		const struct cp_slot *o = &w->slots[i];
		int64_t m;

		if (o->sec == INT64_MIN)
			continue;
		m = o->sec % (int64_t)len;
		m = m < 0 ? m + len : m;
		if (s[m].sec == INT64_MIN || s[m].sec < o->sec)
			s[m] = *o;
	}
	free(w->slots);
	w->slots = s;
	w->len = len;
	return 0;
}

void cp_window__fini(struct cp_window *w)
{
	free(w->slots);
	w->slots = NULL;
	w->len = 0;
}

void cp_window__put(struct cp_window *w, int64_t sec, double value)
{
	struct cp_slot *s;

	if (!w->len)
		return;
	s = &w->slots[slot_of(w, sec)];
	if (s->sec != INT64_MIN && s->sec > sec)
		return; /* a newer second already took the slot */
	s->sec = sec;
	s->value = value;
}

uint32_t cp_window__count(const struct cp_window *w, int64_t now_sec, uint32_t period, double threshold,
			  double *last)
{
	uint32_t n = 0;
	int64_t latest = INT64_MIN;

	if (period > w->len)
		period = w->len;
	for (uint32_t i = 0; i < period; i++) {
		int64_t sec = now_sec - i;
		const struct cp_slot *s = &w->slots[slot_of(w, sec)];

		if (s->sec != sec || !(s->value >= threshold))
			continue;
		n++;
		if (sec > latest) {
			latest = sec;
			if (last)
				*last = s->value;
		}
	}
	return n;
}

double cp_window__latest(const struct cp_window *w, int64_t *sec)
{
	const struct cp_slot *best = NULL;

	for (uint32_t i = 0; i < w->len; i++)
		if (w->slots[i].sec != INT64_MIN && (!best || w->slots[i].sec > best->sec))
			best = &w->slots[i];
	if (sec)
		*sec = best ? best->sec : INT64_MIN;
	return best ? best->value : 0;
}

static uint32_t agg_slot_of(const struct cp_agg_window *w, int64_t sec)
{
	int64_t m = sec % (int64_t)w->len;

	return (uint32_t)(m < 0 ? m + w->len : m);
}

int cp_agg_window__resize(struct cp_agg_window *w, uint32_t len)
{
	struct cp_agg_slot *s;

	if (!len)
		return -EINVAL;
	if (len == w->len)
		return 0;
	s = malloc(len * sizeof(*s));
	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < len; i++)
		s[i] = (struct cp_agg_slot){ .sec = INT64_MIN };
	for (uint32_t i = 0; i < w->len; i++) {
		const struct cp_agg_slot *o = &w->slots[i];
		int64_t m;

		if (o->sec == INT64_MIN)
			continue;
		m = o->sec % (int64_t)len;
		m = m < 0 ? m + len : m;
		if (s[m].sec == INT64_MIN || s[m].sec < o->sec)
			s[m] = *o;
	}
	free(w->slots);
	w->slots = s;
	w->len = len;
	return 0;
}

void cp_agg_window__fini(struct cp_agg_window *w)
{
	free(w->slots);
	w->slots = NULL;
	w->len = 0;
}

void cp_agg_window__add(struct cp_agg_window *w, int64_t sec, bool error, double ms)
{
	struct cp_agg_slot *s;

	if (!w->len)
		return;
	s = &w->slots[agg_slot_of(w, sec)];
	if (s->sec != sec) {
		if (s->sec != INT64_MIN && s->sec > sec)
			return; /* older than what the slot holds now */
		*s = (struct cp_agg_slot){ .sec = sec };
	}
	s->count++;
	s->errors += error;
	s->sum_ms += ms;
}

uint32_t cp_agg_window__count(const struct cp_agg_window *w, enum cp_agg_value v, int64_t now_sec, uint32_t period,
			      double threshold, double *last)
{
	uint32_t n = 0;
	bool found = false;

	if (period > w->len)
		period = w->len;
	for (uint32_t i = 0; i < period; i++) {
		int64_t sec = now_sec - i;
		const struct cp_agg_slot *s = &w->slots[agg_slot_of(w, sec)];
		double x;

		if (s->sec != sec || !s->count)
			continue;
		x = v == CP_AGG_ERROR_RATE ? 100.0 * s->errors / s->count : s->sum_ms / s->count;
		if (!(x >= threshold))
			continue;
		n++;
		if (!found && last)
			*last = x; /* the latest second comes first */
		found = true;
	}
	return n;
}
