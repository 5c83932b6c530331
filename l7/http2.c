/*
 * HTTP/2 (RFC 9113) cleartext parser: frames of both directions, header
 * blocks (HEADERS / PUSH_PROMISE + CONTINUATION) through one HPACK decoder
 * per direction, one exchange per stream carrying a request.
 *
 * The client preface is optional: a capture that starts mid-connection is
 * parsed from the first frame boundary, with the HPACK decoders in partial
 * mode, so a header block that references dynamic entries from before the
 * capture yields "?" for the fields it hides instead of failing.
 *
 * Gaps (live data: a socket call is seen up to a bounded prefix, the rest
 * is lost): a gap inside a DATA payload is skipped.  One that runs past the
 * frame loses the framing and whatever frames it held, header blocks
 * included, so that direction's HPACK table is forgotten (hpack__forget:
 * static references and new entries still decode, older ones are "?") and
 * parsing resumes at the next chunk that starts with a chain of plausible
 * frame headers (a socket call writes whole frames).  Streams open when a
 * response gap came may have lost their status: one that never shows a
 * status afterwards is not reported (counted in dropped()).
 *
 * Memory: frame payloads are read only for header blocks (bounded by
 * H2_BLOCK_MAX and max_conn_mem), RST_STREAM and SETTINGS; DATA is counted
 * and skipped.  At most H2_STREAMS streams are tracked; past that the
 * oldest is emitted unanswered (counted).
 */
#include "l7/l7.h"
#include "l7/hpack.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define H2_PREFACE      "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN  24
#define H2_FRAME_HDR    9
#define H2_BLOCK_MAX    (256 * 1024)
#define H2_STREAMS      128
#define H2_METHOD_MAX   16
#define H2_TABLE_MAX    (64 * 1024)

enum {
	F_DATA = 0, F_HEADERS = 1, F_PRIORITY = 2, F_RST_STREAM = 3, F_SETTINGS = 4,
	F_PUSH_PROMISE = 5, F_PING = 6, F_GOAWAY = 7, F_WINDOW_UPDATE = 8, F_CONTINUATION = 9,
};
#define FL_END_STREAM  0x1
#define FL_END_HEADERS 0x4
#define FL_PADDED      0x8
#define FL_PRIORITY    0x20

struct h2_stream {
	uint32_t id;            /* 0 = free */
	uint64_t seq;           /* creation order */
	bool has_req, req_end, has_resp, resp_end;
	bool cut;               /* open when a response gap came: its status may be lost */
	uint64_t req_ts, resp_ts, req_bytes, resp_bytes;
	int status;             /* first non-1xx :status, -1 none */
	int grpc_status;        /* -1 none */
	char method[H2_METHOD_MAX];
	char path[L7_FIELD_MAX];
};

struct h2_dir {
	size_t preface;         /* preface bytes matched (request direction) */
	bool started;           /* past the preface decision */
	uint8_t hdr[H2_FRAME_HDR];
	size_t hdrlen;
	uint32_t flen, fsid, fpos;
	uint8_t ftype, fflags;
	uint64_t fts;           /* time of the frame's first byte */
	bool keep;              /* payload is being stored */
	uint8_t *pl;            /* stored payload */
	size_t plcap;
	/* header block being assembled across CONTINUATION frames */
	bool in_block;
	uint8_t btype, bflags;
	uint32_t bsid, promised;
	uint64_t bts;
	uint8_t *blk;
	size_t blklen, blkcap;
	struct hpack *hp;
	bool hp_dead;           /* HPACK state lost: blocks are no longer decoded */
	bool lost;              /* framing lost to a gap: waiting for a chunk that starts a frame */
};

struct h2 {
	struct l7_config cfg;
	l7_emit_fn emit;
	void *emit_ctx;
	struct h2_dir d[2];
	struct h2_stream s[H2_STREAMS];
	uint64_t seq;
	size_t mem;             /* bytes of payload/block buffers */
	uint64_t evicted, orphans, undecoded;
	uint64_t lost_streams;  /* cut by a gap before their status */
	uint64_t discarded;     /* chunks thrown away while the framing was lost */
	size_t path_max;
};

