"""evalcore.engine: the pure evaluation engine (numpy, pandas, scipy; no Django).

Retrieval metrics, agreement between raters, standard errors and sample sizes, the paired
bootstrap and the non-inferiority release gate. Importable from plain Python:

>>> from evalcore.engine import recall_at_k, paired_bootstrap, gate
"""

from ._interval import Interval
from .agreement import (
    KAPPA_UNDEFINED_REASON,
    SUPPORTED,
    UNSUPPORTED,
    BinaryAgreement,
    KappaEstimate,
    UndefinedMetricWarning,
    binary_agreement,
    cohen_kappa,
    kappa_interval,
    kappa_standard_error,
)
from .bootstrap import BootstrapResult, paired_bootstrap, percentile_positions
from .proportions import (
    ProportionEstimate,
    detectable_difference,
    paired_sample_size,
    proportion_interval,
    proportion_se,
    z_score,
)
from .registry import RETRIEVAL_REGISTRY, RetrievalMetric
from .release_gate import (
    BLOCK,
    DEFAULT_MARGIN,
    PASS,
    REVIEW,
    STATUSES,
    GateDecision,
    GateReport,
    decide,
    gate,
    gate_frame,
    overall_status,
)
from .retrieval import (
    DEFAULT_RETRIEVAL_METRICS,
    GAINS,
    RETRIEVAL_METRICS,
    EncodedRetrieval,
    RetrievalSummary,
    encode_retrieval,
    is_retrieval_metric,
    metric_column,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    reciprocal_rank,
    retrieval_metric_names,
    score_encoded,
    score_retrieval,
    summarize_retrieval,
)
from .spans import Chunk, ChunkMap, Span, map_spans_to_chunks
from .stratified import StratifiedAgreement, stratified_agreement

__all__ = [
    "BLOCK",
    "BinaryAgreement",
    "BootstrapResult",
    "Chunk",
    "ChunkMap",
    "DEFAULT_MARGIN",
    "DEFAULT_RETRIEVAL_METRICS",
    "EncodedRetrieval",
    "GAINS",
    "GateDecision",
    "GateReport",
    "Interval",
    "KAPPA_UNDEFINED_REASON",
    "KappaEstimate",
    "PASS",
    "ProportionEstimate",
    "RETRIEVAL_METRICS",
    "RETRIEVAL_REGISTRY",
    "REVIEW",
    "RetrievalMetric",
    "RetrievalSummary",
    "STATUSES",
    "SUPPORTED",
    "Span",
    "StratifiedAgreement",
    "stratified_agreement",
    "UNSUPPORTED",
    "UndefinedMetricWarning",
    "binary_agreement",
    "cohen_kappa",
    "decide",
    "detectable_difference",
    "encode_retrieval",
    "gate",
    "gate_frame",
    "is_retrieval_metric",
    "kappa_interval",
    "kappa_standard_error",
    "map_spans_to_chunks",
    "metric_column",
    "ndcg_at_k",
    "overall_status",
    "paired_bootstrap",
    "paired_sample_size",
    "percentile_positions",
    "precision_at_k",
    "proportion_interval",
    "proportion_se",
    "recall_at_k",
    "reciprocal_rank",
    "retrieval_metric_names",
    "score_encoded",
    "score_retrieval",
    "summarize_retrieval",
    "z_score",
]
