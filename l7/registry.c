#include "l7/l7.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <stddef.h>

/*
 * Every parser, in detection order (more specific signatures first).
 * Adding a protocol: one extern and one table line here.
 */
/* L7_EXTERNS_BEGIN */
extern const struct l7_parser_ops l7_http1_ops;
extern const struct l7_parser_ops l7_http2_ops;
extern const struct l7_parser_ops l7_dns_ops;
extern const struct l7_parser_ops l7_pgsql_ops;
extern const struct l7_parser_ops l7_mysql_ops;
extern const struct l7_parser_ops l7_mongo_ops;
extern const struct l7_parser_ops l7_cql_ops;
extern const struct l7_parser_ops l7_kafka_ops;
extern const struct l7_parser_ops l7_redis_ops;
/* L7_EXTERNS_END */

static const struct l7_parser_ops *const parsers[] = {
	/* L7_TABLE_BEGIN */
	&l7_http1_ops,
	&l7_http2_ops,
	&l7_dns_ops,
	&l7_pgsql_ops,
	&l7_mysql_ops,
	&l7_mongo_ops,
	&l7_cql_ops,
	&l7_kafka_ops,
	&l7_redis_ops,
	/* L7_TABLE_END */
	NULL,
};

const struct l7_parser_ops *l7__at(unsigned idx)
{
	return idx < sizeof(parsers) / sizeof(parsers[0]) ? parsers[idx] : NULL;
}

const struct l7_parser_ops *l7__find(const char *name)
{
	for (unsigned i = 0; parsers[i]; i++)
		if (!strcmp(parsers[i]->name, name))
			return parsers[i];
	return NULL;
}

void l7_record__init(struct l7_record *rec, const char *protocol)
{
	memset(rec, 0, offsetof(struct l7_record, fields));
	rec->protocol = protocol;
	rec->status = -1;
	rec->req_body = rec->resp_body = NULL;
	rec->req_body_len = rec->resp_body_len = 0;
}

int l7_record__add(struct l7_record *rec, const char *key, const char *fmt, ...)
{
	va_list ap;
	struct l7_field *f;

	if (rec->nfields >= L7_MAX_FIELDS)
		return -ENOSPC;
	f = &rec->fields[rec->nfields++];
	f->key = key;
	va_start(ap, fmt);
	vsnprintf(f->val, sizeof(f->val), fmt, ap);
	va_end(ap);
	return 0;
}
