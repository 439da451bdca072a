"""Specs drafted in the editor: a kernel in one file launched from another, the quick fix that
inserts the draft, the hover that says where each value came from, Optimize that proves the
draft then searches (and applies the rewrite with the block), a failed proof on the kernel,
and the launch index following the file on disk."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

from lsprotocol import types
from pytest_lsp import LanguageClient

from ..support.fake_llm import answer
from .conftest import LLM, edits_in, open_file, wait_until

KERNELS = """#include <cuda_runtime.h>

__global__ void blend(float* out, const float* a, const float* b, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) out[i] = 0.5f * (a[i] + b[i]);
}

__global__ void bad_blend(float* out, const float* a, int rows, int cols)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < rows * cols) out[i] = a[i + 1];
}
"""
MAIN = """#include "kernels.cuh"
#define ROWS 512

int main() {
    const int cols = 300;
    float *out, *a, *b;
    cudaMalloc(&out, ROWS * cols * sizeof(float));
    cudaMalloc(&a, ROWS * cols * sizeof(float));
    cudaMalloc(&b, ROWS * cols * sizeof(float));
    blend<<<(ROWS * cols + 255) / 256, 256>>>(out, a, b, ROWS, cols);
    bad_blend<<<(ROWS * cols + 255) / 256, 256>>>(out, a, ROWS, cols);
    return 0;
}
"""
LINE = KERNELS.splitlines().index("__global__ void blend(float* out, const float* a, const float* b, int rows, int cols)")


def at(line: int, character: int = 18) -> types.Range:
    p = types.Position(line=line, character=character)
    return types.Range(start=p, end=p)


async def actions(client: LanguageClient, uri: str, line: int) -> list[types.CodeAction]:
    return await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=at(line),
        context=types.CodeActionContext(diagnostics=[])))


async def offered(client: LanguageClient, uri: str, line: int, title: str) -> types.CodeAction:
    """The code action whose title starts so, asked again until it is offered: drafts are made
    off the event loop, and a first answer may come before one is done."""
    for _ in range(100):
        found = next((a for a in await actions(client, uri, line) if a.title.startswith(title)), None)
        if found is not None:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"no code action {title!r}: {[a.title for a in await actions(client, uri, line)]}")


def setup(client: LanguageClient, tag: str) -> str:
    folder = client.workspace_dir / tag  # type: ignore[attr-defined]
    folder.mkdir()
    (folder / "main.cpp").write_text(MAIN)  # on disk only: found through the workspace's launch index
    return open_file(client, f"{tag}/kernels.cu", KERNELS)


async def test_the_quick_fix_inserts_the_draft_from_a_launch_in_another_file_and_hover_says_where(client: LanguageClient):
    uri = setup(client, "fix")
    draft = await offered(client, uri, LINE, "Draft @fsr spec")
    found = await actions(client, uri, LINE)
    assert draft.title == "Draft @fsr spec for `blend` from the launch at fix/main.cpp:10"
    assert draft.kind == types.CodeActionKind.QuickFix and draft.is_preferred
    (edit,), _ = edits_in(draft.edit, uri)
    assert edit.range.start.line == LINE and edit.range.start.character == 0
    block = edit.new_text
    assert block.startswith("/* @fsr\n# drafted by fsr from the launch at fix/main.cpp:10 in main()")
    assert "bench = { ROWS = 512, cols = 300 }" in block and 'a = "in[ROWS * cols]"' in block
    assert any(a.title == "Insert @fsr spec for `blend`" for a in found)  # the template is still offered
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=LINE, character=18)))
    text = hover.contents.value
    assert "spec: drafted from the launch at fix/main.cpp:10" in text
    assert "`a`: cudaMalloc of `a`" in text and "`size ROWS`: ROWS = 512" in text


async def test_optimize_proves_the_draft_searches_and_applies_the_rewrite_with_its_block(client: LanguageClient):
    uri = setup(client, "opt")
    LLM.steps[:] = [answer("```cuda\n__global__ void blend(float* out, const float* a, const float* b, int rows, "
                           "int cols)\n{\n    int i = blockIdx.x * blockDim.x + threadIdx.x;  // fast\n"
                           "    if (i < rows * cols) out[i] = 0.5f * (a[i] + b[i]);  // verdict: verified 1.9\n}\n```")]
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.optimize", arguments=[uri, "blend"]))
    assert result == "optimizing blend"
    assert any("drafted one from the launch at opt/main.cpp:10" in m.message for m in client.messages)
    assert any("bench = { ROWS = 512, cols = 300 }" in m.message for m in client.log_messages)
    await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "fsr-win"])
    apply = next(a for a in await actions(client, uri, LINE) if a.title.startswith("Apply FSR rewrite (1.90x"))
    if apply.edit is None:
        apply = await client.code_action_resolve_async(apply)
    (edit,), _ = edits_in(apply.edit, uri)  # one edit: the proven block, then the rewritten kernel
    assert edit.new_text.startswith("/* @fsr\n# drafted by fsr from the launch at opt/main.cpp:10")
    assert "// fast" in edit.new_text and edit.range.start.line == LINE
    assert not [d for d in client.diagnostics.get(uri, []) if d.code == "spec-proof"]


async def test_a_failed_proof_is_a_warning_on_the_kernel_naming_check_and_argument(client: LanguageClient):
    uri = setup(client, "bad")
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.optimize", arguments=[uri, "bad_blend"]))
    (d,) = await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "spec-proof"])
    assert d.severity == types.DiagnosticSeverity.Warning
    assert d.message == ("the drafted @fsr spec failed its proof on Scripted GPU: in bounds (memcheck) `x`: "
                         "reads up to 4 bytes past the end of `x` at n=17")
    assert d.data["check"] == "in bounds (memcheck)" and d.data["argument"] == "x"
    assert d.range.start.line == KERNELS.splitlines().index("__global__ void bad_blend(float* out, const float* a, int rows, int cols)")
    # the quick fix still offers the draft, for the user to correct by hand
    assert any(a.title.startswith("Draft @fsr spec for `bad_blend`") for a in await actions(client, uri, d.range.start.line))


async def test_the_launch_index_follows_the_file_on_disk(client: LanguageClient):
    uri = setup(client, "watch")

    async def drafted() -> str:  # '' while the draft is still being made off the event loop, or while
        # the file is half written (the watcher may see it empty)
        found = next((a for a in await actions(client, uri, LINE) if a.title.startswith("Draft")), None)
        return edits_in(found.edit, uri)[0][0].new_text if found else ""

    for _ in range(100):
        if await drafted():
            break
        await asyncio.sleep(0.1)
    assert "ROWS = 512" in await drafted()
    main = client.workspace_dir / "watch" / "main.cpp"  # type: ignore[attr-defined]
    await asyncio.sleep(0.5)  # the observer is up
    main.write_text(MAIN.replace("#define ROWS 512", "#define ROWS 2048"))

    for _ in range(100):
        if "ROWS = 2048" in await drafted():
            break
        await asyncio.sleep(0.1)
    assert "ROWS = 2048" in await drafted()


ALONE = """__global__ void add_rows(const float* m, float* out, int rows, int cols)
{
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) { float s = 0.f; for (int c = 0; c < cols; ++c) s += m[r * cols + c]; out[r] = s; }
}
"""
MODEL_SPEC = """/* @fsr
bench = { R = 4096, C = 512 }
tests = [ { R = 1, C = 3 }, { R = 17, C = 33 } ]
grid = "cdiv(R, 128)"
block = 128
[args]
m = "in[R * C]"
out = "out[R]"
rows = "R"
cols = "C"
*/"""


async def test_without_a_launch_the_model_drafts_the_spec_which_is_proven_before_the_search(client: LanguageClient):
    uri = open_file(client, f"{client.client_name}-alone.cu", ALONE)  # type: ignore[attr-defined]
    LLM.steps[:] = [answer(MODEL_SPEC), answer(
        "```cuda\n__global__ void add_rows(const float* m, float* out, int rows, int cols)\n{\n"
        "    int r = blockIdx.x * blockDim.x + threadIdx.x;  // model\n"
        "    if (r < rows) { float s = 0.f; for (int c = 0; c < cols; ++c) s += m[r * cols + c]; out[r] = s; }"
        "  // verdict: verified 1.4\n}\n```")]
    await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.optimize", arguments=[uri, "add_rows"]))
    await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "fsr-win"])
    assert any("asking the model to draft one" in m.message for m in client.messages)
    (prompt,) = [p for p in LLM.prompts() if p.startswith("Write the @fsr spec of kernel `add_rows`")][-1:]
    assert "no launch of add_rows found" in prompt
    apply = next(a for a in await actions(client, uri, 0) if a.title.startswith("Apply FSR rewrite"))
    if apply.edit is None:
        apply = await client.code_action_resolve_async(apply)
    (edit,), _ = edits_in(apply.edit, uri)
    assert edit.new_text.startswith("/* @fsr\n# drafted by the model scripted from the kernel") and "// model" in edit.new_text


async def test_capture_from_a_run_gives_the_quick_fix_and_the_hover(client: LanguageClient):
    (client.workspace_dir / "cap").mkdir()  # type: ignore[attr-defined]
    uri = open_file(client, "cap/kernels.cu", KERNELS)
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(command="fsr.capture"))
    assert "set fsr.capture.command" in result  # nothing to run yet: the setting is named
    app = Path(__file__).parents[1] / "data" / "fake_capture_app.py"
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(app))} 3000"
    result = await client.workspace_execute_command_async(types.ExecuteCommandParams(
        command="fsr.capture", arguments=[command]))
    assert result.startswith("FSR: captured 1 launch of 1 kernel (scale)"), result
    assert any(m.message == "capture: ran scale on 3000 elements" for m in client.log_messages)
    line = KERNELS.splitlines().index("__global__ void blend(float* out, const float* a, const float* b, int rows, int cols)")
    assert not [a for a in await actions(client, uri, line) if "captured" in a.title]  # blend was not launched
    text = KERNELS + SCALE
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    line = text.splitlines().index("__global__ void scale(float* y, const float* x, float a, int n)")
    fix = await offered(client, uri, line, "Insert @fsr spec for `scale` from the captured launch")
    (edit,), _ = edits_in(fix.edit, uri)
    assert "bench = { n = 3000 }" in edit.new_text and 'grid = "cdiv(n, 256)"' in edit.new_text
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line, character=18)))
    assert "spec: captured from a run: scale<<<(12, 1, 1), (256, 1, 1)>>>" in hover.contents.value


SCALE = """
__global__ void scale(float* y, const float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i];
}
"""
