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

#define BUS_MAX_MSG (64u << 20) /* received messages above this are refused by ZeroMQ */

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

/* One REQ/REP round trip with a timeout; *ret must be freed with ember__reply__free_unpacked. */
int bus__call(void *zctx, const char *endpoint, const Ember__Request *req, Ember__Reply **ret, int timeout_ms);

/* Helpers to fill meters. */
void bus__meter_init(Ember__Meter *m, const char *name, double value, int is_counter, uint64_t ts_ms);

#endif
