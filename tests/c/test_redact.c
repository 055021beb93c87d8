/* redact_text: a token a server echoes is masked in every common form it
 * may come back in (as sent, upper-cased, URL-encoded, JSON-escaped,
 * base64 at any alignment, split in two), and nothing else is touched. */
#include "check.h"
#include "redact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN "8f14e45f-ceea/467a+9575\"3f0b2c1d7a68"

/* What redact_text makes of a C string with secret ("" when it changed
 * nothing). */
static const char *redacted_of(const char *text, const char *secret)
{
    static char result[4096];
    char *out;
    size_t out_len;
    CHECK_INT(redact_text(text, strlen(text), secret, &out, &out_len), 0);
    snprintf(result, sizeof result, "%s", out ? out : "");
    if (out)
        CHECK_INT((long)out_len, (long)strlen(out));
    free(out);
    return result;
}

/* What redact_text makes of a C string with TOKEN (redacted_of). */
static const char *redacted(const char *text)
{
    return redacted_of(text, TOKEN);
}

/* base64 of a C string (standard alphabet, padded). */
static void base64(const char *s, char *out)
{
    static const char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t len = strlen(s), i = 0;
    for (; i + 2 < len; i += 3) {
        unsigned v =
            (unsigned char)s[i] << 16 | (unsigned char)s[i + 1] << 8 | (unsigned char)s[i + 2];
        *out++ = alphabet[v >> 18];
        *out++ = alphabet[(v >> 12) & 63];
        *out++ = alphabet[(v >> 6) & 63];
        *out++ = alphabet[v & 63];
    }
    if (i < len) {
        unsigned v = (unsigned char)s[i] << 16 | (i + 1 < len ? (unsigned char)s[i + 1] << 8 : 0);
        *out++ = alphabet[v >> 18];
        *out++ = alphabet[(v >> 12) & 63];
        *out++ = i + 1 < len ? alphabet[(v >> 6) & 63] : '=';
        *out++ = '=';
    }
    *out = '\0';
}

/* Checks that the token is not in the redacted text in any form the test
 * built, and the mask is. */
static void check_masked(const char *text, const char *why, int line)
{
    const char *out = redacted(text);
    check_long_equal(strstr(out, REDACT_MASK) != NULL, 1, __FILE__, line, why);
    check_long_equal(strstr(out, "3f0b2c1d7a68") == NULL && strstr(out, "3F0B2C1D7A68") == NULL, 1,
                     __FILE__, line, why);
}

static void test_forms(void)
{
    CHECK_STR(redacted("ACL token " TOKEN " not found"), "ACL token <redacted> not found");
    CHECK_STR(redacted("ACL token 8F14E45F-CEEA/467A+9575\"3F0B2C1D7A68 not found"),
              "ACL token <redacted> not found");
    CHECK_STR(redacted("{\"token\":\"8f14e45f-ceea\\/467a+9575\\\"3f0b2c1d7a68\"}"),
              "{\"token\":\"<redacted>\"}");
    CHECK_STR(redacted("GET /v1/x?token=8f14e45f-ceea%2F467a%2B9575%223f0b2c1d7a68 refused"),
              "GET /v1/x?token=<redacted> refused");
    CHECK_STR(redacted("t=8f14e45f-ceea%2f467a%2b9575%223f0b2c1d7a68"), "t=<redacted>");
    /* every byte encoded */
    char every[256] = "token ", *p = every + strlen(every);
    for (const char *c = TOKEN; *c; c++)
        p += sprintf(p, "%%%02x", (unsigned char)*c);
    CHECK_STR(redacted(every), "token <redacted>");
    /* split in two at its middle, with something between */
    CHECK_STR(redacted("first 8f14e45f-ceea/467a then +9575\"3f0b2c1d7a68 done"),
              "first <redacted> then <redacted> done");
}

/* Each character of s as \u00XX, hex digits in upper case when upper. */
static void every_char_escaped(const char *s, int upper, char *out)
{
    for (; *s; s++)
        out += sprintf(out, upper ? "\\u%04X" : "\\u%04x", (unsigned char)*s);
}

