"""The cubin cache (evaluator/compile/cubin_cache.py) as a damaged workspace leaves it: an entry
that is not what was stored is a miss and is removed, never a crash and never a damaged cubin
handed to the GPU (where the original would "fail to load", blamed on the spec)."""

from __future__ import annotations

import json

import pytest

from fsr_lsp.evaluator.compile.cubin_cache import cache_dir, cache_load, cache_store
from fsr_lsp.evaluator.records import CompileResult, KernelBinary, Resources

CUBIN = b"\x7fELF" + bytes(range(256)) * 4


def stored(tmp_path) -> tuple[str, object]:
    binary = KernelBinary(cubin=CUBIN, entry="_Z5scaleiPf", compiler="nvcc", arch="sm_90")
    cache_store(str(tmp_path), "k1", CompileResult(True, binary, "a warning", 1.0, compiler="nvcc",
                                                    resources=Resources(registers=32)))
    return "k1", cache_dir(str(tmp_path))


def test_what_was_stored_loads(tmp_path):
    key, d = stored(tmp_path)
    hit = cache_load(str(tmp_path), key, "sm_90", ("-O3",))
    assert hit is not None and hit.cached and hit.binary.cubin == CUBIN and hit.binary.entry == "_Z5scaleiPf"
    assert hit.resources.registers == 32 and hit.log == "a warning" and hit.binary.flags == ("-O3",)


DAMAGE = {
    "a truncated cubin": lambda d: (d / "k1.cubin").write_bytes(CUBIN[:100]),
    "an altered cubin": lambda d: (d / "k1.cubin").write_bytes(CUBIN[:-1] + b"\x00"),
    "a record that is a list": lambda d: (d / "k1.json").write_text("[1, 2]"),
    "a record without its entry": lambda d: (d / "k1.json").write_text(
        json.dumps({k: v for k, v in json.loads((d / "k1.json").read_text()).items() if k != "entry"})),
    "resources of another version": lambda d: (d / "k1.json").write_text(json.dumps(
        {**json.loads((d / "k1.json").read_text()), "resources": {"registers": 1, "warp_size": 32}})),
    "an entry from before digests": lambda d: (d / "k1.json").write_text(
        json.dumps({k: v for k, v in json.loads((d / "k1.json").read_text()).items() if k != "sha256"})),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_damaged_entry_is_a_miss_and_is_removed(tmp_path, damage):
    key, d = stored(tmp_path)
    DAMAGE[damage](d)
    assert cache_load(str(tmp_path), key, "sm_90", ()) is None
    assert not (d / "k1.json").exists() and not (d / "k1.cubin").exists()
    stored(tmp_path)  # compiled again, stored again, loads again
    assert cache_load(str(tmp_path), key, "sm_90", ()) is not None


def test_garbage_records_and_a_folder_in_place_of_the_cache_are_misses(tmp_path):
    key, d = stored(tmp_path)
    (d / "k1.json").write_text("garbage")
    assert cache_load(str(tmp_path), key, "sm_90", ()) is None
    other = tmp_path / "elsewhere"
    other.mkdir()
    (other / "cubin").write_text("a file where the cache's folder belongs")
    assert cache_load(str(other), key, "sm_90", ()) is None
    binary = KernelBinary(cubin=CUBIN, entry="e", compiler="nvcc", arch="sm_90")
    cache_store(str(other), key, CompileResult(True, binary, "", 1.0, compiler="nvcc"))  # only costs time: no raise
