"""Every store fsr keeps in `.fsr/` opens through one path (fsr_lsp/stores.py): a damaged one
(garbage, a folder of its name, a file SQLite cannot read) is moved aside and kept, named in one
line, a fresh one made, and the work goes on (issue 61: `echo garbage > .fsr/history.sqlite` made
`fsr history` end in a traceback and every hover on a kernel answer -32603)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fsr_lsp.drafting.cache import ProofCache
from fsr_lsp.drafting.proof import Proof
from fsr_lsp.profiling.timings import Timings
from fsr_lsp.search.store import HistoryStore


def use_history(workspace: Path) -> None:
    with HistoryStore(workspace) as store:
        search = store.start_search("k", "a.cu", "kern", "GPU", {})
        assert search >= 1


def use_proofs(workspace: Path) -> None:
    with ProofCache(workspace) as cache:
        cache.put("key", Proof(kernel="kern", status="proven", message="ok"))
        assert cache.get("key") is not None


def use_timings(workspace: Path) -> None:
    with Timings(workspace) as timings:
        timings.record("a.cu", "kern", "src", "def", 1.5, "GPU", "original")
        assert timings.fastest("a.cu", "kern", "GPU") is not None


STORES = {"history.sqlite": use_history, "proofs.sqlite": use_proofs, "timings.sqlite": use_timings}
DAMAGE = {
    "garbage": lambda p: p.write_text("garbage\n" * 100),
    "a folder": lambda p: p.mkdir(),
    "binary noise": lambda p: p.write_bytes(bytes(range(256)) * 64),
}


@pytest.mark.parametrize("store", sorted(STORES))
@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_store_is_kept_aside_named_and_a_fresh_one_serves(tmp_path, capsys, store, damage):
    path = tmp_path / ".fsr" / store
    path.parent.mkdir()
    DAMAGE[damage](path)
    STORES[store](tmp_path)  # works, and again on the fresh store
    STORES[store](tmp_path)
    kept = [p for p in path.parent.iterdir() if p.name.startswith(f"{store}.damaged-")]
    assert len(kept) == 1 and path.is_file()
    err = capsys.readouterr().err
    assert err.count(f"{path} was damaged") == 1 and kept[0].name in err, err


def test_an_empty_store_file_is_a_fresh_store_not_damage(tmp_path, capsys):
    path = tmp_path / ".fsr" / "history.sqlite"
    path.parent.mkdir()
    path.write_bytes(b"")
    use_history(tmp_path)
    assert capsys.readouterr().err == "" and not list(path.parent.glob("*.damaged-*"))


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write a read-only folder")
def test_a_damaged_store_that_cannot_be_moved_aside_serves_from_memory(tmp_path, capsys):
    folder = tmp_path / ".fsr"
    folder.mkdir()
    (folder / "proofs.sqlite").write_text("garbage")
    folder.chmod(0o500)
    try:
        use_proofs(tmp_path)
    finally:
        folder.chmod(0o700)
    assert "kept in memory for this run only" in capsys.readouterr().err


def test_fsr_history_with_a_garbage_history_answers_without_a_traceback(tmp_path):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".fsr").mkdir()
    (tmp_path / ".fsr" / "history.sqlite").write_text("garbage\n")
    (tmp_path / "a.cu").write_text("__global__ void k(float* x) { x[0] = 1.0f; }\n")
    proc = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.entry", "history", "a.cu", "--kernel", "k"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr and proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    assert "history.sqlite was damaged" in proc.stderr


@pytest.mark.parametrize("folder", ["captures", "confirms"])
def test_a_file_where_a_store_folder_belongs_is_kept_aside_and_the_capture_runs(tmp_path, folder):
    """`.fsr/captures` (or `confirms`) that is a file: moved aside, one line, the run goes on."""
    app = Path(__file__).parent.parent / "data" / "fake_capture_app.py"
    (tmp_path / ".git").mkdir()
    (tmp_path / ".fsr").mkdir()
    (tmp_path / ".fsr" / folder).write_text("garbage")
    from fsr_lsp.capture import CaptureOptions, run_capture

    env = {"FSR_CAPTURE_LIBRARY": str(app)}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        root = tmp_path / ".fsr" / folder if folder == "confirms" else None
        capture = run_capture([sys.executable, str(app), "3000"], tmp_path, CaptureOptions(root=root),
                              on_output=lambda line: None)
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    assert capture.launches and (tmp_path / ".fsr" / folder).is_dir()
    (kept,) = (tmp_path / ".fsr").glob(f"{folder}.damaged-*")
    assert kept.read_text() == "garbage"
    run = subprocess.run([sys.executable, "-c", "import logging, fsr_lsp.stores as s; from pathlib import Path; "
                          f"p = Path({str(tmp_path / 'x')!r}); p.write_text('g'); s.store_folder(p)"],
                         capture_output=True, text=True)
    assert len(run.stderr.strip().splitlines()) == 1, run.stderr  # said once, not again by logging's last resort
