#ifndef GPULEDGER_HTTP_CLIENT_H
#define GPULEDGER_HTTP_CLIENT_H
#include <stddef.h>

#include <curl/curl.h>

/* One GET. Every string is borrowed for the call. */
struct http_request {
    const char *url;            /* "http://h:p/path" or "https://…"; over a unix
                                   socket, "http://localhost/path" */
    const char *unix_socket;    /* path of a unix socket to connect to, or NULL */
    const char *const *headers; /* "Name: value" lines, NULL-terminated, or NULL */
    long timeout_ms;            /* whole request, connect included (> 0) */
    size_t max_bytes;           /* a longer body is an error, never truncated */
    /* TLS, all optional; with none set the system roots are used */
    const char *ca_file;         /* PEM bundle */
    const char *ca_path;         /* directory: every *.pem and *.crt in it is trusted */
    const char *client_cert;     /* PEM certificate, goes with client_key */
    const char *client_key;      /* PEM key, goes with client_cert */
    const char *tls_server_name; /* name to send (SNI) and verify instead of the URL's host */
    /* basic authentication, optional: sent as Authorization: Basic */
    const char *username, *password;
    /* a value never to be shown (the token a header carries), or NULL: a
       server that echoes it gets every occurrence in the body and the
       Content-Type replaced with "<redacted>", as in an error message */
    const char *secret;
};

struct http_response {
    long status; /* HTTP status */
    char *body;  /* NUL-terminated, owned: free with http_response_free */
    size_t body_len;
    char *content_type; /* owned, or NULL */
};

/* Performs the GET. Returns 0 with *response filled when an HTTP answer came
 * (whatever its status). Returns -1 with a one-line cause in cause and
 * nothing to free when none did: the cause carries libcurl's wording and the
 * detail it gives ("Couldn't connect to server: Connection refused",
 * "Timeout was reached: Operation timed out after 5001 milliseconds…",
 * "SSL peer certificate or SSH remote key was not OK: …certificate…",
 * "answer exceeds 8 MiB"), or names the TLS option that is wrong
 * ("--nomad-client-cert and --nomad-client-key go together" is the caller's
 * check; here: "ca_path /x: no .pem or .crt file", "ca_path /x: <strerror>").
 * The caller prefixes the source and address. Header values (tokens) never
 * appear in cause, nor request->secret in the answer. */
int http_get(const struct http_request *request, struct http_response *response, char *cause,
             size_t cause_cap);

/* Frees what http_get filled in; safe on a zeroed response. */
void http_response_free(struct http_response *response);

/* One GET set up on a curl easy handle, for callers that run it themselves
 * (http_multi.c runs many at once). */
struct http_transfer;

/* Builds an easy handle configured as http_get would (request is borrowed
 * until the transfer is freed). Returns the transfer, or NULL with the cause
 * of a configuration mistake in cause (nothing to free). */
struct http_transfer *http_transfer_new(const struct http_request *request, char *cause,
                                        size_t cause_cap);

/* The transfer's easy handle (owned by the transfer). */
CURL *http_transfer_curl(struct http_transfer *transfer);

/* After the handle ran to its end with result code: 0 with *response filled
 * (the body moves into it), or -1 with a cause in cause as http_get gives it. */
int http_transfer_finish(struct http_transfer *transfer, CURLcode code,
                         struct http_response *response, char *cause, size_t cause_cap);

/* Frees the transfer and its handle; safe on NULL. */
void http_transfer_free(struct http_transfer *transfer);

/* Once per process, before any thread starts (curl_global_init). */
void http_client_init(void);

#endif
