/* gpuledger.shape_check: a value checked against a shape, in C
 * (lua/gpuledger/sources/shape.lua says what a shape is, and is the only
 * caller). A shape is Lua data: a type name ("string", "number",
 * "boolean", "table"; "any"), or a table {required = shape}, {range =
 * {min, max}, whole = true?}, {list = shape, max = N?}, {map = shape},
 * else an object's fields (key → shape). Each shape is compiled once, the
 * first time it is met, into nodes (struct node) that the walk reads
 * without asking the shape's tables again; the compiled shape is kept for
 * as long as the shape table lives. What is wrong comes back as two
 * strings: where, below the value ("" for the value itself, ".a[2].b"),
 * and what (" is a number, want a string"). The value's tables are read
 * raw (rawget, rawlen, next), as lua-cjson decodes them (json.array's mark
 * is a metatable with a __name only). A JSON null is lua-cjson's, a light
 * userdata NULL: it, like nil, is an absent value. */
#include "shape_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>

/* The deepest a shape may nest: one that holds itself is an error, not a
 * C stack overflow. */
#define DEPTH_CAP 100

/* The fewest fields of an object shape whose values are first read by
 * their own fields (fits_by_value): a record that has few of the fields
 * its shape names (a /proc record: those of its kind of process) is then
 * checked in fewer steps. With fewer, each field of the shape is looked
 * up, which is as quick. */
#define MANY_FIELDS 8

/* The stack slots one level of the walk takes at most (fits_by_value's
 * index, key, field and field number), and those a failure takes at its
 * end. */
#define LEVEL_SLOTS   4
#define FAILURE_SLOTS 8

enum node_kind { NODE_ANY, NODE_TYPE, NODE_REQUIRED, NODE_RANGE, NODE_LIST, NODE_MAP, NODE_OBJECT };

/* One shape, compiled. Indices are of struct compiled's nodes and fields,
 * and of its refs table (the Lua values a node needs: its shape, for the
 * wording of what it wants; a field's key; a range's bounds). */
struct node {
    enum node_kind kind;
    unsigned types; /* NODE_TYPE: the types (1 << LUA_T*) of that name; none for a name of none */
    int shape;      /* refs: the shape itself */
    int inner;      /* NODE_REQUIRED, NODE_LIST, NODE_MAP: the shape required, of the items */
    int min;        /* NODE_RANGE: refs of min (max: min + 1) */
    lua_Integer min_whole; /* NODE_RANGE: the bounds as the wording writes them */
    lua_Integer max_whole;
    int whole;   /* NODE_RANGE: whole numbers only */
    int has_max; /* NODE_LIST: of at most max items */
    lua_Integer max;
    int first_field; /* NODE_OBJECT: its fields, in the order of their keys (push_sorted_keys) */
    int field_count;
    int index; /* NODE_OBJECT of MANY_FIELDS: refs of a table key → field number (1 on) */
};

/* A field of an object shape: refs of its key, and the node of its shape. */
struct field {
    int key;
    int node;
};

/* A shape compiled: its nodes (the first the shape's own), their fields,
 * and how deep the nodes nest. The block of a userdata whose user value
 * is the refs table. */
struct compiled {
    struct node *nodes;
    int node_count, node_cap;
    struct field *fields;
    int field_count, field_cap;
    int depth;
};

/* Whether the value at index is absent: nil, or lua-cjson's null. */
static int is_absent(lua_State *L, int index)
{
    int type = lua_type(L, index);
    return type == LUA_TNIL || (type == LUA_TLIGHTUSERDATA && lua_touserdata(L, index) == NULL);
}

/* __gc of a compiled shape: frees its nodes and fields. */
static int compiled_gc(lua_State *L)
{
    struct compiled *c = lua_touserdata(L, 1);
    free(c->nodes);
    free(c->fields);
    c->nodes = NULL;
    c->fields = NULL;
    return 0;
}

