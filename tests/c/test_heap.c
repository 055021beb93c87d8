/* heap: the static release's malloc. Blocks of every size hold what is
 * written to them, aligned to 16 (or the alignment asked); a freed block
 * serves the next one of its size, so churning allocations maps no more
 * memory; realloc and calloc keep their promises; impossible sizes fail with
 * ENOMEM and bad alignments with EINVAL; threads allocating at once do not
 * mix their blocks, and a fork while they do leaves the child a heap that
 * works. */
#include "heap.h"
#include "check.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define SMALL_MAX (128 * 1024) /* heap.c's: larger blocks are mapped alone */

/* Whether block's first size bytes all hold byte. */
static int holds(const void *block, unsigned char byte, size_t size)
{
    const unsigned char *bytes = block;
    for (size_t i = 0; i < size; i++)
        if (bytes[i] != byte)
            return 0;
    return 1;
}

/* This process's mapped address space in KiB (VmSize), or -1. */
static long mapped_kib(void)
{
    FILE *status = fopen("/proc/self/status", "r");
    if (!status)
        return -1;
    char line[256];
    long kib = -1;
    while (fgets(line, sizeof line, status))
        if (sscanf(line, "VmSize: %ld kB", &kib) == 1)
            break;
    fclose(status);
    return kib;
}

/* Blocks of sizes 0 to past SMALL_MAX: usable, aligned, and each keeps its
 * bytes while the others are written. */
static void test_sizes(void)
{
    static const size_t sizes[] = {0,    1,    15,   16,    17,    100,   128,    129,    1000,
                                   1024, 1025, 4097, 16384, 65537, 99999, 131072, 131073, 1 << 20};
    enum { COUNT = sizeof sizes / sizeof sizes[0] };
    unsigned char *blocks[COUNT];
    int usable = 1, aligned = 1, kept = 1;
    for (int i = 0; i < COUNT; i++) {
        blocks[i] = heap_malloc(sizes[i]);
        if (!CHECK(blocks[i] != NULL))
            return;
        usable &= heap_usable_size(blocks[i]) >= sizes[i];
        aligned &= (uintptr_t)blocks[i] % 16 == 0;
        memset(blocks[i], 'a' + i, sizes[i]);
    }
    for (int i = 0; i < COUNT; i++) {
        kept &= holds(blocks[i], (unsigned char)('a' + i), sizes[i]);
        heap_free(blocks[i]);
    }
    CHECK(usable);
    CHECK(aligned);
    CHECK(kept);
    CHECK_INT(heap_usable_size(NULL), 0);
    heap_free(NULL); /* nothing */
}

/* A freed block serves the next block of its size class, and allocating
 * and freeing the same sizes over and over maps nothing more. */
static void test_reuse(void)
{
    void *first = heap_malloc(100);
    heap_free(first);
    CHECK(heap_malloc(100) == first);
    heap_free(first);
    CHECK(heap_malloc(97) == first); /* the same class */
    heap_free(first);
    void *second = heap_malloc(5000);
    heap_free(second);
    CHECK(heap_malloc(4500) == second);
    heap_free(second);

    enum { ROUND = 64 };
    void *round[ROUND];
    long before = 0;
    for (int n = 0; n < 200; n++) {
        if (n == 1)
            before = mapped_kib(); /* after a first round has made the heap */
        for (int i = 0; i < ROUND; i++)
            round[i] = heap_malloc((size_t)(i * 997 + n % 7) % SMALL_MAX);
        for (int i = 0; i < ROUND; i++)
            heap_free(round[i]);
    }
    long after = mapped_kib();
    CHECK(before > 0);
    CHECK_INT(after, before);
}

/* realloc keeps the content up to the smaller size, growing and shrinking
 * across the size classes and the mapped blocks; it keeps a block in place
 * while the size stays in its class. */
static void test_realloc(void)
{
    unsigned char *block = heap_realloc(NULL, 10);
    if (!CHECK(block != NULL))
        return;
    memset(block, 'x', 10);
    CHECK(heap_realloc(block, 12) == block);
    size_t sizes[] = {200, 5000, SMALL_MAX + 10, 3 * SMALL_MAX, SMALL_MAX + 1, 300, 10};
    size_t written = 10;
    int kept = 1;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        block = heap_realloc(block, sizes[i]);
        if (!CHECK(block != NULL))
            return;
        size_t check = written < sizes[i] ? written : sizes[i];
        kept &= holds(block, 'x', check);
        memset(block, 'x', sizes[i]);
        written = sizes[i];
    }
    CHECK(kept);
    heap_free(block);
}

/* calloc zeroes a block that was written and freed; its overflowing
 * product fails. */
