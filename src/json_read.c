/* json.decode's reader of the common text (json_read.h): one pass over the
 * bytes that makes the decoded tables at once, each of its final size. */
#include "json_read.h"

#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

/* The deepest nesting read (that of lua-cjson's decoder); a deeper text is
 * left to cjson, which names it. */
#define MAX_DEPTH 1000

/* The integers below this many digits are read exactly as doubles without
 * strtod (every integer of up to 15 digits is a double). */
#define QUICK_DIGITS 15

/* How many strings a read keeps to push again (a power of two), and the
 * longest it keeps. */
#define KEPT_SLOTS 256
#define KEPT_MAX   128

/* What a read walks: the text, where it is, how deep, the index of the
 * empty arrays' metatable; and the strings it pushed last, to push again
 * when the text repeats them (keys, GPU uuids, process names): each slot's
 * string is kept in the table at index kept (so its bytes stay where
 * kept_bytes points), its length in kept_len (0: none). */
struct reader {
    lua_State *L;
    const char *at, *end;
    int depth, array_mt, kept;
    const char *kept_bytes[KEPT_SLOTS];
    size_t kept_len[KEPT_SLOTS];
};

/* What read_value found. */
enum got {
    NOT_READ, /* the text is not one this reader takes: nothing pushed */
    PUSHED,   /* a value, on top of the stack */
    NULL_READ /* JSON null: nil on top of the stack */
};

/* Passes over JSON's white space (space, tab, LF, CR). */
static void skip_space(struct reader *r)
{
    while (r->at < r->end && (*r->at == ' ' || *r->at == '\n' || *r->at == '\r' || *r->at == '\t'))
        r->at++;
}

