/* The bindings of gpuledger.core that read a large JSON text one array
 * element at a time (json_scan.c), so that Lua decodes each element alone
 * instead of the whole text. Positions are Lua's: 1 is the first byte. */
#include "core.h"

#include <lauxlib.h>

#include "core_lua.h"
#include "json_scan.h"

/* The most keys core.json_array's path may have. */
#define PATH_CAP 8

/* core.json_array(text, key, …) → open, close, count: the positions of the
 * '[' and ']' of the array at the keys' path (core.json_array(t, "data",
 * "result") for {"data": {"result": [...]}}) and its number of elements;
 * false when text is JSON without an array there; or nil, cause ("byte 7:
 * want a value, got '<'") when text is no JSON (json_scan_array). */
int core_json_array(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    int npath = lua_gettop(L) - 1;
    luaL_argcheck(L, npath <= PATH_CAP, PATH_CAP + 2, "too many keys");
    const char *path[PATH_CAP];
    for (int i = 0; i < npath; i++)
        path[i] = luaL_checkstring(L, i + 2);
    struct json_array found;
    char cause[160];
    int got = json_scan_array(text, len, path, (size_t)npath, &found, cause, sizeof cause);
    if (got < 0)
        return push_cause(L, cause);
    if (got == 0) {
        lua_pushboolean(L, 0);
        return 1;
    }
    lua_pushinteger(L, (lua_Integer)found.open + 1);
    lua_pushinteger(L, (lua_Integer)found.close + 1);
    lua_pushinteger(L, (lua_Integer)found.count);
    return 3;
}

/* core.json_element(text, at) → first, last: the positions of the first and
 * last bytes of the array element after position at (the array's '[', as
 * core.json_array gives it, or the last byte of the element before), for
 * text:sub(first, last); nil where the array closes (json_next_element). */
int core_json_element(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    lua_Integer at = luaL_checkinteger(L, 2);
    luaL_argcheck(L, at >= 1 && (size_t)at <= len, 2, "not a position in the text");
    size_t first, end;
    if (!json_next_element(text, len, (size_t)at - 1, &first, &end)) {
        lua_pushnil(L);
        return 1;
    }
    lua_pushinteger(L, (lua_Integer)first + 1);
    lua_pushinteger(L, (lua_Integer)end);
    return 2;
}
