/*
 * The `kafka` backend (librdkafka): gala-gopher's three topics, in the
 * shapes of gala-gopher's API documentation.
 *
 *   metric_topic (gala_gopher)   one JSON record per entity instance and
 *       table: {"timestamp", "machine_id", "hostname", "entity_name",
 *       "table_name", <keys>, <labels>, <metrics>}, values as strings as
 *       gala-gopher writes them.  Tables: l7_link and l7_rpc of entity "l7"
 *       (exporter/gala_tables.h) from every network flow of each report
 *       interval, and continuous_monitor from the continuous-profiling
 *       monitors' values (keys tgid, target, uri; label service; one metric
 *       named after the monitor's meter: process_cpu, http_error_rate, ...).
 *   event_topic (gala_gopher_event)   {"Timestamp", "event_id",
 *       "Attributes": {"entity_id", "event_id", "event_type"}, "Resource":
 *       {"metrics"}, "SeverityText", "SeverityNumber", "Body"}: a policy
 *       that held and started a profile (WARN, the meter that held, its
 *       value and threshold), a profiling task that finished (INFO, its
 *       flame graph's name) or failed (ERROR).  And a thread task's events
 *       as gala-gopher's tprofiling publishes them: one message per thread
 *       and window, the object exporter/thread_events.h makes (a line of the
 *       file backend's threads.json), with the machine_id and hostname of
 *       the metric records as host.id and host.name.
 *   meta_topic (gala_gopher_metadata)   {"timestamp", "meta_name",
 *       "entity_name", "version", "keys", "labels", "metrics"} for each
 *       table above, at start and every meta_period.
 *
 * Messages carry no key: librdkafka spreads them over the topic's partitions.
 *
 * Delivery: librdkafka queues (queue_buffering_max_messages / _kbytes) and
 * retries while the brokers are away, for message_timeout; what it gives up
 * on, and what finds the queue full, is dropped and counted.  The loop only
 * enqueues and polls for delivery reports: it never waits on a broker,
 * except at shutdown, where what is queued gets message_timeout (at most 10 s)
 * to go.
 */
#include <errno.h>
#include <json-c/json.h>
#include <librdkafka/rdkafka.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/profile_kind.h"
#include "common/timeutil.h"
#include "exporter/backend.h"
#include "exporter/gala_tables.h"
#include "exporter/thread_events.h"

enum kc {
	KC_SENT, KC_DELIVERED, KC_FAILED, KC_QUEUE_FULL, KC_PRODUCE_ERRORS, KC_BYTES, KC_METRICS, KC_EVENTS, KC_META,
	KC_THREADS, KC_MAX
};
_Static_assert(KC_MAX + 1 <= MAX_BACKEND_COUNTERS, "every Kafka counter fits what counters() may fill");
static const char *const kc_names[KC_MAX] = {
	"kafka_messages_queued", "kafka_messages_delivered", "kafka_messages_failed", "kafka_messages_queue_full",
	"kafka_produce_errors", "kafka_bytes_delivered", "kafka_metric_records", "kafka_events", "kafka_meta_records",
	"kafka_thread_records",
};

/* The monitors' table: one record per monitor value. */
static const char *const mon_keys[] = { "tgid", "target", "uri", NULL };
static const char *const mon_labels[] = { "service", "comm", NULL };
static const char *const mon_metrics[] = { "process_cpu", "process_thread_count", "system_load", "<p>_error_rate",
					   "<p>_avg_response_time", NULL };
static const struct gala_table mon_table = { "continuous_monitor", "continuous_monitor", mon_keys, mon_labels,
					     mon_metrics };

struct kafka_backend {
	const struct ember_config *cfg;
	rd_kafka_t *rk;
	struct thread_host host;	/* machine_id and hostname of every topic's messages */
	uint64_t next_meta;
	bool broker_down;		/* logged once until a message is delivered again */
	uint64_t c[KC_MAX];
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
	struct kafka_backend *kb = opaque;

	(void)rk;
	if (m->err) {
		kb->c[KC_FAILED]++;
		if (!kb->broker_down)
			log_warn("kafka: a message to topic %s was dropped: %s (further drops are counted in "
				 "kafka_messages_failed)", rd_kafka_topic_name(m->rkt), rd_kafka_err2str(m->err));
		kb->broker_down = true;
		return;
	}
	kb->c[KC_DELIVERED]++;
	kb->c[KC_BYTES] += m->len;
	if (kb->broker_down)
		log_info("kafka: messages are delivered again");
	kb->broker_down = false;
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
	struct kafka_backend *kb = opaque;

