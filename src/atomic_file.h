#ifndef GPULEDGER_ATOMIC_FILE_H
#define GPULEDGER_ATOMIC_FILE_H
#include <stddef.h>

/* Replaces the file at `path` with the `len` bytes of `data` so that a reader
 * (or a crash, or kill -9) only ever sees the old content or the new one:
 * missing parent directories are created (0700), the bytes go to a temp file
 * "<base>.XXXXXX.tmp" in the same directory, mode 0600, which is fsynced,
 * renamed over path, and the directory fsynced. Refused as
 * atomic_file_check refuses. Returns 0, or -1 with a message naming the
 * step and the cause in `cause` (the temp file is removed then). */
int atomic_file_write(const char *path, const void *data, size_t len, char *cause,
                      size_t cause_cap);

/* Whether the file at `path` is one only this user (or root) could have
 * written: its directory belongs to this user or root and is writable by no
 * other user (neither group nor others may write it), and the file, if it
 * exists, belongs to this user and is a regular file (not a symbolic
 * link, which a save would replace rather than the file it names, nor a
 * directory, FIFO or device, which a read could block on and a save or
 * keeping aside would rename). A missing directory or file passes. Returns
 * 0, or -1 with the reason in `cause`: "<path>: refused: the directory <dir>
 * is writable by other users (mode 1777)", "<path>: refused: the directory
 * <dir> belongs to uid 1000, not to this user (uid 0) or root", "<path>:
 * refused: it belongs to uid 1000, not to this user (uid 0)", "<path>:
 * refused: it is a symbolic link, not a file …", or "<path>:
 * stat: <strerror>". */
int atomic_file_check(const char *path, char *cause, size_t cause_cap);

/* Keeps a file that could not be used (corrupt, too large) for a person to
 * look at, instead of letting it be overwritten: renames it to
 * "<path>.corrupt-YYYYMMDDTHHMMSSZ" (UTC; "-2", "-3"… appended while that
 * name is taken: never over another file). Returns 0 with the new name in
 * `aside`, or -1 with "<path>: keep aside: <strerror>" in `cause`. */
int atomic_file_keep_aside(const char *path, char *aside, size_t aside_cap, char *cause,
                           size_t cause_cap);

/* Writes all len bytes of data to fd (a file, a pipe), writing again after
 * a short write or EINTR. Safe in a forked child (only write(2)). Returns 0,
 * or -1 with errno set (EIO when write(2) makes no progress). */
int write_all(int fd, const void *data, size_t len);

#endif
