"""The on-disk book of an eval set import's ids (issue 23): it refuses what the in-memory sets refused, naming
both lines, and gives the content hash the in-memory computation gave, so existing versions still match."""

from __future__ import annotations

import hashlib
import json
import random
import tracemalloc
import unicodedata

import pytest

from evalcore.models import Question
from evalcore.services import evalsets
from evalcore.services.evalsets import content_hash, evalset_import, question_as_dict, question_hash
from evalcore.services.id_book import IdBook
from evalcore.services.importing import seen_in_memory
from tests.files import write_jsonl

from .conftest import refused

# ids of every kind the order has to get right: accents, other scripts, beyond the BMP, digits, punctuation
ALPHABET = "abcXYZ019-_.éüßøДжΩ中文😀𝔸 "


def old_content_hash(pairs):
    """The content hash as every version so far was hashed: the pairs sorted in memory (kept here verbatim)."""
    digest = hashlib.sha256()
    for qid, qhash in sorted(pairs):
        digest.update(qid.encode())
        digest.update(b"\0")
        digest.update(qhash.encode())
        digest.update(b"\n")
    return digest.hexdigest()


def random_ids(rng: random.Random, n: int) -> list[str]:
    """``n`` ids in NFC whose casefolds all differ (a book takes no two of one casefold)."""
    ids, folds = [], set()
    while len(ids) < n:
        qid = unicodedata.normalize("NFC", "".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 8))).strip())
        if qid and qid.casefold() not in folds:
            folds.add(qid.casefold())
            ids.append(qid)
    return ids


@pytest.mark.parametrize("seed", range(5))
def test_the_book_streams_the_pairs_in_the_order_python_sorts_them_so_the_hash_is_the_old_one(seed):
    rng = random.Random(seed)
    ids = random_ids(rng, 3000)
    pairs = [(qid, hashlib.sha256(qid.encode()).hexdigest()) for qid in ids]
    base, new = pairs[:1000], pairs[1000:]
    with IdBook() as book:
        book.add_base(base)
        for line, (qid, qhash) in enumerate(new, 1):
            assert book.seen(qid, line) is None
            book.keep(qid, qhash)
        streamed = list(book.pairs_by_id())
    assert streamed == sorted(pairs)
    assert evalsets.sorted_content_hash(streamed) == old_content_hash(pairs) == content_hash(pairs)


def test_the_book_names_the_first_line_of_a_duplicate_and_of_an_id_differing_only_by_case():
    with IdBook() as book:
        assert book.seen("Q1", 1) is None
        assert book.seen("q2", 2) is None
        assert book.seen("q2", 5) == ("q2", 2)
        assert book.seen("q1", 7) == ("Q1", 1)
        assert book.seen("STRASSE", 8) is None
        assert book.seen("straße", 9) == ("STRASSE", 8)  # casefold, as the in-memory dict compared
        assert book.records == 3


def test_the_book_answers_as_the_in_memory_dict_did_on_generated_ids():
    rng = random.Random(7)
    ids = random_ids(rng, 500)
    stream = [rng.choice(ids) if rng.random() < 0.3 else rng.choice(ids).upper() for _ in range(2000)]
    memory = seen_in_memory()
    with IdBook() as book:
        for line, qid in enumerate(stream, 1):
            expected = memory(qid, line)
            got = book.seen(qid, line)
            # the dict gives back the casefold for an id that was its own casefold: the same text
            assert got == expected or (got is not None and expected is not None and got[1] == expected[1])
            if got is not None:
                assert got[0].casefold() == qid.casefold()


def test_the_book_knows_the_base_versions_ids_and_the_ones_differing_only_by_case():
    with IdBook() as book:
        book.add_base([("q1", "h1"), ("Doc-A", "h2")])
        assert book.base_count == 2
        assert book.base_hash("q1") == "h1" and book.base_hash("Q1") is None
        assert book.base_alike("doc-a") == "Doc-A" and book.base_alike("q3") is None


