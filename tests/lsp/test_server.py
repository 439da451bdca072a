"""End to end over stdio: diagnostics, code actions, progress, cancellation, the versioned
edit and its rebuild, configuration, responsiveness."""

from __future__ import annotations

import time

import pytest
from lsprotocol import types
from pytest_lsp import LanguageClient

from ..support.fake_llm import KEY, answer, stall, status
from ..support.search_helpers import example
from .conftest import LLM, edits_in, open_file, wait_until

SAXPY = example("saxpy.cu")


def candidate(verdict: str, tag: str) -> object:
    return answer(f"""```cuda
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // {tag}
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: {verdict}
}}
```""")


def diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return list(client.diagnostics.get(uri, []))


def name(client: LanguageClient, base: str) -> str:
    return f"{client.client_name}-{base}"  # type: ignore[attr-defined]


def nvcc_ran(client, uri):
    return any(d.source in ("nvcc", "fsr") and d.code == "resources" or d.source == "nvcc" for d in diagnostics(client, uri))


@pytest.mark.nvcc
async def test_compiler_errors_warnings_and_resources(client: LanguageClient):
    broken = SAXPY.replace("y[i] = a * x[i] + y[i];", "y[i] = a * x[i] + zz;").replace(
        "int i =", "int unused = 0;\n    int i =")
    uri = open_file(client, name(client, "broken.cu"), broken)
    diags = await wait_until(lambda: [d for d in diagnostics(client, uri) if d.source == "nvcc"])
    error = next(d for d in diags if d.severity == types.DiagnosticSeverity.Error)
    line = broken.splitlines()[error.range.start.line]
    assert 'identifier "zz" is undefined' in error.message
    assert line[error.range.start.character:error.range.end.character] == "zz"
    good = open_file(client, name(client, "good.cu"), SAXPY)
    res = await wait_until(lambda: [d for d in diagnostics(client, good) if d.code == "resources"])
    assert res[0].severity == types.DiagnosticSeverity.Information and "registers" in res[0].message
    assert SAXPY.splitlines()[res[0].range.start.line][res[0].range.start.character:res[0].range.end.character] == "saxpy"


@pytest.mark.nvcc
async def test_warnings_and_ptxas_errors(client: LanguageClient):
    warn = "__global__ void w(int n, float* x)\n{\n    int unused = 3;\n    if (threadIdx.x < n) x[0] = 1;\n}\n"
    uri = open_file(client, name(client, "warn.cu"), warn)
    d = await wait_until(lambda: [d for d in diagnostics(client, uri) if d.source == "nvcc"])
    assert d[0].severity == types.DiagnosticSeverity.Warning and "unused" in d[0].message and d[0].range.start.line == 2
    big = "__global__ void hog(float* x)\n{\n    __shared__ float s[100000];\n    s[threadIdx.x] = 1; x[0] = s[5];\n}\n"
    uri = open_file(client, name(client, "hog.cu"), big)
    d = await wait_until(lambda: [d for d in diagnostics(client, uri) if d.source == "ptxas"])
    assert "'hog'" in d[0].message and "shared" in d[0].message and d[0].range.start.line == 0


async def test_spec_problems_and_the_insert_spec_quick_fix(client: LanguageClient):
    text = "__global__ void mm(int M, int N, const float* A, float* C)\n{\n    C[0] = A[0];\n}\n"
    uri = open_file(client, name(client, "nospec.cu"), text)
    warning = await wait_until(lambda: [d for d in diagnostics(client, uri) if d.code == "spec-missing"])
    assert warning[0].severity == types.DiagnosticSeverity.Warning
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=warning[0].range,
        context=types.CodeActionContext(diagnostics=warning)))
    titles = [a.title for a in actions]
    assert "Optimize `mm` with FSR" in titles and "Insert @fsr spec for `mm`" in titles
    insert = next(a for a in actions if a.title.startswith("Insert"))
    (edit,), version = edits_in(insert.edit, uri)
    assert version == (None if client.client_name == "neovim" else 1)  # type: ignore[attr-defined]
    assert edit.range.start.line == 0 and edit.new_text.startswith("/* @fsr") and "[args]" in edit.new_text


