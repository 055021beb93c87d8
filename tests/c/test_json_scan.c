/* json_scan_array and json_next_element: Prometheus' answers found element
 * by element, strings that hold brackets and quotes, escapes, deep nesting,
 * and text that is no JSON (garbage mid-way, cut short anywhere) refused
 * naming the byte. Each text is copied to a buffer of exactly its length, so
 * that the sanitizer build catches a read past its end. */
#include "check.h"
#include "json_scan.h"

#include <stdlib.h>
#include <string.h>

static const char *const RESULT_PATH[] = {"data", "result"};

static char cause[160];
static struct json_array found;

/* json_scan_array of the first len bytes of text, in a buffer of that
 * length, at data.result. */
static int scan_n(const char *text, size_t len)
{
    char *copy = malloc(len ? len : 1);
    memcpy(copy, text, len);
    cause[0] = '\0';
    int got = json_scan_array(copy, len, RESULT_PATH, 2, &found, cause, sizeof cause);
    free(copy);
    return got;
}

/* json_scan_array of a C string at data.result. */
static int scan(const char *text)
{
    return scan_n(text, strlen(text));
}

/* The elements of data.result in text, each as its bytes, joined by "|";
 * "" when text holds none, "(no array)" when json_scan_array does not find
 * one. */
static const char *elements(const char *text)
{
    static char joined[4096];
    size_t len = strlen(text);
    char *copy = malloc(len);
    memcpy(copy, text, len);
    joined[0] = '\0';
    if (json_scan_array(copy, len, RESULT_PATH, 2, &found, cause, sizeof cause) != 1) {
        free(copy);
        return "(no array)";
    }
    size_t at = found.open, first, end, n = 0;
    while (json_next_element(copy, len, at, &first, &end)) {
        if (n++)
            strcat(joined, "|");
        strncat(joined, copy + first, end - first);
        at = end - 1;
    }
    CHECK_INT(n, found.count);
    free(copy);
    return joined;
}

static void test_prometheus_vector(void)
{
    const char *answer = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                         "{\"metric\":{\"node\":\"a\"},\"value\":[1.5,\"3600\"]},"
                         "{\"metric\":{},\"value\":[1.5,\"NaN\"]}]},\"warnings\":[\"w\"]}";
    CHECK_INT(scan(answer), 1);
    CHECK_INT(found.count, 2);
    CHECK_INT(answer[found.open], '[');
    CHECK_INT(answer[found.close], ']');
    CHECK_INT(found.close, strlen(answer) - 20);
    CHECK_STR(
        elements(answer),
        "{\"metric\":{\"node\":\"a\"},\"value\":[1.5,\"3600\"]}|{\"metric\":{},\"value\":[1.5,"
        "\"NaN\"]}");
    CHECK_STR(elements("{\"data\":{\"result\":[]}}"), "");
    CHECK_INT(found.count, 0);
    CHECK_STR(elements(" \n{ \"data\" : { \"result\" : [ 1 , \"x\" ,\t[ ] , { } , null ] } } \r\n"),
              "1|\"x\"|[ ]|{ }|null");
}

static void test_strings_that_look_like_structure(void)
{
    CHECK_STR(elements("{\"data\":{\"result\":[{\"metric\":{\"job\":\"]},[{\\\"\\\\\"}},"
                       "\"a\\\\\"]}}"),
              "{\"metric\":{\"job\":\"]},[{\\\"\\\\\"}}|\"a\\\\\"");
    /* a key or string that says "result" is not the array */
    CHECK_INT(scan("{\"data\":{\"x\":\"\\\"result\\\":[1]\",\"result\":[1,2]}}"), 1);
    CHECK_INT(found.count, 2);
    CHECK_INT(scan("{\"data\":{\"resul\\u0074\":[1]}}"), 0);
    CHECK_STR(elements("{\"data\":{\"result\":[\"\\u00e9\\uD83D\\uDE00\",\"caf\xc3\xa9\"]}}"),
              "\"\\u00e9\\uD83D\\uDE00\"|\"caf\xc3\xa9\"");
}

static void test_path(void)
{
    CHECK_INT(scan("{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"x\"}"), 0);
    CHECK_INT(scan("{\"data\":{\"result\":{\"a\":[1]}}}"), 0);
    CHECK_INT(scan("{\"result\":[1]}"), 0);
    CHECK_INT(scan("{\"x\":{\"data\":{\"result\":[1]}}}"), 0);
    CHECK_INT(scan("[{\"data\":{\"result\":[1]}}]"), 0);
    CHECK_INT(scan("\"data\""), 0);
    CHECK_INT(scan("{\"data\":{\"result\":[1]},\"data\":{\"result\":[2]}}"), -1);
    CHECK_STR(cause, "byte 41: the array at the path appears twice");
    char top[] = "[1,[2,3],{\"a\":4}]";
    CHECK_INT(json_scan_array(top, strlen(top), NULL, 0, &found, cause, sizeof cause), 1);
    CHECK_INT(found.count, 3);
}

