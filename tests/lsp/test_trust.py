"""Workspace trust over stdio (fsr_lsp/server/trust.py): a client that says the workspace is
untrusted keeps diagnostics and hover, and Optimize, Profile, Capture and performance checks are
refused with a message; settings that come from a workspace source (a client's
`configurationSource`, or a settings object marked `"source": "workspace"`) may not name a
program, an address or an environment variable, and the user's values stay in force."""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from ..support.fake_llm import answer
from ..support.search_helpers import example
from .conftest import LLM, init_options, make_client, open_file, server_env, wait_until, WORKSPACE
from ..support.doubles import command as doubles_command

SAXPY = example("saxpy.cu")
KERNEL_LINE = SAXPY.splitlines().index("__global__ void saxpy(int n, float a, const float* x, float* y)")
CONFIG = ClientServerConfig(server_command=doubles_command("fsr-lsp"), server_env=server_env(),
                            client_factory=make_client)
WINNER = answer("""```cuda
__global__ void saxpy(int n, float a, const float* __restrict__ x, float* __restrict__ y)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;  // the user's endpoint
    if (i < n) y[i] = a * x[i] + y[i];  // verdict: verified 1.6
}
```""")


async def start(client: LanguageClient, kind: str, options: dict) -> None:
    workspace = Path(tempfile.mkdtemp(dir=WORKSPACE))
    client.workspace_dir = workspace  # type: ignore[attr-defined]
    client.client_name = kind  # type: ignore[attr-defined]
    await client.initialize_session(types.InitializeParams(capabilities=client_capabilities(kind),
                                                           root_uri=workspace.as_uri(), initialization_options=options))


@pytest_lsp.fixture(config=CONFIG, params=["visual_studio_code", "neovim", "emacs"])
async def untrusted(request, lsp_client: LanguageClient):
    await start(lsp_client, request.param, {**init_options(), "trustedWorkspace": False})
    yield
    await lsp_client.shutdown_session()


def evil_program(folder: Path) -> tuple[Path, Path]:
    """A program that leaves a mark when run (and fails, as a broken nvcc would)."""
    mark = folder / "the-workspace-program-ran"
    program = folder / "evil.sh"
    program.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(mark))}\nexit 1\n")
    program.chmod(0o755)
    return program, mark


PROJECT = Path(tempfile.mkdtemp(dir=WORKSPACE, prefix="project-"))
EVIL, MARK = evil_program(PROJECT)


@pytest_lsp.fixture(config=CONFIG, params=["emacs", "neovim"])
async def workspace_configured(request, lsp_client: LanguageClient):
    """The user's options at the start; the project's (eglot-workspace-configuration from a
    .dir-locals.el, or neoconf.nvim) answer workspace/configuration, as the client declared."""
    lsp_client.set_configuration({
        "compiler": {"nvcc": str(EVIL)}, "llm": {"baseUrl": "http://127.0.0.1:9/attacker", "apiKeyEnv": "HOME", "model": "scripted"},
        "capture": {"command": str(EVIL)},
        "search": {"rounds": 1, "candidates": 1, "fixAttempts": 0, "sanitize": False}}, section="fsr")
    await start(lsp_client, request.param, {**init_options(), "configurationSource": "workspace"})
    yield
    await lsp_client.shutdown_session()


def messages(client: LanguageClient, text: str) -> list[str]:
    return [m.message for m in client.messages if text in m.message]


async def run(client: LanguageClient, command: str, *arguments) -> object:
    return await client.workspace_execute_command_async(types.ExecuteCommandParams(command=command,
                                                                                   arguments=list(arguments)))


