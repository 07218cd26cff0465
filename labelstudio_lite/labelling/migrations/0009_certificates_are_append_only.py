"""Judge certificates are append-only, whatever door is used: the database refuses UPDATE and DELETE.

A newer measurement is a new row that supersedes the old one. Guideline versions are frozen the
same way against UPDATE (a deleted campaign still takes its guidelines with it).
"""

from django.db import migrations

MESSAGE = "judge certificates and guideline versions are append-only: a newer one supersedes the old"

#: (table, the operations refused on it)
REFUSED = (("labelling_certificate", ("UPDATE", "DELETE")), ("labelling_guideline", ("UPDATE",)))

SQLITE = [
    f"""CREATE TRIGGER {table}_no_{op.lower()} BEFORE {op} ON {table}
        BEGIN SELECT RAISE(ABORT, '{MESSAGE}'); END"""
    for table, ops in REFUSED
    for op in ops
]
SQLITE_REVERSE = [f"DROP TRIGGER IF EXISTS {table}_no_{op.lower()}" for table, ops in REFUSED for op in ops]

POSTGRES = [
    f"""CREATE OR REPLACE FUNCTION labelling_refuse_rewrite() RETURNS trigger AS $$
        BEGIN
          RAISE EXCEPTION '{MESSAGE}' USING ERRCODE = 'integrity_constraint_violation';
        END $$ LANGUAGE plpgsql""",
    *(
        f"""CREATE TRIGGER {table}_append_only BEFORE {" OR ".join(ops)} ON {table}
        FOR EACH ROW EXECUTE FUNCTION labelling_refuse_rewrite()"""
        for table, ops in REFUSED
    ),
]
POSTGRES_REVERSE = [
    *(f"DROP TRIGGER IF EXISTS {table}_append_only ON {table}" for table, _ in REFUSED),
    "DROP FUNCTION IF EXISTS labelling_refuse_rewrite()",
]


def _run(statements_by_vendor):
    def apply(apps, schema_editor):
        statements = statements_by_vendor.get(schema_editor.connection.vendor)
        if statements is None:
            raise RuntimeError(f"no append-only triggers for database {schema_editor.connection.vendor!r}")
        for statement in statements:
            schema_editor.execute(statement)

    return apply


class Migration(migrations.Migration):
    dependencies = [("labelling", "0008_campaigns_validate_a_named_metric")]

    operations = [
        migrations.RunPython(
            _run({"sqlite": SQLITE, "postgresql": POSTGRES}),
            _run({"sqlite": SQLITE_REVERSE, "postgresql": POSTGRES_REVERSE}),
        ),
    ]
