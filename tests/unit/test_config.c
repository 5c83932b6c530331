/* Unit tests for common/config: table defaults, value parsers, YAML, environment, dump round trip. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/log.h"

#define MS 1000000ULL
#define SEC 1000000000ULL

static char err[512];

static struct ember_config *new_cfg(void)
{
	struct ember_config *c = config__new();

	assert_non_null(c);
	return c;
}

static char *dump_str(const struct ember_config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(config__dump(c, f, 0), 0);
	fclose(f);
	return buf;
}

static int load(struct ember_config *c, const char *yaml)
{
	err[0] = 0;
	return config__load_string(c, yaml, strlen(yaml), err, sizeof(err));
}

#define assert_err_has(s) do { \
	if (!strstr(err, (s))) \
		fail_msg("error '%s' lacks '%s'", err, (s)); \
} while (0)

static void assert_strv(const struct config_strv *v, size_t n, ...)
{
	va_list ap;

	assert_int_equal(v->n, n);
	va_start(ap, n);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(v->v[i], va_arg(ap, const char *));
	va_end(ap);
}

static char *write_tmp(const char *text, mode_t mode)
{
	char *path = strdup("/tmp/test_config_XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

/* ---- defaults ----------------------------------------------------------- */

static void test_defaults(void **state)
{
	struct ember_config *c = new_cfg();

	/* ember's own keys (the task's list) */
	assert_string_equal(c->ember.run_dir, "/run/ember");
	assert_string_equal(c->ember.user, "ember");
	assert_int_equal(c->ember.analyzers, 1);
	assert_int_equal(c->ember.ring_size, 8u << 20);
	assert_string_equal(c->ember.output_dir, "/var/lib/ember/output");
	assert_int_equal(c->ember.log_level, LOG_LVL_INFO);
	assert_int_equal(c->ember.max_stack_entries, 8192);
	assert_int_equal(c->ember.max_task_pids, 1024);
	assert_strv(&c->exporter.backends, 2, "file", "prometheus");
	assert_int_equal(c->exporter.queue_size, 16u << 20);
	assert_int_equal(c->exporter.zmq_hwm, 10000);
	assert_string_equal(c->exporter.prometheus.address, "0.0.0.0");
	assert_int_equal(c->exporter.prometheus.port, 8888);
	assert_strv(&c->exporter.file.formats, 2, "folded", "svg");
	/* Rover's (seeds + spec section 6) */
	assert_true(c->profiling.active);
	assert_int_equal(c->profiling.check_interval_ns, 10 * SEC);
	assert_int_equal(c->profiling.flush_interval_ns, 5 * SEC);
	assert_int_equal(c->profiling.task.on_cpu.dump_period_ns, 9 * MS);
	assert_int_equal(c->profiling.task.off_cpu.min_block_time_ns, 0);
	assert_int_equal(c->profiling.task.network.report_interval_ns, 2 * SEC);
	assert_string_equal(c->profiling.task.network.meter_prefix, "rover_net_p");
	assert_int_equal(c->profiling.task.network.protocol_analyze.per_cpu_buffer, 400 * 1024);
	assert_int_equal(c->profiling.task.network.protocol_analyze.parallels, 2);
	assert_int_equal(c->profiling.task.network.protocol_analyze.queue_size, 5000);
	assert_string_equal(c->profiling.task.network.protocol_analyze.sampling.http.default_request_encoding, "UTF-8");
	assert_string_equal(c->profiling.task.network.protocol_analyze.sampling.http.default_response_encoding, "UTF-8");
	assert_string_equal(c->profiling.continuous.meter_prefix, "rover_con_p");
	assert_int_equal(c->profiling.continuous.fetch_interval_ns, 1 * SEC);
	assert_int_equal(c->profiling.continuous.check_interval_ns, 5 * SEC);
	assert_int_equal(c->profiling.continuous.trigger.execute_duration_ns, 600 * SEC);
	assert_int_equal(c->profiling.continuous.trigger.silence_duration_ns, 1200 * SEC);
	assert_string_equal(c->core.cluster_name, "");
	assert_string_equal(c->core.backend.addr, "localhost:11800");
	assert_false(c->core.backend.enable_tls);
	assert_false(c->core.backend.insecure_skip_verify);
	assert_int_equal(c->core.backend.check_period, 5);
	assert_string_equal(c->core.backend.authentication, "");
	assert_int_equal(c->process_discovery.heartbeat_period_ns, 20 * SEC);
	assert_int_equal(c->process_discovery.properties_report_period, 10);
	assert_int_equal(c->process_discovery.scanner.period_ns, 3 * SEC);
	assert_int_equal(c->process_discovery.scanner.mode, CONFIG_SCANNER_AGENT_SENSOR);
	assert_int_equal(c->process_discovery.scanner.agent.process_status_refresh_period_ns, 60 * SEC);
	assert_string_equal(c->process_discovery.scanner.regex, "[]");
	assert_int_equal(c->logger.level, CONFIG_ROVER_LOG_INFO);
	assert_false(c->access_log.active);
	assert_strv(&c->access_log.exclude_namespaces, 3, "istio-system", "cert-manager", "kube-system");
	assert_int_equal(c->access_log.flush.max_count, 10000);
	assert_int_equal(c->access_log.connection_analyze.per_cpu_buffer, 200 * 1024);
	config__free(c);
	assert_null(config__free(NULL));
}

