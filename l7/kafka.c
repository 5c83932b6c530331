/*
 * Apache Kafka wire protocol.
 *
 * Every message is [size:4 BE][...size bytes].  Requests start with the
 * request header (api_key, api_version, correlation_id; v1+ a nullable
 * client_id; v2, for flexible api versions, tagged fields), responses with
 * the correlation_id (v1 header, flexible versions except ApiVersions, adds
 * tagged fields).  Only headers and the first fields of a few bodies are
 * read; the rest of each message is discarded without buffering, so a
 * 1 MB Produce costs no memory.
 *
 * Pairing is by correlation id, wherever the request sits in the queue.
 * Produce with acks=0 gets no response and is reported at once.  A response
 * whose id matches nothing is reported on its own (correlation_id only).
 * Ids make a gap harmless: after one, each direction waits for a chunk that
 * starts with a plausible header (a response must carry a pending id).
 */
#include "l7/l7.h"
#include "l7/l7_framed.h"
#include "l7/l7_util.h"

#include <errno.h>
#include <string.h>

#define KAFKA_MAX_MSG     (1u << 30)
#define KAFKA_MAX_VERSION 20
#define KAFKA_PREFIX      512
#define KAFKA_MAX_PENDING 1024

/* Official names (kafka/clients/.../ApiKeys), index = api key; first flexible version. */
static const struct api {
	const char *name;
	int8_t flex;      /* first flexible version, -1 none */
	int8_t err_v0;    /* error_code offset in the v0 body, -1 unknown */
	int8_t throttle_from; /* version from which throttle_time_ms precedes error_code, -1 never */
} apis[] = {
	{ "Produce", 9, -1, -1 }, { "Fetch", 12, -1, -1 }, { "ListOffsets", 6, -1, -1 },
	{ "Metadata", 9, -1, -1 }, { "LeaderAndIsr", 4, 0, -1 }, { "StopReplica", 2, 0, -1 },
	{ "UpdateMetadata", 6, 0, -1 }, { "ControlledShutdown", 3, 0, -1 }, { "OffsetCommit", 8, -1, -1 },
	{ "OffsetFetch", 6, -1, -1 }, { "FindCoordinator", 3, 0, 1 }, { "JoinGroup", 6, 0, 2 },
	{ "Heartbeat", 4, 0, 1 }, { "LeaveGroup", 4, 0, 1 }, { "SyncGroup", 4, 0, 1 },
	{ "DescribeGroups", 5, -1, -1 }, { "ListGroups", 3, 0, 1 }, { "SaslHandshake", -1, 0, -1 },
	{ "ApiVersions", 3, 0, -1 }, { "CreateTopics", 5, -1, -1 }, { "DeleteTopics", 4, -1, -1 },
	{ "DeleteRecords", 2, -1, -1 }, { "InitProducerId", 2, 4, 0 }, { "OffsetForLeaderEpoch", 4, -1, -1 },
	{ "AddPartitionsToTxn", 3, -1, -1 }, { "AddOffsetsToTxn", 3, 4, 0 }, { "EndTxn", 3, 4, 0 },
	{ "WriteTxnMarkers", 1, -1, -1 }, { "TxnOffsetCommit", 3, -1, -1 }, { "DescribeAcls", 2, 4, 0 },
	{ "CreateAcls", 2, -1, -1 }, { "DeleteAcls", 2, -1, -1 }, { "DescribeConfigs", 4, -1, -1 },
	{ "AlterConfigs", 2, -1, -1 }, { "AlterReplicaLogDirs", 2, -1, -1 }, { "DescribeLogDirs", 2, -1, -1 },
	{ "SaslAuthenticate", 2, 0, -1 }, { "CreatePartitions", 2, -1, -1 },
	{ "CreateDelegationToken", 2, 0, -1 }, { "RenewDelegationToken", 2, 0, -1 },
	{ "ExpireDelegationToken", 2, 0, -1 }, { "DescribeDelegationToken", 2, 0, -1 },
	{ "DeleteGroups", 2, -1, -1 }, { "ElectLeaders", 2, -1, -1 }, { "IncrementalAlterConfigs", 1, -1, -1 },
	{ "AlterPartitionReassignments", 0, -1, -1 }, { "ListPartitionReassignments", 0, -1, -1 },
	{ "OffsetDelete", -1, 0, -1 }, { "DescribeClientQuotas", 1, -1, -1 }, { "AlterClientQuotas", 1, -1, -1 },
	{ "DescribeUserScramCredentials", 0, -1, -1 }, { "AlterUserScramCredentials", 0, -1, -1 },
	{ "Vote", 0, 0, -1 }, { "BeginQuorumEpoch", 1, 0, -1 }, { "EndQuorumEpoch", 1, 0, -1 },
	{ "DescribeQuorum", 0, 0, -1 }, { "AlterPartition", 0, -1, -1 }, { "UpdateFeatures", 0, -1, -1 },
	{ "Envelope", 0, -1, -1 }, { "FetchSnapshot", 0, -1, -1 }, { "DescribeCluster", 0, -1, -1 },
	{ "DescribeProducers", 0, -1, -1 }, { "BrokerRegistration", 0, -1, -1 }, { "BrokerHeartbeat", 0, -1, -1 },
	{ "UnregisterBroker", 0, -1, -1 }, { "DescribeTransactions", 0, -1, -1 }, { "ListTransactions", 0, -1, -1 },
	{ "AllocateProducerIds", 0, -1, -1 }, { "ConsumerGroupHeartbeat", 0, -1, -1 },
	{ "ConsumerGroupDescribe", 0, -1, -1 }, { "ControllerRegistration", 0, -1, -1 },
	{ "GetTelemetrySubscriptions", 0, -1, -1 }, { "PushTelemetry", 0, -1, -1 },
	{ "AssignReplicasToDirs", 0, -1, -1 }, { "ListClientMetricsResources", 0, -1, -1 },
	{ "DescribeTopicPartitions", 0, -1, -1 },
};
#define NAPIS ((int)(sizeof(apis) / sizeof(apis[0])))