/* Header fields picked out of one block. */
struct h2_hdrs {
	struct h2 *h;
	bool unknown;
	bool has_method, has_path, has_status, has_grpc;
	char method[H2_METHOD_MAX];
	char path[L7_FIELD_MAX];
	int status, grpc;
};

static uint32_t be24(const uint8_t *p) { return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2]; }
static uint32_t be31(const uint8_t *p)
{
	return ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]) & 0x7fffffffu;
}

/* ---- streams --------------------------------------------------------------- */

static void emit_stream(struct h2 *h, struct h2_stream *s)
{
	struct l7_record rec;

	l7_record__init(&rec, "http2");
	rec.has_request = s->has_req;
	rec.has_response = s->has_resp && s->status >= 0;
	rec.req_seq = s->seq;
	l7_record__add_u64(&rec, "stream_id", s->id);
	if (s->has_req) {
		/*
		 * req_end_ts stays 0: a stream's request and response overlap
		 * (streaming RPCs, a server answering before the request ends),
		 * so latency counts from the request headers, as tshark's does.
		 */
		rec.req_ts_ns = s->req_ts;
		rec.req_bytes = s->req_bytes;
		if (s->method[0])
			l7_record__add_str(&rec, "method", s->method, strlen(s->method));
		else
			l7_record__add_str(&rec, "method", "?", 1);
		if (s->path[0])
			l7_record__add_str(&rec, "path", s->path, strnlen(s->path, h->path_max));
		else
			l7_record__add_str(&rec, "path", "?", 1);
	}
	if (s->has_resp) {
		rec.resp_ts_ns = s->resp_ts;
		rec.resp_bytes = s->resp_bytes;
		if (s->status >= 0) {
			rec.status = s->status;
			l7_record__add_u64(&rec, "status", (uint64_t)s->status);
			rec.is_error = s->status >= 500;
			rec.is_client_error = s->status >= 400 && s->status < 500;
		}
		if (s->grpc_status >= 0) {
			l7_record__add_u64(&rec, "grpc_status", (uint64_t)s->grpc_status);
			if (s->grpc_status)
				rec.is_error = true;
		}
	}
	if (!rec.has_request && !rec.has_response) {
		s->id = 0;
		return;
	}
	if (s->cut && !rec.has_response) {
		/* Its status (and maybe its end) went by in a gap: unknowable. */
		h->lost_streams++;
		s->id = 0;
		return;
	}
	h->emit(h->emit_ctx, &rec);
	s->id = 0;
}

static struct h2_stream *find_stream(struct h2 *h, uint32_t id)
{
	for (unsigned i = 0; i < H2_STREAMS; i++)
		if (h->s[i].id == id)
			return &h->s[i];
	return NULL;
}

static struct h2_stream *new_stream(struct h2 *h, uint32_t id)
{
	struct h2_stream *s = NULL, *old = NULL;

	for (unsigned i = 0; i < H2_STREAMS && !s; i++) {
		if (!h->s[i].id)
			s = &h->s[i];
		else if (!old || h->s[i].seq < old->seq)
			old = &h->s[i];
	}
	if (!s) {
		/* Too many open streams: give up on the oldest, reported unanswered. */
		h->evicted++;
		emit_stream(h, old);
		s = old;
	}
	memset(s, 0, sizeof(*s));
	s->id = id;
	s->seq = ++h->seq;
	s->status = -1;
	s->grpc_status = -1;
	return s;
}

/* ---- header blocks ------------------------------------------------------------ */

