#ifndef GPULEDGER_JSON_TREE_H
#define GPULEDGER_JSON_TREE_H
#include <lua.h>

/* The walks over trees of Lua tables, as lua-cjson decodes them, that
 * gpuledger.json_write gives Lua (json_tree.c): json.decode's marking of
 * empty arrays and its pass that turns the marks and nulls into what they
 * stand for, and text.cut with text.cut_strings. */

/* Adds mark_empty_arrays, normalise, cut, cut_strings and CUT_MARK to the
 * table on top of the stack. */
void json_tree_add_functions(lua_State *L);

#endif
