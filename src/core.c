/* gpuledger.core: every function a script can call into C, one prefix
 * (core_), one registration table at the end. Each function checks its
 * arguments with luaL_check* (a wrong call raises) and reports a failure of
 * the world as nil plus a message, not a Lua error. The
 * work itself is done by the plain C units (spawn_capture.c, csv.c, procfs.c, …; the serve loop is
 * serve_loop.c). */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "atomic_file.h"
#include "core_history.h"
#include "csv.h"
#include "embedded.h"
#include "host.h"
#include "http_client.h"
#include "http_multi.h"
#include "http_server.h"
#include "isolate.h"
#include "kmsg.h"
#include "procfs.h"
#include "serve_loop.h"
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

/* core.spawn(argv, {timeout_ms=, deadline_ms=, max_bytes=}) → stdout,
 * stderr, exit_status (exit_status is nil when a signal ended it), or nil,
 * cause. Runs argv[1] without a shell (spawn_capture.c) until timeout_ms
 * after it starts (default 10000 without a deadline) or deadline_ms, an
 * instant of core.monotonic_ms(), whichever comes first. */
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
    lua_Integer deadline_ms = opt_int_field(L, 2, "deadline_ms", 0);
    int timeout_ms = (int)opt_int_field(L, 2, "timeout_ms", deadline_ms > 0 ? 0 : 10000);
    luaL_argcheck(L, timeout_ms > 0 || deadline_ms > 0, 2,
                  "timeout_ms or deadline_ms must be more than 0");
    size_t max_bytes = (size_t)opt_int_field(L, 2, "max_bytes", 4 << 20);

    struct spawn_result result = {0};
    char cause[256];
    if (spawn_capture((char *const *)argv, timeout_ms, (long long)deadline_ms, max_bytes, &result,
                      cause, sizeof cause) != 0) {
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

/* Sets field to a uid and, when the passwd file names it, name_field to its
 * name. */
static void set_uid_fields(lua_State *L, const char *passwd_path, long uid, const char *field,
                           const char *name_field)
{
    char name[USER_NAME_CAP];
    lua_pushinteger(L, uid);
    lua_setfield(L, -2, field);
    if (passwd_user_name(passwd_path, uid, name)) {
        lua_pushstring(L, name);
        lua_setfield(L, -2, name_field);
    }
}

/* Pushes the record of one process: owner ("container", "nomad", "service",
 * "session" or "process") and that owner's fields (container_id and runtime;
 * alloc_id and task; unit; session_uid and session_user), then uid and user
 * when /proc/<pid>/status gives a uid. */
static void push_process_owner(lua_State *L, const struct cgroup_owner *owner, long uid,
                               const char *passwd_path)
{
    static const char *const kinds[] = {[OWNER_PROCESS] = "process",
                                        [OWNER_CONTAINER] = "container",
                                        [OWNER_NOMAD_TASK] = "nomad",
                                        [OWNER_SERVICE] = "service",
                                        [OWNER_SESSION] = "session"};
    lua_createtable(L, 0, 5);
    lua_pushstring(L, kinds[owner->kind]);
    lua_setfield(L, -2, "owner");
    switch (owner->kind) {
    case OWNER_CONTAINER:
        lua_pushstring(L, owner->container_id);
        lua_setfield(L, -2, "container_id");
        lua_pushstring(L, owner->runtime);
        lua_setfield(L, -2, "runtime");
        break;
    case OWNER_NOMAD_TASK:
        lua_pushstring(L, owner->alloc_id);
        lua_setfield(L, -2, "alloc_id");
        lua_pushstring(L, owner->task);
        lua_setfield(L, -2, "task");
        break;
    case OWNER_SERVICE:
        lua_pushstring(L, owner->unit);
        lua_setfield(L, -2, "unit");
        break;
    case OWNER_SESSION:
        set_uid_fields(L, passwd_path, owner->session_uid, "session_uid", "session_user");
        break;
    case OWNER_PROCESS:
        break;
    }
    if (uid >= 0)
        set_uid_fields(L, passwd_path, uid, "uid", "user");
}

/* The most cgroup parents core.proc_cgroups trusts besides the system's own. */
#define CGROUP_PARENTS_MAX 16

/* core.proc_cgroups(proc_root, pids[, parents]) → { [pid] = record }
 * (push_process_owner) for each pid whose cgroup file can be read (vanished
 * and unreadable pids are absent), user names from the etc/passwd beside
 * proc_root; or nil, cause when proc_root is not a readable directory.
 * parents: the cgroups besides the system's own that only Nomad or an
 * engine creates under (procfs.h's cgroup_parents), at most
 * CGROUP_PARENTS_MAX strings. Never reads a process's arguments or
 * environment. */
static int core_proc_cgroups(lua_State *L)
{
    const char *proc_root = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    const char *parents[CGROUP_PARENTS_MAX + 1] = {0};
    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        lua_Integer count = luaL_len(L, 3);
        luaL_argcheck(L, count <= CGROUP_PARENTS_MAX, 3, "too many cgroup parents");
        for (lua_Integer i = 1; i <= count; i++) {
            luaL_argcheck(L, lua_geti(L, 3, i) == LUA_TSTRING, 3, "cgroup parents are strings");
            parents[i - 1] = lua_tostring(L, -1); /* stays alive in the table */
            lua_pop(L, 1);
        }
    }
    struct stat st;
    if (stat(proc_root, &st) != 0)
        return push_errno(L, proc_root, errno);
    if (!S_ISDIR(st.st_mode))
        return push_errno(L, proc_root, ENOTDIR);
    char passwd_path[PATH_MAX];
    if (passwd_path_beside(proc_root, passwd_path, sizeof passwd_path) != 0)
        return push_errno(L, proc_root, ENAMETOOLONG);

    lua_newtable(L);
    lua_Integer count = luaL_len(L, 2);
    char text[16384];
    for (lua_Integer i = 1; i <= count; i++) {
        lua_geti(L, 2, i);
        lua_Integer pid = luaL_checkinteger(L, -1);
        lua_pop(L, 1);
        long len = procfs_read_file(proc_root, (long)pid, "cgroup", text, sizeof text);
        if (len < 0)
            continue;
        struct cgroup_owner owner;
        cgroup_owner(text, (size_t)len, parents, &owner);
        len = procfs_read_file(proc_root, (long)pid, "status", text, sizeof text);
        long uid = len < 0 ? -1 : status_real_uid(text, (size_t)len);
        push_process_owner(L, &owner, uid, passwd_path);
        lua_rawseti(L, -2, pid);
    }
    return 1;
}

