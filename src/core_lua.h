#ifndef GPULEDGER_CORE_LUA_H
#define GPULEDGER_CORE_LUA_H
#include <stddef.h>

#include <lua.h>

/* What every binding of gpuledger.core shares (core_lua.c): reading the
 * options table of a call, answering a failure of the world as nil plus a
 * cause, and C memory that Lua owns while a binding may raise. */

/* Reads an optional integer field of the options table at `index` (none
 * or nil: no table): fallback when absent; raises when it is no integer. */
lua_Integer opt_int_field(lua_State *L, int index, const char *field, lua_Integer fallback);

/* Reads an optional string field of the options table at `index`: NULL when
 * absent, empty or not a string (a number would be converted on the stack
 * only, and that copy is gone once popped). The string stays alive in the
 * table as long as the table is not changed. */
const char *opt_string_field(lua_State *L, int index, const char *field);

/* Pushes nil and cause, returning 2: a binding's answer when the world
 * failed it. */
int push_cause(lua_State *L, const char *cause);

/* Pushes nil, "<what>: <strerror(err)>" and the symbolic name of err
 * ("ENOENT", "EACCES", …; "EOTHER" for the rest), returning 3, for callers
 * that must tell one cause from another without reading the English. */
int push_errno(lua_State *L, const char *what, int err);

/* A block of C memory that Lua owns: a userdata whose __gc frees `block`,
 * so that what C gathered before calling into Lua (which can raise) is
 * never leaked. */
struct owned {
    void *block;
};

/* Pushes a new, empty owned block. */
struct owned *push_owned(lua_State *L);

/* Grows the owned block to hold `size` bytes. Returns 0, or -1 (ENOMEM). */
int owned_grow(struct owned *owned, size_t size);

/* Pushes the count names as an array of strings. */
void push_names(lua_State *L, const char *const *names, size_t count);

#endif
