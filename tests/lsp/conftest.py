"""An fsr-lsp server over stdio per test, driven by pytest-lsp with real clients' capabilities.

Searches run against the scripted local chat-completions endpoint and the evaluator stand-in
(tests/support/scripted_bench.py, loaded by the server through FSR_LSP_BENCH)."""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from pytest_lsp.client import make_test_lsp_client

from ..support.fake_llm import FakeLLM, answer
from ..support.doubles import PROBE, command

ROOT = Path(__file__).resolve().parents[2]
WORKSPACE = Path(tempfile.mkdtemp(prefix="fsr-lsp-tests-"))  # parent of each test's own workspace
LLM = FakeLLM(default=answer("no scripted answer"))
LLM.thread.start()


def make_client() -> LanguageClient:
    client = make_test_lsp_client()
    client.applied_edits = []  # type: ignore[attr-defined]

    @client.feature(types.WORKSPACE_APPLY_EDIT)
    def apply_edit(params: types.ApplyWorkspaceEditParams) -> types.ApplyWorkspaceEditResult:
        client.applied_edits.append(params)  # type: ignore[attr-defined]
        return types.ApplyWorkspaceEditResult(applied=True)

    return client


def server_env() -> dict[str, str]:
    env = dict(os.environ)
    env["FSR_LSP_BENCH"] = "tests.support.scripted_bench:ScriptedBench"
    env["FSR_LSP_PROVER"] = "tests.support.scripted_prover:prove"
    env["FSR_LSP_PROFILER"] = "tests.support.recorded_profiler:profile"  # ncu's recorded exports, by kernel name
    env["FSR_LSP_TIMER"] = "tests.support.scripted_timer:time_request"  # performance on save: a scripted clock
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    env["FSR_TEST_LLM_KEY"] = "sk-lsp-test-secret"
    env["FSR_CAPTURE_LIBRARY"] = str(ROOT / "tests" / "data" / "fake_capture_app.py")  # no GPU: any file stands in
    env.pop("CUDA_INJECTION64_PATH", None)
    return env


def server_env_with(name: str, value: object) -> dict[str, str]:
    """server_env() with one more test stand-in set (a slow step's seconds, say)."""
    return {**server_env(), name: str(value)}


def probed_env(log: str, **more: object) -> dict[str, str]:
    """server_env() with the document cache's probe writing to `log` (tests/support/cache_probe.py)
    and its stand-ins' settings (`FSR_TEST_SLOW_DRAFT=3`, say)."""
    return {**server_env(), PROBE: "tests.support.cache_probe:probe", "FSR_TEST_PROBE_LOG": log,
            **{name: str(value) for name, value in more.items()}}


def init_options() -> dict:
    return {"fsr": {"llm": {"baseUrl": LLM.base_url, "model": "scripted", "apiKeyEnv": "FSR_TEST_LLM_KEY"},
                    "search": {"rounds": 1, "candidates": 2, "fixAttempts": 0, "sanitize": False}}}


@pytest_lsp.fixture(
    config=ClientServerConfig(server_command=command("fsr-lsp"), server_env=server_env(),
                              client_factory=make_client),
    params=["visual_studio_code", "neovim", "emacs"],
)
async def client(request, lsp_client: LanguageClient):
    workspace = Path(tempfile.mkdtemp(dir=WORKSPACE))  # its own .fsr history: no test sees another's
    lsp_client.workspace_dir = workspace  # type: ignore[attr-defined]
    params = types.InitializeParams(capabilities=client_capabilities(request.param),
                                    root_uri=workspace.as_uri(), initialization_options=init_options())
    lsp_client.client_name = request.param  # type: ignore[attr-defined]
    await lsp_client.initialize_session(params)
    yield
    await lsp_client.shutdown_session()


async def without_checks(lsp_client: LanguageClient, populate=None):
    """A session in a workspace of its own, VS Code's capabilities, no nvcc check on open (only
    what the test looks at): the body of a fixture whose server runs with stand-ins.
    `populate(workspace)`: files written before the server starts."""
    workspace = Path(tempfile.mkdtemp(dir=WORKSPACE))
    if populate is not None:
        populate(workspace)
    lsp_client.workspace_dir = workspace  # type: ignore[attr-defined]
    options = init_options()
    options["fsr"]["diagnostics"] = {"onOpen": False}
    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual_studio_code"), root_uri=workspace.as_uri(),
        initialization_options=options))
    yield
    await lsp_client.shutdown_session()


async def wait_until(predicate, timeout: float = 60.0, interval: float = 0.05):
    async def poll():
        while True:
            value = predicate()
            if value:
                return value
            await asyncio.sleep(interval)

    return await asyncio.wait_for(poll(), timeout)


def open_file(client: LanguageClient, name: str, text: str, version: int = 1) -> str:
    path = getattr(client, "workspace_dir", WORKSPACE) / name
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="cuda-cpp", version=version, text=text)))
    return uri


def edits_in(edit: types.WorkspaceEdit, uri: str) -> tuple[list, int | None]:
    """A workspace edit's edits of one document, and the version they are for (None: a plain
    `changes` map, which clients without documentChanges get)."""
    if edit.document_changes:
        (doc,) = [d for d in edit.document_changes if d.text_document.uri == uri]
        return list(doc.edits), doc.text_document.version
    return list(edit.changes[uri]), None
