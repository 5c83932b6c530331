/*
 * What ember knows about each kind of profiling, in one table that every
 * process reads: its numbers (on the ring and in the BPF maps, on the bus),
 * its names as each audience spells them, the titles and units of what it
 * produces, the files it leaves, and flags for what its samples are.  Code
 * outside a kind's own plugins (collector/kind_*.c, the analyzer's per-kind
 * processing) asks the table instead of comparing kind numbers.
 *
 * The rows (profile_kind.c) are summed up in common/README.md.
 *
 * The header needs neither the BPF ABI nor the protobuf headers, so the
 * collector may read it too; profile_kind.c checks at compile time that
 * each row's two numbers (bpf/ember_abi.h, proto TaskKind) agree.
 *
 * Adding a kind: its number in bpf/ember_abi.h and proto/ember.proto (the
 * same), one row in profile_kind.c, a PF_ file in common/profile_files.h if
 * it writes a new kind of file, and its two plugins (collector, analyzer).
 */
#ifndef EMBER_COMMON_PROFILE_KIND_H
#define EMBER_COMMON_PROFILE_KIND_H

#include <stdint.h>

/* Longest name of any spelling the lookups take; longer input is refused unread. */
#define PROFILE_KIND_NAME_MAX 16

enum profile_kind_flag {
	PROFILE_KIND_STACKS = 1u << 0,   /* samples are stacks: flame graphs, Pyroscope */
	PROFILE_KIND_WEIGHTED = 1u << 1, /* a sample also weighs (blocked ns): a weight graph beside the count graph */
	PROFILE_KIND_PERIOD = 1u << 2,   /* sampled at the task's period_ns */
	PROFILE_KIND_NETWORK = 1u << 3,  /* connections and exchanges: network batches, no stacks */
	PROFILE_KIND_THREADS = 1u << 4,  /* per-thread events: thread batches, a timeline */
	PROFILE_KIND_UNWINDS = 1u << 5,  /* its programs walk user stacks with the unwind tables */
};

struct profile_kind {
	uint32_t id;                  /* enum ember_task_kind: the ring's, the BPF maps', the control protocol's */
	int wire;                     /* proto TaskKind: the bus's (the same number) */
	const char *name;             /* "oncpu": --type, file names, task ids, task.json's "kind", logs */
	const char *cli_alias;        /* also taken by `ember profile --type` beside name and oap; NULL: none */
	const char *rest;             /* gala-gopher's flamegraph sub-item; NULL: the REST API has none */
	const char *oap;              /* SkyWalking's target type; NULL: the OAP has none */
	const char *adjective;        /* "on-CPU": "%s profiling", in events and logs */
	const char *title;            /* its flame graph's title (STACKS) */
	const char *count_title;      /* WEIGHTED: the count graph's title (title is the weight graph's) */
	const char *unit;             /* what one sample is, in subtitles and count graphs (STACKS) */
	const char *weight_unit;      /* WEIGHTED: the weight graph's unit (weights are sent in ns, drawn /1000) */
	const char *pyroscope;        /* Pyroscope's profile type (the name's suffix); NULL: not sent there */
	const char *pyroscope_units;  /* its units= */
	uint64_t pyroscope_rate;      /* its sampleRate=; a PERIOD kind's when the task has no period */
	unsigned flags;               /* enum profile_kind_flag */
	unsigned files;               /* 1u << enum profile_file (common/profile_files.h): its files but task.json */
};

/* The row of a ring/ABI id or of a proto TaskKind; NULL for any other number (0 included). */
const struct profile_kind *profile_kind__by_id(uint32_t id);
const struct profile_kind *profile_kind__by_wire(int wire);

/*
 * The row a name spells, exactly (case counts), or NULL for NULL, "", an
 * unknown name or one longer than PROFILE_KIND_NAME_MAX (read no further).
 * by_cli takes what `ember profile --type` takes: the name, the alias and the
 * OAP's spelling.
 */
const struct profile_kind *profile_kind__by_name(const char *s);
const struct profile_kind *profile_kind__by_cli(const char *s);
const struct profile_kind *profile_kind__by_rest(const char *s);
const struct profile_kind *profile_kind__by_oap(const char *s);

/* The rows in id order, for loops: i from 0 until it returns NULL. */
const struct profile_kind *profile_kind__at(unsigned i);
/* The ids of the kinds with every flag of flags, as a mask (1u << id): the task table's kind sets. */
uint32_t profile_kind__mask(unsigned flags);

#endif
