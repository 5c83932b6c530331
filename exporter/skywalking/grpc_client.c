#include "exporter/skywalking/grpc_client.h"

#include <dlfcn.h>
#include <errno.h>
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/slice.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>


#define PEM_MAX         (1u << 20)
#define POLL_SLICE_MS   50

/* Every gRPC function we use, resolved from the dlopen()ed library. */
#define GRPC_SYMS(X) \
	X(grpc_init) X(grpc_shutdown) \
	X(grpc_completion_queue_create_for_next) X(grpc_completion_queue_next) \
	X(grpc_completion_queue_shutdown) X(grpc_completion_queue_destroy) \
	X(grpc_channel_create) X(grpc_channel_destroy) X(grpc_channel_check_connectivity_state) \
	X(grpc_channel_create_call) X(grpc_call_start_batch) X(grpc_call_cancel) X(grpc_call_unref) \
	X(grpc_insecure_credentials_create) X(grpc_ssl_credentials_create_ex) \
	X(grpc_channel_credentials_release) \
	X(grpc_slice_from_copied_buffer) X(grpc_slice_from_copied_string) X(grpc_slice_unref) \
	X(grpc_raw_byte_buffer_create) X(grpc_byte_buffer_destroy) X(grpc_byte_buffer_length) \
	X(grpc_byte_buffer_reader_init) X(grpc_byte_buffer_reader_readall) X(grpc_byte_buffer_reader_destroy) \
	X(grpc_metadata_array_init) X(grpc_metadata_array_destroy) \
	X(gpr_now) X(gpr_time_add) X(gpr_time_from_millis)
/* Only needed for insecure_skip_verify (experimental TLS API). */
#define GRPC_TLS_SYMS(X) \
	X(grpc_tls_credentials_options_create) X(grpc_tls_credentials_options_set_certificate_provider) \
	X(grpc_tls_credentials_options_watch_root_certs) X(grpc_tls_credentials_options_watch_identity_key_cert_pairs) \
	X(grpc_tls_credentials_options_set_verify_server_cert) X(grpc_tls_credentials_options_set_certificate_verifier) \
	X(grpc_tls_credentials_options_set_check_call_host) \
	X(grpc_tls_certificate_provider_static_data_create) X(grpc_tls_certificate_provider_release) \
	X(grpc_tls_identity_pairs_create) X(grpc_tls_identity_pairs_add_pair) \
	X(grpc_tls_certificate_verifier_no_op_create) X(grpc_tls_certificate_verifier_release) \
	X(grpc_tls_credentials_create)

struct grpc_api {
#define X(f) __typeof__(&f) f;
	GRPC_SYMS(X)
	GRPC_TLS_SYMS(X)
#undef X
	bool has_tls_api;
};

struct gc_call;
struct gc_tag { struct gc_call *call; int is_recv; };

struct gc_call {
	struct gc_call *next;
	char *method;
	struct grpc_msg *msgs;
	size_t n, sent;
	unsigned timeout_ms;
	uint64_t cookie, start_ms;
	/* thread side */
	grpc_call *call;
	struct gc_tag send_tag, recv_tag;
	int pending_batches;
	bool send_failed, cancelled;
	grpc_byte_buffer *send_bb, *resp_bb;
	grpc_metadata_array initial_md, trailing_md;
	grpc_status_code status;
	grpc_slice details;
};

struct done {
	struct done *next;
	struct grpc_result r;
};

struct grpc_client {
	void *dl;
	struct grpc_api g;
	bool grpc_inited;
	grpc_channel *channel;
	grpc_completion_queue *cq;
	char *auth;
	unsigned check_period_ms, max_pending;

	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	/* under lock */
	struct gc_call *queued, **queued_tail;
	struct done *done, **done_tail;
	unsigned pending;		/* queued + in flight + finished but not polled */
	bool stop;

