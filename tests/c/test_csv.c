/* csv_parse: Go encoding/csv semantics (TrimLeadingSpace, variable field
 * counts, strict quotes) on nvidia-smi's answers and on hostile input. */
#include "check.h"
#include "csv.h"

#include <stdlib.h>
#include <string.h>

static char errbuf[256];

/* Parses a C string; returns csv_parse's result. */
static int parse(const char *text, struct csv_table *table)
{
    errbuf[0] = '\0';
    return csv_parse(text, strlen(text), table, errbuf, sizeof errbuf);
}

/* Checks that row holds exactly the fields in want (NULL-terminated). */
static void check_row(const struct csv_row *row, const char *const *want, int line)
{
    size_t n = 0;
    while (want[n])
        n++;
    if (!check_long_equal((long)row->nfields, (long)n, __FILE__, line, "field count"))
        return;
    for (size_t i = 0; i < n; i++)
        check_str_equal(row->fields[i], want[i], __FILE__, line, "field");
}

#define ROW(row, ...) check_row((row), (const char *const[]){__VA_ARGS__, NULL}, __LINE__)

static void test_nvidia_rows(void)
{
    struct csv_table t;
    CHECK_INT(
        parse("0, GPU-aaa, NVIDIA L4, 00000000:01:00.0, 3120, 23034, 72, 30, 66, 35.51, 2, 59.5\n"
              "1, GPU-bbb, NVIDIA L4, 00000000:02:00.0, [N/A], 23034, [Not Supported], 0, 41, "
              "[N/A], 0, 0\n",
              &t),
        0);
    if (CHECK_INT(t.nrows, 2)) {
        ROW(&t.rows[0], "0", "GPU-aaa", "NVIDIA L4", "00000000:01:00.0", "3120", "23034", "72",
            "30", "66", "35.51", "2", "59.5");
        ROW(&t.rows[1], "1", "GPU-bbb", "NVIDIA L4", "00000000:02:00.0", "[N/A]", "23034",
            "[Not Supported]", "0", "41", "[N/A]", "0", "0");
    }
    csv_free(&t);

    CHECK_INT(parse("524, [Insufficient Permissions], [N/A], GPU-8e4c\n", &t), 0);
    if (CHECK_INT(t.nrows, 1))
        ROW(&t.rows[0], "524", "[Insufficient Permissions]", "[N/A]", "GPU-8e4c");
    csv_free(&t);
}

static void test_field_counts_vary(void)
{
    struct csv_table t;
    CHECK_INT(parse("0, GPU-a, L4\n1\n2, x, y, z, w\n", &t), 0);
    if (CHECK_INT(t.nrows, 3)) {
        ROW(&t.rows[0], "0", "GPU-a", "L4");
        ROW(&t.rows[1], "1");
        ROW(&t.rows[2], "2", "x", "y", "z", "w");
    }
    csv_free(&t);

    CHECK_INT(parse("a,\n,b\n, \n", &t), 0); /* empty fields; a line of blanks is one "" */
    if (CHECK_INT(t.nrows, 3)) {
        ROW(&t.rows[0], "a", "");
        ROW(&t.rows[1], "", "b");
        ROW(&t.rows[2], "", "");
    }
    csv_free(&t);

    CHECK_INT(parse("   \n", &t), 0);
    if (CHECK_INT(t.nrows, 1))
        ROW(&t.rows[0], "");
    csv_free(&t);
}

static void test_line_ends(void)
{
    struct csv_table t;
    CHECK_INT(parse("\n\na, b\n\n\nc\n\n", &t), 0); /* blank lines skipped */
    if (CHECK_INT(t.nrows, 2)) {
        ROW(&t.rows[0], "a", "b");
        ROW(&t.rows[1], "c");
    }
    csv_free(&t);

    CHECK_INT(parse("a, b\r\n\r\nc, d\r\n", &t), 0);
    if (CHECK_INT(t.nrows, 2)) {
        ROW(&t.rows[0], "a", "b");
        ROW(&t.rows[1], "c", "d");
    }
    csv_free(&t);

    CHECK_INT(parse("a, b", &t), 0); /* no final newline */
    if (CHECK_INT(t.nrows, 1))
        ROW(&t.rows[0], "a", "b");
    csv_free(&t);

    CHECK_INT(parse("a, b\r", &t), 0); /* a \r at the very end is dropped */
    if (CHECK_INT(t.nrows, 1))
        ROW(&t.rows[0], "a", "b");
    csv_free(&t);

    CHECK_INT(parse("a\rb,c\r\r\n", &t), 0); /* other \r are data */
    if (CHECK_INT(t.nrows, 1))
        ROW(&t.rows[0], "a\rb", "c\r");
    csv_free(&t);

    CHECK_INT(parse("\r\n\n\r", &t), 0);
    CHECK_INT(t.nrows, 0);
    csv_free(&t);
}

