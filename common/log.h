/*
 * The per-process logger.  Only process code (main.c files, collector,
 * analyzer/exporter loops) logs; library modules return -errno instead.
 * The collector routes libbpf's own output here (log__vmsg).
 */
#ifndef EMBER_LOG_H
#define EMBER_LOG_H

#include <stdarg.h>

enum log_level { LOG_LVL_ERROR = 0, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* name: process name used as line prefix ("collector", ...). */
void log__init(const char *name, enum log_level level);
enum log_level log__level(void);
int log__parse_level(const char *s, enum log_level *ret);
void log__msg(enum log_level lvl, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log__vmsg(enum log_level lvl, const char *func, const char *fmt, va_list ap)
	__attribute__((format(printf, 3, 0)));

#define log_error(...) log__msg(LOG_LVL_ERROR, __func__, __VA_ARGS__)
#define log_warn(...)  log__msg(LOG_LVL_WARN, __func__, __VA_ARGS__)
#define log_info(...)  log__msg(LOG_LVL_INFO, __func__, __VA_ARGS__)
#define log_debug(...) do { if (log__level() >= LOG_LVL_DEBUG) log__msg(LOG_LVL_DEBUG, __func__, __VA_ARGS__); } while (0)

#endif
