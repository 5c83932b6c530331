#include "exporter/net_prom.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/net_meters.h"

enum fkind { FK_NONE, FK_COUNTER, FK_HIST };

/* The Prometheus family of each of Rover's meters; div turns the meter's unit into the base unit. */
struct fam {
	const char *name, *help;
	enum fkind kind;
	double div;
};

static const struct fam fams[NM_MAX] = {
	[NM_WRITE_BYTES] = { "ember_net_write_bytes", "Bytes the local process wrote to network sockets",
			     FK_COUNTER, 1 },
	[NM_READ_BYTES] = { "ember_net_read_bytes", "Bytes the local process read from network sockets", FK_COUNTER,
			    1 },
	[NM_RETRANSMIT_COUNTS] = { "ember_net_retransmits", "TCP segments retransmitted", FK_COUNTER, 1 },
	[NM_DROP_COUNTS] = { "ember_net_drops", "Packets of the process' connections dropped by the kernel",
			     FK_COUNTER, 1 },
	[NM_WRITE_RTT_HIST] = { "ember_net_rtt_seconds", "Smoothed TCP round-trip time, sampled at writes", FK_HIST,
				1e6 },
	[NM_WRITE_EXE_TIME_HIST] = { "ember_net_write_duration_seconds",
				     "Time spent in socket write calls (_count: the calls)", FK_HIST, 1e9 },
	[NM_READ_EXE_TIME_HIST] = { "ember_net_read_duration_seconds",
				    "Time spent in socket read calls (_count: the calls)", FK_HIST, 1e9 },
	[NM_CONNECT_EXE_TIME_HIST] = { "ember_net_connect_duration_seconds",
				       "Time spent in connect and accept calls (_count: the calls)", FK_HIST, 1e9 },
	[NM_CLOSE_EXE_TIME_HIST] = { "ember_net_close_duration_seconds",
				     "Time spent closing sockets (_count: the calls)", FK_HIST, 1e9 },
	[NM_HTTP1_REQUESTS] = { "ember_net_http1_requests", "HTTP/1 requests", FK_COUNTER, 1 },
	[NM_HTTP1_STATUS] = { "ember_net_http1_responses", "HTTP/1 responses by status code", FK_COUNTER, 1 },
	[NM_HTTP1_REQ_SIZE_HIST] = { "ember_net_http1_request_size_bytes", "HTTP/1 request sizes", FK_HIST, 1 },
	[NM_HTTP1_RESP_SIZE_HIST] = { "ember_net_http1_response_size_bytes", "HTTP/1 response sizes", FK_HIST, 1 },
	[NM_HTTP1_DURATION_HIST] = { "ember_net_http1_duration_seconds",
				     "HTTP/1 exchange duration, first request byte to response", FK_HIST, 1e3 },
};

#define KEY_MAX 1024

struct series {
	char *key;		/* meter id byte, then label name NUL value NUL ... */
	size_t key_len;
	uint64_t hash;
	int32_t next;		/* hash chain, -1 terminated */
	bool used;
	unsigned n_labels;
	double value;		/* counter value; histogram: sum in the meter's unit */
	uint64_t count;
	unsigned n_buckets;
	uint64_t *buckets;	/* per bucket, not cumulative */
	uint64_t updated_ms;
};

struct net_prom {
	size_t max, nhash;
	struct series *s;
	int32_t *heads;
	int32_t *free_slots;
	size_t n_free;
	struct net_prom_stats st;
	struct net_meter_set set;	/* one flow's meters, reused */
};

struct net_prom *net_prom__new(size_t max_series)
{
	struct net_prom *np = calloc(1, sizeof(*np));

	if (!np)
		return NULL;
	np->max = max_series ? max_series : NET_PROM_DEFAULT_MAX_SERIES;
	np->nhash = 16;
	while (np->nhash < 2 * np->max)
		np->nhash <<= 1;
	np->s = calloc(np->max, sizeof(*np->s));
	np->heads = malloc(np->nhash * sizeof(*np->heads));
	np->free_slots = malloc(np->max * sizeof(*np->free_slots));
	if (!np->s || !np->heads || !np->free_slots) {
		net_prom__free(np);
		errno = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < np->nhash; i++)
		np->heads[i] = -1;
	for (size_t i = 0; i < np->max; i++)
		np->free_slots[i] = (int32_t)(np->max - 1 - i);
	np->n_free = np->max;
	return np;
}

struct net_prom *net_prom__free(struct net_prom *np)
{
	if (!np)
		return NULL;
	for (size_t i = 0; np->s && i < np->max; i++) {
		free(np->s[i].key);
		free(np->s[i].buckets);
	}
	free(np->s);
	free(np->heads);
	free(np->free_slots);
	free(np);
	return NULL;
}

void net_prom__stats(const struct net_prom *np, struct net_prom_stats *ret)
{
	*ret = np->st;
}