static void test_calloc(void)
{
    unsigned char *dirty = heap_malloc(300);
    memset(dirty, 0xff, 300);
    heap_free(dirty);
    unsigned char *zeroed = heap_calloc(30, 10);
    CHECK(zeroed == dirty);
    CHECK(holds(zeroed, 0, 300));
    heap_free(zeroed);
    unsigned char *large = heap_calloc(1, SMALL_MAX * 2);
    CHECK(large && holds(large, 0, SMALL_MAX * 2));
    heap_free(large);
    errno = 0;
    CHECK(heap_calloc(SIZE_MAX / 2, 3) == NULL);
    CHECK_INT(errno, ENOMEM);
}

/* Sizes no memory can hold fail with ENOMEM, leaving a realloc'd block as
 * it was. */
static void test_too_large(void)
{
    errno = 0;
    CHECK(heap_malloc(SIZE_MAX) == NULL);
    CHECK_INT(errno, ENOMEM);
    errno = 0;
    CHECK(heap_malloc(SIZE_MAX - 4096) == NULL);
    CHECK_INT(errno, ENOMEM);
    char *block = heap_malloc(20);
    memcpy(block, "still here", 11);
    errno = 0;
    CHECK(heap_realloc(block, SIZE_MAX) == NULL);
    CHECK_INT(errno, ENOMEM);
    CHECK_STR(block, "still here");
    heap_free(block);
}

/* Alignments from 1 to 512 KiB are met, with the size usable; the block is
 * freed whole; an alignment that is no power of two is refused, and a wider
 * one cannot be had. */
static void test_aligned(void)
{
    int aligned = 1, usable = 1;
    for (size_t alignment = 1; alignment <= 512 * 1024; alignment *= 2) {
        for (size_t size = 1; size <= 3 * SMALL_MAX; size = size * 7 + 3) {
            unsigned char *block = heap_aligned_alloc(alignment, size);
            if (!CHECK(block != NULL))
                return;
            aligned &= (uintptr_t)block % alignment == 0;
            usable &= heap_usable_size(block) >= size;
            memset(block, 'q', size);
            block = heap_realloc(block, size + 10); /* a realloc takes it too */
            aligned &= block && holds(block, 'q', size);
            heap_free(block);
        }
    }
    CHECK(aligned);
    CHECK(usable);
    errno = 0;
    CHECK(heap_aligned_alloc(24, 10) == NULL);
    CHECK_INT(errno, EINVAL);
    errno = 0;
    CHECK(heap_aligned_alloc(0, 10) == NULL);
    CHECK_INT(errno, EINVAL);
    errno = 0;
    CHECK(heap_aligned_alloc(1 << 20, 10) == NULL);
    CHECK_INT(errno, ENOMEM);
}

enum { THREADS = 4, ROUNDS = 20000, HELD = 32 };

/* A thread's work: blocks of changing sizes filled with the thread's own
 * byte, checked before they are freed. Returns (void *)1 when one held
 * another's byte or an allocation failed. */
static void *churn(void *arg)
{
    unsigned char mine = (unsigned char)(uintptr_t)arg;
    unsigned char *held[HELD] = {0};
    size_t sizes[HELD] = {0};
    uintptr_t bad = 0;
    for (int n = 0; n < ROUNDS; n++) {
        int slot = n % HELD;
        if (held[slot]) {
            bad |= !holds(held[slot], mine, sizes[slot]);
            heap_free(held[slot]);
        }
        sizes[slot] = (size_t)(n * 131 + mine * 17) % 9000;
        held[slot] = heap_malloc(sizes[slot]);
        if (!held[slot])
            return (void *)1;
        memset(held[slot], mine, sizes[slot]);
    }
    for (int slot = 0; slot < HELD; slot++) {
        bad |= !holds(held[slot], mine, sizes[slot]);
        heap_free(held[slot]);
    }
    return (void *)bad;
}

/* Threads allocating and freeing at once each find only their own bytes. */
static void test_threads(void)
{
    pthread_t threads[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, churn, (void *)(i + 1));
    int clean = 1;
    for (int i = 0; i < THREADS; i++) {
        void *bad;
        pthread_join(threads[i], &bad);
        clean &= bad == NULL;
    }
    CHECK(clean);
}

/* Forks while other threads allocate: every child allocates, frees and
 * exits 0 (a lock inherited held would hang it, and the test with it). */
static void test_fork(void)
{
    pthread_t threads[2];
    for (uintptr_t i = 0; i < 2; i++)
        pthread_create(&threads[i], NULL, churn, (void *)(i + 10));
    int children_fine = 1;
    for (int n = 0; n < 50; n++) {
        pid_t pid = fork();
        if (pid == 0) {
            char *block = heap_malloc(1000);
            memset(block, 'c', 1000);
            int fine = holds(block, 'c', 1000);
            heap_free(block);
            _exit(fine ? 0 : 1);
        }
        int status = 0;
        children_fine &= pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
                         WEXITSTATUS(status) == 0;
    }
    CHECK(children_fine);
    for (int i = 0; i < 2; i++)
        pthread_join(threads[i], NULL);
}

int main(void)
{
    test_sizes();
    test_reuse();
    test_realloc();
    test_calloc();
    test_too_large();
    test_aligned();
    test_threads();
    test_fork();
    return check_finish();
}
