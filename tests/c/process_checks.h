/* What the C tests of units that start processes check after each case:
 * no child left (zombie or not) and no descriptor left open. */
#ifndef GPULEDGER_TEST_PROCESS_CHECKS_H
#define GPULEDGER_TEST_PROCESS_CHECKS_H
#include <dirent.h>
#include <errno.h>
#include <sys/wait.h>

/* Whether this process has no child left, zombie or not. */
static inline int no_child_left(void)
{
    return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

/* How many descriptors this process has open (the listing's own included),
 * or -1. */
static inline int count_open_fds(void)
{
    DIR *dir = opendir("/proc/self/fd");
    int count = 0;
    if (!dir)
        return -1;
    while (readdir(dir))
        count++;
    closedir(dir);
    return count;
}

#endif
