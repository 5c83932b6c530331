/* gala-gopher's REST control API: see rest_api.h. */
#include "analyzer/rest/rest_api.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

#include "analyzer/rest/rest_doc.h"
#include "analyzer/rest/rest_flame.h"
#include "analyzer/rest/rest_base.h"
#include "analyzer/rest/rest_net.h"
#include "analyzer/rest/rest_threads.h"
#include "common/bus.h"
#include "common/timeutil.h"

#define MAX_PEM (64 * 1024)
#define TICK_MS 250

struct rest_api {
	struct rest_api_opts o;
	struct MHD_Daemon *d;
	pthread_t th;
	bool started;
	volatile int stop;
	pthread_mutex_t lock;		/* stats (read by the analyzer's thread) */
	void *zctx;
	struct rest_flame *flame;
	struct rest_net *net;		/* l7 and tcp */
	struct rest_base *base;		/* baseinfo */
	struct rest_threads *threads;	/* tprofiling */
	struct rest_doc docs[REST_FEATURE_MAX];
	char *key_pem, *cert_pem, *ca_pem;
	uint64_t st[RAS_MAX];
};

const struct counter_def rest_api_counters[RAS_MAX] = {
	[RAS_REQUESTS] = { .name = "rest_requests" },
	[RAS_PUTS_APPLIED] = { .name = "rest_puts_applied" },
	[RAS_PUTS_REFUSED] = { .name = "rest_puts_refused" },
	[RAS_GETS] = { .name = "rest_gets" },
	[RAS_NOT_FOUND] = { .name = "rest_not_found" },
	[RAS_NOT_ALLOWED] = { .name = "rest_not_allowed" },
	[RAS_UNAUTHORIZED] = { .name = "rest_unauthorized" },
	[RAS_TOO_LARGE] = { .name = "rest_too_large" },
	[RAS_TASKS_STARTED] = { .name = "rest_tasks_started" },
	[RAS_TASK_FAILURES] = { .name = "rest_task_failures" },
	[RAS_NET_FOLLOWED] = { .name = "rest_net_processes_followed", .level = true },
	[RAS_FLAME_SELECTED] = { .name = "rest_flame_processes_selected", .level = true },
};

/* One request's body, gathered across the upload callbacks. */
struct upload {
	char *buf;
	size_t len;
	bool too_large;
};

static char *read_pem(const char *path, char *err, size_t errlen, const char *what)
{
	FILE *f = path && *path ? fopen(path, "re") : NULL;
	char *buf = NULL;
	size_t n = 0;

	if (!f) {
		snprintf(err, errlen, "ember.rest_api.%s '%s': %s", what, path ? path : "", path && *path ? strerror(errno)
												  : "not set");
		return NULL;
	}
	buf = calloc(1, MAX_PEM + 1);
	if (buf)
		n = fread(buf, 1, MAX_PEM + 1, f);
	fclose(f);
	if (!buf || n == 0 || n > MAX_PEM) {
		snprintf(err, errlen, "ember.rest_api.%s '%s': %s", what, path, !buf ? "out of memory" : n ? "over 64 KiB"
														  : "empty");
		free(buf);
		return NULL;
	}
	return buf;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned code, const char *text, const char *type)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
	enum MHD_Result r;

	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", type ? type : "text/plain; charset=utf-8");
	r = MHD_queue_response(c, code, resp);
	MHD_destroy_response(resp);
	return r;
}

/* With ssl_auth: the client presented a certificate that ca_file signed. */
static bool client_verified(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	gnutls_session_t s;
	unsigned status = 1, n = 0;

	if (!ci || !ci->tls_session)
		return false;
	s = (gnutls_session_t)ci->tls_session;
	if (!gnutls_certificate_get_peers(s, &n) || !n)
		return false;
	return gnutls_certificate_verify_peers2(s, &status) == 0 && status == 0;
}

static void count(struct rest_api *r, enum rest_api_stat stat)
{
	pthread_mutex_lock(&r->lock);
	r->st[stat]++;
	pthread_mutex_unlock(&r->lock);
}

static enum MHD_Result put(struct rest_api *r, struct MHD_Connection *c, enum rest_feature f, const struct upload *u)
{
	struct rest_doc *d = malloc(sizeof(*d));
	char err[512], msg[REST_NOTE_MAX + 64];

