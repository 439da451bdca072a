// Unit tests of the extension's own logic (settings to server options), on node's test runner.
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import test from "node:test";

const require = createRequire(import.meta.url);
const s = require("../dist/settings.js");
const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url)));

test("an explicit command wins, else python -m fsr_lsp.server.main", () => {
  assert.deepEqual(s.serverLaunch(["fsr-lsp", "--log-file", "/tmp/l"], "py"), { command: "fsr-lsp", args: ["--log-file", "/tmp/l"] });
  assert.deepEqual(s.serverLaunch([], "/venv/bin/python"), { command: "/venv/bin/python", args: ["-m", "fsr_lsp.server.main"] });
  assert.deepEqual(s.serverLaunch(undefined, "  "), { command: "python3", args: ["-m", "fsr_lsp.server.main"] });
  assert.deepEqual(s.serverLaunch(["", "x"], undefined).command, "python3");
});

test("initialization options nest the server's keys, leave out the client's, and say whether the workspace is trusted", () => {
  const values = { "llm.baseUrl": "http://h/v1", "search.rounds": 2, "compiler.flags": ["-O3"], "gpu": 1, "server.python": "p" };
  const opts = s.initializationOptions((k) => values[k], false);
  assert.deepEqual(opts, { fsr: { llm: { baseUrl: "http://h/v1" }, search: { rounds: 2 }, compiler: { flags: ["-O3"] }, gpu: 1 },
    trustedWorkspace: false });
  assert.equal(s.initializationOptions((k) => values[k], true).trustedWorkspace, true);
});

test("settings that name a program, an address or an environment variable are machine-scoped and restricted", () => {
  const props = pkg.contributes.configuration.properties;
  const machine = Object.keys(props).filter((k) => props[k].scope === "machine").map((k) => k.slice(4));
  assert.deepEqual(machine.sort(), [...s.MACHINE_KEYS].sort());
  for (const key of ["server.command", "server.python", "compiler.nvcc", "llm.baseUrl", "llm.apiKeyEnv", "evaluator.address", "capture.command"]) {
    assert.ok(s.MACHINE_KEYS.includes(key), key);
  }
  assert.ok(!Object.values(props).some((p) => p.scope && p.scope !== "machine"), "no other scope is declared");
  const trust = pkg.capabilities.untrustedWorkspaces;
  assert.equal(trust.supported, "limited");
  assert.match(trust.description, /Restricted Mode/);
  assert.deepEqual([...trust.restrictedConfigurations].sort(), [...s.MACHINE_KEYS, ...s.TRUSTED_KEYS].map((k) => `fsr.${k}`).sort());
});

test("a restricted setting never takes the workspace's value; others do", () => {
  const machine = { defaultValue: [], globalValue: ["fsr-lsp"], workspaceValue: ["./evil.sh"] };
  assert.deepEqual(s.settingValue("server.command", ["./evil.sh"], machine, true), { value: ["fsr-lsp"], ignored: true });
  assert.deepEqual(s.settingValue("server.command", ["fsr-lsp"], machine, true), { value: ["fsr-lsp"], ignored: true });
  const noUser = { defaultValue: "", workspaceFolderValue: "http://attacker/v1" };
  assert.deepEqual(s.settingValue("llm.baseUrl", "http://attacker/v1", noUser, false), { value: "", ignored: true });
  const same = { defaultValue: "", globalValue: "http://h/v1", workspaceValue: "http://h/v1" };
  assert.deepEqual(s.settingValue("llm.baseUrl", "http://h/v1", same, false), { value: "http://h/v1", ignored: false });
  const flags = { defaultValue: [], workspaceValue: ["-ccbin=/evil"] };
  assert.deepEqual(s.settingValue("compiler.flags", ["-ccbin=/evil"], flags, false), { value: [], ignored: true });
  assert.deepEqual(s.settingValue("compiler.flags", ["-ccbin=/evil"], flags, true), { value: ["-ccbin=/evil"], ignored: false });
  const rounds = { defaultValue: 4, workspaceValue: 2 };
  assert.deepEqual(s.settingValue("search.rounds", 2, rounds, false), { value: 2, ignored: false });
  assert.equal(s.ignoredMessage([]), "");
  assert.match(s.ignoredMessage(["server.command", "compiler.flags"]),
    /^FSR: not using this workspace's fsr\.server\.command \(a program, .*\) or fsr\.compiler\.flags \(until you trust the workspace\)\.$/);
});

test("what runs the workspace's code is refused in Restricted Mode, and only that", () => {
  for (const command of ["fsr.optimizeAtCursor", "fsr.profileAtCursor", "fsr.captureLaunches", "fsr.checkPerformanceOfFile"]) {
    assert.match(s.refusal(command, false), /^FSR: .* is off in Restricted Mode/);
    assert.equal(s.refusal(command, true), "");
  }
  for (const command of ["fsr.cancelSearch", "fsr.showHistory", "fsr.restartServer"]) assert.equal(s.refusal(command, false), "");
  const contributed = pkg.contributes.commands.map((c) => c.command);
  for (const command of Object.keys(s.RESTRICTED_COMMANDS)) assert.ok(contributed.includes(command), command);
});

test("every setting the server reads is contributed, with a description and a default", () => {
  const props = pkg.contributes.configuration.properties;
  for (const key of [...s.SERVER_KEYS, ...s.CLIENT_KEYS]) {
    const p = props[`fsr.${key}`];
    assert.ok(p, `fsr.${key} is not contributed`);
    assert.ok(p.description && "default" in p, `fsr.${key} lacks a description or default`);
  }
  assert.equal(Object.keys(props).length, s.SERVER_KEYS.length + s.CLIENT_KEYS.length);
  assert.ok(!Object.keys(props).some((k) => /key$|secret|token/i.test(k) && !k.endsWith("apiKeyEnv")), "no secret settings");
});

test("only a change to how the server starts restarts it", () => {
  assert.equal(s.needsRestart((sec) => sec === "fsr.server.python"), true);
  assert.equal(s.needsRestart((sec) => sec === "fsr.search.rounds"), false);
});

test("status bar text and history table", () => {
  assert.equal(s.statusText([]), "");
  assert.equal(s.statusText(["saxpy"]), "$(sync~spin) FSR: saxpy");
  assert.equal(s.statusText(["a", "b"]), "$(sync~spin) FSR: 2 searches");
  const md = s.historyMarkdown("k", [{ round: 1, generator: "builtin:block 128", status: "verified", speedup: 1.234, time_ms: 0.5, message: "x|y" }]);
  assert.match(md, /\| 1 \| builtin:block 128 \| verified \| 0\.5000 \| 1\.23x \| x\\\|y \|/);
  assert.match(s.historyMarkdown("k", []), /No stored candidates/);
});
