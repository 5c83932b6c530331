#include "symbolizer/tables.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int tables__grow(void *pptr, size_t elem, size_t *cap, size_t init)
{
	size_t ncap = *cap ? *cap * 2 : init;
	void *p, *t;

	/* Through memcpy: *pptr is a pointer of the caller's element type, not void *. */
	memcpy(&p, pptr, sizeof(p));
	t = reallocarray(p, ncap, elem);
	if (!t)
		return -ENOMEM;
	memcpy(pptr, &t, sizeof(t));
	*cap = ncap;
	return 0;
}

int tables__add_string(struct str_arena *a, const char *s, size_t len, size_t init_cap, size_t max_cap,
		       size_t *ret_off)
{
	size_t need = len + 1;

	if (a->cap - a->len < need) {
		size_t ncap = a->cap ? a->cap : init_cap;
		char *t;

		while (ncap - a->len < need)
			ncap *= 2;
		if (ncap > max_cap)
			return -E2BIG;
		t = realloc(a->buf, ncap);
		if (!t)
			return -ENOMEM;
		a->buf = t;
		a->cap = ncap;
	}
	memcpy(a->buf + a->len, s, len);
	a->buf[a->len + len] = '\0';
	*ret_off = a->len;
	a->len += need;
	return 0;
}
