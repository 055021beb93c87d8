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

/* As json_text.h says. */
size_t utf8_cut_length(const unsigned char *s, size_t max)
{
    size_t keep = max;
    while (keep > 0 && (s[keep] & 0xC0) == 0x80)
        keep--;
    return keep;
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

/* Whether each byte is an ASCII byte written as itself (what ascii_escape
 * gives NULL for): the printable ones but " & < > and the backslash. A
 * table, so that the scan of a string costs one look per byte. */
static const unsigned char PLAIN_ASCII[256] = {
    /* 0x00 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0x10 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    /* 0x20 */ 1, 1, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 0x30 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 0, 1,
    /* 0x40 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 0x50 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
    /* 0x60 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    /* 0x70 */ 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0,
    /* 0x80 to 0xFF: 0 */
};

/* Whether c is an ASCII byte written as itself. */
static int plain_ascii(unsigned char c)
{
    return PLAIN_ASCII[c];
}

/* The number of bytes at the start of s (len bytes) that plain_ascii
 * takes: all of them for most strings. */
static size_t plain_prefix(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len && plain_ascii(s[i]))
        i++;
    return i;
}

/* As json_text.h says. A string of plain bytes only, the most common, is
 * written into one reservation: its quotes and its bytes in one copy. */
int json_write_string(struct byte_buffer *buffer, const char *s, size_t len)
{
    const unsigned char *bytes = (const unsigned char *)s;
    size_t start = plain_prefix(bytes, len);
    if (start == len) {
        char *at = len < SIZE_MAX - 2 ? byte_buffer_reserve(buffer, len + 2) : NULL;
        if (!at)
            return -1;
        at[0] = '"';
        memcpy(at + 1, s, len);
        at[len + 1] = '"';
        byte_buffer_added(buffer, len + 2);
        return 0;
    }
    if (byte_buffer_add(buffer, "\"", 1) != 0)
        return -1;
    size_t plain = 0; /* the start of the bytes not yet written, which need no escape */
    for (size_t i = start; i < len;) {
        unsigned char c = bytes[i];
        if (plain_ascii(c)) { /* most bytes: one look in a table, not ascii_escape's switch */
            i++;
            continue;
        }
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
size_t json_integer_text(char *out, long long n)
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
    size_t len = (size_t)(end - at);
    memcpy(out, at, len);
    out[len] = '\0';
    return len;
}

/* As json_text.h says. */
int json_write_integer(struct byte_buffer *buffer, long long n)
{
    char *at =
        byte_buffer_reserve(buffer, 23); /* json_integer_text's 24 bytes, its NUL's included */
    if (!at)
        return -1;
    byte_buffer_added(buffer, json_integer_text(at, n));
    return 0;
}

/* Writes into out what %.15g writes for n, when that is a decimal of at
 * most 6 places and 15 significant digits that reads back as n, and
 * returns its length; else returns 0. Such a decimal m / 10^k reads back
 * as n when the division m / 10^k (both exact doubles) is n: IEEE division
 * and strtod both give the double nearest to the quotient. n is then
 * within half a unit of its last bit of the decimal, well inside half a
 * unit of a 15th digit, so %.15g rounds n to the decimal (its trailing
 * zeros dropped) and, n being 1e-4 or more and under 1e15, without an
 * exponent: the common values (12.5, 0.1, 1764403200.25) found without
 * printf's digit by digit conversion and strtod. n: finite, not whole. */
static size_t short_decimal_text(char *out, double n)
{
    double magnitude = fabs(n);
    if (!(magnitude >= 1e-4 && magnitude < 1e15))
        return 0;
    double scale = 1;
    for (int places = 1; places <= 6; places++) {
        scale *= 10;
        double m = nearbyint(magnitude * scale);
        if (m >= 1e15)
            return 0;
        if (m / scale != magnitude)
            continue;
        long long whole = (long long)(m / scale),
                  fraction = (long long)m - whole * (long long)scale;
        size_t len = 0;
        if (n < 0)
            out[len++] = '-';
        len += json_integer_text(out + len, whole);
        out[len++] = '.';
        for (int i = places - 1; i >= 0; i--) {
            out[len + (size_t)i] = (char)('0' + fraction % 10);
            fraction /= 10;
        }
        len += (size_t)places;
        while (out[len - 1] == '0')
            len--;
        out[len] = '\0';
        return len;
    }
    return 0;
}

/* Writes into out what %.*g writes, precision count, for the number whose
 * count significant digits (rounded already) are digits and whose first
 * digit stands for 10^exponent, negative when negative: trailing zeros
 * dropped, an exponent (e+XX, at least two digits) when exponent < -4 or
 * exponent >= count. Returns the length. */
static size_t g_text(char *out, int negative, const char *digits, int count, int exponent)
{
    int used = count; /* the digits that stay, trailing zeros dropped */
    while (used > 1 && digits[used - 1] == '0')
        used--;
    size_t len = 0;
    if (negative)
        out[len++] = '-';
    if (exponent < -4 || exponent >= count) {
        out[len++] = digits[0];
        if (used > 1) {
            out[len++] = '.';
            memcpy(out + len, digits + 1, (size_t)used - 1);
            len += (size_t)used - 1;
        }
        len += (size_t)snprintf(out + len, 8, "e%c%02d", exponent < 0 ? '-' : '+', abs(exponent));
        return len;
    }
    if (exponent < 0) {
        out[len++] = '0';
        out[len++] = '.';
        for (int i = -1; i > exponent; i--)
            out[len++] = '0';
        memcpy(out + len, digits, (size_t)used);
        len += (size_t)used;
    } else {
        for (int i = 0; i <= exponent; i++)
            out[len++] = i < used ? digits[i] : '0';
        if (used > exponent + 1) {
            out[len++] = '.';
            memcpy(out + len, digits + exponent + 1, (size_t)(used - exponent - 1));
            len += (size_t)(used - exponent - 1);
        }
    }
    out[len] = '\0';
    return len;
}

/* Rounds the 17 significant digits of a double (digits, as %.16e gives
 * them) to precision of them, into rounded: what %.*g rounds the double
 * itself to, since the double is within half a unit of the 17th digit of
 * them. Returns 0, or -1 where that cannot be told from them (the digits
 * dropped are exactly one half: the double may lie either side of it) or
 * where rounding up carries past the first digit. */
static int round_digits(char *rounded, const char *digits, int precision)
{
    memcpy(rounded, digits, (size_t)precision);
    int half = 0; /* the digits dropped against one half: -1 below, 0 equal, 1 above */
    for (int i = precision; i < 17 && half == 0; i++)
        half = i == precision ? (digits[i] > '5') - (digits[i] < '5') : digits[i] > '0';
    if (half == 0)
        return -1;
    if (half < 0)
        return 0;
    int i = precision - 1;
    while (i >= 0 && rounded[i] == '9')
        rounded[i--] = '0';
    if (i < 0)
        return -1;
    rounded[i]++;
    return 0;
}

/* As json_text.h says. The float's 17 significant digits are printed once
 * (printf's conversion is the costly part); its %.15g and %.16g are
 * rounded from them, each tried by reading it back. */
size_t json_number_text(char *out, double n)
{
    if (isfinite(n) && n == floor(n) && fabs(n) < 1e15)
        return json_integer_text(out, (long long)n);
    if (!isfinite(n))
        return (size_t)snprintf(out, 32, "%.17g", n);
    size_t len = short_decimal_text(out, n);
    if (len > 0)
        return len;
    char printed[32]; /* [-]d.dddddddddddddddde±XX */
    snprintf(printed, sizeof printed, "%.16e", n);
    int negative = printed[0] == '-';
    const char *mantissa = printed + negative;
    char digits[17];
    digits[0] = mantissa[0];
    memcpy(digits + 1, mantissa + 2, 16);
    int exponent = atoi(mantissa + 19);
    for (int precision = 15; precision <= 16; precision++) {
        char rounded[17];
        if (round_digits(rounded, digits, precision) == 0)
            len = g_text(out, negative, rounded, precision, exponent);
        else
            len = (size_t)snprintf(out, 32, "%.*g", precision, n);
        if (strtod(out, NULL) == n)
            return len;
    }
    return g_text(out, negative, digits, 17, exponent);
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
