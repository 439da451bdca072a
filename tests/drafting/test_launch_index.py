"""The workspace's launch index answers without re-reading: an open document is parsed once
per text it holds, and the disk scan runs on its own thread."""

import threading
from pathlib import Path

from fsr_lsp.drafting import workspace
from fsr_lsp.drafting.workspace import LaunchIndex

LAUNCH = "__global__ void k(float* x, int n);\nint main() {{ float* x; cudaMalloc(&x, {n} * 4); k<<<1, 256>>>(x, {n}); }}\n"


def test_an_open_document_is_parsed_once_per_text(monkeypatch, tmp_path):
    calls = []
    real = workspace.find_launches
    monkeypatch.setattr(workspace, "find_launches", lambda src, name, *more: calls.append(name) or real(src, name, *more))
    index = LaunchIndex(tmp_path)
    docs = {tmp_path / f"d{i}.cu": LAUNCH.format(n=i + 1) for i in range(50)}
    for _ in range(20):
        found = index.launches(docs)
    assert len(found) == 50 and len(calls) == 50  # once each, not once per request
    docs[tmp_path / "d0.cu"] = LAUNCH.format(n=999)  # an edit: that document alone again
    assert any("999" in str(launch) for launch in index.launches(docs)) and len(calls) == 51


def test_the_disk_scan_runs_in_the_background_and_never_blocks_a_request(monkeypatch, tmp_path):
    for i in range(5):
        (tmp_path / f"f{i}.cu").write_text(LAUNCH.format(n=i + 1))
    gate = threading.Event()
    real = LaunchIndex._read

    def slow_read(self, path: Path):
        gate.wait(10)
        return real(self, path)

    monkeypatch.setattr(LaunchIndex, "_read", slow_read)
    index = LaunchIndex(tmp_path)
    index.scan_in_background()
    assert index.launches({}) == []  # answered at once, with what is read so far (nothing)
    gate.set()
    index._scanning.join(10)
    assert len(index.launches({})) == 5


def test_an_open_document_over_the_size_limit_counts_only_for_its_own_kernels(monkeypatch, tmp_path):
    monkeypatch.setattr(workspace, "MAX_BYTES", 1000)  # as a generated file on disk is left out
    index = LaunchIndex(tmp_path)
    big = tmp_path / "big.cu"
    docs = {big: LAUNCH.format(n=7) + "// " + "x" * 2000 + "\n", tmp_path / "small.cu": LAUNCH.format(n=3)}
    assert ["3"] == [launch.args[1] for launch in index.launches(docs)]  # drafting another file's kernel
    assert sorted(launch.args[1] for launch in index.launches(docs, own=big)) == ["3", "7"]  # its own
