/* The REST API's baseinfo feature: see rest_base.h. */
#include "analyzer/rest/rest_base.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "analyzer/publisher.h"
#include "analyzer/rest/rest_select.h"
#include "common/timeutil.h"

#define MAX_DISKS 64
#define MAX_MOUNTS 64
#define MAX_METERS 4096
#define FILE_MAX (256 * 1024)

struct disk_prev {
	char name[32];
	unsigned long long rd, rd_sec, rd_ms, wr, wr_sec, wr_ms, io_ms;
};

struct rest_base {
	struct publisher *pub;
	const char *proc, *sys;
	uint32_t self_uid;
	struct rest_doc d;
	bool have;
	uint64_t next_ms, prev_disk_ms;
	struct disk_prev disks[MAX_DISKS];
	unsigned ndisks;
	Ember__Meter **m;
	size_t nm;
	char *buf;
	/* The processes whose gala_gopher_proc_* gauges the exporter shows: one that drops out
	 * (exited, no longer selected, the sub-item or the feature stopped) is forgotten there. */
	uint32_t shown[REST_MAX_PIDS], now_shown[REST_MAX_PIDS];
	unsigned nshown, n_now_shown;
};

struct rest_base *rest_base__new(void *zctx, const char *ep, const char *proc_root, const char *sys_root)
{
	struct rest_base *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->proc = proc_root ? proc_root : "/proc";
	b->self_uid = (uint32_t)geteuid();
	b->sys = sys_root ? sys_root : "/sys";
	b->m = calloc(MAX_METERS, sizeof(*b->m));
	b->buf = malloc(FILE_MAX);
	b->pub = publisher__new(zctx, ep, 1000, 0);
	if (!b->m || !b->buf || !b->pub)
		return rest_base__free(b);
	return b;
}

static void clear(struct rest_base *b)
{
	for (size_t i = 0; i < b->nm; i++) {
		Ember__Meter *m = b->m[i];

		for (size_t l = 0; l < m->n_labels; l++) {
			free(m->labels[l]->name);
			free(m->labels[l]->value);
			free(m->labels[l]);
		}
		free(m->labels);
		free(m->name);
		free(m);
	}
	b->nm = 0;
}

struct rest_base *rest_base__free(struct rest_base *b)
{
	if (!b)
		return NULL;
	clear(b);
	free(b->m);
	free(b->buf);
	b->pub = publisher__free(b->pub);
	free(b);
	return NULL;
}

void rest_base__set(struct rest_base *b, const struct rest_doc *d)
{
	b->d = *d;
	b->have = true;
	b->next_ms = 0;
	b->ndisks = 0;
}

/* A gauge gala_gopher_<entity>_<metric> with n label pairs (name, value, ...). */
static void gauge(struct rest_base *b, uint64_t ts, const char *entity, const char *metric, double v, unsigned n, ...)
{
	Ember__Meter *m;
	va_list ap;

	if (b->nm == MAX_METERS || !(m = calloc(1, sizeof(*m))))
		return;
	ember__meter__init(m);
	if (asprintf(&m->name, "gala_gopher_%s_%s", entity, metric) < 0 || !(m->labels = calloc(n + 1, sizeof(*m->labels)))) {
		free(m->name);
		free(m);
		return;
	}
	m->value = v;
	m->timestamp_ms = ts;
	va_start(ap, n);
	for (unsigned i = 0; i < n; i++) {
		const char *k = va_arg(ap, const char *), *val = va_arg(ap, const char *);
		Ember__Label *l = calloc(1, sizeof(*l));

		if (!l)
			break;
		ember__label__init(l);
		l->name = strdup(k);
		l->value = strdup(val ? val : "");
		m->labels[m->n_labels++] = l;
	}
	va_end(ap);
	b->m[b->nm++] = m;
}

/* path into b->buf (NUL-terminated); its length or -1 (counted). */
static ssize_t slurp(struct rest_base *b, const char *path)
{
	ssize_t n = -1, r;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = 0;
		while (n < FILE_MAX - 1 && (r = read(fd, b->buf + n, FILE_MAX - 1 - (size_t)n)) > 0)
			n += r;
		close(fd);
	}
	if (n < 0)
		return -1;
	b->buf[n] = 0;
	return n;
}

static bool dev_wanted(const struct rest_base *b, const char *dev)
{
	return !b->d.dev_name[0] || !strcmp(b->d.dev_name, dev);
}

