#ifndef GPULEDGER_FILES_H
#define GPULEDGER_FILES_H
#include <stddef.h>

/* Reading files and directories whole: what gpuledger reads (site scripts,
 * CA bundles, the history, files scripts ask for) is read to its end into
 * memory and closed before anything looks at it, and is never cut short. */

/* Reads the whole file at path. Returns 0 with *text (NUL-terminated, owned
 * by the caller: free()) and *len set, or -1 with errno set and nothing to
 * free: EFBIG when the file holds more than max_bytes (never a truncated
 * read), ENOMEM, or why it could not be opened or read (EISDIR for a
 * directory). */
int file_read_whole(const char *path, size_t max_bytes, char **text, size_t *len);

/* What a file is and how long, as a reader that comes back compares them:
 * another inode is another file (a rotated log), a shorter size a
 * truncated one. */
struct file_identity {
    unsigned long long device, inode, size;
};

/* Reads at most max_bytes of the file at path from byte offset on, up to the
 * size it had when opened (nothing when offset is at or past it): the way a
 * log that grows is followed.
 * Returns 0 with *text (NUL-terminated, owned by the caller: free()), *len
 * and *identity (the open file's, fstat) set, or -1 with errno set and
 * nothing to free (ENOMEM, or why it could not be opened or read; EISDIR
 * for a directory). */
int file_read_from(const char *path, size_t offset, size_t max_bytes, char **text, size_t *len,
                   struct file_identity *identity);

/* Lists the names in the directory at path (without . and ..), sorted as
 * names_sort sorts them. Returns 0 with *names (one block holding the
 * pointers and the names: one free()) and *count set, or -1 with errno set
 * and nothing to free. */
int dir_names_sorted(const char *path, char ***names, size_t *count);

/* Sorts count names in place byte by byte (strcmp), as Lua's table.sort
 * orders strings in the C locale. */
void names_sort(const char **names, size_t count);

#endif
