"""Database triggers that keep frozen eval set versions frozen, whatever door is used.

* No question is ever updated.
* No question is inserted into a sealed version.
* A sealed version's content fields never change, and a version is never unsealed.
Deletes are refused by the models and blocked by PROTECT foreign keys.
"""

from django.db import migrations

MESSAGE = "eval set versions are frozen: import the changed questions as a new version"

SQLITE = [
    f"""CREATE TRIGGER evalcore_question_no_update BEFORE UPDATE ON evalcore_question
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
    f"""CREATE TRIGGER evalcore_question_no_insert_sealed BEFORE INSERT ON evalcore_question
        WHEN (SELECT sealed FROM evalcore_evalsetversion WHERE id = NEW.version_id) = 1
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
    f"""CREATE TRIGGER evalcore_version_sealed BEFORE UPDATE ON evalcore_evalsetversion
        WHEN OLD.sealed = 1 AND (
            NEW.content_hash IS NOT OLD.content_hash OR NEW.number IS NOT OLD.number
            OR NEW.eval_set_id IS NOT OLD.eval_set_id OR NEW.parent_id IS NOT OLD.parent_id
            OR NEW.question_count IS NOT OLD.question_count OR NEW.sealed IS NOT OLD.sealed)
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END""",
]
SQLITE_REVERSE = [
    "DROP TRIGGER IF EXISTS evalcore_question_no_update",
    "DROP TRIGGER IF EXISTS evalcore_question_no_insert_sealed",
    "DROP TRIGGER IF EXISTS evalcore_version_sealed",
]

POSTGRES = [
    f"""CREATE OR REPLACE FUNCTION evalcore_refuse_frozen() RETURNS trigger AS $$
        BEGIN
          IF TG_TABLE_NAME = 'evalcore_question' THEN
            IF TG_OP = 'UPDATE' THEN
              RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'integrity_constraint_violation';
            END IF;
            IF EXISTS (SELECT 1 FROM evalcore_evalsetversion v WHERE v.id = NEW.version_id AND v.sealed) THEN
              RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'integrity_constraint_violation';
            END IF;
            RETURN NEW;
          END IF;
          IF OLD.sealed AND (
              NEW.content_hash IS DISTINCT FROM OLD.content_hash OR NEW.number IS DISTINCT FROM OLD.number
              OR NEW.eval_set_id IS DISTINCT FROM OLD.eval_set_id OR NEW.parent_id IS DISTINCT FROM OLD.parent_id
              OR NEW.question_count IS DISTINCT FROM OLD.question_count OR NEW.sealed IS DISTINCT FROM OLD.sealed) THEN
            RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'integrity_constraint_violation';
          END IF;
          RETURN NEW;
        END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER evalcore_question_frozen BEFORE INSERT OR UPDATE ON evalcore_question
        FOR EACH ROW EXECUTE FUNCTION evalcore_refuse_frozen()""",
    """CREATE TRIGGER evalcore_version_sealed BEFORE UPDATE ON evalcore_evalsetversion
        FOR EACH ROW EXECUTE FUNCTION evalcore_refuse_frozen()""",
]
POSTGRES_REVERSE = [
    "DROP TRIGGER IF EXISTS evalcore_question_frozen ON evalcore_question",
    "DROP TRIGGER IF EXISTS evalcore_version_sealed ON evalcore_evalsetversion",
    "DROP FUNCTION IF EXISTS evalcore_refuse_frozen()",
]


def _run(statements_by_vendor):
    def apply(apps, schema_editor):
        statements = statements_by_vendor.get(schema_editor.connection.vendor)
        if statements is None:
            raise RuntimeError(
                f"no freeze triggers for database {schema_editor.connection.vendor!r}: use SQLite or PostgreSQL"
            )
        for statement in statements:
            schema_editor.execute(statement)

    return apply


class Migration(migrations.Migration):
    dependencies = [("evalcore", "0001_initial")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE, "postgresql": POSTGRES}),
            _run({"sqlite": SQLITE_REVERSE, "postgresql": POSTGRES_REVERSE}),
        ),
    ]
