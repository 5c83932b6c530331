#include "common/bus.h"
#include "common/memstats.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zmq.h>

void bus__exporter_endpoint(const char *run_dir, char *buf, size_t len)
{
	snprintf(buf, len, "ipc://%s/" BUS_EXPORTER_DIR "/exporter.sock", run_dir);
}

void bus__exporter_ctl_endpoint(const char *run_dir, char *buf, size_t len)
{
	snprintf(buf, len, "ipc://%s/" BUS_EXPORTER_DIR "/exporter.ctl", run_dir);
}

void bus__analyzer_endpoint(const char *run_dir, unsigned shard, char *buf, size_t len)
{
	snprintf(buf, len, "ipc://%s/" BUS_ANALYZER_DIR "/analyzer-%u.ctl", run_dir, shard);
}

static int send_packed(void *sock, size_t len, void (*pack)(const void *, uint8_t *), const void *msg, int flags)
{
	zmq_msg_t m;

	if (zmq_msg_init_size(&m, len))
		return -errno;
	pack(msg, zmq_msg_data(&m));
	if (zmq_msg_send(&m, sock, flags) < 0) {
		int err = -errno;
		zmq_msg_close(&m);
		return err;
	}
	return 0;
}

static void pack_env(const void *m, uint8_t *out) { ember__envelope__pack(m, out); }
static void pack_rep(const void *m, uint8_t *out) { ember__reply__pack(m, out); }
static void pack_req(const void *m, uint8_t *out) { ember__request__pack(m, out); }

int bus__send_envelope(void *sock, const Ember__Envelope *env)
{
	return send_packed(sock, ember__envelope__get_packed_size(env), pack_env, env, ZMQ_DONTWAIT);
}

int bus__send_reply(void *sock, const Ember__Reply *rep)
{
	return send_packed(sock, ember__reply__get_packed_size(rep), pack_rep, rep, ZMQ_DONTWAIT);
}

static void *recv_unpack(void *sock, int flags, void *(*unpack)(size_t, const uint8_t *))
{
	zmq_msg_t m;
	void *out;

	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, sock, flags) < 0) {
		int err = errno;
		zmq_msg_close(&m);
		errno = err;
		return NULL;
	}
	out = unpack(zmq_msg_size(&m), zmq_msg_data(&m));
	zmq_msg_close(&m);
	if (!out)
		errno = EBADMSG;
	return out;
}

static void *unpack_env(size_t n, const uint8_t *d) { return ember__envelope__unpack(NULL, n, d); }
static void *unpack_req(size_t n, const uint8_t *d) { return ember__request__unpack(NULL, n, d); }
static void *unpack_rep(size_t n, const uint8_t *d) { return ember__reply__unpack(NULL, n, d); }

Ember__Envelope *bus__recv_envelope(void *sock, int flags) { return recv_unpack(sock, flags, unpack_env); }
Ember__Request *bus__recv_request(void *sock, int flags) { return recv_unpack(sock, flags, unpack_req); }
Ember__Reply *bus__recv_reply(void *sock, int flags) { return recv_unpack(sock, flags, unpack_rep); }

/* A REQ socket connected to endpoint; NULL + errno. */
static void *open_req(void *zctx, const char *endpoint, int timeout_ms)
{
	void *s = zmq_socket(zctx, ZMQ_REQ);
	int zero = 0, err;
	int64_t maxmsg = BUS_MAX_MSG;

	if (!s)
		return NULL;
	/* The sockets live in the unprivileged users' directories: a caller (root's CLI) sends
	 * nothing to whatever a link planted there points at. */
	if (!strncmp(endpoint, "ipc://", 6)) {
		struct stat st;

		if (lstat(endpoint + 6, &st)) {
			err = errno;
			goto fail;
		}
		if (!S_ISSOCK(st.st_mode)) {
			err = ENOTSOCK;
			goto fail;
		}
	}
	zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof(zero));
	zmq_setsockopt(s, ZMQ_RCVTIMEO, &timeout_ms, sizeof(timeout_ms));
	zmq_setsockopt(s, ZMQ_SNDTIMEO, &timeout_ms, sizeof(timeout_ms));
	zmq_setsockopt(s, ZMQ_MAXMSGSIZE, &maxmsg, sizeof(maxmsg));
	if (zmq_connect(s, endpoint)) {
		err = errno;
		goto fail;
	}
	return s;
