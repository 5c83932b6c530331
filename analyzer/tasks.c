#include "analyzer/tasks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/ember_abi.h"

struct task_mgr {
	unsigned max, n;
	struct task_def **tasks;
};

struct task_mgr *task_mgr__new(unsigned max_tasks)
{
	struct task_mgr *tm = calloc(1, sizeof(*tm));

	if (!tm)
		return NULL;
	tm->max = max_tasks;
	tm->tasks = calloc(max_tasks, sizeof(*tm->tasks));
	if (!tm->tasks) {
		free(tm);
		errno = ENOMEM;
		return NULL;
	}
	return tm;
}

int task_def__valid_id(const char *id)
{
	size_t n = strnlen(id, TASK_ID_LEN);

	if (n == 0 || n >= TASK_ID_LEN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == ':' || c == '-'))
			return 0;
	}
	return 1;
}

struct task_def *task_mgr__find(struct task_mgr *tm, const char *id)
{
	for (unsigned i = 0; i < tm->n; i++)
		if (!strcmp(tm->tasks[i]->id, id))
			return tm->tasks[i];
	return NULL;
}

struct task_def *task_mgr__find_pid(struct task_mgr *tm, uint32_t pid, uint32_t kind)
{
	for (unsigned i = 0; i < tm->n; i++) {
		struct task_def *t = tm->tasks[i];
		if (t->kind != kind)
			continue;
		for (uint32_t j = 0; j < t->npids; j++)
			if (t->pids[j] == pid)
				return t;
	}
	return NULL;
}

int task_mgr__add(struct task_mgr *tm, const struct task_def *def, struct task_def **ret)
{
	struct task_def *t;

	if (!task_def__valid_id(def->id) || def->npids == 0 || def->npids > CTL_MAX_PIDS ||
	    def->duration_ms == 0 || def->kind < EMBER_TASK_ONCPU || def->kind > EMBER_TASK_MEM)
		return -EINVAL;
	if (task_mgr__find(tm, def->id))
		return -EEXIST;
	for (uint32_t i = 0; i < def->npids; i++) {
		if (!def->pids[i])
			return -EINVAL;
		if (task_mgr__find_pid(tm, def->pids[i], def->kind))
			return -EEXIST;
	}
	if (tm->n >= tm->max)
		return -ENOSPC;
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = *def;
	tm->tasks[tm->n++] = t;
	if (ret)
		*ret = t;
	return 0;
}

int task_mgr__remove(struct task_mgr *tm, const char *id)
{
	for (unsigned i = 0; i < tm->n; i++) {
		if (strcmp(tm->tasks[i]->id, id))
			continue;
		free(tm->tasks[i]);
		tm->tasks[i] = tm->tasks[--tm->n];
		return 0;
	}
	return -ENOENT;
}

struct task_def *task_mgr__at(struct task_mgr *tm, unsigned idx) { return idx < tm->n ? tm->tasks[idx] : NULL; }
unsigned task_mgr__count(const struct task_mgr *tm) { return tm->n; }

uint64_t task_mgr__next_deadline(struct task_mgr *tm)
{
	uint64_t best = UINT64_MAX;

	for (unsigned i = 0; i < tm->n; i++) {
		uint64_t end = tm->tasks[i]->start_unix_ms + tm->tasks[i]->duration_ms;
		if (end < best)
			best = end;
	}
	return best;
}

void task_mgr__free(struct task_mgr *tm)
{
	if (!tm)
		return;
	for (unsigned i = 0; i < tm->n; i++)
		free(tm->tasks[i]);
	free(tm->tasks);
	free(tm);
}
