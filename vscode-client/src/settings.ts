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
  "diagnostics.onOpen", "perfOnSave", "logLevel", "gpus", "evaluator.backend", "evaluator.address", "capture.command",
  "capture.snapshotBytes",
];

/** How to start the server: an explicit command, else `python -m fsr_lsp.server.main`. */
export function serverLaunch(command: unknown, python: unknown): ServerLaunch {
  if (Array.isArray(command) && command.length > 0 && command.every((c) => typeof c === "string" && c.length > 0)) {
    return { command: command[0], args: command.slice(1) };
  }
  const interpreter = typeof python === "string" && python.trim() ? python.trim() : "python3";
  return { command: interpreter, args: ["-m", "fsr_lsp.server.main"] };
}

/** The server's `initializationOptions`: `{fsr: {llm: {...}, search: {...}, ...}}`, nested as
 * VS Code nests them; only keys the user set or that have defaults, and never a secret. */
export function initializationOptions(get: (key: string) => unknown): { fsr: Record<string, unknown> } {
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
  return { fsr };
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
