/* The static release's malloc, and every build's allocator of the Lua state
 * (heap_lua_alloc). musl's own (mallocng) maps a group of slots
 * for a size as blocks of that size come and unmaps the group as soon as its
 * last block is freed: reading a fleet, which allocates and frees the same
 * sizes for every node (libcurl's transfers, the answers, their decoding,
 * Lua's tables), then maps and unmaps memory many times per node, and the
 * static binary spends several times the system time of the glibc one
 * (bench/README.md, "Static release: system time in fleet"). This heap keeps
 * what is freed, as glibc's does. glibc's own, under Lua's churn of small
 * blocks (a fleet's findings, a refresh's tables), spent a quarter of what
 * `fleet check` costs beyond `fleet ls` merging the blocks it keeps
 * (bench/README.md, "Judging the fleet, fourth round"); size classes do
 * not merge.
 * - Memory comes in arenas of ARENA_BYTES, each mapped at an address that is
 *   a multiple of ARENA_BYTES and starting with a struct arena saying what it
 *   holds; so the arena of any block is its address rounded down. Arenas are
 *   never unmapped: the heap stays at its peak, as glibc's mostly does.
 * - A block of up to SMALL_MAX bytes is rounded up to its size class (steps
 *   of 16 bytes up to 128, then four classes per power of two); freed, it
 *   goes on its class's free list and serves the next block of that class.
 * - The blocks of the tiny classes (up to 1 KiB: most of Lua's blocks)
 *   carry no header: a tiny arena is cut into spans of SPAN_BYTES, each span
 *   holding blocks of one class, and the arena's span_class says which.
 * - A block of the larger classes is cut from a class arena behind a header
 *   of 16 bytes: its size and class, or, for a block aligned inside another,
 *   how far into that one it lies.
 * - A block larger than SMALL_MAX is an arena of its own, unmapped when
 *   freed.
 * One mutex guards the free lists and the arenas' room where threads share
 * the heap (lock_heap); fork(2) takes it first, so a child (isolate.c runs
 * rules in one) never inherits it held by another thread. Built as malloc
 * into the static binary only (GPULEDGER_HEAP_IS_MALLOC, from
 * CMakeLists.txt); elsewhere the C library's malloc stays for the C side
 * and the libraries, and the unit test calls the heap_ functions. */
#include "heap.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define ALIGN         16
#define STEPPED_MAX   128 /* classes in steps of ALIGN up to here */
#define SMALL_MAX     (128 * 1024)
#define STEPPED       (STEPPED_MAX / ALIGN)
#define TINY_CLASSES  (STEPPED + 4 * 3)  /* those up to 1 KiB: three doublings from 128 */
#define CLASSES       (STEPPED + 4 * 10) /* ten doublings from 128 to SMALL_MAX */
#define ARENA_BYTES   ((size_t)1 << 20)
#define SPAN_BYTES    ((size_t)64 << 10)
#define SPANS         (ARENA_BYTES / SPAN_BYTES)
#define PAGE          ((size_t)4096)
#define ARENA_HEADER  32 /* sizeof(struct arena), rounded up to ALIGN */
#define MAX_ALIGNMENT (ARENA_BYTES / 2)
#define ALIGNED       CLASSES /* the kind of a block aligned inside another */

enum arena_kind { TINY_ARENA, CLASS_ARENA, LARGE_BLOCK };

struct arena {
    enum arena_kind kind;
    unsigned char span_class[SPANS]; /* TINY_ARENA: the size class of each span */
    size_t bytes;                    /* LARGE_BLOCK: the length of the mapping */
};

struct header {    /* in front of each block of a class arena */
    size_t usable; /* the bytes the caller may use; ALIGNED: the offset into the outer block */
    size_t kind;   /* a size class, or ALIGNED */
};

struct free_block {
    struct free_block *next;
};

/* Where the next blocks are cut: [next, end) */
struct room {
    char *next, *end;
};

static struct {
    pthread_mutex_t lock;
    struct free_block *free[CLASSES]; /* by size class */
    struct room span[TINY_CLASSES];   /* the newest span of each tiny class */
    struct arena *tiny;               /* the newest tiny arena */
    size_t tiny_spans;                /* the spans of it given to a class */
    struct room classes;              /* what is left of the newest class arena */
} heap = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Whether threads share the heap: when it is the program's malloc (the
 * static build), which every thread calls, and under its unit test
 * (GPULEDGER_HEAP_SHARED). Otherwise it serves the Lua state alone
 * (heap_lua_alloc), whose only caller is the thread running Lua (the main
 * one: no other thread calls Lua), and a lock would cost every one of
 * Lua's allocations for nothing. */
#if defined(GPULEDGER_HEAP_IS_MALLOC) || defined(GPULEDGER_HEAP_SHARED)
#define THREADS_SHARE_HEAP 1
#else
#define THREADS_SHARE_HEAP 0
#endif

