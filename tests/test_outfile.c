/* test_outfile.c - atomic whole-file writes (core/outfile.h): a failed write (a size limit, a
 * missing folder) leaves the previous file intact, no temporary file behind, and an error that
 * names the file written and the reason. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/infile.h"
#include "core/interrupt.h"
#include "core/outfile.h"
#include "util_child.h"
#include "util_cpu.h"

TestSuite(outfile, .init = make_tmpdir, .fini = remove_tmpdir);

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

Test(outfile, writes_and_replaces)
{
    char path[256];
    tune_error err = {0};
    snprintf(path, sizeof path, "%s/a.md", tmpdir);
    cr_assert_eq(outfile_write(path, "old\n", 4, &err), TUNE_OK, "%s", err.message);
    outfile *o = outfile_open(path, &err);
    cr_assert_not_null(o);
    fprintf(outfile_stream(o), "new %d\n", 1);
    cr_assert_eq(outfile_commit(o, &err), TUNE_OK, "%s", err.message);
    char *text;
    cr_assert_eq(infile_read(path, 100, &text, NULL, &err), TUNE_OK);
    cr_expect_str_eq(text, "new 1\n");
    free(text);
    o = outfile_open(path, &err);
    fprintf(outfile_stream(o), "dropped\n");
    outfile_abort(o);
    cr_assert_eq(infile_read(path, 100, &text, NULL, &err), TUNE_OK);
    cr_expect_str_eq(text, "new 1\n");
    free(text);
    cr_expect_eq(count_entries(tmpdir), 1, "no temporary file left behind");
}

/* Writes 64 KiB over a path, as text or as JSON: the work of a size-limited child. */
typedef struct {
    const char *path;
    int as_json;
} big_write;

static tune_status write_big(void *ctx, tune_error *err)
{
    const big_write *w = ctx;
    static char big[65536];
    memset(big, 'x', sizeof big - 1);
    if (!w->as_json)
        return outfile_write(w->path, big, sizeof big, err);
    json_t *j = json_pack("{s:s}", "big", big);
    return outfile_write_json(w->path, j, 0, err);
}

/* In a child limited to 4 KiB files, writes 64 KiB over path; the child's error comes back in
 * msg. */
static void write_over_limit(const char *path, int as_json, char *msg, size_t size)
{
    big_write w = {path, as_json};
    int rc = test_run_size_limited(4096, write_big, &w, msg, size);
    cr_assert(rc == 1, "the write must fail: %s", msg);
}

Test(outfile, failed_write_keeps_the_old_file)
{
    char path[256], expect[400], msg[4096];
    tune_error err = {0};
    for (int as_json = 0; as_json < 2; as_json++) {
        snprintf(path, sizeof path, "%s/meta.json", tmpdir);
        cr_assert_eq(outfile_write(path, "{\"old\": 1}\n", 11, &err), TUNE_OK);
        write_over_limit(path, as_json, msg, sizeof msg);
        snprintf(expect, sizeof expect, "%s: cannot write: File too large", path);
        cr_expect_str_eq(msg, expect);
        char *text;
        cr_assert_eq(infile_read(path, 100, &text, NULL, &err), TUNE_OK);
        cr_expect_str_eq(text, "{\"old\": 1}\n", "the previous file survives intact");
        free(text);
        cr_expect_eq(count_entries(tmpdir), 1, "no temporary file left behind");
    }
}

Test(outfile, missing_folder_names_the_file)
{
    char path[256], expect[400];
    tune_error err = {0};
    snprintf(path, sizeof path, "%s/none/best.md", tmpdir);
    cr_expect_eq(outfile_write(path, "x", 1, &err), TUNE_ERR_IO);
    snprintf(expect, sizeof expect, "%s: cannot write: No such file or directory", path);
    char buf[3000];
    cr_expect_str_eq(tune_error_text(&err, buf, sizeof buf), expect);
}