static void test_table(void **state)
{
	const char *key, *env, *key2, *env2;
	struct ember_config *c = new_cfg();
	size_t n = 0;
	char buf[4096];

	for (size_t i = 0; (key = config__key_at(i, &env)); i++, n++) {
		/* Every key answers config__get, and --set takes its value back as
		 * --dump-config writes it (lists too: "[a, b]"; quoted strings are
		 * left to the dump test). */
		assert_true(config__get(c, key, buf, sizeof(buf)) >= 0);
		if (buf[0] == '[') {
			if (config__set(c, key, buf, err, sizeof(err)) != 0)
				fail_msg("%s: set of its own value '%s' failed: %s", key, buf, err);
		} else if (buf[0] != '"' && config__set(c, key, buf, err, sizeof(err)) != 0) {
			fail_msg("%s: set of its own value '%s' failed: %s", key, buf, err);
		}
		/* ember-only keys: EMBER_ + key, "ember." dropped, upper-cased, '.' -> '_' */
		if (!strncmp(key, "ember.", 6) || !strncmp(key, "exporter.", 9) || !strncmp(key, "symbolizer.", 11) ||
		    (env && !strncmp(env, "EMBER_", 6))) {
			char want[256] = "EMBER_";
			size_t o = 6;

			for (const char *p = strncmp(key, "ember.", 6) ? key : key + 6; *p; p++)
				want[o++] = *p == '.' ? '_' : (*p >= 'a' && *p <= 'z') ? *p - 32 : *p;
			want[o] = 0;
			assert_non_null(env);
			assert_string_equal(env, want);
		} else if (env) {
			assert_memory_equal(env, "ROVER_", 6);
		}
		for (size_t j = 0; (key2 = config__key_at(j, &env2)); j++) {
			if (j == i)
				continue;
			assert_true(strcasecmp(key, key2) != 0);
			if (env && env2)
				assert_true(strcmp(env, env2) != 0);
		}
	}
	assert_true(n >= 60);
	assert_null(config__key_at(n, &env));
	config__free(c);
}

/* ---- value parsers ------------------------------------------------------ */

static void test_parse_bool(void **state)
{
	const char *yes[] = { "true", "True", "TRUE", "yes", "on", "1", "t" };
	const char *no[] = { "false", "False", "no", "OFF", "0", "f" };
	const char *bad[] = { "", "2", "tru", "yess", " true", "true ", "-1", "nope" };
	bool b;

	for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++) {
		b = false;
		assert_int_equal(config__parse_bool(yes[i], &b), 0);
		assert_true(b);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(*no); i++) {
		b = true;
		assert_int_equal(config__parse_bool(no[i], &b), 0);
		assert_false(b);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(config__parse_bool(bad[i], &b), -EINVAL);
}

static void test_parse_duration(void **state)
{
	static const struct { const char *s; uint64_t ns; } good[] = {
		{ "9ms", 9 * MS }, { "10s", 10 * SEC }, { "1m", 60 * SEC }, { "2h", 7200 * SEC },
		{ "500us", 500000 }, { "500\xc2\xb5s", 500000 }, { "100ns", 100 }, { "0", 0 }, { "0s", 0 },
		{ "1h30m", 5400 * SEC }, { "1.5s", 1500 * MS }, { ".5s", 500 * MS }, { "1m0.25s", 60250 * MS },
		{ "0.000000001s", 1 }, { "2562047h47m16.854775807s", INT64_MAX }, { "-0s", 0 },
	};
	static const struct { const char *s; int r; } bad[] = {
		{ "", -EINVAL }, { "10", -EINVAL }, { "5x", -EINVAL }, { "s", -EINVAL }, { "1h5", -EINVAL },
		{ " 5s", -EINVAL }, { "5s ", -EINVAL }, { "5S", -EINVAL }, { "+5s", -EINVAL }, { ".s", -EINVAL },
		{ "1e3s", -EINVAL }, { "-5s", -ERANGE }, { "-1ns", -ERANGE },
		{ "2562047h47m16.854775808s", -ERANGE }, { "9223372036854775808ns", -ERANGE },
		{ "99999999999999999999999s", -ERANGE }, { "3000000h", -ERANGE },
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		v = 12345;
		if (config__parse_duration(good[i].s, &v) != 0)
			fail_msg("'%s' rejected", good[i].s);
		assert_int_equal(v, good[i].ns);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		v = 12345;
		if (config__parse_duration(bad[i].s, &v) != bad[i].r)
			fail_msg("'%s' not rejected with %d", bad[i].s, bad[i].r);
		assert_int_equal(v, 12345);	/* untouched on failure */
	}
}

static void test_parse_size(void **state)
{
	static const struct { const char *s; uint64_t b; } good[] = {
		{ "4096", 4096 }, { "0", 0 }, { "400KB", 409600 }, { "400kb", 409600 }, { "400K", 409600 },
		{ "4MiB", 4 << 20 }, { "4mib", 4 << 20 }, { "8MB", 8 << 20 }, { "1g", 1ULL << 30 },
		{ "2TiB", 2ULL << 40 }, { "17B", 17 }, { "8388607TiB", 8388607ULL << 40 },
	};
	static const struct { const char *s; int r; } bad[] = {
		{ "", -EINVAL }, { "MB", -EINVAL }, { "4 MB", -EINVAL }, { "1.5MB", -EINVAL }, { "16EiB", -EINVAL },
		{ "4MiBs", -EINVAL }, { " 4", -EINVAL }, { "0x10", -EINVAL }, { "-1", -ERANGE },
		{ "8388608TiB", -ERANGE }, { "9223372036854775808", -ERANGE }, { "18446744073709551616", -ERANGE },
	};
	uint64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		if (config__parse_size(good[i].s, &v) != 0)
			fail_msg("'%s' rejected", good[i].s);
		assert_int_equal(v, good[i].b);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		v = 7;
		if (config__parse_size(bad[i].s, &v) != bad[i].r)
			fail_msg("'%s' not rejected with %d", bad[i].s, bad[i].r);
		assert_int_equal(v, 7);
	}
}

static void test_format(void **state)
{
	static const uint64_t durs[] = { 0, 1, 999, 1000, 9 * MS, 1500 * MS, 60 * SEC, 5400 * SEC, 7200 * SEC,
					 INT64_MAX, 123456789 };
	static const uint64_t sizes[] = { 0, 1, 1023, 1024, 409600, 4 << 20, 1ULL << 30, 3ULL << 40, 1025 };
	char buf[64];
	uint64_t v;

	for (size_t i = 0; i < sizeof(durs) / sizeof(*durs); i++) {
		assert_true(config__format_duration(durs[i], buf, sizeof(buf)) > 0);
		assert_int_equal(config__parse_duration(buf, &v), 0);
		assert_int_equal(v, durs[i]);
	}
	for (size_t i = 0; i < sizeof(sizes) / sizeof(*sizes); i++) {
		assert_true(config__format_size(sizes[i], buf, sizeof(buf)) > 0);
		assert_int_equal(config__parse_size(buf, &v), 0);
		assert_int_equal(v, sizes[i]);
	}
	config__format_duration(9 * MS, buf, sizeof(buf));
	assert_string_equal(buf, "9ms");
	config__format_duration(5400 * SEC, buf, sizeof(buf));
	assert_string_equal(buf, "90m");
	config__format_size(409600, buf, sizeof(buf));
	assert_string_equal(buf, "400KiB");
	assert_int_equal(config__format_duration(9 * MS, buf, 3), -ENOSPC);
	assert_int_equal(config__format_size(409600, buf, 4), -ENOSPC);
}