fail:
	zmq_close(s);
	errno = err;
	return NULL;
}

int bus__call(void *zctx, const char *endpoint, const Ember__Request *req, Ember__Reply **ret, int timeout_ms)
{
	void *s = open_req(zctx, endpoint, timeout_ms);
	int err = 0;
	zmq_msg_t m;

	if (!s)
		return -errno;
	err = send_packed(s, ember__request__get_packed_size(req), pack_req, req, 0);
	if (err)
		goto out;
	zmq_msg_init(&m);
	if (zmq_msg_recv(&m, s, 0) < 0) {
		err = errno == EAGAIN ? -ETIMEDOUT : -errno;
		zmq_msg_close(&m);
		goto out;
	}
	*ret = ember__reply__unpack(NULL, zmq_msg_size(&m), zmq_msg_data(&m));
	zmq_msg_close(&m);
	if (!*ret)
		err = -EBADMSG;
out:
	zmq_close(s);
	return err;
}

void *bus__call_start(void *zctx, const char *endpoint, const Ember__Request *req)
{
	void *s = open_req(zctx, endpoint, 0);
	int err;

	if (!s)
		return NULL;
	err = send_packed(s, ember__request__get_packed_size(req), pack_req, req, ZMQ_DONTWAIT);
	if (err) {
		zmq_close(s);
		errno = -err;
		return NULL;
	}
	return s;
}

void bus__meter_init(Ember__Meter *m, const char *name, double value, int is_counter, uint64_t ts_ms)
{
	ember__meter__init(m);
	m->name = (char *)name;
	m->value = value;
	m->is_counter = is_counter;
	m->timestamp_ms = ts_ms;
}

void bus__meter_set_reset(struct bus_meter_set *ms, Ember__Label **labels, size_t n_labels)
{
	ms->n = 0;
	ms->labels = labels;
	ms->n_labels = n_labels;
}

int bus__meter_set_add(struct bus_meter_set *ms, const char *name, double value, int is_counter,
		       uint64_t ts_ms)
{
	Ember__Meter *m;

	if (ms->n >= BUS_METER_SET_MAX)
		return -ENOSPC;
	m = &ms->m[ms->n];
	snprintf(ms->names[ms->n], sizeof(ms->names[0]), "ember_%s", name);
	bus__meter_init(m, ms->names[ms->n], value, is_counter, ts_ms);
	m->n_labels = ms->n_labels;
	m->labels = ms->labels;
	ms->ptrs[ms->n++] = m;
	return 0;
}

int bus__meter_set_add_counters(struct bus_meter_set *ms, const struct counter_def *defs, const uint64_t *v,
				unsigned n, uint64_t ts_ms)
{
	int r = 0;

	for (unsigned i = 0; i < n && !r; i++)
		r = bus__meter_set_add(ms, defs[i].name,
				       defs[i].per_unit > 1 ? (double)v[i] / defs[i].per_unit : (double)v[i],
				       !defs[i].level, ts_ms);
	return r;
}

void bus__meter_set_add_memory(struct bus_meter_set *ms, const char *who, uint64_t ts_ms)
{
	static const char *const what[] = { "rss_bytes", "rss_peak_bytes", "jemalloc_allocated_bytes",
					    "jemalloc_resident_bytes" };
	struct memstats mem;
	uint64_t v[4];
	char name[BUS_METER_NAME_LEN - sizeof("ember_") + 1];   /* with the prefix, fits a meter name */

	if (memstats__read(&mem))
		return;
	v[0] = mem.rss;
	v[1] = mem.rss_peak;
	v[2] = mem.allocated;
	v[3] = mem.resident;
	for (unsigned i = 0; i < (mem.jemalloc ? 4u : 2u); i++) {
		snprintf(name, sizeof(name), "%s_%s", who, what[i]);
		bus__meter_set_add(ms, name, (double)v[i], 0, ts_ms);
	}
}
