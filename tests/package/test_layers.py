"""Dependencies point one way: the server uses the search, the search uses the evaluator; the
evaluator knows nothing of LSP or LLMs, and the server's search jobs do not import the server.
No module depends on itself through others (no import circle), and brackets are matched in one
place."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent.parent / "fsr_lsp"


def statements(path: Path, root: Path = PACKAGE.parent) -> list[tuple[str, tuple[str, ...]]]:
    """Each import statement of a file below `root`: (the module it names, absolute, and the
    names it takes from it; none for `import a.b`)."""
    parts = path.relative_to(root).with_suffix("").parts
    package = ".".join(parts[:-1])  # a module's package; for __init__.py, the package itself
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, ()) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")
                base = ".".join(up[: len(up) - node.level + 1] + ([base] if base else []))
            found.append((base, tuple(a.name for a in node.names)))
    return found


def imports(path: Path) -> set[str]:
    """Absolute names of every module a file imports (relative imports resolved), and of what
    it takes from each (`from P import x` gives P and P.x, whether x is a module or not)."""
    return {name for base, names in statements(path) for name in (base, *(f"{base}.{n}" for n in names))}


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
    ("stores", ("fsr_lsp.", "pygls", "lsprotocol")),
    ("native", ("fsr_lsp.", "pygls", "lsprotocol")),
]


@pytest.mark.parametrize("layer, forbidden", RULES)
def test_each_layer_imports_only_downwards(layer, forbidden):
    for path in (PACKAGE / layer).rglob("*.py") if (PACKAGE / layer).is_dir() else [PACKAGE / f"{layer}.py"]:
        bad = sorted(name for name in imports(path) if name.startswith(forbidden))
        assert not bad, f"{path.relative_to(PACKAGE)} imports {bad}"


def modules_of(package: Path) -> dict[str, Path]:
    """Every module of the package by its absolute name (a package by its own name)."""
    out = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package.parent).with_suffix("").parts
        out[".".join(parts[:-1] if path.name == "__init__.py" else parts)] = path
    return out


MODULES = modules_of(PACKAGE)


def _named(module: str, modules: dict[str, Path]) -> set[str]:
    """What a module's import statements name, as absolute module names: `import a.b` names
    a.b; `from P import x` names P.x where that is a module of the package, else P."""
    path = modules[module]
    found: set[str] = set()
    for base, names in statements(path, path.parents[module.count(".") + (path.name == "__init__.py")]):
        taken = [f"{base}.{n}" for n in names]
        found |= {t if t in modules else base for t in taken} if names else {base}
    return found


def dependencies(module: str, modules: dict[str, Path]) -> set[str]:
    """The package's modules that importing `module` can run: each module it names, and each
    package on the way to one (`import a.b.c` runs a/b/__init__.py too, unless `module` is inside
    a.b: its package is under way before it), so a submodule taken from one's own package is no
    circle. Imports in functions and under `if TYPE_CHECKING:` count as well: putting one there
    hides a circle from the import system, not from a reader, who still cannot understand either
    module without the other."""
    own = module.split(".")
    found: set[str] = set()
    for name in _named(module, modules):
        parts = name.split(".")
        for k in range(1, len(parts) + 1):
            prefix = ".".join(parts[:k])
            if prefix in modules and prefix != module and (k == len(parts) or parts[:k] != own[:k]):
                found.add(prefix)
    return found


def circles(modules: dict[str, Path]) -> list[list[str]]:
    """The import circles among `modules`."""
    return circles_in({m: sorted(dependencies(m, modules)) for m in sorted(modules)})


def circles_in(graph: dict[str, list[str]]) -> list[list[str]]:
    """The circles of a graph (each node's list of the nodes it depends on): each strongly
    connected set of nodes, with one circle through it (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(graph[step])))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(_circle_through(sorted(group), graph))
    return found


def _circle_through(group: list[str], graph: dict[str, list[str]]) -> list[str]:
    """One circle from the group's first module back to it, by the shortest way."""
    start, inside = group[0], set(group)
    paths = {start: [start]}
    queue = [start]
    while queue:
        node = queue.pop(0)
        for step in graph[node]:
            if step == start:
                return paths[node] + [start]
            if step in inside and step not in paths:
                paths[step] = paths[node] + [step]
                queue.append(step)
    return group


def test_no_import_circles():
    """No module of the package depends on itself through others: a newcomer can read the
    package from the bottom up. Every import counts, at the top of a module, inside a function
    (deferred for start-up) or under `if TYPE_CHECKING:` (for annotations): deferring an import
    hides a circle from Python, not from a reader. A submodule taken from one's own package is no
    circle (the package is being imported already). Details: `dependencies` above."""
    found = [" -> ".join(m.removeprefix("fsr_lsp.") for m in circle) for circle in circles(MODULES)]
    assert not found, "import circles:\n" + "\n".join(found)


def stage_graph(modules: dict[str, Path], package: str = "fsr_lsp.evaluator") -> dict[str, list[str]]:
    """The package's stages (each subpackage, each module at its top) and the others each one's
    modules depend on."""
    def stage(module: str) -> str | None:
        return module[len(package) + 1:].split(".")[0] if module.startswith(package + ".") else None

    graph: dict[str, set[str]] = {}
    for module in modules:
        if (own := stage(module)) is not None:
            graph.setdefault(own, set()).update(
                s for s in map(stage, dependencies(module, modules)) if s is not None and s != own)
    return {s: sorted(d) for s, d in sorted(graph.items())}