/* ---- config__set: every type, bounds, errors ----------------------------- */

static void test_set(void **state)
{
	struct ember_config *c = new_cfg();
	char buf[256];

	/* int bounds */
	assert_int_equal(config__set(c, "ember.analyzers", "64", err, sizeof(err)), 0);
	assert_int_equal(c->ember.analyzers, 64);
	assert_int_equal(config__set(c, "ember.analyzers", "65", err, sizeof(err)), -ERANGE);
	assert_err_has("invalid value '65' for 'ember.analyzers'");
	assert_err_has("an integer from 1 to 64");
	assert_int_equal(config__set(c, "ember.analyzers", "0", err, sizeof(err)), -ERANGE);
	assert_int_equal(config__set(c, "ember.analyzers", "-3", err, sizeof(err)), -ERANGE);
	assert_int_equal(config__set(c, "ember.analyzers", "1e3", err, sizeof(err)), -EINVAL);
	assert_int_equal(config__set(c, "ember.analyzers", "99999999999999999999", err, sizeof(err)), -ERANGE);
	assert_int_equal(config__set(c, "ember.analyzers", "", err, sizeof(err)), -EINVAL);
	assert_int_equal(c->ember.analyzers, 64);	/* failures change nothing */

	/* ring_size: size, bounds, power of two */
	assert_int_equal(config__set(c, "ember.ring_size", "4MiB", err, sizeof(err)), 0);
	assert_int_equal(c->ember.ring_size, 4 << 20);
	assert_int_equal(config__set(c, "ember.ring_size", "3MiB", err, sizeof(err)), -EINVAL);
	assert_err_has("'3MiB' for 'ember.ring_size'");
	assert_err_has("power of two");
	assert_int_equal(config__set(c, "ember.ring_size", "32KiB", err, sizeof(err)), -ERANGE);
	assert_int_equal(config__set(c, "ember.ring_size", "2GiB", err, sizeof(err)), -ERANGE);
	assert_int_equal(config__set(c, "ember.ring_size", "65536", err, sizeof(err)), 0);
	assert_int_equal(config__set(c, "ember.ring_size", "1GiB", err, sizeof(err)), 0);
	assert_int_equal(c->ember.ring_size, 1ULL << 30);

	/* duration bounds: dump_period 1ms..1s */
	assert_int_equal(config__set(c, "profiling.task.on_cpu.dump_period", "20ms", err, sizeof(err)), 0);
	assert_int_equal(c->profiling.task.on_cpu.dump_period_ns, 20 * MS);
	assert_int_equal(config__set(c, "profiling.task.on_cpu.dump_period", "500us", err, sizeof(err)), -ERANGE);
	assert_err_has("a duration from 1ms to 1s");
	assert_int_equal(config__set(c, "profiling.task.on_cpu.dump_period", "9", err, sizeof(err)), -EINVAL);
	assert_err_has("invalid value '9' for 'profiling.task.on_cpu.dump_period'");

	/* bool */
	assert_int_equal(config__set(c, "profiling.active", "off", err, sizeof(err)), 0);
	assert_false(c->profiling.active);
	assert_int_equal(config__set(c, "profiling.active", "maybe", err, sizeof(err)), -EINVAL);
	assert_err_has("expected true or false");

	/* enum: any case in, canonical word stored */
	assert_int_equal(config__set(c, "ember.log_level", "DEBUG", err, sizeof(err)), 0);
	assert_int_equal(c->ember.log_level, LOG_LVL_DEBUG);
	assert_int_equal(config__set(c, "ember.log_level", "verbose", err, sizeof(err)), -EINVAL);
	assert_err_has("one of: error, warn, info, debug");
	assert_int_equal(config__set(c, "process_discovery.scanner.mode", "regex", err, sizeof(err)), 0);
	assert_int_equal(c->process_discovery.scanner.mode, CONFIG_SCANNER_REGEX);

	/* list with allowed words */
	assert_int_equal(config__set(c, "exporter.backends", " kafka , SkyWalking,", err, sizeof(err)), 0);
	assert_strv(&c->exporter.backends, 2, "kafka", "skywalking");
	assert_int_equal(config__set(c, "exporter.backends", "file,bogus", err, sizeof(err)), -EINVAL);
	assert_err_has("a list of: file, prometheus, skywalking, kafka, pyroscope");
	assert_int_equal(config__set(c, "exporter.backends", "file,File", err, sizeof(err)), -EINVAL);
	assert_err_has("repeated");
	assert_strv(&c->exporter.backends, 2, "kafka", "skywalking");
	assert_int_equal(config__set(c, "exporter.backends", "", err, sizeof(err)), 0);
	assert_int_equal(c->exporter.backends.n, 0);

	/* the list form --dump-config writes, with plain and quoted items */
	assert_int_equal(config__set(c, "exporter.backends", "[file, prometheus]", err, sizeof(err)), 0);
	assert_strv(&c->exporter.backends, 2, "file", "prometheus");
	assert_int_equal(config__set(c, "exporter.backends", " [ Kafka,\"skywalking\" , 'file' ] ", err, sizeof(err)), 0);
	assert_strv(&c->exporter.backends, 3, "kafka", "skywalking", "file");
	assert_int_equal(config__set(c, "exporter.backends", "[ ]", err, sizeof(err)), 0);
	assert_int_equal(c->exporter.backends.n, 0);
	assert_int_equal(config__set(c, "exporter.backends", "[file]", err, sizeof(err)), 0);
	assert_int_equal(config__set(c, "exporter.backends", "[]", err, sizeof(err)), 0);
	assert_int_equal(c->exporter.backends.n, 0);
	assert_int_equal(config__set(c, "ember.targets.cgroups",
				     "[\"/kubepods.slice/cri-containerd:\\x41b\", '/it''s', \"/\\u00e9\\\"q\"]", err,
				     sizeof(err)), 0);
	assert_strv(&c->ember.targets.cgroups, 3, "/kubepods.slice/cri-containerd:Ab", "/it's", "/\xc3\xa9\"q");
	/* malformed lists: refused, naming the key, the value kept */
	static const struct { const char *v, *why; } badl[] = {
		{ "[file, prometheus", "closing ']'" },
		{ "file, prometheus]", "unbalanced" },
		{ "file, [prometheus", "unbalanced" },
		{ "[file, [prometheus]]", "unbalanced" },
		{ "[file] kafka", "closing ']'" },
		{ "[file,,prometheus]", "item 2 is empty" },
		{ "[file, ]", "item 2 is empty" },
		{ "[, file]", "item 1 is empty" },
		{ "[\"file]", "not closed" },
		{ "[\"file\" kafka]", "must follow" },
		{ "[\"fi\\qle\"]", "unknown escape" },
		{ "[\"fi\\x4\"]", "hex digits" },
		{ "[\"fi\\x00le\"]", "NUL" },
		{ "[\"a,b\"]", "hold no ','" },
		{ "[file, bogus]", "a list of: file, prometheus" },
	};
	assert_int_equal(config__set(c, "exporter.backends", "[kafka]", err, sizeof(err)), 0);
	for (size_t i = 0; i < sizeof(badl) / sizeof(badl[0]); i++) {
		if (config__set(c, "exporter.backends", badl[i].v, err, sizeof(err)) != -EINVAL)
			fail_msg("'%s' accepted", badl[i].v);
		assert_err_has("'exporter.backends'");
		assert_err_has(badl[i].why);
		assert_strv(&c->exporter.backends, 1, "kafka");
	}

	/* strings */
	assert_int_equal(config__set(c, "ember.run_dir", "relative/dir", err, sizeof(err)), -EINVAL);
	assert_err_has("an absolute path");
	assert_int_equal(config__set(c, "profiling.task.network.meter_prefix", "", err, sizeof(err)), -EINVAL);
	assert_err_has("non-empty text");
	assert_int_equal(config__set(c, "core.cluster_name", "bad\nname", err, sizeof(err)), -EINVAL);
	assert_err_has("control characters");
	assert_int_equal(config__set(c, "core.cluster_name", "bad\xff", err, sizeof(err)), -EINVAL);
	assert_err_has("UTF-8");
	assert_int_equal(config__set(c, "core.cluster_name", "pr\xc3\xb6" "d", err, sizeof(err)), 0);
	assert_string_equal(c->core.cluster_name, "pr\xc3\xb6" "d");

	/* yaml sequence */
	assert_int_equal(config__set(c, "process_discovery.scanner.regex",
				     "[{match_cmd: \"java .*\", service_name: svc}]", err, sizeof(err)), 0);
	assert_string_equal(c->process_discovery.scanner.regex, "[{match_cmd: \"java .*\", service_name: svc}]");
	assert_int_equal(config__set(c, "process_discovery.scanner.regex", "{a: b}", err, sizeof(err)), -EINVAL);
	assert_int_equal(config__set(c, "process_discovery.scanner.regex", "[a, [b", err, sizeof(err)), -EINVAL);
	assert_err_has("YAML");

	/* unknown key, with a hint for a typo */
	assert_int_equal(config__set(c, "profiling.flush_intervall", "5s", err, sizeof(err)), -ENOENT);
	assert_err_has("unknown configuration key 'profiling.flush_intervall'");
	assert_err_has("did you mean 'profiling.flush_interval'");

	/* key=value form */
	assert_int_equal(config__set_arg(c, "ember.analyzers=5", err, sizeof(err)), 0);
	assert_int_equal(c->ember.analyzers, 5);
	assert_int_equal(config__set_arg(c, "core.backend.authentication=a=b", err, sizeof(err)), 0);
	assert_string_equal(c->core.backend.authentication, "a=b");
	assert_int_equal(config__set_arg(c, "ember.analyzers", err, sizeof(err)), -EINVAL);
	assert_err_has("not key=value");
	assert_int_equal(config__set_arg(c, "=5", err, sizeof(err)), -EINVAL);
	assert_int_equal(config__set_arg(c, "ember.analyzerz=5", err, sizeof(err)), -ENOENT);
	assert_err_has("did you mean 'ember.analyzers'");

	/* get */
	assert_int_equal(config__get(c, "ember.ring_size", buf, sizeof(buf)), 4);
	assert_string_equal(buf, "1GiB");
	assert_int_equal(config__get(c, "nope", buf, sizeof(buf)), -ENOENT);
	assert_int_equal(config__get(c, "core.backend.addr", buf, 4), -ENOSPC);
	assert_int_equal(strlen(buf), 3);
	config__free(c);
}

