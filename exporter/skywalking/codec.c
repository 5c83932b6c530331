#include "exporter/skywalking/codec.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/profile_kind.h"
#include "proto/sw_meter.pb-c.h"
#include "proto/sw_profile.pb-c.h"

/* ---- command decoding ---------------------------------------------------------------- */

int sw_codec__parse_i64(const char *s, int64_t *ret)
{
	int64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (v > (INT64_MAX - (*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (*s - '0');
	}
	*ret = v;
	return 0;
}

/* Ids travel into logs, task ids and JSON: printable ASCII, no separators. */
static bool id_ok(const char *s, size_t len)
{
	if (len == 0 || len >= SW_MAX_ID)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] <= ' ' || s[i] > '~' || s[i] == ',' || s[i] == '"' || s[i] == '\\')
			return false;
	return true;
}

int sw_codec__json_parse(const char *s, struct json_object **ret)
{
	size_t len = strlen(s);
	struct json_tokener *tok;
	struct json_object *o;
	bool ok;

	if (len > SW_MAX_EXT_JSON)
		return -EINVAL;
	tok = json_tokener_new_ex(32);
	if (!tok)
		return -EINVAL;
	/* with its NUL: a value at the very end (null, 12) is complete, not cut short */
	o = json_tokener_parse_ex(tok, s, (int)len + 1);
	ok = json_tokener_get_error(tok) == json_tokener_success;
	if (ok)
		for (size_t i = json_tokener_get_parse_end(tok); i < len; i++)
			if (!strchr(" \t\r\n", s[i]))
				ok = false;
	json_tokener_free(tok);
	if (!ok) {
		json_object_put(o);
		return -EINVAL;
	}
	*ret = o;
	return 0;
}

static bool json_ok(const char *s)
{
	struct json_object *o = NULL;

	if (sw_codec__json_parse(s, &o))
		return false;
	json_object_put(o);
	return true;
}

enum { A_TASK_ID, A_PROCESS_ID, A_UPDATE, A_TRIGGER, A_TARGET, A_START, A_EXT, A_DURATION, A_MAX };
static const char *const arg_names[A_MAX] = {
	"TaskId", "ProcessId", "TaskUpdateTime", "TriggerType", "TargetType", "TaskStartTime",
	"ExtensionConfigJSON", "FixedTriggerDuration",
};

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -EINVAL)

static const char *const target_names[] = {
	[SW_TARGET_ON_CPU] = "ON_CPU", [SW_TARGET_OFF_CPU] = "OFF_CPU", [SW_TARGET_NETWORK] = "NETWORK",
};
#define N_TARGETS (sizeof(target_names) / sizeof(target_names[0]))

const char *sw_target__name(enum sw_target t) { return (unsigned)t < N_TARGETS ? target_names[t] : NULL; }

enum sw_target sw_target__of(const char *name)
{
	for (unsigned t = 0; name && t < N_TARGETS; t++)
		if (target_names[t] && !strcmp(name, target_names[t]))
			return (enum sw_target)t;
	return SW_TARGET_NONE;
}

Ember__TaskKind sw_target__kind(enum sw_target t)
{
	const struct profile_kind *k = profile_kind__by_oap(sw_target__name(t));

	return k ? (Ember__TaskKind)k->wire : EMBER__TASK_KIND__ON_CPU;
}

enum sw_target sw_target__of_kind(Ember__TaskKind kind)
{
	const struct profile_kind *k = profile_kind__by_wire(kind);
	enum sw_target t = k ? sw_target__of(k->oap) : SW_TARGET_NONE;

	return t ? t : SW_TARGET_ON_CPU;
}

