/*
 * The stack kinds' windows: every flush interval the in-kernel aggregation
 * (collector/bpf_stacks.h) goes into the shards' rings, one record per
 * stack, then one window marker per stack kind, which the analyzer closes
 * that kind's window on.  With a stack task attached since the last window,
 * the maps flip and are read once every program still writing the old set
 * is done (an RCU grace period).  A waiter thread waits for it, so the loop
 * keeps forwarding network events meanwhile; without one, the loop waits.
 * A full ring drops the stack and counts it (the marker carries the count).
 */
#ifndef EMBER_COLLECTOR_STACK_DRAIN_H
#define EMBER_COLLECTOR_STACK_DRAIN_H

struct collector;
struct kinds_env;
struct stack_drain;

/* col's shards and counters, env's maps and its stacks_dirty; both outlive it.  NULL + errno. */
struct stack_drain *stack_drain__new(struct collector *col, struct kinds_env *env);
/* Accepts NULL.  A waiter thread, if one started, lives on with its two eventfds until the process ends. */
void stack_drain__free(struct stack_drain *d);

/*
 * Starts the waiter; after the privilege drop (capabilities are per thread,
 * and it must hold none).  Returns the fd that becomes readable when a grace
 * period is over (hand it to stack_drain__done), or -errno: the loop then
 * waits for each grace period itself.
 */
int stack_drain__start_waiter(struct stack_drain *d);

/* The flush timer: ends the window; a flip still waiting for its grace period is joined, not doubled. */
void stack_drain__tick(struct stack_drain *d);
/* Everything collected so far into the rings before it returns (a detach, the stop). */
void stack_drain__sync(struct stack_drain *d);
/* The done fd was readable: the flipped-out maps into the rings, then the markers. */
void stack_drain__done(struct stack_drain *d);

#endif
