/*
 * The analyzer's request server: one ZeroMQ REP socket (mode 0600 under the
 * run directory: only the agent's uid and root reach it) on which the CLI,
 * the exporter's OAP poller (and the REST API) submit, cancel and list tasks
 * and read the analyzer's counters.  Requests are untrusted bytes: a message
 * that does not decode is answered with an error and counted.
 */
#ifndef EMBER_ANALYZER_REQUESTS_H
#define EMBER_ANALYZER_REQUESTS_H

#include <stdint.h>

#include "analyzer/runner.h"
#include "analyzer/tasks.h"
#include "common/bus.h"
#include "common/config.h"
#include "common/counters.h"

struct request_server;

struct requests_opts {
	struct task_runner *runner;
	struct task_mgr *tm;
	const struct ember_config *cfg;   /* defaults of a submitted task's parameters */
	unsigned shard;
	/* Fills the analyzer's meters for a stats request. */
	void (*meters)(void *ctx, struct bus_meter_set *ms);
	/* Replaces the OAP's continuous-profiling policies: 0, or -errno with the reason in err. */
	int (*policies)(void *ctx, const Ember__PolicySet *ps, char *err, size_t errlen);
	void *ctx;
};

/* Binds endpoint.  Everything in o is borrowed.  NULL + errno. */
struct request_server *requests__new(void *zctx, const char *endpoint, const struct requests_opts *o);
/* The socket to poll for ZMQ_POLLIN. */
void *requests__socket(struct request_server *s);
/* Answers the requests waiting, without blocking. */
void requests__handle(struct request_server *s);

enum requests_stat {
	RQS_REQUESTS,
	RQS_BAD_REQUESTS,       /* undecodable or unknown: answered with an error */
	RQS_REPLY_ERRORS,       /* replies that could not be sent */
	RQS_MAX
};
/* Their names and natures (common/counters.h), by enum requests_stat. */
extern const struct counter_def requests_counters[RQS_MAX];
void requests__stats(const struct request_server *s, uint64_t ret[RQS_MAX]);

/* Accepts NULL.  Returns NULL. */
struct request_server *requests__free(struct request_server *s);

#endif
