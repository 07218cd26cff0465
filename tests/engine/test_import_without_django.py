"""evalcore.engine is a pure library: it imports in a fresh interpreter with no Django at all."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_engine_imports_and_computes_without_django_settings():
    code = (
        "import sys, os\n"
        "os.environ.pop('DJANGO_SETTINGS_MODULE', None)\n"
        "import evalcore.engine as e\n"
        "assert round(e.recall_at_k(['d7','d2','d9','d4','d1'], {'d2','d4','d5'}, 5), 3) == 0.667\n"
        "assert not [m for m in sys.modules if m == 'django' or m.startswith('django.')], 'django was imported'\n"
        "print('ok')\n"
    )
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
