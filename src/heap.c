/* The static release's malloc. musl's own (mallocng) maps a group of slots
 * for a size as blocks of that size come and unmaps the group as soon as its
 * last block is freed: reading a fleet, which allocates and frees the same
 * sizes for every node (libcurl's transfers, the answers, their decoding,
 * Lua's tables), then maps and unmaps memory many times per node, and the
 * static binary spends several times the system time of the glibc one
 * (bench/README.md, "Static release: system time in fleet"). This heap keeps
 * what is freed, as glibc's does:
 * - a block of up to SMALL_MAX bytes is rounded up to its size class (steps
 *   of 16 bytes up to TINY_MAX, then four classes per power of two) and cut
 *   from an arena of ARENA_BYTES mapped at once; freed, it goes on its
 *   class's free list and serves the next block of that class. Arenas are
 *   never unmapped: the heap stays at its peak, as glibc's mostly does.
 * - a larger block is mapped alone and unmapped when freed.
 * Each block follows a header of 16 bytes saying which it is. One mutex
 * guards the free lists and the arena; fork(2) takes it first, so a child
 * (isolate.c runs rules in one) never inherits it held by another thread.
 * Built as malloc into the static binary only (GPULEDGER_HEAP_IS_MALLOC,
 * from CMakeLists.txt); elsewhere the C library's malloc stays, and the unit
 * test calls the heap_ functions. */
#include "heap.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define ALIGN       16
#define TINY_MAX    128
#define SMALL_MAX   (128 * 1024)
#define TINY        (TINY_MAX / ALIGN)
#define CLASSES     (TINY + 4 * 10) /* ten doublings from TINY_MAX to SMALL_MAX */
#define ARENA_BYTES (1024 * 1024)
#define PAGE        4096
#define LARGE       CLASSES       /* the kind of a block mapped alone */
#define ALIGNED     (CLASSES + 1) /* the kind of an aligned block inside another */

struct header {
    size_t usable; /* the bytes the caller may use; ALIGNED: the offset into the outer block */
    size_t kind;   /* a size class, LARGE or ALIGNED */
};

struct free_block {
    struct free_block *next;
};

static struct {
    pthread_mutex_t lock;
    struct free_block *free[CLASSES]; /* by size class */
    char *arena_next, *arena_end;     /* what is left of the newest arena */
} heap = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The header of the block a caller holds. */
static struct header *header_of(const void *block)
{
    return (struct header *)block - 1;
}

/* The size class of a block of size bytes (<= SMALL_MAX). */
static size_t class_of(size_t size)
{
    if (size <= TINY_MAX)
        return size ? (size - 1) / ALIGN : 0;
    int power = 63 - __builtin_clzll((unsigned long long)(size - 1)); /* 2^power < size */
    size_t quarter = ((size - 1) >> (power - 2)) & 3;
    return TINY + (size_t)(power - 7) * 4 + quarter;
}

/* The bytes a block of size class c holds. */
static size_t class_size(size_t c)
{
    if (c < TINY)
        return (c + 1) * ALIGN;
    size_t power = 7 + (c - TINY) / 4, quarter = (c - TINY) % 4;
    return (5 + quarter) << (power - 2);
}

/* Bytes rounded up to whole pages, or 0 when that overflows. */
static size_t whole_pages(size_t bytes)
{
    return bytes > SIZE_MAX - PAGE ? 0 : (bytes + PAGE - 1) / PAGE * PAGE;
}

/* A block of size class c, from its free list or cut from the arena (a new
 * arena mapped when the old one has no room); NULL when no memory is left.
 * Called with the lock held. */
static void *take(size_t c)
{
    struct free_block *reused = heap.free[c];
    if (reused) {
        heap.free[c] = reused->next;
        return reused;
    }
    size_t bytes = sizeof(struct header) + class_size(c);
    if ((size_t)(heap.arena_end - heap.arena_next) < bytes) {
        void *arena =
            mmap(NULL, ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (arena == MAP_FAILED)
            return NULL;
        heap.arena_next = arena;
        heap.arena_end = heap.arena_next + ARENA_BYTES;
    }
    struct header *header = (struct header *)heap.arena_next;
    heap.arena_next += bytes;
    *header = (struct header){.usable = class_size(c), .kind = c};
    return header + 1;
}

/* A block of size bytes (> SMALL_MAX) in a mapping of its own, or NULL. */
static void *map_large(size_t size)
{
    size_t bytes =
        size > SIZE_MAX - sizeof(struct header) ? 0 : whole_pages(size + sizeof(struct header));
    void *mapping =
        bytes ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
              : MAP_FAILED;
    if (mapping == MAP_FAILED)
        return NULL;
    struct header *header = mapping;
    *header = (struct header){.usable = bytes - sizeof *header, .kind = LARGE};
    return header + 1;
}

/* As heap.h says. */
void *heap_malloc(size_t size)
{
    void *block;
    if (size > SMALL_MAX) {
        block = map_large(size);
    } else {
        pthread_mutex_lock(&heap.lock);
        block = take(class_of(size));
        pthread_mutex_unlock(&heap.lock);
    }
    if (!block)
        errno = ENOMEM;
    return block;
}

/* As heap.h says. */
void heap_free(void *block)
{
    if (!block)
        return;
    struct header *header = header_of(block);
    if (header->kind == ALIGNED) {
        heap_free((char *)block - header->usable);
    } else if (header->kind == LARGE) {
        munmap(header, header->usable + sizeof *header);
    } else {
        struct free_block *freed = block;
        pthread_mutex_lock(&heap.lock);
        freed->next = heap.free[header->kind];
        heap.free[header->kind] = freed;
        pthread_mutex_unlock(&heap.lock);
    }
}

/* As heap.h says. */
void *heap_calloc(size_t count, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(count, size, &bytes)) {
        errno = ENOMEM;
        return NULL;
    }
    void *block = heap_malloc(bytes);
    if (block && header_of(block)->kind != LARGE) /* a new mapping is zero already */
        memset(block, 0, bytes);
    return block;
}

