#ifndef GPULEDGER_HOST_H
#define GPULEDGER_HOST_H
#include <lua.h>

#include "embedded.h"

/* Prepares a fresh state for gpuledger: the standard libraries,
 * gpuledger.core, gpuledger.json_write (json_write.h) and
 * gpuledger.shape_check (shape_check.h) in package.loaded,
 * and package.searchers replaced by one searcher of the embedded
 * gpuledger.* scripts (gpuledger.sandbox installs the one that looks in the
 * site scripts directory first, once the command line names it). Raises a
 * Lua error on failure (call it protected). */
void host_open(lua_State *L);

/* Opens gpuledger.core and leaves its table on the stack (luaopen style). */
int host_open_core(lua_State *L);

/* core.search_script(name, site_dir, embedded_prefix) → text, chunkname,
 * "site" or "embedded"; or nil and why. The one lookup of a script, as
 * package.searchpath is of a file: `name` with dots as slashes + ".lua" in
 * site_dir ("" for none), else embedded_prefix + the same among the
 * embedded scripts ("hot", dir, "rules/" for a rule; "gpuledger.render.table",
 * dir, "lua/" for a module). Chunk names are "@/site/path.lua" and
 * "=[embedded] rules/hot.lua". A site file that exists but cannot be read
 * is nil and why, not the embedded copy. */
int host_search_script(lua_State *L);

/* Calls the function under its nargs arguments like lua_pcall, with the one
 * message handler of the program (main.c and the serve loop; as lua.c's
 * docall): the error message, with a traceback under GPULEDGER_DEBUG=1.
 * Returns the lua_pcall status with the results or the message on the stack. */
int host_docall(lua_State *L, int nargs, int nresults);

/* The embedded script at `path` ("rules/hot.lua"), or NULL. */
const struct embedded_file *host_embedded_file(const char *path);

/* Like lua_pcall(L, nargs, nresults, 0) on a function pushed before its
 * nargs arguments, but stops the call with an error once it has run about
 * max_instructions VM instructions ("the rule ran past its budget of N
 * instructions") or grown the heap by more than max_bytes ("…past its budget
 * of N bytes", or Lua's "not enough memory" for one request past twice the
 * budget); 0 lifts either limit. Returns the lua_pcall status with the
 * results, or the error, on the stack: a table {file, line, message} (file
 * whole, however long; file and line only when raised at a Lua line), or
 * the string "not enough memory". Not reentrant. */
int host_call_limited(lua_State *L, int nargs, int nresults, long max_instructions,
                      size_t max_bytes);

/* 1 when GPULEDGER_DEBUG=1 asks for tracebacks in error reports. */
int host_debug(void);

#endif
