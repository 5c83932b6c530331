#include "exporter/utf8.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

size_t utf8__char_len(const unsigned char *s, size_t n)
{
	unsigned char c;

	if (!n)
		return 0;
	c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		if (n < 3 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))
			return 0;	/* overlong; surrogate */
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if (n < 4 || (s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
			return 0;	/* overlong; above U+10FFFF */
		return 4;
	}
	return 0;
}

char *utf8__sanitize(const void *s, size_t n, size_t *ret_len, size_t *ret_replaced)
{
	static const char repl[] = "\xef\xbf\xbd";	/* U+FFFD */
	const unsigned char *p = s;
	size_t o = 0, replaced = 0;
	char *out;

	/* at worst every byte becomes 3 */
	if (n > (SIZE_MAX - 1) / 3) {
		errno = ENOMEM;
		return NULL;
	}
	out = malloc(n * 3 + 1);
	if (!out)
		return NULL;
	for (size_t i = 0; i < n;) {
		size_t k = p[i] ? utf8__char_len(p + i, n - i) : 0;

		if (k) {
			memcpy(out + o, p + i, k);
			o += k;
			i += k;
			continue;
		}
		memcpy(out + o, repl, 3);
		o += 3;
		i++;
		replaced++;
	}
	out[o] = 0;
	if (ret_len)
		*ret_len = o;
	if (ret_replaced)
		*ret_replaced = replaced;
	return out;
}
