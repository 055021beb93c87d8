/* serve's HTTP server: libmicrohttpd (epoll, a small thread pool) answering
 * GET and HEAD from a reference-counted set of responses rendered by the
 * last refresh, with the security headers of docs/contract.md#http on every response,
 * errors included. A connection that has not sent a complete request (its
 * head, and the body a GET should not have) within HEAD_DEADLINE_MS of
 * opening or of its previous answer is closed, however slowly it drips.
 * Knows nothing of Lua.
 *
 * What libmicrohttpd 0.9.75 answers itself, without the security headers
 * (it builds those responses internally and offers no hook to add any): 400
 * for a request line or header it cannot parse, 505 for an HTTP version
 * other than 1.0 and 1.1, and 414/431 for a request head larger than the
 * connection's memory pool (32 KiB). Their bodies are fixed texts naming
 * the error, and the connection is closed after each. Its "100 Continue"
 * is never sent: a request that says "Expect:" is answered at once. */
#include "http_server.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#include "cause.h"
#include "clock.h"
#include "fd_budget.h"

#define THREADS          2
#define CONNECTION_LIMIT 1024u /* lowered to fit RLIMIT_NOFILE: fd_budget.h */
#define PER_IP_LIMIT     64u   /* one flooding client cannot take every slot */
#define IDLE_TIMEOUT_S   10u   /* a connection silent this long is closed */
/* libmicrohttpd's default pool: a request head larger than this gets its own
 * 414/431 without our headers (a larger pool costs half the throughput, as
 * 0.9.75 zeroes it between requests: bench/README.md) */
#define MEMORY_PER_CONNECTION (32u * 1024u)
#define MAX_URL               8192 /* longer request targets get our 414 */
#define HEAD_DEADLINE_MS      5000 /* for a whole request, however slowly it drips */
#define WATCHDOG_PERIOD_MS    250  /* how often the head deadlines are checked */

/* ---- response sets ------------------------------------------------------ */

struct http_entry {
    char *path;
    unsigned status;
    struct MHD_Response *response;
    /* from stale_at_ms on (monotonic_ms), stale_response answers instead
     * (NULL: never) */
    long long stale_at_ms;
    unsigned stale_status;
    struct MHD_Response *stale_response;
};

struct http_set {
    atomic_int refs;
    size_t count, cap;
    struct http_entry *entries;
    struct http_entry *fallback; /* for every path without an entry (NULL: 404) */
};

/* Adds the headers every response carries (docs/contract.md#http). Returns 0 or -1. */
static int add_common_headers(struct MHD_Response *response)
{
    static const char *const headers[][2] = {
        {"Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; "
                                    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"},
        {"X-Content-Type-Options", "nosniff"},
        {"Referrer-Policy", "no-referrer"},
        {"X-Frame-Options", "DENY"},
        {"Cache-Control", "no-store"},
    };
    for (size_t i = 0; i < sizeof headers / sizeof headers[0]; i++)
        if (MHD_add_response_header(response, headers[i][0], headers[i][1]) != MHD_YES)
            return -1;
    return 0;
}

/* A response holding a copy of body, with the common headers and
 * content_type. Returns it, or NULL when out of memory. */
static struct MHD_Response *make_response(const char *content_type, const char *body, size_t len)
{
    struct MHD_Response *response =
        MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
    if (!response)
        return NULL;
    if (add_common_headers(response) != 0 ||
        MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type) != MHD_YES) {
        MHD_destroy_response(response);
        return NULL;
    }
    return response;
}

/* As http_server.h says. */
struct http_set *http_set_new(void)
{
    struct http_set *set = calloc(1, sizeof *set);
    if (set)
        atomic_init(&set->refs, 1);
    return set;
}

/* Frees what entry holds (not entry itself). */
static void entry_free(struct http_entry *entry)
{
    MHD_destroy_response(entry->response); /* connections still sending keep theirs */
    if (entry->stale_response)
        MHD_destroy_response(entry->stale_response);
    free(entry->path);
}

