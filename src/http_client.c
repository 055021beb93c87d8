/* One HTTP GET with libcurl's easy interface: TCP, unix socket or HTTPS,
 * bounded in time and in size, errors as one line that carries libcurl's
 * wording. See http_client.h for the contract. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* strcasestr, memmem */
#endif
#include "http_client.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "byte_buffer.h"
#include "cause.h"
#include "redact.h"
#include "tls_files.h"
#include "units.h"
#include "version.h"

/* True for the characters a host name or IPv4 address may hold. */
static int is_host_name(const char *name)
{
    if (!*name || strlen(name) > 253)
        return 0;
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '.' || c == '_'))
            return 0;
    }
    return 1;
}

/* For tls_server_name on an https URL: *new_url becomes the URL with its host
 * replaced by the name, and *connect_to "name:port:host:port" so curl still
 * connects to the URL's real host and port (both owned by the caller, free
 * with curl_free / free). Returns 0, or -1 with a cause in cause. */
static int server_name_route(const char *url, const char *server_name, char **new_url,
                             char **connect_to, char *cause, size_t cause_cap)
{
    *new_url = NULL;
    *connect_to = NULL;
    if (!is_host_name(server_name))
        return cause_set(cause, cause_cap, "tls_server_name %s: not a host name", server_name);

    CURLU *parsed = curl_url();
    if (!parsed)
        return cause_set(cause, cause_cap, "out of memory");
    char *host = NULL, *port = NULL;
    int rc = 0;
    CURLUcode uc = curl_url_set(parsed, CURLUPART_URL, url, 0);
    if (uc == CURLUE_OK)
        uc = curl_url_get(parsed, CURLUPART_HOST, &host, 0);
    if (uc == CURLUE_OK)
        uc = curl_url_get(parsed, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT);
    if (uc != CURLUE_OK) {
        rc = cause_set(cause, cause_cap, "URL rejected: %s", curl_url_strerror(uc));
        goto out;
    }
    /* an IPv6 literal comes back in brackets; make sure it has them */
    int needs_brackets = host[0] != '[' && strchr(host, ':') != NULL;
    size_t len = strlen(server_name) + strlen(port) + strlen(host) + strlen(port) + 8;
    *connect_to = malloc(len);
    if (!*connect_to) {
        rc = cause_set(cause, cause_cap, "out of memory");
        goto out;
    }
    snprintf(*connect_to, len, "%s:%s:%s%s%s:%s", server_name, port, needs_brackets ? "[" : "",
             host, needs_brackets ? "]" : "", port);
    uc = curl_url_set(parsed, CURLUPART_HOST, server_name, 0);
    if (uc == CURLUE_OK)
        uc = curl_url_get(parsed, CURLUPART_URL, new_url, 0);
    if (uc != CURLUE_OK) {
        rc = cause_set(cause, cause_cap, "tls_server_name %s: %s", server_name,
                       curl_url_strerror(uc));
        free(*connect_to);
        *connect_to = NULL;
    }
out:
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(parsed);
    return rc;
}

/* What the body and header callbacks gather. */
struct transfer {
    struct byte_buffer body; /* its limit: the request's max_bytes */
    int too_big;             /* the answer is (or announced itself) over max_bytes */
    int out_of_mem;
};

/* Body callback: appends, or aborts the transfer (returns 0 → CURLE_WRITE_ERROR)
 * once the body would exceed max_bytes or memory runs out. */
static size_t on_body(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct transfer *t = userdata;
    size_t n = size * nmemb;
    int added = byte_buffer_add(&t->body, data, n);
    if (added == BYTE_BUFFER_FULL)
        t->too_big = 1;
    else if (added != 0)
        t->out_of_mem = 1;
    return added == 0 ? n : 0;
}

/* Header callback: a Content-Length over max_bytes aborts before any body is
 * read. Header values are never copied anywhere. */
