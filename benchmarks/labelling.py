"""Labelling endpoints under load: next item and submit, driven over real HTTP.

    python -m benchmarks labelling [--db postgres|sqlite|both] [--annotators 20] [--items 1000] [--think 1]
                                   [--quick] [--workers 4] [--threads 4] [--conn-max-age 60] [--keep]

For each database it prepares a fresh one (PostgreSQL: a throwaway ``lsl_bench_<pid>`` database,
dropped at the end; SQLite: a temporary file), migrates it and, in a subprocess with the real
settings, imports the demo eval set and baseline run through the import services and creates
claim campaigns (overlap 2) with the annotators assigned. It then starts gunicorn (real worker
processes and threads, ``DEBUG=0``) on a free localhost port and drives it:

* one annotator alone (the latency one person sees), through the API and the labelling page;
* N annotators at once through the API, flat out (each asks again the moment an answer arrives:
  a stress test): ``POST /api/label/<c>/next/`` then ``POST /api/label/<c>/labels/``, until the
  campaign is done;
* the same at a reading pace: each annotator spends ``--think`` seconds on average (0.5x to 1.5x)
  on an item before answering (a person at the page's 1,000 items an hour takes 3.6 s);
* N annotators at once through the labelling page as its script does it: log in, ``GET
  /label/<c>/``, ``POST /label/<c>/next/`` for the page's items, then ``POST /label/<c>/answer/``
  (which saves the label, renews the page's held items and refills its queue, JSON), flat out
  until the campaign is done.

Each campaign is a fresh one of ``--items`` items (at most the demo run's 1,270 claims with a judge verdict).
Server time is read from the ``Server-Timing`` header every response carries
(``labelstudio_lite.middleware.ServerTimingMiddleware``): ``app`` (the whole request inside
Django), and within it ``cpu`` (the serving thread's CPU time) and ``db`` (SQL time and query
count); the client's round trip is recorded too. On a busy machine ``app`` grows while ``cpu``
does not: the difference is waiting for a CPU, the database or a lock. Afterwards the database is
checked: every item has exactly ``overlap`` labels from that many different annotators, no lease
is left open, the counters agree with the labels; and the clients checked that no item was handed
to more annotators than its overlap.

Label Studio's figures (measured on this kind of machine with 10 annotators on its default
SQLite, see issue 4) are printed beside ours as the anchor. The target: next item and submit each
under 50 ms p95 server time with 20 concurrent annotators on PostgreSQL.

This is a benchmark, not a test: it prints numbers and exits 0 unless something broke
(a server error, or a correctness check failed: exit 1).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PG_ADMIN_URL = os.environ.get("LSL_BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432")
TARGET_P95_MS = 50.0
PASSWORD = "bench-annotator-pass"
OVERLAP = 2
REQUEST_TIMEOUT = 60.0
DEADLINE_SECONDS = 900.0  # a flow that has not finished by then is stopped (the loops are bounded)

# Label Studio, measured on this kind of machine (2 cores) with 10 annotators on its default SQLite
# (issue 4): round-trip times seen by the annotators' clients.
LS_NEXT_MEDIAN_10 = "1.6 s"
LS_NEXT_P95_10 = "7.5 s"
LS_NEXT_MEDIAN_1 = "~150 ms"
LS_OVERSERVED = "13"
LS_EXTRA = "15"
LS_LOCKED = "391 (retried)"


# ------------------------------------------------------------------------------------------------
# Inside the project's Django (subprocesses): prepare the data, check it afterwards
# ------------------------------------------------------------------------------------------------


def _django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "labelstudio_lite.settings")
    import django

    django.setup()


def _prepare(spec: dict[str, Any]) -> dict[str, Any]:
    """Create the users, the demo eval set and run, and the campaigns; return logins and tokens.

    ``spec["prefix"]`` (default none) starts every user and campaign name, so a second set can be prepared in the
    same database (the eval set and run are imported once: imports are idempotent)."""
    _django()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.contrib.auth.hashers import make_password
    from django.db import connection

    from evalcore.demo import write_demo_files
    from evalcore.services.evalsets import evalset_import
    from evalcore.services.runs import run_import
    from labelstudio_lite.accounts.tokens import token_create
    from labelstudio_lite.labelling.services.campaigns import campaign_create

    User = get_user_model()
    paths = write_demo_files(Path(settings.VAR_DIR) / "demo")
    evalset_import(path=paths["questions"], name="bench-qa")
    run = run_import(
        path=paths["base_rows"],
        evalset="bench-qa",
        name="bench-base",
        judge_config=json.loads(paths["judge"].read_text()),
        chunks_path=paths["base_chunks"],
        k=5,
    ).run
    hashed = make_password(PASSWORD)  # one hash for all: creating users is not what is measured
    prefix = spec.get("prefix", "")
    owner = User.objects.create(username=f"{prefix}bench-owner", role="eval_owner", password=hashed)
    names = [f"{prefix}ann{i:02d}" for i in range(1, spec["annotators"] + 1)]
    crowd = [User.objects.create(username=n, role="annotator", password=hashed) for n in names]
    solo = User.objects.create(username=f"{prefix}solo", role="annotator", password=hashed)
    out: dict[str, Any] = {"campaigns": {}, "tokens": {}}
    for key, size, overlap, people in (
        ("solo-api", spec["solo_items"], 1, [solo]),
        ("solo-page", spec["solo_items"], 1, [solo]),
        ("crowd-api", spec["items"], OVERLAP, crowd),
        ("crowd-page", spec["items"], OVERLAP, crowd),
        ("paced-api", spec["items"], OVERLAP, crowd),
    ):
        campaign = campaign_create(
            run=run,
            name=f"{prefix}bench-{key}",
            unit="claim",
            size=size,
            overlap=overlap,
            seed=len(key),
            annotators=people,
            user=owner,
        )
        out["campaigns"][key] = {"name": campaign.name, "items": campaign.items.count(), "overlap": overlap}
    for user in [*crowd, solo]:
        out["tokens"][user.username] = token_create(user=user, name="tests").key
    # planner statistics, as autovacuum (PostgreSQL) or an `ANALYZE` after a bulk load would leave them
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    out["annotators"] = names
    return out


def _verify(spec: dict[str, Any]) -> dict[str, Any]:
    """Check every campaign through the database: exact label counts, distinct annotators, no open lease."""
    _django()
    from django.db.models import Count

    from labelstudio_lite.labelling.models import Campaign, Item, Label, Lease

    report: dict[str, Any] = {}
    for name in spec["campaigns"]:
        campaign = Campaign.objects.get(name=name)
        items = Item.objects.filter(campaign=campaign)
        per_item = dict(
            Label.objects.filter(item__campaign=campaign)
            .values_list("item_id")
            .annotate(n=Count("pk"))
            .values_list("item_id", "n")
        )
        people = dict(
            Label.objects.filter(item__campaign=campaign)
            .values_list("item_id")
            .annotate(n=Count("annotator", distinct=True))
            .values_list("item_id", "n")
        )
        ids = list(items.values_list("pk", flat=True))
        wrong = [i for i in ids if per_item.get(i, 0) != campaign.overlap or people.get(i, 0) != campaign.overlap]
        report[name] = {
            "items": len(ids),
            "labels": sum(per_item.values()),
            "items_wrong": len(wrong),
            "items_over": sum(1 for i in ids if per_item.get(i, 0) > campaign.overlap),
            "extra_labels": sum(max(0, per_item.get(i, 0) - campaign.overlap) for i in ids),
            "missing_labels": sum(max(0, campaign.overlap - per_item.get(i, 0)) for i in ids),
            "counters_off": items.exclude(slots_taken=campaign.overlap).count()
            + items.exclude(label_count=campaign.overlap).count(),
            "open_leases": Lease.objects.filter(item__campaign=campaign, status=Lease.Status.ACTIVE).count(),
            "leases": Lease.objects.filter(item__campaign=campaign).count(),
        }
    return report


def _internal(argv: list[str]) -> int:
    command, spec_path, out_path = argv
    spec = json.loads(Path(spec_path).read_text())
    result = {"prepare": _prepare, "verify": _verify}[command](spec)
    Path(out_path).write_text(json.dumps(result))
    return 0


# ------------------------------------------------------------------------------------------------
# The database, the subprocesses and the server
# ------------------------------------------------------------------------------------------------


@dataclass
class Database:
    kind: str  # postgres | sqlite
    url: str
    cleanup: Any = None


def _pg_connect(url: str):
    import psycopg

    return psycopg.connect(url, autocommit=True)


def make_database(kind: str, workdir: Path) -> Database:
    if kind == "sqlite":
        return Database(kind, f"sqlite:///{workdir / 'bench.sqlite3'}")
    name = f"lsl_bench_{os.getpid()}"
    admin = PG_ADMIN_URL.rstrip("/") + "/postgres"
    with _pg_connect(admin) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')

    def drop() -> None:
        with _pg_connect(admin) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    return Database(kind, PG_ADMIN_URL.rstrip("/") + f"/{name}", drop)


def project_env(db: Database, workdir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "CELERY_", "DJANGO_"))}
    env.update(
        {
            "DJANGO_SETTINGS_MODULE": "labelstudio_lite.settings",
            "DATABASE_URL": db.url,
            "VAR_DIR": str(workdir / "var"),
            "SECRET_KEY": "benchmark-only-" + "x" * 40,
            "DEBUG": "0",
            "ALLOWED_HOSTS": "127.0.0.1,localhost",
            "EMBEDDED_TASKS_IN_THREAD": "0",
            "SERVER_TIMING": "all",  # the figures come from every response's Server-Timing header
            "API_THROTTLE_USER": "1000000/minute",  # annotators flat out are not abuse here
            "LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
            "PYTHONPATH": str(ROOT),  # this tree, whatever an editable install elsewhere points to
        }
    )
    env.update(extra)
    return env


def run_django(args: list[str], env: dict[str, str], what: str) -> None:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{what} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")


def internal_call(command: str, spec: dict[str, Any], env: dict[str, str], workdir: Path) -> dict[str, Any]:
    spec_path, out_path = workdir / f"{command}.spec.json", workdir / f"{command}.out.json"
    spec_path.write_text(json.dumps(spec))
    run_django(["-m", "benchmarks.labelling", "--internal", command, str(spec_path), str(out_path)], env, command)
    return json.loads(out_path.read_text())


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """gunicorn serving the project on a free localhost port."""

    def __init__(self, env: dict[str, str], workers: int, threads: int, workdir: Path) -> None:
        self.port = free_port()
        self.log = (workdir / "gunicorn.log").open("w")
        gunicorn = shutil.which("gunicorn", path=str(Path(sys.executable).parent)) or "gunicorn"
        self.proc = subprocess.Popen(
            [
                gunicorn,
                "labelstudio_lite.wsgi",
                "-w",
                str(workers),
                "--threads",
                str(threads),
                "-b",
                f"127.0.0.1:{self.port}",
                "--keep-alive",
                "30",
                "--timeout",
                "120",
                "--log-level",
                "warning",
            ],
            cwd=ROOT,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"gunicorn exited at start; see {self.log.name}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/accounts/login/")
                conn.getresponse().read()
                conn.close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise SystemExit(f"gunicorn did not answer within 60 s; see {self.log.name}") from None
                time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


# ------------------------------------------------------------------------------------------------
# The annotators (HTTP clients)
# ------------------------------------------------------------------------------------------------


@dataclass
class Sample:
    endpoint: str
    server_ms: float | None
    client_ms: float
    status: int
    cpu_ms: float | None = None
    db_ms: float | None = None
    queries: int | None = None
    at: float = field(default_factory=time.monotonic)  # when the answer came (monotonic clock)


@dataclass
class Tally:
    """What the clients saw, merged over annotators."""

    samples: list[Sample] = field(default_factory=list)
    served: dict[int, set[str]] = field(default_factory=lambda: defaultdict(set))
    labelled: int = 0
    errors: list[str] = field(default_factory=list)
    lock = threading.Lock()

    def merge(self, other: Tally, who: str) -> None:
        with self.lock:
            self.samples.extend(other.samples)
            for item_id in other.served:
                self.served[item_id].add(who)
            self.labelled += other.labelled
            self.errors.extend(other.errors)


_TIMING = re.compile(r"app;dur=([0-9.]+)")
_CPU = re.compile(r"cpu;dur=([0-9.]+)")
_DB = re.compile(r'db;dur=([0-9.]+);desc="(\d+) queries"')
_KEY = re.compile(r'name="key" value="([^"]+)"')
_CSRF_INPUT = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')


class Client:
    """One annotator's browser or script: a keep-alive connection, cookies, timings."""

    def __init__(self, port: int, tally: Tally) -> None:
        self.port = port
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=REQUEST_TIMEOUT)
        self.cookies: dict[str, str] = {}
        self.tally = tally

    def request(
        self,
        endpoint: str | None,
        method: str,
        path: str,
        *,
        body: dict[str, Any] | None = None,
        json_body: bool = False,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        head = {"Host": f"127.0.0.1:{self.port}", **(headers or {})}
        data = None
        if body is not None:
            if json_body:
                data, head["Content-Type"] = json.dumps(body).encode(), "application/json"
            else:
                data, head["Content-Type"] = urllib.parse.urlencode(body).encode(), "application/x-www-form-urlencoded"
        if self.cookies:
            head["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        for attempt in (1, 2):
            start = time.perf_counter()
            try:
                self.conn.request(method, path, body=data, headers=head)
                response = self.conn.getresponse()
                payload = response.read()
                break
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                # the server closed an idle keep-alive connection: reconnect once (not a server error)
                self.conn.close()
                self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=REQUEST_TIMEOUT)
                if attempt == 2:
                    raise
        elapsed = (time.perf_counter() - start) * 1000
        for raw in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = raw.partition("=")
            self.cookies[name.strip()] = rest.split(";", 1)[0]
        header = response.headers.get("Server-Timing", "")
        timing, cpu, db = _TIMING.search(header), _CPU.search(header), _DB.search(header)
        if endpoint is not None:
            self.tally.samples.append(
                Sample(
                    endpoint,
                    float(timing.group(1)) if timing else None,
                    elapsed,
                    response.status,
                    float(cpu.group(1)) if cpu else None,
                    float(db.group(1)) if db else None,
                    int(db.group(2)) if db else None,
                )
            )
        if response.status >= 500:
            self.tally.errors.append(f"{method} {path}: HTTP {response.status}")
        return response.status, dict(response.headers.items()), payload

    def close(self) -> None:
        self.conn.close()


def _label_until_done(
    tally: Tally,
    deadline: float,
    rng: random.Random,
    *,
    next_item: Callable[[], int | None],
    answer: Callable[[int, str], str | None],
    think: float = 0.0,
) -> None:
    """Label items until the annotator's share is done or the deadline passes.

    ``next_item()`` gives the next item's id, or None when there is none (having noted any error in
    the tally); ``answer(item_id, value)`` labels it and returns what went wrong, or None.
    """
    while time.monotonic() < deadline:
        item_id = next_item()
        if item_id is None:
            return
        tally.served[item_id].add("")
        if think:
            time.sleep(rng.uniform(0.5, 1.5) * think)
        error = answer(item_id, rng.choice(("supported", "unsupported")))
        if error is not None:
            tally.errors.append(error)
            return
        tally.labelled += 1
    tally.errors.append("deadline reached before the share was done")


def api_annotator(
    port: int,
    campaign: str,
    token: str,
    tally: Tally,
    label: str,
    deadline: float,
    rng: random.Random,
    think: float = 0.0,
) -> None:
    """Label through the API: claim the next item, (read it for ``think`` s on average,) label it, until done (204)."""
    client = Client(port, tally)
    auth = {"Authorization": f"Token {token}", "Accept": "application/json"}

    def next_item() -> int | None:
        status, _, body = client.request(f"{label} next", "POST", f"/api/label/{campaign}/next/", headers=auth)
        if status == 204:
            return None
        if status != 200:
            tally.errors.append(f"next: HTTP {status} {body[:200]!r}")
            return None
        return json.loads(body)["item_id"]

    def answer(item_id: int, value: str) -> str | None:
        status, _, body = client.request(
            f"{label} submit",
            "POST",
            f"/api/label/{campaign}/labels/",
            body={"item_id": item_id, "value": value, "rationale": "benchmark"},
            json_body=True,
            headers=auth,
        )
        return None if status == 201 else f"submit: HTTP {status} {body[:200]!r}"

    try:
        _label_until_done(tally, deadline, rng, next_item=next_item, answer=answer, think=think)
    finally:
        client.close()


def page_annotator(
    port: int, campaign: str, username: str, tally: Tally, label: str, deadline: float, rng: random.Random
) -> None:
    """Label through the labelling page as its script does: log in, open the page, ask for its items, then
    answer each with its idempotency key; every reply refills the page's queue (JSON)."""
    client = Client(port, tally)
    queue: list[dict[str, Any]] = []
    done = False

    def headers() -> dict[str, str]:
        return {
            "Accept": "application/json",
            "X-CSRFToken": client.cookies.get("csrftoken", ""),
            "Referer": f"http://127.0.0.1:{port}/label/{campaign}/",
        }

    def merge(reply: dict[str, Any]) -> None:
        nonlocal done
        held = {item["id"] for item in reply["items"]}
        queue[:] = [item for item in queue if item["id"] in held]
        known = {item["id"] for item in queue}
        for item in reply["items"]:
            if item["id"] not in known and "html" in item:
                queue.append({"id": item["id"], "key": _KEY.search(item["html"]).group(1)})
        done = not reply["items"]

    def next_item() -> int | None:
        if not queue:
            if not done:
                tally.errors.append("the page's queue ran dry although its share is not done")
            return None
        return queue[0]["id"]

    def answer(item_id: int, value: str) -> str | None:
        item = queue.pop(0)
        have = ",".join(str(other["id"]) for other in queue)
        fields = {"item_id": item_id, "value": value, "rationale": "benchmark", "key": item["key"], "have": have}
        status, _, body = client.request(
            f"{label} answer", "POST", f"/label/{campaign}/answer/", body=fields, headers=headers()
        )
        if status != 200:
            return f"answer: HTTP {status} {body[:200]!r}"
        reply = json.loads(body)
        if reply["result"]["outcome"] != "saved":
            return f"answer refused: {reply['result']['message']}"
        merge(reply)
        return None

    try:
        _, _, page = client.request(None, "GET", "/accounts/login/")
        token = _CSRF_INPUT.search(page.decode()).group(1)
        status, headers_, _ = client.request(
            None,
            "POST",
            "/accounts/login/",
            body={"username": username, "password": PASSWORD, "csrfmiddlewaretoken": token},
        )
        if status != 302 or "sessionid" not in client.cookies:
            tally.errors.append(f"login of {username} failed: HTTP {status}")
            return
        status, _, page = client.request(None, "GET", f"/label/{campaign}/")
        if status != 200:
            tally.errors.append(f"label page: HTTP {status}")
            return
        status, _, body = client.request(f"{label} page", "POST", f"/label/{campaign}/next/", headers=headers())
        if status != 200:
            tally.errors.append(f"the page's items: HTTP {status}")
            return
        merge(json.loads(body))
        _label_until_done(tally, deadline, rng, next_item=next_item, answer=answer)
    finally:
        client.close()


@dataclass
class FlowResult:
    label: str
    annotators: int
    wall: float
    tally: Tally


def run_flow(
    kind: str, port: int, campaign: str, people: list[tuple[str, str]], label: str, think: float = 0.0
) -> FlowResult:
    """Run ``people`` (username, token) at once through the API or the page until the campaign is done."""
    total = Tally()
    deadline = time.monotonic() + DEADLINE_SECONDS
    barrier = threading.Barrier(len(people))

    def one(index: int, username: str, token: str) -> None:
        own = Tally()
        rng = random.Random(index)
        try:
            barrier.wait()
            if kind == "api":
                api_annotator(port, campaign, token, own, label, deadline, rng, think)
            else:
                page_annotator(port, campaign, username, own, label, deadline, rng)
        except Exception as exc:  # noqa: BLE001 - reported, and the run fails
            own.errors.append(f"{username}: {type(exc).__name__}: {exc}")
        total.merge(own, username)

    threads = [threading.Thread(target=one, args=(i, u, t), daemon=True) for i, (u, t) in enumerate(people)]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_SECONDS + 60)
    return FlowResult(label, len(people), time.perf_counter() - start, total)


