#ifndef GPULEDGER_JSON_WRITE_H
#define GPULEDGER_JSON_WRITE_H
#include <lua.h>

/* require "gpuledger.json_write": the table {encode, number_text,
 * valid_utf8}, gpuledger.json's writer in C (json_write.c), whose rule for
 * bad UTF-8 text.valid_utf8 is too, and json_tree.h's functions (json.decode's
 * walks, text.cut and text.cut_strings). The host puts it in
 * package.loaded; under lua5.4 it is build/lua/gpuledger/json_write.so. */
int luaopen_gpuledger_json_write(lua_State *L);

#endif
