#include "exporter/task_join.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID_LEN 64
#define MAX_SHARDS 64   /* analyzers are numbered 0..63: one bit each */

struct join {
	char id[ID_LEN];
	uint64_t started;       /* bit per analyzer that sent STARTED */
	uint64_t ended;         /* bit per analyzer that sent FINISHED or FAILED */
	uint32_t shards;
	int failed;
	uint64_t age;           /* insertion order, to evict the oldest */
};

struct task_join {
	unsigned max;
	uint64_t clock;
	struct join *v;
	struct task_join_stats st;
};

struct task_join *task_join__new(unsigned max_tasks)
{
	struct task_join *j = calloc(1, sizeof(*j));

	if (!j)
		return NULL;
	j->v = calloc(max_tasks ? max_tasks : 1, sizeof(*j->v));
	if (!j->v) {
		free(j);
		errno = ENOMEM;
		return NULL;
	}
	j->max = max_tasks ? max_tasks : 1;
	return j;
}

struct task_join *task_join__free(struct task_join *j)
{
	if (!j)
		return NULL;
	free(j->v);
	free(j);
	return NULL;
}

void task_join__stats(const struct task_join *j, struct task_join_stats *ret)
{
	*ret = j->st;
}

static struct join *find_or_add(struct task_join *j, const char *id, uint32_t shards)
{
	struct join *free_slot = NULL, *oldest = NULL;

	for (unsigned i = 0; i < j->max; i++) {
		struct join *e = &j->v[i];

		if (e->id[0] && !strcmp(e->id, id))
			return e;
		if (!e->id[0] && !free_slot)
			free_slot = e;
		if (e->id[0] && (!oldest || e->age < oldest->age))
			oldest = e;
	}
	if (!free_slot) {
		j->st.evicted++;
		free_slot = oldest;
	}
	memset(free_slot, 0, sizeof(*free_slot));
	snprintf(free_slot->id, sizeof(free_slot->id), "%s", id);
	free_slot->shards = shards;
	free_slot->age = ++j->clock;
	return free_slot;
}

int task_join__event(struct task_join *j, const Ember__TaskEvent *ev, uint32_t analyzer,
		     Ember__TaskEvent__State *ret_state)
{
	const Ember__Task *t = ev->task;
	uint64_t bit = 1ull << (analyzer % MAX_SHARDS);
	struct join *e;
	int first;

	*ret_state = ev->state;
	if (!t || !t->id || t->shards <= 1 || analyzer >= MAX_SHARDS || strlen(t->id) >= ID_LEN)
		return 1;
	e = find_or_add(j, t->id, t->shards > MAX_SHARDS ? MAX_SHARDS : t->shards);
	switch (ev->state) {
	case EMBER__TASK_EVENT__STATE__STARTED:
		first = !e->started;
		e->started |= bit;
		return first;
	case EMBER__TASK_EVENT__STATE__FINISHED:
	case EMBER__TASK_EVENT__STATE__FAILED:
		e->ended |= bit;
		e->failed |= ev->state == EMBER__TASK_EVENT__STATE__FAILED;
		if ((unsigned)__builtin_popcountll(e->ended) < e->shards)
			return 0;
		*ret_state = e->failed ? EMBER__TASK_EVENT__STATE__FAILED : EMBER__TASK_EVENT__STATE__FINISHED;
		j->st.joined++;
		memset(e, 0, sizeof(*e));
		return 1;
	default:
		return 1;
	}
}
