#include "l7/l7_framer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Buffers grown past this are freed once their message is done. */
#define FRAMER_KEEP_CAP 4096

int l7_mem__charge(struct l7_mem *m, size_t n)
{
	if (n > m->cap || m->used > m->cap - n)
		return -ENOBUFS;
	m->used += n;
	return 0;
}

void l7_mem__release(struct l7_mem *m, size_t n)
{
	m->used = n > m->used ? 0 : m->used - n;
}

void l7_framer__init(struct l7_framer *f, const struct l7_framer_ops *ops, void *ctx,
		     struct l7_mem *mem, int tag)
{
	memset(f, 0, sizeof(*f));
	f->ops = ops;
	f->ctx = ctx;
	f->mem = mem;
	f->tag = tag;
}

void l7_framer__release(struct l7_framer *f)
{
	if (f->buf) {
		l7_mem__release(f->mem, f->cap);
		free(f->buf);
	}
	f->buf = NULL;
	f->cap = f->len = f->need = 0;
}

void l7_framer__reset(struct l7_framer *f)
{
	f->len = f->need = 0;
	f->skip = 0;
	f->end_pending = false;
	f->lost = false;
}

static int reserve(struct l7_framer *f, size_t need)
{
	size_t ncap;
	uint8_t *nb;
	int err;

	if (need <= f->cap)
		return 0;
	ncap = f->cap ? f->cap : 256;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? need : ncap * 2;
	/* Never reserve past what the account could ever hold. */
	if (ncap > f->mem->cap)
		ncap = need;
	err = l7_mem__charge(f->mem, ncap - f->cap);
	if (err)
		return err;
	nb = realloc(f->buf, ncap);
	if (!nb) {
		l7_mem__release(f->mem, ncap - f->cap);
		return -ENOMEM;
	}
	f->buf = nb;
	f->cap = ncap;
	return 0;
}

static int msg_end(struct l7_framer *f)
{
	f->end_pending = false;
	return f->ops->end ? f->ops->end(f->ctx, f) : 0;
}

/* Buffered prefix fully parsed: keep the leftover (if any) at the front. */
static int consume_buffered(struct l7_framer *f, size_t r)
{
	if (r >= f->len) {
		f->skip = r - f->len;
		f->len = f->need = 0;
		if (f->cap > FRAMER_KEEP_CAP)
			l7_framer__release(f);
		if (f->skip) {
			f->end_pending = true;
			return 0;
		}
		return msg_end(f);
	}
	/* The parser asked for more than the message held: the rest starts the next one. */
	memmove(f->buf, f->buf + r, f->len - r);
	f->len -= r;
	f->need = f->len;
	return msg_end(f);
}

/* end() asked to stop right after this message: hand back what was not looked at. */
static bool take_pause(struct l7_framer *f, size_t len)
{
	if (!f->pause)
		return false;
	f->pause = false;
	f->unconsumed = len;
	return true;
}

/* Bytes up to offset `at` of the chunk being fed were needed. */
static void needed(size_t *need_at, size_t at)
{
	if (at > *need_at)
		*need_at = at;
}

/* The message frame() measured at offset `at` of the chunk, shown `avail` bytes. */
static void needed_msg(const struct l7_framer *f, size_t *need_at, size_t at, size_t avail, size_t r)
{
	size_t used = f->used ? f->used : avail;

	if (f->opening)
		return;
	if (used > avail)
		used = avail;
	if (used > r)
		used = r;
	needed(need_at, at + used);
}

static int feed(struct l7_framer *f, const uint8_t *data, size_t len, uint64_t ts, size_t *need_at)
{
	size_t need, take, total = len;
	ssize_t r;
	int err;

	f->ts = ts;
	f->unconsumed = 0;
	if (f->lost) {
		if (!len || !f->ops->sync || !f->ops->sync(f->ctx, f, data, len)) {
			f->bytes += len;
			f->discarded += len > 0;
			return 0;
		}
		f->lost = false;
	}
	for (;;) {
		if (f->skip) {
			if (!len)
				return 0;
			take = f->skip < len ? (size_t)f->skip : len;
			f->skip -= take;
			f->bytes += take;
			data += take;
			len -= take;
			if (!f->skip && f->end_pending && (err = msg_end(f)) < 0)
				return err;
			if (take_pause(f, len))
				return 0;
			continue;
		}
		if (f->len) {
			/* A split message: top the buffer up to what the parser asked for. */
			take = f->need - f->len;
			if (take > len)
				take = len;
			memcpy(f->buf + f->len, data, take);
			f->len += take;
			f->bytes += take;
			data += take;
			len -= take;
			needed(need_at, total - len);
			if (f->len < f->need)
				return 0;
			need = 0;
			f->used = 0;
			f->opening = false;
			r = f->ops->frame(f->ctx, f, f->buf, f->len, &need);
			if (r < 0)
				return (int)r;
			if (r == 0) {
				if (need <= f->len)
					return -EPROTO;
				if ((err = reserve(f, need)) < 0)
					return err;
				f->need = need;
				continue;
			}
			if ((err = consume_buffered(f, (size_t)r)) < 0)
				return err;
			if (f->pause && !f->len) {
				f->pause = false;
				f->unconsumed = len;
				return 0;
			}
			f->pause = false;
			if (f->len)
				f->msg_ts = ts;
			continue;
		}
		if (!len)
			return 0;
		/* Fast path: parse in place. */
		f->msg_ts = ts;
		need = 0;
		f->used = 0;
		f->opening = false;
		r = f->ops->frame(f->ctx, f, data, len, &need);
		if (r < 0)
			return (int)r;
		if (r > 0) {
			needed_msg(f, need_at, total - len, len, (size_t)r);
			if ((size_t)r <= len) {
				f->bytes += (size_t)r;
				data += r;
				len -= (size_t)r;
				if ((err = msg_end(f)) < 0)
					return err;
				if (take_pause(f, len))
					return 0;
				continue;
			}
			f->bytes += len;
			f->skip = (uint64_t)r - len;
			f->end_pending = true;
			return 0;
		}
		if (need <= len)
			return -EPROTO;
		if ((err = reserve(f, need)) < 0)
			return err;
		memcpy(f->buf, data, len);
		f->len = len;
		f->need = need;
		f->bytes += len;
		needed(need_at, total);
		return 0;
	}
}

int l7_framer__feed(struct l7_framer *f, const uint8_t *data, size_t len, uint64_t ts)
{
	size_t need_at = 0;
	int err = feed(f, data, len, ts, &need_at);

	if (need_at > f->head_need)
		f->head_need = need_at;
	return err;
}

int l7_framer__gap(struct l7_framer *f, size_t len, uint64_t ts)
{
	f->ts = ts;
	f->bytes += len;
	if (f->lost)
		return 1;
	if (!f->len && f->skip >= len) {
		/* The lost bytes were part of a body we discard anyway. */
		f->skip -= len;
		if (!f->skip && f->end_pending)
			return msg_end(f);
		return 0;
	}
	f->len = f->need = 0;
	f->skip = 0;
	f->end_pending = false;
	f->lost = true;
	f->head_all = true;
	return 1;
}
