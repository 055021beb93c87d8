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

#include "byte_buffer.h"

/* The most one fread asks for. */
#define READ_CHUNK (64 * 1024)

/* As files.h says. */
int file_read_whole(const char *path, size_t max_bytes, char **text, size_t *len)
{
    *text = NULL;
    *len = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    struct byte_buffer data;
    byte_buffer_init(&data, max_bytes);
    int err = 0;
    for (;;) {
        size_t want;
        char *room = byte_buffer_read_room(&data, READ_CHUNK, &want);
        if (!room) {
            err = ENOMEM;
            break;
        }
        size_t n = fread(room, 1, want, f);
        byte_buffer_added(&data, n);
        if (data.len > max_bytes) {
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
        byte_buffer_free(&data);
        errno = err;
        return -1;
    }
    *text = byte_buffer_take(&data, len); /* never NULL: the room above was allocated */
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
    struct byte_buffer text;
    byte_buffer_init(&text, BYTE_BUFFER_NO_LIMIT);
    size_t found = 0;
    int err = 0;
    struct dirent *entry;
    errno = 0;
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        if (byte_buffer_add(&text, entry->d_name, strlen(entry->d_name) + 1) != 0) {
            err = ENOMEM;
            break;
        }
        found++;
        errno = 0;
    }
    if (!err && errno != 0)
        err = errno;
    closedir(dir);
    char **block = err ? NULL : malloc(found * sizeof *block + text.len + 1);
    if (!err && !block)
        err = ENOMEM;
    if (err) {
        byte_buffer_free(&text);
        errno = err;
        return -1;
    }
    char *names_text = (char *)(block + found);
    if (text.len)
        memcpy(names_text, text.data, text.len);
    byte_buffer_free(&text);
    for (size_t i = 0, at = 0; i < found; i++) {
        block[i] = names_text + at;
        at += strlen(names_text + at) + 1;
    }
    names_sort((const char **)block, found);
    *names = block;
    *count = found;
    return 0;
}
