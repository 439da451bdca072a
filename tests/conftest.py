from __future__ import annotations

import os
from pathlib import Path

import pytest

from fsr_lsp.evaluator.compile.compiler import find_nvcc

DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parent.parent / "examples"


def read(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def pytest_configure(config):
    if os.environ.get("FSR_REQUIRE_TORCH") == "1":
        try:
            import torch  # noqa: F401
        except ImportError:
            raise pytest.UsageError("FSR_REQUIRE_TORCH=1 but torch is not installed") from None


def pytest_collection_modifyitems(config, items):
    if find_nvcc() is None and os.environ.get("FSR_REQUIRE_NVCC") == "1":
        raise pytest.UsageError("FSR_REQUIRE_NVCC=1 but nvcc was not found")
    if find_nvcc() is None:
        skip = pytest.mark.skip(reason="nvcc not found")
        for item in items:
            if "nvcc" in item.keywords:
                item.add_marker(skip)


@pytest.fixture
def cache_dir(tmp_path):
    return str(tmp_path / "cache")


@pytest.fixture
def without_structural_rewrites(monkeypatch):
    """The generators without fsr's structural rewrites. Tests of the model's rounds and the
    tuner use saxpy, an element-wise map: its vector rewrite (tests/search/test_structural_vector_map.py)
    would go alone in round 0 and leave the model unasked."""
    for module in ("fsr_lsp.search.generators.llm", "fsr_lsp.search.generators.tuner.generator"):
        monkeypatch.setattr(f"{module}.structural_proposals", lambda *args, **kwargs: [])
