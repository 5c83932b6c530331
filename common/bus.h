/*
 * ZeroMQ + protobuf-c plumbing shared by the analyzer, the exporter and the
 * CLI.  Analyzers PUSH Envelopes to the exporter's PULL socket (not PUB/SUB:
 * PUB drops silently at the high-water mark and while no subscriber is
 * connected; PUSH with ZMQ_DONTWAIT reports EAGAIN, which we count, and
 * queues for an exporter that is restarting).  The CLI and REST API talk to
 * an analyzer with REQ/REP Request/Reply messages.
 */
#ifndef EMBER_BUS_H
#define EMBER_BUS_H

#include <stddef.h>
#include "proto/ember.pb-c.h"
#include "common/counters.h"

#define BUS_MAX_MSG (64u << 20) /* received messages above this are refused by ZeroMQ */

/*
 * The run directory is root's (the collector's socket, the supervisor's
 * files); each unprivileged user binds its sockets and keeps its state in a
 * directory of its own under it, which the other may only traverse (group):
 * neither can replace the other's sockets, and root writes nothing there.
 */
#define BUS_ANALYZER_DIR "analyzer"   /* ember.user's: analyzer-N.ctl, analyzer-N.tasks, debuginfod/ */
#define BUS_EXPORTER_DIR "exporter"   /* ember.exporter_user's: exporter.sock, exporter.ctl */

/* Endpoint names under run_dir (buf >= 160 bytes). */
void bus__exporter_endpoint(const char *run_dir, char *buf, size_t len);
void bus__analyzer_endpoint(const char *run_dir, unsigned shard, char *buf, size_t len);
void bus__exporter_ctl_endpoint(const char *run_dir, char *buf, size_t len);

/* Packs and sends without blocking: 0, -EAGAIN (high-water mark: caller counts a drop) or -errno. */
int bus__send_envelope(void *sock, const Ember__Envelope *env);
int bus__send_reply(void *sock, const Ember__Reply *rep);
/* Receives one message and unpacks it; NULL + errno (EAGAIN when nothing is there, EBADMSG when it does not decode). */
Ember__Envelope *bus__recv_envelope(void *sock, int flags);
Ember__Request *bus__recv_request(void *sock, int flags);
Ember__Reply *bus__recv_reply(void *sock, int flags);

/* One REQ/REP round trip with a timeout; *ret must be freed with ember__reply__free_unpacked. */
int bus__call(void *zctx, const char *endpoint, const Ember__Request *req, Ember__Reply **ret, int timeout_ms);
/* The same round trip for a loop that must not wait: the request queued (ZMQ_DONTWAIT) on a REQ
 * socket of its own, returned (NULL + errno); the caller polls it for ZMQ_POLLIN, takes the answer
 * with bus__recv_reply(sock, ZMQ_DONTWAIT), keeps its own deadline and zmq_close()s it. */
void *bus__call_start(void *zctx, const char *endpoint, const Ember__Request *req);

/* Helpers to fill meters. */
void bus__meter_init(Ember__Meter *m, const char *name, double value, int is_counter, uint64_t ts_ms);

/* Room for a program's own counters: the exporter's with every backend's, or an analyzer's. */
#define BUS_METER_SET_MAX 416
#define BUS_METER_NAME_LEN 64

/*
 * A program's own meters for one batch or stats reply, built in place: ptrs
 * and n go into Ember__MeterBatch.meters / Ember__Reply.stats as they are.
 */
struct bus_meter_set {
	Ember__Meter m[BUS_METER_SET_MAX];
	Ember__Meter *ptrs[BUS_METER_SET_MAX];
	char names[BUS_METER_SET_MAX][BUS_METER_NAME_LEN];
	Ember__Label **labels;  /* on every meter added, not copied */
	size_t n_labels;
	unsigned n;
};

/* Empties the set; the meters added next carry labels[0, n_labels) (may be NULL, 0). */
void bus__meter_set_reset(struct bus_meter_set *ms, Ember__Label **labels, size_t n_labels);

/*
 * Adds the meter "ember_<name>" (truncated to BUS_METER_NAME_LEN - 1 bytes).
 * Returns 0, or -ENOSPC when the set is full (the meter is left out).
 */
int bus__meter_set_add(struct bus_meter_set *ms, const char *name, double value, int is_counter,
		       uint64_t ts_ms);

/*
 * The process's own memory as gauges "ember_<who>_rss_bytes", "..._rss_peak_bytes"
 * and, on jemalloc, "..._jemalloc_allocated_bytes" / "..._jemalloc_resident_bytes".
 */
/*
 * Adds the meters of one module's counters (common/counters.h): v[i] as
 * defs[i] says, in index order.  Returns 0, or -ENOSPC when the set filled
 * (the meters past it are left out).
 */
int bus__meter_set_add_counters(struct bus_meter_set *ms, const struct counter_def *defs, const uint64_t *v,
				unsigned n, uint64_t ts_ms);

void bus__meter_set_add_memory(struct bus_meter_set *ms, const char *who, uint64_t ts_ms);

#endif
