/* test_folder.c - the results folder's file operations (store/folder.h): naming, the lock, the
 * partial last line, counting rows, atomic JSON writes, and the JSONL reader of plain and gzipped
 * files (folder_locate, folder_lines). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/infile.h"
#include "store/folder.h"
#include "util_cpu.h"

TestSuite(folder, .init = make_tmpdir, .fini = remove_tmpdir);

/* write_file with the folders of name made first (path may be NULL). */
static void write_deep(const char *name, const char *text, char *path, size_t size)
{
    char full[4096], cmd[4200];
    snprintf(full, sizeof full, "%s/%s", tmpdir, name);
    *strrchr(full, '/') = '\0';
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", full);
    cr_assert_eq(system(cmd), 0);
    char scratch[4096];
    write_file(name, text, path ? path : scratch, path ? size : sizeof scratch);
}

Test(folder, make_and_latest)
{
    char dir[4096], given[4096], latest[4096];
    tune_error err = {0};
    cr_assert_eq(folder_make(NULL, tmpdir, "sw", dir, sizeof dir, &err), TUNE_OK, "%s",
                 err.message);
    cr_expect_eq(access(dir, F_OK), 0);
    cr_expect_eq(strncmp(dir + strlen(tmpdir), "/sw/", 4), 0, "%s", dir);
    snprintf(given, sizeof given, "%s/sw/99999999T000000Z", tmpdir);
    cr_assert_eq(folder_make(given, "ignored", "sw", dir, sizeof dir, &err), TUNE_OK);
    cr_expect_str_eq(dir, given);
    write_deep("sw/99999999T000000Z/meta.json", "{}", NULL, 0); /* a run: it holds one */
    cr_assert_eq(folder_latest(tmpdir, "sw", latest, sizeof latest, &err), TUNE_OK);
    cr_expect_str_eq(latest, given, "names are UTC times: the largest is the latest");
    tune_error e2 = {0};
    cr_expect_eq(folder_latest(tmpdir, "other", latest, sizeof latest, &e2), TUNE_ERR_IO);
    cr_expect(strstr(e2.message, "no earlier run of sweep 'other'") != NULL, "%s", e2.message);
}

Test(folder, lock_is_exclusive)
{
    tune_error err = {0};
    int fd = folder_lock(tmpdir, &err);
    cr_assert_geq(fd, 0, "%s", err.message);
    tune_error e2 = {0};
    cr_expect_lt(folder_lock(tmpdir, &e2), 0);
    cr_expect(strstr(e2.message, "another tune run") != NULL, "%s", e2.message);
    folder_unlock(tmpdir, fd);
    int again = folder_lock(tmpdir, &err);
    cr_expect_geq(again, 0, "free once unlocked");
    folder_unlock(tmpdir, again);
}

Test(folder, partial_line_and_count)
{
    char path[4096];
    write_file("raw.jsonl", "{\"a\": 1}\n{\"a\": 2}\n{\"a\"", path, sizeof path);
    cr_expect_eq(folder_count_rows(tmpdir), 2);
    cr_expect_eq(folder_trim_partial_line(path, NULL), TUNE_OK);
    FILE *f = fopen(path, "r");
    char buf[256] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cr_expect_str_eq(buf, "{\"a\": 1}\n{\"a\": 2}\n");
    char other[4096];
    snprintf(other, sizeof other, "%s/none", tmpdir);
    cr_expect_eq(folder_count_rows(other), 0);
}

Test(folder, write_json_atomically)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/x.json", tmpdir);
    json_t *j = json_pack("{s:i, s:s}", "b", 1, "a", "x");
    tune_error err = {0};
    cr_assert_eq(folder_write_json(path, j, &err), TUNE_OK);
    json_decref(j);
    json_t *back = json_load_file(path, 0, NULL);
    cr_assert_not_null(back);
    cr_expect_eq(json_integer_value(json_object_get(back, "b")), 1);
    json_decref(back);
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    cr_expect_neq(access(tmp, F_OK), 0, "no temporary file left");
    cr_expect_eq(folder_write_json(path, NULL, &err), TUNE_ERR_IO);
}