# ------------------------------------------------------------------------------------------------
# Numbers and the table
# ------------------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """Percentile by linear interpolation (numpy's default), without numpy."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def stats(samples: list[Sample], endpoint: str) -> dict[str, float]:
    chosen = [s for s in samples if s.endpoint == endpoint]
    server = [s.server_ms for s in chosen if s.server_ms is not None]
    client = [s.client_ms for s in chosen]
    cpu = [s.cpu_ms for s in chosen if s.cpu_ms is not None]
    db = [s.db_ms for s in chosen if s.db_ms is not None]
    queries = [s.queries for s in chosen if s.queries is not None]
    return {
        "n": len(chosen),
        "cpu_median": statistics.median(cpu) if cpu else float("nan"),
        "db_median": statistics.median(db) if db else float("nan"),
        "queries": statistics.median(queries) if queries else float("nan"),
        "server_median": statistics.median(server) if server else float("nan"),
        "server_p95": pct(server, 0.95),
        "client_median": statistics.median(client) if client else float("nan"),
        "client_p95": pct(client, 0.95),
    }


def fmt_ms(value: float) -> str:
    if value != value:
        return "-"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.1f} ms" if value < 100 else f"{value:.0f} ms"


@dataclass
class DbResult:
    kind: str
    setup: dict[str, Any]
    flows: dict[str, FlowResult]
    verify: dict[str, Any]
    server_errors: int
    client_errors: list[str]


