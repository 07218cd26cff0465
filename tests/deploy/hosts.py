"""Processes of a deployment, as an operator starts them: throwaway Redis servers, gunicorn hosts, Celery workers.

Each is a real process in its own session (so a test can kill a whole worker, pool children included) with
its own VAR_DIR and MEDIA_ROOT, as separate hosts would have; they share PostgreSQL (pytest's test database),
the broker, the cache and the S3-compatible object storage, and one SECRET_KEY.
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for_port(
    port: int, process: subprocess.Popen, what: str, log: Path | None = None, timeout: float = 60
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text()[-3000:] if log and log.exists() else ""
                raise AssertionError(f"{what} did not start on port {port}\n{tail}") from None
            time.sleep(0.1)


@dataclass
class Proc:
    name: str
    process: subprocess.Popen
    log: Path
    port: int | None = None

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill_all(self) -> None:
        """SIGKILL the process and everything it started (its session), as a lost host or the OOM killer would."""
        if self.alive():
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        if self.alive():
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill_all()

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""


def spawn(name: str, args: list[str], env: dict[str, str], folder: Path, port: int | None = None) -> Proc:
    log = folder / f"{name}.log"
    handle = open(log, "ab")  # noqa: SIM115  (the child keeps it)
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True)
    handle.close()
    return Proc(name, process, log, port)


def redis_server(folder: Path, name: str, port: int | None = None) -> Proc:
    port = port or free_port()
    proc = spawn(
        name,
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        dict(os.environ),
        folder,
        port,
    )
    wait_for_port(port, proc.process, name, proc.log)
    return proc


@dataclass
class Deployment:
    folder: Path
    env: dict[str, str]
    procs: list[Proc] = field(default_factory=list)

    def host_env(self, name: str, **extra: str) -> dict[str, str]:
        var = self.folder / name
        (var / "media").mkdir(parents=True, exist_ok=True)
        return {**self.env, "VAR_DIR": str(var), "MEDIA_ROOT": str(var / "media"), **extra}

    def web(self, name: str, **extra: str) -> Proc:
        port = free_port()
        env = self.host_env(
            name, GUNICORN_BIND=f"127.0.0.1:{port}", GUNICORN_WORKERS="2", GUNICORN_THREADS="4", **extra
        )
        proc = spawn(name, [sys.executable, "-m", "gunicorn", "-c", "gunicorn.conf.py"], env, self.folder, port)
        wait_for_port(port, proc.process, name, proc.log)
        self.procs.append(proc)
        return proc

    def worker(self, name: str, *, flags: tuple[str, ...] = ("--without-gossip", "--without-mingle")) -> Proc:
        """A Celery worker (``flags``: extra options; none for the command docs/deploy.md gives)."""
        args = [sys.executable, "-m", "celery", "-A", "labelstudio_lite", "worker", "--pool", "prefork"]
        args += ["--concurrency", "1", "-n", f"{name}-{uuid.uuid4().hex[:6]}@%h", "--loglevel", "INFO"]
        args += list(flags)
        proc = spawn(name, args, self.host_env(name), self.folder)
        deadline = time.monotonic() + 60
        while " ready." not in proc.output():
            if not proc.alive() or time.monotonic() > deadline:
                raise AssertionError(f"worker {name} did not start\n{proc.output()[-3000:]}")
            time.sleep(0.2)
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.stop()

    def logs(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.output()[-2500:]}" for p in self.procs)


def request(
    port: int, method: str, path: str, *, token: str = "", body: bytes | None = None, headers: dict | None = None
) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    all_headers = {"Accept": "application/json", **({"Authorization": f"Token {token}"} if token else {})}
    all_headers.update(headers or {})
    connection.request(method, path, body=body, headers=all_headers)
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    try:
        return response.status, json.loads(raw)
    except ValueError:
        return response.status, raw.decode(errors="replace")


def multipart(fields: dict[str, str], file_field: str, file_name: str, content: bytes) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n{value}\r\n'.encode()
        for key, value in fields.items()
    ]
    parts.append(
        f'--{boundary}\r\nContent-Disposition: form-data; name="{file_field}"; filename="{file_name}"\r\n'
        "Content-Type: application/octet-stream\r\n\r\n".encode()
        + content
        + f"\r\n--{boundary}--\r\n".encode()
    )
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def upload(port: int, path: str, token: str, fields: dict[str, str], name: str, content: bytes) -> tuple[int, Any]:
    body, content_type = multipart(fields, "file", name, content)
    return request(port, "POST", path, token=token, body=body, headers={"Content-Type": content_type})


def parent_of(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as handle:
        return int(handle.read().rsplit(b")", 1)[1].split()[1])


PG_BIN = Path("/usr/lib/postgresql/15/bin")


@dataclass
class Postgres:
    """A throwaway PostgreSQL cluster of its own (never the machine's shared one), which a test may stop and start."""

    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/lsl"

    def _ctl(self, *args: str) -> None:
        command = [str(PG_BIN / "pg_ctl"), "-D", str(self.folder / "data"), *args]
        subprocess.run(_as_postgres(command), check=True, capture_output=True, timeout=60)

    def start(self) -> None:
        self._ctl(
            "-o", f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1", "-l", str(self.log), "-w", "start"
        )

    def stop(self) -> None:
        """Stop it as an outage would (connections cut; ``-m fast``)."""
        self._ctl("-m", "fast", "-w", "stop")

    @property
    def log(self) -> Path:
        return self.folder / "postgres.log"

    def query(self, sql: str, *params: Any) -> list[tuple]:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=lsl", autocommit=True) as conn:
            return conn.execute(sql, params).fetchall()


def _as_postgres(command: list[str]) -> list[str]:
    """PostgreSQL refuses to run as root: run its tools as the ``postgres`` user then."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def postgres_server(env: dict[str, str]) -> Postgres:
    """Start a PostgreSQL cluster of its own on a spare port, with database ``lsl`` migrated (``env``: the project's)."""
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="lsl-pg-"))
    if os.geteuid() == 0:
        shutil.chown(folder, "postgres", "postgres")
    command = [str(PG_BIN / "initdb"), "-D", str(folder / "data"), "-U", "postgres", "-A", "trust", "--no-sync"]
    subprocess.run(_as_postgres(command), check=True, capture_output=True, timeout=120)
    server = Postgres(folder, free_port())
    server.start()
    subprocess.run(
        _as_postgres([str(PG_BIN / "createdb"), "-h", "127.0.0.1", "-p", str(server.port), "-U", "postgres", "lsl"]),
        check=True,
        capture_output=True,
        timeout=60,
    )
    migrate = [sys.executable, "manage.py", "migrate", "--no-input", "-v", "0"]
    subprocess.run(migrate, cwd=ROOT, env={**env, "DATABASE_URL": server.url}, check=True, timeout=300)
    return server


def remove_postgres(server: Postgres) -> None:
    import shutil

    try:
        server.stop()
    except subprocess.CalledProcessError:
        pass  # already stopped
    shutil.rmtree(server.folder, ignore_errors=True)