static void on_header(void *ctx, const char *name, size_t nlen, const char *value, size_t vlen,
		      unsigned flags)
{
	struct h2_hdrs *x = ctx;

	if (flags & HPACK_UNKNOWN) {
		x->unknown = true;
		if (!nlen)
			return;
	}
	if (nlen == 7 && !memcmp(name, ":method", 7)) {
		size_t n = vlen < H2_METHOD_MAX - 1 ? vlen : H2_METHOD_MAX - 1;

		memcpy(x->method, value, n);
		x->method[n] = 0;
		x->has_method = true;
	} else if (nlen == 5 && !memcmp(name, ":path", 5)) {
		size_t n = vlen < x->h->path_max ? vlen : x->h->path_max;

		memcpy(x->path, value, n);
		x->path[n] = 0;
		x->has_path = true;
	} else if (nlen == 7 && !memcmp(name, ":status", 7)) {
		if (vlen == 3 && value[0] >= '1' && value[0] <= '9' && value[1] >= '0' &&
		    value[1] <= '9' && value[2] >= '0' && value[2] <= '9') {
			x->status = (value[0] - '0') * 100 + (value[1] - '0') * 10 + (value[2] - '0');
			x->has_status = true;
		}
	} else if (nlen == 11 && !memcmp(name, "grpc-status", 11)) {
		int v = 0;

		for (size_t i = 0; i < vlen && i < 4 && value[i] >= '0' && value[i] <= '9'; i++)
			v = v * 10 + (value[i] - '0');
		x->grpc = v;
		x->has_grpc = true;
	}
}

static void set_request(struct h2_stream *s, const struct h2_hdrs *x, uint64_t ts)
{
	s->has_req = true;
	s->req_ts = ts;
	strcpy(s->method, x->has_method ? x->method : "");
	strcpy(s->path, x->has_path ? x->path : "");
}

/* A complete header block of direction dir. */
static int header_block(struct h2 *h, enum l7_dir dir, struct h2_dir *d, uint64_t ts)
{
	struct h2_hdrs x = { .h = h, .status = -1, .grpc = -1 };
	bool end_stream = d->bflags & FL_END_STREAM;
	struct h2_stream *s;

	if (!d->hp_dead && hpack__decode(d->hp, d->blk, d->blklen, on_header, &x) < 0) {
		/* The table is now out of step with the encoder: stop trusting it. */
		d->hp_dead = true;
	}
	if (d->hp_dead) {
		x = (struct h2_hdrs){ .h = h, .unknown = true, .status = -1, .grpc = -1 };
		h->undecoded++;
	}

	if (d->btype == F_PUSH_PROMISE) {
		/* A request the server makes on the client's behalf. */
		if (dir != L7_DIR_RESP || !d->promised)
			return 0;
		s = find_stream(h, d->promised);
		if (!s)
			s = new_stream(h, d->promised);
		set_request(s, &x, d->bts);
		s->req_end = true;
		s->req_bytes += d->blklen;
		return 0;
	}

	s = find_stream(h, d->bsid);
	if (dir == L7_DIR_REQ) {
		if (!s) {
			s = new_stream(h, d->bsid);
			set_request(s, &x, d->bts);
			s->req_bytes += H2_FRAME_HDR + d->blklen;
		} else if (!s->has_req) {
			set_request(s, &x, d->bts);
		} /* else: request trailers */
		if (end_stream)
			s->req_end = true;
		return 0;
	}
	if (!s) {
		/* Response to a request we never saw (capture started later). */
		h->orphans++;
		s = new_stream(h, d->bsid);
		s->resp_bytes += H2_FRAME_HDR + d->blklen;
	}
	if (!s->has_resp) {
		s->has_resp = true;
	}
	if (x.has_status && (s->status < 0 || (s->status >= 100 && s->status < 200))) {
		s->status = x.status;
		s->resp_ts = ts;
	}
	if (x.has_grpc)
		s->grpc_status = x.grpc;
	if (end_stream) {
		s->resp_end = true;
		s->resp_ts = ts;
		emit_stream(h, s);
	}
	return 0;
}

/* ---- frames ------------------------------------------------------------------- */

static int grow(struct h2 *h, uint8_t **buf, size_t *cap, size_t need)
{
	uint8_t *nb;
	size_t ncap = *cap ? *cap : 4096;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	if (ncap > H2_BLOCK_MAX)
		ncap = need;
	if (need > H2_BLOCK_MAX || (h->cfg.max_conn_mem && h->mem - *cap + ncap > h->cfg.max_conn_mem))
		return -ENOBUFS;
	nb = realloc(*buf, ncap);
	if (!nb)
		return -ENOBUFS;
	h->mem = h->mem - *cap + ncap;
	*buf = nb;
	*cap = ncap;
	return 0;
}

