/* The Lua host: where scripts come from, and how a script is stopped when it
 * runs too long or grows too big. Everything here speaks the Lua C API; the
 * functions scripts call live in core.c. */
#include "host.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <lauxlib.h>
#include <lualib.h>

#include "embedded.h"
#include "files.h"
#include "json_write.h"
#include "shape_check.h"

#define MAX_SCRIPT_BYTES (4 << 20)

/* As host.h says. */
int host_debug(void)
{
    const char *value = getenv("GPULEDGER_DEBUG");
    return value != NULL && strcmp(value, "1") == 0;
}

/* As host.h says. */
const struct embedded_file *host_embedded_file(const char *path)
{
    for (const struct embedded_file *file = embedded_files; file->path; file++)
        if (strcmp(file->path, path) == 0)
            return file;
    return NULL;
}

/* Reads a whole site script (files.c). Returns a malloc'd NUL-terminated
 * buffer, or NULL with errno set (ENOENT when there is no such file, EISDIR
 * or EINVAL when it is no regular file, EFBIG past the cap). */
static char *read_script_file(const char *path, size_t *len)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return NULL;
    if (!S_ISREG(st.st_mode)) {
        errno = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        return NULL;
    }
    char *text;
    return file_read_whole(path, MAX_SCRIPT_BYTES, &text, len) == 0 ? text : NULL;
}

/* Writes prefix + name with dots turned into slashes + ".lua" into out.
 * Returns 0, or -1 when it does not fit. */
static int script_path(char *out, size_t cap, const char *prefix, const char *name)
{
    int n = snprintf(out, cap, "%s%s.lua", prefix, name);
    if (n < 0 || (size_t)n >= cap)
        return -1;
    for (char *c = out + strlen(prefix); *c && strcmp(c, ".lua") != 0; c++)
        if (*c == '.')
            *c = '/';
    return 0;
}

/* As host.h says. */
int host_search_script(lua_State *L)
{
    const char *name = luaL_checkstring(L, 1);
    const char *site_dir = luaL_optstring(L, 2, "");
    const char *embedded_prefix = luaL_checkstring(L, 3);
    char site_path[4096], embedded_path[512];
    if (*site_dir) {
        char dir_prefix[4096];
        snprintf(dir_prefix, sizeof dir_prefix, "%s/", site_dir);
        if (script_path(site_path, sizeof site_path, dir_prefix, name) == 0) {
            size_t len = 0;
            char *text = read_script_file(site_path, &len);
            if (!text && errno != ENOENT && errno != ENOTDIR) {
                lua_pushnil(L);
                lua_pushfstring(L, "cannot read %s: %s", site_path, strerror(errno));
                return 2;
            }
            if (text) {
                lua_pushlstring(L, text, len); /* can raise: free first */
                free(text);
                lua_pushfstring(L, "@%s", site_path);
                lua_pushliteral(L, "site");
                return 3;
            }
        }
    }
    const struct embedded_file *file = NULL;
    if (script_path(embedded_path, sizeof embedded_path, embedded_prefix, name) == 0)
        file = host_embedded_file(embedded_path);
    if (!file) {
        lua_pushnil(L);
        lua_pushfstring(L, "no script '%s' in %s or embedded", name,
                        *site_dir ? site_dir : "(no directory)");
        return 2;
    }
    lua_pushlstring(L, (const char *)file->data, file->size);
    lua_pushfstring(L, "=[embedded] %s", file->path);
    lua_pushliteral(L, "embedded");
    return 3;
}

/* The searcher the host starts with: modules from the embedded scripts
 * only (the site scripts directory is not known before the command line is
 * read; gpuledger.sandbox installs the searcher that looks there first). */
static int search_embedded(lua_State *L)
{
    luaL_checkstring(L, 1);
    lua_settop(L, 1);
    lua_pushcfunction(L, host_search_script);
    lua_pushvalue(L, 1);
    lua_pushliteral(L, "");
    lua_pushliteral(L, "lua/");
    lua_call(L, 3, 2); /* [name, text, chunkname] or [name, nil, why] */
    if (lua_isnil(L, 2))
        return 1; /* why: where it looked */
    size_t len;
    const char *text = lua_tolstring(L, 2, &len);
    const char *chunkname = lua_tostring(L, 3);
    /* Embedded: may be bytecode (a release build embeds it precompiled). */
    if (luaL_loadbufferx(L, text, len, chunkname, "bt") != LUA_OK)
        return lua_error(L);
    lua_pushstring(L, chunkname + 1); /* [.., loader, "where"] */
    return 2;
}

