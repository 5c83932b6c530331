#include "exporter/thread_events.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <json-c/json.h>

#include "exporter/gala_tables.h"

void thread_events__host(struct thread_host *ret)
{
	memset(ret, 0, sizeof(*ret));
	/* The id gala-gopher's other records carry (the metric records' machine_id): one host, one id. */
	gala_tables__machine_id(ret->id, sizeof(ret->id));
	if (gethostname(ret->name, sizeof(ret->name) - 1) || !ret->name[0])
		snprintf(ret->name, sizeof(ret->name), "unknown");
}

static struct json_object *str(const char *s)
{
	return json_object_new_string(s ? s : "");
}

/* "a;b;c;": gala-gopher ends every frame with ';', root first. */
static struct json_object *stack_text(const Ember__ThreadEvent *e)
{
	size_t len = 1;
	char *buf, *p;
	struct json_object *o;

	for (size_t i = 0; i < e->n_stack; i++)
		len += strlen(e->stack[i]) + 1;
	if (!(buf = malloc(len)))
		return NULL;
	p = buf;
	for (size_t i = 0; i < e->n_stack; i++) {
		size_t n = strlen(e->stack[i]);

		memcpy(p, e->stack[i], n);
		p += n;
		*p++ = ';';
	}
	*p = 0;
	o = json_object_new_string(buf);
	free(buf);
	return o;
}

static struct json_object *value(const Ember__ThreadEvent *e)
{
	struct json_object *v = json_object_new_object();

	if (!v)
		return NULL;
	json_object_object_add(v, "event.name", str(e->name));
	json_object_object_add(v, "event.type", str(e->type));
	json_object_object_add(v, "start_time", json_object_new_int64((int64_t)(e->start_unix_ns / 1000000)));
	json_object_object_add(v, "end_time", json_object_new_int64((int64_t)(e->end_unix_ns / 1000000)));
	json_object_object_add(v, "duration", json_object_new_double((double)e->duration_ns / 1e6));
	json_object_object_add(v, "count", json_object_new_int64((int64_t)e->count));
	if (e->n_stack)
		json_object_object_add(v, "func.stack", stack_text(e));
	if (e->file_path && e->file_path[0])
		json_object_object_add(v, "file.path", str(e->file_path));
	if (e->sock_conn && e->sock_conn[0])
		json_object_object_add(v, "sock.conn", str(e->sock_conn));
	if (e->futex_op && e->futex_op[0])
		json_object_object_add(v, "futex.op", str(e->futex_op));
	if (e->ongoing)
		json_object_object_add(v, "ongoing", json_object_new_boolean(1));
	return v;
}

static struct json_object *message(const Ember__ThreadEvent *e, const struct thread_host *h, uint64_t now_ms,
				   struct json_object **ret_values)
{
	struct json_object *m = json_object_new_object(), *r = json_object_new_object(),
			   *a = json_object_new_object(), *vals = json_object_new_array();

	if (!m || !r || !a || !vals) {
		json_object_put(m);
		json_object_put(r);
		json_object_put(a);
		json_object_put(vals);
		return NULL;
	}
	json_object_object_add(m, "Timestamp", json_object_new_int64((int64_t)now_ms));
	json_object_object_add(m, "SeverityText", json_object_new_string("INFO"));
	json_object_object_add(m, "SeverityNumber", json_object_new_int(9));
	json_object_object_add(m, "Body", json_object_new_string(""));
	json_object_object_add(r, "host.id", str(h->id));
	json_object_object_add(r, "host.name", str(h->name));
	json_object_object_add(r, "thread.pid", json_object_new_int64(e->tid));
	json_object_object_add(r, "thread.tgid", json_object_new_int64(e->tgid));
	json_object_object_add(r, "thread.comm", str(e->thread_comm));
	json_object_object_add(r, "proc.name", str(e->proc_name));
	json_object_object_add(r, "container.id", str(e->container_id));
	json_object_object_add(r, "container.name", str(""));
	json_object_object_add(m, "Resource", r);
	json_object_object_add(a, "values", vals);
	json_object_object_add(m, "Attributes", a);
	*ret_values = vals;
	return m;
}

struct order { uint32_t tgid, tid; size_t first, i; };

static int by_thread(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

static int by_id(const void *a, const void *b)
{
	const struct order *x = a, *y = b;

	if (x->tgid != y->tgid)
		return x->tgid < y->tgid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->i < y->i ? -1 : x->i > y->i;
}

int thread_events__each(const Ember__ThreadBatch *b, const struct thread_host *h, uint64_t now_ms,
			thread_events_fn fn, void *ctx)
{
	struct order *o = b->n_events ? calloc(b->n_events, sizeof(*o)) : NULL;
	int r = 0;

	if (b->n_events && !o)
		return -ENOMEM;
	/* Grouped by thread, in the order threads first appear: sorted by thread, then by first appearance. */
	for (size_t i = 0; i < b->n_events; i++)
		o[i] = (struct order){ .tgid = b->events[i]->tgid, .tid = b->events[i]->tid, .i = i };
	qsort(o, b->n_events, sizeof(*o), by_id);
	for (size_t i = 0, first = 0; i < b->n_events; i++) {
		if (i && (o[i].tid != o[i - 1].tid || o[i].tgid != o[i - 1].tgid))
			first = i;
		o[i].first = o[first].i;
	}
	qsort(o, b->n_events, sizeof(*o), by_thread);
	for (size_t i = 0; i < b->n_events && !r;) {
		struct json_object *m, *vals;
		const char *s;
		size_t len, j;

		if (!(m = message(b->events[o[i].i], h, now_ms, &vals))) {
			r = -ENOMEM;
			break;
		}
		for (j = i; j < b->n_events && o[j].first == o[i].first; j++) {
			struct json_object *v = value(b->events[o[j].i]);

			if (v)
				json_object_array_add(vals, v);
		}
		i = j;
		s = json_object_to_json_string_length(m, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
		r = s ? fn(ctx, s, len) : -ENOMEM;
		json_object_put(m);
	}
	free(o);
	return r;
}
