"""A deterministic OpenAI-compatible judge on loopback, for tests, benchmarks and trying the tool without a key.

``POST /v1/chat/completions`` answers like a judge that reads literally:

* a **verdict** request (its item prompt has a line starting ``Claim:``) is answered
  ``{"supported": true}`` when every word of three letters or more of the claim appears in the
  context (the text between ``Context:`` and ``Claim:``), else false, with a rationale naming the
  missing words;
* a **claims** request (no ``Claim:`` line) splits the text after ``Answer:`` into sentences.

It counts what it received: every request, the requests it answered per item (keyed as the tool
keys its cache, so a test can prove no call was paid twice), those a client gave up on before the
answer was sent, and the most requests it held at once.

Faults on demand, for the next requests (:meth:`FakeJudge.script`) or for every item whose prompt
holds a marker word (:data:`MARKERS`): ``429`` (with ``Retry-After``), ``500``, ``timeout`` (no
answer for ``timeout_seconds``), ``malformed`` (an answer that is not JSON), ``schema`` (JSON of
the wrong shape), ``slow`` (``slow_seconds`` more latency), ``broken`` (an HTTP body that is not
JSON). :meth:`FakeJudge.hold_after` holds every request after the n-th answered one until
:meth:`FakeJudge.release`, so a test can kill a worker with no answer in flight.

Biases of known size, switchable (for the bias battery's tests): :attr:`FakeJudge.noise` flips a
verdict with that chance, drawn from the prompt *and the request's seed* (so the same prompt under
another seed, the battery's placebo, disagrees with itself about ``2 noise`` of the time);
:meth:`FakeJudge.bias` makes every verdict request whose prompt holds a phrase answer "supported"
(or "unsupported") with a chance ``rate``, drawn from the claim and context alone (independent of
the noise), whatever the literal reading said.

Run it by hand: ``python -m evalcore.judging.fakeserver --port 8765 --latency 0.05``, then point
a judge config's ``base_url`` at ``http://127.0.0.1:8765/v1``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import select
import socket
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from .prompts import CLAIMS, VERDICT, input_hash

FAULTS = ("429", "500", "timeout", "malformed", "schema", "slow", "broken")
#: A prompt holding one of these words gets that fault on every request (a per-item failure).
MARKERS = {f"fault{name}": name for name in FAULTS}
CORRECTION_PREFIX = "That answer is not valid"
WORD = re.compile(r"[a-z0-9]{3,}")


def draw(*parts: Any) -> float:
    """A deterministic uniform number in [0, 1) from the parts (the fake judge's only randomness)."""
    digest = hashlib.sha256(json.dumps(parts, default=str).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def words(text: str) -> set[str]:
    return set(WORD.findall(text.lower()))


def item_message(messages: list[dict[str, Any]]) -> str:
    """The item's own prompt: the last user message that is not a request to correct an answer."""
    for message in reversed(messages):
        content = str(message.get("content") or "")
        if message.get("role") == "user" and not content.startswith(CORRECTION_PREFIX):
            return content
    return ""


def judge_answer(prompt: str) -> tuple[str, dict[str, Any]]:
    """The deterministic answer to an item prompt: ``(kind, answer)``."""
    if "Claim:" in prompt:
        context = prompt.split("Claim:")[0]
        context = context.split("Context:", 1)[1] if "Context:" in context else context
        claim = prompt.rsplit("Claim:", 1)[1].strip().splitlines()[0] if prompt.rsplit("Claim:", 1)[1].strip() else ""
        missing = sorted(words(claim) - words(context))
        rationale = (
            "every word of the claim is in the context" if not missing else f"not in the context: {', '.join(missing)}"
        )
        return VERDICT, {"supported": not missing, "rationale": rationale}
    answer = prompt.split("Answer:", 1)[1] if "Answer:" in prompt else prompt
    answer = answer.strip().split("\n\n")[0]
    sentences = [s.strip() for s in re.split(r"(?<=[.!?])\s+", answer) if s.strip()]
    return CLAIMS, {"claims": sentences}


@dataclass
class Received:
    """What the fake judge saw: one entry per request."""

    key: str
    kind: str
    prompt: str
    outcome: str  # "answered", a fault name, "abandoned"


@dataclass
class FakeJudge:
    """The server's behaviour and counters (shared by its handler threads)."""

    latency: float = 0.0
    slow_seconds: float = 2.0
    timeout_seconds: float = 5.0
    retry_after: str = "1"
    record_prompts: bool = True
    on_messages: Any = None  # called with every request's messages (tests read what a judge would see)
    on_headers: Any = None  # called with every request's Authorization header
    on_body: Any = None  # called with every request's whole JSON body (model, sampling, response format)
    requests: list[Received] = field(default_factory=list)
    answered: Counter = field(default_factory=Counter)
    in_flight: int = 0
    max_in_flight: int = 0
    received_at: list[float] = field(default_factory=list)
    rate_limited_at: list[float] = field(default_factory=list)  # when each 429 was sent
    noise: float = 0.0  # chance a verdict flips, drawn from (prompt, seed)
    biases: dict[str, tuple[float, bool]] = field(default_factory=dict)  # phrase -> (rate, verdict it pushes to)
    _script: list[str] = field(default_factory=list)
    _hold_after: int | None = None
    _admitted: int = 0
    _released: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def script(self, *faults: str) -> None:
        """Give the next requests these faults, in order (``"ok"`` for a normal answer)."""
        unknown = [f for f in faults if f not in FAULTS and f != "ok"]
        if unknown:
            raise ValueError(f"unknown faults {unknown}; known: {FAULTS}")
        with self._lock:
            self._script.extend(faults)

    def bias(self, phrase: str, rate: float, *, toward_supported: bool = True) -> None:
        """Push verdicts on prompts holding ``phrase`` to supported (or unsupported) with chance ``rate``."""
        if not 0 <= rate <= 1:
            raise ValueError(f"rate must be in [0, 1], got {rate}")
        self.biases[phrase] = (rate, toward_supported)

    def distort(self, prompt: str, seed: Any, answer: dict[str, Any]) -> dict[str, Any]:
        """The verdict after the judge's noise and biases (a claims answer is returned as it is)."""
        if "supported" not in answer:
            return answer
        supported = bool(answer["supported"])
        if self.noise and draw("noise", prompt, seed) < self.noise:
            supported = not supported
        claim_and_context = prompt.split("Context:", 1)[-1]
        for phrase, (rate, toward) in self.biases.items():
            if phrase in prompt and draw("bias", phrase, claim_and_context.replace(phrase, "")) < rate:
                supported = toward
        if supported == answer["supported"]:
            return answer
        return {"supported": supported, "rationale": f"{answer['rationale']} (changed its mind)"}

    def hold_after(self, answered: int) -> None:
        """Answer ``answered`` requests, then hold every further request until :meth:`release`."""
        self._released.clear()
        with self._lock:
            self._admitted = 0
            self._hold_after = answered

    def release(self) -> None:
        self._hold_after = None
        self._released.set()

    @property
    def total_answered(self) -> int:
        return sum(self.answered.values())

    @property
    def held(self) -> int:
        return sum(1 for r in self.requests if r.outcome == "held")

    def answered_twice(self) -> list[str]:
        return [key for key, n in self.answered.items() if n > 1]

    def reset(self) -> None:
        with self._lock:
            self.requests.clear()
            self.answered.clear()
            self.received_at.clear()
            self._script.clear()
            self.max_in_flight = 0

    def _fault(self, prompt: str) -> str:
        for marker, fault in MARKERS.items():
            if marker in prompt.lower():
                return fault
        with self._lock:
            return self._script.pop(0) if self._script else "ok"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # headers and body leave in one write (no Nagle / delayed-ACK stall between them)
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        try:
            self.wfile.write(body)
            self.wfile.flush()
        except OSError:
            pass

    def _client_gone(self) -> bool:
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def do_GET(self) -> None:
        if self.path.rstrip("/").endswith("/models"):
            self._send(200, json.dumps({"object": "list", "data": [{"id": "fake-judge", "object": "model"}]}).encode())
        else:
            self._send(404, b'{"error": {"message": "not found"}}')

    def do_POST(self) -> None:
        fake = self.server.fake
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found"}}')
            return
        messages = body.get("messages") or []
        if fake.on_messages is not None:
            fake.on_messages(messages)
        if fake.on_headers is not None:
            fake.on_headers(self.headers.get("Authorization", ""))
        if fake.on_body is not None:
            fake.on_body(body)
        prompt = item_message(messages)
        kind, answer = judge_answer(prompt)
        answer = fake.distort(prompt, body.get("seed"), answer)
        record = Received(input_hash(kind, prompt), kind, prompt if fake.record_prompts else "", "answered")
        with fake._lock:
            fake.requests.append(record)
            fake.received_at.append(time.monotonic())
            fake.in_flight += 1
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            self._answer(fake, record, prompt, body, messages, answer)
        finally:
            with fake._lock:
                fake.in_flight -= 1

    def _answer(self, fake: FakeJudge, record: Received, prompt: str, body: dict, messages: list, answer: dict) -> None:
        fault = fake._fault(prompt)
        with fake._lock:  # admitted requests are counted as they arrive, so exactly ``answered`` get through
            hold = fake._hold_after is not None and fake._admitted >= fake._hold_after
            fake._admitted += not hold
        if hold:
            record.outcome = "held"
            while not fake._released.wait(0.05):
                pass
            if self._client_gone():
                record.outcome = "abandoned"
                return
        delay = fake.latency + (fake.slow_seconds if fault == "slow" else 0.0)
        if fault == "timeout":
            delay += fake.timeout_seconds
        if delay:
            time.sleep(delay)
        if self._client_gone():
            record.outcome = "abandoned"
            return
        record.outcome = "answered" if fault in ("ok", "slow") else fault
        if fault == "429":
            fake.rate_limited_at.append(time.monotonic())
            self._send(
                429, b'{"error": {"message": "rate limited", "type": "rate_limit"}}', {"Retry-After": fake.retry_after}
            )
            return
        if fault in ("500", "timeout"):
            self._send(500, b'{"error": {"message": "the fake judge failed on purpose"}}')
            return
        if fault == "broken":
            self._send(200, b'{"id": "chatcmpl-broken", "choices": [')
            return
        content = json.dumps(answer)
        if fault == "malformed":
            content = "SUPPORTED, because the context says so"
        elif fault == "schema":
            content = json.dumps({"verdict": "yes"})
        if fault in ("ok", "slow"):
            with fake._lock:
                fake.answered[record.key] += 1
        prompt_chars = sum(len(str(m.get("content") or "")) for m in messages)
        completion = {
            "id": f"chatcmpl-{record.key[:12]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", "fake-judge"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": prompt_chars // 4 + 1,
                "completion_tokens": len(content) // 4 + 1,
                "total_tokens": prompt_chars // 4 + len(content) // 4 + 2,
            },
        }
        self._send(200, json.dumps(completion).encode())


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    fake: FakeJudge


class FakeJudgeServer:
    """Start the fake judge on a free loopback port in a background thread; ``base_url`` is its API root."""

    def __init__(self, fake: FakeJudge | None = None, *, host: str = "127.0.0.1", port: int = 0) -> None:
        self.fake = fake or FakeJudge()
        self.httpd = _Server((host, port), _Handler)
        self.httpd.fake = self.fake
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True, name="fake-judge")

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> FakeJudgeServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.fake.release()
        self.httpd.shutdown()
        self.httpd.server_close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="A deterministic OpenAI-compatible fake judge on loopback.")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before each answer")
    args = parser.parse_args(argv)
    server = FakeJudgeServer(FakeJudge(latency=args.latency, record_prompts=False), port=args.port)
    print(f"fake judge at {server.base_url} (Ctrl+C to stop)")
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
