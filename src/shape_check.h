#ifndef GPULEDGER_SHAPE_CHECK_H
#define GPULEDGER_SHAPE_CHECK_H
#include <lua.h>

/* require "gpuledger.shape_check": the table {check, check_item, length},
 * the walk of lua/gpuledger/sources/shape.lua's checks in C (shape_check.c;
 * the shapes themselves stay Lua tables). The host puts it in
 * package.loaded; under lua5.4 it is build/lua/gpuledger/shape_check.so. */
int luaopen_gpuledger_shape_check(lua_State *L);

#endif
