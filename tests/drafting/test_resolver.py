"""The one resolver (drafting/resolver.py): a kernel typed once per version and build, then its
spec's origins tried in their fixed order, each stage's word kept in the spec's trail."""

from __future__ import annotations

import ast
from pathlib import Path

from fsr_lsp.drafting import typed as typed_module
from fsr_lsp.drafting.draft import Draft
from fsr_lsp.drafting.resolver import file_specs, kernel_specs, workspace_spec
from fsr_lsp.drafting.stages import STAGES, WHY_ORDER
from fsr_lsp.drafting.workspace import LaunchIndex
from fsr_lsp.kernels import find_kernel
from fsr_lsp.source import SourceText

FILE = """
/* @fsr
bench = { N = 4096 }
grid = "cdiv(N, 256)"
block = 256
[args]
y = "out[N]"
x = "in[N]"
n = "N"
*/
__global__ void own(float* y, const float* x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }

__global__ void launched(float* y, const float* x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] + 1.0f; }

__global__ void unlaunched(float* y, const float* x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * x[i]; }

template <typename T>
__global__ void generic(T* y, const T* x, int n)
{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i]; }

__global__ void timed(long long* t)
{ t[threadIdx.x] = clock64(); }

int main()
{
    const int n = 1 << 20;
    float *x, *y;
    cudaMalloc(&x, n * sizeof(float));
    cudaMalloc(&y, n * sizeof(float));
    launched<<<(n + 255) / 256, 256>>>(y, x, n);
}
"""


def _specs(tmp_path: Path, drafter=None) -> dict:
    path = tmp_path / "k.cu"
    path.write_text(FILE)
    return {s.kernel: s for s in kernel_specs([path], drafter)}


def _stages(spec) -> list[str]:
    return [name for name, _ in spec.trail]


def test_each_origin_comes_from_its_stage_and_the_trail_says_what_each_earlier_stage_said(tmp_path):
    specs = _specs(tmp_path)
    assert specs["own"].origin == "attached" and _stages(specs["own"]) == ["complete", "attached"]
    launched = specs["launched"]
    assert launched.origin == "drafted"
    assert _stages(launched) == ["complete", "attached", "checkable", "captured", "drafted"]
    assert dict(launched.trail)["attached"] == "no @fsr block" and dict(launched.trail)["captured"] == "not applicable"
    unlaunched = specs["unlaunched"]
    assert unlaunched.origin == "inferred" and dict(unlaunched.trail)["drafted"] == "no launch of unlaunched found"
    assert "not drafted: no launch of unlaunched found" in unlaunched.problems
    assert specs["timed"].origin == "none" and _stages(specs["timed"])[-1] == "checkable"
    assert "reads the GPU clock" in specs["timed"].problems[0]


def test_where_no_stage_answers_every_stage_s_reason_is_said_in_order(tmp_path):
    generic = _specs(tmp_path)["generic"]
    assert generic.origin == "none" and generic.spec is None
    assert _stages(generic) == [name for name, _ in STAGES]  # every stage was tried
    said = dict(generic.trail)
    assert said["drafted"] == "no launch of generic found" and said["model"] == "not applicable"
    # the problems: the stages' reasons in WHY_ORDER, so the signature's reason comes before the launch's
    inferred_at = next(i for i, p in enumerate(generic.problems) if p in said["inferred"])
    drafted_at = generic.problems.index("no launch of generic found")
    assert WHY_ORDER.index("inferred") < WHY_ORDER.index("drafted") and inferred_at < drafted_at


def test_the_model_is_asked_last_and_only_for_what_nothing_else_gave(tmp_path):
    asked: list[tuple[str, str]] = []

    def drafter(src, kernel, launches, why) -> Draft:
        asked.append((kernel.name, why))
        return Draft(kernel.name, None, problems=["the model gave no block"])

    specs = _specs(tmp_path, drafter)
    assert asked == [("generic", "no launch of generic found")]
    generic = specs["generic"]
    assert dict(generic.trail)["model"] == "the model gave no block" and "the model gave no block" in generic.problems