/* The entry for path in set, or NULL. */
static struct http_entry *set_entry(const struct http_set *set, const char *path)
{
    for (size_t i = 0; i < set->count; i++)
        if (strcmp(set->entries[i].path, path) == 0)
            return &set->entries[i];
    return NULL;
}

/* As http_server.h says. */
int http_set_add(struct http_set *set, const char *path, unsigned status, const char *content_type,
                 const char *body, size_t body_len)
{
    struct MHD_Response *response = make_response(content_type, body, body_len);
    char *path_copy = strdup(path);
    if (!response || !path_copy) {
        if (response)
            MHD_destroy_response(response);
        free(path_copy);
        return -1;
    }
    struct http_entry *existing = set_entry(set, path);
    if (existing) {
        entry_free(existing);
        *existing = (struct http_entry){path_copy, status, response, 0, 0, NULL};
        return 0;
    }
    if (set->count == set->cap) {
        size_t cap = set->cap ? set->cap * 2 : 8;
        struct http_entry *entries = realloc(set->entries, cap * sizeof *entries);
        if (!entries) {
            MHD_destroy_response(response);
            free(path_copy);
            return -1;
        }
        set->entries = entries;
        set->cap = cap;
    }
    set->entries[set->count++] = (struct http_entry){path_copy, status, response, 0, 0, NULL};
    return 0;
}

/* As http_server.h says. */
int http_set_add_stale(struct http_set *set, const char *path, long long at_ms, unsigned status,
                       const char *content_type, const char *body, size_t body_len)
{
    struct http_entry *entry = set_entry(set, path);
    struct MHD_Response *response = entry ? make_response(content_type, body, body_len) : NULL;
    if (!response)
        return -1;
    if (entry->stale_response)
        MHD_destroy_response(entry->stale_response);
    entry->stale_at_ms = at_ms;
    entry->stale_status = status;
    entry->stale_response = response;
    return 0;
}

/* As http_server.h says. */
int http_set_add_fallback(struct http_set *set, unsigned status, const char *content_type,
                          const char *body, size_t body_len)
{
    struct http_entry *fallback = calloc(1, sizeof *fallback);
    char *path = strdup("*");
    struct MHD_Response *response = make_response(content_type, body, body_len);
    if (!fallback || !path || !response) {
        free(fallback);
        free(path);
        if (response)
            MHD_destroy_response(response);
        return -1;
    }
    *fallback = (struct http_entry){path, status, response, 0, 0, NULL};
    if (set->fallback) {
        entry_free(set->fallback);
        free(set->fallback);
    }
    set->fallback = fallback;
    return 0;
}

/* Adds a reference to set. */
static void set_retain(struct http_set *set)
{
    atomic_fetch_add_explicit(&set->refs, 1, memory_order_relaxed);
}

/* As http_server.h says. */
void http_set_release(struct http_set *set)
{
    if (!set || atomic_fetch_sub_explicit(&set->refs, 1, memory_order_acq_rel) != 1)
        return;
    for (size_t i = 0; i < set->count; i++)
        entry_free(&set->entries[i]);
    if (set->fallback) {
        entry_free(set->fallback);
        free(set->fallback);
    }
    free(set->entries);
    free(set);
}

/* ---- the listening socket ----------------------------------------------- */

/* As http_server.h says. */
int http_split_listen(const char *listen, char *host, size_t host_cap, char *port, size_t port_cap)
{
    const char *colon;
    size_t host_len;
    const char *host_start = listen;
    if (listen[0] == '[') {
        const char *close = strchr(listen, ']');
        if (!close || close[1] != ':')
            return -1;
        host_start = listen + 1;
        host_len = (size_t)(close - host_start);
        colon = close + 1;
    } else {
        colon = strrchr(listen, ':');
        if (!colon)
            return -1;
        host_len = (size_t)(colon - listen);
        if (memchr(listen, ':', host_len)) /* an IPv6 address needs brackets */
            return -1;
    }
    const char *port_text = colon + 1;
    size_t port_len = strlen(port_text);
    if (host_len >= host_cap || port_len == 0 || port_len >= port_cap ||
        strspn(port_text, "0123456789") != port_len || atol(port_text) > 65535)
        return -1;
    memcpy(host, host_start, host_len);
    host[host_len] = '\0';
    memcpy(port, port_text, port_len + 1);
    return 0;
}

