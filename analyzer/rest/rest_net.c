/* The REST API's l7 and tcp features at work: see rest_net.h. */
#include "analyzer/rest/rest_net.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/rest/rest_select.h"
#include "common/task_submit.h"
#include "common/timeutil.h"
#include "proto/ember.pb-c.h"

#define TASK_MS (3600ull * 1000)	/* a task's life; renewed before its end */
#define RENEW_MS 5000

enum { G_L7_LINK = 1, G_L7_RPC = 2, G_TCP_TX_RX = 4, G_TCP_RTT = 8, G_TCP_ABN = 16 };

struct entry {
	uint32_t pid;
	uint32_t flags;			/* G_* */
	uint64_t ends_mono;
	char id[64];
};

struct rest_net {
	struct rest_net_opts o;
	void *zctx;
	struct rest_doc d[2];		/* l7, tcp */
	bool have[2];
	uint32_t *sel[2];
	unsigned nsel[2];
	struct entry *e;		/* followed processes */
	unsigned ne;
	uint64_t next_scan, gen;
	struct rest_net_stats st;
};

struct rest_net *rest_net__new(const struct rest_net_opts *o, void *zctx)
{
	struct rest_net *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->o = *o;
	if (!n->o.scan_ms)
		n->o.scan_ms = 2000;
	if (!n->o.max_pids)
		n->o.max_pids = 1024;
	n->zctx = zctx;
	n->sel[0] = calloc(n->o.max_pids, sizeof(uint32_t));
	n->sel[1] = calloc(n->o.max_pids, sizeof(uint32_t));
	n->e = calloc(n->o.max_pids, sizeof(*n->e));
	if (!n->sel[0] || !n->sel[1] || !n->e)
		return rest_net__free(n);
	return n;
}

struct rest_net *rest_net__free(struct rest_net *n)
{
	if (!n)
		return NULL;
	free(n->sel[0]);
	free(n->sel[1]);
	free(n->e);
	free(n);
	return NULL;
}

static struct task_submit_opts submit_opts(const struct rest_net *n)
{
	return (struct task_submit_opts){ .run_dir = n->o.run_dir, .analyzers = n->o.analyzers, .call_timeout_ms = 5000 };
}

static void cancel(struct rest_net *n, struct entry *e)
{
	struct task_submit_opts so = submit_opts(n);
	char err[256];

	if (e->id[0] && !task_submit__cancel(n->zctx, &so, e->id, err, sizeof(err)))
		n->st.tasks_cancelled++;
	e->id[0] = 0;
}

void rest_net__set(struct rest_net *n, const struct rest_doc *d)
{
	unsigned i = d->feature == REST_TCP;

	for (unsigned k = 0; k < n->ne; k++)
		cancel(n, &n->e[k]);
	n->ne = 0;
	n->d[i] = *d;
	n->have[i] = true;
	n->nsel[i] = 0;
	n->next_scan = 0;
	n->gen++;
}

/* The tables feature i publishes for the processes it selects. */
static uint32_t flags_of(const struct rest_net *n, unsigned i)
{
	const struct rest_doc *d = &n->d[i];

	if (!n->have[i] || !d->running)
		return 0;
	if (i == 0)
		return (d->probes[REST_L7_BYTES] ? G_L7_LINK : 0) | (d->probes[REST_L7_RPC] ? G_L7_RPC : 0);
	return (d->probes[REST_TCP_STATS] ? G_TCP_TX_RX : 0) | (d->probes[REST_TCP_RTT] ? G_TCP_RTT : 0) |
	       (d->probes[REST_TCP_ABNORMAL] ? G_TCP_ABN : 0);
}

