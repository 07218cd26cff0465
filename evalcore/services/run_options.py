"""A run import's options, checked before the file is read: the gain, k and the cut-offs as each format
implies them (a TREC run's linear gain and rr@k, MS MARCO's MRR@10, k=1 for files of scores alone), how a
TREC run is read, and the system config; and k inferred from the rows when none was given."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .fields import FieldError, json_safe
from .problems import ImportFailed, ImportProblem
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
