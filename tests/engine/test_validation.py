"""Every public function refuses bad input with ValueError or TypeError and a message naming the argument."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

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
    ("recall ranked str", lambda: e.recall_at_k("abc", G, 2), TypeError, r"^ranked must be a list of ids in rank order, got a string 'abc'"),
    ("precision ranked str", lambda: e.precision_at_k("abc", G, 2), TypeError, r"^ranked must be a list of ids"),
    ("rr ranked str", lambda: e.reciprocal_rank("abc", G), TypeError, r"^ranked must be a list of ids"),
    ("ndcg ranked str", lambda: e.ndcg_at_k("abc", {"a": 1}, 2), TypeError, r"^ranked must be a list of ids"),
    ("recall ranked set", lambda: e.recall_at_k({"a", "b"}, G, 2), TypeError, r"^ranked must be an ordered sequence .* got set"),
    ("recall ranked dict", lambda: e.recall_at_k({"a": 1}, G, 2), TypeError, r"^ranked must be an ordered sequence .* got dict"),
    ("recall ranked None", lambda: e.recall_at_k(None, G, 2), TypeError, r"^ranked must be an ordered sequence"),
    ("recall gold str", lambda: e.recall_at_k(R, "a", 2), TypeError, r"^gold must be a set of ids or a mapping id -> grade, got a string 'a'"),
    ("precision gold str", lambda: e.precision_at_k(R, "a", 2), TypeError, r"^gold must be a set of ids"),
    ("rr gold str", lambda: e.reciprocal_rank(R, "a"), TypeError, r"^gold must be a set of ids"),
    ("ndcg grades str", lambda: e.ndcg_at_k(R, "a", 2), TypeError, r"^grades must be a set of ids or a mapping"),
    ("recall gold int", lambda: e.recall_at_k(R, 5, 2), TypeError, r"^gold must be a set of ids or a mapping id -> grade, got int"),
    ("recall grade NaN", lambda: e.recall_at_k(R, {"a": math.nan}, 2), ValueError, r"^gold: the grade of 'a' must be finite, got nan"),
    ("recall grade inf", lambda: e.recall_at_k(R, {"a": math.inf}, 2), ValueError, r"^gold: the grade of 'a' must be finite"),
    ("recall grade str", lambda: e.recall_at_k(R, {"a": "3"}, 2), ValueError, r"^gold: the grade of 'a' must be a number, got '3'"),
    ("recall grade bool", lambda: e.recall_at_k(R, {"a": True}, 2), ValueError, r"^gold: the grade of 'a' must be a number, got True"),
    ("ndcg grade None", lambda: e.ndcg_at_k(R, {"a": None}, 2), ValueError, r"^grades: the grade of 'a' must be a number"),
    ("ndcg gain", lambda: e.ndcg_at_k(R, {"a": 1}, 2, gain="log"), ValueError, r"^gain must be one of \('exponential', 'linear'\), got 'log'"),
    # ---- batch scorer ----
    ("score lengths", lambda: e.score_retrieval([R, R], [G], 2), ValueError, r"^ranked and gold must have one entry per question, got 2 and 1"),
    ("score ranked item str", lambda: e.score_retrieval([R, "ab"], [G, G], 2), TypeError, r"^ranked\[1\] must be a list of ids in rank order, got a string"),
    ("score ranked item set", lambda: e.score_retrieval([{"a"}], [G], 2), TypeError, r"^ranked\[0\] must be an ordered sequence"),
    ("score ranked item int", lambda: e.score_retrieval([R, 5], [G, G], 2), TypeError, r"^ranked\[1\] must be a list of ids, got int"),
    ("score gold item str", lambda: e.score_retrieval([R], ["a"], 2), TypeError, r"^gold\[0\] must be a set of ids or a mapping"),
    ("score gold item int", lambda: e.score_retrieval([R], [5], 2), TypeError, r"^gold\[0\] must be a set of ids or a mapping id -> grade, got int"),
    ("score grade str", lambda: e.score_retrieval([R], [{"a": "x"}], 2), ValueError, r"^gold\[0\]: the grade of 'a' must be a number, got 'x'"),
    ("score grade inf", lambda: e.score_retrieval([R, R], [G, {"c": math.inf}], 2), ValueError, r"^gold\[1\]: grade of 'c' must be finite, got inf"),
    ("score grade NaN", lambda: e.score_retrieval([R], [{"a": math.nan}], 2), ValueError, r"^gold\[0\]: grade of 'a' must be finite"),
    ("score k=0", lambda: e.score_retrieval([R], [G], 0), ValueError, r"^k must be a positive integer, got 0"),
    ("score k=True", lambda: e.score_retrieval([R], [G], True), ValueError, r"^k must be an integer or one integer per question \(1\)"),
    ("score k shape", lambda: e.score_retrieval([R], [G], [1, 2]), ValueError, r"^k must be an integer or one integer per question \(1\), got shape \(2,\)"),
    ("score k fractional", lambda: e.score_retrieval([R], [G], [1.5]), ValueError, r"^k must hold integers"),
    ("score k NaN", lambda: e.score_retrieval([R], [G], [math.nan]), ValueError, r"^k must hold integers"),
    ("score k bools", lambda: e.score_retrieval([R], [G], [True]), ValueError, r"^k must hold integers"),
    ("score k negative", lambda: e.score_retrieval([R, R], [G, G], [1, -1]), ValueError, r"^k must be 0 or more for every question, got -1 at position 1"),
    ("score metric", lambda: e.score_retrieval([R], [G], 2, metrics=["map"]), ValueError, r"^unknown retrieval metric\(s\) \['map'\]"),
    ("score gain", lambda: e.score_retrieval([R], [G], 2, gain="log"), ValueError, r"^gain must be one of"),
    ("score question_ids", lambda: e.score_retrieval([R], [G], 2, question_ids=[1, 2]), ValueError, r"^question_ids must have one id per question \(1\), got 2"),
    ("score declined", lambda: e.score_retrieval([R], [G], 2, declined=[True, False]), ValueError, r"^declined must have one flag per question"),
    ("score answerable", lambda: e.score_retrieval([R], [G], 2, answerable=[True, True]), ValueError, r"^answerable must have one flag per question"),
    ("score_encoded metric", lambda: e.score_encoded(e.encode_retrieval([R], [G]), 2, metrics=["x"]), ValueError, r"^unknown retrieval metric"),
    ("score_encoded gain", lambda: e.score_encoded(e.encode_retrieval([R], [G]), 2, gain="x"), ValueError, r"^gain must be one of"),
    ("encode lengths", lambda: e.encode_retrieval([R], [G, G]), ValueError, r"^ranked and gold must have one entry per question"),
    ("from_padded shapes", lambda: e.EncodedRetrieval.from_padded(np.zeros(3), np.zeros((1, 2))), ValueError, r"^ranked and gold must be 2-d arrays"),
    ("from_padded grades", lambda: e.EncodedRetrieval.from_padded(np.zeros((1, 3)), np.zeros((1, 2)), np.ones((1, 3))), ValueError, r"^gold_grades must have the shape of gold"),
    ("summarize frame", lambda: e.summarize_retrieval(pd.DataFrame({"recall@5": [1.0]})), ValueError, r"^frame must be a DataFrame from score_retrieval"),
    # ---- agreement ----
    ("kappa lengths", lambda: e.cohen_kappa([1, 0], [1]), ValueError, r"^a and b must label the same items in the same order: got 2 and 1 labels"),
    ("kappa empty", lambda: e.cohen_kappa([], []), ValueError, r"^a and b are empty"),
    ("kappa NaN", lambda: e.cohen_kappa([1.0, math.nan], [1, 0]), ValueError, r"^a has a missing label at position 1"),
    ("kappa None", lambda: e.cohen_kappa([1, 0], [1, None]), ValueError, r"^b has a missing label \(None\)"),
    ("kappa str", lambda: e.cohen_kappa("ab", "ab"), TypeError, r"^labels must be sequences of labels, not strings"),
    ("kappa 2-d", lambda: e.cohen_kappa([[1, 0]], [[1, 0]]), ValueError, r"^a and b must be one-dimensional"),
    ("kappa_interval confidence", lambda: e.kappa_interval([1, 0], [1, 0], confidence=1.0), ValueError, r"^confidence must be strictly between 0 and 1, got 1.0"),
    ("kappa_interval confidence str", lambda: e.kappa_interval([1, 0], [1, 0], confidence="95%"), ValueError, r"^confidence must be a number between 0 and 1"),
    ("kappa_interval lengths", lambda: e.kappa_interval([1, 0], [1]), ValueError, r"^a and b must label the same items"),
    ("agreement lengths", lambda: e.binary_agreement([1, 0], [1]), ValueError, r"^people and judge must label the same items"),
    ("agreement three classes", lambda: e.binary_agreement([0, 1, 2], [0, 1, 2]), ValueError, r"^binary agreement needs exactly two classes, got \[0, 1, 2\]"),
    ("agreement failure_class", lambda: e.binary_agreement([0, 1], [0, 1], failure_class=2), ValueError, r"^failure_class 2 is not one of the labels \(1, 0\)"),
    ("agreement labels equal", lambda: e.binary_agreement([0, 1], [0, 1], labels=(1, 1)), ValueError, r"^labels must be two different classes"),
    ("agreement unexpected label", lambda: e.binary_agreement([0, 1], [0, 2], labels=(0, 1)), ValueError, r"^label 2 is not one of the expected labels"),
    ("agreement confidence", lambda: e.binary_agreement([0, 1], [0, 1], confidence=0.0), ValueError, r"^confidence must be strictly between 0 and 1"),
    # ---- proportions ----
    ("z_score confidence 1.5", lambda: e.z_score(1.5), ValueError, r"^confidence must be strictly between 0 and 1, got 1.5"),
    ("z_score confidence 0", lambda: e.z_score(0), ValueError, r"^confidence must be strictly between 0 and 1"),
    ("proportion_se p", lambda: e.proportion_se(1.5, 10), ValueError, r"^p must be between 0 and 1, got 1.5"),
    ("proportion_se p NaN", lambda: e.proportion_se(math.nan, 10), ValueError, r"^p must be a number between 0 and 1"),
    ("proportion_se n", lambda: e.proportion_se(0.5, 0), ValueError, r"^n must be a positive integer, got 0"),
    ("proportion_se n float", lambda: e.proportion_se(0.5, 10.0), ValueError, r"^n must be an integer"),
    ("interval successes > n", lambda: e.proportion_interval(11, 10), ValueError, r"^successes must be between 0 and n=10, got 11"),
    ("interval successes < 0", lambda: e.proportion_interval(-1, 10), ValueError, r"^successes must be between 0 and n=10"),
    ("interval successes bool", lambda: e.proportion_interval(True, 10), ValueError, r"^successes must be a count or a proportion, got True"),
    ("interval successes str", lambda: e.proportion_interval("3", 10), ValueError, r"^successes must be a count or a proportion"),
    ("interval proportion > 1", lambda: e.proportion_interval(1.5, 10), ValueError, r"^successes \(as a proportion\) must be between 0 and 1"),
    ("interval n", lambda: e.proportion_interval(1, 0), ValueError, r"^n must be a positive integer"),
    ("interval confidence", lambda: e.proportion_interval(1, 10, confidence=95), ValueError, r"^confidence must be strictly between 0 and 1, got 95"),
    ("interval method", lambda: e.proportion_interval(1, 10, method="exact"), ValueError, r"^method must be 'wilson' or 'wald', got 'exact'"),
    ("sample size difference 0", lambda: e.paired_sample_size(0, sd=0.3), ValueError, r"^difference must be a non-zero finite number, got 0"),
    ("sample size difference NaN", lambda: e.paired_sample_size(math.nan, sd=0.3), ValueError, r"^difference must be a non-zero finite number, got nan"),
    ("sample size difference inf", lambda: e.paired_sample_size(math.inf, sd=0.3), ValueError, r"^difference must be a non-zero finite number"),
    ("sample size difference bool", lambda: e.paired_sample_size(True, sd=0.3), ValueError, r"^difference must be"),
    ("sample size both", lambda: e.paired_sample_size(0.1, sd=0.3, discordant=0.2), ValueError, r"^give exactly one of sd .* or discordant"),
    ("sample size neither", lambda: e.paired_sample_size(0.1), ValueError, r"^give exactly one of sd"),
    ("sample size sd negative", lambda: e.paired_sample_size(0.1, sd=-0.3), ValueError, r"^sd must be a positive finite number, got -0.3"),
    ("sample size sd inf", lambda: e.paired_sample_size(0.1, sd=math.inf), ValueError, r"^sd must be a positive finite number, got inf"),
    ("sample size sd NaN", lambda: e.paired_sample_size(0.1, sd=math.nan), ValueError, r"^sd must be a positive finite number"),
    ("sample size discordant", lambda: e.paired_sample_size(0.1, discordant=1.5), ValueError, r"^discordant must be strictly between 0 and 1"),
    ("sample size too few flips", lambda: e.paired_sample_size(0.3, discordant=0.05), ValueError, r"^a change of 0.3 needs more than 30% of questions to flip \(0.05 given\)"),
    ("sample size power", lambda: e.paired_sample_size(0.1, sd=0.3, power=1.0), ValueError, r"^power must be strictly between 0 and 1"),
    ("sample size confidence", lambda: e.paired_sample_size(0.1, sd=0.3, confidence=0.0), ValueError, r"^confidence must be strictly between 0 and 1"),
    ("detectable n", lambda: e.detectable_difference(0, sd=0.3), ValueError, r"^n must be a positive integer"),
    ("detectable sd", lambda: e.detectable_difference(100, sd=0), ValueError, r"^sd must be a positive finite number, got 0"),
    ("detectable sd inf", lambda: e.detectable_difference(100, sd=math.inf), ValueError, r"^sd must be a positive finite number"),
    ("detectable power", lambda: e.detectable_difference(100, sd=0.3, power=0), ValueError, r"^power must be strictly between 0 and 1"),
    # ---- bootstrap ----
    ("bootstrap lengths", lambda: e.paired_bootstrap([1, 0], [1]), ValueError, r"^base and cand must score the same questions in the same order: got 2 and 1 scores"),
    ("bootstrap empty", lambda: e.paired_bootstrap([], []), ValueError, r"^base and cand are empty"),
    ("bootstrap NaN base", lambda: e.paired_bootstrap([1, math.nan, 0], [1, 1, 1]), ValueError, r"^base contains 1 missing or non-finite value\(s\), the first at position 1"),
    ("bootstrap NaN cand", lambda: e.paired_bootstrap([1, 1], [0, math.nan]), ValueError, r"^cand contains 1 missing"),
    ("bootstrap None", lambda: e.paired_bootstrap([1, None], [0, 1]), ValueError, r"^base contains 1 missing"),
    ("bootstrap inf", lambda: e.paired_bootstrap([1, 1], [math.inf, 1]), ValueError, r"^cand contains 1 missing or non-finite"),
    ("bootstrap strings", lambda: e.paired_bootstrap(["a"], [1]), ValueError, r"^base must be a sequence of numbers"),
    ("bootstrap 2-d", lambda: e.paired_bootstrap([[1, 0]], [[1, 0]]), ValueError, r"^base must be one-dimensional"),
    ("bootstrap scalar", lambda: e.paired_bootstrap(1.0, [1.0]), ValueError, r"^base must be one-dimensional"),
    ("bootstrap confidence 1", lambda: e.paired_bootstrap([1], [1], confidence=1.0), ValueError, r"^confidence must be strictly between 0 and 1"),
    ("bootstrap confidence 0", lambda: e.paired_bootstrap([1], [1], confidence=0), ValueError, r"^confidence must be strictly between 0 and 1"),
    ("bootstrap confidence -0.5", lambda: e.paired_bootstrap([1], [1], confidence=-0.5), ValueError, r"^confidence must be strictly between 0 and 1"),
    ("bootstrap iterations 0", lambda: e.paired_bootstrap([1], [1], iterations=0), ValueError, r"^iterations must be a positive integer"),
    ("bootstrap iterations bool", lambda: e.paired_bootstrap([1], [1], iterations=True), ValueError, r"^iterations must be an integer"),
    ("bootstrap seed negative", lambda: e.paired_bootstrap([1], [1], seed=-1), ValueError, r"^seed must be a non-negative integer, got -1"),
    ("bootstrap seed float", lambda: e.paired_bootstrap([1], [1], seed=1.5), ValueError, r"^seed must be a non-negative integer"),
    ("bootstrap seed bool", lambda: e.paired_bootstrap([1], [1], seed=True), ValueError, r"^seed must be a non-negative integer"),
    ("bootstrap threads", lambda: e.paired_bootstrap([1], [1], threads=0), ValueError, r"^threads must be a positive integer"),
    ("bootstrap method", lambda: e.paired_bootstrap([1, 0], [1, 1], method="bca"), ValueError, r"^method must be 'auto', 'multinomial' or 'resample', got 'bca'"),
    ("percentile iterations", lambda: e.percentile_positions(0, confidence=0.95), ValueError, r"^iterations must be a positive integer"),
    ("percentile confidence", lambda: e.percentile_positions(100, confidence=1.5), ValueError, r"^confidence must be strictly between 0 and 1"),
    # ---- gate ----
    ("gate metric empty", lambda: e.gate("", [1], [1]), ValueError, r"^metric must be a non-empty name"),
    ("gate metric None", lambda: e.gate(None, [1], [1]), ValueError, r"^metric must be a non-empty name"),
    ("gate margin negative", lambda: e.gate("m", [1], [1], margin=-0.01), ValueError, r"^margin for 'm' must be a non-negative number \(a tolerated drop\), got -0.01"),
    ("gate margin NaN", lambda: e.gate("m", [1], [1], margin=math.nan), ValueError, r"^margin for 'm' must be a non-negative number"),
    ("gate margin bool", lambda: e.gate("m", [1], [1], margin=True), ValueError, r"^margin for 'm' must be a non-negative number"),
    ("gate margin str", lambda: e.gate("m", [1], [1], margin="0.02"), ValueError, r"^margin for 'm' must be a non-negative number"),
    ("gate lengths", lambda: e.gate("m", [1, 0], [1]), ValueError, r"^base and cand must score the same questions"),
    ("gate NaN", lambda: e.gate("m", [1, math.nan], [1, 1]), ValueError, r"^base contains 1 missing"),
    ("gate confidence", lambda: e.gate("m", [1], [1], confidence=2), ValueError, r"^confidence must be strictly between 0 and 1"),
    ("decide margin negative", lambda: e.decide(-0.1, 0.1, margin=-0.02), ValueError, r"^margin for 'decide' must be a non-negative number"),
    ("decide margin NaN", lambda: e.decide(-0.1, 0.1, margin=math.nan), ValueError, r"^margin for 'decide' must be a non-negative number"),
    # ---- spans ----
    ("spans min_overlap", lambda: e.map_spans_to_chunks([("d", 0, 5, 1)], [("c", "d", 0, 5)], min_overlap=0), ValueError, r"^min_overlap must be a positive integer"),
    ("spans bad span", lambda: e.map_spans_to_chunks([("d", 5, 1, 1)], [("c", "d", 0, 5)]), ValueError, r"^span of 'd': need 0 <= start < end"),
    ("spans bad chunk", lambda: e.map_spans_to_chunks([("d", 0, 5, 1)], [("c", "d", 5, 0)]), ValueError, r"^chunk 'c': need 0 <= start < end"),
    ("chunk map doc_of", lambda: e.ChunkMap([("c", "d", 0, 5)]).doc_of("x"), ValueError, r"^chunk 'x' is not in the chunk map"),
]


@pytest.mark.parametrize(("call", "error", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_raises_a_clear_error_that_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_errors_are_value_or_type_errors_never_assertions_or_zero_division():
    for name, call, error, _ in CASES:
        assert error in (ValueError, TypeError), name
        try:
            call()
        except (ValueError, TypeError):
            pass
        else:  # pragma: no cover - the parametrized test reports it
            pytest.fail(f"{name} did not raise")


def test_paired_bootstrap_reports_the_first_nan_position_for_finding_the_bad_row():
    with pytest.raises(ValueError, match=r"contains 2 missing .* the first at position 3 \(nan\)"):
        e.paired_bootstrap([1, 1, 1, math.nan, math.nan], [1, 1, 1, 1, 1])


def test_a_numpy_integer_k_and_margin_of_zero_are_valid():
    assert e.recall_at_k(R, G, np.int32(2)) == 0.5
    assert e.decide(0.0, 0.1, margin=0) == "pass"
    assert e.gate("m", [1.0] * 20, [1.0] * 20, margin=0).status == "pass"
