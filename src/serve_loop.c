/* `gpuledger serve`'s loop on the main thread: refreshes the responses
 * through Lua every interval, swaps each set in whole into the HTTP server
 * (http_server.c), which answers on its own threads, and waits for the
 * signals that reload the rules or stop it. */
#include "serve_loop.h"

#include <signal.h>
#include <stdio.h>

#include <lauxlib.h>

#include "clock.h"
#include "host.h"
#include "http_server.h"
#include "serve_signals.h"

/* Adds to set what path answers once its response is stale, from the table
 * on top of the stack ({after_ms=, status=, body=}; the Content-Type is the
 * response's, just below it), left there. Raises on a malformed one. */
static void fill_stale(lua_State *L, struct http_set *set, const char *path)
{
    if (!lua_istable(L, -1))
        luaL_error(L, "refresh: the stale response for %s is not a table", path);
    lua_getfield(L, -1, "after_ms");
    lua_getfield(L, -2, "status");
    lua_getfield(L, -3, "body"); /* [.., type, stale, after, status, body] */
    int after_ok = 0, status_ok = 0;
    lua_Integer after_ms = lua_tointegerx(L, -3, &after_ok);
    lua_Integer status = lua_tointegerx(L, -2, &status_ok);
    if (!after_ok || after_ms < 0 || !status_ok || status < 100 || status > 599 ||
        lua_type(L, -1) != LUA_TSTRING)
        luaL_error(L, "refresh: the stale response for %s wants after_ms (>= 0), status and body",
                   path);
    size_t len;
    const char *body = lua_tolstring(L, -1, &len);
    if (http_set_add_stale(set, path, monotonic_ms() + (long long)after_ms, (unsigned)status,
                           lua_tostring(L, -5), body, len) != 0)
        luaL_error(L, "refresh: not enough memory");
    lua_pop(L, 3);
}

/* Protected: adds every response of the table at 1 ({[path] = {status=,
 * content_type=, body=}}) to the set given as light userdata at 2. Raises
 * on a malformed entry. */
static int serve_fill_set(lua_State *L)
{
    struct http_set *set = lua_touserdata(L, 2);
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_pushnil(L);
    while (lua_next(L, 1) != 0) { /* [responses, set, path, response] */
        if (lua_type(L, -2) != LUA_TSTRING || lua_tostring(L, -2)[0] != '/')
            return luaL_error(L, "refresh: each response is keyed by a path starting with /");
        const char *path = lua_tostring(L, -2);
        if (!lua_istable(L, -1))
            return luaL_error(L, "refresh: the response for %s is not a table", path);
        lua_getfield(L, -1, "status");
        lua_getfield(L, -2, "content_type");
        lua_getfield(L, -3, "body"); /* [.., path, response, status, type, body] */
        int is_integer = 0;
        lua_Integer status = lua_tointegerx(L, -3, &is_integer);
        if (!is_integer || status < 100 || status > 599 || lua_type(L, -2) != LUA_TSTRING ||
            lua_type(L, -1) != LUA_TSTRING)
            return luaL_error(
                L, "refresh: the response for %s wants status (100-599), content_type and body",
                path);
        size_t len;
        const char *body = lua_tolstring(L, -1, &len);
        if (http_set_add(set, path, (unsigned)status, lua_tostring(L, -2), body, len) != 0)
            return luaL_error(L, "refresh: not enough memory");
        lua_pop(L, 1); /* [.., path, response, status, type] */
        if (lua_getfield(L, -3, "stale") != LUA_TNIL)
            fill_stale(L, set, path);
        lua_pop(L, 4); /* [responses, set, path] */
    }
    return 0;
}

/* Calls callbacks.refresh() (callbacks at index `callbacks`) and turns its
 * answer into a new response set. Returns the set with the stack as it
 * was, or NULL with the error message pushed. */
static struct http_set *serve_refresh(lua_State *L, int callbacks)
{
    lua_getfield(L, callbacks, "refresh");
    if (host_docall(L, 0, 1) != LUA_OK)
        return NULL;                       /* [message] */
    struct http_set *set = http_set_new(); /* [responses] */
    if (!set) {
        lua_pop(L, 1);
        lua_pushliteral(L, "not enough memory");
        return NULL;
    }
    lua_pushcfunction(L, serve_fill_set);
    lua_insert(L, -2);
    lua_pushlightuserdata(L, set); /* [fill, responses, set] */
    if (host_docall(L, 2, 0) != LUA_OK) {
        http_set_release(set);
        return NULL; /* [message] */
    }
    return set;
}

/* Calls callbacks[name](arg) if it is a function; an error is reported on
 * stderr and goes no further. */
static void serve_call(lua_State *L, int callbacks, const char *name, lua_Integer arg)
{
    int base = lua_gettop(L);
    if (lua_getfield(L, callbacks, name) == LUA_TFUNCTION) {
        lua_pushinteger(L, arg);
        if (host_docall(L, 1, 0) != LUA_OK)
            fprintf(stderr, "gpuledger: %s: %s\n", name, lua_tostring(L, -1));
    }
    lua_settop(L, base);
}

/* What every path answers until the first refresh has completed: 503, "no
 * data yet". NULL when out of memory. */