struct pend {
	uint64_t ts, end_ts, req_bytes, seq;   /* first and last byte */
	int32_t corr;
	int16_t key, version;
	uint16_t cid_len;
	char client_id[64];
};

struct kafka {
	struct l7_framed base;   /* first: framers, pending requests, memory, error */
	uint64_t nreq;         /* requests seen: their order for req_seq */
	/* Built by frame(), emitted by end() once the message's last byte is in. */
	bool have;
	bool have_req;
	struct pend cur;
	bool noresp;          /* cur is a Produce with acks=0 */
	bool resp_err_known;
	int16_t resp_err;
	uint64_t resp_bytes;
};

static bool flexible(int16_t key, int16_t version)
{
	return key >= 0 && key < NAPIS && apis[key].flex >= 0 && version >= apis[key].flex;
}

/* Unsigned varint (tagged fields, compact lengths): bytes used, 0 if bad. */
static size_t uvarint(const uint8_t *p, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	for (size_t i = 0; i < n && i < 10; i++) {
		x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			*v = x;
			return i + 1;
		}
	}
	return 0;
}

/* Tagged-field section: bytes used, 0 if it does not fit in n. */
static size_t skip_tags(const uint8_t *p, size_t n)
{
	uint64_t cnt, tag, sz;
	size_t off, k;

	if (!(k = uvarint(p, n, &cnt)) || cnt > 64)
		return 0;
	off = k;
	while (cnt--) {
		if (!(k = uvarint(p + off, n - off, &tag)))
			return 0;
		off += k;
		if (!(k = uvarint(p + off, n - off, &sz)) || sz > n - off - k)
			return 0;
		off += k + sz;
	}
	return off;
}

