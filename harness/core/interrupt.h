/* interrupt.h - SIGINT, SIGTERM and SIGHUP stop tune cleanly: its child processes (compile child,
 * workers, a GPU's coordinator) killed, no file half-written, the folders it was writing left
 * whole, and the exit status 128 + the signal (130, 143, 129).
 *
 *   int main(int argc, char **argv) {
 *       interrupt_install();                  // first, before any thread or child exists
 *       ...
 *   }
 *   interrupt_enter();                        // a write that must finish whole (temporary file,
 *   write, fsync, rename; a row appended)     // then rename): a stop waits for it
 *   interrupt_leave();
 *   interrupt_cleanup_push(folder_cleanup, dir);   // done at a stop, after the children died
 *   interrupt_cleanup_remove(folder_cleanup, dir);
 *
 * interrupt_install blocks the signals in every thread (the OpenMP and NVRTC threads a compile
 * starts inherit the mask, and so do forked children) and waits for them in a thread of its own,
 * so that no handler ever runs inside NVRTC, libgomp or malloc. At a signal that thread: lets the
 * writes in progress (interrupt_enter .. interrupt_leave) finish and holds back new ones and new
 * children; kills the children (SIGKILL) and reaps them; runs the cleanups, last pushed first
 * (removing what a killed child left half-written); says so on stderr; and ends the process with
 * _exit (no atexit handler runs while other threads still compile). A signal ignored when tune
 * started (nohup, a background job of a shell without job control) stays ignored.
 *
 * Children inherit the blocked signals and have no such thread: they stop when their parent
 * kills them, or with it (worker.c's PR_SET_PDEATHSIG).
 *
 * The state is process-wide by nature (a signal is the process's); nothing else in tune keeps
 * mutable globals. Without interrupt_install (the tests, which link the library) the functions
 * only count and never stop anything.
 */
#ifndef TUNE_INTERRUPT_H
#define TUNE_INTERRUPT_H

#include <sys/types.h>

/* Blocks SIGINT, SIGTERM and SIGHUP (those not ignored) and starts the thread that handles them.
 * 0, or -1 with errno (then the signals keep their default action). Call once, first. */
int interrupt_install(void);

/* A write that must finish whole; enter and leave pair up per thread and nest. At a stop, enter
 * never returns (the process ends first). */
void interrupt_enter(void);
void interrupt_leave(void);

/* A child process killed (SIGKILL) and reaped at a stop. Add it while inside interrupt_enter
 * (around the fork), so that a stop cannot miss it; remove it before it is reaped. */
void interrupt_child_add(pid_t pid);
void interrupt_child_remove(pid_t pid);

/* fn(path) runs at a stop, after the children are dead, the last pushed first; path is copied.
 * Remove it (the same fn and path) when it no longer applies. At most 64 at a time; more are
 * dropped. */
void interrupt_cleanup_push(void (*fn)(const char *path), const char *path);
void interrupt_cleanup_remove(void (*fn)(const char *path), const char *path);

/* The signal that started a stop, 0 while none has. */
int interrupt_stopping(void);
/* Returns at once while no stop is under way; during one, waits for the process to end: what
 * a thread would say about a child killed by the stop (an error message) is never said. */
void interrupt_wait_if_stopping(void);

#endif
