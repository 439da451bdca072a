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


def gated_disk(monkeypatch, folder: Path, files: int) -> threading.Event:
    """`files` sources on disk, each launching `k`, whose reading waits until the event is set."""
    for i in range(files):
        (folder / f"f{i}.cu").write_text(LAUNCH.format(n=i + 1))
    gate = threading.Event()
    real = LaunchIndex._read

    def slow_read(self, path: Path):
        gate.wait(10)
        return real(self, path)

    monkeypatch.setattr(LaunchIndex, "_read", slow_read)
    return gate


def test_the_disk_scan_runs_in_the_background_and_never_blocks_a_request(monkeypatch, tmp_path):
    gate = gated_disk(monkeypatch, tmp_path, 5)
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


TWO = ("__global__ void k(float* x, int n);\n__global__ void other(float* x, int n);\n"
       "void launch_k(float* x, int n) {{ k<<<(n + 255) / 256, 256>>>(x, n); }}\n"
       "int main() {{ float* x; cudaMalloc(&x, {n} * 4); launch_k(x, {n}); other<<<1, 32>>>(x, 32);"
       " k<<<1, 256>>>(x, 256); }}\n")


def test_a_large_own_document_is_read_for_the_kernel_drafted_only(monkeypatch, tmp_path):
    """A hover on one kernel of a 10 MB file waited 4 s for the file's 4,321 launches: of a document
    over the size limit, the drafted kernel's launches alone are read (its launcher's caller too)."""
    monkeypatch.setattr(workspace, "MAX_BYTES", 1000)
    calls = []
    real = workspace.find_launches
    monkeypatch.setattr(workspace, "find_launches", lambda *a: calls.append(a[3]) or real(*a))
    index = LaunchIndex(tmp_path)
    big = tmp_path / "big.cu"
    docs = {big: TWO.format(n=5000) + "// " + "x" * 2000 + "\n"}
    found = index.launches(docs, own=big, kernel="k")
    assert calls == ["k"] and [launch.kernel for launch in found] == ["k", "k"]
    assert sorted(launch.args[1] for launch in found) == ["256", "n"]
    launcher = next(launch for launch in found if launch.args[1] == "n")
    assert launcher.scope.values.get("n") == "5000"  # bound from launch_k's call in main
    assert index.launches(docs, own=big, kernel="k") == found and calls == ["k"]  # read once per text
    assert [launch.kernel for launch in index.launches(docs, own=big)] == ["k", "other", "k"]  # every kernel: the whole file


def test_one_kernels_launches_are_those_the_whole_files_reading_gives():
    from fsr_lsp.drafting.host import find_launches
    from fsr_lsp.source import SourceText

    root = Path(__file__).resolve().parent.parent.parent
    files = [p for d in ("examples", "bench") for p in sorted((root / d).rglob("*.cu")) if "<<<" in p.read_text()]
    compared = 0
    for path in files:
        src = SourceText(path.read_text())
        every = find_launches(src)
        for name in {launch.kernel for launch in every}:
            assert find_launches(src, only=name) == [launch for launch in every if launch.kernel == name], (path, name)
            compared += 1
    assert compared > 30


def test_a_draft_whose_own_file_launches_the_kernel_does_not_wait_for_the_scan(monkeypatch, tmp_path):
    """A draft takes the kernel's own file's launches over any other's: where the file it is
    drafted in launches it, the first request does not wait the scan's FIRST_WAIT (a 10 MB
    file's first spec in a hover waited a second for a large workspace's scan). Where it does
    not, the request waits as before."""
    import time

    gate = gated_disk(monkeypatch, tmp_path, 3)
    own = tmp_path / "own.cu"
    docs = {own: LAUNCH.format(n=4096)}
    started = time.monotonic()
    found = LaunchIndex(tmp_path, first_wait=5.0).launches(docs, own, "k")
    assert time.monotonic() - started < 1.0 and [launch.args for launch in found] == [("x", "4096")]
    started = time.monotonic()
    LaunchIndex(tmp_path, first_wait=1.5).launches(docs, own, "other")  # its own file does not launch it: waits
    assert time.monotonic() - started >= 1.4
    gate.set()


def test_drafting_one_kernel_reads_only_the_open_documents_that_name_it(monkeypatch, tmp_path):
    """Under edits to many open documents, each edited one was parsed again for every draft:
    a document that never names the kernel cannot launch it, and is not read for its draft."""
    calls = []
    real = workspace.find_launches
    monkeypatch.setattr(workspace, "find_launches", lambda src, name, *more: calls.append(name) or real(src, name, *more))
    index = LaunchIndex(tmp_path)
    own = tmp_path / "own.cu"
    docs = {own: "__global__ void k(float* x, int n) { x[0] = n; }\n",
            tmp_path / "caller.cu": LAUNCH.format(n=5),  # launches k
            tmp_path / "macro.cu": "#define GO(f) f<<<1, 32>>>(x, 32)\nvoid m(float* x) { GO(k); }\n",
            **{tmp_path / f"other{i}.cu": LAUNCH.format(n=i).replace("k", "kk") for i in range(20)}}
    found = index.launches(docs, own=own, kernel="k")
    read = sorted(Path(c).name for c in calls if Path(c).name in {p.name for p in docs})  # (another test's scan thread)
    assert read == ["caller.cu", "macro.cu"]  # (own.cu has no `<<<`: never parsed)
    assert {launch.file for launch in found if launch.kernel == "k"} >= {"caller.cu"}
    assert len(index.launches(docs)) >= 21  # every document's launches where no kernel is named
    assert workspace.mentions("x = k;", "k") and not workspace.mentions("kk<<<1, 1>>>(x);", "k")


def test_an_opened_document_as_it_is_on_disk_takes_the_scans_reading(monkeypatch, tmp_path):
    """A kernel's first touch parsed its own document again though the workspace's scan had just
    read it: the scan's reading serves while the text is the one on disk; an edit is read anew."""
    path = tmp_path / "a.cu"
    path.write_text(LAUNCH.format(n=5))
    index = LaunchIndex(tmp_path)
    index.launches({})  # the scan
    index._scanning.join(10)
    calls = []
    real = workspace.find_launches
    monkeypatch.setattr(workspace, "find_launches", lambda src, name, *more: calls.append(name) or real(src, name, *more))
    docs = {path.resolve(): path.read_text()}
    assert [launch.args[1] for launch in index.launches(docs, own=path.resolve(), kernel="k")] == ["5"]
    assert calls == []
    docs[path.resolve()] = LAUNCH.format(n=6)
    assert [launch.args[1] for launch in index.launches(docs, own=path.resolve(), kernel="k")] == ["6"]
    assert calls == ["a.cu"]
