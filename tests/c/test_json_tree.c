/* json_tree.c's walks, called from Lua as gpuledger.json_write's
 * functions: nulls taken out and stand-ins or marks made arrays at every
 * depth, the array metatable the caller gives; strings cut at character
 * boundaries, the cut marked, a value equal to drop taken out, a table met
 * twice walked twice; a table that contains itself and one nested a
 * hundred thousand deep end in a Lua error or a result, never a crash;
 * strings of megabytes. Under AddressSanitizer, every read of the walks'
 * C is checked. */
#include "check.h"
#include "json_write.h"

#include <stdio.h>
#include <string.h>

#include <lauxlib.h>
#include <lualib.h>

/* What the last chunk returned, as text ("nil" for nil), or its error. */
static char got[4096];

/* Runs the Lua chunk code (with W, the module, and NULL, a light userdata
 * that stands for cjson's null, as globals) and keeps its one result, or
 * its error message, in got. */
static void run_chunk(lua_State *L, const char *code)
{
    lua_settop(L, 0);
    if (luaL_loadstring(L, code) != LUA_OK || lua_pcall(L, 0, 1, 0) != LUA_OK) {
        snprintf(got, sizeof got, "error: %s", lua_tostring(L, -1));
    } else {
        snprintf(got, sizeof got, "%s", luaL_tolstring(L, 1, NULL));
    }
    lua_settop(L, 0);
}

/* The Lua helper the chunks describe values with: a table's pairs in key
 * order, "A" before an array (a table with the metatable ARRAY). */
static const char *DESCRIBE =
    "ARRAY = {__name = 'json.array'}\n"
    "function describe(v)\n"
    "  if type(v) ~= 'table' then return v == NULL and 'null' or tostring(v) end\n"
    "  local keys = {}\n"
    "  for k in next, v do keys[#keys + 1] = k end\n"
    "  table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)\n"
    "  for i, k in ipairs(keys) do keys[i] = tostring(k) .. '=' .. describe(v[k]) end\n"
    "  return (getmetatable(v) == ARRAY and 'A' or '') .. '{' .. table.concat(keys, ',') .. '}'\n"
    "end\n";

static void test_marks(lua_State *L)
{
    run_chunk(L, "return W.mark_empty_arrays('{\"a\":[],\"s\":\"[ ]\",\"b\":[ ]}', 'stand-in')");
    CHECK_STR(
        got, "{\"a\":[true,null,false,null,true],\"s\":\"[ ]\",\"b\":[true,null,false,null,true]}");
    run_chunk(L, "return W.mark_empty_arrays('[[]]', 'mark')");
    CHECK_STR(got, "[[\"\xEF\xA3\xBFgpuledger-empty-array\"]]");
    run_chunk(L, "return W.mark_empty_arrays('[[true ,null,false,null,true]]', 'stand-in')");
    CHECK_STR(got, "nil");
    run_chunk(L, "local s = '{}' return W.mark_empty_arrays(s, 'stand-in') == s");
    CHECK_STR(got, "true");
    run_chunk(L, "return W.mark_empty_arrays('[]', 'other')");
    CHECK(strstr(got, "error: ") == got && strstr(got, "invalid option 'other'") != NULL);
}

static void test_normalise(lua_State *L)
{
    /* a decoded tree as cjson gives it, stand-ins and nulls at every depth */
    run_chunk(L, "local t = {a = {true, NULL, false, NULL, true}, b = NULL,"
                 " c = {{x = NULL, y = {{true, NULL, false, NULL, true}}}, 5}, [7] = 'k',"
                 " d = {true, NULL, false, NULL, true, 6}, e = {true, NULL, false, NULL}}"
                 " return describe(W.normalise(t, NULL, ARRAY, 'stand-in'))");
    CHECK_STR(got,
              "{7=k,a=A{},c={1={y={1=A{}}},2=5},d={1=true,3=false,5=true,6=6},e={1=true,3=false}}");
    run_chunk(
        L,
        "return describe(W.normalise({true, NULL, false, NULL, true}, NULL, ARRAY, 'stand-in'))");
    CHECK_STR(got, "A{}");
    run_chunk(L, "local m = W.mark_empty_arrays('[]', 'mark'):sub(3, -3)"
                 " local t = {{m}, {m, m}, {m, x = 1}, {m = {m}}, NULL}"
                 " return describe(W.normalise(t, NULL, ARRAY, 'mark'))");
    CHECK(strstr(got, "{1=A{},2={1=\xEF\xA3\xBF") == got);
    CHECK(strstr(got, "4={m=A{}}}") != NULL);
    run_chunk(L, "return describe(W.normalise(false, NULL, ARRAY, 'stand-in'))");
    CHECK_STR(got, "false");
    /* 100,000 deep, a null at the bottom: walked on the Lua stack, not C's */
    run_chunk(L, "local top = {} local t = top for _ = 1, 100000 do t.n = {} t = t.n end"
                 " t.x = NULL t.e = {true, NULL, false, NULL, true}"
                 " W.normalise(top, NULL, ARRAY, 'stand-in')"
                 " return describe(t)");
    CHECK_STR(got, "{e=A{}}");
}