/* As host.h says. */
void host_open(lua_State *L)
{
    luaL_openlibs(L);
    luaL_requiref(L, "gpuledger.core", host_open_core, 0);
    lua_pop(L, 1);
    luaL_requiref(L, "gpuledger.json_write", luaopen_gpuledger_json_write, 0);
    lua_pop(L, 1);
    luaL_requiref(L, "gpuledger.shape_check", luaopen_gpuledger_shape_check, 0);
    lua_pop(L, 1);

    /* package.searchers = { search_embedded }: no ./?.lua, no C modules. */
    lua_getglobal(L, "package"); /* [package] */
    lua_createtable(L, 1, 0);    /* [package, searchers] */
    lua_pushcfunction(L, search_embedded);
    lua_rawseti(L, -2, 1);
    lua_setfield(L, -2, "searchers"); /* [package] */
    lua_pushstring(L, "");
    lua_setfield(L, -2, "path");
    lua_pushstring(L, "");
    lua_setfield(L, -2, "cpath");
    lua_pop(L, 1);
}

/* Message handler of host_docall, as lua.c's: the message (an error object
 * that is not a string by its __tostring, else by its type), with a
 * traceback under GPULEDGER_DEBUG=1. */
static int msghandler(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    if (msg == NULL) {
        if (luaL_callmeta(L, 1, "__tostring") && lua_type(L, -1) == LUA_TSTRING)
            return 1;
        msg = lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
    }
    if (host_debug())
        luaL_traceback(L, L, msg, 1);
    return 1;
}

/* As host.h says. */
int host_docall(lua_State *L, int nargs, int nresults)
{
    int base = lua_gettop(L) - nargs; /* the function's index */
    lua_pushcfunction(L, msghandler);
    lua_insert(L, base);
    int status = lua_pcall(L, nargs, nresults, base);
    lua_remove(L, base);
    return status;
}

/* ---- limits on a call ---------------------------------------------------- */

#define HOOK_EVERY 1000

struct call_limits {
    lua_State *L;
    int over_budget; /* the heap grew past max_bytes: stop at the next instruction */
    lua_Alloc inner_alloc;
    void *inner_ud;
    size_t max_bytes;
    long long grown; /* net bytes allocated since the call began */
    long max_instructions;
    long instructions_left;
};

static struct call_limits *active_limits;

static void instruction_hook(lua_State *L, lua_Debug *ar);

/* Allocator wrapped around the state's own for the length of a limited call.
 * Growth past the budget is allowed once, up to twice the budget, and arms
 * the hook to stop the call at its next instruction, naming the line
 * (lua_sethook may be called at any time: lua.c calls it from a signal
 * handler). Growth past twice the budget is refused (Lua then collects,
 * retries, and raises "not enough memory": one huge request, such as
 * string.rep of 1 GB). Frees always succeed. */
static void *limited_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    struct call_limits *limits = ud;
    size_t old_size = ptr ? osize : 0;
    if (nsize > old_size && limits->max_bytes > 0 &&
        limits->grown + (long long)(nsize - old_size) > 2 * (long long)limits->max_bytes)
        return NULL;
    void *block = limits->inner_alloc(limits->inner_ud, ptr, osize, nsize);
    if (block || nsize == 0)
        limits->grown += (long long)nsize - (long long)old_size;
    if (limits->max_bytes > 0 && limits->grown > (long long)limits->max_bytes &&
        !limits->over_budget) {
        limits->over_budget = 1;
        lua_sethook(limits->L, instruction_hook, LUA_MASKCOUNT, 1);
    }
    return block;
}

/* Raises "<file>:<line>: <what>" for the line that is running (level 0 in
 * a hook, where luaL_error would name its caller). */
