/*
 * When a test workload's measured part begins.  With EMBER_TEST_GO=PATH it
 * begins once PATH exists: the test creates it after the profiler reported
 * the task attached, so no measured call runs before the probes do, however
 * slow the machine.  Without it, after an unmeasured second (benchmarks and
 * manual runs).
 */
#ifndef EMBER_TEST_START_GATE_H
#define EMBER_TEST_START_GATE_H

#include <stdlib.h>
#include <unistd.h>

static inline void start_gate__wait(void)
{
	const char *go = getenv("EMBER_TEST_GO");

	if (!go || !*go) {
		sleep(1);
		return;
	}
	/* At most 60 s: a test that never opens the gate fails on the missing work, not by hanging. */
	for (int i = 0; i < 60000 && access(go, F_OK); i++)
		usleep(1000);
}

#endif