/* Binds and listens a socket for one resolved address. Returns the socket,
 * or -1 with *step naming what failed and errno set. */
static int listen_on(const struct addrinfo *ai, int dual_stack, const char **step)
{
    *step = "socket";
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0)
        return -1;
    int on = 1, off = 0;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on);
    if (ai->ai_family == AF_INET6)
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, dual_stack ? &off : &on, sizeof on);
    *step = "bind";
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        *step = "listen";
        if (listen(fd, 1024) == 0)
            return fd;
    }
    int err = errno;
    close(fd);
    errno = err;
    return -1;
}

/* The port a listening socket got. */
static int bound_port(int fd)
{
    struct sockaddr_storage address;
    socklen_t len = sizeof address;
    if (getsockname(fd, (struct sockaddr *)&address, &len) != 0)
        return -1;
    if (address.ss_family == AF_INET6)
        return ntohs(((struct sockaddr_in6 *)&address)->sin6_port);
    return ntohs(((struct sockaddr_in *)&address)->sin_port);
}

/* As http_server.h says. */
int http_listen(const char *listen, int *port, char *cause, size_t cause_cap)
{
    char host[HTTP_LISTEN_HOST_CAP], port_text[HTTP_LISTEN_PORT_CAP];
    if (http_split_listen(listen, host, sizeof host, port_text, sizeof port_text) != 0) {
        return cause_set(cause, cause_cap, "listen %s: want :PORT, HOST:PORT or [IPV6]:PORT",
                         listen);
    }
    struct addrinfo hints = {0}, *found = NULL;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    hints.ai_family = host[0] ? AF_UNSPEC : AF_INET6;
    int rc = getaddrinfo(host[0] ? host : NULL, port_text, &hints, &found);
    if (rc != 0 && !host[0]) { /* no IPv6 on this host: every IPv4 address */
        hints.ai_family = AF_INET;
        rc = getaddrinfo(NULL, port_text, &hints, &found);
    }
    if (rc != 0) {
        return cause_set(cause, cause_cap, "listen tcp %s: %s", listen, gai_strerror(rc));
    }
    int fd = -1, saved_errno = 0;
    const char *step = "socket";
    for (const struct addrinfo *ai = found; ai && fd < 0; ai = ai->ai_next) {
        fd = listen_on(ai, host[0] == '\0', &step);
        saved_errno = errno;
        if (fd < 0 && !host[0] && ai->ai_family == AF_INET6 && step[0] == 's') {
            /* IPv6 sockets unsupported: fall back to IPv4 for ":PORT" */
            struct addrinfo v4hints = hints, *v4 = NULL;
            v4hints.ai_family = AF_INET;
            if (getaddrinfo(NULL, port_text, &v4hints, &v4) == 0) {
                fd = listen_on(v4, 0, &step);
                saved_errno = errno;
                freeaddrinfo(v4);
            }
        }
    }
    freeaddrinfo(found);
    if (fd < 0) {
        return cause_set(cause, cause_cap, "listen tcp %s: %s: %s", listen, step,
                         strerror(saved_errno));
    }
    *port = bound_port(fd);
    return fd;
}

/* ---- the server --------------------------------------------------------- */

/* One open connection, watched for its request head's deadline. */
struct head_watch {
    struct head_watch *prev, *next;
    int fd;
    long long deadline_ms; /* monotonic; 0 while a request is being answered */
};

struct http_server {
    struct MHD_Daemon *daemon;
    pthread_mutex_t lock; /* guards current: held only to swap or to take a reference */
    struct http_set *current;
    struct MHD_Response *not_found, *not_allowed, *too_long, *bad_request, *unauthorized;
    /* access, copied: TLS (NULL: none) and the users (none: anyone) */
    char *cert_pem, *key_pem;
    struct basic_auth_user *users;
    size_t user_count;
    /* the head deadlines: every open connection, and the thread closing
     * those past their deadline */
    pthread_mutex_t watch_lock; /* guards watches, each deadline and stopping */
    pthread_cond_t watch_wakeup;
    struct head_watch *watches;
    int stopping;
    pthread_t watchdog;
    unsigned connections; /* the connection limit, reserved (fd_budget.h) */
};

