"""Run schemathesis's command line (``st run``) against the live schema of a test server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def st_run(url: str, token: str, config: str, folder: Path, *options: str) -> subprocess.CompletedProcess:
    """``st run URL/api/schema/`` as the token's user, with ``config`` (TOML) and ``options``; deterministic."""
    path = folder / "schemathesis.toml"
    path.write_text(config)
    st = shutil.which("st", path=os.path.dirname(sys.executable)) or "st"
    command = [st, "--config-file", str(path), "run", f"{url}/api/schema/", "-H", f"Authorization: Token {token}"]
    return subprocess.run(
        [*command, *options, "--generation-deterministic"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=folder,
    )
