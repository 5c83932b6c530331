#include "common/process_finder.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <ifaddrs.h>
#include <libelf.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <yaml.h>

#define MAX_RULES   32
#define MAX_GROUPS  10
#define TMPL_MAX    512

struct rule {
	regex_t re;
	bool re_ok;
	char layer[TMPL_MAX], service[TMPL_MAX], instance[TMPL_MAX], process[TMPL_MAX];
	char labels[TMPL_MAX];
};

struct process_finder {
	char proc_root[PF_PATH_MAX], tmp_root[PF_PATH_MAX];
	enum pf_mode mode;
	uint64_t agent_refresh_ms;
	char instance_id[128], hostname[128];
	unsigned max;
	uint32_t never_uids[2];
	struct rule rules[MAX_RULES];
	unsigned n_rules;
	struct pf_process **v;
	unsigned n;
	bool *seen;
	struct pf_stats st;
	const char *cur_layer;	/* {{.Finder.Layer}} while rendering */
};

static void read_exe(struct process_finder *pf, struct pf_process *p);

/* ---- helpers ------------------------------------------------------------------------- */

static size_t read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n, total = 0;

	if (fd < 0)
		return (size_t)-1;
	while ((size_t)total < len - 1 && (n = read(fd, buf + total, len - 1 - (size_t)total)) > 0)
		total += n;
	close(fd);
	buf[total] = 0;
	return (size_t)total;
}

