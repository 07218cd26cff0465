"""The client: one method a REST operation, jobs waited for, refusals raised in the server's words."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:  # pandas is optional: a DataFrame is only read, never needed to import the client
    import pandas as pd

#: A progress callback: ``(done, total or None, message)``, as the server's jobs report it.
Progress = Callable[[int, "int | None", str], None]


class ApiError(Exception):
    """The API refused a request or a job failed; ``problems`` are the server's messages, one a problem."""

    def __init__(self, status: int, problems: list[str], body: Any = None) -> None:
        self.status = status
        self.problems = problems
        self.body = body
        super().__init__("; ".join(problems) or f"HTTP {status}")


@dataclass(frozen=True)
class Job:
    id: int
    kind: str
    status: str
    done: int
    total: int | None
    message: str
    result: dict[str, Any] | None
    error: str

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Job:
        return cls(
            id=int(data["id"]),
            kind=str(data.get("kind", "")),
            status=str(data["status"]),
            done=int(data.get("done") or 0),
            total=data.get("total"),
            message=str(data.get("message") or ""),
            result=data.get("result"),
            error=str(data.get("error") or ""),
        )

    @property
    def finished(self) -> bool:
        return self.status in ("succeeded", "failed", "cancelled")


@dataclass(frozen=True)
class ImportResult:
    created: bool
    message: str
    result: dict[str, Any]


@dataclass(frozen=True)
class GateResult:
    """A gate's outcome: ``overall`` (``pass``, ``review`` or ``block``) and every decision with its interval."""

    comparison_id: int
    overall: str
    decisions: list[dict[str, Any]] = field(default_factory=list)
    comparison: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """The gate command's exit code for this outcome: 0 pass, 3 review, 4 block."""
        return {"pass": 0, "review": 3, "block": 4}.get(self.overall, 1)


