/* byte_buffer: bytes added in pieces come back in order with a NUL after
 * them, however far the buffer grew; an add past the limit or one that
 * cannot get memory is refused and leaves the buffer as it was; a read's
 * room stops one byte past the limit; take hands over a string even for
 * nothing added. */
#include "byte_buffer.h"
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Many small adds, past the first allocation: every byte in order, the
 * NUL after the last. */
static void test_grows(void)
{
    struct byte_buffer buffer;
    byte_buffer_init(&buffer, BYTE_BUFFER_NO_LIMIT);
    CHECK(buffer.data == NULL && buffer.len == 0);
    char piece[7];
    int added = 1;
    for (int i = 0; i < 3000; i++) {
        memset(piece, 'a' + i % 26, sizeof piece);
        added &= byte_buffer_add(&buffer, piece, sizeof piece) == 0;
        added &= buffer.data[buffer.len] == '\0';
    }
    CHECK(added);
    CHECK_INT(buffer.len, 3000 * 7);
    CHECK(buffer.cap > buffer.len);
    int in_order = 1;
    for (size_t at = 0; at < buffer.len; at++)
        in_order &= buffer.data[at] == 'a' + (int)(at / 7) % 26;
    CHECK(in_order);
    CHECK_INT(strlen(buffer.data), 3000 * 7);
    byte_buffer_free(&buffer);
    CHECK(buffer.data == NULL && buffer.len == 0 && buffer.cap == 0);
    byte_buffer_free(&buffer); /* twice: safe */
}

/* Reserving at the edge of the allocation: room that fits (the NUL's
 * byte included) is given in place, one byte more grows the buffer and
 * keeps what it held. */
static void test_reserve_at_the_edge(void)
{
    struct byte_buffer buffer;
    byte_buffer_init(&buffer, BYTE_BUFFER_NO_LIMIT);
    CHECK_INT(byte_buffer_add(&buffer, "ab", 2), 0);
    size_t cap = buffer.cap;
    char *data = buffer.data;
    size_t fits = cap - buffer.len - 1; /* the NUL takes the last byte */
    char *at = byte_buffer_reserve(&buffer, fits);
    CHECK(at == data + 2 && buffer.cap == cap);
    memset(at, 'x', fits);
    byte_buffer_added(&buffer, fits);
    CHECK_INT(buffer.len, cap - 1);
    CHECK(buffer.data[buffer.len] == '\0');
    CHECK(byte_buffer_reserve(&buffer, 0) == data + cap - 1 && buffer.cap == cap);
    at = byte_buffer_reserve(&buffer, 1);
    CHECK(at != NULL && buffer.cap > cap);
    CHECK(memcmp(buffer.data, "abxxx", 5) == 0 && buffer.data[cap - 2] == 'x');
    *at = 'y';
    byte_buffer_added(&buffer, 1);
    CHECK_INT(buffer.len, cap);
    CHECK_INT(strlen(buffer.data), cap);
    CHECK(buffer.data[cap - 1] == 'y');
    byte_buffer_free(&buffer);
}

/* Adding nothing still makes the buffer a string, "", and changes nothing
 * after bytes were added. */
static void test_zero_length(void)
{
    struct byte_buffer buffer;
    byte_buffer_init(&buffer, BYTE_BUFFER_NO_LIMIT);
    CHECK_INT(byte_buffer_add(&buffer, NULL, 0), 0);
    CHECK(buffer.data != NULL);
    CHECK_INT(buffer.len, 0);
    CHECK_STR(buffer.data, "");
    CHECK_INT(byte_buffer_add(&buffer, "abc", 3), 0);
    CHECK_INT(byte_buffer_add(&buffer, "", 0), 0);
    CHECK_INT(buffer.len, 3);
    CHECK_STR(buffer.data, "abc");
    byte_buffer_free(&buffer);
}

/* The limit: an add that would pass it is refused whole, one that reaches
 * it exactly is taken, and the buffer keeps what it held. */
static void test_limit(void)
{
    struct byte_buffer buffer;
    byte_buffer_init(&buffer, 10);
    CHECK_INT(byte_buffer_add(&buffer, "123456", 6), 0);
    CHECK_INT(byte_buffer_add(&buffer, "78901", 5), BYTE_BUFFER_FULL);
    CHECK_INT(buffer.len, 6);
    CHECK_STR(buffer.data, "123456");
    CHECK_INT(byte_buffer_add(&buffer, "7890", 4), 0);
    CHECK_STR(buffer.data, "1234567890");
    CHECK_INT(byte_buffer_add(&buffer, "", 0), 0);
    CHECK_INT(byte_buffer_add(&buffer, "x", 1), BYTE_BUFFER_FULL);
    CHECK_INT(byte_buffer_add(&buffer, "x", SIZE_MAX), BYTE_BUFFER_FULL);
    CHECK_STR(buffer.data, "1234567890");
    byte_buffer_free(&buffer);
    CHECK_INT(buffer.max_bytes, 10); /* kept for the next use */

    byte_buffer_init(&buffer, 0);
    CHECK_INT(byte_buffer_add(&buffer, "", 0), 0);
    CHECK_INT(byte_buffer_add(&buffer, "x", 1), BYTE_BUFFER_FULL);
    CHECK_STR(buffer.data, "");
    byte_buffer_free(&buffer);
}

