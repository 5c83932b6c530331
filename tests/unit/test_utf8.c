/* exporter/utf8: bytes from the network made into valid UTF-8, every bad byte one U+FFFD. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "exporter/utf8.h"

static void check(const char *in, size_t n, const char *want, size_t want_replaced)
{
	size_t len, replaced;
	char *s = utf8__sanitize(in, n, &len, &replaced);

	assert_non_null(s);
	assert_string_equal(s, want);
	assert_int_equal(len, strlen(want));
	assert_int_equal(replaced, want_replaced);
	free(s);
}

#define R "\xef\xbf\xbd"

static void test_sanitize(void **state)
{
	static const char ok[] = "GET /a?q=\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";

	(void)state;
	check("", 0, "", 0);
	check(ok, sizeof(ok) - 1, ok, 0);
	check("a\xffz", 3, "a" R "z", 1);			/* not a lead byte */
	check("\xc0\xaf", 2, R R, 2);				/* overlong '/' */
	check("\xe0\x80\xaf", 3, R R R, 3);			/* overlong, 3 bytes */
	check("\xed\xa0\x80", 3, R R R, 3);			/* a surrogate */
	check("\xf4\x90\x80\x80", 4, R R R R, 4);		/* above U+10FFFF */
	check("ab\xe2\x82", 4, "ab" R R, 2);			/* cut short at the end */
	check("a\0b", 3, "a" R "b", 1);				/* NUL: not text */
	assert_int_equal(utf8__char_len((const unsigned char *)"\xe2\x82\xac", 3), 3);
	assert_int_equal(utf8__char_len((const unsigned char *)"\xe2\x82\xac", 2), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sanitize),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
