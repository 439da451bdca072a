"""The scope at each launch (drafting/host.py): a function's body is read once for all its
launches (a generated file's function with thousands of launches was read again for each: 5 s
of a 10 MB file's first draft), and each launch still sees only what comes before it."""

from __future__ import annotations

from fsr_lsp.drafting import host
from fsr_lsp.source import SourceText


def test_a_functions_body_is_read_once_for_all_its_launches(monkeypatch):
    lines = ["__global__ void k(float* x, int n) { x[0] = n; }", "int main() {", "    float* x;"]
    for i in range(200):
        lines += [f"    int n{i} = {i + 1};", f"    k<<<1, {32 + i}>>>(x, n{i});"]
    lines.append("}")
    calls = []
    real = host.collect_item
    monkeypatch.setattr(host, "collect_item", lambda src, node, scope: (calls.append(node.start_byte),
                                                                       real(src, node, scope)))
    launches = host.find_launches(SourceText("\n".join(lines)))
    assert len(launches) == 200
    body_items = 1 + 2 * 200  # `float* x;`, then a declaration and a launch statement each
    assert len(calls) <= body_items + 5, len(calls)  # before: about 200 * 200
    for i, launch in enumerate(launches):  # each sees its own n, and none declared after it
        assert launch.scope.values[f"n{i}"] == str(i + 1)
        assert f"n{i + 1}" not in launch.scope.values
        assert launch.config[1] == str(32 + i)


def test_a_files_headers_are_read_once_and_what_a_file_adds_stays_its_own(monkeypatch):
    """A draft after each edit of a file read its ten headers again: the headers' file-scope
    facts are kept per set of header texts, and copied before a file adds its own."""
    header = "#define BLOCK 128\ntypedef float real;\n"
    one = SourceText("#define N 1000\n__global__ void k(real* x, int n);\n"
                     "int main() { real* x; cudaMalloc(&x, N * sizeof(real)); k<<<N / BLOCK, BLOCK>>>(x, N); }\n")
    two = SourceText("__global__ void k(real* x, int n);\n"
                     "int main() { real* x; cudaMalloc(&x, 64 * sizeof(real)); k<<<1, BLOCK>>>(x, 64); }\n")
    collected: list[int] = []
    real = host.collect_file
    monkeypatch.setattr(host, "collect_file", lambda src, root, scope: (collected.append(len(src.data)),
                                                                       real(src, root, scope)))
    host._headers_scope.cache_clear()
    first = host.find_launches(one, "one.cu", (header,))
    again = host.find_launches(SourceText(one.text + "// an edit\n"), "one.cu", (header,))
    second = host.find_launches(two, "two.cu", (header,))
    assert collected.count(len(header)) == 1  # the header read once for all three
    assert first[0].scope.values["BLOCK"] == "128" and again[0].scope.values["N"] == "1000"
    assert second[0].scope.values["BLOCK"] == "128" and "N" not in second[0].scope.values  # one.cu's own N stays its own
    assert second[0].scope.types["real"] == "float"
