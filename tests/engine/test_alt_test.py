"""The alternative annotator test (Calderon, Reichart and Dror, ACL 2025) on generated data with known answers."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from scipy.stats import t as student_t
from scipy.stats import ttest_1samp
from statsmodels.stats.multitest import multipletests

from evalcore.engine import alternative_annotator_test
from evalcore.engine.multiplicity import benjamini_yekutieli

ANNOTATORS = ["ann", "bob", "cem", "dia", "eve"]


def generate(rng, *, items=80, annotators=ANNOTATORS, categories=4, noise=0.3):
    """The authors' simulation: a gold label per item; each annotator keeps it with probability 1 - noise, else
    draws from the priors."""
    priors = rng.dirichlet(np.ones(categories))
    gold = rng.choice(categories, size=items, p=priors)

    def annotate(level):
        keep = rng.random(items) >= level
        return np.where(keep, gold, rng.choice(categories, size=items, p=priors))

    people = {a: annotate(noise) for a in annotators}
    labels = {i: {a: int(people[a][i]) for a in annotators} for i in range(items)}
    return labels, gold, priors, annotate


def majority(labels, gold):
    """Each item's most frequent label among all annotators (ties to the gold label)."""
    out = {}
    for i, by in labels.items():
        values, counts = np.unique(list(by.values()), return_counts=True)
        best = values[counts == counts.max()]
        out[i] = int(gold[i]) if gold[i] in best else int(best[0])
    return out


def reference(labels, judge, *, epsilon, alpha, scoring="accuracy", min_items=30):
    """The procedure written from the paper's equations: per annotator the indicator differences, a hand-computed
    one-sided t-test, statsmodels' BY correction."""
    annotators = sorted({a for by in labels.values() for a in by})
    p_values, rhos = [], []
    for h in annotators:
        w_judge, w_human = [], []
        for i, by in labels.items():
            if h not in by or len(by) < 2 or i not in judge:
                continue
            others = np.array([v for a, v in by.items() if a != h], dtype=float)
            if scoring == "accuracy":
                s_h, s_f = np.mean(others == by[h]), np.mean(others == judge[i])
            else:
                s_h, s_f = -np.sqrt(np.mean((others - by[h]) ** 2)), -np.sqrt(np.mean((others - judge[i]) ** 2))
            w_judge.append(float(s_f >= s_h))
            w_human.append(float(s_h >= s_f))
        if len(w_judge) < min_items:
            continue
        d = np.array(w_human) - np.array(w_judge)
        t = (d.mean() - epsilon) / (d.std(ddof=1) / math.sqrt(len(d)))
        p_values.append(student_t.cdf(t, len(d) - 1))
        rhos.append(np.mean(w_judge))
    rejected = multipletests(p_values, alpha=alpha, method="fdr_by")[0]
    return rejected.mean(), float(np.mean(rhos)), np.array(p_values)


@pytest.mark.parametrize("seed", range(8))
def test_the_procedure_matches_the_papers_equations_and_statsmodels_by_on_generated_data(seed):
    rng = np.random.default_rng(seed)
    labels, gold, priors, annotate = generate(rng, noise=rng.uniform(0.1, 0.5))
    judge_labels = annotate(rng.uniform(0.1, 0.6))
    judge = {i: int(judge_labels[i]) for i in labels}
    epsilon = float(rng.choice([0.0, 0.1, 0.15, 0.2]))
    result = alternative_annotator_test(labels=labels, judge=judge, epsilon=epsilon)
    omega, rho, p_values = reference(labels, judge, epsilon=epsilon, alpha=0.05)
    assert result.winning_rate == pytest.approx(omega, abs=1e-12)
    assert result.advantage_probability == pytest.approx(rho, abs=1e-12)
    assert np.allclose([c.p_value for c in result.comparisons], p_values, atol=1e-12, rtol=0)
    assert result.passed == (omega >= 0.5)