async def test_optimize_reports_progress_and_the_win_applies_as_a_versioned_edit(client: LanguageClient):
    LLM.steps[:] = [candidate("verified 1.5", "a"), candidate("verified 2.2", "b")]
    uri = open_file(client, name(client, "win.cu"), SAXPY)
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.optimize", arguments=[uri, "saxpy"]))
    assert result == "optimizing saxpy"
    win = await wait_until(lambda: [d for d in diagnostics(client, uri) if d.code == "fsr-win"])
    assert win[0].message.startswith("FSR: 2.20x faster") and win[0].severity == types.DiagnosticSeverity.Information
    (reports,) = [r for t, r in client.progress_reports.items() if str(t).startswith("fsr-")][-1:]
    kinds = [type(r).__name__ for r in reports]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd" and "WorkDoneProgressReport" in kinds
    # A concurrent edit elsewhere in the file: the edit is rebuilt against version 2.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangePartial(
            range=types.Range(start=types.Position(line=0, character=0), end=types.Position(line=0, character=0)),
            text="// edited while searching\n")]))
    position = types.Position(line=SAXPY.splitlines().index("__global__ void saxpy(int n, float a, const float* x, float* y)") + 1, character=20)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=position, end=position),
        context=types.CodeActionContext(diagnostics=[])))
    apply = next(a for a in actions if a.title.startswith("Apply FSR rewrite (2.20x"))
    kind = client.client_name  # type: ignore[attr-defined]
    if kind == "emacs":  # eglot never resolves: the edit comes with the action, computed for version 2
        resolved = apply
    else:
        assert apply.edit is None  # computed lazily
        resolved = await client.code_action_resolve_async(apply)
    (edit,), version = edits_in(resolved.edit, uri)
    assert version == (None if kind == "neovim" else 2)  # neovim 0.7 does not declare documentChanges
    assert "// b" in edit.new_text and edit.range.start.line == 15  # one line lower than before the change
    annotations = resolved.edit.change_annotations
    assert (annotations["fsr-rewrite"].needs_confirmation if kind == "visual_studio_code" else annotations is None)
    # Now change the kernel itself: the rewrite no longer applies, and the action says why.
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=3),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=SAXPY.replace("a * x[i]", "x[i] * a"))]))
    if kind == "emacs":  # no disabled actions there: the Apply action is simply gone
        actions = await client.text_document_code_action_async(types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=position, end=position),
            context=types.CodeActionContext(diagnostics=[])))
        assert not [a for a in actions if a.title.startswith("Apply")] and actions
    else:
        again = await client.code_action_resolve_async(apply)
        assert again.edit is None and "changed since the search started" in again.disabled.reason


async def test_a_second_request_for_the_same_kernel_says_so_and_cancel_ends_it(client: LanguageClient):
    LLM.steps[:] = [stall(8), stall(8)]
    uri = open_file(client, name(client, "busy.cu"), SAXPY)
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fsr.optimize", arguments=[uri, "saxpy"]))
    again = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.optimize", arguments=[uri, "saxpy"]))
    assert again == "saxpy is already being optimized"
    # Responsiveness while it runs: a hover and the code actions come back well under 100 ms.
    started = time.perf_counter()
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=14, character=18)))
    elapsed = time.perf_counter() - started
    assert hover is not None and "a search is running" in hover.contents.value
    assert elapsed < 0.1, elapsed
    token = next(t for t in client.progress_reports if str(t).startswith("fsr-") and
                 not any(isinstance(r, types.WorkDoneProgressEnd) for r in client.progress_reports[t]))
    client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    await wait_until(lambda: any(isinstance(r, types.WorkDoneProgressEnd) for r in client.progress_reports[token]), 30)


async def test_settings_from_configuration_and_unknown_keys(client: LanguageClient):
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(
        settings={"fsr": {"search": {"rounds": 2}, "apiKey": "sk-should-not-be-here", "nonsense": 1}}))
    def both_shown() -> list[str]:  # one message each: the second may arrive a poll later
        shown = [m.message for m in client.messages if "fsr." in m.message]
        return shown if len(shown) >= 2 else []

    messages = await wait_until(both_shown)
    assert any("secrets are never read from settings" in m for m in messages)
    assert any("fsr.nonsense: unknown setting" in m for m in messages)
    assert not any("sk-should-not-be-here" in m for m in messages)


