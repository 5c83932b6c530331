/*
 * ember's configuration: one static table (common/config.c) drives YAML and
 * environment parsing, validation, defaults, --help-config and the dump of the
 * effective configuration.
 *
 * Keys follow Apache SkyWalking Rover's configuration (profiling.*, core.*,
 * process_discovery.*, access_log.*, logger.*) so an existing Rover file carries
 * over, including its `${ENV_NAME:default}` placeholders; Rover's environment
 * variable names (ROVER_...) override the file.  ember's own keys (ember.*,
 * exporter.*) use EMBER_<KEY> (upper case, '.' -> '_', the leading "ember." left
 * out: ember.ring_size -> EMBER_RING_SIZE).
 *
 * Precedence, lowest first: table defaults < file < environment < config__set()
 * (command line).  Every load function is all-or-nothing: on error the
 * configuration is left exactly as it was and `err` says why, naming the key
 * (and line, or environment variable) and the bad value.
 *
 * Value syntax:
 *   bool      true/false, yes/no, on/off, 1/0, t/f (any case)
 *   int       decimal integer, bounds per key
 *   duration  Go syntax as Rover uses: 500us, 9ms, 10s, 1m, 2h, 1h30m, 1.5s
 *             (units ns, us/µs, ms, s, m, h); a bare number is an error except
 *             "0"; stored in nanoseconds (at most INT64_MAX)
 *   size      4096, 400KB, 4MiB, 1G: K/KB/KiB = 1024 (binary, as Rover's
 *             per_cpu_buffer), M, G, T likewise; stored in bytes
 *   string    UTF-8 without control characters, at most 4095 bytes
 *   enum      one of the key's words (any case)
 *   list      YAML sequence, or one string of comma-separated items (always so
 *             in the environment); for some keys each item must be one of a
 *             set of words
 *   yaml seq  a YAML sequence kept as (canonical flow) text; Rover's structured
 *             lists that ember accepts for compatibility but does not interpret
 */
#ifndef EMBER_CONFIG_H
#define EMBER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Input limits: the file may be read by a root process, so it is untrusted. */
#define CONFIG_MAX_FILE_SIZE   (1u << 20)
#define CONFIG_MAX_DEPTH       16
#define CONFIG_MAX_VALUE_LEN   4095
#define CONFIG_MAX_LIST_ITEMS  64
#define CONFIG_MAX_YAMLSEQ_LEN (64u << 10)

/* Who may read the agent's output directories and files, besides root. */
enum config_output_access {
	CONFIG_OUTPUT_GROUP = 0,	/* the ember users' group: directories 0770, files 0660 */
	CONFIG_OUTPUT_ALL = 1,		/* every user: 0775, 0664 */
};

struct config_strv {
	char **v;	/* n strings, each owned */
	size_t n;
};

