/* The process's descriptors shared out between the HTTP server and the
 * HTTP client (fd_budget.h). */
#include "fd_budget.h"

#include <dirent.h>
#include <stdint.h>
#include <sys/resource.h>

static unsigned server_reserved; /* connections of the servers running */

/* The soft RLIMIT_NOFILE, or RLIM_INFINITY when there is none (or it
 * cannot be read). */
static rlim_t soft_limit(void)
{
    struct rlimit limit;
    if (getrlimit(RLIMIT_NOFILE, &limit) != 0)
        return RLIM_INFINITY;
    return limit.rlim_cur;
}

/* How many descriptors this process has open (0 when /proc/self/fd
 * cannot be read; FD_BUDGET_HEADROOM then still stays free). */
static rlim_t open_now(void)
{
    DIR *dir = opendir("/proc/self/fd");
    if (!dir)
        return 0;
    rlim_t count = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL)
        if (entry->d_name[0] != '.')
            count++;
    closedir(dir);
    return count > 0 ? count - 1 : 0; /* not the directory's own */
}

/* As fd_budget.h says. */
unsigned fd_budget_reserve_server(unsigned wanted)
{
    rlim_t limit = soft_limit();
    if (limit != RLIM_INFINITY) {
        rlim_t half = limit > 2 * FD_BUDGET_HEADROOM ? (limit - FD_BUDGET_HEADROOM) / 2 : 16;
        if (half < wanted)
            wanted = (unsigned)half;
    }
    server_reserved += wanted;
    return wanted;
}

/* As fd_budget.h says. */
void fd_budget_release_server(unsigned connections)
{
    server_reserved -= connections < server_reserved ? connections : server_reserved;
}

/* As fd_budget.h says. */
size_t fd_budget_transfers(void)
{
    rlim_t limit = soft_limit();
    if (limit == RLIM_INFINITY)
        return SIZE_MAX;
    rlim_t taken = open_now() + FD_BUDGET_HEADROOM + server_reserved;
    if (limit <= taken + FD_BUDGET_PER_TRANSFER)
        return 1;
    rlim_t room = (limit - taken) / FD_BUDGET_PER_TRANSFER;
    return room < SIZE_MAX ? (size_t)room : SIZE_MAX;
}
