"""The string-id encoder, called directly: ``encode_retrieval`` and its helpers in ``_encoding``.

Codes must be equal exactly when the ids are equal (checked against ``pandas.factorize``), stay
small enough for the kernels' per-question keys, and the flat layout must match the input lists.
"""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest

from evalcore.engine import _encoding, encode_retrieval
from evalcore.engine._encoding import _folded_key, _joined_bytes, _string_codes

# --------------------------------------------------------------------------------------------
# The helpers
# --------------------------------------------------------------------------------------------


def test_joined_bytes_are_the_ids_nul_separated_then_eight_zero_bytes():
    data = _joined_bytes([([["ab", "c"], [], ["é"]], None)], 3)
    assert bytes(data) == b"ab\x00c\x00" + "é".encode() + b"\x00" * 8


def test_joined_bytes_take_the_ids_of_each_item_through_the_given_function():
    data = _joined_bytes([([{"x": 1}, {"yz": 2}], dict.keys)], 2)
    assert bytes(data) == b"x\x00yz" + b"\x00" * 8


def test_joined_bytes_decline_non_strings():
    assert _joined_bytes([([["a", 1]], None)], 2) is None


def test_joined_bytes_span_several_batches(monkeypatch):
    monkeypatch.setattr(_encoding, "_JOIN_BATCH", 2)
    questions = [[f"q{i}"] for i in range(7)]
    assert bytes(_joined_bytes([(questions, None)], 7)) == b"\x00".join(q[0].encode() for q in questions) + b"\x00" * 8


def _digit_runs(ids):
    """The runs ``_string_codes`` finds for ids of eight decimal digits: the low four bits of each byte."""
    word = np.frombuffer("".join(ids).encode(), dtype="<u8").copy()
    return [[word, 8 * b, 4] for b in range(8)]


def test_folded_key_packs_eight_digits_into_32_bits_exactly():
    rng = random.Random(3)
    ids = [f"{rng.randrange(10**8):08d}" for _ in range(2000)] + ["00000000", "99999999"]
    key = _folded_key(_digit_runs(ids), len(ids), 32)
    assert key is not None and key.dtype == np.int64
    assert key[-2] == 0 and int(key.max()) < 2**32
    assert np.array_equal(pd.factorize(key)[0], pd.factorize(np.array(ids, dtype=object))[0])


def test_folded_key_declines_layouts_it_cannot_fold_or_that_exceed_the_budget():
    ids = ["00000000", "12345678"]
    assert _folded_key(_digit_runs(ids), 2, 31) is None  # 32 bits needed
    word = np.frombuffer("".join(ids).encode(), dtype="<u8").copy()
    assert _folded_key([[word, 0, 5]], 2, 31) is None  # five varying bits in one byte


def _same_partition(codes, ids):
    objects = np.empty(len(ids), dtype=object)
    objects[:] = ids
    expected, _ = pd.factorize(objects, use_na_sentinel=False)
    return np.array_equal(pd.factorize(codes)[0], expected)


@pytest.mark.parametrize("seed", range(4))
def test_string_codes_are_equal_exactly_when_the_ids_are(seed):
    rng = random.Random(seed)
    alphabet = ["a", "b", "0", "9", "-", "/", " ", "\x01", "\x7f", "é", "ÿ", "\ud800", "😀"]
    for _ in range(300):
        if rng.random() < 0.4:  # ids of one length (the fast layout)
            length = rng.randint(0, 20)
            pool = ["".join(rng.choice(alphabet[:6]) for _ in range(length)) for _ in range(rng.randint(1, 20))]
        else:
            pool = [
                "".join(rng.choice(alphabet) for _ in range(rng.randint(0, rng.choice([3, 12, 30]))))
                for _ in range(rng.randint(1, 20))
            ]
        ids = [rng.choice(pool) for _ in range(rng.randint(1, 60))]
        questions = rng.choice([1, 1000, 2**40])
        codes = _string_codes([([ids], None)], len(ids), questions)
        assert _same_partition(codes, ids), ids
        assert codes.dtype == np.int64 and codes.min() >= 0 and int(codes.max()) * questions < 2**62