/* ---- YAML --------------------------------------------------------------- */

static void test_yaml_nested_and_dotted(void **state)
{
	struct ember_config *c = new_cfg();
	const char *yaml =
		"# Rover style, nested\n"
		"profiling:\n"
		"  active: false\n"
		"  flush_interval: 7s\n"
		"  task:\n"
		"    on_cpu: {dump_period: 19ms}\n"
		"    network.protocol_analyze:\n"
		"      per_cpu_buffer: 1MiB\n"
		"      sampling.http.default_request_encoding: \"GBK\"\n"
		"ember.analyzers: 4\n"
		"ember:\n"
		"  ring_size: 16MiB\n"
		"exporter.backends: [skywalking, file]\n"
		"exporter.file.formats:\n"
		"  - svg\n"
		"core.backend:\n"
		"  enable_tls: yes\n"		/* keys match case-insensitively, as Rover's loader */
		"  addr: 'oap:11800'\n"
		"process_discovery:\n"
		"  kubernetes:\n"
		"    analyzers:\n"
		"      - active: true\n"
		"        filters: [.Pod.HasContainer \"istio-proxy\"]\n"
		"        layer: MESH_DP\n"
		"      - {active: ~, labels: 'a,b'}\n";

	assert_int_equal(load(c, yaml), 0);
	assert_false(c->profiling.active);
	assert_int_equal(c->profiling.flush_interval_ns, 7 * SEC);
	assert_int_equal(c->profiling.check_interval_ns, 10 * SEC);	/* untouched */
	assert_int_equal(c->profiling.task.on_cpu.dump_period_ns, 19 * MS);
	assert_int_equal(c->profiling.task.network.protocol_analyze.per_cpu_buffer, 1 << 20);
	assert_string_equal(c->profiling.task.network.protocol_analyze.sampling.http.default_request_encoding, "GBK");
	assert_int_equal(c->ember.analyzers, 4);
	assert_int_equal(c->ember.ring_size, 16 << 20);
	assert_strv(&c->exporter.backends, 2, "skywalking", "file");
	assert_strv(&c->exporter.file.formats, 1, "svg");
	assert_true(c->core.backend.enable_tls);
	assert_string_equal(c->core.backend.addr, "oap:11800");
	assert_string_equal(c->process_discovery.kubernetes.analyzers,
			    "[{active: true, filters: [\".Pod.HasContainer \\\"istio-proxy\\\"\"], layer: MESH_DP}, "
			    "{active: ~, labels: \"a,b\"}]");
	config__free(c);
}