def test_on_a_numeric_scale_neg_rmse_matches_the_reference():
    rng = np.random.default_rng(30)
    truth = rng.integers(1, 6, 70)
    people = {a: np.clip(truth + rng.choice([-1, 0, 0, 1], 70), 1, 5) for a in ANNOTATORS[:4]}
    labels = {i: {a: int(people[a][i]) for a in people} for i in range(70)}
    judge = {i: int(np.clip(truth[i] + rng.choice([-1, 0, 0, 0, 1]), 1, 5)) for i in range(70)}
    result = alternative_annotator_test(labels=labels, judge=judge, scoring="neg_rmse", epsilon=0.15)
    omega, rho, p_values = reference(labels, judge, epsilon=0.15, alpha=0.05, scoring="neg_rmse")
    assert result.winning_rate == omega and result.advantage_probability == pytest.approx(rho, abs=1e-12)
    assert np.allclose([c.p_value for c in result.comparisons], p_values, atol=1e-12, rtol=0)


def test_benjamini_yekutieli_is_statsmodels_fdr_by():
    rng = np.random.default_rng(31)
    for _ in range(300):
        p = rng.random(int(rng.integers(1, 40))) ** rng.uniform(0.3, 4)
        assert np.allclose(benjamini_yekutieli(p), multipletests(p, method="fdr_by")[1], atol=1e-15, rtol=0)
    assert np.isnan(benjamini_yekutieli([0.01, math.nan])[1])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        benjamini_yekutieli([1.5])


def test_a_judge_that_copies_the_majority_passes_and_a_random_judge_fails():
    rng = np.random.default_rng(32)
    copies, randoms = [], []
    for _ in range(20):
        labels, gold, priors, _ = generate(rng, items=100, noise=0.3)
        copies.append(alternative_annotator_test(labels=labels, judge=majority(labels, gold)))
        noise = {i: int(rng.integers(0, 4)) for i in labels}
        randoms.append(alternative_annotator_test(labels=labels, judge=noise))
    assert all(r.passed for r in copies), [r.winning_rate for r in copies]
    assert np.mean([r.winning_rate for r in copies]) >= 0.9
    assert not any(r.passed for r in randoms) and max(r.winning_rate for r in randoms) == 0.0
    assert all(r.advantage_probability > 0.8 for r in copies)


def test_a_judge_as_noisy_as_the_annotators_passes_only_thanks_to_epsilon():
    rng = np.random.default_rng(33)
    labels, gold, priors, annotate = generate(rng, items=300, noise=0.3)
    peer = annotate(0.3)
    judge = {i: int(peer[i]) for i in labels}
    assert alternative_annotator_test(labels=labels, judge=judge, epsilon=0.2).passed
    assert not alternative_annotator_test(labels=labels, judge=judge, epsilon=0.0).passed


def test_the_verdict_in_words_and_as_json():
    rng = np.random.default_rng(32)
    labels, gold, _, _ = generate(rng, items=100, annotators=ANNOTATORS[:4], noise=0.3)
    result = alternative_annotator_test(labels=labels, judge=majority(labels, gold))
    assert result.sentence() == "the judge can stand in for annotators: 4 of 4 beaten, ω 1.00, ε 0.1"
    data = json.loads(json.dumps(result.as_dict(), allow_nan=False))
    assert data["passed"] is True and [a["annotator"] for a in data["annotators"]] == ANNOTATORS[:4]
    assert all(a["items"] == 100 and a["beaten"] for a in data["annotators"])
    noise = {i: int(rng.integers(0, 4)) for i in labels}
    assert (
        alternative_annotator_test(labels=labels, judge=noise)
        .sentence()
        .startswith("the judge cannot stand in for annotators: 0 of 4 beaten, ω 0.00")
    )


