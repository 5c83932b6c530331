/*
 * Process reporting: the host processes the finder matches are reported
 * (reportProcesses) and kept alive (keepAlive) every heartbeat period.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "exporter/skywalking/sw.h"

static void entity_to_pb(const struct pf_entity *e, Skywalking__V3__EBPFProcessEntityMetadata *m, char **labels)
{
	skywalking__v3__ebpfprocess_entity_metadata__init(m);
	m->layer = (char *)e->layer;
	m->servicename = (char *)e->service;
	m->instancename = (char *)e->instance;
	m->processname = (char *)e->process;
	for (unsigned i = 0; i < e->n_labels; i++)
		labels[i] = (char *)e->labels[i];
	m->n_labels = e->n_labels;
	m->labels = labels;
}

int sw_pack_into(const ProtobufCMessage *msg, struct grpc_msg **ret)
{
	struct grpc_msg *m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->len = protobuf_c_message_get_packed_size(msg);
	m->data = malloc(m->len ? m->len : 1);
	if (!m->data) {
		free(m);
		return -ENOMEM;
	}
	protobuf_c_message_pack(msg, m->data);
	*ret = m;
	return 0;
}

struct proc_pb {
	Skywalking__V3__EBPFProcessProperties props;
	Skywalking__V3__EBPFHostProcessMetadata host;
	Skywalking__V3__EBPFProcessEntityMetadata ent;
	Skywalking__V3__EBPFProcessPingPkg ping;
	char *labels[PF_MAX_LABELS];
	Skywalking__V3__KeyStringValuePair kv[6];
	Skywalking__V3__KeyStringValuePair *kvp[6];
	char pid[16];
};

void sw_report_processes(struct sw_backend *b, bool all)
{
	unsigned n = process_finder__count(b->pf), nr = 0, nk = 0;
	struct proc_pb *pb = calloc(n ? n : 1, sizeof(*pb));
	Skywalking__V3__EBPFProcessProperties **rp = calloc(n ? n : 1, sizeof(*rp));
	Skywalking__V3__EBPFProcessPingPkg **kp = calloc(n ? n : 1, sizeof(*kp));
	char host_ip[64] = "";
	struct grpc_msg *m;

	if (!pb || !rp || !kp)
		goto out;
	{
		char tmp[PF_PATH_MAX];
		struct pf_process dummy = { 0 };
		if (!process_finder__render(b->pf, "{{.Rover.HostIPV4 \"lo\"}}", &dummy, NULL, 0, tmp, sizeof(tmp)))
			snprintf(host_ip, sizeof(host_ip), "%.63s", tmp);
	}
	if (!b->report_busy)
		b->n_reported = 0;
	for (unsigned i = 0; i < n; i++) {
		struct pf_process *p = process_finder__at(b->pf, i);
		struct proc_pb *q = &pb[i];
		const char *support = p->support_ebpf ? "true" : "false";

		if (p->status == PF_IGNORED)
			continue;
		entity_to_pb(&p->e, &q->ent, q->labels);
		if (p->status == PF_NEW || all) {
			if (b->report_busy || nr >= MAX_REPORT)
				continue;
			static const char *const keys[] = { "host_ip", "pid", "command_line", "support_ebpf_profiling",
							    "container_id" };
			const char *vals[5] = { host_ip, q->pid, p->cmdline, support, p->container_id };
			unsigned nkv = p->container_id[0] ? 5 : 4;
			snprintf(q->pid, sizeof(q->pid), "%u", p->pid);
			for (unsigned k = 0; k < nkv; k++) {
				skywalking__v3__key_string_value_pair__init(&q->kv[k]);
				q->kv[k].key = (char *)keys[k];
				q->kv[k].value = (char *)vals[k];
				q->kvp[k] = &q->kv[k];
			}
			skywalking__v3__ebpfhost_process_metadata__init(&q->host);
			q->host.entity = &q->ent;
			q->host.pid = (int32_t)p->pid;
			q->host.n_properties = nkv;
			q->host.properties = q->kvp;
			skywalking__v3__ebpfprocess_properties__init(&q->props);
			q->props.metadata_case = SKYWALKING__V3__EBPFPROCESS_PROPERTIES__METADATA_HOST_PROCESS;
			q->props.hostprocess = &q->host;
			rp[nr++] = &q->props;
			b->reported[b->n_reported++] = (struct report_ref){ p->pid, p->start_ticks };
		} else if (p->status == PF_REPORTED && !b->keepalive_busy) {
			skywalking__v3__key_string_value_pair__init(&q->kv[0]);
			q->kv[0].key = "support_ebpf_profiling";
			q->kv[0].value = (char *)support;
			q->kvp[0] = &q->kv[0];
			skywalking__v3__ebpfprocess_ping_pkg__init(&q->ping);
			q->ping.entitymetadata = &q->ent;
			q->ping.n_properties = 1;
			q->ping.properties = q->kvp;
			kp[nk++] = &q->ping;
		}
	}
	if (nr) {
		Skywalking__V3__EBPFProcessReportList l = SKYWALKING__V3__EBPFPROCESS_REPORT_LIST__INIT;
		l.n_processes = nr;
		l.processes = rp;
		l.ebpfagentid = b->agent_id;
		if (!sw_pack_into(&l.base, &m) &&
		    !grpc_client__call(b->gc, M_REPORT, m, 1, RPC_TIMEOUT_MS, (uint64_t)C_REPORT << 56))
			b->report_busy = true;
	}
	if (nk) {
		Skywalking__V3__EBPFProcessPingPkgList l = SKYWALKING__V3__EBPFPROCESS_PING_PKG_LIST__INIT;
		l.n_processes = nk;
		l.processes = kp;
		l.ebpfagentid = b->agent_id;
		if (!sw_pack_into(&l.base, &m) &&
		    !grpc_client__call(b->gc, M_KEEPALIVE, m, 1, RPC_TIMEOUT_MS, (uint64_t)C_KEEPALIVE << 56))
			b->keepalive_busy = true;
	}
out:
	free(pb);
	free(rp);
	free(kp);
}

static bool entity_eq(const struct pf_entity *e, const Skywalking__V3__EBPFProcessEntityMetadata *m)
{
	if (!m || strcmp(e->layer, m->layer) || strcmp(e->service, m->servicename) ||
	    strcmp(e->instance, m->instancename) || strcmp(e->process, m->processname) || m->n_labels != e->n_labels)
		return false;
	for (unsigned i = 0; i < e->n_labels; i++) {
		bool found = false;
		for (size_t j = 0; j < m->n_labels && !found; j++)
			found = m->labels[j] && !strcmp(e->labels[i], m->labels[j]);
		if (!found)
			return false;
	}
	return true;
}

void sw_report_done(struct sw_backend *b, const struct grpc_result *res)
{
	Skywalking__V3__EBPFReportProcessDownstream *d;

	b->report_busy = false;
	if (res->status)
		return;	/* statuses stay NEW: reported again next heartbeat */
	d = skywalking__v3__ebpfreport_process_downstream__unpack(NULL, res->resp_len, res->resp);
	if (!d) {
		b->c[SC_RPC_FAILED]++;
		return;
	}
	for (unsigned r = 0; r < b->n_reported; r++) {
		struct pf_process *p = process_finder__by_pid(b->pf, b->reported[r].pid);
		const char *id = NULL;
		if (!p || p->start_ticks != b->reported[r].start_ticks)
			continue;
		for (size_t i = 0; i < d->n_processes && !id; i++) {
			const Skywalking__V3__EBPFProcessDownstream *ds = d->processes[i];
			if (ds && ds->process_case == SKYWALKING__V3__EBPFPROCESS_DOWNSTREAM__PROCESS_HOST_PROCESS &&
			    ds->hostprocess && ds->hostprocess->pid == (int32_t)p->pid &&
			    entity_eq(&p->e, ds->hostprocess->entitymetadata) && ds->processid &&
			    ds->processid[0] && strlen(ds->processid) < sizeof(p->oap_id))
				id = ds->processid;
		}
		if (id) {
			if (p->status != PF_REPORTED) {
				b->c[SC_PROC_REPORTED]++;
				log_info("process %u (%s/%s/%s) reported to the OAP as %s", p->pid, p->e.service,
					 p->e.instance, p->e.process, id);
			}
			p->status = PF_REPORTED;
			snprintf(p->oap_id, sizeof(p->oap_id), "%s", id);
		} else if (p->status == PF_NEW) {
			/* as Rover: not accepted -> not sent again until it is found anew */
			p->status = PF_IGNORED;
			b->c[SC_PROC_IGNORED]++;
		}
	}
	skywalking__v3__ebpfreport_process_downstream__free_unpacked(d, NULL);
}