static void test_yaml_empty(void **state)
{
	struct ember_config *c = new_cfg();
	char *before = dump_str(c), *after;

	assert_int_equal(load(c, ""), 0);
	assert_int_equal(load(c, "# only a comment\n"), 0);
	assert_int_equal(load(c, "---\n"), 0);
	assert_int_equal(load(c, "profiling:\n"), 0);	/* an empty section */
	after = dump_str(c);
	assert_string_equal(before, after);
	free(before);
	free(after);
	config__free(c);
}

static void test_yaml_errors(void **state)
{
	static const struct { const char *yaml; const char *msg; } cases[] = {
		{ "profiling:\n  active: true\n\n  flush_intervall: 5s\n",
		  "unknown configuration key 'profiling.flush_intervall' (line 4) (did you mean 'profiling.flush_interval'?)" },
		{ "profilng:\n  active: true\n", "unknown configuration key 'profilng' (line 1) (did you mean 'profiling'?)" },
		{ "profiling.task.on_cpu.dump_perio: 9ms\n", "unknown configuration key 'profiling.task.on_cpu.dump_perio'" },
		{ "zzz: 1\n", "unknown configuration key 'zzz' (line 1)" },
		{ "profiling:\n  check_interval: soon\n", "invalid value 'soon' for 'profiling.check_interval' (line 2): expected a duration" },
		{ "ember:\n  ring_size: 3MiB\n", "invalid value '3MiB' for 'ember.ring_size' (line 2)" },
		{ "ember.analyzers: 100\n", "invalid value '100' for 'ember.analyzers' (line 1): expected an integer from 1 to 64" },
		{ "exporter.backends: [file, nfs]\n", "invalid list item 'nfs' for 'exporter.backends' (line 1)" },
		{ "exporter.backends: [file, [a]]\n", "expected a list of names" },
		{ "ember.analyzers: [1]\n", "invalid value for 'ember.analyzers' (line 1): expected a single value" },
		{ "ember.analyzers: {a: 1}\n", "expected a single value" },
		{ "ember.analyzers:\n", "missing value for 'ember.analyzers' (line 1)" },
		{ "ember.analyzers: ~\n", "missing value for 'ember.analyzers'" },
		{ "profiling: 5\n", "'profiling' is a section (line 1)" },
		{ "profiling: [a]\n", "'profiling' is a section" },
		{ "process_discovery.scanner.regex: abc\n", "expected a YAML sequence" },
		{ "ember.analyzers: 2\nember.analyzers: 3\n", "duplicate configuration key 'ember.analyzers' (line 2)" },
		{ "ember.analyzers: 2\nember:\n  analyzers: 3\n", "duplicate configuration key 'ember.analyzers' (line 3)" },
		{ "ember:\n  user: a\nember:\n  run_dir: /x\n", "duplicate configuration key 'ember' (line 3)" },
		{ "profiling:\n  Active: true\n  active: false\n", "duplicate configuration key 'profiling.active' (line 3)" },
		{ "a: &x 1\nb: *x\n", "unknown configuration key 'a'" },
		{ "ember.user: &x a\nember.run_dir: *x\n", "aliases are not supported (line 2)" },
		{ "ember.user: a\n---\nember.user: b\n", "only one YAML document is allowed (line 2)" },
		{ "- a\n- b\n", "must be a mapping of keys (line 1)" },
		{ "just text\n", "must be a mapping of keys" },
		{ "ember: {user: a\n", "YAML syntax error" },
		{ "ember:\n  user: a\n bad: indent\n", "YAML syntax error (line 3)" },
		{ "? [a]\n: b\n", "configuration keys must be plain names (line 1)" },
		{ "ember.user: \"a\\0b\"\n", "NUL byte" },
		{ "ember.user: \"a\\tb\"\n", "control characters" },
		{ "core.cluster_name: \"\\x1b[31mred\"\n", "invalid value '?[31mred'" },
		/* characters YAML readers treat as breaks or refuse raw: not in plain strings */
		{ "core.cluster_name: \"a\\x85b\"\n", "control characters" },
		{ "core.cluster_name: \"a\\u2028b\"\n", "control characters" },
		{ "core.cluster_name: \"a\\uFFFFb\"\n", "control characters" },
	};
	struct ember_config *c = new_cfg();
	char *before = dump_str(c);

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		char *after;
		int r = load(c, cases[i].yaml);

		if (r != -EINVAL && r != -ERANGE)
			fail_msg("case %zu not rejected: %s", i, cases[i].yaml);
		if (!strstr(err, cases[i].msg))
			fail_msg("case %zu: error '%s' lacks '%s'", i, err, cases[i].msg);
		/* all-or-nothing: keys before the error were not applied either */
		after = dump_str(c);
		assert_string_equal(before, after);
		free(after);
	}
	/* Invalid UTF-8 input is refused by the YAML reader. */
	assert_int_equal(config__load_string(c, "ember.user: \xff\xfe\n", 15, err, sizeof(err)), -EINVAL);
	assert_err_has("invalid YAML input");
	free(before);
	config__free(c);
}

