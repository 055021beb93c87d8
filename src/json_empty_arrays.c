/* Finding the empty arrays of a JSON text outside its strings. */
#include "json_empty_arrays.h"

/* Whether c is a byte Lua's %s matches. */
static int is_blank(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Whether text[at, len), a '[' on, is written as pattern (a NUL-terminated
 * text without blanks) but for blanks between its bytes; if so, sets *close
 * to the offset of the text's byte that matched the last of pattern's. */
static int written_as(const char *text, size_t len, size_t at, const char *pattern, size_t *close)
{
    size_t i = at;
    for (const char *p = pattern;; p++) {
        if (*p != text[i])
            return 0;
        if (p[1] == '\0')
            break;
        i++;
        while (i < len && is_blank(text[i]))
            i++;
        if (i == len)
            return 0;
    }
    *close = i;
    return 1;
}

/* As json_empty_arrays.h says. The bytes between those that matter (most
 * of a text: its strings) are passed over four at a time, a table lookup
 * each. */
enum json_array_kind json_find_array(const char *text, size_t len, size_t at, const char *other,
                                     size_t *open, size_t *close)
{
    static const unsigned char matters[256] = {['"'] = 1, ['\\'] = 1, ['['] = 1};
    const unsigned char *bytes = (const unsigned char *)text;
    int in_string = 0;
    for (size_t i = at; i < len; i++) {
        while (len - i >= 4 && !(matters[bytes[i]] | matters[bytes[i + 1]] | matters[bytes[i + 2]] |
                                 matters[bytes[i + 3]]))
            i += 4;
        while (i < len && !matters[bytes[i]])
            i++;
        if (i == len)
            break;
        if (bytes[i] == '\\') {
            i++; /* the byte it escapes */
        } else if (bytes[i] == '"') {
            in_string = !in_string;
        } else if (!in_string) { /* a '[' */
            *open = i;
            if (written_as(text, len, i, "[]", close))
                return JSON_EMPTY_ARRAY;
            if (other && written_as(text, len, i, other, close))
                return JSON_OTHER_ARRAY;
        }
    }
    return JSON_NO_ARRAY;
}