/* A set of three files whose second is over the size limit. */
static tune_status write_set(void *ctx, tune_error *err)
{
    const char *dir = ctx;
    static char big[65536];
    memset(big, 'y', sizeof big);
    outfile_set *s = outfile_set_new();
    char path[512];
    const char *names[] = {"best.md", "best.csv", "best.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        FILE *f = outfile_set_open(s, path, err);
        if (!f) {
            outfile_set_abort(s);
            return TUNE_ERR_IO;
        }
        if (i == 1)
            fwrite(big, 1, sizeof big, f);
        else
            fputs("new\n", f);
    }
    return outfile_set_commit(s, err);
}

/* A set is written whole or not at all: a size limit hit by one file leaves every file of the
 * earlier set (none replaced, none half-new), and the error says so. */
Test(outfile, a_failed_set_replaces_none)
{
    char path[512], msg[4096];
    tune_error err = {0};
    const char *names[] = {"best.md", "best.csv", "best.json"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        cr_assert_eq(outfile_write(path, "old\n", 4, &err), TUNE_OK);
    }
    int rc = test_run_size_limited(4096, write_set, tmpdir, msg, sizeof msg);
    cr_assert(rc == 1, "the write must fail: %s", msg);
    cr_expect(strstr(msg, "best.csv: cannot write: File too large; none of ") != NULL, "%s", msg);
    cr_expect(strstr(msg, "best.json was replaced") != NULL, "%s", msg);
    for (int i = 0; i < 3; i++) {
        char *text;
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        cr_assert_eq(infile_read(path, 100, &text, NULL, &err), TUNE_OK);
        cr_expect_str_eq(text, "old\n", "%s is the earlier set's", names[i]);
        free(text);
    }
    cr_expect_eq(count_entries(tmpdir), 3, "no temporary file left behind");
    /* and without a limit, the whole set is new */
    outfile_set *s = outfile_set_new();
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        fputs("new\n", outfile_set_open(s, path, &err));
    }
    cr_assert_eq(outfile_set_commit(s, &err), TUNE_OK, "%s", err.message);
    for (int i = 0; i < 3; i++) {
        char *text;
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        cr_assert_eq(infile_read(path, 100, &text, NULL, &err), TUNE_OK);
        cr_expect_str_eq(text, "new\n");
        free(text);
    }
}

/* A write that takes its time: the file opened, half written, `in` told, 300 ms, the rest. */
typedef struct {
    char path[256];
    int in; /* pipe: "the write has begun" */
} slow_write;

static void *write_slowly(void *arg)
{
    slow_write *sw = arg;
    outfile *o = outfile_open(sw->path, NULL);
    if (!o)
        return NULL;
    fputs("first half, ", outfile_stream(o));
    fflush(outfile_stream(o));
    if (write(sw->in, "w", 1) != 1)
        return NULL;
    usleep(300 * 1000);
    fputs("second half\n", outfile_stream(o));
    tune_status_ignore(outfile_commit(o, NULL)); /* the test checks the file itself */
    return NULL;
}

/* SIGTERM while a thread writes a file (core/interrupt.h): the stop waits for the rename, so the
 * file is whole and no temporary file is left; the exit status is 143. */
Test(outfile, a_stop_waits_for_the_write_under_way)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    slow_write sw = {.in = p[1]};
    snprintf(sw.path, sizeof sw.path, "%s/meta.json", tmpdir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (interrupt_install() != 0)
            _exit(2);
        pthread_t t;
        char c;
        if (pthread_create(&t, NULL, write_slowly, &sw) != 0 || read(p[0], &c, 1) != 1)
            _exit(3);
        kill(getpid(), SIGTERM);
        pthread_join(t, NULL);
        for (;;) /* the stop ends the process once the file is in place */
            pause();
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 143, "exit status 143, got wait status %d",
              status);
    char *text = NULL;
    cr_expect_eq(infile_read_text(sw.path, 1024, &text, NULL, NULL), TUNE_OK);
    cr_expect_str_eq(text ? text : "(none)", "first half, second half\n", "the file is whole");
    free(text);
    cr_expect_eq(count_entries(tmpdir), 1, "no temporary file left behind");
    close(p[0]);
    close(p[1]);
}
