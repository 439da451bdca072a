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