static void copy_trunc(char *dst, size_t len, const char *src, uint64_t *truncated)
{
	size_t n = strlen(src);
	if (n >= len) {
		n = len - 1;
		/* do not cut a UTF-8 sequence in half */
		while (n && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
		if (truncated)
			(*truncated)++;
	}
	memcpy(dst, src, n);
	dst[n] = 0;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static void host_ip(const char *ifname, int family, char *out, size_t len)
{
	struct ifaddrs *ifa = NULL, *i;

	out[0] = 0;
	if (getifaddrs(&ifa))
		return;
	/* the named interface; else, as Rover's host_ip property, the first one with an address */
	for (int pass = 0; pass < 2 && !out[0]; pass++)
		for (i = ifa; i && !out[0]; i = i->ifa_next) {
			if (!i->ifa_addr || i->ifa_addr->sa_family != family)
				continue;
			if (pass == 0 && (!ifname || strcmp(i->ifa_name, ifname)))
				continue;
			if (family == AF_INET)
				inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, out, (socklen_t)len);
			else
				inet_ntop(AF_INET6, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, out, (socklen_t)len);
		}
	freeifaddrs(ifa);
}

bool process_finder__exe_profilable(const char *path)
{
	struct stat st;
	bool ok;
	Elf *e;
	int fd;

	if (!path[0] || elf_version(EV_CURRENT) == EV_NONE)
		return true;
	/* The path may name something else by now (a FIFO must not block us): only a regular file tells. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return true;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return true;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	ok = e && elf_kind(e) == ELF_K_ELF;
	elf_end(e);
	close(fd);
	return ok;
}

/* The real uid from /proc/<pid>/status, or -1 when it cannot be read. */
static int64_t real_uid(struct process_finder *pf, uint32_t pid)
{
	char path[PF_PATH_MAX + 32], buf[2048];
	const char *u;
	unsigned long v;
	char *end;

	snprintf(path, sizeof(path), "%s/%u/status", pf->proc_root, pid);
	if (read_small(path, buf, sizeof(buf)) == (size_t)-1 || !(u = strstr(buf, "\nUid:")))
		return -1;
	u += 5;
	while (*u == ' ' || *u == '\t')
		u++;
	errno = 0;
	v = strtoul(u, &end, 10);
	if (end == u || errno || v > UINT32_MAX)
		return -1;
	return (int64_t)v;
}

/* What support_ebpf_profiling says: see process_finder__exe_profilable. */
static bool profilable(struct process_finder *pf, const struct pf_process *p)
{
	int64_t uid = -1;

	for (unsigned i = 0; i < sizeof(pf->never_uids) / sizeof(pf->never_uids[0]); i++) {
		if (!pf->never_uids[i])
			continue;
		if (uid < 0 && (uid = real_uid(pf, p->pid)) < 0)
			break;
		if (uid == pf->never_uids[i])
			return false;
	}
	/* A guessed path says nothing about the file the process runs. */
	return p->exe_guessed || process_finder__exe_profilable(p->exe);
}

/* ---- templates ----------------------------------------------------------------------- */

struct out { char *p; size_t len, n; bool over; };

static void put(struct out *o, const char *s, size_t n)
{
	if (o->n + n >= o->len) {
		n = o->len - 1 - o->n;
		o->over = true;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
	o->p[o->n] = 0;
}

/* One {{ action }}: a field and at most one argument (a quoted string or a number). */
static int action(struct process_finder *pf, const char *a, size_t alen, const struct pf_process *p,
		  const char *const *groups, unsigned n_groups, struct out *o)
{
	char field[64], arg[64] = "", buf[PF_PATH_MAX];
	size_t i = 0, f = 0;

	while (i < alen && isspace((unsigned char)a[i]))
		i++;
	while (i < alen && !isspace((unsigned char)a[i]) && f < sizeof(field) - 1)
		field[f++] = a[i++];
	field[f] = 0;
	while (i < alen && isspace((unsigned char)a[i]))
		i++;
	if (i < alen) {
		size_t k = 0;
		bool quoted = a[i] == '"';
		if (quoted)
			i++;
		while (i < alen && k < sizeof(arg) - 1 && (quoted ? a[i] != '"' : !isspace((unsigned char)a[i])))
			arg[k++] = a[i++];
		arg[k] = 0;
		if (quoted) {
			if (i >= alen)
				return -EINVAL;
			i++;
		}
		while (i < alen && isspace((unsigned char)a[i]))
			i++;
		if (i < alen)
			return -EINVAL;
	}
#define IS(x) (!strcmp(field, x))
	if (IS(".Process.ExeFilePath")) {
		put(o, p->exe, strlen(p->exe));
	} else if (IS(".Process.ExeName")) {
		const char *b = p->exe[0] ? base_name(p->exe) : "";
		if (!*b) {	/* exe unreadable: the command's first word */
			size_t n = strcspn(p->cmdline, " ");
			snprintf(buf, sizeof(buf), "%.*s", (int)n, p->cmdline);
			b = base_name(buf);
		}
		put(o, b, strlen(b));
	} else if (IS(".Process.ExeNameInCommandLine")) {
		size_t n = strcspn(p->cmdline, " ");
		snprintf(buf, sizeof(buf), "%.*s", (int)n, p->cmdline);
		put(o, base_name(buf), strlen(base_name(buf)));
	} else if (IS(".Process.CommandLine")) {
		put(o, p->cmdline, strlen(p->cmdline));
	} else if (IS(".Process.Pid")) {
		snprintf(buf, sizeof(buf), "%u", p->pid);
		put(o, buf, strlen(buf));
	} else if (IS(".Process.WorkDir")) {
		char path[PF_PATH_MAX + 32];
		ssize_t n;
		snprintf(path, sizeof(path), "%s/%u/cwd", pf->proc_root, p->pid);
		n = readlink(path, buf, sizeof(buf) - 1);
		if (n < 0) {
			pf->st.unreadable++;
			n = 0;
		}
		put(o, buf, (size_t)n);
	} else if (IS(".Rover.InstanceID")) {
		put(o, pf->instance_id, strlen(pf->instance_id));
	} else if (IS(".Rover.HostName")) {
		put(o, pf->hostname, strlen(pf->hostname));
	} else if (IS(".Rover.HostIPV4") || IS(".Rover.HostIPV6")) {
		host_ip(arg[0] ? arg : NULL, IS(".Rover.HostIPV4") ? AF_INET : AF_INET6, buf, sizeof(buf));
		put(o, buf, strlen(buf));
	} else if (IS(".Finder.Layer")) {
		put(o, pf->cur_layer ? pf->cur_layer : "", pf->cur_layer ? strlen(pf->cur_layer) : 0);
	} else if (IS(".Finder.RegexMatchGroup")) {
		char *end;
		long g = strtol(arg, &end, 10);
		if (!arg[0] || *end || g < 0 || g >= MAX_GROUPS)
			return -EINVAL;
		if ((unsigned)g < n_groups && groups && groups[g])
			put(o, groups[g], strlen(groups[g]));
	} else {
		return -EINVAL;
	}
#undef IS
	return 0;
}

int process_finder__render(struct process_finder *pf, const char *tmpl, const struct pf_process *p,
			   const char *const *groups, unsigned n_groups, char *out, size_t outlen)
{
	struct out o = { out, outlen, 0, false };
	const char *s = tmpl;

	if (!outlen)
		return -EINVAL;
	out[0] = 0;
	while (*s) {
		const char *open = strstr(s, "{{"), *close;
		if (!open) {
			put(&o, s, strlen(s));
			break;
		}
		put(&o, s, (size_t)(open - s));
		close = strstr(open + 2, "}}");
		if (!close)
			return -EINVAL;
		if (action(pf, open + 2, (size_t)(close - open - 2), p, groups, n_groups, &o))
			return -EINVAL;
		s = close + 2;
	}
	/* surrounding blanks are template layout, not part of the name */
	while (o.n && isspace((unsigned char)out[o.n - 1]))
		out[--o.n] = 0;
	return 0;
}

/* ---- rules (YAML) -------------------------------------------------------------------- */

/* One key of a rule: its value (a string, or labels as a list) into the rule's field. */
static int rule_key(struct rule *ru, char *match, unsigned idx, yaml_document_t *doc, const yaml_node_pair_t *pr,
		    char *err, size_t errlen)
{
	yaml_node_t *k = yaml_document_get_node(doc, pr->key);
	yaml_node_t *v = yaml_document_get_node(doc, pr->value);
	const char *key = k && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "";
	char val[TMPL_MAX] = "";
	char *dst;

	if (v && v->type == YAML_SCALAR_NODE) {
		if (v->data.scalar.length >= sizeof(val)) {
			snprintf(err, errlen, "process_discovery.scanner.regex[%u].%s is too long", idx, key);
			return -EINVAL;
		}
		memcpy(val, v->data.scalar.value, v->data.scalar.length);
	} else if (v && v->type == YAML_SEQUENCE_NODE && !strcmp(key, "labels")) {
		size_t n = 0;

		for (yaml_node_item_t *li = v->data.sequence.items.start; li < v->data.sequence.items.top; li++) {
			yaml_node_t *l = yaml_document_get_node(doc, *li);

			if (l && l->type == YAML_SCALAR_NODE)
				n += (size_t)snprintf(val + n, n < sizeof(val) ? sizeof(val) - n : 0, "%s%s",
						      n ? "," : "", (const char *)l->data.scalar.value);
			if (n >= sizeof(val))
				break;
		}
	} else {
		snprintf(err, errlen, "process_discovery.scanner.regex[%u].%s must be a string", idx, key);
		return -EINVAL;
	}
	if (!strcasecmp(key, "match_cmd"))
		dst = match;
	else if (!strcasecmp(key, "layer"))
		dst = ru->layer;
	else if (!strcasecmp(key, "service_name"))
		dst = ru->service;
	else if (!strcasecmp(key, "instance_name"))
		dst = ru->instance;
	else if (!strcasecmp(key, "process_name"))
		dst = ru->process;
	else if (!strcasecmp(key, "labels"))
		dst = ru->labels;
	else {
		snprintf(err, errlen, "process_discovery.scanner.regex[%u]: unknown key '%s'", idx, key);
		return -EINVAL;
	}
	/* an empty value keeps Rover's default (its ${ENV:} placeholders expand to "") */
	if (val[0] || dst == ru->labels || dst == match)
		snprintf(dst, TMPL_MAX, "%s", val);
	return 0;
}

/* Rule idx from a mapping: its keys, a compiled match_cmd, templates that render. */
static int parse_rule(struct process_finder *pf, unsigned idx, yaml_document_t *doc, yaml_node_t *m, char *err,
		      size_t errlen)
{
	struct rule *ru = &pf->rules[idx];
	struct pf_process dummy = { .pid = 1, .exe = "/bin/true", .cmdline = "/bin/true" };
	const char *const names[] = { "layer", "service_name", "instance_name", "process_name" };
	char match[TMPL_MAX] = "", o[PF_PATH_MAX];
	int r;

	if (!m || m->type != YAML_MAPPING_NODE) {
		snprintf(err, errlen, "process_discovery.scanner.regex[%u] must be a mapping", idx);
		return -EINVAL;
	}
	snprintf(ru->layer, sizeof(ru->layer), "OS_LINUX");
	snprintf(ru->instance, sizeof(ru->instance), "{{.Rover.HostIPV4 \"en0\"}}");
	snprintf(ru->process, sizeof(ru->process), "{{.Process.ExeName}}");
	for (yaml_node_pair_t *pr = m->data.mapping.pairs.start; pr < m->data.mapping.pairs.top; pr++)
		if ((r = rule_key(ru, match, idx, doc, pr, err, errlen)))
			return r;
	if (!match[0] || !ru->service[0]) {
		snprintf(err, errlen, "process_discovery.scanner.regex[%u] needs match_cmd and service_name", idx);
		return -EINVAL;
	}
	if (regcomp(&ru->re, match, REG_EXTENDED)) {
		snprintf(err, errlen, "process_discovery.scanner.regex[%u].match_cmd: bad regular expression '%s'",
			 idx, match);
		return -EINVAL;
	}
	ru->re_ok = true;
	pf->n_rules++;
	/* Every template must render: catch typos at start, not per process. */
	const char *const tm[] = { ru->layer, ru->service, ru->instance, ru->process };
	for (unsigned t = 0; t < 4; t++)
		if (process_finder__render(pf, tm[t], &dummy, NULL, 0, o, sizeof(o))) {
			snprintf(err, errlen, "process_discovery.scanner.regex[%u].%s: bad template '%s'", idx, names[t],
				 tm[t]);
			return -EINVAL;
		}
	return 0;
}

static int parse_rules(struct process_finder *pf, const char *text, char *err, size_t errlen)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	int r = 0;

	if (!text || !text[0])
		return 0;
	if (!yaml_parser_initialize(&parser))
		return -ENOMEM;
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, errlen, "process_discovery.scanner.regex: not YAML");
		yaml_parser_delete(&parser);
		return -EINVAL;
	}
	root = yaml_document_get_root_node(&doc);
	if (root && root->type != YAML_SEQUENCE_NODE) {
		snprintf(err, errlen, "process_discovery.scanner.regex must be a list of rules");
		r = -EINVAL;
	}
	for (yaml_node_item_t *it = root && !r ? root->data.sequence.items.start : NULL;
	     it && it < root->data.sequence.items.top && !r; it++) {
		if (pf->n_rules >= MAX_RULES) {
			snprintf(err, errlen, "process_discovery.scanner.regex: more than %d rules", MAX_RULES);
			r = -EINVAL;
			break;
		}
		r = parse_rule(pf, pf->n_rules, &doc, yaml_document_get_node(&doc, *it), err, errlen);
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return r;
}

/* ---- scanning ------------------------------------------------------------------------ */

static void split_labels(struct pf_entity *e, const char *list)
{
	const char *p = list;

	e->n_labels = 0;
	while (*p && e->n_labels < PF_MAX_LABELS) {
		size_t n = strcspn(p, ",");
		while (n && isspace((unsigned char)*p)) {
			p++;
			n--;
		}
		{
			size_t m = n;
			while (m && isspace((unsigned char)p[m - 1]))
				m--;
			if (m && m < PF_LABEL_MAX) {
				memcpy(e->labels[e->n_labels], p, m);
				e->labels[e->n_labels++][m] = 0;
			}
		}
		p += n;
		if (*p == ',')
			p++;
	}
}

static bool same_entity(const struct pf_entity *a, const struct pf_entity *b)
{
	if (strcmp(a->layer, b->layer) || strcmp(a->service, b->service) || strcmp(a->instance, b->instance) ||
	    strcmp(a->process, b->process) || a->n_labels != b->n_labels)
		return false;
	for (unsigned i = 0; i < a->n_labels; i++) {
		bool found = false;
		for (unsigned j = 0; j < b->n_labels && !found; j++)
			found = !strcmp(a->labels[i], b->labels[j]);
		if (!found)
			return false;
	}
	return true;
}

static int render_entity(struct process_finder *pf, const struct rule *ru, struct pf_process *p,
			 const char *const *groups, unsigned ng)
{
	char buf[PF_PATH_MAX];

	if (process_finder__render(pf, ru->layer, p, groups, ng, buf, sizeof(buf)))
		return -EINVAL;
	copy_trunc(p->e.layer, sizeof(p->e.layer), buf, &pf->st.truncated);
	pf->cur_layer = p->e.layer;
	if (process_finder__render(pf, ru->service, p, groups, ng, buf, sizeof(buf)))
		return -EINVAL;
	copy_trunc(p->e.service, sizeof(p->e.service), buf, &pf->st.truncated);
	if (process_finder__render(pf, ru->instance, p, groups, ng, buf, sizeof(buf)))
		return -EINVAL;
	copy_trunc(p->e.instance, sizeof(p->e.instance), buf, &pf->st.truncated);
	if (process_finder__render(pf, ru->process, p, groups, ng, buf, sizeof(buf)))
		return -EINVAL;
	copy_trunc(p->e.process, sizeof(p->e.process), buf, &pf->st.truncated);
	split_labels(&p->e, ru->labels);
	return p->e.layer[0] && p->e.service[0] && p->e.instance[0] && p->e.process[0] ? 0 : -EINVAL;
}

static int match_regex(struct process_finder *pf, struct pf_process *p)
{
	for (unsigned i = 0; i < pf->n_rules; i++) {
		regmatch_t m[MAX_GROUPS];
		char gbuf[MAX_GROUPS][PF_NAME_MAX];
		const char *groups[MAX_GROUPS];

		if (regexec(&pf->rules[i].re, p->cmdline, MAX_GROUPS, m, 0))
			continue;
		if (!p->exe[0])
			read_exe(pf, p);
		for (unsigned g = 0; g < MAX_GROUPS; g++) {
			groups[g] = NULL;
			if (m[g].rm_so < 0)
				continue;
			snprintf(gbuf[g], sizeof(gbuf[g]), "%.*s", (int)(m[g].rm_eo - m[g].rm_so), p->cmdline + m[g].rm_so);
			groups[g] = gbuf[g];
		}
		pf->cur_layer = NULL;
		if (render_entity(pf, &pf->rules[i], p, groups, MAX_GROUPS)) {
			pf->st.template_errors++;
			return 0;
		}
		return 1;	/* the first matching rule wins */
	}
	return 0;
}

/* AGENT_SENSOR: key=value lines written by a language agent. */
static int match_agent(struct process_finder *pf, struct pf_process *p)
{
	char path[PF_PATH_MAX + 64], buf[4096], labels[TMPL_MAX] = "";
	struct stat sb;
	struct timespec now;
	char *line, *save = NULL;

	snprintf(path, sizeof(path), "%s/apache_skywalking/process/%u/metadata.properties", pf->tmp_root, p->pid);
	if (stat(path, &sb))
		return 0;
	read_exe(pf, p);
	clock_gettime(CLOCK_REALTIME, &now);
	if ((uint64_t)(now.tv_sec - sb.st_mtim.tv_sec) * 1000 > pf->agent_refresh_ms)
		return 0;
	if (read_small(path, buf, sizeof(buf)) == (size_t)-1) {
		pf->st.unreadable++;
		return 0;
	}
	memset(&p->e, 0, sizeof(p->e));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *eq = strchr(line, '=');
		size_t n;
		if (!eq || line[0] == '#')
			continue;
		*eq = 0;
		n = strlen(eq + 1);
		if (n && eq[n] == '\r')
			eq[n] = 0;
		if (!strcmp(line, "layer"))
			copy_trunc(p->e.layer, sizeof(p->e.layer), eq + 1, &pf->st.truncated);
		else if (!strcmp(line, "service_name"))
			copy_trunc(p->e.service, sizeof(p->e.service), eq + 1, &pf->st.truncated);
		else if (!strcmp(line, "instance_name"))
			copy_trunc(p->e.instance, sizeof(p->e.instance), eq + 1, &pf->st.truncated);
		else if (!strcmp(line, "process_name"))
			copy_trunc(p->e.process, sizeof(p->e.process), eq + 1, &pf->st.truncated);
		else if (!strcmp(line, "labels"))
			copy_trunc(labels, sizeof(labels), eq + 1, NULL);
	}
	split_labels(&p->e, labels);
	if (!p->e.layer[0])
		snprintf(p->e.layer, sizeof(p->e.layer), "GENERAL");
	if (!p->e.service[0] || !p->e.instance[0] || !p->e.process[0]) {
		pf->st.bad_metadata++;
		return 0;
	}
	return 1;
}