/* Makes room for count more items of size bytes in *array (of *used, room
 * for *cap); raises when memory is out. */
static void *grown(lua_State *L, void *array, int used, int count, int *cap, size_t size)
{
    if (used + count <= *cap)
        return array;
    int wanted = *cap ? *cap : 16;
    while (wanted < used + count)
        wanted *= 2;
    void *bigger = realloc(array, (size_t)wanted * size);
    if (!bigger)
        luaL_error(L, "shape: out of memory");
    *cap = wanted;
    return bigger;
}

/* Appends the value at index to the refs table at index refs; returns
 * its index there. */
static int add_ref(lua_State *L, int refs, int index)
{
    int ref = (int)lua_rawlen(L, refs) + 1;
    lua_pushvalue(L, index);
    lua_rawseti(L, refs, ref);
    return ref;
}

/* Pushes field name of the shape table at index shape when it is true
 * (not nil nor false) and returns 1; else pushes nothing and returns 0. */
static int push_true_field(lua_State *L, int shape, const char *name)
{
    lua_getfield(L, shape, name);
    if (lua_toboolean(L, -1))
        return 1;
    lua_pop(L, 1);
    return 0;
}

/* The whole number at index (a range's bound, a list's max, which the
 * messages write with %d); raises, naming it as what, when it is none. */
static lua_Integer whole_at(lua_State *L, int index, const char *what)
{
    int is_whole;
    lua_Integer n = lua_tointegerx(L, index, &is_whole);
    if (!is_whole)
        luaL_error(L, "shape: %s is a whole number, not %s", what, luaL_tolstring(L, index, NULL));
    return n;
}

/* The types whose name (as type() gives it) is the string at index name:
 * one, two for "userdata" (full and light), none for a name of none. */
static unsigned types_named(lua_State *L, int name)
{
    size_t len;
    const char *want = lua_tolstring(L, name, &len);
    unsigned types = 0;
    for (int type = LUA_TNIL; type < LUA_NUMTYPES; type++) {
        const char *found = lua_typename(L, type);
        if (strlen(found) == len && memcmp(found, want, len) == 0)
            types |= 1u << type;
    }
    return types;
}

/* Whether key a (at index a) comes before key b in the order of
 * push_sorted_keys: by type (as lua_type numbers them: booleans, numbers,
 * strings, tables, …), numbers and strings by their value; other keys of
 * one type are equal. */
static int key_before(lua_State *L, int a, int b)
{
    int type_a = lua_type(L, a), type_b = lua_type(L, b);
    if (type_a != type_b)
        return type_a < type_b;
    return (type_a == LUA_TNUMBER || type_a == LUA_TSTRING) && lua_compare(L, a, b, LUA_OPLT);
}

/* Pushes a new table of the keys of the table at index t, 1 to n, sorted
 * (key_before; keys equal there in next()'s order), and returns n: the
 * order every process walks a table in, whatever its string hashes. An
 * insertion sort: shapes and the maps an error is looked for in are
 * small. */
static int push_sorted_keys(lua_State *L, int t)
{
    luaL_checkstack(L, 4, "shape: nested too deep");
    lua_newtable(L);
    int keys = lua_gettop(L), n = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        int j = n++;
        for (; j > 0; j--) {
            lua_rawgeti(L, keys, j);
            int before = key_before(L, -2, -1);
            if (!before) {
                lua_pop(L, 1);
                break;
            }
            lua_rawseti(L, keys, j + 1);
        }
        lua_pushvalue(L, -1);
        lua_rawseti(L, keys, j + 1);
    }
    return n;
}

static int compile_node(lua_State *L, struct compiled *c, int refs, int shape, int depth);

/* Compiles the fields of the object shape table at index shape into node
 * n, in the order of their keys (push_sorted_keys), so that the field an
 * error names first is the same in every process: their places first,
 * then each field's shape (whose own fields come after). */
