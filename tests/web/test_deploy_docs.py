"""The deployment guide is complete: every environment variable the code reads is in its table, the README links
it, and the gunicorn config in the repository loads with values fit for slow uploads."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READS = re.compile(
    r"""(?:env(?:str|bool|int|float|list|choice)|proxy_ssl_header|_int|os\.environ\.get|os\.getenv|os\.environ\.setdefault)"""
    r"""\(\s*["']([A-Z][A-Z0-9_]+)["']|os\.environ\[["']([A-Z][A-Z0-9_]+)["']\]"""
)
DEV_READS = re.compile(r"\$\{([A-Z][A-Z0-9_]+):[-+]")


def variables_read() -> set[str]:
    files = [*ROOT.glob("labelstudio_lite/**/*.py"), *ROOT.glob("evalcore/**/*.py"), ROOT / "manage.py"]
    files.append(ROOT / "gunicorn.conf.py")
    found = {name for path in files for match in READS.finditer(path.read_text()) for name in match.groups() if name}
    found |= set(DEV_READS.findall((ROOT / "dev").read_text()))
    return found - {"DJANGO_SETTINGS_MODULE"}


def test_every_variable_the_code_reads_is_in_the_deployment_guide():
    guide = (ROOT / "docs" / "deploy.md").read_text()
    table = guide[guide.index("## Every environment variable") :]
    read = variables_read()
    assert {"DATABASE_URL", "CACHE_URL", "LOG_LEVEL", "CELERY_RESULT_BACKEND", "STORAGE_S3_BUCKET"} <= read
    missing = sorted(name for name in read if f"`{name}`" not in table)
    assert not missing, f"add these to the table in docs/deploy.md: {missing}"


def test_the_readme_leads_to_the_deployment_guide():
    assert "(docs/deploy.md)" in (ROOT / "README.md").read_text()


def test_the_gunicorn_config_suits_slow_uploads(monkeypatch):
    monkeypatch.delenv("GUNICORN_TIMEOUT", raising=False)
    config = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    assert config["worker_class"] == "gthread" and config["threads"] >= 2
    assert config["timeout"] >= 120 and config["graceful_timeout"] >= 60
    assert config["wsgi_app"] == "labelstudio_lite.wsgi:application" and config["forwarded_allow_ips"]


def test_gunicorn_makes_and_empties_the_prometheus_folder_before_it_starts_workers(monkeypatch, tmp_path):
    folder = tmp_path / "metrics"
    config = runpy.run_path(str(ROOT / "gunicorn.conf.py"))
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(folder))
    config["on_starting"](None)
    assert folder.is_dir()
    (folder / "counter_1234.db").write_bytes(b"an earlier start's counts")
    (folder / "keep.txt").write_text("not ours")
    config["on_starting"](None)
    assert sorted(p.name for p in folder.iterdir()) == ["keep.txt"]
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR")
    config["on_starting"](None)  # without the variable: nothing to do
