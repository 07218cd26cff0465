"""promptfoo's ``promptfoo eval --output results.json`` (or ``results.jsonl``): one result a test and prompt.

A result keeps the test's ``vars`` (the question, its context), the provider's ``response.output``
(the answer) and ``gradingResult`` with ``namedScores`` (each assertion's ``metric``) and
``componentResults`` (each assertion's score and reason). One file is one run only when it holds
one provider and one prompt: a file comparing several is refused with what it holds, since each
pair is a run of its own (``promptfoo eval --filter-providers``, or one prompt in the config).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from ..fields import FieldError, as_text, is_blank, json_safe
from ..problems import ProblemCollector
from ..records import Record
from .common import ANSWER_KEYS, TEXT_KEYS, an_object, chunks, first, id_in, text_id, text_of, verdict_number

#: Variables a promptfoo test names its question and context by (its RAG guides use ``query`` and ``context``).
QUESTION_VARS = ("question", "query", "input", "user_input", "prompt")
CONTEXT_VARS = ("context", "contexts", "retrieved_contexts", "documents")
REFERENCE_VARS = ("reference", "reference_answer", "expected", "expected_output", "ground_truth", "answer")


def is_promptfoo(names: set[str]) -> bool:
    return {"testCase", "promptIdx"} <= names or {"gradingResult", "vars", "response"} <= names


def single_run(records: Iterable[Record], problems: ProblemCollector) -> Iterator[Record]:
    """The results, refused (once, naming what the file holds) when they come from several providers or prompts."""
    pairs: dict[tuple[str, str], int] = {}
    for record in records:
        data = record.data
        provider = an_object(data.get("provider"))
        pair = (
            str(provider.get("label") or provider.get("id") or ""),
            str(data.get("promptId") or data.get("promptIdx")),
        )
        pairs.setdefault(pair, record.line)
        if len(pairs) > 1:
            held = "; ".join(f"provider {p!r}, prompt {q[:12]}" for p, q in pairs)
            problems.add(
                record.line,
                "provider",
                f"the file holds the results of several providers or prompts ({held}); each is a run of its own: "
                "export one (promptfoo eval --filter-providers NAME, or one prompt in the config) and import each",
            )
            return
        yield record


def _vars(data: dict[str, Any]) -> dict[str, Any]:
    test = an_object(data.get("testCase"))
    return {**an_object(test.get("vars")), **an_object(data.get("vars"))}


def question(data: dict[str, Any]) -> dict[str, Any]:
    """A result's test as a plain question: its question variable, reference, and our id from the test's metadata."""
    variables = _vars(data)
    test = an_object(data.get("testCase"))
    name = next((v for v in QUESTION_VARS if not is_blank(variables.get(v))), None)
    if name is None:
        raise FieldError("vars", f"names no question: give the test a variable {', '.join(QUESTION_VARS)}")
    text = text_of(variables[name], f"vars.{name}", TEXT_KEYS, required=True)
    metadata = {**an_object(test.get("metadata")), **an_object(data.get("metadata"))}
    reference = first(variables, *REFERENCE_VARS)
    return {
        "id": id_in(metadata, variables) or text_id(text),
        "question": text,
        "reference_answer": text_of(reference, "vars.reference", ANSWER_KEYS) if reference is not None else "",
        "type": str(metadata.get("type") or ""),
        "metadata": json_safe({k: v for k, v in metadata.items() if not k.startswith("_") and k not in ("type",)}),
    }


def row(data: dict[str, Any]) -> dict[str, Any]:
    """A result as a plain row: the provider's output, the context variable, each named score."""
    variables = _vars(data)
    test = an_object(data.get("testCase"))
    metadata = {**an_object(test.get("metadata")), **an_object(data.get("metadata"))}
    grading = an_object(data.get("gradingResult"))
    response = an_object(data.get("response"))
    context_name = next((v for v in CONTEXT_VARS if not is_blank(variables.get(v))), None)
    context = variables.get(context_name) if context_name else None
    listed = chunks(context, f"vars.{context_name}")
    scores: dict[str, float | None] = {}
    reasons: dict[str, Any] = {}
    named = an_object(data.get("namedScores")) or an_object(grading.get("namedScores"))
    for name, value in named.items():
        scores[str(name)] = verdict_number(value, f"namedScores.{name}")
    for i, component in enumerate(grading.get("componentResults") or []):
        assertion = an_object(an_object(component).get("assertion"))
        name = str(assertion.get("metric") or assertion.get("type") or f"assertion {i + 1}")
        if name not in scores:
            scores[name] = verdict_number(component.get("score"), f"gradingResult.componentResults[{i}].score")
        reasons[name] = {"pass": component.get("pass"), "reason": component.get("reason")}
    scores["pass"] = 1.0 if data.get("success") else 0.0
    question_name = next((v for v in QUESTION_VARS if not is_blank(variables.get(v))), None)
    provider = an_object(data.get("provider"))
    return {
        "id": id_in(metadata, variables),
        "_text": as_text(variables.get(question_name), f"vars.{question_name}", required=True)
        if question_name
        else None,
        "context": listed if listed is not None else (text_of(context, "vars.context", TEXT_KEYS) if context else ""),
        "answer": text_of(response.get("output") if response else "", "response.output", ANSWER_KEYS),
        "scores": scores,
        "promptfoo_assertions": reasons,
        "promptfoo_provider": provider.get("label") or provider.get("id"),
        **({"promptfoo_error": data["error"]} if not is_blank(data.get("error")) else {}),
    }