/* Reads: each room at most the chunk, the last one byte past the limit,
 * so a source that fills it shows that it holds more. */
static void test_read_room(void)
{
    struct byte_buffer buffer;
    byte_buffer_init(&buffer, 10);
    size_t want = 0;
    char *room = byte_buffer_read_room(&buffer, 4, &want);
    if (!CHECK(room != NULL))
        return;
    CHECK_INT(want, 4);
    memcpy(room, "abcd", 4);
    byte_buffer_added(&buffer, 4);
    room = byte_buffer_read_room(&buffer, 4, &want);
    CHECK_INT(want, 4);
    memcpy(room, "efgh", 4);
    byte_buffer_added(&buffer, 4);
    room = byte_buffer_read_room(&buffer, 4, &want);
    CHECK_INT(want, 3); /* the 2 left and one more */
    memcpy(room, "ijk", 3);
    byte_buffer_added(&buffer, 3);
    CHECK_INT(buffer.len, 11);
    CHECK(buffer.len > buffer.max_bytes);
    CHECK_STR(buffer.data, "abcdefghijk");
    byte_buffer_free(&buffer);

    byte_buffer_init(&buffer, BYTE_BUFFER_NO_LIMIT);
    room = byte_buffer_read_room(&buffer, 65536, &want);
    CHECK(room != NULL && want == 65536);
    byte_buffer_added(&buffer, 2); /* a short read */
    CHECK_INT(buffer.len, 2);
    CHECK(buffer.data[2] == '\0');
    room = byte_buffer_reserve(&buffer, 5);
    CHECK(room == buffer.data + 2);
    memcpy(room, "12345", 5);
    byte_buffer_added(&buffer, 5);
    CHECK_INT(buffer.len, 7);
    CHECK(strcmp(buffer.data + 2, "12345") == 0);
    byte_buffer_free(&buffer);
}

/* take hands over the bytes as a string and leaves the buffer empty, its
 * limit kept; nothing added gives "". */
static void test_take(void)
{
    struct byte_buffer buffer;
    byte_buffer_init(&buffer, 100);
    size_t len = 99;
    char *text = byte_buffer_take(&buffer, &len);
    CHECK_STR(text, "");
    CHECK_INT(len, 0);
    free(text);
    CHECK_INT(byte_buffer_add(&buffer, "hello", 5), 0);
    text = byte_buffer_take(&buffer, &len);
    CHECK_STR(text, "hello");
    CHECK_INT(len, 5);
    CHECK(buffer.data == NULL && buffer.len == 0 && buffer.cap == 0);
    CHECK_INT(buffer.max_bytes, 100);
    free(text);
    byte_buffer_free(&buffer); /* nothing left to free */
}

/* A size that would overflow, or an allocation that fails, is refused and
 * the buffer keeps what it held. (ctest runs this with AddressSanitizer
 * told to return NULL for an impossible allocation, as malloc does.) */
static void test_no_memory(void)
{
    struct byte_buffer buffer;
    byte_buffer_init(&buffer, BYTE_BUFFER_NO_LIMIT);
    CHECK_INT(byte_buffer_add(&buffer, "abc", 3), 0);
    char *data = buffer.data;
    size_t cap = buffer.cap;
    CHECK(byte_buffer_reserve(&buffer, SIZE_MAX - 3) == NULL); /* len + n + 1 overflows */
    CHECK_INT(byte_buffer_add(&buffer, "x", SIZE_MAX - 3), BYTE_BUFFER_NO_MEMORY);
    CHECK(byte_buffer_reserve(&buffer, SIZE_MAX / 4) == NULL); /* realloc fails */
    size_t want = 0;
    CHECK(byte_buffer_read_room(&buffer, SIZE_MAX / 4, &want) == NULL);
    CHECK(buffer.data == data && buffer.cap == cap);
    CHECK_INT(buffer.len, 3);
    CHECK_STR(buffer.data, "abc");
    CHECK_INT(byte_buffer_add(&buffer, "d", 1), 0); /* and it still works */
    CHECK_STR(buffer.data, "abcd");
    byte_buffer_free(&buffer);
}

int main(void)
{
    test_grows();
    test_reserve_at_the_edge();
    test_zero_length();
    test_limit();
    test_read_room();
    test_take();
    test_no_memory();
    return check_finish();
}