	if (!d)
		return answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory", NULL);
	/* the PUT changes what it carries (rest_doc.h); a copy, so that a refusal changes nothing */
	*d = r->docs[f];
	if (rest_doc__apply(u->buf, u->len, d, err, sizeof(err)) ||
	    (f == REST_FLAMEGRAPH && d->running && rest_flame__check_dirs(d, err, sizeof(err)))) {
		count(r, RAS_PUTS_REFUSED);
		free(d);
		return answer(c, MHD_HTTP_BAD_REQUEST, err, NULL);
	}
	r->docs[f] = *d;
	if (f == REST_FLAMEGRAPH)
		rest_flame__set(r->flame, d);
	else if (f == REST_BASEINFO)
		rest_base__set(r->base, d);
	else if (f == REST_TPROFILING)
		rest_threads__set(r->threads, d);
	else
		rest_net__set(r->net, d);
	count(r, RAS_PUTS_APPLIED);
	snprintf(msg, sizeof(msg), "New config takes effect%s%s%s", d->notes[0] ? " (" : "", d->notes,
		 d->notes[0] ? ")" : "");
	free(d);
	return answer(c, MHD_HTTP_OK, msg, NULL);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *data, size_t *size, void **con_cls)
{
	struct rest_api *r = cls;
	struct upload *u = *con_cls;
	int f = rest_doc__feature(url);
	char msg[400];

	(void)version;
	if (!u) {
		/* the first call: headers only */
		if (!(u = calloc(1, sizeof(*u))))
			return MHD_NO;
		*con_cls = u;
		return MHD_YES;
	}
	if (*size) {
		if (u->too_large || u->len + *size > r->o.max_body) {
			u->too_large = true;
		} else {
			char *nb = realloc(u->buf, u->len + *size + 1);

			if (!nb)
				return MHD_NO;
			u->buf = nb;
			memcpy(u->buf + u->len, data, *size);
			u->len += *size;
		}
		*size = 0;
		return MHD_YES;
	}
	count(r, RAS_REQUESTS);
	if (r->o.ssl_auth && !client_verified(c)) {
		count(r, RAS_UNAUTHORIZED);
		return answer(c, MHD_HTTP_FORBIDDEN, "a client certificate signed by the configured CA is required", NULL);
	}
	if (f < 0) {
		count(r, RAS_NOT_FOUND);
		if (rest_doc__known_unsupported(url)) {
			const char *instead = rest_doc__instead(url);

			snprintf(msg, sizeof(msg), "%s is not supported by ember; supported: %s%s%s", url + 1,
				 rest_doc__supported(), instead ? "; " : "", instead ? instead : "");
			return answer(c, MHD_HTTP_NOT_IMPLEMENTED, msg, NULL);
		}
		snprintf(msg, sizeof(msg), "no such feature; supported: %s", rest_doc__supported());
		return answer(c, MHD_HTTP_NOT_FOUND, msg, NULL);
	}
	if (!strcmp(method, MHD_HTTP_METHOD_PUT)) {
		if (u->too_large) {
			count(r, RAS_TOO_LARGE);
			snprintf(msg, sizeof(msg), "the body is larger than %zu bytes (ember.rest_api.max_body)", r->o.max_body);
			return answer(c, MHD_HTTP_CONTENT_TOO_LARGE, msg, NULL);
		}
		return put(r, c, (enum rest_feature)f, u);
	}
	if (!strcmp(method, MHD_HTTP_METHOD_GET)) {
		char *doc = rest_doc__render(&r->docs[f]);
		enum MHD_Result res;

		count(r, RAS_GETS);
		if (!doc)
			return answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory", NULL);
		res = answer(c, MHD_HTTP_OK, doc, "application/json");
		free(doc);
		return res;
	}
	count(r, RAS_NOT_ALLOWED);
	{
		struct MHD_Response *resp = MHD_create_response_from_buffer(strlen("use GET or PUT"), "use GET or PUT",
									    MHD_RESPMEM_PERSISTENT);
		enum MHD_Result res;

		if (!resp)
			return MHD_NO;
		MHD_add_response_header(resp, "Allow", "GET, PUT");
		res = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, resp);
		MHD_destroy_response(resp);
		return res;
	}
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode t)
{
	struct upload *u = *con_cls;

	(void)cls, (void)c, (void)t;
	if (u) {
		free(u->buf);
		free(u);
		*con_cls = NULL;
	}
}

static void *run(void *arg)
{
	struct rest_api *r = arg;

	while (!r->stop) {
		struct rest_flame_stats fs;
		struct rest_net_stats ns;
		struct rest_threads_stats ts;

		(void)MHD_run_wait(r->d, TICK_MS);
		rest_flame__tick(r->flame, timeutil__mono_ms());
		rest_net__tick(r->net, timeutil__mono_ms());
		rest_base__tick(r->base, timeutil__mono_ms());
		rest_threads__tick(r->threads, timeutil__mono_ms());
		rest_flame__stats(r->flame, &fs);
		rest_net__stats(r->net, &ns);
		rest_threads__stats(r->threads, &ts);
		pthread_mutex_lock(&r->lock);
		r->st[RAS_TASKS_STARTED] = fs.tasks_started + ns.tasks_started + ts.tasks_started;
		r->st[RAS_TASK_FAILURES] = fs.task_failures + ns.task_failures + ts.task_failures;
		r->st[RAS_NET_FOLLOWED] = ns.followed;
		r->st[RAS_FLAME_SELECTED] = fs.selected;
		pthread_mutex_unlock(&r->lock);
	}
	return NULL;
}

