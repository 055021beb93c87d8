/* gpuledger.core: every function a script can call into C, one prefix
 * (core_), one registration table at the end. Each function checks its
 * arguments with luaL_check* (a wrong call raises) and reports a failure of
 * the world as nil plus a message (DESIGN.md, "The C↔Lua boundary"). The
 * work itself is done by the plain C units (spawn.c, csv.c, procfs.c, …). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "atomic_file.h"
#include "csv.h"
#include "embedded.h"
#include "host.h"
#include "http_client.h"
#include "http_server.h"
#include "procfs.h"
#include "spawn_capture.h"

#ifndef GPULEDGER_VERSION
#define GPULEDGER_VERSION "dev"
#endif

/* The symbolic name of errno value err ("ENOENT"), for callers that must
 * tell one cause from another without reading the English message. */
static const char *errno_name(int err)
{
    switch (err) {
    case ENOENT:
        return "ENOENT";
    case ENOTDIR:
        return "ENOTDIR";
    case EACCES:
        return "EACCES";
    case EPERM:
        return "EPERM";
    case EISDIR:
        return "EISDIR";
    case ELOOP:
        return "ELOOP";
    case ENAMETOOLONG:
        return "ENAMETOOLONG";
    case ENOMEM:
        return "ENOMEM";
    case EMFILE:
        return "EMFILE";
    case ENFILE:
        return "ENFILE";
    default:
        return "EOTHER";
    }
}

/* Pushes nil, "<what>: <strerror(err)>" and errno_name(err), returning 3. */
static int push_errno(lua_State *L, const char *what, int err)
{
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", what, strerror(err));
    lua_pushstring(L, errno_name(err));
    return 3;
}

/* Reads an optional integer field of the options table at `index`. */
static lua_Integer opt_int_field(lua_State *L, int index, const char *field, lua_Integer fallback)
{
    if (lua_isnoneornil(L, index))
        return fallback;
    lua_getfield(L, index, field);
    lua_Integer value = luaL_optinteger(L, -1, fallback);
    lua_pop(L, 1);
    return value;
}

/* core.spawn(argv, {timeout_ms=, max_bytes=}) → stdout, stderr, exit_status
 * (exit_status is nil when a signal ended it), or nil, cause. Runs argv[1]
 * without a shell (spawn.c). */
static int core_spawn(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer argc = luaL_len(L, 1);
    luaL_argcheck(L, argc >= 1 && argc < 256, 1, "want 1 to 255 arguments");
    const char *argv[256];
    for (lua_Integer i = 1; i <= argc; i++) {
        lua_geti(L, 1, i);
        argv[i - 1] = luaL_checkstring(L, -1); /* kept alive by the argv table */
        lua_pop(L, 1);
    }
    argv[argc] = NULL;
    int timeout_ms = (int)opt_int_field(L, 2, "timeout_ms", 10000);
    luaL_argcheck(L, timeout_ms > 0, 2, "timeout_ms must be more than 0");
    size_t max_bytes = (size_t)opt_int_field(L, 2, "max_bytes", 4 << 20);

    struct spawn_result result = {0};
    char cause[256];
    if (spawn_capture((char *const *)argv, timeout_ms, max_bytes, &result, cause, sizeof cause) !=
        0) {
        lua_pushnil(L);
        lua_pushstring(L, cause);
        return 2;
    }
    lua_pushlstring(L, result.out, result.out_len);
    lua_pushlstring(L, result.err, result.err_len);
    if (result.exit_status >= 0)
        lua_pushinteger(L, result.exit_status);
    else
        lua_pushnil(L);
    spawn_result_free(&result);
    return 3;
}

/* core.parse_csv(text) → rows (an array of arrays of strings), or nil, cause
 * (csv.c: nvidia-smi's CSV, Go encoding/csv rules). */