/* Runs started in the same second get folders of their own, sorted in the order made. */
Test(folder, new_folders_are_unique_and_sorted)
{
    char dirs[4][4096];
    tune_error err = {0};
    for (size_t i = 0; i < 4; i++) {
        cr_assert_eq(folder_make(NULL, tmpdir, "sw", dirs[i], sizeof dirs[i], &err), TUNE_OK,
                     "%s", err.message);
        char meta[4200]; /* each holds a run */
        snprintf(meta, sizeof meta, "%.4000s/meta.json", dirs[i]);
        fclose(fopen(meta, "w"));
    }
    for (size_t i = 1; i < 4; i++)
        cr_expect_lt(strcmp(dirs[i - 1], dirs[i]), 0, "%s before %s", dirs[i - 1], dirs[i]);
    char latest[4096];
    cr_assert_eq(folder_latest(tmpdir, "sw", latest, sizeof latest, &err), TUNE_OK);
    cr_expect_str_eq(latest, dirs[3], "the last made is the latest");
}

/* Every line of path through folder_lines, joined with '|'; the status of the last call. */
static tune_status read_lines(const char *path, size_t max_bytes, size_t max_line, char *out,
                              size_t size, tune_error *err)
{
    out[0] = '\0';
    folder_lines *in = folder_lines_open(path, max_bytes, max_line, err);
    if (!in)
        return err->code;
    char *line;
    size_t len, lineno, expect = 1, used = 0;
    tune_status st;
    while ((st = folder_lines_next(in, &line, &len, &lineno, err)) == TUNE_OK && line) {
        cr_expect_eq(lineno, expect++, "lines are counted from 1");
        cr_expect_eq(len, strlen(line));
        used += (size_t)snprintf(out + used, size - used, "%s|", line);
        cr_assert_lt(used, size);
    }
    folder_lines_close(in);
    return st;
}

static const char lines_text[] = "{\"a\": 1}\n\n{\"b\": 2}\r\n  \n{\"c\": 3}"; /* no last '\n' */

Test(folder, gzipped_lines_are_the_plain_lines)
{
    char plain[4096], gz[4096], a[512], b[512];
    write_file("rows.jsonl", lines_text, plain, sizeof plain);
    write_gz("rows.jsonl.gz", lines_text, gz, sizeof gz);
    tune_error err = {0};
    cr_assert_eq(read_lines(plain, INFILE_MAX_ROWS, 1024, a, sizeof a, &err), TUNE_OK, "%s",
                 err.message);
    cr_assert_eq(read_lines(gz, INFILE_MAX_ROWS, 1024, b, sizeof b, &err), TUNE_OK, "%s",
                 err.message);
    cr_expect_str_eq(a, "{\"a\": 1}||{\"b\": 2}\r|  |{\"c\": 3}|");
    cr_expect_str_eq(b, a);
    /* an empty plain file has no lines; an empty .gz is no gzip at all */
    write_file("empty.jsonl", "", plain, sizeof plain);
    cr_expect_eq(read_lines(plain, INFILE_MAX_ROWS, 1024, a, sizeof a, &err), TUNE_OK);
    cr_expect_str_eq(a, "");
    write_file("empty.jsonl.gz", "", gz, sizeof gz);
    cr_expect_eq(read_lines(gz, INFILE_MAX_ROWS, 1024, a, sizeof a, &err), TUNE_ERR_INVALID);
    cr_expect_str_eq(err.where, gz);
    cr_expect(strstr(err.message, "not gzip data") != NULL, "%s", err.message);
}

/* A long text (lines of 100 bytes), gzipped: bad files each give one error naming the file. */
static void write_long_gz(const char *name, char *path, size_t size, size_t n_lines)
{
    char *text = malloc(n_lines * 101 + 1);
    cr_assert_not_null(text);
    for (size_t i = 0; i < n_lines; i++)
        snprintf(text + 101 * i, 102, "%-99zu\n", i * 7919 % 100003); /* varied: compresses less */
    write_gz(name, text, path, size);
    free(text);
}

