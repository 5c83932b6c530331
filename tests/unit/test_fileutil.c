/* Unit tests for common/fileutil: atomic replace, root's and others' directories, removal; and common/proc_status. */
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
#include "common/proc_status.h"

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

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static char *read_path(const char *path)
{
	char *buf = calloc(1, 256);
	FILE *f = fopen(path, "r");

	assert_non_null(f);
	assert_true(fread(buf, 1, 255, f) < 255);
	fclose(f);
	return buf;
}

/* A link planted at the temporary name (symlink or hard link) is replaced, never written through. */
static void test_planted_temporary(void **state)
{
	char victim[256], tmpname[256], path[256], *s;
	int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	(void)state;
	assert_true(d >= 0);
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	put_file(victim, "root's\n");
	snprintf(tmpname, sizeof(tmpname), "%s/.a.tmp", dir);
	assert_int_equal(symlink(victim, tmpname), 0);
	assert_int_equal(fileutil__write_atomic_mode_at(d, "a", 0640, 0, 65534, put_text, "new\n"), 0);
	snprintf(tmpname, sizeof(tmpname), "%s/.b.tmp", dir);
	assert_int_equal(link(victim, tmpname), 0);
	assert_int_equal(fileutil__write_atomic_at(d, "b", put_text, "new\n"), 0);
	s = read_path(victim);
	assert_string_equal(s, "root's\n");
	free(s);
	snprintf(path, sizeof(path), "%s/a", dir);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0640);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_gid, 65534);
	/* A symlink at the name itself is replaced by the file. */
	snprintf(path, sizeof(path), "%s/c", dir);
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(fileutil__write_atomic_at(d, "c", put_text, "c\n"), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	s = read_path(victim);
	assert_string_equal(s, "root's\n");
	free(s);
	close(d);
}

static void test_root_dir(void **state)
{
	char p[512], why[256], link_[512];
	struct stat st;
	int fd;

	(void)state;
	if (geteuid() != 0)
		skip();
	snprintf(p, sizeof(p), "%s/run/ember", dir);
	fd = fileutil__open_root_dir(p, 0755, 1, why, sizeof(why));
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	close(fd);
	/* An older group-writable directory of root's is made private again. */
	assert_int_equal(chown(p, 0, 65534), 0);
	assert_int_equal(chmod(p, 0775), 0);
	fd = fileutil__open_root_dir(p, 0755, 0, why, sizeof(why));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	assert_int_equal(st.st_gid, 0);
	/* Another user's directory on the way, or as the last: refused. */
	snprintf(p, sizeof(p), "%s/run", dir);
	assert_int_equal(chown(p, 65534, 65534), 0);
	snprintf(p, sizeof(p), "%s/run/ember", dir);
	assert_int_equal(fileutil__open_root_dir(p, 0755, 1, why, sizeof(why)), -EPERM);
	assert_non_null(strstr(why, "another user's"));
	snprintf(p, sizeof(p), "%s/run", dir);
	assert_int_equal(fileutil__open_root_dir(p, 0755, 1, why, sizeof(why)), -EPERM);
	assert_int_equal(chown(p, 0, 0), 0);
	/* A symlink: followed when root's, refused when another user's. */
	snprintf(link_, sizeof(link_), "%s/lnk", dir);
	assert_int_equal(symlink(p, link_), 0);
	snprintf(p, sizeof(p), "%s/lnk/ember", dir);
	fd = fileutil__open_root_dir(p, 0755, 0, why, sizeof(why));
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(lchown(link_, 65534, 65534), 0);
	assert_int_equal(fileutil__open_root_dir(p, 0755, 0, why, sizeof(why)), -ELOOP);
	assert_int_equal(fileutil__open_owned_dir(p, 0750, 65534, 65534, why, sizeof(why)), -ELOOP);
	assert_non_null(strstr(why, "symlink another user owns"));
}

static void test_owned_dir_at(void **state)
{
	char victim[256], p[256];
	struct stat st;
	int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;

	(void)state;
	if (geteuid() != 0)
		skip();
	snprintf(victim, sizeof(victim), "%s/victimdir", dir);
	assert_int_equal(mkdir(victim, 0755), 0);
	snprintf(p, sizeof(p), "%s/planted", dir);
	assert_int_equal(symlink(victim, p), 0);
	assert_int_equal(fileutil__open_owned_dir_at(d, "planted", 0770, 65534, 65534), -ELOOP);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_uid, 0);
	assert_int_equal(st.st_mode & 07777, 0755);
	fd = fileutil__open_owned_dir_at(d, "fresh", 0770, 65534, 65534);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_uid, 65534);
	assert_int_equal(st.st_mode & 07777, 0770);
	close(fd);
	close(d);
}

/* Removal never follows a link out of the tree. */
static void test_remove_tree(void **state)
{
	char p[256], outside[256];
	struct stat st;
	int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	(void)state;
	snprintf(outside, sizeof(outside), "%s/outside", dir);
	assert_int_equal(mkdir(outside, 0755), 0);
	snprintf(p, sizeof(p), "%s/outside/keep", dir);
	put_file(p, "x");
	snprintf(p, sizeof(p), "%s/tree", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/tree/sub", dir);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/tree/sub/f", dir);
	put_file(p, "y");
	snprintf(p, sizeof(p), "%s/tree/link", dir);
	assert_int_equal(symlink(outside, p), 0);
	assert_int_equal(fileutil__remove_tree_at(d, "tree"), 0);
	snprintf(p, sizeof(p), "%s/tree", dir);
	assert_int_equal(lstat(p, &st), -1);
	snprintf(p, sizeof(p), "%s/outside/keep", dir);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(fileutil__remove_tree_at(d, "absent"), 0);
	assert_int_equal(fileutil__remove_tree_at(d, "../x"), -EINVAL);
	close(d);
}

