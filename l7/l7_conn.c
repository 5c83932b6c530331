#include "l7/l7_conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * Chunks remembered during detection so the replay keeps the original
 * interleaving of the two directions and the original timestamps.  Past
 * this many, consecutive chunks of one direction are merged (the merged
 * chunk keeps the later timestamp: parsers stamp completions with it).
 */
#define DETECT_CHUNKS 64
/* UDP: datagrams looked at before giving up on a flow. */
#define DETECT_DATAGRAMS 4

struct detect_chunk {
	uint8_t dir;
	uint32_t len;
	uint64_t ts_ns;
};

struct detect_buf {
	uint8_t pre[2][L7_DETECT_WINDOW];
	size_t prelen[2];
	struct detect_chunk chunks[DETECT_CHUNKS];
	unsigned nchunks;
};

struct l7_conn {
	struct l7_config cfg;
	const struct l7_parser_ops *ops;
	void *st;
	enum l7_conn_state state;
	bool swapped;
	bool dir_certain;
	uint16_t ports[2]; /* [L7_DIR_REQ] = client port, [L7_DIR_RESP] = server port */
	l7_emit_fn emit;
	void *emit_ctx;
	struct l7_stats *stats;
	struct l7_stats dummy_stats;
	struct detect_buf *det;
	unsigned det_restarts;  /* detections begun again after a gap */
};

int l7_conn__parser_index(const struct l7_parser_ops *ops)
{
	const struct l7_parser_ops *p;

	for (unsigned i = 0; (p = l7__at(i)); i++)
		if (p == ops)
			return (int)i;
	return -1;
}

static void conn_emit(void *ctx, const struct l7_record *rec)
{
	struct l7_conn *c = ctx;

	c->stats->records++;
	c->emit(c->emit_ctx, rec);
}

static int start_parser(struct l7_conn *c, const struct l7_parser_ops *ops, bool swapped)
{
	int idx;

	c->st = ops->create(&c->cfg, conn_emit, c);
	if (!c->st)
		return errno ? -errno : -ENOMEM;
	c->ops = ops;
	c->swapped = swapped;
	c->state = L7_CONN_PARSING;
	if (swapped)
		c->stats->swapped++;
	idx = l7_conn__parser_index(ops);
	if (idx >= 0 && idx < L7_STATS_MAX_PARSERS)
		c->stats->detected[idx]++;
	return 0;
}

struct l7_conn *l7_conn__new(const struct l7_conn_opts *opts)
{
	struct l7_conn *c;
	int err;

