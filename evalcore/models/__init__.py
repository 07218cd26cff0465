"""evalcore's models, one module per concept."""

from .evalsets import EvalSet, EvalSetVersion, FrozenError, Question
from .gates import Comparison, GateDecisionRecord
from .jobs import Job
from .runs import JudgeConfig, Row, Run, RunChunk

__all__ = [
    "Comparison",
    "EvalSet",
    "EvalSetVersion",
    "FrozenError",
    "GateDecisionRecord",
    "Job",
    "JudgeConfig",
    "Question",
    "Row",
    "Run",
    "RunChunk",
]
