/* A JSON text's structure checked, and one of its arrays found, in one pass
 * over the bytes without building anything (json_scan.h). */
#include "json_scan.h"

#include <stdio.h>
#include <string.h>

/* One open array or object: its kind ('[' or '{'), how deep along the path
 * it lies (the number of path keys that led to it, or -1 when it is off the
 * path) and whether it is the array at the path. */
struct frame {
    char kind;
    int level;
    int target;
};

/* Where a scan is, and where it says what went wrong. */
struct scan {
    const char *text;
    size_t len;
    size_t at;
    char *cause;
    size_t cause_cap;
};

/* Writes "byte N: what" (N of the byte the scan is at, 1 the first) as the
 * cause. Returns -1. */
static int fail(struct scan *s, const char *what)
{
    snprintf(s->cause, s->cause_cap, "byte %zu: %s", s->at + 1, what);
    return -1;
}

/* Writes "byte N: want <wanted>, got <the byte there>" (or "the text ends
 * early" past the end). Returns -1. */
static int unexpected(struct scan *s, const char *wanted)
{
    char what[96];
    if (s->at >= s->len) {
        snprintf(what, sizeof what, "want %s, the text ends early", wanted);
    } else {
        unsigned char c = (unsigned char)s->text[s->at];
        if (c > ' ' && c < 0x7f)
            snprintf(what, sizeof what, "want %s, got '%c'", wanted, c);
        else
            snprintf(what, sizeof what, "want %s, got byte 0x%02x", wanted, c);
    }
    return fail(s, what);
}

/* Moves past JSON whitespace. */
static void skip_space(struct scan *s)
{
    while (s->at < s->len && (s->text[s->at] == ' ' || s->text[s->at] == '\n' ||
                              s->text[s->at] == '\r' || s->text[s->at] == '\t'))
        s->at++;
}

/* Whether the byte at the scan is c. */
static int at_byte(const struct scan *s, char c)
{
    return s->at < s->len && s->text[s->at] == c;
}

/* Whether c is a hexadecimal digit. */
static int is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Whether c is a decimal digit. */
static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Moves past the string at the scan (at its opening quote). Returns 0, or
 * -1 with the cause. */
static int skip_string(struct scan *s)
{
    s->at++;
    for (;;) {
        while (s->at < s->len && s->text[s->at] != '"' && s->text[s->at] != '\\' &&
               (unsigned char)s->text[s->at] >= 0x20)
            s->at++;
        if (s->at >= s->len)
            return fail(s, "the text ends inside a string");
        char c = s->text[s->at];
        if (c == '"') {
            s->at++;
            return 0;
        }
        if (c != '\\')
            return fail(s, "a control character in a string (want it escaped)");
        if (s->at + 1 >= s->len)
            return fail(s, "the text ends inside a string");
        char escaped = s->text[s->at + 1];
        if (escaped == 'u') {
            for (size_t k = 2; k < 6; k++)
                if (s->at + k >= s->len)
                    return fail(s, "the text ends inside a string");
                else if (!is_hex(s->text[s->at + k]))
                    return fail(s, "a \\u escape without four hexadecimal digits");
            s->at += 6;
        } else if (strchr("\"\\/bfnrt", escaped) && escaped != '\0') {
            s->at += 2;
        } else {
            return fail(s,
                        "an escape JSON has not (want \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u)");
        }
    }
}

/* Moves past one or more digits. Returns 0, or -1 with the cause. */
static int skip_digits(struct scan *s)
{
    if (s->at >= s->len || !is_digit(s->text[s->at]))
        return unexpected(s, "a digit");
    while (s->at < s->len && is_digit(s->text[s->at]))
        s->at++;
    return 0;
}

/* Moves past the number at the scan: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
 * Returns 0, or -1 with the cause. */
static int skip_number(struct scan *s)
{
    if (at_byte(s, '-'))
        s->at++;
    if (at_byte(s, '0'))
        s->at++;
    else if (skip_digits(s) != 0)
        return -1;
    if (at_byte(s, '.')) {
        s->at++;
        if (skip_digits(s) != 0)
            return -1;
    }
    if (at_byte(s, 'e') || at_byte(s, 'E')) {
        s->at++;
        if (at_byte(s, '+') || at_byte(s, '-'))
            s->at++;
        if (skip_digits(s) != 0)
            return -1;
    }
    return 0;
}

/* Moves past true, false or null at the scan. Returns 0, or -1 with the
 * cause. */
static int skip_literal(struct scan *s)
{
    static const char *const literals[] = {"true", "false", "null"};
    for (size_t i = 0; i < sizeof literals / sizeof *literals; i++) {
        size_t n = strlen(literals[i]);
        size_t left = s->len - s->at;
        if (memcmp(s->text + s->at, literals[i], left < n ? left : n) != 0)
            continue;
        s->at = left < n ? s->len : s->at + n;
        return left < n ? unexpected(s, "a value") : 0;
    }
    return unexpected(s, "a value");
}

/* Moves past a scalar (a string, number or literal) at the scan. Returns 0,
 * or -1 with the cause. */