static void compile_fields(lua_State *L, struct compiled *c, int refs, int shape, int n, int depth)
{
    int count = push_sorted_keys(L, shape);
    int keys = lua_gettop(L);
    c->fields = grown(L, c->fields, c->field_count, count, &c->field_cap, sizeof *c->fields);
    int first = c->field_count;
    c->field_count += count;
    c->nodes[n].first_field = first;
    c->nodes[n].field_count = count;
    int index = 0;
    if (count >= MANY_FIELDS) {
        lua_createtable(L, 0, count);
        index = lua_gettop(L);
        c->nodes[n].index = add_ref(L, refs, index);
    }
    for (int k = 1; k <= count; k++) {
        int i = first + k - 1;
        lua_rawgeti(L, keys, k);
        lua_pushvalue(L, -1);
        lua_rawget(L, shape);
        int key = add_ref(L, refs, -2);
        int node = compile_node(L, c, refs, lua_gettop(L), depth + 1);
        c->fields[i].key = key;
        c->fields[i].node = node;
        if (index) {
            lua_pushvalue(L, -2);
            lua_pushinteger(L, k);
            lua_rawset(L, index);
        }
        lua_pop(L, 2);
    }
    lua_settop(L, keys - 1);
}

/* Compiles the shape at index shape (depth shapes below the first) into a
 * new node of c, and its shapes into the nodes after; returns its index.
 * Raises on a shape that is none, as the Lua checker before it did. */
static int compile_node(lua_State *L, struct compiled *c, int refs, int shape, int depth)
{
    if (depth >= DEPTH_CAP)
        luaL_error(L, "shape: nested deeper than %d shapes", DEPTH_CAP);
    luaL_checkstack(L, 6, "shape: nested too deep");
    if (depth > c->depth)
        c->depth = depth;
    c->nodes = grown(L, c->nodes, c->node_count, 1, &c->node_cap, sizeof *c->nodes);
    int n = c->node_count++;
    memset(&c->nodes[n], 0, sizeof c->nodes[n]);
    c->nodes[n].shape = add_ref(L, refs, shape);
    if (lua_type(L, shape) == LUA_TSTRING) {
        size_t len;
        const char *name = lua_tolstring(L, shape, &len);
        int any = len == 3 && memcmp(name, "any", 3) == 0;
        c->nodes[n].kind = any ? NODE_ANY : NODE_TYPE;
        c->nodes[n].types = any ? 0 : types_named(L, shape);
        return n;
    }
    if (lua_type(L, shape) != LUA_TTABLE)
        luaL_error(L, "shape: a shape is a type name or a table, not a %s",
                   luaL_typename(L, shape));
    int top = lua_gettop(L);
    if (push_true_field(L, shape, "required")) {
        int inner = compile_node(L, c, refs, top + 1, depth + 1);
        c->nodes[n].kind = NODE_REQUIRED;
        c->nodes[n].inner = inner;
    } else if (push_true_field(L, shape, "range")) {
        if (lua_type(L, top + 1) != LUA_TTABLE)
            luaL_error(L, "shape: a range is a table {min, max}, not a %s",
                       luaL_typename(L, top + 1));
        lua_geti(L, top + 1, 1);
        lua_geti(L, top + 1, 2);
        struct node *node = &c->nodes[n];
        node->kind = NODE_RANGE;
        node->min_whole = whole_at(L, top + 2, "a range's min");
        node->max_whole = whole_at(L, top + 3, "a range's max");
        node->min = add_ref(L, refs, top + 2);
        add_ref(L, refs, top + 3);
        node->whole = push_true_field(L, shape, "whole");
    } else if (push_true_field(L, shape, "list")) {
        int inner = compile_node(L, c, refs, top + 1, depth + 1);
        struct node *node = &c->nodes[n];
        node->kind = NODE_LIST;
        node->inner = inner;
        node->has_max = push_true_field(L, shape, "max");
        if (node->has_max)
            node->max = whole_at(L, -1, "a list's max");
    } else if (push_true_field(L, shape, "map")) {
        int inner = compile_node(L, c, refs, top + 1, depth + 1);
        c->nodes[n].kind = NODE_MAP;
        c->nodes[n].inner = inner;
    } else {
        c->nodes[n].kind = NODE_OBJECT;
        compile_fields(L, c, refs, shape, n, depth);
    }
    lua_settop(L, top);
    return n;
}

