/*
 * Fuzzes the decoding of a NETWORK task's ExtensionConfigJSON (untrusted:
 * it comes from the OAP) by sw_codec__decode_samplings: the bytes are the
 * JSON text.  Never a crash, a leak or a hang (a regex that would make
 * regcomp build a huge automaton is refused first); a refusal comes with a
 * reason; every rule decoded keeps the header's promises (its regex
 * compiles, its numbers fit int32), and the rules written back as JSON
 * decode to the same rules.
 */
#include <assert.h>
#include <errno.h>
#include <json-c/json.h>
#include <regex.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/skywalking/codec.h"

static void check_rule(const struct sw_sampling *r)
{
	size_t n = strlen(r->uri_regex);
	regex_t rx;

	assert(n < SW_MAX_URI_REGEX);
	if (n) {
		assert(regcomp(&rx, r->uri_regex, REG_EXTENDED | REG_NOSUB) == 0);
		regfree(&rx);
	}
	assert(r->min_duration_ms <= INT32_MAX && (r->has_min_duration || !r->min_duration_ms));
	assert(r->max_request_size <= INT32_MAX && r->max_response_size <= INT32_MAX);
}

static void roundtrip(const struct sw_sampling *r, int n)
{
	struct json_object *top = json_object_new_object(), *list = json_object_new_array();
	struct sw_sampling u[SW_MAX_SAMPLINGS];
	char why[160];

	assert(top && list);
	for (int i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object(), *s = json_object_new_object();

		assert(o && s);
		if (r[i].uri_regex[0])
			json_object_object_add(o, "URIRegex", json_object_new_string(r[i].uri_regex));
		if (r[i].has_min_duration)
			json_object_object_add(o, "MinDuration", json_object_new_int64(r[i].min_duration_ms));
		json_object_object_add(o, "When4xx", json_object_new_boolean(r[i].when_4xx));
		json_object_object_add(o, "When5xx", json_object_new_boolean(r[i].when_5xx));
		json_object_object_add(s, "RequireCompleteRequest", json_object_new_boolean(r[i].complete_request));
		json_object_object_add(s, "MaxRequestSize", json_object_new_int64(r[i].max_request_size));
		json_object_object_add(s, "RequireCompleteResponse", json_object_new_boolean(r[i].complete_response));
		json_object_object_add(s, "MaxResponseSize", json_object_new_int64(r[i].max_response_size));
		json_object_object_add(o, "Settings", s);
		json_object_array_add(list, o);
	}
	json_object_object_add(top, "NetworkSamplings", list);
	assert(sw_codec__decode_samplings(json_object_to_json_string_ext(top, JSON_C_TO_STRING_PLAIN), u,
					  SW_MAX_SAMPLINGS, why, sizeof(why)) == n);
	assert(!memcmp(r, u, (size_t)n * sizeof(*r)));
	json_object_put(top);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sw_sampling r[SW_MAX_SAMPLINGS];
	char why[160], *text = malloc(size + 1);
	int n;

	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = 0;
	memset(why, 'x', sizeof(why));
	n = sw_codec__decode_samplings(text, r, SW_MAX_SAMPLINGS, why, sizeof(why));
	assert(n == -EINVAL || (n >= 0 && n <= SW_MAX_SAMPLINGS));
	assert(memchr(why, 0, sizeof(why)));
	if (n == -EINVAL)
		assert(why[0]);
	for (int i = 0; i < n; i++)
		check_rule(&r[i]);
	if (n > 0)
		roundtrip(r, n);
	free(text);
	return 0;
}
