/* json_text: JSON strings escaped as Go's encoder escapes them, bad UTF-8
 * replaced byte by byte, numbers in their shortest form, a buffer that
 * grows; where text.cut cuts a string, never inside a character. */
#include "check.h"
#include "json_text.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The buffer's text as a NUL-terminated copy (in a static area). */
static const char *text_of(const struct byte_buffer *buffer)
{
    static char copy[1 << 16];
    size_t len = buffer->len < sizeof copy - 1 ? buffer->len : sizeof copy - 1;
    memcpy(copy, buffer->data, len);
    copy[len] = '\0';
    return copy;
}

/* Checks the JSON string written for s (len bytes). */
static void check_string(const char *s, size_t len, const char *want, int line)
{
    struct byte_buffer buffer;
    byte_buffer_init(&buffer, BYTE_BUFFER_NO_LIMIT);
    check_long_equal(json_write_string(&buffer, s, len), 0, __FILE__, line, "written");
    check_str_equal(text_of(&buffer), want, __FILE__, line, "string");
    byte_buffer_free(&buffer);
}

#define STRING(s, want) check_string((s), sizeof(s) - 1, (want), __LINE__)

/* Checks the text written for the float n. */
static void check_number(double n, const char *want, int line)
{
    struct byte_buffer buffer;
    byte_buffer_init(&buffer, BYTE_BUFFER_NO_LIMIT);
    check_long_equal(json_write_number(&buffer, n), 0, __FILE__, line, "written");
    check_str_equal(text_of(&buffer), want, __FILE__, line, "number");
    byte_buffer_free(&buffer);
}

#define NUMBER(n, want) check_number((n), (want), __LINE__)

