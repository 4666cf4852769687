/* progress.h - a progress report on stderr for long steps (compiling a sweep's kernels): done /
 * total, the elapsed time and an estimate of what is left, rate-limited.
 *
 *   progress pr;
 *   progress_init(&pr, stderr, "compiling kernels", n, isatty(2), clock_now());
 *   ... progress_update(&pr, done, cached, clock_now()); ...   (from one thread at a time)
 *   progress_end(&pr, clock_now());
 *
 * Nothing is printed during the first PROGRESS_QUIET_S seconds, so a step that is quick (kernels
 * from the cache) stays silent. After that, on a terminal one line is rewritten in place at most
 * every PROGRESS_TTY_S seconds and ended with a newline; otherwise (a log file) a whole line is
 * printed at most every PROGRESS_LOG_S seconds, and one at the end when any was printed.
 */
#ifndef TUNE_PROGRESS_H
#define TUNE_PROGRESS_H

#include <stddef.h>
#include <stdio.h>

#define PROGRESS_QUIET_S 2.0
#define PROGRESS_TTY_S 0.25
#define PROGRESS_LOG_S 30.0

typedef struct {
    FILE *out;        /* NULL: silent */
    const char *what; /* "compiling kernels" (borrowed) */
    size_t total;
    int tty;
    double start, last; /* clock_now() times; last < start: nothing printed yet */
    size_t done, cached;
    int printed;
} progress;

void progress_init(progress *p, FILE *out, const char *what, size_t total, int tty, double now);
/* done of total finished, cached of them without work (excluded from the rate). */
void progress_update(progress *p, size_t done, size_t cached, double now);
/* Ends the line on a terminal, or prints the final count when lines were printed. */
void progress_end(progress *p, double now);
/* "12/345 kernels (3 cached), 1m 05s elapsed, about 4m 10s left" into buf; returns buf. */
const char *progress_format(const progress *p, double now, char *buf, size_t size);

#endif
