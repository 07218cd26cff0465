"""./dev never downloads pip by URL: where Python's venv or ensurepip is missing it names the system package."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_without_venv_it_names_the_debian_package_and_stops(tmp_path):
    fake = tmp_path / "python3"  # a Python whose venv module fails, as Debian's without python3-venv
    fake.write_text(
        f'#!/bin/sh\nif [ "$1" = "-m" ] && [ "$2" = "venv" ]; then exit 1; fi\nexec {sys.executable} "$@"\n'
    )
    fake.chmod(0o755)
    env = {**os.environ, "PYTHON": str(fake), "VENV": str(tmp_path / "venv")}
    result = subprocess.run(["./dev", "run"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert "apt-get install python3-venv" in result.stderr
    assert not (tmp_path / "venv").exists()


def test_the_script_fetches_nothing_by_url():
    script = (ROOT / "dev").read_text()
    assert "urllib" not in script and "https://" not in script and "curl" not in script