static void container_of(struct process_finder *pf, struct pf_process *p)
{
	char path[PF_PATH_MAX + 32], buf[4096];
	char *line, *save = NULL;

	snprintf(path, sizeof(path), "%s/%u/cgroup", pf->proc_root, p->pid);
	if (read_small(path, buf, sizeof(buf)) == (size_t)-1)
		return;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *last = strrchr(line, '/');
		char id[80];
		size_t n;
		if (!last)
			continue;
		last++;
		/* docker-<id>.scope, cri-containerd-<id>.scope, crio-<id>.scope, or a bare 64-hex id */
		for (const char *pre = last; *pre; pre++)
			if (*pre == '-' && strlen(pre + 1) >= 64)
				last = pre + 1;
		n = strcspn(last, ".");
		if (n != 64)
			continue;
		memcpy(id, last, 64);
		id[64] = 0;
		if (strspn(id, "0123456789abcdef") == 64) {
			snprintf(p->container_id, sizeof(p->container_id), "%s", id);
			return;
		}
	}
}

static int read_process(struct process_finder *pf, uint32_t pid, struct pf_process *p)
{
	char path[PF_PATH_MAX + 32], buf[PF_CMDLINE_MAX];
	size_t n;
	char *rp;

	memset(p, 0, sizeof(*p));
	p->pid = pid;
	snprintf(path, sizeof(path), "%s/%u/stat", pf->proc_root, pid);
	if (read_small(path, buf, sizeof(buf)) == (size_t)-1)
		return -ENOENT;
	/* fields after the comm, which may contain ") " itself */
	rp = strrchr(buf, ')');
	if (rp) {
		unsigned long long st = 0;
		/* field 3 is the state; start time is field 22 -> the 20th after ')' */
		const char *f = rp + 2;
		for (int i = 0; i < 19 && f; i++) {
			f = strchr(f, ' ');
			if (f)
				f++;
		}
		if (f && sscanf(f, "%llu", &st) == 1)
			p->start_ticks = st;
	}
	snprintf(path, sizeof(path), "%s/%u/cmdline", pf->proc_root, pid);
	n = read_small(path, p->cmdline, sizeof(p->cmdline));
	if (n == (size_t)-1) {
		pf->st.unreadable++;
		return -EACCES;
	}
	if (n == 0)
		return -ENOENT;	/* kernel thread or zombie */
	while (n && p->cmdline[n - 1] == 0)
		n--;
	for (size_t i = 0; i < n; i++)
		if (p->cmdline[i] == 0 || p->cmdline[i] == '\n')
			p->cmdline[i] = ' ';
	p->cmdline[n] = 0;
	return 0;
}

