/*
 * The configuration: one table (entries[] below) of every key with its type,
 * bounds, default, environment variable and help, and the code it drives:
 * value parsers, YAML and environment loading, --set, help and dump.
 *
 * One file of ~2300 lines on purpose: the table is the documentation of
 * every key and must sit next to the parsers and validators it names; half
 * of the file is the table and the YAML walking that only it uses.
 */
#include "common/config.h"
#include "common/ctl_proto.h"
#include "common/cleanup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

enum cfg_type { T_BOOL, T_INT, T_DURATION, T_SIZE, T_STRING, T_ENUM, T_STRV, T_YAMLSEQ };

static const char *const type_names[] = {
	[T_BOOL] = "bool", [T_INT] = "int", [T_DURATION] = "duration", [T_SIZE] = "size",
	[T_STRING] = "string", [T_ENUM] = "enum", [T_STRV] = "list", [T_YAMLSEQ] = "yaml sequence",
};

#define F_POW2     0x1u	/* size must be a power of two */
#define F_NONEMPTY 0x2u	/* string must not be empty */
#define F_ABSPATH  0x4u	/* string must be an absolute path */
#define F_COMPAT   0x8u	/* accepted so Rover configs load; nothing reads it yet */
#define F_SECRET   0x10u	/* never printed: --dump-config shows "<redacted>" */
#define F_URLCRED  0x20u	/* URLs whose user:password@ part --dump-config hides */

struct cfg_entry {
	const char *key;
	enum cfg_type type;
	size_t off;
	const char *def;		/* parsed like any other value */
	int64_t min, max;		/* int, duration (ns), size (bytes) */
	const char *const *words;	/* enum values / allowed list items, NULL-terminated */
	const char *env;
	unsigned flags;
	const char *help;
};

#define NS_US  1000LL
#define NS_MS  1000000LL
#define NS_S   1000000000LL
#define NS_MIN (60 * NS_S)
#define NS_H   (3600 * NS_S)
#define KIB    1024LL
#define MIB    (1024 * KIB)
#define GIB    (1024 * MIB)

/*
 * The field's C type is checked against the entry type at compile time: a
 * mismatch makes a negative array size.
 */
#define OFF(f, T) (offsetof(struct ember_config, f) + \
		   0 * sizeof(char[_Generic(((struct ember_config *)0)->f, T: 1, default: -1)]))
#define E_BOOL(k, f, d, ev, fl, h) \
	{ .key = k, .type = T_BOOL, .off = OFF(f, bool), .def = d, .env = ev, .flags = fl, .help = h }
#define E_INT(k, f, d, lo, hi, ev, fl, h) \
	{ .key = k, .type = T_INT, .off = OFF(f, int64_t), .def = d, .min = lo, .max = hi, .env = ev, \
	  .flags = fl, .help = h }
#define E_DUR(k, f, d, lo, hi, ev, fl, h) \
	{ .key = k, .type = T_DURATION, .off = OFF(f, uint64_t), .def = d, .min = lo, .max = hi, \
	  .env = ev, .flags = fl, .help = h }
#define E_SIZE(k, f, d, lo, hi, ev, fl, h) \
	{ .key = k, .type = T_SIZE, .off = OFF(f, uint64_t), .def = d, .min = lo, .max = hi, \
	  .env = ev, .flags = fl, .help = h }
#define E_STR(k, f, d, ev, fl, h) \
	{ .key = k, .type = T_STRING, .off = OFF(f, char *), .def = d, .env = ev, .flags = fl, .help = h }
#define E_ENUM(k, f, d, w, ev, fl, h) \
	{ .key = k, .type = T_ENUM, .off = OFF(f, int), .def = d, .words = w, .env = ev, .flags = fl, \
	  .help = h }
#define E_STRV(k, f, d, w, ev, fl, h) \
	{ .key = k, .type = T_STRV, .off = OFF(f, struct config_strv), .def = d, .words = w, \
	  .env = ev, .flags = fl, .help = h }
#define E_YSEQ(k, f, fl, h) \
	{ .key = k, .type = T_YAMLSEQ, .off = OFF(f, char *), .def = "[]", .flags = fl, .help = h }
#define E_YSEQD(k, f, d, fl, h) \
	{ .key = k, .type = T_YAMLSEQ, .off = OFF(f, char *), .def = d, .flags = fl, .help = h }

/* Same order as enum log_level. */
static const char *const w_log_level[] = { "error", "warn", "info", "debug", NULL };
/* Same order as enum config_rover_log_level (logrus levels). */
static const char *const w_rover_log[] = { "panic", "fatal", "error", "warn", "info", "debug", "trace", NULL };
static const char *const w_backends[] = { "file", "prometheus", "skywalking", "kafka", "pyroscope", NULL };
static const char *const w_formats[] = { "folded", "svg", "json", NULL };
/* Same order as enum config_output_access. */
static const char *const w_output_access[] = { "group", "all", NULL };
static const char *const w_scan_mode[] = { "AGENT_SENSOR", "REGEX", NULL };
/* librdkafka's compression.codec values. */
static const char *const w_kafka_codecs[] = { "none", "gzip", "snappy", "lz4", "zstd", NULL };

/* The shipped policy: on-CPU profile of any process over 80% of a core in 10 of the last 30 s. */
#define DEFAULT_POLICIES \
	"[{Name: high-cpu, MatchCmd: ., Profiling: {ON_CPU: {PROCESS_CPU: {Threshold: 80, Period: 30, Count: 10}}}}]"

#define COMPAT_NOTE " Accepted for compatibility; not used yet."

/*
 * The table.  Keys of one section must be contiguous: the dump nests them by
 * comparing each key with the previous one (a unit test checks the order).
 */