int sw_codec__decode_task(const Skywalking__V3__Command *c, struct sw_task_cmd *ret, char *why, size_t whylen)
{
	const char *a[A_MAX] = { 0 };
	const char *p;
	int r;

	if (whylen)
		why[0] = 0;
	memset(ret, 0, sizeof(*ret));
	if (!c || !c->command || strcmp(c->command, "EBPFProfilingTaskQuery"))
		return -ENOENT;
	if (c->n_args && !c->args)
		return WHY("no arguments");
	for (size_t i = 0; i < c->n_args; i++) {
		const Skywalking__V3__KeyStringValuePair *kv = c->args[i];
		if (!kv || !kv->key || !kv->value)
			return WHY("argument %zu is empty", i);
		for (unsigned k = 0; k < A_MAX; k++) {
			if (strcmp(kv->key, arg_names[k]))
				continue;
			if (a[k])
				return WHY("argument %s given twice", arg_names[k]);
			a[k] = kv->value;
		}
	}
	for (unsigned k = 0; k < A_DURATION; k++)
		if (!a[k])
			return WHY("argument %s missing", arg_names[k]);
	if (!id_ok(a[A_TASK_ID], strlen(a[A_TASK_ID])))
		return WHY("TaskId is empty, too long or not printable");
	memcpy(ret->task_id, a[A_TASK_ID], strlen(a[A_TASK_ID]) + 1);

	p = a[A_PROCESS_ID];
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (!id_ok(p, len))
			return WHY("ProcessId item %u is empty, too long or not printable", ret->n_process_ids);
		if (ret->n_process_ids >= SW_MAX_PROCESS_IDS)
			return WHY("more than %d process ids", SW_MAX_PROCESS_IDS);
		memcpy(ret->process_ids[ret->n_process_ids], p, len);
		ret->process_ids[ret->n_process_ids++][len] = 0;
		if (!comma)
			break;
		p = comma + 1;
	}
	if ((r = sw_codec__parse_i64(a[A_UPDATE], &ret->update_time_ms)))
		return WHY("TaskUpdateTime '%.32s' is not a decimal number", a[A_UPDATE]);
	if ((r = sw_codec__parse_i64(a[A_START], &ret->start_time_ms)))
		return WHY("TaskStartTime '%.32s' is not a decimal number", a[A_START]);
	if (!strcmp(a[A_TRIGGER], "FIXED_TIME"))
		ret->trigger = SW_TRIGGER_FIXED_TIME;
	else
		return WHY("unknown TriggerType '%.32s'", a[A_TRIGGER]);
	if (!(ret->target = sw_target__of(a[A_TARGET])))
		return WHY("unknown TargetType '%.32s'", a[A_TARGET]);
	if (ret->target != SW_TARGET_NETWORK && ret->n_process_ids != 1)
		return WHY("an ON_CPU/OFF_CPU task names exactly one process, not %u", ret->n_process_ids);
	/* A NETWORK task's is its sampling rules: sw_codec__decode_samplings
	 * decodes it, and bad text there is the task's failure, not the command's. */
	if (!strcmp(a[A_EXT], "null"))
		ret->extension_null = true;
	else if (ret->target != SW_TARGET_NETWORK && !json_ok(a[A_EXT]))
		return WHY("ExtensionConfigJSON is not valid JSON");
	if (ret->trigger == SW_TRIGGER_FIXED_TIME) {
		if (!a[A_DURATION])
			return WHY("argument FixedTriggerDuration missing");
		if (sw_codec__parse_i64(a[A_DURATION], &ret->duration_s) || ret->duration_s <= 0 ||
		    ret->duration_s > 366LL * 86400)
			return WHY("FixedTriggerDuration '%.32s' is not a number of seconds", a[A_DURATION]);
	}
	return 0;
}

/* ---- packed message lists ------------------------------------------------------------ */

void sw_msgs__release(struct sw_msgs *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i].data);
	free(m->v);
	memset(m, 0, sizeof(*m));
}

