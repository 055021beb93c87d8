#ifndef GPULEDGER_JSON_READ_H
#define GPULEDGER_JSON_READ_H
#include <lua.h>

/* json.decode's quick way (json_read.c): the common JSON text, an object or
 * an array as RFC 8259 writes it, read in one pass into the tables
 * json.decode gives (lua-cjson's values, its nulls taken out, its empty
 * arrays marked), each table made at its final size. A text it does not
 * take is left to lua-cjson and the walks of json_tree.c, which give the
 * same value, or cjson's message. */

/* Adds read to the table on top of the stack. */
void json_read_add_functions(lua_State *L);

#endif