@pytest.mark.parametrize(
    "make_id",
    [
        lambda r: f"doc-{r.randrange(500_000):06d}",  # first digit 0-4: three bits, the others four
        lambda r: f"{r.randrange(10**9):09d}",  # nine digits: one word and a byte
        lambda r: f"x{r.randrange(10)}y{r.randrange(10)}z{r.randrange(10)}",  # constant bytes between
        lambda r: f"p{r.randrange(10**7):07d}:{r.randrange(10**3):03d}",  # a separator between runs
        lambda r: f"{r.getrandbits(40):010x}",  # hex: seven varying bits a byte, no folding
    ],
)
def test_string_codes_of_regular_ids_are_exact_and_small(make_id):
    rng = random.Random(5)
    ids = [make_id(rng) for _ in range(5000)]
    ids += rng.sample(ids, 2000)
    codes = _string_codes([([ids[:3000]], None), ([ids[3000:]], None)], len(ids), 100)
    assert _same_partition(codes, ids)
    assert codes.min() >= 0 and int(codes.max()) * 100 < 2**62


def test_string_codes_of_digit_ids_fit_32_bits():
    rng = random.Random(6)
    ids = [f"doc-{rng.randrange(10**6):06d}" for _ in range(5000)]
    codes = _string_codes([([ids], None)], len(ids), 10**5)
    assert _same_partition(codes, ids) and int(codes.max()) < 2**31


def test_string_codes_of_long_random_ids_still_fit_the_kernels():
    rng = random.Random(9)
    ids = [f"{rng.getrandbits(256):064x}" for _ in range(3000)]
    ids += ids[:500]
    codes = _string_codes([([ids], None)], len(ids), 10)
    assert _same_partition(codes, ids)
    assert int(codes.max()) * 10 < 2**62  # 256 varying bits, re-coded along the way


def test_string_codes_decline_non_strings_and_nul_characters():
    assert _string_codes([([[1, 2]], None)], 2, 1) is None
    assert _string_codes([([["a", 1]], None)], 2, 1) is None
    assert _string_codes([([["a\x00b", "c"]], None)], 2, 1) is None
    assert _string_codes([([[]], None)], 0, 1).tolist() == []
    # and encode_retrieval then codes them with pandas, as before
    encoded = encode_retrieval([[1, 2, "a\x00b"], [2]], [{2: 1}, {"a\x00b"}])
    assert encoded.ranked_docs[1] == encoded.ranked_docs[3] == encoded.gold_docs[0]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("odd_ids", [False, True])
def test_encode_retrieval_codes_many_questions_as_pandas_factorize_would(seed, odd_ids):
    rng = random.Random(seed)
    pool = [f"doc-{i:06d}" for i in rng.sample(range(10**6), 3000)] + (["", "é/x", "q\ud800"] if odd_ids else [])
    ranked = [[rng.choice(pool) for _ in range(rng.choice([0, 0, 1, 3, 20]))] for _ in range(9000)]
    gold = [{rng.choice(pool): rng.randint(0, 3) for _ in range(rng.randint(0, 4))} for _ in range(9000)]
    encoded = encode_retrieval(ranked, gold)
    ids = [doc for docs in ranked for doc in docs] + [doc for g in gold for doc in g]
    assert _same_partition(np.concatenate([encoded.ranked_docs, encoded.gold_docs]), ids)
    assert encoded.ranked_offsets.tolist() == np.cumsum([0] + [len(r) for r in ranked]).tolist()
    assert encoded.gold_grades.tolist() == [float(v) for g in gold for v in g.values()]


def test_encode_retrieval_lays_out_ranked_and_gold_as_compressed_rows():
    encoded = encode_retrieval([["a", "b", "a"], [], ["c"]], [{"a": 2, "z": 0}, {"b"}, {}])
    assert encoded.n_questions == 3
    assert encoded.ranked_offsets.tolist() == [0, 3, 3, 4]
    assert encoded.gold_offsets.tolist() == [0, 2, 3, 3]
    assert encoded.gold_grades.tolist() == [2.0, 0.0, 1.0]
    r, g = encoded.ranked_docs, encoded.gold_docs
    assert r[0] == r[2] == g[0] and r[1] == g[2] and len({r[0], r[1], r[3], g[1]}) == 4


@pytest.mark.parametrize("ids", [[1, 2, 3], ["a", 1, None], [("t", 1), ("t", 2), "x"]])
def test_encode_retrieval_codes_ids_that_are_not_strings_with_pandas(ids):
    encoded = encode_retrieval([ids, ids[:1]], [{ids[1]: 1}, {ids[0]: 3}])
    assert encoded.ranked_docs[1] == encoded.gold_docs[0] and encoded.ranked_docs[0] == encoded.gold_docs[1]
    assert len(set(encoded.ranked_docs[:3].tolist())) == 3