static void test_yaml_limits(void **state)
{
	struct ember_config *c = new_cfg();
	char *big, yaml[1024];
	size_t o = 0;

	/* 16 levels are allowed, 17 are not (only yaml-seq values can nest that deep). */
	o = sprintf(yaml, "process_discovery.scanner.regex: ");
	for (int d = 0; d < 15; d++)
		yaml[o++] = '[';
	for (int d = 0; d < 15; d++)
		yaml[o++] = ']';
	yaml[o++] = '\n';
	yaml[o] = 0;
	assert_int_equal(load(c, yaml), 0);
	o = sprintf(yaml, "process_discovery.scanner.regex: ");
	for (int d = 0; d < 16; d++)
		yaml[o++] = '[';
	for (int d = 0; d < 16; d++)
		yaml[o++] = ']';
	yaml[o++] = '\n';
	yaml[o] = 0;
	assert_int_equal(load(c, yaml), -EINVAL);
	assert_err_has("nested deeper than 16 levels");

	/* Size: more than 1 MiB is refused before parsing. */
	big = malloc(CONFIG_MAX_FILE_SIZE + 2);
	assert_non_null(big);
	memset(big, '#', CONFIG_MAX_FILE_SIZE + 1);
	big[CONFIG_MAX_FILE_SIZE + 1] = 0;
	assert_int_equal(config__load_string(c, big, CONFIG_MAX_FILE_SIZE + 1, err, sizeof(err)), -EFBIG);
	assert_int_equal(config__load_string(c, big, CONFIG_MAX_FILE_SIZE, err, sizeof(err)), 0);

	/* Long values: 4095 bytes of text is the limit. */
	memcpy(big, "ember.user: ", 12);
	memset(big + 12, 'u', 4096);
	big[12 + 4096] = '\n';
	big[12 + 4097] = 0;
	assert_int_equal(load(c, big), -EINVAL);
	assert_err_has("longer than 4095 bytes");
	big[12 + 4095] = '\n';
	big[12 + 4096] = 0;
	assert_int_equal(load(c, big), 0);
	assert_int_equal(strlen(c->ember.user), 4095);
	free(big);
	config__free(c);
}

/* ---- environment -------------------------------------------------------- */

static void test_placeholders(void **state)
{
	struct ember_config *c = new_cfg();
	const char *yaml =
		"core:\n"
		"  cluster_name: ${TEST_CFG_UNSET_1:}\n"
		"  backend:\n"
		"    addr: ${TEST_CFG_ADDR:localhost:11800}\n"
		"    client_pem_path: ${TEST_CFG_UNSET_2:\"client.pem\"}\n"
		"    authentication: ${TEST_CFG_UNSET_3}\n"
		"    check_period: ${TEST_CFG_EMPTY:7}\n"
		"profiling:\n"
		"  flush_interval: ${TEST_CFG_FLUSH:5s}\n"
		"  continuous.meter_prefix: pre${TEST_CFG_ADDR:x}\n"		/* not whole-value: literal */
		"process_discovery.kubernetes.analyzers:\n"
		"  - service_name: ${TEST_CFG_UNSET_4:{{.Pod.Name}}.{{.Pod.Namespace}}}\n";

	unsetenv("TEST_CFG_UNSET_1");
	unsetenv("TEST_CFG_UNSET_2");
	unsetenv("TEST_CFG_UNSET_3");
	unsetenv("TEST_CFG_UNSET_4");
	setenv("TEST_CFG_EMPTY", "", 1);
	setenv("TEST_CFG_ADDR", "oap.example:443", 1);
	unsetenv("TEST_CFG_FLUSH");
	assert_int_equal(load(c, yaml), 0);
	assert_string_equal(c->core.cluster_name, "");
	assert_string_equal(c->core.backend.addr, "oap.example:443");
	assert_string_equal(c->core.backend.client_pem_path, "client.pem");
	assert_string_equal(c->core.backend.authentication, "");
	assert_int_equal(c->core.backend.check_period, 7);	/* empty variable = unset */
	assert_int_equal(c->profiling.flush_interval_ns, 5 * SEC);
	assert_string_equal(c->profiling.continuous.meter_prefix, "pre${TEST_CFG_ADDR:x}");
	assert_string_equal(c->process_discovery.kubernetes.analyzers,
			    "[{service_name: \"{{.Pod.Name}}.{{.Pod.Namespace}}\"}]");

	setenv("TEST_CFG_FLUSH", "3s", 1);
	assert_int_equal(load(c, yaml), 0);
	assert_int_equal(c->profiling.flush_interval_ns, 3 * SEC);
	setenv("TEST_CFG_FLUSH", "3 seconds", 1);
	assert_int_equal(load(c, yaml), -EINVAL);
	assert_err_has("invalid value '3 seconds' for 'profiling.flush_interval' (line 9)");
	unsetenv("TEST_CFG_FLUSH");
	unsetenv("TEST_CFG_ADDR");
	unsetenv("TEST_CFG_EMPTY");
	config__free(c);
}

static void test_env_override(void **state)
{
	struct ember_config *c = new_cfg();
	char *path = write_tmp("profiling:\n  check_interval: 20s\n  flush_interval: 4s\nember.analyzers: 2\n", 0600);

	setenv("ROVER_PROFILING_CHECK_INTERVAL", "30s", 1);
	setenv("EMBER_ANALYZERS", "", 1);		/* empty = unset, as Rover */
	setenv("EMBER_EXPORTER_BACKENDS", "[kafka, pyroscope]", 1);	/* as --dump-config writes it */
	setenv("ROVER_BACKEND_ENABLE_TLS", "true", 1);
	assert_int_equal(config__load_file(c, path, err, sizeof(err)), 0);
	assert_int_equal(c->profiling.check_interval_ns, 20 * SEC);
	assert_int_equal(config__load_env(c, err, sizeof(err)), 0);
	assert_int_equal(c->profiling.check_interval_ns, 30 * SEC);	/* env wins over the file */
	assert_int_equal(c->profiling.flush_interval_ns, 4 * SEC);	/* file wins over the default */
	assert_int_equal(c->ember.analyzers, 2);
	assert_strv(&c->exporter.backends, 2, "kafka", "pyroscope");
	assert_true(c->core.backend.enable_tls);

	/* A bad variable names itself and changes nothing, not even the good ones. */
	setenv("ROVER_PROFILING_CHECK_INTERVAL", "45s", 1);
	setenv("ROVER_PROFILING_TASK_NETWORK_TOPOLOGY_REPORT_INTERVAL", "2", 1);
	assert_int_equal(config__load_env(c, err, sizeof(err)), -EINVAL);
	assert_err_has("invalid value '2' in environment variable ROVER_PROFILING_TASK_NETWORK_TOPOLOGY_REPORT_INTERVAL");
	assert_err_has("profiling.task.network.report_interval");
	assert_int_equal(c->profiling.check_interval_ns, 30 * SEC);
	unsetenv("ROVER_PROFILING_TASK_NETWORK_TOPOLOGY_REPORT_INTERVAL");
	setenv("EMBER_RING_SIZE", "1000000", 1);
	assert_int_equal(config__load_env(c, err, sizeof(err)), -EINVAL);
	assert_err_has("EMBER_RING_SIZE");
	assert_err_has("power of two");
	unsetenv("EMBER_RING_SIZE");
	setenv("EMBER_EXPORTER_BACKENDS", "[kafka, pyroscope", 1);
	assert_int_equal(config__load_env(c, err, sizeof(err)), -EINVAL);
	assert_err_has("environment variable EMBER_EXPORTER_BACKENDS (key 'exporter.backends')");
	assert_err_has("closing ']'");
	assert_strv(&c->exporter.backends, 2, "kafka", "pyroscope");

	unsetenv("ROVER_PROFILING_CHECK_INTERVAL");
	unsetenv("EMBER_ANALYZERS");
	unsetenv("EMBER_EXPORTER_BACKENDS");
	unsetenv("ROVER_BACKEND_ENABLE_TLS");
	unlink(path);
	free(path);
	config__free(c);
}

