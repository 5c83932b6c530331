/* exporter/process_finder on a fake /proc: rule matching, templates, duplicates, pid reuse. */
#include <errno.h>
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

#include "common/process_finder.h"

static char root[64];

static void put_file(const char *rel, const char *data, size_t len)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	fclose(f);
}

/* argv given NUL-separated, as the kernel shows it */
static void fake_proc(unsigned pid, unsigned long long start, const char *argv, size_t argv_len, const char *exe,
		      const char *cgroup)
{
	char rel[64], stat[256], path[256];

	snprintf(rel, sizeof(rel), "%u", pid);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	mkdir(path, 0755);
	/* comm with ") " inside, as a hostile process may name itself */
	snprintf(stat, sizeof(stat), "%u (we) ird) S 1 %u %u 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 %llu 1000 10\n", pid,
		 pid, pid, start);
	snprintf(rel, sizeof(rel), "%u/stat", pid);
	put_file(rel, stat, strlen(stat));
	snprintf(rel, sizeof(rel), "%u/cmdline", pid);
	put_file(rel, argv, argv_len);
	if (cgroup) {
		snprintf(rel, sizeof(rel), "%u/cgroup", pid);
		put_file(rel, cgroup, strlen(cgroup));
	}
	if (exe) {
		snprintf(path, sizeof(path), "%s/%u/exe", root, pid);
		unlink(path);
		assert_int_equal(symlink(exe, path), 0);
	}
}

static void rm_proc(unsigned pid)
{
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf %s/%u", root, pid);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/pf-test.XXXXXX");
	assert_non_null(mkdtemp(root));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd);
}

#define ARGV(s) s, sizeof(s)

static const char rules[] =
	"- match_cmd: \"/opt/(svc[a-z]+)/bin/server\"\n"
	"  service_name: \"shop-{{.Finder.RegexMatchGroup 1}}\"\n"
	"  instance_name: \"inst-{{ .Rover.InstanceID }}\"\n"
	"  labels: \"web, blue\"\n"
	"- match_cmd: \"python3 (.*)\\\\.py\"\n"
	"  layer: GENERAL\n"
	"  service_name: \"py-{{.Finder.RegexMatchGroup 1}}\"\n"
	"  instance_name: fixed\n"
	"  process_name: \"{{.Process.ExeNameInCommandLine}}-{{.Process.Pid}}-{{.Finder.Layer}}\"\n";

