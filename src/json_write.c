/* gpuledger.json_write: json.encode's writer (lua/gpuledger/json.lua says
 * what it writes), json.number_text and text.valid_utf8; json_tree.c adds
 * the walks over decoded values. The writer walks a value the way the Lua
 * writer before it did, so that a table behind metamethods (a read-only
 * view of sandbox.lua) comes out the same: its metatable as getmetatable
 * sees it, its length by #, its pairs by pairs(), its fields by indexing
 * and its keys by tostring; a plain table meets no metamethod. The text
 * itself is json_text.c's. */
#include "json_write.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

#include "json_text.h"
#include "json_read.h"
#include "json_tree.h"

/* As deep as lua-cjson reads (its decode_max_depth), so that whatever was
 * decoded can be written back; deeper is an error, not a C stack overflow. */
#define MAX_DEPTH 1000

/* The name of the metatable json.array() sets, by any copy of json.lua. */
#define ARRAY_NAME "json.array"

/* One key of an object being written: its text (tostring's), anchored on
 * the Lua stack at slot. */
struct key {
    const char *text;
    size_t len;
    int slot;
};

/* The state of one encode call: a userdata, whose __gc frees what it holds
 * should the walk raise. */
struct writer {
    struct byte_buffer out;
    struct key *keys; /* the keys of the objects being written, outermost first */
    size_t nkeys, keys_cap;
    const void *path[MAX_DEPTH]; /* the tables being written, outermost first */
    const char *indent;          /* NULL: compact */
    size_t indent_len;
    int omit; /* stack index of the set of keys to leave out, 0 for none */
};

/* Raises the formatted message as it is, without the caller's position
 * (luaL_error would add it), as the Lua writer raised its errors. */
static int fail(lua_State *L, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    lua_pushvfstring(L, format, args);
    va_end(args);
    return lua_error(L);
}

/* Raises when a json_text.c call ran out of memory (returned -1). */
static void checked(lua_State *L, int status)
{
    if (status != 0)
        fail(L, "json: not enough memory");
}

/* Appends a NUL-terminated piece of syntax: written into the room
 * byte_buffer_reserve makes, no call while the buffer has room. */
static inline void add(lua_State *L, struct writer *w, const char *text)
{
    size_t len = strlen(text);
    char *at = byte_buffer_reserve(&w->out, len);
    if (!at)
        fail(L, "json: not enough memory");
    memcpy(at, text, len);
    byte_buffer_added(&w->out, len);
}

/* Ends a line and indents the next by depth levels, when indenting. */
static void new_line(lua_State *L, struct writer *w, int depth)
{
    if (!w->indent)
        return;
    add(L, w, "\n");
    for (int i = 0; i < depth; i++)
        checked(L, byte_buffer_add(&w->out, w->indent, w->indent_len));
}

/* Whether the table at idx is marked by json.array(): the metatable that
 * getmetatable gives (its __metatable field when it has one) is a table
 * whose raw __name is "json.array". */
