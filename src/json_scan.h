#ifndef GPULEDGER_JSON_SCAN_H
#define GPULEDGER_JSON_SCAN_H
#include <stddef.h>

/* Reading one array of a large JSON text element by element, without
 * decoding the text whole: json_scan_array checks the text's structure and
 * finds the array, json_next_element gives each element's bytes, which a
 * decoder then reads one at a time. */

/* The deepest nesting of arrays and objects json_scan_array reads (that of
 * lua-cjson's decoder). */
#define JSON_SCAN_MAX_DEPTH 1000

/* Where an array lies in a JSON text. */
struct json_array {
    size_t open;  /* the offset of its '[' */
    size_t close; /* the offset of its ']' */
    size_t count; /* how many elements it holds */
};

/* Checks that text[0, len) is one JSON value as RFC 8259 writes it
 * (strings closed, with valid escapes and no control characters; numbers;
 * true, false and null; arrays and objects closed in order, at most
 * JSON_SCAN_MAX_DEPTH deep; only whitespace around it), and finds the array
 * at path: path[0], …, path[npath - 1] are the keys of nested objects from
 * the top ({"data", "result"} finds the array of {"data": {"result": []}};
 * a key is matched as written, escapes and all). Returns 1 with *found set
 * when the value at path is an array, 0 when the text is JSON but holds no
 * array there, or -1 with a one-line cause naming the byte (1 is the first)
 * and what is wrong ("byte 1: want a value, got '<'", "byte 84: the text
 * ends inside a string", "byte 9: the array at the path appears twice"). */
int json_scan_array(const char *text, size_t len, const char *const *path, size_t npath,
                    struct json_array *found, char *cause, size_t cause_cap);

/* The element of an array after offset at: at is the offset of the array's
 * '[' or of the last byte of the element before. Returns 1 with the
 * element's bytes in text[*first, *end), or 0 when the array closes there.
 * For a text json_scan_array accepted (on another text it stops at len,
 * never reading past it). */
int json_next_element(const char *text, size_t len, size_t at, size_t *first, size_t *end);

#endif