/* ---- files -------------------------------------------------------------- */

static void test_load_file_errors(void **state)
{
	struct ember_config *c = new_cfg();
	char *path = write_tmp("ember.analyzers: 3\n", 0602);
	char *bigpath;
	char *big = malloc(CONFIG_MAX_FILE_SIZE + 2);

	assert_int_equal(config__load_file(c, "/nonexistent/ember.yaml", err, sizeof(err)), -ENOENT);
	assert_err_has("cannot open '/nonexistent/ember.yaml'");
	assert_int_equal(config__load_file(c, "/tmp", err, sizeof(err)), -EINVAL);
	assert_err_has("not a regular file");
	assert_int_equal(config__load_file(c, path, err, sizeof(err)), -EPERM);
	assert_err_has("writable by other users");
	chmod(path, 0644);
	assert_int_equal(config__load_file(c, path, err, sizeof(err)), 0);
	assert_int_equal(c->ember.analyzers, 3);

	memset(big, '#', CONFIG_MAX_FILE_SIZE + 1);
	big[CONFIG_MAX_FILE_SIZE + 1] = 0;
	bigpath = write_tmp(big, 0600);
	assert_int_equal(config__load_file(c, bigpath, err, sizeof(err)), -EFBIG);
	assert_err_has("larger than");
	unlink(bigpath);
	unlink(path);
	free(bigpath);
	free(path);
	free(big);
	config__free(c);
}

/* A Rover-style file (placeholders everywhere, Rover's structured lists) loads as is. */
static void test_rover_config(void **state)
{
	const char *root = getenv("EMBER_ROOT");
	struct ember_config *c = new_cfg();
	char path[4096];

	snprintf(path, sizeof(path), "%s/tests/fuzz/corpus/config/rover.yaml", root ? root : ".");
	unsetenv("ROVER_PROFILING_TASK_ON_CPU_DUMP_PERIOD");
	unsetenv("ROVER_PROCESS_DISCOVERY_KUBERNETES_NAMESPACES");
	if (config__load_file(c, path, err, sizeof(err)) != 0)
		fail_msg("%s: %s", path, err);
	assert_int_equal(c->logger.level, CONFIG_ROVER_LOG_INFO);
	assert_string_equal(c->core.backend.addr, "localhost:11800");
	assert_string_equal(c->core.backend.client_pem_path, "client.pem");
	assert_string_equal(c->core.backend.authentication, "");
	assert_int_equal(c->core.backend.check_period, 5);
	assert_int_equal(c->process_discovery.scanner.mode, CONFIG_SCANNER_REGEX);
	assert_int_equal(c->process_discovery.kubernetes.namespaces.n, 0);
	assert_non_null(strstr(c->process_discovery.kubernetes.analyzers,
			       "service_name: \"{{.Pod.ServiceName}}.{{.Pod.Namespace}}\""));
	assert_non_null(strstr(c->process_discovery.scanner.regex,
			       "instance_name: \"{{.Rover.HostIPV4 \\\"en0\\\"}}\""));
	assert_int_equal(c->profiling.task.on_cpu.dump_period_ns, 9 * MS);
	assert_int_equal(c->profiling.task.network.protocol_analyze.per_cpu_buffer, 400 * 1024);
	assert_strv(&c->access_log.exclude_namespaces, 3, "istio-system", "cert-manager", "kube-system");

	/* The placeholders' variables take effect. */
	setenv("ROVER_PROFILING_TASK_ON_CPU_DUMP_PERIOD", "19ms", 1);
	setenv("ROVER_PROCESS_DISCOVERY_KUBERNETES_NAMESPACES", "default, kube-system", 1);
	assert_int_equal(config__load_file(c, path, err, sizeof(err)), 0);
	assert_int_equal(c->profiling.task.on_cpu.dump_period_ns, 19 * MS);
	assert_strv(&c->process_discovery.kubernetes.namespaces, 2, "default", "kube-system");
	unsetenv("ROVER_PROFILING_TASK_ON_CPU_DUMP_PERIOD");
	unsetenv("ROVER_PROCESS_DISCOVERY_KUBERNETES_NAMESPACES");
	config__free(c);
}

/* ---- dump / help -------------------------------------------------------- */

