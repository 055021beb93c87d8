#ifndef GPULEDGER_JSON_EMPTY_ARRAYS_H
#define GPULEDGER_JSON_EMPTY_ARRAYS_H
#include <stddef.h>

/* Where the empty arrays of a JSON text are, told without decoding it:
 * lua-cjson decodes [] as it decodes {}, so json.decode first writes each
 * empty array as a value it can tell afterwards (json_tree.c), and must
 * know whether the text holds that value already. Knows nothing of Lua. */

/* What json_find_array found. */
enum json_array_kind {
    JSON_NO_ARRAY,    /* none left */
    JSON_EMPTY_ARRAY, /* '[', blanks, ']' */
    JSON_OTHER_ARRAY, /* the array given as other */
};

/* Finds the first array of text[0, len) at or after offset at, not inside a
 * string, that is empty (a '[', then only blanks, then a ']'; blanks are
 * the bytes Lua's %s matches: space, tab, LF, VT, FF, CR) or, when other is
 * not NULL, that is written as other is (a NUL-terminated array in compact
 * JSON that holds no string, "[true,null]") but for blanks anywhere between
 * its bytes. at must lie outside a string (0, or one past the ']' of an
 * array found before). Strings are told by their quotes, and a backslash
 * takes the byte after it along, in a string or not (an escaped quote opens
 * or closes nothing), so a text cjson refuses is read the same way. Returns
 * the kind found, with the offsets of its '[' and of its ']' in *open and
 * *close. */
enum json_array_kind json_find_array(const char *text, size_t len, size_t at, const char *other,
                                     size_t *open, size_t *close);

#endif
