/*
 * Arbitrary bytes as a REST API PUT body for each feature: never a
 * crash, a leak or a hang; a refusal comes with a message; what is accepted
 * is within the manual's bounds and its directories are safe paths; and it
 * survives a round trip: rendered (the GET answer) and put again, it decodes
 * to the same configuration.  Put onto a configuration of every item, a
 * refused body changes none of it, and one taken leaves it in bounds.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer/rest/rest_doc.h"
#include "common/fileutil.h"

static void check(const struct rest_doc *d)
{
	if (d->npids > REST_MAX_PIDS || d->nnames > REST_MAX_NAMES || d->ncontainers > REST_MAX_IDS ||
	    d->npods > REST_MAX_IDS)
		abort();
	if (d->perf_sample_period_ms < 10 || d->perf_sample_period_ms > 1000 || d->svg_period_s < 30 ||
	    d->svg_period_s > 600 || d->report_period_s < 5 || d->report_period_s > 600)
		abort();
	if (fileutil__safe_dir(d->svg_dir, NULL, 0) || fileutil__safe_dir(d->flame_dir, NULL, 0))
		abort();
	for (unsigned i = 0; i < d->nnames; i++)
		if (!d->names[i].comm[0] && !d->names[i].cmdline[0])
			abort();
}

static void one(const uint8_t *data, size_t size, enum rest_feature f)
{
	struct rest_doc d, d2;
	char err[512] = "", *text, *body;
	size_t n;

	if (rest_doc__parse((const char *)data, size, f, &d, err, sizeof(err))) {
		if (!err[0])
			abort();
		return;
	}
	check(&d);
	text = rest_doc__render(&d);
	if (!text)
		return;
	n = strlen(text);
	body = malloc(n + 6);
	if (body) {
		memcpy(body, "json=", 5);
		memcpy(body + 5, text, n + 1);
		if (rest_doc__parse(body, n + 5, f, &d2, err, sizeof(err)))
			abort(); /* what it answers to GET must be accepted by PUT */
		/* notes come from what was ignored; the rendering has no bin or check_cmd */
		memset(d.notes, 0, sizeof(d.notes));
		memset(d2.notes, 0, sizeof(d2.notes));
		if (memcmp(&d.probes, &d2.probes, sizeof(d.probes)) || d.npids != d2.npids || d.nnames != d2.nnames ||
		    d.running != d2.running || d.svg_period_s != d2.svg_period_s || strcmp(d.svg_dir, d2.svg_dir) ||
		    d.multi_instance != d2.multi_instance || memcmp(d.pids, d2.pids, d.npids * sizeof(d.pids[0])) ||
		    d.l7_protocols != d2.l7_protocols || d.report_period_s != d2.report_period_s)
			abort();
		for (unsigned i = 0; i < d.nnames; i++)
			if (strcmp(d.names[i].comm, d2.names[i].comm) || strcmp(d.names[i].cmdline, d2.names[i].cmdline))
				abort();
		free(body);
	}
	free(text);
}

/* Onto a configuration with every item set: all or nothing. */
static void onto(const uint8_t *data, size_t size, enum rest_feature f)
{
	struct rest_doc *d = malloc(sizeof(*d)), *before = malloc(sizeof(*before));
	char base[400], err[512] = "";
	bool any = false;

	if (!d || !before)
		abort();
	snprintf(base, sizeof(base), "json={\"cmd\": {\"probe\": [\"%s\"]}, \"snoopers\": {\"proc_id\": [7], "
		 "\"proc_name\": [{\"comm\": \"app1\"}]}, \"params\": {\"report_period\": 30}, \"state\": \"running\"}",
		 rest_doc__probe_name(f, 0));
	if (rest_doc__parse(base, strlen(base), f, d, err, sizeof(err)))
		abort();
	memcpy(before, d, sizeof(*d));
	err[0] = 0;
	if (rest_doc__apply((const char *)data, size, d, err, sizeof(err))) {
		if (!err[0] || memcmp(d, before, sizeof(*d)))
			abort(); /* a refusal changed the configuration */
	} else {
		check(d);
		for (unsigned i = 0; i < REST_PROBE_MAX; i++)
			any |= d->probes[i];
		if (d->running && !any)
			abort(); /* running with nothing to run */
	}
	free(d);
	free(before);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (unsigned f = 0; f < REST_FEATURE_MAX; f++) {
		one(data, size, (enum rest_feature)f);
		onto(data, size, (enum rest_feature)f);
	}
	return 0;
}
