"""Prompt templates, messages and answer schemas of a runnable judge config.

Templates are Python format strings with named fields only: ``{question}``, ``{context}`` (the
chunks that reached the model, numbered ``[1] ...``), ``{answer}`` and, in the verdict prompt,
``{claim}``. A literal brace is written twice (``{{`` and ``}}``). Fields are filled with text as
it is: nothing substituted is read as a template again.

Two calls exist: splitting an answer into atomic claims (answered as ``{"claims": [...]}``) and a
verdict on one claim (answered as ``{"supported": true|false, "rationale": "..."}``). Each answer
is validated against the config's JSON schema (:data:`CLAIMS_SCHEMA` and :data:`VERDICT_SCHEMA`
unless the config pins its own).
"""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jsonschema

CLAIMS, VERDICT = "claims", "verdict"
CLAIM_FIELDS = ("question", "context", "answer")
VERDICT_FIELDS = ("question", "context", "answer", "claim")

CLAIMS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"claims": {"type": "array", "items": {"type": "string", "minLength": 1}}},
    "required": ["claims"],
    "additionalProperties": False,
}
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"supported": {"type": "boolean"}, "rationale": {"type": "string"}},
    "required": ["supported", "rationale"],
    "additionalProperties": False,
}
DEFAULT_SYSTEM_PROMPT = (
    "You are a careful judge of retrieval-augmented answers. You decide only from the context you are given, "
    "never from what you know. Reply with one JSON object and nothing else."
)

#: About four characters per token for English text: the estimate used before any call was made.
CHARS_PER_TOKEN = 4.0


class TemplateError(ValueError):
    """A prompt template that cannot be filled: the message says which field and how to fix it."""


def template_fields(template: str, *, what: str) -> set[str]:
    """Return the named fields of a template; :class:`TemplateError` for anything but plain names."""
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as error:
        raise TemplateError(
            f"the {what} is not a valid template ({error}); write a literal brace as {{{{ or }}}}"
        ) from None
    fields = set()
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            raise TemplateError(
                f"the {what} has the field {{{name}{'!' + conversion if conversion else ''}{':' + spec if spec else ''}}}: "
                f"use plain names such as {{context}}; write a literal brace as {{{{ or }}}}"
            )
        fields.add(name)
    return fields


def check_template(template: str, *, what: str, allowed: Sequence[str], required: Sequence[str]) -> None:
    """Refuse a template with unknown fields or without the fields it needs."""
    fields = template_fields(template, what=what)
    unknown = sorted(fields - set(allowed))
    if unknown:
        raise TemplateError(
            f"the {what} uses {', '.join('{' + f + '}' for f in unknown)}; its fields are "
            f"{', '.join('{' + f + '}' for f in allowed)}"
        )
    missing = [f for f in required if f not in fields]
    if missing:
        raise TemplateError(f"the {what} must contain {', '.join('{' + f + '}' for f in missing)}")


def check_schema(schema: Any, *, what: str, requires: str) -> None:
    """Refuse a JSON schema that is not one, or that does not require the key the tool reads."""
    if not isinstance(schema, dict):
        raise TemplateError(f"the {what} must be a JSON schema object")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise TemplateError(f"the {what} is not a valid JSON schema: {error.message}") from None
    if schema.get("type") != "object" or requires not in (schema.get("required") or []):
        raise TemplateError(f"the {what} must describe an object that requires {requires!r}")


def render_context(chunks: Sequence[str]) -> str:
    """The chunks that reached the model, numbered as people see them: ``[1] text``."""
    return "\n\n".join(f"[{i}] {text}" for i, text in enumerate(chunks, start=1))


@dataclass(frozen=True)
class ItemText:
    """What a judge is shown about one item (never a label: people's labels never enter a prompt)."""

    question: str
    context: tuple[str, ...]
    answer: str
    claim: str = ""

    def fields(self) -> dict[str, str]:
        return {
            "question": self.question,
            "context": render_context(self.context),
            "answer": self.answer,
            "claim": self.claim,
        }