@pytest.mark.django_db
def test_an_import_through_the_book_refuses_a_duplicate_and_a_case_collision_naming_both_lines(tmp_path):
    rows = [{"id": f"q{i}", "question": f"Question {i}?"} for i in range(3000)]
    rows[2500] = {"id": "q17", "question": "Again?"}
    rows[2900] = {"id": "Q42", "question": "Shouting?"}
    path = write_jsonl(tmp_path / "q.jsonl", rows)
    refused(
        lambda: evalset_import(path=path, name="dups"),
        file="q.jsonl",
        line=2501,
        field="id",
        says="question id 'q17' is used twice (first on line 18)",
    )
    message = refused(lambda: evalset_import(path=path, name="dups"), file="q.jsonl", line=2901, field="id")
    assert "id 'Q42' on line 2901 differs only by case from 'q42' on line 43" in message


@pytest.mark.django_db
def test_an_imported_versions_hash_is_the_in_memory_hash_of_its_questions(tmp_path):
    rng = random.Random(3)
    ids = random_ids(rng, 1500)
    rows = [
        {"id": qid, "question": f"What is {qid}?", "gold": [{"doc": f"d{i}", "grade": 1 + i % 3}], "tags": ["t"]}
        for i, qid in enumerate(ids)
    ]
    rng.shuffle(rows)
    first = evalset_import(path=write_jsonl(tmp_path / "a.jsonl", rows[:1000]), name="mixed").version
    extended = evalset_import(path=write_jsonl(tmp_path / "b.jsonl", rows[900:]), name="mixed", mode="extend").version
    for version, count in ((first, 1000), (extended, 1500)):
        questions = Question.objects.filter(version=version)
        pairs = [(q.qid, question_hash(question_as_dict(q))) for q in questions]
        assert len(pairs) == version.question_count == count
        assert version.content_hash == old_content_hash(pairs)
    whole = evalset_import(path=write_jsonl(tmp_path / "c.jsonl", rows), name="mixed")
    assert not whole.created and whole.version == extended  # the same content: the same hash, nothing new


@pytest.mark.django_db
def test_a_file_changed_between_the_two_passes_is_refused_and_nothing_is_written(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": f"q{i}", "question": f"Question {i}?"} for i in range(20)])
    hash_as_before = evalsets.sorted_content_hash

    def then_change_the_file(pairs):
        digest = hash_as_before(pairs)
        lines = path.read_text().splitlines()
        lines[4] = json.dumps({"id": "q4", "question": "Changed meanwhile?"})
        path.write_text("\n".join(lines) + "\n")
        return digest

    monkeypatch.setattr(evalsets, "sorted_content_hash", then_change_the_file)
    refused(lambda: evalset_import(path=path, name="moving"), file="q.jsonl", line=5, says="the file changed")


@pytest.mark.django_db
def test_a_file_that_grew_between_the_two_passes_is_refused(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "q.jsonl", [{"id": f"q{i}", "question": f"Question {i}?"} for i in range(20)])
    hash_as_before = evalsets.sorted_content_hash

    def then_append(pairs):
        digest = hash_as_before(pairs)
        with path.open("a") as handle:
            handle.write(json.dumps({"id": "q99", "question": "Late?"}) + "\n")
        return digest

    monkeypatch.setattr(evalsets, "sorted_content_hash", then_append)
    refused(lambda: evalset_import(path=path, name="growing"), file="q.jsonl", line=21, says="the file changed")


@pytest.mark.django_db
def test_the_imports_python_memory_does_not_grow_with_the_number_of_questions(tmp_path):
    """Python's allocations at the import's peak (the sets and lists of ids were its growing part; SQLite's page
    cache is capped apart): 16,000 questions peak about as high as 4,000, well under the 4x of the file."""

    def peak(n: int) -> int:
        rows = [{"id": f"q{i:06d}", "question": f"Question {i}?", "gold": [f"d{i}"]} for i in range(n)]
        path = write_jsonl(tmp_path / f"q{n}.jsonl", rows)
        tracemalloc.start()
        try:
            evalset_import(path=path, name=f"size{n}")
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    small, big = peak(4000), peak(16000)
    assert big < 1.5 * small, (small, big)
