/* The core functions that guard the history file: thin Lua bindings of
 * atomic_file.c (contracts in core_history.h). */
#include "core_history.h"

#include <limits.h>

#include <lauxlib.h>

#include "atomic_file.h"

int core_check_private_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    char cause[PATH_MAX + 256];
    if (atomic_file_check(path, cause, sizeof cause) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, cause);
        return 2;
    }
    lua_pushboolean(L, 1);
    return 1;
}

int core_keep_aside(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    char aside[PATH_MAX], cause[PATH_MAX + 256];
    if (atomic_file_keep_aside(path, aside, sizeof aside, cause, sizeof cause) != 0) {
        lua_pushnil(L);
        lua_pushstring(L, cause);
        return 2;
    }
    lua_pushstring(L, aside);
    return 1;
}
