/*
 * The outbox: profiling data, meters, logs and span events waiting for the
 * OAP, in one FIFO bounded by exporter.queue_size bytes (the oldest dropped
 * and counted when full), sent one call at a time with exponential backoff
 * after a failure.  A call is one client stream of one kind of item, and of
 * one key within a kind (the LogData of one service, as Rover streams them).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/skywalking/sw.h"

void sw_item_free(struct item *it)
{
	if (!it)
		return;
	sw_msgs__release(&it->m);
	free(it);
}

static void drop_head(struct sw_backend *b)
{
	struct item *it = b->head;
	b->head = it->next;
	if (!b->head)
		b->tail = &b->head;
	b->queued_bytes -= it->m.bytes;
	b->c[SC_DROPPED_BATCHES]++;
	b->c[SC_DROPPED_BYTES] += it->m.bytes;
	sw_item_free(it);
}

static void drop_item(struct sw_backend *b, struct item **pp)
{
	struct item *it = *pp;

	*pp = it->next;
	if (b->tail == &it->next)
		b->tail = pp;
	b->queued_bytes -= it->m.bytes;
	b->c[SC_DROPPED_BATCHES]++;
	b->c[SC_DROPPED_BYTES] += it->m.bytes;
	sw_item_free(it);
}

/* Gives up an in-flight item of that kind (its call goes on); 0 if there is none. */
static int drop_inflight(struct sw_backend *b, int kind)
{
	for (struct item *it = b->inflight; it; it = it->next)
		if (!it->dropped && (kind < 0 || it->kind == (enum item_kind)kind)) {
			it->dropped = true;
			b->inflight_bytes -= it->m.bytes;
			b->c[SC_DROPPED_BATCHES]++;
			b->c[SC_DROPPED_BYTES] += it->m.bytes;
			return 1;
		}
	return 0;
}

/*
 * When the buffer is full, the agent's meter batches go first (they are
 * cumulative: a later batch supersedes an earlier one), queued before in
 * flight; then the oldest profile or network batch (what is newest matters
 * most; network meters are increments, each of them counts).
 */
static void make_room(struct sw_backend *b, size_t need)
{
	while (b->queued_bytes + b->inflight_bytes + need > b->cap_bytes) {
		struct item **pp = &b->head;
		while (*pp && (*pp)->kind != I_METERS)
			pp = &(*pp)->next;
		if (*pp)
			drop_item(b, pp);
		else if (!drop_inflight(b, I_METERS)) {
			if (b->head)
				drop_head(b);
			else if (!drop_inflight(b, -1))
				break;
		}
	}
}

void sw_enqueue(struct sw_backend *b, enum item_kind kind, struct sw_msgs *m)
{
	sw_enqueue_keyed(b, kind, NULL, m);
}

void sw_enqueue_keyed(struct sw_backend *b, enum item_kind kind, const char *key, struct sw_msgs *m)
{
	struct item *it;

	if (!m->n)
		return;
	if (m->bytes > b->cap_bytes || !(it = calloc(1, sizeof(*it)))) {
		b->c[SC_DROPPED_BATCHES]++;
		b->c[SC_DROPPED_BYTES] += m->bytes;
		sw_msgs__release(m);
		return;
	}
	make_room(b, m->bytes);
	it->kind = kind;
	snprintf(it->key, sizeof(it->key), "%s", key ? key : "");
	it->m = *m;
	memset(m, 0, sizeof(*m));
	*b->tail = it;
	b->tail = &it->next;
	b->queued_bytes += it->m.bytes;
}

static const char *const methods[I_MAX] = {
	[I_PROFILE] = M_PROFILE,
	/* network meters and the agent's go to the same collectBatch, in separate calls */
	[I_METERS] = M_METERS, [I_NET_METERS] = M_METERS,
	[I_NET_LOGS] = M_LOGS, [I_NET_EVENTS] = M_EVENTS,
};

