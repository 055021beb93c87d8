#ifndef GPULEDGER_SERVE_LOOP_H
#define GPULEDGER_SERVE_LOOP_H
#include <lua.h>

/* core.serve(opts, callbacks) → true, "SIGTERM"|"SIGINT" when a signal
 * stopped it, or nil, cause when it could not start (listen failed, the
 * first refresh failed). opts: listen (":9877", "HOST:PORT", "[::1]:PORT"),
 * interval_ms. callbacks (all on this, the main thread): refresh() →
 * {[path] = {status=, content_type=, body=}}, called once before the socket
 * listens and then every interval_ms, each answer swapped in whole (a
 * refresh that raises is reported and the previous answer stays);
 * reload() on SIGHUP; listening(port) once the socket listens. Requests
 * are answered on libmicrohttpd's threads from the current answer only
 * (http_server.c). */
int serve_loop_run(lua_State *L);

#endif