/* The watch of connection (NULL when none could be made). */
static struct head_watch *watch_of(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info =
        MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info ? info->socket_context : NULL;
}

/* Sets the head deadline of connection's watch: deadline_ms, or 0 for none. */
static void set_head_deadline(struct http_server *server, struct MHD_Connection *connection,
                              long long deadline_ms)
{
    struct head_watch *watch = watch_of(connection);
    if (!watch)
        return;
    pthread_mutex_lock(&server->watch_lock);
    watch->deadline_ms = deadline_ms;
    pthread_mutex_unlock(&server->watch_lock);
}

/* libmicrohttpd's connection callback: a new connection gets a watch with
 * its head deadline; a closed one loses it. libmicrohttpd calls it for a
 * closed connection before it closes the socket, so the watchdog never
 * shuts down a descriptor that was reused. A watch that cannot be
 * allocated leaves the connection to the idle timeout. */
static void on_connection(void *cls, struct MHD_Connection *connection, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    struct http_server *server = cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *info =
            MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
        struct head_watch *watch = info ? calloc(1, sizeof *watch) : NULL;
        if (!watch)
            return;
        watch->fd = info->connect_fd;
        watch->deadline_ms = monotonic_ms() + HEAD_DEADLINE_MS;
        pthread_mutex_lock(&server->watch_lock);
        watch->next = server->watches;
        if (watch->next)
            watch->next->prev = watch;
        server->watches = watch;
        pthread_mutex_unlock(&server->watch_lock);
        *socket_context = watch;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED && *socket_context) {
        struct head_watch *watch = *socket_context;
        pthread_mutex_lock(&server->watch_lock);
        if (watch->prev)
            watch->prev->next = watch->next;
        else
            server->watches = watch->next;
        if (watch->next)
            watch->next->prev = watch->prev;
        pthread_mutex_unlock(&server->watch_lock);
        free(watch);
        *socket_context = NULL;
    }
}

/* libmicrohttpd's completion callback: the answer went out (or the request
 * ended otherwise); the next request head has HEAD_DEADLINE_MS. */
static void on_completed(void *cls, struct MHD_Connection *connection, void **request_state,
                         enum MHD_RequestTerminationCode code)
{
    (void)request_state;
    (void)code;
    set_head_deadline(cls, connection, monotonic_ms() + HEAD_DEADLINE_MS);
}

/* The watchdog thread: every WATCHDOG_PERIOD_MS, shuts down the sockets of
 * the connections past their head deadline (libmicrohttpd then sees them
 * end and closes them as usual), until the server stops. */
static void *watchdog_main(void *cls)
{
    struct http_server *server = cls;
    pthread_mutex_lock(&server->watch_lock);
    while (!server->stopping) {
        long long now = monotonic_ms();
        for (struct head_watch *watch = server->watches; watch; watch = watch->next) {
            if (watch->deadline_ms != 0 && now >= watch->deadline_ms) {
                shutdown(watch->fd, SHUT_RDWR);
                watch->deadline_ms = 0;
            }
        }
        int64_t wake_ns = monotonic_ns() + WATCHDOG_PERIOD_MS * 1000000LL;
        struct timespec wake = {wake_ns / 1000000000, wake_ns % 1000000000};
        pthread_cond_timedwait(&server->watch_wakeup, &server->watch_lock, &wake);
    }
    pthread_mutex_unlock(&server->watch_lock);
    return NULL;
}

/* Starts the watchdog thread, its condition on the monotonic clock.
 * Returns 0, or -1 when it could not (nothing is left to undo then). */
static int watchdog_start(struct http_server *server)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return -1;
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&server->watch_wakeup, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0)
        return -1;
    pthread_mutex_init(&server->watch_lock, NULL);
    if (pthread_create(&server->watchdog, NULL, watchdog_main, server) != 0) {
        pthread_mutex_destroy(&server->watch_lock);
        pthread_cond_destroy(&server->watch_wakeup);
        return -1;
    }
    return 0;
}