class Client:
    """A client for one server; ``token`` is an API token (the API tokens page, or ``manage.py api_token create USER --name NAME``)."""

    def __init__(
        self,
        base_url: str,
        *,
        token: str,
        timeout: float = 60.0,
        poll_interval: float = 0.5,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.poll_interval = poll_interval
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"),
            headers={"Authorization": f"Token {token}", "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- imports ---------------------------------------------------------------------------------

    def import_evalset(
        self,
        data: pd.DataFrame | str | bytes,
        *,
        name: str,
        filename: str = "questions.jsonl",
        format: str | None = None,
        extend: bool = False,
        progress: Progress | None = None,
    ) -> ImportResult:
        """Import questions (a DataFrame, or a file's path or bytes) as a new frozen version of ``name``."""
        fields = {"name": name, **({"format": format} if format else {}), **({"extend": "true"} if extend else {})}
        job = self._post_job("/api/evalsets/import/", fields, self._file(data, filename))
        return self._imported(self.wait(job, progress=progress))

    def import_run(
        self,
        data: pd.DataFrame | str | bytes,
        *,
        evalset: str,
        name: str,
        k: int | None = None,
        filename: str = "rows.jsonl",
        format: str | None = None,
        judge_config: Mapping[str, Any] | None = None,
        system_config: Mapping[str, Any] | None = None,
        progress: Progress | None = None,
    ) -> ImportResult:
        """Import a run's rows (one a question) against ``evalset`` (``NAME`` or ``NAME@VERSION``)."""
        fields: dict[str, str] = {"evalset": evalset, "name": name}
        if k is not None:
            fields["k"] = str(k)
        if format:
            fields["format"] = format
        if judge_config is not None:
            fields["judge_config"] = json.dumps(judge_config)
        if system_config is not None:
            fields["system_config"] = json.dumps(system_config)
        job = self._post_job("/api/runs/import/", fields, self._file(data, filename))
        return self._imported(self.wait(job, progress=progress))

    # -- gate ------------------------------------------------------------------------------------

    def gate(
        self,
        *,
        base: str,
        candidate: str,
        evalset: str | None = None,
        metrics: list[str] | None = None,
        margin: float | None = None,
        margins: Mapping[str, float] | None = None,
        lower_is_better: list[str] | None = None,
        slice_by: str = "type",
        judge_policy: str | None = None,
        progress: Progress | None = None,
    ) -> GateResult:
        """Compare two runs and apply the release gate; wait for the job and return every decision."""
        body: dict[str, Any] = {"base": base, "candidate": candidate, "slice_by": slice_by}
        for key, value in (
            ("evalset", evalset),
            ("metrics", metrics),
            ("margin", margin),
            ("margins", dict(margins) if margins else None),
            ("lower_is_better", lower_is_better),
            ("judge_policy", judge_policy),
        ):
            if value is not None:
                body[key] = value
        job = self.wait(Job.from_json(self._json("POST", "/api/gate/", json=body)), progress=progress)
        result = job.result or {}
        comparison = self.comparison(int(result["comparison_id"]))
        return GateResult(
            comparison_id=int(result["comparison_id"]),
            overall=str(comparison.get("overall", result.get("overall"))),
            decisions=list(comparison.get("decisions", [])),
            comparison=comparison,
        )

    def comparison(self, comparison_id: int) -> dict[str, Any]:
        return self._json("GET", f"/api/comparisons/{comparison_id}/")

    # -- judge validation ------------------------------------------------------------------------

    def judge_report(self, campaign: str) -> dict[str, Any]:
        """A campaign's judge report: kappa, miss rate, the verdict and the corrected pass rate."""
        return self._json("GET", f"/api/campaigns/{campaign}/judge-report/")

    def export_disagreements(
        self, campaign: str, *, format: str = "jsonl", limit: int | None = None, balanced: bool = False, seed: int = 7
    ) -> str:
        """Export the tuning split's disagreements (recorded and versioned on the server); return the file's text."""
        body: dict[str, Any] = {"format": format, "balanced": balanced, "seed": seed}
        if limit is not None:
            body["limit"] = limit
        return str(self._json("POST", f"/api/campaigns/{campaign}/exports/", json=body)["content"])

    # -- jobs ------------------------------------------------------------------------------------

    def job(self, job_id: int) -> Job:
        return Job.from_json(self._json("GET", f"/api/jobs/{job_id}/"))

    def wait(self, job: Job, *, progress: Progress | None = None, timeout: float | None = None) -> Job:
        """Poll a job until it ends; report its progress; raise :class:`ApiError` with its error if it failed."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if progress is not None:
                progress(job.done, job.total, job.message)
            if job.finished:
                break
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError(f"job {job.id} is still {job.status} after {timeout} s")
            time.sleep(self.poll_interval)
            job = self.job(job.id)
        if job.status != "succeeded":
            raise ApiError(200, [line.strip(" -") for line in job.error.splitlines() if line.strip()] or [job.status])
        return job

    # -- transport -------------------------------------------------------------------------------

    @staticmethod
    def _file(data: Any, filename: str) -> tuple[str, bytes]:
        """The upload: a DataFrame as JSON Lines (one record a row), a path's content, or bytes as they are."""
        if isinstance(data, bytes):
            return filename, data
        if isinstance(data, str):
            with open(data, "rb") as handle:
                return data.rsplit("/", 1)[-1], handle.read()
        buffer = io.StringIO()
        data.to_json(buffer, orient="records", lines=True, force_ascii=False, date_format="iso")
        return filename if filename.endswith(".jsonl") else filename + ".jsonl", buffer.getvalue().encode()

    def _post_job(self, path: str, fields: dict[str, str], file: tuple[str, bytes]) -> Job:
        return Job.from_json(self._json("POST", path, data=fields, files={"file": file}))

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._http.request(method, path, **kwargs)
        if response.status_code >= 400:
            raise _error(response)
        return response.json()

    @staticmethod
    def _imported(job: Job) -> ImportResult:
        result = job.result or {}
        return ImportResult(created=bool(result.get("created")), message=str(result.get("message", "")), result=result)


def _error(response: httpx.Response) -> ApiError:
    """The API's refusal as problems: ``{"field": ["message"]}`` or ``{"detail": "message"}``, in its own words."""
    try:
        body = response.json()
    except ValueError:
        return ApiError(response.status_code, [response.text[:500] or response.reason_phrase], None)
    return ApiError(response.status_code, _messages(body), body)


def _messages(body: Any, where: str = "") -> list[str]:
    if isinstance(body, str):
        return [f"{where}: {body}" if where and where != "detail" else body]
    if isinstance(body, list):
        return [m for item in body for m in _messages(item, where)]
    if isinstance(body, dict):
        return [m for key, value in body.items() for m in _messages(value, key if not where else f"{where}.{key}")]
    return [str(body)]