static void test_quoted_fields(void)
{
    struct csv_table t;
    CHECK_INT(parse("\"x, y\",  \"say \"\"hi\"\"\", z,\"\"\n", &t), 0);
    if (CHECK_INT(t.nrows, 1))
        ROW(&t.rows[0], "x, y", "say \"hi\"", "z", "");
    csv_free(&t);

    CHECK_INT(parse("\"two\nlines\", b\n\"crlf\r\ninside\"\r\nlast,\"at end\"", &t), 0);
    if (CHECK_INT(t.nrows, 3)) {
        ROW(&t.rows[0], "two\nlines", "b");
        ROW(&t.rows[1], "crlf\ninside");
        ROW(&t.rows[2], "last", "at end");
    }
    csv_free(&t);

    CHECK_INT(parse("\"a\n\nb\"\n", &t), 0); /* a blank line inside quotes is data */
    if (CHECK_INT(t.nrows, 1))
        ROW(&t.rows[0], "a\n\nb");
    csv_free(&t);

    CHECK_INT(parse("\" lead\",\"trail \"\n", &t), 0); /* blanks inside quotes are kept */
    if (CHECK_INT(t.nrows, 1))
        ROW(&t.rows[0], " lead", "trail ");
    csv_free(&t);
}

static void test_errors(void)
{
    struct csv_table t = {0};
    CHECK_INT(parse("a, b\nc, d\ne, f\"g\n", &t), -1);
    CHECK_STR(errbuf, "line 3: bare \" in non-quoted field");
    CHECK(t.nrows == 0 && t.rows == NULL);

    /* nvidia-smi's answer to an unknown field is not CSV */
    CHECK_INT(parse("Field \"device_minor\" is not a valid field to query.\n\n", &t), -1);
    CHECK_STR(errbuf, "line 1: bare \" in non-quoted field");

    CHECK_INT(parse("\"a\"b, c\n", &t), -1);
    CHECK_STR(errbuf, "line 1: extraneous or missing \" in quoted field");

    CHECK_INT(parse("a\n\n\"a\" ,b\n", &t), -1);
    CHECK_STR(errbuf, "line 3: extraneous or missing \" in quoted field");

    CHECK_INT(parse("x\n\"abc\ndef\n", &t), -1); /* never closed: names its last line */
    CHECK_STR(errbuf, "line 3: extraneous or missing \" in quoted field");

    CHECK_INT(parse("\"", &t), -1);
    CHECK_STR(errbuf, "line 1: extraneous or missing \" in quoted field");
    CHECK(t.nrows == 0 && t.rows == NULL);

    /* a tiny errbuf is truncated, not overrun; no errbuf at all is fine */
    char tiny[8];
    CHECK_INT(csv_parse("a\"", 2, &t, tiny, sizeof tiny), -1);
    CHECK_STR(tiny, "line 1:");
    CHECK_INT(csv_parse("a\"", 2, &t, NULL, 0), -1);
}

static void test_empty_input(void)
{
    struct csv_table t;
    CHECK_INT(parse("", &t), 0);
    CHECK(t.nrows == 0 && t.rows == NULL);
    csv_free(&t);
    CHECK_INT(csv_parse(NULL, 0, &t, errbuf, sizeof errbuf), 0);
    CHECK_INT(t.nrows, 0);

    struct csv_table zeroed = {0};
    csv_free(&zeroed); /* safe on a zeroed table */
    CHECK(zeroed.rows == NULL);
}

