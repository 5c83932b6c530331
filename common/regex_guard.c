/* Refuses regular expressions whose compilation can exhaust memory or time: see regex_guard.h. */
#include "common/regex_guard.h"

#include <stdint.h>
#include <string.h>

static uint64_t rx_add(uint64_t a, uint64_t b) { return a + b > UINT32_MAX ? UINT32_MAX : a + b; }
static uint64_t rx_mul(uint64_t a, uint64_t b) { return b && a > UINT32_MAX / b ? UINT32_MAX : a * b; }

static uint64_t rx_seq(const char **pp, bool *bad, bool top);

/* "{m}", "{m,}", "{m,n}", "{,n}" at *pp: its largest count + 1, and *pp past it; 0 if there is none. */
static unsigned long rx_interval(const char **pp)
{
	const char *p = *pp + 1;
	unsigned long m = 0, n = 0;
	bool digits = false;

	for (; *p >= '0' && *p <= '9'; p++, digits = true)
		m = m > 100000 ? m : m * 10 + (unsigned long)(*p - '0');
	if (*p == ',')
		for (p++; *p >= '0' && *p <= '9'; p++, digits = true)
			n = n > 100000 ? n : n * 10 + (unsigned long)(*p - '0');
	if (*p != '}' || !digits)
		return 0;
	*pp = p + 1;
	return (m > n ? m : n) + 1;
}

static uint64_t rx_atom(const char **pp, bool *bad)
{
	const char *p = *pp;
	uint64_t w = 1;

	if (*p == '(') {
		p++;
		w = rx_add(rx_seq(&p, bad, false), 1);
		if (*p == ')')
			p++;
	} else if (*p == '[') {
		p++;
		if (*p == '^')
			p++;
		if (*p == ']')
			p++;
		while (*p && *p != ']') {
			const char *end;

			if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=') &&
			    (end = strchr(p + 2, p[1])) && end[1] == ']')
				p = end + 2;	/* [:alpha:] and the like */
			else
				p++;
		}
		if (*p)
			p++;
	} else {
		p += *p == '\\' && p[1] ? 2 : 1;
	}
	*pp = p;
	return w;
}

/* Alternatives up to the ')' closing a group (inside one) or the end; at the top an unmatched ')' is a
 * character, as glibc takes it. */
static uint64_t rx_seq(const char **pp, bool *bad, bool top)
{
	const char *p = *pp;
	uint64_t total = 0;

	while (*p && (top || *p != ')')) {
		uint64_t w;

		if (*p == '|') {
			p++;
			continue;
		}
		w = rx_atom(&p, bad);
		/* one repetition per atom, and RE2's lazy '?' after it: glibc spends
		 * exponential time on stacks like a??????++++++ */
		for (unsigned q = 0;; q++) {
			const char *after = p;
			unsigned long k = 0;

			if (*p == '*' || *p == '?' || *p == '+')
				after = p + 1;
			else if (*p != '{' || !(k = rx_interval(&after)))
				break;	/* not a repetition (a plain '{' either) */
			*bad |= q > 1 || (q == 1 && *p != '?');
			if (*p == '{') {
				*bad |= k > REGEX_GUARD_MAX_REPEAT + 1;
				w = rx_mul(w, k);
			} else {
				w = *p == '+' ? rx_mul(w, 2) : rx_add(w, 1);	/* x+ is built as x x* */
			}
			p = after;
		}
		total = rx_add(total, w);
	}
	*pp = p;
	return total;
}

bool regex_guard__too_heavy(const char *re)
{
	const char *p = re;
	bool bad = false;
	uint64_t w = rx_seq(&p, &bad, true);

	/* whatever glibc applies an interval to, none may be larger */
	for (p = strchr(re, '{'); p && !bad; p = strchr(p + 1, '{')) {
		const char *q = p;

		bad = rx_interval(&q) > REGEX_GUARD_MAX_REPEAT + 1;
	}
	return bad || w > REGEX_GUARD_MAX_WEIGHT;
}