/* As heap.h says. */
size_t heap_usable_size(const void *block)
{
    if (!block)
        return 0;
    const struct header *header = header_of(block);
    if (header->kind == ALIGNED)
        return heap_usable_size((const char *)block - header->usable) - header->usable;
    return header->usable;
}

/* As heap.h says. A block stays where it is while size keeps its size
 * class; a large one grows and shrinks in place or is moved by mremap(2). */
void *heap_realloc(void *block, size_t size)
{
    if (!block)
        return heap_malloc(size);
    struct header *header = header_of(block);
    if (header->kind < CLASSES && size <= SMALL_MAX && class_of(size) == header->kind)
        return block;
    if (header->kind == LARGE && size > SMALL_MAX) {
        size_t bytes = size > SIZE_MAX - sizeof *header ? 0 : whole_pages(size + sizeof *header);
        void *moved = bytes ? mremap(header, header->usable + sizeof *header, bytes, MREMAP_MAYMOVE)
                            : MAP_FAILED;
        if (moved == MAP_FAILED) {
            errno = ENOMEM;
            return NULL;
        }
        header = moved;
        header->usable = bytes - sizeof *header;
        return header + 1;
    }
    size_t had = heap_usable_size(block);
    void *resized = heap_malloc(size);
    if (!resized)
        return size <= had ? block : NULL; /* a shrink keeps the block it has */
    memcpy(resized, block, had < size ? had : size);
    heap_free(block);
    return resized;
}

/* As heap.h says. A wider alignment is served from a block larger by the
 * alignment, with a header of kind ALIGNED in front of the aligned address
 * saying how far into that block it lies. */
void *heap_aligned_alloc(size_t alignment, size_t size)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    if (alignment <= ALIGN)
        return heap_malloc(size);
    if (size > SIZE_MAX - alignment) {
        errno = ENOMEM;
        return NULL;
    }
    char *outer = heap_malloc(size + alignment);
    if (!outer)
        return NULL;
    uintptr_t at =
        ((uintptr_t)outer + sizeof(struct header) + alignment - 1) & ~(uintptr_t)(alignment - 1);
    struct header *header = header_of((void *)at);
    *header = (struct header){.usable = at - (uintptr_t)outer, .kind = ALIGNED};
    return (void *)at;
}

/* fork(2)'s handlers: the lock is held across the fork and released on
 * both sides of it. */
static void lock_for_fork(void)
{
    pthread_mutex_lock(&heap.lock);
}

static void unlock_after_fork(void)
{
    pthread_mutex_unlock(&heap.lock);
}

/* Registers the fork handlers before main. */
__attribute__((constructor)) static void hold_across_fork(void)
{
    pthread_atfork(lock_for_fork, unlock_after_fork, unlock_after_fork);
}

#ifdef GPULEDGER_HEAP_IS_MALLOC
#include <malloc.h>
#include <stdlib.h>

/* The C library's allocation functions, replaced (musl lets a static
 * program define them): each as its heap_ function. */
void *malloc(size_t size)
{
    return heap_malloc(size);
}

void free(void *block)
{
    heap_free(block);
}

void *calloc(size_t count, size_t size)
{
    return heap_calloc(count, size);
}

void *realloc(void *block, size_t size)
{
    return heap_realloc(block, size);
}

void *aligned_alloc(size_t alignment, size_t size)
{
    return heap_aligned_alloc(alignment, size);
}

void *memalign(size_t alignment, size_t size)
{
    return heap_aligned_alloc(alignment, size);
}

/* posix_memalign(3): 0 and *out, EINVAL (alignment not a power of two
 * multiple of a pointer's size) or ENOMEM. */
int posix_memalign(void **out, size_t alignment, size_t size)
{
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0)
        return EINVAL;
    void *block = heap_aligned_alloc(alignment, size);
    if (!block)
        return ENOMEM;
    *out = block;
    return 0;
}

size_t malloc_usable_size(void *block)
{
    return heap_usable_size(block);
}
#endif