/* Frees what watchdog_start made, once libmicrohttpd has closed every
 * connection (their callbacks take watch_lock). */
static void watchdog_destroy(struct http_server *server)
{
    pthread_mutex_destroy(&server->watch_lock);
    pthread_cond_destroy(&server->watch_wakeup);
}

/* Stops and joins the watchdog thread. */
static void watchdog_stop(struct http_server *server)
{
    pthread_mutex_lock(&server->watch_lock);
    server->stopping = 1;
    pthread_cond_signal(&server->watch_wakeup);
    pthread_mutex_unlock(&server->watch_lock);
    pthread_join(server->watchdog, NULL);
}

/* The current set, with a reference the caller releases. */
static struct http_set *acquire_current(struct http_server *server)
{
    pthread_mutex_lock(&server->lock);
    struct http_set *set = server->current;
    set_retain(set);
    pthread_mutex_unlock(&server->lock);
    return set;
}

/* What a request's state (libmicrohttpd's con_cls) says, by its address. */
static int request_fresh, request_seen, request_nul_in_path;

/* libmicrohttpd's URI callback, called once the request line has arrived
 * and before libmicrohttpd splits off and decodes the query: its return
 * value becomes the request's state. The query is cut off here, in the
 * request line libmicrohttpd hands over (its own read buffer, writable:
 * libmicrohttpd writes into it next): gpuledger reads no query argument,
 * and 0.9.75 cannot answer a request whose arguments overflow the
 * connection's memory pool (about 300 of them) — it stalls until the idle
 * timeout. A path with an encoded NUL ("/metrics%00.html", which decoding
 * would cut to "/metrics") is marked to be answered 400. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *connection)
{
    (void)cls;
    (void)connection;
    if (!uri)
        return &request_fresh;
    char *query = strchr(uri, '?');
    if (query && query[1] != '\0')
        query[1] = '\0'; /* uri points into libmicrohttpd's writable buffer */
    size_t path_len = query ? (size_t)(query - uri) : strlen(uri);
    for (const char *percent = memchr(uri, '%', path_len); percent;
         percent = memchr(percent + 1, '%', path_len - (size_t)(percent + 1 - uri))) {
        if ((size_t)(percent - uri) + 2 < path_len && percent[1] == '0' && percent[2] == '0')
            return &request_nul_in_path;
    }
    return &request_fresh;
}

/* Queues the current set's answer for url (the path's response, or its
 * stale one once due; the set's fallback, or 404, for a path it lacks). */
static enum MHD_Result answer(struct http_server *server, struct MHD_Connection *connection,
                              const char *url)
{
    struct http_set *set = acquire_current(server);
    const struct http_entry *entry = set_entry(set, url);
    if (!entry)
        entry = set->fallback;
    enum MHD_Result result;
    if (!entry)
        result = MHD_queue_response(connection, MHD_HTTP_NOT_FOUND, server->not_found);
    else if (entry->stale_response && monotonic_ms() >= entry->stale_at_ms)
        result = MHD_queue_response(connection, entry->stale_status, entry->stale_response);
    else
        result = MHD_queue_response(connection, entry->status, entry->response);
    http_set_release(set);
    return result;
}

/* 1 when the request carries the user and password of one of the server's
 * users (basic_auth.c), else 0. */
static int authorized(const struct http_server *server, struct MHD_Connection *connection)
{
    char *password = NULL;
    char *user = MHD_basic_auth_get_username_password(connection, &password);
    int ok = basic_auth_check(server->users, server->user_count, user, password);
    if (password) {
        memset(password, 0, strlen(password));
        MHD_free(password);
    }
    if (user)
        MHD_free(user);
    return ok;
}