def test_a_kernel_is_typed_once_per_version_and_build(tmp_path, monkeypatch):
    """The hover, the code action and the save of one version find it typed; another `-D`
    types it again, as that build compiles it."""
    text = ("#ifdef USE_DOUBLE\ntypedef double real;\n#else\ntypedef float real;\n#endif\n"
            "__global__ void scale(real* y, const real* x, int n)\n"
            "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2 * x[i]; }\n"
            "int main() { const int n = 4096; real *x, *y; cudaMalloc(&x, n * sizeof(real));\n"
            "  cudaMalloc(&y, n * sizeof(real)); scale<<<n / 128, 128>>>(y, x, n); }\n")
    path = tmp_path / "real.cu"
    path.write_text(text)
    calls: list[frozenset] = []
    real = typed_module._typed
    monkeypatch.setattr(typed_module, "_typed", lambda k, t, h, d, s: calls.append(d) or real(k, t, h, d, s))
    typed_module.forget()
    kernel = find_kernel(SourceText(text), "scale")
    index = LaunchIndex(tmp_path)
    first = workspace_spec(index, path, text, kernel)
    again = workspace_spec(index, path, text, kernel, {path: text})
    assert len(calls) == 1 and first.spec == again.spec and first.origin == "drafted"
    double = workspace_spec(index, path, text, kernel, flags=("-DUSE_DOUBLE",))
    assert len(calls) == 2 and calls[1] == frozenset({"USE_DOUBLE"})
    assert double.origin == "drafted" and len(calls) == 2  # the kept one, not typed a third time:
    assert typed_module.typed_kernel(kernel, text, (), frozenset({"USE_DOUBLE"})).kernel.params[0].dtype == "float64"
    assert typed_module.typed_kernel(kernel, text, (), frozenset()).kernel.params[0].dtype == "float32"
    edited = text.replace("2 * x[i]", "3 * x[i]")
    workspace_spec(index, path, edited, find_kernel(SourceText(edited), "scale"))
    assert len(calls) == 3  # a new version is typed anew


def test_file_specs_and_kernel_specs_agree_where_there_is_no_build(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(FILE)
    def read(specs) -> dict:  # the launch is named by its path as given: the first line says where
        return {s.kernel: (s.origin, s.spec and s.spec.split("\n", 2)[2], s.problems) for s in specs}

    listed = read(kernel_specs([path]))
    assert listed == read(file_specs(LaunchIndex(tmp_path, first_wait=None), path, FILE))


def test_no_stage_types_a_kernel_itself():
    """Only typed.py calls the helpers that work out a signature's types: a stage reads the
    typed kernel (issue 60: no stage recomputes a type)."""
    helpers = {"type_aliases", "with_aliases", "compiled_as", "retyped", "defines_for", "with_struct_fields",
               "with_included_aliases", "DeferredAliases"}
    folder = Path(typed_module.__file__).parent
    for module in folder.glob("*.py"):
        if module.name == "typed.py":
            continue
        for node in ast.walk(ast.parse(module.read_text())):
            if isinstance(node, ast.ImportFrom):
                taken = {a.name for a in node.names} & helpers
                assert not taken, f"{module.name} imports {sorted(taken)}: type the kernel in typed.py"


def test_fsr_spec_says_the_stages_each_kernel_went_through(tmp_path, capsys):
    from fsr_lsp.cli import main as cli

    (tmp_path / ".git").mkdir()
    path = tmp_path / "k.cu"
    path.write_text(FILE)
    cli.main(["spec", str(path), "--no-capture"])
    out = capsys.readouterr().out
    assert "tried: complete > attached > checkable > captured > drafted\n" in out
    assert "tried: complete > attached > checkable > captured > drafted > inferred > model\n" in out  # generic


def test_a_draft_resolves_each_open_documents_path_once(tmp_path, monkeypatch):
    """Resolving 50 open documents' paths was a quarter of a draft's time under edits."""
    import pathlib

    docs = {tmp_path / f"d{i}.cu": f"void f{i}() {{}}\n" for i in range(20)}
    path = tmp_path / "k.cu"
    path.write_text(FILE)
    kernel = find_kernel(SourceText(FILE), "launched")
    index = LaunchIndex(tmp_path)
    workspace_spec(index, path, FILE, kernel, docs)
    calls: list[object] = []
    real = pathlib.Path.resolve
    monkeypatch.setattr(pathlib.Path, "resolve", lambda self, *a, **k: calls.append(self) or real(self, *a, **k))
    again = workspace_spec(index, path, FILE, kernel, docs)
    assert again.origin == "drafted"
    assert not [p for p in calls if p in docs], calls  # (another test's scan thread may resolve its own files)
