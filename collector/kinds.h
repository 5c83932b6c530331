/*
 * The profiler kinds' privileged halves (collector/tasks.h struct
 * collector_kind), built from what the collector loaded.  Adding a kind: a
 * collector/kind_<name>.c with its builder, and one line in kinds.c's table.
 */
#ifndef EMBER_COLLECTOR_KINDS_H
#define EMBER_COLLECTOR_KINDS_H

#include <stdbool.h>

#include "collector/bpf_stacks.h"
#include "collector/tasks.h"

struct bpf_stacks;
struct bpf_net;
struct bpf_threads;
struct collector;
struct net_fwd;
struct tls_links;
struct unwind_store;

/* What kinds are built from; owned by the caller, alive as long as the kinds. */
struct kinds_env {
	struct bpf_stacks *bpf;
	struct bpf_net *net;        /* NULL: the network program did not load, no network kind */
	struct net_fwd *fwd;        /* the network events' forwarder, with net */
	struct tls_links *tls;      /* NULL: no TLS probes */
	struct unwind_store *unwind;/* NULL: frame pointers only */
	struct tasks *tasks;        /* set once the table exists: a kind asks it whether a pid is watched elsewhere */
	struct bpf_threads *threads;/* NULL: the thread program did not load, no thread kind */
	struct collector *col;      /* the shards' rings (thread profiling writes its records itself) */
	bool stacks_dirty;          /* a stack task attached or started since the loop last drained */
};

/* What the families' programs are loaded with (the collector's command line and environment). */
struct kinds_load_opts {
	struct bpf_stacks_opts stacks;  /* unwind_rows becomes 0 where the kernel cannot walk tables */
	uint64_t net_buffer;            /* the network events' BPF ring buffer, bytes per CPU */
	int net_attach;                 /* enum bpf_net_attach: where the network program's chain starts (EMBER_NET_ATTACH) */
	uint32_t threads_agg;           /* thread aggregates per window set (0: 16384) */
};

/*
 * A family's loader, as root before the privilege drop: its programs and
 * stores into env.  -errno only for a family the collector cannot run
 * without (the stack program); an optional one logs why it is missing and
 * leaves its part of env NULL, and its kinds are then not built.
 */
typedef int (*kind_loader_fn)(struct kinds_env *env, struct kinds_load_opts *o);
int kind_stacks__load(struct kinds_env *env, struct kinds_load_opts *o);
int kind_net__load(struct kinds_env *env, struct kinds_load_opts *o);
int kind_threads__load(struct kinds_env *env, struct kinds_load_opts *o);
void kind_stacks__unload(struct kinds_env *env);
void kind_net__unload(struct kinds_env *env);
void kind_threads__unload(struct kinds_env *env);

/* Every family's loader, in order; 0 or the first required family's -errno. */
int kinds__load(struct kinds_env *env, struct kinds_load_opts *o);
/* What kinds__load loaded; after kinds__free. */
void kinds__unload(struct kinds_env *env);

/* A kind's builder: NULL (and errno) when it cannot run here, which is not an error for the others. */
typedef struct collector_kind *(*kind_builder_fn)(struct kinds_env *env, uint32_t kind);
struct collector_kind *kind_stacks__new(struct kinds_env *env, uint32_t kind);
struct collector_kind *kind_net__new(struct kinds_env *env, uint32_t kind);
struct collector_kind *kind_threads__new(struct kinds_env *env, uint32_t kind);
/* The thread kind's window ends (the loop's thread timer, once a second while a thread task runs). */
void kind_threads__window(struct collector_kind *k);

/* Builds every kind that can run here into ret[enum ember_task_kind]; returns the array's length. */
unsigned kinds__build(struct kinds_env *env, struct collector_kind **ret, unsigned max);
void kinds__free(struct collector_kind **kinds, unsigned n);

#endif