static int block_append(struct h2 *h, struct h2_dir *d, const uint8_t *p, size_t n)
{
	int err = grow(h, &d->blk, &d->blkcap, d->blklen + n);

	if (err < 0)
		return err;
	if (!n)
		return 0;
	memcpy(d->blk + d->blklen, p, n);
	d->blklen += n;
	return 0;
}

/* Strips padding (and priority) from a HEADERS / PUSH_PROMISE payload. */
static int frame_fragment(struct h2_dir *d, const uint8_t **p, size_t *n)
{
	size_t off = 0, pad = 0;

	if (d->fflags & FL_PADDED) {
		if (*n < 1)
			return -EPROTO;
		pad = (*p)[0];
		off = 1;
	}
	if (d->ftype == F_HEADERS && (d->fflags & FL_PRIORITY))
		off += 5;
	if (d->ftype == F_PUSH_PROMISE) {
		if (*n < off + 4)
			return -EPROTO;
		d->promised = be31(*p + off);
		off += 4;
	}
	if (off + pad > *n)
		return -EPROTO;
	*p += off;
	*n -= off + pad;
	return 0;
}

static void count_bytes(struct h2 *h, enum l7_dir dir, uint32_t sid, size_t n)
{
	struct h2_stream *s;

	if (!sid || !(s = find_stream(h, sid)))
		return;
	if (dir == L7_DIR_REQ)
		s->req_bytes += n;
	else
		s->resp_bytes += n;
}

/* A complete frame (payload in d->pl when d->keep). */
static int frame_done(struct h2 *h, enum l7_dir dir, struct h2_dir *d, uint64_t ts)
{
	/* An empty frame may have no buffer yet. */
	const uint8_t *p = d->pl ? d->pl : (const uint8_t *)"";
	size_t n = d->flen;
	int err;

	if (d->in_block && d->ftype != F_CONTINUATION)
		return -EPROTO; /* a header block must not be interrupted */
	count_bytes(h, dir, d->fsid, H2_FRAME_HDR + d->flen);

	switch (d->ftype) {
	case F_HEADERS:
	case F_PUSH_PROMISE:
		if (!d->fsid)
			return -EPROTO;
		err = frame_fragment(d, &p, &n);
		if (err < 0)
			return err;
		d->in_block = true;
		d->btype = d->ftype;
		d->bflags = d->fflags;
		d->bsid = d->fsid;
		d->bts = d->fts;
		d->blklen = 0;
		err = block_append(h, d, p, n);
		if (err < 0)
			return err;
		break;
	case F_CONTINUATION:
		if (!d->in_block || d->fsid != d->bsid)
			return -EPROTO;
		err = block_append(h, d, p, n);
		if (err < 0)
			return err;
		break;
	case F_DATA: {
		struct h2_stream *s = d->fsid ? find_stream(h, d->fsid) : NULL;

		if (s && (d->fflags & FL_END_STREAM)) {
			if (dir == L7_DIR_REQ) {
				s->req_end = true;
			} else {
				s->resp_end = true;
				s->resp_ts = ts;
				emit_stream(h, s);
			}
		}
		return 0;
	}
	case F_RST_STREAM: {
		struct h2_stream *s = d->fsid ? find_stream(h, d->fsid) : NULL;

		if (s) {
			if (s->has_resp && !s->resp_ts)
				s->resp_ts = ts;
			emit_stream(h, s);
		}
		return 0;
	}
	default:
		return 0;
	}
	if (d->fflags & FL_END_HEADERS || d->ftype == F_CONTINUATION) {
		if (d->ftype == F_CONTINUATION && !(d->fflags & FL_END_HEADERS))
			return 0;
		d->in_block = false;
		return header_block(h, dir, d, ts);
	}
	return 0;
}

static bool plausible_frame(const uint8_t *p);

/* After a lost framing: does data[0..len) start with well-formed frame headers? */
static bool chain_plausible(const uint8_t *data, size_t len)
{
	size_t off = 0;

	if (len < H2_FRAME_HDR)
		return false;
	while (off + H2_FRAME_HDR <= len) {
		if (!plausible_frame(data + off))
			return false;
		off += H2_FRAME_HDR + be24(data + off);
	}
	return true;
}

