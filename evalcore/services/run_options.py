"""A run import's options, checked before the file is read: the gain, k and the cut-offs as each format
implies them (a TREC run's linear gain and rr@k, MS MARCO's MRR@10, k=1 for files of scores alone), how a
TREC run is read, and the system config; and k inferred from the rows when none was given."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalcore.engine import ChunkMap

from ..models import EvalSetVersion
from ..selectors import version_by_ref
from .fields import FieldError, as_id, as_int, json_safe
from .importing import about_file
from .judge_configs import normalize_judge_config
from .names import check_name
from .problems import ImportFailed, ImportProblem, ProblemCollector
from .readers import detect_format, read_records
from .run_rows import k_inferred_note
from .trec import TIE_ORDERS

GAINS = ("exponential", "linear")
#: Runs read as trec_eval reads them (a ranked list a topic, linear gain by default, cut-offs).
RANKED_RUNS = ("trec-run", "msmarco-run")
#: Files of scores alone: no retrieval to cut, so k is 1.
SCORES_ONLY = ("langfuse-scores", "phoenix")
LINEAR_GAIN_NOTE = (
    " Note: nDCG uses exponential gain (2^g-1); trec_eval uses linear gain, so graded qrels give other"
    " numbers than trec_eval's (import with --gain linear to match it)."
)


@dataclass(frozen=True, kw_only=True)
class TrecOptions:
    """How a TREC run is read: the tie order (see :data:`.trec.TIE_ORDERS`) and whether run topics that are
    not in the eval set (the qrels) are skipped and counted, as trec_eval does, or refused."""

    ties: str = "docno-desc"
    skip_missing: bool = True


DEFAULT_TREC = TrecOptions()


@dataclass(frozen=True)
class RunOptions:
    """An import's options once checked: k and the cut-offs as the format sets them, the gain and its note."""

    trec: bool
    k: int | None
    cutoffs: list[int]
    gain: str
    gain_note: str
    trec_options: TrecOptions


def _refused(display: str, message: str) -> ImportFailed:
    return ImportFailed([ImportProblem(display, None, None, message)])


def _gain(display: str, gain: str | None, *, trec: bool) -> tuple[str, str]:
    """The gain (linear for TREC runs, as trec_eval's; exponential otherwise) and a note when a TREC run asks
    for exponential."""
    if gain is None:
        return ("linear" if trec else "exponential"), ""
    if gain not in GAINS:
        raise _refused(display, f"gain must be 'exponential' or 'linear', got {gain!r}")
    return gain, LINEAR_GAIN_NOTE if trec and gain == "exponential" else ""


def _positive(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int) and value >= 1


def _k_and_cutoffs(
    display: str, fmt: str, k: int | None, cutoffs: list[int] | None, *, trec: bool
) -> tuple[int | None, list[int]]:
    """k and the cut-offs as given, then as the format implies them."""
    cutoffs = sorted(set(cutoffs or []))
    if not all(_positive(c) for c in cutoffs):
        raise _refused(display, f"cut-offs must be positive integers, got {cutoffs!r}")
    if k is not None and not _positive(k):
        raise _refused(display, f"k must be a positive integer (chunks that reach the model), got {k!r}")
    if k is None and not cutoffs and fmt == "msmarco-run":
        cutoffs = [10]  # MS MARCO's official measure is MRR@10
    if k is None and cutoffs and trec:
        k = cutoffs[0]
    if trec and k is not None and k not in cutoffs:
        cutoffs = sorted({k, *cutoffs})  # a TREC run keeps rr@k beside rr, as trec_eval users compare them
    if k is None and fmt in SCORES_ONLY:
        k = 1
    return k, cutoffs


def run_options(
    *,
    display: str,
    fmt: str,
    k: int | None,
    cutoffs: list[int] | None,
    gain: str | None,
    ties: str,
    missing_topics: str,
) -> RunOptions:
    """Check the options and fill in what the format implies; a bad one is refused naming the file."""
    trec = fmt in RANKED_RUNS
    if ties not in TIE_ORDERS:
        raise _refused(display, f"ties must be one of {', '.join(TIE_ORDERS)}, got {ties!r}")
    if missing_topics not in ("skip", "fail"):
        raise _refused(display, f"missing_topics must be 'skip' or 'fail', got {missing_topics!r}")
    gain, gain_note = _gain(display, gain, trec=trec)
    k, cutoffs = _k_and_cutoffs(display, fmt, k, cutoffs, trec=trec)
    return RunOptions(trec, k, cutoffs, gain, gain_note, TrecOptions(ties=ties, skip_missing=missing_topics == "skip"))


