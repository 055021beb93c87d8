/* gpuledger.core as a loadable module (build/lua/gpuledger/core.so), so the
 * busted specs running under lua5.4 call the same C code as the binary. */
#include <lua.h>

#include "host.h"

int luaopen_gpuledger_core(lua_State *L);

/* require "gpuledger.core" from lua5.4: the core table. */
int luaopen_gpuledger_core(lua_State *L)
{
    return host_open_core(L);
}
