#ifndef GPULEDGER_CORE_H
#define GPULEDGER_CORE_H
#include <lua.h>

/* The functions of gpuledger.core, each a lua_CFunction entered in core.c's
 * one registration table, grouped by the file that holds them. Each
 * function's contract is the comment above its definition. */

/* core_process.c: commands, nvidia-smi's CSV, /proc, the kernel log. */
int core_spawn(lua_State *L);
int core_spawn_all(lua_State *L);
int core_parse_csv(lua_State *L);
int core_proc_cgroups(lua_State *L);
int core_read_kmsg(lua_State *L);

/* core_http.c: one GET, and many at once. */
int core_http_get(lua_State *L);
int core_http_get_many(lua_State *L);

/* core_json.c: a large JSON text read one array element at a time. */
int core_json_array(lua_State *L);
int core_json_element(lua_State *L);

/* core_files.c: files and directories, and the history file's guards. */
int core_stat(lua_State *L);
int core_read_file(lua_State *L);
int core_read_file_from(lua_State *L);
int core_listdir(lua_State *L);
int core_write_atomic(lua_State *L);
int core_check_private_file(lua_State *L);
int core_keep_aside(lua_State *L);

/* core_scripts.c: the embedded scripts and limited calls. */
int core_embedded_files(lua_State *L);
int core_embedded_text(lua_State *L);
int core_call_limited(lua_State *L);

#endif
