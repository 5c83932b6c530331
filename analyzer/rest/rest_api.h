/*
 * gala-gopher's REST control API (the manual's "REST Dynamic Configuration
 * Interface"), served by the first analyzer on a thread of its own
 * (libmicrohttpd, driven by that thread; the collector never sees it):
 *
 *   PUT /<feature>   body json=<document> (rest_doc.h): the feature's whole
 *                    new configuration, applied all or nothing.
 *                    200 "New config takes effect" (plus what was ignored);
 *                    400 with the reason; 413 over max_body
 *   GET /<feature>   200, the configuration as a document
 *   other methods    405; a path that is no feature: 404 listing ember's;
 *                    a feature of gala-gopher that ember does not provide:
 *                    501 saying so and listing ember's
 *
 * With ssl_auth: HTTPS with the configured key and certificate, and a
 * request is served only when its client presented a certificate that
 * ca_file signed (403 otherwise).  Features run through the analyzers like
 * any client's tasks (common/task_submit.h): the REST thread only submits.
 */
#ifndef EMBER_ANALYZER_REST_REST_API_H
#define EMBER_ANALYZER_REST_REST_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/counters.h"

struct rest_api_opts {
	const char *address;
	uint16_t port;
	size_t max_body;
	bool ssl_auth;
	const char *private_key, *cert_file, *ca_file;	/* PEM files (ssl_auth) */
	const char *run_dir;		/* the agent's */
	unsigned analyzers;
	unsigned max_pids;
	uint32_t self_uid;		/* processes of this user are never selected (0: none) */
};

enum rest_api_stat {
	RAS_REQUESTS, RAS_PUTS_APPLIED, RAS_PUTS_REFUSED, RAS_GETS,
	RAS_NOT_FOUND, RAS_NOT_ALLOWED, RAS_UNAUTHORIZED, RAS_TOO_LARGE,
	RAS_TASKS_STARTED, RAS_TASK_FAILURES,
	RAS_NET_FOLLOWED,		/* a level: processes the l7 and tcp features follow now */
	RAS_FLAME_SELECTED,		/* a level: processes the flamegraph feature's snoopers select now */
	RAS_MAX
};
/* Their names and natures (common/counters.h), by enum rest_api_stat. */
extern const struct counter_def rest_api_counters[RAS_MAX];

struct rest_api;

/* Listens and starts the thread.  NULL + errno, with why in err (an address in use, a key unreadable...). */
struct rest_api *rest_api__start(const struct rest_api_opts *o, char *err, size_t errlen);
/* Stops the thread (the tasks it started end by themselves).  Accepts NULL; returns NULL. */
struct rest_api *rest_api__stop(struct rest_api *r);
/* Its counters, taken under the lock the REST thread counts under. */
void rest_api__stats(struct rest_api *r, uint64_t ret[RAS_MAX]);

#endif
