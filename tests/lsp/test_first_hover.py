"""The first hover on a kernel shows its drafted spec (issue 60 item 3): the workspace's launches
are read on a thread of their own from `initialized` (fsr_lsp/server/features/documents.py
`index_launches`), so the first draft does not start that scan itself and the hover no longer
answers "drafting the spec..." for it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from ..support.doubles import command
from .conftest import make_client, server_env, without_checks
from .test_document_cache import hover

KERNEL = """__global__ void scale(float* y, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}
"""
LAUNCHER = """#include "scale.cu"
int main()
{
    const int n = 3000;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    scale<<<(n + 255) / 256, 256>>>(y, x, n);
    return 0;
}
"""
# other programs of the workspace: enough of them that reading them all takes longer than the
# 0.1 s a hover waits for its draft
OTHERS = 400


def other_program(i: int) -> str:
    body = "".join(f"    other{i}_{j}<<<{j + 1}, 128>>>(d, {i * 10 + j});\n" for j in range(20))
    kernels = "".join(f"__global__ void other{i}_{j}(float* d, int n) {{ if (threadIdx.x < n) d[threadIdx.x] = n; }}\n"
                      for j in range(20))
    return f"{kernels}\nvoid run{i}(float* d)\n{{\n{body}}}\n"


def populated(workspace: Path) -> None:
    (workspace / "scale.cu").write_text(KERNEL)
    (workspace / "main.cu").write_text(LAUNCHER)
    for i in range(OTHERS):
        (workspace / f"other{i}.cu").write_text(other_program(i))


@pytest_lsp.fixture(config=ClientServerConfig(server_command=command("fsr-lsp"), server_env=server_env(),
                                              client_factory=make_client))
async def client(lsp_client: LanguageClient):
    async for _ in without_checks(lsp_client, populated):
        yield


async def test_the_first_hover_on_a_kernel_shows_the_spec_drafted_from_a_launch_in_another_file(client: LanguageClient):
    await asyncio.sleep(8.0)  # the user opens a file a moment after the editor started the server
    path = client.workspace_dir / "scale.cu"  # type: ignore[attr-defined]
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=path.as_uri(), language_id="cuda-cpp", version=1, text=KERNEL)))
    said = await hover(client, path.as_uri())
    assert "drafting the spec" not in said, said
    assert "spec: drafted from the launch" in said and "n = 3000" in said, said