/* A gap took frame boundaries, and maybe header blocks, with it. */
static void lose_framing(struct h2 *h, enum l7_dir dir, struct h2_dir *d)
{
	d->lost = true;
	d->hdrlen = 0;
	d->keep = false;
	d->in_block = false;
	d->blklen = 0;
	hpack__forget(d->hp);
	d->hp_dead = false;
	if (dir == L7_DIR_RESP)
		for (unsigned i = 0; i < H2_STREAMS; i++)
			if (h->s[i].id && h->s[i].status < 0)
				h->s[i].cut = true;
}

static bool frame_wanted(uint8_t type)
{
	return type == F_HEADERS || type == F_PUSH_PROMISE || type == F_CONTINUATION;
}

static int h2_feed(void *st, enum l7_dir dir, const uint8_t *data, size_t len, uint64_t ts_ns)
{
	struct h2 *h = st;
	struct h2_dir *d;
	int err;

	if (dir != L7_DIR_REQ && dir != L7_DIR_RESP)
		return -EINVAL;
	d = &h->d[dir];
	if (!d->started) {
		if (dir == L7_DIR_REQ) {
			/* Match (and drop) the client preface, possibly split. */
			while (len && d->preface < H2_PREFACE_LEN && *data == (uint8_t)H2_PREFACE[d->preface]) {
				d->preface++;
				data++;
				len--;
			}
			if (d->preface < H2_PREFACE_LEN) {
				if (!len)
					return 0;
				if (d->preface)
					return -EPROTO; /* half a preface */
			}
			/* No preface: picked up mid-connection, HPACK history unknown. */
			hpack__set_partial(h->d[0].hp, d->preface == 0);
			hpack__set_partial(h->d[1].hp, d->preface == 0);
		}
		d->started = true;
	}
	if (d->lost) {
		if (!chain_plausible(data, len)) {
			h->discarded++;
			return 0;
		}
		d->lost = false;
	}
	while (len) {
		if (d->hdrlen < H2_FRAME_HDR) {
			size_t take = H2_FRAME_HDR - d->hdrlen;

			if (!d->hdrlen)
				d->fts = ts_ns;
			if (take > len)
				take = len;
			memcpy(d->hdr + d->hdrlen, data, take);
			d->hdrlen += take;
			data += take;
			len -= take;
			if (d->hdrlen < H2_FRAME_HDR)
				return 0;
			d->flen = be24(d->hdr);
			d->ftype = d->hdr[3];
			d->fflags = d->hdr[4];
			d->fsid = be31(d->hdr + 5);
			d->fpos = 0;
			d->keep = frame_wanted(d->ftype);
			if (d->keep) {
				err = grow(h, &d->pl, &d->plcap, d->flen);
				if (err < 0)
					return err;
			}
			if (d->flen)
				continue;
		} else {
			size_t take = d->flen - d->fpos;

			if (take > len)
				take = len;
			if (d->keep)
				memcpy(d->pl + d->fpos, data, take);
			d->fpos += (uint32_t)take;
			data += take;
			len -= take;
			if (d->fpos < d->flen)
				return 0;
		}
		d->hdrlen = 0;
		err = frame_done(h, dir, d, ts_ns);
		if (err < 0)
			return err;
	}
	return 0;
}

static int h2_gap(void *st, enum l7_dir dir, size_t len, uint64_t ts_ns)
{
	struct h2 *h = st;
	struct h2_dir *d;

	(void)ts_ns;
	if (dir != L7_DIR_REQ && dir != L7_DIR_RESP)
		return -EINVAL;
	d = &h->d[dir];
	if (!d->started)
		return -EPROTO;   /* the preface itself: nothing to go on */
	if (d->lost)
		return 0;
	/* Inside the payload of a frame we skip anyway (DATA): harmless. */
	if (d->hdrlen == H2_FRAME_HDR && !d->keep) {
		size_t rest = d->flen - d->fpos;
		int err;

		if (rest >= len) {
			d->fpos += (uint32_t)len;
			if (d->fpos == d->flen) {
				d->hdrlen = 0;
				return frame_done(h, dir, d, ts_ns);
			}
			return 0;
		}
		/* The gap ends this frame and goes on past it. */
		d->fpos = d->flen;
		d->hdrlen = 0;
		err = frame_done(h, dir, d, ts_ns);
		if (err < 0)
			return err;
	}
	lose_framing(h, dir, d);
	return 0;
}

