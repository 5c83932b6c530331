/*
 * Which analyzer owns a process: one rule for the collector (which ring a
 * record goes to), the analyzers (which pids a task may name), the exporter
 * and the CLI (where to send a task).  Every event of a process lands in one
 * analyzer, so its connections and stacks never need merging below the
 * exporter.
 */
#ifndef EMBER_COMMON_SHARD_H
#define EMBER_COMMON_SHARD_H

#include <stdint.h>

static inline unsigned shard__of(uint32_t tgid, unsigned nshards)
{
	return nshards ? tgid % nshards : 0;
}

#endif
