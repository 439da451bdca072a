// The extension's wiring under workspace trust, outside VS Code: dist/test/extension.js is
// src/extension.ts bundled with `vscode` and `vscode-languageclient/node` left out, and both are
// stood in for here (a workspace's settings, its trust, the commands, the language client).
import assert from "node:assert/strict";
import Module, { createRequire } from "node:module";
import test from "node:test";

const require = createRequire(import.meta.url);
const BUNDLE = require.resolve("../dist/test/extension.js");

// A workspace: per key, the user's value, the workspace's, the default. `get` answers as a VS
// Code that let the workspace's value through would (the extension must hold the line itself).
function workspace({ trusted, user = {}, folder = {} }) {
  const defaults = { "server.command": [], "server.python": "python3", "llm.baseUrl": "", "compiler.flags": [] };
  const listeners = { config: [], trust: [] };
  const shown = [];
  const commands = new Map();
  const clients = [];
  const state = new Map();
  const editor = { document: { uri: { toString: () => "file:///w/k.cu" } }, selection: { active: { line: 3, character: 4 } } };
  const vscode = {
    StatusBarAlignment: { Left: 1 },
    ProgressLocation: { Notification: 15 },
    Uri: { parse: (s) => ({ fsPath: s }) },
    window: {
      activeTextEditor: editor,
      createOutputChannel: () => ({ appendLine: (line) => shown.push(["log", line]), dispose() {} }),
      createStatusBarItem: () => ({ show() {}, hide() {}, dispose() {} }),
      showWarningMessage: (m) => (shown.push(["warning", m]), Promise.resolve(undefined)),
      showErrorMessage: (m) => (shown.push(["error", m]), Promise.resolve(undefined)),
      showInformationMessage: (m) => (shown.push(["info", m]), Promise.resolve(undefined)),
      showInputBox: (o) => (shown.push(["input", o.title]), Promise.resolve("./app")),
      showQuickPick: () => Promise.resolve(undefined),
    },
    commands: { registerCommand: (name, fn) => (commands.set(name, fn), { dispose() {} }) },
    workspace: {
      isTrusted: trusted,
      onDidChangeConfiguration: (fn) => (listeners.config.push(fn), { dispose() {} }),
      onDidGrantWorkspaceTrust: (fn) => (listeners.trust.push(fn), { dispose() {} }),
      getConfiguration: (section) => {
        assert.equal(section, "fsr");
        const pick = (key) => (key in folder ? folder[key] : key in user ? user[key] : defaults[key]);
        return {
          get: (key) => pick(key),
          inspect: (key) => ({ key: `fsr.${key}`, defaultValue: defaults[key], globalValue: user[key], workspaceValue: folder[key] }),
        };
      },
    },
  };
  class LanguageClient {
    constructor(id, name, serverOptions, clientOptions) {
      Object.assign(this, { serverOptions, clientOptions, requests: [], notifications: [], running: false });
      clients.push(this);
    }
    onNotification() {}
    async start() { this.running = true; }
    async stop() { this.running = false; }
    isRunning() { return this.running; }
    sendRequest(type, params) {
      this.requests.push(params);
      return Promise.resolve(params.command === "fsr.searches" ? [] : "optimizing k");
    }
    sendNotification(type, params) { this.notifications.push([type.method, params]); return Promise.resolve(); }
  }
  const languageclient = {
    LanguageClient,
    ExecuteCommandRequest: { type: { method: "workspace/executeCommand" } },
    DidChangeConfigurationNotification: { type: { method: "workspace/didChangeConfiguration" } },
  };
  return { vscode, languageclient, listeners, shown, commands, clients, state, user, folder };
}

async function activated(w) {
  const load = Module._load;
  Module._load = function (request, ...rest) {
    if (request === "vscode") return w.vscode;
    if (request === "vscode-languageclient/node") return w.languageclient;
    return load.call(this, request, ...rest);
  };
  try {
    delete require.cache[BUNDLE];
    const extension = require(BUNDLE);
    const memento = { get: (k) => w.state.get(k), update: async (k, v) => void w.state.set(k, v) };
    await extension.activate({ subscriptions: [], workspaceState: memento });
    return extension;
  } finally {
    Module._load = load;
  }
}

const USER_PYTHON = "/home/me/venv/bin/python";
const hostile = () => ({
  user: { "server.python": USER_PYTHON, "llm.baseUrl": "http://my-endpoint/v1", "compiler.flags": ["-lineinfo"] },
  folder: { "server.command": ["/repo/evil.sh"], "llm.baseUrl": "http://attacker/v1", "compiler.flags": ["-ccbin=/repo/evil"] },
});