/* Only for processes that matched: reading exe is what fails for other users' processes. */
static void read_exe(struct process_finder *pf, struct pf_process *p)
{
	char path[PF_PATH_MAX + 32];
	ssize_t l;

	snprintf(path, sizeof(path), "%s/%u/exe", pf->proc_root, p->pid);
	l = readlink(path, p->exe, sizeof(p->exe) - 1);
	if (l < 0) {
		/* another user's process: the command's first word, when it is a path */
		size_t w = strcspn(p->cmdline, " ");
		if (errno == EACCES || errno == EPERM)
			pf->st.unreadable++;
		p->exe[0] = 0;
		if (p->cmdline[0] == '/' && w < sizeof(p->exe)) {
			snprintf(p->exe, sizeof(p->exe), "%.*s", (int)w, p->cmdline);
			p->exe_guessed = true;
		}
	} else {
		p->exe[l] = 0;
	}
}

static struct pf_process *find_rec(struct process_finder *pf, uint32_t pid, uint64_t start, unsigned *idx)
{
	for (unsigned i = 0; i < pf->n; i++)
		if (pf->v[i]->pid == pid && pf->v[i]->start_ticks == start) {
			*idx = i;
			return pf->v[i];
		}
	return NULL;
}

int process_finder__scan(struct process_finder *pf)
{
	DIR *d;
	struct dirent *de;
	uint64_t seen = 0, matched = 0;
	struct pf_process **cand = NULL;
	unsigned n_cand = 0, cap = 0;
	int r = 0;

	d = opendir(pf->proc_root);
	if (!d)
		return -errno;
	memset(pf->seen, 0, pf->max * sizeof(bool));
	/* pass 1: who is still there, and which new processes match */
	while ((de = readdir(d))) {
		char *end;
		unsigned long pid = strtoul(de->d_name, &end, 10);
		struct pf_process tmp, *p;
		unsigned idx;

		if (*end || !pid || pid > UINT32_MAX)
			continue;
		if (read_process(pf, (uint32_t)pid, &tmp))
			continue;
		seen++;
		if (find_rec(pf, tmp.pid, tmp.start_ticks, &idx)) {
			pf->seen[idx] = true;
			matched++;
			continue;
		}
		if (!(pf->mode == PF_MODE_REGEX ? match_regex(pf, &tmp) : match_agent(pf, &tmp)))
			continue;
		if (n_cand == cap) {
			struct pf_process **nc = realloc(cand, (cap ? cap * 2 : 16) * sizeof(*cand));
			if (!nc) {
				r = -ENOMEM;
				break;
			}
			cand = nc;
			cap = cap ? cap * 2 : 16;
		}
		if (!(p = malloc(sizeof(*p)))) {
			r = -ENOMEM;
			break;
		}
		*p = tmp;
		cand[n_cand++] = p;
	}
	closedir(d);
	/* forget what is gone; keep the order of the rest */
	{
		unsigned w = 0;
		for (unsigned i = 0; i < pf->n; i++) {
			if (pf->seen[i])
				pf->v[w++] = pf->v[i];
			else
				free(pf->v[i]);
		}
		pf->n = w;
	}
	/* pass 2: new processes, against live ones only (a restarted service
	 * keeps its entity: the old record is gone by now) */
	for (unsigned c = 0; c < n_cand; c++) {
		struct pf_process *p = cand[c];
		bool dup = false;

		for (unsigned i = 0; i < pf->n && !dup; i++)
			dup = same_entity(&pf->v[i]->e, &p->e);
		if (dup || pf->n >= pf->max || r) {
			/* Rover reports only the first process producing an entity */
			if (dup)
				pf->st.duplicates++;
			else if (!r)
				pf->st.overflow++;
			free(p);
			continue;
		}
		p->support_ebpf = profilable(pf, p);
		container_of(pf, p);
		pf->v[pf->n++] = p;
		matched++;
	}
	free(cand);
	if (r)
		return r;
	pf->st.scans++;
	pf->st.processes_seen = seen;
	pf->st.matched = matched;
	return (int)pf->n;
}

