/* The one way a cause is written into a caller's buffer (cause.h). */
#include "cause.h"

#include <stdarg.h>
#include <stdio.h>

/* As cause.h says. */
int cause_set(char *cause, size_t cause_cap, const char *format, ...)
{
    if (cause && cause_cap > 0) {
        va_list args;
        va_start(args, format);
        vsnprintf(cause, cause_cap, format, args);
        va_end(args);
    }
    return -1;
}
