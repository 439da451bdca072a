"""A large text's aliases read whole only when a name asked for may be one it declares
(kernels/aliases.py: DeferredAliases): every answer must be the whole reading's. Checked on
every CUDA source of this repository (examples, the corpora, test data) and every word in it,
and on a text made large, where a float kernel's draft must not read the whole text's types."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fsr_lsp.kernels.aliases import DeferredAliases, _may_declare, type_aliases

ROOT = Path(__file__).resolve().parents[2]
SOURCES = sorted(p for folder in ("examples", "bench", "tests/data") for p in (ROOT / folder).rglob("*")
                 if p.suffix in (".cu", ".cuh", ".h") and p.is_file())


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_a_name_the_look_says_is_not_declared_is_no_alias_of_the_whole_reading(path):
    text = path.read_text(errors="replace")
    whole = type_aliases(text)
    words = set(re.findall(r"[A-Za-z_]\w*", text)) | set(whole) | {"float", "unsigned int", "double2"}
    for word in sorted(words):
        if not _may_declare(text, word):
            assert word not in whole, word
    deferred = DeferredAliases(text)
    for name, value in whole.items():
        assert deferred.get(name) == value and name in deferred


def test_each_form_of_declaration_is_seen_and_a_builtin_redefined_too():
    text = ("#define DTYPE float\ntypedef double real;\nusing half2_t = __half2;\n"
            "struct __align__(16) Particle { float x, y, z, w; };\n"
            "typedef struct { float re, im; } Complex;\nenum class Mode : unsigned char { A, B };\n"
            "#define float double\n")
    for name in ("DTYPE", "real", "half2_t", "Particle", "Complex", "Mode", "float"):
        assert _may_declare(text, name), name
    assert not _may_declare(text, "int") and not _may_declare(text, "x") and not _may_declare(text, "Missing")


def test_a_float_kernels_draft_in_a_large_file_reads_none_of_its_types(tmp_path, monkeypatch):
    """The draft asks only about the names its kernel and launch use: `float` and `int` are
    no alias here, so the whole text's structs (3 s of a 10 MB file's draft) are never read;
    its spec is the one the whole reading gives."""
    from fsr_lsp.drafting import typed
    from fsr_lsp.drafting.resolver import workspace_spec
    from fsr_lsp.drafting.workspace import LaunchIndex
    from fsr_lsp.kernels import discover
    from fsr_lsp.kernels.discover import LARGE_BYTES
    from fsr_lsp.source import SourceText

    structs = "".join(f"struct Pair{i} {{ float a, b; }};\ntypedef Pair{i} P{i};\n" for i in range(LARGE_BYTES // 40))
    text = structs + ("__global__ void scale(float* y, const float* x, int n)\n"
                      "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }\n"
                      "int main() { int n = 1 << 20; float *x, *y; cudaMalloc(&x, n * sizeof(float));\n"
                      "  cudaMalloc(&y, n * sizeof(float)); scale<<<(n + 255) / 256, 256>>>(y, x, n); }\n")
    assert len(text) > LARGE_BYTES
    (tmp_path / "big.cu").write_text(text)
    kernel = next(k for k in discover(SourceText(text)).kernels if k.name == "scale")
    read: list[int] = []
    real = DeferredAliases._whole
    monkeypatch.setattr(DeferredAliases, "_whole", lambda self: read.append(1) or real(self))
    deferred = workspace_spec(LaunchIndex(tmp_path), tmp_path / "big.cu", text, kernel)
    assert deferred.origin == "drafted" and not read
    monkeypatch.setattr(typed, "DeferredAliases", type_aliases)  # read whole
    typed.forget()
    whole = workspace_spec(LaunchIndex(tmp_path), tmp_path / "big.cu", text, kernel)
    assert (whole.origin, whole.spec) == (deferred.origin, deferred.spec)


def test_a_small_files_float_kernel_is_drafted_without_reading_its_aliases_at_each_edit(tmp_path, monkeypatch):
    """Every text's aliases are deferred, not only a large one's: under edits each version of a
    document was read whole for its first draft (9 ms of a HeCBench file's)."""
    from fsr_lsp.drafting import typed
    from fsr_lsp.drafting.resolver import workspace_spec
    from fsr_lsp.drafting.workspace import LaunchIndex
    from fsr_lsp.kernels import aliases, discover
    from fsr_lsp.source import SourceText

    text = ("typedef float real;\n"
            "__global__ void scale(float* y, const float* x, int n)\n"
            "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = 2.0f * x[i]; }\n"
            "int main() { int n = 1 << 20; float *x, *y; cudaMalloc(&x, n * sizeof(float));\n"
            "  cudaMalloc(&y, n * sizeof(float)); scale<<<(n + 255) / 256, 256>>>(y, x, n); }\n")
    read: list[str] = []
    whole = aliases._type_aliases
    typed.forget()
    for edit in range(3):
        version = text + f"// edit {edit}\n"
        (tmp_path / "small.cu").write_text(version)
        kernel = discover(SourceText(version)).kernels[0]
        monkeypatch.setattr(aliases, "_type_aliases", lambda t, d: read.append(t) or whole(t, d))
        spec = workspace_spec(LaunchIndex(tmp_path), tmp_path / "small.cu", version, kernel)
        monkeypatch.setattr(aliases, "_type_aliases", whole)
        assert spec.origin == "drafted" and 'y = "out[n]"' in spec.spec, spec.spec
    assert not [t for t in read if "typedef float real" in t]