/* Reads an optional string field of the options table at `index`: NULL when
 * absent, empty or not a string (a number would be converted on the stack
 * only, and that copy is gone once popped). The string stays alive in the
 * table as long as the table is not changed. */
static const char *opt_string_field(lua_State *L, int index, const char *field)
{
    lua_getfield(L, index, field);
    const char *value = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1);
    return value && *value ? value : NULL;
}

#define MAX_HEADERS 16

/* A request read from a Lua options table, with the token line it owns. */
struct lua_request {
    struct http_request request;
    const char *headers[MAX_HEADERS + 2];
    char *token_line; /* "<token_header>: <value>", or NULL */
};

/* Fills *out from the options table at index (strings stay alive in that
 * table): unix_socket, headers (array of "Name: value"), timeout_ms,
 * max_bytes, ca_file, ca_path, client_cert, client_key, tls_server_name, and
 * token_header + token_env (+ token_prefix): the header is sent with
 * token_prefix ("Bearer ") and the value of the environment variable NAMED
 * token_env when it is set and not empty (and
 * that value is the request's secret, redacted wherever it would show).
 * Raises on a wrong call. Free with lua_request_clear. */
static void read_lua_request(lua_State *L, int index, const char *url, struct lua_request *out)
{
    memset(out, 0, sizeof *out);
    struct http_request *request = &out->request;
    request->url = url;
    request->unix_socket = opt_string_field(L, index, "unix_socket");
    request->timeout_ms = (long)opt_int_field(L, index, "timeout_ms", 5000);
    request->max_bytes = (size_t)opt_int_field(L, index, "max_bytes", 8 << 20);
    request->ca_file = opt_string_field(L, index, "ca_file");
    request->ca_path = opt_string_field(L, index, "ca_path");
    request->client_cert = opt_string_field(L, index, "client_cert");
    request->client_key = opt_string_field(L, index, "client_key");
    request->tls_server_name = opt_string_field(L, index, "tls_server_name");

    int nheaders = 0;
    lua_getfield(L, index, "headers");
    if (lua_istable(L, -1)) {
        lua_Integer count = luaL_len(L, -1);
        luaL_argcheck(L, count <= MAX_HEADERS, index, "too many headers");
        for (lua_Integer i = 1; i <= count; i++) {
            lua_geti(L, -1, i);
            luaL_argexpected(L, lua_type(L, -1) == LUA_TSTRING, index, "headers of strings");
            out->headers[nheaders++] = lua_tostring(L, -1);
            lua_pop(L, 1); /* still referenced by the headers table */
        }
    }
    lua_pop(L, 1);
    const char *token_header = opt_string_field(L, index, "token_header");
    const char *token_env = opt_string_field(L, index, "token_env");
    const char *token_prefix = opt_string_field(L, index, "token_prefix");
    const char *token = token_env ? getenv(token_env) : NULL;
    if (!token_prefix)
        token_prefix = "";
    if (token_header && token && *token) {
        size_t size = strlen(token_header) + strlen(token_prefix) + strlen(token) + 3;
        out->token_line = malloc(size);
        if (!out->token_line)
            luaL_error(L, "not enough memory");
        snprintf(out->token_line, size, "%s: %s%s", token_header, token_prefix, token);
        out->headers[nheaders++] = out->token_line;
        request->secret = token; /* never shown, even when a server echoes it */
    }
    out->headers[nheaders] = NULL;
    request->headers = out->headers;
}

