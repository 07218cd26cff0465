"""Label exports of other tools (Label Studio, Argilla, Langfuse), read as our own label lines.

Each tool record becomes zero or more lines of our label format (``question_id`` or the question's
text, ``claim_index``, ``label``, ``annotator``, ``rationale``), so one import service checks and
writes them all. What a tool marks as not a finished label (Label Studio's cancelled annotations
and drafts, Argilla's draft and discarded responses, Langfuse scores that are not annotations) is
skipped and counted, never imported. Tool user ids (Label Studio's numbers, Argilla's UUIDs) are
named through a users table (a file, or the names the export itself carries); an id that no
table names is refused, so annotators never become "11" and "12".
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalcore.services.fields import FieldError, as_id, as_list, is_blank, object_in_text
from evalcore.services.problems import ProblemCollector
from evalcore.services.readers import Record, container_of, read_records
from evalcore.services.tools.phoenix import result as phoenix_result

MATCHES = ("auto", "id", "text")
#: What import_labels reads: our label lines (CSV, JSON Lines or a JSON array) and the tools' exports.
LABEL_FORMATS = ("csv", "jsonl", "json", "label-studio", "argilla", "langfuse-scores", "phoenix")
#: Fields a task's or record's data may name its question by, in order of preference.
ID_FIELDS = ("question_id", "qid")
TEXT_FIELDS = ("question", "user_input", "input", "query", "text")
#: Label Studio JSON_MIN/CSV columns that are about the annotation, never the label.
_LS_META = {"id", "annotator", "annotation_id", "created_at", "updated_at", "lead_time", "agreement", "rationale"}


class WholeFileError(FieldError):
    """A problem of the export as a whole (a missing option), not of one line: reported once."""


@dataclass(frozen=True, kw_only=True)
class LabelSource:
    """How a tool's export is read: the label field (a Label Studio control tag, an Argilla question, a
    Langfuse score name), how its values map to ours, who its user ids are, how items are matched."""

    label_field: str | None = None
    value_map: dict[str, str] = field(default_factory=dict)
    users: dict[str, str] = field(default_factory=dict)
    match: str = "auto"  # "id", "text" or "auto" (an id field when the record has one, else the text)
    id_field: str | None = None


def read_users(path: Path, display: str | None = None) -> dict[str, str]:
    """A users table: records with ``id`` and a name (``username``, ``email`` or ``name``), as Label Studio's
    ``/api/users`` and Argilla's ``client.users`` list them, or a two-column CSV ``id,name``."""
    name = display or path.name
    problems = ProblemCollector(name)
    users: dict[str, str] = {}
    for record in read_records(path, container_of(path), name, problems=problems):
        data = record.data
        try:
            user_id = as_id(data.get("id", data.get("user_id")), "id")
        except FieldError as error:
            problems.add(record.line, error.field, error.message)
            continue
        named = next((data[k] for k in ("username", "name", "email") if not is_blank(data.get(k))), None)
        if named is None:
            problems.add(record.line, "username", "give the user's name (username, name or email)")
            continue
        users[user_id] = str(named).strip()
    problems.raise_if_any()
    return users


def label_records(
    records: Iterable[Record], fmt: str, source: LabelSource, problems: ProblemCollector, skipped: Counter
) -> Iterator[Record]:
    """Our label lines from a tool's records; a record that cannot be read is a problem on its line."""
    read = {"label-studio": _label_studio, "argilla": _argilla, "langfuse-scores": _langfuse, "phoenix": _phoenix}[fmt]
    for record in records:
        try:
            lines = list(read(record.data, source, skipped))
        except WholeFileError as error:  # every line would say the same: said once, on the first
            problems.add(record.line, error.field, error.message)
            return
        except FieldError as error:
            problems.add(record.line, error.field, error.message)
            continue
        for data in lines:
            yield Record(record.line, data)


