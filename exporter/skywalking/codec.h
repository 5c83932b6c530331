/*
 * The pure parts of the SkyWalking backend: decoding the OAP's profiling task
 * commands (untrusted input: every argument is bounds-checked; a NETWORK
 * task's sampling rules in samplings.c), and building
 * the messages the OAP accepts from ember's internal ones (spec
 * ../shared/spec/skywalking-protocol.md sections 2.3, 2.5, 2.10 and 3).
 * No I/O, no logging.
 */
#ifndef EMBER_EXPORTER_SKYWALKING_CODEC_H
#define EMBER_EXPORTER_SKYWALKING_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter/net_meters.h"
#include "exporter/skywalking/grpc_client.h"
#include "proto/ember.pb-c.h"
#include "proto/sw_common.pb-c.h"

#define SW_MAX_ID          128	/* bytes of a task or process id, NUL included */
#define SW_MAX_PROCESS_IDS 64	/* per command; a NETWORK task lists an instance's processes */
#define SW_MAX_EXT_JSON    (64u << 10)
#define SW_NAME_MAX        70	/* the OAP's default service / instance name limit */
#define SW_MISSING         "[MISSING]"

enum sw_target { SW_TARGET_NONE = 0, SW_TARGET_ON_CPU, SW_TARGET_OFF_CPU, SW_TARGET_NETWORK };

/* The OAP's name of a target type ("ON_CPU", ...); NULL for NONE or another number. */
const char *sw_target__name(enum sw_target t);
/* The target type a name spells, exactly; SW_TARGET_NONE for any other text (or NULL). */
enum sw_target sw_target__of(const char *name);
/*
 * An ember kind's target type and back, through the kinds' OAP names
 * (common/profile_kind.h).  The OAP's targets are ON_CPU, OFF_CPU and
 * NETWORK, and the tasks and triggers that cross here are of those kinds
 * only; any other number maps to ON_CPU.
 */
Ember__TaskKind sw_target__kind(enum sw_target t);
enum sw_target sw_target__of_kind(Ember__TaskKind k);
enum sw_trigger { SW_TRIGGER_NONE = 0, SW_TRIGGER_FIXED_TIME };

struct sw_task_cmd {
	char task_id[SW_MAX_ID];
	char process_ids[SW_MAX_PROCESS_IDS][SW_MAX_ID];
	unsigned n_process_ids;
	int64_t update_time_ms;
	int64_t start_time_ms;
	int64_t duration_s;
	enum sw_trigger trigger;
	enum sw_target target;
	bool extension_null;	/* ExtensionConfigJSON was the literal null */
};

/*
 * One `EBPFProfilingTaskQuery` command.  0; -ENOENT when the command has
 * another name (not ours to run); -EINVAL with the reason in why for a
 * missing, duplicate, oversized or malformed argument, an unknown trigger or
 * target type, or an ON_CPU/OFF_CPU task's ExtensionConfigJSON that is not
 * valid JSON (a NETWORK task's is left to sw_codec__decode_samplings).
 */
int sw_codec__decode_task(const Skywalking__V3__Command *c, struct sw_task_cmd *ret, char *why, size_t whylen);

#define SW_MAX_SAMPLINGS 16	/* sampling rules per NETWORK task */
#define SW_MAX_URI_REGEX 256	/* bytes of a rule's URI regex, NUL included */

/* One rule of ExtensionConfigJSON's NetworkSamplings, as proto NetSampling carries it. */
struct sw_sampling {
	char uri_regex[SW_MAX_URI_REGEX];	/* "" = every URI (the default rule) */
	bool has_min_duration;			/* false: nothing is sampled as slow */
	uint32_t min_duration_ms;
	bool when_4xx, when_5xx;
	bool complete_request, complete_response;
	uint32_t max_request_size, max_response_size;	/* 0: no bound of the rule's own */
};

/*
 * A NETWORK task's ExtensionConfigJSON (spec section 2.10, untrusted):
 * {"NetworkSamplings": [rule...]}, each rule {"URIRegex", "MinDuration",
 * "When4xx", "When5xx", "Settings": {"RequireCompleteRequest",
 * "MaxRequestSize", "RequireCompleteResponse", "MaxResponseSize"}}.  As
 * Rover's decoder (Go's encoding/json) reads it: keys match whatever their
 * case, the last of duplicates wins, other keys are ignored, an absent or
 * null value means none / false / 0, a negative MinDuration or size the
 * same as 0 (every duration; no bound).  The literal null, or an object
 * without NetworkSamplings (or null there): no rules.
 *
 * Returns the number of rules written to ret[0..max), or -EINVAL with the
 * reason in why: text that is not one JSON value (or longer than
 * SW_MAX_EXT_JSON, or nested deeper than 32), a value of the wrong type
 * (the top and every rule must be objects, NetworkSamplings an array,
 * flags booleans, numbers integers within int32), more than max rules, or
 * a URI regex of SW_MAX_URI_REGEX bytes or more, holding a NUL, or that
 * regcomp(REG_EXTENDED) refuses (the analyzers compile it so), or whose
 * automaton glibc would blow up on (samplings.c says which).
 */
