/* The bindings of gpuledger.core that gather from the machine itself: run
 * a command and capture what it says (spawn_capture.c), read nvidia-smi's
 * CSV (csv.c), the owners of processes from /proc (procfs.c) and the
 * kernel log (kmsg.c). Each is a thin binding of its C unit; the Lua side
 * names the source and the address. */
#include "core.h"

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>

#include <lauxlib.h>

#include "core_lua.h"
#include "csv.h"
#include "kmsg.h"
#include "procfs.h"
#include "spawn_capture.h"

/* Reads the argv table at index (1 to argv_cap - 1 strings, which the table
 * keeps alive) into argv, NULL-terminated; raises naming argument arg when
 * it is not one. */
static void read_argv(lua_State *L, int index, int arg, const char **argv, lua_Integer argv_cap)
{
    luaL_checktype(L, index, LUA_TTABLE);
    lua_Integer argc = luaL_len(L, index);
    if (argc < 1 || argc >= argv_cap)
        luaL_argerror(L, arg, lua_pushfstring(L, "want 1 to %d arguments", (int)(argv_cap - 1)));
    for (lua_Integer i = 1; i <= argc; i++) {
        lua_geti(L, index, i);
        argv[i - 1] = luaL_checkstring(L, -1); /* kept alive by the argv table */
        lua_pop(L, 1);
    }
    argv[argc] = NULL;
}

/* The limits of a spawn from its options table at index: deadline_ms, an
 * instant of core.monotonic_ms() (0: none); timeout_ms after the start
 * (default 10000 without a deadline); max_bytes (default 4 MiB). */
static void read_limits(lua_State *L, int index, long long *deadline_ms, int *timeout_ms,
                        size_t *max_bytes)
{
    *deadline_ms = (long long)opt_int_field(L, index, "deadline_ms", 0);
    *timeout_ms = (int)opt_int_field(L, index, "timeout_ms", *deadline_ms > 0 ? 0 : 10000);
    luaL_argcheck(L, *timeout_ms > 0 || *deadline_ms > 0, index,
                  "timeout_ms or deadline_ms must be more than 0");
    *max_bytes = (size_t)opt_int_field(L, index, "max_bytes", 4 << 20);
}

/* core.spawn(argv, {timeout_ms=, deadline_ms=, max_bytes=}) → stdout,
 * stderr, exit_status (exit_status is nil when a signal ended it), or nil,
 * cause. Runs argv[1] without a shell (spawn_capture.c) until timeout_ms
 * after it starts (default 10000 without a deadline) or deadline_ms, an
 * instant of core.monotonic_ms(), whichever comes first. */
int core_spawn(lua_State *L)
{
    const char *argv[256];
    read_argv(L, 1, 1, argv, 256);
    long long deadline_ms;
    int timeout_ms;
    size_t max_bytes;
    read_limits(L, 2, &deadline_ms, &timeout_ms, &max_bytes);

    struct spawn_result result = {0};
    char cause[256];
    if (spawn_capture((char *const *)argv, timeout_ms, deadline_ms, max_bytes, &result, cause,
                      sizeof cause) != 0)
        return push_cause(L, cause);
    lua_pushlstring(L, result.out, result.out_len);
    lua_pushlstring(L, result.err, result.err_len);
    if (result.exit_status >= 0)
        lua_pushinteger(L, result.exit_status);
    else
        lua_pushnil(L);
    spawn_result_free(&result);
    return 3;
}

/* The most arguments of one command of core.spawn_all. */
#define SPAWN_ALL_ARGS 32

/* core.spawn_all(commands, {timeout_ms=, deadline_ms=, max_bytes=}) →
 * results: runs the commands (argv tables, at most SPAWN_ALL_MAX, each of
 * fewer than SPAWN_ALL_ARGS arguments) at the same time (spawn_capture_all),
 * each under the limits core.spawn takes, so that one deadline bounds them
 * all, and returns when every one has ended. results[i] is the i-th
 * command's {out=, err=, status=} (status nil when a signal ended it), or
 * {error=cause}. */
