/* gpuledger.json_write's walks over decoded values (json_tree.h): each is
 * a loop over the Lua stack, one table and key per level, rather than a C
 * recursion, so that however deep a table a caller gives, the walk ends in
 * a Lua error ("stack overflow"), as a Lua walk would, never a crash. */
#include "json_tree.h"

#include <string.h>

#include <lauxlib.h>

#include "json_empty_arrays.h"
#include "json_text.h"

/* The two values an empty array is written as before cjson reads a text.
 * "stand-in": an array of five values that no document gpuledger reads
 * holds (and a text that does is told, by mark_empty_arrays); "mark": a
 * one-element array of a string that begins with a private-use character
 * (U+F8FF), for the texts the stand-in cannot serve. */
#define MARK_STRING "\xEF\xA3\xBFgpuledger-empty-array"
static const char *const WAY_NAMES[] = {"stand-in", "mark", NULL};
enum way { STAND_IN, MARK };
static const char *const WAY_TEXTS[] = {"[true,null,false,null,true]", "[\"" MARK_STRING "\"]"};

/* The mark a string cut by text.cut ends with: "…[cut]". */
#define CUT_MARK "\xE2\x80\xA6[cut]"

/* Room on the Lua stack that each level of a walk asks for: its table and
 * key, the value, and what replaces it. */
#define LEVEL_SLOTS 8

/* json_write.mark_empty_arrays(s, way) → s with each empty array outside a
 * string (json_find_array) written as way's value ("stand-in" or "mark"),
 * s itself when it has none; for "stand-in", nil when s holds the
 * stand-in's value already (as json_find_array tells it, blanks and all):
 * its empty arrays could not be told. */
static int mark_empty_arrays(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TSTRING);
    size_t len;
    const char *s = lua_tolstring(L, 1, &len);
    enum way way = (enum way)luaL_checkoption(L, 2, NULL, WAY_NAMES);
    const char *other = way == STAND_IN ? WAY_TEXTS[STAND_IN] : NULL;
    lua_settop(L, 1);
    luaL_Buffer out;
    int marked = 0;
    size_t from = 0, open, close;
    enum json_array_kind kind;
    while ((kind = json_find_array(s, len, from, other, &open, &close)) != JSON_NO_ARRAY) {
        if (kind == JSON_OTHER_ARRAY) {
            lua_pushnil(L);
            return 1;
        }
        if (!marked)
            luaL_buffinit(L, &out);
        marked = 1;
        luaL_addlstring(&out, s + from, open - from);
        luaL_addstring(&out, WAY_TEXTS[way]);
        from = close + 1;
    }
    if (marked) {
        luaL_addlstring(&out, s + from, len - from);
        luaL_pushresult(&out);
    }
    return 1;
}

/* Whether the value at idx of the table at t is the boolean b. */
static int field_is_boolean(lua_State *L, int t, lua_Integer idx, int b)
{
    int is = lua_rawgeti(L, t, idx) == LUA_TBOOLEAN && lua_toboolean(L, -1) == b;
    lua_pop(L, 1);
    return is;
}

/* Whether the value at idx of the table at t is the value at null. */
static int field_is_null(lua_State *L, int t, lua_Integer idx, int null)
{
    lua_rawgeti(L, t, idx);
    int is = lua_rawequal(L, -1, null);
    lua_pop(L, 1);
    return is;
}

/* Whether the table at t has no key after key, which is on top (popped). */
static int last_key(lua_State *L, int t)
{
    if (!lua_next(L, t))
        return 1;
    lua_pop(L, 2);
    return 0;
}

/* Whether the table at t is what way's value decodes as (raw accesses, as
 * on cjson's tables): the stand-in's t[1] to t[5] true, null, false, null,
 * true and no key after 5 (as next(t, 5) tells); the mark's #t == 1, t[1]
 * the mark's string and no second key. null: the index of cjson's null. */
