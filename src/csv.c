/* CSV as Go's encoding/csv reads it (TrimLeadingSpace, FieldsPerRecord -1,
 * LazyQuotes off): the structure follows Go's readLine/readRecord, so the two
 * agree on every input, odd ones included (a \r alone, spaces-only lines, a
 * quote that never closes). */
#include "csv.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"

/* One physical line of the input, as Go's readLine hands it out: "\r\n" reads
 * as "\n", and a "\r" right before the end of the input is dropped. */
struct line {
    const char *text; /* the bytes before the newline */
    size_t len;
    int has_newline;
};

struct line_reader {
    const char *next; /* first byte not read yet */
    const char *end;
    size_t line_no; /* of the line read last; 0 before the first */
};

/* The fields of the record being read: their bytes, each followed by a NUL,
 * and where each one starts. Reused from record to record. */
struct record_buf {
    char *bytes;
    size_t len, cap;
    size_t *starts;
    size_t nfields, fields_cap;
};

static const char ERR_BARE_QUOTE[] = "bare \" in non-quoted field";
static const char ERR_QUOTE[] = "extraneous or missing \" in quoted field";
static const char ERR_NUL[] = "NUL byte in a field";

/* Reads the next line into *line; returns 0 at the end of the input. */
static int read_line(struct line_reader *reader, struct line *line)
{
    if (reader->next >= reader->end)
        return 0;
    size_t left = (size_t)(reader->end - reader->next);
    const char *newline = memchr(reader->next, '\n', left);
    line->text = reader->next;
    reader->line_no++;
    if (newline) {
        line->len = (size_t)(newline - reader->next);
        line->has_newline = 1;
        reader->next = newline + 1;
    } else {
        line->len = left;
        line->has_newline = 0;
        reader->next = reader->end;
    }
    if (line->len > 0 && line->text[line->len - 1] == '\r')
        line->len--;
    return 1;
}

/* Length of the white-space character (Go's unicode.IsSpace, UTF-8 encoded)
 * at the start of text, or 0 when it starts with anything else. */
static size_t space_len(const unsigned char *text, size_t len)
{
    switch (text[0]) {
    case ' ':
    case '\t':
    case '\n':
    case '\v':
    case '\f':
    case '\r':
        return 1;
    case 0xC2: /* U+0085, U+00A0 */
        return len >= 2 && (text[1] == 0x85 || text[1] == 0xA0) ? 2 : 0;
    case 0xE1: /* U+1680 */
        return len >= 3 && text[1] == 0x9A && text[2] == 0x80 ? 3 : 0;
    case 0xE2: /* U+2000..U+200A, U+2028, U+2029, U+202F, U+205F */
        if (len < 3)
            return 0;
        if (text[1] == 0x80 && ((text[2] >= 0x80 && text[2] <= 0x8A) || text[2] == 0xA8 ||
                                text[2] == 0xA9 || text[2] == 0xAF))
            return 3;
        return text[1] == 0x81 && text[2] == 0x9F ? 3 : 0;
    case 0xE3: /* U+3000 */
        return len >= 3 && text[1] == 0x80 && text[2] == 0x80 ? 3 : 0;
    default:
        return 0;
    }
}

/* Returns buf, holding *cap elements of size elem, grown (by doubling) to
 * hold at least need of them; NULL when out of memory (buf is then intact). */
static void *grow(void *buf, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return buf;
    size_t new_cap = *cap ? *cap : 16;
    while (new_cap < need) {
        if (new_cap > SIZE_MAX / 2 / elem)
            return NULL;
        new_cap *= 2;
    }
    void *grown = realloc(buf, new_cap * elem);
    if (grown)
        *cap = new_cap;
    return grown;
}

/* Appends len bytes to the record being read. Returns 0, or -1 when
 * memory runs out. */
static int append_bytes(struct record_buf *rec, const char *bytes, size_t len)
{
    if (len > SIZE_MAX - rec->len - 1)
        return -1;
    char *bytes_grown = grow(rec->bytes, &rec->cap, rec->len + len + 1, 1);
    if (!bytes_grown)
        return -1;
    rec->bytes = bytes_grown;
    if (len > 0)
        memcpy(rec->bytes + rec->len, bytes, len);
    rec->len += len;
    return 0;
}

/* Starts a new field of the record at its current end. Returns 0, or -1
 * when memory runs out. */
static int start_field(struct record_buf *rec)
{
    size_t *starts_grown = grow(rec->starts, &rec->fields_cap, rec->nfields + 1, sizeof(size_t));
    if (!starts_grown)
        return -1;
    rec->starts = starts_grown;
    rec->starts[rec->nfields++] = rec->len;
    return 0;
}

/* Ends the current field with its NUL. */
static int end_field(struct record_buf *rec)
{
    return append_bytes(rec, "", 1);
}

/* Moves the record into a row: one allocation holding the field pointers and
 * then the field bytes, so csv_free frees a row with one free(). */
static int store_row(const struct record_buf *rec, struct csv_row *row)
{
    size_t pointers = rec->nfields * sizeof(char *);
    char **fields = malloc(pointers + rec->len);
    if (!fields)
        return -1;
    char *bytes = (char *)fields + pointers;
    memcpy(bytes, rec->bytes, rec->len);
    for (size_t i = 0; i < rec->nfields; i++)
        fields[i] = bytes + rec->starts[i];
    row->nfields = rec->nfields;
    row->fields = fields;
    return 0;
}

enum read_result { READ_RECORD, READ_EOF, READ_SYNTAX, READ_NOMEM };