Test(folder, a_damaged_gz_is_one_error_naming_it)
{
    char gz[4096], out[1 << 16];
    static char big[1 << 24];
    write_long_gz("t.gz", gz, sizeof gz, 20000);
    tune_error err = {0};
    cr_assert_eq(read_lines(gz, INFILE_MAX_ROWS, 1024, big, sizeof big, &err), TUNE_OK, "%s",
                 err.message);
    /* truncated: the text it held is read, then the end that never came is the error */
    truncate_file(gz, file_size(gz) / 2);
    cr_expect_eq(read_lines(gz, INFILE_MAX_ROWS, 1024, big, sizeof big, &err), TUNE_ERR_INVALID);
    cr_expect_str_eq(err.where, gz);
    cr_expect(strncmp(err.message, "truncated gzip file: the compressed data ends early (in line ",
                      61) == 0, "%s", err.message);
    /* the trailer's checksum (CRC-32) flipped */
    write_long_gz("c.gz", gz, sizeof gz, 20000);
    flip_byte(gz, -6);
    tune_error_clear(&err);
    cr_expect_eq(read_lines(gz, INFILE_MAX_ROWS, 1024, big, sizeof big, &err), TUNE_ERR_INVALID);
    cr_expect_str_eq(err.where, gz);
    cr_expect(strstr(err.message, "corrupt gzip file: ") == err.message, "%s", err.message);
    cr_expect(strstr(err.message, "<fd:") == NULL, "no zlib descriptor name: %s", err.message);
    /* a plain text under a .gz name, and gzip data under a plain name */
    char path[4096];
    write_file("plain.jsonl.gz", "{\"a\": 1}\n", path, sizeof path);
    tune_error_clear(&err);
    cr_expect_eq(read_lines(path, INFILE_MAX_ROWS, 1024, out, sizeof out, &err), TUNE_ERR_INVALID);
    cr_expect(strstr(err.message, "not gzip data") != NULL, "%s", err.message);
    write_gz("zipped.jsonl", "{\"a\": 1}\n", path, sizeof path);
    tune_error_clear(&err);
    cr_expect_eq(read_lines(path, INFILE_MAX_ROWS, 1024, out, sizeof out, &err), TUNE_ERR_INVALID);
    cr_expect_str_eq(err.where, path);
    cr_expect(strstr(err.message, "holds gzip data") != NULL, "%s", err.message);
}

/* A gzip bomb: the decompressed text is bounded like a plain file, and so is a line. */
Test(folder, a_gzip_bomb_is_refused)
{
    char gz[4096];
    static char text[(1 << 20) + 1], out[1 << 16];
    memset(text, 'x', sizeof text - 1);
    for (size_t i = 99; i < sizeof text - 1; i += 100)
        text[i] = '\n';
    write_gz("bomb.gz", text, gz, sizeof gz);
    cr_assert_lt(file_size(gz), 1 << 14, "1 MiB that compresses well");
    tune_error err = {0};
    /* the compressed file is within the bound, its text is not */
    cr_expect_eq(read_lines(gz, 1 << 16, 1024, out, sizeof out, &err), TUNE_ERR_INVALID);
    cr_expect_str_eq(err.where, gz);
    cr_expect_str_eq(err.message, "too large: more than 65536 bytes decompressed");
    /* one endless line: refused at the line's bound, never held whole */
    text[99] = 'x';
    text[199] = 'x';
    write_gz("line.gz", text, gz, sizeof gz);
    tune_error_clear(&err);
    cr_expect_eq(read_lines(gz, INFILE_MAX_ROWS, 250, out, sizeof out, &err), TUNE_ERR_INVALID);
    char where[4200];
    snprintf(where, sizeof where, "%s:1", gz);
    cr_expect_str_eq(err.where, where);
    cr_expect_str_eq(err.message, "a line over 250 bytes");
    /* a plain file is bounded alike */
    char plain[4096];
    write_file("line.jsonl", text, plain, sizeof plain);
    tune_error_clear(&err);
    cr_expect_eq(read_lines(plain, INFILE_MAX_ROWS, 250, out, sizeof out, &err), TUNE_ERR_INVALID);
    cr_expect_str_eq(err.message, "a line over 250 bytes");
}

