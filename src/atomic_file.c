/* Writing a whole file atomically: temp file in the same directory, fsync,
 * rename over the target, fsync the directory. What the history file needs
 * so that kill -9 at any moment leaves either the previous refresh's file or
 * the new one, never half of one. */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TEMP_SUFFIX ".tmp"
#define TEMP_RANDOM "XXXXXX"

/* Formats "<path>: <step>: <strerror(errnum)>" into err, returns -1. */
static int fail(char *err, size_t err_cap, const char *path, const char *step, int errnum)
{
    snprintf(err, err_cap, "%s: %s: %s", path, step, strerror(errnum));
    return -1;
}

/* Creates dir and its missing parents with mode 0755 (mkdir -p). Returns 0,
 * or -1 with errno set; dir is modified while working and restored. */
static int make_dirs(char *dir)
{
    struct stat st;
    if (dir[0] == '\0' || stat(dir, &st) == 0)
        return 0;
    for (char *slash = dir + 1; *slash; slash++) {
        if (*slash != '/')
            continue;
        *slash = '\0';
        int rc = mkdir(dir, 0755);
        int err = errno;
        *slash = '/';
        if (rc != 0 && err != EEXIST) {
            errno = err;
            return -1;
        }
    }
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* Writes all len bytes to fd. Returns 0, or -1 with errno set. */
static int write_all(int fd, const char *data, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, data, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        data += n;
        len -= (size_t)n;
    }
    return 0;
}

/* fsyncs the directory dir ("" is the current one). Returns 0, or -1 with
 * errno set. */
static int sync_dir(const char *dir)
{
    int fd = open(dir[0] ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    errno = err;
    return rc;
}

int atomic_file_write(const char *path, const void *data, size_t len, char *err, size_t err_cap)
{
    char dir[PATH_MAX], temp[PATH_MAX];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    if (*base == '\0')
        return fail(err, err_cap, path, "want a file name", EISDIR);
    size_t dir_len = slash ? (size_t)(slash - path) : 0;
    if (slash && dir_len == 0)
        dir_len = 1; /* "/name": the root */
    int n = snprintf(temp, sizeof temp, "%s.%s%s", path, TEMP_RANDOM, TEMP_SUFFIX);
    if (dir_len >= sizeof dir || n < 0 || (size_t)n >= sizeof temp)
        return fail(err, err_cap, path, "path", ENAMETOOLONG);
    memcpy(dir, path, dir_len);
    dir[dir_len] = '\0';

    if (make_dirs(dir) != 0)
        return fail(err, err_cap, path, "create directory", errno);
    int fd = mkostemps(temp, (int)strlen(TEMP_SUFFIX), O_CLOEXEC);
    if (fd < 0)
        return fail(err, err_cap, path, "create temp file", errno);
    const char *step = NULL;
    if (fchmod(fd, 0644) != 0)
        step = "chmod temp file";
    else if (write_all(fd, data, len) != 0)
        step = "write temp file";
    else if (fsync(fd) != 0)
        step = "fsync temp file";
    int errnum = errno;
    if (close(fd) != 0 && !step) {
        step = "close temp file";
        errnum = errno;
    }
    if (!step && rename(temp, path) != 0) {
        step = "rename temp file";
        errnum = errno;
    }
    if (step) {
        unlink(temp);
        return fail(err, err_cap, path, step, errnum);
    }
    if (sync_dir(dir) != 0)
        return fail(err, err_cap, path, "fsync directory", errno);
    return 0;
}