static size_t on_header(char *data, size_t size, size_t nmemb, void *userdata)
{
    struct transfer *t = userdata;
    size_t n = size * nmemb;
    static const char name[] = "content-length:";
    if (n > sizeof name - 1 && strncasecmp(data, name, sizeof name - 1) == 0) {
        char digits[32];
        size_t i = sizeof name - 1, k = 0;
        while (i < n && (data[i] == ' ' || data[i] == '\t'))
            i++;
        while (i < n && k + 1 < sizeof digits && data[i] >= '0' && data[i] <= '9')
            digits[k++] = data[i++];
        digits[k] = '\0';
        if (k > 0) {
            errno = 0;
            unsigned long long announced = strtoull(digits, NULL, 10);
            if (errno == ERANGE || k + 1 == sizeof digits || announced > t->body.max_bytes) {
                t->too_big = 1;
                return 0;
            }
        }
    }
    return n;
}

/* True when the curl result is about TLS (handshake, verification, local
 * certificate or key). */
static int is_tls_error(CURLcode code, const char *detail)
{
    switch (code) {
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
        return 1;
    default:
        return strstr(detail, "SSL") != NULL || strstr(detail, "TLS") != NULL;
    }
}

/* Turns CR, LF and tabs into spaces and trims trailing spaces, in place. */
static void one_line(char *text)
{
    for (char *p = text; *p; p++)
        if (*p == '\n' || *p == '\r' || *p == '\t')
            *p = ' ';
    size_t len = strlen(text);
    while (len && text[len - 1] == ' ')
        text[--len] = '\0';
}

/* Replaces every occurrence of secret in text (of capacity cap) with
 * "<redacted>". Defensive: curl does not echo header values in its messages,
 * and this makes sure a token never reaches an error message. */
static void redact(char *text, size_t cap, const char *secret)
{
    static const char mask[] = REDACT_MASK;
    size_t secret_len = strlen(secret);
    if (secret_len < 4)
        return; /* too short to be a secret; masking it would mangle words */
    char *hit;
    char *from = text;
    while ((hit = strstr(from, secret)) != NULL) {
        size_t tail = strlen(hit + secret_len);
        size_t mask_len = sizeof mask - 1;
        size_t head = (size_t)(hit - text);
        if (head + mask_len + tail + 1 > cap)
            tail = cap > head + mask_len + 1 ? cap - head - mask_len - 1 : 0;
        if (head + mask_len + 1 > cap) {
            *hit = '\0';
            return;
        }
        memmove(hit + mask_len, hit + secret_len, tail);
        hit[mask_len + tail] = '\0';
        memcpy(hit, mask, mask_len);
        from = hit + mask_len;
    }
}

/* Replaces every form of secret in the response's body with "<redacted>"
 * (redact.h: as sent, in any case, URL-encoded, JSON-escaped, base64, each
 * half; the body may grow or shrink). Returns 0, or -1 when memory ran out
 * (the body is then untouched). */
static int redact_body(struct http_response *response, const char *secret)
{
    char *redacted;
    size_t redacted_len;
    if (redact_text(response->body, response->body_len, secret, &redacted, &redacted_len) != 0)
        return -1;
    if (redacted) {
        free(response->body);
        response->body = redacted;
        response->body_len = redacted_len;
    }
    return 0;
}

/* Masks every header value of the request in cause. */
static void redact_header_values(const struct http_request *request, char *cause, size_t cause_cap)
{
    if (!request->headers || !cause || !cause_cap)
        return;
    for (const char *const *line = request->headers; *line; line++) {
        const char *colon = strchr(*line, ':');
        if (!colon)
            continue;
        const char *value = colon + 1;
        while (*value == ' ' || *value == '\t')
            value++;
        redact(cause, cause_cap, value);
    }
}

/* Masks in cause every header value of the request and its secret. */
static void redact_cause(const struct http_request *request, char *cause, size_t cause_cap)
{
    redact_header_values(request, cause, cause_cap);
    if (request->secret && cause && cause_cap)
        redact(cause, cause_cap, request->secret);
}

/* Writes the cause of a failed transfer: "answer exceeds 8 MiB", or
 * "<curl_easy_strerror>: <error buffer>" (the buffer part only when it adds
 * something), with "TLS: " in front of a TLS failure whose wording names
 * neither TLS nor a certificate. For a unix socket that could not be reached
 * the socket path and errno are given, since curl's text names a TCP port. */
