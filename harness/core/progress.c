/* progress.c - rate-limited progress lines (progress.h). */
#include "core/progress.h"

#include <math.h>
#include <string.h>

static void progress_duration(double s, char *buf, size_t size)
{
    if (!(s >= 0) || s > 1e7)
        snprintf(buf, size, "?");
    else if (s < 60)
        snprintf(buf, size, "%.0fs", floor(s));
    else if (s < 3600)
        snprintf(buf, size, "%dm %02ds", (int)(s / 60), (int)fmod(s, 60));
    else
        snprintf(buf, size, "%dh %02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
}

void progress_init(progress *p, FILE *out, const char *what, size_t total, int tty, double now)
{
    memset(p, 0, sizeof *p);
    p->out = out;
    p->what = what;
    p->total = total;
    p->tty = tty;
    p->start = now;
    p->last = now - 1e9;
}

const char *progress_format(const progress *p, double now, char *buf, size_t size)
{
    char elapsed[32], left[64] = "";
    double t = now - p->start;
    progress_duration(t, elapsed, sizeof elapsed);
    /* the rate of the work actually done: cached items cost nothing */
    size_t worked = p->done - (p->cached < p->done ? p->cached : p->done);
    size_t rest = p->total > p->done ? p->total - p->done : 0;
    if (worked > 0 && rest > 0) {
        char eta[32];
        progress_duration(t / (double)worked * (double)rest, eta, sizeof eta);
        snprintf(left, sizeof left, ", about %s left", eta);
    }
    snprintf(buf, size, "%s: %zu/%zu (%zu cached), %s elapsed%s", p->what, p->done, p->total,
             p->cached, elapsed, left);
    return buf;
}

static void progress_print(progress *p, double now)
{
    char line[256];
    progress_format(p, now, line, sizeof line);
    if (p->tty)
        fprintf(p->out, "\r\033[Ktune: %s", line);
    else
        fprintf(p->out, "tune: %s\n", line);
    fflush(p->out);
    p->printed = 1;
    p->last = now;
}

void progress_update(progress *p, size_t done, size_t cached, double now)
{
    p->done = done;
    p->cached = cached;
    if (!p->out || now - p->start < PROGRESS_QUIET_S)
        return;
    if (now - p->last >= (p->tty ? PROGRESS_TTY_S : PROGRESS_LOG_S))
        progress_print(p, now);
}

void progress_end(progress *p, double now)
{
    if (!p->out || !p->printed)
        return;
    if (p->tty) {
        progress_print(p, now);
        fputc('\n', p->out);
        fflush(p->out);
    } else if (p->last != now) {
        progress_print(p, now);
    }
}
