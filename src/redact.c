/* A secret's echoes in a server's answer, redacted in every common form
 * (redact.h): the HTTP client runs every answer through it before anything
 * reads it. */
#include "redact.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An ASCII letter in lower case; other bytes as they are. */
static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* Whether c stays as it is in a URL (RFC 3986's unreserved bytes). */
static int url_unreserved(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

/* secret URL-encoded: the bytes a URL reserves as %XX, or every byte when
 * every_byte. NULL when memory ran out. */
static char *url_escaped(const char *secret, int every_byte)
{
    size_t len = strlen(secret);
    char *out = malloc(len * 3 + 1), *p = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)secret[i];
        if (every_byte || !url_unreserved(c))
            p += sprintf(p, "%%%02X", c);
        else
            *p++ = (char)c;
    }
    *p = '\0';
    return out;
}

/* The UTF-8 character at s (len bytes left, len > 0): stores its code point
 * in *cp and returns its length in bytes; a byte that starts no valid
 * character is one character of its own, U+0000 to U+00FF (as Latin-1). */
static size_t utf8_char(const unsigned char *s, size_t len, uint32_t *cp)
{
    size_t n = s[0] >= 0xf5 ? 1 : s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 1;
    uint32_t value = n == 1 ? s[0] : s[0] & (0x7fu >> n);
    for (size_t i = 1; i < n; i++) {
        if (i >= len || (s[i] & 0xc0) != 0x80) {
            *cp = s[0];
            return 1;
        }
        value = value << 6 | (s[i] & 0x3fu);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (n > 1 && (value < least[n] || value > 0x10ffff || (value >= 0xd800 && value < 0xe000))) {
        *cp = s[0];
        return 1;
    }
    *cp = value;
    return n;
}

/* Writes code point cp at p as \uXXXX, as a UTF-16 surrogate pair past
 * U+FFFF; returns the bytes written (6 or 12). */
static int json_u(char *p, uint32_t cp)
{
    if (cp < 0x10000)
        return sprintf(p, "\\u%04x", (unsigned)cp);
    cp -= 0x10000;
    return sprintf(p, "\\u%04x\\u%04x", (unsigned)(0xd800 + (cp >> 10)),
                   (unsigned)(0xdc00 + (cp & 0x3ff)));
}

/* The ways of writing a string's contents in JSON that redact_forms knows
 * (redact.h): JSON_SLASHED as PHP does, JSON_HTML_SAFE as Go does,
 * JSON_ASCII as Python does, JSON_EVERY_CHAR every character as \uXXXX. */
enum json_style { JSON_SLASHED, JSON_HTML_SAFE, JSON_ASCII, JSON_EVERY_CHAR };

/* secret as a JSON string's contents written in style (json_style), read
 * as UTF-8 (utf8_char). NULL when memory ran out. */
static char *json_escaped(const char *secret, enum json_style style)
{
    static const char short_escape[] = "\bb\ff\nn\rr\tt";
    size_t len = strlen(secret);
    char *out = malloc(len * 6 + 1), *p = out;
    if (!out)
        return NULL;
    for (size_t i = 0, n; i < len; i += n) {
        uint32_t cp;
        n = utf8_char((const unsigned char *)secret + i, len - i, &cp);
        const char *named = cp && cp < 0x20 ? memchr(short_escape, (int)cp, 10) : NULL;
        if (style == JSON_EVERY_CHAR || (style == JSON_ASCII && cp >= 0x80) ||
            (style == JSON_HTML_SAFE &&
             (cp == '&' || cp == '<' || cp == '>' || cp == 0x2028 || cp == 0x2029)))
            p += json_u(p, cp);
        else if (cp == '"' || cp == '\\' || (style == JSON_SLASHED && cp == '/'))
            p += sprintf(p, "\\%c", (char)cp);
        else if (named && style != JSON_SLASHED)
            p += sprintf(p, "\\%c", named[1]);
        else if (cp < 0x20)
            p += json_u(p, cp);
        else {
            memcpy(p, secret + i, n);
            p += n;
        }
    }
    *p = '\0';
    return out;
}

/* The base64 characters (alphabet: 64 of them) that depend on secret alone
 * when it sits `skip` bytes (0, 1 or 2) past a 3-byte boundary: the 6-bit
 * groups that lie wholly inside its bits. NULL when memory ran out. */
static char *base64_core(const char *secret, size_t skip, const char *alphabet)
{
    size_t len = strlen(secret), bits = 8 * (skip + len);
    size_t first = (8 * skip + 5) / 6, last = bits / 6; /* groups [first, last) */
    char *out = malloc(last - first + 1), *p = out;
    if (!out)
        return NULL;
    for (size_t group = first; group < last; group++) {
        unsigned value = 0;
        for (size_t bit = group * 6; bit < group * 6 + 6; bit++) {
            size_t byte = bit / 8;
            unsigned char c = byte < skip ? 0 : (unsigned char)secret[byte - skip];
            value = value << 1 | ((c >> (7 - bit % 8)) & 1u);
        }
        *p++ = alphabet[value];
    }
    *p = '\0';
    return out;
}

/* A copy of len bytes of s, NUL added. */
static char *copy_of(const char *s, size_t len)
{
    char *out = malloc(len + 1);
    if (out) {
        memcpy(out, s, len);
        out[len] = '\0';
    }
    return out;
}

/* Frees the forms that repeat an earlier one, keeping the others in order;
 * returns how many are kept. */
static int distinct(char *forms[REDACT_FORMS_MAX], int n)
{
    int kept = 0;
    for (int i = 0; i < n; i++) {
        int seen = 0;
        for (int j = 0; j < kept && !seen; j++)
            seen = strcmp(forms[j], forms[i]) == 0;
        if (seen)
            free(forms[i]);
        else
            forms[kept++] = forms[i];
    }
    return kept;
}

/* As redact.h says. */
int redact_forms(const char *secret, char *forms[REDACT_FORMS_MAX])
{
    static const char standard[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    static const char url_safe[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    size_t len = strlen(secret);
    if (len < 4)
        return 0;
    int n = 0;
    forms[n++] = copy_of(secret, len);
    forms[n++] = url_escaped(secret, 0);
    forms[n++] = url_escaped(secret, 1);
    for (enum json_style style = JSON_SLASHED; style <= JSON_EVERY_CHAR; style++)
        forms[n++] = json_escaped(secret, style);
    for (size_t skip = 0; skip < 3; skip++) {
        forms[n++] = base64_core(secret, skip, standard);
        forms[n++] = base64_core(secret, skip, url_safe);
    }
    if (len / 2 >= REDACT_HALF_MIN) {
        forms[n++] = copy_of(secret, len / 2);
        forms[n++] = copy_of(secret + len / 2, len - len / 2);
    }
    for (int i = 0; i < n; i++)
        if (!forms[i]) {
            redact_forms_free(forms, n);
            return -1;
        }
    return distinct(forms, n);
}

/* As redact.h says. */
void redact_forms_free(char *forms[REDACT_FORMS_MAX], int n)
{
    for (int i = 0; i < n; i++) {
        free(forms[i]);
        forms[i] = NULL;
    }
}

/* Marks in hit[] every run of folded (len bytes, lower case) that is the
 * form (lower-cased here); returns whether any was. A form under 4 bytes
 * marks nothing. */
static int mark_form(const char *folded, size_t len, char *form, unsigned char *hit)
{
    size_t form_len = strlen(form);
    if (form_len < 4)
        return 0;
    for (size_t i = 0; i < form_len; i++)
        form[i] = lower(form[i]);
    int found = 0;
    const char *from = folded, *end = folded + len, *at;
    while ((at = memmem(from, (size_t)(end - from), form, form_len)) != NULL) {
        memset(hit + (at - folded), 1, form_len);
        found = 1;
        from = at + 1;
    }
    return found;
}

/* As redact.h says. */
int redact_text(const char *text, size_t len, const char *secret, char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    char *forms[REDACT_FORMS_MAX];
    int n = redact_forms(secret, forms);
    if (n <= 0 || len == 0)
        return n < 0 ? -1 : 0;
    char *folded = malloc(len);
    unsigned char *hit = calloc(len, 1);
    int found = 0, rc = 0;
    if (!folded || !hit) {
        rc = -1;
        goto done;
    }
    for (size_t i = 0; i < len; i++)
        folded[i] = lower(text[i]);
    for (int i = 0; i < n; i++)
        found |= mark_form(folded, len, forms[i], hit);
    if (!found)
        goto done;
    size_t runs = 0;
    for (size_t i = 0; i < len; i++)
        runs += hit[i] && (i == 0 || !hit[i - 1]);
    char *redacted = malloc(len + runs * (sizeof REDACT_MASK - 1) + 1), *p = redacted;
    if (!redacted) {
        rc = -1;
        goto done;
    }
    for (size_t i = 0; i < len; i++) {
        if (!hit[i])
            *p++ = text[i];
        else if (i == 0 || !hit[i - 1]) {
            memcpy(p, REDACT_MASK, sizeof REDACT_MASK - 1);
            p += sizeof REDACT_MASK - 1;
        }
    }
    *p = '\0';
    *out = redacted;
    *out_len = (size_t)(p - redacted);
done:
    free(folded);
    free(hit);
    redact_forms_free(forms, n);
    return rc;
}
