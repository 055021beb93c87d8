/* gpuledger's entry point, shaped like lua.c: a protected main that opens the
 * host, hands argv to the Lua command line (gpuledger.cli) and reports any
 * error that escapes once, with a traceback only under GPULEDGER_DEBUG=1. */
#include <stdio.h>
#include <stdlib.h>

#include <lauxlib.h>
#include <lua-cjson.h>
#include <lua.h>
#include <lualib.h>

#include "heap.h"
#include "host.h"
#include "http_client.h"

/* Runs in protected mode: argc and argv come as light userdata. Leaves the
 * exit status as an integer on the stack. */
static int pmain(lua_State *L)
{
    int argc = (int)lua_tointeger(L, 1);
    char **argv = (char **)lua_touserdata(L, 2);
    host_open(L);
    luaL_requiref(L, "cjson", luaopen_cjson, 0);
    lua_pop(L, 1);

    lua_getglobal(L, "require");
    lua_pushstring(L, "gpuledger.cli");
    if (host_docall(L, 1, 1) != LUA_OK) /* [.., cli] */
        return lua_error(L);
    lua_getfield(L, -1, "main"); /* [.., cli, main] */
    lua_createtable(L, argc, 0);
    for (int i = 1; i < argc; i++) {
        lua_pushstring(L, argv[i]);
        lua_rawseti(L, -2, i);
    } /* [.., cli, main, args] */
    if (host_docall(L, 1, 1) != LUA_OK)
        return lua_error(L);
    lua_Integer status = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
    lua_pushinteger(L, status);
    return 1;
}

/* What Lua calls on an error raised outside any protected call, as
 * lauxlib's does for a state luaL_newstate makes: says it on stderr (Lua
 * aborts after). A state lua_newstate makes has none of its own. */
static int panic(lua_State *L)
{
    const char *msg = lua_tostring(L, -1);
    fprintf(stderr, "gpuledger: PANIC: unprotected error in call to Lua API (%s)\n",
            msg ? msg : "error object is not a string");
    return 0;
}

/* Runs the command line in a fresh Lua state (pmain) and exits with the
 * status it returns, or 1 after one line on stderr when an error escapes.
 * The state's blocks come from heap.c's size classes, or from malloc in
 * the sanitizer build, where AddressSanitizer then watches them too. */
int main(int argc, char **argv)
{
    http_client_init();
#ifdef GPULEDGER_LUA_ON_MALLOC
    lua_State *L = luaL_newstate();
#else
    lua_State *L = lua_newstate(heap_lua_alloc, NULL);
#endif
    if (L == NULL) {
        fprintf(stderr, "gpuledger: cannot create the Lua state: not enough memory\n");
        return 1;
    }
    lua_atpanic(L, panic);
    lua_pushcfunction(L, pmain);
    lua_pushinteger(L, argc);
    lua_pushlightuserdata(L, argv);
    int status = lua_pcall(L, 2, 1, 0);
    int exit_status;
    if (status == LUA_OK) {
        exit_status = (int)lua_tointeger(L, -1);
    } else {
        const char *msg = lua_tostring(L, -1);
        fprintf(stderr, "gpuledger: %s\n", msg ? msg : "(error without a message)");
        exit_status = 1;
    }
    fflush(stdout);
    lua_close(L);
    return exit_status;
}
