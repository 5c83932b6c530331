/*
 * Continuous-profiling monitors: the analyzer CPU they cost per monitored
 * process, on this host's real /proc.  Forks N idle children (they match the
 * policy through the command line they inherit), runs the monitors over 60
 * simulated seconds of the default intervals (a fetch every second, a scan
 * and check every 5 s) and times each tick in thread CPU time.  Prints the
 * cost per second per 100 monitored processes as a share of one core, and
 * the scan's cost per host process (a scan reads the command line of each
 * process it does not monitor yet: that part grows with the host, not with
 * the policies).
 * usage: bench_monitors [N]   (default 100)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <ctype.h>

#include "analyzer/continuous/monitors.h"
#include "common/cp_policy.h"

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned host_processes(void)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	unsigned n = 0;

	while (d && (de = readdir(d)))
		n += isdigit((unsigned char)de->d_name[0]) != 0;
	if (d)
		closedir(d);
	return n;
}

static int start(void *ctx, const struct mon_trigger *t) { (void)ctx; (void)t; return 0; }

int main(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)atoi(argv[1]) : 100, hosts;
	pid_t *kids = calloc(n ? n : 1, sizeof(pid_t));
	char err[256];
	struct cp_policies *p = cp_policies__parse(
		"[{MatchCmd: bench_monitors, Profiling: {ON_CPU: {PROCESS_CPU: {Threshold: 99, Period: 30, Count: 30}},"
		" OFF_CPU: {PROCESS_THREAD_COUNT: {Threshold: 1000, Period: 30, Count: 10}}}}]",
		CP_SOURCE_LOCAL, err, sizeof(err));
	struct monitors_opts o = { .nshards = 1, .fetch_interval_ms = 1000, .check_interval_ms = 5000,
				   .silence_ms = 1200000, .max_processes = n + 16, .start = start };
	struct monitors *m = monitors__new(&o);
	uint64_t fetch_ns = 0, scan_ns = 0, st[MS_MAX];
	unsigned fetches = 0, scans = 0;

	if (!kids || !p || !m || monitors__set_policies(m, p)) {
		fprintf(stderr, "bench_monitors: set-up failed: %s\n", err);
		return 1;
	}
	for (unsigned i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			pause();
			_exit(0);
		}
	}
	usleep(200000);
	hosts = host_processes();
	/* 60 simulated seconds; the first tick (the initial scan) is left out, as start-up. */
	monitors__tick(m, 1000);
	for (uint64_t s = 1; s <= 60; s++) {
		uint64_t now = 1000 + s * 1000, due = monitors__next_due(m) <= now, t0, dt;
		int scan = due && s % 5 == 0;

		t0 = cpu_ns();
		monitors__tick(m, now);
		dt = cpu_ns() - t0;
		if (scan) {
			scan_ns += dt;
			scans++;
		} else {
			fetch_ns += dt;
			fetches++;
		}
	}
	monitors__stats(m, st);
	{
		double per_fetch = fetches ? (double)fetch_ns / fetches : 0;
		double per_scan_tick = scans ? (double)scan_ns / scans : 0;
		/* per second: one fetch, a fifth of a scan tick (which also fetches) */
		double per_s = per_fetch + (per_scan_tick - per_fetch) / 5;
		unsigned mon = (unsigned)st[MS_PROCESSES];

		printf("monitored processes: %u (host: %u processes)\n", mon, hosts);
		printf("fetch (1/s): %.0f ns per monitored process\n", mon ? per_fetch / mon : 0);
		printf("scan + check (1/5 s): %.0f ns per host process\n", hosts ? (per_scan_tick - per_fetch) / hosts : 0);
		printf("monitors' CPU: %.4f%% of a core for %u processes = %.4f%% per 100 monitored processes "
		       "(target <= 0.1%%)\n", per_s / 1e7, mon, mon ? per_s / 1e7 * 100 / mon : 0);
	}
	for (unsigned i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	monitors__free(m);
	cp_policies__free(p);
	free(kids);
	return 0;
}
