/* Unit tests for common/fileutil: atomic replace. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/fileutil.h"

static char dir[] = "/tmp/ember-fileutil-XXXXXX";

static int setup(void **state)
{
	(void)state;
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static int put_text(FILE *out, void *ctx)
{
	fputs(ctx, out);
	return 0;
}

static int put_then_fail(FILE *out, void *ctx)
{
	fputs("partial", out);
	return -EPROTO;
}

static char *slurp(const char *name)
{
	char path[256], *buf = calloc(1, 4096);
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f) {
		free(buf);
		return NULL;
	}
	assert_true(fread(buf, 1, 4095, f) < 4095);
	fclose(f);
	return buf;
}

/* Entries in dir other than . and .. */
static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

static void test_write_and_replace(void **state)
{
	char *s;
	struct stat st;
	char path[256];

	(void)state;
	assert_int_equal(fileutil__write_atomic(dir, "oncpu.folded", put_text, "a;b 1\n"), 0);
	s = slurp("oncpu.folded");
	assert_string_equal(s, "a;b 1\n");
	free(s);
	assert_int_equal(fileutil__write_atomic(dir, "oncpu.folded", put_text, "c 2\n"), 0);
	s = slurp("oncpu.folded");
	assert_string_equal(s, "c 2\n");
	free(s);
	assert_int_equal(entries(), 1);		/* no temporary left behind */
	snprintf(path, sizeof(path), "%s/oncpu.folded", dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777 & ~0022, 0644 & ~0022);

	/* Through a directory fd. */
	{
		int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		assert_true(d >= 0);
		assert_int_equal(fileutil__write_atomic_at(d, "x.svg", put_text, "<svg/>"), 0);
		close(d);
		s = slurp("x.svg");
		assert_string_equal(s, "<svg/>");
		free(s);
	}
}

static void test_failure_keeps_old(void **state)
{
	char *s;

	(void)state;
	assert_int_equal(fileutil__write_atomic(dir, "keep", put_text, "old\n"), 0);
	assert_int_equal(fileutil__write_atomic(dir, "keep", put_then_fail, NULL), -EPROTO);
	s = slurp("keep");
	assert_string_equal(s, "old\n");
	free(s);
	assert_null(slurp(".keep.tmp"));
}

static void test_bad_arguments(void **state)
{
	char longname[300];

	(void)state;
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	assert_int_equal(fileutil__write_atomic(dir, "", put_text, ""), -EINVAL);
	assert_int_equal(fileutil__write_atomic(dir, "a/b", put_text, ""), -EINVAL);
	assert_int_equal(fileutil__write_atomic(dir, ".", put_text, ""), -EINVAL);
	assert_int_equal(fileutil__write_atomic(dir, "..", put_text, ""), -EINVAL);
	assert_int_equal(fileutil__write_atomic(dir, longname, put_text, ""), -EINVAL);
	assert_int_equal(fileutil__write_atomic(dir, NULL, put_text, ""), -EINVAL);
	assert_int_equal(fileutil__write_atomic(dir, "f", NULL, NULL), -EINVAL);
	assert_int_equal(fileutil__write_atomic(NULL, "f", put_text, ""), -EINVAL);
	assert_int_equal(fileutil__write_atomic("/nonexistent/ember", "f", put_text, ""), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_and_replace),
		cmocka_unit_test(test_failure_keeps_old),
		cmocka_unit_test(test_bad_arguments),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
