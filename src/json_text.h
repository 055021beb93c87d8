#ifndef GPULEDGER_JSON_TEXT_H
#define GPULEDGER_JSON_TEXT_H
#include <stddef.h>

#include "byte_buffer.h"

/* The pieces of JSON text that json.encode writes (json_write.c walks the
 * Lua values): strings escaped as Go's encoder escapes them, numbers in
 * their shortest form, appended to a byte buffer (byte_buffer.h) without
 * a limit; and the rules of UTF-8 text that text.lua shares: which byte is
 * bad, where a string too long is cut. Knows nothing of Lua. */

/* The length of the UTF-8 character at s (len bytes left, s[0] >= 0x80),
 * or 0 when it is none. Decodes as Lua 5.4's utf8.len does (strict): each
 * continuation byte the lead byte asks for, the value no overlong form, no
 * surrogate and at most U+10FFFF. The one rule by which a byte is bad
 * UTF-8, for JSON strings and for text.valid_utf8 (json_write.c). */
size_t utf8_char_length(const unsigned char *s, size_t len);

/* How many bytes text.cut keeps of s, a string longer than max bytes: the
 * largest keep <= max for which s[keep] (the first byte left out) is no
 * continuation byte (10xxxxxx), so that the cut never splits a character;
 * 0 when s[1] to s[max] all are (text that is not UTF-8). */
size_t utf8_cut_length(const unsigned char *s, size_t max);

/* Appends s (len bytes) as a JSON string in quotes: ", \ and the control
 * characters (U+0000–U+001F and DEL) escaped (\b \f \n \r \t, else
 * \u00XX), and <, >, &, U+2028 and U+2029 as \u003c \u003e \u0026 \u2028
 * \u2029; each byte that does not begin a valid UTF-8 character (as Lua's
 * utf8.len tells them: no overlong forms, surrogates or code points past
 * U+10FFFF) written as U+FFFD, the scan going on at the next byte.
 * Returns 0, or -1 when memory ran out. */
int json_write_string(struct byte_buffer *buffer, const char *s, size_t len);

/* Writes n in decimal, as Lua's tostring writes an integer, into out (at
 * least 24 bytes, NUL-terminated) and returns its length. */
size_t json_integer_text(char *out, long long n);

/* Appends n in decimal, as Lua's tostring writes an integer. Returns 0 or -1. */
int json_write_integer(struct byte_buffer *buffer, long long n);

/* Writes the shortest text that reads back as the float n into out (at
 * least 32 bytes) and returns its length: a whole number under 1e15 as an
 * integer ("35" for 35.0, "0" for -0.0), else the first of %.15g and %.16g
 * that reads back as n, else %.17g ("0.1", "1e+15"); NaN and the
 * infinities as %.17g writes them ("nan", "-inf"). */
size_t json_number_text(char *out, double n);

/* Appends the float n as json_number_text writes it; NaN and the
 * infinities, which JSON cannot hold, as null. Returns 0 or -1. */
int json_write_number(struct byte_buffer *buffer, double n);

#endif