static void h2_finish(void *st, uint64_t ts_ns)
{
	struct h2 *h = st;
	struct h2_stream *o;

	(void)ts_ns;
	/* Emit in creation order, so output stays in request order. */
	for (;;) {
		o = NULL;
		for (unsigned i = 0; i < H2_STREAMS; i++)
			if (h->s[i].id && (!o || h->s[i].seq < o->seq))
				o = &h->s[i];
		if (!o)
			break;
		emit_stream(h, o);
	}
}

static void h2_free(void *st)
{
	struct h2 *h = st;

	if (!h)
		return;
	for (int i = 0; i < 2; i++) {
		hpack__free(h->d[i].hp);
		free(h->d[i].pl);
		free(h->d[i].blk);
	}
	free(h);
}

static uint64_t h2_dropped(const void *st)
{
	const struct h2 *h = st;

	/*
	 * Header blocks not decoded, streams given up or cut by a gap,
	 * responses without request, chunks discarded after a gap.
	 */
	return h->undecoded + h->evicted + h->orphans + h->lost_streams + h->discarded;
}

static void *h2_create(const struct l7_config *cfg, l7_emit_fn emit, void *emit_ctx)
{
	struct h2 *h;

	if (!cfg || !emit) {
		errno = EINVAL;
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (!h)
		return NULL;
	h->cfg = *cfg;
	h->emit = emit;
	h->emit_ctx = emit_ctx;
	h->path_max = cfg->max_query_len && cfg->max_query_len < L7_FIELD_MAX - 1 ?
		      cfg->max_query_len : L7_FIELD_MAX - 1;
	for (int i = 0; i < 2; i++) {
		h->d[i].hp = hpack__new(H2_TABLE_MAX);
		if (!h->d[i].hp) {
			h2_free(h);
			errno = ENOMEM;
			return NULL;
		}
	}
	return h;
}

/* ---- detection ------------------------------------------------------------------ */

/* Is hdr[0..9) a plausible frame header (default SETTINGS_MAX_FRAME_SIZE)? */
static bool plausible_frame(const uint8_t *p)
{
	uint32_t len = be24(p), sid = be31(p + 5);
	uint8_t type = p[3];

	if (len > 16384 || type > F_CONTINUATION || (p[5] & 0x80))
		return false;
	switch (type) {
	case F_SETTINGS:
		return !sid && len % 6 == 0;
	case F_PING:
		return !sid && len == 8;
	case F_GOAWAY:
		return !sid && len >= 8;
	case F_WINDOW_UPDATE:
		return len == 4;
	case F_RST_STREAM:
		return sid && len == 4;
	case F_PRIORITY:
		return sid && len == 5;
	default:
		return sid != 0;
	}
}

static int h2_detect(const uint8_t *data, size_t len, enum l7_dir dir, uint16_t server_port)
{
	size_t off = 0;
	unsigned frames = 0;

	(void)server_port;
	if (dir == L7_DIR_REQ && len && data[0] == 'P') {
		size_t n = len < H2_PREFACE_LEN ? len : H2_PREFACE_LEN;

		if (memcmp(data, H2_PREFACE, n))
			return 0;
		return n == H2_PREFACE_LEN ? 100 : 0;
	}
	/* Mid-connection: a chain of well-formed frames. */
	while (off + H2_FRAME_HDR <= len) {
		if (!plausible_frame(data + off))
			return 0;
		off += H2_FRAME_HDR + be24(data + off);
		if (off <= len)
			frames++;
	}
	if (frames >= 2)
		return 75;
	if (frames == 1 && off == len)
		return 50;
	return 0;
}

const struct l7_parser_ops l7_http2_ops = {
	.name = "http2",
	.detect = h2_detect,
	.create = h2_create,
	.feed = h2_feed,
	.gap = h2_gap,
	.finish = h2_finish,
	.free = h2_free,
	.dropped = h2_dropped,
};
