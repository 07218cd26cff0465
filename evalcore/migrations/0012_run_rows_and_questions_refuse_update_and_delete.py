"""Database triggers that keep a run's rows and score table, and a frozen version's questions, as written.

Whatever the door (ORM, admin, API, a script, raw SQL), the database refuses:

* any UPDATE of a run's row (``evalcore_row``) or of its score table (``evalcore_runscoretable``);
* any DELETE of either, unless their run is being deleted: marked ``deleting`` (which
  ``Run.delete()`` does in its own transaction, before deleting the rows) or already gone in the
  same transaction (rows are children; with deferred foreign keys a script may delete the run first);
* unsetting a run's ``deleting`` mark; on PostgreSQL also committing a transaction that marked a run
  and left it in place (a deferred constraint trigger). SQLite has no deferred triggers: there the
  mark is only one-way;
* any DELETE of a question of a sealed version, and any DELETE of a sealed version (0002 already
  refuses UPDATE of a question and INSERT into a sealed version). The product deletes neither.

Each refusal names its rule. On SQLite a migration that remakes one of these tables drops its
triggers: such a migration must create them again (tests/evalcore/test_frozen_runs.py checks
they are all installed).
"""

from django.db import migrations, models

ROWS = "frozen run rows: a run''s rows never change and go only with their run; import a new run instead"
SCORE_TABLE = (
    "frozen score table: a run''s score table is written with its rows, never changes and goes only with its run"
)
QUESTIONS = "eval set versions are frozen: their questions and gold are never deleted; import a new version instead"
VERSION = "eval set versions are frozen: a sealed version is never deleted; archive it instead"
DELETING = "run deletion is one-way: a run marked deleting is deleted in the same transaction, never unmarked"

SQLITE = [
    f"""CREATE TRIGGER evalcore_row_no_update BEFORE UPDATE ON evalcore_row
        BEGIN SELECT RAISE(ABORT, '{ROWS}'); END""",
    f"""CREATE TRIGGER evalcore_row_no_delete BEFORE DELETE ON evalcore_row
        WHEN EXISTS (SELECT 1 FROM evalcore_run WHERE id = OLD.run_id AND NOT deleting)
        BEGIN SELECT RAISE(ABORT, '{ROWS}'); END""",
    f"""CREATE TRIGGER evalcore_scoretable_no_update BEFORE UPDATE ON evalcore_runscoretable
        BEGIN SELECT RAISE(ABORT, '{SCORE_TABLE}'); END""",
    f"""CREATE TRIGGER evalcore_scoretable_no_delete BEFORE DELETE ON evalcore_runscoretable
        WHEN EXISTS (SELECT 1 FROM evalcore_run WHERE id = OLD.run_id AND NOT deleting)
        BEGIN SELECT RAISE(ABORT, '{SCORE_TABLE}'); END""",
    f"""CREATE TRIGGER evalcore_run_deleting_one_way BEFORE UPDATE OF deleting ON evalcore_run
        WHEN OLD.deleting AND NOT NEW.deleting
        BEGIN SELECT RAISE(ABORT, '{DELETING}'); END""",
    f"""CREATE TRIGGER evalcore_question_no_delete_sealed BEFORE DELETE ON evalcore_question
        WHEN EXISTS (SELECT 1 FROM evalcore_evalsetversion WHERE id = OLD.version_id AND sealed)
        BEGIN SELECT RAISE(ABORT, '{QUESTIONS}'); END""",
    f"""CREATE TRIGGER evalcore_version_no_delete_sealed BEFORE DELETE ON evalcore_evalsetversion
        WHEN OLD.sealed BEGIN SELECT RAISE(ABORT, '{VERSION}'); END""",
]
SQLITE_NAMES = [
    "evalcore_row_no_update",
    "evalcore_row_no_delete",
    "evalcore_scoretable_no_update",
    "evalcore_scoretable_no_delete",
    "evalcore_run_deleting_one_way",
    "evalcore_question_no_delete_sealed",
    "evalcore_version_no_delete_sealed",
]
SQLITE_REVERSE = [f"DROP TRIGGER IF EXISTS {name}" for name in SQLITE_NAMES]

_RAISE = "RAISE EXCEPTION USING MESSAGE = {}, ERRCODE = 'integrity_constraint_violation'"

