/* Sliding window of 1-second slots: see window.h. */
#include "analyzer/continuous/window.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Both windows are rings of slots that start with their second (int64_t sec, INT64_MIN = empty). */
_Static_assert(offsetof(struct cp_slot, sec) == 0 && offsetof(struct cp_agg_slot, sec) == 0, "slots start with sec");

static uint32_t ring_index(int64_t sec, uint32_t len)
{
	int64_t m = sec % (int64_t)len;

	return (uint32_t)(m < 0 ? m + len : m);
}

static int64_t *sec_at(void *slots, size_t size, uint32_t i)
{
	return (int64_t *)((char *)slots + (size_t)i * size);
}

/* A ring of len slots of size bytes, keeping each old slot at its second's place (later seconds win). */
static int ring_resize(void **slots, uint32_t *cur, uint32_t len, size_t size)
{
	void *s;

	if (!len)
		return -EINVAL;
	if (len == *cur)
		return 0;
	s = calloc(len, size);
	if (!s)
		return -ENOMEM;
	for (uint32_t i = 0; i < len; i++)
		*sec_at(s, size, i) = INT64_MIN;
	for (uint32_t i = 0; i < *cur; i++) {
		int64_t *o = sec_at(*slots, size, i), *d;

		if (*o == INT64_MIN)
			continue;
		d = sec_at(s, size, ring_index(*o, len));
		if (*d == INT64_MIN || *d < *o)
			memcpy(d, o, size);
	}
	free(*slots);
	*slots = s;
	*cur = len;
	return 0;
}

static uint32_t slot_of(const struct cp_window *w, int64_t sec) { return ring_index(sec, w->len); }

int cp_window__resize(struct cp_window *w, uint32_t len)
{
	return ring_resize((void **)&w->slots, &w->len, len, sizeof(*w->slots));
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

static uint32_t agg_slot_of(const struct cp_agg_window *w, int64_t sec) { return ring_index(sec, w->len); }

int cp_agg_window__resize(struct cp_agg_window *w, uint32_t len)
{
	return ring_resize((void **)&w->slots, &w->len, len, sizeof(*w->slots));
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