/* libmicrohttpd's access handler: called on a server thread for each
 * request once its head is complete; answers from memory and never blocks
 * on the main thread. Errors are answered at once, which makes
 * libmicrohttpd close the connection without reading a body; a good
 * request is answered on the next call (its first call only marks it),
 * which keeps the connection alive, once any body it has came in (and
 * ignored): the head deadline covers that body too, so a GET dripping a
 * long body is closed like a dripping head. A request that says "Expect:"
 * is answered on its first call: libmicrohttpd would otherwise send its
 * own "100 Continue" first, without the security headers, to let a body
 * come that gpuledger ignores. With users, a request without one's name
 * and password is answered 401 on its first call. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *connection, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **request_state)
{
    (void)version;
    (void)upload_data;
    struct http_server *server = cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return MHD_queue_response(connection, MHD_HTTP_METHOD_NOT_ALLOWED, server->not_allowed);
    if (*request_state == &request_nul_in_path)
        return MHD_queue_response(connection, MHD_HTTP_BAD_REQUEST, server->bad_request);
    if (strlen(url) > MAX_URL)
        return MHD_queue_response(connection, MHD_HTTP_URI_TOO_LONG, server->too_long);
    if (server->user_count > 0 && *request_state != &request_seen &&
        !authorized(server, connection))
        return MHD_queue_response(connection, MHD_HTTP_UNAUTHORIZED, server->unauthorized);
    if (*request_state != &request_seen &&
        !MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_EXPECT)) {
        *request_state = &request_seen;
        return MHD_YES;
    }
    if (*upload_data_size != 0) { /* a GET with a body: ignored */
        *upload_data_size = 0;
        return MHD_YES;
    }
    set_head_deadline(server, connection, 0); /* the whole request came in time */
    return answer(server, connection, url);
}

/* Builds the fixed error responses. Returns 0, or -1 when out of memory. */
static int make_error_responses(struct http_server *server)
{
    static const char text[] = "text/plain; charset=utf-8";
    static const char not_found[] = "404 page not found\n";
    static const char not_allowed[] =
        "405 method not allowed: gpuledger is read-only, use GET or HEAD\n";
    static const char too_long[] = "414 request target too long\n";
    static const char bad_request[] = "400 bad request: the path holds an encoded NUL\n";
    static const char unauthorized[] = "401 unauthorized: gpuledger wants a user and password\n";
    server->not_found = make_response(text, not_found, strlen(not_found));
    server->not_allowed = make_response(text, not_allowed, strlen(not_allowed));
    server->too_long = make_response(text, too_long, strlen(too_long));
    server->bad_request = make_response(text, bad_request, strlen(bad_request));
    server->unauthorized = make_response(text, unauthorized, strlen(unauthorized));
    if (!server->not_found || !server->not_allowed || !server->too_long || !server->bad_request ||
        !server->unauthorized)
        return -1;
    if (MHD_add_response_header(server->not_allowed, MHD_HTTP_HEADER_ALLOW, "GET, HEAD") !=
            MHD_YES ||
        MHD_add_response_header(server->unauthorized, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
                                "Basic realm=\"gpuledger\", charset=\"UTF-8\"") != MHD_YES)
        return -1;
    return 0;
}

/* Frees the fixed error responses (NULL ones are skipped). */
static void free_error_responses(struct http_server *server)
{
    struct MHD_Response *responses[] = {server->not_found, server->not_allowed, server->too_long,
                                        server->bad_request, server->unauthorized};
    for (size_t i = 0; i < sizeof responses / sizeof responses[0]; i++)
        if (responses[i])
            MHD_destroy_response(responses[i]);
}

/* Copies access into server. Returns 0, or -1 when out of memory (what was
 * copied is freed by free_access). */
static int copy_access(struct http_server *server, const struct http_access *access)
{
    if (!access)
        return 0;
    if (access->cert_pem && (!(server->cert_pem = strdup(access->cert_pem)) ||
                             !(server->key_pem = strdup(access->key_pem))))
        return -1;
    if (access->user_count == 0)
        return 0;
    server->users = calloc(access->user_count, sizeof *server->users);
    if (!server->users)
        return -1;
    for (size_t i = 0; i < access->user_count; i++) {
        server->user_count = i + 1;
        server->users[i].name = strdup(access->users[i].name);
        server->users[i].hash = strdup(access->users[i].hash);
        if (!server->users[i].name || !server->users[i].hash)
            return -1;
    }
    return 0;
}