	(void)rk;
	/* Brokers coming and going are retried by librdkafka: logged once, as a warning. */
	if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__TRANSPORT) {
		if (!kb->broker_down)
			log_warn("kafka: %s (messages are kept and retried for exporter.kafka.message_timeout)", reason);
		kb->broker_down = true;
		return;
	}
	log_warn("kafka: %s", reason);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
	(void)rk;
	log_debug("kafka: %s: %s (level %d)", fac, buf, level);
}

static int conf_set(rd_kafka_conf_t *conf, const char *k, const char *v, char *err, size_t errlen)
{
	char e[256];

	if (rd_kafka_conf_set(conf, k, v, e, sizeof(e)) == RD_KAFKA_CONF_OK)
		return 0;
	snprintf(err, errlen, "librdkafka refuses %s=%s: %s", k, v, e);
	return -1;
}

static void *kafka_init(const struct ember_config *cfg, char *err, size_t errlen)
{
	static const char *const codecs[] = { "none", "gzip", "snappy", "lz4", "zstd" };
	struct kafka_backend *kb = calloc(1, sizeof(*kb));
	rd_kafka_conf_t *conf = rd_kafka_conf_new();
	const struct ember_config *c = cfg;
	char v[32], e[512];

	if (!kb || !conf) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	kb->cfg = cfg;
	snprintf(v, sizeof(v), "%lld", (long long)c->exporter.kafka.batch_num_messages);
	if (conf_set(conf, "bootstrap.servers", c->exporter.kafka.broker, err, errlen) ||
	    conf_set(conf, "batch.num.messages", v, err, errlen) ||
	    conf_set(conf, "compression.codec", codecs[c->exporter.kafka.compression_codec], err, errlen))
		goto fail;
	snprintf(v, sizeof(v), "%lld", (long long)c->exporter.kafka.queue_buffering_max_messages);
	if (conf_set(conf, "queue.buffering.max.messages", v, err, errlen))
		goto fail;
	snprintf(v, sizeof(v), "%lld", (long long)c->exporter.kafka.queue_buffering_max_kbytes);
	if (conf_set(conf, "queue.buffering.max.kbytes", v, err, errlen))
		goto fail;
	snprintf(v, sizeof(v), "%llu", (unsigned long long)(c->exporter.kafka.queue_buffering_max_ns / 1000000));
	if (conf_set(conf, "queue.buffering.max.ms", v, err, errlen))
		goto fail;
	snprintf(v, sizeof(v), "%llu", (unsigned long long)(c->exporter.kafka.message_timeout_ns / 1000000));
	if (conf_set(conf, "message.timeout.ms", v, err, errlen))
		goto fail;
	rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
	rd_kafka_conf_set_error_cb(conf, on_error);
	rd_kafka_conf_set_log_cb(conf, on_log);
	rd_kafka_conf_set_opaque(conf, kb);
	kb->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, e, sizeof(e));
	if (!kb->rk) {
		snprintf(err, errlen, "cannot create the Kafka producer: %s", e);
		goto fail;
	}
	conf = NULL; /* the producer owns it */
	/* the threads' host, with the machine_id the metric records already carry (gala-gopher's, from any of
	 * its files) and their "unknown" hostname: all of ember's Kafka messages name one host alike */
	thread_events__host(&kb->host);
	gala_tables__machine_id(kb->host.id, sizeof(kb->host.id));
	if (!kb->host.name[0])
		snprintf(kb->host.name, sizeof(kb->host.name), "unknown");
	log_info("kafka: brokers %s; topics %s (metrics), %s (events), %s (metadata)", c->exporter.kafka.broker,
		 c->exporter.kafka.metric_topic, c->exporter.kafka.event_topic, c->exporter.kafka.meta_topic);
	return kb;
fail:
	if (conf)
		rd_kafka_conf_destroy(conf);
	free(kb);
	errno = EINVAL;
	return NULL;
}

/*
 * Enqueues len bytes of s (copied) to topic.  A full queue is a drop, counted:
 * the loop never waits for room.
 */
static void produce_text(struct kafka_backend *kb, const char *topic, const char *s, size_t len)
{
	rd_kafka_resp_err_t e;

	e = rd_kafka_producev(kb->rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
			      RD_KAFKA_V_VALUE((void *)s, len), RD_KAFKA_V_END);
	if (e == RD_KAFKA_RESP_ERR_NO_ERROR)
		kb->c[KC_SENT]++;
	else if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL)
		kb->c[KC_QUEUE_FULL]++;
	else
		kb->c[KC_PRODUCE_ERRORS]++;
}

