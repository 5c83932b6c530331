/* Unit tests for collector/target_policy: who may be a target, on real processes (as root). */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "collector/target_policy.h"

#define NOBODY 65534u

/* A child sleeping as uid (root stays root). */
static pid_t child_as(uid_t uid)
{
	pid_t p = fork();

	if (p == 0) {
		if (uid && (setgid(uid) || setuid(uid)))
			_exit(1);
		pause();
		_exit(0);
	}
	assert_true(p > 0);
	usleep(20000);
	return p;
}

static void reap(pid_t p)
{
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}

static void test_never_targets(void **state)
{
	struct target_policy *p = target_policy__new(getpid(), getppid());
	struct target_policy_stats st;
	pid_t ember = child_as(4242), other;

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(p);
	target_policy__set_ember_uids(p, 4242, 4343);
	assert_int_equal(target_policy__check(p, (uint32_t)getpid()), -EPERM);	/* the collector itself */
	assert_int_equal(target_policy__check(p, (uint32_t)getppid()), -EPERM);	/* its supervisor */
	assert_int_equal(target_policy__check(p, (uint32_t)ember), -EPERM);	/* ember's user */
	assert_int_equal(target_policy__check(p, 2), -EPERM);			/* kthreadd */
	assert_int_equal(target_policy__check(p, 0), -ESRCH);
	other = child_as(NOBODY);
	assert_int_equal(target_policy__check(p, (uint32_t)other), 0);		/* anyone else */
	reap(other);
	assert_int_equal(target_policy__check(p, (uint32_t)other), -ESRCH);	/* gone */
	target_policy__stats(p, &st);
	assert_int_equal(st.refused_own, 3);
	assert_int_equal(st.refused_kthread, 1);
	assert_int_equal(st.refused_user + st.refused_cgroup, 0);
	reap(ember);
	target_policy__free(p);
}

static void test_allowed_users_and_cgroups(void **state)
{
	struct target_policy *p = target_policy__new(1, 1);
	struct target_policy_stats st;
	pid_t nob = child_as(NOBODY), root = child_as(0);
	char desc[256];

	(void)state;
	if (geteuid() != 0)
		skip();
	assert_non_null(p);
	target_policy__set_ember_uids(p, 4242, 4343);
	assert_int_equal(target_policy__allow_uid(p, NOBODY), 0);
	assert_int_equal(target_policy__check(p, (uint32_t)nob), 0);
	assert_int_equal(target_policy__check(p, (uint32_t)root), -EPERM);
	/* Every process is in "/" or below it; nobody is in a cgroup that does not exist. */
	assert_int_equal(target_policy__allow_cgroup(p, "/no-such-cgroup/"), 0);
	assert_int_equal(target_policy__check(p, (uint32_t)nob), -EPERM);
	assert_int_equal(target_policy__allow_cgroup(p, "/"), 0);
	assert_int_equal(target_policy__check(p, (uint32_t)nob), 0);
	assert_int_equal(target_policy__allow_cgroup(p, "relative"), -EINVAL);
	assert_int_equal(target_policy__allow_cgroup(p, ""), -EINVAL);
	target_policy__stats(p, &st);
	assert_int_equal(st.refused_user, 1);
	assert_int_equal(st.refused_cgroup, 1);
	target_policy__describe(p, desc, sizeof(desc));
	assert_non_null(strstr(desc, "uids 65534"));
	assert_non_null(strstr(desc, "/no-such-cgroup"));
	reap(nob);
	reap(root);
	target_policy__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_never_targets),
		cmocka_unit_test(test_allowed_users_and_cgroups),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
