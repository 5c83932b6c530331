/*
 * Test helpers shared by the symbolizer unit tests (test_symbolizer.c,
 * test_symbolizer_depth.c): a temp dir the group setup builds real test
 * binaries into, shell commands, and child processes that print the
 * addresses of known functions ("<key> <hex>" lines, then "ready") and wait
 * on stdin until reaped.  Header-only: each test is one translation unit.
 */
#ifndef EMBER_TESTS_SYM_TESTLIB_H
#define EMBER_TESTS_SYM_TESTLIB_H

#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

/* Where the group setup builds; removed by group_teardown(). */
static char tmpdir[256];

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd) == 0 ? 0 : -1;
}

/* Whether a shell command (a tool's version query) runs successfully. */
static inline bool tool(const char *cmd)
{
	return run("%s >/dev/null 2>&1", cmd) == 0;
}

static inline void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", tmpdir, name);
}

static inline int write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

/* Creates tmpdir from a mkdtemp() template such as "/tmp/ember-x-XXXXXX". */
static inline int make_tmpdir(const char *tmpl)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s", tmpl);
	return mkdtemp(tmpdir) ? 0 : -1;
}

static inline int group_teardown(void **state)
{
	(void)state;
	if (tmpdir[0])
		run("rm -rf '%s'", tmpdir);
	return 0;
}

struct child {
	pid_t pid;
	int in;         /* child's stdin: closing it ends the child */
	FILE *out;
	uint64_t alpha, beta, gamma, delta, local;
};

/* Runs tmpdir/name and reads the addresses it prints until "ready". */
static inline int spawn(const char *name, struct child *c)
{
	int pin[2], pout[2];
	char path[512], line[256];

	memset(c, 0, sizeof(*c));
	path_of(path, sizeof(path), name);
	if (pipe2(pin, O_CLOEXEC) || pipe2(pout, O_CLOEXEC))
		return -1;
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		dup2(pin[0], 0);
		dup2(pout[1], 1);
		execl(path, path, (char *)NULL);
		_exit(127);
	}
	close(pin[0]);
	close(pout[1]);
	c->in = pin[1];
	c->out = fdopen(pout[0], "r");
	if (!c->out)
		return -1;
	while (fgets(line, sizeof(line), c->out)) {
		char key[32];
		uint64_t v;

		if (!strncmp(line, "ready", 5))
			return 0;
		/* %x takes the hex with or without 0x (C's %p vs Go's and Rust's %x). */
		if (sscanf(line, "%31s %" SCNx64, key, &v) != 2)
			continue;
		if (!strcmp(key, "alpha"))
			c->alpha = v;
		else if (!strcmp(key, "beta"))
			c->beta = v;
		else if (!strcmp(key, "gamma"))
			c->gamma = v;
		else if (!strcmp(key, "delta"))
			c->delta = v;
		else if (!strcmp(key, "local"))
			c->local = v;
	}
	return -1;
}

static inline void reap(struct child *c)
{
	int st;

	if (c->in > 0)
		close(c->in);
	if (c->out)
		fclose(c->out);
	if (c->pid > 0)
		waitpid(c->pid, &st, 0);
	memset(c, 0, sizeof(*c));
}

/* Build id of a file as hex, from readelf (independent of our note parser). */
static inline int oracle_build_id(const char *path, char *hex, size_t len)
{
	char cmd[600], line[512];
	FILE *p;
	int r = -1;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof(line), p)) {
		char *b = strstr(line, "Build ID: ");

		if (b && sscanf(b + 10, "%127s", hex) == 1 && strlen(hex) < len) {
			r = 0;
			break;
		}
	}
	pclose(p);
	return r;
}

/* A memfd holding data, positioned at 0 (for the fd-taking parsers). */
static inline int memfd_with(const void *data, size_t len)
{
	int fd = memfd_create("symtest", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (len && write(fd, data, len) != (ssize_t)len) {
		close(fd);
		return -1;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

#endif
