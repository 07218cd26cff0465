"""Judge configs: everything that can change a judge's verdicts, pinned once and shared by hash.

Two kinds of config, one table:

* **imported** with a run or with verdicts: a judge that ran elsewhere, described by model,
  model version, prompt, temperature, claim splitting and library versions (any other key is
  kept, and hashed, as ``extra``). Their hashes are computed exactly as before judges could run
  in the tool, so re-importing the same JSON finds the same config;
* **runnable** (the JSON names an ``endpoint_kind``): a judge the tool calls over an
  OpenAI-compatible endpoint. Everything that changes the output is pinned and hashed: the
  endpoint kind, model, system, claim-splitting and verdict prompts (templates, see
  :mod:`evalcore.judging.prompts`), few-shot examples (by reference to a disagreement export
  version, the examples themselves embedded in the hash), temperature, seed, max tokens and the
  structured output with its JSON schemas. Where the judge is reached (``base_url``), the name of
  the environment variable holding its API key (``api_key_env``), its limits and its price are
  kept outside the hash, and may change later. An API key in the JSON is refused: it is never
  stored, shown or exported.

A runnable config's hash is the legacy hash with the pinned new fields folded into ``extra``, so
the same content hashes the same whichever way it was stored.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, transaction

from ..judging.prompts import (
    CLAIM_FIELDS,
    CLAIMS_SCHEMA,
    DEFAULT_SYSTEM_PROMPT,
    VERDICT_FIELDS,
    VERDICT_SCHEMA,
    TemplateError,
    check_schema,
    check_template,
)
from ..models import JudgeConfig
from ..selectors import NotFound
from .fields import FieldError, as_dict, as_number, as_text, check_depth, checked_text, extra_fields, json_safe
from .names import check_name
from .problems import ImportFailed, ImportProblem, ProblemCollector, UserFacingError

JUDGE_FIELDS = {"model", "model_version", "prompt", "temperature", "claim_splitting", "library_versions"}
#: Pinned fields of runnable configs (hashed; folded into ``extra`` for the hash).
RUN_FIELDS = (
    "endpoint_kind",
    "system_prompt",
    "claim_prompt",
    "seed",
    "max_tokens",
    "structured_output",
    "claims_schema",
    "verdict_schema",
    "few_shot",
    "few_shot_examples",
)
#: Fields of runnable configs that change no verdict: stored beside the pinned ones, never hashed.
CONNECTION_KEYS = ("name", "base_url", "api_key_env", "limits", "price")
SECRET_KEYS = ("api_key", "apikey", "key", "openai_api_key", "authorization", "token", "secret")
LIMIT_KEYS = {
    "concurrency": (1, 512),
    "requests_per_minute": (1, None),
    "tokens_per_minute": (1, None),
    "timeout_seconds": (0.1, 3600),
    "max_retries": (0, 20),
}
PRICE_KEYS = ("input_per_1k", "output_per_1k")
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

FewShotResolver = Callable[[dict[str, Any]], tuple[dict[str, Any], list[dict[str, Any]]]]
_FEW_SHOT_SOURCES: list[FewShotResolver] = []


def register_few_shot_source(resolver: FewShotResolver) -> None:
    """Register who turns a few-shot reference into examples (the labelling app's disagreement exports)."""
    if resolver not in _FEW_SHOT_SOURCES:
        _FEW_SHOT_SOURCES.append(resolver)


def _config_hash(out: dict[str, Any]) -> str:
    payload = {key: out[key] for key in JUDGE_FIELDS}
    payload["prompt_hash"] = out["prompt_hash"]
    pinned = {key: out[key] for key in RUN_FIELDS if out.get(key) not in (None, "", {}, [])}
    payload["extra"] = {**out["extra"], **pinned}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def _legacy_fields(raw: dict[str, Any], problems: ProblemCollector) -> dict[str, Any]:
    out: dict[str, Any] = {}
    try:
        check_depth(raw)
        out["model"] = as_text(raw.get("model"), "model", required=True)
        out["model_version"] = as_text(raw.get("model_version"), "model_version")
        out["prompt"] = as_text(raw.get("prompt"), "prompt")
        out["temperature"] = as_number(raw.get("temperature"), "temperature")
        out["claim_splitting"] = as_text(raw.get("claim_splitting"), "claim_splitting")
        out["library_versions"] = {
            checked_text(str(k), "library_versions"): checked_text(str(v), f"library_versions.{k}")
            for k, v in as_dict(raw.get("library_versions"), "library_versions").items()
        }
    except FieldError as error:
        problems.add(None, error.field or None, error.message)
    return out


def normalize_judge_config(raw: dict[str, Any], display: str = "judge config") -> dict[str, Any]:
    """Validate a judge config: the model is required; everything that changes output is pinned.

    Returns the model's fields (never a name: names are given by :func:`judge_config_create`) with
    ``prompt_hash`` and ``config_hash``.
    """
    problems = ProblemCollector(display)
    if not isinstance(raw, dict):
        raise ImportFailed(
            [
                ImportProblem(
                    display,
                    None,
                    None,
                    "a judge config is a JSON object with model, model_version, prompt, temperature, claim_splitting, library_versions",
                )
            ]
        )
    if raw.get("endpoint_kind") not in (None, ""):
        return _normalize_runnable(raw, problems)
    out = _legacy_fields(raw, problems)
    try:
        out["extra"] = extra_fields(raw, JUDGE_FIELDS)
    except FieldError as error:
        problems.add(None, error.field or None, error.message)
    problems.raise_if_any()
    out["prompt_hash"] = hashlib.sha256(out["prompt"].encode()).hexdigest()
    out["config_hash"] = _config_hash(out)
    return out


def _normalize_runnable(raw: dict[str, Any], problems: ProblemCollector) -> dict[str, Any]:
    secrets = [k for k in raw if k.lower() in SECRET_KEYS]
    if secrets:
        problems.add(
            None,
            secrets[0],
            "never put an API key in a judge config: name the environment variable that holds it in api_key_env",
        )
        problems.raise_if_any()
    raw = dict(raw)
    if "verdict_prompt" in raw:
        verdict = raw.pop("verdict_prompt")
        if raw.get("prompt") not in (None, "", verdict):
            problems.add(None, "verdict_prompt", "give the verdict prompt once, as prompt or as verdict_prompt")
        raw["prompt"] = verdict
    out = _legacy_fields(raw, problems)
    kind = raw.get("endpoint_kind")
    if kind not in JudgeConfig.EndpointKind.values:
        problems.add(
            None, "endpoint_kind", f"must be one of {', '.join(JudgeConfig.EndpointKind.values)}, got {kind!r}"
        )
    out["endpoint_kind"] = kind
    try:
        out["system_prompt"] = (
            DEFAULT_SYSTEM_PROMPT
            if raw.get("system_prompt") is None
            else as_text(raw["system_prompt"], "system_prompt")
        )
        out["claim_prompt"] = as_text(raw.get("claim_prompt"), "claim_prompt")
        out["seed"] = _int(raw.get("seed"), "seed", minimum=None)
        out["max_tokens"] = _int(raw.get("max_tokens"), "max_tokens", minimum=1)
        out["base_url"] = as_text(raw.get("base_url"), "base_url")
        out["api_key_env"] = as_text(raw.get("api_key_env"), "api_key_env")
        out["limits"] = _limits(raw.get("limits"))
        out["price"] = _price(raw.get("price"))
    except FieldError as error:
        problems.add(None, error.field, error.message)
    structured = raw.get("structured_output", JudgeConfig.StructuredOutput.JSON_SCHEMA)
    if structured not in JudgeConfig.StructuredOutput.values:
        problems.add(
            None,
            "structured_output",
            f"must be one of {', '.join(JudgeConfig.StructuredOutput.values)}, got {structured!r}",
        )
    out["structured_output"] = structured
    if out.get("base_url") and not re.match(r"^https?://", out["base_url"]):
        problems.add(None, "base_url", f"must start with http:// or https://, got {out['base_url']!r}")
    if out.get("api_key_env") and not ENV_NAME.match(out["api_key_env"]):
        problems.add(None, "api_key_env", "must be the NAME of an environment variable (letters, digits, _), not a key")
    for field, template, allowed, required in (
        ("prompt", out.get("prompt", ""), VERDICT_FIELDS, ("context", "claim")),
        ("claim_prompt", out.get("claim_prompt", ""), CLAIM_FIELDS, ("answer",)),
    ):
        if field == "prompt" and not template:
            problems.add(None, "prompt", "a runnable judge needs a verdict prompt (prompt or verdict_prompt)")
            continue
        if template:
            try:
                check_template(
                    template,
                    what="verdict prompt" if field == "prompt" else "claim prompt",
                    allowed=allowed,
                    required=required,
                )
            except TemplateError as error:
                problems.add(None, field, str(error))
    for field, default, requires in (
        ("claims_schema", CLAIMS_SCHEMA, "claims"),
        ("verdict_schema", VERDICT_SCHEMA, "supported"),
    ):
        schema = raw.get(field) if raw.get(field) is not None else default
        try:
            check_schema(schema, what=field, requires=requires)
        except TemplateError as error:
            problems.add(None, field, str(error))
        out[field] = json_safe(schema)
    out["few_shot"], out["few_shot_examples"] = _few_shot(raw, problems)
    problems.raise_if_any()
    known = JUDGE_FIELDS | set(RUN_FIELDS) | set(CONNECTION_KEYS)
    try:
        out["extra"] = extra_fields(raw, known)
    except FieldError as error:
        problems.add(None, error.field or None, error.message)
    out["prompt_hash"] = hashlib.sha256(out["prompt"].encode()).hexdigest()
    out["config_hash"] = _config_hash(out)
    return out


def _int(value: Any, field: str, *, minimum: int | None) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or (minimum is not None and value < minimum):
        raise FieldError(field, f"must be a whole number{f' of at least {minimum}' if minimum else ''}, got {value!r}")
    return value


def _limits(raw: Any) -> dict[str, Any]:
    limits = as_dict(raw, "limits")
    unknown = sorted(set(limits) - set(LIMIT_KEYS))
    if unknown:
        raise FieldError("limits", f"unknown {', '.join(unknown)}; the limits are {', '.join(LIMIT_KEYS)}")
    out = {}
    for key, value in limits.items():
        low, high = LIMIT_KEYS[key]
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value < low or (high and value > high):
            raise FieldError(
                f"limits.{key}", f"must be a number from {low}{f' to {high}' if high else ' up'}, got {value!r}"
            )
        out[key] = int(value) if key in ("concurrency", "max_retries") else float(value)
    return out


def _price(raw: Any) -> dict[str, float]:
    price = as_dict(raw, "price")
    unknown = sorted(set(price) - set(PRICE_KEYS))
    if unknown:
        raise FieldError(
            "price", f"unknown {', '.join(unknown)}; give input_per_1k and output_per_1k (per 1,000 tokens)"
        )
    out = {}
    for key, value in price.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise FieldError(f"price.{key}", f"must be a price of 0 or more per 1,000 tokens, got {value!r}")
        out[key] = float(value)
    return out


def _few_shot(raw: dict[str, Any], problems: ProblemCollector) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    reference, given = raw.get("few_shot"), raw.get("few_shot_examples")
    examples: list[dict[str, Any]] = []
    resolved: dict[str, Any] = {}
    if reference not in (None, {}):
        if not isinstance(reference, dict) or "campaign" not in reference or "export" not in reference:
            problems.add(None, "few_shot", 'give {"campaign": NAME, "export": VERSION}: a disagreement export version')
            return {}, []
        if not _FEW_SHOT_SOURCES:
            problems.add(None, "few_shot", "few-shot examples come from the labelling app, which is not installed")
            return {}, []
        try:
            resolved, examples = _FEW_SHOT_SOURCES[0](
                {"campaign": reference["campaign"], "export": reference["export"]}
            )
        except UserFacingError as error:
            problems.add(None, "few_shot", str(error))
            return {}, []
        if given not in (None, []) and json_safe(given) != examples:
            problems.add(
                None, "few_shot_examples", f"differ from export v{reference['export']}'s; give one or the other"
            )
        return resolved, examples
    if given in (None, []):
        return {}, []
    if not isinstance(given, list) or not all(
        isinstance(e, dict) and isinstance(e.get("supported"), bool) and (e.get("claim") or e.get("answer"))
        for e in given
    ):
        problems.add(
            None,
            "few_shot_examples",
            "each example is an object with question, context, claim (or answer) and supported",
        )
        return {}, []
    return {}, json_safe(given)


def judge_config_get_or_create(config: dict[str, Any]) -> JudgeConfig:
    """Return the stored judge config with this content (``normalize_judge_config``'s output), storing it once."""
    try:
        with transaction.atomic():
            return JudgeConfig.objects.get_or_create(config_hash=config["config_hash"], defaults=config)[0]
    except IntegrityError:
        return JudgeConfig.objects.get(config_hash=config["config_hash"])


@dataclass(frozen=True)
class JudgeConfigResult:
    config: JudgeConfig
    created: bool
    message: str


def judge_config_create(
    *, raw: dict[str, Any], name: str | None = None, user: Any = None, display: str = "judge config"
) -> JudgeConfigResult:
    """Create a named, runnable judge config from its JSON; or update where an existing one is reached.

    The same name with the same pinned content updates what changes no verdict (base URL, key
    variable, limits, price). The same name with other content is refused: a changed judge is a
    new config. Content already pinned without a name (imported with a run) gets the name.
    """
    if not isinstance(raw, dict):
        raise ImportFailed([ImportProblem(display, None, None, "a judge config is a JSON object")])
    name = name or raw.get("name")
    if not isinstance(name, str) or not name:
        raise ImportFailed([ImportProblem(display, None, "name", "give the config a name (letters, digits, - and _)")])
    check_name(name, what="judge config")
    if raw.get("endpoint_kind") in (None, ""):
        raise ImportFailed(
            [
                ImportProblem(
                    display,
                    None,
                    "endpoint_kind",
                    f"a config created here is one the tool can run: give endpoint_kind ({', '.join(JudgeConfig.EndpointKind.values)}). "
                    "A judge that ran elsewhere is described with its run (import_run --judge-config)",
                )
            ]
        )
    fields = normalize_judge_config(raw, display)
    connection = {k: fields.pop(k) for k in ("base_url", "api_key_env", "limits", "price")}
    with transaction.atomic():
        named = JudgeConfig.objects.select_for_update().filter(name=name).first()
        same = JudgeConfig.objects.select_for_update().filter(config_hash=fields["config_hash"]).first()
        if named is not None and named.config_hash != fields["config_hash"]:
            raise UserFacingError(
                f"judge config {name!r} is pinned with other content (hash {named.config_hash[:12]}): a changed judge "
                f"is a new config, so give it a new name"
            )
        if same is not None and same.name and same.name != name:
            raise UserFacingError(f"this judge is already pinned as {same.name!r}; use that name")
        if same is not None:
            changed = {k: v for k, v in connection.items() if getattr(same, k) != v}
            adopt = same.name != name
            for key, value in {**connection, "name": name}.items():
                setattr(same, key, value)
            if changed or adopt:
                same.save(update_fields=[*changed, *(["name"] if adopt else [])])
            what = "named it" if adopt else ("updated " + ", ".join(changed) if changed else "nothing changed")
            return JudgeConfigResult(same, False, f"Judge config {name!r} exists with this content ({what}).")
        config = JudgeConfig.objects.create(
            **fields, **connection, name=name, created_by=user if getattr(user, "pk", None) else None
        )
    return JudgeConfigResult(config, True, f"Created judge config {name!r} (hash {config.config_hash[:12]}).")


def judge_config_named(ref: str) -> JudgeConfig:
    """The judge config named ``ref`` (or ``#ID``, or a hash prefix of 8+ characters, bare or as the
    ``judge-<hash>`` label an unnamed config is listed under); NotFound otherwise."""
    configs = JudgeConfig.objects.all()
    found = None
    if ref.startswith("#") and ref[1:].isdigit():
        found = configs.filter(pk=int(ref[1:])).first()
    else:
        found = configs.filter(name=ref).first()
        prefix = ref.removeprefix("judge-")
        if found is None and len(prefix) >= 8 and re.fullmatch(r"[0-9a-f]+", prefix):
            matches = list(configs.filter(config_hash__startswith=prefix)[:2])
            found = matches[0] if len(matches) == 1 else None
    if found is None:
        raise NotFound(
            f"there is no judge config {ref!r}; create one with judge_config create FILE or list them at /judges/"
        )
    return found


def judge_config_as_dict(config: JudgeConfig) -> dict[str, Any]:
    """The config as its JSON (what ``judge_config create`` takes back), with its hash; never an API key."""
    data: dict[str, Any] = {"name": config.name, "config_hash": config.config_hash, "prompt_hash": config.prompt_hash}
    for key in sorted(JUDGE_FIELDS):
        data[key] = getattr(config, key)
    if config.endpoint_kind:
        for key in RUN_FIELDS:
            data[key] = getattr(config, key)
        for key in ("base_url", "api_key_env", "limits", "price"):
            data[key] = getattr(config, key)
    data.update(config.extra or {})
    data["runnable"] = config.runnable
    return data


def derived_config(base: JudgeConfig, changes: dict[str, Any]) -> dict[str, Any]:
    """The JSON of ``base`` with ``changes`` applied (few-shot examples by reference, resolved again)."""
    raw = {k: v for k, v in judge_config_as_dict(base).items() if k not in ("config_hash", "prompt_hash", "runnable")}
    if raw.get("few_shot"):
        raw["few_shot"] = {"campaign": raw["few_shot"]["campaign"], "export": raw["few_shot"]["export"]}
        raw.pop("few_shot_examples", None)
    if "few_shot" in changes:
        raw.pop("few_shot_examples", None)
    raw.update(changes)
    return raw


def judge_config_derived(
    *, base: JudgeConfig, name: str, changes: dict[str, Any], user: Any = None
) -> JudgeConfigResult:
    """A new runnable config: ``base`` with ``changes`` (a tuned prompt, few-shot examples), under ``name``."""
    raw = {**derived_config(base, changes), "name": name}
    return judge_config_create(raw=raw, user=user, display=f"judge config {name}")
