/* The bindings of gpuledger.core that read and write files: what is there
 * (stat), a file or a directory read whole (files.c), and the history
 * file's guards, atomic replacement and keeping aside (atomic_file.c). */
#include "core.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include <lauxlib.h>

#include "atomic_file.h"
#include "core_lua.h"
#include "files.h"

/* core.stat(path) → "file", "dir" or "other", or nil, cause, errno name
 * ("ENOENT" when nothing is there). */
int core_stat(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    struct stat st;
    if (stat(path, &st) != 0)
        return push_errno(L, path, errno);
    lua_pushstring(L, S_ISREG(st.st_mode) ? "file" : S_ISDIR(st.st_mode) ? "dir" : "other");
    return 1;
}

/* core.read_file(path, max_bytes) → text, or nil, cause, errno name ("EFBIG"
 * when the file is longer than max_bytes: never a truncated read). The file
 * is read whole and closed before Lua sees a byte of it. */
int core_read_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer max_bytes = luaL_checkinteger(L, 2);
    luaL_argcheck(L, max_bytes >= 0, 2, "want a size of 0 or more");
    struct owned *owned = push_owned(L); /* freed with it, should a push below raise */
    char *text;
    size_t len;
    if (file_read_whole(path, (size_t)max_bytes, &text, &len) != 0) {
        int err = errno;
        if (err != EFBIG)
            return push_errno(L, path, err);
        lua_pushnil(L);
        lua_pushfstring(L, "%s: longer than %d bytes", path, (int)max_bytes);
        lua_pushstring(L, "EFBIG");
        return 3;
    }
    owned->block = text;
    lua_pushlstring(L, text, len);
    return 1;
}

/* core.read_file_from(path, offset, max_bytes) → at most max_bytes of the
 * file from byte offset on ("" at or past its end), the file's identity
 * ("<device>:<inode>") and its size; or nil, cause, errno name. A log that
 * grows is followed this way: another identity is another file, a size
 * below the offset read so far a truncated one. */
int core_read_file_from(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    lua_Integer offset = luaL_checkinteger(L, 2);
    lua_Integer max_bytes = luaL_checkinteger(L, 3);
    luaL_argcheck(L, offset >= 0, 2, "want an offset of 0 or more");
    luaL_argcheck(L, max_bytes >= 0, 3, "want a size of 0 or more");
    struct owned *owned = push_owned(L); /* freed with it, should a push below raise */
    char *text;
    size_t len;
    struct file_identity identity;
    if (file_read_from(path, (size_t)offset, (size_t)max_bytes, &text, &len, &identity) != 0)
        return push_errno(L, path, errno);
    owned->block = text;
    lua_pushlstring(L, text, len);
    char id[64];
    snprintf(id, sizeof id, "%llu:%llu", identity.device, identity.inode);
    lua_pushstring(L, id);
    lua_pushinteger(L, (lua_Integer)identity.size);
    return 3;
}

/* core.listdir(dir) → the sorted names in dir (without . and ..), or nil,
 * cause, errno name. The directory is read whole and closed first. */
int core_listdir(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    struct owned *owned = push_owned(L);
    char **names;
    size_t count;
    if (dir_names_sorted(path, &names, &count) != 0)
        return push_errno(L, path, errno);
    owned->block = names;
    push_names(L, (const char *const *)names, count);
    return 1;
}

/* core.write_atomic(path, bytes) → true, or nil, cause: the file at path is
 * replaced whole or not at all (temp file, fsync, rename, fsync of the
 * directory; missing parent directories are created; atomic_file.c). */
int core_write_atomic(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    size_t len;
    const char *bytes = luaL_checklstring(L, 2, &len);
    char cause[PATH_MAX + 256];
    if (atomic_file_write(path, bytes, len, cause, sizeof cause) != 0)
        return push_cause(L, cause);
    lua_pushboolean(L, 1);
    return 1;
}

/* core.check_private_file(path) → true, or nil, cause: the file (missing is
 * fine) and its directory could have been written by this user (or root)
 * alone; cause "…: refused: the directory /x is writable by other users
 * (mode 1777)" and the like. Call it before reading the history. */
int core_check_private_file(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    char cause[PATH_MAX + 256];
    if (atomic_file_check(path, cause, sizeof cause) != 0)
        return push_cause(L, cause);
    lua_pushboolean(L, 1);
    return 1;
}

/* core.keep_aside(path) → the new name ("<path>.corrupt-20261130T104500Z"),
 * or nil, cause: renames a file that could not be used out of the way so
 * that writing a fresh one loses nothing. */
int core_keep_aside(lua_State *L)
{
    const char *path = luaL_checkstring(L, 1);
    char aside[PATH_MAX], cause[PATH_MAX + 256];
    if (atomic_file_keep_aside(path, aside, sizeof aside, cause, sizeof cause) != 0)
        return push_cause(L, cause);
    lua_pushstring(L, aside);
    return 1;
}
