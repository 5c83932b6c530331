#include "l7/l7_framed.h"

#include <errno.h>
#include <stdlib.h>

void *l7_framed__new(const struct l7_framed_spec *spec, const struct l7_config *cfg,
		     l7_emit_fn emit, void *emit_ctx)
{
	struct l7_framed *b;

	if (spec->state_size < sizeof(*b)) {
		errno = EINVAL;
		return NULL;
	}
	b = calloc(1, spec->state_size);
	if (!b)
		return NULL;
	b->spec = spec;
	b->cfg = *cfg;
	b->emit = emit;
	b->emit_ctx = emit_ctx;
	b->mem.cap = cfg->max_conn_mem;
	b->mem.used = spec->state_size;
	l7_framer__init(&b->fr[L7_DIR_REQ], spec->fops, b, &b->mem, L7_DIR_REQ);
	l7_framer__init(&b->fr[L7_DIR_RESP], spec->fops, b, &b->mem, L7_DIR_RESP);
	l7_pendq__init(&b->q, spec->entry_size, &b->mem);
	return b;
}

/*
 * After a gap: is this chunk of the client's bytes its next turn?  With the
 * requests' framing intact, any chunk is.  Lost, it is a chunk that the
 * server has answered since the client's previous one and that starts at a
 * message (spec->req_start): a server reads a long pipeline in parts, and
 * may answer the first before it reads the next, which can start at a
 * message in the middle of the pipeline.  Until then, more of a cut
 * response or of lost requests is discarded by its framer, still lost.
 */
static bool client_turn(const struct l7_framed *b, const uint8_t *data, size_t len)
{
	if (!b->req_lost)
		return true;
	return b->fr[L7_DIR_RESP].bytes > b->req_lost_mark && (!b->spec->req_start || b->spec->req_start(data, len));
}

int l7_framed__feed(void *st, enum l7_dir dir, const uint8_t *data, size_t len, uint64_t ts)
{
	struct l7_framed *b = st;
	int err;

	if (!l7_framed__dir_ok(dir))
		return -EINVAL;
	if (b->fatal)
		return b->fatal;
	if (len && dir == L7_DIR_REQ && b->req_lost && !client_turn(b, data, len)) {
		/* More of the same pipeline: the turn needs an answer after it. */
		b->req_lost_mark = b->fr[L7_DIR_RESP].bytes;
	} else if (len && dir == L7_DIR_REQ && (b->resp_cut || b->req_lost)) {
		if (b->resp_cut) {
			err = b->spec->cut(b, b->fr[L7_DIR_RESP].ts);
			if (err < 0)
				return b->fatal = err;
			if (b->spec->resp_start)
				b->resp_wait = true;   /* its framer stays lost until then */
			else
				l7_framer__reset(&b->fr[L7_DIR_RESP]);
			b->resp_cut = false;
		}
		if (b->req_lost) {
			err = b->spec->req_resume(b);
			if (err < 0)
				return b->fatal = err;
			l7_framer__reset(&b->fr[L7_DIR_REQ]);
			b->req_lost = false;
		}
	}
	if (len && dir == L7_DIR_RESP && b->resp_wait && b->spec->resp_start(data, len)) {
		l7_framer__reset(&b->fr[L7_DIR_RESP]);
		b->resp_wait = false;
	}
	err = l7_framer__feed(&b->fr[dir], data, len, ts);
	if (err < 0)
		b->fatal = err;
	return err;
}

int l7_framed__gap(void *st, enum l7_dir dir, size_t len, uint64_t ts)
{
	struct l7_framed *b = st;
	int r;

	if (!l7_framed__dir_ok(dir))
		return -EINVAL;
	if (b->fatal)
		return b->fatal;
	r = l7_framer__gap(&b->fr[dir], len, ts);
	if (r < 0)
		return b->fatal = r;
	if (r == 1 && !b->spec->resync) {
		if (dir == L7_DIR_RESP && b->spec->cut) {
			b->resp_cut = true;
		} else if (dir == L7_DIR_REQ && b->spec->req_resume) {
			b->req_lost = true;
			b->req_lost_mark = b->fr[L7_DIR_RESP].bytes;
		} else {
			return b->fatal = -EPROTO;
		}
	}
	return 0;
}

void l7_framed__finish(void *st, uint64_t ts)
{
	struct l7_framed *b = st;
	void *e;

	(void)ts;
	/* The close ends a cut response as the next request would have. */
	if (b->resp_cut && !b->fatal && b->spec->cut(b, b->fr[L7_DIR_RESP].ts) == 0)
		b->resp_cut = false;
	while ((e = l7_pendq__at(&b->q, 0))) {
		if (b->spec->unanswered)
			b->spec->unanswered(st, e);
		l7_pendq__remove(&b->q, 0);
	}
}

void l7_framed__free(void *st)
{
	struct l7_framed *b = st;

	if (!b)
		return;
	l7_framer__release(&b->fr[L7_DIR_REQ]);
	l7_framer__release(&b->fr[L7_DIR_RESP]);
	l7_pendq__release(&b->q);
	free(b);
}

uint64_t l7_framed__discarded(const void *st)
{
	const struct l7_framed *b = st;

	return b->fr[L7_DIR_REQ].discarded + b->fr[L7_DIR_RESP].discarded;
}

size_t l7_framed__head(const void *st, enum l7_dir dir)
{
	const struct l7_framed *b = st;
	const struct l7_framer *f;

	if (!b->spec->heads || !l7_framed__dir_ok(dir))
		return L7_HEAD_ALL;
	f = &b->fr[dir];
	return f->head_all || !f->head_need ? L7_HEAD_ALL : f->head_need;
}