static int is_marked_array(lua_State *L, int idx)
{
    if (!lua_getmetatable(L, idx))
        return 0;
    if (luaL_getmetafield(L, idx, "__metatable") != LUA_TNIL)
        lua_remove(L, -2);
    int marked = 0;
    if (lua_type(L, -1) == LUA_TTABLE) {
        lua_pushliteral(L, "__name");
        size_t len;
        const char *name = lua_rawget(L, -2) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
        marked = name && len == strlen(ARRAY_NAME) && memcmp(name, ARRAY_NAME, len) == 0;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    return marked;
}

/* Starts iterating the table at idx as pairs() does: when it has a
 * __pairs metamethod, pushes the iterator and its state that it returns
 * and gives the iterator's index; else gives 0. Pushes the first control
 * value (nil) last. */
static int pairs_start(lua_State *L, int idx)
{
    if (luaL_getmetafield(L, idx, "__pairs") == LUA_TNIL) {
        lua_pushnil(L);
        return 0;
    }
    lua_pushvalue(L, idx);
    lua_call(L, 1, 3);
    return lua_gettop(L) - 2;
}

/* With the control value on top (the previous key), replaces it by the
 * next key of the table at idx and pushes that key's value, returning 1;
 * or pops it and returns 0 when there are no more. iterator: what
 * pairs_start gave. */
static int pairs_next(lua_State *L, int idx, int iterator)
{
    if (!iterator)
        return lua_next(L, idx);
    lua_pushvalue(L, iterator);
    lua_pushvalue(L, iterator + 1);
    lua_pushvalue(L, -3);
    lua_call(L, 2, 2); /* [.., control, key, value] */
    if (lua_isnil(L, -2)) {
        lua_pop(L, 3);
        return 0;
    }
    lua_remove(L, -3);
    return 1;
}

/* The number of pairs of the table at idx. */
static lua_Integer count_pairs(lua_State *L, int idx)
{
    int base = lua_gettop(L);
    int iterator = pairs_start(L, idx);
    lua_Integer count = 0;
    while (pairs_next(L, idx, iterator)) {
        lua_pop(L, 1);
        count++;
    }
    lua_settop(L, base);
    return count;
}

/* Appends a key to w->keys: text anchored at slot. */
static void add_key(lua_State *L, struct writer *w, const char *text, size_t len, int slot)
{
    if (w->nkeys == w->keys_cap) {
        size_t cap = w->keys_cap ? w->keys_cap * 2 : 64;
        struct key *grown = realloc(w->keys, cap * sizeof *grown);
        if (!grown)
            fail(L, "json: not enough memory");
        w->keys = grown;
        w->keys_cap = cap;
    }
    w->keys[w->nkeys++] = (struct key){text, len, slot};
}

/* Whether w's omit set names the key at idx (never, without one). */
static int is_omitted(lua_State *L, const struct writer *w, int idx)
{
    if (!w->omit)
        return 0;
    lua_pushvalue(L, idx);
    lua_gettable(L, w->omit);
    int omitted = lua_toboolean(L, -1);
    lua_pop(L, 1);
    return omitted;
}

/* Appends to w->keys the keys of the table at idx that omit does not
 * name, each as tostring writes it, the texts pushed on the stack (the
 * caller pops them when the object is written). */
static void collect_keys(lua_State *L, struct writer *w, int idx)
{
    int iterator = pairs_start(L, idx);
    while (pairs_next(L, idx, iterator)) { /* [.., key, value] */
        lua_pop(L, 1);
        luaL_checkstack(L, 3, "json: an object with too many keys");
        if (is_omitted(L, w, -1))
            continue;
        if (lua_type(L, -1) == LUA_TSTRING)
            lua_pushvalue(L, -1);
        else
            luaL_tolstring(L, -1, NULL);
        lua_insert(L, -2); /* [.., text, key]: the key stays on top for the next step */
        size_t len;
        const char *text = lua_tolstring(L, -2, &len);
        add_key(L, w, text, len, lua_gettop(L) - 1);
    }
}

/* As collect_keys, for a table without a metatable: its value beside each
 * key, just above it on the stack (the key's slot + 1), read as the
 * iteration gives it. Returns 0, the stack and w->keys as they were, when
 * a key is not a string (collect_keys then writes it as tostring does). */
static int collect_plain_keys(lua_State *L, struct writer *w, int idx)
{
    int base = lua_gettop(L);
    size_t first = w->nkeys;
    lua_pushnil(L);
    while (lua_next(L, idx)) { /* [.., key, value] */
        if (lua_type(L, -2) != LUA_TSTRING) {
            lua_settop(L, base);
            w->nkeys = first;
            return 0;
        }
        luaL_checkstack(L, 3, "json: an object with too many keys");
        if (is_omitted(L, w, -2)) {
            lua_pop(L, 1);
            continue;
        }
        size_t len;
        const char *text = lua_tolstring(L, -2, &len); /* a string: read, not converted */
        add_key(L, w, text, len, lua_gettop(L) - 1);
        lua_pushvalue(L, -2); /* [.., key, value, key]: the next step's control */
    }
    return 1;
}

/* Orders keys as table.sort orders strings in the C locale: byte by byte,
 * a prefix first; < 0 when x goes first. The first bytes are compared
 * here, memcmp called only for keys that share one. Inline, for the
 * insertion sort of sort_keys. */
static inline int key_order(const struct key *x, const struct key *y)
{
    if (x->len > 0 && y->len > 0 && x->text[0] != y->text[0])
        return (unsigned char)x->text[0] - (unsigned char)y->text[0];
    int order = memcmp(x->text, y->text, x->len < y->len ? x->len : y->len);
    if (order != 0)
        return order;
    return (x->len > y->len) - (x->len < y->len);
}

/* key_order for qsort. */
static int compare_keys(const void *a, const void *b)
{
    return key_order(a, b);
}

/* Objects of at most this many keys (a record's, most of them) are sorted
 * by insertion, without qsort's calls through a pointer per comparison. */
#define FEW_KEYS 24

/* Sorts the count keys at keys by key_order. */
static void sort_keys(struct key *keys, size_t count)
{
    if (count > FEW_KEYS) {
        qsort(keys, count, sizeof *keys, compare_keys);
        return;
    }
    for (size_t i = 1; i < count; i++) {
        struct key key = keys[i];
        size_t j = i;
        for (; j > 0 && key_order(&keys[j - 1], &key) > 0; j--)
            keys[j] = keys[j - 1];
        keys[j] = key;
    }
}

static void write_value(lua_State *L, struct writer *w, int idx, int depth);

/* Writes the table at idx as an array of its first n items (t[1]..t[n]). */
static void write_array(lua_State *L, struct writer *w, int idx, lua_Integer n, int depth)
{
    if (n <= 0) {
        add(L, w, "[]");
        return;
    }
    add(L, w, "[");
    for (lua_Integer i = 1; i <= n; i++) {
        if (i > 1)
            add(L, w, ",");
        new_line(L, w, depth + 1);
        lua_geti(L, idx, i);
        write_value(L, w, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    new_line(L, w, depth);
    add(L, w, "]");
}

/* Writes the table at idx as an object: its keys (but omit's) in order,
 * each key's value t[key], or t[tonumber(key)] when that is nil (the key
 * was a number); of a table without a metatable, the value its iteration
 * gave. */
static void write_object(lua_State *L, struct writer *w, int idx, int depth)
{
    size_t first = w->nkeys;
    int plain = 0; /* values beside their keys (collect_plain_keys) */
    if (lua_getmetatable(L, idx))
        lua_pop(L, 1);
    else
        plain = collect_plain_keys(L, w, idx);
    if (!plain)
        collect_keys(L, w, idx);
    size_t count = w->nkeys - first;
    if (count == 0) {
        add(L, w, "{}");
        return;
    }
    sort_keys(w->keys + first, count);
    add(L, w, "{");
    for (size_t i = first; i < first + count; i++) {
        struct key key = w->keys[i]; /* a copy: nested objects may move w->keys */
        if (i > first)
            add(L, w, ",");
        new_line(L, w, depth + 1);
        checked(L, json_write_string(&w->out, key.text, key.len));
        add(L, w, w->indent ? ": " : ":");
        if (plain) {
            write_value(L, w, key.slot + 1, depth + 1);
            continue;
        }
        lua_pushvalue(L, key.slot);
        if (lua_gettable(L, idx) == LUA_TNIL) {
            lua_pop(L, 1);
            size_t read = lua_stringtonumber(L, key.text);
            if (read != key.len + 1) { /* tonumber(key) is nil */
                if (read != 0)
                    lua_pop(L, 1);
                lua_pushnil(L);
            }
            lua_gettable(L, idx);
        }
        write_value(L, w, lua_gettop(L), depth + 1);
        lua_pop(L, 1);
    }
    new_line(L, w, depth);
    add(L, w, "}");
    w->nkeys = first;
}

/* Writes the table at idx: an array when json.array() marked it or when
 * its only keys are 1..#t (#t > 0), an object otherwise. */
static void write_table(lua_State *L, struct writer *w, int idx, int depth)
{
    const void *table = lua_topointer(L, idx);
    for (int i = 0; i < depth; i++)
        if (w->path[i] == table)
            fail(L, "json: cannot encode a table that contains itself");
    if (depth >= MAX_DEPTH)
        fail(L, "json: cannot encode tables nested more than %d deep", MAX_DEPTH);
    w->path[depth] = table;
    luaL_checkstack(L, 8, "json: tables nested too deep");
    int base = lua_gettop(L);
    if (is_marked_array(L, idx)) {
        write_array(L, w, idx, luaL_len(L, idx), depth);
    } else {
        lua_Integer n = luaL_len(L, idx);
        if (n > 0 && count_pairs(L, idx) == n)
            write_array(L, w, idx, n, depth);
        else
            write_object(L, w, idx, depth);
    }
    lua_settop(L, base);
}

/* Writes the value at idx: a string, number, boolean, nil or lua-cjson's
 * null (the light userdata NULL: a null kept in a list) as null, or table;
 * anything else raises "json: cannot encode a <type>". */
static void write_value(lua_State *L, struct writer *w, int idx, int depth)
{
    switch (lua_type(L, idx)) {
    case LUA_TSTRING: {
        size_t len;
        const char *s = lua_tolstring(L, idx, &len);
        checked(L, json_write_string(&w->out, s, len));
        break;
    }
    case LUA_TNUMBER:
        if (lua_isinteger(L, idx))
            checked(L, json_write_integer(&w->out, (long long)lua_tointeger(L, idx)));
        else
            checked(L, json_write_number(&w->out, (double)lua_tonumber(L, idx)));
        break;
    case LUA_TBOOLEAN:
        add(L, w, lua_toboolean(L, idx) ? "true" : "false");
        break;
    case LUA_TNIL:
        add(L, w, "null");
        break;
    case LUA_TLIGHTUSERDATA:
        if (lua_touserdata(L, idx) != NULL)
            fail(L, "json: cannot encode a %s", luaL_typename(L, idx));
        add(L, w, "null");
        break;
    case LUA_TTABLE:
        write_table(L, w, idx, depth);
        break;
    default:
        fail(L, "json: cannot encode a %s", luaL_typename(L, idx));
    }
}

/* __gc of an encode call's state: frees its buffers. */
static int writer_gc(lua_State *L)
{
    struct writer *w = lua_touserdata(L, 1);
    byte_buffer_free(&w->out);
    free(w->keys);
    w->keys = NULL;
    return 0;
}

/* json_write.encode(value [, indent [, omit]]) → the JSON text of value:
 * compact, or indented by the string indent per level (a key's colon then
 * followed by a space); omit: a set of object keys to leave out. */
static int json_encode(lua_State *L)
{
    lua_settop(L, 3);
    const char *indent = NULL;
    size_t indent_len = 0;
    if (lua_toboolean(L, 2))
        indent = luaL_checklstring(L, 2, &indent_len);
    struct writer *w = lua_newuserdatauv(L, sizeof *w, 0);
    byte_buffer_init(&w->out, BYTE_BUFFER_NO_LIMIT);
    w->keys = NULL;
    w->nkeys = w->keys_cap = 0;
    w->indent = indent;
    w->indent_len = indent_len;
    w->omit = lua_toboolean(L, 3) ? 3 : 0;
    if (luaL_newmetatable(L, "gpuledger.json_writer")) {
        lua_pushcfunction(L, writer_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    write_value(L, w, 1, 0);
    lua_pushlstring(L, w->out.data ? w->out.data : "", w->out.len);
    byte_buffer_free(&w->out);
    return 1;
}

/* json_write.number_text(n) → the shortest text that reads back as n: an
 * integer as tostring writes it, a float as json_number_text does (for
 * Prometheus sample values as well as JSON). */
static int json_number_text_of(lua_State *L)
{
    lua_Number n = luaL_checknumber(L, 1);
    char text[32];
    size_t len = lua_isinteger(L, 1) ? json_integer_text(text, (long long)lua_tointeger(L, 1))
                                     : json_number_text(text, (double)n);
    lua_pushlstring(L, text, len);
    return 1;
}

/* json_write.valid_utf8(s) → s with each byte that begins no valid UTF-8
 * character (utf8_char_length) replaced by U+FFFD, the scan going on at
 * the next byte, as json.encode writes strings: s itself when it is valid
 * UTF-8 already. */
static int json_valid_utf8(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    const unsigned char *bytes = (const unsigned char *)s;
    luaL_Buffer out;
    int replaced = 0;
    size_t plain = 0; /* the start of the bytes not yet copied, all valid */
    for (size_t i = 0; i < len;) {
        size_t width = bytes[i] < 0x80 ? 1 : utf8_char_length(bytes + i, len - i);
        if (width > 0) {
            i += width;
            continue;
        }
        if (!replaced)
            luaL_buffinit(L, &out);
        replaced = 1;
        luaL_addlstring(&out, s + plain, i - plain);
        luaL_addstring(&out, "\xEF\xBF\xBD"); /* U+FFFD */
        plain = ++i;
    }
    if (!replaced) {
        lua_settop(L, 1);
        return 1;
    }
    luaL_addlstring(&out, s + plain, len - plain);
    luaL_pushresult(&out);
    return 1;
}

/* As json_write.h says. */
int luaopen_gpuledger_json_write(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"encode", json_encode},
        {"number_text", json_number_text_of},
        {"valid_utf8", json_valid_utf8},
        {NULL, NULL},
    };
    luaL_newlib(L, functions);
    json_tree_add_functions(L);
    json_read_add_functions(L);
    return 1;
}
