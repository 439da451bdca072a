"""Every `fsr` command over every damaged store of `.fsr/` (issue 61's done-when): garbage, a
folder, an empty file or a read-only file where a store or a store's folder belongs gives no
traceback; each command answers as it would without the damage (here, without a GPU: its one
line) or with one line naming the store."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ..support.damaged_workspace import DAMAGE, KERNEL, STORES
from ..support.doubles import STAND_INS

COMMANDS = (("spec", "k.cu"), ("spec", "k.cu", "--check"), ("history", "k.cu", "-k", "k"), ("eval", "k.cu", "-k", "k"),
            ("optimize", "k.cu", "-k", "k", "--time-budget", "5"), ("confirm", "k.cu", "-k", "k", "--no-build"),
            ("profile", "k.cu", "-k", "k"))


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("store", STORES)
def test_no_command_ends_in_a_traceback_over_a_damaged_store(tmp_path: Path, store: str, damage: str):
    (tmp_path / ".git").mkdir()
    (tmp_path / ".fsr").mkdir()
    (tmp_path / "k.cu").write_text(KERNEL)
    DAMAGE[damage](tmp_path / ".fsr" / store)
    env = {k: v for k, v in os.environ.items() if k not in STAND_INS}
    for command in COMMANDS:
        run = subprocess.run([sys.executable, "-m", "fsr_lsp.cli.main", *command], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=180)
        said = run.stdout + run.stderr
        assert "Traceback" not in said, (command, said[-3000:])
        assert run.returncode in (0, 1, 2, 3), (command, run.returncode, said[-2000:])