static void emit_rec(struct kafka *k, const struct pend *p, bool has_req, bool has_resp, uint64_t resp_ts,
		     bool err_known, int16_t err, uint64_t resp_bytes)
{
	struct l7_record rec;

	l7_record__init(&rec, "kafka");
	if (has_req) {
		l7_rec_req(&rec, p->ts, p->end_ts, p->req_bytes, p->seq);
		l7_rec_u64(&rec, "api_key", (uint64_t)p->key);
		if (p->key < NAPIS)
			l7_rec_str(&rec, "api_name", apis[p->key].name);
		else
			l7_rec_tagnum(&rec, "api_name", "Unknown", p->key);
		l7_rec_u64(&rec, "api_version", (uint64_t)p->version);
	}
	l7_rec_i64(&rec, "correlation_id", p->corr);
	if (has_req && p->cid_len)
		l7_rec_strn(&rec, "client_id", p->client_id, p->cid_len);
	if (has_resp) {
		l7_rec_resp(&rec, resp_ts, resp_bytes);
		if (err_known) {
			rec.status = err;
			rec.is_error = err != 0;
			l7_rec_i64(&rec, "error_code", err);
		}
	}
	l7_framed__emit(&k->base, &rec);
}

/* Request header check shared by frame(), sync() and detect(). */
static bool plausible_request(const uint8_t *p, size_t n)
{
	uint32_t size;
	int16_t key, ver, cl;

	if (n < 12)
		return false;
	size = l7_be32(p);
	key = (int16_t)l7_be16(p + 4);
	ver = (int16_t)l7_be16(p + 6);
	if (size < 8 || size > KAFKA_MAX_MSG || key < 0 || key >= NAPIS || ver < 0 || ver > KAFKA_MAX_VERSION)
		return false;
	if (key == 7 && ver == 0)
		return true;   /* ControlledShutdown v0: header v0, no client id */
	if (n < 14 || size < 10)
		return false;
	cl = (int16_t)l7_be16(p + 12);
	return cl >= -1 && (cl < 0 || (uint32_t)cl <= size - 10);
}

static ssize_t frame_req(struct kafka *k, const uint8_t *p, size_t avail, size_t *need, size_t *used)
{
	uint32_t size;
	size_t want, off, n;
	struct pend *c = &k->cur;
	int16_t cl;

	if (avail < 4) {
		*need = 4;
		return 0;
	}
	size = l7_be32(p);
	if (size < 8 || size > KAFKA_MAX_MSG)
		return -EPROTO;
	want = 4 + l7_min(size, KAFKA_PREFIX);
	if (avail < want) {
		*need = want;
		return 0;
	}
	if (!plausible_request(p, want))
		return -EPROTO;
	*used = want;   /* the header and what follows it, up to KAFKA_PREFIX: all it reads */
	memset(c, 0, sizeof(*c));
	c->key = (int16_t)l7_be16(p + 4);
	c->version = (int16_t)l7_be16(p + 6);
	c->corr = (int32_t)l7_be32(p + 8);
	c->req_bytes = 4 + (uint64_t)size;
	off = 12;
	n = want;
	k->noresp = false;
	if (!(c->key == 7 && c->version == 0)) {
		cl = (int16_t)l7_be16(p + 12);
		off = 14;
		if (cl > 0) {
			size_t l = l7_min((size_t)cl, n - off);
			c->cid_len = (uint16_t)l7_min(l, sizeof(c->client_id));
			memcpy(c->client_id, p + off, c->cid_len);
			off += (size_t)cl;
		}
		if (off <= n && flexible(c->key, c->version)) {
			size_t t = skip_tags(p + off, n - off);
			off = t ? off + t : n + 1;
		}
		/* Produce: acks=0 means the broker never answers. */
		if (c->key == 0 && off < n) {
			int64_t tl = -1;
			if (c->version >= 3) {
				if (flexible(c->key, c->version)) {
					uint64_t v;
					size_t kk = uvarint(p + off, n - off, &v);
					if (kk && v <= 0x7fffffff) {
						tl = (int64_t)v - 1;
						off += kk;
					} else {
						off = n;
					}
				} else if (off + 2 <= n) {
					tl = (int16_t)l7_be16(p + off);
					off += 2;
				}
				if (tl > 0)
					off = (uint64_t)tl < n - l7_min(off, n) ? off + (size_t)tl : n;
			}
			if (off + 2 <= n && (int16_t)l7_be16(p + off) == 0)
				k->noresp = true;
		}
	}
	k->have = k->have_req = true;
	return (ssize_t)(4 + (uint64_t)size);
}

