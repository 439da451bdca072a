"""Dependencies point one way: the server uses the search, the search uses the evaluator; the
evaluator knows nothing of LSP or LLMs, and the server's search jobs do not import the server."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "fsr_lsp"


def imports(path: Path) -> set[str]:
    """Absolute names of every module a file imports (relative imports resolved)."""
    module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    package = module.rsplit(".", 1)[0] if path.name != "__init__.py" else module.removesuffix(".__init__")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            found.add(base)
            found |= {f"{base}.{a.name}" for a in node.names}
    return found


UP = ("fsr_lsp.server", "fsr_lsp.cli", "fsr_lsp.workflows", "fsr_lsp.settings", "pygls", "lsprotocol")
RULES = [
    ("evaluator", ("fsr_lsp.search", "fsr_lsp.drafting", "openai", *UP)),
    ("search", ("fsr_lsp.drafting", *UP)),
    ("kernels", ("fsr_lsp.evaluator", "fsr_lsp.search", "fsr_lsp.drafting", "fsr_lsp.specs", *UP)),
    ("specs", ("fsr_lsp.evaluator", "fsr_lsp.search", "fsr_lsp.drafting", *UP)),
    ("drafting", ("fsr_lsp.search", "openai", *UP)),
    ("capture", ("fsr_lsp.evaluator", "fsr_lsp.search", "fsr_lsp.drafting", "fsr_lsp.specs", "fsr_lsp.kernels",
                 "openai", *UP)),
    ("profiling", ("fsr_lsp.search", "fsr_lsp.drafting", "fsr_lsp.capture", "openai", *UP)),
    ("workflows", ("fsr_lsp.server", "fsr_lsp.cli", "pygls", "lsprotocol")),
    ("settings", ("fsr_lsp.server", "fsr_lsp.cli", "fsr_lsp.workflows", "fsr_lsp.drafting", "pygls", "lsprotocol")),
    ("llmclient", ("fsr_lsp.evaluator", "fsr_lsp.search", "fsr_lsp.drafting", *UP)),
    ("redaction", ("fsr_lsp.", "pygls", "lsprotocol")),
    ("source", ("fsr_lsp.", "pygls", "lsprotocol")),
]


@pytest.mark.parametrize("layer, forbidden", RULES)
def test_each_layer_imports_only_downwards(layer, forbidden):
    for path in (PACKAGE / layer).rglob("*.py") if (PACKAGE / layer).is_dir() else [PACKAGE / f"{layer}.py"]:
        bad = sorted(name for name in imports(path) if name.startswith(forbidden))
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def test_every_remote_call_resolves():
    """Work run on a backend's GPU by name (a cluster's worker imports it there)."""
    from fsr_lsp.evaluator.backends.calls import REMOTE_CALLS, remote_call

    for name in REMOTE_CALLS:
        assert callable(remote_call(name)), name


def test_the_servers_search_jobs_do_not_import_the_server():
    for name in ("searches.py", "edits.py", "logs.py", "check.py", "diagnostics.py", "watch.py"):
        found = imports(PACKAGE / "server" / name)
        assert "fsr_lsp.server.server" not in found and "fsr_lsp.server.main" not in found, name


def test_no_module_is_over_400_lines_and_every_package_says_what_lives_there():
    for path in PACKAGE.rglob("*.py"):
        lines = path.read_text().count("\n")
        assert lines <= 400, f"{path.relative_to(PACKAGE)} has {lines} lines: split it by what it holds"
        if path.name == "__init__.py":
            doc = ast.get_docstring(ast.parse(path.read_text()))
            assert doc and len(doc) > 20, f"{path.relative_to(PACKAGE)} says nothing of what lives there"


def test_the_cli_and_the_servers_entry_point_start_without_the_heavy_libraries():
    """`fsr --help`, `fsr spec` and the server's start import none of openai, torch, pycuda or ray:
    they load where the work is done (issue 37)."""
    import subprocess
    import sys

    probe = ("import sys, fsr_lsp.cli.main, fsr_lsp.server.main; from fsr_lsp.cli.main import build_parser; "
             "build_parser(); print(sorted(m for m in ('openai', 'torch', 'pycuda', 'ray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]", out.stdout