def system_config_checked(system_config: dict[str, Any] | None) -> dict[str, Any]:
    """The system config as stored: a JSON object of JSON values."""
    if not isinstance(system_config or {}, dict):
        raise ImportFailed([ImportProblem("system config", None, None, "the system config must be a JSON object")])
    try:
        return json_safe(system_config or {})
    except FieldError as error:
        raise ImportFailed([ImportProblem("system config", None, error.field or None, error.message)]) from None


def inferred_k(display: str, fmt: str, widest: int) -> tuple[int, str]:
    """k from the widest context the rows hold, and the note that says so; none to infer it from is refused."""
    if widest == 0:
        raise _refused(
            display,
            "give k, the number of chunks that reach the model (--k): the rows have no context_ids to infer it from",
        )
    return widest, k_inferred_note(fmt, widest)


@dataclass(frozen=True)
class RunImportPlan:
    """A run import read and checked before its rows file is (the read step of :func:`.runs.run_import`): the
    format, name, eval set version, options, judge and system config, chunk map, and the source hash that makes
    the import idempotent (the rows file's hash and every option that changes what is stored)."""

    path: Path
    display: str
    fmt: str
    name: str
    description: str
    version: EvalSetVersion
    options: RunOptions
    judge: dict[str, Any] | None  # normalized, with its config_hash
    system: dict[str, Any]
    chunk_map: ChunkMap | None
    chunk_rows: list[dict[str, Any]]
    source_hash: str


def run_import_plan(
    *,
    path: Path,
    evalset: str,
    name: str,
    fmt: str | None = None,
    display_name: str | None = None,
    k: int | None = None,
    cutoffs: list[int] | None = None,
    gain: str | None = None,
    ties: str = "docno-desc",
    missing_topics: str = "skip",
    judge_config: dict[str, Any] | None = None,
    system_config: dict[str, Any] | None = None,
    chunks_path: Path | None = None,
    description: str = "",
) -> RunImportPlan:
    """Read and check everything but the rows (see :func:`.runs.run_import` for the arguments); a bad option,
    name, eval set, config or chunk map is refused naming the file."""
    display = display_name or path.name
    fmt = detect_format(path, fmt, door="run", display=display)
    about_file(display, lambda: check_name(name, what="run"))
    checked = run_options(
        display=display, fmt=fmt, k=k, cutoffs=cutoffs, gain=gain, ties=ties, missing_topics=missing_topics
    )
    trec, k, cutoffs, gain = checked.trec, checked.k, checked.cutoffs, checked.gain
    version = about_file(display, lambda: version_by_ref(evalset))
    judge = normalize_judge_config(judge_config) if judge_config else None
    system = system_config_checked(system_config)
    chunk_map, chunk_rows = read_chunk_map(chunks_path) if chunks_path else (None, [])

    options = {
        "version": version.pk,
        "format": fmt,
        "k": k,
        "gain": gain,
        **({"cutoffs": cutoffs} if cutoffs else {}),
        **({"ties": ties, "missing_topics": missing_topics} if trec else {}),
        "judge": judge and judge["config_hash"],
        "system": system,
        "chunks": _file_hash(chunks_path),
    }
    source_hash = hashlib.sha256((_file_hash(path) + json.dumps(options, sort_keys=True)).encode()).hexdigest()
    return RunImportPlan(
        path, display, fmt, name, description, version, checked, judge, system, chunk_map, chunk_rows, source_hash
    )


def read_chunk_map(path: Path, display: str | None = None) -> tuple[ChunkMap, list[dict[str, Any]]]:
    """Read a chunk map file (rows of id, doc, start, end) with line-numbered errors."""
    display = display or path.name
    fmt = detect_format(path)
    problems = ProblemCollector(display)
    chunks: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for record in read_records(path, fmt, display, problems=problems):
        data = record.data
        try:
            chunk_id = as_id(data.get("id", data.get("chunk_id")), "id")
            doc = as_id(data.get("doc"), "doc")
            start = as_int(data.get("start"), "start")
            end = as_int(data.get("end"), "end")
            if not 0 <= start < end:
                raise FieldError("end", f"need 0 <= start < end, got start={start}, end={end}")
        except FieldError as error:
            problems.add(record.line, error.field, error.message)
            continue
        if chunk_id in seen:
            problems.add(record.line, "id", f"chunk {chunk_id!r} appears twice (first on line {seen[chunk_id]})")
            continue
        seen[chunk_id] = record.line
        chunks.append({"chunk_id": chunk_id, "doc": doc, "start": start, "end": end})
    problems.raise_if_any()
    if not chunks:
        raise ImportFailed([ImportProblem(display, None, None, "the chunk map is empty")])
    return ChunkMap(chunks), chunks


def _file_hash(path: Path | None) -> str:
    if path is None:
        return ""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