/* Wipes and frees the token line of a request read by read_lua_request. */
static void lua_request_clear(struct lua_request *request)
{
    if (request->token_line) {
        memset(request->token_line, 0, strlen(request->token_line));
        free(request->token_line);
        request->token_line = NULL;
    }
}

/* core.http_get(url, opts) → status, body, content_type, or nil, cause.
 * opts as read_lua_request reads them. The token's value never enters Lua
 * and never appears in a cause. */
static int core_http_get(lua_State *L)
{
    const char *url = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    struct lua_request request;
    read_lua_request(L, 2, url, &request);
    struct http_response response = {0};
    char cause[512];
    int failed = http_get(&request.request, &response, cause, sizeof cause);
    lua_request_clear(&request);
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

/* What http_get_many's each callback needs to reach Lua. */
struct many_context {
    lua_State *L;
    int each;                   /* stack index of the each function, or 0 */
    int results;                /* stack index of the results table, or 0 */
    int anchor;                 /* stack index of a table that keeps the added requests alive */
    struct http_many *run;      /* the run each is hearing, to add requests to */
    struct lua_request **added; /* the requests each added, each allocated alone */
    size_t added_count, added_capacity;
};

/* Reads request i of the array at index `list` into out (read_lua_request):
 * a request that is no table raises, naming it as `whose` request i; a url
 * that is not a string is "" (heard as "no URL"). The strings stay alive in
 * the request table, which must not change until the run ends. */
static void read_request_at(lua_State *L, int list, lua_Integer i, const char *whose,
                            struct lua_request *out)
{
    if (lua_geti(L, list, i) != LUA_TTABLE)
        luaL_error(L, "http_get_many: %s request %d is not a table", whose, (int)i);
    const char *url = opt_string_field(L, -1, "url");
    read_lua_request(L, lua_gettop(L), url ? url : "", out);
    lua_pop(L, 1); /* the table stays alive in the array */
}

/* Adds the requests of the array at index 1 to the run of the
 * many_context at upvalue 1, keeping the array alive in the anchor table at
 * upvalue 2 (lua_pcall'd: raises on a wrong request or when out of memory;
 * what it allocated is freed by the caller). */
static int add_requests(lua_State *L)
{
    struct many_context *many = lua_touserdata(L, lua_upvalueindex(1));
    lua_Integer count = luaL_len(L, 1);
    lua_pushvalue(L, 1);
    lua_rawseti(L, lua_upvalueindex(2), (lua_Integer)lua_rawlen(L, lua_upvalueindex(2)) + 1);
    for (lua_Integer i = 1; i <= count; i++) {
        if (many->added_count == many->added_capacity) {
            size_t capacity = many->added_capacity ? 2 * many->added_capacity : 8;
            struct lua_request **added = realloc(many->added, capacity * sizeof *added);
            if (!added)
                return luaL_error(L, "not enough memory");
            many->added = added;
            many->added_capacity = capacity;
        }
        struct lua_request *request = calloc(1, sizeof *request);
        if (!request)
            return luaL_error(L, "not enough memory");
        many->added[many->added_count++] = request;
        read_request_at(L, 1, i, "an added", request);
        if (http_many_add(many->run, &request->request) != 0)
            return luaL_error(L, "not enough memory");
    }
    return 0;
}

/* Pushes {status=, body=, content_type=} or {error=} and hands it to the
 * Lua each function (index from 1), adding the requests it returns to run,
 * or stores it in the results table. Returns 1, with the error value on the
 * stack, when each raised or returned a wrong request. */
static int many_each(void *context, struct http_many *run, size_t index,
                     struct http_response *response, const char *cause)
{
    struct many_context *many = context;
    lua_State *L = many->L;
    luaL_checkstack(L, 4, NULL);
    lua_createtable(L, 0, 3);
    if (response) {
        lua_pushinteger(L, response->status);
        lua_setfield(L, -2, "status");
        lua_pushlstring(L, response->body, response->body_len);
        lua_setfield(L, -2, "body");
        if (response->content_type) {
            lua_pushstring(L, response->content_type);
            lua_setfield(L, -2, "content_type");
        }
    } else {
        lua_pushstring(L, cause);
        lua_setfield(L, -2, "error");
    }
    if (!many->each) {
        lua_rawseti(L, many->results, (lua_Integer)index + 1);
        return 0;
    }
    lua_pushvalue(L, many->each); /* [result, each] */
    lua_insert(L, -2);            /* [each, result] */
    lua_pushinteger(L, (lua_Integer)index + 1);
    lua_insert(L, -2); /* [each, index, result] */
    if (host_docall(L, 2, 1) != LUA_OK)
        return 1;
    if (!lua_istable(L, -1)) {
        lua_pop(L, 1);
        return 0;
    }
    many->run = run;
    lua_pushlightuserdata(L, many);
    lua_pushvalue(L, many->anchor);
    lua_pushcclosure(L, add_requests, 2);
    lua_insert(L, -2); /* [add_requests, more] */
    return host_docall(L, 1, 0) == LUA_OK ? 0 : 1;
}

/* core.http_get_many(requests, {deadline_ms=, each=}) → results, or nothing
 * with each. requests: an array of tables, each the url plus the options
 * core.http_get takes. All run at once in this thread; every request keeps
 * its own timeout and cap and the whole call ends by deadline_ms (default:
 * the longest timeout and one second). Each result is {status=, body=,
 * content_type=} or {error=cause}. Without each, the results come back as
 * an array in the order of the requests; with each, each(index, result) is
 * called as every result arrives (so an answer can be read and dropped
 * before the others end) and nothing is returned; each may return an array
 * of more requests (a conversation's next calls), which join the run with
 * the next indices, keep their own timeouts and end by the same deadline.
 * A request table must not change until the call returns (its strings are
 * used as they are). An error raised by each ends the call and is raised
 * again once everything is freed. */
static int core_http_get_many(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_Integer count = luaL_len(L, 1);
    luaL_argcheck(L, count >= 0 && count <= 1000000, 1, "too many requests");
    for (lua_Integer i = 1; i <= count; i++) { /* before anything is allocated */
        if (lua_geti(L, 1, i) != LUA_TTABLE)
            return luaL_error(L, "http_get_many: request %d is not a table", (int)i);
        lua_pop(L, 1);
    }
    struct lua_request *requests = calloc(count ? (size_t)count : 1, sizeof *requests);
    struct http_request *plain = calloc(count ? (size_t)count : 1, sizeof *plain);
    if (!requests || !plain) {
        free(requests);
        free(plain);
        return luaL_error(L, "not enough memory");
    }
    long longest = 0;
    for (lua_Integer i = 1; i <= count; i++) {
        read_request_at(L, 1, i, "the", &requests[i - 1]);
        plain[i - 1] = requests[i - 1].request;
        if (plain[i - 1].timeout_ms > longest)
            longest = plain[i - 1].timeout_ms;
    }
    long deadline_ms = (long)opt_int_field(L, 2, "deadline_ms", longest + 1000);

    struct many_context many = {.L = L};
    lua_newtable(L);
    many.anchor = lua_gettop(L);
    lua_getfield(L, 2, "each");
    if (lua_isfunction(L, -1)) {
        many.each = lua_gettop(L);
    } else {
        lua_pop(L, 1);
        lua_createtable(L, (int)count, 0);
        many.results = lua_gettop(L);
    }
    char cause[256];
    int said =
        http_get_many(plain, (size_t)count, deadline_ms, many_each, &many, cause, sizeof cause);
    for (lua_Integer i = 0; i < count; i++)
        lua_request_clear(&requests[i]);
    for (size_t i = 0; i < many.added_count; i++) {
        lua_request_clear(many.added[i]);
        free(many.added[i]);
    }
    free(many.added);
    free(requests);
    free(plain);
    if (said == -1)
        return luaL_error(L, "http_get_many: %s", cause);
    if (said)
        return lua_error(L); /* the error each raised, on top of the stack */
    return many.each ? 0 : 1;
}

/* core.now() → seconds since the epoch, with fractions (CLOCK_REALTIME). */
static int core_now(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9);
    return 1;
}