static void describe_failure(const struct http_request *request, CURL *curl, CURLcode code,
                             const struct transfer *t, const char *curl_detail, char *cause,
                             size_t cause_cap)
{
    if (t->too_big) {
        char size[32];
        format_size(size, sizeof size, t->body.max_bytes);
        cause_set(cause, cause_cap, "answer exceeds %s", size);
        return;
    }
    if (t->out_of_mem) {
        cause_set(cause, cause_cap, "out of memory reading the answer");
        return;
    }
    const char *summary = curl_easy_strerror(code);
    char detail[CURL_ERROR_SIZE + 128];
    snprintf(detail, sizeof detail, "%s", curl_detail);
    one_line(detail);
    long os_errno = 0;
    if (code == CURLE_COULDNT_CONNECT)
        curl_easy_getinfo(curl, CURLINFO_OS_ERRNO, &os_errno);
    if (code == CURLE_COULDNT_CONNECT && request->unix_socket) {
        /* curl's text would name "localhost port 80" */
        snprintf(detail, sizeof detail, "%s: %s", request->unix_socket,
                 os_errno ? strerror((int)os_errno) : "the socket did not accept the connection");
    } else if (os_errno) {
        /* curl 7.88 ends with "Couldn't connect to server" where the system's
         * reason ("Connection refused") belongs */
        const char *reason = strerror((int)os_errno);
        if (!strstr(detail, reason)) {
            size_t len = strlen(detail), summary_len = strlen(summary);
            if (len > summary_len + 2 && strcmp(detail + len - summary_len, summary) == 0 &&
                strncmp(detail + len - summary_len - 2, ": ", 2) == 0)
                detail[len - summary_len - 2] = '\0';
            len = strlen(detail);
            snprintf(detail + len, sizeof detail - len, "%s%s", len ? ": " : "", reason);
        }
    }
    const char *prefix = "";
    int names_tls = strcasestr(summary, "tls") || strcasestr(summary, "certificate") ||
                    strcasestr(detail, "tls") || strcasestr(detail, "certificate");
    if (is_tls_error(code, detail) && !names_tls)
        prefix = "TLS: ";
    long header_bytes = 0;
    curl_easy_getinfo(curl, CURLINFO_HEADER_SIZE, &header_bytes);
    if (!names_tls && header_bytes == 0 && strncasecmp(request->url, "https://", 8) == 0 &&
        (code == CURLE_SEND_ERROR || code == CURLE_RECV_ERROR || code == CURLE_GOT_NOTHING)) {
        /* In TLS 1.3 a server checks the client certificate after the
         * client considers the handshake done: a refusal then shows up as a
         * broken connection on the first write or read, often before its
         * alert could be read. */
        prefix = request->client_cert && *request->client_cert
                     ? "TLS: the server closed the connection after the handshake "
                       "(was the client certificate refused?): "
                     : "TLS: the server closed the connection after the handshake "
                       "(does it require a client certificate?): ";
    }
    if (detail[0] && strcmp(detail, summary) != 0)
        cause_set(cause, cause_cap, "%s%s: %s", prefix, summary, detail);
    else
        cause_set(cause, cause_cap, "%s%s", prefix, summary);
}

/* Sets up TLS options on curl from the request: the CA pool (a file, or a
 * file and a directory read into one bundle, *ca_bundle, which must outlive
 * the transfer), the client pair. Returns 0, or -1 with the option that is
 * wrong in cause. */
