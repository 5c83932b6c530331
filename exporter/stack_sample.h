/*
 * A profile's stack as ember's flame graphs name it, root first: the
 * process, its user frames outermost first, then its kernel frames marked
 * "_[k]" (the folded-stack convention renderers colour by).  Every backend
 * that draws or ships stacks names them this way.  The process is its name,
 * or with pid_root "[<pid>]<name>" under "[Pod]<pod uid>" and
 * "[Con]<container id, 12 digits>" frames for a containerised process
 * (gala-gopher's stackprobe convention, with ids where it has names).
 */
#ifndef EMBER_EXPORTER_STACK_SAMPLE_H
#define EMBER_EXPORTER_STACK_SAMPLE_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/ember.pb-c.h"

/* Frames kept per side (user, kernel); deeper stacks lose their innermost frames. */
#define STACK_SAMPLE_MAX_SIDE 128

struct stack_frames {
	const char *v[2 * STACK_SAMPLE_MAX_SIDE + 3];
	size_t n;
	bool truncated;			/* a side had more than STACK_SAMPLE_MAX_SIDE frames */
	char *kbuf[STACK_SAMPLE_MAX_SIDE];	/* the kernel names, allocated */
	size_t nk;
	char root[64], con[24], pod[80];
};

/* s's frames into f (released by stack_sample__release). */
void stack_sample__frames(const Ember__StackSample *s, bool pid_root, struct stack_frames *f);
void stack_sample__release(struct stack_frames *f);

#endif
