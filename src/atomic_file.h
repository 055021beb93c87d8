#ifndef GPULEDGER_ATOMIC_FILE_H
#define GPULEDGER_ATOMIC_FILE_H
#include <stddef.h>

/* Replaces the file at `path` with the `len` bytes of `data` so that a reader
 * (or a crash, or kill -9) only ever sees the old content or the new one:
 * missing parent directories are created (0755), the bytes go to a temp file
 * "<base>.XXXXXX.tmp" in the same directory, which is fsynced, renamed over
 * path, and the directory fsynced. Returns 0, or -1 with a message naming
 * the step and the cause in `err` (the temp file is removed then). */
int atomic_file_write(const char *path, const void *data, size_t len, char *err, size_t err_cap);

#endif
