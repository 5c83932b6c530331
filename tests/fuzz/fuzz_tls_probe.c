/*
 * analyzer/tls/tls_probe runs in the analyzer on any binary a profiled
 * process maps.  The first input byte picks what the rest is: even, a whole
 * ELF image for tls_probe__find_mem(); odd, bytes for the instruction
 * decoder alone (common/x86_insn: a sweep with x86_insn__len/_class/_op at
 * every step), so that mutations reach the decoder's tables without an ELF
 * around them.
 * The input is an exact-size heap copy (ASan sees any read past it).
 *
 * Invariants: points only on success, inside the image, with valid ids, an
 * OpenSSL ENTRY always followed by its RETURN at the same offset, a CALL
 * (SSL_read, SSL_write: a call rel32) by its AFTER_CALL (a jcc 7 bytes on), a Go
 * function's ENTRY first and RET_INSN points only on a ret; each point's
 * class what x86_insn__class() says there.  The decoder reads exactly
 * the bytes of an instruction: one fewer is -1, the class does not change
 * with the bytes after it, and a class exists only for a decodable one.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/tls/tls_probe.h"
#include "common/x86_insn.h"

static void check_points(const uint8_t *img, size_t size, int r, const struct tls_probe_set *s)
{
	if (r != 0 && r != -ENOEXEC && r != -ENOTSUP && r != -E2BIG && r != -ENOMEM)
		abort();
	if (s->n > TLS_MAX_POINTS || (r && s->n) || s->lib < TLS_LIB_NONE || s->lib > TLS_LIB_GO ||
	    (s->lib == TLS_LIB_NONE && s->n) || (r == -ENOTSUP && s->lib != TLS_LIB_GO))
		abort();
	for (size_t i = 0; i < s->n; i++) {
		const struct tls_point *p = &s->pts[i];
		int cls;

		if (p->off >= size || p->kind > TLS_PROBE_AFTER_CALL || p->insn > X86_INSN_STEPPED)
			abort();
		cls = x86_insn__class(img + p->off, size - p->off);
		if (cls != p->insn)
			abort();
		if (s->lib == TLS_LIB_OPENSSL) {
			const struct tls_point *q = i + 1 < s->n ? &s->pts[i + 1] : NULL;

			if (p->fn < TLS_FN_SSL_WRITE || p->fn > TLS_FN_SSL_READ_EX || !q || q->fn != p->fn)
				abort();
			if (p->kind == TLS_PROBE_ENTRY) {
				if (q->kind != TLS_PROBE_RETURN || q->off != p->off)
					abort();
			} else if (p->kind == TLS_PROBE_CALL) {
				/* the wrapper shape: a call, test %eax,%eax, a jcc */
				if ((p->fn != TLS_FN_SSL_READ && p->fn != TLS_FN_SSL_WRITE) || q->kind != TLS_PROBE_AFTER_CALL ||
				    q->off != p->off + 7 || x86_insn__op(img + p->off, size - p->off) != X86_OP_CALL_REL32 ||
				    x86_insn__op(img + q->off, size - q->off) != X86_OP_JCC)
					abort();
			} else {
				abort();
			}
			i++;
			continue;
		}
		if (p->fn != TLS_FN_GO_WRITE && p->fn != TLS_FN_GO_READ)
			abort();
		if (p->kind == TLS_PROBE_RETURN || (p->kind == TLS_PROBE_ENTRY) != (i == 0 || s->pts[i - 1].fn != p->fn))
			abort();
		if (p->kind == TLS_PROBE_RET_INSN) {
			size_t k = p->off;

			/* prefixes, then c3 or c2 */
			while (k < size && k - p->off < 15 && (img[k] == 0x66 || img[k] == 0xf2 || img[k] == 0xf3 ||
							       img[k] == 0x64 || img[k] == 0x65 || img[k] == 0x67 ||
							       (img[k] & 0xf0) == 0x40))
				k++;
			if (k >= size || (img[k] != 0xc3 && img[k] != 0xc2))
				abort();
		}
	}
}

static void check_decoder(const uint8_t *p, size_t n)
{
	for (size_t pos = 0; pos < n;) {
		int len = x86_insn__len(p + pos, n - pos), cls = x86_insn__class(p + pos, n - pos);
		int op = x86_insn__op(p + pos, n - pos);

		if (len == 0 || len < -1 || len > 15 || (len > 0 && (size_t)len > n - pos))
			abort();
		if (cls < -1 || cls > X86_INSN_STEPPED || (len < 0 && cls >= 0))
			abort();
		if (op < -1 || op > X86_OP_JCC || (len < 0) != (op < 0))
			abort();
		if (len > 0) {
			if (x86_insn__len(p + pos, (size_t)len) != len ||
			    x86_insn__len(p + pos, (size_t)len - 1) != -1 ||
			    x86_insn__class(p + pos, (size_t)len) != cls)
				abort();
		}
		pos += len > 0 ? (size_t)len : 1;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tls_probe_set set;
	uint8_t *img;

	if (size < 1)
		return 0;
	img = malloc(size - 1 ? size - 1 : 1);
	if (!img)
		return 0;
	memcpy(img, data + 1, size - 1);
	if (data[0] & 1) {
		check_decoder(img, size - 1);
	} else {
		int r = tls_probe__find_mem(img, size - 1, &set);

		check_points(img, size - 1, r, &set);
	}
	free(img);
	return 0;
}