/* Frees what copy_access copied. */
static void free_access(struct http_server *server)
{
    for (size_t i = 0; i < server->user_count; i++) {
        free((char *)server->users[i].name);
        free((char *)server->users[i].hash);
    }
    free(server->users);
    if (server->key_pem)
        memset(server->key_pem, 0, strlen(server->key_pem));
    free(server->key_pem);
    free(server->cert_pem);
}

/* As http_server.h says. */
int http_server_tls_supported(void)
{
    return MHD_is_feature_supported(MHD_FEATURE_TLS) == MHD_YES;
}

/* As http_server.h says. */
struct http_server *http_server_start(int listen_fd, struct http_set *set,
                                      const struct http_access *access, char *cause,
                                      size_t cause_cap)
{
    struct http_server *server = calloc(1, sizeof *server);
    if (!server || make_error_responses(server) != 0 || copy_access(server, access) != 0) {
        cause_set(cause, cause_cap, "serve: not enough memory");
        goto fail;
    }
    if (server->cert_pem && !http_server_tls_supported()) {
        cause_set(cause, cause_cap, "serve: this build's libmicrohttpd cannot speak TLS");
        goto fail;
    }
    if (watchdog_start(server) != 0) {
        cause_set(cause, cause_cap, "serve: could not start the head deadline thread");
        goto fail;
    }
    pthread_mutex_init(&server->lock, NULL);
    server->current = set;
    server->connections = fd_budget_reserve_server(CONNECTION_LIMIT);
    unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL;
    if (server->cert_pem)
        flags |= MHD_USE_TLS;
    struct MHD_OptionItem tls[] = {{MHD_OPTION_HTTPS_MEM_CERT, 0, server->cert_pem},
                                   {MHD_OPTION_HTTPS_MEM_KEY, 0, server->key_pem},
                                   {MHD_OPTION_END, 0, NULL}};
    server->daemon = MHD_start_daemon(
        flags, 0, NULL, NULL, on_request, server, MHD_OPTION_ARRAY,
        server->cert_pem ? tls : tls + 2, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)listen_fd,
        MHD_OPTION_THREAD_POOL_SIZE, (unsigned)THREADS, MHD_OPTION_CONNECTION_LIMIT,
        server->connections, MHD_OPTION_PER_IP_CONNECTION_LIMIT, PER_IP_LIMIT,
        MHD_OPTION_CONNECTION_TIMEOUT, IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
        (size_t)MEMORY_PER_CONNECTION, MHD_OPTION_URI_LOG_CALLBACK, on_uri, server,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, server, MHD_OPTION_NOTIFY_COMPLETED,
        on_completed, server, MHD_OPTION_END);
    if (!server->daemon) {
        cause_set(cause, cause_cap,
                  server->cert_pem
                      ? "serve: libmicrohttpd could not start TLS on the listening "
                        "socket (is the key the certificate's?)"
                      : "serve: libmicrohttpd could not start on the listening socket");
        fd_budget_release_server(server->connections);
        pthread_mutex_destroy(&server->lock);
        watchdog_stop(server);
        watchdog_destroy(server);
        goto fail;
    }
    return server;
fail:
    close(listen_fd);
    http_set_release(set);
    if (server) {
        free_error_responses(server);
        free_access(server);
    }
    free(server);
    return NULL;
}

/* As http_server.h says. */
void http_server_swap(struct http_server *server, struct http_set *set)
{
    pthread_mutex_lock(&server->lock);
    struct http_set *old = server->current;
    server->current = set;
    pthread_mutex_unlock(&server->lock);
    http_set_release(old);
}

/* As http_server.h says. */
void http_server_stop(struct http_server *server)
{
    if (!server)
        return;
    watchdog_stop(server);
    MHD_stop_daemon(server->daemon); /* joins the threads, closes the listening socket */
    fd_budget_release_server(server->connections);
    watchdog_destroy(server);
    http_set_release(server->current);
    free_error_responses(server);
    free_access(server);
    pthread_mutex_destroy(&server->lock);
    free(server);
}