int sw_msgs__push(struct sw_msgs *m, const ProtobufCMessage *msg)
{
	size_t len = protobuf_c_message_get_packed_size(msg);
	uint8_t *buf;

	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct grpc_msg *v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		m->v = v;
		m->cap = cap;
	}
	buf = malloc(len ? len : 1);
	if (!buf)
		return -ENOMEM;
	protobuf_c_message_pack(msg, buf);
	m->v[m->n++] = (struct grpc_msg){ buf, len };
	m->bytes += len;
	return 0;
}

/* ---- profiling data ------------------------------------------------------------------ */

static uint32_t fnv1a(uint32_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return (h ^ 0xff) * 16777619u;	/* frame separator */
}

static const char *frame_name(char *const *frames, const protobuf_c_boolean *resolved, size_t n_resolved, size_t i)
{
	/* Older analyzers send no flags: their frames count as resolved. */
	if (i < n_resolved && !resolved[i])
		return SW_MISSING;
	return frames[i] && frames[i][0] ? frames[i] : SW_MISSING;
}

static uint32_t stack_hash(char *const *frames, size_t n, const protobuf_c_boolean *res, size_t nres)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = fnv1a(h, frame_name(frames, res, nres, i));
	return h;
}

static bool same_stack(const Ember__StackSample *a, const Ember__StackSample *b, bool kernel)
{
	size_t n = kernel ? a->n_kernel_frames : a->n_user_frames;

	if (n != (kernel ? b->n_kernel_frames : b->n_user_frames))
		return false;
	for (size_t i = 0; i < n; i++) {
		const char *x = kernel ? frame_name(a->kernel_frames, a->kernel_resolved, a->n_kernel_resolved, i)
				       : frame_name(a->user_frames, a->user_resolved, a->n_user_resolved, i);
		const char *y = kernel ? frame_name(b->kernel_frames, b->kernel_resolved, b->n_kernel_resolved, i)
				       : frame_name(b->user_frames, b->user_resolved, b->n_user_resolved, i);
		if (strcmp(x, y))
			return false;
	}
	return true;
}

struct agg {
	const Ember__StackSample *s;	/* NULL: empty slot */
	uint32_t kh, uh;
	uint64_t count, weight;
};

static int fill_stack(Skywalking__V3__EBPFProfilingStackMetadata *sm, bool kernel, const Ember__StackSample *s,
		      uint32_t hash, struct sw_profile_stats *st)
{
	size_t n = kernel ? s->n_kernel_frames : s->n_user_frames;

	skywalking__v3__ebpfprofiling_stack_metadata__init(sm);
	sm->stacktype = kernel ? SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_KERNEL_SPACE
			       : SKYWALKING__V3__EBPFPROFILING_STACK_TYPE__PROCESS_USER_SPACE;
	/* No BPF stack id crosses the bus; a content hash keeps the OAP's
	 * "<kernel>_<user>" key distinct per stack (0 would mean "no stack"). */
	sm->stackid = (int32_t)((hash & 0x7fffffffu) | 1u);
	sm->stacksymbols = calloc(n, sizeof(char *));
	if (!sm->stacksymbols)
		return -ENOMEM;
	sm->n_stacksymbols = n;
	for (size_t i = 0; i < n; i++) {
		const char *f = kernel ? frame_name(s->kernel_frames, s->kernel_resolved, s->n_kernel_resolved, i)
				       : frame_name(s->user_frames, s->user_resolved, s->n_user_resolved, i);
		if (!strcmp(f, SW_MISSING))
			st->missing++;
		sm->stacksymbols[i] = (char *)f;
	}
	return 0;
}

static int32_t sat32(uint64_t v, struct sw_profile_stats *st)
{
	if (v > INT32_MAX) {
		st->saturated++;
		return INT32_MAX;
	}
	return (int32_t)v;
}

