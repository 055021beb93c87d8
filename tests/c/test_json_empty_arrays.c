/* json_find_array (json_empty_arrays.c): the empty arrays of a JSON text
 * outside its strings, blanks in them or not, found one after another; a
 * quote escaped or not, in a string or out of one; the other array asked
 * for, blanks anywhere in it; texts that end in the middle of an array or
 * a string, read no further than their length. */
#include "check.h"
#include "json_empty_arrays.h"

#include <stdlib.h>
#include <string.h>

#define STAND_IN "[true,null,false,null,true]"

/* The arrays found in text (at most 8) as "kind@open-close" items, each
 * search from one past the last: the text is copied to a buffer of its
 * length exactly (no NUL after it), so reading past it is caught under
 * AddressSanitizer. */
static const char *found_in(const char *text, size_t len, const char *other)
{
    static char out[256];
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    out[0] = '\0';
    size_t at = 0, open, close;
    for (int i = 0; i < 8; i++) {
        enum json_array_kind kind = json_find_array(copy, len, at, other, &open, &close);
        if (kind == JSON_NO_ARRAY)
            break;
        size_t used = strlen(out);
        snprintf(out + used, sizeof out - used, "%s%c@%zu-%zu", used ? " " : "",
                 kind == JSON_EMPTY_ARRAY ? 'E' : 'O', open, close);
        at = close + 1;
    }
    free(copy);
    return out;
}

#define FOUND(text, other) found_in((text), sizeof(text) - 1, (other))

/* Empty arrays at the top, in arrays and objects, with every blank Lua's %s
 * matches; a non-empty one is none. */
static void test_empty_arrays(void)
{
    CHECK_STR(FOUND("[]", NULL), "E@0-1");
    CHECK_STR(FOUND(" [ ] ", NULL), "E@1-3");
    CHECK_STR(FOUND("{\"a\":[],\"b\":[[\t\n\v\f\r ],{}]}", NULL), "E@5-6 E@13-20");
    CHECK_STR(FOUND("[1,[2]]", NULL), "");
    CHECK_STR(FOUND("[[[]]]", NULL), "E@2-3");
    CHECK_STR(FOUND("[][][]", NULL), "E@0-1 E@2-3 E@4-5");
    CHECK_STR(FOUND("", NULL), "");
}

/* A [] in a string, a key or after escaped quotes is none; one after an
 * escaped backslash that ends a string is. */
static void test_strings(void)
{
    CHECK_STR(FOUND("{\"[]\":\"a[ ]b\",\"c\":[]}", NULL), "E@18-19");
    CHECK_STR(FOUND("[\"x\\\"[]\",[]]", NULL), "E@9-10");
    CHECK_STR(FOUND("[\"\\\\\",[]]", NULL), "E@6-7");
    CHECK_STR(FOUND("[\"\\\\\\\"[]\"]", NULL), "");
    /* a backslash outside a string takes its byte along too, as a text
     * cjson refuses is read */
    CHECK_STR(FOUND("\\[]", NULL), "");
    CHECK_STR(FOUND("\\\"[]", NULL), "E@2-3");
}

/* The other array, compact or with blanks anywhere, is found where it is,
 * not in a string, not when it is only its beginning. */
static void test_other(void)
{
    CHECK_STR(FOUND("{\"t\":" STAND_IN ",\"e\":[]}", STAND_IN), "O@5-31 E@37-38");
    CHECK_STR(FOUND("[ true , null,false ,\nnull, true ]", STAND_IN), "O@0-33");
    CHECK_STR(FOUND("[\"" STAND_IN "\",[]]", STAND_IN), "E@31-32");
    CHECK_STR(FOUND("[true,null,false,null]", STAND_IN), "");
    CHECK_STR(FOUND("[true,null,false,null,true,1]", STAND_IN), "");
    CHECK_STR(FOUND(STAND_IN, NULL), "");
}

/* A text that ends after a '[', in its blanks, inside the other array or
 * inside a string, or with a backslash: nothing found, nothing read past
 * its end. */
static void test_cut_short(void)
{
    CHECK_STR(FOUND("[", NULL), "");
    CHECK_STR(FOUND("[ \n", NULL), "");
    CHECK_STR(FOUND("[true,null,fal", STAND_IN), "");
    CHECK_STR(FOUND("[true,null,false,null,true ", STAND_IN), "");
    CHECK_STR(FOUND("\"[]", NULL), "");
    CHECK_STR(FOUND("[\\", NULL), "");
    CHECK_STR(FOUND("\\", NULL), "");
    CHECK_STR(FOUND("ab\0[]", NULL), "E@3-4");
}

/* A text of megabytes, one string with brackets all through it, then an
 * empty array: found once, at its place. */
static void test_long(void)
{
    enum { LONG = 3 << 20 };
    char *text = malloc(LONG);
    text[0] = '[';
    text[1] = '"';
    for (size_t i = 2; i < LONG - 5; i++)
        text[i] = "a[ ]\\\\"[i % 6];
    memcpy(text + LONG - 5, "\",[]]", 5);
    size_t open = 0, close = 0;
    CHECK_INT(json_find_array(text, LONG, 0, STAND_IN, &open, &close), JSON_EMPTY_ARRAY);
    CHECK_INT(open, LONG - 3);
    CHECK_INT(close, LONG - 2);
    CHECK_INT(json_find_array(text, LONG, close + 1, STAND_IN, &open, &close), JSON_NO_ARRAY);
    free(text);
}

int main(void)
{
    test_empty_arrays();
    test_strings();
    test_other();
    test_cut_short();
    test_long();
    return check_finish();
}
