#include "analyzer/tasks.h"

#include "common/fileutil.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/ember_abi.h"
#include "common/profile_kind.h"

struct task_mgr {
	unsigned max, n;
	struct task_def **tasks;
};

struct task_mgr *task_mgr__new(unsigned max_tasks)
{
	struct task_mgr *tm = calloc(1, sizeof(*tm));

	if (!tm)
		return NULL;
	tm->max = max_tasks;
	tm->tasks = calloc(max_tasks, sizeof(*tm->tasks));
	if (!tm->tasks) {
		free(tm);
		errno = ENOMEM;
		return NULL;
	}
	return tm;
}

int task_def__valid_id(const char *id)
{
	size_t n = strnlen(id, TASK_ID_LEN);

	if (n == 0 || n >= TASK_ID_LEN)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == ':' || c == '-'))
			return 0;
	}
	return 1;
}

struct task_def *task_mgr__find(struct task_mgr *tm, const char *id)
{
	for (unsigned i = 0; i < tm->n; i++)
		if (!strcmp(tm->tasks[i]->id, id))
			return tm->tasks[i];
	return NULL;
}

struct task_def *task_mgr__find_pid(struct task_mgr *tm, uint32_t pid, uint32_t kind)
{
	for (unsigned i = 0; i < tm->n; i++) {
		struct task_def *t = tm->tasks[i];
		if (t->kind != kind)
			continue;
		for (uint32_t j = 0; j < t->npids; j++)
			if (t->pids[j] == pid)
				return t;
	}
	return NULL;
}

int task_mgr__add(struct task_mgr *tm, const struct task_def *def, struct task_def **ret)
{
	struct task_def *t;

	if (!task_def__valid_id(def->id) || def->npids == 0 || def->npids > CTL_MAX_PIDS ||
	    def->duration_ms == 0 || !profile_kind__by_id(def->kind))
		return -EINVAL;
	if (task_mgr__find(tm, def->id))
		return -EEXIST;
	for (uint32_t i = 0; i < def->npids; i++) {
		if (!def->pids[i])
			return -EINVAL;
		if (task_mgr__find_pid(tm, def->pids[i], def->kind))
			return -EEXIST;
	}
	if (tm->n >= tm->max)
		return -ENOSPC;
	t = malloc(sizeof(*t));
	if (!t)
		return -ENOMEM;
	*t = *def;
	tm->tasks[tm->n++] = t;
	if (ret)
		*ret = t;
	return 0;
}

int task_mgr__remove(struct task_mgr *tm, const char *id)
{
	for (unsigned i = 0; i < tm->n; i++) {
		if (strcmp(tm->tasks[i]->id, id))
			continue;
		free(tm->tasks[i]);
		tm->tasks[i] = tm->tasks[--tm->n];
		return 0;
	}
	return -ENOENT;
}

struct task_def *task_mgr__at(struct task_mgr *tm, unsigned idx) { return idx < tm->n ? tm->tasks[idx] : NULL; }
unsigned task_mgr__count(const struct task_mgr *tm) { return tm->n; }

uint64_t task_mgr__next_deadline(struct task_mgr *tm)
{
	uint64_t best = UINT64_MAX;

	for (unsigned i = 0; i < tm->n; i++) {
		uint64_t end = tm->tasks[i]->start_unix_ms + tm->tasks[i]->duration_ms;
		if (end < best)
			best = end;
	}
	return best;
}

struct task_mgr *task_mgr__free(struct task_mgr *tm)
{
	if (!tm)
		return NULL;
	for (unsigned i = 0; i < tm->n; i++)
		free(tm->tasks[i]);
	free(tm->tasks);
	free(tm);
	return NULL;
}

uint32_t task_kind__from_proto(Ember__TaskKind k)
{
	const struct profile_kind *pk = profile_kind__by_wire(k);

	return pk ? pk->id : 0;
}

Ember__TaskKind task_kind__to_proto(uint32_t kind)
{
	const struct profile_kind *pk = profile_kind__by_id(kind);

	return pk ? (Ember__TaskKind)pk->wire : EMBER__TASK_KIND__TASK_KIND_UNSPECIFIED;
}

void task_def__to_proto(const struct task_def *t, Ember__Task *p)
{
	ember__task__init(p);
	p->id = (char *)t->id;
	p->kind = task_kind__to_proto(t->kind);
	p->n_pids = t->npids;
	p->pids = (uint32_t *)t->pids;
	p->start_unix_ms = t->start_unix_ms;
	p->duration_ms = t->duration_ms;
	p->origin = (char *)t->origin;
	p->period_ns = t->period_ns;
	p->min_block_ns = t->min_block_ns;
	if (t->kind == EMBER_TASK_THREADS) {
		p->min_block_ns = 0;
		p->stack_min_ns = t->min_block_ns;
		p->thread_probes = t->thread_probes;
	}
	p->shards = t->shards;
	p->report_interval_ms = t->report_interval_ms;
}