static void test_scan_rules(void **state)
{
	char err[256] = "";
	struct pf_opts o = { .proc_root = root, .mode = PF_MODE_REGEX, .rules_yaml = rules, .instance_id = "agent-1" };
	struct process_finder *pf;
	struct pf_process *p;
	struct pf_stats st;

	(void)state;
	fake_proc(100, 5000, ARGV("/opt/svcorder/bin/server\0--port\0" "8080"), "/usr/bin/true",
		  "0::/system.slice/docker-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef.scope\n");
	/* same entity as 100: Rover reports only the first */
	fake_proc(101, 5001, ARGV("/opt/svcorder/bin/server\0--port\0" "8081"), "/usr/bin/true", NULL);
	fake_proc(200, 6000, ARGV("python3\0/srv/app.py"), "/usr/bin/python3", NULL);
	fake_proc(300, 7000, ARGV("/usr/sbin/sshd\0-D"), "/usr/sbin/sshd", NULL);
	/* kernel thread: empty cmdline */
	fake_proc(2, 1, "", 0, NULL, NULL);
	/* exe unreadable (no link): falls back to the first word of the command line */
	fake_proc(400, 8000, ARGV("/opt/svcpay/bin/server"), NULL, NULL);

	pf = process_finder__new(&o, err, sizeof(err));
	assert_non_null(pf);
	assert_int_equal(process_finder__scan(pf), 3);
	process_finder__stats(pf, &st);
	assert_int_equal(st.duplicates, 1);
	assert_int_equal(st.matched, 3);

	p = process_finder__by_pid(pf, 100);
	assert_non_null(p);
	assert_string_equal(p->e.layer, "OS_LINUX");	/* Rover's default */
	assert_string_equal(p->e.service, "shop-svcorder");
	assert_string_equal(p->e.instance, "inst-agent-1");
	assert_string_equal(p->e.process, "true");	/* {{.Process.ExeName}} by default */
	assert_int_equal(p->e.n_labels, 2);
	assert_string_equal(p->e.labels[0], "web");
	assert_string_equal(p->e.labels[1], "blue");
	assert_string_equal(p->cmdline, "/opt/svcorder/bin/server --port 8080");
	assert_int_equal(p->start_ticks, 5000);
	assert_string_equal(p->container_id, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
	assert_true(p->support_ebpf);	/* /usr/bin/true: native, has .dynsym */
	assert_null(process_finder__by_pid(pf, 101));

	p = process_finder__by_pid(pf, 200);
	assert_non_null(p);
	assert_string_equal(p->e.layer, "GENERAL");
	assert_string_equal(p->e.service, "py-/srv/app");
	assert_string_equal(p->e.instance, "fixed");
	assert_string_equal(p->e.process, "python3-200-GENERAL");
	assert_true(p->support_ebpf);	/* an interpreter: ember profiles it (Rover refuses python* by name) */

	p = process_finder__by_pid(pf, 400);
	assert_non_null(p);
	assert_string_equal(p->exe, "/opt/svcpay/bin/server");
	assert_string_equal(p->e.process, "server");
	assert_true(p->exe_guessed);
	assert_true(p->support_ebpf);	/* a guessed path: the collector opens the real file as root */

	/* state kept across scans; a gone process is forgotten; a reused pid is new */
	p = process_finder__by_pid(pf, 100);
	p->status = PF_REPORTED;
	snprintf(p->oap_id, sizeof(p->oap_id), "oap-100");
	assert_ptr_equal(process_finder__by_oap_id(pf, "oap-100"), p);
	rm_proc(400);
	fake_proc(200, 6500, ARGV("python3\0/srv/app.py"), "/usr/bin/python3", NULL);
	assert_int_equal(process_finder__scan(pf), 2);
	p = process_finder__by_pid(pf, 100);
	assert_int_equal(p->status, PF_REPORTED);
	assert_string_equal(p->oap_id, "oap-100");
	assert_null(process_finder__by_pid(pf, 400));
	p = process_finder__by_pid(pf, 200);
	assert_int_equal(p->start_ticks, 6500);
	assert_int_equal(p->status, PF_NEW);
	process_finder__free(pf);
}

static void put_status(unsigned pid, unsigned uid)
{
	char rel[64], st[128];

	snprintf(rel, sizeof(rel), "%u/status", pid);
	snprintf(st, sizeof(st), "Name:\tx\nUmask:\t0022\nUid:\t%u\t%u\t%u\t%u\nGid:\t0\t0\t0\t0\n", uid, uid, uid, uid);
	put_file(rel, st, strlen(st));
}

/*
 * support_ebpf_profiling says what ember can profile, not Rover's list of
 * runtime names: interpreters, JIT runtimes, ssh and binaries the exporter
 * cannot open are supported; a file that is not ELF and ember's own users'
 * processes are not.
 */
static void test_support_ebpf_profiling(void **state)
{
	static const char rule[] = "- match_cmd: \"app-([0-9]+)\"\n  service_name: \"s-{{.Finder.RegexMatchGroup 1}}\"\n";
	struct pf_opts o = { .proc_root = root, .mode = PF_MODE_REGEX, .rules_yaml = rule, .never_uids = { 994, 995 } };
	char err[256] = "", text[300];
	struct process_finder *pf;

	(void)state;
	snprintf(text, sizeof(text), "%s/not-elf", root);
	put_file("not-elf", "#!/bin/sh\necho hi\n", 18);
	fake_proc(500, 1, ARGV("python3\0app-500.py"), "/usr/bin/python3", NULL);
	fake_proc(501, 1, ARGV("bash\0app-501.sh"), "/usr/bin/bash", NULL);
	fake_proc(502, 1, ARGV("java\0-jar\0app-502.jar"), "/nonexistent/jdk/bin/java", NULL);
	fake_proc(503, 1, ARGV("/usr/sbin/sshd\0app-503"), "/usr/bin/true", NULL);
	fake_proc(504, 1, ARGV("weird\0app-504"), text, NULL);
	fake_proc(505, 1, ARGV("/usr/bin/true\0app-505"), "/usr/bin/true", NULL);
	put_status(505, 995);	/* an analyzer's */
	fake_proc(506, 1, ARGV("/usr/bin/true\0app-506"), "/usr/bin/true", NULL);
	put_status(506, 0);
	fake_proc(507, 1, ARGV("node\0app-507.js"), NULL, NULL);	/* exe unreadable, no path to guess */
	pf = process_finder__new(&o, err, sizeof(err));
	assert_non_null(pf);
	assert_int_equal(process_finder__scan(pf), 8);
	assert_true(process_finder__by_pid(pf, 500)->support_ebpf);
	assert_true(process_finder__by_pid(pf, 501)->support_ebpf);
	assert_true(process_finder__by_pid(pf, 502)->support_ebpf);
	assert_true(process_finder__by_pid(pf, 503)->support_ebpf);
	assert_false(process_finder__by_pid(pf, 504)->support_ebpf);
	assert_false(process_finder__by_pid(pf, 505)->support_ebpf);
	assert_true(process_finder__by_pid(pf, 506)->support_ebpf);
	assert_true(process_finder__by_pid(pf, 507)->support_ebpf);
	assert_true(process_finder__exe_profilable("/usr/bin/python3"));
	assert_true(process_finder__exe_profilable("/nonexistent"));
	assert_true(process_finder__exe_profilable(""));
	assert_false(process_finder__exe_profilable(text));
	/* the path names a FIFO by now: not opened to block, not a verdict */
	snprintf(text, sizeof(text), "%s/fifo", root);
	assert_int_equal(mkfifo(text, 0600), 0);
	assert_true(process_finder__exe_profilable(text));
	process_finder__free(pf);
	for (unsigned pid = 500; pid <= 507; pid++)
		rm_proc(pid);
}

static void test_templates_and_errors(void **state)
{
	char err[256], out[128];
	struct pf_opts o = { .proc_root = root, .mode = PF_MODE_REGEX, .hostname = "host-a" };
	struct pf_process p = { .pid = 42, .exe = "/usr/local/bin/app", .cmdline = "./app -x" };
	const char *groups[] = { "all", "g1" };
	struct process_finder *pf;
	static const char *const bad[] = {
		"- match_cmd: x\n  service_name: \"{{.Nope}}\"\n",
		"- match_cmd: x\n  service_name: \"{{.Process.Pid\"\n",
		"- match_cmd: x\n  service_name: \"{{.Finder.RegexMatchGroup abc}}\"\n",
		"- match_cmd: x\n  service_name: s\n  colour: red\n",
		"- match_cmd: \"(\"\n  service_name: s\n",
		"- service_name: s\n",
		"- match_cmd: x\n",
		"{a: 1}\n",
		"- [1, 2]\n",
	};

	(void)state;
	pf = process_finder__new(&o, err, sizeof(err));
	assert_non_null(pf);
	assert_int_equal(process_finder__render(pf, "{{.Process.ExeName}}@{{.Rover.HostName}}:{{.Process.Pid}}", &p,
						groups, 2, out, sizeof(out)), 0);
	assert_string_equal(out, "app@host-a:42");
	assert_int_equal(process_finder__render(pf, "[{{.Finder.RegexMatchGroup 1}}|{{.Finder.RegexMatchGroup 5}}]",
						&p, groups, 2, out, sizeof(out)), 0);
	assert_string_equal(out, "[g1|]");
	assert_int_equal(process_finder__render(pf, "{{.Process.ExeNameInCommandLine}} ", &p, NULL, 0, out, sizeof(out)),
			 0);
	assert_string_equal(out, "app");
	assert_int_equal(process_finder__render(pf, "{{.Rover.HostIPV4 \"lo\"}}", &p, NULL, 0, out, sizeof(out)), 0);
	assert_string_equal(out, "127.0.0.1");
	/* output bounded */
	assert_int_equal(process_finder__render(pf, "{{.Process.ExeFilePath}}{{.Process.ExeFilePath}}", &p, NULL, 0, out,
						8), 0);
	assert_int_equal(strlen(out), 7);
	assert_int_equal(process_finder__render(pf, "{{.Rover.Secret}}", &p, NULL, 0, out, sizeof(out)), -EINVAL);
	process_finder__free(pf);

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.rules_yaml = bad[i];
		err[0] = 0;
		pf = process_finder__new(&o, err, sizeof(err));
		if (pf)
			fail_msg("rules accepted: %s", bad[i]);
		assert_true(strstr(err, "process_discovery.scanner.regex") != NULL);
	}
}

