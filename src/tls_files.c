/* The files of a TLS configuration, checked and read (tls_files.h). */
#include "tls_files.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cause.h"
#include "files.h"

/* A CA file or directory bigger than this is refused rather than read. */
#define CA_BYTES_MAX  ((size_t)16 * 1024 * 1024)
#define PEM_CERT_MARK "-----BEGIN CERTIFICATE-----"

/* The CA bundle being read: NUL-terminated once anything is in it. */
struct bundle {
    char *data;
    size_t len;
};

/* Appends the whole file at path and a newline to the bundle (so a file
 * without a final newline cannot glue its END line to the next file's
 * BEGIN line), the bundle staying within CA_BYTES_MAX. Returns 0, or -1 with
 * errno set (EFBIG when too large, ENOMEM). */
static int bundle_add_file(struct bundle *bundle, const char *path)
{
    char *text;
    size_t len;
    size_t room = bundle->len < CA_BYTES_MAX ? CA_BYTES_MAX - bundle->len : 0;
    if (file_read_whole(path, room, &text, &len) != 0)
        return -1;
    char *grown = realloc(bundle->data, bundle->len + len + 2);
    if (!grown) {
        free(text);
        errno = ENOMEM;
        return -1;
    }
    memcpy(grown + bundle->len, text, len);
    free(text);
    bundle->len += len;
    grown[bundle->len++] = '\n';
    grown[bundle->len] = '\0';
    bundle->data = grown;
    return 0;
}

/* Appends ca_file to the bundle and checks the part it added holds a PEM
 * certificate. Returns 0, or -1 with the cause tls_ca_file_check gives. */
static int bundle_add_ca_file(struct bundle *bundle, const char *ca_file, char *cause,
                              size_t cause_cap)
{
    size_t start = bundle->len;
    if (bundle_add_file(bundle, ca_file) != 0)
        return cause_set(cause, cause_cap, "ca_file %s: %s", ca_file, strerror(errno));
    if (!strstr(bundle->data + start, PEM_CERT_MARK))
        return cause_set(cause, cause_cap, "ca_file %s: no PEM certificate in it", ca_file);
    return 0;
}

/* True when name ends in ".pem" or ".crt". */
static int is_ca_name(const char *name)
{
    size_t len = strlen(name);
    return len > 4 && (strcmp(name + len - 4, ".pem") == 0 || strcmp(name + len - 4, ".crt") == 0);
}

/* Appends every non-directory *.pem and *.crt of ca_path, in name order, to
 * the bundle. Returns 0, or -1 with the ca_path cause tls_ca_bundle_read
 * gives. */
static int bundle_add_ca_path(struct bundle *bundle, const char *ca_path, char *cause,
                              size_t cause_cap)
{
    char **names;
    size_t count;
    if (dir_names_sorted(ca_path, &names, &count) != 0)
        return cause_set(cause, cause_cap, "ca_path %s: %s", ca_path, strerror(errno));
    size_t start = bundle->len, files = 0;
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < count; i++) {
        if (!is_ca_name(names[i]))
            continue;
        size_t path_len = strlen(ca_path) + 1 + strlen(names[i]) + 1;
        char *path = malloc(path_len);
        if (!path) {
            rc = cause_set(cause, cause_cap, "ca_path %s: %s", ca_path, strerror(ENOMEM));
            break;
        }
        snprintf(path, path_len, "%s/%s", ca_path, names[i]);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            free(path);
            continue;
        }
        if (bundle_add_file(bundle, path) != 0)
            rc = cause_set(cause, cause_cap, "ca_path %s: %s", path, strerror(errno));
        else
            files++;
        free(path);
    }
    free(names);
    if (rc != 0)
        return rc;
    if (files == 0)
        return cause_set(cause, cause_cap, "ca_path %s: no .pem or .crt file", ca_path);
    if (!strstr(bundle->data + start, PEM_CERT_MARK))
        return cause_set(cause, cause_cap, "ca_path %s: no PEM certificate in it", ca_path);
    return 0;
}

/* As tls_files.h says. */
int tls_ca_file_check(const char *ca_file, char *cause, size_t cause_cap)
{
    struct bundle bundle = {0};
    int rc = bundle_add_ca_file(&bundle, ca_file, cause, cause_cap);
    free(bundle.data);
    return rc;
}

/* As tls_files.h says. */
int tls_ca_bundle_read(const char *ca_file, const char *ca_path, char **bundle, size_t *len,
                       char *cause, size_t cause_cap)
{
    struct bundle read = {0};
    *bundle = NULL;
    *len = 0;
    if ((ca_file && bundle_add_ca_file(&read, ca_file, cause, cause_cap) != 0) ||
        bundle_add_ca_path(&read, ca_path, cause, cause_cap) != 0) {
        free(read.data);
        return -1;
    }
    *bundle = read.data;
    *len = read.len;
    return 0;
}

/* As tls_files.h says. */
int tls_file_check_readable(const char *what, const char *path, char *cause, size_t cause_cap)
{
    FILE *file = fopen(path, "rb");
    if (!file)
        return cause_set(cause, cause_cap, "%s %s: %s", what, path, strerror(errno));
    char byte;
    size_t got = fread(&byte, 1, 1, file);
    int err = ferror(file) ? errno : 0;
    fclose(file);
    if (got == 0 && err)
        return cause_set(cause, cause_cap, "%s %s: %s", what, path, strerror(err));
    return 0;
}
