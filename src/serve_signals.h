#ifndef GPULEDGER_SERVE_SIGNALS_H
#define GPULEDGER_SERVE_SIGNALS_H
#include <signal.h>

/* The signals serve answers: SIGTERM and SIGINT stop it, SIGHUP reloads the
 * rules. They are blocked in every thread and taken on the main thread
 * between refreshes, so a handler never runs in the middle of one. */

/* Blocks SIGTERM, SIGINT and SIGHUP in the calling thread, and so in every
 * thread it starts afterwards (the HTTP server's), saving the previous mask
 * in *saved: the signals then wait for serve_signal_wait on the main thread. */
void serve_signals_block(sigset_t *saved);

/* Waits up to timeout_ms for SIGTERM, SIGINT or SIGHUP. Returns the signal
 * number, or 0 when the time ran out first (or another signal came: the
 * caller looks at its clock again). */
int serve_signal_wait(long timeout_ms);

/* Discards those signals if any are pending, and restores the mask saved by
 * serve_signals_block. */
void serve_signals_restore(const sigset_t *saved);

#endif
