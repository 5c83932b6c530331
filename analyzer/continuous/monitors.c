/* Continuous-profiling monitors and triggers: see monitors.h.  What they read of /proc is mon_proc.c. */
#include "analyzer/continuous/monitors.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "analyzer/continuous/mon_proc.h"
#include "analyzer/continuous/window.h"
#include "common/shard.h"

#define CMDLINE_BUF 4096

struct mproc {
	uint32_t pid;
	int fd;				/* /proc/<pid>/stat, -1: opened at each read (no descriptor left) */
	uint64_t start_ticks;
	char comm[16];
	uint64_t pmask;			/* policies (bit = index in the set) whose MatchCmd it matches */
	uint64_t last_ticks, last_ns;
	bool have_last, has_cpu, seen;
	double cpu, threads;
	struct cp_window win_cpu, win_threads;
	uint64_t last_start_ms[CP_TARGET_MAX];
	struct hwin *hw;		/* the L7 items' windows */
	unsigned nhw;
	bool capturing;
};

/* One L7 item's window on one process: per URI of its URIList, else one. */
struct hwin {
	uint16_t policy, item;
	const char *protocol;		/* the parser whose exchanges count (static) */
	int16_t uri;			/* index in the item's URIList; -1: its URIRegex, or every exchange */
	struct cp_agg_window w;
};

struct monitors {
	struct monitors_opts o;
	char proc_root[256];
	long hz;
	/* In force: the local policies, then the OAP's (set.v owned); bit i of a process's pmask = set.v[i]. */
	struct cp_policies set;
	regex_t rx[CP_MAX_POLICIES];	/* local policies' MatchCmd */
	unsigned n_rx, n_local;
	struct cp_policies local, oap;	/* as last given (v owned) */
	uint32_t *oap_pids[CP_MAX_POLICIES];	/* the OAP policies' processes, sorted (owned) */
	unsigned oap_npids[CP_MAX_POLICIES];
	regex_t item_rx[CP_MAX_POLICIES][CP_MAX_ITEMS];	/* L7 items' URIRegex */
	bool item_rx_ok[CP_MAX_POLICIES][CP_MAX_ITEMS];
	bool rematch;
	struct mproc *p;		/* sorted by pid */
	unsigned n;
	struct cp_window win_load;
	double load;
	bool uses_load;
	int64_t last_sec;		/* the latest second a fetch filled */
	int64_t values_sec;		/* the L7 slots up to this second were reported */
	uint64_t next_fetch, next_check;
	uint64_t st[MS_MAX];
	/* Descriptors kept open on /proc/<pid>/stat: at most half of what the process may open, so
	 * the analyzer's own files and sockets never run short; the others are opened at each read. */
	unsigned open_fds, max_fds;
	uint32_t *ended;		/* processes dropped since the last values callback (max_processes) */
	unsigned n_ended;
};

const struct counter_def monitors_counters[MS_MAX] = {
	[MS_POLICIES] = { .name = "continuous_policies", .level = true },
	[MS_EXCHANGES] = { .name = "continuous_exchanges" },
	[MS_CAPTURE_FAILURES] = { .name = "continuous_capture_failures" },
	[MS_PROCESSES] = { .name = "continuous_processes_monitored", .level = true },
	[MS_PROCESSES_OVER] = { .name = "continuous_processes_over_limit" },
	[MS_SCANS] = { .name = "continuous_scans" },
	[MS_FETCHES] = { .name = "continuous_fetches" },
	[MS_CHECKS] = { .name = "continuous_checks" },
	[MS_READ_ERRORS] = { .name = "continuous_proc_read_errors" },
	[MS_TRIGGERS] = { .name = "continuous_triggers" },
	[MS_SILENCED] = { .name = "continuous_silenced" },
	[MS_ALREADY_RUNNING] = { .name = "continuous_already_running" },
	[MS_START_FAILURES] = { .name = "continuous_start_failures" },
	[MS_ENDED_UNREPORTED] = { .name = "continuous_ended_unreported" },
};

