/* The bindings of gpuledger.core that reach the scripts and the host that
 * runs them (host.c): the scripts built into the binary, and a call stopped
 * once it runs too long or grows too big. (core.search_script, the one
 * lookup of a script, is host.c's own: the host's searcher uses it.) */
#include "core.h"

#include <string.h>

#include <lauxlib.h>

#include "core_lua.h"
#include "embedded.h"
#include "files.h"
#include "host.h"

/* core.embedded_files(prefix) → the sorted paths of the embedded scripts
 * that start with prefix ("rules/"). */
int core_embedded_files(lua_State *L)
{
    size_t prefix_len;
    const char *prefix = luaL_checklstring(L, 1, &prefix_len);
    size_t count = 0;
    for (const struct embedded_file *file = embedded_files; file->path; file++)
        count += strncmp(file->path, prefix, prefix_len) == 0;
    struct owned *paths = push_owned(L);
    if (count > 0 && owned_grow(paths, count * sizeof(char *)) != 0)
        return luaL_error(L, "not enough memory");
    const char **list = paths->block;
    size_t n = 0;
    for (const struct embedded_file *file = embedded_files; file->path; file++)
        if (strncmp(file->path, prefix, prefix_len) == 0)
            list[n++] = file->path;
    names_sort(list, count);
    push_names(L, list, count);
    return 1;
}

/* core.embedded_text(path) → the text of the embedded script at path
 * ("rules/thresholds.lua") and its chunk name, or nil. */
int core_embedded_text(lua_State *L)
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
int core_call_limited(lua_State *L)
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
