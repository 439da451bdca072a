"""A large text's active `#if` branches are parsed as its own tree reparsed where lines were
blanked (kernels/treesitter.py `derived`), not parsed again whole: the blanked lines keep every
byte's place (spaces), and the tree must be the one a fresh parse gives, on every kernel source
this repository holds, concatenated past the size where the reparse applies."""

from __future__ import annotations

from pathlib import Path

from fsr_lsp.kernels import lexical, treesitter
from fsr_lsp.kernels.lexical import active_text, defined_macros

ROOT = Path(__file__).resolve().parent.parent.parent


def sources() -> str:
    """Every .cu and .cuh here, a third of them in a branch that is off and a third in both
    branches of one (as real files hold other builds' code)."""
    files = sorted(p for d in ("examples", "bench", "tests") for p in (ROOT / d).rglob("*.cu*") if p.is_file())
    parts = []
    for i, path in enumerate(files):
        text = path.read_text(errors="replace")
        if i % 3 == 0:
            parts.append(f"#if 0\n{text}\n#endif\n")
        elif i % 3 == 1:
            parts.append(f"#ifdef FSR_OTHER_BUILD\n{text}\n#else\n{text}\n#endif\n")
        else:
            parts.append(text)
    return "\n".join(parts)


def test_blanked_lines_keep_every_bytes_place():
    text = "int a;\n#if 0\nfloat b; // é\n#else\nint c;\n#endif\n\t\nint d;\n"
    active = active_text(text, set())
    assert len(active.encode()) == len(text.encode()) and active.count("\n") == text.count("\n")
    assert "float b" not in active and "int c;" in active and "#" not in active
    assert active.split("\n")[6] == "\t"  # whitespace lines stay as they were


def test_the_reparsed_active_tree_is_a_fresh_parses_on_every_source_here(monkeypatch):
    text = sources()
    assert len(text) > treesitter.YIELDING_BYTES and text.count("#if") > 20
    reparsed = []
    real = treesitter._reparsed
    monkeypatch.setattr(treesitter, "_reparsed", lambda base, data: reparsed.append(1) or real(base, data))
    lexical._active_text.cache_clear()
    treesitter.parse.cache_clear()
    active = active_text(text, defined_macros(text.encode())).encode()
    tree = treesitter.parse(active)
    assert reparsed == [1]
    fresh = treesitter._parser().parse(active)
    assert str(tree.root_node) == str(fresh.root_node)


def test_a_large_texts_device_variables_are_those_a_query_over_every_declaration_finds(monkeypatch):
    """Of a large text, the declarations naming `__device__` or `__managed__` are found from those
    words' places (device_variables.py); the answer must be the whole-tree query's, here on every
    source of the repository with writable device variables of every form added."""
    from fsr_lsp.kernels import device_variables as dv

    extra = ("__device__ int counter;\n__managed__ float table[4][8];\nnamespace inner { __device__ double acc; }\n"
             "__device__ int a, b;\nstatic __device__ unsigned hits[256] = {0};\n__device__ float twice(float v) "
             "{ return 2 * v; }\n__constant__ float k[4];\nextern __device__ int elsewhere;\n")
    text = sources() + "\n" + extra
    assert len(text) > treesitter.YIELDING_BYTES
    by_words = dv._device_variables.__wrapped__(text)
    monkeypatch.setattr(dv, "YIELDING_BYTES", len(text) + 1)  # the query over every declaration
    by_query = dv._device_variables.__wrapped__(text)
    assert by_words == by_query
    assert {"counter", "table", "acc", "a", "b", "hits"} <= {v.name for v in by_words}
    assert not {"twice", "k", "elsewhere"} & {v.name for v in by_words}


def test_runs_of_blanked_lines_at_the_start_the_middle_and_the_end_are_reparsed_as_a_fresh_parse():
    """Each run of consecutive changed lines is one edit of the tree: the first line, a run in
    the middle, single lines, and the last line (no newline after it) among them."""
    lines = ["#if 0", "int a;", "#endif", "struct P { float x; float y; };", "#ifdef B", "float b;", "double c;",
             "#endif", "__global__ void k(float* y) { y[0] = 1; }", "#if 0", "int z;", "#endif"]
    base = "\n".join(lines).encode()
    blank = {0, 1, 2, 4, 5, 6, 7, 9, 10, 11}
    data = "\n".join(" " * len(line) if i in blank else line for i, line in enumerate(lines)).encode()
    assert len(data) == len(base)
    tree = treesitter._reparsed(base, data)
    assert str(tree.root_node) == str(treesitter._parser().parse(data).root_node)


def test_a_large_texts_aggregates_are_those_a_query_over_every_node_finds(monkeypatch):
    """Of a large text, struct, union and class specifiers are found from their keywords' places
    (treesitter._aggregates); the answer must be the query's, here on every source of the
    repository with specifiers of every form added (and words that are none)."""
    extra = ("struct __align__(16) Vec { float x, y, z, w; };\nunion Bits { float f; unsigned u; };\n"
             "class Box { public: int n; };\ntemplate <class T> struct Pack { T v[4]; };\nenum class Mode : int { A };\n"
             "typedef struct { double d; } Anon;\nvoid f(struct Vec* v, union Bits b);\n// struct InAComment { int x; };\n"
             "const char* s = \"class InAString {}\";\nstruct Forward;\n")
    text = (sources() + "\n" + extra).encode()
    assert len(text) > treesitter.YIELDING_BYTES
    by_words = treesitter._aggregates.__wrapped__(text)
    assert len(by_words) >= 10
    monkeypatch.setattr(treesitter, "YIELDING_BYTES", len(text) + 1)  # the query over every node
    by_query = treesitter._aggregates.__wrapped__(text)
    assert [n.id for n in by_words] == [n.id for n in by_query]
    names = {text[n.start_byte:n.end_byte].split(b"{")[0].decode() for n in by_words}
    assert {"union Bits ", "class Box ", "struct Forward", "struct "} <= names
    assert not any("InAComment" in n or "InAString" in n or "Mode" in n for n in names)