int core_spawn_all(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer count = luaL_len(L, 1);
    luaL_argcheck(L, count <= SPAWN_ALL_MAX, 1, "too many commands at once");
    luaL_checkstack(L, (int)count + 8, "core.spawn_all");
    const char *argvs[SPAWN_ALL_MAX][SPAWN_ALL_ARGS];
    struct spawn_job jobs[SPAWN_ALL_MAX];
    for (lua_Integer i = 1; i <= count; i++) {
        lua_geti(L, 1, i); /* stays on the stack, so its strings stay alive */
        read_argv(L, -1, 1, argvs[i - 1], SPAWN_ALL_ARGS);
        jobs[i - 1].argv = (char *const *)argvs[i - 1];
    }
    long long deadline_ms;
    int timeout_ms;
    size_t max_bytes;
    read_limits(L, 2, &deadline_ms, &timeout_ms, &max_bytes);

    spawn_capture_all(jobs, (size_t)count, timeout_ms, deadline_ms, max_bytes);
    lua_createtable(L, (int)count, 0);
    for (lua_Integer i = 0; i < count; i++) {
        struct spawn_job *job = &jobs[i];
        lua_createtable(L, 0, 3);
        if (job->rc != 0) {
            lua_pushstring(L, job->cause);
            lua_setfield(L, -2, "error");
        } else {
            lua_pushlstring(L, job->result.out, job->result.out_len);
            lua_setfield(L, -2, "out");
            lua_pushlstring(L, job->result.err, job->result.err_len);
            lua_setfield(L, -2, "err");
            if (job->result.exit_status >= 0) {
                lua_pushinteger(L, job->result.exit_status);
                lua_setfield(L, -2, "status");
            }
            spawn_result_free(&job->result);
        }
        lua_rawseti(L, -2, i + 1);
    }
    return 1;
}

/* core.parse_csv(text) → rows (an array of arrays of strings), or nil, cause
 * (csv.c: nvidia-smi's CSV, Go encoding/csv rules). */
int core_parse_csv(lua_State *L)
{
    size_t len;
    const char *text = luaL_checklstring(L, 1, &len);
    struct csv_table table = {0};
    char cause[256];
    if (csv_parse(text, len, &table, cause, sizeof cause) != 0)
        return push_cause(L, cause);
    lua_createtable(L, (int)table.nrows, 0);
    for (size_t r = 0; r < table.nrows; r++) {
        const struct csv_row *row = &table.rows[r];
        lua_createtable(L, (int)row->nfields, 0);
        for (size_t f = 0; f < row->nfields; f++) {
            lua_pushstring(L, row->fields[f]);
            lua_rawseti(L, -2, (lua_Integer)f + 1);
        }
        lua_rawseti(L, -2, (lua_Integer)r + 1);
    }
    csv_free(&table);
    return 1;
}

/* Sets field to a uid and, when the passwd file names it, name_field to its
 * name. */
static void set_uid_fields(lua_State *L, const char *passwd_path, long uid, const char *field,
                           const char *name_field)
{
    char name[USER_NAME_CAP];
    lua_pushinteger(L, uid);
    lua_setfield(L, -2, field);
    if (passwd_user_name(passwd_path, uid, name)) {
        lua_pushstring(L, name);
        lua_setfield(L, -2, name_field);
    }
}

/* Pushes the record of one process: owner ("container", "nomad", "service",
 * "session" or "process") and that owner's fields (container_id, runtime and
 * container_cgroup;
 * alloc_id and task; unit; session_uid and session_user), then uid and user
 * when /proc/<pid>/status gives a uid. */
static void push_process_owner(lua_State *L, const struct cgroup_owner *owner, long uid,
                               const char *passwd_path)
{
    static const char *const kinds[] = {[OWNER_PROCESS] = "process",
                                        [OWNER_CONTAINER] = "container",
                                        [OWNER_NOMAD_TASK] = "nomad",
                                        [OWNER_SERVICE] = "service",
                                        [OWNER_SESSION] = "session"};
    lua_createtable(L, 0, 5);
    lua_pushstring(L, kinds[owner->kind]);
    lua_setfield(L, -2, "owner");
    switch (owner->kind) {
    case OWNER_CONTAINER:
        lua_pushstring(L, owner->container_id);
        lua_setfield(L, -2, "container_id");
        lua_pushstring(L, owner->runtime);
        lua_setfield(L, -2, "runtime");
        lua_pushstring(L, owner->container_cgroup);
        lua_setfield(L, -2, "container_cgroup");
        break;
    case OWNER_NOMAD_TASK:
        lua_pushstring(L, owner->alloc_id);
        lua_setfield(L, -2, "alloc_id");
        lua_pushstring(L, owner->task);
        lua_setfield(L, -2, "task");
        break;
    case OWNER_SERVICE:
        lua_pushstring(L, owner->unit);
        lua_setfield(L, -2, "unit");
        break;
    case OWNER_SESSION:
        set_uid_fields(L, passwd_path, owner->session_uid, "session_uid", "session_user");
        break;
    case OWNER_PROCESS:
        break;
    }
    if (uid >= 0)
        set_uid_fields(L, passwd_path, uid, "uid", "user");
}

