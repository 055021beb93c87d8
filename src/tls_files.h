#ifndef GPULEDGER_TLS_FILES_H
#define GPULEDGER_TLS_FILES_H
#include <stddef.h>

/* The files a TLS connection is configured with, checked and read before
 * any connection is made, so that a wrong path is reported as the option
 * that names it: CA bundles (a PEM file, a directory of them) and the
 * certificate and key that go together. */

/* Checks that ca_file can be read and holds a PEM certificate. Returns 0,
 * or -1 with "ca_file <f>: <strerror>" or "ca_file <f>: no PEM certificate
 * in it" in cause. */
int tls_ca_file_check(const char *ca_file, char *cause, size_t cause_cap);

/* Reads ca_file (when not NULL) and then every non-directory entry of the
 * directory ca_path named *.pem or *.crt, in name order, into one bundle of
 * at most 16 MiB. Returns 0 with *bundle (owned by the caller: free()) and
 * *len, or -1 with nothing to free and the cause: ca_file's as
 * tls_ca_file_check words it, "ca_path <dir>: <strerror>", "ca_path <dir>:
 * no .pem or .crt file", "ca_path <file>: <strerror>" (a listed file that
 * cannot be read) or "ca_path <dir>: no PEM certificate in it". */
int tls_ca_bundle_read(const char *ca_file, const char *ca_path, char **bundle, size_t *len,
                       char *cause, size_t cause_cap);

/* Checks that the file at path (a certificate or key: `what` names its
 * option, "client_cert") can be opened and read. Returns 0, or -1 with
 * "<what> <path>: <strerror>" in cause. */
int tls_file_check_readable(const char *what, const char *path, char *cause, size_t cause_cap);

#endif
