/* The pieces of JSON text: strings and numbers into a byte buffer. */
#include "json_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* As json_text.h says. */
size_t utf8_char_length(const unsigned char *s, size_t len)
{
    static const unsigned long shortest[] = {0, 0x80, 0x800, 0x10000};
    unsigned int lead = s[0];
    unsigned long value = 0;
    size_t count = 0; /* continuation bytes */
    for (; lead & 0x40; lead <<= 1) {
        if (count == 3)
            return 0; /* a lead byte of 5 or more bytes: past U+10FFFF */
        count++;
        if (count >= len || (s[count] & 0xC0) != 0x80)
            return 0;
        value = (value << 6) | (s[count] & 0x3F);
    }
    if (count == 0)
        return 0; /* a continuation byte where a character should begin */
    value |= (unsigned long)(lead & 0x7F) << (count * 5);
    if (value < shortest[count] || value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF))
        return 0;
    return count + 1;
}

/* What each ASCII byte is written as inside a string: NULL for itself. */
static const char *ascii_escape(unsigned char c)
{
    static const char *const controls[32] = {
        "\\u0000", "\\u0001", "\\u0002", "\\u0003", "\\u0004", "\\u0005", "\\u0006", "\\u0007",
        "\\b",     "\\t",     "\\n",     "\\u000b", "\\f",     "\\r",     "\\u000e", "\\u000f",
        "\\u0010", "\\u0011", "\\u0012", "\\u0013", "\\u0014", "\\u0015", "\\u0016", "\\u0017",
        "\\u0018", "\\u0019", "\\u001a", "\\u001b", "\\u001c", "\\u001d", "\\u001e", "\\u001f",
    };
    if (c < 32)
        return controls[c];
    switch (c) {
    case '"':
        return "\\\"";
    case '\\':
        return "\\\\";
    case '<':
        return "\\u003c";
    case '>':
        return "\\u003e";
    case '&':
        return "\\u0026";
    case 0x7F:
        return "\\u007f";
    default:
        return NULL;
    }
}

/* As json_text.h says. */
int json_write_string(struct byte_buffer *buffer, const char *s, size_t len)
{
    const unsigned char *bytes = (const unsigned char *)s;
    if (byte_buffer_add(buffer, "\"", 1) != 0)
        return -1;
    size_t plain = 0; /* the start of the bytes not yet written, which need no escape */
    for (size_t i = 0; i < len;) {
        unsigned char c = bytes[i];
        const char *escape = NULL;
        size_t width = 1;
        if (c < 0x80) {
            escape = ascii_escape(c);
        } else {
            width = utf8_char_length(bytes + i, len - i);
            if (width == 0) {
                escape = "\xEF\xBF\xBD"; /* U+FFFD */
                width = 1;
            } else if (width == 3 && c == 0xE2 && bytes[i + 1] == 0x80 &&
                       (bytes[i + 2] == 0xA8 || bytes[i + 2] == 0xA9)) {
                escape = bytes[i + 2] == 0xA8 ? "\\u2028" : "\\u2029";
            }
        }
        if (escape) {
            if (byte_buffer_add(buffer, s + plain, i - plain) != 0 ||
                byte_buffer_add(buffer, escape, strlen(escape)) != 0)
                return -1;
            plain = i + width;
        }
        i += width;
    }
    if (byte_buffer_add(buffer, s + plain, len - plain) != 0)
        return -1;
    return byte_buffer_add(buffer, "\"", 1);
}

/* As json_text.h says. */
int json_write_integer(struct byte_buffer *buffer, long long n)
{
    char digits[24];
    char *end = digits + sizeof digits, *at = end;
    unsigned long long magnitude = n < 0 ? 0ULL - (unsigned long long)n : (unsigned long long)n;
    do {
        *--at = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude > 0);
    if (n < 0)
        *--at = '-';
    return byte_buffer_add(buffer, at, (size_t)(end - at));
}

/* As json_text.h says. */
size_t json_number_text(char *out, double n)
{
    if (isfinite(n) && n == floor(n) && fabs(n) < 1e15)
        return (size_t)snprintf(out, 32, "%lld", (long long)n);
    if (isfinite(n)) {
        for (int precision = 15; precision <= 16; precision++) {
            int len = snprintf(out, 32, "%.*g", precision, n);
            if (strtod(out, NULL) == n)
                return (size_t)len;
        }
    }
    return (size_t)snprintf(out, 32, "%.17g", n);
}

/* As json_text.h says. */
int json_write_number(struct byte_buffer *buffer, double n)
{
    if (!isfinite(n))
        return byte_buffer_add(buffer, "null", 4);
    char text[32];
    size_t len = json_number_text(text, n);
    return byte_buffer_add(buffer, text, len);
}