void task_def__to_pb(const struct task_def *t, struct task_pb *pb)
{
	task_def__to_proto(t, &pb->task);
	for (uint32_t i = 0; i < t->nsamplings && i < TASK_MAX_SAMPLINGS; i++) {
		const struct task_sampling *r = &t->samplings[i];
		Ember__NetSampling *m = &pb->s[i];

		ember__net_sampling__init(m);
		m->uri_regex = (char *)r->uri_regex;
		m->has_min_duration = r->has_min_duration;
		m->min_duration_ms = r->min_duration_ms;
		m->when_4xx = r->when_4xx;
		m->when_5xx = r->when_5xx;
		m->complete_request = r->complete_request;
		m->max_request_size = r->max_request_size;
		m->complete_response = r->complete_response;
		m->max_response_size = r->max_response_size;
		pb->sp[i] = m;
	}
	pb->task.n_samplings = t->nsamplings;
	pb->task.samplings = pb->sp;
	for (uint32_t i = 0; i < t->ncauses && i < TASK_MAX_CAUSES; i++) {
		task_cause__to_pb(&pb->c[i], &t->causes[i]);
		pb->cp[i] = &pb->c[i];
	}
	pb->task.n_causes = t->ncauses;
	if (t->flame.set) {
		ember__flame_output__init(&pb->flame);
		pb->flame.svg_dir = (char *)t->flame.svg_dir;
		pb->flame.flame_dir = (char *)t->flame.flame_dir;
		pb->flame.per_process = t->flame.per_process;
		pb->flame.period_start_unix_ms = t->flame.period_start_unix_ms;
		pb->flame.part = t->flame.part;
		pb->flame.pyroscope_server = (char *)t->flame.pyroscope_server;
		pb->flame.java_only = t->flame.java_only;
		pb->task.flame = &pb->flame;
	}
	if (t->gala) {
		ember__gala_tables__init(&pb->gala);
		pb->gala.l7_link = t->gala & 1;
		pb->gala.l7_rpc = t->gala >> 1 & 1;
		pb->gala.tcp_tx_rx = t->gala >> 2 & 1;
		pb->gala.tcp_rtt = t->gala >> 3 & 1;
		pb->gala.tcp_abn = t->gala >> 4 & 1;
		snprintf(pb->gala_protos_buf, sizeof(pb->gala_protos_buf), "%s", t->gala_l7_protocols);
		for (char *save = NULL, *tok = strtok_r(pb->gala_protos_buf, ",", &save); tok && pb->gala.n_l7_protocols < 16;
		     tok = strtok_r(NULL, ",", &save))
			pb->gala_protos[pb->gala.n_l7_protocols++] = tok;
		pb->gala.l7_protocols = pb->gala_protos;
		pb->task.gala = &pb->gala;
	}
	pb->task.causes = pb->cp;
}

static int samplings_from_proto(const Ember__Task *p, struct task_def *ret, char *err, size_t errlen)
{
	if (p->n_samplings > TASK_MAX_SAMPLINGS) {
		snprintf(err, errlen, "%zu sampling rules (at most %d)", p->n_samplings, TASK_MAX_SAMPLINGS);
		return -EINVAL;
	}
	for (size_t i = 0; i < p->n_samplings; i++) {
		const Ember__NetSampling *m = p->samplings[i];
		struct task_sampling *r = &ret->samplings[i];
		const char *re = m->uri_regex ? m->uri_regex : "";
		regex_t rx;
		int e;

		if (strlen(re) >= sizeof(r->uri_regex)) {
			snprintf(err, errlen, "sampling rule %zu: URI regex longer than %d bytes", i + 1, TASK_URI_REGEX_MAX - 1);
			return -EINVAL;
		}
		if (re[0] && (e = regcomp(&rx, re, REG_EXTENDED | REG_NOSUB))) {
			char why[128];

			regerror(e, &rx, why, sizeof(why));
			snprintf(err, errlen, "sampling rule %zu: URI regex '%s': %s", i + 1, re, why);
			return -EINVAL;
		}
		if (re[0])
			regfree(&rx);
		snprintf(r->uri_regex, sizeof(r->uri_regex), "%s", re);
		r->has_min_duration = m->has_min_duration;
		r->min_duration_ms = m->min_duration_ms;
		r->when_4xx = m->when_4xx;
		r->when_5xx = m->when_5xx;
		r->complete_request = m->complete_request;
		r->max_request_size = m->max_request_size;
		r->complete_response = m->complete_response;
		r->max_response_size = m->max_response_size;
	}
	ret->nsamplings = (uint32_t)p->n_samplings;
	return 0;
}