/* Enqueues obj's text to topic (obj is released). */
static void produce(struct kafka_backend *kb, const char *topic, json_object *obj)
{
	const char *s = obj ? json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN) : NULL;

	if (s)
		produce_text(kb, topic, s, strlen(s));
	else
		kb->c[KC_PRODUCE_ERRORS]++;
	json_object_put(obj);
}

/* prefix + src in lower case into dst (a monitor's meter name). */
static void lower_into(char *dst, size_t cap, const char *prefix, const char *src)
{
	size_t n = (size_t)snprintf(dst, cap, "%s", prefix);

	for (; src && *src && n + 1 < cap; src++)
		dst[n++] = (char)(*src >= 'A' && *src <= 'Z' ? *src + 32 : *src);
	if (n < cap)
		dst[n] = 0;
}

static void add_str(json_object *o, const char *k, const char *v) { json_object_object_add(o, k, json_object_new_string(v ? v : "")); }

static void add_num_str(json_object *o, const char *k, double v)
{
	char buf[48];

	if (v == (double)(long long)v && v < 1e15 && v > -1e15)
		snprintf(buf, sizeof(buf), "%lld", (long long)v);
	else
		snprintf(buf, sizeof(buf), "%.6g", v);
	add_str(o, k, buf);
}

static json_object *record_head(struct kafka_backend *kb, uint64_t ts_ms, const struct gala_table *t)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, "timestamp", json_object_new_int64((int64_t)ts_ms));
	add_str(o, "machine_id", kb->host.id);
	add_str(o, "hostname", kb->host.name);
	add_str(o, "entity_name", t->entity);
	add_str(o, "table_name", t->table);
	return o;
}

static void send_record(struct kafka_backend *kb, uint64_t ts_ms, const struct gala_record *r)
{
	json_object *o = record_head(kb, ts_ms, r->t);

	for (unsigned i = 0; o && i < r->nk; i++)
		add_str(o, r->keys[i].name, r->keys[i].value);
	for (unsigned i = 0; o && i < r->nl; i++)
		add_str(o, r->labels[i].name, r->labels[i].value);
	for (unsigned i = 0; o && i < r->nm; i++)
		add_num_str(o, r->metrics[i].name, r->metrics[i].value);
	kb->c[KC_METRICS]++;
	produce(kb, kb->cfg->exporter.kafka.metric_topic, o);
}

static void send_meta(struct kafka_backend *kb, uint64_t ts_ms, const struct gala_table *t)
{
	json_object *o = json_object_new_object(), *a;
	const char *const *lists[3] = { t->keys, t->labels, t->metrics };
	static const char *const names[3] = { "keys", "labels", "metrics" };

	if (!o)
		return;
	json_object_object_add(o, "timestamp", json_object_new_int64((int64_t)ts_ms));
	add_str(o, "meta_name", t->table);
	add_str(o, "entity_name", t->entity);
	add_str(o, "version", "1.0.0");
	for (unsigned l = 0; l < 3; l++) {
		a = json_object_new_array();
		/* gala-gopher's keys start with machine_id, its labels with hostname */
		if (l == 0)
			json_object_array_add(a, json_object_new_string("machine_id"));
		if (l == 1)
			json_object_array_add(a, json_object_new_string("hostname"));
		for (const char *const *p = lists[l]; *p; p++)
			json_object_array_add(a, json_object_new_string(*p));
		json_object_object_add(o, names[l], a);
	}
	kb->c[KC_META]++;
	produce(kb, kb->cfg->exporter.kafka.meta_topic, o);
}

static void kafka_on_network(void *st, const Ember__NetworkBatch *b)
{
	struct kafka_backend *kb = st;
	uint64_t ts = b->window_end_unix_ns / 1000000;
	uint64_t interval = (b->window_end_unix_ns - b->window_start_unix_ns) / 1000000;
	struct gala_record r[GALA_L7_TABLES];

	if (b->window_end_unix_ns <= b->window_start_unix_ns)
		interval = 0;
	for (size_t i = 0; i < b->n_flows; i++) {
		unsigned n = gala_tables__l7(b->flows[i], interval, r);

		for (unsigned k = 0; k < n; k++)
			send_record(kb, ts, &r[k]);
	}
}