static void test_proc_status(void **state)
{
	static const char status[] = "Name:\tx\nUid:\t1000\t0\t1000\t1000\nGid:\t5 6\nNSpid:\t42\t7\n";
	static const char stat_[] = "123 (a) b) c) S 1 123 123 0 -1 4194560 10 0";
	static const char kstat[] = "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0";
	uint32_t ids[4];
	uint64_t flags;
	char cg[64];

	(void)state;
	assert_int_equal(proc_status__ids(status, sizeof(status) - 1, "Uid:", ids, 4), 4);
	assert_int_equal(ids[0], 1000);
	assert_int_equal(ids[1], 0);
	assert_int_equal(proc_status__ids(status, sizeof(status) - 1, "Gid:", ids, 4), 2);
	assert_int_equal(proc_status__ids(status, sizeof(status) - 1, "NSpid:", ids, 1), 1);
	assert_int_equal(ids[0], 42);
	assert_int_equal(proc_status__ids(status, sizeof(status) - 1, "Groups:", ids, 4), -ENOENT);
	assert_int_equal(proc_status__ids("Uid:\t1x\n", 8, "Uid:", ids, 4), -ENOENT);
	assert_int_equal(proc_status__ids("Uid:\t99999999999\n", 17, "Uid:", ids, 4), -ENOENT);
	/* The comm holds ") c)": the fields start after the last ')'. */
	assert_int_equal(proc_status__stat_flags(stat_, sizeof(stat_) - 1, &flags), 0);
	assert_int_equal(flags, 4194560);
	assert_false(flags & PROC_PF_KTHREAD);
	assert_int_equal(proc_status__stat_flags(kstat, sizeof(kstat) - 1, &flags), 0);
	assert_true(flags & PROC_PF_KTHREAD);
	assert_int_equal(proc_status__stat_flags("1 (x) S 1", 9, &flags), -EBADMSG);
	assert_int_equal(proc_status__stat_flags("no paren", 8, &flags), -EBADMSG);
	assert_int_equal(proc_status__cgroup2("0::/system.slice/a.service\n", 27, cg, sizeof(cg)), 0);
	assert_string_equal(cg, "/system.slice/a.service");
	assert_int_equal(proc_status__cgroup2("1:cpu:/x\n", 9, cg, sizeof(cg)), -ENOENT);
	assert_int_equal(proc_status__cgroup2("0::/x\n", 6, cg, 2), -ENAMETOOLONG);
}

/* The start time (field 22) and the signal masks, as the Java attacher reads them. */
static void test_proc_start_and_masks(void **state)
{
	static const char st[] = "4242 (java) x) S 1 4242 4242 0 -1 1077936384 2400 0 0 0 17 3 0 0 20 0 19 0 "
				 "987654 3000000000 5000\n";
	static const char status[] = "Name:\tjava\nSigBlk:\t0000000000000000\nSigIgn:\t0000000000000002\n"
				     "SigCgt:\t2000000181005ccf\nCapInh:\t0000000000000000\n";
	uint64_t v = 0;

	(void)state;
	assert_int_equal(proc_status__stat_start(st, sizeof(st) - 1, &v), 0);
	assert_int_equal(v, 987654);
	/* Cut short of field 22, or a field that is no number. */
	assert_int_equal(proc_status__stat_start(st, 60, &v), -EBADMSG);
	assert_int_equal(proc_status__stat_start("1 (a) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 x 1", 56, &v), -EBADMSG);
	assert_int_equal(proc_status__mask(status, sizeof(status) - 1, "SigCgt:", &v), 0);
	assert_true(v == 0x2000000181005ccfull);
	assert_true(v & (1ull << 2));   /* SIGQUIT caught */
	assert_int_equal(proc_status__mask(status, sizeof(status) - 1, "SigIgn:", &v), 0);
	assert_true(v == 2);
	assert_int_equal(proc_status__mask(status, sizeof(status) - 1, "SigPnd:", &v), -ENOENT);
	assert_int_equal(proc_status__mask("SigCgt:\t12g4\n", 13, "SigCgt:", &v), -ENOENT);
	assert_int_equal(proc_status__mask("SigCgt:\t00000000000000001\n", 26, "SigCgt:", &v), -ENOENT);
	assert_int_equal(proc_status__mask("SigCgt:\t\n", 9, "SigCgt:", &v), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_write_and_replace),
		cmocka_unit_test(test_failure_keeps_old),
		cmocka_unit_test(test_bad_arguments),
		cmocka_unit_test(test_planted_temporary),
		cmocka_unit_test(test_root_dir),
		cmocka_unit_test(test_owned_dir_at),
		cmocka_unit_test(test_remove_tree),
		cmocka_unit_test(test_proc_status),
		cmocka_unit_test(test_proc_start_and_masks),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
