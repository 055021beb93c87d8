/* A byte buffer that grows (byte_buffer.h). */
#include "byte_buffer.h"

#include <stdlib.h>
#include <string.h>

/* The first allocation: most buffers never grow past it. */
#define FIRST_CAP 4096

/* As byte_buffer.h says. */
void byte_buffer_init(struct byte_buffer *buffer, size_t max_bytes)
{
    *buffer = (struct byte_buffer){NULL, 0, 0, max_bytes};
}

/* As byte_buffer.h says. */
char *byte_buffer_grow(struct byte_buffer *buffer, size_t n)
{
    if (n > SIZE_MAX - 1 - buffer->len)
        return NULL;
    size_t need = buffer->len + n + 1; /* + the NUL */
    if (need > buffer->cap) {
        size_t cap = buffer->cap ? buffer->cap : FIRST_CAP;
        while (cap < need)
            cap = cap > SIZE_MAX / 2 ? need : cap * 2;
        char *grown = realloc(buffer->data, cap);
        if (!grown)
            return NULL;
        buffer->data = grown;
        buffer->cap = cap;
    }
    return buffer->data + buffer->len;
}

/* As byte_buffer.h says. */
char *byte_buffer_read_room(struct byte_buffer *buffer, size_t chunk, size_t *want)
{
    size_t room = buffer->len < buffer->max_bytes ? buffer->max_bytes - buffer->len : 0;
    *want = room < chunk ? room + 1 : chunk;
    return byte_buffer_reserve(buffer, *want);
}

/* As byte_buffer.h says. */
int byte_buffer_add(struct byte_buffer *buffer, const void *bytes, size_t n)
{
    if (buffer->len > buffer->max_bytes || n > buffer->max_bytes - buffer->len)
        return BYTE_BUFFER_FULL;
    char *at = byte_buffer_reserve(buffer, n);
    if (!at)
        return BYTE_BUFFER_NO_MEMORY;
    if (n)
        memcpy(at, bytes, n);
    byte_buffer_added(buffer, n);
    return 0;
}

/* As byte_buffer.h says. */
char *byte_buffer_take(struct byte_buffer *buffer, size_t *len)
{
    if (!byte_buffer_reserve(buffer, 0))
        return NULL;
    buffer->data[buffer->len] = '\0';
    char *data = buffer->data;
    *len = buffer->len;
    byte_buffer_init(buffer, buffer->max_bytes);
    return data;
}

/* As byte_buffer.h says. */
void byte_buffer_free(struct byte_buffer *buffer)
{
    free(buffer->data);
    byte_buffer_init(buffer, buffer->max_bytes);
}
