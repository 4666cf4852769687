#include "core/interrupt.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define INTERRUPT_MAX_CHILDREN 256
#define INTERRUPT_MAX_CLEANUPS 64

typedef struct {
    void (*fn)(const char *path);
    char *path;
} interrupt_cleanup;

/* Process-wide: a signal belongs to the process (interrupt.h). */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t drained; /* holds fell to 0 during a stop */
    pthread_cond_t never;   /* what enter waits on during a stop: never signalled */
    int holds;              /* threads between interrupt_enter and interrupt_leave */
    int stopping;           /* the signal of the stop under way, 0 */
    pid_t children[INTERRUPT_MAX_CHILDREN];
    size_t n_children;
    interrupt_cleanup cleanups[INTERRUPT_MAX_CLEANUPS];
    size_t n_cleanups;
    sigset_t set;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER,
       .drained = PTHREAD_COND_INITIALIZER,
       .never = PTHREAD_COND_INITIALIZER};

static _Thread_local int depth;      /* this thread's nesting of interrupt_enter */
static _Thread_local int is_stopper; /* the stopping thread: its cleanups never wait */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* fork: the child gets a copy of the state with no other thread in it (no stopper either); the
 * forking thread's holds are its only ones, and the parent's children and cleanups are not its
 * business. */
static void at_prepare(void)
{
    pthread_mutex_lock(&g.mu);
}

static void at_parent(void)
{
    pthread_mutex_unlock(&g.mu);
}

static void at_child(void)
{
    pthread_mutex_init(&g.mu, NULL);
    pthread_cond_init(&g.drained, NULL);
    pthread_cond_init(&g.never, NULL);
    g.holds = depth > 0;
    g.stopping = 0;
    g.n_children = 0;
    for (size_t i = 0; i < g.n_cleanups; i++)
        free(g.cleanups[i].path);
    g.n_cleanups = 0;
}

static void register_fork_handlers(void)
{
    pthread_atfork(at_prepare, at_parent, at_child);
}

void interrupt_enter(void)
{
    pthread_once(&once, register_fork_handlers);
    if (is_stopper || depth++ > 0)
        return;
    pthread_mutex_lock(&g.mu);
    while (g.stopping) /* the process ends before this returns */
        pthread_cond_wait(&g.never, &g.mu);
    g.holds++;
    pthread_mutex_unlock(&g.mu);
}

void interrupt_leave(void)
{
    if (is_stopper || depth == 0 || --depth > 0)
        return;
    pthread_mutex_lock(&g.mu);
    if (--g.holds == 0 && g.stopping)
        pthread_cond_signal(&g.drained);
    pthread_mutex_unlock(&g.mu);
}

void interrupt_child_add(pid_t pid)
{
    pthread_once(&once, register_fork_handlers);
    pthread_mutex_lock(&g.mu);
    if (g.n_children < INTERRUPT_MAX_CHILDREN)
        g.children[g.n_children++] = pid;
    pthread_mutex_unlock(&g.mu);
}

void interrupt_child_remove(pid_t pid)
{
    pthread_mutex_lock(&g.mu);
    for (size_t i = 0; i < g.n_children; i++)
        if (g.children[i] == pid) {
            g.children[i] = g.children[--g.n_children];
            break;
        }
    pthread_mutex_unlock(&g.mu);
}

void interrupt_cleanup_push(void (*fn)(const char *path), const char *path)
{
    char *copy = strdup(path);
    pthread_mutex_lock(&g.mu);
    if (copy && g.n_cleanups < INTERRUPT_MAX_CLEANUPS) {
        g.cleanups[g.n_cleanups++] = (interrupt_cleanup){fn, copy};
        copy = NULL;
    }
    pthread_mutex_unlock(&g.mu);
    free(copy);
}

void interrupt_cleanup_remove(void (*fn)(const char *path), const char *path)
{
    char *gone = NULL;
    pthread_mutex_lock(&g.mu);
    for (size_t i = g.n_cleanups; i-- > 0;)
        if (g.cleanups[i].fn == fn && strcmp(g.cleanups[i].path, path) == 0) {
            gone = g.cleanups[i].path;
            memmove(&g.cleanups[i], &g.cleanups[i + 1],
                    (g.n_cleanups - i - 1) * sizeof g.cleanups[0]);
            g.n_cleanups--;
            break;
        }
    pthread_mutex_unlock(&g.mu);
    free(gone);
}

int interrupt_stopping(void)
{
    return __atomic_load_n(&g.stopping, __ATOMIC_SEQ_CST);
}

void interrupt_wait_if_stopping(void)
{
    if (!interrupt_stopping() || is_stopper)
        return;
    pthread_mutex_lock(&g.mu); /* the stopper holds it to the end */
    while (g.stopping)
        pthread_cond_wait(&g.never, &g.mu);
    pthread_mutex_unlock(&g.mu);
}

static const char *signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

/* The stop (interrupt.h): the writes under way finished, the children killed and reaped, the
 * cleanups run, the process ended. The mutex is kept to the end: no child, cleanup or write
 * starts meanwhile. */
static _Noreturn void stop(int sig)
{
    is_stopper = 1;
    pthread_mutex_lock(&g.mu);
    __atomic_store_n(&g.stopping, sig, __ATOMIC_SEQ_CST);
    while (g.holds > 0)
        pthread_cond_wait(&g.drained, &g.mu);
    for (size_t i = 0; i < g.n_children; i++)
        kill(g.children[i], SIGKILL);
    for (size_t i = 0; i < g.n_children; i++)
        while (waitpid(g.children[i], NULL, 0) < 0 && errno == EINTR)
            ;
    for (size_t i = g.n_cleanups; i-- > 0;)
        g.cleanups[i].fn(g.cleanups[i].path);
    char msg[128];
    int n = snprintf(msg, sizeof msg, "%stune: stopped by %s (exit status %d)\n",
                     isatty(STDERR_FILENO) ? "\n" : "", signal_name(sig), 128 + sig);
    if (n > 0 && write(STDERR_FILENO, msg, (size_t)n) < 0)
        (void)0;
    _exit(128 + sig);
}

static void *stopper_main(void *arg)
{
    (void)arg;
    int sig = 0;
    while (sigwait(&g.set, &sig) != 0)
        ;
    stop(sig);
}

int interrupt_install(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    pthread_once(&once, register_fork_handlers);
    sigemptyset(&g.set);
    int any = 0;
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN) {
            sigaddset(&g.set, sigs[i]);
            any = 1;
        }
    }
    if (!any)
        return 0;
    int e = pthread_sigmask(SIG_BLOCK, &g.set, NULL);
    if (e != 0) {
        errno = e;
        return -1;
    }
    pthread_attr_t attr;
    pthread_t t;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    e = pthread_create(&t, &attr, stopper_main, NULL);
    pthread_attr_destroy(&attr);
    if (e != 0) {
        pthread_sigmask(SIG_UNBLOCK, &g.set, NULL);
        errno = e;
        return -1;
    }
    return 0;
}
