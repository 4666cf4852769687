/* test_outfile.c - atomic whole-file writes (core/outfile.h): a failed write (a size limit, a
 * missing folder) leaves the previous file intact, no temporary file behind, and an error that
 * names the file written and the reason. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/infile.h"
#include "core/outfile.h"
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

/* In a child limited to 4 KiB files with SIGXFSZ ignored, writes 64 KiB over path; returns the
 * child's error message through a pipe. */
static void write_over_limit(const char *path, int as_json, char *msg, size_t size)
{
    int p[2];
    cr_assert_eq(pipe(p), 0);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        close(p[0]);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit rl = {4096, 4096};
        setrlimit(RLIMIT_FSIZE, &rl);
        static char big[65536];
        memset(big, 'x', sizeof big - 1);
        tune_error err = {0};
        tune_status st;
        if (as_json) {
            json_t *j = json_pack("{s:s}", "big", big);
            st = outfile_write_json(path, j, 0, &err);
        } else {
            st = outfile_write(path, big, sizeof big, &err);
        }
        char buf[3000];
        int len = snprintf(buf, sizeof buf, "%s: %s", err.where, err.message);
        if (write(p[1], buf, (size_t)len) < 0)
            _exit(3);
        _exit(st == TUNE_OK ? 0 : 1);
    }
    close(p[1]);
    ssize_t k = read(p[0], msg, size - 1);
    msg[k > 0 ? k : 0] = '\0';
    close(p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 1, "the write must fail: %s", msg);
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
