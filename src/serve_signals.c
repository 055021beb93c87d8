/* serve's signals, taken synchronously on the main thread (serve_signals.h). */
#include "serve_signals.h"

#include <pthread.h>
#include <time.h>

/* Fills set with SIGTERM, SIGINT and SIGHUP. */
static void serve_signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGHUP);
}

/* As serve_signals.h says. */
void serve_signals_block(sigset_t *saved)
{
    sigset_t set;
    serve_signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, saved);
}

/* As serve_signals.h says. */
int serve_signal_wait(long timeout_ms)
{
    sigset_t set;
    serve_signal_set(&set);
    if (timeout_ms < 0)
        timeout_ms = 0;
    struct timespec timeout = {timeout_ms / 1000, (timeout_ms % 1000) * 1000000L};
    int sig = sigtimedwait(&set, NULL, &timeout);
    return sig > 0 ? sig
                   : 0; /* EAGAIN: time is up; EINTR: another signal, the caller looks again */
}

/* As serve_signals.h says. */
void serve_signals_restore(const sigset_t *saved)
{
    sigset_t set;
    serve_signal_set(&set);
    struct timespec now = {0, 0};
    while (sigtimedwait(&set, NULL, &now) > 0)
        ;
    pthread_sigmask(SIG_SETMASK, saved, NULL);
}
