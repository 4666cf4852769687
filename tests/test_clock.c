/* test_clock.c - the monotonic clock and UTC stamps (core/clock.h). */
#include <criterion/criterion.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"

Test(clock, monotonic)
{
    double a = clock_now();
    struct timespec ts = {0, 2000000};
    nanosleep(&ts, NULL);
    double b = clock_now();
    cr_expect(b - a >= 0.0015 && b - a < 5, "%g s", b - a);
}

Test(clock, utc_formats)
{
    char iso[32], dir[32];
    clock_utc(iso, sizeof iso, CLOCK_UTC_ISO);
    clock_utc(dir, sizeof dir, CLOCK_UTC_DIR);
    cr_expect_eq(strlen(iso), strlen("2026-11-22T10:15:00Z"), "%s", iso);
    cr_expect_eq(strlen(dir), strlen("20261122T101500Z"), "%s", dir);
    cr_expect_eq(iso[10], 'T');
    cr_expect_eq(iso[19], 'Z');
    cr_expect_eq(dir[8], 'T');
}
