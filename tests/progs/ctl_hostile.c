/*
 * A compromised analyzer: speaks the collector's control protocol with the
 * analyzer's credentials and tries what the privilege split must refuse
 * (tests/integration/test_hostile_peer.sh sets the scene).  Every step prints
 * one line, "refused NAME: error" or "GOT NAME", and the exit status is the
 * number of steps that got what they should not (0: all refused).  Steps
 * that must work (the legitimate debug file) print "served NAME" and count
 * as failures when refused.
 *
 *   ctl_hostile SOCK attack KEY=VALUE...   (run as the analyzer's uid)
 *     target=PID         a process of another user, with planted files
 *     fifo=PID dev=PID other=PID rootonly=PID  processes whose perf map is a FIFO, a
 *                        device, another user's file, a root-only file
 *     bin=PATH           target's executable (debuglink tests beside it)
 *     buildid=HEX        a build id whose debug file is a planted symlink
 *     fifobuildid=HEX    ... a FIFO
 *     self=PID exporter=PID   the collector's pid, a process of the exporter's uid
 *     tls=PID tlslib=PATH tlsoff=N tlsdata=N   a network target mapping a TLS
 *                        library: an offset inside an instruction, one in data
 *   ctl_hostile SOCK hello           (run as another uid: must be refused)
 *   ctl_hostile SOCK stats           (root: every counter, "name value")
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/ember_abi.h"
#include "bpf/net_abi.h"
#include "common/ctl_client.h"
#include "common/ctl_proto.h"

static int bad;

/* An fd (or 0) where a refusal was due is a failure; a refusal is reported. */
static void expect_refused(const char *name, int r)
{
	if (r >= 0) {
		printf("GOT %s (%d)\n", name, r);
		bad++;
		if (r > 2)
			close(r);
		return;
	}
	printf("refused %s: %s\n", name, strerror(-r));
}

static void expect_served(const char *name, int r)
{
	if (r < 0) {
		printf("NOT SERVED %s: %s\n", name, strerror(-r));
		bad++;
		return;
	}
	printf("served %s\n", name);
	close(r);
}

static const char *arg(int argc, char **argv, const char *key)
{
	size_t n = strlen(key);

	for (int i = 3; i < argc; i++)
		if (!strncmp(argv[i], key, n) && argv[i][n] == '=')
			return argv[i] + n + 1;
	return NULL;
}

static uint32_t pid_arg(int argc, char **argv, const char *key)
{
	const char *v = arg(argc, argv, key);

	return v ? (uint32_t)strtoul(v, NULL, 10) : 0;
}

/* The executable mapping of path in pid, from the maps the broker gives. */
static int exec_range(struct ctl_client *cc, uint32_t pid, const char *path, uint64_t *start, uint64_t *end)
{
	int fd = ctl_client__open_maps(cc, pid);
	char line[4200];
	FILE *f;
	int r = -ENOENT;

	if (fd < 0)
		return fd;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -errno;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi;
		char perms[8];
		size_t n = strlen(line);

		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		if (sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) == 3 && perms[2] == 'x' && n > strlen(path) &&
		    !strcmp(line + n - strlen(path), path)) {
			*start = lo;
			*end = hi;
			r = 0;
			break;
		}
	}
	fclose(f);
	return r;
}

static int hex_id(const char *hex, uint8_t *id)
{
	size_t n = hex ? strlen(hex) / 2 : 0;

	for (size_t i = 0; i < n && i < CTL_MAX_BUILD_ID; i++)
		sscanf(hex + 2 * i, "%2hhx", &id[i]);
	return (int)(n < CTL_MAX_BUILD_ID ? n : CTL_MAX_BUILD_ID);
}

static int attach(struct ctl_client *cc, uint64_t id, uint32_t kind, uint32_t pid, uint32_t flags)
{
	struct ctl_attach_ans ans;
	int r = ctl_client__attach(cc, id, kind, &pid, 1, 10000000, 0, flags, 0, &ans);

	return r ? r : ans.err;
}

