/* A profile's stack, root first: see stack_sample.h. */
#include "exporter/stack_sample.h"

#include <stdio.h>
#include <stdlib.h>

void stack_sample__frames(const Ember__StackSample *s, bool pid_root, struct stack_frames *f)
{
	size_t nk = s->n_kernel_frames, nu = s->n_user_frames;

	f->n = 0;
	f->truncated = nk > STACK_SAMPLE_MAX_SIDE || nu > STACK_SAMPLE_MAX_SIDE;
	nk = nk > STACK_SAMPLE_MAX_SIDE ? STACK_SAMPLE_MAX_SIDE : nk;
	nu = nu > STACK_SAMPLE_MAX_SIDE ? STACK_SAMPLE_MAX_SIDE : nu;
	if (pid_root && s->pod_id && *s->pod_id) {
		snprintf(f->pod, sizeof(f->pod), "[Pod]%.64s", s->pod_id);
		f->v[f->n++] = f->pod;
	}
	if (pid_root && s->container_id && *s->container_id) {
		snprintf(f->con, sizeof(f->con), "[Con]%.12s", s->container_id);
		f->v[f->n++] = f->con;
	}
	f->v[f->n] = s->process_name && *s->process_name ? s->process_name : "[unknown]";
	if (pid_root) {
		snprintf(f->root, sizeof(f->root), "[%u]%s", s->pid, f->v[f->n]);
		f->v[f->n] = f->root;
	}
	f->n++;
	for (size_t j = nu; j-- > 0;)
		f->v[f->n++] = s->user_frames[j];
	f->nk = nk;
	for (size_t j = nk; j-- > 0;) {
		if (asprintf(&f->kbuf[j], "%s_[k]", s->kernel_frames[j]) < 0)
			f->kbuf[j] = NULL;
		f->v[f->n++] = f->kbuf[j] ? f->kbuf[j] : "[unknown]_[k]";
	}
}

void stack_sample__release(struct stack_frames *f)
{
	for (size_t j = 0; j < f->nk; j++)
		free(f->kbuf[j]);
	f->nk = 0;
}