@pytest.mark.nvcc
async def test_a_header_changed_on_disk_refreshes_the_files_including_it(client: LanguageClient):
    header = client.workspace_dir / name(client, "scale.cuh")  # type: ignore[attr-defined]
    header.write_text("#define SCALE 2.0f\n")
    text = f'#include "{header.name}"\n__global__ void k(float* x) {{ x[threadIdx.x] *= SCALE; }}\n'
    uri = open_file(client, name(client, "uses_header.cu"), text)
    await wait_until(lambda: [d for d in diagnostics(client, uri) if d.code == "resources"])
    assert not [d for d in diagnostics(client, uri) if d.severity == types.DiagnosticSeverity.Error]
    header.write_text("#define SCALE 2.0f +\n")  # broken, outside the editor
    errors = await wait_until(lambda: [d for d in diagnostics(client, uri) if d.severity == types.DiagnosticSeverity.Error])
    assert errors[0].range.start.line in (0, 1)


@pytest.mark.nvcc
async def test_missing_include_is_reported_on_its_line(client: LanguageClient):
    text = '#include "not_there.cuh"\n__global__ void k(float* x) { x[0] = 1; }\n'
    uri = open_file(client, name(client, "include.cu"), text)
    d = await wait_until(lambda: [d for d in diagnostics(client, uri) if d.severity == types.DiagnosticSeverity.Error])
    assert d[0].range.start.line == 0 and "not_there.cuh" in d[0].message


async def test_auto_apply_sends_the_edit_and_hover_shows_the_result(client: LanguageClient):
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"fsr": {
        "autoApply": True, "llm": {"baseUrl": LLM.base_url, "model": "scripted", "apiKeyEnv": "FSR_TEST_LLM_KEY"},
        "search": {"rounds": 1, "candidates": 1, "fixAttempts": 0, "sanitize": False}}}))
    LLM.steps[:] = [candidate("verified 1.7", "auto")]
    uri = open_file(client, name(client, "auto.cu"), SAXPY)
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fsr.optimize", arguments=[uri, "saxpy"]))
    (applied,) = await wait_until(lambda: client.applied_edits)  # type: ignore[attr-defined]
    edits, _ = edits_in(applied.edit, uri)
    assert "// auto" in edits[0].new_text
    line = SAXPY.splitlines().index("__global__ void saxpy(int n, float a, const float* x, float* y)")
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=18)))
    assert "last search: 1.70x faster" in hover.contents.value


async def test_an_endpoint_that_is_down_is_one_clear_message(client: LanguageClient):
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"fsr": {
        "llm": {"baseUrl": "http://127.0.0.1:9/v1", "model": "m", "apiKeyEnv": "FSR_TEST_LLM_KEY"},
        "search": {"rounds": 1, "candidates": 1}}}))
    uri = open_file(client, name(client, "down.cu"), SAXPY)
    for _ in range(2):
        await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fsr.optimize",
                                                                                arguments=[uri, "saxpy"]))
        await wait_until(lambda: (uri, "saxpy") and any("cannot connect" in m.message for m in client.messages), 60)
        await wait_until(lambda: all(isinstance(r[-1], types.WorkDoneProgressEnd)
                                     for t, r in client.progress_reports.items() if str(t).startswith("fsr-") and r), 60)
    down = [m for m in client.messages if "cannot connect" in m.message]
    assert len(down) == 1 and down[0].type == types.MessageType.Error
    assert "sk-lsp-test-secret" not in down[0].message


@pytest.mark.nvcc
async def test_columns_follow_the_negotiated_position_encoding(client: LanguageClient):
    text = "__global__ void k(float* y)\n{\n    /* é🚀 */ y[0] = zz;\n}\n"
    uri = open_file(client, name(client, "encoding.cu"), text)
    (error,) = await wait_until(lambda: [d for d in diagnostics(client, uri) if d.source == "nvcc"])
    line = text.splitlines()[2]
    prefix = line[: line.index("zz")]
    # pygls takes the client's first choice: Neovim offers utf-8 first, Emacs utf-32; VS Code none, so utf-16.
    encoding = {"neovim": "utf-8", "emacs": "utf-32"}.get(client.client_name, "utf-16")  # type: ignore[attr-defined]
    expected = {"utf-8": len(prefix.encode("utf-8")), "utf-32": len(prefix),
                "utf-16": len(prefix.encode("utf-16-le")) // 2}[encoding]
    assert error.range.start.character == expected and error.range.start.line == 2


async def test_spec_errors_have_quick_fixes(client: LanguageClient):
    text = SAXPY.replace("block = 256", "block = 4096")
    uri = open_file(client, name(client, "badblock.cu"), text)
    (problem,) = await wait_until(lambda: [d for d in diagnostics(client, uri) if d.code == "spec-block"])
    assert problem.severity == types.DiagnosticSeverity.Warning and "at most 1024" in problem.message
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=problem.range,
        context=types.CodeActionContext(diagnostics=[problem])))
    fix = next(a for a in actions if a.title == "Set block = 256")
    (edit,), _ = edits_in(fix.edit, uri)
    assert text.splitlines()[edit.range.start.line].startswith("block = 4096") and edit.new_text == "block = 256"
    assert any(a.title.startswith("Replace the @fsr spec of `saxpy`") for a in actions)


