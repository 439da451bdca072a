-- Drives a real Neovim (0.7+) against fsr-lsp: open a .cu file, wait for diagnostics, run the
-- optimize action, wait for the verified win, apply the rewrite from Neovim's code-action menu
-- (Neovim resolves it), write the file.
-- Configuration comes as JSON in $FSR_NVIM_CONFIG; the outcome goes to its "result" path.
local config = vim.fn.json_decode(table.concat(vim.fn.readfile(os.getenv("FSR_NVIM_CONFIG")), "\n"))
local steps = {}
local function step(name, ok)
  table.insert(steps, { name = name, ok = ok and true or false })
  return ok
end
local function finish()
  vim.fn.writefile({ vim.fn.json_encode(steps) }, config.result)
  vim.cmd("qa!")
end

local diagnostics = {}
local id = vim.lsp.start_client({
  name = "fsr",
  cmd = config.cmd,
  cmd_env = config.env,
  root_dir = config.root,
  init_options = config.init_options,
  handlers = {
    ["textDocument/publishDiagnostics"] = function(_, result)
      diagnostics[result.uri] = result.diagnostics
    end,
  },
})
vim.cmd("edit " .. config.file)
local buf = vim.api.nvim_get_current_buf()
vim.bo[buf].filetype = "cuda"
vim.lsp.buf_attach_client(buf, id)
local client = vim.lsp.get_client_by_id(id)
local uri = vim.uri_from_bufnr(buf)

local function has(code)
  for _, d in ipairs(diagnostics[uri] or {}) do
    if d.code == code then return true end
  end
  return false
end

if not step("diagnostics", vim.wait(60000, function() return has("resources") end, 50)) then return finish() end

local function actions()
  local pos = { line = config.kernel_line, character = 20 }
  local params = { textDocument = { uri = uri }, range = { start = pos, ["end"] = pos }, context = { diagnostics = {} } }
  local found = {}
  for _, response in pairs(vim.lsp.buf_request_sync(buf, "textDocument/codeAction", params, 10000) or {}) do
    for _, action in ipairs(response.result or {}) do table.insert(found, action) end
  end
  return found
end

local optimize
for _, a in ipairs(actions()) do
  if a.title:find("Optimize") then optimize = a end
end
if not step("optimize action", optimize ~= nil) then return finish() end
local started = false
client.request("workspace/executeCommand", optimize.command, function() started = true end, buf)
step("search started", vim.wait(10000, function() return started end, 20))
if not step("verified win", vim.wait(120000, function() return has("fsr-win") end, 100)) then return finish() end

local apply
for _, a in ipairs(actions()) do
  if a.title:find("Apply FSR rewrite") then apply = a end
end
if not step("apply action", apply ~= nil) then return finish() end
-- Choose it from Neovim's own code-action menu, as a user does: Neovim resolves the edit
-- (the server advertises resolveProvider) and applies it.
vim.ui.select = function(items, _, on_choice)
  for i, item in ipairs(items) do
    if item[2].title:find("Apply FSR rewrite", 1, true) then return on_choice(item, i) end
  end
  on_choice(nil)
end
vim.api.nvim_win_set_cursor(0, { config.kernel_line + 1, 20 })
vim.lsp.buf.code_action()
local function applied()
  return table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n"):find("the neovim winner", 1, true) ~= nil
end
if not step("applied from the menu", vim.wait(10000, applied, 50)) then return finish() end
vim.cmd("write")
step("written", true)
finish()