/* Takes the heap's lock where threads share it. */
static void lock_heap(void)
{
    if (THREADS_SHARE_HEAP)
        pthread_mutex_lock(&heap.lock);
}

/* Releases what lock_heap took. */
static void unlock_heap(void)
{
    if (THREADS_SHARE_HEAP)
        pthread_mutex_unlock(&heap.lock);
}

_Static_assert(sizeof(struct arena) <= ARENA_HEADER, "ARENA_HEADER holds a struct arena");
_Static_assert(CLASSES <= UCHAR_MAX, "span_class holds a size class");

/* The arena a block lies in. */
static struct arena *arena_of(const void *block)
{
    return (struct arena *)((uintptr_t)block & ~(uintptr_t)(ARENA_BYTES - 1));
}

/* The header of a block of a class arena. */
static struct header *header_of(const void *block)
{
    return (struct header *)block - 1;
}

/* The size class of a block of size bytes (<= SMALL_MAX). */
static size_t class_of(size_t size)
{
    if (size <= STEPPED_MAX)
        return size ? (size - 1) / ALIGN : 0;
    int power = 63 - __builtin_clzll((unsigned long long)(size - 1)); /* 2^power < size */
    size_t quarter = ((size - 1) >> (power - 2)) & 3;
    return STEPPED + (size_t)(power - 7) * 4 + quarter;
}

/* The bytes a block of size class c holds. */
static size_t class_size(size_t c)
{
    if (c < STEPPED)
        return (c + 1) * ALIGN;
    size_t power = 7 + (c - STEPPED) / 4, quarter = (c - STEPPED) % 4;
    return (5 + quarter) << (power - 2);
}

/* An arena of bytes (a multiple of PAGE) at a multiple of ARENA_BYTES,
 * zero-filled, or NULL: a mapping larger by ARENA_BYTES, trimmed. */
static struct arena *map_arena(size_t bytes)
{
    if (bytes > SIZE_MAX - ARENA_BYTES)
        return NULL;
    char *mapping =
        mmap(NULL, bytes + ARENA_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED)
        return NULL;
    char *start = (char *)(((uintptr_t)mapping + ARENA_BYTES - 1) & ~(uintptr_t)(ARENA_BYTES - 1));
    if (start > mapping)
        munmap(mapping, (size_t)(start - mapping));
    munmap(start + bytes, (size_t)(mapping + ARENA_BYTES - start));
    return (struct arena *)start;
}

/* Cuts bytes from room, or returns NULL when it has not that many left. */
static void *cut(struct room *room, size_t bytes)
{
    if ((size_t)(room->end - room->next) < bytes)
        return NULL;
    void *block = room->next;
    room->next += bytes;
    return block;
}

/* Gives tiny class c a new span: the next of the newest tiny arena, or the
 * first of a new one. Returns 0, or -1 when no memory is left. */
static int new_span(size_t c)
{
    if (!heap.tiny || heap.tiny_spans == SPANS) {
        struct arena *arena = map_arena(ARENA_BYTES);
        if (!arena)
            return -1;
        arena->kind = TINY_ARENA;
        heap.tiny = arena;
        heap.tiny_spans = 0;
    }
    char *span = (char *)heap.tiny + heap.tiny_spans * SPAN_BYTES;
    heap.tiny->span_class[heap.tiny_spans++] = (unsigned char)c;
    heap.span[c] =
        (struct room){span + (span == (char *)heap.tiny ? ARENA_HEADER : 0), span + SPAN_BYTES};
    return 0;
}

/* A block of size class c cut from a class arena (a new one mapped when the
 * newest has no room), its header written; NULL when no memory is left. */
static void *cut_with_header(size_t c)
{
    size_t bytes = sizeof(struct header) + class_size(c);
    struct header *header = cut(&heap.classes, bytes);
    if (!header) {
        struct arena *arena = map_arena(ARENA_BYTES);
        if (!arena)
            return NULL;
        arena->kind = CLASS_ARENA;
        heap.classes = (struct room){(char *)arena + ARENA_HEADER, (char *)arena + ARENA_BYTES};
        header = cut(&heap.classes, bytes);
    }
    *header = (struct header){.usable = class_size(c), .kind = c};
    return header + 1;
}

/* A block of size class c: from its free list, else cut anew; NULL when no
 * memory is left. */
static void *take(size_t c)
{
    lock_heap();
    void *block = heap.free[c];
    if (block) {
        heap.free[c] = heap.free[c]->next;
    } else if (c < TINY_CLASSES) {
        block = cut(&heap.span[c], class_size(c));
        if (!block && new_span(c) == 0)
            block = cut(&heap.span[c], class_size(c));
    } else {
        block = cut_with_header(c);
    }
    unlock_heap();
    return block;
}

/* A block of size bytes (> SMALL_MAX) in an arena of its own, or NULL. */
static void *map_large(size_t size)
{
    if (size > SIZE_MAX - ARENA_HEADER - PAGE)
        return NULL;
    size_t bytes = (size + ARENA_HEADER + PAGE - 1) / PAGE * PAGE;
    struct arena *arena = map_arena(bytes);
    if (!arena)
        return NULL;
    arena->kind = LARGE_BLOCK;
    arena->bytes = bytes;
    return (char *)arena + ARENA_HEADER;
}