int task_def__from_proto(const Ember__Task *p, struct task_def *ret, char *err, size_t errlen)
{
	memset(ret, 0, sizeof(*ret));
	if (!p->n_pids || p->n_pids > CTL_MAX_PIDS) {
		snprintf(err, errlen, "a task needs 1..%d pids", CTL_MAX_PIDS);
		return -EINVAL;
	}
	ret->kind = task_kind__from_proto(p->kind);
	if (!ret->kind) {
		snprintf(err, errlen, "task kind %d is not supported (on-CPU, off-CPU, memory, network and threads are)", (int)p->kind);
		return -EINVAL;
	}
	if (p->id && p->id[0]) {
		if (!task_def__valid_id(p->id)) {
			snprintf(err, errlen, "bad task id (1..%d of [A-Za-z0-9._:-])", TASK_ID_LEN - 1);
			return -EINVAL;
		}
		snprintf(ret->id, sizeof(ret->id), "%s", p->id);
	}
	ret->npids = (uint32_t)p->n_pids;
	memcpy(ret->pids, p->pids, p->n_pids * sizeof(uint32_t));
	ret->start_unix_ms = p->start_unix_ms;
	ret->duration_ms = p->duration_ms;
	ret->period_ns = p->period_ns;
	ret->min_block_ns = p->min_block_ns;
	if (ret->kind == EMBER_TASK_THREADS) {
		ret->min_block_ns = p->stack_min_ns;
		ret->thread_probes = p->thread_probes;
	}
	ret->shards = p->shards;
	ret->report_interval_ms = p->report_interval_ms;
	if (samplings_from_proto(p, ret, err, errlen))
		return -EINVAL;
	for (size_t i = 0; i < p->n_causes && i < TASK_MAX_CAUSES; i++) {
		task_cause__from_pb(&ret->causes[i], p->causes[i]);
		ret->ncauses++;
	}
	snprintf(ret->origin, sizeof(ret->origin), "%s", p->origin ? p->origin : "");
	if (p->flame) {
		char why[96];

		if (fileutil__safe_dir(p->flame->svg_dir, why, sizeof(why)) ||
		    fileutil__safe_dir(p->flame->flame_dir, why, sizeof(why))) {
			snprintf(err, errlen, "flame output directory %s", why);
			return -EINVAL;
		}
		ret->flame.set = true;
		snprintf(ret->flame.svg_dir, sizeof(ret->flame.svg_dir), "%s", p->flame->svg_dir);
		snprintf(ret->flame.flame_dir, sizeof(ret->flame.flame_dir), "%s", p->flame->flame_dir);
		ret->flame.per_process = p->flame->per_process;
		ret->flame.period_start_unix_ms = p->flame->period_start_unix_ms;
		ret->flame.part = p->flame->part;
		ret->flame.java_only = p->flame->java_only;
		for (const char *c = p->flame->pyroscope_server; c && *c; c++)
			if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || *c == '.' ||
			      *c == '-' || *c == ':')) {
				snprintf(err, errlen, "flame pyroscope_server is not host:port");
				return -EINVAL;
			}
		snprintf(ret->flame.pyroscope_server, sizeof(ret->flame.pyroscope_server), "%s",
			 p->flame->pyroscope_server ? p->flame->pyroscope_server : "");
	}
	if (p->gala) {
		size_t n = 0;

		ret->gala = (uint32_t)p->gala->l7_link | (uint32_t)p->gala->l7_rpc << 1 | (uint32_t)p->gala->tcp_tx_rx << 2 |
			    (uint32_t)p->gala->tcp_rtt << 3 | (uint32_t)p->gala->tcp_abn << 4;
		for (size_t i = 0; i < p->gala->n_l7_protocols && i < 16; i++) {
			const char *s = p->gala->l7_protocols[i];

			if (!s || !*s || strchr(s, ',') || n + strlen(s) + 2 > sizeof(ret->gala_l7_protocols)) {
				snprintf(err, errlen, "gala l7_protocols: '%.20s' is not a protocol name", s ? s : "");
				return -EINVAL;
			}
			n += (size_t)snprintf(ret->gala_l7_protocols + n, sizeof(ret->gala_l7_protocols) - n, "%s%s",
					      n ? "," : "", s);
		}
	}
	return 0;
}

bool task_def__is_monitor(const struct task_def *t)
{
	return t && !strcmp(t->origin, "monitor");
}

bool task_def__wants_calls(const struct task_def *t)
{
	for (uint32_t i = 0; t && t->kind == EMBER_TASK_NETWORK && i < t->nsamplings && i < TASK_MAX_SAMPLINGS; i++)
		if (t->samplings[i].complete_request || t->samplings[i].complete_response)
			return true;
	return false;
}