static int skip_scalar(struct scan *s)
{
    if (at_byte(s, '"'))
        return skip_string(s);
    if (at_byte(s, '-') || (s->at < s->len && is_digit(s->text[s->at])))
        return skip_number(s);
    return skip_literal(s);
}

/* Reads an object's key and its colon at the scan; key_level is the level
 * of the object (frame.level). Returns the level of the value that follows
 * (key_level + 1 when the key is path[key_level], else -1), or -2 with the
 * cause. */
static int read_key(struct scan *s, int key_level, const char *const *path, size_t npath)
{
    skip_space(s);
    if (!at_byte(s, '"'))
        return unexpected(s, "a key (a string)") - 1;
    size_t key_start = s->at + 1;
    if (skip_string(s) != 0)
        return -2;
    size_t key_len = s->at - 1 - key_start;
    skip_space(s);
    if (!at_byte(s, ':'))
        return unexpected(s, "':' after a key") - 1;
    s->at++;
    if (key_level < 0 || (size_t)key_level >= npath)
        return -1;
    const char *want = path[key_level];
    if (strlen(want) == key_len && memcmp(s->text + key_start, want, key_len) == 0)
        return key_level + 1;
    return -1;
}

/* Reads what follows a ',' in the innermost open array or object f: an
 * object's next key (level: that of the value after it), an array's next
 * element (counted when f is the array at the path). Returns 0, or -1 with
 * the cause. */
static int next_member(struct scan *s, const struct frame *f, const char *const *path, size_t npath,
                       int *level, size_t *count)
{
    if (f->kind == '{') {
        *level = read_key(s, f->level, path, npath);
        return *level == -2 ? -1 : 0;
    }
    *level = -1;
    *count += (size_t)f->target;
    return 0;
}

int json_scan_array(const char *text, size_t len, const char *const *path, size_t npath,
                    struct json_array *found, char *cause, size_t cause_cap)
{
    struct scan s = {text, len, 0, cause, cause_cap};
    struct frame stack[JSON_SCAN_MAX_DEPTH];
    size_t depth = 0, count = 0;
    int level = 0; /* the path level of the value about to be read */
    int have = 0;
    for (;;) {
        /* A value: an array or object opens, or a scalar is passed. */
        skip_space(&s);
        if (at_byte(&s, '[') || at_byte(&s, '{')) {
            if (depth == JSON_SCAN_MAX_DEPTH)
                return fail(&s, "nested more than 1000 deep");
            struct frame *f = &stack[depth++];
            *f = (struct frame){text[s.at], level, text[s.at] == '[' && level == (int)npath};
            if (f->target && have)
                return fail(&s, "the array at the path appears twice");
            if (f->target) {
                found->open = s.at;
                count = 0;
            }
            s.at++;
            skip_space(&s);
            if (!at_byte(&s, f->kind == '[' ? ']' : '}')) {
                if (next_member(&s, f, path, npath, &level, &count) != 0)
                    return -1;
                continue;
            }
        } else if (skip_scalar(&s) != 0) {
            return -1;
        }
        /* The value ended: what follows closes arrays and objects, until a
         * ',' leads to the next value, or the text ends. */
        for (;;) {
            skip_space(&s);
            if (depth == 0) {
                if (s.at != len)
                    return unexpected(&s, "nothing after the JSON value");
                return have;
            }
            const struct frame *f = &stack[depth - 1];
            if (at_byte(&s, ',')) {
                s.at++;
                if (next_member(&s, f, path, npath, &level, &count) != 0)
                    return -1;
                break;
            }
            if (!at_byte(&s, f->kind == '[' ? ']' : '}'))
                return unexpected(&s, f->kind == '[' ? "',' or ']'" : "',' or '}'");
            if (f->target) {
                found->close = s.at;
                found->count = count;
                have = 1;
            }
            s.at++;
            depth--;
        }
    }
}

/* Moves past the string at the scan (at its opening quote) in a text known
 * to be JSON; never past len. */
static void pass_string(struct scan *s)
{
    s->at++;
    while (s->at < s->len && s->text[s->at] != '"')
        s->at += s->text[s->at] == '\\' ? 2 : 1;
    s->at = s->at < s->len ? s->at + 1 : s->len;
}

int json_next_element(const char *text, size_t len, size_t at, size_t *first, size_t *end)
{
    struct scan s = {text, len, at + 1, NULL, 0};
    skip_space(&s);
    if (at_byte(&s, ',')) {
        s.at++;
        skip_space(&s);
    }
    if (s.at >= len || text[s.at] == ']')
        return 0;
    *first = s.at;
    if (text[s.at] == '"') {
        pass_string(&s);
    } else if (text[s.at] == '[' || text[s.at] == '{') {
        size_t depth = 0;
        do {
            char c = text[s.at];
            if (c == '"') {
                pass_string(&s);
                continue;
            }
            depth += c == '[' || c == '{';
            depth -= c == ']' || c == '}';
            s.at++;
        } while (depth > 0 && s.at < len);
    } else {
        while (s.at < len && memchr(",]} \t\r\n", text[s.at], 7) == NULL)
            s.at++;
    }
    *end = s.at;
    return 1;
}