static int emit(const struct agg *g, const struct sw_profile_meta *m, bool first, struct sw_msgs *out,
		struct sw_profile_stats *st)
{
	Skywalking__V3__EBPFProfilingData d = SKYWALKING__V3__EBPFPROFILING_DATA__INIT;
	Skywalking__V3__EBPFProfilingTaskMetadata tm = SKYWALKING__V3__EBPFPROFILING_TASK_METADATA__INIT;
	Skywalking__V3__EBPFOnCPUProfiling on = SKYWALKING__V3__EBPFON_CPUPROFILING__INIT;
	Skywalking__V3__EBPFOffCPUProfiling off = SKYWALKING__V3__EBPFOFF_CPUPROFILING__INIT;
	Skywalking__V3__EBPFProfilingStackMetadata sm[2], *smp[2];
	size_t ns = 0;
	int r = 0;

	if (g->s->n_kernel_frames) {
		if ((r = fill_stack(&sm[ns], true, g->s, g->kh, st)))
			goto out;
		smp[ns] = &sm[ns];
		ns++;
	}
	if (g->s->n_user_frames) {
		if ((r = fill_stack(&sm[ns], false, g->s, g->uh, st)))
			goto out;
		smp[ns] = &sm[ns];
		ns++;
	}
	if (first && m->with_task) {
		tm.taskid = (char *)m->task_id;
		tm.processid = (char *)m->process_id;
		tm.profilingstarttime = m->profiling_start_ms;
		tm.currenttime = m->current_ms;
		d.task = &tm;
	}
	if (m->off_cpu) {
		off.n_stacks = ns;
		off.stacks = smp;
		off.switchcount = sat32(g->count, st);
		off.duration = g->weight > INT64_MAX ? INT64_MAX : (int64_t)g->weight;
		d.profiling_case = SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_OFF_CPU;
		d.offcpu = &off;
	} else {
		on.n_stacks = ns;
		on.stacks = smp;
		on.dumpcount = sat32(g->count, st);
		d.profiling_case = SKYWALKING__V3__EBPFPROFILING_DATA__PROFILING_ON_CPU;
		d.oncpu = &on;
	}
	r = sw_msgs__push(out, &d.base);
	if (!r)
		st->messages++;
out:
	for (size_t i = 0; i < ns; i++)
		free(sm[i].stacksymbols);
	return r;
}

int sw_codec__build_profile(const Ember__ProfileBatch *b, const struct sw_profile_meta *m, struct sw_msgs *out,
			    struct sw_profile_stats *st)
{
	size_t cap = 16, n_out = 0;
	struct agg *tab;
	int r = 0;

	if (!b)
		return 0;
	while (cap < b->n_samples * 2)
		cap *= 2;
	tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < b->n_samples; i++) {
		const Ember__StackSample *s = b->samples[i];
		uint32_t kh, uh;
		size_t slot;

		if (!s)
			continue;
		if (!s->n_kernel_frames && !s->n_user_frames) {
			st->empty++;
			continue;
		}
		kh = stack_hash(s->kernel_frames, s->n_kernel_frames, s->kernel_resolved, s->n_kernel_resolved);
		uh = stack_hash(s->user_frames, s->n_user_frames, s->user_resolved, s->n_user_resolved);
		for (slot = (kh * 31u + uh) & (cap - 1);; slot = (slot + 1) & (cap - 1)) {
			struct agg *g = &tab[slot];
			if (!g->s) {
				*g = (struct agg){ .s = s, .kh = kh, .uh = uh };
				n_out++;
			} else if (g->kh != kh || g->uh != uh || !same_stack(g->s, s, true) ||
				   !same_stack(g->s, s, false)) {
				continue;
			} else {
				st->merged++;
			}
			g->count += s->count;
			g->weight += s->weight;
			break;
		}
	}
	/* Emit in the batch's order so output is deterministic. */
	for (size_t i = 0, emitted = 0; i < b->n_samples && !r && emitted < n_out; i++) {
		const Ember__StackSample *s = b->samples[i];
		if (!s || (!s->n_kernel_frames && !s->n_user_frames))
			continue;
		for (size_t slot = 0; slot < cap; slot++)
			if (tab[slot].s == s) {
				if (tab[slot].count || tab[slot].weight)
					r = emit(&tab[slot], m, emitted == 0, out, st);
				emitted++;
				break;
			}
	}
	free(tab);
	return r;
}