def bench_database(kind: str, args: argparse.Namespace) -> DbResult:
    workdir = Path(tempfile.mkdtemp(prefix=f"lsl-bench-{kind}-"))
    db = make_database(kind, workdir)
    server = None
    try:
        env = project_env(db, workdir, DB_CONN_MAX_AGE=str(args.conn_max_age))
        t0 = time.perf_counter()
        run_django(["manage.py", "migrate", "--noinput"], env, "migrate")
        spec = {"annotators": args.annotators, "items": args.items, "solo_items": args.solo_items}
        setup = internal_call("prepare", spec, env, workdir)
        sizes = ", ".join(f"{key} {info['items']} items" for key, info in setup["campaigns"].items())
        print(f"  {kind}: database ready in {time.perf_counter() - t0:.0f} s ({sizes})", flush=True)
        server = Server(env, args.workers, args.threads, workdir)
        port = server.port
        camp = {k: v["name"] for k, v in setup["campaigns"].items()}
        crowd = [(u, setup["tokens"][u]) for u in setup["annotators"]]
        solo = [("solo", setup["tokens"]["solo"])]
        # warm up every worker process (imports, template loading, first connection) on the solo campaigns
        warm = Tally()
        client = Client(port, warm)
        for _ in range(4 * args.workers):
            client.request(None, "GET", "/accounts/login/")
            client.request(
                None,
                "GET",
                f"/api/label/{camp['solo-api']}/labels/",
                headers={"Authorization": f"Token {setup['tokens']['solo']}"},
            )
        client.close()
        flows: dict[str, FlowResult] = {}
        for key, kind_, campaign, people, label, think in (
            ("solo-api", "api", camp["solo-api"], solo, "api", 0.0),
            ("solo-page", "page", camp["solo-page"], solo, "page", 0.0),
            ("crowd-api", "api", camp["crowd-api"], crowd, "api", 0.0),
            ("crowd-page", "page", camp["crowd-page"], crowd, "page", 0.0),
            ("paced-api", "api", camp["paced-api"], crowd, "api", args.think),
        ):
            if key == "paced-api" and not args.think:
                continue
            flows[key] = run_flow(kind_, port, campaign, people, label, think)
            f = flows[key]
            print(
                f"  {kind}: {key}: {f.tally.labelled} labels by {f.annotators} in {f.wall:.1f} s "
                f"({f.tally.labelled / f.wall:.0f} labels/s){'; ERRORS' if f.tally.errors else ''}",
                flush=True,
            )
        server.stop()
        server = None
        verify = internal_call("verify", {"campaigns": [camp[key] for key in flows]}, env, workdir)
        errors = [e for f in flows.values() for e in f.tally.errors]
        return DbResult(kind, setup, flows, verify, sum(1 for e in errors if "HTTP 5" in e), errors)
    finally:
        if server is not None:
            server.stop()
        if db.cleanup:
            db.cleanup()
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            print(f"  kept {workdir}")


