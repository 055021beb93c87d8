-- What a renderer made of a text, kept for the page being written and the
-- one before it. A node's names, ids, states and messages are mostly the
-- same at every refresh, and finding what was made of one is quicker than
-- making it again; what only older pages had is dropped when a page
-- starts, so what is kept is at most two pages' texts.
local M = {}

-- A memo of make(value) (never nil): returns find(value), which gives
-- make(value), made at most once per page for a string (a value of another
-- type is made each time: 1 and 1.0 would be one key), and new_page(), to
-- be called at each page's start.
function M.new(make)
  local current, last = {}, {}
  local function find(s)
    local made = current[s]
    if made == nil then
      if type(s) ~= "string" then
        return make(s)
      end
      made = last[s]
      if made == nil then
        made = make(s)
      end
      current[s] = made
    end
    return made
  end
  local function new_page()
    last, current = current, {}
  end
  return find, new_page
end

return M