static int raise_here(lua_State *L, const char *what)
{
    lua_Debug running;
    if (lua_getstack(L, 0, &running) && lua_getinfo(L, "Sl", &running) && running.currentline > 0)
        lua_pushfstring(L, "%s:%d: %s", running.short_src, running.currentline, what);
    else
        lua_pushstring(L, what);
    return lua_error(L);
}

/* Count hook: stops the call once its instructions are spent, or once the
 * allocator saw the heap grow past its byte budget. Once stopped it raises
 * at every instruction, so a script that catches the error with pcall
 * cannot keep going. */
static void instruction_hook(lua_State *L, lua_Debug *ar)
{
    (void)ar;
    struct call_limits *limits = active_limits;
    if (!limits)
        return;
    char what[128];
    limits->instructions_left -= HOOK_EVERY;
    if (limits->max_instructions > 0 && limits->instructions_left <= 0) {
        snprintf(what, sizeof what, "stopped after running past its budget of %ld instructions",
                 limits->max_instructions);
    } else if (limits->over_budget) {
        snprintf(what, sizeof what, "stopped after growing the heap past its budget of %zu bytes",
                 limits->max_bytes);
    } else {
        return;
    }
    lua_sethook(L, instruction_hook, LUA_MASKCOUNT, 1);
    raise_here(L, what);
}

/* Message handler of a limited call: turns the error into a table
 * {file, line, message}, the way it is shown to people. A string raised at
 * a line of a Lua function ("<short name>:<line>: what", from error(),
 * a runtime error or raise_here) gives that function's whole file name
 * (Lua shortens names past LUA_IDSIZE in the message), its line and the
 * bare message; any other string is the message alone. An error that is
 * not a string is named by its type: no metamethod of it runs. */
static int locate_error(lua_State *L)
{
    const char *message = lua_tostring(L, 1);
    lua_createtable(L, 0, 3);
    if (!message || lua_type(L, 1) != LUA_TSTRING) {
        lua_pushfstring(L, "(error object is a %s value)", luaL_typename(L, 1));
        lua_setfield(L, -2, "message");
        return 1;
    }
    lua_Debug frame;
    for (int level = 1; lua_getstack(L, level, &frame); level++) {
        if (!lua_getinfo(L, "Sl", &frame) || frame.currentline <= 0)
            continue;
        char where[LUA_IDSIZE + 32];
        int n = snprintf(where, sizeof where, "%s:%d: ", frame.short_src, frame.currentline);
        if (n > 0 && (size_t)n < sizeof where && strncmp(message, where, (size_t)n) == 0) {
            lua_pushstring(L, frame.source[0] == '@' ? frame.source + 1 : frame.short_src);
            lua_setfield(L, -2, "file");
            lua_pushinteger(L, frame.currentline);
            lua_setfield(L, -2, "line");
            message += n;
            break;
        }
    }
    lua_pushstring(L, message);
    lua_setfield(L, -2, "message");
    return 1;
}

/* As host.h says. */
int host_call_limited(lua_State *L, int nargs, int nresults, long max_instructions,
                      size_t max_bytes)
{
    struct call_limits limits = {0};
    limits.L = L;
    limits.inner_alloc = lua_getallocf(L, &limits.inner_ud);
    limits.max_bytes = max_bytes;
    limits.max_instructions = max_instructions;
    limits.instructions_left = max_instructions;

    struct call_limits *outer = active_limits;
    lua_Hook outer_hook = lua_gethook(L);
    int outer_mask = lua_gethookmask(L);
    int outer_count = lua_gethookcount(L);

    active_limits = &limits;
    lua_setallocf(L, limited_alloc, &limits);
    if (max_instructions > 0 || max_bytes > 0)
        lua_sethook(L, instruction_hook, LUA_MASKCOUNT, HOOK_EVERY);
    int handler = lua_gettop(L) - nargs; /* under the function and its arguments */
    lua_pushcfunction(L, locate_error);
    lua_insert(L, handler);
    int status = lua_pcall(L, nargs, nresults, handler);
    lua_remove(L, handler);
    lua_sethook(L, outer_hook, outer_mask, outer_count);
    lua_setallocf(L, limits.inner_alloc, limits.inner_ud);
    active_limits = outer;
    return status;
}
