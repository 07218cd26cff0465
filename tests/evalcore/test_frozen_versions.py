"""A frozen eval set version cannot be changed through any door: one test per door.

Doors: the model (save, delete, create), the querysets (update, delete, bulk_create, bulk_update),
raw SQL (database triggers, on SQLite here and on PostgreSQL in the marked tests), the admin,
the API, the web pages and the import service (which makes a new version instead).
"""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models import ProtectedError

from evalcore.models import EvalSet, EvalSetVersion, FrozenError, Question
from evalcore.services.evalsets import evalset_import, question_as_dict
from tests.factories import QUESTIONS
from tests.files import write_jsonl

from .conftest import db_counts

pytestmark = pytest.mark.django_db


def snapshot(version: EvalSetVersion) -> dict:
    """Everything that makes up a version's content, read fresh from the database."""
    fresh = EvalSetVersion.objects.get(pk=version.pk)
    return {
        "version": (
            fresh.eval_set_id,
            fresh.number,
            fresh.parent_id,
            fresh.content_hash,
            fresh.question_count,
            fresh.sealed,
        ),
        "questions": [question_as_dict(q) for q in Question.objects.filter(version=fresh).order_by("qid")],
    }


@pytest.fixture
def frozen(version):
    assert version.sealed
    return version, snapshot(version)


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------


def test_saving_a_changed_question_is_refused(frozen):
    version, before = frozen
    question = Question.objects.get(version=version, qid="q1")
    question.text = "Edited?"
    with pytest.raises(FrozenError, match="frozen"):
        question.save()
    question.gold = [{"doc": "d9", "grade": 3}]
    with pytest.raises(FrozenError):
        question.save(update_fields=["gold"])
    assert snapshot(version) == before


def test_deleting_a_question_is_refused(frozen):
    version, before = frozen
    with pytest.raises(FrozenError):
        Question.objects.get(version=version, qid="q1").delete()
    assert snapshot(version) == before


def test_creating_a_question_in_a_sealed_version_is_refused(frozen):
    version, before = frozen
    with pytest.raises(FrozenError):
        Question.objects.create(version=version, qid="q9", text="Sneaked in?")
    assert snapshot(version) == before


def test_saving_a_changed_content_field_of_a_version_is_refused(frozen):
    version, before = frozen
    for field, value in (("content_hash", "0" * 64), ("question_count", 99), ("number", 5), ("sealed", False)):
        fresh = EvalSetVersion.objects.get(pk=version.pk)
        setattr(fresh, field, value)
        with pytest.raises(FrozenError):
            fresh.save()
        with pytest.raises(FrozenError):
            fresh.save(update_fields=[field])
    assert snapshot(version) == before


def test_a_version_note_and_archived_flag_are_bookkeeping_and_may_change(frozen):
    version, before = frozen
    fresh = EvalSetVersion.objects.get(pk=version.pk)
    fresh.note = "superseded by v2"
    fresh.archived = True
    fresh.save(update_fields=["note", "archived"])
    fresh = EvalSetVersion.objects.get(pk=version.pk)
    assert (fresh.note, fresh.archived) == ("superseded by v2", True)
    assert snapshot(version) == before


def test_deleting_a_version_is_refused(frozen):
    version, before = frozen
    with pytest.raises(FrozenError):
        EvalSetVersion.objects.get(pk=version.pk).delete()
    assert snapshot(version) == before


def test_deleting_an_eval_set_with_versions_is_refused(frozen):
    version, before = frozen
    with pytest.raises(ProtectedError):
        EvalSet.objects.get(name="support").delete()
    assert snapshot(version) == before


# ---------------------------------------------------------------------------------------------
# The querysets
# ---------------------------------------------------------------------------------------------


def test_queryset_update_of_questions_is_refused(frozen):
    version, before = frozen
    with pytest.raises(FrozenError):
        Question.objects.filter(version=version).update(text="Edited?")
    with pytest.raises(FrozenError):
        version.questions.filter(qid="q1").update(gold=[])
    assert snapshot(version) == before


def test_queryset_delete_of_questions_is_refused(frozen):
    version, before = frozen
    with pytest.raises(FrozenError):
        Question.objects.filter(version=version).delete()
    with pytest.raises(FrozenError):
        version.questions.all().delete()
    assert snapshot(version) == before


def test_bulk_update_of_questions_is_refused(frozen):
    version, before = frozen
    questions = list(Question.objects.filter(version=version))
    for q in questions:
        q.answerable = False
    with pytest.raises(FrozenError), transaction.atomic():  # bulk_update runs in atomic(savepoint=False)
        Question.objects.bulk_update(questions, ["answerable"])
    assert snapshot(version) == before


def test_bulk_create_into_a_sealed_version_is_refused(frozen):
    version, before = frozen
    with pytest.raises(FrozenError):
        Question.objects.bulk_create([Question(version=version, qid="q9", text="Sneaked in?")])
    assert snapshot(version) == before