static void test_odd_bytes(void)
{
    struct csv_table t;
    /* a NUL is an error naming its line, never a field cut short ("42") */
    static const char with_nul[] = "a\0b, c\n\0\nd";
    CHECK_INT(csv_parse(with_nul, sizeof with_nul - 1, &t, errbuf, sizeof errbuf), -1);
    CHECK_STR(errbuf, "line 1: NUL byte in a field");
    CHECK(t.nrows == 0 && t.rows == NULL);
    static const char nul_in_row_2[] = "0, 41\n1, 42\0 42\n2, 43\n";
    CHECK_INT(csv_parse(nul_in_row_2, sizeof nul_in_row_2 - 1, &t, errbuf, sizeof errbuf), -1);
    CHECK_STR(errbuf, "line 2: NUL byte in a field");
    static const char nul_quoted[] = "0, \"a\nb\0\"\n";
    CHECK_INT(csv_parse(nul_quoted, sizeof nul_quoted - 1, &t, errbuf, sizeof errbuf), -1);
    CHECK_STR(errbuf, "line 2: NUL byte in a field");

    CHECK_INT(parse("\xff\xfe, \xc3(,\xc2\n", &t), 0); /* invalid UTF-8 passes through */
    if (CHECK_INT(t.nrows, 1))
        ROW(&t.rows[0], "\xff\xfe", "\xc3(", "\xc2");
    csv_free(&t);

    /* Go trims Unicode white space: NBSP, U+3000, tab, vertical tab */
    CHECK_INT(parse("a,\xc2\xa0"
                    "b,\xe3\x80\x80"
                    "c,\t\v d, \xe2\x80\x8b"
                    "e\n",
                    &t),
              0);
    if (CHECK_INT(t.nrows, 1)) /* U+200B is not white space */
        ROW(&t.rows[0], "a", "b", "c", "d",
            "\xe2\x80\x8b"
            "e");
    csv_free(&t);
}

/* Renders a table as "[a|b][c]" to compare it with a literal. */
static void render(const struct csv_table *t, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = '\0';
    for (size_t r = 0; r < t->nrows; r++)
        for (size_t f = 0; f < t->rows[r].nfields; f++)
            used += (size_t)snprintf(out + used, used < cap ? cap - used : 0, "%s%s%s",
                                     f == 0 ? "[" : "|", t->rows[r].fields[f],
                                     f + 1 == t->rows[r].nfields ? "]" : "");
}

/* The cases of Go's encoding/csv reader_test.go that apply with
 * TrimLeadingSpace, FieldsPerRecord -1 and strict quotes; an error is
 * written "!" and the message. */
static void test_go_reader_cases(void)
{
    static const struct {
        const char *input, *want;
    } cases[] = {
        {"a,b,c\n", "[a|b|c]"},
        {"a,b\r\nc,d\r\n", "[a|b][c|d]"},
        {"a,b\rc,d\r\n", "[a|b\rc|d]"},
        {"#field1,field2,field3\n\"aaa\",\"bb\nb\",\"ccc\"\n\"a,a\",\"b\"\"bb\",\"ccc\"\nzzz,yyy,"
         "xxx\n",
         "[#field1|field2|field3][aaa|bb\nb|ccc][a,a|b\"bb|ccc][zzz|yyy|xxx]"},
        {"a,b,c", "[a|b|c]"},
        {"\"two\nline\",\"one line\",\"three\nline\nfield\"",
         "[two\nline|one line|three\nline\nfield]"},
        {"a,b,c\n\nd,e,f\n\n", "[a|b|c][d|e|f]"},
        {" a,  b,   c\n", "[a|b|c]"},
        {" \"a\",\" b\",c", "[a| b|c]"},
        {"a\"\"b,c", "!line 1: bare \" in non-quoted field"},
        {"a \"word\",\"b\"", "!line 1: bare \" in non-quoted field"},
        {"\"a word\",b\"", "!line 1: bare \" in non-quoted field"},
        {"\"a \"word\",\"b\"", "!line 1: extraneous or missing \" in quoted field"},
        {"a,b,c\nd,e", "[a|b|c][d|e]"},
        {"a,b,c,", "[a|b|c|]"},
        {"a,b,c,\n", "[a|b|c|]"},
        {"a,b,c, ", "[a|b|c|]"},
        {"a,b,c, \n", "[a|b|c|]"},
        {"a,b,c\nd,e,f\ng,hi,", "[a|b|c][d|e|f][g|hi|]"},
        {"x,y,z,w\nx,y,z,\nx,y,,\nx,,,\n,,,\n\"x\",\"y\",\"z\",\"w\"\n\"x\",\"y\",\"z\",\"\"\n"
         "\"x\",\"y\",\"\",\"\"\n\"x\",\"\",\"\",\"\"\n\"\",\"\",\"\",\"\"\n",
         "[x|y|z|w][x|y|z|][x|y||][x|||][|||][x|y|z|w][x|y|z|][x|y||][x|||][|||]"},
        {"a,b,\nc,d,e", "[a|b|][c|d|e]"},
        {"a,\"b\nc\"d,e", "!line 2: extraneous or missing \" in quoted field"},
        {"a,b\n\"d\n\n,e", "!line 4: extraneous or missing \" in quoted field"},
        {"A,\"Hello\r\nHi\",B\r\n", "[A|Hello\nHi|B]"},
        {"x09\x41\xb4\x1c,aktau", "[x09A\xb4\x1c|aktau]"},
        {"field1,field2\r", "[field1|field2]"},
        {"\"\n\n\n\n\"", "[\n\n\n\n]"},
        {"\r\n\r\n\r\n\r\n", ""},
        {"\"foo\"bar\"\r\n", "!line 1: extraneous or missing \" in quoted field"},
        {"\"foo\"\"bar\"\r\n", "[foo\"bar]"},
        {"\"\"\"\"\"\"\"\"", "[\"\"\"]"},
        {"\"\"\"\"\"\"\"", "!line 1: extraneous or missing \" in quoted field"},
    };
    char got[512];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct csv_table t;
        if (parse(cases[i].input, &t) == 0) {
            render(&t, got, sizeof got);
            csv_free(&t);
        } else {
            snprintf(got, sizeof got, "!%s", errbuf);
        }
        check_str_equal(got, cases[i].want, __FILE__, __LINE__, cases[i].input);
    }
}