/* Reads one record into rec, as Go's readRecord does. On READ_SYNTAX,
 * *error_text and *error_line say what and where. */
static enum read_result read_record(struct line_reader *reader, struct record_buf *rec,
                                    const char **error_text, size_t *error_line)
{
    struct line line;
    do { /* blank lines are skipped */
        if (!read_line(reader, &line))
            return READ_EOF;
    } while (line.len == 0);

    rec->len = 0;
    rec->nfields = 0;
    const char *cur = line.text;
    size_t rest = line.len; /* bytes left before the newline */
    for (;;) {              /* one field per turn */
        size_t skip;
        while (rest > 0 && (skip = space_len((const unsigned char *)cur, rest)) > 0) {
            cur += skip;
            rest -= skip;
        }
        if (start_field(rec) < 0)
            return READ_NOMEM;
        if (rest == 0 || cur[0] != '"') {
            const char *comma = memchr(cur, ',', rest);
            size_t field_len = comma ? (size_t)(comma - cur) : rest;
            if (memchr(cur, '"', field_len)) {
                *error_text = ERR_BARE_QUOTE;
                *error_line = reader->line_no;
                return READ_SYNTAX;
            }
            if (append_bytes(rec, cur, field_len) < 0 || end_field(rec) < 0)
                return READ_NOMEM;
            if (!comma)
                return READ_RECORD;
            cur = comma + 1;
            rest -= field_len + 1;
            continue;
        }

        cur++; /* the opening quote */
        rest--;
        size_t last_line_with_text = reader->line_no;
        for (;;) { /* one quote or one line per turn */
            const char *quote = memchr(cur, '"', rest);
            if (quote) {
                size_t before = (size_t)(quote - cur);
                if (append_bytes(rec, cur, before) < 0)
                    return READ_NOMEM;
                cur = quote + 1;
                rest -= before + 1;
                if (rest > 0 && cur[0] == '"') { /* "" */
                    if (append_bytes(rec, "\"", 1) < 0)
                        return READ_NOMEM;
                    cur++;
                    rest--;
                } else if (rest > 0 && cur[0] == ',') { /* end of field */
                    cur++;
                    rest--;
                    break;
                } else if (rest == 0) { /* end of record */
                    return end_field(rec) < 0 ? READ_NOMEM : READ_RECORD;
                } else {
                    *error_text = ERR_QUOTE;
                    *error_line = reader->line_no;
                    return READ_SYNTAX;
                }
            } else if (rest > 0 || line.has_newline) { /* the field goes on */
                if (append_bytes(rec, cur, rest) < 0 ||
                    (line.has_newline && append_bytes(rec, "\n", 1) < 0))
                    return READ_NOMEM;
                if (!read_line(reader, &line)) {
                    line.len = 0;
                    line.has_newline = 0;
                } else if (line.len > 0 || line.has_newline) {
                    last_line_with_text = reader->line_no;
                }
                cur = line.text;
                rest = line.len;
            } else { /* the input ended inside the quotes */
                *error_text = ERR_QUOTE;
                *error_line = last_line_with_text;
                return READ_SYNTAX;
            }
        }
        if (end_field(rec) < 0)
            return READ_NOMEM;
    }
}

/* The line (from 1) of the first NUL byte in text, or 0 when there is none. */
static size_t nul_line(const char *text, size_t len)
{
    const char *nul = len ? memchr(text, '\0', len) : NULL;
    if (!nul)
        return 0;
    size_t line = 1;
    for (const char *p = text; p < nul; p++)
        line += *p == '\n';
    return line;
}

/* As csv.h says. Unlike Go, a NUL byte anywhere is an error: a C string of
 * the field would stop at it ("42\0 42" read as "42"). The whole input is
 * parsed or none of it. */
int csv_parse(const char *text, size_t len, struct csv_table *table, char *cause, size_t cause_cap)
{
    struct line_reader reader = {text, text + len, 0};
    struct record_buf rec = {0};
    struct csv_table parsed = {0};
    size_t rows_cap = 0;
    const char *error_text = NULL;
    size_t error_line = 0;
    enum read_result result;

    table->nrows = 0;
    table->rows = NULL;
    if (len == 0)
        return 0;
    error_line = nul_line(text, len);
    if (error_line != 0) {
        return cause_set(cause, cause_cap, "line %zu: %s", error_line, ERR_NUL);
    }
    while ((result = read_record(&reader, &rec, &error_text, &error_line)) == READ_RECORD) {
        struct csv_row *rows_grown =
            grow(parsed.rows, &rows_cap, parsed.nrows + 1, sizeof(struct csv_row));
        if (!rows_grown) {
            result = READ_NOMEM;
            break;
        }
        parsed.rows = rows_grown;
        if (store_row(&rec, &parsed.rows[parsed.nrows]) < 0) {
            result = READ_NOMEM;
            break;
        }
        parsed.nrows++;
    }
    free(rec.bytes);
    free(rec.starts);
    if (result == READ_EOF) {
        *table = parsed;
        return 0;
    }
    csv_free(&parsed);
    if (result == READ_SYNTAX)
        return cause_set(cause, cause_cap, "line %zu: %s", error_line, error_text);
    return cause_set(cause, cause_cap, "out of memory");
}

/* Frees every row (one block each: pointers, then bytes) and zeroes *table. */
void csv_free(struct csv_table *table)
{
    for (size_t i = 0; i < table->nrows; i++)
        free(table->rows[i].fields);
    free(table->rows);
    table->nrows = 0;
    table->rows = NULL;
}