const char *monitors__stat_name(enum monitors_stat s) { return (unsigned)s < MS_MAX ? monitors_counters[s].name : "?"; }

static void free_hw(struct mproc *p)
{
	for (unsigned i = 0; i < p->nhw; i++)
		cp_agg_window__fini(&p->hw[i].w);
	free(p->hw);
	p->hw = NULL;
	p->nhw = 0;
}

static void free_set(struct monitors *m)
{
	for (unsigned i = 0; i < m->n_rx; i++)
		regfree(&m->rx[i]);
	m->n_rx = 0;
	for (unsigned i = 0; i < CP_MAX_POLICIES; i++)
		for (unsigned k = 0; k < CP_MAX_ITEMS; k++)
			if (m->item_rx_ok[i][k]) {
				regfree(&m->item_rx[i][k]);
				m->item_rx_ok[i][k] = false;
			}
	free(m->set.v);
	memset(&m->set, 0, sizeof(m->set));
}

static void free_given(struct cp_policies *p)
{
	free(p->v);
	memset(p, 0, sizeof(*p));
}

static void free_oap_pids(struct monitors *m)
{
	for (unsigned i = 0; i < CP_MAX_POLICIES; i++) {
		free(m->oap_pids[i]);
		m->oap_pids[i] = NULL;
		m->oap_npids[i] = 0;
	}
}

/* ended: the process stops being monitored (the values callback hears of it), not the agent stopping. */
static void drop_proc(struct monitors *m, unsigned i, bool ended)
{
	struct mproc *p = &m->p[i];

	if (ended && m->o.values) {
		if (m->n_ended < m->o.max_processes)
			m->ended[m->n_ended++] = p->pid;
		else
			m->st[MS_ENDED_UNREPORTED]++;
	}

	if (p->fd >= 0) {
		close(p->fd);
		m->open_fds--;
	}
	if (p->capturing && m->o.capture)
		(void)m->o.capture(m->o.ctx, p->pid, false);
	free_hw(p);
	cp_window__fini(&p->win_cpu);
	cp_window__fini(&p->win_threads);
	memmove(p, p + 1, (m->n - i - 1) * sizeof(*p));
	m->n--;
}

struct monitors *monitors__new(const struct monitors_opts *o)
{
	struct monitors *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->o = *o;
	if (!m->o.max_processes)
		m->o.max_processes = 1024;
	if (!m->o.fetch_interval_ms)
		m->o.fetch_interval_ms = 1000;
	if (!m->o.check_interval_ms)
		m->o.check_interval_ms = 5000;
	snprintf(m->proc_root, sizeof(m->proc_root), "%s", o->proc_root ? o->proc_root : "/proc");
	m->o.proc_root = m->proc_root;
	m->hz = sysconf(_SC_CLK_TCK);
	if (m->hz <= 0)
		m->hz = 100;
	m->p = calloc(m->o.max_processes, sizeof(*m->p));
	m->ended = calloc(m->o.max_processes, sizeof(*m->ended));
	if (!m->p || !m->ended) {
		free(m->p);
		free(m->ended);
		free(m);
		errno = ENOMEM;
		return NULL;
	}
	m->last_sec = m->values_sec = INT64_MIN;
	{
		struct rlimit rl;
		rlim_t half = !getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY ? rl.rlim_cur / 2 : 512;

		m->max_fds = half > 64 ? (unsigned)(half > 65536 ? 65536 : half) - 64 : 0;
	}
	return m;
}

struct monitors *monitors__free(struct monitors *m)
{
	if (!m)
		return NULL;
	while (m->n)
		drop_proc(m, m->n - 1, false);
	cp_window__fini(&m->win_load);
	free_set(m);
	free_given(&m->local);
	free_given(&m->oap);
	free_oap_pids(m);
	free(m->p);
	free(m->ended);
	free(m);
	return NULL;
}

