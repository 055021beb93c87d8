/* Sizes as people read them in error messages. */
#include "units.h"

#include <stdio.h>

/* As units.h says. */
void format_size(char *out, size_t outlen, size_t bytes)
{
    const size_t kib = 1024, mib = 1024 * 1024;
    if (bytes >= mib && bytes % mib == 0)
        snprintf(out, outlen, "%zu MiB", bytes / mib);
    else if (bytes >= kib && bytes % kib == 0)
        snprintf(out, outlen, "%zu KiB", bytes / kib);
    else
        snprintf(out, outlen, "%zu bytes", bytes);
}