async def test_editor_extension_commands(client: LanguageClient):
    notes = []
    client.feature("fsr/searchProgress")(lambda params: notes.append(params))
    LLM.steps[:] = [candidate("verified 1.4", "ext"), candidate("verified 1.1", "ext2")]
    uri = open_file(client, name(client, "ext.cu"), SAXPY)
    line = SAXPY.splitlines().index("__global__ void saxpy(int n, float a, const float* x, float* y)") + 2
    nothing = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.optimizeAt", arguments=[uri, 0, 0]))
    assert nothing == "no kernel at the cursor"
    started = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.optimizeAt", arguments=[uri, line, 4]))
    assert started == "optimizing saxpy"
    await wait_until(lambda: any(getattr(n, "done", None) or (isinstance(n, dict) and n.get("done")) for n in notes))
    first = notes[0]
    assert (first["kernel"] if isinstance(first, dict) else first.kernel) == "saxpy"
    history = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.historyAt", arguments=[uri, line, 4]))
    assert history["kernel"] == "saxpy" and {r["status"] for r in history["rows"]} == {"verified"}
    assert await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fsr.searches")) == []


async def test_a_block_that_attaches_to_no_kernel_is_a_warning_on_the_block(client: LanguageClient):
    spec_start = SAXPY.index("/* @fsr")
    spec = SAXPY[spec_start:SAXPY.index("*/") + 2]
    text = SAXPY.replace(spec, spec + "\nint host_counter = 0;\n")
    uri = open_file(client, name(client, "orphan.cu"), text)
    (warning,) = await wait_until(lambda: [d for d in diagnostics(client, uri) if d.code == "spec-orphan"])
    assert warning.severity == types.DiagnosticSeverity.Warning
    assert warning.range.start.line == SAXPY[:spec_start].count("\n")
    assert "attaches to no kernel" in warning.message and "host code `int host_counter = 0;`" in warning.message


async def test_a_key_the_endpoint_echoes_never_reaches_the_client(client: LanguageClient):
    secret = "sk-lsp-test-secret"  # the server's key (conftest): not key-shaped, only knowing it redacts it
    LLM.steps[:] = [answer(candidate("verified 1.8", f"key {KEY}").content + f"\nChange: sent with {KEY}"),
                    status(401, f"Incorrect API key provided: {KEY}")]
    uri = open_file(client, name(client, "echo.cu"), SAXPY)
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fsr.optimize", arguments=[uri, "saxpy"]))
    await wait_until(lambda: [d for d in diagnostics(client, uri) if d.code == "fsr-win"])
    position = types.Position(line=SAXPY.splitlines().index("__global__ void saxpy(int n, float a, const float* x, float* y)"),
                              character=18)
    hover = await client.text_document_hover_async(types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                                                     position=position))
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=position, end=position),
        context=types.CodeActionContext(diagnostics=[])))
    apply = next(a for a in actions if a.title.startswith("Apply FSR rewrite"))
    resolved = apply if apply.edit is not None else await client.code_action_resolve_async(apply)
    LLM.steps[:] = [status(401, f"Incorrect API key provided: {KEY}")] * 2  # both candidates of the round
    other = open_file(client, name(client, "echo2.cu"), SAXPY)
    await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fsr.optimize", arguments=[other, "saxpy"]))
    await wait_until(lambda: any("Incorrect API key provided" in m.message for m in client.messages), 60)
    seen = [m.message for m in client.messages] + [m.message for m in client.log_messages] + \
        [d.message for ds in client.diagnostics.values() for d in ds] + [hover.contents.value, str(resolved.edit)] + \
        [str(r) for rs in client.progress_reports.values() for r in rs]
    assert any("[redacted]" in text for text in seen)
    assert not [text for text in seen if secret in text]