static int core_parse_csv(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    struct csv_table table = {0};
    char cause[256];
    if (csv_parse(text, len, &table, cause, sizeof cause) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, cause);
        return 2;
    }
    lua_createtable(L, (int)table.nrows, 0);
    for (size_t r = 0; r < table.nrows; r++) {
        const struct csv_row *row = &table.rows[r];
        lua_createtable(L, (int)row->nfields, 0);
        for (size_t f = 0; f < row->nfields; f++) {
            lua_pushstring(L, row->fields[f]);
            lua_rawseti(L, -2, (lua_Integer)f + 1);
        }
        lua_rawseti(L, -2, (lua_Integer)r + 1);
    }
    csv_free(&table);
    return 1;
}

/* core.proc_cgroups(proc_root, pids) → { [pid] = {container_id=, runtime=} }
 * for the pids that are in a container (host processes, vanished and
 * unreadable pids are absent), or nil, cause when proc_root is not a
 * readable directory. */
static int core_proc_cgroups(lua_State *L)
{
    const char *proc_root = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    struct stat st;
    if (stat(proc_root, &st) != 0)
        return push_errno(L, proc_root, errno);
    if (!S_ISDIR(st.st_mode))
        return push_errno(L, proc_root, ENOTDIR);

    lua_newtable(L);
    lua_Integer count = luaL_len(L, 2);
    char text[16384];
    for (lua_Integer i = 1; i <= count; i++) {
        lua_geti(L, 2, i);
        lua_Integer pid = luaL_checkinteger(L, -1);
        lua_pop(L, 1);
        long len = procfs_read_cgroup(proc_root, (long)pid, text, sizeof text);
        if (len < 0)
            continue;
        char container_id[CONTAINER_ID_LEN + 1];
        const char *runtime = cgroup_container_id(text, (size_t)len, container_id);
        if (!runtime)
            continue;
        lua_createtable(L, 0, 2);
        lua_pushstring(L, container_id);
        lua_setfield(L, -2, "container_id");
        lua_pushstring(L, runtime);
        lua_setfield(L, -2, "runtime");
        lua_rawseti(L, -2, pid);
    }
    return 1;
}

/* Reads an optional string field of the options table at `index`: NULL when
 * absent or empty. The string stays alive in the table. */
static const char *opt_string_field(lua_State *L, int index, const char *field)
{
    lua_getfield(L, index, field);
    const char *value = lua_isstring(L, -1) ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1);
    return value && *value ? value : NULL;
}

#define MAX_HEADERS 16

/* core.http_get(url, opts) → status, body, content_type, or nil, cause.
 * opts: unix_socket, headers (array of "Name: value"), timeout_ms,
 * max_bytes, ca_file, ca_path, client_cert, client_key, tls_server_name,
 * and token_header + token_env: the header is sent with the value of the
 * environment variable NAMED token_env when it is set and not empty. The
 * token's value never enters Lua and never appears in a cause. */
