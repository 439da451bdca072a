"""A headless Neovim (Debian's 0.7.2 in CI) through the whole flow: diagnostics, the optimize
action, the verified win, the rewrite applied from Neovim's own code-action menu and written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ..support.editor_session import check_session, session_config, winner
from ..support.fake_llm import FakeLLM, answer

HERE = Path(__file__).parent
pytestmark = pytest.mark.nvcc


def nvim() -> str | None:
    found = shutil.which("nvim")
    if found is None and os.environ.get("FSR_REQUIRE_NVIM") == "1":
        pytest.fail("FSR_REQUIRE_NVIM=1 but nvim is not installed")
    return found


def test_open_diagnose_optimize_apply_and_save(tmp_path):
    binary = nvim()
    if binary is None:
        pytest.skip("nvim not installed")
    with FakeLLM([answer(winner("neovim"))], default=answer("nothing more")) as llm:
        config = session_config(tmp_path, llm.base_url, "FSR_NVIM_KEY")
        config["env"] = {**os.environ, **config["env"]}
        (tmp_path / "config.json").write_text(json.dumps(config))
        xdg = {f"XDG_{k}_HOME": str(tmp_path / k.lower()) for k in ("CONFIG", "DATA", "STATE", "CACHE")}
        run = subprocess.run([binary, "--headless", "--clean", "-S", str(HERE / "drive.lua")], cwd=tmp_path,
                             env={**os.environ, **xdg, "FSR_NVIM_CONFIG": str(tmp_path / "config.json")},
                             capture_output=True, text=True, timeout=240)
    check_session(tmp_path, "neovim", run)