def test_annotators_with_too_few_items_are_skipped_and_said_so():
    rng = np.random.default_rng(34)
    labels, gold, _, _ = generate(rng, items=60, annotators=ANNOTATORS[:4])
    for i in range(50):  # "dia" labelled only 10 items
        del labels[i]["dia"]
    result = alternative_annotator_test(labels=labels, judge=majority(labels, gold))
    assert [c.annotator for c in result.comparisons] == ["ann", "bob", "cem"]
    assert result.skipped == (("dia", "10 items labelled with others and the judge, fewer than 30"),)
    with pytest.raises(ValueError, match="no annotator labelled at least 100 items"):
        alternative_annotator_test(labels=labels, judge=majority(labels, gold), min_items_per_annotator=100)


def test_constant_differences_get_the_tests_limit_not_nan():
    labels = {i: {"a": 1, "b": 1, "c": 1} for i in range(40)}
    same = alternative_annotator_test(labels=labels, judge=dict.fromkeys(range(40), 1))
    assert all(c.p_value == 0.0 for c in same.comparisons) and same.passed  # differences all 0 < epsilon
    wrong = alternative_annotator_test(labels=labels, judge=dict.fromkeys(range(40), 0))
    assert all(c.p_value == 1.0 for c in wrong.comparisons) and not wrong.passed


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        (dict(labels={1: {"a": 1, "b": 1}}, judge={1: 1}), ValueError, "at least 3 annotators .* got 2: a, b"),
        (dict(labels={}, judge={}), ValueError, "got 0: none"),
        (dict(labels={1: {"a": 1}}, judge={1: 1}, scoring="f1"), ValueError, "scoring must be"),
        (dict(labels={1: {"a": "x", "b": 1, "c": 2}}, judge={1: 1}, scoring="neg_rmse"), ValueError, "annotator 'a'"),
        (dict(labels={1: {"a": 1, "b": 1, "c": 2}}, judge={1: "y"}, scoring="neg_rmse"), ValueError, "judge's label"),
        (dict(labels={1: ["a"]}, judge={1: 1}), TypeError, r"labels\[1\] must map annotator"),
        (dict(labels=[1], judge={1: 1}), TypeError, "labels must map item"),
        (dict(labels={1: {"a": 1}}, judge={1: 1}, epsilon=1.5), ValueError, "epsilon"),
        (dict(labels={1: {"a": 1}}, judge={1: 1}, min_annotators=1), ValueError, "min_annotators must be at least 2"),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(kwargs, error, message):
    with pytest.raises(error, match=message):
        alternative_annotator_test(**kwargs)


def _false_pass_rate(*, sims, seed, epsilon):
    """How often a judge clearly worse than the annotators (noise 0.6 against 0.2) passes."""
    rng = np.random.default_rng(seed)
    passed = 0
    for _ in range(sims):
        labels, gold, priors, annotate = generate(rng, items=60, noise=0.2)
        worse = annotate(0.6)
        passed += alternative_annotator_test(
            labels=labels, judge={i: int(worse[i]) for i in labels}, epsilon=epsilon
        ).passed
    return passed / sims


def test_a_clearly_worse_judge_rarely_passes_by_simulation():
    assert _false_pass_rate(sims=60, seed=35, epsilon=0.1) <= 0.05  # measured 0.0


@pytest.mark.slow
def test_a_clearly_worse_judge_rarely_passes_slow():
    assert _false_pass_rate(sims=500, seed=36, epsilon=0.1) <= 0.02