/* The value of hex digit c, or -1. */
static int hex_value(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* The four hex digits at p (p + 4 <= end), or -1. */
static long hex4(const char *p)
{
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_value(p[i]);
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

/* Adds code point cp (at most U+10FFFF) to b as UTF-8. */
static void add_utf8(luaL_Buffer *b, long cp)
{
    char out[4];
    int n;
    if (cp < 0x80) {
        out[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        out[0] = (char)(0xF0 | (cp >> 18));
        out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    luaL_addlstring(b, out, (size_t)n);
}

/* Reads the escape after a backslash at r->at (past it) into b: the
 * one-letter escapes and \uXXXX, a surrogate pair as one code point.
 * Returns 0 for any other (a lone surrogate too). */
static int read_escape(struct reader *r, luaL_Buffer *b)
{
    static const char LETTERS[] = "\"\\/bfnrt", BYTES[] = "\"\\/\b\f\n\r\t";
    if (r->at >= r->end)
        return 0;
    char c = *r->at++;
    for (int i = 0; LETTERS[i]; i++)
        if (c == LETTERS[i]) {
            luaL_addchar(b, BYTES[i]);
            return 1;
        }
    if (c != 'u' || r->end - r->at < 4)
        return 0;
    long cp = hex4(r->at);
    r->at += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
        return 0;
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        long low =
            r->end - r->at >= 6 && r->at[0] == '\\' && r->at[1] == 'u' ? hex4(r->at + 2) : -1;
        if (low < 0xDC00 || low > 0xDFFF)
            return 0;
        r->at += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    }
    if (cp < 0)
        return 0;
    add_utf8(b, cp);
    return 1;
}

/* The bytes a string holds as they are: all but the controls (NUL among
 * them), the quote (0x22) and the backslash (0x5C). */
static const unsigned char AS_IS[256] = {
    [0x20 ... 0x21] = 1, [0x23 ... 0x5B] = 1, [0x5D ... 0xFF] = 1};

/* Pushes the string s (len bytes): the one kept in its slot when that is
 * s, else a new one, then kept there. A string found so is not hashed and
 * looked up again by Lua (a short one) or copied again (a long one). */
static void push_kept(struct reader *r, const char *s, size_t len)
{
    if (len == 0 || len > KEPT_MAX) {
        lua_pushlstring(r->L, s, len);
        return;
    }
    unsigned slot = ((unsigned)len * 31u + (unsigned char)s[0] * 7u +
                     (unsigned char)s[len / 2] * 13u + (unsigned char)s[len - 1]) &
                    (KEPT_SLOTS - 1);
    if (r->kept_len[slot] == len && memcmp(r->kept_bytes[slot], s, len) == 0) {
        lua_rawgeti(r->L, r->kept, (lua_Integer)slot + 1);
        return;
    }
    r->kept_bytes[slot] = lua_pushlstring(r->L, s, len);
    r->kept_len[slot] = len;
    lua_pushvalue(r->L, -1);
    lua_rawseti(r->L, r->kept, (lua_Integer)slot + 1);
}

/* Reads the string whose opening quote is at r->at and pushes it: its
 * bytes as they are (UTF-8 or not), its escapes decoded. A control byte in
 * it is not read. */
static enum got read_string(struct reader *r)
{
    const char *start = ++r->at, *p = start;
    while (AS_IS[(unsigned char)*p]) /* a Lua string ends in a NUL, which stops it */
        p++;
    if (p >= r->end || (unsigned char)*p < 0x20)
        return NOT_READ;
    if (*p == '"') { /* the common string, without an escape */
        push_kept(r, start, (size_t)(p - start));
        r->at = p + 1;
        return PUSHED;
    }
    luaL_Buffer b;
    luaL_buffinit(r->L, &b);
    luaL_addlstring(&b, start, (size_t)(p - start));
    r->at = p;
    while (r->at < r->end && *r->at != '"') {
        unsigned char c = (unsigned char)*r->at;
        r->at++;
        if (c < 0x20 || (c == '\\' && !read_escape(r, &b)))
            return NOT_READ; /* the buffer's box goes with the caller's settop */
        if (c != '\\')
            luaL_addchar(&b, (char)c);
    }
    if (r->at >= r->end)
        return NOT_READ;
    r->at++;
    luaL_pushresult(&b);
    return PUSHED;
}

/* Whether c is a decimal digit. */
static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Reads the number at r->at, as RFC 8259 writes one, and pushes it as a
 * float (as lua-cjson does: 4242 is 4242.0), parsed by strtod unless it is
 * a short integer. */
static enum got read_number(struct reader *r)
{
    const char *p = r->at, *digits;
    if (p < r->end && *p == '-')
        p++;
    digits = p;
    if (p < r->end && *p == '0')
        p++;
    else if (p < r->end && *p >= '1' && *p <= '9')
        while (p < r->end && is_digit(*p))
            p++;
    else
        return NOT_READ;
    int whole = 1;
    if (p < r->end && *p == '.') {
        whole = 0;
        if (++p >= r->end || !is_digit(*p))
            return NOT_READ;
        while (p < r->end && is_digit(*p))
            p++;
    }
    if (p < r->end && (*p == 'e' || *p == 'E')) {
        whole = 0;
        p++;
        if (p < r->end && (*p == '+' || *p == '-'))
            p++;
        if (p >= r->end || !is_digit(*p))
            return NOT_READ;
        while (p < r->end && is_digit(*p))
            p++;
    }
    double value;
    if (whole && p - digits <= QUICK_DIGITS) {
        value = 0;
        for (const char *d = digits; d < p; d++)
            value = value * 10 + (*d - '0');
        if (*r->at == '-')
            value = -value;
    } else {
        /* the text's number ends at p and what follows is no part of one
         * (read_value checks), so strtod reads the same bytes */
        value = strtod(r->at, NULL);
    }
    lua_pushnumber(r->L, value);
    r->at = p;
    return PUSHED;
}

/* Reads the literal word (true, false or null) at r->at. */
static enum got read_literal(struct reader *r, const char *word, size_t len)
{
    if ((size_t)(r->end - r->at) < len || memcmp(r->at, word, len) != 0)
        return NOT_READ;
    r->at += len;
    return PUSHED;
}

static enum got read_value(struct reader *r);

/* Reads the array or object at r->at (its first byte, open) and pushes it:
 * its values (and keys) are pushed one after another, then the table is
 * made of their number and filled. An empty array gets the array
 * metatable. */
static enum got read_container(struct reader *r, char open)
{
    lua_State *L = r->L;
    char close = open == '[' ? ']' : '}';
    int object = open == '{', base = lua_gettop(L), count = 0;
    if (++r->depth > MAX_DEPTH)
        return NOT_READ;
    r->at++;
    skip_space(r);
    if (r->at < r->end && *r->at == close) {
        r->at++;
        r->depth--;
        lua_createtable(L, 0, 0);
        if (!object) {
            lua_pushvalue(L, r->array_mt);
            lua_setmetatable(L, -2);
        }
        return PUSHED;
    }
    for (;;) {
        if (!lua_checkstack(L, 4))
            goto not_read;
        if (object) {
            if (r->at >= r->end || *r->at != '"' || read_string(r) != PUSHED)
                goto not_read;
            skip_space(r);
            if (r->at >= r->end || *r->at != ':')
                goto not_read;
            r->at++;
            skip_space(r);
        }
        if (read_value(r) == NOT_READ)
            goto not_read;
        count++;
        skip_space(r);
        if (r->at < r->end && *r->at == ',') {
            r->at++;
            skip_space(r);
        } else if (r->at < r->end && *r->at == close) {
            r->at++;
            break;
        } else {
            goto not_read;
        }
    }
    r->depth--;
    lua_createtable(L, object ? 0 : count, object ? count : 0);
    int t = lua_gettop(L);
    if (object) {
        for (int i = 0; i < count; i++) {
            lua_pushvalue(L, base + 2 * i + 1);
            lua_pushvalue(L, base + 2 * i + 2);
            lua_rawset(L, t); /* a later key wins; null takes an earlier one out */
        }
    } else {
        for (int i = 0; i < count; i++) {
            lua_pushvalue(L, base + i + 1);
            lua_rawseti(L, t, i + 1);
        }
    }
    lua_replace(L, base + 1);
    lua_settop(L, base + 1);
    return PUSHED;
not_read:
    lua_settop(L, base);
    return NOT_READ;
}

/* Reads the value at r->at and pushes it (nil for null). What follows it
 * is the caller's to check (a number's strtod stops where its text ends,
 * and a byte that cannot follow a number makes the caller fail anyway). */
static enum got read_value(struct reader *r)
{
    if (r->at >= r->end)
        return NOT_READ;
    enum got got;
    switch (*r->at) {
    case '{':
    case '[':
        return read_container(r, *r->at);
    case '"':
        return read_string(r);
    case 't':
        got = read_literal(r, "true", 4);
        if (got == PUSHED)
            lua_pushboolean(r->L, 1);
        break;
    case 'f':
        got = read_literal(r, "false", 5);
        if (got == PUSHED)
            lua_pushboolean(r->L, 0);
        break;
    case 'n':
        got = read_literal(r, "null", 4);
        if (got == PUSHED) {
            lua_pushnil(r->L);
            got = NULL_READ;
        }
        break;
    default:
        got = read_number(r);
    }
    return got;
}

/* json_write.read(s, array_mt) → the object or array that s holds, decoded
 * as json.decode decodes it (lua-cjson's values, its nulls taken out, each
 * empty array and the array at the top given the metatable array_mt), or
 * nil when s is not a text this reader takes: one that is not a single
 * object or array, as RFC 8259 writes them, more than 1000 deep, with a
 * control byte or a lone surrogate in a string, or too large for the Lua
 * stack. json.decode reads such a text the slower way, which gives it
 * cjson's value or message. */
static int json_read(lua_State *L)
{
    size_t len;
    const char *s = luaL_checklstring(L, 1, &len);
    luaL_checktype(L, 2, LUA_TTABLE);
    lua_settop(L, 2);
    lua_createtable(L, KEPT_SLOTS, 0);
    struct reader r = {.L = L, .at = s, .end = s + len, .array_mt = 2, .kept = 3};
    skip_space(&r);
    int array = r.at < r.end && *r.at == '[';
    if (r.at >= r.end || (!array && *r.at != '{') || read_value(&r) != PUSHED) {
        lua_pushnil(L);
        return 1;
    }
    skip_space(&r);
    if (r.at != r.end) {
        lua_pushnil(L);
        return 1;
    }
    if (array) { /* the array at the top, marked as decode_raw marks it */
        lua_pushvalue(L, 2);
        lua_setmetatable(L, -2);
    }
    return 1;
}

void json_read_add_functions(lua_State *L)
{
    lua_pushcfunction(L, json_read);
    lua_setfield(L, -2, "read");
}