static void test_nesting(void)
{
    static char deep[2 * JSON_SCAN_MAX_DEPTH + 64];
    strcpy(deep, "{\"data\":{\"result\":[");
    size_t n = strlen(deep);
    size_t inner = JSON_SCAN_MAX_DEPTH - 3; /* with the object, data's object and result */
    memset(deep + n, '[', inner);
    memset(deep + n + inner, ']', inner);
    strcpy(deep + n + 2 * inner, "]}}");
    CHECK_INT(scan(deep), 1);
    CHECK_INT(found.count, 1);
    CHECK_INT(strlen(elements(deep)), 2 * inner);
    memmove(deep + n + 1, deep + n, strlen(deep + n) + 1);
    deep[n + inner + 1] = ']';
    CHECK_INT(scan(deep), -1);
    CHECK_STR(cause, "byte 1017: nested more than 1000 deep");
}

static void test_not_json(void)
{
    struct {
        const char *text, *cause;
    } cases[] = {
        {"", "byte 1: want a value, the text ends early"},
        {"<!DOCTYPE html>", "byte 1: want a value, got '<'"},
        {"Service Unavailable", "byte 1: want a value, got 'S'"},
        {"{\"data\":{\"result\":[{\"a\":1}, garbage, {\"a\":2}]}}",
         "byte 29: want a value, got 'g'"},
        {"{\"data\":{\"result\":[{\"a\":1}{\"a\":2}]}}", "byte 27: want ',' or ']', got '{'"},
        {"{\"data\":{\"result\":[1,]}}", "byte 22: want a value, got ']'"},
        {"{\"data\":{\"result\":[1]]}}", "byte 22: want ',' or '}', got ']'"},
        {"{\"a\":1,}", "byte 8: want a key (a string), got '}'"},
        {"{\"a\" 1}", "byte 6: want ':' after a key, got '1'"},
        {"{a:1}", "byte 2: want a key (a string), got 'a'"},
        {"[\"a\nb\"]", "byte 4: a control character in a string (want it escaped)"},
        {"[\"\\x\"]",
         "byte 3: an escape JSON has not (want \\\" \\\\ \\/ \\b \\f \\n \\r \\t or \\u)"},
        {"[\"\\u12g4\"]", "byte 3: a \\u escape without four hexadecimal digits"},
        {"[01]", "byte 3: want ',' or ']', got '1'"},
        {"[-]", "byte 3: want a digit, got ']'"},
        {"[1.]", "byte 4: want a digit, got ']'"},
        {"[1e+]", "byte 5: want a digit, got ']'"},
        {"[tru]", "byte 2: want a value, got 't'"},
        {"[NaN]", "byte 2: want a value, got 'N'"},
        {"{} {}", "byte 4: want nothing after the JSON value, got '{'"},
        {"[\"\xff\",\x01]", "byte 6: want a value, got byte 0x01"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        CHECK_INT(scan(cases[i].text), -1);
        CHECK_STR(cause, cases[i].cause);
    }
    CHECK_INT(scan_n("[\"a\0\"]", 6), -1);
    CHECK_STR(cause, "byte 4: a control character in a string (want it escaped)");
}

/* Every proper prefix of an answer is refused (an answer cut short
 * anywhere: in a string, an escape, a number, between elements), and
 * json_next_element stays inside any prefix. */
static void test_truncated(void)
{
    const char *answer = "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":["
                         "{\"metric\":{\"job\":\"a\\\"]\\u00e9\"},\"value\":[1.5e3,\"36\"]},"
                         "{\"metric\":{},\"value\":[-0.5,\"1\"]}]},\"ok\":[true,false,null]}";
    size_t len = strlen(answer);
    CHECK_INT(scan_n(answer, len), 1);
    size_t open = found.open;
    int refused = 0, ends_early = 0;
    for (size_t n = 0; n < len; n++) {
        refused += scan_n(answer, n) == -1;
        ends_early += strstr(cause, "ends") != NULL;
        char *copy = malloc(n + 1);
        memcpy(copy, answer, n);
        size_t at = open, first, end, elements = 0;
        while (at < n && json_next_element(copy, n, at, &first, &end) && elements++ < 8) {
            CHECK(first < end && end <= n);
            at = end - 1;
        }
        free(copy);
    }
    CHECK_INT(refused, len);
    CHECK_INT(ends_early, len);
}

int main(void)
{
    test_prometheus_vector();
    test_strings_that_look_like_structure();
    test_path();
    test_nesting();
    test_not_json();
    test_truncated();
    return check_finish();
}
