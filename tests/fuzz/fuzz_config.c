/*
 * Arbitrary bytes as a YAML configuration: never a crash, a leak or a hang;
 * a rejection always comes with a message and leaves the configuration as it
 * was; an accepted configuration dumps to YAML that loads back to the same
 * dump.  The first line of the input also drives the value parsers and
 * config__set, whose accepted values must format and parse back unchanged.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

static char *dump(const struct ember_config *c)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	if (config__dump(c, f, 0) != 0)
		abort();
	fclose(f);
	return buf;
}

static char *defaults_dump;

static void check_values(const char *s)
{
	char buf[64], err[256];
	uint64_t v, w;
	bool b;

	if (config__parse_duration(s, &v) == 0) {
		if (config__format_duration(v, buf, sizeof(buf)) < 0 || config__parse_duration(buf, &w) || v != w)
			abort();
	}
	if (config__parse_size(s, &v) == 0) {
		if (config__format_size(v, buf, sizeof(buf)) < 0 || config__parse_size(buf, &w) || v != w)
			abort();
	}
	(void)config__parse_bool(s, &b);

	/* "key=value" as --set would pass it */
	const char *eq = strchr(s, '=');
	if (eq && eq - s < 200) {
		char key[200];
		struct ember_config *c = config__new();

		if (!c)
			return;
		memcpy(key, s, eq - s);
		key[eq - s] = 0;
		err[0] = 0;
		if (config__set(c, key, eq + 1, err, sizeof(err)) != 0) {
			if (!err[0])
				abort();
		} else {
			char *one = dump(c);
			struct ember_config *d = config__new();

			if (!d || config__load_string(d, one, strlen(one), err, sizeof(err)) != 0) {
				fprintf(stderr, "--set %s: dump does not load back: %s\n", s, err);
				abort();
			}
			config__free(d);
			free(one);
		}
		config__free(c);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ember_config *c, *d;
	char err[512], line[256];
	size_t n;
	int r;

	if (!defaults_dump) {
		if (!(c = config__new()))
			return 0;
		defaults_dump = dump(c);
		config__free(c);
	}
	if (!(c = config__new()))
		return 0;
	err[0] = 0;
	r = config__load_string(c, (const char *)data, size, err, sizeof(err));
	if (r != 0) {
		char *now = dump(c);

		if (!err[0] || strcmp(now, defaults_dump) != 0) {
			fprintf(stderr, "rejection without message or with side effects: %s\n", err);
			abort();
		}
		free(now);
	} else {
		char *one = dump(c), *two;

		if (!(d = config__new()))
			abort();
		if (config__load_string(d, one, strlen(one), err, sizeof(err)) != 0) {
			fprintf(stderr, "dump does not load back: %s\n---\n%s", err, one);
			abort();
		}
		two = dump(d);
		if (strcmp(one, two) != 0) {
			fprintf(stderr, "dump changed on reload\n---\n%s---\n%s", one, two);
			abort();
		}
		free(one);
		free(two);
		config__free(d);
	}
	config__free(c);

	n = 0;
	while (n < size && n < sizeof(line) - 1 && data[n] != '\n' && data[n] != 0)
		n++;
	memcpy(line, data, n);
	line[n] = 0;
	check_values(line);
	return 0;
}
