/* Reading the kernel log buffer through /dev/kmsg without blocking (the
 * kernel's dev-kmsg ABI: one record per read, EAGAIN at the end, EPIPE when
 * records were overwritten). */
#include "kmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cause.h"

/* The kernel's CONSOLE_EXT_LOG_MAX: a record that does not fit gives EINVAL. */
#define RECORD_MAX 8192

/* Appends n bytes to the growing buffer *text of *len bytes (capacity *cap).
 * Returns 0, or -1 when memory runs out. */
static int append(char **text, size_t *len, size_t *cap, const char *bytes, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t new_cap = *cap ? *cap : RECORD_MAX;
        while (*len + n + 1 > new_cap)
            new_cap *= 2;
        char *grown = realloc(*text, new_cap);
        if (!grown)
            return -1;
        *text = grown;
        *cap = new_cap;
    }
    memcpy(*text + *len, bytes, n);
    *len += n;
    (*text)[*len] = '\0';
    return 0;
}

/* As kmsg.h says. */
int kmsg_read(const char *path, size_t max_bytes, char **text, size_t *len, char *cause,
              size_t cause_cap)
{
    *text = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return cause_set(cause, cause_cap, "%s: %s", path, strerror(errno));
    char record[RECORD_MAX + 1];
    char *out = NULL;
    size_t out_len = 0, cap = 0;
    for (;;) {
        ssize_t n = read(fd, record, RECORD_MAX);
        if (n == 0)
            break; /* a plain file ends; the kernel's buffer says EAGAIN */
        if (n < 0) {
            if (errno == EINTR || errno == EPIPE)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;
            cause_set(cause, cause_cap, "%s: %s", path, strerror(errno));
            goto fail;
        }
        if (out_len + (size_t)n > max_bytes) {
            cause_set(cause, cause_cap, "%s: more than %zu bytes", path, max_bytes);
            goto fail;
        }
        if (append(&out, &out_len, &cap, record, (size_t)n) != 0) {
            cause_set(cause, cause_cap, "%s: %s", path, strerror(ENOMEM));
            goto fail;
        }
    }
    close(fd);
    if (!out && append(&out, &out_len, &cap, "", 0) != 0)
        return cause_set(cause, cause_cap, "%s: %s", path, strerror(ENOMEM));
    *text = out;
    *len = out_len;
    return 0;
fail:
    close(fd);
    free(out);
    return -1;
}