def correctness(result: DbResult, key: str) -> dict[str, Any]:
    """Client-side and database-side correctness for one flow."""
    flow = result.flows[key]
    info = result.setup["campaigns"][key]
    check = result.verify[info["name"]]
    overserved = sum(1 for who in flow.tally.served.values() if len(who) > info["overlap"])
    ok = (
        check["items_wrong"] == 0
        and check["open_leases"] == 0
        and check["counters_off"] == 0
        and not flow.tally.errors
        and overserved == 0
        and flow.tally.labelled == check["labels"]
    )
    return {**check, "overserved": overserved, "ok": ok, "client_labels": flow.tally.labelled}


def report(
    results: list[DbResult], args: argparse.Namespace, load: tuple[tuple[float, ...], tuple[float, ...]]
) -> bool:
    """Print the table; return whether every correctness check held."""
    names = {"postgres": "PostgreSQL", "sqlite": "SQLite"}
    n = args.annotators
    lines: list[str] = []
    add = lines.append
    items = {r.kind: r.setup["campaigns"]["crowd-api"]["items"] for r in results}
    paced = f"read ~{args.think:g} s"
    add("")
    add(
        f"Labelling endpoints over HTTP: {n} annotators, {', '.join(f'{names[k]} {v}' for k, v in items.items())} items "
        f"x overlap {OVERLAP} per campaign (claims of the demo run)"
    )
    add(
        f"gunicorn {args.workers} workers x {args.threads} threads, DEBUG=0, DB_CONN_MAX_AGE={args.conn_max_age}; "
        f"{os.cpu_count()} CPUs shared by server, database and clients; load average {load[0][0]:.1f} at start, {load[1][0]:.1f} at end"
    )
    add(
        "flat out = each annotator asks again the moment an answer arrives (a stress test); "
        f"{paced} = each annotator reads an item ~{args.think:g} s (0.5-1.5 s) before answering"
    )
    add(
        "server = Server-Timing app;dur (inside Django, first middleware to last), of which cpu = the serving thread's CPU time "
        "and sql = time in SQL queries (q of them, median); trip = round trip measured by the client"
    )
    add("")
    header = (
        f"{'endpoint':<40} {'who':>4} {'pace':<11} {'db':<10} {'n':>5} {'server med':>10} {'server p95':>10} "
        f"{'cpu med':>8} {'sql med':>8} {'q':>3} {'trip med':>9} {'trip p95':>9}  target p95 < {TARGET_P95_MS:.0f} ms"
    )
    add(header)
    add("-" * len(header))
    verdicts: dict[str, list[str]] = defaultdict(list)
    rows = (
        ("crowd-api", "api next", "POST /api/label/<c>/next/", n, "flat out", True),
        ("crowd-api", "api submit", "POST /api/label/<c>/labels/", n, "flat out", True),
        ("paced-api", "api next", "POST /api/label/<c>/next/", n, paced, True),
        ("paced-api", "api submit", "POST /api/label/<c>/labels/", n, paced, True),
        ("crowd-page", "page answer", "POST /label/<c>/answer/ (submit+refill)", n, "flat out", False),
        ("crowd-page", "page page", "POST /label/<c>/next/ (first 3 items)", n, "flat out", False),
        ("solo-api", "api next", "POST /api/label/<c>/next/", 1, "flat out", False),
        ("solo-api", "api submit", "POST /api/label/<c>/labels/", 1, "flat out", False),
        ("solo-page", "page answer", "POST /label/<c>/answer/ (submit+refill)", 1, "flat out", False),
    )
    for key, endpoint, title, who, pace, targeted in rows:
        for r in results:
            if key not in r.flows:
                continue
            s = stats(r.flows[key].tally.samples, endpoint)
            mark = ""
            if targeted:
                ok = s["server_p95"] < TARGET_P95_MS
                mark = "PASS" if ok else "MISS"
                if r.kind == "postgres":
                    verdicts[pace].append(f"{endpoint.split()[1]} p95 {fmt_ms(s['server_p95'])} {mark}")
                else:
                    mark += " (figure)"
            add(
                f"{title:<40} {who:>4} {pace:<11} {names[r.kind]:<10} {s['n']:>5} {fmt_ms(s['server_median']):>10} "
                f"{fmt_ms(s['server_p95']):>10} {fmt_ms(s['cpu_median']):>8} {fmt_ms(s['db_median']):>8} {s['queries']:>3.0f} "
                f"{fmt_ms(s['client_median']):>9} {fmt_ms(s['client_p95']):>9}  {mark}"
            )
    add("")
    sub = f"{'throughput and correctness':<40} {'who':>4} {'pace':<11} {'db':<10} {'labels':>6} {'labels/s':>9} {'wall':>7}   every item {OVERLAP} labels from {OVERLAP} people"
    add(sub)
    add("-" * len(header))
    all_ok = True
    for key, title, pace in (
        ("crowd-api", "API", "flat out"),
        ("paced-api", "API", paced),
        ("crowd-page", "labelling page", "flat out"),
    ):
        for r in results:
            if key not in r.flows:
                continue
            f = r.flows[key]
            c = correctness(r, key)
            all_ok &= c["ok"]
            verdict = (
                f"{c['items'] - c['items_wrong']}/{c['items']} ok, {c['extra_labels']} extra, {c['missing_labels']} missing, "
                f"{c['open_leases']} leases open" + ("" if c["ok"] else "  FAILED")
            )
            add(
                f"{title:<40} {n:>4} {pace:<11} {names[r.kind]:<10} {c['labels']:>6} {f.tally.labelled / f.wall:>9.1f} {f.wall:>6.1f}s   {verdict}"
            )
    add("")
    ls = "Label Studio (10 annotators, its SQLite)"
    cols = [f"ours {names[r.kind]}" for r in results]
    add(f"{'vs Label Studio: as a client sees it (round trip)':<52} {ls:>40} " + " ".join(f"{c:>16}" for c in cols))
    add("-" * (52 + 41 + 17 * len(cols)))

    def ours(fn) -> str:
        return " ".join(f"{fn(r):>16}" for r in results)

    nx = {r.kind: stats(r.flows["crowd-api"].tally.samples, "api next") for r in results}
    solo = {r.kind: stats(r.flows["solo-api"].tally.samples, "api next") for r in results}
    keys = [k for k in ("crowd-api", "crowd-page", "paced-api")]
    over = {
        r.kind: sum(correctness(r, k)["overserved"] + correctness(r, k)["items_over"] for k in keys if k in r.flows)
        for r in results
    }
    extra = {r.kind: sum(correctness(r, k)["extra_labels"] for k in keys if k in r.flows) for r in results}
    add(
        f"{f'next task, median, {n} annotators flat out':<52} {LS_NEXT_MEDIAN_10:>40} "
        + ours(lambda r: fmt_ms(nx[r.kind]["client_median"]))
    )
    add(
        f"{f'next task, p95, {n} annotators flat out':<52} {LS_NEXT_P95_10:>40} "
        + ours(lambda r: fmt_ms(nx[r.kind]["client_p95"]))
    )
    add(
        f"{'next task, median, one annotator':<52} {LS_NEXT_MEDIAN_1:>40} "
        + ours(lambda r: fmt_ms(solo[r.kind]["client_median"]))
    )
    add(
        f"{'tasks handed to more annotators than the limit':<52} {LS_OVERSERVED:>40} "
        + ours(lambda r: str(over[r.kind]))
    )
    add(f"{'extra annotations beyond the limit':<52} {LS_EXTRA:>40} " + ours(lambda r: str(extra[r.kind])))
    add(f"{'server errors (database is locked, 5xx)':<52} {LS_LOCKED:>40} " + ours(lambda r: str(r.server_errors)))
    add("")
    if verdicts:
        add(
            f"Target, PostgreSQL, {n} annotators: next item and submit each under {TARGET_P95_MS:.0f} ms p95 server time"
        )
        for pace, marks in verdicts.items():
            overall = "PASS" if all(m.endswith("PASS") for m in marks) else "MISS"
            add(f"  {pace:<11} {overall}  ({'; '.join(marks)})")
    add(
        f"Correctness (every item exactly {OVERLAP} labels from {OVERLAP} different annotators, none lost, none extra, "
        f"no item handed out beyond its overlap): {'OK' if all_ok else 'FAILED'}"
    )
    for r in results:
        for e in r.client_errors[:10]:
            add(f"  {names[r.kind]} error: {e}")
    print("\n".join(lines), flush=True)
    return all_ok


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--internal"]:
        return _internal(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m benchmarks labelling", description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=["postgres", "sqlite", "both"], default="both")
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument(
        "--items", type=int, default=1000, help="items per concurrent campaign (capped by the demo run's claims)"
    )
    parser.add_argument("--solo-items", type=int, default=150, help="items one annotator labels alone, per flow")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 100 items, 30 solo items")
    parser.add_argument("--workers", type=int, default=4, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=4, help="gunicorn threads per worker")
    parser.add_argument(
        "--conn-max-age", type=int, default=60, help="DB_CONN_MAX_AGE for the server (persistent connections)"
    )
    parser.add_argument(
        "--think",
        type=float,
        default=1.0,
        help="mean seconds an annotator reads an item in the paced run (0: no paced run)",
    )
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (server log, SQLite file)")
    args = parser.parse_args(argv)
    if args.quick:
        args.items, args.solo_items = min(args.items, 100), min(args.solo_items, 30)
    if args.annotators < OVERLAP:
        parser.error(f"--annotators must be at least the overlap ({OVERLAP})")
    kinds = ["postgres", "sqlite"] if args.db == "both" else [args.db]
    print(
        f"labelling benchmark: {', '.join(kinds)}; {args.annotators} annotators, {args.items} items, overlap {OVERLAP}",
        flush=True,
    )
    load_start = os.getloadavg()
    results = [bench_database(kind, args) for kind in kinds]
    ok = report(results, args, (load_start, os.getloadavg()))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
