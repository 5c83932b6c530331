/*
 * Fuzzes the decoding of the OAP's answer to queryTasks (untrusted input):
 * the bytes are a packed skywalking.v3.Commands, each command goes through
 * sw_codec__decode_task.  A decoded task must satisfy every promise of the
 * header, and a command rebuilt from the decoded fields must decode to the
 * same task (the decoder neither invents nor loses anything).
 */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/skywalking/codec.h"

static const char *const targets[] = { NULL, "ON_CPU", "OFF_CPU", "NETWORK" };

static void check_task(const struct sw_task_cmd *t)
{
	size_t n = strlen(t->task_id);

	assert(n > 0 && n < SW_MAX_ID);
	assert(t->n_process_ids >= 1 && t->n_process_ids <= SW_MAX_PROCESS_IDS);
	for (unsigned i = 0; i < t->n_process_ids; i++) {
		size_t m = strlen(t->process_ids[i]);
		assert(m > 0 && m < SW_MAX_ID);
		assert(!strchr(t->process_ids[i], ','));
	}
	assert(t->target >= SW_TARGET_ON_CPU && t->target <= SW_TARGET_NETWORK);
	assert(t->target == SW_TARGET_NETWORK || t->n_process_ids == 1);
	assert(t->trigger == SW_TRIGGER_FIXED_TIME);
	assert(t->duration_s > 0);
	assert(t->update_time_ms >= 0 && t->start_time_ms >= 0);
}

static void roundtrip(const struct sw_task_cmd *t, const char *ext)
{
	Skywalking__V3__Command c = SKYWALKING__V3__COMMAND__INIT;
	Skywalking__V3__KeyStringValuePair kv[8], *p[8];
	char pids[SW_MAX_PROCESS_IDS * SW_MAX_ID], upd[24], start[24], dur[24];
	const char *keys[8] = { "TaskId", "ProcessId", "TaskUpdateTime", "TriggerType", "TargetType", "TaskStartTime",
				"ExtensionConfigJSON", "FixedTriggerDuration" };
	const char *vals[8];
	struct sw_task_cmd u;
	char why[160];
	size_t off = 0;

	for (unsigned i = 0; i < t->n_process_ids; i++)
		off += (size_t)snprintf(pids + off, sizeof(pids) - off, "%s%s", i ? "," : "", t->process_ids[i]);
	snprintf(upd, sizeof(upd), "%lld", (long long)t->update_time_ms);
	snprintf(start, sizeof(start), "%lld", (long long)t->start_time_ms);
	snprintf(dur, sizeof(dur), "%lld", (long long)t->duration_s);
	vals[0] = t->task_id; vals[1] = pids; vals[2] = upd; vals[3] = "FIXED_TIME";
	vals[4] = targets[t->target]; vals[5] = start; vals[6] = ext; vals[7] = dur;
	/* reverse order: arguments are looked up by key */
	for (int i = 0; i < 8; i++) {
		skywalking__v3__key_string_value_pair__init(&kv[i]);
		kv[i].key = (char *)keys[7 - i];
		kv[i].value = (char *)vals[7 - i];
		p[i] = &kv[i];
	}
	c.command = "EBPFProfilingTaskQuery";
	c.n_args = 8;
	c.args = p;
	assert(sw_codec__decode_task(&c, &u, why, sizeof(why)) == 0);
	assert(!memcmp(t, &u, sizeof(u)));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Skywalking__V3__Commands *cs = skywalking__v3__commands__unpack(NULL, size, data);

	if (!cs)
		return 0;
	for (size_t i = 0; i < cs->n_commands; i++) {
		struct sw_task_cmd t;
		char why[160];
		int r = sw_codec__decode_task(cs->commands[i], &t, why, sizeof(why));
		const char *ext = "null";

		assert(r == 0 || r == -EINVAL || r == -ENOENT);
		assert(strlen(why) < sizeof(why));
		if (r)
			continue;
		check_task(&t);
		for (size_t a = 0; a < cs->commands[i]->n_args; a++)
			if (!strcmp(cs->commands[i]->args[a]->key, "ExtensionConfigJSON"))
				ext = cs->commands[i]->args[a]->value;
		roundtrip(&t, ext);
	}
	skywalking__v3__commands__free_unpacked(cs, NULL);
	return 0;
}