static int setup_tls(CURL *curl, const struct http_request *request, char **ca_bundle, char *cause,
                     size_t cause_cap)
{
    const char *ca_file = request->ca_file && *request->ca_file ? request->ca_file : NULL;
    const char *ca_path = request->ca_path && *request->ca_path ? request->ca_path : NULL;
    const char *cert = request->client_cert && *request->client_cert ? request->client_cert : NULL;
    const char *key = request->client_key && *request->client_key ? request->client_key : NULL;

    if (!cert != !key)
        return cause_set(cause, cause_cap, "client_cert and client_key go together");
    if (ca_path) {
        size_t len;
        if (tls_ca_bundle_read(ca_file, ca_path, ca_bundle, &len, cause, cause_cap) != 0)
            return -1;
        struct curl_blob blob = {.data = *ca_bundle, .len = len, .flags = CURL_BLOB_NOCOPY};
        curl_easy_setopt(curl, CURLOPT_CAINFO_BLOB, &blob);
    } else if (ca_file) {
        if (tls_ca_file_check(ca_file, cause, cause_cap) != 0)
            return -1;
        curl_easy_setopt(curl, CURLOPT_CAINFO, ca_file);
    }
    if (ca_file || ca_path)
        curl_easy_setopt(curl, CURLOPT_CAPATH, NULL); /* only the given CAs */
    if (cert) {
        if (tls_file_check_readable("client_cert", cert, cause, cause_cap) != 0 ||
            tls_file_check_readable("client_key", key, cause, cause_cap) != 0)
            return -1;
        curl_easy_setopt(curl, CURLOPT_SSLCERT, cert);
        curl_easy_setopt(curl, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(curl, CURLOPT_SSLKEY, key);
        curl_easy_setopt(curl, CURLOPT_SSLKEYTYPE, "PEM");
    }
    return 0;
}

/* Frees what http_get filled in; safe on a zeroed response. */
void http_response_free(struct http_response *response)
{
    if (!response)
        return;
    free(response->body);
    free(response->content_type);
    response->body = NULL;
    response->content_type = NULL;
    response->body_len = 0;
}

/* Once per process, before any thread starts. */
void http_client_init(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
}

/* What one GET holds while it is set up and runs: the easy handle, the
 * lists and strings its options point to, and what the callbacks gather. */
struct http_transfer {
    CURL *curl;
    const struct http_request *request;
    struct transfer gathered;
    char *ca_bundle; /* the CAs of ca_file and ca_path, when ca_path is given */
    struct curl_slist *headers;
    struct curl_slist *connect_list;
    char *routed_url;
    char *connect_to;
    char curl_detail[CURL_ERROR_SIZE];
};

/* Frees the transfer and everything it holds; safe on NULL. */
void http_transfer_free(struct http_transfer *transfer)
{
    if (!transfer)
        return;
    curl_easy_cleanup(transfer->curl);
    curl_slist_free_all(transfer->headers);
    curl_slist_free_all(transfer->connect_list);
    curl_free(transfer->routed_url);
    free(transfer->connect_to);
    free(transfer->ca_bundle);
    byte_buffer_free(&transfer->gathered.body);
    free(transfer);
}

/* The easy handle of the transfer, for curl_easy_perform or a multi handle. */
CURL *http_transfer_curl(struct http_transfer *transfer)
{
    return transfer->curl;
}

/* Builds an easy handle configured for request (borrowed until the transfer
 * is freed). Returns the transfer, or NULL with one line in cause:
 * configuration mistakes (a half client pair, a CA option that cannot be
 * used, a header with a line break, a bad tls_server_name) are reported
 * here, before any connection is made. */
struct http_transfer *http_transfer_new(const struct http_request *request, char *cause,
                                        size_t cause_cap)
{
    if (cause && cause_cap)
        cause[0] = '\0';
    if (!request->url || !*request->url) {
        cause_set(cause, cause_cap, "no URL");
        return NULL;
    }
    if (request->timeout_ms <= 0) {
        cause_set(cause, cause_cap, "timeout must be > 0");
        return NULL;
    }
    struct http_transfer *t = calloc(1, sizeof *t);
    if (!t) {
        cause_set(cause, cause_cap, "out of memory");
        return NULL;
    }
    t->request = request;
    byte_buffer_init(&t->gathered.body, request->max_bytes);
    t->curl = curl_easy_init();
    if (!t->curl) {
        cause_set(cause, cause_cap, "curl_easy_init failed");
        goto failed;
    }
    CURL *curl = t->curl;

    for (const char *const *line = request->headers; line && *line; line++) {
        const char *line_break = strpbrk(*line, "\r\n");
        if (line_break) {
            /* name the header (never its value) */
            const char *colon = strchr(*line, ':');
            int name_len =
                colon && colon < line_break && colon - *line <= 64 ? (int)(colon - *line) : 0;
            cause_set(cause, cause_cap, "header %.*s: the value holds a line break", name_len,
                      *line);
            goto failed;
        }
        struct curl_slist *grown = curl_slist_append(t->headers, *line);
        if (!grown) {
            cause_set(cause, cause_cap, "out of memory");
            goto failed;
        }
        t->headers = grown;
    }

    const char *url = request->url;
    int any_tls = (request->ca_file && *request->ca_file) ||
                  (request->ca_path && *request->ca_path) ||
                  (request->client_cert && *request->client_cert) ||
                  (request->client_key && *request->client_key) ||
                  (request->tls_server_name && *request->tls_server_name);
    if (any_tls && setup_tls(curl, request, &t->ca_bundle, cause, cause_cap) != 0)
        goto failed;
    if (request->tls_server_name && *request->tls_server_name && !request->unix_socket &&
        strncasecmp(url, "https://", 8) == 0) {
        if (server_name_route(url, request->tls_server_name, &t->routed_url, &t->connect_to, cause,
                              cause_cap) != 0)
            goto failed;
        t->connect_list = curl_slist_append(NULL, t->connect_to);
        if (!t->connect_list) {
            cause_set(cause, cause_cap, "out of memory");
            goto failed;
        }
        url = t->routed_url;
        curl_easy_setopt(curl, CURLOPT_CONNECT_TO, t->connect_list);
    }

    curl_easy_setopt(curl, CURLOPT_URL, url);
    if (request->unix_socket)
        curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, request->unix_socket);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, request->timeout_ms);
    curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, t->curl_detail);
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "gpuledger/" GPULEDGER_VERSION);
    curl_easy_setopt(curl, CURLOPT_SSLVERSION, (long)CURL_SSLVERSION_TLSv1_2);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYPEER, 1L);
    curl_easy_setopt(curl, CURLOPT_SSL_VERIFYHOST, 2L);
    curl_easy_setopt(curl, CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
    if (t->headers)
        curl_easy_setopt(curl, CURLOPT_HTTPHEADER, t->headers);
    if (request->username && request->password) {
        curl_easy_setopt(curl, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC);
        curl_easy_setopt(curl, CURLOPT_USERNAME, request->username);
        curl_easy_setopt(curl, CURLOPT_PASSWORD, request->password);
    }
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &t->gathered);
    curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(curl, CURLOPT_HEADERDATA, &t->gathered);
    return t;