def test_queryset_update_of_a_version_content_field_is_refused(frozen):
    version, before = frozen
    with pytest.raises(FrozenError):
        EvalSetVersion.objects.filter(pk=version.pk).update(content_hash="0" * 64)
    with pytest.raises(FrozenError):
        EvalSetVersion.objects.filter(pk=version.pk).update(sealed=False)
    EvalSetVersion.objects.filter(pk=version.pk).update(note="bookkeeping is fine")
    assert EvalSetVersion.objects.get(pk=version.pk).note == "bookkeeping is fine"
    assert snapshot(version) == before


def test_queryset_delete_of_versions_is_refused(frozen):
    version, before = frozen
    with pytest.raises(FrozenError):
        EvalSetVersion.objects.all().delete()
    assert snapshot(version) == before


# ---------------------------------------------------------------------------------------------
# Raw SQL: the database triggers (this database here; PostgreSQL again in the marked tests)
# ---------------------------------------------------------------------------------------------


def raw_refused(sql: str, params: list) -> None:
    with pytest.raises(IntegrityError, match="frozen"):
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(sql, params)


def check_raw_sql_doors(version: EvalSetVersion, before: dict) -> None:
    raw_refused("UPDATE evalcore_question SET text = %s WHERE version_id = %s", ["Edited?", version.pk])
    raw_refused("UPDATE evalcore_question SET gold = %s WHERE version_id = %s AND qid = %s", ["[]", version.pk, "q1"])
    raw_refused(
        "INSERT INTO evalcore_question (version_id, qid, text, qtype, tags, answerable, reference_answer, gold, metadata) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
        [version.pk, "q9", "Sneaked in?", "", "[]", True, "", "[]", "{}"],
    )
    raw_refused("UPDATE evalcore_evalsetversion SET content_hash = %s WHERE id = %s", ["0" * 64, version.pk])
    raw_refused("UPDATE evalcore_evalsetversion SET question_count = question_count + 1 WHERE id = %s", [version.pk])
    raw_refused("UPDATE evalcore_evalsetversion SET sealed = %s WHERE id = %s", [False, version.pk])
    raw_refused("UPDATE evalcore_evalsetversion SET number = %s WHERE id = %s", [7, version.pk])
    with connection.cursor() as cursor:  # bookkeeping stays writable
        cursor.execute("UPDATE evalcore_evalsetversion SET note = %s WHERE id = %s", ["raw note", version.pk])
    assert EvalSetVersion.objects.get(pk=version.pk).note == "raw note"
    assert snapshot(version) == before


def test_raw_sql_update_and_insert_are_refused_by_the_database_triggers(frozen):
    check_raw_sql_doors(*frozen)


def test_raw_sql_may_insert_into_a_version_that_is_not_yet_sealed(db):
    """The import service writes questions before it seals: the triggers must allow exactly that."""
    eval_set = EvalSet.objects.create(name="draft")
    draft = EvalSetVersion.objects.create(eval_set=eval_set, number=1, content_hash="x" * 64)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO evalcore_question (version_id, qid, text, qtype, tags, answerable, reference_answer, gold, metadata) "
            "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
            [draft.pk, "q1", "Allowed?", "", "[]", True, "", "[]", "{}"],
        )
    assert draft.questions.count() == 1


def test_the_freeze_triggers_are_installed_in_the_database(db):
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'evalcore_%'")
        else:
            cursor.execute("SELECT tgname FROM pg_trigger WHERE tgname LIKE 'evalcore_%' AND NOT tgisinternal")
        names = {row[0] for row in cursor.fetchall()}
    expected = (
        {"evalcore_question_no_update", "evalcore_question_no_insert_sealed", "evalcore_version_sealed"}
        if connection.vendor == "sqlite"
        else {"evalcore_question_frozen", "evalcore_version_sealed"}
    )
    assert expected <= names


@pytest.mark.postgres
def test_on_postgresql_raw_sql_update_and_insert_are_refused_by_the_triggers(frozen):
    assert connection.vendor == "postgresql"
    check_raw_sql_doors(*frozen)


@pytest.mark.postgres
def test_on_postgresql_the_trigger_error_is_an_integrity_violation_that_leaves_the_transaction_usable(frozen):
    version, before = frozen
    with pytest.raises(IntegrityError) as excinfo:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("UPDATE evalcore_question SET text = 'x' WHERE version_id = %s", [version.pk])
    assert getattr(excinfo.value.__cause__, "sqlstate", None) == "23000"
    assert Question.objects.filter(version=version).count() == 5  # the outer transaction still works
    assert snapshot(version) == before


# ---------------------------------------------------------------------------------------------
# The admin, for an eval owner who is also a superuser
# ---------------------------------------------------------------------------------------------


@pytest.fixture
def superowner_client(client, django_user_model):
    user = django_user_model.objects.create_superuser(
        "root-owner", "root@example.com", "super-pass-123", role="eval_owner"
    )
    client.force_login(user)
    return client