def test_the_evaluators_stages_depend_one_way():
    """The evaluator has one subpackage per stage (job/, compile/, gpu/, sanitize/, profile/,
    worker/, backends/): no two stages, nor a stage and a module at the evaluator's top, depend
    on each other through any number of others, so the tree reads in one order (the records
    first, the backends last)."""
    found = [" -> ".join(circle) for circle in circles_in(stage_graph(MODULES))]
    assert not found, "stages of the evaluator that depend on each other:\n" + "\n".join(found)


def test_the_stage_graph_sees_stages_that_depend_on_each_other(tmp_path):
    """Two stages whose modules import each other's, with no module circle among them."""
    files = {"__init__.py": "", "e/__init__.py": "", "e/top.py": "from .b.y import Y\n",
             "e/a/__init__.py": "", "e/a/x.py": "from ..b.y import Y\n", "e/a/z.py": "Z = 1\n",
             "e/b/__init__.py": "", "e/b/y.py": "Y = 1\n", "e/b/w.py": "def f():\n    from ..a.z import Z\n"}
    root = tmp_path / "fsr_lsp"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    modules = modules_of(root)
    assert circles(modules) == []
    assert stage_graph(modules, "fsr_lsp.e") == {"a": ["b"], "b": ["a"], "top": ["b"]}
    assert circles_in(stage_graph(modules, "fsr_lsp.e")) == [["a", "b", "a"]]


def test_the_circle_finder_finds_circles(tmp_path):
    """The check above, on circles of each kind it must see, and on a package that is none."""
    files = {"__init__.py": "", "a.py": "from .b import B\n", "b.py": "def f():\n    from .a import A\n",
             "c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .d import D\n",
             "d.py": "from . import c\n", "pkg/__init__.py": "from .x import X\n",
             "pkg/x.py": "from . import y\n", "pkg/y.py": "Y = 1\n"}
    root = tmp_path / "fsr_lsp"
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    assert sorted(circles(modules_of(root))) == [["fsr_lsp.a", "fsr_lsp.b", "fsr_lsp.a"],
                                                 ["fsr_lsp.c", "fsr_lsp.d", "fsr_lsp.c"]]


def test_one_name_per_module():
    """Two modules of one file name are two places a newcomer confuses. `__init__.py` aside, and
    `main.py`: each program's `python -m` entry (`fsr_lsp.cli.main`, `fsr_lsp.server.main`, which
    editors are configured to run), named as Python names an entry point."""
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name not in ("__init__.py", "main.py"):
            seen.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    twice = {name: sorted(paths) for name, paths in seen.items() if len(paths) > 1}
    assert not twice, f"modules of the same name: {twice}"


def test_every_remote_call_resolves():
    """Work run on a backend's GPU by name (a cluster's worker imports it there)."""
    from fsr_lsp.evaluator.backends.calls import REMOTE_CALLS, remote_call

    for name in REMOTE_CALLS:
        assert callable(remote_call(name)), name


def test_the_servers_search_jobs_do_not_import_the_server():
    for name in ("search_jobs.py", "edits.py", "logs.py", "check.py", "diagnostics.py", "watch.py"):
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


def test_the_servers_start_and_fsr_help_load_only_what_answers_them():
    """Until `initialize` is answered the server needs pygls, its own modules and the settings;
    `fsr --help` needs the parsers. The evaluator, the search, drafting, kernel discovery
    (tree-sitter), the file watcher and the CLI's tables load where their work is done
    (bench/startup.py times both: issue 37)."""
    import subprocess
    import sys

    probe = ("import sys; from fsr_lsp.server.main import build; build(); from fsr_lsp.cli.main import build_parser; "
             "build_parser(); print(' '.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    heavy = ("fsr_lsp.evaluator", "fsr_lsp.search", "fsr_lsp.drafting", "fsr_lsp.workflows", "fsr_lsp.capture",
             "fsr_lsp.kernels", "fsr_lsp.specs", "fsr_lsp.profiling", "fsr_lsp.llmclient", "tree_sitter", "watchdog",
             "multiprocessing", "sqlite3", "rich")
    loaded = sorted(m for m in out.stdout.split() if m.startswith(heavy))
    assert not loaded, f"loaded before the first request: {loaded}"


def test_ruffs_size_limits_only_ever_come_down():
    """The ratchet on function size (issue 62): bugbear and the complexity, argument, branch and
    statement limits stay selected, each at most what the package met when they were set."""
    import tomllib

    lint = tomllib.loads((Path(__file__).parent.parent.parent / "pyproject.toml").read_text())["tool"]["ruff"]["lint"]
    assert {"B", "C901", "PLR0912", "PLR0913", "PLR0915"} <= set(lint["select"])
    assert lint["mccabe"]["max-complexity"] <= 22
    limits = lint["pylint"]
    assert limits["max-args"] <= 8 and limits["max-branches"] <= 21 and limits["max-statements"] <= 61


def test_no_function_of_the_package_is_over_80_lines():
    """A function a reader takes in at once (issue 62): the longest are split into steps, as the
    timing, the verification and `prepare` were."""
    long = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.end_lineno is not None:
                if node.end_lineno - node.lineno + 1 > 80:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert not long, long
