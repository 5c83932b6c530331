/*
 * How the network files (exporter/net_report, exporter/net_sampled) write
 * times: durations in ms with 3 decimals, instants in UTC to the ms, both
 * in text and as JSON numbers written as such; and how they read their own
 * JSON back, and writes one JSON object as one line.  No logging.
 */
#ifndef EMBER_EXPORTER_NET_FORMAT_H
#define EMBER_EXPORTER_NET_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct json_object;

/* "12.345" for 12345678 ns. */
void net_format__ms(uint64_t ns, char *buf, size_t len);
/* "2023-11-14T22:13:20.000Z" for a unix time in ns; "-" for 0. */
void net_format__utc(uint64_t ns, char *buf, size_t len);
/* Adds key: ns as ms with 3 decimals, written as such (not as the nearest double's 17 digits). */
void net_format__put_ms(struct json_object *o, const char *key, uint64_t ns);
/* A member of o read back: its number (0 if absent) / its string ("" if absent or not a string). */
uint64_t net_format__get_u64(struct json_object *o, const char *key);
const char *net_format__get_str(struct json_object *o, const char *key);
/* Writes o (NULL: out of memory) as one JSON line and frees it.  0 or -ENOMEM. */
int net_format__write_line(struct json_object *o, FILE *out);

/*
 * One JSON object written straight into a line, for the lines a report has
 * by the thousand (an exchange each): the bytes json-c writes for the same
 * members added in the same order (net_format__write_line: plain, '/' not
 * escaped, other bytes as json-c escapes them), without an object tree.
 * Keys are the caller's literals (never escaped); values are escaped.  One
 * nested object at a time.  The buffer is kept across lines.
 */
struct net_line {
	char *buf;
	size_t len, cap;
	int nomem;
	int depth;
	int first[2];
};
void net_line__begin(struct net_line *l);
void net_line__str(struct net_line *l, const char *key, const char *v);
void net_line__u64(struct net_line *l, const char *key, uint64_t v);
void net_line__int(struct net_line *l, const char *key, int32_t v);
void net_line__bool(struct net_line *l, const char *key, int v);
/* ns as ms with 3 decimals (net_format__put_ms). */
void net_line__ms(struct net_line *l, const char *key, uint64_t ns);
void net_line__obj_begin(struct net_line *l, const char *key);
void net_line__obj_end(struct net_line *l);
/* Ends the object and writes it as one line.  0, or -ENOMEM (nothing written). */
int net_line__write(struct net_line *l, FILE *out);
void net_line__free(struct net_line *l);

#endif
