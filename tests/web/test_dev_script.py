"""./dev help lists every variable the script reads (PORT and HOST first among them)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_dev_help_lists_every_variable_the_script_reads():
    script = (ROOT / "dev").read_text()
    read = set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", script)) | set(re.findall(r"\$([A-Z][A-Z0-9_]+)\b", script))
    shown = subprocess.run([str(ROOT / "dev"), "--help"], capture_output=True, text=True, check=True).stdout

    assert {"PORT", "HOST", "PYTHON", "VENV", "UV", "RELOAD", "LSL_TEST_PROCESSES"} <= read
    listed = set(re.findall(r"^  ([A-Z][A-Z0-9_]+)\s", shown, re.M))
    assert read <= listed, f"./dev --help does not list {sorted(read - listed)}"
    assert "docs/deploy.md" in shown


def test_dev_with_an_unknown_command_prints_the_help_and_fails():
    result = subprocess.run([str(ROOT / "dev"), "nonsense"], capture_output=True, text=True)
    assert result.returncode == 2 and "PORT" in result.stderr