failed:
    redact_cause(request, cause, cause_cap);
    http_transfer_free(t);
    return NULL;
}

/* Turns the outcome of a finished transfer (code: what curl_easy_perform
 * returned, or the multi handle's result) into *response (0) or a one-line
 * cause in cause (-1, *response zeroed). The body moves into *response. */
int http_transfer_finish(struct http_transfer *t, CURLcode code, struct http_response *response,
                         char *cause, size_t cause_cap)
{
    memset(response, 0, sizeof *response);
    if (code != CURLE_OK) {
        describe_failure(t->request, t->curl, code, &t->gathered, t->curl_detail, cause, cause_cap);
        goto failed;
    }
    response->body = byte_buffer_take(&t->gathered.body, &response->body_len); /* "" when empty */
    if (!response->body || (t->request->secret && redact_body(response, t->request->secret) != 0)) {
        cause_set(cause, cause_cap, "out of memory reading the answer");
        goto failed;
    }
    const char *content_type = NULL;
    curl_easy_getinfo(t->curl, CURLINFO_RESPONSE_CODE, &response->status);
    curl_easy_getinfo(t->curl, CURLINFO_CONTENT_TYPE, &content_type);
    if (content_type) {
        response->content_type = strdup(content_type);
        if (!response->content_type) {
            cause_set(cause, cause_cap, "out of memory reading the answer");
            goto failed;
        }
        if (t->request->secret)
            redact(response->content_type, strlen(response->content_type) + 1, t->request->secret);
    }
    return 0;

failed:
    http_response_free(response);
    response->status = 0;
    redact_cause(t->request, cause, cause_cap);
    return -1;
}

/* Performs one GET (contract in http_client.h). Owns nothing after it
 * returns except what it put in *response on success; on -1 *response is
 * zeroed and cause holds one line. */
int http_get(const struct http_request *request, struct http_response *response, char *cause,
             size_t cause_cap)
{
    memset(response, 0, sizeof *response);
    struct http_transfer *t = http_transfer_new(request, cause, cause_cap);
    if (!t)
        return -1;
    int rc = http_transfer_finish(t, curl_easy_perform(t->curl), response, cause, cause_cap);
    http_transfer_free(t);
    return rc;
}