static uint64_t fnv1a(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/* The series' identity: meter id, then every label; its length or -ENAMETOOLONG. */
static int make_key(const struct net_meter *m, char *key, size_t cap)
{
	size_t n = 0;

	key[n++] = (char)(m->id + 1);
	for (unsigned i = 0; i < m->n_labels; i++) {
		size_t a = strlen(m->labels[i].name) + 1, b = strlen(m->labels[i].value) + 1;

		if (n + a + b > cap)
			return -ENAMETOOLONG;
		memcpy(key + n, m->labels[i].name, a);
		memcpy(key + n + a, m->labels[i].value, b);
		n += a + b;
	}
	return (int)n;
}

static struct series *find_or_add(struct net_prom *np, const struct net_meter *m, const char *key, size_t len)
{
	uint64_t h = fnv1a(key, len);
	size_t slot = h & (np->nhash - 1);
	struct series *s;
	int32_t i;

	for (i = np->heads[slot]; i >= 0; i = np->s[i].next)
		if (np->s[i].hash == h && np->s[i].key_len == len && !memcmp(np->s[i].key, key, len))
			return &np->s[i];
	if (!np->n_free) {
		np->st.series_dropped++;
		return NULL;
	}
	i = np->free_slots[np->n_free - 1];
	s = &np->s[i];
	memset(s, 0, sizeof(*s));
	s->key = malloc(len);
	s->buckets = m->n_buckets ? calloc(m->n_buckets, sizeof(*s->buckets)) : NULL;
	if (!s->key || (m->n_buckets && !s->buckets)) {
		free(s->key);
		free(s->buckets);
		memset(s, 0, sizeof(*s));
		np->st.nomem++;
		return NULL;
	}
	memcpy(s->key, key, len);
	s->key_len = len;
	s->hash = h;
	s->n_labels = m->n_labels;
	s->n_buckets = m->n_buckets;
	s->used = true;
	s->next = np->heads[slot];
	np->heads[slot] = i;
	np->n_free--;
	np->st.series++;
	np->st.series_added++;
	return s;
}

/* The series' cumulative state into the table, named by its family. */
static void publish(const struct series *s, const struct net_meter *m, const struct fam *f, struct prom_table *t,
		    uint64_t now_ms)
{
	struct prom_label labels[NET_METER_MAX_LABELS];
	struct prom_bucket buckets[NET_METER_MAX_BUCKETS];
	struct prom_meter pm = { .name = f->name, .help = f->help, .labels = labels, .n_labels = s->n_labels };
	const char *p = s->key + 1;
	uint64_t cum = 0;

	for (unsigned i = 0; i < s->n_labels; i++) {
		labels[i].name = p;
		p += strlen(p) + 1;
		labels[i].value = p;
		p += strlen(p) + 1;
	}
	if (f->kind == FK_COUNTER) {
		pm.is_counter = 1;
		pm.value = s->value / f->div;
	} else {
		/* Rover's buckets are [lower[i], lower[i + 1]): cumulative up to the next lower bound, then +Inf */
		for (unsigned i = 0; i + 1 < s->n_buckets; i++) {
			cum += s->buckets[i];
			buckets[i] = (struct prom_bucket){ m->lower[i + 1] / f->div, cum };
		}
		pm.buckets = buckets;
		pm.n_buckets = s->n_buckets - 1;
		pm.hist_count = s->count;
		pm.value = s->value / f->div;
	}
	(void)prom_table__update(t, &pm, now_ms);	/* refusals are counted by the table */
}

static void add_meter(struct net_prom *np, const struct net_meter *m, struct prom_table *t, uint64_t now_ms)
{
	const struct fam *f = &fams[m->id];
	char key[KEY_MAX];
	struct series *s;
	int len;

	if (f->kind == FK_NONE || (f->kind == FK_HIST) != (m->n_buckets > 1))
		return;
	len = make_key(m, key, sizeof(key));
	if (len < 0) {
		np->st.meters_left_out++;
		return;
	}
	if (!(s = find_or_add(np, m, key, (size_t)len)))
		return;
	if (s->n_buckets != m->n_buckets) {	/* cannot happen: bounds are fixed per meter */
		np->st.meters_left_out++;
		return;
	}
	if (f->kind == FK_COUNTER) {
		s->value += m->value;
	} else {
		for (unsigned i = 0; i < m->n_buckets; i++)
			s->buckets[i] += m->counts[i];
		s->value += m->sum;
		s->count += m->count;
	}
	s->updated_ms = now_ms;
	publish(s, m, f, t, now_ms);
}

/* Prometheus' process ids are the pids themselves. */
static int pid_string(void *ctx, uint32_t pid, char *buf, size_t len)
{
	(void)ctx;
	snprintf(buf, len, "%u", pid);
	return 0;
}

void net_prom__add_batch(struct net_prom *np, const Ember__NetworkBatch *b, struct prom_table *t, uint64_t now_ms)
{
	const struct net_meters_opts o = { .prefix = "ember_net", .protocol = NET_PROTOCOL_PARSER,
					   .resolve = pid_string };

	if (!b)
		return;
	for (size_t i = 0; i < b->n_flows; i++) {
		const Ember__NetFlow *f = b->flows[i];

		if (!f || !f->pid || net_meters__from_flow(f, &o, &np->set)) {
			np->st.flows_invalid++;
			continue;
		}
		np->st.flows++;
		np->st.meters_left_out += np->set.truncated + np->set.bad_hists;
		for (unsigned k = 0; k < np->set.n; k++)
			add_meter(np, &np->set.m[k], t, now_ms);
	}
}

static void unlink_series(struct net_prom *np, int32_t idx)
{
	int32_t *p = &np->heads[np->s[idx].hash & (np->nhash - 1)];

	while (*p >= 0 && *p != idx)
		p = &np->s[*p].next;
	if (*p == idx)
		*p = np->s[idx].next;
}

size_t net_prom__expire(struct net_prom *np, uint64_t now_ms, uint64_t max_age_ms)
{
	size_t n = 0;

	for (size_t i = 0; i < np->max; i++) {
		struct series *s = &np->s[i];

		if (!s->used || now_ms <= s->updated_ms || now_ms - s->updated_ms <= max_age_ms)
			continue;
		unlink_series(np, (int32_t)i);
		free(s->key);
		free(s->buckets);
		memset(s, 0, sizeof(*s));
		np->free_slots[np->n_free++] = (int32_t)i;
		np->st.series--;
		n++;
	}
	np->st.series_expired += n;
	return n;
}
