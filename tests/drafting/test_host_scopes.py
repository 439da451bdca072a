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
