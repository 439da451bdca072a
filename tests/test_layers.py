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


BRACKETS = frozenset("()[]{}<>")


def _counts_a_depth(function: ast.AST) -> set[str]:
    """Names the function steps up and down by one (`depth += 1`, `depth -= 1`), or by a table
    of brackets (`depth += {"(": 1, ")": -1}.get(ch, 0)`)."""
    up, down = set(), set()
    for node in ast.walk(function):
        if not (isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name)):
            continue
        if isinstance(node.value, ast.Constant) and node.value.value == 1:
            (up if isinstance(node.op, ast.Add) else down if isinstance(node.op, ast.Sub) else set()).add(node.target.id)
        elif any(isinstance(d, ast.Dict) and any(_bracket(k) for k in d.keys) for d in ast.walk(node.value)):
            up.add(node.target.id)
            down.add(node.target.id)
    return up & down


def _bracket(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)) and node.value:
        value = node.value.decode("latin-1") if isinstance(node.value, bytes) else node.value
        return set(value) <= BRACKETS
    return isinstance(node, ast.Constant) and type(node.value) is int and node.value in b"()[]{}<>"


def test_one_bracket_matcher():
    """Brackets are matched in kernels/brackets.py alone (`nesting` and what is built on it):
    a function elsewhere that counts a depth up and down among bracket characters fails here."""
    counting = []
    for path in PACKAGE.rglob("*.py"):
        if path == PACKAGE / "kernels" / "brackets.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and _counts_a_depth(node) and \
                    any(_bracket(c) for c in ast.walk(node)):
                counting.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert not counting, f"brackets counted by hand (use kernels/brackets.py): {counting}"