def test_the_admin_shows_questions_but_refuses_to_change_them(frozen, superowner_client):
    version, before = frozen
    question = Question.objects.get(version=version, qid="q1")
    url = f"/admin/evalcore/question/{question.pk}/change/"
    page = superowner_client.get(url)
    assert page.status_code == 200  # read only: visible, no save button
    assert b'name="_save"' not in page.content
    response = superowner_client.post(url, {"qid": "q1", "text": "Edited?", "qtype": "policy", "gold": "[]"})
    assert response.status_code == 403
    assert snapshot(version) == before


def test_the_admin_refuses_to_delete_or_add_questions(frozen, superowner_client):
    version, before = frozen
    question = Question.objects.get(version=version, qid="q1")
    assert superowner_client.get(f"/admin/evalcore/question/{question.pk}/delete/").status_code == 403
    assert superowner_client.post(f"/admin/evalcore/question/{question.pk}/delete/", {"post": "yes"}).status_code == 403
    assert superowner_client.get("/admin/evalcore/question/add/").status_code == 403
    assert (
        superowner_client.post(
            "/admin/evalcore/question/add/", {"version": version.pk, "qid": "q9", "text": "x"}
        ).status_code
        == 403
    )
    response = superowner_client.post(
        "/admin/evalcore/question/",
        {"action": "delete_selected", "_selected_action": [question.pk], "post": "yes"},
    )
    assert response.status_code in (200, 302)
    assert snapshot(version) == before


def test_the_admin_refuses_to_change_or_delete_a_version(frozen, superowner_client):
    version, before = frozen
    url = f"/admin/evalcore/evalsetversion/{version.pk}/"
    assert superowner_client.get(url + "change/").status_code == 200
    assert superowner_client.post(url + "change/", {"content_hash": "0" * 64, "question_count": 1}).status_code == 403
    assert superowner_client.get(url + "delete/").status_code == 403
    assert superowner_client.post(url + "delete/", {"post": "yes"}).status_code == 403
    assert superowner_client.get("/admin/evalcore/evalsetversion/add/").status_code == 403
    assert snapshot(version) == before


# ---------------------------------------------------------------------------------------------
# The API and the pages
# ---------------------------------------------------------------------------------------------


def test_the_api_has_no_way_to_change_or_delete_questions(frozen, owner_client):
    version, before = frozen
    question_list = "/api/evalsets/support/versions/1/questions/"
    assert owner_client.get(question_list).status_code == 200
    body = {"id": "q1", "question": "Edited?", "gold": []}
    for method in ("put", "patch", "delete", "post"):
        response = getattr(owner_client, method)(question_list, body, content_type="application/json")
        assert response.status_code == 405, (method, response.status_code)
        response = getattr(owner_client, method)(question_list + "q1/", body, content_type="application/json")
        assert response.status_code == 404, (method, response.status_code)
    assert snapshot(version) == before


def test_the_api_has_no_way_to_change_or_delete_an_eval_set_or_version(frozen, owner_client):
    version, before = frozen
    for method in ("put", "patch", "delete"):
        response = getattr(owner_client, method)("/api/evalsets/", {"name": "x"}, content_type="application/json")
        assert response.status_code == 405, (method, response.status_code)
        for url in ("/api/evalsets/support/", "/api/evalsets/support/versions/1/"):
            response = getattr(owner_client, method)(url, {"content_hash": "0"}, content_type="application/json")
            assert response.status_code == 404, (url, method, response.status_code)
    assert snapshot(version) == before


def test_the_version_page_only_reads(frozen, owner_client):
    version, before = frozen
    url = "/evalsets/support/v1/"
    assert owner_client.get(url).status_code == 200
    for method in ("post", "put", "patch", "delete"):
        assert getattr(owner_client, method)(url, {"text": "Edited?"}).status_code == 405
    assert snapshot(version) == before


# ---------------------------------------------------------------------------------------------
# The import service
# ---------------------------------------------------------------------------------------------


def test_importing_changed_questions_under_the_same_name_makes_a_new_version_and_leaves_the_old_one(frozen, tmp_path):
    version, before = frozen
    changed = [dict(q) for q in QUESTIONS]
    changed[0]["question"] = "What is the refund window, exactly?"
    changed[3] = {**changed[3], "answerable": True, "gold": [{"doc": "d8", "grade": 1}]}
    result = evalset_import(path=write_jsonl(tmp_path / "edited.jsonl", changed), name="support")
    assert result.created and result.version.pk != version.pk
    assert snapshot(version) == before
    assert Question.objects.get(version=result.version, qid="q1").text == "What is the refund window, exactly?"


def test_extending_a_version_copies_its_questions_and_leaves_it_untouched(frozen, tmp_path):
    version, before = frozen
    counts = db_counts()
    evalset_import(
        path=write_jsonl(tmp_path / "more.jsonl", [{"id": "q6", "question": "New?"}]), name="support", mode="extend"
    )
    assert snapshot(version) == before
    assert db_counts()["Question"] == counts["Question"] + 6
