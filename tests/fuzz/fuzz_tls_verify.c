/*
 * collector/tls_verify runs in the privileged collector on a file any
 * followed process maps and on points a compromised analyzer may have
 * chosen.  The input is a few point specs and an ELF image:
 *
 *   byte 0        number of specs, mod 8
 *   4 bytes each  sel, delta, fn, kind: the offset is that of the analyzer's
 *                 point sel (when it found any and sel's top bit is set)
 *                 moved by delta (signed), else (sel << 8 | delta) modulo
 *                 the image's size + 16; the cookie NET_TLS_COOKIE(fn % 8,
 *                 kind % 6), so unknown ids and sides come too
 *   the rest      the ELF image, written to a memfd (the verifier reads an
 *                 fd with pread, as the collector's broker hands it one)
 *
 * Checked: the analyzer's own points (tls_probe__find_mem on the same
 * bytes), each spec's point alone, and all of them in one request.
 * Invariants: a verdict in range naming a point of the request, 0 exactly
 * when no point is refused; every point accepted lies in the image, has a
 * cookie the TLS program serves, and sits on a whole instruction the kernel
 * probes, of the class its kind requires (RET_INSN a ret, CALL an emulated
 * call rel32, AFTER_CALL an emulated jcc).  The analyzer's points are not
 * required to pass: on a malformed file the two parsers may see different
 * functions (libelf's section handling against the verifier's), which
 * refuses a request and nothing more.
 *
 * Seeds (tests/fuzz/corpus/tls_verify/): small ELF files with OpenSSL's
 * names (ENTRY/RETURN and OpenSSL 3's wrapper shape) and Go's (a .symtab, or
 * a .gopclntab alone), each behind a few specs.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analyzer/tls/tls_probe.h"
#include "bpf/net_abi.h"
#include "collector/tls_verify.h"
#include "common/x86_insn.h"

#define MAX_SPECS 8

static int memfd = -1;

static void check(const uint8_t *img, size_t size, const struct ctl_tls_point *pts, uint32_t n)
{
	struct tls_verify_verdict v;
	int r;

	if (!n)
		return;
	r = tls_verify__points(memfd, pts, n, &v);
	if ((r != 0 && r != -EINVAL && r != -ENOMEM) || (r == 0) != (v.why == TLS_VERIFY_OK) ||
	    v.why >= TLS_VERIFY_WHY_MAX || (r == -EINVAL && v.index >= n))
		abort();
	/* Accepted: every point before the refused one (or all). */
	for (uint32_t i = 0; i < (r ? v.index : n); i++) {
		uint64_t off = pts[i].off, fn = pts[i].cookie & 0xff, kind = (pts[i].cookie >> 8) & 0xff;
		int cls, op;
		bool go;

		if (r == -ENOMEM)
			break;
		if (off >= size || pts[i].cookie >> 16 || !fn || fn > NET_TLS_FN_MAX || kind > NET_TLS_P_AFTER_CALL)
			abort();
		cls = x86_insn__class(img + off, size - off);
		op = x86_insn__op(img + off, size - off);
		if (cls < 0 || op < 0)
			abort();
		go = fn == NET_TLS_GO_WRITE || fn == NET_TLS_GO_READ;
		if (kind == NET_TLS_P_RET_INSN && (op != X86_OP_RET || !go))
			abort();
		if (kind == NET_TLS_P_CALL && (op != X86_OP_CALL_REL32 || cls != X86_INSN_EMULATED || go))
			abort();
		if (kind == NET_TLS_P_AFTER_CALL && (op != X86_OP_JCC || cls != X86_INSN_EMULATED || go))
			abort();
		if (kind == NET_TLS_P_RETURN && go)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctl_tls_point specs[MAX_SPECS], found[TLS_MAX_POINTS];
	struct tls_probe_set set;
	size_t nspecs, hdr, len;
	const uint8_t *img;

	if (size < 1)
		return 0;
	nspecs = data[0] % MAX_SPECS;
	hdr = 1 + 4 * nspecs;
	if (size < hdr)
		return 0;
	img = data + hdr;
	len = size - hdr;
	if (memfd < 0 && (memfd = memfd_create("fuzz_tls_verify", MFD_CLOEXEC)) < 0)
		abort();
	if (ftruncate(memfd, 0) || (len && pwrite(memfd, img, len, 0) != (ssize_t)len))
		abort();

	if (tls_probe__find_mem(img, len, &set))
		set.n = 0;
	for (size_t i = 0; i < set.n; i++)
		found[i] = (struct ctl_tls_point){ set.pts[i].off, NET_TLS_COOKIE(set.pts[i].fn, set.pts[i].kind) };
	check(img, len, found, (uint32_t)set.n);

	for (size_t i = 0; i < nspecs; i++) {
		const uint8_t *s = data + 1 + 4 * i;
		uint64_t off;

		if (set.n && (s[0] & 0x80))
			off = found[s[0] % set.n].off + (uint64_t)(int64_t)(int8_t)s[1];
		else
			off = ((uint64_t)s[0] << 8 | s[1]) % (len + 16);
		specs[i] = (struct ctl_tls_point){ off, NET_TLS_COOKIE(s[2] % 8, s[3] % 6) };
		check(img, len, &specs[i], 1);
	}
	check(img, len, specs, (uint32_t)nspecs);
	return 0;
}