@dataclass(frozen=True)
class CallRequest:
    """One call to make: its cache key (the input hash), kind, messages and answer schema."""

    key: str
    kind: str
    messages: tuple[dict[str, str], ...]
    schema: dict[str, Any]
    est_prompt_tokens: int
    seed: int | None = None  # None: the config's seed; another one (a bias battery's placebo) is in the key


def estimate_tokens(text: str) -> int:
    return max(1, int(len(text) / CHARS_PER_TOKEN + 0.5))


def input_hash(kind: str, user_message: str, seed: int | None = None) -> str:
    """The cache key of a call within its config: the kind and the item's rendered prompt (and a seed other
    than the config's, when one is given: the same prompt asked again under another seed is another call)."""
    parts: list[Any] = [kind, user_message] if seed is None else [kind, user_message, {"seed": seed}]
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def example_messages(config: Any) -> list[dict[str, str]]:
    """The config's few-shot examples as user/assistant turns of the verdict prompt (tuning split only)."""
    turns: list[dict[str, str]] = []
    for example in config.few_shot_examples or []:
        item = ItemText(
            question=example.get("question", ""),
            context=tuple(example.get("context") or ()),
            answer=example.get("answer", ""),
            claim=example.get("claim") or example.get("answer", ""),
        )
        turns.append({"role": "user", "content": config.prompt.format(**item.fields())})
        answer = {"supported": bool(example["supported"]), "rationale": example.get("rationale", "")}
        turns.append({"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)})
    return turns


class Prompts:
    """Builds the calls of one runnable config (the system prompt and few-shot turns rendered once)."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.system = [{"role": "system", "content": config.system_prompt}] if config.system_prompt else []
        self.examples = example_messages(config)
        self.prefix_tokens = sum(estimate_tokens(m["content"]) for m in self.system + self.examples)
        self.claims_schema = config.claims_schema or CLAIMS_SCHEMA
        self.verdict_schema = config.verdict_schema or VERDICT_SCHEMA

    def claims(self, item: ItemText) -> CallRequest:
        user = self.config.claim_prompt.format(**item.fields())
        messages = (*self.system, {"role": "user", "content": user})
        est = sum(estimate_tokens(m["content"]) for m in self.system) + estimate_tokens(user)
        return CallRequest(input_hash(CLAIMS, user), CLAIMS, messages, self.claims_schema, est)

    def verdict(self, item: ItemText, *, seed: int | None = None) -> CallRequest:
        """The verdict call on one claim; ``seed`` asks again under another seed than the config's (a new key)."""
        user = self.config.prompt.format(**item.fields())
        messages = (*self.system, *self.examples, {"role": "user", "content": user})
        return CallRequest(
            input_hash(VERDICT, user, seed),
            VERDICT,
            messages,
            self.verdict_schema,
            self.prefix_tokens + estimate_tokens(user),
            seed,
        )


def parse_answer(text: str | None, schema: dict[str, Any], kind: str) -> tuple[dict[str, Any] | None, str]:
    """Parse and validate an answer: ``(output, "")`` or ``(None, what is wrong)``.

    A JSON object inside a fenced code block is accepted (some local servers add the fence).
    """
    content = (text or "").strip()
    if content.startswith("```"):
        content = content.strip("`")
        content = content[content.find("{") :] if "{" in content else content
    try:
        data = json.loads(content)
    except json.JSONDecodeError as error:
        return None, f"the answer is not valid JSON ({error.msg} at character {error.pos})"
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path))
    if errors:
        where = "/".join(str(p) for p in errors[0].path) or "the answer"
        return None, f"the answer does not match the schema: {where}: {errors[0].message}"
    if kind == CLAIMS and not (
        isinstance(data.get("claims"), list) and all(isinstance(c, str) and c.strip() for c in data["claims"])
    ):
        return None, 'the answer does not match the schema: "claims" must be a list of non-empty strings'
    if kind == VERDICT and not isinstance(data.get("supported"), bool):
        return None, 'the answer does not match the schema: "supported" must be true or false'
    return data, ""
