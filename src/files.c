/* Files and directories read whole (files.h). */
#include "files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* As files.h says. */
int file_read_whole(const char *path, size_t max_bytes, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char *data = NULL;
    size_t total = 0, cap = 0;
    int err = 0;
    for (;;) {
        if (total == cap) {
            size_t grown_cap = cap ? 2 * cap : 8192;
            char *grown = realloc(data, grown_cap + 1); /* + the NUL */
            if (!grown) {
                err = ENOMEM;
                break;
            }
            data = grown;
            cap = grown_cap;
        }
        size_t n = fread(data + total, 1, cap - total, f);
        total += n;
        if (total > max_bytes) {
            err = EFBIG;
            break;
        }
        if (n == 0) {
            if (ferror(f))
                err = errno ? errno : EIO;
            break;
        }
    }
    fclose(f);
    if (err) {
        free(data);
        errno = err;
        return -1;
    }
    data[total] = '\0';
    *text = data;
    *len = total;
    return 0;
}

/* As files.h says. */
int file_read_from(const char *path, size_t offset, size_t max_bytes, char **text, size_t *len,
                   struct file_identity *identity)
{
    *text = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        int err = S_ISDIR(st.st_mode) ? EISDIR : errno;
        close(fd);
        errno = err;
        return -1;
    }
    identity->device = (unsigned long long)st.st_dev;
    identity->inode = (unsigned long long)st.st_ino;
    identity->size = (unsigned long long)st.st_size;
    /* what the file holds past offset now, up to max_bytes: bytes written
     * after the fstat are read next time */
    size_t want = identity->size > offset ? (size_t)(identity->size - offset) : 0;
    if (want > max_bytes)
        want = max_bytes;
    char *data = malloc(want + 1);
    if (!data) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    size_t total = 0;
    while (total < want) {
        ssize_t n = pread(fd, data + total, want - total, (off_t)(offset + total));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int err = errno;
            free(data);
            close(fd);
            errno = err;
            return -1;
        }
        if (n == 0)
            break;
        total += (size_t)n;
    }
    close(fd);
    data[total] = '\0';
    *text = data;
    *len = total;
    return 0;
}

/* Orders two names (const char *) by strcmp, for qsort. */
static int compare_names(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* As files.h says. */
void names_sort(const char **names, size_t count)
{
    if (count > 1)
        qsort(names, count, sizeof *names, compare_names);
}

/* As files.h says. The names are gathered in one growing text, then the
 * block is laid out as count pointers followed by that text. */
int dir_names_sorted(const char *path, char ***names, size_t *count)
{
    *names = NULL;
    *count = 0;
    DIR *dir = opendir(path);
    if (!dir)
        return -1;
    char *text = NULL;
    size_t text_len = 0, text_cap = 0, found = 0;
    int err = 0;
    struct dirent *entry;
    errno = 0;
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        size_t len = strlen(entry->d_name) + 1;
        if (text_len + len > text_cap) {
            size_t grown_cap = text_cap ? 2 * text_cap : 1024;
            while (grown_cap < text_len + len)
                grown_cap *= 2;
            char *grown = realloc(text, grown_cap);
            if (!grown) {
                err = ENOMEM;
                break;
            }
            text = grown;
            text_cap = grown_cap;
        }
        memcpy(text + text_len, entry->d_name, len);
        text_len += len;
        found++;
        errno = 0;
    }
    if (!err && errno != 0)
        err = errno;
    closedir(dir);
    char **block = err ? NULL : malloc(found * sizeof *block + text_len + 1);
    if (!err && !block)
        err = ENOMEM;
    if (err) {
        free(text);
        errno = err;
        return -1;
    }
    char *names_text = (char *)(block + found);
    if (text_len)
        memcpy(names_text, text, text_len);
    free(text);
    for (size_t i = 0, at = 0; i < found; i++) {
        block[i] = names_text + at;
        at += strlen(names_text + at) + 1;
    }
    names_sort((const char **)block, found);
    *names = block;
    *count = found;
    return 0;
}
