/*
 * Bytes from the network (HTTP bodies, URIs, trace headers) made into text
 * that a JSON file and a protobuf string may carry: protobuf's proto3
 * `string` must be UTF-8 (the OAP's Java decoder and Python's refuse the
 * whole message otherwise) and a JSON writer passes bytes >= 0x80 through
 * as they are.  No I/O, no logging.
 */
#ifndef EMBER_EXPORTER_UTF8_H
#define EMBER_EXPORTER_UTF8_H

#include <stddef.h>

/* Length of the well-formed UTF-8 character at s (RFC 3629: shortest form,
 * no surrogates, <= U+10FFFF), or 0 when s[0..n) does not start with one. */
size_t utf8__char_len(const unsigned char *s, size_t n);

/*
 * s[0..n) as a NUL-terminated, malloc'ed UTF-8 string: well-formed
 * characters are kept, and every byte that does not start one (and every
 * NUL) becomes U+FFFD.  *ret_len (may be NULL) gets the result's length;
 * *ret_replaced (may be NULL) how many bytes were replaced.  NULL + ENOMEM.
 */
char *utf8__sanitize(const void *s, size_t n, size_t *ret_len, size_t *ret_replaced);

#endif
