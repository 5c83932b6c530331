/*
 * The executable-mapping manager: one watcher per followed process, one read
 * of its maps per look, each file examined once per consumer however many
 * processes map it, and the consumers (the unwinder, the TLS finder; runtime
 * frames later) as handlers.
 *
 * A consumer registers a struct mappings_handler and follows the processes it
 * wants (mappings__follow(): a pid, a tag of its own such as a task id, and
 * whether the slow timer looks at it).  A look at a process (at a task's
 * start, on a fork, exec or mmap event, and every period_ms for the
 * subscriptions that asked for the timer) reads its maps once through the
 * opener in mappings_opts (the collector's fd broker in the analyzer: it
 * opens /proc/<pid>/maps and /proc/<pid>/map_files/<range> itself, with its
 * checks of symlinks, owners and stale mappings), then for each subscription
 * of the process: begin; when its executable mappings changed since that
 * subscription's last look (proc_maps__exec_signature()), attach for each
 * mapping the handler wants, with the data examine made of its file; then
 * end, whose result goes to report.
 *
 * Files are keyed by device and inode (as the maps line names them, so a
 * known file is not opened again): a file is opened, through the mapping that
 * shows it, only when a handler has not examined it yet.  What examine makes
 * is kept until the cache of max_files is full (then everything is examined
 * again) or the handler asks for it again (attach returns -ESTALE).  A file
 * replaced in place under the same device and inode keeps its old data until
 * then.
 *
 * A handler's failure (examine or attach returning -errno) is counted per
 * handler and never stops the other handlers or the other mappings.
 *
 * The symbolizer is not a handler: it is a library below the analyzer that
 * reads the maps of any process whose stacks reach it, on demand (an address
 * outside every mapping it knows, at most every 250 ms), including processes
 * no task follows and processes that have exited; see symbolizer/README.md.
 *
 * Not thread-safe.  Library code: no logging.
 */
#ifndef EMBER_ANALYZER_MAPPINGS_H
#define EMBER_ANALYZER_MAPPINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/counters.h"
#include "symbolizer/maps.h"

#define MAPPINGS_MAX_HANDLERS 8
#define MAPPINGS_MAX_SUBS 8            /* subscriptions per process */

/* mappings__follow() flags */
#define MAPPINGS_F_TIMER 0x1           /* the slow timer looks at it too (else only looks asked for) */

struct mappings_opts {
	void *ctx;
	/* An O_RDONLY fd of pid's maps, or -errno.  Closed here. */
	int (*open_maps)(void *ctx, uint32_t pid);
	/* An O_RDONLY fd of the file pid maps at [start, end) (the mapping's, not a path), or -errno.  Closed here. */
	int (*open_file)(void *ctx, uint32_t pid, uint64_t start, uint64_t end);
	uint32_t max_files;    /* files remembered (0: 4096) */
	uint32_t max_procs;    /* processes followed (0: 4096) */
	uint32_t period_ms;    /* the slow timer (0: 2000) */
};

/* One look at one process for one subscription. */
struct mappings_look {
	uint32_t pid;
	uint64_t tag;
	int err;          /* 0, or -errno: the maps could not be read (then no attach) */
	size_t nmaps;     /* mappings read; 0: a process without memory (a zombie) */
	bool changed;     /* the executable mappings differ from the last look's: attach was called for each wanted */
	bool again;       /* a handler sets it: the next look counts as a change whatever the mappings */
};

struct mappings_handler {
	const char *name;
	void *ctx;
	/* Before the maps are read: nonzero declines this look (the look's result then).  NULL: 0. */
	int (*begin)(void *ctx, struct mappings_look *l);
	/* Whether the handler looks at mapping e (called in address order, during a change).  NULL: every one. */
	bool (*wants)(void *ctx, const struct mappings_look *l, const struct maps_entry *e);
	/*
	 * The file open at fd (opened for this call through the mapping e of
	 * some process; closed after it), examined: *ret_data (NULL: nothing of
	 * interest) is given to attach for every mapping of this file.  0 or
	 * -errno (counted; the file is then attached with NULL data).  NULL:
	 * files are not opened.
	 */
	int (*examine)(void *ctx, int fd, const struct maps_entry *e, void **ret_data);
	/*
	 * A wanted mapping e of l's process, during a change.  data: what
	 * examine made of its file (borrowed until attach returns), NULL when
	 * it is not a file, is deleted, or examine found nothing; open_err: the
	 * file could not be opened to be examined (-errno; tried again at the
	 * next look that needs it).  0, -ESTALE (data is out of date: examined
	 * again, then attached again), or -errno (counted).
	 */
	int (*attach)(void *ctx, struct mappings_look *l, const struct maps_entry *e, void *data, int open_err);
	/* After every look not declined, changed or not: its result (given to report).  NULL: l->err. */
	int (*end)(void *ctx, struct mappings_look *l);
	/* The subscription (pid, tag) ended (mappings__unfollow*()).  NULL: nothing. */
	void (*detach)(void *ctx, uint32_t pid, uint64_t tag);
	/* Frees what examine made (never NULL data). */
	void (*release)(void *ctx, void *data);
	/* Optional, the owner's (to log): a look's result and how long the look took until then. */
	void (*report)(void *report_ctx, const struct mappings_look *l, int result, uint64_t elapsed_ns);
	void *report_ctx;
};