static const struct cfg_entry entries[] = {
	E_STR("ember.run_dir", ember.run_dir, "/run/ember", "EMBER_RUN_DIR", F_ABSPATH,
	      "Directory for the control sockets and the agent's state: root's alone (each unprivileged user gets a directory of its own under it); every directory above it must be root's and not writable by others."),
	E_STR("ember.user", ember.user, "ember", "EMBER_USER", F_NONEMPTY,
	      "Unprivileged user the analyzers run as (created as a system user when missing)."),
	E_STR("ember.exporter_user", ember.exporter_user, "ember-exporter", "EMBER_EXPORTER_USER", F_NONEMPTY,
	      "Unprivileged user the exporter runs as, in ember.user's group: a user of its own, so the process "
	      "that talks to the network can neither signal an analyzer nor speak to the collector (created as a "
	      "system user when missing; must differ from ember.user)."),
	E_INT("ember.analyzers", ember.analyzers, "1", 1, 64, "EMBER_ANALYZERS", 0,
	      "Analyzer processes, one shared-memory ring shard each (events are sharded by tgid)."),
	E_SIZE("ember.ring_size", ember.ring_size, "8MiB", 64 * KIB, GIB, "EMBER_RING_SIZE", F_POW2,
	       "Size of each shared-memory ring shard (a power of two)."),
	E_STR("ember.output_dir", ember.output_dir, "/var/lib/ember/output", "EMBER_OUTPUT_DIR", F_ABSPATH,
	      "Directory the file exporter writes into."),
	E_ENUM("ember.log_level", ember.log_level, "info", w_log_level, "EMBER_LOG_LEVEL", 0,
	       "Log level of the ember processes."),
	E_INT("ember.max_stack_entries", ember.max_stack_entries, "8192", 64, 1 << 20,
	      "EMBER_MAX_STACK_ENTRIES", 0, "Entries of the BPF stack trace map."),
	E_INT("ember.max_task_pids", ember.max_task_pids, "1024", 1, 1 << 20, "EMBER_MAX_TASK_PIDS", 0,
	      "Processes that profiling tasks may target at once (BPF filter map size)."),
	E_ENUM("ember.output_access", ember.output_access, "group", w_output_access, "EMBER_OUTPUT_ACCESS", 0,
	       "Who besides root may read the output directories and files (flame graphs, network.json with "
	       "queries and URIs): group = members of ember.user's group (directories 0770, files 0660), "
	       "all = every local user (0775, 0664)."),
	E_STRV("ember.targets.users", ember.targets.users, "", NULL, "EMBER_TARGETS_USERS", 0,
	       "Users (names or uids) whose processes tasks may target, enforced by the privileged collector; "
	       "empty = every user.  ember's own processes and kernel threads are never targets."),
	E_STRV("ember.targets.cgroups", ember.targets.cgroups, "", NULL, "EMBER_TARGETS_CGROUPS", 0,
	       "cgroup v2 paths (as in /proc/PID/cgroup, e.g. /system.slice/nginx.service) whose processes, "
	       "and their descendants' cgroups, tasks may target; empty = every cgroup."),
	E_BOOL("ember.rest_api.enabled", ember.rest_api.enabled, "false", "EMBER_REST_API_ENABLED", 0,
	       "Serve gala-gopher's REST control API (PUT/GET /flamegraph ...) from the first analyzer: any client "
	       "that reaches it may profile any process, so it is off unless asked for, and ssl_auth is for "
	       "anything but localhost."),
	E_STR("ember.rest_api.address", ember.rest_api.address, "127.0.0.1", "EMBER_REST_API_ADDRESS",
	      F_NONEMPTY, "Listen address of the gala-gopher compatible REST control API."),
	E_INT("ember.rest_api.port", ember.rest_api.port, "9999", 1, 65535, "EMBER_REST_API_PORT", 0,
	      "Listen port of the REST control API (gala-gopher's rest_api_server.port)."),
	E_SIZE("ember.rest_api.max_body", ember.rest_api.max_body, "8KiB", 256, 64 * KIB, "EMBER_REST_API_MAX_BODY", 0,
	       "Largest request body; larger ones are refused (413).  gala-gopher takes 2048 characters of "
	       "document; form encoding (--data-urlencode) can triple them."),
	E_BOOL("ember.rest_api.ssl_auth", ember.rest_api.ssl_auth, "false", "EMBER_REST_API_SSL_AUTH", 0,
	       "HTTPS with private_key and cert_file, and only clients whose certificate ca_file signed "
	       "(gala-gopher's rest_api_server.ssl_auth)."),
	E_STR("ember.rest_api.private_key", ember.rest_api.private_key, "", "EMBER_REST_API_PRIVATE_KEY", 0,
	      "PEM private key of the HTTPS server (ssl_auth)."),
	E_STR("ember.rest_api.cert_file", ember.rest_api.cert_file, "", "EMBER_REST_API_CERT_FILE", 0,
	      "PEM certificate of the HTTPS server (ssl_auth)."),
	E_STR("ember.rest_api.ca_file", ember.rest_api.ca_file, "", "EMBER_REST_API_CA_FILE", 0,
	      "PEM CA certificate that client certificates must be signed by (ssl_auth)."),

	E_STRV("exporter.backends", exporter.backends, "file,prometheus", w_backends,
	       "EMBER_EXPORTER_BACKENDS", 0, "Backends the exporter sends to."),
	E_SIZE("exporter.queue_size", exporter.queue_size, "16MiB", 64 * KIB, GIB, "EMBER_EXPORTER_QUEUE_SIZE",
	       0, "Data buffered per backend while it is slow or down; beyond it batches are dropped and counted."),
	E_INT("exporter.zmq_hwm", exporter.zmq_hwm, "10000", 1, 10000000, "EMBER_EXPORTER_ZMQ_HWM", 0,
	      "ZeroMQ high-water mark (messages) between the analyzers and the exporter."),
	E_STR("exporter.prometheus.address", exporter.prometheus.address, "0.0.0.0",
	      "EMBER_EXPORTER_PROMETHEUS_ADDRESS", F_NONEMPTY, "Listen address of the /metrics endpoint."),
	E_INT("exporter.prometheus.port", exporter.prometheus.port, "8888", 1, 65535,
	      "EMBER_EXPORTER_PROMETHEUS_PORT", 0,
	      "Listen port of the /metrics endpoint (gala-gopher's web_server.port)."),
	E_STRV("exporter.file.formats", exporter.file.formats, "folded,svg", w_formats,
	       "EMBER_EXPORTER_FILE_FORMATS", 0, "Files the file exporter writes per profile."),
	E_INT("exporter.flamegraph.max_nodes", exporter.flamegraph.max_nodes, "1048576", 1024, 1 << 26,
	      "EMBER_EXPORTER_FLAMEGRAPH_MAX_NODES", 0,
	      "Nodes per flame graph; stacks beyond it are merged into [truncated] and counted."),
	E_STR("exporter.pyroscope.server", exporter.pyroscope.server, "localhost:4040",
	      "EMBER_EXPORTER_PYROSCOPE_SERVER", F_NONEMPTY | F_URLCRED,
	      "Pyroscope server: host:port (gala-gopher's pyroscope_server) or an http(s):// URL; profiles go to its "
	      "/ingest."),
	E_STR("exporter.pyroscope.app_name", exporter.pyroscope.app_name, "ember", "EMBER_EXPORTER_PYROSCOPE_APP_NAME",
	      F_NONEMPTY, "Application name prefix: <app_name>.cpu|off_cpu|mem{pid=,process=,hostname=}."),
	E_DUR("exporter.pyroscope.push_period", exporter.pyroscope.push_period_ns, "30s", NS_S, NS_H,
	      "EMBER_EXPORTER_PYROSCOPE_PUSH_PERIOD", 0, "How often each process's profile is pushed (gala-gopher: 30 s)."),
	E_DUR("exporter.pyroscope.timeout", exporter.pyroscope.timeout_ns, "10s", 100 * NS_MS, 5 * NS_MIN,
	      "EMBER_EXPORTER_PYROSCOPE_TIMEOUT", 0, "Time allowed for one push; a push over it fails and is counted."),
	E_INT("exporter.pyroscope.max_profiles", exporter.pyroscope.max_profiles, "256", 1, 65536,
	      "EMBER_EXPORTER_PYROSCOPE_MAX_PROFILES", 0,
	      "Process profiles held between pushes; samples of more processes are dropped and counted."),
	E_INT("exporter.pyroscope.max_nodes", exporter.pyroscope.max_nodes, "65536", 1024, 1 << 24,
	      "EMBER_EXPORTER_PYROSCOPE_MAX_NODES", 0,
	      "Nodes per process profile between pushes; stacks beyond it are merged into [truncated] and counted."),
	E_STR("exporter.kafka.broker", exporter.kafka.broker, "localhost:9092", "EMBER_EXPORTER_KAFKA_BROKER", F_NONEMPTY,
	      "Kafka bootstrap servers, host:port[,host:port...] (gala-gopher's kafka_broker)."),
	E_STR("exporter.kafka.metric_topic", exporter.kafka.metric_topic, "gala_gopher", "EMBER_EXPORTER_KAFKA_METRIC_TOPIC",
	      F_NONEMPTY, "Topic of the metric records (gala-gopher's metric.kafka_topic)."),
	E_STR("exporter.kafka.event_topic", exporter.kafka.event_topic, "gala_gopher_event",
	      "EMBER_EXPORTER_KAFKA_EVENT_TOPIC", F_NONEMPTY, "Topic of the events (gala-gopher's event.kafka_topic)."),
	E_STR("exporter.kafka.meta_topic", exporter.kafka.meta_topic, "gala_gopher_metadata",
	      "EMBER_EXPORTER_KAFKA_META_TOPIC", F_NONEMPTY, "Topic of the metadata (gala-gopher's meta.kafka_topic)."),
	E_INT("exporter.kafka.batch_num_messages", exporter.kafka.batch_num_messages, "10000", 1, 1000000,
	      "EMBER_EXPORTER_KAFKA_BATCH_NUM_MESSAGES", 0, "Messages per batch sent to a broker."),
	E_ENUM("exporter.kafka.compression_codec", exporter.kafka.compression_codec, "none", w_kafka_codecs,
	       "EMBER_EXPORTER_KAFKA_COMPRESSION_CODEC", 0, "Compression of the batches."),
	E_INT("exporter.kafka.queue_buffering_max_messages", exporter.kafka.queue_buffering_max_messages, "100000", 1,
	      10000000, "EMBER_EXPORTER_KAFKA_QUEUE_BUFFERING_MAX_MESSAGES", 0,
	      "Messages held while the brokers are slow or away; beyond it new ones are dropped and counted."),
	E_INT("exporter.kafka.queue_buffering_max_kbytes", exporter.kafka.queue_buffering_max_kbytes, "1048576", 1,
	      2097151, "EMBER_EXPORTER_KAFKA_QUEUE_BUFFERING_MAX_KBYTES", 0,
	      "KiB held while the brokers are slow or away; beyond it new messages are dropped and counted."),
	E_DUR("exporter.kafka.queue_buffering_max_ms", exporter.kafka.queue_buffering_max_ns, "5ms", 0, 900 * NS_S,
	      "EMBER_EXPORTER_KAFKA_QUEUE_BUFFERING_MAX_MS", 0, "How long messages wait to fill a batch."),
	E_DUR("exporter.kafka.message_timeout", exporter.kafka.message_timeout_ns, "5m", NS_S, NS_H,
	      "EMBER_EXPORTER_KAFKA_MESSAGE_TIMEOUT", 0,
	      "How long a message is retried while the brokers are away; then it is dropped and counted."),
	E_DUR("exporter.kafka.meta_period", exporter.kafka.meta_period_ns, "5m", NS_S, 24 * NS_H,
	      "EMBER_EXPORTER_KAFKA_META_PERIOD", 0, "How often the tables' metadata is sent again (and at start)."),

	E_ENUM("logger.level", logger.level, "info", w_rover_log, "ROVER_LOGGER_LEVEL", F_COMPAT,
	       "Rover's log level (ember uses ember.log_level)."),

	E_STR("core.cluster_name", core.cluster_name, "", "ROVER_CORE_CLUSTER_NAME", 0,
	      "Cluster name; Kubernetes service names become cluster::service."),
	E_STR("core.backend.addr", core.backend.addr, "localhost:11800", "ROVER_BACKEND_ADDR", F_NONEMPTY,
	      "SkyWalking OAP gRPC address."),
	E_BOOL("core.backend.enable_TLS", core.backend.enable_tls, "false", "ROVER_BACKEND_ENABLE_TLS", 0,
	       "Connect to the OAP with TLS."),
	E_STR("core.backend.client_pem_path", core.backend.client_pem_path, "", "ROVER_BACKEND_PEM_PATH", 0,
	      "Client certificate for mutual TLS."),
	E_STR("core.backend.client_key_path", core.backend.client_key_path, "", "ROVER_BACKEND_KEY_PATH", 0,
	      "Client key for mutual TLS."),
	E_BOOL("core.backend.insecure_skip_verify", core.backend.insecure_skip_verify, "false",
	       "ROVER_BACKEND_INSECURE_SKIP_VERIFY", 0, "Do not verify the OAP's certificate."),
	E_STR("core.backend.ca_pem_path", core.backend.ca_pem_path, "", "ROVER_BACKEND_CA_PEM_PATH", 0,
	      "CA bundle to verify the OAP's certificate."),
	E_INT("core.backend.check_period", core.backend.check_period, "5", 1, 3600,
	      "ROVER_BACKEND_CHECK_PERIOD", 0, "Connection state check period, in seconds (a number, as in Rover)."),
	E_STR("core.backend.authentication", core.backend.authentication, "", "ROVER_BACKEND_AUTHENTICATION",
	      F_SECRET, "Token sent as Authentication metadata on every call (a secret: --dump-config hides it, and the "
	      "agent's copy of its configuration is readable by root and ember.user's group only)."),

	E_DUR("process_discovery.heartbeat_period", process_discovery.heartbeat_period_ns, "20s", NS_S, 24 * NS_H,
	      "ROVER_PROCESS_DISCOVERY_HEARTBEAT_PERIOD", 0, "Process report / keep-alive period."),
	E_INT("process_discovery.properties_report_period", process_discovery.properties_report_period, "10",
	      1, 1000000, "ROVER_PROCESS_DISCOVERY_PROPERTIES_REPORT_PERIOD", 0,
	      "Every this many heartbeats, report all processes again with full properties."),
	E_BOOL("process_discovery.kubernetes.active", process_discovery.kubernetes.active, "false",
	       "ROVER_PROCESS_DISCOVERY_KUBERNETES_ACTIVE", F_COMPAT,
	       "Enable Rover's Kubernetes process finder (Rover's YAML ships true, its docs false)."),
	E_STR("process_discovery.kubernetes.node_name", process_discovery.kubernetes.node_name, "",
	      "ROVER_PROCESS_DISCOVERY_KUBERNETES_NODE_NAME", F_COMPAT, "This node's Kubernetes name."),
	E_STRV("process_discovery.kubernetes.namespaces", process_discovery.kubernetes.namespaces, "", NULL,
	       "ROVER_PROCESS_DISCOVERY_KUBERNETES_NAMESPACES", F_COMPAT,
	       "Kubernetes namespaces to watch (empty: all)."),
	E_YSEQ("process_discovery.kubernetes.analyzers", process_discovery.kubernetes.analyzers, F_COMPAT,
	       "Rover's Kubernetes entity analyzers (active, filters, layer, service_name, instance_name, "
	       "process_name, labels), kept as text."),
	E_DUR("process_discovery.scanner.period", process_discovery.scanner.period_ns, "3s", 100 * NS_MS,
	      24 * NS_H, "ROVER_PROCESS_DISCOVERY_SCAN_PERIOD", 0, "Host process scan period."),
	E_ENUM("process_discovery.scanner.mode", process_discovery.scanner.mode, "AGENT_SENSOR", w_scan_mode,
	       "ROVER_PROCESS_DISCOVERY_SCAN_MODE", 0,
	       "How host processes are found: agent metadata files or command-line regexes."),
	E_DUR("process_discovery.scanner.agent.process_status_refresh_period",
	      process_discovery.scanner.agent.process_status_refresh_period_ns, "1m", NS_S, 24 * NS_H,
	      "ROVER_PROCESS_DISCOVERY_AGENT_PROCESS_STATUS_REFRESH_PERIOD", 0,
	      "An agent metadata file older than this is ignored."),
	E_YSEQ("process_discovery.scanner.regex", process_discovery.scanner.regex, 0,
	       "Regex scanner rules (match_cmd, layer, service_name, instance_name, process_name, labels), "
	       "kept as text."),

	E_BOOL("profiling.active", profiling.active, "true", "ROVER_PROFILING_ACTIVE", 0,
	       "Enable process profiling."),
	E_DUR("profiling.check_interval", profiling.check_interval_ns, "10s", 100 * NS_MS, 24 * NS_H,
	      "ROVER_PROFILING_CHECK_INTERVAL", 0, "Period of the profiling task and policy queries."),
	E_DUR("profiling.flush_interval", profiling.flush_interval_ns, "5s", 100 * NS_MS, 24 * NS_H,
	      "ROVER_PROFILING_FLUSH_INTERVAL", 0, "Period at which profiling data is combined and reported."),
	E_DUR("profiling.task.on_cpu.dump_period", profiling.task.on_cpu.dump_period_ns, "9ms",
	      (long long)CTL_PERIOD_MIN_NS, (long long)CTL_PERIOD_MAX_NS,
	      "ROVER_PROFILING_TASK_ON_CPU_DUMP_PERIOD", 0, "On-CPU stack sampling period."),
	E_DUR("profiling.task.off_cpu.min_block_time", profiling.task.off_cpu.min_block_time_ns, "0s", 0,
	      (long long)CTL_MIN_BLOCK_MAX_NS,
	      "EMBER_PROFILING_TASK_OFF_CPU_MIN_BLOCK_TIME", 0,
	      "Off-CPU: ignore blocks shorter than this (ember extension)."),
	E_DUR("profiling.task.network.report_interval", profiling.task.network.report_interval_ns, "2s",
	      100 * NS_MS, 24 * NS_H, "ROVER_PROFILING_TASK_NETWORK_TOPOLOGY_REPORT_INTERVAL", 0,
	      "Period at which network profiling metrics are sent."),
	E_INT("profiling.task.network.max_connections", profiling.task.network.max_connections, "16384", 16,
	      1 << 24, "EMBER_PROFILING_TASK_NETWORK_MAX_CONNECTIONS", 0,
	      "Connections followed at once per analyzer; over it, new connections are counted and skipped (ember extension)."),
	E_DUR("profiling.task.network.connection_idle_timeout", profiling.task.network.connection_idle_timeout_ns,
	      "5m", NS_S, 24 * NS_H, "EMBER_PROFILING_TASK_NETWORK_CONNECTION_IDLE_TIMEOUT", 0,
	      "A connection without socket calls for this long is closed in the books (its process may be gone) (ember extension)."),
	E_INT("profiling.task.network.max_exchanges_per_report", profiling.task.network.max_exchanges_per_report,
	      "2000", 0, 10000000, "EMBER_PROFILING_TASK_NETWORK_MAX_EXCHANGES_PER_REPORT", 0,
	      "L7 exchanges listed per task and report interval, an even sample of the interval's (all are counted in the metrics; the rest are counted as not listed), and its 10 slowest besides; a report over 4096 connections and exchanges goes out in parts, the analyzer reading its ring between them (ember extension)."),
	E_BOOL("profiling.task.network.tls", profiling.task.network.tls, "true", "EMBER_PROFILING_TASK_NETWORK_TLS", 0,
	       "Capture the plaintext of TLS connections (OpenSSL and BoringSSL, shared or linked in; Go's crypto/tls) with uprobes on the library's read and write functions; false: TLS connections show their L4 metrics only (ember extension)."),
	E_STR("profiling.task.network.meter_prefix", profiling.task.network.meter_prefix, "rover_net_p",
	      "ROVER_PROFILING_TASK_NETWORK_TOPOLOGY_METER_PREFIX", F_NONEMPTY,
	      "Prefix of the network profiling meter names."),
	E_SIZE("profiling.task.network.protocol_analyze.per_cpu_buffer",
	       profiling.task.network.protocol_analyze.per_cpu_buffer, "400KB", 4 * KIB, GIB,
	       "ROVER_PROFILING_TASK_NETWORK_PROTOCOL_ANALYZE_PER_CPU_BUFFER", 0,
	       "Socket data buffer per CPU."),
	E_SIZE("profiling.task.network.protocol_analyze.max_connection_buffer",
	       profiling.task.network.protocol_analyze.max_connection_buffer, "64KB", 4 * KIB, 64 * MIB,
	       "EMBER_PROFILING_TASK_NETWORK_PROTOCOL_ANALYZE_MAX_CONNECTION_BUFFER", 0,
	       "Bytes a protocol parser may hold for one connection (a message split over calls); over it the connection is counted as unparseable (ember extension)."),
	E_INT("profiling.task.network.protocol_analyze.parallels",
	      profiling.task.network.protocol_analyze.parallels, "2", 1, 1024,
	      "ROVER_PROFILING_TASK_NETWORK_PROTOCOL_ANALYZE_PARALLELS", 0, "Parallel protocol analyzers."),
	E_INT("profiling.task.network.protocol_analyze.queue_size",
	      profiling.task.network.protocol_analyze.queue_size, "5000", 1, 100000000,
	      "ROVER_PROFILING_TASK_NETWORK_PROTOCOL_ANALYZE_QUEUE_SIZE", 0, "Queue size of each analyzer."),
	E_STR("profiling.task.network.protocol_analyze.sampling.http.default_request_encoding",
	      profiling.task.network.protocol_analyze.sampling.http.default_request_encoding, "UTF-8",
	      "ROVER_PROFILING_TASK_NETWORK_PROTOCOL_ANALYZE_SAMPLING_HTTP_DEFAULT_REQUEST_ENCODING", F_NONEMPTY,
	      "Body encoding assumed when sampling an HTTP request."),
	E_STR("profiling.task.network.protocol_analyze.sampling.http.default_response_encoding",
	      profiling.task.network.protocol_analyze.sampling.http.default_response_encoding, "UTF-8",
	      "ROVER_PROFILING_TASK_NETWORK_PROTOCOL_ANALYZE_SAMPLING_HTTP_DEFAULT_RESPONSE_ENCODING", F_NONEMPTY,
	      "Body encoding assumed when sampling an HTTP response."),
	E_DUR("profiling.task.threads.stack_threshold", profiling.task.threads.stack_threshold_ns, "10ms", 0,
	      (long long)CTL_MIN_BLOCK_MAX_NS, "EMBER_PROFILING_TASK_THREADS_STACK_THRESHOLD", 0,
	      "Thread profiling: a call at least this long carries its user stack (func.stack); 0: every call's (ember extension)."),
	E_INT("profiling.task.threads.max_events_per_window", profiling.task.threads.max_events_per_window, "50000", 100,
	      10000000, "EMBER_PROFILING_TASK_THREADS_MAX_EVENTS_PER_WINDOW", 0,
	      "Thread profiling: events (aggregates) kept per task and one-second window; the rest are counted as lost (ember extension)."),
	E_BOOL("profiling.unwind.tables", profiling.unwind.tables, "true", "EMBER_PROFILING_UNWIND_TABLES", 0,
	       "Walk user stacks with unwind tables built from each binary's .eh_frame, so that code built without frame pointers gives whole stacks; false: frame pointers only (ember extension)."),
	E_INT("profiling.unwind.max_rows", profiling.unwind.max_rows, "1048576", 1024, 1 << 26,
	      "EMBER_PROFILING_UNWIND_MAX_ROWS", 0,
	      "Unwind table rows the kernel holds for all processes, 8 bytes each (python3.11 and libc take about 93000, node 372000); a binary that does not fit is walked with frame pointers and counted (ember extension)."),
	E_INT("profiling.unwind.max_processes", profiling.unwind.max_processes, "64", 1, 65536,
	      "EMBER_PROFILING_UNWIND_MAX_PROCESSES", 0,
	      "Processes walked with unwind tables at once (2 KiB each in the kernel); the others with frame pointers, counted (ember extension)."),
	E_BOOL("profiling.java.agent", profiling.java.agent, "false", "EMBER_PROFILING_JAVA_AGENT", 0,
	       "Load ember's JVMTI agent (libember-jvmti.so, beside the binaries) into each JVM a stack task profiles, through HotSpot's attach mechanism, so that JIT-compiled methods are named (package.Class::method); it loads code into the target and stays until the JVM exits (ember extension)."),
	E_STR("profiling.continuous.meter_prefix", profiling.continuous.meter_prefix, "rover_con_p",
	      "ROVER_PROFILING_CONTINUOUS_METER_PREFIX", F_NONEMPTY, "Prefix of the continuous profiling meters."),
	E_DUR("profiling.continuous.fetch_interval", profiling.continuous.fetch_interval_ns, "1s", 100 * NS_MS,
	      NS_H, "ROVER_PROFILING_CONTINUOUS_FETCH_INTERVAL", 0,
	      "Period at which process CPU, thread count and system load are sampled."),
	E_DUR("profiling.continuous.check_interval", profiling.continuous.check_interval_ns, "5s", 100 * NS_MS,
	      NS_H, "ROVER_PROFILING_CONTINUOUS_CHECK_INTERVAL", 0,
	      "Period at which thresholds are checked and meters sent."),
	E_YSEQD("profiling.continuous.policies", profiling.continuous.policies, DEFAULT_POLICIES, 0,
		"Local continuous-profiling policies (ember extension): a list of {Name, MatchCmd (regex on the "
		"command line), Profiling: {ON_CPU|OFF_CPU|NETWORK: {PROCESS_CPU|PROCESS_THREAD_COUNT|SYSTEM_LOAD: "
		"{Threshold, Period, Count}}}}, the fields of the OAP's policies. The default profiles on-CPU any "
		"process over 80% of a core in 10 of 30 s; [] switches it off."),
	E_INT("profiling.continuous.max_processes", profiling.continuous.max_processes, "1024", 1, 65536,
	      "EMBER_PROFILING_CONTINUOUS_MAX_PROCESSES", 0,
	      "Processes each analyzer monitors at most; more matching processes are counted and skipped "
	      "(ember extension)."),
	E_DUR("profiling.continuous.trigger.execute_duration", profiling.continuous.trigger.execute_duration_ns,
	      "10m", NS_S, 24 * NS_H, "ROVER_PROFILING_CONTINUOUS_TRIGGER_EXECUTE_DURATION", 0,
	      "Duration of a triggered profiling task."),
	E_DUR("profiling.continuous.trigger.silence_duration", profiling.continuous.trigger.silence_duration_ns,
	      "20m", 0, 7 * 24 * NS_H, "ROVER_PROFILING_CONTINUOUS_TRIGGER_SILENCE_DURATION", 0,
	      "Minimum time between two triggers of the same task (from the previous start)."),

	E_BOOL("access_log.active", access_log.active, "false", "ROVER_ACCESS_LOG_ACTIVE", F_COMPAT,
	       "Enable Rover's access log module."),
	E_STRV("access_log.exclude_namespaces", access_log.exclude_namespaces,
	       "istio-system,cert-manager,kube-system", NULL, "ROVER_ACCESS_LOG_EXCLUDE_NAMESPACES", F_COMPAT,
	       "Kubernetes namespaces excluded from the access log."),
	E_STR("access_log.exclude_cluster", access_log.exclude_cluster, "", "ROVER_ACCESS_LOG_EXCLUDE_CLUSTER",
	      F_COMPAT, "Cluster excluded from the access log."),
	E_INT("access_log.flush.max_count", access_log.flush.max_count, "10000", 1, 100000000,
	      "ROVER_ACCESS_LOG_FLUSH_MAX_COUNT", F_COMPAT, "Flush after this many access logs."),
	E_DUR("access_log.flush.period", access_log.flush.period_ns, "5s", 100 * NS_MS, 24 * NS_H,
	      "ROVER_ACCESS_LOG_FLUSH_PERIOD", F_COMPAT, "Access log flush period."),
	E_SIZE("access_log.connection_analyze.per_cpu_buffer", access_log.connection_analyze.per_cpu_buffer,
	       "200KB", 4 * KIB, GIB, "ROVER_ACCESS_LOG_CONNECTION_ANALYZE_PER_CPU_BUFFER", F_COMPAT,
	       "Connection event buffer per CPU."),
	E_INT("access_log.connection_analyze.parse_parallels", access_log.connection_analyze.parse_parallels,
	      "1", 1, 1024, "ROVER_ACCESS_LOG_CONNECTION_ANALYZE_PARSE_PARALLELS", F_COMPAT,
	      "Parallel connection event parsers."),
	E_INT("access_log.connection_analyze.analyze_parallels", access_log.connection_analyze.analyze_parallels,
	      "1", 1, 1024, "ROVER_ACCESS_LOG_CONNECTION_ANALYZE_PARALLELS", F_COMPAT,
	      "Parallel connection analyzers."),
	E_INT("access_log.connection_analyze.queue_size", access_log.connection_analyze.queue_size, "2000", 1,
	      100000000, "ROVER_ACCESS_LOG_CONNECTION_ANALYZE_QUEUE_SIZE", F_COMPAT,
	      "Queue size of each connection analyzer."),
	E_SIZE("access_log.protocol_analyze.per_cpu_buffer", access_log.protocol_analyze.per_cpu_buffer,
	       "400KB", 4 * KIB, GIB, "ROVER_ACCESS_LOG_PROTOCOL_ANALYZE_PER_CPU_BUFFER", F_COMPAT,
	       "Protocol data buffer per CPU."),
	E_INT("access_log.protocol_analyze.parse_parallels", access_log.protocol_analyze.parse_parallels, "2",
	      1, 1024, "ROVER_ACCESS_LOG_PROTOCOL_ANALYZE_PARSE_PARALLELS", F_COMPAT,
	      "Parallel protocol parsers."),
	E_INT("access_log.protocol_analyze.analyze_parallels", access_log.protocol_analyze.analyze_parallels,
	      "2", 1, 1024, "ROVER_ACCESS_LOG_PROTOCOL_ANALYZE_PARALLELS", F_COMPAT,
	      "Parallel protocol analyzers."),
	E_INT("access_log.protocol_analyze.queue_size", access_log.protocol_analyze.queue_size, "5000", 1,
	      100000000, "ROVER_ACCESS_LOG_PROTOCOL_ANALYZE_QUEUE_SIZE", F_COMPAT,
	      "Queue size of each protocol analyzer."),
	E_BOOL("symbolizer.debuginfod.enabled", symbolizer.debuginfod.enabled, "false", "EMBER_SYMBOLIZER_DEBUGINFOD_ENABLED", 0,
	       "Fetch debug files of stripped binaries by build id from debuginfod servers (the analyzer needs network access to them)."),
	E_STR("symbolizer.debuginfod.urls", symbolizer.debuginfod.urls, "", "EMBER_SYMBOLIZER_DEBUGINFOD_URLS", F_URLCRED,
	      "debuginfod server URLs, space-separated."),
	E_STR("symbolizer.debuginfod.cache_dir", symbolizer.debuginfod.cache_dir, "", "EMBER_SYMBOLIZER_DEBUGINFOD_CACHE_DIR",
	      0,
	      "Download cache of debuginfod files; empty = <ember.run_dir>/analyzer/debuginfod."),
};