static void start(struct rest_net *n, struct entry *e, uint64_t now_ms)
{
	struct task_submit_opts so = submit_opts(n);
	Ember__Task t = EMBER__TASK__INIT;
	Ember__GalaTables g = EMBER__GALA_TABLES__INIT;
	char *protos[16], err[256];
	uint32_t report = 0;
	int r;

	for (unsigned i = 0; i < 2; i++)
		if (flags_of(n, i) && rest_select__has(n->sel[i], n->nsel[i], e->pid) &&
		    (!report || n->d[i].report_period_s * 1000 < report))
			report = n->d[i].report_period_s * 1000;
	g.l7_link = e->flags & G_L7_LINK;
	g.l7_rpc = e->flags & G_L7_RPC;
	g.tcp_tx_rx = e->flags & G_TCP_TX_RX;
	g.tcp_rtt = e->flags & G_TCP_RTT;
	g.tcp_abn = e->flags & G_TCP_ABN;
	for (unsigned p = 0; rest_l7_protocols[p] && g.n_l7_protocols < 16; p++)
		if (n->d[0].l7_protocols >> p & 1)
			protos[g.n_l7_protocols++] = (char *)rest_l7_protocols[p];
	g.l7_protocols = protos;
	snprintf(e->id, sizeof(e->id), "rest-net-%u-%llu-%llu", e->pid, (unsigned long long)n->gen,
		 (unsigned long long)timeutil__unix_ms());
	t.id = e->id;
	t.kind = EMBER__TASK_KIND__NETWORK;
	t.n_pids = 1;
	t.pids = &e->pid;
	t.duration_ms = TASK_MS;
	t.report_interval_ms = report;
	t.origin = "rest";
	t.gala = &g;
	r = task_submit__all(n->zctx, &so, &t, err, sizeof(err));
	if (r < 0) {
		n->st.task_failures++;
		snprintf(n->st.last_error, sizeof(n->st.last_error), "pid %u: %s", e->pid, err);
		e->id[0] = 0;
		e->ends_mono = 0;
		return;
	}
	n->st.tasks_started++;
	e->ends_mono = now_ms + TASK_MS;
}

void rest_net__tick(struct rest_net *n, uint64_t now_ms)
{
	uint64_t over[2] = { 0, 0 };
	unsigned k = 0;

	if (!flags_of(n, 0) && !flags_of(n, 1))
		return;
	if (now_ms < n->next_scan)
		return;
	n->next_scan = now_ms + n->o.scan_ms;
	for (unsigned i = 0; i < 2; i++)
		n->nsel[i] = flags_of(n, i) ? rest_select__scan(&n->d[i], n->o.proc_root, n->o.self_uid, n->sel[i],
								 n->o.max_pids, &over[i])
					    : 0;
	n->st.over_limit = over[0] + over[1];
	/* processes no longer selected (or gone): their task is cancelled */
	while (k < n->ne) {
		struct entry *e = &n->e[k];
		uint32_t flags = (rest_select__has(n->sel[0], n->nsel[0], e->pid) ? flags_of(n, 0) : 0) |
				 (rest_select__has(n->sel[1], n->nsel[1], e->pid) ? flags_of(n, 1) : 0);

		if (flags == e->flags) {
			k++;
			continue;
		}
		cancel(n, e);
		*e = n->e[--n->ne];
	}
	/* newly selected processes, failed ones again, and tasks near their end renewed */
	for (unsigned i = 0; i < 2; i++)
		for (unsigned s = 0; s < n->nsel[i]; s++) {
			uint32_t pid = n->sel[i][s];
			struct entry *e = NULL;

			for (unsigned j = 0; j < n->ne && !e; j++)
				if (n->e[j].pid == pid)
					e = &n->e[j];
			if (!e) {
				if (n->ne == n->o.max_pids)
					continue;
				e = &n->e[n->ne++];
				memset(e, 0, sizeof(*e));
				e->pid = pid;
				e->flags = (rest_select__has(n->sel[0], n->nsel[0], pid) ? flags_of(n, 0) : 0) |
					   (rest_select__has(n->sel[1], n->nsel[1], pid) ? flags_of(n, 1) : 0);
			}
			if (!e->id[0] || now_ms + RENEW_MS >= e->ends_mono) {
				if (e->id[0])
					cancel(n, e); /* renewal: the new task replaces the old */
				start(n, e, now_ms);
			}
		}
	n->st.followed = 0;
	for (unsigned j = 0; j < n->ne; j++)
		n->st.followed += n->e[j].id[0] != 0;
}

void rest_net__stats(const struct rest_net *n, struct rest_net_stats *ret)
{
	*ret = n->st;
}
