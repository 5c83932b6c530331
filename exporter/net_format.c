#include "exporter/net_format.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <time.h>

void net_format__ms(uint64_t ns, char *buf, size_t len)
{
	snprintf(buf, len, "%llu.%03llu", (unsigned long long)(ns / 1000000), (unsigned long long)(ns / 1000 % 1000));
}

void net_format__utc(uint64_t ns, char *buf, size_t len)
{
	time_t s = (time_t)(ns / 1000000000ull);
	struct tm tm;
	char d[32];

	if (!ns || !gmtime_r(&s, &tm)) {
		snprintf(buf, len, "-");
		return;
	}
	strftime(d, sizeof(d), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03lluZ", d, (unsigned long long)(ns / 1000000 % 1000));
}

void net_format__put_ms(struct json_object *o, const char *key, uint64_t ns)
{
	char buf[32];

	net_format__ms(ns, buf, sizeof(buf));
	json_object_object_add(o, key, json_object_new_double_s((double)ns / 1e6, buf));
}

uint64_t net_format__get_u64(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) ? json_object_get_uint64(v) : 0;
}

const char *net_format__get_str(struct json_object *o, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string) ?
		       json_object_get_string(v) : "";
}

int net_format__write_line(struct json_object *o, FILE *out)
{
	const char *s;

	if (!o)
		return -ENOMEM;
	s = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
	if (s) {
		fputs(s, out);
		fputc('\n', out);
	}
	json_object_put(o);
	return s ? 0 : -ENOMEM;
}
