/* Child processes with a message pipe and a watchdog: normal exit, crash, hang, messages. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "device/worker.h"

static int say_three_lines(void *ctx, int fd)
{
    (void)ctx;
    worker_send(fd, "B %d", 1);
    worker_send(fd, "multi\nline");
    worker_send(fd, "E %d ok", 1);
    return 0;
}

static int crash_after_begin(void *ctx, int fd)
{
    (void)ctx;
    worker_send(fd, "B 7");
    raise(SIGSEGV);
    return 0;
}

static int hang_after_begin(void *ctx, int fd)
{
    (void)ctx;
    worker_send(fd, "B 9");
    for (;;)
        pause();
    return 0;
}

static int exit_with(void *ctx, int fd)
{
    (void)fd;
    return *(int *)ctx;
}

Test(worker, messages_then_clean_exit)
{
    tune_error err = {0};
    worker *w = worker_start(say_three_lines, NULL, &err);
    cr_assert_not_null(w, "%s", err.message);
    char line[256], how[128];
    cr_assert_eq(worker_read_line(w, line, sizeof line, 5), 1);
    cr_expect_str_eq(line, "B 1");
    cr_assert_eq(worker_read_line(w, line, sizeof line, 5), 1);
    cr_expect_str_eq(line, "multi line", "a message stays on one line");
    cr_assert_eq(worker_read_line(w, line, sizeof line, 5), 1);
    cr_expect_str_eq(line, "E 1 ok");
    cr_expect_eq(worker_read_line(w, line, sizeof line, 5), 0, "end of messages");
    cr_expect_eq(worker_wait(w, how, sizeof how), 0);
    cr_expect_str_eq(how, "exit status 0");
}

Test(worker, crash_is_reported_with_its_signal)
{
    tune_error err = {0};
    worker *w = worker_start(crash_after_begin, NULL, &err);
    cr_assert_not_null(w);
    char line[256], how[128];
    cr_assert_eq(worker_read_line(w, line, sizeof line, 5), 1);
    cr_expect_str_eq(line, "B 7");
    cr_expect_eq(worker_read_line(w, line, sizeof line, 5), 0);
    cr_expect_eq(worker_wait(w, how, sizeof how), 128 + SIGSEGV);
    cr_expect(strstr(how, "signal 11") != NULL, "how: %s", how);
}

Test(worker, hang_times_out_and_is_killed)
{
    tune_error err = {0};
    worker *w = worker_start(hang_after_begin, NULL, &err);
    cr_assert_not_null(w);
    char line[256], how[128];
    cr_assert_eq(worker_read_line(w, line, sizeof line, 5), 1);
    cr_expect_eq(worker_read_line(w, line, sizeof line, 0.2), -1, "the watchdog fires");
    worker_kill(w);
    cr_expect_eq(worker_wait(w, how, sizeof how), 128 + SIGKILL);
}

Test(worker, exit_status_is_returned)
{
    tune_error err = {0};
    int code = 3;
    worker *w = worker_start(exit_with, &code, &err);
    cr_assert_not_null(w);
    char line[64], how[128];
    cr_expect_eq(worker_read_line(w, line, sizeof line, 5), 0);
    cr_expect_eq(worker_wait(w, how, sizeof how), 3);
    cr_expect_str_eq(how, "exit status 3");
}
