"""Run many judge calls concurrently, each paid for once: the cache is read before and written after every call.

:func:`run_calls` takes a stream of :class:`~.prompts.CallRequest` and keeps ``concurrency`` of
them in flight on one event loop (a sliding window, not waves). Every few answers it stops the
loop for a moment to write them to the cache (:class:`~evalcore.models.JudgeCall`, one bulk
insert), report progress and, about once a second, ask whether the job was cancelled. So:

* a re-run, a resumed job or a re-scored baseline finds the answers it already has and calls
  only for the rest; the same input twice in one stream is called once;
* a killed worker loses at most the answers of the last half second, never what was written;
* memory holds a window of requests and answers, whatever the number of items;
* the database is only touched from the calling thread, between steps of the loop (Django's ORM
  is never called while the loop runs).

Failures (after retries, or a second invalid answer) are returned per item and never cached, so
the next run tries them again.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..jobs.errors import JobCancelled
from ..models import JudgeCall, JudgeConfig
from ..services.problems import UserFacingError
from .client import CallResult, JudgeClient, Limits
from .prompts import CallRequest

LOOKUP_CHUNK = 256
FLUSH_EVERY = 32
FLUSH_SECONDS = 0.5
STOP_CHECK_SECONDS = 1.0
PLACEHOLDER_KEY = "not-needed"  # local servers (vLLM, Ollama, llama.cpp) accept any key


class JudgeUnavailable(UserFacingError):
    """The judge cannot be called as configured (no endpoint kind, no key in the environment...)."""


@dataclass
class CallStats:
    """What a stream of calls cost so far: items answered, read from the cache, failed; tokens; HTTP requests."""

    items: int = 0
    cached: int = 0
    answered: int = 0
    failed: int = 0
    http_requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    started: float = field(default_factory=time.monotonic)

    @property
    def done(self) -> int:
        return self.cached + self.answered + self.failed

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def cost(self, price: dict[str, Any]) -> float:
        return tokens_cost(self.prompt_tokens, self.completion_tokens, price)

    def seconds_left(self, total: int | None) -> float | None:
        """At the pace of the calls made so far (cache hits are free and fast, so they are left out)."""
        paid = self.answered + self.failed
        if not total or not paid:
            return None
        return (time.monotonic() - self.started) / paid * max(0, total - self.done)


def tokens_cost(prompt_tokens: float, completion_tokens: float, price: dict[str, Any]) -> float:
    """The cost of tokens at the config's price per 1,000 input and output tokens."""
    return (
        prompt_tokens * float(price.get("input_per_1k") or 0.0)
        + completion_tokens * float(price.get("output_per_1k") or 0.0)
    ) / 1000.0


def api_key(config: JudgeConfig) -> str:
    """The API key from the environment variable the config names (the key itself is never stored)."""
    if not config.api_key_env:
        return PLACEHOLDER_KEY
    value = os.environ.get(config.api_key_env, "")
    if not value:
        raise JudgeUnavailable(
            f"judge config {config.label} reads its API key from the environment variable {config.api_key_env}, "
            f"which is not set where the job runs: set it for the web server and the Celery worker"
        )
    return value


def check_runnable(config: JudgeConfig) -> None:
    """Refuse a config the tool cannot call, saying what is missing."""
    if not config.runnable:
        raise JudgeUnavailable(
            f"judge config {config.label} describes a judge that ran elsewhere (it has no endpoint kind or no verdict "
            f"prompt): create a runnable config with judge_config create FILE (see the README)"
        )
    if not config.base_url and config.endpoint_kind != JudgeConfig.EndpointKind.OPENAI:
        raise JudgeUnavailable(
            f"judge config {config.label} has no base URL: a {config.get_endpoint_kind_display()} server needs one"
        )


