/*
 * What every `ember` subcommand shares: usage errors, the configuration
 * from --config / the environment / --set, and the checks a command that
 * starts BPF work makes first.
 */
#ifndef EMBER_CLI_ARGS_H
#define EMBER_CLI_ARGS_H

#include <stddef.h>

#include "common/config.h"

/* Prints "ember CMD: MSG 'ARG'" and a pointer to --help; returns 2 (usage error). */
int cli__die_usage(const char *cmd, const char *msg, const char *arg);

/* The directory of the running `ember` binary (where its sibling programs are).  0 or -errno. */
int cli__bin_dir(char *buf, size_t len);

/* --config / --set / environment, in that order of precedence (lowest first). */
struct cfg_args {
	const char *path;
	const char *sets[64];
	unsigned nsets;
};

/* The effective configuration, or NULL after printing what is wrong (naming the key). */
struct ember_config *cli__load_config(const char *cmd, const struct cfg_args *a);

/* Root and a kernel with BTF: 0, or 1 after saying which is missing. */
int cli__preflight(const char *cmd);

#endif