Test(folder, locate_plain_gz_or_neither_and_both_is_ambiguous)
{
    char path[4096], file[4096];
    tune_error err = {0};
    cr_assert_eq(folder_locate(tmpdir, "raw.jsonl", path, sizeof path, &err), TUNE_OK);
    snprintf(file, sizeof file, "%s/raw.jsonl", tmpdir);
    cr_expect_str_eq(path, file, "neither: the plain name (opening it says it is missing)");
    write_gz("raw.jsonl.gz", "{}\n", file, sizeof file);
    cr_assert_eq(folder_locate(tmpdir, "raw.jsonl", path, sizeof path, &err), TUNE_OK);
    cr_expect_str_eq(path, file);
    cr_expect_str_eq(folder_holds_run(tmpdir), "raw.jsonl.gz", "a gzipped run is a run");
    write_file("raw.jsonl", "{}\n", file, sizeof file);
    cr_expect_eq(folder_locate(tmpdir, "raw.jsonl", path, sizeof path, &err), TUNE_ERR_INVALID);
    cr_expect_str_eq(err.where, tmpdir);
    cr_expect_str_eq(err.message, "holds both raw.jsonl and raw.jsonl.gz: which one holds the "
                                  "rows is ambiguous; keep one of them");
    char gz[4200];
    snprintf(gz, sizeof gz, "%s.gz", file);
    cr_assert_eq(unlink(gz), 0);
    cr_assert_eq(folder_locate(tmpdir, "raw.jsonl", path, sizeof path, &err), TUNE_OK);
    cr_expect_str_eq(path, file, "the plain file alone");
}

/* A resumed run appends to a plain raw.jsonl: a gzipped one is refused, and no second rows file
 * appears. */
Test(folder, resume_into_gzipped_rows_is_refused)
{
    char dir[4096], path[4096];
    snprintf(dir, sizeof dir, "%s", tmpdir);
    write_gz("raw.jsonl.gz", "{}\n", path, sizeof path);
    folder_run_spec spec = {dir, "unused", "sw", 1};
    char got[4096];
    int lock = 0;
    tune_error err = {0};
    cr_expect_eq(folder_open_run(&spec, got, sizeof got, &lock, &err), TUNE_ERR_IO);
    cr_expect_eq(lock, -1);
    cr_expect_str_eq(err.where, path);
    cr_expect(strstr(err.message, "gunzip it first") != NULL, "%s", err.message);
    snprintf(path, sizeof path, "%s/raw.jsonl", tmpdir);
    cr_expect_neq(access(path, F_OK), 0, "no plain raw.jsonl started beside the .gz");
    snprintf(path, sizeof path, "%s/lock", tmpdir);
    cr_expect_neq(access(path, F_OK), 0, "the lock released");
    /* without --resume the folder holds a run */
    spec.resume = 0;
    tune_error_clear(&err);
    cr_expect_eq(folder_open_run(&spec, got, sizeof got, &lock, &err), TUNE_ERR_IO);
    cr_expect(strstr(err.message, "already holds a run (raw.jsonl.gz)") != NULL, "%s", err.message);
}

/* Links inside a results folder: the files tune writes in place (the lock, raw.jsonl appended,
 * retime.jsonl, the partial line cut) are never opened through one, and the file a link points to
 * is left as it was; only folders that hold a run count when --resume looks for the latest. */
