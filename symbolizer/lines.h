/*
 * Line reader over a file descriptor (procfs files report size 0, so they are
 * read in chunks until EOF).  Used for /proc/<pid>/maps, /proc/kallsyms and
 * perf maps.
 *
 * Lines longer than LINES_MAX_LEN bytes are skipped whole and counted in
 * lr->overlong; they never reach the caller truncated.  The reader does not
 * own the fd.  Not thread-safe.
 */
#ifndef EMBER_SYMBOLIZER_LINES_H
#define EMBER_SYMBOLIZER_LINES_H

#include <stddef.h>
#include <stdint.h>

#define LINES_BUF_SIZE (64 * 1024)
#define LINES_MAX_LEN  (LINES_BUF_SIZE - 1)

struct line_reader {
	int fd;
	size_t start, end;      /* unread bytes are buf[start, end) */
	int eof;
	int skipping;           /* inside an overlong line: drop until '\n' */
	uint64_t overlong;      /* lines dropped for length */
	uint64_t bytes;         /* bytes read so far */
	char buf[LINES_BUF_SIZE];
};

void line_reader__init(struct line_reader *lr, int fd);
/* A reader on the heap (64 KiB: too large for a stack), free() it; NULL + errno (EBADF, ENOMEM). */
struct line_reader *line_reader__new(int fd);

/*
 * Returns 1 and the next line in *ret_line / *ret_len (no '\n'; not
 * NUL-terminated; valid until the next call), 0 at EOF, or -errno on a read
 * error.  A last line without '\n' is returned too.
 */
int line_reader__next(struct line_reader *lr, const char **ret_line, size_t *ret_len);

/*
 * A hexadecimal number at *p (before end): at least one digit, either case,
 * no overflow of 64 bits.  Returns 0 with *p just past the digits (what
 * follows is the caller's to check), or -EINVAL with *p unchanged.
 */
int lines__parse_hex(const char **p, const char *end, uint64_t *ret);

#endif