/* Field names mirror the keys; durations end in _ns; sizes are in bytes. */
struct ember_config {
	struct {
		char *run_dir;
		char *user;
		char *exporter_user;
		int64_t analyzers;
		uint64_t ring_size;
		char *output_dir;
		int log_level;			/* enum log_level (common/log.h) */
		int64_t max_stack_entries;
		int64_t max_task_pids;
		int output_access;		/* enum config_output_access */
		struct {
			struct config_strv users;	/* names or numeric uids; empty: every user */
			struct config_strv cgroups;	/* cgroup v2 paths; empty: every cgroup */
		} targets;
		struct {
			bool enabled;
			char *address;
			int64_t port;
			uint64_t max_body;
			bool ssl_auth;
			char *private_key, *cert_file, *ca_file;
		} rest_api;
	} ember;
	struct {
		struct config_strv backends;	/* file prometheus skywalking kafka pyroscope */
		uint64_t queue_size;
		int64_t zmq_hwm;
		struct {
			char *address;
			int64_t port;
		} prometheus;
		struct {
			struct config_strv formats;	/* folded svg json */
		} file;
		struct {
			int64_t max_nodes;
		} flamegraph;
		struct {
			char *server;
			char *app_name;
			uint64_t push_period_ns;
			uint64_t timeout_ns;
			int64_t max_profiles;
			int64_t max_nodes;
		} pyroscope;
		struct {
			char *broker;
			char *metric_topic, *event_topic, *meta_topic;
			int64_t batch_num_messages;
			int compression_codec;		/* w_kafka_codecs */
			int64_t queue_buffering_max_messages;
			int64_t queue_buffering_max_kbytes;
			uint64_t queue_buffering_max_ns;
			uint64_t message_timeout_ns;
			uint64_t meta_period_ns;
		} kafka;
	} exporter;
	struct {
		int level;			/* enum config_rover_log_level */
	} logger;
	struct {
		char *cluster_name;
		struct {
			char *addr;
			bool enable_tls;
			char *client_pem_path;
			char *client_key_path;
			bool insecure_skip_verify;
			char *ca_pem_path;
			int64_t check_period;	/* seconds, as in Rover */
			char *authentication;
		} backend;
	} core;
	struct {
		uint64_t heartbeat_period_ns;
		int64_t properties_report_period;
		struct {
			bool active;
			char *node_name;
			struct config_strv namespaces;
			char *analyzers;	/* yaml seq text */
		} kubernetes;
		struct {
			uint64_t period_ns;
			int mode;		/* enum config_scanner_mode */
			struct {
				uint64_t process_status_refresh_period_ns;
			} agent;
			char *regex;		/* yaml seq text */
		} scanner;
	} process_discovery;
	struct {
		bool active;
		uint64_t check_interval_ns;
		uint64_t flush_interval_ns;
		struct {
			bool tables;
			int64_t max_rows;
			int64_t max_processes;
		} unwind;
		struct {
			bool agent;
		} java;
		struct {
			struct {
				uint64_t dump_period_ns;
			} on_cpu;
			struct {
				uint64_t min_block_time_ns;
			} off_cpu;
			struct {
				uint64_t report_interval_ns;
				int64_t max_connections;
				uint64_t connection_idle_timeout_ns;
				int64_t max_exchanges_per_report;
				char *meter_prefix;
				bool tls;	/* plaintext of TLS libraries through uprobes */
				struct {
					uint64_t per_cpu_buffer;
					uint64_t max_connection_buffer;
					int64_t parallels;
					int64_t queue_size;
					struct {
						struct {
							char *default_request_encoding;
							char *default_response_encoding;
						} http;
					} sampling;
				} protocol_analyze;
			} network;
			struct {
				uint64_t stack_threshold_ns;
				int64_t max_events_per_window;
			} threads;
		} task;
		struct {
			char *meter_prefix;
			uint64_t fetch_interval_ns;
			uint64_t check_interval_ns;
			char *policies;		/* yaml seq text (common/cp_policy.h) */
			int64_t max_processes;
			struct {
				uint64_t execute_duration_ns;
				uint64_t silence_duration_ns;
			} trigger;
		} continuous;
	} profiling;
	struct {
		bool active;
		struct config_strv exclude_namespaces;
		char *exclude_cluster;
		struct {
			int64_t max_count;
			uint64_t period_ns;
		} flush;
		struct {
			uint64_t per_cpu_buffer;
			int64_t parse_parallels;
			int64_t analyze_parallels;
			int64_t queue_size;
		} connection_analyze;
		struct {
			uint64_t per_cpu_buffer;
			int64_t parse_parallels;
			int64_t analyze_parallels;
			int64_t queue_size;
		} protocol_analyze;
	} access_log;
	struct {
		struct {
			bool enabled;		/* fetch missing debug files from debuginfod servers */
			char *urls;		/* space-separated (DEBUGINFOD_URLS syntax) */
			char *cache_dir;	/* "" = <ember.run_dir>/debuginfod */
		} debuginfod;
	} symbolizer;
};