POSTGRES = [
    # rows and score tables: TG_ARGV[0] is the rule's message
    f"""CREATE OR REPLACE FUNCTION evalcore_refuse_run_change() RETURNS trigger AS $$
        BEGIN
          IF TG_OP = 'UPDATE' OR EXISTS (SELECT 1 FROM evalcore_run r WHERE r.id = OLD.run_id AND NOT r.deleting) THEN
            {_RAISE.format("TG_ARGV[0]")};
          END IF;
          RETURN OLD;
        END $$ LANGUAGE plpgsql""",
    f"""CREATE TRIGGER evalcore_row_frozen BEFORE UPDATE OR DELETE ON evalcore_row
        FOR EACH ROW EXECUTE FUNCTION evalcore_refuse_run_change('{ROWS}')""",
    f"""CREATE TRIGGER evalcore_scoretable_frozen BEFORE UPDATE OR DELETE ON evalcore_runscoretable
        FOR EACH ROW EXECUTE FUNCTION evalcore_refuse_run_change('{SCORE_TABLE}')""",
    # the deleting mark: one-way now, and gone (with its run) by commit
    f"""CREATE OR REPLACE FUNCTION evalcore_run_deleting() RETURNS trigger AS $$
        BEGIN
          IF TG_WHEN = 'BEFORE' THEN
            IF OLD.deleting AND NOT NEW.deleting THEN {_RAISE.format(f"'{DELETING}'")}; END IF;
            RETURN NEW;
          END IF;
          IF EXISTS (SELECT 1 FROM evalcore_run r WHERE r.id = NEW.id AND r.deleting) THEN
            {_RAISE.format(f"'{DELETING}'")};
          END IF;
          RETURN NULL;
        END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER evalcore_run_deleting_one_way BEFORE UPDATE OF deleting ON evalcore_run
        FOR EACH ROW EXECUTE FUNCTION evalcore_run_deleting()""",
    """CREATE CONSTRAINT TRIGGER evalcore_run_deleting_in_one_transaction AFTER UPDATE OF deleting ON evalcore_run
        DEFERRABLE INITIALLY DEFERRED FOR EACH ROW WHEN (NEW.deleting) EXECUTE FUNCTION evalcore_run_deleting()""",
    # questions and sealed versions: never deleted
    f"""CREATE OR REPLACE FUNCTION evalcore_refuse_frozen_delete() RETURNS trigger AS $$
        BEGIN
          IF TG_TABLE_NAME = 'evalcore_question' THEN
            IF EXISTS (SELECT 1 FROM evalcore_evalsetversion v WHERE v.id = OLD.version_id AND v.sealed) THEN
              {_RAISE.format(f"'{QUESTIONS}'")};
            END IF;
          ELSIF OLD.sealed THEN
            {_RAISE.format(f"'{VERSION}'")};
          END IF;
          RETURN OLD;
        END $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER evalcore_question_no_delete BEFORE DELETE ON evalcore_question
        FOR EACH ROW EXECUTE FUNCTION evalcore_refuse_frozen_delete()""",
    """CREATE TRIGGER evalcore_version_no_delete BEFORE DELETE ON evalcore_evalsetversion
        FOR EACH ROW EXECUTE FUNCTION evalcore_refuse_frozen_delete()""",
]
POSTGRES_REVERSE = [
    "DROP TRIGGER IF EXISTS evalcore_row_frozen ON evalcore_row",
    "DROP TRIGGER IF EXISTS evalcore_scoretable_frozen ON evalcore_runscoretable",
    "DROP TRIGGER IF EXISTS evalcore_run_deleting_one_way ON evalcore_run",
    "DROP TRIGGER IF EXISTS evalcore_run_deleting_in_one_transaction ON evalcore_run",
    "DROP TRIGGER IF EXISTS evalcore_question_no_delete ON evalcore_question",
    "DROP TRIGGER IF EXISTS evalcore_version_no_delete ON evalcore_evalsetversion",
    "DROP FUNCTION IF EXISTS evalcore_refuse_run_change()",
    "DROP FUNCTION IF EXISTS evalcore_run_deleting()",
    "DROP FUNCTION IF EXISTS evalcore_refuse_frozen_delete()",
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
    dependencies = [("evalcore", "0011_gate_decisions_carry_their_tests_and_family")]

    operations = [
        migrations.AddField(
            model_name="run",
            name="deleting",
            field=models.BooleanField(
                default=False,
                editable=False,
                help_text="Set by a deletion of the run, in its transaction: the only state in which its rows may go.",
            ),
        ),
        migrations.RunPython(
            _run({"sqlite": SQLITE, "postgresql": POSTGRES}),
            _run({"sqlite": SQLITE_REVERSE, "postgresql": POSTGRES_REVERSE}),
        ),
    ]
