/*
 * Regular expressions from untrusted sources (the OAP's sampling rules and
 * continuous-profiling policies, a configuration) are compiled by glibc's
 * regcomp, which builds an automaton whose size grows with the repetition
 * bounds, nested ones multiplying: glibc takes seconds and gigabytes for
 * a{1,32767} alone, ".+++...+" (70 '+') or (((a|b?)+)+...)+ ten deep.
 * Before compiling one, its weight (every character and group 1, each
 * repeated subject counted bound times, twice for '+': x+ is built as x x*)
 * must stay under REGEX_GUARD_MAX_WEIGHT, each interval's bound under
 * REGEX_GUARD_MAX_REPEAT, and each atom takes one repetition (and RE2's lazy
 * '?' after it: glibc spends exponential time on stacks like a??????++++++).
 * URI and command-line patterns need far less.
 */
#ifndef EMBER_COMMON_REGEX_GUARD_H
#define EMBER_COMMON_REGEX_GUARD_H

#include <stdbool.h>

#define REGEX_GUARD_MAX_REPEAT 255
#define REGEX_GUARD_MAX_WEIGHT 1024

/* True when regcomp must not be given re. */
bool regex_guard__too_heavy(const char *re);

#endif