static int core_http_get(lua_State *L)
{
    const char *url = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    struct http_request request = {0};
    request.url = url;
    request.unix_socket = opt_string_field(L, 2, "unix_socket");
    request.timeout_ms = (long)opt_int_field(L, 2, "timeout_ms", 5000);
    request.max_bytes = (size_t)opt_int_field(L, 2, "max_bytes", 8 << 20);
    request.ca_file = opt_string_field(L, 2, "ca_file");
    request.ca_path = opt_string_field(L, 2, "ca_path");
    request.client_cert = opt_string_field(L, 2, "client_cert");
    request.client_key = opt_string_field(L, 2, "client_key");
    request.tls_server_name = opt_string_field(L, 2, "tls_server_name");

    const char *headers[MAX_HEADERS + 2];
    int nheaders = 0;
    lua_getfield(L, 2, "headers");
    if (lua_istable(L, -1)) {
        lua_Integer count = luaL_len(L, -1);
        luaL_argcheck(L, count <= MAX_HEADERS, 2, "too many headers");
        for (lua_Integer i = 1; i <= count; i++) {
            lua_geti(L, -1, i);
            headers[nheaders++] = luaL_checkstring(L, -1);
            lua_pop(L, 1); /* still referenced by the headers table */
        }
    }
    lua_pop(L, 1);
    const char *token_header = opt_string_field(L, 2, "token_header");
    const char *token_env = opt_string_field(L, 2, "token_env");
    const char *token = token_env ? getenv(token_env) : NULL;
    char *token_line = NULL;
    if (token_header && token && *token) {
        size_t size = strlen(token_header) + strlen(token) + 3;
        token_line = malloc(size);
        if (!token_line)
            return luaL_error(L, "not enough memory");
        snprintf(token_line, size, "%s: %s", token_header, token);
        headers[nheaders++] = token_line;
    }
    headers[nheaders] = NULL;
    request.headers = headers;

    struct http_response response = {0};
    char cause[512];
    int failed = http_get(&request, &response, cause, sizeof cause);
    if (token_line) {
        memset(token_line, 0, strlen(token_line));
        free(token_line);
    }
    if (failed) {
        lua_pushnil(L);
        lua_pushstring(L, cause);
        return 2;
    }
    lua_pushinteger(L, response.status);
    lua_pushlstring(L, response.body, response.body_len);
    if (response.content_type)
        lua_pushstring(L, response.content_type);
    else
        lua_pushnil(L);
    http_response_free(&response);
    return 3;
}

/* core.now() → seconds since the epoch, with fractions (CLOCK_REALTIME). */
static int core_now(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9);
    return 1;
}

/* core.hostname() → this machine's name, or nil, cause. */
static int core_hostname(lua_State *L)
{
    char name[HOST_NAME_MAX + 1];
    if (gethostname(name, sizeof name) != 0)
        return push_errno(L, "hostname", errno);
    name[HOST_NAME_MAX] = '\0';
    lua_pushstring(L, name);
    return 1;
}

/* core.getenv(name) → the variable's value, or nil when unset. */
static int core_getenv(lua_State *L)
{
    const char *value = getenv(luaL_checkstring(L, 1));
    if (value)
        lua_pushstring(L, value);
    else
        lua_pushnil(L);
    return 1;
}

/* core.stat(path) → "file", "dir" or "other", or nil, cause, errno name
 * ("ENOENT" when nothing is there). */
static int core_stat(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    struct stat st;
    if (stat(path, &st) != 0)
        return push_errno(L, path, errno);
    lua_pushstring(L, S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "dir" : "other");
    return 1;
}

/* core.read_file(path, max_bytes) → text, or nil, cause, errno name ("EFBIG"
 * when the file is longer than max_bytes: never a truncated read). */
static int core_read_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer max_bytes = luaL_checkinteger(L, 2);
    FILE *f = fopen(path, "rb");
    if (!f)
        return push_errno(L, path, errno);
    luaL_Buffer buffer;
    luaL_buffinit(L, &buffer);
    size_t total = 0, n;
    char chunk[8192];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        total += n;
        if ((lua_Integer)total > max_bytes) {
            fclose(f);
            lua_pushnil(L);
            lua_pushfstring(L, "%s: longer than %d bytes", path, (int)max_bytes);
            lua_pushstring(L, "EFBIG");
            return 3;
        }
        luaL_addlstring(&buffer, chunk, n);
    }
    int failed = ferror(f);
    int err = errno;
    fclose(f);
    if (failed)
        return push_errno(L, path, err ? err : EIO);
    luaL_pushresult(&buffer);
    return 1;
}

/* Sorts the strings of the array at the top of the stack with table.sort. */
static void sort_array(lua_State *L)
{
    lua_getglobal(L, "table");
    lua_getfield(L, -1, "sort"); /* [array, table, sort] */
    lua_pushvalue(L, -3);
    lua_call(L, 1, 0);
    lua_pop(L, 1);
}

/* core.listdir(dir) → the sorted names in dir (without . and ..), or nil,
 * cause. */
