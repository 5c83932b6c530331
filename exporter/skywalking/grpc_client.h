/*
 * A small gRPC client on the gRPC core C API (Debian's libgrpc), for the
 * SkyWalking backend.  One channel, one dedicated thread that owns every gRPC
 * object and blocks in the completion queue; the caller (the exporter's
 * single-threaded loop) only exchanges jobs and results with it through two
 * mutex-guarded lists, so nothing here ever blocks the caller on the network.
 *
 * Unary and client-streaming calls are the same on the wire (messages, then
 * half-close, then one response), so a call is a method path plus 0..n packed
 * messages; the server's reply is handed back packed, with the status.
 *
 * libgrpc is loaded with dlopen() at grpc_client__new(): the exporter links
 * and runs without it (the file and prometheus backends do not need it), and
 * only a configured SkyWalking backend requires the library at run time.
 */
#ifndef EMBER_EXPORTER_SKYWALKING_GRPC_CLIENT_H
#define EMBER_EXPORTER_SKYWALKING_GRPC_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct grpc_client;

struct grpc_client_opts {
	const char *target;		/* host:port */
	bool tls;
	const char *ca_pem_path;	/* NULL/"": system roots */
	const char *client_pem_path;	/* mutual TLS, with client_key_path */
	const char *client_key_path;
	bool insecure_skip_verify;
	const char *authentication;	/* NULL/"": none; else sent as `authentication` metadata */
	unsigned check_period_ms;	/* how often the channel's connectivity is sampled */
	unsigned max_reconnect_backoff_ms;
	unsigned max_pending;		/* calls queued or in flight; beyond, grpc_client__call says -EBUSY */
};

struct grpc_msg {
	uint8_t *data;	/* malloc'ed; owned by the client once passed */
	size_t len;
};

/* status: a grpc_status_code (0 = OK), or GRPC_CLIENT_LOCAL_ERROR when the call could not be started. */
#define GRPC_CLIENT_LOCAL_ERROR (-1)
struct grpc_result {
	uint64_t cookie;
	int status;
	char details[200];
	uint8_t *resp;		/* the response message, packed; NULL when none */
	size_t resp_len;
	uint64_t elapsed_ms;
};

enum grpc_client_conn { GRPC_CONN_UNKNOWN = -1, GRPC_CONN_DOWN = 0, GRPC_CONN_UP = 1 };

/* Loads libgrpc, builds the credentials and the channel, starts the thread.
 * NULL + errno with a message in err (missing library, unreadable PEM file...). */
struct grpc_client *grpc_client__new(const struct grpc_client_opts *o, char *err, size_t errlen);

/* Queues one call.  Takes ownership of msgs (the array and every data buffer,
 * all from malloc) whatever the outcome.  timeout_ms is the call's deadline.
 * 0, -EBUSY (max_pending reached), -EINVAL or -ENOMEM. */
int grpc_client__call(struct grpc_client *c, const char *method, struct grpc_msg *msgs, size_t n,
		      unsigned timeout_ms, uint64_t cookie);

/* Readable (POLLIN) when a call has finished since the last grpc_client__poll(). */
int grpc_client__event_fd(const struct grpc_client *c);

/* One finished call, without waiting: 1 (ret filled; release it), 0 none. */
int grpc_client__poll(struct grpc_client *c, struct grpc_result *ret);
void grpc_client__result_release(struct grpc_result *r);

/* Last sampled connectivity of the channel. */
enum grpc_client_conn grpc_client__connectivity(struct grpc_client *c);

/* Cancels what is in flight, stops the thread, frees everything.  Accepts NULL.  Returns NULL. */
struct grpc_client *grpc_client__free(struct grpc_client *c);

#endif
