#include "analyzer/net/tlsbind.h"

#include <stddef.h>
#include <stdlib.h>

#define TLS_OBJ_SLOTS 4096
#define TLS_TID_SLOTS 1024

struct tlsbind {
	struct { uint32_t tgid; uint64_t obj, ino; } objs[TLS_OBJ_SLOTS];
	struct { uint32_t tid, tgid; uint64_t ino; } tids[TLS_TID_SLOTS];
};

struct tlsbind *tlsbind__new(void)
{
	return calloc(1, sizeof(struct tlsbind));
}

static size_t obj_slot(uint32_t tgid, uint64_t obj)
{
	return (size_t)(((obj >> 4) ^ tgid) * 0x9e3779b97f4a7c15ull >> 52) & (TLS_OBJ_SLOTS - 1);
}

void tlsbind__object(struct tlsbind *b, uint32_t tgid, uint64_t obj, uint64_t ino)
{
	size_t i = obj_slot(tgid, obj);

	b->objs[i].tgid = tgid;
	b->objs[i].obj = obj;
	b->objs[i].ino = ino;
}

void tlsbind__thread(struct tlsbind *b, uint32_t tgid, uint32_t tid, uint64_t ino)
{
	size_t i = tid & (TLS_TID_SLOTS - 1);

	b->tids[i].tid = tid;
	b->tids[i].tgid = tgid;
	b->tids[i].ino = ino;
}

uint64_t tlsbind__socket(const struct tlsbind *b, uint32_t tgid, uint32_t tid, uint64_t obj)
{
	size_t i = obj_slot(tgid, obj), t = tid & (TLS_TID_SLOTS - 1);

	if (b->objs[i].tgid == tgid && b->objs[i].obj == obj && b->objs[i].ino)
		return b->objs[i].ino;
	return b->tids[t].tid == tid && b->tids[t].tgid == tgid ? b->tids[t].ino : 0;
}

struct tlsbind *tlsbind__free(struct tlsbind *b)
{
	free(b);
	return NULL;
}
