/*
 * Host process discovery for the SkyWalking backend, configured like Rover's
 * host "scanner" finder (spec sections 4.2 and 6.2):
 *
 *   REGEX mode         each process command line is matched against the rules
 *                      of process_discovery.scanner.regex in order, the first
 *                      match wins; layer, service, instance and process names
 *                      are templates ({{.Process.ExeName}}, {{.Rover.HostIPV4
 *                      "eth0"}}, {{.Finder.RegexMatchGroup 1}} ...).
 *   AGENT_SENSOR mode  a process described by a fresh
 *                      <tmp>/apache_skywalking/process/<pid>/metadata.properties
 *                      (written by a SkyWalking language agent).
 *
 * It reads /proc (or a copy under another root, for tests and for
 * ROVER_HOST_PROC_MAPPING).  The exporter is unprivileged: /proc/<pid>/exe
 * and cwd of other users' processes are unreadable; the finder falls back to
 * the command line and counts it.  Processes keep their record across scans
 * (keyed by pid and start time) so the caller can attach its report state.
 * No logging; errors and drops are counted.
 */
#ifndef EMBER_COMMON_PROCESS_FINDER_H
#define EMBER_COMMON_PROCESS_FINDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PF_NAME_MAX    71	/* 70 characters (the OAP's default limit) + NUL */
#define PF_LAYER_MAX   64
#define PF_MAX_LABELS  8
#define PF_LABEL_MAX   64
#define PF_CMDLINE_MAX 1024
#define PF_PATH_MAX    512
#define PF_OAP_ID_MAX  128

enum pf_mode { PF_MODE_AGENT_SENSOR = 0, PF_MODE_REGEX = 1 };	/* = enum config_scanner_mode */
enum pf_status { PF_NEW = 0, PF_REPORTED, PF_IGNORED };

struct pf_entity {
	char layer[PF_LAYER_MAX];
	char service[PF_NAME_MAX];
	char instance[PF_NAME_MAX];
	char process[PF_NAME_MAX];
	char labels[PF_MAX_LABELS][PF_LABEL_MAX];
	unsigned n_labels;
};

struct pf_process {
	uint32_t pid;
	uint64_t start_ticks;		/* /proc/<pid>/stat field 22: tells a reused pid apart */
	struct pf_entity e;
	char cmdline[PF_CMDLINE_MAX];	/* arguments joined by spaces */
	char exe[PF_PATH_MAX];		/* executable path, may be empty */
	char container_id[80];
	bool exe_guessed;		/* exe is the command's first word: /proc/<pid>/exe was unreadable */
	bool support_ebpf;		/* ember can profile it (process_finder__exe_profilable, never_uids) */
	/* the caller's state */
	enum pf_status status;
	char oap_id[PF_OAP_ID_MAX];
};

struct pf_opts {
	const char *proc_root;		/* NULL: "/proc" */
	const char *tmp_root;		/* AGENT_SENSOR: NULL: "/tmp" */
	enum pf_mode mode;
	const char *rules_yaml;		/* process_discovery.scanner.regex (YAML sequence text) */
	uint64_t agent_refresh_ms;	/* AGENT_SENSOR: metadata files older than this are ignored */
	const char *instance_id;	/* {{.Rover.InstanceID}} */
	const char *hostname;		/* {{.Rover.HostName}}; NULL: gethostname() */
	unsigned max_processes;		/* 0: 4096 */
	/* Processes of these users are reported unsupported: ember's own, which the collector never
	 * profiles (0 is ignored: root's processes are anyone's). */
	uint32_t never_uids[2];
};

struct pf_stats {
	uint64_t scans;
	uint64_t processes_seen;	/* last scan */
	uint64_t matched;		/* last scan */
	uint64_t unreadable;		/* /proc files we may not read (exe, cwd, cmdline...) */
	uint64_t duplicates;		/* a second process producing an already reported entity */
	uint64_t truncated;		/* names cut to 70 characters */
	uint64_t overflow;		/* processes beyond max_processes */
	uint64_t template_errors;
	uint64_t bad_metadata;		/* AGENT_SENSOR files that do not parse */
};

/* NULL + errno, with err naming the rule / template at fault. */
struct process_finder *process_finder__new(const struct pf_opts *o, char *err, size_t errlen);
/* Accepts NULL.  Returns NULL. */
struct process_finder *process_finder__free(struct process_finder *pf);

/* Rescans; processes that are gone are forgotten.  Returns the number tracked or -errno. */
int process_finder__scan(struct process_finder *pf);

unsigned process_finder__count(const struct process_finder *pf);
struct pf_process *process_finder__at(struct process_finder *pf, unsigned i);
struct pf_process *process_finder__by_oap_id(struct process_finder *pf, const char *oap_id);
struct pf_process *process_finder__by_pid(struct process_finder *pf, uint32_t pid);
void process_finder__stats(const struct process_finder *pf, struct pf_stats *ret);

/* Exposed for tests: render one template for a process; 0 or -EINVAL. */
int process_finder__render(struct process_finder *pf, const char *tmpl, const struct pf_process *p,
			   const char *const *groups, unsigned n_groups, char *out, size_t outlen);
/*
 * Whether ember can profile a process running this executable, as reported
 * in support_ebpf_profiling.  Unlike Rover, which refuses interpreters and
 * JIT runtimes by name (java, python, node, bash, ruby, ssh) and binaries
 * without symbols, ember profiles any user-space process: it walks stacks
 * with the .eh_frame tables of every mapping (frame pointers where there
 * are none), names frames from symbols, debug files, Go's pclntab and perf
 * maps, keeps an unnamed frame as module+offset, and follows off-CPU time
 * and network traffic of any process.  So the answer is no only for a file
 * that opens and is not ELF; a file the unprivileged exporter cannot open
 * is yes, since the collector reads it as root.
 */
bool process_finder__exe_profilable(const char *path);

#endif