def cached_outputs(config_hash: str, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The cached answers among ``keys`` (one query)."""
    rows = JudgeCall.objects.filter(config_hash=config_hash, input_hash__in=list(keys)).values_list(
        "input_hash", "output"
    )
    return dict(rows)


def _store(config_hash: str, results: list[CallResult]) -> None:
    JudgeCall.objects.bulk_create(
        [
            JudgeCall(
                config_hash=config_hash,
                input_hash=r.key,
                kind=r.kind,
                output=r.output,
                prompt_tokens=r.prompt_tokens,
                completion_tokens=r.completion_tokens,
                attempts=r.attempts,
            )
            for r in results
            if r.ok
        ],
        ignore_conflicts=True,
    )


class _Uncached:
    """The requests still to call, in order: looked up in the cache a chunk at a time, duplicates dropped."""

    def __init__(self, config_hash: str, requests: Iterable[CallRequest], stats: CallStats) -> None:
        self.config_hash = config_hash
        self.requests = iter(requests)
        self.stats = stats
        self.ready: list[CallRequest] = []
        self.recent: OrderedDict[str, None] = OrderedDict()  # keys called lately (bounded)

    def seen(self, key: str) -> None:
        self.recent[key] = None
        if len(self.recent) > 8 * LOOKUP_CHUNK:
            self.recent.popitem(last=False)

    def next(self, in_flight: set[str]) -> CallRequest | None:
        while True:
            while self.ready:
                request = self.ready.pop()
                if request.key in in_flight or request.key in self.recent:
                    self.stats.cached += 1  # the same input again: answered (or failed) once
                    continue
                return request
            chunk = list(itertools.islice(self.requests, LOOKUP_CHUNK))
            if not chunk:
                return None
            self.stats.items += len(chunk)
            have = set(cached_outputs(self.config_hash, {r.key for r in chunk}))
            todo = [r for r in chunk if r.key not in have]
            self.stats.cached += len(chunk) - len(todo)
            self.ready = todo[::-1]


def run_calls(
    config: JudgeConfig,
    requests: Iterable[CallRequest],
    *,
    stats: CallStats,
    on_progress: Callable[[CallStats], None] = lambda stats: None,
    should_stop: Callable[[], bool] = lambda: False,
    client: JudgeClient | None = None,
) -> dict[str, str]:
    """Make sure every request has a cached answer; return the failures (input hash -> why).

    Raises :class:`~evalcore.jobs.errors.JobCancelled` when ``should_stop()`` says so (checked about once a
    second): no new call starts, the calls in flight finish (they are paid for) and every answer is written.
    """
    loop = asyncio.new_event_loop()
    try:
        if client is None:
            check_runnable(config)
            client = loop.run_until_complete(_client(config))
        return _drive(loop, client, config, requests, stats, on_progress, should_stop)
    finally:
        if client is not None:
            loop.run_until_complete(client.close())
        loop.close()


async def _client(config: JudgeConfig) -> JudgeClient:
    limits = Limits.from_config(config.limits)
    return JudgeClient(config, api_key=api_key(config), base_url=config.base_url or None, limits=limits)


def _drive(
    loop: asyncio.AbstractEventLoop,
    client: JudgeClient,
    config: JudgeConfig,
    requests: Iterable[CallRequest],
    stats: CallStats,
    on_progress: Callable[[CallStats], None],
    should_stop: Callable[[], bool],
) -> dict[str, str]:
    failures: dict[str, str] = {}
    source = _Uncached(config.config_hash, requests, stats)
    pending: dict[asyncio.Task, str] = {}
    received: list[CallResult] = []
    flushed = checked = time.monotonic()
    exhausted = False

    def flush() -> None:
        nonlocal flushed
        _store(config.config_hash, received)
        for result in received:
            stats.prompt_tokens += result.prompt_tokens
            stats.completion_tokens += result.completion_tokens
            if result.ok:
                stats.answered += 1
            else:
                stats.failed += 1
                failures[result.key] = result.error
        stats.http_requests = client.http_requests
        received.clear()
        flushed = time.monotonic()
        on_progress(stats)

    stopping = False
    try:
        while True:
            while not exhausted and not stopping and len(pending) < client.limits.concurrency:
                request = source.next(set(pending.values()))
                if request is None:
                    exhausted = True
                    break
                source.seen(request.key)
                pending[loop.create_task(client.call(request))] = request.key
            if not pending:
                break
            done, _ = loop.run_until_complete(
                asyncio.wait(pending, timeout=FLUSH_SECONDS, return_when=asyncio.FIRST_COMPLETED)
            )
            for task in done:
                pending.pop(task)
                received.append(task.result())
            now = time.monotonic()
            if len(received) >= FLUSH_EVERY or (received and now - flushed >= FLUSH_SECONDS):
                flush()
            if not stopping and now - checked >= STOP_CHECK_SECONDS:
                checked = now
                stopping = should_stop()  # then no new call starts; those in flight finish and are kept
        flush()
    except BaseException:
        for task in pending:
            task.cancel()
        if pending:
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        flush()
        raise
    if stopping:
        raise JobCancelled()
    return failures