	atomic_int conn;
	int wake_fd;            /* eventfd: written once per finished call */
	/* thread only */
	struct gc_call *active;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int load_api(struct grpc_client *c, char *err, size_t errlen)
{
	/* Debian 12 ships libgrpc.so.29 (1.51), the ABI of the headers we build with. */
	static const char *const names[] = { "libgrpc.so.29", "libgrpc.so", NULL };

	for (unsigned i = 0; names[i] && !c->dl; i++)
		c->dl = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!c->dl) {
		snprintf(err, errlen, "the SkyWalking backend needs libgrpc (Debian: libgrpc29): %s", dlerror());
		return -ENOENT;
	}
#define X(f) \
	if (!(c->g.f = (__typeof__(&f))dlsym(c->dl, #f))) { \
		snprintf(err, errlen, "libgrpc lacks %s", #f); \
		return -ENOENT; \
	}
	GRPC_SYMS(X)
#undef X
	c->g.has_tls_api = true;
#define X(f) \
	if (!(c->g.f = (__typeof__(&f))dlsym(c->dl, #f))) \
		c->g.has_tls_api = false;
	GRPC_TLS_SYMS(X)
#undef X
	return 0;
}

static int read_pem(const char *path, char **ret, const char *what, char *err, size_t errlen)
{
	FILE *f;
	char *buf;
	size_t len;
	int e = 0;

	*ret = NULL;
	if (!path || !path[0])
		return 0;
	f = fopen(path, "re");
	if (!f) {
		e = -errno;
		snprintf(err, errlen, "cannot read %s %s: %s", what, path, strerror(-e));
		return e;
	}
	buf = malloc(PEM_MAX + 1);
	if (!buf) {
		fclose(f);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	len = fread(buf, 1, PEM_MAX + 1, f);
	if (ferror(f) || len > PEM_MAX || len == 0) {
		e = len > PEM_MAX ? -EFBIG : ferror(f) ? -EIO : -ENODATA;
		snprintf(err, errlen, "cannot read %s %s: %s", what, path,
			 e == -EFBIG ? "larger than 1 MiB" : e == -EIO ? "read error" : "empty file");
		free(buf);
		fclose(f);
		return e;
	}
	fclose(f);
	buf[len] = 0;
	*ret = buf;
	return 0;
}

static grpc_channel_credentials *make_creds(struct grpc_client *c, const struct grpc_client_opts *o, char *err,
					    size_t errlen, int *rerr)
{
	char *ca = NULL, *cert = NULL, *key = NULL;
	grpc_channel_credentials *creds = NULL;

	*rerr = 0;
	if (!o->tls)
		return c->g.grpc_insecure_credentials_create();
	if ((*rerr = read_pem(o->ca_pem_path, &ca, "core.backend.ca_pem_path", err, errlen)) ||
	    (*rerr = read_pem(o->client_pem_path, &cert, "core.backend.client_pem_path", err, errlen)) ||
	    (*rerr = read_pem(o->client_key_path, &key, "core.backend.client_key_path", err, errlen)))
		goto out;
	if (!cert != !key) {
		snprintf(err, errlen, "mutual TLS needs both core.backend.client_pem_path and client_key_path");
		*rerr = -EINVAL;
		goto out;
	}
	if (o->insecure_skip_verify) {
		grpc_tls_credentials_options *opts;
		grpc_tls_certificate_provider *prov;
		grpc_tls_certificate_verifier *ver;
		grpc_tls_identity_pairs *pairs = NULL;

		if (!c->g.has_tls_api) {
			snprintf(err, errlen, "core.backend.insecure_skip_verify needs gRPC's TLS credentials API, "
					      "which this libgrpc lacks");
			*rerr = -EOPNOTSUPP;
			goto out;
		}
		opts = c->g.grpc_tls_credentials_options_create();
		if (cert) {
			pairs = c->g.grpc_tls_identity_pairs_create();
			c->g.grpc_tls_identity_pairs_add_pair(pairs, key, cert);
		}
		/* gRPC asserts (aborts) on a provider with neither roots nor identity */
		if (ca || pairs) {
			prov = c->g.grpc_tls_certificate_provider_static_data_create(ca, pairs);
			c->g.grpc_tls_credentials_options_set_certificate_provider(opts, prov);
			c->g.grpc_tls_certificate_provider_release(prov);
		}
		if (ca)
			c->g.grpc_tls_credentials_options_watch_root_certs(opts);
		if (cert)
			c->g.grpc_tls_credentials_options_watch_identity_key_cert_pairs(opts);
		c->g.grpc_tls_credentials_options_set_verify_server_cert(opts, 0);
		c->g.grpc_tls_credentials_options_set_check_call_host(opts, 0);
		ver = c->g.grpc_tls_certificate_verifier_no_op_create();
		c->g.grpc_tls_credentials_options_set_certificate_verifier(opts, ver);
		c->g.grpc_tls_certificate_verifier_release(ver);
		creds = c->g.grpc_tls_credentials_create(opts);	/* takes opts */
	} else {
		grpc_ssl_pem_key_cert_pair pair = { .private_key = key, .cert_chain = cert };
		creds = c->g.grpc_ssl_credentials_create_ex(ca, cert ? &pair : NULL, NULL, NULL);
	}
	if (!creds) {
		snprintf(err, errlen, "gRPC refused the TLS settings (core.backend.*)");
		*rerr = -EINVAL;
	}
out:
	free(ca);
	free(cert);
	if (key) {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	return creds;
}

static void free_msgs(struct grpc_msg *msgs, size_t n)
{
	for (size_t i = 0; msgs && i < n; i++)
		free(msgs[i].data);
	free(msgs);
}

static void call_free(struct grpc_client *c, struct gc_call *k)
{
	if (!k)
		return;
	if (k->call) {
		if (k->send_bb)
			c->g.grpc_byte_buffer_destroy(k->send_bb);
		if (k->resp_bb)
			c->g.grpc_byte_buffer_destroy(k->resp_bb);
		c->g.grpc_metadata_array_destroy(&k->initial_md);
		c->g.grpc_metadata_array_destroy(&k->trailing_md);
		c->g.grpc_slice_unref(k->details);
		c->g.grpc_call_unref(k->call);
	}
	free_msgs(k->msgs, k->n);
	free(k->method);
	free(k);
}

static void push_done(struct grpc_client *c, struct done *d)
{
	pthread_mutex_lock(&c->lock);
	d->next = NULL;
	*c->done_tail = d;
	c->done_tail = &d->next;
	if (c->wake_fd >= 0)
		(void)!write(c->wake_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
	/* an answer is the best evidence of a working channel */
	if (d->r.status == GRPC_STATUS_OK)
		atomic_store(&c->conn, GRPC_CONN_UP);
	pthread_mutex_unlock(&c->lock);
}

/* A result for a call that never reached gRPC (or whose result memory failed). */
static void finish_local(struct grpc_client *c, struct gc_call *k, const char *why)
{
	struct done *d = calloc(1, sizeof(*d));

	if (d) {
		d->r.cookie = k->cookie;
		d->r.status = GRPC_CLIENT_LOCAL_ERROR;
		snprintf(d->r.details, sizeof(d->r.details), "%s", why);
		push_done(c, d);
	} else {
		pthread_mutex_lock(&c->lock);
		c->pending--;	/* nobody will poll it */
		pthread_mutex_unlock(&c->lock);
	}
}

static void finish_call(struct grpc_client *c, struct gc_call *k)
{
	struct done *d = calloc(1, sizeof(*d));

	if (!d) {
		finish_local(c, k, "out of memory");
		return;
	}
	d->r.cookie = k->cookie;
	d->r.status = (int)k->status;
	d->r.elapsed_ms = mono_ms() - k->start_ms;
	if (GRPC_SLICE_LENGTH(k->details))
		snprintf(d->r.details, sizeof(d->r.details), "%.*s", (int)GRPC_SLICE_LENGTH(k->details),
			 (const char *)GRPC_SLICE_START_PTR(k->details));
	if (k->status == GRPC_STATUS_OK && k->resp_bb) {
		grpc_byte_buffer_reader rd;
		if (c->g.grpc_byte_buffer_reader_init(&rd, k->resp_bb)) {
			grpc_slice s = c->g.grpc_byte_buffer_reader_readall(&rd);
			size_t len = GRPC_SLICE_LENGTH(s);
			d->r.resp = malloc(len ? len : 1);
			if (d->r.resp) {
				memcpy(d->r.resp, GRPC_SLICE_START_PTR(s), len);
				d->r.resp_len = len;
			} else {
				d->r.status = GRPC_CLIENT_LOCAL_ERROR;
				snprintf(d->r.details, sizeof(d->r.details), "out of memory for the response");
			}
			c->g.grpc_slice_unref(s);
			c->g.grpc_byte_buffer_reader_destroy(&rd);
		}
	}
	push_done(c, d);
}

/* Starts the batch that sends message k->sent (with the metadata first, the half-close last). */
static int send_next(struct grpc_client *c, struct gc_call *k, grpc_metadata *md, size_t nmd)
{
	grpc_op ops[3];
	size_t nops = 0;

	memset(ops, 0, sizeof(ops));
	if (k->sent == 0) {
		ops[nops].op = GRPC_OP_SEND_INITIAL_METADATA;
		ops[nops].data.send_initial_metadata.count = nmd;
		ops[nops].data.send_initial_metadata.metadata = md;
		nops++;
	}
	if (k->sent < k->n) {
		grpc_slice s = c->g.grpc_slice_from_copied_buffer((const char *)k->msgs[k->sent].data,
								  k->msgs[k->sent].len);
		k->send_bb = c->g.grpc_raw_byte_buffer_create(&s, 1);
		c->g.grpc_slice_unref(s);
		ops[nops].op = GRPC_OP_SEND_MESSAGE;
		ops[nops].data.send_message.send_message = k->send_bb;
		nops++;
		/* the copy is in the byte buffer now */
		free(k->msgs[k->sent].data);
		k->msgs[k->sent].data = NULL;
	}
	if (k->sent + 1 >= k->n)
		ops[nops++].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
	k->sent++;
	if (c->g.grpc_call_start_batch(k->call, ops, nops, &k->send_tag, NULL) != GRPC_CALL_OK)
		return -EIO;
	k->pending_batches++;
	return 0;
}

static void start_call(struct grpc_client *c, struct gc_call *k)
{
	grpc_slice method = c->g.grpc_slice_from_copied_string(k->method);
	gpr_timespec deadline = c->g.gpr_time_add(c->g.gpr_now(GPR_CLOCK_MONOTONIC),
						  c->g.gpr_time_from_millis(k->timeout_ms, GPR_TIMESPAN));
	grpc_metadata md = { 0 };
	grpc_op ops[3];

	k->start_ms = mono_ms();
	k->call = c->g.grpc_channel_create_call(c->channel, NULL, GRPC_PROPAGATE_DEFAULTS, c->cq, method, NULL,
						deadline, NULL);
	c->g.grpc_slice_unref(method);
	if (!k->call) {
		finish_local(c, k, "gRPC could not create the call");
		call_free(c, k);
		return;
	}
	c->g.grpc_metadata_array_init(&k->initial_md);
	c->g.grpc_metadata_array_init(&k->trailing_md);
	k->details = c->g.grpc_slice_from_copied_string("");
	k->send_tag = (struct gc_tag){ k, 0 };
	k->recv_tag = (struct gc_tag){ k, 1 };
	memset(ops, 0, sizeof(ops));
	ops[0].op = GRPC_OP_RECV_INITIAL_METADATA;
	ops[0].data.recv_initial_metadata.recv_initial_metadata = &k->initial_md;
	ops[1].op = GRPC_OP_RECV_MESSAGE;
	ops[1].data.recv_message.recv_message = &k->resp_bb;
	ops[2].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
	ops[2].data.recv_status_on_client.trailing_metadata = &k->trailing_md;
	ops[2].data.recv_status_on_client.status = &k->status;
	ops[2].data.recv_status_on_client.status_details = &k->details;
	if (c->g.grpc_call_start_batch(k->call, ops, 3, &k->recv_tag, NULL) != GRPC_CALL_OK) {
		finish_local(c, k, "gRPC refused the receive batch");
		call_free(c, k);
		return;
	}
	k->pending_batches++;
	if (c->auth) {
		/* gRPC wants lower-case keys; Rover's `Authentication` arrives the same way. */
		md.key = c->g.grpc_slice_from_copied_string("authentication");
		md.value = c->g.grpc_slice_from_copied_string(c->auth);
	}
	if (send_next(c, k, c->auth ? &md : NULL, c->auth ? 1 : 0)) {
		k->send_failed = true;
		c->g.grpc_call_cancel(k->call, NULL);
	}
	if (c->auth) {
		c->g.grpc_slice_unref(md.key);
		c->g.grpc_slice_unref(md.value);
	}
	k->next = c->active;
	c->active = k;
}

static void unlink_active(struct grpc_client *c, struct gc_call *k)
{
	for (struct gc_call **p = &c->active; *p; p = &(*p)->next)
		if (*p == k) {
			*p = k->next;
			return;
		}
}

static void on_event(struct grpc_client *c, grpc_event ev)
{
	struct gc_tag *t = ev.tag;
	struct gc_call *k = t->call;

	k->pending_batches--;
	if (!t->is_recv) {
		if (k->send_bb) {
			c->g.grpc_byte_buffer_destroy(k->send_bb);
			k->send_bb = NULL;
		}
		if (!ev.success)
			k->send_failed = true;	/* the status arrives with the receive batch */
		else if (!k->cancelled && k->sent < k->n && send_next(c, k, NULL, 0)) {
			k->send_failed = true;
			c->g.grpc_call_cancel(k->call, NULL);
		}
	}
	if (k->pending_batches == 0) {
		unlink_active(c, k);
		finish_call(c, k);
		call_free(c, k);
	}
}

#define CONN_SAMPLE_MS 250

static void sample_connectivity(struct grpc_client *c)
{
	grpc_connectivity_state s = c->g.grpc_channel_check_connectivity_state(c->channel, 1);

	if (s == GRPC_CHANNEL_READY)
		atomic_store(&c->conn, GRPC_CONN_UP);
	else if (s == GRPC_CHANNEL_TRANSIENT_FAILURE || s == GRPC_CHANNEL_SHUTDOWN)
		atomic_store(&c->conn, GRPC_CONN_DOWN);
	/* IDLE / CONNECTING: keep what we knew */
}

static void *thread_main(void *arg)
{
	struct grpc_client *c = arg;
	uint64_t last_check = 0;
	bool stop = false;

	while (!stop || c->active) {
		struct gc_call *batch;
		grpc_event ev;
		uint64_t now;

		pthread_mutex_lock(&c->lock);
		batch = c->queued;
		c->queued = NULL;
		c->queued_tail = &c->queued;
		if (c->stop && !stop) {
			stop = true;
			for (struct gc_call *k = c->active; k; k = k->next) {
				k->cancelled = true;
				c->g.grpc_call_cancel(k->call, NULL);
			}
		}
		pthread_mutex_unlock(&c->lock);
		while (batch) {
			struct gc_call *k = batch;
			batch = k->next;
			if (stop) {
				finish_local(c, k, "client stopped");
				call_free(c, k);
			} else {
				start_call(c, k);
			}
		}
		now = mono_ms();
		/* Often: a local read that also starts a connection attempt, so an OAP back is seen within a second. */
		if (!stop && now - last_check >= (c->check_period_ms < CONN_SAMPLE_MS ? c->check_period_ms : CONN_SAMPLE_MS)) {
			last_check = now;
			sample_connectivity(c);
		}
		ev = c->g.grpc_completion_queue_next(
			c->cq,
			c->g.gpr_time_add(c->g.gpr_now(GPR_CLOCK_MONOTONIC),
					  c->g.gpr_time_from_millis(POLL_SLICE_MS, GPR_TIMESPAN)),
			NULL);
		while (ev.type == GRPC_OP_COMPLETE) {
			on_event(c, ev);
			ev = c->g.grpc_completion_queue_next(c->cq, c->g.gpr_now(GPR_CLOCK_MONOTONIC), NULL);
		}
	}
	return NULL;
}

struct grpc_client *grpc_client__new(const struct grpc_client_opts *o, char *err, size_t errlen)
{
	struct grpc_client *c = calloc(1, sizeof(*c));
	grpc_channel_credentials *creds = NULL;
	grpc_arg args[4];
	grpc_channel_args ca = { .num_args = 0, .args = args };
	int e = 0;

	if (!c) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&c->lock, NULL);
	/* Non-blocking: the thread never waits on the caller, and the caller
	 * drains it without waiting. */
	c->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (c->wake_fd < 0) {
		e = -errno;
		snprintf(err, errlen, "eventfd: %s", strerror(errno));
		goto fail;
	}
	c->queued_tail = &c->queued;
	c->done_tail = &c->done;
	c->check_period_ms = o->check_period_ms ? o->check_period_ms : 5000;
	c->max_pending = o->max_pending ? o->max_pending : 64;
	atomic_init(&c->conn, GRPC_CONN_UNKNOWN);
	if (!o->target || !o->target[0]) {
		snprintf(err, errlen, "core.backend.addr is empty");
		e = -EINVAL;
		goto fail;
	}
	if ((e = load_api(c, err, errlen)))
		goto fail;
	if (o->authentication && o->authentication[0] && !(c->auth = strdup(o->authentication))) {
		e = -ENOMEM;
		goto fail;
	}
	c->g.grpc_init();
	c->grpc_inited = true;
	creds = make_creds(c, o, err, errlen, &e);
	if (!creds) {
		if (!e) {
			snprintf(err, errlen, "gRPC could not create credentials");
			e = -EINVAL;
		}
		goto fail;
	}
	/* gRPC's own reconnect backoff grows to 120 s by default: an OAP back after
	 * a restart would wait that long.  Cap it; our own retries back off above it. */
	memset(args, 0, sizeof(args));
	args[ca.num_args].type = GRPC_ARG_INTEGER;
	args[ca.num_args].key = GRPC_ARG_MAX_RECONNECT_BACKOFF_MS;
	args[ca.num_args++].value.integer = (int)(o->max_reconnect_backoff_ms ? o->max_reconnect_backoff_ms : 5000);
	args[ca.num_args].type = GRPC_ARG_INTEGER;
	args[ca.num_args].key = GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS;
	args[ca.num_args++].value.integer = 500;
	args[ca.num_args].type = GRPC_ARG_INTEGER;
	args[ca.num_args].key = GRPC_ARG_MIN_RECONNECT_BACKOFF_MS;
	args[ca.num_args++].value.integer = 500;
	args[ca.num_args].type = GRPC_ARG_STRING;
	args[ca.num_args].key = GRPC_ARG_PRIMARY_USER_AGENT_STRING;
	args[ca.num_args++].value.string = "ember-skywalking";
	c->channel = c->g.grpc_channel_create(o->target, creds, &ca);
	c->g.grpc_channel_credentials_release(creds);
	c->cq = c->g.grpc_completion_queue_create_for_next(NULL);
	if (!c->channel || !c->cq) {
		snprintf(err, errlen, "gRPC could not create a channel to %s", o->target);
		e = -EINVAL;
		goto fail;
	}
	if ((e = -pthread_create(&c->thread, NULL, thread_main, c))) {
		snprintf(err, errlen, "cannot start the gRPC thread: %s", strerror(-e));
		goto fail;
	}
	c->thread_started = true;
	return c;
fail:
	grpc_client__free(c);
	errno = -e;
	return NULL;
}

int grpc_client__call(struct grpc_client *c, const char *method, struct grpc_msg *msgs, size_t n,
		      unsigned timeout_ms, uint64_t cookie)
{
	struct gc_call *k;

	if (!c || !method || (n && !msgs)) {
		free_msgs(msgs, n);
		return -EINVAL;
	}
	pthread_mutex_lock(&c->lock);
	if (c->pending >= c->max_pending || c->stop) {
		pthread_mutex_unlock(&c->lock);
		free_msgs(msgs, n);
		return -EBUSY;
	}
	pthread_mutex_unlock(&c->lock);
	k = calloc(1, sizeof(*k));
	if (!k || !(k->method = strdup(method))) {
		free(k);
		free_msgs(msgs, n);
		return -ENOMEM;
	}
	k->msgs = msgs;
	k->n = n;
	k->timeout_ms = timeout_ms ? timeout_ms : 10000;
	k->cookie = cookie;
	pthread_mutex_lock(&c->lock);
	*c->queued_tail = k;
	c->queued_tail = &k->next;
	c->pending++;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int grpc_client__event_fd(const struct grpc_client *c)
{
	return c->wake_fd;
}

int grpc_client__poll(struct grpc_client *c, struct grpc_result *ret)
{
	struct done *d;
	uint64_t n;

	/* Drain before looking: a result pushed after this read wakes us again. */
	(void)!read(c->wake_fd, &n, sizeof(n));
	pthread_mutex_lock(&c->lock);
	d = c->done;
	if (d) {
		c->done = d->next;
		if (!c->done)
			c->done_tail = &c->done;
		c->pending--;
	}
	pthread_mutex_unlock(&c->lock);
	if (!d)
		return 0;
	*ret = d->r;
	free(d);
	return 1;
}

void grpc_client__result_release(struct grpc_result *r)
{
	if (!r)
		return;
	free(r->resp);
	r->resp = NULL;
	r->resp_len = 0;
}

enum grpc_client_conn grpc_client__connectivity(struct grpc_client *c)
{
	return (enum grpc_client_conn)atomic_load(&c->conn);
}

struct grpc_client *grpc_client__free(struct grpc_client *c)
{
	if (!c)
		return NULL;
	if (c->thread_started) {
		pthread_mutex_lock(&c->lock);
		c->stop = true;
		pthread_mutex_unlock(&c->lock);
		pthread_join(c->thread, NULL);
	}
	/* calls queued after the thread's last look */
	while (c->queued) {
		struct gc_call *k = c->queued;
		c->queued = k->next;
		call_free(c, k);
	}
	while (c->done) {
		struct done *d = c->done;
		c->done = d->next;
		free(d->r.resp);
		free(d);
	}
	if (c->cq) {
		grpc_event ev;
		c->g.grpc_completion_queue_shutdown(c->cq);
		for (int i = 0; i < 5; i++) {
			ev = c->g.grpc_completion_queue_next(
				c->cq, c->g.gpr_time_add(c->g.gpr_now(GPR_CLOCK_MONOTONIC),
							 c->g.gpr_time_from_millis(1000, GPR_TIMESPAN)), NULL);
			if (ev.type == GRPC_QUEUE_SHUTDOWN)
				break;
		}
		c->g.grpc_completion_queue_destroy(c->cq);
	}
	if (c->channel)
		c->g.grpc_channel_destroy(c->channel);
	if (c->grpc_inited)
		c->g.grpc_shutdown();
	/* libgrpc stays mapped: its threads may outlive grpc_shutdown() briefly. */
	free(c->auth);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	pthread_mutex_destroy(&c->lock);
	free(c);
	return NULL;
}