Test(folder, links_in_a_results_folder_are_never_followed)
{
    char victim[4096], link[8200], dir[4096];
    write_file("victim.txt", "keep me\n", victim, sizeof victim);
    snprintf(dir, sizeof dir, "%s/run", tmpdir);
    cr_assert_eq(mkdir(dir, 0755), 0);
    static const char *const names[] = {"lock", "raw.jsonl", "retime.jsonl"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(link, sizeof link, "%s/%s", dir, names[i]);
        cr_assert_eq(symlink(victim, link), 0);
    }
    tune_error e1 = {0}, e2 = {0}, e3 = {0};
    cr_expect_lt(folder_lock(dir, &e1), 0, "a lock that is a link is refused");
    cr_expect(strstr(e1.message, "is a symbolic link") != NULL, "%s", e1.message);
    cr_expect(strstr(e1.where, "/run/lock") != NULL, "%s", e1.where);
    snprintf(link, sizeof link, "%s/raw.jsonl", dir);
    cr_expect_eq(folder_trim_partial_line(link, &e2), TUNE_ERR_IO);
    cr_expect(strstr(e2.message, "is a symbolic link") != NULL, "%s", e2.message);
    int fd = folder_open_file(link, O_WRONLY | O_APPEND | O_CREAT, "the rows", &e3);
    cr_expect_lt(fd, 0, "rows are never appended through a link");
    cr_expect(strstr(e3.message, "is a symbolic link") != NULL, "%s", e3.message);
    if (fd >= 0)
        close(fd);
    FILE *f = fopen(victim, "r");
    char buf[64] = "";
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    cr_expect_str_eq(buf, "keep me\n", "the file linked to is untouched");
}

Test(folder, latest_counts_only_folders_that_hold_a_run)
{
    char latest[4096], run[4096], other[4096];
    tune_error err = {0};
    write_deep("sw/20260101T000000Z/meta.json", "{}", run, sizeof run);
    write_deep("sw/notes.txt", "not a run", NULL, 0);
    write_deep("sw/20270101T000000Z/empty/x", "", NULL, 0); /* a folder without a run */
    write_deep("elsewhere/meta.json", "{}", NULL, 0);
    snprintf(other, sizeof other, "%s/elsewhere", tmpdir);
    char link[4096];
    snprintf(link, sizeof link, "%s/sw/zz_link", tmpdir);
    cr_assert_eq(symlink(other, link), 0);
    cr_assert_eq(folder_latest(tmpdir, "sw", latest, sizeof latest, &err), TUNE_OK, "%s",
                 err.message);
    cr_expect(strstr(latest, "/sw/20260101T000000Z") != NULL,
              "a file, a link and a folder without a run are not runs: %s", latest);
}

/* A writer killed mid-write (a merge, a run's meta.json) leaves "<name>.tmp.<pid>.<n>"; the next
 * one to take the folder's lock removes it, and nothing else. */
Test(folder, the_lock_removes_stale_temporaries_only)
{
    char dead[64], live[64];
    snprintf(dead, sizeof dead, "raw.jsonl.tmp.%d.77", 999999999); /* above any pid_max */
    snprintf(live, sizeof live, "meta.json.tmp.%d.3", (int)getpid());
    static const char *const kept[] = {"notes.tmp.txt", "raw.jsonl.tmp.12x.3", "x.tmp.-5.1",
                                       "raw.jsonl"};
    char path[4096];
    write_file(dead, "{\"half\": ", path, sizeof path);
    write_file(live, "{}", path, sizeof path);
    for (size_t i = 0; i < 4; i++)
        write_file(kept[i], "x", path, sizeof path);
    tune_error err = {0};
    int fd = folder_lock(tmpdir, &err);
    cr_assert_geq(fd, 0, "%s", err.message);
    snprintf(path, sizeof path, "%s/%s", tmpdir, dead);
    cr_expect_neq(access(path, F_OK), 0, "a dead writer's temporary is removed");
    snprintf(path, sizeof path, "%s/%s", tmpdir, live);
    cr_expect_eq(access(path, F_OK), 0, "a live writer's temporary is kept");
    for (size_t i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, kept[i]);
        cr_expect_eq(access(path, F_OK), 0, "%s is kept", kept[i]);
    }
    folder_unlock(tmpdir, fd);
}

/* A gzip file may be several members (cat a.gz b.gz): every member is read, and a damaged one
 * (a bad header, a bad checksum, trailing bytes that are no member) is an error naming the file
 * and the line it falls in, never the end of the text. */
