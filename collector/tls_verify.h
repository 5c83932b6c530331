/*
 * The collector's own check of the TLS probe points an analyzer asks it to
 * attach (CTL_REQ_TLS_ATTACH).  A point is a file offset and a cookie,
 * NET_TLS_COOKIE(fn, probe) (bpf/net_abi.h); the TLS program reads the
 * registers and memory of the probed process at that point as the cookie
 * says (buffer, length, result).  A point anywhere else would let whoever
 * chose it corrupt the process (a breakpoint inside an instruction, or in
 * data) or read its memory at register values it did not mean as a TLS
 * buffer.  So a point passes only if, in the file open at fd (the one the
 * broker opened from the target's mapping, never a path), all of these
 * hold, in this order (the first that fails is the reason):
 *
 *   1. the cookie names a known function and a side that function has
 *      (ENTRY for all; RETURN, CALL, AFTER_CALL for OpenSSL's; RET_INSN for
 *      Go's);
 *   2. the file is an x86-64 ELF file whose ELF header, program headers and
 *      section headers lie inside it;
 *   3. the offset lies inside the file bytes of an executable (PF_X)
 *      PT_LOAD segment;
 *   4. the function the cookie names is found here by its name, as the
 *      analyzer finds it (analyzer/tls/tls_probe), never by the analyzer's
 *      word: SSL_write, SSL_read, SSL_write_ex, SSL_read_ex from .symtab and
 *      .dynsym (defined STT_FUNC, size > 0; global over weak over local,
 *      first wins); crypto/tls.(*Conn).Write and .Read, in a Go binary, from
 *      .symtab, or from .gopclntab (Go 1.18+ layouts, magic fffffff0 and
 *      fffffff1; the first function of that name; it ends where the next
 *      one begins) when .symtab names neither; the whole function inside one
 *      executable segment's file bytes, and at most TLS_CODE_MAX_FN bytes;
 *   5. the offset lies inside that function;
 *   6. a linear decode of the function from its first byte
 *      (common/x86_insn) has an instruction start at the offset;
 *   7. the point is one of those common/tls_code gives that function's
 *      code: its kind on the instruction that kind goes on (ENTRY and
 *      RETURN: the entry instruction, past an endbr64, or for Go on the jbe
 *      of its stack check; CALL and AFTER_CALL: the call rel32 and the jcc
 *      of OpenSSL 3's wrapper shape; RET_INSN: a ret of a Go function that
 *      decodes whole), the same rule the analyzer places points by.
 *
 * Threat model: both the requester and the file are hostile (a compromised
 * analyzer; any binary a followed process maps).  This runs in the
 * privileged collector, so it is small and bounded: the file is read with
 * pread only, through fixed windows of TLS_VERIFY_WINDOW bytes; every field
 * read (offsets, sizes, counts, indices, string offsets) is checked against
 * the file or the section it points into before use, with overflow-safe
 * comparisons; no recursion; every loop is bounded by a count checked here
 * (program headers at most TLS_VERIFY_MAX_PHDRS, section headers at most
 * 65535, symbols and Go functions at most their section's size over their
 * entry's, places a string table holds the names looked for at most 256),
 * and the whole check by TLS_VERIFY_MAX_READS preads (beyond either bound
 * the file counts as not parseable).  Symbol tables and their strings are
 * read sequentially (where the names are, then which symbols have those
 * offsets), not name by name.  One allocation of a fixed size (about 120
 * KiB), nothing sized by the file.  A file that changes while it is
 * read is read as it is then: a short read is a failed one.
 *
 * Not checked here: that a Go binary passes arguments in registers (Go
 * 1.17+; the analyzer reads the version from .go.buildinfo and offers no
 * points for older ones), so an old Go binary's points are placed as the
 * rule says but their registers mean something else, in the named function
 * only.  Files with PN_XNUM program headers or SHN_XINDEX section counts are
 * not parseable (no real executable or library has them).
 *
 * Library code: no logging, no global state; thread-safe.
 */
#ifndef EMBER_COLLECTOR_TLS_VERIFY_H
#define EMBER_COLLECTOR_TLS_VERIFY_H

#include <stdint.h>

#include "common/ctl_proto.h"

#define TLS_VERIFY_WINDOW 8192u
#define TLS_VERIFY_MAX_PHDRS 1024u
/*
 * node (99 MB, 10 MB of symbol tables, 13 MB of their strings) takes 2127
 * reads, libssl.so.3 18, a Go binary 50-90: eight times node's, about 128
 * MiB read at most, a few tens of ms.
 */
#define TLS_VERIFY_MAX_READS 16384u

/* Why a point is refused: the numbered checks above, in order. */
enum tls_verify_why {
	TLS_VERIFY_OK = 0,
	TLS_VERIFY_COOKIE,     /* 1: unknown function, kind, or a side the function does not have */
	TLS_VERIFY_FILE,       /* 2: not an x86-64 ELF file this reads (or over the read budget) */
	TLS_VERIFY_SEGMENT,    /* 3: not inside an executable segment's file bytes */
	TLS_VERIFY_FUNCTION,   /* 4: the cookie's function not found, not in one executable segment, or too large */
	TLS_VERIFY_OUTSIDE,    /* 5: outside that function */
	TLS_VERIFY_BOUNDARY,   /* 6: not the start of an instruction */
	TLS_VERIFY_INSN,       /* 7: not the instruction its kind goes on */
	TLS_VERIFY_WHY_MAX,
};

struct tls_verify_verdict {
	uint32_t why;      /* enum tls_verify_why of the first point refused; TLS_VERIFY_OK if none */
	uint32_t index;    /* that point's index in pts */
};

/*
 * Checks pts[0..n) against the file open at fd (not taken; its file offset
 * is not used).  Returns 0 when every point passes, -EINVAL when one does
 * not (*ret tells which and why), -ENOMEM.  *ret is always filled.
 */
int tls_verify__points(int fd, const struct ctl_tls_point *pts, uint32_t n, struct tls_verify_verdict *ret);

/* "bad_cookie", "unparseable_file", ... for logs and counter names; "ok", or "unknown" out of range. */
const char *tls_verify__why_name(unsigned why);

#endif