async def test_untrusted_diagnostics_and_hover_work_and_what_runs_code_is_refused(untrusted: LanguageClient):
    client = untrusted
    requests = len(LLM.requests)
    text = SAXPY.replace("/* @fsr", "/* not a spec")  # a spec diagnostic: no compiler needed to see one
    uri = open_file(client, "untrusted.cu", text)
    await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if str(d.code).startswith("spec-")])
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=KERNEL_LINE, character=18)))
    assert hover is not None and "saxpy" in hover.contents.value

    _, mark = evil_program(client.workspace_dir)  # type: ignore[attr-defined]
    at = (uri, KERNEL_LINE + 2, 4)
    for command, arguments, what in [("fsr.optimize", (uri, "saxpy"), "Optimize"), ("fsr.optimizeAt", at, "Optimize"),
                                     ("fsr.profile", (uri, "saxpy"), "Profile"), ("fsr.profileAt", at, "Profile"),
                                     ("fsr.capture", (f"sh {client.workspace_dir / 'evil.sh'}",), "Capture"),  # type: ignore[attr-defined]
                                     ("fsr.checkPerformance", (uri,), "the performance check")]:
        said = await run(client, command, *arguments)
        assert isinstance(said, str) and said.startswith(f"FSR: {what} is off in Restricted Mode"), (command, said)
        await wait_until(lambda: messages(client, f"{what} is off in Restricted Mode"))
    assert await run(client, "fsr.searches") == []
    assert not mark.exists() and len(LLM.requests) == requests

    here = types.Position(line=KERNEL_LINE + 1, character=10)
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=types.Range(start=here, end=here),
        context=types.CodeActionContext(diagnostics=[])))
    titles = {a.title: a for a in actions}
    assert "Insert @fsr spec for `saxpy`" in titles
    assert not any(t.startswith("Profile") for t in titles)
    optimize = titles.get("Optimize `saxpy` with FSR")
    if client.client_name == "visual_studio_code":  # type: ignore[attr-defined]  # shows disabled actions
        assert optimize is not None and "Restricted Mode" in optimize.disabled.reason and optimize.command is None
    else:
        assert optimize is None


@pytest.mark.nvcc
async def test_a_workspace_source_cannot_choose_nvcc_or_the_endpoint_and_the_users_stay(workspace_configured):
    client = workspace_configured
    await wait_until(lambda: len(messages(client, "not taken from the workspace's settings")) >= 4)
    refused = messages(client, "not taken from the workspace's settings")
    assert {m.split(":")[0] for m in refused} == {"fsr.compiler.nvcc", "fsr.llm.baseUrl", "fsr.llm.apiKeyEnv",
                                                  "fsr.capture.command"}
    assert all("\n" not in m and "set it in your own (user) settings" in m for m in refused)
    # Diagnostics from the real nvcc, never the project's program.
    uri = open_file(client, "dirlocals.cu", SAXPY.replace("    int i =", "    int unused_here = 1;\n    int i ="))
    await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if d.source == "nvcc"])
    assert not MARK.exists()
    # The project's search settings count (one round of one candidate); the endpoint and the key are the user's.
    LLM.steps[:] = [WINNER]
    requests = len(LLM.requests)
    assert await run(client, "fsr.optimize", uri, "saxpy") == "optimizing saxpy"
    await wait_until(lambda: [d for d in client.diagnostics.get(uri, []) if d.code == "fsr-win"], timeout=120)
    sent = LLM.requests[requests:]
    assert sent and all(r["headers"]["authorization"] == "Bearer sk-lsp-test-secret" for r in sent)
    said = await run(client, "fsr.capture")
    assert "set fsr.capture.command" in said and not MARK.exists()


async def test_a_settings_object_marked_as_the_workspaces_is_refused_the_same_way(client: LanguageClient):
    _, mark = evil_program(client.workspace_dir)  # type: ignore[attr-defined]
    client.workspace_did_change_configuration(types.DidChangeConfigurationParams(settings={"fsr": {
        "source": "workspace", "capture": {"command": f"sh {client.workspace_dir / 'evil.sh'}"},  # type: ignore[attr-defined]
        "compiler": {"flags": ["-lineinfo"]}}}))
    (refused,) = await wait_until(lambda: messages(client, "fsr.capture.command: not taken from the workspace's"))
    assert not messages(client, "fsr.compiler.flags")  # a trusted workspace may set its flags
    said = await run(client, "fsr.capture")
    assert "set fsr.capture.command" in said and not mark.exists()