static int is_empty_array_value(lua_State *L, int t, enum way way, int null)
{
    if (way == STAND_IN) {
        if (!(field_is_boolean(L, t, 1, 1) && field_is_null(L, t, 2, null) &&
              field_is_boolean(L, t, 3, 0) && field_is_null(L, t, 4, null) &&
              field_is_boolean(L, t, 5, 1)))
            return 0;
        lua_pushinteger(L, 5);
        return last_key(L, t);
    }
    if (lua_rawlen(L, t) != 1)
        return 0;
    size_t len;
    const char *s = lua_rawgeti(L, t, 1) == LUA_TSTRING ? lua_tolstring(L, -1, &len) : NULL;
    int is = s && len == strlen(MARK_STRING) && memcmp(s, MARK_STRING, len) == 0;
    lua_pop(L, 1);
    if (!is)
        return 0;
    lua_pushnil(L);
    lua_next(L, t); /* the first key, and its value */
    lua_pop(L, 1);
    return last_key(L, t);
}

/* Pushes a new empty table with the metatable at mt (json.array()'s). */
static void push_array(lua_State *L, int mt)
{
    lua_createtable(L, 0, 0);
    lua_pushvalue(L, mt);
    lua_setmetatable(L, -2);
}

/* With [key, value, new] on top of the stack, sets field key of the table
 * at t to new and pops new. */
static void replace_field(lua_State *L, int t)
{
    lua_pushvalue(L, -3);
    lua_insert(L, -2);
    lua_rawset(L, t);
}

/* Walks the table at idx and every table in it, however deep, on the Lua
 * stack: for each key of each table (raw, in next's order) calls
 * visit(L, t, state) with the key and its value on top of the stack (t:
 * the table's index), which may replace the value (replace_field) and
 * returns 1 for a table to walk into, else 0. A table met twice is walked
 * twice. too_deep: the message when the Lua stack is full. */
static void walk(lua_State *L, int idx, int (*visit)(lua_State *L, int t, const void *state),
                 const void *state, const char *too_deep)
{
    int base = lua_gettop(L);
    lua_pushvalue(L, idx);
    lua_pushnil(L); /* [table, key] per level */
    while (lua_gettop(L) > base) {
        int t = lua_gettop(L) - 1;
        if (!lua_next(L, t)) {
            lua_pop(L, 1); /* the table, walked */
        } else if (visit(L, t, state)) {
            luaL_checkstack(L, LEVEL_SLOTS, too_deep);
            lua_pushnil(L); /* walk into the value */
        } else {
            lua_pop(L, 1);
        }
    }
}

/* What normalise's visits need: cjson's null, the indexes of the null and
 * of the array metatable, the way the empty arrays were written. */
struct normalising {
    const void *null;
    int null_idx, array_mt;
    enum way way;
};

/* normalise's visit (walk): a null taken out, way's value made an array. */
static int normalise_value(lua_State *L, int t, const void *state)
{
    const struct normalising *n = state;
    int type = lua_type(L, -1);
    if (type == LUA_TLIGHTUSERDATA && lua_touserdata(L, -1) == n->null) {
        lua_pushnil(L);
        replace_field(L, t);
    } else if (type == LUA_TTABLE && is_empty_array_value(L, lua_gettop(L), n->way, n->null_idx)) {
        push_array(L, n->array_mt);
        replace_field(L, t);
    } else if (type == LUA_TTABLE) {
        return 1;
    }
    return 0;
}

/* json_write.normalise(value, null, array_mt, way) → value with each cjson
 * null (null, a light userdata) in its tables taken out and each table that
 * is way's value (is_empty_array_value) made a new empty table with the
 * metatable array_mt, in place (value itself too, when it is way's value).
 * Walks tables as cjson makes them: raw, each as often as it is met. */
