// Pure logic from VS Code settings to the language server: no `vscode` import, so the node
// test runner can test it outside VS Code.

export interface ServerLaunch {
  command: string;
  args: string[];
}

/** Settings the extension reads itself; every other `fsr.*` key goes to the server. */
export const CLIENT_KEYS = ["server.command", "server.python"];

/** Every `fsr.*` key the server reads (package.json contributes each, with its default). */
export const SERVER_KEYS = [
  "llm.baseUrl", "llm.model", "llm.apiKeyEnv", "llm.temperature", "llm.timeout", "llm.maxAnswerBytes",
  "search.rounds", "search.candidates", "search.timeBudget", "search.targetSpeedup", "search.fixAttempts",
  "search.sanitize", "search.minGain", "compiler.nvcc", "compiler.arch", "compiler.flags", "includePaths", "gpu", "autoApply",
  "diagnostics.onOpen", "perfOnSave", "logLevel", "gpus", "evaluator.backend", "evaluator.serviceIdle", "evaluator.address", "capture.command",
  "capture.snapshotBytes",
];

/** Settings that name a program, an address or an environment variable: `"scope": "machine"` in
 * package.json, so only the user's own settings set them, never a workspace's (fsr_lsp/settings.py
 * MACHINE: the server refuses them from a workspace too). */
export const MACHINE_KEYS = [
  "server.command", "server.python", "compiler.nvcc", "llm.baseUrl", "llm.apiKeyEnv", "evaluator.address", "capture.command",
];

/** A workspace's settings may set these only once the workspace is trusted (nvcc's flags can name
 * a program: -ccbin); listed, with MACHINE_KEYS, in package.json's restrictedConfigurations. */
export const TRUSTED_KEYS = ["compiler.flags"];

/** What VS Code's `WorkspaceConfiguration.inspect` tells of a setting (the fields used here). */
export interface Inspected {
  defaultValue?: unknown;
  globalValue?: unknown;
  workspaceValue?: unknown;
  workspaceFolderValue?: unknown;
}

/** A setting as the extension uses it. VS Code itself keeps a workspace's value out of a machine
 * setting, and out of a restricted one in Restricted Mode; this holds the same line should a value
 * get through: a restricted setting whose value is the workspace's gets the user's (or the
 * default). `ignored`: the workspace sets it and that value is not used, to be said. */
export function settingValue(key: string, value: unknown, inspected: Inspected | undefined, trusted: boolean):
  { value: unknown; ignored: boolean } {
  const restricted = MACHINE_KEYS.includes(key) || (!trusted && TRUSTED_KEYS.includes(key));
  const fromWorkspace = [inspected?.workspaceFolderValue, inspected?.workspaceValue].filter((v) => v !== undefined);
  if (!restricted || !inspected || fromWorkspace.length === 0) return { value, ignored: false };
  const user = inspected.globalValue !== undefined ? inspected.globalValue : inspected.defaultValue;
  const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
  const isTheWorkspaces = fromWorkspace.some((v) => same(v, value)) && !same(user, value);
  return { value: isTheWorkspaces ? user : value, ignored: fromWorkspace.some((v) => !same(v, user)) };
}

/** The one line that says which of the workspace's settings are not used, or "" for none. */
export function ignoredMessage(keys: string[]): string {
  const machine = keys.filter((k) => MACHINE_KEYS.includes(k)).map((k) => `fsr.${k}`);
  const untrusted = keys.filter((k) => !MACHINE_KEYS.includes(k)).map((k) => `fsr.${k}`);
  const parts = [];
  if (machine.length) {
    parts.push(`${machine.join(", ")} (a program, an address or an environment variable: only your user settings choose those)`);
  }
  if (untrusted.length) parts.push(`${untrusted.join(", ")} (until you trust the workspace)`);
  return parts.length ? `FSR: not using this workspace's ${parts.join(" or ")}.` : "";
}

