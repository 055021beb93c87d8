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

/* The sequence number of the record that starts at line ("prio,seq,…"), or
 * -1 for a line that starts none (a continuation line, " KEY=value"). */
static long long record_seq(const char *line)
{
    if (*line < '0' || *line > '9')
        return -1;
    const char *comma = strchr(line, ',');
    if (!comma || comma[1] < '0' || comma[1] > '9')
        return -1;
    return strtoll(comma + 1, NULL, 10);
}

/* Keeps, in place, the lines of the len bytes of text (NUL-terminated) that
 * belong to records numbered above after_seq (a continuation line goes with
 * its record; a line before any record is kept). Sets *last_seq to the
 * highest number read (-1: none). Returns the new length. */
static size_t keep_after(char *text, size_t len, long long after_seq, long long *last_seq)
{
    size_t kept = 0;
    int keeping = 1;
    *last_seq = -1;
    for (size_t at = 0; at < len;) {
        char *newline = memchr(text + at, '\n', len - at);
        size_t end = newline ? (size_t)(newline - text) + 1 : len;
        long long seq = record_seq(text + at);
        if (seq >= 0) {
            keeping = seq > after_seq;
            if (seq > *last_seq)
                *last_seq = seq;
        }
        if (keeping) {
            memmove(text + kept, text + at, end - at);
            kept += end - at;
        }
        at = end;
    }
    text[kept] = '\0';
    return kept;
}

/* As kmsg.h says. */
int kmsg_read(const char *path, size_t max_bytes, long long after_seq, char **text, size_t *len,
              long long *last_seq, char *cause, size_t cause_cap)
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
    *len = keep_after(out, out_len, after_seq, last_seq);
    return 0;
fail:
    close(fd);
    free(out);
    return -1;
}
