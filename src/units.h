#ifndef GPULEDGER_UNITS_H
#define GPULEDGER_UNITS_H
#include <stddef.h>

/* Writes "4 MiB", "64 KiB" or "1000 bytes" for a byte count into out: the
 * largest unit that divides it. */
void format_size(char *out, size_t outlen, size_t bytes);

#endif
