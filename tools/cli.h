/* cli.h - what every command's option parsing shares: numbers parsed whole and range-checked,
 * paths that must not be empty, one message format and one exit status for usage errors.
 *
 *   long long n;
 *   if (cli_int("run", "--device", val, 0, CLI_MAX_DEVICE, &n) != 0)
 *       return CLI_EXIT_USAGE;
 *   // printed: tune run: --device expects an integer in [0, 1023], got 'abc'
 *
 * Each parser returns 0 and fills *out, or prints one line on stderr,
 * "tune CMD: --opt expects WHAT, got 'VALUE'", and returns -1; the caller exits with
 * CLI_EXIT_USAGE. Nothing here exits.
 */
#ifndef TUNE_CLI_H
#define TUNE_CLI_H

#include <stddef.h>
#include <stdint.h>

/* The exit statuses of every command (README "Exit status"; `tune help`). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_FAILURE = 1, /* the command ran and failed (a regression, a kernel not compiled) */
    CLI_EXIT_USAGE = 2,   /* a usage error: an unknown option, a malformed or out-of-range value */
    CLI_EXIT_NO_GPU = 3   /* the command needs a GPU and there is none (or no driver) */
};

#define CLI_MAX_DEVICE 1023

/* An integer written whole in decimal (an optional sign, digits, nothing else) in [lo, hi]. */
int cli_int(const char *cmd, const char *opt, const char *val, long long lo, long long hi,
            long long *out);
/* An unsigned 64-bit integer, decimal or 0x-hexadecimal, written whole, no sign. */
int cli_u64(const char *cmd, const char *opt, const char *val, uint64_t *out);
/* A finite number written whole in [lo, hi]; lo itself is refused when lo_open. what, when not
 * NULL, names the unit in the message ("seconds", "GB/s"). */
int cli_double(const char *cmd, const char *opt, const char *val, double lo, double hi,
               int lo_open, const char *what, double *out);
/* A percentage, "5" or "5%", in [0, 1e6] into *out (the number of percent); as cli_double. */
int cli_percent(const char *cmd, const char *opt, const char *val, double *out);
/* A path that is not empty (an empty path would resolve to the current folder's parent or to
 * "/" once a name is appended to it). */
int cli_path(const char *cmd, const char *opt, const char *val);
/* The folder a reader writes (--out DIR; is_file: the folder of --header FILE) against the folders
 * it reads (n of them): one that is, or resolves to, one of them or a folder inside it (through
 * links, by identity: outfile_dir_within) is refused, since the folders read are never written:
 * "tune CMD: OPT OUT is DIR or inside it, a folder read: ...". 0, or -1 after the message. */
int cli_out_apart(const char *cmd, const char *opt, const char *out, const char *const *dirs,
                  size_t n, int is_file);
/* sm_NN: the architecture number NN in [50, 255] into *out. */
int cli_arch(const char *cmd, const char *opt, const char *val, int *out);
/* "all" or a comma-separated list of device ordinals without repeats ("0,1,3"). */
int cli_gpus(const char *cmd, const char *opt, const char *val);

#endif