static void cpu(struct rest_base *b, uint64_t ts)
{
	static const char *const names[] = { "user_total_second", "nice_total_second", "system_total_second", NULL,
					     "iowait_total_second", "irq_total_second", "softirq_total_second" };
	static const char *const sirq[][2] = { { "RCU:", "rcu" }, { "TIMER:", "timer" }, { "SCHED:", "sched" },
					       { "NET_RX:", "net_rx" } };
	double hz = (double)sysconf(_SC_CLK_TCK);
	char path[300], num[16];

	snprintf(path, sizeof(path), "%s/stat", b->proc);
	if (slurp(b, path) < 0)
		return;
	for (char *save = NULL, *line = strtok_r(b->buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long long v[7];
		unsigned c;

		if (sscanf(line, "cpu%u %llu %llu %llu %llu %llu %llu %llu", &c, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
			   &v[6]) != 8)
			continue;
		snprintf(num, sizeof(num), "%u", c);
		for (unsigned i = 0; i < 7; i++)
			if (names[i])
				gauge(b, ts, "cpu", names[i], (double)v[i] / hz, 1, "cpu_num", num);
	}
	snprintf(path, sizeof(path), "%s/softirqs", b->proc);
	if (slurp(b, path) < 0)
		return;
	for (char *save = NULL, *line = strtok_r(b->buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line;

		while (*p == ' ')
			p++;
		for (unsigned s = 0; s < sizeof(sirq) / sizeof(sirq[0]); s++) {
			char *end;

			if (strncmp(p, sirq[s][0], strlen(sirq[s][0])))
				continue;
			p += strlen(sirq[s][0]);
			for (unsigned c = 0; c < 4096; c++) {
				unsigned long long v = strtoull(p, &end, 10);

				if (end == p)
					break;
				p = end;
				snprintf(num, sizeof(num), "%u", c);
				gauge(b, ts, "cpu", sirq[s][1], (double)v, 1, "cpu_num", num);
			}
		}
	}
}

static void mem(struct rest_base *b, uint64_t ts)
{
	static const char *const map[][2] = {
		{ "MemTotal", "total_kB" }, { "MemFree", "free_kB" }, { "MemAvailable", "available_kB" },
		{ "Buffers", "buffers_kB" }, { "Cached", "cache_kB" }, { "Active", "active_kB" },
		{ "Inactive", "inactive_kB" }, { "SwapTotal", "swap_total_kB" }, { "SwapFree", "swap_free_kB" },
		{ "Slab", "slab_kB" }, { "SReclaimable", "SReclaimable_kB" }, { "SUnreclaim", "Unreclaim_kB" },
		{ "PageTables", "page_kB" }, { "VmallocUsed", "vmalloc_kB" }, { "KernelStack", "stack_kB" },
		{ "Active(anon)", "active_anon_kB" }, { "Inactive(anon)", "inactive_anon_kB" },
		{ "Active(file)", "active_file_kB" }, { "Inactive(file)", "inactive_file_kB" }, { "Mlocked", "mlocked" },
		{ "Hugetlb", "big_page_kB" }, { "Shmem", "shmem_kB" },
	};
	double total = 0, avail = -1, swt = 0, swf = 0;
	char path[300];

	snprintf(path, sizeof(path), "%s/meminfo", b->proc);
	if (slurp(b, path) < 0)
		return;
	for (char *save = NULL, *line = strtok_r(b->buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');
		unsigned long long v;

		if (!colon || sscanf(colon + 1, "%llu", &v) != 1)
			continue;
		*colon = 0;
		for (unsigned i = 0; i < sizeof(map) / sizeof(map[0]); i++)
			if (!strcmp(line, map[i][0]))
				gauge(b, ts, "mem", map[i][1], (double)v, 1, "infos", "meminfo");
		if (!strcmp(line, "MemTotal"))
			total = (double)v;
		else if (!strcmp(line, "MemAvailable"))
			avail = (double)v;
		else if (!strcmp(line, "SwapTotal"))
			swt = (double)v;
		else if (!strcmp(line, "SwapFree"))
			swf = (double)v;
	}
	if (total > 0 && avail >= 0)
		gauge(b, ts, "mem", "util", 100.0 * (total - avail) / total, 1, "infos", "meminfo");
	gauge(b, ts, "mem", "swap_util", swt > 0 ? 100.0 * (swt - swf) / swt : 0, 1, "infos", "meminfo");
}

static void nic(struct rest_base *b, uint64_t ts)
{
	static const char *const stats[][2] = {
		{ "rx_bytes", "rx_bytes" }, { "rx_packets", "rx_packets" }, { "rx_errors", "rx_errs" },
		{ "rx_dropped", "rx_dropped" }, { "tx_bytes", "tx_bytes" }, { "tx_packets", "tx_packets" },
		{ "tx_errors", "tx_errs" }, { "tx_dropped", "tx_dropped" },
	};
	char path[600];
	struct dirent *e;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/class/net", b->sys);
	if (!(dir = opendir(path)))
		return;
	while ((e = readdir(dir))) {
		if (e->d_name[0] == '.' || strlen(e->d_name) > 64 || !dev_wanted(b, e->d_name))
			continue;
		for (unsigned i = 0; i < sizeof(stats) / sizeof(stats[0]); i++) {
			snprintf(path, sizeof(path), "%s/class/net/%s/statistics/%s", b->sys, e->d_name, stats[i][0]);
			if (slurp(b, path) > 0)
				gauge(b, ts, "nic", stats[i][1], strtod(b->buf, NULL), 1, "dev_name", e->d_name);
		}
	}
	closedir(dir);
}

static void disk(struct rest_base *b, uint64_t ts, uint64_t now_ms)
{
	struct disk_prev cur[MAX_DISKS];
	unsigned ncur = 0;
	double dt = b->prev_disk_ms && now_ms > b->prev_disk_ms ? (double)(now_ms - b->prev_disk_ms) / 1000.0 : 0;
	char path[300];

	snprintf(path, sizeof(path), "%s/diskstats", b->proc);
	if (slurp(b, path) < 0)
		return;
	for (char *save = NULL, *line = strtok_r(b->buf, "\n", &save); line && ncur < MAX_DISKS;
	     line = strtok_r(NULL, "\n", &save)) {
		struct disk_prev d = { 0 };
		unsigned maj, min;
		unsigned long long rm, wm, inflight;
		char sysblk[400];

		if (sscanf(line, " %u %u %31s %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &maj, &min, d.name, &d.rd, &rm,
			   &d.rd_sec, &d.rd_ms, &d.wr, &wm, &d.wr_sec, &d.wr_ms, &inflight, &d.io_ms) != 13)
			continue;
		/* whole disks (not partitions), not loop or ram devices */
		snprintf(sysblk, sizeof(sysblk), "%s/block/%s", b->sys, d.name);
		if (access(sysblk, F_OK) || !strncmp(d.name, "loop", 4) || !strncmp(d.name, "ram", 3) ||
		    !dev_wanted(b, d.name))
			continue;
		cur[ncur++] = d;
		for (unsigned p = 0; dt > 0 && p < b->ndisks; p++) {
			const struct disk_prev *o = &b->disks[p];
			double rd, wr;

			if (strcmp(o->name, d.name) || d.rd < o->rd || d.wr < o->wr)
				continue;
			rd = (double)(d.rd - o->rd), wr = (double)(d.wr - o->wr);
			gauge(b, ts, "disk", "rspeed", rd / dt, 1, "disk_name", d.name);
			gauge(b, ts, "disk", "rspeed_kB", (double)(d.rd_sec - o->rd_sec) / 2.0 / dt, 1, "disk_name", d.name);
			gauge(b, ts, "disk", "r_await", rd ? (double)(d.rd_ms - o->rd_ms) / rd : 0, 1, "disk_name", d.name);
			gauge(b, ts, "disk", "rareq", rd ? (double)(d.rd_sec - o->rd_sec) / 2.0 / rd : 0, 1, "disk_name", d.name);
			gauge(b, ts, "disk", "wspeed", wr / dt, 1, "disk_name", d.name);
			gauge(b, ts, "disk", "wspeed_kB", (double)(d.wr_sec - o->wr_sec) / 2.0 / dt, 1, "disk_name", d.name);
			gauge(b, ts, "disk", "w_await", wr ? (double)(d.wr_ms - o->wr_ms) / wr : 0, 1, "disk_name", d.name);
			gauge(b, ts, "disk", "wareq", wr ? (double)(d.wr_sec - o->wr_sec) / 2.0 / wr : 0, 1, "disk_name", d.name);
			gauge(b, ts, "disk", "util", 100.0 * (double)(d.io_ms - o->io_ms) / (dt * 1000.0), 1, "disk_name", d.name);
		}
	}
	memcpy(b->disks, cur, ncur * sizeof(cur[0]));
	b->ndisks = ncur;
	b->prev_disk_ms = now_ms;
}

/* /proc/net/snmp's "Proto: names" then "Proto: values" lines: value of field name. */
static bool snmp_value(const char *text, const char *proto, const char *name, double *ret)
{
	char head[64];
	const char *h, *v;
	size_t pl;

	snprintf(head, sizeof(head), "\n%s:", proto);
	h = strstr(text, head);
	if (!h)
		return false;
	h += strlen(head);
	v = strstr(h, head);
	if (!v)
		return false;
	v += strlen(head);
	pl = strlen(name);
	for (;;) {
		while (*h == ' ')
			h++;
		while (*v == ' ')
			v++;
		if (*h == '\n' || !*h || *v == '\n' || !*v)
			return false;
		if (!strncmp(h, name, pl) && (h[pl] == ' ' || h[pl] == '\n')) {
			*ret = strtod(v, NULL);
			return true;
		}
		h += strcspn(h, " \n");
		v += strcspn(v, " \n");
	}
}

static void net(struct rest_base *b, uint64_t ts)
{
	static const char *const tcp[][2] = { { "CurrEstab", "curr_estab" }, { "InSegs", "in_segs" },
					      { "OutSegs", "out_segs" }, { "RetransSegs", "retrans_segs" },
					      { "InErrs", "in_errs" } };
	static const char *const udp[][2] = { { "InDatagrams", "indata_grams" }, { "OutDatagrams", "outdata_grams" } };
	char path[300];
	double v;

	snprintf(path, sizeof(path), "%s/net/snmp", b->proc);
	if (slurp(b, path) < 0)
		return;
	/* a leading newline lets the search find the first line's protocol too */
	memmove(b->buf + 1, b->buf, strlen(b->buf) + 1 < FILE_MAX - 1 ? strlen(b->buf) + 1 : FILE_MAX - 2);
	b->buf[0] = '\n';
	for (unsigned i = 0; i < 5; i++)
		if (snmp_value(b->buf, "Tcp", tcp[i][0], &v))
			gauge(b, ts, "system_tcp", tcp[i][1], v, 1, "origin", "/proc/net/snmp");
	for (unsigned i = 0; i < 2; i++)
		if (snmp_value(b->buf, "Udp", udp[i][0], &v))
			gauge(b, ts, "system_udp", udp[i][1], v, 1, "origin", "/proc/net/snmp");
}

/* /proc/mounts' octal escapes (\040 for a space) decoded in place. */
static void unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') << 6 | (s[2] - '0') << 3 | (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = 0;
}

static void fs(struct rest_base *b, uint64_t ts)
{
	char path[300];
	unsigned n = 0;

	snprintf(path, sizeof(path), "%s/mounts", b->proc);
	if (slurp(b, path) < 0)
		return;
	for (char *save = NULL, *line = strtok_r(b->buf, "\n", &save); line && n < MAX_MOUNTS;
	     line = strtok_r(NULL, "\n", &save)) {
		char dev[256], mnt[256], type[64], inodes[32], blocks[32];
		struct statvfs sv;
		double used, avail, iused;

		if (sscanf(line, "%255s %255s %63s", dev, mnt, type) != 3)
			continue;
		if (strncmp(dev, "/dev/", 5) && strcmp(type, "tmpfs"))
			continue;
		unescape(mnt);
		if (statvfs(mnt, &sv) || !sv.f_blocks)
			continue;
		n++;
		used = (double)(sv.f_blocks - sv.f_bfree) * (double)sv.f_frsize / 1024.0;
		avail = (double)sv.f_bavail * (double)sv.f_frsize / 1024.0;
		iused = (double)(sv.f_files - sv.f_ffree);
		snprintf(inodes, sizeof(inodes), "%llu", (unsigned long long)sv.f_files);
		snprintf(blocks, sizeof(blocks), "%.0f", (double)sv.f_blocks * (double)sv.f_frsize / 1024.0);
		gauge(b, ts, "file_system", "IUsed", iused, 4, "MountOn", mnt, "File_sys", type, "Inodes", inodes, "Blocks",
		      blocks);
		gauge(b, ts, "file_system", "IFree", (double)sv.f_ffree, 4, "MountOn", mnt, "File_sys", type, "Inodes",
		      inodes, "Blocks", blocks);
		gauge(b, ts, "file_system", "IUsePer", sv.f_files ? 100.0 * iused / (double)sv.f_files : 0, 4, "MountOn", mnt,
		      "File_sys", type, "Inodes", inodes, "Blocks", blocks);
		gauge(b, ts, "file_system", "Used", used, 4, "MountOn", mnt, "File_sys", type, "Inodes", inodes, "Blocks",
		      blocks);
		gauge(b, ts, "file_system", "Free", avail, 4, "MountOn", mnt, "File_sys", type, "Inodes", inodes, "Blocks",
		      blocks);
		gauge(b, ts, "file_system", "UsePer", used + avail > 0 ? 100.0 * used / (used + avail) : 0, 4, "MountOn", mnt,
		      "File_sys", type, "Inodes", inodes, "Blocks", blocks);
	}
}

/*
 * The selected processes (the feature's snoopers) as gala-gopher's system_proc
 * table, from /proc/<pid>/stat, which anyone may read: io, fd and smaps
 * figures need ptrace rights the unprivileged analyzer does not have.
 */
static void proc(struct rest_base *b, uint64_t ts)
{
	static uint32_t sel[REST_MAX_PIDS];
	double page_kb = (double)sysconf(_SC_PAGESIZE) / 1024.0, memtotal_kb = 0;
	char path[300], tgid[16], ppid_s[16], pgid_s[16], *p;
	uint64_t over;
	unsigned n;

	snprintf(path, sizeof(path), "%s/meminfo", b->proc);
	if (slurp(b, path) > 0 && (p = strstr(b->buf, "MemTotal:")))
		memtotal_kb = strtod(p + 9, NULL);
	n = rest_select__scan(&b->d, b->proc, b->self_uid, sel, REST_MAX_PIDS, &over);
	for (unsigned i = 0; i < n; i++) {
		unsigned long long minflt, majflt, ut, st, cut, cst, vsize, rss;
		long long prio, nice, threads;
		int ppid, pgid, cpu = -1;
		char *rp, *lp, comm[16];

		snprintf(path, sizeof(path), "%s/%u/stat", b->proc, sel[i]);
		if (slurp(b, path) <= 0 || !(rp = strrchr(b->buf, ')')) || !(lp = strchr(b->buf, '(')) || lp > rp)
			continue; /* gone meanwhile */
		/* comm: what the kernel keeps (at most 15 bytes), between the first '(' and the last ')' */
		snprintf(comm, sizeof(comm), "%.*s", (int)(rp - lp - 1 < 15 ? rp - lp - 1 : 15), lp + 1);
		/* after "pid (comm)": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime
		 * cutime cstime priority nice num_threads itrealvalue starttime vsize rss ... processor (39th) */
		if (sscanf(rp + 2, "%*c %d %d %*d %*d %*d %*u %llu %*u %llu %*u %llu %llu %llu %llu %lld %lld %lld %*d %*u %llu %llu",
			   &ppid, &pgid, &minflt, &majflt, &ut, &st, &cut, &cst, &prio, &nice, &threads, &vsize, &rss) != 13)
			continue;
		{
			char *f = rp + 2;

			for (int k = 0; k < 36 && f; k++)
				f = strchr(f + 1, ' ');
			if (f)
				cpu = atoi(f + 1);
		}
		snprintf(tgid, sizeof(tgid), "%u", sel[i]);
		snprintf(ppid_s, sizeof(ppid_s), "%d", ppid);
		snprintf(pgid_s, sizeof(pgid_s), "%d", pgid);
		b->now_shown[b->n_now_shown++] = sel[i];
		/* comm, as gala-gopher adds it to every record keyed by a tgid */
#define P(m, v) gauge(b, ts, "proc", m, (double)(v), 4, "tgid", tgid, "comm", comm, "pgid", pgid_s, "ppid", ppid_s)
		P("minor_pagefault_count", minflt);
		P("major_pagefault_count", majflt);
		P("utime_jiffies", ut);
		P("stime_jiffies", st);
		P("cutime_jiffies", cut);
		P("cstime_jiffies", cst);
		P("priority", prio);
		P("nice", nice);
		P("num_threads", threads);
		P("vm_size", vsize);
		P("pm_size", (double)rss * page_kb * 1024.0);
		P("pm_util", memtotal_kb > 0 ? 100.0 * (double)rss * page_kb / memtotal_kb : 0);
		if (cpu >= 0)
			P("cpu", cpu);
#undef P
	}
}

/* The host's identity as gala-gopher's system_os table gives it: labels on a constant 1. */
static void host(struct rest_base *b, uint64_t ts)
{
	char os[128] = "unknown", ip[INET_ADDRSTRLEN] = "", path[300], cpus[16], memmb[24], ticks[16], btime[24] = "0";
	const char *type = "pm";
	struct ifaddrs *ifs = NULL;
	struct utsname u;
	char *p;

	if (slurp(b, "/etc/os-release") > 0 && (p = strstr(b->buf, "PRETTY_NAME=")))
		sscanf(p + 12, "\"%127[^\"\n]", os);
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");
	snprintf(cpus, sizeof(cpus), "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	snprintf(ticks, sizeof(ticks), "%ld", sysconf(_SC_CLK_TCK));
	snprintf(path, sizeof(path), "%s/meminfo", b->proc);
	snprintf(memmb, sizeof(memmb), "0");
	if (slurp(b, path) > 0 && (p = strstr(b->buf, "MemTotal:")))
		snprintf(memmb, sizeof(memmb), "%llu", strtoull(p + 9, NULL, 10) / 1024);
	snprintf(path, sizeof(path), "%s/stat", b->proc);
	if (slurp(b, path) > 0 && (p = strstr(b->buf, "\nbtime ")))
		snprintf(btime, sizeof(btime), "%llu", strtoull(p + 7, NULL, 10));
	snprintf(path, sizeof(path), "%s/cpuinfo", b->proc);
	if (slurp(b, path) > 0 && strstr(b->buf, " hypervisor"))
		type = "vm";
	if (!getifaddrs(&ifs)) {
		for (struct ifaddrs *i = ifs; i && !ip[0]; i = i->ifa_next)
			if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && !(i->ifa_flags & IFF_LOOPBACK))
				inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof(ip));
		freeifaddrs(ifs);
	}
	gauge(b, ts, "host", "value", 1, 9, "os_version", os, "hostname", u.nodename, "kversion", u.release, "cpu_num", cpus,
	      "memory_MB", memmb, "ip_addr", ip, "host_type", type, "clock_ticks", ticks, "os_btime", btime);
}

static bool has_pid(const uint32_t *v, unsigned n, uint32_t pid)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

/*
 * After a collection (or when the feature stops): the processes shown before and not now
 * are dropped from the exporter's tables along with the meters sent; now_shown becomes shown.
 */
static void publish(struct rest_base *b)
{
	Ember__SeriesDrop drops[REST_MAX_PIDS], *dp[REST_MAX_PIDS];
	char pids[REST_MAX_PIDS][12];
	size_t nd = 0;

	for (unsigned i = 0; i < b->nshown; i++) {
		if (has_pid(b->now_shown, b->n_now_shown, b->shown[i]))
			continue;
		ember__series_drop__init(&drops[nd]);
		snprintf(pids[nd], sizeof(pids[nd]), "%u", b->shown[i]);
		drops[nd].prefix = "gala_gopher_proc_";
		drops[nd].label = "tgid";
		drops[nd].value = pids[nd];
		dp[nd] = &drops[nd];
		nd++;
	}
	if (b->nm || nd)
		publisher__meters_drops(b->pub, b->m, b->nm, dp, nd);
	memcpy(b->shown, b->now_shown, b->n_now_shown * sizeof(b->shown[0]));
	b->nshown = b->n_now_shown;
	b->n_now_shown = 0;
	clear(b);
}

void rest_base__tick(struct rest_base *b, uint64_t now_ms)
{
	const struct rest_doc *d = &b->d;
	uint64_t ts = timeutil__unix_ms();

	if (b->nshown && (!b->have || !d->running || !d->probes[REST_BASE_PROC])) {
		publish(b); /* stopped: nothing shown any more */
		return;
	}
	if (!b->have || !d->running || now_ms < b->next_ms)
		return;
	b->next_ms = now_ms + (uint64_t)d->report_period_s * 1000;
	if (d->probes[REST_BASE_CPU])
		cpu(b, ts);
	if (d->probes[REST_BASE_MEM])
		mem(b, ts);
	if (d->probes[REST_BASE_NIC])
		nic(b, ts);
	if (d->probes[REST_BASE_DISK])
		disk(b, ts, now_ms);
	if (d->probes[REST_BASE_NET])
		net(b, ts);
	if (d->probes[REST_BASE_FS])
		fs(b, ts);
	if (d->probes[REST_BASE_HOST])
		host(b, ts);
	if (d->probes[REST_BASE_PROC])
		proc(b, ts);
	publish(b);
}