/** The commands that run the workspace's code or a program it names, refused in Restricted Mode. */
export const RESTRICTED_COMMANDS: Record<string, string> = {
  "fsr.optimizeAtCursor": "Optimize", "fsr.profileAtCursor": "Profile", "fsr.captureLaunches": "Capture",
  "fsr.checkPerformanceOfFile": "The performance check",
};

/** Why `command` may not run in this workspace ("" when it may). */
export function refusal(command: string, trusted: boolean): string {
  const what = RESTRICTED_COMMANDS[command];
  if (trusted || !what) return "";
  return `FSR: ${what} is off in Restricted Mode: it would run this workspace's code. Trust the workspace ` +
    "(Workspaces: Manage Workspace Trust) to use it; diagnostics and hover work without.";
}

/** How to start the server: an explicit command, else `python -m fsr_lsp.server.main`. */
export function serverLaunch(command: unknown, python: unknown): ServerLaunch {
  if (Array.isArray(command) && command.length > 0 && command.every((c) => typeof c === "string" && c.length > 0)) {
    return { command: command[0], args: command.slice(1) };
  }
  const interpreter = typeof python === "string" && python.trim() ? python.trim() : "python3";
  return { command: interpreter, args: ["-m", "fsr_lsp.server.main"] };
}

/** The server's `initializationOptions`: `{fsr: {llm: {...}, search: {...}, ...}, trustedWorkspace}`,
 * nested as VS Code nests them; only keys the user set or that have defaults, and never a secret.
 * `trustedWorkspace` false: the server refuses what runs the workspace's code (fsr_lsp/server/trust.py). */
export function initializationOptions(get: (key: string) => unknown, trusted: boolean):
  { fsr: Record<string, unknown>; trustedWorkspace: boolean } {
  return { fsr: serverSettings(get), trustedWorkspace: trusted };
}

/** The `fsr` section the server reads (initializationOptions, workspace/configuration, changes). */
export function serverSettings(get: (key: string) => unknown): Record<string, unknown> {
  const fsr: Record<string, unknown> = {};
  for (const key of SERVER_KEYS) {
    const value = get(key);
    if (value === undefined) continue;
    const parts = key.split(".");
    let node = fsr;
    for (const part of parts.slice(0, -1)) {
      node[part] = (node[part] as Record<string, unknown>) ?? {};
      node = node[part] as Record<string, unknown>;
    }
    node[parts[parts.length - 1]] = value;
  }
  return fsr;
}

/** Whether a change to these `fsr.*` keys needs the server restarted (how it starts changed);
 * other keys reach the running server through workspace/didChangeConfiguration. */
export function needsRestart(affects: (section: string) => boolean): boolean {
  return CLIENT_KEYS.some((key) => affects(`fsr.${key}`));
}

export interface SearchProgress {
  uri: string;
  kernel: string;
  message: string;
  percentage: number;
  done: boolean;
}

/** Status bar text for the running searches, or "" to hide it. */
export function statusText(running: string[]): string {
  if (running.length === 0) return "";
  return running.length === 1 ? `$(sync~spin) FSR: ${running[0]}` : `$(sync~spin) FSR: ${running.length} searches`;
}

export interface HistoryRow {
  round: number;
  generator: string;
  status: string;
  speedup: number | null;
  time_ms: number | null;
  message: string;
}

/** A markdown table of a kernel's stored candidates. */
export function historyMarkdown(kernel: string, rows: HistoryRow[]): string {
  const lines = [`# FSR history of \`${kernel}\``, ""];
  if (rows.length === 0) return lines.concat(["No stored candidates yet."]).join("\n");
  lines.push("| round | generator | verdict | ms | speedup | detail |", "|---|---|---|---|---|---|");
  for (const r of rows) {
    const ms = r.time_ms == null ? "" : r.time_ms.toPrecision(4);
    const speedup = r.speedup == null ? "" : `${r.speedup.toFixed(2)}x`;
    const detail = (r.message || "").split("\n")[0].replace(/\|/g, "\\|");
    lines.push(`| ${r.round} | ${r.generator.replace(/\|/g, "\\|")} | ${r.status} | ${ms} | ${speedup} | ${detail} |`);
  }
  return lines.join("\n");
}