static ssize_t frame_resp(struct kafka *k, const uint8_t *p, size_t avail, size_t *need, size_t *used)
{
	uint32_t size;
	size_t want, off;
	struct pend *e;
	unsigned i, cnt;
	int32_t corr;

	if (avail < 4) {
		*need = 4;
		return 0;
	}
	size = l7_be32(p);
	if (size < 4 || size > KAFKA_MAX_MSG)
		return -EPROTO;
	want = 4 + l7_min(size, 64);
	if (avail < want) {
		*need = want;
		return 0;
	}
	*used = want;   /* its first 64 bytes: all it reads */
	corr = (int32_t)l7_be32(p + 4);
	k->have = true;
	k->have_req = false;
	k->resp_err_known = false;
	k->resp_bytes = 4 + (uint64_t)size;
	memset(&k->cur, 0, sizeof(k->cur));
	k->cur.corr = corr;
	cnt = l7_pendq__count(&k->base.q);
	for (i = 0; i < cnt; i++) {
		e = l7_pendq__at(&k->base.q, i);
		if (e->corr != corr)
			continue;
		k->cur = *e;
		k->have_req = true;
		l7_pendq__remove(&k->base.q, i);
		/* Error code, for the APIs that put it at a fixed place. */
		if (k->cur.key < NAPIS && apis[k->cur.key].err_v0 >= 0) {
			const struct api *a = &apis[k->cur.key];
			off = 8;
			if (flexible(k->cur.key, k->cur.version) && k->cur.key != 18) {
				size_t t = skip_tags(p + off, want - off);
				off = t ? off + t : want;
			}
			if (a->throttle_from >= 0 && k->cur.version >= a->throttle_from && a->err_v0 == 0)
				off += 4;
			else
				off += (size_t)a->err_v0;
			if (k->cur.key == 10 && k->cur.version >= 4)
				off = want;   /* FindCoordinator v4+: per-coordinator errors */
			if (off + 2 <= want) {
				k->resp_err_known = true;
				k->resp_err = (int16_t)l7_be16(p + off);
			}
		}
		break;
	}
	return (ssize_t)(4 + (uint64_t)size);
}

static ssize_t kafka_frame(void *ctx, struct l7_framer *f, const uint8_t *p, size_t avail, size_t *need)
{
	return f->tag == L7_DIR_REQ ? frame_req(ctx, p, avail, need, &f->used) : frame_resp(ctx, p, avail, need, &f->used);
}

static int kafka_end(void *ctx, struct l7_framer *f)
{
	struct kafka *k = ctx;
	struct pend *e;

	if (!k->have)
		return 0;
	k->have = false;
	if (f->tag == L7_DIR_REQ) {
		k->cur.ts = f->msg_ts;
		k->cur.end_ts = f->ts;
		k->cur.seq = ++k->nreq;
		if (k->noresp) {
			emit_rec(k, &k->cur, true, false, 0, false, 0, 0);
			return 0;
		}
		if (l7_pendq__count(&k->base.q) >= KAFKA_MAX_PENDING) {
			/* Never answered (lost in a gap): report rather than hold forever. */
			e = l7_pendq__at(&k->base.q, 0);
			emit_rec(k, e, true, false, 0, false, 0, 0);
			l7_pendq__remove(&k->base.q, 0);
		}
		if (!(e = l7_pendq__push(&k->base.q)))
			return k->base.fatal = -ENOBUFS;
		*e = k->cur;
		return 0;
	}
	emit_rec(k, &k->cur, k->have_req, true, f->ts, k->resp_err_known, k->resp_err, k->resp_bytes);
	return 0;
}

