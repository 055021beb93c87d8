#ifndef GPULEDGER_HTTP_SERVER_H
#define GPULEDGER_HTTP_SERVER_H
#include <stddef.h>

#include "basic_auth.h"

/* serve's HTTP side (docs/architecture.md): libmicrohttpd on its own threads
 * answers every request from a set of responses rendered in advance; the
 * main thread swaps in a new set after each refresh. No request ever runs
 * Lua or waits on a refresh, and none sees half of one. */

/* ---- response sets ------------------------------------------------------ */

/* The complete responses of one refresh, by exact path. Reference-counted:
 * the server holds one reference, each request in flight another. */
struct http_set;

/* A new empty set with one reference, or NULL when out of memory. */
struct http_set *http_set_new(void);

/* Adds the response for `path` ("/metrics"): status, Content-Type and body
 * (copied), with the security headers of docs/contract.md#http. A later add of the same
 * path replaces it. Returns 0, or -1 when out of memory. */
int http_set_add(struct http_set *set, const char *path, unsigned status, const char *content_type,
                 const char *body, size_t body_len);

/* Makes the response already added for `path` give way to another (status,
 * Content-Type, body, with the same headers) from at_ms on, an instant on
 * monotonic_ms()'s clock: /healthz turns stale by the age of its set even
 * while no new set comes (a refresh still running). Returns 0, or -1 when
 * out of memory or `path` has no response. */
int http_set_add_stale(struct http_set *set, const char *path, long long at_ms, unsigned status,
                       const char *content_type, const char *body, size_t body_len);

/* Makes every path without a response of its own answer with this one
 * instead of 404 (serve's "no data yet" before its first refresh). Returns
 * 0, or -1 when out of memory. */
int http_set_add_fallback(struct http_set *set, unsigned status, const char *content_type,
                          const char *body, size_t body_len);

/* Drops one reference; the last one frees the set. NULL is ignored. */
void http_set_release(struct http_set *set);

/* ---- the listening socket ----------------------------------------------- */

/* Opens a TCP socket listening on `listen`: ":PORT" (every address, IPv6
 * dual-stack, IPv4 only where the host has no IPv6), "HOST:PORT" or
 * "[IPV6]:PORT"; PORT 0 picks a free port. Returns the socket and stores
 * the port it got in *port, or returns -1 with a message such as
 * "listen tcp 127.0.0.1:80: bind: Permission denied" in cause. */
int http_listen(const char *listen, int *port, char *cause, size_t cause_cap);

/* The room http_listen gives the host (its NUL included) and the port
 * (digits and NUL): a longer one is refused. */
enum { HTTP_LISTEN_HOST_CAP = 256, HTTP_LISTEN_PORT_CAP = 8 };

/* Splits "HOST:PORT", "[V6]:PORT" or ":PORT" into host (possibly "") and
 * port, PORT decimal digits of at most 65535. Returns 0, or -1 when the
 * text has another shape or does not fit host_cap or port_cap. --listen is
 * checked by the same rule at parse time (options.lua's check_listen); the
 * cases of testdata/listen.txt hold both to it. */
int http_split_listen(const char *listen, char *host, size_t host_cap, char *port, size_t port_cap);

/* ---- the server --------------------------------------------------------- */

/* Who may ask, and over what: TLS with this certificate chain and key
 * (PEM texts; NULL: plain HTTP), and basic authentication against these
 * users (none: anyone). Copied by http_server_start. */
struct http_access {
    const char *cert_pem, *key_pem;
    const struct basic_auth_user *users;
    size_t user_count;
};

/* 1 when this build's libmicrohttpd can speak TLS (GnuTLS), else 0. */
int http_server_tls_supported(void);

struct http_server;

/* Starts serving `set` on listen_fd (from http_listen) with a small thread
 * pool, a connection limit, a per-IP limit and an idle timeout, under
 * access (NULL: plain HTTP, no authentication): a request without the
 * right user and password gets 401 with WWW-Authenticate. Takes
 * ownership of both, also on failure. Returns the server, or NULL with why
 * in cause. */
struct http_server *http_server_start(int listen_fd, struct http_set *set,
                                      const struct http_access *access, char *cause,
                                      size_t cause_cap);

/* Makes `set` the one new requests are answered from (taking its
 * reference); requests already in flight finish with the old one. */
void http_server_swap(struct http_server *server, struct http_set *set);

/* Stops accepting, closes every connection, joins the threads, closes the
 * socket and drops the current set. */
void http_server_stop(struct http_server *server);

#endif
