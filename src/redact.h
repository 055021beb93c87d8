#ifndef GPULEDGER_REDACT_H
#define GPULEDGER_REDACT_H
#include <stddef.h>

/* The text that stands in for a secret. */
#define REDACT_MASK "<redacted>"

/* The shortest half of a secret redacted on its own. */
#define REDACT_HALF_MIN 8

/* A secret's forms a server may echo it in, each redacted where it shows:
 * as sent, in any letter case, URL-encoded (the reserved bytes, or every
 * byte, as %XX), as a JSON string's contents the way the common encoders
 * write one (as PHP does: \/ \" \\ and controls as \u00XX; as Go does:
 * \" \\ \b \f \n \r \t, other controls and & < > U+2028 U+2029 as \uXXXX;
 * as Python does: \" \\ \b \f \n \r \t, other controls and every character
 * past ASCII as \uXXXX; and every character as \uXXXX; a character past
 * U+FFFF as a UTF-16 surrogate pair), in standard and URL-safe base64 at
 * each of the three byte alignments it can sit at inside a longer encoded
 * text (the characters that depend on it alone), and each half of it (split
 * at its middle) when a half has REDACT_HALF_MIN bytes or more. A secret
 * under 4 bytes has no forms (it is too short to tell from a word). Returns
 * the number of distinct forms written to forms[] (each a malloc'ed string,
 * freed with redact_forms_free), or -1 when memory ran out. */
#define REDACT_FORMS_MAX 16
int redact_forms(const char *secret, char *forms[REDACT_FORMS_MAX]);

/* Frees the n forms of redact_forms. */
void redact_forms_free(char *forms[REDACT_FORMS_MAX], int n);

/* Replaces every run of text (len bytes) that is one of secret's forms
 * (redact_forms), matched without regard to letter case, with REDACT_MASK;
 * overlapping and adjacent runs become one mask. Returns 0 with *out NULL
 * when nothing matched, 0 with *out a malloc'ed copy (NUL-terminated, its
 * length in *out_len) when something did, or -1 when memory ran out. */
int redact_text(const char *text, size_t len, const char *secret, char **out, size_t *out_len);

#endif
