/* common/cgroup_id: container and pod ids from the cgroup paths of docker
 * (systemd and cgroupfs drivers), containerd and CRI-O under Kubernetes,
 * podman, and paths that only look like them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "common/cgroup_id.h"

#define H "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static void check(const char *text, const char *want_con, const char *want_pod)
{
	char con[CGROUP_CONTAINER_ID_LEN + 1], pod[CGROUP_POD_ID_MAX];

	assert_int_equal(cgroup_id__parse(text, strlen(text), con, pod), want_con[0] != 0);
	assert_string_equal(con, want_con);
	assert_string_equal(pod, want_pod);
}

static void test_formats(void **state)
{
	(void)state;
	check("0::/system.slice/docker-" H ".scope\n", H, "");
	check("12:pids:/docker/" H "\n0::/docker/" H "\n", H, "");
	check("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_0000_4111_8222_333344445555.slice/"
	      "cri-containerd-" H ".scope\n", H, "1b2c3d4e-0000-4111-8222-333344445555");
	check("0::/kubepods/besteffort/pod1b2c3d4e-0000-4111-8222-333344445555/" H "\n", H,
	      "1b2c3d4e-0000-4111-8222-333344445555");
	check("0::/machine.slice/libpod-" H ".scope/container\n", H, "");
	check("0::/kubepods.slice/kubepods-pod1b2c3d4e_0000_4111_8222_333344445555.slice/crio-" H ".scope", H,
	      "1b2c3d4e-0000-4111-8222-333344445555");
	/* not containers */
	check("0::/user.slice/user-0.slice/session-3.scope\n", "", "");
	check("0::/system.slice/docker-" H "0.scope\n", "", "");	/* 65 digits */
	check("0::/system.slice/docker-0123.scope\n", "", "");
	check("0::/podman-pause.scope\n", "", "");
	check("", "", "");
	check("garbage without colons", "", "");
	/* a "pod" that is no uid leaves nothing half-written (found by fuzz_cgroup_id) */
	check("0::/kubepods.slice/kubepods-burstable-pod1b-cri-containerd-0123\n", "", "");
	check("0::/kubepods/pod1b2c3d4e-0000-4111-8222-333344445555/kubepods-podzz/x\n", "",
	      "1b2c3d4e-0000-4111-8222-333344445555");
}

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(test_formats) };
	return cmocka_run_group_tests(tests, NULL, NULL);
}