/* The most cgroup parents core.proc_cgroups trusts besides the system's own. */
#define CGROUP_PARENTS_MAX 16

/* core.proc_cgroups(proc_root, pids[, parents]) → { [pid] = record }
 * (push_process_owner) for each pid whose cgroup file can be read (vanished
 * and unreadable pids are absent), user names from the etc/passwd beside
 * proc_root; or nil, cause when proc_root is not a readable directory.
 * parents: the cgroups besides the system's own that only Nomad or an
 * engine creates under (procfs.h's cgroup_parents), at most
 * CGROUP_PARENTS_MAX strings. Never reads a process's arguments or
 * environment. */
int core_proc_cgroups(lua_State *L)
{
    const char *proc_root = luaL_checkstring(L, 1);
    luaL_checktype(L, 2, LUA_TTABLE);
    const char *parents[CGROUP_PARENTS_MAX + 1] = {0};
    if (!lua_isnoneornil(L, 3)) {
        luaL_checktype(L, 3, LUA_TTABLE);
        lua_Integer count = luaL_len(L, 3);
        luaL_argcheck(L, count <= CGROUP_PARENTS_MAX, 3, "too many cgroup parents");
        for (lua_Integer i = 1; i <= count; i++) {
            luaL_argcheck(L, lua_geti(L, 3, i) == LUA_TSTRING, 3, "cgroup parents are strings");
            parents[i - 1] = lua_tostring(L, -1); /* stays alive in the table */
            lua_pop(L, 1);
        }
    }
    struct stat st;
    if (stat(proc_root, &st) != 0)
        return push_errno(L, proc_root, errno);
    if (!S_ISDIR(st.st_mode))
        return push_errno(L, proc_root, ENOTDIR);
    char passwd_path[PATH_MAX];
    if (passwd_path_beside(proc_root, passwd_path, sizeof passwd_path) != 0)
        return push_errno(L, proc_root, ENAMETOOLONG);

    lua_newtable(L);
    lua_Integer count = luaL_len(L, 2);
    char text[16384];
    for (lua_Integer i = 1; i <= count; i++) {
        lua_geti(L, 2, i);
        lua_Integer pid = luaL_checkinteger(L, -1);
        lua_pop(L, 1);
        long len = procfs_read_file(proc_root, (long)pid, "cgroup", text, sizeof text);
        if (len < 0)
            continue;
        struct cgroup_owner owner;
        cgroup_owner(text, (size_t)len, parents, &owner);
        len = procfs_read_file(proc_root, (long)pid, "status", text, sizeof text);
        long uid = len < 0 ? -1 : status_real_uid(text, (size_t)len);
        push_process_owner(L, &owner, uid, passwd_path);
        lua_rawseti(L, -2, pid);
    }
    return 1;
}

/* core.read_kmsg(path, max_bytes[, after_seq]) → the kernel log records the
 * buffer holds now whose sequence number is above after_seq (all without
 * it), and the highest sequence number in the buffer (nil when it holds no
 * record); or nil, cause (also past max_bytes). kmsg.c: never blocks. */
int core_read_kmsg(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer max_bytes = luaL_checkinteger(L, 2);
    luaL_argcheck(L, max_bytes > 0, 2, "want a positive size");
    lua_Integer after_seq = luaL_optinteger(L, 3, -1);
    struct owned *text = push_owned(L); /* freed with it, should a push below raise */
    char *records, cause[512];
    size_t len;
    long long last_seq;
    if (kmsg_read(path, (size_t)max_bytes, (long long)after_seq, &records, &len, &last_seq, cause,
                  sizeof cause) != 0)
        return push_cause(L, cause);
    text->block = records;
    lua_pushlstring(L, records, len);
    if (last_seq < 0)
        lua_pushnil(L);
    else
        lua_pushinteger(L, (lua_Integer)last_seq);
    return 2;
}