static struct http_set *waiting_set(void)
{
    static const char body[] = "gpuledger: no data yet: the first refresh has not completed\n";
    struct http_set *set = http_set_new();
    if (set &&
        http_set_add_fallback(set, 503, "text/plain; charset=utf-8", body, sizeof body - 1) != 0) {
        http_set_release(set);
        return NULL;
    }
    return set;
}

/* Reads opts.tls ({cert=, key=}, PEM texts) and opts.users ({{name=,
 * hash=}, …}) of the options at index 1 into *access; the strings stay the
 * options' (the server copies them), the users' array is the caller's to
 * free. Raises (luaL_argcheck) on a malformed one. */
static void read_access(lua_State *L, struct http_access *access)
{
    *access = (struct http_access){NULL, NULL, NULL, 0};
    if (lua_getfield(L, 1, "tls") == LUA_TTABLE) {
        lua_getfield(L, -1, "cert");
        lua_getfield(L, -2, "key");
        luaL_argcheck(L, lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING, 1,
                      "want opts.tls.cert and opts.tls.key, PEM texts");
        access->cert_pem = lua_tostring(L, -2);
        access->key_pem = lua_tostring(L, -1);
        lua_pop(L, 2);
    }
    lua_pop(L, 1);
    if (lua_getfield(L, 1, "users") == LUA_TTABLE && luaL_len(L, -1) > 0) {
        size_t n = (size_t)luaL_len(L, -1);
        struct basic_auth_user *users = lua_newuserdatauv(L, n * sizeof *users, 0);
        lua_setfield(L, 1, "users_array"); /* kept alive by the options */
        for (size_t i = 0; i < n; i++) {
            lua_rawgeti(L, -1, (lua_Integer)i + 1);
            lua_getfield(L, -1, "name");
            lua_getfield(L, -2, "hash");
            luaL_argcheck(L, lua_type(L, -2) == LUA_TSTRING && lua_type(L, -1) == LUA_TSTRING, 1,
                          "want opts.users[i].name and .hash, strings");
            users[i] = (struct basic_auth_user){lua_tostring(L, -2), lua_tostring(L, -1)};
            lua_pop(L, 3);
        }
        access->users = users;
        access->user_count = n;
    }
    lua_pop(L, 1);
}

/* As serve_loop.h says. */
int serve_loop_tls_supported(lua_State *L)
{
    lua_pushboolean(L, http_server_tls_supported());
    return 1;
}

/* As serve_loop.h says. */
int serve_loop_run(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_getfield(L, 1, "listen");
    luaL_argcheck(L, lua_type(L, -1) == LUA_TSTRING, 1, "want opts.listen, a string");
    char listen[512];
    snprintf(listen, sizeof listen, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    lua_getfield(L, 1, "interval_ms");
    lua_Integer interval_ms = lua_tointeger(L, -1);
    lua_pop(L, 1);
    luaL_argcheck(L, interval_ms > 0, 1, "want opts.interval_ms > 0");
    luaL_argcheck(L, lua_getfield(L, 2, "refresh") == LUA_TFUNCTION, 2,
                  "want callbacks.refresh, a function");
    lua_pop(L, 1);
    struct http_access access;
    read_access(L, &access);

    sigset_t saved_mask;
    serve_signals_block(&saved_mask); /* the server's threads inherit it */
    char cause[512];
    int port = 0;
    struct http_set *set = waiting_set();
    int fd = set ? http_listen(listen, &port, cause, sizeof cause) : -1;
    if (!set)
        snprintf(cause, sizeof cause, "serve: not enough memory");
    struct http_server *server =
        fd < 0 ? NULL : http_server_start(fd, set, &access, cause, sizeof cause);
    if (!server) {
        if (fd < 0)
            http_set_release(set);
        serve_signals_restore(&saved_mask);
        lua_pushnil(L);
        lua_pushstring(L, cause);
        return 2;
    }
    serve_call(L, 2, "listening", port);
    set = serve_refresh(L, 2);
    if (!set) {
        http_server_stop(server);
        serve_signals_restore(&saved_mask);
        lua_pushnil(L);
        lua_pushfstring(L, "refresh: %s", lua_tostring(L, -2));
        return 2;
    }
    http_server_swap(server, set);

    const char *stopped_by = NULL;
    long long next = monotonic_ms() + interval_ms;
    while (!stopped_by) {
        long long wait = next - monotonic_ms();
        int sig = serve_signal_wait(wait > 0 ? (long)wait : 0);
        if (sig == SIGTERM || sig == SIGINT) {
            stopped_by = sig == SIGTERM ? "SIGTERM" : "SIGINT";
        } else if (sig == SIGHUP) {
            serve_call(L, 2, "reload", 0);
        } else if (monotonic_ms() >= next) {
            next += interval_ms;
            set = serve_refresh(L, 2);
            if (set) {
                http_server_swap(server, set);
            } else {
                fprintf(stderr, "gpuledger: refresh failed, still serving the previous one: %s\n",
                        lua_tostring(L, -1));
                lua_pop(L, 1);
            }
            long long now = monotonic_ms();
            if (next < now)
                next = now; /* a refresh longer than the interval: no backlog */
        }
    }
    http_server_stop(server);
    serve_signals_restore(&saved_mask);
    lua_pushboolean(L, 1);
    lua_pushstring(L, stopped_by);
    return 2;
}
