#ifndef GPULEDGER_SERVE_LOOP_H
#define GPULEDGER_SERVE_LOOP_H
#include <lua.h>

/* core.serve(opts, callbacks) → true, "SIGTERM"|"SIGINT" when a signal
 * stopped it, or nil, cause when it could not start (listen failed, the
 * first refresh failed). opts: listen (":9877", "HOST:PORT", "[::1]:PORT"),
 * interval_ms, tls ({cert=, key=}: PEM texts; absent: plain HTTP), users
 * ({{name=, hash=}, …}: basic authentication against bcrypt hashes;
 * absent or empty: none). callbacks (all on this, the main thread): refresh() →
 * {[path] = {status=, content_type=, body=, stale=}}, called once the
 * socket listens (until it returns, every path answers 503 "no data yet")
 * and then every interval_ms, each answer swapped in whole (a refresh that
 * raises is reported and the previous answer stays); a response's stale,
 * {after_ms=, status=, body=}, is what it answers instead once after_ms
 * have passed since its refresh returned, should no refresh replace it
 * first; reload() on SIGHUP; listening(port) once the socket listens.
 * Requests are answered on libmicrohttpd's threads from the current answer
 * only (http_server.c). */
int serve_loop_run(lua_State *L);

/* core.serve_tls_supported() → true when core.serve can speak TLS (this
 * build's libmicrohttpd was built with GnuTLS), else false. */
int serve_loop_tls_supported(lua_State *L);

#endif