#define N_ENTRIES ARRAY_SIZE(entries)
#define MAX_KEY_LEN 255
#define MAX_SEGMENTS 12

union cfg_val {
	bool b;
	int64_t i;
	uint64_t u;
	int e;
	char *s;
	struct config_strv v;
};

static void *field(struct ember_config *cfg, const struct cfg_entry *e) { return (char *)cfg + e->off; }
static const void *cfield(const struct ember_config *cfg, const struct cfg_entry *e)
{
	return (const char *)cfg + e->off;
}

static void seterr(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * Untrusted text quoted in an error message: printable ASCII only, cut at 64
 * bytes, so a hostile value cannot forge log lines or flood them.
 */
struct shown { char txt[80]; };
static struct shown show(const char *s, size_t n)
{
	struct shown r;
	size_t i, o = 0;

	for (i = 0; i < n && o < 64; i++)
		r.txt[o++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	if (i < n) {
		memcpy(r.txt + o, "...", 3);
		o += 3;
	}
	r.txt[o] = 0;
	return r;
}
#define SHOW(str) (show((str), strlen(str)).txt)

/* ---- growable string ---------------------------------------------------- */

struct sbuf {
	char *p;
	size_t len, cap, max;
	int err;
};

static void sb_putn(struct sbuf *b, const char *s, size_t n)
{
	if (b->err)
		return;
	if (b->len + n + 1 > b->max) {
		b->err = -E2BIG;
		return;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 64;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->err = -ENOMEM;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static void sb_puts(struct sbuf *b, const char *s) { sb_putn(b, s, strlen(s)); }

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		if (!b->err)
			b->err = -EOVERFLOW;
		return;
	}
	sb_putn(b, tmp, n);
}

static bool is_null_word(const char *s, size_t n)
{
	return n == 0 || (n == 1 && s[0] == '~') || (n == 4 && !strncasecmp(s, "null", 4));
}

/*
 * One strict UTF-8 character (no overlong forms, no surrogates, nothing above
 * U+10FFFF): its length, or 0 if s does not start with one.
 */
static size_t utf8_next(const unsigned char *s, size_t n, uint32_t *ret_cp)
{
	size_t k;
	uint32_t cp, min;

	if (!n)
		return 0;
	if (s[0] < 0x80) {
		*ret_cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		k = 1; cp = s[0] & 0x1f; min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		k = 2; cp = s[0] & 0x0f; min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		k = 3; cp = s[0] & 0x07; min = 0x10000;
	} else {
		return 0;
	}
	if (n <= k)
		return 0;
	for (size_t j = 1; j <= k; j++) {
		if ((s[j] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[j] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*ret_cp = cp;
	return k + 1;
}

/*
 * Characters YAML readers do not take raw inside quotes: C0/C1 controls and
 * DEL are refused, NEL, LS and PS count as line breaks, FFFE/FFFF are
 * non-characters, and a BOM may be skipped.
 */
static bool yaml_unsafe_cp(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || cp == 0xfeff ||
	       cp == 0xfffe || cp == 0xffff;
}

/*
 * A scalar as YAML: plain when that cannot be misread (by us or by another
 * YAML reader), otherwise double-quoted with escapes.
 */
static void sb_quote(struct sbuf *b, const char *s, size_t n)
{
	bool plain = n > 0 && !is_null_word(s, n);

	for (size_t i = 0; plain && i < n; i++) {
		unsigned char c = s[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			  c == '_' || c == '.' || c == '/' || (i > 0 && (c == '-' || c == '+' || c == '@'));
		plain = ok;
	}
	if (plain) {
		sb_putn(b, s, n);
		return;
	}
	sb_putn(b, "\"", 1);
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = utf8_next((const unsigned char *)s + i, n - i, &cp);

		if (!k) {
			/* Not UTF-8 (cannot come from libyaml or a checked string). */
			sb_printf(b, "\\x%02x", (unsigned char)s[i]);
			i++;
			continue;
		}
		if (cp == '"' || cp == '\\') {
			char esc[2] = { '\\', (char)cp };
			sb_putn(b, esc, 2);
		} else if (yaml_unsafe_cp(cp)) {
			sb_printf(b, cp < 0x100 ? "\\x%02x" : "\\u%04x", (unsigned)cp);
		} else {
			sb_putn(b, s + i, k);
		}
		i += k;
	}
	sb_putn(b, "\"", 1);
}

/* ---- value parsers ------------------------------------------------------ */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

int config__parse_bool(const char *s, bool *ret)
{
	static const char *const yes[] = { "true", "yes", "on", "1", "t" };
	static const char *const no[] = { "false", "no", "off", "0", "f" };

	if (!s || !ret)
		return -EINVAL;
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (!strcasecmp(s, yes[i])) {
			*ret = true;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*ret = false;
			return 0;
		}
	}
	return -EINVAL;
}

static int parse_int64(const char *s, int64_t *ret)
{
	const char *p = s;
	int64_t v = 0;
	bool neg = false;

	if (*p == '-') {
		neg = true;
		p++;
	}
	if (!is_digit(*p))
		return -EINVAL;
	for (; is_digit(*p); p++) {
		int d = *p - '0';

		/* Accumulate negatively so INT64_MIN is reachable. */
		if (v < (INT64_MIN + d) / 10)
			return -ERANGE;
		v = v * 10 - d;
	}
	if (*p)
		return -EINVAL;
	if (!neg) {
		if (v == INT64_MIN)
			return -ERANGE;
		v = -v;
	}
	*ret = v;
	return 0;
}

static const struct { const char *name; uint64_t ns; } dur_units[] = {
	{ "ns", 1 }, { "us", NS_US }, { "\xc2\xb5s", NS_US }, { "\xce\xbcs", NS_US },
	{ "ms", NS_MS }, { "s", NS_S }, { "m", NS_MIN }, { "h", NS_H },
};

int config__parse_duration(const char *s, uint64_t *ret_ns)
{
	unsigned __int128 total = 0;
	const char *p = s;
	bool neg = false;

	if (!s || !ret_ns)
		return -EINVAL;
	if (*p == '-') {
		neg = true;
		p++;
	}
	if (!strcmp(p, "0")) {
		*ret_ns = 0;
		return 0;
	}
	if (!*p)
		return -EINVAL;
	while (*p) {
		uint64_t ip = 0, frac = 0, scale = 1, unit = 0;
		bool digits = false;
		size_t i;

		for (; is_digit(*p); p++) {
			if (ip > INT64_MAX / 10)
				return -ERANGE;
			ip = ip * 10 + (uint64_t)(*p - '0');
			digits = true;
		}
		if (*p == '.') {
			/* Digits past ns precision of the largest unit cannot matter. */
			for (p++; is_digit(*p); p++) {
				if (scale < 1000000000000000000ULL) {
					frac = frac * 10 + (uint64_t)(*p - '0');
					scale *= 10;
				}
				digits = true;
			}
		}
		if (!digits)
			return -EINVAL;
		for (i = 0; i < ARRAY_SIZE(dur_units); i++) {
			size_t n = strlen(dur_units[i].name);

			if (!strncmp(p, dur_units[i].name, n)) {
				unit = dur_units[i].ns;
				p += n;
				break;
			}
		}
		if (!unit)
			return -EINVAL;	/* a bare number, or an unknown unit */
		total += (unsigned __int128)ip * unit + (unsigned __int128)frac * unit / scale;
		if (total > INT64_MAX)
			return -ERANGE;
	}
	if (neg && total)
		return -ERANGE;
	*ret_ns = (uint64_t)total;
	return 0;
}

int config__parse_size(const char *s, uint64_t *ret_bytes)
{
	static const struct { const char *name; unsigned shift; } units[] = {
		{ "", 0 }, { "b", 0 },
		{ "k", 10 }, { "kb", 10 }, { "kib", 10 }, { "m", 20 }, { "mb", 20 }, { "mib", 20 },
		{ "g", 30 }, { "gb", 30 }, { "gib", 30 }, { "t", 40 }, { "tb", 40 }, { "tib", 40 },
	};
	const char *p = s;
	uint64_t v = 0;

	if (!s || !ret_bytes)
		return -EINVAL;
	if (*p == '-' && is_digit(p[1]))
		return -ERANGE;
	if (!is_digit(*p))
		return -EINVAL;
	for (; is_digit(*p); p++) {
		if (v > INT64_MAX / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	for (size_t i = 0; i < ARRAY_SIZE(units); i++) {
		if (strcasecmp(p, units[i].name))
			continue;
		if (v > ((uint64_t)INT64_MAX >> units[i].shift))
			return -ERANGE;
		*ret_bytes = v << units[i].shift;
		return 0;
	}
	return -EINVAL;
}

static int ret_len(int n, size_t len)
{
	if (n < 0)
		return -EINVAL;
	return (size_t)n >= len ? -ENOSPC : n;
}

int config__format_duration(uint64_t ns, char *buf, size_t len)
{
	static const struct { const char *name; uint64_t ns; } units[] = {
		{ "h", NS_H }, { "m", NS_MIN }, { "s", NS_S }, { "ms", NS_MS }, { "us", NS_US }, { "ns", 1 },
	};

	if (!buf)
		return -EINVAL;
	if (ns == 0)
		return ret_len(snprintf(buf, len, "0s"), len);
	for (size_t i = 0;; i++)
		if (ns % units[i].ns == 0)
			return ret_len(snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].ns),
						units[i].name), len);
}

int config__format_size(uint64_t bytes, char *buf, size_t len)
{
	static const struct { const char *name; unsigned shift; } units[] = {
		{ "TiB", 40 }, { "GiB", 30 }, { "MiB", 20 }, { "KiB", 10 },
	};

	if (!buf)
		return -EINVAL;
	for (size_t i = 0; bytes && i < ARRAY_SIZE(units); i++)
		if ((bytes & ((1ULL << units[i].shift) - 1)) == 0)
			return ret_len(snprintf(buf, len, "%llu%s", (unsigned long long)(bytes >> units[i].shift),
						units[i].name), len);
	return ret_len(snprintf(buf, len, "%llu", (unsigned long long)bytes), len);
}

/* Text a string value may hold: bounded UTF-8, no control characters. */
static const char *bad_text(const char *s)
{
	size_t n = strlen(s);

	if (n > CONFIG_MAX_VALUE_LEN)
		return "text longer than 4095 bytes";
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = utf8_next((const unsigned char *)s + i, n - i, &cp);

		if (!k)
			return "valid UTF-8 text";
		if (yaml_unsafe_cp(cp))
			return "text without control characters";
		i += k;
	}
	return NULL;
}

static int match_word(const char *const *words, const char *s, size_t n)
{
	for (int i = 0; words[i]; i++)
		if (strlen(words[i]) == n && !strncasecmp(words[i], s, n))
			return i;
	return -1;
}

static void words_list(struct sbuf *b, const char *const *words)
{
	for (size_t i = 0; words[i]; i++) {
		if (i)
			sb_puts(b, ", ");
		sb_puts(b, words[i]);
	}
}

/* What a value of the entry looks like, for error messages and help. */
static void describe(struct sbuf *b, const struct cfg_entry *e)
{
	char lo[32], hi[32];

	switch (e->type) {
	case T_BOOL:
		sb_puts(b, "true or false");
		break;
	case T_INT:
		sb_printf(b, "an integer from %lld to %lld", (long long)e->min, (long long)e->max);
		break;
	case T_DURATION:
		config__format_duration(e->min, lo, sizeof(lo));
		config__format_duration(e->max, hi, sizeof(hi));
		sb_printf(b, "a duration from %s to %s (such as 500us, 9ms, 10s, 1m, 2h)", lo, hi);
		break;
	case T_SIZE:
		config__format_size(e->min, lo, sizeof(lo));
		config__format_size(e->max, hi, sizeof(hi));
		sb_printf(b, "a size from %s to %s (such as 4096, 400KB, 4MiB)%s", lo, hi,
			  e->flags & F_POW2 ? ", a power of two" : "");
		break;
	case T_STRING:
		sb_puts(b, e->flags & F_ABSPATH ? "an absolute path" :
			   e->flags & F_NONEMPTY ? "non-empty text" : "text");
		break;
	case T_ENUM:
		sb_puts(b, "one of: ");
		words_list(b, e->words);
		break;
	case T_STRV:
		if (e->words) {
			sb_puts(b, "a list of: ");
			words_list(b, e->words);
		} else {
			sb_puts(b, "a list of names");
		}
		break;
	case T_YAMLSEQ:
		sb_puts(b, "a YAML sequence");
		break;
	}
}

static void free_strv(struct config_strv *v)
{
	for (size_t i = 0; i < v->n; i++)
		free(v->v[i]);
	free(v->v);
	v->v = NULL;
	v->n = 0;
}

static void free_val(const struct cfg_entry *e, union cfg_val *v)
{
	if (e->type == T_STRING || e->type == T_YAMLSEQ) {
		free(v->s);
		v->s = NULL;
	} else if (e->type == T_STRV) {
		free_strv(&v->v);
	}
}

/*
 * Add one list item.  why is set for a bad item.  Items never hold commas so
 * that the file, the environment and --set can express the same lists.
 */
static int strv_add(const struct cfg_entry *e, struct config_strv *v, const char *s, size_t n,
		    struct sbuf *why)
{
	char *item, **nv;
	int w = -1;

	if (v->n >= CONFIG_MAX_LIST_ITEMS) {
		sb_printf(why, "at most %d list items", CONFIG_MAX_LIST_ITEMS);
		return -EINVAL;
	}
	if (!n || memchr(s, ',', n)) {
		sb_puts(why, "list items that are not empty and hold no ','");
		return -EINVAL;
	}
	if (e->words && (w = match_word(e->words, s, n)) < 0) {
		describe(why, e);
		sb_printf(why, " ('%s' is not one of them)", show(s, n).txt);
		return -EINVAL;
	}
	item = w >= 0 ? strdup(e->words[w]) : strndup(s, n);
	if (!item)
		return -ENOMEM;
	const char *bad = bad_text(item);
	if (bad) {
		free(item);
		sb_puts(why, bad);
		return -EINVAL;
	}
	for (size_t i = 0; i < v->n; i++) {
		if (!strcmp(v->v[i], item)) {
			sb_printf(why, "each list item once ('%s' is repeated)", SHOW(item));
			free(item);
			return -EINVAL;
		}
	}
	nv = realloc(v->v, (v->n + 1) * sizeof(*nv));
	if (!nv) {
		free(item);
		return -ENOMEM;
	}
	v->v = nv;
	v->v[v->n++] = item;
	return 0;
}

#define LIST_FORMS "a list as 'a, b' or '[a, b]'"

static int hexval(char c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

static size_t utf8_put(uint32_t cp, char *out)
{
	if (cp < 0x80) {
		out[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (char)(0xc0 | (cp >> 6));
		out[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (char)(0xe0 | (cp >> 12));
		out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | (cp >> 18));
	out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/*
 * One quoted item of a '[...]' list, as format_val writes them (sb_quote:
 * "..." with \" \\ \xHH \uHHHH) or as YAML allows ('...' with '' for a
 * quote).  s points at the opening quote, end at the list's ']'.  The text
 * goes into out (at least end - s bytes + 1); returns the bytes read, or 0
 * with why set.
 */
static size_t strv_quoted(const char *s, const char *end, char *out, size_t *ret_len, struct sbuf *why)
{
	char q = *s;
	const char *p = s + 1;
	size_t o = 0;

	while (p < end) {
		if (*p == q && q == '\'' && p + 1 < end && p[1] == '\'') {
			out[o++] = '\'';
			p += 2;
		} else if (*p == q) {
			out[o] = '\0';
			*ret_len = o;
			return (size_t)(p + 1 - s);
		} else if (*p == '\\' && q == '"') {
			uint32_t cp = 0;
			int digits = p + 1 < end ? (p[1] == 'x' ? 2 : p[1] == 'u' ? 4 : p[1] == 'U' ? 8 : 0) : 0;

			if (p + 1 < end && (p[1] == '"' || p[1] == '\\' || p[1] == '/')) {
				out[o++] = p[1];
				p += 2;
				continue;
			}
			if (!digits || end - (p + 2) < digits) {
				sb_puts(why, LIST_FORMS " (a quoted item has an unknown escape: use \\\" \\\\ \\xHH \\uHHHH)");
				return 0;
			}
			for (int i = 0; i < digits; i++) {
				int h = hexval(p[2 + i]);
				if (h < 0) {
					sb_puts(why, LIST_FORMS " (a quoted item's \\x or \\u escape needs hex digits)");
					return 0;
				}
				cp = cp << 4 | (uint32_t)h;
			}
			/* NUL would end the item early; the rest is refused by bad_text. */
			if (!cp || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
				sb_puts(why, LIST_FORMS " (a quoted item escapes no character or NUL)");
				return 0;
			}
			o += utf8_put(cp, out + o);
			p += 2 + digits;
		} else {
			out[o++] = *p++;
		}
	}
	sb_printf(why, LIST_FORMS " (a %s item is not closed)", q == '"' ? "\"quoted\"" : "'quoted'");
	return 0;
}

/*
 * The '[a, b]' form that format_val (--dump-config, config__get) writes:
 * items plain or quoted, separated by commas, none empty; '[]' is the empty
 * list.  s starts at the '['.
 */
static int strv_from_brackets(const struct cfg_entry *e, const char *s, struct config_strv *v, struct sbuf *why)
{
	const char *end = s + strlen(s);
	char *buf;
	int r = 0;

	while (end > s && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (end - s < 2 || end[-1] != ']') {
		sb_puts(why, LIST_FORMS " (the text after '[' must end with its closing ']')");
		return -EINVAL;
	}
	end--;
	for (const char *p = s + 1; p < end && (*p == ' ' || *p == '\t'); p++)
		if (p + 1 == end)
			return 0;	/* [ ] */
	if (end == s + 1)
		return 0;	/* [] */
	/* A quoted item is never longer than the text it comes from (escapes only shrink). */
	if (!(buf = malloc((size_t)(end - s) + 1)))
		return -ENOMEM;
	for (const char *p = s + 1, *t; ;) {
		size_t n = 0;

		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p == end || *p == ',') {
			sb_printf(why, LIST_FORMS " (item %zu is empty)", v->n + 1);
			r = -EINVAL;
			break;
		}
		if (*p == '"' || *p == '\'') {
			size_t k = strv_quoted(p, end, buf, &n, why);
			if (!k) {
				r = -EINVAL;
				break;
			}
			p += k;
		} else {
			t = p;
			while (p < end && *p != ',')
				p++;
			n = (size_t)(p - t);
			while (n && (t[n - 1] == ' ' || t[n - 1] == '\t'))
				n--;
			if (memchr(t, '[', n) || memchr(t, ']', n)) {
				sb_puts(why, LIST_FORMS " (unbalanced '[' or ']' inside; lists do not nest)");
				r = -EINVAL;
				break;
			}
			memcpy(buf, t, n);
		}
		if ((r = strv_add(e, v, buf, n, why)) < 0)
			break;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (p == end)
			break;
		if (*p != ',') {
			sb_puts(why, LIST_FORMS " (a ',' must follow a quoted item)");
			r = -EINVAL;
			break;
		}
		p++;
	}
	free(buf);
	return r;
}

/*
 * 'a, b' (blanks around items ignored, empty items skipped: "a,b," is two)
 * or '[a, b]', the form --dump-config writes, so that a dumped value can be
 * given back to --set or an environment variable as it is.
 */
static int strv_from_text(const struct cfg_entry *e, const char *s, struct config_strv *ret, struct sbuf *why)
{
	struct config_strv v = { 0 };
	int r = 0;

	if (strlen(s) > CONFIG_MAX_VALUE_LEN) {
		sb_puts(why, "text longer than 4095 bytes");
		return -EINVAL;
	}
	while (*s == ' ' || *s == '\t')
		s++;
	if (*s == '[') {
		r = strv_from_brackets(e, s, &v, why);
	} else if (strchr(s, '[') || strchr(s, ']')) {
		sb_puts(why, LIST_FORMS " (unbalanced '[' or ']': a list in brackets starts with '[' and ends with ']')");
		r = -EINVAL;
	} else {
		while (*s) {
			const char *end = strchr(s, ',');
			size_t n = end ? (size_t)(end - s) : strlen(s);
			const char *a = s, *z = s + n;

			while (a < z && (*a == ' ' || *a == '\t'))
				a++;
			while (z > a && (z[-1] == ' ' || z[-1] == '\t'))
				z--;
			if (z > a && (r = strv_add(e, &v, a, z - a, why)) < 0)
				break;
			s = end ? end + 1 : s + n;
		}
	}
	if (r < 0) {
		free_strv(&v);
		return r;
	}
	*ret = v;
	return 0;
}

static int yamlseq_from_text(const char *text, size_t len, char **ret, struct sbuf *why);

/*
 * Text -> value of the entry's type, checked against its bounds.  On -EINVAL
 * or -ERANGE why says what was expected.
 */
static int parse_val(const struct cfg_entry *e, const char *text, union cfg_val *ret, struct sbuf *why)
{
	union cfg_val v = { 0 };
	const char *bad;
	int r = 0;

	switch (e->type) {
	case T_BOOL:
		r = config__parse_bool(text, &v.b);
		break;
	case T_INT:
		r = parse_int64(text, &v.i);
		if (!r && (v.i < e->min || v.i > e->max))
			r = -ERANGE;
		break;
	case T_DURATION:
		r = config__parse_duration(text, &v.u);
		if (!r && (v.u < (uint64_t)e->min || v.u > (uint64_t)e->max))
			r = -ERANGE;
		break;
	case T_SIZE:
		r = config__parse_size(text, &v.u);
		if (!r && (v.u < (uint64_t)e->min || v.u > (uint64_t)e->max))
			r = -ERANGE;
		if (!r && (e->flags & F_POW2) && (v.u & (v.u - 1)))
			r = -EINVAL;
		break;
	case T_STRING:
		if ((bad = bad_text(text))) {
			sb_puts(why, bad);
			return -EINVAL;
		}
		if (((e->flags & F_NONEMPTY) && !*text) || ((e->flags & F_ABSPATH) && *text != '/')) {
			r = -EINVAL;
			break;
		}
		if (!(v.s = strdup(text)))
			return -ENOMEM;
		break;
	case T_ENUM:
		v.e = match_word(e->words, text, strlen(text));
		if (v.e < 0)
			r = -EINVAL;
		break;
	case T_STRV:
		if ((r = strv_from_text(e, text, &v.v, why)) < 0)
			return r;
		break;
	case T_YAMLSEQ:
		if ((r = yamlseq_from_text(text, strlen(text), &v.s, why)) < 0)
			return r;
		break;
	}
	if (r < 0) {
		describe(why, e);
		return r;
	}
	*ret = v;
	return 0;
}

static void store_val(struct ember_config *cfg, const struct cfg_entry *e, union cfg_val *v)
{
	void *f = field(cfg, e);

	switch (e->type) {
	case T_BOOL:
		*(bool *)f = v->b;
		break;
	case T_INT:
		*(int64_t *)f = v->i;
		break;
	case T_DURATION:
	case T_SIZE:
		*(uint64_t *)f = v->u;
		break;
	case T_ENUM:
		*(int *)f = v->e;
		break;
	case T_STRING:
	case T_YAMLSEQ:
		free(*(char **)f);
		*(char **)f = v->s;
		break;
	case T_STRV:
		free_strv(f);
		*(struct config_strv *)f = v->v;
		break;
	}
	memset(v, 0, sizeof(*v));
}

/* Where a value came from, for error messages. */
struct origin {
	size_t line;		/* file: 1-based */
	const char *env;	/* environment variable */
};

static int set_text(struct ember_config *cfg, const struct cfg_entry *e, const char *text,
		    const struct origin *o, char *err, size_t errlen)
{
	struct sbuf why = { .max = 1024 };
	union cfg_val v;
	int r;

	r = parse_val(e, text, &v, &why);
	if (r == 0) {
		store_val(cfg, e, &v);
		return 0;
	}
	if (r == -ENOMEM)
		seterr(err, errlen, "out of memory");
	else if (o && o->env)
		seterr(err, errlen, "invalid value '%s' in environment variable %s (key '%s'): expected %s",
		       SHOW(text), o->env, e->key, why.p ? why.p : "?");
	else if (o && o->line)
		seterr(err, errlen, "invalid value '%s' for '%s' (line %zu): expected %s", SHOW(text), e->key,
		       o->line, why.p ? why.p : "?");
	else
		seterr(err, errlen, "invalid value '%s' for '%s': expected %s", SHOW(text), e->key,
		       why.p ? why.p : "?");
	free(why.p);
	return r;
}

static void format_val(struct sbuf *b, const struct cfg_entry *e, const void *f)
{
	char tmp[32];

	switch (e->type) {
	case T_BOOL:
		sb_puts(b, *(const bool *)f ? "true" : "false");
		break;
	case T_INT:
		sb_printf(b, "%lld", (long long)*(const int64_t *)f);
		break;
	case T_DURATION:
		config__format_duration(*(const uint64_t *)f, tmp, sizeof(tmp));
		sb_puts(b, tmp);
		break;
	case T_SIZE:
		config__format_size(*(const uint64_t *)f, tmp, sizeof(tmp));
		sb_puts(b, tmp);
		break;
	case T_STRING: {
		const char *s = *(char *const *)f;

		sb_quote(b, s ? s : "", s ? strlen(s) : 0);
		break;
	}
	case T_ENUM: {
		int w = *(const int *)f, n = 0;

		while (e->words[n])
			n++;
		sb_puts(b, w >= 0 && w < n ? e->words[w] : "~");	/* ~ fails to load back, as it should */
		break;
	}
	case T_STRV: {
		const struct config_strv *v = f;

		sb_puts(b, "[");
		for (size_t i = 0; i < v->n; i++) {
			if (i)
				sb_puts(b, ", ");
			sb_quote(b, v->v[i], strlen(v->v[i]));
		}
		sb_puts(b, "]");
		break;
	}
	case T_YAMLSEQ: {
		const char *s = *(char *const *)f;

		sb_puts(b, s ? s : "[]");
		break;
	}
	}
}

/* ---- lifecycle ---------------------------------------------------------- */

struct ember_config *config__free(struct ember_config *cfg)
{
	if (!cfg)
		return NULL;
	for (size_t i = 0; i < N_ENTRIES; i++)
		free_val(&entries[i], field(cfg, &entries[i]));
	free(cfg);
	return NULL;
}

struct ember_config *config__new(void)
{
	_cleanup_(config__freep) struct ember_config *cfg = calloc(1, sizeof(*cfg));

	if (!cfg)
		return NULL;
	for (size_t i = 0; i < N_ENTRIES; i++) {
		struct sbuf why = { .max = 1024 };
		union cfg_val v;
		int r = parse_val(&entries[i], entries[i].def, &v, &why);

		free(why.p);
		if (r < 0) {
			/* Only ENOMEM in practice: the unit tests load every default. */
			errno = -r;
			return NULL;
		}
		store_val(cfg, &entries[i], &v);
	}
	return TAKE_PTR(cfg);
}

static int dup_strv(struct config_strv *dst, const struct config_strv *src)
{
	dst->n = 0;
	dst->v = NULL;
	if (!src->n)
		return 0;
	dst->v = calloc(src->n, sizeof(*dst->v));
	if (!dst->v)
		return -ENOMEM;
	for (; dst->n < src->n; dst->n++)
		if (!(dst->v[dst->n] = strdup(src->v[dst->n])))
			return -ENOMEM;
	return 0;
}

struct ember_config *config__dup(const struct ember_config *cfg)
{
	_cleanup_(config__freep) struct ember_config *c = NULL;
	size_t i;

	if (!cfg) {
		errno = EINVAL;
		return NULL;
	}
	if (!(c = malloc(sizeof(*c))))
		return NULL;
	memcpy(c, cfg, sizeof(*c));
	/* Detach every owned pointer first so a failure half-way frees only copies. */
	for (i = 0; i < N_ENTRIES; i++)
		if (entries[i].type == T_STRING || entries[i].type == T_YAMLSEQ)
			*(char **)field(c, &entries[i]) = NULL;
		else if (entries[i].type == T_STRV)
			memset(field(c, &entries[i]), 0, sizeof(struct config_strv));
	for (i = 0; i < N_ENTRIES; i++) {
		const struct cfg_entry *e = &entries[i];

		if (e->type == T_STRING || e->type == T_YAMLSEQ) {
			const char *s = *(char *const *)cfield(cfg, e);

			if (s && !(*(char **)field(c, e) = strdup(s))) {
				errno = ENOMEM;
				return NULL;
			}
		} else if (e->type == T_STRV) {
			if (dup_strv(field(c, e), cfield(cfg, e)) < 0) {
				errno = ENOMEM;
				return NULL;
			}
		}
	}
	return TAKE_PTR(c);
}

/* Commit a successfully loaded copy: cfg takes tmp's values, tmp the old ones. */
static void swap_cfg(struct ember_config *cfg, struct ember_config *tmp)
{
	struct ember_config t = *cfg;

	*cfg = *tmp;
	*tmp = t;
}

/* ---- table lookups ------------------------------------------------------ */

static const struct cfg_entry *find_entry(const char *key)
{
	for (size_t i = 0; i < N_ENTRIES; i++)
		if (!strcasecmp(entries[i].key, key))
			return &entries[i];
	return NULL;
}

/* Is path a section, i.e. a strict prefix of some key at a '.'? */
static bool is_section(const char *path)
{
	size_t n = strlen(path);

	for (size_t i = 0; i < N_ENTRIES; i++)
		if (!strncasecmp(entries[i].key, path, n) && entries[i].key[n] == '.')
			return true;
	return false;
}

static size_t count_dots(const char *s, size_t n)
{
	size_t d = 0;

	for (size_t i = 0; i < n; i++)
		d += s[i] == '.';
	return d;
}

static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
	size_t row[129], i, j;

	for (j = 0; j <= nb; j++)
		row[j] = j;
	for (i = 1; i <= na; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (j = 1; j <= nb; j++) {
			size_t up = row[j];
			size_t cost = (a[i - 1] | 0x20) == (b[j - 1] | 0x20) ? 0 : 1;
			size_t best = diag + cost;

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[nb];
}

/* The known key or section closest to an unknown one, if close enough to be a typo. */
static void suggest(const char *path, char *buf, size_t len)
{
	size_t np = strlen(path), dots = count_dots(path, np), best = 3;

	buf[0] = 0;
	if (np > 128)
		return;
	for (size_t i = 0; i < N_ENTRIES; i++) {
		const char *k = entries[i].key;
		size_t nk = 0, d = 0;

		/* Compare with the key cut to as many segments as path has. */
		while (k[nk] && !(k[nk] == '.' && d == dots))
			d += k[nk++] == '.';
		if (nk > 128)
			continue;
		size_t dist = edit_distance(path, np, k, nk);
		if (dist > 0 && dist < best && dist * 3 <= np) {
			best = dist;
			snprintf(buf, len, " (did you mean '%.*s'?)", (int)nk, k);
		}
	}
}

/* ---- YAML loading ------------------------------------------------------- */

struct loader {
	yaml_parser_t parser;
	struct ember_config *cfg;
	unsigned char seen[N_ENTRIES];
	char *err;
	size_t errlen;
};

static size_t ev_line(const yaml_event_t *ev) { return ev->start_mark.line + 1; }

static void event_freep(yaml_event_t *ev) { yaml_event_delete(ev); }
#define _cleanup_event_ _cleanup_(event_freep)

static int next_event(struct loader *ld, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&ld->parser, ev)) {
		yaml_parser_t *p = &ld->parser;

		memset(ev, 0, sizeof(*ev));
		if (p->error == YAML_MEMORY_ERROR) {
			seterr(ld->err, ld->errlen, "out of memory");
			return -ENOMEM;
		}
		if (p->error == YAML_READER_ERROR)
			seterr(ld->err, ld->errlen, "invalid YAML input at byte %zu: %s", p->problem_offset,
			       p->problem ? p->problem : "unreadable");
		else
			seterr(ld->err, ld->errlen, "YAML syntax error (line %zu): %s%s%s", p->problem_mark.line + 1,
			       p->problem ? p->problem : "unknown problem", p->context ? " " : "",
			       p->context ? p->context : "");
		return -EINVAL;
	}
	if (ev->type == YAML_ALIAS_EVENT) {
		seterr(ld->err, ld->errlen, "YAML aliases are not supported (line %zu)", ev_line(ev));
		yaml_event_delete(ev);
		return -EINVAL;
	}
	return 0;
}

static bool scalar_is_null(const yaml_event_t *ev)
{
	return ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       is_null_word((const char *)ev->data.scalar.value, ev->data.scalar.length);
}

static bool env_name_char(char c, bool first)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_' || (!first && is_digit(c));
}

/*
 * A scalar's text, NUL-checked, with Rover's whole-value placeholder
 * `${NAME}` / `${NAME:default}` resolved: NAME's value when set and
 * non-empty, else default, stripped of one pair of surrounding quotes.  The
 * default runs to the last '}', so it may itself hold braces (Rover's
 * templates do).  Anything else is taken literally.
 */
static int scalar_text(struct loader *ld, const yaml_event_t *ev, char **ret)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t n = ev->data.scalar.length, i;
	const char *val = s;
	size_t vn = n;

	if (memchr(s, 0, n)) {
		seterr(ld->err, ld->errlen, "NUL byte in a YAML value (line %zu)", ev_line(ev));
		return -EINVAL;
	}
	if (n >= 4 && s[0] == '$' && s[1] == '{' && s[n - 1] == '}' && env_name_char(s[2], true)) {
		for (i = 3; i < n - 1 && env_name_char(s[i], false); i++)
			;
		if (i == n - 1 || s[i] == ':') {
			char name[256];
			const char *env;

			if (i - 2 < sizeof(name)) {
				memcpy(name, s + 2, i - 2);
				name[i - 2] = 0;
				env = getenv(name);
				if (env && *env) {
					val = env;
					vn = strlen(env);
				} else if (i == n - 1) {
					vn = 0;
				} else {
					val = s + i + 1;
					vn = n - 1 - (i + 1);
					if (vn >= 2 && (val[0] == '"' || val[0] == '\'') && val[vn - 1] == val[0]) {
						val++;
						vn -= 2;
					}
				}
			}
		}
	}
	if (!(*ret = strndup(val, vn))) {
		seterr(ld->err, ld->errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/*
 * Re-emit a YAML node (whose first event is ev) as canonical flow text.
 * Placeholders are resolved in it too, as Rover does everywhere.
 */
static int capture_node(struct loader *ld, const yaml_event_t *ev, struct sbuf *out, int depth)
{
	int r;

	switch (ev->type) {
	case YAML_SCALAR_EVENT: {
		_cleanup_free_ char *text = NULL;

		if (scalar_is_null(ev)) {
			sb_puts(out, "~");
			break;
		}
		if ((r = scalar_text(ld, ev, &text)) < 0)
			return r;
		sb_quote(out, text, strlen(text));
		break;
	}
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		bool map = ev->type == YAML_MAPPING_START_EVENT;
		yaml_event_type_t end = map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;

		if (depth > CONFIG_MAX_DEPTH) {
			seterr(ld->err, ld->errlen, "YAML nested deeper than %d levels (line %zu)", CONFIG_MAX_DEPTH,
			       ev_line(ev));
			return -EINVAL;
		}
		sb_puts(out, map ? "{" : "[");
		for (size_t n = 0;; n++) {
			_cleanup_event_ yaml_event_t item = { 0 };

			if ((r = next_event(ld, &item)) < 0)
				return r;
			if (item.type == end)
				break;
			if (n)
				sb_puts(out, ", ");
			if (map && item.type != YAML_SCALAR_EVENT) {
				seterr(ld->err, ld->errlen, "YAML mapping keys must be scalars (line %zu)",
				       ev_line(&item));
				return -EINVAL;
			}
			if ((r = capture_node(ld, &item, out, depth + 1)) < 0)
				return r;
			if (map) {
				_cleanup_event_ yaml_event_t val = { 0 };

				sb_puts(out, ": ");
				if ((r = next_event(ld, &val)) < 0)
					return r;
				if ((r = capture_node(ld, &val, out, depth + 1)) < 0)
					return r;
			}
			if (out->err)
				break;
		}
		sb_puts(out, map ? "}" : "]");
		break;
	}
	default:
		seterr(ld->err, ld->errlen, "unexpected YAML event (line %zu)", ev_line(ev));
		return -EINVAL;
	}
	if (out->err == -E2BIG) {
		seterr(ld->err, ld->errlen, "YAML value longer than %u bytes (line %zu)", CONFIG_MAX_YAMLSEQ_LEN,
		       ev_line(ev));
		return -EINVAL;
	}
	if (out->err) {
		seterr(ld->err, ld->errlen, "out of memory");
		return out->err;
	}
	return 0;
}

static int load_value(struct loader *ld, const struct cfg_entry *e, size_t key_line, int depth)
{
	_cleanup_event_ yaml_event_t ev = { 0 };
	_cleanup_free_ char *text = NULL;
	struct origin o;
	int r;

	if (ld->seen[e - entries]) {
		seterr(ld->err, ld->errlen, "duplicate configuration key '%s' (line %zu)", e->key, key_line);
		return -EINVAL;
	}
	ld->seen[e - entries] = 1;
	if ((r = next_event(ld, &ev)) < 0)
		return r;
	o = (struct origin){ .line = ev_line(&ev) };

	if (ev.type == YAML_SCALAR_EVENT) {
		if (scalar_is_null(&ev)) {
			/* An explicitly empty value: empty text or list; never a silent default. */
			if (e->type == T_STRING || e->type == T_STRV || e->type == T_YAMLSEQ)
				return set_text(ld->cfg, e, e->type == T_YAMLSEQ ? "[]" : "", &o, ld->err, ld->errlen);
			seterr(ld->err, ld->errlen, "missing value for '%s' (line %zu)", e->key, o.line);
			return -EINVAL;
		}
		if (e->type == T_YAMLSEQ) {
			seterr(ld->err, ld->errlen, "invalid value for '%s' (line %zu): expected a YAML sequence",
			       e->key, o.line);
			return -EINVAL;
		}
		if ((r = scalar_text(ld, &ev, &text)) < 0)
			return r;
		return set_text(ld->cfg, e, text, &o, ld->err, ld->errlen);
	}
	if (ev.type == YAML_SEQUENCE_START_EVENT && e->type == T_YAMLSEQ) {
		struct sbuf out = { .max = CONFIG_MAX_YAMLSEQ_LEN + 1 };
		union cfg_val v;

		if ((r = capture_node(ld, &ev, &out, depth + 1)) < 0) {
			free(out.p);
			return r;
		}
		v.s = out.p;
		store_val(ld->cfg, e, &v);
		return 0;
	}
	if (ev.type == YAML_SEQUENCE_START_EVENT && e->type == T_STRV) {
		struct sbuf why = { .max = 1024 };
		struct config_strv list = { 0 };
		union cfg_val v;

		if (depth + 1 > CONFIG_MAX_DEPTH) {
			seterr(ld->err, ld->errlen, "YAML nested deeper than %d levels (line %zu)", CONFIG_MAX_DEPTH,
			       o.line);
			return -EINVAL;
		}
		for (;;) {
			_cleanup_event_ yaml_event_t item = { 0 };
			_cleanup_free_ char *s = NULL;

			if ((r = next_event(ld, &item)) < 0)
				break;
			if (item.type == YAML_SEQUENCE_END_EVENT)
				break;
			if (item.type != YAML_SCALAR_EVENT) {
				seterr(ld->err, ld->errlen, "invalid value for '%s' (line %zu): expected a list of names",
				       e->key, ev_line(&item));
				r = -EINVAL;
				break;
			}
			if ((r = scalar_text(ld, &item, &s)) < 0)
				break;
			if ((r = strv_add(e, &list, s, strlen(s), &why)) < 0) {
				if (r == -ENOMEM)
					seterr(ld->err, ld->errlen, "out of memory");
				else
					seterr(ld->err, ld->errlen,
					       "invalid list item '%s' for '%s' (line %zu): expected %s", SHOW(s),
					       e->key, ev_line(&item), why.p ? why.p : "?");
				break;
			}
		}
		free(why.p);
		if (r < 0) {
			free_strv(&list);
			return r;
		}
		v.v = list;
		store_val(ld->cfg, e, &v);
		return 0;
	}
	seterr(ld->err, ld->errlen, "invalid value for '%s' (line %zu): expected %s", e->key, o.line,
	       e->type == T_YAMLSEQ ? "a YAML sequence" : e->type == T_STRV ? "a list" : "a single value");
	return -EINVAL;
}

static int load_mapping(struct loader *ld, const char *prefix, int depth);

static int load_section(struct loader *ld, const char *path, int depth)
{
	_cleanup_event_ yaml_event_t ev = { 0 };
	int r;

	if ((r = next_event(ld, &ev)) < 0)
		return r;
	if (ev.type == YAML_MAPPING_START_EVENT)
		return load_mapping(ld, path, depth + 1);
	if (ev.type == YAML_SCALAR_EVENT && scalar_is_null(&ev))
		return 0;	/* `section:` with nothing under it */
	seterr(ld->err, ld->errlen, "'%s' is a section (line %zu): expected a mapping of its keys", SHOW(path),
	       ev_line(&ev));
	return -EINVAL;
}

struct keylist {
	char **v;
	size_t n;
};

static void keylist_free(struct keylist *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i]);
	free(k->v);
}

static int load_mapping(struct loader *ld, const char *prefix, int depth)
{
	_cleanup_(keylist_free) struct keylist keys = { 0 };
	int r;

	if (depth > CONFIG_MAX_DEPTH) {
		seterr(ld->err, ld->errlen, "YAML nested deeper than %d levels (under '%s')", CONFIG_MAX_DEPTH,
		       SHOW(prefix));
		return -EINVAL;
	}
	for (;;) {
		_cleanup_event_ yaml_event_t kev = { 0 };
		char path[2 * MAX_KEY_LEN + 2];
		const struct cfg_entry *e;
		const char *key;
		size_t klen, line;
		char **nv;

		if ((r = next_event(ld, &kev)) < 0)
			return r;
		if (kev.type == YAML_MAPPING_END_EVENT)
			return 0;
		line = ev_line(&kev);
		if (kev.type != YAML_SCALAR_EVENT) {
			seterr(ld->err, ld->errlen, "configuration keys must be plain names (line %zu)", line);
			return -EINVAL;
		}
		key = (const char *)kev.data.scalar.value;
		klen = kev.data.scalar.length;
		if (!klen || klen > MAX_KEY_LEN || memchr(key, 0, klen) ||
		    (size_t)snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", key) >= sizeof(path) ||
		    strlen(path) > MAX_KEY_LEN) {
			seterr(ld->err, ld->errlen, "unknown configuration key '%s' (line %zu)",
			       show(key, klen).txt, line);
			return -EINVAL;
		}
		for (size_t i = 0; i < keys.n; i++) {
			if (!strcasecmp(keys.v[i], key)) {
				seterr(ld->err, ld->errlen, "duplicate configuration key '%s' (line %zu)", SHOW(path),
				       line);
				return -EINVAL;
			}
		}
		e = find_entry(path);
		if (!e && !is_section(path)) {
			char hint[300];

			suggest(path, hint, sizeof(hint));
			seterr(ld->err, ld->errlen, "unknown configuration key '%s' (line %zu)%s", SHOW(path), line,
			       hint);
			return -EINVAL;
		}
		/* Only known names get here, so the list stays as small as the table. */
		nv = realloc(keys.v, (keys.n + 1) * sizeof(*nv));
		if (!nv || !(nv[keys.n] = strdup(key))) {
			if (nv)
				keys.v = nv;
			seterr(ld->err, ld->errlen, "out of memory");
			return -ENOMEM;
		}
		keys.v = nv;
		keys.n++;
		r = e ? load_value(ld, e, line, depth) : load_section(ld, path, depth);
		if (r < 0)
			return r;
	}
}

static int load_stream(struct loader *ld)
{
	_cleanup_event_ yaml_event_t ev = { 0 };
	int r;

	if ((r = next_event(ld, &ev)) < 0)	/* STREAM-START */
		return r;
	yaml_event_delete(&ev);
	if ((r = next_event(ld, &ev)) < 0)
		return r;
	if (ev.type == YAML_STREAM_END_EVENT)
		return 0;	/* nothing but comments */
	yaml_event_delete(&ev);	/* DOCUMENT-START */
	if ((r = next_event(ld, &ev)) < 0)
		return r;
	if (ev.type == YAML_MAPPING_START_EVENT) {
		if ((r = load_mapping(ld, "", 1)) < 0)
			return r;
	} else if (!(ev.type == YAML_SCALAR_EVENT && scalar_is_null(&ev))) {
		seterr(ld->err, ld->errlen, "the configuration must be a mapping of keys (line %zu)", ev_line(&ev));
		return -EINVAL;
	}
	yaml_event_delete(&ev);
	if ((r = next_event(ld, &ev)) < 0)	/* DOCUMENT-END */
		return r;
	yaml_event_delete(&ev);
	if ((r = next_event(ld, &ev)) < 0)
		return r;
	if (ev.type != YAML_STREAM_END_EVENT) {
		seterr(ld->err, ld->errlen, "only one YAML document is allowed (line %zu)", ev_line(&ev));
		return -EINVAL;
	}
	return 0;
}

/* A yaml-seq value given as text (a default, --set): one YAML node, a sequence. */
static int yamlseq_from_text(const char *text, size_t len, char **ret, struct sbuf *why)
{
	struct loader ld = { 0 };
	struct sbuf out = { .max = CONFIG_MAX_YAMLSEQ_LEN + 1 };
	char msg[256] = "";
	yaml_event_t ev = { 0 };
	int r = -EINVAL;

	if (len > CONFIG_MAX_YAMLSEQ_LEN) {
		sb_puts(why, "a YAML sequence of at most 64KiB");
		return -EINVAL;
	}
	if (strspn(text, " \t\r\n") >= len) {
		if (!(*ret = strdup("[]")))
			return -ENOMEM;
		return 0;
	}
	if (!yaml_parser_initialize(&ld.parser))
		return -ENOMEM;
	ld.err = msg;
	ld.errlen = sizeof(msg);
	yaml_parser_set_input_string(&ld.parser, (const unsigned char *)text, len);
	for (int i = 0; i < 3; i++) {	/* STREAM-START, DOCUMENT-START, the node */
		yaml_event_delete(&ev);
		if ((r = next_event(&ld, &ev)) < 0)
			goto cleanup;
	}
	r = -EINVAL;
	if (ev.type == YAML_SCALAR_EVENT && scalar_is_null(&ev))
		sb_puts(&out, "[]");
	else if (ev.type != YAML_SEQUENCE_START_EVENT)
		goto cleanup;
	else if ((r = capture_node(&ld, &ev, &out, 1)) < 0)
		goto cleanup;
	yaml_event_delete(&ev);
	if ((r = next_event(&ld, &ev)) < 0)	/* DOCUMENT-END */
		goto cleanup;
	yaml_event_delete(&ev);
	if ((r = next_event(&ld, &ev)) < 0)
		goto cleanup;
	r = ev.type == YAML_STREAM_END_EVENT ? 0 : -EINVAL;
	if (!r && out.err)
		r = out.err == -ENOMEM ? -ENOMEM : -EINVAL;
cleanup:
	yaml_event_delete(&ev);
	yaml_parser_delete(&ld.parser);
	if (r < 0) {
		free(out.p);
		if (r == -ENOMEM)
			return r;
		sb_puts(why, "a YAML sequence");
		if (*msg) {
			sb_puts(why, " (");
			sb_puts(why, msg);
			sb_puts(why, ")");
		}
		return -EINVAL;
	}
	*ret = out.p;
	return 0;
}

int config__load_string(struct ember_config *cfg, const char *text, size_t len, char *err, size_t errlen)
{
	_cleanup_(config__freep) struct ember_config *tmp = NULL;
	struct loader *ld;
	int r;

	if (!cfg || (!text && len))
		return -EINVAL;
	if (len > CONFIG_MAX_FILE_SIZE) {
		seterr(err, errlen, "configuration larger than %u bytes", CONFIG_MAX_FILE_SIZE);
		return -EFBIG;
	}
	if (!(tmp = config__dup(cfg)) || !(ld = calloc(1, sizeof(*ld)))) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!yaml_parser_initialize(&ld->parser)) {
		free(ld);
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ld->cfg = tmp;
	ld->err = err;
	ld->errlen = errlen;
	yaml_parser_set_input_string(&ld->parser, (const unsigned char *)(text ? text : ""), len);
	r = load_stream(ld);
	yaml_parser_delete(&ld->parser);
	free(ld);
	if (r < 0)
		return r;
	swap_cfg(cfg, tmp);
	return 0;
}

int config__load_file(struct ember_config *cfg, const char *path, char *err, size_t errlen)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	struct stat st;

	if (!cfg || !path)
		return -EINVAL;
	/* O_NONBLOCK: a FIFO planted at the path must not hang the caller. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0 || fstat(fd, &st) < 0) {
		int r = -errno;

		seterr(err, errlen, "cannot open '%s': %s", SHOW(path), strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode)) {
		seterr(err, errlen, "'%s' is not a regular file", SHOW(path));
		return -EINVAL;
	}
	/* Root reads this file: one that anybody may write could hand anybody root's agent. */
	if (st.st_mode & S_IWOTH) {
		seterr(err, errlen, "'%s' is writable by other users", SHOW(path));
		return -EPERM;
	}
	if (!(buf = malloc(CONFIG_MAX_FILE_SIZE + 1))) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	/* Read one byte past the limit rather than trust st_size. */
	while (len <= CONFIG_MAX_FILE_SIZE) {
		ssize_t n = read(fd, buf + len, CONFIG_MAX_FILE_SIZE + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			seterr(err, errlen, "cannot read '%s': %s", SHOW(path), strerror(-r));
			return r;
		}
		if (n == 0)
			break;
		len += n;
	}
	if (len > CONFIG_MAX_FILE_SIZE) {
		seterr(err, errlen, "'%s' is larger than %u bytes", SHOW(path), CONFIG_MAX_FILE_SIZE);
		return -EFBIG;
	}
	return config__load_string(cfg, buf, len, err, errlen);
}

int config__load_env(struct ember_config *cfg, char *err, size_t errlen)
{
	_cleanup_(config__freep) struct ember_config *tmp = NULL;

	if (!cfg)
		return -EINVAL;
	if (!(tmp = config__dup(cfg))) {
		seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (size_t i = 0; i < N_ENTRIES; i++) {
		const struct cfg_entry *e = &entries[i];
		struct origin o = { .env = e->env };
		const char *v;
		int r;

		if (!e->env || !(v = getenv(e->env)) || !*v)
			continue;
		if ((r = set_text(tmp, e, v, &o, err, errlen)) < 0)
			return r;
	}
	swap_cfg(cfg, tmp);
	return 0;
}

int config__set(struct ember_config *cfg, const char *key, const char *value, char *err, size_t errlen)
{
	const struct cfg_entry *e;

	if (!cfg || !key || !value)
		return -EINVAL;
	if (!(e = find_entry(key))) {
		char hint[300] = "";

		if (strlen(key) <= MAX_KEY_LEN)
			suggest(key, hint, sizeof(hint));
		seterr(err, errlen, "unknown configuration key '%s'%s", SHOW(key), hint);
		return -ENOENT;
	}
	/* set_text only stores on success, so a failed --set changes nothing. */
	return set_text(cfg, e, value, NULL, err, errlen);
}

int config__set_arg(struct ember_config *cfg, const char *arg, char *err, size_t errlen)
{
	char key[MAX_KEY_LEN + 1];
	const char *eq;

	if (!cfg || !arg)
		return -EINVAL;
	eq = strchr(arg, '=');
	if (!eq || eq == arg) {
		seterr(err, errlen, "'%s' is not key=value", SHOW(arg));
		return -EINVAL;
	}
	if ((size_t)(eq - arg) > MAX_KEY_LEN) {
		seterr(err, errlen, "unknown configuration key '%s'", show(arg, eq - arg).txt);
		return -ENOENT;
	}
	memcpy(key, arg, eq - arg);
	key[eq - arg] = 0;
	return config__set(cfg, key, eq + 1, err, errlen);
}

int config__get(const struct ember_config *cfg, const char *key, char *buf, size_t len)
{
	struct sbuf b = { .max = SIZE_MAX };
	const struct cfg_entry *e;
	int r;

	if (!cfg || !key || !buf || !len)
		return -EINVAL;
	buf[0] = 0;
	if (!(e = find_entry(key)))
		return -ENOENT;
	format_val(&b, e, cfield(cfg, e));
	if (b.err) {
		free(b.p);
		return b.err;
	}
	snprintf(buf, len, "%s", b.p ? b.p : "");
	r = b.len >= len ? -ENOSPC : (int)b.len;
	free(b.p);
	return r;
}

const char *config__key_at(size_t i, const char **ret_env)
{
	if (i >= N_ENTRIES)
		return NULL;
	if (ret_env)
		*ret_env = entries[i].env;
	return entries[i].key;
}

/* ---- help and dump ------------------------------------------------------ */

int config__help(FILE *out)
{
	for (size_t i = 0; i < N_ENTRIES; i++) {
		const struct cfg_entry *e = &entries[i];
		struct sbuf b = { .max = SIZE_MAX }, why = { .max = 4096 };
		union cfg_val v;
		int r;

		if ((r = parse_val(e, e->def, &v, &why)) < 0) {
			free(why.p);
			return r;
		}
		free(why.p);
		sb_printf(&b, "%s\n    %s, default ", e->key, type_names[e->type]);
		format_val(&b, e, &v);
		free_val(e, &v);
		if (e->type == T_INT || e->type == T_DURATION || e->type == T_SIZE ||
		    e->type == T_ENUM || (e->type == T_STRV && e->words)) {
			sb_puts(&b, "; ");
			describe(&b, e);
		} else if (e->flags & (F_NONEMPTY | F_ABSPATH)) {
			sb_puts(&b, "; ");
			describe(&b, e);
		}
		sb_printf(&b, "\n    env %s\n    %s%s\n", e->env ? e->env : "(none)", e->help,
			  e->flags & F_COMPAT ? COMPAT_NOTE : "");
		if (b.err) {
			free(b.p);
			return b.err;
		}
		fputs(b.p, out);
		free(b.p);
	}
	return ferror(out) ? -EIO : 0;
}

static size_t split_key(const char *key, const char *seg[], size_t len[])
{
	size_t n = 0;

	for (const char *p = key; n < MAX_SEGMENTS; n++) {
		const char *dot = strchr(p, '.');

		seg[n] = p;
		len[n] = dot ? (size_t)(dot - p) : strlen(p);
		if (!dot)
			return n + 1;
		p = dot + 1;
	}
	return n;
}

/* b's text from mark on, with every "scheme://user:secret@" userinfo written as "scheme://<redacted>@". */
static void redact_urls(struct sbuf *b, size_t mark)
{
	size_t n = b->len - mark, i = 0;
	char *src;

	if (!b->p || !n || !(src = malloc(n)))
		return;
	memcpy(src, b->p + mark, n);
	b->len = mark;
	while (i < n) {
		size_t j, at = 0;

		if (i + 3 > n || memcmp(src + i, "://", 3)) {
			sb_putn(b, src + i++, 1);
			continue;
		}
		for (j = i + 3; j < n && src[j] != '/' && src[j] != ' ' && src[j] != '"' && src[j] != '\n'; j++)
			if (src[j] == '@')
				at = j;
		sb_putn(b, "://", 3);
		if (at) {
			sb_puts(b, "<redacted>");
			i = at;
		} else
			i += 3;
	}
	free(src);
}

void config__redact_urls(const char *s, char *buf, size_t len)
{
	struct sbuf b = { .max = SIZE_MAX };

	if (!len)
		return;
	sb_puts(&b, s ? s : "");
	redact_urls(&b, 0);
	snprintf(buf, len, "%.*s", b.p && !b.err ? (int)b.len : 0, b.p ? b.p : "");
	free(b.p);
}

int config__dump(const struct ember_config *cfg, FILE *out, unsigned flags)
{
	const char *pseg[MAX_SEGMENTS] = { 0 };
	size_t plen[MAX_SEGMENTS] = { 0 }, pn = 0;

	if (!cfg || !out)
		return -EINVAL;
	for (size_t i = 0; i < N_ENTRIES; i++) {
		const struct cfg_entry *e = &entries[i];
		struct sbuf b = { .max = SIZE_MAX };
		const char *seg[MAX_SEGMENTS] = { 0 };
		size_t len[MAX_SEGMENTS] = { 0 }, n = split_key(e->key, seg, len), common = 0, lvl;

		/* Sections shared with the previous key are already open. */
		while (common + 1 < n && common + 1 < pn && len[common] == plen[common] &&
		       !memcmp(seg[common], pseg[common], len[common]))
			common++;
		for (lvl = common; lvl + 1 < n; lvl++) {
			if (lvl == 0)
				sb_puts(&b, "\n");
			sb_printf(&b, "%*s%.*s:\n", (int)(2 * lvl), "", (int)len[lvl], seg[lvl]);
		}
		sb_printf(&b, "%*s# ", (int)(2 * (n - 1)), "");
		sb_puts(&b, e->help);
		if (e->flags & F_COMPAT)
			sb_puts(&b, COMPAT_NOTE);
		if (e->env) {
			sb_puts(&b, " [");
			sb_puts(&b, e->env);
			sb_puts(&b, "]");
		}
		sb_printf(&b, "\n%*s%.*s: ", (int)(2 * (n - 1)), "", (int)len[n - 1], seg[n - 1]);
		if ((flags & CONFIG_DUMP_REDACT) && (e->flags & F_SECRET) && *(char *const *)cfield(cfg, e) &&
		    **(char *const *)cfield(cfg, e))
			sb_puts(&b, "\"<redacted>\"");
		else {
			size_t mark = b.len;

			format_val(&b, e, cfield(cfg, e));
			if ((flags & CONFIG_DUMP_REDACT) && (e->flags & F_URLCRED) && !b.err)
				redact_urls(&b, mark);
		}
		sb_puts(&b, "\n");
		if (b.err) {
			free(b.p);
			return b.err;
		}
		fputs(b.p, out);
		free(b.p);
		memcpy(pseg, seg, sizeof(seg));
		memcpy(plen, len, sizeof(len));
		pn = n;
	}
	return ferror(out) ? -EIO : 0;
}