/* ---- the rest ------------------------------------------------------------------------ */

struct process_finder *process_finder__new(const struct pf_opts *o, char *err, size_t errlen)
{
	struct process_finder *pf = calloc(1, sizeof(*pf));
	int r;

	if (!pf) {
		snprintf(err, errlen, "out of memory");
		errno = ENOMEM;
		return NULL;
	}
	snprintf(pf->proc_root, sizeof(pf->proc_root), "%s", o->proc_root && o->proc_root[0] ? o->proc_root : "/proc");
	snprintf(pf->tmp_root, sizeof(pf->tmp_root), "%s", o->tmp_root && o->tmp_root[0] ? o->tmp_root : "/tmp");
	pf->mode = o->mode;
	pf->agent_refresh_ms = o->agent_refresh_ms ? o->agent_refresh_ms : 60000;
	snprintf(pf->instance_id, sizeof(pf->instance_id), "%s", o->instance_id ? o->instance_id : "");
	if (o->hostname)
		snprintf(pf->hostname, sizeof(pf->hostname), "%s", o->hostname);
	else if (gethostname(pf->hostname, sizeof(pf->hostname) - 1))
		snprintf(pf->hostname, sizeof(pf->hostname), "localhost");
	pf->max = o->max_processes ? o->max_processes : 4096;
	memcpy(pf->never_uids, o->never_uids, sizeof(pf->never_uids));
	pf->v = calloc(pf->max, sizeof(*pf->v));
	pf->seen = calloc(pf->max, sizeof(bool));
	if (!pf->v || !pf->seen) {
		snprintf(err, errlen, "out of memory");
		process_finder__free(pf);
		errno = ENOMEM;
		return NULL;
	}
	r = parse_rules(pf, o->rules_yaml, err, errlen);
	if (r) {
		process_finder__free(pf);
		errno = -r;
		return NULL;
	}
	return pf;
}

