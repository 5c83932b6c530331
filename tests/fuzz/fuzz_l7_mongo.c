/* libFuzzer target: the mongo parser with random splits, both directions and gaps (see l7_fuzz.h). */
#include "tests/fuzz/l7_fuzz.h"

extern const struct l7_parser_ops l7_mongo_ops;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_l7_run(&l7_mongo_ops, data, size);
}
