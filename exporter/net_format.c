#include "exporter/net_format.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int line_room(struct net_line *l, size_t n)
{
	size_t cap;
	char *b;

	if (l->nomem)
		return -1;
	if (l->len + n <= l->cap)
		return 0;
	cap = l->cap ? l->cap : 1024;
	while (cap < l->len + n)
		cap *= 2;
	b = realloc(l->buf, cap);
	if (!b) {
		l->nomem = 1;
		return -1;
	}
	l->buf = b;
	l->cap = cap;
	return 0;
}

static void line_put(struct net_line *l, const char *p, size_t n)
{
	if (line_room(l, n))
		return;
	memcpy(l->buf + l->len, p, n);
	l->len += n;
}

/* ,"key": */
static void line_key(struct net_line *l, const char *key)
{
	size_t n = strlen(key);

	if (line_room(l, n + 4))
		return;
	if (!l->first[l->depth])
		l->buf[l->len++] = ',';
	l->first[l->depth] = 0;
	l->buf[l->len++] = '"';
	memcpy(l->buf + l->len, key, n);
	l->len += n;
	l->buf[l->len++] = '"';
	l->buf[l->len++] = ':';
}

void net_line__begin(struct net_line *l)
{
	l->len = 0;
	l->nomem = 0;
	l->depth = 0;
	l->first[0] = 1;
	line_put(l, "{", 1);
}

void net_line__str(struct net_line *l, const char *key, const char *v)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)(v ? v : "");
	size_t n = strlen((const char *)p);

	line_key(l, key);
	/* at most 6 bytes per byte (\u00XX) and the quotes */
	if (line_room(l, 6 * n + 2))
		return;
	l->buf[l->len++] = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = p[i];
		char *o = l->buf + l->len;

		switch (c) {
		case '\b': o[0] = '\\'; o[1] = 'b'; l->len += 2; break;
		case '\n': o[0] = '\\'; o[1] = 'n'; l->len += 2; break;
		case '\r': o[0] = '\\'; o[1] = 'r'; l->len += 2; break;
		case '\t': o[0] = '\\'; o[1] = 't'; l->len += 2; break;
		case '\f': o[0] = '\\'; o[1] = 'f'; l->len += 2; break;
		case '"': o[0] = '\\'; o[1] = '"'; l->len += 2; break;
		case '\\': o[0] = '\\'; o[1] = '\\'; l->len += 2; break;
		default:
			if (c < ' ') {
				memcpy(o, "\\u00", 4);
				o[4] = hex[c >> 4];
				o[5] = hex[c & 15];
				l->len += 6;
			} else {
				o[0] = (char)c;
				l->len++;
			}
		}
	}
	l->buf[l->len++] = '"';
}

/* v in decimal at the end of b[24]; returns where it starts (snprintf was most of a line's time). */
static char *dec(char b[24], uint64_t v)
{
	char *p = b + 24;

	do {
		*--p = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	return p;
}

void net_line__u64(struct net_line *l, const char *key, uint64_t v)
{
	char b[24], *p = dec(b, v);

	line_key(l, key);
	line_put(l, p, (size_t)(b + 24 - p));
}

void net_line__int(struct net_line *l, const char *key, int32_t v)
{
	char b[24], *p = dec(b, v < 0 ? (uint64_t)-(int64_t)v : (uint64_t)v);

	if (v < 0)
		*--p = '-';
	line_key(l, key);
	line_put(l, p, (size_t)(b + 24 - p));
}

void net_line__bool(struct net_line *l, const char *key, int v)
{
	line_key(l, key);
	line_put(l, v ? "true" : "false", v ? 4 : 5);
}

void net_line__ms(struct net_line *l, const char *key, uint64_t ns)
{
	char b[24], *p = dec(b, ns / 1000000), frac[4];
	uint64_t us = ns / 1000 % 1000;

	line_key(l, key);
	line_put(l, p, (size_t)(b + 24 - p));
	frac[0] = '.';
	frac[1] = (char)('0' + us / 100);
	frac[2] = (char)('0' + us / 10 % 10);
	frac[3] = (char)('0' + us % 10);
	line_put(l, frac, 4);
}

void net_line__obj_begin(struct net_line *l, const char *key)
{
	line_key(l, key);
	line_put(l, "{", 1);
	if (l->depth < 1)
		l->depth++;
	l->first[l->depth] = 1;
}

void net_line__obj_end(struct net_line *l)
{
	line_put(l, "}", 1);
	if (l->depth > 0)
		l->depth--;
}

int net_line__write(struct net_line *l, FILE *out)
{
	line_put(l, "}\n", 2);
	if (l->nomem)
		return -ENOMEM;
	fwrite(l->buf, 1, l->len, out);
	return 0;
}

void net_line__free(struct net_line *l)
{
	free(l->buf);
	*l = (struct net_line){ 0 };
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