/* Pushes the compiled shape at index shape and, over it, its refs table:
 * the one kept in the cache (the table at index cache, by shape), or one
 * compiled now and kept there. */
static struct compiled *push_compiled(lua_State *L, int cache, int shape)
{
    lua_pushvalue(L, shape);
    if (lua_rawget(L, cache) == LUA_TUSERDATA) {
        lua_getiuservalue(L, -1, 1);
        return lua_touserdata(L, -2);
    }
    lua_pop(L, 1);
    struct compiled *c = lua_newuserdatauv(L, sizeof *c, 1);
    memset(c, 0, sizeof *c);
    if (luaL_newmetatable(L, "gpuledger.compiled_shape")) {
        lua_pushcfunction(L, compiled_gc);
        lua_setfield(L, -2, "__gc");
    }
    lua_setmetatable(L, -2);
    lua_newtable(L);
    lua_pushvalue(L, -1);
    lua_setiuservalue(L, -3, 1);
    compile_node(L, c, lua_gettop(L), shape, 0);
    lua_pushvalue(L, shape);
    lua_pushvalue(L, -3);
    lua_rawset(L, cache);
    return c;
}

/* What the walk reads: the compiled shape and the index of its refs. */
struct walk {
    const struct compiled *c;
    int refs;
};

/* Pushes what a value of node n is, as the messages say it: "a string",
 * "a whole number from 0 to 9", "a list", "an object" (of a shape
 * required: what it requires). */
static void push_want(lua_State *L, const struct walk *w, int n)
{
    const struct node *node = &w->c->nodes[n];
    switch (node->kind) {
    case NODE_ANY:
    case NODE_TYPE:
        lua_pushliteral(L, "a ");
        lua_rawgeti(L, w->refs, node->shape);
        lua_concat(L, 2);
        break;
    case NODE_REQUIRED:
        push_want(L, w, node->inner);
        break;
    case NODE_RANGE:
        lua_pushfstring(L, "a %snumber from %I to %I", node->whole ? "whole " : "",
                        (LUAI_UACINT)node->min_whole, (LUAI_UACINT)node->max_whole);
        break;
    case NODE_LIST:
        lua_pushliteral(L, "a list");
        break;
    default:
        lua_pushliteral(L, "an object");
    }
}

/* A failure at the value itself, what is wrong on top of the stack: below
 * ("") pushed over it. Returns 1, as a failed check does. */
static int failed(lua_State *L)
{
    lua_pushliteral(L, "");
    return 1;
}

/* As failed, what being the string prefix, then node n's want. */
static int failed_wanting(lua_State *L, const struct walk *w, const char *prefix, int n)
{
    lua_pushstring(L, prefix);
    push_want(L, w, n);
    lua_concat(L, 2);
    return failed(L);
}

/* As failed_wanting, what being " is a <type of the value at index
 * value>, want <node n's want>". */
static int failed_type(lua_State *L, const struct walk *w, int value, int n)
{
    char prefix[64];
    snprintf(prefix, sizeof prefix, " is a %s, want ", luaL_typename(L, value));
    return failed_wanting(L, w, prefix, n);
}

/* After a failure below this value ([what, below] on top), its piece of
 * the path pushed over them: [what, piece .. below]. Returns 1. */
static int prepended(lua_State *L)
{
    lua_rotate(L, -2, 1);
    lua_concat(L, 2);
    return 1;
}