static void test_long_names_truncated(void **state)
{
	char err[256] = "", rules_long[512];
	struct pf_opts o = { .proc_root = root, .mode = PF_MODE_REGEX, .rules_yaml = rules_long };
	struct process_finder *pf;
	struct pf_process *p;
	struct pf_stats st;

	(void)state;
	snprintf(rules_long, sizeof(rules_long),
		 "- match_cmd: longname\n  service_name: \"%0100d\"\n  instance_name: \"é%0100d\"\n", 7, 8);
	fake_proc(500, 1, ARGV("/bin/longname"), "/usr/bin/true", NULL);
	pf = process_finder__new(&o, err, sizeof(err));
	assert_non_null(pf);
	assert_true(process_finder__scan(pf) >= 1);
	p = process_finder__by_pid(pf, 500);
	assert_non_null(p);
	assert_int_equal(strlen(p->e.service), 70);
	assert_true(strlen(p->e.instance) <= 70);
	process_finder__stats(pf, &st);
	assert_true(st.truncated >= 2);
	process_finder__free(pf);
}

static void test_agent_sensor(void **state)
{
	char err[256] = "", dir[512];
	char tmp[96];
	struct pf_opts o = { .proc_root = root, .tmp_root = tmp, .mode = PF_MODE_AGENT_SENSOR };
	struct process_finder *pf;
	struct pf_process *p;
	FILE *f;

	(void)state;
	snprintf(tmp, sizeof(tmp), "%s/tmp", root);
	snprintf(dir, sizeof(dir), "mkdir -p %s/apache_skywalking/process/600 %s/apache_skywalking/process/601", tmp, tmp);
	assert_int_equal(system(dir), 0);
	fake_proc(600, 1, ARGV("java\0-jar\0app.jar"), "/usr/bin/java", NULL);
	fake_proc(601, 1, ARGV("java\0-jar\0bad.jar"), "/usr/bin/java", NULL);
	snprintf(dir, sizeof(dir), "%s/apache_skywalking/process/600/metadata.properties", tmp);
	f = fopen(dir, "w");
	assert_non_null(f);
	fprintf(f, "layer=GENERAL\nservice_name=orders\ninstance_name=orders-1\nprocess_name=java\nlabels=a,b\n");
	fclose(f);
	snprintf(dir, sizeof(dir), "%s/apache_skywalking/process/601/metadata.properties", tmp);
	f = fopen(dir, "w");
	assert_non_null(f);
	fprintf(f, "service_name=only-this\n");
	fclose(f);
	pf = process_finder__new(&o, err, sizeof(err));
	assert_non_null(pf);
	process_finder__scan(pf);
	p = process_finder__by_pid(pf, 600);
	assert_non_null(p);
	assert_string_equal(p->e.service, "orders");
	assert_string_equal(p->e.instance, "orders-1");
	assert_int_equal(p->e.n_labels, 2);
	assert_null(process_finder__by_pid(pf, 601));
	process_finder__free(pf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scan_rules),
		cmocka_unit_test(test_support_ebpf_profiling),
		cmocka_unit_test(test_templates_and_errors),
		cmocka_unit_test(test_long_names_truncated),
		cmocka_unit_test(test_agent_sensor),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