def test_as_dict_is_every_field_under_its_name_with_nan_as_none():
    from evalcore.engine.alt_test import AltTestResult, AnnotatorComparison

    result = AltTestResult(
        comparisons=(
            AnnotatorComparison(7, 40, 0.9, 0.6, 0.001, 0.004, True),
            AnnotatorComparison("bob", 35, 0.5, 0.5, math.nan, math.inf, False),
        ),
        winning_rate=0.5,
        advantage_probability=math.nan,
        passed=True,
        epsilon=0.2,
        alpha=0.1,
        scoring="neg_rmse",
        skipped=((3, "10 items labelled with others and the judge, fewer than 30"),),
    )
    assert result.as_dict() == {
        "passed": True,
        "winning_rate": 0.5,
        "advantage_probability": None,
        "epsilon": 0.2,
        "alpha": 0.1,
        "scoring": "neg_rmse",
        "sentence": "the judge can stand in for annotators: 1 of 2 beaten, ω 0.50, ε 0.2",
        "annotators": [
            {
                "annotator": "7",
                "items": 40,
                "rho_judge": 0.9,
                "rho_human": 0.6,
                "p_value": 0.001,
                "adjusted_p_value": 0.004,
                "beaten": True,
            },
            {
                "annotator": "bob",
                "items": 35,
                "rho_judge": 0.5,
                "rho_human": 0.5,
                "p_value": None,
                "adjusted_p_value": None,
                "beaten": False,
            },
        ],
        "skipped": [{"annotator": "3", "reason": "10 items labelled with others and the judge, fewer than 30"}],
    }
    assert type(result.as_dict()["annotators"][0]["p_value"]) is float


def test_a_judge_that_only_ties_or_loses_gets_the_t_test_on_its_zero_one_differences():
    # every annotator agrees with the others; the judge agrees on 25 items of 40 and is wrong on 15: each
    # annotator's differences are 0 (a tie) or 1 (the annotator wins), never -1
    labels = {i: {"a": 1, "b": 1, "c": 1} for i in range(40)}
    judge = {i: 1 if i < 25 else 0 for i in range(40)}
    result = alternative_annotator_test(labels=labels, judge=judge, epsilon=0.2)
    expected = ttest_1samp([0.0] * 25 + [1.0] * 15, 0.2, alternative="less").pvalue
    assert [c.p_value for c in result.comparisons] == pytest.approx([expected] * 3, rel=1e-12)
    assert 0.9 < expected < 1.0 and not result.passed


def test_differences_constant_at_epsilon_do_not_show_a_mean_below_it():
    labels = {i: {"a": 1, "b": 1, "c": 1} for i in range(40)}
    same = alternative_annotator_test(labels=labels, judge=dict.fromkeys(range(40), 1), epsilon=0.0)
    assert [c.p_value for c in same.comparisons] == [1.0, 1.0, 1.0] and not same.passed


def test_one_shared_item_is_enough_when_asked_for():
    result = alternative_annotator_test(labels={0: {"a": 1, "b": 1, "c": 1}}, judge={0: 1}, min_items_per_annotator=1)
    assert [c.items for c in result.comparisons] == [1, 1, 1]
    assert [c.p_value for c in result.comparisons] == [0.0, 0.0, 0.0]  # the one difference, 0, is below 0.1


def test_labels_that_are_not_mappings_are_named_in_the_message():
    with pytest.raises(TypeError) as caught:
        alternative_annotator_test(labels=[1], judge={1: 1})
    assert str(caught.value) == "labels must map item -> (annotator -> label) and judge item -> label"
    with pytest.raises(TypeError) as caught:
        alternative_annotator_test(labels={"q1": ["a"]}, judge={"q1": 1})
    assert str(caught.value) == "labels['q1'] must map annotator -> label, got list"


def _panel(items=40):
    """Three annotators who always agree; the judge agrees on the first 30 items and is wrong on the rest."""
    labels = {i: {"a": 1, "b": 1, "c": 1} for i in range(items)}
    return labels, {i: 1 if i < 30 else 0 for i in range(items)}


def test_each_comparison_records_both_win_rates_and_the_result_its_settings():
    labels, judge = _panel()
    result = alternative_annotator_test(labels=labels, judge=judge, epsilon=0.3, alpha=0.2, scoring="accuracy")
    assert [(c.annotator, c.items, c.rho_judge, c.rho_human) for c in result.comparisons] == [
        ("a", 40, 0.75, 1.0),
        ("b", 40, 0.75, 1.0),
        ("c", 40, 0.75, 1.0),
    ]
    assert (result.epsilon, result.alpha, result.scoring, result.advantage_probability) == (0.3, 0.2, "accuracy", 0.75)


