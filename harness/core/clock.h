/* clock.h - the clocks of the harness: a monotonic clock for durations and deadlines, and UTC
 * time stamps for files and rows.
 *
 *   double t0 = clock_now();
 *   ...
 *   double elapsed = clock_now() - t0;                     // seconds
 *   char stamp[32];
 *   clock_utc(stamp, sizeof stamp, CLOCK_UTC_ISO);        // "2026-11-22T10:15:00Z"
 *
 * GPU work is never timed with these (timing.h uses CUDA events).
 */
#ifndef TUNE_CLOCK_H
#define TUNE_CLOCK_H

#include <stddef.h>

#define CLOCK_UTC_ISO "%Y-%m-%dT%H:%M:%SZ" /* rows, meta.json */
#define CLOCK_UTC_DIR "%Y%m%dT%H%M%SZ"     /* run folder names */

/* Seconds of CLOCK_MONOTONIC. */
double clock_now(void);
/* The current UTC time formatted by strftime(fmt) into buf. */
void clock_utc(char *buf, size_t size, const char *fmt);

#endif