struct process_finder *process_finder__free(struct process_finder *pf)
{
	if (!pf)
		return NULL;
	for (unsigned i = 0; i < pf->n_rules; i++)
		if (pf->rules[i].re_ok)
			regfree(&pf->rules[i].re);
	/* a rule whose regex compiled but whose template failed */
	if (pf->n_rules < MAX_RULES && pf->rules[pf->n_rules].re_ok)
		regfree(&pf->rules[pf->n_rules].re);
	for (unsigned i = 0; i < pf->n; i++)
		free(pf->v[i]);
	free(pf->v);
	free(pf->seen);
	free(pf);
	return NULL;
}

unsigned process_finder__count(const struct process_finder *pf) { return pf->n; }
struct pf_process *process_finder__at(struct process_finder *pf, unsigned i) { return i < pf->n ? pf->v[i] : NULL; }

struct pf_process *process_finder__by_oap_id(struct process_finder *pf, const char *oap_id)
{
	for (unsigned i = 0; i < pf->n; i++)
		if (pf->v[i]->status == PF_REPORTED && !strcmp(pf->v[i]->oap_id, oap_id))
			return pf->v[i];
	return NULL;
}

struct pf_process *process_finder__by_pid(struct process_finder *pf, uint32_t pid)
{
	for (unsigned i = 0; i < pf->n; i++)
		if (pf->v[i]->pid == pid)
			return pf->v[i];
	return NULL;
}

void process_finder__stats(const struct process_finder *pf, struct pf_stats *ret) { *ret = pf->st; }