/* ---- meters -------------------------------------------------------------------------- */

int sw_codec__meter_name(const char *name, const struct sw_meter_opts *o, char *buf, size_t len)
{
	static const struct { const char *def; size_t off; } prefixes[] = {
		{ "rover_net_p_", offsetof(struct sw_meter_opts, net_prefix) },
		{ "rover_con_p_", offsetof(struct sw_meter_opts, con_prefix) },
	};
	size_t n = 0;

	if (!name || !*name || len < 2)
		return -EINVAL;
	for (unsigned i = 0; i < 2; i++) {
		const char *pre = *(const char *const *)((const char *)o + prefixes[i].off);
		size_t dl = strlen(prefixes[i].def);
		if (pre && *pre && !strncmp(name, prefixes[i].def, dl)) {
			int w = snprintf(buf, len, "%s_", pre);
			if (w < 0 || (size_t)w >= len)
				return -ENAMETOOLONG;
			n = (size_t)w;
			name += dl;
			break;
		}
	}
	for (; *name; name++) {
		char ch = *name;
		if (n + 1 >= len)
			return -ENAMETOOLONG;
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || (ch >= '0' && ch <= '9')))
			ch = '_';
		buf[n++] = ch;
	}
	buf[n] = 0;
	if (buf[0] >= '0' && buf[0] <= '9')
		buf[0] = '_';
	return (int)n;
}

struct meter_slot {
	Skywalking__V3__MeterData d;
	Skywalking__V3__MeterSingleValue sv;
	Skywalking__V3__MeterHistogram h;
	Skywalking__V3__Label *lab;
	Skywalking__V3__Label **labp;
	Skywalking__V3__MeterBucketValue *bv;
	Skywalking__V3__MeterBucketValue **bvp;
	char name[256];
};

static void slot_free(struct meter_slot *s)
{
	free(s->lab);
	free(s->labp);
	free(s->bv);
	free(s->bvp);
}

static int fill_meter(struct meter_slot *s, const Ember__Meter *m, const struct sw_meter_opts *o, int64_t ts,
		      struct sw_meter_stats *st)
{
	size_t nl = 0;