/* As prepended, the piece being "." and the key of field (of an object
 * shape) as Lua's concatenation writes it: a string as it is, a number as
 * tostring does. */
static int prepended_field(lua_State *L, const struct walk *w, const struct field *field)
{
    lua_pushliteral(L, ".");
    lua_rawgeti(L, w->refs, field->key);
    lua_concat(L, 2);
    return prepended(L);
}

/* Whether the value at index value, which is present, is of the types. */
static int is_of(lua_State *L, int value, unsigned types)
{
    return (types >> lua_type(L, value)) & 1u;
}

static int walk(lua_State *L, const struct walk *w, int n, int value);

/* The check of a number range (walk's) of a present value. Lua's
 * comparisons, exact between an integer and a float. */
static int walk_range(lua_State *L, const struct walk *w, int n, int value)
{
    const struct node *node = &w->c->nodes[n];
    if (lua_type(L, value) != LUA_TNUMBER)
        return failed_type(L, w, value, n);
    int is_integer = lua_isinteger(L, value);
    lua_Number number = lua_tonumber(L, value);
    int fits = is_integer || number == number;
    if (fits) {
        lua_rawgeti(L, w->refs, node->min);
        lua_rawgeti(L, w->refs, node->min + 1);
        fits = !lua_compare(L, value, -2, LUA_OPLT) && !lua_compare(L, -1, value, LUA_OPLT);
        lua_pop(L, 2);
    }
    if (fits && !is_integer && node->whole)
        fits = floor(number) == number;
    if (fits)
        return 0;
    char prefix[64];
    snprintf(prefix, sizeof prefix, " is %.14g, want ", (double)number);
    return failed_wanting(L, w, prefix, n);
}

/* The length of the table at index t read as a JSON array, into *length;
 * 0 when it has a key that is not a whole number from 1 on (an object). */
static int list_length(lua_State *L, int t, lua_Integer *length)
{
    *length = 0;
    lua_pushnil(L);
    while (lua_next(L, t)) {
        lua_pop(L, 1);
        lua_Integer key = lua_isinteger(L, -1) ? lua_tointeger(L, -1) : 0;
        if (key < 1) {
            lua_pop(L, 1);
            return 0;
        }
        if (key > *length)
            *length = key;
    }
    return 1;
}

/* The check of a list (walk's) of a table value. Its length is #value, or
 * list_length's when a key comes after that border in next()'s order (a
 * hole, or an object's key). */
static int walk_list(lua_State *L, const struct walk *w, int n, int value)
{
    const struct node *node = &w->c->nodes[n];
    lua_Integer length = (lua_Integer)lua_rawlen(L, value);
    if (length > 0)
        lua_pushinteger(L, length);
    else
        lua_pushnil(L);
    if (lua_next(L, value)) {
        lua_pop(L, 2);
        if (!list_length(L, value, &length)) {
            lua_pushliteral(L, " is an object, want a list");
            return failed(L);
        }
    }
    if (node->has_max && length > node->max) {
        lua_pushfstring(L, " has %I items, want at most %I", (LUAI_UACINT)length,
                        (LUAI_UACINT)node->max);
        return failed(L);
    }
    const struct node *items = &w->c->nodes[node->inner];
    if (items->kind == NODE_ANY)
        return 0; /* nulls too */
    /* items of a type passed at once; an absent one (nil, or the null
     * that is a light userdata) never, and a "userdata" item walked */
    unsigned absent = (1u << LUA_TNIL) | (1u << LUA_TLIGHTUSERDATA);
    unsigned plain = items->kind == NODE_TYPE ? items->types & ~absent : 0;
    for (lua_Integer i = 1; i <= length; i++) {
        int item = lua_gettop(L) + 1;
        int type = lua_rawgeti(L, value, i);
        if ((plain >> type) & 1u) {
            lua_pop(L, 1);
            continue;
        }
        if (is_absent(L, item))
            failed_wanting(L, w, " is null, want ", node->inner);
        else if (!walk(L, w, node->inner, item)) {
            lua_pop(L, 1);
            continue;
        }
        lua_pushfstring(L, "[%I]", (LUAI_UACINT)i);
        return prepended(L);
    }
    return 0;
}

