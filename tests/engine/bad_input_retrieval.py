"""Bad input to the retrieval metrics and the batch scorer: the call, the error and the message it must give."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from evalcore import engine as e

R = ["a", "b"]
G = {"a", "c"}

CASES = [
    # ---- per-question retrieval metrics: k ----
    ("recall k=0", lambda: e.recall_at_k(R, G, 0), ValueError, r"^k must be a positive integer, got 0"),
    ("recall k<0", lambda: e.recall_at_k(R, G, -3), ValueError, r"^k must be a positive integer, got -3"),
    ("recall k=True", lambda: e.recall_at_k(R, G, True), ValueError, r"^k must be an integer, got True \(bool\)"),
    ("recall k=2.0", lambda: e.recall_at_k(R, G, 2.0), ValueError, r"^k must be an integer, got 2.0 \(float\)"),
    ("recall k=None", lambda: e.recall_at_k(R, G, None), ValueError, r"^k must be an integer"),
    ("precision k=0", lambda: e.precision_at_k(R, G, 0), ValueError, r"^k must be a positive integer"),
    ("precision k=True", lambda: e.precision_at_k(R, G, True), ValueError, r"^k must be an integer"),
    ("ndcg k=0", lambda: e.ndcg_at_k(R, {"a": 1}, 0), ValueError, r"^k must be a positive integer"),
    ("ndcg k=False", lambda: e.ndcg_at_k(R, {"a": 1}, False), ValueError, r"^k must be an integer"),
    ("rr k=0", lambda: e.reciprocal_rank(R, G, k=0), ValueError, r"^k must be a positive integer"),
    ("rr k=True", lambda: e.reciprocal_rank(R, G, k=True), ValueError, r"^k must be an integer"),
    # ---- ranked and gold ----
    (
        "recall ranked str",
        lambda: e.recall_at_k("abc", G, 2),
        TypeError,
        r"^ranked must be a list of ids in rank order, got a string 'abc'",
    ),
    ("precision ranked str", lambda: e.precision_at_k("abc", G, 2), TypeError, r"^ranked must be a list of ids"),
    ("rr ranked str", lambda: e.reciprocal_rank("abc", G), TypeError, r"^ranked must be a list of ids"),
    ("ndcg ranked str", lambda: e.ndcg_at_k("abc", {"a": 1}, 2), TypeError, r"^ranked must be a list of ids"),
    (
        "recall ranked set",
        lambda: e.recall_at_k({"a", "b"}, G, 2),
        TypeError,
        r"^ranked must be an ordered sequence .* got set",
    ),
    (
        "recall ranked dict",
        lambda: e.recall_at_k({"a": 1}, G, 2),
        TypeError,
        r"^ranked must be an ordered sequence .* got dict",
    ),
    ("recall ranked None", lambda: e.recall_at_k(None, G, 2), TypeError, r"^ranked must be an ordered sequence"),
    (
        "recall gold str",
        lambda: e.recall_at_k(R, "a", 2),
        TypeError,
        r"^gold must be a set of ids or a mapping id -> grade, got a string 'a'",
    ),
    ("precision gold str", lambda: e.precision_at_k(R, "a", 2), TypeError, r"^gold must be a set of ids"),
    ("rr gold str", lambda: e.reciprocal_rank(R, "a"), TypeError, r"^gold must be a set of ids"),
    ("ndcg grades str", lambda: e.ndcg_at_k(R, "a", 2), TypeError, r"^grades must be a set of ids or a mapping"),
    (
        "recall gold int",
        lambda: e.recall_at_k(R, 5, 2),
        TypeError,
        r"^gold must be a set of ids or a mapping id -> grade, got int",
    ),
    (
        "recall grade NaN",
        lambda: e.recall_at_k(R, {"a": math.nan}, 2),
        ValueError,
        r"^gold: the grade of 'a' must be finite, got nan",
    ),
    (
        "recall grade inf",
        lambda: e.recall_at_k(R, {"a": math.inf}, 2),
        ValueError,
        r"^gold: the grade of 'a' must be finite",
    ),
    (
        "recall grade str",
        lambda: e.recall_at_k(R, {"a": "3"}, 2),
        ValueError,
        r"^gold: the grade of 'a' must be a number, got '3'",
    ),
    (
        "recall grade bool",
        lambda: e.recall_at_k(R, {"a": True}, 2),
        ValueError,
        r"^gold: the grade of 'a' must be a number, got True",
    ),
    (
        "ndcg grade None",
        lambda: e.ndcg_at_k(R, {"a": None}, 2),
        ValueError,
        r"^grades: the grade of 'a' must be a number",
    ),
    (
        "ndcg gain",
        lambda: e.ndcg_at_k(R, {"a": 1}, 2, gain="log"),
        ValueError,
        r"^gain must be one of \('exponential', 'linear'\), got 'log'",
    ),
    # ---- batch scorer ----
    (
        "score lengths",
        lambda: e.score_retrieval([R, R], [G], 2),
        ValueError,
        r"^ranked and gold must have one entry per question, got 2 and 1",
    ),
    (
        "score ranked item str",
        lambda: e.score_retrieval([R, "ab"], [G, G], 2),
        TypeError,
        r"^ranked\[1\] must be a list of ids in rank order, got a string",
    ),
    (
        "score ranked item set",
        lambda: e.score_retrieval([{"a"}], [G], 2),
        TypeError,
        r"^ranked\[0\] must be an ordered sequence",
    ),
    (
        "score ranked item int",
        lambda: e.score_retrieval([R, 5], [G, G], 2),
        TypeError,
        r"^ranked\[1\] must be a list of ids, got int",
    ),
    (
        "score gold item str",
        lambda: e.score_retrieval([R], ["a"], 2),
        TypeError,
        r"^gold\[0\] must be a set of ids or a mapping",
    ),
    (
        "score gold item int",
        lambda: e.score_retrieval([R], [5], 2),
        TypeError,
        r"^gold\[0\] must be a set of ids or a mapping id -> grade, got int",
    ),
    (
        "score grade str",
        lambda: e.score_retrieval([R], [{"a": "x"}], 2),
        ValueError,
        r"^gold\[0\]: the grade of 'a' must be a number, got 'x'",
    ),
    (
        "score grade inf",
        lambda: e.score_retrieval([R, R], [G, {"c": math.inf}], 2),
        ValueError,
        r"^gold\[1\]: grade of 'c' must be finite, got inf",
    ),
    (
        "score grade NaN",
        lambda: e.score_retrieval([R], [{"a": math.nan}], 2),
        ValueError,
        r"^gold\[0\]: grade of 'a' must be finite",
    ),
    ("score k=0", lambda: e.score_retrieval([R], [G], 0), ValueError, r"^k must be a positive integer, got 0"),
    (
        "score k=True",
        lambda: e.score_retrieval([R], [G], True),
        ValueError,
        r"^k must be an integer or one integer per question \(1\)",
    ),
    (
        "score k shape",
        lambda: e.score_retrieval([R], [G], [1, 2]),
        ValueError,
        r"^k must be an integer or one integer per question \(1\), got shape \(2,\)",
    ),
    ("score k fractional", lambda: e.score_retrieval([R], [G], [1.5]), ValueError, r"^k must hold integers"),
    ("score k NaN", lambda: e.score_retrieval([R], [G], [math.nan]), ValueError, r"^k must hold integers"),
    ("score k bools", lambda: e.score_retrieval([R], [G], [True]), ValueError, r"^k must hold integers"),
    (
        "score k negative",
        lambda: e.score_retrieval([R, R], [G, G], [1, -1]),
        ValueError,
        r"^k must be 0 or more for every question, got -1 at position 1",
    ),
    (
        "score metric",
        lambda: e.score_retrieval([R], [G], 2, metrics=["map"]),
        ValueError,
        r"^unknown retrieval metric\(s\) \['map'\]",
    ),
    ("score gain", lambda: e.score_retrieval([R], [G], 2, gain="log"), ValueError, r"^gain must be one of"),
    (
        "score question_ids",
        lambda: e.score_retrieval([R], [G], 2, question_ids=[1, 2]),
        ValueError,
        r"^question_ids must have one id per question \(1\), got 2",
    ),
    (
        "score declined",
        lambda: e.score_retrieval([R], [G], 2, declined=[True, False]),
        ValueError,
        r"^declined must have one flag per question",
    ),
    (
        "score answerable",
        lambda: e.score_retrieval([R], [G], 2, answerable=[True, True]),
        ValueError,
        r"^answerable must have one flag per question",
    ),
    (
        "score_encoded metric",
        lambda: e.score_encoded(e.encode_retrieval([R], [G]), 2, metrics=["x"]),
        ValueError,
        r"^unknown retrieval metric",
    ),
    (
        "score_encoded gain",
        lambda: e.score_encoded(e.encode_retrieval([R], [G]), 2, gain="x"),
        ValueError,
        r"^gain must be one of",
    ),
    (
        "encode lengths",
        lambda: e.encode_retrieval([R], [G, G]),
        ValueError,
        r"^ranked and gold must have one entry per question",
    ),
    (
        "from_padded shapes",
        lambda: e.EncodedRetrieval.from_padded(np.zeros(3), np.zeros((1, 2))),
        ValueError,
        r"^ranked and gold must be 2-d arrays",
    ),
    (
        "from_padded grades",
        lambda: e.EncodedRetrieval.from_padded(np.zeros((1, 3)), np.zeros((1, 2)), np.ones((1, 3))),
        ValueError,
        r"^gold_grades must have the shape of gold",
    ),
    (
        "summarize frame",
        lambda: e.summarize_retrieval(pd.DataFrame({"recall@5": [1.0]})),
        ValueError,
        r"^frame must be a DataFrame from score_retrieval",
    ),
]