static void test_cut(lua_State *L)
{
    run_chunk(
        L, "return W.cut('abcdef', 2) .. '|' .. W.cut('a\xC3\xA9', 2) .. '|' .. W.cut('abc', 3)");
    CHECK_STR(got, "ab\xE2\x80\xA6[cut]|a\xE2\x80\xA6[cut]|abc");
    run_chunk(L, "return W.cut('abc', -1)");
    CHECK(strstr(got, "a length may not be negative") != NULL);
    run_chunk(L, "return W.cut(12345, 2)");
    CHECK(strstr(got, "string expected, got number") != NULL);
    run_chunk(L, "return W.CUT_MARK");
    CHECK_STR(got, "\xE2\x80\xA6[cut]");
    /* a string of megabytes, cut and kept */
    run_chunk(L, "local s = W.cut(('\xE2\x82\xAC'):rep(1000000), 2000000)"
                 " return #s .. ' ' .. tostring(s:sub(-11, -1) == '\xE2\x82\xAC' .. W.CUT_MARK)");
    CHECK_STR(got, "2000006 true");
}

static void test_cut_strings(lua_State *L)
{
    run_chunk(L, "local shared = {'abcdefgh'}"
                 " local t = {a = 'abcdef', b = {c = 'xy', d = NULL, e = {1, NULL, 'abcdef'}},"
                 " longkeyname = shared, other = shared, n = 12345678}"
                 " return describe(W.cut_strings(t, 4, NULL))");
    CHECK_STR(got,
              "{a=abcd\xE2\x80\xA6[cut],b={c=xy,e={1=1,3=abcd\xE2\x80\xA6[cut]}},"
              "longkeyname={1=abcd\xE2\x80\xA6[cut]},n=12345678,other={1=abcd\xE2\x80\xA6[cut]}}");
    /* met twice, cut twice: the second cut of "a" .. CUT_MARK keeps 4 bytes */
    run_chunk(L, "local shared = {'a\xF0\x9F\x98\x80'} W.cut_strings({shared, {shared}}, 4)"
                 " return shared[1]");
    CHECK_STR(got, "a\xE2\x80\xA6\xE2\x80\xA6[cut]");
    run_chunk(L, "return describe(W.cut_strings({a = NULL, b = 'x'}, 4))");
    CHECK_STR(got, "{a=null,b=x}");
    run_chunk(
        L,
        "return tostring(W.cut_strings(NULL, 4, NULL)) .. ' ' .. W.cut_strings('abcdef', 4, NULL)");
    CHECK_STR(got, "nil abcd\xE2\x80\xA6[cut]");
    /* a table that contains itself: a Lua error once the stack is full */
    run_chunk(L, "local t = {s = 'abcdef'} t.self = t return W.cut_strings(t, 4)");
    CHECK(strstr(got, "error: ") == got && strstr(got, "stack overflow") != NULL);
    run_chunk(L, "local top = {} local t = top for _ = 1, 100000 do t[1] = {} t = t[1] end"
                 " t[2] = 'abcdef' W.cut_strings(top, 4) return t[2]");
    CHECK_STR(got, "abcd\xE2\x80\xA6[cut]");
}

int main(void)
{
    lua_State *L = luaL_newstate();
    luaL_openlibs(L);
    luaL_requiref(L, "gpuledger.json_write", luaopen_gpuledger_json_write, 0);
    lua_setglobal(L, "W");
    lua_pushlightuserdata(L, (void *)&got);
    lua_setglobal(L, "NULL");
    run_chunk(L, DESCRIBE);
    test_marks(L);
    test_normalise(L);
    test_cut(L);
    test_cut_strings(L);
    lua_close(L);
    return check_finish();
}