/* The check of a map (walk's) of a table value: its items in next()'s
 * order, and once one does not fit, again in the order of their keys
 * (push_sorted_keys), so that the item named is the first by key in every
 * process. */
static int walk_map(lua_State *L, const struct walk *w, int n, int value)
{
    int items = w->c->nodes[n].inner;
    int base = lua_gettop(L);
    lua_pushnil(L);
    while (lua_next(L, value)) {
        if (walk(L, w, items, lua_gettop(L)))
            break;
        lua_pop(L, 1);
    }
    if (lua_gettop(L) == base)
        return 0;
    lua_settop(L, base);
    int count = push_sorted_keys(L, value);
    for (int k = 1; k <= count; k++) {
        lua_rawgeti(L, base + 1, k);
        lua_pushvalue(L, -1);
        lua_rawget(L, value);
        int item = lua_gettop(L);
        if (walk(L, w, items, item)) {
            lua_pushliteral(L, ".");
            luaL_tolstring(L, item - 1, NULL);
            lua_concat(L, 2);
            return prepended(L);
        }
        lua_pop(L, 2);
    }
    return 0; /* (not reached: an item did not fit) */
}

/* Whether the table value has the object shape of node n (one of
 * MANY_FIELDS), read by its own fields: 1 when it has, 0 when it has not
 * or has more fields than the shape (an answer as the source gave it,
 * better read by the shape's fields). Leaves the stack as it was. */
static int fits_by_value(lua_State *L, const struct walk *w, const struct node *node, int value)
{
    int base = lua_gettop(L);
    const struct field *fields = &w->c->fields[node->first_field];
    lua_rawgeti(L, w->refs, node->index);
    int index = base + 1, seen = 0, fits = 1;
    lua_pushnil(L);
    while (fits && lua_next(L, value)) {
        int at = lua_gettop(L);
        lua_pushvalue(L, at - 1);
        lua_rawget(L, index);
        lua_Integer i = lua_tointeger(L, -1);
        lua_pop(L, 1);
        fits = ++seen <= node->field_count && !(i > 0 && walk(L, w, fields[i - 1].node, at));
        lua_settop(L, at - 1);
    }
    for (int i = 0; fits && i < node->field_count; i++) {
        if (w->c->nodes[fields[i].node].kind == NODE_REQUIRED) {
            lua_rawgeti(L, w->refs, fields[i].key);
            lua_rawget(L, value);
            fits = !is_absent(L, -1);
            lua_pop(L, 1);
        }
    }
    lua_settop(L, base);
    return fits;
}

/* The check of an object (walk's) of a table value: each field of the
 * shape in its order, the value's field of that key read raw; the first
 * that does not fit is the one named. */
static int walk_object(lua_State *L, const struct walk *w, int n, int value)
{
    const struct node *node = &w->c->nodes[n];
    if (node->index && fits_by_value(L, w, node, value))
        return 0;
    const struct field *field = &w->c->fields[node->first_field];
    for (int i = 0; i < node->field_count; i++, field++) {
        int at = lua_gettop(L) + 1;
        lua_rawgeti(L, w->refs, field->key);
        lua_rawget(L, value);
        if (walk(L, w, field->node, at))
            return prepended_field(L, w, field);
        lua_pop(L, 1);
    }
    return 0;
}

/* Checks the value at index value (absolute, as every index here) against
 * node n. Returns 0, the stack as it was, when the value has its shape or
 * is absent (unless required); else 1, with what is wrong and where it is
 * below the value pushed, in that order, over whatever the walk left. */