/* --dump-config's form hides the token and URL credentials; the agent's own dump keeps them. */
static void test_dump_redacts_secrets(void **state)
{
	struct ember_config *c = new_cfg();
	char *buf = NULL, *whole;
	size_t len = 0;
	FILE *f;

	assert_int_equal(load(c, "core: {backend: {authentication: tok-123456}}\n"
				 "exporter: {pyroscope: {server: 'https://alice:pw-secret@pyro:4040/x'}}\n"
				 "symbolizer: {debuginfod: {urls: 'http://u:p@d1/ https://d2/'}}\n"), 0);
	f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(config__dump(c, f, CONFIG_DUMP_REDACT), 0);
	fclose(f);
	assert_null(strstr(buf, "tok-123456"));
	assert_null(strstr(buf, "pw-secret"));
	assert_null(strstr(buf, "u:p@"));
	assert_non_null(strstr(buf, "authentication: \"<redacted>\""));
	assert_non_null(strstr(buf, "https://<redacted>@pyro:4040/x"));
	assert_non_null(strstr(buf, "http://<redacted>@d1/ https://d2/"));
	whole = dump_str(c);
	assert_non_null(strstr(whole, "tok-123456"));
	assert_non_null(strstr(whole, "https://alice:pw-secret@pyro:4040/x"));
	free(whole);
	free(buf);
	config__free(c);
}

static void test_dump_round_trip(void **state)
{
	struct ember_config *c = new_cfg(), *d = new_cfg(), *e;
	char *one, *two, *three;

	/* Values that need quoting, empty lists, non-default everything-ish. */
	assert_int_equal(load(c,
		"core:\n"
		"  cluster_name: \"a: b # not a comment\"\n"
		"  backend: {addr: '[::1]:11800', authentication: \"quote\\\" back\\\\slash\", enable_TLS: true}\n"
		"ember: {user: \"-dash\", log_level: warn, ring_size: 64KiB}\n"
		"exporter.backends: []\n"
		"exporter.file.formats: [json, folded]\n"
		"process_discovery.kubernetes.namespaces: [\"null\", 'true', \"@x\"]\n"
		"process_discovery.kubernetes.analyzers: [{a: [1, {b: \"c\\td\"}]}, ~, '']\n"
		"process_discovery.scanner.regex: [\"\\x85\\u2028\\u2029\\uFEFF\\uFFFE\\x7f\\x01\", \"\xc3\xa9\"]\n"
		"profiling.task.off_cpu.min_block_time: 1.5ms\n"
		"profiling.continuous.trigger.silence_duration: 0\n"
		"logger.level: TRACE\n"), 0);
	one = dump_str(c);
	assert_int_equal(load(d, one), 0);
	two = dump_str(d);
	assert_string_equal(one, two);
	assert_string_equal(d->core.cluster_name, "a: b # not a comment");
	assert_string_equal(d->core.backend.authentication, "quote\" back\\slash");
	assert_string_equal(d->ember.user, "-dash");
	assert_int_equal(d->exporter.backends.n, 0);
	assert_strv(&d->process_discovery.kubernetes.namespaces, 3, "null", "true", "@x");
	assert_int_equal(d->profiling.task.off_cpu.min_block_time_ns, 1500000);
	assert_int_equal(d->logger.level, CONFIG_ROVER_LOG_TRACE);
	assert_string_equal(d->process_discovery.scanner.regex,
			    "[\"\\x85\\u2028\\u2029\\ufeff\\ufffe\\x7f\\x01\", \"\xc3\xa9\"]");

	/* config__dup copies deeply. */
	e = config__dup(d);
	assert_non_null(e);
	assert_ptr_not_equal(e->core.cluster_name, d->core.cluster_name);
	config__free(d);
	three = dump_str(e);
	assert_string_equal(one, three);
	free(one);
	free(two);
	free(three);
	config__free(c);
	config__free(e);

	/* The defaults round-trip as well. */
	c = new_cfg();
	d = new_cfg();
	assert_int_equal(config__set(d, "ember.analyzers", "9", err, sizeof(err)), 0);
	one = dump_str(c);
	assert_int_equal(load(d, one), 0);
	two = dump_str(d);
	assert_string_equal(one, two);
	assert_int_equal(d->ember.analyzers, 1);
	free(one);
	free(two);
	config__free(c);
	config__free(d);
}

/* The shipped file is the dump of the defaults: loadable, and in sync with the table. */
static void test_shipped_file(void **state)
{
	const char *root = getenv("EMBER_ROOT");
	struct ember_config *c = new_cfg(), *d = new_cfg();
	char path[4096];
	char *want, *got;

	snprintf(path, sizeof(path), "%s/deploy/ember.yaml", root ? root : ".");
	if (access(path, R_OK) != 0)
		fail_msg("%s missing (run the tests from the repository root)", path);
	/* Start from a non-default value so "loaded" is distinguishable from "ignored". */
	assert_int_equal(config__set(c, "ember.analyzers", "7", err, sizeof(err)), 0);
	if (config__load_file(c, path, err, sizeof(err)) != 0)
		fail_msg("%s: %s", path, err);
	want = dump_str(d);
	got = dump_str(c);
	assert_string_equal(want, got);
	free(want);
	free(got);
	config__free(c);
	config__free(d);
}

static void test_help(void **state)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	const char *key, *env;

	assert_non_null(f);
	assert_int_equal(config__help(f), 0);
	fclose(f);
	for (size_t i = 0; (key = config__key_at(i, &env)); i++) {
		char line[300];

		snprintf(line, sizeof(line), "\n%s\n", key);
		if (!strstr(buf, line) && strncmp(buf, line + 1, strlen(line + 1)))
			fail_msg("help lacks %s", key);
		if (env) {
			snprintf(line, sizeof(line), "env %s\n", env);
			assert_non_null(strstr(buf, line));
		}
	}
	assert_non_null(strstr(buf, "profiling.task.on_cpu.dump_period\n    duration, default 9ms; a duration from 1ms to 1s"));
	assert_non_null(strstr(buf, "ember.ring_size\n    size, default 8MiB; a size from 64KiB to 1GiB"));
	assert_non_null(strstr(buf, "Accepted for compatibility; not used yet."));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_defaults),
		cmocka_unit_test(test_dump_redacts_secrets),
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_parse_bool),
		cmocka_unit_test(test_parse_duration),
		cmocka_unit_test(test_parse_size),
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_yaml_nested_and_dotted),
		cmocka_unit_test(test_yaml_empty),
		cmocka_unit_test(test_yaml_errors),
		cmocka_unit_test(test_yaml_limits),
		cmocka_unit_test(test_placeholders),
		cmocka_unit_test(test_env_override),
		cmocka_unit_test(test_load_file_errors),
		cmocka_unit_test(test_rover_config),
		cmocka_unit_test(test_dump_round_trip),
		cmocka_unit_test(test_shipped_file),
		cmocka_unit_test(test_help),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
