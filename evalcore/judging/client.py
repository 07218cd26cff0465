"""Calls to an OpenAI-compatible chat completions endpoint, with the manners a shared endpoint expects.

The official ``openai`` client does the HTTP over its aiohttp transport (its own retries are off:
this module retries, so a 429 slows every request of the job down, not just the one that got it):

* **rate limits**: requests per minute are paced evenly; tokens per minute are a bucket refilled
  continuously, debited with each call's estimate and corrected with the tokens the endpoint
  reports; a 429 pauses every request until its ``Retry-After`` has passed;
* **retries**: 429, 408, 409, 5xx, timeouts and connection errors are retried up to
  ``max_retries`` times with exponential backoff and jitter (0.5 s doubling, at most 30 s), or
  after the ``Retry-After`` / ``retry-after-ms`` the endpoint asked for; other errors (400, 401,
  404) are not retried;
* **validation**: the answer must be JSON matching the config's schema; a first invalid answer is
  retried once with the error told to the model, a second one is a failure of that item;
* **failures** are per item: :meth:`JudgeClient.call` always returns a :class:`CallResult`, never
  raises for an endpoint's error.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from .prompts import VERDICT, CallRequest, parse_answer

RETRIED_STATUSES = frozenset({408, 409, 429})
INITIAL_BACKOFF = 0.5
MAX_BACKOFF = 30.0
MAX_RETRY_AFTER = 120.0


@dataclass(frozen=True)
class Limits:
    """How hard to push an endpoint (none of it changes a verdict, so none of it is in the config's hash)."""

    concurrency: int = 8
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    timeout_seconds: float = 60.0
    max_retries: int = 4

    @classmethod
    def from_config(cls, limits: dict[str, Any]) -> Limits:
        return cls(**{k: v for k, v in (limits or {}).items() if k in cls.__dataclass_fields__})


@dataclass(frozen=True)
class CallResult:
    """The outcome of one item's call: its validated output, or why it failed; tokens and attempts either way."""

    key: str
    kind: str
    output: dict[str, Any] | None
    error: str
    prompt_tokens: int
    completion_tokens: int
    attempts: int

    @property
    def ok(self) -> bool:
        return self.output is not None


class RateLimiter:
    """Requests-per-minute pacing, a tokens-per-minute bucket and a shared pause after a 429."""

    def __init__(
        self,
        *,
        requests_per_minute: float | None,
        tokens_per_minute: float | None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.interval = 60.0 / requests_per_minute if requests_per_minute else 0.0
        self.capacity = float(tokens_per_minute) if tokens_per_minute else 0.0
        self.refill = self.capacity / 60.0
        self.tokens = self.capacity
        self.clock = clock
        self.sleep = sleep
        self.next_slot = clock()
        self.updated = clock()
        self.paused_until = 0.0
        self.lock = asyncio.Lock()

    def pause(self, seconds: float) -> None:
        """Hold every request back for ``seconds`` (the endpoint said it is overloaded)."""
        self.paused_until = max(self.paused_until, self.clock() + seconds)

    def _fill(self) -> None:
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.refill)
        self.updated = now

    async def acquire(self, tokens: int) -> None:
        """Wait until a request of about ``tokens`` tokens may start."""
        async with self.lock:
            while True:
                wait = self.paused_until - self.clock()
                if self.interval:
                    wait = max(wait, self.next_slot - self.clock())
                if self.capacity:
                    self._fill()
                    need = min(float(tokens), self.capacity)
                    if self.tokens < need:
                        wait = max(wait, (need - self.tokens) / self.refill)
                if wait <= 0:
                    break
                await self.sleep(wait)
            if self.interval:
                self.next_slot = max(self.next_slot, self.clock()) + self.interval
            if self.capacity:
                self.tokens -= min(float(tokens), self.capacity)

    def settle(self, estimated: int, actual: int) -> None:
        """Correct the bucket once the endpoint reported what a call really used."""
        if self.capacity:
            self._fill()
            self.tokens = min(self.capacity, self.tokens - (actual - min(float(estimated), self.capacity)))


def retry_after(headers: Any) -> float | None:
    """Seconds an endpoint asked to wait (``retry-after-ms``, ``Retry-After`` in seconds or as a date)."""
    if headers is None:
        return None
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        raw = headers.get(name)
        if raw is None:
            continue
        try:
            return min(MAX_RETRY_AFTER, max(0.0, float(raw) * scale))
        except ValueError:
            try:
                parsed = email.utils.parsedate_to_datetime(raw) if name == "retry-after" else None
            except (TypeError, ValueError):
                parsed = None
            if parsed is not None:
                return min(MAX_RETRY_AFTER, max(0.0, parsed.timestamp() - time.time()))
    return None


def backoff(retry: int, rng: random.Random) -> float:
    """Exponential backoff with full jitter on the upper half: 0.5 s, 1 s, 2 s ... at most 30 s."""
    ceiling = min(MAX_BACKOFF, INITIAL_BACKOFF * 2**retry)
    return ceiling * (0.5 + rng.random() / 2)


class JudgeClient:
    """Calls one runnable judge config through ``openai.AsyncOpenAI`` (create and use it in one event loop)."""

    def __init__(
        self,
        config: Any,
        *,
        api_key: str,
        base_url: str | None,
        limits: Limits,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        seed: int = 0,
    ) -> None:
        self.config = config
        self.limits = limits
        self.sleep = sleep
        self.rng = random.Random(seed)
        self.limiter = RateLimiter(
            requests_per_minute=limits.requests_per_minute, tokens_per_minute=limits.tokens_per_minute, sleep=sleep
        )
        import openai  # here, not at import: it takes over a second, and the gate, imports and pages never call a judge

        self.client = openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url or None,
            max_retries=0,
            timeout=limits.timeout_seconds,
            # the SDK's aiohttp transport: httpx's pool walks every idle connection on each request,
            # which at a few dozen in flight costs more CPU than the calls themselves
            http_client=openai.DefaultAioHttpClient(timeout=limits.timeout_seconds),
        )
        self.completion_type = openai.types.chat.ChatCompletion
        self.http_requests = 0

    async def close(self) -> None:
        await self.client.close()

    def _arguments(self, request: CallRequest, messages: list[dict[str, str]]) -> dict[str, Any]:
        config = self.config
        arguments: dict[str, Any] = {"model": config.model, "messages": messages}
        if config.temperature is not None:
            arguments["temperature"] = config.temperature
        seed = request.seed if request.seed is not None else config.seed
        if seed is not None:
            arguments["seed"] = seed
        if config.max_tokens:
            arguments["max_tokens"] = config.max_tokens
        if config.structured_output == "json_schema":
            name = "verdict" if request.kind == VERDICT else "claims"
            arguments["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": request.schema, "strict": True},
            }
        elif config.structured_output == "json_object":
            arguments["response_format"] = {"type": "json_object"}
        return arguments

    def _expected_completion(self) -> int:
        return int(self.config.max_tokens or 256)

    async def call(self, request: CallRequest) -> CallResult:
        """Call for one item until it has a valid answer or has failed for good."""
        import openai  # already loaded by __init__

        messages = list(request.messages)
        prompt_tokens = completion_tokens = attempts = retries = 0
        corrected = False
        while True:
            estimate = request.est_prompt_tokens + self._expected_completion()
            await self.limiter.acquire(estimate)
            attempts += 1
            self.http_requests += 1
            try:
                # the client's documented call for a request it need not reshape: ``chat.completions.create``
                # walks its typed parameters for aliases and files on every call (about a millisecond of CPU,
                # most of the runner's own time), and a judge's plain JSON has none
                completion = await self.client.post(
                    "/chat/completions", body=self._arguments(request, messages), cast_to=self.completion_type
                )
            except openai.APIStatusError as error:
                status = error.status_code
                if (status in RETRIED_STATUSES or status >= 500) and retries < self.limits.max_retries:
                    wait = retry_after(error.response.headers)
                    if status == 429:
                        self.limiter.pause(wait if wait is not None else backoff(retries, self.rng))
                    await self.sleep(wait if wait is not None else backoff(retries, self.rng))
                    retries += 1
                    continue
                why = f"HTTP {status} from the judge endpoint: {_short(error.message)}"
                if status in RETRIED_STATUSES or status >= 500:
                    why += f" (still failing after {retries} retries)"
                return CallResult(request.key, request.kind, None, why, prompt_tokens, completion_tokens, attempts)
            except (
                openai.APITimeoutError,
                openai.APIConnectionError,
                openai.APIResponseValidationError,
                json.JSONDecodeError,  # a body cut short or not JSON: the client does not wrap it
            ) as error:
                if retries < self.limits.max_retries:
                    await self.sleep(backoff(retries, self.rng))
                    retries += 1
                    continue
                why = {
                    openai.APITimeoutError: f"no answer within {self.limits.timeout_seconds:g} s",
                    openai.APIConnectionError: "could not reach the judge endpoint",
                }.get(type(error), "the endpoint's response could not be read")
                return CallResult(
                    request.key,
                    request.kind,
                    None,
                    f"{why} (after {retries} retries): {_short(str(error))}",
                    prompt_tokens,
                    completion_tokens,
                    attempts,
                )
            usage = getattr(completion, "usage", None)
            used_in = int(getattr(usage, "prompt_tokens", 0) or 0)
            used_out = int(getattr(usage, "completion_tokens", 0) or 0)
            prompt_tokens += used_in
            completion_tokens += used_out
            self.limiter.settle(estimate, used_in + used_out if usage else estimate)
            choices = getattr(completion, "choices", None) or []
            text = choices[0].message.content if choices and choices[0].message else None
            output, problem = parse_answer(text, request.schema, request.kind)
            if output is not None:
                return CallResult(request.key, request.kind, output, "", prompt_tokens, completion_tokens, attempts)
            if corrected:
                return CallResult(
                    request.key,
                    request.kind,
                    None,
                    f"invalid answer twice: {problem}",
                    prompt_tokens,
                    completion_tokens,
                    attempts,
                )
            corrected = True
            messages = [
                *messages,
                {"role": "assistant", "content": text or ""},
                {
                    "role": "user",
                    "content": f"That answer is not valid: {problem}. Answer again with one JSON object that "
                    f"matches the schema, and nothing else.",
                },
            ]


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
