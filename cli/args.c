#include "cli/args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/cp_policy.h"

int cli__die_usage(const char *cmd, const char *msg, const char *arg)
{
	fprintf(stderr, "ember %s: %s%s%s%s\n", cmd, msg, arg ? " '" : "", arg ? arg : "", arg ? "'" : "");
	fprintf(stderr, "Try 'ember %s --help'.\n", cmd);
	return 2;
}

int cli__bin_dir(char *buf, size_t len)
{
	ssize_t n = readlink("/proc/self/exe", buf, len - 1);
	char *slash;

	if (n <= 0)
		return -errno;
	buf[n] = 0;
	slash = strrchr(buf, '/');
	if (slash)
		*slash = 0;
	return 0;
}

struct ember_config *cli__load_config(const char *cmd, const struct cfg_args *a)
{
	struct ember_config *cfg = config__new();
	char err[512];

	if (!cfg)
		return NULL;
	if (a->path && config__load_file(cfg, a->path, err, sizeof(err)))
		goto bad;
	if (config__load_env(cfg, err, sizeof(err)))
		goto bad;
	for (unsigned i = 0; i < a->nsets; i++) {
		char key[256];
		const char *eq = strchr(a->sets[i], '=');
		if (!eq || eq == a->sets[i] || (size_t)(eq - a->sets[i]) >= sizeof(key)) {
			snprintf(err, sizeof(err), "--set needs KEY=VALUE, got '%s'", a->sets[i]);
			goto bad;
		}
		memcpy(key, a->sets[i], eq - a->sets[i]);
		key[eq - a->sets[i]] = 0;
		if (config__set(cfg, key, eq + 1, err, sizeof(err)))
			goto bad;
	}
	{
		char why[CP_PROBLEM_MAX + 64];

		if (cp_policies__check_local(cfg->profiling.continuous.policies, why, sizeof(why))) {
			snprintf(err, sizeof(err), "profiling.continuous.policies: %s", why);
			goto bad;
		}
	}
	if (cfg->ember.rest_api.enabled && cfg->ember.rest_api.ssl_auth &&
	    (!*cfg->ember.rest_api.private_key || !*cfg->ember.rest_api.cert_file || !*cfg->ember.rest_api.ca_file)) {
		snprintf(err, sizeof(err), "ember.rest_api.ssl_auth needs ember.rest_api.private_key, cert_file and ca_file");
		goto bad;
	}
	return cfg;
bad:
	fprintf(stderr, "ember %s: %s\n", cmd, err);
	config__free(cfg);
	return NULL;
}

int cli__preflight(const char *cmd)
{
	if (geteuid() != 0) {
		fprintf(stderr, "ember %s: must run as root (it loads BPF programs; the analyzer and exporter then "
				"run as an unprivileged user)\n", cmd);
		return 1;
	}
	/* EMBER_BTF_PATH lets tests play a kernel without BTF. */
	const char *btf = getenv("EMBER_BTF_PATH") ? getenv("EMBER_BTF_PATH") : "/sys/kernel/btf/vmlinux";
	if (access(btf, R_OK)) {
		fprintf(stderr, "ember %s: this kernel has no BTF (%s missing); ember needs a "
				"kernel built with CONFIG_DEBUG_INFO_BTF=y\n", cmd, btf);
		return 1;
	}
	return 0;
}
