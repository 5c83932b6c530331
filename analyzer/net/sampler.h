/*
 * HTTP sampling of a network task (the OAP's NetworkSamplings, Rover's
 * semantics, ../shared/spec/skywalking-protocol.md 4.5): an HTTP exchange
 * that carries a trace context (sw8, b3, or x-b3-traceid with x-b3-spanid)
 * is matched against the task's rules: the first rule whose URI regex
 * matches, else the rule without one.  It is sampled as status_5xx or
 * status_4xx when the rule asks for those statuses, else as slow when its
 * duration reaches the rule's minimum.  Per report interval at most the 10
 * slowest per URI and reason are kept (SAMPLER_MAX_KEYS URIs x reasons),
 * with the request and response bodies the rule asks for; the rest are
 * counted.  An exchange a rule would sample but that carries no trace
 * context (or only a malformed one) is counted too: the OAP files a sampled
 * trace under its trace id, so there is nothing to send, and without the
 * count a user sees rules that never fire.
 *
 * Trace ids are decoded here: sw8 is "1-<base64 trace id>-<base64 segment
 * id>-<span id>-...", b3 "<trace id>-<span id>[-...]".  Header values are
 * untrusted: a malformed one is no trace context.
 */
#ifndef EMBER_ANALYZER_NET_SAMPLER_H
#define EMBER_ANALYZER_NET_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "l7/l7.h"
#include "analyzer/tasks.h"
#include "proto/ember.pb-c.h"

#define SAMPLER_TOP 10
#define SAMPLER_MAX_KEYS 100
#define SAMPLER_BODY_DEFAULT 4096  /* a rule's max size when it gives none */
#define SAMPLER_BODY_MAX 65536

/*
 * A system call (or TLS library call) behind an exchange, with the packets
 * under it (Rover's "Syscall <name>" events of a sampled trace).
 */
#define SAMPLER_MAX_CALLS 16
struct sampler_call {
	uint64_t start_unix_ns, end_unix_ns;
	const char *name;           /* static: "Write", "SslRead", ... */
	uint32_t pkts;
	uint64_t pkt_bytes;
	uint32_t ifindex;           /* named at keep time (if_indextoname) */
	uint32_t rtt_us;
};

/* Where an exchange happened, copied into a kept sample. */
struct sampler_ctx {
	uint32_t pid;
	const char *process_name;
	uint64_t connection_id;
	const char *side;           /* "client" / "server" */
	const char *peer;           /* ip:port */
	const char *local;          /* ip:port */
	uint64_t req_unix_ns;
	uint32_t peer_pid;          /* the peer process when followed too, else 0 */
	bool peer_local;
	bool ssl;                   /* the connection carries TLS (its plaintext came from the TLS probes) */
	/* The calls from the request's first byte to the response's last, oldest first (kept by rules that want bodies). */
	const struct sampler_call *calls;
	unsigned ncalls;
};

struct sampler;

/* NULL (errno EINVAL: a regex does not compile, ENOMEM) or the task's sampler. */
struct sampler *sampler__new(const struct task_def *t);
/* Body bytes the parsers must keep for this task's rules (0: none asks for them). */
size_t sampler__body_limit(const struct sampler *s);
/* An exchange of the task (HTTP only); kept if it is traced, matches and is among the slowest. */
void sampler__offer(struct sampler *s, const struct l7_record *r, const struct sampler_ctx *c);
/* What a report interval did not keep, by reason. */
struct sampler_counts {
	uint64_t not_kept;          /* sampled, but over the per-URI and reason bound */
	uint64_t no_trace;          /* a rule would sample it; no sw8, b3 or x-b3-traceid header */
	uint64_t bad_trace;         /* ... a trace header, none of them well-formed */
};
/* The report's samples (valid until sampler__reset) and what was not kept. */
size_t sampler__take(struct sampler *s, Ember__NetSampledTrace ***ret, struct sampler_counts *counts);
void sampler__reset(struct sampler *s);
/* Accepts NULL.  Returns NULL. */
struct sampler *sampler__free(struct sampler *s);

/*
 * Exposed for tests: the trace context of an exchange's fields.  1 if found,
 * 0 if there is no trace header, -EINVAL if there are only malformed ones.
 */
struct sampler_trace { const char *provider; char trace_id[128], segment_id[128], span_id[64]; };
int sampler__trace_of(const struct l7_record *r, struct sampler_trace *ret);

#endif