static int walk(lua_State *L, const struct walk *w, int n, int value)
{
    const struct node *node = &w->c->nodes[n];
    switch (node->kind) {
    case NODE_ANY:
        return 0;
    case NODE_TYPE:
        if (is_absent(L, value) || is_of(L, value, node->types))
            return 0;
        return failed_type(L, w, value, n);
    case NODE_REQUIRED:
        if (is_absent(L, value))
            return failed_wanting(L, w, " is missing, want ", n);
        return walk(L, w, node->inner, value);
    default:
        break;
    }
    if (is_absent(L, value))
        return 0;
    if (node->kind == NODE_RANGE)
        return walk_range(L, w, n, value);
    if (lua_type(L, value) != LUA_TTABLE)
        return failed_type(L, w, value, n);
    if (node->kind == NODE_LIST)
        return walk_list(L, w, n, value);
    if (node->kind == NODE_MAP)
        return walk_map(L, w, n, value);
    return walk_object(L, w, n, value);
}

/* The answer of check and check_item from the walk's result (failed: what
 * and below on top of the stack): nil, or below and what. */
static int answer(lua_State *L, int failed)
{
    if (!failed) {
        lua_pushnil(L);
        return 1;
    }
    lua_rotate(L, -2, 1);
    return 2;
}

/* Sets up the walk of the value at index 1 against the shape at index 2
 * (the cache of compiled shapes: the upvalue). */
static void start_walk(lua_State *L, struct walk *w)
{
    luaL_checkany(L, 2);
    lua_settop(L, 2);
    w->c = push_compiled(L, lua_upvalueindex(1), 2);
    w->refs = lua_gettop(L);
    luaL_checkstack(L, (w->c->depth + 1) * LEVEL_SLOTS + FAILURE_SLOTS, "shape: nested too deep");
}

/* shape_check.check(value, shape) → nil when value has the shape (or is
 * absent: nil, or lua-cjson's null, where the shape does not require it),
 * else below, what: where the first field that does not is below value
 * ("" for value itself, ".a[2].b") and what is wrong with it (" is a
 * <type>, want <what>", " is missing, want …", " is null, want …" for a
 * list's item, " is <number %.14g>, want a number from …", " has <n>
 * items, want at most <max>", " is an object, want a list"). */
static int shape_check_check(lua_State *L)
{
    struct walk w;
    start_walk(L, &w);
    return answer(L, walk(L, &w, 0, 1));
}

/* shape_check.check_item(value, shape) → as check, for an item of a list:
 * an absent one has no shape but "any" (" is null, want …"). */
static int shape_check_check_item(lua_State *L)
{
    struct walk w;
    start_walk(L, &w);
    if (is_absent(L, 1) && w.c->nodes[0].kind != NODE_ANY)
        return answer(L, failed_wanting(L, &w, " is null, want ", 0));
    return answer(L, walk(L, &w, 0, 1));
}

/* shape_check.length(t) → the length of table t read as a JSON array (its
 * largest key), or nil when it has a key that is not a whole number from
 * 1 on (an object). */
static int shape_check_length(lua_State *L)
{
    luaL_checktype(L, 1, LUA_TTABLE);
    lua_Integer length;
    if (list_length(L, 1, &length))
        lua_pushinteger(L, length);
    else
        lua_pushnil(L);
    return 1;
}

static const luaL_Reg shape_check_functions[] = {
    {"check", shape_check_check},
    {"check_item", shape_check_check_item},
    {"length", shape_check_length},
    {NULL, NULL},
};

/* As shape_check.h says: the functions, sharing the cache of compiled
 * shapes (a table with weak keys, the shapes) as their upvalue. */
int luaopen_gpuledger_shape_check(lua_State *L)
{
    luaL_newlibtable(L, shape_check_functions);
    lua_newtable(L);
    lua_newtable(L);
    lua_pushliteral(L, "k");
    lua_setfield(L, -2, "__mode");
    lua_setmetatable(L, -2);
    luaL_setfuncs(L, shape_check_functions, 1);
    return 1;
}