static void test_plain_and_escaped(void)
{
    STRING("", "\"\"");
    STRING("gpu-0 node-a", "\"gpu-0 node-a\"");
    STRING("\"\\/", "\"\\\"\\\\/\"");
    STRING("<script> &", "\"\\u003cscript\\u003e \\u0026\"");
    STRING("\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"");
    STRING("\x01\x0b\x1f\x7f", "\"\\u0001\\u000b\\u001f\\u007f\"");
    STRING("a\0b", "\"a\\u0000b\"");
}

/* Every ASCII byte: written as itself exactly when it is printable and
 * none of " & < > and the backslash, else escaped. */
static void test_each_ascii_byte(void)
{
    int right = 1;
    for (int c = 0; c < 0x80; c++) {
        char s[1] = {(char)c};
        struct byte_buffer buffer;
        byte_buffer_init(&buffer, BYTE_BUFFER_NO_LIMIT);
        right &= json_write_string(&buffer, s, 1) == 0;
        int itself = buffer.len == 3 && buffer.data[1] == c;
        int plain = c >= 0x20 && c < 0x7F && strchr("\"&<>\\", c) == NULL;
        if (itself != plain)
            fprintf(stderr, "byte 0x%02x written as %s\n", c, text_of(&buffer));
        right &= itself == plain;
        byte_buffer_free(&buffer);
    }
    CHECK(right);
}

static void test_utf8(void)
{
    STRING("61 \xc2\xb0"
           "C \xe2\x80\x94 ok",
           "\"61 \xc2\xb0"
           "C \xe2\x80\x94 ok\"");
    STRING("\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"");
    STRING("\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\""); /* U+10FFFF */
    STRING("a\xe2\x80\xa8"
           "b\xe2\x80\xa9",
           "\"a\\u2028b\\u2029\"");
    STRING("\xe2\x80\xa7\xe2\x80\xaa", "\"\xe2\x80\xa7\xe2\x80\xaa\""); /* beside them: kept */
}

/* U+FFFD, what each bad byte becomes. */
#define R "\xef\xbf\xbd"

static void test_bad_utf8(void)
{
    STRING("a\xff"
           "b",
           "\"a" R "b\"");
    STRING("\x80", "\"" R "\"");                         /* a continuation byte alone */
    STRING("\xc3", "\"" R "\"");                         /* cut at the end */
    STRING("\xe2\x82", "\"" R R "\"");                   /* cut short: each byte */
    STRING("\xc0\xaf", "\"" R R "\"");                   /* overlong */
    STRING("\xe0\x80\xaf", "\"" R R R "\"");             /* overlong */
    STRING("\xed\xa0\x80", "\"" R R R "\"");             /* a surrogate */
    STRING("\xf4\x90\x80\x80", "\"" R R R R "\"");       /* past U+10FFFF */
    STRING("\xf8\x88\x80\x80\x80", "\"" R R R R R "\""); /* five bytes */
    STRING("\xe2\x82<", "\"" R R "\\u003c\"");
}

static void test_numbers(void)
{
    NUMBER(35.0, "35");
    NUMBER(-0.0, "0");
    NUMBER(999999999999999.0, "999999999999999");
    NUMBER(1e15, "1e+15");
    NUMBER(0.1, "0.1");
    NUMBER(38.42, "38.42");
    NUMBER(1.0 / 3, "0.3333333333333333");
    NUMBER(1.7976931348623157e308, "1.7976931348623157e+308");
    NUMBER(9007199254740992.0, "9007199254740992");
    NUMBER(1764403200.25, "1764403200.25"); /* a decimal of a few places, read back */
    NUMBER(0.0001, "0.0001");               /* the smallest %g writes without an exponent */
    NUMBER(0.00009999, "9.999e-05");
    NUMBER(20.246000051498413, "20.246000051498413"); /* read back at 17 digits only */
    NUMBER(-20.246000051498413, "-20.246000051498413");
    NUMBER(1e21 / 3, "3.333333333333333e+20"); /* 16 digits, an exponent */
    NUMBER(1e-5 / 7, "1.4285714285714286e-06");
    NUMBER(NAN, "null");
    NUMBER(INFINITY, "null");
    NUMBER(-INFINITY, "null");

    char text[32];
    CHECK_INT(json_number_text(text, INFINITY), 3);
    CHECK_STR(text, "inf");
    json_number_text(text, -INFINITY);
    CHECK_STR(text, "-inf");

    struct byte_buffer buffer;
    byte_buffer_init(&buffer, BYTE_BUFFER_NO_LIMIT);
    CHECK_INT(json_write_integer(&buffer, -9223372036854775807LL - 1), 0);
    CHECK_INT(byte_buffer_add(&buffer, ",", 1), 0);
    CHECK_INT(json_write_integer(&buffer, 9223372036854775807LL), 0);
    CHECK_INT(byte_buffer_add(&buffer, ",", 1), 0);
    CHECK_INT(json_write_integer(&buffer, 0), 0);
    CHECK_STR(text_of(&buffer), "-9223372036854775808,9223372036854775807,0");
    byte_buffer_free(&buffer);
}

static void test_buffer_grows(void)
{
    enum { LONG = 20000 };
    char *s = malloc(LONG);
    if (!CHECK(s != NULL))
        return;
    for (size_t i = 0; i < LONG; i++)
        s[i] = i % 100 == 0 ? '<' : 'x';
    struct byte_buffer buffer;
    byte_buffer_init(&buffer, BYTE_BUFFER_NO_LIMIT);
    CHECK_INT(json_write_string(&buffer, s, LONG), 0);
    CHECK_INT(buffer.len, LONG + 2 + (LONG / 100) * 5); /* quotes, and each < six bytes */
    CHECK(buffer.cap >= buffer.len);
    CHECK(memcmp(buffer.data, "\"\\u003cxxx", 10) == 0);
    CHECK(buffer.data[buffer.len - 1] == '"');
    byte_buffer_free(&buffer);
    CHECK(buffer.data == NULL && buffer.len == 0 && buffer.cap == 0);
    byte_buffer_free(&buffer); /* twice: safe */
    free(s);
}

/* Many short plain strings and integers, each written into the room left
 * at the end of the allocation, through its growths: every piece whole
 * and in order, the NUL after the last. */
static void test_pieces_across_growth(void)
{
    struct byte_buffer buffer;
    byte_buffer_init(&buffer, BYTE_BUFFER_NO_LIMIT);
    int written = 1;
    for (int i = 0; i < 3000; i++) {
        written &= json_write_string(&buffer, "gpu", 3) == 0;
        written &= json_write_integer(&buffer, -i) == 0;
    }
    CHECK(written);
    CHECK(buffer.data[buffer.len] == '\0');
    int whole = 1;
    size_t at = 0;
    for (int i = 0; i < 3000 && whole; i++) {
        char want[32];
        int len = snprintf(want, sizeof want, "\"gpu\"%d", -i);
        whole = at + (size_t)len <= buffer.len && memcmp(buffer.data + at, want, (size_t)len) == 0;
        at += (size_t)len;
    }
    CHECK(whole);
    CHECK_INT(at, buffer.len);
    byte_buffer_free(&buffer);
}

/* The cut keeps max bytes when the byte after them begins a character (an
 * ASCII byte, a lead byte), else stops before the character it would
 * split, 2, 3 or 4 bytes long; continuation bytes without a lead are passed
 * back over to the start. */
static void test_cut_length(void)
{
    const unsigned char *ascii = (const unsigned char *)"abcdef";
    CHECK_INT(utf8_cut_length(ascii, 0), 0);
    CHECK_INT(utf8_cut_length(ascii, 2), 2);
    const unsigned char *accented = (const unsigned char *)"a\xc3\xa9z"; /* aéz */
    CHECK_INT(utf8_cut_length(accented, 1), 1);
    CHECK_INT(utf8_cut_length(accented, 2), 1);
    CHECK_INT(utf8_cut_length(accented, 3), 3);
    const unsigned char *four = (const unsigned char *)"a\xf0\x9f\x98\x80"
                                                       "b"; /* a😀b */
    for (size_t max = 1; max <= 4; max++)
        CHECK_INT(utf8_cut_length(four, max), 1);
    CHECK_INT(utf8_cut_length(four, 5), 5);
    const unsigned char *euro = (const unsigned char *)"\xe2\x82\xac\xe2\x82\xac"; /* €€ */
    CHECK_INT(utf8_cut_length(euro, 2), 0);
    CHECK_INT(utf8_cut_length(euro, 3), 3);
    CHECK_INT(utf8_cut_length(euro, 4), 3);
    const unsigned char *stray = (const unsigned char *)"\x80\x80\x80\x80x";
    CHECK_INT(utf8_cut_length(stray, 3), 0);
    CHECK_INT(utf8_cut_length(stray, 4), 4);
}

int main(void)
{
    test_plain_and_escaped();
    test_each_ascii_byte();
    test_utf8();
    test_bad_utf8();
    test_numbers();
    test_buffer_grows();
    test_pieces_across_growth();
    test_cut_length();
    return check_finish();
}
