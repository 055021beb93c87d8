#ifndef GPULEDGER_CSV_H
#define GPULEDGER_CSV_H
#include <stddef.h>

struct csv_row {
    size_t nfields;
    char **fields; /* NUL-terminated strings */
};

struct csv_table {
    size_t nrows;
    struct csv_row *rows;
};

/* Parses nvidia-smi's CSV the way Go's encoding/csv reads it with
 * TrimLeadingSpace and a variable field count: records end at \n (a \r before
 * it is dropped), blank lines are skipped, leading blanks of a field are
 * dropped, "quoted" fields may hold commas, newlines and "" for a quote.
 * Returns 0 with *table filled (free with csv_free), or -1 with a message in
 * cause naming the line ("line 3: bare \" in non-quoted field", "line 1:
 * extraneous or missing \" in quoted field", "line 2: NUL byte in a field":
 * never a field cut short at a NUL) and nothing to free. */
int csv_parse(const char *text, size_t len, struct csv_table *table, char *cause, size_t cause_cap);

/* Frees a table filled by csv_parse; safe on a zeroed table. */
void csv_free(struct csv_table *table);

#endif