static int copy_given(struct cp_policies *dst, const struct cp_policies *src)
{
	unsigned n = src ? src->n : 0;

	free_given(dst);
	if (n > CP_MAX_POLICIES)
		return -EINVAL;
	dst->v = n ? calloc(n, sizeof(*dst->v)) : NULL;
	if (n && !dst->v)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		dst->v[i] = src->v[i];
	dst->n = n;
	return 0;
}

/* The set in force: the local policies, then the OAP's that are not removals, up to CP_MAX_POLICIES. */
static int compose(struct monitors *m)
{
	unsigned n = 0, load_len = 0;

	free_set(m);
	m->set.v = calloc(CP_MAX_POLICIES, sizeof(*m->set.v));
	if (!m->set.v)
		return -ENOMEM;
	for (unsigned i = 0; i < m->local.n && n < CP_MAX_POLICIES; i++) {
		if (regcomp(&m->rx[n], m->local.v[i].match_cmd, REG_EXTENDED | REG_NOSUB)) {
			free_set(m);
			return -EINVAL;
		}
		m->n_rx++;
		m->set.v[n++] = m->local.v[i];
	}
	m->n_local = n;
	for (unsigned i = 0; i < m->oap.n && n < CP_MAX_POLICIES; i++)
		if (!m->oap.v[i].removed)
			m->set.v[n++] = m->oap.v[i];
	m->set.n = n;
	m->st[MS_POLICIES] = n;
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < m->set.v[i].n_items; k++) {
			const struct cp_item *it = &m->set.v[i].items[k];

			/* the parser checked it (regex_guard, regcomp); one that still fails matches nothing */
			if (it->uri_regex[0] && !regcomp(&m->item_rx[i][k], it->uri_regex, REG_EXTENDED | REG_NOSUB))
				m->item_rx_ok[i][k] = true;
			if (it->monitor == CP_MON_SYSTEM_LOAD && it->period > load_len)
				load_len = it->period;
		}
	m->uses_load = load_len > 0;
	if (load_len)
		(void)cp_window__resize(&m->win_load, load_len);
	else
		cp_window__fini(&m->win_load);
	m->rematch = true;
	m->next_check = 0; /* scan (and check) at the next tick */
	return 0;
}

