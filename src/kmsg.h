#ifndef GPULEDGER_KMSG_H
#define GPULEDGER_KMSG_H
#include <stddef.h>

/* Reads what the kernel's log buffer holds now through a /dev/kmsg-like
 * path, without ever blocking: opens it O_RDONLY|O_NONBLOCK and reads
 * records (one per read(2), each "prio,seq,usec,flags;text\n" plus
 * continuation lines) until EAGAIN or end of file. Records overwritten while
 * reading (EPIPE) are skipped; the read goes on from the oldest one kept.
 * Only the records whose sequence number is above after_seq are kept (-1:
 * every record), so that a reader that comes back takes only what is new.
 * Returns 0 with *text (NUL-terminated, owned by the caller: free()), *len
 * and *last_seq (the highest sequence number read, kept or not; -1 when the
 * buffer held no record) set. Returns -1 with a one-line cause in cause and
 * nothing to free when the path cannot be opened or read ("<path>:
 * Operation not permitted": the path and strerror) or holds more than
 * max_bytes ("<path>: more than N bytes"). */
int kmsg_read(const char *path, size_t max_bytes, long long after_seq, char **text, size_t *len,
              long long *last_seq, char *cause, size_t cause_cap);

#endif