void sw_start_upload(struct sw_backend *b, uint64_t now)
{
	struct item **pp, **lastp = &b->inflight, *it;
	enum item_kind kind;
	char key[sizeof(b->head->key)];
	size_t n = 0, bytes = 0, items = 0, k = 0;
	struct grpc_msg *msgs;
	int r;

	if (!b->head || b->upload_busy || now < b->retry_at)
		return;
	kind = b->head->kind;
	memcpy(key, b->head->key, sizeof(key));
	/* One stream carries every queued batch of the oldest batch's kind and
	 * key (up to a size limit): each profile batch starts with its task, so
	 * the OAP attributes every message right, and a backlog leaves in a few
	 * calls. */
	b->inflight = NULL;
	for (pp = &b->head; *pp && items < UPLOAD_MAX_ITEMS;) {
		it = *pp;
		if (it->kind != kind || strcmp(it->key, key) || (items && bytes + it->m.bytes > UPLOAD_MAX_BYTES)) {
			pp = &it->next;
			continue;
		}
		*pp = it->next;
		if (b->tail == &it->next)
			b->tail = pp;
		it->next = NULL;
		*lastp = it;
		lastp = &it->next;
		n += it->m.n;
		bytes += it->m.bytes;
		items++;
	}
	b->queued_bytes -= bytes;
	b->inflight_bytes = bytes;
	msgs = calloc(n ? n : 1, sizeof(*msgs));
	if (!msgs)
		goto nomem;
	for (it = b->inflight; it; it = it->next)
		for (size_t j = 0; j < it->m.n; j++) {
			msgs[k].len = it->m.v[j].len;
			msgs[k].data = malloc(msgs[k].len ? msgs[k].len : 1);
			if (!msgs[k].data)
				goto nomem;
			memcpy(msgs[k].data, it->m.v[j].data, msgs[k].len);
			k++;
		}
	r = grpc_client__call(b->gc, methods[kind], msgs, k, UPLOAD_TIMEOUT_MS, ((uint64_t)C_UPLOAD << 56) | kind);
	msgs = NULL;	/* the client owns them now */
	if (!r) {
		b->upload_busy = true;
		return;
	}
nomem:
	for (size_t j = 0; msgs && j < k; j++)
		free(msgs[j].data);
	free(msgs);
	/* put them back in front; try again later */
	for (it = b->inflight; it && it->next; it = it->next)
		;
	if (it) {
		it->next = b->head;
		if (!b->head)
			b->tail = &it->next;
		b->head = b->inflight;
	}
	b->queued_bytes += bytes;
	b->inflight = NULL;
	b->inflight_bytes = 0;
	b->retry_at = now + BACKOFF_MIN_MS;
}

void sw_upload_done(struct sw_backend *b, const struct grpc_result *res, uint64_t now)
{
	struct item *it = b->inflight, *keep = NULL, **kt = &keep;

	b->upload_busy = false;
	b->inflight = NULL;
	b->inflight_bytes = 0;
	while (it) {
		struct item *next = it->next;
		if (res->status == 0) {
			if (it->kind == I_PROFILE)
				b->c[SC_PROFILE_MESSAGES] += it->m.n;
			if (it->dropped) {	/* it made it after all */
				b->c[SC_DROPPED_BATCHES]--;
				b->c[SC_DROPPED_BYTES] -= it->m.bytes;
			}
			sw_item_free(it);
		} else if (it->dropped) {
			sw_item_free(it);
		} else {
			it->next = NULL;
			*kt = it;
			kt = &it->next;
			b->queued_bytes += it->m.bytes;
		}
		it = next;
	}
	if (res->status == 0) {
		b->backoff_ms = 0;
		b->retry_at = 0;
		return;
	}
	/* back to the front of the queue, oldest first; the buffer cap still holds */
	if (keep) {
		*kt = b->head;
		if (!b->head)
			b->tail = kt;
		b->head = keep;
	}
	make_room(b, 0);
	b->backoff_ms = b->backoff_ms ? b->backoff_ms * 2 : BACKOFF_MIN_MS;
	if (b->backoff_ms > BACKOFF_MAX_MS)
		b->backoff_ms = BACKOFF_MAX_MS;
	b->retry_at = now + b->backoff_ms;
}
