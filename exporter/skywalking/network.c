/*
 * NETWORK tasks' batches -> Rover's network meters (spec section 4.5): per
 * local (service, instance) one MeterDataCollection for collectBatch, the
 * process labels being the OAP's process ids.  A flow whose local process
 * the OAP has not given an id yet cannot be named: it is counted and left
 * out.  Network meters are increments, so the outbox treats them like
 * profiling data (I_NET_METERS), never as superseded by a later batch.
 * The batch's sampled traces follow (sampled.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "exporter/skywalking/sw.h"

static int oap_id(void *ctx, uint32_t pid, char *buf, size_t len)
{
	struct sw_backend *b = ctx;
	struct pf_process *p = process_finder__by_pid(b->pf, pid);

	if (!p || p->status != PF_REPORTED || !p->oap_id[0])
		return -ENOENT;
	snprintf(buf, len, "%s", p->oap_id);
	return 0;
}

/* The flows of one instance (those of procs[] with lead's service and instance) into out. */
static int instance_collections(struct sw_backend *b, const Ember__NetworkBatch *nb, struct pf_process **procs,
				size_t lead, int64_t ts, struct sw_msgs *out)
{
	const struct net_meters_opts o = { .prefix = b->cfg->profiling.task.network.meter_prefix,
					   .protocol = NET_PROTOCOL_ROVER, .resolve = oap_id, .ctx = b };
	struct sw_net_collection c = { .service = procs[lead]->e.service, .instance = procs[lead]->e.instance,
				       .timestamp_ms = ts };
	const struct pf_process *me = procs[lead];
	int r = 0, n;

	for (size_t i = lead; i < nb->n_flows && !r; i++) {
		if (!procs[i] || strcmp(procs[i]->e.service, me->e.service) || strcmp(procs[i]->e.instance, me->e.instance))
			continue;
		procs[i] = NULL;	/* done */
		if (net_meters__from_flow(nb->flows[i], &o, b->net_set)) {
			b->c[SC_NET_FLOWS_UNKNOWN]++;
			continue;
		}
		b->c[SC_NET_FLOWS]++;
		b->c[SC_NET_LEFT_OUT] += b->net_set->truncated + b->net_set->bad_hists;
		r = sw_codec__net_collection_add(&c, b->net_set);
		/* a big batch goes in several collections, each one complete in itself */
		if (!r && c.len > SW_NET_COLLECTION_MAX && (n = sw_codec__net_collection_finish(&c, out)) > 0)
			b->c[SC_NET_METERS] += (uint64_t)n;
	}
	if (!r && (n = sw_codec__net_collection_finish(&c, out)) >= 0)
		b->c[SC_NET_METERS] += (uint64_t)n;
	else
		r = -ENOMEM;
	b->c[SC_NET_LEFT_OUT] += c.bad;
	sw_codec__net_collection_release(&c);
	return r;
}

static void network_meters(struct sw_backend *b, const Ember__NetworkBatch *nb)
{
	struct pf_process **procs;
	struct sw_msgs m = { 0 };
	int64_t ts = nb->window_end_unix_ns ? (int64_t)(nb->window_end_unix_ns / 1000000) : (int64_t)timeutil__unix_ms();

	if (!nb->n_flows)
		return;
	procs = calloc(nb->n_flows, sizeof(*procs));
	if (!procs) {
		b->c[SC_DROPPED_BATCHES]++;
		return;
	}
	/* the local process of every flow, or NULL when the OAP does not know it */
	for (size_t i = 0; i < nb->n_flows; i++) {
		struct pf_process *p = nb->flows[i] ? process_finder__by_pid(b->pf, nb->flows[i]->pid) : NULL;

		if (p && p->status == PF_REPORTED && p->oap_id[0])
			procs[i] = p;
		else
			b->c[SC_NET_FLOWS_UNKNOWN]++;
	}
	for (size_t i = 0; i < nb->n_flows; i++)
		if (procs[i] && instance_collections(b, nb, procs, i, ts > 0 ? ts : 1, &m)) {
			b->c[SC_DROPPED_BATCHES]++;
			sw_msgs__release(&m);
			free(procs);
			return;
		}
	free(procs);
	sw_enqueue(b, I_NET_METERS, &m);
}

void sw_network_batch(struct sw_backend *b, const Ember__NetworkBatch *nb)
{
	network_meters(b, nb);
	sw_network_sampled(b, nb);
}