/* core.monotonic_ms() → milliseconds on the monotonic clock, the clock of
 * core.spawn's deadline_ms. */
static int core_monotonic_ms(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)spawn_clock_ms());
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

/* core.terminal_columns() → the width in columns of the terminal standard
 * output is, or nil when standard output is not a terminal (a pipe, a
 * file). A terminal that does not say its width counts as 80 columns. */
static int core_terminal_columns(lua_State *L)
{
    if (!isatty(STDOUT_FILENO)) {
        lua_pushnil(L);
        return 1;
    }
    struct winsize size;
    int known = ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0;
    lua_pushinteger(L, known ? size.ws_col : 80);
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

/* A block of C memory that Lua owns: a userdata whose __gc frees `block`,
 * so that what C gathered before calling into Lua (which can raise) is
 * never leaked. */
struct owned {
    void *block;
};

static int owned_gc(lua_State *L)
{
    struct owned *owned = luaL_checkudata(L, 1, "gpuledger.owned");
    free(owned->block);
    owned->block = NULL;
    return 0;
}

/* Pushes a new, empty owned block. */
static struct owned *push_owned(lua_State *L)
{
    struct owned *owned = lua_newuserdatauv(L, sizeof *owned, 0);
    owned->block = NULL;
    if (luaL_newmetatable(L, "gpuledger.owned")) {
        lua_pushcfunction(L, owned_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    return owned;
}

/* Grows the owned block to hold `size` bytes. Returns 0, or -1 (ENOMEM). */
static int owned_grow(struct owned *owned, size_t size)
{
    void *grown = realloc(owned->block, size);
    if (!grown)
        return -1;
    owned->block = grown;
    return 0;
}

/* core.read_file(path, max_bytes) → text, or nil, cause, errno name ("EFBIG"
 * when the file is longer than max_bytes: never a truncated read). The file
 * is read whole and closed before Lua sees a byte of it. */
static int core_read_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer max_bytes = luaL_checkinteger(L, 2);
    struct owned *text = push_owned(L);
    FILE *f = fopen(path, "rb");
    if (!f)
        return push_errno(L, path, errno);
    size_t total = 0, cap = 0;
    int err = 0;
    for (;;) {
        if (total == cap && owned_grow(text, cap = cap ? 2 * cap : 8192) != 0) {
            err = ENOMEM;
            break;
        }
        size_t n = fread((char *)text->block + total, 1, cap - total, f);
        total += n;
        if ((lua_Integer)total > max_bytes) {
            err = EFBIG;
            break;
        }
        if (n == 0) {
            if (ferror(f))
                err = errno ? errno : EIO;
            break;
        }
    }
    fclose(f);
    if (err == EFBIG) {
        lua_pushnil(L);
        lua_pushfstring(L, "%s: longer than %d bytes", path, (int)max_bytes);
        lua_pushstring(L, "EFBIG");
        return 3;
    }
    if (err)
        return push_errno(L, path, err);
    lua_pushlstring(L, text->block, total);
    return 1;
}

/* core.read_kmsg(path, max_bytes) → the kernel log records the buffer holds
 * now (kmsg.c: never blocks), or nil, cause (also past max_bytes). */
static int core_read_kmsg(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer max_bytes = luaL_checkinteger(L, 2);
    luaL_argcheck(L, max_bytes > 0, 2, "want a positive size");
    struct owned *text = push_owned(L); /* freed with it, should a push below raise */
    char *records, why[512];
    size_t len;
    if (kmsg_read(path, (size_t)max_bytes, &records, &len, why, sizeof why) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, why);
        return 2;
    }
    text->block = records;
    lua_pushlstring(L, records, len);
    return 1;
}

/* Orders two names (char *) as table.sort orders strings in the C locale. */
static int compare_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Pushes the `count` names of the owned block (char *[count]) sorted, as an
 * array. */
static void push_sorted_names(lua_State *L, struct owned *names, size_t count)
{
    char **list = names->block;
    if (count > 0)
        qsort(list, count, sizeof *list, compare_names);
    lua_createtable(L, (int)count, 0);
    for (size_t i = 0; i < count; i++) {
        lua_pushstring(L, list[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}

/* core.listdir(dir) → the sorted names in dir (without . and ..), or nil,
 * cause, errno name. The directory is read whole and closed first. */
static int core_listdir(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    struct owned *text = push_owned(L);    /* the names, each NUL-terminated */
    struct owned *offsets = push_owned(L); /* size_t[count]: where each starts */
    DIR *dir = opendir(path);
    if (!dir)
        return push_errno(L, path, errno);
    size_t count = 0, text_len = 0;
    int err = 0;
    struct dirent *entry;
    while ((entry = readdir(dir)) != NULL) {
        if (strcmp(entry->d_name, ".") == 0 || strcmp(entry->d_name, "..") == 0)
            continue;
        size_t len = strlen(entry->d_name) + 1;
        if (owned_grow(text, text_len + len) != 0 ||
            owned_grow(offsets, (count + 1) * sizeof(size_t)) != 0) {
            err = ENOMEM;
            break;
        }
        memcpy((char *)text->block + text_len, entry->d_name, len);
        ((size_t *)offsets->block)[count++] = text_len;
        text_len += len;
    }
    closedir(dir);
    if (err)
        return push_errno(L, path, err);
    struct owned *names = push_owned(L);
    if (count > 0 && owned_grow(names, count * sizeof(char *)) != 0)
        return luaL_error(L, "not enough memory");
    for (size_t i = 0; i < count; i++)
        ((char **)names->block)[i] = (char *)text->block + ((size_t *)offsets->block)[i];
    push_sorted_names(L, names, count);
    return 1;
}

/* core.embedded_files(prefix) → the sorted paths of the embedded scripts
 * that start with prefix ("rules/"). */
static int core_embedded_files(lua_State *L)
{
    size_t prefix_len;
    const char *prefix = luaL_checklstring(L, 1, &prefix_len);
    size_t count = 0;
    for (const struct embedded_file *file = embedded_files; file->path; file++)
        count += strncmp(file->path, prefix, prefix_len) == 0;
    struct owned *paths = push_owned(L);
    if (count > 0 && owned_grow(paths, count * sizeof(char *)) != 0)
        return luaL_error(L, "not enough memory");
    size_t n = 0;
    for (const struct embedded_file *file = embedded_files; file->path; file++)
        if (strncmp(file->path, prefix, prefix_len) == 0)
            ((const char **)paths->block)[n++] = file->path;
    push_sorted_names(L, paths, count);
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

/* ==== serve (serve_loop.c) and the history file (atomic_file.c) ==== */

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

/* ==== end of serve and the history file ==== */

static const luaL_Reg core_functions[] = {
    {"spawn", core_spawn},
    {"parse_csv", core_parse_csv},
    {"proc_cgroups", core_proc_cgroups},
    {"http_get", core_http_get},
    {"http_get_many", core_http_get_many},
    {"now", core_now},
    {"monotonic_ms", core_monotonic_ms},
    {"hostname", core_hostname},
    {"getenv", core_getenv},
    {"terminal_columns", core_terminal_columns},
    {"stat", core_stat},
    {"read_file", core_read_file},
    {"read_kmsg", core_read_kmsg},
    {"listdir", core_listdir},
    {"embedded_files", core_embedded_files},
    {"embedded_text", core_embedded_text},
    {"search_script", host_search_script},
    {"call_limited", core_call_limited},
    {"run_isolated", core_run_isolated}, /* isolate.c */
    /* serve and the history file */
    {"write_atomic", core_write_atomic},
    {"check_private_file", core_check_private_file}, /* core_history.c */
    {"keep_aside", core_keep_aside},                 /* core_history.c */
    {"serve", serve_loop_run},
    {NULL, NULL},
};

int host_open_core(lua_State *L)
{
    luaL_newlib(L, core_functions);
    lua_pushstring(L, GPULEDGER_VERSION);
    lua_setfield(L, -2, "version");
    return 1;
}