/* A block of at least size bytes, of a class arena or large, so that an
 * aligned block may lie inside it; NULL (errno ENOMEM) when none. */
static void *take_with_header(size_t size)
{
    void *block = size > SMALL_MAX                ? map_large(size)
                  : class_of(size) < TINY_CLASSES ? take(TINY_CLASSES)
                                                  : take(class_of(size));
    if (!block)
        errno = ENOMEM;
    return block;
}

/* As heap.h says. */
void *heap_malloc(size_t size)
{
    void *block = size > SMALL_MAX ? map_large(size) : take(class_of(size));
    if (!block)
        errno = ENOMEM;
    return block;
}

/* The size class of block, or -1 for a large or aligned one. */
static long class_of_block(const void *block)
{
    const struct arena *arena = arena_of(block);
    if (arena->kind == TINY_ARENA)
        return arena->span_class[((uintptr_t)block - (uintptr_t)arena) / SPAN_BYTES];
    if (arena->kind == CLASS_ARENA && header_of(block)->kind != ALIGNED)
        return (long)header_of(block)->kind;
    return -1;
}

/* As heap.h says. */
void heap_free(void *block)
{
    if (!block)
        return;
    struct arena *arena = arena_of(block);
    if (arena->kind == LARGE_BLOCK) {
        munmap(arena, arena->bytes);
        return;
    }
    long c = class_of_block(block);
    if (c < 0) {
        heap_free((char *)block - header_of(block)->usable); /* aligned inside that block */
        return;
    }
    struct free_block *freed = block;
    lock_heap();
    freed->next = heap.free[c];
    heap.free[c] = freed;
    unlock_heap();
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
    if (block && arena_of(block)->kind != LARGE_BLOCK) /* a new mapping is zero already */
        memset(block, 0, bytes);
    return block;
}

/* As heap.h says. */
size_t heap_usable_size(const void *block)
{
    if (!block)
        return 0;
    const struct arena *arena = arena_of(block);
    if (arena->kind == LARGE_BLOCK)
        return (size_t)((const char *)arena + arena->bytes - (const char *)block);
    long c = class_of_block(block);
    if (c >= 0)
        return class_size((size_t)c);
    size_t offset = header_of(block)->usable;
    return heap_usable_size((const char *)block - offset) - offset;
}

/* As heap.h says. A block stays where it is while size keeps its size
 * class; a large one grows or shrinks in place where its mapping can. */
void *heap_realloc(void *block, size_t size)
{
    if (!block)
        return heap_malloc(size);
    long c = class_of_block(block);
    if (c >= 0 && size <= SMALL_MAX && class_of(size) == (size_t)c)
        return block;
    struct arena *arena = arena_of(block);
    if (arena->kind == LARGE_BLOCK && (char *)block == (char *)arena + ARENA_HEADER &&
        size > SMALL_MAX && size <= SIZE_MAX - ARENA_HEADER - PAGE) {
        size_t bytes = (size + ARENA_HEADER + PAGE - 1) / PAGE * PAGE;
        if (mremap(arena, arena->bytes, bytes, 0) != MAP_FAILED) {
            arena->bytes = bytes;
            return block;
        }
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
 * alignment: inside a class arena's block, with a header of kind ALIGNED
 * in front of the aligned address saying how far into that block it lies;
 * inside a large block, within its arena's first ARENA_BYTES. */
void *heap_aligned_alloc(size_t alignment, size_t size)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0) {
        errno = EINVAL;
        return NULL;
    }
    if (alignment <= ALIGN)
        return heap_malloc(size);
    if (alignment > MAX_ALIGNMENT || size > SIZE_MAX - alignment) {
        errno = ENOMEM;
        return NULL;
    }
    char *outer = take_with_header(size + alignment);
    if (!outer)
        return NULL;
    uintptr_t at =
        ((uintptr_t)outer + sizeof(struct header) + alignment - 1) & ~(uintptr_t)(alignment - 1);
    if (arena_of(outer)->kind == CLASS_ARENA)
        *header_of((void *)at) = (struct header){.usable = at - (uintptr_t)outer, .kind = ALIGNED};
    return (void *)at;
}

/* As heap.h says. */
void *heap_lua_alloc(void *ud, void *block, size_t old_size, size_t size)
{
    (void)ud;
    (void)old_size;
    if (size == 0) {
        heap_free(block);
        return NULL;
    }
    return heap_realloc(block, size);
}

/* Registers fork(2)'s handlers before main, where threads share the heap:
 * the lock is held across the fork and released on both sides of it. */
__attribute__((constructor)) static void hold_across_fork(void)
{
    if (THREADS_SHARE_HEAP)
        pthread_atfork(lock_heap, unlock_heap, unlock_heap);
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