	skywalking__v3__meter_data__init(&s->d);
	s->d.service = (char *)o->service;
	s->d.serviceinstance = (char *)o->instance;
	s->d.timestamp = ts;
	if (sw_codec__meter_name(m->name, o, s->name, sizeof(s->name)) <= 0)
		return -EINVAL;
	s->lab = calloc(m->n_labels + 1, sizeof(*s->lab));
	s->labp = calloc(m->n_labels + 1, sizeof(*s->labp));
	if (!s->lab || !s->labp)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_labels; i++) {
		const Ember__Label *l = m->labels[i];
		bool dup = false;
		if (!l || !l->name || !l->name[0])
			continue;
		for (size_t j = 0; j < nl && !dup; j++)
			dup = !strcmp(s->lab[j].name, l->name);
		if (dup) {
			st->dup_labels++;
			continue;
		}
		skywalking__v3__label__init(&s->lab[nl]);
		s->lab[nl].name = l->name;
		s->lab[nl].value = l->value ? l->value : "";
		s->labp[nl] = &s->lab[nl];
		nl++;
	}
	if (!m->n_buckets) {
		skywalking__v3__meter_single_value__init(&s->sv);
		s->sv.name = s->name;
		s->sv.n_labels = nl;
		s->sv.labels = s->labp;
		s->sv.value = isfinite(m->value) ? m->value : 0;
		s->d.metric_case = SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE;
		s->d.singlevalue = &s->sv;
		return 0;
	}
	/* ember: cumulative counts per upper bound; SkyWalking: count per bucket
	 * named by its lower bound (the first one open at minus infinity). */
	s->bv = calloc(m->n_buckets + 1, sizeof(*s->bv));
	s->bvp = calloc(m->n_buckets + 1, sizeof(*s->bvp));
	if (!s->bv || !s->bvp)
		return -ENOMEM;
	{
		size_t nb = 0;
		uint64_t prev = 0;
		double lower = 0;
		for (size_t i = 0; i <= m->n_buckets; i++) {
			uint64_t cum;
			if (i < m->n_buckets) {
				if (!m->buckets[i])
					return -EINVAL;
				cum = m->buckets[i]->count;
			} else {
				if (m->n_buckets && isinf(m->buckets[m->n_buckets - 1]->upper_bound))
					break;	/* the +Inf bucket was the last one */
				cum = m->hist_count;
			}
			skywalking__v3__meter_bucket_value__init(&s->bv[nb]);
			s->bv[nb].isnegativeinfinity = i == 0;
			s->bv[nb].bucket = i == 0 ? 0 : lower;
			s->bv[nb].count = cum >= prev ? (int64_t)(cum - prev) : 0;
			s->bvp[nb] = &s->bv[nb];
			nb++;
			prev = cum;
			if (i < m->n_buckets)
				lower = m->buckets[i]->upper_bound;
		}
		skywalking__v3__meter_histogram__init(&s->h);
		s->h.name = s->name;
		s->h.n_labels = nl;
		s->h.labels = s->labp;
		s->h.n_values = nb;
		s->h.values = s->bvp;
	}
	s->d.metric_case = SKYWALKING__V3__METER_DATA__METRIC_HISTOGRAM;
	s->d.histogram = &s->h;
	return 0;
}

int sw_codec__build_meters(const Ember__MeterBatch *b, const struct sw_meter_opts *o, int64_t now_ms,
			   struct sw_msgs *out, struct sw_meter_stats *st)
{
	Skywalking__V3__MeterDataCollection col = SKYWALKING__V3__METER_DATA_COLLECTION__INIT;
	struct meter_slot *slots;
	Skywalking__V3__MeterData **ptrs;
	size_t n = 0;
	int r = 0;

	if (!b || !b->n_meters)
		return 0;
	slots = calloc(b->n_meters, sizeof(*slots));
	ptrs = calloc(b->n_meters, sizeof(*ptrs));
	if (!slots || !ptrs) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < b->n_meters; i++) {
		const Ember__Meter *m = b->meters[i];
		int64_t ts = m && m->timestamp_ms && m->timestamp_ms <= INT64_MAX ? (int64_t)m->timestamp_ms : now_ms;
		if (!m) {
			st->bad++;
			continue;
		}
		r = fill_meter(&slots[n], m, o, ts > 0 ? ts : 1, st);
		if (r == -ENOMEM)
			goto out;
		if (r) {
			st->bad++;
			slot_free(&slots[n]);
			memset(&slots[n], 0, sizeof(slots[n]));
			r = 0;
			continue;
		}
		ptrs[n] = &slots[n].d;
		n++;
	}
	if (n) {
		col.n_meterdata = n;
		col.meterdata = ptrs;
		r = sw_msgs__push(out, &col.base);
		if (!r)
			st->meters += n;
	}
out:
	for (size_t i = 0; slots && i < b->n_meters; i++)
		slot_free(&slots[i]);
	free(slots);
	free(ptrs);
	return r < 0 ? r : (int)n;
}

/* ---- network meters ------------------------------------------------------------------ */

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