enum config_scanner_mode { CONFIG_SCANNER_AGENT_SENSOR = 0, CONFIG_SCANNER_REGEX };
enum config_rover_log_level {
	CONFIG_ROVER_LOG_PANIC = 0, CONFIG_ROVER_LOG_FATAL, CONFIG_ROVER_LOG_ERROR,
	CONFIG_ROVER_LOG_WARN, CONFIG_ROVER_LOG_INFO, CONFIG_ROVER_LOG_DEBUG, CONFIG_ROVER_LOG_TRACE,
};

/* A configuration holding the table defaults; NULL + errno (ENOMEM) on failure. */
struct ember_config *config__new(void);
/* A deep copy; NULL + errno on failure. */
struct ember_config *config__dup(const struct ember_config *cfg);
/* Accepts NULL; always returns NULL. */
struct ember_config *config__free(struct ember_config *cfg);
static inline void config__freep(struct ember_config **p) { config__free(*p); }

/*
 * Overlay a YAML file (at most CONFIG_MAX_FILE_SIZE, a regular file) or an
 * in-memory YAML text.  Keys may be nested mappings or dotted, at any level
 * (`profiling: {task.on_cpu.dump_period: 9ms}`), case-insensitively as
 * Rover's loader does.  Unknown keys, bad values, duplicates, aliases, more
 * than one document or nesting deeper than CONFIG_MAX_DEPTH are errors.
 * A scalar that is exactly `${NAME}` or `${NAME:default}` takes the value of
 * the environment variable NAME when it is set and non-empty, else `default`
 * (one pair of surrounding quotes is removed from it).
 * Returns 0 or -errno (-EINVAL or -ERANGE for bad content; -EFBIG, -ENOENT,
 * -EPERM (writable by others), ... for the file), with a message in err.
 */
int config__load_file(struct ember_config *cfg, const char *path, char *err, size_t errlen);
int config__load_string(struct ember_config *cfg, const char *text, size_t len, char *err, size_t errlen);

/* Apply every set, non-empty environment variable of the table (as Rover:
 * an empty variable counts as unset).  Errors name the variable. */
int config__load_env(struct ember_config *cfg, char *err, size_t errlen);

/* One command-line override (`--set key=value`); for lists a comma-separated
 * value, for yaml-seq keys a YAML flow sequence. */
int config__set(struct ember_config *cfg, const char *key, const char *value, char *err, size_t errlen);
/* The same from one "key=value" argument (split at the first '='). */
int config__set_arg(struct ember_config *cfg, const char *arg, char *err, size_t errlen);

/* The value of key as it would be dumped.  Returns its length, -ENOENT for an
 * unknown key, -ENOSPC if buf is too small (buf still NUL-terminated). */
int config__get(const struct ember_config *cfg, const char *key, char *buf, size_t len);

/* The table's key i (0-based) and, in ret_env, its environment variable
 * (NULL for none); NULL past the last key. */
const char *config__key_at(size_t i, const char **ret_env);

/* Every key: type, default, bounds/words, environment variable, description. */
int config__help(FILE *out);
/*
 * The effective configuration as YAML (with the help as comments) that
 * config__load_file accepts back unchanged.  -EIO on a write error.  With
 * CONFIG_DUMP_REDACT, secrets (the OAP token, passwords in URLs) are
 * written as "<redacted>": what --dump-config prints; the file the agent's
 * processes read is dumped whole.
 */
#define CONFIG_DUMP_REDACT 1u
/* s with the user:password@ part of every URL in it written as "<redacted>@", into buf (cut to len). */
void config__redact_urls(const char *s, char *buf, size_t len);
int config__dump(const struct ember_config *cfg, FILE *out, unsigned flags);

/* Value parsers shared with the CLI: 0, -EINVAL (syntax) or -ERANGE (overflow). */
int config__parse_bool(const char *s, bool *ret);
int config__parse_duration(const char *s, uint64_t *ret_ns);
int config__parse_size(const char *s, uint64_t *ret_bytes);
/* Canonical text (the largest unit that divides exactly): "9ms", "400KiB".
 * Return the length, or -ENOSPC if buf is too small. */
int config__format_duration(uint64_t ns, char *buf, size_t len);
int config__format_size(uint64_t bytes, char *buf, size_t len);

#endif
