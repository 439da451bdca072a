// The FSR extension: starts fsr-lsp, forwards the fsr.* settings, shows search progress as a
// cancellable notification and running searches in the status bar. The server does the work.
// In Restricted Mode (an untrusted workspace) the server gets told so, and what would run the
// workspace's code is refused here and there; trusting the workspace restarts the server.
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification, ExecuteCommandRequest, LanguageClient, LanguageClientOptions, ServerOptions,
} from "vscode-languageclient/node";
import {
  HistoryRow, SearchProgress, historyMarkdown, ignoredMessage, initializationOptions, needsRestart, refusal,
  serverLaunch, serverSettings, settingValue, statusText,
} from "./settings";

let client: LanguageClient | undefined;
let output: vscode.OutputChannel;
let state: vscode.Memento;
let status: vscode.StatusBarItem;
const searches = new Map<string, { kernel: string; report: (p: SearchProgress) => void; finish: () => void }>();

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  output = vscode.window.createOutputChannel("FSR");
  state = context.workspaceState;
  status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 100);
  status.command = "fsr.cancelSearch";
  status.tooltip = "FSR searches running (click to cancel one)";
  context.subscriptions.push(
    output,
    status,
    vscode.commands.registerCommand("fsr.optimizeAtCursor", unlessRestricted("fsr.optimizeAtCursor", optimizeAtCursor)),
    vscode.commands.registerCommand("fsr.cancelSearch", cancelSearch),
    vscode.commands.registerCommand("fsr.showHistory", showHistory),
    vscode.commands.registerCommand("fsr.captureLaunches", unlessRestricted("fsr.captureLaunches", captureLaunches)),
    vscode.commands.registerCommand("fsr.profileAtCursor", unlessRestricted("fsr.profileAtCursor", profileAtCursor)),
    vscode.commands.registerCommand("fsr.checkPerformanceOfFile",
      unlessRestricted("fsr.checkPerformanceOfFile", checkPerformance)),
    vscode.commands.registerCommand("fsr.restartServer", restart),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (needsRestart((section) => e.affectsConfiguration(section))) void restart();
      else if (e.affectsConfiguration("fsr")) sendSettings();
    }),
    // Trusted now: the server starts again, told so (and with the workspace's compiler flags).
    vscode.workspace.onDidGrantWorkspaceTrust(() => {
      output.appendLine("the workspace is trusted now: restarting the server");
      void restart();
    }),
  );
  await start();
}

export async function deactivate(): Promise<void> {
  await client?.stop();
}

/** The fsr.* settings as they go to the server and start it: never a workspace's value of a
 * setting that names a program, an address or an environment variable (nor, untrusted, of its
 * compiler flags); `ignored` collects the workspace's values left out. */
function readSettings(trusted: boolean): { read: (key: string) => unknown; ignored: string[] } {
  const config = vscode.workspace.getConfiguration("fsr");
  const ignored: string[] = [];
  const read = (key: string) => {
    const picked = settingValue(key, config.get(key), config.inspect(key), trusted);
    if (picked.ignored && !ignored.includes(key)) ignored.push(key);
    return picked.value;
  };
  return { read, ignored };
}

function sendSettings(): void {
  if (!client?.isRunning()) return;
  const { read } = readSettings(vscode.workspace.isTrusted);
  client.sendNotification(DidChangeConfigurationNotification.type, { settings: { fsr: serverSettings(read) } })
    .catch((e) => output.appendLine(`settings not sent: ${e}`));
}

/** A command that runs the workspace's code: refused with a message while the workspace is untrusted. */
function unlessRestricted(command: string, run: () => Promise<void>): () => Promise<void> {
  return async () => {
    const why = refusal(command, vscode.workspace.isTrusted);
    if (why) {
      void vscode.window.showWarningMessage(why);
      return;
    }
    await run();
  };
}

async function start(): Promise<void> {
  const trusted = vscode.workspace.isTrusted;
  const { read, ignored } = readSettings(trusted);
  const launch = serverLaunch(read("server.command"), read("server.python"));
  const options = initializationOptions(read, trusted);
  const note = ignoredMessage(ignored);
  if (note) {
    output.appendLine(note);
    void vscode.window.showWarningMessage(note);
  }
  if (!trusted) output.appendLine("Restricted Mode: diagnostics and hover only, until the workspace is trusted");
  output.appendLine(`starting ${launch.command} ${launch.args.join(" ")}`);
  const serverOptions: ServerOptions = { command: launch.command, args: launch.args, options: { env: process.env } };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "cuda-cpp" },
      { scheme: "file", pattern: "**/*.{cu,cuh}" },
    ],
    initializationOptions: options,
    // Changes go to the server from onDidChangeConfiguration (sendSettings), and its
    // workspace/configuration requests get the same section: both through readSettings.
    middleware: {
      workspace: {
        configuration: async (params, token, next) => {
          const answer = await next(params, token);
          if (!Array.isArray(answer)) return answer;
          const { read: now } = readSettings(vscode.workspace.isTrusted);
          return params.items.map((item, i) => (item.section === "fsr" ? serverSettings(now) : answer[i]));
        },
      },
    },
    outputChannel: output,
  };
  client = new LanguageClient("fsr", "FSR", serverOptions, clientOptions);
  client.onNotification("fsr/searchProgress", onProgress);
  try {
    await client.start();
  } catch (e) {
    void vscode.window.showErrorMessage(`FSR: the server did not start (${launch.command}): ${e}. ` +
      "Set fsr.server.python to an interpreter with fsr-lsp installed, or fsr.server.command.");
  }
}

