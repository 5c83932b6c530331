/*
 * The names of the Python frames in the stacks the collector forwards
 * (bpf/py_abi.h): before a record whose user stack holds Python frames, one
 * EMBER_REC_PYCODE record per code object not sent yet this window, read
 * from the BPF map py_codes, into the same shard's ring (so it precedes the
 * stack there).  A window's set is bounded (PY_FWD_SLOTS); past it a name is
 * sent again.  Names gone from the map are counted (CTL_STAT_PY_NAMES_LOST).
 * Each forwarding loop (stack drain, thread windows) owns one.
 */
#ifndef EMBER_COLLECTOR_PY_FWD_H
#define EMBER_COLLECTOR_PY_FWD_H

#include <stdint.h>

#include "collector/bpf_stacks.h"
#include "collector/collector.h"

#define PY_FWD_SLOTS 4096

struct py_fwd {
	uint64_t sent[PY_FWD_SLOTS];   /* hash of (tgid, addr) | 1; 0: empty */
};

/* The names of ips' Python frames not sent this window, into sh's ring. */
void py_fwd__send(struct py_fwd *f, struct bpf_stacks *b, struct collector *col, struct collector_shard *sh,
		  uint32_t tgid, const uint64_t *ips, unsigned n);
/* A new window: every name goes out again. */
void py_fwd__window(struct py_fwd *f);

#endif
