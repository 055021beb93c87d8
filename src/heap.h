/* A malloc that keeps what is freed: the static release's allocator, and
 * every build's allocator of the Lua state (see heap.c). Each heap_
 * function behaves as the C function it is named after; the static build
 * makes them malloc, free, calloc, realloc, aligned_alloc, posix_memalign,
 * memalign and malloc_usable_size. Thread-safe, and safe across fork(2),
 * where threads share it (the static build; heap.c says why the Lua
 * state's allocator alone takes no lock). */
#ifndef GPULEDGER_HEAP_H
#define GPULEDGER_HEAP_H
#include <stddef.h>

/* A block of at least size bytes aligned to 16, or NULL with errno ENOMEM. */
void *heap_malloc(size_t size);

/* Gives block back for reuse (NULL: nothing). */
void heap_free(void *block);

/* A block of count * size zero bytes, or NULL with errno ENOMEM (also when
 * the product overflows). */
void *heap_calloc(size_t count, size_t size);

/* block resized to size bytes, its content kept up to the smaller size;
 * maybe moved. NULL with errno ENOMEM when there is no room, block then
 * unchanged; heap_realloc(NULL, size) is heap_malloc(size). */
void *heap_realloc(void *block, size_t size);

/* A block of at least size bytes aligned to alignment (a power of two, at
 * most 512 KiB), or NULL with errno EINVAL (alignment not a power of two) or
 * ENOMEM (no room, or a wider alignment). */
void *heap_aligned_alloc(size_t alignment, size_t size);

/* How many bytes of block the caller may use (0 for NULL). */
size_t heap_usable_size(const void *block);

/* The Lua state's allocator (a lua_Alloc): block freed and NULL when size
 * is 0, else heap_realloc(block, size). ud and old_size are not read. */
void *heap_lua_alloc(void *ud, void *block, size_t old_size, size_t size);

#endif