static int core_listdir(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    DIR *dir = opendir(path);
    if (!dir)
        return push_errno(L, path, errno);
    lua_newtable(L);
    lua_Integer n = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        lua_pushstring(L, entry->d_name);
        lua_rawseti(L, -2, ++n);
    }
    closedir(dir);
    sort_array(L);
    return 1;
}

/* core.embedded_files(prefix) → the sorted paths of the embedded scripts
 * that start with prefix ("rules/"). */
static int core_embedded_files(lua_State *L)
{
    size_t prefix_len;
    const char *prefix = luaL_checklstring(L, 1, &prefix_len);
    lua_newtable(L);
    lua_Integer n = 0;
    for (const struct embedded_file *file = embedded_files; file->path; file++) {
        if (strncmp(file->path, prefix, prefix_len) == 0) {
            lua_pushstring(L, file->path);
            lua_rawseti(L, -2, ++n);
        }
    }
    sort_array(L);
    return 1;
}

/* core.embedded_text(path) → the text of the embedded script at path
 * ("rules/thresholds.lua") and its chunk name, or nil. */
static int core_embedded_text(lua_State *L)
{
    const struct embedded_file *file = host_embedded_file(luaL_checkstring(L, 1));
    if (!file) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushlstring(L, (const char *)file->data, file->size);
    lua_pushfstring(L, "=[embedded] %s", file->path);
    return 2;
}

/* core.call_limited(fn, max_instructions, max_bytes, ...) → true, results…
 * or false, error ({file, line, message}, or "not enough memory"): fn(...) stopped once it runs
 * past max_instructions VM instructions or grows the heap by more than max_bytes (host.c). */
static int core_call_limited(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TFUNCTION);
    long max_instructions = (long)luaL_checkinteger(L, 2);
    size_t max_bytes = (size_t)luaL_checkinteger(L, 3);
    int nargs = lua_gettop(L) - 3;
    lua_pushvalue(L, 1);
    lua_rotate(L, 4, 1); /* [fn, max_i, max_b, fn, args…] */
    int base = 3;
    int status = host_call_limited(L, nargs, LUA_MULTRET, max_instructions, max_bytes);
    lua_pushboolean(L, status == LUA_OK);
    lua_rotate(L, base + 1, 1); /* [fn, max_i, max_b, ok, results… | message] */
    return lua_gettop(L) - base;
}

/* ==== serve and the history file (http_server.c, atomic_file.c) ==== */

/* core.write_atomic(path, bytes) → true, or nil, cause: the file at path is
 * replaced whole or not at all (temp file, fsync, rename, fsync of the
 * directory; missing parent directories are created; atomic_file.c). */
static int core_write_atomic(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    size_t len;
    const char *bytes = luaL_checklstring(L, 2, &len);
    char cause[512];
    if (atomic_file_write(path, bytes, len, cause, sizeof cause) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, cause);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

/* Message handler for serve's callbacks: the message, with a traceback
 * under GPULEDGER_DEBUG=1. */
static int serve_msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL)
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    if (host_debug())
        luaL_traceback(L, L, msg, 1);
    return 1;
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
        lua_pop(L, 4); /* [responses, set, path] */
    }
    return 0;
}

/* Calls callbacks.refresh() (callbacks at index `callbacks`) and turns its
 * answer into a new response set. Returns the set with the stack as it
 * was, or NULL with the error message pushed. */
static struct http_set *serve_refresh(lua_State *L, int callbacks)
{
    int base = lua_gettop(L);
    struct http_set *set = NULL;
    lua_pushcfunction(L, serve_msghandler);
    lua_getfield(L, callbacks, "refresh");        /* [handler, refresh] */
    if (lua_pcall(L, 0, 1, base + 1) == LUA_OK) { /* [handler, responses] */
        set = http_set_new();
        if (!set) {
            lua_pushliteral(L, "not enough memory");
        } else {
            lua_pushcfunction(L, serve_fill_set);
            lua_pushvalue(L, -2);
            lua_pushlightuserdata(L, set); /* [handler, responses, fill, responses, set] */
            if (lua_pcall(L, 2, 0, base + 1) != LUA_OK) {
                http_set_release(set);
                set = NULL;
            }
        }
    }
    if (set) {
        lua_settop(L, base);
    } else {
        lua_replace(L, base + 1); /* [message, ...] */
        lua_settop(L, base + 1);
    }
    return set;
}

