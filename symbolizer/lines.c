#include "symbolizer/lines.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void line_reader__init(struct line_reader *lr, int fd)
{
	lr->fd = fd;
	lr->start = lr->end = 0;
	lr->eof = 0;
	lr->skipping = 0;
	lr->overlong = 0;
	lr->bytes = 0;
}

struct line_reader *line_reader__new(int fd)
{
	struct line_reader *lr;

	if (fd < 0) {
		errno = EBADF;
		return NULL;
	}
	lr = malloc(sizeof(*lr));
	if (!lr)
		return NULL;
	line_reader__init(lr, fd);
	return lr;
}

static int fill(struct line_reader *lr)
{
	ssize_t n;

	if (lr->start > 0) {
		memmove(lr->buf, lr->buf + lr->start, lr->end - lr->start);
		lr->end -= lr->start;
		lr->start = 0;
	}
	do
		n = read(lr->fd, lr->buf + lr->end, sizeof(lr->buf) - lr->end);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		lr->eof = 1;
	lr->end += (size_t)n;
	lr->bytes += (uint64_t)n;
	return 0;
}

int line_reader__next(struct line_reader *lr, const char **ret_line, size_t *ret_len)
{
	for (;;) {
		char *s = lr->buf + lr->start;
		size_t avail = lr->end - lr->start;
		char *nl = avail ? memchr(s, '\n', avail) : NULL;
		int err;

		if (nl) {
			size_t len = (size_t)(nl - s);

			lr->start += len + 1;
			if (lr->skipping) {
				lr->skipping = 0;
				continue;
			}
			*ret_line = s;
			*ret_len = len;
			return 1;
		}
		if (lr->eof) {
			lr->start = lr->end;
			if (avail == 0 || lr->skipping) {
				lr->skipping = 0;
				return 0;
			}
			*ret_line = s;
			*ret_len = avail;
			return 1;
		}
		if (avail >= LINES_MAX_LEN) {
			/* No newline in a full buffer: this line is too long to use. */
			if (!lr->skipping)
				lr->overlong++;
			lr->skipping = 1;
			lr->start = lr->end;
		}
		err = fill(lr);
		if (err)
			return err;
	}
}

int lines__parse_hex(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;

	for (; s < end; s++) {
		char c = *s;
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			d = (unsigned)(c - 'A' + 10);
		else
			break;
		if (v >> 60)
			return -EINVAL;
		v = v << 4 | d;
	}
	if (s == *p)
		return -EINVAL;
	*ret = v;
	*p = s;
	return 0;
}
