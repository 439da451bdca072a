"""Profile in the editor: the command puts ncu's findings (recorded on an H200, see
tests/support/recorded_profiler.py) on the kernel's own lines with a summary on its name; hover on a
marked line shows its counters; a finding offers Optimize with it in the prompt; the findings
follow the kernel when lines above it move and retire when the kernel itself changes; a kernel
that needs a spec gets the reason on its name."""

from __future__ import annotations

import ast

from lsprotocol import types
from pytest_lsp import LanguageClient

from ..support.recorded_profiler import DATA, INLINED, KERNELS
from .conftest import WORKSPACE, open_file, wait_until

TEXT = KERNELS.read_text()
ACCESS = next(i for i, line in enumerate(TEXT.splitlines()) if "out[i] = in[j] * 2.0f;" in line)  # 0-based
NAME = next(i for i, line in enumerate(TEXT.splitlines()) if "void copy_strided(" in line)


def profile_diagnostics(client: LanguageClient, uri: str) -> list[types.Diagnostic]:
    return [d for d in client.diagnostics.get(uri, []) if str(d.code or "").startswith("profile-")]


def command_of(action) -> types.Command:
    """A code action that only runs a command reads back here as a Command (the union's other
    side) holding the real one's fields as text."""
    if isinstance(action, types.CodeAction):
        return action.command
    raw = action.command
    return types.Command(**ast.literal_eval(raw)) if isinstance(raw, str) and raw.startswith("{") else action


def change(client: LanguageClient, uri: str, text: str, version: int) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    client.text_document_did_save(types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri)))


async def test_a_profile_marks_the_uncoalesced_line_and_follows_the_kernel(client: LanguageClient):
    uri = open_file(client, "profile_kernels.cu", TEXT)
    here = types.Range(start=types.Position(line=NAME, character=20), end=types.Position(line=NAME, character=20))
    offered = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=here, context=types.CodeActionContext(diagnostics=[])))
    profile = next(a for a in offered if a.title.startswith("Profile `copy_strided`"))
    run = command_of(profile)
    assert run.command == "fsr.profile" and run.arguments == [uri, "copy_strided"]
    said = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command=run.command, arguments=run.arguments))
    assert "copy_strided" in said and "findings" in said
    found = await wait_until(lambda: [d for d in profile_diagnostics(client, uri) if d.code == "profile-finding"])
    uncoalesced = next(d for d in found if "uncoalesced global access" in d.message)
    assert uncoalesced.range.start.line == ACCESS and uncoalesced.severity == types.DiagnosticSeverity.Warning
    assert "ncu estimates up to 74%" in uncoalesced.message
    summary = next(d for d in profile_diagnostics(client, uri) if d.code == "profile-summary")
    assert summary.range.start.line == NAME and "achieved occupancy" in summary.message

    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=ACCESS, character=12)))
    assert hover is not None and "excessive sectors: 3,670,016" in hover.contents.value

    fixes = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=uncoalesced.range,
        context=types.CodeActionContext(diagnostics=[uncoalesced])))
    address = next(a for a in fixes if "addressing this finding" in a.title)
    optimize = command_of(address)
    assert optimize.command == "fsr.optimize" and optimize.arguments[:2] == [uri, "copy_strided"]
    assert optimize.arguments[2].startswith(f"line {ACCESS + 1}: uncoalesced global access")

    change(client, uri, "// a line above every kernel\n" + TEXT, 2)  # the kernel moves down, unchanged
    await wait_until(lambda: any(d.range.start.line == ACCESS + 1 and "uncoalesced" in d.message
                                 for d in profile_diagnostics(client, uri)))
    change(client, uri, "// a line above every kernel\n" + TEXT.replace("* 2.0f;  // neighbouring", "* 3.0f;  // neighbouring"), 3)
    await wait_until(lambda: not profile_diagnostics(client, uri))  # the profiled kernel is not this one


async def test_code_outside_the_file_is_one_share_on_the_kernels_name(client: LanguageClient):
    """probe() inlines code from CUDA's headers and the user's helper.cuh: its findings are on the
    file's own lines, the samples elsewhere one share in the summary, no line of theirs listed."""
    (getattr(client, "workspace_dir", WORKSPACE) / "helper.cuh").write_text((DATA / "helper.cuh").read_text())
    uri = open_file(client, INLINED.name, INLINED.read_text())
    said = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.profile", arguments=[uri, "probe"]))
    assert said.startswith("FSR profile of probe:")
    summary = await wait_until(lambda: [d for d in profile_diagnostics(client, uri) if d.code == "profile-summary"])
    assert summary[0].message.endswith("; 3% of the samples in code outside this file")
    kernel_lines = range(12, 22)  # 0-based: the definition of probe()
    findings = [d for d in profile_diagnostics(client, uri) if d.code == "profile-finding"]
    assert findings and all(d.range.start.line in kernel_lines for d in findings)
    assert any(d.range.start.line == 16 and "warp stall samples" in d.message for d in findings)  # float v = __ldg(..)


async def test_a_kernel_that_needs_a_spec_is_told_so_on_its_name(client: LanguageClient):
    text = ("__global__ void lone(float* out, const float* in)\n{\n"
            "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    out[i] = in[i];\n}\n")
    uri = open_file(client, "lone.cu", text)
    said = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.profile", arguments=[uri, "lone"]))
    assert "no @fsr spec" in said
    failed = await wait_until(lambda: [d for d in profile_diagnostics(client, uri) if d.code == "profile-failed"])
    assert failed[0].range.start.line == 0 and "fsr capture" in failed[0].message


async def test_profile_at_the_cursor_finds_the_kernel_there(client: LanguageClient):
    """For editor extensions (VS Code's "FSR: Profile kernel at cursor")."""
    uri = open_file(client, "profile_kernels.cu", TEXT)
    said = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.profileAt", arguments=[uri, ACCESS, 8]))
    assert said.startswith("FSR profile of copy_strided:")
    outside = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.profileAt", arguments=[uri, 0, 0]))
    assert outside == "no kernel at the cursor"
