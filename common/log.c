#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <strings.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *log_name = "ember";
static enum log_level log_lvl = LOG_LVL_INFO;

void log__init(const char *name, enum log_level level)
{
	log_name = name;
	log_lvl = level;
}

enum log_level log__level(void) { return log_lvl; }

int log__parse_level(const char *s, enum log_level *ret)
{
	static const char *names[] = { "error", "warn", "info", "debug" };
	for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcasecmp(s, names[i])) {
			*ret = (enum log_level)i;
			return 0;
		}
	}
	return -EINVAL;
}

static void vlog(enum log_level lvl, const char *func, const char *fmt, va_list ap)
{
	static const char *tags[] = { "ERROR", "WARN", "INFO", "DEBUG" };
	char buf[2048];
	struct timespec ts;
	struct tm tm;
	int n;

	if (lvl > log_lvl)
		return;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = snprintf(buf, sizeof(buf), "%02d:%02d:%02d.%03ld %s[%d] %s: ", tm.tm_hour, tm.tm_min,
		     tm.tm_sec, ts.tv_nsec / 1000000, log_name, getpid(), tags[lvl]);
	if (lvl == LOG_LVL_DEBUG && func)
		n += snprintf(buf + n, sizeof(buf) - n, "%s: ", func);
	if (n < (int)sizeof(buf))
		n += vsnprintf(buf + n, sizeof(buf) - n, fmt, ap);
	if (n >= (int)sizeof(buf))
		n = sizeof(buf) - 1;
	while (n > 0 && buf[n - 1] == '\n')
		n--;
	buf[n++] = '\n';
	/* One write per line so the three processes' lines never interleave. */
	(void)!write(STDERR_FILENO, buf, n);
}

void log__msg(enum log_level lvl, const char *func, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vlog(lvl, func, fmt, ap);
	va_end(ap);
}

void log__vmsg(enum log_level lvl, const char *func, const char *fmt, va_list ap)
{
	vlog(lvl, func, fmt, ap);
}
