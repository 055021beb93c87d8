/* Writing a whole file atomically: temp file in the same directory, fsync,
 * rename over the target, fsync the directory. What the history file needs
 * so that kill -9 at any moment leaves either the previous refresh's file or
 * the new one, never half of one; and, since gpuledger trusts what it reads
 * back, the checks that no other user could have written it, and a way to
 * keep a file that could not be used aside rather than overwrite it. Also
 * write_all, the write loop that isolate.c's child shares. */
#include "atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cause.h"

#define TEMP_SUFFIX ".tmp"
#define TEMP_RANDOM "XXXXXX"

/* Writes "<path>: <step>: <strerror(errnum)>" into cause, returns -1. */
static int fail(char *cause, size_t cause_cap, const char *path, const char *step, int errnum)
{
    return cause_set(cause, cause_cap, "%s: %s: %s", path, step, strerror(errnum));
}

/* Creates dir and its missing parents with mode 0700 (mkdir -p; whatever the
 * umask, never writable by others). Returns 0, or -1 with errno set; dir is
 * modified while working and restored. */
static int make_dirs(char *dir)
{
    struct stat st;
    if (dir[0] == '\0' || stat(dir, &st) == 0)
        return 0;
    for (char *slash = dir + 1; *slash; slash++) {
        if (*slash != '/')
            continue;
        *slash = '\0';
        int rc = mkdir(dir, 0700);
        int err = errno;
        *slash = '/';
        if (rc != 0 && err != EEXIST) {
            errno = err;
            return -1;
        }
    }
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

/* As atomic_file.h says. */
int write_all(int fd, const void *data, size_t len)
{
    const char *bytes = data;
    while (len > 0) {
        ssize_t n = write(fd, bytes, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0) {
            errno = EIO; /* no progress: never loop on it */
            return -1;
        }
        bytes += n;
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

/* The directory part of path into dir ("" for a bare name, "/" for
 * "/name"). Returns 0, or -1 when it does not fit or path names no file. */
static int split_dir(const char *path, char *dir, size_t dir_cap)
{
    const char *slash = strrchr(path, '/');
    if ((slash ? slash[1] : path[0]) == '\0')
        return -1;
    size_t dir_len = slash ? (size_t)(slash - path) : 0;
    if (slash && dir_len == 0)
        dir_len = 1; /* "/name": the root */
    if (dir_len >= dir_cap)
        return -1;
    memcpy(dir, path, dir_len);
    dir[dir_len] = '\0';
    return 0;
}

/* What a file of mode is when it is no regular file, as a message says it
 * ("a symbolic link"). */
static const char *file_kind(mode_t mode)
{
    if (S_ISLNK(mode))
        return "a symbolic link";
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode))
        return "a device";
    return "no regular file";
}

/* The checks of atomic_file_check, on path whose directory is dir. */
static int check_private(const char *path, const char *dir, char *cause, size_t cause_cap)
{
    struct stat st;
    uid_t me = geteuid();
    if (stat(dir[0] ? dir : ".", &st) != 0)
        return errno == ENOENT ? 0 : fail(cause, cause_cap, path, "stat directory", errno);
    if (st.st_uid != me && st.st_uid != 0) {
        return cause_set(
            cause, cause_cap,
            "%s: refused: the directory %s belongs to uid %u, not to this user (uid %u) "
            "or root",
            path, dir[0] ? dir : ".", (unsigned)st.st_uid, (unsigned)me);
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        return cause_set(cause, cause_cap,
                         "%s: refused: the directory %s is writable by other users (mode %04o)",
                         path, dir[0] ? dir : ".", (unsigned)(st.st_mode & 07777));
    }
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : fail(cause, cause_cap, path, "stat", errno);
    if (!S_ISREG(st.st_mode)) {
        return cause_set(cause, cause_cap,
                         "%s: refused: it is %s, not a file (a save would replace it); give "
                         "the path of the history file itself",
                         path, file_kind(st.st_mode));
    }
    if (st.st_uid != me) {
        return cause_set(cause, cause_cap,
                         "%s: refused: it belongs to uid %u, not to this user (uid %u)", path,
                         (unsigned)st.st_uid, (unsigned)me);
    }
    return 0;
}

/* As atomic_file.h says. */
int atomic_file_check(const char *path, char *cause, size_t cause_cap)
{
    char dir[PATH_MAX];
    if (split_dir(path, dir, sizeof dir) != 0)
        return fail(cause, cause_cap, path, "path", ENAMETOOLONG);
    return check_private(path, dir, cause, cause_cap);
}

/* As atomic_file.h says. */
int atomic_file_write(const char *path, const void *data, size_t len, char *cause, size_t cause_cap)
{
    char dir[PATH_MAX], temp[PATH_MAX];
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    if (*base == '\0')
        return fail(cause, cause_cap, path, "want a file name", EISDIR);
    int n = snprintf(temp, sizeof temp, "%s.%s%s", path, TEMP_RANDOM, TEMP_SUFFIX);
    if (split_dir(path, dir, sizeof dir) != 0 || n < 0 || (size_t)n >= sizeof temp)
        return fail(cause, cause_cap, path, "path", ENAMETOOLONG);

    if (make_dirs(dir) != 0)
        return fail(cause, cause_cap, path, "create directory", errno);
    if (check_private(path, dir, cause, cause_cap) != 0)
        return -1;
    int fd = mkostemps(temp, (int)strlen(TEMP_SUFFIX), O_CLOEXEC);
    if (fd < 0)
        return fail(cause, cause_cap, path, "create temp file", errno);
    const char *step = NULL;
    if (fchmod(fd, 0600) != 0)
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
        return fail(cause, cause_cap, path, step, errnum);
    }
    if (sync_dir(dir) != 0)
        return fail(cause, cause_cap, path, "fsync directory", errno);
    return 0;
}

/* As atomic_file.h says. */
int atomic_file_keep_aside(const char *path, char *aside, size_t aside_cap, char *cause,
                           size_t cause_cap)
{
    char stamp[32];
    time_t now = time(NULL);
    struct tm utc;
    gmtime_r(&now, &utc);
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &utc);
    for (int attempt = 1; attempt <= 100; attempt++) {
        char number[16] = "";
        if (attempt > 1)
            snprintf(number, sizeof number, "-%d", attempt);
        int n = snprintf(aside, aside_cap, "%s.corrupt-%s%s", path, stamp, number);
        if (n < 0 || (size_t)n >= aside_cap)
            return fail(cause, cause_cap, path, "keep aside", ENAMETOOLONG);
        if (renameat2(AT_FDCWD, path, AT_FDCWD, aside, RENAME_NOREPLACE) == 0)
            return 0;
        if (errno != EEXIST)
            return fail(cause, cause_cap, path, "keep aside", errno);
    }
    return fail(cause, cause_cap, path, "keep aside", EEXIST);
}