struct mappings_stats {
	uint64_t looks;            /* maps read (or tried) */
	uint64_t maps_errors;      /* ... that could not be read */
	uint64_t procs;            /* processes followed now */
	uint64_t files;            /* files remembered now */
	uint64_t files_cleared;    /* times the file cache was full and emptied */
	uint64_t follow_refused;   /* follows refused: too many processes or subscriptions */
	uint64_t open_errors;      /* files that could not be opened to be examined */
	struct {
		uint64_t examined;     /* examine calls */
		uint64_t attached;     /* attach calls */
		uint64_t failures;     /* examine or attach returned -errno (-ESTALE twice in a row included) */
	} h[MAPPINGS_MAX_HANDLERS];
};

struct mappings;
struct ctl_client;

/* Fills *ret (zeroed first) with openers through the collector's fd broker (cc borrowed). */
void mappings__broker_opts(struct ctl_client *cc, struct mappings_opts *ret);
/* NULL + errno. */
struct mappings *mappings__new(const struct mappings_opts *o);
/* Registers h (copied).  Its id (>= 0), or -errno. */
int mappings__add_handler(struct mappings *m, const struct mappings_handler *h);
/*
 * Handler hid follows pid under tag (its own: a task's id, 0...).  Following
 * again adds flags.  Nothing is read here: mappings__look() reads.  0 or
 * -errno (-ENOSPC: too many processes or subscriptions, counted).
 */
int mappings__follow(struct mappings *m, int hid, uint32_t pid, uint64_t tag, unsigned flags);
/* Ends (hid, pid, tag) (detach is called); the process is forgotten with its last subscription. */
void mappings__unfollow(struct mappings *m, int hid, uint32_t pid, uint64_t tag);
/* Ends every subscription of hid under tag. */
void mappings__unfollow_tag(struct mappings *m, int hid, uint64_t tag);
/* Looks at pid now for each of its subscriptions.  0, or -ENOENT when nothing follows it. */
int mappings__look(struct mappings *m, uint32_t pid);
/*
 * A mapping event of pid (an mmap that chose its address: a library's code
 * is mapped just after): mappings__tick() looks MAPPINGS_SETTLE_MS later,
 * one look for the events until then, and again after a look that followed
 * an event by less than that, MAPPINGS_SETTLE_MS later the first
 * MAPPINGS_QUICK_LOOKS times in a row, then MAPPINGS_LOOK_GAP_MS: the last
 * library of a burst is always seen, and a process mapping memory all the
 * time is read a few times a second.  now_ms: the clock mappings__tick() is
 * given.  0, or -ENOENT when nothing follows pid.
 */
#define MAPPINGS_SETTLE_MS 2
#define MAPPINGS_QUICK_LOOKS 3
#define MAPPINGS_LOOK_GAP_MS 100
int mappings__look_soon(struct mappings *m, uint32_t pid, uint64_t now_ms);
/* When mappings__tick() has a look put off to make: UINT64_MAX for none. */
uint64_t mappings__next_due(const struct mappings *m);
/* Every period_ms: looks at each process for its timer subscriptions; and the looks mappings__look_soon() put off. */
void mappings__tick(struct mappings *m, uint64_t now_ms);
void mappings__stats(const struct mappings *m, struct mappings_stats *ret);

/*
 * The counters its owner publishes (common/counters.h), by enum
 * mappings_counter: struct mappings_stats with the handlers' summed (each
 * handler counts its own failures by cause too).
 */
enum mappings_counter {
	MAPC_LOOKS,              /* maps read (or tried) */
	MAPC_READ_ERRORS,        /* ... that could not be read */
	MAPC_PROCESSES,          /* a level: processes followed now */
	MAPC_FILES,              /* a level: files remembered now */
	MAPC_FILES_CLEARED,      /* times the file cache was full and emptied */
	MAPC_FOLLOW_REFUSED,     /* follows refused: too many processes or subscriptions */
	MAPC_OPEN_ERRORS,        /* files that could not be opened to be examined */
	MAPC_EXAMINED,           /* examine calls, every handler */
	MAPC_ATTACHED,           /* attach calls, every handler */
	MAPC_HANDLER_FAILURES,   /* examine or attach returned -errno, every handler */
	MAPC_MAX
};
extern const struct counter_def mappings_counters[MAPC_MAX];
void mappings__counters(const struct mappings *m, uint64_t ret[MAPC_MAX]);
/* Releases every file's data.  Accepts NULL.  Returns NULL. */
struct mappings *mappings__free(struct mappings *m);

#endif
