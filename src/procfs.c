/* /proc/<pid>/cgroup → the container a process runs in (SPEC 2.2). */
#include "procfs.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int is_lower_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int is_hex(char c)
{
    return is_lower_hex(c) || (c >= 'A' && c <= 'F');
}

static int line_contains(const char *line, size_t len, const char *word)
{
    return memmem(line, len, word, strlen(word)) != NULL;
}

/* The first container id in a line: a run of hex digits, bounded by non-hex
 * characters, exactly CONTAINER_ID_LEN long and all lowercase. A longer run
 * (some other hash) or one with upper-case digits is not an id. Returns NULL
 * when the line has none. */
static const char *find_container_id(const char *line, size_t len)
{
    size_t i = 0;
    while (i < len) {
        if (!is_hex(line[i])) {
            i++;
            continue;
        }
        size_t run_start = i;
        int all_lower = 1;
        while (i < len && is_hex(line[i])) {
            all_lower &= is_lower_hex(line[i]);
            i++;
        }
        if (i - run_start == CONTAINER_ID_LEN && all_lower)
            return line + run_start;
    }
    return NULL;
}

/* The runtime a cgroup line names, most specific first, or NULL. */
static const char *line_runtime(const char *line, size_t len)
{
    static const char *const runtimes[] = {"libpod", "docker", "containerd", "nomad"};
    for (size_t i = 0; i < sizeof runtimes / sizeof runtimes[0]; i++)
        if (line_contains(line, len, runtimes[i]))
            return runtimes[i];
    return NULL;
}

/* As procfs.h says; id_out is "" when NULL is returned. */
const char *cgroup_container_id(const char *text, size_t len, char id_out[CONTAINER_ID_LEN + 1])
{
    id_out[0] = '\0';
    if (!text)
        return NULL;
    const char *end = text + len;
    for (const char *line = text; line < end;) {
        const char *newline = memchr(line, '\n', (size_t)(end - line));
        size_t line_len = newline ? (size_t)(newline - line) : (size_t)(end - line);
        const char *next = newline ? newline + 1 : end;
        if (!line_contains(line, line_len, "libpod-conmon-")) {
            const char *id = find_container_id(line, line_len);
            const char *runtime = id ? line_runtime(line, line_len) : NULL;
            if (runtime) {
                memcpy(id_out, id, CONTAINER_ID_LEN);
                id_out[CONTAINER_ID_LEN] = '\0';
                return runtime;
            }
        }
        line = next;
    }
    return NULL;
}

/* As procfs.h says; a pid <= 0 or a cap of 0 gives -1, a NULL proc_root
 * means "/proc", and a longer file is cut at cap-1 bytes. */
long procfs_read_cgroup(const char *proc_root, long pid, char *buf, size_t cap)
{
    char path[PATH_MAX];
    if (pid <= 0 || cap == 0)
        return -1;
    if (!proc_root)
        proc_root = "/proc";
    int path_len = snprintf(path, sizeof path, "%s/%ld/cgroup", proc_root, pid);
    if (path_len < 0 || (size_t)path_len >= sizeof path)
        return -1;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t len = 0;
    while (len < cap - 1) {
        ssize_t n = read(fd, buf + len, cap - 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) { /* EISDIR, or ESRCH when the process went away */
            close(fd);
            return -1;
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    close(fd);
    buf[len] = '\0';
    return (long)len;
}
