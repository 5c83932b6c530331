#include "collector/py_fwd.h"

#include <stdbool.h>
#include <string.h>

#include "bpf/ember_abi.h"
#include "bpf/py_abi.h"
#include "common/shm_ring.h"

/* Whether (tgid, addr) went out this window; marks it as gone.  A crowded table sends again. */
static bool sent(struct py_fwd *f, uint32_t tgid, uint64_t addr)
{
	uint64_t h = ((addr ^ ((uint64_t)tgid << 48)) * 0x9e3779b97f4a7c15ull) | 1;

	for (unsigned i = 0, s = (unsigned)(h >> 52) % PY_FWD_SLOTS; i < 16; i++, s = (s + 1) % PY_FWD_SLOTS) {
		if (f->sent[s] == h)
			return true;
		if (!f->sent[s]) {
			f->sent[s] = h;
			return false;
		}
	}
	return false;
}

void py_fwd__send(struct py_fwd *f, struct bpf_stacks *b, struct collector *col, struct collector_shard *sh,
		  uint32_t tgid, const uint64_t *ips, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct ember_rec_pycode r = { .addr = ips[i] & PY_FRAME_ADDR, .tgid = tgid };
		struct py_code c;

		if (!PY_IS_FRAME(ips[i]) || sent(f, tgid, r.addr))
			continue;
		if (bpf_stacks__py_code(b, tgid, r.addr, &c)) {
			col->stats[CTL_STAT_PY_NAMES_LOST]++;
			continue;
		}
		r.firstlineno = c.firstlineno;
		memcpy(r.filename, c.filename, sizeof(r.filename));
		memcpy(r.qualname, c.qualname, sizeof(r.qualname));
		if (shm_ring__write(sh->ring, EMBER_REC_PYCODE, &r, sizeof(r)))
			col->stats[CTL_STAT_PY_NAMES_LOST]++;
	}
}

void py_fwd__window(struct py_fwd *f)
{
	memset(f->sent, 0, sizeof(f->sent));
}
