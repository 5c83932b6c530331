/* A continuous-profiling task's cause and its message: see task_cause.h. */
#include "common/task_cause.h"

#include <stdio.h>

void task_cause__from_pb(struct task_cause *d, const Ember__TriggerCause *m)
{
	snprintf(d->monitor, sizeof(d->monitor), "%s", m->monitor ? m->monitor : "");
	d->threshold = m->threshold;
	d->current = m->current;
	d->pid = m->pid;
	d->period_s = m->period_s;
	d->count = m->count;
	d->matched = m->matched;
	snprintf(d->uri, sizeof(d->uri), "%s", m->uri ? m->uri : "");
	d->uri_is_regex = m->uri_is_regex;
	snprintf(d->policy, sizeof(d->policy), "%s", m->policy ? m->policy : "");
	snprintf(d->comm, sizeof(d->comm), "%s", m->comm ? m->comm : "");
}

void task_cause__to_pb(Ember__TriggerCause *m, const struct task_cause *c)
{
	ember__trigger_cause__init(m);
	m->monitor = (char *)c->monitor;
	m->threshold = c->threshold;
	m->current = c->current;
	m->pid = c->pid;
	m->period_s = c->period_s;
	m->count = c->count;
	m->matched = c->matched;
	m->uri = (char *)c->uri;
	m->uri_is_regex = c->uri_is_regex;
	m->policy = (char *)c->policy;
	m->comm = (char *)c->comm;
}
