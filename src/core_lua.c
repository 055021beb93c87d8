/* What every binding of gpuledger.core shares (contracts in core_lua.h). */
#include "core_lua.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

/* As core_lua.h says. */
lua_Integer opt_int_field(lua_State *L, int index, const char *field, lua_Integer fallback)
{
    if (lua_isnoneornil(L, index))
        return fallback;
    lua_getfield(L, index, field);
    lua_Integer value = luaL_optinteger(L, -1, fallback);
    lua_pop(L, 1);
    return value;
}

/* As core_lua.h says. */
const char *opt_string_field(lua_State *L, int index, const char *field)
{
    lua_getfield(L, index, field);
    const char *value = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : NULL;
    lua_pop(L, 1);
    return value && *value ? value : NULL;
}

/* As core_lua.h says. */
int push_cause(lua_State *L, const char *cause)
{
    lua_pushnil(L);
    lua_pushstring(L, cause);
    return 2;
}

/* The symbolic name of errno value err ("ENOENT"). */
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

/* As core_lua.h says. */
int push_errno(lua_State *L, const char *what, int err)
{
    lua_pushnil(L);
    lua_pushfstring(L, "%s: %s", what, strerror(err));
    lua_pushstring(L, errno_name(err));
    return 3;
}

/* __gc of an owned block: frees it. */
static int owned_gc(lua_State *L)
{
    struct owned *owned = luaL_checkudata(L, 1, "gpuledger.owned");
    free(owned->block);
    owned->block = NULL;
    return 0;
}

/* As core_lua.h says. */
struct owned *push_owned(lua_State *L)
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

/* As core_lua.h says. */
int owned_grow(struct owned *owned, size_t size)
{
    void *grown = realloc(owned->block, size);
    if (!grown)
        return -1;
    owned->block = grown;
    return 0;
}

/* As core_lua.h says. */
void push_names(lua_State *L, const char *const *names, size_t count)
{
    lua_createtable(L, (int)count, 0);
    for (size_t i = 0; i < count; i++) {
        lua_pushstring(L, names[i]);
        lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
}