/* One MeterData, packed as field 1 of MeterDataCollection: the collection is their concatenation. */
static int net_meter_pack(struct sw_net_collection *c, const struct net_meter *m)
{
	static const struct sw_meter_opts plain = { 0 };
	Skywalking__V3__MeterData d = SKYWALKING__V3__METER_DATA__INIT;
	Skywalking__V3__MeterSingleValue sv = SKYWALKING__V3__METER_SINGLE_VALUE__INIT;
	Skywalking__V3__MeterHistogram h = SKYWALKING__V3__METER_HISTOGRAM__INIT;
	Skywalking__V3__Label lab[NET_METER_MAX_LABELS], *labp[NET_METER_MAX_LABELS];
	Skywalking__V3__MeterBucketValue bv[NET_METER_MAX_BUCKETS], *bvp[NET_METER_MAX_BUCKETS];
	char name[256];
	size_t size;

	if (sw_codec__meter_name(m->name, &plain, name, sizeof(name)) <= 0) {
		c->bad++;
		return 0;
	}
	if (!c->meters) {
		d.service = (char *)c->service;
		d.serviceinstance = (char *)c->instance;
		d.timestamp = c->timestamp_ms;
	}
	for (unsigned i = 0; i < m->n_labels && i < NET_METER_MAX_LABELS; i++) {
		skywalking__v3__label__init(&lab[i]);
		lab[i].name = (char *)m->labels[i].name;
		lab[i].value = (char *)m->labels[i].value;
		labp[i] = &lab[i];
	}
	if (!m->n_buckets) {
		sv.name = name;
		sv.labels = labp;
		sv.n_labels = m->n_labels;
		sv.value = m->value;
		d.metric_case = SKYWALKING__V3__METER_DATA__METRIC_SINGLE_VALUE;
		d.singlevalue = &sv;
	} else {
		for (unsigned i = 0; i < m->n_buckets && i < NET_METER_MAX_BUCKETS; i++) {
			skywalking__v3__meter_bucket_value__init(&bv[i]);
			bv[i].bucket = m->lower[i];
			bv[i].count = m->counts[i] > INT64_MAX ? INT64_MAX : (int64_t)m->counts[i];
			bvp[i] = &bv[i];
		}
		h.name = name;
		h.labels = labp;
		h.n_labels = m->n_labels;
		h.values = bvp;
		h.n_values = m->n_buckets;
		d.metric_case = SKYWALKING__V3__METER_DATA__METRIC_HISTOGRAM;
		d.histogram = &h;
	}
	size = protobuf_c_message_get_packed_size(&d.base);
	if (c->len + size + 11 > c->cap) {
		size_t cap = c->cap ? c->cap : 4096;
		uint8_t *p;

		while (cap < c->len + size + 11)
			cap *= 2;
		if (!(p = realloc(c->buf, cap)))
			return -ENOMEM;
		c->buf = p;
		c->cap = cap;
	}
	c->buf[c->len++] = (1 << 3) | 2;	/* field 1, length-delimited */
	c->len += put_varint(c->buf + c->len, size);
	c->len += protobuf_c_message_pack(&d.base, c->buf + c->len);
	c->meters++;
	return 0;
}

int sw_codec__net_collection_add(struct sw_net_collection *c, const struct net_meter_set *s)
{
	size_t len = c->len, meters = c->meters;

	for (unsigned i = 0; i < s->n; i++)
		if (net_meter_pack(c, &s->m[i])) {
			c->len = len;	/* all of the set or none of it */
			c->meters = meters;
			return -ENOMEM;
		}
	return 0;
}

int sw_codec__net_collection_finish(struct sw_net_collection *c, struct sw_msgs *out)
{
	int n = (int)c->meters;

	if (!c->meters)
		return 0;
	if (out->n == out->cap) {
		size_t cap = out->cap ? out->cap * 2 : 16;
		struct grpc_msg *v = realloc(out->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		out->v = v;
		out->cap = cap;
	}
	out->v[out->n++] = (struct grpc_msg){ c->buf, c->len };
	out->bytes += c->len;
	c->buf = NULL;
	c->len = c->cap = c->meters = 0;
	return n;
}

void sw_codec__net_collection_release(struct sw_net_collection *c)
{
	free(c->buf);
	c->buf = NULL;
	c->len = c->cap = c->meters = 0;
}
