#ifndef GPULEDGER_CAUSE_H
#define GPULEDGER_CAUSE_H
#include <stddef.h>

/* How every C unit says why it failed: a function that can fail takes the
 * caller's buffer last, as `char *cause, size_t cause_cap`, returns -1 (or
 * NULL) and leaves one line there, written by cause_set. */

/* Writes the printf-formatted line into cause (nothing when cause is NULL or
 * cause_cap 0; always NUL-terminated, cut to fit). Returns -1, so that a
 * failure path can `return cause_set(...)`. */
int cause_set(char *cause, size_t cause_cap, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

#endif
