/* Child processes with a message pipe and a watchdog: normal exit, crash, hang, messages. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dirent.h>
#include <errno.h>
#include <sys/wait.h>

#include "core/interrupt.h"
#include "core/outfile.h"
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

/* A duplex child: answers each line it is told with its length and first word, ends on "Q". */
static int echo_lengths(void *ctx, int fd, worker_inbox *in)
{
    (void)ctx;
    char line[16384];
    while (worker_recv(in, line, sizeof line) == 1) {
        if (strcmp(line, "Q") == 0)
            return 5;
        char first[16] = "";
        sscanf(line, "%15s", first);
        worker_send(fd, "L %zu %s", strlen(line), first);
    }
    return 6; /* the parent closed the inbox */
}

Test(worker, duplex_lines_both_ways)
{
    tune_error err = {0};
    worker *w = worker_start_duplex(echo_lengths, NULL, &err);
    cr_assert_not_null(w, "%s", err.message);
    char line[256], how[128];
    cr_expect_eq(worker_poll(&w, 1, 0.05), -1, "nothing to read before it is told anything");
    cr_expect_eq(worker_read_line(w, line, sizeof line, 0), -1, "timeout 0: nothing yet");
    cr_assert_eq(worker_tell(w, "G %d", 12), 0);
    cr_expect_eq(worker_poll(&w, 1, 5), 0);
    cr_assert_eq(worker_read_line(w, line, sizeof line, 0), 1, "polled: read without waiting");
    cr_expect_str_eq(line, "L 4 G");
    char *big = malloc(20000);
    cr_assert_not_null(big);
    memset(big, 'x', 19999);
    big[0] = 'C';
    big[1] = ' ';
    big[19999] = '\0';
    cr_assert_eq(worker_tell(w, "%s", big), 0, "a long line is written whole");
    cr_assert_eq(worker_read_line(w, line, sizeof line, 5), 1);
    cr_expect_str_eq(line, "L 8192 C", "the child's inbox cuts it to its buffer");
    cr_assert_eq(worker_read_line(w, line, sizeof line, 5), 1);
    cr_expect_str_eq(line, "L 8192 xxxxxxxxxxxxxxx"); /* the rest, cut again */
    cr_assert_eq(worker_read_line(w, line, sizeof line, 5), 1);
    cr_expect_str_eq(line, "L 3615 xxxxxxxxxxxxxxx");
    free(big);
    cr_assert_eq(worker_tell(w, "Q"), 0);
    cr_expect_eq(worker_read_line(w, line, sizeof line, 5), 0);
    usleep(100000);
    cr_expect_eq(worker_tell(w, "G 1"), -1, "telling a child that ended fails, without SIGPIPE");
    cr_expect_eq(worker_wait(w, how, sizeof how), 5);
}

Test(worker, duplex_idle_child_ends_when_waited_for)
{
    tune_error err = {0};
    worker *w = worker_start_duplex(echo_lengths, NULL, &err);
    cr_assert_not_null(w, "%s", err.message);
    char how[128];
    cr_expect_eq(worker_tell(NULL, "x"), -1);
    cr_expect_eq(worker_wait(w, how, sizeof how), 6, "closing its inbox ends a waiting child");
}

Test(worker, poll_finds_the_worker_with_a_line)
{
    tune_error err = {0};
    worker *quiet = worker_start_duplex(echo_lengths, NULL, &err);
    worker *talks = worker_start(say_three_lines, NULL, &err);
    cr_assert(quiet && talks);
    worker *ws[3] = {quiet, NULL, talks};
    cr_expect_eq(worker_poll(ws, 3, 5), 2);
    char line[256], how[128];
    cr_assert_eq(worker_read_line(talks, line, sizeof line, 5), 1);
    cr_expect_str_eq(line, "B 1");
    cr_expect_eq(worker_poll(ws, 3, 5), 2, "lines already read are found without waiting");
    cr_assert_eq(worker_read_line(talks, line, sizeof line, 0), 1, "timeout 0: what has come");
    cr_expect_str_eq(line, "multi line");
    while (worker_read_line(talks, line, sizeof line, 5) == 1)
        ;
    worker_wait(talks, how, sizeof how);
    worker_wait(quiet, how, sizeof how);
}

/* A child that leaves a temporary file half-written in dir (ctx), tells its pid and waits. */
static int half_write_then_wait(void *ctx, int fd)
{
    char path[512];
    snprintf(path, sizeof path, "%s/entry.bin", (const char *)ctx);
    outfile *o = outfile_open(path, NULL);
    if (!o)
        return 1;
    fputs("half an entry", outfile_stream(o));
    fflush(outfile_stream(o));
    worker_send(fd, "P %d", (int)getpid());
    for (;;)
        pause();
    return 0;
}

/* SIGTERM to a process with workers (core/interrupt.h): the workers are killed and reaped before
 * the cleanups run, so the temporary files they left half-written are removed as stale; the
 * process exits 143. */
Test(worker, a_stop_kills_the_workers_then_cleans_up)
{
    char dir[] = "/tmp/tune_stop.XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t tune = fork();
    cr_assert_geq(tune, 0);
    if (tune == 0) {
        close(p[0]);
        if (interrupt_install() != 0)
            _exit(2);
        interrupt_cleanup_push(outfile_remove_stale_temps, dir);
        for (int i = 0; i < 2; i++) {
            worker *w = worker_start(half_write_then_wait, dir, NULL);
            char line[64];
            int pid;
            if (!w || worker_read_line(w, line, sizeof line, 10) != 1 ||
                sscanf(line, "P %d", &pid) != 1 || write(p[1], &pid, sizeof pid) != sizeof pid)
                _exit(3);
        }
        kill(getpid(), SIGTERM);
        for (;;)
            pause();
    }
    close(p[1]);
    int pids[2] = {0, 0}, status = 0;
    for (int i = 0; i < 2; i++)
        cr_expect_eq(read(p[0], &pids[i], sizeof pids[i]), (ssize_t)sizeof pids[i]);
    close(p[0]);
    cr_assert_eq(waitpid(tune, &status, 0), tune);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 143, "exit status 143, got wait status %d",
              status);
    for (int i = 0; i < 2; i++)
        cr_expect(pids[i] > 0 && kill(pids[i], 0) != 0 && errno == ESRCH, "worker %d is gone",
                  pids[i]);
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        cr_expect(e->d_name[0] == '.', "%s was left in the folder", e->d_name);
    if (d)
        closedir(d);
    char cmd[64];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}
