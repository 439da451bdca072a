"""A large document's diagnostics come in two steps: from its kernels as declared (one parse),
then, once its types are read through its aliases and structs (the other half of a 10 MB
file's seconds), all of them. The first publication holds only diagnostics that stay: a kernel
whose types wait on an alias gets its spec diagnostic in the second."""

from __future__ import annotations

import asyncio
import tempfile
import time
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from ..support.cache_probe import events
from ..support.doubles import command
from .conftest import make_client, open_file, probed_env, without_checks

PROBE_LOG = str(Path(tempfile.mkdtemp(prefix="fsr-first-look-")) / "probe.jsonl")
SLOW_WHOLE = 8.0  # seconds the discovery proper (after the first look) sleeps in its process


@pytest_lsp.fixture(config=ClientServerConfig(server_command=command("fsr-lsp"),
                                              server_env=probed_env(PROBE_LOG, FSR_TEST_SLOW_WHOLE=SLOW_WHOLE),
                                              client_factory=make_client))
async def client(lsp_client: LanguageClient):
    async for _ in without_checks(lsp_client):
        yield


PROGRAM = """typedef float real;

__global__ void plain_scale(float* y, const float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

__global__ void real_scale(real* y, const real* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = 3.0f * x[i];
}
"""


def large_text() -> str:
    """Over 256 KiB: a large document, its kernels worked out in a process of its own."""
    return PROGRAM + "".join(f"__global__ void k{i}(float* y, int n) {{ int j = threadIdx.x; if (j < n) y[j] = {i}.0f; }}\n"
                             for i in range(3500))


def spec_messages(client: LanguageClient, uri: str, kernel: str) -> list[str]:
    return [d.message for d in client.diagnostics.get(uri, []) if (d.data or {}).get("kernel") == kernel]


async def test_a_large_documents_settled_kernels_have_their_diagnostics_before_its_types_are_read(
        client: LanguageClient):
    text = large_text()
    assert len(text.encode()) > 256 << 10
    opened = time.monotonic()
    uri = open_file(client, "large_first.cu", text)

    async def first() -> None:
        while not spec_messages(client, uri, "plain_scale"):
            await asyncio.sleep(0.05)

    await asyncio.wait_for(first(), 60)
    first_at = time.monotonic() - opened
    # the first publication: every settled kernel's diagnostic, none for the one typed through `real`
    assert spec_messages(client, uri, "plain_scale")[0].startswith("plain_scale has no @fsr spec; inferred")
    assert spec_messages(client, uri, "k5") and not spec_messages(client, uri, "real_scale")
    assert not any(e["event"] == "discover" for e in events(PROBE_LOG, uri))  # its discovery is not done yet

    async def complete() -> None:
        while not spec_messages(client, uri, "real_scale"):
            await asyncio.sleep(0.05)

    await asyncio.wait_for(complete(), 120)
    complete_at = time.monotonic() - opened
    assert complete_at - first_at > SLOW_WHOLE / 2  # the first came that much before the discovery's sleep ended
    assert spec_messages(client, uri, "real_scale")[0].startswith("real_scale has no @fsr spec; inferred")
    assert spec_messages(client, uri, "plain_scale")[0].startswith("plain_scale has no @fsr spec; inferred")
    (shown,) = [d for d in client.diagnostics[uri] if (d.data or {}).get("kernel") == "real_scale"]
    assert shown.severity == types.DiagnosticSeverity.Information
