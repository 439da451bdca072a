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

test("initialization options nest the server's keys and leave out the client's", () => {
  const values = { "llm.baseUrl": "http://h/v1", "search.rounds": 2, "compiler.flags": ["-O3"], "gpu": 1, "server.python": "p" };
  const opts = s.initializationOptions((k) => values[k]);
  assert.deepEqual(opts, { fsr: { llm: { baseUrl: "http://h/v1" }, search: { rounds: 2 }, compiler: { flags: ["-O3"] }, gpu: 1 } });
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