static bool kafka_sync(void *ctx, struct l7_framer *f, const uint8_t *p, size_t len)
{
	struct kafka *k = ctx;
	uint32_t size;
	int32_t corr;

	if (f->tag == L7_DIR_REQ)
		return plausible_request(p, len);
	if (len < 8)
		return false;
	size = l7_be32(p);
	corr = (int32_t)l7_be32(p + 4);
	if (size < 4 || size > KAFKA_MAX_MSG)
		return false;
	for (unsigned i = 0; i < l7_pendq__count(&k->base.q); i++)
		if (((struct pend *)l7_pendq__at(&k->base.q, i))->corr == corr)
			return true;
	return false;
}

static const struct l7_framer_ops kafka_fops = { .frame = kafka_frame, .end = kafka_end, .sync = kafka_sync };

/* Requests never answered (the close came first): reported without a response. */
static void kafka_unanswered(void *st, void *e)
{
	emit_rec(st, e, true, false, 0, false, 0, 0);
}

static const struct l7_framed_spec kafka_spec = {
	.fops = &kafka_fops,
	.state_size = sizeof(struct kafka),
	.entry_size = sizeof(struct pend),
	.resync = true,   /* sync() finds the next header; correlation ids keep pairing safe */
	.unanswered = kafka_unanswered,
	.heads = true,
};

static void *kafka_create(const struct l7_config *cfg, l7_emit_fn emit, void *emit_ctx)
{
	return l7_framed__new(&kafka_spec, cfg, emit, emit_ctx);
}

static int kafka_detect(const uint8_t *d, size_t len, enum l7_dir dir, uint16_t port)
{
	int score = 0;

	if (dir == L7_DIR_REQ) {
		if (plausible_request(d, len)) {
			uint32_t size = l7_be32(d);
			int16_t key = (int16_t)l7_be16(d + 4), cl = len >= 14 ? (int16_t)l7_be16(d + 12) : -1;
			bool ok_cid = true;

			/* Client ids are printable ("rdkafka", "producer-1", "consumer-zzzz12-1"). */
			for (int i = 0; i < cl && 14 + (size_t)i < len; i++)
				ok_cid &= d[14 + i] >= 0x20 && d[14 + i] < 0x7f;
			if (!ok_cid || size > 100u * 1024 * 1024)
				return 0;
			score = cl >= 3 ? 80 : 50;
			/* Small requests are usually whole in the first segment. */
			if (size < 1000 && len != 4 + size && len < 4 + size)
				score -= 20;
			if (key == 18 || key == 3)
				score += 5;   /* ApiVersions / Metadata open most connections */
		}
	} else if (len >= 8) {
		/*
		 * Responses carry only [size][correlation id]: weak on their own.
		 * Whole messages that chain exactly to the end of what we see, with
		 * non-negative ids, score just under L7_CONF_MIN, so a response-only
		 * stream (capture started mid-connection) is claimed only together
		 * with the broker port.
		 */
		size_t off = 0;
		while (off + 8 <= len) {
			uint32_t size = l7_be32(d + off);
			if (size < 4 || size > 64u * 1024 * 1024 || (int32_t)l7_be32(d + off + 4) < 0)
				return 0;
			off += 4 + (size_t)size;
		}
		score = off == len ? 20 : 5;
	}
	if (score && port == 9092)
		score = score + 10 > 100 ? 100 : score + 10;
	return score > 100 ? 100 : score;
}

const struct l7_parser_ops l7_kafka_ops = {
	.name = "kafka",
	.detect = kafka_detect,
	.create = kafka_create,
	.feed = l7_framed__feed,
	.gap = l7_framed__gap,
	.head = l7_framed__head,
	.finish = l7_framed__finish,
	.free = l7_framed__free,
	.dropped = l7_framed__discarded,   /* chunks discarded while resynchronising */
};