/* Calls callbacks[name](arg) if it is a function; an error is reported on
 * stderr and goes no further. */
static void serve_call(lua_State *L, int callbacks, const char *name, lua_Integer arg)
{
    int base = lua_gettop(L);
    lua_pushcfunction(L, serve_msghandler);
    if (lua_getfield(L, callbacks, name) == LUA_TFUNCTION) {
        lua_pushinteger(L, arg);
        if (lua_pcall(L, 1, 0, base + 1) != LUA_OK)
            fprintf(stderr, "gpuledger: %s: %s\n", name, lua_tostring(L, -1));
    }
    lua_settop(L, base);
}

/* Milliseconds on the monotonic clock. */
static long long monotonic_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

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
static int core_serve(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_getfield(L, 1, "listen");
    luaL_argcheck(L, lua_type(L, -1) == LUA_TSTRING, 1, "want opts.listen, a string");
    char listen[512];
    snprintf(listen, sizeof listen, "%s", lua_tostring(L, -1));
    lua_pop(L, 1);
    lua_Integer interval_ms = opt_int_field(L, 1, "interval_ms", 0);
    luaL_argcheck(L, interval_ms > 0, 1, "want opts.interval_ms > 0");
    luaL_argcheck(L, lua_getfield(L, 2, "refresh") == LUA_TFUNCTION, 2,
                  "want callbacks.refresh, a function");
    lua_pop(L, 1);

    sigset_t saved_mask;
    http_signals_block(&saved_mask); /* the server's threads inherit it */
    struct http_set *set = serve_refresh(L, 2);
    if (!set) {
        http_signals_restore(&saved_mask);
        lua_pushnil(L);
        lua_pushfstring(L, "refresh: %s", lua_tostring(L, -2));
        return 2;
    }
    char cause[512];
    int port = 0;
    int fd = http_listen(listen, &port, cause, sizeof cause);
    struct http_server *server = fd < 0 ? NULL : http_server_start(fd, set, cause, sizeof cause);
    if (!server) {
        if (fd < 0)
            http_set_release(set);
        http_signals_restore(&saved_mask);
        lua_pushnil(L);
        lua_pushstring(L, cause);
        return 2;
    }
    serve_call(L, 2, "listening", port);

    const char *stopped_by = NULL;
    long long next = monotonic_ms() + interval_ms;
    while (!stopped_by) {
        long long wait = next - monotonic_ms();
        int sig = http_signal_wait(wait > 0 ? (long)wait : 0);
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
    http_signals_restore(&saved_mask);
    lua_pushboolean(L, 1);
    lua_pushstring(L, stopped_by);
    return 2;
}
/* ==== end of serve and the history file ==== */

static const luaL_Reg core_functions[] = {
    {"spawn", core_spawn},
    {"parse_csv", core_parse_csv},
    {"proc_cgroups", core_proc_cgroups},
    {"http_get", core_http_get},
    {"now", core_now},
    {"hostname", core_hostname},
    {"getenv", core_getenv},
    {"stat", core_stat},
    {"read_file", core_read_file},
    {"listdir", core_listdir},
    {"embedded_files", core_embedded_files},
    {"embedded_text", core_embedded_text},
    {"search_script", host_search_script},
    {"call_limited", core_call_limited},
    /* serve and the history file */
    {"write_atomic", core_write_atomic},
    {"serve", core_serve},
    {NULL, NULL},
};

int host_open_core(lua_State *L)
{
    luaL_newlib(L, core_functions);
    lua_pushstring(L, GPULEDGER_VERSION);
    lua_setfield(L, -2, "version");
    return 1;
}
