/* libFuzzer target: the http2 parser fed random splits of both directions, gaps included. */
#include "tests/fuzz/l7_fuzz.h"

extern const struct l7_parser_ops l7_http2_ops;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_l7_run(&l7_http2_ops, data, size);
}
