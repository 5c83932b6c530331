/*
 * A NETWORK task's sampling rules, the part of the codec (codec.h) that
 * decodes ExtensionConfigJSON's NetworkSamplings: untrusted JSON (json-c,
 * bounded by sw_codec__json_parse) and URI regexes that must compile with
 * regcomp, which is first kept from building a huge automaton
 * (common/regex_guard.h).
 */
#include <errno.h>
#include <json-c/json.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/regex_guard.h"
#include "exporter/skywalking/codec.h"

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -EINVAL)

/* What Go's decoder makes of a JSON value for a bool field: null is false. */
static int get_flag(struct json_object *v, bool *ret)
{
	if (!v) {
		*ret = false;
		return 0;
	}
	if (!json_object_is_type(v, json_type_boolean))
		return -EINVAL;
	*ret = json_object_get_boolean(v);
	return 0;
}

/* An int32 field (null: 0), negative values taken as 0 (Rover: "no minimum", "no bound"). */
static int get_u31(struct json_object *v, uint32_t *ret)
{
	int64_t x;

	if (!v) {
		*ret = 0;
		return 0;
	}
	if (!json_object_is_type(v, json_type_int))
		return -EINVAL;
	x = json_object_get_int64(v);	/* clamped to int64: beyond is out of range too */
	if (x > INT32_MAX || x < INT32_MIN)
		return -EINVAL;
	*ret = x < 0 ? 0 : (uint32_t)x;
	return 0;
}

static int decode_settings(struct json_object *o, struct sw_sampling *r, unsigned n, char *why, size_t whylen)
{
	if (!o)
		return 0;
	if (!json_object_is_type(o, json_type_object))
		return WHY("sampling rule %u: Settings is not an object", n);
	json_object_object_foreach(o, k, v) {
		int e = 0;

		if (!strcasecmp(k, "RequireCompleteRequest"))
			e = get_flag(v, &r->complete_request);
		else if (!strcasecmp(k, "RequireCompleteResponse"))
			e = get_flag(v, &r->complete_response);
		else if (!strcasecmp(k, "MaxRequestSize"))
			e = get_u31(v, &r->max_request_size);
		else if (!strcasecmp(k, "MaxResponseSize"))
			e = get_u31(v, &r->max_response_size);
		if (e)
			return WHY("sampling rule %u: Settings.%.32s is not %s", n, k,
				   strncasecmp(k, "Max", 3) ? "a boolean" : "an integer within int32");
	}
	return 0;
}

static int decode_uri_regex(struct json_object *v, struct sw_sampling *r, unsigned n, char *why, size_t whylen)
{
	const char *re;
	regex_t rx;
	int len, e;

	if (!v) {
		r->uri_regex[0] = 0;
		return 0;
	}
	if (!json_object_is_type(v, json_type_string))
		return WHY("sampling rule %u: URIRegex is not a string", n);
	re = json_object_get_string(v);
	len = json_object_get_string_len(v);
	if (len < 0 || (size_t)len >= SW_MAX_URI_REGEX)
		return WHY("sampling rule %u: URIRegex longer than %d bytes", n, SW_MAX_URI_REGEX - 1);
	if (strlen(re) != (size_t)len)
		return WHY("sampling rule %u: URIRegex holds a NUL", n);
	if (regex_guard__too_heavy(re))
		return WHY("sampling rule %u: URIRegex '%.40s' repeats too much (one repetition per atom, up to {%d}, "
			   "weight %d)", n, re, REGEX_GUARD_MAX_REPEAT, REGEX_GUARD_MAX_WEIGHT);
	if (re[0]) {
		e = regcomp(&rx, re, REG_EXTENDED | REG_NOSUB);
		if (e) {
			char msg[64];

			regerror(e, &rx, msg, sizeof(msg));
			return WHY("sampling rule %u: URIRegex '%.48s' does not compile: %s", n, re, msg);
		}
		regfree(&rx);
	}
	memcpy(r->uri_regex, re, (size_t)len + 1);
	return 0;
}

static int decode_rule(struct json_object *o, struct sw_sampling *r, unsigned n, char *why, size_t whylen)
{
	uint32_t min;
	int e;

	memset(r, 0, sizeof(*r));
	if (!json_object_is_type(o, json_type_object))
		return WHY("sampling rule %u is not an object", n);
	json_object_object_foreach(o, k, v) {
		if (!strcasecmp(k, "URIRegex")) {
			if ((e = decode_uri_regex(v, r, n, why, whylen)))
				return e;
		} else if (!strcasecmp(k, "MinDuration")) {
			if (get_u31(v, &min))
				return WHY("sampling rule %u: MinDuration is not an integer within int32", n);
			r->has_min_duration = v != NULL;
			r->min_duration_ms = min;
		} else if (!strcasecmp(k, "When4xx") || !strcasecmp(k, "When5xx")) {
			if (get_flag(v, k[4] == '4' ? &r->when_4xx : &r->when_5xx))
				return WHY("sampling rule %u: %.8s is not a boolean", n, k);
		} else if (!strcasecmp(k, "Settings")) {
			if ((e = decode_settings(v, r, n, why, whylen)))
				return e;
		}
	}
	return 0;
}

int sw_codec__decode_samplings(const char *json, struct sw_sampling *ret, unsigned max, char *why, size_t whylen)
{
	struct json_object *o = NULL, *list = NULL;
	size_t n;
	int r = 0;

	if (whylen)
		why[0] = 0;
	if (!json || sw_codec__json_parse(json, &o))
		return WHY("ExtensionConfigJSON is not valid JSON");
	if (!o)
		return 0;	/* null */
	if (!json_object_is_type(o, json_type_object)) {
		r = WHY("ExtensionConfigJSON is not an object");
		goto out;
	}
	json_object_object_foreach(o, k, v)
		if (!strcasecmp(k, "NetworkSamplings"))
			list = v;
	if (!list)
		goto out;
	if (!json_object_is_type(list, json_type_array)) {
		r = WHY("NetworkSamplings is not an array");
		goto out;
	}
	n = json_object_array_length(list);
	if (n > max) {
		r = WHY("%zu sampling rules (at most %u)", n, max);
		goto out;
	}
	for (size_t i = 0; i < n && !r; i++)
		r = decode_rule(json_object_array_get_idx(list, i), &ret[i], (unsigned)i + 1, why, whylen);
	if (!r)
		r = (int)n;
out:
	json_object_put(o);
	return r;
}