	if (!opts || !opts->cfg || !opts->emit) {
		errno = EINVAL;
		return NULL;
	}
	if (opts->force && opts->cfg->transport == L7_TRANSPORT_UDP && !opts->force->udp) {
		errno = EPROTONOSUPPORT;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->cfg = *opts->cfg;
	c->dir_certain = opts->dir_certain;
	c->ports[L7_DIR_REQ] = opts->client_port;
	c->ports[L7_DIR_RESP] = opts->server_port;
	c->emit = opts->emit;
	c->emit_ctx = opts->emit_ctx;
	c->stats = opts->stats ? opts->stats : &c->dummy_stats;
	c->stats->conns++;
	if (opts->force) {
		err = start_parser(c, opts->force, false);
		if (err < 0) {
			free(c);
			errno = -err;
			return NULL;
		}
		c->stats->forced++;
		return c;
	}
	c->det = malloc(sizeof(*c->det));
	if (!c->det) {
		free(c);
		return NULL;
	}
	c->det->prelen[0] = c->det->prelen[1] = 0;
	c->det->nchunks = 0;
	c->state = L7_CONN_DETECTING;
	return c;
}

/* The parser state is about to go: keep its drop counter. */
static void collect_dropped(struct l7_conn *c)
{
	if (c->st && c->ops->dropped)
		c->stats->parser_dropped += c->ops->dropped(c->st);
}

struct l7_conn *l7_conn__free(struct l7_conn *c)
{
	if (!c)
		return NULL;
	if (c->st) {
		collect_dropped(c);
		c->ops->free(c->st);
	}
	free(c->det);
	free(c);
	return NULL;
}

enum l7_conn_state l7_conn__state(const struct l7_conn *c) { return c->state; }
const struct l7_parser_ops *l7_conn__parser(const struct l7_conn *c) { return c->ops; }
bool l7_conn__swapped(const struct l7_conn *c) { return c->swapped; }

size_t l7_conn__head(const struct l7_conn *c, enum l7_dir dir)
{
	switch (c->state) {
	case L7_CONN_UNDETECTED:
	case L7_CONN_UNPARSEABLE:
		return 0;
	case L7_CONN_PARSING:
		return c->ops->head ? c->ops->head(c->st, (enum l7_dir)(c->swapped ? !dir : dir)) : L7_HEAD_ALL;
	default:
		return L7_HEAD_ALL;
	}
}

/* Score of one parser for one client/server assignment. */
static int score_of(const struct l7_conn *c, const struct l7_parser_ops *p, bool swap)
{
	const struct detect_buf *d = c->det;
	int best = 0;

	for (int dir = 0; dir < 2; dir++) {
		enum l7_dir as = (enum l7_dir)(swap ? !dir : dir);
		uint16_t sport = c->ports[swap ? L7_DIR_REQ : L7_DIR_RESP];
		int s;

		if (!d->prelen[dir])
			continue;
		s = p->detect(d->pre[dir], d->prelen[dir], as, sport);
		if (s > best)
			best = s;
	}
	return best > 100 ? 100 : best;
}

static int evaluate(const struct l7_conn *c, const struct l7_parser_ops **ret_ops, bool *ret_swap)
{
	const struct l7_parser_ops *p, *best_ops = NULL;
	bool best_swap = false;
	int best = 0;

	for (unsigned i = 0; (p = l7__at(i)); i++) {
		int s, sw = 0;

		if (c->cfg.transport == L7_TRANSPORT_UDP && !p->udp)
			continue;
		s = score_of(c, p, false);
		if (!c->dir_certain)
			sw = score_of(c, p, true);
		if (sw > s && sw > best) {
			best = sw;
			best_ops = p;
			best_swap = true;
		} else if (s > best) {
			best = s;
			best_ops = p;
			best_swap = false;
		}
	}
	*ret_ops = best_ops;
	*ret_swap = best_swap;
	return best;
}

static int mark_dead(struct l7_conn *c, int err)
{
	if (err == -ENOBUFS)
		c->stats->over_memory++;
	else
		c->stats->unparseable++;
	c->state = L7_CONN_UNPARSEABLE;
	/* Release the parser's memory now: a dead connection may live on for long. */
	collect_dropped(c);
	c->ops->free(c->st);
	c->st = NULL;
	return err;
}

static int parser_feed(struct l7_conn *c, enum l7_dir dir, const uint8_t *data, size_t len, uint64_t ts)
{
	int err;

	if (c->swapped)
		dir = (enum l7_dir)!dir;
	err = c->ops->feed(c->st, dir, data, len, ts);
	if (err < 0)
		return mark_dead(c, err == -ENOBUFS ? -ENOBUFS : -EPROTO);
	return 0;
}

/*
 * Leaves detection: with a parser, replays the buffered chunks into it;
 * without, the connection is undetected.
 */
static int decide(struct l7_conn *c, const struct l7_parser_ops *ops, bool swap)
{
	struct detect_buf *d = c->det;
	size_t off[2] = { 0, 0 };
	int err = 0;

	c->det = NULL;
	if (!ops) {
		c->state = L7_CONN_UNDETECTED;
		c->stats->undetected++;
		c->stats->ignored_bytes += d->prelen[0] + d->prelen[1];
		free(d);
		return 0;
	}
	err = start_parser(c, ops, swap);
	if (err < 0) {
		/* Out of memory for the parser state: count as over memory. */
		c->state = L7_CONN_UNPARSEABLE;
		c->stats->over_memory++;
		free(d);
		return err;
	}
	for (unsigned i = 0; i < d->nchunks && c->state == L7_CONN_PARSING; i++) {
		const struct detect_chunk *ch = &d->chunks[i];

		err = parser_feed(c, (enum l7_dir)ch->dir, d->pre[ch->dir] + off[ch->dir], ch->len, ch->ts_ns);
		off[ch->dir] += ch->len;
	}
	free(d);
	return err;
}

/* Decides if the evidence suffices; final = no more bytes will help. */
static int try_decide(struct l7_conn *c, bool checkpoint, bool final)
{
	const struct l7_parser_ops *ops;
	bool swap;
	int score = evaluate(c, &ops, &swap);

	if (score >= L7_CONF_CERTAIN || ((checkpoint || final) && score >= L7_CONF_MIN))
		return decide(c, ops, swap);
	if (final)
		return decide(c, NULL, false);
	return 0;
}

static int detect_feed(struct l7_conn *c, enum l7_dir dir, const uint8_t *data, size_t len, uint64_t ts)
{
	struct detect_buf *d = c->det;
	size_t room = L7_DETECT_WINDOW - d->prelen[dir];
	size_t take = len < room ? len : room;
	bool udp = c->cfg.transport == L7_TRANSPORT_UDP;
	bool checkpoint, final;
	int err;

	if (udp && len > room) {
		/* A datagram must reach the parser whole: decide on what we have. */
		err = try_decide(c, true, true);
		if (err < 0 || c->state != L7_CONN_PARSING)
			return err;
		return parser_feed(c, dir, data, len, ts);
	}
	checkpoint = d->nchunks > 0 && d->chunks[d->nchunks - 1].dir != dir;
	if (take) {
		struct detect_chunk *last = d->nchunks ? &d->chunks[d->nchunks - 1] : NULL;

		if (d->nchunks == DETECT_CHUNKS && !udp && last->dir == dir) {
			last->len += take;
			last->ts_ns = ts;
		} else if (d->nchunks == DETECT_CHUNKS) {
			/* No slot left to keep the interleaving: decide on what we have. */
			err = try_decide(c, true, true);
			if (err < 0 || c->state != L7_CONN_PARSING)
				return err;
			return parser_feed(c, dir, data, len, ts);
		} else {
			d->chunks[d->nchunks++] = (struct detect_chunk){ .dir = dir, .len = take, .ts_ns = ts };
		}
		memcpy(d->pre[dir] + d->prelen[dir], data, take);
		d->prelen[dir] += take;
	}
	final = d->prelen[dir] == L7_DETECT_WINDOW ||
		(udp && d->nchunks >= DETECT_DATAGRAMS);
	err = try_decide(c, checkpoint || udp, final);
	if (err < 0 || take == len || c->state != L7_CONN_PARSING)
		return err;
	return parser_feed(c, dir, data + take, len - take, ts);
}

int l7_conn__feed(struct l7_conn *c, enum l7_dir dir, const uint8_t *data, size_t len, uint64_t ts_ns)
{
	if (dir != L7_DIR_REQ && dir != L7_DIR_RESP)
		return -EINVAL;
	if (!len && c->cfg.transport != L7_TRANSPORT_UDP)
		return 0;
	switch (c->state) {
	case L7_CONN_DETECTING:
		return detect_feed(c, dir, data, len, ts_ns);
	case L7_CONN_PARSING:
		return parser_feed(c, dir, data, len, ts_ns);
	default:
		c->stats->ignored_bytes += len;
		return 0;
	}
}

int l7_conn__gap(struct l7_conn *c, enum l7_dir dir, size_t len, uint64_t ts_ns)
{
	int err;

	if (dir != L7_DIR_REQ && dir != L7_DIR_RESP)
		return -EINVAL;
	c->stats->gaps++;
	c->stats->gap_bytes += len;
	if (c->state == L7_CONN_DETECTING) {
		/*
		 * The prefix stops being contiguous here: decide on it if it says
		 * enough.  If not (the gap came first, or cut the first message
		 * short), detection begins again on the bytes after the gap, a few
		 * times: a connection followed from its middle, or whose first
		 * events were lost, is still recognised by its next message.
		 */
		err = try_decide(c, true, false);
		if (err < 0)
			return err;
		if (c->state == L7_CONN_DETECTING) {
			if (++c->det_restarts > L7_DETECT_RESTARTS)
				return decide(c, NULL, false);
			c->det->prelen[0] = c->det->prelen[1] = 0;
			c->det->nchunks = 0;
			return 0;
		}
	}
	if (c->state != L7_CONN_PARSING)
		return 0;
	err = c->ops->gap(c->st, c->swapped ? (enum l7_dir)!dir : dir, len, ts_ns);
	if (err < 0)
		return mark_dead(c, err == -ENOBUFS ? -ENOBUFS : -EPROTO);
	return 0;
}

void l7_conn__finish(struct l7_conn *c, uint64_t ts_ns)
{
	if (c->state == L7_CONN_DETECTING)
		try_decide(c, true, true);
	if (c->state == L7_CONN_PARSING) {
		c->ops->finish(c->st, ts_ns);
		c->state = L7_CONN_FINISHED;
	}
}
