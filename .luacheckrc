-- luacheck: the project's Lua style (Lua 5.4, no globals). Messages are long
-- sentences on purpose, so line length is not checked.
std = "lua54"
max_line_length = false
-- Rules run in a sandbox whose environment provides the gl helper library.
files["rules/"] = { read_globals = { "gl" } }
-- Specs capture what the CLI prints by swapping io.stdout and io.stderr.
files["spec/"] = { std = "+busted", globals = { io = { fields = { "stdout", "stderr" } } } }
