/*
 * One task, several analyzers.  A task whose processes live on several
 * shards runs on each of them under one id (Task.shards > 1): every backend
 * merges their profile windows by task id, and their task events are joined
 * here, so that backends see one STARTED and one final event, sent once
 * every shard has reported its end (FAILED if any of them failed).
 *
 * The table is bounded: when it is full the oldest unfinished task is
 * forgotten (counted), and its remaining events pass through as they come.
 */
#ifndef EMBER_EXPORTER_TASK_JOIN_H
#define EMBER_EXPORTER_TASK_JOIN_H

#include <stdint.h>
#include "proto/ember.pb-c.h"

struct task_join;

/* NULL + errno. */
struct task_join *task_join__new(unsigned max_tasks);

/*
 * Whether ev, from analyzer `analyzer`, goes to the backends: 1 with the
 * state to pass in *ret_state, or 0 to hold it back (a shard's STARTED after
 * the first, or a shard's end while others still run).
 */
int task_join__event(struct task_join *j, const Ember__TaskEvent *ev, uint32_t analyzer,
		     Ember__TaskEvent__State *ret_state);

struct task_join_stats { uint64_t joined, evicted; };
void task_join__stats(const struct task_join *j, struct task_join_stats *ret);

/* Accepts NULL.  Returns NULL. */
struct task_join *task_join__free(struct task_join *j);

#endif