/* 10 MB in three shapes: many rows, one row of many fields, one huge quoted
 * field. Each must parse in one pass (a quadratic parser would not finish). */
static void test_large_inputs(void)
{
    enum { SIZE = 10 * 1000 * 1000 };
    static const char row[] =
        "0, GPU-aaa, NVIDIA L4, 00000000:01:00.0, 3120, 23034, 72, 30, 66, 35.51, 2, 59.5\n";
    size_t row_len = sizeof row - 1, nrows = SIZE / row_len;
    char *text = malloc(SIZE + 2);
    if (!CHECK(text != NULL))
        return;
    struct csv_table t;

    for (size_t i = 0; i < nrows; i++)
        memcpy(text + i * row_len, row, row_len);
    CHECK_INT(csv_parse(text, nrows * row_len, &t, errbuf, sizeof errbuf), 0);
    if (CHECK_INT(t.nrows, nrows))
        ROW(&t.rows[nrows - 1], "0", "GPU-aaa", "NVIDIA L4", "00000000:01:00.0", "3120", "23034",
            "72", "30", "66", "35.51", "2", "59.5");
    csv_free(&t);

    for (size_t i = 0; i < SIZE; i += 2) {
        text[i] = 'x';
        text[i + 1] = ',';
    }
    CHECK_INT(csv_parse(text, SIZE, &t, errbuf, sizeof errbuf), 0);
    if (CHECK_INT(t.nrows, 1)) {
        CHECK_INT(t.rows[0].nfields, SIZE / 2 + 1);
        CHECK_STR(t.rows[0].fields[SIZE / 2 - 1], "x");
        CHECK_STR(t.rows[0].fields[SIZE / 2], "");
    }
    csv_free(&t);

    text[0] = '"';
    memset(text + 1, 'y', SIZE - 1);
    for (size_t i = 1000; i < SIZE; i += 1000)
        text[i] = '\n'; /* a quoted field over 10 000 lines */
    text[SIZE] = '"';
    CHECK_INT(csv_parse(text, SIZE + 1, &t, errbuf, sizeof errbuf), 0);
    if (CHECK_INT(t.nrows, 1) && CHECK_INT(t.rows[0].nfields, 1))
        CHECK_INT(strlen(t.rows[0].fields[0]), SIZE - 1);
    csv_free(&t);
    free(text);
}

int main(void)
{
    test_nvidia_rows();
    test_field_counts_vary();
    test_line_ends();
    test_quoted_fields();
    test_errors();
    test_go_reader_cases();
    test_empty_input();
    test_odd_bytes();
    test_large_inputs();
    return check_finish();
}
