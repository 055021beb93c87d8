-- lua5.4 cmake/compile.lua SOURCE CHUNKNAME OUT: writes SOURCE's bytecode to
-- OUT, compiled under CHUNKNAME and with its debug information kept, so an
-- error in an embedded script still names "[embedded] <path>:<line>".
local source, chunkname, out = ...
local input = assert(io.open(source, "rb"))
local chunk = assert(load(input:read("a"), chunkname, "t"))
input:close()
local output = assert(io.open(out, "wb"))
assert(output:write(string.dump(chunk)))
assert(output:close())