static void kafka_on_monitors(void *st, const Ember__MonitorBatch *b, uint32_t analyzer)
{
	struct kafka_backend *kb = st;

	(void)analyzer;
	for (size_t i = 0; b && i < b->n_values; i++) {
		const Ember__MonitorValue *v = b->values[i];
		struct gala_record r = { .t = &mon_table };
		char metric[64];

		if (!v->monitor || !*v->monitor)
			continue;
		/* the meter's name: the monitor's in lower case (rover_con_p_<this> on /metrics) */
		lower_into(metric, sizeof(metric), "", v->monitor);
		r.keys[r.nk].name = "tgid";
		snprintf(r.keys[r.nk++].value, GALA_VALUE_MAX, "%u", v->pid);
		r.keys[r.nk].name = "target";
		snprintf(r.keys[r.nk++].value, GALA_VALUE_MAX, "%s", v->target ? v->target : "");
		r.keys[r.nk].name = "uri";
		snprintf(r.keys[r.nk++].value, GALA_VALUE_MAX, "%s", v->uri ? v->uri : "");
		r.labels[r.nl].name = "service";
		snprintf(r.labels[r.nl++].value, GALA_VALUE_MAX, "%s", v->service ? v->service : "");
		r.labels[r.nl].name = "comm";
		snprintf(r.labels[r.nl++].value, GALA_VALUE_MAX, "%s", v->comm ? v->comm : "");
		r.metrics[r.nm].name = metric;
		r.metrics[r.nm++].value = v->value;
		send_record(kb, b->timestamp_ms, &r);
	}
}

static void send_event(struct kafka_backend *kb, const char *entity_id, const char *metric, int severity,
		       const char *fmt, ...)
{
	static const struct { int n; const char *text; } sev[] = { { 9, "INFO" }, { 13, "WARN" }, { 17, "ERROR" } };
	uint64_t ts = timeutil__unix_ms();
	json_object *o = json_object_new_object(), *attr = json_object_new_object(), *res = json_object_new_object();
	char eid[300], body[1024], when[64], msg[768];
	time_t now = (time_t)(ts / 1000);
	struct tm tm;
	unsigned s = severity == 9 ? 0 : severity == 13 ? 1 : 2;
	va_list ap;

	if (!o || !attr || !res) {
		json_object_put(o);
		json_object_put(attr);
		json_object_put(res);
		kb->c[KC_PRODUCE_ERRORS]++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	localtime_r(&now, &tm);
	strftime(when, sizeof(when), "%a %b %e %H:%M:%S %Y", &tm);
	snprintf(body, sizeof(body), "%s %s %s", when, sev[s].text, msg);
	snprintf(eid, sizeof(eid), "%llu_%s", (unsigned long long)ts, entity_id);
	json_object_object_add(o, "Timestamp", json_object_new_int64((int64_t)ts));
	add_str(o, "event_id", eid);
	add_str(attr, "entity_id", entity_id);
	add_str(attr, "event_id", eid);
	add_str(attr, "event_type", "sys");
	json_object_object_add(o, "Attributes", attr);
	add_str(res, "metrics", metric);
	json_object_object_add(o, "Resource", res);
	add_str(o, "SeverityText", sev[s].text);
	json_object_object_add(o, "SeverityNumber", json_object_new_int(sev[s].n));
	add_str(o, "Body", body);
	kb->c[KC_EVENTS]++;
	produce(kb, kb->cfg->exporter.kafka.event_topic, o);
}

/*
 * gala-gopher's entity_id: <machine_id>_<entity>_<keys...>, characters
 * outside its set as ':'.
 */
static void entity_id(char *buf, size_t len, const char *machine_id, const char *entity, unsigned pid)
{
	snprintf(buf, len, "%s_%s_%u", machine_id, entity, pid);
	for (char *p = buf; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		      strchr("_-:.@()+,=;$!*'%", *p)))
			*p = ':';
}

/* "on-CPU", ... (common/profile_kind.h); "profiling" for a number that is no kind */
static const char *kind_name(Ember__TaskKind k)
{
	const struct profile_kind *pk = profile_kind__by_wire(k);

	return pk ? pk->adjective : "profiling";
}

static bool is_network(Ember__TaskKind k)
{
	const struct profile_kind *pk = profile_kind__by_wire(k);

	return pk && pk->flags & PROFILE_KIND_NETWORK;
}

