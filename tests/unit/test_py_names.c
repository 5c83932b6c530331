/*
 * The analyzer's table of Python code object names (analyzer/python/
 * py_names): records from the ring are untrusted (a length that does not add
 * up is refused; bytes outside printable ASCII, ';' and spaces become '_';
 * an unterminated array is cut at its end); a name is "file.py:qualname"
 * with the file's basename; an address is per process; a process forgotten
 * takes only its own names; a full table is emptied and counted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "analyzer/python/py_names.h"

static struct ember_rec_pycode rec(uint32_t tgid, uint64_t addr, const char *file, const char *qual)
{
	struct ember_rec_pycode r = { .addr = addr, .tgid = tgid, .firstlineno = 1 };

	strncpy(r.filename, file, sizeof(r.filename));
	strncpy(r.qualname, qual, sizeof(r.qualname));
	return r;
}

static void test_names(void **state)
{
	struct py_names *pn = py_names__new(0);
	struct ember_rec_pycode r = rec(7, 0x1000, "/srv/app/chain.py", "Outer.leaf");
	char buf[256];

	(void)state;
	assert_non_null(pn);
	assert_int_equal(py_names__put(pn, &r, sizeof(r)), 0);
	assert_int_equal(py_names__frame(pn, 7, 0x1000, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "chain.py:Outer.leaf");
	/* Another process's code object at the same address is another frame. */
	assert_int_equal(py_names__frame(pn, 8, 0x1000, buf, sizeof(buf)), -ENOENT);
	r = rec(8, 0x1000, "other.py", "f");
	assert_int_equal(py_names__put(pn, &r, sizeof(r)), 0);
	assert_int_equal(py_names__frame(pn, 8, 0x1000, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "other.py:f");
	/* A code object freed and another at its address: the later record wins. */
	r = rec(7, 0x1000, "chain.py", "middle");
	assert_int_equal(py_names__put(pn, &r, sizeof(r)), 0);
	assert_int_equal(py_names__frame(pn, 7, 0x1000, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "chain.py:middle");
	/* Forgetting 7 keeps 8's. */
	py_names__forget(pn, 7);
	assert_int_equal(py_names__frame(pn, 7, 0x1000, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(py_names__frame(pn, 8, 0x1000, buf, sizeof(buf)), 0);
	py_names__free(pn);
}

static void test_hostile_bytes(void **state)
{
	struct py_names *pn = py_names__new(0);
	struct ember_rec_pycode r = rec(1, 0x10, "a;b c\n.py", "q\x01x;y");
	char buf[256];

	(void)state;
	assert_int_equal(py_names__put(pn, &r, sizeof(r)), 0);
	assert_int_equal(py_names__frame(pn, 1, 0x10, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "a_b_c_.py:q_x_y");
	/* Arrays without a NUL: cut at their end. */
	memset(r.filename, 'f', sizeof(r.filename));
	memset(r.qualname, 'q', sizeof(r.qualname));
	r.addr = 0x20;
	assert_int_equal(py_names__put(pn, &r, sizeof(r)), 0);
	assert_int_equal(py_names__frame(pn, 1, 0x20, buf, sizeof(buf)), 0);
	assert_int_equal(strlen(buf), sizeof(r.filename) + 1 + sizeof(r.qualname));
	/* Empty names and a path ending in '/'. */
	r = rec(1, 0x30, "/x/", "");
	assert_int_equal(py_names__put(pn, &r, sizeof(r)), 0);
	assert_int_equal(py_names__frame(pn, 1, 0x30, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/x/:?");
	/* Lengths that do not add up. */
	assert_int_equal(py_names__put(pn, &r, sizeof(r) - 1), -EBADMSG);
	assert_int_equal(py_names__put(pn, &r, 0), -EBADMSG);
	/* A small buffer gets a cut, terminated name. */
	assert_int_equal(py_names__frame(pn, 1, 0x10, buf, 4), 0);
	assert_string_equal(buf, "a_b");
	py_names__free(pn);
}

static void test_bounded(void **state)
{
	struct py_names *pn = py_names__new(64);
	char buf[256];

	(void)state;
	for (uint64_t a = 1; a <= 64; a++) {
		struct ember_rec_pycode r = rec(3, a << 4, "m.py", "f");
		assert_int_equal(py_names__put(pn, &r, sizeof(r)), 0);
	}
	assert_int_equal(py_names__cleared(pn), 0);
	for (uint64_t a = 1; a <= 64; a++)
		assert_int_equal(py_names__frame(pn, 3, a << 4, buf, sizeof(buf)), 0);
	/* The 65th empties the table, then holds itself. */
	struct ember_rec_pycode r = rec(3, 65 << 4, "m.py", "g");
	assert_int_equal(py_names__put(pn, &r, sizeof(r)), 0);
	assert_int_equal(py_names__cleared(pn), 1);
	assert_int_equal(py_names__frame(pn, 3, 1 << 4, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(py_names__frame(pn, 3, 65 << 4, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "m.py:g");
	py_names__free(pn);
	assert_null(py_names__free(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_hostile_bytes),
		cmocka_unit_test(test_bounded),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
