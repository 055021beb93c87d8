#ifndef GPULEDGER_CORE_HISTORY_H
#define GPULEDGER_CORE_HISTORY_H
#include <lua.h>

/* The core functions that guard the history file (atomic_file.c), entries
 * of core.c's table. */

/* core.check_private_file(path) → true, or nil, cause: the file (missing is
 * fine) and its directory could have been written by this user (or root)
 * alone; cause "…: refused: the directory /x is writable by other users
 * (mode 1777)" and the like. Call it before reading the history. */
int core_check_private_file(lua_State *L);

/* core.keep_aside(path) → the new name ("<path>.corrupt-20261130T104500Z"),
 * or nil, cause: renames a file that could not be used out of the way so
 * that writing a fresh one loses nothing. */
int core_keep_aside(lua_State *L);

#endif
