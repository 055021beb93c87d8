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

#include "byte_buffer.h"
#include "cause.h"

/* The kernel's CONSOLE_EXT_LOG_MAX: a record that does not fit gives EINVAL. */
#define RECORD_MAX 8192

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
    struct byte_buffer out;
    byte_buffer_init(&out, max_bytes);
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
        int added = byte_buffer_add(&out, record, (size_t)n);
        if (added == BYTE_BUFFER_FULL) {
            cause_set(cause, cause_cap, "%s: more than %zu bytes", path, max_bytes);
            goto fail;
        }
        if (added != 0) {
            cause_set(cause, cause_cap, "%s: %s", path, strerror(ENOMEM));
            goto fail;
        }
    }
    close(fd);
    size_t out_len;
    char *records = byte_buffer_take(&out, &out_len); /* "" when nothing was read */
    if (!records)
        return cause_set(cause, cause_cap, "%s: %s", path, strerror(ENOMEM));
    *text = records;
    *len = keep_after(records, out_len, after_seq, last_seq);
    return 0;
fail:
    close(fd);
    byte_buffer_free(&out);
    return -1;
}
