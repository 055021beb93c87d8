/* The bindings of gpuledger.core that ask over HTTP: one GET
 * (http_client.c) and many at once in this thread (http_multi.c). A
 * request comes from a Lua options table; a token named by its variable is
 * read here, sent, and never enters Lua nor a cause. */
#include "core.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "core_lua.h"
#include "host.h"
#include "http_client.h"
#include "http_multi.h"

#define MAX_HEADERS 16

/* A request read from a Lua options table, with the token line it owns. */
struct lua_request {
    struct http_request request;
    const char *headers[MAX_HEADERS + 2];
    char *token_line; /* "<token_header>: <value>", or NULL */
};

/* Fills *out from the options table at index (strings stay alive in that
 * table): unix_socket, headers (array of "Name: value"), timeout_ms,
 * max_bytes, ca_file, ca_path, client_cert, client_key, tls_server_name,
 * username + password (basic authentication; the password is the request's
 * secret), and
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
    request->username = opt_string_field(L, index, "username");
    request->password = opt_string_field(L, index, "password");
    request->secret = request->password; /* never shown, even when a server echoes it */

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
int core_http_get(lua_State *L)
{
    const char *url = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    struct lua_request request;
    read_lua_request(L, 2, url, &request);
    struct http_response response = {0};
    char cause[512];
    int failed = http_get(&request.request, &response, cause, sizeof cause);
    lua_request_clear(&request);
    if (failed)
        return push_cause(L, cause);
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
 * the longest timeout and one second), the time spent in each not counted.
 * Each result is {status=, body=,
 * content_type=} or {error=cause}. Without each, the results come back as
 * an array in the order of the requests; with each, each(index, result) is
 * called as every result arrives (so an answer can be read and dropped
 * before the others end) and nothing is returned; each may return an array
 * of more requests (a conversation's next calls), which join the run with
 * the next indices, keep their own timeouts and end by the same deadline.
 * A request table must not change until the call returns (its strings are
 * used as they are). An error raised by each ends the call and is raised
 * again once everything is freed. */
int core_http_get_many(lua_State *L)
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
