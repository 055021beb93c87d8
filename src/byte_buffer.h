#ifndef GPULEDGER_BYTE_BUFFER_H
#define GPULEDGER_BYTE_BUFFER_H
#include <stddef.h>
#include <stdint.h>

/* A run of bytes that grows as bytes are added, up to a limit its owner
 * sets, with a NUL kept after them once anything was put in it: what an
 * HTTP body, the kernel log, a file, a child's output or a JSON text is
 * gathered in. Growth doubles the allocation and checks every size for
 * overflow; a failed add leaves the buffer as it was. */

struct byte_buffer {
    char *data;       /* NULL until the first add; then data[len] is a NUL */
    size_t len;       /* the bytes held, the NUL not counted */
    size_t cap;       /* the bytes allocated, the NUL's included */
    size_t max_bytes; /* the most len may reach by byte_buffer_add */
};

/* A max_bytes of as many bytes as memory allows. */
#define BYTE_BUFFER_NO_LIMIT SIZE_MAX

/* What byte_buffer_add returns besides 0. */
#define BYTE_BUFFER_NO_MEMORY (-1) /* memory ran out, or the size would overflow */
#define BYTE_BUFFER_FULL      (-2) /* the bytes would take len past max_bytes */

/* Makes *buffer empty, holding nothing allocated, with the limit max_bytes
 * (BYTE_BUFFER_NO_LIMIT: none). */
void byte_buffer_init(struct byte_buffer *buffer, size_t max_bytes);

/* Appends n bytes (none when n is 0: the buffer then still holds a NUL)
 * and the NUL after them. Returns 0, BYTE_BUFFER_FULL when they would take
 * it past max_bytes, or BYTE_BUFFER_NO_MEMORY; either way the buffer is
 * then as it was. */
int byte_buffer_add(struct byte_buffer *buffer, const void *bytes, size_t n);

/* byte_buffer_reserve's slow path, out of line: grows the allocation so
 * that n more bytes and the NUL fit. Returns data + len, or NULL when
 * memory ran out (the buffer as it was). */
char *byte_buffer_grow(struct byte_buffer *buffer, size_t n);

/* Makes room for n more bytes and the NUL after them, for a caller that
 * writes them itself (then byte_buffer_added). Returns where they go
 * (data + len), or NULL when memory ran out (the buffer as it was). Does
 * not look at max_bytes. Inline, so that a writer of many short pieces
 * (json_text.c) pays no call while the allocation has room: cap is 0 or
 * more than len, so cap - len cannot wrap. */
static inline char *byte_buffer_reserve(struct byte_buffer *buffer, size_t n)
{
    if (n < buffer->cap - buffer->len)
        return buffer->data + buffer->len;
    return byte_buffer_grow(buffer, n);
}

/* Makes room for the next read: *want, at most chunk (> 0) and never more
 * than one byte past max_bytes, so that a read which fills it takes len
 * past max_bytes (the sign that the source holds more than the limit)
 * without the buffer holding more. Returns where the bytes go, or NULL
 * when memory ran out. */
char *byte_buffer_read_room(struct byte_buffer *buffer, size_t chunk, size_t *want);

/* Counts the n bytes just written at the room byte_buffer_reserve or
 * byte_buffer_read_room gave (n no more than it made) as held, and puts
 * the NUL after them. */
static inline void byte_buffer_added(struct byte_buffer *buffer, size_t n)
{
    buffer->len += n;
    buffer->data[buffer->len] = '\0';
}

/* Hands the bytes, NUL-terminated, to the caller (free them with free) and
 * sets *len to their count; an empty buffer gives "" of its own. The
 * buffer is left empty, its limit kept. Returns NULL (the buffer as it
 * was) only when the buffer held nothing allocated and memory ran out. */
char *byte_buffer_take(struct byte_buffer *buffer, size_t *len);

/* Frees the bytes and empties the buffer, its limit kept; safe on an empty
 * buffer, and twice. */
void byte_buffer_free(struct byte_buffer *buffer);

#endif