int sw_codec__decode_samplings(const char *json, struct sw_sampling *ret, unsigned max, char *why, size_t whylen);

/* The text as one JSON value (trailing blanks allowed), at most SW_MAX_EXT_JSON bytes and nested 32 deep:
 * 0 with the value in *ret (NULL for the value null; the caller puts it), or -EINVAL. */
struct json_object;
int sw_codec__json_parse(const char *s, struct json_object **ret);

/* Strict non-negative decimal int64 (no sign, no spaces, no leading '+'): 0 or -EINVAL/-ERANGE. */
int sw_codec__parse_i64(const char *s, int64_t *ret);

/* Packed messages. */
struct sw_msgs {
	struct grpc_msg *v;
	size_t n, cap;
	size_t bytes;
};
void sw_msgs__release(struct sw_msgs *m);
/* msg packed and appended to m: 0 or -ENOMEM. */
int sw_msgs__push(struct sw_msgs *m, const ProtobufCMessage *msg);

struct sw_profile_meta {
	const char *task_id;
	const char *process_id;
	int64_t profiling_start_ms;
	int64_t current_ms;
	bool off_cpu;
	bool with_task;		/* set `task` on the first message */
};

struct sw_profile_stats {
	uint64_t messages;	/* EBPFProfilingData built */
	uint64_t merged;	/* samples folded into an identical (kernel, user) pair */
	uint64_t empty;		/* samples without any frame: dropped */
	uint64_t missing;	/* frames sent as [MISSING] */
	uint64_t saturated;	/* counts above INT32_MAX, clamped */
};

/*
 * One EBPFProfilingData per unique (kernel stack, user stack) of the batch,
 * appended to out: kernel stack first, symbols innermost first, unresolved
 * frames as [MISSING], dumpCount (on-CPU) or switchCount + duration (off-CPU).
 * 0 or -ENOMEM (out keeps what was appended).
 */
int sw_codec__build_profile(const Ember__ProfileBatch *b, const struct sw_profile_meta *m, struct sw_msgs *out,
			    struct sw_profile_stats *st);

struct sw_meter_opts {
	const char *service;
	const char *instance;
	const char *net_prefix;	/* replaces rover_net_p */
	const char *con_prefix;	/* replaces rover_con_p */
};

struct sw_meter_stats {
	uint64_t meters;
	uint64_t dup_labels;	/* duplicate label names dropped (the OAP rejects them) */
	uint64_t bad;		/* meters without a usable name */
};

/* A MeterDataCollection (one batch for one service instance; every element
 * carries service, instance and a non-zero timestamp), appended to out.
 * Returns the number of meters in it (0: nothing appended) or -ENOMEM. */
int sw_codec__build_meters(const Ember__MeterBatch *b, const struct sw_meter_opts *o, int64_t now_ms,
			   struct sw_msgs *out, struct sw_meter_stats *st);

/* Meter names as MAL wants them: [A-Za-z_][A-Za-z0-9_]*, prefixes replaced. buf >= 256. */
int sw_codec__meter_name(const char *name, const struct sw_meter_opts *o, char *buf, size_t len);

/* A network batch's collection past this many bytes is closed and another begun. */
#define SW_NET_COLLECTION_MAX (1u << 20)

/*
 * A MeterDataCollection of network meters (Rover's, exporter/net_meters.h)
 * for one service instance, built one flow's meter set at a time: each
 * MeterData is packed as it is added, so the caller reuses one set.  As
 * Rover sends them, only the first MeterData carries service,
 * serviceInstance and timestamp; histograms send every bucket as
 * (lower bound, count).  Zero-initialise it, then set service, instance
 * and timestamp_ms (> 0).
 */
struct sw_net_collection {
	const char *service, *instance;
	int64_t timestamp_ms;
	uint8_t *buf;
	size_t len, cap, meters;
	uint64_t bad;		/* meters without a usable name */
};
/* 0 or -ENOMEM (c keeps what it had). */
int sw_codec__net_collection_add(struct sw_net_collection *c, const struct net_meter_set *s);
/* Appends the collection to out as one message (nothing when empty) and
 * empties c for the next one; returns the number of meters it had or -ENOMEM. */
int sw_codec__net_collection_finish(struct sw_net_collection *c, struct sw_msgs *out);
void sw_codec__net_collection_release(struct sw_net_collection *c);

#endif
