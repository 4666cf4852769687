/* worker.h - a function run in a child process, with a pipe for its messages and a watchdog, so
 * that a crash or a hang ends only the child (crash isolation: a sticky CUDA error kills a
 * process's context, and a hung kernel holds its stream forever).
 *
 *   worker *w = worker_start(body, ctx, &err);     // fork; the child runs body(ctx, fd) and exits
 *   char line[1024];
 *   int r = worker_read_line(w, line, sizeof line, 5.0);   // 1: a line, 0: end, -1: time-out
 *   if (r < 0) worker_kill(w);
 *   char how[128]; int status = worker_wait(w, how, sizeof how);   // frees w
 *
 * The parent must not have initialised the CUDA runtime before fork (the child owns the GPU).
 */
#ifndef TUNE_WORKER_H
#define TUNE_WORKER_H

#include <stddef.h>

#include "core/error.h"

typedef struct worker worker;

/* The child's body: writes lines to fd (worker_send); its return value is the exit status. */
typedef int (*worker_fn)(void *ctx, int fd);

/* New worker running fn(ctx, fd) in a child process, or NULL with err set. */
TUNE_MUST_CHECK worker *worker_start(worker_fn fn, void *ctx, tune_error *err);
/* Child side: sends one line (a newline is appended), written whole. */
void worker_send(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Reads the next line (without its newline) within timeout_s seconds (0: only what has come
 * already): 1 a line, 0 the child closed its end (it exited or crashed), -1 time-out. */
int worker_read_line(worker *w, char *buf, size_t size, double timeout_s);

/* A worker that is also told what to do, line by line, while it runs:
 *
 *   worker *w = worker_start_duplex(body, ctx, &err);  // the child runs body(ctx, fd, in)
 *   worker_tell(w, "G %d", 1);                          // parent: one line to the child
 *   // child: while (worker_recv(in, line, sizeof line) == 1) ... worker_send(fd, "D");
 *
 * The child's inbox is its end of a socket pair: a child that has ended makes worker_tell fail
 * (-1), not the parent die of SIGPIPE. */
typedef struct worker_inbox worker_inbox;
typedef int (*worker_duplex_fn)(void *ctx, int fd, worker_inbox *in);
TUNE_MUST_CHECK worker *worker_start_duplex(worker_duplex_fn fn, void *ctx, tune_error *err);
/* Parent side: sends one line (a newline is appended; lines of any length, written whole). 0, or
 * -1 when the child's end is closed (it ended) or w is not a duplex worker. */
int worker_tell(worker *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Child side: the parent's next line (without its newline), waiting for it: 1 a line (cut to
 * size), 0 the parent closed its end. */
int worker_recv(worker_inbox *in, char *buf, size_t size);
/* Parent side: waits up to timeout_s seconds for one of the workers ws[0..n) (NULL entries
 * skipped) to have a line or its end to read (worker_read_line then returns at once); its index,
 * or -1 at the time-out. */
int worker_poll(worker *const *ws, size_t n, double timeout_s);
/* Kills the child (SIGKILL). */
void worker_kill(worker *w);
/* Waits for the child, describes how it ended ("exit status 0", "killed by signal 11
 * (Segmentation fault)") and frees w. Returns the exit status, or 128 + signal. */
int worker_wait(worker *w, char *how, size_t size);

#endif