static int attack(const char *sock, int argc, char **argv)
{
	uint32_t target = pid_arg(argc, argv, "target"), self = pid_arg(argc, argv, "self");
	uint32_t exporter = pid_arg(argc, argv, "exporter"), tls = pid_arg(argc, argv, "tls");
	const char *bin = arg(argc, argv, "bin"), *tlslib = arg(argc, argv, "tlslib");
	static const char *const perf_cases[] = { "fifo", "dev", "other", "rootonly" };
	uint8_t id[CTL_MAX_BUILD_ID];
	uint64_t start, end;
	uint32_t nshards;
	int fds[3], r, n;
	struct ctl_client *cc = ctl_client__connect(sock, 0, fds, &nshards);

	if (!cc) {
		printf("cannot connect as the analyzer: %s\n", strerror(errno));
		return 100;
	}
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	/* Before any task: nothing of anybody's, and no kernel addresses. */
	expect_refused("maps-without-task", ctl_client__open_maps(cc, target));
	expect_refused("kallsyms-without-stack-task", ctl_client__open_kallsyms(cc));
	/* Targets the policy must refuse. */
	expect_refused("attach-collector", attach(cc, 1, EMBER_TASK_OFFCPU, self, CTL_ATTACH_F_HOLD));
	if (exporter)
		expect_refused("attach-exporter-process", attach(cc, 2, EMBER_TASK_NETWORK, exporter, 0));
	expect_refused("attach-kthreadd", attach(cc, 3, EMBER_TASK_OFFCPU, 2, CTL_ATTACH_F_HOLD));
	/* A legitimate (held) task on the target opens its files to us: only the safe ones. */
	r = attach(cc, 10, EMBER_TASK_OFFCPU, target, CTL_ATTACH_F_HOLD);
	if (r) {
		printf("cannot attach to the target %u: %s\n", target, strerror(-r));
		return 100;
	}
	expect_refused("perf-map-symlink-to-shadow", ctl_client__open_perf_map(cc, target));
	for (unsigned i = 0; i < 4; i++) {
		uint32_t p = pid_arg(argc, argv, perf_cases[i]);
		char name[48];

		if (!p)
			continue;
		if ((r = attach(cc, 20 + i, EMBER_TASK_OFFCPU, p, CTL_ATTACH_F_HOLD))) {
			printf("cannot attach to %u: %s\n", p, strerror(-r));
			return 100;
		}
		snprintf(name, sizeof(name), "perf-map-%s", perf_cases[i]);
		expect_refused(name, ctl_client__open_perf_map(cc, p));
	}
	if (bin && !exec_range(cc, target, bin, &start, &end)) {
		expect_refused("debuglink-symlink-to-shadow", ctl_client__open_debuglink(cc, target, start, end, "evil.debug"));
		expect_refused("debuglink-through-symlinked-.debug", ctl_client__open_debuglink(cc, target, start, end, "shadow"));
		expect_refused("debuglink-fifo", ctl_client__open_debuglink(cc, target, start, end, "fifo.debug"));
		expect_served("debuglink-legitimate", ctl_client__open_debuglink(cc, target, start, end, "good.debug"));
		expect_served("mapped-file", ctl_client__open_file(cc, target, start, end));
	} else {
		printf("no executable mapping of %s in %u\n", bin ? bin : "(none)", target);
		bad++;
	}
	{
		/* Python frames: only for a process of one's own stack tasks, with offsets in bounds and a user address. */
		struct ctl_py_proc py = { .pid = 1, .proc = { .runtime = 0x10000, .version = 0x030b02f0,
							      .l = { .entry_kind = PY_ENTRY_IS_ENTRY } } };

		expect_refused("python-proc-not-target", ctl_client__py_proc(cc, &py));
		py.pid = target;
		py.proc.l.fr_code = PY_MAX_OFF;
		expect_refused("python-offset-out-of-bounds", ctl_client__py_proc(cc, &py));
		py.proc.l.fr_code = 0x20;
		py.proc.runtime = 0xffff888000000000ull;
		expect_refused("python-kernel-address", ctl_client__py_proc(cc, &py));
		py.proc.runtime = 0x10000;
		py.proc.l.entry_kind = 7;
		expect_refused("python-unknown-entry-kind", ctl_client__py_proc(cc, &py));
		py.proc.l.entry_kind = PY_ENTRY_IS_ENTRY;
		r = ctl_client__py_proc(cc, &py);
		if (r) {
			printf("NOT SERVED python-proc-own-target: %s\n", strerror(-r));
			bad++;
		} else {
			printf("served python-proc-own-target\n");
		}
	}
	{
		/* The Java agent: only into a process of one's own stack tasks, and only if the collector has one. */
		expect_refused("java-attach-not-target", ctl_client__java_attach(cc, 1));
		r = ctl_client__java_attach(cc, target);
		if (r != -EOPNOTSUPP) {
			printf("NOT REFUSED AS EXPECTED java-attach-without-agent: %d\n", r);
			bad++;
		} else {
			printf("refused java-attach-without-agent (the collector has no agent)\n");
		}
	}
	n = hex_id(arg(argc, argv, "buildid"), id);
	if (n)
		expect_refused("build-id-symlink-to-shadow", ctl_client__open_debug_build_id(cc, target, id, (size_t)n));
	n = hex_id(arg(argc, argv, "fifobuildid"), id);
	if (n)
		expect_refused("build-id-fifo", ctl_client__open_debug_build_id(cc, target, id, (size_t)n));
	if (tls && tlslib) {
		struct ctl_tls_attach t = { .task_id = 30, .pid = tls, .npoints = 1 };
		const char *keys[] = { "tlsoff", "tlsdata" };

		if ((r = attach(cc, 30, EMBER_TASK_NETWORK, tls, 0))) {
			printf("cannot attach a network task to %u: %s\n", tls, strerror(-r));
			return 100;
		}
		if ((r = exec_range(cc, tls, tlslib, &t.start, &t.end))) {
			printf("no executable mapping of %s in %u\n", tlslib, tls);
			return 100;
		}
		for (unsigned i = 0; i < 2; i++) {
			const char *v = arg(argc, argv, keys[i]);

			if (!v)
				continue;
			t.pts[0].off = strtoull(v, NULL, 0);
			t.pts[0].cookie = NET_TLS_COOKIE(NET_TLS_SSL_READ, NET_TLS_P_ENTRY);
			expect_refused(i ? "tls-offset-in-data" : "tls-offset-mid-instruction", ctl_client__tls_attach(cc, &t));
		}
	}
	ctl_client__free(cc);
	return bad;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: ctl_hostile SOCK attack|hello|stats [KEY=VALUE...]\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(argv[2], "hello")) {
		int fds[3];
		uint32_t n;
		struct ctl_client *cc = ctl_client__connect(argv[1], 0, fds, &n);

		if (cc) {
			printf("GOT hello\n");
			ctl_client__free(cc);
			return 1;
		}
		printf("refused hello: %s\n", strerror(errno));
		return 0;
	}
	if (!strcmp(argv[2], "stats")) {
		struct ctl_stats_ans a;
		int r = ctl_client__query_stats(argv[1], &a);

		if (r) {
			fprintf(stderr, "stats: %s\n", strerror(-r));
			return 2;
		}
		for (unsigned i = 0; i < a.n && i < CTL_STAT_MAX; i++)
			printf("%s %llu\n", ctl__stat_name(i), (unsigned long long)a.v[i]);
		return 0;
	}
	return attack(argv[1], argc, argv);
}
