"""evalcore's models, one module per concept."""

from .changes import ChangedRowsBlock, ChangedRowsOrder
from .evalsets import EvalSet, EvalSetVersion, FrozenError, Question
from .gates import Comparison, GateDecisionRecord
from .jobs import Job
from .judges import JudgeCall, JudgeConfig
from .runs import Row, Run, RunChunk, RunScoreTable

__all__ = [
    "ChangedRowsBlock",
    "ChangedRowsOrder",
    "Comparison",
    "EvalSet",
    "EvalSetVersion",
    "FrozenError",
    "GateDecisionRecord",
    "Job",
    "JudgeCall",
    "JudgeConfig",
    "Question",
    "Row",
    "Run",
    "RunChunk",
    "RunScoreTable",
]
