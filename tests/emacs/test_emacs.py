"""Emacs with eglot 1.9 (Debian's emacs-nox and elpa-eglot in CI), headless, through the whole
flow: diagnostics, "Optimize" from eglot's code-action menu, the verified win, and "Apply FSR
rewrite" from the same menu. eglot 1.9 never resolves code actions and applies only an
action's edit: the buffer holds the rewrite only if the server sent the edit itself."""

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
EGLOT = Path("/usr/share/emacs/site-lisp/elpa")
pytestmark = pytest.mark.nvcc


def emacs_with_eglot() -> tuple[str, list[Path]] | None:
    binary = shutil.which("emacs")
    load = sorted(EGLOT.glob("*")) if EGLOT.is_dir() else []
    if binary is None or not any(p.name.startswith("eglot-") for p in load):
        if os.environ.get("FSR_REQUIRE_EMACS") == "1":
            pytest.fail("FSR_REQUIRE_EMACS=1 but emacs with elpa-eglot is not installed")
        return None
    return binary, load


def test_open_diagnose_optimize_apply_and_save(tmp_path):
    found = emacs_with_eglot()
    if found is None:
        pytest.skip("emacs with elpa-eglot not installed")
    binary, load = found
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)  # a project root for eglot
    with FakeLLM([answer(winner("emacs"))], default=answer("nothing more")) as llm:
        config = session_config(tmp_path, llm.base_url, "FSR_EMACS_KEY")
        config["env"] = [[k, v] for k, v in config["env"].items()]  # setenv pairs for the driver
        (tmp_path / "config.json").write_text(json.dumps(config))
        args = [binary, "--batch", "-Q", *(arg for folder in load for arg in ("-L", str(folder)))]
        run = subprocess.run([*args, "-l", str(HERE / "drive.el")], cwd=tmp_path, capture_output=True, text=True,
                             env={**os.environ, "HOME": str(tmp_path), "FSR_EMACS_CONFIG": str(tmp_path / "config.json")},
                             timeout=240)
    check_session(tmp_path, "emacs", run)