def test_an_adjusted_p_value_equal_to_alpha_beats_the_annotator_and_half_beaten_passes():
    labels, judge = _panel()
    first = alternative_annotator_test(labels=labels, judge=judge, epsilon=0.3)
    q = first.comparisons[0].adjusted_p_value
    assert 0 < q < 1
    at = alternative_annotator_test(labels=labels, judge=judge, epsilon=0.3, alpha=q)
    assert all(c.beaten for c in at.comparisons)
    # half the annotators beaten (omega exactly 0.5) passes: found among generated panels of four
    halves = 0
    for seed in range(60):
        labels, _, _, annotate = generate(np.random.default_rng(seed), items=40, annotators=ANNOTATORS[:4])
        result = alternative_annotator_test(labels=labels, judge=dict(enumerate(annotate(0.3).tolist())))
        if result.winning_rate == 0.5:
            halves += 1
            assert result.passed and result.beaten == 2
    assert halves >= 1


def test_too_few_tested_annotators_warn_from_the_caller_and_enough_do_not():
    labels, judge = _panel()
    for i in range(35):
        del labels[i]["c"]  # c has 5 items with others and the judge
    with pytest.warns(UserWarning) as caught:
        result = alternative_annotator_test(labels=labels, judge=judge, min_annotators=3)
    assert [str(w.message) for w in caught] == [
        "only 2 annotators have enough items for the test; the verdict rests on few comparisons"
    ]
    where = caught[0].filename
    assert os.path.basename(where) != "alt_test.py"  # the caller's line, not the engine's
    if "MUTANT_UNDER_TEST" not in os.environ:  # under ./dev mutate a trampoline stands between the two
        assert where == __file__
    assert [c.annotator for c in result.comparisons] == ["a", "b"]
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(alternative_annotator_test(labels=labels, judge=judge, min_annotators=2).comparisons) == 2


def test_items_with_two_annotators_count_and_items_without_the_judge_or_a_second_annotator_do_not():
    pairs = {
        i: {"a": 1, "b": 1} if i % 3 == 0 else {"b": 1, "c": 1} if i % 3 == 1 else {"a": 1, "c": 1} for i in range(90)
    }
    result = alternative_annotator_test(labels=pairs, judge=dict.fromkeys(range(90), 1), min_items_per_annotator=60)
    assert [c.items for c in result.comparisons] == [60, 60, 60]  # exactly the minimum is enough
    extra = {**pairs, 100: {"a": 1}, 101: {"a": 1, "b": 0, "c": 0}}  # one annotator only; not judged
    again = alternative_annotator_test(labels=extra, judge=dict.fromkeys(range(90), 1), min_items_per_annotator=60)
    assert again == result


def test_annotators_of_mixed_types_sort_by_their_names_and_a_skipped_first_one_does_not_stop_the_rest():
    labels = {i: {1: 1, "b": 1, "c": 1} for i in range(40)}
    for i in range(30):
        labels[i] = {"b": 1, "c": 1}
    result = alternative_annotator_test(labels=labels, judge=dict.fromkeys(range(40), 1), min_annotators=2)
    assert result.skipped == ((1, "10 items labelled with others and the judge, fewer than 30"),)
    assert [c.annotator for c in result.comparisons] == ["b", "c"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epsilon": 1.5}, "epsilon must be between 0 and 1, got 1.5"),
        ({"alpha": 0.0}, "alpha must be strictly between 0 and 1, got 0.0"),
        ({"min_items_per_annotator": 0}, "min_items_per_annotator must be a positive integer, got 0"),
        ({"min_annotators": 0}, "min_annotators must be a positive integer, got 0"),
        (
            {"min_items_per_annotator": 41},
            "no annotator labelled at least 41 items together with another annotator and the judge: label more "
            "items with overlap, or lower min_items_per_annotator",
        ),
    ],
)
def test_settings_out_of_range_are_named_in_full(kwargs, message):
    labels, judge = _panel()
    with pytest.raises(ValueError) as caught:
        alternative_annotator_test(labels=labels, judge=judge, **kwargs)
    assert str(caught.value) == message