def _item(fields: dict[str, Any], source: LabelSource, *, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The item a record names: ``question_id`` (by id) or ``_text`` (by the question's text), and ``claim_index``."""
    places = [fields, extra or {}]
    key: dict[str, Any] = {}
    ids = (source.id_field,) if source.id_field else ID_FIELDS
    if source.match in ("id", "auto"):
        found = next((place[f] for f in ids for place in places if not is_blank(place.get(f))), None)
        if found is not None:
            key["question_id"] = found
        elif source.match == "id":
            raise FieldError(ids[0], f"names no question id (looked for {', '.join(ids)}); or match by text")
    if not key:
        text = next((place[f] for f in TEXT_FIELDS for place in places if isinstance(place.get(f), str)), None)
        if text is None:
            raise FieldError(
                "data", f"names no question: give its id ({', '.join(ids)}) or its text ({', '.join(TEXT_FIELDS)})"
            )
        key["_text"] = text
    claim = next((place["claim_index"] for place in places if not is_blank(place.get("claim_index"))), None)
    if claim is not None:
        key["claim_index"] = claim
    return key


def _user(raw: Any, source: LabelSource, tool: str) -> str:
    """The annotator's name: from the users table, or the export's own user object; a bare id is refused."""
    if isinstance(raw, dict):
        user_id = raw.get("id")
        if user_id is not None and str(user_id) in source.users:
            return source.users[str(user_id)]
        named = next((raw[k] for k in ("username", "email") if not is_blank(raw.get(k))), None)
        if named is not None:
            return str(named)
        raw = user_id
    if is_blank(raw):
        raise FieldError("annotator", "is missing")
    if str(raw) in source.users:
        return source.users[str(raw)]
    text = str(raw).strip()
    if isinstance(raw, int) or text.isdigit() or _is_uuid(text):
        raise FieldError(
            "annotator",
            f"{text!r} is a {tool} user id, not a name; give a users table (--users FILE with id and username, "
            "as the tool lists its users) so labels keep who made them",
        )
    return text


def _is_uuid(text: str) -> bool:
    import uuid

    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


def _one_choice(value: Any, where: str) -> str | None:
    """A single choice from a cell: text, ``{"choices": [...]}`` or a list of one."""
    value = object_in_text(value)
    if isinstance(value, dict):
        value = value.get("choices", value.get("labels"))
    if isinstance(value, (list, tuple)):
        if len(value) > 1:
            raise FieldError(where, f"holds several choices {list(value)!r}; a label is one choice")
        value = value[0] if value else None
    if is_blank(value):
        return None
    return str(value)


# ----------------------------------------------------------------------------------------------
# Label Studio
# ----------------------------------------------------------------------------------------------


def _label_studio(data: dict[str, Any], source: LabelSource, skipped: Counter) -> Iterator[dict[str, Any]]:
    if "annotations" not in data:
        yield from _label_studio_min(data, source, skipped)
        return
    task = data.get("data") if isinstance(data.get("data"), dict) else {}
    key = _item(task, source, extra=data.get("meta") if isinstance(data.get("meta"), dict) else None)
    skipped["draft"] += len(data.get("drafts") or [])
    for annotation in as_list(data.get("annotations"), "annotations"):
        if not isinstance(annotation, dict):
            raise FieldError("annotations", "each annotation must be an object")
        if annotation.get("was_cancelled"):
            skipped["cancelled"] += 1
            continue
        label, rationale = _ls_result(annotation.get("result") or [], source)
        if label is None:
            skipped["no label"] += 1
            continue
        yield {
            **key,
            "label": label,
            "annotator": _user(annotation.get("completed_by"), source, "Label Studio"),
            "rationale": rationale,
        }


def _ls_result(results: list[Any], source: LabelSource) -> tuple[str | None, str]:
    """The choice of the label control (``from_name``) and the text of a textarea, from an annotation's result."""
    choices = [
        r for r in results if isinstance(r, dict) and isinstance(r.get("value"), dict) and "choices" in r["value"]
    ]
    names = sorted({str(r.get("from_name")) for r in choices})
    if source.label_field:
        choices = [r for r in choices if r.get("from_name") == source.label_field]
    elif len(names) > 1:
        raise FieldError("result", f"has several choice controls {names}; name the label's with --label-field")
    label = _one_choice(choices[0]["value"]["choices"], f"result.{choices[0].get('from_name')}") if choices else None
    texts = [
        r["value"]["text"]
        for r in results
        if isinstance(r, dict) and isinstance(r.get("value"), dict) and r["value"].get("text")
    ]
    rationale = " ".join(t if isinstance(t, str) else " ".join(map(str, t)) for t in texts[:1])
    return label, rationale


def _label_studio_min(data: dict[str, Any], source: LabelSource, skipped: Counter) -> Iterator[dict[str, Any]]:
    """JSON_MIN and CSV: one annotation a record, the label in a column named after the control tag."""
    field_name = source.label_field or ("label" if "label" in data else None)
    if field_name is None:
        candidates = sorted(k for k in data if k not in _LS_META and k not in ID_FIELDS + TEXT_FIELDS)
        raise WholeFileError(
            "label", f"no 'label' column; name the control tag's column with --label-field ({candidates})"
        )
    if field_name not in data:
        raise WholeFileError(field_name, "is not a column of the export")
    label = _one_choice(data.get(field_name), field_name)
    if label is None:
        skipped["no label"] += 1
        return
    yield {
        **_item(data, source),
        "label": label,
        "annotator": _user(data.get("annotator"), source, "Label Studio"),
        "rationale": data.get("rationale") or "",
    }


# ----------------------------------------------------------------------------------------------
# Argilla
# ----------------------------------------------------------------------------------------------


def _argilla(data: dict[str, Any], source: LabelSource, skipped: Counter) -> Iterator[dict[str, Any]]:
    """An Argilla 2.x record: ``responses`` by question (``{"label": [{value, user_id, status}]}``), or flattened
    into parallel lists (``label.responses``, ``label.responses.users``, ``label.responses.status``)."""
    fields = data.get("fields") if isinstance(data.get("fields"), dict) else data
    key = _item(fields, source, extra=data.get("metadata") if isinstance(data.get("metadata"), dict) else None)
    responses = _argilla_responses(data)
    if not responses:
        skipped["no response"] += 1
        return
    name = source.label_field
    if name is None:
        questions = [q for q in responses if q != "rationale"]
        if len(questions) != 1:
            raise FieldError(
                "responses", f"answer several questions {sorted(questions)}; name the label's with --label-field"
            )
        name = questions[0]
    rationales = {r["user_id"]: r["value"] for r in responses.get("rationale", []) if r.get("status") == "submitted"}
    for response in responses.get(name, []):
        status = str(response.get("status") or "submitted")
        if status != "submitted":
            skipped[status] += 1
            continue
        label = _one_choice(response.get("value"), f"{name}.responses")
        if label is None:
            skipped["no label"] += 1
            continue
        yield {
            **key,
            "label": label,
            "annotator": _user(response.get("user_id"), source, "Argilla"),
            "rationale": rationales.get(response.get("user_id")) or "",
        }


def _argilla_responses(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    if isinstance(data.get("responses"), dict):
        out = {
            str(question): [r for r in as_list(items, f"responses.{question}") if isinstance(r, dict)]
            for question, items in data["responses"].items()
        }
        if any("status" not in r for items in out.values() for r in items):
            raise FieldError(
                "responses",
                "carry no status (Argilla's nested export, records.to_json, drops it, so drafts would pass as "
                "labels); export them flattened: json.dump(dataset.records.to_list(flatten=True), file)",
            )
        return out
    out: dict[str, list[dict[str, Any]]] = {}
    for column in data:
        if not str(column).endswith(".responses"):
            continue
        question = str(column)[: -len(".responses")]
        values = as_list(data[column], column)
        users = as_list(data.get(f"{column}.users"), f"{column}.users")
        if values and f"{column}.status" not in data:
            raise FieldError(
                f"{column}.status", "is missing: without each response's status drafts would pass as labels"
            )
        statuses = as_list(data.get(f"{column}.status"), f"{column}.status")
        if not (len(values) == len(users) == len(statuses)):
            raise FieldError(
                column,
                f"lists {len(values)} responses, {len(users)} users and {len(statuses)} statuses: they must match",
            )
        out[question] = [{"value": v, "user_id": u, "status": s} for v, u, s in zip(values, users, statuses)]
    return out


# ----------------------------------------------------------------------------------------------
# Langfuse
# ----------------------------------------------------------------------------------------------


def _langfuse(data: dict[str, Any], source: LabelSource, skipped: Counter) -> Iterator[dict[str, Any]]:
    """A Langfuse score: an ANNOTATION (a person's) becomes a label; EVAL and API scores (a judge's or a
    program's) are not labels and are counted as skipped. The item is named in the score's metadata
    (``question_id``, or the question's text)."""
    if str(data.get("source") or "").upper() != "ANNOTATION":
        skipped[f"{str(data.get('source') or 'unknown').lower()} score"] += 1
        return
    if source.label_field and data.get("name") != source.label_field:
        skipped["other score"] += 1
        return
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    value = data.get("stringValue") if not is_blank(data.get("stringValue")) else data.get("value")
    if str(data.get("dataType") or "").upper() == "BOOLEAN" and not isinstance(value, str):
        value = "supported" if value in (1, 1.0, True) else "unsupported"
    label = _one_choice(value, "value")
    if label is None:
        skipped["no label"] += 1
        return
    yield {
        **_item(metadata, source),
        "label": label,
        "annotator": _user(data.get("authorUserId"), source, "Langfuse"),
        "rationale": data.get("comment") or "",
    }


# ----------------------------------------------------------------------------------------------
# Phoenix
# ----------------------------------------------------------------------------------------------


def _phoenix(data: dict[str, Any], source: LabelSource, skipped: Counter) -> Iterator[dict[str, Any]]:
    """A Phoenix span annotation: a HUMAN one becomes a label (``result.label``, by ``user_id`` or its
    ``identifier``); LLM and CODE annotations are a judge's or a program's, counted as skipped. The item is
    named by the annotated span's metadata (``question_id``) or input (the question's text), joined in from
    the spans dataframe."""
    kind = str(data.get("annotator_kind") or "").upper()
    if kind != "HUMAN":
        skipped[f"{kind.lower() or 'unknown'} annotation"] += 1
        return
    if source.label_field and data.get("annotation_name") != source.label_field:
        skipped["other annotation"] += 1
        return
    metadata = object_in_text(data.get("attributes.metadata"))
    fields = {**(metadata if isinstance(metadata, dict) else {})}
    text = data.get("attributes.input.value")
    if isinstance(text, str):
        fields.setdefault("question", text)
    label = _one_choice(phoenix_result(data, "label"), "result.label")
    if label is None:
        skipped["no label"] += 1
        return
    user = data.get("user_id") if not is_blank(data.get("user_id")) else data.get("identifier")
    explanation = phoenix_result(data, "explanation")
    yield {
        **_item(fields, source),
        "label": label,
        "annotator": _user(user, source, "Phoenix"),
        "rationale": "" if is_blank(explanation) else str(explanation),
    }
