/* The monotonic clock (clock.h). */
#include "clock.h"

#include <time.h>

/* As clock.h says. */
int64_t monotonic_ns(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
}

/* As clock.h says. */
long long monotonic_ms(void)
{
    return monotonic_ns() / 1000000;
}
