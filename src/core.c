/* gpuledger.core: every function a script can call into C, one prefix
 * (core_), one registration table (below). Each function checks its
 * arguments with luaL_check* (a wrong call raises) and reports a failure of
 * the world as nil plus a cause (core_lua.h). The bindings live beside what
 * they wrap: core_process.c (commands, CSV, /proc, the kernel log),
 * core_http.c, core_files.c (files and the history file), core_scripts.c
 * (embedded scripts, limited calls); host.c, isolate.c and serve_loop.c,
 * which run Lua themselves, hold their own. This file holds the table, the
 * clocks and what the process knows of its environment. The work itself is
 * done by the plain C units, which know nothing of Lua. */
#include "core.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <lauxlib.h>

#include "clock.h"
#include "core_lua.h"
#include "host.h"
#include "isolate.h"
#include "serve_loop.h"
#include "version.h"

/* core.now() → seconds since the epoch, with fractions (CLOCK_REALTIME). */
static int core_now(lua_State *L)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    lua_pushnumber(L, (lua_Number)ts.tv_sec + (lua_Number)ts.tv_nsec / 1e9);
    return 1;
}

/* core.monotonic_ms() → milliseconds on the monotonic clock (clock.h), the
 * clock of every deadline_ms a binding takes. */
static int core_monotonic_ms(lua_State *L)
{
    lua_pushinteger(L, (lua_Integer)monotonic_ms());
    return 1;
}

/* core.children_cpu_ms() → the CPU time, user and system, in milliseconds,
 * that this process's children have run, of those that ended and were
 * reaped (getrusage RUSAGE_CHILDREN): what a sequence of core.run_isolated
 * children computed is the difference of two readings. */
static int core_children_cpu_ms(lua_State *L)
{
    struct rusage usage;
    getrusage(RUSAGE_CHILDREN, &usage);
    lua_Integer ms = (lua_Integer)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1000 +
                     (lua_Integer)(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1000;
    lua_pushinteger(L, ms);
    return 1;
}

/* core.hostname() → this machine's name, or nil, cause. */
static int core_hostname(lua_State *L)
{
    char name[HOST_NAME_MAX + 1];
    if (gethostname(name, sizeof name) != 0)
        return push_errno(L, "hostname", errno);
    name[HOST_NAME_MAX] = '\0';
    lua_pushstring(L, name);
    return 1;
}

/* core.getenv(name) → the variable's value, or nil when unset. */
static int core_getenv(lua_State *L)
{
    const char *value = getenv(luaL_checkstring(L, 1));
    if (value)
        lua_pushstring(L, value);
    else
        lua_pushnil(L);
    return 1;
}

/* core.env_is_set(name) → true when the variable NAMEd is set and not
 * empty, else false: whether a request with token_env = name carries its
 * token (core_http.c), told without the value ever entering Lua. */
static int core_env_is_set(lua_State *L)
{
    const char *value = getenv(luaL_checkstring(L, 1));
    lua_pushboolean(L, value && *value);
    return 1;
}

/* core.terminal_columns() → the width in columns of the terminal standard
 * output is, or nil when standard output is not a terminal (a pipe, a
 * file). A terminal that does not say its width counts as 80 columns. */
static int core_terminal_columns(lua_State *L)
{
    if (!isatty(STDOUT_FILENO)) {
        lua_pushnil(L);
        return 1;
    }
    struct winsize size;
    int known = ioctl(STDOUT_FILENO, TIOCGWINSZ, &size) == 0 && size.ws_col > 0;
    lua_pushinteger(L, known ? size.ws_col : 80);
    return 1;
}

static const luaL_Reg core_functions[] = {
    {"spawn", core_spawn},
    {"spawn_all", core_spawn_all},
    {"parse_csv", core_parse_csv},
    {"json_array", core_json_array},
    {"json_element", core_json_element},
    {"proc_cgroups", core_proc_cgroups},
    {"read_kmsg", core_read_kmsg},
    {"http_get", core_http_get},
    {"http_get_many", core_http_get_many},
    {"stat", core_stat},
    {"read_file", core_read_file},
    {"read_file_from", core_read_file_from},
    {"listdir", core_listdir},
    {"write_atomic", core_write_atomic},
    {"check_private_file", core_check_private_file},
    {"keep_aside", core_keep_aside},
    {"embedded_files", core_embedded_files},
    {"embedded_text", core_embedded_text},
    {"call_limited", core_call_limited},
    {"search_script", host_search_script}, /* host.c */
    {"run_isolated", core_run_isolated},   /* isolate.c */
    {"serve", serve_loop_run},             /* serve_loop.c */
    {"serve_tls_supported", serve_loop_tls_supported},
    {"now", core_now},
    {"monotonic_ms", core_monotonic_ms},
    {"children_cpu_ms", core_children_cpu_ms},
    {"hostname", core_hostname},
    {"getenv", core_getenv},
    {"env_is_set", core_env_is_set},
    {"terminal_columns", core_terminal_columns},
    {NULL, NULL},
};

/* As host.h says: the table above, and core.version. */
int host_open_core(lua_State *L)
{
    luaL_newlib(L, core_functions);
    lua_pushstring(L, GPULEDGER_VERSION);
    lua_setfield(L, -2, "version");
    return 1;
}