// One restart at a time: trusting a workspace both fires onDidGrantWorkspaceTrust and changes
// the settings in effect, and two restarts at once would race for the client.
let restarting: Promise<void> = Promise.resolve();

function restart(): Promise<void> {
  restarting = restarting.then(restartNow, restartNow);
  return restarting;
}

async function restartNow(): Promise<void> {
  for (const search of searches.values()) search.finish();
  searches.clear();
  updateStatus();
  if (client) {
    await client.stop().catch(() => undefined);
    client = undefined;
  }
  await start();
}

function onProgress(p: SearchProgress): void {
  const key = `${p.uri}#${p.kernel}`;
  let search = searches.get(key);
  if (!search && !p.done) {
    // The search may end before VS Code runs the progress callback: resolve through a promise
    // made now, and hold the latest report until the callback gives us a reporter.
    let resolveDone: () => void = () => undefined;
    const done = new Promise<void>((resolve) => (resolveDone = resolve));
    let reporter: ((q: SearchProgress) => void) | undefined;
    let pending: SearchProgress | undefined;
    let last = 0;
    void vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `FSR: optimizing ${p.kernel}`, cancellable: true },
      (progress, token) => {
        token.onCancellationRequested(() => void execute("fsr.cancel", [p.uri, p.kernel]));
        reporter = (q) => {
          progress.report({ message: q.message, increment: Math.max(0, q.percentage - last) });
          last = Math.max(last, q.percentage);
        };
        if (pending) reporter(pending);
        return done;
      },
    );
    search = {
      kernel: p.kernel,
      report: (q) => (reporter ? reporter(q) : (pending = q)),
      finish: () => resolveDone(),
    };
    searches.set(key, search);
  }
  if (!search) return;
  search.report(p);
  if (p.done) {
    search.finish();
    searches.delete(key);
    output.appendLine(`FSR ${p.kernel}: ${p.message}`);
    void vscode.window.showInformationMessage(`FSR ${p.kernel}: ${p.message}`);
  }
  updateStatus();
}

function updateStatus(): void {
  const text = statusText([...searches.values()].map((s) => s.kernel));
  if (text) {
    status.text = text;
    status.show();
  } else {
    status.hide();
  }
}

async function execute(command: string, args: unknown[]): Promise<unknown> {
  if (!client) {
    void vscode.window.showErrorMessage("FSR: the server is not running (FSR: Restart server).");
    return undefined;
  }
  return client.sendRequest(ExecuteCommandRequest.type, { command, arguments: args });
}

async function optimizeAtCursor(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  const at = editor.selection.active;
  const result = await execute("fsr.optimizeAt", [editor.document.uri.toString(), at.line, at.character]);
  if (typeof result === "string" && !result.startsWith("optimizing")) void vscode.window.showInformationMessage(`FSR: ${result}`);
}

// The server profiles in the background with progress; the findings arrive as diagnostics.
async function profileAtCursor(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  const at = editor.selection.active;
  const result = await execute("fsr.profileAt", [editor.document.uri.toString(), at.line, at.character]);
  if (typeof result === "string" && result.startsWith("no kernel")) void vscode.window.showInformationMessage(`FSR: ${result}`);
}

async function checkPerformance(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  const result = await execute("fsr.checkPerformance", [editor.document.uri.toString()]);
  if (typeof result === "string") void vscode.window.showInformationMessage(`FSR: ${result}`);
}

async function cancelSearch(): Promise<void> {
  const running = (await execute("fsr.searches", [])) as { uri: string; kernel: string }[] | undefined;
  if (!running || running.length === 0) {
    void vscode.window.showInformationMessage("FSR: no search is running");
    return;
  }
  const pick = running.length === 1 ? running[0] : await vscode.window.showQuickPick(
    running.map((r) => ({ label: r.kernel, description: vscode.Uri.parse(r.uri).fsPath, r })), { title: "Cancel which search?" },
  ).then((item) => item?.r);
  if (pick) await execute("fsr.cancel", [pick.uri, pick.kernel]);
}

// Runs fsr.capture.command under the capture library (the server shows progress and the result).
// The setting is the user's own (machine-scoped); without it, the command typed last in this
// workspace is offered again (kept in the extension's workspace state, which no repository sets).
async function captureLaunches(): Promise<void> {
  const { read } = readSettings(vscode.workspace.isTrusted);
  const command = typeof read("capture.command") === "string" ? (read("capture.command") as string) : "";
  const given = command.trim() ? command : await vscode.window.showInputBox({
    title: "FSR: the program that launches your kernels",
    prompt: "Run in the workspace folder; set fsr.capture.command in your user settings to skip this question",
    placeHolder: "./build/app 4096",
    value: state.get<string>("fsr.lastCaptureCommand") ?? "",
  });
  if (!given?.trim()) return;
  if (!command.trim()) await state.update("fsr.lastCaptureCommand", given);
  await execute("fsr.capture", [given]);
}

async function showHistory(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  const at = editor.selection.active;
  const history = (await execute("fsr.historyAt", [editor.document.uri.toString(), at.line, at.character])) as
    { kernel: string | null; rows: HistoryRow[] } | undefined;
  if (!history || !history.kernel) {
    void vscode.window.showInformationMessage("FSR: put the cursor inside a kernel");
    return;
  }
  const doc = await vscode.workspace.openTextDocument({ language: "markdown", content: historyMarkdown(history.kernel, history.rows) });
  await vscode.window.showTextDocument(doc, { preview: true, viewColumn: vscode.ViewColumn.Beside });
}