static void test_json_forms(void)
{
    /* HTML-safe, as Go writes it: & < > as \u00XX, / as it is */
    CHECK_STR(redacted_of("{\"Node\":\"pa\\u0026ss\\u003cw0rd\\u003e\"}", "pa&ss<w0rd>"),
              "{\"Node\":\"<redacted>\"}");
    CHECK_STR(redacted_of("auth for pa\\u0026SS\\u003Cw0rd\\u003E failed", "pa&ss<w0rd>"),
              "auth for <redacted> failed");
    CHECK_STR(redacted("{\"token\":\"8f14e45f-ceea/467a+9575\\\"3f0b2c1d7a68\"}"),
              "{\"token\":\"<redacted>\"}");
    CHECK_STR(redacted_of("[\"line\\u2028sep\\u2029end\"]", "line\xe2\x80\xa8sep\xe2\x80\xa9"
                                                            "end"),
              "[\"<redacted>\"]");
    /* controls: \t and the like short, others as \u00XX */
    CHECK_STR(redacted_of("\"tab\\tand\\u0001one\"", "tab\tand\x01one"), "\"<redacted>\"");
    /* every byte of an ASCII secret as \u00XX, hex digits in either case */
    char body[512] = "{\"error\":\"bad token ";
    every_char_escaped(TOKEN, 0, body + strlen(body));
    strcat(body, "\"}");
    CHECK_STR(redacted(body), "{\"error\":\"bad token <redacted>\"}");
    strcpy(body, "token ");
    every_char_escaped(TOKEN, 1, body + strlen(body));
    CHECK_STR(redacted(body), "token <redacted>");
    /* past ASCII as UTF-16 escapes, as Python writes it; and every character */
    static const char umlauts[] = "p\xc3\xa4ssw\xc3\xb6rt-\xc3\xbc";
    CHECK_STR(redacted_of("\"p\\u00e4ssw\\u00F6rt-\\u00fc\"", umlauts), "\"<redacted>\"");
    CHECK_STR(redacted_of("\\u0070\\u00e4\\u0073\\u0073\\u0077\\u00f6\\u0072\\u0074\\u002d\\u00fc",
                          umlauts),
              "<redacted>");
    CHECK_STR(redacted_of("key: \"k3y-\\ud83d\\uDD11-x\"", "k3y-\xf0\x9f\x94\x91-x"),
              "key: \"<redacted>\"");
    /* a byte that starts no UTF-8 character stands for itself, as Latin-1 */
    static const char invalid[] = "bad\xf8\x80\x80\xc3-byte";
    CHECK_STR(redacted_of("\"bad\\u00f8\\u0080\\u0080\\u00c3-byte\"", invalid), "\"<redacted>\"");
    CHECK_STR(redacted_of("\"bad\xf8\x80\x80\xc3-byte\"", invalid), "\"<redacted>\"");
}

static void test_distinct(void)
{
    /* forms that come out the same are searched for once */
    static const char *const secrets[] = {TOKEN, "plainsecret0123456789", "pa&ss<w0rd>"};
    for (size_t s = 0; s < sizeof secrets / sizeof secrets[0]; s++) {
        char *forms[REDACT_FORMS_MAX];
        int n = redact_forms(secrets[s], forms);
        CHECK(n > 0 && n <= REDACT_FORMS_MAX);
        for (int i = 0; i < n; i++)
            for (int j = 0; j < i; j++)
                CHECK(strcmp(forms[i], forms[j]) != 0);
        redact_forms_free(forms, n);
    }
    char *forms[REDACT_FORMS_MAX];
    int n = redact_forms("plainsecret0123456789", forms);
    /* as sent, every byte as %XX and as \u00XX, 3 base64, 2 halves */
    CHECK_INT(n, 8);
    redact_forms_free(forms, n);
}

static void test_base64(void)
{
    /* the token base64-encoded at every offset inside a longer text */
    static const char *const prefixes[] = {"", "x", "xy", "user:", "Bearer "};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        char plain[256], encoded[512], body[600];
        snprintf(plain, sizeof plain, "%s%s!", prefixes[i], TOKEN);
        base64(plain, encoded);
        snprintf(body, sizeof body, "Authorization was: Basic %s (refused)", encoded);
        check_masked(body, plain, __LINE__);
        /* URL-safe */
        for (char *c = encoded; *c; c++)
            *c = *c == '+' ? '-' : *c == '/' ? '_' : *c;
        snprintf(body, sizeof body, "id=%s", encoded);
        check_masked(body, plain, __LINE__);
    }
}

static void test_untouched(void)
{
    char *out = (char *)"unchanged";
    size_t out_len = 99;
    const char text[] = "Permission denied: no token here, 3f0b and 8f14 alone";
    CHECK_INT(redact_text(text, strlen(text), TOKEN, &out, &out_len), 0);
    CHECK(out == NULL);
    CHECK_INT((long)out_len, 0);
    /* a secret under 4 bytes has no forms */
    CHECK_INT(redact_text("abc abc", 7, "abc", &out, &out_len), 0);
    CHECK(out == NULL);
    char *forms[REDACT_FORMS_MAX];
    CHECK_INT(redact_forms("abc", forms), 0);
    int n = redact_forms(TOKEN, forms);
    CHECK(n > 8 && n <= REDACT_FORMS_MAX);
    redact_forms_free(forms, n);
    /* a NUL inside the text does not end the search */
    static const char with_nul[] = "a\0b " TOKEN;
    CHECK_INT(redact_text(with_nul, sizeof with_nul - 1, TOKEN, &out, &out_len), 0);
    CHECK(out != NULL && out_len == 4 + strlen(REDACT_MASK) && memcmp(out, "a\0b ", 4) == 0);
    free(out);
}

int main(void)
{
    test_forms();
    test_json_forms();
    test_distinct();
    test_base64();
    test_untouched();
    return check_finish();
}