static void kafka_on_task_event(void *st, const Ember__TaskEvent *ev)
{
	struct kafka_backend *kb = st;
	const Ember__Task *t = ev ? ev->task : NULL;
	unsigned pid;
	char eid[160], metric[96];

	if (!t)
		return;
	pid = t->n_pids ? t->pids[0] : 0;
	entity_id(eid, sizeof(eid), kb->host.id, "proc", pid);
	if (ev->state == EMBER__TASK_EVENT__STATE__STARTED && t->n_causes && t->causes[0]->monitor) {
		const Ember__TriggerCause *c = t->causes[0];

		lower_into(metric, sizeof(metric), "rover_con_p_", c->monitor);
		send_event(kb, eid, metric, 13,
			   "Entity(%u) Process(COMM:%s PID:%u) held policy '%s': %s %.4g >= %.4g in %u of the last %u s%s%s; "
			   "%s profiling started for %llu s (task %s).",
			   pid, c->comm ? c->comm : "", c->pid, c->policy ? c->policy : "", c->monitor, c->current,
			   c->threshold, c->matched, c->period_s, c->uri && *c->uri ? " on " : "", c->uri ? c->uri : "",
			   kind_name(t->kind), (unsigned long long)(t->duration_ms / 1000), t->id ? t->id : "");
		return;
	}
	/* a network task makes no profile: its end is no "ember_profile" event */
	if (ev->state == EMBER__TASK_EVENT__STATE__FINISHED && !is_network(t->kind)) {
		send_event(kb, eid, "ember_profile", 9, "Entity(%u) %s profile of %u process(es) finished (task %s%s%s).",
			   pid, kind_name(t->kind), (unsigned)t->n_pids, t->id ? t->id : "", t->origin && *t->origin ? ", " : "",
			   t->origin ? t->origin : "");
		return;
	}
	if (ev->state == EMBER__TASK_EVENT__STATE__FAILED)
		send_event(kb, eid, "ember_profile", 17, "Entity(%u) %s profiling task %s failed: %s.", pid,
			   kind_name(t->kind), t->id ? t->id : "", ev->error ? ev->error : "");
}

/* One thread's object of a batch: a message of its own, as tprofiling sends them. */
static int produce_thread(void *ctx, const char *json, size_t len)
{
	struct kafka_backend *kb = ctx;

	kb->c[KC_THREADS]++;
	produce_text(kb, kb->cfg->exporter.kafka.event_topic, json, len);
	/* a dropped message is counted; the batch's other threads still go */
	return 0;
}

static void kafka_on_threads(void *st, const Ember__ThreadBatch *b)
{
	struct kafka_backend *kb = st;

	/* only running out of memory stops a batch part way */
	if (b && b->n_events && thread_events__each(b, &kb->host, timeutil__unix_ms(), produce_thread, kb))
		kb->c[KC_PRODUCE_ERRORS]++;
}

static void kafka_tick(void *st, uint64_t now_ms, int final)
{
	struct kafka_backend *kb = st;
	uint64_t mono = timeutil__mono_ms();

	if (!final && mono >= kb->next_meta) {
		kb->next_meta = mono + kb->cfg->exporter.kafka.meta_period_ns / 1000000;
		for (unsigned i = 0; i < GALA_L7_TABLES; i++)
			send_meta(kb, now_ms, &gala_tables[i]);
		send_meta(kb, now_ms, &mon_table);
	}
	rd_kafka_poll(kb->rk, 0);
	if (final) {
		uint64_t t = kb->cfg->exporter.kafka.message_timeout_ns / 1000000;

		(void)rd_kafka_flush(kb->rk, (int)(t < 10000 ? t : 10000));
		if (rd_kafka_outq_len(kb->rk) > 0) {
			log_warn("kafka: %d message(s) not delivered at shutdown", rd_kafka_outq_len(kb->rk));
			kb->c[KC_FAILED] += (uint64_t)rd_kafka_outq_len(kb->rk);
		}
	}
}

static unsigned kafka_counters(void *st, struct backend_counter *ret, unsigned max)
{
	struct kafka_backend *kb = st;
	unsigned n = 0;

	for (unsigned i = 0; i < KC_MAX && n < max; i++)
		ret[n++] = (struct backend_counter){ kc_names[i], kb->c[i], 0 };
	if (n < max)
		ret[n++] = (struct backend_counter){ "kafka_messages_in_queue", (uint64_t)rd_kafka_outq_len(kb->rk), 1 };
	return n;
}

static void kafka_free(void *st)
{
	struct kafka_backend *kb = st;

	if (!kb)
		return;
	rd_kafka_destroy(kb->rk);
	free(kb);
}

const struct exporter_backend_ops kafka_backend_ops = {
	.name = "kafka",
	.init = kafka_init,
	.on_network = kafka_on_network,
	.on_task_event = kafka_on_task_event,
	.on_monitors = kafka_on_monitors,
	.on_threads = kafka_on_threads,
	.tick = kafka_tick,
	.counters = kafka_counters,
	.free = kafka_free,
};
