/* test_progress.c - the progress line: silent at first, rate-limited, one rewritten line on a
 * terminal, whole lines in a log, an estimate of the time left from the work actually done. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/progress.h"

static char *drain(FILE *f)
{
    fflush(f);
    long n = ftell(f);
    char *s = calloc(1, (size_t)n + 1);
    rewind(f);
    if (fread(s, 1, (size_t)n, f) != (size_t)n)
        s[0] = '\0';
    return s;
}

static size_t count(const char *s, const char *needle)
{
    size_t n = 0;
    for (const char *p = s; (p = strstr(p, needle)) != NULL; p++)
        n++;
    return n;
}

Test(progress, quick_steps_print_nothing)
{
    FILE *f = tmpfile();
    progress p;
    progress_init(&p, f, "compiling kernels", 100, 0, 1000.0);
    for (size_t i = 1; i <= 100; i++)
        progress_update(&p, i, i, 1000.0 + 0.01 * (double)i); /* 1 s in all: from the cache */
    progress_end(&p, 1001.0);
    char *s = drain(f);
    cr_expect_str_eq(s, "");
    free(s);
    fclose(f);
}

Test(progress, log_lines_are_rate_limited)
{
    FILE *f = tmpfile();
    progress p;
    progress_init(&p, f, "compiling kernels", 600, 0, 0.0);
    for (size_t i = 1; i <= 600; i++)
        progress_update(&p, i, 0, (double)i); /* one kernel a second for 10 minutes */
    progress_end(&p, 600.0);
    char *s = drain(f);
    /* a line at 2 s, then every 30 s, then the last: 2, 32, ..., 572 and 600 */
    cr_expect_eq(count(s, "\n"), 21, "%s", s);
    cr_expect_eq(count(s, "\r"), 0);
    cr_expect(strstr(s, "tune: compiling kernels: 2/600 (0 cached), 2s elapsed, "
                        "about 9m 58s left\n"),
              "%s", s);
    cr_expect(strstr(s, "tune: compiling kernels: 600/600 (0 cached), 10m 00s elapsed\n"), "%s", s);
    free(s);
    fclose(f);
}

Test(progress, terminal_rewrites_one_line)
{
    FILE *f = tmpfile();
    progress p;
    progress_init(&p, f, "compiling kernels", 10, 1, 0.0);
    for (size_t i = 1; i <= 10; i++)
        progress_update(&p, i, 1, (double)i);
    progress_end(&p, 10.0);
    char *s = drain(f);
    cr_expect_eq(count(s, "\n"), 1, "%s", s); /* the line is ended once */
    cr_expect_geq(count(s, "\r"), 8);
    /* one of the first two done came from the cache: the rate is that of the other */
    cr_expect(strstr(s, "2/10 (1 cached), 2s elapsed, about 16s left"), "%s", s);
    free(s);
    fclose(f);
}

Test(progress, silent_without_a_stream)
{
    progress p;
    progress_init(&p, NULL, "x", 3, 1, 0.0);
    progress_update(&p, 3, 0, 100.0);
    progress_end(&p, 100.0);
    char buf[128];
    cr_expect_str_eq(progress_format(&p, 100.0, buf, sizeof buf),
                     "x: 3/3 (0 cached), 1m 40s elapsed");
}
