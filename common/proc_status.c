#include "common/proc_status.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "common/cleanup.h"

/* The line starting with key, as [*ret, *ret_end); 0 or -ENOENT. */
static int find_line(const char *text, size_t len, const char *key, const char **ret, const char **ret_end)
{
	const char *p = text, *end = text + len;
	size_t kl = strlen(key);

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ? nl : end;

		if ((size_t)(le - p) >= kl && !memcmp(p, key, kl)) {
			*ret = p + kl;
			*ret_end = le;
			return 0;
		}
		if (!nl)
			break;
		p = nl + 1;
	}
	return -ENOENT;
}

int proc_status__ids(const char *text, size_t len, const char *key, uint32_t *out, unsigned max)
{
	const char *p, *le;
	unsigned n = 0;

	if (!text || !key || !*key || !out || !max || find_line(text, len, key, &p, &le))
		return -ENOENT;
	while (p < le) {
		uint64_t v = 0;
		int digits = 0;

		while (p < le && (*p == ' ' || *p == '\t'))
			p++;
		if (p == le)
			break;
		while (p < le && *p >= '0' && *p <= '9') {
			v = v * 10 + (uint64_t)(*p++ - '0');
			if (v > UINT32_MAX)
				return -ENOENT;
			digits++;
		}
		if (!digits || (p < le && *p != ' ' && *p != '\t'))
			return -ENOENT;
		if (n < max)
			out[n] = (uint32_t)v;
		n++;
	}
	return n ? (int)(n < max ? n : max) : -ENOENT;
}

/* Field n (1-based: 3 is state, 9 flags, 22 starttime) of stat text, a decimal number. */
static int stat_field(const char *text, size_t len, int n, uint64_t *ret)
{
	const char *p = NULL, *end = text + len;
	uint64_t v = 0;
	int digits = 0;

	/* comm may hold ')' and spaces: the fields start after the last ')'. */
	for (const char *q = text; q < end; q++)
		if (*q == ')')
			p = q + 1;
	if (!p)
		return -EBADMSG;
	/* ") state ppid ...": field n is the (n - 2)th after ')'. */
	for (int field = 0; field < n - 2; field++) {
		if (p >= end || *p != ' ')
			return -EBADMSG;
		p++;
		if (field == n - 3)
			break;
		while (p < end && *p != ' ')
			p++;
	}
	while (p < end && *p >= '0' && *p <= '9') {
		v = v * 10 + (uint64_t)(*p++ - '0');
		if (++digits > 19)
			return -EBADMSG;
	}
	if (!digits || (p < end && *p != ' ' && *p != '\n'))
		return -EBADMSG;
	*ret = v;
	return 0;
}

int proc_status__stat_flags(const char *text, size_t len, uint64_t *ret)
{
	return stat_field(text, len, 9, ret);
}

int proc_status__stat_start(const char *text, size_t len, uint64_t *ret)
{
	return stat_field(text, len, 22, ret);
}

int proc_status__mask(const char *text, size_t len, const char *key, uint64_t *ret)
{
	const char *p, *le;
	uint64_t v = 0;
	int digits = 0;

	if (!text || find_line(text, len, key, &p, &le))
		return -ENOENT;
	while (p < le && (*p == '\t' || *p == ' '))
		p++;
	for (; p < le; p++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
		if (d < 0 || ++digits > 16)
			return -ENOENT;
		v = v << 4 | (uint64_t)d;
	}
	if (!digits)
		return -ENOENT;
	*ret = v;
	return 0;
}

int proc_status__cgroup2(const char *text, size_t len, char *buf, size_t buflen)
{
	const char *p, *le;
	size_t n;

	if (!text || !buf || !buflen || find_line(text, len, "0::", &p, &le))
		return -ENOENT;
	n = (size_t)(le - p);
	if (n >= buflen)
		return -ENAMETOOLONG;
	memcpy(buf, p, n);
	buf[n] = '\0';
	return 0;
}

long proc_status__read_at(int dirfd, const char *name, char *buf, size_t len)
{
	_cleanup_close_ int fd = -1;
	size_t have = 0;

	if (!buf || len < 2)
		return -EINVAL;
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t r = read(fd, buf + have, len - 1 - have);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		have += (size_t)r;
		if (have == len - 1) {
			char c;
			if (read(fd, &c, 1) > 0)
				return -EFBIG;
			break;
		}
	}
	buf[have] = '\0';
	return (long)have;
}
