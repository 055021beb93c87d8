#ifndef GPULEDGER_CLOCK_H
#define GPULEDGER_CLOCK_H
#include <stdint.h>

/* The one clock of every deadline and timeout in gpuledger: CLOCK_MONOTONIC,
 * which no change of the wall clock moves. core.monotonic_ms() gives scripts
 * the same clock, so a deadline computed in Lua means the same instant in C. */

/* Nanoseconds on the monotonic clock. */
int64_t monotonic_ns(void);

/* Milliseconds on the monotonic clock. */
long long monotonic_ms(void);

#endif