Test(folder, every_gzip_member_is_read_and_a_damaged_one_refused)
{
    char one[4096], two[4096], cat[4096], out[4096], cmd[20000];
    write_gz("one.gz", "{\"a\": 1}\n{\"a\": 2}\n", one, sizeof one);
    write_gz("two.gz", "{\"a\": 3}\n", two, sizeof two);
    snprintf(cat, sizeof cat, "%s/cat.jsonl.gz", tmpdir);
    snprintf(cmd, sizeof cmd, "cat '%s' '%s' > '%s'", one, two, cat);
    cr_assert_eq(system(cmd), 0);
    tune_error err = {0};
    cr_assert_eq(read_lines(cat, INFILE_MAX_ROWS, 1024, out, sizeof out, &err), TUNE_OK, "%s",
                 err.message);
    cr_expect_str_eq(out, "{\"a\": 1}|{\"a\": 2}|{\"a\": 3}|", "both members' lines");
    long size1 = file_size(one), size = file_size(cat);
    static const struct {
        long at; /* <0: from the end */
        const char *want;
    } damage[] = {{0, "corrupt gzip file: "},  /* the second member's magic */
                  {3, "corrupt gzip file: "},  /* its flags */
                  {-6, "corrupt gzip file: "}, /* its CRC-32 */
                  {-1, "corrupt gzip file: "}}; /* its length */
    for (size_t i = 0; i < sizeof damage / sizeof damage[0]; i++) {
        snprintf(cmd, sizeof cmd, "cat '%s' '%s' > '%s'", one, two, cat);
        cr_assert_eq(system(cmd), 0);
        flip_byte(cat, damage[i].at < 0 ? damage[i].at : size1 + damage[i].at - size);
        tune_error_clear(&err);
        cr_expect_eq(read_lines(cat, INFILE_MAX_ROWS, 1024, out, sizeof out, &err),
                     TUNE_ERR_INVALID, "damage %zu read as %s", i, out);
        cr_expect_str_eq(err.where, cat);
        cr_expect(strstr(err.message, damage[i].want) == err.message, "%zu: %s", i, err.message);
        cr_expect(strstr(err.message, "gzip member 2") != NULL, "%zu: %s", i, err.message);
    }
    /* bytes after the last member that make no member: garbage, or a member cut short */
    static const char *const tails[] = {"garbage\n", "\x1f\x8b", "\x1f"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(cmd, sizeof cmd, "cat '%s' > '%s' && printf '%%s' '%s' >> '%s'", one, cat,
                 tails[i], cat);
        cr_assert_eq(system(cmd), 0);
        tune_error_clear(&err);
        cr_expect_eq(read_lines(cat, INFILE_MAX_ROWS, 1024, out, sizeof out, &err),
                     TUNE_ERR_INVALID, "tail %zu read as %s", i, out);
        cr_expect(strstr(err.message, "gzip file") != NULL, "%zu: %s", i, err.message);
        cr_expect(strstr(err.message, "(in line 3 of the text, gzip member 2)") != NULL, "%zu: %s",
                  i, err.message);
    }
}

/* A NUL byte inside a line would end it for every reader of C strings: the line's rest would be
 * lost without a word. It is an error naming the file, the line and the column. */
Test(folder, a_nul_byte_in_a_line_is_refused)
{
    char path[4096], where[4200], out[4096];
    snprintf(path, sizeof path, "%s/nul.jsonl", tmpdir);
    FILE *f = fopen(path, "wb");
    static const char text[] = "{\"a\": 1}\n{\"a\": 2}\0{\"a\": 3}\n";
    fwrite(text, 1, sizeof text - 1, f);
    fclose(f);
    for (int gz = 0; gz < 2; gz++) {
        char cmd[9000];
        if (gz) {
            snprintf(cmd, sizeof cmd, "gzip -9n -c '%s' > '%s.gz'", path, path);
            cr_assert_eq(system(cmd), 0);
            strcat(path, ".gz");
        }
        tune_error err = {0};
        cr_expect_eq(read_lines(path, INFILE_MAX_ROWS, 1024, out, sizeof out, &err),
                     TUNE_ERR_INVALID);
        snprintf(where, sizeof where, "%s:2", path);
        cr_expect_str_eq(err.where, where);
        cr_expect_str_eq(err.message,
                         "a NUL byte at column 9: a line of text holds none (a damaged file?)");
    }
}