int monitors__set_policies(struct monitors *m, const struct cp_policies *set)
{
	int r = copy_given(&m->local, set);

	return r ? r : compose(m);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int monitors__set_oap_policies(struct monitors *m, const struct cp_policies *set, const struct mon_service_pids *svc,
			       unsigned n_svc)
{
	int r = copy_given(&m->oap, set);

	free_oap_pids(m);
	if (r)
		return r;
	/* Each policy's processes: those the exporter found for its service (removals have none). */
	for (unsigned i = 0, k = 0; i < m->oap.n; i++) {
		if (m->oap.v[i].removed)
			continue;
		for (unsigned j = 0; j < n_svc; j++) {
			if (strcmp(svc[j].service, m->oap.v[i].service) || !svc[j].n_pids)
				continue;
			m->oap_pids[k] = malloc(svc[j].n_pids * sizeof(uint32_t));
			if (!m->oap_pids[k])
				return -ENOMEM;
			memcpy(m->oap_pids[k], svc[j].pids, svc[j].n_pids * sizeof(uint32_t));
			qsort(m->oap_pids[k], svc[j].n_pids, sizeof(uint32_t), cmp_u32);
			m->oap_npids[k] = svc[j].n_pids;
			break;
		}
		k++;
	}
	return compose(m);
}

static unsigned find(const struct monitors *m, uint32_t pid, bool *found)
{
	unsigned lo = 0, hi = m->n;

	while (lo < hi) {
		unsigned mid = (lo + hi) / 2;

		if (m->p[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < m->n && m->p[lo].pid == pid;
	return lo;
}

/* The longest Period of the items (of the matched policies) that use a monitor; 0 if none. */
static uint32_t window_len(const struct monitors *m, uint64_t pmask, enum cp_monitor mon)
{
	uint32_t len = 0;

	for (unsigned i = 0; i < m->set.n; i++)
		for (unsigned k = 0; (pmask >> i & 1) && k < m->set.v[i].n_items; k++)
			if (m->set.v[i].items[k].monitor == mon && m->set.v[i].items[k].period > len)
				len = m->set.v[i].items[k].period;
	return len;
}

/* The process's L7 windows, one per (policy, L7 item[, listed URI]) of its policies. */
static int size_http(struct monitors *m, struct mproc *p)
{
	unsigned n = 0;

	free_hw(p);
	for (unsigned j = 0; j < m->set.n; j++)
		for (unsigned k = 0; (p->pmask >> j & 1) && k < m->set.v[j].n_items; k++)
			if (cp_monitor__is_l7(m->set.v[j].items[k].monitor))
				n += m->set.v[j].items[k].n_uris ? m->set.v[j].items[k].n_uris : 1;
	if (!n)
		return 0;
	p->hw = calloc(n, sizeof(*p->hw));
	if (!p->hw)
		return -ENOMEM;
	for (unsigned j = 0; j < m->set.n; j++)
		for (unsigned k = 0; (p->pmask >> j & 1) && k < m->set.v[j].n_items; k++) {
			const struct cp_item *it = &m->set.v[j].items[k];

			if (!cp_monitor__is_l7(it->monitor))
				continue;
			for (int u = it->n_uris ? 0 : -1; u < (int)it->n_uris; u++) {
				struct hwin *h = &p->hw[p->nhw++];

				h->policy = (uint16_t)j;
				h->item = (uint16_t)k;
				h->protocol = cp_monitor__protocol(it->monitor);
				h->uri = (int16_t)u;
				if (cp_agg_window__resize(&h->w, it->period))
					return -ENOMEM;
			}
		}
	return 0;
}

static int size_windows(struct monitors *m, struct mproc *p)
{
	if (size_http(m, p))
		return -ENOMEM;
	uint32_t c = window_len(m, p->pmask, CP_MON_PROCESS_CPU), t = window_len(m, p->pmask, CP_MON_PROCESS_THREAD_COUNT);
	int r = 0;

	if (c)
		r = cp_window__resize(&p->win_cpu, c);
	else
		cp_window__fini(&p->win_cpu);
	if (t && !r)
		r = cp_window__resize(&p->win_threads, t);
	else if (!t)
		cp_window__fini(&p->win_threads);
	return r;
}

static bool is_ember(const char *comm)
{
	return !strcmp(comm, "ember") || !strncmp(comm, "ember-", 6);
}

static uint64_t match(struct monitors *m, uint32_t pid, const struct mon_proc_stat *ps)
{
	char cmd[CMDLINE_BUF];
	uint64_t mask = 0;

	if (is_ember(ps->comm) || ps->state == 'Z' || mon_proc__cmdline(m->proc_root, pid, cmd, sizeof(cmd)) || !cmd[0])
		return 0;
	for (unsigned i = 0; i < m->n_local; i++)
		if (!regexec(&m->rx[i], cmd, 0, NULL, 0))
			mask |= 1ull << i;
	for (unsigned i = m->n_local; i < m->set.n; i++) {
		unsigned k = i - m->n_local;

		if (m->oap_npids[k] && bsearch(&pid, m->oap_pids[k], m->oap_npids[k], sizeof(uint32_t), cmp_u32))
			mask |= 1ull << i;
	}
	return mask;
}

static void scan(struct monitors *m)
{
	DIR *d = opendir(m->proc_root);
	struct dirent *de;
	uint32_t self = (uint32_t)getpid();
	unsigned over = 0;

	m->st[MS_SCANS]++;
	if (!d) {
		m->st[MS_READ_ERRORS]++;
		return;
	}
	for (unsigned i = 0; i < m->n; i++)
		m->p[i].seen = false;
	while ((de = readdir(d))) {
		char *end;
		unsigned long v;
		uint32_t pid;
		struct mon_proc_stat ps;
		uint64_t mask;
		unsigned i;
		bool found;

		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		v = strtoul(de->d_name, &end, 10);
		if (*end || !v || v > UINT32_MAX)
			continue;
		pid = (uint32_t)v;
		if (pid == self || shard__of(pid, m->o.nshards) != m->o.shard)
			continue;
		i = find(m, pid, &found);
		if (found && !m->rematch) {
			m->p[i].seen = true;
			continue;
		}
		if (mon_proc__stat(m->proc_root, pid, found ? m->p[i].fd : -1, &ps))
			continue; /* gone since readdir */
		mask = match(m, pid, &ps);
		if (found) {
			struct mproc *p = &m->p[i];

			if (mask && p->start_ticks == ps.start_ticks) {
				p->pmask = mask;
				p->seen = !size_windows(m, p);
			}
			continue;
		}
		if (!mask)
			continue;
		if (m->n >= m->o.max_processes) {
			over++;
			continue;
		}
		{
			struct mproc *p = &m->p[i];
			char path[320];

			memmove(p + 1, p, (m->n - i) * sizeof(*p));
			memset(p, 0, sizeof(*p));
			m->n++;
			p->pid = pid;
			p->pmask = mask;
			p->start_ticks = ps.start_ticks;
			memcpy(p->comm, ps.comm, sizeof(p->comm));
			snprintf(path, sizeof(path), "%s/%u/stat", m->proc_root, pid);
			p->fd = m->open_fds < m->max_fds ? open(path, O_RDONLY | O_CLOEXEC) : -1; /* -1: opened at each read */
			m->open_fds += p->fd >= 0;
			p->seen = !size_windows(m, p);
		}
	}
	closedir(d);
	for (unsigned i = m->n; i-- > 0;)
		if (!m->p[i].seen)
			drop_proc(m, i, true);
	m->rematch = false;
	m->st[MS_PROCESSES] = m->n;
	m->st[MS_PROCESSES_OVER] += over;
}

static void fetch(struct monitors *m, uint64_t now_ms)
{
	int64_t sec = (int64_t)(now_ms / 1000);

	m->st[MS_FETCHES]++;
	if (m->uses_load) {
		if (!mon_proc__loadavg(m->proc_root, &m->load))
			cp_window__put(&m->win_load, sec, m->load);
		else
			m->st[MS_READ_ERRORS]++;
	}
	for (unsigned i = m->n; i-- > 0;) {
		struct mproc *p = &m->p[i];
		struct mon_proc_stat ps;
		uint64_t ns;
		int r = mon_proc__stat(m->proc_root, p->pid, p->fd, &ps);

		ns = now_ms * 1000000ull; /* the tick's time: reading N processes takes microseconds */
		if (r || ps.start_ticks != p->start_ticks || ps.state == 'Z') {
			if (r && r != -ESRCH && r != -ENOENT)
				m->st[MS_READ_ERRORS]++;
			drop_proc(m, i, true);
			continue;
		}
		if (strcmp(ps.comm, p->comm)) {
			memcpy(p->comm, ps.comm, sizeof(p->comm));
			m->rematch = true; /* an exec: its command line may no longer match */
		}
		if (p->have_last && ns > p->last_ns) {
			p->cpu = (double)(ps.ticks - p->last_ticks) / (double)m->hz * 1e9 / (double)(ns - p->last_ns) * 100.0;
			p->has_cpu = true;
			if (p->win_cpu.len)
				cp_window__put(&p->win_cpu, sec, p->cpu);
		}
		p->last_ticks = ps.ticks;
		p->last_ns = ns;
		p->have_last = true;
		p->threads = (double)ps.threads;
		if (p->win_threads.len)
			cp_window__put(&p->win_threads, sec, p->threads);
	}
	m->last_sec = sec;
	m->st[MS_PROCESSES] = m->n;
}

static const struct cp_window *window_of(const struct monitors *m, const struct mproc *p, enum cp_monitor mon)
{
	switch (mon) {
	case CP_MON_PROCESS_CPU: return &p->win_cpu;
	case CP_MON_PROCESS_THREAD_COUNT: return &p->win_threads;
	case CP_MON_SYSTEM_LOAD: return &m->win_load;
	default: return NULL;
	}
}

/* An L7 item's windows on p (one per listed URI): each that holds is a cause, with its URI or regex. */
static void check_http(struct monitors *m, const struct mproc *p, unsigned policy, unsigned item, struct mon_trigger *t)
{
	const struct cp_policy *pol = &m->set.v[policy];
	const struct cp_item *it = &pol->items[item];
	enum cp_agg_value v = cp_monitor__is_error_rate(it->monitor) ? CP_AGG_ERROR_RATE : CP_AGG_AVG_MS;

	for (unsigned h = 0; h < p->nhw; h++) {
		const struct hwin *hw = &p->hw[h];
		double cur = 0;
		uint32_t n;
		struct mon_cause *c;

		if (hw->policy != policy || hw->item != item)
			continue;
		n = cp_agg_window__count(&hw->w, v, m->last_sec, it->period, it->threshold, &cur);
		if (n < it->count || t->n_causes >= MON_MAX_CAUSES)
			continue;
		c = &t->causes[t->n_causes++];
		*c = (struct mon_cause){ .monitor = it->monitor, .threshold = it->threshold, .current = cur,
					 .period = it->period, .count = it->count, .matched = n,
					 .oap = policy >= m->n_local };
		snprintf(c->uri, sizeof(c->uri), "%s", hw->uri >= 0 ? it->uris[hw->uri] : it->uri_regex);
		c->uri_is_regex = hw->uri < 0 && it->uri_regex[0];
		snprintf(c->policy, CP_NAME_MAX, "%s", pol->name);
		snprintf(c->service, CP_NAME_MAX, "%s", pol->service);
	}
}

bool monitors__wants_exchanges(const struct monitors *m, uint32_t pid)
{
	bool found;
	unsigned i = find(m, pid, &found);

	return found && m->p[i].nhw;
}

void monitors__exchange(struct monitors *m, uint32_t pid, const char *protocol, const char *uri, bool error,
			double latency_ms, uint64_t now_ms)
{
	bool found;
	unsigned i = find(m, pid, &found);
	struct mproc *p;

	if (!found || !m->p[i].nhw || !protocol)
		return;
	p = &m->p[i];
	m->st[MS_EXCHANGES]++;
	for (unsigned h = 0; h < p->nhw; h++) {
		struct hwin *hw = &p->hw[h];
		const struct cp_item *it = &m->set.v[hw->policy].items[hw->item];

		if (strcmp(hw->protocol, protocol))
			continue;
		if (hw->uri >= 0 ? !uri || strcmp(uri, it->uris[hw->uri]) :
		    it->uri_regex[0] ? !uri || !m->item_rx_ok[hw->policy][hw->item] ||
					       regexec(&m->item_rx[hw->policy][hw->item], uri, 0, NULL, 0) :
				       false)
			continue;
		cp_agg_window__add(&hw->w, (int64_t)(now_ms / 1000), error, latency_ms);
	}
}

/* A process under an L7 item needs its exchanges: ask for the capture (again: it may have ended). */
static void ensure_capture(struct monitors *m, struct mproc *p)
{
	bool want = p->nhw > 0;

	if (!m->o.capture || (!want && !p->capturing))
		return;
	if (m->o.capture(m->o.ctx, p->pid, want)) {
		m->st[MS_CAPTURE_FAILURES]++;
		return;
	}
	p->capturing = want;
}

static void check_target(struct monitors *m, struct mproc *p, enum cp_target target, uint64_t now_ms)
{
	struct mon_trigger t = { .pid = p->pid, .target = target };

	for (unsigned i = 0; i < m->set.n; i++) {
		const struct cp_policy *pol = &m->set.v[i];

		for (unsigned k = 0; (p->pmask >> i & 1) && k < pol->n_items; k++) {
			const struct cp_item *it = &pol->items[k];
			const struct cp_window *w = window_of(m, p, it->monitor);
			double cur = 0;
			uint32_t n;

			if (it->target != target)
				continue;
			if (cp_monitor__is_l7(it->monitor)) {
				check_http(m, p, i, k, &t);
				continue;
			}
			if (!w || !w->len)
				continue;
			n = cp_window__count(w, m->last_sec, it->period, it->threshold, &cur);
			if (n < it->count || t.n_causes >= MON_MAX_CAUSES)
				continue;
			t.causes[t.n_causes++] = (struct mon_cause){ .monitor = it->monitor, .threshold = it->threshold,
				.current = cur, .period = it->period, .count = it->count, .matched = n,
				.oap = i >= m->n_local };
			snprintf(t.causes[t.n_causes - 1].policy, CP_NAME_MAX, "%s", pol->name);
			snprintf(t.causes[t.n_causes - 1].service, CP_NAME_MAX, "%s", pol->service);
		}
	}
	if (!t.n_causes)
		return;
	if (m->o.running && m->o.running(m->o.ctx, p->pid, target)) {
		m->st[MS_ALREADY_RUNNING]++;
		return;
	}
	if (p->last_start_ms[target] && now_ms - p->last_start_ms[target] < m->o.silence_ms) {
		m->st[MS_SILENCED]++;
		return;
	}
	memcpy(t.comm, p->comm, sizeof(t.comm));
	if (m->o.start && !m->o.start(m->o.ctx, &t)) {
		p->last_start_ms[target] = now_ms ? now_ms : 1;
		m->st[MS_TRIGGERS]++;
	} else {
		m->st[MS_START_FAILURES]++;
	}
}

/* An L7 item's values: each 1-s slot of its windows with exchanges since the previous check. */
static bool http_values(struct monitors *m, const struct mproc *p, unsigned policy, unsigned item,
			struct mon_value **v, unsigned *n, unsigned *cap)
{
	const struct cp_policy *pol = &m->set.v[policy];
	const struct cp_item *it = &pol->items[item];

	for (unsigned h = 0; h < p->nhw; h++) {
		const struct hwin *hw = &p->hw[h];

		if (hw->policy != policy || hw->item != item)
			continue;
		for (uint32_t i = 0; i < hw->w.len; i++) {
			const struct cp_agg_slot *s = &hw->w.slots[i];

			if (s->sec == INT64_MIN || !s->count || s->sec <= m->values_sec || s->sec > m->last_sec)
				continue;
			if (*n == *cap) {
				struct mon_value *nv = realloc(*v, 2 * *cap * sizeof(**v));

				if (!nv)
					return false;
				*v = nv;
				*cap *= 2;
			}
			(*v)[(*n)++] = (struct mon_value){
				.pid = p->pid, .monitor = it->monitor, .target = it->target, .service = pol->service,
				.comm = p->comm,
				.uri = hw->uri >= 0 ? it->uris[hw->uri] : it->uri_regex[0] ? it->uri_regex : "global",
				.value = cp_monitor__is_error_rate(it->monitor) ? 100.0 * s->errors / s->count :
										s->sum_ms / s->count,
			};
		}
	}
	return true;
}

/* The values of this check, once per (process, monitor, target, service). */
static void report_values(struct monitors *m)
{
	unsigned cap = m->n * 4 + 4, n = 0;
	struct mon_value *v;

	if (!m->o.values)
		return;
	if (!(v = malloc(cap * sizeof(*v)))) {
		m->st[MS_ENDED_UNREPORTED] += m->n_ended;
		m->n_ended = 0;
		return;
	}
	for (unsigned i = 0; i < m->n; i++) {
		const struct mproc *p = &m->p[i];

		for (unsigned j = 0; j < m->set.n; j++) {
			const struct cp_policy *pol = &m->set.v[j];

			for (unsigned k = 0; (p->pmask >> j & 1) && k < pol->n_items; k++) {
				const struct cp_item *it = &pol->items[k];
				struct mon_value x = { .pid = p->pid, .monitor = it->monitor, .target = it->target,
						       .service = pol->service, .comm = p->comm };
				bool dup = false;

				if (cp_monitor__is_l7(it->monitor)) {
					if (!http_values(m, p, j, k, &v, &n, &cap))
						goto done;
					continue;
				}
				if (it->monitor == CP_MON_PROCESS_CPU && p->has_cpu)
					x.value = p->cpu;
				else if (it->monitor == CP_MON_PROCESS_THREAD_COUNT)
					x.value = p->threads;
				else if (it->monitor == CP_MON_SYSTEM_LOAD)
					x.value = m->load;
				else
					continue;
				for (unsigned d = 0; d < n && !dup; d++)
					dup = v[d].pid == x.pid && v[d].monitor == x.monitor && v[d].target == x.target &&
					      !strcmp(v[d].service, x.service);
				if (dup)
					continue;
				if (n == cap) {
					struct mon_value *nv = realloc(v, 2 * cap * sizeof(*v));

					if (!nv)
						goto done;
					v = nv;
					cap *= 2;
				}
				v[n++] = x;
			}
		}
	}
done:
	if (n || m->n_ended)
		m->o.values(m->o.ctx, v, n, m->ended, m->n_ended);
	m->n_ended = 0;
	free(v);
	m->values_sec = m->last_sec;
}

static void check(struct monitors *m, uint64_t now_ms)
{
	m->st[MS_CHECKS]++;
	if (m->last_sec == INT64_MIN) {
		for (unsigned i = 0; i < m->n; i++)
			ensure_capture(m, &m->p[i]);
		return;
	}
	for (unsigned i = 0; i < m->n; i++) {
		ensure_capture(m, &m->p[i]);
		for (unsigned t = 0; t < CP_TARGET_MAX; t++)
			check_target(m, &m->p[i], (enum cp_target)t, now_ms);
	}
	report_values(m);
}

void monitors__tick(struct monitors *m, uint64_t now_ms)
{
	if (!m->set.n) {
		if (m->n) {
			while (m->n)
				drop_proc(m, m->n - 1, true);
			m->st[MS_PROCESSES] = 0;
		}
		if (m->n_ended && m->o.values)
			m->o.values(m->o.ctx, NULL, 0, m->ended, m->n_ended);
		m->n_ended = 0;
		return;
	}
	if (now_ms >= m->next_check) {
		/* The scan first: a process that just appeared gets its first fetch now. */
		scan(m);
		check(m, now_ms); /* nothing before the first fetch */
		m->next_check = now_ms + m->o.check_interval_ms;
	}
	if (now_ms >= m->next_fetch) {
		fetch(m, now_ms);
		m->next_fetch = now_ms + m->o.fetch_interval_ms;
	}
	if (m->rematch)
		scan(m);
}

uint64_t monitors__next_due(const struct monitors *m)
{
	if (!m->set.n)
		return m->n ? 0 : UINT64_MAX;
	return m->next_fetch < m->next_check ? m->next_fetch : m->next_check;
}

void monitors__stats(const struct monitors *m, uint64_t ret[MS_MAX])
{
	memcpy(ret, m->st, sizeof(m->st));
}