static int normalise(lua_State *L)
{
    luaL_checkany(L, 1);
    luaL_checktype(L, 2, LUA_TLIGHTUSERDATA);
    luaL_checktype(L, 3, LUA_TTABLE);
    enum way way = (enum way)luaL_checkoption(L, 4, NULL, WAY_NAMES);
    lua_settop(L, 4);
    struct normalising n = {lua_touserdata(L, 2), 2, 3, way};
    if (lua_type(L, 1) == LUA_TTABLE && is_empty_array_value(L, 1, way, 2)) {
        push_array(L, 3);
        lua_replace(L, 1);
    } else if (lua_type(L, 1) == LUA_TTABLE) {
        walk(L, 1, normalise_value, &n, "json: tables nested too deep");
    }
    lua_settop(L, 1);
    return 1;
}

/* The max argument at idx: an integer, not negative. */
static size_t check_max(lua_State *L, int idx)
{
    lua_Integer max = luaL_checkinteger(L, idx);
    luaL_argcheck(L, max >= 0, idx, "a length may not be negative");
    return (size_t)max;
}

/* Pushes the string at idx cut to max bytes as text.cut cuts it. */
static void push_cut(lua_State *L, int idx, size_t max)
{
    size_t len;
    const char *s = lua_tolstring(L, idx, &len);
    if (len <= max) {
        lua_pushvalue(L, idx);
        return;
    }
    luaL_Buffer out;
    luaL_buffinit(L, &out);
    luaL_addlstring(&out, s, utf8_cut_length((const unsigned char *)s, max));
    luaL_addstring(&out, CUT_MARK);
    luaL_pushresult(&out);
}

/* json_write.cut(s, max) → s when it has at most max bytes; else its first
 * max bytes or fewer, never half a character (utf8_cut_length), followed
 * by CUT_MARK, so that a reader sees it was cut. text.cut. */
static int cut(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TSTRING);
    push_cut(L, 1, check_max(L, 2));
    return 1;
}

/* What cut_strings' visits need: the length, the index of drop (0: none). */
struct cutting {
    size_t max;
    int drop;
};

/* cut_strings' visit (walk): a long string cut, a value equal to drop taken
 * out. */
static int cut_value(lua_State *L, int t, const void *state)
{
    const struct cutting *c = state;
    int type = lua_type(L, -1);
    if (type == LUA_TSTRING && lua_rawlen(L, -1) > c->max) {
        push_cut(L, lua_gettop(L), c->max);
        replace_field(L, t);
    } else if (type == LUA_TTABLE) {
        return 1;
    } else if (type != LUA_TSTRING && c->drop && lua_compare(L, -1, c->drop, LUA_OPEQ)) {
        lua_pushnil(L);
        replace_field(L, t);
    }
    return 0;
}

/* json_write.cut_strings(value, max, drop) → value with every string in it
 * (in its tables, however deep, keys aside) cut to max bytes as cut does,
 * in place; with drop (not nil), every other value equal to it (==, its
 * __eq too) taken out of its table, and value itself, when equal, nil.
 * text.cut_strings. Tables are walked raw, each as often as it is met (a
 * table in two places has its strings cut twice, as a Lua walk did). */
static int cut_strings(lua_State *L)
{
    size_t max = check_max(L, 2);
    lua_settop(L, 3);
    int drop = lua_isnil(L, 3) ? 0 : 3;
    if (lua_type(L, 1) == LUA_TSTRING) {
        push_cut(L, 1, max);
        return 1;
    }
    if (drop && lua_compare(L, 1, drop, LUA_OPEQ)) {
        lua_pushnil(L);
        return 1;
    }
    if (lua_type(L, 1) == LUA_TTABLE) {
        struct cutting c = {max, drop};
        walk(L, 1, cut_value, &c, "text.cut_strings: tables nested too deep");
    }
    lua_settop(L, 1);
    return 1;
}

/* As json_tree.h says. */
void json_tree_add_functions(lua_State *L)
{
    static const luaL_Reg functions[] = {
        {"mark_empty_arrays", mark_empty_arrays},
        {"normalise", normalise},
        {"cut", cut},
        {"cut_strings", cut_strings},
        {NULL, NULL},
    };
    luaL_setfuncs(L, functions, 0);
    lua_pushliteral(L, CUT_MARK);
    lua_setfield(L, -2, "CUT_MARK");
}