test("untrusted: the server starts from the user's python, not the folder's command, and is told it is untrusted", async () => {
  const w = workspace({ trusted: false, ...hostile() });
  await activated(w);
  assert.equal(w.clients.length, 1);
  const [c] = w.clients;
  assert.deepEqual([c.serverOptions.command, c.serverOptions.args], [USER_PYTHON, ["-m", "fsr_lsp.server.main"]]);
  const init = c.clientOptions.initializationOptions;
  assert.equal(init.trustedWorkspace, false);
  assert.equal(init.fsr.llm.baseUrl, "http://my-endpoint/v1");
  assert.deepEqual(init.fsr.compiler.flags, ["-lineinfo"]);
  const warning = w.shown.find(([kind, m]) => kind === "warning" && m.includes("fsr.server.command"));
  assert.ok(warning, JSON.stringify(w.shown));
  assert.match(warning[1], /fsr\.llm\.baseUrl/);
  assert.match(warning[1], /fsr\.compiler\.flags \(until you trust the workspace\)/);
});

test("untrusted: Optimize, Profile, Capture and re-timing are refused with a message and never reach the server", async () => {
  const w = workspace({ trusted: false, ...hostile() });
  await activated(w);
  for (const command of ["fsr.optimizeAtCursor", "fsr.profileAtCursor", "fsr.captureLaunches", "fsr.checkPerformanceOfFile"]) {
    const before = w.shown.length;
    await w.commands.get(command)();
    const said = w.shown.slice(before);
    assert.equal(said.length, 1, `${command}: ${JSON.stringify(said)}`);
    assert.equal(said[0][0], "warning");
    assert.match(said[0][1], /is off in Restricted Mode/);
  }
  assert.deepEqual(w.clients[0].requests, []);
  await w.commands.get("fsr.cancelSearch")();  // reading what runs is no code of the workspace's
  assert.deepEqual(w.clients[0].requests.map((r) => r.command), ["fsr.searches"]);
});

test("granting trust restarts the server, told it is trusted; Optimize then reaches it; machine settings stay the user's", async () => {
  const w = workspace({ trusted: false, ...hostile() });
  await activated(w);
  w.vscode.workspace.isTrusted = true;
  for (const fn of w.listeners.trust) fn();
  for (let i = 0; i < 100 && w.clients.length < 2; i++) await new Promise((r) => setTimeout(r, 5));
  assert.equal(w.clients.length, 2);
  assert.equal(w.clients[0].running, false);
  const c = w.clients[1];
  assert.equal(c.serverOptions.command, USER_PYTHON);
  assert.equal(c.clientOptions.initializationOptions.trustedWorkspace, true);
  assert.equal(c.clientOptions.initializationOptions.fsr.llm.baseUrl, "http://my-endpoint/v1");
  assert.deepEqual(c.clientOptions.initializationOptions.fsr.compiler.flags, ["-ccbin=/repo/evil"]);  // a trusted folder's
  await w.commands.get("fsr.optimizeAtCursor")();
  assert.deepEqual(c.requests, [{ command: "fsr.optimizeAt", arguments: ["file:///w/k.cu", 3, 4] }]);
});

test("the server's workspace/configuration requests and setting changes get the same filtered section", async () => {
  const w = workspace({ trusted: false, ...hostile() });
  await activated(w);
  const c = w.clients[0];
  const raw = { llm: { baseUrl: "http://attacker/v1" }, server: { command: ["/repo/evil.sh"] }, compiler: { flags: ["-ccbin=/repo/evil"] } };
  const answer = await c.clientOptions.middleware.workspace.configuration(
    { items: [{ section: "fsr" }, { section: "other" }] }, undefined, async () => [raw, { x: 1 }]);
  assert.equal(answer[0].llm.baseUrl, "http://my-endpoint/v1");
  assert.deepEqual(answer[0].compiler.flags, ["-lineinfo"]);
  assert.ok(!("server" in answer[0]));
  assert.deepEqual(answer[1], { x: 1 });
  for (const fn of w.listeners.config) fn({ affectsConfiguration: (s) => s === "fsr" || s === "fsr.llm.baseUrl" });
  const [[method, params]] = c.notifications;
  assert.equal(method, "workspace/didChangeConfiguration");
  assert.equal(params.settings.fsr.llm.baseUrl, "http://my-endpoint/v1");
});