struct rest_api *rest_api__start(const struct rest_api_opts *o, char *err, size_t errlen)
{
	struct rest_api *r = calloc(1, sizeof(*r));
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(o->port) };
	struct rest_flame_opts fo = { .run_dir = o->run_dir, .analyzers = o->analyzers, .max_pids = o->max_pids,
				      .self_uid = o->self_uid };
	struct rest_net_opts no = { .run_dir = o->run_dir, .analyzers = o->analyzers, .max_pids = o->max_pids,
				    .self_uid = o->self_uid };
	struct rest_threads_opts to = { .run_dir = o->run_dir, .analyzers = o->analyzers, .max_pids = o->max_pids,
					.self_uid = o->self_uid };
	unsigned flags = MHD_USE_ERROR_LOG;
	char ep[600];

	if (!r) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	r->o = *o;
	pthread_mutex_init(&r->lock, NULL);
	for (unsigned f = 0; f < REST_FEATURE_MAX; f++)
		rest_doc__defaults(&r->docs[f], (enum rest_feature)f);
	if (inet_pton(AF_INET, o->address, &sa.sin_addr) != 1) {
		snprintf(err, errlen, "ember.rest_api.address '%s' is not an IPv4 address", o->address);
		goto fail;
	}
	if (o->ssl_auth) {
		if (!(r->key_pem = read_pem(o->private_key, err, errlen, "private_key")) ||
		    !(r->cert_pem = read_pem(o->cert_file, err, errlen, "cert_file")) ||
		    !(r->ca_pem = read_pem(o->ca_file, err, errlen, "ca_file")))
			goto fail;
		flags |= MHD_USE_TLS;
	}
	bus__exporter_endpoint(o->run_dir, ep, sizeof(ep));
	if (!(r->zctx = zmq_ctx_new()) || !(r->flame = rest_flame__new(&fo, r->zctx)) ||
	    !(r->net = rest_net__new(&no, r->zctx)) || !(r->base = rest_base__new(r->zctx, ep, NULL, NULL)) ||
	    !(r->threads = rest_threads__new(&to, r->zctx))) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	if (o->ssl_auth)
		r->d = MHD_start_daemon(flags, o->port, NULL, NULL, on_request, r, MHD_OPTION_SOCK_ADDR, &sa,
					MHD_OPTION_NOTIFY_COMPLETED, on_completed, r, MHD_OPTION_CONNECTION_LIMIT, 64,
					MHD_OPTION_CONNECTION_TIMEOUT, 10, MHD_OPTION_HTTPS_MEM_KEY, r->key_pem,
					MHD_OPTION_HTTPS_MEM_CERT, r->cert_pem, MHD_OPTION_HTTPS_MEM_TRUST, r->ca_pem,
					MHD_OPTION_END);
	else
		r->d = MHD_start_daemon(flags, o->port, NULL, NULL, on_request, r, MHD_OPTION_SOCK_ADDR, &sa,
					MHD_OPTION_NOTIFY_COMPLETED, on_completed, r, MHD_OPTION_CONNECTION_LIMIT, 64,
					MHD_OPTION_CONNECTION_TIMEOUT, 10, MHD_OPTION_END);
	if (!r->d) {
		snprintf(err, errlen, "cannot listen on %s:%u%s", o->address, o->port,
			 o->ssl_auth ? " (or the key, certificate or CA is not valid PEM)" : "");
		goto fail;
	}
	if (pthread_create(&r->th, NULL, run, r)) {
		snprintf(err, errlen, "cannot start its thread");
		goto fail;
	}
	r->started = true;
	return r;
fail:
	rest_api__stop(r);
	errno = EINVAL;
	return NULL;
}

struct rest_api *rest_api__stop(struct rest_api *r)
{
	if (!r)
		return NULL;
	r->stop = 1;
	if (r->started)
		pthread_join(r->th, NULL);
	if (r->d)
		MHD_stop_daemon(r->d);
	rest_flame__free(r->flame);
	rest_net__free(r->net);
	rest_base__free(r->base);
	rest_threads__free(r->threads);
	if (r->zctx)
		zmq_ctx_term(r->zctx);
	free(r->key_pem);
	free(r->cert_pem);
	free(r->ca_pem);
	pthread_mutex_destroy(&r->lock);
	free(r);
	return NULL;
}

void rest_api__stats(struct rest_api *r, uint64_t ret[RAS_MAX])
{
	pthread_mutex_lock(&r->lock);
	memcpy(ret, r->st, sizeof(r->st));
	pthread_mutex_unlock(&r->lock);
}
